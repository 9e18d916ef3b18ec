"""Data access for the marimo apps in notebooks/: the user's uploaded file, its column mapping, checks.

Each app (``agreement``, ``judgments``, ``rounds``) needs a few *roles* (:data:`ROLES`): the item,
the rater, the label ... The user's file is read by :func:`medeval_kit.datasets.read_table` (CSV,
TSV, JSONL, JSON or Parquet), :func:`guess_mapping` pre-fills which column plays which role (exact
name, then a known alias, then a similar name), and ``*_from_table`` turns the mapped table into the
tidy table the app shows, checked by the library's own validation (``agreement.read_checked``,
``bias.check_pairwise``, ``schemas.validate``). Errors are :class:`~medeval_kit.errors.SchemaError`
naming the file, the user's own column and the rows. Without an upload the apps show the bundled
datasets (:data:`BUNDLED`). Everything here is plain pandas, so tests reach it without marimo.
"""

from __future__ import annotations

import difflib
import html
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import DataFileError, MedevalError, SchemaError
from medeval_kit.tables import escape_markdown

from .bundled import _text, load_annotations_for_app, load_judgments_for_app, load_rounds_for_app

__all__ = ['Role', 'ROLES', 'TABLES', 'UPLOAD_TYPES', 'BUNDLED', 'read_user_file', 'read_upload', 'guess_mapping', 'check_mapping', 'roles_markdown', 'table_note', 'attempt', 'annotations_from_table', 'judgments_from_table', 'unknown_verdicts', 'rounds_from_table', 'mapping_form', 'problem_callout', 'stop_on_problem', 'flip_table', 'position_summary', 'shown_text', 'notes_markdown', 'flip_summary_markdown', 'pair_markdown', 'response_markdown']

UPLOAD_TYPES = [".csv", ".tsv", ".txt", ".jsonl", ".ndjson", ".json", ".parquet", ".pq"]
"""File types the upload accepts: what :func:`medeval_kit.datasets.read_table` reads."""


@dataclass(frozen=True)
class Role:
    """One column an app needs: its tidy name, what it holds, whether it is required, names it often has.

    Parameters
    ----------
    name : str
        The tidy (canonical) column name.
    help : str
        What the column holds, for the app's table of roles.
    required : bool, default True
        Whether the app needs it.
    aliases : tuple of str
        Names the column often has in other tools' files (matched when guessing the mapping).
    """

    name: str
    help: str
    required: bool = True
    aliases: tuple[str, ...] = ()


_ITEM = ("item_id", "id", "case", "case_id", "question_id", "qid", "example_id", "sample_id", "pair_id",
         "instance_id", "doc_id", "unit")
_CRITERION = ("criteria", "dimension", "rubric", "metric", "question_type")

ROLES: dict[str, tuple[Role, ...]] = {
    "agreement": (
        Role("item", "the item (case, question, pair) each label is about", aliases=_ITEM),
        Role("rater", "who gave the label: a person or a model", aliases=(
            "annotator", "annotator_id", "rater_id", "coder", "reviewer", "labeler", "labeller", "grader",
            "physician", "evaluator", "judge", "worker_id")),
        Role("label", "the label given (a category such as A / B / tie, or an ordinal score)", aliases=(
            "verdict", "rating", "answer", "choice", "preference", "winner", "grade", "category", "annotation",
            "class", "decision")),
        Role("rater_kind", "'human' or 'llm' per row; else pick the human raters in the app", False, aliases=(
            "kind", "rater_type", "annotator_type", "annotator_kind", "type", "role")),
        Role("criterion", "the criterion, when raters labelled several", False, aliases=_CRITERION + ("aspect",)),
    ),
    "judgments": (
        Role("item", "the pair of responses judged", aliases=_ITEM),
        Role("judge", "the judge model (absent: one judge)", False, aliases=(
            "judge_model", "judge_name", "judge_id", "grader", "evaluator", "annotator", "rater")),
        Role("criterion", "the criterion (absent: one criterion 'overall')", False, aliases=_CRITERION),
        Role("order", "presentation order: AB (A shown first) or BA (B shown first)", aliases=(
            "presentation_order", "position", "ordering", "slot_order", "orientation", "swap")),
        Role("verdict", "which model won (A / B / tie / neither) or which slot won (first / second / tie)",
             aliases=("winner", "preference", "choice", "label", "decision", "result", "judgment", "judgement")),
        Role("parse_status", "'ok' when the judge's output was parsed; anything else is a failed parse", False,
             aliases=("status", "parsed", "parse_ok")),
        Role("repeat", "repeat index when each pair was judged more than once per order", False, aliases=(
            "sample", "trial", "epoch", "attempt", "run")),
        Role("question", "the question or instruction (shown with the texts)", False, aliases=(
            "prompt", "instruction", "input", "query")),
        Role("text_a", "response A's text", False, aliases=(
            "response_a", "answer_a", "output_a", "completion_a", "response_1", "output_1")),
        Role("text_b", "response B's text", False, aliases=(
            "response_b", "answer_b", "output_b", "completion_b", "response_2", "output_2")),
    ),
    "rounds": (
        Role("item", "the item being refined", aliases=_ITEM),
        Role("round", "refinement round, an integer (1 = initial draft)", aliases=(
            "iteration", "iter", "round_id", "round_number", "step", "turn", "refinement_round")),
        Role("component", "the part scored (context, question, answer ...)", aliases=(
            "part", "section", "field", "element")),
        Role("aspect", "rubric aspect, 'total' for the component score (absent: every row is a total)", False,
             aliases=("sub_aspect", "rubric_aspect", "dimension")),
        Role("score", "the score: a number, or an 'x/y' string such as 24/25", aliases=(
            "points", "rating", "score_value")),
        Role("max_score", "the maximum that score could reach (absent: scores are already 0-1 or 'x/y')", False,
             aliases=("max", "max_points", "maximum", "out_of", "score_max", "full_score")),
        Role("stop", "True on the round after which the run stopped (absent: each item's last round)", False,
             aliases=("stopped", "is_stop", "stop_flag", "final")),
        Role("best", "True on the round selected as the output (absent: the highest total, earliest)", False,
             aliases=("selected", "is_best", "chosen")),
        Role("critique", "the critic's feedback text", False, aliases=(
            "feedback", "comment", "comments", "rationale", "explanation", "review")),
        Role("text", "the component's text in that round", False, aliases=("content", "draft", "generation")),
    ),
}
"""Per app, the roles its columns can play, in the order they are shown and guessed."""

