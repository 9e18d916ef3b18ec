"""MCQ item tables for item analysis: one row per question with its lettered options and key.

The ``mcq items`` table has ``item``, ``source``, ``question`` (vignette and stem), ``options`` (a dict
letter -> text, letters A, B, C ... in order), ``key`` (the keyed letter) and ``n_options``; readers add
``trace`` and ``round`` (refinement traces), ``difficulty_label`` and ``difficulty_rank`` (planted
difficulty) and ``parse_status`` (``ok``; ``failed`` when the options could not be read: such items
are kept, counted and never shown to examinees).
"""

from __future__ import annotations

import ast
import json
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.datasets._io import data_dir, read_json, read_table
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import DataFileError, SchemaError
from medeval_kit.results import result_frame, result_row
from medeval_kit.stats import wilson_interval

__all__ = ["LETTERS", "DIFFICULTY_LEVELS", "mcq_items", "format_options", "shuffled_options", "split_options",
           "medqg_difficulty_items", "medqg_round_items", "srefine_items", "grounded_items", "item_counts"]

LETTERS = "ABCDEFGHIJ"
DIFFICULTY_LEVELS = ("Very Easy", "Easy", "Medium", "Hard", "Very Hard")
"""The planted difficulty labels of MCQG-SRefine's difficulty-control outputs, easiest first (rank 1..5)."""

_ITEM_COLUMNS = ["item", "source", "question", "options", "key", "n_options", "parse_status", "note"]


def _seed(*parts: Any) -> int:
    """A stable 31-bit seed from arbitrary parts (crc32 of their repr)."""
    return zlib.crc32(repr(tuple(parts)).encode("utf-8")) & 0x7FFFFFFF


def shuffled_options(correct: str, distractors: list[str], *, seed: int) -> tuple[dict[str, str], str]:
    """Return (letter -> text, key letter) for ``[correct] + distractors`` in a seeded random order.

    Parameters
    ----------
    correct : str
        The correct answer's text.
    distractors : list of str
        The distractors' texts.
    seed : int
        Random seed of the order.

    Returns
    -------
    tuple of (dict, str)
        The options ``{letter: text}`` and the key letter.

    Examples
    --------
    >>> opts, key = shuffled_options("yes", ["no", "maybe"], seed=0)
    >>> opts[key]
    'yes'
    """
    texts = [str(correct)] + [str(d) for d in distractors]
    order = np.random.default_rng(int(seed)).permutation(len(texts)).tolist()
    return {LETTERS[i]: texts[j] for i, j in enumerate(order)}, LETTERS[order.index(0)]


def split_options(text: Any) -> list[str]:
    """Return the option texts of a lettered list written as one string (``"A : x B : y"``, ``"a) x b) y"``).

    Markers must run a, b, c ... in order (either case, followed by ``:``, ``)`` or ``.``), so a letter
    inside an option's text does not split it.

    Parameters
    ----------
    text : str
        The lettered list.

    Returns
    -------
    list of str
        The option texts in order; ``[]`` when fewer than two options are found.

    Examples
    --------
    >>> split_options("a: guillain-barre syndrome b: multiple sclerosis")
    ['guillain-barre syndrome', 'multiple sclerosis']
    """
    import re

    s = "" if text is None else str(text)
    starts, pos = [], 0
    for letter in LETTERS.lower():
        m = re.compile(rf"(?:^|(?<=\s)|(?<=\())[{letter}{letter.upper()}]\s*[:\)\.]\s*").search(s, pos)
        if m is None:
            break
        starts.append((m.start(), m.end()))
        pos = m.end()
    if len(starts) < 2:
        return []
    out = []
    for k, (_, end) in enumerate(starts):
        stop = starts[k + 1][0] if k + 1 < len(starts) else len(s)
        out.append(s[end:stop].strip().rstrip(",;").strip())
    return out if all(out) else []


