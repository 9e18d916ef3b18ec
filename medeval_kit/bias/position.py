"""Position (order) bias: two-order pairwise statistics (consistency, flips, first-slot preference),
the flip rate from published resolved labels, and the slot effects of k-slot protocols."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from medeval_kit.bias._common import EXACT, RESULT_COLUMNS, bias_frame, bootstrap_p, rows_of
from medeval_kit.bias.inputs import MODEL_TERMS, VERDICT_TERMS, check_pairwise, model_terms, verdict_terms_advice
from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import ParameterError, SchemaError
from medeval_kit.pairwise import ORDERS, mirror_slot, to_slot
from medeval_kit.stats import item_draws, percentile_interval, proportion_ci

__all__ = ["position_bias", "position_bias_wide", "flip_rate_from_labels", "agreement_on_consistent",
           "slot_preference", "slot_score_effect"]

_NO_REPEATS = "fewer than 2 parsed repeats per order"
_FIRST_SLOT_TEST = "exact binomial test vs 0.5 (calls treated as independent)"
_SIGN_TEST = "sign test same_slot_first vs same_slot_second"


# =========================================================================== two orders
def _slots_from_model_terms(d: pd.DataFrame, order: str, verdict: str, source: str | None,
                            terms: str = "model") -> pd.DataFrame:
    """A copy with ``_slot_from_verdict``: the ``verdict`` column, in model vocabulary ``terms``, mapped to
    presented slots."""
    if terms not in MODEL_TERMS:
        raise ParameterError(f"verdict_terms must be one of {list(MODEL_TERMS)} (the vocabularies of a model-terms "
                             f"verdict column; " + "; ".join(f"{t}: {VERDICT_TERMS[t]}" for t in MODEL_TERMS)
                             + f"); got {terms!r}. Presented-slot verdicts go in slot_verdict")
    if order not in d.columns:
        raise SchemaError("judgments", order, [], f"missing column; present: {list(d.columns)}", source)
    bad = ~d[order].astype(str).str.upper().isin(ORDERS).to_numpy()
    if bad.any():
        raise SchemaError("judgments", order, rows_of(bad),
                          f"to un-swap the model-terms column {verdict!r} the order must be AB or BA; found "
                          f"{sorted(map(str, set(d.loc[bad, order])))[:5]}. Pass presented-slot verdicts "
                          "(first/second/tie) as slot_verdict instead", source)
    text = d[verdict].map(lambda v: None if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v).strip()
                          or None)
    lab = model_terms(text, terms)
    bad = lab.eq("?").to_numpy()
    if bad.any():
        unknown = sorted(set(text[bad]))
        advice, _ = verdict_terms_advice(unknown, text.dropna(), terms, allowed=MODEL_TERMS, cli=False)
        raise SchemaError("judgments", verdict, rows_of(bad),
                          f"unknown verdict(s) {unknown[:5]}; expected {VERDICT_TERMS[terms]} (verdict_terms "
                          f"{terms!r})" + (f"; {advice}" if advice else ""), source)
    d = d.copy()
    d["_slot_from_verdict"] = to_slot(lab.reset_index(drop=True),
                                      d[order].astype(str).str.upper().reset_index(drop=True)).values
    return d


@shared_docs
@takes_columns("item", "judge", "criterion", "order", "slot_verdict", "verdict", "repeat", "parse_status", "protocol")
def position_bias(
    df: pd.DataFrame,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    source: str | None = None,
    verdict_terms: str = "model",
    columns: Columns = None,
) -> pd.DataFrame:
    """Position-bias statistics per judge and criterion from a table holding both orders.

    The verdict is read from ``slot_verdict`` (first/second/tie/neither); if that column is absent it
    is derived from the model-terms ``verdict`` and an ``order`` of AB/BA with :func:`pairwise.to_slot`.
    ``verdict_terms`` is the vocabulary of that ``verdict`` column (:data:`~medeval_kit.bias.inputs.VERDICT_TERMS`):
    ``"model"`` (A/B as written, tie, neither), ``"model-any-case"`` (also a/b) or ``"arena"``
    (model_a/model_b/tie, the Chatbot Arena / MT-bench words).
    A call counts as failed when its ``parse_status`` is not ``ok`` or its verdict is NA.

    Metrics (``unit`` says what ``n`` counts):

    * ``first_slot_rate`` (calls): first / (first + second) over parsed non-tie calls; exact
      binomial test against 0.5 in ``p_value``. 0.5 = no position preference.
    * ``tie_rate`` (calls): tie-or-neither share of parsed calls.
    * ``consistency`` (pairs): the per-order verdicts (majority over repeats) name the same model.
    * ``flip_rate`` (pairs): 1 - consistency (any change; MCQG-SRefine's -1, Longform-MedQA's
      "position disagreement").
    * ``same_slot_first`` / ``same_slot_second`` (pairs): the first (second) slot won in both
      orders. ``p_value`` of ``same_slot_first`` is the exact sign test first-vs-second among them.
    * ``repeat_inconsistency`` ((item, order) groups with >= 2 parsed repeats): repeats disagree;
      ``repeat_inconsistency_<order>`` the same within one order (Longform-MedQA reports ab and ba).

    CIs: a percentile bootstrap resampling items (``n_boot > 0``, default), which respects the
    clustering of calls within items; ``n_boot=0`` gives exact Clopper-Pearson CIs.

    Parameters
    ----------
    df : DataFrame
        Judgments in both orders: ``item, order`` and ``slot_verdict`` or ``verdict``; optionally
        ``judge``, ``criterion`` (absent: one judge, one criterion), ``repeat``, ``parse_status`` and
        ``protocol`` (must be ``pairwise``).
    {n_boot}
    {seed}
    {confidence}
    {source}
    verdict_terms : {"model", "model-any-case", "arena"}, default "model"
        The vocabulary of the ``verdict`` column, used when there is no ``slot_verdict`` column.
    {columns}

    Returns
    -------
    DataFrame
        One row per judge, criterion and metric (:data:`RESULT_COLUMNS`): the contract columns, ``n``,
        ``n_dropped``, ``p_value``, ``test`` and ``unit``.

    Raises
    ------
    SchemaError
        The table fails :func:`~medeval_kit.bias.check_pairwise` or a verdict cannot be read; the error
        names your column.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_pairwise
    >>> res = position_bias(synthetic_pairwise(n_items=40, seed=0), n_boot=0)
    >>> sorted(set(res["metric"]) & {"consistency", "first_slot_rate", "flip_rate"})
    ['consistency', 'first_slot_rate', 'flip_rate']
    """
    order, slot_verdict, verdict, parse_status = "order", "slot_verdict", "verdict", "parse_status"
    d = df
    if slot_verdict not in d.columns and verdict in d.columns:
        d = _slots_from_model_terms(d, order, verdict, source, verdict_terms)
        d = d.rename(columns={"_slot_from_verdict": slot_verdict})
    d = check_pairwise(d, source=source)
    ok = d["_slot"].notna()
    if parse_status in d.columns:
        ok &= d[parse_status].astype(str).eq("ok")
    d["_ok"] = ok
    rng = np.random.default_rng(seed)
    out = []
    for (j, c), g in d.groupby(["_judge", "_criterion"], sort=True):
        out.extend(_position_group(g, j, c, n_boot, rng, confidence))
    res = bias_frame(out)
    return res[[c for c in RESULT_COLUMNS if c in res.columns]]


def _per_item(g: pd.DataFrame, items: pd.Index) -> dict[str, np.ndarray]:
    """Per item: parsed first, second and tie calls, parsed calls, failed calls."""
    okg = g[g["_ok"]]
    counts = pd.DataFrame({
        "first": okg["_slot"].eq("first"), "second": okg["_slot"].eq("second"),
        "tie": okg["_slot"].isin(["tie", "neither"]), "ok": True, "_item": okg["_item"],
    }).groupby("_item").sum().reindex(items, fill_value=0)
    out = {k: counts[k].to_numpy(float) for k in ("first", "second", "tie", "ok")}
    out["failed"] = (~g["_ok"]).groupby(g["_item"]).sum().reindex(items, fill_value=0).to_numpy(float)
    return out


def _repeat_groups(io: pd.DataFrame, items: pd.Index, orders: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per item: (item, order) groups with >= 2 parsed repeats and those whose repeats disagree;
    key "" over both orders, then one key per order."""
    multi, split = io["_tot"] >= 2, (io["_tot"] >= 2) & (io["_nd"] > 1)
    out = {"": (multi.groupby(level=0).sum().reindex(items, fill_value=0).to_numpy(float),
                split.groupby(level=0).sum().reindex(items, fill_value=0).to_numpy(float))}
    for o in orders:
        sub = io.xs(o, level="_order") if o in io.index.get_level_values("_order") else io.iloc[0:0].droplevel(1)
        out[o] = ((sub["_tot"] >= 2).reindex(items, fill_value=False).to_numpy(float),
                  ((sub["_tot"] >= 2) & (sub["_nd"] > 1)).reindex(items, fill_value=False).to_numpy(float))
    return out


