"""MCQG-SRefine Stage 0 (issue 14): the checklist and outline as data, topic selection with off-list
topics counted, test points from retrieved outline concepts, ``run_srefine(topics="machine")`` end to
end, and the human-vs-machine overlap with cluster-bootstrap CIs."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _fake_llm import FakeClient  # noqa: E402
from test_generate_mcqg import scripted  # noqa: E402

from medeval_kit import generate as G  # noqa: E402
from medeval_kit.generate import GenerationError  # noqa: E402

NOTES = pd.DataFrame({
    "case": ["c1", "c2"],
    "clinical_note": ["A 54-year-old man with fever, hypotension and lactate 5 after surgery; sepsis was treated.",
                      "A child with wheeze and chest tightness, treated with inhaled salbutamol for asthma."],
})


def test_checklist_is_the_papers_41_topics_in_10_sections():
    """Seed 000 Appendix A / Table 13: 41 topics, 10 sections (5 Diagnosis, 5 Management)."""
    cl = G.load_topic_checklist()
    assert len(cl) == 41 and cl["topic_id"].tolist() == list(range(1, 42))
    assert cl["section"].nunique() == 10
    assert cl.drop_duplicates("section")["group"].value_counts().to_dict() == {"Diagnosis": 5, "Management": 5}
    sizes = cl.groupby("section", sort=False).size().tolist()
    assert sizes == [4, 4, 4, 1, 4, 6, 7, 7, 1, 3]


def test_outline_has_the_18_usmle_sections():
    out = G.load_content_outline()
    secs = out.drop_duplicates("section")["section"].tolist()
    assert len(secs) == 18
    assert secs[0] == "General Principles of Foundational Science" and secs[-1] == "Social Sciences"
    assert (out.groupby("section").size() >= 8).all()


def test_every_topic_of_the_bundled_data_is_on_the_checklist():
    """The expert and GPT-4 topics in MedQG's data map to checklist entries (spacing/typos absorbed)."""
    cl = G.load_topic_checklist()
    topics = pd.concat([G.human_topics()["topic"], G.bundled_machine_topics()["topic"]]).unique()
    unmatched = [t for t in topics if G.match_topic(t, cl) is None]
    # the data has one stray "select most likely diagnosis yes"
    assert len(unmatched) <= 1, unmatched


def test_match_topic_exact_typo_and_off_list():
    cl = G.load_topic_checklist()
    sel = int(cl.loc[cl["topic"] == "select most likely diagnosis", "topic_id"].iloc[0])
    assert G.match_topic("Select most likely diagnosis.", cl) == sel
    nat = "recognizes characteristics of disease relating to natural history or course of disease"
    assert G.match_topic("recognizes characteristics of dis ease relating to natural history or course of disease", cl) \
        == int(cl.loc[cl["topic"] == nat, "topic_id"].iloc[0])
    assert G.match_topic("cardiology", cl) is None
    assert G.match_topic("", cl) is None


def _stage0_responder(topics_reply, kp_reply=None):
    def responder(req):
        st = req.metadata["stage"]
        if st == "stage0_topics":
            return topics_reply(req) if callable(topics_reply) else topics_reply
        if st == "stage0_test_point":
            return kp_reply(req) if callable(kp_reply) else (kp_reply or {"test_point": "sepsis"})
        raise AssertionError(st)
    return responder


def test_topic_schema_is_an_enum_of_the_checklist_with_at_most_5():
    cl = G.load_topic_checklist()
    sch = G.topics_schema(cl, 5)["properties"]["topics"]
    assert sch["maxItems"] == 5 and sch["items"]["enum"] == cl["topic"].tolist()
    client = FakeClient(_stage0_responder({"topics": ["select most likely diagnosis"]}))
    G.select_topics(NOTES, client=client)
    req = client.calls[0]
    assert req.schema["properties"]["topics"]["items"]["enum"][0] == cl["topic"].iloc[0]
    assert "select most likely diagnosis" in req.messages[-1]["content"]


