"""Save result tables as CSV, Markdown and LaTeX side by side, byte-stable on any machine.

Numbers are written at fixed significant digits chosen per column type, so the last-digit floating-point
differences between machines (~1e-16) never reach a committed file:

* integers (and floats that hold whole numbers, such as counts with a missing value) as integers, never ``105.0``;
* other floats, first rounded to :data:`STABLE_DIGITS` (12) significant digits, which removes the last-bit
  noise, then at :data:`CSV_DIGITS` (6) significant digits in CSV and :data:`TEXT_DIGITS` (4) in Markdown
  and LaTeX; columns named in :data:`DIGITS` keep more (``ours``, the number re-checked against a paper's
  printed value at up to ~10 decimals, keeps 12); a tie at the last kept digit is rounded away from zero,
  decided on the 12-digit decimal, so a value on a tie is written the same whatever its last bit;
* values within 1e-10 of zero relative to their column's largest magnitude are rounding noise and written as
  ``0`` (p-value columns excepted: a p-value of 1e-17 is a value, not noise);
* missing values as empty cells.

Beside the three files, ``name.table.json`` records where the table comes from (the run context of
:mod:`medeval_kit.provenance`: study, notebook, runner, parameters) and a hash of its data; figures get the same
record from :func:`write_sidecar`. A sidecar holds no time, host or folder, and its floats are written at
:data:`CSV_DIGITS`, so it too is byte-stable.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import re
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medeval_kit import provenance

__all__ = ["save_table", "format_number", "format_frame", "escape_markdown", "latex_escape", "spreadsheet_safe",
           "data_hash", "sidecar", "write_sidecar", "CSV_DIGITS", "TEXT_DIGITS", "DIGITS", "SIDECAR_SUFFIX"]

CSV_DIGITS = 6
"""Significant digits of a float in CSV: enough for every comparison with a published number."""
TEXT_DIGITS = 4
"""Significant digits of a float in Markdown and LaTeX (for reading)."""
DIGITS: dict[str, int] = {"ours": 12}
"""Columns kept at more significant digits in every format (``ours``: printed values have up to ~10 decimals)."""
STABLE_DIGITS = 12
"""Every float is first rounded to this many significant digits: machines differ only in the last bits (~1e-16)."""
NOISE = 1e-10
"""A value this small relative to its column's largest magnitude is floating-point noise around zero."""
SIDECAR_SUFFIX = ".table.json"
"""File name ending of a table's provenance sidecar (``name.table.json``; a figure's is ``name.json``)."""
_P_VALUE = re.compile(r"(^|_)p($|_)|p_?value", re.IGNORECASE)
_WHOLE = 1e15  # whole floats below this are written as integers (exactly representable)


def format_number(v: Any, digits: int = CSV_DIGITS) -> Any:
    """Return a number as text: '' when missing, integers whole, other floats at ``digits`` significant digits.

    Anything that is not a number (text, dates) comes back unchanged.

    Parameters
    ----------
    v : object
        A cell.
    digits : int, default 6
        Significant digits of a float.

    Returns
    -------
    str or object
        The text, or ``v`` unchanged when it is not a number.

    Examples
    --------
    >>> [format_number(x) for x in (105.0, 0.1 + 0.2, 1 / 3, 2.5e-7, float("nan"), True, "x")]
    ['105', '0.3', '0.333333', '2.5e-07', '', 'True', 'x']
    """
    if v is None or v is pd.NA or v is pd.NaT:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return ""
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        if f.is_integer() and abs(f) < _WHOLE:
            return str(int(f))
        return _significant(f, digits)
    return v


def _significant(f: float, digits: int) -> str:
    """``f`` at ``digits`` significant digits, the same on every machine.

    First rounded to :data:`STABLE_DIGITS` (removing the last-bit noise by which machines differ), then to
    ``digits`` with ties away from zero, decided in decimal: 0.31625 is 0.3163 whether the float computed
    was 0.31624999999999998 or 0.31625000000000003.
    """
    d = Decimal(f"{f:.{STABLE_DIGITS}g}")
    if d.is_zero() or digits >= STABLE_DIGITS:
        return f"{float(d):.{digits}g}"
    r = d.quantize(Decimal(1).scaleb(d.adjusted() - digits + 1), rounding=ROUND_HALF_UP)
    return f"{float(r):.{digits}g}"


