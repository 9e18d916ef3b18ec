"""Your column names, mapped once: the ``columns=`` keyword of every reader and public function.

Every analysis reads tidy tables under canonical column names (``item``, ``rater``, ``label``,
``judge``, ``order`` ...: :mod:`medeval_kit.schemas`). A table whose columns are named otherwise
is mapped in one place: each public function that reads tables takes ``columns``, a mapping from the
canonical name to yours::

    agreement.agreement(df, "cohen_kappa", columns={"item": "case_id", "rater": "physician"})

The mapping renames the tables *before* the function runs, so a composite function and every part it
calls see the same, canonical names: there is no keyword that one part honours and the next forgets.
Results use the canonical names. One mapping can serve a whole study: keys that a function does not
read are ignored, but a key that no function knows is an error (a typo never passes silently).

:func:`takes_columns` is the decorator that does this; :func:`apply_columns` is the same renaming for
readers, which build their table first.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import pandas as pd

from medeval_kit.errors import MedevalError, SchemaError

__all__ = ["Columns", "ColumnError", "apply_columns", "takes_columns", "known_columns", "column_roles"]

Columns = Mapping[str, str] | None
"""``{canonical name: your column name}``, e.g. ``{"item": "case_id"}``; ``None`` means the canonical names."""

F = TypeVar("F", bound=Callable[..., Any])

# Canonical names that some public function reads (filled by @takes_columns) plus the schemas' columns.
_KNOWN: set[str] = set()


class ColumnError(MedevalError, ValueError):
    """A ``columns`` mapping that cannot be applied: an unknown key, or two columns with one name.

    Parameters
    ----------
    message : str
        What is wrong, naming the table and the columns.
    """


def known_columns() -> frozenset[str]:
    """Every canonical column name a ``columns`` mapping may use.

    Returns
    -------
    frozenset of str
        The columns of the schemas (:data:`medeval_kit.schemas.SCHEMAS`) and those that public functions
        declare with :func:`takes_columns`.
    """
    from medeval_kit.schemas import SCHEMAS  # layer 0, no cycle: schemas does not import columns

    return frozenset(_KNOWN | {c.name for s in SCHEMAS.values() for c in s.columns})


def column_roles(fn: Callable) -> tuple[str, ...]:
    """The canonical columns ``fn`` reads, as declared by :func:`takes_columns`.

    Parameters
    ----------
    fn : callable
        A public function.

    Returns
    -------
    tuple of str
        The declared columns; ``()`` for a function that takes no ``columns``.
    """
    return getattr(fn, "__medeval_columns__", ())


def _check_mapping(columns: Columns, where: str) -> dict[str, str]:
    if columns is None:
        return {}
    if not isinstance(columns, Mapping):
        raise ColumnError(f"{where}: columns must be a mapping {{canonical name: your column}}, "
                          f"not {type(columns).__name__}")
    out = {}
    for k, v in columns.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise ColumnError(f"{where}: columns maps names to names; got {k!r}: {v!r}")
        out[k] = v
    unknown = sorted(set(out) - known_columns())
    if unknown:
        raise ColumnError(f"{where}: columns has keys that no table uses: {unknown}. Keys are the canonical "
                          f"names (e.g. item, rater, label, judge, order) and values your column names.")
    return out


def apply_columns(df: pd.DataFrame, columns: Columns, roles: Iterable[str] | None = None, *,
                  where: str = "table") -> pd.DataFrame:
    """Return ``df`` with your column names renamed to the canonical ones.

    Parameters
    ----------
    df : DataFrame
        The table as you have it.
    columns : mapping of str to str, optional
        ``{canonical name: your column name}``. ``None`` or ``{}`` returns ``df`` unchanged.
    roles : iterable of str, optional
        The canonical columns the caller reads; keys outside it are ignored (one mapping may serve a
        whole study). ``None`` applies every key.
    where : str
        What to call the table in errors (a file name, an argument name).

    Returns
    -------
    DataFrame
        A renamed copy (the input is never modified), or ``df`` itself when nothing is renamed. Your
        mapping wins: a column that already has a canonical name you map to another column is left out
        of the copy (it is not the column you named).

    Raises
    ------
    ColumnError
        A key is not a canonical name, or a value is not a column name.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"case_id": ["a"], "physician": ["h1"], "label": ["yes"]})
    >>> list(apply_columns(df, {"item": "case_id", "rater": "physician"}).columns)
    ['item', 'rater', 'label']
    """
    mapping = _check_mapping(columns, where)
    if roles is not None:
        wanted = set(roles)
        mapping = {k: v for k, v in mapping.items() if k in wanted}
    rename = {yours: canon for canon, yours in mapping.items() if yours != canon and yours in df.columns}
    if not rename:
        return df
    # a column already named like a canonical name you map is not that column: it is set aside
    shadowed = [canon for canon in rename.values() if canon in df.columns and canon not in rename]
    return df.drop(columns=shadowed).rename(columns=rename)


def takes_columns(*roles: str, tables: Iterable[str] | None = None) -> Callable[[F], F]:
    """Decorate a public function that reads tables: apply its ``columns=`` mapping before it runs.

    The function declares a keyword-only ``columns`` parameter and reads canonical names only. The
    wrapper renames every DataFrame argument (or those named in ``tables``), passes ``columns=None``
    on, and accepts the old per-column keywords (``item="case_id"``) for one release with a
    ``DeprecationWarning``.

    Parameters
    ----------
    *roles : str
        The canonical columns the function reads; also the old keyword names it still accepts.
    tables : iterable of str, optional
        Names of the parameters holding tables; default every argument that is a DataFrame.

    Returns
    -------
    callable
        The decorator.
    """
    _KNOWN.update(roles)
    table_names = tuple(tables) if tables is not None else None

    def decorate(fn: F) -> F:
        sig = inspect.signature(fn)
        if "columns" not in sig.parameters:
            raise TypeError(f"{fn.__qualname__} must take a keyword-only 'columns' parameter")
        legacy = tuple(r for r in roles if r not in sig.parameters)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            old = {r: kwargs.pop(r) for r in legacy if r in kwargs}
            absent = [r for r, v in old.items() if v is None]  # the old "this column is not there"
            renamed = {r: v for r, v in old.items() if v is not None and v != r}
            if renamed or absent:
                said = ", ".join(f"{k}={v!r}" for k, v in old.items() if v is None or v != k)
                warnings.warn(f"{fn.__name__}({said}) is deprecated; pass columns={renamed!r}"
                              + (f" and leave {absent} out of the tables" if absent else ""),
                              DeprecationWarning, stacklevel=2)
            bound = sig.bind(*args, **kwargs)
            given = _check_mapping(bound.arguments.get("columns"), f"{fn.__name__}()")
            mapping = {**renamed, **given}
            if mapping or absent:
                frames = [name for name, value in bound.arguments.items()
                          if isinstance(value, pd.DataFrame) and (table_names is None or name in table_names)]
                # a mapped column absent while a column of the canonical name is there would be read
                # silently in its place: say so (absent both ways, an optional column is just absent)
                has = [set(bound.arguments[name].columns) for name in frames]
                missing = [f"{yours!r} (for {canon!r})" for canon, yours in mapping.items()
                           if canon in roles and yours != canon and not any(yours in c for c in has)
                           and any(canon in c for c in has)]
                if missing:
                    raise ColumnError(f"{fn.__name__}(): columns names {', '.join(missing)}, which no table "
                                      f"given has (it would read the canonical column instead)")
                for name in frames:
                    value = apply_columns(bound.arguments[name], mapping, roles, where=f"{fn.__name__}({name}=...)")
                    if absent:
                        value = value.drop(columns=[c for c in absent if c in value.columns])
                    bound.arguments[name] = value
            bound.arguments["columns"] = None
            try:
                return fn(*bound.args, **bound.kwargs)
            except SchemaError as err:  # name your column, not only its canonical name
                yours = mapping.get(err.column) if mapping else None
                if not yours or yours == err.column:
                    raise
                raise SchemaError(err.table, yours, err.rows, f"{err.problem} (your column {yours!r} is "
                                  f"{err.column!r} here)", err.source) from None

        wrapper.__medeval_columns__ = tuple(roles)
        return wrapper  # type: ignore[return-value]

    return decorate