def format_options(options: Mapping[str, str]) -> str:
    """Return the options as lines ``A. text``.

    Parameters
    ----------
    options : mapping of str to str
        ``{letter: text}``.

    Returns
    -------
    str
        One line per option.

    Examples
    --------
    >>> print(format_options({"A": "yes", "B": "no"}))
    A. yes
    B. no
    """
    return "\n".join(f"{k}. {v}" for k, v in options.items())


def _finish(rows: list[dict], extra: list[str]) -> pd.DataFrame:
    """Return the rows as an items table with the standard columns first."""
    df = pd.DataFrame(rows)
    for c in _ITEM_COLUMNS:
        if c not in df.columns:
            df[c] = "" if c in ("note",) else pd.NA
    df["n_options"] = [len(o) if isinstance(o, dict) else 0 for o in df["options"]]
    return df[_ITEM_COLUMNS + [c for c in extra if c in df.columns]].reset_index(drop=True)


@shared_docs
@takes_columns("item", "question", "options", "key", "context")
def mcq_items(df: pd.DataFrame, *, source: str = "mcq", columns: Columns = None) -> pd.DataFrame:
    """Return your MCQs as an items table: ``options`` a dict or its JSON/Python text, ``key`` its letter.

    A ``context`` column (optional) is put before the question. A row whose options do not parse or
    whose key is not one of its letters is kept with ``parse_status = "failed"`` and a note.

    Parameters
    ----------
    df : DataFrame
        One row per question: ``item``, ``question``, ``options``, ``key`` and optionally ``context``;
        other columns are kept.
    source : str
        The value of the ``source`` column of the result (where the questions come from).
    {columns}

    Returns
    -------
    DataFrame
        The items table: ``item, source, question, options, key, n_options, parse_status, note`` and the
        other columns of ``df``.

    Raises
    ------
    SchemaError
        A needed column is missing.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"id": ["q1"], "question": ["2 + 2?"], "options": ['{"A": "4", "B": "5"}'], "key": ["a"]})
    >>> mcq_items(df, columns={"item": "id"})[["item", "key", "n_options", "parse_status"]].values.tolist()
    [['q1', 'A', 2, 'ok']]
    """
    roles = ("item", "question", "options", "key", "context")
    missing = [c for c in roles[:4] if c not in df.columns]
    if missing:
        raise SchemaError("items", missing[0], [], f"column(s) {missing} not found; present: {list(df.columns)}")
    has_context = "context" in df.columns
    rows = []
    for _, r in df.iterrows():
        opts = _as_dict(r["options"])
        k = str(r["key"]).strip().upper() if pd.notna(r["key"]) else ""
        status, note = "ok", ""
        if not opts:
            status, note = "failed", "options are not a dict of letter -> text"
        elif k not in opts:
            status, note = "failed", f"key {k!r} is not one of the options {list(opts)}"
        text = str(r["question"])
        if has_context and pd.notna(r["context"]) and str(r["context"]).strip():
            text = f"{str(r['context']).strip()}\n\n{text}"
        rows.append({**{c: r[c] for c in df.columns if c not in roles},
                     "item": str(r["item"]), "source": source, "question": text, "options": opts, "key": k,
                     "parse_status": status, "note": note})
    return _finish(rows, [c for c in df.columns if c not in roles])


def _as_dict(value: Any) -> dict[str, str]:
    """``value`` as an ordered letter -> text dict (from a dict, JSON or a Python literal); {} if it is none."""
    if isinstance(value, dict):
        d = value
    else:
        if value is None or (isinstance(value, float) and np.isnan(value)):
            return {}
        d = None
        for parse in (json.loads, ast.literal_eval):
            try:
                d = parse(str(value))
                break
            except (ValueError, SyntaxError, TypeError):
                continue
        if not isinstance(d, dict):
            return {}
    out = {str(k).strip().upper(): str(v) for k, v in d.items()}
    return out if all(k in LETTERS for k in out) else {}


