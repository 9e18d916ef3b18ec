"""Study runner safety (issue 20): parameters are data, names are names, one budget per run, failed LLM calls
fail the run. The probe notebook (fixtures/runner_safety/probe.ipynb) echoes its parameters and environment to
``tables_dir/seen.json`` and appends simulated LLM call records to ``$MEDEVAL_CALL_LOG``."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import sys
import types
from pathlib import Path

import pytest

from medeval_kit.cli import main as cli_main
from medeval_kit.cli import runner
from medeval_kit.errors import ParameterError, StudyError

REPO = Path(__file__).resolve().parents[1]
PROBE = Path(__file__).resolve().parent / "fixtures" / "runner_safety" / "probe.ipynb"
PAYLOAD = '"+str(__import__("os").system("touch PWNED"))+"'
B64 = base64.b64encode(PAYLOAD.encode()).decode()


@pytest.fixture()
def project(tmp_path, monkeypatch):
    """A project of its own: the probe notebook and an empty studies/ folder; cwd is the project."""
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "studies").mkdir()
    shutil.copy(PROBE, tmp_path / "notebooks" / "probe.ipynb")
    monkeypatch.setenv("MEDEVAL_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for var in ("MEDEVAL_RUN_ID", "MEDEVAL_RUN_BUDGET_USD", "MEDEVAL_CALL_LOG"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def _study(project: Path, name: str, body: str) -> None:
    (project / "studies" / f"{name}.yaml").write_text(body)


def _seen(project: Path, study: str, run: str) -> dict:
    return json.loads((project / "runs" / study / run / "tables" / "seen.json").read_text())


def _pwned(*folders: Path) -> list[Path]:
    return [p for d in folders if d.exists() for p in d.rglob("PWNED")]


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


# --------------------------------------------------------------------------- 1. parameters are data


def test_the_binary_payload_of_the_finding_is_refused_by_the_cli(tmp_path, monkeypatch, capsys):
    """The issue's command, on the real `agreement` study: refused before any notebook runs."""
    monkeypatch.delenv("MEDEVAL_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    code = cli_main(["run", "agreement", "--jobs", "1", "--quiet", "--out", str(tmp_path / "out"),
                     "-p", "n_boot=10", "-p", f"metrics=[cohen_kappa, !!binary {B64}]"])
    err = capsys.readouterr().err
    assert code == 2
    assert "medeval: error:" in err and "-p metrics" in err and "!!binary" in err
    assert not _pwned(tmp_path, REPO / "notebooks") and not (REPO / "PWNED").exists()
    assert not (tmp_path / "out").exists()  # nothing executed


@pytest.mark.parametrize("value", [
    f"[cohen_kappa, !!binary {B64}]", "!!set {a, b}", "!!timestamp 2024-01-01", "!!python/name:os.system",
    "!foo bar", "!!str x", "[&a x, *a]", "{1: x}", "{? [a]: x}",
])
def test_p_values_with_tags_aliases_or_odd_keys_are_refused(value):
    with pytest.raises(ParameterError, match=r"-p metrics"):
        runner.parse_assignments([f"metrics={value}"])


def test_p_values_are_plain_json_and_dates_stay_text():
    vals = runner.parse_assignments(["a=2024-01-01", "b=[1, 2.5, x, null, true]", "c={k: [v]}", "d=.nan", "e=="])
    plain = {k: getattr(v, "value", v) for k, v in vals.items()}
    assert plain["a"] == "2024-01-01" and plain["b"] == [1, 2.5, "x", None, True] and plain["c"] == {"k": ["v"]}
    assert plain["d"] != plain["d"]  # NaN stays a float (papermill writes float('nan'))
    assert plain["e"] == "="
    with pytest.raises(ParameterError, match="not a parameter name"):
        runner.parse_assignments(["x;import os=1"])


def test_the_binary_payload_in_a_study_file_is_refused(project):
    _study(project, "evil", f"runs:\n  - name: r\n    notebook: probe.ipynb\n"
                            f"    parameters: {{metrics: [cohen_kappa, !!binary {B64}]}}\n")
    with pytest.raises(ParameterError, match=r"evil\.yaml.*runs\[0\].*'metrics'.*!!binary"):
        runner.run_studies(["evil"], progress=False, jobs=1)
    assert not _pwned(project) and not (project / "runs").exists()


