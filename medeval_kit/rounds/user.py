"""The user's own rounds file as a ``rounds`` table: their column names, the optional columns filled."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from medeval_kit.datasets._io import read_table
from medeval_kit.errors import SchemaError
from medeval_kit.rounds.stopping import fill_best_rounds
from medeval_kit.rounds.tables import _BOOL_TEXT
from medeval_kit.schemas import validate

__all__ = ["user_rounds"]


def user_rounds(
    path: str | Path,
    *,
    item: str = "item",
    round: str = "round",  # noqa: A002 - the schema's column name
    score: str = "score",
    component: str = "component",
    aspect: str = "aspect",
    max_score: str = "max_score",
    stop: str = "stop",
    best: str = "best",
    tie_break: str = "earliest",
) -> pd.DataFrame:
    """The user's rounds file (CSV, TSV, JSONL or Parquet) as a validated ``rounds`` table.

    Needs an item, a round (1 = first draft) and a score column, named by the user. Columns absent
    *under their default names* are filled: ``component`` -> one component ``overall``; ``aspect`` ->
    every row is its component's score (``total``); ``max_score`` -> scores already on 0-1 (NA);
    ``stop`` -> each trace stops at its last round; ``best`` -> the highest-total round
    (:func:`~medeval_kit.rounds.fill_best_rounds` with ``tie_break``, noted in ``best_method``). A
    column named otherwise must exist. A score that is empty or not a number is NA: kept and counted
    as a parse failure, never dropped.
    """
    src = str(path)
    df = read_table(path)
    cols = {"item": item, "round": round, "score": score, "component": component, "aspect": aspect,
            "max_score": max_score, "stop": stop, "best": best}
    optional = ("component", "aspect", "max_score", "stop", "best")
    absent = [c for t, c in cols.items() if c not in df.columns and not (c == t and t in optional)]
    if absent:
        raise SchemaError("rounds", absent[0], [], f"column(s) {absent} not found; present: {list(df.columns)}. "
                          "Name your columns (item, round, score; optionally component, aspect, max_score, "
                          "stop, best)", src)
    mine = {c: t for t, c in cols.items() if c in df.columns}
    clash = {t: f"original_{t}" for t in cols if t in df.columns and t not in mine}
    out = df.reset_index(drop=True).rename(columns=clash).rename(columns=mine)
    rnd = pd.to_numeric(out["round"], errors="coerce")
    bad = rnd.isna() | (rnd % 1 != 0)
    if bad.any():
        raise SchemaError("rounds", round, [int(i) for i in np.flatnonzero(bad)], "round must be a whole number", src)
    out["item"] = out["item"].astype(str)
    out["round"] = rnd.astype("int64")
    out["component"] = out["component"].astype(str) if "component" in out.columns else "overall"
    out["aspect"] = out["aspect"].astype(str) if "aspect" in out.columns else "total"
    for col in ("score", "max_score"):
        out[col] = pd.to_numeric(out[col], errors="coerce").astype(float) if col in out.columns else np.nan
    for t in ("stop", "best"):
        if t in out.columns and out[t].dtype != bool:
            mapped = out[t].map(_BOOL_TEXT)
            if mapped.isna().any():
                raise SchemaError("rounds", cols[t], [int(i) for i in np.flatnonzero(mapped.isna())],
                                  "holds values that are not booleans (true/false, 1/0)", src)
            out[t] = mapped.astype(bool)
    if "stop" not in out.columns:
        out["stop"] = out["round"] == out.groupby("item")["round"].transform("max")
    if "best" not in out.columns:
        out = fill_best_rounds(out, tie_break)
    validate(out, "rounds", source=src)
    return out
