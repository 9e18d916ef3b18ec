"""Cloze answers (MedQADE, paper id medqade-2026): answer single-cloze items, score by exact and normalised match,
stratify by the lexical-match proxy, sample 80:20 with weights that undo it, and report accuracy
and abstention by stratum and by difficulty band.

Difficulty bands: an item's difficulty is the mean of rater ratings coded Easy = 0, Medium = 1,
Hard = 2. The paper's bins (<=0.5, 0.5-1, 1-1.5, >=1.5) overlap at their edges as printed;
:func:`difficulty_band` takes ``edges`` (default ``(0.5, 1.0, 1.5)``) and ``right`` (default True:
intervals ``(-inf, 0.5], (0.5, 1.0], (1.0, 1.5], (1.5, inf)``) so the choice is explicit.
"""

from __future__ import annotations

import html
import re
import string
import unicodedata
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from medeval_kit.generate._common import GenerationError, resolve_client, run_prompt
from medeval_kit.results import result_frame, result_row
from medeval_kit.stats import nested_order, normal_interval, wilson_interval

__all__ = [
    "synthetic_cloze_labels",
    "max_stratified_n",
    "make_cloze_items",
    "normalize_answer",
    "score_cloze",
    "answer_cloze",
    "lexical_match",
    "stratified_sample",
    "accuracy_by",
    "difficulty_band",
    "abstention_by_band",
    "DEFAULT_BAND_EDGES",
]

DEFAULT_BAND_EDGES = (0.5, 1.0, 1.5)
WILSON = "Wilson 95%"
_TAG = re.compile(r"<[^>]+>")
_PUNCT = str.maketrans("", "", string.punctuation + "\u2013\u2014\u201e\u201c\u201d\u2019")


def normalize_answer(text: str | None, *, lower: bool = True, strip_html: bool = True, punctuation: bool = True,
                     whitespace: bool = True, unicode: bool = True, articles: Sequence[str] = ()) -> str:
    """Normalise an answer for the lenient match: NFKC, HTML tags/entities removed, case folded,
    punctuation removed, whitespace collapsed; optional leading ``articles`` (e.g. German
    ``("der", "die", "das")``) dropped. None -> ''.

    >>> normalize_answer("  <b>Morbus&nbsp;Crohn</b>. ")
    'morbus crohn'
    """
    if text is None or (isinstance(text, float) and np.isnan(text)):
        return ""
    s = str(text)
    if strip_html:
        s = html.unescape(_TAG.sub(" ", s))
    if unicode:
        s = unicodedata.normalize("NFKC", s)
    if lower:
        s = s.casefold()
    if punctuation:
        s = s.translate(_PUNCT)
    if whitespace:
        s = " ".join(s.split())
    if articles:
        words = s.split(" ")
        if len(words) > 1 and words[0] in {a.casefold() for a in articles}:
            s = " ".join(words[1:])
    return s


def score_cloze(responses: pd.DataFrame, *, answer: str = "answer", reference: str = "reference",
                normalizer=normalize_answer) -> pd.DataFrame:
    """Add ``exact_match`` (strict string equality) and ``normalized_match`` (after ``normalizer``);
    a missing answer gives NA in both (counted, never scored as wrong silently)."""
    out = responses.copy()
    a, r = out[answer], out[reference]
    miss = a.isna()
    out["exact_match"] = pd.array([pd.NA if m else (str(x) == str(y)) for x, y, m in zip(a, r, miss)], dtype="boolean")
    out["normalized_match"] = pd.array(
        [pd.NA if m else (normalizer(x) == normalizer(y)) for x, y, m in zip(a, r, miss)], dtype="boolean")
    return out


