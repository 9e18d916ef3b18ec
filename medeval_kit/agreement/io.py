"""Reading the user's annotation files for :mod:`medeval_kit.agreement`, with label hygiene.

Files are read by :func:`medeval_kit.datasets.read_table` with labels as text, exactly as written:
pandas' NA guessing would turn a real label ``None`` or ``NA`` into a missing value. Missing is an
empty cell (or JSON null), or one of the tokens the user names. Labels that differ only by case or
surrounding white space (``Correct`` and ``correct ``) are reported, and merged only when asked
(``normalize_labels=True``). :func:`read_study` turns the user's file into study inputs.
"""

from __future__ import annotations

import textwrap
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from medeval_kit.agreement.panel import StudyInputs, panel_of
from medeval_kit.columns import Columns, apply_columns, takes_columns
from medeval_kit.datasets._io import read_table, sniff_text_file
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import SchemaError

__all__ = ["LabelWarning", "LabelNote", "MISSING_TOKENS", "check_labels", "read_annotations", "read_checked",
           "read_text_table", "read_study"]


class LabelWarning(UserWarning):
    """Labels that look like the same category written differently."""


def _as_numbers(s: pd.Series) -> pd.Series:
    """Numeric labels when every present label is a number (``1``, ``2.5``), else the text as is."""
    codes, uniq = pd.factorize(s)  # parse each distinct label once, not every row
    if not len(uniq) or not all(isinstance(v, str) for v in uniq):
        return s
    num = pd.to_numeric(pd.Series(np.asarray(uniq, dtype=object)), errors="coerce")
    if num.isna().any():
        return s
    if (codes < 0).any():
        return pd.Series(np.append(num.to_numpy(float), np.nan)[codes], index=s.index, name=s.name)
    vals = num.to_numpy()[codes]
    if np.all(np.mod(vals, 1) == 0):
        return pd.Series(vals.astype(np.int64), index=s.index, name=s.name)
    return pd.Series(vals.astype(float), index=s.index, name=s.name)


def _map_distinct(s: pd.Series, f) -> pd.Series:
    """``s`` with ``f`` applied to each distinct present value (missing values stay missing)."""
    codes, uniq = pd.factorize(s)
    new = np.empty(len(uniq) + 1, dtype=object)
    new[:-1] = [f(v) for v in uniq]
    new[-1] = np.nan
    return pd.Series(new[codes], index=s.index, name=s.name)


def _values(s: pd.Series):
    """The column's values without its index: pandas' string array as is (no per-row Python strings)."""
    return s.array if isinstance(s.dtype, pd.StringDtype) else s.to_numpy()


class LabelNote(str):
    """One finding of the label checks: its text, its ``kind`` and whether it is ``blocking``.

    A blocking note means the labels cannot support a verdict as they are: a verdict command marks
    its rows ``invalid`` and exits non-zero until the input is fixed or the user accepts the labels
    (``--accept-label-warnings``). Kinds: ``case`` (labels differing only by case or white space),
    ``missing_token`` (``NA``, ``nan``, ``null`` ... used as a label), ``mixed_numeric`` (numbers
    but for a few), ``rare`` (used once), ``one_rater`` (used by a single rater, rarely), and the
    non-blocking ``merged`` / ``trimmed`` (what ``normalize`` did).
    """

    kind: str
    blocking: bool

    def __new__(cls, text: str, kind: str, blocking: bool = True):
        obj = super().__new__(cls, text)
        obj.kind, obj.blocking = kind, blocking
        return obj


# Labels that read as "no label"; declared as a category (categories=...) they are labels.
MISSING_TOKENS = frozenset({"na", "n/a", "nan", "null", "none", "missing", "#n/a", "-", "?", "."})
_MIN_LABELS_FOR_RARE = 10  # below this many labels, one use of a label is not evidence of a typo
_MAX_CATEGORIES_FOR_RARE = 100  # more distinct labels than this is not a category scale: no typo report


def _rows(mask: np.ndarray, k: int = 5) -> str:
    idx = np.flatnonzero(mask)
    shown = ", ".join(map(str, idx[:k])) + (" ..." if len(idx) > k else "")
    return f"row {shown}" if len(idx) == 1 else f"rows {shown} ({len(idx)} in all)"


