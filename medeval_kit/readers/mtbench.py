"""FastChat MT-bench judgments (``model_judgment/*_pair.jsonl``, ``*_single.jsonl``) and the MT-bench
human judgments -> judgments / annotations.

Format, as checked against lm-sys/FastChat:

* ``fastchat/llm_judge/common.py`` (commit 007ecd07da27132136c707eef92bf9841fd167f2),
  ``play_a_match_pair``: a pairwise record is ``{question_id, model_1, model_2, g1_winner, g2_winner,
  judge: [judge model, prompt name], g1_user_prompt, g1_judgment, g2_user_prompt, g2_judgment, turn,
  tstamp}``. Game 1 shows ``model_1`` as Assistant A, game 2 shows ``model_2`` as A; both winners are
  already mapped to model terms: ``model_1``, ``model_2``, ``tie`` (``[[C]]``, or ratings within 0.1) or
  ``error`` (no ``[[A]]``/``[[B]]``/``[[C]]`` in the judgment). A failed API call leaves the judgment
  ``"$ERROR$"`` (``API_ERROR_OUTPUT``). With a single-answer judge in pairwise mode the record instead
  has one derived winner in both fields plus ``m1_score``/``m2_score`` and no ``turn``.
  ``play_a_match_single``: ``{question_id, model, judge, user_prompt, judgment, score, turn, tstamp}``;
  ``score`` is -1 when no ``[[rating]]`` could be parsed.
* ``fastchat/llm_judge/show_result.py`` (commit 02d4581b22e716e5e4db0bfd115e3eeb93644601): pairs where
  a game is ``error`` are excluded; inconsistent games count as a tie. Single scores of -1 are excluded.
* ``fastchat/llm_judge/compute_agreement.py`` (commit 0283a0bb971cecdc630e9dd647cd1d1b17cc09ee) and
  the dataset card of ``lmsys/mt_bench_human_judgments`` (https://huggingface.co/datasets/lmsys/mt_bench_human_judgments):
  human votes are ``{question_id, model_a, model_b, winner, judge, turn, conversation_a,
  conversation_b}``; ``winner`` is ``model_a``, ``model_b``, ``tie`` or ``tie (bothbad)``; judges
  ``expert_*`` and ``author_*`` are people, the ``gpt4_pair`` split's judge is ``["gpt-4", "pair-v2"]``.
  Pairs are compared with the two model names sorted (``get_mt_bench_votes_data``).

Conventions here: ``item`` = ``"{question_id}/turn{turn}/{A} vs {B}"`` with the two model names sorted,
so ``A`` is the alphabetically first model in every file (pair judgments and human votes line up).
Pairwise judgments get one row per game: ``order="AB"`` when A was shown first, ``"BA"`` otherwise;
``verdict`` is in model terms, ``slot_verdict`` in presented-slot terms (``first``/``second``/``tie``),
``score`` the margin of A (+1/-1/0). An ``error`` game or ``$ERROR$`` judgment is
``parse_status="failed"`` (counted, never a tie). ``judge`` is the judge model; the prompt name is in
``template``. Records repeated for the same pair, turn and judge (appended re-runs, or two prompt
templates) are numbered as repeats. Single-answer grading gives ``protocol="rubric"`` rows with
``item = "{question_id}/turn{turn}:{model}"`` and ``score`` in 1..10 (``max_score``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from medeval_kit.pairwise import to_slot
from medeval_kit.readers._common import (
    Columns,
    ReaderError,
    ReadResult,
    Tally,
    iter_records,
    need,
    need_int,
    where_error,
)
from medeval_kit.readers._limits import guarded

__all__ = ["read_mtbench", "read_mtbench_human"]

API_ERROR = "$ERROR$"
_MARGIN = {"A": 1.0, "B": -1.0, "tie": 0.0}


def _judge(v, src: str, where: str, field: str = "judge") -> tuple[str, str | None]:
    """(judge model, prompt name) from FastChat's ``[model, prompt]`` pair or a plain string."""
    if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
        return v[0], "/".join(v[1:]) or None
    if isinstance(v, str) and v:
        return v, None
    raise where_error(src, where, field, f"expected [judge model, prompt name] or a string, got {v!r}")


def _pair(m1: str, m2: str, src: str, where: str, f1: str, f2: str) -> tuple[str, str]:
    if m1 == m2:
        raise where_error(src, where, f"{f1}/{f2}", f"both name {m1!r}; a pair needs two models")
    return (m1, m2) if m1 < m2 else (m2, m1)


MAX_TURN = 100  # MT-bench has 2 turns; a larger number is a broken file, not a long conversation


def _turn(r: Mapping, src: str, where: str) -> int:
    return need_int(r, "turn", src, where, 1, MAX_TURN, what=f"1 or 2 (at most {MAX_TURN})")


