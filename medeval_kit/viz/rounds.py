"""Plots of round-wise results (:mod:`medeval_kit.rounds`): round means with their n, per-component
trajectories, stop/best round shares, and fitted curves beside observed points."""

from __future__ import annotations

import numpy as np
import pandas as pd

from medeval_kit.docstrings import shared_docs

from .figures import figure, legend_clear_of_data
from .intervals import draw_estimates, no_interval_reasons, note_no_interval

__all__ = ["plot_round_means", "plot_component_trajectories", "plot_stop_best", "plot_curve_fits", "plot_item_rounds",
           "round_ticks"]

_IMPUTATION_STYLE = {"available": ("o", "-", "available-only"), "locf": ("s", "--", "last value carried forward")}
_IMPUTATION_OFFSET = {"available": -0.06, "locf": 0.06}
_LINE_STYLES = ("-", "--", ":", "-.")


def _axes(ax):
    """Return (fig, ax): the given axes' figure, or a new single-column figure."""
    if ax is None:
        return figure("single")
    return ax.figure, ax


def _n_text(ns) -> str:
    """``n=40``, or ``n=38–40`` when the counts differ (e.g. per component)."""
    ns = sorted({int(v) for v in ns if pd.notna(v)})
    if not ns:
        return "n=0"
    return f"n={ns[0]}" if len(ns) == 1 else f"n={ns[0]}–{ns[-1]}"


@shared_docs
def round_ticks(table: pd.DataFrame, rounds=None) -> tuple[list, list[str]]:
    r"""(rounds, tick labels ``"2
    n=38"``): each round with the items its estimate rests on (``n_items``).

    Parameters
    ----------
    table : DataFrame
        A table with ``round`` and ``n_items``.
    rounds : sequence, optional
        The rounds to label; default those in ``table``.

    Returns
    -------
    rounds : list
        The rounds.
    labels : list of str
        ``"<round>\nn=<items>"`` for each.
    """
    rounds = sorted(table["round"].unique()) if rounds is None else list(rounds)
    labels = [f"{r:g}\n{_n_text(table.loc[table['round'] == r, 'n_items'])}" for r in rounds]
    return rounds, labels


def _finish(ax, *, xticks, xlabel: str, ylabel: str, title: str | None, xticklabels=None, **legend) -> None:
    """Set ticks, labels, the optional title and a frameless legend."""
    ax.set_xticks(xticks, xticklabels)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    legend_clear_of_data(ax, **legend)


@shared_docs
def plot_round_means(means: pd.DataFrame, *, ax=None, title: str | None = None, ylabel: str = "mean total score"):
    """Plot :func:`~medeval_kit.rounds.round_means` output: available-only vs LOCF means with CIs and n per round.

    Under each round: the items its available-only mean rests on (drop-out shows there); the LOCF
    legend entry gives its own n. A mean without an interval (one item, or a zero-width CI) is an
    open marker, explained under the axis.

    Parameters
    ----------
    means : DataFrame
        A :func:`~medeval_kit.rounds.round_means` table (both imputations).
    {ax}
    {title}
    ylabel : str, default "mean total score"
        The y-axis label.

    Returns
    -------
    {figure}
    """
    fig, ax = _axes(ax)
    why = []
    for i, (m, g) in enumerate(means.groupby("imputation", sort=False)):
        g = g.sort_values("round")
        mk, ls, lab = _IMPUTATION_STYLE.get(m, ("o", "-", m))
        if m != "available" and "available" in set(means["imputation"]):
            lab = f"{lab} ({_n_text(g['n_items'])})"
        x = g["round"].to_numpy(float) + _IMPUTATION_OFFSET.get(m, 0)
        why += draw_estimates(ax, x, g["estimate"], g["ci_low"], g["ci_high"], n=g["n_items"], marker=mk, line=ls,
                              ms=5, label=lab, color=f"C{i}")
    shown = means[means["imputation"] == "available"] if "available" in set(means["imputation"]) else means
    ticks, labels = round_ticks(shown, sorted(means["round"].unique()))
    _finish(ax, xticks=ticks, xticklabels=labels, xlabel="round (1 = initial draft); n = items with a score",
            ylabel=ylabel, title=title)
    note_no_interval(ax, why)
    return fig


@shared_docs
def plot_component_trajectories(traj: pd.DataFrame, *, imputation: str = "available", ax=None,
                                title: str | None = None):
    """Plot per-component round means (:func:`~medeval_kit.rounds.round_means` with ``by="component"``).

    Parameters
    ----------
    traj : DataFrame
        A :func:`~medeval_kit.rounds.round_means` table with ``by="component"``.
    imputation : {"available", "locf"}, default "available"
        Which means to draw.
    {ax}
    {title}

    Returns
    -------
    {figure}
    """
    fig, ax = _axes(ax)
    d = traj[traj["imputation"] == imputation]
    why = []
    for i, (comp, g) in enumerate(d.groupby("component", sort=True)):
        g = g.sort_values("round")
        bad = no_interval_reasons(g["estimate"], g["ci_low"], g["ci_high"], g["n_items"])
        ok = bad == ""
        ax.plot(g["round"], g["estimate"], marker="o", markevery=list(ok), label=comp, color=f"C{i}")
        ax.plot(g["round"][~ok], g["estimate"][~ok], "o", mfc="none", color=f"C{i}")  # no interval: open
        ax.fill_between(g["round"], g["ci_low"].where(ok), g["ci_high"].where(ok), alpha=0.15, color=f"C{i}", lw=0)
        why += [b for b in bad if b]
    ticks, labels = round_ticks(d)
    words = {"available": "available-only", "locf": "last value carried forward"}.get(imputation, imputation)
    _finish(ax, xticks=ticks, xticklabels=labels, xlabel="round (1 = initial draft); n = items with a score",
            ylabel=f"mean normalised score ({words})", title=title, ncol=2)
    note_no_interval(ax, why)
    return fig


