"""Psychometric item analysis: golden values from published worked examples and reference packages, planted
recovery on synthetic exams, the missing-answer policy and the LLM examinees (stub client, no network)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from medeval_kit import psychometrics as pm
from medeval_kit.errors import ParameterError, SchemaError

FIX = Path(__file__).resolve().parent / "fixtures" / "psychometrics"
LSAT_ITEMS = [f"Item {i}" for i in range(1, 6)]


def _lsat() -> pd.DataFrame:
    """The LSAT responses (1000 examinees x 5 items) from the pattern counts."""
    pat = pd.read_csv(FIX / "lsat_patterns.csv")
    X = np.repeat(pat[[f"item{i}" for i in range(1, 6)]].to_numpy(), pat["count"].to_numpy(), axis=0)
    return pm.responses_from_matrix(X, items=LSAT_ITEMS)


def _wide(name: str) -> pd.DataFrame:
    df = pd.read_csv(FIX / name).set_index("student")
    return pm.responses_from_matrix(df)


# --------------------------------------------------------------------------- golden: IRT
@pytest.mark.parametrize("engine", ["mml", "girth"])
def test_lsat_2pl_matches_ltm(engine):
    """2PL on LSAT against R ltm's ``summary(ltm(LSAT ~ z1, IRT.param = TRUE))`` as printed in the tutorial
    "2PL and 3PL Dichotomous Item response theory model" (kdavis91, geeksrepos.com) and RPubs 1049111:

        Dffclt  -3.3597 -1.3696 -0.2799 -1.8659 -3.1236   (std.err 0.8669 0.3073 0.0997 0.4341 0.8700)
        Dscrmn   0.8254  0.7229  0.8905  0.6886  0.6575   (std.err 0.2581 0.1867 0.2326 0.1852 0.2100)
        log.Lik -2466.653

    ltm stopped at max(|grad|) = 0.024 (printed), so the flattest parameters (items 1 and 5, far in the
    tail) differ in the third decimal; the log-likelihood agrees at its printed precision.
    """
    fit = pm.fit_irt(_lsat(), family="2pl", engine=engine)
    w = fit.wide().set_index("item").loc[LSAT_ITEMS]
    b = [-3.3597, -1.3696, -0.2799, -1.8659, -3.1236]
    a = [0.8254, 0.7229, 0.8905, 0.6886, 0.6575]
    b_se = [0.8669, 0.3073, 0.0997, 0.4341, 0.8700]
    a_se = [0.2581, 0.1867, 0.2326, 0.1852, 0.2100]
    np.testing.assert_allclose(w["b"], b, atol=0.005)
    np.testing.assert_allclose(w["a"], a, atol=0.002)
    np.testing.assert_allclose(w["b_se"], b_se, atol=0.005)
    np.testing.assert_allclose(w["a_se"], a_se, atol=0.002)
    assert round(fit.loglik, 3) == -2466.653


@pytest.mark.parametrize("engine", ["mml", "girth"])
def test_lsat_1pl_matches_ltm_rasch(engine):
    """1PL (common discrimination) on LSAT against ltm's ``rasch(data = LSAT)`` as printed (2 decimals) in RKWard's
    test standard KDE/rkward tests/item_response_theory/Rasch_parameter_estimation.rkout:
    Dffclt -3.62 -1.32 -0.32 -1.73 -2.78, Dscrmn 0.76, log-likelihood -2466.9."""
    fit = pm.fit_irt(_lsat(), family="1pl", engine=engine)
    w = fit.wide().set_index("item").loc[LSAT_ITEMS]
    assert list(w["b"].round(2)) == [-3.62, -1.32, -0.32, -1.73, -2.78]
    assert set(w["a"].round(2)) == {0.76}
    assert round(fit.loglik, 1) == -2466.9


# --------------------------------------------------------------------------- golden: CTT
def test_lsat_alpha_matches_ltm():
    """Cronbach's alpha of LSAT against ltm's ``cronbach.alpha(LSAT)`` = 0.295 (RKWard test standard
    tests/item_response_theory/RKTestStandard.Cronbach_alpha.rkout) and ``descript(LSAT)``'s alpha without each
    item, 0.28 0.24 0.22 0.25 0.27 (2 decimals, RKWard tests/item_response_theory/Cronbach_alpha.rkout)."""
    rel = pm.reliability(_lsat())
    kr20 = rel[rel["statistic"] == "kr20"].iloc[0]
    assert round(kr20["estimate"], 3) == 0.295
    assert kr20["n_items"] == 1000 and kr20["n_failed"] == 0 and kr20["ci_method"] == "Feldt F"
    assert kr20["ci_low"] < 0.295 < kr20["ci_high"]
    drop = rel[rel["statistic"] == "alpha_if_deleted"].set_index("item").loc[LSAT_ITEMS, "estimate"]
    assert list(drop.round(2)) == [0.28, 0.24, 0.22, 0.25, 0.27]


def test_corrected_point_biserial_matches_girth():
    """The corrected item-rest correlation equals girth's ``classical_test_statistics`` 'Item-Score Correlation'
    (a reference implementation), and the alpha-if-deleted column equals its 'Cronbach Alpha'."""
    import girth

    r = _lsat()
    X = pm.score_matrix(r)[LSAT_ITEMS].to_numpy().T
    ref = girth.classical_test_statistics(X.astype(int), start_value=0, stop_value=1)
    tab = pm.item_table(pm.item_statistics(r, n_boot=0)).set_index("item").loc[LSAT_ITEMS]
    np.testing.assert_allclose(tab["r_pbis"], ref["Item-Score Correlation"], atol=1e-10)
    rel = pm.reliability(r)
    drop = rel[rel["statistic"] == "alpha_if_deleted"].set_index("item").loc[LSAT_ITEMS, "estimate"]
    np.testing.assert_allclose(drop, ref["Cronbach Alpha"], atol=1e-10)


def test_kr20_worked_example():
    """KR-20 worked example of K. L. Wuensch, "The Kuder-Richardson 20" (core.ecu.edu/wuenschk/StatHelp/KR20.txt):
    10 students, 10 items; printed p = .7 .7 .6 .7 .6 .8 .7 .7 .5 .6 and total-score variance 5.84.
    KR-20 = 10/9 * (1 - sum(pq) / 5.84) with sum(pq) = 2.18 (the printed pq .21 .21 .24 .21 .24 .16 .21 .21 .25 .24)
    = 10/9 * 0.626712 = 0.696347."""
    r = _wide("wuensch_kr20.csv")
    tab = pm.item_table(pm.item_statistics(r, n_boot=0)).set_index("item")
    assert list(tab.loc[[f"item{k}" for k in range(1, 11)], "p"].round(2)) == [.7, .7, .6, .7, .6, .8, .7, .7, .5, .6]
    totals = pm.score_matrix(r).sum(axis=1)
    assert round(float(totals.var(ddof=0)), 2) == 5.84
    kr20 = pm.reliability(r).query("statistic == 'kr20'").iloc[0]
    assert kr20["estimate"] == pytest.approx(10 / 9 * (1 - 2.18 / 5.84), abs=1e-9)


def test_upper_lower_index_worked_example():
    """Upper-lower discrimination index against the "Item Analysis Worksheet" (studylib.net/doc/25270846):
    10 students split into upper and lower halves (fraction 0.5); printed per question
    p = .60 1 .80 .50 .80 .80 .50 .60 .30 .60 and D = 0.4 0 0 0.6 0.4 0.4 0.6 0.4 -0.2 0.4."""
    st = pm.item_statistics(_wide("item_analysis_worksheet.csv"), fraction=0.5, n_boot=0)
    tab = pm.item_table(st).set_index("item").loc[[f"q{k}" for k in range(1, 11)]]
    assert list(tab["p"].round(2)) == [.6, 1, .8, .5, .8, .8, .5, .6, .3, .6]
    assert list(tab["D"].round(2)) == [0.4, 0, 0, 0.6, 0.4, 0.4, 0.6, 0.4, -0.2, 0.4]
    ul = st[st["statistic"] == "upper_lower"]
    assert set(ul["n_upper"]) == {5.0} and set(ul["n_lower"]) == {5.0}


def test_group_weights_split_ties_and_ignore_order():
    # scores 5 4 4 4 1 1, group of round(0.5*6)=3: the top is 5 plus two of the three tied 4s -> 4s get 2/3 each
    s = np.array([5, 4, 4, 4, 1, 1], float)
    up, lo = pm.group_weights(s, 0.5)
    np.testing.assert_allclose(up, [1, 2 / 3, 2 / 3, 2 / 3, 0, 0])
    np.testing.assert_allclose(lo, [0, 1 / 3, 1 / 3, 1 / 3, 1, 1])
    perm = np.array([3, 0, 5, 1, 4, 2])
    up2, _ = pm.group_weights(s[perm], 0.5)
    np.testing.assert_allclose(up2, up[perm])
    with pytest.raises(ParameterError):
        pm.group_weights(s, 0.6)


# --------------------------------------------------------------------------- synthetic recovery
def test_2pl_recovers_planted_parameters():
    """Planted 2PL parameters (25 items x 1000 examinees, two seeds): the 95% Wald CIs from the observed
    information cover the planted values near the nominal rate, and estimates track the planted values."""
    tables = []
    for seed in (1, 2):
        exam = pm.synthetic_exam(25, 1000, seed=seed)
        tables.append(pm.recovery_table(pm.fit_irt(exam.responses, family="2pl", engine="girth"), exam.truth))
    t = pd.concat(tables)
    cov = t.groupby("parameter")["covered"].apply(lambda s: s.astype(bool).mean())
    assert cov["a"] >= 0.85 and cov["b"] >= 0.85, cov.to_dict()
    r = t.groupby("parameter").apply(lambda g: np.corrcoef(g["estimate"], g["planted"])[0, 1], include_groups=False)
    assert r["b"] > 0.95 and r["a"] > 0.8, r.to_dict()


def test_recovery_contract_and_a_wrong_truth_fails():
    exam = pm.synthetic_exam(20, 800, seed=3)
    fit = pm.fit_irt(exam.responses, family="2pl", engine="mml")
    rec = pm.recovery(fit, exam.truth)
    assert {"estimate", "ci_low", "ci_high", "ci_method", "n_items", "n_failed", "note"} <= set(rec.columns)
    good = rec.set_index(["parameter", "metric"])["estimate"]
    shuffled = exam.truth.assign(b=exam.truth["b"].to_numpy()[::-1])
    bad = pm.recovery(fit, shuffled).set_index(["parameter", "metric"])["estimate"]
    assert good[("b", "correlation")] > 0.95 > bad[("b", "correlation")]
    assert bad[("b", "coverage")] < good[("b", "coverage")]


def test_1pl_recovers_a_common_discrimination():
    exam = pm.synthetic_exam(20, 1000, a_range=(1.3, 1.3), seed=4)
    w = pm.fit_irt(exam.responses, family="1pl", engine="mml").wide()
    assert w["a"].nunique() == 1
    assert w["a_low"].iloc[0] < 1.3 < w["a_high"].iloc[0]


def test_planted_flags_are_found():
    """Planted non-functional distractors are flagged; miskeyed items show negative discrimination and a key the
    upper group rejects; no correctly keyed item is flagged as rejected."""
    exam = pm.synthetic_exam(30, 600, n_miskeyed=2, nonfunctional_items=0.4, seed=5)
    st = pm.item_statistics(exam.responses, n_boot=0)
    dis = pm.distractor_analysis(exam.responses)
    flags = pm.item_flags(st, dis).set_index("item")
    truth = exam.truth.set_index("item")
    for it, nf in truth["nonfunctional"].items():
        if nf:
            row = dis[(dis["item"] == it) & (dis["option"] == nf)].iloc[0]
            assert bool(row["functional"]) is False
            assert nf in flags.loc[it, "nonfunctional_options"]
    mis = truth.index[truth["miskeyed"]]
    assert flags.loc[mis, "key_rejected_by_upper"].astype(bool).all()
    assert flags.loc[mis, "negative_discrimination"].astype(bool).all()
    ok = truth.index[~truth["miskeyed"]]
    assert not flags.loc[ok, "key_rejected_by_upper"].astype(bool).any()
    assert "key_rejected_by_upper" in flags.loc[mis[0], "flags"]


def test_distractor_efficiency_by_hand():
    # 20 examinees; key A; B 6, C 3, D 1 (5% -> functional at the 5% line), E 0 (offered, never chosen)
    choices = ["A"] * 10 + ["B"] * 6 + ["C"] * 3 + ["D"]
    r = pm.score_responses(pd.DataFrame({"item": "x", "examinee": [f"e{i}" for i in range(20)], "choice": choices,
                                         "key": "A", "offered": "ABCDE"}))
    dis = pm.distractor_analysis(r).set_index("option")
    assert list(dis.index) == list("ABCDE")
    assert dis.loc["E", "estimate"] == 0 and dis.loc["D", "estimate"] == pytest.approx(0.05)
    assert bool(dis.loc["D", "functional"]) is True and bool(dis.loc["E", "functional"]) is False
    eff = pm.distractor_efficiency(dis.reset_index()).iloc[0]
    assert eff["estimate"] == 0.75 and eff["n_items"] == 4 and eff["nonfunctional_options"] == "E"


# --------------------------------------------------------------------------- missing answers
def test_missing_answers_are_never_scored_wrong():
    df = pd.DataFrame({"item": ["q1"] * 4 + ["q2"] * 4, "examinee": ["a", "b", "c", "d"] * 2,
                       "choice": ["A", "B", None, "A", "C", "C", "C", ""], "key": ["A"] * 4 + ["C"] * 4,
                       "parse_status": ["ok", "ok", "failed", "ok", "ok", "ok", "ok", "ok"]})
    r = pm.score_responses(df)
    assert r["correct"].isna().sum() == 2
    assert list(r["parse_status"]) == ["ok", "ok", "failed", "ok", "ok", "ok", "ok", "missing"]
    tab = pm.item_table(pm.item_statistics(r, n_boot=0)).set_index("item")
    assert tab.loc["q1", "p"] == pytest.approx(2 / 3) and tab.loc["q1", "n_missing"] == 1  # not 2/4
    assert tab.loc["q2", "p"] == 1 and tab.loc["q2", "n_answered"] == 3
    ms = pm.missing_summary(r)
    assert ms.loc[0, ["ok", "failed", "missing", "n"]].tolist() == [6, 1, 1, 8]
    rel = pm.reliability(r).query("statistic == 'kr20'").iloc[0]
    assert rel["n_items"] == 2 and rel["n_failed"] == 2  # listwise: c and d left out, and counted


def test_score_responses_errors():
    with pytest.raises(SchemaError, match="repeat"):
        pm.score_responses(pd.DataFrame({"item": ["a", "a"], "examinee": ["x", "x"], "correct": [1, 0]}))
    with pytest.raises(SchemaError, match="examinee"):
        pm.score_responses(pd.DataFrame({"item": ["a"], "correct": [1]}))
    with pytest.raises(SchemaError, match="0 or 1"):
        pm.score_responses(pd.DataFrame({"item": ["a"], "examinee": ["x"], "correct": [2]}))


def test_read_responses_with_your_column_names(tmp_path):
    p = tmp_path / "mine.csv"
    pd.DataFrame({"q": ["1", "1", "2", "2"], "student": ["s1", "s2", "s1", "s2"], "ans": ["a", "B", "C", "NA"],
                  "right": ["A", "A", "C", "C"]}).to_csv(p, index=False)
    mine = {"item": "q", "examinee": "student", "choice": "ans", "key": "right"}
    r = pm.read_responses(p, columns=mine)
    assert list(r["correct"].astype("float")) == [1, 0, 1, 0]  # "NA" is a letter string here, read as text: wrong
    with pytest.raises(SchemaError, match=str(p)):
        pm.read_responses(p, columns={"item": "question"})
    # the old per-column keywords work for one release, with a warning
    with pytest.warns(DeprecationWarning, match="columns="):
        old = pm.read_responses(p, item="q", examinee="student", choice="ans", key="right")
    pd.testing.assert_frame_equal(old, r)
    with pytest.raises(TypeError, match="itme"):
        pm.read_responses(p, itme="q")


def test_score_responses_and_statistics_take_a_columns_mapping():
    exam = pm.synthetic_exam(6, 80, seed=2)
    mine = {"item": "question_id", "examinee": "student", "correct": "right"}
    theirs = exam.responses.rename(columns={k: v for k, v in mine.items()})
    pd.testing.assert_frame_equal(pm.item_statistics(theirs, n_boot=0, columns=mine),
                                  pm.item_statistics(exam.responses, n_boot=0))
    pd.testing.assert_frame_equal(pm.reliability(theirs, columns=mine), pm.reliability(exam.responses))
    with pytest.warns(DeprecationWarning, match="columns="):
        scored = pm.score_responses(theirs[["question_id", "student", "right"]], item="question_id",
                                    examinee="student", correct="right")
    assert list(scored.columns[:2]) == ["item", "examinee"]
    assert scored["correct"].equals(exam.responses["correct"])


def test_fit_irt_names_the_family_family_and_keeps_model_for_one_release():
    r = pm.synthetic_exam(6, 200, seed=4).responses
    new = pm.fit_irt(r, family="1pl", engine="mml", se="none")
    assert new.family == "1pl"
    with pytest.warns(DeprecationWarning, match="family"):
        old = pm.fit_irt(r, model="1pl", engine="mml", se="none")
    pd.testing.assert_frame_equal(old.to_frame(), new.to_frame())
    with pytest.warns(DeprecationWarning, match="family"):
        assert old.model == "1pl"
    with pytest.raises(TypeError):
        pm.fit_irt(r, familly="1pl")
    assert "<" in new._repr_html_() and "1PL" in new.summary()
    with pytest.warns(DeprecationWarning, match="FAMILIES"):
        assert pm.MODELS == pm.FAMILIES == ("2pl", "1pl", "rasch")


def test_counting_tables_follow_the_result_contract():
    from medeval_kit.results import RESULT_COLUMNS

    exam = pm.synthetic_exam(4, 50, missing_rate=0.1, seed=0)
    ms = pm.missing_summary(exam.responses)
    assert all(c in ms.columns for c in RESULT_COLUMNS) and ms["n"].iloc[0] == 200
    assert ms["estimate"].iloc[0] == pytest.approx((ms["failed"] + ms["missing"]).iloc[0] / 200)
    by = pm.missing_summary(exam.responses, by="examinee")
    assert len(by) == 50 and by["n"].eq(4).all()
    items = pm.mcq_items(pd.DataFrame({"item": ["a", "b"], "question": ["q", "q"],
                                       "options": [{"A": "x", "B": "y"}, "?"], "key": ["A", "A"]}))
    ic = pm.item_counts(items).iloc[0]
    assert (ic["n_items"], ic["n_ok"], ic["n_failed"], ic["estimate"]) == (2, 1, 1, 0.5)


# --------------------------------------------------------------------------- IRT edge cases and curves
def test_items_without_variance_are_reported_not_fitted():
    exam = pm.synthetic_exam(8, 300, seed=6)
    r = exam.responses.copy()
    r.loc[r["item"] == "q001", "correct"] = 1
    fit = pm.fit_irt(r, family="2pl", engine="mml")
    row = fit.to_frame().query("item == 'q001'")
    assert row["estimate"].isna().all() and row["note"].str.contains("every examinee right").all()
    assert fit.n_fitted_items == 7
    with pytest.raises(ParameterError):
        pm.fit_irt(r[r["item"].isin(["q001", "q002"])], family="2pl")


def test_icc_band_and_monotone_curve():
    exam = pm.synthetic_exam(10, 500, seed=7)
    fit = pm.fit_irt(exam.responses, family="2pl", engine="mml")
    icc = pm.icc_table(fit, theta=np.linspace(-3, 3, 13))
    assert len(icc) == 13 * 10
    assert (icc["ci_low"] <= icc["p"] + 1e-12).all() and (icc["p"] <= icc["ci_high"] + 1e-12).all()
    for _, g in icc.groupby("item"):
        assert np.all(np.diff(g["p"]) > 0)


def test_parametric_bootstrap_ses_agree_with_observed_information():
    exam = pm.synthetic_exam(6, 800, seed=8)
    obs = pm.fit_irt(exam.responses, family="2pl", engine="mml").wide().set_index("item")
    boot = pm.fit_irt(exam.responses, family="2pl", engine="mml", se="bootstrap", n_boot=60, seed=1)
    assert "bootstrap" in boot.se_method
    ratio = boot.wide().set_index("item")["b_se"] / obs["b_se"]
    assert ratio.between(0.6, 1.6).all(), ratio.to_dict()


# --------------------------------------------------------------------------- items and the round-wise link
def test_bundled_items():
    dc = pm.medqg_difficulty_items()
    assert len(dc) == 50 and (dc["parse_status"] == "ok").all()
    assert all(sorted(g) == [1, 2, 3, 4, 5] for _, g in dc.groupby("trace")["difficulty_rank"])
    assert all(k in o for k, o in zip(dc["key"], dc["options"]))
    rounds = pm.medqg_round_items("top10")
    assert rounds["trace"].nunique() == 10 and (rounds["parse_status"] == "ok").all()
    assert all(o[k].lower().strip() for k, o in zip(rounds["key"], rounds["options"]))
    assert pm.split_options("A : x y B : z C : w") == ["x y", "z", "w"]
    assert pm.split_options("only one") == []


def test_srefine_items_read_any_size(tmp_path):
    rows = [{"item": f"t{t}", "round": r, "context": "ctx", "question": f"q{t}{r}", "answer_letter": "B",
             "options": json.dumps({"A": "x", "B": "y", "C": "z"})} for t in range(3) for r in (1, 2)]
    p = tmp_path / "gen.csv"
    pd.DataFrame(rows).to_csv(p, index=False)
    it = pm.srefine_items(p)
    assert len(it) == 6 and set(it["trace"]) == {"t0", "t1", "t2"} and it["question"].iloc[0].startswith("ctx")


def test_roundwise_item_change_uses_paired_round_tests():
    # 4 traces; the distractor efficiency rises by 0.25 from round 1 to 2 in each
    t = pd.DataFrame({"trace": [f"t{k}" for k in range(4)] * 2, "round": [1] * 4 + [2] * 4,
                      "distractor_efficiency": [0.25, 0.5, 0.5, 0.75, 0.5, 0.75, 0.75, 1.0], "source": "s"})
    res = pm.roundwise_item_change(t, statistics=["distractor_efficiency"], n_boot=200)
    row = res.iloc[0]
    assert row["statistic"] == "distractor_efficiency" and row["estimate"] == pytest.approx(0.25)
    assert row["n_items"] == 4 and row["test"] == "Wilcoxon signed-rank"
    renamed = t.rename(columns={"trace": "note_id", "round": "iteration"})
    pd.testing.assert_frame_equal(pm.roundwise_item_change(renamed, statistics=["distractor_efficiency"], n_boot=200,
                                                           columns={"trace": "note_id", "round": "iteration"}), res)


def test_label_association_detects_a_planted_gradient():
    rng = np.random.default_rng(0)
    t = pd.DataFrame([{"trace": f"n{n}", "difficulty_rank": k, "p": 1 - 0.15 * k + rng.normal(0, 0.05)}
                      for n in range(10) for k in range(1, 6)])
    res = pm.label_association(t, n_boot=300).set_index("statistic")
    assert res.loc["spearman_rho", "estimate"] < -0.8 and res.loc["spearman_rho", "ci_high"] < 0
    with pytest.warns(DeprecationWarning, match="planted"):
        old = pm.label_association(t, label="difficulty_rank", n_boot=300).set_index("statistic")
    pd.testing.assert_frame_equal(old, res)
    flat = t.assign(p=rng.permutation(t["p"].to_numpy()))
    assert pm.label_association(flat, n_boot=300).set_index("statistic").loc["spearman_rho", "ci_high"] > \
        res.loc["spearman_rho", "ci_high"]


# --------------------------------------------------------------------------- LLM examinees (stub client)
class _StubClient:
    """Answers with the letters in ``script`` in turn; ``None`` = a failed call, "Z" = a letter not offered."""

    def __init__(self, script):
        self.script, self.requests = list(script), []

    def run(self, requests, progress=False, desc=None):
        self.requests += list(requests)
        out = []
        for k, _ in enumerate(requests):
            s = self.script[k % len(self.script)]
            if s is None:
                out.append(SimpleNamespace(text=None, parsed=None, parse_status="missing", cached=False))
            else:
                out.append(SimpleNamespace(text=json.dumps({"answer": s}), parsed={"answer": s}, parse_status="ok",
                                           cached=True))
        return out


def test_answer_items_with_personas_and_parse_failures():
    items = pm.medqg_difficulty_items().head(3)
    panel = pm.examinee_panel(["careful_student", "hurried_student"], seeds=(0, 1))
    assert list(panel["examinee"]) == ["careful_student/s0", "careful_student/s1", "hurried_student/s0",
                                       "hurried_student/s1"]
    cl = _StubClient(["A", "B", None, "Z"])
    r = pm.answer_items(items, panel, client=cl)
    assert len(r) == 12 and len(cl.requests) == 12
    req = cl.requests[0]
    assert req.schema["properties"]["answer"]["enum"] == list(items["options"].iloc[0])
    assert "careful" in req.messages[0]["content"] and req.temperature == 0.7 and req.seed == 0
    assert r["parse_status"].value_counts().to_dict() == {"ok": 6, "missing": 3, "failed": 3}
    assert r.loc[r["parse_status"] != "ok", "correct"].isna().all()
    st = pm.item_statistics(r, n_boot=0)
    assert st.query("statistic == 'difficulty'")["n_failed"].sum() == 6
    with pytest.raises(ParameterError, match="persona"):
        pm.examinee_panel(["nobody"])


def test_estimates_at_an_engines_bounds_are_flagged():
    """Answers that are coin flips carry no ability: girth's 1PL stops at its lower bound a = 0.25 (flagged, no CI),
    the scipy fit finds a common discrimination whose CI holds 0."""
    rng = np.random.default_rng(0)
    r = pm.responses_from_matrix((rng.random((40, 6)) < 0.5).astype(float))
    g = pm.fit_irt(r, family="1pl", engine="girth").to_frame().query("parameter == 'a'")
    assert g["note"].str.contains("bound").all() and g["ci_low"].isna().all() and g["se"].isna().all()
    m = pm.fit_irt(r, family="1pl", engine="mml").wide().iloc[0]
    assert m["a_low"] < 0 < m["a_high"]


def test_medeval_items_cli_prints_flags_and_kr20(tmp_path, capsys):
    """`medeval items FILE` on a 0/1-letter answers file: flagged items, flag counts and KR-20 with its n."""
    from medeval_kit.cli import main

    rng = np.random.default_rng(5)
    rows = []
    for q in range(6):
        key = "ABCD"[q % 4]
        for s in range(30):
            right = rng.random() < (0.95 if q == 0 else 0.6)
            rows.append({"qid": f"Q{q}", "student": f"s{s:02d}", "solution": key,
                         "answer": key if right else "ABCD"[(q + 1) % 4]})
    rows[7]["answer"] = ""
    path = tmp_path / "answers.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    rc = main(["items", str(path), "--item", "qid", "--examinee", "student", "--choice", "answer", "--key", "solution",
               "--out", str(tmp_path / "items.csv")])
    out = capsys.readouterr().out
    assert rc == 0 and "KR-20" in out and "missing 1" in out
    table = pd.read_csv(tmp_path / "items.csv")
    assert set(table["item"]) == {f"Q{q}" for q in range(6)}
    assert "too_easy" in str(table.set_index("item").loc["Q0", "flags"])


def test_responses_passed_where_item_statistics_belong_are_a_clear_error():
    """Found by hand: item_flags(responses) raised pandas' KeyError 'statistic'."""
    from medeval_kit import psychometrics as pm
    from medeval_kit.errors import ParameterError

    exam = pm.synthetic_exam(5, 40, seed=0)
    for f in (pm.item_flags, pm.item_table):
        with pytest.raises(ParameterError, match=r"item_statistics\(responses\) first"):
            f(exam.responses)
