"""Cloze answers (MedQADE, paper id medqade-2026): answer single-cloze items, score by exact and normalized match,
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

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.generate._common import DEFAULT_MODEL, GenerationError, legacy_keywords, resolve_client, run_prompt
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
    """Normalize an answer for the lenient match: NFKC, HTML tags/entities removed, case folded,
    punctuation removed, whitespace collapsed; optional leading ``articles`` dropped.

    Unlike :func:`~medeval_kit.generate.normalize_text` (punctuation becomes a space, for matching
    topic names), punctuation is deleted here (``"X-ray"`` -> ``"xray"``), as the cloze answers are scored.

    Parameters
    ----------
    text : str or None
        The answer; ``None`` or NaN gives ``""``.
    lower : bool, default True
        Fold case.
    strip_html : bool, default True
        Remove HTML tags and unescape entities.
    punctuation : bool, default True
        Delete punctuation (ASCII and typographic dashes and quotes).
    whitespace : bool, default True
        Collapse runs of whitespace to one space and strip.
    unicode : bool, default True
        Apply NFKC normalization.
    articles : sequence of str, default ()
        Leading words to drop (e.g. German ``("der", "die", "das")``).

    Returns
    -------
    str
        The normalized answer.

    Examples
    --------
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


@shared_docs
@takes_columns("answer", "reference")
def score_cloze(responses: pd.DataFrame, *, normalizer=normalize_answer, columns: Columns = None) -> pd.DataFrame:
    """Add ``exact_match`` (strict string equality) and ``normalized_match`` (after ``normalizer``).

    A missing answer gives NA in both (counted, never scored as wrong silently).

    Parameters
    ----------
    responses : DataFrame
        ``answer`` (the model's answer) and ``reference`` (the expected one), one row per reply.
    normalizer : callable, default normalize_answer
        ``str -> str`` applied to both before the lenient comparison.
    {columns}

    Returns
    -------
    DataFrame
        ``responses`` plus the nullable-boolean columns ``exact_match`` and ``normalized_match``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"answer": ["Kidney.", None], "reference": ["kidney", "liver"]})
    >>> score_cloze(df)[["exact_match", "normalized_match"]].values.tolist()
    [[False, True], [<NA>, <NA>]]
    """
    out = responses.copy()
    a, r = out["answer"], out["reference"]
    miss = a.isna()
    out["exact_match"] = pd.array([pd.NA if m else (str(x) == str(y)) for x, y, m in zip(a, r, miss)], dtype="boolean")
    out["normalized_match"] = pd.array(
        [pd.NA if m else (normalizer(x) == normalizer(y)) for x, y, m in zip(a, r, miss)], dtype="boolean")
    return out


@shared_docs
@takes_columns("item", "question", "reference")
def answer_cloze(items: pd.DataFrame, *, model: str | None = None, client=None, cache_mode: str = "use",
                 seed: int = 0, max_tokens: int = 30, constrained: bool = True, progress: bool = False,
                 columns: Columns = None) -> pd.DataFrame:
    """Answer each single-cloze item; return a ``responses``-shaped table scored by :func:`score_cloze`.

    Parameters
    ----------
    items : DataFrame
        ``item``, ``question`` (the cloze text with ``[...]``) and ``reference`` (:func:`make_cloze_items`).
    {model}
        Default ``"local/smollm2-135m"``.
    {client}
    cache_mode : {"use", "record", "replay"}, default "use"
        The LLM cache mode (:mod:`medeval_kit.llm`).
    {seed}
    max_tokens : int, default 30
        Token limit of a reply.
    constrained : bool, default True
        Constrain the reply to the JSON schema (grammar with the local model, structured output with APIs).
    progress : bool, default False
        Show a progress bar.
    {columns}

    Returns
    -------
    DataFrame
        One row per item: ``item, model, repeat, text, answer, reference, parse_status, prompt,
        prompt_version, seed, cached``, ``exact_match`` and ``normalized_match``.
    """
    from medeval_kit.prompts import load_prompt

    model = model or DEFAULT_MODEL
    p = load_prompt("generate/cloze_answer")
    client = resolve_client(model, client, cache_mode)
    recs = run_prompt(client, p, [{"question": q} for q in items["question"]], model=model, max_tokens=max_tokens,
                      seed=seed, constrained=constrained, metadata=[{"item": i} for i in items["item"]],
                      progress=progress, desc="cloze")
    rows = []
    for (_, it), r in zip(items.iterrows(), recs):
        ans = r["parsed"].get("answer") if r["parse_status"] == "ok" and isinstance(r["parsed"], dict) else None
        rows.append({"item": str(it["item"]), "model": model, "repeat": 0, "text": r["text"], "answer": ans,
                     "reference": it["reference"], "parse_status": r["parse_status"], "prompt": r["prompt"],
                     "prompt_version": r["prompt_version"], "seed": int(seed), "cached": r["cached"]})
    return score_cloze(pd.DataFrame(rows))