@shared_docs
def plot_stop_best(dist: pd.DataFrame, *, ax=None, title: str | None = None):
    """Grouped bars of the stop-round and best-round shares (:func:`~medeval_kit.rounds.stop_best_distribution`),
    pooled over groups, each bar labelled with its count and each kind's n in the legend.

    Parameters
    ----------
    dist : DataFrame
        A :func:`~medeval_kit.rounds.stop_best_distribution` table.
    {ax}
    {title}

    Returns
    -------
    {figure}
    """
    fig, ax = _axes(ax)
    width = 0.38
    for i, (kind, g) in enumerate(dist.groupby("kind", sort=False)):
        g = g.groupby("round", as_index=False).agg(n_at_round=("n_at_round", "sum"), n_items=("n_items", "sum"))
        share = g["n_at_round"] / g["n_items"].replace(0, np.nan)
        x = g["round"].to_numpy(float) + (i - 0.5) * width
        ax.bar(x, share, width=width, label=f"{kind.replace('_', ' ')} ({_n_text(g['n_items'])} items)",
               color=f"C{i}")
        for xi, si, n in zip(x, share, g["n_at_round"]):
            if pd.notna(si):
                ax.annotate(str(n), (xi, si), textcoords="offset points", xytext=(0, 2), ha="center", fontsize=6)
    _finish(ax, xticks=sorted(dist["round"].unique()), xlabel="round", ylabel="share of items (count on each bar)",
            title=title)
    return fig


@shared_docs
def plot_curve_fits(curves: pd.DataFrame, *, x: str = "t", points: pd.DataFrame | None = None,
                    points_label: str = "observed", claims: pd.DataFrame | None = None, ax=None,
                    xlabel: str = "t", ylabel: str = "y", claim_color: str = "C3"):
    """Plot each column of ``curves`` (besides ``x``) as a line (solid, then dashed ...), ``points``
    (columns ``x`` and ``y``) as black dots and ``claims`` (``x``, ``y``, ``label``) as crosses.

    Parameters
    ----------
    curves : DataFrame
        The fitted curves: column ``x`` and one column per curve.
    x : str, default "t"
        The column of ``curves`` on the x axis.
    points : DataFrame, optional
        Observed points (columns ``x`` and ``y``).
    points_label : str, default "observed"
        The points' legend entry.
    claims : DataFrame, optional
        Printed values to compare (``x``, ``y``, ``label``), drawn as crosses.
    {ax}
    xlabel, ylabel : str
        The axis labels.
    claim_color : str, default "C3"
        The crosses' colour.

    Returns
    -------
    {figure}
    """
    fig, ax = _axes(ax)
    for i, col in enumerate(c for c in curves.columns if c != x):
        ax.plot(curves[x], curves[col], ls=_LINE_STYLES[i % len(_LINE_STYLES)], label=col, color=f"C{i}")
    if points is not None:
        ax.scatter(points[x], points["y"], color="k", zorder=3, label=points_label)
    for claim in ([] if claims is None else claims.to_dict("records")):
        ax.scatter([claim[x]], [claim["y"]], marker="x", color=claim_color, zorder=3, label=claim["label"])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False)
    return fig


@shared_docs
def plot_item_rounds(shares: pd.DataFrame, trajectory: pd.DataFrame, *, threshold: float = 0.9,
                     title: str | None = None, ax=None):
    """Return a Figure of one item's component score shares by round (``shares``: component, round,
    share) with the total (``trajectory``: round, total) in black and the stopping threshold dashed.

    Parameters
    ----------
    shares : DataFrame
        One item's ``component, round, share``.
    trajectory : DataFrame
        Its ``round, total``.
    threshold : float, default 0.9
        The stopping threshold (dashed).
    {title}
    {ax}

    Returns
    -------
    {figure}
    """
    fig, ax = _axes(ax)
    for comp, g in shares.groupby("component"):
        ax.plot(g["round"], g["share"], marker="o", label=comp, lw=1)
    ax.plot(trajectory["round"], trajectory["total"], color="black", lw=2, marker="s", label="total")
    ax.axhline(threshold, color="grey", ls="--", lw=0.8)
    ax.set_xticks(sorted(shares["round"].unique()))
    ax.set_xlabel("round")
    ax.set_ylabel("share of the maximum score")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=6, ncols=3, loc="lower right", frameon=False)
    if title:
        ax.set_title(title)
    return fig
