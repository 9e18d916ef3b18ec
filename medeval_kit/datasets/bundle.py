"""A named set of tidy tables from one dataset."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from medeval_kit.schemas import validate

__all__ = ["Bundle"]

_TABLES = ("items", "responses", "judgments", "annotations", "rounds")


@dataclass(frozen=True)
class Bundle:
    """Tables of one dataset; absent tables are None. Each present table is validated on creation.

    Parameters
    ----------
    name : str
        The dataset's name.
    items, responses, judgments, annotations, rounds : DataFrame, optional
        The tidy tables (:mod:`medeval_kit.schemas`); ``None`` when absent.
    source : str, default ""
        The files read, named in validation errors.
    notes : dict
        Anything a reader of the data must know.

    Raises
    ------
    medeval_kit.errors.SchemaError
        A table does not follow its schema.
    """

    name: str
    items: pd.DataFrame | None = None
    responses: pd.DataFrame | None = None
    judgments: pd.DataFrame | None = None
    annotations: pd.DataFrame | None = None
    rounds: pd.DataFrame | None = None
    source: str = ""
    notes: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for t in _TABLES:
            df = getattr(self, t)
            if df is not None:
                validate(df, t, source=self.source or self.name)

    def tables(self) -> dict[str, pd.DataFrame]:
        """Return the present tables by name."""
        return {t: getattr(self, t) for t in _TABLES if getattr(self, t) is not None}

    def summary(self) -> str:
        """Return one line per table: its name, rows and columns."""
        lines = [f"{self.name} ({self.source})"]
        for t, df in self.tables().items():
            lines.append(f"  {t:<12} {len(df):>6} rows  {', '.join(map(str, df.columns[:8]))}")
        return "\n".join(lines)
