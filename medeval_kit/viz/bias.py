"""Plots of bias results (:mod:`medeval_kit.bias` tables): flip and first-slot rates per criterion,
consistency against agreement, correct-letter balance, self/family preference, one rate per judge.
Each takes the tidy result table and ``ax=None`` and returns the Figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns

from medeval_kit.docstrings import shared_docs
from medeval_kit.viz.figures import PALETTE, figure, fit_label, legend_clear_of_data, paper_style
from medeval_kit.viz.intervals import draw_estimates, no_interval_reasons, note_no_interval

__all__ = ["BIAS_METRIC_LABELS", "bias_metric_label", "plot_flip_rates", "plot_first_slot",
           "plot_consistency_vs_agreement", "plot_letter_balance", "plot_self_preference", "plot_rate_by_judge"]

BIAS_METRIC_LABELS = {
    "flip_rate": "flip rate (verdict changes with the order)",
    "consistency": "order consistency (same verdict in both orders)",
    "first_slot_rate": "first-slot rate: P(first slot | not a tie)",
    "agreement_on_consistent": "agreement with the reference on order-consistent pairs",
    "longer_preferred": "share of verdicts for the longer response",
    "win_rate_raw": "win rate",
    "win_rate_lc": "length-controlled win rate",
    "slot_rate": "share of verdicts for the slot",
    "delta_self": "Δ self (own minus other-lineage scores)",
    "delta_family": "Δ family (family minus other-lineage scores)",
}
"""Axis words for the metric names of :mod:`medeval_kit.bias` tables (others: underscores become spaces)."""


@shared_docs
def bias_metric_label(metric: str) -> str:
    """Readable axis words for a bias metric name (``first_slot_rate`` -> ``first-slot rate: P(first slot | not a tie)``).

    Parameters
    ----------
    metric : str
        A bias metric's name (``first_slot_rate``, ``flip_rate`` ...).

    Returns
    -------
    str
        Axis words for it; the name itself when it has none.
    """
    return BIAS_METRIC_LABELS.get(str(metric), str(metric).replace("_", " "))


def _axes(ax, width: str = "single", aspect: float = 0.75):
    """(fig, ax): the given axes and their figure, else a new paper-style figure."""
    return figure(width, aspect=aspect) if ax is None else (ax.figure, ax)


def _n(d: pd.DataFrame):
    """The table's ``n_items`` (None when it has none), for the no-interval marks."""
    return d["n_items"].to_numpy(float) if "n_items" in d else None


def _errorbar_plot(res: pd.DataFrame, metric: str, ylabel: str, ref: float | None, title: str, ax=None):
    """One metric per criterion (x) and judge (colour) with CI bars, optional reference line."""
    d = res[res["metric"] == metric].copy()
    with paper_style():
        fig, ax = _axes(ax)
        judges = sorted(d["judge"].astype(str).unique())
        crits = sorted(d["criterion"].astype(str).unique())
        width = 0.8 / max(len(judges), 1)
        colors = sns.color_palette(PALETTE, max(len(judges), 1))
        why = []
        for k, j in enumerate(judges):
            dj = d.assign(criterion=d["criterion"].astype(str))[d["judge"].astype(str) == j]
            dj = dj.set_index("criterion").reindex(crits)
            x = np.arange(len(crits)) + (k - (len(judges) - 1) / 2) * width
            why += draw_estimates(ax, x, dj["estimate"], dj["ci_low"], dj["ci_high"], n=_n(dj), color=colors[k],
                                  label=j)
        if ref is not None:
            ax.axhline(ref, color="0.5", lw=0.8, ls="--")
        ax.set_xticks(np.arange(len(crits)))
        ax.set_xticklabels(crits, rotation=30 if len(crits) > 3 else 0, ha="right" if len(crits) > 3 else "center")
        fit_label(ax, ylabel)
        ax.set_ylim(0, 1)
        ax.set_title(title)
        note_no_interval(ax, why)
        if len(judges) > 1:
            ax.legend(frameon=False, fontsize=6, ncol=2)
    return fig


