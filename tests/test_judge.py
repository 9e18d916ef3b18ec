"""Tests for medeval_kit.judge: the five protocols on a fake LLM client (no network, no model)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from medeval_kit import judge as J
from medeval_kit import repro, viz
from medeval_kit.errors import ParameterError, SchemaError
from medeval_kit.llm import Response
from medeval_kit.llm.parse import parse_reply
from medeval_kit.prompts import PromptError
from medeval_kit.results import check_result
from medeval_kit.schemas import validate


class FakeClient:
    """Same ``.run(requests, progress=, desc=)`` as medeval_kit.llm.Client; replies from a function."""

    def __init__(self, reply, model="fake/judge"):
        self.reply, self.model, self.requests = reply, model, []

    def run(self, requests, progress=True, desc=None):
        out = []
        for r in requests:
            self.requests.append(r)
            text = self.reply(r)
            if text is None:
                out.append(Response(text=None, parse_status="missing", error="boom", request=r))
                continue
            parsed, status, perr = parse_reply(text, r.schema)
            out.append(Response(text=text, parsed=parsed, parse_status=status, parse_error=perr, request=r,
                                key=f"k{len(self.requests)}"))
        return out


def shown(req):
    """(first text, second text) of a rendered pairwise prompt."""
    u = req.messages[-1]["content"]
    a = re.search(r"\[Response A\]\n(.*?)\n\[End of Response A\]", u, re.S).group(1)
    b = re.search(r"\[Response B\]\n(.*?)\n\[End of Response B\]", u, re.S).group(1)
    return a, b


PAIRS = pd.DataFrame({
    "item": ["1", "2", "3"], "question": ["q1", "q2", "q3"],
    "answer_a": ["good one", "good two", "same"], "answer_b": ["bad one", "bad two", "same"],
    "model_a": ["mA", "mA", "mA"], "model_b": ["mB", "mB", "mB"],
})


def prefers_good(req):
    a, b = shown(req)
    if a == b:
        return '{"verdict": "tie"}'
    return json.dumps({"verdict": "A" if a.startswith("good") else "B"})


def test_unswapping_is_correct():
    fake = FakeClient(prefers_good)
    j = J.judge_pairwise(PAIRS, client=fake, orders=("AB", "BA"), repeats=2, temperature=0.5)
    assert len(j) == 3 * 2 * 2 and len(fake.requests) == 12
    validate(j, "judgments")
    # model A (the "good" answer) is shown second in BA: the judge says slot "B" -> second -> model A
    ba = j[(j.order == "BA") & (j["item"] != "3")]
    assert set(ba.slot_verdict) == {"second"} and set(ba.verdict) == {"A"}
    ab = j[(j.order == "AB") & (j["item"] != "3")]
    assert set(ab.slot_verdict) == {"first"} and set(ab.verdict) == {"A"}
    assert set(j.loc[j["item"] == "3", "verdict"]) == {"tie"}
    assert j.loc[j.verdict == "A", "score"].eq(1.0).all()
    # the texts really were swapped in BA
    ba_req = [r for r in fake.requests if r.metadata["order"] == "BA"][0]
    assert shown(ba_req)[0].startswith("bad")
    assert set(j.repeat) == {0, 1} and j.temperature.eq(0.5).all()
    # repeats are different cache keys (repeat index in the Request)
    assert {r.repeat for r in fake.requests} == {0, 1}


def test_position_biased_judge_flips():
    """A judge that always picks the first slot: verdicts flip between orders, slot stays 'first'."""
    j = J.judge_pairwise(PAIRS, client=FakeClient(lambda r: '{"verdict": "A"}'))
    assert (j.slot_verdict == "first").all()
    assert list(j.sort_values(["item", "order"]).verdict) == ["A", "B"] * 3
    from medeval_kit.pairwise import resolve_orders

    res = resolve_orders(j, "drop", polarity="polarity")
    assert res.consistent.eq(False).all() and res.verdict.isna().all()


def test_parse_failures_counted_never_ties():
    replies = iter(['{"verdict": "A"}', "I think both are fine, maybe tie", None, '{"verdict": "maybe"}',
                    '{"verdict": "tie"}', '```json\n{"verdict": "B"}\n```'])
    j = J.judge_pairwise(PAIRS, client=FakeClient(lambda r: next(replies)))
    assert list(j.parse_status) == ["ok", "failed", "missing", "failed", "ok", "ok"]
    failed = j[j.parse_status != "ok"]
    assert failed.verdict.isna().all() and failed.slot_verdict.isna().all() and failed.score.isna().all()
    # the unparseable output is kept as raw text
    assert j.raw.iloc[1] == "I think both are fine, maybe tie"
    assert j.raw.iloc[2] is None and "boom" in j.parse_error.iloc[2]
    assert (j.verdict == "tie").sum() == 1  # only the real tie
    s = J.parse_summary(j)
    assert s[["n_calls", "n_ok", "n_failed", "n_missing", "n_items"]].iloc[0].tolist() == [6, 3, 2, 1, 5]
    assert s.estimate.iloc[0] == pytest.approx(2 / 5)  # failure rate: failed / calls that replied
    assert s.ci_low.iloc[0] < 0.4 < s.ci_high.iloc[0] and s.metric.iloc[0] == "parse_failure_rate"
    validate(j, "judgments")


def test_unconstrained_parses_text_itself():
    fake = FakeClient(lambda r: 'Sure! {"verdict": "B"} because...')
    j = J.judge_pairwise(PAIRS.iloc[:1], client=fake, orders=("AB",), constrained=False)
    assert fake.requests[0].schema is None
    assert j.parse_status.tolist() == ["ok"] and j.verdict.tolist() == ["B"]


def test_labels_restrict_schema():
    fake = FakeClient(lambda r: '{"verdict": "neither"}')
    j = J.judge_pairwise(PAIRS.iloc[:1], client=fake, orders=("AB",))  # overall rubric: A/B/tie
    assert fake.requests[0].schema["properties"]["verdict"]["enum"] == ["A", "B", "tie"]
    assert j.parse_status.tolist() == ["failed"]  # 'neither' is not allowed here: not silently kept
    j2 = J.judge_pairwise(PAIRS.iloc[:1], client=fake, orders=("AB",), labels=["A", "B", "tie", "neither"])
    assert j2.verdict.tolist() == ["neither"]


def test_reversed_polarity():
    fake = FakeClient(prefers_good)  # picks the "good" text, i.e. model A, on every criterion
    j = J.judge_pairwise(PAIRS.iloc[:1], client=fake, rubric="longform", criteria=["correctness", "harmfulness"])
    harm = j[j.criterion == "harmfulness"]
    corr = j[j.criterion == "correctness"]
    assert set(harm.template) == {"judge/pairwise_reversed"} and set(corr.template) == {"judge/pairwise"}
    assert harm.polarity.eq(-1).all() and corr.polarity.eq(1).all()
    # choosing A on harmfulness means A is WORSE: the margin of A is -1
    assert harm.verdict.eq("A").all() and harm.score.eq(-1.0).all()
    assert corr.score.eq(1.0).all()
    req = [r for r in fake.requests if r.metadata["criterion"] == "harmfulness"][0]
    assert "WORSE" in req.messages[-1]["content"]
    assert "neither" in req.schema["properties"]["verdict"]["enum"]
    # win rate from resolve is polarity-aware: A loses on harmfulness
    from medeval_kit.pairwise import resolve_orders, win_rate

    wr = win_rate(resolve_orders(j, "neutral", polarity="polarity")).set_index("criterion")
    assert wr.loc["correctness", "n_wins"] == 1 and wr.loc["harmfulness", "n_losses"] == 1


def test_template_polarity_mismatch_is_error():
    with pytest.raises(PromptError, match="polarity"):
        J.judge_pairwise(PAIRS.iloc[:1], client=FakeClient(prefers_good), rubric="longform",
                         templates={"reversed": "judge/pairwise"})


def test_pairwise_bad_input():
    with pytest.raises(J.JudgeError, match="answer_b"):
        J.judge_pairwise(PAIRS.drop(columns="answer_b"), client=FakeClient(prefers_good))
    with pytest.raises(J.JudgeError, match="orders"):
        J.judge_pairwise(PAIRS, client=FakeClient(prefers_good), orders=("AB", "XY"))
    with pytest.raises(PromptError, match="no aspect 'kindness'"):
        J.judge_pairwise(PAIRS, client=FakeClient(prefers_good), criteria=["kindness"])
    with pytest.raises(J.JudgeError, match="duplicate"):
        J.judge_pairwise(pd.concat([PAIRS, PAIRS]), client=FakeClient(prefers_good))


# --------------------------------------------------------------------------- rubric
def rubric_reply(req):
    props = req.schema["properties"]
    return json.dumps({k: 4 for k in props})


def test_rubric_component_and_total():
    resp = pd.DataFrame({"item": ["q1", "q1"], "question": ["case"] * 2, "response": ["mcq a", "mcq b"],
                         "target": ["base", "refined"]})
    fake = FakeClient(rubric_reply)
    j = J.judge_rubric(resp, client=fake, rubric="mcqg_srefine")
    assert len(fake.requests) == 2 * 5  # one call per component
    assert len(j) == 2 * 30 and set(j["item"]) == {"q1:base", "q1:refined"}
    validate(j, "judgments")
    s = J.rubric_scores(j).set_index(["item", "component"])
    # every aspect 4/5: each component 4*n/(5*n) = 0.8 and the total mean 0.8
    assert s.loc[("q1:base", "distractors"), "points"] == 28 and s.loc[("q1:base", "distractors"), "max_score"] == 35
    assert s.loc[("q1:base", "total"), "score"] == pytest.approx(0.8)


def test_rubric_total_is_mean_of_components_not_pooled():
    # hand-built judgments: context (9 aspects) all 5, question (5) all 1, others all 3
    from medeval_kit.prompts import load_rubric

    rub = load_rubric("mcqg_srefine")
    val = {"context": 5, "question": 1}
    rows = [{"item": "x", "judge": "j", "protocol": "rubric", "criterion": a.id, "order": "single", "repeat": 0,
             "raw": "{}", "verdict": None, "score": float(val.get(a.component, 3)), "parse_status": "ok"}
            for a in rub.aspects]
    s = J.rubric_scores(pd.DataFrame(rows), "mcqg_srefine").set_index("component")["score"]
    # components: 45/45=1, 5/25=0.2, 15/25=0.6, 21/35=0.6, 12/20=0.6 -> mean 3.0/5 = 0.6
    assert s["context"] == 1.0 and s["question"] == pytest.approx(0.2)
    assert s["total"] == pytest.approx((1 + 0.2 + 0.6 + 0.6 + 0.6) / 5)
    # pooled points would give (45+5+15+21+12)/150 = 0.6533: not what we report
    assert s["total"] != pytest.approx(98 / 150)


def test_rubric_parse_failure_not_imputed():
    resp = pd.DataFrame({"item": ["q1"], "question": ["case"], "response": ["mcq"]})
    fake = FakeClient(lambda r: "not json" if "reasoning" in r.messages[-1]["content"].split("Rate the ")[1][:12]
                      else rubric_reply(r))
    j = J.judge_rubric(resp, client=fake)
    assert "target" not in j.columns
    with pytest.warns(DeprecationWarning, match="target=None"):  # the old way to ignore a target column
        old = J.judge_rubric(resp.assign(target="m1"), client=fake, target=None)
    assert "target" not in old.columns and len(old) == len(j)
    assert j.loc[j.component == "reasoning", "parse_status"].eq("failed").all()
    assert j.loc[j.component == "reasoning", "score"].isna().all()
    s = J.rubric_scores(j).set_index("component")
    assert np.isnan(s.loc["reasoning", "score"]) and s.loc["reasoning", "n_failed"] == 4
    assert np.isnan(s.loc["total", "score"]) and "NaN" in s.loc["total", "note"]
    assert s.loc["context", "score"] == pytest.approx(0.8)
    assert J.parse_summary(j, by=("judge", "protocol"))[["n_calls", "n_failed"]].iloc[0].tolist() == [5, 1]


# --------------------------------------------------------------------------- multi-answer
ANSWERS = pd.DataFrame({
    "item": ["i1"] * 3 + ["i2"] * 3, "question": ["q"] * 6, "reference": ["ref"] * 6,
    "answer": ["right", "wrong", "unsure", "right", "right", "wrong"],
    "target": ["m1", "m2", "m3", "m1", "m2", "m3"],
})


def grade_by_text(req):
    u = req.messages[-1]["content"]
    shown_answers = re.findall(r"\[Answer (\d+)\]\n(\w+)", u)
    lab = {"right": "correct", "wrong": "incorrect", "unsure": "abstain"}
    return json.dumps({f"answer_{i}": lab[t] for i, t in shown_answers})


def test_multi_answer_shuffle_recorded_and_unshuffled():
    fake = FakeClient(grade_by_text)
    j = J.judge_multi_answer(ANSWERS, client=fake, seed=3, repeats=2)
    validate(j, "judgments")
    assert len(fake.requests) == 2 * 2 and len(j) == 12
    # labels follow the answers' content whatever order they were shown in
    exp = {"i1:m1": "correct", "i1:m2": "incorrect", "i1:m3": "abstain", "i2:m3": "incorrect"}
    for unit, lab in exp.items():
        assert set(j.loc[j["item"] == unit, "verdict"]) == {lab}
    assert j.loc[j.verdict == "abstain", "score"].isna().all()
    assert j.loc[j.verdict == "correct", "score"].eq(1).all()
    # the recorded seed re-creates the shown order
    for _, r in j.drop_duplicates(["question_item", "repeat"]).iterrows():
        perm = np.random.default_rng(int(r.shuffle_seed)).permutation(3)
        assert r.order == ",".join(map(str, perm))
        assert r.presented_order == "|".join(["m1", "m2", "m3"][k] for k in perm)
    row = j.iloc[0]
    assert row.shuffle_seed == J.shuffle_seed(3, row["question_item"], row["repeat"])
    assert all(sorted(g) == [1, 2, 3] for _, g in j.groupby(["question_item", "repeat"])["position"])
    # seeded: the same call again gives the same orders
    j2 = J.judge_multi_answer(ANSWERS, client=FakeClient(grade_by_text), seed=3, repeats=2)
    assert j2.order.tolist() == j.order.tolist()


def test_multi_answer_no_shuffle_and_failure():
    j = J.judge_multi_answer(ANSWERS, client=FakeClient(lambda r: '{"answer_1": "correct"}'), shuffle=False)
    assert j.order.unique().tolist() == ["0,1,2"] and j.shuffle_seed.isna().all()
    assert j.parse_status.eq("failed").all() and j.verdict.isna().all()  # incomplete reply: all failed


# --------------------------------------------------------------------------- reference
def test_reference_grading():
    resp = pd.DataFrame({"item": ["a", "b", "c"], "question": ["q"] * 3, "reference": ["x"] * 3,
                         "response": ["x", "y", "z"], "target": ["m"] * 3})
    replies = {"x": '{"grade": "correct"}', "y": '{"grade": "incorrect"}', "z": "GRADE: C"}

    def reply(req):
        return replies[req.messages[-1]["content"].split("[Submission]\n")[1].split("\n")[0]]

    j = J.judge_reference(resp, client=FakeClient(reply))
    validate(j, "judgments")
    assert j.verdict.tolist() == ["correct", "incorrect", None]
    assert j.score.tolist()[:2] == [1.0, 0.0] and np.isnan(j.score.iloc[2])
    assert j.parse_status.tolist() == ["ok", "ok", "failed"] and j.raw.iloc[2] == "GRADE: C"


# --------------------------------------------------------------------------- multi-response + Acc
def test_multi_response_unshuffles_scores():
    resp = pd.DataFrame({"item": ["i"] * 3, "question": ["q"] * 3, "response": ["s5", "s3", "s1"],
                         "target": ["x", "y", "z"]})

    def reply(req):
        shown_r = re.findall(r"\[Doctor (\d+)\]\ns(\d)", req.messages[-1]["content"])
        return json.dumps({f"doctor_{i}": int(s) for i, s in shown_r})

    j = J.judge_multi_response(resp, client=FakeClient(reply), seed=1)
    assert dict(zip(j.target, j.score)) == {"x": 5.0, "y": 3.0, "z": 1.0}
    perm = np.random.default_rng(J.shuffle_seed(1, "i", 0)).permutation(3)
    assert j.order.iloc[0] == ",".join(map(str, perm))
    validate(j, "judgments")


def _mr(scores: dict, status="ok", judge="j", repeat=0):
    rows = []
    for it, sc in scores.items():
        for t, s in sc.items():
            rows.append({"item": f"{it}:{t}", "question_item": it, "target": t, "judge": judge,
                         "protocol": "multi_response", "criterion": "overall", "order": "0,1,2",
                         "repeat": repeat, "raw": "", "verdict": None,
                         "score": np.nan if s is None else float(s),
                         "parse_status": "failed" if s is None else status})
    return pd.DataFrame(rows)


def test_acc_tuple_triple_ties_exact_and_failures_wrong():
    ref = pd.DataFrame({"item": ["1"] * 3 + ["2"] * 3 + ["3"] * 3 + ["4"] * 3,
                        "target": ["x", "y", "z"] * 4,
                        "score": [5, 3, 1, 4, 4, 2, 3, 3, 3, 5, 1, 2]})
    judged = _mr({
        "1": {"x": 4, "y": 2, "z": 1},  # same strict order: 3/3 pairs, triple right
        "2": {"x": 5, "y": 3, "z": 1},  # reference ties x=y, judge does not: 2/3 pairs, triple wrong
        "3": {"x": 2, "y": 2, "z": 2},  # all-equal matches all-equal: 3/3, triple right
        "4": {"x": 5, "y": None, "z": 2},  # parse failure: 0/3 pairs, triple wrong
    })
    out = J.acc_tuple_triple(judged, ref).set_index("metric")
    # pairs: 3 + 2 + 3 + 0 = 8 of 12; triples: 2 of 4
    assert out.loc["acc_2tuple", "estimate"] == pytest.approx(8 / 12) and out.loc["acc_2tuple", "n"] == 12
    assert out.loc["acc_triple", "estimate"] == pytest.approx(2 / 4) and out.loc["acc_triple", "n"] == 4
    assert out.loc["acc_triple", "n_failed"] == 1
    # an incomplete reference is skipped and counted
    ref2 = pd.concat([ref, pd.DataFrame({"item": ["5", "5"], "target": ["x", "y"], "score": [1, None]})])
    assert J.acc_tuple_triple(judged, ref2).n_skipped.iloc[0] == 1


def test_mixed_protocols_clear_error():
    mixed = pd.concat([_mr({"1": {"x": 1, "y": 2}}),
                       J.judge_pairwise(PAIRS.iloc[:1], client=FakeClient(prefers_good))], ignore_index=True)
    with pytest.raises(SchemaError, match=r"mixes protocols \['multi_response', 'pairwise'\]"):
        J.acc_tuple_triple(mixed, pd.DataFrame({"item": ["1"], "target": ["x"], "score": [1]}))
    with pytest.raises(SchemaError, match="mixes protocols"):
        J.rubric_scores(mixed)
    with pytest.raises(SchemaError, match="needs \\['rubric'\\]"):
        J.rubric_scores(_mr({"1": {"x": 1}}))
    # the position-bias module refuses it too
    from medeval_kit import bias

    with pytest.raises(SchemaError, match="mixes protocols"):
        bias.position_bias(mixed)


def test_to_annotations_and_agreement_roundtrip():
    j = J.judge_pairwise(PAIRS, client=FakeClient(prefers_good))
    from medeval_kit.pairwise import resolve_orders

    res = resolve_orders(j, "drop", polarity="polarity")
    ann = J.to_annotations(res)
    validate(ann, "annotations")
    assert ann.label.tolist() == ["A", "A", "tie"] and set(ann.rater) == {"fake/judge"}
    with pytest.raises(SchemaError, match="resolve"):
        J.to_annotations(j)


def test_run_protocol_dispatch_and_unknown():
    j = J.run_protocol("reference", pd.DataFrame({"item": ["a"], "question": ["q"], "reference": ["r"],
                                                  "response": ["r"]}),
                       client=FakeClient(lambda r: '{"grade": "correct"}'))
    assert j.protocol.tolist() == ["reference"]
    with pytest.raises(ParameterError, match="unknown protocol"):
        J.run_protocol("vibes", PAIRS, client=FakeClient(prefers_good))
    with pytest.raises(ParameterError, match="supported"):
        repro.judging_inputs("rubric", "grounded_synth")


def test_judging_inputs_pandalm_pairs_seeded():
    pairs, kw = repro.judging_inputs("pairwise", "pandalm", n_items=5, seed=0)
    again, _ = repro.judging_inputs("pairwise", "pandalm", n_items=5, seed=0)
    assert kw == {"rubric": "overall"} and len(pairs) == 5
    assert pairs["item"].tolist() == again["item"].tolist()
    assert (pairs.model_a != pairs.model_b).all()


# --------------------------------------------------------------------------- notebook-level chain
def universal_reply(req):
    """A valid reply for any protocol's schema (first enum value / the scale's maximum)."""
    out = {}
    for k, v in req.schema["properties"].items():
        out[k] = v["enum"][0] if "enum" in v else v["maximum"]
    return json.dumps(out)


@pytest.mark.parametrize("protocol, dataset", [
    ("pairwise", "pandalm"), ("multi_response", "pandalm"), ("reference", "pandalm"),
    ("rubric", "medqg"), ("multi_answer", "medqg"),
])
def test_every_protocol_through_the_notebook_chain(protocol, dataset, tmp_path):
    """What judging.ipynb does, for every supported (dataset, protocol), on a fake client."""
    import matplotlib

    matplotlib.use("Agg")
    data, options = repro.judging_inputs(protocol, dataset, n_items=4, seed=1)
    j = J.run_protocol(protocol, data, client=FakeClient(universal_reply), repeats=2, seed=1, **options)
    validate(j, "judgments")
    assert set(j.protocol) == {protocol} and j.parse_status.eq("ok").all()
    assert set(j.repeat) == {0, 1}
    s = J.parse_summary(j)
    assert s.n_failed.sum() == 0 and s.n_calls.sum() == j["call"].nunique()
    counts = J.verdict_counts(j)
    assert counts["n"].sum() == len(j) or counts.group.nunique() == 12  # a plot shows at most 12 groups
    viz.plot_verdicts(counts)
    assert len(J.order_effects(j, n_boot=50))
    assert not check_result(J.score_summary(j)) and not check_result(s)
    h = J.human_agreement(j, repro.judging_humans(protocol, dataset), n_boot=50)
    assert len(h) and {"estimate", "n_items", "note"} <= set(h.columns)
    # the table round-trips through CSV for the position-bias notebook
    p = tmp_path / "judgments.csv"
    j.to_csv(p, index=False)
    back = pd.read_csv(p, dtype={"item": str})
    assert len(back) == len(j)


def test_human_agreement_pairwise_pandalm_counts_dropped():
    pairs, kw = repro.judging_inputs("pairwise", "pandalm", n_items=12, seed=0)
    biased = J.judge_pairwise(pairs, client=FakeClient(lambda r: '{"verdict": "A"}'), **kw)
    h = J.human_agreement(biased, repro.pandalm_humans(), n_boot=50).set_index("rater")
    judge = "fake/judge"
    # always-first: every pair flips, the drop policy leaves no label: kappa undefined (NaN), n = 0
    assert np.isnan(h.loc[judge, "estimate"]) and h.loc[judge, "n_judge_labels"] == 0
    # read in one order only the judge is a constant rater: kappa exactly 0
    assert h.loc[f"{judge} [AB only]", "estimate"] == pytest.approx(0.0)
    assert h.loc["humans (3)", "estimate"] > 0.5 and h.loc["humans (3)", "role"] == "humans"
    eff = J.order_effects(biased).set_index("metric")
    assert eff.loc["flip_rate", "estimate"] == 1.0 and eff.loc["first_slot_rate", "estimate"] == 1.0


def test_score_summary_reference_counts():
    resp = pd.DataFrame({"item": list("abcd"), "question": ["q"] * 4, "reference": ["r"] * 4,
                         "response": ["x"] * 4, "target": ["m1", "m1", "m2", "m2"]})
    replies = iter(['{"grade": "correct"}', '{"grade": "incorrect"}', "??", '{"grade": "correct"}'])
    j = J.judge_reference(resp, client=FakeClient(lambda r: next(replies)))
    s = J.score_summary(j).set_index("target")
    assert s.loc["m1", "estimate"] == 0.5 and s.loc["m1", "n_items"] == 2
    # the failed call is counted, not scored as incorrect
    assert s.loc["m2", "n_failed"] == 1 and s.loc["m2", "estimate"] == 1.0 and s.loc["m2", "n_items"] == 1
    assert s.loc["m1", "ci_method"].startswith("exact binomial")


def test_default_study_replays_from_the_committed_cache():
    """The default judging study (40 PandaLM pairs x 2 orders x 2 repeats) is answerable from the cache alone."""
    from medeval_kit.llm import CacheMissError, get_client

    pairs, kw = repro.judging_inputs("pairwise", "pandalm", n_items=40, seed=0)
    client = get_client("local/smollm2-135m", cache_mode="replay")
    try:
        j = J.run_protocol("pairwise", pairs, client=client, model="local/smollm2-135m", repeats=2, seed=0,
                           progress=False, **kw)
    except CacheMissError:
        pytest.skip("the default judging study has not been run into this cache yet (medeval run judging)")
    validate(j, "judgments")
    assert len(j) == 160 and client.last_run.n_cached == 160
    # what the 135M judge really does (recorded in the report): grammar-constrained, so it always parses...
    assert J.parse_summary(j).n_failed.sum() == 0
    # ...and almost always picks the first slot (0.975 on the nested 40-item draw), so every pair
    # that is not a tie flips between orders
    eff = J.order_effects(j).set_index("metric")
    assert eff.loc["flip_rate", "estimate"] == 1.0 and eff.loc["first_slot_rate", "estimate"] == 0.975


def test_one_call_multi_criterion_pairwise():
    """Longform-MedQA style: all 6 criteria in one call, per order; un-swapped and polarity-marked per criterion."""
    def reply(req):
        a, b = shown(req)
        good_first = a.startswith("good")
        crit = list(req.schema["properties"])
        out = {c: ("A" if good_first else "B") for c in crit}
        out["harmfulness"] = "B" if good_first else "A"  # the bad answer is the harmful one
        out["bias"] = "neither"
        return json.dumps(out)

    fake = FakeClient(reply)
    j = J.judge_pairwise(PAIRS.iloc[:2], client=fake, rubric="longform", one_call=True, repeats=1)
    assert len(fake.requests) == 2 * 2  # items x orders, not x criteria
    assert len(j) == 2 * 2 * 6 and set(j.template) == {"judge/pairwise_multi"}
    validate(j, "judgments")
    u = fake.requests[0].messages[-1]["content"]
    assert "harmfulness" in u and "REVERSED" in u and u.count("REVERSED") == 2
    assert set(fake.requests[0].schema["properties"]) == {"correctness", "helpfulness", "harmfulness",
                                                           "reasoning", "efficiency", "bias"}
    by = j.groupby("criterion")
    assert set(by.get_group("correctness").verdict) == {"A"}
    assert set(by.get_group("harmfulness").verdict) == {"B"}  # model B is the harmful one, in both orders
    assert by.get_group("harmfulness").score.eq(1.0).all()  # B worse -> A's margin +1
    assert set(by.get_group("bias").verdict) == {"neither"}
    assert j.loc[j.criterion.isin(["harmfulness", "bias"]), "polarity"].eq(-1).all()
    # one failed call fails all six criteria of that call, and is counted once per criterion
    fake2 = FakeClient(lambda r: "no idea")
    j2 = J.judge_pairwise(PAIRS.iloc[:1], client=fake2, rubric="longform", one_call=True, orders=("AB",))
    assert j2.parse_status.eq("failed").all() and len(j2) == 6 and j2["call"].nunique() == 1


# --------------------------------------------------------------------------- the protocol registry
TOY_TEMPLATE = """---
name: judge/toy
version: 1
description: is the response safe? yes / no
variables: [response]
schema:
  type: object
  properties:
    safe:
      enum: ["yes", "no"]
  required: [safe]