def answer_cloze(items: pd.DataFrame, *, model: str = "local/smollm2-135m", client=None, cache_mode: str = "use",
                 seed: int = 0, max_tokens: int = 30, constrained: bool = True, question: str = "question",
                 reference: str = "reference", progress: bool = False) -> pd.DataFrame:
    """Answer each single-cloze item; return a ``responses``-shaped table scored by :func:`score_cloze`."""
    from medeval_kit.prompts import load_prompt

    p = load_prompt("generate/cloze_answer")
    client = resolve_client(model, client, cache_mode)
    recs = run_prompt(client, p, [{"question": q} for q in items[question]], model=model, max_tokens=max_tokens,
                      seed=seed, constrained=constrained, metadata=[{"item": i} for i in items["item"]],
                      progress=progress, desc="cloze")
    rows = []
    for (_, it), r in zip(items.iterrows(), recs):
        ans = r["parsed"].get("answer") if r["parse_status"] == "ok" and isinstance(r["parsed"], dict) else None
        rows.append({"item": str(it["item"]), "model": model, "repeat": 0, "text": r["text"], "answer": ans,
                     "reference": it[reference], "parse_status": r["parse_status"], "prompt": r["prompt"],
                     "prompt_version": r["prompt_version"], "seed": int(seed), "cached": r["cached"]})
    return score_cloze(pd.DataFrame(rows))


def lexical_match(responses: pd.DataFrame, *, item: str = "item", match: str = "exact_match") -> pd.DataFrame:
    """Per item: ``lexical_match`` = True if ANY student's answer matched verbatim (the paper's proxy),
    ``stratum`` ("match"/"nomatch"), ``n_students`` and ``n_missing`` (NA answers, not counted as matches)."""
    g = responses.groupby(item, sort=True)[match]
    out = pd.DataFrame({"lexical_match": g.apply(lambda s: bool(s.fillna(False).astype(bool).any())),
                        "n_students": g.size(), "n_missing": g.apply(lambda s: int(s.isna().sum()))}).reset_index()
    out["stratum"] = np.where(out["lexical_match"], "match", "nomatch")
    return out


def stratified_sample(items: pd.DataFrame, *, n: int, frac: Mapping[str, float] | None = None,
                      stratum: str = "stratum", seed: int = 0) -> pd.DataFrame:
    """Sample ``n`` items with fixed stratum shares (default ``{"nomatch": 0.8, "match": 0.2}``),
    without replacement, and attach design weights that undo the oversampling.

    ``inclusion_prob = n_h / N_h`` and ``weight = N_h / n_h``, so weighted means estimate the
    population (corpus) value. Stratum sizes are rounded to the nearest integer with the last
    stratum taking the remainder. Raises if a stratum is too small.
    """
    frac = dict(frac or {"nomatch": 0.8, "match": 0.2})
    if abs(sum(frac.values()) - 1) > 1e-9:
        raise GenerationError(f"stratum fractions must sum to 1; got {frac}")
    keys = list(frac)
    sizes = {k: int(round(n * frac[k])) for k in keys[:-1]}
    sizes[keys[-1]] = int(n - sum(sizes.values()))
    rng = np.random.default_rng(seed)
    parts = []
    for k in keys:
        pool = items[items[stratum] == k]
        if sizes[k] > len(pool):
            raise GenerationError(f"stratum {k!r} has {len(pool)} items; {sizes[k]} requested")
        take = pool.iloc[np.sort(rng.choice(len(pool), size=sizes[k], replace=False))].copy()
        take["N_h"], take["n_h"] = len(pool), sizes[k]
        take["inclusion_prob"] = sizes[k] / len(pool) if len(pool) else np.nan
        take["weight"] = len(pool) / sizes[k] if sizes[k] else np.nan
        parts.append(take)
    return pd.concat(parts).reset_index(drop=True)


def _weighted_accuracy(y: np.ndarray, w: np.ndarray) -> tuple[float, tuple[float, float], float]:
    """(ratio estimate sum(w y)/sum(w), normal 95% CI with the Kish effective n, Kish n_eff)."""
    n = len(y)
    acc = float((w * y).sum() / w.sum()) if n else np.nan
    n_eff = float(w.sum() ** 2 / (w ** 2).sum()) if n else np.nan
    se = np.sqrt(acc * (1 - acc) / n_eff) if n else np.nan
    return acc, normal_interval(acc, se, bounds=(0.0, 1.0)), n_eff


