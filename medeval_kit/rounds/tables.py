"""The rounds table reshaped: component rows, one row per item and round, file reading and denominators.

A component's normalised score is ``score / max_score`` (``max_score`` NA means the score is
already on 0-1). The item's **total** in a round is the unweighted mean of its normalised
component scores; ``total_points`` (summed points over summed maxima) is the aspect-count-weighted
alternative.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import DataFileError, ParameterError

__all__ = ["component_table", "item_rounds", "load_summary", "aspect_sum_check", "component_mean_total"]

_EXTRA = ("source", "question_length", "note_length", "self_answer_correct", "answer_equals_keypoint", "best_method")
_BOOL_EXTRA = ("self_answer_correct", "answer_equals_keypoint")
_BOOL_TEXT = {True: True, False: False, "True": True, "False": False, "true": True, "false": False}  # 1/0 equal True/False
_CHECK_COLUMNS = ["item", "round", "component", "total", "total_max", "aspect_sum", "aspect_max_sum", "n_aspects",
                  "n_aspects_failed", "status"]


def need_columns(df: pd.DataFrame, cols: Iterable[str]) -> None:
    """Raise ParameterError unless ``df`` is a DataFrame holding every column in ``cols``."""
    if not isinstance(df, pd.DataFrame):
        raise ParameterError(f"expected a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ParameterError(f"missing column(s) {missing}; present: {list(df.columns)}")


@shared_docs
@takes_columns("item", "round", "component", "aspect", "score", "max_score")
def component_table(
    rounds_df: pd.DataFrame,
    *,
    total_aspect: str = "total",
    columns: Columns = None,
) -> pd.DataFrame:
    """Return the component-level rows as ``item, round, component, score, max_score, value``.

    ``value`` is the normalised score (``score / max_score``; ``score`` itself when ``max_score``
    is NA or absent).

    Parameters
    ----------
    rounds_df : DataFrame
        The ``rounds`` table (:mod:`medeval_kit.schemas`): ``item, round, component, aspect, score`` and
        optionally ``max_score`` and ``source``.
    total_aspect : str, default "total"
        The ``aspect`` value of a component's own score row.
    {columns}

    Returns
    -------
    DataFrame
        One row per item, round and component: ``item, round, component, score, max_score``, ``source``
        when present, and ``value``.

    Raises
    ------
    ParameterError
        A needed column is missing.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_rounds
    >>> list(component_table(synthetic_rounds(n_items=2, seed=0)).columns)
    ['item', 'round', 'component', 'score', 'max_score', 'value']
    """
    item, round, component, aspect, score, max_score = (  # noqa: A001 - the schema's column name
        "item", "round", "component", "aspect", "score", "max_score")
    need_columns(rounds_df, [item, round, component, aspect, score])
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


def _round_totals(comp: pd.DataFrame) -> pd.DataFrame:
    """Per item and round: total (NaN if a component failed), total_available, total_points, counts."""
    comp = comp.assign(failed=comp["value"].isna())
    out = comp.groupby(["item", "round"], sort=True).agg(
        total_available=("value", "mean"),
        n_components=("value", "size"),
        n_failed=("failed", "sum"),
        _pts=("score", "sum"),
        _mx=("max_score", "sum"),
        _mx_n=("max_score", "count"),
    ).reset_index()
    out["_mx"] = out["_mx"].where(out["_mx_n"] == out["n_components"])
    out["total"] = out["total_available"].where(out["n_failed"] == 0)
    out["total_points"] = (out["_pts"] / out["_mx"]).where((out["n_failed"] == 0) & out["_mx"].notna())
    out["n_failed"] = out["n_failed"].astype("int64")
    return out.drop(columns=["_pts", "_mx", "_mx_n"])


def _round_flags(rounds_df: pd.DataFrame, item: str, round: str) -> pd.DataFrame:  # noqa: A002
    """Per item and round: the ``stop``/``best`` flags (any row) and the first value of each extra column."""
    src = rounds_df.rename(columns={item: "item", round: "round"})
    src = src.assign(item=src["item"].astype(str), round=src["round"].astype("int64"))
    g = src.groupby(["item", "round"], sort=True)
    flags = g.agg(
        stop=("stop", "any") if "stop" in src.columns else ("round", lambda s: False),
        best=("best", "any") if "best" in src.columns else ("round", lambda s: False),
    )
    extras = [c for c in _EXTRA if c in src.columns]
    if extras:
        flags = flags.join(g[extras].first())
    out = flags.reset_index()
    for c in _BOOL_EXTRA:
        if c in out.columns:
            out[c] = pd.to_numeric(out[c].astype("boolean").astype("Float64"), errors="coerce").astype(float)
    return out


@shared_docs
@takes_columns("item", "round", "component", "aspect", "score", "max_score", "stop", "best")
def item_rounds(rounds_df: pd.DataFrame, *, columns: Columns = None) -> pd.DataFrame:
    """Return one row per item and round: the item's total and flags in that round.

    Parameters
    ----------
    rounds_df : DataFrame
        The ``rounds`` table (see :func:`component_table`), optionally with ``stop`` and ``best``.
    {columns}

    Returns
    -------
    DataFrame
        ``item, round``, ``total_available`` (mean of the parsed normalised components),
        ``n_components``, ``n_failed``, ``total`` (their mean; NaN when any component failed to parse),
        ``total_points``, ``stop``, ``best``, ``last_round`` (the trace ends here), and the extra
        columns ``source``, ``question_length``, ``note_length``, ``self_answer_correct`` and
        ``answer_equals_keypoint`` (as 1.0/0.0/NaN) when the input has them.

    Raises
    ------
    ParameterError
        The table has no component-level rows.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_rounds
    >>> item_rounds(synthetic_rounds(n_items=3, seed=0))[["item", "round"]].drop_duplicates("item").shape
    (3, 2)
    """
    item, round = "item", "round"  # noqa: A001 - the schema's column name
    comp = component_table(rounds_df)
    if comp.empty:
        raise ParameterError("the rounds table has no component-level rows (aspect == 'total')")
    out = _round_totals(comp)[["item", "round", "total_available", "n_components", "n_failed", "total",
                               "total_points"]]
    out = out.merge(_round_flags(rounds_df, item, round), on=["item", "round"], how="left")
    out["stop"] = out["stop"].fillna(False).astype(bool)
    out["best"] = out["best"].fillna(False).astype(bool)
    out["last_round"] = out["round"] == out.groupby("item")["round"].transform("max")
    return out


@shared_docs
@takes_columns("item", "round", "aspect", "score", "parse_status")
def load_summary(rounds_df: pd.DataFrame, *, columns: Columns = None) -> pd.DataFrame:
    """Denominators per source: items, rounds, component rows, parse failures (never dropped).

    Parameters
    ----------
    rounds_df : DataFrame
        The ``rounds`` table; a ``source`` column splits it (else one source, ``all``).
    {columns}

    Returns
    -------
    DataFrame
        One row per source: ``source, n_items, n_item_rounds, max_round, n_component_rows``, ``n_failed``
        (component scores that did not parse), ``failed_raw`` (their raw text when recorded),
        ``n_self_answer_known`` and ``n_aspects_failed`` (aspect scores; 0 without aspect rows).
    """
    df = rounds_df if "source" in rounds_df.columns else rounds_df.assign(source="all")
    is_comp = df["aspect"] == "total"
    rows = []
    for src, comp in df[is_comp].groupby("source", sort=True):
        asp = df[~is_comp & (df["source"] == src)]
        rows.append({
            "source": src,
            "n_items": int(comp["item"].nunique()),
            "n_item_rounds": int(comp[["item", "round"]].drop_duplicates().shape[0]),
            "max_round": int(comp["round"].max()),
            "n_component_rows": int(len(comp)),
            "n_failed": int(_failed(comp).sum()),
            "failed_raw": "; ".join(map(repr, comp.loc[_failed(comp), "raw_score"].astype(str).tolist()))
            if "raw_score" in comp.columns else "",
            "n_self_answer_known": int(comp.drop_duplicates(["item", "round"])["self_answer_correct"].notna().sum())
            if "self_answer_correct" in comp.columns else 0,
            "n_aspects_failed": int(_failed(asp).sum()),
        })
    return pd.DataFrame(rows)


def _failed(rows: pd.DataFrame) -> pd.Series:
    """Rows whose score did not parse: ``parse_status == "failed"`` where recorded, else a NA score."""
    return rows["parse_status"].eq("failed") if "parse_status" in rows.columns else rows["score"].isna()


@shared_docs
@takes_columns("item", "round", "component", "aspect", "score", "max_score")
def aspect_sum_check(rounds_df: pd.DataFrame, *, total_aspect: str = "total", columns: Columns = None) -> pd.DataFrame:
    """Compare each component total with the sum of its aspect rows (needs aspect-level rows).

    Parameters
    ----------
    rounds_df : DataFrame
        The ``rounds`` table with aspect-level rows.
    total_aspect : str, default "total"
        The ``aspect`` value of a component's own score row.
    {columns}

    Returns
    -------
    DataFrame
        One row per item, round and component with aspect rows: ``total``, ``total_max``,
        ``aspect_sum``, ``aspect_max_sum``, ``n_aspects``, ``n_aspects_failed`` and ``status``:
        ``match`` (points and maxima agree), ``sum_differs``, ``max_differs``, ``unparsed`` (the total or
        an aspect did not parse). Empty when there are no aspect rows.
    """
    need_columns(rounds_df, ["item", "round", "component", "aspect", "score"])
    df = rounds_df.assign(item=rounds_df["item"].astype(str))
    tot = df[df["aspect"] == total_aspect].set_index(["item", "round", "component"])
    asp = df[df["aspect"] != total_aspect]
    if asp.empty:
        return pd.DataFrame(columns=_CHECK_COLUMNS)
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
    return out.reset_index()[_CHECK_COLUMNS]


def _load_rounds_file(path: str | Path | None) -> pd.DataFrame | None:
    """Read a rounds table already under the schema's names (CSV/Parquet/JSONL) and validate it; ``""``/None -> None.

    The low-level reader behind :func:`medeval_kit.rounds.read_rounds` (and the deprecated
    ``rounds.load_rounds_file``).
    """
    if path is None or str(path).strip() == "":
        return None
    from medeval_kit.datasets._io import read_table
    from medeval_kit.schemas import validate

    df = read_table(path)
    for col in ("stop", "best"):
        if col in df.columns and df[col].dtype != bool:
            mapped = df[col].map(_BOOL_TEXT)
            if mapped.isna().any():
                raise DataFileError(f"{path}: column {col!r} holds values that are not booleans")
            df[col] = mapped.astype(bool)
    if "item" in df.columns:
        df["item"] = df["item"].astype(str)
    for col in ("score", "max_score"):
        if col in df.columns:
            df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
    validate(df, "rounds", source=str(path))
    return df


def component_mean_total(component_means: Mapping[str, float], *, weights: Mapping[str, float] | None = None) -> float:
    """Return the total as the (weighted) mean of component means.

    Parameters
    ----------
    component_means : mapping of str to float
        The mean of each component.
    weights : mapping of str to float, optional
        A weight per component; with the aspects per component it is the points-weighted total.

    Returns
    -------
    float
        The (weighted) mean.

    Examples
    --------
    Unweighted (MCQG-SRefine's Total):

    >>> round(component_mean_total({"context": 0.9683, "question": 0.8394, "answer": 0.8051,
    ...                              "distractors": 0.9378, "explanation": 0.9650}), 5)
    0.90312
    """
    keys = list(component_means)
    v = np.array([float(component_means[k]) for k in keys])
    w = np.ones(len(keys)) if weights is None else np.array([float(weights[k]) for k in keys])
    return float((v * w).sum() / w.sum())