@shared_docs
@takes_columns("label", "rater")
def check_labels(
    df: pd.DataFrame,
    *,
    columns: Columns = None,
    normalize: bool = False,
    categories: Sequence | None = None,
) -> tuple[pd.DataFrame, list[LabelNote]]:
    """Check a long annotations table's labels; return ``(df, notes)``.

    Parameters
    ----------
    df : DataFrame
        Long annotations, one row per (item, rater) (``label`` and, for the one-rater check, ``rater``);
        rows are named by their position (data rows from 0). Without a ``rater`` column the one-rater
        check is skipped.
    {columns}
    normalize : bool
        Merge labels that differ only by case or surrounding white space into their most frequent
        spelling (trimmed); the note then says so and does not block.
    categories : sequence, optional
        The declared labels. Declared labels are never "rare" or "missing-like"; labels outside them
        are a :class:`~medeval_kit.agreement.data.UnknownLabelError` raised later by the statistics.

    Returns
    -------
    df : DataFrame
        ``df``, with labels merged when ``normalize``.
    notes : list of LabelNote
        What the checks found, each a string with ``kind`` and ``blocking``.

    Examples
    --------
    >>> t = pd.DataFrame({"label": ["Correct", "correct ", "Correct", "wrong"]})
    >>> _, notes = check_labels(t)
    >>> notes[0]
    "labels that differ only by case or white space: 'Correct' ~ 'correct ' (pass --normalize-labels / normalize_labels=True to merge them)"
    >>> notes[0].blocking
    True
    """
    label, rater = "label", "rater"
    df, notes = _case_notes(df, label, normalize)
    s = df[label]
    present = s.notna().to_numpy()
    declared = {str(c).strip().casefold() for c in categories} if categories is not None else set()
    vals = pd.Series(_values(s), index=df.index)
    # per distinct value, not per row: a panel has thousands of rows and a handful of labels
    codes, uniq = pd.factorize(vals)
    is_text = np.array([isinstance(v, str) for v in uniq] + [False], dtype=bool)  # [-1]: missing
    text_mask = is_text[codes]
    if not text_mask.any():
        return df, notes  # numbers only: a scale; rare values are not typos
    folded = np.array([v.strip().casefold() if t else None for v, t in zip(uniq, is_text)] + [None], dtype=object)
    keys = pd.Series(folded[codes[text_mask]], index=vals.index[text_mask])
    # missing-like tokens used as labels
    for tok in [t for t in pd.unique(keys) if t in MISSING_TOKENS and t not in declared]:
        hit = np.zeros(len(df), bool)
        hit[np.flatnonzero(text_mask)[(keys == tok).to_numpy()]] = True
        written = vals[hit].iloc[0]
        notes.append(LabelNote(
            f"label {written!r} ({_rows(hit)}) looks like a missing value: count it as missing with --missing "
            f"{written} (missing=[{written!r}]), or declare it a label with --categories", "missing_token"))
    # numbers but for a few
    num = pd.to_numeric(pd.Series(pd.unique(vals[text_mask])), errors="coerce")
    n_num = int(num.notna().sum())
    if n_num and n_num < len(num) and n_num >= 0.8 * len(num):
        odd = [v for v, x in zip(pd.unique(vals[text_mask]), num) if pd.isna(x)]
        odd = [v for v in odd if v.strip().casefold() not in MISSING_TOKENS]
        if odd:
            hit = vals.isin(odd).to_numpy()
            notes.append(LabelNote(
                f"labels are numbers except {', '.join(map(repr, odd[:5]))} ({_rows(hit)}): a decimal comma "
                "(write 3.5) or a typo? fix the file, or count them as missing with --missing", "mixed_numeric"))
    if categories is not None or int(present.sum()) < _MIN_LABELS_FOR_RARE:
        return df, notes
    counts = vals[present].value_counts()
    if not 2 <= len(counts) <= _MAX_CATEGORIES_FOR_RARE:
        return df, notes  # one label, or free text (the statistics refuse that with their own message)
    flagged = set()
    once = [v for v, c in counts.items() if c == 1 and isinstance(v, str)
            and v.strip().casefold() not in MISSING_TOKENS]
    if once:
        hit = vals.isin(once).to_numpy()
        flagged.update(once)
        notes.append(LabelNote(
            f"label(s) used only once: {', '.join(map(repr, once[:5]))}{' ...' if len(once) > 5 else ''} "
            f"({_rows(hit)}): a typo? fix the file, or declare the label set with --categories "
            "(categories=[...])", "rare"))
    if rater and rater in df.columns:
        # per label (in order of first use): its rows, how many raters used it, and the first of them; per
        # rater: its rows. Integer codes instead of a groupby: this runs in every verdict.
        who_all = np.asarray(_values(df[rater]), dtype=object)[present]
        rc, raters = pd.factorize(who_all)
        if len(raters) >= 3:
            vc, labels = codes[present], uniq  # the labels' codes from above (present rows: none is -1)
            rated = np.flatnonzero(rc >= 0)
            size = np.bincount(vc, minlength=len(labels))
            n_raters = np.bincount(np.unique(vc[rated] * len(raters) + rc[rated]) // len(raters),
                                   minlength=len(labels))
            first = np.zeros(len(labels), dtype=np.intp)  # the label's first row with a rater
            seen, at = np.unique(vc[rated], return_index=True)
            first[seen] = rated[at]
            own = np.bincount(rc[rated], minlength=len(raters))
            lone = [k for k, v in enumerate(labels) if n_raters[k] == 1 and v not in flagged and isinstance(v, str)
                    and v.strip().casefold() not in MISSING_TOKENS
                    and (size[k] <= 2 or size[k] < 0.05 * own[rc[first[k]]])]
            if lone:
                who = [str(who_all[first[k]]) for k in lone]
                lone = [labels[k] for k in lone]
                hit = vals.isin(lone).to_numpy() & present
                notes.append(LabelNote(
                    "label(s) used rarely and by one rater only: "
                    + ", ".join(f"{v!r} ({w})" for v, w in list(zip(lone, who))[:5])
                    + f" ({_rows(hit)}): a typo? fix the file, or declare the label set with --categories "
                    "(categories=[...])", "one_rater"))
    return df, notes


