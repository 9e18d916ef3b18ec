"""Planning (issue 22, item 4): the panel model, the simulated power, the planned n, ``medeval plan``."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from medeval_kit.agreement.alt_test import alt_test
from medeval_kit.agreement.alt_test_planning import alt_passed, alt_sums, plan_alt_test
from medeval_kit.agreement.data import AgreementError
from medeval_kit.agreement.designs import judge_vs_humans
from medeval_kit.agreement.panel import PanelError
from medeval_kit.agreement.panel_model import (
    REFERENCE_JUDGE,
    PlanningError,
    panel_model,
    panel_model_from,
    simulate_codes,
    simulate_panel,
)
from medeval_kit.agreement.plan_check import validate_plan
from medeval_kit.agreement.planning import PLAN_COLUMNS, _FastVerdicts, plan_judge_vs_humans
from medeval_kit.cli import main
from medeval_kit.datasets import load_pandalm
from medeval_kit.datasets.synthetic import synthetic_panel


def _acc(kappa: float, K: int = 3) -> float:
    """Accuracy of the synthetic_panel model: the true class with probability sqrt(kappa), else a uniform guess."""
    r = math.sqrt(kappa)
    return r + (1 - r) / K


@pytest.fixture(scope="module")
def pilot(tmp_path_factory):
    """The bundled PandaLM panel (3 annotators, 2 judges) as a pilot CSV, as a user would have it."""
    f = tmp_path_factory.mktemp("plan") / "pandalm_pilot.csv"
    load_pandalm().annotations.to_csv(f, index=False)
    return f


# --------------------------------------------------------------------------- the model


def test_model_recovers_known_accuracies_on_a_big_panel():
    t = synthetic_panel(n_items=4000, n_humans=4, n_judges=2, kappa=0.5, judge_kappa=[0.5, 0.8], seed=3)
    m = panel_model(t)
    assert m.humans == ("h1", "h2", "h3", "h4") and m.judges == ("llm1", "llm2")
    np.testing.assert_allclose(m.human_accuracy, _acc(0.5), atol=0.02)
    np.testing.assert_allclose(m.judge_accuracy, [_acc(0.5), _acc(0.8)], atol=0.02)
    np.testing.assert_allclose(m.prevalence, 1 / 3, atol=0.03)
    assert m.raters_per_item == 4 and m.n_physicians == 4 and m.n_items == 4000
    np.testing.assert_allclose(m.judge_coverage, 1.0)
    # the confusion rows are distributions; the off-diagonal is the guess (1 - sqrt(kappa)) / 3
    np.testing.assert_allclose(m.human_confusion.sum(2), 1.0)
    off = m.human_confusion[:, ~np.eye(3, dtype=bool)]
    np.testing.assert_allclose(off, (1 - math.sqrt(0.5)) / 3, atol=0.03)


def test_model_of_a_sparse_panel_and_a_judge_with_gaps():
    t = synthetic_panel(n_items=3000, n_humans=12, kappa=0.6, labels_per_item=(2, 4), seed=5)
    drop = (t["rater"] == "llm1") & (np.arange(len(t)) % 10 == 0)
    m = panel_model(t[~drop])
    assert m.raters_per_item == 3 and m.n_physicians == 12
    assert abs(float(m.human_accuracy.mean()) - _acc(0.6)) < 0.02
    assert 0.85 < m.judge_coverage[0] < 0.95


def test_simulated_panel_reproduces_the_pilot():
    """The pilot's own judge-vs-humans numbers come back from panels simulated from its model."""
    from medeval_kit.agreement import judge_vs_humans

    a = load_pandalm().annotations
    m = panel_model(a)
    seen = judge_vs_humans(a, n_boot=0).table.set_index("rater")["estimate"]
    sims = []
    for s in range(8):
        t = simulate_panel(m, 999, seed=s)
        hum = sorted(t.loc[t.rater_kind == "human", "rater"].unique())
        sims.append(judge_vs_humans(t, hum, list(m.judges), n_boot=0).table["estimate"].to_numpy())
    np.testing.assert_allclose(np.mean(sims, 0), seen.to_numpy(), atol=0.03)


