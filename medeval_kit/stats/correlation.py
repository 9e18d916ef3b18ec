"""Fisher-z intervals for correlation coefficients."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

__all__ = ["fisher_z_interval"]


def fisher_z_interval(r: float, n: int, *, confidence: float = 0.95, variance: float = 1.0,
                      k: int = 3) -> tuple[float, float]:
    """Return the Fisher-z CI for a correlation r from n pairs; NaN when n <= k or |r| = 1 or r is NaN.

    The standard error is ``sqrt(variance / (n - k))``: Pearson 1.0 and k = 3; Spearman 1.06 and k = 3
    (Fieller et al. 1957); Kendall 0.437 and k = 4.

    Parameters
    ----------
    r : float
        The correlation.
    n : int
        Pairs it was computed from.
    confidence : float, default 0.95
        Coverage of the interval.
    variance : float, default 1.0
        Numerator of the variance of z.
    k : int, default 3
        Subtracted from ``n`` in the variance of z.

    Returns
    -------
    tuple of float
        ``(ci_low, ci_high)``.

    Examples
    --------
    >>> [round(x, 3) for x in fisher_z_interval(0.5, 30)]
    [0.17, 0.729]
    """
    if n <= k or not np.isfinite(r):
        return math.nan, math.nan
    z = np.arctanh(np.clip(r, -0.999999999, 0.999999999))
    h = sps.norm.ppf(0.5 + confidence / 2) * math.sqrt(variance / (n - k))
    return float(np.tanh(z - h)), float(np.tanh(z + h))
