"""Example calls for the API tests: ``overview``."""

import pandas as pd

from medeval_kit import overview


def _scores(t):
    return t.own(pd.DataFrame({"item": ["a", "a", "b", "b", "c", "c"], "criterion": ["x", "y"] * 3,
                               "score": [1.0, 2.0, 3.0, None, 5.0, 4.0]}))


def _items(t):
    return t.own(pd.DataFrame({"item": ["a", "b", "c"], "generator": ["g", "g", "h"]}))


EXAMPLES = {
    "label_distribution": lambda t: overview.label_distribution(t.annotations, by="rater_kind",
                                                                columns=t.columns),
    "score_distribution": lambda t: overview.score_distribution(_scores(t), columns=t.columns),
    "score_means": lambda t: overview.score_means(_scores(t), _items(t), n_boot=50, columns=t.columns),
}
OTHER = {"table_counts": "data", "load_overview": "data"}
