"""The basic statistics (medeval_kit.stats) against scipy and statsmodels."""

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from medeval_kit.stats import (
    bootstrap_means,
    fisher_z_interval,
    interval,
    mean_interval,
    normal_interval,
    percentile_interval,
    proportion_ci,
    resample_counts,
    wilson_interval,
)


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (7, 20), (20, 20), (1, 1)])
def test_proportion_ci_matches_statsmodels(k, n):
    assert proportion_ci(k, n) == pytest.approx(proportion_confint(k, n, method="beta"))
    assert proportion_ci(k, n, method="wilson") == pytest.approx(proportion_confint(k, n, method="wilson"))
    assert wilson_interval(k, n) == pytest.approx(proportion_confint(k, n, method="wilson"))


def test_wilson_fractional_and_empty():
    lo, hi = wilson_interval(3.5, 10, confidence=0.9)
    assert lo < 0.35 < hi
    assert (lo, hi) == pytest.approx(proportion_confint(3.5, 10, alpha=0.1, method="wilson"))
    assert all(np.isnan(wilson_interval(0, 0))) and all(np.isnan(proportion_ci(0, 0)))


def test_mean_interval_t_and_wilson():
    from scipy import stats

    x = np.array([1.0, 2.0, 4.0, 7.0])
    lo, hi, m, note = mean_interval(x)
    ref = stats.t.interval(0.95, 3, loc=x.mean(), scale=stats.sem(x))
    assert (lo, hi) == pytest.approx(ref) and m == "t" and note == ""
    assert mean_interval([1.0, 0.0, 1.0])[2] == "Wilson"
    assert mean_interval([3.0])[3] == "fewer than 2 values"
    assert mean_interval([2.0, 1.0], method="wilson")[3] == "values are not 0/1"


def test_fisher_z_interval():
    r, n = 0.5, 40
    z, se = np.arctanh(r), 1 / np.sqrt(n - 3)
    assert fisher_z_interval(r, n) == pytest.approx((np.tanh(z - 1.959964 * se), np.tanh(z + 1.959964 * se)), abs=1e-6)
    lo, hi = fisher_z_interval(r, n, variance=1.06)
    assert lo < np.tanh(z - 1.959964 * se)
    assert all(np.isnan(fisher_z_interval(0.5, 3))) and all(np.isnan(fisher_z_interval(np.nan, 30)))


def test_bootstrap_engine_matches_scipy_percentile():
    from scipy.stats import bootstrap

    x = np.random.default_rng(1).normal(size=60)
    reps = bootstrap_means(x, 4000, np.random.default_rng(2))
    lo, hi = percentile_interval(reps)
    ref = bootstrap((x,), np.mean, n_resamples=4000, method="percentile", random_state=3).confidence_interval
    assert lo == pytest.approx(ref.low, abs=0.05) and hi == pytest.approx(ref.high, abs=0.05)
    # the chunked counts give the same replicates as direct draws
    W = np.vstack([w for w, _ in resample_counts(60, 4000, np.random.default_rng(2), 1000)])
    assert (W @ x / 60) == pytest.approx(reps)
    # BCa runs and brackets the estimate; too few replicates give NaN with the count
    lo2, hi2, nv = interval(float(x.mean()), reps, 0.95, "bca", jack=np.array([np.delete(x, i).mean() for i in range(60)]))
    assert lo2 < x.mean() < hi2 and nv == 4000
    assert np.isnan(interval(0.1, np.array([0.1]), 0.95, "percentile")[0])


def test_normal_interval_matches_statsmodels_wald():
    k, n = 13, 40
    p = k / n
    lo, hi = normal_interval(p, np.sqrt(p * (1 - p) / n))
    assert (lo, hi) == pytest.approx(proportion_confint(k, n, method="normal"))
    assert normal_interval(0.02, 0.05, bounds=(0.0, 1.0))[0] == 0.0
    assert all(np.isnan(normal_interval(np.nan, 0.1)))