def _case_notes(df: pd.DataFrame, label: str, normalize: bool) -> tuple[pd.DataFrame, list[LabelNote]]:
    """Labels that differ only by case or white space: reported (blocking), or merged when ``normalize``."""
    s = df[label]
    counts = s.value_counts(sort=False)  # first-seen order, as the notes list them
    counts = counts[[isinstance(v, str) for v in counts.index]]
    if counts.empty:
        return df, []
    groups: dict[str, list[str]] = {}
    for v in counts.index:
        groups.setdefault(v.strip().casefold(), []).append(v)
    clashes = {k: vs for k, vs in groups.items() if len(vs) > 1}
    trimmed = [v for vs in groups.values() for v in vs if len(vs) == 1 and v != v.strip()]
    if not clashes and not trimmed:
        return df, []
    shown = "; ".join(" ~ ".join(repr(v) for v in sorted(vs, key=lambda x: (-counts[x], x)))
                      for vs in list(clashes.values())[:5])
    if normalize:
        mapping = {}
        for vs in groups.values():
            best = sorted(vs, key=lambda x: (-counts[x], x))[0].strip()
            mapping.update({v: best for v in vs})
        df = df.assign(**{label: _map_distinct(s, lambda v: mapping.get(v, v) if isinstance(v, str) else v)})
        parts = [LabelNote(f"merged labels that differ only by case or white space: {shown}", "merged", False)
                 ] if clashes else []
        if trimmed:
            parts.append(LabelNote(f"trimmed white space around {len(trimmed)} label(s)", "trimmed", False))
        return df, parts
    notes = []
    if clashes:
        notes.append(LabelNote(f"labels that differ only by case or white space: {shown} "
                               "(pass --normalize-labels / normalize_labels=True to merge them)", "case"))
    if trimmed:
        notes.append(LabelNote(f"label(s) with surrounding white space: {', '.join(map(repr, trimmed[:5]))} "
                               "(--normalize-labels trims them)", "case"))
    return df, notes


