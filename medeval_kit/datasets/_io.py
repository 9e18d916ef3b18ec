"""Reading data files with errors that name the file and the line."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from medeval_kit.errors import DataFileError

__all__ = ["data_dir", "read_json", "read_jsonl", "read_table"]


def data_dir() -> Path:
    """Return the bundled data folder (:func:`medeval_kit.paths.data_dir`)."""
    from medeval_kit.paths import data_dir as _data_dir

    return _data_dir()


def read_json(path: str | Path):
    """Return the parsed content of a JSON file; a malformed file raises DataFileError with line and column."""
    p = Path(path)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataFileError(f"{p}: file not found") from None
    except json.JSONDecodeError as exc:
        raise DataFileError(f"{p}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None


def read_jsonl(path: str | Path) -> list[dict]:
    """Return the records of a JSON-lines file; a bad line raises DataFileError naming it."""
    p = Path(path)
    if not p.exists():
        raise DataFileError(f"{p}: file not found")
    records = []
    with p.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataFileError(f"{p}: line {lineno} is not valid JSON ({exc.msg}, column {exc.colno})") from None
            if not isinstance(rec, dict):
                raise DataFileError(f"{p}: line {lineno} is a JSON {type(rec).__name__}, expected an object")
            records.append(rec)
    return records


def read_table(path: str | Path, *, text: bool = False) -> pd.DataFrame:
    """Return a DataFrame from a CSV, TSV, JSONL, JSON (array of objects) or Parquet file.

    ``text=True`` reads CSV/TSV cells as text exactly as written, with no NA guessing (a label
    ``None`` or ``NA`` stays text): an empty cell is the only missing value.
    """
    p = Path(path)
    if p.is_dir():
        raise DataFileError(f"{p}: is a folder, not a file; pass the file inside it")
    if not p.exists():
        raise DataFileError(f"{p}: file not found")
    suffix = p.suffix.lower()
    try:
        if suffix in (".csv", ".tsv", ".txt") and text:
            df = pd.read_csv(p, sep="\t" if suffix == ".tsv" else ",", dtype=str, keep_default_na=False,
                             na_values=[]).replace({"": float("nan")})
        elif suffix in (".csv", ".tsv", ".txt"):
            df = pd.read_csv(p, sep="\t" if suffix == ".tsv" else ",")
        elif suffix in (".jsonl", ".ndjson"):
            df = pd.DataFrame(read_jsonl(p))
        elif suffix == ".json":
            content = read_json(p)
            if not isinstance(content, list):
                raise DataFileError(f"{p}: expected a JSON array of objects, got a {type(content).__name__}")
            df = pd.DataFrame(content)
        elif suffix in (".parquet", ".pq"):
            df = pd.read_parquet(p)
        else:
            raise DataFileError(f"{p}: unknown file type {suffix!r}; use .csv, .tsv, .jsonl, .json or .parquet")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataFileError(f"{p}: cannot be read as {suffix[1:].upper()}: {exc}") from None
    if df.empty:
        raise DataFileError(f"{p}: the file holds no rows")
    return df
