"""Example calls of the public ``rounds`` functions (see ``tests/api_examples/__init__.py``)."""

from medeval_kit import rounds


def _per(t):
    """One row per item and round, from the shared rounds table."""
    return rounds.item_rounds(t.rounds, columns=t.columns)


EXAMPLES = {
    "round_means": lambda t: rounds.round_means(t.own(_per(t)), bounds=(0, 1), columns=t.columns),
    "stop_best_distribution": lambda t: rounds.stop_best_distribution(t.rounds, columns=t.columns),
    "paired_round_tests": lambda t: rounds.paired_round_tests(t.own(_per(t)), n_boot=50, columns=t.columns),
    "mixed_model": lambda t: rounds.mixed_model(t.own(_per(t)), columns=t.columns),
    "round_correlations": lambda t: rounds.round_correlations(t.own(_per(t)), "round", "total", columns=t.columns),
    "stopping_rule_consistency": lambda t: rounds.stopping_rule_consistency(t.rounds, columns=t.columns),
    "roundwise_tables": lambda t: rounds.roundwise_tables(t.rounds, n_boot=50, columns=t.columns),
    "fit_introspection_curve": lambda t: rounds.fit_introspection_curve(
        [1, 2, 3, 4], [0.3, 0.42, 0.48, 0.5], p0={"a": 0.5, "b": 0.5, "c": 1.0}),
    # tables that are not statistics (kinds below): run here so that the column test compares them
    "apply_stopping_rule": lambda t: rounds.apply_stopping_rule(t.rounds, "total", columns=t.columns),
    "select_best_round": lambda t: rounds.select_best_round(t.rounds, columns=t.columns),
    "fill_best_rounds": lambda t: rounds.fill_best_rounds(t.rounds, columns=t.columns),
    "component_table": lambda t: rounds.component_table(t.rounds, columns=t.columns),
    "item_rounds": _per,
    "item_summary": lambda t: rounds.item_summary(t.rounds, columns=t.columns),
    "load_summary": lambda t: rounds.load_summary(t.rounds, columns=t.columns),
    "aspect_sum_check": lambda t: rounds.aspect_sum_check(t.rounds, columns=t.columns),
}

OTHER = {
    "ScoreParse": "class",
    "parse_score_string": "helper",
    "should_stop": "helper",
    "apply_stopping_rule": "helper",
    "select_best_round": "helper",
    "fill_best_rounds": "helper",
    "component_table": "helper",
    "item_rounds": "helper",
    "item_summary": "helper",
    "load_summary": "helper",
    "aspect_sum_check": "helper",
    "read_rounds": "reader",
    "component_mean_total": "helper",
    "introspection_curve": "helper",
    "CurveFit": "class",
    "RoundwiseTables": "class",
}