@shared_docs
@takes_columns("item")
def lexical_match(responses: pd.DataFrame, *, match: str = "exact_match", columns: Columns = None) -> pd.DataFrame:
    """Per item: did ANY student's answer match verbatim (the paper's stratification proxy)?

    Parameters
    ----------
    responses : DataFrame
        ``item`` and the ``match`` column, one row per (item, student) (:func:`score_cloze`).
    match : str, default "exact_match"
        The boolean column that says whether an answer matched; NA counts as not matched.
    {columns}

    Returns
    -------
    DataFrame
        One row per item: ``item``, ``lexical_match`` (bool), ``n_students``, ``n_missing`` (NA answers,
        not counted as matches) and ``stratum`` (``"match"``/``"nomatch"``).

    Examples
    --------
    >>> import pandas as pd
    >>> r = pd.DataFrame({"item": ["a", "a", "b"], "exact_match": [False, True, None]})
    >>> lexical_match(r)[["item", "stratum", "n_missing"]].values.tolist()
    [['a', 'match', 0], ['b', 'nomatch', 1]]
    """
    g = responses.groupby("item", sort=True)[match]
    out = pd.DataFrame({"lexical_match": g.apply(lambda s: bool(s.fillna(False).astype(bool).any())),
                        "n_students": g.size(), "n_missing": g.apply(lambda s: int(s.isna().sum()))}).reset_index()
    out["stratum"] = np.where(out["lexical_match"], "match", "nomatch")
    return out


