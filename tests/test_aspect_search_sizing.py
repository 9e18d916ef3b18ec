"""Issue 25: the aspect_search study sized to its purpose. The shortcuts must not change a result: the
kernel's zero-aspect reduction and its one-thread path against the plain kernel pass, the fast synthetic
differences against ``score_differences``, the in-sample-only search (``k_folds=0``) against the search
with cross-validation; and the simulation's sizes are in its tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medeval_kit.datasets.synthetic import synthetic_aspect_scores
from medeval_kit.errors import ParameterError
from medeval_kit.judge import _kernels
from medeval_kit.judge.aspect_search import (
    _synthetic_differences,
    optimism_summary,
    score_differences,
    search_optimism,
)
from medeval_kit.judge.aspects import OBJECTIVES, TIE_TOLERANCE, count_subsets, select_aspects, select_aspects_all
from medeval_kit.results import check_result

PREVALENCE = (29 / 40, 7 / 40, 4 / 40)  # MCQG-SRefine's Expert X margins


def zero_problem(seed):
    """Small-range differences with some aspects 0 on every item (scored, no difference), missing scores,
    sometimes a constant human label (undefined kappa everywhere) and sometimes -0.0."""
    rng = np.random.default_rng(seed)
    n, p = int(rng.integers(3, 25)), int(rng.integers(2, 11))
    X = rng.choice([-1, 0, 1], size=(n, p)).astype(float)
    X[rng.random((n, p)) < 0.06] = np.nan
    X[:, rng.choice(p, int(rng.integers(1, p + 1)), replace=False)] = 0.0
    if seed % 7 == 0:
        X[:, 0] = -0.0
    y = rng.choice([1, -1, 0], size=n) if seed % 5 else np.ones(n, dtype=int)
    groups = None if seed % 2 else np.arange(n) % int(rng.integers(2, 4))
    return X, y, int(rng.integers(1, p + 1)), groups


@pytest.mark.parametrize("seed", range(60))
def test_zero_aspects_reduction_is_exact(seed):
    X, y, k, groups = zero_problem(seed)
    D, M = np.nan_to_num(X), np.isnan(X)
    if groups is not None and not _kernels.fits(len(y), groups, y):
        pytest.skip("too many fold x label cells for one pass")
    got = _kernels.exhaustive_best(D, M, y, k, TIE_TOLERANCE, groups=groups)
    ref = _kernels._exhaustive_best(D, M, y, k, TIE_TOLERANCE, groups=groups)  # every subset, no reduction
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_array_equal(got[1], ref[1])


def test_constant_aspects_match_the_numpy_reference():
    """The generation study's case: most aspects 0 on every labelled item; same selection, path and folds."""
    rng = np.random.default_rng(3)
    X = np.zeros((12, 14))
    X[:, 4] = rng.choice([-2, -1, 0, 1], size=12)
    X[:, 9] = rng.choice([-1, 0, 1], size=12)
    X[2, 11] = np.nan  # missing, not zero: not reduced
    diffs = pd.DataFrame(X, columns=[f"c{j:02d}" for j in range(14)], index=[f"i{j}" for j in range(12)])
    human = pd.Series(rng.choice(["A", "B", "tie"], size=12), index=diffs.index)
    fast = select_aspects_all(diffs, human, max_k=6, k_folds=3, seed=1)
    for objective in OBJECTIVES:
        ref = select_aspects(diffs, human, method="exhaustive", objective=objective, max_k=6, k_folds=3, seed=1,
                             engine="numpy")
        got = fast.by_objective[objective]
        assert got.engine == "numba" and got.selected == ref.selected
        assert (got.in_sample, got.cv_estimate, got.all_aspects) == (ref.in_sample, ref.cv_estimate, ref.all_aspects)
        pd.testing.assert_frame_equal(got.path, ref.path, check_exact=True)
        pd.testing.assert_frame_equal(got.folds, ref.folds, check_exact=True)


