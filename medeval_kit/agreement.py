"""Agreement coefficients with honest uncertainty, and agreement study designs.

Everything works on a long ``annotations`` table (``item``, ``rater``, ``label`` [, ``criterion``]):

* coefficients: :func:`percent_agreement`, :func:`cohen_kappa` (unweighted, linear, quadratic, or a
  weight matrix; weights from category positions or values, ``weight_basis``),
  :func:`scott_pi`, :func:`fleiss_kappa` (Gwet's per-item chance shares with unequal numbers of
  ratings, like irrCAC; ``fleiss_marginals="pooled"`` for the pooled form),
  :func:`fleiss_kappa_by_category` (Fleiss' κ_j), :func:`conger_kappa`, :func:`brennan_prediger`, :func:`pabak`,
  :func:`gwet_ac1`, :func:`gwet_ac2`, :func:`krippendorff_alpha` (nominal, ordinal, interval,
  ratio; missing data allowed), :func:`icc` (Shrout-Fleiss forms), :func:`pearson`,
  :func:`spearman`, :func:`kendall`, :func:`accuracy` and :func:`macro_f1` against a reference;
  :func:`agreement` dispatches by name and :func:`agreement_table` makes a tidy table;
* uncertainty: bootstrap CIs that resample *items* (percentile or BCa, seeded), computed for all
  resamples at once from per-item count / coincidence features; analytic intervals where they
  exist (``ci_method="analytic"``: Fleiss-Cohen-Everitt SE of kappa, Wilson for agreement, Fisher
  z for correlations, F intervals for ICC);
* designs: :func:`pairwise_matrix`, :func:`majority_vote`, :func:`judge_vs_humans` (can this judge
  replace the humans? each judge scored exactly like a held-out human: symmetric leave-one-out or
  pooled pairs, any panel incl. sparse ones, paired bootstrap Δ, non-inferiority test),
  :func:`human_ceiling` and :func:`judge_vs_ceiling` (the MedQADE design, biased, kept to
  reproduce that paper),
  :func:`ensembles` (every odd-sized majority-vote subset of judges),
  :func:`prevalence_bias_indices` (the kappa paradox), :func:`landis_koch` (wording only);
* figures: :func:`plot_kappa_heatmap`, :func:`plot_forest`, :func:`plot_ensembles`;
* :func:`agreement_report`, the table behind the ``medeval agreement`` command (in ``_agreement_cli``),
  built on :func:`read_annotations`.

Every result carries ``estimate, ci_low, ci_high, n_items, n_raters, n_missing, method``; an
undefined coefficient (for example kappa when only one category occurs) is NaN with a ``note``.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from medeval_kit import _agreement_core as core
from medeval_kit import _agreement_designs as designs
from medeval_kit._agreement_core import AgreementError

__all__ = [
    "AgreementError",
    "AgreementResult",
    "METRICS",
    "agreement",
    "agreement_table",
    "percent_agreement",
    "cohen_kappa",
    "scott_pi",
    "fleiss_kappa",
    "conger_kappa",
    "fleiss_kappa_by_category",
    "brennan_prediger",
    "pabak",
    "gwet_ac1",
    "gwet_ac2",
    "krippendorff_alpha",
    "icc",
    "pearson",
    "spearman",
    "kendall",
    "accuracy",
    "macro_f1",
    "pairwise_matrix",
    "majority_vote",
    "human_ceiling",
    "judge_vs_ceiling",
    "judge_vs_humans",
    "JudgeComparison",
    "DESIGNS",
    "equal_noise_coverage",
    "compare_designs",
    "check_labels",
    "LabelWarning",
    "ensembles",
    "prevalence_bias_indices",
    "landis_koch",
    "kappa_from_p_c",
    "read_annotations",
    "plot_kappa_heatmap",
    "plot_forest",
    "plot_delta_forest",
    "plot_coverage",
    "plot_ensembles",
    "load_study",
    "StudyInputs",
    "user_study",
    "agreement_report",
    "DEFAULT_METRICS",
]

PAIR_METRICS = (
    "percent_agreement", "cohen_kappa", "scott_pi", "brennan_prediger", "pabak",
    "gwet_ac1", "gwet_ac2", "accuracy", "macro_f1",
)
MULTI_METRICS = ("fleiss_kappa", "conger_kappa")
ICC_FORMS = ("icc1", "icc2", "icc3", "icc1k", "icc2k", "icc3k")
CORRELATIONS = ("pearson", "spearman", "kendall")
METRICS = PAIR_METRICS + MULTI_METRICS + ("krippendorff_alpha",) + ICC_FORMS + CORRELATIONS
"""Every metric name :func:`agreement` accepts."""

_NAN = float("nan")


# --------------------------------------------------------------------------- result


@dataclass(frozen=True)
class AgreementResult:
    """One agreement statistic with its CI and denominators."""

    metric: str
    estimate: float
    ci_low: float
    ci_high: float
    n_items: int
    n_raters: int
    n_missing: int
    method: str
    note: str = ""
    raters: tuple = ()
    level: str = "nominal"
    details: pd.DataFrame | None = field(default=None, compare=False, repr=False)

    def to_frame(self) -> pd.DataFrame:
        """One tidy row (``raters`` joined with ``|``)."""
        row = {k: v for k, v in asdict(self).items() if k != "details"}
        row["raters"] = "|".join(map(str, self.raters))
        return pd.DataFrame([row])

    def summary(self) -> str:
        """A short human-readable line, e.g. ``cohen_kappa = 0.852 [0.80, 0.89] (n=999 items, 2 raters)``."""
        ci = "" if math.isnan(self.ci_low) else f" [{self.ci_low:.3f}, {self.ci_high:.3f}]"
        est = "NaN" if math.isnan(self.estimate) else f"{self.estimate:.3f}"
        who = f" {', '.join(map(str, self.raters))};" if self.raters and len(self.raters) <= 4 else ""
        note = f" note: {self.note}" if self.note else ""
        return (
            f"{self.metric} = {est}{ci} ({self.n_items} items, {self.n_raters} raters,{who} "
            f"{self.n_missing} missing; {self.method}){note}"
        )

    def __float__(self) -> float:
        return float(self.estimate)

    def _repr_html_(self) -> str:
        return self.to_frame().to_html(index=False)


# --------------------------------------------------------------------------- engine glue


def _method_name(ci_method: str, n_boot: int, seed) -> str:
    kind = {"percentile": "percentile", "bca": "BCa"}[ci_method]
    return f"bootstrap {kind} over items (B={n_boot}, seed={seed})"


def _finish(metric, st: core.Stat, *, n_raters, n_missing, raters, level, n_boot, ci, ci_method, seed, note="",
            details=None) -> AgreementResult:
    """Point estimate, CI and note for one statistic."""
    if ci_method not in ("percentile", "bca", "analytic"):
        raise AgreementError(f"ci_method must be 'percentile', 'bca' or 'analytic'; not {ci_method!r}")
    if not 0 < ci < 1:
        raise AgreementError(f"ci must be a level between 0 and 1, e.g. 0.95; not {ci!r}")
    est = core.point(st) if st.n_items > 0 else _NAN
    notes = [n for n in (note, st.note) if n]
    lo = hi = _NAN
    method = "none"
    if not np.isfinite(est):
        if any("undefined" in n for n in notes):
            pass  # the caller already said why
        elif st.n_items == 0:
            notes.append("undefined: no item has the labels this coefficient needs")
        else:
            notes.append("undefined: chance agreement is 1 or the variance is 0 (e.g. a single category used)")
        return AgreementResult(metric, _NAN, _NAN, _NAN, st.n_items, n_raters, n_missing, "none",
                               "; ".join(notes), tuple(raters), level, details)
    if ci_method == "analytic" and st.analytic is not None:
        S = st.F.sum(0, keepdims=True)
        if getattr(st.analytic, "interval", False):
            lo, hi, method = st.analytic(S, est, ci)
        else:
            from scipy.stats import norm

            se = st.analytic(S, est)
            z = norm.ppf(0.5 + ci / 2)
            lo, hi, method = est - z * se, est + z * se, "analytic SE (Fleiss, Cohen & Everitt 1969), normal interval"
    elif n_boot and n_boot > 0:
        if ci_method == "analytic":
            notes.append(f"no analytic SE for {metric}; bootstrap percentile used")
            ci_method = "percentile"
        reps = core.replicates([st], n_boot, seed)[:, 0]
        jack = core.jackknife(st) if ci_method == "bca" else None
        lo, hi, n_ok = core.interval(est, reps, ci, ci_method, jack)
        method = _method_name(ci_method, n_boot, seed)
        if n_ok < n_boot:
            notes.append(f"{n_boot - n_ok} of {n_boot} resamples undefined and dropped")
    return AgreementResult(metric, float(est), float(lo), float(hi), st.n_items, n_raters, n_missing, method,
                           "; ".join(notes), tuple(raters), level, details)


_mean_stat = designs.mean_stat  # mean of several statistics on one item axis (Light's kappa)


def _overlap_check(data: core.Data, a, b):
    ok = (data.col(a) >= 0) & (data.col(b) >= 0)
    if not ok.any():
        raise AgreementError(
            f"raters {a!r} and {b!r} have no overlapping items (no item labelled by both); "
            "check the rater names or choose raters that share items"
        )


def _weights_for(data: core.Data, weights, weight_basis: str) -> tuple[np.ndarray | None, str]:
    """Resolve ``weights`` to a K x K matrix (None when unweighted) and a note on the basis used."""
    values = core.weight_values(data.categories, weight_basis)  # validates weight_basis
    if core.is_unweighted(weights):
        return None, ""
    w = core.agreement_weights(data.K, weights, values, data.categories)
    note = ""
    if isinstance(weights, str) and values is not None and data.K > 2:
        gaps = np.diff(np.sort(values))
        if not np.allclose(gaps, gaps[0]):
            note = (f"{weights} weights from the category values {data.categories} (unevenly spaced); "
                    "weight_basis='positions' weights by rank as sklearn does")
    return w, note


def _build(metric: str, data: core.Data, *, weights=None, form=None, weight_basis: str = "auto",
           fleiss_marginals: str = "per_item") -> tuple[core.Stat, str]:
    """Statistic for ``metric`` on all raters of ``data``; returns (stat, note)."""
    R = len(data.raters)
    K = data.K
    core.check_marginals(fleiss_marginals)
    if metric in ("gwet_ac2",) and core.is_unweighted(weights):
        weights = "quadratic"
    w, wnote = (None, "")
    if metric in PAIR_METRICS + MULTI_METRICS:
        w, wnote = _weights_for(data, weights, weight_basis)
    notes = [wnote] if wnote else []
    if metric in PAIR_METRICS:
        if R < 2:
            raise AgreementError(f"{metric} needs at least two raters; got {data.raters}")
        if R == 2 or metric in ("accuracy", "macro_f1"):
            if R != 2:
                raise AgreementError(f"{metric} compares one rater with a reference: pass raters=[reference, rater]")
            _overlap_check(data, *data.raters)
            return core.pair_stat(metric, data.codes[:, 0], data.codes[:, 1], K, w), "; ".join(notes)
        if metric == "cohen_kappa":
            pairs = list(itertools.combinations(range(R), 2))
            for i, j in pairs:
                _overlap_check(data, data.raters[i], data.raters[j])
            sts = [core.pair_stat(metric, data.codes[:, i], data.codes[:, j], K, w) for i, j in pairs]
            n = int(((data.codes >= 0).sum(1) >= 2).sum())
            notes.insert(0, f"{R} raters: Light's kappa (mean of {len(pairs)} pairwise Cohen kappas)")
            return _mean_stat(sts, n), "; ".join(notes)
        kind = "fleiss_kappa" if metric == "scott_pi" else metric
        notes.insert(0, f"{R} raters: many-rater form" + (" (Fleiss kappa)" if metric == "scott_pi" else ""))
        if kind == "fleiss_kappa":
            notes += _marginals_note(data, fleiss_marginals)
        return core.multi_stat(kind, data.codes, K, w, marginals=fleiss_marginals), "; ".join(notes)
    if metric in MULTI_METRICS:
        if R < 2:
            raise AgreementError(f"{metric} needs at least two raters; got {data.raters}")
        if metric == "conger_kappa":
            return core.conger_stat(data.codes, K, w), "; ".join(notes)
        notes += _marginals_note(data, fleiss_marginals)
        return core.multi_stat("fleiss_kappa", data.codes, K, w, marginals=fleiss_marginals), "; ".join(notes)
    if metric == "krippendorff_alpha":
        return core.alpha_stat(data.codes, K, data.level, data.values), ""
    if metric in ICC_FORMS or metric == "icc":
        form = form or (metric if metric != "icc" else "icc2")
        vals = _values(data)
        complete = np.isfinite(vals).all(1)
        st = core.icc_stat(vals[complete], form)
        pad = np.zeros((len(vals), st.F.shape[1]))
        pad[complete] = st.F
        st.F = pad
        dropped = int((~complete).sum())
        return st, (f"{dropped} items without a label from every rater dropped (ICC needs complete data)"
                    if dropped else "")
    if metric in CORRELATIONS:
        if R != 2:
            raise AgreementError(f"{metric} needs exactly two raters; got {data.raters}")
        _overlap_check(data, *data.raters)
        vals = _values(data)
        if metric == "pearson":
            return core.pearson_stat(vals[:, 0], vals[:, 1]), ""
        return core.rank_stat(metric, vals[:, 0], vals[:, 1]), ""
    raise AgreementError(f"unknown metric {metric!r}; choose one of {list(METRICS)}")


def _marginals_note(data: core.Data, fleiss_marginals: str) -> list[str]:
    """Say which chance term Fleiss' kappa used when the number of labels varies across items."""
    r = (data.codes >= 0).sum(1)
    r = r[r >= 1]
    if len(r) == 0 or r.min() == r.max():
        return []
    if fleiss_marginals == "pooled":
        return ["unequal labels per item: chance term from category counts pooled over items with >= 2 labels"]
    return ["unequal labels per item: chance term from per-item category shares (Gwet 2014; irrCAC)"]


