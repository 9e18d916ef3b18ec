"""Reading data files with errors that name the file and the line."""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from medeval_kit.columns import Columns, apply_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import DataFileError

__all__ = ["data_dir", "read_json", "read_jsonl", "read_table", "sniff_text_file", "TextLayout"]

_SEPARATORS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
_SNIFF_BYTES = 1 << 16
_DEFAULT_SEP = {".csv": ",", ".txt": ",", ".tsv": "\t"}


def _shown(sep: str) -> str:
    return "'\\t'" if sep == "\t" else repr(sep)


@dataclass(frozen=True)
class TextLayout:
    """How a CSV/TSV file is laid out: its ``sep`` and ``encoding`` (given, or read from a BOM)."""

    sep: str
    encoding: str


def sniff_text_file(path: str | Path, *, sep: str | None = None, encoding: str | None = None) -> TextLayout:
    """Return the file's :class:`TextLayout`, or raise a :class:`DataFileError` that names the option to use.

    Files from real desks fail here, early, with a hint, instead of later with a confusing message:

    - a byte-order mark is honoured (UTF-8 with BOM, UTF-16 and UTF-32 as Excel's "Unicode text" writes them);
    - a file that is not valid UTF-8 (e.g. Windows-1252 from Excel on Windows) names the line and the byte,
      shows the line as Windows-1252 would read it, and says ``--encoding cp1252`` (``encoding="cp1252"``);
    - a ``.csv`` whose header holds no comma but semicolons or tabs (Excel in a locale with a decimal comma)
      says ``--sep ';'`` (``sep=";"``); likewise a ``.tsv`` without tabs.

    Parameters
    ----------
    path : str or Path
        A ``.csv``, ``.tsv`` or ``.txt`` file.
    sep : str, optional
        The separator the user named; it is used as given and not second-guessed.
    encoding : str, optional
        The encoding the user named (any Python codec name); used as given.

    Returns
    -------
    TextLayout
        ``sep`` and ``encoding`` to read the file with.

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "x.csv")
    >>> _ = open(f, "w", encoding="utf-8").write("item;rater;label\\n1;a;yes\\n")
    >>> sniff_text_file(f)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    medeval_kit.errors.DataFileError: ...x.csv: the header 'item;rater;label' has no comma but 2 semicolon(s): the file looks semicolon-separated; pass --sep ';' (sep=';')
    >>> sniff_text_file(f, sep=";")
    TextLayout(sep=';', encoding='utf-8')
    """
    p = Path(path)
    with p.open("rb") as fh:
        head = fh.read(_SNIFF_BYTES)
    if encoding is None:
        encoding = _bom_encoding(head) or "utf-8"
        if encoding == "utf-8":
            _check_utf8(p)
    elif encoding.replace("_", "-").lower() in ("utf-8", "utf8") and head.startswith(codecs.BOM_UTF8):
        encoding = "utf-8-sig"
    if sep is None:
        sep = _DEFAULT_SEP.get(p.suffix.lower(), ",")
        _check_sep(p, head, encoding, sep)
    return TextLayout(sep, encoding)


