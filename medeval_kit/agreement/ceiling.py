"""The human ceiling and MedQADE's design: judges against the majority of all humans, next to the ceiling.

Kept so MedQADE's published numbers reproduce; the unbiased comparison is
:func:`~medeval_kit.agreement.judge_vs_humans`. :func:`human_ceiling` also answers "how well do the
humans agree with each other?" on its own.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.agreement.comparison import JudgeComparison, as_comparison_table
from medeval_kit.agreement.consensus import abstain_codes, vote
from medeval_kit.agreement.data import AgreementError, prepare
from medeval_kit.agreement.engine import Stat, mean_stat, point, replicates
from medeval_kit.agreement.forms import pair_stat
from medeval_kit.agreement.panel import humans_from_kind, panel_of
from medeval_kit.agreement.result import AgreementResult, finish
from medeval_kit.agreement.verdicts import join_reasons, noninferiority_rule, noninferiority_verdict
from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.results import result_frame
from medeval_kit.stats import interval

__all__ = ["human_ceiling", "judge_vs_ceiling", "ceiling_stats", "medqade_comparison", "single_reference"]

_NAN = float("nan")
CEILING_FORMS = ("loo", "pairwise")
MEDQADE_BIAS = ("MedQADE design: judge vs the majority of all humans, humans vs the majority of the others on the "
                "items where the others agree; the two references differ, so delta is biased (see judge_vs_humans)")


def _point(st: Stat) -> float:
    return point(st) if st.n_items else _NAN


def _percentile(est: float, reps: np.ndarray, confidence: float) -> tuple[float, float]:
    lo, hi, _ = interval(est, reps, confidence, "percentile")
    return lo, hi


def _ci_method(n_boot: int, seed) -> str:
    return f"bootstrap percentile over items (B={n_boot}, seed={seed}); paired for delta" if n_boot else ""


def ceiling_stats(codes, K, hidx, humans, metric, form, rule, tie_policy, seed) -> tuple[list[Stat], list[dict]]:
    """One statistic per human (``loo``: vs the majority of the others) or per human pair, and their rows."""
    rng = np.random.default_rng(seed)
    stats, rows = [], []
    if form == "loo":
        for k, h in zip(hidx, humans):
            cons, _, _ = vote(codes[:, [j for j in hidx if j != k]], K, rule, tie_policy, rng)
            stats.append(pair_stat(metric, cons, codes[:, k], K))
            rows.append(dict(rater=h, reference="majority of the other humans", n_items=stats[-1].n_items))
    elif form == "pairwise":
        for a, b in itertools.combinations(range(len(hidx)), 2):
            stats.append(pair_stat(metric, codes[:, hidx[a]], codes[:, hidx[b]], K))
            rows.append(dict(rater=humans[b], reference=humans[a], n_items=stats[-1].n_items))
    else:
        raise AgreementError(f"form must be one of {CEILING_FORMS}; not {form!r}")
    return stats, rows


@shared_docs
@takes_columns("item", "rater", "label", "rater_kind")
def human_ceiling(
    df: pd.DataFrame,
    humans: Sequence[str] | None = None,
    *,
    columns: Columns = None,
    metric: str = "cohen_kappa",
    form: str = "loo",
    categories: Sequence | None = None,
    rule: str = "plurality",
    tie_policy: str = "na",
    abstain: Sequence = (),
    n_boot: int = 1000,
    confidence: float = 0.95,
    ci_method: str = "percentile",
    seed: int = 0,
) -> AgreementResult:
    """The human ceiling: how well humans agree with each other.

    ``form="loo"``: each human against the majority of the *other* humans, averaged (MedQADE's
    leave-one-out ceiling); items where the others tie are skipped for that human (``tie_policy``).
    ``form="pairwise"``: the mean over all human pairs. One item bootstrap moves every component
    together.

    Parameters
    ----------
    df : DataFrame
        Long annotations (``item``, ``rater``, ``label`` [, ``rater_kind``]).
    humans : sequence of str, optional
        The human raters; default those whose ``rater_kind`` is ``human``.
    {columns}
    metric : str, default "cohen_kappa"
        A pairwise registered coefficient.
    form : {"loo", "pairwise"}, default "loo"
        Each human against the majority of the others (at least 3 humans), or the mean over human pairs.
    categories : sequence, optional
        The declared labels.
    rule : {"plurality", "strict"}, default "plurality"
        Voting rule of the others' majority.
    tie_policy : {"na", "first", "random"}, default "na"
        What a tie among the others gives (``"na"``: the item is skipped for that human).
    abstain : sequence, default ()
        Labels that are not votes.
    {n_boot}
    {confidence}
    {ci_method}
    {seed}

    Returns
    -------
    AgreementResult
        The ceiling (metric ``ceiling_<form>_<metric>``) with its CI; ``details`` holds the per-human
        (or per-pair) values.

    Raises
    ------
    AgreementError
        Too few humans for ``form``; an unknown ``form``.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> human_ceiling(synthetic_panel(n_items=40, seed=1), n_boot=0).metric
    'ceiling_loo_cohen_kappa'
    """
    if humans is None:
        humans = humans_from_kind(df, "rater")
    data = prepare(df, raters=list(humans), categories=categories)
    need = 3 if form == "loo" else 2
    if len(humans) < need:
        raise AgreementError(f"the {form} ceiling needs at least {need} humans; got {list(humans)}")
    codes = abstain_codes(data, abstain)
    hidx = [data.raters.index(h) for h in humans]
    stats, rows = ceiling_stats(codes, data.K, hidx, list(humans), metric, form, rule, tie_policy, seed)
    for st, row in zip(stats, rows):
        row["estimate"] = _point(st)
    mean = mean_stat(stats, int(((data.codes >= 0).sum(1) >= 2).sum()))
    return finish(f"ceiling_{form}_{metric}", mean, n_raters=len(humans), n_missing=data.n_missing,
                  raters=humans, level="nominal", n_boot=n_boot, confidence=confidence, ci_method=ci_method,
                  seed=seed, details=pd.DataFrame(rows))


# --------------------------------------------------------------------------- MedQADE's design


def _judge_row(j, st, est, reps, c, confidence, n_boot, margin) -> dict:
    """One judge against the majority of all humans; Δ against the ceiling ``c`` (est, lo, hi, reps) if any."""
    lo, hi = _percentile(est, reps, confidence)
    row = dict(role="judge", rater=j, estimate=est, ci_low=lo, ci_high=hi, n_items=st.n_items, delta=_NAN,
               delta_ci_low=_NAN, delta_ci_high=_NAN, p_value=_NAN, ci_overlap=pd.NA)
    if c is None or not n_boot:
        why = ("no human ceiling (a single reference rater): no delta to test" if c is None else
               "no bootstrap (n_boot=0): no CI, so no test")
        row.update(status="not_testable", rule=noninferiority_rule(margin, confidence), noninferior=pd.NA, reasons=why)
        return row
    c_est, c_lo, c_hi, c_reps = c
    d = reps - c_reps
    d = d[np.isfinite(d)]
    row["delta"] = est - c_est
    if len(d):
        row["delta_ci_low"], row["delta_ci_high"] = _percentile(est - c_est, d, confidence)
        # MedQADE's two-sided p-value has no +1 correction (as published)
        row["p_value"] = float(min(1.0, 2 * min((d <= 0).mean(), (d >= 0).mean())))
        row["ci_overlap"] = bool(lo <= c_hi and c_lo <= hi)
    v = noninferiority_verdict(d, row["delta"], margin, confidence, st.n_items, n_boot=n_boot)
    row.update(status=v["status"], rule=v["rule"], reasons=join_reasons(v["reasons"]), noninferior=v["noninferior"],
               p_noninferiority=v.get("p_noninferiority", _NAN))
    return row


@shared_docs
@takes_columns("item", "rater", "label", "rater_kind")
def judge_vs_ceiling(
    df: pd.DataFrame,
    humans: Sequence[str] | None = None,
    judges: Sequence[str] | None = None,
    *,
    columns: Columns = None,
    metric: str = "cohen_kappa",
    form: str = "loo",
    categories: Sequence | None = None,
    rule: str = "plurality",
    tie_policy: str = "na",
    abstain: Sequence = (),
    reference: str | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    margin: float = 0.05,
) -> pd.DataFrame:
    """The MedQADE design: each judge against the majority of *all* humans, next to the human ceiling.

    Kept so MedQADE's published numbers reproduce; for the question "can this judge replace the
    humans?" use :func:`judge_vs_humans`, whose default design has no bias. Here the judge's score
    is ``metric`` against the majority of all humans (or against the single rater ``reference``,
    e.g. an adjudicated expert; then the ceiling is not defined and left NaN), while the ceiling
    (``form="loo"``) scores each human against the majority of the *other* humans, only on items
    where those others agree. The references differ, so Δ is biased: in a simulation with
    equally noisy judges and humans (3 humans) the judges come out significantly worse, and with
    ``form="pairwise"`` significantly better (``benchmarks/bench_judge_validation.py`` shows it).

    Parameters
    ----------
    df : DataFrame
        Long annotations (``item``, ``rater``, ``label`` [, ``rater_kind``]).
    humans, judges : sequence of str, optional
        The human raters and the judges; default from the ``rater_kind`` column (judges: every other rater).
    {columns}
    metric : str, default "cohen_kappa"
        A pairwise registered coefficient.
    form : {"loo", "pairwise"}, default "loo"
        The human ceiling's form (:func:`human_ceiling`).
    categories : sequence, optional
        The declared labels.
    rule : {"plurality", "strict"}, default "plurality"
        Voting rule of the humans' majority.
    tie_policy : {"na", "first", "random"}, default "na"
        What a tied majority gives.
    abstain : sequence, default ()
        Labels that are not votes.
    reference : str, optional
        A single reference rater (e.g. an adjudicated expert) instead of the humans' majority.
    n_boot : int, default 1000
        Item-bootstrap resamples (paired for ``delta``); ``0``: no CI and no test.
    {confidence}
    {seed}
    margin : float, default 0.05
        Non-inferiority margin of the verdict.

    Returns
    -------
    DataFrame
        One row for the ceiling and one per judge: ``role, rater, metric``, the result contract,
        ``delta`` with its paired-bootstrap CI, two-sided ``p_value``, ``ci_overlap`` (MedQADE's rule),
        the verdict (``status, rule, reasons, noninferior, p_noninferiority``), ``ceiling_form`` and ``reference``.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> t = judge_vs_ceiling(synthetic_panel(n_items=40, seed=1), n_boot=0)
    >>> list(t["role"])
    ['ceiling', 'judge']
    """
    if humans is None and reference is not None:
        humans = [reference]
    humans, judges = panel_of(df, humans, judges, min_humans=1)
    data = prepare(df, raters=humans + judges, categories=categories)
    codes = abstain_codes(data, abstain)
    ceiling = None
    if reference is not None or len(humans) == 1:
        ref = codes[:, data.raters.index(humans[0])]
    else:
        hidx = [data.raters.index(h) for h in humans]
        ref, _, _ = vote(codes[:, hidx], data.K, rule, tie_policy, np.random.default_rng(seed))
        if len(humans) >= (3 if form == "loo" else 2):
            c_stats, _ = ceiling_stats(codes, data.K, hidx, humans, metric, form, rule, tie_policy, seed)
            ceiling = mean_stat(c_stats, int((ref >= 0).sum()))
    j_stats = [pair_stat(metric, ref, codes[:, data.raters.index(j)], data.K) for j in judges]
    all_stats = ([ceiling] if ceiling is not None else []) + j_stats
    reps = replicates(all_stats, n_boot, seed) if n_boot else np.full((0, len(all_stats)), np.nan)
    ests = [_point(s) for s in all_stats]
    rows, c = [], None
    if ceiling is not None:
        c = (ests[0], *_percentile(ests[0], reps[:, 0], confidence), reps[:, 0])
        rows.append(dict(role="ceiling", rater=f"humans ({form})", estimate=c[0], ci_low=c[1], ci_high=c[2],
                         n_items=ceiling.n_items, delta=_NAN, delta_ci_low=_NAN, delta_ci_high=_NAN, p_value=_NAN,
                         ci_overlap=pd.NA))
    off = len(rows)
    rows += [_judge_row(j, st, ests[off + k], reps[:, off + k], c, confidence, n_boot, margin)
             for k, (j, st) in enumerate(zip(judges, j_stats))]
    out = result_frame([{**r, "metric": metric, "ci_method": _ci_method(n_boot, seed)} for r in rows],
                       keys=["role", "rater", "metric"])
    out["ceiling_form"] = form if ceiling is not None else "none (one reference rater)"
    out["reference"] = reference or f"majority of {len(humans)} humans ({rule}, ties {tie_policy})"
    return out


def medqade_comparison(df, humans, judges, *, metric, categories, rule, tie_policy, abstain,
                       margin, n_boot, confidence, seed) -> JudgeComparison:
    """The MedQADE design in the common table layout (see :func:`judge_vs_ceiling`)."""
    t = judge_vs_ceiling(df, humans, judges, metric=metric, form="loo", categories=categories, rule=rule, tie_policy=tie_policy, abstain=abstain, n_boot=n_boot,
                         confidence=confidence, seed=seed, margin=margin)
    t = t.assign(role=t["role"].replace({"ceiling": "humans"}), design="medqade", n_pairs=t["n_items"],
                 n_humans=len(humans), n_ties=np.nan, margin=margin, note=MEDQADE_BIAS)
    hum = t["role"] == "humans"
    if hum.any() and t.loc[hum, "estimate"].isna().all():
        t.loc[hum, "note"] = (MEDQADE_BIAS + "; the ceiling is the plain mean of per-human values and at least one "
                              "is undefined on this panel (too few items or one category), so it is NaN")
    return JudgeComparison(as_comparison_table(t), pd.DataFrame(), "medqade", metric, _ci_method(n_boot, seed),
                           tuple(humans), tuple(judges))


def single_reference(df, reference: str, judges, *, margin: float = 0.05, **kw) -> pd.DataFrame:
    """MedQADE's design with one reference rater (an adjudicated expert): judges only, no human ceiling."""
    t = judge_vs_ceiling(df, [reference], judges, reference=reference, margin=margin, **kw)
    t = t.assign(role=t["role"].replace({"ceiling": "humans"}), design="medqade", n_pairs=t["n_items"],
                 n_humans=1, n_ties=_NAN, margin=margin,
                 note=f"MedQADE design with one reference rater ({reference}): no human ceiling")
    return as_comparison_table(t)
