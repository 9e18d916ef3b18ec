"""Study runner: parallel runs, failure isolation, parameter checks, the CLI, where runs write (never the
committed outputs unless asked) and nested item draws (a smaller run reuses the cache of a larger one)."""

import contextlib
import dataclasses
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _inproc_cli import CliResult, run_cli  # noqa: E402
from nbbuild import build  # noqa: E402

from medeval_kit.cli import main, runner  # noqa: E402
from medeval_kit.errors import ParameterError, StudyError  # noqa: E402

PARAMS = '''
study: str = "demo"  # study
figures_dir: str = "../figures/demo"  # figures
tables_dir: str = "../tables/demo"  # tables
n: int = 3  # how many
fail: bool = False  # raise on purpose
'''


def _build_project(root: Path) -> Path:
    """Notebooks work.ipynb and reader.ipynb and the study ``demo`` in ``root``."""
    (root / "notebooks").mkdir()
    (root / "studies").mkdir()
    build(str(root / "notebooks" / "work.ipynb"), "# work", PARAMS, [
        ("## write", 'import pathlib\npathlib.Path(tables_dir).mkdir(parents=True, exist_ok=True)\n'
                     'pathlib.Path(tables_dir, f"n{n}.txt").write_text(str(n * 2))'),
        ("## maybe fail", 'if fail:\n    raise ValueError("planted failure")'),
    ])
    (root / "studies" / "demo.yaml").write_text(
        "description: demo\nruns:\n"
        "  - {name: a, notebook: work.ipynb, parameters: {n: 1}}\n"
        "  - {name: bad, notebook: work.ipynb, parameters: {n: 2, fail: true}}\n"
        "  - {name: after_bad, notebook: work.ipynb, parameters: {n: 3}, needs: [bad]}\n"
        "  - {name: after_a, notebook: work.ipynb, parameters: {n: 4}, needs: [a]}\n"
    )
    build(str(root / "notebooks" / "reader.ipynb"), "# reader", PARAMS_READER, [
        ("## copy", 'import pathlib\npathlib.Path(tables_dir).mkdir(parents=True, exist_ok=True)\n'
                    'pathlib.Path(tables_dir, "copy.txt").write_text(pathlib.Path(src).read_text())'),
    ])
    return root


@pytest.fixture()
def project(tmp_path, monkeypatch):
    _build_project(tmp_path)
    monkeypatch.setenv("MEDEVAL_ROOT", str(tmp_path))
    return tmp_path


PARAMS_READER = '''
study: str = "reader"  # study
figures_dir: str = "../figures/reader"  # figures
tables_dir: str = "../tables/reader"  # tables
src: str = "../tables/one/n1.txt"  # a table another study writes
'''


def _committed(project: Path) -> dict[str, bytes]:
    """Every file under the project's committed figures/ and tables/, with its bytes."""
    return {str(p.relative_to(project)): p.read_bytes()
            for d in ("figures", "tables") for p in sorted((project / d).rglob("*")) if p.is_file()}


def _add_one(project: Path) -> Path:
    (project / "studies" / "one.yaml").write_text("runs:\n  - {name: a, notebook: work.ipynb, parameters: {n: 1}}\n")
    (project / "tables" / "one").mkdir(parents=True)
    (project / "tables" / "one" / "n1.txt").write_text("committed")
    (project / "figures" / "one").mkdir(parents=True)
    (project / "figures" / "one" / "f.json").write_text("{}")
    return project


@pytest.fixture()
def one(project):
    """A one-run study ``one`` (n=1) plus committed outputs it would overwrite if it wrote there."""
    return _add_one(project)


def _git(project: Path) -> list[str]:
    return ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@example.org",
            "-c", "commit.gpgsign=false"]


