"""Position-bias calibration (Wang et al. 2023, "Large Language Models are not Fair Evaluators", arXiv
2305.17926, Sec. 3: Multiple Evidence Calibration, Balanced Position Calibration, Human-in-the-Loop
Calibration with the balanced position diversity entropy): hand-built cases whose results are known
exactly, recovery of a planted bias, and the ``pairwise_mec`` protocol on a fake client."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from medeval_kit import agreement
from medeval_kit.bias import calibration as cal
from medeval_kit.datasets.synthetic import synthetic_pairwise
from medeval_kit.errors import SchemaError
from medeval_kit.llm import Response
from medeval_kit.llm.parse import parse_reply
from medeval_kit.pairwise.resolve import (
    CALIBRATED_POLICIES,
    mean_over_repeats,
    position_entropy,
    resolve_calibrated,
    resolve_orders,
    resolve_pairwise,
)
from medeval_kit.results import check_result


def calls(rows):
    """A judgments table from (item, order, repeat, score_a, score_b) tuples (model terms)."""
    df = pd.DataFrame(rows, columns=["item", "order", "repeat", "score_a", "score_b"])
    df["judge"], df["criterion"], df["protocol"] = "j", "overall", "pairwise_mec"
    m = df["score_a"] - df["score_b"]
    df["verdict"] = np.where(m > 0, "A", np.where(m < 0, "B", "tie")).astype(object)
    df["parse_status"] = np.where(m.isna(), "failed", "ok")
    df.loc[m.isna(), "verdict"] = None
    return df


# =========================================================================== golden: BPC, MEC, entropy
def test_bpc_averages_the_two_orders():
    """BPC (Wang et al. Sec. 3.2): the margin of A averaged over both orders. Item 1: AB gives A 8 vs 6
    (+2), BA gives A 5 vs 7 (-2): mean 0 -> tie; a first-slot bonus of 2 would produce exactly this.
    Item 2: AB +3, BA +1 -> mean +2 -> A. One A-win and one B-win: BPDE = -2 (1/2 ln 1/2) = ln 2."""
    df = calls([("1", "AB", 0, 8, 6), ("1", "BA", 0, 5, 7), ("2", "AB", 0, 9, 6), ("2", "BA", 0, 7, 6)])
    r = resolve_calibrated(df, "bpc").set_index("item")
    assert r.loc["1", "margin"] == 0.0 and r.loc["1", "verdict"] == "tie"
    assert r.loc["2", "margin"] == 2.0 and r.loc["2", "verdict"] == "A"
    assert (r.loc["1", "verdict_ab"], r.loc["1", "verdict_ba"]) == ("A", "B")
    assert r.loc["1", "entropy"] == pytest.approx(math.log(2))
    assert r.loc["2", "entropy"] == 0.0
    assert set(r["margin_source"]) == {"scores"} and set(r["resolution"]) == {"calibrated"}


def test_mec_averages_k_samples_and_mec_bpc_balances_orders():
    """MEC (Sec. 3.1): the mean over k = 3 samples. AB margins +3, -1, +1 -> +1 (A); BA margins 0, 0, -3
    -> -1 (B); MEC+BPC: (+1 + -1) / 2 = 0 -> tie. Shares: AB (A 2/3, B 1/3, tie 0), BA (A 0, B 1/3,
    tie 2/3), balanced (1/3, 1/3, 1/3): BPDE = ln 3, its maximum. BPC uses repeat 0 only: (+3 + 0) / 2."""
    df = calls([("1", "AB", 0, 7, 4), ("1", "AB", 1, 5, 6), ("1", "AB", 2, 6, 5),
                ("1", "BA", 0, 5, 5), ("1", "BA", 1, 8, 8), ("1", "BA", 2, 4, 7)])
    mec_ab = resolve_calibrated(df, "mec").iloc[0]
    mec_ba = resolve_calibrated(df, "mec", mec_order="BA").iloc[0]
    both = resolve_calibrated(df, "mec_bpc").iloc[0]
    bpc = resolve_calibrated(df, "bpc").iloc[0]
    assert (mec_ab["margin"], mec_ab["verdict"]) == (1.0, "A")
    assert (mec_ba["margin"], mec_ba["verdict"]) == (-1.0, "B")
    assert (both["margin"], both["verdict"]) == (0.0, "tie")
    assert (both["verdict_ab"], both["verdict_ba"]) == ("A", "B")
    assert (both["p_a"], both["p_b"], both["p_tie"]) == pytest.approx((1 / 3, 1 / 3, 1 / 3))
    assert both["entropy"] == pytest.approx(math.log(3))
    assert (bpc["margin"], bpc["verdict"], bpc["n_calls"]) == (1.5, "A", 2)
    per = mean_over_repeats(df)
    assert per.set_index("order")["margin"].to_dict() == {"AB": 1.0, "BA": -1.0}
    assert per.set_index("order")["n_tie"].to_dict() == {"AB": 0, "BA": 2}


def test_orders_weigh_equally_when_calls_fail():
    """With 3 parsed calls in AB (margins 3, 3, 3) and 1 in BA (-1; two failed), the balanced margin is
    (3 + -1) / 2 = 1, not the pooled (9 - 1) / 4 = 2; the failures are counted, never ties."""
    df = calls([("1", "AB", 0, 9, 6), ("1", "AB", 1, 8, 5), ("1", "AB", 2, 7, 4),
                ("1", "BA", 0, 5, 6), ("1", "BA", 1, np.nan, 6), ("1", "BA", 2, 5, np.nan)])
    r = resolve_calibrated(df, "mec_bpc").iloc[0]
    assert r["margin"] == 1.0 and r["verdict"] == "A"
    assert (r["n_calls"], r["n_ok"], r["n_failed"]) == (6, 4, 2)
    assert (r["p_a"], r["p_b"]) == (0.5, 0.5)


def test_an_order_without_a_parsed_call_fails_the_pair():
    df = calls([("1", "AB", 0, 8, 6), ("1", "BA", 0, np.nan, np.nan), ("2", "AB", 0, 6, 6)])
    r = resolve_calibrated(df, "mec_bpc").set_index("item")
    assert r.loc["1", "resolution"] == "failed" and r.loc["1", "verdict"] is None and r.loc["1", "n_failed"] == 1
    assert r.loc["2", "resolution"] == "failed" and r.loc["2", "missing_order"] == "BA"
    # MEC in the order that parsed still has a verdict
    assert resolve_calibrated(df, "mec").set_index("item").loc["1", "verdict"] == "A"


def test_position_entropy_values():
    """BPDE = -sum p log p over win / tie / lose (natural log): 0 when all calls agree, ln 2 for an even
    split of two outcomes, ln 3 for three; -(0.5 ln 0.5 + 0.25 ln 0.25 * 2) = 1.5 ln 2."""
    e = position_entropy([1, 0.5, 1 / 3, 0.5, np.nan], [0, 0.5, 1 / 3, 0.25, 0.5], [0, 0, 1 / 3, 0.25, 0.5])
    assert e[:4] == pytest.approx([0.0, math.log(2), math.log(3), 1.5 * math.log(2)])
    assert np.isnan(e[4])


def test_vote_margins_equal_the_tie_policy_without_ties():
    """From verdicts alone (votes +1 / -1) with one call per order and no tie verdicts, BPC's balanced
    margin is +-1 when the orders agree and 0 when they flip: exactly resolve_orders' ``tie`` policy."""
    d = synthetic_pairwise(n_items=150, tie_rate=0.0, repeats=1, seed=3)
    a, b = resolve_calibrated(d, "bpc"), resolve_orders(d, "tie")
    assert a["margin_source"].eq("verdicts").all()
    assert list(a["verdict"]) == list(b["verdict"])
    # with tie verdicts they differ: (tie, B) averages to B where the tie policy says tie
    d2 = synthetic_pairwise(n_items=150, tie_rate=0.3, repeats=1, seed=3)
    a2, b2 = resolve_calibrated(d2, "bpc"), resolve_orders(d2, "tie")
    diff = a2["verdict"].to_numpy() != b2["verdict"].to_numpy()
    assert diff.any() and set(b2.loc[diff, "verdict"]) == {"tie"}


