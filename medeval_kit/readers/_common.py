"""Shared machinery of the format readers: the result object, drop accounting, located errors.

Every reader walks the records of one file, builds plain row dicts, and hands them to
:class:`Tally`, which counts what was read, what was dropped and why, and turns the rows into
validated tidy tables (:func:`medeval_kit.schemas.validate`). Nothing is dropped silently: each
drop has a reason that :meth:`ReadResult.summary` prints with its count and the first location.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medeval_kit.readers._limits import (
    ReaderError,
    iter_json_lines,
    json_limit,
    parse_json,
    read_file_bounded,
)
from medeval_kit.schemas import SCHEMAS, _validate

__all__ = ["ReaderError", "ReadResult", "Tally", "stable_id", "load_json", "load_records", "iter_records", "need_int",
           "TABLES"]

TABLES = ("judgments", "annotations", "items", "responses")


def where_error(source: str, where: str, field_name: str | None, problem: str) -> ReaderError:
    """Build the error for a broken record: ``FILE: line 3: field 'g1_winner': problem``."""
    fld = f": field {field_name!r}" if field_name else ""
    return ReaderError(f"{source}: {where}{fld}: {problem}")


def stable_id(*parts: Any, n: int = 10) -> str:
    """A short, stable content hash (SHA-1 hex prefix) of ``parts``, for files without ids."""
    text = "\x1f".join(p if isinstance(p, str) else json.dumps(p, sort_keys=True, default=str) for p in parts)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:n]


def is_missing(v: Any) -> bool:
    """True for None and float NaN (JSON null / NaN)."""
    return v is None or (isinstance(v, float) and math.isnan(v))


# --------------------------------------------------------------------------- file reading
def _check_file(p: Path) -> None:
    if p.is_dir():
        raise ReaderError(f"{p}: is a folder, not a file; pass the results file inside it")
    if not p.exists():
        raise ReaderError(f"{p}: file not found")


def load_json(path: str | Path, max_bytes: int | None = None) -> Any:
    """Parse a whole JSON file of at most ``max_bytes`` (see :func:`~medeval_kit.readers._limits.json_limit`).

    A malformed, non-UTF-8, too deeply nested or too large file raises :class:`ReaderError`.
    """
    p = Path(path)
    _check_file(p)
    data = read_file_bounded(p, json_limit(max_bytes))
    if not data.strip():
        raise ReaderError(f"{p}: the file is empty")
    return parse_json(data, str(p))


def _first_byte(p: Path, limit: int) -> bytes:
    """The first non-blank byte of ``p`` (b"" for a blank file), reading at most ``limit`` bytes."""
    with p.open("rb") as f:
        seen = 0
        while seen <= limit:
            chunk = f.read(65536)
            if not chunk:
                return b""
            seen += len(chunk)
            s = chunk.lstrip()
            if s:
                return s[:1]
    raise ReaderError(f"{p}: more than max_json_bytes={limit} of blank space")


def iter_records(path: str | Path, max_bytes: int | None = None) -> Iterator[tuple[str, dict]]:
    """Yield ``(where, record)`` from a JSON array of objects or a JSON-lines file.

    The layout is recognised from the content, not the suffix (AlpacaEval writes ``.json`` arrays,
    FastChat ``.jsonl`` lines, Hugging Face exports either). ``where`` is ``"record N"`` (1-based) in
    an array and ``"line N"`` in a JSON-lines file; errors name it. A JSON-lines file is streamed one
    line at a time (each line at most ``max_bytes``); an array is parsed whole (at most ``max_bytes``).
    """
    p = Path(path)
    _check_file(p)
    limit = json_limit(max_bytes)
    first = _first_byte(p, limit)
    if not first:
        raise ReaderError(f"{p}: the file is empty")
    if first == b"[":
        data = parse_json(read_file_bounded(p, limit), str(p))
        if not isinstance(data, list):
            raise ReaderError(f"{p}: expected a JSON array of records, got {type(data).__name__}")
        for i, rec in enumerate(data, start=1):
            if not isinstance(rec, dict):
                raise ReaderError(f"{p}: record {i} is a JSON {type(rec).__name__}, expected an object")
            yield f"record {i}", rec
        return
    try:
        for lineno, rec in iter_json_lines(p, limit):
            if not isinstance(rec, dict):
                raise ReaderError(f"{p}: line {lineno} is a JSON {type(rec).__name__}, expected an object")
            yield f"line {lineno}", rec
    except ReaderError as exc:
        if first == b"{" and str(exc).startswith(f"{p}: line 1 is not valid JSON"):
            _one_object(p, limit)
        raise


def _one_object(p: Path, limit: int) -> None:
    """Line 1 is not JSON: say so plainly when the file is one pretty-printed JSON object."""
    try:
        obj = parse_json(read_file_bounded(p, limit), str(p))
    except ReaderError:
        return
    if isinstance(obj, dict):
        raise ReaderError(f"{p}: holds one JSON object, expected JSON lines or an array of "
                          f"records (keys: {sorted(obj)[:8]}); is this the right format?") from None


def load_records(path: str | Path, max_bytes: int | None = None) -> list[tuple[str, dict]]:
    """All of :func:`iter_records` as a list (small files; readers stream with :func:`iter_records`)."""
    return list(iter_records(path, max_bytes))


# --------------------------------------------------------------------------- field access
_MISSING = object()


def need(rec: Mapping, key: str, source: str, where: str, kinds: type | tuple[type, ...] | None = None,
         *, nullable: bool = False, prefix: str = "") -> Any:
    """Return ``rec[key]``; a missing key or a value of the wrong JSON type raises a located error."""
    name = prefix + key
    if not isinstance(rec, Mapping):
        raise where_error(source, where, prefix.rstrip(".") or None,
                          f"expected a JSON object, got {type(rec).__name__}")
    v = rec.get(key, _MISSING)
    if v is _MISSING:
        raise where_error(source, where, name, f"missing (the record has {sorted(map(str, rec))[:12]})")
    if v is None:
        if nullable:
            return None
        raise where_error(source, where, name, "is null")
    if kinds is not None:
        ok = isinstance(v, kinds) and not (isinstance(v, bool) and bool not in _as_tuple(kinds))
        if not ok:
            want = " or ".join(_json_kind(k) for k in _as_tuple(kinds))
            raise where_error(source, where, name, f"expected {want}, got {_json_kind(type(v))} {_short(v)}")
    return v


def need_int(rec: Mapping, key: str, source: str, where: str, lo: int, hi: int, *, what: str = "") -> int:
    """``rec[key]`` as an integer in ``lo..hi``; a wrong type or a value out of range is a located error."""
    v = need(rec, key, source, where, int)
    if not lo <= v <= hi:
        raise where_error(source, where, key, f"expected {what or f'an integer in {lo}..{hi}'}, got {_short(v)}")
    return v


def _as_tuple(k) -> tuple:
    return k if isinstance(k, tuple) else (k,)


def _json_kind(t: type) -> str:
    return {str: "a string", int: "an integer", float: "a number", bool: "true/false", list: "a list",
            dict: "an object", type(None): "null"}.get(t, t.__name__)


def _short(v: Any, n: int = 60) -> str:
    s = repr(v)
    return s if len(s) <= n else s[: n - 3] + "..."


def as_text(v: Any) -> str | None:
    """A model output as text: strings as they are, JSON values dumped, null stays None."""
    if is_missing(v):
        return None
    if isinstance(v, str):
        return v
    return json.dumps(v, ensure_ascii=False, sort_keys=True)


def n_words(text: str | None) -> float:
    """Whitespace-token length (the convention of :func:`medeval_kit.bias.response_lengths`)."""
    return float("nan") if text is None else float(len(text.split()))


# --------------------------------------------------------------------------- result
@dataclass(frozen=True, eq=False)
class ReadResult:
    """The tidy tables read from one file of another tool, with what was read and dropped.

    ``judgments``, ``annotations``, ``items`` and ``responses`` are validated tables or ``None``
    when the file does not hold that kind of data. It carries tables and counts, not statistics:
    :meth:`to_frame` is its counts table.

    Parameters
    ----------
    format : str
        The format name (:data:`medeval_kit.readers.FORMATS`).
    source : str
        The file read.
    primary : str
        The table an analysis command needs by default (:meth:`table`).
    judgments, annotations, items, responses : DataFrame, optional
        The validated tidy tables; ``None`` when the file holds no such data.
    n_records : int, default 0
        Records read.
    record_unit : str, default "records"
        What a record is (``"samples"``, ``"votes"`` ...).
    dropped : tuple of (str, int, str)
        ``(reason, count, first location)`` of what was dropped.
    notes : tuple of str
        Anything a reader of the tables must know.
    reader : str, default ""
        The implementation used (e.g. ``"inspect_ai"``), when there is a choice.
    """

    format: str
    source: str
    primary: str
    judgments: pd.DataFrame | None = None
    annotations: pd.DataFrame | None = None
    items: pd.DataFrame | None = None
    responses: pd.DataFrame | None = None
    n_records: int = 0
    record_unit: str = "records"
    dropped: tuple[tuple[str, int, str], ...] = ()
    notes: tuple[str, ...] = ()
    reader: str = ""

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables this file produced, by name (only those with rows)."""
        return {t: getattr(self, t) for t in TABLES if getattr(self, t) is not None}

    @property
    def n_dropped(self) -> int:
        """Records (or parts of records) dropped, summed over reasons."""
        return sum(n for _, n, _ in self.dropped)

    def table(self, name: str | None = None) -> pd.DataFrame:
        """Return the table ``name`` (default: :attr:`primary`); raise :class:`ReaderError` if absent."""
        name = name or self.primary
        if name not in TABLES:
            raise ValueError(f"table must be one of {TABLES}; not {name!r}")
        df = getattr(self, name)
        if df is None:
            have = sorted(self.tables) or ["none"]
            why = ""
            if name == self.primary and self.dropped:
                why = " (every record was dropped: " + "; ".join(f"{r} x{n}" for r, n, _ in self.dropped) + ")"
            raise ReaderError(f"{self.source}: the {self.format} reader found no {name} rows in this file{why}; "
                              f"tables available: {', '.join(have)}")
        return df

    def to_frame(self) -> pd.DataFrame:
        """One tidy row per count: ``kind`` (records, table, dropped), ``name``, ``n``, ``where``.

        Returns
        -------
        DataFrame
            The counts (a description of the read, not a statistic).
        """
        rows = [{"kind": "records", "name": self.record_unit, "n": self.n_records, "where": ""}]
        rows += [{"kind": "table", "name": t, "n": len(df), "where": ""} for t, df in self.tables.items()]
        rows += [{"kind": "dropped", "name": r, "n": n, "where": w} for r, n, w in self.dropped]
        return pd.DataFrame(rows)

    def summary(self) -> str:
        """A short report: records read, rows produced per table (with parse status), drops with reasons."""
        lines = [f"{self.format}: {self.source}" + (f" (read with {self.reader})" if self.reader else ""),
                 f"  read {self.n_records} {self.record_unit}"]
        for t, df in self.tables.items():
            extra = ""
            if t == "judgments" and "parse_status" in df.columns:
                c = df["parse_status"].value_counts()
                extra = " (" + ", ".join(f"{int(c.get(s, 0))} {s}" for s in ("ok", "failed", "missing")
                                         if c.get(s, 0)) + ")"
            elif t == "annotations" and "label" in df.columns:
                n_na = int(df["label"].isna().sum())
                kinds = df["rater_kind"].value_counts().to_dict() if "rater_kind" in df.columns else {}
                parts = [f"{int(v)} {k}" for k, v in sorted(kinds.items())]
                if n_na:
                    parts.append(f"{n_na} without a label")
                extra = " (" + ", ".join(parts) + ")" if parts else ""
            lines.append(f"  {t}: {len(df)} rows{extra}")
        if not self.tables:
            lines.append("  no rows produced")
        if self.dropped:
            lines.append(f"  dropped {self.n_dropped}:")
            for r, n, w in self.dropped:
                lines.append(f"    {n} x {r}" + (f" (first: {w})" if w else ""))
        else:
            lines.append("  dropped 0")
        for note in self.notes:
            lines.append(f"  note: {note}")
        return "\n".join(lines)

    def __repr__(self) -> str:  # pragma: no cover - convenience
        return f"<ReadResult {self.format} {self.source}: " + ", ".join(
            f"{t}={len(df)}" for t, df in self.tables.items()) + f", dropped={self.n_dropped}>"

    def _repr_html_(self) -> str:  # pragma: no cover - notebooks
        import html

        return "<pre>" + html.escape(self.summary()) + "</pre>"


