"""Example calls of the public psychometrics API (see tests/api_examples/__init__.py)."""

from __future__ import annotations

from functools import lru_cache

import pandas as pd

from medeval_kit import psychometrics as pm


@lru_cache(maxsize=1)
def _exam():
    return pm.synthetic_exam(8, 120, n_miskeyed=1, missing_rate=0.05, seed=3)


@lru_cache(maxsize=1)
def _fit():
    return pm.fit_irt(_exam().responses, family="2pl", engine="mml", se="observed")


def _rounds_table() -> pd.DataFrame:
    rows = [{"item": f"t{t}:r{r}", "trace": f"t{t}", "round": r, "source": "s", "p": 0.5 + 0.01 * t * r,
             "r_pbis": 0.1 * r + 0.01 * t} for t in range(8) for r in (1, 2)]
    return pd.DataFrame(rows)


EXAMPLES = {
    "item_statistics": lambda t: pm.item_statistics(t.own(_exam().responses), n_boot=20, columns=t.columns),
    "distractor_analysis": lambda t: pm.distractor_analysis(t.own(_exam().responses), columns=t.columns),
    "distractor_efficiency": lambda t: pm.distractor_efficiency(pm.distractor_analysis(_exam().responses)),
    "reliability": lambda t: pm.reliability(t.own(_exam().responses), columns=t.columns),
    "flag_counts": lambda t: pm.flag_counts(pm.item_flags(pm.item_statistics(_exam().responses, n_boot=0),
                                                          pm.distractor_analysis(_exam().responses))),
    "missing_summary": lambda t: pm.missing_summary(t.own(_exam().responses), columns=t.columns),
    "item_counts": lambda t: pm.item_counts(pm.mcq_items(pd.DataFrame(
        {"item": ["a", "b"], "question": ["q1", "q2"], "options": [{"A": "x", "B": "y"}, "no"], "key": ["A", "B"]}))),
    "fit_irt": lambda t: pm.fit_irt(t.own(_exam().responses), engine="mml", se="none", columns=t.columns),
    "icc_table": lambda t: pm.icc_table(_fit(), items=["q001"]),
    "recovery": lambda t: pm.recovery(_fit(), _exam().truth),
    "recovery_table": lambda t: pm.recovery_table(_fit(), _exam().truth),
    "label_association": lambda t: pm.label_association(pd.DataFrame(
        {"difficulty_rank": [1, 2, 3, 1, 2, 3, 1, 2, 3], "p": [0.9, 0.6, 0.3, 0.8, 0.7, 0.2, 0.9, 0.5, 0.4],
         "trace": ["a"] * 3 + ["b"] * 3 + ["c"] * 3}), n_boot=50),
    "roundwise_item_change": lambda t: pm.roundwise_item_change(t.own(_rounds_table()), statistics=("p", "r_pbis"),
                                                                n_boot=50, columns=t.columns),
}

OTHER = {
    "IRTFit": "class",
    "SyntheticExam": "class",
    "synthetic_exam": "data",
    "medqg_difficulty_items": "data",
    "medqg_round_items": "data",
    "read_responses": "reader",
    "srefine_items": "reader",
    "grounded_items": "reader",
    "mcq_items": "reader",
    "score_responses": "helper",
    "responses_from_matrix": "helper",
    "score_matrix": "helper",
    "with_item_info": "helper",
    "item_table": "helper",
    "item_flags": "helper",
    "group_weights": "helper",
    "marginal_loglik": "helper",
    "format_options": "helper",
    "shuffled_options": "helper",
    "split_options": "helper",
    "answer_schema": "helper",
    "examinee_panel": "llm",
    "answer_items": "llm",
}
