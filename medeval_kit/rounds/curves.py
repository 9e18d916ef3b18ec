"""Saturation curves of score over refinement rounds: f(t) = a / (1 + e^(-bt - c))^power and its
least-squares fit (the form of AutoMedEval's App. F)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from medeval_kit.errors import ParameterError
from medeval_kit.results import Result, result_frame, result_row

__all__ = ["CURVE_PARAMS", "introspection_curve", "CurveFit", "fit_introspection_curve"]

CURVE_PARAMS = ("a", "b", "c")
_FIT_METHOD = "scipy.optimize.least_squares"


def introspection_curve(t: Any, a: float, b: float, c: float, power: int = 3) -> np.ndarray:
    """Return f(t) = a / (1 + exp(-b t - c))**power (a fraction).

    Parameters
    ----------
    t : float or array-like
        The round (or time).
    a, b, c : float
        The ceiling, the slope and the offset.
    power : int, default 3
        The exponent.

    Returns
    -------
    numpy.ndarray
        f(t), the shape of ``t``.

    Examples
    --------
    >>> round(float(introspection_curve(6, a=0.5274, b=0.453, c=2.83)) * 100, 2)
    52.13
    """
    t = np.asarray(t, dtype=float)
    return a / (1.0 + np.exp(-b * t - c)) ** power


@dataclass(frozen=True)
class CurveFit(Result):
    """Least-squares fit of :func:`introspection_curve` (made by :func:`fit_introspection_curve`).

    Attributes
    ----------
    params : dict
        The fitted a, b, c (the fixed ones at their start values).
    free : tuple of str
        The parameters that were fitted.
    n_points : int
        The points fitted.
    rss : float
        The residual sum of squares.
    converged : bool
        Whether the optimiser converged.
    note : str
        What a reader must know ("" when nothing).
    t, y : tuple of float
        The points fitted.
    start : dict
        The values the fit started from (the fixed parameters keep them).
    power : int
        The curve's exponent.
    """

    params: dict
    free: tuple
    n_points: int
    rss: float
    converged: bool
    note: str = ""
    t: tuple = field(default=())
    y: tuple = field(default=())
    start: dict = field(default_factory=dict)
    power: int = 3

    @property
    def dof(self) -> int:
        """Residual degrees of freedom: points minus free parameters."""
        return self.n_points - len(self.free)

    def predict(self, t: Any) -> np.ndarray:
        """Return the fitted curve at ``t``."""
        return introspection_curve(t, self.params["a"], self.params["b"], self.params["c"], self.power)

    def to_frame(self) -> pd.DataFrame:
        """Return one row per parameter.

        Returns
        -------
        DataFrame
            ``param``, the contract columns (no CI is computed), then ``free, start, dof, rss, converged,
            fit_method``.
        """
        return result_frame([
            result_row(v, n_items=self.n_points, note=self.note, param=k, free=k in self.free,
                       start=self.start.get(k, np.nan), dof=self.dof, rss=self.rss, converged=self.converged,
                       fit_method=_FIT_METHOD)
            for k, v in self.params.items()
        ], keys=["param"])

    def summary(self) -> str:
        """Return one line: the curve, its parameters, free set, dof and rss.

        Returns
        -------
        str
            The line.
        """
        p = ", ".join(f"{k}={v:.4g}" for k, v in self.params.items())
        return (f"f(t)=a/(1+e^(-bt-c))^{self.power} fit on {self.n_points} points ({p}; free {self.free}, "
                f"dof {self.dof}, rss {self.rss:.3g})")


def fit_introspection_curve(
    t: Sequence[float],
    y: Sequence[float],
    *,
    p0: Mapping[str, float],
    free: Sequence[str] = CURVE_PARAMS,
    power: int = 3,
) -> CurveFit:
    """Fit the free parameters of f(t) to (t, y) by least squares.

    Three free parameters on three points interpolate (dof 0, no uncertainty; the note says so).

    Parameters
    ----------
    t : sequence of float
        The rounds.
    y : sequence of float
        The scores, as fractions.
    p0 : mapping of str to float
        Start values of a, b and c; the parameters not in ``free`` stay at them.
    free : sequence of str, default ("a", "b", "c")
        The parameters to fit.
    power : int, default 3
        The curve's exponent.

    Returns
    -------
    CurveFit
        The fit; ``to_frame()`` gives one contract row per parameter.

    Raises
    ------
    ParameterError
        ``p0`` lacks a start value or ``free`` names an unknown parameter.

    Examples
    --------
    >>> fit = fit_introspection_curve([1, 2, 3, 4], [0.3, 0.42, 0.48, 0.5], p0={"a": 0.5, "b": 0.5, "c": 1.0})
    >>> fit.converged, fit.dof
    (True, 1)
    """
    from scipy.optimize import least_squares

    t_arr, y_arr = np.asarray(t, float), np.asarray(y, float)
    missing = [k for k in CURVE_PARAMS if k not in p0]
    if missing:
        raise ParameterError(f"p0 needs start values for a, b and c; missing {missing}")
    start = {k: float(p0[k]) for k in CURVE_PARAMS}
    free = tuple(free)
    for k in free:
        if k not in CURVE_PARAMS:
            raise ParameterError(f"free parameters must be among a, b, c; not {k!r}")

    def resid(theta):
        p = {**start, **dict(zip(free, theta))}
        return introspection_curve(t_arr, p["a"], p["b"], p["c"], power) - y_arr

    res = least_squares(resid, [start[k] for k in free], method="lm" if len(free) <= len(t_arr) else "trf",
                        xtol=1e-14, ftol=1e-14, gtol=1e-14, max_nfev=20000)
    params = {**start, **dict(zip(free, map(float, res.x)))}
    note = "interpolation: as many free parameters as points" if len(free) >= len(t_arr) else ""
    return CurveFit(params=params, free=free, n_points=len(t_arr), rss=float(np.sum(res.fun ** 2)),
                    converged=bool(res.success), note=note, t=tuple(t_arr), y=tuple(y_arr), start=start,
                    power=power)