def test_resolve_pairwise_dispatches_calibrated_policies():
    d = synthetic_pairwise(n_items=40, repeats=3, seed=0)
    for p in CALIBRATED_POLICIES:
        out = resolve_pairwise(d, p)
        assert set(out["policy"]) == {p} and "entropy" in out
    assert resolve_pairwise(d, "drop").equals(resolve_orders(d, "drop"))
    with pytest.raises(ValueError, match="policy"):
        resolve_calibrated(d, "drop")
    with pytest.raises(SchemaError, match="score"):
        resolve_calibrated(d, "bpc", margin="scores")


# =========================================================================== golden: effect, queue, budget curve
def four_items():
    """Items 1-4, humans A, B, tie, A. Judge (k = 2 per order, model-terms margins):
    1: AB +2 +2, BA -1 -1 -> vanilla (A, B): 1/2 right; MEC same; BPC +0.5 -> A right; MEC+BPC A right.
    2: AB -1 -3, BA -1 -1 -> B everywhere: right.
    3: AB +1 +1, BA -1 -1 -> vanilla (A, B): 0 right; BPC 0 -> tie: right; MEC+BPC tie: right.
    4: AB +1 -1, BA -1 -1 -> vanilla (A, B): 1/2; MEC (tie, B): 0; BPC 0 -> tie: wrong; MEC+BPC -0.5 -> B: wrong.
    Accuracy: vanilla (0.5 + 1 + 0 + 0.5) / 4 = 0.5; mec (0.5 + 1 + 0 + 0) / 4 = 0.375; bpc 3/4; mec_bpc 3/4.
    BPDE: item 1 ln 2 (A 1/2, B 1/2), 2: 0, 3: ln 2, 4: AB (1/2, 1/2, 0), BA (0, 1, 0) -> (1/4, 3/4, 0)."""
    m = {"1": ([2, 2], [-1, -1]), "2": ([-1, -3], [-1, -1]), "3": ([1, 1], [-1, -1]), "4": ([1, -1], [-1, -1])}
    rows = [(i, o, r, 5 + v, 5) for i, (ab, ba) in m.items() for o, vs in (("AB", ab), ("BA", ba))
            for r, v in enumerate(vs)]
    humans = pd.DataFrame({"item": ["1", "2", "3", "4"], "rater": "h", "label": ["A", "B", "tie", "A"]})
    return cal.calibrate(calls(rows)), humans


