"""HealthBench meta-evaluation JSONL (openai/simple-evals ``healthbench_meta_eval``) -> annotations, items.

Format, as checked against the reading code of ``healthbench_meta_eval.py`` (not stored in this
tool's index under openai/simple-evals; read from the fork thushana/simple-evals, path
``healthbench_meta_eval.py``, commit b482ea6455c644688f8b670f98e06c45267008da, which loads
``.../healthbench/2025-05-07-06-14-12_oss_meta_eval.jsonl``) and openai/simple-evals
``healthbench_eval.py`` (commit 9e2fafd122f057f373467fc0d45901889d8c4926) for the grader:

* one JSON object per line with ``prompt`` (chat messages ``{role, content}``), ``completion``
  (the response being graded), ``rubric`` (one rubric criterion), ``category``, ``binary_labels``
  (one boolean per physician: is the criterion met?) and ``anonymized_physician_ids`` (same length).
  The published file also carries ``prompt_id`` and ``completion_id``; they are used when present.
* the grader answers with a JSON object ``{"explanation": ..., "criteria_met": true|false}``
  (``GRADER_TEMPLATE``; ``parse_json_to_dict`` strips a ```json fence). The published file holds
  physician labels only; to compare a grader, put its answer on each line as ``criteria_met``
  (+ ``explanation``), or its raw reply as ``grader_response`` (a string or that object).

One ``annotations`` row per physician label and one per grader label: ``item`` =
``"{prompt}/{completion}/{criterion}"`` ids (``prompt_id``/``completion_id`` when present, else a
content hash; the criterion id is a hash of the rubric text), ``rater`` = the physician id or the
grader name, ``rater_kind`` = ``human`` / ``llm``, ``criterion="criteria_met"``, ``label`` =
``met`` / ``not_met`` (NA when a physician gave none or the grader reply has no boolean
``criteria_met``). ``items`` hold the rubric text (``question``) and the conversation with the graded
completion (``context``, rendered as simple-evals does: ``role: content`` blocks).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from medeval_kit.readers._common import Columns, ReadResult, Tally, iter_records, need, stable_id, where_error
from medeval_kit.readers._limits import guarded

__all__ = ["read_healthbench_meta"]

_FENCE = re.compile(r"^```json\s*|\s*```$")


def _label(v) -> str | None:
    return None if v is None else ("met" if v else "not_met")


def _grader_label(r: dict, src: str, where: str) -> tuple[bool, str | None, str | None]:
    """(present, label, note) of the grader's answer on this line."""
    if "criteria_met" in r:
        v = r["criteria_met"]
        if v is not None and not isinstance(v, bool):
            raise where_error(src, where, "criteria_met", f"expected true/false (the grader's answer), got {v!r}")
        return True, _label(v), None if v is not None else "grader gave no criteria_met"
    if "grader_response" not in r:
        return False, None, None
    g = r["grader_response"]
    if isinstance(g, str):
        try:
            g = json.loads(_FENCE.sub("", g.strip()))
        except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
            return True, None, "grader reply is not JSON"
    if not isinstance(g, dict) or not isinstance(g.get("criteria_met"), bool):
        return True, None, "grader reply has no boolean criteria_met"
    return True, _label(g["criteria_met"]), None


def _conversation(prompt, completion) -> str | None:
    msgs = list(prompt) if isinstance(prompt, list) else []
    if isinstance(completion, str):
        msgs = msgs + [{"role": "assistant", "content": completion}]
    if not msgs:
        return None
    return "\n\n".join(f"{m.get('role', '')}: {m.get('content', '')}" for m in msgs if isinstance(m, dict))


@guarded
def read_healthbench_meta(path: str | Path, *, grader: str = "grader", max_json_bytes: int | None = None) -> ReadResult:
    """Read a HealthBench meta-evaluation JSONL into physician and grader annotations (and items).

    The file is streamed line by line. See the module docstring for the mapping and its sources.

    Parameters
    ----------
    path : str or Path
        The file.
    grader : str, default "grader"
        The rater name given to the grader labels (``criteria_met`` / ``grader_response`` on each line).
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
    tally = Tally("healthbench", src, record_unit="lines (rubric criteria)")
    ann, items, item_ids, n_grader, n_no_grader = Columns(), Columns(), set(), 0, 0
    for where, r in recs:
        tally.record()
        rubric = need(r, "rubric", src, where, str)
        labels = need(r, "binary_labels", src, where, list)
        ids = need(r, "anonymized_physician_ids", src, where, list)
        if len(labels) != len(ids):
            raise where_error(src, where, "binary_labels", f"{len(labels)} labels but {len(ids)} "
                              "anonymized_physician_ids; they must pair up one to one")
        prompt = r.get("prompt")
        if prompt is not None and not (isinstance(prompt, list) and all(isinstance(m, dict) for m in prompt)):
            raise where_error(src, where, "prompt", "expected a list of {role, content} messages")
        completion = r.get("completion")
        if completion is not None and not isinstance(completion, str):
            raise where_error(src, where, "completion", f"expected a string, got {type(completion).__name__}")
        pkey = str(r["prompt_id"]) if r.get("prompt_id") is not None else (stable_id(prompt) if prompt else None)
        ckey = (str(r["completion_id"]) if r.get("completion_id") is not None
                else (stable_id(completion) if completion is not None else None))
        item = "/".join(k for k in (pkey, ckey, stable_id(rubric)) if k)
        if item in item_ids:
            tally.drop("repeated line for one (prompt, completion, criterion) (kept the first)", where)
            continue
        category = r.get("category") if isinstance(r.get("category"), str) else None
        item_ids.add(item)
        items.add({"item": item, "dataset": "healthbench_meta", "question": rubric,
                   "context": _conversation(prompt, completion), "category": category,
                   "prompt_id": pkey, "completion_id": ckey})
        base = {"item": item, "criterion": "criteria_met", "category": category}
        raters = set()
        for i, (lab, pid) in enumerate(zip(labels, ids)):
            if lab is not None and not isinstance(lab, bool):
                raise where_error(src, where, f"binary_labels[{i}]", f"expected true/false/null, got {lab!r}")
            if not isinstance(pid, (str, int)) or isinstance(pid, bool):
                raise where_error(src, where, f"anonymized_physician_ids[{i}]", f"expected an id, got {pid!r}")
            pid = str(pid)
            if pid in raters:
                tally.drop("second label of one physician on one criterion (kept the first)",
                           f"{where}, anonymized_physician_ids[{i}]")
                continue
            raters.add(pid)
            ann.add({**base, "rater": pid, "rater_kind": "human", "label": _label(lab)})
        present, glab, note = _grader_label(r, src, where)
        if present:
            if grader in raters:
                raise where_error(src, where, "anonymized_physician_ids", f"a physician is called {grader!r}, the "
                                  "grader's name; pass grader='another name'")
            n_grader += 1
            ann.add({**base, "rater": grader, "rater_kind": "llm", "label": glab, "note": note})
        else:
            n_no_grader += 1
    if n_grader == 0:
        tally.note("no grader labels in the file (the published meta-eval holds physician labels only): add the "
                   "grader's answer as 'criteria_met' or 'grader_response' on each line to compare it")
    elif n_no_grader:
        tally.note(f"{n_no_grader} lines have no grader label (only physicians)")
    return tally.result(
        "annotations", "built-in JSON-lines reader",
        annotations=tally.frame(ann, "annotations", categories={"label": ["met", "not_met"]},
                                columns=["category", "note"]),
        items=tally.frame(items, "items"),
    )