# --------------------------------------------------------------------------- accounting
def _record_columns(rows: list[dict]) -> dict[str, list]:
    """Row dicts -> a list per column, columns in the order first seen; a key missing from a row is NaN, as in
    ``pd.DataFrame(rows)``."""
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(r))
    nan = np.nan
    return {k: [r.get(k, nan) for r in rows] for k in keys}


def _typed_column(values: list | pd.Series, kind: str | None, index: pd.Index) -> pd.Series:
    """One column as the schema's ``kind`` wants it: text as Python objects with None where missing (no string
    dtype is inferred: that would copy every string, and text cells stay objects), ``int`` as int64, ``float`` as
    float64 (what is not a number becomes NaN), anything else as pandas infers it. Every column of a table gets
    the same ``index`` object, so building the DataFrame aligns nothing."""
    if kind in ("str", "label"):
        shared = isinstance(values, pd.Series)  # its array may be the caller's: copied before it is changed
        # fromiter, not v[:] = values: a cell holding a list stays one object
        v = values.to_numpy(dtype=object) if shared else np.fromiter(values, dtype=object, count=len(values))
        na = pd.isna(v)
        if na.any():
            if shared:
                v = v.copy()
            v[na] = None
        return pd.Series(v, index=index, dtype=object, copy=False)
    s = pd.Series(values.array if isinstance(values, pd.Series) else values, index=index, copy=False)
    if kind == "int":
        return pd.Series(s.astype(np.int64).to_numpy(), index=index, copy=False)
    if kind == "float":
        return pd.Series(pd.to_numeric(s, errors="coerce").astype(float).to_numpy(), index=index, copy=False)
    return s


