"""Grounded question generation and its analysis (seed 004, Majurski & Matuszek 2025).

Pipeline: markdown -> one chunk per section -> topics per chunk -> one MCQ (A-D) or open-ended
question per (chunk, topic) -> options shuffled (seeded) and the correct-letter balance checked ->
QC judge (clarity, difficulty, groundedness, answer correctness, explanation validity, 1-10) ->
diversity (mean pairwise cosine; higher = LESS diverse) -> evaluation of models on the benchmark
(MCQ accuracy; open-ended graded C/I) -> Pearson and Spearman against a human benchmark.

Analysis helpers work on the bundled grounded-synth data (:func:`~medeval_kit.datasets.load_grounded_synth`,
:func:`~medeval_kit.datasets.load_mmlu_pro_replication`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from medeval_kit.generate._common import (
    LETTERS, GenerationError, derived_seed, dumps, resolve_client, run_prompt, shuffle_options, truncate,
)

__all__ = [
    "contexts_to_markdown", "plot_quality", "plot_letter_balance",
    "split_markdown_sections",
    "extract_topics",
    "generate_grounded_questions",
    "qc_judge",
    "QC_CRITERIA",
    "question_diversity",
    "evaluate_benchmark",
    "accuracy_table",
    "benchmark_correlation",
    "spearman_from_rank_differences",
    "spearman_identity_check",
    "mmlu_pro_aggregations",
    "grounded_quality_summary",
    "grounded_letter_balance",
]

QC_CRITERIA = ("clarity", "difficulty", "groundedness", "answer_correctness", "explanation_validity")

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")


# --------------------------------------------------------------------------- chunking
def split_markdown_sections(markdown: str, *, doc_id: str = "doc", min_chars: int = 1,
                            max_level: int = 6) -> pd.DataFrame:
    """One chunk per markdown section (the paper's chunking), ignoring headings inside code fences.

    A section runs from an ATX heading of level <= ``max_level`` to the next such heading; text
    before the first heading is a section titled ``""``. Sections whose body is shorter than
    ``min_chars`` are dropped and counted in ``attrs["n_dropped"]``. Columns: doc_id, chunk_id,
    section_title, level, path (titles of the enclosing headings joined by " > "), text, n_chars.

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
    df.attrs["n_dropped"] = n_dropped
    return df


# --------------------------------------------------------------------------- generation
def extract_topics(chunks: pd.DataFrame, *, model: str = "local/smollm2-135m", client=None,
                   cache_mode: str = "use", max_topics: int = 3, seed: int = 0, temperature: float = 0.0,
                   max_tokens: int = 200, constrained: bool = True, max_chunk_chars: int | None = 3000,
                   text: str = "text", chunk_id: str = "chunk_id", progress: bool = False) -> pd.DataFrame:
    """List exam-worthy topics per chunk (same LM as the question generator, as in the paper).

    Returns one row per (chunk, topic) with provenance; a chunk whose reply cannot be parsed
    keeps one row with ``topic`` NA and ``parse_status`` failed/missing (never dropped).
    Duplicate topics within a chunk are removed and counted in ``n_duplicates``.
    """
    from medeval_kit.prompts import load_prompt

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


def generate_grounded_questions(topics: pd.DataFrame, *, fmt: str = "mcq", model: str = "local/smollm2-135m",
                                client=None, cache_mode: str = "use", seed: int = 0, temperature: float = 0.0,
                                max_tokens: int = 300, constrained: bool = True, shuffle: bool = True,
                                max_chunk_chars: int | None = 3000, dataset: str = "grounded_generated",
                                progress: bool = False) -> pd.DataFrame:
    """One question per (chunk, topic) row of ``topics`` (rows with NA topic are skipped and counted).

    MCQ: the model writes A-D, an explanation and the correct letter; the raw letter is kept as
    ``generated_letter`` (position-bias audit), then the options are shuffled with a seeded RNG
    (``shuffle_order``: the generated position of each new letter) and ``answer`` is the new
    letter. Structural validity (four distinct non-empty options) is checked; failures stay with
    ``valid=False`` and a ``invalid_reason``. Returns an ``items``-shaped table with provenance.
    """
    from medeval_kit.prompts import load_prompt

    if fmt not in ("mcq", "oe"):
        raise GenerationError(f"fmt must be 'mcq' or 'oe'; not {fmt!r}")
    p = load_prompt(f"generate/grounded_{fmt}")
    client = resolve_client(model, client, cache_mode)
    todo = topics[topics["topic"].notna()].reset_index(drop=True)
    n_skipped = int(topics["topic"].isna().sum())
    recs = run_prompt(client, p, [{"context": truncate(r["text"], max_chunk_chars), "topic": r["topic"]}
                                  for _, r in todo.iterrows()],
                      model=model, temperature=temperature, max_tokens=max_tokens, seed=seed,
                      constrained=constrained, schema=_mcq_schema() if fmt == "mcq" else _oe_schema(),
                      metadata=[{"topic_id": t} for t in todo["topic_id"]], progress=progress, desc=f"questions {fmt}")
    rows = []
    for (_, r), rec in zip(todo.iterrows(), recs):
        item = f"{r['topic_id']}:{fmt}"
        q = rec["parsed"] if rec["parse_status"] == "ok" and isinstance(rec["parsed"], dict) else {}
        row = {"item": item, "dataset": dataset, "format": fmt, "doc_id": r.get("doc_id"), "chunk_id": r["chunk_id"],
               "topic_id": r["topic_id"], "topic": r["topic"], "context": r["text"],
               "question": q.get("question"), "explanation": q.get("explanation"),
               "generator": model, "prompt": rec["prompt"], "prompt_version": rec["prompt_version"],
               "seed": int(seed), "parse_status": rec["parse_status"], "raw": rec["text"], "cached": rec["cached"]}
        valid, reason = rec["parse_status"] == "ok", "" if rec["parse_status"] == "ok" else rec["parse_status"]
        if fmt == "mcq":
            opts = [q.get(L) for L in "ABCD"]
            gen_letter = q.get("answer")
            row["generated_letter"] = gen_letter
            if valid:
                clean = [" ".join(str(o).split()) if o is not None else "" for o in opts]
                if any(not o for o in clean):
                    valid, reason = False, "empty option"
                elif len({o.lower() for o in clean}) < 4:
                    valid, reason = False, "duplicate options"
            if valid:
                k = "ABCD".index(gen_letter)
                distract = [opts[j] for j in range(4) if j != k]
                if shuffle:
                    sh = shuffle_options(opts[k], distract, seed=derived_seed(seed, item))
                    # map back to generated positions: source 0 = correct (position k), 1.. = others in order
                    src_pos = [k] + [j for j in range(4) if j != k]
                    row.update(choices=sh["options"], answer=sh["answer_letter"],
                               shuffle_order=dumps([src_pos[s] for s in sh["shuffle_order"]]))
                else:
                    row.update(choices=dict(zip("ABCD", opts)), answer=gen_letter, shuffle_order=dumps([0, 1, 2, 3]))
            else:
                row.update(choices=None, answer=None, shuffle_order=None)
        else:
            row["answer"] = q.get("answer")
            if valid and not str(row["answer"] or "").strip():
                valid, reason = False, "empty answer"
        row["valid"], row["invalid_reason"] = valid, reason
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs["n_skipped_topics"] = n_skipped
    return out


def qc_judge(items: pd.DataFrame, *, model: str = "local/smollm2-135m", client=None, cache_mode: str = "use",
             seed: int = 0, temperature: float = 0.0, max_tokens: int = 120, constrained: bool = True,
             max_chunk_chars: int | None = 3000, progress: bool = False) -> pd.DataFrame:
    """Score each question 1-10 on :data:`QC_CRITERIA` in one call; return a ``judgments`` table.

    The paper uses two prompts (I.4 correctness/validity, I.5 clarity/difficulty/groundedness);
    this asks for all five at once to halve the calls (a documented deviation). Unparseable
    replies give five rows with ``score`` NA and ``parse_status`` failed/missing.
    """
    from medeval_kit.prompts import load_prompt

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


# --------------------------------------------------------------------------- diversity
def question_diversity(items: pd.DataFrame, *, by: str | Sequence[str] | None = "generator", text: str = "question",
                       embedder="tfidf-lsa", paper_code_compat: bool = False, fit_on: str = "all",
                       n_components: int = 100, seed: int = 0) -> pd.DataFrame:
    """Mean pairwise cosine of question embeddings per group (higher = LESS diverse).

    ``embedder`` is a name for :func:`~medeval_kit.embed.get_embedder` or an object with
    ``fit_transform(texts)``. ``fit_on="all"`` fits TF-IDF/LSA once on every question (one shared
    space, comparable across groups); ``"group"`` fits per group. Rows with NA text are
    excluded and counted in ``n_missing``.
    """
    from medeval_kit.embed import get_embedder, mean_pairwise_cosine

    emb = get_embedder(embedder, n_components=n_components, seed=seed) if isinstance(embedder, str) and \
        embedder.startswith(("tfidf", "lsa")) else (get_embedder(embedder) if isinstance(embedder, str) else embedder)
    name = getattr(emb, "name", type(emb).__name__)
    df = items.reset_index(drop=True)
    ok = df[text].notna() & (df[text].astype(str).str.strip() != "")
    X_all = emb.fit_transform(df.loc[ok, text].astype(str).tolist()) if fit_on == "all" else None
    pos = pd.Series(np.arange(ok.sum()), index=df.index[ok])
    keys = [by] if isinstance(by, str) else (list(by) if by else [])
    groups = df.groupby(keys, sort=True) if keys else [((), df)]
    rows = []
    for key, g in groups:
        gi = g.index[ok[g.index]]
        if fit_on == "all":
            X = X_all[pos[gi].to_numpy()]
        else:
            X = emb.fit_transform(df.loc[gi, text].astype(str).tolist()) if len(gi) else np.zeros((0, 1))
        r = mean_pairwise_cosine(X, paper_code_compat=paper_code_compat) if len(gi) >= 2 else \
            {"mean_cosine": np.nan, "n_texts": len(gi), "n_pairs": 0, "method": "fewer than 2 texts"}
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(keys, key)), **r, "n_missing": int(len(g) - len(gi)), "embedder": name,
                     "fit_on": fit_on})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- evaluation
