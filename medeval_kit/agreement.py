"""Agreement coefficients with honest uncertainty, and agreement study designs.

Everything works on a long ``annotations`` table (``item``, ``rater``, ``label`` [, ``criterion``]):

* coefficients: :func:`percent_agreement`, :func:`cohen_kappa` (unweighted, linear, quadratic),
  :func:`scott_pi`, :func:`fleiss_kappa`, :func:`brennan_prediger`, :func:`pabak`,
  :func:`gwet_ac1`, :func:`gwet_ac2`, :func:`krippendorff_alpha` (nominal, ordinal, interval,
  ratio; missing data allowed), :func:`icc` (Shrout-Fleiss forms), :func:`pearson`,
  :func:`spearman`, :func:`kendall`, :func:`accuracy` and :func:`macro_f1` against a reference;
  :func:`agreement` dispatches by name and :func:`agreement_table` makes a tidy table;
* uncertainty: bootstrap CIs that resample *items* (percentile or BCa, seeded), computed for all
  resamples at once from per-item count / coincidence features; analytic intervals where they
  exist (``ci_method="analytic"``: Fleiss-Cohen-Everitt SE of kappa, Wilson for agreement, Fisher
  z for correlations, F intervals for ICC);
* designs: :func:`pairwise_matrix`, :func:`majority_vote`, :func:`human_ceiling` (leave-one-out or
  mean pairwise), :func:`judge_vs_ceiling` (paired bootstrap test of the gap),
  :func:`ensembles` (every odd-sized majority-vote subset of judges),
  :func:`prevalence_bias_indices` (the kappa paradox), :func:`landis_koch` (wording only);
* figures: :func:`plot_kappa_heatmap`, :func:`plot_forest`, :func:`plot_ensembles`;
* the ``medeval agreement`` command (:func:`register_cli`), built on :func:`read_annotations`.

Every result carries ``estimate, ci_low, ci_high, n_items, n_raters, n_missing, method``; an
undefined coefficient (for example kappa when only one category occurs) is NaN with a ``note``.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from medeval_kit import _agreement_core as core
from medeval_kit._agreement_core import AgreementError
from medeval_kit.errors import DataFileError, SchemaError

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
    "ensembles",
    "prevalence_bias_indices",
    "landis_koch",
    "kappa_from_p_c",
    "read_annotations",
    "plot_kappa_heatmap",
    "plot_forest",
    "plot_ensembles",
    "published_numbers",
    "printed_arithmetic",
    "longform_table3_kappa",
    "load_study",
    "papers_for",
    "StudyInputs",
    "agreement_report",
    "register_cli",
]

PAIR_METRICS = (
    "percent_agreement", "cohen_kappa", "scott_pi", "brennan_prediger", "pabak",
    "gwet_ac1", "gwet_ac2", "accuracy", "macro_f1",
)
MULTI_METRICS = ("fleiss_kappa",)
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
        if st.n_items == 0:
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


def _mean_stat(stats: Sequence[core.Stat], n_items: int) -> core.Stat:
    """Mean of several statistics over one item axis (for Light's kappa and the ceiling)."""
    F = np.hstack([s.F for s in stats])
    cuts = np.cumsum([0] + [s.F.shape[1] for s in stats])

    def fn(S):
        return np.mean([s.fn(S[:, a:b]) for s, a, b in zip(stats, cuts[:-1], cuts[1:])], axis=0)

    return core.Stat(F, fn, n_items)


def _overlap_check(data: core.Data, a, b):
    ok = (data.col(a) >= 0) & (data.col(b) >= 0)
    if not ok.any():
        raise AgreementError(
            f"raters {a!r} and {b!r} have no overlapping items (no item labelled by both); "
            "check the rater names or choose raters that share items"
        )


def _build(metric: str, data: core.Data, *, weights=None, form=None) -> tuple[core.Stat, str]:
    """Statistic for ``metric`` on all raters of ``data``; returns (stat, note)."""
    R = len(data.raters)
    K = data.K
    if metric in ("gwet_ac2",) and weights is None:
        weights = "quadratic"
    if metric in PAIR_METRICS:
        if R < 2:
            raise AgreementError(f"{metric} needs at least two raters; got {data.raters}")
        if R == 2 or metric in ("accuracy", "macro_f1"):
            if R != 2:
                raise AgreementError(f"{metric} compares one rater with a reference: pass raters=[reference, rater]")
            _overlap_check(data, *data.raters)
            return core.pair_stat(metric, data.codes[:, 0], data.codes[:, 1], K, weights), ""
        if metric == "cohen_kappa":
            pairs = list(itertools.combinations(range(R), 2))
            for i, j in pairs:
                _overlap_check(data, data.raters[i], data.raters[j])
            sts = [core.pair_stat(metric, data.codes[:, i], data.codes[:, j], K, weights) for i, j in pairs]
            n = int(((data.codes >= 0).sum(1) >= 2).sum())
            return _mean_stat(sts, n), f"{R} raters: Light's kappa (mean of {len(pairs)} pairwise Cohen kappas)"
        kind = "fleiss_kappa" if metric == "scott_pi" else metric
        return core.multi_stat(kind, data.codes, K, weights), (
            f"{R} raters: many-rater form" + (" (Fleiss kappa)" if metric == "scott_pi" else "")
        )
    if metric == "fleiss_kappa":
        return core.multi_stat("fleiss_kappa", data.codes, K, weights), ""
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
    weights: str | None = None,
    n_boot: int = 2000,
    ci: float = 0.95,
    ci_method: str = "percentile",
    seed: int = 0,
    source: str | None = None,
) -> AgreementResult:
    """Compute ``metric`` (one of :data:`METRICS`) on a long annotations table, with a CI.

    Two raters give the two-rater form; more give the many-rater form (Light's mean pairwise
    kappa for ``cohen_kappa``; Fleiss for ``scott_pi``). ``accuracy``/``macro_f1`` treat the first
    of ``raters`` as the reference. ``categories`` declares the labels (in order for ordinal data);
    ``weights`` is None, ``"linear"`` or ``"quadratic"``. CIs resample items.

    >>> import pandas as pd
    >>> a = pd.DataFrame({"item": list("112233"), "rater": ["x", "y"] * 3, "label": list("AAABBB")})
    >>> agreement(a, "percent_agreement", n_boot=0).estimate
    0.6666666666666666
    """
    if metric not in METRICS and metric != "icc":
        raise AgreementError(f"unknown metric {metric!r}; choose one of {list(METRICS)}")
    if level is None:
        level = "ordinal" if (metric == "gwet_ac2" or (weights and metric in PAIR_METRICS)) else "nominal"
        if metric in ICC_FORMS + CORRELATIONS + ("icc",):
            level = "interval"
    data = core.prepare(df, item=item, rater=rater, label=label, raters=raters, categories=categories,
                        level=level, source=source)
    st, note = _build(metric, data, weights=weights)
    name = metric if not weights or metric not in PAIR_METRICS + MULTI_METRICS else f"{metric}_{weights}"
    if metric == "gwet_ac2" and not weights:
        name = "gwet_ac2_quadratic"
    return _finish(name, st, n_raters=len(data.raters), n_missing=data.n_missing, raters=data.raters,
                   level=level, n_boot=n_boot, ci=ci, ci_method=ci_method, seed=seed, note=note)


