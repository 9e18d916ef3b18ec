"""One type for a printed number beside ours, four statuses with one rule each, and the paper data files.

The rule
--------
Every printed number gets exactly one of four statuses (:data:`STATUSES`); :data:`STATUS_RULES` holds
the rule of each in words, and the report and the docs print it from there.

* **reproduced**: ours is computed independently from public data (a computation on data, never a
  constant copied from the paper) and *rounds* or *truncates* to the value as printed, at its
  printed precision. The row says which (``rounds to 0.85`` / ``truncates to 0.571428``).
* **consistent**: the printed value is reachable from the paper's own other numbers (a back-solve,
  integer counts that give it, interval arithmetic on the rounded printed inputs), but no
  independent data confirm it. The row says what it was reached from.
* **differs**: ours is computed from the paper's data and disagrees. The row states the cause in
  plain words, or says ``cause unknown: tried ...`` with what was tried.
* **not recoverable**: the data or definition needed are not public (ours is None or NaN). The row
  says what is missing.

There are no other statuses and no tolerances. The printed string decides the precision:

* ``"0.85"``: two decimals; ours rounds to it when ``|ours - 0.85| <= 0.005`` (so 0.846 and 0.852
  do, 0.844 does not). A value exactly half a unit away counts, whatever rounding convention the
  paper used (half up or half to even). Ours *truncates* to it when cutting ours after two decimals
  gives 0.85 (0.8599 does); a paper that truncates is reproduced, and the row says so.
* ``"105"`` (no decimal point, no ``%``): an integer, a count; ours must equal it exactly.
* ``"87.5%"``: a percentage. Ours is the share (0.875); it is multiplied by 100 and compared at
  the printed decimals (here one, so 87.45 to 87.55). ``"65%"`` compares ours x 100 at zero
  decimals (64.5 to 65.5).
* A leading ``+`` or ``-`` is part of the number (``"-0.0636"``, ``"+16.29%"``).

Ours is first rounded to 12 significant digits (:data:`medeval_kit.tables.STABLE_DIGITS`) and then
compared and shown in decimal arithmetic, so a share of integers is exact: 23/40 is 57.5 %, never
57.4999... % (see :meth:`Printed.show`).

A ``consistent`` check may give ours as an interval ``(lo, hi)``: what the paper's rounded printed
inputs allow. The printed value is reachable when some value of the interval rounds or truncates to
it (the printed value inside the interval always is). Ours is then the value of the interval
nearest the printed one, so the published-numbers table can be checked against the rule from its
``published`` and ``ours`` columns alone; the note gives the interval.

Every number is ``printed`` (the paper prints it) or ``derived`` (a quantity we derive from printed
numbers: a sum, a sample size, a share we compute). Derived numbers are checked and shown like the
others, but the report's headline counts printed numbers only.

The data
--------
Every printed number a study checks lives in ``data/published/<paper-id>.yaml`` (one file per
paper: ``id``, ``citation``, ``numbers``, and optionally ``url``, ``short``, ``inputs``,
``contradictions``, ``notes``; a number has ``id``, ``source``, ``quantity``, ``value`` and
optionally ``kind`` (``printed`` or ``derived``), ``not_recoverable`` and ``note``). See
:func:`load_paper`; :func:`validate_paper_file` is the schema.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from medeval_kit.errors import DataFileError
from medeval_kit.tables import STABLE_DIGITS

__all__ = [
    "STATUSES",
    "STATUS_RULES",
    "KINDS",
    "BASES",
    "COLUMNS",
    "CAUSE_UNKNOWN",
    "Printed",
    "parse_printed",
    "rounds_to",
    "truncates_to",
    "matches",
    "decide",
    "cause_problem",
    "Published",
    "Number",
    "Paper",
    "published_dir",
    "paper_ids",
    "load_paper",
    "validate_paper_file",
    "to_frame",
]

STATUS_RULES: dict[str, str] = {
    "reproduced": ("ours, computed independently from public data (a computation on data, never a constant "
                   "copied from the paper), rounds or truncates to the value as printed, at its printed "
                   "precision; the row says which."),
    "consistent": ("the printed value is reachable from the paper's own other numbers (a back-solve, integer "
                   "counts that give it, interval arithmetic on the rounded printed inputs), but no independent "
                   "data confirm it; the row says what it was reached from."),
    "differs": ("ours is computed from the paper's data and disagrees; the row states the cause in plain words, "
                "or says \"cause unknown: tried ...\" with what was tried."),
    "not recoverable": "the data or definition needed are not public; the row says what is missing.",
}
"""Status -> its one rule in words (printed by the report and the docs)."""

STATUSES = tuple(STATUS_RULES)
"""The four statuses, in the order tables and the report list them."""

KINDS = ("printed", "derived")
"""``printed``: the paper prints the number; ``derived``: we derive it from printed numbers (a sum, a sample
size, a share we compute). The headline counts printed numbers only."""

BASES = ("independent", "consistent")
"""What ours rests on: an ``independent`` computation on public data, or the paper's own numbers
(``consistent``)."""

COLUMNS = ["paper", "source", "quantity", "published", "ours", "status", "kind", "note"]

CAUSE_UNKNOWN = "cause unknown: tried"
"""How a ``differs`` row without a verified cause begins, followed by what was tried."""

MIN_CAUSE_WORDS = 6
"""A cause is a sentence: at least this many words of letters (counts alone are not a cause)."""

_PRINTED = re.compile(r"^([+-]?)(\d+)(?:\.(\d+))?(%?)$")
_PAPER_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*-(?:19|20)\d\d$")
_NUMBER_ID = re.compile(r"^[a-z0-9]+(?:[-.][a-z0-9]+)*$")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


# --------------------------------------------------------------------------- the rule


def _exact(x: float) -> Decimal:
    """``x`` at 12 significant digits, as a decimal: 23/40 is 0.575 exactly, so x 100 is 57.5, not 57.4999..."""
    return Decimal(f"{float(x):.{STABLE_DIGITS}g}")


def _plain(d: Decimal) -> str:
    """A decimal without exponent or trailing zeros (``384.1``, ``100``); never ``-0``."""
    d = d.normalize()
    if d.is_zero():
        return "0"
    return f"{d:f}"


@dataclass(frozen=True)
class Printed:
    """A number as a paper prints it: its value, decimals and whether it is a percentage.

    Parameters
    ----------
    text : str
        The value exactly as printed (``"87.5%"``).
    number : float
        Its value (``87.5``).
    decimals : int
        The printed decimals (the precision ours is compared at).
    percent : bool
        Printed with ``%``.
    """

    text: str
    number: float
    decimals: int
    percent: bool

    @property
    def integer(self) -> bool:
        """A count: printed without a decimal point or a percent sign; ours must equal it."""
        return not self.percent and self.decimals == 0

    @property
    def exact(self) -> Decimal:
        """The printed number as a decimal on its printed scale (``"87.5%"`` -> 87.5)."""
        return Decimal(self.text.rstrip("%").lstrip("+"))

    @property
    def unit(self) -> Decimal:
        """One unit of the last printed digit (``"0.85"`` -> 0.01; ``"65%"`` -> 1, in percent)."""
        return Decimal(1).scaleb(-self.decimals)

    def scaled(self, ours: float) -> Decimal:
        """Ours on the printed scale as an exact decimal (a share x 100 for a percentage).

        Parameters
        ----------
        ours : float
            Our value (a share for a percentage).

        Returns
        -------
        Decimal
            Ours at 12 significant digits, then x 100 for a percentage: exact decimal arithmetic.

        Examples
        --------
        >>> parse_printed("57%").scaled(23 / 40)
        Decimal('57.500')
        """
        x = _exact(ours)
        return x * 100 if self.percent else x

    def scale(self, ours: float) -> float:
        """Ours on the printed scale (a share x 100 for a percentage) as a float."""
        return float(self.scaled(ours))

    def show(self, ours: float) -> str:
        """Ours written like the printed value (same decimals, ``%`` when printed with one).

        Computed in decimal from ours at 12 significant digits, so a share of integers is exact. A tie
        at the printed precision (a 5 just after the last printed digit, nothing after it) keeps that
        digit: 23/40 beside ``"57%"`` shows ``57.5%``, not a rounding either way. A count that is not
        whole shows its decimals (``384.1``).

        Parameters
        ----------
        ours : float
            Our value (a share for a percentage).

        Returns
        -------
        str
            Ours at the printed precision.

        Examples
        --------
        >>> parse_printed("35%").show(23 / 40), parse_printed("87.5%").show(0.875), parse_printed("0.85").show(0.852)
        ('57.5%', '87.5%', '0.85')
        >>> parse_printed("105").show(105.0), parse_printed("0.571428").show(4 / 7)
        ('105', '0.571429')
        """
        if not math.isfinite(float(ours)):
            return str(float(ours))
        x = self.scaled(ours)
        if self.integer:  # a count: whole, or with the decimals it has (384.1)
            return _plain(x)
        d = self.decimals
        finer = x.scaleb(d + 1)
        if finer == finer.to_integral_value() and abs(finer) % 10 == 5:
            d += 1  # a tie: show it rather than round it either way
        q = x.quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP)
        if q.is_zero():
            q = abs(q)
        return f"{q:f}" + ("%" if self.percent else "")

    def show_fine(self, ours: float) -> str:
        """Ours two digits finer than printed (for an interval's ends or a truncated value), ``%`` kept.

        Examples
        --------
        >>> parse_printed("-0.016").show_fine(-0.0155)
        '-0.01550'
        """
        if not math.isfinite(float(ours)):
            return str(float(ours))
        x = self.scaled(ours).quantize(Decimal(1).scaleb(-(self.decimals + 2)), rounding=ROUND_HALF_UP)
        if x.is_zero():
            x = abs(x)
        return f"{x:f}" + ("%" if self.percent else "")


def parse_printed(text: str) -> Printed:
    """Parse a printed value (``"0.85"``, ``"105"``, ``"87.5%"``, ``"-0.0636"``).

    Parameters
    ----------
    text : str
        The value as printed.

    Returns
    -------
    Printed
        Its value, decimals and percent flag.

    Raises
    ------
    DataFileError
        ``text`` is not a number as papers print them (a ``ValueError``).

    Examples
    --------
    >>> parse_printed("87.5%")
    Printed(text='87.5%', number=87.5, decimals=1, percent=True)
    """
    if not isinstance(text, str):
        raise DataFileError(f"printed value {text!r} must be a string as printed (quote it in the YAML file, "
                            "e.g. '0.9030', so trailing zeros survive)")
    m = _PRINTED.match(text.strip())
    if not m:
        raise DataFileError(f"printed value {text!r} is not a number as printed: use digits with an optional "
                            "sign, decimal point and trailing %, e.g. '0.85', '105', '87.5%', '-0.0636'")
    sign, whole, frac, pct = m.groups()
    number = float(f"{sign}{whole}.{frac or '0'}")
    return Printed(text=text.strip(), number=number, decimals=len(frac or ""), percent=pct == "%")


def _missing(ours: Any) -> bool:
    if ours is None:
        return True
    try:
        return math.isnan(float(ours))
    except (TypeError, ValueError):
        raise TypeError(f"ours must be a number or None, not {ours!r}") from None


def _as_printed(value: str | Printed) -> Printed:
    return value if isinstance(value, Printed) else parse_printed(value)


def rounds_to(value: str | Printed, ours: float) -> bool:
    """True when ``ours`` rounds to the printed ``value`` at its printed precision (see the module doc).

    Parameters
    ----------
    value : str or Printed
        The value as printed (``"0.85"``, ``"87.5%"``, ``"105"``).
    ours : float
        Our value (a share for a percentage).

    Returns
    -------
    bool
        ``|ours - printed| <= half a unit`` of the last printed digit (a tie counts); a count must be equal.

    Examples
    --------
    >>> rounds_to("0.85", 0.855), rounds_to("0.85", 0.8551), rounds_to("57.5%", 23 / 40), rounds_to("105", 104.6)
    (True, False, True, False)
    """
    p = _as_printed(value)
    if not math.isfinite(float(ours)):
        return False
    x = p.scaled(ours)
    if p.integer:
        return x == p.exact
    return abs(x - p.exact) <= p.unit / 2


def truncates_to(value: str | Printed, ours: float) -> bool:
    """True when ``ours`` cut (not rounded) after the printed decimals gives the printed value.

    A paper that truncates is reproduced (the row says "truncates to"). A count must be equal.

    Parameters
    ----------
    value : str or Printed
        The value as printed.
    ours : float
        Our value (a share for a percentage).

    Returns
    -------
    bool
        Ours cut towards zero at the printed decimals equals the printed value.

    Examples
    --------
    >>> truncates_to("0.571428", 4 / 7), rounds_to("0.571428", 4 / 7), truncates_to("0.85", 0.844)
    (True, False, False)
    """
    p = _as_printed(value)
    if not math.isfinite(float(ours)):
        return False
    x = p.scaled(ours)
    if p.integer:
        return x == p.exact
    return x.quantize(p.unit, rounding=ROUND_DOWN) == p.exact


def matches(value: str | Printed, ours: float | None) -> str:
    """How ours matches the printed value: ``"rounds"``, ``"truncates"`` (and does not round), or ``""``.

    Parameters
    ----------
    value : str or Printed
        The value as printed.
    ours : float or None
        Our value; None or NaN matches nothing.

    Returns
    -------
    str
        ``"rounds"``, ``"truncates"`` or ``""``.

    Examples
    --------
    >>> matches("0.85", 0.852), matches("0.571428", 4 / 7), matches("0.85", 0.80), matches("0.85", None)
    ('rounds', 'truncates', '', '')
    """
    if _missing(ours):
        return ""
    p = _as_printed(value)
    return "rounds" if rounds_to(p, ours) else "truncates" if truncates_to(p, ours) else ""


def _interval(ours: Any) -> tuple[float, float] | None:
    """``(lo, hi)`` when ours is an interval, else None; an interval must have two finite ordered ends."""
    if not isinstance(ours, (tuple, list)):
        return None
    if len(ours) != 2:
        raise ValueError(f"an interval is (lo, hi), not {ours!r}")
    lo, hi = float(ours[0]), float(ours[1])
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise ValueError(f"an interval needs finite ends with lo <= hi, not {ours!r}")
    return lo, hi


def _inside(p: Printed, lo: float, hi: float) -> bool:
    """The printed value lies in [lo, hi] (ends at 12 significant digits: interval arithmetic in floats
    leaves last-bit noise, -0.015999999999999903 for -0.016)."""
    target = p.exact / 100 if p.percent else p.exact
    return _exact(lo) <= target <= _exact(hi)


def _nearest(p: Printed, lo: float, hi: float) -> float:
    """The value of [lo, hi] nearest the printed value (the printed value itself when inside)."""
    target = p.exact / 100 if p.percent else p.exact
    return float(min(max(target, _exact(lo)), _exact(hi)))


def decide(value: str, ours: float | tuple[float, float] | None, basis: str = "independent") -> str:
    """The status of a printed ``value`` against ``ours`` by the rule (see :data:`STATUS_RULES`).

    Parameters
    ----------
    value : str
        The value as printed.
    ours : float, (lo, hi) or None
        Our value; None or NaN when it cannot be computed. An interval only with ``basis="consistent"``.
    basis : {"independent", "consistent"}
        ``independent``: ours is computed from public data (reproduced / differs / not recoverable);
        ``consistent``: ours is reached from the paper's own numbers (consistent / differs / not
        recoverable).

    Returns
    -------
    str
        One of :data:`STATUSES`: a match (rounds or truncates; for an interval, some value of it does)
        is ``reproduced`` (independent) or ``consistent``; no match ``differs``; no ours ``not recoverable``.

    Examples
    --------
    >>> decide("0.85", 0.846), decide("0.85", 0.844), decide("0.571428", 4 / 7), decide("0.85", float("nan"))
    ('reproduced', 'differs', 'reproduced', 'not recoverable')
    >>> decide("-0.016", (-0.0165, -0.0145), "consistent"), decide("-0.016", (-0.0150, -0.0140), "consistent")
    ('consistent', 'differs')
    """
    if basis not in BASES:
        raise ValueError(f"unknown basis {basis!r}; use one of {BASES}")
    p = parse_printed(value)
    iv = _interval(ours)
    if iv is not None:
        if basis != "consistent":
            raise ValueError("an interval (lo, hi) of ours is a check against the paper's own numbers: "
                             "use basis='consistent'")
        ours = _nearest(p, *iv)
    if _missing(ours):
        return "not recoverable"
    if not matches(p, ours):
        return "differs"
    return "reproduced" if basis == "independent" else "consistent"


def cause_problem(why: str) -> str:
    """What is wrong with the cause of a ``differs`` row, or ``""`` when it is a cause.

    A cause is a plain sentence (at least :data:`MIN_CAUSE_WORDS` words, not counts alone); where the
    cause is not known it begins with :data:`CAUSE_UNKNOWN` and lists what was tried.

    Parameters
    ----------
    why : str
        The cause given to :meth:`Paper.check`.

    Returns
    -------
    str
        ``""`` for a cause, else what is missing (for an error message).

    Examples
    --------
    >>> cause_problem("recounted from Table 19: 8/40")
    'the cause is not a sentence (3 words): say in plain words why ours and the printed value disagree'
    >>> cause_problem("cause unknown: tried Kendall tau-b, tau-c, Spearman and Pearson on 972 codings")
    ''
    """
    text = " ".join((why or "").split())
    if not text:
        return f"no cause: say why ours and the printed value disagree, or begin with '{CAUSE_UNKNOWN} ...'"
    low = text.lower()
    if low.startswith("cause unknown") and not low.startswith(CAUSE_UNKNOWN):
        return f"an unknown cause begins with '{CAUSE_UNKNOWN} ...' and lists what was tried"
    if low.startswith(CAUSE_UNKNOWN) and len(_WORD.findall(text[len(CAUSE_UNKNOWN):])) < 2:
        return f"'{CAUSE_UNKNOWN}' must list what was tried"
    n = len(_WORD.findall(text))
    if n < MIN_CAUSE_WORDS:
        return (f"the cause is not a sentence ({n} words): say in plain words why ours and the printed value "
                "disagree")
    return ""


@dataclass(frozen=True)
class Published:
    """A number a paper prints, beside ours, with its status by the rule and the reason.

    Build it with :meth:`check` (or :meth:`Paper.check`); the constructor refuses a status that the rule
    does not give for ``value``, ``ours`` (or ``interval``) and ``basis``, a status other than ``reproduced``
    without a reason, and a ``consistent`` number without ``how``.

    Parameters
    ----------
    paper : str
        The paper's canonical id (``pandalm-2024``).
    id : str
        The number's id in the paper's data file.
    source : str
        Where the paper prints it (``Table 6``).
    quantity : str
        What it is, in words.
    value : str
        The value exactly as printed.
    ours : float or None
        Our value (for an interval: its value nearest the printed one); ``None`` when not recoverable.
    status : {"reproduced", "consistent", "differs", "not recoverable"}
        The status; it must be the one :data:`~medeval_kit.repro.published.STATUS_RULES` gives.
    reason : str
        Why, for every status but ``reproduced``.
    note : str
        Anything else a reader must know.
    kind : {"printed", "derived"}
        ``derived`` numbers are checked but not counted among the printed ones.
    basis : {"independent", "consistent"}
        Ours computed from public data, or from the paper's own other numbers.
    interval : (float, float), optional
        Ours as an interval (interval arithmetic on rounded inputs).
    cause : str
        The ``why`` of a ``differs`` or ``not recoverable`` row.
    how : str
        How a ``consistent`` number follows from the others.
    """

    paper: str
    id: str
    source: str
    quantity: str
    value: str
    ours: float | None
    status: str
    reason: str = ""
    note: str = ""
    kind: str = "printed"
    basis: str = "independent"
    interval: tuple[float, float] | None = None
    cause: str = ""
    how: str = ""

    def __post_init__(self) -> None:
        where = f"{self.paper}/{self.id}"
        if self.status not in STATUSES:
            raise ValueError(f"{where}: unknown status {self.status!r}; use one of {STATUSES}")
        if self.kind not in KINDS:
            raise ValueError(f"{where}: unknown kind {self.kind!r}; use one of {KINDS}")
        if self.basis not in BASES:
            raise ValueError(f"{where}: unknown basis {self.basis!r}; use one of {BASES}")
        expected = decide(self.value, self.interval if self.interval is not None else self.ours, self.basis)
        if self.status != expected:
            raise ValueError(f"{where}: status {self.status!r} but the rule gives {expected!r} "
                             f"(printed {self.value}, ours {self.ours!r}, basis {self.basis})")
        if self.status != "reproduced" and not self.reason.strip():
            raise ValueError(f"{where}: a {self.status!r} number needs a reason")
        if self.status == "consistent" and not self.how.strip():
            raise ValueError(f"{where}: a 'consistent' number needs how: what the printed value was reached from")

    @property
    def match(self) -> str:
        """``"rounds"`` or ``"truncates"`` when ours matches the printed value, else ``""``."""
        return matches(self.value, self.ours)

    @classmethod
    def check(cls, paper: str, id: str, source: str, quantity: str, value: str,
              ours: float | tuple[float, float] | None, *, why: str = "", note: str = "",
              basis: str = "independent", how: str = "", kind: str = "printed") -> Published:
        """Decide the status of ``value`` against ``ours`` and build the reason.

        Parameters
        ----------
        paper, id, source, quantity : str
            The paper id, the number's id, where the paper prints it and what it is.
        value : str
            The value as printed.
        ours : float, (lo, hi) or None
            Our value; None or NaN when it cannot be computed; an interval ``(lo, hi)`` (what the
            rounded printed inputs allow) only with ``basis="consistent"``.
        why : str
            For ``differs``: the cause in plain words, or ``"cause unknown: tried ..."``; for ``not
            recoverable`` (required): what is missing. Not shown for a match.
        note : str
            Context shown whatever the status (n, CI, how ours was computed).
        basis : {"independent", "consistent"}
            ``independent``: ours computed from public data; ``consistent``: reached from the paper's
            own numbers (``how`` required).
        how : str
            For ``basis="consistent"``: one plain sentence, what the printed value was reached from.
        kind : {"printed", "derived"}
            Whether the paper prints the number or we derive it from printed numbers.

        Returns
        -------
        Published
            The row; its ``reason`` says ``rounds to`` / ``truncates to`` for a match, ours and the
            printed value and the cause for ``differs``.

        Examples
        --------
        >>> Published.check("p-2024", "k", "Table 1", "kappa", "0.85", 0.852).reason
        'ours rounds to 0.85'
        >>> Published.check("p-2024", "k", "Table 1", "kappa", "0.571428", 4 / 7).reason
        'ours 0.57142857 truncates to 0.571428 (rounded it would be 0.571429)'
        >>> r = Published.check("p-2024", "d", "Fig. 6", "delta kappa", "-0.016", (-0.0165, -0.0145),
        ...                     basis="consistent", how="0.694 - 0.709, each rounded to three decimals")
        >>> r.status, r.reason
        ('consistent', '0.694 - 0.709, each rounded to three decimals; the rounded printed inputs allow -0.01650 to -0.01450, which contains -0.016')
        """
        where = f"{paper}/{id}"
        if basis not in BASES:
            raise ValueError(f"{where}: unknown basis {basis!r}; use one of {BASES}")
        p = parse_printed(value)
        interval = _interval(ours)
        if interval is not None and basis != "consistent":
            raise ValueError(f"{where}: an interval (lo, hi) of ours is a check against the paper's own numbers: "
                             "use basis='consistent' and say how")
        if basis == "consistent" and not how.strip():
            raise ValueError(f"{where}: a check with basis='consistent' needs how=...: one plain sentence, what the "
                             "printed value was reached from")
        point = _nearest(p, *interval) if interval is not None else None if _missing(ours) else float(ours)
        why, how = " ".join(why.split()), " ".join(how.split())
        if why.lower().startswith("cause unknown") and cause_problem(why):
            raise ValueError(f"{where}: {cause_problem(why)}")
        status = decide(value, interval if interval is not None else point, basis)
        span = "" if interval is None else (f"the rounded printed inputs allow {p.show_fine(interval[0])} to "
                                            f"{p.show_fine(interval[1])}")
        if status == "not recoverable":
            if not why:
                raise ValueError(f"{where}: ours is missing; say what is missing (why=...)")
            reason = "; ".join(s for s in (how, why) if s)
        elif status == "differs":
            ours_text = span + f", printed {p.text}" if span else f"ours {p.show(point)}, printed {p.text}"
            reason = "; ".join(s for s in (how, ours_text, why) if s)
        else:
            if span:
                inside = _inside(p, *interval)
                found = f"{span}, which " + (f"contains {p.text}" if inside else f"reaches {p.text} at its "
                                             "printed precision")
            elif matches(p, point) == "rounds":
                found = f"ours rounds to {p.text}"
            else:
                found = f"ours {p.show_fine(point)} truncates to {p.text} (rounded it would be {p.show(point)})"
            reason = "; ".join(s for s in (how, found) if s)
        return cls(paper, id, source, quantity, p.text, point, status, reason, note, kind, basis, interval,
                   why if status in ("differs", "not recoverable") else "", how)

    def to_row(self) -> dict:
        """One row of the published-numbers table (:data:`COLUMNS`); ``note`` = reason, then context."""
        note = "; ".join(s for s in (self.reason, self.note) if s)
        return {"paper": self.paper, "source": self.source, "quantity": self.quantity, "published": self.value,
                "ours": float("nan") if self.ours is None else self.ours, "status": self.status,
                "kind": self.kind, "note": note}


def to_frame(rows: Iterable[Published]) -> pd.DataFrame:
    """Return the published-numbers table.

    Parameters
    ----------
    rows : iterable of Published
        Checked numbers.

    Returns
    -------
    DataFrame
        One row per number: ``paper, source, quantity, published`` (as printed), ``ours, status, kind, note``.
    """
    out = pd.DataFrame([r.to_row() for r in rows], columns=COLUMNS)
    out["ours"] = out["ours"].astype(float)
    return out


# --------------------------------------------------------------------------- the data files


@dataclass(frozen=True)
class Number:
    """One number of a paper data file: printed by the paper, or derived by us from printed numbers.

    Parameters
    ----------
    id : str
        The number's id, unique in the file.
    source : str
        Where the paper prints it.
    quantity : str
        What it is, in words.
    value : str
        The value exactly as printed (a quoted string in the YAML).
    not_recoverable : str
        Why the public data cannot give ours; empty when it can.
    note : str
        Anything else a reader must know.
    kind : {"printed", "derived"}
        Printed by the paper, or derived by us from printed numbers.
    """

    id: str
    source: str
    quantity: str
    value: str
    not_recoverable: str = ""
    note: str = ""
    kind: str = "printed"


@dataclass(frozen=True)
class Paper:
    """A paper data file: canonical id, citation, printed numbers, printed inputs and contradictions.

    Parameters
    ----------
    id : str
        The canonical id, ``name-year`` (``mcqg-srefine-2025``).
    citation : str
        The full citation.
    numbers : mapping of str to Number
        The checked numbers by id.
    url : str
        Where the paper is.
    short : str
        A short name for tables.
    inputs : mapping
        The printed inputs the checks compute from.
    contradictions : tuple
        Where the paper contradicts itself or its code (``where``, ``says``, ``but``, ``consequence``).
    path : str
        The data file it was read from.
    """

    id: str
    citation: str
    numbers: Mapping[str, Number]
    url: str = ""
    short: str = ""
    inputs: Mapping[str, Any] = field(default_factory=dict)
    contradictions: tuple = ()
    path: str = ""

    def number(self, number_id: str) -> Number:
        try:
            return self.numbers[number_id]
        except KeyError:
            raise DataFileError(f"{self.path}: no number with id {number_id!r}") from None

    def value(self, number_id: str) -> float:
        """The printed number as a float (a percentage as a share: ``"87.5%"`` -> 0.875)."""
        p = parse_printed(self.number(number_id).value)
        return p.number / 100.0 if p.percent else p.number

    def input(self, name: str) -> Any:
        try:
            return self.inputs[name]
        except KeyError:
            raise DataFileError(f"{self.path}: no input {name!r} (inputs: {sorted(self.inputs)})") from None

    def check(self, number_id: str, ours: float | tuple[float, float] | None = None, *, why: str = "",
              note: str = "", basis: str = "independent", how: str = "") -> Published:
        """Ours against this paper's number ``number_id``, by the rule (:data:`STATUS_RULES`).

        Parameters
        ----------
        number_id : str
            The number's id in the data file; its ``kind`` (printed or derived) is carried into the row.
        ours : float, (lo, hi) or None
            ``basis="independent"``: ours computed from public data (a computation, never a constant
            copied from the paper); None or NaN when the public data cannot give it.
            ``basis="consistent"``: ours reached from the paper's own numbers, a float or an interval
            ``(lo, hi)`` from interval arithmetic on the rounded printed inputs.
        why : str
            For ``differs``: the verified cause in one or two plain sentences with the numbers that show
            it, or ``"cause unknown: tried ..."`` (:func:`cause_problem` says what a cause needs; the tests
            require one for every ``differs`` row of the bundled data, while a check on your own data that
            differs where the paper's data match is reported without one rather than refused). For ``not
            recoverable`` (required): what is missing (a number the file marks ``not_recoverable`` takes
            that reason first).
        note : str
            Context shown whatever the status (n, CI, what the public data do give).
        basis : {"independent", "consistent"}
            What ours rests on.
        how : str
            Required with ``basis="consistent"``: one plain sentence, what the printed value was reached
            from.

        Returns
        -------
        Published
            ``reproduced`` (independent; ours rounds or truncates to the printed value, the note says
            which), ``consistent`` (basis consistent; the printed value is reached), ``differs`` or
            ``not recoverable``.

        Examples
        --------
        >>> p = Paper("p-2024", "A. Author. A title. Venue 2024.",
        ...           {"k": Number("k", "Table 1", "kappa", "0.85"), "n": Number("n", "Sec. 2", "n", "40", kind="derived")})
        >>> p.check("k", 0.852).status, p.check("n", float(sum([17, 23]))).kind
        ('reproduced', 'derived')
        >>> p.check("k", (0.845, 0.862), basis="consistent", how="PA 0.9 and chance 0.33, both rounded").status
        'consistent'
        """
        n = self.number(number_id)
        if n.not_recoverable:
            if not _missing(ours) or _interval(ours) is not None:
                raise ValueError(f"{self.path}: {number_id} is marked not recoverable but ours = {ours!r}; "
                                 "put an analogue in the note instead")
            why = n.not_recoverable + (f"; {why}" if why else "")
        note = "; ".join(s for s in (n.note, note) if s)
        return Published.check(self.id, n.id, n.source, n.quantity, n.value, ours, why=why, note=note,
                               basis=basis, how=how, kind=n.kind)

    def contradictions_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"paper": self.id, **c} for c in self.contradictions],
                            columns=["paper", "where", "says", "but", "consequence"])


def published_dir() -> Path:
    """The folder of the paper data files (:func:`medeval_kit.paths.published_dir`)."""
    from medeval_kit import paths

    return paths.published_dir()


def paper_ids(folder: str | Path | None = None) -> list[str]:
    """List the canonical paper ids that have a data file.

    Parameters
    ----------
    folder : path-like, optional
        The folder of data files; default ``data/published/``.

    Returns
    -------
    list of str
        The ids, sorted.
    """
    d = Path(folder) if folder else published_dir()
    return sorted(p.stem for p in d.glob("*.yaml"))


_TOP = {"id", "citation", "url", "short", "numbers", "inputs", "contradictions", "notes"}
_NUM = {"id", "source", "quantity", "value", "kind", "not_recoverable", "note"}
_CONTRA = ("where", "says", "but", "consequence")


def validate_paper_file(path: str | Path) -> Paper:
    """Read and check one paper data file; errors name the file and the entry.

    Parameters
    ----------
    path : str or Path
        ``data/published/<paper-id>.yaml``.

    Returns
    -------
    Paper
        The paper: id, citation, numbers (each with ``kind``: ``printed``, the default, or ``derived``),
        inputs and contradictions.

    Examples
    --------
    >>> validate_paper_file(published_dir() / "pandalm-2024.yaml").id
    'pandalm-2024'
    """
    import yaml

    p = Path(path)
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataFileError(f"{p}: file not found; known papers: {paper_ids(p.parent)}") from None
    except yaml.YAMLError as exc:
        raise DataFileError(f"{p}: malformed YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise DataFileError(f"{p}: expected a mapping with id, citation and numbers")
    extra = set(doc) - _TOP
    if extra:
        raise DataFileError(f"{p}: unknown key(s) {sorted(extra)}; allowed: {sorted(_TOP)}")
    pid = doc.get("id")
    if pid != p.stem or not isinstance(pid, str) or not _PAPER_ID.match(pid):
        raise DataFileError(f"{p}: id {pid!r} must equal the file name and look like 'name-year' "
                            "(lower case, hyphens, the year of the version cited)")
    if not isinstance(doc.get("citation"), str) or len(doc["citation"].strip()) < 20:
        raise DataFileError(f"{p}: 'citation' must be the full citation (authors, title, venue, year)")
    nums = doc.get("numbers")
    if not isinstance(nums, list) or not nums:
        raise DataFileError(f"{p}: 'numbers' must be a non-empty list")
    numbers: dict[str, Number] = {}
    for i, n in enumerate(nums):
        where = f"{p}: numbers[{i}]"
        if not isinstance(n, dict):
            raise DataFileError(f"{where}: expected a mapping")
        if set(n) - _NUM:
            raise DataFileError(f"{where}: unknown key(s) {sorted(set(n) - _NUM)}; allowed: {sorted(_NUM)}")
        for k in ("id", "source", "quantity", "value"):
            if not isinstance(n.get(k), str) or not n[k].strip():
                raise DataFileError(f"{where} ({n.get('id')!r}): {k!r} must be a non-empty string"
                                    + (" (quote printed values)" if k == "value" else ""))
        if not _NUMBER_ID.match(n["id"]):
            raise DataFileError(f"{where}: id {n['id']!r} must be lower case letters, digits, '-' and '.'")
        if n["id"] in numbers:
            raise DataFileError(f"{where}: duplicate id {n['id']!r}")
        try:
            parse_printed(n["value"])
        except DataFileError as exc:
            raise DataFileError(f"{where} ({n['id']}): {exc}") from None
        for k in ("not_recoverable", "note"):
            if k in n and (not isinstance(n[k], str) or not n[k].strip()):
                raise DataFileError(f"{where} ({n['id']}): {k!r} must be a non-empty string when given")
        kind = n.get("kind", "printed")
        if kind not in KINDS:
            raise DataFileError(f"{where} ({n['id']}): kind {kind!r} must be one of {list(KINDS)} (printed: the "
                                "paper prints it; derived: we derive it from printed numbers)")
        numbers[n["id"]] = Number(n["id"], n["source"].strip(), n["quantity"].strip(), n["value"].strip(),
                                  n.get("not_recoverable", "").strip(), n.get("note", "").strip(), kind)
    inputs = doc.get("inputs") or {}
    if not isinstance(inputs, dict):
        raise DataFileError(f"{p}: 'inputs' must be a mapping")
    contra = doc.get("contradictions") or []
    if not isinstance(contra, list):
        raise DataFileError(f"{p}: 'contradictions' must be a list")
    for i, c in enumerate(contra):
        if not isinstance(c, dict) or set(c) != set(_CONTRA) or not all(isinstance(c[k], str) for k in _CONTRA):
            raise DataFileError(f"{p}: contradictions[{i}] needs exactly the string keys {list(_CONTRA)}")
    return Paper(id=pid, citation=" ".join(doc["citation"].split()), numbers=numbers, url=doc.get("url", "") or "",
                 short=doc.get("short", "") or "", inputs=inputs,
                 contradictions=tuple({k: c[k] for k in _CONTRA} for c in contra), path=str(p))


@cache
def _load(path: str, mtime: float) -> Paper:
    return validate_paper_file(path)


def load_paper(paper_id: str) -> Paper:
    """Read the data file of one paper, checked against the schema.

    Parameters
    ----------
    paper_id : str
        The canonical id; the file is ``data/published/<paper_id>.yaml`` (the project's, else the toolkit's).

    Returns
    -------
    Paper
        The paper's numbers, inputs and contradictions.

    Raises
    ------
    DataFileError
        No such file, or it does not fit the schema (the message names the file and the entry).
    """
    p = published_dir() / f"{paper_id}.yaml"
    if not p.exists():
        raise DataFileError(f"{p}: no data file for paper {paper_id!r}; known papers: {paper_ids()}")
    return _load(str(p), p.stat().st_mtime)