def medqg_difficulty_items(path: str | Path | None = None) -> pd.DataFrame:
    """Return MCQG-SRefine's difficulty-controlled questions (10 notes x 5 planted levels) as items.

    From ``medqg/outputs/dc_usmle_hum_top10.jsonl`` (GPT-4 outputs; one JSON array). Adds ``note``
    (the clinical note's index, ``trace``), ``difficulty_label`` and ``difficulty_rank`` (1 = Very Easy).

    Parameters
    ----------
    path : str or Path, optional
        The outputs file; default the bundled copy.

    Returns
    -------
    DataFrame
        The items table with ``trace``, ``difficulty_label`` and ``difficulty_rank``.

    Raises
    ------
    DataFileError
        The file is not a JSON array of notes.
    """
    p = Path(path) if path else data_dir() / "medqg" / "outputs" / "dc_usmle_hum_top10.jsonl"
    content = read_json(p)
    if not isinstance(content, list):
        raise DataFileError(f"{p}: expected a JSON array of notes, got a {type(content).__name__}")
    rows = []
    for n, rec in enumerate(content):
        for rank, level in enumerate(DIFFICULTY_LEVELS, start=1):
            q = rec.get(level) if isinstance(rec, dict) else None
            if not isinstance(q, dict):
                rows.append({"item": f"dc{n}:{rank}", "source": "medqg_difficulty", "question": "", "options": {},
                             "key": "", "parse_status": "failed", "note": f"level {level!r} missing",
                             "trace": f"dc{n}", "difficulty_label": level, "difficulty_rank": rank})
                continue
            opts = _as_dict(q.get("options"))
            key = str(q.get("answer_idx", "")).strip().upper()
            ok = bool(opts) and key in opts
            rows.append({"item": f"dc{n}:{rank}", "source": "medqg_difficulty", "question": str(q.get("question", "")),
                         "options": opts, "key": key, "parse_status": "ok" if ok else "failed",
                         "note": "" if ok else "options or key unreadable", "trace": f"dc{n}",
                         "difficulty_label": level, "difficulty_rank": rank})
    return _finish(rows, ["trace", "difficulty_label", "difficulty_rank"])


def medqg_round_items(source: str = "top10", *, root: str | Path | None = None, seed: int = 0) -> pd.DataFrame:
    """Return each refinement round of the bundled MedQG traces as an MCQ (one item per trace and round).

    The traces store the correct answer and the distractors as one string (``"A : x B : y"``); they are
    split with :func:`split_options` and shuffled with a seed derived from (``seed``, item), since the
    traces keep no lettered order. A round whose distractors cannot be split is kept with
    ``parse_status = "failed"``.

    Parameters
    ----------
    source : {"top10", "iter_feedback", "icl_qgqa", "all"}
        Which bundled trace set.
    root : str or Path, optional
        The data folder holding the traces; default the bundled data.
    seed : int
        Random seed of the option order (combined with each item's name).

    Returns
    -------
    DataFrame
        The items table with ``trace``, ``round`` and ``keypoint``.

    Raises
    ------
    ParameterError
        ``source`` is unknown.
    """
    from medeval_kit.datasets.medqg_rounds import MEDQG_ROUND_SOURCES, read_round_traces

    names = list(MEDQG_ROUND_SOURCES) if source == "all" else [source]
    base = Path(root) if root is not None else data_dir()
    rows = []
    for name in names:
        if name not in MEDQG_ROUND_SOURCES:
            from medeval_kit.errors import ParameterError

            raise ParameterError(f"source {source!r} is unknown; choose one of {[*MEDQG_ROUND_SOURCES, 'all']}")
        for rec in read_round_traces(name, base / MEDQG_ROUND_SOURCES[name]):
            trace = f"{name}:{rec['id']}"
            for k, d in enumerate(rec["rounds"], start=1):
                item = f"{trace}:r{k}"
                d = d if isinstance(d, dict) else {}
                correct = str(d.get("correct_answer") or "").strip()
                distractors = split_options(d.get("distractor_options"))
                text = f"{str(d.get('context') or '').strip()}\n\n{str(d.get('question') or '').strip()}".strip()
                row = {"item": item, "source": f"medqg_{name}", "question": text, "trace": trace, "round": k,
                       "keypoint": rec.get("keypoint", "")}
                if not correct or not distractors:
                    rows.append({**row, "options": {}, "key": "", "parse_status": "failed",
                                 "note": "no correct answer" if not correct else "distractors could not be split"})
                    continue
                opts, key = shuffled_options(correct, distractors, seed=_seed(seed, item))
                rows.append({**row, "options": opts, "key": key, "parse_status": "ok", "note": ""})
    return _finish(rows, ["trace", "round", "keypoint"])