def _named(metric, doc):
    def f(df, *, item="item", rater="rater", label="label", raters=None, categories=None, level=None,
          weights=None, n_boot=2000, ci=0.95, ci_method="percentile", seed=0):
        return agreement(df, metric, item=item, rater=rater, label=label, raters=raters, categories=categories,
                         level=level, weights=weights, n_boot=n_boot, ci=ci, ci_method=ci_method, seed=seed)

    f.__name__ = metric
    f.__qualname__ = metric
    f.__doc__ = doc + "\n\nSame keywords as :func:`agreement`; returns an :class:`AgreementResult`."
    return f


percent_agreement = _named("percent_agreement", "Share of identical labels (mean pairwise share for >2 raters).")
cohen_kappa = _named("cohen_kappa", "Cohen's kappa; ``weights='linear'|'quadratic'`` for weighted kappa "
                     "(sklearn's convention on category indices). >2 raters: Light's kappa.")
scott_pi = _named("scott_pi", "Scott's pi (pooled marginals); Fleiss' kappa for >2 raters.")
fleiss_kappa = _named("fleiss_kappa", "Fleiss' kappa; items with fewer than two labels are skipped.")
brennan_prediger = _named("brennan_prediger", "Brennan-Prediger coefficient: chance agreement 1/K.")
pabak = _named("pabak", "Prevalence- and bias-adjusted kappa, (K*PA - 1)/(K - 1); 2*PA - 1 for two categories.")
gwet_ac1 = _named("gwet_ac1", "Gwet's AC1 (nominal).")
gwet_ac2 = _named("gwet_ac2", "Gwet's AC2 (weighted AC; quadratic weights unless ``weights`` says otherwise).")
accuracy = _named("accuracy", "Accuracy of ``raters[1]`` against the reference ``raters[0]``.")
macro_f1 = _named("macro_f1", "Macro-F1 of ``raters[1]`` against the reference ``raters[0]`` (classes present).")
pearson = _named("pearson", "Pearson correlation of two raters' numeric labels (Fisher z when analytic).")
spearman = _named("spearman", "Spearman correlation of two raters' labels (bootstrap loops over resamples).")
kendall = _named("kendall", "Kendall's tau-b of two raters' labels (bootstrap loops over resamples).")


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