def read_text_table(path: str | Path, *, sep: str | None = None, encoding: str | None = None) -> pd.DataFrame:
    """The file as :func:`medeval_kit.datasets.read_table` reads it with ``text=True``; CSV/TSV through pyarrow.

    pyarrow parses a million-row CSV several times faster than pandas' own parser. Cells stay text
    exactly as written and an empty cell is the only missing value, as in ``read_table``; a file
    pyarrow cannot take as that (ragged rows, duplicate or empty header names) goes to ``read_table``,
    which reads it or raises its error naming the file. ``sep`` / ``encoding``: as in ``read_table``
    (checked by :func:`medeval_kit.datasets.sniff_text_file` when not given).
    """
    p = Path(path)
    if p.suffix.lower() in (".csv", ".tsv", ".txt") and p.is_file():
        lay = sniff_text_file(p, sep=sep, encoding=encoding)
        df = _read_csv_arrow(p, lay.sep, lay.encoding)
        if df is not None and len(df):
            return df
        return read_table(p, text=True, sep=lay.sep, encoding=lay.encoding)
    return read_table(p, text=True, sep=sep, encoding=encoding)


def _read_csv_arrow(p: Path, sep: str, encoding: str = "utf-8") -> pd.DataFrame | None:
    """Every column as text (empty cell = missing) via pyarrow, or None when pyarrow cannot read it the pandas way."""
    import csv

    import pyarrow as pa
    import pyarrow.csv as pacsv

    utf8 = encoding.replace("_", "-").lower() in ("utf-8", "utf8", "utf-8-sig")
    try:
        with p.open(newline="", encoding="utf-8-sig" if utf8 else encoding) as fh:
            names = next(csv.reader(fh, delimiter=sep))
        if not names or "" in names or len(set(names)) != len(names):
            return None  # pandas renames these (Unnamed: 0, a.1): let it
        table = pacsv.read_csv(
            p, read_options=pacsv.ReadOptions() if utf8 else pacsv.ReadOptions(encoding=encoding),
            parse_options=pacsv.ParseOptions(delimiter=sep, newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in names},
                                                 strings_can_be_null=True, quoted_strings_can_be_null=True,
                                                 null_values=[""]))
    except (StopIteration, UnicodeError, LookupError, csv.Error, pa.ArrowException, OSError):
        return None
    if table.column_names != names or not all(pa.types.is_string(t) for t in table.schema.types):
        return None
    text = pd.Series(["a"], dtype=str).dtype  # what pandas makes of dtype=str: its string dtype, or object
    mapper = (lambda t: text if pa.types.is_string(t) else None) if isinstance(text, pd.StringDtype) else None
    return table.to_pandas(types_mapper=mapper)


_READER_COLUMNS = ("item", "rater", "label", "criterion", "rater_kind")


def _reader_columns(fn: str, columns, kw: dict, where: str) -> tuple[dict, set]:
    """The ``columns`` mapping plus the old per-column keywords popped from ``kw`` (deprecated, warned), and
    the optional columns switched off the old way (``criterion=None``, ``rater_kind=None``)."""
    from medeval_kit.columns import _check_mapping

    old = {r: kw.pop(r) for r in _READER_COLUMNS if r in kw}
    off = {r for r, v in old.items() if v is None or v is False}
    renamed = {r: str(v) for r, v in old.items() if r not in off and v != r}
    if renamed:
        warnings.warn(f"{fn}({', '.join(f'{k}={v!r}' for k, v in renamed.items())}) is deprecated; "
                      f"pass columns={renamed!r}", DeprecationWarning, stacklevel=3)
    given = _check_mapping(columns, f"{fn}()")
    mapping = {**renamed, **given}
    if "criterion" in old and "criterion" not in off:
        mapping.setdefault("criterion", "criterion")  # asked for by name: keep it
    return mapping, off