def evaluate_benchmark(items: pd.DataFrame, models: Sequence[str], *, client=None, clients: dict | None = None,
                       grader: str | None = None, cache_mode: str = "use", seed: int = 0, max_tokens: int = 200,
                       constrained: bool = True, progress: bool = False) -> pd.DataFrame:
    """Evaluate ``models`` on generated items; return a ``responses`` table with ``correct``.

    MCQ: options are re-shuffled per (item, model) like Inspect's ``shuffle_choices`` and the
    model replies with a letter; correct = the letter of the keyed option. OE: the model answers
    and the ``grader`` (default: the first model) grades C/I against the expert answer (no
    partial credit). Invalid items are skipped and counted in ``attrs['n_skipped']``;
    unparseable replies give ``correct`` NA with their parse status.
    """
    from medeval_kit.prompts import load_prompt

    valid = items[items.get("valid", pd.Series(True, index=items.index)).astype(bool)]
    out = []
    clients = dict(clients or {})
    for m in models:
        cl = clients.get(m) or resolve_client(m, client, cache_mode)
        mcq, oe = valid[valid["format"] == "mcq"], valid[valid["format"] == "oe"]
        if len(mcq):
            p = load_prompt("generate/grounded_answer_mcq")
            shuffled = []
            for _, r in mcq.iterrows():
                ch = r["choices"]
                keyed = ch[r["answer"]]
                others = [v for k, v in ch.items() if k != r["answer"]]
                shuffled.append(shuffle_options(keyed, others, seed=derived_seed(seed, r["item"], m, "eval")))
            schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": list("ABCD")}},
                      "required": ["answer"]}
            recs = run_prompt(cl, p, [{"question": r["question"],
                                       "options": "\n".join(f"{k}. {v}" for k, v in s["options"].items())}
                                      for (_, r), s in zip(mcq.iterrows(), shuffled)],
                              model=m, max_tokens=20, seed=seed, constrained=constrained, schema=schema,
                              metadata=[{"item": i} for i in mcq["item"]], progress=progress, desc=f"eval mcq {m}")
            for (_, r), s, rec in zip(mcq.iterrows(), shuffled, recs):
                got = rec["parsed"].get("answer") if rec["parse_status"] == "ok" and rec["parsed"] else None
                out.append({"item": r["item"], "model": m, "repeat": 0, "text": rec["text"], "format": "mcq",
                            "extracted": got, "key": s["answer_letter"], "shuffle_order": dumps(s["shuffle_order"]),
                            "correct": (got == s["answer_letter"]) if got is not None else pd.NA,
                            "parse_status": rec["parse_status"], "grader": None, "prompt": rec["prompt"],
                            "prompt_version": rec["prompt_version"], "seed": int(seed), "cached": rec["cached"]})
        if len(oe):
            p = load_prompt("generate/grounded_answer_oe")
            schema = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 80}},
                      "required": ["answer"]}
            recs = run_prompt(cl, p, [{"question": q} for q in oe["question"]], model=m, max_tokens=max_tokens,
                              seed=seed, constrained=constrained, schema=schema,
                              metadata=[{"item": i} for i in oe["item"]], progress=progress, desc=f"eval oe {m}")
            g_model = grader or models[0]
            gcl = clients.get(g_model) or resolve_client(g_model, client, cache_mode)
            gp = load_prompt("generate/grounded_grade_oe")
            gschema = {"type": "object", "properties": {"grade": {"type": "string", "enum": ["C", "I"]}},
                       "required": ["grade"]}
            answers = [rec["parsed"].get("answer") if rec["parse_status"] == "ok" and rec["parsed"] else None
                       for rec in recs]
            need = [k for k, a in enumerate(answers) if a is not None]
            grecs = run_prompt(gcl, gp, [{"question": oe["question"].iloc[k], "expert_answer": oe["answer"].iloc[k],
                                          "submission": answers[k]} for k in need],
                               model=g_model, max_tokens=10, seed=seed, constrained=constrained, schema=gschema,
                               metadata=[{"item": oe["item"].iloc[k]} for k in need], progress=progress,
                               desc=f"grade oe {m}")
            gmap = dict(zip(need, grecs))
            for k, ((_, r), rec) in enumerate(zip(oe.iterrows(), recs)):
                g = gmap.get(k)
                grade = g["parsed"].get("grade") if g and g["parse_status"] == "ok" and g["parsed"] else None
                out.append({"item": r["item"], "model": m, "repeat": 0, "text": rec["text"], "format": "oe",
                            "extracted": answers[k], "key": r["answer"], "shuffle_order": None,
                            "correct": (grade == "C") if grade else pd.NA,
                            "parse_status": rec["parse_status"] if g is None else g["parse_status"],
                            "grader": g_model, "prompt": rec["prompt"], "prompt_version": rec["prompt_version"],
                            "seed": int(seed), "cached": rec["cached"]})
    res = pd.DataFrame(out)
    res.attrs["n_skipped"] = int(len(items) - len(valid))
    return res