def test_model_from_stated_values():
    m = panel_model_from(accuracy_humans=0.8, categories=["yes", "no"], prevalence=[0.3, 0.7])
    np.testing.assert_allclose(m.human_accuracy, 0.8)
    np.testing.assert_allclose(m.judge_accuracy, 0.8)  # default: as good as the physicians
    assert m.categories == ("yes", "no") and m.raters_per_item == 3
    k = panel_model_from(kappa=0.64, judge_kappa=0.81, n_physicians=10, raters_per_item=2)
    np.testing.assert_allclose(k.human_accuracy, _acc(0.64))
    np.testing.assert_allclose(k.judge_accuracy, _acc(0.81))
    t = simulate_panel(k, 300, seed=2)
    per_item = t[t.rater_kind == "human"].groupby("item").size()
    assert set(per_item) == {2} and t.loc[t.rater_kind == "human", "rater"].nunique() == 10
    with pytest.raises(PlanningError, match="accuracy_humans"):
        panel_model_from()
    with pytest.raises(PlanningError, match="prevalence"):
        panel_model_from(accuracy_humans=0.8, categories=3, prevalence=[0.5, 0.5])
    with pytest.raises(PlanningError, match="accuracy"):
        panel_model_from(accuracy_humans=1.3)


# --------------------------------------------------------------------------- power and the planned n


def test_power_increases_with_n_and_the_table_is_tidy():
    m = panel_model_from(kappa=0.6, n_physicians=3)
    plan = plan_judge_vs_humans(m, margin=0.15, power=0.8, design="pooled", reference=False, n_sim=60, n_boot=100,
                                seed=1)
    t = plan.to_frame()
    assert list(t.columns) == PLAN_COLUMNS
    assert (t["power_ci_low"] <= t["power"]).all() and (t["power"] <= t["power_ci_high"]).all()
    t = t.sort_values("n_items")
    assert t["power"].iloc[-1] > t["power"].iloc[0] + 0.3
    rho = pd.Series(t["power"].to_numpy()).corr(pd.Series(t["n_items"].to_numpy()), method="spearman")
    assert rho > 0.7
    row = plan.planned.iloc[0]
    assert row["status"] == "planned" and t["n_items"].min() <= row["planned_n"] <= t["n_items"].max()
    full = t[t["n_sim"] == 60]
    assert (full.loc[full["n_items"] >= row["planned_n"] * 1.3, "power"] >= 0.7).all()
    assert "seed 1" in plan.simulation() and "n_boot=100" in plan.simulation()


def test_judge_below_the_margin_is_not_reachable():
    m = panel_model_from(accuracy_humans=0.9, accuracy_judge=0.6, n_physicians=3)
    plan = plan_judge_vs_humans(m, margin=0.05, n_sim=20, n_boot=50, seed=0)
    rows = plan.planned.set_index("judge")
    assert rows.loc["judge", "status"] == "not_reachable" and "expected delta" in rows.loc["judge", "reason"]
    assert rows.loc[REFERENCE_JUDGE, "status"] == "planned"
    assert (plan.table.loc[plan.table["judge"] == "judge", "power"] <= 0.05).all()


def test_several_raters_per_item_each_get_a_plan():
    m = panel_model_from(kappa=0.6, n_physicians=6)
    plan = plan_judge_vs_humans(m, margin=0.15, raters_per_item=[2, 3], reference=False, n_sim=20, n_boot=50)
    assert list(plan.planned["raters_per_item"]) == [2, 3]
    assert set(plan.table["raters_per_item"]) == {2, 3}
    assert (plan.planned["n_physicians"] == 6).all()


def test_alt_test_plan_items_and_epsilon():
    m = panel_model_from(accuracy_humans=0.8, accuracy_judge=[0.85, 0.45], n_physicians=3, judges=("good", "poor"))
    np.testing.assert_allclose(m.judge_accuracy, [0.85, 0.45])
    plan = plan_alt_test(m, epsilon=0.2, power=0.8, reference=False, n_sim=40, epsilon_items=100, seed=2)
    rows = plan.planned.set_index("judge")
    assert rows.loc["good", "status"] == "planned" and rows.loc["good", "planned_n"] >= 30
    assert rows.loc["poor", "status"] == "not_reachable"
    eps = plan.epsilon_planned.set_index("judge")
    assert (eps["check_mismatches"] == 0).all()  # the epsilon curve agrees with alt_test's own verdict
    assert eps.loc["poor", "epsilon_needed"] > 0.2 > eps.loc["good", "epsilon_needed"]
    curve = plan.epsilon[plan.epsilon["judge"] == "poor"].sort_values("epsilon")["power"]
    assert curve.is_monotonic_increasing


