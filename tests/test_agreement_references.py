"""Agreement coefficients against published worked examples, and the conventions they pin down.

Every test names its source and the value as printed there, and asserts at the printed precision.
The data are rebuilt here from their published listings (no network). Sources:

* Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School for
  Communication, U. Pennsylvania (repository.upenn.edu/asc_papers/43): 4 observers x 12 units.
* Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. Psychological
  Bulletin 76(5), 378-382: 30 patients x 6 psychiatrists x 5 diagnoses.
* Gwet, K. L. (2019). R package irrCAC 1.0 (CRAN; github.com/kgwet/irrCAC): datasets
  ``cac.raw4raters`` (Gwet 2014, Handbook of Inter-Rater Reliability, 4th ed., p. 120),
  ``cac.raw5obser`` (Handbook p. 125), ``cont3x3abstractors`` and ``distrib.6raters``, with the
  results printed in its README / overview vignette ("overview") and weighting vignette
  ("weighting"). R prints ``coeff.val`` rounded to 5 decimals, ``pa``/``pe`` to 7 digits.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from medeval_kit import agreement as ag
from medeval_kit.agreement import AgreementError
from medeval_kit.agreement.coefficients import conger_stat
from medeval_kit.agreement.data import prepare
from medeval_kit.agreement.engine import replicates
from medeval_kit.agreement.weights import agreement_weights, weight_values


def long_from_wide(M, raters=None) -> pd.DataFrame:
    """items x raters matrix (NaN = no label) -> long table with integer labels."""
    M = np.asarray(M, dtype=float)
    n, r = M.shape
    raters = raters or [f"r{j + 1}" for j in range(r)]
    df = pd.DataFrame({"item": np.repeat(np.arange(1, n + 1), r), "rater": np.tile(raters, n), "label": M.ravel()})
    df = df[df["label"].notna()].reset_index(drop=True)
    df["label"] = df["label"].astype(int)
    return df


def long_from_table(T, labels) -> pd.DataFrame:
    """Two-rater contingency table (rows: rater A, columns: rater B) -> long table."""
    rows, i = [], 0
    for a, la in enumerate(labels):
        for b, lb in enumerate(labels):
            for _ in range(int(T[a][b])):
                rows += [dict(item=i, rater="A", label=la), dict(item=i, rater="B", label=lb)]
                i += 1
    return pd.DataFrame(rows)


def long_from_counts(C, labels) -> pd.DataFrame:
    """Distribution of raters by subject and category (counts) -> long table, anonymous raters."""
    rows = []
    for i, row in enumerate(np.asarray(C)):
        seat = 0
        for lab, c in zip(labels, row):
            for _ in range(int(c)):
                rows.append(dict(item=i, rater=f"seat{seat}", label=lab))
                seat += 1
    return pd.DataFrame(rows)


def est(df, metric, **kw) -> float:
    return ag.agreement(df, metric, n_boot=0, **kw).estimate


# --------------------------------------------------------------------------- data, as published

# Krippendorff (2011), the reliability data with missing values used for all four metrics
# (observers A-D x units 1-12; "." = missing). The same table is the example of Stata's kalpha
# help file and of the test suite of the `krippendorff` package (pln-fing-udelar/fast-krippendorff).
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
    [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
]

# irrCAC inst/extdata/cac.raw4raters.csv (printed in the README): 12 units x 4 raters, 5 categories.
CAC_RAW4RATERS = """Units,Rater1,Rater2,Rater3,Rater4
1,1,1,,1
2,2,2,3,2
3,3,3,3,3
4,3,3,3,3
5,2,2,2,2
6,1,2,3,4
7,4,4,4,4
8,1,1,2,1
9,2,2,2,2
10,,5,5,5
11,,,1,1
12,,,3,
"""

# irrCAC inst/extdata/cac.raw5obser.csv: 15 units x 5 observers on the scale 0..3.
CAC_RAW5OBSER = """Unit,Observer1,Observer2,Observer3,Observer4,Observer5
1,1,1,2,,2
2,1,1,0,1,
3,2,3,3,3,
4,,0,0,,0
5,0,0,0,,0
6,0,0,0,,0
7,1,0,2,,1
8,1,,2,0,
9,2,2,2,,2
10,2,1,1,1,
11,,1,0,0,
12,0,0,0,0,
13,1,2,2,2,
14,3,3,2,2,3
15,1,1,1,,1
"""

# irrCAC cont3x3abstractors (printed in the README): rows abstractor 1, columns abstractor 2;
# Ectopic, AIU, NIU coded 1, 2, 3 in that order (irrCAC's weights use the table order 1:q).
CONT3X3ABSTRACTORS = [[13, 0, 0], [0, 20, 7], [0, 4, 56]]

# irrCAC distrib.6raters (printed in the README): 15 patients x 6 psychiatrists, counts per category
# Depression, Personality Disorder, Schizophrenia, Neurosis, Other (Fleiss 1971, subjects 1-15).
DISTRIB_6RATERS = [
    [0, 0, 0, 6, 0], [0, 3, 0, 0, 3], [0, 1, 4, 0, 1], [0, 0, 0, 0, 6], [0, 3, 0, 3, 0],
    [2, 0, 4, 0, 0], [0, 0, 4, 0, 2], [2, 0, 3, 1, 0], [2, 0, 0, 4, 0], [0, 0, 0, 0, 6],
    [1, 0, 0, 5, 0], [1, 1, 0, 4, 0], [0, 3, 3, 0, 0], [1, 0, 0, 5, 0], [0, 2, 0, 3, 1],
]

# Fleiss (1971), Table 1: diagnoses of 30 patients by 6 psychiatrists (1 depression, 2 personality
# disorder, 3 schizophrenia, 4 neurosis, 5 other), as listed in R's irr::diagnoses, statsmodels'
# test_inter_rater.py and DKPro Statistics' Fleiss1971Test.
FLEISS_1971 = [
    [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5], [2, 2, 2, 4, 4, 4],
    [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4], [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5],
    [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4], [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5],
    [3, 3, 3, 3, 3, 5], [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4], [1, 4, 4, 4, 4, 5],
    [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4], [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
]


@pytest.fixture(scope="module")
def raw4():
    wide = pd.read_csv(io.StringIO(CAC_RAW4RATERS))
    return long_from_wide(wide.iloc[:, 1:].to_numpy(float), list(wide.columns[1:]))


@pytest.fixture(scope="module")
def raw5():
    wide = pd.read_csv(io.StringIO(CAC_RAW5OBSER))
    return long_from_wide(wide.iloc[:, 1:].to_numpy(float), list(wide.columns[1:]))


@pytest.fixture(scope="module")
def abstractors():
    return long_from_table(CONT3X3ABSTRACTORS, [1, 2, 3])


# --------------------------------------------------------------------------- Krippendorff (2011)


def test_krippendorff_2011_alpha_all_levels():
    # Krippendorff (2011) reports alpha = .743 (nominal), .815 (ordinal), .849 (interval), .797 (ratio)
    # for this table. The paper's text was not available offline; each value is corroborated by a
    # published run on the same reliability data: fast-krippendorff's test suite asserts .815
    # (ordinal) and .797 (ratio); irrCAC's README prints krippen.alpha.raw(cac.raw4raters) = 0.74342
    # and its weighting vignette 0.84911 with quadratic weights (= interval alpha on 1..5). The
    # units differ only in unit 12, which has a single value in both and so is not pairable.
    df = long_from_wide(np.array(KRIPPENDORFF_2011, dtype=float).T, list("ABCD"))
    printed = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}
    for level, value in printed.items():
        assert round(ag.krippendorff_alpha(df, level=level, n_boot=0).estimate, 3) == value, level


# --------------------------------------------------------------------------- Fleiss (1971)


def test_fleiss_1971_overall_and_per_category_kappa():
    # Fleiss (1971): kappa = .430 with P-bar = .556 (DKPro Statistics' Fleiss1971Test asserts 0.430,
    # 0.5556 and P_e 0.2201 for this table; R irr::kappam.fleiss(diagnoses) = 0.4302445 as quoted in
    # statsmodels' test_inter_rater.py).
    # Per category, his kappa_j = 1 - sum_i x_ij (m - x_ij) / (N m (m-1) p_j q_j): depression .245,
    # personality disorder .245, schizophrenia .520, neurosis .471, other .566 (Fleiss 1971, the
    # kappa_j table). The paper's text was not available offline: these are the 3-decimal values of
    # his formula, which DKPro's Fleiss1971Test checks to +/- 0.005 (0.248, 0.248, 0.517, 0.470,
    # 0.565) and R's irr::kappam.fleiss(detail = TRUE) computes with the same formula.
    df = long_from_wide(FLEISS_1971)
    assert round(ag.fleiss_kappa(df, n_boot=0).estimate, 3) == 0.430
    assert round(est(df, "percent_agreement"), 3) == 0.556
    by_cat = ag.fleiss_kappa_by_category(df, n_boot=0)
    assert list(by_cat.columns) == ["category", "estimate", "ci_low", "ci_high", "ci_method", "n_items", "n_failed", "note"]
    assert by_cat["category"].tolist() == [1, 2, 3, 4, 5]
    assert by_cat["estimate"].round(3).tolist() == [0.245, 0.245, 0.520, 0.471, 0.566]
    assert (by_cat["n_items"] == 30).all()
    # Fleiss (1971): kappa is the p_j q_j-weighted mean of the kappa_j (complete data).
    p = np.bincount(np.ravel(FLEISS_1971), minlength=6)[1:] / 180
    pq = p * (1 - p)
    assert abs((pq * by_cat["estimate"]).sum() / pq.sum() - ag.fleiss_kappa(df, n_boot=0).estimate) < 1e-12


def test_irrcac_distrib_6raters():
    # irrCAC README ("Computing agreement coefficients from the distribution of raters"):
    # gwet.ac1.dist 0.4448007, fleiss.kappa.dist 0.4139265 (pa 0.5511111, pe 0.2340741),
    # krippen.alpha.dist 0.4204384, bp.coeff.dist 0.4388889.
    # irrCAC weighting vignette, weights = quadratic.weights(1:5): AC2 0.4837438, Fleiss 0.2511909,
    # alpha 0.259511, Brennan-Prediger 0.4177778.
    df = long_from_counts(DISTRIB_6RATERS, [1, 2, 3, 4, 5])
    # the printed counts are Fleiss' (1971) subjects 1-15
    fleiss15 = np.stack([(np.array(FLEISS_1971[:15]) == k).sum(1) for k in range(1, 6)], 1)
    assert (fleiss15 == np.array(DISTRIB_6RATERS)).all()
    assert round(est(df, "gwet_ac1"), 7) == 0.4448007
    assert round(est(df, "fleiss_kappa"), 7) == 0.4139265
    assert round(est(df, "percent_agreement"), 7) == 0.5511111
    assert round(est(df, "krippendorff_alpha"), 7) == 0.4204384
    assert round(est(df, "brennan_prediger"), 7) == 0.4388889
    assert round(est(df, "gwet_ac2", weights="quadratic"), 7) == 0.4837438
    assert round(est(df, "fleiss_kappa", weights="quadratic"), 7) == 0.2511909
    assert round(ag.krippendorff_alpha(df, level="interval", n_boot=0).estimate, 6) == 0.259511
    assert round(est(df, "brennan_prediger", weights="quadratic"), 7) == 0.4177778


# --------------------------------------------------------------------------- irrCAC raw ratings


def test_irrcac_cac_raw4raters_unweighted(raw4):
    # irrCAC README / overview vignette, "Computing agreement coefficients from raw ratings":
    # pa.coeff.raw 0.8181818; gwet.ac1.raw 0.77544 (pe 0.1903212); fleiss.kappa.raw 0.76117
    # (pe 0.2387153); krippen.alpha.raw 0.74342; conger.kappa.raw 0.76282 (pe 0.2334252);
    # bp.coeff.raw 0.77273.
    assert abs(est(raw4, "percent_agreement") - 0.8181818) < 5e-8
    assert round(est(raw4, "gwet_ac1"), 5) == 0.77544
    assert round(est(raw4, "fleiss_kappa"), 5) == 0.76117
    assert round(est(raw4, "krippendorff_alpha"), 5) == 0.74342
    assert round(est(raw4, "conger_kappa"), 5) == 0.76282
    assert round(est(raw4, "brennan_prediger"), 5) == 0.77273
    # Scott's pi with > 2 raters is Fleiss' kappa, with the same chance term.
    assert est(raw4, "scott_pi") == est(raw4, "fleiss_kappa")


def test_irrcac_cac_raw4raters_quadratic(raw4):
    # irrCAC weighting vignette, weights = "quadratic" (quadratic.weights(1:5): values 1..5 are evenly
    # spaced, so values and positions give the same matrix): pa 0.9753788; AC2 0.914 (pe 0.7137044);
    # Fleiss 0.86494 (pe 0.8177083); alpha 0.84911; Conger 0.85771 (pe 0.8269638); BP 0.90152.
    q = dict(weights="quadratic")
    assert abs(est(raw4, "percent_agreement", **q) - 0.9753788) < 5e-8
    assert round(est(raw4, "gwet_ac2", **q), 5) == 0.914
    assert round(est(raw4, "fleiss_kappa", **q), 5) == 0.86494
    assert round(est(raw4, "conger_kappa", **q), 5) == 0.85771
    assert round(est(raw4, "brennan_prediger", **q), 5) == 0.90152
    # Quadratic weights on equally spaced values make alpha the interval alpha.
    assert round(ag.krippendorff_alpha(raw4, level="interval", n_boot=0).estimate, 5) == 0.84911
    for basis in ("positions", "values"):
        assert est(raw4, "conger_kappa", weight_basis=basis, **q) == pytest.approx(est(raw4, "conger_kappa", **q))


def test_fleiss_unequal_ratings_follows_irrcac_not_pooled(raw4):
    """Fails on the pre-change code, which pooled category counts over items with >= 2 labels."""
    # irrCAC README: fleiss.kappa.raw(cac.raw4raters) = 0.76117 with pe = 0.2387153, where
    # pi_k = (1/12) sum_i n_ik / r_i over all 12 units (unit 12 has a single rating and counts).
    res = ag.fleiss_kappa(raw4, n_boot=0)
    assert round(res.estimate, 5) == 0.76117
    assert "per-item category shares" in res.note
    # The pooled convention is kept as an option; by hand: pi_k = sum_i n_ik / sum_i r_i over the
    # 11 units with >= 2 labels, pa = 0.8181818 as above.
    wide = pd.read_csv(io.StringIO(CAC_RAW4RATERS)).iloc[:, 1:].to_numpy(float)
    counts = np.stack([(wide == k).sum(1) for k in range(1, 6)], 1)
    keep = counts.sum(1) >= 2
    p = counts[keep].sum(0) / counts[keep].sum()
    pe = (p**2).sum()
    pooled = (0.8181818181818182 - pe) / (1 - pe)
    assert abs(ag.fleiss_kappa(raw4, fleiss_marginals="pooled", n_boot=0).estimate - pooled) < 1e-12
    assert round(pooled, 5) != 0.76117  # 0.76077: the two conventions differ on unequal data
    # With complete data both are Fleiss (1971).
    df = long_from_wide(FLEISS_1971)
    assert est(df, "fleiss_kappa", fleiss_marginals="pooled") == pytest.approx(est(df, "fleiss_kappa"), abs=1e-12)


def test_irrcac_cac_raw5obser(raw5):
    # irrCAC's R documentation lists cac.raw5obser but prints no results for it; the values below are
    # those the Python port of irrCAC (afergadis/irrCAC, test/unit/irrCAC/raw/test_{fleiss,conger,
    # gwet,krippendorff,bp}.py, 3 decimals) asserts for it: pa .616; Fleiss .458 (pe .291);
    # Conger .469 (pe .276); AC1 .497 (pe .236); Krippendorff alpha .481; Brennan-Prediger .487.
    assert round(est(raw5, "percent_agreement"), 3) == 0.616
    assert round(est(raw5, "fleiss_kappa"), 3) == 0.458
    assert round(est(raw5, "conger_kappa"), 3) == 0.469
    assert round(est(raw5, "gwet_ac1"), 3) == 0.497
    assert round(est(raw5, "krippendorff_alpha"), 3) == 0.481
    assert round(est(raw5, "brennan_prediger"), 3) == 0.487


# --------------------------------------------------------------------------- irrCAC contingency table


def test_irrcac_cont3x3abstractors(abstractors):
    # irrCAC README: kappa2.table 0.7964094, scott2.table 0.7962397, gwet.ac1.table 0.8493305,
    # bp2.table 0.835, krippen2.table 0.7972585, pa2.table 0.89.
    df = abstractors
    assert round(est(df, "cohen_kappa"), 7) == 0.7964094
    assert round(est(df, "scott_pi"), 7) == 0.7962397
    assert round(est(df, "gwet_ac1"), 7) == 0.8493305
    assert round(est(df, "brennan_prediger"), 7) == 0.835
    assert round(est(df, "krippendorff_alpha"), 7) == 0.7972585
    assert round(est(df, "percent_agreement"), 7) == 0.89
    # Not printed, but identities: Conger's kappa is Cohen's for two raters, Fleiss' is Scott's.
    assert est(df, "conger_kappa") == pytest.approx(0.7964094, abs=5e-8)
    assert est(df, "fleiss_kappa") == pytest.approx(0.7962397, abs=5e-8)


def test_irrcac_cont3x3abstractors_quadratic(abstractors):
    # irrCAC weighting vignette, weights = quadratic.weights(1:3): kappa2.table 0.8921569,
    # scott2.table 0.8921093, gwet.ac1.table (AC2) 0.9402369, bp2.table 0.9175,
    # krippen2.table 0.8926487, pa2.table 0.9725.
    df, q = abstractors, dict(weights="quadratic")
    assert round(est(df, "cohen_kappa", **q), 7) == 0.8921569
    assert round(est(df, "scott_pi", **q), 7) == 0.8921093
    assert round(est(df, "gwet_ac2", **q), 7) == 0.9402369
    assert round(est(df, "brennan_prediger", **q), 7) == 0.9175
    assert round(est(df, "percent_agreement", **q), 7) == 0.9725
    assert round(ag.krippendorff_alpha(df, level="interval", n_boot=0).estimate, 7) == 0.8926487
    assert est(df, "conger_kappa", **q) == pytest.approx(0.8921569, abs=5e-8)


# --------------------------------------------------------------------------- weights


def test_weights_from_values_on_an_uneven_scale():
    # Two raters on the scale (1, 2, 5); items (A, B): (1,1), (1,2), (1,2), (2,2), (5,5).
    # Values, linear: span 5 - 1 = 4, w(1,2) = 3/4, w(2,5) = 1/4, w(1,5) = 0.
    #   po = (1 + 3/4 + 3/4 + 1 + 1) / 5 = 9/10; marginals A (3/5, 1/5, 1/5), B (1/5, 3/5, 1/5);
    #   pe = 3/5 (1/5 + 3/5 * 3/4) + 1/5 (1/5 * 3/4 + 3/5 + 1/5 * 1/4) + 1/5 (3/5 * 1/4 + 1/5)
    #      = 39/100 + 16/100 + 7/100 = 31/50; kappa = (9/10 - 31/50) / (19/50) = 14/19.
    # Positions 0, 1, 2: w = 1/2 between neighbours; po = 4/5, pe = 3/10 + 4/25 + 1/10 = 14/25,
    #   kappa = (6/25) / (11/25) = 6/11 (sklearn's cohen_kappa_score, which weights by rank).
    a, b = [1, 1, 1, 2, 5], [1, 2, 2, 2, 5]
    df = long_from_table([[1, 2, 0], [0, 1, 0], [0, 0, 1]], [1, 2, 5])
    values = ag.cohen_kappa(df, weights="linear", n_boot=0)  # default weight_basis="auto": values
    assert abs(values.estimate - 14 / 19) < 1e-12
    assert "unevenly spaced" in values.note
    assert abs(est(df, "cohen_kappa", weights="linear", weight_basis="values") - 14 / 19) < 1e-12
    positions = est(df, "cohen_kappa", weights="linear", weight_basis="positions")
    assert abs(positions - 6 / 11) < 1e-12
    assert abs(positions - cohen_kappa_score(a, b, weights="linear")) < 1e-12
    # The weight matrices themselves.
    w = agreement_weights(3, "linear", weight_values([1, 2, 5], "auto"))
    assert np.allclose(w, [[1, 0.75, 0], [0.75, 1, 0.25], [0, 0.25, 1]])
    assert np.allclose(agreement_weights(3, "quadratic", [1, 2, 5]),
                       [[1, 15 / 16, 0], [15 / 16, 1, 7 / 16], [0, 7 / 16, 1]])
    # Text labels have no values: auto falls back to positions, "values" is refused.
    assert weight_values(["low", "mid", "high"], "auto") is None
    with pytest.raises(AgreementError, match="weight_basis='values' needs numeric labels"):
        weight_values(["low", "mid", "high"], "values")


def test_weight_matrix_option_and_validation(raw4):
    q = agreement_weights(5, "quadratic")
    for m in ("cohen_kappa", "fleiss_kappa", "conger_kappa", "gwet_ac2", "brennan_prediger"):
        sub = raw4[raw4["rater"].isin(["Rater2", "Rater4"])] if m == "cohen_kappa" else raw4
        custom = ag.agreement(sub, m, weights=q, n_boot=0)
        assert custom.metric == f"{m}_custom"
        assert custom.estimate == pytest.approx(est(sub, m, weights="quadratic"), abs=1e-12)
    # Identity matrix = unweighted.
    assert est(raw4, "fleiss_kappa", weights=np.eye(5)) == pytest.approx(est(raw4, "fleiss_kappa"), abs=1e-12)
    bad = {
        "shape": (np.eye(4), r"shape \(4, 4\) but a 5 x 5 matrix is needed for the 5 categories \[1, 2, 3, 4, 5\]"),
        "symmetric": (np.triu(np.full((5, 5), 0.5)) + np.eye(5) * 0.5, "must be symmetric"),
        "diagonal": (np.full((5, 5), 0.5), "1 on the diagonal"),
        "range": (2 * q - 1, r"must lie in \[0, 1\]"),
        "nan": (np.where(np.eye(5) > 0, 1.0, np.nan), "NaN"),
    }
    for W, msg in bad.values():
        with pytest.raises(AgreementError, match=msg):
            ag.fleiss_kappa(raw4, weights=W, n_boot=0)
    with pytest.raises(AgreementError, match="weights must be None, 'linear', 'quadratic' or a K x K"):
        ag.fleiss_kappa(raw4, weights="cubic", n_boot=0)
    with pytest.raises(AgreementError, match="weight_basis must be 'auto'"):
        ag.cohen_kappa(raw4, weights="linear", weight_basis="ranks", n_boot=0)
    with pytest.raises(AgreementError, match="fleiss_marginals must be 'per_item'"):
        ag.fleiss_kappa(raw4, fleiss_marginals="gwet", n_boot=0)


# --------------------------------------------------------------------------- Conger's kappa


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_conger_two_raters_is_cohen(weights):
    rng = np.random.default_rng(5)
    a = rng.integers(0, 4, 200)
    b = np.where(rng.random(200) < 0.6, a, rng.integers(0, 4, 200))
    df = long_from_wide(np.column_stack([a, b]))
    ours = ag.conger_kappa(df, weights=weights, categories=[0, 1, 2, 3], n_boot=0).estimate
    assert abs(ours - cohen_kappa_score(a, b, weights=weights, labels=[0, 1, 2, 3])) < 1e-12


def test_conger_replicates_equal_a_loop_over_resamples(raw5):
    """The vectorised item-bootstrap replicates equal Conger's kappa recomputed on each resample."""
    data = prepare(raw5)
    st = conger_stat(data.codes, data.K)
    reps = replicates([st], 25, seed=4)[:, 0]
    idx = np.random.default_rng(4).integers(0, len(data.codes), size=(25, len(data.codes)))
    loop = [conger_stat(data.codes[row], data.K).value() for row in idx]
    assert np.allclose(reps, loop, atol=1e-12, equal_nan=True)


