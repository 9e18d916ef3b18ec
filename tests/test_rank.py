"""Rankings from pairwise judgments (medeval_kit.rank): golden published fits, cross-checks against
statsmodels / scipy, the paired bootstrap, rank agreement, Elo's order dependence and ``medeval rank``.

Golden data and the printed values are described, with their sources, in tests/fixtures/rank/SOURCE.md.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

from medeval_kit import rank
from medeval_kit.errors import SchemaError
from medeval_kit.results import check_result

FIX = Path(__file__).resolve().parent / "fixtures" / "rank"


def _strengths(res: rank.RankResult, judge: str = "all") -> pd.Series:
    return res.wide()[judge]


def _baseball() -> pd.DataFrame:
    d = pd.read_csv(FIX / "baseball.csv")
    return rank.comparisons_from_counts(d, player1="home.team", player2="away.team", wins1="home.wins",
                                        wins2="away.wins")


def _win_matrix(comp: pd.DataFrame, models) -> np.ndarray:
    ix = {m: i for i, m in enumerate(models)}
    W = np.zeros((len(models), len(models)))
    for a, b, v in zip(comp["model_a"], comp["model_b"], comp["verdict"]):
        if v == "A":
            W[ix[a], ix[b]] += 1
        elif v == "B":
            W[ix[b], ix[a]] += 1
    return W


def _contrast_se(info: np.ndarray, k: int, ref: int) -> float:
    """SE of strength k minus strength ref from a (singular) information matrix."""
    c = np.zeros(info.shape[0])
    c[k], c[ref] = 1.0, -1.0
    return float(np.sqrt(c @ np.linalg.pinv(info) @ c))


# --------------------------------------------------------------------------- golden: published fits
def test_agresti_baseball_bradley_terry():
    """Agresti, Categorical Data Analysis, 2nd ed. (Wiley 2002), Section 10.6: Table 10.10 (p. 437) holds the
    1987 American League East results; Table 10.11, column 3 (p. 438) prints the Bradley-Terry estimates with
    Baltimore = 0, and the text says their standard errors are about 0.3."""
    printed = {"Milwaukee": "1.58", "Detroit": "1.44", "Toronto": "1.29", "New York": "1.25", "Boston": "1.11",
               "Cleveland": "0.68"}
    res = rank.rank_models(_baseball(), ties="exclude", n_boot=0)
    s = _strengths(res)
    ours = s - s["Baltimore"]
    for team, value in printed.items():
        assert f"{ours[team]:.2f}" == value, (team, ours[team])
    info = rank.information(s.to_numpy(), _win_matrix(_baseball(), res.models))
    b = res.models.index("Baltimore")
    for k, team in enumerate(res.models):
        if team != "Baltimore":
            assert f"{_contrast_se(info, k, b):.1f}" == "0.3", team


def test_bradleyterry2_citations_vignette():
    """BradleyTerry2 vignette "Bradley-Terry models in R" (Turner & Firth 2012, JSS 48(9)), Section 2.1: the
    citeModel fit to the citations data (Agresti 2002, p. 448) prints journalComm Statist -2.9491,
    journalJASA -0.4796, journalJRSS-B 0.2690 with Biometrika = 0. Journal i beats j when j cites i."""
    c = pd.read_csv(FIX / "citations.csv")
    c = c[c["cited"] != c["citing"]]
    pairs = c.merge(c, left_on=["cited", "citing"], right_on=["citing", "cited"], suffixes=("", "_back"))
    pairs = pairs[pairs["cited"] < pairs["citing"]]
    comp = rank.comparisons_from_counts(pairs, player1="cited", player2="citing", wins1="count", wins2="count_back")
    s = _strengths(rank.rank_models(comp, ties="exclude", n_boot=0))
    ours = s - s["Biometrika"]
    assert [f"{ours[j]:.4f}" for j in ("Comm Statist", "JASA", "JRSS-B")] == ["-2.9491", "-0.4796", "0.2690"]


def _pudding() -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    p = pd.read_csv(FIX / "pudding.csv")
    assert (p["w_ij"] + p["w_ji"] + p["t_ij"] == p["r_ij"]).all()  # the table adds up
    comp = rank.comparisons_from_counts(p.astype({"i": str, "j": str}), player1="i", player2="j", wins1="w_ij",
                                        wins2="w_ji", ties="t_ij")
    W, T = np.zeros((6, 6)), np.zeros((6, 6))
    for r in p.itertuples():
        W[r.i - 1, r.j - 1], W[r.j - 1, r.i - 1] = r.w_ij, r.w_ji
        T[r.i - 1, r.j - 1] = T[r.j - 1, r.i - 1] = r.t_ij
    return comp, W, T


def test_davidson_pudding_plackettluce_vignette():
    """Davidson (1970, JASA 65:317-328) Example 2, chocolate puddings, as fitted in the PlackettLuce vignette
    "Introduction to PlackettLuce", Section 2.1.1: coef(mod, log = FALSE) prints worths 0.1388005 0.1729985
    0.1617420 0.1653930 0.1586805 0.2023855 and tie2 0.7468147; summary(mod, ref = NULL) prints standard
    errors 0.121949 0.121818 0.126823 0.122003 0.127054 0.126594 (tie2 0.082499), summary(mod) (ref = brand 1)
    0.1872 0.1935 0.1882 0.1927 0.1924 (tie2 0.0825). The vignette stops at 7 iterations to match Davidson's
    printed worths, so our converged MLE is compared at 4 decimals (the 5th differs: 0.161747 vs 0.1617420);
    the standard errors are compared at every printed digit."""
    comp, W, T = _pudding()
    res = rank.rank_models(comp, ties="davidson", n_boot=0)
    s = _strengths(res).reindex([str(i) for i in range(1, 7)]).to_numpy()
    worth = np.exp(s) / np.exp(s).sum()
    printed = [0.1388005, 0.1729985, 0.1617420, 0.1653930, 0.1586805, 0.2023855]
    assert [f"{w:.4f}" for w in worth] == [f"{p:.4f}" for p in printed]
    nu = math.exp(res.log_nu["all"])
    assert f"{nu:.4f}" == f"{0.7468147:.4f}"
    # standard errors: mean-zero constraint (the ratings' own se column), then brand 1 as the reference
    se = res.ratings[res.ratings["metric"] == "strength"].set_index("model")["se"]
    assert [f"{se[str(i)]:.6f}" for i in range(1, 7)] == ["0.121949", "0.121818", "0.126823", "0.122003",
                                                          "0.127054", "0.126594"]
    info = rank.information(s, W, T, res.log_nu["all"])
    cov = np.linalg.pinv(info)
    assert f"{math.sqrt(cov[6, 6]):.6f}" == "0.082499"
    assert [f"{_contrast_se(info, k, 0):.4f}" for k in range(1, 6)] == ["0.1872", "0.1935", "0.1882", "0.1927",
                                                                        "0.1924"]


def test_davidson_two_players_closed_form():
    """Hand-derived: with two players the Davidson model is saturated, so the fit reproduces the observed
    shares. 6 wins, 2 losses, 4 ties: P(win)/P(loss) = exp(s_a - s_b) = 6/2, so s_a - s_b = log 3; and
    P(tie)/sqrt(P(win) P(loss)) = nu = 4 / sqrt(6 * 2) = 1.1547. Half a win: (6 + 2) : (2 + 2), log 2.
    Dropping ties: log 3 again."""
    d = pd.DataFrame({"a": ["p"], "b": ["q"], "w": [6], "l": [2], "t": [4]})
    comp = rank.comparisons_from_counts(d, player1="a", player2="b", wins1="w", wins2="l", ties="t")
    dav = rank.rank_models(comp, ties="davidson", n_boot=0)
    s = _strengths(dav)
    assert s["p"] - s["q"] == pytest.approx(math.log(3), abs=1e-9)
    assert math.exp(dav.log_nu["all"]) == pytest.approx(4 / math.sqrt(12), abs=1e-9)
    wp = dav.win_probability.set_index(["model", "opponent"])
    assert wp.loc[("p", "q"), "estimate"] == pytest.approx(6 / 12, abs=1e-9)
    assert wp.loc[("p", "q"), "p_tie"] == pytest.approx(4 / 12, abs=1e-9)
    half = _strengths(rank.rank_models(comp, ties="half", n_boot=0))
    assert half["p"] - half["q"] == pytest.approx(math.log(2), abs=1e-8)
    excl = _strengths(rank.rank_models(comp, ties="exclude", n_boot=0))
    assert excl["p"] - excl["q"] == pytest.approx(math.log(3), abs=1e-8)


# --------------------------------------------------------------------------- cross-checks with reference libraries
def test_bradley_terry_matches_a_statsmodels_logistic_glm():
    """choix's fit = a logistic GLM on +1/-1 design columns (Baltimore dropped), estimates and Wald SEs."""
    import statsmodels.api as sm

    d = pd.read_csv(FIX / "baseball.csv")
    res = rank.rank_models(_baseball(), ties="exclude", n_boot=0)
    teams = [t for t in res.models if t != "Baltimore"]
    X = np.zeros((len(d), len(teams)))
    for r, (h, a) in enumerate(zip(d["home.team"], d["away.team"])):
        if h in teams:
            X[r, teams.index(h)] = 1
        if a in teams:
            X[r, teams.index(a)] = -1
    glm = sm.GLM(d[["home.wins", "away.wins"]].to_numpy(), X, family=sm.families.Binomial()).fit()
    s = _strengths(res)
    np.testing.assert_allclose((s - s["Baltimore"])[teams].to_numpy(), glm.params, atol=1e-7)
    info = rank.information(s.to_numpy(), _win_matrix(_baseball(), res.models))
    b = res.models.index("Baltimore")
    ours_se = [_contrast_se(info, res.models.index(t), b) for t in teams]
    np.testing.assert_allclose(ours_se, glm.bse, rtol=1e-5)


