"""Stopping rules and best-round selection: when a refinement run stops, and which round it outputs.

Stopping rules (:data:`STOP_RULES`, one definition for the package; the generation pipeline uses it):

``"total"``           stop when the total score *exceeds* ``threshold`` (strictly greater);
                      MCQG-SRefine's text (App. A).
``"all_components"``  stop when *every* component score is ``>= threshold``; MCQG-SRefine's
                      released code (``src/usmle/run.py::check_stop``).
``"max_rounds"``      never stop on scores; only the round budget ends the run.

Whatever the rule, a run also stops once ``round >= max_rounds``. A component whose score could not
be parsed (NA) never satisfies a rule: the run goes on.

The best round maximises ``key`` (``"total"`` = component mean, ``"total_points"`` or
``"total_available"``); ties (equal within 1e-12) go to the ``"earliest"`` (fewest corrections) or
``"latest"`` round (:data:`TIE_BREAKS`). Rounds whose key is NA are never chosen; an item with no
scored round has no best round.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.datasets.scores import parse_score_string
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import ParameterError
from medeval_kit.results import result_frame, result_row
from medeval_kit.rounds.tables import component_table, item_rounds
from medeval_kit.stats import proportion_ci

__all__ = ["STOP_RULES", "TIE_BREAKS", "TOTALS", "BEST_KEYS", "should_stop", "select_best_round",
           "fill_best_rounds", "apply_stopping_rule", "stopping_rule_consistency", "item_summary"]


def _total_rule(agg: Mapping[str, Any], threshold: float):
    """The paper's text: the total exceeds the threshold."""
    return agg["total"] > threshold


def _all_components_rule(agg: Mapping[str, Any], threshold: float):
    """The released code: the lowest component reaches the threshold."""
    return agg["lowest"] >= threshold


def _never(agg: Mapping[str, Any], threshold: float):
    """Scores never stop the run (only the round budget does)."""
    return np.zeros(np.shape(agg["lowest"]), dtype=bool)


_RULES: dict[str, Callable[[Mapping[str, Any], float], Any]] = {
    "total": _total_rule,
    "all_components": _all_components_rule,
    "max_rounds": _never,
}
STOP_RULES = tuple(_RULES)
"""Names of the stopping rules; a rule is a function of the round's aggregates (``lowest``, ``total``)."""
TIE_BREAKS = ("earliest", "latest")
TOTALS = ("mean", "points")
"""How a round's total is formed: mean of normalised components, or summed points over summed maxima."""
BEST_KEYS = ("total", "total_points", "total_available")

_TIE_ATOL = 1e-12


