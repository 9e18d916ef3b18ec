"""Plots of rankings (:mod:`medeval_kit.rank` tables): strengths with CIs per judge, rank agreement with a
reference and the adjacent-pair flip probabilities, a win-probability matrix, and Elo's order dependence.
Each takes the tidy result table and ``ax=None`` (or ``axes``) and returns the Figure."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import MaxNLocator

from medeval_kit.docstrings import shared_docs
from medeval_kit.viz.figures import PALETTE, figure, fixed, paper_style
from medeval_kit.viz.intervals import draw_estimates, note_no_interval

__all__ = ["RANK_METRIC_LABELS", "plot_ratings", "plot_rank_agreement", "plot_win_probability", "plot_elo_orders"]

RANK_METRIC_LABELS = {
    "kendall_tau": "Kendall's tau-b",
    "spearman_rho": "Spearman's rho",
}
"""Axis words for the agreement metrics (``top_k_overlap`` reads as ``top-k overlap``)."""


def _label(metric: str) -> str:
    if metric.startswith("top_") and metric.endswith("_overlap"):
        return f"top-{metric[4:-8]} overlap"
    return RANK_METRIC_LABELS.get(metric, metric.replace("_", " "))


def _axes(ax, width: str = "single", aspect: float = 0.75):
    return figure(width, aspect=aspect) if ax is None else (ax.figure, ax)


def _judges(d: pd.DataFrame, judges: Sequence[str] | None) -> list[str]:
    return list(judges) if judges is not None else list(dict.fromkeys(d["judge"].astype(str)))


@shared_docs
def plot_ratings(ratings: pd.DataFrame, *, judges: Sequence[str] | None = None, order_by: str | None = None,
                 title: str = "Strengths per judge", ax=None):
    """Strength (mean-zero log-strength) of each model (rows) per judge (colour) with CI bars.

    ``ratings`` is ``RankResult.ratings``; models are ordered by ``order_by``'s strengths (default: the
    first judge), strongest on top.

    Parameters
    ----------
    ratings : DataFrame
        ``RankResult.ratings`` (:func:`~medeval_kit.rank.rank_models`).
    judges : sequence of str, optional
        The judges to draw; default all.
    order_by : str, optional
        The judge whose strengths order the models; default the first.
    {title}
    {ax}

    Returns
    -------
    {figure}
    """
    d = ratings[ratings["metric"] == "strength"].assign(judge=lambda x: x["judge"].astype(str))
    js = _judges(d, judges)
    ref = d[d["judge"] == (order_by or js[0])].set_index("model")["estimate"]
    models = list(ref.sort_values(ascending=True, na_position="first").index)
    models += [m for m in dict.fromkeys(d["model"]) if m not in models]
    with paper_style():
        fig, ax = _axes(ax, aspect=max(0.5, 0.12 * len(models) * max(1, len(js)) ** 0.5))
        colors = sns.color_palette(PALETTE, max(len(js), 1))
        h = 0.8 / max(len(js), 1)
        why = []
        for k, j in enumerate(js):
            dj = d[d["judge"] == j].set_index("model").reindex(models)
            y = np.arange(len(models)) + (k - (len(js) - 1) / 2) * h
            why += draw_estimates(ax, y, dj["estimate"], dj["ci_low"], dj["ci_high"], n=dj["n_items"].to_numpy(float),
                                  horizontal=True, color=colors[k], label=f"{j} (n={int(dj['n_items'].max())})"
                                  if dj["n_items"].notna().any() else j)
        ax.axvline(0, color="0.6", lw=0.6, ls=":")
        ax.set_yticks(np.arange(len(models)), models)
        ax.set_xlabel("strength (log-odds scale, mean 0), 95% CI")
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))  # long model names leave a narrow axis: few, legible ticks
        ax.set_title(title)
        note_no_interval(ax, why)
        ax.legend(frameon=False, fontsize=6, loc="best")
    return fig


@shared_docs
def plot_rank_agreement(agreement: pd.DataFrame, flips: pd.DataFrame | None = None, *,
                        title: str = "Rank agreement with the reference", ax=None):
    """Left: each agreement metric (x) per judge (colour) with CI bars. Right (with ``flips``): P(flip) per
    pair of models adjacent in the reference's ranking (rows) per judge (colour; the reference in grey: how
    often its own adjacent pairs swap across draws).

    ``agreement`` from :func:`~medeval_kit.rank.rank_agreement`, ``flips`` from
    :func:`~medeval_kit.rank.rank_flips` with the same reference. ``ax``: one axis, or two (a sequence) with flips.

    Parameters
    ----------
    agreement : DataFrame
        A :func:`~medeval_kit.rank.rank_agreement` table.
    flips : DataFrame, optional
        A :func:`~medeval_kit.rank.rank_flips` table with the same reference (right panel).
    {title}
    ax : Axes or sequence of Axes, optional
        One axes, or two with ``flips``; a new figure when omitted.

    Returns
    -------
    {figure}
    """
    d = agreement.assign(judge=agreement["judge"].astype(str))
    js = _judges(d, None)
    metrics = list(dict.fromkeys(d["metric"]))
    own = ax is None
    with paper_style():
        if ax is None:
            fig, axs = figure("double", aspect=0.38, ncols=2 if flips is not None else 1)
            axs = np.atleast_1d(axs)
        else:
            axs = np.atleast_1d(ax)
            fig = axs[0].figure
        colors = sns.color_palette(PALETTE, max(len(js), 1))
        w = 0.8 / max(len(js), 1)
        ax = axs[0]
        why = []
        for k, j in enumerate(js):
            dj = d[d["judge"] == j].set_index("metric").reindex(metrics)
            x = np.arange(len(metrics)) + (k - (len(js) - 1) / 2) * w
            why += draw_estimates(ax, x, dj["estimate"], dj["ci_low"], dj["ci_high"], color=colors[k], label=j)
        ax.axhline(0, color="0.6", lw=0.6, ls=":")
        ax.set_xticks(np.arange(len(metrics)), [_label(m) for m in metrics], rotation=20, ha="right")
        ax.set_ylim(-1.05, 1.05)
        ref = str(d["reference"].iloc[0]) if len(d) else ""
        ax.set_ylabel(f"agreement with {ref}, 95% CI")
        ax.set_title(title)
        note_no_interval(ax, why)
        ax.legend(frameon=False, fontsize=6)
        if flips is not None and len(axs) > 1:
            f = flips.assign(judge=flips["judge"].astype(str))
            fjs = list(dict.fromkeys(f["judge"]))
            fjs = [j for j in fjs if j not in js] + [j for j in js if j in fjs]  # the reference first, in grey
            pairs = list(dict.fromkeys(f["higher"] + " >\n" + f["lower"]))
            ax2 = axs[1]
            wf = 0.8 / max(len(fjs), 1)
            for k, j in enumerate(fjs):
                fj = f[f["judge"] == j].assign(pair=lambda x: x["higher"] + " >\n" + x["lower"])
                fj = fj.set_index("pair").reindex(pairs)
                y = np.arange(len(pairs)) + (k - (len(fjs) - 1) / 2) * wf
                c = colors[js.index(j)] if j in js else "0.55"
                ax2.plot(fj["estimate"], y, "o", ms=3, color=c, label=j if j in js else f"{j} (own draws)")
            ax2.axvline(0.5, color="0.6", lw=0.6, ls=":")
            ax2.set_yticks(np.arange(len(pairs)), pairs, fontsize=6)
            ax2.invert_yaxis()
            ax2.set_xlim(-0.02, 1.02)
            ax2.set_xlabel(f"P(pair ordered against the ranking of {ref}) over draws")
            ax2.set_title("Adjacent pairs: flip probability")
            ax2.legend(frameon=False, fontsize=6, loc="lower right")
            if own:
                fig.subplots_adjust(wspace=0.55)
    return fig


@shared_docs
def plot_win_probability(win_probability: pd.DataFrame, judge: str, *, value: str = "estimate",
                         title: str | None = None, ax=None):
    """Heatmap of P(row model beats column model) for one judge (``RankResult.win_probability``).

    Parameters
    ----------
    win_probability : DataFrame
        ``RankResult.win_probability``.
    judge : str
        The judge (rater) whose probabilities to draw.
    value : str, default "estimate"
        The column to colour by.
    {title}
    {ax}

    Returns
    -------
    {figure}
    """
    d = win_probability[win_probability["judge"].astype(str) == str(judge)]
    models = list(dict.fromkeys(list(d["model"]) + list(d["opponent"])))
    M = d.pivot(index="model", columns="opponent", values=value).reindex(index=models, columns=models)
    with paper_style():
        fig, ax = _axes(ax, aspect=0.85)
        labels = M.map(lambda v: "" if pd.isna(v) else fixed(v, 2))
        sns.heatmap(M, ax=ax, vmin=0, vmax=1, cmap="vlag", center=0.5, annot=labels, fmt="", cbar=False,
                    annot_kws={"fontsize": 6}, square=True)
        ax.set_xlabel("opponent")
        ax.set_ylabel("model")
        ax.set_title(title or f"{judge}: P(row beats column)")
    return fig


@shared_docs
def plot_elo_orders(elo: pd.DataFrame, judge: str, *, title: str | None = None, ax=None):
    """Elo rating of each model (rows) under every order of the same games (dots; the table's order as a cross).

    Parameters
    ----------
    elo : DataFrame
        Elo ratings per model under every order of the games (:mod:`medeval_kit.rank.elo`).
    judge : str
        The judge (rater) to draw.
    {title}
    {ax}

    Returns
    -------
    {figure}
    """
    d = elo[elo["judge"].astype(str) == str(judge)]
    first = d[d["order"] == 0].sort_values("rating")
    models = list(first["model"])
    with paper_style():
        fig, ax = _axes(ax)
        y = d["model"].map({m: i for i, m in enumerate(models)}).to_numpy(float)
        jitter = (d["order"].to_numpy(float) % 7 - 3) * 0.04
        ax.plot(d["rating"], y + jitter, "o", ms=2.5, alpha=0.5, color="0.4", label="shuffled orders")
        ax.plot(first["rating"], np.arange(len(models)), "x", ms=5, color="C3", label="table order")
        ax.set_yticks(np.arange(len(models)), models)
        n = int(d["order"].nunique())
        ax.set_xlabel(f"Elo rating ({n} orders of the same {int(d['n_games'].iloc[0])} games)" if len(d) else "Elo")
        ax.set_title(title or f"{judge}: Elo depends on the order of the games")
        ax.legend(frameon=False, fontsize=6)
    return fig
