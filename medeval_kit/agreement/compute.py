""":func:`agreement` computes any registered coefficient by name, plus :func:`icc` and
:func:`fleiss_kappa_by_category`; the per-coefficient functions (``agreement.cohen_kappa`` ...) are in
:mod:`medeval_kit.agreement.functions` (generated from the registry, each a call of :func:`agreement`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from medeval_kit.agreement import registry
from medeval_kit.agreement.coefficients import category_kappa_stats
from medeval_kit.agreement.data import AgreementError, Data, count_matrix, prepare
from medeval_kit.agreement.engine import Stat, compact, point, replicates
from medeval_kit.agreement.forms import label_stat
from medeval_kit.agreement.icc import icc_forms, icc_stat
from medeval_kit.agreement.registry import Coefficient, Options
from medeval_kit.agreement.result import AgreementResult, check_ci, finish
from medeval_kit.agreement.weights import check_marginals, check_weight_basis, is_unweighted, weights_for
from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.stats import MIN_CI_ITEMS, ci_not_computed

__all__ = ["agreement", "agreement_many", "build", "effective_weights", "public_function", "icc",
           "fleiss_kappa_by_category", "ci_rule", "finish_with_rules", "PARAMETER_DOCS"]

PARAMETER_DOCS: dict[str, str] = {
    "df": """\
df : DataFrame
    Long annotations: one row per (item, rater) with its ``label`` (columns ``item``, ``rater``,
    ``label``; yours through ``columns``).""",
    "raters": """\
raters : sequence, optional
    The raters to use, in this order (reference-based coefficients score ``raters[1]`` against
    ``raters[0]``); default every rater, sorted.""",
    "categories": """\
categories : sequence, optional
    The declared labels, in order for ordinal data; default the labels seen.""",
    "level": """\
level : {"nominal", "ordinal", "interval", "ratio"}, optional
    Measurement level of the labels; default the coefficient's own (ordinal for linear/quadratic weights).""",
    "weights": """\
weights : {None, "linear", "quadratic"} or ndarray, optional
    Agreement weights of the chance-corrected coefficients and percent agreement: none, linear,
    quadratic, or a K x K matrix in ``categories`` order (symmetric, 1 on the diagonal, entries in [0, 1]).""",
    "weight_basis": """\
weight_basis : {"auto", "values", "positions"}, default "auto"
    What linear/quadratic distances measure: the category values (irrCAC), the ranks 0..K-1
    (sklearn), or the values when every label is a number, else the ranks.""",
    "fleiss_marginals": """\
fleiss_marginals : {"per_item", "pooled"}, default "per_item"
    Chance term of Fleiss' kappa and many-rater Scott's pi: per-item category shares averaged over
    items (Gwet 2014, irrCAC), or category counts pooled over items with two or more labels.""",
}
"""The agreement-specific parameter texts, shared by :func:`agreement` and the per-coefficient functions."""


def effective_weights(coef: Coefficient, weights):
    """The weights a coefficient uses: ``weights``, or its default (AC2: quadratic) when none are given."""
    return coef.default_weights if is_unweighted(weights) and coef.default_weights else weights


def build(coef: Coefficient | str, data: Data, *, weights=None, weight_basis: str = "auto",
          fleiss_marginals: str = "per_item") -> tuple[Stat, str]:
    """Statistic of ``coef`` on all raters of ``data``; returns (stat, note)."""
    coef = registry.get(coef) if isinstance(coef, str) else coef
    check_marginals(fleiss_marginals)
    w, wnote = (None, "")
    if coef.weighted:
        w, wnote = weights_for(data, effective_weights(coef, weights), weight_basis)
    if coef.family == "labels":
        return label_stat(coef, data, w, wnote, fleiss_marginals)
    if coef.family == "icc":
        st, note = icc_stat(coef, data)
        return compact(st, *data.row_groups()), note
    st, note = coef.fn(data, Options(w, fleiss_marginals))
    return compact(st, *data.row_groups()), "; ".join(n for n in (note, wnote) if n)


_LARGE_SAMPLE = ("normal interval",)
"""Analytic intervals (by their ``ci_method``) that rest on a large-sample SE: the bootstrap's item floor applies."""


