"""Round-wise analysis of iterative refinement (MCQG-SRefine self-critique / correction rounds).

Input is the ``rounds`` table (:mod:`medeval_kit.schemas`): one row per item, round, component
and aspect; component scores are the rows with ``aspect == "total"``. Round 1 is the initial
draft. A component's normalised score is ``score / max_score`` (``max_score`` NA means the score
is already on 0–1). The item's **total** in a round is the *unweighted mean of its normalised
component scores* — the arithmetic that reproduces MCQG-SRefine's 0.9031 (Table 4, round 1);
``total_points`` (sum of points over sum of maxima) is the aspect-count-weighted alternative.

Three groups of functions:

* **Stopping and selection** (pure; the generation pipeline calls them):
  :func:`should_stop`, :func:`apply_stopping_rule`, :func:`select_best_round`,
  :func:`parse_score_string`.
* **Analysis** (tidy DataFrames, every statistic with its ``n``):
  :func:`item_rounds`, :func:`component_table`, :func:`round_means` (available-only vs
  last-value-carried-forward, to expose survivor bias), :func:`stop_best_distribution`,
  :func:`paired_round_tests`, :func:`mixed_model`, :func:`round_correlations`,
  :func:`stopping_rule_consistency`, :func:`item_summary`, :func:`load_summary`.
* **Curves**: :func:`component_mean_total` (the total as a (weighted) mean of component
  means), :func:`introspection_curve` / :func:`fit_introspection_curve` (a saturation curve
  f(t) = a / (1 + e^(-bt - c))^power and its least-squares fit).

The papers' printed numbers (MCQG-SRefine Tables 4-8, AutoMedEval App. F) and the checks against
them live in :mod:`medeval_kit.repro`, not here.

Plots: :func:`plot_round_means`, :func:`plot_component_trajectories`, :func:`plot_stop_best`.

Stopping rules
--------------
``"total"``           the paper's text (MCQG-SRefine App. A): stop when the total score
                      *exceeds* ``threshold`` (strictly greater).
``"all_components"``  the public code (``src/usmle/run.py::check_stop``): stop when *every*
                      component score is ``>= threshold``.
``"max_rounds"``      never stop on scores; only the round budget ends the run.
Whatever the rule, a run also stops once ``round >= max_rounds`` (the code's ``max_attempts = 4``).
A component whose score could not be parsed (NA) never satisfies a rule: the run goes on.

Best-round selection
--------------------
The best round maximises ``key`` (``"total"`` = component mean, or ``"total_points"``); ties
(equal within 1e-12) go to the ``"earliest"`` (default; fewest corrections) or ``"latest"``
round. Rounds whose key is NA are never chosen; an item with no scored round has no best round.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from medeval_kit.errors import DataFileError, ParameterError

__all__ = [
    "COMPONENTS",
    "STOP_RULES",
    "TIE_BREAKS",
    "ASPECTS_PER_COMPONENT",
    "ScoreParse",
    "parse_score_string",
    "should_stop",
    "apply_stopping_rule",
    "select_best_round",
    "component_table",
    "item_rounds",
    "item_summary",
    "round_means",
    "stop_best_distribution",
    "paired_round_tests",
    "mixed_model",
    "round_correlations",
    "stopping_rule_consistency",
    "load_summary",
    "aspect_sum_check",
    "load_rounds_file",
    "component_mean_total",
    "introspection_curve",
    "CurveFit",
    "fit_introspection_curve",
    "roundwise_tables",
    "plot_round_means",
    "plot_component_trajectories",
    "plot_stop_best",
    "register_cli",
    "STOPPING_RULE_NOTE",
]

COMPONENTS = ("context", "question", "answer", "distractors", "reasoning")
STOP_RULES = ("total", "all_components", "max_rounds")
TIE_BREAKS = ("earliest", "latest")

ASPECTS_PER_COMPONENT = {"context": 9, "question": 5, "answer": 5, "distractors": 7, "reasoning": 4}
"""MCQG-SRefine aspect counts (Table 21: 30 aspects, reasoning incl. correctness), each scored /5."""

_TIE_ATOL = 1e-12

# ---------------------------------------------------------------------------------------------
# Parsing and stopping rules
# ---------------------------------------------------------------------------------------------

_SCORE_RE = re.compile(r"(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)")


class ScoreParse(NamedTuple):
    """Result of :func:`parse_score_string`: score, max_score, status (``ok``/``failed``) and reason."""

    score: float
    max_score: float
    status: str
    reason: str


def parse_score_string(text: Any) -> ScoreParse:
    """Parse a critique score string like ``"24/25"`` or ``"Total score for the context = 45/45."``.

    The *last* ``x/y`` fraction in the text is taken (a component total follows its aspect
    scores). A string without a fraction (e.g. a bare ``"20"``: the scale is unknown), a zero
    denominator or a numerator above the denominator gives ``status="failed"`` with NaN scores.

    >>> parse_score_string("Total score for the context = 45/45.")
    ScoreParse(score=45.0, max_score=45.0, status='ok', reason='')
    >>> parse_score_string("20").status
    'failed'
    """
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return ScoreParse(math.nan, math.nan, "failed", "missing score")
    s = str(text)
    matches = _SCORE_RE.findall(s)
    if not matches:
        return ScoreParse(math.nan, math.nan, "failed", "no 'x/y' fraction found")
    num, den = (float(v) for v in matches[-1])
    if den <= 0:
        return ScoreParse(math.nan, math.nan, "failed", "zero denominator")
    if num > den:
        return ScoreParse(math.nan, math.nan, "failed", "score exceeds its maximum")
    return ScoreParse(num, den, "ok", "")


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
    v = float(value)
    return v, 1.0


def _check_rule(rule: str) -> None:
    if rule not in STOP_RULES:
        raise ParameterError(f"stopping rule {rule!r} is unknown; choose one of {list(STOP_RULES)}")


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

    ``component_scores`` maps component -> score, each a normalised float (0–1), an ``"x/y"``
    string or a ``(score, max)`` pair. ``rule`` is ``"total"`` (paper: total > threshold),
    ``"all_components"`` (code: every component >= threshold) or ``"max_rounds"`` (scores never
    stop the run). ``total="mean"`` averages normalised components (Tables 4–5 arithmetic);
    ``"points"`` divides summed points by summed maxima. With ``round`` and ``max_rounds`` given,
    the budget also stops the run. An unparseable (NA) component never satisfies a rule.

    >>> should_stop({"context": "45/45", "question": "21/25"}, "all_components")   # 0.84 < 0.9
    False
    >>> should_stop({"context": "45/45", "question": "21/25"}, "total")            # mean 0.92
    True
    >>> should_stop({"context": 0.5}, "max_rounds", round=4, max_rounds=4)
    True
    """
    _check_rule(rule)
    if total not in ("mean", "points"):
        raise ParameterError(f"total must be 'mean' or 'points', not {total!r}")
    if round is not None and max_rounds is not None and round >= max_rounds:
        return True
    if rule == "max_rounds":
        return False
    values = list(component_scores.values()) if isinstance(component_scores, Mapping) else list(component_scores)
    if not values:
        return False
    fracs = [_as_fraction(v) for v in values]
    if any(math.isnan(s) or math.isnan(m) or m <= 0 for s, m in fracs):
        return False
    norm = [s / m for s, m in fracs]
    if rule == "all_components":
        return all(v >= threshold for v in norm)
    tot = float(np.mean(norm)) if total == "mean" else sum(s for s, _ in fracs) / sum(m for _, m in fracs)
    return tot > threshold


