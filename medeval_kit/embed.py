"""Text embedders: offline TF-IDF + LSA by default, OpenAI embeddings pluggable; cosine helpers.

The grounded-generation paper (grounded-synth-2025) measures question diversity with all-MiniLM-L6-v2;
that model is not bundled, so the default here is an offline TF-IDF/LSA embedder whose
numbers are *not* comparable in level to MiniLM cosines (state the embedder with every result).

>>> e = get_embedder("tfidf-lsa", n_components=2)
>>> X = e.fit_transform(["fever and cough", "cough with fever", "broken leg cast"])
>>> X.shape
(3, 2)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from medeval_kit.errors import MedevalError

__all__ = [
    "EmbedError",
    "TfidfLsaEmbedder",
    "OpenAIEmbedder",
    "get_embedder",
    "cosine_similarity_matrix",
    "cosine_distance_matrix",
    "mean_pairwise_cosine",
]


class EmbedError(MedevalError, ValueError):
    """Embedding failed or was misconfigured."""


class TfidfLsaEmbedder:
    """TF-IDF followed by truncated SVD (LSA), rows l2-normalised. Fitted on the texts it embeds.

    ``n_components`` is capped at ``min(n_texts, n_terms) - 1``; with fewer than 3 texts the
    TF-IDF vectors themselves are returned (dense).
    """

    name = "tfidf-lsa"

    def __init__(self, n_components: int = 100, *, seed: int = 0, stop_words: str | None = "english") -> None:
        self.n_components, self.seed, self.stop_words = int(n_components), int(seed), stop_words

    def fit_transform(self, texts: Sequence[str]) -> np.ndarray:
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.preprocessing import normalize

        texts = ["" if t is None else str(t) for t in texts]
        if not texts:
            raise EmbedError("no texts to embed")
        try:
            X = TfidfVectorizer(stop_words=self.stop_words, sublinear_tf=True).fit_transform(texts)
        except ValueError:  # empty vocabulary (all stop words / empty)
            return np.zeros((len(texts), 1))
        k = min(self.n_components, min(X.shape) - 1)
        if k < 2:
            return normalize(X).toarray()
        Z = TruncatedSVD(n_components=k, random_state=self.seed).fit_transform(X)
        return normalize(Z)

    embed = fit_transform


class OpenAIEmbedder:
    """OpenAI embeddings (e.g. ``text-embedding-3-small``). Needs ``openai`` and network access.

    ``client`` may be any object with ``embeddings.create(model=, input=)`` (tests pass a fake).
    """

    def __init__(self, model: str = "text-embedding-3-small", *, client=None, batch_size: int = 256) -> None:
        self.model, self._client, self.batch_size = model, client, int(batch_size)
        self.name = f"openai/{model}"

    def fit_transform(self, texts: Sequence[str]) -> np.ndarray:
        client = self._client
        if client is None:
            try:
                import openai
            except ImportError as exc:  # pragma: no cover
                raise EmbedError("OpenAI embeddings need the 'openai' package: pip install openai") from exc
            client = openai.OpenAI()
        out = []
        texts = ["" if t is None else str(t) for t in texts]
        for i in range(0, len(texts), self.batch_size):
            resp = client.embeddings.create(model=self.model, input=texts[i:i + self.batch_size])
            out.extend(d.embedding for d in resp.data)
        X = np.asarray(out, dtype=float)
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        return X / np.where(norms == 0, 1, norms)

    embed = fit_transform


def get_embedder(name: str = "tfidf-lsa", **kw):
    """``"tfidf-lsa"`` (offline default) or ``"openai/<embedding-model>"``."""
    if name in ("tfidf-lsa", "tfidf", "lsa"):
        return TfidfLsaEmbedder(**kw)
    if name.startswith("openai/"):
        return OpenAIEmbedder(name.split("/", 1)[1], **kw)
    raise EmbedError(f"unknown embedder {name!r}; use 'tfidf-lsa' or 'openai/<model>'")


def cosine_similarity_matrix(X: np.ndarray) -> np.ndarray:
    """Pairwise cosine similarities of the rows of ``X`` (zero rows have similarity 0)."""
    X = np.asarray(X, dtype=float)
    n = np.linalg.norm(X, axis=1, keepdims=True)
    U = X / np.where(n == 0, 1, n)
    return np.clip(U @ U.T, -1.0, 1.0)


def cosine_distance_matrix(X: np.ndarray) -> np.ndarray:
    """``1 - cosine similarity``, clipped at 0, diagonal exactly 0."""
    D = np.clip(1.0 - cosine_similarity_matrix(X), 0.0, 2.0)
    np.fill_diagonal(D, 0.0)
    return D


def mean_pairwise_cosine(X: np.ndarray, *, paper_code_compat: bool = False) -> dict:
    """Mean cosine over distinct pairs (i < j): higher = LESS diverse.

    ``paper_code_compat=True`` reproduces the grounded-synth-2025 repository quirk of averaging only the
    upper-triangle entries that are > 0 (dropping negative similarities). Returns a dict with
    ``mean_cosine``, ``n_texts``, ``n_pairs`` (pairs averaged) and ``pairs`` (which pairs).
    """
    S = cosine_similarity_matrix(X)
    iu = np.triu_indices(len(S), k=1)
    vals = S[iu]
    if paper_code_compat:
        vals = vals[vals > 0.0]
    mean = float(vals.mean()) if len(vals) else float("nan")
    return {"mean_cosine": mean, "n_texts": int(len(S)), "n_pairs": int(len(vals)),
            "pairs": "upper-triangle >0 only (paper code)" if paper_code_compat else "all distinct pairs"}
