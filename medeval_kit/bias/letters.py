"""Correct-letter balance of multiple-choice questions: the one implementation in the package.

The null hypothesis is stated once, here: **each item's correct letter is uniform over the options
that item offers**. An item offering k options puts 1/k on each of its letters; the expected share
of a letter in a group is the mean of those probabilities over the group's valid items. With one
fixed option set (``letters="ABCD"``) this is the familiar uniform 1/k.
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping, Sequence, Sized

import numpy as np
import pandas as pd
from scipy import stats as sps

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.results import result_frame, result_row
from medeval_kit.stats import proportion_ci

__all__ = ["LETTERS", "letter_balance"]

#: option letters in order; an item with k options offers ``LETTERS[:k]``
LETTERS = string.ascii_uppercase

CI_METHOD = "exact binomial (Clopper-Pearson)"
_VARYING_NOTE = "options differ between items: no single-letter binomial test (see p_uniform)"


def _norm_letter(v) -> str | None:
    """The answer as an upper-case letter string, None for NA."""
    return None if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v).strip().upper()


def _offered(v) -> tuple[str, ...] | None:
    """The letters one item offers from its ``options`` cell: a count k, a mapping keyed by letter, or a
    sized collection of k options (its first k letters); None when unknown."""
    if isinstance(v, Mapping):
        return tuple(sorted(_norm_letter(k) for k in v))
    if isinstance(v, (str, bytes)):
        return None
    if isinstance(v, Sized):
        return tuple(LETTERS[: len(v)])
    if v is None or pd.isna(v):
        return None
    return tuple(LETTERS[: int(v)])


def _offered_column(df: pd.DataFrame, answer: pd.Series, letters, options: str | None) -> pd.Series:
    """Per item, the tuple of letters it offers (None when unknown)."""
    if options is not None:
        return df[options].map(_offered)
    if letters is not None:
        fixed = tuple(_norm_letter(x) for x in letters)
    else:
        keyed = [x for x in answer.dropna() if len(x) == 1 and x in LETTERS]
        fixed = tuple(LETTERS[: LETTERS.index(max(keyed)) + 1]) if keyed else ()
    return pd.Series([fixed] * len(df), index=df.index, dtype=object)


def _group_rows(key: dict, ans: pd.Series, offered: pd.Series, confidence: float) -> list[dict]:
    """The rows of one group: one per letter offered by any of its valid items."""
    ok = np.array([o is not None and a is not None and a in o for a, o in zip(ans, offered)], dtype=bool)
    n, n_failed = int(ok.sum()), int((~ok).sum())
    lets = sorted({x for o in offered[ok] for x in o})
    prob = np.array([[(x in o) / len(o) for x in lets] for o in offered[ok]]).reshape(n, len(lets))
    counts = np.array([int((ans[ok] == x).sum()) for x in lets])
    expected = prob.mean(axis=0) if n else np.full(len(lets), math.nan)
    chi2, p_uni = (sps.chisquare(counts, expected * n) if n and len(lets) > 1 else (math.nan, math.nan))
    varying = n > 0 and bool(np.any(prob.max(axis=0) != prob.min(axis=0)))
    rows = []
    for x, c, e in zip(lets, counts, expected):
        p_letter = math.nan if varying or not n else float(sps.binomtest(int(c), n, float(e)).pvalue)
        rows.append(result_row(c / n if n else math.nan, proportion_ci(int(c), n, confidence=confidence),
                               CI_METHOD, n_items=n, n_failed=n_failed, note=_VARYING_NOTE if varying else "",
                               **key, letter=x, count=int(c), expected=float(e), p_letter=p_letter,
                               chi2=float(chi2), p_uniform=float(p_uni)))
    return rows


@shared_docs
@takes_columns("answer")
def letter_balance(
    df: pd.DataFrame,
    *,
    letters: str | Sequence[str] | None = None,
    options: str | None = None,
    by: str | Sequence[str] | None = None,
    confidence: float = 0.95,
    columns: Columns = None,
) -> pd.DataFrame:
    """Return the share of each correct letter per group with its CI, tested against the options offered.

    Which options an item offers (first match wins):

    * ``options="col"`` - per item: a count k (letters A..k-th), a mapping keyed by letter (e.g.
      ``{"A": text, ...}``), or a list of the k option texts (letters A..k-th);
    * ``letters="ABCD"`` - every item offers these letters;
    * neither - every item offers A up to the highest letter keyed anywhere in ``df``.

    Null: each item's correct letter is uniform over the letters it offers (see the module
    docstring). Answers are compared upper-cased and stripped; an NA answer, unknown options or an
    answer outside the item's options make the item *failed* (``n_failed``), excluded from the rest.

    One row per (``by`` group, letter offered in the group), contract columns first
    (``estimate`` = share of the group's valid items keyed to the letter, Clopper-Pearson CI,
    ``n_items`` = valid items, ``n_failed``, ``note``), then ``count``, ``expected`` (the share
    under the null), ``p_letter`` (two-sided exact binomial test of this letter against
    ``expected``; NaN when items offer different options), ``chi2`` and ``p_uniform`` (chi-square
    goodness of fit of the group's counts to the null, k-1 degrees of freedom; repeated on each row).

    Parameters
    ----------
    df : DataFrame
        One row per item with its correct letter in ``answer``.
    letters : str or sequence of str, optional
        The letters every item offers (e.g. ``"ABCD"``).
    options : str, optional
        A column holding each item's options (a count, a mapping keyed by letter, or the option texts);
        which column, not a rename.
    by : str or list of str, optional
        Columns to group by (e.g. ``generator``).
    {confidence}
    {columns}

    Returns
    -------
    DataFrame
        One row per group and letter, described above.

    Examples
    --------
    >>> import pandas as pd
    >>> res = letter_balance(pd.DataFrame({"answer": list("AABCDA")}), letters="ABCD")
    >>> res.set_index("letter")["count"].to_dict()
    {'A': 3, 'B': 1, 'C': 1, 'D': 1}
    """
    answer = "answer"
    by_cols = [] if by is None else [by] if isinstance(by, str) else list(by)
    ans = df[answer].map(_norm_letter)
    offered = _offered_column(df, ans, letters, options)
    groups = [((), df.index)] if not by_cols else [
        ((k if isinstance(k, tuple) else (k,)), g.index) for k, g in df.groupby(by_cols, sort=True)]
    rows = []
    for key, idx in groups:
        rows += _group_rows(dict(zip(by_cols, key)), ans.loc[idx], offered.loc[idx], confidence)
    return result_frame(rows, keys=[*by_cols, "letter"])