def test_calibrate_reads_four_methods():
    c, _ = four_items()
    c = c.set_index("item")
    assert list(c.loc["4", ["vanilla_ab", "vanilla_ba", "mec_ab", "mec_ba", "bpc", "mec_bpc"]]) == \
        ["A", "B", "tie", "B", "tie", "B"]
    assert c.loc["4", "entropy"] == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)))
    assert c["n_repeats"].eq(2).all()


def test_effect_levels_and_paired_differences():
    c, humans = four_items()
    e = cal.calibration_effect(c, humans, n_boot=200, seed=1, hitl_share=0.25)
    assert not check_result(e)
    lv = e[(e.metric == "accuracy") & (e.comparison == "level")].set_index("method")["estimate"]
    assert lv.to_dict() == pytest.approx({"vanilla": 0.5, "mec": 0.375, "bpc": 0.75, "mec_bpc": 0.75, "hitl": 0.75})
    # hitl 25% = 1 item: the top of the queue has the highest BPDE (ln 2: items 1 and 3), the smaller
    # |margin| first (3: 0, 1: 0.5); item 3 was already right (tie), so hitl stays at 3/4
    q = cal.review_queue(c)
    assert list(q["item"]) == ["3", "1", "4", "2"]
    df = e[(e.metric == "accuracy") & (e.comparison == "difference")].set_index("method")
    assert df.loc["bpc", "estimate"] == pytest.approx(0.25) and df.loc["bpc", "baseline"] == "vanilla"
    # paired: the difference's replicates come from the same draws, so identical methods differ by exactly 0
    same = cal.calibration_effect(c.assign(mec_bpc=c["bpc"]), humans, methods=["bpc", "mec_bpc"], baseline="bpc",
                                  n_boot=200, metrics=["accuracy"])
    d = same[same.comparison == "difference"].iloc[0]
    assert (d["estimate"], d["ci_low"], d["ci_high"]) == (0.0, 0.0, 0.0)


