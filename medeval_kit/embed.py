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
from medeval_kit.results import Result, result_frame, result_row

__all__ = [
    "EmbedError",
    "TfidfLsaEmbedder",
    "OpenAIEmbedder",
    "get_embedder",
    "cosine_similarity_matrix",
    "cosine_distance_matrix",
    "mean_pairwise_cosine",
    "PairwiseCosine",
]

DEFAULT_OPENAI_EMBEDDING = "text-embedding-3-small"


class EmbedError(MedevalError, ValueError):
    """Embedding failed or was misconfigured."""


class TfidfLsaEmbedder:
    """TF-IDF followed by truncated SVD (LSA), rows l2-normalized. Fitted on the texts it embeds.

    ``n_components`` is capped at ``min(n_texts, n_terms) - 1``; with fewer than 3 texts the
    TF-IDF vectors themselves are returned (dense).

    Parameters
    ----------
    n_components : int, default 100
        LSA dimensions (capped as above).
    seed : int, default 0
        Random seed of the truncated SVD.
    stop_words : str or None, default "english"
        Stop-word list passed to scikit-learn's ``TfidfVectorizer``; ``None`` keeps every word.

    Examples
    --------
    >>> X = TfidfLsaEmbedder(n_components=2).fit_transform(["fever cough", "cough fever", "leg cast"])
    >>> X.shape
    (3, 2)
    """

    name = "tfidf-lsa"

    def __init__(self, n_components: int = 100, *, seed: int = 0, stop_words: str | None = "english") -> None:
        self.n_components, self.seed, self.stop_words = int(n_components), int(seed), stop_words

    def fit_transform(self, texts: Sequence[str]) -> np.ndarray:
        """Fit on ``texts`` and return their embeddings.

        Parameters
        ----------
        texts : sequence of str
            The texts; ``None`` counts as empty.

        Returns
        -------
        numpy.ndarray
            One l2-normalized row per text.
        """
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

    Parameters
    ----------
    model : str, optional
        The OpenAI embedding model, without the ``openai/`` prefix; default ``"text-embedding-3-small"``.
    client : object, optional
        Any object with ``embeddings.create(model=, input=)`` (tests pass a fake); default
        ``openai.OpenAI()``.
    batch_size : int, default 256
        Texts per request.
    """

    def __init__(self, model: str | None = None, *, client=None, batch_size: int = 256) -> None:
        model = model or DEFAULT_OPENAI_EMBEDDING
        self.model, self._client, self.batch_size = model, client, int(batch_size)
        self.name = f"openai/{model}"

    def fit_transform(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` (nothing is fitted; the name matches :class:`TfidfLsaEmbedder`).

        Parameters
        ----------
        texts : sequence of str
            The texts; ``None`` counts as empty.

        Returns
        -------
        numpy.ndarray
            One l2-normalized row per text.
        """
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
    """Return an embedder by name: ``"tfidf-lsa"`` (offline default) or ``"openai/<embedding-model>"``.

    Parameters
    ----------
    name : str, default "tfidf-lsa"
        ``"tfidf-lsa"`` (also ``"tfidf"``, ``"lsa"``) or ``"openai/<embedding-model>"``.
    **kw
        Passed to the embedder's constructor (:class:`TfidfLsaEmbedder`, :class:`OpenAIEmbedder`).

    Returns
    -------
    TfidfLsaEmbedder or OpenAIEmbedder
        An object with ``name`` and ``fit_transform(texts)``.

    Raises
    ------
    EmbedError
        An unknown name.

    Examples
    --------
    >>> get_embedder("tfidf-lsa", n_components=2).name
    'tfidf-lsa'
    """
    if name in ("tfidf-lsa", "tfidf", "lsa"):
        return TfidfLsaEmbedder(**kw)
    if name.startswith("openai/"):
        return OpenAIEmbedder(name.split("/", 1)[1], **kw)
    raise EmbedError(f"unknown embedder {name!r}; use 'tfidf-lsa' or 'openai/<model>'")


