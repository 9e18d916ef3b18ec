"""Generation pipelines and the statistics on what they generate: MCQG-SRefine (``mcqg``: INIT ->
self-answer -> critique -> correction, round by round), grounded question generation (``grounded``: the
pipeline; ``grounded_analysis``: accuracy, correlations with a human benchmark, diversity, judge
quality, letter balance), long-form answers (``longform``) and cloze answers (``cloze``), with the
shared call/shuffle helpers in ``_common``. Every generated row keeps its provenance (model, prompt
name + version, round, random seed, shuffle order); parse failures are kept with their
``parse_status`` and counted, never dropped. Plots of these results are in :mod:`medeval_kit.viz`.

>>> from medeval_kit.generate import cochran_sample_size, spearman_from_rank_differences
>>> cochran_sample_size(2698)["n"], round(spearman_from_rank_differences(34, 13), 4)
(337, 0.9066)
"""

from medeval_kit.generate._common import DEFAULT_MODEL, GenerationError, derived_seed, shuffle_options
from medeval_kit.generate.cloze import (
    DEFAULT_BAND_EDGES,
    abstention_by_band,
    accuracy_by,
    answer_cloze,
    difficulty_band,
    lexical_match,
    make_cloze_items,
    max_stratified_n,
    normalize_answer,
    score_cloze,
    stratified_sample,
    synthetic_cloze_labels,
)
from medeval_kit.generate.grounded import (
    QC_CRITERIA,
    contexts_to_markdown,
    evaluate_benchmark,
    extract_topics,
    generate_grounded_questions,
    qc_judge,
    split_markdown_sections,
)
from medeval_kit.generate.grounded_analysis import (
    accuracy_table,
    benchmark_correlation,
    grounded_letter_balance,
    grounded_quality_summary,
    question_diversity,
    spearman_from_rank_differences,
    spearman_identity_check,
)
from medeval_kit.generate.longform import (
    DIFFICULTY_LEVELS,
    cochran_sample_size,
    count_sentences,
    dedup_dbscan,
    generate_longform_answers,
    label_difficulty,
    stratified_batches,
)
from medeval_kit.generate.mcqg import (
    SRefineJudgment,
    SRefineResult,
    build_fewshot_bank,
    critique_schema,
    format_mcq,
    judge_srefine,
    round_summary,
    run_srefine,
    srefine_pairs,
    srefine_preferences,
    stop_rule_comparison,
)
from medeval_kit.generate.topics import (
    StageZeroResult,
    build_outline_retriever,
    bundled_machine_topics,
    human_topics,
    load_content_outline,
    load_topic_checklist,
    machine_triplets,
    match_topic,
    normalize_text,
    select_topics,
    topic_overlap,
    topics_schema,
    write_test_points,
)

__all__ = [
    "DEFAULT_MODEL", "GenerationError", "derived_seed", "shuffle_options",
    "DEFAULT_BAND_EDGES", "abstention_by_band", "accuracy_by", "answer_cloze", "difficulty_band", "lexical_match",
    "make_cloze_items", "max_stratified_n", "normalize_answer", "score_cloze", "stratified_sample", "synthetic_cloze_labels",
    "QC_CRITERIA", "contexts_to_markdown", "evaluate_benchmark", "extract_topics", "generate_grounded_questions",
    "qc_judge", "split_markdown_sections",
    "accuracy_table", "benchmark_correlation", "grounded_letter_balance", "grounded_quality_summary",
    "question_diversity", "spearman_from_rank_differences", "spearman_identity_check",
    "DIFFICULTY_LEVELS", "cochran_sample_size", "count_sentences", "dedup_dbscan", "generate_longform_answers",
    "label_difficulty", "stratified_batches",
    "SRefineJudgment", "SRefineResult", "build_fewshot_bank", "critique_schema", "format_mcq",
    "judge_srefine", "round_summary", "run_srefine", "srefine_pairs", "srefine_preferences", "stop_rule_comparison",
    "StageZeroResult", "build_outline_retriever", "bundled_machine_topics", "human_topics", "load_content_outline",
    "load_topic_checklist", "machine_triplets", "match_topic", "normalize_text", "select_topics", "topic_overlap",
    "topics_schema", "write_test_points",
]


def _old_names() -> dict:
    from medeval_kit.bias import letter_balance
    from medeval_kit.datasets import load_srefine_inputs

    return {
        "letter_balance": ("bias.letter_balance", letter_balance),
        "load_srefine_inputs": ("datasets.load_srefine_inputs", load_srefine_inputs),
        "normalise_text": ("generate.normalize_text", normalize_text),
    }


def __getattr__(name):
    """Old names, kept for one release (:mod:`medeval_kit.deprecation`)."""
    from medeval_kit.deprecation import deprecated_attribute

    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return deprecated_attribute(__name__, name, _old_names())
