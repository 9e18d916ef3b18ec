# /// script
# requires-python = ">=3.10"
# dependencies = ["medeval_kit", "marimo"]
# ///
"""Round-wise explorer: per item, follow the refinement rounds, critiques and scores.

Run with `marimo run notebooks/rounds_app.py`, or `python notebooks/rounds_app.py` to print a summary.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo

    from medeval_kit.apps import item_component_shares, load_rounds_for_app, round_trajectory
    from medeval_kit.viz import paper_style, plot_item_rounds

    return item_component_shares, load_rounds_for_app, mo, paper_style, plot_item_rounds, round_trajectory


@app.cell
def _(load_rounds_for_app, mo):
    rounds = load_rounds_for_app("all")
    items = sorted(rounds["item"].unique())
    longest = str(rounds.groupby("item")["round"].max().idxmax())  # open on an item with the most rounds
    item = mo.ui.dropdown(options=items, value=longest, label="item")
    component = mo.ui.dropdown(options=["(all)", *sorted(rounds["component"].unique())], value="(all)",
                               label="component")
    mo.hstack([item, component])
    return component, item, rounds


@app.cell
def _(item, mo, round_trajectory, rounds):
    traj = round_trajectory(rounds, item.value)
    last = traj.iloc[-1]
    mo.md(
        f"**{item.value}**: {traj['round'].nunique()} rounds; final total "
        f"<span id='final-total'>{last['total']:.3f}</span>; best round {int(traj.loc[traj['best'], 'round'].min())}; "
        f"stopped after round {int(traj['round'].max())}."
    )
    return last, traj


@app.cell
def _(item, item_component_shares, paper_style, plot_item_rounds, round_trajectory, rounds):
    with paper_style():
        fig = plot_item_rounds(item_component_shares(rounds, item.value), round_trajectory(rounds, item.value),
                               title=item.value)
    fig
    return (fig,)


@app.cell
def _(component, item, mo, rounds):
    rows = rounds[rounds["item"] == item.value]
    if component.value != "(all)":
        rows = rows[rows["component"] == component.value]
    view = rows[["round", "component", "raw_score", "score", "max_score", "parse_status", "critique"]]
    mo.ui.table(view.reset_index(drop=True), selection=None, page_size=10)
    return rows, view


@app.cell
def _(item, mo, rounds):
    text = rounds[(rounds["item"] == item.value) & (rounds["component"] == "question")][["round", "text"]]
    mo.accordion({f"round {int(r.round)} question": mo.md(str(r.text)) for r in text.itertuples()})
    return (text,)


@app.cell
def _(mo, round_trajectory, rounds):
    if not mo.running_in_notebook():
        for it in sorted(rounds["item"].unique())[:5]:
            t = round_trajectory(rounds, it)
            print(it, "totals by round:", [round(v, 3) for v in t["total"]])
    return


if __name__ == "__main__":
    app.run()
