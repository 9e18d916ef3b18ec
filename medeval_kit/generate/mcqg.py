"""MCQG-SRefine (seed 000): INIT -> self-answer -> critique -> correction, round by round.

Input: a DataFrame of (clinical note, topic, test point) triplets. For each round and item:

1. round 1 (INIT): context -> question -> correct answer -> distractors, four calls, each with
   few-shot examples from a local :class:`~medeval_kit.retrieve.Retriever` (ColBERT stand-in);
   rounds >= 2: one correction call fed with the previous round's critique;
2. self-answer: the options (answer + distractors) are shuffled with a seeded RNG and lettered;
   the model answers with step-by-step reasoning;
3. critique: one call per rubric component (5), every aspect scored 1-5; the reasoning
   ``correctness`` aspect is computed (attempted letter == keyed letter), as in the public code;
4. stop check with :func:`medeval_kit.rounds.should_stop` (rule ``total`` = paper, mean of the
   normalised components > threshold; ``all_components`` = public code, every component >=
   threshold) or ``max_rounds``; the output round is chosen by
   :func:`medeval_kit.rounds.select_best_round` with a stated tie-break.

Every round of every item lands in the ``rounds`` table (one row per component aspect plus a
``total`` row per component), with its text, flags, provenance and parse status; a critique
that cannot be parsed gives NaN scores and ``parse_status="failed"``, never a dropped row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from medeval_kit.generate._common import (
    GenerationError, derived_seed, dumps, resolve_client, run_prompt, shuffle_options, truncate,
)

__all__ = [
    "round_summary", "plot_rounds",
    "SRefineResult",
    "run_srefine",
    "load_srefine_inputs",
    "build_fewshot_bank",
    "format_mcq",
    "critique_schema",
    "STOP_RULES",
    "COMPUTED_ASPECTS",
]

STOP_RULES = ("total", "all_components")
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


def load_srefine_inputs(which: str = "1-35", n: int | None = None, *, seed: int = 0,
                        root=None) -> pd.DataFrame:
    """Return the bundled human (clinical note, topic, keypoint) triplets as a DataFrame.

    ``which`` is ``"1-35"`` (JSON lines), ``"36-47"`` (one JSON array) or ``"both"``. Columns:
    item (``srefine-<which>-<row>``), case (one id per distinct note), clinical_note, topic,
    keypoint. ``n`` keeps the first ``n`` rows after a seeded shuffle that keeps one triplet per
    note first (so a small ``n`` covers different cases).
    """
    from medeval_kit.datasets import data_dir, read_json, read_jsonl

    base = data_dir() / "medqg" / "inputs" if root is None else root
    frames = []
    for part in (["1-35", "36-47"] if which == "both" else [which]):
        p = base / f"human_cn_t_kp_{part}.jsonl"
        recs = read_jsonl(p) if part == "1-35" else read_json(p)
        if not isinstance(recs, list):
            raise GenerationError(f"{p}: expected a list of records")
        df = pd.DataFrame(recs)
        missing = {"clinical_note", "topic", "keypoint"} - set(df.columns)
        if missing:
            raise GenerationError(f"{p}: missing field(s) {sorted(missing)}")
        df.insert(0, "item", [f"srefine-{part}-{i}" for i in range(len(df))])
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    df.insert(1, "case", pd.factorize(df["clinical_note"])[0].astype(str))
    df["case"] = "case-" + df["case"]
    if n is not None:
        rng = np.random.default_rng(seed)
        df = df.iloc[rng.permutation(len(df))]
        df["_dup"] = df.groupby("case").cumcount()
        df = df.sort_values("_dup", kind="stable").drop(columns="_dup").head(int(n)).reset_index(drop=True)
    return df


def build_fewshot_bank(*, method: str = "bm25"):
    """Return a fitted :class:`~medeval_kit.retrieve.Retriever` over the bundled MedQG USMLE MCQs.

    The bank (758 GPT-4 questions from MedQG's public repo) stands in for MedQA; each example
    row has context, question, answer_text, options and the source clinical note (``note``) so
    that examples built from the same note can be excluded.
    """
    from medeval_kit.datasets import load_medqg_questions
    from medeval_kit.retrieve import Retriever

    items = load_medqg_questions("both").items.copy()
    items["note"] = items["context"]
    items["stem"] = items["question"]
    return Retriever(method=method).fit(items, text=["stem", "topic", "keypoint"], id="note")


def _examples(retriever, query: str, note: str, k: int, fields: Sequence[str], max_chars: int) -> str:
    if retriever is None or k <= 0:
        return "(none)"
    hits = retriever.query(query, k=k, exclude=[note])
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
    """Plain-text rendering of an MCQ (used in critique/correction prompts and the rounds table)."""
    lines = [f"Context: {context}", f"Question: {question}", "Options:"]
    lines += [f"{k}. {v}" for k, v in options.items()]
    if answer_letter:
        lines.append(f"Correct answer: {answer_letter}")
    return "\n".join(lines)


def critique_schema(aspects: Sequence[str], *, max_feedback_chars: int = 100) -> dict:
    """JSON schema of one component critique: an integer 1-5 per aspect, then ``feedback`` text.

    Scores come first and the feedback is length-capped so that a grammar-constrained reply
    always completes within a small ``max_tokens`` (an unbounded string can be cut off).
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
class SRefineResult:
    """Output of :func:`run_srefine`.

    ``rounds``: the schema ``rounds`` table plus provenance (text, feedback, parse_status ...).
    ``generations``: one row per (item, round): the MCQ, options, shuffle order, self-answer,
    component scores, total, stop/best flags. ``calls``: one row per LLM call. ``params``: the
    settings (stop rule, threshold, tie-break, max_rounds, model, seed ...).
    """

    rounds: pd.DataFrame
    generations: pd.DataFrame
    calls: pd.DataFrame
    params: dict = field(default_factory=dict)

    def best(self) -> pd.DataFrame:
        """The selected output MCQ of every item (``best`` rows of ``generations``)."""
        return self.generations[self.generations["best"]].reset_index(drop=True)

    def to_frame(self) -> pd.DataFrame:
        """One summary row: n_items, rounds, calls, parse failures, QA accuracy, stop counts."""
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
            "model": self.params.get("model"),
        }])

    def summary(self) -> str:
        r = self.to_frame().iloc[0]
        return (f"MCQG-SRefine: {r.n_items} items, {r.n_rounds_run} item-rounds (mean {r.mean_rounds:.2f} rounds), "
                f"{r.n_calls} calls ({r.n_cached} cached), {r.n_failed} parse failures, {r.n_missing} missing; "
                f"stop rule {r.stop_rule!r} (threshold {r.threshold}), {r.n_stopped_by_rule} stopped by rule; "
                f"best round by total, tie-break {r.tie_break!r}")


