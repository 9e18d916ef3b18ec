"""Long-form (seed 001) and cloze (seed 002) helpers."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _fake_llm import FakeClient  # noqa: E402

from medeval_kit import generate as G  # noqa: E402


def test_cochran_337_for_2698():
    c = G.cochran_sample_size(2698)
    # n0 = 1.959964^2 * 0.25 / 0.0025 = 384.146; n = 384.146 / (1 + 383.146/2698) = 336.38 -> 337
    assert c["n0"] == pytest.approx(384.146, abs=1e-3)
    assert c["n_exact"] == pytest.approx(336.38, abs=0.01)
    assert c["n"] == 337
    assert G.cochran_sample_size()["n"] == 385  # infinite population


def test_dbscan_dedup_keeps_one_medoid_per_cluster():
    # three near-identical vectors around (1, 0) and two distinct ones
    X = np.array([[1, 0.0], [1, 0.05], [1, -0.05], [0, 1], [-1, 0.2]])
    out = G.dedup_dbscan(["a", "b", "c", "d", "e"], embeddings=X)
    assert out["is_medoid"].sum() == 3 and (~out["is_medoid"]).sum() == 2  # 3 clusters, 2 texts removed
    first = out[out["cluster"] == out.loc[0, "cluster"]]
    assert first["cluster_size"].iloc[0] == 3
    assert first.loc[first["is_medoid"], "text"].tolist() == ["a"]  # the central vector


def test_dbscan_eps_boundary_uses_cosine_distance():
    # cosine similarity 0.8 -> distance 0.2 <= 0.25: same cluster; similarity 0.7 -> 0.3: different
    a = np.array([1.0, 0.0])
    b = np.array([0.8, 0.6])
    c = np.array([0.7, np.sqrt(1 - 0.49)])
    assert G.dedup_dbscan(["a", "b"], embeddings=np.vstack([a, b]))["cluster"].nunique() == 1
    assert G.dedup_dbscan(["a", "c"], embeddings=np.vstack([a, c]))["cluster"].nunique() == 2


def test_stratified_batches_are_proportional_and_disjoint():
    items = pd.DataFrame({"item": range(100), "difficulty": [1] * 60 + [2] * 30 + [3] * 10})
    b = G.stratified_batches(items, size=20, n_batches=2, seed=1)
    assert b.groupby(["batch", "stratum"]).size().tolist() == [12, 6, 2, 12, 6, 2]
    assert b["item"].is_unique
    assert (b["n_dropped"] == 0).all()
    # missing="drop": the 10 unlabelled items are left out and counted on every row
    items["difficulty"] = items["difficulty"].astype("Int64").mask(items["item"] >= 90)
    d = G.stratified_batches(items, size=10, missing="drop", seed=1)
    assert "<missing>" not in set(d["stratum"]) and (d["n_dropped"] == 10).all()


def test_difficulty_labels_and_three_sentence_answers():
    items = pd.DataFrame({"item": ["q1", "q2"], "question": ["Is ibuprofen safe?", "What is CAR-T?"]})
    lab = G.label_difficulty(items, client=FakeClient(lambda r: {"difficulty": 3} if "CAR" in r.messages[-1]["content"]
                                                      else "??"))
    assert lab["difficulty"].isna().tolist() == [True, False] and lab["difficulty_label"].iloc[1] == "advanced"
    ans = G.generate_longform_answers(items, client=FakeClient(lambda r: "One. Two. Three. Four."))
    assert ans["n_sentences"].tolist() == [4, 4] and ans["over_cap"].all()


def test_longform_prompt_caps_at_three_sentences():
    from medeval_kit.prompts import load_prompt

    msgs = load_prompt("generate/longform_answer").render(question="q")
    assert "at most three sentences" in msgs[-1]["content"]


def test_normaliser_and_scores():
    df = pd.DataFrame({"answer": ["Morbus Crohn.", "morbus crohn", None], "reference": ["Morbus Crohn"] * 3})
    s = G.score_cloze(df)
    assert s["exact_match"].tolist()[:2] == [False, False] and s["normalized_match"].tolist()[:2] == [True, True]
    assert s["exact_match"].isna().tolist() == [False, False, True]
    assert G.normalize_answer("Die Niere", articles=("die",)) == "niere"


def test_lexical_match_any_student():
    r = pd.DataFrame({"item": ["a", "a", "b", "b"], "exact_match": [False, True, False, pd.NA]})
    lm = G.lexical_match(r).set_index("item")
    assert lm.loc["a", "stratum"] == "match" and lm.loc["b", "stratum"] == "nomatch" and lm.loc["b", "n_missing"] == 1


def test_stratified_80_20_sample_weights_undo_the_oversampling():
    # population: 900 nomatch (accuracy 0.2), 100 match (accuracy 0.9) -> true accuracy 0.27
    pop = pd.DataFrame({"item": range(1000), "stratum": ["nomatch"] * 900 + ["match"] * 100})
    pop["correct"] = np.r_[np.arange(900) % 5 == 0, np.arange(100) % 10 != 0]
    s = G.stratified_sample(pop, n=100, seed=0)
    assert s["stratum"].value_counts().to_dict() == {"nomatch": 80, "match": 20}
    assert s["weight"].sum() == pytest.approx(1000)  # sum of N_h / n_h over the sample = N
    unweighted = G.accuracy_by(s.assign(all="x"), by="all", correct="correct")["estimate"].iloc[0]
    weighted = G.accuracy_by(s.assign(all="x"), by="all", correct="correct", weight="weight")
    # weighted = (900 * p_nomatch + 100 * p_match) / 1000 with sample stratum accuracies
    p = s.groupby("stratum")["correct"].mean()
    assert weighted["estimate"].iloc[0] == pytest.approx((900 * p["nomatch"] + 100 * p["match"]) / 1000)
    assert abs(weighted["estimate"].iloc[0] - 0.27) < abs(unweighted - 0.27)
    assert "n_eff" in weighted.columns


def test_difficulty_band_edges_are_configurable():
    v = [0.0, 0.5, 0.75, 1.0, 1.5, 2.0]
    assert G.difficulty_band(v).tolist() == ["<=0.5", "<=0.5", "(0.5, 1.0]", "(0.5, 1.0]", "(1.0, 1.5]", ">1.5"]
    assert G.difficulty_band(v, right=False).tolist() == ["<0.5", "[0.5, 1.0)", "[0.5, 1.0)", "[1.0, 1.5)",
                                                          ">=1.5", ">=1.5"]
    assert G.difficulty_band([0.3, 1.2], edges=(1.0,)).tolist() == ["<=1.0", ">1.0"]


def test_abstention_by_band_humans_and_llms():
    lab = pd.DataFrame({"rater_kind": ["human"] * 4 + ["llm"] * 2, "band": ["easy", "easy", "hard", "hard",
                                                                            "hard", "hard"],
                        "label": ["correct", "abstain", "abstain", None, "correct", "incorrect"]})
    a = G.abstention_by_band(lab).set_index(["rater_kind", "band"])
    assert a.loc[("human", "easy"), "estimate"] == 0.5
    assert a.loc[("human", "hard"), "n_items"] == 1 and a.loc[("human", "hard"), "n_failed"] == 1
    assert a.loc[("llm", "hard"), "estimate"] == 0.0
    # 1 abstention of 2 labels: Wilson 95% = (0.5 +- 1.96 sqrt(0.25/2 + 1.96^2/16)) / (1 + 1.96^2/2)
    z = 1.959963984540054
    half = z * np.sqrt(0.25 / 2 + z * z / 16) / (1 + z * z / 2)
    assert a.loc[("human", "easy"), "ci_low"] == pytest.approx(0.5 - half)
    assert a.loc[("human", "easy"), "ci_method"] == "Wilson 95%"


def test_answer_cloze_counts_parse_failures():
    items = pd.DataFrame({"item": ["c1", "c2"], "question": ["The [...] filters blood.", "x [...]"],
                          "reference": ["kidney", "y"]})
    out = G.answer_cloze(items, client=FakeClient(lambda r: {"answer": "Kidney"} if "filters" in
                                                  r.messages[-1]["content"] else "nope"))
    assert out["normalized_match"].tolist()[0] is True or out["normalized_match"].iloc[0]
    assert out["parse_status"].tolist() == ["ok", "failed"] and pd.isna(out["normalized_match"].iloc[1])


def test_make_cloze_items_blanks_the_keypoint():
    items = pd.DataFrame({"item": ["a", "b"], "context": ["No match here. Still none.", "Fever. Sepsis was treated."],
                          "keypoint": ["asthma", "sepsis"]})
    c = G.make_cloze_items(items, n=5, seed=0)
    assert c["question"].tolist() == ["[...] was treated."] and c["reference"].tolist() == ["Sepsis"]
    assert c["n_skipped"].tolist() == [1] and c["dataset"].tolist() == ["medqg_cloze"]
    # your column names through columns=; the old text=/answer= keywords for one release, with a warning
    mine = items.rename(columns={"context": "note", "keypoint": "kp"})
    pd.testing.assert_frame_equal(G.make_cloze_items(mine, n=5, seed=0, columns={"context": "note", "keypoint": "kp"}), c)
    with pytest.warns(DeprecationWarning, match="columns="):
        pd.testing.assert_frame_equal(G.make_cloze_items(mine, n=5, seed=0, text="note", answer="kp"), c)


def test_max_stratified_n_fits_the_pool():
    pool = pd.DataFrame({"stratum": ["nomatch"] * 9 + ["match"] * 1})
    # n = 5 -> 4 nomatch + 1 match fits; n = 6 -> round(4.8) = 5 nomatch + 1 match also fits; n = 7 -> 6 + 1 fits;
    # n = 8 -> 6 + 2 match does not; n = 9 -> 7 + 2 no; n = 10 -> 8 + 2 no
    assert G.max_stratified_n(pool) == 7
    # no match items: n = 2 rounds to 2 nomatch + 0 match (fits); n = 3 -> 2 + 1 match (does not)
    assert G.max_stratified_n(pool.iloc[:9]) == 2


def test_synthetic_labels_show_rising_human_abstention():
    lab = G.synthetic_cloze_labels(400, seed=1)
    lab["band"] = G.difficulty_band(lab["difficulty"])
    a = G.abstention_by_band(lab)
    h = a[a["rater_kind"] == "human"]
    assert h["band"].tolist() == ["<=0.5", "(0.5, 1.0]", "(1.0, 1.5]", ">1.5"]  # ordered bands
    assert h["estimate"].iloc[-1] > h["estimate"].iloc[0]
    assert (a["n_items"] > 0).all()


def test_cloze_accuracy_table_and_plot():
    from matplotlib.figure import Figure

    from medeval_kit.results import check_result
    from medeval_kit.viz import figure, plot_cloze_accuracy

    df = pd.DataFrame({"match": ["exact"] * 4 + ["normalised"] * 4,
                       "ok": pd.array([True, False, None, True, True, True, True, False], dtype="boolean")})
    acc = G.accuracy_by(df, by="match", correct="ok")
    assert check_result(acc) == [] and acc["n_items"].tolist() == [3, 4] and acc["n_failed"].tolist() == [1, 0]
    assert acc["estimate"].tolist() == pytest.approx([2 / 3, 3 / 4])
    fig, ax = figure()
    assert plot_cloze_accuracy(acc, ax=ax) is fig and len(ax.patches) == 2
    assert isinstance(plot_cloze_accuracy(acc), Figure)