# ---------------------------------------------------------------------------------------------
# Reshaping
# ---------------------------------------------------------------------------------------------

_EXTRA = ("source", "question_length", "note_length", "self_answer_correct", "answer_equals_keypoint", "best_method")
_BOOL_EXTRA = ("self_answer_correct", "answer_equals_keypoint")


def component_table(
    rounds_df: pd.DataFrame,
    *,
    item: str = "item",
    round: str = "round",  # noqa: A002
    component: str = "component",
    aspect: str = "aspect",
    score: str = "score",
    max_score: str = "max_score",
    total_aspect: str = "total",
) -> pd.DataFrame:
    """Return the component-level rows as ``item, round, component, score, max_score, value``.

    ``value`` is the normalised score (``score / max_score``; ``score`` itself when ``max_score``
    is NA). Columns are renamed to the schema names; ``source`` is kept when present.
    """
    _need(rounds_df, [item, round, component, aspect, score])
    df = rounds_df[rounds_df[aspect] == total_aspect]
    out = pd.DataFrame(
        {
            "item": df[item].astype(str).to_numpy(),
            "round": df[round].astype("int64").to_numpy(),
            "component": df[component].astype(str).to_numpy(),
            "score": pd.to_numeric(df[score], errors="coerce").astype(float).to_numpy(),
            "max_score": (
                pd.to_numeric(df[max_score], errors="coerce").astype(float).to_numpy()
                if max_score in df.columns else np.nan
            ),
        }
    )
    if "source" in df.columns:
        out["source"] = df["source"].astype(str).to_numpy()
    mx = out["max_score"]
    out["value"] = np.where(mx.notna() & (mx > 0), out["score"] / mx.where(mx > 0), out["score"])
    return out


def item_rounds(
    rounds_df: pd.DataFrame,
    *,
    item: str = "item",
    round: str = "round",  # noqa: A002
    component: str = "component",
    aspect: str = "aspect",
    score: str = "score",
    max_score: str = "max_score",
) -> pd.DataFrame:
    """Return one row per item and round: ``total`` (mean of normalised components; NaN when any
    component failed to parse), ``total_available`` (mean of the parsed ones), ``total_points``,
    ``n_components``, ``n_failed``, ``stop``, ``best``, ``last_round`` (the trace ends here), and
    the extra columns ``source``, ``question_length``, ``note_length``, ``self_answer_correct`` and
    ``answer_equals_keypoint`` (as 1.0/0.0/NaN) when the input has them.
    """
    comp = component_table(
        rounds_df, item=item, round=round, component=component, aspect=aspect, score=score, max_score=max_score
    )
    if comp.empty:
        raise ParameterError("the rounds table has no component-level rows (aspect == 'total')")
    comp["failed"] = comp["value"].isna()
    g = comp.groupby(["item", "round"], sort=True)
    out = g.agg(
        total_available=("value", "mean"),
        n_components=("value", "size"),
        n_failed=("failed", "sum"),
        _pts=("score", "sum"),
        _mx=("max_score", "sum"),
        _mx_n=("max_score", "count"),
    ).reset_index()
    out["_mx"] = out["_mx"].where(out["_mx_n"] == out["n_components"])
    out = out.drop(columns=["_mx_n"])
    out["total"] = out["total_available"].where(out["n_failed"] == 0)
    out["total_points"] = (out["_pts"] / out["_mx"]).where((out["n_failed"] == 0) & out["_mx"].notna())
    out = out.drop(columns=["_pts", "_mx"])
    out["n_failed"] = out["n_failed"].astype("int64")

    src = rounds_df.rename(columns={item: "item", round: "round"})
    src = src.assign(item=src["item"].astype(str), round=src["round"].astype("int64"))
    flags = src.groupby(["item", "round"], sort=True).agg(
        stop=("stop", "any") if "stop" in src.columns else ("round", lambda s: False),
        best=("best", "any") if "best" in src.columns else ("round", lambda s: False),
    )
    out = out.merge(flags.reset_index(), on=["item", "round"], how="left")
    extras = [c for c in _EXTRA if c in src.columns]
    if extras:
        first = src.groupby(["item", "round"], sort=True)[extras].first().reset_index()
        out = out.merge(first, on=["item", "round"], how="left")
        for c in _BOOL_EXTRA:
            if c in out.columns:
                out[c] = pd.to_numeric(out[c].astype("boolean").astype("Float64"), errors="coerce").astype(float)
    out["stop"] = out["stop"].fillna(False).astype(bool)
    out["best"] = out["best"].fillna(False).astype(bool)
    out["last_round"] = out["round"] == out.groupby("item")["round"].transform("max")
    return out


def item_summary(rounds_df: pd.DataFrame, *, tie_break: str = "earliest") -> pd.DataFrame:
    """Return one row per item: ``n_rounds``, ``stop_round``, ``best_round`` (the table's ``best``
    flag; else re-selected with ``tie_break``; ``best_from`` says which), ``total_first``,
    ``total_best``, ``total_last``, ``note_length``, ``question_length_first``/``_best`` and
    ``source`` where present."""
    ir = item_rounds(rounds_df).sort_values(["item", "round"], kind="stable")
    g = ir.groupby("item", sort=True)
    first = ir.drop_duplicates("item", keep="first").set_index("item")
    last = ir.drop_duplicates("item", keep="last").set_index("item")
    out = pd.DataFrame({"n_rounds": g.size()})
    out["stop_round"] = ir[ir["stop"]].groupby("item")["round"].min().reindex(out.index).fillna(last["round"]).astype(int)
    flagged = ir[ir["best"]].groupby("item")["round"].min().reindex(out.index)
    out["best_from"] = np.where(flagged.notna(), "flag", "selected")
    if flagged.isna().any():
        sel = select_best_round(rounds_df, tie_break=tie_break).set_index("item")["best_round"]
        flagged = flagged.astype("Float64").fillna(sel.reindex(out.index).astype("Float64"))
    out["best_round"] = flagged.astype("Int64")
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


