"""The one result contract: every statistic is a row with these columns (extras allowed after them).

``estimate``  the value; NaN when undefined (then ``note`` says why)
``ci_low``, ``ci_high``, ``ci_method``  the interval and how it was made ("" when there is none)
``n_items``   the units the estimate used; ``n_failed`` the units dropped (parse failures, NA ...)
``note``      anything a reader must know, "" otherwise

Counts live in columns, never in ``DataFrame.attrs`` (which vanish on concat).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import pandas as pd

__all__ = ["RESULT_COLUMNS", "result_row", "result_frame", "check_result"]

RESULT_COLUMNS = ("estimate", "ci_low", "ci_high", "ci_method", "n_items", "n_failed", "note")
_DEFAULTS = {"estimate": math.nan, "ci_low": math.nan, "ci_high": math.nan, "ci_method": "", "n_failed": 0, "note": ""}


def result_row(estimate: float, ci: tuple[float, float] = (math.nan, math.nan), ci_method: str = "", *,
               n_items: int, n_failed: int = 0, note: str = "", **extra) -> dict:
    """Return one result row as a dict: ``extra`` keys (the grouping) first, then the contract columns."""
    return {**extra, "estimate": float(estimate), "ci_low": float(ci[0]), "ci_high": float(ci[1]),
            "ci_method": ci_method, "n_items": int(n_items), "n_failed": int(n_failed), "note": note}


def result_frame(rows: Iterable[Mapping], *, keys: Iterable[str] = ()) -> pd.DataFrame:
    """Return rows as a DataFrame with ``keys`` first, the contract columns next, extras last."""
    df = pd.DataFrame(list(rows))
    keys = [k for k in keys if k in df.columns]
    if df.empty:
        return pd.DataFrame(columns=[*keys, *RESULT_COLUMNS])
    rest = [c for c in df.columns if c not in keys and c not in RESULT_COLUMNS]
    if "n_items" not in df.columns:
        raise ValueError("result rows need n_items (the units the estimate used)")
    for c, default in _DEFAULTS.items():
        df[c] = df[c].fillna(default) if c in df.columns else default
    return df[[*keys, *RESULT_COLUMNS, *rest]]


def check_result(df: pd.DataFrame) -> list[str]:
    """Return the contract columns missing from ``df`` (empty when it fits the contract)."""
    return [c for c in RESULT_COLUMNS if c not in df.columns]
