"""Win rates of model A over B from resolved pairwise verdicts, polarity-aware."""

from __future__ import annotations

from collections.abc import Collection

import pandas as pd
from scipy import stats

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.stats import proportion_ci, wilson_interval

from .slots import polarity_series

__all__ = ["win_rate"]


@shared_docs
@takes_columns("judge", "criterion", "verdict", "polarity")
def win_rate(
    resolved: pd.DataFrame,
    *,
    ties: str = "half",
    reversed_criteria: Collection[str] | None = None,
    confidence: float = 0.95,
    columns: Columns = None,
) -> pd.DataFrame:
    """Win rate of model A per judge and criterion, polarity-aware.

    On ordinary criteria A wins when the verdict is ``A``; on reversed criteria (choosing = worse)
    A wins when the verdict is ``B``. NA verdicts (dropped / failed) are counted in ``n_dropped`` and
    ``n_failed`` and never scored.

    Parameters
    ----------
    resolved : DataFrame
        One verdict per (item, judge, criterion) in model terms, e.g. from :func:`resolve_orders`; a
        ``polarity`` column (+1 / -1), when present, gives each row's polarity.
    ties : {"half", "exclude"}, default "half"
        ``"half"`` counts tie/neither as half a win (estimate = (wins + ties/2) / n, Wilson interval on
        that share); ``"exclude"`` drops them (exact binomial CI and test against 0.5).
    reversed_criteria : collection of str, optional
        Criteria phrased negatively (choosing means worse).
    {confidence}
    {columns}

    Returns
    -------
    DataFrame
        One contract row per (judge, criterion), metric ``win_rate_A``, with ``polarity``, ``n_wins``,
        ``n_losses``, ``n_ties``, ``n_dropped``, ``p_value`` (``ties="exclude"`` only) and ``ties``.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_pairwise
    >>> from medeval_kit.pairwise import resolve_orders
    >>> res = resolve_orders(synthetic_pairwise(n_items=30, seed=0), "tie")
    >>> win_rate(res)[["judge", "metric"]].values.tolist()
    [['judge', 'win_rate_A']]
    """
    judge, criterion, verdict, polarity = "judge", "criterion", "verdict", "polarity"
    if ties not in ("half", "exclude"):
        raise ValueError("ties must be 'half' or 'exclude'")
    d = resolved.copy()
    pol_col = polarity if polarity in d.columns else None
    d["_pol"] = polarity_series(d, criterion, reversed_criteria, pol_col)
    rows = []
    for (j, c), g in d.groupby([judge, criterion], sort=True):
        valid = g[g[verdict].notna()]
        pol = int(g["_pol"].iloc[0])
        win_lab, loss_lab = ("A", "B") if pol > 0 else ("B", "A")
        w = int((valid[verdict] == win_lab).sum())
        lo = int((valid[verdict] == loss_lab).sum())
        t = len(valid) - w - lo
        row = {"judge": j, "criterion": c, "metric": "win_rate_A", "polarity": pol,
               "n_wins": w, "n_losses": lo, "n_ties": t, "n_dropped": int(len(g) - len(valid))}
        if ties == "exclude":
            n = w + lo
            est = w / n if n else float("nan")
            low, high = proportion_ci(w, n, confidence=confidence)
            p = float(stats.binomtest(w, n).pvalue) if n else float("nan")
            method = "exact binomial (Clopper-Pearson), ties excluded"
        else:
            n = len(valid)
            est = (w + 0.5 * t) / n if n else float("nan")
            low, high = wilson_interval(w + 0.5 * t, n, confidence=confidence)
            p = float("nan")
            method = "Wilson on (wins + ties/2)/n"
        rows.append({**row, "estimate": est, "ci_low": low, "ci_high": high, "n_items": n,
                     "p_value": p, "ci_method": method, "n_failed": row["n_dropped"], "ties": ties,
                     "note": "" if n else "no scorable verdicts"})
    return pd.DataFrame(rows)