def _majorities(cnt: pd.DataFrame, io: pd.DataFrame, items: pd.Index, orders: list[str]) -> pd.DataFrame:
    """The majority slot verdict per item (rows) and order (columns) over parsed repeats; NA when none.

    A unique top wins; on a tied top prefer tie, then neither, else no verdict.
    """
    cnt = cnt.merge(io[["_max"]].reset_index(), on=["_item", "_order"])
    top = cnt[cnt["_n"] == cnt["_max"]].copy()
    top["_ntop"] = top.groupby(["_item", "_order"])["_slot"].transform("size")
    top["_rank"] = np.where(top["_ntop"] == 1, 0, top["_slot"].map({"tie": 1, "neither": 2}).fillna(9))
    best = top.sort_values(["_item", "_order", "_rank"]).groupby(["_item", "_order"]).head(1)
    best = best[best["_rank"] < 9]
    return best.pivot(index="_item", columns="_order", values="_slot").reindex(index=items, columns=orders)


def _pair_outcomes(maj: pd.DataFrame, orders: list[str]) -> dict[str, np.ndarray]:
    """Per item (NaN when an order has no verdict): consistent, same slot first, same slot second."""
    v1, v2 = maj[orders[0]], maj[orders[1]]
    both = (v1.notna() & v2.notna()).to_numpy()
    return {"consistent": np.where(both, (v1.map(mirror_slot, na_action="ignore") == v2).to_numpy(float), np.nan),
            "same_first": np.where(both, ((v1 == "first") & (v2 == "first")).to_numpy(float), np.nan),
            "same_second": np.where(both, ((v1 == "second") & (v2 == "second")).to_numpy(float), np.nan)}


