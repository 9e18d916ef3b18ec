"""Judge and generator biases, one concept per file: ``inputs`` (reading and checking judgments,
adapters from pairwise annotations), ``position`` (two-order consistency, flips and first-slot
preference; k-slot preference and score effects), ``length`` (length bias and the length-controlled
win rate), ``self_preference`` (Delta_self / Delta_family over a lineage map) and ``letters`` (the one
correct-letter balance of multiple-choice items) and ``calibration`` (Wang et al. 2023's MEC, BPC and
human-in-the-loop calibration: agreement with humans before and after, the review queue by BPDE, the
review-budget curve). Inputs are long DataFrames under the canonical column names; yours are mapped
once with ``columns={canonical: yours}`` (:mod:`medeval_kit.columns`); every statistic row follows the result contract (``estimate, ci_low, ci_high,
ci_method, n_items, n_failed, note``) with ``judge, criterion, metric`` first (``RESULT_COLUMNS``).
Parse failures (``parse_status != "ok"`` or NA verdicts) are counted in ``n_failed`` and excluded from
every rate; they are never turned into ties. Plots are in :mod:`medeval_kit.viz.bias`, the
``medeval position-bias`` command in :mod:`medeval_kit.cli.bias`."""

from medeval_kit.bias import calibration
from medeval_kit.bias._common import RESULT_COLUMNS
from medeval_kit.bias.calibration import (
                                     budget_curve,
                                     calibrate,
                                     calibration_effect,
                                     review_queue,
                                     synthetic_scored_pairwise,
)
from medeval_kit.bias.inputs import (
                                     check_pairwise,
                                     pairwise_from_annotations,
                                     pairwise_to_response_scores,
                                     read_judgments,
)
from medeval_kit.bias.length import (
                                     length_bias,
                                     length_controlled_win_rate,
                                     longer_preferred_rate,
                                     response_lengths,
                                     simulate_length_bias,
)
from medeval_kit.bias.letters import LETTERS, letter_balance
from medeval_kit.bias.position import (
                                     agreement_on_consistent,
                                     flip_rate_from_labels,
                                     position_bias,
                                     position_bias_wide,
                                     slot_preference,
                                     slot_score_effect,
)
from medeval_kit.bias.self_preference import load_lineage, self_preference, simulate_self_preference

__all__ = [
    "RESULT_COLUMNS",
    "calibration", "calibrate", "calibration_effect", "review_queue", "budget_curve", "synthetic_scored_pairwise",
    "read_judgments",
    "check_pairwise",
    "pairwise_from_annotations",
    "pairwise_to_response_scores",
    "position_bias",
    "position_bias_wide",
    "flip_rate_from_labels",
    "agreement_on_consistent",
    "slot_preference",
    "slot_score_effect",
    "LETTERS",
    "letter_balance",
    "response_lengths",
    "length_bias",
    "longer_preferred_rate",
    "length_controlled_win_rate",
    "simulate_length_bias",
    "load_lineage",
    "self_preference",
    "simulate_self_preference",
]

# old names, kept for one release (issue 24): one reader per table, ``read_<what>``
_OLD = {"user_judgments": ("bias.read_judgments", read_judgments)}


def __getattr__(name: str):
    from medeval_kit.deprecation import deprecated_attribute

    return deprecated_attribute(__name__, name, _OLD)
