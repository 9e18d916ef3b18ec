"""Critique score strings (``"24/25"``, ``"Total score for the context = 45/45."``) as (score, max_score).

The one ``x/y`` parser of the package: the bundled trace loaders (:mod:`.medqg_rounds`) and the
stopping rules (:func:`medeval_kit.rounds.should_stop`) both read scores with it.
"""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

__all__ = ["FRACTION", "ScoreParse", "parse_score_string"]

FRACTION = re.compile(r"(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)")
"""An ``x/y`` score: numerator and denominator, optional decimals, spaces around the slash allowed."""


class ScoreParse(NamedTuple):
    """What :func:`parse_score_string` read from one score string.

    Parameters
    ----------
    score : float
        The numerator; NaN when the parse failed.
    max_score : float
        The denominator; NaN when the parse failed.
    status : {"ok", "failed"}
        Whether a valid ``x/y`` was found.
    reason : str
        Why it failed; "" when it did not.
    """

    score: float
    max_score: float
    status: str
    reason: str


def _failed(reason: str) -> ScoreParse:
    """Return a failed parse (NaN scores) with its reason."""
    return ScoreParse(math.nan, math.nan, "failed", reason)


def parse_score_string(text: Any) -> ScoreParse:
    """Parse a critique score string like ``"24/25"`` or ``"Total score for the context = 45/45."``.

    The *last* ``x/y`` fraction in the text is taken (a component total follows its aspect scores). A
    string without a fraction (e.g. a bare ``"20"``: the scale is unknown), a zero denominator or a
    numerator above the denominator gives ``status="failed"`` with NaN scores.

    Parameters
    ----------
    text : object
        The score string (anything else fails).

    Returns
    -------
    ScoreParse
        The score, its maximum, the status and the reason.

    Examples
    --------
    >>> parse_score_string("Total score for the context = 45/45.")
    ScoreParse(score=45.0, max_score=45.0, status='ok', reason='')
    >>> parse_score_string("20").status
    'failed'
    """
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return _failed("missing score")
    matches = FRACTION.findall(str(text))
    if not matches:
        return _failed("no 'x/y' fraction found")
    num, den = (float(v) for v in matches[-1])
    if den <= 0:
        return _failed("zero denominator")
    if num > den:
        return _failed("score exceeds its maximum")
    return ScoreParse(num, den, "ok", "")
