"""The item bootstrap, vectorised: one engine for every resampled statistic in the package.

Items are drawn with replacement ``n_boot`` times; a statistic that is a function of per-item
sums is evaluated for all replicates at once as ``counts @ features``. Intervals are percentile or
BCa (with a jackknife acceleration).

No interval is made from fewer than :data:`MIN_CI_ITEMS` items (:func:`ci_not_computed` says so in a
note): with n items the bootstrap has at most C(2n - 1, n) distinct resamples (92 at n = 5, 48,620 at
n = 10), its quantiles are a handful of values, and percentile intervals cover far below their level
(a single item gives the degenerate interval [est, est]). Ten items is the floor where the agreement
coefficients' bootstrap starts to be a distribution; the large-sample analytic SEs of kappa need at
least as many.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
from scipy import stats as sps

__all__ = ["MIN_CI_ITEMS", "ci_not_computed", "item_draws", "resample_counts", "bootstrap_means",
           "percentile_interval", "interval"]

MIN_CI_ITEMS = 10
"""The fewest items an agreement CI is computed from (see the module docstring)."""


def ci_not_computed(n_items: int, *, min_items: int = MIN_CI_ITEMS) -> str:
    """Return why no CI is computed from ``n_items`` items ("" when there are enough).

    Parameters
    ----------
    n_items : int
        The items the statistic rests on (those that carry its labels).
    min_items : int, default MIN_CI_ITEMS
        The floor.

    Returns
    -------
    str
        ``"CI not computed: n_items = 1 < 10"`` below the floor, else ``""``.

    Examples
    --------
    >>> ci_not_computed(1)
    'CI not computed: n_items = 1 < 10'
    >>> ci_not_computed(10)
    ''
    """
    n = int(n_items)
    return f"CI not computed: n_items = {n} < {min_items}" if n < min_items else ""


def item_draws(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Return an (n_boot, n) array of item indices drawn with replacement.

    Parameters
    ----------
    n : int
        Items.
    n_boot : int
        Replicates.
    rng : numpy.random.Generator
        The random stream (seeded by the caller).

    Returns
    -------
    ndarray of int, shape (n_boot, n)
        Row ``b`` holds the items of replicate ``b``.

    Examples
    --------
    >>> item_draws(4, 2, np.random.default_rng(0)).shape
    (2, 4)
    """
    return rng.integers(0, n, size=(int(n_boot), n))


def resample_counts(n: int, n_boot: int, rng: np.random.Generator, chunk: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield (counts, draws) in chunks: counts[b, i] is how often item i is drawn in replicate b.

    Parameters
    ----------
    n : int
        Items.
    n_boot : int
        Replicates in all.
    rng : numpy.random.Generator
        The random stream; the chunks continue it, so the draws do not depend on ``chunk``.
    chunk : int
        Replicates per chunk (bounds the memory of the ``(chunk, n)`` arrays).

    Yields
    ------
    counts : ndarray of float, shape (b, n)
        How often each item is drawn in each replicate of the chunk.
    draws : ndarray of int, shape (b, n)
        The drawn items (:func:`item_draws`).

    Examples
    --------
    >>> [c.sum(1).tolist() for c, _ in resample_counts(3, 3, np.random.default_rng(0), chunk=2)]
    [[3.0, 3.0], [3.0]]
    """
    done = 0
    while done < n_boot:
        b = min(chunk, n_boot - done)
        idx = item_draws(n, b, rng)
        W = np.bincount((idx + (np.arange(b) * n)[:, None]).ravel(), minlength=b * n).reshape(b, n)
        yield W.astype(np.float64), idx
        done += b


def bootstrap_means(values, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Return n_boot bootstrap replicates of the mean of ``values`` (rows of a 2-D array: per column).

    Parameters
    ----------
    values : array_like
        One value per item, or a 2-D array with one row per item.
    n_boot : int
        Replicates.
    rng : numpy.random.Generator
        The random stream.

    Returns
    -------
    ndarray
        Shape ``(n_boot,)`` (or ``(n_boot, columns)``); empty when there are no values or ``n_boot <= 0``.

    Examples
    --------
    >>> bootstrap_means([1.0, 1.0, 1.0], 4, np.random.default_rng(0)).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    v = np.asarray(values, dtype=float)
    if len(v) == 0 or n_boot <= 0:
        return np.full((0,) + v.shape[1:], np.nan)
    return v[item_draws(len(v), n_boot, rng)].mean(axis=1)


def percentile_interval(reps, *, confidence: float = 0.95) -> tuple[float, float]:
    """Return the percentile interval of the finite replicates; (nan, nan) when there are none.

    Parameters
    ----------
    reps : array_like
        Bootstrap replicates (non-finite ones are ignored).
    confidence : float, default 0.95
        Coverage of the interval.

    Returns
    -------
    tuple of float
        ``(ci_low, ci_high)``: the bounds, not a result (the callers put them in result rows).

    Examples
    --------
    >>> [round(x, 6) for x in percentile_interval(np.arange(101), confidence=0.9)]
    [5.0, 95.0]
    """
    r = np.asarray(reps, dtype=float)
    r = r[np.isfinite(r)]
    if r.size == 0:
        return math.nan, math.nan
    a = (1 - confidence) / 2
    lo, hi = np.quantile(r, [a, 1 - a])  # both in one call: each the same number as on its own
    return float(lo), float(hi)


def interval(est: float, reps: np.ndarray, confidence: float, method: str, jack: np.ndarray | None = None):
    """Return (lo, hi, n_valid): the percentile or BCa interval from bootstrap replicates.

    Parameters
    ----------
    est : float
        The point estimate (BCa's bias correction is the share of replicates below it).
    reps : ndarray
        Bootstrap replicates; non-finite ones are dropped and counted out of ``n_valid``.
    confidence : float
        Coverage of the interval.
    method : {"percentile", "bca"}
        Percentile, or bias-corrected and accelerated.
    jack : ndarray, optional
        Leave-one-item-out estimates: BCa's acceleration (0 without them).

    Returns
    -------
    tuple
        ``(ci_low, ci_high, n_valid)``; NaN bounds with fewer than two finite replicates or a NaN estimate.

    Examples
    --------
    >>> lo, hi, n_valid = interval(50.0, np.arange(101.0), 0.9, "percentile")
    >>> round(lo, 6), round(hi, 6), n_valid
    (5.0, 95.0, 101)
    """
    reps = reps[np.isfinite(reps)]
    if len(reps) < 2 or not np.isfinite(est):
        return np.nan, np.nan, len(reps)
    a_lo, a_hi = (1 - confidence) / 2, 1 - (1 - confidence) / 2
    if method == "bca":
        prop = (np.sum(reps < est) + 0.5 * np.sum(reps == est)) / len(reps)
        z0 = sps.norm.ppf(np.clip(prop, 1e-10, 1 - 1e-10))
        acc = 0.0
        if jack is not None:
            j = jack[np.isfinite(jack)]
            if len(j) > 2:
                d = j.mean() - j
                den = 6 * (np.sum(d**2) ** 1.5)
                acc = float(np.sum(d**3) / den) if den > 0 else 0.0
        zs = sps.norm.ppf([a_lo, a_hi])
        adj = sps.norm.cdf(z0 + (z0 + zs) / (1 - acc * (z0 + zs)))
        a_lo, a_hi = float(adj[0]), float(adj[1])
    lo, hi = np.quantile(reps, [a_lo, a_hi])
    return float(lo), float(hi), len(reps)
