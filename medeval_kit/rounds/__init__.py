"""Round-wise analysis of iterative refinement (self-critique / correction rounds, e.g. MCQG-SRefine).

Input is the ``rounds`` table (:mod:`medeval_kit.schemas`): one row per item, round, component and
aspect; component scores are the rows with ``aspect == "total"``; round 1 is the initial draft. The
item's total in a round is the unweighted mean of its normalised component scores. The folder holds
``tables`` (reshaping: component rows, one row per item and round, denominators),
``user`` (:func:`read_rounds`: your rounds file, your column names mapped by ``columns=``, as a ``rounds``
table),
``stopping`` (the stopping rules, :data:`STOP_RULES`, and best-round selection; pure functions the
generation pipeline calls), ``statistics`` (round means available-only vs LOCF, stop/best
distributions, paired tests, a mixed model, correlations; result-contract tables) and ``curves``
(a saturation curve and its fit). Score strings (``"24/25"``) are parsed by
:mod:`medeval_kit.datasets.scores`; plots live in :mod:`medeval_kit.viz.rounds`, the command in
:mod:`medeval_kit.cli.rounds`, the papers' printed numbers in :mod:`medeval_kit.repro`.
"""

from medeval_kit.datasets.scores import ScoreParse, parse_score_string
from medeval_kit.deprecation import deprecated_attribute
from medeval_kit.rounds.curves import (
    CurveFit,
    fit_introspection_curve,
    introspection_curve,
)
from medeval_kit.rounds.statistics import (
    IMPUTATIONS,
    RoundwiseTables,
    mixed_model,
    paired_round_tests,
    round_correlations,
    round_means,
    roundwise_tables,
    stop_best_distribution,
)
from medeval_kit.rounds.stopping import (
    BEST_KEYS,
    STOP_RULES,
    TIE_BREAKS,
    TOTALS,
    apply_stopping_rule,
    fill_best_rounds,
    item_summary,
    select_best_round,
    should_stop,
    stopping_rule_consistency,
)
from medeval_kit.rounds.tables import (
    _load_rounds_file,
    aspect_sum_check,
    component_mean_total,
    component_table,
    item_rounds,
    load_summary,
)
from medeval_kit.rounds.user import read_rounds

__all__ = [
    "STOP_RULES", "TIE_BREAKS", "TOTALS", "BEST_KEYS", "IMPUTATIONS",
    "ScoreParse", "parse_score_string",
    "should_stop", "apply_stopping_rule", "select_best_round", "fill_best_rounds", "stopping_rule_consistency",
    "component_table", "item_rounds", "item_summary", "load_summary", "aspect_sum_check",
    "read_rounds",
    "round_means", "stop_best_distribution", "paired_round_tests", "mixed_model", "round_correlations",
    "roundwise_tables", "RoundwiseTables",
    "component_mean_total", "introspection_curve", "CurveFit", "fit_introspection_curve",
]

# old names, kept for one release (issue 24): one reader per table, ``read_<what>``
_OLD = {
    "user_rounds": ("rounds.read_rounds", read_rounds),
    "load_rounds_file": ("rounds.read_rounds", _load_rounds_file),
}


def __getattr__(name: str):
    return deprecated_attribute(__name__, name, _OLD)
