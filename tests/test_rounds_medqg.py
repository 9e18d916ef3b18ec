"""Tests of the bundled MedQG round-trace loader (medeval_kit.datasets.medqg_rounds)."""

from __future__ import annotations

import math
import shutil

import pandas as pd
import pytest

from medeval_kit import rounds as R
from medeval_kit.datasets._io import data_dir
from medeval_kit.datasets.medqg_rounds import answers_match, load_medqg_rounds
from medeval_kit.errors import DataFileError, ParameterError
from medeval_kit.schemas import validate


@pytest.fixture(scope="module")
def allr() -> pd.DataFrame:
    return R.fill_best_rounds(load_medqg_rounds("all"))


def test_shapes_and_schema(allr):
    validate(allr, "rounds")
    per = allr.groupby("source")["item"].nunique().to_dict()
    assert per == {"top10": 10, "iter_feedback": 8, "icl_qgqa": 8}
    assert allr["round"].min() == 1 and allr["round"].max() == 4
    assert (allr["aspect"] == "total").all()
    # iter_feedback traces have 4 components (no reasoning) on /40, /20, /10, /15 scales
    it = allr[allr["source"] == "iter_feedback"]
    assert set(it["component"]) == {"context", "question", "answer", "distractors"}
    assert set(it.loc[it["component"] == "context", "max_score"]) == {40.0}
    # 10 top10 traces with 20 item-rounds x 5 components
    assert len(allr[allr["source"] == "top10"]) == 100
    for col in ("source", "text", "question_length", "critique", "raw_score", "parse_status", "self_answer_correct"):
        assert col in allr.columns


def test_parse_failures_kept_and_counted(allr):
    failed = allr[allr["parse_status"] == "failed"]
    assert R.load_summary(allr)["n_failed"].sum() == len(failed) == 1 and not allr.attrs
    row = failed.iloc[0]
    # top10 item 71, round 1: question_score is a bare "20" (no scale) -> kept with score NA
    assert (row["item"], row["round"], row["component"], row["raw_score"]) == ("top10:71", 1, "question", "20")
    assert math.isnan(row["score"])
    # a score inside a longer string parses: top10 item 13, round 2 context
    r = allr[(allr["item"] == "top10:13") & (allr["round"] == 2) & (allr["component"] == "context")].iloc[0]
    assert r["raw_score"].startswith("Total score for the context") and r["score"] == 45 and r["max_score"] == 45
    summ = R.load_summary(allr).set_index("source")
    assert summ.loc["top10", "n_failed"] == 1 and summ.loc["top10", "n_item_rounds"] == 20


def test_stop_and_best_flags(allr):
    summ = R.item_summary(allr).set_index("item")
    assert (summ["stop_round"] == summ["n_rounds"]).all()  # stop = last round of every trace
    assert summ.loc["top10:96", "n_rounds"] == 4 and summ.loc["top10:96", "best_round"] == 4
    methods = allr.drop_duplicates("item").set_index("item")["best_method"]
    assert (methods[methods.index.str.startswith("top10")] == "best_question").all()
    assert (methods[~methods.index.str.startswith("top10")] == "max_total_earliest").all()
    # the loader reports only what the files say: the JSONL traces name no best round
    raw = load_medqg_rounds("all").drop_duplicates("item").set_index("item")["best_method"]
    assert raw.value_counts().to_dict() == {"best_question": 10, "none": 16}
    # the file's best_question is also the max-total round, and total_score is its component mean
    sel = R.select_best_round(allr).set_index("item")["best_round"]
    assert (sel.astype(int) == summ["best_round"].astype(int)).all()
    ts = allr.drop_duplicates("item").set_index("item")["total_score"].dropna()
    assert len(ts) == 10
    assert ((ts - summ.loc[ts.index, "total_best"]).abs() < 1e-9).all()
    # every bundled trace follows the code's stopping rule, not the paper's text
    cons = R.stopping_rule_consistency(allr).set_index("rule")
    assert cons.loc["all_components", "n_consistent"] == 26
    assert cons.loc["total", "n_consistent"] < 26


