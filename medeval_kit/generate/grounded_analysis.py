"""Statistics on grounded generation results (grounded-synth-2025): benchmark accuracy, Pearson and Spearman
against a human benchmark, Spearman's no-ties identity, question diversity, judge-score quality and
the correct-letter balance. Every statistic row follows :mod:`medeval_kit.results`: ``estimate,
ci_low, ci_high, ci_method, n_items, n_failed, note`` plus domain extras."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from medeval_kit.bias.letters import letter_balance
from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.generate._common import GenerationError, legacy_keywords
from medeval_kit.generate.cloze import accuracy_by
from medeval_kit.results import result_frame, result_row
from medeval_kit.stats import fisher_z_interval, mean_interval

__all__ = [
    "question_diversity",
    "accuracy_table",
    "benchmark_correlation",
    "spearman_from_rank_differences",
    "spearman_identity_check",
    "grounded_quality_summary",
    "grounded_letter_balance",
]

#: Fisher-z variance factor of each correlation (Spearman: Fieller et al. 1957)
CORRELATIONS = {"pearson": (sps.pearsonr, 1.0, "Fisher z"), "spearman": (sps.spearmanr, 1.06, "Fisher z (Fieller 1.06)")}


# --------------------------------------------------------------------------- diversity
def _embedder(embedder, n_components: int, seed: int):
    """The embedder object: a name for :func:`~medeval_kit.embed.get_embedder` (TF-IDF/LSA gets
    ``n_components`` and ``seed``) or an object with ``fit_transform(texts)``."""
    from medeval_kit.embed import get_embedder

    if not isinstance(embedder, str):
        return embedder
    if embedder.startswith(("tfidf", "lsa")):
        return get_embedder(embedder, n_components=n_components, seed=seed)
    return get_embedder(embedder)


@shared_docs
@legacy_keywords(text="columns:question")
@takes_columns("question")
def question_diversity(items: pd.DataFrame, *, by: str | Sequence[str] | None = "generator",
                       embedder="tfidf-lsa", paper_code_compat: bool = False, fit_on: str = "all",
                       n_components: int = 100, seed: int = 0, columns: Columns = None) -> pd.DataFrame:
    """Mean pairwise cosine of question embeddings per group (higher = LESS diverse).

    Parameters
    ----------
    items : DataFrame
        ``question`` and the ``by`` columns, one row per question.
    by : str or sequence of str or None, default "generator"
        The column(s) to group by; ``None`` for one group.
    embedder : str or object, default "tfidf-lsa"
        A name for :func:`~medeval_kit.embed.get_embedder` or an object with ``fit_transform(texts)``.
    paper_code_compat : bool, default False
        Average only positive similarities, as the grounded-synth-2025 code does
        (:func:`~medeval_kit.embed.mean_pairwise_cosine`).
    fit_on : {"all", "group"}, default "all"
        ``"all"`` fits TF-IDF/LSA once on every question (one shared space, comparable across groups);
        ``"group"`` fits per group.
    n_components : int, default 100
        LSA dimensions of the TF-IDF/LSA embedder.
    {seed}
    {columns}

    Returns
    -------
    DataFrame
        One row per group: ``estimate`` = mean cosine (no CI), ``n_items`` = texts, ``n_failed`` = rows
        with NA/empty text (excluded), ``n_pairs`` and ``pairs`` (which pairs were averaged),
        ``embedder``, ``fit_on``. The old keyword ``text=`` still works for one release (use ``columns=``).
    """
    from medeval_kit.embed import PairwiseCosine, mean_pairwise_cosine

    emb = _embedder(embedder, n_components, seed)
    name = getattr(emb, "name", type(emb).__name__)
    df = items.reset_index(drop=True)
    text = "question"
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
            PairwiseCosine(np.nan, len(gi), 0, "")
        key = key if isinstance(key, tuple) else (key,)
        rows.append(result_row(r.mean_cosine, n_items=r.n_texts, n_failed=int(len(g) - len(gi)),
                               note="" if len(gi) >= 2 else "fewer than 2 texts", **dict(zip(keys, key)),
                               n_pairs=r.n_pairs, pairs=r.pairs, embedder=name, fit_on=fit_on))
    return result_frame(rows, keys=keys)


# --------------------------------------------------------------------------- accuracy
@shared_docs
@takes_columns("model", "correct")
def accuracy_table(responses: pd.DataFrame, *, by: Sequence[str] = ("model", "format"),
                   columns: Columns = None) -> pd.DataFrame:
    """Accuracy per group with a Wilson 95% CI (:func:`~medeval_kit.generate.accuracy_by`).

    Parameters
    ----------
    responses : DataFrame
        One row per reply: the ``by`` columns and ``correct``, the boolean outcome
        (:func:`~medeval_kit.generate.evaluate_benchmark`).
    by : sequence of str, default ("model", "format")
        The columns to group by.
    {columns}

    Returns
    -------
    DataFrame
        One row per group: ``estimate`` over the ``n_items`` scored replies; the ``n_failed`` replies
        with NA correctness are excluded there and counted as NOT correct in ``accuracy_all``
        (accuracy over every reply).

    Examples
    --------
    >>> import pandas as pd
    >>> r = pd.DataFrame({"model": "m", "format": "mcq", "correct": [True, False, None]})
    >>> accuracy_table(r)[["estimate", "accuracy_all"]].values.tolist()
    [[0.5, 0.3333333333333333]]
    """
    out = accuracy_by(responses, by=list(by), correct="correct")
    n_correct = (out["estimate"] * out["n_items"]).round().fillna(0)
    out["accuracy_all"] = n_correct / (out["n_items"] + out["n_failed"])
    return out


# --------------------------------------------------------------------------- correlations
@shared_docs
@legacy_keywords(level="unit", dataset="columns:dataset")
@takes_columns("model", "dataset")
def benchmark_correlation(acc: pd.DataFrame, *, x: str = "human", y: str = "synthetic", unit: str | None = None,
                          columns: Columns = None) -> pd.DataFrame:
    """Pearson and Spearman between human-benchmark (``x``) and synthetic-benchmark (``y``) accuracy.

    CIs: Fisher z (Spearman with the Fieller 1.06 variance factor).

    Parameters
    ----------
    acc : DataFrame
        One row per (``model``, ``dataset``) with the accuracies in columns ``x`` and ``y``; the
        ``dataset`` column is optional.
    x : str, default "human"
        The column of the human benchmark's accuracy.
    y : str, default "synthetic"
        The column of the synthetic benchmark's accuracy.
    unit : {"model", "pairs"}, optional
        The unit correlated (default ``"model"``): ``"model"`` averages each model over datasets first (paper's Spearman:
        one point per evaluated model; unweighted mean over datasets); ``"pairs"`` uses every
        (model, dataset) point (paper's Pearson). ``level=`` before (deprecated).
    {columns}

    Returns
    -------
    DataFrame
        Two rows (``statistic`` pearson, spearman) with ``unit``: ``estimate`` = the correlation,
        ``n_items`` = the points correlated, ``n_failed`` = input rows dropped for a missing accuracy,
        ``p_value``.

    Raises
    ------
    GenerationError
        An unknown ``unit``.

    Examples
    --------
    >>> import pandas as pd
    >>> acc = pd.DataFrame({"model": list("abcd"), "human": [0.5, 0.6, 0.7, 0.9], "synthetic": [0.4, 0.6, 0.65, 0.8]})
    >>> float(benchmark_correlation(acc).set_index("statistic").loc["spearman", "estimate"])
    1.0
    """
    unit = unit or "model"
    model, dataset = "model", "dataset" if "dataset" in acc.columns else None
    d = acc[[c for c in (model, dataset, x, y) if c]].dropna(subset=[x, y])
    n_failed = int(len(acc) - len(d))
    if unit == "model":
        d = d.groupby(model, sort=True)[[x, y]].mean()
    elif unit != "pairs":
        raise GenerationError(f"unit must be 'model' or 'pairs'; not {unit!r}")
    n = len(d)
    rows = []
    for name, (fn, variance, ci_method) in CORRELATIONS.items():
        if n >= 3 and d[x].nunique() > 1 and d[y].nunique() > 1:
            r, p = (float(v) for v in fn(d[x], d[y]))
            note = ""
        else:
            r, p, note = np.nan, np.nan, "fewer than 3 points or a constant column"
        ci = fisher_z_interval(r, n, variance=variance) if abs(r) < 1 else (math.nan, math.nan)
        rows.append(result_row(r, ci, ci_method, n_items=n, n_failed=n_failed, note=note, statistic=name,
                               unit=unit, p_value=p))
    return result_frame(rows, keys=["statistic", "unit"])


def spearman_from_rank_differences(sum_d2: float, n: int) -> float:
    """Spearman's rho from the no-ties identity ``1 - 6 * sum(d^2) / (n (n^2 - 1))``.

    Parameters
    ----------
    sum_d2 : float
        The sum of squared rank differences.
    n : int
        The number of ranked units.

    Returns
    -------
    float
        rho; NaN when ``n < 2``.

    Examples
    --------
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

    Parameters
    ----------
    values : mapping of str to float
        ``{quantity name: printed rho}``.
    n : int
        The number of ranked units.

    Returns
    -------
    DataFrame
        One row per quantity: ``quantity, rho, n, sum_d2, sum_d2_even, rho_identity, rho_scipy``.

    Examples
    --------
    >>> spearman_identity_check({"rho": 0.9066}, 13)[["sum_d2", "rho_scipy"]].round(4).values.tolist()
    [[34.0, 0.9066]]
    """
    rows = []
    for name, rho in values.items():
        sd2 = int(round((1 - rho) * n * (n * n - 1) / 6))
        ours = spearman_from_rank_differences(sd2, n)
        perm = _perm_with_sum_d2(n, sd2)
        sc = float(sps.spearmanr(np.arange(n), perm)[0]) if perm is not None else np.nan
        rows.append({"quantity": name, "rho": rho, "n": n, "sum_d2": sd2, "sum_d2_even": sd2 % 2 == 0,
                     "rho_identity": ours, "rho_scipy": sc})
    return pd.DataFrame(rows, columns=["quantity", "rho", "n", "sum_d2", "sum_d2_even", "rho_identity", "rho_scipy"])


# --------------------------------------------------------------------------- judge scores and letters
@shared_docs
@takes_columns("item", "criterion", "score")
def grounded_quality_summary(items: pd.DataFrame, judgments: pd.DataFrame, *,
                             by: Sequence[str] = ("generator", "format"), columns: Columns = None) -> pd.DataFrame:
    """Mean 1-10 judge score per group and criterion with a t-based 95% CI.

    Parameters
    ----------
    items : DataFrame
        ``item`` and the ``by`` columns.
    judgments : DataFrame
        ``item, criterion, score`` (e.g. :func:`~medeval_kit.generate.qc_judge`).
    by : sequence of str, default ("generator", "format")
        The columns of ``items`` to group by.
    {columns}

    Returns
    -------
    DataFrame
        One row per (``by``, ``criterion``): ``estimate`` = mean, the t interval, ``n_items`` = scores,
        ``n_failed`` = missing scores (excluded), ``sd``.
    """
    j = judgments.merge(items[["item", *by]], on="item", how="left")
    rows = []
    for key, g in j.groupby([*by, "criterion"], sort=True):
        s = g["score"].dropna().to_numpy(float)
        n = len(s)
        lo, hi, _, note = mean_interval(s, method="t") if n else (np.nan, np.nan, "t", "no scores")
        rows.append(result_row(float(s.mean()) if n else np.nan, (lo, hi), "t 95%", n_items=n,
                               n_failed=int(g["score"].isna().sum()), note=note,
                               **dict(zip([*by, "criterion"], key)), sd=float(s.std(ddof=1)) if n > 1 else np.nan))
    return result_frame(rows, keys=[*by, "criterion"])


def grounded_letter_balance(items: pd.DataFrame, *, by: str = "generator") -> pd.DataFrame:
    """Correct-letter balance of the MCQ items per generator (uniform over A-D).

    Parameters
    ----------
    items : DataFrame
        Generated items with ``format``, ``answer`` (the correct letter) and the ``by`` column.
    by : str, default "generator"
        The column to group by.

    Returns
    -------
    DataFrame
        The table of :func:`medeval_kit.bias.letter_balance` over the ``format == "mcq"`` rows, letters A-D.
    """
    return letter_balance(items[items["format"] == "mcq"], letters="ABCD", by=by)
