"""The equal-noise simulation's fast path gives the numbers of the reference path (judge_vs_humans per design).

The fast path (``medeval_kit.agreement.coverage``) reads each simulated table once, builds the
leave-one-out votes of all humans at once, evaluates the built-in coefficients on stacked sums and
resamples all designs and panels of a replication with one set of draws. Every Δ, CI and coverage
count must be the same floats as judge_vs_humans gives, not merely close.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medeval_kit import agreement as ag
from medeval_kit.agreement.consensus import vote
from medeval_kit.agreement.coverage import PANELS, _evaluate, _fast_specs, loo_votes, panel_codes
from medeval_kit.agreement.data import prepare
from medeval_kit.agreement.engine import (
    Stat,
    _draw_counts,
    mean_stat,
    point,
    points,
    replicates,
    stacked_stat,
)
from medeval_kit.agreement.forms import pair_features, pair_stat
from medeval_kit.agreement.panel import panel_of
from medeval_kit.datasets.synthetic import synthetic_panel
from medeval_kit.stats import percentile_interval

# --------------------------------------------------------------------------- the whole simulation


@pytest.mark.parametrize("seed, metric", [(0, "cohen_kappa"), (5, "percent_agreement")])
def test_fast_and_reference_simulation_are_identical(seed, metric):
    kw = dict(n_items=90, n_boot=200, seed=seed, metric=metric)
    fast = ag.equal_noise_coverage(3, **kw)
    ref = ag.equal_noise_coverage(3, fast_path=False, **kw)
    pd.testing.assert_frame_equal(fast, ref, check_exact=True)


def test_fast_simulation_with_two_judges_is_identical():
    kw = dict(panels=["dense3", "sparse"], n_items=70, n_judges=2, n_boot=150, seed=3)
    pd.testing.assert_frame_equal(ag.equal_noise_coverage(3, **kw), ag.equal_noise_coverage(3, fast_path=False, **kw),
                                  check_exact=True)


# --------------------------------------------------------------------------- one table, every design


def _ref(t, design, metric, n_boot, seed):
    """(delta, CI low, CI high) per judge from judge_vs_humans."""
    tab = ag.judge_vs_humans(t, design=design, metric=metric, n_boot=n_boot, seed=seed,
                             accept_label_warnings=True).table
    return [(r.delta, r.delta_ci_low, r.delta_ci_high) for r in tab[tab["role"] == "judge"].itertuples()]


def _fast(t, design, metric, n_boot, seed):
    specs = _fast_specs(t, metric, [design], seed)
    assert specs is not None, "the fast path should read this table"
    return _evaluate(specs[design], n_boot, 0.95, seed)


def _with_ci(rows):
    return [r for r in rows if np.isfinite(r[1])]


def _check_same(t, metric="cohen_kappa", n_boot=200, seed=4):
    for design in ("loo", "pooled", "medqade"):
        ref, fast = _ref(t, design, metric, n_boot, seed), _fast(t, design, metric, n_boot, seed)
        assert _with_ci(fast) == _with_ci(ref), design  # the same floats
        if design != "medqade" or fast:  # medqade without a ceiling has no delta at all
            assert np.array_equal(np.array(fast, float), np.array(ref, float), equal_nan=True), design


def _sparse_with_gaps(seed: int) -> pd.DataFrame:
    """A sparse panel with NA labels, a judge that abstains on a third of the items and one that
    labels only 8 items (too few for a CI)."""
    t = synthetic_panel(n_items=80, n_humans=15, n_judges=3, labels_per_item=(2, 4), kappa=0.5, seed=seed)
    rng = np.random.default_rng(seed)
    hum = np.flatnonzero(t["rater_kind"].eq("human").to_numpy())
    t.loc[rng.choice(hum, 12, replace=False), "label"] = None  # missing human labels
    j1 = np.flatnonzero(t["rater"].eq("llm1").to_numpy())
    t = t.drop(index=rng.choice(j1, len(j1) // 3, replace=False))  # llm1 abstains (no row)
    j2 = np.flatnonzero(t["rater"].eq("llm2").to_numpy())
    t.loc[t.index[j2[8:]], "label"] = None  # llm2 abstains (NA label) on all but 8 items
    return t.reset_index(drop=True)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sparse_panel_with_missing_labels_and_abstaining_judges(seed):
    _check_same(_sparse_with_gaps(seed))


@pytest.mark.parametrize("kw", [dict(n_humans=3), dict(n_humans=2), dict(n_humans=5, n_judges=2),
                                dict(n_humans=60, labels_per_item=(2, 4))])
def test_dense_and_sparse_panels(kw):
    for seed in (0, 9):
        t = synthetic_panel(n_items=120, kappa=0.4, seed=seed, **kw)
        _check_same(t, seed=seed)
        _check_same(t, metric="gwet_ac1", seed=seed)


def test_a_human_left_out_of_the_mean():
    # four humans on every item and one on six: the mean over humans leaves the fifth out
    t = synthetic_panel(n_items=100, n_humans=5, kappa=0.5, seed=2)
    h5 = t.index[t["rater"].eq("h5")]
    t = t.drop(index=h5[6:]).reset_index(drop=True)
    assert "left out of the mean" in ag.judge_vs_humans(t, n_boot=0).design_note
    _check_same(t)


def test_a_human_with_an_undefined_kappa():
    # h3 says "A" only on items where the others agree on "A": kappa undefined, left out of the mean
    t = synthetic_panel(n_items=300, n_humans=4, kappa=0.5, seed=3)
    wide = t.pivot(index="item", columns="rater", values="label")
    agree_a = wide.index[(wide["h1"] == "A") & (wide["h2"] == "A") & (wide["h4"] == "A")]
    keep = ~t["rater"].eq("h3") | t["item"].isin(agree_a)
    t = t[keep].assign(label=lambda d: d["label"].where(~d["rater"].eq("h3"), "A")).reset_index(drop=True)
    details = ag.judge_vs_humans(t, n_boot=0, accept_label_warnings=True).details.set_index("human")
    assert details.loc["h3", "left_out"] == "undefined cohen_kappa"
    _check_same(t)


def test_sparse_panel_whose_medqade_ceiling_is_defined():
    # one human's undefined kappa makes MedQADE's ceiling NaN; on this seed all 60 are defined
    t = synthetic_panel(n_items=150, n_humans=60, labels_per_item=(2, 4), kappa=0.5, seed=0)
    assert _fast(t, "medqade", "cohen_kappa", 200, 0)
    _check_same(t, seed=0)


@pytest.fixture
def plugin_metric():
    """A coefficient registered only for this test: not a built-in, so the fast path evaluates it block by block."""
    from medeval_kit.agreement.engine import safe_div
    from medeval_kit.agreement.registry import coefficient, unregister

    @coefficient(label="Bangdiwala's B", more_raters="light")
    def jvh_bangdiwala_b(t):
        """Bangdiwala's B: squared diagonal cells over the products of the marginals."""
        return safe_div((np.einsum("mkk->mk", t.joint) ** 2).sum(1), (t.rows * t.cols).sum(1))

    yield "jvh_bangdiwala_b"
    unregister("jvh_bangdiwala_b")