def test_davidson_fit_matches_scipy_optimize():
    """The batched Newton fit equals a direct maximisation of Davidson's likelihood with scipy.optimize."""
    rng = np.random.default_rng(3)
    K = 5
    truth = rng.normal(0, 0.7, K)
    W, T = np.zeros((K, K)), np.zeros((K, K))
    for i in range(K):
        for j in range(i + 1, K):
            a, b, c = np.exp(truth[i]), np.exp(truth[j]), 0.6 * np.exp((truth[i] + truth[j]) / 2)
            w, l, t = rng.multinomial(30, np.array([a, b, c]) / (a + b + c))
            W[i, j], W[j, i], T[i, j], T[j, i] = w, l, t, t

    def nll(x):
        th = np.r_[0.0, x[:K - 1]]
        lam = x[-1]
        out = 0.0
        for i in range(K):
            for j in range(i + 1, K):
                z = np.array([th[i], th[j], lam + (th[i] + th[j]) / 2])
                lp = z - np.logaddexp.reduce(z)
                out -= W[i, j] * lp[0] + W[j, i] * lp[1] + T[i, j] * lp[2]
        return out

    ref = optimize.minimize(nll, np.zeros(K), method="BFGS", options={"gtol": 1e-9})
    theta, lam, conv = rank.fit_davidson(W, T)
    assert conv.all()
    ref_theta = np.r_[0.0, ref.x[:K - 1]]
    np.testing.assert_allclose(theta[0], ref_theta - ref_theta.mean(), atol=1e-5)
    assert lam[0] == pytest.approx(ref.x[-1], abs=1e-5)


