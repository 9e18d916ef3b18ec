"""MCQG-SRefine (mcqg-srefine-2025): INIT -> self-answer -> critique -> correction, round by round.

Input: a DataFrame of (clinical note, topic, test point) triplets. For each round and item:

1. round 1 (INIT): context -> question -> correct answer -> distractors, four calls, each with
   few-shot examples from a local :class:`~medeval_kit.retrieve.Retriever` (ColBERT stand-in);
   rounds >= 2: one correction call fed with the previous round's critique;
2. self-answer: the options (answer + distractors) are shuffled with a seeded RNG and lettered;
   the model answers with step-by-step reasoning;
3. critique: one call per rubric component (5), every aspect scored 1-5; the reasoning
   ``correctness`` aspect is computed (attempted letter == keyed letter), as in the public code;
4. stop check with :func:`medeval_kit.rounds.should_stop` (rule ``total`` = paper, mean of the
   normalized components > threshold; ``all_components`` = public code, every component >=
   threshold) or ``max_rounds``; the output round is chosen by
   :func:`medeval_kit.rounds.select_best_round` with a stated tie-break.

Every round of every item lands in the ``rounds`` table (one row per component aspect plus a
``total`` row per component), with its text, flags, provenance and parse status; a critique
that cannot be parsed gives NaN scores and ``parse_status="failed"``, never a dropped row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from medeval_kit import rounds
from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.generate._common import (
    DEFAULT_MODEL,
    GenerationError,
    cached_retriever,
    derived_seed,
    dumps,
    legacy_keywords,
    resolve_client,
    retriever_query,
    run_prompt,
    shuffle_options,
    truncate,
)
from medeval_kit.results import RESULT_COLUMNS, Result, result_frame, result_row

__all__ = [
    "round_summary",
    "srefine_pairs",
    "srefine_preferences",
    "stop_rule_comparison",
    "judge_srefine",
    "SRefineResult",
    "SRefineJudgment",
    "run_srefine",
    "build_fewshot_bank",
    "format_mcq",
    "critique_schema",
    "COMPUTED_ASPECTS",
]

COMPUTED_ASPECTS = {("reasoning", "correctness")}
"""Aspects scored by rule, not by the LLM: full marks when the self-answer equals the key."""

PROMPTS = {
    "context": "generate/mcq_init_context",
    "question": "generate/mcq_init_question",
    "answer": "generate/mcq_init_answer",
    "distractors": "generate/mcq_init_distractors",
    "self_answer": "generate/mcq_self_answer",
    "critique": "generate/mcq_critique",
    "correct": "generate/mcq_correct",
}


def build_fewshot_bank(*, method: str = "bm25"):
    """Return a fitted :class:`~medeval_kit.retrieve.Retriever` over the bundled MedQG USMLE MCQs.

    The bank (758 GPT-4 questions from MedQG's public repo) stands in for MedQA; each example
    row has context, question, answer_text, options and the source clinical note (``note``) so
    that examples built from the same note can be excluded.

    Parameters
    ----------
    method : {"bm25", "tfidf"}, default "bm25"
        The retriever (:class:`~medeval_kit.retrieve.Retriever`).

    Returns
    -------
    Retriever
        Fitted on the question stem, topic and keypoint, with ``note`` as the id; fitted once per process
        and method (each call returns a copy of that fit).
    """
    from medeval_kit.paths import data_dir

    return cached_retriever(("fewshot_bank", method, str(data_dir())), lambda: _fit_fewshot_bank(method))


def _fit_fewshot_bank(method: str):
    """Fit the retriever of :func:`build_fewshot_bank`."""
    from medeval_kit.datasets import load_medqg_questions
    from medeval_kit.retrieve import Retriever

    items = load_medqg_questions("both").items.copy()
    items["note"] = items["context"]
    items["stem"] = items["question"]
    return Retriever(method=method).fit(items, text=["stem", "topic", "keypoint"], id="note")


def _examples(retriever, query: str, note: str, k: int, fields: Sequence[str], max_chars: int) -> str:
    if retriever is None or k <= 0:
        return "(none)"
    hits = retriever_query(retriever, query, k, exclude=[note])
    blocks = []
    for j, h in hits.iterrows():
        parts = []
        if "context" in fields:
            parts.append(f"Context+Question: {truncate(h['stem'], max_chars)}")
        if "answer" in fields:
            parts.append(f"Correct answer: {h['answer_text']}")
        if "options" in fields:
            opts = h["options"] if isinstance(h["options"], dict) else {}
            parts.append("Options: " + "; ".join(f"{k_}: {v}" for k_, v in opts.items()))
        blocks.append(f"Example {j + 1}:\n" + "\n".join(parts))
    return "\n\n".join(blocks) if blocks else "(none)"


def format_mcq(context: str, question: str, options: dict, answer_letter: str | None = None) -> str:
    """Plain-text rendering of an MCQ (used in critique/correction prompts and the rounds table).

    Parameters
    ----------
    context : str
        The clinical vignette.
    question : str
        The question stem.
    options : dict of str to str
        Letter -> option text, in display order.
    answer_letter : str, optional
        The key; a ``Correct answer`` line is added when given.

    Returns
    -------
    str
        The MCQ as text.

    Examples
    --------
    >>> print(format_mcq("A 30-year-old man.", "Diagnosis?", {"A": "Flu", "B": "Cold"}, "A"))
    Context: A 30-year-old man.
    Question: Diagnosis?
    Options:
    A. Flu
    B. Cold
    Correct answer: A
    """
    lines = [f"Context: {context}", f"Question: {question}", "Options:"]
    lines += [f"{k}. {v}" for k, v in options.items()]
    if answer_letter:
        lines.append(f"Correct answer: {answer_letter}")
    return "\n".join(lines)


def critique_schema(aspects: Sequence[str], *, max_feedback_chars: int = 100) -> dict:
    """JSON schema of one component critique: an integer 1-5 per aspect, then ``feedback`` text.

    Scores come first and the feedback is length-capped so that a grammar-constrained reply
    always completes within a small ``max_tokens`` (an unbounded string can be cut off).

    Parameters
    ----------
    aspects : sequence of str
        The component's aspect ids.
    max_feedback_chars : int, default 100
        The longest feedback allowed.

    Returns
    -------
    dict
        The JSON schema.
    """
    return {
        "type": "object",
        "properties": {
            "scores": {
                "type": "object",
                "properties": {a: {"type": "integer", "enum": [1, 2, 3, 4, 5]} for a in aspects},
                "required": list(aspects),
            },
            "feedback": {"type": "string", "maxLength": int(max_feedback_chars)},
        },
        "required": ["scores", "feedback"],
    }


@dataclass(frozen=True)
class SRefineResult(Result):
    """Output of :func:`run_srefine`. Not a statistic: :meth:`to_frame` is one row of counts.

    Attributes
    ----------
    rounds : DataFrame
        The schema ``rounds`` table plus provenance (text, feedback, parse_status ...).
    generations : DataFrame
        One row per (item, round): the MCQ, options, shuffle order, self-answer, component scores,
        total, stop/best flags.
    calls : DataFrame
        One row per LLM call.
    params : dict
        The settings (stop rule, threshold, tie-break, max_rounds, model, seed ...).
    stage0 : StageZeroResult or None
        The Stage 0 tables when ``topics="machine"``.
    """

    rounds: pd.DataFrame
    generations: pd.DataFrame
    calls: pd.DataFrame
    params: dict = field(default_factory=dict)
    stage0: Any = None

    def best(self) -> pd.DataFrame:
        """The selected output MCQ of every item (``best`` rows of ``generations``).

        Returns
        -------
        DataFrame
            One row per item.
        """
        return self.generations[self.generations["best"]].reset_index(drop=True)

    def to_frame(self) -> pd.DataFrame:
        """One summary row: n_items, rounds, calls, parse failures, QA accuracy, stop counts.

        Returns
        -------
        DataFrame
            One row of counts and settings.
        """
        g, c = self.generations, self.calls
        return pd.DataFrame([{
            "n_items": g["item"].nunique(), "n_rounds_run": len(g),
            "mean_rounds": g.groupby("item")["round"].max().mean() if len(g) else np.nan,
            "n_calls": len(c), "n_cached": int(c["cached"].sum()) if len(c) else 0,
            "n_failed": int((c["parse_status"] == "failed").sum()) if len(c) else 0,
            "n_missing": int((c["parse_status"] == "missing").sum()) if len(c) else 0,
            "qa_accuracy_round1": g.loc[g["round"] == 1, "qa_correct"].mean() if len(g) else np.nan,
            "n_stopped_by_rule": int(g["stop_by_rule"].sum()) if len(g) else 0,
            "stop_rule": self.params.get("stop_rule"), "threshold": self.params.get("threshold"),
            "tie_break": self.params.get("tie_break"), "max_rounds": self.params.get("max_rounds"),
            "model": self.params.get("model"), "topics": self.params.get("topics"),
        }])

    def summary(self) -> str:
        """One line: items, rounds, calls, failures and the stop rule.

        Returns
        -------
        str
            The summary.
        """
        r = self.to_frame().iloc[0]
        return (f"MCQG-SRefine ({r.topics} topics): {r.n_items} items, {r.n_rounds_run} item-rounds (mean {r.mean_rounds:.2f} rounds), "
                f"{r.n_calls} calls ({r.n_cached} cached), {r.n_failed} parse failures, {r.n_missing} missing; "
                f"stop rule {r.stop_rule!r} (threshold {r.threshold}), {r.n_stopped_by_rule} stopped by rule; "
                f"best round by total, tie-break {r.tie_break!r}")


@dataclass
class _Loop:
    """What every stage of one SRefine run shares: the client, prompts, rubric, settings, the
    items' texts, the per-item state (current MCQ, self-answer, feedback) and the call log."""

    client: Any
    prompts: dict
    rubric: Any
    retriever: Any
    call_kw: dict
    settings: dict
    notes: dict[str, str]
    tps: dict[str, tuple[str, str]]
    state: dict[str, dict] = field(default_factory=dict)
    calls: list[dict] = field(default_factory=list)

    def run(self, stage: str, variables: list[dict], meta: list[dict], desc: str, **extra) -> list[dict]:
        """Call the prompt of ``stage`` once per variables dict; return the records."""
        return run_prompt(self.client, self.prompts[stage], variables, desc=desc, metadata=meta,
                          **self.call_kw, **extra)

    def log(self, stage: str, round_: int, iid: str, rec: dict) -> None:
        """Append one call to the call log (everything but the parsed reply)."""
        self.calls.append({"item": iid, "round": round_, "stage": stage,
                           **{k: v for k, v in rec.items() if k != "parsed"}})

    def note(self, i: str) -> str:
        """The item's clinical note, truncated for the prompt."""
        return truncate(self.notes[i], self.settings["max_note_chars"])

    def examples(self, i: str, extra: str, k: int, fields: Sequence[str]) -> str:
        """Few-shot examples retrieved for the item's topic + test point + ``extra`` text."""
        t, kp = self.tps[i]
        return _examples(self.retriever, " ".join([t, kp, extra]), self.notes[i], k, fields,
                         self.settings["max_example_chars"])


def _field(rec: dict, key: str, default=""):
    """``rec["parsed"][key]`` when the reply parsed to a dict holding it, else ``default``."""
    p = rec["parsed"]
    if isinstance(p, dict) and key in p:
        return p[key]
    return default


def _check_inputs(inputs: pd.DataFrame, columns: Sequence[str], stop_rule: str, max_rounds: int) -> None:
    """Raise GenerationError for an unknown stop rule, max_rounds < 1, a missing column or duplicate ids."""
    if stop_rule not in rounds.STOP_RULES:
        raise GenerationError(f"stop_rule must be one of {rounds.STOP_RULES}; not {stop_rule!r}")
    if int(max_rounds) < 1:
        raise GenerationError(f"max_rounds must be >= 1, got {max_rounds}")
    for col in columns:
        if col not in inputs.columns:
            raise GenerationError(f"inputs have no column {col!r}; present: {list(inputs.columns)}")
    if inputs[columns[0]].duplicated().any():
        raise GenerationError(f"inputs column {columns[0]!r} has duplicate ids; each triplet needs its own id")


def _init_stage(loop: _Loop, ids: list[str], stage: str, vars_fn, key: str) -> None:
    """One INIT step for every item: render, call, store ``key`` of the reply in the item state."""
    recs = loop.run(stage, [vars_fn(i) for i in ids], [{"item": i, "round": 1, "stage": stage} for i in ids],
                    f"srefine init {stage}")
    for i, rec in zip(ids, recs):
        loop.log(f"init_{stage}", 1, i, rec)
        loop.state.setdefault(i, {})[key] = _field(rec, key, [] if key == "distractors" else "")
        loop.state[i].setdefault("init_status", []).append(rec["parse_status"])


def _initial_generation(loop: _Loop, ids: list[str]) -> None:
    """Round 1 (INIT), component by component: context -> question -> correct answer -> distractors."""
    st, tps, k = loop.state, loop.tps, loop.settings["k_shots"]
    _init_stage(loop, ids, "context", lambda i: {
        "examples": loop.examples(i, loop.notes[i][:500], k, ["context"]),
        "clinical_note": loop.note(i), "topic": tps[i][0], "keypoint": tps[i][1]}, "context")
    _init_stage(loop, ids, "question", lambda i: {
        "examples": loop.examples(i, st[i]["context"][:500], k, ["context"]),
        "context": st[i]["context"], "topic": tps[i][0], "keypoint": tps[i][1]}, "question")
    _init_stage(loop, ids, "answer", lambda i: {
        "examples": loop.examples(i, st[i]["question"], k, ["context", "answer"]),
        "context": st[i]["context"], "question": st[i]["question"], "topic": tps[i][0],
        "keypoint": tps[i][1]}, "correct_answer")
    _init_stage(loop, ids, "distractors", lambda i: {
        "examples": loop.examples(i, st[i]["question"], min(k, 1), ["context", "answer", "options"]),
        "context": st[i]["context"], "question": st[i]["question"],
        "correct_answer": st[i]["correct_answer"]}, "distractors")


def _correction(loop: _Loop, active: list[str], rnd: int) -> None:
    """Rounds >= 2: rewrite each MCQ from the previous critique; a failed correction keeps the
    previous round's MCQ (flagged through ``generation_status``)."""
    vs = [{"clinical_note": loop.note(i), "topic": loop.tps[i][0], "keypoint": loop.tps[i][1],
           "mcq": loop.state[i]["mcq_text"], "feedback": loop.state[i]["feedback_text"]} for i in active]
    recs = loop.run("correct", vs, [{"item": i, "round": rnd, "stage": "correct"} for i in active],
                    f"srefine correct r{rnd}")
    for i, rec in zip(active, recs):
        loop.log("correct", rnd, i, rec)
        st = loop.state[i]
        st["init_status"] = [rec["parse_status"]]
        if rec["parse_status"] == "ok" and isinstance(rec["parsed"], dict):
            for key in ("context", "question", "correct_answer", "distractors"):
                st[key] = rec["parsed"].get(key, st[key])


def _self_answer(loop: _Loop, active: list[str], rnd: int) -> None:
    """Shuffle each item's options (seeded by item and round) and let the model answer them."""
    for i in active:
        st = loop.state[i]
        dis = st["distractors"] if isinstance(st["distractors"], list) else []
        sh = shuffle_options(st["correct_answer"], dis, seed=derived_seed(loop.settings["seed"], i, rnd))
        st.update(sh)
        st["mcq_text"] = format_mcq(st["context"], st["question"], sh["options"], sh["answer_letter"])
    vs = [{"context": loop.state[i]["context"], "question": loop.state[i]["question"],
           "options": "\n".join(f"{k}. {v}" for k, v in loop.state[i]["options"].items())} for i in active]
    recs = loop.run("self_answer", vs, [{"item": i, "round": rnd, "stage": "self_answer"} for i in active],
                    f"srefine answer r{rnd}")
    for i, rec in zip(active, recs):
        loop.log("self_answer", rnd, i, rec)
        st = loop.state[i]
        st["attempted"] = _field(rec, "answer", None)
        st["reasoning"] = _field(rec, "reasoning", rec["text"] or "")
        st["answer_status"] = rec["parse_status"]


def _critique(loop: _Loop, active: list[str], rnd: int) -> list[dict]:
    """One critique call per (item, rubric component), the LLM-scored aspects only; return the records
    in item-major, component-minor order."""
    variables, schemas, meta = [], [], []
    for i in active:
        st = loop.state[i]
        for comp in loop.rubric.components:
            asked = [a for a in comp.aspects if (comp.id, a.id) not in COMPUTED_ASPECTS]
            variables.append({
                "component": comp.id,
                "aspects": "\n".join(f"- {a.id}: {a.description}" for a in asked),
                "clinical_note": loop.note(i), "topic": loop.tps[i][0], "keypoint": loop.tps[i][1],
                "mcq": st["mcq_text"], "attempted_answer": st["attempted"] or "(no answer)",
                "answer_letter": st["answer_letter"], "reasoning": truncate(st["reasoning"], 1200)})
            schemas.append(critique_schema([a.id for a in asked]))
            meta.append({"item": i, "round": rnd, "stage": f"critique_{comp.id}"})
    return loop.run("critique", variables, meta, f"srefine critique r{rnd}", schemas=schemas)


def _aspect_score(comp, aspect, st: dict, rec: dict, scores, ok: bool, qa_correct: bool,
                  wrong_score: float | None) -> tuple[float, str]:
    """(score, parse_status) of one aspect: computed from the self-answer, or read from the critique."""
    if (comp.id, aspect.id) in COMPUTED_ASPECTS:
        if st["attempted"] is None:
            return np.nan, st["answer_status"]
        wrong = aspect.min if wrong_score is None else wrong_score
        return (float(aspect.max) if qa_correct else float(wrong)), "computed"
    s = float(scores[aspect.id]) if ok and aspect.id in scores else np.nan
    return s, rec["parse_status"] if not ok else ("ok" if aspect.id in scores else "failed")


def _score_item(loop: _Loop, i: str, rnd: int, recs) -> tuple[dict, list[dict], bool]:
    """Score one item's critiques (``recs`` yields its component records in rubric order).

    Returns the normalized score per component (NaN when any aspect is missing), the rounds-table
    rows (every aspect plus a ``total`` per component) and whether the self-answer was right; sets
    the item's ``feedback_text`` for the next correction."""
    st = loop.state[i]
    comp_scores, fb_parts, per_round = {}, [], []
    qa_correct = (st["attempted"] is not None and st["attempted"] == st["answer_letter"])
    for comp in loop.rubric.components:
        rec = next(recs)
        loop.log(f"critique_{comp.id}", rnd, i, rec)
        scores = _field(rec, "scores", None)
        ok = rec["parse_status"] == "ok" and isinstance(scores, dict)
        fb = _field(rec, "feedback", "") if ok else ""
        fb_parts.append(f"[{comp.id}] {fb}")
        vals = []
        for a in comp.aspects:
            s, status = _aspect_score(comp, a, st, rec, scores, ok, qa_correct,
                                      loop.settings["correctness_wrong_score"])
            vals.append(s)
            per_round.append({"component": comp.id, "aspect": a.id, "score": s, "max_score": float(a.max),
                              "parse_status": status, "feedback": fb})
        tot = float(np.sum(vals)) if not np.any(np.isnan(vals)) else np.nan
        per_round.append({"component": comp.id, "aspect": "total", "score": tot,
                          "max_score": float(comp.max_score), "parse_status": rec["parse_status"], "feedback": fb})
        comp_scores[comp.id] = tot / comp.max_score if not np.isnan(tot) else np.nan
    st["feedback_text"] = "\n".join(fb_parts)
    return comp_scores, per_round, bool(qa_correct)


def _stop_decision(comp_scores: dict, rnd: int, settings: dict) -> tuple[bool, bool]:
    """(stopped by the rule, stop now): the rule via ``rounds.should_stop``, or the last allowed round."""
    by_rule = bool(rounds.should_stop(comp_scores, settings["stop_rule"], threshold=settings["threshold"]))
    return by_rule, by_rule or rnd == settings["max_rounds"]


def _generation_row(loop: _Loop, i: str, rnd: int, comp_scores: dict, qa_correct: bool, by_rule: bool,
                    stop: bool) -> dict:
    """The ``generations`` row of one (item, round): the MCQ, self-answer, scores, flags and provenance."""
    st, cfg, P = loop.state[i], loop.settings, loop.prompts
    comp_ids = [c.id for c in loop.rubric.components]
    comp_vals = [comp_scores[c] for c in comp_ids]
    total = float(np.mean(comp_vals)) if not np.any(np.isnan(comp_vals)) else np.nan
    prompt = P["context"] if rnd == 1 else P["correct"]
    return {
        "item": i, "round": rnd, "topics": cfg["source"], "clinical_note": loop.notes[i], "topic": loop.tps[i][0],
        "keypoint": loop.tps[i][1],
        "context": st["context"], "question": st["question"], "correct_answer": st["correct_answer"],
        "distractors": dumps(st["distractors"]), "options": dumps(st["options"]),
        "answer_letter": st["answer_letter"], "shuffle_order": dumps(st["shuffle_order"]),
        "attempted_answer": st["attempted"], "reasoning": st["reasoning"], "qa_correct": bool(qa_correct),
        "text": st["mcq_text"], **{f"score_{c}": comp_scores[c] for c in comp_ids}, "total": total,
        "n_critique_failed": int(sum(np.isnan(comp_vals))),
        "generation_status": "ok" if all(s == "ok" for s in st["init_status"]) else "failed",
        "answer_status": st["answer_status"], "stop_by_rule": by_rule, "stop": stop,
        "model": cfg["model"], "prompt": prompt.name, "prompt_version": prompt.version,
        "seed": int(cfg["seed"]), "stop_rule": cfg["stop_rule"], "threshold": float(cfg["threshold"]),
    }


def _round_rows(loop: _Loop, i: str, rnd: int, per_round: list[dict], qa_correct: bool, stop: bool) -> list[dict]:
    """The ``rounds`` table rows of one (item, round), each aspect row with the MCQ text and provenance."""
    st, cfg, crit = loop.state[i], loop.settings, loop.prompts["critique"]
    common = {"stop": stop, "best": False, "text": st["mcq_text"], "self_answer_correct": bool(qa_correct),
              "question_length": len(f"{st['context']} {st['question']}".split()),
              "note_length": len(loop.notes[i].split()), "source": cfg["source"], "model": cfg["model"],
              "prompt": crit.name, "prompt_version": crit.version, "seed": int(cfg["seed"]),
              "stop_rule": cfg["stop_rule"], "threshold": float(cfg["threshold"])}
    return [{"item": i, "round": rnd, **r, **common} for r in per_round]


def _run_round(loop: _Loop, active: list[str], rnd: int, gen_rows: list[dict], round_rows: list[dict]) -> list[str]:
    """One round for the ``active`` items: (correction,) self-answer, critique, scores, stop check.
    Appends the round's rows; returns the items that go on to the next round."""
    if rnd > 1:
        _correction(loop, active, rnd)
    _self_answer(loop, active, rnd)
    recs = iter(_critique(loop, active, rnd))
    stopped = set()
    for i in active:
        comp_scores, per_round, qa_correct = _score_item(loop, i, rnd, recs)
        by_rule, stop = _stop_decision(comp_scores, rnd, loop.settings)
        if stop:
            stopped.add(i)
        gen_rows.append(_generation_row(loop, i, rnd, comp_scores, qa_correct, by_rule, stop))
        round_rows.extend(_round_rows(loop, i, rnd, per_round, qa_correct, stop))
    return [i for i in active if i not in stopped]


def _tables(gen_rows: list[dict], round_rows: list[dict], tie_break: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The validated ``rounds`` table and the ``generations`` table, the selected round of every item
    (``rounds.select_best_round``) flagged ``best`` in both; an item with no scored round has none."""
    from medeval_kit.schemas import validate

    rounds_df, gens = pd.DataFrame(round_rows), pd.DataFrame(gen_rows)
    sel = rounds.select_best_round(rounds_df, tie_break=tie_break)
    best = {str(k): int(v) for k, v in zip(sel["item"], sel["best_round"]) if pd.notna(v)}
    gens["best"] = [best.get(i) == r for i, r in zip(gens["item"], gens["round"])]
    rounds_df["best"] = [best.get(i) == r for i, r in zip(rounds_df["item"], rounds_df["round"])]
    rounds_df["round"] = rounds_df["round"].astype(int)
    validate(rounds_df, "rounds")
    return rounds_df, gens


@shared_docs
@legacy_keywords(note="columns:clinical_note")
@takes_columns("item", "clinical_note", "topic", "keypoint", "case")
def run_srefine(
    inputs: pd.DataFrame,
    *,
    model: str | None = None,
    client=None,
    cache_mode: str = "use",
    retriever=None,
    rubric="mcqg_srefine",
    max_rounds: int = 4,
    stop_rule: str = "total",
    threshold: float = 0.9,
    tie_break: str = "earliest",
    k_shots: int = 3,
    seed: int = 0,
    temperature: float = 0.0,
    max_tokens: int = 300,
    constrained: bool = True,
    max_note_chars: int | None = 2000,
    max_example_chars: int | None = 500,
    correctness_wrong_score: float | None = None,
    topics: str = "human",
    max_topics: int = 5,
    triplets_per_note: int | None = 1,
    k_concepts: int = 8,
    progress: bool = False,
    columns: Columns = None,
) -> SRefineResult:
    """Run MCQG-SRefine on ``inputs`` (one row per triplet); all items advance stage by stage.

    Parameters
    ----------
    inputs : DataFrame
        One row per triplet: ``item``, ``clinical_note``, ``topic`` and ``keypoint``
        (:func:`~medeval_kit.datasets.load_srefine_inputs`); with ``topics="machine"`` the distinct
        notes (``case`` and ``clinical_note``). The old keywords ``item=``, ``note=``, ``topic=``,
        ``keypoint=`` and ``case=`` still work for one release (use ``columns=``).
    {model}
        Default ``"local/smollm2-135m"``.
    {client}
    cache_mode : {"use", "record", "replay"}, default "use"
        The LLM cache mode (:mod:`medeval_kit.llm`).
    retriever : Retriever, optional
        Few-shot retriever; default :func:`build_fewshot_bank`.
    rubric : str or Rubric, default "mcqg_srefine"
        Rubric name or :class:`~medeval_kit.prompts.Rubric` (5 components, 30 aspects).
    max_rounds : int, default 4
        At most this many rounds (round 1 = INIT; paper and code: 4).
    stop_rule : str, default "total"
        Passed to ``rounds.should_stop``, one of ``rounds.STOP_RULES``: ``"total"`` (paper),
        ``"all_components"`` (public code) or ``"max_rounds"`` (no early stop).
    threshold : float, default 0.9
        The stop rule's threshold.
    tie_break : str, default "earliest"
        Passed to ``rounds.select_best_round`` (e.g. ``"earliest"``, ``"latest"``).
    k_shots : int, default 3
        Few-shot examples per INIT call; 0 = none.
    {seed}
    temperature : float, default 0.0
        Sampling temperature.
    max_tokens : int, default 300
        Token limit of a reply.
    constrained : bool, default True
        JSON schema in the request (grammar with the local model) vs free text parsed afterwards
        (failures counted).
    max_note_chars : int or None, default 2000
        Notes are cut to this many characters in prompts.
    max_example_chars : int or None, default 500
        Few-shot examples are cut to this many characters.
    correctness_wrong_score : float, optional
        Score of the computed reasoning ``correctness`` aspect when the self-answer is wrong
        (default: the aspect's minimum; the public code uses 0).
    topics : {"human", "machine"}, default "human"
        Where the (topic, test point) pairs come from, recorded per row (``topics`` in
        ``generations``, ``source`` in ``rounds``): ``"human"`` uses the ``topic`` and ``keypoint``
        columns of ``inputs``; ``"machine"`` runs Stage 0 (:func:`~medeval_kit.generate.machine_triplets`)
        on the distinct notes of ``inputs``, and the first ``triplets_per_note`` triplets of each note
        go through the loop (the Stage 0 tables are in ``result.stage0``).
    max_topics : int, default 5
        Stage 0: the most checklist topics per note.
    triplets_per_note : int or None, default 1
        Stage 0: triplets per note that go through the loop.
    k_concepts : int, default 8
        Stage 0: outline concepts retrieved per (note, topic).
    progress : bool, default False
        Show a progress bar.
    {columns}

    Returns
    -------
    SRefineResult
        The ``rounds`` table, the generations, the calls and the settings.

    Raises
    ------
    GenerationError
        Unknown ``topics`` or stop rule, ``max_rounds < 1``, missing columns, duplicate ids, or a
        Stage 0 that produced no usable triplet.
    """
    from medeval_kit.prompts import Rubric, load_prompt, load_rubric

    model = model or DEFAULT_MODEL
    item, note, topic, keypoint = "item", "clinical_note", "topic", "keypoint"

    if topics not in ("human", "machine"):
        raise GenerationError(f"topics must be 'human' or 'machine'; not {topics!r}")
    stage0 = None
    if topics == "machine":
        from medeval_kit.generate.topics import machine_triplets

        client = resolve_client(model, client, cache_mode)
        stage0 = machine_triplets(inputs, model=model, client=client, max_topics=max_topics,
                                  per_note=triplets_per_note, k_concepts=k_concepts, constrained=constrained,
                                  seed=seed, temperature=temperature, max_note_chars=max_note_chars,
                                  progress=progress)
        inputs = stage0.triplets
        if inputs.empty:
            raise GenerationError(f"Stage 0 produced no usable (topic, test point) pair: {stage0.summary()}")
    _check_inputs(inputs, (item, note, topic, keypoint), stop_rule, max_rounds)
    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
    if retriever is None and k_shots > 0:
        retriever = build_fewshot_bank()
    rows = inputs.reset_index(drop=True)
    ids = rows[item].astype(str).tolist()
    loop = _Loop(
        client=resolve_client(model, client, cache_mode), prompts={k: load_prompt(v) for k, v in PROMPTS.items()},
        rubric=rub, retriever=retriever,
        call_kw=dict(model=model, temperature=temperature, max_tokens=max_tokens, seed=seed,
                     constrained=constrained, progress=progress),
        settings=dict(model=model, seed=seed, k_shots=k_shots, max_note_chars=max_note_chars,
                      max_example_chars=max_example_chars, stop_rule=stop_rule, threshold=threshold,
                      max_rounds=int(max_rounds), source=topics, correctness_wrong_score=correctness_wrong_score),
        notes={i: str(n) for i, n in zip(ids, rows[note])},
        tps={i: (str(t), str(k)) for i, t, k in zip(ids, rows[topic], rows[keypoint])})

    _initial_generation(loop, ids)
    gen_rows: list[dict] = []
    round_rows: list[dict] = []
    active = list(ids)
    for rnd in range(1, int(max_rounds) + 1):
        active = _run_round(loop, active, rnd, gen_rows, round_rows)
        if not active:
            break

    rounds_df, gens = _tables(gen_rows, round_rows, tie_break)
    params = dict(model=model, stop_rule=stop_rule, threshold=float(threshold), tie_break=tie_break,
                  max_rounds=int(max_rounds), k_shots=int(k_shots), seed=int(seed), temperature=temperature,
                  constrained=constrained, rubric=rub.name, rubric_version=rub.version,
                  retriever=getattr(retriever, "method", None), topics=topics)
    calls = pd.DataFrame(loop.calls)
    if stage0 is not None:
        s0 = stage0.calls.rename(columns={"case": "item"}).assign(round=0)
        calls = pd.concat([s0[[c for c in s0.columns if c in calls.columns or c in ("item", "round", "stage")]], calls],
                          ignore_index=True)
    return SRefineResult(rounds=rounds_df, generations=gens, calls=calls, params=params, stage0=stage0)


def round_summary(result: SRefineResult) -> pd.DataFrame:
    """Per round: mean normalized score per component and total, QA accuracy, stops and failures.

    Means are over the available items only: later rounds are survivors of the stopping rule.

    Parameters
    ----------
    result : SRefineResult
        The output of :func:`run_srefine`.

    Returns
    -------
    DataFrame
        One row per ``round``: ``estimate`` = mean normalized total (no CI), ``n_items`` = items that
        reached the round, ``n_failed`` = items without a total, the contract columns, then
        ``mean_<component>``, ``mean_total``, ``n_total_missing``, ``qa_accuracy``, ``n_stopped_by_rule``,
        ``n_best``, ``n_critique_failed`` and ``population``.
    """
    g = result.generations
    comps = [c for c in g.columns if c.startswith("score_")]
    rows = []
    for r, d in g.groupby("round", sort=True):
        row = {"round": int(r), "n_items": int(d["item"].nunique())}
        for c in comps + ["total"]:
            row[f"mean_{c.removeprefix('score_')}"] = float(d[c].mean()) if d[c].notna().any() else np.nan
        row.update(n_total_missing=int(d["total"].isna().sum()), qa_accuracy=float(d["qa_correct"].mean()),
                   n_stopped_by_rule=int(d["stop_by_rule"].sum()), n_best=int(d["best"].sum()),
                   n_critique_failed=int(d["n_critique_failed"].sum()),
                   population="available (survivors)")
        rows.append(result_row(row["mean_total"], n_items=row.pop("n_items"), n_failed=row["n_total_missing"],
                               note="" if row["round"] == 1 else "items that reached this round", **row))
    return result_frame(rows, keys=["round"])


def srefine_pairs(result: SRefineResult, *, a_round: int = 1) -> pd.DataFrame:
    """INIT vs output pairs for a pairwise judge: one row per item (item, topics, question, answer_a,
    answer_b, model_a, model_b, round_b, status).

    ``answer_a`` is the MCQ of round ``a_round`` (the GPT-4-style INIT baseline of the paper),
    ``answer_b`` the item's best round (the MCQG-SRefine output). ``status`` is ``pair``, or
    ``best_is_round_<a>`` (nothing to compare: the output is the baseline) or ``no_best`` (no scored
    round); only ``pair`` rows go to the judge, the others stay so that they are counted.

    Parameters
    ----------
    result : SRefineResult
        The output of :func:`run_srefine`.
    a_round : int, default 1
        The baseline round.

    Returns
    -------
    DataFrame
        One row per item: ``item, topics, question, answer_a, answer_b, model_a, model_b, round_b, status``.
    """
    g = result.generations
    rows = []
    for i, d in g.groupby("item", sort=False):
        a = d[d["round"] == a_round]
        b = d[d["best"]]
        status = ("no_best" if b.empty or a.empty else f"best_is_round_{a_round}"
                  if int(b["round"].iloc[0]) == a_round else "pair")
        rows.append({
            "item": i, "topics": d["topics"].iloc[0] if "topics" in d else "human",
            "question": (f"Write a USMLE-style multiple-choice question about this case. Topic: {d['topic'].iloc[0]}. "
                         f"Test point: {d['keypoint'].iloc[0]}. Case: {truncate(d['clinical_note'].iloc[0], 600)}"),
            "answer_a": a["text"].iloc[0] if len(a) else None, "answer_b": b["text"].iloc[0] if len(b) else None,
            "model_a": f"round_{a_round}", "model_b": "best_round",
            "round_b": int(b["round"].iloc[0]) if len(b) else np.nan, "status": status})
    return pd.DataFrame(rows)


def srefine_preferences(pairs: pd.DataFrame, resolved: pd.DataFrame) -> pd.DataFrame:
    """The judge's preference per item (``A`` = baseline round, ``B`` = best round, ``tie``) from
    :func:`medeval_kit.pairwise.resolve_orders` output.

    Parameters
    ----------
    pairs : DataFrame
        The pairs of :func:`srefine_pairs`.
    resolved : DataFrame
        Resolved verdicts (``item, verdict, resolution``).

    Returns
    -------
    DataFrame
        One row per item: ``item, topics, round_b, preference, status, resolution``; items without a
        preference keep their row with ``preference`` NA and the reason in ``status``
        (``best_is_round_1``, ``inconsistent``, ``failed`` ...).
    """
    r = resolved.drop_duplicates("item").set_index("item")
    out = pairs[["item", "topics", "round_b", "status"]].copy()
    verdict = out["item"].map(r["verdict"]) if "verdict" in r else pd.Series(np.nan, index=out.index)
    resolution = out["item"].map(r["resolution"]) if "resolution" in r else pd.Series(np.nan, index=out.index)
    out["preference"] = verdict.where(out["status"] == "pair")
    judged = out["status"] == "pair"
    out.loc[judged, "status"] = np.where(out.loc[judged, "preference"].notna(), "ok",
                                         resolution[judged].map({"dropped": "inconsistent"}).fillna("failed"))
    out["resolution"] = resolution
    return out[["item", "topics", "round_b", "preference", "status", "resolution"]]


def stop_rule_comparison(results: Mapping[tuple[str, str], SRefineResult]) -> pd.DataFrame:
    """Per (topics, stop rule) run: share of items that used every allowed round (Figure 7: 78.9% /
    80.4% under the released code's rule), share stopped by the rule, mean rounds run and share whose
    best round is round 1 (Figure 6), each with n and a CI (Wilson for shares, t for the mean).

    Parameters
    ----------
    results : mapping of (str, str) to SRefineResult
        ``{(topics, stop rule): result}``.

    Returns
    -------
    DataFrame
        One row per (``topics``, ``stop_rule``, ``measure``, ``max_rounds``) with the contract columns.
    """
    from medeval_kit.stats import mean_interval, wilson_interval

    rows = []
    for (topics, rule), res in results.items():
        g = res.generations
        per = g.groupby("item").agg(n_rounds=("round", "max"), by_rule=("stop_by_rule", "any"))
        best = g[g["best"]].set_index("item")["round"].reindex(per.index)
        n, mx = len(per), int(res.params.get("max_rounds", per["n_rounds"].max()))
        base = dict(topics=topics, stop_rule=rule, max_rounds=mx)
        for measure, k in (("share_all_rounds", int((per["n_rounds"] == mx).sum())),
                           ("share_stopped_by_rule", int(per["by_rule"].sum())),
                           ("share_best_round_1", int((best == 1).sum()))):
            rows.append(result_row(k / n if n else np.nan, wilson_interval(k, n), "wilson", n_items=n,
                                   n_failed=int(best.isna().sum()) if measure == "share_best_round_1" else 0,
                                   measure=measure, **base))
        lo, hi, method, note = mean_interval(per["n_rounds"].to_numpy(float))
        rows.append(result_row(float(per["n_rounds"].mean()), (lo, hi), method, n_items=n, note=note,
                               measure="mean_rounds", **base))
    return result_frame(rows, keys=["topics", "stop_rule", "measure", "max_rounds"])


class SRefineJudgment(Result):
    """Output of :func:`judge_srefine`: the pairwise verdicts under two policies and the win rates.

    ``to_frame()`` is the win-rate table. Indexing with the old dict keys (``out["win_rate"]``) still
    works for one release, with a ``DeprecationWarning``.

    Parameters
    ----------
    vanilla : DataFrame
        One call per order, position-inconsistent pairs dropped (resolved, one row per judged pair).
    calibrated : DataFrame
        MEC+BPC (resolved, one row per judged pair).
    preferences : DataFrame
        :func:`srefine_preferences` of the calibrated judge: every item, with its status.
    win_rate : DataFrame
        Round 1's win rate under each ``policy``, ties half.
    """

    _KEYS = ("vanilla", "calibrated", "preferences", "win_rate")

    def __init__(self, vanilla: pd.DataFrame, calibrated: pd.DataFrame, preferences: pd.DataFrame,
                 win_rate: pd.DataFrame) -> None:
        self.vanilla, self.calibrated, self.preferences, self.win_rate = vanilla, calibrated, preferences, win_rate

    def to_frame(self) -> pd.DataFrame:
        """Return the win rates.

        Returns
        -------
        DataFrame
            One row per ``policy`` with the contract columns and ``n_dropped``.
        """
        w = self.win_rate.copy()
        for c in RESULT_COLUMNS:
            if c not in w.columns:
                w[c] = "" if c in ("ci_method", "note") else (0 if c == "n_failed" else np.nan)
        return w

    def __getitem__(self, key: str) -> pd.DataFrame:
        """Old dict access (``out["win_rate"]``), deprecated: use the attributes."""
        if key not in self._KEYS:
            raise KeyError(key)
        import warnings

        from medeval_kit.deprecation import REMOVED_IN
        warnings.warn(f"judge_srefine(...)[{key!r}] is deprecated and will be removed in {REMOVED_IN}; "
                      f"use .{key}", DeprecationWarning, stacklevel=2)
        return getattr(self, key)

    def keys(self) -> tuple[str, ...]:
        """The old dict keys (deprecated access; see :meth:`__getitem__`)."""
        return self._KEYS


@shared_docs
@legacy_keywords(judge="model")
def judge_srefine(pairs: pd.DataFrame, *, model: str | None = None, client=None, cache_mode: str = "use",
                  mec_samples: int = 3, seed: int = 0, constrained: bool = True,
                  progress: bool = False) -> SRefineJudgment:
    """Judge :func:`srefine_pairs` twice: the paper's way and calibrated.

    The paper's way: one call per order, position-inconsistent pairs dropped. Calibrated: MEC+BPC
    (Wang et al. 2023): evidence first, ``mec_samples`` scored samples per order, margins averaged.
    With no comparable pair nothing is called and the tables are empty (the preferences still list
    every item).

    Parameters
    ----------
    pairs : DataFrame
        The pairs of :func:`srefine_pairs`.
    {model}
        The judge; default ``"local/smollm2-135m"`` (``judge=`` before; deprecated).
    {client}
    cache_mode : {"use", "record", "replay"}, default "use"
        The LLM cache mode (:mod:`medeval_kit.llm`).
    mec_samples : int, default 3
        Scored samples per order of the calibrated judge.
    {seed}
    constrained : bool, default True
        Constrain replies to the JSON schema.
    progress : bool, default False
        Show a progress bar.

    Returns
    -------
    SRefineJudgment
        ``vanilla``, ``calibrated``, ``preferences`` and ``win_rate``; ``to_frame()`` is the win rates.
    """
    from medeval_kit.judge import judge_pairwise, judge_pairwise_mec
    from medeval_kit.pairwise import resolve_calibrated, resolve_orders, win_rate

    judge = model or DEFAULT_MODEL
    to_judge = pairs[pairs["status"] == "pair"]
    if to_judge.empty:
        none = pd.DataFrame(columns=["item", "verdict", "resolution"])
        return SRefineJudgment(none, none, srefine_preferences(pairs, none),
                               pd.DataFrame(columns=["policy", *RESULT_COLUMNS, "n_dropped"]))
    client = resolve_client(judge, client, cache_mode)
    kw = dict(judge=judge, client=client, seed=seed, constrained=constrained, progress=progress)
    vanilla = resolve_orders(judge_pairwise(to_judge, rubric="overall", **kw), "drop")
    calibrated = resolve_calibrated(judge_pairwise_mec(to_judge, repeats=mec_samples, **kw), "mec_bpc")
    wins = pd.concat([win_rate(vanilla, ties="half").assign(policy="one call per order, inconsistent dropped"),
                      win_rate(calibrated, ties="half").assign(policy=f"MEC+BPC, k={mec_samples}, evidence first")],
                     ignore_index=True)
    return SRefineJudgment(vanilla, calibrated, srefine_preferences(pairs, calibrated), wins)