def test_self_answer(allr):
    d = allr.drop_duplicates(["item", "round"]).set_index(["item", "round"])["self_answer_correct"]
    assert d.loc[("top10:71", 1)] is False or d.loc[("top10:71", 1)] == False  # noqa: E712 - COPD vs pneumonia
    assert d.loc[("top10:71", 2)] == True  # noqa: E712 - "A: Pneumonia" vs "pneumonia"
    assert d[[i.startswith("iter_feedback") for i, _ in d.index]].isna().all()
    k = allr.drop_duplicates(["item", "round"]).set_index(["item", "round"])["answer_equals_keypoint"]
    assert k.loc[("top10:56", 1)] == True  # noqa: E712 - "Radiotherapy or chemotherapy" is the keypoint
    assert k.loc[("top10:13", 1)] == False  # noqa: E712 - Sjogren's vs keypoint "covid-19 with copd"
    assert k.notna().all()
    assert answers_match("Correct answer: B : greater than 0.5", "greater than 0.5") is True
    assert answers_match("Correct answer: B", "greater than 0.5") is pd.NA
    assert answers_match(None, "x") is pd.NA


def test_question_length_falls(allr):
    ir = R.item_rounds(allr)
    it = ir[ir["source"] == "iter_feedback"]
    m = R.round_means(it, "question_length", imputations=("available",)).set_index("round")["estimate"]
    assert m[1] > 2 * m[2]  # the first correction roughly halves the stem (Table 6 pattern)


def test_errors(tmp_path):
    with pytest.raises(ParameterError):
        load_medqg_rounds("table19")
    root = tmp_path / "data"
    (root / "medqg" / "inputs").mkdir(parents=True)
    src = data_dir() / "medqg" / "inputs" / "gpt4_usmle_hum_kp_top10.csv"
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    df.loc[0, "content_to_fb"] = "[{'context': 'x'"  # truncated literal
    df.to_csv(root / "medqg" / "inputs" / "gpt4_usmle_hum_kp_top10.csv", index=False)
    with pytest.raises(DataFileError, match="content_to_fb"):
        load_medqg_rounds("top10", root=root)
    with pytest.raises(DataFileError, match="not found"):
        load_medqg_rounds("icl_qgqa", root=root)
    shutil.rmtree(root)


def test_aspect_rows_and_critique_arithmetic():
    from medeval_kit.datasets.medqg_rounds import parse_aspects

    asp = load_medqg_rounds("all", aspects=True)
    validate(asp, "rounds")
    # component rows are unchanged by adding aspect rows
    base = load_medqg_rounds("all")
    tot = asp[asp["aspect"] == "total"].reset_index(drop=True)
    pd.testing.assert_frame_equal(tot[base.columns], base, check_dtype=False)
    summary = R.load_summary(asp)
    assert summary["n_failed"].sum() == 1 and summary["n_aspects_failed"].sum() == 7  # all in top10
    # top10 item 13, round 1, context: 9 aspects scored /5
    ctx = asp[(asp["item"] == "top10:13") & (asp["round"] == 1) & (asp["component"] == "context") & (asp["aspect"] != "total")]
    assert len(ctx) == 9 and set(ctx["max_score"]) == {5.0} and "clueing" in set(ctx["aspect"])
    chk = R.aspect_sum_check(asp)
    counts = chk["status"].value_counts().to_dict()
    assert counts["match"] == 222
    # the bare "20" total of top10:71 round 1 question is 20/25 by its aspects (kept unparsed)
    row = chk[(chk["item"] == "top10:71") & (chk["round"] == 1) & (chk["component"] == "question")].iloc[0]
    assert row["status"] == "unparsed" and row["aspect_sum"] == 20 and row["aspect_max_sum"] == 25
    # icl_qgqa:4 round 1: the critic wrote 30/30 for distractors whose 7 aspects sum to 35/35
    row = chk[(chk["item"] == "icl_qgqa:4") & (chk["round"] == 1) & (chk["component"] == "distractors")].iloc[0]
    assert row["status"] == "sum_differs" and row["total"] == 30 and row["aspect_sum"] == 35
    got = parse_aspects("correctness:5/5. exact match\nlogical_flow: clear\n continued. Score: 4/5\nodd: no score")
    # "name: x/5. text", a continuation line carrying "Score:", and an aspect with no score at all
    assert [(a["aspect"], a["parse_status"]) for a in got] == [("correctness", "ok"), ("logical_flow", "ok"),
                                                               ("odd", "failed")]
    assert got[0]["score"] == 5.0 and got[1]["score"] == 4.0 and math.isnan(got[2]["score"])