def _rounds_api():
    try:
        from medeval_kit import rounds as R
    except ImportError as exc:  # pragma: no cover - depends on the rounds engineer's module
        raise GenerationError(
            "medeval_kit.rounds (should_stop, select_best_round) is not available yet; "
            "the SRefine loop delegates its stopping rules and best-round selection to it"
        ) from exc
    return R


def run_srefine(
    inputs: pd.DataFrame,
    *,
    model: str = "local/smollm2-135m",
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
    item: str = "item",
    note: str = "clinical_note",
    topic: str = "topic",
    keypoint: str = "keypoint",
    source: str = "human",
    progress: bool = False,
) -> SRefineResult:
    """Run MCQG-SRefine on ``inputs`` (one row per triplet); all items advance stage by stage.

    Args:
        model, client, cache_mode: the LLM (``client`` = any object with ``.run(requests)``).
        retriever: few-shot retriever (default: :func:`build_fewshot_bank`); ``k_shots=0`` = none.
        rubric: rubric name or :class:`~medeval_kit.prompts.Rubric` (5 components, 30 aspects).
        max_rounds: at most this many rounds (round 1 = INIT; paper and code: 4).
        stop_rule, threshold: passed to ``rounds.should_stop``: ``"total"`` (paper) or
            ``"all_components"`` (public code).
        tie_break: passed to ``rounds.select_best_round`` (e.g. ``"earliest"``, ``"latest"``).
        constrained: JSON schema in the request (grammar with the local model) vs free text
            parsed afterwards (failures counted).
        max_note_chars, max_example_chars: truncation so prompts fit small context windows.
        source: who wrote the topic/test point (``"human"`` or ``"machine"``), kept per row.
        correctness_wrong_score: score of the computed reasoning ``correctness`` aspect when the
            self-answer is wrong (default: the aspect's minimum; the public code uses 0).
    """
    from medeval_kit.prompts import Rubric, load_prompt, load_rubric

    if stop_rule not in STOP_RULES:
        raise GenerationError(f"stop_rule must be one of {STOP_RULES}; not {stop_rule!r}")
    if int(max_rounds) < 1:
        raise GenerationError(f"max_rounds must be >= 1, got {max_rounds}")
    for col in (item, note, topic, keypoint):
        if col not in inputs.columns:
            raise GenerationError(f"inputs have no column {col!r}; present: {list(inputs.columns)}")
    if inputs[item].duplicated().any():
        raise GenerationError(f"inputs column {item!r} has duplicate ids; each triplet needs its own id")
    R = _rounds_api()
    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
    P = {k: load_prompt(v) for k, v in PROMPTS.items()}
    client = resolve_client(model, client, cache_mode)
    if retriever is None and k_shots > 0:
        retriever = build_fewshot_bank()
    kw = dict(model=model, temperature=temperature, max_tokens=max_tokens, seed=seed,
              constrained=constrained, progress=progress)

    rows = inputs.reset_index(drop=True)
    ids = rows[item].astype(str).tolist()
    notes = {i: str(n) for i, n in zip(ids, rows[note])}
    tps = {i: (str(t), str(k)) for i, t, k in zip(ids, rows[topic], rows[keypoint])}
    calls: list[dict] = []
    state: dict[str, dict] = {}

    def log(stage, round_, iid, rec):
        calls.append({"item": iid, "round": round_, "stage": stage,
                      **{k: v for k, v in rec.items() if k != "parsed"}})

    def field_of(rec, key, default=""):
        p = rec["parsed"]
        if isinstance(p, dict) and key in p:
            return p[key]
        return default

    # ---- round 1: INIT, component by component
    def init_stage(stage, vars_fn, key, fields):
        vs = [vars_fn(i) for i in ids]
        recs = run_prompt(client, P[stage], vs, desc=f"srefine init {stage}",
                          metadata=[{"item": i, "round": 1, "stage": stage} for i in ids], **kw)
        for i, rec in zip(ids, recs):
            log(f"init_{stage}", 1, i, rec)
            state.setdefault(i, {})[key] = field_of(rec, key, [] if key == "distractors" else "")
            state[i].setdefault("init_status", []).append(rec["parse_status"])

    def q(i, *extra):
        t, k = tps[i]
        return " ".join([t, k, *extra])

    nc = lambda i: truncate(notes[i], max_note_chars)  # noqa: E731
    init_stage("context", lambda i: {
        "examples": _examples(retriever, q(i, notes[i][:500]), notes[i], k_shots, ["context"], max_example_chars),
        "clinical_note": nc(i), "topic": tps[i][0], "keypoint": tps[i][1]}, "context", ["context"])
    init_stage("question", lambda i: {
        "examples": _examples(retriever, q(i, state[i]["context"][:500]), notes[i], k_shots, ["context"],
                              max_example_chars),
        "context": state[i]["context"], "topic": tps[i][0], "keypoint": tps[i][1]}, "question", ["question"])
    init_stage("answer", lambda i: {
        "examples": _examples(retriever, q(i, state[i]["question"]), notes[i], k_shots, ["context", "answer"],
                              max_example_chars),
        "context": state[i]["context"], "question": state[i]["question"], "topic": tps[i][0],
        "keypoint": tps[i][1]}, "correct_answer", ["answer"])
    init_stage("distractors", lambda i: {
        "examples": _examples(retriever, q(i, state[i]["question"]), notes[i], min(k_shots, 1),
                              ["context", "answer", "options"], max_example_chars),
        "context": state[i]["context"], "question": state[i]["question"],
        "correct_answer": state[i]["correct_answer"]}, "distractors", ["distractors"])

    gen_rows: list[dict] = []
    round_rows: list[dict] = []
    active = list(ids)
    comp_ids = [c.id for c in rub.components]
    for rnd in range(1, int(max_rounds) + 1):
        if rnd > 1:  # correction from the previous critique
            vs = [{"clinical_note": nc(i), "topic": tps[i][0], "keypoint": tps[i][1],
                   "mcq": state[i]["mcq_text"], "feedback": state[i]["feedback_text"]} for i in active]
            recs = run_prompt(client, P["correct"], vs, desc=f"srefine correct r{rnd}",
                              metadata=[{"item": i, "round": rnd, "stage": "correct"} for i in active], **kw)
            for i, rec in zip(active, recs):
                log("correct", rnd, i, rec)
                st = state[i]
                st["init_status"] = [rec["parse_status"]]
                if rec["parse_status"] == "ok" and isinstance(rec["parsed"], dict):
                    for key in ("context", "question", "correct_answer", "distractors"):
                        st[key] = rec["parsed"].get(key, st[key])
                # a failed correction keeps the previous round's MCQ (flagged in generation_status)
        # ---- self-answer with shuffled options
        for i in active:
            st = state[i]
            dis = st["distractors"] if isinstance(st["distractors"], list) else []
            sh = shuffle_options(st["correct_answer"], dis, seed=derived_seed(seed, i, rnd))
            st.update(sh)
            st["mcq_text"] = format_mcq(st["context"], st["question"], sh["options"], sh["answer_letter"])
        vs = [{"context": state[i]["context"], "question": state[i]["question"],
               "options": "\n".join(f"{k}. {v}" for k, v in state[i]["options"].items())} for i in active]
        recs = run_prompt(client, P["self_answer"], vs, desc=f"srefine answer r{rnd}",
                          metadata=[{"item": i, "round": rnd, "stage": "self_answer"} for i in active], **kw)
        for i, rec in zip(active, recs):
            log("self_answer", rnd, i, rec)
            st = state[i]
            st["attempted"] = field_of(rec, "answer", None)
            st["reasoning"] = field_of(rec, "reasoning", rec["text"] or "")
            st["answer_status"] = rec["parse_status"]
        # ---- critique: one call per component
        crit_vars, crit_schemas, crit_meta = [], [], []
        for i in active:
            st = state[i]
            for comp in rub.components:
                asked = [a for a in comp.aspects if (comp.id, a.id) not in COMPUTED_ASPECTS]
                crit_vars.append({
                    "component": comp.id,
                    "aspects": "\n".join(f"- {a.id}: {a.description}" for a in asked),
                    "clinical_note": nc(i), "topic": tps[i][0], "keypoint": tps[i][1], "mcq": st["mcq_text"],
                    "attempted_answer": st["attempted"] or "(no answer)", "answer_letter": st["answer_letter"],
                    "reasoning": truncate(st["reasoning"], 1200)})
                crit_schemas.append(critique_schema([a.id for a in asked]))
                crit_meta.append({"item": i, "round": rnd, "stage": f"critique_{comp.id}"})
        recs = run_prompt(client, P["critique"], crit_vars, schemas=crit_schemas, metadata=crit_meta,
                          desc=f"srefine critique r{rnd}", **kw)
        it = iter(recs)
        stop_now = []
        for i in active:
            st = state[i]
            comp_scores, fb_parts, per_round = {}, [], []
            qa_correct = (st["attempted"] is not None and st["attempted"] == st["answer_letter"])
            for comp in rub.components:
                rec = next(it)
                log(f"critique_{comp.id}", rnd, i, rec)
                scores = field_of(rec, "scores", None)
                ok = rec["parse_status"] == "ok" and isinstance(scores, dict)
                fb = field_of(rec, "feedback", "") if ok else ""
                fb_parts.append(f"[{comp.id}] {fb}")
                vals = []
                for a in comp.aspects:
                    if (comp.id, a.id) in COMPUTED_ASPECTS:
                        if st["attempted"] is None:
                            s, status = np.nan, st["answer_status"]
                        else:
                            wrong = a.min if correctness_wrong_score is None else correctness_wrong_score
                            s, status = (float(a.max) if qa_correct else float(wrong)), "computed"
                    else:
                        s = float(scores[a.id]) if ok and a.id in scores else np.nan
                        status = rec["parse_status"] if not ok else ("ok" if a.id in scores else "failed")
                    vals.append(s)
                    per_round.append({"component": comp.id, "aspect": a.id, "score": s, "max_score": float(a.max),
                                      "parse_status": status, "feedback": fb})
                tot = float(np.sum(vals)) if not np.any(np.isnan(vals)) else np.nan
                per_round.append({"component": comp.id, "aspect": "total", "score": tot,
                                  "max_score": float(comp.max_score), "parse_status": rec["parse_status"],
                                  "feedback": fb})
                comp_scores[comp.id] = tot / comp.max_score if not np.isnan(tot) else np.nan
            st["feedback_text"] = "\n".join(fb_parts)
            by_rule = bool(R.should_stop(comp_scores, stop_rule, threshold=threshold))
            stop = by_rule or rnd == int(max_rounds)
            if stop:
                stop_now.append(i)
            comp_vals = [comp_scores[c] for c in comp_ids]
            total = float(np.mean(comp_vals)) if not np.any(np.isnan(comp_vals)) else np.nan
            tp = tps[i]
            gen_rows.append({
                "item": i, "round": rnd, "clinical_note": notes[i], "topic": tp[0], "keypoint": tp[1],
                "context": st["context"], "question": st["question"], "correct_answer": st["correct_answer"],
                "distractors": dumps(st["distractors"]), "options": dumps(st["options"]),
                "answer_letter": st["answer_letter"], "shuffle_order": dumps(st["shuffle_order"]),
                "attempted_answer": st["attempted"], "reasoning": st["reasoning"], "qa_correct": bool(qa_correct),
                "text": st["mcq_text"], **{f"score_{c}": comp_scores[c] for c in comp_ids}, "total": total,
                "n_critique_failed": int(sum(np.isnan(comp_vals))),
                "generation_status": "ok" if all(s == "ok" for s in st["init_status"]) else "failed",
                "answer_status": st["answer_status"], "stop_by_rule": by_rule, "stop": stop,
                "model": model, "prompt": P["context"].name if rnd == 1 else P["correct"].name,
                "prompt_version": P["context"].version if rnd == 1 else P["correct"].version,
                "seed": int(seed), "stop_rule": stop_rule, "threshold": float(threshold),
            })
            for r_ in per_round:
                round_rows.append({"item": i, "round": rnd, **r_, "stop": stop, "best": False,
                                   "text": st["mcq_text"], "self_answer_correct": bool(qa_correct),
                                   "question_length": len(f"{st['context']} {st['question']}".split()),
                                   "note_length": len(notes[i].split()), "source": source, "model": model, "prompt": P["critique"].name,
                                   "prompt_version": P["critique"].version, "seed": int(seed),
                                   "stop_rule": stop_rule, "threshold": float(threshold)})
        active = [i for i in active if i not in set(stop_now)]
        if not active:
            break

    rounds_df = pd.DataFrame(round_rows)
    gens = pd.DataFrame(gen_rows)
    best = _best_rounds(R, rounds_df, gens, tie_break)
    gens["best"] = [best.get(i) == r for i, r in zip(gens["item"], gens["round"])]
    rounds_df["best"] = [best.get(i) == r for i, r in zip(rounds_df["item"], rounds_df["round"])]
    rounds_df["round"] = rounds_df["round"].astype(int)
    from medeval_kit.schemas import validate

    validate(rounds_df, "rounds")
    params = dict(model=model, stop_rule=stop_rule, threshold=float(threshold), tie_break=tie_break,
                  max_rounds=int(max_rounds), k_shots=int(k_shots), seed=int(seed), temperature=temperature,
                  constrained=constrained, rubric=rub.name, rubric_version=rub.version,
                  retriever=getattr(retriever, "method", None))
    return SRefineResult(rounds=rounds_df, generations=gens, calls=pd.DataFrame(calls), params=params)