def test_non_json_values_passed_in_process_are_refused(project):
    _study(project, "s", "runs:\n  - {name: r, notebook: probe.ipynb}\n")
    with pytest.raises(ParameterError, match="'metrics'.*bytes"):
        runner.run_studies(["s"], overrides={"metrics": ["x", PAYLOAD.encode()]}, progress=False)
    studies = runner.load_studies()
    bad = {"s": runner.Study("s", "", (runner.Run("s", "r", "probe.ipynb", {"metrics": {1, 2}}),), studies["s"].path)}
    with pytest.raises(ParameterError, match="'metrics'.*set"):
        runner.run_studies(["s"], studies=bad, progress=False)
    assert not (project / "runs").exists()


STRINGS = [
    '"; import os; os.system(\'touch X\'); "',
    "\n__import__('os').system('touch Y')",
    'back\\slash \\" \\n """triple""" \'\'\' end\\',
    "\r\t\x00 é ☃ \U0001f600 {x} %s $HOME",
]


def test_strings_reach_the_notebook_byte_identical_and_inert(project):
    q = [json.dumps(s, ensure_ascii=False) for s in STRINGS]  # a YAML double-quoted string
    runs = "".join(f"  - {{name: s{i}, notebook: probe.ipynb, parameters: {{text: {t}, metrics: [{t}, {{k: {t}}}]}}}}\n"
                   for i, t in enumerate(q))
    _study(project, "strings", "runs:\n" + runs)
    results = runner.run_studies(["strings"], progress=False, jobs=2)
    assert [r.status for r in results] == ["ok"] * len(STRINGS), [r.error for r in results]
    for i, s in enumerate(STRINGS):
        seen = _seen(project, "strings", f"s{i}")
        assert seen["text"] == s and seen["metrics"] == [s, {"k": s}]
    assert not [p for p in project.rglob("*") if p.name in ("X", "Y")]


# --------------------------------------------------------------------------- 2. names are names


def test_the_path_traversal_of_the_finding_is_refused(project, capsys):
    out = project / "a" / "b" / "c" / "d" / "e"
    _study(project, "x", "name: ../../../x\nruns:\n  - {name: ../../y, notebook: probe.ipynb}\n")
    before = _files(project)
    with pytest.raises(StudyError, match=r"x\.yaml: study name '\.\./\.\./\.\./x'"):
        runner.run_studies(["../../../x"], out=out, progress=False)
    assert _files(project) == before
    assert cli_main(["run", "../../../x", "--out", "a/b/c/d/e", "--quiet"]) == 2  # cwd is the project
    err = capsys.readouterr().err
    assert "medeval: error:" in err and "x.yaml: study name '../../../x' is not a plain name" in err
    assert _files(project) == before


@pytest.mark.parametrize("body, bad", [
    ("runs:\n  - {name: ../../y, notebook: probe.ipynb}\n", "run name '../../y'"),
    ("runs:\n  - {name: '..', notebook: probe.ipynb}\n", "run name '..'"),
    ("name: .\nruns:\n  - {name: a, notebook: probe.ipynb}\n", "study name '.'"),
    ("runs:\n  - {name: a, notebook: probe.ipynb, needs: [../../a]}\n", "needs '../../a'"),
    ("runs:\n  - {name: a, notebook: probe.ipynb, needs: [x/y/z]}\n", "needs 'x/y/z'"),
    ("runs:\n  - {name: 'a b', notebook: probe.ipynb}\n", "run name 'a b'"),
    ("runs:\n  - {notebook: ../evil/..ipynb}\n", "run name '.'"),
])
def test_bad_names_are_refused(project, body, bad):
    _study(project, "s", body)
    with pytest.raises(StudyError, match=re.escape(f"s.yaml: {bad}")):
        runner.load_studies()


def test_two_files_cannot_define_one_study(project):
    _study(project, "a", "runs:\n  - {name: r, notebook: probe.ipynb}\n")
    _study(project, "b", "name: a\nruns:\n  - {name: r, notebook: probe.ipynb}\n")
    with pytest.raises(StudyError, match=r"b\.yaml: study name 'a' is taken by .*a\.yaml"):
        runner.load_studies()