# --------------------------------------------------------------------------- escaping user text
# Markdown punctuation written as numeric character references: a reference is literal text to every Markdown
# (CommonMark, Python-Markdown as in marimo), inside HTML too, and needs no renderer-specific backslash rule.
_MD_PUNCT = {c: f"&#{ord(c)};" for c in "\\`*[]{}|~$"}
_MD_RE = re.compile(r"[\\`*\[\]{}|~$]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
# indentation, or a heading, list or rule marker, opening the text
_BLOCK_START = re.compile(r"^([ \t]*)(?:(#)|([+=-])(?=[\s+=-]|$)|(\d+)([.)])(?=\s|$))?")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def escape_markdown(text: Any, *, newline: str = "<br>", quote: bool = True) -> str:
    """Return ``text`` as inert text for Markdown and HTML: it renders as written and adds no markup.

    ``& < > " '`` become HTML entities; Markdown punctuation (backslash, backtick, ``* [ ] { } | ~ $``, and
    ``_`` except inside a word, where it cannot mark emphasis) becomes a numeric character reference; a
    heading, list or rule marker that opens the text is neutralised the same way; line breaks become
    ``newline`` (``<br>``, or ``" "`` for one line). The result is safe in a paragraph, a pipe-table cell,
    an HTML element or a quoted attribute, never inside a code span (use ``<code>`` around it instead).

    Parameters
    ----------
    text : Any
        The user's string (column, file, judge, label name, a cell, a message quoting them); ``None`` is "".
    newline : str
        What a line break (``\\n``, ``\\r\\n``, ``\\r``) becomes.
    quote : bool
        Escape ``"`` and ``'`` too (default); ``False`` only where the text can never reach an attribute.

    Returns
    -------
    str

    Example
    -------
    >>> escape_markdown("a` <b>*x*</b> `b")
    'a&#96; &lt;b&gt;&#42;x&#42;&lt;/b&gt; &#96;b'
    >>> escape_markdown("cohen_kappa 0.85 (n = 12)")
    'cohen_kappa 0.85 (n = 12)'
    """
    if text is None:
        return ""
    s = html.escape(str(text), quote=quote)
    s = _MD_RE.sub(lambda m: _MD_PUNCT.get(m.group(0), "&#95;"), s)
    s = _BLOCK_START.sub(_neutral_start, s, count=1)
    return _LINE_BREAK.sub(newline, s)


def _neutral_start(m: re.Match) -> str:
    lead = m.group(1).replace(" ", "&#32;").replace("\t", "&#9;")  # indentation would open a code block
    mark = m.group(2) or m.group(3)
    if mark:
        return f"{lead}&#{ord(mark)};"
    return f"{lead}{m.group(4)}&#{ord(m.group(5))};" if m.group(4) else lead


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# a number (a percentage too: "+16.29%" is a printed value, and a spreadsheet reads it as a number)
_NUMBER = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?%?|inf|infinity|nan)", re.IGNORECASE)


def spreadsheet_safe(v: Any) -> Any:
    """Return a CSV cell a spreadsheet will not run: text opening with ``= + - @``, tab or CR gets a leading ``'``.

    Only text is changed, and never text that is wholly a number (``"-0.41"``, ``"+1e3"``, ``"-inf"``,
    ``"+16.29%"``);
    numbers and other values come back unchanged (OWASP CSV-injection guidance).

    Parameters
    ----------
    v : Any
        A cell (or a column name) about to be written to CSV.

    Returns
    -------
    Any
        ``"'" + v`` for formula-leading text, else ``v``.

    Example
    -------
    >>> [spreadsheet_safe(v) for v in ("=1+1", "-x", "-0.41", -0.41, "ok")]
    ["'=1+1", "'-x", '-0.41', -0.41, 'ok']
    """
    if isinstance(v, str) and v.startswith(_FORMULA_START) and not _NUMBER.fullmatch(v):
        return "'" + v
    return v


def _snap(col: pd.Series, name: str) -> pd.Series:
    """The column with floating-point noise around zero set to 0 (not for p-values)."""
    if _P_VALUE.search(str(name)):
        return col
    x = pd.to_numeric(col, errors="coerce").astype(float)
    finite = np.abs(x[np.isfinite(x)])
    top = float(finite.max()) if len(finite) else 0.0
    noise = x.abs() < NOISE * top
    return col.mask(noise, 0.0) if noise.any() else col