TABLES = {"agreement": "annotations", "judgments": "judgments", "rounds": "rounds"}
"""The tidy table (:mod:`medeval_kit.schemas`) each app builds; named in its errors."""


# --------------------------------------------------------------------------- reading
def read_user_file(path: str | Path, *, name: str | None = None) -> pd.DataFrame:
    """Return the user's file as a table (cells as written, column names as text); errors name ``name``.

    Parameters
    ----------
    path : str or Path
        The file, read by :func:`medeval_kit.datasets.read_table` (``text=True``: CSV/TSV cells are
        text, only an empty cell is missing).
    name : str, optional
        What the user calls the file (the uploaded name, the ``--data`` path as typed); default ``path``.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    medeval_kit.errors.DataFileError
        The file is missing, empty, of an unknown type or unreadable; the message starts with ``name``.
    """
    from medeval_kit.datasets._io import read_table

    name = str(path) if name is None else name
    try:
        df = read_table(path, text=True)
    except DataFileError as exc:
        raise DataFileError(str(exc).replace(str(path), name)) from None
    except Exception as exc:  # e.g. pyarrow on a corrupt Parquet file
        raise DataFileError(f"{name}: cannot be read ({type(exc).__name__}: {exc})") from None
    df.columns = [str(c) for c in df.columns]
    return df


def read_upload(name: str, contents: bytes) -> pd.DataFrame:
    """Read an uploaded file as a table.

    Parameters
    ----------
    name : str
        The uploaded file's name (its extension picks the format).
    contents : bytes
        The file's bytes.

    Returns
    -------
    DataFrame
        The table as :func:`read_user_file` reads a temporary copy named ``name``.

    Raises
    ------
    DataFileError
        The file cannot be read (the message names it).
    """
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / (Path(name).name or "upload")
        path.write_bytes(contents)
        return read_user_file(path, name=name)


def _bundled_annotations(dataset: str) -> Callable[[], pd.DataFrame]:
    return lambda: load_annotations_for_app(dataset)[0]


def _bundled_rounds(source: str) -> Callable[[], pd.DataFrame]:
    return lambda: load_rounds_for_app(source)


BUNDLED: dict[str, dict[str, Callable[[], pd.DataFrame]]] = {
    "agreement": {"pandalm": _bundled_annotations("pandalm"), "medqg_table19": _bundled_annotations("medqg_table19")},
    "judgments": {"judging study": lambda: load_judgments_for_app(""),
                  "synthetic (planted first-slot preference 0.2)": lambda: load_judgments_for_app("synthetic")},
    "rounds": {"MedQG-SRefine traces (all)": _bundled_rounds("all"), "top10": _bundled_rounds("top10"),
               "iter_feedback": _bundled_rounds("iter_feedback"), "icl_qgqa": _bundled_rounds("icl_qgqa")},
}
"""Per app, the bundled datasets shown when nothing is uploaded (name -> loader)."""