def _reference_verdicts(m, n, r, P, seed, k, design, metric, margin, n_boot):
    """Each judge's ``noninferior`` from judge_vs_humans on the simulated table (None: it raised)."""
    t = simulate_panel(m, n, r, P, seed=seed)
    try:
        tab = judge_vs_humans(t, sorted(t.loc[t.rater_kind == "human", "rater"].unique()), list(m.judges),
                              design=design, metric=metric, margin=margin, n_boot=n_boot, seed=k,
                              categories=list(m.categories), accept_label_warnings=True).table
    except (AgreementError, PanelError):
        return None
    j = tab[tab["role"] == "judge"].set_index("rater")["noninferior"].reindex(list(m.judges))
    return j.fillna(False).astype(bool).tolist()


@pytest.mark.parametrize("design", ["loo", "pooled"])
def test_fast_verdicts_are_the_verdicts_of_judge_vs_humans(design):
    """The plan's fast path gives judge_vs_humans' verdict on every panel: small and large panels, 2-4
    categories, physicians who labelled nothing, judges with gaps or with no label, every kind of metric."""
    rng = np.random.default_rng(7 if design == "loo" else 8)
    metrics = ["cohen_kappa", "percent_agreement", "gwet_ac1", "scott_pi", "macro_f1"]
    seen = {"fast": 0, "handed_on": 0, "True": 0, "False": 0, "None": 0}
    for case in range(40):
        K = int(rng.integers(2, 5))
        r = int(rng.integers(2, 4))
        P = r + int(rng.integers(0, 3))
        m = panel_model_from(kappa=float(rng.uniform(0.3, 0.8)), judge_kappa=float(rng.uniform(0.1, 0.8)),
                             categories=K, n_physicians=P, raters_per_item=r).with_reference()
        m = replace(m, judge_coverage=np.array([rng.choice([1.0, 0.6, 0.03]), 1.0]))
        metric, margin, n_boot = metrics[case % len(metrics)], float(rng.choice([0.05, 0.15])), 60
        fast = _FastVerdicts(m, design, metric, margin, n_boot, 0.95)
        for k in range(3):
            n = int(rng.choice([3, 6, 25, 120]))
            seed = [case, n, k]
            ref = _reference_verdicts(m, n, r, P, seed, k, design, metric, margin, n_boot)
            got = fast(*simulate_codes(m, n, r, P, seed=seed), k)
            if got is NotImplemented:  # the plan runs judge_vs_humans on this panel
                seen["handed_on"] += 1
                continue
            seen["fast"] += 1
            assert (None if got is None else got.tolist()) == ref, (case, k, n, metric)
            for v in [None] if ref is None else ref:
                seen[str(v)] += 1
    # one category nearly always: under leave-one-out kappa is undefined for every physician (the panel fails)
    m = panel_model_from(kappa=0.9, categories=2, prevalence=[0.999, 0.001], n_physicians=3)
    fast = _FastVerdicts(m, design, "cohen_kappa", 0.2, 80, 0.95)
    for k in range(6):
        ref = _reference_verdicts(m, 40, 3, 3, [k], k, design, "cohen_kappa", 0.2, 80)
        got = fast(*simulate_codes(m, 40, 3, 3, seed=[k]), k)
        assert (None if got is None else got.tolist()) == ref, k
        seen[str(ref and ref[0])] += 1
    assert seen["fast"] >= 80 and seen["handed_on"] >= 5, seen
    assert min(seen["True"], seen["False"]) >= 30 and (seen["None"] >= 3) == (design == "loo"), seen


def test_validation_is_the_same_on_either_path():
    """validate_plan, plan and fresh panels, with fast_path=False (judge_vs_humans on every panel) and the default:
    the same planned n and the same realised power."""
    m = panel_model_from(kappa=0.6, n_physicians=3)
    kw = dict(designs=["loo"], powers=[0.8], margin=0.2, n_fresh=40, n_sim=20, n_boot=80, n_boot_check=200, seed=2)
    a, b = validate_plan(m, **kw), validate_plan(m, fast_path=False, **kw)
    timing = ["plan_seconds", "check_seconds"]
    pd.testing.assert_frame_equal(a.drop(columns=timing), b.drop(columns=timing), check_exact=True)
    assert 0 < a["realised_power"].iloc[0] < 1


