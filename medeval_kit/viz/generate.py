"""Plots of generation results: SRefine critique totals by round, grounded judge-score quality, the
correct-letter shares of generated MCQs and cloze accuracy. Each takes the table the generate layer
returns and ``ax=None`` and returns the Figure."""

from __future__ import annotations

import numpy as np
import pandas as pd

from medeval_kit.docstrings import shared_docs

from .figures import figure, fit_label, fixed, legend_clear_of_data
from .intervals import draw_estimates, no_interval_reasons, note_no_interval

__all__ = ["plot_rounds", "plot_quality", "plot_grounded_letter_balance", "plot_cloze_accuracy", "plot_stage0_overlap",
           "plot_stop_rules"]


def _axes(ax):
    """(figure, axes): the given axes and their figure, else a new single-column figure."""
    if ax is None:
        return figure()
    return ax.figure, ax


@shared_docs
def plot_rounds(generations: pd.DataFrame, *, ax=None):
    """Total critique score by round, one line per item; the selected round is ringed and the stopping
    threshold (the ``threshold`` column of ``SRefineResult.generations``) dashed. The legend names every mark
    (each item by name up to 8 items).

    Parameters
    ----------
    generations : DataFrame
        ``SRefineResult.generations`` (``item``, ``round``, ``total``, ``selected``, ``threshold``).
    {ax}

    Returns
    -------
    {figure}
    """
    from matplotlib.lines import Line2D

    fig, ax = _axes(ax)
    g = generations
    n_items = g["item"].nunique()
    for it, d in g.groupby("item", sort=True):
        d = d.sort_values("round")
        ax.plot(d["round"], d["total"], marker="o", lw=1, label=str(it) if n_items <= 8 else None)
        b = d[d["best"]]
        ax.scatter(b["round"], b["total"], s=80, facecolors="none", edgecolors="k", zorder=3)
    thr = g["threshold"].dropna().unique() if "threshold" in g.columns else []
    # every mark named: the items (each by name when there are few), the ring and the threshold
    extra = [] if n_items <= 8 else [(Line2D([], [], marker="o", lw=1, color="0.5"), f"one line per item ({n_items})")]
    extra.append((Line2D([], [], ls="none", marker="o", ms=8, mfc="none", mec="k"), "selected round"))
    if len(thr) == 1:
        ax.axhline(float(thr[0]), ls="--", lw=0.8, color="grey")
        extra.append((Line2D([], [], ls="--", lw=0.8, color="grey"), f"stopping threshold {float(thr[0]):g}"))
    ax.set_xlabel("round (1 = initial draft); n = items with that round")
    ax.set_ylabel("total critique score (mean of components)")
    rounds = sorted(g["round"].unique())
    ax.set_xticks(rounds, [f"{r:g}\nn={g.loc[g['round'] == r, 'item'].nunique()}" for r in rounds])
    handles, labels = ax.get_legend_handles_labels()
    legend_clear_of_data(ax, handles=handles + [h for h, _ in extra], labels=labels + [lab for _, lab in extra],
                         fontsize=6, ncol=2)
    return fig


@shared_docs
def plot_quality(summary: pd.DataFrame, *, fmt: str = "mcq", ax=None):
    """Mean judge score (``estimate`` with its CI) per generator and criterion, one format (dot plot).

    Generators read from the top; within one, the criteria run from the top in the legend's order.

    Parameters
    ----------
    summary : DataFrame
        A quality table per generator, criterion and format with the contract columns.
    fmt : str, default "mcq"
        The format (``mcq``, ``open`` ...) to draw.
    {ax}

    Returns
    -------
    {figure}
    """
    fig, ax = _axes(ax)
    d = summary[summary["format"] == fmt] if "format" in summary.columns else summary
    crits = sorted(d["criterion"].unique())
    gens = sorted(d["generator"].unique())
    why = []
    for k, c in enumerate(crits):
        dc = d[d["criterion"] == c].set_index("generator").reindex(gens)
        y = np.arange(len(gens)) + (k - (len(crits) - 1) / 2) * 0.15
        why += draw_estimates(ax, y, dc["estimate"], dc["ci_low"], dc["ci_high"], horizontal=True, lw=0.8,
                              n=dc["n_items"] if "n_items" in dc else None, label=c, capsize=0)
    ax.set_yticks(np.arange(len(gens)))
    ax.set_yticklabels(gens)
    ax.set_ylim(len(gens) - 0.5, -0.5)  # first generator, and first criterion, on top
    ax.set_xlabel(f"mean judge score (1-10), {fmt}, 95% CI")
    note_no_interval(ax, why)
    ax.legend(fontsize=6, frameon=False)
    return fig