def _values(data: core.Data) -> np.ndarray:
    v = data.values if data.values is not None else np.arange(data.K, dtype=float)
    out = np.full(data.codes.shape, np.nan)
    ok = data.codes >= 0
    out[ok] = v[data.codes[ok]]
    return out


# --------------------------------------------------------------------------- coefficients


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
    n_boot: int = 2000,
    ci: float = 0.95,
    ci_method: str = "percentile",
    seed: int = 0,
    source: str | None = None,
) -> AgreementResult:
    """Compute ``metric`` (one of :data:`METRICS`) on a long annotations table, with a CI.

    Two raters give the two-rater form; more give the many-rater form (Light's mean pairwise
    kappa for ``cohen_kappa``; Fleiss for ``scott_pi``). ``accuracy``/``macro_f1`` treat the first
    of ``raters`` as the reference. ``categories`` declares the labels (in order for ordinal data).
    CIs resample items.

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
    if metric not in METRICS and metric != "icc":
        raise AgreementError(f"unknown metric {metric!r}; choose one of {list(METRICS)}")
    if weight_basis not in core.WEIGHT_BASES:
        raise AgreementError(core._BASIS_ERROR.format(basis=weight_basis))
    core.check_marginals(fleiss_marginals)
    # linear/quadratic weights (and AC2's default quadratic) need ordered labels; a matrix carries its own structure
    ordered = (isinstance(weights, str) and not core.is_unweighted(weights)) or (
        metric == "gwet_ac2" and core.is_unweighted(weights))
    if level is None:
        level = "ordinal" if (ordered and metric in PAIR_METRICS + MULTI_METRICS) else "nominal"
        if metric in ICC_FORMS + CORRELATIONS + ("icc",):
            level = "interval"
    data = core.prepare(df, item=item, rater=rater, label=label, raters=raters, categories=categories,
                        level=level, source=source)
    st, note = _build(metric, data, weights=weights, weight_basis=weight_basis, fleiss_marginals=fleiss_marginals)
    name = metric
    if metric in PAIR_METRICS + MULTI_METRICS and not core.is_unweighted(weights):
        name = f"{metric}_{weights}" if isinstance(weights, str) else f"{metric}_custom"
    if metric == "gwet_ac2" and core.is_unweighted(weights):
        name = "gwet_ac2_quadratic"
    return _finish(name, st, n_raters=len(data.raters), n_missing=data.n_missing, raters=data.raters,
                   level=level, n_boot=n_boot, ci=ci, ci_method=ci_method, seed=seed, note=note)


def _named(metric, doc):
    def f(df, *, item="item", rater="rater", label="label", raters=None, categories=None, level=None,
          weights=None, weight_basis="auto", fleiss_marginals="per_item", n_boot=2000, ci=0.95,
          ci_method="percentile", seed=0):
        return agreement(df, metric, item=item, rater=rater, label=label, raters=raters, categories=categories,
                         level=level, weights=weights, weight_basis=weight_basis, fleiss_marginals=fleiss_marginals,
                         n_boot=n_boot, ci=ci, ci_method=ci_method, seed=seed)

    f.__name__ = metric
    f.__qualname__ = metric
    f.__doc__ = doc + "\n\nSame keywords as :func:`agreement`; returns an :class:`AgreementResult`."
    return f


percent_agreement = _named("percent_agreement", "Share of identical labels (mean pairwise share for >2 raters).")
cohen_kappa = _named("cohen_kappa", "Cohen's kappa; ``weights='linear'|'quadratic'|matrix`` for weighted kappa "
                     "(distances between category values for numeric labels, else positions as sklearn: see "
                     "``weight_basis``). >2 raters: Light's kappa.")
scott_pi = _named("scott_pi", "Scott's pi (pooled marginals); Fleiss' kappa for >2 raters "
                  "(``fleiss_marginals`` applies).")
fleiss_kappa = _named(
    "fleiss_kappa",
    "Fleiss' (1971) kappa; observed agreement over items with two or more labels. With unequal labels per item "
    "the chance term uses per-item category shares (Gwet 2014; irrCAC) unless ``fleiss_marginals='pooled'``.",
)
conger_kappa = _named(
    "conger_kappa",
    "Conger's (1980) kappa: many-rater kappa with each rater's own marginals (irrCAC ``conger.kappa.raw``); "
    "Cohen's kappa for two raters with complete data. Weights as in :func:`agreement`.",
)
brennan_prediger = _named("brennan_prediger", "Brennan-Prediger coefficient: chance agreement 1/K.")
pabak = _named("pabak", "Prevalence- and bias-adjusted kappa, (K*PA - 1)/(K - 1); 2*PA - 1 for two categories.")
gwet_ac1 = _named("gwet_ac1", "Gwet's AC1 (nominal).")
gwet_ac2 = _named("gwet_ac2", "Gwet's AC2 (weighted AC; quadratic weights unless ``weights`` says otherwise).")
accuracy = _named("accuracy", "Accuracy of ``raters[1]`` against the reference ``raters[0]``.")
macro_f1 = _named("macro_f1", "Macro-F1 of ``raters[1]`` against the reference ``raters[0]`` (classes present).")
pearson = _named("pearson", "Pearson correlation of two raters' numeric labels (Fisher z when analytic).")
spearman = _named("spearman", "Spearman correlation of two raters' labels (bootstrap loops over resamples).")
kendall = _named("kendall", "Kendall's tau-b of two raters' labels (bootstrap loops over resamples).")


def fleiss_kappa_by_category(
    df: pd.DataFrame,
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    raters: Sequence | None = None,
    categories: Sequence | None = None,
    fleiss_marginals: str = "per_item",
    n_boot: int = 2000,
    ci: float = 0.95,
    ci_method: str = "percentile",
    seed: int = 0,
) -> pd.DataFrame:
    """Fleiss' (1971) kappa_j for each category: category, estimate, ci_low, ci_high, n_items, method, note.

    kappa_j is Fleiss' kappa of the labels collapsed to "j" versus "not j" (Fleiss 1971, his
    kappa_j); with unequal labels per item the share p_j follows ``fleiss_marginals`` as in
    :func:`fleiss_kappa`. A category nobody used, or the only one used, gives NaN with a note.
    All categories share one set of item resamples (seeded), so their CIs are paired.
    """
    data = core.prepare(df, item=item, rater=rater, label=label, raters=raters, categories=categories)
    if len(data.raters) < 2:
        raise AgreementError(f"fleiss_kappa_by_category needs at least two raters; got {data.raters}")
    stats = core.category_kappa_stats(data.codes, data.K, fleiss_marginals)
    used = core.count_matrix(data.codes, data.K).sum(0)
    rows = []
    for cat, st, n_used in zip(data.categories, stats, used):
        note = ""
        if n_used == 0:
            note = f"category {cat!r} never used: kappa_j undefined"
        elif n_used == used.sum():
            note = f"category {cat!r} is the only one used: kappa_j undefined"
        res = _finish("fleiss_kappa_j", st, n_raters=len(data.raters), n_missing=data.n_missing, raters=data.raters,
                      level="nominal", n_boot=n_boot, ci=ci, ci_method=ci_method, seed=seed, note=note)
        rows.append(dict(category=cat, estimate=res.estimate, ci_low=res.ci_low, ci_high=res.ci_high,
                         n_items=res.n_items, method=res.method, note=res.note))
    return pd.DataFrame(rows, columns=["category", "estimate", "ci_low", "ci_high", "n_items", "method", "note"])


def krippendorff_alpha(df, *, level="nominal", item="item", rater="rater", label="label", raters=None,
                       categories=None, n_boot=2000, ci=0.95, ci_method="percentile", seed=0) -> AgreementResult:
    """Krippendorff's alpha at ``level`` nominal, ordinal, interval or ratio; missing labels allowed.

    Own vectorised implementation from the coincidence-matrix definition (Krippendorff 2011);
    it matches ``krippendorff.alpha`` to 1e-9 (see tests).
    """
    return agreement(df, "krippendorff_alpha", item=item, rater=rater, label=label, raters=raters,
                     categories=categories, level=level, n_boot=n_boot, ci=ci, ci_method=ci_method, seed=seed)


def icc(df, *, form="icc2", item="item", rater="rater", label="label", raters=None, n_boot=2000, ci=0.95,
        ci_method="analytic", seed=0) -> AgreementResult:
    """Intraclass correlation in the Shrout & Fleiss (1979) forms.

    ``form``: ``icc1`` (one-way random), ``icc2`` (two-way random, absolute agreement),
    ``icc3`` (two-way mixed, consistency), and their average-measure versions ``icc1k``,
    ``icc2k``, ``icc3k``. Analytic F intervals by default; items missing a rater are dropped.
    """
    if form not in ICC_FORMS:
        raise AgreementError(f"form must be one of {ICC_FORMS}; not {form!r}")
    return agreement(df, form, item=item, rater=rater, label=label, raters=raters, level="interval",
                     n_boot=n_boot, ci=ci, ci_method=ci_method, seed=seed)


def agreement_table(
    df: pd.DataFrame,
    metrics: Sequence[str] = ("percent_agreement", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha"),
    *,
    by: Sequence[str] | None = ("criterion",),
    landis: bool = False,
    **kw,
) -> pd.DataFrame:
    """Tidy table: one row per (group, metric); ``by`` columns absent from ``df`` are ignored."""
    by = [b for b in (by or []) if b in df.columns]
    groups = df.groupby(by, sort=True, dropna=False) if by else [((), df)]
    rows = []
    for key, sub in groups:
        key = key if isinstance(key, tuple) else (key,)
        for m in metrics:
            res = agreement(sub.drop(columns=by), m, **kw) if by else agreement(sub, m, **kw)
            fr = res.to_frame()
            for b, k in zip(by, key):
                fr.insert(0, b, k)
            rows.append(fr)
    out = pd.concat(rows, ignore_index=True)
    if landis:
        out["landis_koch"] = landis_koch(out["estimate"])
    return out


# --------------------------------------------------------------------------- designs


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
    n_boot: int = 2000,
    ci: float = 0.95,
    ci_method: str = "percentile",
    seed: int = 0,
    no_overlap: str = "raise",
) -> pd.DataFrame:
    """Every rater pair: long DataFrame (rater_a, rater_b, metric, estimate, ci_low, ci_high, n_items, ...).

    ``no_overlap="raise"`` (default) stops on a pair without shared items; ``"nan"`` reports NaN.
    """
    level = "ordinal" if weights else "nominal"
    data = core.prepare(df, item=item, rater=rater, label=label, raters=raters, categories=categories, level=level)
    rows = []
    for a, b in itertools.combinations(data.raters, 2):
        ok = (data.col(a) >= 0) & (data.col(b) >= 0)
        if not ok.any():
            if no_overlap == "raise":
                _overlap_check(data, a, b)
            rows.append(dict(rater_a=a, rater_b=b, metric=metric, estimate=_NAN, ci_low=_NAN, ci_high=_NAN,
                             n_items=0, n_missing=int(((data.col(a) >= 0) | (data.col(b) >= 0)).sum()),
                             method="none", note="no overlapping items"))
            continue
        st, _ = _build(metric, _sub(data, [a, b]), weights=weights)
        n_miss = int(((data.col(a) >= 0) ^ (data.col(b) >= 0)).sum())  # items only one of the two labelled
        res = _finish(metric, st, n_raters=2, n_missing=n_miss, raters=(a, b), level=level, n_boot=n_boot, ci=ci,
                      ci_method=ci_method, seed=seed)
        rows.append(dict(rater_a=a, rater_b=b, metric=res.metric, estimate=res.estimate, ci_low=res.ci_low,
                         ci_high=res.ci_high, n_items=res.n_items, n_missing=n_miss, method=res.method,
                         note=res.note))
    return pd.DataFrame(rows)


def _sub(data: core.Data, raters) -> core.Data:
    idx = [data.raters.index(r) for r in raters]
    codes = data.codes[:, idx]
    return core.Data(codes, data.items, list(raters), data.categories, data.level, int((codes < 0).sum()),
                     data.values)


_vote = designs.vote
_abstain_codes = designs.abstain_codes
_ceiling_stats = designs._ceiling_stats
judge_vs_ceiling = designs.judge_vs_ceiling
judge_vs_humans = designs.judge_vs_humans
JudgeComparison = designs.JudgeComparison
DESIGNS = designs.DESIGNS
equal_noise_coverage = designs.equal_noise_coverage
compare_designs = designs.compare_designs


def majority_vote(
    df: pd.DataFrame,
    *,
    item="item",
    rater="rater",
    label="label",
    raters=None,
    categories=None,
    rule: str = "plurality",
    tie_policy: str = "na",
    abstain: Sequence = (),
    seed: int = 0,
    name: str = "consensus",
) -> pd.DataFrame:
    """Consensus label per item by majority vote.

    ``abstain`` labels (and NA) are dropped before counting. ``rule="plurality"`` takes the most
    frequent label; ``"strict"`` also needs more than half of the votes cast. ``tie_policy``:
    ``"na"`` (no consensus), ``"first"`` (first tied label in category order) or ``"random"``
    (seeded). Returns item, rater (= ``name``), label, n_votes, n_top, status
    (majority / tie / no_majority / no_votes); rows without consensus have label NA.
    """
    data = core.prepare(df, item=item, rater=rater, label=label, raters=raters, categories=categories)
    codes = _abstain_codes(data, abstain)
    out, n, top = _vote(codes, data.K, rule, tie_policy, np.random.default_rng(seed))
    N = core.count_matrix(codes, data.K)
    tied = ((N == top[:, None]).sum(1) > 1) & (n > 0)
    status = np.where(n == 0, "no_votes", np.where(out >= 0, "majority", np.where(tied, "tie", "no_majority")))
    status = np.where((out >= 0) & tied, f"tie_{tie_policy}", status)
    lab = pd.array([data.categories[c] if c >= 0 else pd.NA for c in out], dtype=object)
    return pd.DataFrame({item: data.items, rater: name, label: lab, "n_votes": n.astype(int),
                         "n_top": top.astype(int), "status": status})


def human_ceiling(
    df: pd.DataFrame,
    humans: Sequence[str] | None = None,
    *,
    metric: str = "cohen_kappa",
    form: str = "loo",
    item="item",
    rater="rater",
    label="label",
    categories=None,
    rule: str = "plurality",
    tie_policy: str = "na",
    abstain: Sequence = (),
    n_boot: int = 2000,
    ci: float = 0.95,
    ci_method: str = "percentile",
    seed: int = 0,
) -> AgreementResult:
    """The human ceiling: how well humans agree with each other.

    ``form="loo"``: each human against the majority of the *other* humans, averaged (MedQADE's
    leave-one-out ceiling); items where the others tie are skipped for that human (``tie_policy``).
    ``form="pairwise"``: the mean over all human pairs. One item bootstrap moves every component
    together. ``details`` holds the per-human (or per-pair) values.
    """
    if humans is None:
        humans = _humans(df, rater)
    data = core.prepare(df, item=item, rater=rater, label=label, raters=list(humans), categories=categories)
    if len(humans) < (3 if form == "loo" else 2):
        raise AgreementError(f"the {form} ceiling needs at least {3 if form == 'loo' else 2} humans; got {list(humans)}")
    codes = _abstain_codes(data, abstain)
    hidx = [data.raters.index(h) for h in humans]
    stats, rows = _ceiling_stats(codes, data.K, hidx, list(humans), metric, form, rule, tie_policy, seed)
    for st, row in zip(stats, rows):
        row["estimate"] = core.point(st) if st.n_items else _NAN
    mean = _mean_stat(stats, int(((data.codes >= 0).sum(1) >= 2).sum()))
    return _finish(f"ceiling_{form}_{metric}", mean, n_raters=len(humans), n_missing=data.n_missing,
                   raters=humans, level="nominal", n_boot=n_boot, ci=ci, ci_method=ci_method, seed=seed,
                   details=pd.DataFrame(rows))


def _humans(df, rater, kind="rater_kind"):
    if kind not in df.columns:
        raise AgreementError("pass humans=[...]: the table has no 'rater_kind' column to find them")
    return sorted(df.loc[df[kind] == "human", rater].unique().tolist(), key=str)


def ensembles(
    df: pd.DataFrame,
    judges: Sequence[str] | None = None,
    humans: Sequence[str] | None = None,
    *,
    reference: str | None = None,
    metrics: Sequence[str] = ("percent_agreement", "cohen_kappa", "pabak"),
    sizes: str | Sequence[int] = "odd",
    item="item",
    rater="rater",
    label="label",
    categories=None,
    rule: str = "plurality",
    tie_policy: str = "na",
    abstain: Sequence = (),
    n_boot: int = 0,
    ci: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Every majority-vote ensemble of judges (odd sizes by default) scored against the reference.

    The reference is the majority of ``humans`` or the single rater ``reference``. With 9 judges
    the odd sizes give 9 + 84 + 126 + 36 + 1 = 256 ensembles. Items where an ensemble ties are
    left out for that ensemble (``tie_policy="na"``) and counted in ``n_items``.
    Returns one row per ensemble: members, size, one column per metric (+ ``_ci_low``/``_ci_high``
    when ``n_boot`` > 0), n_items, sorted best first by the second metric.
    """
    if judges is None:
        judges = sorted(df.loc[df["rater_kind"] == "llm", rater].unique(), key=str)
    judges = list(judges)
    if humans is None:
        humans = [reference] if reference else _humans(df, rater)
    humans = list(humans)
    data = core.prepare(df, item=item, rater=rater, label=label, raters=humans + judges, categories=categories)
    codes = _abstain_codes(data, abstain)
    rng = np.random.default_rng(seed)
    if len(humans) == 1:
        ref = codes[:, 0]
    else:
        ref, _, _ = _vote(codes[:, : len(humans)], data.K, rule, tie_policy, rng)
    J = len(judges)
    size_list = [s for s in range(1, J + 1) if s % 2 == 1] if sizes == "odd" else list(sizes)
    rows, stats = [], []
    for s in size_list:
        for combo in itertools.combinations(range(J), s):
            cols = [len(humans) + c for c in combo]
            vote, _, _ = _vote(codes[:, cols], data.K, rule, tie_policy, rng)
            row = dict(members="+".join(judges[c] for c in combo), size=s)
            sts = [core.pair_stat(m, ref, vote, data.K) for m in metrics]
            for m, st in zip(metrics, sts):
                row[m] = core.point(st) if st.n_items else _NAN
            row["n_items"] = sts[0].n_items
            rows.append(row)
            stats.append(sts)
    out = pd.DataFrame(rows)
    if n_boot:
        flat = [st for sts in stats for st in sts]
        reps = core.replicates(flat, n_boot, seed)
        for k, m in enumerate(metrics):
            cis = [core.interval(out.loc[i, m], reps[:, i * len(metrics) + k], ci, "percentile")[:2]
                   for i in range(len(out))]
            out[f"{m}_ci_low"] = [c[0] for c in cis]
            out[f"{m}_ci_high"] = [c[1] for c in cis]
    key = metrics[1] if len(metrics) > 1 else metrics[0]
    return out.sort_values([key, "size"], ascending=[False, True], kind="stable").reset_index(drop=True)


