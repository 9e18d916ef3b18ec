"""Plots of item analysis (:mod:`medeval_kit.psychometrics` tables): the difficulty-discrimination map,
distractor bars for chosen items, item characteristic curves, parameter recovery and p against planted
difficulty labels. Each takes the tidy result table and ``ax=None`` and returns the Figure; none
computes a statistic."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from medeval_kit.docstrings import shared_docs
from medeval_kit.viz.figures import DOUBLE_COLUMN, PALETTE, figure, fixed, legend_clear_of_data, paper_style
from medeval_kit.viz.intervals import draw_estimates, note_no_interval

__all__ = ["plot_difficulty_discrimination", "plot_distractors", "plot_icc", "plot_recovery", "plot_p_by_label"]


def _axes(ax, width: str = "single", aspect: float = 0.75):
    """(fig, ax): the given axes and their figure, else a new paper-style figure."""
    return figure(width, aspect=aspect) if ax is None else (ax.figure, ax)


@shared_docs
def plot_difficulty_discrimination(table: pd.DataFrame, *, x: str = "p", y: str = "r_pbis", hue: str | None = "source",
                                   too_hard: float | None = 0.30, too_easy: float | None = 0.90,
                                   low_discrimination: float | None = 0.20, title: str = "Item difficulty and discrimination",
                                   ax=None):
    """Each item at (p, corrected point-biserial) with CI bars; flagged items (``n_flags`` > 0) ringed; review bands dashed.

    ``table`` is :func:`medeval_kit.psychometrics.item_flags` (optionally joined with the items for ``hue``).
    The threshold arguments only place the dashed lines (pass the values the flags used; None hides one).

    Parameters
    ----------
    table : DataFrame
        An :func:`~medeval_kit.psychometrics.item_flags` table (optionally joined with the items for
        ``hue``).
    x, y : str
        The difficulty and discrimination columns.
    hue : str or None, default "source"
        A column to colour by; ``None`` for one colour.
    too_hard, too_easy, low_discrimination : float or None
        Where to draw the review bands (pass the thresholds the flags used; ``None`` hides one).
    {title}
    {ax}

    Returns
    -------
    {figure}
    """
    d = table.copy()
    groups = sorted(d[hue].astype(str).unique()) if hue and hue in d.columns else [None]
    with paper_style():
        fig, ax = _axes(ax, aspect=0.8)
        colors = sns.color_palette(PALETTE, max(len(groups), 1))
        why = []
        for k, g in enumerate(groups):
            dg = d if g is None else d[d[hue].astype(str) == g]
            why += draw_estimates(ax, dg[x], dg[y], dg.get(f"{y}_low", np.nan * dg[y]),
                                  dg.get(f"{y}_high", np.nan * dg[y]), color=colors[k], label=g, ms=3, capsize=0,
                                  lw=0.6, alpha=0.8)
            if "n_flags" in dg.columns:
                f = dg[dg["n_flags"] > 0]
                ax.plot(f[x], f[y], ls="none", marker="o", ms=7, mfc="none", mec=colors[k], mew=0.6)
            undefined = dg[dg[x].notna() & dg[y].isna()]
            ax.plot(undefined[x], np.full(len(undefined), -1.0), ls="none", marker="x", ms=4, color=colors[k], mew=0.7)
        n_undefined = int((d[x].notna() & d[y].isna()).sum())
        # the marks' key under the x axis, where no data or line crosses it
        keys = (["ringed: flagged"] if "n_flags" in d.columns else []) + (
            [f"x at -1: {n_undefined} items with no r (everyone right or wrong)"] if n_undefined else [])
        for v in (too_hard, too_easy):
            if v is not None:
                ax.axvline(v, color="0.5", lw=0.7, ls="--")
        if low_discrimination is not None:
            ax.axhline(low_discrimination, color="0.5", lw=0.7, ls="--")
        ax.axhline(0, color="0.3", lw=0.6)
        ax.set_xlim(-0.03, 1.03)
        ax.set_ylim(-1.08, 1.05)
        ax.set_xlabel("\n".join(["difficulty p (share correct)", "; ".join(keys)] if keys else
                                 ["difficulty p (share correct)"]))
        ax.set_ylabel("corrected point-biserial r, 95% CI")
        ax.set_title(title)
        note_no_interval(ax, why)
        if groups != [None]:
            ax.legend(frameon=False, fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0), title=None)
    return fig


@shared_docs
def plot_distractors(distractors: pd.DataFrame, *, items: Sequence[str] | None = None, ncols: int = 3,
                     nonfunctional: float | None = 0.05, titles: dict[str, str] | None = None,
                     title: str = "Option choice by item", ax=None):
    """Small multiples, one per item: the share choosing each option (95% CI; key filled dark), with the
    upper- and lower-group shares as markers and the non-functional line.

    ``distractors`` is :func:`medeval_kit.psychometrics.distractor_analysis`; ``items`` picks the panels;
    ``ax``: axes to draw into (one per item), else a new figure.

    Parameters
    ----------
    distractors : DataFrame
        A :func:`~medeval_kit.psychometrics.distractor_analysis` table.
    items : sequence of str, optional
        The items to draw (one panel each); default all.
    ncols : int, default 3
        Panels per row.
    nonfunctional : float or None, default 0.05
        The non-functional share line; ``None`` hides it.
    titles : dict of str to str, optional
        Panel titles by item.
    {title}
    ax : sequence of Axes, optional
        One axes per item; a new figure when omitted.

    Returns
    -------
    {figure}
    """
    its = list(items) if items is not None else sorted(distractors["item"].astype(str).unique())
    n = max(len(its), 1)
    ncols = max(1, min(ncols, n))
    nrows = int(np.ceil(n / ncols))
    with paper_style():
        if ax is None:
            fig, axes = plt.subplots(nrows, ncols, figsize=(DOUBLE_COLUMN, 1.5 * nrows + 0.4), squeeze=False,
                                     sharex=True)
        else:
            given = list(np.atleast_1d(ax).ravel())
            if len(given) < n:
                raise ValueError(f"plot_distractors: {n} items need {n} axes, got {len(given)}")
            ncols, nrows = len(given), 1
            axes, fig = [given], given[0].figure
        for k, it in enumerate(its):
            ax = axes[k // ncols][k % ncols]
            d = distractors[distractors["item"].astype(str) == it].sort_values("option")
            pos = np.arange(len(d))
            colors = ["0.2" if bool(v) else "0.75" for v in d["is_key"]]
            est = d["estimate"].to_numpy(float)
            ax.barh(pos, est, color=colors, height=0.6)
            err = np.abs(np.vstack([est - d["ci_low"].to_numpy(float), d["ci_high"].to_numpy(float) - est]))
            ax.errorbar(est, pos, xerr=np.nan_to_num(err), fmt="none", ecolor="0.4", lw=0.6, capsize=1.5)
            # not clipped: a share of 1 sits on the axes' edge, and half a marker would be lost there
            ax.plot(d["share_upper"], pos + 0.18, ls="none", marker="^", ms=3, color=sns.color_palette(PALETTE)[0],
                    label="upper group" if k == 0 else None, clip_on=False)
            ax.plot(d["share_lower"], pos - 0.18, ls="none", marker="v", ms=3, color=sns.color_palette(PALETTE)[3],
                    label="lower group" if k == 0 else None, clip_on=False)
            if nonfunctional is not None:
                ax.axvline(nonfunctional, color="0.5", lw=0.6, ls="--",
                           label=f"non-functional below {nonfunctional:g}" if k == 0 else None)
            ax.set_yticks(pos)
            ax.set_yticklabels(d["option"].astype(str))
            ax.set_xlim(0, 1)
            ax.set_title((titles or {}).get(it, it), fontsize=7)
        for k in range(len(its), nrows * ncols):
            axes[k // ncols][k % ncols].axis("off")
        for ax in axes[-1]:
            ax.set_xlabel("share choosing the option")
        fig.suptitle(title, fontsize=9)
        handles, labels = axes[0][0].get_legend_handles_labels()
        if handles:
            fig.legend(handles + [plt.Rectangle((0, 0), 1, 1, color="0.2"), plt.Rectangle((0, 0), 1, 1, color="0.75")],
                       labels + ["key", "distractor"], frameon=False, fontsize=6, loc="lower center",
                       ncol=len(handles) + 2, bbox_to_anchor=(0.5, -0.02))
        fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    return fig


@shared_docs
def plot_icc(icc: pd.DataFrame, *, items: Sequence[str] | None = None, band: bool = True,
             title: str = "Item characteristic curves", ax=None):
    """P(correct | ability) per item with its 95% band; ``icc`` is :func:`medeval_kit.psychometrics.icc_table`.

    Parameters
    ----------
    icc : DataFrame
        An :func:`~medeval_kit.psychometrics.icc_table` table.
    items : sequence of str, optional
        The items to draw; default all.
    band : bool, default True
        Draw the 95% band.
    {title}
    {ax}

    Returns
    -------
    {figure}
    """
    its = list(items) if items is not None else list(dict.fromkeys(icc["item"].astype(str)))
    with paper_style():
        fig, ax = _axes(ax, aspect=0.75)
        colors = sns.color_palette(PALETTE, max(len(its), 1))
        for k, it in enumerate(its):
            d = icc[icc["item"].astype(str) == it]
            if d.empty:
                continue
            ax.plot(d["theta"], d["p"], color=colors[k % len(colors)], lw=1,
                    label=f"{it} (a={fixed(d['a'].iloc[0], 2)}, b={fixed(d['b'].iloc[0], 2)})")
            if band:
                ax.fill_between(d["theta"], d["ci_low"], d["ci_high"], color=colors[k % len(colors)], alpha=0.15, lw=0)
        ax.set_ylim(0, 1)
        ax.set_xlabel("ability θ (standard normal scale)")
        ax.set_ylabel("P(correct)")
        ax.set_title(title)
        legend_clear_of_data(ax, fontsize=5.5, loc="upper left")
    return fig


@shared_docs
def plot_recovery(table: pd.DataFrame, *, title: str = "Recovery of planted item parameters", ax=None):
    """Estimate (95% CI) against planted value, one panel per parameter, identity line; uncovered CIs in a second colour.

    ``table`` is :func:`medeval_kit.psychometrics.recovery_table`; ``ax``: one axis per parameter, else a new figure.

    Parameters
    ----------
    table : DataFrame
        A :func:`~medeval_kit.psychometrics.recovery_table` table.
    {title}
    ax : sequence of Axes, optional
        One axes per parameter; a new figure when omitted.

    Returns
    -------
    {figure}
    """
    params = sorted(table["parameter"].unique())
    with paper_style():
        if ax is None:
            fig, axes = plt.subplots(1, len(params), figsize=(DOUBLE_COLUMN, DOUBLE_COLUMN / 2.4), squeeze=False)
        else:
            axes = [list(np.atleast_1d(ax).ravel())]
            fig = axes[0][0].figure
        c_in, c_out = sns.color_palette(PALETTE)[0], sns.color_palette(PALETTE)[3]
        for ax, name in zip(axes[0], params):
            d = table[table["parameter"] == name]
            why = []
            for cov, col, lab in ((True, c_in, "CI covers the planted value"), (False, c_out, "CI misses it")):
                dd = d[d["covered"].astype("boolean").fillna(False) == cov] if cov else \
                    d[~d["covered"].astype("boolean").fillna(False)]
                why += draw_estimates(ax, dd["planted"], dd["estimate"], dd["ci_low"], dd["ci_high"], color=col,
                                      label=lab, ms=3, capsize=0, lw=0.6)
            lim = [np.nanmin(d[["planted", "estimate"]].to_numpy(float)), np.nanmax(d[["planted", "estimate"]].to_numpy(float))]
            ax.plot(lim, lim, color="0.5", lw=0.7, ls="--")
            ax.set_xlabel(f"planted {name}")
            ax.set_ylabel(f"estimated {name}, 95% CI")
            ax.set_title({"a": "discrimination a", "b": "difficulty b"}.get(name, name))
            note_no_interval(ax, why)
        axes[0][0].legend(frameon=False, fontsize=6)
        fig.suptitle(title, fontsize=9)
        fig.tight_layout()
    return fig


@shared_docs
def plot_p_by_label(table: pd.DataFrame, *, by: str = "difficulty_label", order: Sequence[str] | None = None,
                    value: str = "p", join_traces: bool = True, title: str = "Share correct by planted difficulty",
                    ax=None, label: str | None = None):
    """Each item's p (95% CI) at its planted difficulty label, items of one trace joined by a thin line.

    Parameters
    ----------
    table : DataFrame
        Item statistics with ``p``, its CI and the planted labels.
    by : str, default "difficulty_label"
        The planted-label column on the x axis.
    order : sequence of str, optional
        The labels in axis order; default sorted.
    value : str, default "p"
        The column on the y axis.
    join_traces : bool, default True
        Join the items of one ``trace`` (a column of ``table``, when present) by a thin line.
    {title}
    {ax}
    label : str, optional
        Deprecated name of ``by``.

    Returns
    -------
    {figure}
    """
    if label is not None:
        warnings.warn("plot_p_by_label(label=...) is deprecated; use by=", DeprecationWarning, stacklevel=2)
        by = label
    label = by
    d = table.copy()
    levels = list(order) if order is not None else sorted(d[label].dropna().astype(str).unique())
    xpos = {lv: i for i, lv in enumerate(levels)}
    d = d[d[label].astype(str).isin(levels)]
    d["_x"] = d[label].astype(str).map(xpos).astype(float)
    with paper_style():
        fig, ax = _axes(ax, aspect=0.7)
        trace = "trace"
        if join_traces and trace in d.columns:
            traces = sorted(d[trace].astype(str).unique())
            offs = {t: (k - (len(traces) - 1) / 2) * 0.5 / max(len(traces), 1) for k, t in enumerate(traces)}
            d["_x"] = d["_x"] + d[trace].astype(str).map(offs)
            for _, g in d.groupby(trace):
                g = g.sort_values("_x")
                ax.plot(g["_x"], g[value], color="0.8", lw=0.5, zorder=0)
        why = draw_estimates(ax, d["_x"], d[value], d.get(f"{value}_low", np.nan * d[value]),
                             d.get(f"{value}_high", np.nan * d[value]), color=sns.color_palette(PALETTE)[0], ms=3,
                             capsize=0, lw=0.6)
        ax.set_xticks(range(len(levels)))
        ax.set_xticklabels(levels)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("planted difficulty")
        ax.set_ylabel(f"{value} (share correct), 95% CI" if value == "p" else value)
        ax.set_title(title)
        note_no_interval(ax, why)
    return fig
