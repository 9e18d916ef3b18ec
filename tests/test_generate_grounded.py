"""Grounded generation (seed 004): chunking, generation with shuffling, QC judge, diversity,
evaluation and correlations, and the analysis of the bundled grounded-synth data."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

sys.path.insert(0, str(Path(__file__).parent))
from _fake_llm import FakeClient  # noqa: E402

from medeval_kit import generate as G  # noqa: E402

MD = """Preamble text.

# Sepsis
Sepsis is organ dysfunction caused by a dysregulated host response to infection.

## Management
Give antibiotics within one hour.

```
# not a heading
```

# Empty

# Asthma
Inhaled corticosteroids control asthma.
"""


def test_split_markdown_one_chunk_per_section():
    ch = G.split_markdown_sections(MD, doc_id="d", min_chars=5)
    assert ch["section_title"].tolist() == ["", "Sepsis", "Management", "Asthma"]
    assert (ch["n_dropped"] == 1).all()  # the empty section, counted on every row
    assert "# not a heading" in ch.loc[2, "text"]  # headings inside code fences are text
    assert ch.loc[2, "path"] == "Sepsis > Management"


def _gen_client(letter="A"):
    def responder(req):
        user = req.messages[-1]["content"]
        if "topics" in user:
            return {"topics": ["first topic", "First topic", "second topic"]}
        if '"A": "..."' in user:
            return {"question": "Which drug?", "A": "alpha", "B": "beta", "C": "gamma", "D": "delta",
                    "explanation": "because", "answer": letter}
        return {"question": "Why?", "explanation": "e", "answer": "short"}
    return FakeClient(responder)


def test_topics_dedupe_and_questions_shuffle_keep_the_key():
    ch = G.split_markdown_sections(MD, min_chars=5)
    topics = G.extract_topics(ch, client=_gen_client(), max_topics=3)
    assert (topics["n_duplicates"] == 1).all()  # "First topic" duplicates "first topic"
    assert len(topics) == 2 * len(ch)
    q = G.generate_grounded_questions(topics, fmt="mcq", client=_gen_client("A"), seed=0)
    assert q["valid"].all()
    for _, r in q.iterrows():
        assert r["choices"][r["answer"]] == "alpha" and r["generated_letter"] == "A"
    # the generator always keyed "A"; after the seeded shuffle the keys spread over letters
    assert q["answer"].nunique() > 1
    from medeval_kit import bias

    gen = q.drop(columns="answer")  # the letters as generated, before the shuffle
    bal = bias.letter_balance(gen, columns={"answer": "generated_letter"}, letters="ABCD")
    assert bal.loc[bal["letter"] == "A", "estimate"].iloc[0] == 1.0 and bal["p_uniform"].iloc[0] < 0.05
    # generate.letter_balance was bias.letter_balance exported twice: the old name works for one release
    with pytest.warns(DeprecationWarning, match="use bias.letter_balance"):
        old = G.letter_balance(gen, columns={"answer": "generated_letter"}, letters="ABCD")
    pd.testing.assert_frame_equal(old, bal)
    oe = G.generate_grounded_questions(topics, fmt="oe", client=_gen_client())
    assert oe["answer"].eq("short").all()


def test_invalid_mcq_is_kept_and_flagged():
    topics = pd.DataFrame({"chunk_id": ["c"], "topic_id": ["c:t0"], "topic": ["t"], "text": ["ctx"]})
    dup = FakeClient(lambda r: {"question": "q", "A": "x", "B": "x", "C": "y", "D": "z", "explanation": "e",
                                "answer": "A"})
    q = G.generate_grounded_questions(topics, client=dup)
    assert not q["valid"].iloc[0] and q["invalid_reason"].iloc[0] == "duplicate options"
    bad = FakeClient(lambda r: "not json")
    q = G.generate_grounded_questions(topics, client=bad)
    assert q["parse_status"].iloc[0] == "failed" and not q["valid"].iloc[0]


def test_qc_judge_writes_a_judgments_table_with_failures_kept():
    from medeval_kit.schemas import validate

    items = pd.DataFrame({"item": ["a", "b"], "context": ["c", "c"], "question": ["q", "q"], "answer": ["x", "y"],
                          "explanation": ["e", "e"]})
    scores = {"clarity": 9, "difficulty": 4, "groundedness": 10, "answer_correctness": 10, "explanation_validity": 8}
    client = FakeClient(lambda r: scores if "<answer>x" in r.messages[-1]["content"] else "garbage")
    j = G.qc_judge(items, client=client)
    validate(j, "judgments")
    assert len(j) == 10 and j.loc[j["item"] == "a", "score"].tolist() == [9, 4, 10, 10, 8]
    assert j.loc[j["item"] == "b", "score"].isna().all()
    assert (j.loc[j["item"] == "b", "parse_status"] == "failed").all()


def test_diversity_is_higher_similarity_for_near_duplicates():
    items = pd.DataFrame({"generator": ["dup"] * 3 + ["div"] * 3,
                          "question": ["sepsis antibiotics timing", "sepsis antibiotics timing now",
                                       "timing of sepsis antibiotics", "asthma inhaler steroid",
                                       "renal dialysis potassium", "stroke alteplase window"]})
    d = G.question_diversity(items, by="generator").set_index("generator")
    assert d.loc["dup", "estimate"] > d.loc["div", "estimate"]
    assert d.loc["dup", "n_pairs"] == 3
    mine = items.rename(columns={"question": "stem"})
    pd.testing.assert_frame_equal(G.question_diversity(mine, by="generator", columns={"question": "stem"})
                                  .set_index("generator"), d)
    with pytest.warns(DeprecationWarning, match="columns="):
        old = G.question_diversity(mine, by="generator", text="stem").set_index("generator")
    pd.testing.assert_frame_equal(old, d)


def test_mean_pairwise_cosine_hand_example():
    from medeval_kit.embed import mean_pairwise_cosine

    X = np.array([[1, 0], [0, 1], [1, 1]], dtype=float)
    # pairs: (1,2)=0, (1,3)=1/sqrt2, (2,3)=1/sqrt2 -> mean = sqrt2/3
    r = mean_pairwise_cosine(X)
    assert r.mean_cosine == pytest.approx(np.sqrt(2) / 3) and r.n_pairs == 3 and r.n_texts == 3
    row = r.to_frame().iloc[0]
    assert row["estimate"] == pytest.approx(np.sqrt(2) / 3) and row["n_items"] == 3
    # paper-code quirk: only > 0 entries -> mean of the two 1/sqrt2
    assert mean_pairwise_cosine(X, paper_code_compat=True).mean_cosine == pytest.approx(1 / np.sqrt(2))
    # the old dict access works for one release, with a warning
    with pytest.warns(DeprecationWarning, match="mean_cosine"):
        assert r["mean_cosine"] == r.mean_cosine


def test_evaluate_benchmark_mcq_and_oe():
    items = pd.DataFrame({"item": ["m1", "o1"], "format": ["mcq", "oe"], "question": ["q?", "why?"],
                          "choices": [{"A": "right", "B": "w1", "C": "w2", "D": "w3"}, None],
                          "answer": ["A", "because"], "valid": [True, True]})

    def responder(req):
        user = req.messages[-1]["content"]
        if "[Expert]" in user:
            return {"grade": "C"}
        if "short answer" in user:
            return {"answer": "because"}
        letter = next(line[0] for line in user.splitlines() if line.endswith(". right"))
        return {"answer": letter}

    res = G.evaluate_benchmark(items, ["local/fake"], client=FakeClient(responder))
    assert res["correct"].tolist() == [True, True]
    acc = G.accuracy_table(res)
    assert acc["n_items"].tolist() == [1, 1]


def test_accuracy_table_follows_the_result_contract():
    from statsmodels.stats.proportion import proportion_confint

    from medeval_kit.results import RESULT_COLUMNS

    resp = pd.DataFrame({"model": ["m"] * 5, "format": ["mcq"] * 5,
                         "correct": pd.array([True, True, True, False, None], dtype="boolean")})
    acc = G.accuracy_table(resp).iloc[0]
    assert list(G.accuracy_table(resp).columns[2:9]) == list(RESULT_COLUMNS)
    # 3 of the 4 scored replies; the failed one counts as wrong in accuracy_all (3 / 5)
    assert (acc["estimate"], acc["n_items"], acc["n_failed"], acc["accuracy_all"]) == (0.75, 4, 1, 0.6)
    assert (acc["ci_low"], acc["ci_high"]) == pytest.approx(proportion_confint(3, 4, method="wilson"))
    assert acc["ci_method"] == "Wilson 95%" and acc["note"] == ""


def test_benchmark_correlation_matches_scipy():
    rng = np.random.default_rng(0)
    acc = pd.DataFrame({"model": np.repeat(list("abcdefgh"), 3), "dataset": list("xyz") * 8,
                        "human": rng.uniform(size=24)})
    acc["synthetic"] = acc["human"] + rng.normal(scale=0.1, size=24)
    r = G.benchmark_correlation(acc, unit="model").set_index("statistic")
    m = acc.groupby("model")[["human", "synthetic"]].mean()
    assert r.loc["spearman", "estimate"] == pytest.approx(stats.spearmanr(m.human, m.synthetic)[0])
    assert r.loc["pearson", "n_items"] == 8 and r.loc["pearson", "ci_method"] == "Fisher z"
    p = G.benchmark_correlation(acc, unit="pairs").set_index("statistic")
    assert (p["unit"] == "pairs").all()
    # the old keywords level= and dataset= work for one release, with a warning
    with pytest.warns(DeprecationWarning, match="use unit="):
        old = G.benchmark_correlation(acc, level="pairs").set_index("statistic")
    pd.testing.assert_frame_equal(old, p)
    with pytest.warns(DeprecationWarning):
        no_ds = G.benchmark_correlation(acc.drop(columns="dataset"), dataset=None, level="model")
    assert no_ds["estimate"].tolist() == pytest.approx(r["estimate"].tolist())
    # columns= maps your names
    mine = acc.rename(columns={"model": "llm", "dataset": "bench"})
    pd.testing.assert_frame_equal(G.benchmark_correlation(mine, unit="pairs", columns={"model": "llm", "dataset": "bench"})
                                  .set_index("statistic"), p)
    assert p.loc["pearson", "estimate"] == pytest.approx(stats.pearsonr(acc.human, acc.synthetic)[0])
    assert p.loc["pearson", "ci_low"] < p.loc["pearson", "estimate"] < p.loc["pearson", "ci_high"]
    # Fisher z with the Fieller variance 1.06 for Spearman: tanh(atanh(r) +- 1.96 sqrt(1.06 / (n - 3)))
    rho, n = p.loc["spearman", "estimate"], p.loc["spearman", "n_items"]
    half = stats.norm.ppf(0.975) * np.sqrt(1.06 / (n - 3))
    assert p.loc["spearman", "ci_high"] == pytest.approx(np.tanh(np.arctanh(rho) + half))


def test_spearman_identity_n13_sumd2_34():
    # 1 - 6*34/(13*(169-1)) = 1 - 204/2184 = 0.906593...
    assert G.spearman_from_rank_differences(34, 13) == pytest.approx(1 - 204 / 2184)
    chk = G.spearman_identity_check({"Ensemble MC": 0.9066, "Llama-3.2-3B-Instruct MC": 0.2527}, n=13)
    row = chk.set_index("quantity").loc["Ensemble MC"]
    assert row["sum_d2"] == 34 and round(row["rho_identity"], 4) == 0.9066
    assert row["rho_scipy"] == pytest.approx(row["rho_identity"])  # independent check on constructed ranks
    # (1 - 0.2527) * 13 * 168 / 6 = 272.0 -> 1 - 6 * 272 / 2184 = 0.252747...
    assert chk.set_index("quantity").loc["Llama-3.2-3B-Instruct MC", "sum_d2"] == 272
    assert chk["sum_d2_even"].all() and list(chk.columns)[:2] == ["quantity", "rho"]


def test_mmlu_pro_aggregations_reproduce_the_data_notes():
    from medeval_kit.datasets import load_mmlu_pro_replication
    from medeval_kit.repro.papers.grounded_synth_2025 import aggregations

    a = aggregations(load_mmlu_pro_replication())
    v = a[a["subset"] == "all 16 evaluated models"].set_index(["aggregation", "statistic"])["estimate"]
    assert round(v[("pairs", "pearson")], 3) == 0.780
    assert round(v[("macro", "pearson")], 3) == 0.904
    assert round(v[("macro", "spearman")], 3) == 0.826
    assert a.loc[a["aggregation"] == "pairs", "n_items"].max() == 96  # 16 models x 6 subjects


def test_bundled_grounded_synth_analysis():
    from medeval_kit.datasets import load_grounded_synth

    b = load_grounded_synth()
    q = G.grounded_quality_summary(b.items, b.judgments)
    assert set(q["criterion"]) == {"answer_correctness", "explanation_validity", "question_clarity",
                                   "question_groundedness"}
    assert (q["n_items"] + q["n_failed"] == 100).all()
    bal = G.grounded_letter_balance(b.items)
    orig = bal[bal["generator"] == "reformat_original"].set_index("letter")
    assert orig.loc["B", "count"] == 70 and orig["n_items"].iloc[0] == 100 and orig.loc["B", "estimate"] == 0.7


def test_grounded_plots_draw_on_the_given_axes():
    from matplotlib.figure import Figure

    from medeval_kit.datasets import load_grounded_synth
    from medeval_kit.viz import figure, plot_grounded_letter_balance, plot_quality

    b = load_grounded_synth()
    fig, ax = figure()
    assert plot_quality(G.grounded_quality_summary(b.items, b.judgments), ax=ax) is fig and ax.lines
    bal = G.grounded_letter_balance(b.items)
    out = plot_grounded_letter_balance(bal)
    assert isinstance(out, Figure)
    # one stacked bar per generator and letter
    assert len(out.axes[0].patches) == bal["generator"].nunique() * 4

