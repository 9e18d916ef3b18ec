"""Intraclass correlations in the Shrout & Fleiss (1979) forms, from ANOVA sums over items.

Each form is one registered function of the :class:`MeanSquares` of a complete items x raters
matrix; its analytic interval is the F-distribution interval of McGraw & Wong (1996).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import stats as sps

from medeval_kit.agreement.data import Data
from medeval_kit.agreement.engine import Stat, safe_div
from medeval_kit.agreement.registry import Coefficient, coefficient, names

__all__ = ["MeanSquares", "icc_features", "icc_stat", "icc_forms", "icc1", "icc2", "icc3", "icc1k", "icc2k", "icc3k"]


@dataclass(frozen=True)
class MeanSquares:
    """Two-way ANOVA mean squares of ``m`` (re)samples of an n x k matrix (arrays of length m)."""

    n: np.ndarray
    k: int
    msr: np.ndarray  # between items (rows)
    msw: np.ndarray  # within items
    msc: np.ndarray  # between raters (columns)
    mse: np.ndarray  # residual

    @classmethod
    def from_sums(cls, S: np.ndarray, k: int) -> MeanSquares:
        """From summed features [1, row sum, row sum^2, sum of squares, column sums (k)]."""
        nn, T, C = S[:, 0], S[:, 1], S[:, 4:]
        cf = T**2 / (nn * k)
        ssr = S[:, 2] / k - cf
        ssc = (C**2).sum(1) / nn - cf
        sst = S[:, 3] - cf
        sse = sst - ssr - ssc
        return cls(nn, k, ssr / (nn - 1), (sst - ssr) / (nn * (k - 1)), ssc / (k - 1), sse / ((nn - 1) * (k - 1)))

    def first(self) -> MeanSquares:
        """The first sample as scalars."""
        return replace(self, **{f: float(np.ravel(getattr(self, f))[0]) for f in ("n", "msr", "msw", "msc", "mse")})


def icc_features(X: np.ndarray) -> np.ndarray:
    """Per-item ANOVA features of a complete items x raters matrix."""
    S_i = X.sum(1)
    return np.column_stack([np.ones(len(X)), S_i, S_i**2, (X**2).sum(1), X])


def icc_stat(coef: Coefficient, data: Data) -> tuple[Stat, str]:
    """The ICC ``coef`` on the items every rater labelled; the note counts the items dropped."""
    vals = data.numbers()
    complete = np.isfinite(vals).all(1)
    X = vals[complete]
    k = X.shape[1]
    F = np.zeros((len(vals), k + 4))
    F[complete] = icc_features(X)

    def ci(S, est, confidence):
        return coef.analytic(MeanSquares.from_sums(S, k).first(), confidence)

    st = Stat(F, lambda S: coef.fn(MeanSquares.from_sums(S, k)), len(X), analytic=ci if coef.analytic else None)
    dropped = int((~complete).sum())
    return st, (f"{dropped} items without a label from every rater dropped (ICC needs complete data)"
                if dropped else "")


def icc_forms() -> list[str]:
    """The registered ICC forms."""
    return names(family="icc")


# --------------------------------------------------------------------------- F intervals


def _f_interval(one_way: bool, average: bool):
    """F-distribution interval of ICC(1,*) or ICC(3,*) (McGraw & Wong 1996; Shrout & Fleiss 1979)."""

    def ci(ms: MeanSquares, confidence: float):
        q = 0.5 + confidence / 2
        n, k = ms.n, ms.k
        den, df2 = (ms.msw, n * (k - 1)) if one_way else (ms.mse, (n - 1) * (k - 1))
        Fv = ms.msr / den
        fl = Fv / sps.f.ppf(q, n - 1, df2)
        fu = Fv * sps.f.ppf(q, df2, n - 1)
        if average:
            return 1 - 1 / fl, 1 - 1 / fu, "analytic (F distribution)"
        return (fl - 1) / (fl + k - 1), (fu - 1) / (fu + k - 1), "analytic (F distribution)"

    return ci


def _icc2_interval(average: bool):
    """Interval of ICC(2,*) with Satterthwaite degrees of freedom (McGraw & Wong 1996)."""

    def ci(ms: MeanSquares, confidence: float):
        q = 0.5 + confidence / 2
        n, k, msr, msc, mse = ms.n, ms.k, ms.msr, ms.msc, ms.mse
        icc = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
        a = k * icc / (n * (1 - icc))
        b = 1 + k * icc * (n - 1) / (n * (1 - icc))
        v = (a * msc + b * mse) ** 2 / ((a * msc) ** 2 / (k - 1) + (b * mse) ** 2 / ((n - 1) * (k - 1)))
        fl = sps.f.ppf(q, n - 1, v)
        fu = sps.f.ppf(q, v, n - 1)
        lo = n * (msr - fl * mse) / (fl * (k * msc + (k * n - k - n) * mse) + n * msr)
        hi = n * (fu * msr - mse) / (k * msc + (k * n - k - n) * mse + n * fu * msr)
        if average:
            lo, hi = lo * k / (1 + lo * (k - 1)), hi * k / (1 + hi * (k - 1))
        return lo, hi, "analytic (F distribution, Satterthwaite df)"

    return ci


# --------------------------------------------------------------------------- the forms


@coefficient(label="ICC(1,1)", family="icc", analytic=_f_interval(one_way=True, average=False))
def icc1(ms: MeanSquares) -> np.ndarray:
    """One-way random effects, single rater."""
    return safe_div(ms.msr - ms.msw, ms.msr + (ms.k - 1) * ms.msw)


@coefficient(label="ICC(2,1)", family="icc", analytic=_icc2_interval(average=False))
def icc2(ms: MeanSquares) -> np.ndarray:
    """Two-way random effects, absolute agreement, single rater."""
    return safe_div(ms.msr - ms.mse, ms.msr + (ms.k - 1) * ms.mse + ms.k * (ms.msc - ms.mse) / ms.n)


@coefficient(label="ICC(3,1)", family="icc", analytic=_f_interval(one_way=False, average=False))
def icc3(ms: MeanSquares) -> np.ndarray:
    """Two-way mixed effects, consistency, single rater."""
    return safe_div(ms.msr - ms.mse, ms.msr + (ms.k - 1) * ms.mse)


@coefficient(label="ICC(1,k)", family="icc", analytic=_f_interval(one_way=True, average=True))
def icc1k(ms: MeanSquares) -> np.ndarray:
    """One-way random effects, mean of k raters."""
    return safe_div(ms.msr - ms.msw, ms.msr)


@coefficient(label="ICC(2,k)", family="icc", analytic=_icc2_interval(average=True))
def icc2k(ms: MeanSquares) -> np.ndarray:
    """Two-way random effects, absolute agreement, mean of k raters."""
    return safe_div(ms.msr - ms.mse, ms.msr + (ms.msc - ms.mse) / ms.n)


@coefficient(label="ICC(3,k)", family="icc", analytic=_f_interval(one_way=False, average=True))
def icc3k(ms: MeanSquares) -> np.ndarray:
    """Two-way mixed effects, consistency, mean of k raters."""
    return safe_div(ms.msr - ms.mse, ms.msr)
