"""Tidy tables of many results: :func:`agreement_table`, :func:`pairwise_matrix` and :func:`agreement_report`
(the table behind ``medeval agreement`` and the notebook's summary)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.agreement import registry
from medeval_kit.agreement.compute import agreement, agreement_many, build
from medeval_kit.agreement.data import AgreementError, check_overlap, prepare
from medeval_kit.agreement.designs import judge_vs_humans
from medeval_kit.agreement.paradox import landis_koch
from medeval_kit.agreement.result import finish
from medeval_kit.agreement.weights import WEIGHT_NAMES
from medeval_kit.results import RESULT_COLUMNS, result_frame

__all__ = ["DEFAULT_METRICS", "REPORT_COLUMNS", "agreement_table", "pairwise_matrix", "agreement_report",
           "split_metric"]

DEFAULT_METRICS = ("percent_agreement", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha")
REPORT_COLUMNS = ["metric", "raters", *RESULT_COLUMNS, "n_raters", "n_missing"]
"""The columns of :func:`agreement_report` after ``[criterion,] section``; extras follow."""
_NAN = float("nan")


def agreement_table(
    df: pd.DataFrame,
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    by: Sequence[str] | None = ("criterion",),
    landis: bool = False,
    **kw,
) -> pd.DataFrame:
    """Tidy table: one row per (group, metric) in the result contract; ``by`` columns absent from ``df`` are ignored."""
    by = [b for b in (by or []) if b in df.columns]
    groups = df.groupby(by, sort=True, dropna=False) if by else [((), df)]
    rows = []
    for key, sub in groups:
        key = key if isinstance(key, tuple) else (key,)
        for m in metrics:
            fr = agreement(sub.drop(columns=by) if by else sub, m, **kw).to_frame()
            for b, k in zip(by, key):
                fr.insert(0, b, k)
            rows.append(fr)
    out = pd.concat(rows, ignore_index=True)
    if landis:
        out["landis_koch"] = landis_koch(out["estimate"])
    return out


def pairwise_matrix(
    df: pd.DataFrame,
    metric: str = "cohen_kappa",
    *,
    item="item",
    rater="rater",
    label="label",
    raters=None,
    categories=None,
    weights=None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    ci_method: str = "percentile",
    seed: int = 0,
    no_overlap: str = "raise",
) -> pd.DataFrame:
    """Every rater pair: rater_a, rater_b, metric and the result contract (+ n_missing), one row per pair.

    ``no_overlap="raise"`` (default) stops on a pair without shared items; ``"nan"`` reports NaN.
    """
    coef = registry.get(metric)
    level = "ordinal" if weights else "nominal"
    data = prepare(df, item=item, rater=rater, label=label, raters=raters, categories=categories, level=level)
    rows = []
    for a, b in itertools.combinations(data.raters, 2):
        if not ((data.col(a) >= 0) & (data.col(b) >= 0)).any():
            if no_overlap == "raise":
                check_overlap(data, a, b)
            rows.append(dict(rater_a=a, rater_b=b, metric=metric, estimate=_NAN, n_items=0,
                             n_missing=int(((data.col(a) >= 0) | (data.col(b) >= 0)).sum()),
                             note="no overlapping items"))
            continue
        st, _ = build(coef, data.subset([a, b]), weights=weights)
        n_miss = int(((data.col(a) >= 0) ^ (data.col(b) >= 0)).sum())  # items only one of the two labelled
        res = finish(metric, st, n_raters=2, n_missing=n_miss, raters=(a, b), level=level, n_boot=n_boot,
                     confidence=confidence, ci_method=ci_method, seed=seed)
        rows.append(dict(rater_a=a, rater_b=b, metric=res.metric, estimate=res.estimate, ci_low=res.ci_low,
                         ci_high=res.ci_high, ci_method=res.ci_method, n_items=res.n_items, n_missing=n_miss,
                         note=res.note))
    return result_frame(rows, keys=["rater_a", "rater_b", "metric"])


def split_metric(name: str) -> tuple[str, str | None]:
    """``cohen_kappa_linear`` -> (``cohen_kappa``, ``linear``); other names -> (name, None)."""
    base, _, suffix = name.rpartition("_")
    return (base, suffix) if suffix in WEIGHT_NAMES and base else (name, None)


def _undefined(metric, raters, reason) -> pd.DataFrame:
    return result_frame([dict(metric=metric, raters="|".join(map(str, raters or [])), estimate=np.nan, n_items=0,
                              n_raters=len(raters or []), n_missing=0, note=f"undefined: {reason}")],
                        keys=["metric", "raters"])


def _coefficient_rows(sub, metrics, *, level, categories, raters, **kw) -> list[pd.DataFrame]:
    """One row per metric; a metric undefined on this panel is a NaN row with the reason."""
    split = [split_metric(name) for name in metrics]
    levels = [level if m == "krippendorff_alpha" else None for m, _ in split]  # weighted ones infer ordinal
    results = agreement_many(sub, [m for m, _ in split], levels=levels, weights=[w for _, w in split],
                             raters=raters, categories=categories, **kw)  # one pass over the item draws
    rows = [res.to_frame() if not isinstance(res, AgreementError)  # undefined on this design: say why
            else _undefined(name, raters or sorted(sub["rater"].unique(), key=str), res)
            for name, res in zip(metrics, results)]
    return [r.assign(section="agreement") for r in rows]


def _first_pairwise(metrics) -> tuple[str, str | None]:
    """The metric of the pairwise and judges-vs-humans sections: cohen_kappa if asked, else the first pairwise."""
    pairwise = set(registry.names(pairwise=True))
    pair_names = [split_metric(n) for n in metrics if split_metric(n)[0] in pairwise]
    return next((p for p in pair_names if p[0] == "cohen_kappa"), pair_names[0] if pair_names else ("cohen_kappa", None))


def _vs_humans_rows(sub, humans, judges, metric, weights, *, design, categories, margin, n_boot, confidence,
                    seed) -> pd.DataFrame:
    res = judge_vs_humans(sub, humans, judges, design=design, metric=metric, categories=categories, weights=weights,
                          margin=margin, n_boot=n_boot, confidence=confidence, seed=seed)
    t = res.to_frame()
    return t.assign(section="judge_vs_humans", raters=t["rater"], n_missing=0,
                    n_raters=np.where(t["role"] == "humans", len(res.humans), 1),
                    metric=t["metric"] + " (" + t["design"] + ")").drop(columns=["rater", "design"])


def agreement_report(
    df: pd.DataFrame,
    *,
    metrics=DEFAULT_METRICS,
    level: str = "nominal",
    categories=None,
    raters=None,
    pairwise: bool = False,
    ceiling: bool = False,
    humans=None,
    judges=None,
    design: str = "loo",
    margin: float = 0.05,
    criterion: str | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    ci_method: str = "percentile",
    seed: int = 0,
    notes=(),
) -> pd.DataFrame:
    """One tidy row per result: the table behind ``medeval agreement`` and the notebook's summary.

    Columns: [criterion,] section, metric, raters, the result contract (estimate, ci_low, ci_high,
    ci_method, n_items, n_failed, note), n_raters, n_missing, then extras. ``metrics`` may name
    weighted kappas as ``cohen_kappa_linear`` / ``cohen_kappa_quadratic``; ``level`` applies to
    Krippendorff's alpha. A metric that is undefined on this panel (e.g. Light's kappa when two
    raters share no item) is a NaN row with the reason. ``pairwise`` adds every rater pair (NaN
    for pairs that share no item). ``ceiling`` adds :func:`~medeval_kit.agreement.judge_vs_humans`
    rows (``section`` = ``judge_vs_humans``, extra columns delta ...) for the first pairwise
    metric; it needs ``humans`` or a ``rater_kind`` column.
    """
    groups = [(None, df)]
    if criterion and criterion in df.columns:
        groups = [(c, sub.drop(columns=[criterion])) for c, sub in df.groupby(criterion, sort=True)]
    boot = dict(n_boot=n_boot, confidence=confidence, seed=seed)
    metric, weights = _first_pairwise(metrics)
    frames = []
    for crit, sub in groups:
        rows = _coefficient_rows(sub, metrics, level=level, categories=categories, raters=raters,
                                 ci_method=ci_method, **boot)
        if pairwise:
            pm = pairwise_matrix(sub, metric, raters=raters, categories=categories, weights=weights,
                                 ci_method=ci_method, no_overlap="nan", **boot)
            rows.append(pm.assign(raters=pm["rater_a"].astype(str) + "|" + pm["rater_b"].astype(str), n_raters=2,
                                  section="pairwise").drop(columns=["rater_a", "rater_b"]))
        if ceiling:
            rows.append(_vs_humans_rows(sub, humans, judges, metric, weights, design=design, categories=categories,
                                        margin=margin, **boot))
        out = pd.concat(rows, ignore_index=True)
        if crit is not None:
            out.insert(0, "criterion", crit)
        frames.append(out)
    out = pd.concat(frames, ignore_index=True)
    if notes:
        extra = "; ".join(notes)
        out["note"] = [f"{n}; {extra}" if isinstance(n, str) and n else extra for n in out["note"]]
    lead = (["criterion"] if "criterion" in out.columns else []) + ["section"] + REPORT_COLUMNS
    return out[lead + [c for c in out.columns if c not in lead and c != "level"]]