def srefine_items(path: str | Path) -> pd.DataFrame:
    """Return the MCQG-SRefine generations table (``tables/generation/srefine_generations.csv``) as items.

    One item per trace (``item`` column of the file) and round: ``options`` (JSON), ``answer_letter``;
    context and question are joined. Any number of traces and rounds is read.

    Parameters
    ----------
    path : str or Path
        The generations table.

    Returns
    -------
    DataFrame
        The items table with ``trace`` and ``round``.

    Raises
    ------
    SchemaError
        A needed column is missing.
    """
    df = read_table(path)
    need = ["item", "round", "question", "options", "answer_letter"]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise SchemaError("items", missing[0], [], f"column(s) {missing} not found in the generations file", str(path))
    df = df.rename(columns={"item": "trace"})
    df["item"] = [f"{t}:r{int(r)}" for t, r in zip(df["trace"], df["round"])]
    df["round"] = df["round"].astype("int64")
    keep = df[["item", "trace", "round", "question", "options", "answer_letter"]
              + (["context"] if "context" in df.columns else [])]
    return mcq_items(keep.rename(columns={"answer_letter": "key"}), source="srefine")


def grounded_items(path: str | Path) -> pd.DataFrame:
    """Return the valid MCQs of a grounded-generation items table (``format == "mcq"``, ``valid``) as items.

    Parameters
    ----------
    path : str or Path
        The grounded items table (``item, format, question, choices, answer``; optional ``valid``).

    Returns
    -------
    DataFrame
        The items table.

    Raises
    ------
    SchemaError
        A needed column is missing.
    """
    df = read_table(path)
    need = ["item", "format", "question", "choices", "answer"]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise SchemaError("items", missing[0], [], f"column(s) {missing} not found in the grounded items file",
                          str(path))
    mcq = df[df["format"].astype(str) == "mcq"]
    if "valid" in mcq.columns:
        mcq = mcq[mcq["valid"].astype(str).str.lower().isin(["true", "1"])]
    return mcq_items(mcq[["item", "question", "choices", "answer"]].rename(columns={"choices": "options",
                                                                                  "answer": "key"}),
                     source="grounded")


@shared_docs
def item_counts(items: pd.DataFrame, *, by: str = "source", confidence: float = 0.95) -> pd.DataFrame:
    """Return per ``by`` the items, the items usable (options and key read) and the items failed.

    Parameters
    ----------
    items : DataFrame
        An items table (:func:`mcq_items` and the readers).
    by : str
        The column to count per.
    {confidence}

    Returns
    -------
    DataFrame
        Contract rows per ``by``: ``estimate`` the share of items usable (Wilson CI), ``n_items`` the
        items, ``n_failed`` those that failed; extra ``n_ok``.
    """
    rows = []
    for key, g in items.groupby(by, sort=True):
        n, k = len(g), int((g["parse_status"] == "ok").sum())
        rows.append(result_row(k / n, wilson_interval(k, n, confidence=confidence), "Wilson", n_items=n,
                               n_failed=n - k, **{by: key}, n_ok=k))
    return result_frame(rows, keys=[by])