def table_note(table: pd.DataFrame, source: str) -> str:
    """Say in one Markdown line which data is shown, with its rows and columns.

    Column names sit in ``<code>`` elements, escaped by :func:`~medeval_kit.tables.escape_markdown`: a
    backtick in a name cannot close a Markdown code span and let the rest of the name through as HTML.

    Parameters
    ----------
    table : DataFrame
        The data shown.
    source : str
        Where it comes from.

    Returns
    -------
    str
        The note.
    """
    cols = ", ".join(f"<code>{escape_markdown(c, newline=' ')}</code>" for c in table.columns[:20])
    more = " ..." if table.shape[1] > 20 else ""
    return (f"Showing <b id='data-source'>{escape_markdown(source, newline=' ')}</b>: {len(table):,} rows; "
            f"columns {cols}{more}.")


def notes_markdown(notes: Sequence[str]) -> str:
    """Return the reader's notes (which quote the user's labels) as one escaped Markdown line.

    Parameters
    ----------
    notes : sequence of str
        The notes.

    Returns
    -------
    str
        One line; "" when there are none.
    """
    return "; ".join(escape_markdown(n, newline=" ") for n in notes)


def roles_markdown(app: str) -> str:
    """Describe an app's roles as a Markdown table.

    Parameters
    ----------
    app : {"agreement", "judgments", "rounds"}
        The app.

    Returns
    -------
    str
        Column role, required or not, and what it holds.
    """
    lines = ["| role | needed | what the column holds |", "|:---|:---|:---|"]
    lines += [f"| `{r.name}` | {'yes' if r.required else 'optional'} | {r.help} |" for r in ROLES[app]]
    return "\n".join(lines)


# --------------------------------------------------------------------------- mapping
def _norm(name: str) -> str:
    """The name in lower case without separators: ``Annotator ID`` -> ``annotatorid``."""
    return re.sub(r"[^0-9a-z]", "", str(name).casefold())


def guess_mapping(columns: Sequence, app: str) -> dict[str, str | None]:
    """Guess which column plays each role: the exact name first, then a known alias, then a similar name.

    Each column plays at most one role; a pass over all roles ends before the next, looser pass starts, so
    an exact ``label`` column is never taken by a similar name of another role.

    Parameters
    ----------
    columns : sequence of str
        The file's columns.
    app : {"agreement", "judgments", "rounds"}
        The app.

    Returns
    -------
    dict of str to str or None
        ``{role: column}``; ``None`` where nothing fits.
    """
    cols = [str(c) for c in columns]
    roles = ROLES[app]
    out: dict[str, str | None] = {r.name: None for r in roles}
    used: set[str] = set()

    def take(role: Role, col: str | None) -> None:
        if col is not None and out[role.name] is None and col not in used:
            out[role.name] = col
            used.add(col)

    for r in roles:  # 1. the tidy name itself, any case
        take(r, next((c for c in cols if c.casefold() == r.name), None))
    for r in roles:  # 2. the name or an alias without case and separators
        keys = [_norm(k) for k in (r.name, *r.aliases)]
        take(r, next((c for k in keys for c in cols if c not in used and _norm(c) == k), None))
    for r in roles:  # 3. a similar name (difflib ratio >= 0.8)
        if out[r.name] is not None:
            continue
        free = {_norm(c): c for c in cols if c not in used}
        for k in (r.name, *r.aliases):
            hit = difflib.get_close_matches(_norm(k), list(free), n=1, cutoff=0.8)
            if hit:
                take(r, free[hit[0]])
                break
    return out


def check_mapping(
    columns: Sequence, mapping: Mapping[str, Any], app: str, *, source: str | None = None
) -> dict[str, str]:
    """Check a column mapping against the file.

    Parameters
    ----------
    columns : sequence of str
        The file's columns.
    mapping : mapping of str to str or None
        ``{role: column}`` chosen in the app (``None`` or ``""`` leaves a role unmapped).
    app : {"agreement", "judgments", "rounds"}
        The app.
    source : str, optional
        The file's name, for errors.

    Returns
    -------
    dict of str to str
        ``{role: column}`` for the mapped roles.

    Raises
    ------
    SchemaError
        A required role has no column, a mapped column is not in the file, or one column is mapped to two roles.
    """
    table, cols = TABLES[app], [str(c) for c in columns]
    out = {r.name: str(mapping[r.name]) for r in ROLES[app] if mapping.get(r.name) not in (None, "")}
    for r in ROLES[app]:
        if r.required and r.name not in out:
            raise SchemaError(table, None, [], f"no column is chosen for {r.name!r} ({r.help}); pick it in the "
                              f"'{r.name} column' dropdown. Columns in the file: {cols}", source)
    for role, col in out.items():
        if col not in cols:
            raise SchemaError(table, col, [], f"column {col!r} (chosen for {role!r}) is not in the file; "
                              f"columns: {cols}", source)
    seen: dict[str, str] = {}
    for role, col in out.items():
        if col in seen:
            raise SchemaError(table, col, [], f"column {col!r} is chosen for both {seen[col]!r} and {role!r}; "
                              "each role needs its own column", source)
        seen[col] = role
    return out