def _check_choice(name: str, value: str, allowed: Sequence[str]) -> None:
    """Raise ParameterError unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ParameterError(f"{name} {value!r} is unknown; choose one of {list(allowed)}")


def _rule_holds(rule: str, threshold: float, *, complete, lowest, total):
    """Whether ``rule`` stops a round with these aggregates (scalars or aligned Series)."""
    return complete & _RULES[rule]({"lowest": lowest, "total": total}, threshold)


def _as_fraction(value: Any) -> tuple[float, float]:
    """Return (points, max) for a float in [0, 1], an 'x/y' string or a (score, max) pair."""
    if isinstance(value, str):
        p = parse_score_string(value)
        return p.score, p.max_score
    if isinstance(value, (tuple, list)) and len(value) == 2:
        sc, mx = (math.nan if v is None else float(v) for v in value)
        return sc, mx
    if value is None:
        return math.nan, math.nan
    return float(value), 1.0


def should_stop(
    component_scores: Mapping[str, Any] | Sequence[Any],
    rule: str = "all_components",
    threshold: float = 0.9,
    *,
    round: int | None = None,  # noqa: A002 - the schema's column name
    max_rounds: int | None = None,
    total: str = "mean",
) -> bool:
    """Return True when a refinement run should stop after a round with these component scores.

    ``component_scores`` maps component -> score, each a normalised float (0-1), an ``"x/y"``
    string or a ``(score, max)`` pair. ``rule`` is one of :data:`STOP_RULES`. ``total="mean"``
    averages normalised components (MCQG-SRefine Tables 4-5 arithmetic); ``"points"`` divides
    summed points by summed maxima. With ``round`` and ``max_rounds`` given, the budget also stops
    the run. An unparseable (NA) component never satisfies a rule.

    Parameters
    ----------
    component_scores : mapping or sequence
        Component -> score (or the scores alone): normalised floats, ``"x/y"`` strings or ``(score, max)``
        pairs.
    rule : str, default "all_components"
        A rule of :data:`STOP_RULES`.
    threshold : float, default 0.9
        The level the rule compares with.
    round : int, optional
        The round just finished (1 = first draft).
    max_rounds : int, optional
        The round budget; with ``round`` it stops the run at ``round >= max_rounds``.
    total : {"mean", "points"}, default "mean"
        How the total is formed (:data:`TOTALS`).

    Returns
    -------
    bool
        Whether the run stops after this round.

    Raises
    ------
    ParameterError
        An unknown rule or total.

    Examples
    --------
    >>> should_stop({"context": "45/45", "question": "21/25"}, "all_components")   # 0.84 < 0.9
    False
    >>> should_stop({"context": "45/45", "question": "21/25"}, "total")            # mean 0.92
    True
    >>> should_stop({"context": 0.5}, "max_rounds", round=4, max_rounds=4)
    True
    """
    _check_choice("stopping rule", rule, STOP_RULES)
    _check_choice("total", total, TOTALS)
    if round is not None and max_rounds is not None and round >= max_rounds:
        return True
    values = list(component_scores.values()) if isinstance(component_scores, Mapping) else list(component_scores)
    fracs = [_as_fraction(v) for v in values]
    if not fracs or any(math.isnan(s) or math.isnan(m) or m <= 0 for s, m in fracs):
        return False
    norm = [s / m for s, m in fracs]
    tot = float(np.mean(norm)) if total == "mean" else sum(s for s, _ in fracs) / sum(m for _, m in fracs)
    return bool(_rule_holds(rule, threshold, complete=True, lowest=min(norm), total=tot))


@shared_docs
@takes_columns("item", "round", "component", "aspect", "score", "max_score", "stop", "best")
def select_best_round(
    rounds_df: pd.DataFrame,
    tie_break: str = "earliest",
    *,
    key: str = "total",
    columns: Columns = None,
) -> pd.DataFrame:
    """Return one row per item: the round with the highest ``key``.

    Ties within 1e-12 go to the ``"earliest"`` or ``"latest"`` round. NA totals are never chosen; an
    item without a scored round gets NA and a ``note``.

    Parameters
    ----------
    rounds_df : DataFrame
        The ``rounds`` table.
    tie_break : {"earliest", "latest"}, default "earliest"
        Which of tied rounds is best (:data:`TIE_BREAKS`).
    key : {"total", "total_points"}, default "total"
        The per-round value maximised (:data:`BEST_KEYS`).
    {columns}

    Returns
    -------
    DataFrame
        ``item, best_round, best_value, n_rounds, n_scored, n_tied`` (rounds sharing the maximum),
        ``tie_break``, ``key`` and ``note``.
    """
    _check_choice("tie_break", tie_break, TIE_BREAKS)
    _check_choice("key", key, BEST_KEYS)
    ir = item_rounds(rounds_df)[["item", "round", key]]
    v = ir[key].to_numpy(float)
    g = ir.groupby("item", sort=True)
    best_value = g[key].max()
    mx = ir["item"].map(best_value).to_numpy(float)
    tied = ir[~np.isnan(v) & np.isclose(v, mx, rtol=0, atol=_TIE_ATOL)]
    tg = tied.groupby("item")["round"]
    best = (tg.min() if tie_break == "earliest" else tg.max())
    out = pd.DataFrame({"n_rounds": g.size(), "n_scored": g[key].count(), "best_value": best_value})
    out["best_round"] = best.reindex(out.index).astype("Int64")
    out["n_tied"] = tg.size().reindex(out.index).fillna(0).astype("int64")
    out["tie_break"], out["key"] = tie_break, key
    out["note"] = np.where(out["n_scored"] == 0, "no scored round", "")
    out = out.reset_index()
    return out[["item", "best_round", "best_value", "n_rounds", "n_scored", "n_tied", "tie_break", "key", "note"]]


def _best_per_item(rounds_df: pd.DataFrame, tie_break: str, key: str = "total") -> pd.DataFrame:
    """Per item (index): ``best_round`` (the earliest ``best``-flagged round, else selected) and
    ``best_from`` (``flag`` / ``selected``)."""
    ir = item_rounds(rounds_df)
    items = pd.Index(sorted(ir["item"].unique()), name="item")
    flagged = ir[ir["best"]].groupby("item")["round"].min().reindex(items)
    out = pd.DataFrame({"best_from": np.where(flagged.notna(), "flag", "selected")}, index=items)
    if flagged.isna().any():
        sel = select_best_round(rounds_df, tie_break=tie_break, key=key).set_index("item")["best_round"]
        flagged = flagged.astype("Float64").fillna(sel.reindex(items).astype("Float64"))
    out["best_round"] = flagged.astype("Int64")
    return out


@shared_docs
@takes_columns("item", "round", "component", "aspect", "score", "max_score", "stop", "best")
def fill_best_rounds(rounds_df: pd.DataFrame, tie_break: str = "earliest", *, key: str = "total",
                     columns: Columns = None) -> pd.DataFrame:
    """Return a copy in which every item without a ``best`` round gets the one :func:`select_best_round` picks.

    Parameters
    ----------
    rounds_df : DataFrame
        The ``rounds`` table.
    tie_break : {"earliest", "latest"}, default "earliest"
        Which of tied rounds is best (:data:`TIE_BREAKS`).
    key : {"total", "total_points"}, default "total"
        The per-round value maximised (:data:`BEST_KEYS`).
    {columns}

    Returns
    -------
    DataFrame
        The table with ``best`` filled. Items that already flag a best round keep their flags.
        ``best_method`` records where the best round came from: kept as is for flagged items
        (``"flag"`` when the column is new), ``"max_<key>_<tie_break>"`` (e.g. ``"max_total_earliest"``)
        for selected ones, ``"none"`` when the item has no scored round.
    """
    best = _best_per_item(rounds_df, tie_break, key)
    out = rounds_df.copy()
    ids = out["item"].astype(str)
    from_flag = ids.map(best["best_from"]).eq("flag").to_numpy(bool)
    chosen = ids.map(best["best_round"].astype("Float64")).astype(float).to_numpy()
    flags = out["best"].to_numpy(bool) if "best" in out.columns else np.zeros(len(out), bool)
    out["best"] = np.where(from_flag, flags, out["round"].to_numpy(float) == chosen)
    kept = out["best_method"].astype(str).to_numpy() if "best_method" in out.columns else "flag"
    out["best_method"] = np.where(from_flag, kept, np.where(np.isnan(chosen), "none", f"max_{key}_{tie_break}"))
    return out


def _stop_rounds(comp: pd.DataFrame, rule: str, threshold: float, max_rounds: int | None,
                 total: str) -> pd.DataFrame:
    """Per item: the round a run stops at under ``rule`` (vectorised :func:`should_stop`) and why."""
    mx = comp["max_score"].fillna(1.0)
    mx = mx.where(mx > 0)
    c = comp.assign(norm=comp["score"] / mx, mxf=mx)
    c["na"] = c["norm"].isna()
    agg = c.groupby(["item", "round"], sort=True).agg(
        n_na=("na", "sum"), lo=("norm", "min"), mean=("norm", "mean"), pts=("score", "sum"), mxs=("mxf", "sum"),
    ).reset_index()
    tot = agg["mean"] if total == "mean" else agg["pts"] / agg["mxs"]
    ok = _rule_holds(rule, threshold, complete=agg["n_na"] == 0, lowest=agg["lo"], total=tot)
    budget = agg["round"] >= max_rounds if max_rounds is not None else pd.Series(False, index=agg.index)
    agg["reason"] = np.where(ok, "rule", np.where(budget, "max_rounds", ""))
    hit = agg[agg["reason"] != ""].groupby("item").head(1).set_index("item")
    last = agg.groupby("item")["round"].max()
    return pd.DataFrame({"stop_round": hit["round"].reindex(last.index).fillna(last).astype("int64"),
                         "stop_reason": hit["reason"].reindex(last.index).fillna("end_of_trace")})


@shared_docs
@takes_columns("item", "round", "component", "aspect", "score", "max_score", "stop", "best")
def apply_stopping_rule(
    rounds_df: pd.DataFrame,
    rule: str = "all_components",
    threshold: float = 0.9,
    *,
    max_rounds: int | None = 4,
    tie_break: str = "earliest",
    key: str = "total",
    total: str = "mean",
    truncate: bool = True,
    columns: Columns = None,
) -> pd.DataFrame:
    """Re-derive ``stop`` and ``best`` for each item as if the run had used ``rule``.

    Walking each item's rounds in order, the run stops at the first round where
    :func:`should_stop` holds (or ``round >= max_rounds``); rounds after it are dropped when
    ``truncate`` (they would not exist under this rule). If the trace ends first, its last round is
    the stop round. ``best`` is then re-selected among the kept rounds with :func:`select_best_round`.
    Parameters
    ----------
    rounds_df : DataFrame
        The ``rounds`` table.
    rule : str, default "all_components"
        A rule of :data:`STOP_RULES`.
    threshold : float, default 0.9
        The level the rule compares with.
    max_rounds : int, optional, default 4
        The round budget; None for none.
    tie_break : {"earliest", "latest"}, default "earliest"
        Which of tied rounds is best.
    key : {"total", "total_points"}, default "total"
        The per-round value the best round maximises.
    total : {"mean", "points"}, default "mean"
        How the rule forms the total (:data:`TOTALS`).
    truncate : bool, default True
        Drop the rounds after the stop round.
    {columns}

    Returns
    -------
    DataFrame
        The rounds table with ``stop`` and ``best`` re-derived and the added columns ``stop_rule``,
        ``stop_reason`` (``rule`` / ``max_rounds`` / ``end_of_trace``) and ``n_rounds_after_stop`` (per
        item: its rounds after the stop round, removed when ``truncate``).

    Raises
    ------
    ParameterError
        An unknown rule or total.
    """
    item, round = "item", "round"  # noqa: A001 - the schema's column name
    _check_choice("stopping rule", rule, STOP_RULES)
    _check_choice("total", total, TOTALS)
    comp = component_table(rounds_df)
    stops = _stop_rounds(comp, rule, threshold, max_rounds, total)
    out = rounds_df.copy()
    ids = out[item].astype(str)
    rr = out[round].astype("int64")
    limit = ids.map(stops["stop_round"])
    after = ~(limit.isna() | (rr <= limit)).to_numpy(bool)
    n_after = pd.Series(rr[after].to_numpy(), index=ids[after].to_numpy()).groupby(level=0).nunique()
    if truncate:
        out, ids, rr, limit = out[~after].copy(), ids[~after], rr[~after], limit[~after]
    out["stop"] = (rr == limit).to_numpy(bool)
    out["stop_rule"] = rule
    out["stop_reason"] = ids.map(stops["stop_reason"]).fillna("end_of_trace").to_numpy()
    out["n_rounds_after_stop"] = ids.map(n_after).fillna(0).astype("int64").to_numpy()
    kept = out if truncate else out[(rr <= limit).to_numpy(bool)]
    best = select_best_round(kept, tie_break=tie_break, key=key)
    bmap = best.set_index("item")["best_round"].astype("Float64")
    out["best"] = (rr.to_numpy(float) == ids.map(bmap).astype(float).to_numpy()).astype(bool)
    return out


def _consistency(df: pd.DataFrame, rule: str, threshold: float, max_rounds: int | None,
                 last: pd.Series) -> tuple[int, int, int]:
    """Traces (index of ``last``) stopped by ``rule`` at / before / never at their observed last round.

    The ``stop`` flags and ``stop_reason`` of :func:`apply_stopping_rule` (``truncate=False``), without
    copying the table or re-selecting best rounds, which the comparison does not use."""
    _check_choice("stopping rule", rule, STOP_RULES)
    stops = _stop_rounds(component_table(df), rule, threshold, max_rounds, "mean")
    ids = df["item"].astype(str)
    rr = df["round"].astype("int64")
    stop = (rr == ids.map(stops["stop_round"])).to_numpy(bool)
    derived = rr[stop].groupby(ids[stop].to_numpy()).first().reindex(last.index)
    reason = ids.map(stops["stop_reason"]).fillna("end_of_trace").groupby(ids.to_numpy()).first().reindex(last.index)
    consistent = (derived == last) & (reason != "end_of_trace")
    return int(consistent.sum()), int((derived < last).sum()), int((reason == "end_of_trace").sum())


@shared_docs
@takes_columns("item", "round", "component", "aspect", "score", "max_score", "stop", "best")
def stopping_rule_consistency(
    rounds_df: pd.DataFrame,
    rules: Iterable[str] = ("total", "all_components"),
    threshold: float = 0.9,
    *,
    max_rounds: int | None = 4,
    by: str | None = None,
    confidence: float = 0.95,
    columns: Columns = None,
) -> pd.DataFrame:
    """For each rule, the share of traces whose observed last round is the round the rule stops at.

    A trace is consistent with a rule when the rule (plus ``max_rounds``) stops it exactly at its
    observed last round; a trace that ends before the rule is satisfied and before the budget is
    inconsistent.

    Parameters
    ----------
    rounds_df : DataFrame
        The ``rounds`` table.
    rules : iterable of str, default ("total", "all_components")
        Rules of :data:`STOP_RULES`.
    threshold : float, default 0.9
        The level the rules compare with.
    max_rounds : int, optional, default 4
        The round budget; None for none.
    by : str, optional
        A column to split the traces by (e.g. ``source``); one table per value, stacked.
    {confidence}
    {columns}

    Returns
    -------
    DataFrame
        ``[by], rule``, ``estimate`` (the share of consistent traces), ``ci_low, ci_high, ci_method``
        (Wilson), ``n_items, n_failed`` (0: every trace counts), ``note`` and ``threshold, max_rounds,
        n_consistent, n_stop_earlier, n_stop_later, n_with_failed`` (traces with an unparsed score).
    """
    groups = [(None, rounds_df)] if by is None else list(rounds_df.groupby(by, sort=True))
    rows = []
    for key, df in groups:
        ir = item_rounds(df)
        last = ir.groupby("item")["round"].max()
        n_with_failed = int((ir.groupby("item")["n_failed"].sum() > 0).sum())
        for rule in rules:
            k, earlier, later = _consistency(df, rule, threshold, max_rounds, last)
            n = len(last)
            rows.append(result_row(
                k / n if n else math.nan, proportion_ci(k, n, confidence=confidence, method="wilson"), "Wilson",
                n_items=n, **({by: key} if by is not None else {}), rule=rule, threshold=threshold,
                max_rounds=max_rounds, n_consistent=k, n_stop_earlier=earlier, n_stop_later=later,
                n_with_failed=n_with_failed))
    return result_frame(rows, keys=[*([by] if by is not None else []), "rule"])


@shared_docs
@takes_columns("item", "round", "component", "aspect", "score", "max_score", "stop", "best")
def item_summary(rounds_df: pd.DataFrame, *, tie_break: str = "earliest", columns: Columns = None) -> pd.DataFrame:
    """Return one row per item: its rounds, stop and best round and totals.

    Parameters
    ----------
    rounds_df : DataFrame
        The ``rounds`` table.
    tie_break : {"earliest", "latest"}, default "earliest"
        Which of tied rounds is best when the table flags none.
    {columns}

    Returns
    -------
    DataFrame
        ``item, n_rounds, stop_round``, ``best_round`` (the table's ``best`` flag; else re-selected with
        ``tie_break``; ``best_from`` says which), ``total_first``, ``total_last``, ``total_best``, and
        ``source``, ``note_length``, ``question_length_first``/``_best`` where present.
    """
    ir = item_rounds(rounds_df).sort_values(["item", "round"], kind="stable")
    g = ir.groupby("item", sort=True)
    first = ir.drop_duplicates("item", keep="first").set_index("item")
    last = ir.drop_duplicates("item", keep="last").set_index("item")
    out = pd.DataFrame({"n_rounds": g.size()})
    out["stop_round"] = ir[ir["stop"]].groupby("item")["round"].min().reindex(out.index).fillna(last["round"]).astype(int)
    out = out.join(_best_per_item(rounds_df, tie_break)[["best_from", "best_round"]])
    out["total_first"] = first["total"]
    out["total_last"] = last["total"]
    at_best = ir.merge(out["best_round"].dropna().astype("int64").rename("round").reset_index(), on=["item", "round"])
    at_best = at_best.set_index("item").reindex(out.index)
    out["total_best"] = at_best["total"]
    for c in ("source", "note_length"):
        if c in ir.columns:
            out[c] = first[c]
    if "question_length" in ir.columns:
        out["question_length_first"] = first["question_length"]
        out["question_length_best"] = at_best["question_length"]
    out = out.reset_index()
    return out[["item", "n_rounds", "stop_round", "best_round", "best_from", "total_first", "total_last",
                "total_best", *[c for c in ("source", "note_length", "question_length_first", "question_length_best")
                                if c in out.columns]]]
