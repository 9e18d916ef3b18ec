""":func:`agreement` computes any registered coefficient by name; one public function per coefficient reads
the registry (``agreement.cohen_kappa`` ...), plus :func:`icc` and :func:`fleiss_kappa_by_category`."""

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
from medeval_kit.stats import MIN_CI_ITEMS, ci_not_computed

__all__ = ["agreement", "agreement_many", "build", "effective_weights", "public_function", "icc",
           "fleiss_kappa_by_category", "ci_rule", "finish_with_rules"]


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


def agreement(
    df: pd.DataFrame,
    metric: str = "cohen_kappa",
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
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

    ``weights`` (chance-corrected coefficients, percent agreement): None, ``"linear"``,
    ``"quadratic"`` or a K x K agreement-weight matrix in ``categories`` order (symmetric, 1 on the
    diagonal, entries in [0, 1]). ``weight_basis`` says what linear/quadratic distances measure:
    ``"values"`` uses the category values (irrCAC, and Krippendorff's interval alpha),
    ``"positions"`` the ranks 0..K-1 (sklearn's ``cohen_kappa_score``), and ``"auto"`` (default)
    the values when every label is a number, else positions. The two agree on evenly spaced
    scores such as 1..5; on a scale like (1, 2, 5) values give 1 -> 2 more credit than 2 -> 5.
    The default follows the labels' own meaning; pass ``"positions"`` for arbitrary numeric codes.

    ``fleiss_marginals`` (Fleiss' kappa, many-rater Scott's pi): ``"per_item"`` (default) takes
    the chance term from per-item category shares averaged over items, as Gwet (2014) and R's
    irrCAC do; ``"pooled"`` pools category counts over items with two or more labels. They differ
    only when items carry different numbers of labels.

    >>> import pandas as pd
    >>> a = pd.DataFrame({"item": list("112233"), "rater": ["x", "y"] * 3, "label": list("AAABBB")})
    >>> agreement(a, "percent_agreement", n_boot=0).estimate
    0.6666666666666666
    """
    res = agreement_many(df, [metric], item=item, rater=rater, label=label, raters=raters, categories=categories,
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
    def f(df, *, item="item", rater="rater", label="label", raters=None, categories=None, level=None,
          weights=None, weight_basis="auto", fleiss_marginals="per_item", n_boot=1000, confidence=0.95,
          ci_method="percentile", seed=0, source=None):
        return agreement(df, name, item=item, rater=rater, label=label, raters=raters, categories=categories,
                         level=level, weights=weights, weight_basis=weight_basis, fleiss_marginals=fleiss_marginals,
                         n_boot=n_boot, confidence=confidence, ci_method=ci_method, seed=seed, source=source)

    f.__name__ = f.__qualname__ = name
    f.__module__ = "medeval_kit.agreement"
    f.__doc__ = (registry.get(name).fn.__doc__ or "").rstrip() + (
        "\n\nSame keywords as :func:`agreement`; returns an :class:`AgreementResult`.")
    return f


def public_function(name: str) -> Callable[..., AgreementResult]:
    """``agreement.<name>(df, ...)``: :func:`agreement` with ``metric=name`` for a registered coefficient."""
    registry.get(name)
    return _public(name)


def icc(df, *, form="icc2", item="item", rater="rater", label="label", raters=None, n_boot=1000,
        confidence=0.95, ci_method="analytic", seed=0) -> AgreementResult:
    """Intraclass correlation in the Shrout & Fleiss (1979) forms.

    ``form``: ``icc1`` (one-way random), ``icc2`` (two-way random, absolute agreement),
    ``icc3`` (two-way mixed, consistency), and their average-measure versions ``icc1k``,
    ``icc2k``, ``icc3k``. Analytic F intervals by default; items missing a rater are dropped
    (counted in ``n_failed``).
    """
    if form not in icc_forms():
        raise AgreementError(f"form must be one of {tuple(icc_forms())}; not {form!r}")
    return agreement(df, form, item=item, rater=rater, label=label, raters=raters, level="interval",
                     n_boot=n_boot, confidence=confidence, ci_method=ci_method, seed=seed)


def fleiss_kappa_by_category(
    df: pd.DataFrame,
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    raters: Sequence | None = None,
    categories: Sequence | None = None,
    fleiss_marginals: str = "per_item",
    n_boot: int = 1000,
    confidence: float = 0.95,
    ci_method: str = "percentile",
    seed: int = 0,
) -> pd.DataFrame:
    """Fleiss' (1971) kappa_j for each category: category + the result contract columns.

    kappa_j is Fleiss' kappa of the labels collapsed to "j" versus "not j" (Fleiss 1971, his
    kappa_j); with unequal labels per item the share p_j follows ``fleiss_marginals`` as in
    :func:`fleiss_kappa`. A category nobody used, or the only one used, gives NaN with a note.
    All categories share one set of item resamples (seeded), so their CIs are paired.
    """
    data = prepare(df, item=item, rater=rater, label=label, raters=raters, categories=categories)
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
