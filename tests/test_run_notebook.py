"""Issue 21: `medeval run --notebook NAME` / `medeval run own.ipynb` run one notebook once, on the user's file, in
the user's project (outputs in <root>/runs/<notebook>/<run>/, papermill's cwd and the kernel's MEDEVAL_ROOT the
project root); `medeval list` in a project without studies/ lists the notebooks."""

import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from nbbuild import build  # noqa: E402

from medeval_kit import paths  # noqa: E402
from medeval_kit.cli import main  # noqa: E402
from medeval_kit.cli import notebook_run as nr  # noqa: E402
from medeval_kit.cli.runner import notebook_parameters  # noqa: E402
from medeval_kit.errors import StudyError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

OWN_PARAMS = '''
study: str = "own"  # study
data_path: str = ""  # the user's file
figures_dir: str = "figures"  # figures
tables_dir: str = "tables"  # tables
fail_calls: int = 0  # failed LLM calls to record in the call log
'''
OWN_CODE = '''import json, os, pathlib
from medeval_kit import paths
pathlib.Path(tables_dir).mkdir(parents=True, exist_ok=True)
seen = {"cwd": os.getcwd(), "env_root": os.environ.get("MEDEVAL_ROOT"), "root": str(paths.root()),
        "run_id": os.environ.get("MEDEVAL_RUN_ID"), "budget": os.environ.get("MEDEVAL_RUN_BUDGET_USD"),
        "rows": len(pathlib.Path(data_path).read_text().splitlines())}
pathlib.Path(tables_dir, "seen.json").write_text(json.dumps(seen))
if fail_calls:
    with open(os.environ["MEDEVAL_CALL_LOG"], "a") as f:
        f.write(json.dumps({"model": "m", "n_requests": fail_calls, "n_failed": fail_calls,
                            "failed_reasons": {"timeout": fail_calls}}) + "\\n")
'''


@pytest.fixture()
def project(tmp_path, monkeypatch):
    """A user's project: a marker file, a data/ folder, no studies/ and no notebooks/; cwd inside it."""
    proj = tmp_path / "proj"
    (proj / "data").mkdir(parents=True)
    (proj / paths.MARKER).write_text("")
    monkeypatch.delenv(paths.ENV_VAR, raising=False)
    monkeypatch.chdir(proj)
    return proj.resolve()


@pytest.fixture()
def own_notebook(tmp_path):
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    path = folder / "my analysis.ipynb"
    build(str(path), "# My analysis", OWN_PARAMS, [("## Look", OWN_CODE)])
    return path


def _ratings(path: Path) -> Path:
    rng = np.random.default_rng(3)
    rows = []
    for i in range(24):
        truth = rng.integers(0, 3)
        for r in ("dr_a", "dr_b", "dr_c", "gpt_judge"):
            g = truth if rng.random() < 0.75 else rng.integers(0, 3)
            rows.append({"case_id": f"case{i:02d}", "annotator": r, "grade": ["good", "fair", "poor"][g]})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _files(folder: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()} if folder.exists() else {}


@pytest.mark.slow
def test_notebook_agreement_on_your_file_only(project, capsys):
    """`--notebook agreement` on a small CSV: one run, in <project>/runs/agreement/mine/, only the user's tables
    (no bundled dataset, no published numbers), nothing written in the toolkit's checkout."""
    _ratings(project / "data" / "mine.csv")
    before = {d: _files(ROOT / d / "agreement") for d in ("tables", "figures")}
    rc = main(["run", "--notebook", "agreement", "--quiet", "-p", "annotations_path=data/mine.csv",
               "-p", "item=case_id", "-p", "rater=annotator", "-p", "label=grade", "-p", "humans=dr_a,dr_b,dr_c",
               "-p", "n_boot=20"])
    out = capsys.readouterr().out
    assert rc == 0, out
    run = project / "runs" / "agreement" / "mine"
    assert (run / "mine.ipynb").is_file()
    tables = sorted(p.name for p in (run / "tables").iterdir())
    assert tables and all(t.startswith("your_data_") for t in tables), tables
    assert not [t for t in tables if "published" in t or "pandalm" in t]
    coeffs = pd.read_csv(run / "tables" / "your_data_coefficients.csv")
    assert set(coeffs["n_items"]) == {24}
    assert sorted(p.name for p in (project / "runs").rglob("*") if p.is_dir() and p.parent.name == "runs") == [
        "agreement"]
    assert {d: _files(ROOT / d / "agreement") for d in ("tables", "figures")} == before
    assert not (ROOT / "runs" / "agreement" / "mine").exists()
    assert paths.ENV_VAR not in os.environ  # restored after the run