def ci_rule(metric: str, st: Stat, *, n_boot: int, ci_method: str) -> tuple[int, str, str]:
    """The interval an agreement result gets: ``(n_boot, ci_method, note)`` to hand to :func:`finish`.

    The two rules every coefficient's CI follows, in one place:

    * ``n_boot=0`` gives the analytic interval where the coefficient has one (whatever ``ci_method``:
      no bootstrap method works without resamples), else no CI and a note saying so;
    * no bootstrap CI (percentile, BCa) from fewer than :data:`~medeval_kit.stats.MIN_CI_ITEMS` items
      (``"CI not computed: n_items = 4 < 10"``), and no large-sample analytic one either (the normal
      interval of Fleiss, Cohen & Everitt's SE of kappa). Intervals valid at small n keep their own
      conditions: Wilson's score interval, the ICCs' exact F intervals, Fisher's z (n > 3).
      :func:`~medeval_kit.agreement.engine.replicates` also refuses to resample such statistics, so the
      designs', ceilings' and ensembles' bootstraps obey the same floor.

    Parameters
    ----------
    metric : str
        The result's name, for the note.
    st : Stat
        The statistic (its ``n_items`` and whether it has an ``analytic`` interval).
    n_boot, ci_method : int, str
        What the caller asked for.

    Returns
    -------
    tuple of (int, str, str)
        The ``n_boot`` and ``ci_method`` to use and a note ("" when the asked interval is made).

    Examples
    --------
    >>> import numpy as np
    >>> st = Stat(np.ones((4, 1)), lambda S: S[:, 0], 4)
    >>> ci_rule("x", st, n_boot=1000, ci_method="percentile")
    (0, 'percentile', 'CI not computed: n_items = 4 < 10')
    """
    est = point(st) if st.n_items > 0 else np.nan
    if not np.isfinite(est):
        return n_boot, ci_method, ""  # undefined: finish says why
    if not n_boot or n_boot <= 0:
        if st.analytic is None:
            return 0, "percentile", f"no CI: n_boot=0 and {metric} has no analytic interval"
        ci_method = "analytic"
    few = ci_not_computed(st.n_items)
    if not few:
        return n_boot, ci_method, ""
    if ci_method == "analytic" and st.analytic is not None:
        how = st.analytic(st.totals(), est, 0.95)[2]
        return (0, "percentile", few) if any(k in how for k in _LARGE_SAMPLE) else (n_boot, ci_method, "")
    return (0, "percentile", few) if n_boot > 0 else (n_boot, ci_method, "")


def finish_with_rules(metric: str, st: Stat, *, n_boot: int, ci_method: str, note: str = "",
                      **kw) -> AgreementResult:
    """:func:`~medeval_kit.agreement.result.finish` under :func:`ci_rule` (the keywords of ``finish``)."""
    check_ci(ci_method, kw.get("confidence", 0.95))
    n_boot, ci_method, why = ci_rule(metric, st, n_boot=n_boot, ci_method=ci_method)
    return finish(metric, st, n_boot=n_boot, ci_method=ci_method,
                  note="; ".join(n for n in (note, why) if n), **kw)


def _level(coef: Coefficient, weights) -> str:
    """Measurement level when the caller gives none: linear/quadratic weights need ordered labels."""
    w = effective_weights(coef, weights)
    ordered = isinstance(w, str) and not is_unweighted(w)  # a matrix carries its own structure
    if coef.level != "nominal":
        return coef.level
    return "ordinal" if ordered and coef.weighted else "nominal"


def _result_name(coef: Coefficient, weights) -> str:
    w = effective_weights(coef, weights)
    if not coef.weighted or is_unweighted(w):
        return coef.name
    return f"{coef.name}_{w}" if isinstance(w, str) else f"{coef.name}_custom"


