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

from medeval_kit.errors import ParameterError

__all__ = ["elo_ratings", "elo_spread"]


def _play(a: np.ndarray, b: np.ndarray, score: np.ndarray, K: int, k: float, initial: float, scale: float) -> np.ndarray:
    """Ratings after playing the games (a vs b, score of a) in the given order."""
    r = np.full(K, float(initial))
    for x, y, s in zip(a, b, score):
        e = 1 / (1 + 10 ** ((r[y] - r[x]) / scale))
        r[x] += k * (s - e)
        r[y] -= k * (s - e)
    return r


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

    A tie scores 1/2; failed verdicts are skipped. Columns: judge, order, model, rating, rank (1 = best),
    n_games.
    """
    if k <= 0 or scale <= 0:
        raise ParameterError(f"k and scale must be positive; got k={k}, scale={scale}")
    if n_orders < 0:
        raise ParameterError(f"n_orders must be 0 or more; got {n_orders}")
    rng = np.random.default_rng(seed)
    rows = []
    for j, g in comparisons.groupby("judge", sort=False):
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
            rows += [{"judge": j, "order": o, "model": m, "rating": float(r[i]), "rank": int(rank[i]),
                      "n_games": len(g)} for i, m in enumerate(models)]
    return pd.DataFrame(rows, columns=["judge", "order", "model", "rating", "rank", "n_games"])


def elo_spread(elo: pd.DataFrame) -> pd.DataFrame:
    """Return per judge and model: the rating in the table's order, its min, max and range over all orders,
    the best and worst rank, and the number of distinct rankings the orders produced (per judge)."""
    g = elo.groupby(["judge", "model"], sort=False)
    out = g.agg(rating_min=("rating", "min"), rating_max=("rating", "max"), rank_best=("rank", "min"),
                rank_worst=("rank", "max"), n_orders=("order", "nunique"), n_games=("n_games", "first")).reset_index()
    first = elo[elo["order"] == 0].set_index(["judge", "model"])["rating"]
    out.insert(2, "rating_table_order", [first.get((j, m), np.nan) for j, m in zip(out["judge"], out["model"])])
    out["rating_range"] = out["rating_max"] - out["rating_min"]
    rankings = (elo.sort_values(["judge", "order", "rank", "model"]).groupby(["judge", "order"])["model"]
                .agg(" > ".join).groupby("judge").nunique())
    out["n_distinct_rankings"] = out["judge"].map(rankings).astype(int)
    return out
