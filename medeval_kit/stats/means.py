"""Confidence intervals for a mean."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from .proportions import wilson_interval

__all__ = ["mean_interval", "normal_interval"]


def normal_interval(estimate: float, se: float, *, confidence: float = 0.95,
                    bounds: tuple[float, float] | None = None) -> tuple[float, float]:
    """Return the normal (Wald) interval estimate +- z * se, clipped to ``bounds`` when given.

    Parameters
    ----------
    estimate : float
        The point estimate.
    se : float
        Its standard error.
    confidence : float, default 0.95
        Coverage of the interval.
    bounds : tuple of float, optional
        ``(low, high)`` the interval is clipped to (e.g. ``(-1, 1)`` for kappa).

    Returns
    -------
    tuple of float
        ``(ci_low, ci_high)``; NaNs when the estimate or SE is not finite.

    Examples
    --------
    >>> [round(x, 3) for x in normal_interval(0.5, 0.1)]
    [0.304, 0.696]
    """
    if not (np.isfinite(estimate) and np.isfinite(se)):
        return math.nan, math.nan
    h = sps.norm.ppf(0.5 + confidence / 2) * se
    lo, hi = estimate - h, estimate + h
    return (max(bounds[0], lo), min(bounds[1], hi)) if bounds else (float(lo), float(hi))


def mean_interval(x, *, confidence: float = 0.95, method: str = "auto") -> tuple[float, float, str, str]:
    """Return (ci_low, ci_high, ci_method, note) for the mean of x (NaN-free values).

    Parameters
    ----------
    x : array_like
        The values (no NaN).
    confidence : float, default 0.95
        Coverage of the interval.
    method : {"auto", "t", "wilson"}, default "auto"
        Student t, Wilson (0/1 values only), or Wilson for 0/1 values and t otherwise.

    Returns
    -------
    tuple
        ``(ci_low, ci_high, ci_method, note)``; NaN bounds and a note when no interval can be made
        (fewer than two values for t, values not 0/1 for Wilson).

    Examples
    --------
    >>> mean_interval([1, 0, 1, 1])[2]
    'Wilson'
    """
    x = np.asarray(x, dtype=float)
    n = len(x)
    binary = n > 0 and bool(np.all(np.isin(x, (0.0, 1.0))))
    if method == "auto":
        method = "wilson" if binary else "t"
    if method == "wilson":
        if not binary:
            return math.nan, math.nan, "Wilson", "values are not 0/1"
        lo, hi = wilson_interval(float(x.sum()), n, confidence=confidence)
        return lo, hi, "Wilson", ""
    if n < 2:
        return math.nan, math.nan, "t", "fewer than 2 values"
    se = x.std(ddof=1) / math.sqrt(n)
    if se == 0:
        return float(x.mean()), float(x.mean()), "t", "zero variance"
    h = sps.t.ppf(0.5 + confidence / 2, n - 1) * se
    return float(x.mean() - h), float(x.mean() + h), "t", ""