def prevalence_bias_indices(
    df: pd.DataFrame, raters: Sequence[str] | None = None, *, item="item", rater="rater", label="label",
    categories=None, judges: Sequence[str] | None = None, humans: Sequence[str] | None = None,
    reference: str | None = None, tie_policy: str = "na",
) -> pd.DataFrame:
    """Explain the kappa paradox (Byrt, Bishop & Carlin 1993) for two raters.

    One row per category (that category vs the rest, a 2x2 table a, b, c, d) plus an
    ``overall`` row: PA, kappa, PABAK, the prevalence index |a - d|/n, the bias index |b - c|/n
    and kappa_max (the largest kappa the two raters' marginals allow).
    With ``judges``: each judge against the majority of ``humans`` (or the rater ``reference``).
    """
    if judges is not None:
        if reference is None:
            hs = list(humans) if humans is not None else _humans(df, rater)
            cons = majority_vote(df, item=item, rater=rater, label=label, raters=hs, categories=categories,
                                 tie_policy=tie_policy, name="consensus")
            ref_df = cons[[item, rater, label]]
            ref = "consensus"
        else:
            ref_df, ref = df[df[rater] == reference][[item, rater, label]], reference
        frames = []
        for j in judges:
            both = pd.concat([ref_df, df[df[rater] == j][[item, rater, label]]], ignore_index=True)
            frames.append(prevalence_bias_indices(both, [ref, j], item=item, rater=rater, label=label,
                                                  categories=categories))
        return pd.concat(frames, ignore_index=True)
    data = core.prepare(df, item=item, rater=rater, label=label, raters=raters, categories=categories)
    if len(data.raters) != 2:
        raise AgreementError(f"prevalence and bias indices compare two raters; got {data.raters}")
    _overlap_check(data, *data.raters)
    x, y = data.codes[:, 0], data.codes[:, 1]
    ok = (x >= 0) & (y >= 0)
    x, y, K, n = x[ok], y[ok], data.K, int(ok.sum())
    T = np.zeros((K, K))
    np.add.at(T, (x, y), 1)
    rows = []

    def _row(cat, T2):
        P = T2 / n
        po = np.trace(P)
        r, c = P.sum(1), P.sum(0)
        pe = r @ c
        kap = (po - pe) / (1 - pe) if pe < 1 else _NAN
        pmax = np.minimum(r, c).sum()
        kmax = (pmax - pe) / (1 - pe) if pe < 1 else _NAN
        k = len(T2)
        row = dict(category=cat, n_items=n, percent_agreement=po, cohen_kappa=kap, pabak=(k * po - 1) / (k - 1),
                   kappa_max=kmax)
        if k == 2:
            a, b, c_, d = T2[0, 0], T2[0, 1], T2[1, 0], T2[1, 1]
            row.update(a=int(a), b=int(b), c=int(c_), d=int(d), prevalence_index=abs(a - d) / n,
                       bias_index=abs(b - c_) / n)
        return row

    for k, cat in enumerate(data.categories):
        sel = np.arange(K) == k
        T2 = np.array([[T[np.ix_(sel, sel)].sum(), T[np.ix_(sel, ~sel)].sum()],
                       [T[np.ix_(~sel, sel)].sum(), T[np.ix_(~sel, ~sel)].sum()]])
        rows.append(_row(cat, T2))
    rows.append(_row("overall", T))
    out = pd.DataFrame(rows)
    out.insert(0, "raters", "|".join(map(str, data.raters)))
    return out


