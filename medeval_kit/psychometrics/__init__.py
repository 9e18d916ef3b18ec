"""Psychometric item analysis of multiple-choice questions: how examinees answer them says how good they are.

``items`` reads MCQs into one table (your own, the bundled MCQG-SRefine difficulty-controlled and
round-trace questions, the generation pipelines' outputs); ``responses`` holds the tidy ``responses``
table (item, examinee, choice, key, correct, parse_status) from your file or from LLM examinees
(models, seeds and personas answering through :mod:`medeval_kit.llm`; missing answers are kept as
missing and counted, never scored wrong); ``ctt`` is classical test theory (difficulty p, corrected
point-biserial, upper-lower 27 % index, distractor analysis and efficiency, KR-20 and alpha if deleted,
review flags with documented thresholds); ``irt`` fits 1PL/2PL models (girth or a scipy marginal ML
fit) with observed-information or parametric-bootstrap SEs and item characteristic curves;
``synthetic`` plants item parameters and measures their recovery; ``compare`` sets p against planted
difficulty labels and per-item statistics across refinement rounds (:mod:`medeval_kit.rounds`). Plots
live in :mod:`medeval_kit.viz.psychometrics`.

    from medeval_kit import psychometrics as pm
    exam = pm.synthetic_exam(30, 500, n_miskeyed=1, seed=0)
    stats = pm.item_statistics(exam.responses)
    flags = pm.item_flags(stats, pm.distractor_analysis(exam.responses))
    fit = pm.fit_irt(exam.responses, family="2pl")
"""

from medeval_kit.deprecation import deprecated_attribute

from .compare import label_association, roundwise_item_change, with_item_info
from .ctt import (
                  FLAG_COLUMNS,
                  FLAG_DEFAULTS,
                  distractor_analysis,
                  distractor_efficiency,
                  flag_counts,
                  group_weights,
                  item_flags,
                  item_statistics,
                  item_table,
                  reliability,
)
from .irt import ENGINES, FAMILIES, IRTFit, fit_irt, icc_table, marginal_loglik
from .items import (
                  DIFFICULTY_LEVELS,
                  LETTERS,
                  format_options,
                  grounded_items,
                  item_counts,
                  mcq_items,
                  medqg_difficulty_items,
                  medqg_round_items,
                  shuffled_options,
                  split_options,
                  srefine_items,
)
from .responses import (
                  PARSE_STATUSES,
                  RESPONSE_COLUMNS,
                  answer_items,
                  answer_schema,
                  examinee_panel,
                  missing_summary,
                  read_responses,
                  responses_from_matrix,
                  score_matrix,
                  score_responses,
)
from .synthetic import SyntheticExam, recovery, recovery_table, synthetic_exam

__all__ = [
    "label_association", "roundwise_item_change", "with_item_info",
    "FLAG_COLUMNS", "FLAG_DEFAULTS", "flag_counts", "distractor_analysis", "distractor_efficiency", "group_weights", "item_flags",
    "item_statistics", "item_table", "reliability",
    "ENGINES", "FAMILIES", "IRTFit", "fit_irt", "icc_table", "marginal_loglik",
    "DIFFICULTY_LEVELS", "LETTERS", "format_options", "grounded_items", "item_counts", "mcq_items",
    "medqg_difficulty_items", "medqg_round_items", "shuffled_options", "split_options", "srefine_items",
    "PARSE_STATUSES", "RESPONSE_COLUMNS", "answer_items", "answer_schema", "examinee_panel", "missing_summary",
    "read_responses", "responses_from_matrix", "score_matrix", "score_responses",
    "SyntheticExam", "recovery", "recovery_table", "synthetic_exam",
]

_OLD = {"MODELS": ("psychometrics.FAMILIES", FAMILIES)}  # the IRT families were called MODELS before 0.2


def __getattr__(name: str):
    return deprecated_attribute(__name__, name, _OLD)