@shared_docs
def stratified_sample(items: pd.DataFrame, *, n: int, frac: Mapping[str, float] | None = None,
                      stratum: str = "stratum", seed: int = 0) -> pd.DataFrame:
    """Sample ``n`` items with fixed stratum shares, without replacement, with design weights.

    ``inclusion_prob = n_h / N_h`` and ``weight = N_h / n_h``, so weighted means estimate the
    population (corpus) value. Stratum sizes are rounded to the nearest integer with the last
    stratum taking the remainder.

    Parameters
    ----------
    items : DataFrame
        The pool, with a ``stratum`` column (:func:`lexical_match`).
    n : int
        Items to sample.
    frac : mapping of str to float, optional
        Share of each stratum; default ``{"nomatch": 0.8, "match": 0.2}``; must sum to 1.
    stratum : str, default "stratum"
        The column holding the stratum.
    {seed}

    Returns
    -------
    DataFrame
        The sampled rows plus ``N_h``, ``n_h``, ``inclusion_prob`` and ``weight``.

    Raises
    ------
    GenerationError
        The shares do not sum to 1, or a stratum has fewer items than its allocation.

    Examples
    --------
    >>> import pandas as pd
    >>> pool = pd.DataFrame({"item": range(10), "stratum": ["nomatch"] * 8 + ["match"] * 2})
    >>> stratified_sample(pool, n=5, seed=0)["weight"].tolist()
    [2.0, 2.0, 2.0, 2.0, 2.0]
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


def accuracy_by(df: pd.DataFrame, *, by: str | Sequence[str], correct: str | None = None,
                weight: str | None = None) -> pd.DataFrame:
    """Accuracy per group with a 95% CI.

    Unweighted: Wilson interval. Weighted (``weight`` column): ratio estimate sum(w y)/sum(w)
    with a normal interval using the Kish effective sample size ``(sum w)^2 / sum w^2`` (``n_eff``).

    Parameters
    ----------
    df : DataFrame
        One row per scored reply: the ``by`` columns and the ``correct`` column.
    by : str or sequence of str
        The column(s) to group by.
    correct : str, optional
        The boolean column that says whether a reply is correct (a choice among several, e.g.
        ``exact_match`` or ``normalized_match``); default ``"normalized_match"``. NA rows are excluded.
    weight : str, optional
        A column of design weights (:func:`stratified_sample`); unweighted when omitted.

    Returns
    -------
    DataFrame
        One row per group: ``estimate`` (accuracy over the ``n_items`` scored rows), the CI, the
        contract columns (``n_failed`` = rows with NA correctness); ``n_eff`` when weighted.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"model": ["m"] * 4, "normalized_match": [True, True, False, None]})
    >>> accuracy_by(df, by="model")[["estimate", "n_items", "n_failed"]].values.round(3).tolist()
    [[0.667, 3.0, 1.0]]
    """
    correct = correct or "normalized_match"
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
    Parameters
    ----------
    values : array-like of float
        Mean difficulties.
    edges : sequence of float, default (0.5, 1.0, 1.5)
        Strictly increasing band edges.
    right : bool, default True
        Closed on the right: ``(-inf, e1], (e1, e2], ...``; else ``[.., e1), [e1, e2) ...``.
    labels : sequence of str, optional
        One label per band; default the interval text (``"<=0.5"``, ``"(0.5, 1.0]"``, ``">1.5"``).

    Returns
    -------
    pandas.Series
        An ordered categorical (NA for missing values) so tables sort by band.

    Raises
    ------
    GenerationError
        Edges not strictly increasing, or the wrong number of labels.

    Examples
    --------
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


@shared_docs
@takes_columns("label", "rater_kind", "band")
def abstention_by_band(labels: pd.DataFrame, *, abstain: str = "abstain", columns: Columns = None) -> pd.DataFrame:
    """Abstention rate per (rater kind, band) with a Wilson 95% CI.

    Parameters
    ----------
    labels : DataFrame
        ``label``, ``band`` (:func:`difficulty_band`) and optionally ``rater_kind``, one row per label slot.
    abstain : str, default "abstain"
        The label value that means the rater abstained.
    {columns}

    Returns
    -------
    DataFrame
        One row per (``rater_kind``, ``band``): ``estimate`` = share of ``abstain`` among the ``n_items``
        labels given, the Wilson CI, ``n_failed`` = NA labels (excluded), ``n_abstain``.

    Examples
    --------
    >>> import pandas as pd
    >>> lab = pd.DataFrame({"rater_kind": "human", "band": ["low"] * 4, "label": ["abstain", "correct", "correct", None]})
    >>> abstention_by_band(lab)[["estimate", "n_items", "n_failed", "n_abstain"]].values.round(3).tolist()
    [[0.333, 3.0, 1.0, 1.0]]
    """
    rows = []
    keys = ["rater_kind", "band"] if "rater_kind" in labels.columns else ["band"]
    for key, g in labels.groupby(keys, sort=True, dropna=False, observed=True):
        lab = g["label"]
        n_missing = int(lab.isna().sum())
        lab = lab.dropna()
        k = int((lab == abstain).sum())
        n = int(len(lab))
        key = key if isinstance(key, tuple) else (key,)
        rows.append(result_row(k / n if n else np.nan, wilson_interval(k, n), WILSON, n_items=n, n_failed=n_missing,
                               **dict(zip(keys, key)), n_abstain=k))
    return result_frame(rows, keys=keys)


@shared_docs
@legacy_keywords(text="columns:context", answer="columns:keypoint")
@takes_columns("item", "context", "keypoint")
def make_cloze_items(items: pd.DataFrame, *, n: int = 10, seed: int = 0, dataset: str | None = None,
                     columns: Columns = None) -> pd.DataFrame:
    """Build single-cloze items offline from (context, keypoint) rows.

    In each row's ``context``, the first sentence that contains the ``keypoint`` string (its first
    comma-separated part, case-insensitive) has it replaced by ``[...]``. Rows without a match are
    skipped and counted. A stand-in for MedQADE's Anki cloze cards, which are not bundled. The old
    keywords ``text=`` and ``answer=`` still work for one release (use ``columns=``).

    Parameters
    ----------
    items : DataFrame
        ``context``, ``keypoint`` and optionally ``item`` (e.g. :func:`~medeval_kit.datasets.load_srefine_inputs`
        with ``columns={"context": "clinical_note"}``, or the bundled MedQG questions).
    n : int, default 10
        Items to build; rows are visited in a seeded order that does not depend on ``n`` (a smaller
        ``n`` gives a prefix of a larger one).
    {seed}
    dataset : str, optional
        The value of the ``dataset`` column; default ``"medqg_cloze"``.
    {columns}

    Returns
    -------
    DataFrame
        ``item`` (``cloze-<k>``), ``dataset``, ``question``, ``reference``, ``source_item`` and ``n_skipped``
        (rows without a usable match; the same on every row).
    """
    dataset = dataset or "medqg_cloze"
    df = items.iloc[nested_order(len(items), seed)]  # one order for every n: a smaller n takes a prefix
    rows, skipped = [], 0
    for _, r in df.iterrows():
        ans = str(r["keypoint"]).split(",")[0].strip()
        if len(ans) < 3:
            skipped += 1
            continue
        sents = re.split(r"(?<=[.!?])\s+", str(r["context"]))
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
    """Largest sample size whose stratum allocation (as in :func:`stratified_sample`) fits the pool.

    Parameters
    ----------
    items : DataFrame
        The pool, with a ``stratum`` column.
    frac : mapping of str to float, optional
        Share of each stratum; default ``{"nomatch": 0.8, "match": 0.2}``.
    stratum : str, default "stratum"
        The column holding the stratum.

    Returns
    -------
    int
        The largest ``n``; 0 when a stratum with a positive share is empty.

    Examples
    --------
    >>> import pandas as pd
    >>> max_stratified_n(pd.DataFrame({"stratum": ["nomatch"] * 8 + ["match"] * 1}))
    7
    """
    frac = dict(frac or {"nomatch": 0.8, "match": 0.2})
    counts = items[stratum].value_counts()
    keys = list(frac)
    for n in range(len(items), -1, -1):
        sizes = {k: int(round(n * frac[k])) for k in keys[:-1]}
        sizes[keys[-1]] = int(n - sum(sizes.values()))
        if all(sizes[k] <= counts.get(k, 0) for k in keys):
            return n
    return 0


@shared_docs
def synthetic_cloze_labels(n_items: int = 200, *, n_humans: int = 2, n_llms: int = 2,
                           human_abstain: tuple[float, float] = (0.05, 0.30), llm_abstain: float = 0.02,
                           p_correct: float = 0.6, seed: int = 0) -> pd.DataFrame:
    """SYNTHETIC grader labels (correct / incorrect / abstain) for demonstrating the abstention analysis;
    MedQADE's physician and LLM labels are not bundled.

    Each item gets ``n_humans`` difficulty ratings (Easy 0, Medium 1, Hard 2) whose mean is
    ``difficulty``; a human abstains with probability rising linearly from ``human_abstain[0]``
    (difficulty 0) to ``human_abstain[1]`` (difficulty 2), an LLM with constant ``llm_abstain``.

    Parameters
    ----------
    n_items : int, default 200
        Items.
    n_humans, n_llms : int, default 2
        Human and LLM graders per item.
    human_abstain : tuple of float, default (0.05, 0.30)
        Human abstention probability at difficulty 0 and 2.
    llm_abstain : float, default 0.02
        LLM abstention probability.
    p_correct : float, default 0.6
        Probability that a non-abstaining label is ``correct``.
    {seed}

    Returns
    -------
    DataFrame
        An ``annotations``-shaped table (``item, rater, rater_kind, criterion, label``) plus ``difficulty``.
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
