"""Judge biases: position (order), length, and self-preference / lineage; ``medeval position-bias``.

Position bias (pairwise protocol, both presentation orders)
    :func:`position_bias` - per judge and criterion: consistency, flip rate, first-slot preference
    (exact binomial test against 0.5), the share of pairs where the same slot won in both orders,
    tie rate and repeat inconsistency; every row with ``n``, a CI and ``n_failed``.
    :func:`flip_rate_from_labels` - the inconsistency (flip) rate when only resolved labels with an
    ``inconsistent`` code are published (MCQG-SRefine Table 19's -1).
    :func:`agreement_on_consistent` - consistency against agreement with a reference rater.
    :func:`slot_preference` - k-slot protocols: the preference for each slot (choices);
    :func:`slot_score_effect` - k-slot protocols scored per response: the score bonus of each slot.
    :func:`answer_letter_balance` - the correct letter's balance in generated MCQs.
Length bias
    :func:`length_bias` - logistic regression (statsmodels) of "A preferred" on presentation
    position and length difference; :func:`longer_preferred_rate`;
    :func:`length_controlled_win_rate` (AlpacaEval-2 style: the win rate with the length and
    position terms set to zero).
Self-preference and lineage bias (MedQADE)
    :func:`self_preference` - Delta_self and Delta_family with percentile-bootstrap CIs; the lineage map
    is data (``data/lineage.yaml``, :func:`load_lineage`).

Conventions: inputs are long DataFrames, column names are keyword arguments; outputs are tidy
DataFrames with ``judge, criterion, metric, estimate, ci_low, ci_high, n, n_items, n_failed,
p_value, method, note``. Parse failures (``parse_status != "ok"`` or NA verdicts) are counted in
``n_failed`` and excluded from every rate; they are never turned into ties.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from medeval_kit.errors import DataFileError, SchemaError
from medeval_kit.stats import proportion_ci
from medeval_kit.pairwise import (
    MODEL_LABELS,
    ORDERS,
    SLOT_LABELS,
    polarity_series,
    to_slot,
    unswap,
)

__all__ = [
    "unswap",
    "to_slot",
    "read_judgments",
    "check_pairwise",
    "position_bias",
    "position_bias_wide",
    "flip_rate_from_labels",
    "agreement_on_consistent",
    "slot_preference",
    "slot_score_effect",
    "answer_letter_balance",
    "response_lengths",
    "length_bias",
    "longer_preferred_rate",
    "length_controlled_win_rate",
    "load_lineage",
    "self_preference",
    "plot_flip_rates",
    "plot_first_slot",
    "plot_consistency_vs_agreement",
    "plot_self_preference",
    "plot_letter_balance",
    "plot_rate_by_judge",
    "pairwise_from_annotations",
    "pairwise_to_response_scores",
    "simulate_length_bias",
    "simulate_self_preference",
    "register_cli",
]

RESULT_COLUMNS = ["judge", "criterion", "metric", "estimate", "ci_low", "ci_high", "n", "n_items",
                  "n_failed", "n_dropped", "p_value", "unit", "method", "note"]


# =========================================================================== reading and checking
def read_judgments(path: str | Path, *, text_columns: Collection[str] = ()) -> pd.DataFrame:
    """Read a judgments file (CSV, TSV, JSONL, JSON array or Parquet); errors name the file and line.

    ``text_columns`` (e.g. the verdict column) are read from CSV/TSV as written, without pandas' NA
    guessing: only an empty cell is missing, so a judge's literal ``NA`` or ``None`` token stays text.
    """
    from medeval_kit.datasets._io import read_table

    try:
        df = read_table(path)
        cols = [c for c in dict.fromkeys(text_columns) if c in df.columns]
        suffix = Path(path).suffix.lower()
        if cols and suffix in (".csv", ".tsv", ".txt"):
            raw = pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",", usecols=cols, dtype=str,
                              keep_default_na=False, na_values=[""])
            for c in cols:
                df[c] = raw[c].astype(object).where(raw[c].notna(), None).to_numpy()
        return df
    except DataFileError:
        raise
    except Exception as exc:  # e.g. pyarrow errors on a corrupt parquet file
        raise DataFileError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None


def _rows(mask) -> list[int]:
    return [int(i) for i in np.flatnonzero(np.asarray(mask, dtype=bool))]


def check_pairwise(
    df: pd.DataFrame,
    *,
    item: str = "item",
    judge: str | None = "judge",
    criterion: str | None = "criterion",
    order: str = "order",
    slot_verdict: str = "slot_verdict",
    repeat: str | None = "repeat",
    protocol: str | None = "protocol",
    source: str | None = None,
) -> pd.DataFrame:
    """Check a two-order pairwise judgments table; return it with normalised columns, else raise.

    Errors (:class:`SchemaError`, naming ``source``, the column and the 0-based data rows):
    a missing column; more than one protocol; a non-pairwise protocol; a number of distinct orders
    other than two; an (item, judge, criterion) shown in only one order ("order without its swap");
    an unknown slot verdict; a duplicated (item, judge, criterion, order, repeat).
    The returned copy has ``_judge``, ``_criterion``, ``_order`` (upper-case str), ``_slot``
    (lower-case slot verdict or NA) and ``_repeat`` columns.
    """
    tbl = "judgments"
    judge = None if judge in (None, "", "__none__") else judge
    criterion = None if criterion in (None, "", "__none__") else criterion
    missing = [c for c in (item, order, slot_verdict) if c not in df.columns]
    # judge / criterion may be absent under their default names (one judge, one criterion)
    missing += [c for c, default in ((judge, "judge"), (criterion, "criterion"))
                if c and c not in df.columns and c != default]
    if missing:
        raise SchemaError(tbl, missing[0], [], f"missing column(s) {missing}; present: {list(df.columns)}. "
                          "Name the right columns (e.g. --item/--order/--verdict)", source)
    if len(df) == 0:
        raise SchemaError(tbl, None, [], "the table is empty", source)
    d = df.reset_index(drop=True).copy()
    if protocol and protocol in d.columns:
        protos = d[protocol].astype(str)
        if protos.nunique() > 1:
            top = "pairwise" if (protos == "pairwise").any() else protos.mode().iloc[0]
            raise SchemaError(tbl, protocol, _rows(protos != top),
                              f"the table mixes protocols {sorted(protos.unique())}; position bias needs "
                              f"one pairwise protocol - filter the rows first", source)
        if protos.iloc[0] != "pairwise":
            raise SchemaError(tbl, protocol, _rows(protos != "pairwise"),
                              f"protocol is {protos.iloc[0]!r}; position bias of two orders needs 'pairwise' "
                              "(use slot_preference for k-slot protocols)", source)
    d["_judge"] = d[judge].astype(str) if judge and judge in d.columns else "judge"
    d["_criterion"] = d[criterion].astype(str) if criterion and criterion in d.columns else "overall"
    d["_item"] = d[item].astype(str)
    if d[order].isna().any():
        raise SchemaError(tbl, order, _rows(d[order].isna()), "missing presentation order", source)
    d["_order"] = d[order].astype(str).str.strip().str.upper()
    orders = sorted(d["_order"].unique())
    if len(orders) != 2:
        what = "only one order" if len(orders) == 1 else f"{len(orders)} orders"
        top2 = d["_order"].value_counts().index[:2]
        raise SchemaError(tbl, order, [] if len(orders) == 1 else _rows(~d["_order"].isin(top2)),
                          f"{what} {orders} found; position bias needs each pair in exactly two orders "
                          "(e.g. AB and BA). For k-slot protocols use slot_preference", source)
    n_orders = d.groupby(["_judge", "_criterion", "_item"])["_order"].transform("nunique")
    if (n_orders < 2).any():
        bad = n_orders < 2
        ex = d.loc[bad].iloc[0]
        raise SchemaError(tbl, order, _rows(bad),
                          f"order without its swap: {int(bad.sum())} row(s) have no row in the other order "
                          f"for the same item, judge and criterion (e.g. item {ex['_item']!r}, judge "
                          f"{ex['_judge']!r}, order {ex['_order']!r}). Add the swapped call or drop those rows",
                          source)
    raw = d[slot_verdict]
    d["_slot"] = raw.map(lambda v: None if pd.isna(v) else str(v).strip().lower())
    bad = d["_slot"].notna() & ~d["_slot"].isin(SLOT_LABELS)
    if bad.any():
        unknown = sorted({str(v) for v in raw[bad]})[:5]
        raise SchemaError(tbl, slot_verdict, _rows(bad),
                          f"unknown slot verdict(s) {unknown}; expected presented-slot terms {list(SLOT_LABELS)} "
                          "(NA for a failed parse). Model-terms verdicts (A/B) must be mapped with "
                          "resolve.to_slot(verdict, order) first"
                          + ("; this file has a 'slot_verdict' column (--verdict slot_verdict)"
                             if "slot_verdict" in d.columns and slot_verdict != "slot_verdict" else ""), source)
    d["_repeat"] = d[repeat] if repeat and repeat in d.columns else 0
    dup = d.duplicated(["_judge", "_criterion", "_item", "_order", "_repeat"], keep=False)
    if dup.any():
        raise SchemaError(tbl, f"{item},{order}" + (f",{repeat}" if repeat and repeat in d.columns else ""),
                          _rows(dup), "duplicate calls: each item, judge, criterion, order and repeat must "
                          "occur once (add a repeat column if the calls are repeats)", source)
    return d


# =========================================================================== position bias
def _ci_from_boot(boot: np.ndarray, confidence: float) -> tuple[float, float]:
    boot = boot[~np.isnan(boot)]
    if boot.size == 0:
        return float("nan"), float("nan")
    a = (1 - confidence) / 2
    return float(np.quantile(boot, a)), float(np.quantile(boot, 1 - a))


_MIRROR_SLOT = {"first": "second", "second": "first", "tie": "tie", "neither": "neither"}


def position_bias(
    df: pd.DataFrame,
    *,
    item: str = "item",
    judge: str = "judge",
    criterion: str = "criterion",
    order: str = "order",
    slot_verdict: str | None = "slot_verdict",
    verdict: str = "verdict",
    repeat: str | None = "repeat",
    parse_status: str | None = "parse_status",
    protocol: str | None = "protocol",
    n_boot: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
    source: str | None = None,
) -> pd.DataFrame:
    """Position-bias statistics per judge and criterion from a table holding both orders.

    The verdict is read from ``slot_verdict`` (first/second/tie/neither); if that column is absent it
    is derived from the model-terms ``verdict`` and an ``order`` of AB/BA with :func:`resolve.to_slot`.
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

    CIs: exact Clopper-Pearson (``n_boot=0``), or a percentile bootstrap resampling items
    (``n_boot > 0``), which respects the clustering of calls within items.
    """
    d = df
    if (slot_verdict is None or slot_verdict not in d.columns) and verdict in d.columns:
        if order not in d.columns:
            raise SchemaError("judgments", order, [], f"missing column; present: {list(d.columns)}", source)
        bad = ~d[order].astype(str).str.upper().isin(["AB", "BA"]).to_numpy()
        if bad.any():
            raise SchemaError("judgments", order, _rows(bad),
                              f"to un-swap the model-terms column {verdict!r} the order must be AB or BA; found "
                              f"{sorted(map(str, set(d.loc[bad, order])))[:5]}. Pass presented-slot verdicts "
                              "(first/second/tie) as slot_verdict instead", source)
        bad = (d[verdict].notna() & ~d[verdict].isin(MODEL_LABELS)).to_numpy()
        if bad.any():
            raise SchemaError("judgments", verdict, _rows(bad),
                              f"unknown verdict(s) {sorted(map(str, set(d.loc[bad, verdict])))[:5]}; expected model "
                              f"terms {list(MODEL_LABELS)}", source)
        d = d.copy()
        d["_slot_from_verdict"] = to_slot(d[verdict].reset_index(drop=True),
                                          d[order].astype(str).str.upper().reset_index(drop=True)).values
        slot_verdict = "_slot_from_verdict"
    d = check_pairwise(d, item=item, judge=judge, criterion=criterion, order=order,
                       slot_verdict=slot_verdict or "slot_verdict", repeat=repeat, protocol=protocol,
                       source=source)
    ok = d["_slot"].notna()
    if parse_status and parse_status in d.columns:
        ok &= d[parse_status].astype(str).eq("ok")
    d["_ok"] = ok
    rng = np.random.default_rng(seed)
    out = []
    for (j, c), g in d.groupby(["_judge", "_criterion"], sort=True):
        out.extend(_position_group(g, j, c, n_boot, rng, confidence))
    res = pd.DataFrame(out)
    return res[[c for c in RESULT_COLUMNS if c in res.columns]]


def _position_group(g: pd.DataFrame, j, c, n_boot: int, rng, confidence: float) -> list[dict]:
    items = pd.Index(sorted(g["_item"].unique()))
    n = len(items)
    orders = sorted(g["_order"].unique())
    okg = g[g["_ok"]]
    per_item = pd.DataFrame({
        "first": okg["_slot"].eq("first"), "second": okg["_slot"].eq("second"),
        "tie": okg["_slot"].isin(["tie", "neither"]), "ok": True, "_item": okg["_item"],
    }).groupby("_item").sum().reindex(items, fill_value=0)
    first = per_item["first"].to_numpy(float)
    second = per_item["second"].to_numpy(float)
    tie = per_item["tie"].to_numpy(float)
    okc = per_item["ok"].to_numpy(float)
    failed = (~g["_ok"]).groupby(g["_item"]).sum().reindex(items, fill_value=0).to_numpy(float)
    # per (item, order): vote counts among parsed repeats -> majority and repeat (in)consistency
    cnt = okg.groupby(["_item", "_order", "_slot"]).size().rename("_n").reset_index()
    io = cnt.groupby(["_item", "_order"]).agg(_tot=("_n", "sum"), _nd=("_slot", "size"), _max=("_n", "max"))
    rep_groups = (io["_tot"] >= 2).groupby(level=0).sum().reindex(items, fill_value=0).to_numpy(float)
    rep_incons = ((io["_tot"] >= 2) & (io["_nd"] > 1)).groupby(level=0).sum().reindex(items, fill_value=0).to_numpy(float)
    by_order = {}
    for o in orders:
        sub = io.xs(o, level="_order") if o in io.index.get_level_values("_order") else io.iloc[0:0].droplevel(1)
        by_order[o] = ((sub["_tot"] >= 2).reindex(items, fill_value=False).to_numpy(float),
                       ((sub["_tot"] >= 2) & (sub["_nd"] > 1)).reindex(items, fill_value=False).to_numpy(float))
    cnt = cnt.merge(io[["_max"]].reset_index(), on=["_item", "_order"])
    top = cnt[cnt["_n"] == cnt["_max"]].copy()
    top["_ntop"] = top.groupby(["_item", "_order"])["_slot"].transform("size")
    # a unique top wins; on a tied top prefer tie, then neither, else no verdict
    top["_rank"] = np.where(top["_ntop"] == 1, 0, top["_slot"].map({"tie": 1, "neither": 2}).fillna(9))
    best = top.sort_values(["_item", "_order", "_rank"]).groupby(["_item", "_order"]).head(1)
    best = best[best["_rank"] < 9]
    maj = best.pivot(index="_item", columns="_order", values="_slot").reindex(index=items, columns=orders)
    v1, v2 = maj[orders[0]], maj[orders[1]]
    both = (v1.notna() & v2.notna()).to_numpy()
    consistent = np.where(both, (v1.map(_MIRROR_SLOT) == v2).to_numpy(float), np.nan)
    same_first = np.where(both, ((v1 == "first") & (v2 == "first")).to_numpy(float), np.nan)
    same_second = np.where(both, ((v1 == "second") & (v2 == "second")).to_numpy(float), np.nan)
    n_failed = int(failed.sum())
    pair_ok = ~np.isnan(consistent)
    n_pairs = int(pair_ok.sum())
    n_dropped = int(n - n_pairs)

    def ratio(num, den):
        return num / den if den else float("nan")

    specs = [
        # metric, numerator per item, denominator per item, unit
        ("first_slot_rate", first, first + second, "call"),
        ("tie_rate", tie, okc, "call"),
        ("consistency", np.nan_to_num(consistent), pair_ok.astype(float), "pair"),
        ("flip_rate", pair_ok - np.nan_to_num(consistent), pair_ok.astype(float), "pair"),
        ("same_slot_first", np.nan_to_num(same_first), pair_ok.astype(float), "pair"),
        ("same_slot_second", np.nan_to_num(same_second), pair_ok.astype(float), "pair"),
        ("repeat_inconsistency", rep_incons, rep_groups, "order-group"),
        *[(f"repeat_inconsistency_{o}", by_order[o][1], by_order[o][0], "order-group") for o in orders],
    ]
    boot_idx = rng.integers(0, n, size=(n_boot, n)) if n_boot and n else None
    rows = []
    for metric, num, den, unit in specs:
        k, m = float(num.sum()), float(den.sum())
        est = ratio(k, m)
        note, p = "", float("nan")
        if boot_idx is not None:
            bn, bd = num[boot_idx].sum(1), den[boot_idx].sum(1)
            with np.errstate(invalid="ignore", divide="ignore"):
                low, high = _ci_from_boot(np.where(bd > 0, bn / np.where(bd > 0, bd, 1), np.nan), confidence)
            method = f"percentile bootstrap over items (B={n_boot})"
            if m and low == high:  # degenerate bootstrap (e.g. every call first): fall back to exact
                low, high = proportion_ci(int(round(k)), int(m), confidence=confidence)
                method = "exact binomial (Clopper-Pearson); bootstrap distribution degenerate"
        else:
            low, high = proportion_ci(int(round(k)), int(m), confidence=confidence)
            method = "exact binomial (Clopper-Pearson)"
        if metric == "first_slot_rate" and m:
            p = float(stats.binomtest(int(k), int(m), 0.5).pvalue)
            method += "; exact binomial test vs 0.5 (calls treated as independent)"
        if metric == "same_slot_first":
            k2 = int(np.nan_to_num(same_second).sum())
            if k + k2:
                p = float(stats.binomtest(int(k), int(k + k2), 0.5).pvalue)
                method += "; sign test same_slot_first vs same_slot_second"
        if not m:
            note = {"repeat_inconsistency": "fewer than 2 parsed repeats per order",
                    **{f"repeat_inconsistency_{o}": "fewer than 2 parsed repeats per order" for o in orders},
                    "first_slot_rate": "no parsed non-tie calls"}.get(metric, "no pair with both orders parsed")
        rows.append({"judge": j, "criterion": c, "metric": metric, "estimate": est, "ci_low": low,
                     "ci_high": high, "n": int(m), "n_items": n_pairs if unit == "pair" else n,
                     "n_failed": n_failed, "n_dropped": n_dropped, "p_value": p, "unit": unit,
                     "method": method, "note": note})
    return rows


def position_bias_wide(res: pd.DataFrame, metrics: Sequence[str] = ("consistency", "flip_rate", "first_slot_rate")) -> pd.DataFrame:
    """One row per judge and criterion: ``n_items`` (pairs), ``n_failed`` and each metric with
    ``_ci_low``/``_ci_high`` (and ``first_slot_p_value``, ``first_slot_n``). Used by the CLI."""
    rows = []
    for (j, c), g in res.groupby(["judge", "criterion"], sort=True):
        g = g.set_index("metric")
        row = {"judge": j, "criterion": c,
               "n_items": int(g.loc["consistency", "n"]) if "consistency" in g.index else 0,
               "n_failed": int(g["n_failed"].iloc[0])}
        for m in metrics:
            if m not in g.index:
                continue
            row[m] = g.loc[m, "estimate"]
            row[f"{m}_ci_low"] = g.loc[m, "ci_low"]
            row[f"{m}_ci_high"] = g.loc[m, "ci_high"]
        if "first_slot_rate" in g.index:
            row["first_slot_n"] = int(g.loc["first_slot_rate", "n"])
            row["first_slot_p_value"] = g.loc["first_slot_rate", "p_value"]
        methods = [m.split(";")[0] for m in g["method"]]
        boot = sorted({m for m in methods if "bootstrap" in m})
        degenerate = any("degenerate" in m for m in g["method"])
        row["method"] = (boot[0] if boot else methods[0]) + (
            "; exact Clopper-Pearson where the bootstrap is degenerate" if degenerate and boot else "")
        rows.append(row)
    return pd.DataFrame(rows)


def flip_rate_from_labels(
    annotations: pd.DataFrame,
    *,
    rater: str = "rater",
    criterion: str = "criterion",
    label: str = "label",
    inconsistent: str = "inconsistent",
    rater_kind: str | None = "rater_kind",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Inconsistency (flip) rate per rater from resolved labels with an ``inconsistent`` code.

    For data where only the resolved verdict per item is published (MCQG-SRefine Table 19: -1 =
    different preference in the two orders), this is all that can be recovered: the first-slot
    preference cannot. Human raters (``rater_kind == "human"``) are skipped. NA labels are counted
    in ``n_failed``. Rows: metrics ``flip_rate`` and ``consistency``, exact CIs.
    """
    d = annotations
    if rater_kind and rater_kind in d.columns:
        d = d[d[rater_kind] != "human"]
    rows = []
    for (r, c), g in d.groupby([rater, criterion], sort=True):
        valid = g[label].notna()
        n = int(valid.sum())
        k = int((g.loc[valid, label] == inconsistent).sum())
        for metric, num in (("flip_rate", k), ("consistency", n - k)):
            low, high = proportion_ci(num, n, confidence=confidence)
            rows.append({"judge": r, "criterion": c, "metric": metric, "estimate": num / n if n else np.nan,
                         "ci_low": low, "ci_high": high, "n": n, "n_items": n,
                         "n_failed": int((~valid).sum()), "n_dropped": 0, "p_value": np.nan, "unit": "pair",
                         "method": "exact binomial (Clopper-Pearson)", "count": num,
                         "note": "from resolved labels: first-slot preference not recoverable"})
    return pd.DataFrame(rows)


