"""Shared test setup.

``make test`` exports MEDEVAL_CACHE_MODE=replay so that executed notebooks (nbval) can never make a
real LLM call. Unit tests choose their cache mode explicitly, so the override is removed here.

A test run leaves the checkout as it found it: with ``MEDEVAL_CHECK_TREE=1`` (``make test`` sets it),
``git status --porcelain`` is read when the session starts and again when it ends (in the main process,
also under pytest-xdist), and a difference fails the run, naming the files.
"""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# notebooks under fixtures/ are inputs of the runner tests, run there with their parameters; nbval must not
# execute them on their own (`make test` collects *.ipynb)
collect_ignore_glob = ["fixtures/*"]


# Whole files of subprocesses, servers, notebook runs, fuzzing and randomised fault storms: marked slow, so
# `make test-fast` (-m "not slow ...") leaves them to `make test`.
SLOW_FILES = {
    "test_readers_safety.py", "test_llm_budget_retry.py", "test_llm_safety.py", "test_runner.py",
    "test_plugins.py", "test_plan.py", "test_llm_faults.py", "test_your_data.py", "test_install.py",
    "test_apps.py", "test_apps_cli.py", "test_apps_browser_hostile.py", "test_run_notebook.py",
    "test_secrets_notebook.py", "test_report_browser.py", "test_llm_server.py", "test_llm_local.py",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _no_global_cache_mode(monkeypatch):
    monkeypatch.delenv("MEDEVAL_CACHE_MODE", raising=False)


def _git_status() -> str | None:
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def _is_controller(config) -> bool:
    return not hasattr(config, "workerinput")


def pytest_sessionstart(session):
    if _is_controller(session.config) and os.environ.get("MEDEVAL_CHECK_TREE") == "1":
        session.config._medeval_git_before = _git_status()


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    before = getattr(config, "_medeval_git_before", None)
    if not _is_controller(config) or before is None or session.testscollected == 0:
        return
    after = _git_status()
    if after is not None and after != before:
        changed = sorted(set(after.splitlines()) ^ set(before.splitlines()))
        tr = config.pluginmanager.get_plugin("terminalreporter")
        msg = ("the test run changed the checkout (tests must leave it as they found it):\n  "
               + "\n  ".join(changed[:40]))
        if tr is not None:
            tr.ensure_newline()
            tr.write_sep("=", "checkout changed", red=True)
            tr.write_line(msg)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
