"""Plots of overview results (:mod:`medeval_kit.overview` tables): label shares per group and mean
judge scores per group and criterion. Each takes the table and ``ax=None`` and returns the Figure."""

from __future__ import annotations

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from medeval_kit.docstrings import shared_docs
from medeval_kit.viz.figures import DOUBLE_COLUMN, figure, paper_style

__all__ = ["plot_label_distribution", "plot_score_distribution"]


def _row_major(handles: list, labels: list, ncol: int) -> tuple[list, list]:
    """Legend entries reordered so that matplotlib's column-by-column fill reads row by row, left to right,
    in the order the bars are stacked."""
    rows = -(-len(labels) // max(ncol, 1))
    order = [r * ncol + c for c in range(ncol) for r in range(rows) if r * ncol + c < len(labels)]
    return [handles[i] for i in order], [labels[i] for i in order]


@shared_docs
def plot_label_distribution(dist: pd.DataFrame, *, by: str = "rater", title: str = "", ax=None,
                            group: str | None = None):
    """Horizontal stacked bars of label shares per group (``overview.label_distribution``), n in each label.

    Parameters
    ----------
    dist : DataFrame
        An :func:`~medeval_kit.overview.label_distribution` table (``label``, ``share``, ``n_group`` and
        the grouping column).
    by : str, default "rater"
        The grouping column (one bar per group).
    {title}
    {ax}
    group : str, optional
        Deprecated name of ``by``.

    Returns
    -------
    {figure}
    """
    if group is not None:
        warnings.warn("plot_label_distribution(group=...) is deprecated; use by=", DeprecationWarning, stacklevel=2)
        by = group
    group, label = by, "label"
    with paper_style():
        wide = dist.pivot_table(index=group, columns=label, values="share", fill_value=0.0, sort=False)
        n = dist.groupby(group, sort=False)["n_group"].first()
        fig, ax = figure("single", aspect=0.2 + 0.12 * len(wide)) if ax is None else (ax.figure, ax)
        left = np.zeros(len(wide))
        for col in wide.columns:
            ax.barh([f"{g} (n={n[g]})" for g in wide.index], wide[col], left=left, label=str(col))
            left += wide[col].to_numpy()
        ax.set_xlim(0, 1)
        ax.set_ylim(len(wide) - 0.5, -0.5)  # first group on top
        ax.set_xlabel("share of labels")
        ncol = min(5, len(wide.columns))
        handles, labels = _row_major(*ax.get_legend_handles_labels(), ncol)
        ax.legend(handles, labels, ncols=ncol, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
        if title:
            ax.set_title(title, pad=18)
    return fig


@shared_docs
def plot_score_distribution(means: pd.DataFrame, *, by: str = "generator", ax=None):
    """Mean judge score (CI bars) per ``by`` group, one panel per criterion (``overview.score_means``).

    Groups are ordered by their mean estimate over criteria. ``ax``: one axes per criterion (any
    array-like), else a new two-column grid.

    Parameters
    ----------
    means : DataFrame
        An :func:`~medeval_kit.overview.score_means` table (``criterion``, the contract columns and the
        grouping column).
    by : str, default "generator"
        The grouping column.
    {ax}

    Returns
    -------
    {figure}
    """
    criterion = "criterion"
    crits = sorted(means[criterion].astype(str).unique())
    order = means.groupby(by)["estimate"].mean().sort_values().index
    with paper_style():
        if ax is None:
            rows = int(np.ceil(len(crits) / 2))
            fig, axes = plt.subplots(rows, 2, figsize=(DOUBLE_COLUMN, DOUBLE_COLUMN / 3 * rows), sharex=True,
                                     sharey=True, squeeze=False)
            for extra in axes.ravel()[len(crits):]:
                extra.set_visible(False)
        else:
            axes = np.asarray(ax, dtype=object)
            fig = axes.ravel()[0].figure
        for a, c in zip(axes.ravel(), crits):
            d = means[means[criterion].astype(str) == c].set_index(by).reindex(order)
            est = d["estimate"].to_numpy(float)
            err = np.abs(np.vstack([est - d["ci_low"].to_numpy(float), d["ci_high"].to_numpy(float) - est]))
            a.errorbar(est, np.arange(len(order)), xerr=err, fmt="o", ms=3, lw=1)
            a.set_yticks(np.arange(len(order)))
            a.set_yticklabels([str(g) for g in order])
            a.set_ylim(len(order) - 0.5, -0.5)  # first group on top, as a categorical axis reads
            a.set_title(c)
            a.set_xlabel("judge score (1-10)")
            if ax is None:
                a.label_outer()  # x labels on the bottom row, y labels on the left column
        fig.tight_layout()
    return fig
