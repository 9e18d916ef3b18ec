"""Your data first (issue 13, item 3): every analysis notebook takes the user's file and column names as
parameters, and `medeval run <study> -p ...` analyses it.

Each notebook is executed with papermill on a small file whose columns are NOT the tidy names
(`case_id`, `annotator`, `grade`, ...), with outputs in tmp_path and the LLM cache in replay mode, and
the tables are checked to come from that file (its item count, its raters, its failure tokens).
"""

import ast
import contextlib
import io
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"

N_CASES = 16  # pairs in the judgments fixtures
N_RATED = 24  # items in the annotations fixture
N_TRACES = 12  # items in the rounds fixture
HUMANS = ["dr_a", "dr_b", "dr_c"]


# --------------------------------------------------------------------------- the user's files
def _ratings(path: Path) -> Path:
    """24 cases x 3 physicians + 1 judge, grades good/fair/poor; one 'n/a' grade (a missing-label token)."""
    rng = np.random.default_rng(3)
    grades = ["good", "fair", "poor"]
    rows = []
    for i in range(N_RATED):
        truth = rng.integers(0, 3)
        for r in HUMANS + ["gpt_judge"]:
            g = truth if rng.random() < 0.75 else rng.integers(0, 3)
            rows.append({"case_id": f"case{i:02d}", "annotator": r, "grade": grades[g]})
    rows[5]["grade"] = "n/a"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _calls(path: Path) -> Path:
    """16 pairs judged by one judge in both orders (column 'presentation'), winners in model terms; the
    BA call of q03 failed ('error'); response lengths in 'words_a' / 'words_b'."""
    rng = np.random.default_rng(5)
    rows = []
    for i in range(N_CASES):
        la, lb = int(rng.integers(20, 200)), int(rng.integers(20, 200))
        for o in ("AB", "BA"):
            first = rng.random() < 0.7
            w = ("A" if o == "AB" else "B") if first else ("B" if o == "AB" else "A")
            if rng.random() < 0.1:
                w = "tie"
            if i == 3 and o == "BA":
                w = "error"
            rows.append({"case_id": f"q{i:02d}", "model": "judge_x", "presentation": o, "winner": w,
                         "words_a": la, "words_b": lb})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _human_labels(path: Path) -> Path:
    """The 16 pairs labelled A / B / tie by 3 physicians."""
    rng = np.random.default_rng(7)
    rows = [{"case_id": f"q{i:02d}", "annotator": r, "grade": str(rng.choice(["A", "B", "tie"], p=[.45, .45, .1]))}
            for i in range(N_CASES) for r in HUMANS]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _scores(path: Path) -> Path:
    """Correctness (0/1) of three students' answers, scored by the students and two more raters."""
    rng = np.random.default_rng(11)
    students = ["gemma-3-4b", "qwen3-4b", "gpt-5-nano"]
    rows = [{"case_id": f"q{i:02d}", "student": s, "grader": g, "correct": int(rng.random() < 0.6)}
            for i in range(30) for s in students for g in students + ["gemma-3-27b", "gemini-2.5-flash"]]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _traces(path: Path) -> Path:
    """12 refinement traces of 1-3 iterations with one quality score (0-1) each; no component/stop/best."""
    rng = np.random.default_rng(0)
    rows = [{"case_id": f"c{i:02d}", "iteration": r, "quality": float(min(1.0, 0.5 + 0.1 * r + rng.normal(0, 0.05)))}
            for i in range(N_TRACES) for r in range(1, 2 + i % 3)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


N_PAIRS = 30  # pairs in the ranking fixture


def _pairs(path: Path) -> Path:
    """30 cases, each one pair of three models (round robin), judged by the physicians and by an LLM judge;
    'winner' names the better model or says tie; the judge's verdict on case p03 failed ('error')."""
    rng = np.random.default_rng(13)
    strength = {"gpt-a": 0.8, "llama-b": 0.0, "mistral-c": -0.8}
    names = list(strength)
    rows = []
    for i in range(N_PAIRS):
        a, b = names[i % 3], names[(i + 1) % 3]
        for rater in ("physicians", "llm"):
            p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
            w = "tie" if rng.random() < 0.1 else (a if rng.random() < p else b)
            if i == 3 and rater == "llm":
                w = "error"
            rows.append({"case_id": f"p{i:02d}", "m1": a, "m2": b, "rater": rater, "winner": w})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


# --------------------------------------------------------------------------- the loaders behind the notebooks
def test_user_judgments_renames_maps_and_counts_failures(tmp_path):
    from medeval_kit import bias

    j = bias.read_judgments(_calls(tmp_path / "calls.csv"), failed="error",
                            columns={"item": "case_id", "judge": "model", "order": "presentation", "verdict": "winner"})
    assert len(j) == 2 * N_CASES and set(j["protocol"]) == {"pairwise"} and set(j["criterion"]) == {"overall"}
    assert set(j["repeat"]) == {0} and set(j["judge"]) == {"judge_x"}
    bad = j[j["parse_status"] == "failed"]
    assert list(bad["item"]) == ["q03"] and bad["raw"].iloc[0] == "error" and bad["verdict"].isna().all()
    ok = j[j["parse_status"] == "ok"]
    # model terms -> presented slots: A shown first in AB, B shown first in BA
    first = ((ok["order"] == "AB") & (ok["verdict"] == "A")) | ((ok["order"] == "BA") & (ok["verdict"] == "B"))
    assert (ok.loc[first, "slot_verdict"] == "first").all() and (ok.loc[~first & (ok["verdict"] != "tie"),
                                                                        "slot_verdict"] == "second").all()


def test_user_judgments_slot_terms_and_one_order(tmp_path):
    from medeval_kit import bias

    pd.DataFrame({"pair": ["p1", "p2", "p3"], "pick": ["first", "Second", "tie"]}).to_csv(tmp_path / "s.csv",
                                                                                          index=False)
    j = bias.read_judgments(tmp_path / "s.csv", columns={"item": "pair", "verdict": "pick"}, verdict_terms="slot")
    # no order column under its default name: one order, AB (A shown first)
    assert list(j["order"]) == ["AB"] * 3 and list(j["verdict"]) == ["A", "B", "tie"]
    assert list(j["slot_verdict"]) == ["first", "second", "tie"]


def test_user_judgments_errors_name_the_file_column_and_rows(tmp_path):
    from medeval_kit import bias
    from medeval_kit.errors import SchemaError

    calls = _calls(tmp_path / "calls.csv")
    cols = {"item": "case_id", "judge": "model", "order": "presentation", "verdict": "winner"}
    with pytest.raises(SchemaError) as e:
        bias.read_judgments(calls, columns=cols)  # 'error' is not a verdict unless it is a failure token
    msg = str(e.value)
    assert str(calls) in msg and "'winner'" in msg and "rows [7]" in msg and "failed='error'" in msg
    with pytest.raises(SchemaError, match="look like slot terms: set verdict_terms to slot"):
        bias.read_judgments(_slot_file(tmp_path), columns={"item": "pair", "verdict": "pick"})
    with pytest.raises(SchemaError, match=r"column\(s\) \['grader'\] not found; present: \['case_id'"):
        bias.read_judgments(calls, columns={**cols, "judge": "grader"})


def _slot_file(tmp_path: Path) -> Path:
    pd.DataFrame({"pair": ["p1", "p1"], "order": ["AB", "BA"], "pick": ["first", "second"]}).to_csv(
        tmp_path / "slots.csv", index=False)
    return tmp_path / "slots.csv"


def test_user_rounds_fills_the_optional_columns(tmp_path):
    from medeval_kit import rounds
    from medeval_kit.errors import SchemaError

    traces = _traces(tmp_path / "traces.csv")
    r = rounds.read_rounds(traces, columns={"item": "case_id", "round": "iteration", "score": "quality"})
    d = pd.read_csv(traces)
    assert len(r) == len(d) and set(r["component"]) == {"overall"} and set(r["aspect"]) == {"total"}
    last = r.groupby("item")["round"].transform("max")
    assert (r["stop"] == (r["round"] == last)).all()  # each trace stops at its last round
    assert r.groupby("item")["best"].sum().eq(1).all()  # one best round per trace, the highest score
    best = r[r["best"]].set_index("item")["score"]
    assert (best == r.groupby("item")["score"].max().reindex(best.index)).all()
    with pytest.raises(SchemaError, match=r"column\(s\) \['step'\] not found"):
        rounds.read_rounds(traces, columns={"item": "case_id", "round": "step", "score": "quality"})


def test_user_study_takes_missing_tokens_and_other_tools_formats(tmp_path):
    from format_fixtures import HUMAN

    from medeval_kit import agreement as ag

    st = ag.read_study(_ratings(tmp_path / "r.csv"), humans=",".join(HUMANS), missing="n/a",
                       columns={"item": "case_id", "rater": "annotator", "label": "grade"})
    assert st.judges == ["gpt_judge"] and int(st.annotations["label"].isna().sum()) == 1
    mt = ag.read_study(HUMAN, from_format="mtbench_human")  # rater_kind comes from the reader
    assert mt.humans and "gpt-4" in mt.judges


# --------------------------------------------------------------------------- running a notebook
@pytest.fixture
def replay(monkeypatch):
    """No LLM call can be made: the kernels inherit MEDEVAL_CACHE_MODE=replay."""
    monkeypatch.setenv("MEDEVAL_CACHE_MODE", "replay")


def _execute(notebook: str, out: Path, **params) -> tuple[Path, Path]:
    """Execute ``notebook`` with ``params`` and outputs under ``out``; return (tables, figures) folders.

    A notebook with bundled reproductions gets ``reproduce=False``, as ``medeval run --notebook`` gives it with a
    ``*_path``: the bundled sections are what nbval runs (``make test``), and the two side by side are tested by
    the ``medeval run <study> -p ...`` runs below (agreement, position_bias), whose notebooks keep reproducing."""
    from medeval_kit.cli import runner

    if "reproduce" in runner.notebook_parameters(NOTEBOOKS / notebook):
        params = {"reproduce": False, **params}
    import papermill as pm

    tables, figures = out / "tables", out / "figures"
    out.mkdir(parents=True, exist_ok=True)
    from medeval_kit.cli.warm_kernels import AsyncWarmKernelManager

    pm.execute_notebook(str(NOTEBOOKS / notebook), str(out / notebook), cwd=str(NOTEBOOKS), progress_bar=False,
                        kernel_name="python3", kernel_manager_class=AsyncWarmKernelManager,  # tests/conftest.py
                        parameters={"figures_dir": str(figures), "tables_dir": str(tables), **params})
    return tables, figures


def _csv(folder: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(folder / f"{name}.csv", keep_default_na=False, na_values=[""])


def _run_study(argv: list[str]) -> tuple[int, str]:
    """``medeval <argv>`` in this process with the LLM cache in replay mode (no judge can be called); its exit
    code and everything it printed."""
    from medeval_kit.cli import main

    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        mp.setenv("MEDEVAL_CACHE_MODE", "replay")
        rc = main(argv)
    return rc, printed.getvalue()


@pytest.fixture(scope="module")
def agreement_run(tmp_path_factory):
    """`medeval run agreement -p annotations_path=... -p item=... -p rater=... -p label=...` on the ratings file,
    once for the module: its pandalm run executes agreement.ipynb (papermill) on the file with exactly the
    parameters the notebook test gives, so the notebook test and the run test read the same execution."""
    tmp = tmp_path_factory.mktemp("agreement_run")
    ratings = _ratings(tmp / "ratings.csv")
    committed = sorted((ROOT / "tables" / "agreement").iterdir())
    stamps = {p: p.stat().st_mtime_ns for p in committed}
    rc, printed = _run_study(["run", "agreement", "--quiet", "--out", str(tmp / "runs"), "-p",
                              f"annotations_path={ratings}", "-p", "item=case_id", "-p", "rater=annotator", "-p",
                              "label=grade", "-p", "humans=dr_a,dr_b,dr_c", "-p", "missing=n/a", "-p", "n_boot=20"])
    return SimpleNamespace(rc=rc, printed=printed, runs=tmp / "runs" / "agreement", committed=committed,
                           stamps=stamps)


@pytest.fixture(scope="module")
def position_bias_run(tmp_path_factory):
    """`medeval run position_bias -p judgments_path=... ...` on the calls file, once for the module: its
    position_bias run executes position_bias.ipynb (papermill) on the file with the parameters the notebook test
    gives, after judging/local_pairwise (which the study needs) has analysed the same file."""
    tmp = tmp_path_factory.mktemp("position_bias_run")
    calls = _calls(tmp / "calls.csv")
    rc, printed = _run_study(["run", "position_bias", "--quiet", "--out", str(tmp / "runs"), "-p",
                              f"judgments_path={calls}", "-p", "item=case_id", "-p", "judge=model", "-p",
                              "order=presentation", "-p", "verdict=winner", "-p", "failed=error", "-p",
                              "data_name=my_judge", "-p", "data_title=My judge", "-p", "n_boot=20"])
    return SimpleNamespace(rc=rc, printed=printed, runs=tmp / "runs", calls=calls)


# --------------------------------------------------------------------------- the notebooks on the user's files
@pytest.mark.slow
@pytest.mark.xdist_group("your_data_agreement_run")
def test_agreement_notebook_on_your_file(agreement_run):
    """agreement.ipynb on the ratings file (annotations_path, item, rater, label, humans, missing, n_boot=20), as
    executed by the pandalm run of `medeval run agreement` (see ``agreement_run``)."""
    assert agreement_run.rc == 0, agreement_run.printed
    tables, figures = agreement_run.runs / "pandalm" / "tables", agreement_run.runs / "pandalm" / "figures"
    counts = _csv(tables, "your_data_label_counts")
    assert sorted(counts["rater"]) == sorted(HUMANS + ["gpt_judge"])
    assert {"good", "fair", "poor", "<NA>"} <= set(counts.columns)  # "n/a" became a missing label, counted
    assert counts["n_items"].sum() == 4 * N_RATED
    coeffs = _csv(tables, "your_data_coefficients")
    assert set(coeffs["n_items"]) == {N_RATED}
    vs = _csv(tables, "your_data_judges_vs_humans")
    assert "gpt_judge" in set(vs["rater"])
    assert (figures / "your_data_kappa_heatmap.png").exists()
    # the bundled datasets' outputs and published numbers are not written for your file
    assert not list(tables.glob("pandalm_*")) and not (tables / "published_numbers.csv").exists()


@pytest.mark.slow
def test_judging_notebook_analyses_your_judgments(tmp_path, replay):
    calls, humans = _calls(tmp_path / "calls.csv"), _human_labels(tmp_path / "humans.csv")
    tables, _ = _execute("judging.ipynb", tmp_path / "out", judgments_path=str(calls), item="case_id", judge="model",
                         order="presentation", verdict="winner", failed="error", annotations_path=str(humans),
                         rater="annotator", label="grade", n_boot=20)
    judgments = _csv(tables, "judgments")
    assert len(judgments) == 2 * N_CASES and set(judgments["judge"]) == {"judge_x"}
    failures = _csv(tables, "parse_failures")
    assert failures["n_calls"].sum() == 2 * N_CASES and failures["n_failed"].sum() == 1  # the one 'error'
    vs = _csv(tables, "judge_vs_humans").set_index("rater")
    assert set(vs["n_judged_items"]) == {N_CASES} and set(vs["n_humans"]) == {len(HUMANS)}
    assert vs.loc["judge_x [AB only]", "n_judge_labels"] == N_CASES  # every AB call parsed
    assert vs.loc["judge_x [BA only]", "n_judge_labels"] == N_CASES - 1  # q03's BA call is the 'error'
    effects = _csv(tables, "order_effects")
    assert effects.loc[effects["metric"] == "flip_rate", "n_items"].iloc[0] == N_CASES - 1  # q03 lost its BA call


@pytest.mark.slow
@pytest.mark.xdist_group("your_data_position_bias_run")
def test_position_bias_notebook_on_your_judgments(position_bias_run):
    """position_bias.ipynb on the calls file (judgments_path, item, judge, order, verdict, failed, data_name,
    data_title, n_boot=20), as executed by the position_bias run of `medeval run position_bias` (see
    ``position_bias_run``)."""
    assert position_bias_run.rc == 0, position_bias_run.printed
    calls = position_bias_run.calls
    tables = position_bias_run.runs / "position_bias" / "position_bias" / "tables"
    figures = position_bias_run.runs / "position_bias" / "position_bias" / "figures"
    res = _csv(tables, "my_judge_position_bias").set_index("metric")
    assert res.loc["flip_rate", "n_items"] == N_CASES - 1 and res.loc["first_slot_rate", "n_failed"] == 1
    # the first-slot rate is the share of parsed non-tie calls won by the slot shown first, from the file
    d = pd.read_csv(calls)
    ok = d[d["winner"].isin(["A", "B"])]
    first = ((ok["presentation"] == "AB") & (ok["winner"] == "A")) | ((ok["presentation"] == "BA") & (ok["winner"] == "B"))
    assert res.loc["first_slot_rate", "estimate"] == pytest.approx(first.mean(), abs=1e-6)
    assert (figures / "my_judge_flip_rates.png").exists()
    assert not list(tables.glob("local_judge_*"))
    assert (tables / "synthetic_position_bias.csv").exists()  # the bundled reproduction still follows


@pytest.mark.slow
def test_length_and_self_preference_notebook_on_your_files(tmp_path, replay):
    calls, scores = _calls(tmp_path / "calls.csv"), _scores(tmp_path / "scores.csv")
    tables, _ = _execute("length_and_self_preference.ipynb", tmp_path / "out", judgments_path=str(calls),
                         item="case_id", judge="model", order="presentation", verdict="winner", failed="error",
                         len_a="words_a", len_b="words_b", scores_path=str(scores), model="student",
                         rater="grader", score="correct", n_boot=20)
    longer = _csv(tables, "your_data_longer_preferred").iloc[0]
    d = pd.read_csv(calls)
    use = d["winner"].isin(["A", "B"]) & (d["words_a"] != d["words_b"])
    assert longer["judge"] == "judge_x" and longer["n"] == int(use.sum()) and longer["n_failed"] == 1
    logit = _csv(tables, "your_data_length_logit")
    assert {"length", "position_first"} <= set(logit["metric"])  # both orders: the position term is in
    self_pref = _csv(tables, "your_data_self_preference")
    assert {"gemma-3-4b", "qwen3-4b", "gpt-5-nano"} <= set(self_pref["judge"])  # the graders who are students
    own = self_pref[(self_pref["judge"] == "gemma-3-4b") & (self_pref["metric"] == "delta_self")].iloc[0]
    assert own["n_items"] == 30


@pytest.mark.slow
def test_rounds_notebook_on_your_traces(tmp_path, replay):
    traces = _traces(tmp_path / "traces.csv")
    tables, figures = _execute("rounds.ipynb", tmp_path / "out", rounds_path=str(traces), item="case_id",
                               round="iteration", score="quality", data_name="mine", data_title="My traces",
                               n_boot=20)
    summary = _csv(tables, "mine_load_summary").iloc[0]
    d = pd.read_csv(traces)
    assert summary["n_items"] == N_TRACES and summary["n_item_rounds"] == len(d)
    means = _csv(tables, "mine_round_means")
    avail = means[means["imputation"] == "available"].set_index("round")
    assert list(avail.index) == [1, 2, 3]
    assert avail.loc[1, "n_items"] == N_TRACES and avail.loc[3, "n_items"] == (d["iteration"] == 3).sum()
    assert avail.loc[1, "estimate"] == pytest.approx(d.loc[d["iteration"] == 1, "quality"].mean(), abs=1e-5)
    assert (figures / "mine_round_means.png").exists() and not list(tables.glob("model_*"))


@pytest.mark.slow
def test_rankings_notebook_on_your_pairs(tmp_path, replay):
    pairs = _pairs(tmp_path / "pairs.csv")
    tables, figures = _execute("rankings.ipynb", tmp_path / "out", pairs_path=str(pairs), item="case_id",
                               model_a="m1", model_b="m2", verdict="winner", judge="rater", failed="error",
                               reference="physicians", data_name="my_pairs", n_boot=20, n_orders=2)
    r = _csv(tables, "my_pairs_ratings")
    assert set(r["judge"]) == {"physicians", "llm"} and set(r["model"]) == {"gpt-a", "llama-b", "mistral-c"}
    per_judge = r.groupby("judge")[["n_items", "n_failed"]].max()
    assert per_judge.loc["physicians"].tolist() == [N_PAIRS, 0]
    assert per_judge.loc["llm"].tolist() == [N_PAIRS - 1, 1]  # the one 'error' is a failed verdict, not a tie
    ag = _csv(tables, "my_pairs_rank_agreement")
    assert set(ag["judge"]) == {"llm"} and set(ag["reference"]) == {"physicians"}
    assert (figures / "my_pairs_ratings.png").exists() and (figures / "my_pairs_rank_agreement.png").exists()
    assert not list(tables.glob("demo_*"))
    assert not (tables / "pandalm_rank_agreement.csv").exists()  # reproduce=False


@pytest.mark.slow
def test_position_calibration_notebook_on_your_judgments(tmp_path, replay):
    calls, humans = _calls(tmp_path / "calls.csv"), _human_labels(tmp_path / "humans.csv")
    tables, figures = _execute("position_calibration.ipynb", tmp_path / "out", judgments_path=str(calls),
                               item="case_id", judge="model", order="presentation", verdict="winner", failed="error",
                               annotations_path=str(humans), rater="annotator", label="grade", data_name="my_judge",
                               n_boot=20)
    queue = _csv(tables, "my_judge_review_queue")
    assert len(queue) == N_CASES and list(queue.loc[0, ["item", "reason"]]) == ["q03", "judge failed"]
    # the one-call agreement, recomputed from the files: per item with both orders parsed and a human
    # plurality label, the mean over the two orders of (winner == label)
    d, h = pd.read_csv(calls), pd.read_csv(humans)
    counts = h.groupby(["case_id", "grade"]).size().unstack(fill_value=0)
    top = counts.max(axis=1)
    plural = counts.idxmax(axis=1)[(counts == top.to_numpy()[:, None]).sum(axis=1) == 1]
    ok = d[d["winner"] != "error"].groupby("case_id").filter(lambda g: len(g) == 2)
    ok = ok[ok["case_id"].isin(plural.index)]
    expected = (ok["winner"] == ok["case_id"].map(plural)).groupby(ok["case_id"]).mean().mean()
    eff = _csv(tables, "my_judge_calibration_effect").set_index(["metric", "method", "comparison"])
    assert eff.loc[("accuracy", "vanilla", "level"), "estimate"] == pytest.approx(expected, abs=1e-6)
    assert eff.loc[("accuracy", "vanilla", "level"), "n_items"] == ok["case_id"].nunique()
    assert eff.loc[("accuracy", "bpc", "level"), "n_failed"] == 1  # q03 lost its BA call
    assert (figures / "my_judge_budget_curve.png").exists()
    assert not list(tables.glob("demo_*"))
    assert not (tables / "synthetic_scores_effect.csv").exists()  # reproduce=False


N_STUDENTS = 40  # examinees in the item-analysis fixture


def _answers(path: Path) -> Path:
    """40 students x 12 questions, letters A-D in column 'answer', keys in 'solution', student ids in 'student',
    question ids in 'qid'; two answers left empty (missing, not wrong)."""
    rng = np.random.default_rng(13)
    ability = rng.normal(size=N_STUDENTS)
    rows = []
    for q in range(12):
        key = "ABCD"[q % 4]
        for s in range(N_STUDENTS):
            right = rng.random() < 1 / (1 + np.exp(-(ability[s] - (q - 6) / 4)))
            rows.append({"qid": f"Q{q:02d}", "student": f"s{s:02d}", "solution": key,
                         "answer": key if right else str(rng.choice([x for x in "ABCD" if x != key]))})
    rows[3]["answer"] = ""
    rows[50]["answer"] = ""
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_item_analysis_notebook_on_your_answers(tmp_path, replay):
    answers = _answers(tmp_path / "answers.csv")
    tables, figures = _execute("item_analysis.ipynb", tmp_path / "out", responses_path=str(answers), item="qid",
                               examinee="student", choice="answer", key="solution", data_name="my_exam", n_boot=20)
    stats = _csv(tables, "my_exam_item_statistics")
    assert stats["item"].nunique() == 12 and set(stats["statistic"]) == {"difficulty", "point_biserial", "upper_lower"}
    p = stats[stats["statistic"] == "difficulty"].set_index("item")
    assert p["n_items"].sum() == 12 * N_STUDENTS - 2 and p["n_failed"].sum() == 2  # missing, counted, not wrong
    d = pd.read_csv(answers, keep_default_na=False)
    q0 = d[(d["qid"] == "Q00") & (d["answer"] != "")]
    assert p.loc["Q00", "estimate"] == pytest.approx((q0["answer"] == q0["solution"]).mean(), abs=1e-6)
    assert set(_csv(tables, "my_exam_distractors")["option"]) == set("ABCD")
    assert (figures / "my_exam_difficulty_discrimination.png").exists()
    assert not (tables / "item_counts.csv").exists()  # reproduce=False: the bundled analysis is skipped


@pytest.mark.slow
def test_aspect_search_notebook_on_your_files(tmp_path, replay):
    from medeval_kit.datasets.synthetic import synthetic_aspect_scores

    s, p = synthetic_aspect_scores(n_items=25, n_aspects=6, n_planted=2, seed=4, missing=0.05)
    s = s.rename(columns={"item": "case_id", "system": "model", "score": "points"})
    s["model"] = s["model"].map({"A": "gpt4", "B": "refined"})
    s.to_csv(tmp_path / "scores.csv", index=False)
    p.rename(columns={"item": "case_id", "preference": "winner"}).to_csv(tmp_path / "labels.csv", index=False)
    tables, figures = _execute("aspect_search.ipynb", tmp_path / "out", scores_path=str(tmp_path / "scores.csv"),
                               labels_path=str(tmp_path / "labels.csv"), item="case_id", system="model",
                               score="points", label="winner", system_a="gpt4", system_b="refined",
                               data_name="mine", replicates=1, max_k=3, n_aspects=8)
    sel = _csv(tables, "mine_aspect_selection")
    assert set(sel["objective"]) == {"kappa", "agreement"} and (sel["n_items"] == 25).all()
    assert (figures / "mine_best_by_size.png").exists() and not list(tables.glob("demo_*"))


# --------------------------------------------------------------------------- medeval run -p ...
YOURS = {  # study -> the parameters that point it at the user's data
    "agreement": {"annotations_path": "x.csv", "item": "case_id", "rater": "annotator", "label": "grade"},
    "judging": {"judgments_path": "x.csv", "item": "case_id", "verdict": "winner", "annotations_path": "h.csv",
                "rater": "annotator", "label": "grade"},
    "position_bias": {"judgments_path": "x.csv", "item": "case_id", "verdict": "winner"},
    "length_and_self_preference": {"judgments_path": "x.csv", "item": "case_id", "verdict": "winner",
                                   "scores_path": "s.csv", "rater": "grader"},
    "rounds": {"rounds_path": "x.csv", "item": "case_id", "round": "iteration", "score": "quality"},
    "position_calibration": {"judgments_path": "x.csv", "item": "case_id", "verdict": "winner",
                             "annotations_path": "h.csv", "rater": "annotator", "label": "grade"},
    "aspect_search": {"scores_path": "x.csv", "labels_path": "h.csv", "item": "case_id", "system": "model",
                      "score": "points", "label": "winner"},
    "rankings": {"pairs_path": "x.csv", "item": "case_id", "model_a": "m1", "model_b": "m2", "verdict": "winner",
                 "judge": "rater"},
}


def _effective(run, overrides: dict) -> dict:
    """A run's parameters as the runner sets them: notebook defaults, the run's own, then -p overrides."""
    from medeval_kit.cli import runner

    declared = runner.notebook_parameters(run.notebook)
    params = {k: ast.literal_eval(p["default"]) for k, p in declared.items()}
    params.update(run.parameters)
    params.update({k: v for k, v in overrides.items() if k in declared})
    runner.check_parameters(run.notebook, {k: v for k, v in overrides.items() if k in declared})
    return params


@pytest.mark.parametrize("study", sorted(YOURS))
def test_every_analysis_study_takes_your_data_once(study):
    """Each -p reaches a notebook of the study; exactly one run of the study analyses the user's data
    (the others keep reproducing their bundled data with your_data: false)."""
    from medeval_kit.cli import runner

    runs = [r for r in runner.load_studies()[study].runs]
    declared = set().union(*(runner.notebook_parameters(r.notebook) for r in runs))
    assert set(YOURS[study]) <= declared, sorted(set(YOURS[study]) - declared)
    path_keys = [k for k in YOURS[study] if k.endswith("_path")]
    takers = [r.name for r in runs if _effective(r, YOURS[study]).get("your_data", True)
              and any(k in runner.notebook_parameters(r.notebook) for k in path_keys)]
    assert len(takers) == 1, (study, takers)


@pytest.mark.slow
@pytest.mark.xdist_group("your_data_agreement_run")
def test_medeval_run_agreement_with_your_file(agreement_run):
    """`medeval run agreement -p annotations_path=... -p item=... -p rater=... -p label=...`: the pandalm run
    analyses the file (once), the other runs reproduce their bundled datasets, nothing committed is touched."""
    assert agreement_run.rc == 0, agreement_run.printed
    runs, committed, stamps = agreement_run.runs, agreement_run.committed, agreement_run.stamps
    mine = _csv(runs / "pandalm" / "tables", "your_data_coefficients")
    assert set(mine["n_items"]) == {N_RATED}
    assert not list((runs / "medqg_table19" / "tables").glob("your_data_*"))
    assert (runs / "medqg_table19" / "tables" / "medqg_table19_coefficients.csv").exists()
    assert (runs / "printed" / "tables" / "published_numbers.csv").exists()
    assert sorted((ROOT / "tables" / "agreement").iterdir()) == committed
    assert all(p.stat().st_mtime_ns == t for p, t in stamps.items())


@pytest.mark.slow
@pytest.mark.xdist_group("your_data_position_bias_run")
def test_medeval_run_position_bias_with_your_file(position_bias_run):
    """The study needs judging/local_pairwise: with -p judgments_path both analyse the user's file, and no judge
    is called (the cache is in replay mode)."""
    assert position_bias_run.rc == 0, position_bias_run.printed
    runs = position_bias_run.runs
    res = _csv(runs / "position_bias" / "position_bias" / "tables", "my_judge_position_bias")
    assert res.loc[res["metric"] == "flip_rate", "n_items"].iloc[0] == N_CASES - 1
    judged = _csv(runs / "judging" / "local_pairwise" / "tables", "judgments")
    assert len(judged) == 2 * N_CASES


# --------------------------------------------------------------------------- schema_format reaches the client
SCHEMA_RUNS = {  # notebook -> the smallest run that still makes schema-constrained calls
    "judging.ipynb": {"n_items": 2, "repeats": 1, "n_boot": 0},
    "generate_mcq.ipynb": {"n_items": 1, "max_rounds": 1, "k_shots": 0, "overlap_notes": 2},
    "grounded.ipynb": {"n_chunks": 1, "max_topics": 1, "n_human": 1},
}


@pytest.mark.slow
@pytest.mark.parametrize("notebook", sorted(SCHEMA_RUNS))
def test_schema_format_reaches_an_openai_compatible_server(notebook, tmp_path, monkeypatch):
    """A server that refuses json_schema (llama.cpp's HTTP 500): the notebook's schema_format=json_object is
    what reaches it, for every call; the default stays json_schema, so committed cache keys do not change."""
    import sys

    from medeval_kit.cli import runner

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from llm_helpers import temp_project
    from stub_server import StubServer

    declared = runner.notebook_parameters(NOTEBOOKS / notebook)
    assert ast.literal_eval(declared["schema_format"]["default"]) == "json_schema"
    temp_project(monkeypatch, tmp_path / "project")  # a fresh cache: every call reaches the server
    monkeypatch.delenv("MEDEVAL_CACHE_MODE", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with StubServer(refuse_formats=("json_schema",)) as srv:
        model = f"openai/gpt-4o-mini@{srv.openai_url}"
        key = "judge_model" if notebook == "judging.ipynb" else "model"
        _execute(notebook, tmp_path / "out", **{key: model, "schema_format": "json_object", "cache_mode": "use"},
                 **SCHEMA_RUNS[notebook])
        formats = dict(srv.state.formats)
    assert formats.get("json_object", 0) > 0 and formats.get("json_schema", 0) == 0, formats