def _bom_encoding(head: bytes) -> str | None:
    for bom, name in ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
                      (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if head.startswith(bom):
            return name
    return None


def _check_utf8(p: Path) -> None:
    """Raise naming the line, the byte and ``--encoding`` when ``p`` is not valid UTF-8 (read in blocks)."""
    dec = codecs.getincrementaldecoder("utf-8")()
    line, offset = 1, 0
    with p.open("rb") as fh:
        while block := fh.read(1 << 20):
            try:
                dec.decode(block)
            except UnicodeDecodeError as exc:
                at = offset + exc.start
                line += block[: exc.start].count(b"\n")
                start = block.rfind(b"\n", 0, exc.start) + 1
                end = block.find(b"\n", exc.start)
                text = block[start: end if end >= 0 else len(block)].decode("cp1252", "replace").rstrip("\r")
                raise DataFileError(
                    f"{p}: not UTF-8: byte 0x{block[exc.start]:02x} at line {line} (byte {at}); read as Windows-1252 "
                    f"the line is {text[:80]!r}. If that reads right, the file was saved by Excel on Windows: pass "
                    "--encoding cp1252 (encoding='cp1252'); or save it as 'CSV UTF-8'") from None
            line += block.count(b"\n")
            offset += len(block)
        try:
            dec.decode(b"", final=True)
        except UnicodeDecodeError:
            raise DataFileError(f"{p}: not UTF-8: the file ends inside a character; pass --encoding NAME "
                                "(e.g. --encoding cp1252)") from None


def _check_sep(p: Path, head: bytes, encoding: str, sep: str) -> None:
    """Raise naming ``--sep`` when the header line does not hold ``sep`` but another separator."""
    try:
        text = head.decode(encoding, errors="replace")
    except LookupError:
        raise DataFileError(f"{p}: unknown encoding {encoding!r}; pass a Python codec name, e.g. --encoding "
                            "cp1252") from None
    header = text.lstrip("\ufeff").split("\n", 1)[0].rstrip("\r")
    if not header or sep in header:
        return
    found = {s: header.count(s) for s in _SEPARATORS if s != sep and header.count(s)}
    if not found:
        return  # a one-column file
    best = max(found, key=found.get)
    raise DataFileError(
        f"{p}: the header {header[:80]!r} has no {_SEPARATORS.get(sep, repr(sep))} but {found[best]} "
        f"{_SEPARATORS[best]}(s): the file looks {_SEPARATORS[best]}-separated; pass --sep {_shown(best)} "
        f"(sep={best!r})")


def data_dir() -> Path:
    """Return the bundled data folder (deprecated: use :func:`medeval_kit.paths.data_dir`).

    Returns
    -------
    pathlib.Path
        The toolkit's ``data/`` folder.
    """
    from medeval_kit.paths import data_dir as _data_dir

    return _data_dir()


def read_json(path: str | Path):
    """Return the parsed content of a JSON file.

    Parameters
    ----------
    path : str or Path
        The JSON file (UTF-8).

    Returns
    -------
    object
        The parsed value (dict, list, ...).

    Raises
    ------
    DataFileError
        The file is missing, or malformed (the message names the line and column).
    """
    p = Path(path)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataFileError(f"{p}: file not found") from None
    except json.JSONDecodeError as exc:
        raise DataFileError(f"{p}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None


def read_jsonl(path: str | Path) -> list[dict]:
    """Return the records of a JSON-lines file (blank lines skipped).

    Parameters
    ----------
    path : str or Path
        The ``.jsonl`` file (UTF-8), one JSON object per line.

    Returns
    -------
    list of dict
        One record per non-blank line.

    Raises
    ------
    DataFileError
        The file is missing, or a line is not a JSON object (the message names the line).
    """
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


@shared_docs
def read_table(path: str | Path, *, text: bool = False, sep: str | None = None,
               encoding: str | None = None, columns: Columns = None) -> pd.DataFrame:
    """Return a DataFrame from a CSV, TSV, JSONL, JSON (array of objects) or Parquet file.

    Parameters
    ----------
    path : str or Path
        The file; its suffix chooses the format.
    text : bool, default False
        Read CSV/TSV cells as text exactly as written, with no NA guessing (a label ``None`` or ``NA``
        stays text): an empty cell is the only missing value.
    sep : str, optional
        CSV/TSV separator; when not given, :func:`sniff_text_file` checks the file first and an error
        names the option to pass (a semicolon-separated ``.csv``).
    encoding : str, optional
        CSV/TSV encoding (any Python codec name); checked like ``sep`` when not given.
    {columns}

    Returns
    -------
    DataFrame
        The file's rows, columns renamed by ``columns``.

    Raises
    ------
    DataFileError
        A missing file, a folder, an unknown suffix, or a file that cannot be parsed.

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "x.csv")
    >>> _ = open(f, "w", encoding="utf-8").write("case,doc,label\\n1,a,NA\\n")
    >>> read_table(f, text=True, columns={"item": "case", "rater": "doc"}).to_dict("records")
    [{'item': '1', 'rater': 'a', 'label': 'NA'}]
    """
    p = Path(path)
    if p.is_dir():
        raise DataFileError(f"{p}: is a folder, not a file; pass the file inside it")
    if not p.exists():
        raise DataFileError(f"{p}: file not found")
    suffix = p.suffix.lower()
    if suffix in (".csv", ".tsv", ".txt"):
        lay = sniff_text_file(p, sep=sep, encoding=encoding)
    try:
        if suffix in (".csv", ".tsv", ".txt") and text:
            df = pd.read_csv(p, sep=lay.sep, encoding=lay.encoding, dtype=str, keep_default_na=False,
                             na_values=[]).replace({"": float("nan")})
        elif suffix in (".csv", ".tsv", ".txt"):
            df = pd.read_csv(p, sep=lay.sep, encoding=lay.encoding)
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
    except UnicodeDecodeError as exc:
        raise DataFileError(f"{p}: cannot be read as {lay.encoding}: {exc.reason} at byte {exc.start}; pass "
                            "--encoding NAME (e.g. --encoding cp1252)") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DataFileError(f"{p}: cannot be read as {suffix[1:].upper()}: {exc}") from None
    if df.empty:
        raise DataFileError(f"{p}: the file holds no rows")
    return apply_columns(df, columns, where=str(p))
