"""Rubric aspect selection (MCQG-SRefine Table 2): greedy, forward, exhaustive, cross-validated."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from medeval_kit import judge as J
from medeval_kit.errors import ParameterError
from medeval_kit.judge.aspects import _LAB, _evaluate
from medeval_kit.results import check_result


def planted(n=60, p=8, informative=(1, 4), seed=0):
    """Aspects 1 and 4 carry the human preference; the rest are noise."""
    rng = np.random.default_rng(seed)
    human = rng.choice(["A", "B", "tie"], size=n, p=[0.45, 0.35, 0.2])
    sign = pd.Series(human).map({"A": 1, "B": -1, "tie": 0}).to_numpy()
    d = rng.integers(-2, 3, size=(n, p)).astype(float)
    for j in informative:
        d[:, j] = sign * rng.integers(1, 3, size=n)
    items = [f"i{k}" for k in range(n)]
    return pd.DataFrame(d, index=items, columns=[f"a{j}" for j in range(p)]), pd.Series(human, index=items)


def subset_kappa(diffs, human, cols):
    pred = np.sign(diffs[list(cols)].sum(axis=1)).map({1: "A", -1: "B", 0: "tie"})
    return cohen_kappa_score(human.loc[pred.index], pred)


def test_kappa_matches_sklearn():
    diffs, human = planted(seed=1)
    for cols in (["a0"], ["a0", "a2", "a3"], list(diffs.columns)):
        S = np.array([[c in cols for c in diffs.columns]], dtype=float)
        y = human.map(_LAB).to_numpy()
        kap, po, n, _, _ = _evaluate(diffs.to_numpy(), np.zeros(diffs.shape, bool), S, y)
        assert kap[0] == pytest.approx(subset_kappa(diffs, human, cols))
        assert n[0] == len(diffs)


def test_exhaustive_finds_planted_subset_and_is_truly_best():
    diffs, human = planted()
    sel = J.select_aspects(diffs, human, method="exhaustive", max_k=3, k_folds=5)
    # each informative aspect alone reproduces the sign; smaller subsets win ties
    assert set(sel.selected) <= {"a1", "a4"} and len(sel.selected) == 1
    assert sel.in_sample == pytest.approx(1.0)
    # brute force with sklearn over all subsets up to size 3
    best = max(subset_kappa(diffs, human, c) for k in (1, 2, 3) for c in itertools.combinations(diffs.columns, k))
    assert sel.in_sample == pytest.approx(best)
    assert list(sel.path.k) == [1, 2, 3]
    # the planted signal generalises: CV close to in-sample
    assert sel.cv_estimate > 0.9


def test_greedy_prefix_and_forward():
    diffs, human = planted()
    g = J.select_aspects(diffs, human, method="greedy")
    # the two informative aspects rank first and the best prefix is exactly them
    assert set(g.path.added.iloc[:2]) == {"a1", "a4"} and g.selected == (g.path.added.iloc[0],)
    assert len(g.path) == diffs.shape[1]  # every prefix is reported (Tables 23/24)
    f = J.select_aspects(diffs, human, method="forward")
    assert set(f.selected) <= {"a1", "a4"} and f.in_sample == pytest.approx(1.0)
    assert "optimism" in set(f.to_frame().quantity) and "in-sample" in f.summary()
    assert not check_result(f.to_frame()) and set(f.to_frame().search_method) == {"forward"}


def test_noise_aspects_show_optimism():
    rng = np.random.default_rng(5)
    n, p = 40, 20
    diffs = pd.DataFrame(rng.integers(-2, 3, size=(n, p)).astype(float), columns=[f"a{j}" for j in range(p)])
    human = pd.Series(rng.choice(["A", "B", "tie"], size=n), index=diffs.index)
    sel = J.select_aspects(diffs, human, method="exhaustive", max_k=3, k_folds=5, seed=0)
    # searching pure noise finds a flattering in-sample kappa that cross-validation does not confirm
    assert sel.in_sample > 0.2
    assert sel.cv_estimate < sel.in_sample - 0.15
    assert sel.optimism == pytest.approx(sel.in_sample - sel.cv_estimate)
    assert len(sel.folds) == 5 and sel.folds.n_test.sum() == n


def test_missing_scores_and_labels_counted():
    diffs, human = planted(n=30)
    diffs.iloc[0, 1] = np.nan
    human.iloc[-1] = None
    sel = J.select_aspects(diffs, human, method="greedy")
    assert sel.n_items == 29 and sel.n_missing == 1
    # the item with an unscored aspect is left out of subsets containing a1
    row = sel.path[sel.path.aspects.str.contains("a1")].iloc[0]
    assert row.n_items == 28


def test_exhaustive_refuses_too_many_subsets():
    diffs, human = planted(p=30)
    with pytest.raises(ParameterError, match="lower max_k"):
        J.select_aspects(diffs, human, method="exhaustive", max_k=10, max_subsets=1_000_000)
    with pytest.raises(ParameterError, match="lower max_k"):  # the default cap admits the paper's 1.1e8, not 3.1e8
        J.select_aspects(diffs, human, method="exhaustive", max_k=13)
    with pytest.raises(ParameterError, match="method"):
        J.select_aspects(diffs, human, method="magic")


def test_aspect_differences_from_rubric_judgments():
    rows = []
    for it, (sa, sb) in {"q1": (5, 3), "q2": (2, 4)}.items():
        for t, s in (("base", sa), ("refined", sb)):
            for asp in ("x", "y"):
                rows.append({"item": f"{it}:{t}", "question_item": it, "target": t, "judge": "j",
                             "protocol": "rubric", "criterion": asp, "order": "single", "repeat": 0, "raw": "",
                             "verdict": None, "score": float(s + (asp == "y")), "parse_status": "ok"})
    d = J.aspect_differences(pd.DataFrame(rows), "base", "refined")
    assert d.loc["q1", "x"] == 2 and d.loc["q2", "y"] == -2 and list(d.columns) == ["x", "y"]
