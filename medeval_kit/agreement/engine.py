"""Statistics as per-item features, and their item bootstrap (the engine under every coefficient).

Every coefficient is a smooth function of *sums over items* of per-item features (contingency
cells, count vectors, coincidence matrices, ANOVA sums). A :class:`Stat` is therefore a pair
``(F, fn)``: ``F`` is an ``(n_items, p)`` feature matrix and ``fn`` maps summed features ``S``
(shape ``(m, p)``) to ``m`` values. Then

* the point estimate is ``fn(F.sum(0))``;
* bootstrap replicates that resample items are ``fn(W @ F)``, with ``W`` the ``(B, n)`` matrix of
  how often each item was drawn (:func:`medeval_kit.stats.resample_counts`; one matrix product,
  no Python loop over resamples);
* jackknife (leave-one-item-out) replicates for BCa are ``fn(F.sum(0) - F)``.

Several statistics built on the same item axis share ``W``, which gives paired bootstraps for
differences (judge minus humans) for free. Rank correlations are not functions of item sums: their
replicates loop over the same draws.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

from medeval_kit.stats import resample_counts

__all__ = ["Stat", "safe_div", "replicates", "point", "jackknife", "mean_stat", "pooled_stat"]

Analytic = Callable[[np.ndarray, float, float], tuple[float, float, str]]
"""(summed features (1, p), estimate, confidence) -> (ci_low, ci_high, ci_method)."""

_CHUNK_CELLS = 4e6  # resample rows x items per chunk: bounds the memory of W


@dataclass
class Stat:
    """A statistic as per-item features plus a vectorised function of their sums."""

    F: np.ndarray
    fn: Callable[[np.ndarray], np.ndarray] | None
    n_items: int
    note: str = ""
    analytic: Analytic | None = field(default=None, repr=False)
    rank: str | None = None  # "spearman"/"kendall": F holds (ok, x, y) and fn is None

    def value(self) -> float:
        """The point estimate on all items."""
        return point(self)


def safe_div(a, b):
    """a / b with NaN where |b| < 1e-12."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.true_divide(a, b)
    return np.where(np.abs(b) < 1e-12, np.nan, out)


def _rank_value(kind: str, x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        return np.nan
    return sps.spearmanr(x, y)[0] if kind == "spearman" else sps.kendalltau(x, y)[0]


def _rank_rows(st: Stat, rows: np.ndarray) -> float:
    sel = st.F[rows]
    sel = sel[sel[:, 0] > 0]
    return _rank_value(st.rank, sel[:, 1], sel[:, 2])


def point(st: Stat) -> float:
    """The point estimate of ``st`` on all items."""
    if st.rank:
        return float(_rank_rows(st, np.arange(len(st.F))))
    return float(st.fn(st.F.sum(0, keepdims=True))[0])


def replicates(stats: Sequence[Stat], n_boot: int, seed, chunk: int | None = None) -> np.ndarray:
    """Bootstrap replicates (n_boot, len(stats)), all stats resampled with the same item draws."""
    n = stats[0].F.shape[0]
    rng = np.random.default_rng(seed)
    chunk = chunk or max(1, min(n_boot, int(_CHUNK_CELLS // max(n, 1))))
    out = np.empty((n_boot, len(stats)))
    pos = 0
    for W, idx in resample_counts(n, n_boot, rng, chunk):
        for j, st in enumerate(stats):
            if st.rank:
                out[pos : pos + len(W), j] = [_rank_rows(st, row) for row in idx]
            else:
                out[pos : pos + len(W), j] = st.fn(W @ st.F)
        pos += len(W)
    return out


def jackknife(st: Stat) -> np.ndarray:
    """Leave-one-item-out values (only items that carry data)."""
    keep = np.flatnonzero(np.abs(st.F).sum(1) > 0)
    if st.rank:
        sel = st.F[keep]
        return np.array([_rank_value(st.rank, np.delete(sel[:, 1], i), np.delete(sel[:, 2], i))
                         for i in range(len(sel))])
    tot = st.F.sum(0, keepdims=True)
    out = np.empty(len(keep))
    for s in range(0, len(keep), 2048):
        out[s : s + 2048] = st.fn(tot - st.F[keep[s : s + 2048]])
    return out


def mean_stat(stats: Sequence[Stat], n_items: int, *, skip_undefined: bool = False) -> Stat:
    """Mean of several statistics over one item axis; ``skip_undefined`` averages the defined ones."""
    F = np.hstack([s.F for s in stats])
    cuts = np.cumsum([0] + [s.F.shape[1] for s in stats])

    def fn(S):
        vals = np.array([s.fn(S[:, a:b]) for s, a, b in zip(stats, cuts[:-1], cuts[1:])])
        if skip_undefined:
            with np.errstate(all="ignore"):
                cnt = np.isfinite(vals).sum(0)
                return np.where(cnt > 0, np.nansum(vals, 0) / np.maximum(cnt, 1), np.nan)
        return vals.mean(0)

    return Stat(F, fn, n_items)


def pooled_stat(stats: Sequence[Stat], n_items: int) -> Stat:
    """One statistic on the summed per-item features of several same-shaped statistics."""
    return Stat(np.sum([s.F for s in stats], axis=0), stats[0].fn, n_items)