def test_hitl_reviews_the_top_of_the_queue():
    c, humans = four_items()
    # queue: 3 (ln 2, |margin| 0), 1 (ln 2, 0.5), 4 (0.56), 2 (0). Half = items 3 and 1, both already right.
    half = cal.calibration_effect(c, humans, methods=["mec_bpc", "hitl"], baseline="mec_bpc", hitl_share=0.5,
                                  n_boot=0, metrics=["accuracy"]).set_index(["method", "comparison"])
    assert half.loc[("hitl", "level"), "estimate"] == 0.75
    full = cal.calibration_effect(c, humans, methods=["hitl"], baseline="hitl", hitl_share=1.0, n_boot=0,
                                  metrics=["accuracy", "kappa"])
    assert full["estimate"].tolist() == [1.0, 1.0]


def test_kappa_equals_cohens_kappa_for_single_labels():
    """For a one-label method the kappa is Cohen's kappa of (judge, reference), as agreement computes it."""
    j, h = cal.synthetic_scored_pairwise(120, seed=4)
    c = cal.calibrate(j)
    e = cal.calibration_effect(c, h, n_boot=0, metrics=["kappa"], methods=["bpc"], baseline="bpc")
    ann = pd.concat([h[["item", "rater", "label"]],
                     pd.DataFrame({"item": c["item"], "rater": "judge", "label": c["bpc"]})])
    ref = agreement.cohen_kappa(ann, raters=["human", "judge"], categories=list(cal.CATEGORIES), n_boot=0)
    assert e["estimate"].iloc[0] == pytest.approx(ref.estimate)


def test_budget_curve_endpoints():
    """m = 0: the calibrated judge's accuracy (3/4); m = n: every item has the human label (1); the random
    expectation joins the two linearly; the oracle reviews the one error first (1 from m = 1)."""
    c, humans = four_items()
    b = cal.budget_curve(c, humans, n_boot=300, seed=0)
    assert not check_result(b)
    assert b["reviewed"].tolist() == [0, 1, 2, 3, 4]
    assert b["estimate"].tolist() == pytest.approx([0.75, 0.75, 0.75, 1.0, 1.0])  # queue 3, 1, 4, 2
    assert b["random"].tolist() == pytest.approx([0.75, 0.8125, 0.875, 0.9375, 1.0])
    assert b["oracle"].tolist() == pytest.approx([0.75, 1, 1, 1, 1])
    assert b["gain_per_review"].iloc[3] == pytest.approx(0.25 / 3)
    assert (b["ci_low"] <= b["estimate"] + 1e-12).all() and (b["estimate"] <= b["ci_high"] + 1e-12).all()
    assert (b["ci_low"].iloc[-1], b["ci_high"].iloc[-1]) == (1.0, 1.0)


def test_review_queue_puts_failures_first():
    df = calls([("1", "AB", 0, 8, 6), ("1", "BA", 0, np.nan, 1), ("2", "AB", 0, 8, 6), ("2", "BA", 0, 5, 7),
                ("3", "AB", 0, 8, 6), ("3", "BA", 0, 8, 6)])
    q = cal.review_queue(cal.calibrate(df))
    assert list(q["item"]) == ["1", "2", "3"]
    assert list(q["reason"]) == ["judge failed", "uncertain", "certain"]
    assert cal.review_queue(cal.calibrate(df), top=1)["item"].tolist() == ["1"]