def _renamed(table: pd.DataFrame, m: Mapping[str, str], app: str) -> pd.DataFrame:
    """The table with mapped columns under their role names; unmapped columns named like a role are dropped."""
    roles = {r.name for r in ROLES[app]}
    drop = [c for c in table.columns if c in roles and c not in m.values()]
    keep = table.drop(columns=drop).rename(columns={col: role for role, col in m.items()})
    return keep.reset_index(drop=True)


def _in_user_terms(exc: SchemaError, m: Mapping[str, str]) -> SchemaError:
    """The same error with the role names in its column replaced by the user's column names."""
    col = ",".join(m.get(c, c) for c in exc.column.split(",")) if exc.column else None
    return SchemaError(exc.table, col, exc.rows, exc.problem, exc.source)


def attempt(fn: Callable, *args, **kwargs) -> tuple[Any, str]:
    """Call a function and turn a :class:`~medeval_kit.errors.MedevalError` into a message for the app.

    Parameters
    ----------
    fn : callable
        What to call.
    *args, **kwargs
        Its arguments.

    Returns
    -------
    value : object
        ``fn``'s result, or ``None`` when it raised.
    message : str
        ``""``, or the error's message.
    """
    try:
        return fn(*args, **kwargs), ""
    except MedevalError as exc:
        return None, str(exc)


def _rows(mask) -> list[int]:
    return [int(i) for i in np.flatnonzero(np.asarray(mask, dtype=bool))]




# --------------------------------------------------------------------------- agreement
def annotations_from_table(
    table: pd.DataFrame, mapping: Mapping[str, Any], *, source: str | None = None
) -> tuple[pd.DataFrame, list[str], list[str]]:
    """Turn the user's mapped table into annotations.

    The table goes through :func:`medeval_kit.agreement.read_checked` (labels as written, all-numeric labels
    as numbers, an empty cell is a missing label); ``criterion`` is ``overall`` when not mapped.

    Parameters
    ----------
    table : DataFrame
        The user's table.
    mapping : mapping of str to str or None
        ``{role: column}`` chosen in the app (``None`` or ``""`` leaves a role unmapped).
    source : str, optional
        The file's name, for errors.

    Returns
    -------
    annotations : DataFrame
        ``item, rater, label, criterion`` [, ``rater_kind``].
    humans : list of str
        The raters whose rater kind is ``human`` (empty without a rater-kind column).
    notes : list of str
        The label checks' findings (:func:`medeval_kit.agreement.check_labels`).
    """
    from medeval_kit.agreement.io import read_checked
    from medeval_kit.agreement.panel import HUMAN_KINDS, JUDGE_KINDS

    m = check_mapping(table.columns, mapping, "agreement", source=source)
    roles = ("item", "rater", "label", "criterion", "rater_kind")
    frame = table.reset_index(drop=True)
    frame = frame.drop(columns=[r for r in ("criterion", "rater_kind") if r in frame and not m.get(r)])
    ann, notes = read_checked(source or "your file", frame=frame, columns={r: m[r] for r in roles if m.get(r)})
    if "criterion" not in ann:
        ann["criterion"] = "overall"
    dup = ann.duplicated(["item", "rater", "criterion"], keep=False)
    if dup.any():
        cols = [m["item"], m["rater"]] + ([m["criterion"]] if "criterion" in m else [])
        raise SchemaError("annotations", ",".join(cols), _rows(dup),
                          "a rater labels an item more than once; each (item, rater"
                          + (", criterion" if "criterion" in m else "") + ") must occur once", source)
    humans: list[str] = []
    if "rater_kind" in ann:
        kinds = ann["rater_kind"]
        bad = ~kinds.isin(HUMAN_KINDS + JUDGE_KINDS)
        if bad.any():
            raise SchemaError("annotations", m["rater_kind"], _rows(bad),
                              f"unknown rater kind(s) {sorted(set(kinds[bad]))[:5]}; use 'human' for people and "
                              f"one of {list(JUDGE_KINDS)} for models, or clear the 'rater_kind column' dropdown "
                              "and pick the human raters instead", source)
        humans = sorted(ann.loc[kinds.isin(HUMAN_KINDS), "rater"].unique())
    return ann, humans, notes