@shared_docs
def plot_grounded_letter_balance(balance: pd.DataFrame, *, by: str = "generator", ax=None):
    """Stacked share of the correct letter (``estimate`` of a letter-balance table) per group, with
    quarter lines (uniform A-D puts 25% on each letter).

    Parameters
    ----------
    balance : DataFrame
        A letter-balance table (:func:`~medeval_kit.bias.letter_balance`).
    by : str, default "generator"
        The grouping column.
    {ax}

    Returns
    -------
    {figure}
    """
    fig, ax = _axes(ax)
    w = balance.pivot_table(index=by, columns="letter", values="estimate", fill_value=0)
    w = w[sorted(w.columns, key=str)]
    left = np.zeros(len(w))
    for L in w.columns:  # stacked left to right in the legend's order (A, B, C ...)
        ax.barh([str(i) for i in w.index], w[L], left=left, label=str(L))
        left += w[L].to_numpy()
    for x in (0.25, 0.5, 0.75):
        ax.axvline(x, ls=":", lw=0.6, color="grey")
    ax.set_ylim(len(w) - 0.5, -0.5)  # first group on top
    ax.set_xlabel("share of items keyed to each letter")
    ax.legend(ncol=len(w.columns), fontsize=6, frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return fig


@shared_docs
def plot_cloze_accuracy(acc: pd.DataFrame, *, x: str = "match", ax=None):
    """Cloze accuracy (``estimate`` with its CI) per value of ``x`` as bars, n and CI method in the label.

    Each bar carries its value and count ("0.25 (1/4)") and a point at the estimate, so a bar of height 0 is
    still seen; the y axis spans [0, 1.1] (accuracy, plus room for the labels).

    Parameters
    ----------
    acc : DataFrame
        A cloze accuracy table with the contract columns.
    x : str, default "match"
        The column whose values are the bars.
    {ax}

    Returns
    -------
    {figure}
    """
    fig, ax = _axes(ax)
    est = acc["estimate"].to_numpy(float)
    n = acc["n_items"].to_numpy(float)
    why = no_interval_reasons(est, acc["ci_low"], acc["ci_high"], acc["n_items"])
    ok = why == ""
    high = acc["ci_high"].to_numpy(float)
    err = np.abs(np.vstack([est - acc["ci_low"].to_numpy(float), high - est]))
    err[:, ~ok] = np.nan  # no bar where there is no interval; the footnote says why
    xs = np.arange(len(acc))
    ax.bar(xs, est, yerr=err, color="C0", alpha=0.6)
    ax.plot(xs, est, "o", color="C0", ms=3, zorder=3, clip_on=False)  # visible at 0, where a bar has no height
    for i in np.flatnonzero(np.isfinite(est)):
        # the value and its count on top: "0.00 (0/4)" says what an empty bar means
        text = f"{fixed(est[i], 2)} ({int(round(est[i] * n[i]))}/{int(n[i])})" + ("" if ok[i] else "\nno CI")
        top = high[i] if ok[i] and np.isfinite(high[i]) else est[i]
        ax.annotate(text, (i, top), textcoords="offset points", xytext=(0, 2), ha="center", va="bottom", fontsize=6)
    ax.set_xticks(xs, [str(v) for v in acc[x]])
    ax.set_ylim(0, 1.1)
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.set_ylabel(f"cloze accuracy (n = {int(acc['n_items'].iloc[0])}, {acc['ci_method'].iloc[0]} CI)")
    if not ok.all():
        ax.set_xlabel(f"no CI: {'; '.join(sorted({w for w in why if w}))}")
    return fig


@shared_docs
def plot_stage0_overlap(overlap: pd.DataFrame, *, ax=None):
    """Human-vs-machine overlap of topics and test points (:func:`~medeval_kit.generate.topic_overlap`
    rows): one row of points per measure and match level, one colour per machine source, with CIs and n.

    Parameters
    ----------
    overlap : DataFrame
        :func:`~medeval_kit.generate.topic_overlap` rows.
    {ax}

    Returns
    -------
    {figure}
    """
    fig, ax = _axes(ax)
    ov = overlap.copy()
    ov["label"] = ov["measure"].str.replace("_", " ") + " (" + ov["match"] + ")"
    labels = list(dict.fromkeys(ov["label"]))
    sources = list(dict.fromkeys(ov["source"]))
    step = 0.8 / max(len(sources), 1)
    reasons = []
    for s, src in enumerate(sources):
        d = ov[ov["source"] == src].set_index("label").reindex(labels)
        pos = np.arange(len(labels)) + (s - (len(sources) - 1) / 2) * step
        n_notes = int(d["n_notes"].dropna().iloc[0]) if d["n_notes"].notna().any() else 0
        reasons += draw_estimates(ax, pos, d["estimate"], d["ci_low"], d["ci_high"], n=d["n_items"], horizontal=True,
                                  label=f"{src} ({n_notes} notes)")
    ax.set_yticks(np.arange(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("share matching the experts' choice for the same note (95% CI, notes resampled)")
    note_no_interval(ax, reasons)
    ax.legend(fontsize=6, frameon=False, loc="center right", bbox_to_anchor=(1.0, 0.27))  # rows with no data there
    return fig


@shared_docs
def plot_stop_rules(comparison: pd.DataFrame, *, measure: str = "share_all_rounds", ax=None):
    """One measure of :func:`~medeval_kit.generate.stop_rule_comparison` per (topics, stop rule), with CIs and n.

    Parameters
    ----------
    comparison : DataFrame
        A :func:`~medeval_kit.generate.stop_rule_comparison` table.
    measure : str, default "share_all_rounds"
        The measure to draw.
    {ax}

    Returns
    -------
    {figure}
    """
    fig, ax = _axes(ax)
    d = comparison[comparison["measure"] == measure].reset_index(drop=True)
    labels = [f"{t} topics\n{_STOP_RULE_WORDS.get(r, r)}" for t, r in zip(d["topics"], d["stop_rule"])]
    why = draw_estimates(ax, np.arange(len(d)), d["estimate"], d["ci_low"], d["ci_high"], n=d["n_items"])
    ax.set_xticks(np.arange(len(d)), [f"{lab}\nn={n}" for lab, n in zip(labels, d["n_items"])], fontsize=6)
    method = f"{d['ci_method'].iloc[0]} 95% CI" if len(d) else "95% CI"
    fit_label(ax, f"{_STOP_MEASURE_WORDS.get(measure, measure.replace('_', ' '))} ({method})")
    ax.set_xlabel("topic source and stop rule")
    ax.set_title(f"Stop rules: {_STOP_MEASURE_WORDS.get(measure, measure.replace('_', ' '))}")
    if measure.startswith("share"):
        ax.set_ylim(-0.02, 1.02)
    note_no_interval(ax, why)
    return fig


_STOP_MEASURE_WORDS = {
    "share_all_rounds": "share of items that ran every round",
    "share_stopped_by_rule": "share of items stopped by the rule",
    "share_best_round_1": "share of items whose best round is the first",
    "mean_rounds": "mean rounds per item",
}
_STOP_RULE_WORDS = {"total": "total score", "all_components": "every component"}
