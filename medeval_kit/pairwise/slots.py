"""Pairwise slots and labels, one copy: presented slots (first/second) <-> model terms (A/B), mirroring,
and criterion polarity."""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd

from medeval_kit.errors import SchemaError

__all__ = ["ORDERS", "MODEL_LABELS", "SLOT_LABELS", "SLOT_OF", "unswap", "to_slot", "mirror_slot",
           "polarity_of", "neutral_label", "polarity_series"]

ORDERS = ("AB", "BA")
MODEL_LABELS = ("A", "B", "tie", "neither")
SLOT_LABELS = ("first", "second", "tie", "neither")

_UNSWAP = {
    "AB": {"first": "A", "second": "B", "tie": "tie", "neither": "neither"},
    "BA": {"first": "B", "second": "A", "tie": "tie", "neither": "neither"},
}
_TO_SLOT = {o: {v: k for k, v in m.items()} for o, m in _UNSWAP.items()}
_MIRROR = {"first": "second", "second": "first", "tie": "tie", "neither": "neither"}
#: model term -> slot in the AB order (A shown first)
SLOT_OF = dict(_TO_SLOT["AB"])

# --------------------------------------------------------------------------- un-swapping
def _norm_order(order: str) -> str:
    o = str(order).strip().upper()
    if o not in _UNSWAP:
        raise ValueError(f"order must be one of {ORDERS} (A shown first / B shown first); got {order!r}")
    return o


def unswap(slot_verdict, order):
    """Map a presented-slot verdict to model terms: ``unswap("first", "BA") == "B"``.

    Works on scalars and on aligned pandas Series / arrays (returns a Series then). NA stays NA,
    ``tie`` and ``neither`` are unchanged.

    Parameters
    ----------
    slot_verdict : str or array-like
        ``first``, ``second``, ``tie`` or ``neither`` (any case).
    order : str or array-like
        The presentation order: ``AB`` (A shown first) or ``BA``.

    Returns
    -------
    str or None or Series
        The verdict in model terms (A/B/tie/neither); a Series for array input.

    Raises
    ------
    ValueError
        An unknown slot verdict or order.

    Examples
    --------
    >>> unswap("first", "AB"), unswap("first", "BA"), unswap("second", "BA"), unswap("tie", "BA")
    ('A', 'B', 'A', 'tie')
    """
    if np.ndim(slot_verdict) == 0 and np.ndim(order) == 0:
        if slot_verdict is None or (isinstance(slot_verdict, float) and np.isnan(slot_verdict)):
            return None
        v = str(slot_verdict).strip().lower()
        if v not in _MIRROR:
            raise ValueError(f"slot verdict must be one of {SLOT_LABELS}; got {slot_verdict!r}")
        return _UNSWAP[_norm_order(order)][v]
    sv = pd.Series(slot_verdict).reset_index(drop=True)
    od = pd.Series(order).reset_index(drop=True)
    return pd.Series([unswap(s, o) if pd.notna(s) else None for s, o in zip(sv, od)], dtype=object)


def to_slot(verdict, order):
    """Map a model-terms verdict to presented-slot terms (inverse of :func:`unswap`).

    Parameters
    ----------
    verdict : str or array-like
        ``A``, ``B``, ``tie`` or ``neither``.
    order : str or array-like
        The presentation order: ``AB`` (A shown first) or ``BA``.

    Returns
    -------
    str or None or Series
        The verdict in slot terms (first/second/tie/neither); a Series for array input.

    Raises
    ------
    ValueError
        An unknown verdict or order.

    Examples
    --------
    >>> to_slot("A", "BA"), to_slot("B", "BA"), to_slot("tie", "AB")
    ('second', 'first', 'tie')
    """
    if np.ndim(verdict) == 0 and np.ndim(order) == 0:
        if verdict is None or (isinstance(verdict, float) and np.isnan(verdict)):
            return None
        v = str(verdict).strip()
        v = v if v in ("A", "B") else v.lower()
        if v not in _TO_SLOT["AB"]:
            raise ValueError(f"verdict must be one of {MODEL_LABELS}; got {verdict!r}")
        return _TO_SLOT[_norm_order(order)][v]
    vv = pd.Series(verdict).reset_index(drop=True)
    od = pd.Series(order).reset_index(drop=True)
    return pd.Series([to_slot(v, o) if pd.notna(v) else None for v, o in zip(vv, od)], dtype=object)


def mirror_slot(slot_verdict: str) -> str:
    """The slot verdict that means the same model choice in the swapped order (first <-> second).

    Parameters
    ----------
    slot_verdict : str
        ``first``, ``second``, ``tie`` or ``neither``.

    Returns
    -------
    str
        ``second`` for ``first`` and back; ``tie`` and ``neither`` unchanged.

    Examples
    --------
    >>> mirror_slot("first")
    'second'
    """
    return _MIRROR[slot_verdict]


# --------------------------------------------------------------------------- polarity
def polarity_of(criterion: str, reversed_criteria: Collection[str] | None = None) -> int:
    """+1 for ordinary criteria, -1 for those in ``reversed_criteria`` (choosing = worse).

    Parameters
    ----------
    criterion : str
        The criterion's name.
    reversed_criteria : collection of str, optional
        Criteria phrased negatively (e.g. harmfulness).

    Returns
    -------
    int
        +1 or -1.

    Examples
    --------
    >>> polarity_of("harmfulness", {"harmfulness"}), polarity_of("overall", {"harmfulness"})
    (-1, 1)
    """
    return -1 if reversed_criteria and criterion in set(reversed_criteria) else 1


def neutral_label(polarity: int) -> str:
    """``tie`` for +1 criteria, ``neither`` for reversed (-1) criteria (Longform-MedQA's rule).

    Parameters
    ----------
    polarity : int
        +1 (higher is better) or -1 (choosing means worse).

    Returns
    -------
    str
        ``"tie"`` or ``"neither"``.
    """
    return "neither" if int(polarity) < 0 else "tie"


def polarity_series(df: pd.DataFrame, criterion: str, reversed_criteria, polarity: str | None) -> pd.Series:
    """Each row's polarity (+1 / -1): from the ``polarity`` column when there is one, else by criterion.

    Parameters
    ----------
    df : DataFrame
        Pairwise rows.
    criterion : str
        Name of the column of criteria.
    reversed_criteria : collection of str, optional
        Criteria phrased negatively (choosing means worse).
    polarity : str, optional
        Name of a column of +1 / -1; used when given and present in ``df``.

    Returns
    -------
    Series of int
        +1 or -1 per row, aligned with ``df``.

    Raises
    ------
    SchemaError
        The polarity column holds values other than +1 / -1.
    """
    if polarity is not None and polarity in df.columns:
        p = pd.to_numeric(df[polarity], errors="coerce")
        bad = ~p.isin([1, -1])
        if bad.any():
            raise SchemaError("judgments", polarity, [int(i) for i in np.flatnonzero(bad)],
                              "polarity must be +1 (higher is better) or -1 (choosing means worse)")
        return p.astype(int)
    rev = set(reversed_criteria or ())
    return df[criterion].map(lambda c: -1 if c in rev else 1).astype(int)