def _metric_specs(g: pd.DataFrame, items: pd.Index) -> tuple[list[tuple], dict[str, np.ndarray]]:
    """(metric, numerator per item, denominator per item, unit) of every metric, and the pair outcomes."""
    orders = sorted(g["_order"].unique())
    c = _per_item(g, items)
    okg = g[g["_ok"]]
    cnt = okg.groupby(["_item", "_order", "_slot"]).size().rename("_n").reset_index()
    io = cnt.groupby(["_item", "_order"]).agg(_tot=("_n", "sum"), _nd=("_slot", "size"), _max=("_n", "max"))
    rep = _repeat_groups(io, items, orders)
    pair = _pair_outcomes(_majorities(cnt, io, items, orders), orders)
    pair_ok = (~np.isnan(pair["consistent"])).astype(float)
    cons = np.nan_to_num(pair["consistent"])
    specs = [
        ("first_slot_rate", c["first"], c["first"] + c["second"], "call"),
        ("tie_rate", c["tie"], c["ok"], "call"),
        ("consistency", cons, pair_ok, "pair"),
        ("flip_rate", pair_ok - cons, pair_ok, "pair"),
        ("same_slot_first", np.nan_to_num(pair["same_first"]), pair_ok, "pair"),
        ("same_slot_second", np.nan_to_num(pair["same_second"]), pair_ok, "pair"),
        ("repeat_inconsistency", rep[""][1], rep[""][0], "order-group"),
        *[(f"repeat_inconsistency_{o}", rep[o][1], rep[o][0], "order-group") for o in orders],
    ]
    return specs, {**pair, "failed": c["failed"], "pair_ok": pair_ok}