@pytest.fixture(scope="module")
def one_run(tmp_path_factory):
    """``medeval run one -p n=5 --quiet``, run once for the three tests that only read what it did: the ``one``
    project of its own under git (committed outputs, runs/ ignored), its committed files before the run, the
    command's exit code and output."""
    project = _add_one(_build_project(tmp_path_factory.mktemp("one_run")))
    (project / ".gitignore").write_text("runs/\n")
    if shutil.which("git") is not None:
        for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "committed outputs"]):
            subprocess.run([*_git(project), *cmd], check=True, capture_output=True)
    before = _committed(project)
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        mp.setenv("MEDEVAL_ROOT", str(project))
        code = main(["run", "one", "-p", "n=5", "--quiet"])
    return project, before, CliResult(["run", "one", "-p", "n=5", "--quiet"], code, out.getvalue(), err.getvalue())


def _cli(capsys, project: Path, *args: str) -> CliResult:
    """``medeval ARGS`` with ``MEDEVAL_ROOT`` = ``project``, in this process (``python -m medeval_kit.cli`` is
    ``sys.exit(main())``; one test below keeps a real process)."""
    return run_cli(capsys, *args, env={"MEDEVAL_ROOT": str(project)})


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
    # each run writes into its own folder, runs/<study>/<run>/, and nothing into the committed tables/
    assert (project / "runs" / "demo" / "a" / "tables" / "n1.txt").read_text() == "2"
    assert (project / "runs" / "demo" / "after_a" / "tables" / "n4.txt").read_text() == "8"
    assert (project / "runs" / "demo" / "a" / "a.ipynb").exists()
    assert results["a"].output == "runs/demo/a/a.ipynb"
    assert not (project / "tables").exists() and not (project / "figures").exists()
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