def _wilson(k: float, n: int) -> tuple[float, float]:
    """Wilson 95% interval for k/n, clamped so that it always contains k/n despite rounding."""
    from medeval_kit.stats import proportion_ci

    if n == 0:
        return np.nan, np.nan
    lo, hi = proportion_ci(int(round(k)), int(n), confidence=0.95, method="wilson")
    p = k / n
    return float(max(0.0, min(lo, p))), float(min(1.0, max(hi, p)))


def accuracy_table(responses: pd.DataFrame, *, by: Sequence[str] = ("model", "format"),
                   correct: str = "correct") -> pd.DataFrame:
    """Accuracy per group with n, n_failed (NA correctness, counted as NOT correct in
    ``accuracy_all`` and excluded from ``accuracy``) and a Wilson 95% CI."""
    rows = []
    for key, g in responses.groupby(list(by), sort=True):
        c = g[correct]
        n_failed = int(c.isna().sum())
        k = float(c.dropna().astype(bool).sum())
        n = int(len(c) - n_failed)
        lo, hi = _wilson(k, n)
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key)), "accuracy": k / n if n else np.nan, "n_items": n,
                     "n_failed": n_failed, "accuracy_all": k / len(c) if len(c) else np.nan,
                     "ci_low": lo, "ci_high": hi, "method": "Wilson 95%"})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- correlations
