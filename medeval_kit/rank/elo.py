"""Elo ratings, for comparison only: the same games in another order give other ratings.

Elo updates after every game (rating += k * (score - expected)), so the result depends on the order of
the games, which pairwise judgments of a fixed set of items do not have. :func:`elo_ratings` plays the
games in the file's order (order 0) and in ``n_orders`` seeded random orders; :func:`elo_spread`
summarises how far each model's rating and rank move. Bradley-Terry (:func:`medeval_kit.rank.rank_models`)
uses all games at once and has no such dependence.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import ParameterError
from medeval_kit.results import RESULT_COLUMNS, result_frame, result_row

__all__ = ["elo_ratings", "elo_spread"]


def _play(a: np.ndarray, b: np.ndarray, score: np.ndarray, K: int, k: float, initial: float, scale: float) -> np.ndarray:
    """Ratings after playing the games (a vs b, score of a) in the given order."""
    r = np.full(K, float(initial))
    for x, y, s in zip(a, b, score):
        e = 1 / (1 + 10 ** ((r[y] - r[x]) / scale))
        r[x] += k * (s - e)
        r[y] -= k * (s - e)
    return r


@shared_docs
def elo_ratings(
    comparisons: pd.DataFrame,
    *,
    k: float = 16.0,
    initial: float = 1000.0,
    scale: float = 400.0,
    n_orders: int = 20,
    seed: int = 0,
) -> pd.DataFrame:
    """Return Elo ratings per judge, order (0 = the table's order, 1.. = seeded shuffles) and model.

    A tie scores 1/2; failed verdicts are skipped.

    Parameters
    ----------
    comparisons : DataFrame
        The tidy comparisons table (:func:`medeval_kit.rank.comparisons`).
    k : float, default 16.0
        The update step (K-factor).
    initial : float, default 1000.0
        Every model's starting rating.
    scale : float, default 400.0
        The logistic scale: a difference of ``scale`` means odds of 10 to 1.
    n_orders : int, default 20
        Seeded random orders to play besides the table's own.
    {seed}

    Returns
    -------
    DataFrame
        One row per judge, order and model: ``judge, order, model``, the contract columns (``estimate`` =
        the rating; no interval: Elo has none; ``n_items`` = the games played, ``n_failed`` = failed
        verdicts skipped), then ``metric="elo"``, ``rating``, ``rank`` (1 = best) and ``n_games``.

    Examples
    --------
    >>> from medeval_kit import rank
    >>> c = rank.comparisons(rank.demo_comparisons(n_items=30), columns={"item": "case_id",
    ...     "judge": "physician_group", "model_a": "response_a_model", "model_b": "response_b_model",
    ...     "verdict": "winner"})
    >>> elo = elo_ratings(c, n_orders=3)
    >>> sorted(elo["order"].unique().tolist())
    [0, 1, 2, 3]
    """
    if k <= 0 or scale <= 0:
        raise ParameterError(f"k and scale must be positive; got k={k}, scale={scale}")
    if n_orders < 0:
        raise ParameterError(f"n_orders must be 0 or more; got {n_orders}")
    rng = np.random.default_rng(seed)
    rows = []
    for j, g in comparisons.groupby("judge", sort=False):
        n_failed = int((g["status"] != "ok").sum())
        g = g[g["status"] == "ok"]
        models = sorted(set(g["model_a"]) | set(g["model_b"]))
        ix = {m: i for i, m in enumerate(models)}
        a = g["model_a"].map(ix).to_numpy()
        b = g["model_b"].map(ix).to_numpy()
        s = g["verdict"].map({"A": 1.0, "B": 0.0, "tie": 0.5}).to_numpy()
        for o in range(n_orders + 1):
            perm = np.arange(len(g)) if o == 0 else rng.permutation(len(g))
            r = _play(a[perm], b[perm], s[perm], len(models), k, initial, scale)
            rank = 1 + (r[None, :] > r[:, None]).sum(1)
            rows += [result_row(float(r[i]), n_items=len(g), n_failed=n_failed, judge=j, order=o, model=m,
                                metric="elo", rating=float(r[i]), rank=int(rank[i]), n_games=len(g))
                     for i, m in enumerate(models)]
    if not rows:
        return pd.DataFrame(columns=["judge", "order", "model", *RESULT_COLUMNS, "metric", "rating", "rank",
                                     "n_games"])
    return result_frame(rows, keys=["judge", "order", "model"])


def elo_spread(elo: pd.DataFrame) -> pd.DataFrame:
    """Return per judge and model how far the Elo rating moves with the order of the games.

    Parameters
    ----------
    elo : DataFrame
        The table of :func:`elo_ratings`.

    Returns
    -------
    DataFrame
        One row per judge and model: ``judge, model``, the contract columns (``estimate`` = the rating's
        range over all orders, ``metric="rating_range"``, no interval, ``n_items`` = the games), then
        ``rating_table_order`` (the rating in the table's order), ``rating_min``, ``rating_max``,
        ``rank_best``, ``rank_worst``, ``n_orders``, ``n_games``, ``rating_range`` and
        ``n_distinct_rankings`` (distinct rankings the orders produced, per judge).

    Examples
    --------
    >>> from medeval_kit import rank
    >>> c = rank.comparisons(rank.demo_comparisons(n_items=30), columns={"item": "case_id",
    ...     "judge": "physician_group", "model_a": "response_a_model", "model_b": "response_b_model",
    ...     "verdict": "winner"})
    >>> spread = elo_spread(elo_ratings(c, n_orders=5))
    >>> bool((spread["estimate"] >= 0).all())
    True
    """
    g = elo.groupby(["judge", "model"], sort=False)
    out = g.agg(rating_min=("rating", "min"), rating_max=("rating", "max"), rank_best=("rank", "min"),
                rank_worst=("rank", "max"), n_orders=("order", "nunique"), n_games=("n_games", "first")).reset_index()
    first = elo[elo["order"] == 0].set_index(["judge", "model"])["rating"]
    out.insert(2, "rating_table_order", [first.get((j, m), np.nan) for j, m in zip(out["judge"], out["model"])])
    out["rating_range"] = out["rating_max"] - out["rating_min"]
    rankings = (elo.sort_values(["judge", "order", "rank", "model"]).groupby(["judge", "order"])["model"]
                .agg(" > ".join).groupby("judge").nunique())
    out["n_distinct_rankings"] = out["judge"].map(rankings).astype(int)
    failed = elo.groupby(["judge", "model"], sort=False)["n_failed"].first() if "n_failed" in elo.columns else None
    rows = [result_row(rec["rating_range"], n_items=rec["n_games"],
                       n_failed=0 if failed is None else failed.get((rec["judge"], rec["model"]), 0),
                       metric="rating_range", **rec) for rec in out.to_dict("records")]
    return result_frame(rows, keys=["judge", "model"]) if rows else out
