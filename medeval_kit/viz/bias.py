"""Plots of bias results (:mod:`medeval_kit.bias` tables): flip and first-slot rates per criterion,
consistency against agreement, correct-letter balance, self/family preference, one rate per judge.
Each takes the tidy result table and ``ax=None`` and returns the Figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns

from medeval_kit.viz.figures import PALETTE, figure, paper_style

__all__ = ["plot_flip_rates", "plot_first_slot", "plot_consistency_vs_agreement", "plot_letter_balance",
           "plot_self_preference", "plot_rate_by_judge"]


def _axes(ax, width: str = "single", aspect: float = 0.75):
    """(fig, ax): the given axes and their figure, else a new paper-style figure."""
    return figure(width, aspect=aspect) if ax is None else (ax.figure, ax)


def _xerr(d: pd.DataFrame) -> np.ndarray:
    """The (2, n) error-bar lengths of ``estimate`` to ``ci_low`` / ``ci_high``."""
    est = d["estimate"].to_numpy(float)
    return np.abs(np.vstack([est - d["ci_low"].to_numpy(float), d["ci_high"].to_numpy(float) - est]))


def _errorbar_plot(res: pd.DataFrame, metric: str, ylabel: str, ref: float | None, title: str, ax=None):
    """One metric per criterion (x) and judge (colour) with CI bars, optional reference line."""
    d = res[res["metric"] == metric].copy()
    with paper_style():
        fig, ax = _axes(ax)
        judges = sorted(d["judge"].astype(str).unique())
        crits = sorted(d["criterion"].astype(str).unique())
        width = 0.8 / max(len(judges), 1)
        colors = sns.color_palette(PALETTE, max(len(judges), 1))
        for k, j in enumerate(judges):
            dj = d[d["judge"].astype(str) == j].set_index("criterion").reindex(crits)
            x = np.arange(len(crits)) + (k - (len(judges) - 1) / 2) * width
            ax.errorbar(x, dj["estimate"].to_numpy(float), yerr=_xerr(dj), fmt="o", ms=3, capsize=2,
                        color=colors[k], label=j)
        if ref is not None:
            ax.axhline(ref, color="0.5", lw=0.8, ls="--")
        ax.set_xticks(np.arange(len(crits)))
        ax.set_xticklabels(crits, rotation=30 if len(crits) > 3 else 0, ha="right" if len(crits) > 3 else "center")
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, 1)
        ax.set_title(title)
        if len(judges) > 1:
            ax.legend(frameon=False, fontsize=6, ncol=2)
    return fig


def plot_flip_rates(res: pd.DataFrame, *, metric: str = "flip_rate", title: str = "Position flips", ax=None):
    """Flip rate per criterion (x) and judge (colour) with CI bars; ``res`` from ``bias.position_bias``."""
    return _errorbar_plot(res, metric, "flip rate (95% CI)", None, title, ax)


def plot_first_slot(res: pd.DataFrame, *, title: str = "First-slot preference", ax=None):
    """First-slot rate per criterion and judge with CI bars and the no-bias line at 0.5."""
    return _errorbar_plot(res, "first_slot_rate", "P(first slot | not tie)", 0.5, title, ax)


def plot_consistency_vs_agreement(
    res: pd.DataFrame,
    *,
    x: str = "consistency",
    y: str = "agreement_on_consistent",
    title: str = "Consistency vs agreement",
    ax=None,
):
    """Scatter of order consistency (x) against agreement with a reference (y), with 2-D CI bars."""
    w = res[res["metric"].isin([x, y])].pivot_table(index="judge", columns="metric",
                                                    values=["estimate", "ci_low", "ci_high"], aggfunc="first")
    with paper_style():
        fig, ax = _axes(ax)
        for j in w.index:
            ex, ey = w.loc[j, ("estimate", x)], w.loc[j, ("estimate", y)]
            xerr = [[ex - w.loc[j, ("ci_low", x)]], [w.loc[j, ("ci_high", x)] - ex]]
            yerr = [[ey - w.loc[j, ("ci_low", y)]], [w.loc[j, ("ci_high", y)] - ey]]
            ax.errorbar([ex], [ey], xerr=np.abs(xerr), yerr=np.abs(yerr), fmt="o", ms=3, capsize=2, lw=0.7,
                        label=str(j))
        ax.legend(frameon=False, fontsize=6, ncol=2, loc="lower left")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel(f"{x.replace('_', ' ')} (95% CI)")
        ax.set_ylabel(f"{y.replace('_', ' ')} (95% CI)")
        ax.set_title(title)
    return fig


def plot_letter_balance(letters: pd.DataFrame, *, by: str = "generator",
                        title: str = "Correct-answer letter per generator", ax=None):
    """Share of each correct letter per ``by`` group (rows) with CI bars, from ``bias.letter_balance``;
    a dashed line at the expected share when it is one value, else a grey tick per point."""
    gens = sorted(letters[by].astype(str).unique())
    lets = sorted(letters["letter"].astype(str).unique())
    expected = letters["expected"].unique()
    with paper_style():
        fig, ax = _axes(ax, "double", aspect=max(0.35, 0.05 * len(gens) + 0.2))
        colors = sns.color_palette(PALETTE, len(lets))
        width = 0.8 / len(lets)
        for k, x in enumerate(lets):
            sub = letters[letters["letter"].astype(str) == x]
            dl = sub.assign(_group=sub[by].astype(str)).set_index("_group").reindex(gens)
            y = np.arange(len(gens)) + (k - (len(lets) - 1) / 2) * width
            ax.errorbar(dl["estimate"].to_numpy(float), y, xerr=_xerr(dl), fmt="o", ms=2.5, capsize=1.5, lw=0.7,
                        color=colors[k], label=x)
            if len(expected) > 1:
                ax.plot(dl["expected"].to_numpy(float), y, "|", color="0.5", ms=4)
        if len(expected) == 1:
            ax.axvline(float(expected[0]), color="0.5", lw=0.8, ls="--")
        ax.set_yticks(np.arange(len(gens)))
        ax.set_yticklabels(gens)
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of questions whose correct answer has this letter (95% CI)")
        ax.legend(title="letter", frameon=False, fontsize=6, ncol=len(lets), loc="lower right")
        ax.set_title(title)
    return fig


def plot_self_preference(res: pd.DataFrame, *, title: str = "Self and family preference", ax=None):
    """Horizontal CI bars of Delta_self / Delta_family per (rater -> target), with the zero line."""
    d = res.dropna(subset=["estimate"]).reset_index(drop=True)
    with paper_style():
        fig, ax = _axes(ax, aspect=max(0.4, 0.12 * len(d) + 0.2))
        labels = [f"{r.judge} -> {r.target} ({'self' if r.metric == 'delta_self' else 'family'})"
                  for r in d.itertuples()]
        y = np.arange(len(d))
        ax.errorbar(d["estimate"], y, xerr=_xerr(d), fmt="o", ms=3, capsize=2)
        ax.axvline(0, color="0.5", lw=0.8, ls="--")
        ax.set_yticks(y)
        ax.set_yticklabels(labels)
        ax.set_xlabel("score difference vs other-lineage peers (95% CI)")
        ax.set_title(title)
    return fig


def plot_rate_by_judge(res: pd.DataFrame, metric: str, *, ref: float | None = 0.5, xlabel: str | None = None,
                       title: str = "", ax=None):
    """Horizontal CI bars of one metric per judge (e.g. ``longer_preferred``, ``flip_rate``)."""
    d = res[res["metric"] == metric].reset_index(drop=True)
    with paper_style():
        fig, ax = _axes(ax, aspect=max(0.35, 0.1 * len(d) + 0.25))
        y = np.arange(len(d))
        ax.errorbar(d["estimate"], y, xerr=_xerr(d), fmt="o", ms=3, capsize=2)
        if ref is not None:
            ax.axvline(ref, color="0.5", lw=0.8, ls="--")
        ax.set_yticks(y)
        ax.set_yticklabels([f"{j} ({c})" if d["criterion"].nunique() > 1 else str(j)
                            for j, c in zip(d["judge"], d["criterion"])])
        ax.set_xlim(0, 1)
        ax.set_xlabel(xlabel or f"{metric.replace('_', ' ')} (95% CI)")
        ax.set_title(title)
    return fig
