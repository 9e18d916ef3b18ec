"""One type for a printed number beside ours, one rule for its status, and the paper data files.

The rule
--------
A number is **reproduced** when ours rounds to the value *as the paper prints it*, at the printed
precision. The printed string decides the precision:

* ``"0.85"``: two decimals; ours is reproduced when ``|ours - 0.85| <= 0.005`` (so 0.846 and
  0.852 are, 0.844 is not). A value exactly half a unit away counts as reproduced, whatever
  rounding convention the paper used (half up or half to even).
* ``"105"`` (no decimal point, no ``%``): an integer, a count; ours must equal it exactly.
* ``"87.5%"``: a percentage. Ours is the share (0.875); it is multiplied by 100 and compared at
  the printed decimals (here one, so 87.45 to 87.55). ``"65%"`` compares ours x 100 at zero
  decimals (64.5 to 65.5).
* A leading ``+`` or ``-`` is part of the number (``"-0.0636"``, ``"+16.29%"``).

Otherwise the number **differs**, with a reason (ours at the printed precision, and why where we
know), or it is **not recoverable** with a reason: ours is None or NaN because the public data
cannot give it. There are no other statuses and no tolerances.

The data
--------
Every printed number a study checks lives in ``data/published/<paper-id>.yaml`` (one file per
paper: ``id``, ``citation``, ``numbers``, and optionally ``url``, ``short``, ``inputs``,
``contradictions``, ``notes``). See :func:`load_paper`; :func:`validate_paper_file` is the schema.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from medeval_kit.errors import DataFileError

__all__ = [
    "STATUSES",
    "COLUMNS",
    "Printed",
    "parse_printed",
    "rounds_to",
    "truncates_to",
    "decide",
    "Published",
    "Number",
    "Paper",
    "published_dir",
    "paper_ids",
    "load_paper",
    "validate_paper_file",
    "to_frame",
]

STATUSES = ("reproduced", "differs", "not recoverable")
COLUMNS = ["paper", "source", "quantity", "published", "ours", "status", "note"]

_PRINTED = re.compile(r"^([+-]?)(\d+)(?:\.(\d+))?(%?)$")
_PAPER_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*-(?:19|20)\d\d$")
_NUMBER_ID = re.compile(r"^[a-z0-9]+(?:[-.][a-z0-9]+)*$")


# --------------------------------------------------------------------------- the rule


@dataclass(frozen=True)
class Printed:
    """A number as a paper prints it: its value, decimals and whether it is a percentage."""

    text: str
    number: float
    decimals: int
    percent: bool

    @property
    def integer(self) -> bool:
        """A count: printed without a decimal point or a percent sign; ours must equal it."""
        return not self.percent and self.decimals == 0

    def scale(self, ours: float) -> float:
        """Ours on the printed scale (a share x 100 for a percentage)."""
        return float(ours) * 100.0 if self.percent else float(ours)

    def show(self, ours: float) -> str:
        """Ours written like the printed value (same decimals, ``%`` when printed with one)."""
        x = self.scale(ours)
        if self.integer:
            return f"{x:g}" if x != int(x) else str(int(x))
        return f"{x:.{self.decimals}f}" + ("%" if self.percent else "")


def parse_printed(text: str) -> Printed:
    """Parse a printed value (``"0.85"``, ``"105"``, ``"87.5%"``, ``"-0.0636"``).

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


def rounds_to(value: str | Printed, ours: float) -> bool:
    """True when ``ours`` rounds to the printed ``value`` at its printed precision (see the module doc)."""
    p = value if isinstance(value, Printed) else parse_printed(value)
    x = p.scale(ours)
    if p.integer:
        return abs(x - p.number) <= 1e-9 * max(1.0, abs(p.number))
    half = 0.5 * 10.0 ** (-p.decimals)
    return abs(x - p.number) <= half * (1 + 1e-9)


def truncates_to(value: str | Printed, ours: float) -> bool:
    """True when ``ours`` cut (not rounded) at the printed decimals gives the printed value.

    Not a status: a status is decided by :func:`rounds_to` alone. This only helps to say *why* a
    number differs (e.g. printed 0.571428 for 4/7 = 0.5714286).
    """
    p = value if isinstance(value, Printed) else parse_printed(value)
    x = p.scale(ours)
    unit = 10.0 ** (-p.decimals)
    cut = math.trunc(round(x / unit, 6)) * unit
    return abs(cut - p.number) <= unit * 1e-6


def decide(value: str, ours: float | None) -> str:
    """The status of a printed ``value`` against ``ours``: reproduced, differs or not recoverable.

    >>> decide("0.85", 0.846), decide("0.85", 0.844), decide("105", 105.0), decide("0.85", float("nan"))
    ('reproduced', 'differs', 'reproduced', 'not recoverable')
    """
    p = parse_printed(value)
    if _missing(ours):
        return "not recoverable"
    return "reproduced" if rounds_to(p, ours) else "differs"