def test_all_aspects_zero():
    D = np.zeros((6, 4))
    y = np.array([1, -1, 0, 1, 0, 0])
    for groups in (None, np.arange(6) % 2):
        got = _kernels.exhaustive_best(D, np.zeros_like(D, bool), y, 3, TIE_TOLERANCE, groups=groups)
        ref = _kernels._exhaustive_best(D, np.zeros_like(D, bool), y, 3, TIE_TOLERANCE, groups=groups)
        np.testing.assert_array_equal(got[0], ref[0])
        np.testing.assert_array_equal(got[1], ref[1])


def test_one_thread_path_equals_the_threaded_one(monkeypatch):
    """Small searches run on one thread (SERIAL_SUBSETS); forcing the threaded path gives the same answer."""
    rng = np.random.default_rng(5)
    X = rng.integers(-2, 3, size=(40, 14)).astype(float)
    y = rng.choice([1, -1, 0], size=40)
    M = np.zeros_like(X, dtype=bool)
    for groups in (None, np.arange(40) % 5):
        assert count_subsets(14, 4) < _kernels.SERIAL_SUBSETS
        serial = _kernels.exhaustive_best(X, M, y, 4, TIE_TOLERANCE, groups=groups)
        monkeypatch.setattr(_kernels, "SERIAL_SUBSETS", 0)
        threaded = _kernels.exhaustive_best(X, M, y, 4, TIE_TOLERANCE, groups=groups)
        monkeypatch.undo()
        for a, b in zip(serial, threaded):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kw", [{}, {"n_items": 300, "missing": 0.1, "seed": 3}, {"n_items": 7, "n_aspects": 12}])
def test_synthetic_differences_equal_score_differences(kw):
    scores, _ = synthetic_aspect_scores(**kw)
    pd.testing.assert_frame_equal(_synthetic_differences(scores), score_differences(scores), check_exact=True)
    repeated = pd.concat([scores.iloc[:10].assign(score=1.0), scores])  # repeated scores: the group-by's mean
    pd.testing.assert_frame_equal(_synthetic_differences(repeated), score_differences(repeated))


def test_in_sample_only_search_and_sizes():
    common = dict(n_items=30, n_aspects=10, n_new=500, seed=4, prevalence=PREVALENCE)
    once = search_optimism(replicates=1, max_k=4, k_folds=0, **common)
    cv = search_optimism(replicates=1, max_k=4, k_folds=3, **common)
    assert not check_result(once) and not check_result(cv)
    assert set(once["quantity"]) == {"all_aspects", "in_sample", "new_items", "planted_new_items"}
    assert (once["k_folds"] == 0).all() and (cv["k_folds"] == 3).all()
    assert (once["max_k"] == 4).all() and (once["n_subsets"] == count_subsets(10, 4)).all()
    # the in-sample search is the same search with or without the cross-validation around it
    cols = ["scenario", "objective", "quantity", "estimate", "n_items", "k", "selected"]
    key = once["quantity"].isin(["all_aspects", "in_sample", "new_items", "planted_new_items"])
    pd.testing.assert_frame_equal(once.loc[key, cols].reset_index(drop=True),
                                  cv.loc[cv["quantity"].isin(once["quantity"]), cols].reset_index(drop=True))
    summ = optimism_summary(cv)
    assert not check_result(summ)
    assert (summ["max_k"] == 4).all() and (summ["k_folds"] == 3).all() and (summ["n_subsets"] == 385).all()
    with pytest.raises(ParameterError, match="k_folds"):
        search_optimism(replicates=1, k_folds=1, **common)


def test_the_sized_simulation_still_shows_the_optimism():
    """The study's sizes (k <= 5 of 30, 5-fold CV, the paper's margins) keep the figure's message: on the null
    the searched in-sample kappa is far above its cross-validated and new-item values, which stay near 0."""
    tab = search_optimism(replicates=3, max_k=5, k_folds=5, n_new=2000, seed=0, prevalence=PREVALENCE)
    mean = optimism_summary(tab).set_index(["scenario", "objective", "quantity"])["estimate"]
    assert mean["no_signal", "kappa", "in_sample"] > 0.3
    assert abs(mean["no_signal", "kappa", "cross_validated"]) < 0.15
    assert abs(mean["no_signal", "kappa", "new_items"]) < 0.1
    assert mean["planted", "kappa", "in_sample"] > mean["planted", "kappa", "new_items"] + 0.1
