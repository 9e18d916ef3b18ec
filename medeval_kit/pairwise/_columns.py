"""Shared by the table-reading functions of pairwise, bias, rounds and rank: the old per-column keywords'
``None`` ("no such column") and schema errors that name your column, around ``@takes_columns``."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Mapping

from medeval_kit.columns import column_roles
from medeval_kit.errors import SchemaError


def user_column_error(err, mapping) -> Exception:
    """``err`` (a :class:`SchemaError` about a canonical column) naming your column instead, when mapped."""
    yours = (mapping or {}).get(err.column) if isinstance(err, SchemaError) else None
    if not yours or yours == err.column:
        return err
    return SchemaError(err.table, yours, err.rows, f"{err.problem} (your column {yours!r} is {err.column!r} here)",
                       err.source)


def columns_compat(fn):
    """Wrap a ``@takes_columns`` function: the old per-column keywords, and errors under your names.

    The old keywords (``item="case_id"``) become the ``columns`` mapping here, with the
    ``DeprecationWarning`` pointing at your call. The old signatures also took ``repeat=None`` (or
    ``judge=None`` ...) for "the table has no such column"; a column is now read when the table has it,
    so such a keyword is dropped with a ``DeprecationWarning`` (``columns`` maps names to names only).
    A :class:`SchemaError` about a column you mapped names your column.
    """
    own = set(inspect.signature(fn).parameters)  # roles that are still parameters stay parameters

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        old = {r: kwargs.pop(r) for r in column_roles(fn) if r in kwargs and r not in own}
        nones = [r for r, v in old.items() if v is None]
        renamed = {r: v for r, v in old.items() if v is not None and v != r}
        if nones:
            warnings.warn(f"{fn.__name__}({', '.join(f'{r}=None' for r in nones)}) is deprecated: a column is "
                          "read when the table has it", DeprecationWarning, stacklevel=2)
        if renamed:
            warnings.warn(f"{fn.__name__}({', '.join(f'{k}={v!r}' for k, v in renamed.items())}) is deprecated; "
                          f"pass columns={renamed!r}", DeprecationWarning, stacklevel=2)
        given = kwargs.get("columns")
        mapping = {**renamed, **given} if isinstance(given, Mapping) else dict(renamed)
        if renamed and (given is None or isinstance(given, Mapping)):
            kwargs["columns"] = mapping
        try:
            return fn(*args, **kwargs)
        except SchemaError as e:
            raise user_column_error(e, mapping) from None

    return wrapper