def _read_long(
    path: str | Path,
    *,
    mapping: dict,
    off: set = frozenset(),
    wide: bool = False,
    raters: Sequence[str] | None = None,
    missing: Sequence[str] = (),
    frame: pd.DataFrame | None = None,
    sep: str | None = None,
    encoding: str | None = None,
) -> pd.DataFrame:
    p = Path(path)
    # frame: the file already read (a format reader)
    df = read_text_table(p, sep=sep, encoding=encoding) if frame is None else frame
    src = str(p)
    item, rater, label = "item", "rater", "label"
    criterion = "criterion" if "criterion" in mapping else None
    needed = (item,) if wide else (item, rater, label)
    for c in needed + ((criterion,) if criterion else ()):
        yours = mapping.get(c, c)
        if yours not in df.columns:  # your name for a column we read: it must be there, not a canonical namesake
            raise SchemaError("annotations", yours, [], f"column {yours!r} not found; columns: {list(df.columns)}",
                              src)
    # your mapping wins over a (then misleading) column that already has the canonical name
    shadowed = [c for c, yours in mapping.items() if yours != c and yours in df.columns and c in df.columns]
    df = apply_columns(df.drop(columns=shadowed), mapping, where=src)
    rater_kind = None if "rater_kind" in off else "rater_kind"
    tokens = {str(t) for t in missing}
    if wide:
        if item not in df.columns:
            yours = mapping.get(item, item)
            raise SchemaError("annotations", yours, [], f"item column {yours!r} not found; columns: {list(df.columns)}",
                              src)
        keep = [item] + ([criterion] if criterion and criterion in df.columns else [])
        cols = list(raters) if raters else [c for c in df.columns if c not in keep]
        miss = [c for c in cols if c not in df.columns]
        if miss:
            raise SchemaError("annotations", miss[0], [], f"rater column(s) {miss} not found", src)
        df = df.melt(id_vars=keep, value_vars=cols, var_name="rater", value_name="label")
    for c in (item, rater, label) + ((criterion,) if criterion else ()):
        if c not in df.columns:
            yours = mapping.get(c, c)
            raise SchemaError("annotations", yours, [], f"column {yours!r} not found; columns: {list(df.columns)}",
                              src)
    bad = df[item].isna() | df[rater].isna()
    if bad.any():
        col = item if df[item].isna().any() else rater
        raise SchemaError("annotations", mapping.get(col, col), [int(i) for i in np.flatnonzero(bad)],
                          "empty item or rater", src)
    lab = df[label]
    if tokens:
        lab = lab.where(~_map_distinct(lab, lambda v: str(v) in tokens).fillna(False).astype(bool), np.nan)
    lab = _as_numbers(lab)
    out = pd.DataFrame({"item": _values(df[item].astype(str)), "rater": _values(df[rater].astype(str)),
                        "label": _values(lab)})
    if criterion:
        out["criterion"] = _values(df[criterion].astype(str))
    if rater_kind and rater_kind in df.columns and not wide:
        out["rater_kind"] = _values(df[rater_kind].astype(str).str.strip().str.lower())
    return out


_READ_DOC = """\
path : str or Path
    The annotations file: CSV/TSV, JSONL/JSON or Parquet (it only names the input in errors when
    ``frame`` is given).
columns : mapping of str to str, optional
    Your column names as ``{canonical name: your column}`` for ``item``, ``rater``, ``label``,
    ``rater_kind`` and ``criterion``, e.g. ``{"item": "case_id", "label": "grade"}``; applied right
    after reading. ``criterion`` is read only when named here (``{"criterion": "criterion"}`` for a
    file that already uses the name); ``rater_kind`` whenever the column is there.
normalize_labels : bool, default False
    Merge labels that differ only by case or surrounding white space into their most frequent spelling.
wide : bool, default False
    One row per item and one column per rater (every other column, or just ``raters``) instead of
    one row per (item, rater).
raters : sequence of str, optional
    The rater columns of a wide file.
missing : sequence of str, default ()
    Label values that mean "no label" (an empty cell and a JSON null always do).
frame : DataFrame, optional
    The file's content already read (e.g. by :func:`medeval_kit.readers.read_format`).
sep, encoding : str, optional
    CSV/TSV layout (see :func:`medeval_kit.datasets.read_table`); checked when not given."""


