"""Example calls for the API tests: ``generate`` (statistics on small hand-made tables; LLM calls are kind ``llm``)."""

import pandas as pd

from medeval_kit import generate as G


def _labels(t):
    lab = G.synthetic_cloze_labels(n_items=30, seed=1)
    lab["band"] = G.difficulty_band(lab["difficulty"]).astype(str)
    return t.own(lab)


def _acc(t):
    return t.own(pd.DataFrame({"model": list("abcdef") * 2, "dataset": ["d1"] * 6 + ["d2"] * 6,
                               "human": [0.5, 0.6, 0.7, 0.8, 0.55, 0.9] * 2,
                               "synthetic": [0.4, 0.65, 0.6, 0.85, 0.5, 0.8, 0.45, 0.6, 0.7, 0.8, 0.5, 0.95]}))


def _items(t):
    return t.own(pd.DataFrame({
        "item": [f"q{i}" for i in range(8)], "generator": ["g1"] * 4 + ["g2"] * 4, "format": "mcq",
        "answer": list("ABCDAABC"),
        "question": ["fever and cough in a child", "cough with fever", "broken leg in a cast", "leg fracture",
                     "chest pain on exertion", "chest pain at rest", "rash after antibiotics", "itchy rash"]}))


def _judgments(t):
    rows = [{"item": f"q{i}", "criterion": c, "score": float((i + k) % 10 + 1) if (i, k) != (3, 1) else None}
            for i in range(8) for k, c in enumerate(("clarity", "difficulty"))]
    return t.own(pd.DataFrame(rows))


def _srefine(max_rounds=2):
    gens = pd.DataFrame({
        "item": ["a", "a", "b", "c", "c"], "round": [1, 2, 1, 1, 2],
        "score_context": [0.6, 0.9, 0.95, 0.5, 0.7], "total": [0.6, 0.9, 0.95, 0.5, None],
        "qa_correct": [True, True, True, False, True], "stop_by_rule": [False, True, True, False, False],
        "best": [False, True, True, True, False], "n_critique_failed": [0, 0, 0, 0, 1]})
    return G.SRefineResult(rounds=pd.DataFrame(), generations=gens, calls=pd.DataFrame(),
                           params={"max_rounds": max_rounds})


_MACHINE = pd.DataFrame({"case": ["n1", "n1", "n2"], "topic": ["underlying processes/pathways", "x", None],
                         "keypoint": ["sepsis", "lactate", None]})
_HUMAN = pd.DataFrame({"case": ["n1", "n2"], "topic": ["underlying processes/pathways", "y"],
                       "keypoint": ["sepsis", "asthma"]})

EXAMPLES = {
    "abstention_by_band": lambda t: G.abstention_by_band(_labels(t), columns=t.columns),
    "accuracy_by": lambda t: G.accuracy_by(pd.DataFrame({"m": list("aabb"), "normalized_match": [True, False, True, None]}),
                                           by="m"),
    "accuracy_table": lambda t: G.accuracy_table(pd.DataFrame({"model": list("aabb"), "format": "mcq",
                                                               "correct": [True, False, True, None]})),
    "benchmark_correlation": lambda t: G.benchmark_correlation(_acc(t), unit="pairs", columns=t.columns),
    "question_diversity": lambda t: G.question_diversity(_items(t), n_components=2, columns=t.columns),
    "grounded_quality_summary": lambda t: G.grounded_quality_summary(_items(t), _judgments(t), by=("generator",),
                                                                     columns=t.columns),
    "grounded_letter_balance": lambda t: G.grounded_letter_balance(_items(t)),
    "topic_overlap": lambda t: G.topic_overlap(_MACHINE, _HUMAN, n_boot=50),
    "round_summary": lambda t: G.round_summary(_srefine()),
    "stop_rule_comparison": lambda t: G.stop_rule_comparison({("human", "total"): _srefine()}),
}

OTHER = {
    **{name: "llm" for name in (
        "answer_cloze", "extract_topics", "generate_grounded_questions", "qc_judge", "evaluate_benchmark",
        "label_difficulty", "generate_longform_answers", "select_topics", "write_test_points", "machine_triplets",
        "run_srefine", "judge_srefine")},
    **{name: "data" for name in (
        "make_cloze_items", "synthetic_cloze_labels", "load_content_outline", "load_topic_checklist", "human_topics",
        "bundled_machine_topics", "stratified_sample", "stratified_batches")},
    **{name: "helper" for name in (
        "cochran_sample_size", "spearman_from_rank_differences", "spearman_identity_check", "dedup_dbscan",
        "max_stratified_n", "difficulty_band", "normalize_answer", "normalize_text", "match_topic", "topics_schema",
        "critique_schema", "format_mcq", "derived_seed", "shuffle_options", "split_markdown_sections",
        "count_sentences", "build_fewshot_bank", "build_outline_retriever", "srefine_pairs", "srefine_preferences",
        "score_cloze", "lexical_match", "contexts_to_markdown")},
}
