# /// script
# requires-python = ">=3.10"
# dependencies = ["medeval_kit", "marimo"]
# ///
"""Agreement explorer: upload your annotations (or use a bundled dataset), map its columns, then pick
raters, metric and CI method; the heatmap and the judges-vs-humans forest plot update.

Run with `marimo run notebooks/agreement_app.py` (an app) or `python notebooks/agreement_app.py`
(a script that prints the numbers of the bundled default). On your file: add
`-- --data mine.csv --item case --rater doctor --label verdict` to `marimo run` or `marimo export html`,
or the same options without `--` to `python notebooks/agreement_app.py`.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo

    from medeval_kit import agreement, apps, viz

    return agreement, apps, mo, viz


@app.cell
def _(apps, mo):
    mo.vstack([mo.md("""
    # Agreement explorer

    How much do your raters agree, pair by pair, and does an LLM judge agree with the humans as well as
    they agree with each other? Every number comes with its 95% bootstrap CI and the items it used.

    **Your file**: one row per label, in long format: who (rater) labelled what (item) how (label).
    CSV, TSV, JSONL, JSON (an array of objects) or Parquet. After the upload, check which of your
    columns plays each role below; names like `annotator`, `case_id` or `verdict` are recognised.
    Or name the file when starting the app: `marimo run notebooks/agreement_app.py -- --data mine.csv
    --item case --rater doctor --label verdict [--criterion COLUMN] [--rater-kind COLUMN]` (also for
    `marimo export html` and `python notebooks/agreement_app.py --data ...`). Without a file the app
    shows a bundled dataset.
    """), mo.md(apps.roles_markdown("agreement"))])
    return


@app.cell
def _(apps, mo):
    upload = mo.ui.file(filetypes=apps.UPLOAD_TYPES, label="Upload your annotations file")
    dataset = mo.ui.dropdown(options=list(apps.BUNDLED["agreement"]), value="pandalm",
                             label="bundled dataset (used when no file is uploaded)")
    mo.hstack([upload, dataset], justify="start", gap=2)
    return dataset, upload


@app.cell
def _(apps, dataset, mo, upload):
    data = apps.app_data("agreement", upload.value, dataset.value, mo.cli_args())
    apps.stop_on_problem(data.problem)
    raw, source = data.table, data.source
    mapping = apps.mapping_form(raw, "agreement", data.mapping)
    mo.vstack([mo.md(apps.table_note(raw, source) + " " + apps.mapping_markdown(data) + " Which column is which?"),
               mapping.hstack(wrap=True)])
    return data, mapping, raw, source


@app.cell
def _(apps, mapping, mo, raw, source):
    prepared, problem = apps.attempt(apps.annotations_from_table, raw, mapping.value, source=source)
    apps.stop_on_problem(problem)
    ann_all, kind_humans, label_notes = prepared
    mo.md(apps.notes_markdown(label_notes)) if label_notes else None
    return ann_all, kind_humans


@app.cell
def _(agreement, ann_all, mo):
    metric = mo.ui.dropdown(
        options=agreement.registry.names(pairwise=True, reference=False, nominal=True),
        value="cohen_kappa", label="metric",
    )
    ci_method = mo.ui.dropdown(options=["percentile", "bca", "analytic"], value="percentile", label="CI method")
    n_boot = mo.ui.slider(200, 2000, step=200, value=400, label="bootstrap resamples", show_value=True)
    criteria = sorted(ann_all["criterion"].unique())
    criterion = mo.ui.dropdown(options=criteria, value=criteria[0], label="criterion")
    mo.hstack([metric, ci_method, n_boot, criterion], justify="start", gap=2, wrap=True)
    return ci_method, criterion, metric, n_boot


@app.cell
def _(ann_all, criterion, kind_humans, mo):
    ann = ann_all[ann_all["criterion"] == criterion.value]
    names = sorted(ann["rater"].unique())
    raters = mo.ui.multiselect(options=names, value=names, label="raters")
    humans = mo.ui.multiselect(options=names, value=[r for r in kind_humans if r in names],
                               label="human raters (the others are judges)")
    mo.hstack([raters, humans], justify="start", gap=2)
    return ann, humans, raters


@app.cell
def _(agreement, ann, apps, ci_method, metric, mo, n_boot, raters):
    chosen = list(raters.value)
    mo.stop(len(chosen) < 2, mo.md("**Pick at least two raters.**"))
    pairs, pair_problem = apps.attempt(agreement.pairwise_matrix, ann, metric=metric.value, raters=chosen,
                                       n_boot=n_boot.value, ci_method=ci_method.value, seed=0, no_overlap="nan",
                                       min_overlap=0)  # the user picked these raters: show every pair
    apps.stop_on_problem(pair_problem)
    mo.stop(pairs["n_items"].isna().all(), mo.md("**The chosen raters share no item.**"))
    mean_pair = pairs["estimate"].mean()
    mo.md(
        f"Mean pairwise **{metric.value}** over <span id='n-pairs'>{len(pairs)}</span> pairs: "
        f"<span id='mean-pairwise'>{mean_pair:.3f}</span> "
        f"(CI method: {ci_method.value}, n_boot = <span id='n-boot'>{n_boot.value}</span>; "
        f"items per pair {int(pairs['n_items'].min())}-{int(pairs['n_items'].max())})"
    )
    return chosen, mean_pair, pairs


@app.cell
def _(pairs, viz):
    heat = viz.plot_kappa_heatmap(pairs, title="pairwise agreement (95% CI)")
    heat
    return


@app.cell
def _(mo):
    design = mo.ui.dropdown(options=["loo", "pooled", "medqade"], value="loo",
                            label="design (loo: each judge scored like a held-out human)")
    design
    return (design,)


@app.cell
def _(agreement, ann, apps, chosen, design, humans, metric, mo, n_boot, viz):
    h = [r for r in chosen if r in humans.value]
    j = [r for r in chosen if r not in humans.value]
    mo.stop(len(h) < 2 or not j,
            mo.md("_Judges vs humans needs at least two human raters and one judge: pick the humans above._"))
    vs_result, vs_problem = apps.attempt(agreement.judge_vs_humans, ann, humans=h, judges=j, design=design.value,
                                         metric=metric.value, n_boot=n_boot.value, seed=0)
    apps.stop_on_problem(vs_problem)
    vs = vs_result.to_frame()
    mo.vstack([viz.plot_forest(vs, title=f"judges vs humans ({design.value})"),
               mo.ui.table(vs.round(3), selection=None)])
    return


@app.cell
def _(mean_pair, mo, pairs, source):
    if not mo.running_in_notebook():
        print("data:", source)
        print(pairs[["rater_a", "rater_b", "estimate", "ci_low", "ci_high", "n_items"]].to_string(index=False))
        print(f"mean pairwise estimate: {mean_pair:.3f}")
    return


if __name__ == "__main__":
    app.run()