@shared_docs
def plot_flip_rates(res: pd.DataFrame, *, metric: str = "flip_rate", title: str = "Position flips", ax=None):
    """Flip rate per criterion (x) and judge (colour) with CI bars; ``res`` from ``bias.position_bias``.

    Parameters
    ----------
    res : DataFrame
        A :func:`~medeval_kit.bias.position_bias` table.
    metric : str, default "flip_rate"
        The metric rows to draw.
    {title}
    {ax}

    Returns
    -------
    {figure}
    """
    return _errorbar_plot(res, metric, f"{bias_metric_label(metric)}, 95% CI", None, title, ax)


@shared_docs
def plot_first_slot(res: pd.DataFrame, *, title: str = "First-slot preference", ax=None):
    """First-slot rate per criterion and judge with CI bars and the no-bias line at 0.5.

    Parameters
    ----------
    res : DataFrame
        A :func:`~medeval_kit.bias.position_bias` table (its ``first_slot_rate`` rows).
    {title}
    {ax}

    Returns
    -------
    {figure}
    """
    return _errorbar_plot(res, "first_slot_rate", f"{bias_metric_label('first_slot_rate')}, 95% CI", 0.5, title, ax)


@shared_docs
def plot_consistency_vs_agreement(
    res: pd.DataFrame,
    *,
    x: str = "consistency",
    y: str = "agreement_on_consistent",
    title: str = "Consistency vs agreement",
    ax=None,
):
    """Scatter of order consistency (x) against agreement with a reference (y), with 2-D CI bars.

    Parameters
    ----------
    res : DataFrame
        One row per judge (and criterion) with the two metrics and their CIs, wide: ``<x>``,
        ``<x>_ci_low`` ... (see :func:`~medeval_kit.bias.agreement_on_consistent`).
    x, y : str
        The metrics on the two axes.
    {title}
    {ax}

    Returns
    -------
    {figure}
    """
    w = res[res["metric"].isin([x, y])].pivot_table(index="judge", columns="metric",
                                                    values=["estimate", "ci_low", "ci_high"], aggfunc="first")
    with paper_style():
        fig, ax = _axes(ax)
        why = []
        for j in w.index:
            ex, ey = w.loc[j, ("estimate", x)], w.loc[j, ("estimate", y)]
            lo = [w.loc[j, ("ci_low", x)], w.loc[j, ("ci_low", y)]]
            hi = [w.loc[j, ("ci_high", x)], w.loc[j, ("ci_high", y)]]
            bad = no_interval_reasons([ex, ey], lo, hi)
            if bad.any():  # either interval missing: an open marker, no bars
                why += [b for b in bad if b]
                ax.plot([ex], [ey], "o", ms=3, mfc="none", label=str(j))
                continue
            ax.errorbar([ex], [ey], xerr=np.abs([[ex - lo[0]], [hi[0] - ex]]),
                        yerr=np.abs([[ey - lo[1]], [hi[1] - ey]]), fmt="o", ms=3, capsize=2, lw=0.7, label=str(j))
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel(f"{bias_metric_label(x)} (95% CI)")
        fit_label(ax, f"{bias_metric_label(y)} (95% CI)")
        note_no_interval(ax, why)
        ax.set_title(title)
        legend_clear_of_data(ax, fontsize=6, ncol=2)
    return fig


