"""Basic statistics, one implementation each: proportion and mean intervals, the vectorised item
bootstrap (percentile and BCa), Fisher-z intervals for correlations, and nested seeded item draws (``nested_sample``). Everything above this layer
calls these; tests cross-check them against scipy and statsmodels."""

from .bootstrap import (
    MIN_CI_ITEMS,
    bootstrap_means,
    ci_not_computed,
    interval,
    item_draws,
    percentile_interval,
    resample_counts,
)
from .correlation import fisher_z_interval
from .means import mean_interval, normal_interval
from .proportions import proportion_ci, wilson_interval
from .sampling import nested_order, nested_sample

__all__ = ["proportion_ci", "wilson_interval", "mean_interval", "normal_interval", "fisher_z_interval", "resample_counts",
           "item_draws", "bootstrap_means", "percentile_interval", "interval", "nested_order", "nested_sample",
           "MIN_CI_ITEMS", "ci_not_computed"]
