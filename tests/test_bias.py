"""Position, length and self-preference bias: planted effects are recovered, failures are counted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medeval_kit import bias, viz
from medeval_kit.datasets.synthetic import synthetic_pairwise
from medeval_kit.errors import SchemaError


def _metric(res, metric, judge=None, criterion=None):
    d = res[res["metric"] == metric]
    if judge is not None:
        d = d[d["judge"] == judge]
    if criterion is not None:
        d = d[d["criterion"] == criterion]
    assert len(d) == 1, d
    return d.iloc[0]


# ---------------------------------------------------------------- position bias: planted effects
@pytest.mark.parametrize("n_boot", [0, 500])
def test_planted_first_slot_preference_recovered(n_boot):
    # synthetic_pairwise: among non-tie verdicts P(first slot) = 0.5 + 0.2 = 0.7 exactly.
    df = synthetic_pairwise(n_items=400, first_slot_preference=0.2, seed=11)
    res = bias.position_bias(df, n_boot=n_boot, seed=1)
    r = _metric(res, "first_slot_rate")
    assert r["ci_low"] <= 0.7 <= r["ci_high"]
    assert r["p_value"] < 1e-6
    assert r["n_failed"] == 0 and r["n_items"] == 400
    # the sign test among same-slot pairs also points at the first slot
    assert _metric(res, "same_slot_first")["estimate"] > _metric(res, "same_slot_second")["estimate"]


def test_no_planted_preference_ci_covers_half():
    df = synthetic_pairwise(n_items=300, first_slot_preference=0.0, tie_rate=0.0, seed=5)
    res = bias.position_bias(df)
    r = _metric(res, "first_slot_rate")
    assert r["ci_low"] <= 0.5 <= r["ci_high"]
    # with no position effect and no ties every pair is consistent
    assert _metric(res, "consistency")["estimate"] == 1.0
    assert _metric(res, "flip_rate")["estimate"] == 0.0


def test_consistency_hand_worked():
    # 4 items, slot verdicts (AB, BA):
    #   i1 first, second  -> A, A  consistent
    #   i2 first, first   -> A, B  flip (first slot both times)
    #   i3 tie, tie       -> consistent
    #   i4 second, second -> B, A  flip (second slot both times)
    # consistency 2/4, flip 2/4, same_slot_first 1/4, same_slot_second 1/4
    # first-slot calls: i1 1, i2 2, i4 0 of non-tie 6 -> 3/6
    slots = {"i1": ("first", "second"), "i2": ("first", "first"), "i3": ("tie", "tie"), "i4": ("second", "second")}
    df = pd.DataFrame([{"item": i, "order": o, "slot_verdict": s[k]}
                       for i, s in slots.items() for k, o in enumerate(("AB", "BA"))])
    res = bias.position_bias(df)
    assert _metric(res, "consistency")["estimate"] == 0.5
    assert _metric(res, "flip_rate")["estimate"] == 0.5
    assert _metric(res, "same_slot_first")["estimate"] == 0.25
    assert _metric(res, "same_slot_second")["estimate"] == 0.25
    assert _metric(res, "first_slot_rate")["estimate"] == 0.5 and _metric(res, "first_slot_rate")["n"] == 6
    assert _metric(res, "tie_rate")["estimate"] == 0.25
    rep = _metric(res, "repeat_inconsistency")
    assert np.isnan(rep["estimate"]) and rep["note"]  # one repeat: undefined, with a reason


def test_model_terms_verdict_is_converted():
    # without a slot_verdict column the model-terms verdict is mapped with to_slot
    df = synthetic_pairwise(n_items=100, seed=2)
    a = bias.position_bias(df)
    b = bias.position_bias(df.drop(columns=["slot_verdict"]))
    pd.testing.assert_frame_equal(a, b)


def test_repeat_inconsistency():
    # i1 AB repeats first, first, second (inconsistent); BA second x3 (consistent) -> 1/2 groups
    rows = [("i1", "AB", r, v) for r, v in enumerate(["first", "first", "second"])]
    rows += [("i1", "BA", r, "second") for r in range(3)]
    df = pd.DataFrame(rows, columns=["item", "order", "repeat", "slot_verdict"])
    res = bias.position_bias(df)
    assert _metric(res, "repeat_inconsistency")["estimate"] == 0.5
    assert _metric(res, "repeat_inconsistency_AB")["estimate"] == 1.0
    assert _metric(res, "repeat_inconsistency_BA")["estimate"] == 0.0
    # majorities: AB first, BA second -> consistent
    assert _metric(res, "consistency")["estimate"] == 1.0


def test_parse_failures_counted_never_ties():
    df = synthetic_pairwise(n_items=200, seed=4)
    base = bias.position_bias(df)
    bad = df.copy()
    idx = bad.index[(bad["order"] == "AB")][:10]
    bad.loc[idx, "parse_status"] = "failed"
    bad.loc[idx, "slot_verdict"] = None
    bad.loc[idx, "verdict"] = None
    res = bias.position_bias(bad)
    tie_before, tie_after = _metric(base, "tie_rate"), _metric(res, "tie_rate")
    assert _metric(res, "first_slot_rate")["n_failed"] == 10
    # the failures are out of the denominators, not added to the ties
    assert tie_after["n"] == tie_before["n"] - 10
    n_ties_before = round(tie_before["estimate"] * tie_before["n"])
    n_ties_after = round(tie_after["estimate"] * tie_after["n"])
    assert n_ties_after <= n_ties_before
    cons = _metric(res, "consistency")
    assert cons["n"] == 190 and cons["n_dropped"] == 10
    # parse_status alone (verdict still present) also marks the call failed
    only_status = df.copy()
    only_status.loc[idx, "parse_status"] = "failed"
    assert _metric(bias.position_bias(only_status), "consistency")["n"] == 190


def test_multiple_judges_and_criteria():
    df = synthetic_pairwise(n_items=60, judges=("a", "b"), criteria=("x", "y"), repeats=2, seed=0)
    res = bias.position_bias(df)
    assert set(map(tuple, res[["judge", "criterion"]].drop_duplicates().to_numpy())) == {
        ("a", "x"), ("a", "y"), ("b", "x"), ("b", "y")}
    wide = bias.position_bias_wide(res)
    assert len(wide) == 4 and {"consistency_ci_low", "first_slot_rate_ci_high"} <= set(wide.columns)


# ---------------------------------------------------------------- position bias: bad input
def test_mixed_protocols_error_names_column_rows_and_file():
    df = synthetic_pairwise(n_items=5, seed=0)
    df.loc[[3, 7], "protocol"] = "rubric"
    with pytest.raises(SchemaError) as e:
        bias.position_bias(df, source="judg.csv")
    assert e.value.column == "protocol" and e.value.rows == [3, 7]
    assert "judg.csv" in str(e.value) and "mixes protocols" in str(e.value)


def test_order_without_swap_error():
    df = synthetic_pairwise(n_items=5, seed=0)
    df = df.drop(index=[6]).reset_index(drop=True)   # drop item i1's BA row: its AB row (1) is alone
    with pytest.raises(SchemaError) as e:
        bias.position_bias(df, source="x.parquet")
    assert e.value.column == "order" and e.value.rows == [1]
    assert "without its swap" in str(e.value) and "x.parquet" in str(e.value)


def test_one_order_only_and_unknown_labels():
    df = synthetic_pairwise(n_items=5, seed=0)
    with pytest.raises(SchemaError, match="only one order"):
        bias.position_bias(df[df["order"] == "AB"])
    bad = df.copy()
    bad.loc[2, "slot_verdict"] = "A"
    with pytest.raises(SchemaError) as e:
        bias.position_bias(bad)
    assert e.value.column == "slot_verdict" and e.value.rows == [2]


def test_duplicate_calls_error():
    df = synthetic_pairwise(n_items=3, seed=0)
    df = pd.concat([df, df.iloc[[0]]], ignore_index=True)
    with pytest.raises(SchemaError, match="duplicate"):
        bias.position_bias(df)


# ---------------------------------------------------------------- published data
def test_table19_flip_rates_and_agreement():
    from medeval_kit.datasets import load_medqg_table19

    ann = load_medqg_table19().annotations
    flips = bias.flip_rate_from_labels(ann)
    assert "expert_x" not in set(flips["judge"])
    g4 = _metric(flips, "consistency", judge="gpt-4")
    # Table 19 as transcribed: 14 of GPT-4's 40 labels are -1 -> 26/40 = 0.65 (= Table 9's 65%)
    assert g4["estimate"] == pytest.approx(26 / 40) and g4["n"] == 40
    assert _metric(flips, "consistency", judge="gpt-4o")["estimate"] == pytest.approx(23 / 40)
    agr = bias.agreement_on_consistent(ann, "expert_x")
    # seed-000 note: GPT-4 agrees with Expert X on 12 of its 26 valid items
    a4 = _metric(agr, "agreement_on_consistent", judge="gpt-4")
    assert (a4["count"], a4["n"]) == (12, 26)
    # Table 9 against these estimates: tests/test_repro.py


def test_letter_balance_fixed_letters_against_scipy():
    from scipy import stats as sps

    items = pd.DataFrame({"generator": ["g"] * 9 + ["h"] * 4,
                          "answer": list("AAAAAABC") + [None] + list("abcd")})
    out = bias.letter_balance(items, letters="ABCD", by="generator")
    assert not [c for c in ("estimate", "ci_low", "ci_high", "ci_method", "n_items", "n_failed", "note")
                if c not in out.columns]
    g = out[out["generator"] == "g"].set_index("letter")
    # g: 6 A, 1 B, 1 C, 0 D of 8 valid items (the NA answer is failed); null 1/4 each
    assert g["count"].tolist() == [6, 1, 1, 0] and (g["n_items"] == 8).all() and (g["n_failed"] == 1).all()
    assert g.loc["A", "estimate"] == 0.75 and (g["expected"] == 0.25).all()
    chi = sps.chisquare([6, 1, 1, 0])
    assert g["chi2"].iloc[0] == pytest.approx(chi.statistic) and g["p_uniform"].iloc[0] == pytest.approx(chi.pvalue)
    assert g.loc["A", "p_letter"] == pytest.approx(sps.binomtest(6, 8, 0.25).pvalue)
    ci = sps.binomtest(6, 8).proportion_ci(method="exact")
    assert (g.loc["A", "ci_low"], g.loc["A", "ci_high"]) == pytest.approx((ci.low, ci.high))
    # h: lower-case answers are normalised; one of each letter fits the null exactly
    assert out[out["generator"] == "h"]["p_uniform"].iloc[0] == pytest.approx(1.0)


def test_letter_balance_options_offered_against_scipy():
    from scipy import stats as sps

    # two 2-option items (A/B) and two 4-option items (A-D); keys A, A, A, D; "E" on a 4-option item fails.
    # expected shares over the 4 valid items: A = (1/2 + 1/2 + 1/4 + 1/4) / 4 = 3/8, B = 3/8, C = D = 1/8
    items = pd.DataFrame({"answer": ["A", "A", "A", "D", "E"],
                          "options": [["x", "y"], {"A": 1, "B": 2}, 4, list("wxyz"), 4]})
    out = bias.letter_balance(items, options="options").set_index("letter")
    assert out["expected"].to_dict() == pytest.approx({"A": 3 / 8, "B": 3 / 8, "C": 1 / 8, "D": 1 / 8})
    assert (out["n_items"] == 4).all() and (out["n_failed"] == 1).all()
    chi = sps.chisquare([3, 0, 0, 1], f_exp=[1.5, 1.5, 0.5, 0.5])
    assert out["chi2"].iloc[0] == pytest.approx(chi.statistic) and out["p_uniform"].iloc[0] == pytest.approx(chi.pvalue)
    # options differ between items: no single-letter binomial test, and the note says why
    assert out["p_letter"].isna().all() and out["note"].str.contains("options differ").all()
    # neither letters nor options: every item offers A up to the highest letter keyed anywhere (E)
    inferred = bias.letter_balance(items.drop(columns="options"))
    assert inferred["letter"].tolist() == list("ABCDE") and (inferred["expected"] == 0.2).all()
    assert (inferred["n_items"] == 5).all() and (inferred["n_failed"] == 0).all()


def test_slot_preference():
    calls = pd.DataFrame({"chosen_slot": [1] * 60 + [2] * 20 + [3] * 20 + [None] * 5,
                          "parse_status": ["ok"] * 100 + ["failed"] * 5})
    sp = bias.slot_preference(calls, n_slots=3)
    s1 = sp[(sp["metric"] == "slot_rate") & (sp["slot"] == 1)].iloc[0]
    assert s1["estimate"] == 0.6 and s1["n_failed"] == 5 and s1["p_value"] < 1e-6


# ---------------------------------------------------------------- length bias
def _length_data(n=600, beta_len=0.8, beta_pos=0.0, a_quality=0.0, a_longer=0.0, seed=0):
    """Both orders; logit P(A chosen) = a_quality + beta_pos*pos + beta_len*(len_a-len_b)/100."""
    rng = np.random.default_rng(seed)
    la = rng.normal(200 + a_longer, 60, n).clip(10).round()
    lb = rng.normal(200, 60, n).clip(10).round()
    rows = []
    for o, pos in (("AB", 0.5), ("BA", -0.5)):
        eta = a_quality + beta_pos * pos + beta_len * (la - lb) / 100
        pick_a = rng.random(n) < 1 / (1 + np.exp(-eta))
        for i in range(n):
            rows.append({"item": f"i{i}", "judge": "j", "criterion": "overall", "order": o,
                         "verdict": "A" if pick_a[i] else "B", "parse_status": "ok",
                         "len_a": la[i], "len_b": lb[i]})
    return pd.DataFrame(rows)


def test_length_bias_recovers_planted_coefficients():
    df = _length_data(beta_len=0.8, beta_pos=1.0, seed=1)
    res = bias.length_bias(df).set_index("metric")
    assert res.loc["length", "ci_low"] <= 0.8 <= res.loc["length", "ci_high"]
    assert res.loc["position_first", "ci_low"] <= 1.0 <= res.loc["position_first", "ci_high"]
    assert "cluster-robust" in res.loc["length", "ci_method"]
    # cross-check the point estimates against a plain statsmodels Logit fit
    import statsmodels.api as sm

    X = pd.DataFrame({"const": 1.0, "pos": np.where(df["order"] == "AB", 0.5, -0.5),
                      "len": (df["len_a"] - df["len_b"]) / 100})
    fit = sm.Logit((df["verdict"] == "A").astype(float), X).fit(disp=0)
    assert res.loc["length", "estimate"] == pytest.approx(fit.params["len"], rel=1e-6)


def test_length_bias_one_order_and_reversed():
    df = _length_data(beta_len=0.8, seed=2)
    one = df[df["order"] == "AB"]
    res = bias.length_bias(one)
    assert "position_first" not in set(res["metric"]) and "position term omitted" in res["note"].iloc[0]
    # on a reversed criterion choosing A means A is worse: the length coefficient changes sign
    rev = bias.length_bias(df.assign(criterion="harm"), reversed_criteria={"harm"}).set_index("metric")
    assert rev.loc["length", "estimate"] < 0
    lp = bias.longer_preferred_rate(df)
    assert lp["estimate"].iloc[0] > 0.6 and lp["p_value"].iloc[0] < 1e-6


def test_length_controlled_win_rate():
    # A is 80 tokens longer on average but equal in quality; the judge likes length.
    df = _length_data(n=800, beta_len=1.0, a_quality=0.0, a_longer=80, seed=3)
    out = bias.length_controlled_win_rate(df).set_index("metric")
    assert out.loc["win_rate_raw", "ci_low"] > 0.55          # inflated by length
    assert out.loc["win_rate_lc", "ci_low"] <= 0.5 <= out.loc["win_rate_lc", "ci_high"]


# ---------------------------------------------------------------- self-preference
def _self_pref_data(n_items=300, delta_self=0.2, delta_family=0.1, seed=0):
    """Binary scores. Raters: 'gemma-3-4b', 'gemma-3-27b' (family gemma), peers of other families.

    Truth per response ~ Bernoulli(0.5); a peer reports it with 10% noise. gemma-3-4b flips a
    true 0 to 1 for its own responses with probability q_self (and for its sibling's with q_fam), so
    E[S(A) - peer mean] = 0.5 * q (peer noise is symmetric around the truth mean 0.5).
    """
    rng = np.random.default_rng(seed)
    models = ["gemma-3-4b", "gemma-3-27b", "qwen3-4b"]
    raters = ["gemma-3-4b", "gemma-3-27b", "qwen3-4b", "gpt-5-nano", "gemini-3-flash"]
    rows = []
    for i in range(n_items):
        for m in models:
            truth = rng.random() < 0.5
            for r in raters:
                s = truth if rng.random() > 0.1 else not truth
                if r == "gemma-3-4b" and not s:
                    q = 2 * delta_self if m == r else (2 * delta_family if m == "gemma-3-27b" else 0)
                    s = rng.random() < q
                rows.append({"item": f"q{i}", "model": m, "rater": r, "score": float(s)})
    return pd.DataFrame(rows)


def test_self_preference_planted():
    df = _self_pref_data(delta_self=0.2, delta_family=0.1, seed=1)
    res = bias.self_preference(df, n_boot=500, seed=0)
    s = res[(res["judge"] == "gemma-3-4b") & (res["metric"] == "delta_self")].iloc[0]
    # expected delta: P(S_A=1) - P(peer=1) where a flipped 0 turns into 1 with prob 2*0.2 = 0.4:
    # P(S_A = 1) = 0.5 + 0.5*0.4 = 0.7, peers 0.5  -> 0.2
    assert s["ci_low"] <= 0.2 <= s["ci_high"] and s["ci_low"] > 0
    f = res[(res["judge"] == "gemma-3-4b") & (res["metric"] == "delta_family")].iloc[0]
    assert f["target"] == "gemma-3-27b" and f["ci_low"] <= 0.1 <= f["ci_high"]
    # peers exclude the gemma lineage
    assert "gemma-3-27b" not in s["peers"].split(",") and s["n_peers"] == 3
    q = res[(res["judge"] == "qwen3-4b") & (res["metric"] == "delta_self")].iloc[0]
    assert q["ci_low"] <= 0 <= q["ci_high"]
    # vendor level: gemini is also google -> fewer peers for gemma
    v = bias.self_preference(df, lineage_level="vendor", raters=["gemma-3-4b"], n_boot=50)
    assert v[v["metric"] == "delta_self"].iloc[0]["n_peers"] == 2


def test_self_preference_missing_scores_dropped():
    df = _self_pref_data(n_items=40, seed=2)
    df.loc[(df["rater"] == "gemma-3-4b") & (df["item"] == "q0"), "score"] = np.nan  # abstentions
    res = bias.self_preference(df, raters=["gemma-3-4b"], n_boot=50)
    s = res[res["metric"] == "delta_self"].iloc[0]
    assert s["n_items"] == 39 and s["n_failed"] == 1


def test_self_preference_ci_is_the_item_bootstrap():
    from medeval_kit.stats import bootstrap_means, percentile_interval

    # one peer of another lineage: the per-item difference is S(gemma-3-4b) - S(qwen3-4b) on gemma-3-4b's answers
    df = _self_pref_data(n_items=60, seed=3)
    df = df[df["rater"].isin(["gemma-3-4b", "qwen3-4b"])]
    res = bias.self_preference(df, raters=["gemma-3-4b"], n_boot=400, seed=5)
    s = res[res["metric"] == "delta_self"].iloc[0]
    w = df[df["model"] == "gemma-3-4b"].pivot(index="item", columns="rater", values="score")
    diff = (w["gemma-3-4b"] - w["qwen3-4b"]).sort_index().to_numpy()
    reps = bootstrap_means(diff, 400, np.random.default_rng(5))
    assert s["estimate"] == pytest.approx(diff.mean())
    assert (s["ci_low"], s["ci_high"]) == pytest.approx(percentile_interval(reps))
    assert s["ci_method"] == "percentile bootstrap over items (B=400)"


def test_simulated_self_preference_recovers_the_planted_effects():
    from medeval_kit.repro.papers.medqade_2026 import FIG8_SIMULATION

    sim = bias.simulate_self_preference(n_items=1500, seed=0, **FIG8_SIMULATION)
    res = bias.self_preference(sim, n_boot=300, seed=0).set_index(["judge", "target"])
    for (rater, model), delta in FIG8_SIMULATION["effects"].items():
        r = res.loc[(rater, model)]
        assert r["ci_low"] <= delta <= r["ci_high"], (rater, model)
    assert abs(res.loc[("gpt-5-nano", "gpt-5-nano"), "estimate"]) < 0.03  # nothing planted


def test_position_bias_ci_methods():
    df = synthetic_pairwise(n_items=80, seed=6)
    exact = bias.position_bias(df, n_boot=0)
    boot = bias.position_bias(df)  # default: the item bootstrap, B = 1000
    assert list(exact.columns) == bias.RESULT_COLUMNS
    assert (exact["ci_method"].str.startswith("exact binomial")).all()
    assert _metric(boot, "consistency")["ci_method"] == "percentile bootstrap over items (B=1000)"
    assert _metric(exact, "first_slot_rate")["test"].startswith("exact binomial test vs 0.5")
    pd.testing.assert_series_equal(exact["estimate"], boot["estimate"])


def test_lineage_file_loads():
    lin = bias.load_lineage()
    assert {"model", "family", "vendor"} <= set(lin.columns)
    fam = dict(zip(lin["model"], lin["family"]))
    assert fam["gemma-3-4b"] == fam["gemma-3-27b"] != fam["gemini-2.5-flash"]


# ---------------------------------------------------------------- plots
def test_plots_save(tmp_path):
    from medeval_kit.viz import save_figure

    df = synthetic_pairwise(n_items=50, criteria=("a", "b"), seed=0)
    res = bias.position_bias(df, n_boot=0)
    for name, fig in (("flips", viz.plot_flip_rates(res)), ("first", viz.plot_first_slot(res))):
        paths = save_figure(fig, name, tmp_path, data=res, formats=("png",))
        assert paths["png"].exists()
    from medeval_kit.datasets import load_medqg_table19

    agr = bias.agreement_on_consistent(load_medqg_table19().annotations, "expert_x")
    fig = viz.plot_consistency_vs_agreement(agr)
    assert save_figure(fig, "cva", tmp_path, formats=("png",))["png"].exists()
    letters = bias.letter_balance(pd.DataFrame({"generator": ["g"] * 8, "answer": list("AABBCCDA")}), by="generator")
    assert save_figure(viz.plot_letter_balance(letters), "lb", tmp_path, formats=("png",))["png"].exists()
    sp = bias.self_preference(_self_pref_data(n_items=30), n_boot=20)
    assert save_figure(viz.plot_self_preference(sp), "sp", tmp_path, formats=("png",))["png"].exists()


def test_plots_draw_on_a_given_axes():
    import matplotlib.pyplot as plt

    res = bias.position_bias(synthetic_pairwise(n_items=30, seed=0), n_boot=0)
    letters = bias.letter_balance(pd.DataFrame({"generator": ["g"] * 4, "answer": list("ABCD")}), by="generator")
    sp = bias.self_preference(_self_pref_data(n_items=20), n_boot=10)
    for plot in (lambda ax: viz.plot_flip_rates(res, ax=ax), lambda ax: viz.plot_first_slot(res, ax=ax),
                 lambda ax: viz.plot_rate_by_judge(res, "flip_rate", ax=ax),
                 lambda ax: viz.plot_letter_balance(letters, ax=ax), lambda ax: viz.plot_self_preference(sp, ax=ax)):
        fig, ax = plt.subplots()
        assert plot(ax) is fig and ax.has_data()
        plt.close(fig)


def test_length_controlled_win_rate_coverage():
    # 40 simulations with a correctly specified (linear) length effect: the 95% CI of the
    # length-controlled win rate covers the true 0.5 in about 95% of them (0.95 seen when written).
    covered = 0
    for seed in range(40):
        sim = bias.simulate_length_bias(n_items=300, length_effect=1.0, position_effect=0.8, seed=seed)
        lc = bias.length_controlled_win_rate(sim).set_index("metric").loc["win_rate_lc"]
        covered += lc["ci_low"] <= 0.5 <= lc["ci_high"]
    assert covered >= 34  # P(Binomial(40, 0.95) < 34) < 0.01


def test_slot_score_effect_planted():
    # 3 responses per question, shuffled over 3 positions; slot 1 gets +0.5 on a 1-5 scale.
    rng = np.random.default_rng(0)
    rows = []
    for q in range(300):
        quality = rng.normal(3, 1, 3)
        for rep in range(2):
            perm = rng.permutation(3)
            for pos, r in enumerate(perm, start=1):
                s = quality[r] + (0.5 if pos == 1 else 0.0) + rng.normal(0, 0.3)
                rows.append({"question_item": f"q{q}", "item": f"q{q}:{r}", "judge": "j", "repeat": rep,
                             "position": pos, "score": s, "parse_status": "ok"})
    df = pd.DataFrame(rows)
    df.loc[:4, "parse_status"] = "failed"
    for center in ("overall", "response"):
        res = bias.slot_score_effect(df, center=center, n_boot=300).set_index("position")
        # expected: slot 1 = 0.5 - 0.5/3 = +0.333, slots 2 and 3 = -0.167
        assert res.loc[1, "ci_low"] <= 0.5 - 0.5 / 3 <= res.loc[1, "ci_high"]
        assert res.loc[2, "ci_low"] <= -0.5 / 3 <= res.loc[2, "ci_high"]
        assert res.loc[1, "n_failed"] == 5 and res.loc[1, "p_value"] < 0.01


def test_more_than_two_orders_error_lists_odd_rows():
    df = synthetic_pairwise(n_items=5, seed=0)
    df.loc[4, "order"] = "CAB"
    with pytest.raises(SchemaError) as e:
        bias.position_bias(df.drop(columns=["slot_verdict"]).assign(slot_verdict=df["slot_verdict"]))
    assert e.value.column == "order" and e.value.rows == [4]


# --------------------------------------------------------------------------- issue 24: one columns= mapping
def test_columns_mapping_and_the_old_keywords():
    """Your column names are mapped once with columns=; the old per-column keywords work for one release, with a
    warning, and give the same table."""
    sim = bias.simulate_length_bias(120, seed=3)
    yours = sim.rename(columns={"len_a": "words_a", "len_b": "words_b", "item": "case"})
    cols = {"len_a": "words_a", "len_b": "words_b", "item": "case"}
    want = bias.length_controlled_win_rate(sim)
    pd.testing.assert_frame_equal(bias.length_controlled_win_rate(yours, columns=cols), want)
    with pytest.warns(DeprecationWarning, match="columns="):
        old = bias.length_controlled_win_rate(yours, len_a="words_a", len_b="words_b", item="case")
    pd.testing.assert_frame_equal(old, want)
    with pytest.warns(DeprecationWarning, match="judge_name"):
        assert set(bias.simulate_length_bias(10, judge="x")["judge"]) == {"x"}
    calls = pd.DataFrame({"judge": "j", "pick": [1, 2, 3, 1, 2, 3]})
    want = bias.slot_preference(calls.rename(columns={"pick": "chosen_slot"}), n_slots=3)
    pd.testing.assert_frame_equal(bias.slot_preference(calls, n_slots=3, columns={"chosen_slot": "pick"}), want)
    with pytest.warns(DeprecationWarning, match="chosen"):
        pd.testing.assert_frame_equal(bias.slot_preference(calls, n_slots=3, chosen="pick"), want)
    ann = pd.DataFrame({"item": ["1", "2"], "rater": "r", "criterion": "overall", "label": ["A", "B"]})
    with pytest.warns(DeprecationWarning, match="shown_order"):
        assert set(bias.pairwise_from_annotations(ann, order="BA")["order"]) == {"BA"}
    assert set(bias.pairwise_from_annotations(ann, shown_order="BA")["order"]) == {"BA"}
    lb = bias.letter_balance(pd.DataFrame({"key": list("ABCA")}), letters="ABCD", columns={"answer": "key"})
    with pytest.warns(DeprecationWarning, match="columns="):
        pd.testing.assert_frame_equal(bias.letter_balance(pd.DataFrame({"key": list("ABCA")}), letters="ABCD",
                                                          answer="key"), lb)