def test_a_registered_coefficient(plugin_metric):
    _check_same(_sparse_with_gaps(4), metric=plugin_metric)
    _check_same(synthetic_panel(n_items=100, n_humans=3, seed=2), metric=plugin_metric)
    kw = dict(panels=["dense3", "sparse"], n_items=70, n_boot=150, seed=2, metric=plugin_metric)
    pd.testing.assert_frame_equal(ag.equal_noise_coverage(2, **kw), ag.equal_noise_coverage(2, fast_path=False, **kw),
                                  check_exact=True)


def test_the_table_reading_matches_prepare():
    for p, kw in PANELS.items():
        for seed in range(3):
            t = synthetic_panel(n_items=60, n_judges=2, seed=seed, **kw)
            codes, K, humans, judges = panel_codes(t)
            assert (humans, judges) == tuple(panel_of(t, None, None))
            data = prepare(t, raters=humans + judges)
            assert np.array_equal(codes, data.codes) and K == data.K, p
    shuffled = synthetic_panel(n_items=40, seed=1).sample(frac=1, random_state=0)  # items out of order
    codes, *_ = panel_codes(shuffled)
    assert np.array_equal(codes, prepare(shuffled, raters=["h1", "h2", "h3", "llm1"]).codes)


@pytest.mark.parametrize("change", ["criterion", "kind", "duplicate", "one_human"])
def test_tables_the_fast_path_does_not_read(change):
    t = synthetic_panel(n_items=30, seed=0)
    if change == "criterion":
        t["criterion"] = "overall"
    elif change == "kind":
        t["rater_kind"] = t["rater_kind"].replace({"llm": "model"})
    elif change == "duplicate":
        t = pd.concat([t, t.iloc[:1]], ignore_index=True)
    else:
        t = t[t["rater"].isin(["h1", "llm1"])]
    assert panel_codes(t) is None  # equal_noise_coverage then runs judge_vs_humans on it