---
## user
{{response}}

Is this safe? Reply as JSON: {"safe": "yes"} or {"safe": "no"}.
"""


def test_registry_holds_the_five_protocols():
    assert sorted(J.protocol_names()) == sorted(["pairwise", "pairwise_mec", "rubric", "multi_answer", "reference",
                                                 "multi_response"])
    assert set(J.protocol_names()) <= set(J.PROTOCOLS)
    assert J.default_templates()["reference"] == "judge/reference"
    assert J.default_templates()["pairwise"]["reversed"] == "judge/pairwise_reversed"
    # the registered run function is the public one, with its input check in front
    with pytest.raises(J.JudgeError, match="judge_reference: missing column"):
        J.run_protocol("reference", PAIRS, client=FakeClient(prefers_good))
    with pytest.raises(ParameterError, match="already registered"):
        J.protocol("pairwise", template="x", schema=dict, inputs=())(lambda data: data)


def test_a_new_protocol_is_one_registered_function(tmp_path):
    """A toy protocol defined here (as it would be in judge/protocols/toy.py) runs through every entry point."""
    from medeval_kit.judge import engine

    path = tmp_path / "toy.md"
    path.write_text(TOY_TEMPLATE, encoding="utf-8")

    def toy_schema(prompt):
        return prompt.schema

    def decode(call, parsed):
        verdict = None if parsed is None else parsed["safe"]
        yield {"criterion": "safety", "order": "single", "verdict": verdict,
               "score": {"yes": 1.0, "no": 0.0}.get(verdict, np.nan)}

    @J.protocol("toy", template=str(path), schema=toy_schema, inputs=("item", "response"))
    def judge_toy(data, *, judge="fake/judge", client=None, repeats=1, template=str(path), temperature=None,
                  seed=0, cache_mode="use", progress=False, item="item", response="response"):
        prompt = engine.load_template(template)
        run = engine.start("toy", judge=judge, client=client, cache_mode=cache_mode, repeats=repeats,
                           temperature=temperature, max_tokens=16, seed=seed, constrained=True)
        calls = [engine.Call(prompt.render(response=engine.text(r[response])), prompt, toy_schema(prompt), k,
                             {"item": str(r[item]), "repeat": k})
                 for _, r in data.iterrows() for k in range(run.repeats)]
        return engine.execute(run, calls, decode, progress=progress, extra_order=[])

    data = pd.DataFrame({"item": ["a", "b", "c"], "response": ["fine", "DANGER", "fine"]})
    replies = {"fine": '{"safe": "yes"}', "DANGER": '{"safe": "no"}'}
    client = FakeClient(lambda r: replies[r.messages[-1]["content"].split("\n")[0]])
    try:
        j = J.run_protocol("toy", data, client=client, repeats=2)
        validate(j, "judgments")  # the judgments table accepts the registered name
        assert j.verdict.tolist() == ["yes", "yes", "no", "no", "yes", "yes"] and set(j.protocol) == {"toy"}
        assert J.parse_summary(j).n_calls.sum() == 6
        s = J.score_summary(j)  # no scores hook: the generic mean score per judge
        assert s.estimate.iloc[0] == pytest.approx(4 / 6) and s.n_items.iloc[0] == 6
        assert J.order_effects(j).metric.tolist() == ["none"]
        assert J.human_agreement(j, None).note.iloc[0] == "no human labels given for protocol 'toy'"
        assert J.verdict_counts(j).set_index("label")["n"].to_dict() == {"no": 2, "yes": 4}
        with pytest.raises(J.JudgeError, match="judge_toy: missing column"):
            J.run_protocol("toy", data.drop(columns="response"), client=client)
    finally:
        J.unregister("toy")
    with pytest.raises(ParameterError, match="unknown protocol 'toy'"):
        J.run_protocol("toy", data, client=client)
    with pytest.raises(SchemaError, match="protocol"):
        validate(j, "judgments")


# --------------------------------------------------------------------------- one public API: model=, columns=
def test_protocols_take_model_and_a_columns_mapping():
    mine = PAIRS.rename(columns={"item": "case_id", "answer_a": "first", "answer_b": "second"})
    cols = {"item": "case_id", "answer_a": "first", "answer_b": "second"}
    want = J.judge_pairwise(PAIRS, client=FakeClient(prefers_good), model="fake/judge", progress=False)
    got = J.judge_pairwise(mine, client=FakeClient(prefers_good), columns=cols, progress=False)
    pd.testing.assert_frame_equal(got.drop(columns=["latency_s"]), want.drop(columns=["latency_s"]))
    with pytest.warns(DeprecationWarning, match=r"columns=\{'item': 'case_id'"):
        old = J.judge_pairwise(mine, client=FakeClient(prefers_good), item="case_id", answer_a="first",
                               answer_b="second", progress=False)
    assert old["verdict"].tolist() == want["verdict"].tolist()
    with pytest.warns(DeprecationWarning, match="model="):
        J.judge_pairwise(PAIRS, client=FakeClient(prefers_good), judge="fake/judge", progress=False)
    with pytest.raises(TypeError, match="judgee"):
        J.judge_pairwise(PAIRS, client=FakeClient(prefers_good), judgee="fake/judge")
    with pytest.raises(J.JudgeError, match="columns="):
        J.judge_pairwise(mine, client=FakeClient(prefers_good))
    # through the registry too, and read_items follows medeval_kit.columns
    via = J.run_protocol("pairwise", mine, client=FakeClient(prefers_good), columns=cols, progress=False)
    assert via["verdict"].tolist() == want["verdict"].tolist()
    with pytest.warns(DeprecationWarning, match=r"run_protocol\(judge=\.\.\.\) is deprecated; pass model="):
        J.run_protocol("pairwise", PAIRS, client=FakeClient(prefers_good), judge="fake/judge", progress=False)
    assert J.item_columns("pairwise") == (("item", "question", "answer_a", "answer_b"), ("model_a", "model_b"))


def test_read_items_rejects_unknown_column_keys(tmp_path):
    from medeval_kit.columns import ColumnError

    f = tmp_path / "mine.csv"
    f.write_text("id,q,a,b\n1,Fever?,Rest.,Paracetamol.\n")
    cols = {"item": "id", "question": "q", "answer_a": "a", "answer_b": "b"}
    assert J.read_items(f, "pairwise", columns=cols)["item"].tolist() == ["1"]
    with pytest.raises(ColumnError, match="itme"):
        J.read_items(f, "pairwise", columns={**cols, "itme": "id"})


def test_summaries_take_a_columns_mapping():
    from medeval_kit.datasets.synthetic import synthetic_pairwise

    j = synthetic_pairwise(n_items=20, judges=("j1",), repeats=1, seed=3)
    cols = {"item": "case", "judge": "grader", "order": "shown", "verdict": "winner", "criterion": "aspect_name"}
    mine = j.rename(columns=cols)
    for fn in (J.parse_summary, J.score_summary, J.verdict_counts):
        pd.testing.assert_frame_equal(fn(mine, columns=cols), fn(j))
    pd.testing.assert_frame_equal(J.order_effects(mine, n_boot=20, columns=cols), J.order_effects(j, n_boot=20))
    ann = J.to_annotations(j[j["order"] == "AB"], columns=None)
    assert set(ann["rater_kind"]) == {"llm"} and list(ann.columns) == ["item", "rater", "rater_kind", "criterion",
                                                                       "label"]


def test_acc_tuple_triple_old_reference_keywords_warn():
    ref = pd.DataFrame({"question": ["1"] * 3, "who": ["x", "y", "z"], "points": [5, 3, 1]})
    judged = _mr({"1": {"x": 4, "y": 2, "z": 1}})
    with pytest.warns(DeprecationWarning, match="ref_item"):
        old = J.acc_tuple_triple(judged, ref, ref_item="question", ref_target="who", ref_score="points")
    new = J.acc_tuple_triple(judged, ref.rename(columns={"question": "item", "who": "target", "points": "score"}))
    pd.testing.assert_frame_equal(old, new)
