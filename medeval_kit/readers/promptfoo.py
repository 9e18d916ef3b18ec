"""promptfoo results (``promptfoo eval -o results.json``) -> llm-rubric and select-best judgments.

Format, as checked against promptfoo/promptfoo:

* ``src/util/output.ts`` (``writeJsonOutputSafely``; stored versions e.g. id 14078698704/55462838437 in
  this tool's index, and the docs page https://www.promptfoo.dev/docs/configuration/outputs): the JSON
  file is ``{evalId, results: EvaluateSummaryV3, config, shareableUrl, metadata}``; older versions wrote
  ``{results, config, shareableUrl}``. ``results.version`` is 3 in both; a file of another version is read
  the same way and the summary notes it.
* ``src/types/index.ts`` (``EvaluateSummaryV3``, ``EvaluateResult``, ``GradingResult``, ``Assertion``):
  ``results.results`` is a list of ``{promptIdx, testIdx, testCase, promptId, provider: {id, label},
  prompt: {raw, label}, vars, response: {output}, error, failureReason, success, score, gradingResult,
  namedScores}``; ``gradingResult`` is ``{pass, score, reason, componentResults: [GradingResult with
  assertion {type, value, provider, metric, threshold}], metadata}``.
* ``src/matchers.ts`` (``matchesLlmRubric``): the grader's JSON ``{pass, score, reason}``; when it
  cannot be read the component is ``pass: false, score: 0`` with reason ``"Could not extract JSON
  from llm-rubric response"``, ``"llm-rubric produced malformed response..."``, the provider's error
  or ``"No output"``; recent versions also set ``metadata.graderError``. ``matchesSelectBest``
  (``src/matchers/comparison.ts``): one grader call picks the best of a test's outputs; each output
  gets ``pass: true`` and reason ``"Output selected as the best: ..."`` or ``pass: false``,
  ``"Output not selected: ..."``; an unreadable pick gives every output ``"Invalid select-best
  verdict: ..."``. ``src/evaluator.ts``: the candidates are the results of one ``testIdx``.
* The grader is the assertion's ``provider``, else the test's ``options.provider``, else
  ``config.defaultTest.options.provider``; otherwise promptfoo used its default grading provider,
  which the file does not name.

``llm-rubric`` (and ``not-llm-rubric``): one ``judgments`` row per graded output and rubric:
``protocol="rubric"``, ``item = "t{testIdx}:{target}"`` (``question_item`` = ``t{testIdx}``, ``target``
= provider label or id, plus `` | prompt label`` when the file has several prompts), ``criterion`` =
the assertion's ``metric`` or rubric text, ``order="single"``, ``verdict`` = ``pass``/``fail``,
``score`` = the grader's score, ``raw`` = its reason. A grader failure is ``parse_status="failed"``;
an output that errored before grading has ``"missing"`` rows for its declared rubrics.
``select-best``: one ``protocol="multi_response"`` row per test: ``order`` lists the candidates in
the order shown (``" | "``-joined), ``verdict`` = the chosen candidate. Other assertion types are
not judgments of a model grader; they are counted in the summary, not imported.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from functools import partial
from pathlib import Path

from medeval_kit.readers._common import (
    ReaderError,
    ReadResult,
    Tally,
    as_text,
    is_missing,
    load_json,
    need,
    need_int,
    number_repeats,
    where_error,
)
from medeval_kit.readers._limits import guarded

__all__ = ["read_promptfoo"]

_RUBRIC = ("llm-rubric", "not-llm-rubric")
_GRADER_FAIL = ("Could not extract JSON from llm-rubric response", "llm-rubric produced malformed response",
                "No output")
DEFAULT_GRADER = "promptfoo-default-grader"
_MAX_IDX = 2**31 - 1


def _obj(v) -> dict:
    """``v`` when it is a JSON object, else an empty one (optional parts of a result)."""
    return v if isinstance(v, dict) else {}


def _provider_name(p) -> str | None:
    if isinstance(p, str):
        return p
    if isinstance(p, dict):
        for k in ("label", "id"):
            if isinstance(p.get(k), str):
                return p[k]
        if "text" in p:  # {text: provider, embedding: provider}
            return _provider_name(p["text"])
    return None


def _summary(obj, src: str) -> tuple[list, dict, object]:
    if isinstance(obj, dict) and isinstance(obj.get("results"), dict) and "results" in obj["results"]:
        summ, config = obj["results"], obj.get("config") or {}
    elif isinstance(obj, dict) and isinstance(obj.get("results"), list) and "version" in obj:
        summ, config = obj, {}
    else:
        keys = sorted(obj)[:8] if isinstance(obj, dict) else type(obj).__name__
        raise ReaderError(f"{src}: not a promptfoo results file: expected {{evalId, results: {{version, results: "
                          f"[...]}}, config}} as written by `promptfoo eval -o results.json`; got {keys}")
    res = summ.get("results")
    if not isinstance(res, list):
        raise where_error(src, "results", "results", f"expected a list of results, got {type(res).__name__}")
    return res, config if isinstance(config, dict) else {}, summ.get("version")


def _parse_results(results: list, src: str, tally: Tally) -> list[tuple]:
    """Check each result: (where, result, testIdx, promptIdx, provider, prompt, testCase)."""
    parsed = []
    for i, r in enumerate(results):
        where = f"results.results[{i}]"
        tally.record()
        if not isinstance(r, dict):
            raise where_error(src, where, None, f"expected a result object, got {type(r).__name__}")
        t_idx = need_int(r, "testIdx", src, where, 0, _MAX_IDX, what=f"an index 0..{_MAX_IDX}")
        p_idx = need_int(r, "promptIdx", src, where, 0, _MAX_IDX, what=f"an index 0..{_MAX_IDX}")
        prov = _provider_name(need(r, "provider", src, where))
        if prov is None:
            raise where_error(src, where, "provider", "expected {id, label} or a provider id string")
        prompt = r.get("prompt") if isinstance(r.get("prompt"), dict) else {}
        tc = r.get("testCase") if isinstance(r.get("testCase"), dict) else {}
        parsed.append((where, r, t_idx, p_idx, prov, prompt, tc))
    return parsed


def _rubric_row(c: dict, a: dict, cw: str, src: str, base: dict, judge: str) -> dict:
    """The judgments row of one llm-rubric grading (a grader failure is ``parse_status="failed"``)."""
    reason = c.get("reason") if isinstance(c.get("reason"), str) else None
    meta = c.get("metadata") if isinstance(c.get("metadata"), dict) else {}
    failed = bool(meta.get("graderError")) or (reason is not None and reason.startswith(_GRADER_FAIL))
    score = c.get("score")
    if not failed and not isinstance(c.get("pass"), bool):
        raise where_error(src, cw, "pass", f"expected true/false, got {c.get('pass')!r}")
    return {**base, "judge": judge, "protocol": "rubric", "criterion": _criterion(a), "order": "single",
            "raw": reason, "verdict": None if failed else ("pass" if c["pass"] else "fail"),
            "score": math.nan if failed or not isinstance(score, (int, float)) else float(score),
            "parse_status": "failed" if failed else "ok", "assertion_type": a.get("type"),
            "note": "grader output could not be read" if failed else None}


def _graded_rows(r: dict, where: str, src: str, base: dict, declared: list[dict], grader_of, err: str | None,
                 skipped: Counter) -> tuple[list[dict], list[dict]]:
    """(rubric judgments, select-best gradings) of one result; declared rubrics without a grading
    give ``missing`` rows; other assertion types are counted in ``skipped``."""
    gr = r.get("gradingResult")
    if gr is not None and not isinstance(gr, dict):
        raise where_error(src, where, "gradingResult", f"expected an object or null, got {type(gr).__name__}")
    judg, sb_rows, recorded = [], [], Counter()
    comps = gr.get("componentResults") if isinstance(gr, dict) else None
    if comps is not None and not isinstance(comps, list):
        raise where_error(src, where, "gradingResult.componentResults", f"expected a list, got {type(comps).__name__}")
    for j, c in enumerate(comps or []):
        cw = f"{where}.gradingResult.componentResults[{j}]"
        if not isinstance(c, dict):
            raise where_error(src, cw, None, f"expected a GradingResult object, got {type(c).__name__}")
        a = c.get("assertion") if isinstance(c.get("assertion"), dict) else {}
        typ = a.get("type")
        if typ == "select-best":
            sb_rows.append({**base, "assertion": a, "pass": c.get("pass"), "reason": c.get("reason"),
                            "grader": grader_of(a), "_where": cw})
        elif typ not in _RUBRIC:
            skipped[str(typ) if typ else "(assertion not recorded)"] += 1
        else:
            recorded[(typ, _criterion(a))] += 1
            judg.append(_rubric_row(c, a, cw, src, base, grader_of(a)))
    for a in declared:
        if a.get("type") not in _RUBRIC:
            continue
        key = (a.get("type"), _criterion(a))
        if recorded[key]:
            recorded[key] -= 1
            continue
        judg.append({**base, "judge": grader_of(a), "protocol": "rubric", "criterion": key[1], "order": "single",
                     "raw": None, "verdict": None, "score": math.nan, "parse_status": "missing",
                     "assertion_type": key[0],
                     "note": f"not graded: {err}" if err else "no grading result for this rubric"})
    return judg, sb_rows


@guarded
def read_promptfoo(path: str | Path, *, max_json_bytes: int | None = None) -> ReadResult:
    """Read a promptfoo ``results.json`` into judgments (llm-rubric, select-best), items and responses.

    See the module docstring for the mapping and the sources it was checked against.

    Parameters
    ----------
    path : str or Path
        The file.
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
    results, config, version = _summary(load_json(path, max_json_bytes), src)
    tally = Tally("promptfoo", src, record_unit="results (test x prompt x provider)")
    if version != 3:
        tally.note(f"results version {version!r}: this reader follows version 3 (EvaluateSummaryV3); "
                   "results without testIdx/promptIdx are refused with the record named")
    default_grader = _provider_name(_obj(_obj(config.get("defaultTest")).get("options")).get("provider"))
    parsed = _parse_results(results, src, tally)
    # promptIdx numbers the prompt x provider columns; name the prompt only when several prompts were run
    n_prompts = len({_label_key(pr.get("label")) or _label_key(r.get("promptId")) or p
                     for _, r, _, p, _, pr, _ in parsed})
    judg, sb_rows, items, resps = [], [], {}, {}
    skipped: Counter = Counter()
    for where, r, t_idx, p_idx, prov, prompt, tc in parsed:
        q = f"t{t_idx}"
        label = prompt.get("label") if isinstance(prompt.get("label"), str) else f"prompt {p_idx}"
        target = f"{prov} | {label}" if n_prompts > 1 else prov
        desc = tc.get("description") if isinstance(tc.get("description"), str) else r.get("description")
        items.setdefault(q, {"item": q, "dataset": "promptfoo", "question": desc if isinstance(desc, str) else None,
                             "vars": json.dumps(tc.get("vars") or r.get("vars") or {}, sort_keys=True, default=str)})
        resp = r.get("response") if isinstance(r.get("response"), dict) else {}
        err = r.get("error") if isinstance(r.get("error"), str) else None
        text = as_text(resp.get("output")) if "output" in resp else None
        resps[(q, target, where)] = {"item": q, "model": target, "text": text, "error": err, "_key": (q, target)}
        options = tc.get("options") if isinstance(tc.get("options"), dict) else {}
        declared = [a for a in (tc.get("assert") if isinstance(tc.get("assert"), list) else []) if isinstance(a, dict)]
        grader_of = partial(_grader, declared=declared, test_grader=_provider_name(options.get("provider")),
                            default_grader=default_grader)
        base = {"item": f"{q}:{target}", "question_item": q, "target": target, "provider": prov,
                "prompt_label": label, "test_idx": t_idx, "prompt_idx": p_idx,
                "description": desc if isinstance(desc, str) else None}
        rows, sb = _graded_rows(r, where, src, base, declared, grader_of, err, skipped)
        judg += rows
        sb_rows += sb
    return _result(tally, judg, sb_rows, items, resps, skipped)


