"""Position-bias calibration (Wang et al. 2023, "Large Language Models are not Fair Evaluators", arXiv
2305.17926) and what it buys: the judge read four ways from one judgments table, its agreement with
humans before and after calibration with paired item-bootstrap CIs, the items to send to a physician
(ranked by the judge's balanced position diversity entropy) and the human-review budget curve.

* ``vanilla``  one call (the first repeat) in one order, averaged over the two orders: the judge as
               usually run, with a presentation order drawn at random;
* ``mec``      Multiple Evidence Calibration: the mean margin of A over the k repeats of one order,
               averaged over the two orders;
* ``bpc``      Balanced Position Calibration: the first repeat of both orders, margins averaged;
* ``mec_bpc``  every repeat of both orders, each order weighted equally;
* ``hitl``     ``mec_bpc`` with the ``hitl_share`` most uncertain items (highest BPDE) given the human label
               (Human-in-the-Loop Calibration; the paper's share is 20%).

The margin of a call is ``score_a - score_b`` when the judge gives scores (the ``pairwise_mec`` protocol),
else its vote (A = +1, B = -1, tie/neither = 0); :func:`medeval_kit.pairwise.resolve.resolve_calibrated`
does the averaging. ``neither`` counts as ``tie`` against human labels A/B/tie.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

import numpy as np
import pandas as pd

from medeval_kit import results
from medeval_kit.agreement import majority_vote
from medeval_kit.bias._common import bootstrap_p
from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import ParameterError, SchemaError
from medeval_kit.pairwise.resolve import resolve_calibrated
from medeval_kit.stats import item_draws, percentile_interval

__all__ = ["METHODS", "METHOD_LABELS", "CATEGORIES", "calibrate", "reference_labels", "truth_annotations",
           "calibration_effect", "effect_against_target", "review_queue", "budget_curve", "synthetic_scored_pairwise"]

METHODS = ("vanilla", "mec", "bpc", "mec_bpc", "hitl")
METHOD_LABELS = {
    "vanilla": "one call, one order",
    "mec": "MEC: k samples, one order",
    "bpc": "BPC: both orders",
    "mec_bpc": "MEC + BPC",
    "hitl": "MEC + BPC + human review",
}
"""Readable names of the methods (plots, tables)."""
CATEGORIES = ("A", "B", "tie")
_KEYS = ("judge", "criterion")
_TO_CAT = {"A": "A", "B": "B", "tie": "tie", "neither": "tie"}
_PERCENTILE = "percentile bootstrap over items (B={n})"


# =========================================================================== the judge read four ways
@shared_docs
@takes_columns("item", "judge", "criterion", "order", "repeat", "verdict", "score_a", "score_b", "parse_status")
def calibrate(
    judgments: pd.DataFrame,
    *,
    margin: str = "auto",
    tie_margin: float = 0.0,
    reversed_criteria: Collection[str] | None = None,
    columns: Columns = None,
) -> pd.DataFrame:
    """Return one row per (judge, criterion, item): the judge's verdict by each method, and its uncertainty.

    Columns: ``vanilla_ab``, ``vanilla_ba`` (the first repeat of each order), ``mec_ab``, ``mec_ba`` (the
    mean over the repeats of each order), ``bpc``, ``mec_bpc`` (both orders balanced), ``margin`` (the
    balanced mean margin of A), ``p_a``, ``p_b``, ``p_tie`` and ``entropy`` (BPDE over every call, nats),
    ``n_calls``, ``n_ok``, ``n_failed``, ``resolution`` (``failed``: an order has no parsed call),
    ``missing_order``, ``margin_source`` and ``n_repeats`` (the most repeats of an order). ``judge`` /
    ``criterion`` / ``repeat`` absent mean one judge / one criterion / an order's calls as its repeats (in
    file order).

    Parameters
    ----------
    judgments : DataFrame
        Pairwise calls in both orders: ``item, order``, ``verdict`` and/or ``score_a``/``score_b``, and
        optionally ``judge``, ``criterion``, ``repeat``, ``parse_status``.
    margin : {"auto", "scores", "verdicts"}, default "auto"
        Where a call's margin of A comes from (:data:`medeval_kit.pairwise.resolve.MARGIN_SOURCES`).
    tie_margin : float, default 0.0
        Margins within ``+-tie_margin`` are ties.
    reversed_criteria : collection of str, optional
        Criteria phrased negatively (choosing means worse).
    {columns}

    Returns
    -------
    DataFrame
        One row per (judge, criterion, item) with the columns above.

    Raises
    ------
    SchemaError
        A needed column is missing (named as in your table).

    Examples
    --------
    >>> calls, humans = synthetic_scored_pairwise(20, samples=3, seed=0)
    >>> cal = calibrate(calls)
    >>> len(cal), sorted(cal["resolution"].unique())
    (20, ['calibrated'])
    """
    item, judge, criterion, order, repeat, verdict = "item", "judge", "criterion", "order", "repeat", "verdict"
    d = judgments.copy()
    for col, default in ((judge, "judge"), (criterion, "criterion")):
        if col not in d.columns and col == default:
            d[col] = "judge" if default == "judge" else "overall"
    missing = [c for c in (item, judge, criterion, order) if c not in d.columns]
    missing += [repeat] if repeat not in d.columns and repeat != "repeat" else []
    if missing:
        raise SchemaError("judgments", missing[0], [], f"missing column(s) {missing}; present: {list(d.columns)}")
    if repeat not in d.columns:  # absent under its default name: the calls of an order are its repeats
        d[repeat] = d.groupby([item, judge, criterion, order]).cumcount()
    bpc = resolve_calibrated(d, "bpc", margin=margin, tie_margin=tie_margin, reversed_criteria=reversed_criteria)
    both = resolve_calibrated(d, "mec_bpc", margin=margin, tie_margin=tie_margin, reversed_criteria=reversed_criteria)
    keys = [judge, criterion, item]
    reps = d.groupby([item, judge, criterion, order]).size().groupby([item, judge, criterion]).max()
    out = pd.DataFrame({
        "judge": both[judge].astype(str), "criterion": both[criterion].astype(str), "item": both[item].astype(str),
        "vanilla_ab": bpc["verdict_ab"], "vanilla_ba": bpc["verdict_ba"],
        "mec_ab": both["verdict_ab"], "mec_ba": both["verdict_ba"],
        "bpc": bpc[verdict], "mec_bpc": both[verdict],
    })
    for c in ("margin", "p_a", "p_b", "p_tie", "entropy", "n_calls", "n_ok", "n_failed", "resolution",
              "missing_order", "margin_source"):
        out[c] = both[c].to_numpy()
    out["n_repeats"] = reps.reindex(pd.MultiIndex.from_frame(both[[item, judge, criterion]])).to_numpy().astype(int)
    return out.sort_values(["judge", "criterion", "item"], kind="stable").reset_index(drop=True)[
        ["judge", "criterion", "item", *[c for c in out.columns if c not in keys + ["judge", "criterion", "item"]]]]


def reference_labels(humans: pd.DataFrame, *, item: str = "item", rater: str = "rater", label: str = "label",
                     criterion: str = "criterion", rater_kind: str = "rater_kind") -> pd.DataFrame:
    """The human reference per item (and criterion, when ``humans`` has one): the plurality label, NA on a tie.

    Only ``rater_kind == "human"`` rows count when that column exists. Columns: ``item``, ``criterion``
    (``None`` = every criterion), ``reference``, ``n_votes``.
    """
    missing = [c for c in (item, rater, label) if c not in humans.columns]
    if missing:
        raise SchemaError("annotations", missing[0], [],
                          f"missing column(s) {missing}; present: {list(humans.columns)}")
    h = humans[humans[rater_kind] == "human"] if rater_kind in humans.columns else humans
    h = h.assign(_label=h[label].map(lambda v: _TO_CAT.get(v, v) if isinstance(v, str) else v))
    bad = h["_label"].notna() & ~h["_label"].isin(CATEGORIES)
    if bad.any():
        raise SchemaError("annotations", label, [int(i) for i in np.flatnonzero(bad.to_numpy())][:20],
                          f"human labels must be one of {list(CATEGORIES)} (neither counts as tie); found "
                          f"{sorted(map(str, set(h.loc[bad, '_label'])))[:5]}")
    groups = h.groupby(criterion, sort=True) if criterion in h.columns else [(None, h)]
    parts = []
    for crit, g in groups:
        votes = pd.DataFrame({"item": g[item].to_numpy(), "rater": g[rater].to_numpy(), "label": g["_label"].to_numpy()})
        mv = majority_vote(votes, categories=list(CATEGORIES))
        parts.append(pd.DataFrame({"item": mv["item"].astype(str), "criterion": crit,
                                   "reference": mv["label"].astype(object).where(mv["label"].notna(), None),
                                   "n_votes": mv["n_votes"].astype(int)}))
    return pd.concat(parts, ignore_index=True)


def truth_annotations(judgments: pd.DataFrame, *, truth: str = "true_winner", item: str = "item",
                      rater: str = "truth") -> pd.DataFrame:
    """An ``annotations`` table of a synthetic table's planted truth (one label per item) to score against."""
    if truth not in judgments.columns:
        raise SchemaError("judgments", truth, [],
                          f"no planted-truth column {truth!r}; present: {list(judgments.columns)}")
    t = judgments[[item, truth]].drop_duplicates(item)
    return pd.DataFrame({"item": t[item].astype(str), "rater": rater, "rater_kind": "human",
                         "label": t[truth].astype(object)}).reset_index(drop=True)


