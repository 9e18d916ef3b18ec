"""Your own rounds file as a ``rounds`` table: your column names mapped, the optional columns filled."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from medeval_kit.bias._common import legacy_columns
from medeval_kit.columns import Columns, apply_columns
from medeval_kit.datasets._io import read_table
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import SchemaError
from medeval_kit.rounds.stopping import fill_best_rounds
from medeval_kit.rounds.tables import _BOOL_TEXT
from medeval_kit.schemas import validate

__all__ = ["read_rounds"]

_ROLES = ("item", "round", "score", "component", "aspect", "max_score", "stop", "best")
_OPTIONAL = ("component", "aspect", "max_score", "stop", "best")


@shared_docs
def read_rounds(
    path: str | Path,
    *,
    tie_break: str = "earliest",
    columns: Columns = None,
    **legacy,
) -> pd.DataFrame:
    """Read your rounds file (CSV, TSV, JSONL or Parquet) as a validated ``rounds`` table.

    Needs an item, a round (1 = first draft) and a score column. Columns absent *under their canonical
    names* (and not mapped by ``columns``) are filled: ``component`` -> one component ``overall``;
    ``aspect`` -> every row is its component's score (``total``); ``max_score`` -> scores already on
    0-1 (NA); ``stop`` -> each trace stops at its last round; ``best`` -> the highest-total round
    (:func:`~medeval_kit.rounds.fill_best_rounds` with ``tie_break``, noted in ``best_method``). A
    column named in ``columns`` must exist. A score that is empty or not a number is NA: kept and
    counted as a parse failure, never dropped.

    Parameters
    ----------
    path : str or Path
        The file.
    tie_break : {"earliest", "latest"}, default "earliest"
        Which of tied rounds is best when the file flags none.
    {columns}
    **legacy
        The old per-column keywords (``item="case_id"``, ``round="iteration"`` ...), accepted for one
        release with a ``DeprecationWarning``; use ``columns``.

    Returns
    -------
    DataFrame
        The ``rounds`` table (:mod:`medeval_kit.schemas`), with your other columns kept.

    Raises
    ------
    SchemaError
        A needed or mapped column is missing, a round is not a whole number or a flag is not a boolean;
        the error names the file, your column and the rows.
    DataFileError
        The file cannot be read.

    Examples
    --------
    >>> import pandas as pd, tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "traces.csv"
    >>> pd.DataFrame({"case": ["a", "a", "b"], "step": [1, 2, 1], "quality": [0.5, 0.8, 0.9]}).to_csv(p, index=False)
    >>> r = read_rounds(p, columns={"item": "case", "round": "step", "score": "quality"})
    >>> r[r["best"]]["round"].tolist()
    [2, 1]
    """
    src = str(path)
    mapping = {k: v for k, v in (legacy_columns("read_rounds", columns, legacy, _ROLES) or {}).items()
               if k in _ROLES}
    df = read_table(path)
    yours = {t: mapping.get(t, t) for t in _ROLES}
    absent = [c for t, c in yours.items() if c not in df.columns and not (c == t and t in _OPTIONAL)]
    if absent:
        raise SchemaError("rounds", absent[0], [], f"column(s) {absent} not found; present: {list(df.columns)}. "
                          "Map your columns with columns={canonical: yours} (item, round, score; optionally "
                          "component, aspect, max_score, stop, best)", src)
    clash = {t: f"original_{t}" for t, c in yours.items() if c != t and t in df.columns}
    out = apply_columns(df.reset_index(drop=True).rename(columns=clash), mapping, _ROLES, where=src)
    rnd = pd.to_numeric(out["round"], errors="coerce")
    bad = rnd.isna() | (rnd % 1 != 0)
    if bad.any():
        raise SchemaError("rounds", yours["round"], [int(i) for i in np.flatnonzero(bad)],
                          "round must be a whole number", src)
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
                raise SchemaError("rounds", yours[t], [int(i) for i in np.flatnonzero(mapped.isna())],
                                  "holds values that are not booleans (true/false, 1/0)", src)
            out[t] = mapped.astype(bool)
    if "stop" not in out.columns:
        out["stop"] = out["round"] == out.groupby("item")["round"].transform("max")
    if "best" not in out.columns:
        out = fill_best_rounds(out, tie_break)
    validate(out, "rounds", source=src)
    return out
