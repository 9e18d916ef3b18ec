"""Example calls of the public ``pairwise`` functions (see ``tests/api_examples/__init__.py``)."""

from medeval_kit import pairwise

EXAMPLES = {
    "win_rate": lambda t: pairwise.win_rate(pairwise.resolve_orders(t.judgments, "tie", columns=t.columns)),
    # verdict tables (kind "helper" below): run here so that the column test compares renamed and canonical
    "majority_over_repeats": lambda t: pairwise.majority_over_repeats(t.judgments, columns=t.columns),
    "resolve_orders": lambda t: pairwise.resolve_orders(t.judgments, "neutral", columns=t.columns),
    "merge_judges": lambda t: pairwise.merge_judges(
        pairwise.resolve_orders(t.judgments, "tie", columns=t.columns), ("j1", "j2")),
    "resolve_pairwise": lambda t: pairwise.resolve_pairwise(t.judgments, "neutral", merge=("j1", "j2"),
                                                            columns=t.columns),
    "mean_over_repeats": lambda t: pairwise.mean_over_repeats(t.judgments, columns=t.columns),
    "resolve_calibrated": lambda t: pairwise.resolve_calibrated(t.judgments, "mec_bpc", columns=t.columns),
}

OTHER = {
    "unswap": "helper", "to_slot": "helper", "mirror_slot": "helper", "polarity_of": "helper",
    "neutral_label": "helper", "polarity_series": "helper", "position_entropy": "helper",
    "majority_over_repeats": "helper", "resolve_orders": "helper", "merge_judges": "helper",
    "resolve_pairwise": "helper", "mean_over_repeats": "helper", "resolve_calibrated": "helper",
}
