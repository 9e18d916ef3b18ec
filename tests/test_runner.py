"""Study runner: parallel runs, failure isolation, parameter checks, and the CLI."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from nbbuild import build  # noqa: E402

from medeval_kit.cli import runner  # noqa: E402
from medeval_kit.errors import ParameterError, StudyError  # noqa: E402

PARAMS = '''
study: str = "demo"  # study
figures_dir: str = "../figures/demo"  # figures
tables_dir: str = "../tables/demo"  # tables
n: int = 3  # how many
fail: bool = False  # raise on purpose
'''


@pytest.fixture()
def project(tmp_path, monkeypatch):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "studies").mkdir()
    build(str(tmp_path / "notebooks" / "work.ipynb"), "# work", PARAMS, [
        ("## write", 'import pathlib\npathlib.Path(tables_dir).mkdir(parents=True, exist_ok=True)\n'
                     'pathlib.Path(tables_dir, f"n{n}.txt").write_text(str(n * 2))'),
        ("## maybe fail", 'if fail:\n    raise ValueError("planted failure")'),
    ])
    (tmp_path / "studies" / "demo.yaml").write_text(
        "description: demo\nruns:\n"
        "  - {name: a, notebook: work.ipynb, parameters: {n: 1}}\n"
        "  - {name: bad, notebook: work.ipynb, parameters: {n: 2, fail: true}}\n"
        "  - {name: after_bad, notebook: work.ipynb, parameters: {n: 3}, needs: [bad]}\n"
        "  - {name: after_a, notebook: work.ipynb, parameters: {n: 4}, needs: [a]}\n"
    )
    monkeypatch.setenv("MEDEVAL_ROOT", str(tmp_path))
    return tmp_path


def test_failure_is_isolated_and_named(project, capfd):
    results = {r.run.name: r for r in runner.run_studies(["demo"], jobs=2, progress=False)}
    # issue 13: the kernels' "TCP without encryption" / "KeyboardInterrupt caught in kernel" noise is gone
    noise = capfd.readouterr().err
    assert "without encryption" not in noise and "KeyboardInterrupt" not in noise
    assert results["a"].status == "ok" and results["after_a"].status == "ok"
    assert results["bad"].status == "failed"
    assert "ValueError: planted failure" in results["bad"].error
    assert results["bad"].cell is not None
    assert results["after_bad"].status == "skipped" and "demo/bad" in results["after_bad"].error
    assert (project / "tables" / "demo" / "n1.txt").read_text() == "2"
    assert (project / "runs" / "demo" / "a.ipynb").exists()
    assert "FAILED" in results["bad"].line() and "work.ipynb cell" in results["bad"].line()


def test_overrides_are_type_checked(project):
    with pytest.raises(ParameterError, match=r"work\.ipynb: parameter 'n' must be int, got str 'x'"):
        runner.run_studies(["demo"], overrides={"n": "x"}, progress=False)
    with pytest.raises(ParameterError, match="no selected notebook declares parameter"):
        runner.run_studies(["demo"], overrides={"nope": 1}, progress=False)
    with pytest.raises(ParameterError, match="unknown parameter 'zz'"):
        runner.check_parameters(project / "notebooks" / "work.ipynb", {"zz": 1})
    assert runner.check_parameters(project / "notebooks" / "work.ipynb", {"n": 5}) == {"n": 5}


def test_bad_study_files(project):
    (project / "studies" / "broken.yaml").write_text("runs: [{name: x}]\n")
    with pytest.raises(StudyError, match=r"broken\.yaml: runs\[0\] needs a 'notebook' key"):
        runner.load_studies()
    (project / "studies" / "broken.yaml").write_text(
        "runs:\n  - {name: x, notebook: work.ipynb, needs: [ghost]}\n")
    with pytest.raises(StudyError, match="needs 'broken/ghost', which no study defines"):
        runner.run_studies(["broken"], progress=False)
    (project / "studies" / "broken.yaml").write_text(
        "runs:\n  - {name: x, notebook: work.ipynb, needs: [y]}\n  - {name: y, notebook: work.ipynb, needs: [x]}\n")
    with pytest.raises(StudyError, match="circular 'needs'"):
        runner.run_studies(["broken"], progress=False)


def test_needs_from_another_study_are_pulled_in(project):
    (project / "studies" / "later.yaml").write_text(
        "runs:\n  - {name: z, notebook: work.ipynb, parameters: {n: 7}, needs: [demo/a]}\n")
    results = runner.run_studies(["later"], progress=False)
    assert [r.run.id for r in results] == ["demo/a", "later/z"]
    assert all(r.status == "ok" for r in results)


def test_cli_list_params_and_exit_code(project):
    env = {**__import__("os").environ, "MEDEVAL_ROOT": str(project)}
    out = subprocess.run([sys.executable, "-m", "medeval_kit.cli", "list", "--format", "json"],
                         capture_output=True, text=True, env=env, check=True).stdout
    assert [r["name"] for r in json.loads(out)["demo"]["runs"]] == ["a", "bad", "after_bad", "after_a"]
    out = subprocess.run([sys.executable, "-m", "medeval_kit.cli", "params", "work"],
                         capture_output=True, text=True, env=env, check=True).stdout
    assert "fail" in out and "bool" in out
    (project / "studies" / "demo.yaml").write_text(
        "runs:\n  - {name: bad, notebook: work.ipynb, parameters: {fail: true}}\n")
    proc = subprocess.run([sys.executable, "-m", "medeval_kit.cli", "run", "demo", "--quiet"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 1
    assert "FAILED" in proc.stdout and "planted failure" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "medeval_kit.cli", "run", "demo", "-p", "n=abc"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "parameter 'n' must be int" in proc.stderr


def test_repository_studies_are_valid():
    import os
    os.environ.pop("MEDEVAL_ROOT", None)
    studies = runner.load_studies()
    assert "data_overview" in studies
    for s in studies.values():
        for r in s.runs:
            runner.check_parameters(r.notebook, dict(r.parameters))


def test_bench_command_lists_and_rejects():
    from medeval_kit.cli import bench

    assert {"agreement", "llm"} <= set(bench.available())
    proc = subprocess.run([sys.executable, "-m", "medeval_kit.cli", "bench", "nope"], capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown benchmark 'nope'" in proc.stderr