def test_fast_alt_test_sums_and_verdicts_are_alt_tests():
    """The alt-test plan's fast path: the per-physician sums and ``passed`` of alt_test on every panel (small and
    large, 2-4 categories, physicians who labelled nothing, judges with gaps or with no label, several epsilon)."""
    rng = np.random.default_rng(3)
    seen = {"fast": 0, "handed_on": 0, "True": 0, "False": 0}
    for case in range(30):
        K, r = int(rng.integers(2, 5)), int(rng.integers(2, 4))
        P = r + int(rng.integers(0, 3))
        m = panel_model_from(accuracy_humans=float(rng.uniform(0.5, 0.9)),
                             accuracy_judge=[float(rng.uniform(0.3, 0.95)), float(rng.uniform(0.6, 0.95))],
                             categories=K, n_physicians=P, raters_per_item=r, judges=("a", "b"))
        m = replace(m, judge_coverage=np.array([rng.choice([1.0, 0.6, 0.02]), 1.0]))
        eps, q, min_items = float(rng.choice([0.0, 0.1, 0.2, 0.35])), 0.05, int(rng.choice([2, 10, 30]))
        for k in range(3):
            n = int(rng.choice([3, 12, 50, 150]))
            codes, _, _ = simulate_codes(m, n, r, P, seed=[case, k])
            st = alt_sums(codes, P, m.K, 2, min_items)
            if st is None:
                seen["handed_on"] += 1
                continue
            seen["fast"] += 1
            t = simulate_panel(m, n, r, P, seed=[case, k])
            res = alt_test(t, sorted(t.loc[t.rater_kind == "human", "rater"].unique()), ["a", "b"], epsilon=eps,
                           q_fdr=q, min_items_per_human=min_items, scoring="accuracy", accept_label_warnings=True)
            for j, name in enumerate(["a", "b"]):
                d = res.details[res.details["judge"] == name]
                np.testing.assert_array_equal(st[j]["n"][0], d["n_items"])
                n_items = d["n_items"].to_numpy()
                dd = np.nan_to_num(np.round((d["rho_human"] - d["rho_llm"]).to_numpy() * n_items))  # no item: 0
                np.testing.assert_array_equal(st[j]["dd"][0], dd)
                np.testing.assert_array_equal(st[j]["k"][0], d["n_items"] - d["n_ties"])
                np.testing.assert_array_equal(st[j]["tested"][0], d["skipped_reason"] == "")
                want = bool(res.results.set_index("judge").loc[name, "passed"])
                assert alt_passed(st[j], eps, q) == want, (case, k, name)
                seen[str(want)] += 1
    assert seen["fast"] >= 60 and seen["handed_on"] >= 3 and min(seen["True"], seen["False"]) >= 20, seen


def test_fast_and_reference_alt_test_plans_are_identical():
    m = panel_model_from(accuracy_humans=0.8, accuracy_judge=0.85, n_physicians=3)
    kw = dict(epsilon=0.2, reference=False, n_sim=20, epsilon_items=60, seed=4)
    a, b = plan_alt_test(m, **kw), plan_alt_test(m, fast_path=False, **kw)
    for x, y in [(a.table, b.table), (a.planned, b.planned), (a.epsilon, b.epsilon),
                 (a.epsilon_planned, b.epsilon_planned)]:
        pd.testing.assert_frame_equal(x, y, check_exact=True)
    assert (a.epsilon_planned["check_mismatches"] == 0).all()


def test_bad_plan_parameters():
    m = panel_model_from(kappa=0.6)
    with pytest.raises(PlanningError, match="power"):
        plan_judge_vs_humans(m, power=1.2)
    with pytest.raises(PlanningError, match="design"):
        plan_judge_vs_humans(m, design="medqade")
    with pytest.raises(PlanningError, match="raters_per_item"):
        plan_judge_vs_humans(m, raters_per_item=1)
    with pytest.raises(PlanningError, match="n_physicians"):
        plan_judge_vs_humans(m, raters_per_item=4, n_physicians=3)