def _fisher_ci(r: float, n: int, se_scale: float = 1.0) -> tuple[float, float]:
    if n <= 3 or not np.isfinite(r) or abs(r) >= 1:
        return np.nan, np.nan
    z, se = np.arctanh(r), se_scale / np.sqrt(n - 3)
    return float(np.tanh(z - 1.959963984540054 * se)), float(np.tanh(z + 1.959963984540054 * se))


def benchmark_correlation(acc: pd.DataFrame, *, x: str = "human", y: str = "synthetic", model: str = "model",
                          dataset: str | None = "dataset", level: str = "model") -> pd.DataFrame:
    """Pearson and Spearman between human-benchmark (``x``) and synthetic-benchmark (``y``) accuracy.

    ``level="model"`` averages each model over datasets first (paper's Spearman: one point per
    evaluated model; unweighted mean over datasets); ``level="pairs"`` uses every
    (model, dataset) point (paper's Pearson). CIs: Fisher z (Spearman with the Fieller 1.06
    variance factor). Returns two rows (pearson, spearman) with n.
    """
    from scipy import stats

    d = acc[[c for c in (model, dataset, x, y) if c]].dropna(subset=[x, y])
    n_dropped = int(len(acc) - len(d))
    if level == "model":
        d = d.groupby(model, sort=True)[[x, y]].mean()
    elif level != "pairs":
        raise GenerationError(f"level must be 'model' or 'pairs'; not {level!r}")
    n = len(d)
    rows = []
    for name, fn, scale in (("pearson", stats.pearsonr, 1.0), ("spearman", stats.spearmanr, np.sqrt(1.06))):
        if n >= 3 and d[x].nunique() > 1 and d[y].nunique() > 1:
            r, p = fn(d[x], d[y])
            r, p = float(r), float(p)
            note = ""
        else:
            r, p, note = np.nan, np.nan, "fewer than 3 points or a constant column"
        lo, hi = _fisher_ci(r, n, scale)
        rows.append({"statistic": name, "level": level, "value": r, "p_value": p, "n": n, "n_dropped": n_dropped,
                     "ci_low": lo, "ci_high": hi, "method": "Fisher z" + (" (Fieller 1.06)" if name == "spearman" else ""),
                     "note": note})
    return pd.DataFrame(rows)