def _qid(r: Mapping, src: str, where: str) -> str:
    return str(need(r, "question_id", src, where, (int, str)))


# --------------------------------------------------------------------------- model judgments
@guarded
def read_mtbench(path: str | Path, *, inconsistent: str = "tie", max_json_bytes: int | None = None) -> ReadResult:
    """Read FastChat's ``*_pair.jsonl`` (pairwise, both orders) or ``*_single.jsonl`` (1-10 grading).

    Pairwise files give ``judgments`` (one row per game) and ``annotations`` (one resolved label per
    pair and judge with :func:`medeval_kit.pairwise.resolve_orders`). Single files give rubric
    ``judgments``. The file is streamed line by line. See the module docstring for the mapping and
    its sources.

    Parameters
    ----------
    path : str or Path
        The file.
    inconsistent : {"tie", "drop"}, default "tie"
        The label of a pair whose two orders disagree: ``"tie"`` is FastChat's own rule in
        ``show_result.py``; ``"drop"`` leaves it unlabelled.
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
    first = next(recs, None)
    if first is None:
        raise ReaderError(f"{src}: holds no records")
    kind = _kind(*first, src)
    stream = _same_kind(itertools.chain([first], recs), kind, src)
    if kind == "single":
        return _read_single(src, stream)
    return _read_pair(src, stream, inconsistent)


def _kind(where: str, r: dict, src: str) -> str:
    if "g1_winner" in r or "g2_winner" in r:
        return "pair"
    if "score" in r:
        return "single"
    raise where_error(src, where, "g1_winner/score", "neither a pairwise record (g1_winner, g2_winner) nor a "
                      f"single-answer record (score); keys: {sorted(r)[:12]}. Is this a FastChat model_judgment file?")


def _same_kind(recs: Iterable[tuple[str, dict]], kind: str, src: str) -> Iterator[tuple[str, dict]]:
    for where, r in recs:
        if _kind(where, r, src) != kind:
            raise ReaderError(f"{src}: {where}: mixes pairwise (g1_winner) and single-answer (score) records; "
                              "FastChat writes them to separate files (*_pair.jsonl, *_single.jsonl) - split them first")
        yield where, r


def _winner(v, models: dict[str, str], src: str, where: str, field: str) -> str | None:
    """FastChat winner (model_1 / model_2 / tie / error) -> model-terms verdict A / B / tie, or None."""
    if v == "error":
        return None
    if v == "tie":
        return "tie"
    if v in models:
        return models[v]
    raise where_error(src, where, field, f"expected 'model_1', 'model_2', 'tie' or 'error', got {v!r}")


def _read_pair(src: str, recs, inconsistent: str) -> ReadResult:
    tally = Tally("mtbench", src, record_unit="lines (pairwise records)")
    rows = Columns()
    for where, r in recs:
        tally.record()
        if "m1_score" in r or "m2_score" in r:
            tally.drop("pairwise record derived from single-answer grading (m1_score/m2_score: one verdict, "
                       "not two presentation orders)", where)
            continue
        qid = _qid(r, src, where)
        m1 = need(r, "model_1", src, where, str)
        m2 = need(r, "model_2", src, where, str)
        judge, template = _judge(need(r, "judge", src, where), src, where)
        turn = _turn(r, src, where)
        a, b = _pair(m1, m2, src, where, "model_1", "model_2")
        letter = {m1: "A" if m1 == a else "B", m2: "A" if m2 == a else "B"}
        models = {"model_1": letter[m1], "model_2": letter[m2]}
        item = f"{qid}/turn{turn}/{a} vs {b}"
        for game, first in (("g1", m1), ("g2", m2)):
            order = "AB" if first == a else "BA"
            w = need(r, f"{game}_winner", src, where, str)
            raw = need(r, f"{game}_judgment", src, where, str, nullable=True)
            verdict = _winner(w, models, src, where, f"{game}_winner")
            status, note = "ok", None
            if raw is not None and raw.strip() == API_ERROR:
                status, note, verdict = "failed", "judge API error ($ERROR$)", None
            elif verdict is None:
                status, note = "failed", "no [[A]]/[[B]]/[[C]] verdict in the judgment (winner 'error')"
            rows.add({"item": item, "judge": judge, "protocol": "pairwise", "criterion": "overall",
                         "order": order, "raw": raw, "verdict": verdict,
                         "slot_verdict": to_slot(verdict, order) if verdict else None,
                         "score": _MARGIN[verdict] if verdict else math.nan, "parse_status": status,
                         "question_id": qid, "turn": turn, "model_a": a, "model_b": b, "game": game,
                         "template": template, "winner_raw": w, "note": note})
    n_rep = rows.number_repeats(["item", "judge", "order"])
    if n_rep:
        tally.note(f"{n_rep} games repeat a (pair, turn, judge, order) - appended re-runs or several prompt "
                   "templates: numbered as repeats (see 'template')")
    judg = tally.frame(rows, "judgments", columns=["slot_verdict", "question_id", "turn", "model_a", "model_b",
                                                   "game", "template", "winner_raw", "note"],
                       categories={"verdict": ["A", "B", "tie"]})
    ann = None
    if judg is not None:
        from medeval_kit.pairwise import resolve_orders

        # resolve on integer codes of item and judge (sorted, so the row order is that of the strings)
        # and without the judgment texts: grouping millions of strings costs far more memory
        item_code, items = pd.factorize(judg["item"], sort=True)
        judge_code, judges = pd.factorize(judg["judge"], sort=True)
        slim = pd.DataFrame({"item": item_code, "judge": judge_code, "criterion": judg["criterion"].to_numpy(),
                             "order": judg["order"].to_numpy(), "verdict": judg["verdict"].to_numpy(),
                             "parse_status": judg["parse_status"].to_numpy(), "repeat": judg["repeat"].to_numpy()})
        res = resolve_orders(slim, policy=inconsistent)
        del slim
        first = pd.Series(np.arange(len(judg))).groupby(item_code).first().to_numpy()
        meta = judg.iloc[first][["question_id", "turn", "model_a", "model_b"]].reset_index(drop=True)
        res = res.join(meta, on="item")
        res["item"], res["judge"] = items[res["item"].to_numpy()], judges[res["judge"].to_numpy()]
        ann = tally.frame({"item": res["item"].to_numpy(), "rater": res["judge"].to_numpy(), "rater_kind": "llm",
                           "criterion": "overall", "label": res["verdict"].to_numpy(),
                           "resolution": res["resolution"].to_numpy(), "question_id": res["question_id"].to_numpy(),
                           "turn": res["turn"].astype("int64").to_numpy(), "model_a": res["model_a"].to_numpy(),
                           "model_b": res["model_b"].to_numpy()},
                          "annotations", categories={"label": ["A", "B", "tie"]})
        del res, meta
        tally.note(f"annotations: one label per pair and judge, the two games resolved with policy {inconsistent!r} "
                   "(FastChat's show_result counts inconsistent games as a tie); a failed game leaves no label")
    return tally.result("judgments", "built-in JSON-lines reader", judgments=judg, annotations=ann)


def _read_single(src: str, recs) -> ReadResult:
    tally = Tally("mtbench", src, record_unit="lines (single-answer records)")
    rows = Columns()
    for where, r in recs:
        tally.record()
        qid = _qid(r, src, where)
        model = need(r, "model", src, where, str)
        judge, template = _judge(need(r, "judge", src, where), src, where)
        turn = _turn(r, src, where)
        score = need(r, "score", src, where, (int, float))
        raw = need(r, "judgment", src, where, str, nullable=True)
        status, note = "ok", None
        if raw is not None and raw.strip() == API_ERROR:
            status, note, val = "failed", "judge API error ($ERROR$)", math.nan
        elif score == -1:
            status, note, val = "failed", "no [[rating]] in the judgment (score -1)", math.nan
        elif not 0 <= score <= 10:
            raise where_error(src, where, "score", f"expected a rating in 1..10 or -1 (unparsed), got {score!r}")
        else:
            val = float(score)
        q = f"{qid}/turn{turn}"
        rows.add({"item": f"{q}:{model}", "judge": judge, "protocol": "rubric", "criterion": "overall",
                     "order": "single", "raw": raw, "verdict": None, "score": val, "parse_status": status,
                     "question_item": q, "target": model, "question_id": qid, "turn": turn, "max_score": 10.0,
                     "template": template, "note": note})
    n_rep = rows.number_repeats(["item", "judge"])
    if n_rep:
        tally.note(f"{n_rep} records repeat a (question, turn, model, judge): numbered as repeats (see 'template')")
    judg = tally.frame(rows, "judgments", columns=["question_item", "target", "question_id", "turn", "max_score",
                                                   "template", "note"])
    return tally.result("judgments", "built-in JSON-lines reader", judgments=judg)


# --------------------------------------------------------------------------- human judgments
_HUMAN_PREFIXES = ("expert", "author")


def _conversation(r: dict, conv_key: str, m: str, qid: str, turn: int, src: str, where: str, out: tuple) -> None:
    """Add the questions (items) and model answers (responses) of turns 1..``turn`` of one vote's conversation.

    The loop runs over turns the conversation holds: a ``turn`` beyond its user messages is an error.
    """
    conv = r.get(conv_key)
    if conv is None:
        return
    if not isinstance(conv, list) or not all(isinstance(x, dict) for x in conv):
        raise where_error(src, where, conv_key, "expected a list of {role, content} messages")
    items, seen_items, resps, seen_resps = out
    users = [x.get("content") for x in conv if x.get("role") == "user"]
    bots = [x.get("content") for x in conv if x.get("role") == "assistant"]
    if turn > len(users):
        raise where_error(src, where, "turn", f"turn {turn}, but {conv_key} holds {len(users)} user turn(s)")
    for t in range(1, turn + 1):
        q = f"{qid}/turn{t}"
        if isinstance(users[t - 1], str) and q not in seen_items:
            seen_items.add(q)
            items.add({"item": q, "dataset": "mt_bench", "question": users[t - 1], "question_id": qid, "turn": t})
        if t <= len(bots) and isinstance(bots[t - 1], str) and (q, m) not in seen_resps:
            seen_resps.add((q, m))
            resps.add({"item": q, "model": m, "repeat": 0, "text": bots[t - 1]})


@guarded
def read_mtbench_human(path: str | Path, *, rater_kinds: Mapping[str, str] | None = None,
                       max_json_bytes: int | None = None) -> ReadResult:
    """Read MT-bench human judgments (``mt_bench_human_judgments``: JSON array or JSON lines) into annotations.

    One row per vote: ``rater`` = the judge, ``rater_kind`` = ``human`` for FastChat's ``expert_*`` /
    ``author_*`` judges and ``llm`` for a ``[model, prompt]`` judge (the ``gpt4_pair`` split); other
    judge names must be given in ``rater_kinds={"name": "human" | "llm"}``. ``label`` is A/B/tie for
    the sorted model pair (``tie (bothbad)`` -> ``tie``; the raw winner is kept). When the votes carry
    ``conversation_a``/``conversation_b``, items (one per question and turn) and responses are built.
    A JSON-lines file is streamed.

    Parameters
    ----------
    path : str or Path
        The file.
    rater_kinds : mapping of str to str, optional
        ``{judge name: "human" | "llm"}`` for judges other than FastChat's ``expert_*`` / ``author_*``
        and ``[model, prompt]`` judges.
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
    tally = Tally("mtbench_human", src, record_unit="votes")
    kinds = dict(rater_kinds or {})
    bad = {k: v for k, v in kinds.items() if v not in ("human", "llm")}
    if bad:
        raise ReaderError(f"rater_kinds values must be 'human' or 'llm'; got {bad}")
    ann, items, resps, seen = Columns(), Columns(), Columns(), set()
    seen_items: set[str] = set()
    seen_resps: set[tuple[str, str]] = set()
    for where, r in recs:
        tally.record()
        qid = _qid(r, src, where)
        ma = need(r, "model_a", src, where, str)
        mb = need(r, "model_b", src, where, str)
        jv = need(r, "judge", src, where)
        rater, template = _judge(jv, src, where)
        kind = kinds.get(rater)
        if kind is None:
            if isinstance(jv, list):
                kind = "llm"
            elif rater.startswith(_HUMAN_PREFIXES):
                kind = "human"
            else:
                raise where_error(src, where, "judge", f"cannot tell whether {rater!r} is a person or a model "
                                  "(FastChat's people are expert_* / author_*); pass "
                                  f"rater_kinds={{{rater!r}: 'human' or 'llm'}}")
        turn = _turn(r, src, where)
        a, b = _pair(ma, mb, src, where, "model_a", "model_b")
        w = need(r, "winner", src, where, str)
        if w in ("model_a", "model_b"):
            label = "A" if (ma if w == "model_a" else mb) == a else "B"
        elif w.startswith("tie"):
            label = "tie"
        elif w in ("error", "inconsistent"):
            label = None
        else:
            raise where_error(src, where, "winner", f"expected 'model_a', 'model_b', 'tie' or 'tie (bothbad)', got {w!r}")
        item = f"{qid}/turn{turn}/{a} vs {b}"
        if (item, rater) in seen:
            tally.drop("repeated vote of one judge on one pair and turn (kept the first)", where)
            continue
        seen.add((item, rater))
        ann.add({"item": item, "rater": rater, "rater_kind": kind, "criterion": "overall", "label": label,
                    "question_id": qid, "turn": turn, "model_a": a, "model_b": b, "winner_raw": w,
                    "template": template, "question_item": f"{qid}/turn{turn}"})
        for m, conv_key in ((ma, "conversation_a"), (mb, "conversation_b")):
            _conversation(r, conv_key, m, qid, turn, src, where, (items, seen_items, resps, seen_resps))
    if any(x is None for x in ann.cols.get("label", ())):
        tally.note("votes with winner 'error'/'inconsistent' are kept without a label")
    return tally.result(
        "annotations", "built-in JSON reader",
        annotations=tally.frame(ann, "annotations", categories={"label": ["A", "B", "tie"]},
                                columns=["question_id", "turn", "model_a", "model_b", "winner_raw", "template"]),
        items=tally.frame(items, "items"),
        responses=tally.frame(resps, "responses"),
    )
