"""Grounded question generation (Majurski & Matuszek 2025, grounded-synth-2025): the pipeline.

Markdown -> one chunk per section -> topics per chunk -> one MCQ (A-D) or open-ended question per
(chunk, topic) -> options shuffled (seeded) -> QC judge (clarity, difficulty, groundedness, answer
correctness, explanation validity, 1-10) -> evaluation of models on the benchmark (MCQ accuracy;
open-ended graded C/I). The statistics on the results (accuracy, correlations with a human
benchmark, diversity, judge quality, letter balance) are in :mod:`medeval_kit.generate.grounded_analysis`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.generate._common import (
    DEFAULT_MODEL,
    GenerationError,
    derived_seed,
    dumps,
    resolve_client,
    run_prompt,
    shuffle_options,
    truncate,
)
from medeval_kit.stats import nested_order

__all__ = [
    "contexts_to_markdown",
    "split_markdown_sections",
    "extract_topics",
    "generate_grounded_questions",
    "qc_judge",
    "QC_CRITERIA",
    "evaluate_benchmark",
]

QC_CRITERIA = ("clarity", "difficulty", "groundedness", "answer_correctness", "explanation_validity")

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")


def split_markdown_sections(markdown: str, *, doc_id: str = "doc", min_chars: int = 1,
                            max_level: int = 6) -> pd.DataFrame:
    """One chunk per markdown section (the paper's chunking), ignoring headings inside code fences.

    A section runs from an ATX heading of level <= ``max_level`` to the next such heading; text
    before the first heading is a section titled ``""``. Sections whose body is shorter than
    ``min_chars`` are dropped and counted in the ``n_dropped`` column (the same on every row of the
    document).

    Parameters
    ----------
    markdown : str
        The document.
    doc_id : str, default "doc"
        The document's id, prefixed to the chunk ids (``<doc_id>:<k>``).
    min_chars : int, default 1
        Drop sections whose body is shorter.
    max_level : int, default 6
        The deepest heading level that starts a section.

    Returns
    -------
    DataFrame
        ``doc_id, chunk_id, section_title, level`` (the heading level), ``path`` (titles of the
        enclosing headings joined by " > "), ``text, n_chars, n_dropped``.

    Examples
    --------
    >>> split_markdown_sections("# A\\nx\\n## B\\ny")[["section_title", "text"]].values.tolist()
    [['A', 'x'], ['B', 'y']]
    """
    rows, stack = [], []
    title, level, buf, fence = "", 0, [], False

    def flush():
        body = "\n".join(buf).strip()
        rows.append({"section_title": title, "level": level,
                     "path": " > ".join(t for _, t in stack) if stack else title, "text": body})

    for line in str(markdown).splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        m = None if fence else _HEADING.match(line)
        if m and len(m.group(1)) <= max_level:
            flush()
            level, title, buf = len(m.group(1)), m.group(2).strip(), []
            stack = [(lv, t) for lv, t in stack if lv < level] + [(level, title)]
            continue
        buf.append(line)
    flush()
    df = pd.DataFrame(rows)
    keep = df["text"].str.len() >= max(1, int(min_chars))
    n_dropped = int((~keep).sum())
    df = df[keep].reset_index(drop=True)
    df.insert(0, "chunk_id", [f"{doc_id}:{i}" for i in range(len(df))])
    df.insert(0, "doc_id", doc_id)
    df["n_chars"] = df["text"].str.len()
    df["n_dropped"] = n_dropped
    return df


# --------------------------------------------------------------------------- generation
@shared_docs
@takes_columns("text", "chunk_id")
def extract_topics(chunks: pd.DataFrame, *, model: str | None = None, client=None,
                   cache_mode: str = "use", max_topics: int = 3, seed: int = 0, temperature: float = 0.0,
                   max_tokens: int = 200, constrained: bool = True, max_chunk_chars: int | None = 3000,
                   progress: bool = False, columns: Columns = None) -> pd.DataFrame:
    """List exam-worthy topics per chunk (same LM as the question generator, as in the paper).

    Parameters
    ----------
    chunks : DataFrame
        ``chunk_id`` and ``text``, one row per chunk (:func:`split_markdown_sections`).
    {model}
        Default ``"local/smollm2-135m"``.
    {client}
    cache_mode : {"use", "record", "replay"}, default "use"
        The LLM cache mode (:mod:`medeval_kit.llm`).
    max_topics : int, default 3
        The most topics per chunk.
    {seed}
    temperature : float, default 0.0
        Sampling temperature.
    max_tokens : int, default 200
        Token limit of a reply.
    constrained : bool, default True
        Constrain replies to the JSON schema (grammar with the local model, structured output with APIs);
        ``False`` parses free text against the same schema, so failures are counted.
    max_chunk_chars : int or None, default 3000
        Chunks are cut to this many characters in the prompt; ``None`` keeps them whole.
    progress : bool, default False
        Show a progress bar.
    {columns}

    Returns
    -------
    DataFrame
        One row per (chunk, topic): the chunk's columns, ``topic_id``, ``topic``, ``n_duplicates``
        (duplicate topics removed within the chunk), provenance and ``raw``; a chunk whose reply cannot
        be parsed keeps one row with ``topic`` NA and ``parse_status`` failed/missing (never dropped).
    """
    from medeval_kit.prompts import load_prompt

    model = model or DEFAULT_MODEL
    text, chunk_id = "text", "chunk_id"

    p = load_prompt("generate/grounded_topics")
    client = resolve_client(model, client, cache_mode)
    schema = {"type": "object", "properties": {"topics": {"type": "array", "items": {"type": "string", "maxLength": 150},
                                                          "minItems": 1, "maxItems": int(max_topics)}},
              "required": ["topics"]}
    recs = run_prompt(client, p, [{"context": truncate(t, max_chunk_chars), "max_topics": max_topics}
                                  for t in chunks[text]], model=model, temperature=temperature,
                      max_tokens=max_tokens, seed=seed, constrained=constrained, schema=schema,
                      metadata=[{"chunk_id": c} for c in chunks[chunk_id]], progress=progress, desc="topics")
    rows = []
    for (_, ch), rec in zip(chunks.iterrows(), recs):
        base = {k: ch[k] for k in chunks.columns}
        prov = {k: rec[k] for k in ("parse_status", "prompt", "prompt_version", "model", "seed", "cached")}
        topics = rec["parsed"]["topics"] if rec["parse_status"] == "ok" and rec["parsed"] else None
        if not topics:
            rows.append({**base, "topic_id": f"{ch[chunk_id]}:t0", "topic": None, "n_duplicates": 0, **prov,
                         "raw": rec["text"]})
            continue
        seen, dups = [], 0
        for t in topics:
            t = " ".join(str(t).split())
            if not t or t.lower() in {s.lower() for s in seen}:
                dups += 1
                continue
            seen.append(t)
        for j, t in enumerate(seen):
            rows.append({**base, "topic_id": f"{ch[chunk_id]}:t{j}", "topic": t, "n_duplicates": dups, **prov,
                         "raw": rec["text"]})
    return pd.DataFrame(rows)


def _mcq_schema() -> dict:
    return {"type": "object", "properties": {
        "question": {"type": "string", "maxLength": 200},
        **{L: {"type": "string", "maxLength": 60} for L in "ABCD"},
        "explanation": {"type": "string", "maxLength": 120},
        "answer": {"type": "string", "enum": list("ABCD")}},
        "required": ["question", "A", "B", "C", "D", "explanation", "answer"]}


def _oe_schema() -> dict:
    return {"type": "object", "properties": {
        "question": {"type": "string", "maxLength": 200}, "explanation": {"type": "string", "maxLength": 120},
        "answer": {"type": "string", "maxLength": 80}},
        "required": ["question", "explanation", "answer"]}


def _checked_mcq(q: dict, valid: bool, reason: str) -> tuple[bool, str]:
    """(valid, reason) after the structural check of a parsed MCQ: four non-empty, distinct options."""
    if not valid:
        return valid, reason
    clean = [" ".join(str(q.get(L)).split()) if q.get(L) is not None else "" for L in "ABCD"]
    if any(not o for o in clean):
        return False, "empty option"
    if len({o.lower() for o in clean}) < 4:
        return False, "duplicate options"
    return True, reason


def _mcq_fields(q: dict, item: str, valid: bool, *, shuffle: bool, seed: int) -> dict:
    """``choices``, ``answer`` and ``shuffle_order`` of a generated MCQ; the options shuffled with a seeded RNG
    (``shuffle_order``: the generated position of each new letter); all None when the MCQ is invalid."""
    if not valid:
        return {"choices": None, "answer": None, "shuffle_order": None}
    opts = [q.get(L) for L in "ABCD"]
    gen_letter = q.get("answer")
    if not shuffle:
        return {"choices": dict(zip("ABCD", opts)), "answer": gen_letter, "shuffle_order": dumps([0, 1, 2, 3])}
    k = "ABCD".index(gen_letter)
    sh = shuffle_options(opts[k], [opts[j] for j in range(4) if j != k], seed=derived_seed(seed, item))
    # map back to generated positions: source 0 = correct (position k), 1.. = others in order
    src_pos = [k] + [j for j in range(4) if j != k]
    return {"choices": sh["options"], "answer": sh["answer_letter"],
            "shuffle_order": dumps([src_pos[s] for s in sh["shuffle_order"]])}


def _question_row(r: pd.Series, rec: dict, *, fmt: str, model: str, seed: int, dataset: str,
                  shuffle: bool) -> dict:
    """The items row of one generated question, with its validity and provenance."""
    item = f"{r['topic_id']}:{fmt}"
    q = rec["parsed"] if rec["parse_status"] == "ok" and isinstance(rec["parsed"], dict) else {}
    row = {"item": item, "dataset": dataset, "format": fmt, "doc_id": r.get("doc_id"), "chunk_id": r["chunk_id"],
           "topic_id": r["topic_id"], "topic": r["topic"], "context": r["text"],
           "question": q.get("question"), "explanation": q.get("explanation"),
           "generator": model, "prompt": rec["prompt"], "prompt_version": rec["prompt_version"],
           "seed": int(seed), "parse_status": rec["parse_status"], "raw": rec["text"], "cached": rec["cached"]}
    valid, reason = rec["parse_status"] == "ok", "" if rec["parse_status"] == "ok" else rec["parse_status"]
    if fmt == "mcq":
        row["generated_letter"] = q.get("answer")
        valid, reason = _checked_mcq(q, valid, reason)
        row.update(_mcq_fields(q, item, valid, shuffle=shuffle, seed=seed))
    else:
        row["answer"] = q.get("answer")
        if valid and not str(row["answer"] or "").strip():
            valid, reason = False, "empty answer"
    row["valid"], row["invalid_reason"] = valid, reason
    return row


@shared_docs
def generate_grounded_questions(topics: pd.DataFrame, *, fmt: str = "mcq", model: str | None = None,
                                client=None, cache_mode: str = "use", seed: int = 0, temperature: float = 0.0,
                                max_tokens: int = 300, constrained: bool = True, shuffle: bool = True,
                                max_chunk_chars: int | None = 3000, dataset: str | None = None,
                                progress: bool = False) -> pd.DataFrame:
    """One question per (chunk, topic) row of ``topics``; rows with NA topic (a failed topic call,
    counted in ``topics``) get no question.

    MCQ: the model writes A-D, an explanation and the correct letter; the raw letter is kept as
    ``generated_letter`` (position-bias audit), then the options are shuffled with a seeded RNG
    (``shuffle_order``: the generated position of each new letter) and ``answer`` is the new
    letter. Structural validity (four distinct non-empty options) is checked; failures stay with
    ``valid=False`` and a ``invalid_reason``.

    Parameters
    ----------
    topics : DataFrame
        The table of :func:`extract_topics` (``topic_id, topic, chunk_id, text``).
    fmt : {"mcq", "oe"}, default "mcq"
        Multiple choice (A-D) or open-ended.
    {model}
        Default ``"local/smollm2-135m"``.
    {client}
    cache_mode : {"use", "record", "replay"}, default "use"
        The LLM cache mode (:mod:`medeval_kit.llm`).
    {seed}
    temperature : float, default 0.0
        Sampling temperature.
    max_tokens : int, default 300
        Token limit of a reply.
    constrained : bool, default True
        Constrain replies to the JSON schema (grammar with the local model, structured output with APIs);
        ``False`` parses free text against the same schema, so failures are counted.
    shuffle : bool, default True
        Shuffle the MCQ options (seeded per item).
    max_chunk_chars : int or None, default 3000
        Chunks are cut to this many characters in the prompt; ``None`` keeps them whole.
    dataset : str, optional
        The value of the ``dataset`` column; default ``"grounded_generated"``.
    progress : bool, default False
        Show a progress bar.

    Returns
    -------
    DataFrame
        An ``items``-shaped table with provenance (``generator`` = the model), ``valid`` and
        ``invalid_reason``.

    Raises
    ------
    GenerationError
        An unknown ``fmt``.
    """
    from medeval_kit.prompts import load_prompt

    model = model or DEFAULT_MODEL
    dataset = dataset or "grounded_generated"

    if fmt not in ("mcq", "oe"):
        raise GenerationError(f"fmt must be 'mcq' or 'oe'; not {fmt!r}")
    p = load_prompt(f"generate/grounded_{fmt}")
    client = resolve_client(model, client, cache_mode)
    todo = topics[topics["topic"].notna()].reset_index(drop=True)
    recs = run_prompt(client, p, [{"context": truncate(r["text"], max_chunk_chars), "topic": r["topic"]}
                                  for _, r in todo.iterrows()],
                      model=model, temperature=temperature, max_tokens=max_tokens, seed=seed,
                      constrained=constrained, schema=_mcq_schema() if fmt == "mcq" else _oe_schema(),
                      metadata=[{"topic_id": t} for t in todo["topic_id"]], progress=progress, desc=f"questions {fmt}")
    return pd.DataFrame([_question_row(r, rec, fmt=fmt, model=model, seed=seed, dataset=dataset, shuffle=shuffle)
                         for (_, r), rec in zip(todo.iterrows(), recs)])


@shared_docs
def qc_judge(items: pd.DataFrame, *, model: str | None = None, client=None, cache_mode: str = "use",
             seed: int = 0, temperature: float = 0.0, max_tokens: int = 120, constrained: bool = True,
             max_chunk_chars: int | None = 3000, progress: bool = False) -> pd.DataFrame:
    """Score each question 1-10 on :data:`QC_CRITERIA` in one call; return a ``judgments`` table.

    The paper uses two prompts (I.4 correctness/validity, I.5 clarity/difficulty/groundedness);
    this asks for all five at once to halve the calls (a documented deviation).

    Parameters
    ----------
    items : DataFrame
        Generated items (:func:`generate_grounded_questions`): ``item, context, question, answer,
        explanation`` and, for MCQs, ``choices``.
    {model}
        The judge; default ``"local/smollm2-135m"``.
    {client}
    cache_mode : {"use", "record", "replay"}, default "use"
        The LLM cache mode (:mod:`medeval_kit.llm`).
    {seed}
    temperature : float, default 0.0
        Sampling temperature.
    max_tokens : int, default 120
        Token limit of a reply.
    constrained : bool, default True
        Constrain replies to the JSON schema (grammar with the local model, structured output with APIs);
        ``False`` parses free text against the same schema, so failures are counted.
    max_chunk_chars : int or None, default 3000
        Contexts are cut to this many characters in the prompt; ``None`` keeps them whole.
    progress : bool, default False
        Show a progress bar.

    Returns
    -------
    DataFrame
        A ``judgments`` table: five rows per item (one per criterion, ``protocol="rubric"``); an
        unparseable reply gives five rows with ``score`` NA and ``parse_status`` failed/missing.
    """
    from medeval_kit.prompts import load_prompt

    model = model or DEFAULT_MODEL

    p = load_prompt("generate/grounded_qc")
    client = resolve_client(model, client, cache_mode)
    vs = []
    for _, r in items.iterrows():
        ans = r.get("answer")
        if isinstance(r.get("choices"), dict) and ans in r["choices"]:
            ans = f"{ans}. {r['choices'][ans]}"
        vs.append({"context": truncate(r["context"], max_chunk_chars), "question": r.get("question") or "",
                   "answer": ans or "", "explanation": r.get("explanation") or ""})
    recs = run_prompt(client, p, vs, model=model, temperature=temperature, max_tokens=max_tokens, seed=seed,
                      constrained=constrained, metadata=[{"item": i} for i in items["item"]],
                      progress=progress, desc="QC judge")
    rows = []
    for it, rec in zip(items["item"], recs):
        ok = rec["parse_status"] == "ok" and isinstance(rec["parsed"], dict)
        for c in QC_CRITERIA:
            s = rec["parsed"].get(c) if ok else None
            good = s is not None and 1 <= float(s) <= 10
            rows.append({"item": str(it), "judge": model, "protocol": "rubric", "criterion": c, "order": "single",
                         "repeat": 0, "raw": rec["text"], "score": float(s) if good else np.nan,
                         "parse_status": "ok" if good else (rec["parse_status"] if rec["parse_status"] != "ok" else "failed"),
                         "prompt": rec["prompt"], "prompt_version": rec["prompt_version"], "seed": int(seed)})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- evaluation
_ANSWER_MCQ_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "enum": list("ABCD")}},
                      "required": ["answer"]}
_ANSWER_OE_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 80}},
                     "required": ["answer"]}
_GRADE_SCHEMA = {"type": "object", "properties": {"grade": {"type": "string", "enum": ["C", "I"]}},
                 "required": ["grade"]}


def _parsed_field(rec: dict | None, key: str):
    """``rec["parsed"][key]`` of a parsed reply, else None."""
    return rec["parsed"].get(key) if rec and rec["parse_status"] == "ok" and rec["parsed"] else None


def _evaluate_mcq(mcq: pd.DataFrame, m: str, cl, *, seed: int, constrained: bool, progress: bool) -> list[dict]:
    """Responses of model ``m`` to the MCQs, the options re-shuffled per (item, model)."""
    from medeval_kit.prompts import load_prompt

    p = load_prompt("generate/grounded_answer_mcq")
    shuffled = []
    for _, r in mcq.iterrows():
        ch = r["choices"]
        others = [v for k, v in ch.items() if k != r["answer"]]
        shuffled.append(shuffle_options(ch[r["answer"]], others, seed=derived_seed(seed, r["item"], m, "eval")))
    recs = run_prompt(cl, p, [{"question": r["question"],
                               "options": "\n".join(f"{k}. {v}" for k, v in s["options"].items())}
                              for (_, r), s in zip(mcq.iterrows(), shuffled)],
                      model=m, max_tokens=20, seed=seed, constrained=constrained, schema=_ANSWER_MCQ_SCHEMA,
                      metadata=[{"item": i} for i in mcq["item"]], progress=progress, desc=f"eval mcq {m}")
    out = []
    for (_, r), s, rec in zip(mcq.iterrows(), shuffled, recs):
        got = _parsed_field(rec, "answer")
        out.append({"item": r["item"], "model": m, "repeat": 0, "text": rec["text"], "format": "mcq",
                    "extracted": got, "key": s["answer_letter"], "shuffle_order": dumps(s["shuffle_order"]),
                    "correct": (got == s["answer_letter"]) if got is not None else pd.NA,
                    "parse_status": rec["parse_status"], "grader": None, "prompt": rec["prompt"],
                    "prompt_version": rec["prompt_version"], "seed": int(seed), "cached": rec["cached"]})
    return out


def _evaluate_oe(oe: pd.DataFrame, m: str, cl, g_model: str, gcl, *, seed: int, max_tokens: int,
                 constrained: bool, progress: bool) -> list[dict]:
    """Responses of model ``m`` to the open-ended questions, graded C/I by ``g_model`` (unanswered: not graded)."""
    from medeval_kit.prompts import load_prompt

    recs = run_prompt(cl, load_prompt("generate/grounded_answer_oe"), [{"question": q} for q in oe["question"]],
                      model=m, max_tokens=max_tokens, seed=seed, constrained=constrained, schema=_ANSWER_OE_SCHEMA,
                      metadata=[{"item": i} for i in oe["item"]], progress=progress, desc=f"eval oe {m}")
    answers = [_parsed_field(rec, "answer") for rec in recs]
    need = [k for k, a in enumerate(answers) if a is not None]
    grecs = run_prompt(gcl, load_prompt("generate/grounded_grade_oe"),
                       [{"question": oe["question"].iloc[k], "expert_answer": oe["answer"].iloc[k],
                         "submission": answers[k]} for k in need],
                       model=g_model, max_tokens=10, seed=seed, constrained=constrained, schema=_GRADE_SCHEMA,
                       metadata=[{"item": oe["item"].iloc[k]} for k in need], progress=progress,
                       desc=f"grade oe {m}")
    gmap = dict(zip(need, grecs))
    out = []
    for k, ((_, r), rec) in enumerate(zip(oe.iterrows(), recs)):
        g = gmap.get(k)
        grade = _parsed_field(g, "grade")
        out.append({"item": r["item"], "model": m, "repeat": 0, "text": rec["text"], "format": "oe",
                    "extracted": answers[k], "key": r["answer"], "shuffle_order": None,
                    "correct": (grade == "C") if grade else pd.NA,
                    "parse_status": rec["parse_status"] if g is None else g["parse_status"],
                    "grader": g_model, "prompt": rec["prompt"], "prompt_version": rec["prompt_version"],
                    "seed": int(seed), "cached": rec["cached"]})
    return out


def evaluate_benchmark(items: pd.DataFrame, models: Sequence[str], *, client=None, clients: dict | None = None,
                       grader: str | None = None, cache_mode: str = "use", seed: int = 0, max_tokens: int = 200,
                       constrained: bool = True, progress: bool = False) -> pd.DataFrame:
    """Evaluate ``models`` on generated items; return a ``responses`` table with ``correct``.

    MCQ: options are re-shuffled per (item, model) like Inspect's ``shuffle_choices`` and the
    model replies with a letter; correct = the letter of the keyed option. OE: the model answers
    and the ``grader`` (default: the first model) grades C/I against the expert answer (no
    partial credit). Items with ``valid`` False are not evaluated (count them in ``items``);
    unparseable replies give ``correct`` NA with their parse status.

    Parameters
    ----------
    items : DataFrame
        Generated items (:func:`generate_grounded_questions`) with ``format`` and ``valid``.
    models : sequence of str
        The models evaluated (``provider/name``).
    client : Client, optional
        One client for every model; default one per model (:func:`medeval_kit.llm.get_client`).
    clients : dict of str to Client, optional
        A client per model name (wins over ``client``).
    grader : str, optional
        The model grading open-ended answers; default the first of ``models``.
    cache_mode : {"use", "record", "replay"}, default "use"
        The LLM cache mode (:mod:`medeval_kit.llm`).
    seed : int, default 0
        Random seed of the calls and of the option shuffles.
    max_tokens : int, default 200
        Token limit of an open-ended answer.
    constrained : bool, default True
        Constrain replies to the JSON schema (grammar with the local model, structured output with APIs);
        ``False`` parses free text against the same schema, so failures are counted.
    progress : bool, default False
        Show a progress bar.

    Returns
    -------
    DataFrame
        A ``responses`` table, one row per (item, model), with ``correct`` (NA when unparseable).
    """
    valid = items[items.get("valid", pd.Series(True, index=items.index)).astype(bool)]
    mcq, oe = valid[valid["format"] == "mcq"], valid[valid["format"] == "oe"]
    clients = dict(clients or {})
    out = []
    for m in models:
        cl = clients.get(m) or resolve_client(m, client, cache_mode)
        if len(mcq):
            out += _evaluate_mcq(mcq, m, cl, seed=seed, constrained=constrained, progress=progress)
        if len(oe):
            g_model = grader or models[0]
            gcl = clients.get(g_model) or resolve_client(g_model, client, cache_mode)
            out += _evaluate_oe(oe, m, cl, g_model, gcl, seed=seed, max_tokens=max_tokens,
                                constrained=constrained, progress=progress)
    return pd.DataFrame(out)


@shared_docs
@takes_columns("context")
def contexts_to_markdown(items: pd.DataFrame, *, n: int = 2, seed: int = 0, title: str = "Grounding document",
                         columns: Columns = None) -> str:
    """Build a small markdown document (one ``##`` section per context) from ``n`` distinct contexts.

    E.g. the bundled PubMedQA abstracts, to run the grounded pipeline offline.

    Parameters
    ----------
    items : DataFrame
        A ``context`` column.
    n : int, default 2
        Distinct contexts to use, in a seeded order (a smaller ``n`` gives a prefix of a larger one).
    {seed}
    title : str, default "Grounding document"
        The document's ``#`` title.
    {columns}

    Returns
    -------
    str
        The markdown document.

    Examples
    --------
    >>> import pandas as pd
    >>> print(contexts_to_markdown(pd.DataFrame({"context": ["Aspirin."]}), n=1))
    # Grounding document
    <BLANKLINE>
    ## Section 1
    <BLANKLINE>
    Aspirin.
    <BLANKLINE>
    """
    context = "context"
    ctx = items.drop_duplicates(subset=[context]).reset_index(drop=True)
    pick = ctx.iloc[nested_order(len(ctx), seed)[: int(n)]]  # nested: a smaller n is a prefix
    parts = [f"# {title}", ""]
    for k, (_, r) in enumerate(pick.iterrows(), start=1):
        parts += [f"## Section {k}", "", str(r[context]).strip(), ""]
    return "\n".join(parts)