def spearman_from_rank_differences(sum_d2: float, n: int) -> float:
    """Spearman's rho from the no-ties identity ``1 - 6 * sum(d^2) / (n (n^2 - 1))``.

    >>> round(spearman_from_rank_differences(34, 13), 4)
    0.9066
    """
    if n < 2:
        return float("nan")
    return 1.0 - 6.0 * float(sum_d2) / (n * (n * n - 1))


def _perm_with_sum_d2(n: int, target: int) -> list[int] | None:
    """A permutation of 0..n-1 whose squared rank differences sum to ``target`` (adjacent-swap greedy)."""
    perm = list(range(n))
    remaining = target
    # swapping positions i and j adds 2*(j-i)^2; use the largest gaps that fit, disjoint pairs only
    used = set()
    for gap in range(n - 1, 0, -1):
        for i in range(n - gap):
            j = i + gap
            if i in used or j in used or 2 * gap * gap > remaining:
                continue
            perm[i], perm[j] = perm[j], perm[i]
            used |= {i, j}
            remaining -= 2 * gap * gap
    return perm if remaining == 0 else None


def spearman_identity_check(values: Mapping[str, float], n: int) -> pd.DataFrame:
    """Recover the integer sum of squared rank differences behind Spearman values over ``n`` ranks.

    For each ``name -> rho``: ``sum_d2 = round((1 - rho) n (n^2 - 1) / 6)``, ``rho_identity``
    recomputed from it, and ``rho_scipy`` = scipy's Spearman on a constructed pair of rankings with
    that sum_d2 (an independent check of the identity). Columns: quantity, rho, n, sum_d2,
    sum_d2_even, rho_identity, rho_scipy. (The paper's printed values are checked in
    :mod:`medeval_kit.repro`.)
    """
    from scipy import stats

    rows = []
    for name, rho in values.items():
        sd2 = int(round((1 - rho) * n * (n * n - 1) / 6))
        ours = spearman_from_rank_differences(sd2, n)
        perm = _perm_with_sum_d2(n, sd2)
        sc = float(stats.spearmanr(np.arange(n), perm)[0]) if perm is not None else np.nan
        rows.append({"quantity": name, "rho": rho, "n": n, "sum_d2": sd2, "sum_d2_even": sd2 % 2 == 0,
                     "rho_identity": ours, "rho_scipy": sc})
    return pd.DataFrame(rows, columns=["quantity", "rho", "n", "sum_d2", "sum_d2_even", "rho_identity", "rho_scipy"])


