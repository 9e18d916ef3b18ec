"""Tidy tables of many results: :func:`agreement_table`, :func:`pairwise_matrix` and :func:`agreement_report`
(the table behind ``medeval agreement`` and the notebook's summary)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.agreement import registry
from medeval_kit.agreement.compute import agreement, agreement_many, build, finish_with_rules
from medeval_kit.agreement.data import AgreementError, check_overlap, prepare
from medeval_kit.agreement.designs import judge_vs_humans
from medeval_kit.agreement.paradox import landis_koch
from medeval_kit.agreement.weights import WEIGHT_NAMES
from medeval_kit.results import RESULT_COLUMNS, result_frame

__all__ = ["DEFAULT_METRICS", "REPORT_COLUMNS", "MIN_OVERLAP", "agreement_table", "pairwise_matrix",
           "agreement_report", "split_metric", "hidden_pairs_note"]

DEFAULT_METRICS = ("percent_agreement", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha")
REPORT_COLUMNS = ["metric", "raters", *RESULT_COLUMNS, "n_raters", "n_missing"]
"""The columns of :func:`agreement_report` after ``[criterion,] section``; extras follow."""
_NAN = float("nan")
MIN_OVERLAP = 10
"""Pairwise tables leave out rater pairs that share fewer items than this (``min_overlap``, ``--min-overlap``)."""


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


def hidden_pairs_note(n_hidden: int, n_pairs: int, min_overlap: int) -> str:
    """``"5541 of 5778 rater pairs share fewer than 10 items and are hidden (min_overlap=0 shows them)"``."""
    return (f"{n_hidden} of {n_pairs} rater pairs share fewer than {min_overlap} items and are hidden "
            "(min_overlap=0 shows them)")


def _pairwise(df, metric, *, item, rater, label, raters, categories, weights, n_boot, confidence, ci_method, seed,
              no_overlap, min_overlap) -> tuple[pd.DataFrame, int, int]:
    """(the shown pairs' rows, pairs hidden for sharing fewer than ``min_overlap`` items, every pair)."""
    coef = registry.get(metric)
    if int(min_overlap) < 0:
        raise AgreementError(f"min_overlap must be 0 or more; not {min_overlap!r}")
    level = "ordinal" if weights else "nominal"
    data = prepare(df, item=item, rater=rater, label=label, raters=raters, categories=categories, level=level)
    labelled = (data.codes >= 0).astype(np.int64)
    shared = labelled.T @ labelled  # items each pair labelled both
    rows, n_pairs, n_hidden = [], 0, 0
    for (i, a), (j, b) in itertools.combinations(enumerate(data.raters), 2):
        n_pairs += 1
        if not shared[i, j] and no_overlap == "raise":
            check_overlap(data, a, b)
        if shared[i, j] < min_overlap:
            n_hidden += 1
            continue
        if not shared[i, j]:
            rows.append(dict(rater_a=a, rater_b=b, metric=metric, estimate=_NAN, n_items=0,
                             n_missing=int(((data.col(a) >= 0) | (data.col(b) >= 0)).sum()),
                             note="no overlapping items"))
            continue
        st, _ = build(coef, data.subset([a, b]), weights=weights)
        n_miss = int(((data.col(a) >= 0) ^ (data.col(b) >= 0)).sum())  # items only one of the two labelled
        res = finish_with_rules(metric, st, n_raters=2, n_missing=n_miss, raters=(a, b), level=level,
                                n_boot=n_boot, confidence=confidence, ci_method=ci_method, seed=seed)
        rows.append(dict(rater_a=a, rater_b=b, metric=res.metric, estimate=res.estimate, ci_low=res.ci_low,
                         ci_high=res.ci_high, ci_method=res.ci_method, n_items=res.n_items, n_missing=n_miss,
                         note=res.note))
    out = result_frame(rows, keys=["rater_a", "rater_b", "metric"])
    if "n_missing" not in out.columns:
        out["n_missing"] = pd.Series(dtype="int64")
    return out, n_hidden, n_pairs


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
    min_overlap: int = MIN_OVERLAP,
) -> pd.DataFrame:
    """Every rater pair: rater_a, rater_b, metric and the result contract (+ n_missing), one row per pair.

    ``no_overlap="raise"`` (default) stops on a pair without shared items; ``"nan"`` reports NaN.
    ``min_overlap`` (default 10): pairs that share fewer items are left out of the table (on a sparse
    panel of 107 physicians, 5,541 of 5,778 pairs share no item), and every row's ``note`` says how
    many were (``"5541 of 5778 rater pairs share fewer than 10 items and are hidden (min_overlap=0 shows
    them)"``); ``min_overlap=0`` keeps every pair. Whatever ``min_overlap``, no CI is computed from
    fewer than 10 shared items (:func:`~medeval_kit.agreement.compute.ci_rule`).
    """
    out, n_hidden, n_pairs = _pairwise(df, metric, item=item, rater=rater, label=label, raters=raters,
                                       categories=categories, weights=weights, n_boot=n_boot, confidence=confidence,
                                       ci_method=ci_method, seed=seed, no_overlap=no_overlap, min_overlap=min_overlap)
    if n_hidden and len(out):
        hidden = hidden_pairs_note(n_hidden, n_pairs, min_overlap)
        out["note"] = [f"{n}; {hidden}" if isinstance(n, str) and n else hidden for n in out["note"]]
    return out


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
    min_overlap: int = MIN_OVERLAP,
) -> pd.DataFrame:
    """One tidy row per result: the table behind ``medeval agreement`` and the notebook's summary.

    Columns: [criterion,] section, metric, raters, the result contract (estimate, ci_low, ci_high,
    ci_method, n_items, n_failed, note), n_raters, n_missing, then extras. ``metrics`` may name
    weighted kappas as ``cohen_kappa_linear`` / ``cohen_kappa_quadratic``; ``level`` applies to
    Krippendorff's alpha. A metric that is undefined on this panel (e.g. Light's kappa when two
    raters share no item) is a NaN row with the reason. ``pairwise`` adds every rater pair that
    shares at least ``min_overlap`` items (default 10; 0: every pair, NaN for pairs that share no
    item); when pairs are left out, one more ``pairwise`` row with empty ``raters`` and NaN says how
    many (``"5541 of 5778 rater pairs share fewer than 10 items and are hidden (min_overlap=0 shows
    them)"``), in the table and in its CSV/JSON alike. ``ceiling`` adds :func:`~medeval_kit.agreement.judge_vs_humans`
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
            pm, n_hidden, n_pairs = _pairwise(sub, metric, item="item", rater="rater", label="label", raters=raters,
                                              categories=categories, weights=weights, ci_method=ci_method,
                                              no_overlap="nan", min_overlap=min_overlap, **boot)
            rows.append(pm.assign(raters=pm["rater_a"].astype(str) + "|" + pm["rater_b"].astype(str), n_raters=2,
                                  section="pairwise").drop(columns=["rater_a", "rater_b"]))
            if n_hidden:
                rows.append(result_frame([dict(metric=metric, raters="", estimate=np.nan, n_items=0, n_raters=0,
                                               n_missing=0, note=hidden_pairs_note(n_hidden, n_pairs, min_overlap),
                                               section="pairwise")], keys=["metric", "raters"]))
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
