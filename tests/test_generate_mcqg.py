"""MCQG-SRefine loop: applies the rounds module's stopping rules and best-round selection, keeps
every round (parse failures included) in the rounds table, and records provenance."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _fake_llm import FakeClient  # noqa: E402

from medeval_kit.datasets import load_srefine_inputs  # noqa: E402
from medeval_kit.generate import run_srefine, shuffle_options  # noqa: E402
from medeval_kit.schemas import validate  # noqa: E402

INPUTS = pd.DataFrame({
    "item": ["i1", "i2"],
    "clinical_note": ["A 54-year-old man with fever and hypotension after surgery.", "A child with wheeze."],
    "topic": ["select most likely diagnosis", "select most appropriate pharmacotherapy"],
    "keypoint": ["sepsis", "salbutamol"],
})


def scripted(score_by_round, *, fail=None, answer_right=True):
    """Critique scores per round: ``score_by_round[round][component] -> int 1-5`` for every aspect.
    ``fail``: set of (round, stage) whose reply is unparseable text."""
    fail = fail or set()

    def responder(req):
        st, rnd = req.metadata["stage"], req.metadata["round"]
        if (rnd, st) in fail:
            return "I cannot comply"
        if st == "context":
            return {"context": "A man with fever."}
        if st == "question":
            return {"question": "Most likely diagnosis?"}
        if st == "answer":
            return {"correct_answer": "Sepsis"}
        if st == "distractors":
            return {"distractors": ["Asthma", "Gout", "Migraine", "Anemia"]}
        if st == "correct":
            return {"context": f"r{rnd} context", "question": "q", "correct_answer": "Sepsis",
                    "distractors": ["Asthma", "Gout", "Migraine", "Anemia"]}
        if st == "self_answer":
            # answer with the keyed letter: find "Sepsis" in the rendered options
            user = req.messages[-1]["content"]
            letter = next(line[0] for line in user.splitlines() if line.endswith(". Sepsis"))
            return {"reasoning": "fever + hypotension", "answer": letter if answer_right else
                    ("A" if letter != "A" else "B")}
        comp = st.removeprefix("critique_")
        if req.schema:
            aspects = req.schema["properties"]["scores"]["properties"]
        else:  # unconstrained: read the aspect ids listed in the prompt ("- id: description")
            aspects = [ln[2:].split(":")[0] for ln in req.messages[-1]["content"].splitlines() if ln.startswith("- ")]
        s = score_by_round[rnd][comp]
        return {"feedback": f"{comp} r{rnd}", "scores": {a: s for a in aspects}}

    return FakeClient(responder)


ALL5 = dict.fromkeys(["context", "question", "correct_answer", "distractors", "reasoning"], 5)


def comp_scores(**kw):
    d = dict(ALL5)
    d.update(kw)
    return d


def test_total_rule_stops_when_mean_exceeds_threshold_but_all_components_does_not():
    # Round 1: question aspects all 4/5 -> question = 0.8, the rest 1.0 (reasoning: 3 aspects 5/5 + correctness
    # computed 5/5). total = (1 + 0.8 + 1 + 1 + 1) / 5 = 0.96 > 0.9 -> "total" stops after round 1;
    # "all_components" needs question >= 0.9 -> continues until the question reaches 5 in round 3.
    trace = {1: comp_scores(question=4), 2: comp_scores(question=4), 3: comp_scores(question=5),
             4: comp_scores(question=5)}
    r_total = run_srefine(INPUTS, client=scripted(trace), stop_rule="total", max_rounds=4, k_shots=0)
    assert r_total.generations.groupby("item")["round"].max().tolist() == [1, 1]
    assert r_total.generations["stop_by_rule"].all()
    r_all = run_srefine(INPUTS, client=scripted(trace), stop_rule="all_components", max_rounds=4, k_shots=0)
    g = r_all.generations
    assert g.groupby("item")["round"].max().tolist() == [3, 3]
    assert g.loc[g["round"] == 3, "stop_by_rule"].all() and not g.loc[g["round"] < 3, "stop"].any()
    # calls: INIT 4 + per round (self-answer 1 + critique 5) + corrections (rounds 2, 3) = 4 + 18 + 2 = 24 per item
    assert len(r_all.calls) == 2 * 24


def test_max_rounds_caps_the_loop_and_marks_the_last_round_stopped():
    trace = {r: comp_scores(question=2) for r in range(1, 5)}  # never good enough
    res = run_srefine(INPUTS, client=scripted(trace), stop_rule="all_components", max_rounds=2, k_shots=0)
    g = res.generations
    assert g.groupby("item")["round"].max().tolist() == [2, 2]
    assert g.loc[g["round"] == 2, "stop"].all() and not g["stop_by_rule"].any()


def test_loop_delegates_to_rounds_should_stop(monkeypatch):
    import medeval_kit.rounds as R

    seen = []
    real = R.should_stop

    def spy(scores, rule, threshold=0.9, **kw):
        seen.append((dict(scores), rule, threshold))
        return real(scores, rule, threshold=threshold, **kw)

    monkeypatch.setattr(R, "should_stop", spy)
    trace = {1: comp_scores(question=4)}
    run_srefine(INPUTS.iloc[:1], client=scripted(trace), stop_rule="total", threshold=0.95, max_rounds=1, k_shots=0)
    assert seen and seen[0][1] == "total" and seen[0][2] == 0.95
    # normalised component scores: question 4/5 on every aspect -> 20/25 = 0.8
    assert seen[0][0]["question"] == pytest.approx(0.8)


@pytest.mark.parametrize("tie_break, expected", [("earliest", 2), ("latest", 3)])
def test_best_round_uses_the_stated_tie_break(tie_break, expected):
    # totals: r1 = (1+0.6+1+1+1)/5 = 0.92; r2 = r3 = (1+0.8+1+1+1)/5 = 0.96 (tie); r4 = 0.92
    trace = {1: comp_scores(question=3), 2: comp_scores(question=4), 3: comp_scores(question=4),
             4: comp_scores(question=3)}
    res = run_srefine(INPUTS, client=scripted(trace), stop_rule="all_components", max_rounds=4,
                      tie_break=tie_break, k_shots=0)
    best = res.best()
    assert best["round"].tolist() == [expected, expected]
    assert best["total"].tolist() == pytest.approx([0.96, 0.96])
    rb = res.rounds[res.rounds["best"]]
    assert set(rb["round"]) == {expected}


def test_critique_parse_failures_are_kept_as_nan_rows_and_counted():
    trace = {1: ALL5, 2: ALL5}
    res = run_srefine(INPUTS.iloc[:1], client=scripted(trace, fail={(1, "critique_distractors")}),
                      stop_rule="all_components", max_rounds=2, k_shots=0)
    r = res.rounds
    validate(r, "rounds")
    d1 = r[(r["round"] == 1) & (r["component"] == "distractors")]
    assert len(d1) == 8  # 7 aspects + total, all kept
    assert d1["score"].isna().all() and (d1["parse_status"] == "failed").all()
    g = res.generations
    # an unparsed component never satisfies a rule, so round 1 cannot stop; total is NaN there
    assert np.isnan(g.loc[g["round"] == 1, "total"].iloc[0]) and g.loc[g["round"] == 1, "n_critique_failed"].iloc[0] == 1
    assert res.to_frame()["n_failed"].iloc[0] == 1
    assert g.loc[g["round"] == 2, "best"].iloc[0]  # the only scored round wins


def test_unconstrained_path_counts_its_failures():
    trace = {1: ALL5}
    client = scripted(trace, fail={(1, "question")})
    res = run_srefine(INPUTS, client=client, constrained=False, max_rounds=1, k_shots=0)
    assert all(c.schema is None for c in client.calls)  # no schema sent: free text, parsed afterwards
    c = res.calls
    assert (c.loc[c["stage"] == "init_question", "parse_status"] == "failed").sum() == 2
    assert (res.generations["generation_status"] == "failed").all()
    assert res.to_frame()["n_failed"].iloc[0] == 2


def test_rounds_rows_carry_text_flags_and_provenance():
    trace = {1: ALL5}
    res = run_srefine(INPUTS, client=scripted(trace), max_rounds=1, seed=7, k_shots=0)
    r = res.rounds
    for col in ("text", "model", "prompt", "prompt_version", "seed", "stop_rule", "parse_status", "self_answer_correct"):
        assert col in r.columns
    # 30 aspects + 5 component totals per (item, round)
    assert r.groupby(["item", "round"]).size().tolist() == [35, 35]
    g = res.generations
    for _, row in g.iterrows():
        opts = json.loads(row["options"])
        assert opts[row["answer_letter"]] == row["correct_answer"]
        order = json.loads(row["shuffle_order"])
        assert sorted(order) == list(range(5)) and order.index(0) == "ABCDE".index(row["answer_letter"])
    assert g["qa_correct"].all()
    # the computed reasoning-correctness aspect is full marks when the self-answer equals the key
    rc = r[(r["component"] == "reasoning") & (r["aspect"] == "correctness")]
    assert (rc["score"] == 5).all() and (rc["parse_status"] == "computed").all()


def test_wrong_self_answer_gives_minimum_correctness():
    res = run_srefine(INPUTS.iloc[:1], client=scripted({1: ALL5}, answer_right=False), max_rounds=1, k_shots=0)
    rc = res.rounds[(res.rounds["aspect"] == "correctness")]
    assert rc["score"].tolist() == [1.0]


def test_shuffle_is_seeded_and_keeps_the_answer():
    a = shuffle_options("x", ["a", "b", "c", "d"], seed=3)
    b = shuffle_options("x", ["a", "b", "c", "d"], seed=3)
    assert a == b and a["options"][a["answer_letter"]] == "x"


def test_bundled_inputs_load():
    df = load_srefine_inputs(n=3)
    assert len(df) == 3 and df["case"].nunique() == 3
    both = load_srefine_inputs("both")
    assert len(both) == 185 + 78


def test_fewshot_retriever_is_used_and_excludes_the_same_note():
    from medeval_kit.generate import build_fewshot_bank

    r = build_fewshot_bank()
    res = run_srefine(INPUTS.iloc[:1], client=scripted({1: ALL5}), retriever=r, k_shots=2, max_rounds=1)
    assert res.params["retriever"] == "bm25"


@pytest.mark.slow
@pytest.mark.local_model
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama_cpp (local model) not installed")
def test_local_model_grammar_constrained_critique_always_parses(tmp_path):
    from medeval_kit.generate import critique_schema
    from medeval_kit.llm import Request, get_client

    try:
        client = get_client("local/smollm2-135m", cache_mode="use", cache_path=tmp_path / "llm.sqlite")
    except Exception as exc:  # pragma: no cover - model file missing
        pytest.skip(f"local model unavailable: {exc}")
    schema = critique_schema(["relevant", "concision", "clear"], max_feedback_chars=60)
    reqs = [Request(messages=[{"role": "user", "content": f"Score this question 1-5 per aspect. Question {k}: "
                               "What is the most likely diagnosis? Reply in JSON."}],
                    model="local/smollm2-135m", max_tokens=120, schema=schema, seed=k) for k in range(2)]
    out = client.run(reqs)
    assert [r.parse_status for r in out] == ["ok", "ok"]
    assert all(set(r.parsed["scores"]) == {"relevant", "concision", "clear"} for r in out)


def test_round_summary_counts_survivors():
    from medeval_kit.generate import round_summary

    trace = {1: comp_scores(question=4), 2: comp_scores(question=5)}
    res = run_srefine(INPUTS, client=scripted(trace), stop_rule="all_components", max_rounds=2, k_shots=0)
    s = round_summary(res)
    assert s["n_items"].tolist() == [2, 2] and s["mean_question"].tolist() == pytest.approx([0.8, 1.0])
    assert s["n_stopped_by_rule"].tolist() == [0, 2]


def test_constrained_requests_get_a_token_budget_that_fits_the_schema():
    from medeval_kit.generate._common import schema_token_budget

    client = scripted({1: ALL5})
    run_srefine(INPUTS.iloc[:1], client=client, max_rounds=1, k_shots=0, max_tokens=50)
    for req in client.calls:
        budget = schema_token_budget(req.schema)
        assert budget is not None, req.metadata["stage"]  # every generation schema is length-capped
        assert req.max_tokens >= budget
    # unconstrained: no schema, the caller's max_tokens is kept
    client = scripted({1: ALL5})
    run_srefine(INPUTS.iloc[:1], client=client, max_rounds=1, k_shots=0, max_tokens=50, constrained=False)
    assert {r.max_tokens for r in client.calls} == {50}


def test_raw_newlines_in_json_strings_are_parsed_leniently_and_flagged():
    # llama.cpp's JSON grammar admits raw control characters inside strings; strict JSON does not
    def responder(req):
        st = req.metadata["stage"]
        if st.startswith("critique"):
            aspects = req.schema["properties"]["scores"]["properties"]
            return '{"scores": {' + ", ".join(f'"{a}": 5' for a in aspects) + '}, "feedback": "line1\nline2"}'
        return scripted({1: ALL5}).responder(req)

    res = run_srefine(INPUTS.iloc[:1], client=FakeClient(responder), max_rounds=1, k_shots=0)
    crit = res.calls[res.calls["stage"].str.startswith("critique")]
    assert (crit["parse_status"] == "ok").all()
    assert crit["parse_error"].str.startswith("lenient").all()
    assert res.generations["total"].iloc[0] == pytest.approx(1.0)


def test_plot_rounds_rings_the_best_round_and_draws_the_threshold():
    from medeval_kit.viz import figure, plot_rounds

    trace = {1: comp_scores(question=3), 2: comp_scores(question=4)}
    res = run_srefine(INPUTS, client=scripted(trace), stop_rule="all_components", max_rounds=2, k_shots=0,
                      threshold=0.95)
    fig, ax = figure()
    assert plot_rounds(res.generations, ax=ax) is fig
    assert len(ax.lines) == 2 + 1  # one line per item, plus the threshold
    assert ax.lines[-1].get_ydata()[0] == 0.95



def test_a_rule_run_equals_the_full_trajectory_cut_by_the_rule():
    """Issue 14: the study runs each arm under both stopping rules; a rule run must be the 4-round
    trajectory cut where `rounds.apply_stopping_rule` says (same rounds, same scores, same best)."""
    import medeval_kit.rounds as R

    trace = {1: comp_scores(question=3), 2: comp_scores(question=4), 3: comp_scores(question=5),
             4: comp_scores(question=4)}
    full = run_srefine(INPUTS, client=scripted(trace), stop_rule="max_rounds", max_rounds=4, k_shots=0)
    assert full.generations.groupby("item")["round"].max().tolist() == [4, 4]
    for rule in ("total", "all_components"):
        run = run_srefine(INPUTS, client=scripted(trace), stop_rule=rule, max_rounds=4, k_shots=0)
        cut = R.apply_stopping_rule(full.rounds, rule, 0.9, max_rounds=4)
        got = run.rounds.sort_values(["item", "round", "component", "aspect"]).reset_index(drop=True)
        want = cut.sort_values(["item", "round", "component", "aspect"]).reset_index(drop=True)
        assert got[["item", "round", "component", "aspect", "score"]].equals(
            want[["item", "round", "component", "aspect", "score"]]), rule
        assert got["best"].tolist() == want["best"].tolist()


def test_stop_rule_comparison_counts_full_runs_with_cis():
    from medeval_kit.generate import stop_rule_comparison

    trace = {1: comp_scores(question=4), 2: comp_scores(question=4), 3: comp_scores(question=5),
             4: comp_scores(question=5)}
    res = {("human", rule): run_srefine(INPUTS, client=scripted(trace), stop_rule=rule, max_rounds=4, k_shots=0)
           for rule in ("total", "all_components")}
    t = stop_rule_comparison(res).set_index(["stop_rule", "measure"])
    assert t.loc[("total", "share_all_rounds"), "estimate"] == 0  # total stops both at round 1
    assert t.loc[("total", "share_stopped_by_rule"), "estimate"] == 1
    assert t.loc[("all_components", "mean_rounds"), "estimate"] == 3
    assert t.loc[("all_components", "share_best_round_1"), "estimate"] == 0
    assert (t["n_items"] == 2).all()
    lo, hi = t.loc[("total", "share_stopped_by_rule"), ["ci_low", "ci_high"]]
    assert 0 < lo < 1 and hi == pytest.approx(1)


def test_srefine_pairs_and_preferences_keep_every_item_counted():
    from medeval_kit.generate import srefine_pairs, srefine_preferences

    # i1 improves (best = round 2); i2's best is round 1 (nothing to compare)
    def client_for(trace):
        return scripted(trace)

    trace = {1: comp_scores(question=4), 2: comp_scores(question=5)}
    res = run_srefine(INPUTS.iloc[:1], client=client_for(trace), stop_rule="max_rounds", max_rounds=2, k_shots=0)
    trace2 = {1: comp_scores(question=5), 2: comp_scores(question=4)}
    res2 = run_srefine(INPUTS.iloc[1:], client=client_for(trace2), stop_rule="max_rounds", max_rounds=2, k_shots=0)
    pairs = pd.concat([srefine_pairs(res), srefine_pairs(res2)], ignore_index=True)
    assert pairs["status"].tolist() == ["pair", "best_is_round_1"]
    assert pairs["round_b"].tolist() == [2, 1]
    assert pairs.loc[0, "answer_a"] != pairs.loc[0, "answer_b"] and "Context:" in pairs.loc[0, "answer_b"]
    resolved = pd.DataFrame({"item": ["i1"], "verdict": [None], "resolution": ["dropped"]})
    prefs = srefine_preferences(pairs, resolved)
    assert prefs["status"].tolist() == ["inconsistent", "best_is_round_1"]
    assert prefs["preference"].isna().all()
    prefs = srefine_preferences(pairs, pd.DataFrame({"item": ["i1"], "verdict": ["B"], "resolution": ["agree"]}))
    assert prefs["preference"].tolist()[0] == "B" and prefs["status"].tolist()[0] == "ok"


def test_judge_srefine_without_comparable_pairs_calls_nothing_and_counts_every_item():
    from medeval_kit.generate import judge_srefine, srefine_pairs

    res = run_srefine(INPUTS, client=scripted({1: ALL5}), max_rounds=1, k_shots=0)
    pairs = srefine_pairs(res)
    client = FakeClient(lambda req: pytest.fail("no call expected"))
    out = judge_srefine(pairs, client=client)
    assert out.vanilla.empty and out.win_rate.empty and not client.calls
    assert out.preferences["status"].tolist() == ["best_is_round_1", "best_is_round_1"]
    # one result object (was a dict): a contract table, a summary and an HTML view
    from medeval_kit.results import RESULT_COLUMNS

    assert set(RESULT_COLUMNS) <= set(out.to_frame().columns)
    assert isinstance(out.summary(), str) and isinstance(out._repr_html_(), str)
    # the old dict access and the old judge= keyword work for one release, with a warning
    with pytest.warns(DeprecationWarning, match=r"\.preferences"):
        assert out["preferences"] is out.preferences
    with pytest.warns(DeprecationWarning, match="use model="):
        old = judge_srefine(pairs, judge="local/smollm2-135m", client=client)
    assert old.preferences.equals(out.preferences)
