# /// script
# requires-python = ">=3.10"
# dependencies = ["medeval_kit", "marimo"]
# ///
"""Round-wise explorer: upload your refinement traces (or use the bundled MedQG-SRefine traces), map
the columns, then follow one item's rounds, scores and critiques, and see where a stopping rule would
have stopped it.

Run with `marimo run notebooks/rounds_app.py`, or `python notebooks/rounds_app.py` to print a summary;
on your file add `-- --data mine.csv --item item --round iteration --component part --score score`
(no `--` with python).
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo

    from medeval_kit import apps, rounds
    from medeval_kit.viz import paper_style, plot_item_rounds

    return apps, mo, paper_style, plot_item_rounds, rounds


@app.cell
def _(apps, mo):
    mo.vstack([mo.md("""
    # Round-wise explorer

    Iterative refinement (draft, critique, revise) scores each component of an item in every round.
    Pick an item to see its component scores and total by round (total = mean of score / max over the
    components), the critic's feedback, and the round at which a stopping rule would have stopped it.

    **Your file**: one row per item, round and component (optionally per rubric aspect, with
    `total` marking the component score). Scores are numbers with a maximum column, numbers on 0-1,
    or `x/y` strings such as `24/25`; an unparsable score counts as a failed parse. CSV, TSV,
    JSONL, JSON or Parquet. Or name the file when starting the app: `marimo run notebooks/rounds_app.py
    -- --data mine.csv --item item --round iteration --component part --score score [--max-score COLUMN]`
    (also for `marimo export html` and `python ... --data`). Without a file the app shows the
    bundled MedQG-SRefine traces.
    """), mo.md(apps.roles_markdown("rounds"))])
    return


@app.cell
def _(apps, mo):
    upload = mo.ui.file(filetypes=apps.UPLOAD_TYPES, label="Upload your rounds file")
    source_choice = mo.ui.dropdown(options=list(apps.BUNDLED["rounds"]), value="MedQG-SRefine traces (all)",
                                   label="bundled traces (used when no file is uploaded)")
    mo.hstack([upload, source_choice], justify="start", gap=2)
    return source_choice, upload


@app.cell
def _(apps, mo, source_choice, upload):
    data = apps.app_data("rounds", upload.value, source_choice.value, mo.cli_args())
    apps.stop_on_problem(data.problem)
    raw, source = data.table, data.source
    mapping = apps.mapping_form(raw, "rounds", data.mapping)
    mo.vstack([mo.md(apps.table_note(raw, source) + " " + apps.mapping_markdown(data) + " Which column is which?"),
               mapping.hstack(wrap=True)])
    return data, mapping, raw, source


@app.cell
def _(apps, mapping, mo, raw, source):
    traces, problem = apps.attempt(apps.rounds_from_table, raw, mapping.value, source=source)
    apps.stop_on_problem(problem)
    return (traces,)


@app.cell
def _(mo, rounds, traces):
    items = sorted(traces["item"].unique())
    longest = str(traces.groupby("item")["round"].max().idxmax())  # open on an item with the most rounds
    item = mo.ui.dropdown(options=items, value=longest, label="item")
    component = mo.ui.dropdown(options=["(all)", *sorted(traces["component"].unique())], value="(all)",
                               label="component")
    rule = mo.ui.dropdown(options=list(rounds.STOP_RULES), value="all_components", label="stopping rule")
    threshold = mo.ui.slider(0.5, 1.0, step=0.05, value=0.9, label="stopping threshold (score / max)",
                             show_value=True)
    mo.hstack([item, component, rule, threshold], justify="start", gap=2, wrap=True)
    return component, item, rule, threshold


@app.cell
def _(apps, item, mo, traces):
    traj = apps.round_trajectory(traces, item.value)
    last = traj.iloc[-1]
    best = traj.loc[traj["best"], "round"]
    mo.md(
        f"**{apps.shown_text(item.value)}**: {traj['round'].nunique()} rounds; final total "
        f"<span id='final-total'>{last['total']:.3f}</span> ({int(last['n_components'])} components); best round "
        f"{int(best.min()) if len(best) else 'none'}; stopped after round {int(traj['round'].max())}."
    )
    return


@app.cell
def _(apps, item, mo, rule, threshold, traces):
    stop_round, reason = apps.rule_stop(traces, item.value, rule.value, threshold.value)
    why = "the scores met it" if reason == "rule" else "the scores never met it: the trace ended"
    mo.md(f"Under the rule **{rule.value}** at threshold **{threshold.value:.2f}** this item would stop after "
          f"round <span id='rule-stop'>{stop_round}</span> ({why}).")
    return


@app.cell
def _(apps, item, paper_style, plot_item_rounds, threshold, traces):
    with paper_style():
        fig = plot_item_rounds(apps.item_component_shares(traces, item.value),
                               apps.round_trajectory(traces, item.value), threshold=threshold.value,
                               title=item.value)
    fig
    return


@app.cell
def _(apps, component, item, mo, traces):
    mo.ui.table(apps.round_rows(traces, item.value, component.value), selection=None, page_size=10)
    return


@app.cell
def _(apps, item, mo, traces):
    texts = apps.round_texts(traces, item.value)
    mo.accordion({apps.shown_text(k): mo.md(apps.shown_text(v)) for k, v in texts.items()}) if texts else None
    return


@app.cell
def _(apps, mo, source, traces):
    if not mo.running_in_notebook():
        print("data:", source)
        for it in sorted(traces["item"].unique())[:5]:
            t = apps.round_trajectory(traces, it)
            print(it, "totals by round:", [round(v, 3) for v in t["total"]])
    return


if __name__ == "__main__":
    app.run()
