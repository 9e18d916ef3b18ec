"""The fast paths of medeval_kit.rounds give the numbers of the slow code they replace (issue 25).

* ``_wilcoxon``: scipy's exact sign-flip permutation path (ties or zeros, n <= 13) run with a vectorised
  statistic instead of one Python call per flip;
* ``_consistency``: the stop flags of ``apply_stopping_rule(truncate=False)`` without copying the table
  or re-selecting best rounds.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon

from medeval_kit import rounds as R
from medeval_kit.datasets.medqg_rounds import load_medqg_rounds
from medeval_kit.datasets.synthetic import synthetic_rounds
from medeval_kit.rounds import statistics as S
from medeval_kit.rounds import stopping as T


def _scipy(d: np.ndarray) -> tuple[float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = wilcoxon(d, zero_method="wilcox")
    return float(res.statistic), float(res.pvalue)


def _vectors():
    rng = np.random.default_rng(7)
    out = [np.array([0.1, 0.2, 0.2, 0.0, -0.1, 0.3, 0.4, -0.2, 0.5, 0.1, 0.2]),  # n = 11: 2048 sign flips
           np.round(rng.normal(0, 1, 14), 1), np.round(rng.normal(0, 1, 15), 1),  # n > 13: asymptotic
           np.array([0.0, 0.0, 0.5]), np.array([1.0, -1.0]), np.array([0.25] * 5)]
    for trial in range(40):  # scipy's own permutation path is the slow reference: keep n small
        n = int(rng.integers(1, 10))
        kind = trial % 4
        d = (rng.integers(-3, 4, n).astype(float) if kind == 0 else np.round(rng.normal(0, 1, n), 1) if kind == 1
             else rng.integers(-2, 3, n) / 30.0 if kind == 2 else rng.normal(0, 1, n))
        out.append(d)
    return [d for d in out if np.any(d != 0)]


@pytest.mark.parametrize("d", _vectors())
def test_wilcoxon_fast_path_equals_scipy(d):
    """Bit for bit: statistic and p-value, wherever scipy itself runs the permutation test."""
    fast = S._wilcoxon_permutation(d)
    nonzero = np.abs(d[d != 0])
    permutation = len(d) <= 13 and (len(np.unique(nonzero)) < len(nonzero) or len(nonzero) < len(d))
    assert (fast is not None) == permutation
    if fast is not None:
        assert fast == _scipy(d)
    stat, p, note = S._wilcoxon(d)
    assert (stat, p) == _scipy(d) and note == ""


def test_wilcoxon_edge_cases_unchanged():
    assert all(math.isnan(x) for x in S._wilcoxon(np.array([]))[:2])
    assert S._wilcoxon(np.zeros(4))[2] == "all differences are zero"


def test_rank_sums_vectorised():
    x = np.array([[0.5, -0.5, 0.0, 1.0], [-0.5, -0.5, 0.0, -1.0]])
    assert S._rank_sums(x).tolist() == [4.5, 0.0]  # ranks of |x| among the non-zeros: 1.5, 1.5, 3
    assert S._rank_sums(x.T, axis=0).tolist() == [4.5, 0.0]


def test_paired_round_tests_on_bundled_traces():
    """The paired tests of the bundled MedQG traces: the fast path equals scipy on every pair."""
    per = R.item_rounds(load_medqg_rounds("all"))
    res = R.paired_round_tests(per, "total", by="source", n_boot=50, seed=0)
    for _, row in res.iterrows():
        g = per[per["source"] == row["source"]]
        wide = g.pivot_table(index="item", columns="round", values="total", aggfunc="first")
        both = wide[[row["round_a"], row["round_b"]]].dropna()
        d = (both[row["round_b"]] - both[row["round_a"]]).to_numpy(float)
        if len(d) and not np.all(np.isclose(d, 0, atol=1e-12)):
            assert (row["wilcoxon_stat"], row["p_value"]) == _scipy(d)


def _consistency_reference(df, rule, threshold, max_rounds, last):
    """The former implementation: via apply_stopping_rule(truncate=False)."""
    d = R.apply_stopping_rule(df, rule, threshold, max_rounds=max_rounds, truncate=False)
    d = d.assign(_item=d["item"].astype(str), _round=d["round"].astype("int64"))
    derived = d[d["stop"]].groupby("_item")["_round"].first().reindex(last.index)
    reason = d.groupby("_item")["stop_reason"].first().reindex(last.index)
    consistent = (derived == last) & (reason != "end_of_trace")
    return int(consistent.sum()), int((derived < last).sum()), int((reason == "end_of_trace").sum())


@pytest.mark.parametrize("table", ["medqg", "synthetic", "truncated"])
@pytest.mark.parametrize("rule", R.STOP_RULES)
@pytest.mark.parametrize("max_rounds", [None, 2])
def test_consistency_equals_apply_stopping_rule(table, rule, max_rounds):
    df = (load_medqg_rounds("all") if table == "medqg" else synthetic_rounds(n_items=40, seed=3))
    if table == "truncated":  # items whose last rounds are missing or unparsed
        df = df[~((df["item"].astype(str).str.endswith(("1", "2"))) & (df["round"] > 1))].copy()
        df.loc[df.index[::17], "score"] = np.nan
    last = R.item_rounds(df).groupby("item")["round"].max()
    for threshold in (0.6, 0.9):
        assert T._consistency(df, rule, threshold, max_rounds, last) == _consistency_reference(
            df, rule, threshold, max_rounds, last)


def test_consistency_table_unchanged_by_source():
    df = load_medqg_rounds("all")
    res = R.stopping_rule_consistency(df, by="source")
    for _, row in res.iterrows():
        sub = df[df["source"] == row["source"]]
        last = R.item_rounds(sub).groupby("item")["round"].max()
        k, earlier, later = _consistency_reference(sub, row["rule"], 0.9, 4, last)
        assert (row["n_consistent"], row["n_stop_earlier"], row["n_stop_later"]) == (k, earlier, later)
    assert isinstance(res, pd.DataFrame)