# ---------------------------------------------------------------------------------------------
# Stopping and best-round selection on tables
# ---------------------------------------------------------------------------------------------


def select_best_round(
    rounds_df: pd.DataFrame,
    tie_break: str = "earliest",
    *,
    key: str = "total",
    item: str = "item",
    round: str = "round",  # noqa: A002
) -> pd.DataFrame:
    """Return one row per item: ``best_round``, ``best_value``, ``n_rounds``, ``n_scored``,
    ``n_tied`` (rounds sharing the maximum), ``tie_break``, ``key`` and ``note``.

    ``key`` is ``"total"`` (mean of normalised components), ``"total_points"`` or
    ``"total_available"``. Ties within 1e-12 go to the ``"earliest"`` or ``"latest"`` round.
    NA totals are never chosen; an item without a scored round gets NA and a ``note``.
    """
    if tie_break not in TIE_BREAKS:
        raise ParameterError(f"tie_break must be one of {list(TIE_BREAKS)}, not {tie_break!r}")
    if key not in ("total", "total_points", "total_available"):
        raise ParameterError(f"key must be 'total', 'total_points' or 'total_available', not {key!r}")
    ir = item_rounds(rounds_df, item=item, round=round)[["item", "round", key]]
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
    complete = agg["n_na"] == 0
    if rule == "all_components":
        ok = complete & (agg["lo"] >= threshold)
    elif rule == "total":
        tot = agg["mean"] if total == "mean" else agg["pts"] / agg["mxs"]
        ok = complete & (tot > threshold)
    else:
        ok = pd.Series(False, index=agg.index)
    budget = agg["round"] >= max_rounds if max_rounds is not None else pd.Series(False, index=agg.index)
    agg["reason"] = np.where(ok, "rule", np.where(budget, "max_rounds", ""))
    hit = agg[agg["reason"] != ""].groupby("item").head(1).set_index("item")
    last = agg.groupby("item")["round"].max()
    out = pd.DataFrame({"stop_round": hit["round"].reindex(last.index).fillna(last).astype("int64"),
                        "stop_reason": hit["reason"].reindex(last.index).fillna("end_of_trace")})
    return out


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
    item: str = "item",
    round: str = "round",  # noqa: A002
    component: str = "component",
    aspect: str = "aspect",
    score: str = "score",
    max_score: str = "max_score",
) -> pd.DataFrame:
    """Re-derive ``stop`` and ``best`` for each item as if the run had used ``rule``.

    Walking each item's rounds in order, the run stops at the first round where
    :func:`should_stop` holds (or ``round >= max_rounds``); rounds after it are dropped when
    ``truncate`` (they would not exist under this rule), and their count is in
    ``result.attrs["n_dropped"]``. If the trace ends first, its last round is the stop round.
    ``best`` is then re-selected among the kept rounds with :func:`select_best_round`.
    Added columns: ``stop_rule`` and ``stop_reason`` (``rule`` / ``max_rounds`` / ``end_of_trace``).
    """
    _check_rule(rule)
    if total not in ("mean", "points"):
        raise ParameterError(f"total must be 'mean' or 'points', not {total!r}")
    comp = component_table(rounds_df, item=item, round=round, component=component, aspect=aspect,
                           score=score, max_score=max_score)
    stops = _stop_rounds(comp, rule, threshold, max_rounds, total)
    out = rounds_df.copy()
    ids = out[item].astype(str)
    rr = out[round].astype("int64")
    limit = ids.map(stops["stop_round"])
    keep = (limit.isna() | (rr <= limit)).to_numpy(bool)
    n_dropped = int((~keep).sum())
    if truncate:
        out, ids, rr, limit = out[keep].copy(), ids[keep], rr[keep], limit[keep]
    out["stop"] = (rr == limit).to_numpy(bool)
    out["stop_rule"] = rule
    out["stop_reason"] = ids.map(stops["stop_reason"]).fillna("end_of_trace").to_numpy()
    kept = out if truncate else out[(rr <= limit).to_numpy(bool)]
    best = select_best_round(kept, tie_break=tie_break, key=key, item=item, round=round)
    bmap = best.set_index("item")["best_round"].astype("Float64")
    out["best"] = (rr.to_numpy(float) == ids.map(bmap).astype(float).to_numpy()).astype(bool)
    out.attrs["n_dropped"] = n_dropped
    out.attrs["stop_rule"] = {"rule": rule, "threshold": threshold, "max_rounds": max_rounds,
                              "tie_break": tie_break, "key": key, "total": total}
    return out


def stopping_rule_consistency(
    rounds_df: pd.DataFrame,
    rules: Iterable[str] = ("total", "all_components"),
    threshold: float = 0.9,
    *,
    max_rounds: int | None = 4,
    by: str | None = None,
) -> pd.DataFrame:
    """For each rule, count the traces whose observed last round is the round the rule stops at.

    A trace is consistent with a rule when the rule (plus ``max_rounds``) stops it exactly at its
    observed last round; a trace that ends before the rule is satisfied and before the budget is
    inconsistent. Returns ``rule, threshold, max_rounds, n_items, n_consistent, n_stop_earlier,
    n_stop_later, n_with_failed, share, ci_low, ci_high`` (Wilson 95 %), ``method``.
    """
    groups = [(None, rounds_df)] if by is None else list(rounds_df.groupby(by, sort=True))
    rows = []
    for key, df in groups:
        ir = item_rounds(df)
        last = ir.groupby("item")["round"].max()
        failed = ir.groupby("item")["n_failed"].sum() > 0
        for rule in rules:
            d = apply_stopping_rule(df, rule, threshold, max_rounds=max_rounds, truncate=False)
            d = d.assign(_item=d["item"].astype(str), _round=d["round"].astype("int64"))
            derived = d[d["stop"]].groupby("_item")["_round"].first()
            reason = d.groupby("_item")["stop_reason"].first()
            cmp = pd.DataFrame({"last": last, "derived": derived.reindex(last.index), "reason": reason.reindex(last.index)})
            consistent = (cmp["derived"] == cmp["last"]) & (cmp["reason"] != "end_of_trace")
            earlier = cmp["derived"] < cmp["last"]
            later = (cmp["reason"] == "end_of_trace")
            n, k = len(cmp), int(consistent.sum())
            lo, hi = _wilson(k, n)
            row = {"rule": rule, "threshold": threshold, "max_rounds": max_rounds, "n_items": n,
                   "n_consistent": k, "n_stop_earlier": int(earlier.sum()), "n_stop_later": int(later.sum()),
                   "n_with_failed": int(failed.sum()), "share": k / n if n else np.nan,
                   "ci_low": lo, "ci_high": hi, "method": "Wilson 95%"}
            if by is not None:
                row = {by: key, **row}
            rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# Round-wise statistics
