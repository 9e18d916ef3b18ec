# /// script
# requires-python = ">=3.10"
# dependencies = ["medeval_kit", "marimo"]
# ///
"""Judgments explorer: filter by judge, criterion and order; see position flips side by side with both texts.

Run with `marimo run notebooks/judgments_app.py`, or `python notebooks/judgments_app.py` to print a summary.
Reads the judging study's `tables/judging/judgments.csv`; without it, a synthetic table with a
planted first-slot preference.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo

    from medeval_kit.apps import flip_table, load_judgments_for_app

    return flip_table, load_judgments_for_app, mo


@app.cell
def _(mo):
    source = mo.ui.dropdown(options=["judging study", "synthetic (planted first-slot preference 0.2)"],
                            value="judging study", label="data")
    source
    return (source,)


@app.cell
def _(load_judgments_for_app, mo, source):
    judgments = load_judgments_for_app("synthetic" if source.value.startswith("synthetic") else "")
    judge = mo.ui.dropdown(options=sorted(judgments["judge"].unique()),
                           value=sorted(judgments["judge"].unique())[0], label="judge")
    criterion = mo.ui.dropdown(options=sorted(judgments["criterion"].unique()),
                               value=sorted(judgments["criterion"].unique())[0], label="criterion")
    only_flips = mo.ui.checkbox(value=False, label="only position flips")
    mo.hstack([judge, criterion, only_flips])
    return criterion, judge, judgments, only_flips


@app.cell
def _(criterion, flip_table, judge, judgments, mo, only_flips):
    flips = flip_table(judgments, judge=judge.value, criterion=criterion.value)
    n_flip = int(flips["flip"].sum())
    shown = flips[flips["flip"]] if only_flips.value else flips
    mo.md(
        f"**{judge.value} / {criterion.value}**: {len(flips)} items judged in both orders; "
        f"<span id='n-flips'>{n_flip}</span> flips "
        f"({n_flip / max(len(flips), 1):.1%}); parse failures: {int(flips['n_failed'].sum())}."
    )
    return flips, n_flip, shown


@app.cell
def _(mo, shown):
    table = mo.ui.table(shown[["item", "verdict_AB", "verdict_BA", "flip", "n_failed"]].reset_index(drop=True),
                        selection="single", page_size=10, label="pick an item to read both texts")
    table
    return (table,)


@app.cell
def _(mo, shown, table):
    pick = table.value
    row = (shown[shown["item"] == pick["item"].iloc[0]] if len(pick) else shown).iloc[0] if len(shown) else None
    mo.stop(row is None, mo.md("_No items match._"))
    mo.vstack([
        mo.md(f"**{row['item']}**: {row['question']}\n\nAB order said **{row['verdict_AB']}**, "
              f"BA order said **{row['verdict_BA']}**."),
        mo.hstack([mo.md(f"**Response A**\n\n{row['text_a']}"), mo.md(f"**Response B**\n\n{row['text_b']}")],
                  widths="equal"),
    ])
    return pick, row


@app.cell
def _(flip_table, judgments, mo, source):
    if not mo.running_in_notebook():
        print("data:", source.value)
        for (j, c), _g in judgments.groupby(["judge", "criterion"]):
            f = flip_table(judgments, judge=j, criterion=c)
            print(f"{j} / {c}: {len(f)} items, {int(f['flip'].sum())} flips, {int(f['n_failed'].sum())} parse failures")
    return


if __name__ == "__main__":
    app.run()