@pytest.mark.slow
def test_own_notebook_runs_in_the_project(project, own_notebook):
    """An own .ipynb by path: cwd and the kernel's MEDEVAL_ROOT are the project root, the relative *_path is read
    from the caller's folder, the run id reaches the kernel, outputs go to runs/<notebook>/<file stem>/."""
    (project / "data" / "x.csv").write_text("a\n1\n2\n")
    assert main(["run", str(own_notebook), "--quiet", "-p", "data_path=data/x.csv"]) == 0
    seen = json.loads((project / "runs" / "my_analysis" / "x" / "tables" / "seen.json").read_text())
    assert seen["cwd"] == seen["env_root"] == seen["root"] == str(project)
    assert seen["rows"] == 3 and seen["run_id"] and seen["budget"] is None
    assert not (own_notebook.parent / "tables").exists()


@pytest.mark.slow
def test_failed_calls_and_budget_reach_a_notebook_run(project, own_notebook, capsys):
    """The call log fails a --notebook run whose LLM calls got no reply (unless allowed); --budget-usd reaches
    the kernel."""
    (project / "data" / "x.csv").write_text("a\n")
    rc = main(["run", str(own_notebook), "--quiet", "--name", "failing", "-p", "data_path=data/x.csv",
               "-p", "fail_calls=3", "--budget-usd", "0.5"])
    out = capsys.readouterr().out
    assert rc == 1 and "3 of 3 LLM calls failed" in out and "timeout x3" in out, out
    seen = json.loads((project / "runs" / "my_analysis" / "failing" / "tables" / "seen.json").read_text())
    assert float(seen["budget"]) == 0.5
    rc = main(["run", str(own_notebook), "--quiet", "--name", "failing", "--allow-failed-calls",
               "-p", "data_path=data/x.csv", "-p", "fail_calls=3"])
    assert rc == 0


def test_list_without_studies_lists_the_notebooks(project, capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "no studies yet" in out
    assert "judge_validation" in out and "agreement" in out
    assert main(["list", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["studies"] == {} and "position_bias" in listed["notebooks"]


def test_run_without_studies_says_how_to_run_a_notebook(project, capsys):
    assert main(["run", "agreement"]) == 2
    assert "medeval run --notebook NAME" in capsys.readouterr().err


def test_find_notebook_prefers_the_project(project):
    assert nr.find_notebook("agreement") == (paths.notebooks_dir() / "agreement.ipynb").resolve()
    (project / "notebooks").mkdir()
    build(str(project / "notebooks" / "agreement.ipynb"), "# Ours", OWN_PARAMS, [])
    assert nr.find_notebook("agreement") == project / "notebooks" / "agreement.ipynb"
    with pytest.raises(StudyError, match="not found"):
        nr.find_notebook("no_such_notebook")


def test_run_names_are_plain():
    assert nr.run_name({"annotations_path": "/x/my ratings (v2).csv"}) == "my_ratings_v2"
    assert nr.run_name({"n_boot": 3}) == nr.DEFAULT_RUN
    assert nr.run_name({"annotations_path": "/x/...csv"}) == nr.DEFAULT_RUN
    assert nr.run_name({}, "mine-2") == "mine-2"
    with pytest.raises(StudyError, match="plain name"):
        nr.run_name({}, "../up")


def _study(nb, name, overrides):
    return nr.notebook_study(nb, name, overrides, notebook_parameters(nb))


def test_relative_defaults_are_read_from_the_notebook_folder(project):
    """position_bias's default judgments_path (../tables/judging/judgments.csv) still names the toolkit's table
    when papermill runs in the project root; a -p value is left to the user."""
    nb = nr.find_notebook("position_bias")
    study = _study(nb, "defaults", {})
    params = study.runs[0].parameters
    assert params["judgments_path"] == str(nb.parent.parent / "tables" / "judging" / "judgments.csv")
    assert "figures_dir" not in params and "tables_dir" not in params
    assert "judgments_path" not in _study(nb, "x", {"judgments_path": "mine.csv"}).runs[0].parameters


def test_notebook_and_publish_are_exclusive(project, capsys):
    assert main(["run", "--notebook", "agreement", "--publish"]) == 2
    assert "--publish" in capsys.readouterr().err
    assert main(["run", "missing.ipynb"]) == 2
    assert "no such notebook" in capsys.readouterr().err
    assert not (project / "runs").exists()


def test_your_file_turns_the_bundled_reproductions_off(project):
    """A notebook declaring `reproduce` runs only the user's file when a *_path is given, unless -p reproduce=...;
    without a file it keeps its default (what its study runs)."""
    nb = nr.find_notebook("position_bias")
    params = _study(nb, "x", {"judgments_path": "mine.csv"}).runs[0].parameters
    assert params[nr.REPRODUCE] is False
    mine = _study(nb, "x", {"judgments_path": "m.csv", "reproduce": True})
    assert nr.REPRODUCE not in mine.runs[0].parameters
    assert nr.REPRODUCE not in _study(nb, "x", {"n_boot": 5}).runs[0].parameters
    # a notebook without the parameter is left alone
    agreement = _study(nr.find_notebook("agreement"), "x", {"annotations_path": "m.csv"})
    assert nr.REPRODUCE not in agreement.runs[0].parameters
