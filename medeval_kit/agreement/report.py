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
from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.results import RESULT_COLUMNS, result_frame

__all__ = ["DEFAULT_METRICS", "REPORT_COLUMNS", "MIN_OVERLAP", "agreement_table", "pairwise_matrix",
           "agreement_report", "split_metric", "hidden_pairs_note"]

DEFAULT_METRICS = ("percent_agreement", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha")
REPORT_COLUMNS = ["metric", "raters", *RESULT_COLUMNS, "n_raters", "n_missing"]
"""The columns of :func:`agreement_report` after ``[criterion,] section``; extras follow."""
_NAN = float("nan")
MIN_OVERLAP = 10
"""Pairwise tables leave out rater pairs that share fewer items than this (``min_overlap``, ``--min-overlap``)."""


@shared_docs
@takes_columns("item", "rater", "label", "criterion")
def agreement_table(
    df: pd.DataFrame,
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    by: Sequence[str] | None = ("criterion",),
    landis: bool = False,
    columns: Columns = None,
    **kw,
) -> pd.DataFrame:
    """Tidy table of several coefficients: one row per (group, metric) in the result contract.

    Parameters
    ----------
    df : DataFrame
        Long annotations (``item``, ``rater``, ``label`` [, ``criterion``]).
    metrics : sequence of str, default DEFAULT_METRICS
        Registered coefficients (percent agreement, Cohen's and Fleiss' kappa, Krippendorff's alpha).
    by : sequence of str, optional
        Columns to group by (default ``criterion``); those absent from ``df`` are ignored.
    landis : bool, default False
        Add a ``landis_koch`` column with the Landis & Koch (1977) word for each estimate.
    {columns}
    **kw
        The keywords of :func:`agreement` (``raters``, ``categories``, ``n_boot``, ``seed`` ...).

    Returns
    -------
    DataFrame
        The ``by`` columns, then one :meth:`AgreementResult.to_frame` row per group and metric
        (``metric``, the result contract, ``n_raters``, ``n_missing``, ``raters``, ``level``).

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> t = agreement_table(synthetic_panel(n_items=40, seed=1), ["cohen_kappa", "fleiss_kappa"], n_boot=0)
    >>> list(t["metric"])
    ['cohen_kappa', 'fleiss_kappa']
    """
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


def _pairwise(df, metric, *, raters, categories, weights, n_boot, confidence, ci_method, seed,
              no_overlap, min_overlap) -> tuple[pd.DataFrame, int, int]:
    """(the shown pairs' rows, pairs hidden for sharing fewer than ``min_overlap`` items, every pair)."""
    coef = registry.get(metric)
    if int(min_overlap) < 0:
        raise AgreementError(f"min_overlap must be 0 or more; not {min_overlap!r}")
    level = "ordinal" if weights else "nominal"
    data = prepare(df, raters=raters, categories=categories, level=level)
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


@shared_docs
@takes_columns("item", "rater", "label")
def pairwise_matrix(
    df: pd.DataFrame,
    metric: str = "cohen_kappa",
    *,
    columns: Columns = None,
    raters: Sequence | None = None,
    categories: Sequence | None = None,
    weights=None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    ci_method: str = "percentile",
    seed: int = 0,
    no_overlap: str = "raise",
    min_overlap: int = MIN_OVERLAP,
) -> pd.DataFrame:
    """Every rater pair's agreement: one row per pair in the result contract.

    On a sparse panel of 107 physicians, 5,541 of 5,778 pairs share no item: pairs that share fewer
    than ``min_overlap`` items are left out and every row's ``note`` says how many were
    (``"5541 of 5778 rater pairs share fewer than 10 items and are hidden (min_overlap=0 shows
    them)"``). Whatever ``min_overlap``, no CI is computed from fewer than 10 shared items
    (:func:`~medeval_kit.agreement.compute.ci_rule`).

    Parameters
    ----------
    df : DataFrame
        Long annotations (``item``, ``rater``, ``label``).
    metric : str, default "cohen_kappa"
        A registered coefficient with a two-rater form.
    {columns}
    raters : sequence, optional
        The raters to pair; default every rater.
    categories : sequence, optional
        The declared labels; default the labels seen.
    weights : {None, "linear", "quadratic"} or ndarray, optional
        Agreement weights, as in :func:`agreement`.
    {n_boot}
    {confidence}
    {ci_method}
    {seed}
    no_overlap : {"raise", "nan"}, default "raise"
        A pair without shared items stops the table (``"raise"``) or gets NaN (``"nan"``, with ``min_overlap=0``).
    min_overlap : int, default 10
        Pairs that share fewer items are left out; ``0`` keeps every pair.

    Returns
    -------
    DataFrame
        ``rater_a, rater_b, metric``, the result contract, and ``n_missing`` (items only one of the two labelled).

    Raises
    ------
    AgreementError
        A pair shares no item and ``no_overlap="raise"``; a negative ``min_overlap``.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> t = pairwise_matrix(synthetic_panel(n_items=40, n_humans=3, n_judges=0, seed=1), n_boot=0)
    >>> len(t)
    3
    """
    out, n_hidden, n_pairs = _pairwise(df, metric, raters=raters, categories=categories, weights=weights,
                                       n_boot=n_boot, confidence=confidence, ci_method=ci_method, seed=seed,
                                       no_overlap=no_overlap, min_overlap=min_overlap)
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


@shared_docs
@takes_columns("item", "rater", "label", "rater_kind", "criterion")
def agreement_report(
    df: pd.DataFrame,
    *,
    columns: Columns = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    level: str = "nominal",
    categories: Sequence | None = None,
    raters: Sequence | None = None,
    pairwise: bool = False,
    ceiling: bool = False,
    humans: Sequence | None = None,
    judges: Sequence | None = None,
    design: str = "loo",
    margin: float = 0.05,
    criterion: str | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    ci_method: str = "percentile",
    seed: int = 0,
    notes: Sequence[str] = (),
    min_overlap: int = MIN_OVERLAP,
) -> pd.DataFrame:
    """One tidy row per result: the table behind ``medeval agreement`` and the notebook's summary.

    A metric that is undefined on this panel (e.g. Light's kappa when two raters share no item) is a
    NaN row with the reason. With ``pairwise``, when pairs are left out, one more ``pairwise`` row with
    empty ``raters`` and NaN says how many (``"5541 of 5778 rater pairs share fewer than 10 items and are
    hidden (min_overlap=0 shows them)"``), in the table and in its CSV/JSON alike.

    Parameters
    ----------
    df : DataFrame
        Long annotations (``item``, ``rater``, ``label`` [, ``rater_kind``, ``criterion``]).
    {columns}
    metrics : sequence of str, default DEFAULT_METRICS
        Registered coefficients; weighted kappas as ``cohen_kappa_linear`` / ``cohen_kappa_quadratic``.
    level : {"nominal", "ordinal", "interval", "ratio"}, default "nominal"
        Measurement level for Krippendorff's alpha (the weighted kappas infer ordinal).
    categories : sequence, optional
        The declared labels, in order for ordinal data.
    raters : sequence, optional
        The raters to use; default every rater.
    pairwise : bool, default False
        Add every rater pair that shares at least ``min_overlap`` items (section ``pairwise``).
    ceiling : bool, default False
        Add :func:`~medeval_kit.agreement.judge_vs_humans` rows (section ``judge_vs_humans``, extra
        columns ``delta`` ...) for the first pairwise metric; needs ``humans`` or a ``rater_kind`` column.
    humans, judges : sequence, optional
        The human raters and the judges for ``ceiling``.
    design : {"loo", "pooled", "medqade"}, default "loo"
        The judge-vs-humans design for ``ceiling``.
    margin : float, default 0.05
        Non-inferiority margin for ``ceiling``.
    criterion : str, optional
        The column to group by, one block per value (``"criterion"``, or another column of ``df``);
        the blocks' ``criterion`` column holds the value. Default: one block.
    {n_boot}
    {confidence}
    {ci_method}
    {seed}
    notes : sequence of str, default ()
        Notes to append to every row's ``note`` (e.g. the label checks' findings).
    min_overlap : int, default 10
        Pairwise rows need at least this many shared items; ``0`` shows every pair.

    Returns
    -------
    DataFrame
        ``[criterion,] section, metric, raters``, the result contract (``estimate, ci_low, ci_high,
        ci_method, n_items, n_failed, note``), ``n_raters, n_missing``, then extras.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> t = agreement_report(synthetic_panel(n_items=40, seed=1), metrics=["cohen_kappa"], n_boot=0)
    >>> t[["section", "metric"]].values.tolist()
    [['agreement', 'cohen_kappa']]
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
            pm, n_hidden, n_pairs = _pairwise(sub, metric, raters=raters,
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
