"""Shared test setup.

``make test`` exports MEDEVAL_CACHE_MODE=replay so that executed notebooks (nbval) can never make a
real LLM call. Unit tests choose their cache mode explicitly, so the override is removed here.

Kernels fork from a warm process (``medeval_kit/cli/warm_kernels.py``) in each process that runs tests which start
notebook kernels (nbval's and ``medeval run``'s), with the thread counts ``medeval run`` gives its kernels;
``MEDEVAL_WARM_KERNELS=0`` starts every kernel cold.

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
    "test_runner_safety.py", "test_cli_judge.py", "test_layers.py", "test_warm_kernels.py", "test_llm_parse_secrets.py",
}

# Single tests of over ~2 s each (measured with --durations; `make test-fast` skips them, `make test` runs them)
SLOW_TESTS = {
    "test_api_columns.py::test_renamed_columns_give_the_canonical_results",
    "test_api_contract.py::test_every_public_statistic_follows_the_contract",
    "test_bias.py::test_length_controlled_win_rate_coverage",
    "test_bias.py::test_plots_save",
    "test_calibration.py::test_calibration_recovers_the_unbiased_agreement",
    "test_datasets.py::test_pandalm_majority_counts_match_the_readme",
    "test_figure_stability.py::test_every_plot_is_byte_identical_under_last_bit_noise",
    "test_figure_stability.py::test_the_issue_figures_are_byte_identical_in_every_format",
    "test_hints.py::test_the_battery_does_produce_hints",
    "test_judge_aspects.py::test_exhaustive_finds_planted_subset_and_is_truly_best",
    "test_judge_vs_humans.py::test_equal_noise_coverage_of_the_default_design",
    "test_judge_vs_humans.py::test_equal_noise_judges_are_not_biased_under_the_default_design",
    "test_llm_batch.py::test_batch_submit_poll_collect_into_the_same_cache",
    "test_llm_parse_secrets.py::test_canary_random_keys_never_written",
    "test_outputs.py::test_save_figure_formats_sidecar_and_stability",
    "test_outputs.py::test_sidecar_is_byte_identical_under_last_digit_noise",
    "test_psychometrics.py::test_2pl_recovers_planted_parameters",
    "test_psychometrics.py::test_parametric_bootstrap_ses_agree_with_observed_information",
    "test_published_rules.py::test_every_differs_row_states_a_cause",
    "test_published_rules.py::test_every_row_has_one_of_the_four_statuses",
    "test_rank.py::test_bootstrap_resamples_units_with_replacement",
    "test_rank.py::test_planted_strengths_are_recovered",
    "test_rank.py::test_rank_plots_draw_the_tables",
    "test_report.py::test_report_lists_every_published_number_of_the_golden_tests",
    "test_repro.py::test_agreement_numbers",
    "test_repro.py::test_every_number_in_the_data_is_checked_by_a_study",
    "test_repro_mcqg.py::test_no_row_compares_with_a_number_the_paper_does_not_print",
    "test_repro_mcqg.py::test_statuses_follow_what_each_check_rests_on",
    "test_repro_mcqg.py::test_table9_tau_search_finds_nothing",
    "test_rounds.py::test_planted_improvement_is_recovered",
    "test_rounds.py::test_plots_render",
    "test_rounds.py::test_survivor_bias_on_planted_dropout",
    "test_rounds_fastpaths.py::test_consistency_table_unchanged_by_source",
    "test_sparse_and_dependence.py::test_cli_pairwise_table_hides_sparse_pairs_with_a_footnote",
    "test_viz.py::test_no_snake_case_in_any_plot",
}


# The longest files (seconds summed over their tests under `make test`, `medeval bench suite`), longest first.
# pytest-xdist hands whole files to its processes in collection order (the Makefile passes --no-loadscope-reorder;
# by default xdist would order the files by their number of tests), so these go first: a long file handed out
# last would run alone at the end while the other processes wait.
LONGEST_FIRST = (
    "test_readers_safety.py", "test_your_data.py", "test_apps.py", "test_plan.py", "test_warm_kernels.py",
    "test_apps_cli.py", "test_llm_budget_retry.py", "test_install.py", "test_llm_server.py", "test_llm_faults.py",
    "test_figure_stability.py", "test_runner_safety.py", "test_runner.py", "test_rank.py", "test_llm_safety.py",
    "test_cli_judge.py", "item_analysis.ipynb", "aspect_search.ipynb", "rounds.ipynb",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file keeps its own order
    for item in items:
        if item.path.name in SLOW_FILES or f"{item.path.name}::{getattr(item, 'originalname', item.name)}" in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _no_global_cache_mode(monkeypatch):
    monkeypatch.delenv("MEDEVAL_CACHE_MODE", raising=False)


# Test files that start notebook kernels (besides the notebooks under nbval)
KERNEL_FILES = {
    "test_runner.py", "test_run_notebook.py", "test_your_data.py", "test_notebooks.py", "test_runner_safety.py",
    "test_secrets_notebook.py", "test_project_report.py", "test_paths.py", "test_environment.py",
    "test_llm_parse_secrets.py", "test_warm_kernels.py", "test_cli_judge.py",
}


def _runs_tests(config) -> bool:
    """This process runs tests: an xdist worker, or a run without xdist."""
    return hasattr(config, "workerinput") or not config.getoption("numprocesses", default=None)


def pytest_configure(config):
    """An xdist worker shares the cores with the other workers: its own BLAS/OpenMP pools get its share, as the
    kernels and processes it starts do (their threads spin while they wait, which on oversubscribed cores burns the
    CPU the other workers need)."""
    if not hasattr(config, "workerinput"):
        return
    from threadpoolctl import threadpool_limits

    from medeval_kit.cli import runner

    runner.share_cores(int(config.workerinput.get("workercount", 1)))
    threadpool_limits(int(os.environ["OPENBLAS_NUM_THREADS"]))


def pytest_collection_finish(session):
    config = session.config
    if not _runs_tests(config) or os.environ.get("MEDEVAL_WARM_KERNELS") == "0":
        return
    if not any(i.path.suffix == ".ipynb" or i.path.name in KERNEL_FILES for i in session.items):
        return
    import contextlib

    from medeval_kit.cli import runner, warm_kernels

    try:
        import nbval.kernel
    except ImportError:
        pass
    else:
        nbval.kernel.KernelManager = warm_kernels.WarmKernelManager
    runner.share_cores(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1))  # as `medeval run --jobs` would
    stack = contextlib.ExitStack()
    stack.enter_context(warm_kernels.warm_kernels())
    config._medeval_warm = stack


def pytest_unconfigure(config):
    stack = getattr(config, "_medeval_warm", None)
    if stack is not None:
        stack.close()


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