def agreement_on_consistent(
    annotations: pd.DataFrame,
    reference: str,
    *,
    item: str = "item",
    rater: str = "rater",
    criterion: str = "criterion",
    label: str = "label",
    inconsistent: str = "inconsistent",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Consistency and percentage agreement with ``reference`` on the consistent items, per rater.

    MCQG-SRefine's Table 9 protocol: position-inconsistent items are removed and agreement with the
    expert is computed on the rest (ties are a class). Rows with metrics ``consistency`` and
    ``agreement_on_consistent`` (exact CIs), ready for :func:`plot_consistency_vs_agreement`.
    """
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
        k = int(cons.sum())
        refv = ref.reindex(g.index)
        both = cons & refv.notna()
        m = int(both.sum())
        a = int((g.loc[both, label] == refv[both]).sum())
        for metric, num, den, unit in (("consistency", k, n, "pair"), ("agreement_on_consistent", a, m, "pair")):
            low, high = proportion_ci(num, den, confidence=confidence)
            rows.append({"judge": r, "criterion": c, "metric": metric,
                         "estimate": num / den if den else np.nan, "ci_low": low, "ci_high": high,
                         "n": den, "n_items": den, "n_failed": int((~valid).sum()), "n_dropped": n - den,
                         "p_value": np.nan, "unit": unit, "count": num, "reference": reference,
                         "method": "exact binomial (Clopper-Pearson)", "note": ""})
    return pd.DataFrame(rows)


def slot_preference(
    df: pd.DataFrame,
    *,
    n_slots: int,
    chosen: str = "chosen_slot",
    judge: str = "judge",
    criterion: str = "criterion",
    parse_status: str | None = "parse_status",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Preference for each slot in a k-slot protocol (one row per call, ``chosen`` = slot picked).

    Slots are numbered 1..``n_slots``. With content balanced over slots (e.g. all permutations or
    cyclic shifts), no position bias means each slot is chosen 1/k of the time. Rows per slot:
    ``slot_rate`` with an exact CI and an exact binomial test against 1/k; plus one
    ``uniformity`` row whose ``p_value`` is the chi-square goodness-of-fit test over all slots.
    """
    if n_slots < 2:
        raise ValueError("n_slots must be at least 2")
    d = df.copy()
    s = pd.to_numeric(d[chosen], errors="coerce")
    ok = s.notna()
    if parse_status and parse_status in d.columns:
        ok &= d[parse_status].eq("ok")
    bad = ok & ~s.isin(range(1, n_slots + 1))
    if bad.any():
        raise SchemaError("judgments", chosen, _rows(bad), f"slot numbers must be 1..{n_slots}")
    d["_s"], d["_ok"] = s, ok
    if judge not in d.columns:
        d[judge] = "judge"
    if criterion not in d.columns:
        d[criterion] = "overall"
    rows = []
    for (j, c), g in d.groupby([judge, criterion], sort=True):
        v = g.loc[g["_ok"], "_s"].astype(int)
        n = len(v)
        counts = np.array([(v == k).sum() for k in range(1, n_slots + 1)])
        for k in range(1, n_slots + 1):
            low, high = proportion_ci(int(counts[k - 1]), n, confidence=confidence)
            p = float(stats.binomtest(int(counts[k - 1]), n, 1 / n_slots).pvalue) if n else np.nan
            rows.append({"judge": j, "criterion": c, "metric": "slot_rate", "slot": k,
                         "estimate": counts[k - 1] / n if n else np.nan, "ci_low": low, "ci_high": high,
                         "n": n, "n_items": n, "n_failed": int((~g["_ok"]).sum()), "n_dropped": 0,
                         "p_value": p, "unit": "call", "expected": 1 / n_slots,
                         "method": "exact binomial (Clopper-Pearson); exact test vs 1/k", "note": ""})
        p = float(stats.chisquare(counts).pvalue) if n else np.nan
        rows.append({"judge": j, "criterion": c, "metric": "uniformity", "slot": None,
                     "estimate": float(counts.max() / n) if n else np.nan, "ci_low": np.nan, "ci_high": np.nan,
                     "n": n, "n_items": n, "n_failed": int((~g["_ok"]).sum()), "n_dropped": 0, "p_value": p,
                     "unit": "call", "expected": 1 / n_slots, "method": "chi-square goodness of fit",
                     "note": "estimate = largest slot share"})
    return pd.DataFrame(rows)


def slot_score_effect(
    df: pd.DataFrame,
    *,
    position: str = "position",
    score: str = "score",
    group: str = "question_item",
    response: str = "item",
    judge: str = "judge",
    criterion: str = "criterion",
    parse_status: str | None = "parse_status",
    center: str = "overall",
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Slot effect on scores in a k-slot protocol (k responses scored in one prompt, order shuffled).

    One row per response and call with its shown ``position`` (1..k) and ``score``. Per judge,
    criterion and position: the mean score there minus the mean over all positions
    (``center="overall"``; unbiased when the order is shuffled at random), or the mean of
    ``(score - mean score of the same response over its m presentations) * m / (m - 1)``
    (``center="response"``; needs repeats that show each response in several slots, removes content
    differences exactly; responses shown once are skipped).
    CIs: percentile bootstrap resampling ``group`` (the question), ``p_value`` the two-sided
    bootstrap p. Failed parses are counted in ``n_failed`` and excluded.
    """
    if center not in ("overall", "response"):
        raise ValueError("center must be 'overall' or 'response'")
    need = [c for c in (position, score, group) if c not in df.columns]
    if need:
        raise SchemaError("judgments", need[0], [], f"missing column(s) {need}; present: {list(df.columns)}")
    d = df.copy()
    if judge not in d.columns:
        d[judge] = "judge"
    if criterion not in d.columns:
        d[criterion] = "overall"
    d["_s"] = pd.to_numeric(d[score], errors="coerce")
    ok = d["_s"].notna()
    if parse_status and parse_status in d.columns:
        ok &= d[parse_status].eq("ok")
    d["_ok"] = ok
    rng = np.random.default_rng(seed)
    rows = []
    for (j, c), g in d.groupby([judge, criterion], sort=True):
        gg = g[g["_ok"]].copy()
        if center == "response":
            # within-response deviation, scaled by m/(m-1) so that it estimates the same contrast as
            # "overall" (a response shown m times contributes its own slot effect to its mean)
            m = gg.groupby(response)["_s"].transform("size")
            gg = gg[m >= 2].copy()
            m = m[m >= 2]
            gg["_y"] = (gg["_s"] - gg.groupby(response)["_s"].transform("mean")) * m / (m - 1)
        else:
            gg["_y"] = gg["_s"] - gg["_s"].mean()
        groups = pd.Index(sorted(gg[group].astype(str).unique()))
        gi = gg[group].astype(str).map({k: i for i, k in enumerate(groups)}).to_numpy()
        positions = sorted(gg[position].unique())
        boot_idx = rng.integers(0, len(groups), size=(n_boot, len(groups))) if n_boot and len(groups) else None
        for pos in positions:
            at = (gg[position] == pos).to_numpy()
            sums = np.bincount(gi[at], weights=gg["_y"].to_numpy()[at], minlength=len(groups))
            cnts = np.bincount(gi[at], minlength=len(groups)).astype(float)
            est = sums.sum() / cnts.sum() if cnts.sum() else np.nan
            low = high = p = np.nan
            if boot_idx is not None:
                bs, bc = sums[boot_idx].sum(1), cnts[boot_idx].sum(1)
                boot = np.where(bc > 0, bs / np.where(bc > 0, bc, 1), np.nan)
                low, high = _ci_from_boot(boot, confidence)
                b = boot[~np.isnan(boot)]
                p = float(min(1.0, 2 * min((b <= 0).mean(), (b >= 0).mean()))) if b.size else np.nan
            rows.append({"judge": j, "criterion": c, "metric": "slot_score_effect", "position": int(pos),
                         "estimate": est, "ci_low": low, "ci_high": high, "n": int(cnts.sum()),
                         "n_items": int((cnts > 0).sum()), "n_failed": int((~g["_ok"]).sum()), "n_dropped": 0,
                         "p_value": p, "unit": "response-call", "center": center,
                         "method": f"mean centred score; percentile bootstrap over {group} (B={n_boot})",
                         "note": ""})
    return pd.DataFrame(rows)


def answer_letter_balance(
    items: pd.DataFrame,
    *,
    letter: str = "answer",
    by: str = "generator",
    letters: Sequence[str] = ("A", "B", "C", "D"),
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Share of each correct-answer letter among generated MCQs, per generator.

    Rows per (generator, letter): metric ``letter_rate``, exact CI, exact binomial test against
    1/k; plus a ``uniformity`` row (chi-square goodness of fit). Letters outside ``letters`` (or
    NA) are counted in ``n_failed``. The generator sits in the ``judge`` column of the result.
    """
    k = len(letters)
    rows = []
    for gen, g in items.groupby(by, sort=True):
        lab = g[letter].map(lambda v: None if pd.isna(v) else str(v).strip().upper())
        ok = lab.isin(list(letters))
        n = int(ok.sum())
        counts = np.array([(lab[ok] == x).sum() for x in letters])
        for x, cnt in zip(letters, counts):
            low, high = proportion_ci(int(cnt), n, confidence=confidence)
            rows.append({"judge": gen, "criterion": "correct_letter", "metric": "letter_rate", "letter": x,
                         "estimate": cnt / n if n else np.nan, "ci_low": low, "ci_high": high, "n": n,
                         "n_items": n, "n_failed": int((~ok).sum()), "n_dropped": 0,
                         "p_value": float(stats.binomtest(int(cnt), n, 1 / k).pvalue) if n else np.nan,
                         "unit": "question", "expected": 1 / k,
                         "method": "exact binomial (Clopper-Pearson); exact test vs 1/k", "note": ""})
        rows.append({"judge": gen, "criterion": "correct_letter", "metric": "uniformity", "letter": None,
                     "estimate": float(counts.max() / n) if n else np.nan, "ci_low": np.nan, "ci_high": np.nan,
                     "n": n, "n_items": n, "n_failed": int((~ok).sum()), "n_dropped": 0,
                     "p_value": float(stats.chisquare(counts).pvalue) if n else np.nan, "unit": "question",
                     "expected": 1 / k, "method": "chi-square goodness of fit",
                     "note": "estimate = largest letter share"})
    return pd.DataFrame(rows)


# =========================================================================== length bias
def response_lengths(
    responses: pd.DataFrame,
    *,
    item: str = "item",
    slot: str = "slot",
    text: str = "text",
    slots: tuple[str, str] = ("A", "B"),
) -> pd.DataFrame:
    """Whitespace-token lengths of the two responses per item: columns ``item, len_a, len_b``.

    A missing text has length NA (such pairs are dropped by :func:`length_bias` and counted).
    """
    d = responses[responses[slot].isin(slots)].copy()
    d["_len"] = d[text].map(lambda t: np.nan if pd.isna(t) else float(len(str(t).split())))
    wide = d.pivot_table(index=item, columns=slot, values="_len", aggfunc="first")
    wide = wide.reindex(columns=list(slots))
    return pd.DataFrame({item: wide.index.astype(str), "len_a": wide[slots[0]].to_numpy(),
                         "len_b": wide[slots[1]].to_numpy()})


def _pairwise_design(
    df: pd.DataFrame, item, judge, criterion, order, verdict, len_a, len_b, parse_status,
    reversed_criteria, polarity,
) -> pd.DataFrame:
    need = [c for c in (item, verdict, len_a, len_b) if c not in df.columns]
    if need:
        raise SchemaError("judgments", need[0], [], f"missing column(s) {need}; present: {list(df.columns)}")
    d = df.reset_index(drop=True).copy()
    if judge not in d.columns:
        d[judge] = "judge"
    if criterion not in d.columns:
        d[criterion] = "overall"
    d["_pol"] = polarity_series(d, criterion, reversed_criteria, polarity)
    ok = d[verdict].notna()
    if parse_status and parse_status in d.columns:
        ok &= d[parse_status].eq("ok")
    bad = ok & ~d[verdict].isin(MODEL_LABELS)
    if bad.any():
        raise SchemaError("judgments", verdict, _rows(bad), f"verdicts must be model terms {list(MODEL_LABELS)}")
    d["_ok"] = ok
    d["_order"] = d[order].astype(str).str.upper() if order in d.columns else "AB"
    d["_pos"] = np.where(d["_order"] == "BA", -0.5, 0.5)
    win = np.where(d["_pol"] > 0, "A", "B")
    loss = np.where(d["_pol"] > 0, "B", "A")
    d["_y"] = np.where(d[verdict] == win, 1.0, np.where(d[verdict] == loss, 0.0, np.nan))
    d["_y"] = d["_y"].where(ok)
    d["_dl"] = pd.to_numeric(d[len_a], errors="coerce") - pd.to_numeric(d[len_b], errors="coerce")
    with np.errstate(divide="ignore", invalid="ignore"):
        d["_lr"] = np.log(pd.to_numeric(d[len_a], errors="coerce") / pd.to_numeric(d[len_b], errors="coerce"))
    return d


def _fit_logit(y, X, groups):
    import statsmodels.api as sm

    model = sm.GLM(y, X, family=sm.families.Binomial())
    if groups is not None and pd.Series(groups).duplicated().any():
        return model.fit(cov_type="cluster", cov_kwds={"groups": pd.factorize(groups)[0]}), "cluster-robust SE by item"
    return model.fit(), "model-based SE"


def length_bias(
    df: pd.DataFrame,
    *,
    item: str = "item",
    judge: str = "judge",
    criterion: str = "criterion",
    order: str = "order",
    verdict: str = "verdict",
    len_a: str = "len_a",
    len_b: str = "len_b",
    parse_status: str | None = "parse_status",
    length: str = "diff",
    length_unit: float = 100.0,
    covariates: Sequence[str] = (),
    reversed_criteria: Collection[str] | None = None,
    polarity: str | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Logistic regression of "A preferred" on presentation position and length difference.

    Per judge and criterion, over parsed non-tie verdicts (ties and failures counted, not modelled):
    ``logit P(A preferred) = b0 + b_pos * pos + b_len * L + sum(b_k * covariate_k)``, with
    ``pos = +0.5`` when A is shown first and ``-0.5`` when second (so ``b_pos`` is the log-odds gain of
    being shown first), and ``L = (len_a - len_b) / length_unit`` (``length="diff"``) or
    ``log(len_a / len_b)`` (``"log_ratio"``). On reversed criteria "A preferred" means B was chosen
    (as worse). With one order only, ``pos`` is omitted (noted). Fitted with statsmodels GLM
    (Binomial, logit link), cluster-robust by item when items repeat. Rows: one per coefficient
    (``metric`` = ``intercept``, ``position_first``, ``length``, covariates), ``estimate`` = log-odds
    coefficient, Wald CI, ``p_value``, ``odds_ratio``.
    """
    import statsmodels.api as sm  # noqa: F401

    if length not in ("diff", "log_ratio"):
        raise ValueError("length must be 'diff' or 'log_ratio'")
    d = _pairwise_design(df, item, judge, criterion, order, verdict, len_a, len_b, parse_status,
                         reversed_criteria, polarity)
    rows = []
    for (j, c), g in d.groupby([judge, criterion], sort=True):
        n_failed = int((~g["_ok"]).sum())
        n_ties = int((g["_ok"] & g["_y"].isna()).sum())
        L = g["_dl"] / length_unit if length == "diff" else g["_lr"]
        use = g["_y"].notna() & L.notna() & np.isfinite(L)
        for cv in covariates:
            use &= g[cv].notna()
        gg = g[use]
        X = pd.DataFrame({"intercept": 1.0}, index=gg.index)
        notes = []
        if gg["_pos"].nunique() > 1:
            X["position_first"] = gg["_pos"]
        else:
            notes.append("one presentation order only: position term omitted")
        X["length"] = L[use]
        for cv in covariates:
            X[cv] = pd.to_numeric(gg[cv])
        base = {"judge": j, "criterion": c, "n": int(use.sum()), "n_items": int(gg[item].nunique()),
                "n_failed": n_failed, "n_ties": n_ties, "n_dropped": int(len(g) - use.sum() - n_failed - n_ties),
                "unit": "call", "length": length, "length_unit": length_unit if length == "diff" else None}
        if len(gg) < X.shape[1] + 2 or gg["_y"].nunique() < 2:
            for name in X.columns:
                rows.append({**base, "metric": name, "estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                             "p_value": np.nan, "odds_ratio": np.nan, "method": "logit (statsmodels GLM)",
                             "note": "too few non-tie verdicts or only one outcome"})
            continue
        try:
            fit, se = _fit_logit(gg["_y"].to_numpy(), X, gg[item].to_numpy())
            ci = fit.conf_int(alpha=1 - confidence)
            for name in X.columns:
                rows.append({**base, "metric": name, "estimate": float(fit.params[name]),
                             "ci_low": float(ci.loc[name, 0]), "ci_high": float(ci.loc[name, 1]),
                             "p_value": float(fit.pvalues[name]), "odds_ratio": float(np.exp(fit.params[name])),
                             "method": f"logit (statsmodels GLM Binomial), Wald CI, {se}", "note": "; ".join(notes)})
        except Exception as exc:  # perfect separation, singular design
            for name in X.columns:
                rows.append({**base, "metric": name, "estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                             "p_value": np.nan, "odds_ratio": np.nan, "method": "logit (statsmodels GLM)",
                             "note": f"fit failed: {type(exc).__name__}: {exc}"})
    return pd.DataFrame(rows)


def longer_preferred_rate(
    df: pd.DataFrame,
    *,
    item: str = "item",
    judge: str = "judge",
    criterion: str = "criterion",
    verdict: str = "verdict",
    len_a: str = "len_a",
    len_b: str = "len_b",
    parse_status: str | None = "parse_status",
    order: str = "order",
    reversed_criteria: Collection[str] | None = None,
    polarity: str | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Share of parsed non-tie verdicts that prefer the longer response (equal lengths skipped).

    Exact CI and exact binomial test against 0.5. Polarity-aware like :func:`length_bias`.
    """
    d = _pairwise_design(df, item, judge, criterion, order, verdict, len_a, len_b, parse_status,
                         reversed_criteria, polarity)
    rows = []
    for (j, c), g in d.groupby([judge, criterion], sort=True):
        use = g["_y"].notna() & g["_dl"].notna() & (g["_dl"] != 0)
        gg = g[use]
        longer_pref = ((gg["_y"] == 1) & (gg["_dl"] > 0)) | ((gg["_y"] == 0) & (gg["_dl"] < 0))
        k, n = int(longer_pref.sum()), int(len(gg))
        low, high = proportion_ci(k, n, confidence=confidence)
        rows.append({"judge": j, "criterion": c, "metric": "longer_preferred", "estimate": k / n if n else np.nan,
                     "ci_low": low, "ci_high": high, "n": n, "n_items": int(gg[item].nunique()),
                     "n_failed": int((~g["_ok"]).sum()), "n_ties": int((g["_ok"] & g["_y"].isna()).sum()),
                     "n_dropped": int((g["_y"].notna() & ~use).sum()),
                     "p_value": float(stats.binomtest(k, n).pvalue) if n else np.nan, "unit": "call",
                     "method": "exact binomial (Clopper-Pearson); exact test vs 0.5",
                     "note": "" if n else "no non-tie verdicts with unequal lengths"})
    return pd.DataFrame(rows)


def length_controlled_win_rate(
    df: pd.DataFrame,
    *,
    item: str = "item",
    judge: str = "judge",
    criterion: str = "criterion",
    order: str = "order",
    verdict: str = "verdict",
    len_a: str = "len_a",
    len_b: str = "len_b",
    parse_status: str | None = "parse_status",
    transform: str = "linear",
    length_unit: float = 100.0,
    reversed_criteria: Collection[str] | None = None,
    polarity: str | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Raw and length-controlled win rate of model A, per judge and criterion (ties excluded).

    Fit ``logit P(A wins) = theta + b_pos * pos + b_len * f(dlen)`` over all calls, with
    ``f(dlen) = dlen / length_unit`` (``transform="linear"``) or AlpacaEval-2's
    ``tanh(dlen / sd(dlen))`` (``"tanh"``). The length-controlled win rate is ``expit(theta)``: the
    predicted win rate when both responses have the same length and the position is balanced
    (``pos`` = +-0.5). Its CI maps the Wald CI of ``theta`` (cluster-robust by item) through
    ``expit``. The raw win rate has an exact CI. The estimate is only as good as ``f``: if the
    judge's length response is not of that shape, some of it leaks into ``theta``.
    """
    if transform not in ("linear", "tanh"):
        raise ValueError("transform must be 'linear' or 'tanh'")
    from scipy.special import expit

    d = _pairwise_design(df, item, judge, criterion, order, verdict, len_a, len_b, parse_status,
                         reversed_criteria, polarity)
    rows = []
    for (j, c), g in d.groupby([judge, criterion], sort=True):
        use = g["_y"].notna() & g["_dl"].notna()
        gg = g[use]
        n_failed = int((~g["_ok"]).sum())
        n_ties = int((g["_ok"] & g["_y"].isna()).sum())
        k, n = int((gg["_y"] == 1).sum()), int(len(gg))
        low, high = proportion_ci(k, n, confidence=confidence)
        base = {"judge": j, "criterion": c, "n": n, "n_items": int(gg[item].nunique()), "n_failed": n_failed,
                "n_ties": n_ties, "n_dropped": int(len(g) - n - n_failed - n_ties), "unit": "call"}
        rows.append({**base, "metric": "win_rate_raw", "estimate": k / n if n else np.nan, "ci_low": low,
                     "ci_high": high, "p_value": float(stats.binomtest(k, n).pvalue) if n else np.nan,
                     "method": "exact binomial (Clopper-Pearson), ties excluded", "note": ""})
        sd = float(gg["_dl"].std(ddof=0)) if n else 0.0
        X = pd.DataFrame({"intercept": 1.0}, index=gg.index)
        if gg["_pos"].nunique() > 1:
            X["position_first"] = gg["_pos"]
        if transform == "tanh":
            X["length"] = np.tanh(gg["_dl"] / sd) if sd > 0 else 0.0
        else:
            X["length"] = gg["_dl"] / length_unit
        lc = {"metric": "win_rate_lc", "estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan,
              "p_value": np.nan, "transform": transform,
              "method": f"length-controlled logit ({transform} length term; statsmodels GLM), expit(theta)"}
        if n < X.shape[1] + 2 or gg["_y"].nunique() < 2 or sd == 0:
            rows.append({**base, **lc, "note": "too few verdicts, one outcome or no length variation"})
            continue
        try:
            fit, se = _fit_logit(gg["_y"].to_numpy(), X, gg[item].to_numpy())
            ci = fit.conf_int(alpha=1 - confidence).loc["intercept"]
            rows.append({**base, **lc, "estimate": float(expit(fit.params["intercept"])),
                         "ci_low": float(expit(ci[0])), "ci_high": float(expit(ci[1])),
                         "p_value": float(fit.pvalues["intercept"]), "method": lc["method"] + f", {se}",
                         "length_coef": float(fit.params["length"]), "note": "ties excluded"})
        except Exception as exc:
            rows.append({**base, **lc, "note": f"fit failed: {type(exc).__name__}: {exc}"})
    return pd.DataFrame(rows)


# =========================================================================== self-preference
def _default_lineage_path() -> Path:
    from medeval_kit.datasets._io import data_dir

    return data_dir() / "lineage.yaml"


def load_lineage(path: str | Path | None = None) -> pd.DataFrame:
    """Read the lineage map (model -> family, vendor) from YAML; default ``data/lineage.yaml``.

    The YAML has a top-level ``models:`` mapping ``name: {family: ..., vendor: ...}``.
    """
    import yaml

    p = Path(path) if path else _default_lineage_path()
    if not p.exists():
        raise DataFileError(f"{p}: lineage file not found")
    try:
        content = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise DataFileError(f"{p}: malformed YAML: {exc}") from None
    models = (content or {}).get("models")
    if not isinstance(models, dict) or not models:
        raise DataFileError(f"{p}: expected a top-level 'models:' mapping of model -> {{family, vendor}}")
    rows = []
    for name, info in models.items():
        if not isinstance(info, dict) or "family" not in info:
            raise DataFileError(f"{p}: model {name!r} needs at least a 'family' entry")
        rows.append({"model": str(name), "family": str(info["family"]), "vendor": str(info.get("vendor", ""))})
    return pd.DataFrame(rows)


def _lineage_dict(lineage, level: str) -> dict[str, str]:
    if lineage is None:
        lineage = load_lineage()
    if isinstance(lineage, (str, Path)):
        lineage = load_lineage(lineage)
    if isinstance(lineage, pd.DataFrame):
        if level not in lineage.columns:
            raise ValueError(f"lineage level {level!r} is not a column of the lineage table {list(lineage.columns)}")
        return dict(zip(lineage["model"].astype(str), lineage[level].astype(str)))
    if isinstance(lineage, Mapping):
        return {str(k): (v[level] if isinstance(v, Mapping) else str(v)) for k, v in lineage.items()}
    raise TypeError("lineage must be a DataFrame, a mapping, a path or None")


def self_preference(
    scores: pd.DataFrame,
    *,
    item: str = "item",
    model: str = "model",
    rater: str = "rater",
    score: str = "score",
    lineage=None,
    level: str = "family",
    raters: Sequence[str] | None = None,
    peer_pool: Sequence[str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """MedQADE's Delta_self and Delta_family for every rater, with percentile-bootstrap CIs.

    ``scores`` has one row per (item, response model, rater) with a numeric ``score`` (e.g. 1 =
    correct, 0 = incorrect, NA = abstain). For rater A, the peers are the raters of *other* lineages
    (``level`` = ``family`` or ``vendor`` of the lineage map). For each response r,
    diff(r) = S(A, r) - mean over peers of S(peer, r) (NA scores dropped; responses without an A score
    or without any peer score are dropped and counted in ``n_dropped``).

    * ``delta_self``  - mean diff over responses written by A itself;
    * ``delta_family`` - mean diff over responses of each sibling (same lineage, different model);
      one row per (A, sibling).

    Per-item paired differences (averaged within an item first) are resampled ``n_boot`` times;
    the CI is the percentile interval. ``p_value`` is the two-sided bootstrap p (twice the smaller
    tail share at 0). A rater missing from the lineage map is its own lineage (noted), so it is a
    peer of everyone else. ``peer_pool`` restricts the candidate peers (default: all raters);
    ``raters`` restricts the raters A that are evaluated.
    Estimates are on the score scale (x100 for MedQADE's percent).
    """
    for col in (item, model, rater, score):
        if col not in scores.columns:
            raise SchemaError("annotations", col, [], f"missing column; present: {list(scores.columns)}")
    d = scores[[item, model, rater, score]].copy()
    d[score] = pd.to_numeric(d[score], errors="coerce")
    if d.duplicated([item, model, rater]).any():
        raise SchemaError("annotations", f"{item},{model},{rater}", _rows(d.duplicated([item, model, rater], keep=False)),
                          "one score per item, response model and rater expected")
    lin = _lineage_dict(lineage, level)
    all_raters = sorted(d[rater].astype(str).unique())
    fam = {r: lin.get(r, f"?{r}") for r in all_raters}
    wide = d.pivot_table(index=[item, model], columns=rater, values=score, aggfunc="first")
    rng = np.random.default_rng(seed)
    rows = []
    models = sorted(d[model].astype(str).unique())
    for a in (raters or all_raters):
        pool = all_raters if peer_pool is None else [str(r) for r in peer_pool]
        peers = [r for r in pool if r in fam and r != a and fam[r] != fam[a]]
        unmapped = [r for r in [a, *peers] if r not in lin]
        note = f"not in the lineage map (own lineage): {unmapped}" if unmapped else ""
        targets = []
        if a in models:
            targets.append(("delta_self", a))
        for m in models:
            if m != a and lin.get(m) is not None and lin.get(m) == fam[a]:
                targets.append(("delta_family", m))
        for metric, m in targets:
            sub = wide.xs(m, level=model, drop_level=True) if m in wide.index.get_level_values(model) else None
            base = {"judge": a, "criterion": "self_preference", "metric": metric, "target": m,
                    "level": level, "n_peers": len(peers), "peers": ",".join(peers), "unit": "item"}
            if sub is None or not peers or a not in sub.columns:
                rows.append({**base, "estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "n": 0, "n_items": 0,
                             "n_failed": 0, "n_dropped": 0, "p_value": np.nan, "method": "",
                             "note": "no peers of another lineage" if not peers else "no scores by this rater"})
                continue
            own = sub[a]
            peer_mean = sub[peers].mean(axis=1, skipna=True)
            diff = own - peer_mean
            valid = diff.notna()
            per_item = diff[valid].groupby(level=0).mean()
            n = len(per_item)
            est = float(per_item.mean()) if n else np.nan
            if n and n_boot:
                vals = per_item.to_numpy()
                boot = vals[rng.integers(0, n, size=(n_boot, n))].mean(axis=1)
                low, high = _ci_from_boot(boot, confidence)
                p = float(min(1.0, 2 * min((boot <= 0).mean(), (boot >= 0).mean())))
            else:
                low = high = p = np.nan
            rows.append({**base, "estimate": est, "ci_low": low, "ci_high": high, "n": int(valid.sum()),
                         "n_items": n, "n_failed": int(own.isna().sum()), "n_dropped": int((~valid).sum()),
                         "p_value": p, "method": f"paired difference vs other-lineage peers; percentile "
                         f"bootstrap over items (B={n_boot})", "note": note})
    return pd.DataFrame(rows)


# =========================================================================== adapters and simulators
def pairwise_from_annotations(
    annotations: pd.DataFrame,
    lengths: pd.DataFrame | None = None,
    *,
    item: str = "item",
    rater: str = "rater",
    criterion: str = "criterion",
    label: str = "label",
    order: str = "AB",
    reference_raters: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Turn one-order pairwise ``annotations`` (labels A/B/tie) into a judgments-like frame.

    Columns: ``item, judge, criterion, order, verdict, parse_status`` (``failed`` where the label
    is NA), joined with ``lengths`` (``item, len_a, len_b``) when given. With ``reference_raters``
    (e.g. the human annotators) a numeric ``reference_pref`` is added: the majority label of those
    raters coded +1 (A), -1 (B), 0 (tie or no majority), usable as a quality covariate in
    :func:`length_bias`.
    """
    d = pd.DataFrame({
        "item": annotations[item].astype(str).to_numpy(),
        "judge": annotations[rater].astype(str).to_numpy(),
        "criterion": annotations[criterion].astype(str).to_numpy(),
        "order": order,
        "verdict": annotations[label].to_numpy(),
    })
    d["parse_status"] = np.where(d["verdict"].notna(), "ok", "failed")
    if reference_raters:
        ref = d[d["judge"].isin(list(reference_raters)) & d["verdict"].notna()]
        code = ref["verdict"].map({"A": 1.0, "B": -1.0, "tie": 0.0, "neither": 0.0})
        maj = ref.assign(_c=code).groupby(["item", "criterion"])["_c"].agg(
            lambda v: float(v.mode().iloc[0]) if len(v.mode()) == 1 else 0.0)
        d = d.merge(maj.rename("reference_pref").reset_index(), on=["item", "criterion"], how="left")
    if lengths is not None:
        ln = lengths.rename(columns={item: "item"}).assign(item=lambda x: x["item"].astype(str))
        d = d.merge(ln[["item", "len_a", "len_b"]], on="item", how="left")
    return d


def pairwise_to_response_scores(
    annotations: pd.DataFrame,
    responses: pd.DataFrame,
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    model: str = "model",
    slot: str = "slot",
) -> pd.DataFrame:
    """Per-response scores from pairwise labels, for :func:`self_preference` on pairwise data.

    The response in slot A scores 1 when the rater chose A, 0 when it chose B, 0.5 on a tie (and
    the mirror for slot B); NA labels stay NA. Returns ``item, model, rater, score``. Since all
    raters judged the same pair, the paired difference against peers keeps the opponent fixed.
    """
    slots = responses[[item, model, slot]].astype({item: str})
    a = slots[slots[slot] == "A"].rename(columns={model: "model_a"}).drop(columns=slot)
    b = slots[slots[slot] == "B"].rename(columns={model: "model_b"}).drop(columns=slot)
    d = annotations[[item, rater, label]].astype({item: str}).merge(a, on=item).merge(b, on=item)
    sa = d[label].map({"A": 1.0, "B": 0.0, "tie": 0.5})
    out = pd.concat([
        pd.DataFrame({"item": d[item], "model": d["model_a"], "rater": d[rater], "score": sa}),
        pd.DataFrame({"item": d[item], "model": d["model_b"], "rater": d[rater], "score": 1.0 - sa}),
    ], ignore_index=True)
    return out


def simulate_length_bias(
    n_items: int = 400,
    *,
    length_effect: float = 1.0,
    position_effect: float = 0.0,
    quality: float = 0.0,
    a_longer: float = 80.0,
    judge: str = "judge",
    seed: int = 0,
) -> pd.DataFrame:
    """Two-order pairwise judgments with a planted length (and position) effect, no ties.

    ``logit P(A chosen) = quality + position_effect * pos + length_effect * (len_a - len_b) / 100``
    with ``pos = +0.5`` if A is shown first. A is ``a_longer`` tokens longer on average, so with
    ``quality = 0`` the raw win rate is inflated while the true (length-controlled) one is 0.5.
    """
    rng = np.random.default_rng(seed)
    la = rng.normal(200 + a_longer, 60, n_items).clip(10).round()
    lb = rng.normal(200, 60, n_items).clip(10).round()
    items = [f"i{j:04d}" for j in range(n_items)]
    frames = []
    for o, pos in (("AB", 0.5), ("BA", -0.5)):
        eta = quality + position_effect * pos + length_effect * (la - lb) / 100
        pick_a = rng.random(n_items) < 1 / (1 + np.exp(-eta))
        v = np.where(pick_a, "A", "B")
        slot = np.where((v == "A") == (o == "AB"), "first", "second")
        frames.append(pd.DataFrame({"item": items, "judge": judge, "protocol": "pairwise", "criterion": "overall",
                                    "order": o, "repeat": 0, "raw": slot, "verdict": v, "slot_verdict": slot,
                                    "parse_status": "ok", "len_a": la, "len_b": lb}))
    return pd.concat(frames, ignore_index=True)


def simulate_self_preference(
    n_items: int = 500,
    *,
    effects: Mapping[tuple[str, str], float] | None = None,
    models: Sequence[str] = ("gemini-2.5-flash", "gpt-5-nano", "gemma-3-27b", "gemma-3-4b", "qwen3-4b"),
    raters: Sequence[str] = ("gemini-2.5-flash", "gpt-5-nano", "gemma-3-27b", "gemma-3-4b", "qwen3-4b",
                             "gemini-3-flash", "gemini-2.5-flash-lite", "gpt-5.4-nano", "gpt-5.4-mini"),
    accuracy: float = 0.5,
    noise: float = 0.1,
    seed: int = 0,
) -> pd.DataFrame:
    """MedQADE-shaped binary correctness scores with planted rater -> model biases.

    Each response is truly correct with probability ``accuracy``; every rater reports the truth
    with error rate ``noise``. For each ``(rater, model): delta`` in ``effects`` the rater's score
    is shifted by ``delta`` in expectation (a positive delta turns incorrect into correct with the
    needed probability, a negative one the reverse), so Delta_self/Delta_family = delta.
    Default effects mimic the paper's signs: gemma-3-4b self +0.16, qwen3-4b self -0.04,
    gemma-3-4b -> gemma-3-27b +0.115.
    """
    effects = dict(effects or {("gemma-3-4b", "gemma-3-4b"): 0.16, ("qwen3-4b", "qwen3-4b"): -0.04,
                               ("gemma-3-4b", "gemma-3-27b"): 0.115})
    rng = np.random.default_rng(seed)
    rows = []
    # peer mean of a response = accuracy*(1-noise) + (1-accuracy)*noise
    p_peer = accuracy * (1 - noise) + (1 - accuracy) * noise
    for m in models:
        truth = rng.random(n_items) < accuracy
        for r in raters:
            s = np.where(rng.random(n_items) < noise, ~truth, truth)
            delta = effects.get((r, m), 0.0)
            if delta > 0:
                s = np.where(~s & (rng.random(n_items) < delta / (1 - p_peer)), True, s)
            elif delta < 0:
                s = np.where(s & (rng.random(n_items) < -delta / p_peer), False, s)
            rows.append(pd.DataFrame({"item": [f"q{j:04d}" for j in range(n_items)], "model": m, "rater": r,
                                      "score": s.astype(float)}))
    return pd.concat(rows, ignore_index=True)


# =========================================================================== plots
def _errorbar_plot(res: pd.DataFrame, metric: str, ylabel: str, ref: float | None, title: str):
    from medeval_kit.viz import figure, paper_style

    d = res[res["metric"] == metric].copy()
    with paper_style():
        fig, ax = figure("single")
        judges = sorted(d["judge"].astype(str).unique())
        crits = sorted(d["criterion"].astype(str).unique())
        width = 0.8 / max(len(judges), 1)
        import seaborn as sns

        colors = sns.color_palette("colorblind", max(len(judges), 1))
        for k, j in enumerate(judges):
            dj = d[d["judge"].astype(str) == j].set_index("criterion").reindex(crits)
            x = np.arange(len(crits)) + (k - (len(judges) - 1) / 2) * width
            est = dj["estimate"].to_numpy(float)
            err = np.vstack([est - dj["ci_low"].to_numpy(float), dj["ci_high"].to_numpy(float) - est])
            ax.errorbar(x, est, yerr=np.abs(err), fmt="o", ms=3, capsize=2, color=colors[k], label=j)
        if ref is not None:
            ax.axhline(ref, color="0.5", lw=0.8, ls="--")
        ax.set_xticks(np.arange(len(crits)))
        ax.set_xticklabels(crits, rotation=30 if len(crits) > 3 else 0, ha="right" if len(crits) > 3 else "center")
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, 1)
        ax.set_title(title)
        if len(judges) > 1:
            ax.legend(frameon=False, fontsize=6, ncol=2)
    return fig


def plot_flip_rates(res: pd.DataFrame, *, metric: str = "flip_rate", title: str = "Position flips"):
    """Flip rate per criterion (x) and judge (colour) with CI bars; ``res`` is a tidy bias result."""
    return _errorbar_plot(res, metric, "flip rate (95% CI)", None, title)


def plot_first_slot(res: pd.DataFrame, *, title: str = "First-slot preference"):
    """First-slot rate per criterion and judge with CI bars and the no-bias line at 0.5."""
    return _errorbar_plot(res, "first_slot_rate", "P(first slot | not tie)", 0.5, title)


def plot_consistency_vs_agreement(
    res: pd.DataFrame,
    *,
    x: str = "consistency",
    y: str = "agreement_on_consistent",
    title: str = "Consistency vs agreement",
):
    """Scatter of order consistency (x) against agreement with a reference (y), with 2-D CI bars."""
    from medeval_kit.viz import figure, paper_style

    w = res[res["metric"].isin([x, y])].pivot_table(index="judge", columns="metric",
                                                    values=["estimate", "ci_low", "ci_high"], aggfunc="first")
    with paper_style():
        fig, ax = figure("single")
        for j in w.index:
            ex, ey = w.loc[j, ("estimate", x)], w.loc[j, ("estimate", y)]
            xerr = [[ex - w.loc[j, ("ci_low", x)]], [w.loc[j, ("ci_high", x)] - ex]]
            yerr = [[ey - w.loc[j, ("ci_low", y)]], [w.loc[j, ("ci_high", y)] - ey]]
            ax.errorbar([ex], [ey], xerr=np.abs(xerr), yerr=np.abs(yerr), fmt="o", ms=3, capsize=2, lw=0.7,
                        label=str(j))
        ax.legend(frameon=False, fontsize=6, ncol=2, loc="lower left")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel(f"{x.replace('_', ' ')} (95% CI)")
        ax.set_ylabel(f"{y.replace('_', ' ')} (95% CI)")
        ax.set_title(title)
    return fig


def plot_letter_balance(letters: pd.DataFrame, *, title: str = "Correct-answer letter per generator"):
    """Share of each correct letter per generator (rows) with CI bars; dashed line at 1/k."""
    from medeval_kit.viz import figure, paper_style
    import seaborn as sns

    d = letters[letters["metric"] == "letter_rate"]
    gens = sorted(d["judge"].astype(str).unique())
    lets = sorted(d["letter"].astype(str).unique())
    with paper_style():
        fig, ax = figure("double", aspect=max(0.35, 0.05 * len(gens) + 0.2))
        colors = sns.color_palette("colorblind", len(lets))
        width = 0.8 / len(lets)
        for k, x in enumerate(lets):
            dl = d[d["letter"].astype(str) == x].set_index("judge").reindex(gens)
            y = np.arange(len(gens)) + (k - (len(lets) - 1) / 2) * width
            est = dl["estimate"].to_numpy(float)
            err = np.abs(np.vstack([est - dl["ci_low"].to_numpy(float), dl["ci_high"].to_numpy(float) - est]))
            ax.errorbar(est, y, xerr=err, fmt="o", ms=2.5, capsize=1.5, lw=0.7, color=colors[k], label=x)
        ax.axvline(1 / len(lets), color="0.5", lw=0.8, ls="--")
        ax.set_yticks(np.arange(len(gens)))
        ax.set_yticklabels(gens)
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of questions whose correct answer has this letter (95% CI)")
        ax.legend(title="letter", frameon=False, fontsize=6, ncol=len(lets), loc="lower right")
        ax.set_title(title)
    return fig


def plot_self_preference(res: pd.DataFrame, *, title: str = "Self and family preference"):
    """Horizontal CI bars of Delta_self / Delta_family per (rater -> target), with the zero line."""
    from medeval_kit.viz import figure, paper_style

    d = res.dropna(subset=["estimate"]).reset_index(drop=True)
    with paper_style():
        fig, ax = figure("single", aspect=max(0.4, 0.12 * len(d) + 0.2))
        labels = [f"{r.judge} -> {r.target} ({'self' if r.metric == 'delta_self' else 'family'})"
                  for r in d.itertuples()]
        y = np.arange(len(d))
        err = np.abs(np.vstack([d["estimate"] - d["ci_low"], d["ci_high"] - d["estimate"]]))
        ax.errorbar(d["estimate"], y, xerr=err, fmt="o", ms=3, capsize=2)
        ax.axvline(0, color="0.5", lw=0.8, ls="--")
        ax.set_yticks(y)
        ax.set_yticklabels(labels)
        ax.set_xlabel("score difference vs other-lineage peers (95% CI)")
        ax.set_title(title)
    return fig


def plot_rate_by_judge(res: pd.DataFrame, metric: str, *, ref: float | None = 0.5, xlabel: str | None = None,
                       title: str = ""):
    """Horizontal CI bars of one metric per judge (e.g. ``longer_preferred``, ``flip_rate``)."""
    from medeval_kit.viz import figure, paper_style

    d = res[res["metric"] == metric].reset_index(drop=True)
    with paper_style():
        fig, ax = figure("single", aspect=max(0.35, 0.1 * len(d) + 0.25))
        y = np.arange(len(d))
        err = np.abs(np.vstack([d["estimate"] - d["ci_low"], d["ci_high"] - d["estimate"]]))
        ax.errorbar(d["estimate"], y, xerr=err, fmt="o", ms=3, capsize=2)
        if ref is not None:
            ax.axvline(ref, color="0.5", lw=0.8, ls="--")
        ax.set_yticks(y)
        ax.set_yticklabels([f"{j} ({c})" if d["criterion"].nunique() > 1 else str(j)
                            for j, c in zip(d["judge"], d["criterion"])])
        ax.set_xlim(0, 1)
        ax.set_xlabel(xlabel or f"{metric.replace('_', ' ')} (95% CI)")
        ax.set_title(title)
    return fig


# =========================================================================== CLI
def register_cli(subparsers) -> None:
    """Add ``medeval position-bias FILE ...`` to the ``medeval`` command."""
    from medeval_kit.readers import add_from_option

    p = subparsers.add_parser(
        "position-bias",
        help="consistency, flip rate and first-slot preference of a pairwise judge (both orders)",
        description="Position bias of pairwise judgments holding both presentation orders. The verdict "
                    "column is in presented-slot terms by default: first, second or tie (neither is also "
                    "accepted); with --verdict-terms model it says which model won (A, B, tie, neither) and "
                    "is mapped to the presented slot with the order column (AB = A shown first, BA = B shown "
                    "first). An empty cell, or a token passed with --failed, is a parse failure: counted in "
                    "n_failed, never a tie; any other value is an error naming the rows. With --from FORMAT, "
                    "FILE is another tool's results file (e.g. --from mtbench gpt-4_pair.jsonl).",
    )
    p.add_argument("file", metavar="FILE",
                   help="judgments file: .csv, .tsv, .jsonl, .json or .parquet; or with --from another tool's "
                        "results file")
    add_from_option(p, "judgments")
    p.add_argument("--item", default="item", help="item (pair) id column [item]")
    p.add_argument("--judge", default="judge", help="judge column [judge; absent = one judge]")
    p.add_argument("--order", default="order",
                   help="presentation order column, two values [order]; AB and BA with --verdict-terms model")
    p.add_argument("--verdict", default=None,
                   help="verdict column, read as text exactly as written (a literal NA is a token, not a missing "
                        "value) [verdict]")
    p.add_argument("--verdict-terms", choices=("slot", "model"), default=None,
                   help="slot: the verdict names the presented slot that won (first/second/tie/neither); model: it "
                        "names the model that won (A/B/tie/neither) and is mapped to slots with --order "
                        "(AB/BA) [slot; with --from: model, the tidy verdict column]")
    p.add_argument("--failed", nargs="+", default=None, metavar="TOKEN",
                   help="verdict values that mean the judge's output could not be parsed, e.g. --failed error NA "
                        "unparsed: counted as failed parses (parse_status 'failed', n_failed), never ties")
    p.add_argument("--criterion", default="criterion",
                   help="criterion column [criterion; absent = one criterion 'overall']")
    p.add_argument("--repeat", default="repeat", help="repeat column, if calls are repeated [repeat]")
    p.add_argument("--parse-status", default="parse_status", help="parse status column; non-'ok' = failed")
    p.add_argument("--n-boot", type=int, default=1000,
                   help="bootstrap replicates over items for the CIs (respects calls clustered in items); "
                        "0 = exact binomial CIs [1000]")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed [0]")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table", help="output format [table]")
    p.set_defaults(func=_cli_position_bias)


def _text_or_none(v) -> str | None:
    """A verdict cell as stripped text; None for a missing value or an empty / blank cell."""
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return None
    t = str(v).strip()
    return t or None


def _is_model_term(v: str) -> bool:
    """Whether :func:`resolve.to_slot` maps ``v`` (the one mapping; no copy of its vocabulary here)."""
    try:
        to_slot(v, ORDERS[0])
    except ValueError:
        return False
    return True


def _slot_verdicts(df: pd.DataFrame, *, verdict: str, terms: str, order: str, failed: Collection[str],
                   parse_status: str, source: str) -> pd.DataFrame:
    """The CLI's verdict column in presented-slot terms, failure tokens as failed parses; else a located error.

    Returns a copy (0-based rows) whose ``verdict`` column holds first/second/tie/neither or None, and
    whose ``parse_status`` column is ``failed`` on the rows with a ``failed`` token. Model terms are
    mapped with :func:`resolve.to_slot` and the ``order`` column (AB / BA).
    """
    tbl = "judgments"
    if verdict not in df.columns:
        raise SchemaError(tbl, verdict, [], f"missing column {verdict!r}; present: {list(df.columns)}. Name the "
                          "verdict column with --verdict", source)
    d = df.reset_index(drop=True).copy()
    tokens = {t.strip() for t in map(str, failed)}
    cells = [_text_or_none(v) for v in d[verdict]]
    is_failed = np.array([v in tokens for v in cells], dtype=bool)
    counts = pd.Series([v for v, f in zip(cells, is_failed) if f], dtype=object).value_counts()
    text = pd.Series([None if f else v for v, f in zip(cells, is_failed)], dtype=object)
    present = np.array([v is not None for v in text], dtype=bool)
    if terms == "model":
        known = {v: _is_model_term(v) for v in set(text[present])}
        bad = np.array([v is not None and not known[v] for v in text], dtype=bool)
        expected = f"model terms {list(MODEL_LABELS)} (--verdict-terms model: which model won)"
        looks_other = "like presented-slot terms (first/second): pass --verdict-terms slot"
        other = lambda v: v.lower() in SLOT_LABELS  # noqa: E731
    else:
        bad = np.array([v is not None and v.lower() not in SLOT_LABELS for v in text], dtype=bool)
        expected = f"presented-slot terms {list(SLOT_LABELS)} (--verdict-terms slot)"
        looks_other = ("like model terms (which model won): pass --verdict-terms model to map them to the "
                       f"presented slots with the order column {order!r} (AB = A shown first, BA = B shown first)")
        other = _is_model_term
    if bad.any():
        unknown = sorted(set(text[bad]))
        shown = unknown[:8] + (["..."] if len(unknown) > 8 else [])
        terms_like = [v for v in unknown if other(v)]
        rest = [v for v in unknown if not other(v)]
        todo = []
        if terms_like:
            todo.append(f"{', '.join(map(repr, terms_like[:8]))} look{'s' if len(terms_like) == 1 else ''} "
                        + looks_other)
            if terms == "slot" and "slot_verdict" in d.columns and verdict != "slot_verdict":
                todo[-1] += ", or use this file's slot_verdict column (--verdict slot_verdict)"
        if rest:
            one = len(rest) == 1
            todo.append(f"if {', '.join(map(repr, rest[:8]))} mean{'s' if one else ''} that the judge's output could "
                        f"not be parsed, count {'it as a failed parse' if one else 'them as failed parses'} with "
                        f"--failed {' '.join(rest[:8])}")
        raise SchemaError(tbl, verdict, _rows(bad), f"unknown verdict(s) {shown}; expected {expected}, an empty "
                          f"cell for a failed parse, or a --failed token. {'; '.join(todo)}", source)
    if terms == "model":
        if order not in d.columns:
            raise SchemaError(tbl, order, [], f"missing column {order!r}; present: {list(d.columns)}. --verdict-terms "
                              "model maps A/B to the presented slots with the presentation-order column (AB / BA): "
                              "name it with --order", source)
        o = d[order].map(lambda v: None if _text_or_none(v) is None else str(v).strip().upper())
        bad_o = ~o.isin(ORDERS).to_numpy()
        if bad_o.any():
            found = sorted({str(v) for v in d.loc[bad_o, order]})[:5]
            raise SchemaError(tbl, order, _rows(bad_o),
                              f"--verdict-terms model maps A/B to the presented slots with the order, which must be "
                              f"AB (A shown first) or BA (B shown first); found {found}. Use --verdict-terms slot "
                              "for verdicts that name the presented slot (first/second)", source)
        text = to_slot(text, o)
    d[verdict] = text.to_numpy()
    if is_failed.any():
        if parse_status not in d.columns:
            d[parse_status] = "ok"
        d[parse_status] = d[parse_status].astype(object).where(~is_failed, "failed")
        print(f"medeval: {source}: {int(is_failed.sum())} verdict(s) counted as failed parses (--failed): "
              + ", ".join(f"{t!r} x{int(n)}" for t, n in counts.items()), file=sys.stderr)
    return d


def _check_two_orders(df: pd.DataFrame, fmt: str, order: str, source: str) -> None:
    """``--from``: the file must hold pairwise judgments shown in the two orders AB and BA."""
    from medeval_kit.readers import ReaderError

    proto = df["protocol"].astype(str) if "protocol" in df.columns else pd.Series("pairwise", index=df.index)
    orders = df[order].astype(str) if order in df.columns else pd.Series("", index=df.index)
    norm = orders.str.strip().str.upper()
    if norm[proto.eq("pairwise") & norm.isin(ORDERS)].nunique() == len(ORDERS):
        return
    protos = sorted(proto.unique())[:5]
    found = sorted(orders.unique())[:5]
    raise ReaderError(f"{source}: medeval position-bias --from {fmt} needs pairwise judgments shown in both "
                      f"presentation orders (order AB and BA); the {fmt} judgments in this file have protocol "
                      f"{protos} and order {found}")


def _cli_position_bias(args) -> int:
    if args.n_boot < 0:
        raise DataFileError("--n-boot must be 0 or positive")
    src = str(args.file)
    verdict = args.verdict or "verdict"
    terms = args.verdict_terms or ("model" if args.from_format else "slot")
    if args.from_format:  # the tidy judgments: verdict in model terms, order AB/BA, parse_status
        from medeval_kit.readers import read_for_command

        df = read_for_command(args.from_format, args.file, "judgments", command="position-bias")
        _check_two_orders(df, args.from_format, args.order, src)
    else:
        df = read_judgments(args.file, text_columns=[verdict])
    parse_status = args.parse_status if args.parse_status not in (None, "", "__none__") else "parse_status"
    df = _slot_verdicts(df, verdict=verdict, terms=terms, order=args.order, failed=args.failed or (),
                        parse_status=parse_status, source=src)
    res = position_bias(
        df, item=args.item, judge=args.judge, criterion=args.criterion, order=args.order,
        slot_verdict=verdict, verdict="__none__", repeat=args.repeat, parse_status=parse_status,
        protocol="protocol", n_boot=args.n_boot, seed=args.seed, source=src,
    )
    wide = position_bias_wide(res)
    if args.format == "json":
        recs = [{k: (None if isinstance(v, float) and np.isnan(v) else (v.item() if hasattr(v, "item") else v))
                 for k, v in r.items()} for r in wide.to_dict(orient="records")]
        sys.stdout.write(json.dumps(recs, indent=2) + "\n")
    elif args.format == "csv":
        sys.stdout.write(wide.to_csv(index=False))
    else:
        show = wide.copy()
        for m in ("consistency", "flip_rate", "first_slot_rate"):
            if m in show.columns:
                show[m] = [f"{e:.3f} [{lo:.3f}, {hi:.3f}]" for e, lo, hi in
                           zip(show[m], show[f"{m}_ci_low"], show[f"{m}_ci_high"])]
                show = show.drop(columns=[f"{m}_ci_low", f"{m}_ci_high"])
        if "first_slot_p_value" in show.columns:
            show["first_slot_p_value"] = show["first_slot_p_value"].map(lambda v: f"{v:.3g}")
        sys.stdout.write(show.to_string(index=False) + "\n")
        sys.stdout.write(f"CIs: {wide['method'].iloc[0]}, 95%. n_items = pairs with both orders parsed; "
                         "first-slot rate over parsed non-tie calls.\n")
    return 0
