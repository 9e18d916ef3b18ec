"""One result contract (medeval_kit/results.py) across the package: every statistic table carries
estimate, ci_low, ci_high, ci_method, n_items, n_failed and note, counts in columns, nothing in attrs."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

from medeval_kit import agreement, bias, pairwise, rounds
from medeval_kit.datasets.synthetic import synthetic_annotations, synthetic_pairwise, synthetic_rounds
from medeval_kit.generate import accuracy_by
from medeval_kit.results import RESULT_COLUMNS, check_result, result_frame, result_row

NAMES = ("agreement", "agreement_report", "judge_vs_humans", "position_bias", "length_bias", "letter_balance",
         "win_rate", "round_means", "paired_round_tests", "accuracy_by")


@functools.cache
def _tables() -> dict[str, pd.DataFrame]:
    """The statistics' tables, built on first use (not at collection, in every test process)."""
    return dict(_build())


def _build():
    ann = synthetic_annotations(n_items=60, seed=0)
    pw = synthetic_pairwise(n_items=60, seed=0)
    ir = rounds.item_rounds(synthetic_rounds(n_items=40, n_rounds=3, seed=0))
    mcq = pd.DataFrame({"answer": list("ABCDABCA"), "model": "m"})
    cloze = pd.DataFrame({"model": "m", "correct": [True, False, True, np.nan]})
    yield "agreement", agreement.cohen_kappa(ann, n_boot=50).to_frame()
    yield "agreement_report", agreement.agreement_report(ann, n_boot=50)
    yield "judge_vs_humans", agreement.judge_vs_humans(ann, n_boot=50).to_frame()
    yield "position_bias", bias.position_bias(pw)
    yield "length_bias", bias.length_bias(pw)
    yield "letter_balance", bias.letter_balance(mcq, letters="ABCD")
    yield "win_rate", pairwise.win_rate(pairwise.resolve_orders(pw, "tie"))
    yield "round_means", rounds.round_means(ir)
    yield "paired_round_tests", rounds.paired_round_tests(ir, n_boot=50)
    yield "accuracy_by", accuracy_by(cloze, by=("model",), correct="correct")


def test_every_statistic_is_checked():
    assert tuple(_tables()) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_statistics_fit_the_contract(name):
    table = _tables()[name]
    assert check_result(table) == [], name
    assert not table.attrs, f"{name}: counts belong in columns, not attrs"
    assert (pd.to_numeric(table["n_items"]) >= 0).all() and (pd.to_numeric(table["n_failed"]) >= 0).all()
    assert "method" not in table.columns, f"{name}: the CI method column is ci_method"


def test_result_helpers():
    row = result_row(0.5, (0.4, 0.6), "Wilson", n_items=10, judge="j")
    df = result_frame([row, {"judge": "k", "estimate": float("nan"), "n_items": 0, "note": "no items"}], keys=["judge"])
    assert list(df.columns) == ["judge", *RESULT_COLUMNS]
    assert df.loc[1, "n_failed"] == 0 and df.loc[1, "ci_method"] == "" and np.isnan(df.loc[1, "ci_low"])
    assert check_result(df.drop(columns="note")) == ["note"]