@pytest.mark.slow
def test_realised_power_at_the_planned_n_is_within_5_points():
    """The issue's validation: >= 200 fresh panels (here 400: other seeds, the study's 1000 resamples) at the planned n.

    With 200 panels the Monte Carlo SE of the realised power alone is 2.8 points; 400 keep the check about the plan."""
    m = panel_model_from(kappa=0.6, n_physicians=3)
    t = validate_plan(m, designs=["pooled"], powers=[0.8], margin=0.15, n_fresh=400, n_sim=200, seed=11,
                      fresh_seed=424242)
    row = t.iloc[0]
    assert row["n_fresh"] == 400 and np.isfinite(row["planned_n"])
    assert abs(row["realised_power"] - 0.8) <= 0.05, t.to_string()


# --------------------------------------------------------------------------- the command


def test_cli_plan_on_the_pandalm_pilot(pilot, capsys):
    rc = main(["plan", "judge-vs-humans", str(pilot), "--margin", "0.05", "--power", "0.8", "--n-sim", "20",
               "--seed", "3"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "Power by number of items" in out and "Planned number of items" in out and "Assumptions" in out
    assert "gpt-3.5-turbo: not reachable" in out and f"{REFERENCE_JUDGE}: " in out
    assert "Dawid-Skene" in out and "seed 3" in out and "n_boot=200" in out


def test_cli_plan_json_and_csv(pilot, capsys):
    rc = main(["plan", "judge-vs-humans", str(pilot), "--judges", "gpt-3.5-turbo", "--design", "pooled",
               "--n-sim", "20", "--n-boot", "50", "--format", "json"])  # the output is tested, not the power
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["design"] == "pooled" and doc["seed"] == 0 and doc["pilot"] == str(pilot)
    assert {r["judge"] for r in doc["planned"]} == {"gpt-3.5-turbo", REFERENCE_JUDGE}
    assert set(PLAN_COLUMNS) <= set(doc["power"][0])
    assert any("Dawid-Skene" in x for x in doc["assumptions"])
    rc = main(["plan", "judge-vs-humans", "--kappa", "0.6", "--margin", "0.15", "--n-sim", "20", "--no-reference",
               "--n-boot", "50", "--format", "csv"])
    assert rc == 0
    from io import StringIO

    t = pd.read_csv(StringIO(capsys.readouterr().out))
    assert list(t.columns) == PLAN_COLUMNS and set(t["judge"]) == {"judge"}


def test_cli_plan_without_a_pilot(capsys):
    rc = main(["plan", "judge-vs-humans", "--accuracy-humans", "0.85", "--accuracy-judge", "0.85", "--categories",
               "2", "--margin", "0.15", "--raters-per-item", "2-3", "--physicians", "4", "--n-sim", "20",
               "--n-boot", "50"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "stated values" in out and "2 physicians per item of 4" in out and "3 physicians per item of 4" in out


def test_cli_plan_alt_test(pilot, capsys):
    rc = main(["plan", "alt-test", str(pilot), "--epsilon", "0.2", "--n-sim", "20", "--judges", "pandalm-7b"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "epsilon: the smallest epsilon" in out and "pandalm-7b: not reachable at epsilon 0.2" in out


@pytest.mark.parametrize("argv, words", [
    (["--item", "question"], ["pandalm_pilot.csv", "'question'"]),
    (["--humans", "annotator1", "dr_who"], ["dr_who", "not found"]),
    (["--power", "1.5"], ["--power"]),
    (["--raters-per-item", "two"], ["--raters-per-item"]),
    (["--kappa", "0.6"], ["--kappa", "without a pilot"]),
])
def test_cli_plan_errors_are_one_line(pilot, capsys, argv, words):
    rc = main(["plan", "judge-vs-humans", str(pilot), "--n-sim", "20", *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("medeval: error: ") and err.count("\n") == 1, err
    for w in words:
        assert w in err, err


def test_cli_plan_errors_without_a_pilot(capsys):
    rc = main(["plan", "judge-vs-humans", "--n-sim", "20"])
    err = capsys.readouterr().err
    assert rc == 2 and "--accuracy-humans" in err and "--kappa" in err and err.startswith("medeval: error: ")
    rc = main(["plan", "judge-vs-humans", "--kappa", "0.6", "--prevalence", "0.5", "0.2", "--n-sim", "20"])
    err = capsys.readouterr().err
    assert rc == 2 and "--prevalence" in err and "Traceback" not in err
    rc = main(["plan", "alt-test", "--accuracy-humans", "1.4", "--n-sim", "20"])
    err = capsys.readouterr().err
    assert rc == 2 and "accuracy" in err and err.startswith("medeval: error: ")