def test_off_list_duplicate_over_limit_and_failed_topics_are_kept_and_counted():
    replies = {"c1": {"topics": ["select most likely diagnosis", "Select most likely diagnosis", "cardiology",
                                 "mechanisms, drugs", "educates patients", "knows common screening tests"]},
               "c2": "no JSON here"}
    client = FakeClient(_stage0_responder(lambda req: replies[req.metadata["item"]]))
    t, calls = G.select_topics(NOTES, client=client, max_topics=3, constrained=False)
    c1 = t[t["case"] == "c1"]
    assert c1["status"].tolist() == ["ok", "duplicate", "off_list", "ok", "ok", "over_limit"]
    assert c1.loc[c1["status"] == "off_list", "topic"].isna().all()
    c2 = t[t["case"] == "c2"]
    assert c2["status"].tolist() == ["failed"] and c2["topic"].isna().all()
    assert len(calls) == 2 and set(calls["stage"]) == {"stage0_topics"}
    # your column names through columns=; the old case=/note= keywords for one release, with a warning
    mine = NOTES.rename(columns={"case": "id", "clinical_note": "text"})
    t2, _ = G.select_topics(mine, client=client, max_topics=3, constrained=False,
                            columns={"case": "id", "clinical_note": "text"})
    pd.testing.assert_frame_equal(t2, t)
    with pytest.warns(DeprecationWarning, match="columns="):
        t3, _ = G.select_topics(mine, client=client, max_topics=3, constrained=False, case="id", note="text")
    pd.testing.assert_frame_equal(t3, t)


def test_test_points_use_retrieved_outline_concepts_and_count_failures():
    client = FakeClient(_stage0_responder(
        {"topics": ["select most likely diagnosis", "selects most appropriate pharmacotherapy"]},
        lambda req: {"test_point": "septic shock"} if "fever" in req.messages[-1]["content"] else "garbled"))
    res = G.machine_triplets(NOTES, client=client, k_concepts=5)
    tp = res.test_points
    assert len(tp) == 4  # 2 topics x 2 notes
    c1 = tp[tp["case"] == "c1"]
    assert "sepsis and septic shock" in c1["concepts"].iloc[0]  # BM25 over the outline found the sepsis concept
    assert c1["keypoint"].eq("septic shock").all()
    c2 = tp[tp["case"] == "c2"]
    assert c2["keypoint"].isna().all() and (c2["parse_status"] == "failed").all()
    prompt = next(r for r in client.calls if r.metadata["stage"] == "stage0_test_point").messages[-1]["content"]
    assert "Related USMLE concepts:" in prompt and "(Multisystem Processes & Disorders)" in prompt
    assert len(res.triplets) == 2 and set(res.triplets["source"]) == {"machine"}
    s = res.to_frame().iloc[0]
    assert (s.n_topics_ok, s.n_test_points, s.n_test_points_failed, s.n_triplets) == (4, 2, 2, 2)
    assert "2 failed" in res.summary()


def test_run_srefine_from_machine_topics_end_to_end():
    """A note goes through Stage 0 and the loop to a best-round MCQ; every row records where its
    topic came from."""
    base = scripted({r: {c: 5 for c in ("context", "question", "correct_answer", "distractors", "reasoning")}
                     for r in range(1, 5)}).responder

    def responder(req):
        st = req.metadata["stage"]
        if st == "stage0_topics":
            return {"topics": ["select most likely diagnosis", "mechanisms, drugs"]}
        if st == "stage0_test_point":
            return {"test_point": "sepsis"}
        return base(req)

    client = FakeClient(responder)
    res = G.run_srefine(NOTES, client=client, topics="machine", max_rounds=2, k_shots=0, triplets_per_note=1)
    assert res.stage0 is not None and len(res.stage0.triplets) == 2
    assert set(res.generations["topics"]) == {"machine"} and set(res.rounds["source"]) == {"machine"}
    assert res.generations["item"].tolist()[:2] == ["c1-m1", "c2-m1"]
    assert set(res.generations["topic"]) == {"select most likely diagnosis"}
    assert len(res.best()) == 2 and res.params["topics"] == "machine"
    assert {"stage0_topics", "stage0_test_point"} <= set(res.calls["stage"])
    assert (res.calls.loc[res.calls["stage"].str.startswith("stage0"), "round"] == 0).all()
    assert "machine topics" in res.summary()


def test_run_srefine_human_topics_recorded_and_bad_value_rejected():
    inputs = NOTES.assign(item=["i1", "i2"], topic="select most likely diagnosis", keypoint="sepsis")
    base = scripted({1: {c: 5 for c in ("context", "question", "correct_answer", "distractors", "reasoning")}})
    res = G.run_srefine(inputs, client=base, max_rounds=1, k_shots=0)
    assert set(res.generations["topics"]) == {"human"} and res.stage0 is None
    with pytest.raises(GenerationError, match="topics must be"):
        G.run_srefine(inputs, client=base, topics="robot", max_rounds=1, k_shots=0)