# =========================================================================== (a) a planted bias is removed
def test_calibration_recovers_the_unbiased_agreement():
    """A scoring judge with a planted +2 first-slot bonus: its one-call agreement falls below what the
    same judge has without the bonus (the CI excludes the unbiased value), while BPC and MEC+BPC recover
    the unbiased judge's agreement (population values from 20000 unbiased items) within their 95% CIs,
    and the paired gain over the uncalibrated judge excludes 0."""
    j, h = cal.synthetic_scored_pairwise(300, position_bonus=2.0, seed=0)
    e = cal.calibration_effect(cal.calibrate(j), h, n_boot=1000, seed=0, metrics=["accuracy"])
    ju, hu = cal.synthetic_scored_pairwise(20000, position_bonus=0.0, seed=1)
    target = cal.calibration_effect(cal.calibrate(ju), hu, n_boot=0, metrics=["accuracy"])
    target = target[target.comparison == "level"].set_index("method")["estimate"]
    lv = e[e.comparison == "level"].set_index("method")
    assert lv.loc["vanilla", "ci_high"] < target["vanilla"]
    for m in ("bpc", "mec_bpc"):
        assert lv.loc[m, "ci_low"] <= target[m] <= lv.loc[m, "ci_high"], (m, target[m], lv.loc[m].to_dict())
    gain = e[e.comparison == "difference"].set_index("method")
    assert gain.loc["bpc", "ci_low"] > 0 and gain.loc["mec_bpc", "ci_low"] > 0


def test_reference_labels_plurality_and_bad_labels():
    h = pd.DataFrame({"item": ["1", "1", "1", "2", "2"], "rater": ["a", "b", "c", "a", "b"],
                      "label": ["A", "A", "B", "A", "tie"]})
    ref = cal.reference_labels(h).set_index("item")
    assert ref.loc["1", "reference"] == "A" and ref.loc["2", "reference"] is None
    with pytest.raises(SchemaError, match="human labels"):
        cal.reference_labels(h.assign(label=["A", "A", "B", "A", "better"]))


# =========================================================================== the pairwise_mec protocol
class FakeClient:
    def __init__(self, reply, model="fake/judge"):
        self.reply, self.model, self.requests = reply, model, []

    def run(self, requests, progress=True, desc=None):
        out = []
        for r in requests:
            self.requests.append(r)
            text = self.reply(r)
            parsed, status, perr = parse_reply(text, r.schema)
            out.append(Response(text=text, parsed=parsed, parse_status=status, parse_error=perr, request=r,
                                key=f"k{len(self.requests)}"))
        return out


PAIRS = pd.DataFrame({"item": ["1", "2"], "question": ["q1", "q2"], "answer_a": ["good one", "good two"],
                      "answer_b": ["bad one", "bad two"], "model_a": ["mA", "mA"], "model_b": ["mB", "mB"]})


def first_bonus(req):
    """Prefers the good text by 1 point but adds 3 to whatever is shown first."""
    u = req.messages[-1]["content"]
    first = re.search(r"\[Response A\]\n(.*?)\n\[End", u, re.S).group(1)
    good_first = first.startswith("good")
    s_first, s_second = (6 if good_first else 5) + 3, (5 if good_first else 6)
    return json.dumps({"evidence": "because", "score_a": s_first, "score_b": s_second})


def test_pairwise_mec_protocol_unswaps_scores_and_bpc_removes_the_bonus():
    from medeval_kit import judge as J
    from medeval_kit.schemas import validate

    fake = FakeClient(first_bonus)
    j = J.run_protocol("pairwise_mec", PAIRS, client=fake, repeats=2)
    validate(j, "judgments")
    assert len(fake.requests) == 2 * 2 * 2
    assert {r.temperature for r in fake.requests} == {1.0} and {r.repeat for r in fake.requests} == {0, 1}
    assert list(fake.requests[0].schema["properties"]) == ["evidence", "score_a", "score_b"]
    ab, ba = j[j.order == "AB"].iloc[0], j[j.order == "BA"].iloc[0]
    # AB: good (model A) shown first: 9 vs 5; BA: bad shown first: 8 vs 6 -> model A 6, model B 8
    assert (ab.score_a, ab.score_b, ab.verdict, ab.slot_verdict) == (9, 5, "A", "first")
    assert (ba.score_a, ba.score_b, ba.verdict, ba.slot_verdict, ba.score) == (6, 8, "B", "first", -2)
    r = resolve_calibrated(j, "mec_bpc")
    assert r["margin"].tolist() == [1.0, 1.0] and r["verdict"].tolist() == ["A", "A"]
    assert resolve_calibrated(j, "mec")["verdict"].tolist() == ["A", "A"]
    assert J.score_summary(j, policy="mec_bpc")["estimate"].iloc[0] == 1.0
    hum = pd.DataFrame({"item": ["1", "2", "1", "2"], "rater": ["h1", "h1", "h2", "h2"], "rater_kind": "human",
                        "criterion": "overall", "label": ["A", "A", "A", "A"]})
    vs = J.human_agreement(j, hum, policy="mec_bpc", n_boot=0)
    assert "fake/judge" in set(vs["rater"]) and "fake/judge [BA only]" in set(vs["rater"])
    one = J.run_protocol("pairwise_mec", PAIRS, client=FakeClient(first_bonus), repeats=1)
    assert set(one["temperature"]) == {0.0}


