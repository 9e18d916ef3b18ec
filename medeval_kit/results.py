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

__all__ = ["RESULT_COLUMNS", "Result", "result_row", "result_frame", "check_result"]

RESULT_COLUMNS = ("estimate", "ci_low", "ci_high", "ci_method", "n_items", "n_failed", "note")
_DEFAULTS = {"estimate": math.nan, "ci_low": math.nan, "ci_high": math.nan, "ci_method": "", "n_failed": 0, "note": ""}


def result_row(estimate: float, ci: tuple[float, float] = (math.nan, math.nan), ci_method: str = "", *,
               n_items: int, n_failed: int = 0, note: str = "", **extra) -> dict:
    """Return one result row as a dict: ``extra`` keys (the grouping) first, then the contract columns.

    Parameters
    ----------
    estimate : float
        The value; NaN when undefined (then ``note`` says why).
    ci : tuple of float
        ``(ci_low, ci_high)``; NaNs when there is no interval.
    ci_method : str
        How the interval was made; ``""`` when there is none.
    n_items : int
        The units the estimate used.
    n_failed : int
        The units dropped (parse failures, missing values).
    note : str
        Anything a reader must know.
    **extra
        The grouping keys of the row (e.g. ``judge``, ``criterion``).

    Returns
    -------
    dict
        The row, ready for :func:`result_frame`.
    """
    return {**extra, "estimate": float(estimate), "ci_low": float(ci[0]), "ci_high": float(ci[1]),
            "ci_method": ci_method, "n_items": int(n_items), "n_failed": int(n_failed), "note": note}


def result_frame(rows: Iterable[Mapping], *, keys: Iterable[str] = ()) -> pd.DataFrame:
    """Return rows as a DataFrame with ``keys`` first, the contract columns next, extras last.

    Parameters
    ----------
    rows : iterable of mapping
        Result rows (:func:`result_row`); each needs ``n_items``.
    keys : iterable of str
        The grouping columns to put first.

    Returns
    -------
    DataFrame
        The result table; an empty one with the contract columns when there are no rows.
    """
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
    """Return the contract columns missing from ``df``.

    Parameters
    ----------
    df : DataFrame
        A result table.

    Returns
    -------
    list of str
        The missing columns of :data:`RESULT_COLUMNS`; empty when ``df`` fits the contract.
    """
    return [c for c in RESULT_COLUMNS if c not in df.columns]


class Result:
    """Base of every result object: a tidy table, a text summary and a compact view in Jupyter.

    A subclass implements :meth:`to_frame` (a DataFrame whose statistic rows follow the result
    contract) and may override :meth:`summary`. ``_repr_html_`` shows the first rows of
    :meth:`to_frame`, HTML-escaped, so labels and model replies never become markup.
    """

    html_rows = 20

    def to_frame(self) -> pd.DataFrame:
        """Return the result as a tidy DataFrame.

        Returns
        -------
        DataFrame
            One row per statistic, with the contract columns (:data:`RESULT_COLUMNS`).
        """
        raise NotImplementedError

    def summary(self) -> str:
        """Return the result as plain text: the table of :meth:`to_frame`.

        Returns
        -------
        str
            A text table.
        """
        return self.to_frame().to_string(index=False)

    def _repr_html_(self) -> str:
        df = self.to_frame()
        more = len(df) - self.html_rows
        html = df.head(self.html_rows).to_html(index=False, escape=True, border=0, na_rep="")
        if more > 0:
            html += f"<p>... {more} more rows: <code>.to_frame()</code></p>"
        return html