def format_frame(df: pd.DataFrame, digits: int = CSV_DIGITS, *, columns: Mapping[str, int] | None = None,
                 float_format: str | None = None) -> pd.DataFrame:
    """Return a table with every numeric cell as text, as the committed tables write it (see the module doc).

    Parameters
    ----------
    df : DataFrame
        The table.
    digits : int, default 6
        Significant digits of a float.
    columns : mapping of str to int, optional
        Column -> its own significant digits.
    float_format : str, optional
        A format for every float (e.g. ``"{:.3f}"``), instead of significant digits.

    Returns
    -------
    DataFrame
        A copy with text cells.
    """
    wide = {**DIGITS, **dict(columns or {})}
    out = df.copy()
    for name in out.columns:
        col = out[name]
        if pd.api.types.is_bool_dtype(col.dtype) or pd.api.types.is_integer_dtype(col.dtype):
            out[name] = col.map(format_number).astype(object)
            continue
        if pd.api.types.is_float_dtype(col.dtype):
            col = _snap(col, name)
        elif not (col.dtype == object and col.map(lambda v: isinstance(v, (float, np.floating))).any()):
            continue  # text, dates and other non-numeric columns are written as they are
        d = wide.get(str(name), digits)
        if float_format is not None and str(name) not in wide:
            out[name] = col.map(lambda v: format_number(v) if _whole_or_missing(v) else float_format.format(_stable(v))
                                ).astype(object)
        else:
            out[name] = col.map(partial(format_number, digits=d)).astype(object)
    return out


def _stable(v: Any) -> float:
    """``v`` rounded to :data:`STABLE_DIGITS` significant digits: what every machine computes alike."""
    return float(f"{float(v):.{STABLE_DIGITS}g}")


def _whole_or_missing(v: Any) -> bool:
    return not isinstance(v, (float, np.floating)) or math.isnan(v) or (float(v).is_integer() and abs(v) < _WHOLE)


def save_table(
    df: pd.DataFrame,
    name: str,
    outdir: str | Path,
    *,
    caption: str | None = None,
    float_format: str | None = None,
    digits: Mapping[str, int] | None = None,
    index: bool = False,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Path]:
    r"""Write ``df`` to ``outdir/name.{csv,md,tex}`` and its provenance to ``name.table.json``; return the paths.

    Numbers are written at fixed significant digits per column type (module doc): floats at 6 in CSV and
    4 in Markdown and LaTeX (``float_format``, e.g. ``"{:.3f}"``, overrides the latter), integers whole,
    and ``digits`` (column -> significant digits) keeps chosen columns more precise. The same table gives
    the same bytes on every machine. In CSV, text that a spreadsheet would run as a formula (opening with
    ``= + - @``, tab or CR, and not wholly a number) gets a leading ``'`` (:func:`spreadsheet_safe`). In
    LaTeX, the specials are escaped and a line break in a cell becomes a space. In Markdown, text cells are
    made safe: HTML in the data is escaped, ``|`` becomes ``\|`` and line breaks become ``<br>``, so a model
    reply can never break the table or inject markup.

    The sidecar (``paths["json"]``) records the run context (:func:`medeval_kit.provenance.current`: the study,
    notebook and parameters ``medeval run`` gave, or what :func:`~medeval_kit.provenance.start` found when
    the notebook ran by hand) and the hash of ``df`` (:func:`data_hash`); ``meta`` (study, notebook, parameters
    ...) replaces the context's study, notebook and parameters, as ``save_figure``'s does.

    Parameters
    ----------
    df : DataFrame
        The table.
    name : str
        The file name without extension.
    outdir : path-like
        The folder (created if missing).
    caption : str, optional
        The LaTeX caption.
    float_format : str, optional
        A format for every float in Markdown and LaTeX (e.g. ``"{:.3f}"``).
    digits : mapping of str to int, optional
        Column -> significant digits, for columns kept more precise.
    index : bool, default False
        Write the index as a column.
    meta : mapping, optional
        Study, notebook and parameters to record instead of the run context's.

    Returns
    -------
    dict of str to Path
        The files written, by format: ``csv``, ``md``, ``tex`` and ``json`` (the sidecar).

    Examples
    --------
    >>> import pandas as pd, tempfile
    >>> paths = save_table(pd.DataFrame({"x": [1.23456]}), "t", tempfile.mkdtemp())
    >>> sorted(paths)
    ['csv', 'json', 'md', 'tex']
    """
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out / f"{name}.csv", "md": out / f"{name}.md", "tex": out / f"{name}.tex"}
    csv = format_frame(df, CSV_DIGITS, columns=digits)
    _spreadsheet_frame(df, csv).to_csv(paths["csv"], index=index)
    shown = format_frame(df, TEXT_DIGITS, columns=digits, float_format=float_format).astype(object)
    shown = shown.where(shown.notna(), "")  # a missing text cell is empty, as in the CSV
    numeric = [pd.api.types.is_numeric_dtype(df[c].dtype) and not pd.api.types.is_bool_dtype(df[c].dtype)
               for c in df.columns]
    align = (["left"] if index else []) + ["right" if n else "left" for n in numeric]
    # disable_numparse: tabulate would otherwise re-format number-like text ("0.850" -> "0.85")
    md = _markdown_safe(shown).to_markdown(index=index, disable_numparse=True, colalign=align or None)
    if caption:
        md = f"{caption}\n\n{md}"
    paths["md"].write_text(md + "\n")
    paths["tex"].write_text(_latex(_one_line(shown), index=index, caption=caption, label=f"tab:{name}") + "\n")
    record = sidecar("table", name, paths, meta=meta)
    record["data_hash"] = data_hash(df) if digits else _formatted_hash(csv)  # the CSV's digits: the same frame
    paths["json"] = write_sidecar(out / f"{name}{SIDECAR_SUFFIX}", record)
    return paths