def test_outcome_probabilities_are_a_distribution():
    theta = np.array([0.5, 0.0, -0.3])
    p_win, p_tie = rank.outcome_probabilities(theta, math.log(0.8))
    off = ~np.eye(3, dtype=bool)
    np.testing.assert_allclose((p_win + p_win.T + p_tie)[off], 1.0)
    np.testing.assert_allclose(p_tie, p_tie.T)
    bt, zero = rank.outcome_probabilities(theta)
    assert bt[0, 2] == pytest.approx(1 / (1 + math.exp(-0.8))) and not zero.any()
    # log nu = -inf (no ties) is Bradley-Terry
    np.testing.assert_allclose(rank.outcome_probabilities(theta, -np.inf)[0], bt)


# --------------------------------------------------------------------------- the comparisons table
def test_comparisons_read_verdicts_names_and_failures():
    df = pd.DataFrame({"case": ["c1", "c2", "c3", "c4", "c5", "c6"],
                       "m1": ["x", "x", "y", "x", "y", "x"], "m2": ["y", "z", "z", "z", "x", "y"],
                       "who": ["x", "b", "TIE", "Neither", "", "error"]})
    # lower-case a/b are read by the explicit vocabulary model-any-case (issue 22; the default reads A/B as written)
    c = rank.comparisons(df, columns={"item": "case", "model_a": "m1", "model_b": "m2", "verdict": "who"},
                         failed="error", verdict_terms="model-any-case")
    assert list(c.columns) == list(rank.COLUMNS)
    # a model's name, b, ties in any case, an empty cell and a failure token (missing verdicts)
    assert list(c["verdict"].fillna("-")) == ["A", "B", "tie", "tie", "-", "-"]
    assert list(c["status"]) == ["ok"] * 4 + ["failed"] * 2
    assert set(c["judge"]) == {"all"} and list(c["unit"]) == list(c["item"])


