"""Resolution policies for pairwise verdicts: un-swapping, repeats, the two orders, and two judges.

A pairwise judge sees two responses, A and B, in a presentation ``order`` (``"AB"``: A shown first;
``"BA"``: B shown first). Its verdict in *presented-slot* terms (``first``/``second``/``tie``/
``neither``) is mapped back to *model* terms (``A``/``B``/``tie``/``neither``) by :func:`unswap`.

Then three steps turn many calls into one verdict per item, each step naming its policy in the
output (column ``policy`` / ``repeat_policy`` / ``merge_policy``):

1. :func:`majority_over_repeats` - the majority over repeated calls in the same order
   (Longform-MedQA: 3 repeats per order).
2. :func:`resolve_orders` - combine the two orders. Policies:

   * ``"drop"``     an inconsistent pair gets verdict NA and ``resolution="dropped"`` (MCQG-SRefine,
                    which removes its -1 items);
   * ``"tie"``      an inconsistent pair becomes ``tie``;
   * ``"neither"``  an inconsistent pair becomes ``neither``;
   * ``"neutral"``  ``tie`` for ordinary criteria and ``neither`` for reversed-polarity criteria
                    (harmfulness, bias), the cautious MT-Bench rule used by Longform-MedQA.

3. :func:`merge_judges` - combine two judges with the same policies.

Parse failures (``parse_status != "ok"`` or an NA verdict) are counted (``n_failed``) and never
turned into ties: a pair whose order is missing or unparsed gets ``resolution="failed"`` and
verdict NA.

Polarity. For criteria phrased negatively (harmfulness, bias) *choosing* a response means it is
WORSE. Pass ``reversed_criteria={"harmfulness", "bias"}`` or a ``polarity`` column (+1 / -1);
:func:`win_rate` then counts A as the winner when B was chosen.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import numpy as np
import pandas as pd

from medeval_kit.errors import SchemaError

from .slots import MODEL_LABELS, ORDERS, neutral_label, polarity_series

__all__ = ["POLICIES", "majority_over_repeats", "resolve_orders", "merge_judges", "resolve_pairwise"]

POLICIES = ("drop", "tie", "neither", "neutral")


def _ok_mask(df: pd.DataFrame, verdict: str, parse_status: str | None) -> pd.Series:
    ok = df[verdict].notna()
    if parse_status and parse_status in df.columns:
        ok &= df[parse_status].eq("ok")
    return ok


def _check_labels(df: pd.DataFrame, column: str, allowed: Iterable[str], table: str = "judgments") -> None:
    s = df[column]
    bad = s.notna() & ~s.isin(list(allowed))
    if bad.any():
        raise SchemaError(table, column, [int(i) for i in np.flatnonzero(bad)],
                          f"unknown verdict(s) {sorted(map(str, set(s[bad])))[:5]}; allowed: {list(allowed)}")


# --------------------------------------------------------------------------- repeats
def majority_over_repeats(
    df: pd.DataFrame,
    *,
    item: str = "item",
    judge: str = "judge",
    criterion: str = "criterion",
    order: str = "order",
    verdict: str = "verdict",
    parse_status: str | None = "parse_status",
    reversed_criteria: Collection[str] | None = None,
    polarity: str | None = None,
) -> pd.DataFrame:
    """Return one row per (item, judge, criterion, order): the majority verdict over the repeats.

    Failed calls are excluded from the vote and counted in ``n_failed``. With no strict majority
    (e.g. 3 different votes) the neutral label (``tie``; ``neither`` for reversed criteria) is taken
    if it was among the top votes, the other neutral label next, else the verdict is NA
    (``no_majority=True``). This is Longform-MedQA's ``get_majority_vote`` without its coin flip.
    Columns: the keys, ``verdict``, ``n_repeats``, ``n_ok``, ``n_failed``, ``unanimous`` (all ok
    repeats agree), ``no_majority``, ``repeat_policy="majority"``.
    """
    d = df.copy()
    d["_pol"] = polarity_series(d, criterion, reversed_criteria, polarity)
    d["_ok"] = _ok_mask(d, verdict, parse_status)
    keys = [item, judge, criterion, order]
    base = d.groupby(keys, sort=True, dropna=False).agg(
        n_repeats=("_ok", "size"), n_ok=("_ok", "sum"), polarity=("_pol", "first")).reset_index()
    ok = d[d["_ok"]]
    counts = ok.groupby(keys + [verdict], sort=True).size().rename("_n").reset_index()
    counts["_max"] = counts.groupby(keys)["_n"].transform("max")
    top = counts[counts["_n"] == counts["_max"]].copy()
    top["_ntop"] = top.groupby(keys)[verdict].transform("size")
    distinct = counts.groupby(keys).size().rename("_ndistinct").reset_index()
    top = top.merge(base[keys + ["polarity"]], on=keys, how="left")
    neutral = np.where(top["polarity"] < 0, "neither", "tie")
    other = np.where(top["polarity"] < 0, "tie", "neither")
    # rank: a unique top label wins; on a tied top prefer the neutral label, then the other neutral
    top["_rank"] = np.where(top["_ntop"] == 1, 0,
                            np.where(top[verdict] == neutral, 1, np.where(top[verdict] == other, 2, 9)))
    best = top.sort_values(keys + ["_rank"]).groupby(keys, sort=True).head(1)
    best = best.assign(**{verdict: best[verdict].where(best["_rank"] < 9)})
    best["no_majority"] = best["_ntop"] > 1
    out = base.merge(best[keys + [verdict, "no_majority"]], on=keys, how="left")
    out = out.merge(distinct, on=keys, how="left")
    out["n_ok"] = out["n_ok"].astype(int)
    out["n_failed"] = out["n_repeats"] - out["n_ok"]
    out["unanimous"] = (out["_ndistinct"] == 1).astype(object).where(out["n_ok"] > 0, None)
    out["no_majority"] = out["no_majority"].fillna(False).astype(bool)
    out[verdict] = out[verdict].astype(object).where(out[verdict].notna(), None)
    out["polarity"] = out["polarity"].astype(int)
    out["repeat_policy"] = "majority"
    return out[keys + [verdict, "n_repeats", "n_ok", "n_failed", "unanimous", "no_majority", "polarity",
                       "repeat_policy"]]


# --------------------------------------------------------------------------- orders
def _resolve(v1, v2, policy: str, pol: int) -> tuple[object, str]:
    if v1 is None or v2 is None or (isinstance(v1, float) and np.isnan(v1)) or (isinstance(v2, float) and np.isnan(v2)):
        return None, "failed"
    if v1 == v2:
        return v1, "agree"
    if policy == "drop":
        return None, "dropped"
    lab = neutral_label(pol) if policy == "neutral" else policy
    return lab, f"inconsistent->{lab}"


def resolve_orders(
    df: pd.DataFrame,
    policy: str = "drop",
    *,
    item: str = "item",
    judge: str = "judge",
    criterion: str = "criterion",
    order: str = "order",
    verdict: str = "verdict",
    parse_status: str | None = "parse_status",
    reversed_criteria: Collection[str] | None = None,
    polarity: str | None = None,
) -> pd.DataFrame:
    """Combine the ``AB`` and ``BA`` verdicts (model terms) of each (item, judge, criterion).

    ``df`` holds one verdict per order; if it has repeats (several rows per order) they are first
    reduced with :func:`majority_over_repeats`. Returns one row per pair with ``verdict_ab``,
    ``verdict_ba``, ``consistent`` (NA when an order failed), the resolved ``verdict``,
    ``resolution`` (``agree``, ``dropped``, ``inconsistent->tie``, ``inconsistent->neither``,
    ``failed`` - an order has no parsed call or is absent - or ``no_majority`` - an order's repeats
    had no majority), ``n_failed`` (failed calls) and ``policy``. Dropped and failed pairs keep a row with
    verdict NA so that they are counted; filter with ``out[out.verdict.notna()]``.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}; got {policy!r}")
    need = [item, judge, criterion, order, verdict]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise SchemaError("judgments", missing[0], [], f"missing column(s) {missing}")
    _check_labels(df, verdict, MODEL_LABELS)
    d = df.copy()
    d[order] = d[order].astype(str).str.upper()
    bad = ~d[order].isin(ORDERS)
    if bad.any():
        raise SchemaError("judgments", order, [int(i) for i in np.flatnonzero(bad)],
                          f"order must be one of {ORDERS}; found {sorted(set(d.loc[bad, order]))[:5]}")
    maj = majority_over_repeats(d, item=item, judge=judge, criterion=criterion, order=order,
                                verdict=verdict, parse_status=parse_status,
                                reversed_criteria=reversed_criteria, polarity=polarity)
    keys = [item, judge, criterion]
    wide = maj.pivot(index=keys, columns=order, values=verdict).reindex(columns=list(ORDERS))
    present = maj.assign(_p=True).pivot(index=keys, columns=order, values="_p").reindex(columns=list(ORDERS))
    agg = maj.groupby(keys, sort=True).agg(n_failed=("n_failed", "sum"), polarity=("polarity", "first"))
    out = agg.join(wide.rename(columns={"AB": "verdict_ab", "BA": "verdict_ba"})).reset_index()
    pres = present.reindex(pd.MultiIndex.from_frame(out[keys])).notna().to_numpy()
    v_ab = out["verdict_ab"].astype(object).where(out["verdict_ab"].notna(), None)
    v_ba = out["verdict_ba"].astype(object).where(out["verdict_ba"].notna(), None)
    failed = v_ab.isna() | v_ba.isna()
    # an order with parsed repeats but no majority is "no_majority", not a parse failure
    n_ok = maj.pivot(index=keys, columns=order, values="n_ok").reindex(columns=list(ORDERS))
    n_ok = n_ok.reindex(pd.MultiIndex.from_frame(out[keys])).fillna(0).to_numpy()
    nomaj = failed.to_numpy() & (((v_ab.isna().to_numpy()) & (n_ok[:, 0] > 0))
                                 | ((v_ba.isna().to_numpy()) & (n_ok[:, 1] > 0)))
    agree = ~failed & (v_ab == v_ba)
    neutral = np.where(out["polarity"] < 0, "neither", "tie")
    if policy == "drop":
        how = np.where(failed, "failed", np.where(agree, "agree", "dropped"))
        res = np.where(agree, v_ab, None)
    else:
        lab = neutral if policy == "neutral" else np.full(len(out), policy)
        how = np.where(failed, "failed", np.where(agree, "agree", "inconsistent->" + lab.astype(object)))
        res = np.where(failed, None, np.where(agree, v_ab, lab))
    out["verdict_ab"], out["verdict_ba"] = v_ab, v_ba
    out["consistent"] = pd.Series(agree, dtype=object).where(~failed, None)
    out[verdict] = pd.Series(res, dtype=object)
    out["resolution"] = np.where(nomaj, "no_majority", how)
    out["missing_order"] = [",".join(o for o, ok in zip(ORDERS, row) if not ok) for row in pres]
    out["policy"] = policy
    out["n_failed"] = out["n_failed"].astype(int)
    return out[keys + ["verdict_ab", "verdict_ba", "consistent", verdict, "resolution", "n_failed",
                       "missing_order", "polarity", "policy"]]


