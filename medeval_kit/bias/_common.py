"""Shared by the bias modules: the column order of every bias result table, row positions for error
messages, and the two-sided bootstrap p-value."""

from __future__ import annotations

import numpy as np
import pandas as pd

from medeval_kit import results
from medeval_kit.pairwise._columns import user_column_error

__all__ = ["user_column_error", "legacy_columns", "bias_frame", "rows_of", "bootstrap_p", "KEYS",
           "RESULT_COLUMNS", "EXACT"]

KEYS = ("judge", "criterion", "metric")

#: the columns of a bias table: keys, the result contract, then the extras most tables carry
RESULT_COLUMNS = [*KEYS, *results.RESULT_COLUMNS, "n", "n_dropped", "p_value", "test", "unit"]

EXACT = "exact binomial (Clopper-Pearson)"


def rows_of(mask) -> list[int]:
    """The 0-based positions where ``mask`` is true (for :class:`SchemaError` row lists)."""
    return [int(i) for i in np.flatnonzero(np.asarray(mask, dtype=bool))]


def bias_frame(rows: list[dict]) -> pd.DataFrame:
    """The rows as a result table: keys first, the contract next, extras after."""
    return results.result_frame(rows, keys=KEYS)


def bootstrap_p(reps: np.ndarray) -> float:
    """Two-sided bootstrap p-value of "the statistic is 0": twice the smaller tail share at 0 (max 1)."""
    r = np.asarray(reps, dtype=float)
    r = r[~np.isnan(r)]
    return float(min(1.0, 2 * min((r <= 0).mean(), (r >= 0).mean()))) if r.size else float("nan")


def legacy_columns(fn: str, columns, legacy: dict, roles, *, stacklevel: int = 3) -> dict | None:
    """A reader's ``columns`` mapping merged with its old per-column keywords (deprecated, with a warning).

    ``legacy`` holds the keywords a caller passed beyond the signature; those not in ``roles`` are a
    ``TypeError`` as for any unknown keyword. ``None`` values (the old "no such column") are ignored.
    """
    import warnings

    unknown = sorted(set(legacy) - set(roles))
    if unknown:
        raise TypeError(f"{fn}() got unexpected keyword argument(s) {unknown}")
    renamed = {k: v for k, v in legacy.items() if v is not None and v != k}
    if renamed:
        warnings.warn(f"{fn}({', '.join(f'{k}={v!r}' for k, v in renamed.items())}) is deprecated; "
                      f"pass columns={renamed!r}", DeprecationWarning, stacklevel=stacklevel)
    merged = {**renamed, **dict(columns or {})}
    return merged or None

