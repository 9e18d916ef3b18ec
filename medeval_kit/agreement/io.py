"""Reading the user's annotation files for :mod:`medeval_kit.agreement`, with label hygiene.

Files are read by :func:`medeval_kit.datasets.read_table` with labels as text, exactly as written:
pandas' NA guessing would turn a real label ``None`` or ``NA`` into a missing value. Missing is an
empty cell (or JSON null), or one of the tokens the user names. Labels that differ only by case or
surrounding white space (``Correct`` and ``correct ``) are reported, and merged only when asked
(``normalize_labels=True``). :func:`user_study` turns the user's file into study inputs.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from medeval_kit.agreement.panel import StudyInputs, resolve_panel
from medeval_kit.datasets._io import read_table
from medeval_kit.errors import SchemaError

__all__ = ["LabelWarning", "check_labels", "read_annotations", "read_checked", "read_text_table", "user_study"]


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


def check_labels(
    df: pd.DataFrame, *, label: str = "label", normalize: bool = False
) -> tuple[pd.DataFrame, list[str]]:
    """Return ``(df, notes)``: notes name labels that differ only by case or white space.

    With ``normalize=True`` each such group becomes its most frequent spelling (trimmed), and the
    note says so; otherwise the labels are left as they are and the note says how to merge them.

    >>> t = pd.DataFrame({"label": ["Correct", "correct ", "Correct", "wrong"]})
    >>> check_labels(t)[1]
    ["labels that differ only by case or white space: 'Correct' ~ 'correct ' (pass --normalize-labels / normalize_labels=True to merge them)"]
    """
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
        parts = [f"merged labels that differ only by case or white space: {shown}"] if clashes else []
        if trimmed:
            parts.append(f"trimmed white space around {len(trimmed)} label(s)")
        return df, parts
    notes = []
    if clashes:
        notes.append(f"labels that differ only by case or white space: {shown} "
                     "(pass --normalize-labels / normalize_labels=True to merge them)")
    if trimmed:
        notes.append(f"label(s) with surrounding white space: {', '.join(map(repr, trimmed[:5]))} "
                     "(--normalize-labels trims them)")
    return df, notes


_TEXT_SEPARATORS = {".csv": ",", ".txt": ",", ".tsv": "\t"}


def read_text_table(path: str | Path) -> pd.DataFrame:
    """The file as :func:`medeval_kit.datasets.read_table` reads it with ``text=True``; CSV/TSV through pyarrow.

    pyarrow parses a million-row CSV several times faster than pandas' own parser. Cells stay text
    exactly as written and an empty cell is the only missing value, as in ``read_table``; a file
    pyarrow cannot take as that (ragged rows, duplicate or empty header names, bad encoding) goes to
    ``read_table``, which reads it or raises its error naming the file.
    """
    p = Path(path)
    sep = _TEXT_SEPARATORS.get(p.suffix.lower())
    if sep is not None and p.is_file():
        df = _read_csv_arrow(p, sep)
        if df is not None and len(df):
            return df
    return read_table(p, text=True)


def _read_csv_arrow(p: Path, sep: str) -> pd.DataFrame | None:
    """Every column as text (empty cell = missing) via pyarrow, or None when pyarrow cannot read it the pandas way."""
    import csv

    import pyarrow as pa
    import pyarrow.csv as pacsv

    try:
        with p.open(newline="", encoding="utf-8-sig") as fh:
            names = next(csv.reader(fh, delimiter=sep))
        if not names or "" in names or len(set(names)) != len(names):
            return None  # pandas renames these (Unnamed: 0, a.1): let it
        table = pacsv.read_csv(
            p, read_options=pacsv.ReadOptions(),
            parse_options=pacsv.ParseOptions(delimiter=sep, newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in names},
                                                 strings_can_be_null=True, quoted_strings_can_be_null=True,
                                                 null_values=[""]))
    except (StopIteration, UnicodeDecodeError, csv.Error, pa.ArrowException, OSError):
        return None
    if table.column_names != names or not all(pa.types.is_string(t) for t in table.schema.types):
        return None
    text = pd.Series(["a"], dtype=str).dtype  # what pandas makes of dtype=str: its string dtype, or object
    mapper = (lambda t: text if pa.types.is_string(t) else None) if isinstance(text, pd.StringDtype) else None
    return table.to_pandas(types_mapper=mapper)


def _read_long(
    path: str | Path,
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    criterion: str | None = None,
    rater_kind: str | None = "rater_kind",
    wide: bool = False,
    raters: Sequence[str] | None = None,
    missing: Sequence[str] = (),
    frame: pd.DataFrame | None = None,
) -> pd.DataFrame:
    p = Path(path)
    df = read_text_table(p) if frame is None else frame  # frame: the file already read (a format reader)
    src = str(p)
    tokens = {str(t) for t in missing}
    if wide:
        if item not in df.columns:
            raise SchemaError("annotations", item, [], f"item column {item!r} not found; columns: {list(df.columns)}", src)
        keep = [item] + ([criterion] if criterion and criterion in df.columns else [])
        cols = list(raters) if raters else [c for c in df.columns if c not in keep]
        miss = [c for c in cols if c not in df.columns]
        if miss:
            raise SchemaError("annotations", miss[0], [], f"rater column(s) {miss} not found", src)
        df = df.melt(id_vars=keep, value_vars=cols, var_name="rater", value_name="label")
        rater, label = "rater", "label"
    for c in (item, rater, label) + ((criterion,) if criterion else ()):
        if c not in df.columns:
            raise SchemaError("annotations", c, [], f"column {c!r} not found; columns: {list(df.columns)}", src)
    bad = df[item].isna() | df[rater].isna()
    if bad.any():
        col = item if df[item].isna().any() else rater
        raise SchemaError("annotations", col, [int(i) for i in np.flatnonzero(bad)], "empty item or rater", src)
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


def read_annotations(path: str | Path, *, normalize_labels: bool = False, **kw) -> pd.DataFrame:
    """Read CSV, JSONL/JSON or Parquet annotations into the long layout (item, rater, label[, criterion, rater_kind]).

    Labels are text as written (a label ``None`` stays ``"None"``); missing labels are empty cells,
    JSON nulls, or the ``missing`` tokens. All-numeric labels become numbers. ``wide=True``: one row
    per item and one column per rater (all other columns, or just ``raters``). A rater-kind column
    (``rater_kind=``; values ``human`` / ``llm``) is kept as ``rater_kind``. Labels differing only by
    case or white space raise a :class:`LabelWarning`; ``normalize_labels=True`` merges them.
    Keywords: item, rater, label, criterion, rater_kind, wide, raters, missing, and ``frame`` (the
    file's content already read, e.g. by :func:`medeval_kit.readers.read_format`; ``path`` then only
    names it in errors). Errors name the file, the column and the row.
    """
    out, notes = read_checked(path, normalize_labels=normalize_labels, **kw)
    if not normalize_labels:
        for n in notes:
            warnings.warn(f"{path}, column {kw.get('label', 'label')!r}: {n}", LabelWarning, stacklevel=2)
    return out


def read_checked(path: str | Path, *, normalize_labels: bool = False, **kw) -> tuple[pd.DataFrame, list[str]]:
    """Return ``(annotations, notes)``: :func:`read_annotations` plus the label-hygiene notes."""
    return check_labels(_read_long(path, **kw), normalize=normalize_labels)


def _names(v) -> list | None:
    """A comma-separated string or a list of names; None when empty."""
    if isinstance(v, str):
        v = [x.strip() for x in v.split(",") if x.strip()]
    return list(v) if v else None


def user_study(
    path,
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    rater_kind: str = "rater_kind",
    humans=None,
    judges=None,
    missing=(),
    normalize_labels: bool = False,
    from_format: str | None = None,
) -> StudyInputs:
    """The user's own annotations file as study inputs; who is human comes from ``humans`` or ``rater_kind``.

    ``humans`` / ``judges`` / ``missing`` (label tokens meaning "no label"): lists or comma-separated
    names. ``from_format``: ``path`` is another tool's results file (e.g. ``mtbench_human``,
    ``healthbench``), read with :func:`medeval_kit.readers.read_format`; its tidy columns then apply.
    """
    frame = None
    if from_format:
        from medeval_kit.readers import read_format

        frame = read_format(from_format, path, table="annotations")
    ann, notes = read_checked(path, item=item, rater=rater, label=label, rater_kind=rater_kind,
                              missing=_names(missing) or (), normalize_labels=normalize_labels, frame=frame)
    hum, jud = resolve_panel(ann, _names(humans), _names(judges), min_humans=1, source=str(path))
    return StudyInputs(str(path), ann.assign(criterion="overall"), hum, jud, criterion="overall",
                       description=f"your file {path}" + (f" ({'; '.join(notes)})" if notes else ""))