@dataclass
class Tally:
    """Counts records and drops while a reader walks a file, then builds validated tables."""

    format: str
    source: str
    record_unit: str = "records"
    n_records: int = 0
    _drops: dict[str, list] = field(default_factory=dict)
    _notes: list[str] = field(default_factory=list)

    def record(self, n: int = 1) -> None:
        self.n_records += n

    def drop(self, reason: str, where: str, n: int = 1) -> None:
        """Count ``n`` dropped records (or parts) under ``reason``; keep the first location."""
        slot = self._drops.setdefault(reason, [0, where])
        slot[0] += n

    def note(self, text: str) -> None:
        if text not in self._notes:
            self._notes.append(text)

    def frame(self, rows: list[dict] | Columns | Mapping[str, Any], table: str, *, columns: Sequence[str] = (),
              categories: Mapping[str, Iterable] | None = None) -> pd.DataFrame | None:
        """Rows (dicts, :class:`Columns`, or a mapping column -> values) -> a validated tidy table
        (``None`` when there are no rows). Column order: schema, then ``columns``."""
        if isinstance(rows, Columns):
            if not rows.n:
                return None
            cols: dict[str, list | pd.Series] = rows.cols
            rows.cols, rows._memo = {}, {}  # the table owns the values now
        elif isinstance(rows, Mapping):
            df = pd.DataFrame(rows)
            if df.empty:
                return None
            cols = {c: df[c] for c in df.columns}
        elif not rows:
            return None
        else:
            cols = _record_columns(rows)
        schema = SCHEMAS[table]
        kinds = {c.name: c.kind for c in schema.columns}
        for c in schema.columns:
            if c.required and c.name not in cols:
                raise AssertionError(f"reader bug: {table} row without {c.name}")
        order = [c.name for c in schema.columns if c.name in cols]
        order += [c for c in columns if c in cols and c not in order]
        order += [c for c in cols if c not in order]
        # Built once from converted columns: a DataFrame of the raw rows first, then a converted copy, cost twice
        # as much on the small tables most files give. Each list is let go once converted (a streamed file's
        # columns are most of the reader's memory).
        index = pd.RangeIndex(len(cols[order[0]]))
        data = {}
        for name in order:
            data[name] = _typed_column(cols.pop(name), "label" if name == "label" else kinds.get(name), index)
        df = pd.DataFrame(data, index=index, copy=False)
        return _validate(df, table, source=self.source, categories=categories, columns=data)

    def result(self, primary: str, reader: str = "", **tables: pd.DataFrame | None) -> ReadResult:
        dropped = tuple((r, int(n), w) for r, (n, w) in self._drops.items())
        return ReadResult(format=self.format, source=self.source, primary=primary, n_records=self.n_records,
                          record_unit=self.record_unit, dropped=dropped, notes=tuple(self._notes),
                          reader=reader, **tables)