# --------------------------------------------------------------------------- the pieces


def test_leave_one_out_votes_are_the_votes_of_the_others():
    rng = np.random.default_rng(0)
    for K in (2, 3, 4):
        C = rng.integers(-1, K, size=(300, 5))
        got = loo_votes(C, K)
        for k in range(5):
            others = vote(C[:, [o for o in range(5) if o != k]], K, "plurality", "na", None)[0]
            assert np.array_equal(got[:, k], np.where(C[:, k] >= 0, others, -1))


def test_draw_counts_are_the_per_resample_bincounts():
    rng = np.random.default_rng(1)
    for n, b, groups in [(150, 500, None), (7, 3, None), (3000, 40, None), (400, 90, rng.integers(0, 50, 400))]:
        idx = rng.integers(0, n, size=(b, n))
        rows = n if groups is None else 50
        want = np.array([np.bincount(d if groups is None else groups[d], minlength=rows) for d in idx], float)
        assert np.array_equal(_draw_counts(idx, groups, rows), want)


@pytest.mark.parametrize("metric", ["cohen_kappa", "percent_agreement", "gwet_ac1", "macro_f1"])
@pytest.mark.parametrize("s, skip", [(1, False), (3, True), (3, False), (20, False)])
def test_stacked_statistics_are_the_mean_stat_values(metric, s, skip):
    rng = np.random.default_rng(s)
    n, K = 60, 3
    fn = pair_stat(metric, np.zeros(1, int), np.zeros(1, int), K).fn
    # few labels per block: many undefined values, so the pruned mean (s > 8) drops rows
    blocks = [pair_features(np.where(rng.random(n) < 0.15, rng.integers(0, K, n), -1), rng.integers(0, K, n), K)[0]
              for _ in range(s)]
    ref = (Stat(blocks[0], fn, 30) if s == 1 and not skip else
           mean_stat([Stat(F, fn, 0) for F in blocks], 30, skip_undefined=skip))
    new = stacked_stat(np.stack(blocks, 1), fn, 30, mean=s > 1 or skip, skip_undefined=skip)
    other = stacked_stat(blocks[0][:, None], fn, 30)  # shares fn: evaluated in the same call
    want, got = replicates([ref, Stat(blocks[0], fn, 30)], 300, 7), replicates([new, other], 300, 7)
    assert np.array_equal(want, got, equal_nan=True)
    assert np.array_equal(points([new, other]), [point(ref), point(Stat(blocks[0], fn, 30))], equal_nan=True)
    assert np.array_equal(point(new), point(ref), equal_nan=True)


def test_percentile_interval_is_two_quantiles():
    rng = np.random.default_rng(2)
    for _ in range(300):
        r = rng.normal(size=int(rng.integers(2, 2000))) * 10.0 ** rng.integers(-3, 3)
        conf = float(rng.choice([0.8, 0.9, 0.95, 0.99]))
        a = (1 - conf) / 2
        assert percentile_interval(r, confidence=conf) == (float(np.quantile(r, a)), float(np.quantile(r, 1 - a)))