# --------------------------------------------------------------------------- judgments
def _verdict_kind(v: str) -> str | None:
    """``"model"`` for A/B/tie/neither, ``"slot"`` for first/second, None for anything else."""
    from medeval_kit.pairwise import SLOT_LABELS, to_slot

    try:
        to_slot(v, "AB")
        return "model"
    except ValueError:
        return "slot" if v.lower() in SLOT_LABELS else None


def unknown_verdicts(table: pd.DataFrame | None, column: str | None) -> list[str]:
    """List the verdict values that are neither model terms (A/B/tie) nor slot terms (first/second).

    Parameters
    ----------
    table : DataFrame or None
        The user's table.
    column : str or None
        Its verdict column.

    Returns
    -------
    list of str
        The unknown values, sorted; empty when there is no table or column.
    """
    if table is None or not column or column not in table.columns:
        return []
    vals = {t for t in map(_text, table[column]) if t is not None}
    return sorted(v for v in vals if _verdict_kind(v) is None)


def judgments_from_table(
    table: pd.DataFrame, mapping: Mapping[str, Any], *, source: str | None = None, failed: Sequence[str] = ()
) -> pd.DataFrame:
    """Turn the user's mapped table into two-order pairwise judgments.

    Verdicts may name the model (A/B) or the presented slot (first/second; mapped to A/B with the order).
    An empty cell, a ``failed`` token or a ``parse_status`` other than ``ok`` is a failed parse
    (``parse_status = "failed"``, verdict None), never a tie. Orders must be AB / BA. The result passes
    :func:`medeval_kit.bias.check_pairwise` (both orders per pair, no duplicates); unmapped judge /
    criterion / repeat become ``judge`` / ``overall`` / 0, missing texts "".

    Parameters
    ----------
    table : DataFrame
        The user's table.
    mapping : mapping of str to str or None
        ``{role: column}`` chosen in the app (``None`` or ``""`` leaves a role unmapped).
    source : str, optional
        The file's name, for errors.
    failed : sequence of str
        Further verdict values that mean a failed parse.

    Returns
    -------
    DataFrame
        Judgments with ``verdict`` in model terms (A/B/tie/neither) and ``parse_status``.
    """
    from medeval_kit.bias import check_pairwise
    from medeval_kit.pairwise import ORDERS, to_slot, unswap

    m = check_mapping(table.columns, mapping, "judgments", source=source)
    d = _renamed(table, m, "judgments")
    d["item"] = d["item"].astype(str)
    for role, default in (("judge", "judge"), ("criterion", "overall")):
        d[role] = d[role].astype(str) if role in m else default
    d["repeat"] = _integers(d, "repeat", m, "judgments", source) if "repeat" in m else 0
    order = d["order"].map(lambda v: (_text(v) or "").upper())
    bad = ~order.isin(ORDERS)
    if bad.any():
        found = sorted({str(v) for v in d.loc[bad, "order"]})[:5]
        raise SchemaError("judgments", m["order"], _rows(bad), f"the presentation order must be AB (A shown "
                          f"first) or BA (B shown first); found {found}", source)
    d["order"] = order
    tokens = {str(t).strip() for t in failed}
    cells = d["verdict"].map(_text)
    is_failed = cells.isin(tokens) | cells.isna()
    kinds = cells.map(lambda v: None if v is None else _verdict_kind(v))
    bad = ~is_failed & kinds.isna()
    if bad.any():
        unknown = sorted(set(cells[bad]))[:8]
        raise SchemaError("judgments", m["verdict"], _rows(bad),
                          f"unknown verdict(s) {unknown}; expected which model won (A, B, tie, neither) or which "
                          "presented slot won (first, second, tie, neither). If they mean that the judge's output "
                          "could not be parsed, pick them under 'verdict values that mean a failed parse'", source)
    decisive = kinds.where(~is_failed & ~cells.map(lambda v: str(v).lower() in ("tie", "neither")))
    if decisive.nunique() > 1:  # A/B in some rows, first/second in others
        raise SchemaError("judgments", m["verdict"], _rows(decisive.eq("slot")), "the column mixes model terms "
                          "(A/B) and presented-slot terms (first/second); use one kind of verdict", source)
    model = [None if f else (unswap(v, o) if k == "slot" else unswap(to_slot(v, o), o))
             for v, k, o, f in zip(cells, kinds, d["order"], is_failed)]
    status = (d["parse_status"].map(lambda v: (_text(v) or "").lower()) if "parse_status" in m
              else pd.Series("ok", index=d.index))
    d["parse_status"] = np.where(is_failed | (status != "ok"), "failed", "ok")
    d["verdict"] = pd.Series(model, index=d.index, dtype=object).where(d["parse_status"] == "ok", None)
    d["slot_verdict"] = [to_slot(v, o) if v is not None else None for v, o in zip(d["verdict"], d["order"])]
    if "protocol" not in d:
        d["protocol"] = "pairwise"
    for col in ("question", "text_a", "text_b"):
        d[col] = d[col].map(lambda v: _text(v) or "") if col in m else ""
    try:
        check_pairwise(d, source=source)
    except SchemaError as exc:
        raise _in_user_terms(exc, m) from None
    return d


