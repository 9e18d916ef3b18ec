"""Issue 22, findings 7 and 11: sparse pairwise output that reads, no CI from too few items, a review
queue ordered by its documented rule (not by float noise), ``n_boot=0`` as documented, and the
judge-physician error-dependence diagnostic."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medeval_kit import agreement as ag
from medeval_kit.agreement.engine import Stat, replicates
from medeval_kit.bias import calibration as cal

ROOT = Path(__file__).resolve().parents[1]


def sparse_panel(n_raters=107, n_core_items=200, n_other_items=300, seed=0) -> pd.DataFrame:
    """107 physicians, each item labelled by 2-4 of them; the first 200 items by 2-4 of the first four (a core
    whose pairs share many items), the rest by 2-4 of all 107 (pairs that share 0-2 items)."""
    rng = np.random.default_rng(seed)
    raters = [f"dr{i:03d}" for i in range(n_raters)]
    rows = []
    for i in range(n_core_items + n_other_items):
        pool = raters[:4] if i < n_core_items else raters
        truth = rng.integers(0, 3)
        for r in rng.choice(pool, size=int(rng.integers(2, 5)), replace=False):
            lab = truth if rng.random() < 0.8 else rng.integers(0, 3)
            rows.append((f"q{i:04d}", r, "ABC"[lab]))
    return pd.DataFrame(rows, columns=["item", "rater", "label"])


def few_items(n: int) -> pd.DataFrame:
    """Two raters on ``n`` items with a defined kappa (both categories used, some disagreement)."""
    a = ["A", "B"] * (n // 2) + ["A"] * (n % 2)
    b = list(a)
    b[0] = "B"
    return pd.DataFrame({"item": list(range(n)) * 2, "rater": ["x"] * n + ["y"] * n, "label": a + b})


# --------------------------------------------------------------------------- finding 7: sparse pairwise output


def test_pairwise_matrix_hides_pairs_below_min_overlap_and_says_how_many():
    df = sparse_panel()
    every = ag.pairwise_matrix(df, n_boot=0, no_overlap="nan", min_overlap=0)
    n_pairs = len(every)
    assert n_pairs == 106 * 105 // 2 + (0 if df["rater"].nunique() == 106 else 106)  # every pair when asked
    shown = ag.pairwise_matrix(df, n_boot=50, no_overlap="nan")  # default min_overlap=10
    assert len(shown) == (every["n_items"] >= 10).sum() and 1 <= len(shown) <= 6
    assert (shown["n_items"] >= 10).all() and shown["ci_low"].notna().all()
    hidden = n_pairs - len(shown)
    assert shown["note"].str.contains(f"{hidden} of {n_pairs} rater pairs share fewer than 10 items and are hidden "
                                      r"(min_overlap=0 shows them)", regex=False).all()
    # a dense panel hides nothing and says nothing
    dense = ag.pairwise_matrix(few_items(40), n_boot=0)
    assert len(dense) == 1 and "hidden" not in dense["note"].iloc[0]


def test_agreement_report_pairwise_section_filters_with_one_note_row():
    df = sparse_panel()
    rep = ag.agreement_report(df, metrics=["cohen_kappa"], pairwise=True, n_boot=0)
    pw = rep[rep["section"] == "pairwise"]
    summary = pw[pw["raters"] == ""]
    assert len(summary) == 1 and re.fullmatch(r"\d+ of \d+ rater pairs share fewer than 10 items and are hidden "
                                              r"\(min_overlap=0 shows them\)", summary["note"].iloc[0])
    assert (pw.loc[pw["raters"] != "", "n_items"] >= 10).all()
    full = ag.agreement_report(df, metrics=["cohen_kappa"], pairwise=True, n_boot=0, min_overlap=0)
    assert (full["section"] == "pairwise").sum() == len(ag.pairwise_matrix(df, n_boot=0, no_overlap="nan",
                                                                           min_overlap=0))


def test_cli_pairwise_table_hides_sparse_pairs_with_a_footnote(tmp_path, capsys):
    from medeval_kit.cli import main

    f = tmp_path / "sparse.csv"
    df = sparse_panel()
    df.to_csv(f, index=False)
    n_pairs = len(ag.pairwise_matrix(df, n_boot=0, no_overlap="nan", min_overlap=0))
    assert main(["agreement", str(f), "--metric", "cohen_kappa", "--pairwise", "--n-boot", "20"]) == 0
    out = capsys.readouterr().out
    m = re.search(r"(\d+) of (\d+) rater pairs share fewer than 10 items and are hidden \(--min-overlap 0 shows "
                  r"them\)", out)
    assert m and int(m.group(2)) == n_pairs and int(m.group(1)) >= n_pairs - 6
    pairs = out[out.index("Every rater pair"):]
    assert "no overlapping items" not in pairs and len(pairs.splitlines()) < 15
    assert main(["agreement", str(f), "--metric", "cohen_kappa", "--pairwise", "--n-boot", "0", "--format", "json",
                 "--min-overlap", "0"]) == 0
    recs = [r for r in json.loads(capsys.readouterr().out) if r["section"] == "pairwise"]
    assert len(recs) == n_pairs and all(len(r["raters"]) == 2 for r in recs)
    assert main(["agreement", str(f), "--metric", "cohen_kappa", "--pairwise", "--n-boot", "0", "--format",
                 "json"]) == 0
    recs = [r for r in json.loads(capsys.readouterr().out) if r["section"] == "pairwise"]
    note = [r for r in recs if r["raters"] == []]
    assert len(note) == 1 and len(recs) == 7 and "rater pairs share fewer than 10 items" in note[0]["note"]
    assert main(["agreement", str(f), "--metric", "cohen_kappa", "--pairwise", "--n-boot", "0", "--format", "csv"]) == 0
    csv = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out), keep_default_na=False)
    pw = csv[csv["section"] == "pairwise"]
    assert (pw["raters"] == "").sum() == 1 and "are hidden" in pw.loc[pw["raters"] == "", "note"].iloc[0]


def test_no_ci_from_fewer_items_than_the_bootstrap_supports():
    from medeval_kit.stats import MIN_CI_ITEMS, ci_not_computed

    assert MIN_CI_ITEMS == 10 and ci_not_computed(10) == ""
    assert ci_not_computed(1) == "CI not computed: n_items = 1 < 10"
    r = ag.cohen_kappa(few_items(4), n_boot=200)
    assert np.isfinite(r.estimate) and np.isnan(r.ci_low) and np.isnan(r.ci_high) and r.ci_method == ""
    assert "CI not computed: n_items = 4 < 10" in r.note
    for method in ("analytic", "bca"):  # kappa's analytic interval is a large-sample normal one
        r = ag.cohen_kappa(few_items(4), n_boot=200, ci_method=method)
        assert np.isnan(r.ci_low) and "CI not computed: n_items = 4 < 10" in r.note
    assert np.isnan(ag.cohen_kappa(few_items(4), n_boot=0).ci_low)
    wilson = ag.percent_agreement(few_items(4), n_boot=200, ci_method="analytic")  # valid at any n: kept
    assert np.isfinite(wilson.ci_low) and "Wilson" in wilson.ci_method
    ok = ag.cohen_kappa(few_items(10), n_boot=200)
    assert np.isfinite(ok.ci_low) and "CI not computed" not in ok.note  # 10 items is enough
    # with min_overlap=0 the single-item pairs are shown, but never with a CI
    pm = ag.pairwise_matrix(sparse_panel(), n_boot=50, no_overlap="nan", min_overlap=0)
    small = pm[(pm["n_items"] > 0) & (pm["n_items"] < 10)]
    assert len(small) and small["ci_low"].isna().all()
    defined = small[small["estimate"].notna()]
    assert len(defined) and defined["note"].str.contains("CI not computed: n_items = ").all()


def test_the_engine_never_resamples_fewer_items_than_the_rule_allows():
    """One place: every agreement bootstrap (designs, ceilings, ensembles) draws through engine.replicates."""
    F = np.eye(4)[np.array([0, 3, 0, 3, 1, 0, 3, 3, 0, 2, 0, 3])]
    fn = lambda S: S[:, 0] / S.sum(1)  # noqa: E731
    small, big = Stat(F, fn, 9), Stat(F, fn, 12)
    reps = replicates([small, big], 50, 0)
    assert np.isnan(reps[:, 0]).all() and np.isfinite(reps[:, 1]).all()


# --------------------------------------------------------------------------- finding 11a: review-queue tie-break


def test_review_queue_breaks_ties_by_margin_then_item_not_float_noise():
    third = 1 / 3  # 0.33333333333333331
    noisy = np.nextafter(np.nextafter(third, 1), 1)  # 0.33333333333333337: the same margin up to rounding
    ent = 0.6931471805599453
    c = pd.DataFrame({
        "judge": "j", "criterion": "overall", "item": ["a", "b", "c"], "resolution": "calibrated",
        "entropy": [np.nextafter(ent, 0), ent, ent], "margin": [noisy, third, 0.5], "mec_bpc": "A",
        "p_a": 0.5, "p_b": 0.5, "p_tie": 0.0, "n_ok": 4, "n_failed": 0})
    q = cal.review_queue(c)
    assert q["item"].tolist() == ["a", "b", "c"]  # a and b tie on entropy and |margin|: the item decides
    assert cal.review_queue(c.iloc[::-1].reset_index(drop=True))["item"].tolist() == ["a", "b", "c"]


# --------------------------------------------------------------------------- finding 11b: n_boot=0


def test_n_boot_zero_gives_the_analytic_interval_where_one_exists():
    df = few_items(60)
    r = ag.cohen_kappa(df, n_boot=0)
    assert np.isfinite(r.ci_low) and r.ci_low < r.estimate < r.ci_high and "analytic" in r.ci_method
    explicit = ag.cohen_kappa(df, n_boot=0, ci_method="analytic")
    assert (r.ci_low, r.ci_high, r.ci_method) == (explicit.ci_low, explicit.ci_high, explicit.ci_method)
    pa = ag.percent_agreement(df, n_boot=0)
    assert "Wilson" in pa.ci_method and np.isfinite(pa.ci_low)
    alpha = ag.krippendorff_alpha(df, n_boot=0)  # no analytic interval: no CI, and the note says why
    assert np.isnan(alpha.ci_low) and alpha.ci_method == ""
    assert "no CI: n_boot=0 and krippendorff_alpha has no analytic interval" in alpha.note
    rep = ag.agreement_report(df, metrics=["percent_agreement", "cohen_kappa", "krippendorff_alpha"], n_boot=0,
                              pairwise=True)
    assert rep.set_index(["section", "metric"]).loc[("pairwise", "cohen_kappa"), "ci_method"] == r.ci_method
    arch = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert "`n_boot=0`" in arch and "analytic interval" in arch


# --------------------------------------------------------------------------- finding 11c: error dependence


def copy_panel(seed: int, *, copies: bool, n_items: int = 300, n_humans: int = 5, accuracy: float = 0.7):
    """Physicians of equal accuracy; the judge has that accuracy too. ``copies``: on a random half of the items the
    judge gives physician 1's label (errors included), elsewhere its own independent label."""
    rng = np.random.default_rng(seed)
    K = 3
    truth = rng.integers(0, K, n_items)

    def rater():
        wrong = (truth + rng.integers(1, K, n_items)) % K
        return np.where(rng.random(n_items) < accuracy, truth, wrong)

    labels = {f"h{i + 1}": rater() for i in range(n_humans)}
    own = rater()
    labels["gpt"] = np.where(rng.random(n_items) < 0.5, labels["h1"], own) if copies else own
    rows = [(i, r, "ABC"[v], "llm" if r == "gpt" else "human") for r, lab in labels.items()
            for i, v in enumerate(lab)]
    return pd.DataFrame(rows, columns=["item", "rater", "label", "rater_kind"])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_error_dependence_flags_a_judge_that_copies_one_physician(seed):
    from medeval_kit.agreement.dependence import dependence_warnings, error_dependence

    t = error_dependence(copy_panel(seed, copies=True), n_boot=300, seed=seed)
    judge = t[t["role"] == "judge"].set_index("human")
    assert judge.loc["h1", "tracks"] and not judge.drop(index="h1")["tracks"].any()
    assert judge.loc["h1", "estimate"] > 0.2 and judge.loc["h1", "ci_low"] > 0  # estimate: the excess
    assert judge.loc["h1", "estimate"] == judge.loc["h1", "with_human"] - judge.loc["h1", "with_others"]
    assert {"rater", "role", "human", "metric", "estimate", "ci_low", "ci_high", "ci_method", "with_human",
            "with_others", "human_max_excess", "n_items", "tracks", "note"} <= set(t.columns)
    humans = t[t["role"] == "human"]
    assert len(humans) == 5 * 4 and humans["tracks"].isna().all()  # the baseline: every physician with each other
    warn = dependence_warnings(copy_panel(seed, copies=True), None, None, n_boot=300, seed=seed)
    assert len(warn) == 1 and warn[0].startswith("warning: judge gpt tracks human h1: ")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_error_dependence_leaves_an_independent_judge_alone(seed):
    from medeval_kit.agreement.dependence import dependence_warnings, error_dependence

    df = copy_panel(seed, copies=False)
    t = error_dependence(df, humans=[f"h{i}" for i in range(1, 6)], judges=["gpt"], n_boot=300, seed=seed)
    assert not t.loc[t["role"] == "judge", "tracks"].any()
    assert dependence_warnings(df, None, None, n_boot=300, seed=seed) == []


def test_error_dependence_on_sparse_pairs_says_why_there_is_no_test():
    from medeval_kit.agreement.dependence import error_dependence

    df = copy_panel(0, copies=True, n_items=40)
    df = df[~((df["rater"] == "h2") & (df["item"] >= 5))]  # h2 shares only 5 items with anybody
    t = error_dependence(df, n_boot=100)
    assert "h2" not in set(t["human"]) | set(t["rater"])  # 5 shared items < min_overlap=10: left out
    t = error_dependence(df, n_boot=100, min_overlap=0)
    row = t[(t["role"] == "judge") & (t["human"] == "h2")].iloc[0]
    assert np.isnan(row["ci_low"]) and not row["tracks"] and "CI not computed" in row["note"]


def test_architecture_warns_about_dependent_errors():
    arch = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert "error_dependence" in arch and "tracks one physician" in arch