def read_annotations(
    path: str | Path,
    *,
    columns=None,
    normalize_labels: bool = False,
    wide: bool = False,
    raters: Sequence[str] | None = None,
    missing: Sequence[str] = (),
    frame: pd.DataFrame | None = None,
    sep: str | None = None,
    encoding: str | None = None,
    **kw,
) -> pd.DataFrame:
    """Read CSV, JSONL/JSON or Parquet annotations into the long layout (item, rater, label[, criterion, rater_kind]).

    Labels are text as written (a label ``None`` stays ``"None"``); missing labels are empty cells,
    JSON nulls, or the ``missing`` tokens. All-numeric labels become numbers. A rater-kind column
    (values ``human`` / ``llm``) is kept as ``rater_kind``. Labels differing only by case or white
    space raise a :class:`LabelWarning`; ``normalize_labels=True`` merges them. Errors name the file,
    your column and the row.

    Parameters
    ----------
    {read}
    **kw
        Deprecated: the old per-column keywords ``item``, ``rater``, ``label``, ``criterion``,
        ``rater_kind`` (use ``columns``; ``rater_kind=None`` still drops that column).

    Returns
    -------
    DataFrame
        The long annotations table (``item``, ``rater``, ``label`` [, ``criterion``, ``rater_kind``]).

    Raises
    ------
    SchemaError
        A column is missing, or an item or rater is empty (naming the file, column and rows).

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "x.csv")
    >>> _ = open(f, "w").write("case,who,grade\\n1,a,yes\\n1,b,no\\n")
    >>> read_annotations(f, columns={{"item": "case", "rater": "who", "label": "grade"}})
      item rater label
    0    1     a   yes
    1    1     b    no
    """
    mapping, off = _reader_columns("read_annotations", columns, kw, str(path))
    label_col = mapping.get("label", "label")
    out, notes = _read_checked(path, mapping, off, normalize_labels=normalize_labels, wide=wide, raters=raters,
                               missing=missing, frame=frame, sep=sep, encoding=encoding, **kw)
    if not normalize_labels:
        for n in notes:
            warnings.warn(f"{path}, column {label_col!r}: {n}", LabelWarning, stacklevel=2)
    return out


read_annotations.__doc__ = read_annotations.__doc__.format(read=textwrap.indent(_READ_DOC, "    ").lstrip())


def _read_checked(path, mapping, off, *, normalize_labels=False, categories=None, **kw):
    df = _read_long(path, mapping=mapping, off=off, **kw)
    return check_labels(df, normalize=normalize_labels, categories=categories)


def read_checked(
    path: str | Path,
    *,
    columns=None,
    normalize_labels: bool = False,
    categories: Sequence | None = None,
    wide: bool = False,
    raters: Sequence[str] | None = None,
    missing: Sequence[str] = (),
    frame: pd.DataFrame | None = None,
    sep: str | None = None,
    encoding: str | None = None,
    **kw,
) -> tuple[pd.DataFrame, list[LabelNote]]:
    """Return ``(annotations, notes)``: :func:`read_annotations` plus the label checks of :func:`check_labels`.

    Parameters
    ----------
    {read}
    categories : sequence, optional
        The declared labels (they are never reported as rare or missing-like).
    **kw
        Deprecated: the old per-column keywords ``item``, ``rater``, ``label``, ``criterion``,
        ``rater_kind`` (use ``columns``; ``rater_kind=None`` still drops that column).

    Returns
    -------
    annotations : DataFrame
        The long layout (item, rater, label[, criterion, rater_kind]).
    notes : list of LabelNote
        Each with ``kind`` and ``blocking``; a blocking note means no verdict should be drawn as is.

    Raises
    ------
    SchemaError
        A column is missing, or an item or rater is empty (naming the file, column and rows).

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "x.csv")
    >>> _ = open(f, "w").write("item,rater,label\\n1,a,yes\\n1,b,Yes\\n2,a,no\\n2,b,no\\n")
    >>> ann, notes = read_checked(f)
    >>> [(n.kind, n.blocking) for n in notes]
    [('case', True)]
    """
    mapping, off = _reader_columns("read_checked", columns, kw, str(path))
    if kw:
        raise TypeError(f"read_checked() got unexpected keyword arguments {sorted(kw)}")
    return _read_checked(path, mapping, off, normalize_labels=normalize_labels, categories=categories, wide=wide,
                         raters=raters, missing=missing, frame=frame, sep=sep, encoding=encoding)


