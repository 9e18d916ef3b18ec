"""Exceptions raised by medeval_kit. Every message says what is wrong and where."""

from __future__ import annotations

__all__ = ["MedevalError", "SchemaError", "DataFileError", "ParameterError", "StudyError"]


class MedevalError(Exception):
    """Base class of every medeval_kit error."""


class SchemaError(MedevalError, ValueError):
    """A table does not fit its schema; the message names the table, column, rows and (if known) file.

    Parameters
    ----------
    table : str
        The table's name (or a file's role).
    column : str or None
        The column at fault.
    rows : list of int
        The offending rows (0-based positions), shown up to ten.
    problem : str
        What is wrong.
    source : str, optional
        The file the table came from.
    """

    def __init__(
        self,
        table: str,
        column: str | None,
        rows: list[int],
        problem: str,
        source: str | None = None,
    ) -> None:
        self.table, self.column, self.rows, self.problem, self.source = table, column, list(rows), problem, source
        where = f"{source}: " if source else ""
        col = f", column {column!r}" if column else ""
        shown = ", ".join(map(str, self.rows[:10])) + (" ..." if len(self.rows) > 10 else "")
        rws = f", rows [{shown}] ({len(self.rows)} in all)" if self.rows else ""
        super().__init__(f"{where}table {table!r}{col}{rws}: {problem}")


class DataFileError(MedevalError, ValueError):
    """A data file cannot be read: names the file and, where known, the line."""


class ParameterError(MedevalError, ValueError):
    """A notebook or study parameter is unknown or of the wrong type."""


class StudyError(MedevalError):
    """A study definition is invalid (unknown notebook, cycle, missing dependency)."""
