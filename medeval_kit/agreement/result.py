"""One agreement statistic with its interval: :class:`AgreementResult` and :func:`finish` (estimate + CI)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from medeval_kit.agreement.data import AgreementError
from medeval_kit.agreement.engine import Stat, jackknife, point, replicates
from medeval_kit.results import Result, result_frame
from medeval_kit.stats import interval

__all__ = ["AgreementResult", "CI_METHODS", "finish", "bootstrap_name", "check_ci"]

CI_METHODS = ("percentile", "bca", "analytic")
_NAN = float("nan")


@dataclass(frozen=True)
class AgreementResult(Result):
    """One agreement statistic with its CI and denominators; ``float(res)`` is the estimate.

    Attributes
    ----------
    metric : str
        The coefficient (``cohen_kappa``, ``cohen_kappa_linear``, ``ceiling_loo_cohen_kappa`` ...).
    estimate : float
        The value; NaN when undefined (``note`` says why).
    ci_low, ci_high : float
        The interval; NaN when there is none.
    ci_method : str
        How the interval was made; ``""`` when there is none.
    n_items : int
        Items the estimate used.
    n_raters : int
        Raters.
    n_missing : int
        Missing (item, rater) labels.
    n_failed : int
        Items dropped (e.g. ICC items without every rater's label).
    note : str
        Anything a reader must know.
    raters : tuple
        The raters, in order.
    level : str
        The measurement level used (nominal, ordinal, interval, ratio).
    details : DataFrame, optional
        Components (e.g. the per-human values of a ceiling).
    """

    metric: str
    estimate: float
    ci_low: float
    ci_high: float
    ci_method: str
    n_items: int
    n_raters: int
    n_missing: int
    n_failed: int = 0
    note: str = ""
    raters: tuple = ()
    level: str = "nominal"
    details: pd.DataFrame | None = field(default=None, compare=False, repr=False)

    def to_frame(self) -> pd.DataFrame:
        """One tidy row in the result contract (``raters`` joined with ``|``).

        Returns
        -------
        DataFrame
            ``metric``, the result contract, ``n_raters, n_missing, raters, level``.
        """
        row = {k: v for k, v in asdict(self).items() if k != "details"}
        row["raters"] = "|".join(map(str, self.raters))
        return result_frame([row], keys=["metric"])

    def summary(self) -> str:
        """A short human-readable line, e.g. ``cohen_kappa = 0.852 [0.80, 0.89] (n=999 items, 2 raters)``.

        Returns
        -------
        str
            One line.
        """
        ci = "" if math.isnan(self.ci_low) else f" [{self.ci_low:.3f}, {self.ci_high:.3f}]"
        est = "NaN" if math.isnan(self.estimate) else f"{self.estimate:.3f}"
        who = f" {', '.join(map(str, self.raters))};" if self.raters and len(self.raters) <= 4 else ""
        note = f" note: {self.note}" if self.note else ""
        return (
            f"{self.metric} = {est}{ci} ({self.n_items} items, {self.n_raters} raters,{who} "
            f"{self.n_missing} missing; {self.ci_method or 'no CI'}){note}"
        )

    def __float__(self) -> float:
        return float(self.estimate)

    def _repr_html_(self) -> str:
        return self.to_frame().to_html(index=False)


def bootstrap_name(ci_method: str, n_boot: int, seed) -> str:
    """How a bootstrap interval was made, e.g. ``bootstrap percentile over items (B=1000, seed=0)``."""
    kind = {"percentile": "percentile", "bca": "BCa"}[ci_method]
    return f"bootstrap {kind} over items (B={n_boot}, seed={seed})"


def check_ci(ci_method: str, confidence: float) -> None:
    """Raise AgreementError for an unknown CI method or a confidence level outside (0, 1)."""
    if ci_method not in CI_METHODS:
        raise AgreementError(f"ci_method must be 'percentile', 'bca' or 'analytic'; not {ci_method!r}")
    if not 0 < confidence < 1:
        raise AgreementError(f"confidence must be a level between 0 and 1, e.g. 0.95; not {confidence!r}")


def _undefined_note(st: Stat, notes: list[str]) -> str:
    if any("undefined" in n for n in notes):
        return ""  # the caller already said why
    if st.n_items == 0:
        return "undefined: no item has the labels this coefficient needs"
    return "undefined: chance agreement is 1 or the variance is 0 (e.g. a single category used)"


def _interval(metric: str, st: Stat, est: float, *, n_boot: int, confidence: float, ci_method: str, seed,
              notes: list[str], reps: np.ndarray | None = None) -> tuple[float, float, str]:
    """(ci_low, ci_high, ci_method): analytic where the statistic has one and it is asked for, else bootstrap
    (``reps``: its replicates when already drawn, e.g. together with other statistics)."""
    if ci_method == "analytic" and st.analytic is not None:
        lo, hi, how = st.analytic(st.totals(), est, confidence)
        return float(lo), float(hi), how
    if not n_boot or n_boot <= 0:
        return _NAN, _NAN, ""
    if ci_method == "analytic":
        notes.append(f"no analytic SE for {metric}; bootstrap percentile used")
        ci_method = "percentile"
    reps = replicates([st], n_boot, seed)[:, 0] if reps is None else reps
    jack = jackknife(st) if ci_method == "bca" else None
    lo, hi, n_ok = interval(est, reps, confidence, ci_method, jack)
    if n_ok < n_boot:
        notes.append(f"{n_boot - n_ok} of {n_boot} resamples undefined and dropped")
    return float(lo), float(hi), bootstrap_name(ci_method, n_boot, seed)


def finish(metric: str, st: Stat, *, n_raters: int, n_missing: int, raters, level: str, n_boot: int,
           confidence: float, ci_method: str, seed, note: str = "", n_failed: int = 0,
           details: pd.DataFrame | None = None, reps: np.ndarray | None = None) -> AgreementResult:
    """Point estimate, CI and note for one statistic (``reps``: its bootstrap replicates, if already drawn)."""
    check_ci(ci_method, confidence)
    est = point(st) if st.n_items > 0 else _NAN
    notes = [n for n in (note, st.note) if n]
    common = dict(n_items=st.n_items, n_raters=n_raters, n_missing=n_missing, n_failed=n_failed,
                  raters=tuple(raters), level=level, details=details)
    if not np.isfinite(est):
        notes.append(_undefined_note(st, notes))
        return AgreementResult(metric, _NAN, _NAN, _NAN, "", note="; ".join(n for n in notes if n), **common)
    lo, hi, how = _interval(metric, st, est, n_boot=n_boot, confidence=confidence, ci_method=ci_method, seed=seed,
                            notes=notes, reps=reps)
    return AgreementResult(metric, float(est), lo, hi, how, note="; ".join(notes), **common)
