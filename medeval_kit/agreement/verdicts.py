"""Verdicts with three states and their test: pass, fail, inconclusive (plus not_testable and invalid).

Every judge row of :func:`~medeval_kit.agreement.judge_vs_humans` and
:func:`~medeval_kit.agreement.alt_test` carries ``status``, ``rule`` (the test in words) and
``reasons`` (why this status). The states:

``pass``
    The test shows what the rule asks (non-inferior; winning rate >= 0.5).
``fail``
    The data show the opposite: the judge is worse than the margin allows (Δ's CI lies wholly
    below −margin), or in the Alt-Test a pass is out of reach even if every undecided human were beaten.
``inconclusive``
    Neither: more items could decide. For Δ the reasons give the CI's width and
    :func:`items_needed`, the number of items at which the test would have 80% power at the
    observed Δ (normal approximation).
``not_testable``
    No test is possible: no bootstrap, an undefined estimate, too few items or humans.
``invalid``
    Set by the input checks (dirty labels) with :func:`mark_invalid`: the numbers are not trusted.

The non-inferiority test of Δ is decided by the percentile CI of the paired bootstrap replicates:
pass when its lower bound (the ``alpha = (1 - confidence) / 2`` quantile) is above −margin. Its
``p_noninferiority`` is read from the same replicates by inverting that quantile
(:func:`noninferiority_p`), so ``p_noninferiority < alpha`` holds exactly when the lower bound is
above −margin: the CI decides, and the p-value can never disagree with it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.stats import MIN_CI_ITEMS

__all__ = ["label_gate", "STATUSES", "MIN_ITEMS", "items_needed", "noninferiority_p", "noninferiority_rule",
           "noninferiority_verdict", "mark_invalid", "join_reasons"]

STATUSES = ("pass", "fail", "inconclusive", "not_testable", "invalid")
MIN_ITEMS = MIN_CI_ITEMS
"""A judge compared on fewer items gets no verdict: no CI is computed from so few items (:mod:`medeval_kit.stats`)."""
SEP = "; "
"""Between the reasons in the ``reasons`` cell (tables, CSV and JSON)."""


def join_reasons(reasons: Sequence[str]) -> str:
    """The reasons as one table cell (``"; "`` between them)."""
    return SEP.join(r for r in reasons if r)


def items_needed(n_items: int, se: float, delta: float, margin: float, alpha: float = 0.025,
                 power: float = 0.8) -> int | None:
    """Items at which the non-inferiority test would reach ``power`` if Δ and its spread stay as observed.

    Normal approximation: the standard error scales as ``1/sqrt(n)``, so the test of
    H0: Δ <= −margin at one-sided level ``alpha`` has power ``power`` at
    ``n * ((z_{1-alpha} + z_power) * se / (delta + margin))^2`` items.

    Parameters
    ----------
    n_items : int
        Items behind the observed ``se``.
    se : float
        Standard error of Δ at ``n_items`` (e.g. the SD of the bootstrap replicates).
    delta : float
        The observed Δ = judge − humans.
    margin : float
        The non-inferiority margin (positive: Δ > −margin is non-inferior).
    alpha : float
        One-sided level, ``(1 - confidence) / 2``.
    power : float
        The power wanted.

    Returns
    -------
    int or None
        The number of items (rounded up); ``None`` when no number suffices at the observed Δ
        (``delta <= -margin``) or the inputs are not finite.

    Examples
    --------
    >>> items_needed(100, se=0.05, delta=0.0, margin=0.05)
    785
    >>> items_needed(100, se=0.05, delta=-0.06, margin=0.05) is None
    True
    """
    from scipy.stats import norm

    vals = (n_items, se, delta, margin, alpha, power)
    if not all(isinstance(v, (int, float, np.integer, np.floating)) and math.isfinite(v) for v in vals):
        return None
    if delta + margin <= 0 or n_items <= 0 or se < 0:
        return None
    z = norm.ppf(1 - alpha) + norm.ppf(power)
    return max(1, math.ceil(n_items * (z * se / (delta + margin)) ** 2 - 1e-9))


def noninferiority_p(d: np.ndarray, margin: float) -> float:
    """One-sided p-value of H0: Δ <= −margin that inverts the percentile CI of the replicates ``d``.

    ``p`` is the largest level ``a`` at which the ``a``-quantile of ``d`` (numpy's linear
    interpolation, the quantile of :func:`medeval_kit.stats.percentile_interval`) is still at or
    below −margin; so for every ``alpha``, ``p < alpha`` exactly when that quantile is above
    −margin. Floored at ``1/(B+1)`` so that it is never exactly 0 (``B`` finite replicates); the
    floor cannot break the equivalence when ``1/(B+1) < alpha``.

    Parameters
    ----------
    d : numpy.ndarray
        Finite paired replicates of Δ.
    margin : float
        The non-inferiority margin.

    Returns
    -------
    float
        The p-value in ``[1/(B+1), 1]``; NaN without replicates.

    Examples
    --------
    >>> d = np.linspace(-0.1, 0.1, 201)
    >>> round(noninferiority_p(d, 0.0505), 4)
    0.2475
    """
    s = np.sort(np.asarray(d, float))
    B = len(s)
    if B == 0:
        return float("nan")
    x = -float(margin)
    if B == 1:
        return 1.0 if s[0] <= x else 1.0 / (B + 1)
    k = int(np.searchsorted(s, x, side="right"))  # replicates at or below -margin
    if k == 0:
        return 1.0 / (B + 1)
    if k == B:
        return 1.0
    # Q(h / (B-1)) is linear between s[k-1] <= x and s[k] > x: the last h with Q <= x
    lo, hi = s[k - 1], s[k]
    h = (k - 1) + (x - lo) / (hi - lo)
    return float(max(h / (B - 1), 1.0 / (B + 1)))


def _pct(confidence: float) -> str:
    return f"{100 * confidence:g}%"


def noninferiority_rule(margin: float, confidence: float) -> str:
    """The non-inferiority rule of Δ in words.

    Parameters
    ----------
    margin : float
        The non-inferiority margin.
    confidence : float
        The CI's level; the one-sided level is ``(1 - confidence) / 2``.

    Returns
    -------
    str
        The rule, e.g. for the ``rule`` column.

    Examples
    --------
    >>> noninferiority_rule(0.05, 0.95)[:64]
    "non-inferior (pass) if the 95% CI's lower bound of delta > -0.05"
    """
    a = (1 - confidence) / 2
    return (f"non-inferior (pass) if the {_pct(confidence)} CI's lower bound of delta > {-margin:g} "
            f"(one-sided alpha = {a:g}; equivalently p_noninferiority < {a:g}, read from the same bootstrap "
            f"replicates: the CI decides); shown inferior (fail) if the CI's upper bound < {-margin:g}; "
            f"inconclusive if the CI contains {-margin:g}")


def noninferiority_verdict(d: np.ndarray | None, delta: float, margin: float, confidence: float,
                           n_items: int, *, n_boot: int, min_items: int = MIN_ITEMS) -> dict:
    """The verdict of one judge's Δ from its paired bootstrap replicates.

    Parameters
    ----------
    d : numpy.ndarray or None
        Paired replicates of Δ (NaN ones are dropped); None or empty without a bootstrap.
    delta : float
        The point estimate of Δ.
    margin, confidence : float
        The non-inferiority margin and the CI's level.
    n_items : int
        Items the judge was compared on.
    n_boot : int
        Resamples asked for.
    min_items : int
        Fewer items give ``not_testable``.

    Returns
    -------
    dict
        ``status``, ``rule``, ``reasons`` (a list), ``noninferior`` (True / False / NA for
        not_testable) and, when testable, ``delta_ci_low``, ``delta_ci_high``, ``p_noninferiority``.

    Examples
    --------
    >>> v = noninferiority_verdict(np.linspace(-0.02, 0.04, 500), 0.01, 0.05, 0.95, 200, n_boot=500)
    >>> v["status"], v["noninferior"]
    ('pass', True)
    """
    alpha = (1 - confidence) / 2
    out = dict(status="not_testable", rule=noninferiority_rule(margin, confidence), reasons=[], noninferior=pd.NA)
    d = np.asarray([] if d is None else d, float)
    d = d[np.isfinite(d)]
    reasons = out["reasons"]
    if not n_boot:
        reasons.append("no bootstrap (n_boot=0): no CI, so no test")
    elif not np.isfinite(delta):
        reasons.append("delta is undefined on this panel (see note)")
    elif n_items < min_items:
        reasons.append(f"fewer than {min_items} items ({n_items}): too few for a bootstrap CI")
    elif len(d) < 2:
        reasons.append(f"{len(d)} of {n_boot} resamples defined: no CI")
    elif 1 / (len(d) + 1) >= alpha:
        reasons.append(f"{len(d)} resamples cannot resolve a one-sided level of {alpha:g}: use n_boot >= "
                       f"{math.ceil(2 / alpha)}")
    if reasons:
        return out
    lo, hi = float(np.quantile(d, alpha)), float(np.quantile(d, 1 - alpha))
    p = noninferiority_p(d, margin)
    out.update(delta_ci_low=lo, delta_ci_high=hi, p_noninferiority=p)
    ci = f"CI [{lo:+.3f}, {hi:+.3f}]"
    if lo > -margin:
        out["status"] = "pass"
        reasons.append(f"{ci}: lower bound above {-margin:g} (p_noninferiority = {p:.3g} < {alpha:g})")
    elif hi < -margin:
        out["status"] = "fail"
        reasons.append(f"{ci}: upper bound below {-margin:g}, the judge is shown inferior by more than the margin")
    else:
        out["status"] = "inconclusive"
        reasons.append(f"{ci} straddles {-margin:g}: inconclusive, width {hi - lo:.3f}")
        need = items_needed(n_items, float(np.std(d, ddof=1)), delta, margin, alpha)
        reasons.append(f"no number of items suffices at the observed delta {delta:+.3f} (<= {-margin:g})"
                       if need is None else
                       f"about {need} items (now {n_items}) would give 80% power at the observed delta "
                       f"{delta:+.3f} (normal approximation)")
    out["noninferior"] = out["status"] == "pass"
    return out


def mark_invalid(result, reason: str, judges: Sequence | None = None):
    """A copy of a verdict result with the judges' rows ``invalid`` (the input checks do not trust the numbers).

    Parameters
    ----------
    result : JudgeComparison or AltTestResult
        The result of :func:`~medeval_kit.agreement.judge_vs_humans` or
        :func:`~medeval_kit.agreement.alt_test`.
    reason : str
        Why, e.g. ``"labels 'Correct' and 'correct' differ only by case"``; it leads the reasons.
    judges : sequence, optional
        Only these judges (default: every judge).

    Returns
    -------
    the same type as ``result``
        With ``status = "invalid"``, ``noninferior`` / ``passed`` False, the reason first.

    Examples
    --------
    >>> from medeval_kit.agreement import judge_vs_humans
    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> res = mark_invalid(judge_vs_humans(synthetic_panel(n_items=50, seed=1), n_boot=0), "dirty labels")
    >>> res.table.loc[1, "status"]
    'invalid'
    """
    if hasattr(result, "table"):  # JudgeComparison
        t = result.table.copy()
        sel = (t["role"] == "judge") & (t["rater"].isin(judges) if judges is not None else True)
        t.loc[sel, "noninferior"] = False
        key = "table"
    else:  # AltTestResult
        t = result.results.copy()
        sel = t["judge"].isin(judges) if judges is not None else pd.Series(True, index=t.index)
        t.loc[sel, "passed"] = False
        key = "results"
    t.loc[sel, "status"] = "invalid"
    t.loc[sel, "reasons"] = [join_reasons([f"invalid input: {reason}", r]) for r in t.loc[sel, "reasons"]]
    return dataclasses.replace(result, **{key: t})


def label_gate(result, df: pd.DataFrame, *, label: str = "label", rater: str = "rater",
               raters: Sequence | None = None, categories: Sequence | None = None,
               accept_label_warnings: bool = False):
    """``result`` with every judge ``invalid`` when the labels fail a blocking check of
    :func:`~medeval_kit.agreement.check_labels` (case variants, ``NA`` used as a label, numbers but
    for a few, a label used once or by one rater only), unless ``accept_label_warnings``.

    Parameters
    ----------
    result : JudgeComparison or AltTestResult
        The verdicts computed on ``df``.
    df : DataFrame
        The long annotations the verdicts came from.
    label, rater : str
        Its columns.
    raters : sequence, optional
        Only these raters' rows are checked (the humans and judges of the result).
    categories : sequence, optional
        The declared labels (never reported as rare or missing-like).
    accept_label_warnings : bool
        Keep the verdicts; the findings are not attached.

    Returns
    -------
    the same type as ``result``

    Examples
    --------
    >>> from medeval_kit.agreement import judge_vs_humans
    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> t = synthetic_panel(n_items=60, seed=1)
    >>> t.loc[t.rater == t.rater.iloc[0], "label"] = t["label"].str.upper()
    >>> judge_vs_humans(t, n_boot=0).table["status"].tolist()[1]
    'invalid'
    """
    if accept_label_warnings:
        return result
    from medeval_kit.agreement.io import check_labels

    sub = df if raters is None else df[df[rater].isin(list(raters))]
    sub = pd.DataFrame({"label": sub[label].to_numpy(), "rater": sub[rater].to_numpy()})
    notes = [n for n in check_labels(sub, categories=categories)[1] if n.blocking]
    if not notes:
        return result
    return mark_invalid(result, "; ".join(notes) + " (accept_label_warnings=True computes the verdict anyway)")