def _draw_counts(draws: np.ndarray, n: int) -> np.ndarray:
    """(n_boot, n) float matrix: how often each item is drawn in each replicate of ``draws``."""
    nb = draws.shape[0]
    flat = (np.arange(nb)[:, None] * n + draws).ravel()
    return np.bincount(flat, minlength=nb * n).reshape(nb, n).astype(float)


def _whole(x: np.ndarray) -> bool:
    """Every value a whole number small enough that sums of products stay exact in float64."""
    return bool(np.all(np.isfinite(x)) and np.all(x == np.round(x)) and np.abs(x).sum() < 2.0 ** 40)


def _replicate_sums(x: np.ndarray, draws: np.ndarray, counts: np.ndarray | None) -> np.ndarray:
    """Per replicate, the sum of ``x`` over the drawn items: ``x[draws].sum(1)``.

    With ``counts`` (:func:`_draw_counts`) and whole-number ``x`` (the counts every metric here sums) it is
    ``counts @ x``: every partial sum is a whole number below 2**53, so both give the same floats."""
    if counts is not None and _whole(x):
        return counts @ x
    return x[draws].sum(1)


def _ratio_interval(num: np.ndarray, den: np.ndarray, draws: np.ndarray | None, n_boot: int,
                    confidence: float, counts: np.ndarray | None = None) -> tuple[float, float, str]:
    """(low, high, ci_method) of sum(num) / sum(den): item bootstrap when ``draws``, else exact.

    ``counts`` (:func:`_draw_counts` of ``draws``) sums whole-number replicates as one matrix product."""
    k, m = float(num.sum()), float(den.sum())
    if draws is None:
        return (*proportion_ci(int(round(k)), int(m), confidence=confidence), EXACT)
    bn, bd = _replicate_sums(num, draws, counts), _replicate_sums(den, draws, counts)
    with np.errstate(invalid="ignore", divide="ignore"):
        low, high = percentile_interval(np.where(bd > 0, bn / np.where(bd > 0, bd, 1), np.nan), confidence=confidence)
    if m and low == high:  # degenerate bootstrap (e.g. every call first): fall back to exact
        return (*proportion_ci(int(round(k)), int(m), confidence=confidence),
                f"{EXACT}; bootstrap distribution degenerate")
    return low, high, f"percentile bootstrap over items (B={n_boot})"


def _metric_test(metric: str, k: float, m: float, same_second: np.ndarray) -> tuple[float, str]:
    """(p_value, test) of a metric: first-slot rate vs 0.5, the sign test on same-slot pairs, else none."""
    if metric == "first_slot_rate" and m:
        return float(sps.binomtest(int(k), int(m), 0.5).pvalue), _FIRST_SLOT_TEST
    k2 = int(np.nan_to_num(same_second).sum())
    if metric == "same_slot_first" and k + k2:
        return float(sps.binomtest(int(k), int(k + k2), 0.5).pvalue), _SIGN_TEST
    return float("nan"), ""


def _empty_note(metric: str) -> str:
    """Why a metric with an empty denominator is NaN."""
    if metric.startswith("repeat_inconsistency"):
        return _NO_REPEATS
    return "no parsed non-tie calls" if metric == "first_slot_rate" else "no pair with both orders parsed"


def _position_group(g: pd.DataFrame, j, c, n_boot: int, rng, confidence: float) -> list[dict]:
    """The metric rows of one judge and criterion."""
    items = pd.Index(sorted(g["_item"].unique()))
    n = len(items)
    specs, extra = _metric_specs(g, items)
    n_pairs = int(extra["pair_ok"].sum())
    draws = item_draws(n, n_boot, rng) if n_boot and n else None
    counts = _draw_counts(draws, n) if draws is not None else None
    rows = []
    for metric, num, den, unit in specs:
        k, m = float(num.sum()), float(den.sum())
        low, high, ci_method = _ratio_interval(num, den, draws, n_boot, confidence, counts)
        p, test = _metric_test(metric, k, m, extra["same_second"])
        rows.append({"judge": j, "criterion": c, "metric": metric, "estimate": k / m if m else float("nan"),
                     "ci_low": low, "ci_high": high, "ci_method": ci_method,
                     "n_items": n_pairs if unit == "pair" else n, "n_failed": int(extra["failed"].sum()),
                     "note": "" if m else _empty_note(metric), "n": int(m), "n_dropped": n - n_pairs,
                     "p_value": p, "test": test, "unit": unit})
    return rows


