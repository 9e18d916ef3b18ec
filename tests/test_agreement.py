"""Tests of medeval_kit.agreement: reference cross-checks, designs, errors, CLI (published numbers: test_repro)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from medeval_kit import agreement as ag
from medeval_kit import repro, viz
from medeval_kit.agreement import AgreementError
from medeval_kit.datasets import load_medqg_table19, load_pandalm
from medeval_kit.datasets.synthetic import synthetic_annotations
from medeval_kit.errors import DataFileError, SchemaError

TOL = 1e-9


def long_from_matrix(M, missing=None):
    """items x raters matrix -> long table; ``missing`` (a value) marks absent labels."""
    n, r = M.shape
    df = pd.DataFrame({"item": np.repeat([f"i{i:03d}" for i in range(n)], r),
                       "rater": np.tile([f"r{j}" for j in range(r)], n), "label": M.ravel()})
    if missing is not None:
        df = df[df["label"] != missing]
    return df.reset_index(drop=True)


@pytest.fixture(scope="module")
def pandalm():
    return load_pandalm().annotations


@pytest.fixture(scope="module")
def medqg():
    return load_medqg_table19().annotations


# --------------------------------------------------------------------------- reference libraries


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_matches_sklearn(seed, weights):
    rng = np.random.default_rng(seed)
    K = 3 + seed % 3
    a = rng.integers(0, K, 150)
    b = np.where(rng.random(150) < 0.5, a, rng.integers(0, K, 150))
    df = long_from_matrix(np.column_stack([a, b]))
    ours = ag.cohen_kappa(df, weights=weights, categories=list(range(K)), n_boot=0).estimate
    ref = cohen_kappa_score(a, b, weights=weights, labels=list(range(K)))
    assert abs(ours - ref) < TOL


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_analytic_se_matches_statsmodels(seed, weights):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, 120)
    b = np.where(rng.random(120) < 0.6, a, rng.integers(0, 4, 120))
    table = np.zeros((4, 4))
    np.add.at(table, (a, b), 1)
    sm = sm_cohens_kappa(table, wt=weights)
    res = ag.cohen_kappa(long_from_matrix(np.column_stack([a, b])), weights=weights, ci_method="analytic",
                         categories=[0, 1, 2, 3])
    assert abs(res.estimate - sm["kappa"]) < TOL
    z = sps.norm.ppf(0.975)
    # statsmodels' std_kappa is the Fleiss-Cohen-Everitt large-sample SE, as ours.
    assert abs((res.ci_high - res.estimate) / z - sm["std_kappa"]) < 1e-9
    assert "analytic" in res.ci_method


@pytest.mark.parametrize("seed", range(4))
def test_fleiss_matches_statsmodels(seed):
    rng = np.random.default_rng(seed)
    n, R, K = 80, 3 + seed, 4
    truth = rng.integers(0, K, n)
    M = np.where(rng.random((n, R)) < 0.5, truth[:, None], rng.integers(0, K, (n, R)))
    counts = np.stack([(k == M).sum(1) for k in range(K)], 1)
    ours = ag.fleiss_kappa(long_from_matrix(M), categories=list(range(K)), n_boot=0).estimate
    assert abs(ours - sm_fleiss_kappa(counts)) < TOL
    # Brennan-Prediger equals statsmodels' 'randolph' (free-marginal) many-rater kappa.
    bp = ag.brennan_prediger(long_from_matrix(M), categories=list(range(K)), n_boot=0).estimate
    assert abs(bp - sm_fleiss_kappa(counts, method="randolph")) < TOL


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("seed", range(3))
def test_alpha_matches_krippendorff(level, seed):
    rng = np.random.default_rng(seed)
    n, R, K = 60, 4, 5
    truth = rng.integers(1, K + 1, n)
    M = np.where(rng.random((n, R)) < 0.6, truth[:, None], rng.integers(1, K + 1, (n, R))).astype(float)
    M[rng.random(M.shape) < 0.2] = np.nan
    df = long_from_matrix(M)
    df = df[df["label"].notna()].reset_index(drop=True)
    df["label"] = df["label"].astype(int)
    ours = ag.krippendorff_alpha(df, level=level, n_boot=0).estimate
    ref = krippendorff.alpha(reliability_data=M.T, level_of_measurement=level)
    assert abs(ours - ref) < TOL


def test_alpha_bootstrap_replicates_equal_a_loop_of_the_oracle():
    """Our vectorised replicates equal krippendorff.alpha on the same item resamples."""
    from medeval_kit.agreement.alpha import alpha_stat
    from medeval_kit.agreement.engine import replicates

    rng = np.random.default_rng(7)
    M = rng.integers(0, 3, (50, 4)).astype(float)
    M[rng.random(M.shape) < 0.15] = np.nan
    codes = np.where(np.isnan(M), -1, M).astype(int)
    st = alpha_stat(codes, 3, "nominal")
    reps = replicates([st], 20, seed=3)[:, 0]
    g = np.random.default_rng(3)
    idx = g.integers(0, 50, size=(20, 50))  # the draws replicates() makes (one chunk)
    loop = [krippendorff.alpha(reliability_data=M[row].T, level_of_measurement="nominal") for row in idx]
    assert np.allclose(reps, loop, atol=1e-9)


def test_two_rater_scott_equals_fleiss_and_ac1_by_hand():
    # 2x2 table a=40 (both yes), b=10, c=5, d=45 (both no), n=100.
    M = np.array([[1, 1]] * 40 + [[1, 0]] * 10 + [[0, 1]] * 5 + [[0, 0]] * 45)
    df = long_from_matrix(M)
    pa = 0.85
    # Scott: pooled p(yes) = (50 + 45)/200 = 0.475; pe = 0.475^2 + 0.525^2 = 0.50125
    assert abs(ag.scott_pi(df, n_boot=0).estimate - (pa - 0.50125) / (1 - 0.50125)) < TOL
    assert abs(ag.fleiss_kappa(df, n_boot=0).estimate - (pa - 0.50125) / (1 - 0.50125)) < TOL
    # Gwet AC1: pe = 2 * 0.475 * 0.525 / (2 - 1) = 0.49875
    assert abs(ag.gwet_ac1(df, n_boot=0).estimate - (pa - 0.49875) / (1 - 0.49875)) < TOL
    # PABAK = 2 PA - 1 = 0.7 = Brennan-Prediger with K = 2
    assert abs(ag.pabak(df, n_boot=0).estimate - 0.7) < TOL
    assert abs(ag.brennan_prediger(df, n_boot=0).estimate - 0.7) < TOL
    # Many-rater AC1 on the same two raters gives the same value.
    M3 = np.column_stack([M, M[:, 0]])
    assert np.isfinite(ag.gwet_ac1(long_from_matrix(M3), n_boot=0).estimate)


def test_gwet_ac2_with_identity_weights_is_ac1():
    rng = np.random.default_rng(1)
    M = rng.integers(0, 3, (100, 3))
    df = long_from_matrix(M)
    ac1 = ag.gwet_ac1(df, n_boot=0).estimate
    ac2 = ag.gwet_ac2(df, weights=None, n_boot=0)  # defaults to quadratic weights
    assert ac2.metric == "gwet_ac2_quadratic" and np.isfinite(ac2.estimate) and ac2.estimate != ac1


def test_icc_shrout_fleiss_1979_table():
    # Shrout & Fleiss (1979), Table 2: 6 targets x 4 judges; published ICCs in their Table 4.
    X = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]])
    df = long_from_matrix(X)
    pub = {"icc1": 0.17, "icc2": 0.29, "icc3": 0.71, "icc1k": 0.44, "icc2k": 0.62, "icc3k": 0.91}
    for form, v in pub.items():
        r = ag.icc(df, form=form)
        assert round(r.estimate, 2) == v, form
        assert r.ci_low < r.estimate < r.ci_high
    boot = ag.icc(df, form="icc3", ci_method="percentile", n_boot=200)  # 6 targets: too few to resample
    assert boot.ci_method == "" and "CI not computed: n_items = 6 < 10" in boot.note
    boot = ag.icc(long_from_matrix(np.vstack([X, X + 1])), form="icc3", ci_method="percentile", n_boot=200)
    assert "bootstrap" in boot.ci_method and boot.ci_low < boot.estimate < boot.ci_high


def test_correlations_match_scipy():
    rng = np.random.default_rng(2)
    x = rng.integers(1, 6, 80)
    y = np.clip(x + rng.integers(-1, 2, 80), 1, 5)
    df = long_from_matrix(np.column_stack([x, y]))
    assert abs(ag.pearson(df, n_boot=0).estimate - sps.pearsonr(x, y)[0]) < TOL
    assert abs(ag.spearman(df, n_boot=0).estimate - sps.spearmanr(x, y)[0]) < TOL
    assert abs(ag.kendall(df, n_boot=0).estimate - sps.kendalltau(x, y)[0]) < TOL
    r = ag.spearman(df, n_boot=100)
    assert r.ci_low < r.estimate < r.ci_high
    assert "Fisher" in ag.pearson(df, ci_method="analytic").ci_method


def test_accuracy_and_macro_f1():
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(3)
    ref = rng.integers(0, 3, 90)
    pred = np.where(rng.random(90) < 0.7, ref, rng.integers(0, 3, 90))
    df = long_from_matrix(np.column_stack([ref, pred]))
    assert abs(ag.accuracy(df, raters=["r0", "r1"], n_boot=0).estimate - (ref == pred).mean()) < TOL
    assert abs(ag.macro_f1(df, raters=["r0", "r1"], n_boot=0).estimate - f1_score(ref, pred, average="macro")) < TOL


# --------------------------------------------------------------------------- uncertainty


def test_ci_is_seeded_and_bca_works():
    df = synthetic_annotations(n_items=150, n_raters=2, kappa=0.5, seed=1)
    a = ag.cohen_kappa(df, n_boot=300, seed=5)
    b = ag.cohen_kappa(df, n_boot=300, seed=5)
    c = ag.cohen_kappa(df, n_boot=300, seed=6)
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high) != (c.ci_low, c.ci_high)
    bca = ag.cohen_kappa(df, n_boot=300, seed=5, ci_method="bca")
    assert "BCa" in bca.ci_method and bca.ci_low < bca.estimate < bca.ci_high
    fr = a.to_frame()
    # the result contract first, then the agreement extras
    assert list(fr.columns[:8]) == ["metric", "estimate", "ci_low", "ci_high", "ci_method", "n_items", "n_failed",
                                    "note"]
    assert {"n_raters", "n_missing", "raters", "level"} <= set(fr.columns) and fr["n_failed"][0] == 0
    assert "cohen_kappa" in a.summary() and "<table" in a._repr_html_()


def test_planted_kappa_coverage():
    """The true kappa falls inside the 95% CI in about 95% of seeded replications."""
    hits = []
    for seed in range(40):
        df = synthetic_annotations(n_items=150, n_raters=3, kappa=0.6, seed=seed)
        r = ag.fleiss_kappa(df, n_boot=300, seed=seed)
        hits.append(r.ci_low <= 0.6 <= r.ci_high)
    # Binomial(40, 0.95): P(X < 33) < 0.01.
    assert np.mean(hits) >= 33 / 40


def test_single_category_gives_nan_with_reason():
    df = long_from_matrix(np.array([["A", "A"]] * 10))
    r = ag.cohen_kappa(df, n_boot=50)
    assert np.isnan(r.estimate) and np.isnan(r.ci_low) and "undefined" in r.note
    assert ag.percent_agreement(df, n_boot=0).estimate == 1.0


def test_undefined_resamples_are_counted():
    # One disagreement: many resamples miss it and kappa stays defined, but some resamples
    # contain only 'A'-'A' rows, where kappa is undefined (10 items: the fewest a bootstrap CI is made from).
    M = np.array([["A", "A"]] * 8 + [["B", "B"]] + [["A", "B"]])
    r = ag.cohen_kappa(long_from_matrix(M), n_boot=400, seed=0)
    assert "resamples undefined" in r.note


# --------------------------------------------------------------------------- designs


def test_pairwise_matrix_majority_and_ceiling(pandalm):
    hum = ["annotator1", "annotator2", "annotator3"]
    pm = ag.pairwise_matrix(pandalm, raters=hum, n_boot=200)
    assert list(pm.columns[:10]) == ["rater_a", "rater_b", "metric", "estimate", "ci_low", "ci_high", "ci_method",
                                     "n_items", "n_failed", "note"]
    assert len(pm) == 3 and (pm["n_items"] == 999).all()
    mv = ag.majority_vote(pandalm, raters=hum)
    assert mv["label"].value_counts().to_dict() == {"B": 472, "A": 422, "tie": 105}
    loo = ag.human_ceiling(pandalm, hum, form="loo", n_boot=200)
    pw = ag.human_ceiling(pandalm, hum, form="pairwise", n_boot=200)
    assert len(loo.details) == 3 and len(pw.details) == 3
    assert abs(pw.estimate - pm["estimate"].mean()) < TOL
    assert loo.ci_low < loo.estimate < loo.ci_high


def test_majority_vote_policies():
    df = pd.DataFrame({"item": ["1"] * 4 + ["2"] * 3 + ["3"] * 2, "rater": list("abcd") + list("abc") + list("ab"),
                       "label": ["x", "x", "y", "y", "x", "x", "y", "z", "abstain"]})
    na = ag.majority_vote(df, abstain=["abstain"]).set_index("item")
    assert pd.isna(na.loc["1", "label"]) and na.loc["1", "status"] == "tie"
    assert na.loc["2", "label"] == "x" and na.loc["3", "label"] == "z" and na.loc["3", "n_votes"] == 1
    first = ag.majority_vote(df, tie_policy="first").set_index("item")
    assert first.loc["1", "label"] == "x"
    strict = ag.majority_vote(df, rule="strict", abstain=["abstain"]).set_index("item")
    assert strict.loc["2", "label"] == "x" and strict.loc["3", "label"] == "z"
    rnd = ag.majority_vote(df, tie_policy="random", seed=1).set_index("item")
    assert rnd.loc["1", "label"] in ("x", "y")


def test_judge_vs_ceiling_paired_test():
    df = synthetic_annotations(n_items=300, n_raters=5, kappa=0.6, seed=3)
    hum = ["r1", "r2", "r3", "r4"]
    # a perfect judge: copies the majority of the humans
    mv = ag.majority_vote(df, raters=hum, tie_policy="first")
    judge = mv.assign(rater="oracle", rater_kind="llm", criterion="overall")[df.columns]
    both = pd.concat([df, judge], ignore_index=True)
    out = ag.judge_vs_ceiling(both, humans=hum, judges=["r5", "oracle"], n_boot=300)
    row = out.set_index("rater")
    assert row.loc["oracle", "delta"] > 0 and row.loc["oracle", "p_value"] < 0.05
    assert row.loc["r5", "ci_overlap"] in (True, False)
    assert set(out["role"]) == {"ceiling", "judge"}


def test_ensembles_256_for_nine_judges():
    study = repro.load_study("synthetic")
    ens = ag.ensembles(study.annotations, study.judges, study.humans)
    assert len(ens) == 256 and sorted(ens["size"].unique()) == [1, 3, 5, 7, 9]
    assert ens["cohen_kappa"].is_monotonic_decreasing


def test_prevalence_bias_and_landis_koch():
    # Kappa paradox: 90 both 'no', 5 both 'yes'... PA = 0.95 yet kappa is low.
    M = np.array([["no", "no"]] * 90 + [["no", "yes"]] * 5 + [["yes", "no"]] * 4 + [["yes", "yes"]] * 1)
    t = ag.prevalence_bias_indices(long_from_matrix(M)).set_index("category")
    assert abs(t.loc["overall", "percent_agreement"] - 0.91) < TOL
    assert t.loc["overall", "cohen_kappa"] < 0.2
    # a (no,no) = 90, d (yes,yes) = 1 -> prevalence index |90 - 1|/100
    assert abs(t.loc["no", "prevalence_index"] - 0.89) < TOL and abs(t.loc["no", "bias_index"] - 0.01) < TOL
    assert ag.landis_koch(0.226) == "fair" and ag.landis_koch(-0.1) == "poor" and ag.landis_koch(0.0) == "slight"
    assert ag.landis_koch(pd.Series([0.9, np.nan])).tolist()[0] == "almost perfect"


def test_agreement_table_by_criterion():
    a = synthetic_annotations(n_items=60, seed=1, criterion="c1")
    b = synthetic_annotations(n_items=60, seed=2, criterion="c2")
    t = ag.agreement_table(pd.concat([a, b]), metrics=["fleiss_kappa", "krippendorff_alpha"], n_boot=50,
                           landis=True)
    assert len(t) == 4 and set(t["criterion"]) == {"c1", "c2"} and "landis_koch" in t.columns


# --------------------------------------------------------------------------- published numbers


def test_pandalm_published_kappas(pandalm):
    for (a, b), pub in zip(itertools.combinations(["annotator1", "annotator2", "annotator3"], 2), (0.85, 0.88, 0.86)):
        assert round(ag.cohen_kappa(pandalm, raters=[a, b], n_boot=0).estimate, 2) == pub


def test_medqg_table19_recomputed(medqg):
    # Valid (position-consistent) items and PA with Expert X, recounted from Table 19.
    expect = {"gpt-4o": (23, 5), "gpt-4": (26, 12), "gpt-3.5-turbo": (23, 11), "claude-3-opus": (21, 5),
              "claude-3.5-sonnet": (17, 11), "claude-3-haiku": (23, 15)}
    out = ag.judge_vs_ceiling(medqg, reference="expert_x", judges=list(expect), metric="percent_agreement",
                              abstain=["inconsistent"], n_boot=0).set_index("rater")
    for j, (n, agree) in expect.items():
        assert out.loc[j, "n_items"] == n
        assert abs(out.loc[j, "estimate"] - agree / n) < TOL


def test_no_paper_reproduction_in_the_agreement_api():
    # the papers' printed numbers live in medeval_kit.repro (tests/test_repro.py)
    assert not {"published_numbers", "printed_arithmetic", "longform_table3_kappa", "papers_for",
                "load_study"} & set(ag.__all__)  # the bundled study panels load through repro.load_study
    # kappa from printed P and C stays generic: (0.57 - 0.42) / (1 - 0.42) = 0.15 / 0.58; C > P gives kappa < 0
    assert abs(ag.kappa_from_p_c(0.57, 0.42) - 0.15 / 0.58) < TOL and ag.kappa_from_p_c(0.81, 0.82) < 0


# --------------------------------------------------------------------------- bad input


def test_errors_name_the_offender():
    df = long_from_matrix(np.array([["A", "B"], ["B", "B"]]))
    with pytest.raises(SchemaError, match=r"'C'.*outside the declared categories|label"):
        ag.cohen_kappa(df, categories=["A", "C"], n_boot=0)
    dup = pd.concat([df, df.iloc[[0]]], ignore_index=True)
    with pytest.raises(SchemaError, match=r"duplicate.*item 'i000' rater 'r0'"):
        ag.cohen_kappa(dup, n_boot=0)
    apart = pd.DataFrame({"item": ["1", "2"], "rater": ["x", "y"], "label": ["A", "B"]})
    with pytest.raises(AgreementError, match=r"'x' and 'y' have no overlapping items"):
        ag.cohen_kappa(apart, n_boot=0)
    with pytest.raises(AgreementError, match="no overlapping"):
        ag.pairwise_matrix(apart, n_boot=0)
    assert ag.pairwise_matrix(apart, n_boot=0, no_overlap="nan")["estimate"].isna().all()
    num = long_from_matrix(np.array([[1, 2], [3, 2], [2, 2]]))
    with pytest.raises(SchemaError, match="out of order"):
        ag.krippendorff_alpha(num, level="ordinal", categories=[1, 3, 2], n_boot=0)
    with pytest.raises(SchemaError, match="needs ordered or numeric"):
        ag.krippendorff_alpha(df, level="ordinal", n_boot=0)
    cat = df.assign(label=pd.Categorical(df["label"], categories=["B", "A"], ordered=True))
    with pytest.raises(SchemaError, match="out of order"):
        ag.krippendorff_alpha(cat, level="ordinal", categories=["A", "B"], n_boot=0)
    with pytest.raises(AgreementError, match="not found"):
        ag.cohen_kappa(df, raters=["r0", "nobody"], n_boot=0)
    with pytest.raises(AgreementError, match="unknown metric"):
        ag.agreement(df, "kappa_of_doom")


# --------------------------------------------------------------------------- files and CLI


def test_read_annotations_formats(tmp_path):
    df = long_from_matrix(np.array([["A", "B"], ["B", "B"], ["A", "A"]]))
    df.to_csv(tmp_path / "a.csv", index=False)
    df.to_json(tmp_path / "a.jsonl", orient="records", lines=True)
    df.to_parquet(tmp_path / "a.parquet")
    for f in ("a.csv", "a.jsonl", "a.parquet"):
        assert len(ag.read_annotations(tmp_path / f)) == 6
    wide = df.pivot(index="item", columns="rater", values="label").reset_index()
    wide.to_csv(tmp_path / "w.csv", index=False)
    assert ag.read_annotations(tmp_path / "w.csv", wide=True).shape == (6, 3)
    (tmp_path / "bad.jsonl").write_text('{"item": 1, "rater": "a", "label": "A"}\n{not json\n')
    with pytest.raises(DataFileError, match=r"bad.jsonl: line 2"):
        ag.read_annotations(tmp_path / "bad.jsonl")
    with pytest.raises(SchemaError, match=r"a.csv.*'grade'"):
        ag.read_annotations(tmp_path / "a.csv", columns={"label": "grade"})


def test_cli_json_and_table(tmp_path, capsys, pandalm):
    from medeval_kit.cli import main

    f = tmp_path / "p.csv"
    pandalm.to_csv(f, index=False)
    rc = main(["agreement", str(f), "--raters", "annotator1", "annotator2", "annotator3", "--metric",
               "cohen_kappa", "krippendorff_alpha", "--pairwise", "--ceiling", "--n-boot", "50", "--format", "json"])
    assert rc == 0
    recs = json.loads(capsys.readouterr().out)
    assert {"metric", "raters", "estimate", "ci_low", "ci_high", "n_items"} <= set(recs[0])
    pair = [r for r in recs if r["raters"] == ["annotator1", "annotator2"]][0]
    assert round(pair["estimate"], 2) == 0.85
    # --ceiling now prints the judges against the humans (symmetric leave-one-out), not a bare ceiling
    jvh = [r for r in recs if r["section"] == "judge_vs_humans"]
    assert {r["role"] for r in jvh} == {"humans", "judge"} and all(r["metric"] == "cohen_kappa (loo (humans))" for r in jvh)
    rc = main(["agreement", str(f), "--criterion", "criterion", "--metric", "fleiss_kappa", "--n-boot", "0"])
    assert rc == 0 and "fleiss_kappa" in capsys.readouterr().out
    rc = main(["agreement", str(tmp_path / "missing.csv")])
    assert rc == 2 and "missing.csv" in capsys.readouterr().err


def test_plots_return_figures(pandalm):
    import matplotlib.figure
    import matplotlib.pyplot

    pm = ag.pairwise_matrix(pandalm, n_boot=50)
    jv = ag.judge_vs_ceiling(pandalm, n_boot=50)
    ens = ag.ensembles(pandalm)
    for fig in (viz.plot_kappa_heatmap(pm), viz.plot_forest(jv), viz.plot_ensembles(ens)):
        assert isinstance(fig, matplotlib.figure.Figure)
    # drawn on given axes, the plot returns that axes' figure
    fig, ax = matplotlib.pyplot.subplots()
    assert viz.plot_forest(jv, ax=ax) is fig and ax.has_data()


def test_study_inputs_and_inconsistent_code_handled_explicitly():
    s = repro.load_study("medqg_table19")
    assert s.abstain == ["inconsistent"] and s.reference == "expert_x"
    counts = s.label_counts().set_index("rater")
    assert counts.loc["gpt-4", "inconsistent"] == 14 and counts.loc["gpt-4", "n_used"] == 26
    assert s.for_agreement()["label"].isna().sum() == counts["inconsistent"].sum()
    p = repro.load_study("pandalm", raters="annotator1,annotator2,gpt-3.5-turbo")
    assert p.humans == ["annotator1", "annotator2"] and p.judges == ["gpt-3.5-turbo"]
    with pytest.raises(AgreementError, match="unknown dataset"):
        repro.load_study("nope")


def test_prevalence_bias_against_consensus_and_weighted_report(pandalm):
    t = ag.prevalence_bias_indices(pandalm, judges=["gpt-3.5-turbo"], humans=["annotator1", "annotator2", "annotator3"])
    row = t.set_index("category").loc["tie"]
    # the kappa paradox on the 'tie' class: high agreement, kappa near 0
    assert row["percent_agreement"] > 0.85 and row["cohen_kappa"] < 0.1
    df = synthetic_annotations(n_items=80, n_raters=3, categories=(1, 2, 3, 4), seed=4)
    rep = ag.agreement_report(df, metrics=["cohen_kappa_quadratic", "gwet_ac2", "krippendorff_alpha"],
                              level="ordinal", n_boot=50, ceiling=True, humans=["r1", "r2", "r3"], pairwise=True)
    assert {"cohen_kappa_quadratic", "gwet_ac2_quadratic", "krippendorff_alpha"} <= set(rep["metric"])
    # the humans' row of the judge-vs-humans section; no judge in this table, so --ceiling says so
    assert rep["estimate"].notna().all()


def test_bca_for_lights_kappa_and_ensemble_cis():
    df = synthetic_annotations(n_items=100, n_raters=4, kappa=0.5, seed=9)
    r = ag.cohen_kappa(df, n_boot=200, ci_method="bca")
    assert "Light" in r.note and r.ci_low < r.estimate < r.ci_high
    df["rater_kind"] = np.where(df["rater"].isin(["r1", "r2"]), "human", "llm")
    ens = ag.ensembles(df, n_boot=100)
    assert {"cohen_kappa_ci_low", "cohen_kappa_ci_high"} <= set(ens.columns) and len(ens) == 2


def test_cli_bad_label_names_file_column_and_row(tmp_path, capsys):
    from medeval_kit.cli import main

    df = long_from_matrix(np.array([["A", "B"], ["B", "B"], ["A", "Q"]]))
    f = tmp_path / "labels.csv"
    df.to_csv(f, index=False)
    rc = main(["agreement", str(f), "--categories", "A", "B", "--n-boot", "0"])
    err = capsys.readouterr().err
    # 'Q' is on data row 5 of the file (0-based, after the header): item i002, rater r1
    assert rc == 2 and "labels.csv" in err and "'label'" in err and "rows [5]" in err and "'Q'" in err


# --------------------------------------------------------------------------- the coefficient registry


@pytest.fixture
def bangdiwala():
    """A coefficient registered only for this test: Bangdiwala's B, one decorated function."""
    from medeval_kit.agreement.engine import safe_div
    from medeval_kit.agreement.registry import coefficient, unregister

    @coefficient(label="Bangdiwala's B", more_raters="light")
    def bangdiwala_b(t):
        """Bangdiwala's B: squared diagonal cells over the products of the marginals."""
        return safe_div((np.einsum("mkk->mk", t.joint) ** 2).sum(1), (t.rows * t.cols).sum(1))

    yield "bangdiwala_b"
    unregister("bangdiwala_b")