def _result(tally: Tally, judg: list[dict], sb_rows: list[dict], items: dict, resps: dict,
            skipped: Counter) -> ReadResult:
    """Number the repeats, resolve select-best, note what was not imported; return the tables."""
    n_rep = number_repeats(judg, ["item", "judge", "criterion"])
    if n_rep:
        tally.note(f"{n_rep} rubric gradings repeat an (output, grader, rubric): numbered as repeats")
    sb = _select_best(sb_rows, tally)
    if skipped:
        tally.note("assertions that are not model-graded judgments were not imported: "
                   + ", ".join(f"{k} x{v}" for k, v in sorted(skipped.items())))
    if any(j["judge"] == DEFAULT_GRADER for j in judg + sb):
        tally.note(f"grader not recorded for some assertions (promptfoo's default grading provider): "
                   f"judge = {DEFAULT_GRADER!r}")
    cols = ["question_item", "target", "provider", "prompt_label", "test_idx", "prompt_idx", "description",
            "assertion_type", "n_candidates", "note"]
    return tally.result(
        "judgments", "built-in JSON reader",
        judgments=tally.frame(judg + sb, "judgments", columns=cols),
        items=tally.frame(list(items.values()), "items"),
        responses=tally.frame(_responses(resps), "responses", columns=["error"]),
    )


