"""Long-form answers (longform-medqa-2024): Cochran sample size, DBSCAN near-duplicate removal, difficulty
labels, difficulty-stratified batches, and answers capped at three sentences."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.generate._common import GenerationError, resolve_client, run_prompt

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
    n0 = 384.15, n = 336.4 -> 337.

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


def label_difficulty(items: pd.DataFrame, *, model: str = "local/smollm2-135m", client=None,
                     cache_mode: str = "use", seed: int = 0, question: str = "question",
                     constrained: bool = True, progress: bool = False) -> pd.DataFrame:
    """Label each question basic/intermediate/advanced (1/2/3); failures give ``difficulty`` NA."""
    from medeval_kit.prompts import load_prompt

    p = load_prompt("generate/longform_difficulty")
    client = resolve_client(model, client, cache_mode)
    recs = run_prompt(client, p, [{"question": q} for q in items[question]], model=model, max_tokens=20,
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


def stratified_batches(items: pd.DataFrame, *, size: int = 100, n_batches: int = 1, strata: str = "difficulty",
                       seed: int = 0, missing: str = "own_stratum") -> pd.DataFrame:
    """Draw ``n_batches`` disjoint batches of ``size`` items, each allocated to strata in proportion
    to their share of ``items`` (largest-remainder rounding), sampled without replacement.

    ``missing="own_stratum"`` keeps NA labels as a stratum ``<missing>``; ``"drop"`` drops them
    (counted in the ``n_dropped`` column). Returns the sampled rows with ``batch``, ``stratum`` and
    ``n_dropped`` (the same on every row).
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
    """Rough sentence count (splits on ., ! or ? followed by whitespace or the end)."""
    if not text:
        return 0
    import re

    return len([s for s in re.split(r"(?<=[.!?])\s+", str(text).strip()) if s.strip()])


def generate_longform_answers(items: pd.DataFrame, *, model: str = "local/smollm2-135m", client=None,
                              cache_mode: str = "use", seed: int = 0, max_tokens: int = 120, repeat: int = 0,
                              question: str = "question", progress: bool = False) -> pd.DataFrame:
    """Answer each question with the three-sentence prompt; return a ``responses`` table with
    ``n_sentences`` and ``over_cap`` (more than three sentences), plus provenance."""
    from medeval_kit.prompts import load_prompt

    p = load_prompt("generate/longform_answer")
    client = resolve_client(model, client, cache_mode)
    recs = run_prompt(client, p, [{"question": q} for q in items[question]], model=model, max_tokens=max_tokens,
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