_LK = [(0.20, "slight"), (0.40, "fair"), (0.60, "moderate"), (0.80, "substantial"), (np.inf, "almost perfect")]


def landis_koch(estimate):
    """Landis & Koch (1977) wording for a kappa-type value (a word; NaN -> NA). Never changes numbers.

    < 0 poor, 0-0.20 slight, 0.21-0.40 fair, 0.41-0.60 moderate, 0.61-0.80 substantial, > 0.80 almost perfect.

    >>> landis_koch(0.226), landis_koch(0.667)
    ('fair', 'substantial')
    """
    def word(v):
        if v is None or pd.isna(v):
            return pd.NA
        if v < 0:
            return "poor"
        return next(w for hi, w in _LK if v <= hi)

    if isinstance(estimate, (pd.Series, np.ndarray, list, tuple)):
        return pd.Series([word(v) for v in estimate], index=estimate.index if isinstance(estimate, pd.Series) else None,
                         dtype=object)
    return word(estimate)


def kappa_from_p_c(p_observed, p_chance):
    """kappa = (P - C) / (1 - C) from printed observed and chance agreement (NaN when C = 1)."""
    p, c = np.asarray(p_observed, dtype=float), np.asarray(p_chance, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(c < 1, (p - c) / (1 - c), np.nan)
    return out if out.ndim else float(out)


# --------------------------------------------------------------------------- files


from medeval_kit._agreement_io import LabelWarning, check_labels, read_annotations  # noqa: E402,F401


# --------------------------------------------------------------------------- figures and study inputs

from medeval_kit._agreement_plots import (  # noqa: E402
    metric_label, plot_coverage, plot_delta_forest, plot_ensembles, plot_forest, plot_kappa_heatmap,
)
from medeval_kit._agreement_inputs import (  # noqa: E402
    StudyInputs, load_study, user_study,
)


# --------------------------------------------------------------------------- the report behind `medeval agreement`

DEFAULT_METRICS = ("percent_agreement", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha")
REPORT_COLUMNS = ["metric", "raters", "estimate", "ci_low", "ci_high", "n_items", "n_raters", "n_missing", "method", "note"]


def _split_metric(name: str):
    """``cohen_kappa_linear`` -> (``cohen_kappa``, ``linear``); other names -> (name, None)."""
    base, _, suffix = name.rpartition("_")
    return (base, suffix) if suffix in ("linear", "quadratic") and base else (name, None)


def _undefined(metric, raters, reason) -> pd.DataFrame:
    return pd.DataFrame([dict(metric=metric, raters="|".join(map(str, raters or [])), estimate=np.nan,
                              ci_low=np.nan, ci_high=np.nan, n_items=0, n_raters=len(raters or []), n_missing=0,
                              method="none", note=f"undefined: {reason}")])


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
    n_boot: int = 2000,
    ci: float = 0.95,
    ci_method: str = "percentile",
    seed: int = 0,
    notes=(),
) -> pd.DataFrame:
    """One tidy row per result: the table behind ``medeval agreement`` and the notebook's summary.

    Columns: [criterion,] section, metric, raters, estimate, ci_low, ci_high, n_items, n_raters,
    n_missing, method, note. ``metrics`` may name weighted kappas as ``cohen_kappa_linear`` /
    ``cohen_kappa_quadratic``; ``level`` applies to Krippendorff's alpha. A metric that is
    undefined on this panel (e.g. Light's kappa when two raters share no item) is a NaN row with
    the reason. ``pairwise`` adds every rater pair (NaN for pairs that share no item).
    ``ceiling`` adds :func:`~medeval_kit.agreement.judge_vs_humans` rows (``section`` =
    ``judge_vs_humans``, extra columns delta ...) for the first pairwise metric; it needs
    ``humans`` or a ``rater_kind`` column.
    """
    ag = sys.modules[__name__]
    groups = [(None, df)]
    if criterion and criterion in df.columns:
        groups = [(c, sub.drop(columns=[criterion])) for c, sub in df.groupby(criterion, sort=True)]
    frames = []
    for crit, sub in groups:
        rows = []
        for name in metrics:
            m, w = _split_metric(name)
            lv = level if m in ("krippendorff_alpha",) else None
            if w and m in ("cohen_kappa", "gwet_ac2") and categories is None and level == "nominal":
                lv = "ordinal"
            try:
                res = ag.agreement(sub, m, raters=raters, categories=categories, level=lv, weights=w, n_boot=n_boot,
                                   ci=ci, ci_method=ci_method, seed=seed)
                rows.append(res.to_frame().assign(section="agreement"))
            except AgreementError as exc:  # undefined on this design: say why, keep the other rows
                rows.append(_undefined(name, raters or sorted(sub["rater"].unique(), key=str), exc)
                            .assign(section="agreement"))
        pair_names = [_split_metric(n) for n in metrics if _split_metric(n)[0] in ag.PAIR_METRICS]
        first_pair = next((p for p in pair_names if p[0] == "cohen_kappa"),
                          pair_names[0] if pair_names else ("cohen_kappa", None))
        if pairwise:
            pm = ag.pairwise_matrix(sub, first_pair[0], raters=raters, categories=categories, weights=first_pair[1],
                                    n_boot=n_boot, ci=ci, ci_method=ci_method, seed=seed, no_overlap="nan")
            pm = pm.assign(raters=pm["rater_a"].astype(str) + "|" + pm["rater_b"].astype(str), n_raters=2,
                           section="pairwise")
            rows.append(pm.drop(columns=["rater_a", "rater_b"]))
        if ceiling:
            res = ag.judge_vs_humans(sub, humans, judges, design=design, metric=first_pair[0],
                                     categories=categories, weights=first_pair[1], margin=margin, n_boot=n_boot,
                                     ci=ci, seed=seed)
            t = res.to_frame()
            t = t.assign(section="judge_vs_humans", raters=t["rater"], n_raters=np.where(
                t["role"] == "humans", len(res.humans), 1), n_missing=0, method=res.method,
                metric=t["metric"] + " (" + t["design"] + ")")
            rows.append(t.drop(columns=["rater", "design"]))
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
