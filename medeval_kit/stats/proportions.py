"""Confidence intervals for a proportion k/n."""

from __future__ import annotations

import math

from scipy import stats as sps

__all__ = ["proportion_ci", "wilson_interval"]


def proportion_ci(k: int, n: int, *, confidence: float = 0.95, method: str = "exact") -> tuple[float, float]:
    """Return the Clopper-Pearson (``exact``) or Wilson CI for k/n; (nan, nan) when n == 0.

    Parameters
    ----------
    k : int
        Successes.
    n : int
        Trials.
    confidence : float, default 0.95
        Coverage of the interval.
    method : {"exact", "wilson", "wilsoncc"}, default "exact"
        scipy's ``binomtest(...).proportion_ci`` method.

    Returns
    -------
    tuple of float
        ``(ci_low, ci_high)``.

    Examples
    --------
    >>> [round(x, 4) for x in proportion_ci(5, 10)]
    [0.1871, 0.8129]
    """
    if n <= 0:
        return math.nan, math.nan
    ci = sps.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method=method)
    return float(ci.low), float(ci.high)


def wilson_interval(k: float, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Return the Wilson score interval for k/n, where k may be fractional (ties counted as halves).

    scipy's binomtest needs an integer k, hence the formula here; it equals statsmodels'
    ``proportion_confint(method="wilson")``. The interval is clamped to contain k/n.

    Parameters
    ----------
    k : float
        Successes (may be fractional).
    n : int
        Trials.
    confidence : float, default 0.95
        Coverage of the interval.

    Returns
    -------
    tuple of float
        ``(ci_low, ci_high)``; NaNs when ``n <= 0``.

    Examples
    --------
    >>> [round(x, 4) for x in wilson_interval(5, 10)]
    [0.2366, 0.7634]
    """
    if n <= 0:
        return math.nan, math.nan
    p = k / n
    z = sps.norm.ppf(0.5 + confidence / 2)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(max(0.0, min(centre - half, p))), float(min(1.0, max(centre + half, p)))
