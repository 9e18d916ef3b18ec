"""Plots of position-bias calibration (:mod:`medeval_kit.bias.calibration` tables): agreement with the
humans before and after calibration with the paired differences, and the human-review budget curve.
Each takes the tidy result table and ``ax=None`` and returns the Figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns

from medeval_kit.bias.calibration import METHOD_LABELS, METHODS
from medeval_kit.docstrings import shared_docs
from medeval_kit.viz.figures import DOUBLE_COLUMN, PALETTE, figure, fit_label, paper_style, renderer_of
from medeval_kit.viz.intervals import draw_estimates, note_no_interval

__all__ = ["plot_calibration_effect", "plot_budget_curve"]

_METRIC_WORDS = {"accuracy": "agreement with the human label (accuracy)", "kappa": "Cohen's kappa with the humans"}


def _groups(d: pd.DataFrame, by: str) -> list[str]:
    return sorted(d[by].astype(str).unique()) if by in d.columns else [""]


@shared_docs
def plot_calibration_effect(effect: pd.DataFrame, *, metric: str = "accuracy", by: str = "dataset",
                            title: str = "Agreement with humans before and after calibration", ax=None):
    """Per method (rows) the agreement with CI (left) and its paired difference from the baseline (right).

    ``effect`` is :func:`medeval_kit.bias.calibration.calibration_effect`'s table, optionally several
    stacked with a ``by`` column (e.g. ``dataset``: synthetic, embedded judge), one colour each. ``ax``:
    two axes (levels, differences); None draws a new two-panel figure.

    Parameters
    ----------
    effect : DataFrame
        A :func:`~medeval_kit.bias.calibration_effect` table, optionally several stacked with a
        ``by`` column.
    metric : str, default "accuracy"
        The agreement metric to draw.
    by : str, default "dataset"
        The column telling stacked tables apart (one colour each).
    {title}
    ax : sequence of two Axes, optional
        Axes for the levels and the differences; a new two-panel figure when omitted.

    Returns
    -------
    {figure}
    """
    d = effect[effect["metric"] == metric]
    if by in d.columns:
        d = d.assign(**{by: d[by].astype(str)})
    methods = [m for m in METHODS if m in set(d["method"])]
    groups = _groups(d, by)
    with paper_style():
        if ax is None:
            fig, axes = figure(DOUBLE_COLUMN, aspect=0.38, ncols=2, sharey=True)
        else:
            axes = list(ax)
            fig = axes[0].figure
        colors = sns.color_palette(PALETTE, max(len(groups), 1))
        height = 0.7 / max(len(groups), 1)
        why: list[str] = []
        targets = False
        for k, gname in enumerate(groups):
            g = d[d[by] == gname] if by in d.columns else d
            y = np.arange(len(methods)) + (k - (len(groups) - 1) / 2) * height
            for a, comp in zip(axes, ("level", "difference")):
                s = g[g["comparison"] == comp].set_index("method").reindex(methods)
                n = s["n_items"].to_numpy(float)
                why += draw_estimates(a, y, s["estimate"], s["ci_low"], s["ci_high"], n=n, horizontal=True,
                                      color=colors[k], label=f"{gname} (n={int(np.nanmax(n))})"
                                      if gname and comp == "level" and np.isfinite(n).any() else None)
                if comp == "level" and "unbiased_target" in s.columns:
                    t = pd.to_numeric(s["unbiased_target"], errors="coerce").to_numpy(float)
                    if np.isfinite(t).any():  # where the same judge lands without the planted bias
                        a.plot(t, y, ls="none", marker="x", ms=5, mew=1.1, color=colors[k], zorder=4,
                               label=None if targets else "x: the same judge without the planted bias")
                        targets = True
        base = d.loc[d["comparison"] == "difference", "baseline"]
        base = str(base.iloc[0]) if len(base) else ""
        axes[0].set_yticks(np.arange(len(methods)))
        axes[0].set_yticklabels([METHOD_LABELS.get(m, m) for m in methods])
        axes[0].invert_yaxis()
        fit_label(axes[0], f"{_METRIC_WORDS.get(metric, metric)}, 95% CI", axis="x")
        axes[1].axvline(0, color="0.5", lw=0.8, ls="--")
        fit_label(axes[1], f"paired difference from '{METHOD_LABELS.get(base, base)}', 95% CI", axis="x")
        note_no_interval(axes[0], why)
        if len(groups) > 1 or groups[0]:
            handles, labels = axes[0].get_legend_handles_labels()
            fig.legend(handles, labels, frameon=False, fontsize=6, loc="upper center", ncol=min(len(groups), 2),
                       bbox_to_anchor=(0.5, _below_xlabels(fig, axes)))
        fig.suptitle(title, fontsize=9)
    return fig


def _below_xlabels(fig, axes) -> float:
    """The figure-fraction height just under the lowest x label of ``axes`` (0 when it cannot be measured)."""
    renderer = renderer_of(fig)
    if renderer is None:
        return 0.0
    bottom = min(a.xaxis.get_tightbbox(renderer).y0 for a in axes)
    return float(bottom / fig.bbox.height) - 0.01


@shared_docs
def plot_budget_curve(curve: pd.DataFrame, *, by: str = "dataset", mark: float | None = 0.2,
                      title: str = "Human review of the most uncertain items", ax=None):
    """Agreement with the humans (95% CI band) against the share of items reviewed, most uncertain first.

    ``curve`` is :func:`medeval_kit.bias.calibration.budget_curve`'s table (optionally stacked with a
    ``by`` column); dashed: the expectation when the reviewed items are drawn at random; dotted: an
    oracle that reviews every judge error first. ``mark`` draws a vertical line at that share (the paper's
    20% human budget).

    Parameters
    ----------
    curve : DataFrame
        A :func:`~medeval_kit.bias.budget_curve` table, optionally stacked with a ``by`` column.
    by : str, default "dataset"
        The column telling stacked tables apart.
    mark : float or None, default 0.2
        A vertical line at this share reviewed; ``None`` for none.
    {title}
    {ax}

    Returns
    -------
    {figure}
    """
    d = curve.assign(**{by: curve[by].astype(str)}) if by in curve.columns else curve
    groups = _groups(d, by)
    with paper_style():
        fig, ax = figure("single", aspect=0.8) if ax is None else (ax.figure, ax)
        colors = sns.color_palette(PALETTE, max(len(groups), 1))
        for k, gname in enumerate(groups):
            g = (d[d[by] == gname] if by in d.columns else d).sort_values("share_reviewed")
            n = int(g["n_items"].max()) if len(g) else 0
            lab = f"{gname} (n={n})" if gname else f"entropy-ranked (n={n})"
            ax.plot(g["share_reviewed"], g["estimate"], color=colors[k], lw=1.2, label=lab, drawstyle="steps-post")
            ax.fill_between(g["share_reviewed"], g["ci_low"], g["ci_high"], color=colors[k], alpha=0.15, lw=0,
                            step="post")
            ax.plot(g["share_reviewed"], g["random"], color=colors[k], lw=0.8, ls="--")
            ax.plot(g["share_reviewed"], g["oracle"], color=colors[k], lw=0.8, ls=":")
        if mark is not None:
            ax.axvline(mark, color="0.5", lw=0.6)
        ax.plot([], [], color="0.4", lw=0.8, ls="--", label="random review order")
        ax.plot([], [], color="0.4", lw=0.8, ls=":", label="oracle (errors first)")
        ax.set_xlim(0, 1)
        ax.set_ylim(top=1.02)
        ax.set_xlabel("share of items reviewed by a human (highest BPDE first)")
        ax.set_ylabel("agreement with the human label, 95% CI")
        ax.legend(frameon=False, fontsize=6, loc="lower right")
        ax.set_title(title)
    return fig