@dataclass(frozen=True)
class Published:
    """A number a paper prints, beside ours, with its status by the one rule and the reason.

    Build it with :meth:`check` (or :meth:`Paper.check`); the constructor refuses a status that
    the rule does not give, and a ``differs`` or ``not recoverable`` without a reason.
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

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"{self.paper}/{self.id}: unknown status {self.status!r}; use one of {STATUSES}")
        expected = decide(self.value, self.ours)
        if self.status != expected:
            raise ValueError(f"{self.paper}/{self.id}: status {self.status!r} but the rule gives {expected!r} "
                             f"(printed {self.value}, ours {self.ours!r})")
        if self.status != "reproduced" and not self.reason.strip():
            raise ValueError(f"{self.paper}/{self.id}: a {self.status!r} number needs a reason")

    @classmethod
    def check(cls, paper: str, id: str, source: str, quantity: str, value: str, ours: float | None, *,
              why: str = "", note: str = "") -> Published:
        """Decide the status of ``value`` against ``ours`` and build the reason.

        ``why`` explains a difference or a missing value (required when ours is None/NaN);
        ``note`` is context shown whatever the status (n, CI, how ours was computed).
        """
        p = parse_printed(value)
        ours = None if _missing(ours) else float(ours)
        status = decide(value, ours)
        if status == "not recoverable":
            if not why.strip():
                raise ValueError(f"{paper}/{id}: ours is missing; say why it is not recoverable (why=...)")
            reason = why
        elif status == "differs":
            reason = f"ours rounds to {p.show(ours)}, printed {p.text}" + (f"; {why}" if why else "")
        else:
            reason = ""
        return cls(paper, id, source, quantity, p.text, ours, status, reason, note)

    def to_row(self) -> dict:
        """One row of the published-numbers table (``COLUMNS``); ``note`` = reason, then context."""
        note = "; ".join(s for s in (self.reason, self.note) if s)
        return {"paper": self.paper, "source": self.source, "quantity": self.quantity, "published": self.value,
                "ours": float("nan") if self.ours is None else self.ours, "status": self.status, "note": note}


def to_frame(rows: Iterable[Published]) -> pd.DataFrame:
    """The published-numbers table: paper, source, quantity, published (as printed), ours, status, note."""
    out = pd.DataFrame([r.to_row() for r in rows], columns=COLUMNS)
    out["ours"] = out["ours"].astype(float)
    return out


# --------------------------------------------------------------------------- the data files


@dataclass(frozen=True)
class Number:
    """One printed number of a paper data file."""

    id: str
    source: str
    quantity: str
    value: str
    not_recoverable: str = ""
    note: str = ""


@dataclass(frozen=True)
class Paper:
    """A paper data file: canonical id, citation, printed numbers, printed inputs and contradictions."""

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

    def check(self, number_id: str, ours: float | None = None, *, why: str = "", note: str = "") -> Published:
        """Ours against this paper's printed number ``number_id``.

        A number the file marks ``not_recoverable`` takes that reason and must get ``ours=None``
        (say what the public data does give in ``note``).
        """
        n = self.number(number_id)
        if n.not_recoverable:
            if not _missing(ours):
                raise ValueError(f"{self.path}: {number_id} is marked not recoverable but ours = {ours!r}; "
                                 "put an analogue in the note instead")
            why = n.not_recoverable + (f"; {why}" if why else "")
        note = "; ".join(s for s in (n.note, note) if s)
        return Published.check(self.id, n.id, n.source, n.quantity, n.value, ours, why=why, note=note)

    def contradictions_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"paper": self.id, **c} for c in self.contradictions],
                            columns=["paper", "where", "says", "but", "consequence"])


def published_dir() -> Path:
    """The folder of the paper data files (:func:`medeval_kit.paths.published_dir`)."""
    from medeval_kit import paths

    return paths.published_dir()


def paper_ids(folder: str | Path | None = None) -> list[str]:
    """The canonical paper ids that have a data file."""
    d = Path(folder) if folder else published_dir()
    return sorted(p.stem for p in d.glob("*.yaml"))


_TOP = {"id", "citation", "url", "short", "numbers", "inputs", "contradictions", "notes"}
_NUM = {"id", "source", "quantity", "value", "not_recoverable", "note"}
_CONTRA = ("where", "says", "but", "consequence")


def validate_paper_file(path: str | Path) -> Paper:
    """Read and check one paper data file; errors name the file and the entry."""
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
        numbers[n["id"]] = Number(n["id"], n["source"].strip(), n["quantity"].strip(), n["value"].strip(),
                                  n.get("not_recoverable", "").strip(), n.get("note", "").strip())
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
    """The data file of one paper (``data/published/<paper_id>.yaml``), checked against the schema."""
    p = published_dir() / f"{paper_id}.yaml"
    if not p.exists():
        raise DataFileError(f"{p}: no data file for paper {paper_id!r}; known papers: {paper_ids()}")
    return _load(str(p), p.stat().st_mtime)
