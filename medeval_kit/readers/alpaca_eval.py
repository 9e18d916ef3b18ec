"""AlpacaEval annotations (``annotations.json``) -> pairwise judgments, annotations, items, responses.

Format, as checked against tatsu-lab/alpaca_eval:

* ``results/Amara-o1-7B-Qwen/alpaca_eval_gpt4_turbo_fn/annotations.json`` (commit
  dd3d34411dc7d7c3904b32966627e7963de222e8) and
  ``results/FuseChat-Gemma-2-9B-Instruct/weighted_alpaca_eval_gpt4_turbo/annotations.json`` (commit
  8d731d8dbeee2900acbc5b685cd71dd2d48eeff2): a JSON array of records with ``instruction``,
  ``output_1``, ``generator_1``, ``output_2``, ``generator_2``, ``annotator``, ``preference``,
  ``dataset`` and optional ``preference_price_per_example``, ``preference_time_per_example``,
  ``preference_raw_completion``, ``preference_version``, ``preference_date`` (older files:
  ``price_per_example``, ``time_per_example``, ``raw_completion``).
* ``src/alpaca_eval/annotators/pairwise_evaluator.py`` (commit 07a35c07be32908f6b0179ef4909f7871571f178):
  ``preference`` is 1 when ``output_1`` is preferred, 2 when ``output_2`` is, 0 when the two outputs
  are identical; a missing preference is stored as -1 (``is_store_missing_preferences``) or null.
  The annotator randomises which output it shows first (``is_randomize_output_order=True``) and
  un-swaps before saving, so the file does not record the presentation order.
* ``src/alpaca_eval/metrics/helpers.py`` (``ZeroOneScoringRule``) and ``utils.validate_alpacaeval_preference``:
  1.5 is a draw (0 is read as 1.5 for backward compatibility); weighted annotators (logprob
  parsers, ``weighted_alpaca_eval_*``) write a float in [1, 2], the expected preference; the
  discrete preference rounds it to 1 or 2.

Model terms: ``A`` = ``generator_1`` (``output_1``), ``B`` = ``generator_2``. ``verdict``: 1 -> ``A``,
2 -> ``B``, 1.5 or 0 -> ``tie``, a float in (1, 2) -> the nearer side (AlpacaEval's discrete rule).
``score`` is the margin of A as in :func:`medeval_kit.judge.judge_pairwise` (+1 A, -1 B, 0 tie),
continuous for weighted preferences: ``3 - 2 * preference``. The raw ``preference`` is kept. A
missing preference (null, NaN, -1) is ``parse_status="failed"`` with no verdict, never a tie.
``order="unrecorded"`` (see above); ``len_a``/``len_b`` are whitespace-token lengths and
``nchar_a``/``nchar_b`` character lengths (for :func:`medeval_kit.bias.length_bias`).
``item`` = a content hash of the instruction (``question_item``), followed by
``:generator_1:generator_2`` when the file compares several generator pairs on one instruction.
"""

from __future__ import annotations

import math
from pathlib import Path

from medeval_kit.readers._common import (
    ReadResult,
    Tally,
    is_missing,
    iter_records,
    n_words,
    need,
    number_repeats,
    stable_id,
    where_error,
)
from medeval_kit.readers._limits import guarded

__all__ = ["read_alpaca_eval"]