def _best_rounds(R, rounds_df: pd.DataFrame, gens: pd.DataFrame, tie_break: str) -> dict:
    """Item -> selected round from ``rounds.select_best_round`` (items with no scored round: none)."""
    sel = R.select_best_round(rounds_df, tie_break=tie_break)
    return {str(k): int(v) for k, v in zip(sel["item"], sel["best_round"]) if pd.notna(v)}


def round_summary(result: SRefineResult) -> pd.DataFrame:
    """Per round: n_items (items that reached it), mean normalised score per component and total
    (available items only: later rounds are survivors of the stopping rule), QA accuracy, stops,
    best counts and critique parse failures."""
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
        rows.append(row)
    return pd.DataFrame(rows)


def plot_rounds(result: SRefineResult, ax=None):
    """Total critique score by round, one line per item; the selected round is marked."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots()
    g = result.generations
    for it, d in g.groupby("item", sort=True):
        d = d.sort_values("round")
        ax.plot(d["round"], d["total"], marker="o", lw=1, label=str(it))
        b = d[d["best"]]
        ax.scatter(b["round"], b["total"], s=80, facecolors="none", edgecolors="k", zorder=3)
    thr = result.params.get("threshold")
    if thr is not None:
        ax.axhline(thr, ls="--", lw=0.8, color="grey")
    ax.set_xlabel("round (1 = INIT)")
    ax.set_ylabel("total critique score (mean of components)")
    ax.set_xticks(sorted(g["round"].unique()))
    if g["item"].nunique() <= 8:
        ax.legend(fontsize=6, frameon=False)
    return ax
