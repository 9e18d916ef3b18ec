"""Schema errors that name your column (for readers that apply ``columns=`` themselves; ``@takes_columns``
does the same for the functions it wraps)."""

from __future__ import annotations

from medeval_kit.errors import SchemaError


def user_column_error(err, mapping) -> Exception:
    """``err`` (a :class:`SchemaError` about a canonical column) naming your column instead, when mapped."""
    yours = (mapping or {}).get(err.column) if isinstance(err, SchemaError) else None
    if not yours or yours == err.column:
        return err
    return SchemaError(err.table, yours, err.rows, f"{err.problem} (your column {yours!r} is {err.column!r} here)",
                       err.source)