@guarded
def read_alpaca_eval(path: str | Path, *, annotator: str | None = None, max_json_bytes: int | None = None) -> ReadResult:
    """Read an AlpacaEval ``annotations.json`` into pairwise judgments (and annotations, items, responses).

    See the module docstring for the mapping and its sources.

    Parameters
    ----------
    path : str or Path
        The file.
    annotator : str, optional
        The judge's name for files whose records have no ``annotator`` field; a record's own
        ``annotator`` always wins.
    max_json_bytes : int, optional
        Bound on a JSON file parsed whole, or on one JSON line; default 256 MB or ``MEDEVAL_MAX_JSON_MB``
        (:mod:`medeval_kit.readers._limits`).

    Returns
    -------
    ReadResult
        The validated tables (``None`` where the file has no such data), the records read and the
        rows dropped with their reasons.

    Raises
    ------
    ReaderError
        A missing, broken or hostile file (never another exception type); the message names the
        file, the record and the field.
    """
    src = str(path)
    recs = iter_records(path, max_json_bytes)
    tally = Tally("alpaca_eval", src, record_unit="records")
    rows, items, resps = [], {}, {}
    for where, r in recs:
        tally.record()
        instr = need(r, "instruction", src, where, str)
        g1 = need(r, "generator_1", src, where, str)
        g2 = need(r, "generator_2", src, where, str)
        o1 = need(r, "output_1", src, where, str, nullable=True)
        o2 = need(r, "output_2", src, where, str, nullable=True)
        judge = r.get("annotator", annotator)
        if judge is None:
            raise where_error(src, where, "annotator", "missing; pass annotator='NAME' to name the judge of this file")
        if not isinstance(judge, str):
            raise where_error(src, where, "annotator", f"expected a string, got {judge!r}")
        pref = need(r, "preference", src, where, (int, float), nullable=True)
        verdict, score, status, note = _preference(pref, src, where)
        qid = stable_id(instr)
        items.setdefault(qid, {"item": qid, "dataset": r.get("dataset") if isinstance(r.get("dataset"), str)
                               else "alpaca_eval", "question": instr})
        for g, o in ((g1, o1), (g2, o2)):
            key = (qid, g)
            if key in resps and resps[key]["text"] != o:
                tally.drop("conflicting outputs of one generator for one instruction (responses: kept the first)",
                           where)
            resps.setdefault(key, {"item": qid, "model": g, "repeat": 0, "text": o})
        rows.append({"question_item": qid, "judge": judge, "protocol": "pairwise", "criterion": "preference",
                     "order": "unrecorded", "raw": None if is_missing(pref) else str(pref), "verdict": verdict,
                     "score": score, "parse_status": status, "model_a": g1, "model_b": g2,
                     "preference": float("nan") if pref is None else _as_float(pref),
                     "len_a": n_words(o1), "len_b": n_words(o2),
                     "nchar_a": float("nan") if o1 is None else float(len(o1)),
                     "nchar_b": float("nan") if o2 is None else float(len(o2)),
                     "dataset": r.get("dataset") if isinstance(r.get("dataset"), str) else None,
                     "price_per_example": _num(r, "preference_price_per_example", "price_per_example"),
                     "note": note, "_where": where})
    pairs = {}
    for row in rows:
        pairs.setdefault(row["question_item"], set()).add((row["model_a"], row["model_b"]))
    several = any(len(v) > 1 for v in pairs.values())
    for row in rows:
        q = row["question_item"]
        row["item"] = f"{q}:{row['model_a']}:{row['model_b']}" if several else q
    if several:
        tally.note("several generator pairs share instructions: item = instruction id:generator_1:generator_2")
    n_rep = number_repeats(rows, ["item", "judge"])
    if n_rep:
        tally.note(f"{n_rep} records repeat an (instruction, generator pair, annotator): numbered as repeats")
    ann = []
    for row in rows:
        if row["repeat"]:
            tally.drop("repeated annotation of one item by one annotator (annotations table: kept the first; "
                       "all repeats stay in judgments)", row["_where"])
            continue
        ann.append({"item": row["item"], "rater": row["judge"], "rater_kind": "llm", "criterion": "preference",
                    "label": row["verdict"], "model_a": row["model_a"], "model_b": row["model_b"],
                    "question_item": row["question_item"]})
    for row in rows:
        del row["_where"]
    tally.note("presentation order is not in annotations.json (AlpacaEval randomises it and un-swaps): "
               "order='unrecorded', so position bias cannot be measured from this file")
    labels = {"label": ["A", "B", "tie"]}
    return tally.result(
        "judgments", "built-in JSON reader",
        judgments=tally.frame(rows, "judgments", columns=["model_a", "model_b", "preference", "len_a", "len_b",
                                                          "nchar_a", "nchar_b", "question_item"],
                              categories={"verdict": ["A", "B", "tie"]}),
        annotations=tally.frame(ann, "annotations", categories=labels),
        items=tally.frame(list(items.values()), "items"),
        responses=tally.frame(list(resps.values()), "responses"),
    )


def _as_float(v) -> float:
    return float(v) if abs(v) < 1e300 else math.nan


def _num(r: dict, *keys: str) -> float:
    for k in keys:
        v = r.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 1e300:
            return float(v)
    return float("nan")


def _preference(pref, src: str, where: str) -> tuple[str | None, float, str, str | None]:
    """(verdict, margin of A, parse_status, note) of one AlpacaEval preference."""
    if is_missing(pref) or pref == -1:
        return None, math.nan, "failed", "no preference parsed from the annotator's output"
    p = float(pref) if abs(pref) < 1e300 else math.inf  # a huge JSON integer would overflow float()
    if p == 0:
        return "tie", 0.0, "ok", "identical outputs (preference 0, AlpacaEval's legacy draw)"
    if not 1 <= p <= 2:
        raise where_error(src, where, "preference", f"expected 1, 2, 1.5 (draw), a float in [1, 2], 0, -1 or null; "
                                                    f"got {pref!r}")
    verdict = "A" if p < 1.5 else "B" if p > 1.5 else "tie"
    return verdict, 3.0 - 2.0 * p, "ok", None
