"""The user's own items as a protocol's input table: read a CSV/JSONL/Parquet file, give its columns the
tidy names the protocol reads (``item, question, answer_a, answer_b, model_a, model_b, response,
reference, answer, target``), and check it; every error names the file, the column and the rows.

Which columns a protocol needs comes from the registry (``@protocol(..., inputs=...)``); the optional
ones (``model_a``/``model_b`` of pairwise, ``target`` of the graded protocols) are those of
:data:`OPTIONAL_COLUMNS` that its run function takes as parameters.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from medeval_kit.columns import Columns, apply_columns, column_roles
from medeval_kit.datasets import read_table
from medeval_kit.errors import ParameterError, SchemaError
from medeval_kit.schemas import validate

from .registry import get

__all__ = ["OPTIONAL_COLUMNS", "item_columns", "read_items", "protocol_options"]

OPTIONAL_COLUMNS = ("model_a", "model_b", "target")
"""Columns a protocol uses when the file has them: the two models' names, the model that wrote a response."""

_TABLE = "items"
_MAY_BE_EMPTY = ("question",)  # the items schema lets a question be missing (rendered as empty text)
_SAME_PER_ITEM = ("question", "reference")  # rows of one item (k answers, several targets) share these


def item_columns(protocol: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The input columns of ``protocol``: the required ones and the optional ones, by their tidy names.

    Parameters
    ----------
    protocol : str
        A registered protocol name (``pairwise``, ``rubric``, ``reference``, ``multi_answer`` ...).

    Returns
    -------
    tuple of (tuple of str, tuple of str)
        The columns the protocol reads (``inputs`` of its ``@protocol``) and those of
        :data:`OPTIONAL_COLUMNS` it also takes.

    Example
    -------
    >>> item_columns("pairwise")
    (('item', 'question', 'answer_a', 'answer_b'), ('model_a', 'model_b'))
    """
    p = get(protocol)
    required = tuple(getattr(p.run, "__medeval_inputs__", ()) or p.inputs)
    reads = column_roles(p.run) or tuple(inspect.signature(p.run).parameters)  # old-style plugins: parameters
    return required, tuple(c for c in OPTIONAL_COLUMNS if c in reads and c not in required)


def protocol_options(protocol: str, options: Mapping[str, object], *,
                     flags: Mapping[str, str] | None = None) -> dict:
    """The ``options`` that were given (not None, not ""), checked to be parameters of ``protocol``.

    Parameters
    ----------
    protocol : str
        A registered protocol name.
    options : mapping
        Keyword arguments for its run function, e.g. ``{"rubric": "", "orders": ("AB", "BA")}``.
    flags : mapping of str to str, optional
        Option name -> how the caller names it (e.g. ``"--orders"``), quoted in the error.

    Returns
    -------
    dict
        The given options, to pass to :func:`~medeval_kit.judge.run_protocol`.

    Raises
    ------
    ParameterError
        An option was given that the protocol does not take (e.g. ``orders`` for ``rubric``).

    Example
    -------
    >>> protocol_options("rubric", {"rubric": "", "repeats": 2})
    {'repeats': 2}
    """
    given = {k: v for k, v in options.items() if v is not None and not (isinstance(v, str) and not v)}
    params = inspect.signature(get(protocol).run).parameters
    wrong = [(flags or {}).get(k, k) for k in given if k not in params]
    if wrong:
        raise ParameterError(f"{', '.join(wrong)}: not an option of protocol {protocol!r}")
    return given


def read_items(path: str | Path, protocol: str, *, columns: Columns = None,
               flags: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Read the user's items to judge with ``protocol``; return its input table under the tidy column names.

    Parameters
    ----------
    path : str or Path
        A ``.csv``, ``.tsv``, ``.jsonl``, ``.json`` (array of objects) or ``.parquet`` file, one row per
        judged unit: a pair (pairwise), a response (rubric, reference) or one of an item's k answers
        (multi_answer, with a ``target`` naming each).
    protocol : str
        The registered protocol the table is for (:func:`item_columns` says which columns it reads).
    columns : mapping of str to str, optional
        Your column names as ``{canonical name: your column}``, e.g. ``{"answer_a": "a", "answer_b": "b"}``
        (see :mod:`medeval_kit.columns`), applied right after reading; a name left out (or None) is looked
        up under its canonical name. Keys the protocol does not read are ignored; unknown keys are an error.
    flags : mapping of str to str, optional
        Tidy name -> how the caller names that option (e.g. ``"--answer-a"``), quoted in the errors.

    Returns
    -------
    pandas.DataFrame
        The required and present optional columns, renamed to their tidy names; ids (``item``,
        ``target``, model names) as text, text cells as text, a missing question as "".

    Raises
    ------
    SchemaError
        A required column is absent; a required cell is empty; a unit (item, or item and target)
        occurs twice; rows of one item disagree on their question or reference. Names file, column, rows.
    ColumnError
        ``columns`` has a key that no table uses, or renaming would give two columns one name.
    DataFileError
        The file cannot be read.

    Example
    -------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "mine.csv"
    >>> _ = f.write_text("id,q,a,b\\n1,Fever?,Rest.,Paracetamol.\\n")
    >>> read_items(f, "pairwise", columns={"item": "id", "question": "q", "answer_a": "a", "answer_b": "b"})
      item question answer_a      answer_b
    0    1   Fever?    Rest.  Paracetamol.
    """
    src = str(path)
    required, optional = item_columns(protocol)
    given = {k: v for k, v in (columns or {}).items() if v is not None}
    names = {c: given.get(c) or c for c in required + optional}  # the file's names, quoted in the errors
    df = read_table(path, text=True).reset_index(drop=True)
    in_file = list(df.columns)  # as the user named them, for the errors
    df = apply_columns(df, given, required + optional, where=src)
    missing = [c for c in required if c not in df.columns]
    if missing:
        c = missing[0]
        how = (flags or {}).get(c)
        raise SchemaError(_TABLE, names[c], [], f"protocol {protocol!r} reads its {c} from column {names[c]!r}, "
                          f"which is not in the file (present: {in_file})"
                          + (f"; name it with {how}" if how else ""), src)
    present = [c for c in required + optional if c in df.columns]
    out = pd.DataFrame({c: df[c] for c in present})
    for c in present:
        out[c] = _as_text(out[c], names[c], src, empty_ok=c in _MAY_BE_EMPTY or c in optional)
    _check_units(out, names, protocol, src)
    view = out.drop_duplicates("item").assign(dataset=Path(src).stem)
    validate(view[["item", "dataset"] + (["question"] if "question" in view else [])].reset_index(drop=True),
             _TABLE, source=src)
    return out


def _as_text(s: pd.Series, name: str, src: str, *, empty_ok: bool) -> pd.Series:
    """Cells as text; a missing or blank cell is "" where allowed, else a located error."""
    blank = s.isna().to_numpy() | np.array([isinstance(v, str) and not v.strip() for v in s], dtype=bool)
    nested = np.array([isinstance(v, (list, dict, np.ndarray)) for v in s], dtype=bool)
    if nested.any():
        raise SchemaError(_TABLE, name, _rows(nested), "expected text, found a list or object", src)
    if blank.any() and not empty_ok:
        raise SchemaError(_TABLE, name, _rows(blank), "empty cells: every row needs a value here (fill them "
                          "or drop those rows)", src)
    return pd.Series(["" if b else str(v) for v, b in zip(s, blank)], index=s.index, dtype=object)


def _check_units(df: pd.DataFrame, names: Mapping[str, str], protocol: str, src: str) -> None:
    """Each judged unit once; the rows of one item agree on the texts they share."""
    key = ["item"] + (["target"] if "target" in df.columns else [])
    dup = df.duplicated(key, keep=False).to_numpy()
    if dup.any():
        raise SchemaError(_TABLE, ",".join(names[k] for k in key), _rows(dup),
                          f"duplicate rows: protocol {protocol!r} judges each ({', '.join(key)}) once", src)
    for c in _SAME_PER_ITEM:
        if c in df.columns:
            differs = (df.groupby("item")[c].transform("nunique") > 1).to_numpy()
            if differs.any():
                raise SchemaError(_TABLE, names[c], _rows(differs),
                                  f"rows of the same item have different {c} texts", src)


def _rows(mask: np.ndarray) -> list[int]:
    """Positional rows (0-based, after the header), as :func:`medeval_kit.schemas.validate` names them."""
    return [int(i) for i in np.flatnonzero(mask)]