def _integers(d: pd.DataFrame, role: str, m: Mapping[str, str], table: str, source: str | None) -> pd.Series:
    """The role's column as int64; a missing or non-integer cell is a SchemaError naming the user's column."""
    num = pd.to_numeric(d[role].map(_text), errors="coerce")
    bad = num.isna() | (num % 1 != 0)
    if bad.any():
        ex = d.loc[bad, role].iloc[0]
        raise SchemaError(table, m[role], _rows(bad), f"expected whole numbers, found {ex!r}", source)
    return num.astype("int64")


def flip_table(judgments: pd.DataFrame, *, judge: str, criterion: str) -> pd.DataFrame:
    """List each item's (majority) verdict in each order and whether it flipped.

    Verdicts are in model terms (A/B/tie); rows with parse failures count in ``n_failed`` and their verdict
    is shown as ``"<failed>"``, so a failure is never read as a flip or a tie.

    Parameters
    ----------
    judgments : DataFrame
        Two-order pairwise judgments (:func:`judgments_from_table`).
    judge : str
        The judge to show.
    criterion : str
        The criterion to show.

    Returns
    -------
    DataFrame
        One row per item: the verdict per order, ``flipped`` and ``n_failed``.
    """
    j = judgments[(judgments["judge"] == judge) & (judgments["criterion"] == criterion)].copy()
    j["shown"] = j["verdict"].astype(object).where(j["parse_status"] == "ok", "<failed>")
    agg = (j.groupby(["item", "order"])["shown"].agg(lambda s: s.mode().iloc[0] if len(s.mode()) == 1 else "mixed")
           .unstack("order"))
    fails = j.groupby("item")["parse_status"].apply(lambda s: int((s != "ok").sum())).rename("n_failed")
    extra = j.groupby("item")[["question", "text_a", "text_b"]].first() if "text_a" in j else None
    out = agg.rename(columns={"AB": "verdict_AB", "BA": "verdict_BA"}).join(fails)
    if extra is not None:
        out = out.join(extra)
    out = out.dropna(subset=["verdict_AB", "verdict_BA"]).reset_index()
    valid = ~out["verdict_AB"].isin(["<failed>", "mixed"]) & ~out["verdict_BA"].isin(["<failed>", "mixed"])
    out["flip"] = valid & (out["verdict_AB"] != out["verdict_BA"])
    return out


def shown_text(v) -> str:
    """Return a cell as text safe inside Markdown (:func:`~medeval_kit.tables.escape_markdown`).

    Parameters
    ----------
    v : object
        The cell.

    Returns
    -------
    str
        The escaped text; "" when missing.
    """
    return escape_markdown(_text(v) or "")


def flip_summary_markdown(flips: pd.DataFrame, bias: pd.DataFrame, *, judge: str, criterion: str, n_boot: int,
                          n_shown: int) -> str:
    """Return the judgments app's summary line: flips, flip rate with its CI, first-slot rate, parse failures.

    Parameters
    ----------
    flips : pandas.DataFrame
        :func:`flip_table` of the judge and criterion.
    bias : pandas.DataFrame
        :func:`position_summary` indexed by ``metric``.
    judge, criterion : str
        The user's names, escaped here.
    n_boot, n_shown : int
        Bootstrap resamples, and how many items the table below shows.

    Returns
    -------
    str
        Markdown; the counts carry the ids ``n-flips`` and ``n-shown``.

    Example
    -------
    >>> from medeval_kit.datasets.synthetic import synthetic_pairwise
    >>> j = synthetic_pairwise(n_items=20, judges=("j1",), criteria=("overall",), seed=0)
    >>> flips = flip_table(j, judge="j1", criterion="overall")
    >>> bias = position_summary(j, judge="j1", criterion="overall", n_boot=50).set_index("metric")
    >>> flip_summary_markdown(flips, bias, judge="j1", criterion="overall", n_boot=50, n_shown=20)[:36]
    '**j1 / overall**: 20 items judged in'
    """
    fr, fs = bias.loc["flip_rate"], bias.loc["first_slot_rate"]
    who = f"{escape_markdown(judge, newline=' ')} / {escape_markdown(criterion, newline=' ')}"
    return (f"**{who}**: {len(flips)} items judged in both orders; "
            f"<span id='n-flips'>{int(flips['flip'].sum())}</span> flips; flip rate {fr['estimate']:.1%} "
            f"[{fr['ci_low']:.1%}, {fr['ci_high']:.1%}] (n = {int(fr['n_items'])} pairs with both orders parsed, "
            f"{n_boot} bootstrap resamples); first slot wins {fs['estimate']:.1%} of decisive calls; "
            f"parse failures: {int(flips['n_failed'].sum())}. Showing <span id='n-shown'>{n_shown}</span> items.")