class Columns:
    """Rows kept column by column: a list per column instead of a dict per row, and short strings
    shared (interned), so a streamed file of millions of rows stays small in memory.

    ``add(row)`` takes one row dict (a column missing from a row is ``None``); :meth:`Tally.frame`
    accepts a ``Columns`` wherever it accepts a list of row dicts.
    """

    _SHORT = 200  # strings up to this length are shared: ids, names, labels (not judgment texts)

    def __init__(self) -> None:
        self.cols: dict[str, list] = {}
        self.n = 0
        self._memo: dict[str, str] = {}

    def __len__(self) -> int:
        return self.n

    def add(self, row: Mapping[str, Any]) -> None:
        """Append one row."""
        memo, n = self._memo, self.n
        for k, v in row.items():
            col = self.cols.get(k)
            if col is None:
                col = self.cols[k] = [None] * n
            if type(v) is str and len(v) <= self._SHORT:
                v = memo.setdefault(v, v)
            col.append(v)
        self.n = n + 1
        for col in self.cols.values():
            if len(col) == n:
                col.append(None)

    def number_repeats(self, key: Sequence[str], *, field_name: str = "repeat") -> int:
        """:func:`number_repeats` on the columns: 0, 1, 2 ... per ``key`` in row order."""
        seen: Counter = Counter()
        out, n = [], 0
        for k in zip(*(self.cols[c] for c in key)):
            out.append(seen[k])
            n += seen[k] > 0
            seen[k] += 1
        self.cols[field_name] = out if self.n else []
        return n


def number_repeats(rows: list[dict], key: Sequence[str], *, field_name: str = "repeat") -> int:
    """Number rows that share ``key`` 0, 1, 2 ... in file order; return how many got a repeat > 0."""
    seen: Counter = Counter()
    n = 0
    for r in rows:
        k = tuple(r[c] for c in key)
        r[field_name] = seen[k]
        if seen[k]:
            n += 1
        seen[k] += 1
    return n