@shared_docs
@takes_columns("item", "rater", "label")
def agreement(
    df: pd.DataFrame,
    metric: str = "cohen_kappa",
    *,
    columns: Columns = None,
    raters: Sequence | None = None,
    categories: Sequence | None = None,
    level: str | None = None,
    weights: str | np.ndarray | None = None,
    weight_basis: str = "auto",
    fleiss_marginals: str = "per_item",
    n_boot: int = 1000,
    confidence: float = 0.95,
    ci_method: str = "percentile",
    seed: int = 0,
    source: str | None = None,
) -> AgreementResult:
    """Compute ``metric`` (any registered coefficient, :data:`METRICS`) on a long annotations table, with a CI.

    Two raters give the two-rater form; more give the many-rater form (Light's mean pairwise
    kappa for ``cohen_kappa``; Fleiss for ``scott_pi``). ``accuracy``/``macro_f1`` treat the first
    of ``raters`` as the reference. ``categories`` declares the labels (in order for ordinal data).
    CIs resample items (``ci_method`` ``"percentile"`` or ``"bca"``, ``n_boot`` resamples) or are
    analytic (``"analytic"``: Wilson for proportions, Fleiss-Cohen-Everitt for Cohen's kappa, Fisher z
    for correlations, F intervals for ICCs; the bootstrap for coefficients without one). ``n_boot=0``
    gives the analytic interval where the coefficient has one, else no CI (the note says so). No bootstrap
    or large-sample CI is computed from fewer than 10 items (:data:`~medeval_kit.stats.MIN_CI_ITEMS`; see
    :func:`ci_rule`).

    ``weight_basis`` matters only for linear/quadratic weights: ``"values"`` and ``"positions"`` agree
    on evenly spaced scores such as 1..5; on a scale like (1, 2, 5) values give 1 -> 2 more credit than
    2 -> 5. The default follows the labels' own meaning; pass ``"positions"`` for arbitrary numeric codes.
    ``fleiss_marginals`` differs between its two conventions only when items carry different numbers of labels.

    Parameters
    ----------
    df : DataFrame
        Long annotations: one row per (item, rater) with its ``label`` (columns ``item``, ``rater``,
        ``label``; yours through ``columns``).
    metric : str, default "cohen_kappa"
        A registered coefficient (:data:`METRICS`, including plugins' and the ICC forms).
    {columns}
    raters : sequence, optional
        The raters to use, in this order (reference-based coefficients score ``raters[1]`` against
        ``raters[0]``); default every rater, sorted.
    categories : sequence, optional
        The declared labels, in order for ordinal data; default the labels seen.
    level : {"nominal", "ordinal", "interval", "ratio"}, optional
        Measurement level of the labels; default the coefficient's own (ordinal for linear/quadratic weights).
    weights : {None, "linear", "quadratic"} or ndarray, optional
        Agreement weights of the chance-corrected coefficients and percent agreement: none, linear,
        quadratic, or a K x K matrix in ``categories`` order (symmetric, 1 on the diagonal, entries in [0, 1]).
    weight_basis : {"auto", "values", "positions"}, default "auto"
        What linear/quadratic distances measure: the category values (irrCAC), the ranks 0..K-1
        (sklearn), or the values when every label is a number, else the ranks.
    fleiss_marginals : {"per_item", "pooled"}, default "per_item"
        Chance term of Fleiss' kappa and many-rater Scott's pi: per-item category shares averaged over
        items (Gwet 2014, irrCAC), or category counts pooled over items with two or more labels.
    {n_boot}
    {confidence}
    {ci_method}
    {seed}
    {source}

    Returns
    -------
    AgreementResult
        The estimate, its interval and denominators; ``.to_frame()`` is one row of the result contract
        (``metric, estimate, ci_low, ci_high, ci_method, n_items, n_failed, note, n_raters, n_missing,
        raters, level``).

    Raises
    ------
    AgreementError
        An unknown metric, a design the coefficient cannot take (e.g. one rater), unknown labels.

    Examples
    --------
    >>> import pandas as pd
    >>> a = pd.DataFrame({"item": list("112233"), "rater": ["x", "y"] * 3, "label": list("AAABBB")})
    >>> agreement(a, "percent_agreement", n_boot=0).estimate
    0.6666666666666666
    >>> b = a.rename(columns={"item": "case_id"})
    >>> agreement(b, "percent_agreement", n_boot=0, columns={"item": "case_id"}).estimate
    0.6666666666666666
    """
    res = agreement_many(df, [metric], raters=raters, categories=categories,
                         levels=[level], weights=[weights], weight_basis=weight_basis,
                         fleiss_marginals=fleiss_marginals, n_boot=n_boot, confidence=confidence,
                         ci_method=ci_method, seed=seed, source=source)[0]
    if isinstance(res, AgreementError):
        raise res
    return res