def _vote(codes: np.ndarray, K: int, rule: str, tie_policy: str, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Consensus code per item (-1 = none), votes cast and the top count."""
    N = core.count_matrix(codes, K)
    n = N.sum(1)
    top = N.max(1) if K else np.zeros(len(N))
    winners = N == top[:, None]
    n_win = winners.sum(1)
    out = np.where(n_win == 1, N.argmax(1), -1)
    tied = (n_win > 1) & (n > 0)
    if tie_policy == "first":
        out = np.where(tied, N.argmax(1), out)
    elif tie_policy == "random":
        for i in np.flatnonzero(tied):
            out[i] = rng.choice(np.flatnonzero(winners[i]))
    elif tie_policy != "na":
        raise AgreementError(f"tie_policy must be 'na', 'first' or 'random'; not {tie_policy!r}")
    if rule == "strict":
        out = np.where(top > n / 2, out, -1)
    elif rule != "plurality":
        raise AgreementError(f"rule must be 'plurality' or 'strict'; not {rule!r}")
    out = np.where(n > 0, out, -1)
    return out, n, top


def _abstain_codes(data: core.Data, abstain) -> np.ndarray:
    """Codes with abstention labels set to missing; ``data`` loses those categories (K shrinks)."""
    drop = [data.categories.index(a) for a in (abstain or ()) if a in data.categories]
    if not drop:
        return data.codes.copy()
    keep = [k for k in range(data.K) if k not in drop]
    remap = np.full(data.K + 1, -1)
    remap[keep] = np.arange(len(keep))
    codes = remap[data.codes]  # -1 maps to remap[-1] = -1
    data.categories = [data.categories[k] for k in keep]
    if data.values is not None:
        data.values = data.values[keep]
    return codes


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


def _ceiling_stats(codes, K, hidx, humans, metric, form, rule, tie_policy, seed):
    rng = np.random.default_rng(seed)
    stats, rows = [], []
    if form == "loo":
        for k, h in zip(hidx, humans):
            others = [j for j in hidx if j != k]
            cons, _, _ = _vote(codes[:, others], K, rule, tie_policy, rng)
            st = core.pair_stat(metric, cons, codes[:, k], K)
            stats.append(st)
            rows.append(dict(rater=h, reference="majority of the other humans", n_items=st.n_items))
    elif form == "pairwise":
        for a, b in itertools.combinations(range(len(hidx)), 2):
            st = core.pair_stat(metric, codes[:, hidx[a]], codes[:, hidx[b]], K)
            stats.append(st)
            rows.append(dict(rater=humans[b], reference=humans[a], n_items=st.n_items))
    else:
        raise AgreementError(f"form must be 'loo' or 'pairwise'; not {form!r}")
    return stats, rows


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


def judge_vs_ceiling(
    df: pd.DataFrame,
    humans: Sequence[str] | None = None,
    judges: Sequence[str] | None = None,
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
    reference: str | None = None,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Each judge against the human consensus, next to the human ceiling.

    The judge's score is ``metric`` against the majority of *all* humans (or against the single
    rater ``reference``, e.g. an adjudicated expert; then the ceiling is not defined and left
    NaN). Returns one row for the ceiling and one per judge with estimate and percentile CI,
    ``delta`` = judge - ceiling with its paired-bootstrap CI and two-sided ``p_value``
    (same item resamples for both), and ``ci_overlap`` (the decision rule MedQADE used).
    """
    if judges is None:
        judges = sorted(df.loc[df.get("rater_kind", pd.Series(dtype=object)) == "llm", rater].unique(), key=str)
    if humans is None:
        humans = [reference] if reference else _humans(df, rater)
    humans, judges = list(humans), list(judges)
    data = core.prepare(df, item=item, rater=rater, label=label, raters=humans + judges, categories=categories)
    codes = _abstain_codes(data, abstain)
    rng = np.random.default_rng(seed)
    if reference is not None or len(humans) == 1:
        ref = codes[:, data.raters.index(humans[0])]
        ceiling = None
    else:
        ref, _, _ = _vote(codes[:, [data.raters.index(h) for h in humans]], data.K, rule, tie_policy, rng)
        if len(humans) >= (3 if form == "loo" else 2):
            hidx = [data.raters.index(h) for h in humans]
            c_stats, _ = _ceiling_stats(codes, data.K, hidx, humans, metric, form, rule, tie_policy, seed)
            ceiling = _mean_stat(c_stats, int((ref >= 0).sum()))
        else:
            ceiling = None
    j_stats = [core.pair_stat(metric, ref, codes[:, data.raters.index(j)], data.K) for j in judges]
    all_stats = ([ceiling] if ceiling is not None else []) + j_stats
    reps = core.replicates(all_stats, n_boot, seed) if n_boot else np.full((0, len(all_stats)), np.nan)
    ests = [core.point(s) if s.n_items else _NAN for s in all_stats]
    rows = []
    c_est = ests[0] if ceiling is not None else _NAN
    c_lo = c_hi = _NAN
    if ceiling is not None:
        c_lo, c_hi, _ = core.interval(c_est, reps[:, 0], ci, "percentile")
        rows.append(dict(role="ceiling", rater=f"humans ({form})", metric=metric, estimate=c_est, ci_low=c_lo,
                         ci_high=c_hi, n_items=ceiling.n_items, delta=_NAN, delta_ci_low=_NAN,
                         delta_ci_high=_NAN, p_value=_NAN, ci_overlap=pd.NA))
    off = 1 if ceiling is not None else 0
    for k, (j, st) in enumerate(zip(judges, j_stats)):
        est = ests[off + k]
        lo, hi, _ = core.interval(est, reps[:, off + k], ci, "percentile")
        row = dict(role="judge", rater=j, metric=metric, estimate=est, ci_low=lo, ci_high=hi, n_items=st.n_items,
                   delta=_NAN, delta_ci_low=_NAN, delta_ci_high=_NAN, p_value=_NAN, ci_overlap=pd.NA)
        if ceiling is not None and n_boot:
            d = reps[:, off + k] - reps[:, 0]
            d = d[np.isfinite(d)]
            row["delta"] = est - c_est
            row["delta_ci_low"], row["delta_ci_high"], _ = core.interval(est - c_est, d, ci, "percentile")
            row["p_value"] = float(min(1.0, 2 * min((d <= 0).mean(), (d >= 0).mean()))) if len(d) else _NAN
            row["ci_overlap"] = bool(lo <= c_hi and c_lo <= hi)
        rows.append(row)
    out = pd.DataFrame(rows)
    out["ceiling_form"] = form if ceiling is not None else "none (one reference rater)"
    out["reference"] = reference or f"majority of {len(humans)} humans ({rule}, ties {tie_policy})"
    out["method"] = f"bootstrap percentile over items (B={n_boot}, seed={seed}); paired for delta"
    return out


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


def read_annotations(
    path: str | Path,
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    criterion: str | None = None,
    wide: bool = False,
    raters: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Read CSV, JSONL/JSON or Parquet annotations into the long layout (item, rater, label[, criterion]).

    ``wide=True``: one row per item with one column per rater (all columns other than ``item``
    and ``criterion``, or just ``raters``). Errors name the file, the column and the row.
    """
    p = Path(path)
    if not p.exists():
        raise DataFileError(f"{p}: file not found")
    suf = p.suffix.lower()
    try:
        if suf in (".csv", ".tsv", ".txt"):
            df = pd.read_csv(p, sep="\t" if suf == ".tsv" else ",", keep_default_na=True)
        elif suf in (".jsonl", ".ndjson"):
            df = _read_jsonl(p)
        elif suf == ".json":
            df = pd.read_json(p)
        elif suf in (".parquet", ".pq"):
            df = pd.read_parquet(p)
        else:
            raise DataFileError(f"{p}: unknown file type {suf!r}; use .csv, .tsv, .jsonl, .json or .parquet")
    except DataFileError:
        raise
    except Exception as exc:  # parser errors name the file
        raise DataFileError(f"{p}: cannot be read as {suf[1:]}: {exc}") from exc
    src = str(p)
    if wide:
        if item not in df.columns:
            raise SchemaError("annotations", item, [], f"item column {item!r} not found; columns: {list(df.columns)}", src)
        keep = [item] + ([criterion] if criterion and criterion in df.columns else [])
        cols = list(raters) if raters else [c for c in df.columns if c not in keep]
        miss = [c for c in cols if c not in df.columns]
        if miss:
            raise SchemaError("annotations", miss[0], [], f"rater column(s) {miss} not found", src)
        df = df.melt(id_vars=keep, value_vars=cols, var_name="rater", value_name="label")
        rater, label = "rater", "label"
    for c in (item, rater, label) + ((criterion,) if criterion else ()):
        if c not in df.columns:
            raise SchemaError("annotations", c, [], f"column {c!r} not found; columns: {list(df.columns)}", src)
    bad = df[item].isna() | df[rater].isna()
    if bad.any():
        col = item if df[item].isna().any() else rater
        raise SchemaError("annotations", col, [int(i) for i in np.flatnonzero(bad)], "empty item or rater", src)
    out = pd.DataFrame({"item": df[item].astype(str), "rater": df[rater].astype(str), "label": df[label]})
    if criterion:
        out["criterion"] = df[criterion].astype(str)
    if "rater_kind" in df.columns and not wide:
        out["rater_kind"] = df["rater_kind"].astype(str)
    return out


def _read_jsonl(p: Path) -> pd.DataFrame:
    recs = []
    with p.open() as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                recs.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DataFileError(f"{p}: line {n} is not valid JSON ({exc.msg}); fix or remove that line") from exc
    return pd.DataFrame(recs)


# --------------------------------------------------------------------------- figures and published numbers

from medeval_kit._agreement_plots import plot_ensembles, plot_forest, plot_kappa_heatmap  # noqa: E402
from medeval_kit._agreement_published import (  # noqa: E402
    StudyInputs, load_study, longform_table3_kappa, papers_for, printed_arithmetic, published_numbers,
)
from medeval_kit._agreement_cli import agreement_report, register_cli  # noqa: E402
