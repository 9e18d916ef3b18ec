# /// script
# requires-python = ">=3.10"
# dependencies = ["medeval_kit", "marimo"]
# ///
"""Agreement explorer: pick raters, metric and CI method; the heatmap and forest plot update.

Run with `marimo run notebooks/agreement_app.py` (an app) or `python notebooks/agreement_app.py`
(a script that prints the numbers).
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo

    from medeval_kit import agreement, viz
    from medeval_kit.apps import load_annotations_for_app

    return agreement, load_annotations_for_app, mo, viz


@app.cell
def _(agreement, mo):
    dataset = mo.ui.dropdown(options=["pandalm", "medqg_table19"], value="pandalm", label="dataset")
    metric = mo.ui.dropdown(
        options=agreement.registry.names(pairwise=True, reference=False, nominal=True),
        value="cohen_kappa", label="metric",
    )
    ci_method = mo.ui.dropdown(options=["percentile", "bca", "analytic"], value="percentile", label="CI method")
    n_boot = mo.ui.slider(200, 2000, step=200, value=400, label="bootstrap resamples")
    mo.hstack([dataset, metric, ci_method, n_boot])
    return ci_method, dataset, metric, n_boot


@app.cell
def _(dataset, load_annotations_for_app):
    ann, humans, judges = load_annotations_for_app(dataset.value)
    return ann, humans, judges


@app.cell
def _(ann, mo):
    raters = mo.ui.multiselect(options=sorted(ann["rater"].unique()), value=sorted(ann["rater"].unique()),
                               label="raters")
    raters
    return (raters,)


@app.cell
def _(agreement, ann, ci_method, metric, mo, n_boot, raters):
    chosen = list(raters.value)
    mo.stop(len(chosen) < 2, mo.md("**Pick at least two raters.**"))
    pairs = agreement.pairwise_matrix(ann, metric=metric.value, raters=chosen, n_boot=n_boot.value,
                                      ci_method=ci_method.value, seed=0, no_overlap="nan")
    mean_pair = pairs["estimate"].mean()
    summary = mo.md(
        f"Mean pairwise **{metric.value}** over {len(pairs)} pairs: "
        f"<span id='mean-pairwise'>{mean_pair:.3f}</span> "
        f"(CI method: {ci_method.value}, n_boot = {n_boot.value})"
    )
    summary
    return chosen, mean_pair, pairs


@app.cell
def _(pairs, viz):
    heat = viz.plot_kappa_heatmap(pairs, title="pairwise agreement (95% CI)")
    heat
    return (heat,)


@app.cell
def _(mo):
    design = mo.ui.dropdown(options=["loo", "pooled", "medqade"], value="loo",
                            label="design (loo: each judge scored like a held-out human)")
    design
    return (design,)


@app.cell
def _(agreement, ann, chosen, design, humans, judges, metric, mo, n_boot, viz):
    h = [r for r in humans if r in chosen]
    j = [r for r in judges if r in chosen]
    mo.stop(len(h) < 2 or not j, mo.md("_Judges vs humans needs at least two humans and one judge._"))
    vs = agreement.judge_vs_humans(ann, humans=h, judges=j, design=design.value, metric=metric.value,
                                   n_boot=n_boot.value, seed=0).to_frame()
    forest = viz.plot_forest(vs, title=f"judges vs humans ({design.value})")
    mo.vstack([forest, mo.ui.table(vs.round(3), selection=None)])
    return forest, vs


@app.cell
def _(mean_pair, mo, pairs):
    if not mo.running_in_notebook():
        print(pairs[["rater_a", "rater_b", "estimate", "ci_low", "ci_high", "n_items"]].to_string(index=False))
        print(f"mean pairwise estimate: {mean_pair:.3f}")
    return


if __name__ == "__main__":
    app.run()