def pair_markdown(row: Mapping[str, Any]) -> str:
    r"""Return one pair's heading: item, question and the verdict in each order (``<failed>`` shown as written).

    Parameters
    ----------
    row : Mapping
        A row of :func:`flip_table` (``item``, ``verdict_AB``, ``verdict_BA``, optionally ``question``).

    Returns
    -------
    str
        Markdown with every value escaped.

    Example
    -------
    >>> pair_markdown({"item": "p1", "question": "q?", "verdict_AB": "<failed>", "verdict_BA": "A"})
    '**p1**: q?\n\nAB order said **&lt;failed&gt;**, BA order said **A**.'
    """
    return (f"**{shown_text(row['item'])}**: {shown_text(row.get('question'))}\n\n"
            f"AB order said **{shown_text(row['verdict_AB'])}**, BA order said **{shown_text(row['verdict_BA'])}**.")


def response_markdown(row: Mapping[str, Any], side: str) -> str:
    """Show one response of a pair as Markdown: ``**Response A**`` and its escaped text.

    Parameters
    ----------
    row : mapping
        A judgments row with ``text_a`` and ``text_b``.
    side : {"a", "b"}
        Which response.

    Returns
    -------
    str
        The Markdown.
    """
    return f"**Response {side.upper()}**\n\n{shown_text(row.get(f'text_{side}'))}"


@shared_docs
def position_summary(judgments: pd.DataFrame, *, judge: str, criterion: str, n_boot: int = 1000,
                     seed: int = 0) -> pd.DataFrame:
    """Summarise one judge's position bias on one criterion.

    Parameters
    ----------
    judgments : DataFrame
        Two-order pairwise judgments.
    judge : str
        The judge.
    criterion : str
        The criterion.
    {n_boot}
    {seed}

    Returns
    -------
    DataFrame
        The :func:`medeval_kit.bias.position_bias` rows (flip rate, first-slot rate ...) with their CIs.
    """
    from medeval_kit.bias import position_bias

    j = judgments[(judgments["judge"] == judge) & (judgments["criterion"] == criterion)]
    # the slot verdicts are what position bias reads; the model-term verdicts are left out
    return position_bias(j.drop(columns=["verdict", "protocol"], errors="ignore"), n_boot=n_boot, seed=seed)


# --------------------------------------------------------------------------- rounds
_BOOLS = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False, "1.0": True, "0.0": False}


def _booleans(d: pd.DataFrame, role: str, m: Mapping[str, str], source: str | None) -> pd.Series:
    """The role's column as bool (True/False, 1/0, yes/no); anything else is a SchemaError naming the column."""
    val = d[role].map(lambda v: v if isinstance(v, (bool, np.bool_)) else _BOOLS.get((_text(v) or "").lower()))
    bad = val.isna()
    if bad.any():
        ex = d.loc[bad, role].iloc[0]
        raise SchemaError("rounds", m[role], _rows(bad), f"expected True/False (or 1/0, yes/no), found {ex!r}", source)
    return val.astype(bool)