def position_bias_wide(res: pd.DataFrame,
                       metrics: Sequence[str] = ("consistency", "flip_rate", "first_slot_rate")) -> pd.DataFrame:
    """Reshape :func:`position_bias`'s table to one row per judge and criterion (the CLI's view).

    Parameters
    ----------
    res : DataFrame
        The table of :func:`position_bias`.
    metrics : sequence of str, default ("consistency", "flip_rate", "first_slot_rate")
        The metrics to spread into columns.

    Returns
    -------
    DataFrame
        ``judge, criterion``, ``n_items`` (pairs), ``n_failed``, each metric with ``_ci_low``/``_ci_high``
        (and ``first_slot_p_value``, ``first_slot_n``) and ``ci_method``.
    """
    rows = []
    for (j, c), g in res.groupby(["judge", "criterion"], sort=True):
        g = g.set_index("metric")
        row = {"judge": j, "criterion": c,
               "n_items": int(g.loc["consistency", "n"]) if "consistency" in g.index else 0,
               "n_failed": int(g["n_failed"].iloc[0])}
        for m in metrics:
            if m in g.index:
                row.update({m: g.loc[m, "estimate"], f"{m}_ci_low": g.loc[m, "ci_low"],
                            f"{m}_ci_high": g.loc[m, "ci_high"]})
        if "first_slot_rate" in g.index:
            row["first_slot_n"] = int(g.loc["first_slot_rate", "n"])
            row["first_slot_p_value"] = g.loc["first_slot_rate", "p_value"]
        methods = [m.split(";")[0] for m in g["ci_method"]]
        boot = sorted({m for m in methods if "bootstrap" in m})
        degenerate = any("degenerate" in m for m in g["ci_method"])
        row["ci_method"] = (boot[0] if boot else methods[0]) + (
            "; exact Clopper-Pearson where the bootstrap is degenerate" if degenerate and boot else "")
        rows.append(row)
    return pd.DataFrame(rows)


# =========================================================================== resolved labels
@shared_docs
@takes_columns("rater", "criterion", "label", "rater_kind")
def flip_rate_from_labels(
    annotations: pd.DataFrame,
    *,
    inconsistent: str = "inconsistent",
    confidence: float = 0.95,
    columns: Columns = None,
) -> pd.DataFrame:
    """Inconsistency (flip) rate per rater from resolved labels with an ``inconsistent`` code.

    For data where only the resolved verdict per item is published (MCQG-SRefine Table 19: -1 =
    different preference in the two orders), this is all that can be recovered: the first-slot
    preference cannot. Human raters (``rater_kind == "human"``) are skipped. NA labels are counted
    in ``n_failed``.

    Parameters
    ----------
    annotations : DataFrame
        ``rater, criterion, label`` and optionally ``rater_kind``.
    inconsistent : str, default "inconsistent"
        The label value that codes an order-inconsistent item (a value, not a column).
    {confidence}
    {columns}

    Returns
    -------
    DataFrame
        Per rater and criterion, metrics ``flip_rate`` and ``consistency`` with exact CIs, ``count``.
    """
    rater, criterion, label, rater_kind = "rater", "criterion", "label", "rater_kind"
    d = annotations
    if rater_kind in d.columns:
        d = d[d[rater_kind] != "human"]
    rows = []
    for (r, c), g in d.groupby([rater, criterion], sort=True):
        valid = g[label].notna()
        n = int(valid.sum())
        k = int((g.loc[valid, label] == inconsistent).sum())
        for metric, num in (("flip_rate", k), ("consistency", n - k)):
            low, high = proportion_ci(num, n, confidence=confidence)
            rows.append({"judge": r, "criterion": c, "metric": metric, "estimate": num / n if n else np.nan,
                         "ci_low": low, "ci_high": high, "ci_method": EXACT, "n_items": n,
                         "n_failed": int((~valid).sum()),
                         "note": "from resolved labels: first-slot preference not recoverable",
                         "n": n, "n_dropped": 0, "p_value": np.nan, "unit": "pair", "count": num})
    return bias_frame(rows)


