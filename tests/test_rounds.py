"""Tests of medeval_kit.rounds: stopping rules, best-round selection, round-wise statistics (plots: viz.rounds,
command: cli.rounds)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon

from medeval_kit import rounds as R
from medeval_kit.errors import ParameterError
from medeval_kit.results import check_result
from medeval_kit.schemas import validate

COMPS = ("context", "question", "answer", "distractors", "reasoning")
MAX = {"context": 45, "question": 25, "answer": 25, "distractors": 35, "reasoning": 20}


def trace(item: str, rounds: list[dict], *, stop_last: bool = True) -> pd.DataFrame:
    """Build a rounds table from {component: points} per round (max points as in MedQG)."""
    rows = []
    for r, pts in enumerate(rounds, start=1):
        for c in COMPS:
            p = pts.get(c, MAX[c])
            rows.append({"item": item, "round": r, "component": c, "aspect": "total",
                         "score": float(p) if p is not None else np.nan, "max_score": float(MAX[c]),
                         "stop": stop_last and r == len(rounds), "best": False})
    return pd.DataFrame(rows)


# Item "a": round 1 has question 21/25 = 0.84, everything else full:
#   total (mean of normalised components) = (1 + 0.84 + 1 + 1 + 1) / 5 = 0.968 > 0.9 -> the paper's
#   rule stops at round 1; the code's rule does not (0.84 < 0.9).
# Round 2: question 23/25 = 0.92 -> every component >= 0.9 -> the code's rule stops at round 2.
# Round 3: all full (total 1.0).
HAND_A = trace("a", [{"question": 21}, {"question": 23}, {}])
# Item "b": round 1 distractors 14/35 = 0.4 -> total (1+1+1+0.4+1)/5 = 0.88 (no rule stops);
# rounds 2 and 3 both have question 24/25 -> total 0.992 each: a tie between rounds 2 and 3.
HAND_B = trace("b", [{"distractors": 14}, {"question": 24}, {"question": 24}])
# Item "c": round 1 question unparseable (NA) -> no rule can stop there and it cannot be best;
# round 2 all full.
HAND_C = trace("c", [{"question": None}, {}])
HAND = pd.concat([HAND_A, HAND_B, HAND_C], ignore_index=True)


# ----------------------------------------------------------------------------- parsing, should_stop


@pytest.mark.parametrize(
    "text, expected",
    [
        ("45/45", (45.0, 45.0, "ok")),
        ("Total score for the context = 45/45.", (45.0, 45.0, "ok")),
        ("relevant 5/5, clear 4/5; total 24/25", (24.0, 25.0, "ok")),  # the last fraction wins
        ("20", (math.nan, math.nan, "failed")),  # no scale: not guessed
        ("7/0", (math.nan, math.nan, "failed")),
        ("30/25", (math.nan, math.nan, "failed")),
        (None, (math.nan, math.nan, "failed")),
    ],
)
def test_parse_score_string(text, expected):
    got = R.parse_score_string(text)
    assert got.status == expected[2]
    for a, b in zip(got[:2], expected[:2]):
        assert (math.isnan(a) and math.isnan(b)) or a == b


def test_should_stop_rules_on_hand_scores():
    scores = {"context": "45/45", "question": "21/25", "answer": "25/25", "distractors": "35/35", "reasoning": "20/20"}
    assert R.should_stop(scores, "total") is True  # mean 0.968 > 0.9
    assert R.should_stop(scores, "all_components") is False  # 0.84 < 0.9
    assert R.should_stop(scores, "max_rounds") is False
    assert R.should_stop(scores, "max_rounds", round=4, max_rounds=4) is True
    assert R.should_stop(scores, "all_components", round=3, max_rounds=4) is False
    # boundaries: the code's rule is >=, the paper's is strictly >
    assert R.should_stop({"a": 0.9, "b": 0.9}, "all_components") is True
    assert R.should_stop({"a": 0.9, "b": 0.9}, "total") is False
    # mean vs points: 9/45 = 0.2 and 25/25 = 1 -> mean 0.6, points 34/70 = 0.486
    mixed = {"context": "9/45", "question": (25, 25)}
    assert R.should_stop(mixed, "total", 0.55) is True
    assert R.should_stop(mixed, "total", 0.55, total="points") is False
    # an unparseable component never satisfies a rule
    assert R.should_stop({"a": "20", "b": "25/25"}, "all_components") is False
    assert R.should_stop({"a": float("nan"), "b": 1.0}, "total") is False
    with pytest.raises(ParameterError):
        R.should_stop(scores, "paper")


# ----------------------------------------------------------------------------- stopping on tables


def _flags(df: pd.DataFrame, item: str) -> tuple[list[int], int, int]:
    g = df[df["item"] == item].drop_duplicates("round")
    return sorted(g["round"].tolist()), int(g.loc[g["stop"], "round"].iloc[0]), int(g.loc[g["best"], "round"].iloc[0])


def test_apply_stopping_rule_total_vs_all_components():
    paper = R.apply_stopping_rule(HAND, "total", max_rounds=4)
    code = R.apply_stopping_rule(HAND, "all_components", max_rounds=4)
    validate(paper, "rounds")
    validate(code, "rounds")
    # item a: paper stops at 1 (0.968 > 0.9), code at 2 (question 0.92 >= 0.9)
    assert _flags(paper, "a") == ([1], 1, 1)
    assert _flags(code, "a") == ([1, 2], 2, 2)
    # item b: round 2 satisfies both rules (all >= 0.96, total 0.992)
    assert _flags(paper, "b") == ([1, 2], 2, 2)
    assert _flags(code, "b") == ([1, 2], 2, 2)
    # item c: round 1 has an NA component -> no stop; round 2 is full
    assert _flags(code, "c") == ([1, 2], 2, 2)
    # rounds after the stop: a loses rounds 2-3 under the paper rule, b loses round 3: 3 rounds (15 rows)
    dropped = {k: d.drop_duplicates("item").set_index("item")["n_rounds_after_stop"].to_dict()
               for k, d in (("paper", paper), ("code", code))}
    assert dropped["paper"] == {"a": 2, "b": 1, "c": 0}
    assert dropped["code"] == {"a": 1, "b": 1, "c": 0}  # a loses round 3, b loses round 3
    assert len(HAND) - len(paper) == 15 and len(HAND) - len(code) == 10
    assert set(code["stop_reason"]) == {"rule"}


def test_apply_stopping_rule_max_rounds_and_end_of_trace():
    budget = R.apply_stopping_rule(HAND, "max_rounds", max_rounds=2)
    assert _flags(budget, "a")[:2] == ([1, 2], 2)
    assert set(budget["stop_reason"]) == {"max_rounds"}
    # without a budget the trace's end is the stop; b ties rounds 2 and 3 -> earliest = 2
    free = R.apply_stopping_rule(HAND, "max_rounds", max_rounds=None)
    assert _flags(free, "b") == ([1, 2, 3], 3, 2)
    assert set(free["stop_reason"]) == {"end_of_trace"}
    latest = R.apply_stopping_rule(HAND, "max_rounds", max_rounds=None, tie_break="latest")
    assert _flags(latest, "b") == ([1, 2, 3], 3, 3)
    kept = R.apply_stopping_rule(HAND, "total", truncate=False)
    assert len(kept) == len(HAND)
    assert kept.drop_duplicates("item").set_index("item")["n_rounds_after_stop"].to_dict() == {"a": 2, "b": 1, "c": 0}


def test_select_best_round_tie_breaks_and_na():
    best = R.select_best_round(HAND).set_index("item")
    assert best.loc["a", "best_round"] == 3  # total 1.0 at round 3
    assert best.loc["b", "best_round"] == 2 and best.loc["b", "n_tied"] == 2
    assert best.loc["c", "best_round"] == 2 and best.loc["c", "n_scored"] == 1
    latest = R.select_best_round(HAND, tie_break="latest").set_index("item")
    assert latest.loc["b", "best_round"] == 3
    assert math.isclose(best.loc["b", "best_value"], 0.992)
    none = trace("z", [{"question": None}])
    out = R.select_best_round(none)
    assert pd.isna(out.loc[0, "best_round"]) and out.loc[0, "note"] == "no scored round"
    with pytest.raises(ParameterError):
        R.select_best_round(HAND, tie_break="random")


def test_stopping_rule_consistency_on_hand_traces():
    # observed traces: a has 3 rounds, b 3, c 2. all_components stops a at 2 (earlier than
    # observed), b at 2 (earlier), c at 2 (consistent) -> 1/3; total: a at 1, b at 2, c at 2 -> 1/3.
    cons = R.stopping_rule_consistency(HAND).set_index("rule")
    assert cons.loc["all_components", "n_consistent"] == 1
    assert math.isclose(cons.loc["all_components", "estimate"], 1 / 3) and cons.loc["total", "ci_method"] == "Wilson"
    assert cons.loc["all_components", "n_stop_earlier"] == 2
    assert cons.loc["total", "n_consistent"] == 1
    assert cons.loc["total", "n_with_failed"] == 1


# ----------------------------------------------------------------------------- round-wise statistics


def test_item_rounds_totals():
    ir = R.item_rounds(HAND).set_index(["item", "round"])
    assert math.isclose(ir.loc[("a", 1), "total"], 0.968)
    # points: (45+21+25+35+20)/150 = 146/150
    assert math.isclose(ir.loc[("a", 1), "total_points"], 146 / 150)
    assert math.isnan(ir.loc[("c", 1), "total"]) and ir.loc[("c", 1), "n_failed"] == 1
    assert math.isclose(ir.loc[("c", 1), "total_available"], 1.0)


def test_round_means_available_vs_locf_by_hand():
    df = pd.DataFrame({"item": ["a", "a", "b"], "round": [1, 2, 1], "total": [0.5, 0.7, 0.9]})
    m = R.round_means(df).set_index(["imputation", "round"])
    assert m.loc[("available", 1), "n_items"] == 2 and math.isclose(m.loc[("available", 1), "estimate"], 0.7)
    assert m.loc[("available", 2), "n_items"] == 1 and math.isclose(m.loc[("available", 2), "estimate"], 0.7)
    assert m.loc[("available", 2), "n_items_total"] == 2 and m.loc[("available", 2), "n_failed"] == 0
    # LOCF round 2: a = 0.7, b carries 0.9 -> 0.8, n = 2, one carried
    assert m.loc[("locf", 2), "n_items"] == 2 and m.loc[("locf", 2), "n_carried"] == 1
    assert math.isclose(m.loc[("locf", 2), "estimate"], 0.8)
    assert np.isnan(m.loc[("available", 2), "ci_low"])  # n = 1: no CI, with a note
    assert m.loc[("available", 2), "note"]
    # binary outcome -> Wilson interval
    b = pd.DataFrame({"item": list("abcd"), "round": 1, "ok": [1.0, 1.0, 0.0, 1.0]})
    mb = R.round_means(b, "ok", imputations=("available",))
    assert mb.loc[0, "ci_method"] == "Wilson" and math.isclose(mb.loc[0, "estimate"], 0.75)
    # a value that reached the round but is NA is counted as failed, never dropped silently
    na = R.round_means(df.assign(total=[0.5, np.nan, 0.9]), imputations=("available",)).set_index("round")
    assert na.loc[2, "n_items"] == 0 and na.loc[2, "n_failed"] == 1 and na.loc[2, "note"] == "no values"
    with pytest.raises(ParameterError, match="imputation"):
        R.round_means(df, imputations=("mice",))


def test_planted_improvement_is_recovered():
    from medeval_kit.datasets.synthetic import synthetic_rounds

    df = synthetic_rounds(n_items=200, n_rounds=4, improvement=0.05, seed=1)
    ir = R.item_rounds(df)
    pt = R.paired_round_tests(ir, n_boot=400, seed=0)
    assert (pt["n_items"] == 200).all()
    assert np.allclose(pt["estimate"], 0.05, atol=0.01)
    assert ((pt["ci_low"] < 0.05 + 0.01) & (pt["ci_high"] > 0.05 - 0.01)).all()
    assert (pt["p_value"] < 1e-6).all()
    mm = R.mixed_model(ir).set_index("term")
    assert abs(mm.loc["round", "estimate"] - 0.05) < 0.006
    assert mm.loc["round", "ci_low"] < mm.loc["round", "estimate"] < mm.loc["round", "ci_high"]
    assert mm.loc["round", "n_items"] == 200 and mm.loc["round", "n_obs"] == 800
    # balanced design with a random intercept: the fixed slope equals the OLS slope
    assert math.isclose(mm.loc["round", "estimate"], np.polyfit(ir["round"], ir["total"], 1)[0], abs_tol=1e-6)
    m = R.round_means(ir)
    assert (m["n_items"] == 200).all()


def test_survivor_bias_on_planted_dropout():
    from medeval_kit.datasets.synthetic import synthetic_rounds

    df = synthetic_rounds(n_items=300, n_rounds=4, improvement=0.05, stop_threshold=0.65, seed=2)
    ir = R.item_rounds(df)
    m = R.round_means(ir).set_index(["imputation", "round"])
    # fewer items reach later rounds; LOCF keeps the denominator
    assert m.loc[("available", 4), "n_items"] < m.loc[("available", 1), "n_items"] == 300
    assert m.loc[("locf", 4), "n_items"] == 300 and m.loc[("locf", 4), "n_carried"] > 0
    # the better items left: the available-only mean at round 4 is below the LOCF mean
    assert m.loc[("available", 4), "estimate"] < m.loc[("locf", 4), "estimate"] - 0.01
    # and its rise over 3 rounds is far below the planted 3 * 0.05
    assert m.loc[("available", 4), "estimate"] - m.loc[("available", 1), "estimate"] < 0.10
    # the mixed model uses the observed history (drop-out is at random given it): slope ~ 0.05
    mm = R.mixed_model(ir).set_index("term")
    assert abs(mm.loc["round", "estimate"] - 0.05) < 0.01
    dist = R.stop_best_distribution(df)
    stop = dist[dist["kind"] == "stop_round"]
    assert stop["n_at_round"].sum() == 300 and stop.loc[stop["round"] == 1, "n_at_round"].iloc[0] > 0
    assert (stop["n_items"] == 300).all() and (stop["n_failed"] == 0).all()
    assert math.isclose(stop["estimate"].sum(), 1.0)


def test_paired_tests_match_scipy_and_handle_zero():
    df = pd.DataFrame({"item": list("abcdeabcde"), "round": [1] * 5 + [2] * 5,
                       "total": [0.5, 0.6, 0.7, 0.8, 0.9, 0.6, 0.65, 0.9, 0.75, 1.0]})
    pt = R.paired_round_tests(df, n_boot=200, seed=1).iloc[0]
    d = np.array([0.1, 0.05, 0.2, -0.05, 0.1])
    ref = wilcoxon(d)
    assert pt["n_items"] == 5 and math.isclose(pt["estimate"], d.mean())
    assert math.isclose(pt["p_value"], ref.pvalue) and math.isclose(pt["wilcoxon_stat"], ref.statistic)
    assert pt["ci_low"] <= d.mean() <= pt["ci_high"]
    same = df.assign(total=[0.5] * 10)
    z = R.paired_round_tests(same, n_boot=50).iloc[0]
    assert np.isnan(z["p_value"]) and "zero" in z["note"]


def test_mixed_model_degenerate_is_nan_with_note():
    one = pd.DataFrame({"item": ["a", "a"], "round": [1, 2], "total": [0.5, 0.6]})
    mm = R.mixed_model(one)
    assert mm["estimate"].isna().all() and mm["note"].str.contains("at least 2 items").all()
    # many items but only one observed twice: no within-item information
    few = pd.DataFrame({"item": list("abcdea"), "round": [1, 1, 1, 1, 1, 2], "total": [0.5, 0.6, 0.7, 0.8, 0.9, 0.7]})
    mm = R.mixed_model(few)
    assert mm["estimate"].isna().all() and mm["note"].str.contains("2 or more rounds").all()
    by = R.mixed_model(pd.concat([one.assign(src="x"), few.assign(src="y")]), by="src")
    assert list(by.columns[:2]) == ["src", "term"] and len(by) == 6


def test_round_correlations_aggregated_table6():
    # MCQG-SRefine Table 6 human round means: any strictly decreasing 4 points -> Spearman = Kendall = -1
    df = pd.DataFrame({"round": [1, 2, 3, 4], "question_length": [203.008, 111.09, 91.47, 84.11]})
    c = R.round_correlations(df).set_index("correlation")
    assert c.loc["spearman", "estimate"] == pytest.approx(-1.0)
    assert c.loc["kendall", "estimate"] == pytest.approx(-1.0)
    assert c.loc["pearson", "estimate"] == pytest.approx(-0.8846, abs=1e-4)
    assert (c["n_items"] == 4).all() and (c["n_failed"] == 0).all()
    tiny = R.round_correlations(df.head(2))
    assert tiny["estimate"].isna().all()


# ----------------------------------------------------------------------------- published numbers


def test_component_mean_arithmetic_reproduces_0_9031():
    # Table 4, round 1: mean(0.9683, 0.8394, 0.8051, 0.9378, 0.9650) = 4.5156 / 5 = 0.90312
    r1 = dict(zip(COMPS, (0.9683, 0.8394, 0.8051, 0.9378, 0.9650)))
    assert R.component_mean_total(r1) == pytest.approx(0.90312)
    # points-weighted (9, 5, 5, 7, 4 aspects, MCQG-SRefine Table 21): 27.3618 / 30 = 0.91206
    aspects = dict(zip(COMPS, (9, 5, 5, 7, 4)))
    assert R.component_mean_total(r1, weights=aspects) == pytest.approx(0.91206)
    # Tables 4-5 against their printed Totals: tests/test_repro.py


def test_introspection_curve_and_fit():
    abc = {"a": 0.5274, "b": 0.453, "c": 2.83}
    # f(t) = 0.5274 / (1 + exp(-0.453 t - 2.83))^3: 44.41 / 47.22 / 49.14 at t = 0, 1, 2 and 52.13 at t = 6
    got = R.introspection_curve([0, 1, 2, 6], **abc) * 100
    assert np.round(got, 2).tolist() == [44.41, 47.22, 49.14, 52.13]
    # the fit recovers the constants from points on the curve, starting elsewhere
    t = np.array([0, 1, 2, 4, 6])
    fit = R.fit_introspection_curve(t, R.introspection_curve(t, **abc), p0={"a": 0.5, "b": 0.5, "c": 3.0})
    assert fit.params["b"] == pytest.approx(0.453, rel=1e-4) and fit.params["c"] == pytest.approx(2.83, rel=1e-4)
    # three free parameters on three points interpolate
    exact = R.fit_introspection_curve([0, 1, 2], [0.4461, 0.4713, 0.4865], p0=abc)
    assert exact.dof == 0 and exact.rss < 1e-12 and "interpolation" in exact.note
    frame = exact.to_frame()
    assert set(frame["param"]) == {"a", "b", "c"} and frame.set_index("param").loc["b", "start"] == 0.453
    assert check_result(frame) == [] and (frame["n_items"] == 3).all()
    # fixed parameters keep their start value
    only_a = R.fit_introspection_curve([0, 1, 2], [0.4461, 0.4713, 0.4865], p0=abc, free=("a",))
    assert only_a.params["b"] == 0.453 and only_a.dof == 2
    with pytest.raises(ParameterError, match="p0 needs start values"):
        R.fit_introspection_curve([0, 1], [0.4, 0.5], p0={"a": 0.5})


# ----------------------------------------------------------------------------- plots and CLI


def test_plots_render(tmp_path):
    import matplotlib.pyplot as plt

    from medeval_kit.viz import (
        figure,
        plot_component_trajectories,
        plot_curve_fits,
        plot_round_means,
        plot_stop_best,
        save_figure,
    )

    ir = R.item_rounds(HAND)
    fig = plot_round_means(R.round_means(ir))
    paths = save_figure(fig, "means", tmp_path, data=ir, meta={"test": True}, formats=("png",))
    assert paths["png"].exists()
    traj = R.round_means(R.component_table(HAND), "value", by="component")
    # every plot draws on the axes it is given and returns that figure
    for plot, data in ((plot_component_trajectories, traj), (plot_stop_best, R.stop_best_distribution(HAND)),
                       (plot_round_means, R.round_means(ir))):
        own, ax = figure("single")
        assert plot(data, ax=ax) is own and ax.has_data()
    curves = pd.DataFrame({"t": [0, 1, 2], "fit": [0.4, 0.5, 0.55]})
    fig = plot_curve_fits(curves, points=pd.DataFrame({"t": [0, 2], "y": [0.41, 0.56]}),
                          claims=pd.DataFrame([{"t": 2, "y": 0.6, "label": "claimed"}]))
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["fit", "observed", "claimed"]
    plt.close("all")


def test_cli_rounds_summary(tmp_path, capsys):
    import argparse

    from medeval_kit.cli.rounds import register_cli

    path = tmp_path / "r.csv"
    HAND.to_csv(path, index=False)
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    register_cli(sub)
    args = parser.parse_args(["rounds", str(path), "--rule", "all_components"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "available" in out and "component scores not parsed: 1" in out
    args = parser.parse_args(["rounds", "medqg:iter_feedback"])
    assert args.func(args) == 0
    assert "items: 8" in capsys.readouterr().out


@pytest.mark.parametrize("rule", ["total", "all_components", "max_rounds"])
@pytest.mark.parametrize("total", ["mean", "points"])
def test_apply_stopping_rule_matches_should_stop_loop(rule, total):
    # random traces on MedQG scales, with some unparseable scores; the table-level rule must agree
    # with a plain loop over should_stop
    rng = np.random.default_rng(7)
    frames = []
    for i in range(60):
        n = int(rng.integers(1, 6))
        rounds = [{c: (None if rng.random() < 0.05 else int(rng.integers(int(0.7 * MAX[c]), MAX[c] + 1)))
                   for c in COMPS} for _ in range(n)]
        frames.append(trace(f"i{i}", rounds))
    df = pd.concat(frames, ignore_index=True)
    got = R.apply_stopping_rule(df, rule, 0.9, max_rounds=4, total=total)
    got_stop = got[got["stop"]].drop_duplicates("item").set_index("item")["round"]
    for it, g in df.groupby("item"):
        expected = int(g["round"].max())
        for r, gr in g.groupby("round"):
            sc = {c: (s, m) for c, s, m in zip(gr["component"], gr["score"], gr["max_score"])}
            if R.should_stop(sc, rule, 0.9, round=r, max_rounds=4, total=total):
                expected = int(r)
                break
        assert got_stop[it] == expected, (it, rule, total)


def test_read_rounds_roundtrip_and_errors(tmp_path):
    from medeval_kit.errors import SchemaError

    df = HAND.assign(item=HAND["item"].map({"a": "1", "b": "2", "c": "3"}))  # numeric-looking ids
    df.to_csv(tmp_path / "r.csv", index=False)
    back = R.read_rounds(tmp_path / "r.csv")
    assert back["item"].tolist() == df["item"].tolist() and back["stop"].dtype == bool
    df.to_parquet(tmp_path / "r.parquet", index=False)
    assert len(R.read_rounds(str(tmp_path / "r.parquet"))) == len(df)
    df.assign(stop="maybe").to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(SchemaError, match="stop.*not booleans"):
        R.read_rounds(tmp_path / "bad.csv")
    # your names, mapped once; errors name your column
    df.rename(columns={"item": "case", "round": "step"}).to_csv(tmp_path / "yours.csv", index=False)
    mine = R.read_rounds(tmp_path / "yours.csv", columns={"item": "case", "round": "step"})
    pd.testing.assert_frame_equal(mine[back.columns], back)
    with pytest.raises(SchemaError, match=r"\['iteration'\] not found"):
        R.read_rounds(tmp_path / "yours.csv", columns={"item": "case", "round": "iteration"})
    tables = R.roundwise_tables(back, n_boot=50)
    assert {"round_means", "stop_best", "paired_tests", "mixed_model", "stopping_rule_consistency"} <= set(
        tables.names())


def test_old_reader_names_still_work_and_warn(tmp_path):
    """Issue 24: one reader per table (read_rounds); user_rounds and load_rounds_file stay for one release."""
    from medeval_kit.errors import DataFileError, SchemaError

    df = HAND.assign(item=HAND["item"].map({"a": "1", "b": "2", "c": "3"}))
    df.rename(columns={"item": "case"}).to_csv(tmp_path / "yours.csv", index=False)
    with pytest.warns(DeprecationWarning, match="deprecated") as caught:
        old = R.user_rounds(tmp_path / "yours.csv", item="case")
    assert any("rounds.user_rounds is deprecated" in str(w.message) and "read_rounds" in str(w.message)
               for w in caught)
    pd.testing.assert_frame_equal(old, R.read_rounds(tmp_path / "yours.csv", columns={"item": "case"}))
    assert "user_rounds" not in R.__all__ and "load_rounds_file" not in R.__all__
    df.to_csv(tmp_path / "r.csv", index=False)
    with pytest.warns(DeprecationWarning, match="load_rounds_file"):
        assert R.load_rounds_file("") is None
        assert R.load_rounds_file(tmp_path / "r.csv")["item"].tolist() == df["item"].tolist()
        df.assign(stop="maybe").to_csv(tmp_path / "bad.csv", index=False)
        with pytest.raises(DataFileError, match="stop"):
            R.load_rounds_file(tmp_path / "bad.csv")
        df.drop(columns=["component"]).to_csv(tmp_path / "nocomp.csv", index=False)
        with pytest.raises(SchemaError, match="component"):
            R.load_rounds_file(tmp_path / "nocomp.csv")
    with pytest.raises(AttributeError):
        R.no_such_name  # noqa: B018


def test_roundwise_tables_is_one_result_object():
    """Issue 24: one result object, not a dict; the old dict access works for one release, with a warning."""
    from medeval_kit.results import RESULT_COLUMNS

    res = R.roundwise_tables(HAND, n_boot=50)
    frame = res.to_frame()
    assert set(RESULT_COLUMNS) <= set(frame.columns) and frame.columns[0] == "table"
    assert {"round_means", "paired_tests", "mixed_model"} <= set(frame["table"])
    pd.testing.assert_frame_equal(res.round_means, res.tables["round_means"])
    assert "round_means" in res.summary() and "<table" in res._repr_html_()
    with pytest.warns(DeprecationWarning, match="dict access"):
        pd.testing.assert_frame_equal(res["round_means"], res.round_means)
    with pytest.warns(DeprecationWarning, match="dict access"):
        assert dict(res.items()).keys() == res.tables.keys()


def test_round_correlations_unit_and_the_old_level_keyword():
    per = R.item_rounds(HAND).assign(question_length=lambda d: 100 - 3 * d["round"])
    agg = R.round_correlations(per, "round", "question_length", unit="aggregated")
    with pytest.warns(DeprecationWarning, match="unit="):
        old = R.round_correlations(per, "round", "question_length", level="aggregated")
    pd.testing.assert_frame_equal(old, agg)
    assert set(agg["level"]) == {"aggregated"}


# ----------------------------------------------------------------------------- registries, contract, best flags


def test_stop_rules_registry_is_the_one_definition():
    from medeval_kit.rounds.stopping import _RULES

    assert R.STOP_RULES == tuple(_RULES) == ("total", "all_components", "max_rounds")
    # every registered rule works on a score mapping and on a table; an unknown one is refused by both
    for rule in R.STOP_RULES:
        assert isinstance(R.should_stop({"a": "9/10"}, rule), bool)
        assert R.apply_stopping_rule(HAND, rule)["stop_rule"].eq(rule).all()
    with pytest.raises(ParameterError, match="stopping rule 'paper'"):
        R.apply_stopping_rule(HAND, "paper")


def test_statistic_tables_follow_the_result_contract():
    from medeval_kit.datasets.synthetic import synthetic_rounds

    df = synthetic_rounds(n_items=30, n_rounds=3, improvement=0.05, stop_threshold=0.7, seed=3)
    ir = R.item_rounds(df)
    tables = {
        "round_means": R.round_means(ir),
        "stop_best": R.stop_best_distribution(df),
        "paired": R.paired_round_tests(ir, n_boot=50),
        "mixed": R.mixed_model(ir),
        "correlations": R.round_correlations(ir, "round", "total"),
        "consistency": R.stopping_rule_consistency(df),
    }
    for name, t in tables.items():
        assert check_result(t) == [], name
        assert "method" not in t.columns and not t.attrs, name
        assert list(t.columns[t.columns.get_loc("estimate"):][:7]) == ["estimate", "ci_low", "ci_high", "ci_method",
                                                                      "n_items", "n_failed", "note"], name


def test_paired_bootstrap_keeps_the_hand_rolled_draws():
    # the CI comes from stats.bootstrap_means with the same draws as rng.integers(0, n, size=(n_boot, n))
    df = pd.DataFrame({"item": list("abcdeabcde"), "round": [1] * 5 + [2] * 5,
                       "total": [0.5, 0.6, 0.7, 0.8, 0.9, 0.6, 0.65, 0.9, 0.75, 1.0]})
    d = df["total"].to_numpy()[5:] - df["total"].to_numpy()[:5]  # round 2 - round 1 per item, in item order
    boot = d[np.random.default_rng(1).integers(0, 5, size=(200, 5))].mean(axis=1)
    pt = R.paired_round_tests(df, n_boot=200, seed=1).iloc[0]
    assert (pt["ci_low"], pt["ci_high"]) == (np.quantile(boot, (1 - 0.95) / 2), np.quantile(boot, 1 - (1 - 0.95) / 2))
    assert pt["ci_method"] == "percentile bootstrap (200 resamples)" and pt["n_failed"] == 0
    # an item that reached both rounds with an unparsed value is counted in n_failed
    na = R.paired_round_tests(df.assign(total=df["total"].where(df.index != 9)), n_boot=20).iloc[0]
    assert na["n_items"] == 4 and na["n_failed"] == 1


def test_fill_best_rounds_keeps_flags_and_selects_the_rest():
    flagged = HAND.assign(best=(HAND["item"] == "a") & (HAND["round"] == 1))  # a's file names round 1
    out = R.fill_best_rounds(flagged)
    best = out[out["best"]].drop_duplicates("item").set_index("item")
    # a keeps its flag (not the max-total round 3); b ties rounds 2 and 3 -> earliest; c's only scored round is 2
    assert best["round"].to_dict() == {"a": 1, "b": 2, "c": 2}
    assert best["best_method"].to_dict() == {"a": "flag", "b": "max_total_earliest", "c": "max_total_earliest"}
    latest = R.fill_best_rounds(flagged, "latest")
    assert latest.loc[latest["best"] & (latest["item"] == "b"), "round"].unique().tolist() == [3]
    assert set(latest.loc[latest["item"] == "b", "best_method"]) == {"max_total_latest"}
    none = R.fill_best_rounds(trace("z", [{"question": None}]))
    assert not none["best"].any() and set(none["best_method"]) == {"none"}
    summ = R.item_summary(flagged).set_index("item")
    assert summ["best_round"].to_dict() == {"a": 1, "b": 2, "c": 2}
    assert summ["best_from"].to_dict() == {"a": "flag", "b": "selected", "c": "selected"}


def test_rounds_holds_no_paper_constants_plots_or_cli():
    # paper numbers/text live in repro, plots in viz.rounds, the command in cli.rounds
    from medeval_kit.repro.papers import mcqg_srefine_2025

    moved = ("ASPECTS_PER_COMPONENT", "STOPPING_RULE_NOTE", "COMPONENTS", "plot_round_means", "plot_stop_best",
             "plot_component_trajectories", "register_cli")
    assert not [n for n in moved if hasattr(R, n)]
    assert "check_stop" in mcqg_srefine_2025.STOPPING_RULE_NOTE
    assert mcqg_srefine_2025.paper().input("aspects_per_component") == dict(zip(COMPS, (9, 5, 5, 7, 4)))