@shared_docs
def plot_letter_balance(letters: pd.DataFrame, *, by: str = "generator",
                        title: str = "Correct-answer letter per generator", ax=None):
    """Share of each correct letter per ``by`` group (rows) with CI bars, from ``bias.letter_balance``;
    a dashed line at the expected share when it is one value, else a grey tick per point.

    Groups read from the top in sorted order, and within a group the letters run A, B, C ... from the
    top, the order of the legend (left to right).

    Parameters
    ----------
    letters : DataFrame
        A :func:`~medeval_kit.bias.letter_balance` table.
    by : str, default "generator"
        The grouping column (one row of bars per group).
    {title}
    {ax}

    Returns
    -------
    {figure}
    """
    gens = sorted(letters[by].astype(str).unique(), key=str.casefold)
    lets = sorted(letters["letter"].astype(str).unique())
    expected = letters["expected"].unique()
    with paper_style():
        fig, ax = _axes(ax, "double", aspect=max(0.35, 0.05 * len(gens) + 0.2))
        colors = sns.color_palette(PALETTE, len(lets))
        width = 0.8 / len(lets)
        why = []
        for k, x in enumerate(lets):
            sub = letters[letters["letter"].astype(str) == x]
            dl = sub.assign(_group=sub[by].astype(str)).set_index("_group").reindex(gens)
            y = np.arange(len(gens)) + (k - (len(lets) - 1) / 2) * width  # the y axis is inverted: A on top
            why += draw_estimates(ax, y, dl["estimate"], dl["ci_low"], dl["ci_high"], n=_n(dl), horizontal=True,
                                  ms=2.5, capsize=1.5, lw=0.7, color=colors[k], label=x)
            if len(expected) > 1:
                ax.plot(dl["expected"].to_numpy(float), y, "|", color="0.5", ms=4)
        if len(expected) == 1:
            ax.axvline(float(expected[0]), color="0.5", lw=0.8, ls="--")
        ax.set_yticks(np.arange(len(gens)))
        ax.set_yticklabels(gens)
        ax.set_ylim(len(gens) - 0.5, -0.5)  # first group (and letter A) on top, as the legend reads
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of questions whose correct answer has this letter (95% CI)")
        note_no_interval(ax, why)
        ax.legend(frameon=False, fontsize=6, ncol=len(lets), loc="lower center", bbox_to_anchor=(0.5, 1.0),
                  title="correct letter", title_fontsize=6)
        ax.set_title(title, pad=30)
    return fig


@shared_docs
def plot_self_preference(res: pd.DataFrame, *, title: str = "Self and family preference", ax=None):
    """Horizontal CI bars of Delta_self / Delta_family per (rater -> target), with the zero line.

    Parameters
    ----------
    res : DataFrame
        A :func:`~medeval_kit.bias.self_preference` table.
    {title}
    {ax}

    Returns
    -------
    {figure}
    """
    d = res.dropna(subset=["estimate"]).reset_index(drop=True)
    with paper_style():
        fig, ax = _axes(ax, aspect=max(0.4, 0.12 * len(d) + 0.2))
        labels = [f"{r.judge} → {r.target} ({'self' if r.metric == 'delta_self' else 'family'})"
                  for r in d.itertuples()]
        y = np.arange(len(d))
        why = draw_estimates(ax, y, d["estimate"], d["ci_low"], d["ci_high"], n=_n(d), horizontal=True)
        ax.axvline(0, color="0.5", lw=0.8, ls="--")
        ax.set_yticks(y)
        ax.set_yticklabels(labels)
        ax.set_ylim(len(d) - 0.5, -0.5)  # first row on top
        ax.set_xlabel("score difference vs other-lineage peers (95% CI)")
        note_no_interval(ax, why)
        ax.set_title(title)
    return fig


@shared_docs
def plot_rate_by_judge(res: pd.DataFrame, metric: str, *, ref: float | None = 0.5, xlabel: str | None = None,
                       title: str = "", ax=None):
    """Horizontal CI bars of one metric per judge (e.g. ``longer_preferred``, ``flip_rate``).

    Parameters
    ----------
    res : DataFrame
        A bias table with a ``metric`` column and the contract columns.
    metric : str
        The metric rows to draw (e.g. ``longer_preferred``, ``flip_rate``).
    ref : float or None, default 0.5
        A reference line (no bias); ``None`` for none.
    xlabel : str, optional
        The axis label; default the metric's words.
    {title}
    {ax}

    Returns
    -------
    {figure}
    """
    d = res[res["metric"] == metric].reset_index(drop=True)
    with paper_style():
        fig, ax = _axes(ax, aspect=max(0.35, 0.1 * len(d) + 0.25))
        y = np.arange(len(d))
        why = draw_estimates(ax, y, d["estimate"], d["ci_low"], d["ci_high"], n=_n(d), horizontal=True)
        if ref is not None:
            ax.axvline(ref, color="0.5", lw=0.8, ls="--")
        ax.set_yticks(y)
        ax.set_yticklabels([f"{j} ({c})" if d["criterion"].nunique() > 1 else str(j)
                            for j, c in zip(d["judge"], d["criterion"])])
        ax.set_ylim(len(d) - 0.5, -0.5)  # first row on top
        ax.set_xlim(0, 1)
        ax.set_xlabel(xlabel or f"{bias_metric_label(metric)} (95% CI)")
        note_no_interval(ax, why)
        ax.set_title(title)
    return fig