read_checked.__doc__ = read_checked.__doc__.format(read=textwrap.indent(_READ_DOC, "    ").lstrip())


def _names(v) -> list | None:
    """A comma-separated string or a list of names; None when empty."""
    if isinstance(v, str):
        v = [x.strip() for x in v.split(",") if x.strip()]
    return list(v) if v else None


def read_study(
    path,
    *,
    columns: Columns = None,
    humans=None,
    judges=None,
    missing=(),
    normalize_labels: bool = False,
    from_format: str | None = None,
    categories=None,
    sep: str | None = None,
    encoding: str | None = None,
    **kw,
) -> StudyInputs:
    """Read the user's own annotations file as study inputs; who is human comes from ``humans`` or ``rater_kind``.

    The label checks' findings are ``label_notes`` of the result, the blocking ones also ``invalid``
    (pass them to :func:`~medeval_kit.agreement.validate_judges` so that no verdict stands on them).

    Parameters
    ----------
    path : str or Path
        The annotations file (CSV/TSV, JSONL/JSON, Parquet), or another tool's results file with ``from_format``.
    columns : mapping of str to str, optional
        Your column names as ``{canonical name: your column}`` for ``item``, ``rater``, ``label`` and
        ``rater_kind``, e.g. ``{"item": "case_id"}``; applied right after reading.
    humans, judges : list or str, optional
        The human raters and the judges (lists or comma-separated names); default from the
        ``rater_kind`` column (humans), and every other rater (judges).
    missing : list or str, default ()
        Label values that mean "no label".
    normalize_labels : bool, default False
        Merge labels that differ only by case or surrounding white space.
    from_format : str, optional
        ``path`` is another tool's results file (e.g. ``mtbench_human``, ``healthbench``), read with
        :func:`medeval_kit.readers.read_format`; its tidy columns then apply.
    categories : list or str, optional
        The declared labels.
    sep, encoding : str, optional
        CSV/TSV layout; checked when not given.
    **kw
        Deprecated: the old per-column keywords ``item``, ``rater``, ``label``, ``rater_kind``.

    Returns
    -------
    StudyInputs
        The annotations (criterion ``overall``), humans, judges, a description and the label notes.

    Raises
    ------
    PanelError
        Who is human cannot be told (no ``humans`` and no ``rater_kind`` column), or names are unknown.

    Examples
    --------
    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "x.csv")
    >>> _ = open(f, "w").write("case,who,label\\n1,a,yes\\n1,b,no\\n1,gpt,yes\\n")
    >>> st = read_study(f, columns={"item": "case", "rater": "who"}, humans=["a", "b"])
    >>> st.humans, st.judges
    (['a', 'b'], ['gpt'])
    """
    frame = None
    if from_format:
        from medeval_kit.readers import read_format

        frame = read_format(from_format, path, table="annotations")
    mapping, off = _reader_columns("read_study", columns, kw, str(path))
    if kw:
        raise TypeError(f"read_study() got unexpected keyword arguments {sorted(kw)}")
    mapping.pop("criterion", None)
    ann, notes = _read_checked(path, mapping, off, missing=_names(missing) or (), normalize_labels=normalize_labels,
                               frame=frame, categories=_names(categories), sep=sep or None, encoding=encoding or None)
    hum, jud = panel_of(ann, _names(humans), _names(judges), min_humans=1, source=str(path))
    return StudyInputs(str(path), ann.assign(criterion="overall"), hum, jud, criterion="overall",
                       description=f"your file {path}" + (f" ({'; '.join(notes)})" if notes else ""),
                       label_notes=list(notes))
