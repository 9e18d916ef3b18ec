"""Generation pipelines: MCQG-SRefine (seed 000), grounded question generation (seed 004),
long-form answers (seed 001) and cloze answers (seed 002).

Every generated row keeps its provenance (model, prompt name + version, round, seed, shuffle
order); parse failures are kept with their ``parse_status`` and counted, never dropped.

>>> from medeval_kit.generate import cochran_sample_size, spearman_from_rank_differences
>>> cochran_sample_size(2698)["n"], round(spearman_from_rank_differences(34, 13), 4)
(337, 0.9066)
"""

from medeval_kit.generate._common import GenerationError, derived_seed, letter_balance, shuffle_options
from medeval_kit.generate.cloze import (
    DEFAULT_BAND_EDGES, abstention_by_band, accuracy_by, answer_cloze, difficulty_band, lexical_match,
    make_cloze_items, max_stratified_n, normalize_answer, score_cloze, stratified_sample,
    synthetic_cloze_labels,
)
from medeval_kit.generate.grounded import (
    QC_CRITERIA, accuracy_table, benchmark_correlation, evaluate_benchmark, extract_topics,
    generate_grounded_questions, grounded_letter_balance, grounded_quality_summary, mmlu_pro_aggregations,
    contexts_to_markdown, plot_letter_balance, plot_quality, qc_judge, question_diversity, spearman_from_rank_differences, spearman_identity_check, split_markdown_sections,
)
from medeval_kit.generate.longform import (
    DIFFICULTY_LEVELS, cochran_sample_size, count_sentences, dedup_dbscan, generate_longform_answers,
    label_difficulty, stratified_batches,
)
from medeval_kit.generate.mcqg import (
    STOP_RULES, SRefineResult, build_fewshot_bank, critique_schema, format_mcq, load_srefine_inputs, plot_rounds,
    round_summary, run_srefine,
)

__all__ = [
    "GenerationError", "derived_seed", "letter_balance", "shuffle_options",
    "DEFAULT_BAND_EDGES", "abstention_by_band", "accuracy_by", "answer_cloze", "difficulty_band", "lexical_match",
    "make_cloze_items", "max_stratified_n", "normalize_answer", "score_cloze", "stratified_sample", "synthetic_cloze_labels",
    "QC_CRITERIA", "accuracy_table", "benchmark_correlation", "evaluate_benchmark", "extract_topics",
    "generate_grounded_questions", "grounded_letter_balance", "grounded_quality_summary", "mmlu_pro_aggregations",
    "contexts_to_markdown", "plot_letter_balance", "plot_quality", "qc_judge", "question_diversity", "spearman_from_rank_differences", "spearman_identity_check",
    "split_markdown_sections",
    "DIFFICULTY_LEVELS", "cochran_sample_size", "count_sentences", "dedup_dbscan", "generate_longform_answers",
    "label_difficulty", "stratified_batches",
    "STOP_RULES", "SRefineResult", "build_fewshot_bank", "critique_schema", "format_mcq", "load_srefine_inputs",
    "plot_rounds", "round_summary", "run_srefine",
]
