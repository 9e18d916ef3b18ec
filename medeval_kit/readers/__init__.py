"""Readers for the files other evaluation tools write (the ``medeval import`` command is in
:mod:`medeval_kit.cli.imports`).

Each reader turns one file into medeval_kit's tidy tables (:mod:`medeval_kit.schemas`), validated,
and returns a :class:`ReadResult` with ``.judgments``, ``.annotations``, ``.items``, ``.responses``
(``None`` when the file has no such data) and ``summary()`` (records read, rows produced, rows
dropped with their reasons). Errors name the file, the record or line, and the field.

==================  ===========================================  =========================================
format name         file                                         reader
==================  ===========================================  =========================================
``inspect``         Inspect AI log, ``.eval`` or ``.json``       :func:`read_inspect`
``alpaca_eval``     AlpacaEval ``annotations.json``              :func:`read_alpaca_eval`
``mtbench``         FastChat ``model_judgment/*_pair.jsonl`` or   :func:`read_mtbench`
                    ``*_single.jsonl``
``mtbench_human``   MT-bench human judgments (JSON / JSONL)      :func:`read_mtbench_human`
``healthbench``     HealthBench meta-evaluation JSONL            :func:`read_healthbench_meta`
``promptfoo``       ``promptfoo eval -o results.json``           :func:`read_promptfoo`
==================  ===========================================  =========================================

>>> from medeval_kit.readers import read_format
>>> res = read_format("mtbench", "tests/fixtures/formats/mtbench/gpt-4_pair.jsonl")  # doctest: +SKIP
>>> bias.position_bias(res.judgments)                                              # doctest: +SKIP
>>> judgments = read_format("mtbench", path, table="judgments")                     # doctest: +SKIP
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from medeval_kit.columns import Columns, apply_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.readers._common import TABLES, ReaderError, ReadResult
from medeval_kit.readers.alpaca_eval import read_alpaca_eval
from medeval_kit.readers.healthbench import read_healthbench_meta
from medeval_kit.readers.inspect_log import read_inspect
from medeval_kit.readers.mtbench import read_mtbench, read_mtbench_human
from medeval_kit.readers.promptfoo import read_promptfoo

__all__ = [
    "DESCRIPTIONS",
    "FORMATS",
    "FORMAT_TABLES",
    "ReadResult",
    "ReaderError",
    "TABLES",
    "add_from_option",
    "read_alpaca_eval",
    "read_format",
    "read_healthbench_meta",
    "read_inspect",
    "read_mtbench",
    "read_mtbench_human",
    "read_for_command",
    "read_promptfoo",
    "read_tidy",
]

FORMATS: dict[str, Callable[..., ReadResult]] = {
    "inspect": read_inspect,
    "alpaca_eval": read_alpaca_eval,
    "mtbench": read_mtbench,
    "mtbench_human": read_mtbench_human,
    "healthbench": read_healthbench_meta,
    "promptfoo": read_promptfoo,
}
"""Format name -> reader. The names are those of ``medeval import FORMAT``."""

DESCRIPTIONS: dict[str, str] = {
    "inspect": "Inspect AI log (.eval or .json): model-graded scores per sample and epoch",
    "alpaca_eval": "AlpacaEval annotations.json: pairwise preferences with output lengths",
    "mtbench": "FastChat MT-bench model_judgment *_pair.jsonl (both orders) or *_single.jsonl",
    "mtbench_human": "MT-bench human judgments (mt_bench_human_judgments, JSON or JSONL)",
    "healthbench": "HealthBench meta-evaluation JSONL: physician and grader labels per rubric criterion",
    "promptfoo": "promptfoo results.json: llm-rubric and select-best gradings",
}
"""Format name -> what the file holds (the format list of ``medeval import --help``)."""


def read_format(fmt: str, path: str | Path, *, table: str | None = None, max_member_bytes: int | None = None,
                max_json_bytes: int | None = None, **options) -> ReadResult | pd.DataFrame:
    """Read ``path`` written by tool ``fmt`` (see :data:`FORMATS`).

    Hostile or broken files raise :class:`ReaderError` (never another exception type). Reads are
    bounded; JSON-lines files are streamed.

    Parameters
    ----------
    fmt : str
        The format name (:data:`FORMATS`; ``"MT-bench"``, ``"mt_bench"`` and ``"mtbench"`` all match).
    path : str or Path
        The file.
    table : str, optional
        Return this table as a DataFrame instead of the :class:`ReadResult`; ``"primary"`` is the table an
        analysis of this format needs (judgments, or annotations for ``mtbench_human`` and ``healthbench``).
    max_member_bytes : int, optional
        Bound on each Inspect ``.eval`` zip member; default 512 MB or ``MEDEVAL_MAX_MEMBER_MB``.
    max_json_bytes : int, optional
        Bound on a JSON file parsed whole, or one JSON line; default 256 MB or ``MEDEVAL_MAX_JSON_MB``.
    **options
        Passed to the reader (e.g. ``grader=`` for ``healthbench``).

    Returns
    -------
    ReadResult or DataFrame
        The tables read, or with ``table=`` the one table.

    Raises
    ------
    ReaderError
        An unknown format, a broken file, or a ``table`` the file cannot give (naming those it can).

    Examples
    --------
    >>> res = read_format("mtbench", "tests/fixtures/formats/mtbench/gpt-4_pair.jsonl")  # doctest: +SKIP
    >>> res.summary()                                                                    # doctest: +SKIP
    """
    squash = {k.replace("_", ""): k for k in FORMATS}  # "MT-bench", "mt_bench", "AlpacaEval" all match
    key = squash.get(str(fmt).strip().lower().replace("-", "").replace("_", ""))
    if key is None:
        raise ReaderError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if max_member_bytes is not None and key == "inspect":
        options["max_member_bytes"] = max_member_bytes
    if max_json_bytes is not None:
        options["max_json_bytes"] = max_json_bytes
    res = FORMATS[key](path, **options)
    if table is None:
        return res
    return res.table(None if table == "primary" else table)


FORMAT_TABLES: dict[str, tuple[str, ...]] = {
    "inspect": ("judgments", "items", "responses"),
    "alpaca_eval": ("judgments", "annotations", "items", "responses"),
    "mtbench": ("judgments", "annotations"),
    "mtbench_human": ("annotations", "items", "responses"),
    "healthbench": ("annotations", "items"),
    "promptfoo": ("judgments", "items", "responses"),
}
"""Format name -> the tables its reader can give (a given file may give fewer; see :data:`FORMAT_NOTES`)."""

FORMAT_NOTES = {
    "mtbench": "the mtbench format gives annotations for pairwise files (*_pair.jsonl) only",
}

_NEEDS = {
    "annotations": "one label per item and rater",
    "judgments": "the judge's verdict per item, presentation order and repeat",
}


def add_from_option(parser, table: str) -> None:
    """Add ``--from FORMAT`` to an analysis command that needs the tidy ``table`` (annotations or judgments).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    table : str
        The table the command reads (``"annotations"`` or ``"judgments"``), named in the help.
    """
    parser.add_argument(
        "--from", dest="from_format", metavar="FORMAT", choices=sorted(FORMATS), default=None,
        help=f"FILE is another tool's results file in FORMAT, one of {', '.join(FORMATS)} (the formats of "
             f"'medeval import'): it is read with that reader and its {table} table is used; the column "
             "options then default to the tidy column names, and the reader's summary (records read, rows "
             "dropped and why) goes to stderr")


def read_for_command(fmt: str, path: str | Path, table: str, *, command: str, **options) -> pd.DataFrame:
    """``--from FORMAT`` of the analysis commands: the tidy ``table`` of ``path``, the summary on stderr.

    Reads with :func:`read_format`, prints :meth:`ReadResult.summary` to stderr and returns the table.

    Parameters
    ----------
    fmt : str
        The format name (:data:`FORMATS`).
    path : str or Path
        The file.
    table : str
        The table the command needs (``"annotations"`` or ``"judgments"``).
    command : str
        The command's name, for the error message.
    **options
        Passed to the reader.

    Returns
    -------
    DataFrame
        The tidy ``table``.

    Raises
    ------
    ReaderError
        The file cannot give ``table``; the message names the format, what it gives and what to do instead.
    """
    res = read_format(fmt, path, **options)
    print(res.summary(), file=sys.stderr)
    if getattr(res, table) is not None:
        return res.table(table)
    fmt = res.format
    have = [t for t in TABLES if t in res.tables]
    can = FORMAT_TABLES.get(fmt, ())
    if table in can:
        gives = f"this file gives {', '.join(have) or 'no table'}"
        if res.dropped:
            gives += " (dropped: " + "; ".join(f"{r} x{n}" for r, n, _ in res.dropped) + ")"
    else:
        gives = f"the {fmt} format gives {', '.join(can)}"
    note = f"; {FORMAT_NOTES[fmt]}" if fmt in FORMAT_NOTES else ""
    if table == "annotations" and "judgments" in have:
        j = res.judgments
        two = j["protocol"].eq("pairwise") & j["order"].astype(str).isin(["AB", "BA"])
        todo = (f". Its judgments: 'medeval position-bias --from {fmt} FILE' for position bias, or "
                if j.loc[two, "order"].nunique() == 2 else ". Its judgments: ")
        todo += f"'medeval import {fmt} FILE --table judgments -o judgments.csv' writes them as a table"
    elif table == "judgments" and "annotations" in have:
        todo = (f". Its annotations go to 'medeval agreement', 'medeval judge-vs-humans' and 'medeval alt-test' "
                f"with --from {fmt}")
    else:
        todo = ""
    raise ReaderError(f"{res.source}: medeval {command} --from {fmt} needs the {table} table "
                      f"({_NEEDS.get(table, table)}), but {gives}{note}{todo}")


_TEXT_KINDS = ("str",)


@shared_docs
def read_tidy(path: str | Path, table: str, *, columns: Columns = None) -> pd.DataFrame:
    """Read a tidy table written by ``medeval import`` (CSV, JSONL or Parquet) with the schema's dtypes.

    Text columns stay text (an item id ``2`` stays ``"2"``; a label ``NA`` stays ``"NA"``), only an
    empty cell is missing; ``repeat`` is an integer and ``score`` a float, so
    :func:`medeval_kit.schemas.validate` accepts the table as written.

    Parameters
    ----------
    path : str or Path
        A ``.csv``, ``.tsv``, ``.jsonl`` or ``.parquet`` file.
    table : str
        The table's schema name (``"judgments"``, ``"annotations"``, ...; :data:`medeval_kit.schemas.SCHEMAS`).
    {columns}

    Returns
    -------
    DataFrame
        The table under the canonical names, with the schema's dtypes.

    Raises
    ------
    ReaderError
        An unknown file type.
    """
    from medeval_kit.schemas import SCHEMAS

    p = Path(path)
    schema = SCHEMAS[table]
    text_cols = [c.name for c in schema.columns if c.kind in _TEXT_KINDS] + (["label"] if table == "annotations" else [])
    suf = p.suffix.lower()
    yours = dict(columns or {})
    as_text = {yours.get(c, c): str for c in text_cols}  # the text columns under the file's own names
    if suf in (".csv", ".tsv"):
        # only an empty cell is missing, in every column ("NA" or "None" written by a tool stays text)
        df = pd.read_csv(p, sep="\t" if suf == ".tsv" else ",", dtype=as_text,
                         keep_default_na=False, na_values=[""])
    elif suf in (".jsonl", ".ndjson"):
        df = pd.read_json(p, lines=True, dtype=as_text)
    elif suf in (".parquet", ".pq"):
        df = pd.read_parquet(p)
    else:
        raise ReaderError(f"{p}: unknown file type {suf!r}; use .csv, .tsv, .jsonl or .parquet")
    df = apply_columns(df, columns, where=str(p))
    for c in text_cols:
        if c in df.columns:
            df[c] = df[c].astype(object).where(df[c].notna(), None)
    for c in schema.columns:
        if c.name in df.columns and c.kind == "int":
            df[c.name] = df[c.name].astype("int64")
        elif c.name in df.columns and c.kind == "float":
            df[c.name] = pd.to_numeric(df[c.name], errors="coerce").astype(float)
    return df
