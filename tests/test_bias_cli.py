"""``medeval position-bias FILE ...`` on the user's own judgments file."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from medeval_kit.cli import main
from medeval_kit.datasets.synthetic import synthetic_pairwise


def _user_file(tmp_path, fmt="csv", **kw):
    """A user-style file: own column names, verdict in slot terms, two judges and two criteria."""
    df = synthetic_pairwise(n_items=120, judges=("gpt", "claude"), criteria=("correctness", "harm"), seed=7, **kw)
    df = df.rename(columns={"item": "pair_id", "judge": "model", "order": "presentation",
                            "slot_verdict": "choice", "criterion": "aspect"})
    df = df[["pair_id", "model", "aspect", "presentation", "choice", "parse_status"]]
    p = tmp_path / f"judg.{fmt}"
    if fmt == "csv":
        df.to_csv(p, index=False)
    elif fmt == "jsonl":
        df.to_json(p, orient="records", lines=True)
    else:
        df.to_parquet(p)
    return p, df


ARGS = ["--item", "pair_id", "--judge", "model", "--order", "presentation", "--verdict", "choice",
        "--criterion", "aspect"]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_json_output_keys(tmp_path, capsys, fmt):
    p, _ = _user_file(tmp_path, fmt)
    assert main(["position-bias", str(p), *ARGS, "--format", "json"]) == 0
    recs = json.loads(capsys.readouterr().out)
    assert len(recs) == 4  # 2 judges x 2 criteria
    need = {"judge", "criterion", "n_items", "consistency", "consistency_ci_low", "consistency_ci_high",
            "first_slot_rate", "first_slot_rate_ci_low", "first_slot_rate_ci_high"}
    for r in recs:
        assert need <= set(r)
        assert r["n_items"] == 120
        # planted first-slot preference 0.2 -> 0.7 inside the CI
        assert r["first_slot_rate_ci_low"] <= 0.7 <= r["first_slot_rate_ci_high"]


def test_table_and_csv_output_with_bootstrap(tmp_path, capsys):
    p, _ = _user_file(tmp_path)
    assert main(["position-bias", str(p), *ARGS, "--n-boot", "200"]) == 0
    out = capsys.readouterr().out
    assert "consistency" in out and "bootstrap" in out and "claude" in out
    assert main(["position-bias", str(p), *ARGS, "--format", "csv"]) == 0
    from io import StringIO

    csv = pd.read_csv(StringIO(capsys.readouterr().out))
    assert len(csv) == 4 and "flip_rate" in csv.columns


def test_defaults_without_judge_or_criterion(tmp_path, capsys):
    df = synthetic_pairwise(n_items=30, seed=1)[["item", "order", "slot_verdict"]].rename(
        columns={"slot_verdict": "verdict"})
    p = tmp_path / "j.csv"
    df.to_csv(p, index=False)
    assert main(["position-bias", str(p), "--format", "json"]) == 0
    recs = json.loads(capsys.readouterr().out)
    assert len(recs) == 1 and recs[0]["criterion"] == "overall" and recs[0]["n_items"] == 30


def test_error_order_without_swap_names_file_column_rows(tmp_path, capsys):
    p, df = _user_file(tmp_path)
    df = df.drop(index=[0]).reset_index(drop=True)
    df.to_csv(p, index=False)
    assert main(["position-bias", str(p), *ARGS]) == 2
    err = capsys.readouterr().err
    assert str(p) in err and "'presentation'" in err and "without its swap" in err and "rows [" in err


def test_error_mixed_protocols(tmp_path, capsys):
    p, df = _user_file(tmp_path)
    df["protocol"] = "pairwise"
    df.loc[5, "protocol"] = "rubric"
    df.to_csv(p, index=False)
    assert main(["position-bias", str(p), *ARGS]) == 2
    err = capsys.readouterr().err
    assert "'protocol'" in err and "rows [5]" in err and str(p) in err


def test_error_missing_column_and_bad_file(tmp_path, capsys):
    p, _ = _user_file(tmp_path)
    assert main(["position-bias", str(p), "--verdict", "nope"]) == 2
    err = capsys.readouterr().err
    assert "nope" in err and "missing column" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item": "a"}\n{not json\n')
    assert main(["position-bias", str(bad)]) == 2
    assert "line 2" in capsys.readouterr().err
    assert main(["position-bias", str(tmp_path / "absent.csv")]) == 2
    assert "not found" in capsys.readouterr().err


def test_parse_failures_in_cli(tmp_path, capsys):
    p, df = _user_file(tmp_path)
    df.loc[df.index[:6], "choice"] = None
    df.loc[df.index[:6], "parse_status"] = "failed"
    df.to_csv(p, index=False)
    assert main(["position-bias", str(p), *ARGS, "--format", "json"]) == 0
    recs = json.loads(capsys.readouterr().out)
    assert sum(r["n_failed"] for r in recs) == 6