def _scores(d: pd.DataFrame, m: Mapping[str, str], source: str | None) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Return (score, max_score, parse_status): numbers as numbers, ``x/y`` strings parsed, else failed."""
    from medeval_kit.datasets.scores import parse_score_string

    text = d["score"].map(_text)
    num = pd.to_numeric(text, errors="coerce").astype(float)
    parsed = [parse_score_string(t) if t is not None and np.isnan(x) else None for t, x in zip(text, num)]
    frac = pd.Series([p.status == "ok" if p is not None else False for p in parsed], index=d.index)
    score = num.where(~frac, [p.score if p is not None else np.nan for p in parsed])
    from_frac = pd.Series([p.max_score if p is not None else np.nan for p in parsed], index=d.index)
    if "max_score" in m:
        mtext = d["max_score"].map(_text)
        mx = pd.to_numeric(mtext, errors="coerce").astype(float)
        bad = mtext.notna() & mx.isna()
        if bad.any():
            raise SchemaError("rounds", m["max_score"], _rows(bad), f"expected numbers, found "
                              f"{d.loc[bad, 'max_score'].iloc[0]!r}", source)
        mx = mx.where(~(frac & mx.isna()), from_frac)
    else:
        mx = from_frac
        over = score.notna() & mx.isna() & (score > 1)
        if over.any():
            raise SchemaError("rounds", m["score"], _rows(over), "scores above 1 need their maximum: choose a "
                              "'max_score column', or give 'x/y' strings such as 24/25", source)
    status = pd.Series(np.where(score.isna(), "failed", "ok"), index=d.index)
    return score, mx, status


def rounds_from_table(table: pd.DataFrame, mapping: Mapping[str, Any], *, source: str | None = None) -> pd.DataFrame:
    """Turn the user's mapped table into a validated ``rounds`` table (:mod:`medeval_kit.schemas`).

    Scores are numbers or ``x/y`` strings (parsed by :func:`~medeval_kit.datasets.parse_score_string`; an
    unparsable score is NA with ``parse_status = "failed"`` and its text kept in ``raw_score``). Unmapped
    roles: aspect ``total``, stop on each item's last round, best = the highest total
    (:func:`medeval_kit.rounds.fill_best_rounds`), critique and text "".

    Parameters
    ----------
    table : DataFrame
        The user's table.
    mapping : mapping of str to str or None
        ``{role: column}`` chosen in the app (``None`` or ``""`` leaves a role unmapped).
    source : str, optional
        The file's name, for errors.

    Returns
    -------
    DataFrame
        The rounds table.
    """
    from medeval_kit.rounds import fill_best_rounds
    from medeval_kit.schemas import validate

    m = check_mapping(table.columns, mapping, "rounds", source=source)
    d = _renamed(table, m, "rounds")
    d["item"] = d["item"].astype(str)
    d["round"] = _integers(d, "round", m, "rounds", source)
    d["component"] = d["component"].map(_text)
    d["aspect"] = d["aspect"].map(lambda v: _text(v) or "total") if "aspect" in m else "total"
    if "raw_score" not in d:
        d["raw_score"] = d["score"].map(lambda v: _text(v) or "")
    d["score"], d["max_score"], status = _scores(d, m, source)
    if "parse_status" not in d:
        d["parse_status"] = status
    d["stop"] = (_booleans(d, "stop", m, source) if "stop" in m
                 else d["round"] == d.groupby("item")["round"].transform("max"))
    if "best" in m:
        d["best"] = _booleans(d, "best", m, source)
    for col in ("critique", "text"):
        d[col] = d[col].map(lambda v: _text(v) or "") if col in m else ""
    try:
        validate(d.assign(best=d.get("best", False)), "rounds", source=source)
    except SchemaError as exc:
        raise _in_user_terms(exc, m) from None
    return d if "best" in m else fill_best_rounds(d)


# --------------------------------------------------------------------------- marimo widgets
def mapping_form(table: pd.DataFrame, app: str, mapping: Mapping[str, str | None] | None = None):
    """Build the app's column-mapping form: one labelled dropdown per role.

    Parameters
    ----------
    table : DataFrame
        The user's table (its columns are the choices).
    app : {"agreement", "judgments", "rounds"}
        The app.
    mapping : mapping of str to str or None, optional
        The pre-filled mapping (a :class:`~medeval_kit.apps.UserData`'s); default :func:`guess_mapping`.

    Returns
    -------
    marimo.ui.dictionary
        The dropdowns, role -> column.
    """
    import marimo as mo

    guess = guess_mapping(table.columns, app) if mapping is None else mapping
    cols = [str(c) for c in table.columns]
    return mo.ui.dictionary({
        r.name: mo.ui.dropdown(options=cols, value=guess.get(r.name), allow_select_none=True,
                               label=f"{r.name} column" + ("" if r.required else " (optional)"))
        for r in ROLES[app]
    })


def problem_callout(message: str):
    """Show a problem as a red marimo callout (the message as plain text, escaped and wrapped).

    Parameters
    ----------
    message : str
        The problem.

    Returns
    -------
    marimo Html
        The callout.
    """
    import marimo as mo

    return mo.callout(mo.Html(f"<p class='medeval-problem' style='white-space: pre-wrap'>{html.escape(message)}</p>"),
                      kind="danger")


def stop_on_problem(message: str) -> None:
    """Stop the marimo cell on a problem: a :func:`problem_callout` in the app, the message on stderr in a script.

    Does nothing when ``message`` is "".

    Parameters
    ----------
    message : str
        The problem, or "".
    """
    import sys

    import marimo as mo

    if message and not mo.running_in_notebook():
        print(message, file=sys.stderr)
    mo.stop(bool(message), problem_callout(message))