def test_a_registered_coefficient_is_everywhere(bangdiwala, tmp_path, capsys):
    from medeval_kit.cli import main

    # 2x2 table a=40, b=10, c=5, d=45 (n=100): B = (0.4^2 + 0.45^2) / (0.5*0.45 + 0.5*0.55) = 0.3625 / 0.5
    M = np.array([[1, 1]] * 40 + [[1, 0]] * 10 + [[0, 1]] * 5 + [[0, 0]] * 45)
    df = long_from_matrix(M)
    assert bangdiwala in ag.METRICS
    assert abs(ag.agreement(df, bangdiwala, n_boot=0).estimate - 0.725) < TOL
    res = getattr(ag, bangdiwala)(df, n_boot=50)
    assert res.metric == bangdiwala and res.ci_low <= 0.725 <= res.ci_high and "bootstrap" in res.ci_method
    assert viz.metric_label(bangdiwala) == "Bangdiwala's B"
    # the agreement app's metric dropdown is this registry query
    app = (Path(__file__).resolve().parents[1] / "notebooks" / "agreement_app.py").read_text()
    assert "options=agreement.registry.names(pairwise=True, reference=False, nominal=True)" in app
    assert bangdiwala in ag.registry.names(pairwise=True, reference=False, nominal=True)
    # the CLI: help and choices of both commands, and a run
    for cmd in ("agreement", "judge-vs-humans"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        assert bangdiwala in capsys.readouterr().out
    f = tmp_path / "a.csv"
    df.to_csv(f, index=False)
    assert main(["agreement", str(f), "--metric", bangdiwala, "--n-boot", "0", "--format", "json"]) == 0
    (rec,) = json.loads(capsys.readouterr().out)
    assert rec["metric"] == bangdiwala and abs(rec["estimate"] - 0.725) < TOL
    # many raters: the mean over rater pairs (Light's form), and the note says so
    three = ag.agreement(long_from_matrix(np.column_stack([M, M[:, 0]])), bangdiwala, n_boot=0)
    assert "mean of 3 pairwise values" in three.note and 0.725 < three.estimate < 1


def test_unregistered_coefficient_is_gone(bangdiwala):
    from medeval_kit.agreement.registry import REGISTRY, coefficient, unregister

    with pytest.raises(AgreementError, match="already registered"):
        coefficient(bangdiwala, label="twice")(lambda t: t.po)
    saved = unregister(bangdiwala)
    try:
        assert bangdiwala not in ag.METRICS and not hasattr(ag, bangdiwala)
        with pytest.raises(AgreementError, match="unknown metric"):
            ag.agreement(long_from_matrix(np.array([["A", "A"], ["B", "A"]])), bangdiwala)
    finally:
        REGISTRY[bangdiwala] = saved  # the fixture unregisters it


def test_every_public_coefficient_function_reads_the_registry():
    from medeval_kit.agreement.registry import REGISTRY
    from medeval_kit.cli.agreement import metric_choices

    wrapped = [n for n, c in REGISTRY.items() if c.family != "icc"]
    assert set(wrapped) <= set(ag.__all__) and all(callable(getattr(ag, n)) for n in wrapped)
    assert set(REGISTRY) <= set(metric_choices()) and "cohen_kappa_quadratic" in metric_choices()
    assert {"fleiss_kappa", "krippendorff_alpha", "icc2"}.isdisjoint(ag.registry.names(pairwise=True))
    # items without a label from every rater are dropped by ICC and counted as failed
    X = long_from_matrix(np.array([[1.0, 2.0], [2.0, 3.0], [3.0, np.nan], [4.0, 4.0]]))
    r = ag.icc(X[X["label"].notna()], form="icc1")
    assert r.n_items == 3 and r.n_failed == 1 and "1 items without a label" in r.note


# --------------------------------------------------------------------------- large files: same numbers, faster


def _panel(n=600, raters=3, k=3, missing=0.1, seed=0):
    """A long table whose items share label rows (few raters, few labels): what compact statistics exploit."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, n)
    M = np.where(rng.random((n, raters)) < 0.7, truth[:, None], rng.integers(0, k, (n, raters))).astype(object)
    M[rng.random(M.shape) < missing] = None
    return long_from_matrix(np.vectorize(lambda v: "NA" if v is None else "abc"[v])(M), missing="NA")


@pytest.mark.parametrize("metric", ["percent_agreement", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha",
                                    "gwet_ac2", "conger_kappa", "scott_pi"])
def test_compact_statistics_equal_the_per_item_ones(metric):
    from medeval_kit.agreement import registry
    from medeval_kit.agreement.compute import build
    from medeval_kit.agreement.data import prepare
    from medeval_kit.agreement.engine import Stat, jackknife, point, replicates

    data = prepare(_panel(), level="ordinal" if metric == "gwet_ac2" else "nominal", categories=list("abc"))
    st, _ = build(registry.get(metric), data)
    assert st.groups is not None and len(st.F) < st.n_rows  # distinct label rows only
    dense = Stat(st.item_features(), st.fn, st.n_items)
    assert point(st) == pytest.approx(point(dense), abs=1e-12)
    np.testing.assert_allclose(replicates([st], 300, 7), replicates([dense], 300, 7), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.sort(jackknife(st)), np.sort(jackknife(dense)), rtol=0, atol=1e-12)
    assert st.totals() == pytest.approx(dense.totals(), abs=1e-9)


def test_float32_products_are_exact_for_integer_features():
    from medeval_kit.agreement.engine import Stat, replicates
    from medeval_kit.stats import item_draws

    rng = np.random.default_rng(3)
    F = np.zeros((5000, 9))
    F[np.arange(5000), rng.integers(0, 9, 5000)] = 1  # one-hot cells: multiplied in float32
    fn = lambda S: S[:, 0] / S.sum(1)  # noqa: E731
    reps = replicates([Stat(F, fn, 5000), Stat(F + 1e-9, fn, 5000)], 200, 1)  # the second: fractional, float64
    idx = item_draws(5000, 200, np.random.default_rng(1))  # the same draws, counted and multiplied in float64
    W = np.stack([np.bincount(row, minlength=5000) for row in idx]).astype(float)
    assert np.array_equal(reps[:, 0], fn(W @ F))  # exact: integer sums below 2**24
    np.testing.assert_allclose(reps[:, 1], fn(W @ (F + 1e-9)), rtol=0, atol=1e-12)


def test_agreement_many_equals_separate_calls_and_keeps_errors_per_metric():
    from medeval_kit.agreement.compute import agreement_many

    df = _panel(seed=4)
    metrics = ["percent_agreement", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha", "accuracy"]
    many = agreement_many(df, metrics, n_boot=200, seed=3)
    for m, res in zip(metrics, many):
        if m == "accuracy":  # compares one rater with a reference: undefined for three raters, the others go on
            assert isinstance(res, AgreementError) and "reference" in str(res)
            continue
        one = ag.agreement(df, m, n_boot=200, seed=3)
        assert (res.estimate, res.n_items, res.note) == (one.estimate, one.n_items, one.note)
        assert res.ci_low == pytest.approx(one.ci_low, abs=1e-12) and res.ci_high == pytest.approx(one.ci_high, abs=1e-12)


def test_report_shares_one_pass_over_the_draws(monkeypatch):
    from medeval_kit.agreement import compute, engine

    calls = []
    real = engine.replicates
    monkeypatch.setattr(compute, "replicates", lambda stats, *a, **k: calls.append(len(stats)) or real(stats, *a, **k))
    ag.agreement_report(_panel(seed=5), n_boot=50)
    assert calls == [4]  # the four default metrics in one pass (before: one pass each)


def test_row_groups():
    from medeval_kit.agreement.engine import row_groups

    codes = np.array([[0, 1], [2, -1], [0, 1], [-1, -1], [2, -1]])
    groups, first = row_groups(codes)
    assert np.array_equal(codes[first][groups], codes) and len(first) == 3
    wide = np.random.default_rng(0).integers(-1, 50, (200, 20))  # 51**20 keys overflow int64: row-wise unique
    groups, first = row_groups(wide)
    assert np.array_equal(wide[first][groups], wide)


TRICKY_CSV = {
    "text.csv": 'item,rater,label\n1,a,None\n1,b,NA\n2,a,\n2,b,"x, y"\n3,a," sp "\n3,b,""\n4,a,"two\nlines"\n',
    "bom.csv": "\ufeffitem,rater,label\n1,a,1\n1,b,2.0\n",
    "blank_lines.csv": "item,rater,label\n\n1,a,x\n\n1,b,y\n",
    "tabs.tsv": "item\trater\tlabel\n1\ta\tx\n1\tb\ty\n",
    "ragged.csv": "item,rater,label\n1,a\n1,b,2\n",
    "dup_header.csv": "item,item,label\n1,a,x\n",
    "trailing.csv": "item,rater,label,\n1,a,x,\n",
}


@pytest.mark.parametrize("name", sorted(TRICKY_CSV))
def test_pyarrow_csv_reading_equals_pandas_text_reading(tmp_path, name):
    from medeval_kit.agreement.io import _read_csv_arrow, read_text_table
    from medeval_kit.datasets import read_table

    p = tmp_path / name
    p.write_text(TRICKY_CSV[name], encoding="utf-8")
    expected = read_table(p, text=True)
    pd.testing.assert_frame_equal(read_text_table(p), expected)
    fast = _read_csv_arrow(p, "\t" if name.endswith(".tsv") else ",")
    # what pyarrow cannot read the pandas way goes to pandas (ragged rows, renamed headers)
    assert (fast is None) == (name in ("ragged.csv", "dup_header.csv", "trailing.csv"))


def test_read_annotations_on_a_large_file_keeps_labels_and_errors(tmp_path):
    n = 20000
    rng = np.random.default_rng(0)
    labs = np.array(["low", "medium", "high", "NA", ""])[rng.integers(0, 5, 2 * n)]
    p = tmp_path / "big.csv"
    pd.DataFrame({"item": np.repeat(np.arange(n), 2), "rater": ["a", "b"] * n, "label": labs}).to_csv(p, index=False)
    df = ag.read_annotations(p, missing=["NA"])
    assert df["label"].isna().sum() == int(((labs == "NA") | (labs == "")).sum())
    assert set(df["label"].dropna()) == {"low", "medium", "high"} and len(df) == 2 * n
    nums = tmp_path / "nums.csv"
    nums.write_text("item,rater,label\n1,a,1\n1,b,2\n2,a,3\n2,b,10\n")
    assert ag.read_annotations(nums)["label"].tolist() == [1, 2, 3, 10]


# --------------------------------------------------------------------------- one public API (issue 24)


def test_coefficient_functions_are_real_module_level_functions():
    """Each built-in coefficient is a ``def`` in agreement/functions.py (not served by ``__getattr__``), listed in
    ``__all__``, with a real signature, and gives what ``agreement(df, name)`` gives."""
    import inspect

    from medeval_kit.agreement import codegen, functions
    from medeval_kit.agreement.registry import REGISTRY

    builtin = [n for n, c in REGISTRY.items() if c.family != "icc" and c.fn.__module__.startswith("medeval_kit.")]
    assert builtin == functions.__all__ == codegen.builtin_names()
    M = np.array([[1, 1], [2, 2], [3, 2], [1, 1], [2, 3], [3, 3], [1, 2], [2, 2], [3, 3], [1, 1], [2, 2], [3, 1]])
    df = long_from_matrix(M)
    for name in builtin:
        fn = vars(ag)[name]  # a module attribute, not a __getattr__ fallback
        assert fn is vars(functions)[name] and name in ag.__all__
        assert inspect.unwrap(fn).__module__ == "medeval_kit.agreement.functions"
        assert "columns" in inspect.signature(fn).parameters and "Parameters" in fn.__doc__
        kw = dict(n_boot=50, seed=3)
        assert fn(df, **kw) == ag.agreement(df, name, **kw), name
        assert fn(df.rename(columns={"rater": "who"}), columns={"rater": "who"}, **kw) == ag.agreement(df, name, **kw)


def test_regenerating_the_coefficient_functions_gives_the_committed_file():
    from medeval_kit.agreement import codegen

    assert codegen.TARGET.read_text() == codegen.render(), "run: python -m medeval_kit.agreement.codegen"


def test_metrics_is_live_and_a_later_coefficient_is_computed_by_name(bangdiwala):
    df = long_from_matrix(np.array([[1, 1]] * 40 + [[1, 0]] * 10 + [[0, 1]] * 5 + [[0, 0]] * 45))
    assert bangdiwala in ag.METRICS and bangdiwala not in ag.functions.__all__
    assert abs(ag.agreement(df, bangdiwala, n_boot=0).estimate - 0.725) < TOL


def test_old_per_column_keywords_warn_and_still_work():
    df = long_from_matrix(np.array([["A", "A"], ["B", "A"], ["B", "B"]] * 4))
    want = ag.cohen_kappa(df, n_boot=0)
    mine = df.rename(columns={"item": "case", "label": "grade"})
    assert ag.cohen_kappa(mine, columns={"item": "case", "label": "grade"}, n_boot=0) == want
    with pytest.warns(DeprecationWarning, match="columns="):
        assert ag.cohen_kappa(mine, item="case", label="grade", n_boot=0) == want
    with pytest.warns(DeprecationWarning, match="columns="):
        assert ag.agreement(mine, "cohen_kappa", item="case", label="grade", n_boot=0) == want


def test_majority_vote_columns_and_the_old_keywords():
    df = pd.DataFrame({"item": [1, 1, 1, 2, 2], "rater": list("abcab"), "label": list("xxyxy")})
    want = ag.majority_vote(df)
    mine = df.rename(columns={"item": "case", "label": "grade"})
    pd.testing.assert_frame_equal(ag.majority_vote(mine, columns={"item": "case", "label": "grade"}), want)
    # the old keywords answer in the caller's names for one release, even beside a canonical namesake
    both = mine.assign(label="ignored")
    with pytest.warns(DeprecationWarning, match=r"columns=\{'item': 'case', 'label': 'grade'\}"):
        old = ag.majority_vote(both, item="case", label="grade")
    pd.testing.assert_frame_equal(old, want.rename(columns={"item": "case", "label": "grade"}))


def test_read_study_replaces_user_study_and_readers_take_columns(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("case,who,grade,kind\n1,a,yes,human\n1,b,no,human\n1,gpt,yes,llm\n2,a,no,human\n2,b,no,human\n"
                 "2,gpt,no,llm\n")
    cols = {"item": "case", "rater": "who", "label": "grade", "rater_kind": "kind"}
    st = ag.read_study(f, columns=cols)
    assert (st.humans, st.judges) == (["a", "b"], ["gpt"])
    assert list(st.annotations.columns) == ["item", "rater", "label", "rater_kind", "criterion"]
    assert "user_study" not in ag.__all__ and "read_study" in ag.__all__
    with pytest.warns(DeprecationWarning) as rec:
        old = ag.user_study(f, item="case", rater="who", label="grade", rater_kind="kind")
    said = [str(w.message) for w in rec]
    assert any("agreement.user_study is deprecated" in m and "use agreement.read_study" in m for m in said)
    assert any("pass columns={'item': 'case'" in m for m in said)
    pd.testing.assert_frame_equal(old.annotations, st.annotations)
    ann = ag.read_annotations(f, columns=cols)
    pd.testing.assert_frame_equal(ann, st.annotations.drop(columns="criterion"))
    with pytest.warns(DeprecationWarning, match="read_annotations"):
        pd.testing.assert_frame_equal(ag.read_annotations(f, item="case", rater="who", label="grade",
                                                          rater_kind="kind"), ann)
    assert "rater_kind" not in ag.read_annotations(f, columns=cols, rater_kind=None).columns
    # a column you name must be there: the error names your column, not a canonical namesake
    with pytest.raises(SchemaError, match="'verdict'"):
        ag.read_annotations(f, columns={**cols, "label": "verdict"})


def test_descriptive_tables_carry_the_result_contract():
    from medeval_kit.datasets.synthetic import synthetic_panel
    from medeval_kit.results import check_result

    t = synthetic_panel(n_items=40, n_judges=3, seed=1)
    ens = ag.ensembles(t, n_boot=50)
    assert check_result(ens) == [] and (ens["estimate"] == ens["cohen_kappa"]).all()
    assert (ens["metric"] == "cohen_kappa").all() and (ens["ci_low"] == ens["cohen_kappa_ci_low"]).all()
    pb = ag.prevalence_bias_indices(t[t["rater"].isin(["h1", "h2"])])
    assert check_result(pb) == [] and (pb["estimate"] == pb["cohen_kappa"]).all()
    v = ag.validate_judges(t, ["h1", "h2", "h3"], ["llm1"], n_boot=50)
    frame = v.to_frame()
    assert check_result(frame) == [] and set(frame["part"]) == {"designs", "alt_test"}
    assert isinstance(v._repr_html_(), str) and isinstance(v.summary(), str)


def test_result_objects_share_the_result_base():
    from medeval_kit.datasets.synthetic import synthetic_panel
    from medeval_kit.results import Result, check_result

    t = synthetic_panel(n_items=40, seed=1)
    for res in (ag.cohen_kappa(t, n_boot=0), ag.judge_vs_humans(t, n_boot=0), ag.alt_test(t, min_items_per_human=10)):
        assert isinstance(res, Result) and check_result(res.to_frame()) == []
        assert isinstance(res.summary(), str) and "<table" in res._repr_html_()