def mmlu_pro_aggregations(df: pd.DataFrame | None = None, *, subsets: dict | None = None) -> pd.DataFrame:
    """Try the plausible aggregations of the bundled MMLU-Pro replication results (original vs novel accuracy).

    Aggregations: ``pairs`` (every (model, subject) point), ``macro`` (per-model unweighted mean
    over the 6 subjects), ``micro`` (per-model accuracy pooled over questions; n questions per cell
    recovered as (std/stderr)^2 + 1), ``subject_mean`` (mean of the 6 per-subject correlations)
    and ``subject_median``. Model subsets: all 16 evaluated models, the 11 that are in the
    paper's Table 2, and leave-outs of the models added later (gpt-oss, Qwen3, gemma-3-1b).
    One row per (subset, aggregation, statistic): value, n, n_models. (The paper's printed Pearson
    0.86 / Spearman 0.91 are compared in :mod:`medeval_kit.repro`.)
    """
    from scipy import stats

    from medeval_kit.datasets import load_mmlu_pro_replication

    df = load_mmlu_pro_replication() if df is None else df.copy()
    later = {"gpt-oss": ["openai/gpt-oss-120b", "openai/gpt-oss-20b"],
             "qwen3": ["Qwen/Qwen3-1.7B", "Qwen/Qwen3-4B-Instruct-2507"], "gemma-3-1b": ["google/gemma-3-1b-it"]}
    if subsets is None:
        allm = sorted(df["eval_model"].unique())
        subsets = {"all 16 evaluated models": allm,
                   "without gpt-oss": [m for m in allm if m not in later["gpt-oss"]],
                   "without Qwen3": [m for m in allm if m not in later["qwen3"]],
                   "without gemma-3-1b": [m for m in allm if m not in later["gemma-3-1b"]],
                   "without gpt-oss and Qwen3": [m for m in allm if m not in later["gpt-oss"] + later["qwen3"]],
                   "Table 2 models only (11)": [m for m in allm if m not in sum(later.values(), [])]}
    sd, se = df["std eval_accuracy"], df["stderr eval_accuracy"]
    df["n_questions"] = ((sd / se) ** 2 + 1).round()
    rows = []
    for sname, models in subsets.items():
        d = df[df["eval_model"].isin(models)]
        w = d.pivot_table(index=["eval_model", "subject"], columns="novel", values="eval_accuracy").dropna()
        w.columns = ["orig" if not c else "novel" for c in w.columns]
        pts = {"pairs": w}
        pts["macro"] = w.groupby("eval_model").mean()
        k = d.assign(k=d["eval_accuracy"] * d["n_questions"]).groupby(["eval_model", "novel"])[["k", "n_questions"]].sum()
        mic = (k["k"] / k["n_questions"]).unstack()
        mic.columns = ["orig" if not c else "novel" for c in mic.columns]
        pts["micro"] = mic.dropna()
        for agg, p in pts.items():
            for stat, fn in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr)):
                v = float(fn(p["orig"], p["novel"])[0])
                rows.append({"subset": sname, "aggregation": agg, "statistic": stat, "value": v, "n": len(p),
                             "n_models": len(models)})
        per = {stat: [float(fn(g["orig"], g["novel"])[0]) for _, g in w.groupby("subject")]
               for stat, fn in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr))}
        for agg, f in (("subject_mean", np.mean), ("subject_median", np.median)):
            for stat in ("pearson", "spearman"):
                v = float(f(per[stat]))
                rows.append({"subset": sname, "aggregation": agg, "statistic": stat, "value": v,
                             "n": len(per[stat]), "n_models": len(models)})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- bundled-data analysis