def agreement_many(
    df: pd.DataFrame,
    metrics: Sequence[str],
    *,
    levels: Sequence[str | None] | None = None,
    weights: Sequence | None = None,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    raters: Sequence | None = None,
    categories: Sequence | None = None,
    weight_basis: str = "auto",
    fleiss_marginals: str = "per_item",
    n_boot: int = 1000,
    confidence: float = 0.95,
    ci_method: str = "percentile",
    seed: int = 0,
    source: str | None = None,
) -> list[AgreementResult | AgreementError]:
    """:func:`agreement` for several metrics on one table: one result per metric, or the AgreementError that
    leaves it undefined on this panel (the others go on); SchemaError is raised.

    ``levels`` and ``weights`` (one per metric, None = the coefficient's default) are as in
    :func:`agreement`. The table is checked once per level and every bootstrap shares one pass over
    the item draws; with the same ``seed`` the results equal separate :func:`agreement` calls.
    """
    levels = list(levels) if levels is not None else [None] * len(metrics)
    weights = list(weights) if weights is not None else [None] * len(metrics)
    data_by_level: dict[str, Data | AgreementError] = {}
    built: list[tuple | AgreementError] = []
    for metric, lv, w in zip(metrics, levels, weights):
        try:
            coef = registry.get(metric)
            check_weight_basis(weight_basis)
            check_marginals(fleiss_marginals)
            lv = lv or _level(coef, w)
            if lv not in data_by_level:
                try:
                    data_by_level[lv] = prepare(df, item=item, rater=rater, label=label, raters=raters,
                                                categories=categories, level=lv, source=source)
                except AgreementError as exc:
                    data_by_level[lv] = exc
            data = data_by_level[lv]
            if isinstance(data, AgreementError):
                raise data
            st, note = build(coef, data, weights=w, weight_basis=weight_basis, fleiss_marginals=fleiss_marginals)
            built.append((coef, w, lv, data, st, note))
        except AgreementError as exc:
            built.append(exc)
    try:
        reps = _shared_replicates([b[4] for b in built if not isinstance(b, AgreementError)], n_boot=n_boot,
                                  confidence=confidence, ci_method=ci_method, seed=seed)
    except AgreementError as exc:  # a bad ci_method or confidence: every metric says so
        return [exc] * len(built)
    out: list[AgreementResult | AgreementError] = []
    for b in built:
        if isinstance(b, AgreementError):
            out.append(b)
            continue
        coef, w, lv, data, st, note = b
        out.append(finish_with_rules(_result_name(coef, w), st, n_raters=len(data.raters),
                                     n_missing=data.n_missing, raters=data.raters, level=lv, n_boot=n_boot,
                                     confidence=confidence, ci_method=ci_method, seed=seed, note=note,
                                     reps=reps.get(id(st)),
                                     n_failed=st.n_rows - st.n_items if coef.family == "icc" else 0))
    return out


def _shared_replicates(stats: list[Stat], *, n_boot: int, confidence: float, ci_method: str,
                       seed) -> dict[int, np.ndarray]:
    """Bootstrap replicates of every statistic that :func:`finish` will resample, in one pass over the draws."""
    check_ci(ci_method, confidence)
    if not n_boot or n_boot <= 0:
        return {}
    need = [st for st in stats if st.n_items >= MIN_CI_ITEMS
            and not (ci_method == "analytic" and st.analytic is not None) and np.isfinite(point(st))]
    out: dict[int, np.ndarray] = {}
    for n in {st.n_rows for st in need}:
        same = [st for st in need if st.n_rows == n]
        for st, col in zip(same, replicates(same, n_boot, seed).T):
            out[id(st)] = col
    return out


@functools.cache
def _public(name: str) -> Callable[..., AgreementResult]:
    @takes_columns("item", "rater", "label")
    def f(df, *, columns=None, raters=None, categories=None, level=None, weights=None, weight_basis="auto",
          fleiss_marginals="per_item", n_boot=1000, confidence=0.95, ci_method="percentile", seed=0, source=None):
        return agreement(df, name, raters=raters, categories=categories, level=level, weights=weights,
                         weight_basis=weight_basis, fleiss_marginals=fleiss_marginals, n_boot=n_boot,
                         confidence=confidence, ci_method=ci_method, seed=seed, source=source)

    f.__name__ = f.__qualname__ = name
    f.__module__ = "medeval_kit.agreement"
    f.__doc__ = (registry.get(name).fn.__doc__ or "").rstrip() + (
        "\n\nSame keywords as :func:`agreement`; returns an :class:`AgreementResult`.")
    return f


def public_function(name: str) -> Callable[..., AgreementResult]:
    """``agreement.<name>(df, ...)`` for a coefficient registered after import (a plugin's, a test's).

    The built-in coefficients are real functions (:mod:`medeval_kit.agreement.functions`); this serves
    the others through ``agreement.__getattr__``.

    Parameters
    ----------
    name : str
        A registered coefficient.

    Returns
    -------
    callable
        :func:`agreement` with ``metric=name`` and the same keywords.
    """
    registry.get(name)
    return _public(name)


