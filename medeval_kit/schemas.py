"""Tidy, long-format tables shared by every analysis, and their validation.

Five tables carry all data through medeval_kit. Each is a long DataFrame, one row per
observation; extra columns are allowed and kept. ``validate(df, "annotations")`` checks a
frame against its schema and raises :class:`SchemaError` naming the table, the column and
the offending rows. Nothing is coerced: a wrong dtype is an error, not a silent cast.

=============  ==============================================================================
table          one row per ...
=============  ==============================================================================
items          question or case (``item``, ``dataset``; optional text columns)
responses      model output for an item (``item``, ``model``, ``repeat``, ``text``)
judgments      one judge call's verdict on one criterion in one presentation order and repeat
annotations    label that one rater (human or llm) gave one item on one criterion
rounds         score of one aspect of one component in one refinement round of one item
=============  ==============================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from medeval_kit import plugins
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import SchemaError

__all__ = [
    "Column",
    "Schema",
    "SCHEMAS",
    "validate",
    "PARSE_STATUSES",
    "PROTOCOLS",
    "RATER_KINDS",
    "protocols",
]

PARSE_STATUSES = ("ok", "failed", "missing")
"""``ok``: verdict parsed; ``failed``: raw text kept, nothing parsed; ``missing``: no call made."""


def protocols() -> tuple[str, ...]:
    """The judge protocols the ``judgments`` table accepts, read from the protocol registry now.

    Every registered protocol counts: the built-in ones, ``@protocol`` in your own code and plugins of the
    ``medeval_kit.protocols`` entry-point group, whatever was imported before (see :mod:`medeval_kit.plugins`).

    Returns
    -------
    tuple of str
        The protocol names, in registration order.
    """
    return plugins.registered(plugins.PROTOCOLS)


PROTOCOLS = plugins.LiveNames(plugins.PROTOCOLS)
"""Deprecated: use :func:`protocols`. A read-only view of the same names, read at each use."""
RATER_KINDS = ("human", "llm")

_KINDS = ("str", "int", "float", "bool", "any")


@dataclass(frozen=True)
class Column:
    """One column of a schema: its name, kind, and whether it may be absent or hold NA.

    Parameters
    ----------
    name : str
        The canonical column name.
    kind : {"str", "int", "float", "bool", "any"}, default "any"
        The values' type; a wrong dtype is an error, never a silent cast.
    required : bool, default True
        Whether the column must be present.
    nullable : bool, default False
        Whether it may hold NA.
    allowed : tuple, optional
        The values it may hold; any when omitted.
    doc : str
        What it holds, for :meth:`Schema.describe`.
    registry : str, optional
        An entry-point group of :mod:`medeval_kit.plugins` (e.g. ``medeval_kit.protocols``): the allowed
        values are the names registered there when :func:`validate` runs (``allowed`` is then None).
    """

    name: str
    kind: str = "any"
    required: bool = True
    nullable: bool = False
    allowed: tuple | None = None
    doc: str = ""
    registry: str | None = None
    """An entry-point group of :mod:`medeval_kit.plugins` (e.g. ``medeval_kit.protocols``): the allowed
    values are the names registered there when :func:`validate` runs (``allowed`` is then None)."""

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"Column kind must be one of {_KINDS}; not {self.kind!r}.")
        if self.registry is not None and self.allowed is not None:
            raise ValueError(f"Column {self.name!r}: give allowed values or a registry, not both.")

    def allowed_values(self) -> tuple | None:
        """The values the column may hold (read from its registry now), or None when any value is allowed."""
        return plugins.registered(self.registry) if self.registry is not None else self.allowed


@dataclass(frozen=True)
class Schema:
    """A named table layout: columns, the unique key, and a one-line description.

    Parameters
    ----------
    name : str
        The table's name (``annotations``, ``judgments`` ...).
    columns : tuple of Column
        Its columns; extra columns are allowed in a table and kept.
    key : tuple of str
        The columns that identify a row (no duplicates allowed).
    doc : str
        One line on what a row is.
    """

    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    doc: str = ""
    _by_name: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {c.name: c for c in self.columns})

    def __getitem__(self, name: str) -> Column:
        return self._by_name[name]

    @property
    def required(self) -> list[str]:
        """Names of the columns that must be present."""
        return [c.name for c in self.columns if c.required]

    def describe(self) -> pd.DataFrame:
        """Return the schema as a DataFrame (column, kind, required, nullable, allowed, doc)."""
        return pd.DataFrame(
            [
                {
                    "column": c.name,
                    "kind": c.kind,
                    "required": c.required,
                    "nullable": c.nullable,
                    "allowed": ", ".join(map(str, c.allowed_values() or ())),
                    "doc": c.doc,
                }
                for c in self.columns
            ]
        )


def _c(name, kind="any", required=True, nullable=False, allowed=None, doc=""):
    return Column(name, kind, required, nullable, tuple(allowed) if allowed else None, doc)


SCHEMAS: dict[str, Schema] = {
    s.name: s
    for s in [
        Schema(
            "items",
            (
                _c("item", "str", doc="unique item id"),
                _c("dataset", "str", doc="dataset the item comes from"),
                _c("question", "str", required=False, nullable=True, doc="question or instruction text"),
                _c("context", "str", required=False, nullable=True, doc="case, note or document text"),
                _c("answer", "str", required=False, nullable=True, doc="reference answer"),
            ),
            key=("item",),
            doc="the questions or cases",
        ),
        Schema(
            "responses",
            (
                _c("item", "str"),
                _c("model", "str", doc="model that produced the text"),
                _c("repeat", "int", doc="sample index, 0-based"),
                _c("text", "str", nullable=True, doc="the output; NA when the call failed"),
            ),
            key=("item", "model", "repeat"),
            doc="model outputs",
        ),
        Schema(
            "judgments",
            (
                _c("item", "str"),
                _c("judge", "str", doc="judge model or rater id"),
                Column("protocol", "str", doc="a registered judge protocol", registry=plugins.PROTOCOLS),
                _c("criterion", "str"),
                _c("order", "str", doc="presentation order, e.g. 'AB' or 'BA'"),
                _c("repeat", "int"),
                _c("raw", "str", nullable=True, doc="raw judge output, kept even when unparseable"),
                _c("verdict", "str", required=False, nullable=True, doc="parsed categorical verdict"),
                _c("score", "float", required=False, nullable=True, doc="parsed numeric score"),
                _c("parse_status", "str", allowed=PARSE_STATUSES),
            ),
            key=("item", "judge", "protocol", "criterion", "order", "repeat"),
            doc="LLM-judge outputs, one row per call and criterion",
        ),
        Schema(
            "annotations",
            (
                _c("item", "str"),
                _c("rater", "str"),
                _c("rater_kind", "str", allowed=RATER_KINDS),
                _c("criterion", "str"),
                _c("label", "any", nullable=True, doc="the label; NA = rater gave none"),
            ),
            key=("item", "rater", "criterion"),
            doc="labels by human and LLM raters",
        ),
        Schema(
            "rounds",
            (
                _c("item", "str"),
                _c("round", "int", doc="refinement round, 1 = initial draft"),
                _c("component", "str", doc="e.g. context, question, answer, distractors, reasoning"),
                _c("aspect", "str", doc="rubric aspect, or 'total' for the component score"),
                _c("score", "float", nullable=True, doc="NA when the critique could not be parsed"),
                _c("max_score", "float", nullable=True),
                _c("stop", "bool", doc="the run stopped after this round"),
                _c("best", "bool", doc="this round was selected as the output"),
            ),
            key=("item", "round", "component", "aspect"),
            doc="round-wise scores of iterative refinement",
        ),
    ]
}


def _kind_ok(series: pd.Series, notna: np.ndarray, kind: str) -> np.ndarray:
    """Return a boolean array: True where the value is missing or matches ``kind``.

    Works on the column's values, not through pandas operations: readers validate many small tables, where
    each pandas call costs more than the check itself.
    """
    dtype = series.dtype
    if kind == "any":
        return np.ones(len(series), dtype=bool)
    if kind == "str":
        if ptypes.is_string_dtype(dtype) and not ptypes.is_object_dtype(dtype):
            return np.ones(len(series), dtype=bool)
        return _instances(series, str) | ~notna
    if kind == "int":
        if ptypes.is_integer_dtype(dtype) and not ptypes.is_bool_dtype(dtype):
            return np.ones(len(series), dtype=bool)
        return ~notna
    if kind == "float":
        if ptypes.is_numeric_dtype(dtype) and not ptypes.is_bool_dtype(dtype):
            return np.ones(len(series), dtype=bool)
        return ~notna
    if kind == "bool":
        if ptypes.is_bool_dtype(dtype):
            return np.ones(len(series), dtype=bool)
        return _instances(series, bool) | ~notna
    raise AssertionError(kind)


def _instances(series: pd.Series, typ: type) -> np.ndarray:
    """True where the value is a ``typ``."""
    values = series.to_numpy(dtype=object)
    return np.fromiter((isinstance(v, typ) for v in values), dtype=bool, count=len(values))


@shared_docs
def validate(
    df: pd.DataFrame,
    table: str,
    *,
    source: str | None = None,
    categories: Mapping[str, Iterable] | None = None,
) -> pd.DataFrame:
    """Check that a table fits its schema; raise a :class:`SchemaError` naming the problem if not.

    Nothing is coerced: a wrong dtype is an error, not a silent cast.

    Parameters
    ----------
    df : DataFrame
        The table.
    table : {"items", "responses", "judgments", "annotations", "rounds"}
        The schema to check against (:data:`SCHEMAS`).
    {source}
    categories : mapping of str to iterable, optional
        Allowed values for further columns, e.g. ``{"label": ["A", "B", "tie"]}``.

    Returns
    -------
    DataFrame
        ``df`` itself, unchanged.

    Raises
    ------
    SchemaError
        A required column is missing, a value has the wrong type or is not allowed, or the key has
        duplicates; the message names the table, the column, the rows and the source.

    Examples
    --------
    >>> import pandas as pd
    >>> a = pd.DataFrame({"item": ["1"], "rater": ["r1"], "rater_kind": ["human"],
    ...                   "criterion": ["overall"], "label": ["A"]})
    >>> validate(a, "annotations", categories={"label": ["A", "B"]}).shape
    (1, 5)
    """
    return _validate(df, table, source=source, categories=categories)


def _validate(df: pd.DataFrame, table: str, *, source: str | None = None,
              categories: Mapping[str, Iterable] | None = None,
              columns: Mapping[str, pd.Series] | None = None) -> pd.DataFrame:
    """:func:`validate`; ``columns`` (name -> the Series that is that column of ``df``), when the caller built
    ``df`` from them, saves looking each column up again (a reader validates thousands of small tables)."""
    column = df.__getitem__ if columns is None else columns.__getitem__
    if table not in SCHEMAS:
        raise ValueError(f"Unknown table {table!r}; choose one of {sorted(SCHEMAS)}.")
    schema = SCHEMAS[table]
    if not isinstance(df, pd.DataFrame):
        raise SchemaError(table, None, [], f"expected a pandas DataFrame, got {type(df).__name__}", source)
    missing = [c for c in schema.required if c not in df.columns]
    if missing:
        raise SchemaError(
            table, missing[0], [],
            f"missing required column(s) {missing}; present: {list(df.columns)}", source,
        )
    if len(df) == 0:
        raise SchemaError(table, None, [], "the table is empty (0 rows)", source)

    has = df.columns.__contains__ if columns is None else columns.__contains__
    present = {}
    for col in schema.columns:
        if not has(col.name):
            continue
        s = column(col.name)
        notna = present[col.name] = np.asarray(pd.notna(s.array), dtype=bool)
        if not col.nullable:
            bad = _rows(~notna)
            if bad:
                raise SchemaError(table, col.name, bad, "missing values are not allowed", source)
        mask = _kind_ok(s, notna, col.kind)
        bad = _rows(~mask)
        if bad:
            raise SchemaError(
                table, col.name, bad,
                f"expected {col.kind} values, found dtype {s.dtype} "
                f"(e.g. {s[~mask].iloc[0]!r}); convert explicitly before validating",
                source,
            )
        allowed = col.allowed_values()
        if allowed is not None:
            hint = "" if col.registry is None else (
                f" (the {plugins.GROUPS[col.registry]}s registered now, plugins of entry-point group "
                f"{col.registry!r} included)")
            _check_allowed(s, table, col.name, allowed, source, hint)

    for name, allowed in (categories or {}).items():
        if not has(name):
            raise SchemaError(table, name, [], "declared categories for a column that is absent", source)
        _check_allowed(column(name), table, name, tuple(allowed), source)

    if _unique_keys(df, schema.key, present, column):
        return df
    dup = df.duplicated(list(schema.key), keep=False)
    bad = _rows(dup)
    if bad:
        raise SchemaError(
            table, ",".join(schema.key), bad,
            f"duplicate keys: each ({', '.join(schema.key)}) must occur once", source,
        )
    return df


_SET_CHECK_ROWS = 10_000


def _unique_keys(df: pd.DataFrame, key: Sequence[str], notna: Mapping[str, np.ndarray],
                 column: Callable[[str], pd.Series]) -> bool:
    """True when every key occurs once, checked with a set of tuples: a fraction of ``df.duplicated``'s time on
    the small tables readers validate. False means "look closer": a large table (a set of tuples costs far more
    memory than ``duplicated``'s integer codes), a key with a missing value (NaN is not equal to itself in a set,
    but ``duplicated`` counts two as one key) or a duplicate."""
    if len(df) > _SET_CHECK_ROWS or not all(k in notna and notna[k].all() for k in key):
        return False
    try:
        return len(set(zip(*(column(k).tolist() for k in key)))) == len(df)
    except TypeError:  # an unhashable value (a list in a cell): duplicated decides
        return False


def _check_allowed(s: pd.Series, table: str, name: str, allowed: Sequence, source: str | None,
                   hint: str = "") -> None:
    bad_mask = None
    if len(s) <= _SET_CHECK_ROWS:  # a set of the allowed values: a fraction of isin's time on a small table
        values = s.to_numpy(dtype=object)
        try:
            ok = set(allowed)
            bad_mask = np.fromiter((v not in ok for v in values), dtype=bool, count=len(values)) & ~pd.isna(values)
        except TypeError:  # an unhashable cell or allowed value: isin decides
            pass
    if bad_mask is None:
        bad_mask = np.asarray(s.notna() & ~s.isin(list(allowed)), dtype=bool)
    bad = _rows(bad_mask)
    if bad:
        unknown = sorted({str(v) for v in s[bad_mask]})[:5]
        raise SchemaError(
            table, name, bad, f"unknown label(s) {unknown}; allowed: {list(allowed)}{hint}", source,
        )


def _rows(mask: pd.Series | np.ndarray) -> list:
    """Positional row numbers (0-based, as in the file after its header) where mask is True."""
    return [int(i) for i in np.flatnonzero(np.asarray(mask, dtype=bool))]