def _label_key(v) -> str | None:
    return v if isinstance(v, str) and v else None


def _criterion(a: dict) -> str:
    if isinstance(a.get("metric"), str) and a["metric"]:
        return a["metric"]
    v = a.get("value")
    return v if isinstance(v, str) else as_text(v) or str(a.get("type"))


def _grader(a: dict, declared: list[dict], test_grader: str | None, default_grader: str | None) -> str:
    g = _provider_name(a.get("provider"))
    if g is None:  # recent promptfoo strips the provider from the recorded assertion; look in the test
        for d in declared:
            if d.get("type") == a.get("type") and d.get("value") == a.get("value"):
                g = _provider_name(d.get("provider"))
                if g:
                    break
    return g or test_grader or default_grader or DEFAULT_GRADER


def _select_best(rows: list[dict], tally: Tally) -> list[dict]:
    """One multi_response judgment per (test, select-best assertion) from the per-output grading results."""
    groups: dict = {}
    for r in rows:
        key = (r["question_item"], _criterion(r["assertion"]))
        groups.setdefault(key, []).append(r)
    out = []
    for (q, crit), g in groups.items():
        g = sorted(g, key=lambda r: (r["prompt_idx"], r["target"]))
        cands = [r["target"] for r in g]
        chosen = [r for r in g if r["pass"] is True and str(r["reason"] or "").startswith("Output selected")]
        invalid = [r for r in g if str(r["reason"] or "").startswith("Invalid select-best verdict")]
        status, verdict, raw, note = "ok", None, None, None
        if len(chosen) == 1 and not invalid:
            verdict, raw = chosen[0]["target"], chosen[0]["reason"]
        else:
            status = "failed"
            raw = (invalid or g)[0]["reason"]
            note = ("grader's pick could not be read" if invalid
                    else f"{len(chosen)} outputs marked selected; expected exactly one")
        out.append({"item": q, "question_item": q, "judge": g[0]["grader"], "protocol": "multi_response",
                    "criterion": crit, "order": " | ".join(cands), "raw": raw, "verdict": verdict,
                    "score": math.nan, "parse_status": status, "assertion_type": "select-best",
                    "n_candidates": len(cands), "test_idx": g[0]["test_idx"], "description": g[0]["description"],
                    "note": note})
    n_rep = number_repeats(out, ["item", "judge", "criterion", "order"])
    if n_rep:
        tally.note(f"{n_rep} select-best gradings repeat a test: numbered as repeats")
    return out


def _responses(resps: dict) -> list[dict]:
    rows = list(resps.values())
    number_repeats(rows, ["_key"])
    for r in rows:
        del r["_key"]
        if is_missing(r["text"]):
            r["text"] = None
    return rows
