"""CLI errors speak CLI: the option to use (``--categories low medium high``, ``--scoring accuracy``), the
user's own column names (``--rater annotator``, never our internal ``'rater'``) and the file. The library's
structured errors are re-worded at the command boundary from their fields. Each test runs
``medeval_kit.cli.main`` and reads stderr."""

from __future__ import annotations

import pytest

from medeval_kit.cli import main

LONG = "doc,annotator,grade\n1,ann,low\n1,bob,high\n2,ann,medium\n2,bob,low\n3,ann,high\n3,bob,high\n"
COLS = ["--item", "doc", "--rater", "annotator", "--label", "grade"]


def _error(capsys, argv) -> str:
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    return err


@pytest.fixture()
def grades(tmp_path):
    p = tmp_path / "grades.csv"
    p.write_text(LONG)
    return p


def test_ordinal_text_labels_ask_for_categories_in_cli_syntax(capsys, grades):
    err = _error(capsys, ["agreement", str(grades), *COLS, "--level", "ordinal"])
    assert "--categories low medium high" in err and "--level ordinal" in err
    assert "categories=[" not in err and "level='ordinal'" not in err  # the old wording was Python
    assert "grades.csv" in err and "'grade'" in err


def test_weighted_metric_says_which_option_asked_for_an_order(capsys, grades):
    err = _error(capsys, ["agreement", str(grades), *COLS, "--metric", "cohen_kappa_linear"])
    assert "--metric cohen_kappa_linear" in err and "--categories" in err and "categories=[" not in err


def test_interval_level_on_text_labels(capsys, grades):
    err = _error(capsys, ["agreement", str(grades), *COLS, "--level", "interval"])
    assert "--level interval needs numeric labels" in err and "--level ordinal" in err
    assert "categories=[" not in err


def test_labels_outside_categories_suggest_the_options(capsys, grades):
    err = _error(capsys, ["agreement", str(grades), *COLS, "--level", "ordinal", "--categories", "low", "high"])
    assert "--categories low high" in err and "--missing medium" in err and "'grade'" in err
    assert "declared categories" not in err


def test_categories_out_of_order(capsys, tmp_path):
    p = tmp_path / "scores.csv"
    p.write_text("doc,annotator,grade\n1,ann,1\n1,bob,2\n2,ann,3\n2,bob,1\n")
    err = _error(capsys, ["agreement", str(p), *COLS, "--level", "ordinal", "--categories", "3", "2", "1"])
    assert "--categories 3 2 1 are not in increasing order" in err and "scores.csv" in err


def test_duplicates_name_the_users_columns(capsys, tmp_path):
    p = tmp_path / "dup.csv"
    p.write_text("doc,annotator,grade\n1,ann,low\n1,ann,high\n2,ann,low\n2,bob,low\n")
    err = _error(capsys, ["agreement", str(p), *COLS])
    assert "annotator 'ann' labelled doc '1' more than once" in err and "--criterion" in err
    assert "(item, rater)" not in err and "'item,rater'" not in err  # our internal names, before


def test_unknown_raters_in_notes_name_the_users_rater_column(capsys, grades):
    assert main(["agreement", str(grades), *COLS, "--raters", "ann", "zed"]) == 0
    out = capsys.readouterr().out
    assert "not found in column 'annotator'" in out and "column 'rater'" not in out


def test_judge_vs_humans_panel_errors(capsys, grades):
    err = _error(capsys, ["judge-vs-humans", str(grades), *COLS, "--humans", "ann", "zed"])
    assert "column 'annotator'" in err and "column 'rater'" not in err and "grades.csv" in err
    err = _error(capsys, ["judge-vs-humans", str(grades), *COLS, "--humans", "ann"])
    assert "pass two or more names to --humans" in err


def test_ceiling_error_names_the_file(capsys, grades):
    err = _error(capsys, ["agreement", str(grades), *COLS, "--ceiling", "--humans", "ann"])
    assert "grades.csv" in err and "--humans" in err


def test_wide_files_name_the_rater_columns(capsys, tmp_path):
    p = tmp_path / "wide.csv"
    p.write_text("doc,ann,bob\n1,low,high\n2,medium,low\n")
    err = _error(capsys, ["agreement", str(p), "--wide", "--item", "doc", "--level", "ordinal"])
    assert "rater columns" in err and "column 'label'" not in err and "--categories" in err


AT = "doc,annotator,grade,kind\n" + "".join(
    f"{i},ann,low,human\n{i},bob,high,human\n{i},cy,low,human\n{i},gpt,low,llm\n" for i in range(3))


def test_alt_test_speaks_cli(capsys, tmp_path):
    p = tmp_path / "at.csv"
    p.write_text(AT)
    err = _error(capsys, ["alt-test", str(p), *COLS, "--rater-kind", "kind", "--scoring", "neg_rmse"])
    assert "--scoring neg_rmse" in err and "--scoring accuracy" in err and "'grade'" in err
    assert "scoring='" not in err and "column 'label'" not in err
    err = _error(capsys, ["alt-test", str(p), *COLS, "--humans", "ann", "zed"])
    assert "column 'annotator'" in err and "column 'rater'" not in err
    err = _error(capsys, ["alt-test", str(p), *COLS])
    assert "--humans NAME" in err and "humans=[" not in err and "rater_kind=" not in err
    err = _error(capsys, ["alt-test", str(p), *COLS, "--rater-kind", "kind", "--q-fdr", "2"])
    assert "--q-fdr must be" in err and "at.csv" in err


def test_position_bias_speaks_cli(capsys, tmp_path):
    p = tmp_path / "pb.csv"
    p.write_text("pair,model,ord,v\n1,m,AB,first\n1,m,AB,second\n")
    err = _error(capsys, ["position-bias", str(p), "--item", "pair", "--judge", "model", "--order", "ord",
                          "--verdict", "v"])
    assert "'ord'" in err and "medeval_kit.bias.slot_preference in Python" in err
    assert "use slot_preference" not in err
    err = _error(capsys, ["position-bias", str(p), "--n-boot", "-3"])
    assert "--n-boot must be 0 or more" in err and "-3" in err


def test_each_command_imports_only_its_own_module_and_the_table_says_which():
    """``medeval <command>`` builds its parser from the module ``COMMANDS`` names; the table matches what every
    module registers, and a fresh ``medeval run --help`` imports neither scipy.stats nor the agreement module."""
    import argparse
    import importlib
    import subprocess
    import sys

    from medeval_kit import cli

    registered = {}
    for name in cli.COMMAND_MODULES:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(name).register_cli(sub)
        registered.update(dict.fromkeys(sub.choices, name))
    assert registered == cli.COMMANDS
    code = ("import sys; from medeval_kit.cli import main\n"
            "try:\n    main(['run', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('scipy.stats', 'medeval_kit.agreement', 'medeval_kit.cli.agreement') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stderr