# =========================================================================== weights per method
def _onehot(labels: pd.Series) -> np.ndarray:
    """(n, 3) one-hots over A/B/tie (``neither`` is tie); a row of zeros for anything else (NA, other text).

    An object column (what :func:`calibrate` and :func:`reference_labels` give) is matched vectorised: a
    value counts only when it is a string equal to one of ``_TO_CAT``'s keys. Other dtypes are mapped value
    by value, as before."""
    labels = pd.Series(labels)
    if labels.dtype != object:
        lab = labels.map(lambda v: _TO_CAT.get(v) if isinstance(v, str) else None)
        return np.stack([lab.eq(c).to_numpy(float) for c in CATEGORIES], axis=1)
    return np.stack([labels.isin([k for k, v in _TO_CAT.items() if v == c]).to_numpy(float) for c in CATEGORIES],
                    axis=1).reshape(len(labels), len(CATEGORIES))


def _method_weights(g: pd.DataFrame, method: str, reviewed: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """(n, 3) weights of the judge's label over A/B/tie per item (rows sum to 1, or 0 when unavailable)."""
    if method in ("vanilla", "mec"):
        ab, ba = _onehot(g[f"{method}_ab"]), _onehot(g[f"{method}_ba"])
        both = (ab.sum(1) > 0) & (ba.sum(1) > 0)
        return np.where(both[:, None], (ab + ba) / 2, 0.0)
    if method in ("bpc", "mec_bpc"):
        return _onehot(g[method])
    if method == "hitl":
        w = _onehot(g["mec_bpc"])
        return np.where(reviewed[:, None], ref, w)
    raise ParameterError(f"unknown method {method!r}; choose from {list(METHODS)}")


_QUEUE_DIGITS = 12
"""Entropy and |margin| are compared to this many significant digits: values equal up to float noise
(1/3 summed one way gives 0.33333333333333331, another way 0.33333333333333337) tie, and the next key decides."""


def _rounded(x: np.ndarray, digits: int = _QUEUE_DIGITS) -> np.ndarray:
    """``x`` rounded to ``digits`` significant digits (inf and NaN kept); each distinct value formatted once."""
    x = np.asarray(x, float).ravel()
    uniq, inverse = np.unique(x, return_inverse=True)
    return np.array([float(f"{v:.{digits}g}") for v in uniq], dtype=float)[inverse.ravel()]


def _queue_order(g: pd.DataFrame) -> np.ndarray:
    """Positions of ``g``'s rows in review order: failed first, then entropy high to low, |margin| low to high, item.

    Entropy and |margin| are rounded to 12 significant digits before they are compared, so a tie in exact
    arithmetic is a tie here and goes on to the next key (never to the last bits of a float)."""
    failed = g["resolution"].ne("calibrated").to_numpy()
    ent = _rounded(g["entropy"].fillna(np.inf).to_numpy(float))
    marg = _rounded(g["margin"].abs().fillna(0.0).to_numpy(float))
    return np.lexsort((g["item"].to_numpy(str), marg, -ent, ~failed))


def _stats(w: np.ndarray, h: np.ndarray, idx: np.ndarray | None) -> dict[str, np.ndarray | float]:
    """Accuracy and Cohen's kappa of judge weights ``w`` against human one-hots ``h`` (per replicate with ``idx``)."""
    acc_i = (w * h).sum(1)
    if idx is None:
        po, pj, ph = acc_i.mean(), w.mean(0), h.mean(0)
        pe = float((pj * ph).sum())
        return {"accuracy": float(po), "kappa": (po - pe) / (1 - pe) if pe < 1 else math.nan}
    po, pj, ph = acc_i[idx].mean(1), w[idx].mean(1), h[idx].mean(1)
    pe = (pj * ph).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        kap = np.where(pe < 1, (po - pe) / np.where(pe < 1, 1 - pe, 1.0), np.nan)
    return {"accuracy": po, "kappa": kap}


def _joined(calibrated: pd.DataFrame, humans: pd.DataFrame, human_cols: dict) -> pd.DataFrame:
    ref = reference_labels(humans, **human_cols)
    per_crit = ref[ref["criterion"].notna()]
    every = ref[ref["criterion"].isna()].drop(columns="criterion")
    c = calibrated.copy()
    c["item"] = c["item"].astype(str)
    if len(per_crit):
        c = c.merge(per_crit.assign(criterion=per_crit["criterion"].astype(str)), on=["item", "criterion"], how="left")
    else:
        c = c.merge(every, on="item", how="left")
    return c


# =========================================================================== before / after
@shared_docs
@takes_columns("item", "rater", "label", "criterion", "rater_kind")
def calibration_effect(
    calibrated: pd.DataFrame,
    humans: pd.DataFrame,
    *,
    methods: Sequence[str] = METHODS,
    baseline: str = "vanilla",
    metrics: Sequence[str] = ("accuracy", "kappa"),
    hitl_share: float = 0.2,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    columns: Columns = None,
) -> pd.DataFrame:
    """Agreement with the human reference before and after calibration, with paired item-bootstrap CIs.

    ``calibrated`` is :func:`calibrate`'s table; ``humans`` an ``annotations`` table (A/B/tie per item and
    rater; the plurality label is the reference, :func:`reference_labels`). Per judge, criterion, metric
    (``accuracy``: share of items where the judge's label equals the reference, a one-order method
    scoring the mean over the two orders; ``kappa``: Cohen's kappa of those labels) and method, one
    ``comparison="level"`` row, and per method other than ``baseline`` a ``comparison="difference"`` row
    (method minus baseline) whose CI and two-sided bootstrap ``p_value`` come from the same item draws
    for both (paired). Every method is scored on the same items: those with a reference and a label by
    every method; ``n_failed`` counts the referenced items left out because the judge failed on them.
    ``hitl`` gives the top ``hitl_share * n`` items (rounded half up) of :func:`review_queue` the reference label.

    Parameters
    ----------
    calibrated : DataFrame
        The table of :func:`calibrate`.
    humans : DataFrame
        Human labels: ``item, rater, label`` (A/B/tie), optionally ``criterion`` and ``rater_kind`` (only
        ``human`` rows count when present).
    methods : sequence of str, default all of :data:`METHODS`
        The methods to score.
    baseline : str, default "vanilla"
        The method the differences are taken against.
    metrics : sequence of {"accuracy", "kappa"}, default both
        The agreement metrics.
    hitl_share : float, default 0.2
        The share of items a physician reviews under ``hitl``.
    {n_boot}
    {confidence}
    {seed}
    {columns}

    Returns
    -------
    DataFrame
        Keys ``judge, criterion, metric, method, comparison, baseline``, the contract columns and ``p_value``.

    Raises
    ------
    ParameterError
        An unknown method or metric, or ``hitl_share`` outside [0, 1].
    """
    methods = list(dict.fromkeys(methods))
    unknown = [m for m in [*methods, baseline] if m not in METHODS]
    bad_metric = [m for m in metrics if m not in ("accuracy", "kappa")]
    if unknown or bad_metric:
        raise ParameterError(f"unknown method(s) {unknown} / metric(s) {bad_metric}; methods: {list(METHODS)}, "
                             "metrics: accuracy, kappa")
    if baseline not in methods:
        methods = [baseline, *methods]
    if not 0 <= hitl_share <= 1:
        raise ParameterError(f"hitl_share must be in [0, 1]; got {hitl_share}")
    joined = _joined(calibrated, humans, {})
    rng = np.random.default_rng(seed)
    rows = []
    for (j, c), g in joined.groupby(["judge", "criterion"], sort=True):
        g = g[g["reference"].notna()].reset_index(drop=True)
        n_unref = int(joined.loc[(joined["judge"] == j) & (joined["criterion"] == c), "reference"].isna().sum())
        h = _onehot(g["reference"])
        zero = np.zeros(len(g), dtype=bool)
        weights = {m: _method_weights(g, m, zero, h) for m in methods}
        usable = np.all([w.sum(1) > 0 for w in weights.values()], axis=0) if len(g) else zero
        gu, hu = g[usable].reset_index(drop=True), h[usable]
        n, n_failed = int(usable.sum()), int((~usable).sum())
        k = int(math.floor(hitl_share * n + 0.5))  # half up, not to even
        reviewed = np.zeros(n, dtype=bool)
        reviewed[_queue_order(gu)[:k]] = True
        weights = {m: _method_weights(gu, m, reviewed, hu) for m in methods}
        note = f"{n_unref} items without a human reference left out" if n_unref else ""
        if "hitl" in methods:
            note = "; ".join(x for x in (note, f"hitl: {k} of {n} items reviewed") if x)
        idx = item_draws(n, n_boot, rng) if n_boot > 0 and n > 1 else None
        pts = {m: _stats(w, hu, None) if n else {"accuracy": math.nan, "kappa": math.nan} for m, w in weights.items()}
        reps = {m: _stats(w, hu, idx) for m, w in weights.items()} if idx is not None else {}
        for metric in metrics:
            for m in methods:
                est = pts[m][metric]
                ci = percentile_interval(reps[m][metric], confidence=confidence) if reps else (math.nan, math.nan)
                rows.append(results.result_row(est, ci, _PERCENTILE.format(n=n_boot) if reps else "", n_items=n,
                                               n_failed=n_failed, note=note, judge=j, criterion=c, metric=metric,
                                               method=m, comparison="level", baseline="", p_value=math.nan))
                if m == baseline:
                    continue
                diff = pts[m][metric] - pts[baseline][metric]
                d_reps = reps[m][metric] - reps[baseline][metric] if reps else np.array([])
                ci = percentile_interval(d_reps, confidence=confidence) if reps else (math.nan, math.nan)
                rows.append(results.result_row(diff, ci, (_PERCENTILE.format(n=n_boot) + ", paired") if reps else "",
                                               n_items=n, n_failed=n_failed, note=note, judge=j, criterion=c,
                                               metric=metric, method=m, comparison="difference", baseline=baseline,
                                               p_value=bootstrap_p(d_reps) if reps else math.nan))
    return results.result_frame(rows, keys=["judge", "criterion", "metric", "method", "comparison", "baseline"])


def effect_against_target(
    calibrated: pd.DataFrame,
    humans: pd.DataFrame,
    target_calibrated: pd.DataFrame,
    target_humans: pd.DataFrame,
    *,
    hitl_share: float = 0.2,
    n_boot: int = 1000,
    seed: int = 0,
    in_ci: bool = False,
) -> pd.DataFrame:
    """:func:`calibration_effect` of a biased judge next to what an unbiased judge reaches: a planted-bias check.

    ``calibrated``/``humans`` are the biased judge's :func:`calibrate` table and its human labels (e.g. a
    synthetic judge with a planted first-slot bonus); ``target_calibrated``/``target_humans`` the same for an
    unbiased judge on a large population (bias 0), whose point estimates (``n_boot=0``) are the target. The
    result is the biased judge's effect table (CIs from ``n_boot`` replicates) with ``unbiased_target``: the
    target's ``level`` estimate of the same metric and method; ``in_ci=True`` adds ``target_in_ci``, whether
    the target lies within the row's CI (a method that removes the bias covers it).

    Example
    -------
    >>> calls, humans = synthetic_scored_pairwise(60, position_bonus=2.0, samples=3, seed=0)
    >>> pop, pop_humans = synthetic_scored_pairwise(600, position_bonus=0.0, samples=3, seed=1)
    >>> out = effect_against_target(calibrate(calls), humans, calibrate(pop), pop_humans, n_boot=50, in_ci=True)
    >>> {"unbiased_target", "target_in_ci"} <= set(out.columns)
    True
    """
    effect = calibration_effect(calibrated, humans, hitl_share=hitl_share, n_boot=n_boot, seed=seed)
    target = calibration_effect(target_calibrated, target_humans, hitl_share=hitl_share, n_boot=0)
    level = target.loc[target["comparison"] == "level", ["metric", "method", "estimate"]]
    out = effect.merge(level.rename(columns={"estimate": "unbiased_target"}), on=["metric", "method"], how="left")
    if in_ci:
        out["target_in_ci"] = (out["ci_low"] <= out["unbiased_target"]) & (out["unbiased_target"] <= out["ci_high"])
    return out


# =========================================================================== human in the loop
def review_queue(calibrated: pd.DataFrame, *, top: int | None = None) -> pd.DataFrame:
    """The items to send to a physician first, per judge and criterion: judge failures, then highest BPDE.

    Ties in entropy go to the smaller |margin| (the judge's averaged scores closer together), then the
    item id; entropy and |margin| are compared to 12 significant digits, so values that differ only by
    float rounding tie. Columns: ``judge``, ``criterion``, ``rank`` (1 = first to review), ``item``, ``reason``
    (``judge failed`` / ``uncertain`` / ``certain`` when the entropy is 0), ``entropy``, ``margin``,
    ``mec_bpc`` (the calibrated verdict), ``p_a``, ``p_b``, ``p_tie``, ``n_ok``, ``n_failed``. ``top`` keeps
    the first ``top`` items of each group.

    Parameters
    ----------
    calibrated : DataFrame
        The table of :func:`calibrate`.
    top : int, optional
        Keep the first ``top`` items per judge and criterion; default all.

    Returns
    -------
    DataFrame
        The queue, with the columns above.
    """
    parts = []
    for (_, _), g in calibrated.groupby(["judge", "criterion"], sort=True):
        g = g.reset_index(drop=True).iloc[_queue_order(g.reset_index(drop=True))].reset_index(drop=True)
        g["rank"] = np.arange(1, len(g) + 1)
        g["reason"] = np.where(g["resolution"].ne("calibrated"), "judge failed",
                               np.where(g["entropy"] > 0, "uncertain", "certain"))
        parts.append(g if top is None else g.head(int(top)))
    cols = ["judge", "criterion", "rank", "item", "reason", "entropy", "margin", "mec_bpc", "p_a", "p_b", "p_tie",
            "n_ok", "n_failed"]
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)


