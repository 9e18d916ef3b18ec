"""Issue 22, findings 2, 5, 6 and 8: verdicts with three states and their rule, nothing switching silently,
skipped raters all reported, and a leave-one-out design that one extra rater cannot flip.

Each finding is a test that failed on the code before the fix (noted at each test)."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pandas as pd
import pytest

from medeval_kit import agreement as ag
from medeval_kit.agreement import verdicts as vd
from medeval_kit.cli import main
from medeval_kit.datasets.synthetic import synthetic_panel
from medeval_kit.errors import SchemaError

at = importlib.import_module("medeval_kit.agreement.alt_test")

STATUSES = {"pass", "fail", "inconclusive", "not_testable", "invalid"}


def _run(argv, capsys):
    rc = main(argv)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _judges(res) -> pd.DataFrame:
    t = res.to_frame()
    return t[t["role"] == "judge"].set_index("rater")


# --------------------------------------------------------------------------- finding 5: verdict and p agree


@pytest.fixture(scope="module")
def equal_noise():
    return synthetic_panel(n_items=150, n_humans=3, n_judges=1, kappa=0.5, seed=21)


def test_p_value_and_verdict_agree_at_the_edge(equal_noise):
    # Before the fix: the verdict was "CI lower bound > -margin" and p_noninferiority = (1 + #{d <= -margin}) /
    # (B + 1); with -margin just below the CI's lower bound the judge was "non-inferior" with p = 0.030 > 0.025.
    first = _judges(ag.judge_vs_humans(equal_noise, n_boot=200, seed=3)).loc["llm1"]
    lo = first["delta_ci_low"]
    assert lo < 0
    for margin, want in ((-lo + 1e-9, "pass"), (-lo - 1e-9, "inconclusive")):
        r = _judges(ag.judge_vs_humans(equal_noise, margin=margin, n_boot=200, seed=3)).loc["llm1"]
        assert r["delta_ci_low"] == lo  # the same replicates
        assert r["status"] == want, r
        assert bool(r["noninferior"]) == (want == "pass")
        assert (r["p_noninferiority"] < 0.025) == (want == "pass"), r["p_noninferiority"]
        assert "lower bound" in r["rule"] and "0.025" in r["rule"] and "p_noninferiority" in r["rule"]
    # the relation holds at any margin: p < alpha exactly when the CI's lower bound is above -margin
    for margin in np.linspace(0.0, 0.3, 13):
        r = _judges(ag.judge_vs_humans(equal_noise, margin=margin, n_boot=200, seed=3)).loc["llm1"]
        assert (r["p_noninferiority"] < 0.025) == (r["delta_ci_low"] > -margin) == (r["status"] == "pass")


def test_three_states_with_reasons():
    t = synthetic_panel(n_items=400, n_humans=3, n_judges=2, kappa=0.5, judge_kappa=[0.5, 0.05], seed=2)
    rows = _judges(ag.judge_vs_humans(t, margin=0.1, n_boot=200))
    good, bad = rows.loc["llm1"], rows.loc["llm2"]
    assert bad["status"] == "fail" and bad["delta_ci_high"] < -0.1 and bad["noninferior"] is not pd.NA
    assert not bad["noninferior"] and "upper bound" in bad["reasons"]
    assert good["status"] in ("pass", "inconclusive")
    # a narrow margin leaves the equal-noise judge undecided: the reasons give the width and the items needed
    r = _judges(ag.judge_vs_humans(t, margin=0.02, n_boot=200)).loc["llm1"]
    assert r["status"] == "inconclusive", r
    assert "straddles" in r["reasons"] and "width" in r["reasons"] and "items" in r["reasons"]
    # humans rows carry no verdict
    hum = ag.judge_vs_humans(t, n_boot=200).to_frame().iloc[0]
    assert hum["role"] == "humans" and hum["status"] == ""


def test_not_testable_without_a_ci(equal_noise):
    r = _judges(ag.judge_vs_humans(equal_noise, n_boot=0)).loc["llm1"]
    assert r["status"] == "not_testable" and "n_boot=0" in r["reasons"] and pd.isna(r["noninferior"])
    tiny = synthetic_panel(n_items=8, n_humans=3, n_judges=1, seed=1)
    r = _judges(ag.judge_vs_humans(tiny, n_boot=200)).loc["llm1"]
    assert r["status"] == "not_testable" and "fewer than" in r["reasons"]


def test_medqade_design_has_the_same_verdicts(equal_noise):
    rows = _judges(ag.judge_vs_humans(equal_noise, design="medqade", n_boot=200))
    r = rows.loc["llm1"]
    assert r["status"] in STATUSES and r["rule"] and r["reasons"]
    assert (r["p_noninferiority"] < 0.025) == (r["delta_ci_low"] > -0.05) == (r["status"] == "pass")


def test_items_needed_is_the_normal_approximation():
    # n * ((z_0.975 + z_0.8) * se / (delta + margin))^2 = 100 * (2.8016 * 0.05 / 0.05)^2 = 784.9 -> 785
    assert vd.items_needed(100, se=0.05, delta=0.0, margin=0.05, alpha=0.025, power=0.8) == 785
    assert vd.items_needed(100, se=0.05, delta=-0.06, margin=0.05) is None  # no n suffices at this delta
    assert vd.items_needed(100, se=float("nan"), delta=0.0, margin=0.05) is None
    text = vd.noninferiority_rule(0.05, 0.95)
    assert "95% CI" in text and "-0.05" in text and "0.025" in text


def test_mark_invalid_sets_the_status_and_the_booleans(equal_noise):
    res = ag.judge_vs_humans(equal_noise, margin=0.3, n_boot=200)
    assert _judges(res).loc["llm1", "status"] == "pass"
    bad = vd.mark_invalid(res, "labels 'Correct' and 'correct' differ only by case")
    r = _judges(bad).loc["llm1"]
    assert r["status"] == "invalid" and not r["noninferior"] and "differ only by case" in r["reasons"]
    assert _judges(res).loc["llm1", "status"] == "pass"  # a copy
    alt = at.alt_test(synthetic_panel(n_items=60, n_humans=3, n_judges=1, seed=4))
    bad = vd.mark_invalid(alt, "dirty labels")
    row = bad.to_frame().iloc[0]
    assert row["status"] == "invalid" and not row["passed"] and "dirty labels" in row["reasons"]


def test_judge_vs_humans_cli_prints_status_rule_reasons(equal_noise, tmp_path, capsys):
    f = tmp_path / "p.csv"
    equal_noise.to_csv(f, index=False)
    rc, out, err = _run(["judge-vs-humans", str(f), "--n-boot", "200", "--format", "json"], capsys)
    assert rc == 0, err
    recs = json.loads(out)
    judge = [r for r in recs if r["role"] == "judge"][0]
    assert judge["status"] in STATUSES and "lower bound" in judge["rule"] and "CI [" in judge["reasons"]
    assert {"p_noninferiority", "noninferior", "margin"} <= set(judge)
    rc, out, _ = _run(["judge-vs-humans", str(f), "--n-boot", "200", "--format", "csv"], capsys)
    assert rc == 0 and {"status", "rule", "reasons"} <= set(out.splitlines()[0].split(","))
    rc, out, _ = _run(["judge-vs-humans", str(f), "--n-boot", "200", "--margin", "0.02"], capsys)
    assert rc == 0 and "llm1: inconclusive" in out and "rule: non-inferior (pass) if" in out and "width" in out


# --------------------------------------------------------------------------- alt-test states (finding 6)


def _sparse_107(seed=0):
    return synthetic_panel(n_items=300, n_humans=107, n_judges=1, labels_per_item=(2, 4), kappa=0.5, seed=seed)


def test_alt_test_sparse_panel_is_not_testable_with_every_skip_reported(tmp_path, capsys):
    # Before the fix: "passed False" / "does not pass", no note and no skip reasons in JSON, and the text note
    # named 4 physicians "and 102 more" for 107 skipped.
    t = _sparse_107()
    assert t[t.rater_kind == "human"].groupby("rater").size().max() < 30
    res = at.alt_test(t)
    row = res.to_frame().iloc[0]
    assert row["status"] == "not_testable" and not row["passed"] and row["n_humans_skipped"] == 107
    assert "30" in row["reasons"]
    assert "FAILED" not in res.summary() and "NOT TESTABLE" in res.summary()
    f = tmp_path / "sparse.csv"
    t.to_csv(f, index=False)
    rc, out, err = _run(["alt-test", str(f), "--format", "json"], capsys)
    assert rc == 0, err
    rec = json.loads(out)[0]
    assert rec["status"] == "not_testable" and rec["note"] and rec["reasons"]
    assert len(rec["skipped"]) == 107 and all(s["reason"] for s in rec["skipped"])
    assert {s["human"] for s in rec["skipped"]} == set(t.loc[t.rater_kind == "human", "rater"])
    rc, out, err = _run(["alt-test", str(f)], capsys)
    assert rc == 0, err
    assert "not_testable" in out and "does not pass" not in out and "more" not in out
    assert sum(1 for line in out.splitlines() if "items < 30" in line) == 107
    rc, out, _ = _run(["alt-test", str(f), "--format", "csv"], capsys)
    back = pd.read_csv(__import__("io").StringIO(out))
    assert back["status"].tolist() == ["not_testable"] and back["skipped"].str.count("items < 30").iloc[0] == 107


def _numeric_panel(n=60, m=4, seed=3):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, n)
    H = np.clip(truth[:, None] + rng.integers(-1, 2, (n, m)), 1, 5)
    rows = [(f"i{i}", f"h{k}", int(H[i, k]), "human") for i in range(n) for k in range(m)]
    rows += [(f"i{i}", "close", int(np.clip(truth[i] + rng.integers(-1, 2), 1, 5)), "llm") for i in range(n)]
    rows += [(f"i{i}", "random", int(rng.integers(1, 6)), "llm") for i in range(n)]
    return pd.DataFrame(rows, columns=["item", "rater", "label", "rater_kind"])


def test_alt_test_statuses_and_passed_agree():
    res = at.alt_test(_numeric_panel())
    t = res.to_frame().set_index("judge")
    assert set(t["status"]) <= STATUSES
    assert (t["passed"] == (t["status"] == "pass")).all()
    assert t.loc["random", "status"] == "fail" and "shown below" in t.loc["random", "reasons"]
    assert all("winning rate" in r for r in t["rule"])
    d = res.details
    assert {"p_worse", "p_worse_adjusted", "shown_worse"} <= set(d.columns)
    # an exchangeable judge with epsilon = 0 cannot be shown better nor worse: inconclusive
    df = synthetic_panel(n_items=120, n_humans=4, n_judges=1, kappa=0.5, seed=8)
    row = at.alt_test(df, epsilon=0.0).to_frame().iloc[0]
    assert row["status"] == "inconclusive" and not row["passed"], row
    # one testable human is fewer than the paper requires (two annotators): not testable, never "passed"
    one = _numeric_panel(n=60, m=3)
    num = one["item"].str[1:].astype(int)
    one = one[~(((one["rater"] == "h1") & (num >= 30)) | ((one["rater"] == "h2") & (num < 30)))]
    assert at.alt_test(one).to_frame().set_index("judge").loc["close", "n_humans_tested"] == 3
    row = at.alt_test(one, min_items_per_human=31).to_frame().set_index("judge").loc["close"]
    assert row["n_humans_tested"] == 1 and row["status"] == "not_testable" and not row["passed"]
    assert "at least 2" in row["reasons"]


# --------------------------------------------------------------------------- finding 2: nothing switches silently


def test_scoring_auto_says_what_it_chose():
    # Before the fix: no record of the choice.
    res = at.alt_test(_numeric_panel())
    assert res.scoring == "neg_rmse" and "every label is a number" in res.scoring_reason
    assert res.to_frame()["scoring_reason"].iloc[0] == res.scoring_reason
    text = synthetic_panel(n_items=60, n_humans=3, n_judges=1, seed=4)
    assert "not numbers" in at.alt_test(text).scoring_reason
    assert "asked" in at.alt_test(_numeric_panel(), scoring="accuracy").scoring_reason


def test_a_few_non_numbers_in_a_numeric_column_are_an_error(tmp_path, capsys):
    # Before the fix: one label "3,5" among numbers switched alt-test to exact-match scoring, silently.
    df = _numeric_panel().astype({"label": object})
    df.loc[17, "label"] = "3,5"
    with pytest.raises(SchemaError) as e:
        at.alt_test(df)
    assert e.value.rows == [17] and "'3,5'" in str(e.value) and "--scoring accuracy" in str(e.value)
    assert at.alt_test(df, scoring="accuracy").scoring == "accuracy"  # asked for: fine
    f = tmp_path / "lesion.csv"
    df.to_csv(f, index=False)
    rc, _, err = _run(["alt-test", str(f)], capsys)
    assert rc == 2 and "lesion.csv" in err and "column 'label'" in err and "rows [17]" in err
    assert "'3,5'" in err and "--missing" in err and "--scoring accuracy" in err
    rc, out, err = _run(["alt-test", str(f), "--scoring", "accuracy"], capsys)
    assert "scoring: accuracy, as asked" in out, err  # (the input checks may still withhold the verdict)
    good = tmp_path / "clean.csv"
    _numeric_panel().to_csv(good, index=False)
    rc, out, err = _run(["alt-test", str(good)], capsys)
    assert rc == 0 and "scoring: neg_rmse, because every label is a number" in out, err
    rc, out, _ = _run(["alt-test", str(good), "--format", "json"], capsys)
    assert "every label is a number" in json.loads(out)[0]["scoring_reason"]


# --------------------------------------------------------------------------- finding 8: a stable leave-one-out


def test_one_extra_rater_with_one_item_does_not_flip_the_design():
    # Before the fix: any human below 30 items switched "mean over humans" to pooled instances.
    t = synthetic_panel(n_items=200, n_humans=3, n_judges=1, kappa=0.5, seed=5)
    base = ag.judge_vs_humans(t, n_boot=200)
    hum = t[t.rater_kind == "human"].pivot(index="item", columns="rater", values="label")
    item = hum.index[(hum.nunique(axis=1) == 1)][0]  # the three agree: the others' consensus stays the same
    extra = pd.DataFrame([(item, "h_new", "human", hum.loc[item, "h1"])], columns=["item", "rater", "rater_kind",
                                                                                   "label"])
    more = ag.judge_vs_humans(pd.concat([t, extra[t.columns]], ignore_index=True), n_boot=200)
    a, b = base.to_frame(), more.to_frame()
    assert list(b["design"]) == ["loo (humans)"] * 2
    for c in ("estimate", "ci_low", "ci_high", "delta", "delta_ci_low", "delta_ci_high"):
        assert np.allclose(a[c].to_numpy(float), b[c].to_numpy(float), equal_nan=True), c
    assert "h_new" in b.loc[0, "note"] and "90%" in b.loc[0, "note"]
    assert "mean over humans" in more.design_note and "h_new" in more.design_note
    assert not more.details.set_index("human").loc["h_new", "in_mean"]


def test_sparse_panels_still_pool_and_say_why():
    t = synthetic_panel(n_items=120, n_humans=40, n_judges=1, labels_per_item=(2, 4), kappa=0.5, seed=1)
    res = ag.judge_vs_humans(t, n_boot=0)
    assert res.to_frame().loc[0, "design"] == "loo (instances)"
    assert "pooled" in res.design_note and "90%" in res.design_note