@shared_docs
@takes_columns("item", "rater", "criterion", "label")
def agreement_on_consistent(
    annotations: pd.DataFrame,
    reference: str,
    *,
    inconsistent: str = "inconsistent",
    confidence: float = 0.95,
    columns: Columns = None,
) -> pd.DataFrame:
    """Consistency and percentage agreement with ``reference`` on the consistent items, per rater.

    MCQG-SRefine's Table 9 protocol: position-inconsistent items are removed and agreement with the
    expert is computed on the rest (ties are a class).

    Parameters
    ----------
    annotations : DataFrame
        ``item, rater, criterion, label``.
    reference : str
        The reference rater (e.g. the expert).
    inconsistent : str, default "inconsistent"
        The label value that codes an order-inconsistent item.
    {confidence}
    {columns}

    Returns
    -------
    DataFrame
        Per rater and criterion, metrics ``consistency`` and ``agreement_on_consistent`` (exact CIs),
        ``count`` and ``reference``; ready for :func:`viz.plot_consistency_vs_agreement`.

    Raises
    ------
    SchemaError
        ``reference`` is not a rater.
    """
    item, rater, criterion, label = "item", "rater", "criterion", "label"
    ref = annotations[annotations[rater] == reference].set_index([item, criterion])[label]
    if ref.empty:
        raise SchemaError("annotations", rater, [], f"reference rater {reference!r} not found; raters: "
                          f"{sorted(map(str, annotations[rater].unique()))}")
    rows = []
    others = annotations[annotations[rater] != reference]
    for (r, c), g in others.groupby([rater, criterion], sort=True):
        g = g.set_index([item, criterion])
        valid = g[label].notna()
        n = int(valid.sum())
        cons = valid & (g[label] != inconsistent)
        refv = ref.reindex(g.index)
        both = cons & refv.notna()
        k, m = int(cons.sum()), int(both.sum())
        a = int((g.loc[both, label] == refv[both]).sum())
        for metric, num, den in (("consistency", k, n), ("agreement_on_consistent", a, m)):
            low, high = proportion_ci(num, den, confidence=confidence)
            rows.append({"judge": r, "criterion": c, "metric": metric,
                         "estimate": num / den if den else np.nan, "ci_low": low, "ci_high": high,
                         "ci_method": EXACT, "n_items": den, "n_failed": int((~valid).sum()), "note": "",
                         "n": den, "n_dropped": n - den, "p_value": np.nan, "unit": "pair", "count": num,
                         "reference": reference})
    return bias_frame(rows)


# =========================================================================== k-slot protocols
def _with_defaults(df: pd.DataFrame, judge: str, criterion: str) -> pd.DataFrame:
    """A copy with one judge / one criterion filled in where those columns are absent."""
    d = df.copy()
    if judge not in d.columns:
        d[judge] = "judge"
    if criterion not in d.columns:
        d[criterion] = "overall"
    return d


