"""``medeval_kit.stats``: the building blocks of every interval (see ``tests/api_examples/__init__.py``).

They return bounds, draws and notes that the public statistics put into result rows, not results of
their own, so they are helpers.
"""

from __future__ import annotations

OTHER = {name: "helper" for name in (
    "proportion_ci", "wilson_interval", "mean_interval", "normal_interval", "fisher_z_interval",
    "resample_counts", "item_draws", "bootstrap_means", "percentile_interval", "interval", "nested_order",
    "nested_sample", "ci_not_computed",
)}
