"""Per-round self-refine traces bundled from bio-nlp/MedQG, as a ``rounds`` table.

Three files (see ``data/medqg/SOURCE.md``):

``top10``          ``inputs/gpt4_usmle_hum_kp_top10.csv``: 10 traces (1–4 rounds, 5 components),
                   ``content_to_fb`` a Python-literal list, plus ``best_question`` and ``total_score``.
``iter_feedback``  ``prompt/usmle/results_iter_feedback.jsonl``: 8 traces (2–4 rounds), 4 components
                   (no reasoning, no self-answer), scores on /40, /20, /10, /15 scales.
``icl_qgqa``       ``prompt/usmle/results_icl_qgqa.jsonl``: 8 traces, mostly 1 round, 5 components.

One row per item, round and component, ``aspect = "total"`` (the component score). Round 1 is
the initial draft. Components are renamed to medeval_kit's names: context, question,
answer (``correct_answer``), distractors (``distractor_option``), reasoning.

Extra columns: ``source``; ``text`` (the round's context and question); ``question_length``
(words of context + question, whitespace split); ``note_length`` (words of the clinical note);
``critique`` (the component's feedback text); ``raw_score`` (the original score string);
``parse_status`` (``ok``/``failed``: the last ``x/y`` fraction is taken; strings without one,
such as a bare ``"20"``, fail and keep score NA — they are counted, never dropped);
``self_answer_correct`` (the model's attempted answer equals the correct answer after removing
the ``"Correct answer:"`` prefix and an option letter, case and punctuation; NA when the round
has no attempted answer); ``answer_equals_keypoint`` (the correct answer equals the item's
keypoint under the same normalization: Table 6's "C. Answer = Keypoint"); ``attempted_answer``;
``correct_answer``; ``best_method``; ``keypoint``; ``topic``; ``total_score`` (top10 only: the
file's value for the item).

``stop`` marks each trace's last round. ``best`` marks, for ``top10``, the round whose context
and question equal the file's ``best_question`` (``best_method = "best_question"``). The JSONL
traces carry no best question: their ``best`` is False throughout and ``best_method = "none"``
(the loader reports what the files say; ``medeval_kit.rounds.fill_best_rounds`` selects the
highest-total round, earliest on ties, and records ``best_method = "max_total_earliest"``).
Parse failures are counted by ``medeval_kit.rounds.load_summary`` (columns ``n_failed``,
``n_aspects_failed``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pandas as pd

from medeval_kit.datasets._io import data_dir, read_jsonl
from medeval_kit.datasets.scores import FRACTION, parse_score_string
from medeval_kit.errors import DataFileError, ParameterError
from medeval_kit.schemas import validate

__all__ = ["load_medqg_rounds", "read_round_traces", "MEDQG_ROUND_SOURCES", "MEDQG_COMPONENT_KEYS", "answers_match",
           "parse_aspects"]

MEDQG_ROUND_SOURCES = {
    "top10": "medqg/inputs/gpt4_usmle_hum_kp_top10.csv",
    "iter_feedback": "medqg/prompt/usmle/results_iter_feedback.jsonl",
    "icl_qgqa": "medqg/prompt/usmle/results_icl_qgqa.jsonl",
}

MEDQG_COMPONENT_KEYS = {
    "context": ("context_score", "context_feedback"),
    "question": ("question_score", "question_feedback"),
    "answer": ("correct_answer_score", "correct_answer_feedback"),
    "distractors": ("distractor_option_score", "distractor_option_feedback"),
    "reasoning": ("reasoning_score", "reasoning_feedback"),
}
"""medeval_kit component -> (score key, feedback key) in a MedQG round dict."""

_ASPECT_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z _\-]{0,40}?)\s*:(.*)$")
_SCORE_TAG = re.compile(r"score\s*:?\s*" + FRACTION.pattern, re.IGNORECASE)


def parse_aspects(feedback) -> list[dict]:
    r"""Split a component critique into aspect rows: ``aspect, score, max_score, raw_score, parse_status, critique``.

    Each aspect starts a line as ``name: text ... Score: x/5`` (or ``name: x/5. text``); a
    following line without ``name:`` continues it. The fraction after ``Score:`` wins, else the
    first fraction of the aspect's text; an aspect without one is kept with ``parse_status = "failed"``.

    >>> [(a["aspect"], a["score"]) for a in parse_aspects("relevant: fine. Score: 5/5.\nclear: 4/5. ok")]
    [('relevant', 5.0), ('clear', 4.0)]
    """
    if feedback is None or (isinstance(feedback, float) and np.isnan(feedback)):
        return []
    blocks: list[list[str]] = []
    for line in str(feedback).splitlines():
        if not line.strip():
            continue
        m = _ASPECT_LINE.match(line)
        if m and not m.group(1).strip().lower().startswith("score"):
            blocks.append([m.group(1), m.group(2)])
        elif blocks:
            blocks[-1][1] += "\n" + line
    out, seen = [], {}
    for name, text in blocks:
        key = re.sub(r"[^0-9a-z]+", "_", name.strip().lower()).strip("_")
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key = f"{key}_{seen[key]}"
        m = _SCORE_TAG.search(text) or FRACTION.search(text)
        if m:
            num, den = float(m.group(1)), float(m.group(2))
            ok = den > 0 and num <= den
        else:
            num = den = np.nan
            ok = False
        out.append({"aspect": key, "score": num if ok else np.nan, "max_score": den if ok else np.nan,
                    "raw_score": m.group(0) if m else None, "parse_status": "ok" if ok else "failed",
                    "critique": text.strip()})
    return out


_PREFIX = re.compile(r"^\s*(correct\s+answer|answer)\s*[:\-]\s*", re.IGNORECASE)
_LETTER = re.compile(r"^\s*\(?[A-Ja-j]\s*[\):\.]\s+")
_NONWORD = re.compile(r"[^0-9a-z]+")


def _norm_answer(text: str) -> str:
    """Return the answer without its prefix and option letter, lower case, punctuation collapsed."""
    s = _PREFIX.sub("", str(text).strip())
    s = _LETTER.sub("", s)
    return _NONWORD.sub(" ", s.lower()).strip()


def answers_match(attempted, correct):
    """Return True/False whether the attempted answer equals the correct one, or pd.NA if unknown.

    Both are normalized (``"Correct answer:"`` prefix and an option letter such as ``"B :"``
    removed, lower case, punctuation collapsed). An attempt that is only an option letter cannot
    be resolved without the shuffled options and gives NA.

    >>> answers_match("Correct answer: A: Pneumonia", "pneumonia")
    True
    >>> answers_match("Correct answer: Chronic obstructive pulmonary disease", "Pneumonia")
    False
    """
    if attempted is None or correct is None or (isinstance(attempted, float) and np.isnan(attempted)):
        return pd.NA
    a, c = _norm_answer(attempted), _norm_answer(correct)
    if not a or not c or re.fullmatch(r"[a-j]", a):
        return pd.NA
    return a == c


def _words(text) -> int:
    """Return the number of whitespace-separated words (0 for None)."""
    return len(str(text).split()) if text is not None else 0


def read_round_traces(name: str, path: Path) -> list[dict]:
    """Return trace records: id, clinical_note, keypoint, topic, rounds (list of dicts), best_question, total_score."""
    if name == "top10":
        if not path.exists():
            raise DataFileError(f"{path}: file not found")
        df = pd.read_csv(path, keep_default_na=False, dtype=str)
        idx_col = df.columns[0]
        records = []
        for line, row in enumerate(df.to_dict("records"), start=2):
            try:
                rounds = ast.literal_eval(row["content_to_fb"])
            except (ValueError, SyntaxError) as exc:
                raise DataFileError(
                    f"{path}: record {line - 1} (id {row[idx_col]!r}), column 'content_to_fb' is not a Python "
                    f"literal list ({exc.__class__.__name__}); re-export the trace file"
                ) from None
            best = None
            if row.get("best_question"):
                try:
                    best = ast.literal_eval(row["best_question"])
                except (ValueError, SyntaxError):
                    best = None
            records.append({
                "id": str(row[idx_col]), "clinical_note": row.get("clinical_note", ""),
                "keypoint": row.get("keypoint", ""), "topic": row.get("topic", ""), "rounds": rounds,
                "best_question": best,
                "total_score": float(row["total_score"]) if row.get("total_score") not in (None, "") else np.nan,
            })
        return records
    recs = read_jsonl(path)
    out = []
    for i, r in enumerate(recs, start=1):
        rounds = r.get("content_to_fb")
        if not isinstance(rounds, list):
            raise DataFileError(f"{path}: line {i}: 'content_to_fb' is {type(rounds).__name__}, expected a list")
        out.append({"id": str(i), "clinical_note": r.get("clinical_note", ""), "keypoint": r.get("keypoint", ""),
                    "topic": r.get("topic", ""), "rounds": rounds, "best_question": None, "total_score": np.nan})
    return out


def _same(a, b) -> bool:
    """Return whether two texts are equal after stripping (None as empty)."""
    return str(a or "").strip() == str(b or "").strip()


def _load_one(name: str, root: Path, aspects: bool = False) -> pd.DataFrame:
    """Return one source's rounds table: component rows (plus aspect rows), ``best`` where the file names it."""
    path = root / MEDQG_ROUND_SOURCES[name]
    rows = []
    best_by_item: dict[str, int] = {}
    for rec in read_round_traces(name, path):
        item = f"{name}:{rec['id']}"
        rounds = rec["rounds"]
        bq = rec["best_question"]
        if isinstance(bq, dict):
            hits = [k for k, d in enumerate(rounds, start=1)
                    if _same(d.get("context"), bq.get("context")) and _same(d.get("question"), bq.get("question"))]
            if hits:
                best_by_item[item] = hits[0]  # earliest round with that text
        for k, d in enumerate(rounds, start=1):
            if not isinstance(d, dict):
                raise DataFileError(f"{path}: trace {rec['id']}, round {k} is a {type(d).__name__}, expected a dict")
            context, question = d.get("context", "") or "", d.get("question", "") or ""
            sac = answers_match(d.get("attempted_answer"), d.get("correct_answer"))
            aek = answers_match(d.get("correct_answer"), rec["keypoint"])
            for comp, (skey, fkey) in MEDQG_COMPONENT_KEYS.items():
                if skey not in d and fkey not in d:
                    continue  # this pipeline variant has no such component
                raw = d.get(skey)
                p = parse_score_string(raw)
                common = {
                    "item": item, "round": k, "component": comp, "stop": k == len(rounds), "best": False,
                    "source": name, "text": f"{context}\n\n{question}".strip(),
                    "question_length": _words(context) + _words(question),
                    "note_length": _words(rec["clinical_note"]),
                    "self_answer_correct": sac, "answer_equals_keypoint": aek,
                    "attempted_answer": d.get("attempted_answer"), "correct_answer": d.get("correct_answer"),
                    "keypoint": rec["keypoint"], "topic": rec["topic"], "total_score": rec["total_score"],
                }
                rows.append({
                    **common, "aspect": "total", "score": p.score, "max_score": p.max_score,
                    "critique": None if d.get(fkey) is None else str(d.get(fkey)),
                    "raw_score": None if raw is None else str(raw),
                    "parse_status": p.status, "parse_note": p.reason,
                })
                if aspects:
                    for a in parse_aspects(d.get(fkey)):
                        if a["aspect"] == "total":
                            a["aspect"] = "total_aspect"
                        rows.append({**common, **a, "parse_note": "" if a["parse_status"] == "ok" else "no x/y score"})
    df = pd.DataFrame(rows)
    df["round"] = df["round"].astype("int64")
    df["score"] = df["score"].astype(float)
    df["max_score"] = df["max_score"].astype(float)
    df["self_answer_correct"] = df["self_answer_correct"].astype("boolean")
    df["answer_equals_keypoint"] = df["answer_equals_keypoint"].astype("boolean")
    bmap = pd.to_numeric(df["item"].map(best_by_item), errors="coerce").astype(float)
    df["best"] = (df["round"].astype(float) == bmap).astype(bool)
    df["best_method"] = np.where(bmap.notna(), "best_question", "none")
    return df