@shared_docs
@takes_columns("item", "rater", "label", "criterion", "rater_kind")
def budget_curve(
    calibrated: pd.DataFrame,
    humans: pd.DataFrame,
    *,
    method: str = "mec_bpc",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    columns: Columns = None,
) -> pd.DataFrame:
    """Agreement with the human reference when the top-m items of :func:`review_queue` take the human label.

    One row per judge, criterion and m = 0..n (``reviewed``; ``share_reviewed`` = m / n): ``estimate``
    (accuracy) with a percentile item-bootstrap CI (the same draws for every m), ``gain`` over m = 0,
    ``gain_per_review`` (gain / m), ``random`` (the expected accuracy when m items drawn at random are
    reviewed: a0 + (m / n)(1 - a0)) and ``oracle`` (every judge error reviewed first). Items where
    ``method`` has no label are left out (``n_failed``); a reviewed item counts as agreeing.

    Parameters
    ----------
    calibrated : DataFrame
        The table of :func:`calibrate`.
    humans : DataFrame
        Human labels (see :func:`calibration_effect`).
    method : {"vanilla", "mec", "bpc", "mec_bpc"}, default "mec_bpc"
        The judge's method before review.
    {n_boot}
    {confidence}
    {seed}
    {columns}

    Returns
    -------
    DataFrame
        Keys ``judge, criterion, method, reviewed``, the contract columns and the extras above.

    Raises
    ------
    ParameterError
        An unknown method.
    """
    if method not in ("vanilla", "mec", "bpc", "mec_bpc"):
        raise ParameterError(f"method must be one of vanilla, mec, bpc, mec_bpc; got {method!r}")
    joined = _joined(calibrated, humans, {})
    rng = np.random.default_rng(seed)
    rows = []
    for (j, c), g in joined.groupby(["judge", "criterion"], sort=True):
        g = g[g["reference"].notna()].reset_index(drop=True)
        h = _onehot(g["reference"])
        w = _method_weights(g, method, np.zeros(len(g), dtype=bool), h)
        usable = w.sum(1) > 0
        g, h, w = g[usable].reset_index(drop=True), h[usable], w[usable]
        n, n_failed = len(g), int((~usable).sum())
        order = _queue_order(g)
        acc = (w * h).sum(1)[order]  # per item, in review order
        gain = 1.0 - acc
        est = (acc.sum() + np.concatenate([[0.0], np.cumsum(gain)])) / n if n else np.full(1, np.nan)
        if n_boot > 0 and n > 1:
            idx = item_draws(n, n_boot, rng)
            counts = np.zeros((n_boot, n))
            np.add.at(counts, (np.repeat(np.arange(n_boot), n), idx.ravel()), 1.0)
            base = counts @ acc
            reps = (base[:, None] + np.concatenate([np.zeros((n_boot, 1)), np.cumsum(counts * gain, 1)], 1)) / n
            cis = [percentile_interval(reps[:, m], confidence=confidence) for m in range(n + 1)]
            how = _PERCENTILE.format(n=n_boot)
        else:
            cis, how = [(math.nan, math.nan)] * len(est), ""
        a0 = est[0]
        errors_sorted = np.sort(gain)[::-1]
        oracle = (acc.sum() + np.concatenate([[0.0], np.cumsum(errors_sorted)])) / n if n else est
        for m in range(len(est)):
            rows.append(results.result_row(
                est[m], cis[m], how, n_items=n, n_failed=n_failed, judge=j, criterion=c, method=method,
                reviewed=m, share_reviewed=m / n if n else math.nan, gain=est[m] - a0,
                gain_per_review=(est[m] - a0) / m if m else math.nan,
                random=a0 + (m / n) * (1 - a0) if n else math.nan, oracle=oracle[m]))
    return results.result_frame(rows, keys=["judge", "criterion", "method", "reviewed"])