def test_comparisons_errors_name_the_column_and_rows():
    df = pd.DataFrame({"item": ["a", "b", "c"], "model_a": ["x", "x", "y"], "model_b": ["y", "y", "y"],
                       "verdict": ["A", "maybe", "B"]})
    with pytest.raises(SchemaError) as e:
        rank.comparisons(df.iloc[:2])
    assert e.value.column == "verdict" and e.value.rows == [1] and "failed" in str(e.value)
    with pytest.raises(SchemaError) as e:
        rank.comparisons(df.assign(verdict="A"))
    assert e.value.rows == [2] and "itself" in str(e.value)
    with pytest.raises(SchemaError) as e:  # the error names your column, not the canonical one
        rank.comparisons(df.rename(columns={"verdict": "who"}), columns={"verdict": "winner"})
    assert e.value.column == "winner" and "missing column" in str(e.value)


def test_comparisons_old_column_keywords_still_work_and_warn():
    """Issue 24: columns= replaces item=, model_a= ...; the old keywords work for one release, with a warning."""
    df = rank.demo_comparisons(n_items=12)
    with pytest.warns(DeprecationWarning, match="columns="):
        old = rank.comparisons(df, item="case_id", model_a="response_a_model", model_b="response_b_model",
                               verdict="winner", judge="physician_group")
    pd.testing.assert_frame_equal(old, rank.comparisons(df, columns=_DEMO_COLUMNS))
    with pytest.warns(DeprecationWarning, match="judge_name"):
        old = rank.comparisons_from_counts(pd.DataFrame({"a": ["x"], "b": ["y"], "w": [1], "l": [0]}), player1="a",
                                           player2="b", wins1="w", wins2="l", judge="j")
    assert set(old["judge"]) == {"j"}


def test_read_comparisons_takes_columns_and_the_old_keywords(tmp_path):
    p = tmp_path / "demo.csv"
    rank.demo_comparisons(n_items=12).to_csv(p, index=False)
    want = rank.comparisons(rank.demo_comparisons(n_items=12), columns=_DEMO_COLUMNS)
    got = rank.read_comparisons(p, columns=_DEMO_COLUMNS)
    pd.testing.assert_frame_equal(got.drop(columns="raw"), want.drop(columns="raw"))
    with pytest.warns(DeprecationWarning, match="columns="):
        old = rank.read_comparisons(p, item="case_id", model_a="response_a_model", model_b="response_b_model",
                                    verdict="winner", judge="physician_group")
    pd.testing.assert_frame_equal(old, got)
    with pytest.raises(TypeError, match="itme"):
        rank.read_comparisons(p, itme="case_id")


def test_read_comparisons_keeps_a_literal_na_verdict(tmp_path):
    p = tmp_path / "v.csv"
    pd.DataFrame({"item": ["a", "b"], "model_a": ["x", "x"], "model_b": ["y", "y"],
                  "verdict": ["A", "NA"]}).to_csv(p, index=False)
    with pytest.raises(SchemaError) as e:
        rank.read_comparisons(p)
    assert str(p) in str(e.value) and e.value.rows == [1]
    c = rank.read_comparisons(p, failed=["NA"])
    assert list(c["status"]) == ["ok", "failed"] and set(c["judge"]) == {"all"}


