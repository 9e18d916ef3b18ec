"""The kappa paradox: high agreement with kappa near 0 (prevalence and bias indices), and kappa's wording."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.agreement.consensus import majority_vote
from medeval_kit.agreement.data import AgreementError, check_overlap, prepare
from medeval_kit.agreement.forms import chance_corrected
from medeval_kit.agreement.panel import humans_from_kind
from medeval_kit.columns import Columns, takes_columns
from medeval_kit.results import result_frame

__all__ = ["prevalence_bias_indices", "landis_koch", "kappa_from_p_c", "LANDIS_KOCH"]

LANDIS_KOCH = [(0.20, "slight"), (0.40, "fair"), (0.60, "moderate"), (0.80, "substantial"), (np.inf, "almost perfect")]
"""Upper bounds of the Landis & Koch (1977) bands (below 0: poor)."""
_NAN = float("nan")


def _indices(cat, T: np.ndarray, n: int) -> dict:
    """PA, kappa, PABAK, kappa_max and (2 x 2) the cells, prevalence and bias indices of one table."""
    P = T / n
    po = np.trace(P)
    r, c = P.sum(1), P.sum(0)
    pe = r @ c
    k = len(T)
    row = dict(category=cat, n_items=n, percent_agreement=po, cohen_kappa=float(chance_corrected(po, pe)),
               pabak=(k * po - 1) / (k - 1), kappa_max=float(chance_corrected(np.minimum(r, c).sum(), pe)))
    if k == 2:
        a, b, c_, d = T[0, 0], T[0, 1], T[1, 0], T[1, 1]
        row.update(a=int(a), b=int(b), c=int(c_), d=int(d), prevalence_index=abs(a - d) / n,
                   bias_index=abs(b - c_) / n)
    return row


def _one_vs_rest(T: np.ndarray, k: int) -> np.ndarray:
    """The 2 x 2 table of category ``k`` against every other category."""
    sel = np.arange(len(T)) == k
    return np.array([[T[np.ix_(sel, sel)].sum(), T[np.ix_(sel, ~sel)].sum()],
                     [T[np.ix_(~sel, sel)].sum(), T[np.ix_(~sel, ~sel)].sum()]])


def _each_judge(df, judges, humans, reference, *, categories, tie_policy) -> pd.DataFrame:
    """Every judge against the majority of ``humans`` (or the rater ``reference``)."""
    item, rater, label = "item", "rater", "label"
    if reference is None:
        hs = list(humans) if humans is not None else humans_from_kind(df, rater)
        cons = majority_vote(df, raters=hs, categories=categories, tie_policy=tie_policy, name="consensus")
        ref_df, ref = cons[[item, rater, label]], "consensus"
    else:
        ref_df, ref = df[df[rater] == reference][[item, rater, label]], reference
    frames = []
    for j in judges:
        both = pd.concat([ref_df, df[df[rater] == j][[item, rater, label]]], ignore_index=True)
        frames.append(prevalence_bias_indices(both, [ref, j], categories=categories))
    return pd.concat(frames, ignore_index=True)


@takes_columns("item", "rater", "label", "rater_kind")
def prevalence_bias_indices(
    df: pd.DataFrame,
    raters: Sequence[str] | None = None,
    *,
    columns: Columns = None,
    categories: Sequence | None = None,
    judges: Sequence[str] | None = None,
    humans: Sequence[str] | None = None,
    reference: str | None = None,
    tie_policy: str = "na",
) -> pd.DataFrame:
    """Explain the kappa paradox (Byrt, Bishop & Carlin 1993) for two raters.

    One row per category (that category vs the rest, a 2x2 table a, b, c, d) plus an
    ``overall`` row: PA, kappa, PABAK, the prevalence index |a - d|/n, the bias index |b - c|/n
    and kappa_max (the largest kappa the two raters' marginals allow).

    Parameters
    ----------
    df : DataFrame
        Long annotations (``item``, ``rater``, ``label`` [, ``rater_kind``]).
    raters : sequence of str, optional
        The two raters; default the only two in ``df``.
    columns : mapping of str to str, optional
        Your column names as ``{canonical name: your column}``, e.g. ``{"item": "case_id"}``.
    categories : sequence, optional
        The declared labels.
    judges : sequence of str, optional
        Instead of two raters: each judge against the majority of ``humans`` (or the rater ``reference``).
    humans : sequence of str, optional
        The humans whose majority is the reference; default the ``rater_kind`` humans.
    reference : str, optional
        A single reference rater.
    tie_policy : {"na", "first", "random"}, default "na"
        What a tied majority gives.

    Returns
    -------
    DataFrame
        ``raters, category``, the result contract with Cohen's kappa of that table as ``estimate``
        (no CI: a description), then ``percent_agreement, cohen_kappa, pabak, kappa_max`` and, for 2 x 2
        tables, ``a, b, c, d, prevalence_index, bias_index``.

    Raises
    ------
    AgreementError
        Not exactly two raters, or two raters without a shared item.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3, 4, 4], "rater": ["a", "b"] * 4,
    ...                   "label": ["y", "y", "y", "y", "y", "n", "n", "n"]})
    >>> prevalence_bias_indices(t)["category"].tolist()
    ['n', 'y', 'overall']
    """
    if judges is not None:
        return _each_judge(df, judges, humans, reference, categories=categories, tie_policy=tie_policy)
    data = prepare(df, raters=raters, categories=categories)
    if len(data.raters) != 2:
        raise AgreementError(f"prevalence and bias indices compare two raters; got {data.raters}")
    check_overlap(data, *data.raters)
    x, y = data.codes[:, 0], data.codes[:, 1]
    ok = (x >= 0) & (y >= 0)
    T = np.zeros((data.K, data.K))
    np.add.at(T, (x[ok], y[ok]), 1)
    n = int(ok.sum())
    n_failed = int(((x >= 0) | (y >= 0)).sum()) - n  # items only one of the two labelled
    rows = [_indices(cat, _one_vs_rest(T, k), n) for k, cat in enumerate(data.categories)]
    rows = [{**r, "raters": "|".join(map(str, data.raters)), "estimate": r["cohen_kappa"], "n_failed": n_failed,
             "note": "" if np.isfinite(r["cohen_kappa"]) else "undefined: chance agreement is 1"}
            for r in rows + [_indices("overall", T, n)]]
    return result_frame(rows, keys=["raters", "category"])


def landis_koch(estimate):
    """Landis & Koch (1977) wording for a kappa-type value (a word; NaN -> NA). Never changes numbers.

    < 0 poor, 0-0.20 slight, 0.21-0.40 fair, 0.41-0.60 moderate, 0.61-0.80 substantial, > 0.80 almost perfect.

    Parameters
    ----------
    estimate : float or sequence of float
        One value, or many (a Series, array, list).

    Returns
    -------
    str or Series
        The word (``pd.NA`` for NaN); a Series of words for many values.

    Examples
    --------
    >>> landis_koch(0.226), landis_koch(0.667)
    ('fair', 'substantial')
    """
    def word(v):
        if v is None or pd.isna(v):
            return pd.NA
        if v < 0:
            return "poor"
        return next(w for hi, w in LANDIS_KOCH if v <= hi)

    if isinstance(estimate, (pd.Series, np.ndarray, list, tuple)):
        return pd.Series([word(v) for v in estimate], index=estimate.index if isinstance(estimate, pd.Series) else None,
                         dtype=object)
    return word(estimate)


def kappa_from_p_c(p_observed, p_chance):
    """kappa = (P - C) / (1 - C) from printed observed and chance agreement (NaN when C = 1).

    Parameters
    ----------
    p_observed, p_chance : float or array_like
        Observed and chance agreement.

    Returns
    -------
    float or ndarray
        The chance-corrected value, elementwise.

    Examples
    --------
    >>> round(kappa_from_p_c(0.8, 0.5), 6)
    0.6
    """
    p, c = np.asarray(p_observed, dtype=float), np.asarray(p_chance, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(c < 1, (p - c) / (1 - c), np.nan)
    return out if out.ndim else float(out)
