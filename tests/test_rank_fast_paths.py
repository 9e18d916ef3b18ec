"""The fast paths of medeval_kit.rank (issue 25) equal the computations they replace.

* the batched strong-connectivity check equals :func:`rank.connected` (scipy's csgraph) graph by graph;
* the batched Newton Bradley-Terry fit of bootstrap draws equals ``choix`` (one call per draw, the old
  path) to 1e-9, with the same draws left out and the same ranks;
* the vectorised rank agreement statistics equal scipy's ``kendalltau`` / ``spearmanr`` and the top-k
  overlap draw by draw, exactly (same bits).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from medeval_kit import rank
from medeval_kit.rank import compare, models, ratings


def _draws(rng: np.random.Generator, B: int, K: int, sparse: float, ties: bool):
    """B random (K, K) win (and tie) matrices, some of them not strongly connected."""
    W = rng.poisson(2.0, (B, K, K)).astype(float) * (rng.random((B, K, K)) > sparse)
    W[:, np.arange(K), np.arange(K)] = 0
    if not ties:
        return W, np.zeros_like(W)
    T = rng.poisson(0.5, (B, K, K)).astype(float) * (rng.random((B, K, K)) > sparse)
    T = np.triu(T, 1)
    return W, T + np.transpose(T, (0, 2, 1))


@pytest.mark.parametrize("K", [2, 3, 5, 8])
@pytest.mark.parametrize("ties", [False, True])
def test_batched_connectivity_equals_csgraph(K, ties):
    rng = np.random.default_rng(K)
    W, T = _draws(rng, 300, K, sparse=0.7, ties=ties)
    fast = models._connected_batch(W, T if ties else None)
    slow = np.array([rank.connected(W[b], T[b] if ties else None) for b in range(len(W))])
    assert fast.dtype == bool and (fast == slow).all()
    assert fast.any() and not fast.all()  # both kinds of graph were tried


def _rounding_ties(theta: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """Per row: two strengths within ``tol`` but not equal (a tie in theory, ordered by rounding)."""
    d = np.abs(theta[:, :, None] - theta[:, None, :])
    return ((d > 0) & (d < tol)).any((1, 2))


@pytest.mark.parametrize("K", [2, 3, 4, 6])
def test_batched_bradley_terry_equals_choix_per_draw(K):
    rng = np.random.default_rng(10 + K)
    W, T = _draws(rng, 300, K, sparse=0.5, ties=True)
    comp = W + T / 2  # fractional counts, as ties="half" fits them
    old = np.stack([rank.fit_bradley_terry(c) for c in comp])
    fin = np.isfinite(old).all(1)
    new = models._fit_bradley_terry_batch(comp, start=rank.fit_bradley_terry(comp.sum(0)))
    assert (np.isfinite(new).all(1) == fin).all()
    assert fin.any() and not fin.all()
    np.testing.assert_allclose(new[fin], old[fin], atol=1e-9, rtol=0)
    # ranks: equal, except where two strengths are equal in theory and rounding orders them (either fit)
    decided = ~(_rounding_ties(old[fin]) | _rounding_ties(new[fin]))
    np.testing.assert_array_equal(ratings._ranks(new[fin][decided]), ratings._ranks(old[fin][decided]))
    if K == 2:  # two models with equal records: both fits give exactly equal strengths (a shared rank)
        assert decided.all()
        tied = old[fin][:, 0] == old[fin][:, 1]
        assert tied.any() and (new[fin][tied, 0] == new[fin][tied, 1]).all()


def test_one_problem_still_goes_to_choix():
    W = np.array([[0, 3, 2], [1, 0, 4], [2, 1, 0]], dtype=float)
    np.testing.assert_array_equal(models._fit_bradley_terry_batch(W[None])[0], rank.fit_bradley_terry(W))


def test_davidson_draws_without_ties_equal_choix():
    rng = np.random.default_rng(7)
    W, T = _draws(rng, 120, 4, sparse=0.4, ties=True)
    T[::2] = 0  # half of the draws without any tie: Bradley-Terry inside fit_davidson
    theta, lam, conv = rank.fit_davidson(W, T)
    no_tie = T.sum((1, 2)) == 0
    old = np.stack([rank.fit_bradley_terry(W[b]) for b in np.flatnonzero(no_tie)])
    ok = np.isfinite(old).all(1)
    np.testing.assert_allclose(theta[no_tie][ok], old[ok], atol=1e-9, rtol=0)
    assert (conv[no_tie] == ok).all() and np.isneginf(lam[no_tie][ok]).all()
    assert np.isnan(theta[no_tie][~ok]).all()


def _demo():
    return rank.comparisons(rank.demo_comparisons(n_items=80, seed=3),
                            columns={"item": "case_id", "judge": "physician_group", "model_a": "response_a_model",
                                     "model_b": "response_b_model", "verdict": "winner"})


@pytest.mark.parametrize("ties", ["half", "exclude"])
def test_rank_models_bootstrap_equals_the_per_draw_choix_fits(ties, monkeypatch):
    """rank_models with the batched draws against the same call with one choix fit per draw (the old path)."""
    c = _demo()
    fast = rank.rank_models(c, ties=ties, n_boot=150, seed=1)
    monkeypatch.setattr(ratings, "_fit_bradley_terry_batch",
                        lambda W, start=None: np.stack([rank.fit_bradley_terry(w, start=start) for w in W]))
    slow = rank.rank_models(c, ties=ties, n_boot=150, seed=1)
    for j in fast.judges:
        np.testing.assert_array_equal(fast.point[j], slow.point[j])  # the point fit is still choix
        np.testing.assert_allclose(fast.draws[j], slow.draws[j], atol=1e-9, rtol=0)
    a, b = fast.ratings, slow.ratings
    assert a.drop(columns=["ci_low", "ci_high"]).equals(b.drop(columns=["ci_low", "ci_high"]))
    np.testing.assert_allclose(a[["ci_low", "ci_high"]].to_numpy(float), b[["ci_low", "ci_high"]].to_numpy(float),
                               atol=1e-9, rtol=0)
    ranks = a["metric"] == "rank"
    assert a[ranks].equals(b[ranks])  # whole-rank intervals identical
    np.testing.assert_allclose(fast.win_probability["ci_low"], slow.win_probability["ci_low"], atol=1e-9)


@pytest.mark.parametrize("n", [3, 4, 5, 9])
def test_vectorised_agreement_statistics_equal_scipy_per_draw(n):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(400, n)).round(1)  # rounded: ties in both rankings
    Y = rng.normal(size=(400, n)).round(1)
    X[:5] = 0.3  # a judge with no ranking at all in some draws
    ks = sorted({1, max(1, n // 2)})
    fast = compare._stats_draws(X, Y, ks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on a constant input (and returns NaN)
        slow = [compare._stats(x, y, ks) for x, y in zip(X, Y)]
    for metric in slow[0]:
        want = np.array([s[metric] for s in slow])
        np.testing.assert_array_equal(fast[metric], want)  # same bits, NaN where scipy gives NaN


def test_rank_agreement_unchanged_on_the_demo():
    """The agreement rows equal those computed with scipy per draw (the old loop)."""
    res = rank.rank_models(_demo(), n_boot=120, seed=2)
    out = rank.rank_agreement(res, "physicians")
    ref = res.point["physicians"]
    common = np.isfinite(ref) & np.isfinite(res.point["llm_judge"])
    A, R = res.draws["llm_judge"][:, common], res.draws["physicians"][:, common]
    ok = np.isfinite(A).all(1) & np.isfinite(R).all(1)
    from medeval_kit.stats import percentile_interval

    for metric in out["metric"]:
        reps = [compare._stats(a, r, [1, 2])[metric] for a, r in zip(A[ok], R[ok])]
        row = out[out["metric"] == metric].iloc[0]
        assert (row["ci_low"], row["ci_high"]) == percentile_interval(reps)