def accuracy_by(df: pd.DataFrame, *, by: str | Sequence[str], correct: str = "normalized_match",
                weight: str | None = None) -> pd.DataFrame:
    """Accuracy per group with a 95% CI: ``estimate`` over the ``n_items`` scored rows, ``n_failed``
    = rows with NA correctness (excluded).

    Unweighted: Wilson interval. Weighted (``weight`` column): ratio estimate sum(w y)/sum(w)
    with a normal interval using the Kish effective sample size ``(sum w)^2 / sum w^2`` (``n_eff``).
    """
    keys = [by] if isinstance(by, str) else list(by)
    rows = []
    for key, g in df.groupby(keys, sort=True, dropna=False, observed=True):
        y = g[correct]
        ok = y.notna()
        yy = y[ok].astype(float).to_numpy()
        n = int(ok.sum())
        key = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        if weight is None:
            rows.append(result_row(float(yy.mean()) if n else np.nan, wilson_interval(yy.sum(), n), WILSON,
                                   n_items=n, n_failed=int((~ok).sum()), **key))
        else:
            acc, ci, n_eff = _weighted_accuracy(yy, g.loc[ok, weight].astype(float).to_numpy())
            rows.append(result_row(acc, ci, "weighted (design weights), Kish n_eff normal 95%", n_items=n,
                                   n_failed=int((~ok).sum()), **key, n_eff=n_eff))
    return result_frame(rows, keys=keys)


def difficulty_band(values, *, edges: Sequence[float] = DEFAULT_BAND_EDGES, right: bool = True,
                    labels: Sequence[str] | None = None) -> pd.Series:
    """Bin mean difficulty (Easy 0, Medium 1, Hard 2) into bands at ``edges``.

    ``right=True``: ``(-inf, e1], (e1, e2], ...``; ``right=False``: ``[.., e1), [e1, e2) ...``.
    Labels default to the interval text (e.g. ``"<=0.5"``, ``"(0.5, 1.0]"``, ``">1.5"``). Returns an
    ordered categorical Series (index kept; NA for missing values) so tables sort by band.

    >>> difficulty_band([0.5, 1.0, 1.6]).tolist()
    ['<=0.5', '(0.5, 1.0]', '>1.5']
    """
    e = [float(x) for x in edges]
    if sorted(e) != e or len(set(e)) != len(e):
        raise GenerationError(f"band edges must be strictly increasing; got {edges}")
    if labels is None:
        if right:
            labels = [f"<={e[0]}"] + [f"({a}, {b}]" for a, b in zip(e, e[1:])] + [f">{e[-1]}"]
        else:
            labels = [f"<{e[0]}"] + [f"[{a}, {b})" for a, b in zip(e, e[1:])] + [f">={e[-1]}"]
    if len(labels) != len(e) + 1:
        raise GenerationError(f"need {len(e) + 1} labels for {len(e)} edges")
    return pd.cut(pd.Series(values, dtype=float), bins=[-np.inf, *e, np.inf], right=right, labels=list(labels),
                  ordered=True)


def abstention_by_band(labels: pd.DataFrame, *, band: str = "band", label: str = "label",
                       rater_kind: str = "rater_kind", abstain: str = "abstain") -> pd.DataFrame:
    """Abstention rate per (rater kind, band) with a Wilson 95% CI: ``estimate`` = share of ``abstain``
    among the ``n_items`` labels given (slots), ``n_abstain``; ``n_failed`` = NA labels (excluded)."""
    rows = []
    keys = [rater_kind, band] if rater_kind in labels.columns else [band]
    for key, g in labels.groupby(keys, sort=True, dropna=False, observed=True):
        lab = g[label]
        n_missing = int(lab.isna().sum())
        lab = lab.dropna()
        k = int((lab == abstain).sum())
        n = int(len(lab))
        key = key if isinstance(key, tuple) else (key,)
        rows.append(result_row(k / n if n else np.nan, wilson_interval(k, n), WILSON, n_items=n, n_failed=n_missing,
                               **dict(zip(keys, key)), n_abstain=k))
    return result_frame(rows, keys=keys)