# --------------------------------------------------------------------------- provenance sidecars
def data_hash(*frames: pd.DataFrame) -> str:
    """Return a short SHA-256 of the frames' contents as a saved table writes them, for the provenance sidecar.

    Numbers are hashed at the CSV's significant digits (:func:`format_frame`), so last-digit floating-point
    differences between machines do not change the hash.

    Parameters
    ----------
    *frames : DataFrame
        The data, hashed in order.

    Returns
    -------
    str
        The first 16 hex digits of the SHA-256.
    """
    return _formatted_hash(*(format_frame(df) for df in frames))


def _formatted_hash(*formatted: pd.DataFrame) -> str:
    h = hashlib.sha256()
    for df in formatted:
        h.update(df.to_csv(index=True, lineterminator="\n").encode())
    return h.hexdigest()[:16]


def _stable_record(value: Any) -> Any:
    """``value`` with every float at the CSV's significant digits (recursively), for a byte-stable sidecar."""
    if isinstance(value, Mapping):
        return {str(k): _stable_record(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_stable_record(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if not math.isfinite(f) else float(f"{f:.{CSV_DIGITS}g}")
    return value


def sidecar(kind: str, name: str, paths: Mapping[str, Path], data: pd.DataFrame | None = None,
            meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Provenance record of one saved ``kind`` (``"table"``, ``"figure"``): name, files, data hash, run context.

    Parameters
    ----------
    kind : str
        The record's key for ``name``: ``"table"`` or ``"figure"``.
    name : str
        The saved output's name.
    paths : mapping
        Format -> path of the files written (their names are recorded, sorted).
    data : DataFrame, optional
        The data shown; its :func:`data_hash` is recorded (``None`` when not given).
    meta : mapping, optional
        Replaces the run context's study, notebook and parameters; keys other than study/notebook/parameters
        are folded into ``parameters`` so that every sidecar has the same shape.

    Returns
    -------
    dict
        ``kind``, files, data_hash and the run context (:func:`medeval_kit.provenance.current`: study,
        notebook, runner, parameters), floats at :data:`CSV_DIGITS`.
    """
    record = {kind: name, "files": sorted(p.name for p in paths.values()),
              "data_hash": data_hash(data) if data is not None else None, **provenance.current().record()}
    if meta is not None:
        meta = dict(meta)
        params = dict(meta.pop("parameters", None) or {})
        record["study"], record["notebook"] = meta.pop("study", None), meta.pop("notebook", None)
        params.update(meta)
        record["parameters"] = params
    record["parameters"] = _stable_record(record["parameters"])
    return record


def write_sidecar(path: str | Path, record: Mapping[str, Any]) -> Path:
    """Write a provenance ``record`` as sorted, indented JSON (byte-stable); return the path.

    Parameters
    ----------
    path : str or Path
        The sidecar file.
    record : mapping
        The record (:func:`sidecar`); floats are written at :data:`CSV_DIGITS`.

    Returns
    -------
    Path
    """
    path = Path(path)
    path.write_text(json.dumps(_stable_record(dict(record)), indent=2, sort_keys=True, default=str) + "\n")
    return path


def _md_cell(v):
    if not isinstance(v, str):
        return v
    v = html.escape(v, quote=False).replace("|", "\\|")
    return v.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>")


def _markdown_safe(df: pd.DataFrame) -> pd.DataFrame:
    """Text cells escaped for a Markdown table (see :func:`save_table`)."""
    out = df.copy()
    for col in out.columns:
        if not pd.api.types.is_numeric_dtype(out[col].dtype):
            out[col] = out[col].map(_md_cell)
    out.columns = [_md_cell(str(c)) for c in out.columns]
    return out


def _spreadsheet_frame(df: pd.DataFrame, csv: pd.DataFrame) -> pd.DataFrame:
    """``csv`` (the formatted ``df``) with formula-leading text cells and names prefixed by ``'``.

    Which cells are text is read from ``df``: a number formatted as ``"-0.41"`` is never prefixed."""
    out = csv.copy()
    for k in range(df.shape[1]):
        col = df.iloc[:, k]
        if pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype):
            continue
        risky = col.map(lambda v: isinstance(v, str) and spreadsheet_safe(v) is not v)
        if risky.any():
            out.iloc[:, k] = out.iloc[:, k].astype(object).where(~risky.to_numpy(), col.map(spreadsheet_safe))
    out.columns = [spreadsheet_safe(c) if isinstance(c, str) else c for c in df.columns]
    if out.index.dtype == object:
        out.index = [spreadsheet_safe(v) for v in out.index]
    return out


def latex_escape(text: str) -> str:
    r"""``text`` with LaTeX's special characters escaped, by the rules of pandas' ``to_latex(escape=True)``.

    Parameters
    ----------
    text : str
        Any text.

    Returns
    -------
    str
        The text as LaTeX source that prints it (``&`` as ``\&``, ``~`` as ``\textasciitilde``, ...).

    Examples
    --------
    >>> print(latex_escape("ci_low & 50% of {n}"))
    ci\_low \& 50\% of \{n\}
    """
    return _LATEX_SPECIAL.sub(_latex_sub, text)


_LATEX_SPECIAL = re.compile(r"([\\~^])( ?)|([&%$#_{}])")
_LATEX_WORDS = {"\\": "\\textbackslash ", "~": "\\textasciitilde ", "^": "\\textasciicircum "}


def _latex_sub(m: re.Match) -> str:
    if m.group(3):
        return "\\" + m.group(3)
    return _LATEX_WORDS[m.group(1)] + ("\\space " if m.group(2) else "")  # the word would swallow the space


def _latex(df: pd.DataFrame, *, index: bool, caption: str | None, label: str) -> str:
    """``df`` (its cells formatted as text) as the LaTeX table pandas' ``to_latex(escape=True)`` writes.

    pandas renders through its Styler and a jinja template: about 20 ms a table, nearly half of ``save_table``.
    This writes the same bytes directly for the tables ``save_table`` makes (text columns of text and
    True/False cells, one row of unique text column names, no index; ``tests/test_outputs.py`` compares the two
    on committed tables and on random hostile text) and leaves any other table to pandas. The caption is
    escaped too (pandas writes it as it is, where a ``%`` would hide the rest of the line).
    """
    cols = df.columns
    simple = not (index or isinstance(cols, pd.MultiIndex) or not cols.is_unique
                  or not all(isinstance(c, str) for c in cols)
                  or any(pd.api.types.is_numeric_dtype(t) for t in df.dtypes))  # pandas right-aligns those
    cells = [[v if isinstance(v, str) else str(bool(v)) if isinstance(v, (bool, np.bool_)) else None
              for v in df.iloc[:, k].tolist()] for k in range(df.shape[1])] if simple else []  # flags: True/False
    if not simple or any(v is None for col in cells for v in col):
        return df.to_latex(index=index, caption=None if caption is None else latex_escape(caption), label=label,
                           escape=True)
    lines = ["\\begin{table}"]
    if caption is not None:
        lines.append(f"\\caption{{{latex_escape(caption)}}}")
    lines += [f"\\label{{{label}}}", f"\\begin{{tabular}}{{{'l' * len(cols)}}}", "\\toprule",
              " & ".join(latex_escape(c) for c in cols) + " \\\\", "\\midrule"]
    lines += [" & ".join(latex_escape(v) for v in row) + " \\\\" for row in zip(*cells)]
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
    return "\n".join(lines) + "\n"


def _one_line(df: pd.DataFrame) -> pd.DataFrame:
    """Text cells and names with line breaks (and the blank lines they make) as one space: LaTeX-safe rows."""
    def one(v):
        return re.sub(r" *(?:\r\n|\r|\n)[\s]*", " ", v) if isinstance(v, str) else v

    out = df.map(one)
    out.columns = [one(c) for c in df.columns]
    return out