def test_outputs_never_leave_the_output_folder(project, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    _study(project, "s", "runs:\n  - {name: a, notebook: probe.ipynb}\n")
    studies = runner.load_studies()
    sneaky = runner.Run("../..", "../y", "probe.ipynb")  # built in code, past the loader's checks
    bad = {"s": runner.Study("s", "", (sneaky,), studies["s"].path)}
    with pytest.raises(StudyError, match="outside the output folder"):
        runner.run_studies(["s"], studies=bad, out=out, progress=False)
    with pytest.raises(StudyError, match="outside the output folder"):
        runner.run_folder(sneaky, out)
    assert not _files(out) and not (out.parent / "y").exists()


# --------------------------------------------------------------------------- 5. one budget per run


def test_each_run_gets_a_run_id_and_the_study_budget(project):
    _study(project, "cheap", "budget_usd: 0.05\nruns:\n  - {name: a, notebook: probe.ipynb}\n")
    _study(project, "cheaper", "budget_usd: 0.00002\nruns:\n  - {name: b, notebook: probe.ipynb}\n")
    runner.run_studies(["cheap", "cheaper"], progress=False)
    a, b = _seen(project, "cheap", "a")["env"], _seen(project, "cheaper", "b")["env"]
    assert re.fullmatch(r"[0-9a-f]{32}", a["MEDEVAL_RUN_ID"]) and a["MEDEVAL_RUN_ID"] == b["MEDEVAL_RUN_ID"]
    assert a["MEDEVAL_RUN_BUDGET_USD"] == "0.00002"  # the smallest, as a decimal
    assert a["MEDEVAL_CALL_LOG"] == str(project / "runs" / "cheap" / "a" / "llm_calls.jsonl")
    first = a["MEDEVAL_RUN_ID"]
    runner.run_studies(["cheap"], budget_usd=1.5, progress=False)
    a = _seen(project, "cheap", "a")["env"]
    assert a["MEDEVAL_RUN_BUDGET_USD"] == "1.5" and a["MEDEVAL_RUN_ID"] != first
    for var in ("MEDEVAL_RUN_ID", "MEDEVAL_RUN_BUDGET_USD", "MEDEVAL_CALL_LOG"):
        assert var not in os.environ  # restored after the run


def test_run_budget_picks_the_smallest_or_the_flag(project):
    _study(project, "one", "budget_usd: 0.05\nruns:\n  - {name: a, notebook: probe.ipynb}\n")
    _study(project, "two", "budget_usd: 2\nruns:\n  - {name: a, notebook: probe.ipynb}\n")
    _study(project, "free", "runs:\n  - {name: a, notebook: probe.ipynb}\n")
    studies = runner.load_studies()
    assert runner.run_budget(studies, ["one", "two"])[0] == 0.05
    assert "one.yaml" in runner.run_budget(studies, ["one", "two"])[1]
    assert runner.run_budget(studies, ["two", "free"])[0] == 2.0
    assert runner.run_budget(studies, ["free"]) == (None, "no budget")
    assert runner.run_budget(studies, ["one"], 3.0) == (3.0, "--budget-usd")


@pytest.mark.parametrize("value", ["0", "-1", "abc", "true", "[1]", ".inf", ".nan"])
def test_bad_budgets_are_refused(project, value):
    _study(project, "s", f"budget_usd: {value}\nruns:\n  - {{name: a, notebook: probe.ipynb}}\n")
    with pytest.raises(StudyError, match=r"s\.yaml: budget_usd must be a positive number"):
        runner.load_studies()


@pytest.mark.parametrize("value", ["0", "-1", "abc", "nan", "inf"])
def test_bad_budget_flag_is_refused(project, value, capsys):
    with pytest.raises(SystemExit) as exc:
        cli_main(["run", "s", "--budget-usd", value])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--budget-usd" in err and "expected a positive number of US dollars" in err


def test_cli_prints_the_budget_and_the_spend(project, capsys, monkeypatch):
    _study(project, "s", "budget_usd: 0.05\nruns:\n  - {name: a, notebook: probe.ipynb}\n")
    asked = []

    def run_spend(run_id):
        asked.append(run_id)
        return {"cap_usd": 0.05, "spent_usd": 0.0312, "reserved_usd": 0.0, "unconfirmed_usd": 0.0, "n_refused": 4}

    ledger = types.ModuleType("medeval_kit.llm.ledger")
    ledger.run_spend = run_spend
    monkeypatch.setitem(sys.modules, "medeval_kit.llm.ledger", ledger)
    assert cli_main(["run", "s", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "budget $0.05 for this run (budget_usd of s.yaml)" in out
    assert "budget $0.05 for this run: spent $0.0312, unconfirmed $0.0000, 4 requests refused" in out
    assert asked == [_seen(project, "s", "a")["env"]["MEDEVAL_RUN_ID"]]
    assert cli_main(["list"]) == 0 and "budget $0.05" in capsys.readouterr().out
    assert cli_main(["list", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["s"]["budget_usd"] == 0.05


# --------------------------------------------------------------------------- 6. failed calls fail the run


def _record(n_requests=3, n_failed=3, n_parse_failed=0, reasons=None, cost=0.0) -> dict:
    return {"model": "openai/gpt-4o", "n_requests": n_requests, "n_failed": n_failed,
            "n_parse_failed": n_parse_failed, "n_skipped_budget": 0,
            "failed_reasons": reasons if reasons is not None else {"401 unauthorized": n_failed}, "cost_usd": cost}


def test_failed_calls_fail_the_run(project, capsys, monkeypatch):
    lines = json.dumps([_record()])
    _study(project, "judging", "runs:\n"
                               f"  - {{name: local, notebook: probe.ipynb, parameters: {{log_lines: {lines}}}}}\n"
                               "  - {name: after, notebook: probe.ipynb, needs: [local]}\n")
    # the results of the run_studies call that `medeval run judging --quiet` makes (one execution for both checks)
    returned = []

    def run_studies(*args, **kwargs):
        returned.append(real_run_studies(*args, **kwargs))
        return returned[-1]

    real_run_studies = runner.run_studies
    monkeypatch.setattr(runner, "run_studies", run_studies)
    assert cli_main(["run", "judging", "--quiet"]) == 1
    assert "0/2 runs ok" in capsys.readouterr().out
    [results] = returned
    local = results[0]
    assert local.status == "failed" and results[1].status == "skipped"
    assert "3 of 3 LLM calls failed" in local.error and "401 unauthorized x3" in local.error
    assert (local.calls.n_requests, local.calls.n_failed) == (3, 3)
    assert "3 LLM calls, 3 failed (401 unauthorized x3)" in local.line()
    assert cli_main(["run", "judging", "--quiet", "--allow-failed-calls"]) == 0
    out = capsys.readouterr().out
    assert "2/2 runs ok" in out and "3 LLM calls, 3 failed (401 unauthorized x3)" in out


def test_parse_failures_and_truncated_lines_are_counted_not_fatal(project):
    lines = json.dumps([_record(40, 0, 5, {}, 0.01), _record(2, 0, 0, {}, 0.002)])
    tail = '{"model": "x", "n_requ'
    _study(project, "s", f"runs:\n  - {{name: a, notebook: probe.ipynb, "
                         f"parameters: {{log_lines: {lines}, log_tail: {json.dumps(tail)}}}}}\n"
                         f"  - {{name: quiet, notebook: probe.ipynb}}\n")
    stale = project / "runs" / "s" / "quiet" / "llm_calls.jsonl"
    stale.parent.mkdir(parents=True)
    stale.write_text(json.dumps(_record()) + "\n")  # from an earlier run: not this run's calls
    a, quiet = runner.run_studies(["s"], progress=False)
    assert a.status == "ok" and quiet.status == "ok", (a.error, quiet.error)
    assert (a.calls.n_requests, a.calls.n_failed, a.calls.n_parse_failed, a.calls.bad_lines) == (42, 0, 5, 1)
    assert a.calls.cost_usd == pytest.approx(0.012)
    assert "42 LLM calls, 5 unparsed" in a.line() and "1 unreadable log line" in a.line()
    assert quiet.calls.n_requests == 0 and "LLM" not in quiet.line()


def test_read_call_log(tmp_path):
    log = tmp_path / "llm_calls.jsonl"
    assert runner.read_call_log(log).n_requests == 0  # missing file: no LLM calls
    log.write_text(json.dumps(_record(4, 3, 1, {"timeout": 1, "401 unauthorized": 2})) + "\n"
                   + json.dumps(_record(5, 5, 0, {"401 unauthorized": 5})) + "\n[1, 2]\n{trunc")
    c = runner.read_call_log(log)
    assert (c.n_requests, c.n_failed, c.n_parse_failed, c.bad_lines) == (9, 8, 1, 2)
    assert c.failed_reasons == {"401 unauthorized": 7, "timeout": 1}
    assert c.summary() == "9 LLM calls, 8 failed (401 unauthorized x7, timeout x1), 1 unparsed, 2 unreadable log lines"


# --------------------------------------------------------------------------- end to end: real clients in kernels

CALLS = Path(__file__).resolve().parent / "fixtures" / "runner_safety" / "llm_calls.ipynb"


@pytest.fixture()
def llm_project(project, monkeypatch):
    """The project, with a notebook whose kernel runs a real client against OPENAI_BASE_URL (a stub)."""
    shutil.copy(CALLS, project / "notebooks" / "llm_calls.ipynb")
    monkeypatch.delenv("MEDEVAL_CACHE_MODE", raising=False)  # `make test` forces replay; these calls are live
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
    return project


def test_every_call_answered_401_fails_the_run_end_to_end(llm_project, capsys):
    """Finding 6: every call answered by 401 printed `2/2 runs ok` and exited 0; the judgments were all missing."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from stub_server import StubServer

    with StubServer(p401=1.0) as srv:
        os.environ["OPENAI_BASE_URL"] = srv.openai_url
        try:
            _study(llm_project, "judging", "runs:\n  - {name: local, notebook: llm_calls.ipynb, "
                                           "parameters: {n: 4}}\n")
            assert cli_main(["run", "judging", "--quiet", "--jobs", "1"]) == 1
            out = capsys.readouterr().out
        finally:
            del os.environ["OPENAI_BASE_URL"]
    assert "0/1 runs ok" in out and "4 of 4 LLM calls failed" in out and "401" in out
    assert "sk-test-not-a-real-key" not in out  # the key never reaches the summary


def test_one_budget_for_three_notebook_processes_end_to_end(llm_project, capsys):
    """Finding 5: three notebooks with a cap each spent 2.3x what the user thought was the cap. One
    --budget-usd is now one ledger for every process of the run."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from stub_server import StubServer

    # gpt-4o at $2.50 / $10.00 per 1M tokens: a request costs ~$0.000055 and reserves a ceiling of ~$0.0008,
    # so the 3 x 40 requests cost ~$0.0066: a cap of $0.003 fits each notebook alone, not the run
    cap = 0.003
    with StubServer() as srv:
        os.environ["OPENAI_BASE_URL"] = srv.openai_url
        try:
            _study(llm_project, "three", "runs:\n" + "".join(
                f"  - {{name: n{i}, notebook: llm_calls.ipynb, parameters: {{n: 40, tag: t{i}}}}}\n" for i in range(3)))
            code = cli_main(["run", "three", "--quiet", "--jobs", "3", "--budget-usd", str(cap)])
            out = capsys.readouterr().out
        finally:
            del os.environ["OPENAI_BASE_URL"]
    from medeval_kit.llm import cache as llm_cache

    with llm_cache.Cache(llm_project / "data" / "cache" / "llm.sqlite") as c:
        billed = sum(e["cost_usd"] or 0.0 for e in c.iter_entries())
    assert 0 < billed <= cap, (billed, out)
    assert code == 1 and "budget" in out  # refusals are failed calls: the run says so
    assert re.search(r"[1-9][0-9]* requests refused", out), out
    m = re.search(r"spent \$([0-9.]+)", out)
    assert m and float(m.group(1)) == pytest.approx(billed, abs=1e-4), out