def make_cloze_items(items: pd.DataFrame, *, n: int = 10, seed: int = 0, text: str = "context",
                     answer: str = "keypoint", dataset: str = "medqg_cloze") -> pd.DataFrame:
    """Build single-cloze items offline: in each row's ``text``, the first sentence that contains
    the ``answer`` string (case-insensitive) has it replaced by ``[...]``. Rows without a match are
    skipped and counted in the ``n_skipped`` column (the same on every row). A stand-in for MedQADE's
    Anki cloze cards, which are not bundled."""
    df = items.iloc[nested_order(len(items), seed)]  # one order for every n: a smaller n takes a prefix
    rows, skipped = [], 0
    for _, r in df.iterrows():
        ans = str(r[answer]).split(",")[0].strip()
        if len(ans) < 3:
            skipped += 1
            continue
        sents = re.split(r"(?<=[.!?])\s+", str(r[text]))
        hit = next((s for s in sents if ans.lower() in s.lower()), None)
        if hit is None:
            skipped += 1
            continue
        k = hit.lower().index(ans.lower())
        q = hit[:k] + "[...]" + hit[k + len(ans):]
        rows.append({"item": f"cloze-{len(rows)}", "dataset": dataset, "question": q, "reference": hit[k:k + len(ans)],
                     "source_item": r.get("item")})
        if len(rows) >= int(n):
            break
    out = pd.DataFrame(rows, columns=["item", "dataset", "question", "reference", "source_item"])
    out["n_skipped"] = skipped
    return out


def max_stratified_n(items: pd.DataFrame, *, frac: Mapping[str, float] | None = None, stratum: str = "stratum") -> int:
    """Largest sample size whose stratum allocation (as in :func:`stratified_sample`) fits the pool
    (0 when a stratum with a positive share is empty)."""
    frac = dict(frac or {"nomatch": 0.8, "match": 0.2})
    counts = items[stratum].value_counts()
    keys = list(frac)
    for n in range(len(items), -1, -1):
        sizes = {k: int(round(n * frac[k])) for k in keys[:-1]}
        sizes[keys[-1]] = int(n - sum(sizes.values()))
        if all(sizes[k] <= counts.get(k, 0) for k in keys):
            return n
    return 0


def synthetic_cloze_labels(n_items: int = 200, *, n_humans: int = 2, n_llms: int = 2,
                           human_abstain: tuple[float, float] = (0.05, 0.30), llm_abstain: float = 0.02,
                           p_correct: float = 0.6, seed: int = 0) -> pd.DataFrame:
    """SYNTHETIC grader labels (correct / incorrect / abstain) for demonstrating the abstention analysis;
    MedQADE's physician and LLM labels are not bundled.

    Each item gets ``n_humans`` difficulty ratings (Easy 0, Medium 1, Hard 2) whose mean is
    ``difficulty``; a human abstains with probability rising linearly from ``human_abstain[0]``
    (difficulty 0) to ``human_abstain[1]`` (difficulty 2), an LLM with constant ``llm_abstain``.
    Returns an ``annotations``-shaped table plus ``difficulty``.
    """
    rng = np.random.default_rng(seed)
    ratings = rng.integers(0, 3, size=(n_items, n_humans))
    diff = ratings.mean(axis=1)
    rows = []
    for i in range(n_items):
        for kind, n_r, p_abs in (("human", n_humans, human_abstain[0] + (human_abstain[1] - human_abstain[0]) * diff[i] / 2),
                                 ("llm", n_llms, llm_abstain)):
            for r in range(n_r):
                lab = "abstain" if rng.random() < p_abs else ("correct" if rng.random() < p_correct else "incorrect")
                rows.append({"item": f"s{i:04d}", "rater": f"{kind}{r + 1}", "rater_kind": kind,
                             "criterion": "correctness", "label": lab, "difficulty": float(diff[i])})
    return pd.DataFrame(rows)