def test_pairwise_mec_refuses_reversed_criteria_and_keeps_pairwise_unchanged():
    from medeval_kit import judge as J
    from medeval_kit.prompts import load_prompt

    with pytest.raises(J.JudgeError, match="reversed"):
        J.run_protocol("pairwise_mec", PAIRS, client=FakeClient(first_bonus), rubric="longform")
    assert "pairwise_mec" in J.protocol_names() and "pairwise_mec" in J.PROTOCOLS
    assert J.default_templates()["pairwise_mec"] == "judge/pairwise_mec"
    # the pairwise protocol's template and schema are untouched (its cached calls stay valid)
    p = load_prompt("judge/pairwise")
    assert str(p.version) == "1" and list(p.schema["properties"]) == ["verdict"]


# =========================================================================== plots and inputs without optional columns
def test_calibrate_without_judge_criterion_or_repeat_columns():
    df = calls([("1", "AB", 0, 8, 6), ("1", "BA", 0, 5, 7)]).drop(columns=["judge", "criterion", "repeat"])
    c = cal.calibrate(df)
    assert (c["judge"].iloc[0], c["criterion"].iloc[0], c["bpc"].iloc[0]) == ("judge", "overall", "tie")
    with pytest.raises(SchemaError, match="order"):
        cal.calibrate(df.drop(columns="order"))


def test_plots_draw_the_tables():
    import matplotlib.pyplot as plt

    from medeval_kit.viz.calibration import plot_budget_curve, plot_calibration_effect

    c, humans = four_items()
    e = cal.calibration_effect(c, humans, n_boot=50).assign(dataset="toy")
    fig = plot_calibration_effect(e)
    assert len(fig.axes) == 2 and fig.axes[0].get_yticklabels()[0].get_text() == cal.METHOD_LABELS["vanilla"]
    fig2, axes = plt.subplots(1, 2)
    assert plot_calibration_effect(e, ax=axes) is fig2
    b = cal.budget_curve(c, humans, n_boot=50)
    fig3, ax = plt.subplots()
    assert plot_budget_curve(b, ax=ax) is fig3
    assert plot_budget_curve(b.assign(dataset="toy")).axes[0].get_xlim() == (0.0, 1.0)
    plt.close("all")


def test_calibration_effect_legend_sits_below_the_x_labels_and_the_crosses_on_top():
    """The figure review: the legend touched the x labels, the two x labels nearly met, and the 'without the
    planted bias' crosses hid behind the points."""
    import matplotlib.pyplot as plt

    from medeval_kit.viz.calibration import plot_calibration_effect

    c, humans = four_items()
    e = cal.calibration_effect(c, humans, n_boot=50)
    e = pd.concat([e.assign(dataset="toy"), e.assign(dataset="other", unbiased_target=0.9)])
    fig = plot_calibration_effect(e)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    legend = fig.legends[0].get_window_extent(r)
    labels = [a.xaxis.get_tightbbox(r) for a in fig.axes]
    assert all(legend.y1 <= b.y0 for b in labels)
    assert labels[0].x1 < labels[1].x0  # the two x labels (and tick labels) do not meet
    crosses = [line for line in fig.axes[0].lines if line.get_marker() == "x"]
    assert crosses and all(line.get_zorder() > 3 for line in crosses)
    plt.close(fig)
