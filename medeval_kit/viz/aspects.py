"""Plots of rubric-aspect selection (:mod:`medeval_kit.judge.aspect_search` tables): in-sample against
cross-validated objective per replicate and scenario, and the best subset of each size. Each takes the
tidy table and ``ax=None`` and returns the Figure; nothing is computed here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import seaborn as sns

from medeval_kit.docstrings import shared_docs
from medeval_kit.viz.figures import PALETTE, figure, paper_style
from medeval_kit.viz.intervals import draw_estimates, note_no_interval

__all__ = ["QUANTITY_LABELS", "plot_search_optimism", "plot_best_by_size"]

QUANTITY_LABELS = {
    "all_aspects": "all aspects",
    "in_sample": "searched:\nin-sample",
    "cross_validated": "searched:\nK-fold CV",
    "cv_mean_fold": "searched:\nmean fold",
    "new_items": "searched:\nnew items",
    "planted_new_items": "planted only:\nnew items",
    "optimism": "optimism",
}
"""Axis words for the quantities of :func:`~medeval_kit.judge.aspect_search.search_optimism`."""
_OBJ = {"kappa": "Cohen's kappa (A/B/tie)", "agreement": "percent agreement"}


@shared_docs
def plot_search_optimism(
    replicates: pd.DataFrame,
    summary: pd.DataFrame | None = None,
    *,
    quantities: Sequence[str] = ("all_aspects", "in_sample", "cross_validated", "new_items"),
    objectives: Sequence[str] = ("kappa", "agreement"),
    reference: Mapping[str, float] | None = None,
    title: str | None = None,
    ax=None,
):
    """Per objective (panel), quantity (x) and scenario (colour): one small point per replicate and the
    mean with its CI from ``summary`` (:func:`~medeval_kit.judge.aspect_search.optimism_summary`).

    ``reference``: label -> value, drawn as dotted lines on the kappa panel (e.g. a paper's numbers).

    Parameters
    ----------
    replicates : DataFrame
        One row per replicate and scenario with each quantity's value.
    summary : DataFrame, optional
        :func:`~medeval_kit.judge.aspect_search.optimism_summary` of them (means and CIs).
    quantities : sequence of str
        The quantities on the x axis.
    objectives : sequence of str
        One panel each.
    reference : mapping of str to float, optional
        Labelled values drawn as dotted lines on the kappa panel (e.g. a paper's numbers).
    {title}
    {ax}

    Returns
    -------
    {figure}
    """
    objectives = [o for o in objectives if o in set(replicates["objective"])]
    scen = list(dict.fromkeys(replicates["scenario"].astype(str)))
    colors = dict(zip(scen, sns.color_palette(PALETTE, max(len(scen), 1))))
    with paper_style():
        if ax is None:
            fig, axes = figure("double", aspect=0.38, ncols=len(objectives), squeeze=False)
            axes = list(axes[0])
        else:
            fig, axes = ax.figure, [ax]
            objectives = objectives[:1]
        rng = np.random.default_rng(0)  # fixed jitter: byte-stable figures
        for a, obj in zip(axes, objectives):
            width = 0.7 / max(len(scen), 1)
            why = []
            for s_i, s in enumerate(scen):
                off = (s_i - (len(scen) - 1) / 2) * width
                d = replicates[(replicates["scenario"].astype(str) == s) & (replicates["objective"] == obj)]
                for q_i, q in enumerate(quantities):
                    v = d.loc[d["quantity"] == q, "estimate"].to_numpy(float)
                    v = v[np.isfinite(v)]
                    a.scatter(q_i + off + rng.uniform(-width / 4, width / 4, len(v)), v, s=5, alpha=0.45,
                              color=colors[s], linewidths=0)
                if summary is not None:
                    m = summary[(summary["scenario"].astype(str) == s) & (summary["objective"] == obj)]
                    m = m.set_index("quantity").reindex(list(quantities))
                    why += draw_estimates(a, np.arange(len(quantities)) + off + width / 3, m["estimate"], m["ci_low"],
                                          m["ci_high"], n=m["n_items"], color=colors[s], marker="D", ms=3.5,
                                          label=s)
                else:
                    a.scatter([], [], color=colors[s], label=s)
            if reference and obj == "kappa":
                for (label, val), ls in zip(reference.items(), (":", "--", "-.")):
                    a.axhline(val, color="0.45", lw=0.7, ls=ls, label=label)
            a.axhline(0, color="0.8", lw=0.6)
            a.set_xticks(np.arange(len(quantities)))
            a.set_xticklabels([QUANTITY_LABELS.get(q, q) for q in quantities], fontsize=6.5)
            a.set_xlim(-0.6, len(quantities) - 0.4)
            a.set_ylabel(_OBJ.get(obj, obj))
            note_no_interval(a, why)
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, frameon=False, fontsize=6.5, loc="lower center", bbox_to_anchor=(0.5, 0.98),
                   ncol=len(labels))
        if title:  # above the legend; a title of several lines starts higher
            fig.suptitle(title, fontsize=9, y=1.12 + 0.06 * title.count("\n"))
    return fig


@shared_docs
def plot_best_by_size(
    path: pd.DataFrame,
    *,
    objectives: Sequence[str] = ("kappa", "agreement"),
    by: str | None = None,
    title: str | None = None,
    ax=None,
):
    """Best in-sample value of each subset size k (MCQG-SRefine Tables 25/26), one panel per objective.

    ``path``: rows ``k`` with the objective's column (``kappa``, ``agreement``); with an ``objective``
    column (the objective the search maximised, as the paths of ``select_aspects_all`` concatenated)
    each panel shows the rows searched for it. ``by``: one line per group (e.g. dataset).

    Parameters
    ----------
    path : DataFrame
        Rows ``k`` with the objectives' columns, optionally with an ``objective`` column (the paths of
        ``select_aspects_all`` concatenated).
    objectives : sequence of str
        One panel each.
    by : str, optional
        One line per group (e.g. ``dataset``).
    {title}
    {ax}

    Returns
    -------
    {figure}
    """
    objectives = [o for o in objectives if o in path.columns]
    with paper_style():
        if ax is None:
            fig, axes = figure("double" if len(objectives) > 1 else "single", aspect=0.36 if len(objectives) > 1
                               else 0.7, ncols=len(objectives), squeeze=False)
            axes = list(axes[0])
        else:
            fig, axes = ax.figure, [ax]
            objectives = objectives[:1]
        for a, obj in zip(axes, objectives):
            d = path[path["objective"] == obj] if "objective" in path.columns else path
            groups = [(None, d)] if by is None else list(d.groupby(by, sort=False))
            colors = sns.color_palette(PALETTE, max(len(groups), 1))
            for (name, g), c in zip(groups, colors):
                g = g.sort_values("k")
                a.plot(g["k"], g[obj], marker="o", ms=3, lw=1, color=c, label=None if name is None else str(name))
            values = d[obj].to_numpy(float)
            values = values[np.isfinite(values)]
            if len(values) and np.ptp(values) < 1e-12:  # one value at every k: no zoom into a flat line
                a.set_ylim(values[0] - 0.05, values[0] + 0.05)
                a.annotate("the same at every k", (0.5, 0.62), xycoords="axes fraction", ha="center", fontsize=6,
                           color="0.3")
            a.set_xlabel("subset size k (best subset of that size)")
            a.set_ylabel(f"in-sample {_OBJ.get(obj, obj)}")
            if by is not None and len(groups) > 1:
                a.legend(frameon=False, fontsize=6)
        if title:
            fig.suptitle(title, fontsize=9)
    return fig