def cosine_similarity_matrix(X: np.ndarray) -> np.ndarray:
    """Pairwise cosine similarities of the rows of ``X`` (zero rows have similarity 0).

    Parameters
    ----------
    X : array-like of shape (n, d)
        One embedding per row.

    Returns
    -------
    numpy.ndarray of shape (n, n)
        Similarities clipped to [-1, 1].
    """
    X = np.asarray(X, dtype=float)
    n = np.linalg.norm(X, axis=1, keepdims=True)
    U = X / np.where(n == 0, 1, n)
    return np.clip(U @ U.T, -1.0, 1.0)


def cosine_distance_matrix(X: np.ndarray) -> np.ndarray:
    """``1 - cosine similarity``, clipped at 0, diagonal exactly 0.

    Parameters
    ----------
    X : array-like of shape (n, d)
        One embedding per row.

    Returns
    -------
    numpy.ndarray of shape (n, n)
        Distances in [0, 2].
    """
    D = np.clip(1.0 - cosine_similarity_matrix(X), 0.0, 2.0)
    np.fill_diagonal(D, 0.0)
    return D


class PairwiseCosine(Result):
    """Mean pairwise cosine of a set of embeddings (:func:`mean_pairwise_cosine`).

    Attributes
    ----------
    mean_cosine : float
        The mean over the pairs averaged; NaN when there are none.
    n_texts : int
        Rows of the embedding matrix.
    n_pairs : int
        Pairs averaged.
    pairs : str
        Which pairs were averaged.
    """

    _KEYS = ("mean_cosine", "n_texts", "n_pairs", "pairs")

    def __init__(self, mean_cosine: float, n_texts: int, n_pairs: int, pairs: str) -> None:
        self.mean_cosine, self.n_texts, self.n_pairs, self.pairs = float(mean_cosine), int(n_texts), int(n_pairs), pairs

    def to_frame(self):
        """Return the result as a one-row contract table.

        Returns
        -------
        DataFrame
            ``estimate`` (mean cosine, no CI), ``n_items`` (texts), the contract columns, ``n_pairs``, ``pairs``.
        """
        note = "" if self.n_pairs else "no pairs to average"
        return result_frame([result_row(self.mean_cosine, n_items=self.n_texts, note=note,
                                        n_pairs=self.n_pairs, pairs=self.pairs)])

    def __getitem__(self, key: str):
        """Old dict access (``r["mean_cosine"]``), deprecated: use the attributes."""
        if key not in self._KEYS:
            raise KeyError(key)
        import warnings

        from medeval_kit.deprecation import REMOVED_IN
        warnings.warn(f"mean_pairwise_cosine(...)[{key!r}] is deprecated and will be removed in {REMOVED_IN}; "
                      f"use the attribute .{key} or .to_frame()", DeprecationWarning, stacklevel=2)
        return getattr(self, key)

    def __repr__(self) -> str:
        return (f"PairwiseCosine(mean_cosine={self.mean_cosine:.4g}, n_texts={self.n_texts}, "
                f"n_pairs={self.n_pairs}, pairs={self.pairs!r})")


def mean_pairwise_cosine(X: np.ndarray, *, paper_code_compat: bool = False) -> PairwiseCosine:
    """Mean cosine over distinct pairs (i < j): higher = LESS diverse.

    Parameters
    ----------
    X : array-like of shape (n, d)
        One embedding per row.
    paper_code_compat : bool, default False
        Reproduce the grounded-synth-2025 repository quirk of averaging only the upper-triangle
        entries that are > 0 (dropping negative similarities).

    Returns
    -------
    PairwiseCosine
        ``mean_cosine``, ``n_texts``, ``n_pairs`` (pairs averaged) and ``pairs`` (which pairs);
        ``to_frame()`` gives the contract row. Indexing with the old dict keys still works for one
        release, with a ``DeprecationWarning``.

    Examples
    --------
    >>> round(mean_pairwise_cosine([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]).mean_cosine, 4)
    0.4714
    """
    S = cosine_similarity_matrix(X)
    iu = np.triu_indices(len(S), k=1)
    vals = S[iu]
    if paper_code_compat:
        vals = vals[vals > 0.0]
    mean = float(vals.mean()) if len(vals) else float("nan")
    return PairwiseCosine(mean, int(len(S)), int(len(vals)),
                          "upper-triangle >0 only (paper code)" if paper_code_compat else "all distinct pairs")