def test_pandalm_comparisons_from_the_bundle():
    """PandaLM's README (data/pandalm/SOURCE.md): majority labels 0 (tie): 105, 1: 422, 2: 472; GPT-3.5 has 25
    unparseable replies; the 999 pairs answer 170 distinct instructions."""
    from medeval_kit.datasets import load_pandalm

    c = rank.comparisons_from_bundle(load_pandalm(), majority_of=["annotator1", "annotator2", "annotator3"],
                                     unit="question")
    maj = c[c["judge"] == "human_majority"]
    assert maj["verdict"].value_counts().to_dict() == {"B": 472, "A": 422, "tie": 105}
    gpt = c[c["judge"] == "gpt-3.5-turbo"]
    assert (gpt["status"] == "failed").sum() == 25 and len(gpt) == 999
    assert maj["unit"].nunique() == 170
    assert sorted(set(c["model_a"]) | set(c["model_b"])) == ["bloom-7b", "cerebras-gpt-6.7B", "llama-7b", "opt-7b",
                                                             "pythia-6.9b"]


# --------------------------------------------------------------------------- ratings with bootstrap CIs
def _demo(**kw) -> pd.DataFrame:
    return rank.comparisons(rank.demo_comparisons(**kw), columns=_DEMO_COLUMNS)


_DEMO_COLUMNS = {"item": "case_id", "model_a": "response_a_model", "model_b": "response_b_model",
                 "verdict": "winner", "judge": "physician_group"}


def test_ratings_fit_the_result_contract_and_count_failures():
    c = _demo(seed=1)
    res = rank.rank_models(c, n_boot=100, seed=0)
    for table in (res.ratings, res.win_probability):
        assert check_result(table) == [] and not table.attrs
    for j in res.judges:
        cj, rj = c[c["judge"] == j], res.ratings[res.ratings["judge"] == j]
        assert (rj["n_failed"] == (cj["status"] == "failed").sum()).all()
        assert (rj["n_items"] == (cj["status"] == "ok").sum()).all()
    ranks = res.ratings[res.ratings["metric"] == "rank"]
    assert ranks["ci_low"].between(1, 4).all() and (ranks["ci_low"] <= ranks["ci_high"]).all()
    s = res.ratings[res.ratings["metric"] == "strength"]
    assert ((s["ci_low"] <= s["estimate"]) & (s["estimate"] <= s["ci_high"])).all()
    assert s.groupby("judge")["estimate"].sum().abs().max() < 1e-9  # mean-zero per judge
    assert "physicians" in res.summary() and res.wide("rank").shape == (4, 2)