def grounded_quality_summary(items: pd.DataFrame, judgments: pd.DataFrame, *,
                             by: Sequence[str] = ("generator", "format")) -> pd.DataFrame:
    """Mean (t-based 95% CI) of each 1-10 judge score per group, with n and n_missing."""
    from scipy import stats

    j = judgments.merge(items[["item", *by]], on="item", how="left")
    rows = []
    for key, g in j.groupby([*by, "criterion"], sort=True):
        s = g["score"].dropna().to_numpy(float)
        n = len(s)
        m = float(s.mean()) if n else np.nan
        if n > 1:
            h = stats.t.ppf(0.975, n - 1) * s.std(ddof=1) / np.sqrt(n)
            lo, hi = m - h, m + h
        else:
            lo = hi = np.nan
        rows.append({**dict(zip([*by, "criterion"], key)), "mean": m, "sd": float(s.std(ddof=1)) if n > 1 else np.nan,
                     "n_items": n, "n_missing": int(g["score"].isna().sum()), "ci_low": lo, "ci_high": hi,
                     "method": "t 95%"})
    return pd.DataFrame(rows)


def grounded_letter_balance(items: pd.DataFrame, *, by: str = "generator") -> pd.DataFrame:
    """Correct-letter distribution of the MCQ items per generator (chi-square vs uniform A-D)."""
    from medeval_kit.generate._common import letter_balance

    mcq = items[items["format"] == "mcq"]
    return letter_balance(mcq, answer="answer", letters="ABCD", by=by)


_ = LETTERS  # re-exported name kept for callers that import it from here


def contexts_to_markdown(items: pd.DataFrame, *, n: int = 2, seed: int = 0, title: str = "Grounding document",
                         context: str = "context") -> str:
    """Build a small markdown document (one ``##`` section per context) from ``n`` distinct contexts,
    e.g. the bundled PubMedQA abstracts, to run the grounded pipeline offline."""
    ctx = items.drop_duplicates(subset=[context]).reset_index(drop=True)
    pick = ctx.iloc[np.random.default_rng(seed).permutation(len(ctx))[: int(n)]]
    parts = [f"# {title}", ""]
    for k, (_, r) in enumerate(pick.iterrows(), start=1):
        parts += [f"## Section {k}", "", str(r[context]).strip(), ""]
    return "\n".join(parts)


def plot_quality(summary: pd.DataFrame, *, ax=None, fmt: str = "mcq"):
    """Mean judge score (with CI) per generator and criterion (dot plot)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots()
    d = summary[summary["format"] == fmt] if "format" in summary.columns else summary
    crits = sorted(d["criterion"].unique())
    gens = sorted(d["generator"].unique())
    for k, c in enumerate(crits):
        dc = d[d["criterion"] == c].set_index("generator").reindex(gens)
        y = np.arange(len(gens)) + (k - len(crits) / 2) * 0.15
        ax.errorbar(dc["mean"], y, xerr=[dc["mean"] - dc["ci_low"], dc["ci_high"] - dc["mean"]], fmt="o", ms=3,
                    lw=0.8, label=c)
    ax.set_yticks(np.arange(len(gens)))
    ax.set_yticklabels(gens)
    ax.set_xlabel(f"mean judge score (1-10), {fmt}, 95% CI")
    ax.legend(fontsize=6, frameon=False)
    return ax


def plot_letter_balance(balance: pd.DataFrame, *, by: str = "generator", ax=None):
    """Stacked share of the correct letter per group, with the uniform 25% line."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots()
    w = balance.pivot_table(index=by, columns="letter", values="share", fill_value=0)
    left = np.zeros(len(w))
    for L in w.columns:
        ax.barh(w.index, w[L], left=left, label=L)
        left += w[L].to_numpy()
    for x in (0.25, 0.5, 0.75):
        ax.axvline(x, ls=":", lw=0.6, color="grey")
    ax.set_xlabel("share of items keyed to each letter")
    ax.legend(ncol=4, fontsize=6, frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return ax
