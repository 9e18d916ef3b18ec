"""Figures for :mod:`medeval_kit.agreement`: rater x rater heatmap, forest plot, ensemble size vs kappa."""

from __future__ import annotations

import numpy as np
import pandas as pd

from medeval_kit import plots


def plot_kappa_heatmap(pairs: pd.DataFrame, *, order=None, title: str | None = None, width="single"):
    """Heatmap of a :func:`~medeval_kit.agreement.pairwise_matrix` table; cells show estimate and CI."""
    raters = order or list(dict.fromkeys(list(pairs["rater_a"]) + list(pairs["rater_b"])))
    R = len(raters)
    M = np.full((R, R), np.nan)
    txt = [["" for _ in range(R)] for _ in range(R)]
    for _, r in pairs.iterrows():
        i, j = raters.index(r["rater_a"]), raters.index(r["rater_b"])
        M[i, j] = M[j, i] = r["estimate"]
        s = "NaN" if pd.isna(r["estimate"]) else f"{r['estimate']:.2f}"
        if pd.notna(r.get("ci_low", np.nan)):
            s += f"\n[{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
        txt[i][j] = txt[j][i] = s
    with plots.paper_style():
        fig, ax = plots.figure(width, aspect=0.85)
        im = ax.imshow(M, vmin=min(0.0, np.nanmin(M) if np.isfinite(M).any() else 0.0), vmax=1.0, cmap="viridis")
        for i in range(R):
            for j in range(R):
                if txt[i][j]:
                    v = M[i, j]
                    ax.text(j, i, txt[i][j], ha="center", va="center", fontsize=5,
                            color="black" if np.isfinite(v) and v > 0.6 else "white")
        ax.set_xticks(range(R), raters, rotation=45, ha="right")
        ax.set_yticks(range(R), raters)
        metric = pairs["metric"].iloc[0] if len(pairs) else "estimate"
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label=metric)
        ax.set_title(title or f"{metric} per rater pair (95% CI)")
        for s in ax.spines.values():
            s.set_visible(False)
    return fig


def plot_forest(table: pd.DataFrame, *, title: str | None = None, width="single"):
    """Forest plot of :func:`~medeval_kit.agreement.judge_vs_ceiling`: judges with CIs, ceiling as a band."""
    judges = table[table["role"] == "judge"].reset_index(drop=True)
    ceil = table[table["role"] == "ceiling"]
    with plots.paper_style():
        fig, ax = plots.figure(width, aspect=0.25 + 0.12 * max(len(judges), 1))
        if len(ceil):
            c = ceil.iloc[0]
            ax.axvspan(c["ci_low"], c["ci_high"], color="0.85", zorder=0, label="human ceiling 95% CI")
            ax.axvline(c["estimate"], color="0.4", ls="--", lw=0.8, label=f"ceiling {c['estimate']:.3f}")
        y = np.arange(len(judges))[::-1]
        ax.errorbar(judges["estimate"], y,
                    xerr=[judges["estimate"] - judges["ci_low"], judges["ci_high"] - judges["estimate"]],
                    fmt="o", ms=3, capsize=2, color="C0", label="judge vs consensus")
        ax.set_yticks(y, judges["rater"])
        ax.set_xlabel(judges["metric"].iloc[0] if len(judges) else "estimate")
        ax.axvline(0, color="0.7", lw=0.5)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.3 / max(len(judges), 1)), ncol=3,
                  frameon=False)
        ax.set_title(title or "Judges against the human ceiling")
    return fig


def plot_ensembles(table: pd.DataFrame, metric: str = "cohen_kappa", *, title: str | None = None, width="single"):
    """Ensemble size against ``metric``: every ensemble as a dot, the best per size as a line."""
    with plots.paper_style():
        fig, ax = plots.figure(width)
        rng = np.random.default_rng(0)
        x = table["size"] + rng.uniform(-0.12, 0.12, len(table))
        ax.scatter(x, table[metric], s=6, alpha=0.6, color="C0", label="ensemble")
        best = table.groupby("size")[metric].max()
        ax.plot(best.index, best.values, "-o", ms=3, color="C1", label="best per size")
        ax.set_xticks(sorted(table["size"].unique()))
        ax.set_xlabel("ensemble size (majority vote)")
        ax.set_ylabel(metric)
        ax.legend(frameon=False)
        ax.set_title(title or f"{len(table)} ensembles")
    return fig