def load_medqg_rounds(source: str = "all", *, aspects: bool = False, root: str | Path | None = None) -> pd.DataFrame:
    """Return the bundled MedQG refinement traces as a validated ``rounds`` table.

    Parameters
    ----------
    source : {"all", "top10", "iter_feedback", "icl_qgqa"}, default "all"
        The trace file; ``"all"`` concatenates them, items prefixed by their source (``"top10:13"``).
    aspects : bool, default False
        Add one row per rubric aspect parsed from the critique text (:func:`parse_aspects`; aspect
        names as the critic wrote them, e.g. ``relevant``/``relevance``).
    root : str or Path, optional
        The data folder; default the bundled ``data/medqg``.

    Returns
    -------
    DataFrame
        A validated ``rounds`` table (:mod:`medeval_kit.schemas`) with a ``source`` column.

    Examples
    --------
    >>> df = load_medqg_rounds("top10")
    >>> df["item"].nunique(), int(df["round"].max())
    (10, 4)
    """
    names = list(MEDQG_ROUND_SOURCES) if source == "all" else [source]
    for n in names:
        if n not in MEDQG_ROUND_SOURCES:
            raise ParameterError(f"source {source!r} is unknown; choose one of {[*MEDQG_ROUND_SOURCES, 'all']}")
    base = Path(root) if root is not None else data_dir()
    df = pd.concat([_load_one(n, base, aspects) for n in names], ignore_index=True)
    df["self_answer_correct"] = df["self_answer_correct"].astype("boolean")
    df["answer_equals_keypoint"] = df["answer_equals_keypoint"].astype("boolean")
    for c in ("item", "component", "aspect", "source", "parse_status", "best_method"):
        df[c] = df[c].astype(str)
    validate(df, "rounds", source=", ".join(MEDQG_ROUND_SOURCES[n] for n in names),
             categories={"parse_status": ("ok", "failed")})
    return df