def merge_judges(
    resolved: pd.DataFrame,
    judges: tuple[str, str] | list[str],
    policy: str = "neutral",
    *,
    name: str | None = None,
    item: str = "item",
    judge: str = "judge",
    criterion: str = "criterion",
    verdict: str = "verdict",
    reversed_criteria: Collection[str] | None = None,
    polarity: str | None = "polarity",
) -> pd.DataFrame:
    """Merge two judges' resolved verdicts into one: keep agreement, resolve disagreement by ``policy``.

    Longform-MedQA merges GPT-4o and Claude with the ``neutral`` rule. If either judge has no
    verdict (dropped or failed) the merged verdict is NA with ``resolution="failed"``. Returns one
    row per (item, criterion) with ``verdict_<judge>`` columns, ``verdict``, ``resolution``,
    ``judge=name`` (default ``"j1+j2"``) and ``merge_policy``.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}; got {policy!r}")
    judges = list(judges)
    if len(judges) != 2:
        raise ValueError(f"merge_judges merges exactly two judges; got {judges}")
    absent = [j for j in judges if j not in set(resolved[judge])]
    if absent:
        raise SchemaError("judgments", judge, [], f"judge(s) {absent} not in the table; present: "
                          f"{sorted(map(str, set(resolved[judge])))}")
    name = name or "+".join(judges)
    d = resolved[resolved[judge].isin(judges)]
    pol_col = polarity if polarity in d.columns else None
    pol = polarity_series(d, criterion, reversed_criteria, pol_col)
    d = d.assign(_pol=pol)
    dup = d.duplicated([item, criterion, judge], keep=False)
    if dup.any():
        raise SchemaError("judgments", f"{item},{criterion},{judge}", [int(i) for i in np.flatnonzero(dup)],
                          "merge_judges needs one resolved verdict per item, criterion and judge; "
                          "run resolve_orders first")
    wide = d.set_index([item, criterion, judge])[verdict].unstack(judge)
    pols = d.groupby([item, criterion])["_pol"].first()
    rows = []
    for (it, cr), r in wide.iterrows():
        v1 = r.get(judges[0])
        v2 = r.get(judges[1])
        v1 = None if pd.isna(v1) else v1
        v2 = None if pd.isna(v2) else v2
        v, how = _resolve(v1, v2, policy, int(pols.loc[(it, cr)]))
        rows.append({item: it, judge: name, criterion: cr, f"verdict_{judges[0]}": v1,
                     f"verdict_{judges[1]}": v2, verdict: v, "resolution": how,
                     "polarity": int(pols.loc[(it, cr)]), "merge_policy": policy})
    return pd.DataFrame(rows)


def resolve_pairwise(
    df: pd.DataFrame,
    policy: str = "neutral",
    *,
    merge: tuple[str, str] | None = None,
    merge_policy: str | None = None,
    **columns,
) -> pd.DataFrame:
    """Majority over repeats, then :func:`resolve_orders`, then optionally :func:`merge_judges`.

    The Longform-MedQA pipeline is ``resolve_pairwise(df, "neutral", merge=("gpt-4o", "claude"),
    reversed_criteria={"harmfulness", "bias"})``.
    """
    res = resolve_orders(df, policy, **columns)
    if merge is None:
        return res
    keep = {k: v for k, v in columns.items() if k in ("item", "judge", "criterion", "verdict", "reversed_criteria")}
    return merge_judges(res, merge, merge_policy or policy, **keep)