# --------------------------------------------------------------------------- CIs for the new statistics


def test_new_statistics_have_bootstrap_cis(raw5):
    df = long_from_wide(FLEISS_1971)
    for res in (ag.conger_kappa(df, n_boot=300, seed=1), ag.conger_kappa(raw5, n_boot=300, seed=1, ci_method="bca"),
                ag.fleiss_kappa(df, weights=agreement_weights(5, "linear"), n_boot=300, seed=1),
                ag.fleiss_kappa(raw5, fleiss_marginals="pooled", n_boot=300, seed=1)):
        assert "bootstrap" in res.ci_method and res.ci_low <= res.estimate <= res.ci_high, res.summary()
    by_cat = ag.fleiss_kappa_by_category(df, n_boot=300, seed=2)
    assert (by_cat["ci_low"] <= by_cat["estimate"]).all() and (by_cat["estimate"] <= by_cat["ci_high"]).all()
    assert by_cat["ci_method"].str.contains("bootstrap percentile").all()
    # Seeded: the same seed gives the same intervals.
    again = ag.fleiss_kappa_by_category(df, n_boot=300, seed=2)
    assert by_cat["ci_low"].tolist() == again["ci_low"].tolist()


def test_category_kappa_unequal_ratings_and_undefined_categories(raw4):
    # Declared category 6 is never used: NaN with a note, never an exception or a made-up 0.
    out = ag.fleiss_kappa_by_category(raw4, categories=[1, 2, 3, 4, 5, 6], n_boot=50).set_index("category")
    assert np.isnan(out.loc[6, "estimate"]) and "never used" in out.loc[6, "note"]
    assert out.loc[[1, 2, 3, 4, 5], "estimate"].notna().all()
    # kappa_j is Fleiss' kappa of the data collapsed to j versus the rest, in either convention.
    for marginals in ("per_item", "pooled"):
        kj = ag.fleiss_kappa_by_category(raw4, fleiss_marginals=marginals, n_boot=0).set_index("category")
        for j in (1, 3, 5):
            collapsed = raw4.assign(label=np.where(raw4["label"] == j, "j", "rest"))
            assert kj.loc[j, "estimate"] == pytest.approx(
                est(collapsed, "fleiss_kappa", fleiss_marginals=marginals), abs=1e-12)
    one = pd.DataFrame({"item": [1, 1, 2, 2], "rater": ["a", "b"] * 2, "label": ["x"] * 4})
    row = ag.fleiss_kappa_by_category(one, n_boot=0).iloc[0]
    assert np.isnan(row["estimate"]) and "only one used" in row["note"]
