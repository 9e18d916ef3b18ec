# /// script
# requires-python = ">=3.10"
# dependencies = ["medeval_kit", "marimo"]
# ///
"""Judgments explorer: upload your pairwise judge's verdicts in both presentation orders (or use the
judging study's output), map its columns, then filter by judge and criterion and read the position
flips side by side with both texts.

Run with `marimo run notebooks/judgments_app.py`, or `python notebooks/judgments_app.py` to print a summary;
on your file add `-- --data mine.csv --item pair --order order --verdict winner` (no `--` with python).
Without an upload it reads the judging study's `tables/judging/judgments.csv`; without that, a
synthetic table with a planted first-slot preference.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo

    from medeval_kit import apps

    return apps, mo


@app.cell
def _(apps, mo):
    mo.vstack([mo.md("""
    # Judgments explorer: position flips

    A pairwise judge that sees the same two responses in both orders (A first, then B first) should
    pick the same response. This app counts the pairs whose verdict changes with the order (flips),
    with the flip rate's 95% bootstrap CI over pairs, and shows both texts of any pair.

    **Your file**: one row per judge call: the pair (item), the presentation order (`AB` = A shown
    first, `BA` = B shown first) and the verdict, either which model won (`A`, `B`, `tie`) or which
    presented slot won (`first`, `second`, `tie`). An empty verdict is a failed parse, never a tie.
    CSV, TSV, JSONL, JSON or Parquet. Or name the file when starting the app: `marimo run
    notebooks/judgments_app.py -- --data mine.csv --item pair --order order --verdict winner
    [--judge COLUMN] [--failed VALUE]` (also for `marimo export html` and `python ... --data`).
    Without a file the app shows the judging study's output.
    """), mo.md(apps.roles_markdown("judgments"))])
    return


@app.cell
def _(apps, mo):
    upload = mo.ui.file(filetypes=apps.UPLOAD_TYPES, label="Upload your judgments file")
    source_choice = mo.ui.dropdown(options=list(apps.BUNDLED["judgments"]), value="judging study",
                                   label="bundled data (used when no file is uploaded)")
    mo.hstack([upload, source_choice], justify="start", gap=2)
    return source_choice, upload


@app.cell
def _(apps, mo, source_choice, upload):
    data = apps.app_data("judgments", upload.value, source_choice.value, mo.cli_args())
    apps.stop_on_problem(data.problem)
    raw, source = data.table, data.source
    mapping = apps.mapping_form(raw, "judgments", data.mapping)
    mo.vstack([mo.md(apps.table_note(raw, source) + " " + apps.mapping_markdown(data) + " Which column is which?"),
               mapping.hstack(wrap=True)])
    return data, mapping, raw, source


@app.cell
def _(apps, data, mapping, mo, raw):
    odd_verdicts = apps.unknown_verdicts(raw, mapping.value.get("verdict"))
    given_failed = data.request.options.get("failed", []) if data.request else []
    failed_tokens = mo.ui.multiselect(options=odd_verdicts, value=[v for v in given_failed if v in odd_verdicts],
                                      label="verdict values that mean a failed parse")
    failed_tokens if odd_verdicts else None
    return (failed_tokens,)


@app.cell
def _(apps, failed_tokens, mapping, mo, raw, source):
    judgments, problem = apps.attempt(apps.judgments_from_table, raw, mapping.value, source=source,
                                      failed=failed_tokens.value)
    apps.stop_on_problem(problem)
    return (judgments,)


@app.cell
def _(judgments, mo):
    judge_names = sorted(judgments["judge"].unique())
    criteria = sorted(judgments["criterion"].unique())
    judge = mo.ui.dropdown(options=judge_names, value=judge_names[0], label="judge")
    criterion = mo.ui.dropdown(options=criteria, value=criteria[0], label="criterion")
    only_flips = mo.ui.checkbox(value=False, label="only position flips")
    n_boot = mo.ui.slider(200, 2000, step=200, value=1000, label="bootstrap resamples", show_value=True)
    mo.hstack([judge, criterion, only_flips, n_boot], justify="start", gap=2, wrap=True)
    return criterion, judge, n_boot, only_flips


@app.cell
def _(apps, criterion, judge, judgments, mo, n_boot, only_flips):
    flips = apps.flip_table(judgments, judge=judge.value, criterion=criterion.value)
    n_flip = int(flips["flip"].sum())
    shown = flips[flips["flip"]] if only_flips.value else flips
    bias = apps.position_summary(judgments, judge=judge.value, criterion=criterion.value,
                                 n_boot=n_boot.value).set_index("metric")
    mo.md(apps.flip_summary_markdown(flips, bias, judge=judge.value, criterion=criterion.value,
                                     n_boot=n_boot.value, n_shown=len(shown)))
    return flips, n_flip, shown


@app.cell
def _(mo, shown):
    table = mo.ui.table(shown[["item", "verdict_AB", "verdict_BA", "flip", "n_failed"]].reset_index(drop=True),
                        selection="single", page_size=10, label="pick an item to read both texts")
    table
    return (table,)


@app.cell
def _(apps, mo, shown, table):
    pick = table.value
    row = (shown[shown["item"] == pick["item"].iloc[0]] if len(pick) else shown).iloc[0] if len(shown) else None
    mo.stop(row is None, mo.md("_No items match._"))
    mo.vstack([
        mo.md(apps.pair_markdown(row)),
        mo.hstack([mo.md(apps.response_markdown(row, "a")), mo.md(apps.response_markdown(row, "b"))],
                  widths="equal"),
    ])
    return


@app.cell
def _(apps, judgments, mo, source):
    if not mo.running_in_notebook():
        print("data:", source)
        for (j, c), _g in judgments.groupby(["judge", "criterion"]):
            f = apps.flip_table(judgments, judge=j, criterion=c)
            print(f"{j} / {c}: {len(f)} items, {int(f['flip'].sum())} flips, {int(f['n_failed'].sum())} parse failures")
    return


if __name__ == "__main__":
    app.run()
