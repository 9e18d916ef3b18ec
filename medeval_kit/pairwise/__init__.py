"""Pairwise verdicts: the one map between presented slots (first/second) and model terms (A/B),
criterion polarity, the resolution policies that turn repeats, two orders and two judges into one
verdict per item, and polarity-aware win rates. Every pairwise module above this layer uses these."""

from .resolve import (
                      CALIBRATED_POLICIES,
                      POLICIES,
                      majority_over_repeats,
                      mean_over_repeats,
                      merge_judges,
                      position_entropy,
                      resolve_calibrated,
                      resolve_orders,
                      resolve_pairwise,
)
from .slots import (
                      MODEL_LABELS,
                      ORDERS,
                      SLOT_LABELS,
                      SLOT_OF,
                      mirror_slot,
                      neutral_label,
                      polarity_of,
                      polarity_series,
                      to_slot,
                      unswap,
)
from .win_rate import win_rate

__all__ = ["ORDERS", "MODEL_LABELS", "SLOT_LABELS", "SLOT_OF", "POLICIES", "unswap", "to_slot", "mirror_slot",
           "polarity_of", "neutral_label", "polarity_series", "majority_over_repeats", "resolve_orders",
           "merge_judges", "resolve_pairwise", "win_rate", "CALIBRATED_POLICIES", "mean_over_repeats",
           "resolve_calibrated", "position_entropy"]
