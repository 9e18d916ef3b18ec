"""Plots of judge results (:mod:`medeval_kit.judge` tables): verdict counts by presentation order,
shown position or criterion (``judge.verdict_counts``). Each takes the tidy table and ``ax=None`` and
returns the Figure."""

from __future__ import annotations

import pandas as pd

from medeval_kit.docstrings import shared_docs
from medeval_kit.viz.figures import figure, paper_style

__all__ = ["plot_verdicts"]

_BY_WORDS = {"order": "presentation order", "position": "shown position", "criterion": "criterion"}


@shared_docs
def plot_verdicts(counts: pd.DataFrame, *, title: str | None = None, ax=None):
    """Bar chart of verdict counts per group (parse failures are their own bars); returns the figure.

    ``counts`` is :func:`medeval_kit.judge.verdict_counts` (columns ``protocol, by, group, label, n,
    unit``): pairwise presented-slot verdicts per order (a position-biased judge piles up on
    ``first``), k-slot verdicts by shown position, other protocols by criterion.

    Parameters
    ----------
    counts : DataFrame
        A :func:`medeval_kit.judge.verdict_counts` table.
    {title}
    {ax}

    Returns
    -------
    {figure}
    """
    by, proto, unit = (str(counts[c].iloc[0]) for c in ("by", "protocol", "unit"))
    wide = counts.set_index(["group", "label"])["n"].unstack(fill_value=0).rename_axis(by)
    with paper_style():
        fig, ax = figure("single", aspect=0.7) if ax is None else (ax.figure, ax)
        wide.plot.bar(ax=ax, width=0.8)  # bars left to right in the legend's order
        ax.set_xlabel(_BY_WORDS.get(by, by.replace("_", " ")))
        ax.set_ylabel(f"number of {unit}")
        ax.set_title(title or f"{proto}: verdicts by {by} (n={int(counts['n'].sum())})")
        ax.legend(title=None, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax.tick_params(axis="x", rotation=0 if by != "criterion" else 45)
    return fig