@shared_docs
@takes_columns("item", "rater", "label")
def icc(df: pd.DataFrame, *, form: str = "icc2", columns: Columns = None, raters: Sequence | None = None,
        n_boot: int = 1000, confidence: float = 0.95, ci_method: str = "analytic", seed: int = 0) -> AgreementResult:
    """Intraclass correlation in the Shrout & Fleiss (1979) forms.

    Analytic F intervals by default; items missing a rater are dropped (counted in ``n_failed``).

    Parameters
    ----------
    df : DataFrame
        Long annotations with numeric labels: one row per (item, rater) (columns ``item``, ``rater``,
        ``label``; yours through ``columns``).
    form : {"icc1", "icc2", "icc3", "icc1k", "icc2k", "icc3k"}, default "icc2"
        ``icc1`` one-way random, ``icc2`` two-way random (absolute agreement), ``icc3`` two-way mixed
        (consistency); the ``k`` forms are their average-measure versions.
    {columns}
    raters : sequence, optional
        The raters to use; default every rater.
    {n_boot}
    {confidence}
    ci_method : {"analytic", "percentile", "bca"}, default "analytic"
        The exact F interval, or an item-bootstrap interval.
    {seed}

    Returns
    -------
    AgreementResult
        The ICC with its interval; ``.to_frame()`` is one result-contract row.

    Raises
    ------
    AgreementError
        An unknown ``form``.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3, 4, 4], "rater": ["a", "b"] * 4,
    ...                   "label": [1.0, 1.5, 2.0, 2.5, 3.0, 2.5, 4.0, 4.5]})
    >>> round(icc(t, form="icc3").estimate, 3)
    0.923
    """
    if form not in icc_forms():
        raise AgreementError(f"form must be one of {tuple(icc_forms())}; not {form!r}")
    return agreement(df, form, raters=raters, level="interval", n_boot=n_boot, confidence=confidence,
                     ci_method=ci_method, seed=seed)


@shared_docs
@takes_columns("item", "rater", "label")
def fleiss_kappa_by_category(
    df: pd.DataFrame,
    *,
    columns: Columns = None,
    raters: Sequence | None = None,
    categories: Sequence | None = None,
    fleiss_marginals: str = "per_item",
    n_boot: int = 1000,
    confidence: float = 0.95,
    ci_method: str = "percentile",
    seed: int = 0,
) -> pd.DataFrame:
    """Fleiss' (1971) kappa_j for each category.

    kappa_j is Fleiss' kappa of the labels collapsed to "j" versus "not j" (Fleiss 1971, his
    kappa_j); with unequal labels per item the share p_j follows ``fleiss_marginals`` as in
    :func:`fleiss_kappa`. A category nobody used, or the only one used, gives NaN with a note.
    All categories share one set of item resamples (seeded), so their CIs are paired.

    Parameters
    ----------
    df : DataFrame
        Long annotations: one row per (item, rater) with its ``label`` (columns ``item``, ``rater``,
        ``label``; yours through ``columns``).
    {columns}
    raters : sequence, optional
        The raters to use (at least two); default every rater.
    categories : sequence, optional
        The declared labels; default the labels seen.
    fleiss_marginals : {"per_item", "pooled"}, default "per_item"
        Chance term: per-item category shares averaged over items, or pooled category counts.
    {n_boot}
    {confidence}
    {ci_method}
    {seed}

    Returns
    -------
    DataFrame
        One row per category: ``category`` and the result contract (``estimate, ci_low, ci_high,
        ci_method, n_items, n_failed, note``).

    Raises
    ------
    AgreementError
        Fewer than two raters.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> t = fleiss_kappa_by_category(synthetic_panel(n_items=40, seed=1), n_boot=0)
    >>> list(t["category"])
    ['A', 'B', 'tie']
    """
    data = prepare(df, raters=raters, categories=categories)
    if len(data.raters) < 2:
        raise AgreementError(f"fleiss_kappa_by_category needs at least two raters; got {data.raters}")
    stats = category_kappa_stats(data.codes, data.K, fleiss_marginals)
    used = count_matrix(data.codes, data.K).sum(0)
    frames = []
    for cat, st, n_used in zip(data.categories, stats, used):
        note = ""
        if n_used == 0:
            note = f"category {cat!r} never used: kappa_j undefined"
        elif n_used == used.sum():
            note = f"category {cat!r} is the only one used: kappa_j undefined"
        res = finish_with_rules("fleiss_kappa_j", st, n_raters=len(data.raters), n_missing=data.n_missing,
                                raters=data.raters, level="nominal", n_boot=n_boot, confidence=confidence,
                                ci_method=ci_method, seed=seed, note=note)
        frames.append(res.to_frame().drop(columns=["metric", "n_raters", "n_missing", "raters", "level"])
                      .assign(category=cat))
    cols = ["category", "estimate", "ci_low", "ci_high", "ci_method", "n_items", "n_failed", "note"]
    return pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)
