"""Example calls of the public ``rank`` functions (see ``tests/api_examples/__init__.py``)."""

from functools import lru_cache

from medeval_kit import rank

_DEMO = {"item": "case_id", "judge": "physician_group", "model_a": "response_a_model",
         "model_b": "response_b_model", "verdict": "winner"}


@lru_cache(maxsize=1)
def _comparisons():
    return rank.comparisons(rank.demo_comparisons(n_items=60, seed=1), columns=_DEMO)


@lru_cache(maxsize=1)
def _fit():
    return rank.rank_models(_comparisons(), n_boot=50, seed=0)


def _own_comparisons(t):
    """The demo's table under the canonical names, renamed like the shared tables, read back with columns=."""
    return rank.comparisons(t.own(_comparisons()[["item", "judge", "model_a", "model_b", "raw"]]
                                  .rename(columns={"raw": "verdict"})), columns=t.columns)


EXAMPLES = {
    "rank_models": lambda t: rank.rank_models(_comparisons(), n_boot=50, seed=0),
    "rank_agreement": lambda t: rank.rank_agreement(_fit(), "physicians"),
    "rank_flips": lambda t: rank.rank_flips(_fit(), reference="physicians"),
    "elo_ratings": lambda t: rank.elo_ratings(_comparisons(), n_orders=3),
    "elo_spread": lambda t: rank.elo_spread(rank.elo_ratings(_comparisons(), n_orders=3)),
    # a reader of your table (kind below): run here so that the column test compares renamed and canonical
    "comparisons": _own_comparisons,
}

OTHER = {
    "comparisons": "reader",
    "read_comparisons": "reader",
    "comparisons_from_counts": "reader",
    "comparisons_from_bundle": "data",
    "demo_comparisons": "data",
    "RankResult": "class",
    "connected": "helper",
    "graph_problem": "helper",
    "prior_label": "helper",
    "fit_bradley_terry": "helper",
    "fit_davidson": "helper",
    "information": "helper",
    "outcome_probabilities": "helper",
}