@shared_docs
@takes_columns("chosen_slot", "judge", "criterion", "parse_status")
def slot_preference(
    df: pd.DataFrame,
    *,
    n_slots: int,
    confidence: float = 0.95,
    chosen: str | None = None,
    columns: Columns = None,
) -> pd.DataFrame:
    """Preference for each slot in a k-slot protocol (one row per call, ``chosen_slot`` = slot picked).

    Slots are numbered 1..``n_slots``. With content balanced over slots (e.g. all permutations or
    cyclic shifts), no position bias means each slot is chosen 1/k of the time.

    Parameters
    ----------
    df : DataFrame
        One row per call: ``chosen_slot`` and optionally ``judge``, ``criterion``, ``parse_status``.
    n_slots : int
        The slots per prompt (k >= 2).
    {confidence}
    chosen : str, optional
        Deprecated: the old name of the chosen-slot column; use ``columns={"chosen_slot": ...}``.
    {columns}

    Returns
    -------
    DataFrame
        Per judge and criterion, one ``slot_rate`` row per slot (exact CI, exact binomial test against
        1/k) and one ``uniformity`` row whose ``p_value`` is the chi-square goodness-of-fit test.

    Raises
    ------
    SchemaError
        A parsed slot number outside 1..k.
    """
    if chosen is not None:
        import warnings

        warnings.warn("slot_preference(chosen=...) is deprecated; pass columns={'chosen_slot': ...}",
                      DeprecationWarning, stacklevel=4)
        df = df.drop(columns=["chosen_slot"], errors="ignore").rename(columns={chosen: "chosen_slot"})
    chosen, judge, criterion, parse_status = "chosen_slot", "judge", "criterion", "parse_status"
    if n_slots < 2:
        raise ValueError("n_slots must be at least 2")
    d = _with_defaults(df, judge, criterion)
    s = pd.to_numeric(d[chosen], errors="coerce")
    ok = s.notna()
    if parse_status in d.columns:
        ok &= d[parse_status].eq("ok")
    bad = ok & ~s.isin(range(1, n_slots + 1))
    if bad.any():
        raise SchemaError("judgments", chosen, rows_of(bad), f"slot numbers must be 1..{n_slots}")
    d["_s"], d["_ok"] = s, ok
    rows = []
    for (j, c), g in d.groupby([judge, criterion], sort=True):
        v = g.loc[g["_ok"], "_s"].astype(int)
        n = len(v)
        counts = np.array([(v == k).sum() for k in range(1, n_slots + 1)])
        base = {"judge": j, "criterion": c, "n_items": n, "n_failed": int((~g["_ok"]).sum()), "n": n,
                "n_dropped": 0, "unit": "call", "expected": 1 / n_slots}
        for k in range(1, n_slots + 1):
            low, high = proportion_ci(int(counts[k - 1]), n, confidence=confidence)
            p = float(sps.binomtest(int(counts[k - 1]), n, 1 / n_slots).pvalue) if n else np.nan
            rows.append({**base, "metric": "slot_rate", "slot": k, "estimate": counts[k - 1] / n if n else np.nan,
                         "ci_low": low, "ci_high": high, "ci_method": EXACT, "note": "", "p_value": p,
                         "test": "exact binomial test vs 1/k"})
        rows.append({**base, "metric": "uniformity", "slot": None,
                     "estimate": float(counts.max() / n) if n else np.nan, "ci_method": "",
                     "note": "estimate = largest slot share",
                     "p_value": float(sps.chisquare(counts).pvalue) if n else np.nan,
                     "test": "chi-square goodness of fit"})
    return bias_frame(rows)


def _centred(gg: pd.DataFrame, center: str, response: str) -> pd.DataFrame:
    """The parsed calls with ``_y``: the score centred overall, or within its response (repeats only)."""
    if center == "response":
        # within-response deviation, scaled by m/(m-1) so that it estimates the same contrast as
        # "overall" (a response shown m times contributes its own slot effect to its mean)
        m = gg.groupby(response)["_s"].transform("size")
        gg = gg[m >= 2].copy()
        m = m[m >= 2]
        gg["_y"] = (gg["_s"] - gg.groupby(response)["_s"].transform("mean")) * m / (m - 1)
    else:
        gg = gg.copy()
        gg["_y"] = gg["_s"] - gg["_s"].mean()
    return gg


