"""The compiled exhaustive aspect search (issue 14 part 2): it must return exactly what a naive loop over
every subset returns, for both objectives and every size, with ties, missing scores, many items and
cross-validation folds; and the synthetic optimism demo must behave as its planted truth says."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from medeval_kit import agreement
from medeval_kit.datasets.synthetic import synthetic_aspect_scores
from medeval_kit.errors import ParameterError, SchemaError
from medeval_kit.judge import _kernels
from medeval_kit.judge.aspect_search import (
    human_preferences,
    optimism_summary,
    round_differences,
    score_differences,
    search_optimism,
)
from medeval_kit.judge.aspects import (
    _LAB,
    MAX_SUBSETS,
    OBJECTIVES,
    TIE_TOLERANCE,
    _check_size,
    _evaluate,
    count_subsets,
    select_aspects,
    select_aspects_all,
)
from medeval_kit.results import check_result


def random_problem(seed, n=30, p=13, missing=0.08, values=(-1, 0, 1)):
    """Small-range differences (many exact ties between subsets), missing scores, all three labels."""
    rng = np.random.default_rng(seed)
    X = rng.choice(values, size=(n, p)).astype(float)
    X[rng.random((n, p)) < missing] = np.nan
    y = rng.choice([1, -1, 0], size=n, p=[0.45, 0.35, 0.2])
    return X, y


def naive_best(X, y, max_k):
    """Best subset of each size for each objective: a plain loop over itertools.combinations, each subset
    scored alone with the numpy evaluation; the first (lexicographic) maximum wins, NaN never beats a number."""
    D, M = np.nan_to_num(X), np.isnan(X)
    p = X.shape[1]
    out = {}
    for k in range(1, max_k + 1):
        for col in range(2):
            best = None
            for combo in itertools.combinations(range(p), k):
                S = np.zeros((1, p))
                S[0, list(combo)] = 1
                kap, po, n, _, _ = _evaluate(D, M, S, y)
                v = (kap[0], po[0])[col]
                key = -np.inf if np.isnan(v) else v
                if best is None or key > best[0] + 1e-12:
                    best = (key, combo, (kap[0], po[0], n[0]))
            out[k, col] = best
    return out


def kernel_values(counts):
    num, den, a, n = (int(x) for x in counts)
    return (num / den if den > 0 else np.nan, a / n if n > 0 else np.nan, float(n))


@pytest.mark.parametrize("seed,p", [(0, 12), (1, 13), (2, 14), (3, 15)])
def test_kernel_equals_naive_loop(seed, p):
    X, y = random_problem(seed, p=p)
    counts, combos = _kernels.exhaustive_best(np.nan_to_num(X), np.isnan(X), y, 4, TIE_TOLERANCE)
    ref = naive_best(X, y, 4)
    for (k, col), (_, combo, vals) in ref.items():
        assert tuple(combos[0, k - 1, col, :k]) == combo, (k, OBJECTIVES[col])
        assert kernel_values(counts[0, k - 1, col]) == pytest.approx(vals, nan_ok=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_selected_kappa_is_agreement_and_sklearn_kappa(seed):
    X, y = random_problem(seed, p=12)
    counts, combos = _kernels.exhaustive_best(np.nan_to_num(X), np.isnan(X), y, 4, TIE_TOLERANCE)
    names = {1: "A", -1: "B", 0: "tie"}
    for k in range(1, 5):
        cols = list(combos[0, k - 1, 0, :k])
        ok = ~np.isnan(X[:, cols]).any(axis=1)  # items with every selected aspect scored
        pred = np.sign(X[ok][:, cols].sum(axis=1)).astype(int)
        human, judge = [names[v] for v in y[ok]], [names[v] for v in pred]
        kap, agr, n = kernel_values(counts[0, k - 1, 0])
        assert n == ok.sum()
        assert kap == pytest.approx(cohen_kappa_score(human, judge), abs=1e-12)
        long = pd.DataFrame({"item": np.tile(np.arange(len(human)), 2), "rater": ["human"] * len(human) + ["judge"] * len(judge),
                             "label": human + judge})
        res = agreement.cohen_kappa(long, categories=["A", "B", "tie"], n_boot=0)
        assert kap == pytest.approx(res.estimate, abs=1e-12)
        assert agr == pytest.approx(np.mean(np.array(human) == np.array(judge)), abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_numba_and_numpy_engines_identical(seed):
    X, y = random_problem(seed, n=36, p=12)
    names = [f"a{j:02d}" for j in range(X.shape[1])]
    diffs = pd.DataFrame(X, columns=names, index=[f"i{j}" for j in range(len(y))])
    human = pd.Series({i: {1: "A", -1: "B", 0: "tie"}[v] for i, v in zip(diffs.index, y)})
    fast = select_aspects_all(diffs, human, max_k=4, k_folds=4, seed=seed)
    for objective in OBJECTIVES:
        ref = select_aspects(diffs, human, method="exhaustive", objective=objective, max_k=4, k_folds=4, seed=seed,
                             engine="numpy")
        got = fast.by_objective[objective]
        assert got.engine == "numba" and ref.engine == "numpy"
        assert got.selected == ref.selected
        assert (got.in_sample, got.cv_estimate, got.all_aspects) == (ref.in_sample, ref.cv_estimate, ref.all_aspects)
        pd.testing.assert_frame_equal(got.path, ref.path, check_exact=True)
        pd.testing.assert_frame_equal(got.folds, ref.folds, check_exact=True)


def test_folds_in_one_pass_equal_separate_searches():
    X, y = random_problem(7, n=40, p=12)
    D, M = np.nan_to_num(X), np.isnan(X)
    groups = np.arange(40) % 5
    counts, combos = _kernels.exhaustive_best(D, M, y, 4, TIE_TOLERANCE, groups=groups)
    assert counts.shape[0] == 6
    for g in range(5):
        keep = groups != g
        c1, b1 = _kernels.exhaustive_best(D[keep], M[keep], y[keep], 4, TIE_TOLERANCE)
        np.testing.assert_array_equal(counts[1 + g], c1[0])
        np.testing.assert_array_equal(combos[1 + g], b1[0])


def test_many_items_and_too_many_folds_fall_back_identically():
    # 300 items: wider count fields; 10 folds of 30 items: too many cells for one pass (one pass per fold)
    X, y = random_problem(11, n=300, p=9, values=(-2, -1, 0, 1, 2))
    diffs = pd.DataFrame(X, columns=[f"a{j}" for j in range(9)], index=[f"i{j}" for j in range(300)])
    human = pd.Series({i: {1: "A", -1: "B", 0: "tie"}[v] for i, v in zip(diffs.index, y)})
    assert not _kernels.fits(300, np.arange(300) % 10, y)
    got = select_aspects(diffs, human, method="exhaustive", max_k=3, k_folds=10)
    ref = select_aspects(diffs, human, method="exhaustive", max_k=3, k_folds=10, engine="numpy")
    assert got.engine == "numba"
    pd.testing.assert_frame_equal(got.path, ref.path, check_exact=True)
    pd.testing.assert_frame_equal(got.folds, ref.folds, check_exact=True)


def test_deterministic_across_thread_counts():
    import numba

    X, y = random_problem(5, n=40, p=16)
    before = numba.get_num_threads()
    try:
        runs = []
        for t in sorted({1, before}):
            numba.set_num_threads(t)
            runs.append(_kernels.exhaustive_best(np.nan_to_num(X), np.isnan(X), y, 5, TIE_TOLERANCE))
    finally:
        numba.set_num_threads(before)
    for c, b in runs[1:]:
        np.testing.assert_array_equal(c, runs[0][0])
        np.testing.assert_array_equal(b, runs[0][1])


def test_edges_single_size_undefined_and_float_ties():
    # max_k = 1; every human label the same and the judge constant -> kappa undefined: the first subset stands
    X = np.ones((6, 4))
    y = np.ones(6, dtype=int)
    counts, combos = _kernels.exhaustive_best(X, np.zeros_like(X, bool), y, 1, TIE_TOLERANCE)
    assert combos.shape == (1, 1, 2, 1) and combos[0, 0, 0, 0] == 0 and counts[0, 0, 0, 1] == 0
    diffs = pd.DataFrame(X, columns=list("wxyz"))
    sel = select_aspects(diffs, pd.Series("A", index=diffs.index), method="exhaustive", max_k=3, k_folds=2)
    ref = select_aspects(diffs, pd.Series("A", index=diffs.index), method="exhaustive", max_k=3, k_folds=2,
                         engine="numpy")
    assert sel.selected == ref.selected == ("w",) and np.isnan(sel.in_sample)
    # 0.1 + 0.2 - 0.3 is not exactly 0 in floating point; both engines call it a tie
    d = pd.DataFrame({"a": [0.1, 1, -1, 1], "b": [0.2, 0, 0, 1], "c": [-0.3, 0, 0, 0]})
    h = pd.Series(["tie", "A", "B", "A"])
    for engine in ("numba", "numpy"):
        s = select_aspects(d, h, method="exhaustive", max_k=3, k_folds=2, engine=engine)
        assert s.in_sample == 1.0 and s.selected == ("a", "b", "c")
        assert s.path.set_index("k").loc[1, "agreement"] == 0.75


def test_paper_scale_is_accepted_and_the_cap_is_explicit():
    assert count_subsets(30, 11) == 107_636_401  # ~1.1e8, MCQG-SRefine 3.7 (all 30 aspects, k <= 11)
    _check_size("exhaustive", 30, 11, MAX_SUBSETS)
    with pytest.raises(ParameterError, match=r"313,889,476 subsets .*lower max_k or raise max_subsets"):
        _check_size("exhaustive", 30, 13, MAX_SUBSETS)


def test_synthetic_aspect_scores_plant_what_they_say():
    scores, prefs = synthetic_aspect_scores(n_items=2000, n_aspects=12, n_planted=2, signal=2.0, seed=3)
    assert set(scores.columns) >= {"item", "system", "aspect", "score", "planted"}
    assert scores["score"].between(1, 5).all() and len(prefs) == 2000
    diffs = score_differences(scores)
    human = prefs.set_index("item")["preference"]
    y = human.reindex(diffs.index).map(_LAB)
    corr = diffs.corrwith(y)
    planted = scores.drop_duplicates("aspect").set_index("aspect")["planted"]
    assert corr[planted[planted].index].min() > 0.4 > 0.15 > corr[planted[~planted].index].abs().max()
    # same population seed, other item seed: same planted aspects, new items
    s2, _ = synthetic_aspect_scores(n_items=10, n_aspects=12, n_planted=2, seed=99, population_seed=3)
    assert set(s2[s2.planted].aspect) == set(planted[planted].index)


def test_search_optimism_null_vs_planted():
    tab = search_optimism(replicates=2, n_items=40, n_aspects=12, max_k=4, n_new=2000, seed=1)
    assert not check_result(tab)
    assert set(tab.quantity) == {"all_aspects", "in_sample", "cross_validated", "cv_mean_fold", "optimism",
                                 "new_items", "planted_new_items"}
    assert len(tab) == 2 * 2 * 2 * 7  # scenario x replicate x objective x quantity
    est = tab.set_index(["scenario", "replicate", "objective", "quantity"])["estimate"]
    for r in range(2):
        # the null: nothing carries signal, yet the search finds a flattering in-sample kappa
        assert est["no_signal", r, "kappa", "in_sample"] > est["no_signal", r, "kappa", "new_items"] + 0.2
        assert abs(est["no_signal", r, "kappa", "new_items"]) < 0.1
        assert est["planted", r, "kappa", "planted_new_items"] > 0.4
    summ = optimism_summary(tab)
    assert not check_result(summ) and (summ.query("quantity == 'in_sample'").n_items == 2).all()


def test_input_helpers():
    rounds = pd.DataFrame({
        "item": ["q1"] * 6 + ["q2"] * 6,
        "round": [1, 1, 1, 2, 2, 2] * 2,
        "component": ["context", "context", "context"] * 4,
        "aspect": ["x", "y", "total"] * 4,
        "score": [2, 3, 5, 4, 4, 8, 5, 5, 10, 3, 1, 4],
        "best": [False] * 3 + [True] * 3 + [True] * 3 + [False] * 3,
    })
    d = round_differences(rounds)
    assert list(d.columns) == ["context:x", "context:y"]
    assert d.loc["q1"].tolist() == [-2, -1] and d.loc["q2"].tolist() == [0, 0]  # q2: best round is round 1
    d2 = round_differences(rounds.drop(columns="best"), b_round="best")  # best = highest mean aspect score
    assert d2.loc["q1"].tolist() == [-2, -1] and d2.loc["q2"].tolist() == [0, 0]
    prefs = human_preferences(pd.DataFrame({"item": ["q1", "q2", "q3"], "preference": ["b", " Tie", None]}))
    assert prefs["q1"] == "B" and prefs["q2"] == "tie" and pd.isna(prefs["q3"])
    with pytest.raises(SchemaError, match="A, B or tie"):
        human_preferences(pd.DataFrame({"item": ["q1"], "preference": ["better"]}))
    with pytest.raises(ParameterError, match="system 'C'"):
        score_differences(pd.DataFrame({"item": [1], "system": ["A"], "aspect": ["x"], "score": [1]}), "A", "C")


def test_plots_draw_the_tables():
    import matplotlib

    matplotlib.use("Agg")
    from medeval_kit.viz.aspects import plot_best_by_size, plot_search_optimism

    tab = search_optimism(replicates=2, n_items=30, n_aspects=8, max_k=3, n_new=500, seed=2)
    fig = plot_search_optimism(tab, optimism_summary(tab), reference={"paper": 0.539})
    assert len(fig.axes) == 2 and [a.get_ylabel() for a in fig.axes][1] == "percent agreement"
    assert len(fig.legends[0].get_texts()) == 3  # two scenarios and the reference line
    X, y = random_problem(3, n=30, p=8)
    diffs = pd.DataFrame(X, columns=[f"a{j}" for j in range(8)])
    human = pd.Series(np.array(["B", "tie", "A"], dtype=object)[y + 1])
    sel = select_aspects_all(diffs, human, max_k=4, k_folds=3)
    path = sel.paths()
    fig = plot_best_by_size(path)
    assert len(fig.axes) == 2
    assert list(fig.axes[1].lines[0].get_ydata()) == list(sel.by_objective["agreement"].path["agreement"])


def test_select_aspects_all_returns_one_result_object():
    from medeval_kit.judge.aspects import AspectSelections, selection_paths
    from medeval_kit.results import RESULT_COLUMNS

    X, y = random_problem(5, n=24, p=6)
    diffs = pd.DataFrame(X, columns=[f"a{j}" for j in range(6)])
    human = pd.Series(np.array(["B", "tie", "A"], dtype=object)[y + 1])
    sel = select_aspects_all(diffs, human, max_k=2, k_folds=2, engine="numpy")
    assert isinstance(sel, AspectSelections) and list(sel.by_objective) == list(OBJECTIVES)
    frame = sel.to_frame()
    assert all(c in frame.columns for c in RESULT_COLUMNS) and set(frame["objective"]) == set(OBJECTIVES)
    assert "kappa" in sel.summary() and "<table" in sel._repr_html_()
    pd.testing.assert_frame_equal(sel.paths(), selection_paths(sel))
    # the old dict access works for one release, with a warning
    with pytest.warns(DeprecationWarning, match="by_objective"):
        assert sel["kappa"] is sel.by_objective["kappa"]
    with pytest.warns(DeprecationWarning):
        assert [o for o, _ in sel.items()] == list(OBJECTIVES)


def test_aspect_inputs_take_a_columns_mapping_and_keep_the_old_keywords(tmp_path):
    from medeval_kit.judge import read_aspect_scores

    long = pd.DataFrame({"case": ["q1"] * 4, "model": ["A", "B", "A", "B"], "aspect_name": ["x", "x", "y", "y"],
                         "points": [4, 2, 3, 3]})
    cols = {"item": "case", "system": "model", "aspect": "aspect_name", "score": "points"}
    want = score_differences(long.rename(columns={v: k for k, v in cols.items()}))
    pd.testing.assert_frame_equal(score_differences(long, columns=cols), want)
    f = tmp_path / "scores.csv"
    long.to_csv(f, index=False)
    pd.testing.assert_frame_equal(score_differences(read_aspect_scores(f, columns=cols)), want)
    with pytest.warns(DeprecationWarning, match="columns="):
        old = read_aspect_scores(f, item="case", system="model", aspect="aspect_name", score="points")
    pd.testing.assert_frame_equal(score_differences(old), want)
    prefs = pd.DataFrame({"case": ["q1", "q2"], "winner": ["a", "TIE"]})
    new = human_preferences(prefs, columns={"item": "case", "preference": "winner"})
    with pytest.warns(DeprecationWarning, match="preference"):
        pd.testing.assert_series_equal(human_preferences(prefs, item="case", label="winner"), new)
    with pytest.raises(TypeError, match="lable"):
        human_preferences(prefs, lable="winner")
