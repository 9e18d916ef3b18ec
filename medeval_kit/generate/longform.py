"""Long-form answers (longform-medqa-2024): Cochran sample size, DBSCAN near-duplicate removal, difficulty
labels, difficulty-stratified batches, and answers capped at three sentences."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.generate._common import DEFAULT_MODEL, GenerationError, resolve_client, run_prompt

__all__ = [
    "cochran_sample_size",
    "dedup_dbscan",
    "label_difficulty",
    "stratified_batches",
    "generate_longform_answers",
    "count_sentences",
    "DIFFICULTY_LEVELS",
]

DIFFICULTY_LEVELS = {1: "basic", 2: "intermediate", 3: "advanced"}


def cochran_sample_size(N: int | None = None, *, confidence: float = 0.95, margin: float = 0.05,
                        p: float = 0.5) -> dict:
    """Cochran's sample size with the finite-population correction, rounded up.

    ``n0 = z^2 p (1 - p) / e^2``; ``n = n0 / (1 + (n0 - 1) / N)``. For N = 2,698 (longform-medqa-2024):
    n0 = 384.15, n = 336.4 -> 337. A design calculation, not a statistic of data.

    Parameters
    ----------
    N : int, optional
        The population size; ``None`` gives ``n0`` (no finite-population correction).
    confidence : float, default 0.95
        Coverage of the interval the sample should give.
    margin : float, default 0.05
        The margin of error ``e``.
    p : float, default 0.5
        The anticipated proportion (0.5 is the most conservative).

    Returns
    -------
    dict
        ``N, confidence, margin, p, z, n0, n_exact, n`` (rounded up) and ``formula``.

    Raises
    ------
    GenerationError
        A parameter out of range.

    Examples
    --------
    >>> cochran_sample_size(2698)["n"]
    337
    """
    from scipy import stats

    if not 0 < confidence < 1 or margin <= 0 or not 0 <= p <= 1:
        raise GenerationError("confidence must be in (0, 1), margin > 0 and p in [0, 1]")
    z = float(stats.norm.ppf(1 - (1 - confidence) / 2))
    n0 = z * z * p * (1 - p) / (margin * margin)
    n_fpc = n0 if N is None else n0 / (1 + (n0 - 1) / N)
    return {"N": N, "confidence": confidence, "margin": margin, "p": p, "z": z, "n0": n0,
            "n_exact": n_fpc, "n": int(math.ceil(n_fpc - 1e-9)),
            "formula": "Cochran with finite-population correction n0/(1+(n0-1)/N)"}


def dedup_dbscan(texts: Sequence[str] | pd.Series, *, embeddings: np.ndarray | None = None, eps: float = 0.25,
                 min_samples: int = 1, embedder="tfidf-lsa", medoid_metric: str = "cosine",
                 seed: int = 0) -> pd.DataFrame:
    """Near-duplicate removal: DBSCAN on cosine distances (eps 0.25 = similarity 0.75), min_samples 1.

    Each cluster keeps its medoid: the member with the smallest summed distance to the others
    (``medoid_metric="cosine"``, or ``"euclidean"`` as in the longform-medqa-2024 repository; ties go to the
    first member). Returns one row per text: ``index``, ``text``, ``cluster``, ``cluster_size``,
    ``is_medoid`` (one per cluster and per noise point: ``is_medoid.sum()`` is the number of clusters,
    ``(~is_medoid).sum()`` the number of texts removed).

    Parameters
    ----------
    texts : sequence of str or Series
        The texts.
    embeddings : numpy.ndarray, optional
        One row per text; default ``embedder``'s embeddings.
    eps : float, default 0.25
        DBSCAN radius in cosine distance (0.25 = similarity 0.75).
    min_samples : int, default 1
        DBSCAN's core-point size (1: no noise points).
    embedder : str or object, default "tfidf-lsa"
        A name for :func:`~medeval_kit.embed.get_embedder` or an object with ``fit_transform(texts)``.
    medoid_metric : {"cosine", "euclidean"}, default "cosine"
        The distance the medoid minimises.
    seed : int, default 0
        Random seed of the embedder.

    Returns
    -------
    DataFrame
        One row per text: ``index, text, cluster, cluster_size, is_medoid``.

    Raises
    ------
    GenerationError
        As many embeddings as texts are needed; an unknown ``medoid_metric``.

    Examples
    --------
    >>> d = dedup_dbscan(["chest pain", "chest pain", "fever"], embeddings=[[1, 0], [1, 0], [0, 1]])
    >>> int(d["is_medoid"].sum())
    2
    """
    from sklearn.cluster import DBSCAN

    from medeval_kit.embed import cosine_distance_matrix, get_embedder

    texts = list(texts)
    if embeddings is None:
        emb = get_embedder(embedder, seed=seed) if isinstance(embedder, str) else embedder
        embeddings = emb.fit_transform(texts)
    X = np.asarray(embeddings, dtype=float)
    if len(X) != len(texts):
        raise GenerationError(f"{len(texts)} texts but {len(X)} embeddings")
    D = cosine_distance_matrix(X)
    labels = DBSCAN(eps=eps, min_samples=min_samples, metric="precomputed").fit_predict(D)
    if medoid_metric == "euclidean":
        from sklearn.metrics import pairwise_distances

        M = pairwise_distances(X)
    elif medoid_metric == "cosine":
        M = D
    else:
        raise GenerationError(f"medoid_metric must be 'cosine' or 'euclidean'; not {medoid_metric!r}")
    is_med = np.zeros(len(texts), dtype=bool)
    for lab in np.unique(labels):
        idx = np.flatnonzero(labels == lab)
        if lab == -1:  # noise (only possible with min_samples > 1): every point is its own representative
            is_med[idx] = True
            continue
        sub = M[np.ix_(idx, idx)].sum(axis=1)
        is_med[idx[int(np.argmin(sub))]] = True
    sizes = pd.Series(labels).map(pd.Series(labels).value_counts())
    return pd.DataFrame({"index": np.arange(len(texts)), "text": texts, "cluster": labels,
                         "cluster_size": sizes.to_numpy(), "is_medoid": is_med})


@shared_docs
@takes_columns("item", "question")
def label_difficulty(items: pd.DataFrame, *, model: str | None = None, client=None,
                     cache_mode: str = "use", seed: int = 0, constrained: bool = True, progress: bool = False,
                     columns: Columns = None) -> pd.DataFrame:
    """Label each question basic/intermediate/advanced (1/2/3) with the LLM.

    Parameters
    ----------
    items : DataFrame
        ``item`` and ``question``.
    {model}
        Default ``"local/smollm2-135m"``.
    {client}
    cache_mode : {"use", "record", "replay"}, default "use"
        The LLM cache mode (:mod:`medeval_kit.llm`).
    {seed}
    constrained : bool, default True
        Constrain replies to the JSON schema.
    progress : bool, default False
        Show a progress bar.
    {columns}

    Returns
    -------
    DataFrame
        ``items`` plus ``difficulty`` (1-3, NA when the reply failed), ``difficulty_label``,
        ``difficulty_parse_status``, ``difficulty_model`` and ``difficulty_prompt``.
    """
    from medeval_kit.prompts import load_prompt

    model = model or DEFAULT_MODEL
    p = load_prompt("generate/longform_difficulty")
    client = resolve_client(model, client, cache_mode)
    recs = run_prompt(client, p, [{"question": q} for q in items["question"]], model=model, max_tokens=20,
                      seed=seed, constrained=constrained, metadata=[{"item": i} for i in items["item"]],
                      progress=progress, desc="difficulty")
    out = items.copy()
    lv = [r["parsed"].get("difficulty") if r["parse_status"] == "ok" and r["parsed"] else None for r in recs]
    out["difficulty"] = pd.array([int(v) if v in DIFFICULTY_LEVELS else pd.NA for v in lv], dtype="Int64")
    out["difficulty_label"] = out["difficulty"].map(lambda v: DIFFICULTY_LEVELS.get(v) if pd.notna(v) else None)
    out["difficulty_parse_status"] = [r["parse_status"] for r in recs]
    out["difficulty_model"] = model
    out["difficulty_prompt"] = f"{p.name}@{p.version}"
    return out


@shared_docs
def stratified_batches(items: pd.DataFrame, *, size: int = 100, n_batches: int = 1, strata: str = "difficulty",
                       seed: int = 0, missing: str = "own_stratum") -> pd.DataFrame:
    """Draw ``n_batches`` disjoint batches of ``size`` items, each allocated to strata in proportion
    to their share of ``items`` (largest-remainder rounding), sampled without replacement.

    Parameters
    ----------
    items : DataFrame
        The pool, with the ``strata`` column.
    size : int, default 100
        Items per batch.
    n_batches : int, default 1
        Disjoint batches to draw.
    strata : str, default "difficulty"
        The column holding the stratum (e.g. :func:`label_difficulty`'s ``difficulty``).
    {seed}
    missing : {"own_stratum", "drop"}, default "own_stratum"
        NA strata form a stratum ``<missing>``, or are dropped (counted in ``n_dropped``).

    Returns
    -------
    DataFrame
        The sampled rows with ``batch``, ``stratum`` and ``n_dropped`` (the same on every row).

    Raises
    ------
    GenerationError
        Too few items for the batches.

    Examples
    --------
    >>> import pandas as pd
    >>> pool = pd.DataFrame({"item": range(10), "difficulty": [1] * 6 + [2] * 4})
    >>> stratified_batches(pool, size=5, seed=0)["stratum"].value_counts().sort_index().tolist()
    [3, 2]
    """
    df = items.copy()
    df["stratum"] = df[strata].astype("object").where(df[strata].notna(), "<missing>")
    n_dropped = 0
    if missing == "drop":
        n_dropped = int((df["stratum"] == "<missing>").sum())
        df = df[df["stratum"] != "<missing>"]
    if size * n_batches > len(df):
        raise GenerationError(f"asked for {n_batches} x {size} items but only {len(df)} are available")
    shares = df["stratum"].value_counts(normalize=True).sort_index()
    raw = shares * size
    alloc = np.floor(raw).astype(int)
    rem = int(size - alloc.sum())
    if rem > 0:
        order = (raw - alloc).sort_values(ascending=False, kind="stable")
        for s in order.index[:rem]:
            alloc[s] += 1
    rng = np.random.default_rng(seed)
    pools = {s: list(rng.permutation(df.index[df["stratum"] == s].to_numpy())) for s in alloc.index}
    out = []
    for b in range(n_batches):
        for s, k in alloc.items():
            take, pools[s] = pools[s][:k], pools[s][k:]
            if len(take) < k:
                raise GenerationError(f"stratum {s!r} has too few items for batch {b}")
            out.append(df.loc[take].assign(batch=b))
    return pd.concat(out).reset_index(drop=True).assign(n_dropped=n_dropped)


def count_sentences(text: str | None) -> int:
    """Rough sentence count (splits on ., ! or ? followed by whitespace or the end).

    Parameters
    ----------
    text : str or None
        The text; ``None`` or empty gives 0.

    Returns
    -------
    int
        The number of sentences.

    Examples
    --------
    >>> count_sentences("One. Two! Three?")
    3
    """
    if not text:
        return 0
    import re

    return len([s for s in re.split(r"(?<=[.!?])\s+", str(text).strip()) if s.strip()])


@shared_docs
@takes_columns("item", "question")
def generate_longform_answers(items: pd.DataFrame, *, model: str | None = None, client=None,
                              cache_mode: str = "use", seed: int = 0, max_tokens: int = 120, repeat: int = 0,
                              progress: bool = False, columns: Columns = None) -> pd.DataFrame:
    """Answer each question with the three-sentence prompt.

    Parameters
    ----------
    items : DataFrame
        ``item`` and ``question``.
    {model}
        Default ``"local/smollm2-135m"``.
    {client}
    cache_mode : {"use", "record", "replay"}, default "use"
        The LLM cache mode (:mod:`medeval_kit.llm`).
    {seed}
    max_tokens : int, default 120
        Token limit of an answer.
    repeat : int, default 0
        The value of the ``repeat`` column (run the function again with another ``repeat`` for more answers).
    progress : bool, default False
        Show a progress bar.
    {columns}

    Returns
    -------
    DataFrame
        A ``responses`` table with ``n_sentences`` and ``over_cap`` (more than three sentences), plus provenance.
    """
    from medeval_kit.prompts import load_prompt

    model = model or DEFAULT_MODEL
    p = load_prompt("generate/longform_answer")
    client = resolve_client(model, client, cache_mode)
    recs = run_prompt(client, p, [{"question": q} for q in items["question"]], model=model, max_tokens=max_tokens,
                      seed=seed, constrained=False, schema=None, metadata=[{"item": i} for i in items["item"]],
                      progress=progress, desc="long-form answers")
    rows = []
    for it, r in zip(items["item"], recs):
        ns = count_sentences(r["text"])
        rows.append({"item": str(it), "model": model, "repeat": int(repeat), "text": r["text"],
                     "n_sentences": ns, "over_cap": ns > 3, "parse_status": r["parse_status"],
                     "prompt": r["prompt"], "prompt_version": r["prompt_version"], "seed": int(seed),
                     "cached": r["cached"]})
    return pd.DataFrame(rows)