def test_machine_topics_with_no_usable_pair_is_a_clear_error():
    client = FakeClient(_stage0_responder("nothing useful"))
    with pytest.raises(GenerationError, match="Stage 0 produced no usable"):
        G.run_srefine(NOTES, client=client, topics="machine", max_rounds=1, k_shots=0, constrained=False)


def test_topic_overlap_hand_computed():
    human = pd.DataFrame({"case": ["a", "a", "b", "b"],
                          "topic": ["select most likely diagnosis", "mechanisms, drugs",
                                    "educates patients", "knows common screening tests"],
                          "keypoint": ["Sepsis", "tazobactam", "asthma education", "spirometry"]})
    machine = pd.DataFrame({"case": ["a", "a", "b", "b"],
                            "topic": ["Select most likely diagnosis.", "underlying processes/pathways",
                                      "educates patients", np.nan],
                            "keypoint": ["sepsis", "septic shock pathophysiology", "Asthma education", np.nan]})
    t = G.topic_overlap(machine, human, n_boot=500).set_index(["measure", "match"])
    # exact topics: only "educates patients" (b) matches; machine topics 3 (1 failed), human 4
    assert t.loc[("topic_precision", "exact"), "estimate"] == pytest.approx(1 / 3)
    assert t.loc[("topic_precision", "normalized"), "estimate"] == pytest.approx(2 / 3)
    assert t.loc[("topic_recall", "normalized"), "estimate"] == pytest.approx(2 / 4)
    assert t.loc[("topic_precision", "exact"), "n_failed"] == 1
    assert t.loc[("test_point_match", "exact"), "estimate"] == 0
    assert t.loc[("test_point_match", "normalized"), "estimate"] == pytest.approx(2 / 3)
    assert t.loc[("test_point_match", "contains"), "estimate"] == pytest.approx(2 / 3)
    assert (t["n_notes"] == 2).all()
    ok = t.dropna(subset=["ci_low"])
    assert ((ok["ci_low"] <= ok["estimate"] + 1e-12) & (ok["estimate"] <= ok["ci_high"] + 1e-12)).all()


def test_topic_overlap_needs_shared_notes():
    with pytest.raises(GenerationError, match="share no case"):
        G.topic_overlap(pd.DataFrame({"case": ["x"], "topic": ["t"], "keypoint": ["k"]}),
                        pd.DataFrame({"case": ["y"], "topic": ["t"], "keypoint": ["k"]}))


def test_paper_machine_topics_overlap_with_the_experts():
    """The paper's GPT-4 machine path (385 questions) vs the expert triplets on the 46 shared notes."""
    human = G.human_topics()
    mach = G.bundled_machine_topics(human)
    assert mach["case"].nunique() == 46 and len(mach) == 235
    t = G.topic_overlap(mach, human, source="gpt-4 (paper)", n_boot=300).set_index(["measure", "match"])
    assert set(t["source"]) == {"gpt-4 (paper)"}
    prec = t.loc[("topic_precision", "normalized")]
    assert 0 < prec["estimate"] < 1 and prec["ci_low"] < prec["estimate"] < prec["ci_high"]
    assert t.loc[("test_point_match", "contains"), "estimate"] >= t.loc[("test_point_match", "normalized"), "estimate"]


def test_old_names_and_keywords_work_for_one_release_with_a_warning():
    """normalise_text -> normalize_text, topic_overlap(label=) -> source=, load_srefine_inputs -> datasets."""
    from medeval_kit import datasets

    with pytest.warns(DeprecationWarning, match="use generate.normalize_text"):
        assert G.normalise_text("SAPHO  Syndrome.") == G.normalize_text("SAPHO  Syndrome.") == "sapho syndrome"
    assert "normalise_text" not in G.__all__ and "load_srefine_inputs" not in G.__all__
    with pytest.warns(DeprecationWarning, match="use datasets.load_srefine_inputs"):
        old = G.load_srefine_inputs("1-35", n=3, seed=0)
    pd.testing.assert_frame_equal(old, datasets.load_srefine_inputs("1-35", n=3, seed=0))
    machine = pd.DataFrame({"case": ["n1"], "topic": ["t"], "keypoint": ["k"]})
    with pytest.warns(DeprecationWarning, match="use source="):
        t = G.topic_overlap(machine, machine, label="mine", n_boot=20)
    assert set(t["source"]) == {"mine"}
    with pytest.raises(AttributeError):
        G.no_such_name  # noqa: B018