def test_bootstrap_resamples_units_with_replacement():
    """The CI is the percentile interval of refits on units drawn with replacement (stats.item_draws): redone
    by hand here with clusters of two items per unit, ties as half a win."""
    from medeval_kit.stats import item_draws, percentile_interval

    c = _demo(seed=8, judges={"physicians": 0.0})
    c["unit"] = "u" + (c["item"].str[4:].astype(int) // 2).astype(str)  # two items per unit
    res = rank.rank_models(c, ties="half", n_boot=40, seed=3)
    units = sorted(set(c["unit"]))
    draws = item_draws(len(units), 40, np.random.default_rng(3))
    models = list(res.models)
    ok = c[c["status"] == "ok"]
    reps = []
    for row in draws:
        W = np.zeros((4, 4))
        for u in row:
            for a, b, v in ok.loc[ok["unit"] == units[u], ["model_a", "model_b", "verdict"]].itertuples(index=False):
                i, j = models.index(a), models.index(b)
                if v == "tie":
                    W[i, j] += 0.5
                    W[j, i] += 0.5
                else:
                    W[(i, j) if v == "A" else (j, i)] += 1
        reps.append(rank.fit_bradley_terry(W))
    reps = np.array(reps)
    s = res.ratings[res.ratings["metric"] == "strength"].set_index("model")
    for k, m in enumerate(models):
        lo, hi = percentile_interval(reps[:, k])
        assert s.loc[m, "ci_low"] == pytest.approx(lo, abs=1e-8) and s.loc[m, "ci_high"] == pytest.approx(hi, abs=1e-8)


def test_planted_strengths_are_recovered():
    """A judge that picks the winner by the planted strengths (ties at a fixed rate, left out: Bradley-Terry is
    then the true model): over 8 seeded data sets the 95% CIs cover the planted mean-zero strengths about 95%
    of the time (at least 28 of 32), and the point estimates put the models in the planted order."""
    planted = {"model_w": 0.8, "model_x": 0.3, "model_y": 0.0, "model_z": -0.6}
    truth = pd.Series(planted) - np.mean(list(planted.values()))
    covered, ordered = 0, 0
    for seed in range(8):
        res = rank.rank_models(_demo(n_items=600, judges={"physicians": 0.0}, seed=seed), ties="exclude",
                               n_boot=200, seed=seed)
        s = res.ratings[res.ratings["metric"] == "strength"].set_index("model")
        covered += int(((s["ci_low"] <= truth) & (truth <= s["ci_high"])).sum())
        ordered += list(s["estimate"].sort_values(ascending=False).index) == list(planted)
    assert covered >= 28 and ordered >= 6, (covered, ordered)


def test_judges_share_the_bootstrap_draws():
    """A copy of a judge under another name gets the same draws: agreement exactly 1 with a [1, 1] CI, and its
    adjacent pairs flip as often as the original's."""
    c = _demo(seed=4)
    phys = c[c["judge"] == "physicians"]
    res = rank.rank_models(pd.concat([phys, phys.assign(judge="copy")]), n_boot=200, seed=0)
    np.testing.assert_array_equal(res.draws["physicians"], res.draws["copy"])
    ag = rank.rank_agreement(res, "physicians").set_index("metric")
    assert (ag.loc[["kendall_tau", "spearman_rho"], ["estimate", "ci_low", "ci_high"]] == 1.0).all().all()
    fl = rank.rank_flips(res, reference="physicians")
    a, b = (fl[fl["judge"] == j]["estimate"].to_numpy() for j in ("physicians", "copy"))
    np.testing.assert_array_equal(a, b)


def test_rank_agreement_on_a_known_swap():
    """The judge swaps the middle two of four models: Kendall tau = (5 - 1) / 6, Spearman rho = 1 - 6*2/(4*15)
    = 0.8, top-1 overlap 1 and top-2 overlap 1/2, as scipy computes them."""
    rows = []
    order = {"ref": ["a", "b", "c", "d"], "judge": ["a", "c", "b", "d"]}
    for j, ms in order.items():
        for x in range(4):
            for y in range(x + 1, 4):  # the better model wins 3 of 4 games
                rows.append({"j": j, "p1": ms[x], "p2": ms[y], "w1": 3 * (y - x), "w2": 1})
    comp = pd.concat([rank.comparisons_from_counts(g, player1="p1", player2="p2", wins1="w1", wins2="w2", judge_name=j)
                      for j, g in pd.DataFrame(rows).groupby("j")])
    res = rank.rank_models(comp, ties="exclude", n_boot=50, seed=0)
    ag = rank.rank_agreement(res, "ref", top_k=[1, 2]).set_index("metric")["estimate"]
    x, y = res.point["judge"], res.point["ref"]
    assert ag["kendall_tau"] == pytest.approx(4 / 6) == pytest.approx(stats.kendalltau(x, y).statistic)
    assert ag["spearman_rho"] == pytest.approx(0.8) == pytest.approx(stats.spearmanr(x, y).statistic)
    assert ag["top_1_overlap"] == 1.0 and ag["top_2_overlap"] == 0.5
    fl = rank.rank_flips(res, reference="ref")
    mine = fl[fl["judge"] == "judge"].set_index("rank")
    assert not mine.loc[2, "judge_agrees"] and mine.loc[2, "estimate"] > 0.5  # b > c is reversed by the judge
    assert mine.loc[1, "judge_agrees"] and mine.loc[3, "judge_agrees"]


def test_two_models_have_no_rank_correlation():
    d = pd.DataFrame({"a": ["x", "x"], "b": ["y", "y"], "w": [8, 3], "l": [2, 7], "j": ["ref", "other"]})
    comp = pd.concat([rank.comparisons_from_counts(g, player1="a", player2="b", wins1="w", wins2="l", judge_name=j)
                      for j, g in d.groupby("j")])
    res = rank.rank_models(comp, ties="exclude", n_boot=100, seed=0)
    ag = rank.rank_agreement(res, "ref")
    assert ag["estimate"].isna().all() and ag["note"].str.contains("3 or more").all()
    fl = rank.rank_flips(res, reference="ref").set_index("judge")
    assert not fl.loc["other", "judge_agrees"] and fl.loc["other", "estimate"] > 0.5


def test_no_finite_mle_is_nan_with_a_reason():
    """A model that never loses has strength +infinity: NaN with the reason, the other judge is unaffected;
    bootstrap draws without a finite MLE are counted in the note."""
    d = pd.DataFrame({"a": ["x", "y", "x", "y"], "b": ["y", "z", "y", "z"], "w": [5, 4, 5, 4], "l": [0, 2, 1, 2],
                      "j": ["bad", "bad", "good", "good"]})
    comp = pd.concat([rank.comparisons_from_counts(g, player1="a", player2="b", wins1="w", wins2="l", judge_name=j)
                      for j, g in d.groupby("j")])
    extra = rank.comparisons_from_counts(pd.DataFrame({"a": ["z"], "b": ["x"], "w": [1], "l": [0]}), player1="a",
                                         player2="b", wins1="w", wins2="l", judge_name="good")
    res = rank.rank_models(pd.concat([comp, extra.assign(item="extra", unit="extra")]), ties="exclude", n_boot=200,
                           seed=0)
    bad = res.ratings[(res.ratings["judge"] == "bad") & (res.ratings["metric"] == "strength")]
    assert bad["estimate"].isna().all() and bad["note"].str.contains("not strongly connected").all()
    good = res.ratings[(res.ratings["judge"] == "good") & (res.ratings["metric"] == "strength")]
    assert good["estimate"].notna().all()
    assert good["note"].str.match(r"\d+ of 200 bootstrap draws had no finite MLE").all()


# --------------------------------------------------------------------------- Elo
def test_elo_by_hand_and_its_order_dependence():
    """k = 16, both at 1000: expected score 1/2, the winner gains 8. Games A>B then B>C, against B>C then A>B:
    after A>B, B has 992; B>C then gives B 16 * (1 - 1/(1 + 10**(-8/400))) = 7.63 ... (by hand below);
    in the other order B beats C at 1000 vs 1000 (+8) and then loses to A from 1008 (expected 1/(1+10**(-8/400))),
    so the ratings differ."""
    def comp(games):
        return pd.DataFrame({"item": [f"g{i}" for i in range(len(games))], "unit": [f"g{i}" for i in range(len(games))],
                             "judge": "j", "model_a": [g[0] for g in games], "model_b": [g[1] for g in games],
                             "verdict": "A", "status": "ok", "raw": "A"})
    one = rank.elo_ratings(comp([("A", "B")]), k=16, n_orders=0).set_index("model")["rating"]
    assert one["A"] == pytest.approx(1008) and one["B"] == pytest.approx(992)
    first = rank.elo_ratings(comp([("A", "B"), ("B", "C")]), k=16, n_orders=0).set_index("model")["rating"]
    second = rank.elo_ratings(comp([("B", "C"), ("A", "B")]), k=16, n_orders=0).set_index("model")["rating"]
    e = lambda ra, rb: 1 / (1 + 10 ** ((rb - ra) / 400))  # noqa: E731
    b_first = 992 + 16 * (1 - e(992, 1000))
    assert first["B"] == pytest.approx(b_first)
    b_second = 1008 - 16 * (1 - e(1000, 1008))
    assert second["B"] == pytest.approx(b_second) and first["B"] != pytest.approx(second["B"])


def test_elo_spread_over_shuffled_orders():
    c = _demo(seed=5)
    elo = rank.elo_ratings(c, n_orders=10, seed=0)
    assert set(elo["order"]) == set(range(11)) and len(elo) == 2 * 11 * 4
    again = rank.elo_ratings(c, n_orders=10, seed=0)
    pd.testing.assert_frame_equal(elo, again)  # seeded
    spread = rank.elo_spread(elo)
    assert (spread["rating_range"] > 0).all()  # every model's rating moves with the order
    assert (spread["rating_min"] <= spread["rating_table_order"]).all()
    assert (spread["rating_table_order"] <= spread["rating_max"]).all()
    # Elo redistributes points: the ratings of each order sum to n_models * initial
    assert np.allclose(elo.groupby(["judge", "order"])["rating"].sum(), 4 * 1000)


# --------------------------------------------------------------------------- plots
def test_rank_plots_draw_the_tables(tmp_path):
    from medeval_kit.viz import save_figure
    from medeval_kit.viz.rank import plot_elo_orders, plot_rank_agreement, plot_ratings, plot_win_probability

    c = _demo(seed=6)
    res = rank.rank_models(c, n_boot=50, seed=0)
    ag = rank.rank_agreement(res, "physicians")
    fl = rank.rank_flips(res, reference="physicians")
    figs = {"ratings": plot_ratings(res.ratings), "agreement": plot_rank_agreement(ag, fl),
            "wp": plot_win_probability(res.win_probability, "physicians"),
            "elo": plot_elo_orders(rank.elo_ratings(c, n_orders=3), "physicians")}
    assert len(figs["agreement"].axes) == 2
    ylabels = [t.get_text() for t in figs["ratings"].axes[0].get_yticklabels()]
    assert ylabels[-1] == res.wide()["physicians"].idxmax()  # strongest on top
    for name, fig in figs.items():
        assert save_figure(fig, name, tmp_path)["png"].exists()


# --------------------------------------------------------------------------- medeval rank
def _demo_file(tmp_path: Path) -> Path:
    p = tmp_path / "pairs.csv"
    rank.demo_comparisons(seed=7).to_csv(p, index=False)
    return p


_COLS = ["--item", "case_id", "--model-a", "response_a_model", "--model-b", "response_b_model", "--verdict", "winner",
         "--judge", "physician_group"]


def test_cli_rank_table_csv_and_json(tmp_path, capsys):
    from medeval_kit.cli import main

    p = _demo_file(tmp_path)
    assert main(["rank", str(p), *_COLS, "--n-boot", "50", "--reference", "physicians"]) == 0
    out = capsys.readouterr()
    assert "Ratings (ties: Davidson" in out.out and "Rank agreement with physicians" in out.out
    assert "kendall_tau" in out.out and "failed verdict(s) counted" in out.err
    assert main(["rank", str(p), *_COLS, "--n-boot", "50", "--ties", "half", "--format", "csv"]) == 0
    from io import StringIO

    t = pd.read_csv(StringIO(capsys.readouterr().out))
    assert check_result(t) == [] and set(t["ties_policy"]) == {"half"} and set(t["judge"]) == {"physicians",
                                                                                             "llm_judge"}
    assert main(["rank", str(p), *_COLS, "--n-boot", "20", "--show", "ratings", "win-prob", "elo",
                 "--format", "json"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert set(js) == {"ratings", "win_prob", "elo"} and len(js["win_prob"]) == 2 * 4 * 3


def test_cli_rank_errors_are_one_line(tmp_path, capsys):
    from medeval_kit.cli import main

    p = _demo_file(tmp_path)
    assert main(["rank", str(p), "--item", "case_id"]) == 2
    err = capsys.readouterr().err
    assert str(p) in err and "missing column" in err and err.count("\n") == 1
    assert main(["rank", str(p), *_COLS, "--reference", "nurses", "--n-boot", "0"]) == 2
    assert "nurses" in capsys.readouterr().err
    assert main(["rank", str(p), *_COLS, "--format", "csv", "--show", "ratings", "elo"]) == 2
    assert "one table" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    pd.read_csv(p).assign(winner=lambda d: d["winner"].fillna("?")).to_csv(bad, index=False)
    assert main(["rank", str(bad), *_COLS]) == 2
    err = capsys.readouterr().err
    assert "'winner'" in err and "rows [" in err and "--failed" in err