# =========================================================================== synthetic data
@shared_docs
def synthetic_scored_pairwise(
    n_items: int = 300,
    *,
    position_bonus: float = 2.0,
    samples: int = 3,
    noise: float = 1.5,
    spread: float = 1.5,
    tie_band: float = 0.5,
    judge_name: str = "judge",
    criterion_name: str = "overall",
    seed: int = 0,
    judge: str | None = None,
    criterion: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return ``(judgments, humans)``: a scoring judge with a planted first-slot bonus, and the human labels.

    Each response has a quality q ~ N(5.5, ``spread``); the human label is A when q_A - q_B > ``tie_band``,
    B below ``-tie_band``, else tie. In each order and each of ``samples`` repeats the judge scores the
    shown responses 1-10: round(q + e) with e ~ N(0, ``noise``), plus ``position_bonus`` for the response
    shown first (clipped to 1-10), as an explanation-first scoring judge does (the ``pairwise_mec``
    protocol). Its verdict names the higher score (tie when equal). With ``position_bonus=0`` the same
    generator is the unbiased judge, so the agreement that calibration should recover is known.
    Columns as the ``pairwise_mec`` protocol writes them: ``score_a``/``score_b`` (model terms),
    ``score_first``/``score_second``, ``slot_verdict``, ``verdict``, ``score`` (margin of A).

    Parameters
    ----------
    n_items : int, default 300
        Items (pairs).
    position_bonus : float, default 2.0
        Points added to the response shown first.
    samples : int, default 3
        Repeats per order.
    noise : float, default 1.5
        SD of the judge's scoring noise.
    spread : float, default 1.5
        SD of the responses' quality.
    tie_band : float, default 0.5
        Quality differences within it are human ties.
    judge_name : str, default "judge"
        The judge's name in the table.
    criterion_name : str, default "overall"
        The criterion's name in both tables.
    {seed}
    judge, criterion : str, optional
        Deprecated names of ``judge_name`` and ``criterion_name``.

    Returns
    -------
    tuple of DataFrame
        ``(judgments, humans)``: synthetic data (not a result), the judge's calls and the humans' labels.

    Examples
    --------
    >>> calls, humans = synthetic_scored_pairwise(10, samples=2, seed=0)
    >>> len(calls), len(humans)
    (40, 10)
    """
    if judge is not None or criterion is not None:
        import warnings

        warnings.warn("synthetic_scored_pairwise(judge=, criterion=) are deprecated; use judge_name=, criterion_name=",
                      DeprecationWarning, stacklevel=2)
        judge_name, criterion_name = judge or judge_name, criterion or criterion_name
    judge, criterion = judge_name, criterion_name
    if samples < 1 or n_items < 1:
        raise ParameterError("n_items and samples must be >= 1")
    rng = np.random.default_rng(seed)
    width = len(str(n_items - 1))
    ids = np.array([f"i{j:0{width}d}" for j in range(n_items)], dtype=object)
    q = rng.normal(5.5, spread, size=(n_items, 2))
    delta = q[:, 0] - q[:, 1]
    human = np.where(delta > tie_band, "A", np.where(delta < -tie_band, "B", "tie")).astype(object)
    frames = []
    for o in ("AB", "BA"):
        first, second = (0, 1) if o == "AB" else (1, 0)
        for r in range(samples):
            e = rng.normal(0.0, noise, size=(n_items, 2))
            s_first = np.clip(np.round(q[:, first] + e[:, 0]) + position_bonus, 1, 10)
            s_second = np.clip(np.round(q[:, second] + e[:, 1]), 1, 10)
            sa, sb = (s_first, s_second) if o == "AB" else (s_second, s_first)
            slot = np.where(s_first > s_second, "first", np.where(s_first < s_second, "second", "tie")).astype(object)
            winner = np.where(sa > sb, "A", np.where(sa < sb, "B", "tie")).astype(object)
            frames.append(pd.DataFrame({
                "item": ids, "judge": judge, "protocol": "pairwise_mec", "criterion": criterion, "order": o,
                "repeat": r, "raw": None, "verdict": winner,
                "score": sa - sb, "parse_status": "ok", "slot_verdict": slot, "score_a": sa, "score_b": sb,
                "score_first": s_first, "score_second": s_second, "true_label": human,
            }))
    judgments = pd.concat(frames, ignore_index=True)
    humans = pd.DataFrame({"item": ids, "rater": "human", "rater_kind": "human", "criterion": criterion,
                           "label": human})
    return judgments, humans