# ---------------------------------------------------------------------------------------------


def _need(df: pd.DataFrame, cols: Iterable[str]) -> None:
    if not isinstance(df, pd.DataFrame):
        raise ParameterError(f"expected a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ParameterError(f"missing column(s) {missing}; present: {list(df.columns)}")


def _wilson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for k/n (NaN when n == 0)."""
    from medeval_kit.stats import proportion_ci

    return proportion_ci(int(k), int(n), confidence=level, method="wilson")


def _mean_ci(x: np.ndarray, level: float, method: str) -> tuple[float, float, str, str]:
    """Return (ci_low, ci_high, method, note) for the mean of x (NaN-free)."""
    n = len(x)
    binary = n > 0 and np.all(np.isin(x, (0.0, 1.0)))
    if method == "auto":
        method = "wilson" if binary else "t"
    if method == "wilson":
        if not binary:
            return np.nan, np.nan, "wilson", "values are not 0/1"
        lo, hi = _wilson(int(x.sum()), n, level)
        return lo, hi, "Wilson", ""
    if n < 2:
        return np.nan, np.nan, "t", "fewer than 2 values"
    from scipy.stats import t

    se = x.std(ddof=1) / math.sqrt(n)
    if se == 0:
        return float(x.mean()), float(x.mean()), "t", "zero variance"
    h = t.ppf(0.5 + level / 2, n - 1) * se
    return float(x.mean() - h), float(x.mean() + h), "t", ""


def round_means(
    df: pd.DataFrame,
    value: str = "total",
    *,
    item: str = "item",
    round: str = "round",  # noqa: A002
    by: str | Sequence[str] | None = None,
    methods: Sequence[str] = ("available", "locf"),
    max_round: int | None = None,
    ci: float = 0.95,
    ci_method: str = "auto",
    bounds: tuple[float, float] | None = None,
) -> pd.DataFrame:
    """Per round, the mean of ``value`` with its n, available-only and last-value-carried-forward.

    ``df`` has one row per item and round (e.g. :func:`item_rounds`, or :func:`component_table`
    with ``value="value", by="component"``). *available*: the items that reached the round and
    have a value. *locf*: every item, an item that stopped earlier (or whose value failed to
    parse) carrying its last observed value forward. Comparing them shows survivor bias.

    Returns ``[by...], method, round, n_items, n, n_reached, n_carried, n_missing, mean, sd``
    (ddof=1), ``ci_low, ci_high, ci_method, note``. CIs are Wilson for 0/1 values, else t;
    ``bounds`` (e.g. ``(0, 1)`` for normalised scores) clips t-intervals to the possible range.
    """
    _need(df, [item, round, value])
    for m in methods:
        if m not in ("available", "locf"):
            raise ParameterError(f"method must be 'available' or 'locf', not {m!r}")
    bys = [by] if isinstance(by, str) else list(by or [])
    groups = [((), df)] if not bys else list(df.groupby(bys, sort=True))
    rows = []
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        vals = pd.to_numeric(g[value], errors="coerce").astype(float)
        w = pd.DataFrame({"item": g[item].astype(str), "round": g[round].astype("int64"), "v": vals})
        wide = w.pivot_table(index="item", columns="round", values="v", aggfunc="first", dropna=False)
        present = w.assign(p=1.0).pivot_table(index="item", columns="round", values="p", aggfunc="first")
        rmax = int(max_round or w["round"].max())
        cols = list(range(int(w["round"].min()), rmax + 1))
        wide = wide.reindex(columns=cols)
        present = present.reindex(index=wide.index, columns=cols).notna()
        filled = wide.ffill(axis=1)
        for m in methods:
            for r in cols:
                obs = wide[r]
                x = (obs if m == "available" else filled[r]).dropna().to_numpy(float)
                carried = int((obs.isna() & filled[r].notna()).sum()) if m == "locf" else 0
                n_reached = int(present[r].sum())
                lo, hi, cim, note = _mean_ci(x, ci, ci_method) if len(x) else (np.nan, np.nan, "", "no values")
                if bounds is not None and not np.isnan(lo) and (lo < bounds[0] or hi > bounds[1]):
                    lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
                    note = "; ".join(filter(None, [note, f"CI clipped to {tuple(bounds)}"]))
                row = dict(zip(bys, key))
                row.update({
                    "method": m, "round": r, "n_items": int(len(wide)), "n": int(len(x)),
                    "n_reached": n_reached, "n_carried": carried,
                    "n_missing": int(len(wide) - len(x)) if m == "locf" else int(n_reached - len(x)),
                    "mean": float(x.mean()) if len(x) else np.nan,
                    "sd": float(x.std(ddof=1)) if len(x) > 1 else np.nan,
                    "ci_low": lo, "ci_high": hi, "ci_method": cim, "note": note,
                })
                rows.append(row)
    return pd.DataFrame(rows)


def stop_best_distribution(
    rounds_df: pd.DataFrame, *, by: str | None = None, tie_break: str = "earliest"
) -> pd.DataFrame:
    """Distribution of stop rounds and best rounds: ``[by], kind, round, n, n_items, share,
    ci_low, ci_high`` (Wilson 95 %). Stop = the ``stop`` flag (else the last round); best = the
    ``best`` flag (else re-selected with ``tie_break``); items without a best round are counted
    in ``n_missing``."""
    summ = item_summary(rounds_df, tie_break=tie_break)
    if by is not None and by not in summ.columns:
        raise ParameterError(f"column {by!r} is not in the rounds table")
    groups = [(None, summ)] if by is None else list(summ.groupby(by, sort=True))
    rows = []
    rmax = int(summ["n_rounds"].max()) if len(summ) else 0
    rmax = max(rmax, int(summ["stop_round"].max()) if len(summ) else 0)
    for key, g in groups:
        for kind, col in (("stop_round", "stop_round"), ("best_round", "best_round")):
            s = g[col].dropna().astype(int)
            n_items = len(g)
            for r in range(1, rmax + 1):
                k = int((s == r).sum())
                lo, hi = _wilson(k, len(s))
                row = {"kind": kind, "round": r, "n": k, "n_items": n_items, "n_missing": int(n_items - len(s)),
                       "share": k / len(s) if len(s) else np.nan, "ci_low": lo, "ci_high": hi, "method": "Wilson 95%"}
                if by is not None:
                    row = {by: key, **row}
                rows.append(row)
    return pd.DataFrame(rows)


def paired_round_tests(
    df: pd.DataFrame,
    value: str = "total",
    *,
    pairs: str | Sequence[tuple[int, int]] = "consecutive",
    item: str = "item",
    round: str = "round",  # noqa: A002
    by: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> pd.DataFrame:
    """Paired round-to-round comparisons on the items observed in both rounds.

    ``pairs``: ``"consecutive"`` (1→2, 2→3, ...), ``"from_first"`` (1→2, 1→3, ...) or a list
    of ``(round_a, round_b)``. Per pair: ``n_pairs``, ``mean_a``, ``mean_b``, ``mean_delta``
    (b − a), ``median_delta``, a percentile-bootstrap CI of the mean Δ over items (``n_boot``
    resamples, ``seed``), and the Wilcoxon signed-rank test (scipy, zero differences dropped:
    ``zero_method="wilcox"``; ``n_zero`` counts them). Undefined tests are NaN with a ``note``.
    """
    from scipy.stats import wilcoxon

    _need(df, [item, round, value])
    groups = [(None, df)] if by is None else list(df.groupby(by, sort=True))
    rng = np.random.default_rng(seed)
    rows = []
    for key, g in groups:
        w = pd.DataFrame({"item": g[item].astype(str), "round": g[round].astype("int64"),
                          "v": pd.to_numeric(g[value], errors="coerce").astype(float)})
        wide = w.pivot_table(index="item", columns="round", values="v", aggfunc="first")
        rs = sorted(wide.columns)
        if isinstance(pairs, str):
            if pairs == "consecutive":
                plist = list(zip(rs[:-1], rs[1:]))
            elif pairs == "from_first":
                plist = [(rs[0], r) for r in rs[1:]]
            else:
                raise ParameterError(f"pairs must be 'consecutive', 'from_first' or a list, not {pairs!r}")
        else:
            plist = [tuple(p) for p in pairs]
        for a, b in plist:
            row = {"round_a": int(a), "round_b": int(b)}
            if by is not None:
                row = {by: key, **row}
            if a not in wide.columns or b not in wide.columns:
                rows.append({**row, "n_pairs": 0, "note": "round not observed"})
                continue
            both = wide[[a, b]].dropna()
            d = (both[b] - both[a]).to_numpy(float)
            n = len(d)
            row.update({"n_pairs": n, "mean_a": both[a].mean() if n else np.nan,
                        "mean_b": both[b].mean() if n else np.nan,
                        "mean_delta": d.mean() if n else np.nan,
                        "median_delta": float(np.median(d)) if n else np.nan,
                        "n_zero": int(np.sum(np.isclose(d, 0, atol=1e-12))) if n else 0})
            notes = []
            if n >= 2:
                idx = rng.integers(0, n, size=(int(n_boot), n))
                boot = d[idx].mean(axis=1)
                row["ci_low"], row["ci_high"] = (float(np.quantile(boot, (1 - ci) / 2)),
                                                 float(np.quantile(boot, 1 - (1 - ci) / 2)))
            else:
                row["ci_low"] = row["ci_high"] = np.nan
                notes.append("fewer than 2 pairs")
            nz = d[~np.isclose(d, 0, atol=1e-12)] if n else d
            if len(nz) >= 1:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        res = wilcoxon(d, zero_method="wilcox")
                        row["wilcoxon_stat"], row["p_value"] = float(res.statistic), float(res.pvalue)
                    except ValueError as exc:
                        row["wilcoxon_stat"] = row["p_value"] = np.nan
                        notes.append(f"wilcoxon undefined: {exc}")
            else:
                row["wilcoxon_stat"] = row["p_value"] = np.nan
                if n:
                    notes.append("all differences are zero")
            row["method"] = f"Wilcoxon signed-rank; percentile bootstrap of mean delta ({int(n_boot)} resamples)"
            row["note"] = "; ".join(notes)
            rows.append(row)
    return pd.DataFrame(rows)


def mixed_model(
    df: pd.DataFrame,
    value: str = "total",
    *,
    item: str = "item",
    round: str = "round",  # noqa: A002
    by: str | None = None,
    ci: float = 0.95,
) -> pd.DataFrame:
    """Fit ``value ~ round + (1 | item)`` with statsmodels MixedLM (REML) on the available rows.

    Returns one row per term (``Intercept``, ``round``, ``item_var``): ``estimate, se, z,
    p_value, ci_low, ci_high, n_obs, n_items, converged, method, note``; with ``by``, one fit
    per group (the group in the first column). Too little data or a singular fit gives NaN with
    a ``note`` rather than an exception. Likelihood-based, it stays unbiased when drop-out
    depends only on the observed scores (the stopping rule), unlike available-only means.
    """
    import statsmodels.formula.api as smf

    _need(df, [item, round, value])
    if by is not None:
        parts = []
        for key, g in df.groupby(by, sort=True):
            part = mixed_model(g, value, item=item, round=round, ci=ci)
            part.insert(0, by, key)
            parts.append(part)
        return pd.concat(parts, ignore_index=True)
    d = pd.DataFrame({"y": pd.to_numeric(df[value], errors="coerce").astype(float),
                      "rnd": df[round].astype(float), "g": df[item].astype(str)}).dropna()
    n_obs, n_items = len(d), d["g"].nunique()
    base = {"n_obs": n_obs, "n_items": n_items, "method": "statsmodels MixedLM, REML, random intercept per item"}
    terms = ("Intercept", "round", "item_var")

    def empty(note: str) -> pd.DataFrame:
        return pd.DataFrame([{"term": t, "estimate": np.nan, "se": np.nan, "z": np.nan, "p_value": np.nan,
                              "ci_low": np.nan, "ci_high": np.nan, **base, "converged": False, "note": note}
                             for t in terms])

    if n_items < 2 or d["rnd"].nunique() < 2:
        return empty("needs at least 2 items and 2 distinct rounds")
    if d["y"].std() == 0:
        return empty("the outcome is constant")
    if int((d.groupby("g").size() >= 2).sum()) < 2:
        return empty("needs at least 2 items observed in 2 or more rounds")
    notes = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit = smf.mixedlm("y ~ rnd", d, groups=d["g"]).fit(reml=True)
        except (np.linalg.LinAlgError, ValueError) as exc:
            return empty(f"fit failed: {exc}")
    item_var = float(fit.cov_re.iloc[0, 0])
    for w in caught:
        msg = str(w.message).split("\n")[0]
        if "boundary" in msg and item_var > 1e-8 * float(d["y"].var()):
            continue  # an intermediate step touched the boundary; the final estimate is interior
        if msg not in notes:
            notes.append(msg)
    ci_tab = fit.conf_int(alpha=1 - ci)
    rows = []
    for t, name in (("Intercept", "Intercept"), ("round", "rnd")):
        rows.append({"term": t, "estimate": float(fit.fe_params[name]), "se": float(fit.bse_fe[name]),
                     "z": float(fit.tvalues[name]), "p_value": float(fit.pvalues[name]),
                     "ci_low": float(ci_tab.loc[name, 0]), "ci_high": float(ci_tab.loc[name, 1])})
    rows.append({"term": "item_var", "estimate": float(fit.cov_re.iloc[0, 0]), "se": np.nan, "z": np.nan,
                 "p_value": np.nan, "ci_low": np.nan, "ci_high": np.nan})
    out = pd.DataFrame(rows)
    se = out["se"].iloc[:2].to_numpy(float)
    if not np.all(np.isfinite(se)) or np.any(se > 100 * float(d["y"].std())):
        out.loc[:, ["se", "z", "p_value", "ci_low", "ci_high"]] = np.nan
        notes.append("singular fit: standard errors unusable, inference set to NaN")
    for k, v in base.items():
        out[k] = v
    out["converged"] = bool(fit.converged)
    out["note"] = "; ".join(notes)
    return out


def round_correlations(
    df: pd.DataFrame,
    x: str = "round",
    y: str = "question_length",
    *,
    level: str = "item",
    item: str = "item",
) -> pd.DataFrame:
    """Pearson, Spearman and Kendall correlation of ``x`` with ``y``, each with its n and p.

    ``level="item"``: one point per row (item-rounds are not independent: p-values are
    optimistic). ``level="aggregated"``: one point per distinct ``x`` (the mean of ``y``), as
    MCQG-SRefine's Table 8 appears to have done; n is then the number of distinct x values.
    """
    from scipy.stats import kendalltau, pearsonr, spearmanr

    _need(df, [x, y])
    if level not in ("item", "aggregated"):
        raise ParameterError(f"level must be 'item' or 'aggregated', not {level!r}")
    d = pd.DataFrame({"x": pd.to_numeric(df[x], errors="coerce").astype(float),
                      "y": pd.to_numeric(df[y], errors="coerce").astype(float)}).dropna()
    n_dropped = int(len(df) - len(d))
    if level == "aggregated":
        d = d.groupby("x", as_index=False)["y"].mean()
    rows = []
    for name, fn in (("pearson", pearsonr), ("spearman", spearmanr), ("kendall", kendalltau)):
        row = {"x": x, "y": y, "level": level, "method": name, "n": len(d), "n_dropped": n_dropped}
        if len(d) < 3 or d["x"].nunique() < 2 or d["y"].nunique() < 2:
            rows.append({**row, "estimate": np.nan, "p_value": np.nan,
                         "note": "needs at least 3 points and variation in both variables"})
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fn(d["x"], d["y"])
        rows.append({**row, "estimate": float(res[0]), "p_value": float(res[1]),
                     "note": "item-rounds are not independent" if level == "item" and x == "round" else ""})
    return pd.DataFrame(rows)


def load_summary(rounds_df: pd.DataFrame) -> pd.DataFrame:
    """Denominators per source: items, rounds, component rows, parse failures (never dropped)."""
    df = rounds_df if "source" in rounds_df.columns else rounds_df.assign(source="all")
    comp = df[df["aspect"] == "total"]
    rows = []
    for src, g in comp.groupby("source", sort=True):
        failed = g["parse_status"].eq("failed") if "parse_status" in g.columns else g["score"].isna()
        rows.append({
            "source": src,
            "n_items": int(g["item"].nunique()),
            "n_item_rounds": int(g[["item", "round"]].drop_duplicates().shape[0]),
            "max_round": int(g["round"].max()),
            "n_component_rows": int(len(g)),
            "n_failed": int(failed.sum()),
            "failed_raw": "; ".join(map(repr, g.loc[failed, "raw_score"].astype(str).tolist()))
            if "raw_score" in g.columns else "",
            "n_self_answer_known": int(g.drop_duplicates(["item", "round"])["self_answer_correct"].notna().sum())
            if "self_answer_correct" in g.columns else 0,
        })
    return pd.DataFrame(rows)


def aspect_sum_check(rounds_df: pd.DataFrame, *, total_aspect: str = "total") -> pd.DataFrame:
    """Compare each component total with the sum of its aspect rows (needs aspect-level rows).

    One row per item, round and component with aspect rows: ``total``, ``total_max``,
    ``aspect_sum``, ``aspect_max_sum``, ``n_aspects``, ``n_aspects_failed`` and ``status``:
    ``match`` (points and maxima agree), ``sum_differs``, ``max_differs``, ``unparsed``
    (the total or an aspect did not parse).
    """
    _need(rounds_df, ["item", "round", "component", "aspect", "score"])
    df = rounds_df.assign(item=rounds_df["item"].astype(str))
    tot = df[df["aspect"] == total_aspect].set_index(["item", "round", "component"])
    asp = df[df["aspect"] != total_aspect]
    if asp.empty:
        return pd.DataFrame(columns=["item", "round", "component", "total", "total_max", "aspect_sum",
                                     "aspect_max_sum", "n_aspects", "n_aspects_failed", "status"])
    g = asp.groupby(["item", "round", "component"])
    out = pd.DataFrame({
        "aspect_sum": g["score"].sum(min_count=1),
        "aspect_max_sum": g["max_score"].sum(min_count=1),
        "n_aspects": g.size(),
        "n_aspects_failed": g["score"].apply(lambda s: int(s.isna().sum())),
    })
    out = out.join(tot[["score", "max_score"]].rename(columns={"score": "total", "max_score": "total_max"}), how="left")
    status = np.where(out["total"].isna() | (out["n_aspects_failed"] > 0), "unparsed",
                      np.where(~np.isclose(out["total"], out["aspect_sum"]), "sum_differs",
                               np.where(~np.isclose(out["total_max"], out["aspect_max_sum"]), "max_differs", "match")))
    out["status"] = status
    return out.reset_index()[["item", "round", "component", "total", "total_max", "aspect_sum", "aspect_max_sum",
                              "n_aspects", "n_aspects_failed", "status"]]


def load_rounds_file(path: str | Path | None) -> pd.DataFrame | None:
    """Read an extra rounds table (CSV/Parquet/JSONL) and validate it; ``""``/None -> None."""
    if path is None or str(path).strip() == "":
        return None
    from medeval_kit.datasets._io import read_table
    from medeval_kit.schemas import validate

    df = read_table(path)
    for col in ("stop", "best"):
        if col in df.columns and df[col].dtype != bool:
            mapped = df[col].map({True: True, False: False, "True": True, "False": False,
                                  "true": True, "false": False, 1: True, 0: False})
            if mapped.isna().any():
                raise DataFileError(f"{path}: column {col!r} holds values that are not booleans")
            df[col] = mapped.astype(bool)
    if "item" in df.columns:
        df["item"] = df["item"].astype(str)
    if "score" in df.columns:
        df["score"] = pd.to_numeric(df["score"], errors="coerce").astype(float)
    if "max_score" in df.columns:
        df["max_score"] = pd.to_numeric(df["max_score"], errors="coerce").astype(float)
    validate(df, "rounds", source=str(path))
    return df


# ---------------------------------------------------------------------------------------------
# Curves
# ---------------------------------------------------------------------------------------------


def component_mean_total(component_means: Mapping[str, float], *, weights: Mapping[str, float] | None = None) -> float:
    """Return the total as the (weighted) mean of component means.

    Unweighted (the paper's Total): Table 4 round 1 gives
    ``mean(0.9683, 0.8394, 0.8051, 0.9378, 0.9650) = 0.90312`` -> printed 0.9031.
    With ``weights=ASPECTS_PER_COMPONENT`` it is the points-weighted total (≈ 0.912 there).
    """
    keys = list(component_means)
    v = np.array([float(component_means[k]) for k in keys])
    w = np.ones(len(keys)) if weights is None else np.array([float(weights[k]) for k in keys])
    return float((v * w).sum() / w.sum())


def introspection_curve(t: Any, a: float, b: float, c: float, power: int = 3) -> np.ndarray:
    """Saturation curve f(t) = a / (1 + exp(-b t - c))**power (AutoMedEval App. F's form; a fraction).

    >>> round(float(introspection_curve(6, a=0.5274, b=0.453, c=2.83)) * 100, 2)
    52.13
    """
    t = np.asarray(t, dtype=float)
    return a / (1.0 + np.exp(-b * t - c)) ** power


@dataclass(frozen=True)
class CurveFit:
    """Least-squares fit of :func:`introspection_curve`; ``params`` are a, b, c; ``start`` the values
    the fit started from (the fixed parameters keep them)."""

    params: dict
    free: tuple
    n_points: int
    rss: float
    converged: bool
    note: str = ""
    t: tuple = field(default=())
    y: tuple = field(default=())
    start: dict = field(default_factory=dict)
    power: int = 3

    @property
    def dof(self) -> int:
        return self.n_points - len(self.free)

    def predict(self, t: Any) -> np.ndarray:
        return introspection_curve(t, self.params["a"], self.params["b"], self.params["c"], self.power)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([
            {"param": k, "estimate": v, "free": k in self.free, "start": self.start.get(k, np.nan),
             "n_points": self.n_points, "dof": self.dof, "rss": self.rss, "converged": self.converged,
             "method": "scipy.optimize.least_squares", "note": self.note}
            for k, v in self.params.items()
        ])

    def summary(self) -> str:
        p = ", ".join(f"{k}={v:.4g}" for k, v in self.params.items())
        return f"f(t)=a/(1+e^(-bt-c))^{self.power} fit on {self.n_points} points ({p}; free {self.free}, dof {self.dof}, rss {self.rss:.3g})"


def fit_introspection_curve(
    t: Sequence[float],
    y: Sequence[float],
    *,
    p0: Mapping[str, float],
    free: Sequence[str] = ("a", "b", "c"),
    power: int = 3,
) -> CurveFit:
    """Fit the free parameters of f(t) to (t, y) (y as fractions), starting from ``p0`` (a, b, c);
    the parameters not in ``free`` stay at ``p0``. Three free parameters on three points
    interpolate (dof 0, no uncertainty)."""
    from scipy.optimize import least_squares

    t_arr, y_arr = np.asarray(t, float), np.asarray(y, float)
    missing = [k for k in ("a", "b", "c") if k not in p0]
    if missing:
        raise ParameterError(f"p0 needs start values for a, b and c; missing {missing}")
    start = {k: float(p0[k]) for k in ("a", "b", "c")}
    free = tuple(free)
    for k in free:
        if k not in ("a", "b", "c"):
            raise ParameterError(f"free parameters must be among a, b, c; not {k!r}")

    def resid(theta):
        p = dict(start)
        p.update(zip(free, theta))
        return introspection_curve(t_arr, p["a"], p["b"], p["c"], power) - y_arr

    res = least_squares(resid, [start[k] for k in free], method="lm" if len(free) <= len(t_arr) else "trf",
                        xtol=1e-14, ftol=1e-14, gtol=1e-14, max_nfev=20000)
    params = dict(start)
    params.update(zip(free, map(float, res.x)))
    note = "interpolation: as many free parameters as points" if len(free) >= len(t_arr) else ""
    return CurveFit(params=params, free=free, n_points=len(t_arr), rss=float(np.sum(res.fun ** 2)),
                    converged=bool(res.success), note=note, t=tuple(t_arr), y=tuple(y_arr), start=start,
                    power=power)


def roundwise_tables(rounds_df: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0,
                     by: str | None = None) -> dict[str, pd.DataFrame]:
    """Run the whole round-wise analysis on one rounds table; return the tables by name.

    Keys: ``load_summary``, ``round_means`` (total, available vs LOCF), ``component_trajectories``,
    ``stop_best``, ``paired_tests``, ``mixed_model``, ``stopping_rule_consistency`` and, when the
    table has them, ``question_length`` / ``length_correlations`` / ``self_answer``.
    """
    per = item_rounds(rounds_df)
    comp = component_table(rounds_df)
    comp_by = ["component"] if by is None else [by, "component"]
    out = {
        "load_summary": load_summary(rounds_df),
        "round_means": round_means(per, "total", by=by, bounds=(0, 1)),
        "component_trajectories": round_means(comp, "value", by=comp_by if by in comp.columns or by is None else "component",
                                              bounds=(0, 1)),
        "stop_best": stop_best_distribution(rounds_df, by=by),
        "paired_tests": paired_round_tests(per, "total", by=by, n_boot=n_boot, seed=seed),
        "mixed_model": mixed_model(per, "total"),
        "stopping_rule_consistency": stopping_rule_consistency(rounds_df, by=by),
    }
    if "question_length" in per.columns:
        out["question_length"] = round_means(per, "question_length", by=by)
        out["length_correlations"] = pd.concat(
            [round_correlations(per, "round", "question_length", level=lvl) for lvl in ("item", "aggregated")],
            ignore_index=True)
    if "self_answer_correct" in per.columns:
        out["self_answer"] = round_means(per, "self_answer_correct", by=by)
    return out


STOPPING_RULE_NOTE = (
    "MCQG-SRefine contradicts itself on the stopping rule: the paper (App. A) stops when the TOTAL score "
    "exceeds 90 % of the maximum; the released code (run.py check_stop) stops only when EVERY component "
    "is >= 0.9. The bundled traces are checked against both below."
)


# ---------------------------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------------------------


def plot_round_means(means: pd.DataFrame, *, ax=None, title: str | None = None, ylabel: str = "mean total score"):
    """Plot :func:`round_means` output: available-only vs LOCF means with CIs and n per round."""
    from medeval_kit.viz import figure

    if ax is None:
        fig, ax = figure("single")
    else:
        fig = ax.figure
    styles = {"available": ("o", "-", "available-only"), "locf": ("s", "--", "last value carried forward")}
    offset = {"available": -0.06, "locf": 0.06}
    for i, (m, g) in enumerate(means.groupby("method", sort=False)):
        g = g.sort_values("round")
        mk, ls, lab = styles.get(m, ("o", "-", m))
        x = g["round"].to_numpy(float) + offset.get(m, 0)
        yerr = np.vstack([g["mean"] - g["ci_low"], g["ci_high"] - g["mean"]])
        yerr = np.where(np.isnan(yerr), 0, yerr)
        ax.errorbar(x, g["mean"], yerr=yerr, marker=mk, ls=ls, capsize=2, label=lab, color=f"C{i}")
        for xi, yi, n in zip(x, g["mean"], g["n"]):
            if pd.notna(yi):
                ax.annotate(f"n={n}", (xi, yi), textcoords="offset points",
                            xytext=(-5, 5) if m == "available" else (5, -8),
                            ha="right" if m == "available" else "left", fontsize=6, color=f"C{i}")
    ax.set_xticks(sorted(means["round"].unique()))
    ax.set_xlabel("round (1 = initial draft)")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(frameon=False)
    return fig


def plot_component_trajectories(traj: pd.DataFrame, *, method: str = "available", ax=None, title: str | None = None):
    """Plot per-component round means (output of :func:`round_means` with ``by="component"``)."""
    from medeval_kit.viz import figure

    if ax is None:
        fig, ax = figure("single")
    else:
        fig = ax.figure
    d = traj[traj["method"] == method]
    for i, (comp, g) in enumerate(d.groupby("component", sort=True)):
        g = g.sort_values("round")
        ax.plot(g["round"], g["mean"], marker="o", label=comp, color=f"C{i}")
        ax.fill_between(g["round"], g["ci_low"], g["ci_high"], alpha=0.15, color=f"C{i}", lw=0)
    ax.set_xticks(sorted(d["round"].unique()))
    ax.set_xlabel("round (1 = initial draft)")
    ax.set_ylabel(f"mean normalised score ({method})")
    if title:
        ax.set_title(title)
    ax.legend(frameon=False, ncol=2)
    return fig


def plot_stop_best(dist: pd.DataFrame, *, ax=None, title: str | None = None):
    """Grouped bars of the stop-round and best-round shares (output of :func:`stop_best_distribution`)."""
    from medeval_kit.viz import figure

    if ax is None:
        fig, ax = figure("single")
    else:
        fig = ax.figure
    width = 0.38
    for i, (kind, g) in enumerate(dist.groupby("kind", sort=False)):
        g = g.groupby("round", as_index=False).agg(n=("n", "sum"), n_items=("n_items", "sum"),
                                                    n_missing=("n_missing", "sum"))
        denom = (g["n_items"] - g["n_missing"]).replace(0, np.nan)
        share = g["n"] / denom
        x = g["round"].to_numpy(float) + (i - 0.5) * width
        ax.bar(x, share, width=width, label=kind.replace("_", " "), color=f"C{i}")
        for xi, si, n in zip(x, share, g["n"]):
            if pd.notna(si):
                ax.annotate(str(n), (xi, si), textcoords="offset points", xytext=(0, 2), ha="center", fontsize=6)
    ax.set_xticks(sorted(dist["round"].unique()))
    ax.set_xlabel("round")
    ax.set_ylabel("share of items")
    if title:
        ax.set_title(title)
    ax.legend(frameon=False)
    return fig


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def register_cli(subparsers) -> None:
    """Add ``medeval rounds FILE`` (a rounds CSV/Parquet, or ``medqg:top10|iter_feedback|icl_qgqa|all``)."""
    p = subparsers.add_parser("rounds", help="round-wise summary of an iterative-refinement rounds table",
                              description="Per-round means (available-only and LOCF), stop/best rounds and "
                                          "stopping-rule consistency of a rounds table.")
    p.add_argument("file", help="rounds table (.csv/.parquet/.jsonl) or medqg:SOURCE for the bundled traces")
    p.add_argument("--rule", choices=STOP_RULES, default=None,
                   help="re-derive stop/best flags with this stopping rule before summarising")
    p.add_argument("--threshold", type=float, default=0.9)
    p.add_argument("--max-rounds", type=int, default=4)
    p.add_argument("--tie-break", choices=TIE_BREAKS, default="earliest")
    p.set_defaults(func=_cli_rounds)


def _cli_rounds(args) -> int:
    if str(args.file).startswith("medqg:"):
        from medeval_kit.datasets.medqg_rounds import load_medqg_rounds

        df = load_medqg_rounds(args.file.split(":", 1)[1])
    else:
        df = load_rounds_file(args.file)
    if args.rule:
        df = apply_stopping_rule(df, args.rule, args.threshold, max_rounds=args.max_rounds, tie_break=args.tie_break)
    ir = item_rounds(df)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(round_means(ir, "total")[["method", "round", "n", "n_items", "mean", "ci_low", "ci_high"]]
              .to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        print()
        d = stop_best_distribution(df, tie_break=args.tie_break)
        print(d[["kind", "round", "n", "n_items", "share"]].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print()
        print(stopping_rule_consistency(df, threshold=args.threshold, max_rounds=args.max_rounds)
              [["rule", "n_items", "n_consistent", "share"]].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    n_failed = int(ir["n_failed"].sum())
    print(f"\nitems: {ir['item'].nunique()}, item-rounds: {len(ir)}, component scores not parsed: {n_failed}")
    return 0
