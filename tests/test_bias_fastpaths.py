"""The fast paths of medeval_kit.bias give the numbers of the slow code they replace (issue 25).

* ``calibration._onehot``: ``isin`` on object labels instead of a Python call per label;
* ``calibration._rounded``: each distinct value formatted once;
* ``inputs._unique_mode``: the human majority per item from counts instead of ``Series.mode`` per group;
* ``position._ratio_interval``: replicate sums as one matrix product of draw counts (whole-number metrics).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medeval_kit import bias
from medeval_kit.bias import calibration as C
from medeval_kit.bias import inputs as I
from medeval_kit.bias import position as P
from medeval_kit.datasets.synthetic import synthetic_pairwise


def _onehot_reference(labels: pd.Series) -> np.ndarray:
    lab = labels.map(lambda v: C._TO_CAT.get(v) if isinstance(v, str) else None)
    return np.stack([lab.eq(c).to_numpy(float) for c in C.CATEGORIES], axis=1)


@pytest.mark.parametrize("dtype", [object, "category", "string", "str"])
@pytest.mark.parametrize("n", [0, 1, 7, 500])
def test_onehot_equals_per_value_mapping(dtype, n):
    rng = np.random.default_rng(n)
    vals = ["A", "B", "tie", "neither", None, np.nan, "x", "", 1, 1.0, "a", "A "]
    v = [vals[i] for i in rng.integers(0, len(vals), n)]
    if dtype is not object:
        v = [x if isinstance(x, str) else None for x in v]
    labels = pd.Series(v, dtype=dtype)
    got, ref = C._onehot(labels), _onehot_reference(labels)
    assert got.shape == ref.shape == (n, 3)
    assert np.array_equal(got, ref, equal_nan=True)


def test_rounded_equals_per_value_formatting():
    rng = np.random.default_rng(0)
    for x in (np.array([]), np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1 / 3, 1 / 3 + 1e-17]),
              rng.normal(size=300), rng.integers(0, 5, 300) / 3):
        ref = np.array([float(f"{v:.12g}") for v in x])
        assert np.array_equal(C._rounded(x), ref, equal_nan=True)


def test_calibration_tables_on_synthetic_judges():
    """The queue order and the before/after table are what the per-value code gave (same draws, same floats)."""
    calls, humans = bias.synthetic_scored_pairwise(120, position_bonus=2.0, samples=3, seed=4)
    cal = bias.calibrate(calls)
    q = bias.review_queue(cal)
    ent = np.array([float(f"{v:.12g}") for v in cal["entropy"].fillna(np.inf)])
    marg = np.array([float(f"{v:.12g}") for v in cal["margin"].abs().fillna(0.0)])
    order = np.lexsort((cal["item"].to_numpy(str), marg, -ent, ~cal["resolution"].ne("calibrated").to_numpy()))
    assert q["item"].tolist() == cal["item"].to_numpy()[order].tolist()
    effect = bias.calibration_effect(cal, humans, n_boot=200, seed=1)
    h = _onehot_reference(C.reference_labels(humans)["reference"])
    w = _onehot_reference(cal["mec_bpc"])
    level = effect[(effect["method"] == "mec_bpc") & (effect["metric"] == "accuracy")
                   & (effect["comparison"] == "level")]
    assert level["estimate"].iloc[0] == pytest.approx(float((w * h).sum(1).mean()), abs=0)


def _mode_reference(df, keys, value):
    return df.groupby(keys)[value].agg(lambda v: float(v.mode().iloc[0]) if len(v.mode()) == 1 else 0.0)


@pytest.mark.parametrize("trial", range(12))
def test_unique_mode_equals_series_mode(trial):
    rng = np.random.default_rng(trial)
    n = int(rng.integers(1, 200))
    df = pd.DataFrame({"item": rng.integers(0, 30, n).astype(str), "criterion": rng.choice(["x", "y"], n),
                       "_c": rng.choice([1.0, -1.0, 0.0, np.nan], n)})
    got, ref = I._unique_mode(df, ["item", "criterion"], "_c"), _mode_reference(df, ["item", "criterion"], "_c")
    assert got.index.equals(ref.index) and got.dtype == ref.dtype
    assert np.array_equal(got.to_numpy(), ref.to_numpy())


def test_pairwise_from_annotations_reference_pref():
    ann = pd.DataFrame({"item": ["1", "1", "1", "2", "2", "3", "3", "3"],
                        "rater": ["h1", "h2", "h3", "h1", "h2", "h1", "h2", "judge"],
                        "criterion": "overall",
                        "label": ["A", "A", "B", "A", "B", "tie", None, "A"]})
    out = bias.pairwise_from_annotations(ann, reference_raters=["h1", "h2", "h3"])
    assert out.groupby("item")["reference_pref"].first().to_dict() == {"1": 1.0, "2": 0.0, "3": 0.0}


def test_position_bias_matrix_sums_equal_fancy_indexing(monkeypatch):
    """position_bias with the count-matrix sums equals the per-draw sums it replaced, frame for frame."""
    synth = synthetic_pairwise(n_items=120, judges=("j1", "j2"), criteria=("c1", "c2"), first_slot_preference=0.2,
                               tie_rate=0.1, repeats=3, seed=2)
    fast = bias.position_bias(synth, n_boot=300, seed=5)
    monkeypatch.setattr(P, "_whole", lambda x: False)
    slow = bias.position_bias(synth, n_boot=300, seed=5)
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)


def test_replicate_sums():
    rng = np.random.default_rng(1)
    draws = rng.integers(0, 9, size=(50, 9))
    counts = P._draw_counts(draws, 9)
    assert counts.sum(1).tolist() == [9.0] * 50
    for x in (rng.integers(0, 4, 9).astype(float), rng.normal(size=9)):
        assert np.array_equal(P._replicate_sums(x, draws, counts), x[draws].sum(1))