def test_cli_list_params_and_exit_code(project, capsys):
    proc = _cli(capsys, project, "list", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert [r["name"] for r in json.loads(proc.stdout)["demo"]["runs"]] == ["a", "bad", "after_bad", "after_a"]
    proc = _cli(capsys, project, "params", "work")
    assert proc.returncode == 0, proc.stderr
    assert "fail" in proc.stdout and "bool" in proc.stdout
    (project / "studies" / "demo.yaml").write_text(
        "runs:\n  - {name: bad, notebook: work.ipynb, parameters: {fail: true}}\n")
    proc = _cli(capsys, project, "run", "demo", "--quiet")
    assert proc.returncode == 1
    assert "FAILED" in proc.stdout and "planted failure" in proc.stdout
    # the real command, in a process of its own: the exit code and the error line reach the shell
    env = {**os.environ, "MEDEVAL_ROOT": str(project)}
    proc = subprocess.run([sys.executable, "-m", "medeval_kit.cli", "run", "demo", "-p", "n=abc"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "parameter 'n' must be int" in proc.stderr


def test_repository_studies_are_valid(monkeypatch):
    monkeypatch.delenv("MEDEVAL_ROOT", raising=False)
    studies = runner.load_studies()
    assert "data_overview" in studies
    for s in studies.values():
        for r in s.runs:
            runner.check_parameters(r.notebook, dict(r.parameters))


# --------------------------------------------------------------------------- where a run writes (issue 13)


@pytest.mark.xdist_group("test_runner_one_run")
def test_run_with_parameters_leaves_committed_outputs_untouched(one_run):
    """Issue 13: `medeval run judging -p n_items=10` rewrote 39 committed files; a run now writes to runs/."""
    one, before, proc = one_run  # `medeval run one -p n=5 --quiet`
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _committed(one) == before
    assert (one / "runs" / "one" / "a" / "tables" / "n5.txt").read_text() == "10"
    assert (one / "runs" / "one" / "a" / "a.ipynb").exists()
    assert "outputs in runs/<study>/<run>/" in proc.stdout and "untouched" in proc.stdout


def test_out_puts_outputs_where_asked(one, tmp_path_factory, capsys):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    before = _committed(one)
    proc = _cli(capsys, one, "run", "one", "--out", str(elsewhere), "--quiet")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (elsewhere / "one" / "a" / "tables" / "n1.txt").read_text() == "2"
    assert (elsewhere / "one" / "a" / "a.ipynb").exists()
    assert _committed(one) == before and not (one / "runs").exists()
    assert str(elsewhere) in proc.stdout


def test_publish_writes_the_committed_outputs(one, capsys):
    proc = _cli(capsys, one, "run", "one", "--publish", "--quiet")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (one / "tables" / "one" / "n1.txt").read_text() == "2"
    assert (one / "runs" / "one" / "a" / "a.ipynb").exists()  # the executed notebook still goes to runs/
    assert not (one / "runs" / "one" / "a" / "tables").exists()
    proc = _cli(capsys, one, "run", "one", "--publish", "-p", "n=2", "--quiet")
    assert proc.returncode == 0 and "will not match the studies' own parameters" in proc.stderr


def test_a_run_reads_what_the_run_it_needs_wrote(one):
    """A path into another study's committed tables reads the output of the needed run of this invocation."""
    (one / "studies" / "reader.yaml").write_text("runs:\n  - {name: r, notebook: reader.ipynb, needs: [one/a]}\n")
    copy = one / "runs" / "reader" / "r" / "tables" / "copy.txt"
    results = runner.run_studies(["reader"], progress=False)
    assert [(r.run.id, r.status) for r in results] == [("one/a", "ok"), ("reader/r", "ok")]
    assert copy.read_text() == "2"  # the default ../tables/one/n1.txt, redirected to runs/one/a/tables/n1.txt
    # an explicit value is taken as given
    (one / "mine.txt").write_text("mine")
    runner.run_studies(["reader"], overrides={"src": str(one / "mine.txt")}, progress=False)
    assert copy.read_text() == "mine"
    # without the dependency the committed table is what there is
    (one / "studies" / "reader.yaml").write_text("runs:\n  - {name: r, notebook: reader.ipynb}\n")
    runner.run_studies(["reader"], progress=False)
    assert copy.read_text() == "committed"
    assert (one / "tables" / "one" / "n1.txt").read_text() == "committed"


@pytest.mark.xdist_group("test_runner_one_run")
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_status_stays_clean_after_a_run_with_parameters(one_run):
    """The issue's closing check on a project of its own: committed outputs, runs/ ignored, a run with -p."""
    one, _, proc = one_run  # git init, add, commit; then `medeval run one -p n=5 --quiet`
    assert (one / ".git").is_dir() and (one / ".gitignore").read_text() == "runs/\n"
    assert proc.returncode == 0
    assert subprocess.run([*_git(one), "status", "--porcelain"], capture_output=True, text=True,
                          check=True).stdout == ""


# --------------------------------------------------------------------------- nested item draws (issue 13)


@pytest.mark.parametrize("seed", [0, 1, 2, 7, 123])
def test_item_draws_are_nested_prefixes_of_one_permutation(seed):
    """Issue 13: a 10-item run reused 4 of the 40 cached calls of a 40-item run; now all of them."""
    import pandas as pd

    from medeval_kit import datasets, repro
    from medeval_kit import generate as G
    from medeval_kit.stats import nested_order, nested_sample

    ids = [f"i{k}" for k in range(200)]
    small, large = nested_sample(ids, 10, seed), nested_sample(ids, 40, seed)
    assert len(small) == 10 and len(large) == 40 and set(small) <= set(large)
    assert set(small) == {ids[k] for k in nested_order(len(ids), seed)[:10]}  # the first 10 of the permutation
    assert small == [i for i in ids if i in set(small)]  # kept in the ids' order
    assert nested_sample(ids, None, seed) == ids and nested_sample(ids, 500, seed) == ids
    # every seeded item subset the studies draw
    p10, p40 = (repro.judging_inputs("pairwise", "pandalm", n_items=n, seed=seed)[0] for n in (10, 40))
    assert set(p10["item"]) <= set(p40["item"]) and len(p10) == 10
    m2, m5 = (repro.judging_inputs("rubric", "medqg", n_items=n, seed=seed)[0] for n in (2, 5))
    assert set(m2["item"]) <= set(m5["item"])
    s3, s6 = (datasets.load_srefine_inputs(n=n, seed=seed) for n in (3, 6))
    assert s3["item"].tolist() == s6["item"].tolist()[:3]
    items = pd.DataFrame({"context": [f"Sentence about topic{k} here. More." for k in range(60)],
                          "keypoint": [f"topic{k}" for k in range(60)]})
    c3, c8 = (G.make_cloze_items(items, n=n, seed=seed) for n in (3, 8))
    assert c3["question"].tolist() == c8["question"].tolist()[:3]
    one, two = (G.contexts_to_markdown(items, n=n, seed=seed) for n in (1, 2))
    assert two.startswith(one.rstrip("\n"))


def test_a_smaller_judging_run_asks_nothing_the_larger_one_did_not():
    """The cache keys of the judging study's calls at n_items=10 are a subset of those at n_items=40."""
    from _fake_llm import FakeClient

    from medeval_kit import judge, repro
    from medeval_kit.llm import get_client

    keyer = get_client("local/smollm2-135m", cache_mode="off")

    def keys(n: int) -> set[str]:
        pairs, kw = repro.judging_inputs("pairwise", "pandalm", n_items=n, seed=0)
        fake = FakeClient(lambda r: {"verdict": "A"})
        judge.run_protocol("pairwise", pairs, client=fake, model="local/smollm2-135m", repeats=2, seed=0,
                           progress=False, **kw)
        return set(keyer.keys(fake.calls))

    small, large = keys(10), keys(40)
    assert len(small) == 40 and small <= large


def test_bench_command_lists_and_rejects(capsys):
    from medeval_kit.cli import bench

    assert {"agreement", "llm"} <= set(bench.available())
    proc = run_cli(capsys, "bench", "nope")
    assert proc.returncode == 2 and "unknown benchmark 'nope'" in proc.stderr


def test_p_values_keep_their_text_for_str_parameters_and_paths_become_absolute(tmp_path):
    nb = Path(__file__).resolve().parents[1] / "notebooks" / "agreement.ipynb"
    (tmp_path / "mine.csv").write_text("item,rater,label\n")
    vals = runner.parse_assignments(["rater=yes", "label=2024", "n_boot=50", "annotations_path=mine.csv",
                                     "item=null"], cwd=tmp_path)
    checked = runner.check_parameters(nb, vals)
    # YAML would read yes / 2024 as a bool / an int: a str parameter keeps what the user typed
    assert checked["rater"] == "yes" and checked["label"] == "2024" and checked["item"] == "null"
    assert checked["n_boot"] == 50
    # the notebook runs in notebooks/, so a relative path is made absolute against the caller's folder
    assert checked["annotations_path"] == str((tmp_path / "mine.csv").resolve())
    with pytest.raises(ParameterError, match="n_boot.*must be int"):
        runner.check_parameters(nb, runner.parse_assignments(["n_boot=many"]))


@pytest.mark.xdist_group("test_runner_one_run")
def test_summary_names_the_slowest_cells_and_the_next_run_starts_the_longest_first(one_run, monkeypatch):
    one, _, out = one_run  # `medeval run one -p n=5 --quiet`
    monkeypatch.setenv("MEDEVAL_ROOT", str(one))
    assert out.returncode == 0, out.stderr
    assert "slowest cells:" in out.stdout and "one/a cell" in out.stdout
    results = [runner.RunResult(runner.Run("one", "a", "work.ipynb"), "ok", output="runs/one/a/a.ipynb")]
    slow = runner.slowest_cells(results, n=2)
    assert len(slow) == 2 and slow[0][0] >= slow[1][0] and all(rid == "one/a" for _, rid, _, _ in slow)
    code = [c for c in json.loads((one / "runs/one/a/a.ipynb").read_text())["cells"] if c["cell_type"] == "code"]
    assert {line for *_, line in slow} <= {"".join(c["source"]).strip().splitlines()[0][:60] for c in code}
    assert runner.slowest_cells([dataclasses.replace(results[0], status="failed")]) == []  # failed runs: not timed
    # the previous run's papermill time orders the next one (0 for a run never executed)
    assert runner._previous_seconds(results[0].run, None) > 0
    assert runner._previous_seconds(runner.Run("one", "never", "work.ipynb"), None) == 0.0