def _slot_effect_rows(gg: pd.DataFrame, key: dict, *, position: str, group: str, n_boot: int, rng,
                      confidence: float) -> list[dict]:
    """One row per position: the mean centred score there with a bootstrap over ``group``."""
    groups = pd.Index(sorted(gg[group].astype(str).unique()))
    gi = gg[group].astype(str).map({k: i for i, k in enumerate(groups)}).to_numpy()
    draws = item_draws(len(groups), n_boot, rng) if n_boot and len(groups) else None
    ci_method = f"percentile bootstrap over {group} (B={n_boot})" if draws is not None else ""
    rows = []
    for pos in sorted(gg[position].unique()):
        at = (gg[position] == pos).to_numpy()
        sums = np.bincount(gi[at], weights=gg["_y"].to_numpy()[at], minlength=len(groups))
        cnts = np.bincount(gi[at], minlength=len(groups)).astype(float)
        low = high = p = np.nan
        if draws is not None:
            bs, bc = sums[draws].sum(1), cnts[draws].sum(1)
            reps = np.where(bc > 0, bs / np.where(bc > 0, bc, 1), np.nan)
            low, high = percentile_interval(reps, confidence=confidence)
            p = bootstrap_p(reps)
        rows.append({**key, "metric": "slot_score_effect", "position": int(pos),
                     "estimate": sums.sum() / cnts.sum() if cnts.sum() else np.nan, "ci_low": low, "ci_high": high,
                     "ci_method": ci_method, "n_items": int((cnts > 0).sum()), "note": "", "n": int(cnts.sum()),
                     "n_dropped": 0, "p_value": p, "test": "two-sided bootstrap p" if draws is not None else "",
                     "unit": "response-call"})
    return rows


@shared_docs
@takes_columns("position", "score", "question_item", "item", "judge", "criterion", "parse_status")
def slot_score_effect(
    df: pd.DataFrame,
    *,
    center: str = "overall",
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    group: str | None = None,
    response: str | None = None,
    columns: Columns = None,
) -> pd.DataFrame:
    """Slot effect on scores in a k-slot protocol (k responses scored in one prompt, order shuffled).

    One row per response and call with its shown ``position`` (1..k) and ``score``. Per judge,
    criterion and position: the mean score there minus the mean over all positions
    (``center="overall"``; unbiased when the order is shuffled at random), or the mean of
    ``(score - mean score of the same response over its m presentations) * m / (m - 1)``
    (``center="response"``; needs repeats that show each response in several slots, removes content
    differences exactly; responses shown once are skipped). Failed parses are counted in ``n_failed``
    and excluded.

    Parameters
    ----------
    df : DataFrame
        ``position, score``, ``question_item`` (the prompt, resampled by the bootstrap), ``item`` (the
        response) and optionally ``judge``, ``criterion``, ``parse_status``.
    center : {"overall", "response"}, default "overall"
        What a score is centred on.
    {n_boot}
    {seed}
    {confidence}
    group : str, optional
        Deprecated: the old name of the ``question_item`` column; use ``columns``.
    response : str, optional
        Deprecated: the old name of the response (``item``) column; use ``columns``.
    {columns}

    Returns
    -------
    DataFrame
        Per judge, criterion and position, metric ``slot_score_effect``: the contract columns (percentile
        bootstrap over the questions), ``p_value`` (two-sided bootstrap p), ``position`` and ``center``.

    Raises
    ------
    SchemaError
        A needed column is missing.
    """
    old = {k: v for k, v in (("question_item", group), ("item", response)) if v is not None}
    if old:
        import warnings

        warnings.warn(f"slot_score_effect(group=/response=) is deprecated; pass columns={old!r}",
                      DeprecationWarning, stacklevel=4)
        df = df.drop(columns=[k for k, v in old.items() if v != k and k in df.columns]).rename(
            columns={v: k for k, v in old.items()})
    position, score, group, response, judge, criterion, parse_status = (
        "position", "score", "question_item", "item", "judge", "criterion", "parse_status")
    if center not in ("overall", "response"):
        raise ValueError("center must be 'overall' or 'response'")
    need = [c for c in (position, score, group) if c not in df.columns]
    if need:
        raise SchemaError("judgments", need[0], [], f"missing column(s) {need}; present: {list(df.columns)}")
    d = _with_defaults(df, judge, criterion)
    d["_s"] = pd.to_numeric(d[score], errors="coerce")
    ok = d["_s"].notna()
    if parse_status in d.columns:
        ok &= d[parse_status].eq("ok")
    d["_ok"] = ok
    rng = np.random.default_rng(seed)
    rows = []
    for (j, c), g in d.groupby([judge, criterion], sort=True):
        key = {"judge": j, "criterion": c, "n_failed": int((~g["_ok"]).sum()), "center": center}
        rows += _slot_effect_rows(_centred(g[g["_ok"]], center, response), key, position=position, group=group,
                                  n_boot=n_boot, rng=rng, confidence=confidence)
    return bias_frame(rows)
