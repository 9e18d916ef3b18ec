"""Local few-shot retrievers (TF-IDF cosine or Okapi BM25) built on scikit-learn.

MCQG-SRefine retrieves few-shot examples with ColBERT over MedQA; ColBERT is not available
offline, so :class:`Retriever` offers a lexical stand-in. The bank is a DataFrame (e.g. the
bundled MedQG USMLE questions); ``text`` names the column(s) indexed.

>>> import pandas as pd
>>> bank = pd.DataFrame({"id": ["a", "b", "c"],
...                      "text": ["sepsis lactate fluids", "asthma inhaler wheeze", "renal failure dialysis"]})
>>> r = Retriever(method="bm25").fit(bank, text="text", id="id")
>>> r.query("wheeze and asthma", k=1)["id"].tolist()
['b']
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.errors import MedevalError

__all__ = ["Retriever", "RetrieverError", "METHODS"]

METHODS = ("tfidf", "bm25")


class RetrieverError(MedevalError, ValueError):
    """The retriever was misconfigured or queried before fit()."""


class Retriever:
    """TF-IDF (cosine) or BM25 retriever over the rows of a DataFrame.

    Parameters
    ----------
    method : {"bm25", "tfidf"}, default "bm25"
        ``"tfidf"`` (cosine of l2-normalized TF-IDF vectors) or ``"bm25"`` (Okapi BM25 with
        parameters ``k1`` and ``b``, idf ``log(1 + (N - df + 0.5) / (df + 0.5))``).
    k1 : float, default 1.5
        BM25 term-frequency saturation.
    b : float, default 0.75
        BM25 length normalisation.
    ngram_range : tuple of int, default (1, 1)
        Passed to scikit-learn's vectorizers.
    stop_words : str or None, default "english"
        Passed to scikit-learn's vectorizers; ``None`` keeps every word.

    Raises
    ------
    RetrieverError
        An unknown ``method``.

    Examples
    --------
    >>> import pandas as pd
    >>> bank = pd.DataFrame({"text": ["sepsis lactate", "asthma wheeze"]})
    >>> Retriever("tfidf").fit(bank).query("wheeze", k=1)["text"].tolist()
    ['asthma wheeze']
    """

    def __init__(self, method: str = "bm25", *, k1: float = 1.5, b: float = 0.75,
                 ngram_range: tuple[int, int] = (1, 1), stop_words: str | None = "english") -> None:
        if method not in METHODS:
            raise RetrieverError(f"method must be one of {METHODS}; not {method!r}")
        self.method, self.k1, self.b = method, float(k1), float(b)
        self.ngram_range, self.stop_words = ngram_range, stop_words
        self._bank: pd.DataFrame | None = None

    def fit(self, bank: pd.DataFrame, *, text: str | Sequence[str] = "text", id: str | None = None) -> Retriever:
        """Index ``bank``.

        Parameters
        ----------
        bank : DataFrame
            The examples, one per row.
        text : str or sequence of str, default "text"
            The column, or columns joined with spaces, to index.
        id : str, optional
            The column identifying a row (used by ``query(exclude=...)``).

        Returns
        -------
        Retriever
            ``self``, fitted.

        Raises
        ------
        RetrieverError
            A named column is missing or the bank is empty.
        """
        from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

        cols = [text] if isinstance(text, str) else list(text)
        missing = [c for c in cols + ([id] if id else []) if c not in bank.columns]
        if missing:
            raise RetrieverError(f"bank has no column(s) {missing}; present: {list(bank.columns)}")
        if len(bank) == 0:
            raise RetrieverError("the bank is empty (0 rows); pass at least one example")
        docs = bank[cols].fillna("").astype(str).agg(" ".join, axis=1).tolist()
        self._bank = bank.reset_index(drop=True)
        self._id = id
        if self.method == "tfidf":
            self._vec = TfidfVectorizer(ngram_range=self.ngram_range, stop_words=self.stop_words, sublinear_tf=True)
            self._X = self._vec.fit_transform(docs)
        else:
            self._vec = CountVectorizer(ngram_range=self.ngram_range, stop_words=self.stop_words)
            tf = self._vec.fit_transform(docs).tocsr().astype(float)
            n = tf.shape[0]
            df = np.asarray((tf > 0).sum(axis=0)).ravel()
            self._idf = np.log1p((n - df + 0.5) / (df + 0.5))
            dl = np.asarray(tf.sum(axis=1)).ravel()
            avg = dl.mean() if dl.mean() > 0 else 1.0
            # BM25 term weight: tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
            tf = tf.tocoo()
            denom = tf.data + self.k1 * (1 - self.b + self.b * dl[tf.row] / avg)
            w = tf.data * (self.k1 + 1) / denom
            from scipy.sparse import csr_matrix

            self._X = csr_matrix((w, (tf.row, tf.col)), shape=tf.shape)
        return self

    def scores(self, query: str) -> np.ndarray:
        """Score of every bank row for ``query`` (higher = more relevant).

        Parameters
        ----------
        query : str
            The query text.

        Returns
        -------
        numpy.ndarray
            One score per bank row.
        """
        if self._bank is None:
            raise RetrieverError("call fit(bank, text=...) before querying")
        if self.method == "tfidf":
            q = self._vec.transform([query])
            return np.asarray((self._X @ q.T).todense()).ravel()
        q = (self._vec.transform([query]) > 0).astype(float)
        q = q.multiply(self._idf.reshape(1, -1))
        return np.asarray((self._X @ q.T).todense()).ravel()

    def query(self, query: str, k: int = 3, *, exclude: Sequence | None = None,
              exclude_col: str | None = None) -> pd.DataFrame:
        """Return the top-``k`` bank rows with ``score`` and ``rank`` (1 = best) columns.

        Ties keep bank order (stable sort).

        Parameters
        ----------
        query : str
            The query text.
        k : int, default 3
            Rows to return.
        exclude : sequence, optional
            Values whose rows are dropped, e.g. the examples built from the same clinical note.
        exclude_col : str, optional
            The column ``exclude`` is matched against; default the ``id`` column given to :meth:`fit`.

        Returns
        -------
        DataFrame
            The bank's rows, best first, plus ``score``, ``rank`` and ``method``.
        """
        s = self.scores(query)
        bank = self._bank
        keep = np.ones(len(bank), dtype=bool)
        if exclude is not None:
            col = exclude_col or self._id
            if col is None:
                raise RetrieverError("exclude needs exclude_col= or an id column given to fit()")
            keep = ~bank[col].isin(list(exclude)).to_numpy()
        idx = np.flatnonzero(keep)
        order = idx[np.argsort(-s[idx], kind="stable")][: int(k)]
        out = bank.iloc[order].copy()
        out["score"] = s[order]
        out["rank"] = np.arange(1, len(out) + 1)
        out["method"] = self.method
        return out.reset_index(drop=True)
