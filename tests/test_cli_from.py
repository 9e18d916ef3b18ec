"""``--from FORMAT`` on the analysis commands, and ``medeval position-bias`` with model-term verdicts.

Part 1: ``medeval agreement``, ``judge-vs-humans``, ``alt-test`` and ``position-bias`` read another
tool's file directly with ``--from FORMAT`` (the ``medeval import`` formats): the result must be the
one the same command gives on the file ``medeval import`` writes, the reader's summary goes to
stderr, and a format that cannot give the needed table is an error naming the format and what it
can give.

Part 2: ``--verdict-terms model`` maps A/B verdicts to presented slots with the order column, and
``--failed TOKEN ...`` counts failure tokens as failed parses.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from format_fixtures import ALPACA, HEALTH, HUMAN, INSPECT_JSON, PAIR, PROMPTFOO, SINGLE  # noqa: E402

from medeval_kit.cli import main
from medeval_kit.readers import FORMATS, read_format


def _run(capsys, argv) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _imported(tmp_path, capsys, fmt, path, table=None) -> Path:
    out = tmp_path / f"{fmt}.csv"
    argv = ["import", fmt, path, "-o", out] + (["--table", table] if table else [])
    rc, _, _ = _run(capsys, argv)
    assert rc == 0
    return out


# =========================================================================== --from: same answer as import + file
def test_agreement_from_healthbench_equals_imported_file(tmp_path, capsys):
    csv = _imported(tmp_path, capsys, "healthbench", HEALTH)
    # the tidy annotations carry a criterion column: --from groups by it, as --criterion criterion does on the CSV
    rc, want, _ = _run(capsys, ["agreement", csv, "--criterion", "criterion", "--n-boot", 50, "--format", "csv"])
    assert rc == 0
    rc, got, err = _run(capsys, ["agreement", "--from", "healthbench", HEALTH, "--n-boot", 50, "--format", "csv"])
    assert rc == 0
    assert got == want
    # the reader's summary on stderr: records read, rows dropped with their reasons
    assert "read 7 lines" in err and "dropped 2:" in err
    assert "second label of one physician on one criterion" in err


def test_judge_vs_humans_from_healthbench_equals_imported_file(tmp_path, capsys):
    csv = _imported(tmp_path, capsys, "healthbench", HEALTH)
    rc, want, _ = _run(capsys, ["judge-vs-humans", csv, "--n-boot", 50, "--format", "json"])
    assert rc == 0
    rc, got, err = _run(capsys, ["judge-vs-humans", "--from", "healthbench", HEALTH, "--n-boot", 50,
                                 "--format", "json"])
    assert rc == 0 and got == want
    recs = json.loads(got)
    assert {r["rater"] for r in recs if r["role"] == "judge"} == {"grader"}
    assert "healthbench:" in err and "read 7 lines" in err


@pytest.mark.parametrize("fmt, path", [("healthbench", HEALTH), ("mtbench_human", HUMAN)])
def test_alt_test_from_format_equals_imported_file(tmp_path, capsys, fmt, path):
    csv = _imported(tmp_path, capsys, fmt, path)
    opts = ["--min-items-per-human", 2, "--format", "json", "--details"]
    rc, want, _ = _run(capsys, ["alt-test", csv, *opts])
    assert rc == 0
    rc, got, err = _run(capsys, ["alt-test", "--from", fmt, path, *opts])
    assert rc == 0 and got == want
    assert f"{fmt}: {path}" in err and "dropped" in err


def test_position_bias_from_mtbench(tmp_path, capsys):
    rc, out, err = _run(capsys, ["position-bias", "--from", "mtbench", PAIR, "--n-boot", 0, "--format", "json"])
    assert rc == 0
    (r,) = json.loads(out)
    # as in test_readers.test_mtbench_pair_round_trip_position_bias: first-slot 4 of 6 parsed non-tie calls,
    # 2 of the 3 pairs with both games parsed consistent, the 2 failed games counted
    assert r["first_slot_rate"] == pytest.approx(4 / 6)
    assert r["consistency"] == pytest.approx(2 / 3)
    assert r["n_items"] == 3 and r["n_failed"] == 2
    assert "read 6 lines" in err and "dropped 1:" in err and "m1_score/m2_score" in err
    # the tidy `verdict` (model terms) mapped with `order` gives what the reader's slot_verdict gives
    csv = _imported(tmp_path, capsys, "mtbench", PAIR)
    rc, want, _ = _run(capsys, ["position-bias", csv, "--verdict", "slot_verdict", "--format", "csv"])
    rc2, got, _ = _run(capsys, ["position-bias", "--from", "mtbench", PAIR, "--format", "csv"])
    assert rc == rc2 == 0 and got == want


# =========================================================================== --from: formats that cannot give the table
@pytest.fixture
def _no_inspect_ai(monkeypatch):
    """The built-in Inspect reader, whether or not inspect_ai is installed."""
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)


@pytest.mark.parametrize("command", ["agreement", "judge-vs-humans", "alt-test"])
@pytest.mark.parametrize("fmt, path, gives", [
    ("promptfoo", PROMPTFOO, "judgments, items, responses"),
    ("inspect", INSPECT_JSON, "judgments, items, responses"),
])
def test_annotation_commands_on_a_judgments_only_format(capsys, _no_inspect_ai, command, fmt, path, gives):
    rc, out, err = _run(capsys, [command, "--from", fmt, path])
    assert rc == 2 and out == ""
    assert f"--from {fmt}" in err and "annotations" in err and gives in err and str(path) in err
    assert "position-bias" in err or "medeval import" in err  # says what to do with the judgments instead


def test_mtbench_single_file_gives_no_annotations(capsys):
    rc, _, err = _run(capsys, ["judge-vs-humans", "--from", "mtbench", SINGLE])
    assert rc == 2
    # this file gives judgments only; the format gives annotations from pair files
    assert "--from mtbench" in err and "annotations" in err and "judgments" in err and "pair" in err


@pytest.mark.parametrize("fmt, path, why", [
    ("healthbench", HEALTH, "annotations, items"),      # no judgments at all
    ("alpaca_eval", ALPACA, "unrecorded"),              # judgments without the presentation order
    ("promptfoo", PROMPTFOO, "rubric"),                 # not pairwise
])
def test_position_bias_on_a_format_without_two_orders(capsys, fmt, path, why):
    rc, out, err = _run(capsys, ["position-bias", "--from", fmt, path])
    assert rc == 2 and out == ""
    assert f"--from {fmt}" in err and why in err and str(path) in err


def test_from_rejects_wide_and_lists_formats_in_help(capsys):
    rc, _, err = _run(capsys, ["agreement", "--from", "healthbench", HEALTH, "--wide"])
    assert rc == 2 and "--wide" in err and "--from" in err
    for command in ("agreement", "judge-vs-humans", "alt-test", "position-bias"):
        with pytest.raises(SystemExit) as exc:
            main([command, "--help"])
        assert exc.value.code == 0
        text = " ".join(capsys.readouterr().out.split())
        assert "--from FORMAT" in text and all(f in text for f in FORMATS)


def test_format_capabilities_match_the_readers(_no_inspect_ai):
    """The tables the error messages say a format gives are the ones its reader produces on the fixtures."""
    from medeval_kit.readers import FORMAT_TABLES

    assert set(FORMAT_TABLES) == set(FORMATS)
    for fmt, path in [("inspect", INSPECT_JSON), ("alpaca_eval", ALPACA), ("mtbench", PAIR), ("mtbench", SINGLE),
                      ("mtbench_human", HUMAN), ("healthbench", HEALTH), ("promptfoo", PROMPTFOO)]:
        assert set(read_format(fmt, path).tables) <= set(FORMAT_TABLES[fmt]), fmt


# =========================================================================== position-bias: model-term verdicts
# Hand-built pairs in model terms (which model won), both presentation orders, one parse_status column that a
# tool wrote as "ok" even for its failure tokens. AB shows A first: A -> first, B -> second; BA shows B first:
# A -> second, B -> first.
MODEL_ROWS = [
    # pair, order, verdict        slot terms
    ("p1", "AB", "A"),            # first
    ("p1", "BA", "A"),            # second   -> consistent
    ("p2", "AB", "A"),            # first
    ("p2", "BA", "B"),            # first    -> flip (first both times)
    ("p3", "AB", "B"),            # second
    ("p3", "BA", "A"),            # second   -> flip (second both times)
    ("p4", "AB", "tie"),          # tie
    ("p4", "BA", "tie"),          # tie      -> consistent
    ("p5", "AB", "B"),            # second
    ("p5", "BA", "error"),        # failed
    ("p6", "AB", "NA"),           # failed (a literal NA token, not an empty cell)
    ("p6", "BA", "unparsed"),     # failed
    ("p7", "BA", "B"),            # first
    ("p7", "AB", "B"),            # second   -> consistent
]
TO_SLOT = {("AB", "A"): "first", ("AB", "B"): "second", ("BA", "A"): "second", ("BA", "B"): "first"}
TOKENS = ["error", "NA", "unparsed"]
TOKEN_ROWS = [9, 10, 11]
ARGS = ["--item", "pair", "--order", "shown", "--verdict", "winner", "--judge", "grader"]


def _slot(order, verdict):
    return TO_SLOT.get((order, verdict), verdict)  # tie and the failure tokens stay as written


def _frame(terms="model", failure="token"):
    rows = []
    for pair, order, v in MODEL_ROWS:
        if terms == "slot":
            v = _slot(order, v)
        if v in TOKENS and failure == "empty":
            v = ""
        rows.append({"pair": pair, "grader": "gpt-x", "shown": order, "winner": v, "parse_status": "ok"})
    return pd.DataFrame(rows)


def _write(tmp_path, df, name="j.csv"):
    p = tmp_path / name
    df.to_csv(p, index=False)
    return p


def test_model_terms_give_the_same_table_as_slot_terms(tmp_path, capsys):
    model = _write(tmp_path, _frame("model"), "model.csv")
    slot = _write(tmp_path, _frame("slot"), "slot.csv")
    empty = _write(tmp_path, _frame("slot", failure="empty"), "empty.csv")
    for fmt, boot in (("csv", 1000), ("json", 0), ("table", 200)):
        common = [*ARGS, "--format", fmt, "--n-boot", boot]
        rc1, a, err = _run(capsys, ["position-bias", model, *common, "--verdict-terms", "model", "--failed", *TOKENS])
        rc2, b, _ = _run(capsys, ["position-bias", slot, *common, "--failed", *TOKENS])
        rc3, c, _ = _run(capsys, ["position-bias", empty, *common, "--verdict-terms", "slot"])
        assert rc1 == rc2 == rc3 == 0
        assert a == b == c
    (r,) = json.loads(_run(capsys, ["position-bias", model, *ARGS, "--verdict-terms", "model", "--failed", *TOKENS,
                                    "--format", "json", "--n-boot", 0])[1])
    # hand count: 11 parsed calls, 3 failed; non-tie parsed: first 4 (p1, p2 x2, p7), second 5 (p1, p3 x2, p5,
    # p7) -> 4/9; pairs with both orders parsed p1 p2 p3 p4 p7 = 5, consistent p1 p4 p7 -> 3/5
    assert r["n_failed"] == 3 and r["n_items"] == 5
    assert r["first_slot_rate"] == pytest.approx(4 / 9) and r["first_slot_n"] == 9
    assert r["consistency"] == pytest.approx(3 / 5) and r["flip_rate"] == pytest.approx(2 / 5)


def test_failed_tokens_are_counted_and_reported(tmp_path, capsys):
    p = _write(tmp_path, _frame("model"))
    rc, out, err = _run(capsys, ["position-bias", p, *ARGS, "--verdict-terms", "model", "--failed", *TOKENS,
                                 "--format", "json", "--n-boot", 0])
    assert rc == 0 and json.loads(out)[0]["n_failed"] == 3
    assert "3 verdict(s) counted as failed parses" in err and "'NA' x1" in err


def test_unknown_tokens_name_file_column_and_rows(tmp_path, capsys):
    p = _write(tmp_path, _frame("model"))
    rc, out, err = _run(capsys, ["position-bias", p, *ARGS, "--verdict-terms", "model"])
    assert rc == 2 and out == ""
    # the literal NA is seen (no pandas NA guessing), like the other tokens
    assert str(p) in err and "'winner'" in err and "rows [9, 10, 11]" in err
    assert "'NA'" in err and "'error'" in err and "'unparsed'" in err and "--failed" in err
    # a token left out of --failed is still an error, on its row only
    rc, _, err = _run(capsys, ["position-bias", p, *ARGS, "--verdict-terms", "model", "--failed", "error", "NA"])
    assert rc == 2 and "rows [11]" in err and "'unparsed'" in err and "'NA'" not in err.split("rows [11]")[1]


def test_slot_terms_literal_na_and_model_verdicts(tmp_path, capsys):
    slot = _write(tmp_path, _frame("slot"), "slot.csv")
    rc, _, err = _run(capsys, ["position-bias", slot, *ARGS])
    assert rc == 2 and f"rows [{', '.join(map(str, TOKEN_ROWS))}]" in err and "'NA'" in err
    # A/B verdicts read as slot terms: the error says how to map them on the command line
    model = _write(tmp_path, _frame("model"), "model.csv")
    rc, _, err = _run(capsys, ["position-bias", model, *ARGS, "--failed", *TOKENS])
    assert rc == 2 and "--verdict-terms model" in err and "'winner'" in err and "rows [0, 1" in err


def test_model_terms_need_an_ab_ba_order(tmp_path, capsys):
    df = _frame("model")
    df.loc[[2, 3], "shown"] = ["left", "right"]
    p = _write(tmp_path, df)
    rc, _, err = _run(capsys, ["position-bias", p, *ARGS, "--verdict-terms", "model", "--failed", *TOKENS])
    assert rc == 2 and "'shown'" in err and "rows [2, 3]" in err and "AB" in err and str(p) in err
    p2 = _write(tmp_path, _frame("model").drop(columns="shown"), "noorder.csv")
    rc, _, err = _run(capsys, ["position-bias", p2, *ARGS, "--verdict-terms", "model", "--failed", *TOKENS])
    assert rc == 2 and "'shown'" in err and "missing column" in err


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_model_terms_other_file_types(tmp_path, capsys, fmt):
    df = _frame("model")
    csv = _write(tmp_path, df)
    p = tmp_path / f"j.{fmt}"
    df.to_json(p, orient="records", lines=True) if fmt == "jsonl" else df.to_parquet(p)
    common = [*ARGS, "--verdict-terms", "model", "--failed", *TOKENS, "--format", "csv"]
    rc1, got, err = _run(capsys, ["position-bias", p, *common])
    rc2, want, _ = _run(capsys, ["position-bias", csv, *common])
    assert rc1 == rc2 == 0 and got == want and "3 verdict(s) counted as failed parses" in err
