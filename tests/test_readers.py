"""Readers for other tools' result files (medeval_kit.readers) and ``medeval import``.

The fixtures in tests/fixtures/formats/ are hand-built in each tool's documented layout (sources in
each reader's docstring), a few records each with the awkward cases: ties, missing and unparsed
judgments, API errors ($ERROR$), epochs, repeated records. Expected counts are derived by hand in
the comments next to them.
"""

from __future__ import annotations

import io
import json
import math
import struct
import sys
import types
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from format_fixtures import ALPACA, HEALTH, HUMAN, INSPECT_JSON, INSPECT_MEMBERS, PAIR, PROMPTFOO, SINGLE  # noqa: E402

from medeval_kit import agreement, bias, cli
from medeval_kit.readers import (
    FORMATS,
    ReaderError,
    read_alpaca_eval,
    read_format,
    read_healthbench_meta,
    read_inspect,
    read_mtbench,
    read_mtbench_human,
    read_promptfoo,
    read_tidy,
)
from medeval_kit.schemas import validate


def _status(df: pd.DataFrame) -> dict:
    return df["parse_status"].value_counts().to_dict()


def _row(df: pd.DataFrame, **eq) -> pd.Series:
    m = np.ones(len(df), dtype=bool)
    for k, v in eq.items():
        m &= (df[k] == v).to_numpy()
    assert m.sum() == 1, f"{eq}: {m.sum()} rows"
    return df[m].iloc[0]


# =========================================================================== Inspect
def _eval_zip(tmp_path: Path, members: dict[str, bytes] | None = None, name: str = "log.eval") -> Path:
    """An .eval zip (deflate) of the hand-written member files."""
    members = members or {str(p.relative_to(INSPECT_MEMBERS)): p.read_bytes()
                          for p in INSPECT_MEMBERS.rglob("*.json")}
    out = tmp_path / name
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for n, data in sorted(members.items()):
            z.writestr(n, data)
    return out


def _zip_method(path: Path, members: dict[str, bytes], method: int, compress) -> Path:
    """Write a zip whose members use compression ``method`` (e.g. 93 = zstd, as recent Inspect writes).

    Python's zipfile cannot write method 93, so the local headers, central directory and end record
    are written by hand (PKWARE APPNOTE 4.3.7, 4.3.12, 4.3.16).
    """
    buf, central = io.BytesIO(), []
    for name, data in members.items():
        comp, nb, crc = compress(data), name.encode(), zlib.crc32(data)
        off = buf.tell()
        buf.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 63, 0, method, 0, 0, crc, len(comp), len(data), len(nb), 0))
        buf.write(nb + comp)
        central.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 63, 63, 0, method, 0, 0, crc, len(comp),
                                   len(data), len(nb), 0, 0, 0, 0, 0, off) + nb)
    cd_off = buf.tell()
    for c in central:
        buf.write(c)
    buf.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(central), len(central), buf.tell() - cd_off, cd_off, 0))
    path.write_bytes(buf.getvalue())
    return path


def test_inspect_json_log_scores_per_sample_and_epoch():
    res = read_inspect(INSPECT_JSON, use_inspect_ai=False)
    j = res.judgments
    # 3 samples x 2 epochs = 6 records; 2 scorers each -> 12 rows
    assert res.n_records == 6 and len(j) == 12
    # failed: (2, epoch 2) "Grade not found" with value I (old Inspect), (q3, epoch 1) NaN + "Grade not found";
    # missing: both scorers of (q3, epoch 2), whose sample errored (rate limit)
    assert _status(j) == {"ok": 8, "failed": 2, "missing": 2}
    assert res.dropped == ()
    mg = j[j["criterion"] == "model_graded_qa"]
    assert set(mg["judge"]) == {"anthropic/claude-3-5-haiku-latest"}  # from eval.model_roles["grader"]
    assert set(j[j["criterion"] == "match"]["judge"]) == {"match"}  # not model-graded: judge = scorer name
    assert set(j["protocol"]) == {"reference"} and set(j["order"]) == {"single"}
    # epoch e -> repeat e - 1; letters -> named verdicts with value_to_float scores
    r = _row(j, item="q1", criterion="model_graded_qa", repeat=0)
    assert (r["verdict"], r["score"], r["epoch"]) == ("correct", 1.0, 1)
    r = _row(j, item="q1", criterion="model_graded_qa", repeat=1)
    assert (r["verdict"], r["score"]) == ("partial", 0.5)
    r = _row(j, item="2", criterion="model_graded_qa", repeat=1)
    assert r["parse_status"] == "failed" and r["verdict"] is None and math.isnan(r["score"])  # not "incorrect"
    assert r["raw"].startswith("Grade not found in model output")
    r = _row(j, item="q3", criterion="match", repeat=1)
    assert r["parse_status"] == "missing" and "RateLimitError" in r["note"]
    assert res.items["item"].tolist() == ["q1", "2", "q3"]  # integer sample id 2 becomes the text "2"
    assert "Normal adult resting heart rate?" in res.items.set_index("item").loc["2", "question"]
    resp = res.responses.set_index(["item", "repeat"])
    assert len(resp) == 6 and resp.loc[("q3", 1), "text"] is None and resp.loc[("q1", 0), "text"] == "Metformin."
    validate(j, "judgments")


def test_inspect_eval_zip_dict_scores_and_list_scores(tmp_path):
    res = read_inspect(_eval_zip(tmp_path), use_inspect_ai=False)
    j = res.judgments
    # sample a: dict value {clarity: 4, accuracy: 5} -> 2 rows; sample b: a list value -> dropped, counted
    assert res.n_records == 2 and len(j) == 2
    assert dict(zip(j["criterion"], j["score"])) == {"rubric/clarity": 4.0, "rubric/accuracy": 5.0}
    assert set(j["judge"]) == {"openai/gpt-4o"}  # the scorer's model option
    assert [(r, n) for r, n, _ in res.dropped] == [("list-valued Inspect score (a list is not one judgment)", 1)]
    assert "samples/b_epoch_1.json" in res.dropped[0][2]


def test_inspect_eval_zstd_members(tmp_path, monkeypatch):
    """Members compressed as current Inspect writes them (zip method 93) read like deflated ones; without
    zstandard (and inspect_ai) the error says what to install or how to convert the log."""
    zstandard = pytest.importorskip("zstandard")  # extra "dev"
    members = {str(p.relative_to(INSPECT_MEMBERS)): p.read_bytes() for p in INSPECT_MEMBERS.rglob("*.json")}
    path = _zip_method(tmp_path / "z.eval", members, 93, lambda b: zstandard.ZstdCompressor().compress(b))
    got = read_inspect(path, use_inspect_ai=False).judgments
    want = read_inspect(_eval_zip(tmp_path), use_inspect_ai=False).judgments
    pd.testing.assert_frame_equal(got, want)
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard now raises ImportError
    with pytest.raises(ReaderError, match=r"z\.eval: member .* is zstd-compressed.*inspect log convert"):
        read_inspect(path, use_inspect_ai=False)


def test_inspect_prefers_inspect_ai_when_installed(monkeypatch):
    log = json.loads(INSPECT_JSON.read_text())

    class _Model:
        def __init__(self, d):
            self._d = d
            self.id, self.epoch = d.get("id"), d.get("epoch")

        def model_dump(self, include=None, exclude=None):
            return {k: v for k, v in self._d.items() if (include is None or k in include)
                    and not (exclude and k in exclude)}

    class _Log(_Model):
        samples = [_Model(s) for s in log["samples"]]

    calls = []

    def read_eval_log(path, resolve_attachments=False):
        calls.append(path)
        return _Log(log)

    fake = types.ModuleType("inspect_ai")
    fake.__version__ = "0.0-test"
    fake_log = types.ModuleType("inspect_ai.log")
    fake_log.read_eval_log = read_eval_log
    monkeypatch.setitem(sys.modules, "inspect_ai", fake)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", fake_log)
    res = read_inspect(INSPECT_JSON)
    assert calls == [str(INSPECT_JSON)] and res.reader == "inspect_ai 0.0-test read_eval_log"
    pd.testing.assert_frame_equal(res.judgments, read_inspect(INSPECT_JSON, use_inspect_ai=False).judgments)


def test_inspect_requires_inspect_ai_only_when_asked(monkeypatch):
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    assert read_inspect(INSPECT_JSON).reader == "built-in JSON reader"  # falls back
    with pytest.raises(ReaderError, match=r"inspect_ai is not installed.*medeval_kit\[inspect\]"):
        read_inspect(INSPECT_JSON, use_inspect_ai=True)


# =========================================================================== AlpacaEval
def test_alpaca_eval_preferences_ties_and_missing():
    res = read_alpaca_eval(ALPACA)
    j = res.judgments
    assert res.n_records == 8 and len(j) == 8
    assert _status(j) == {"ok": 6, "failed": 2}  # preference null and -1 are failures, not ties
    assert set(j["order"]) == {"unrecorded"} and set(j["protocol"]) == {"pairwise"}
    by_pref = {p: (v, s) for p, v, s in zip(j["preference"], j["verdict"], j["score"]) if not math.isnan(p) and p != -1}
    # 2 -> B (margin -1); 1 -> A (+1); 1.5 -> tie (0); weighted 1.73 -> B with margin 3 - 2*1.73 = -0.46;
    # 0 (identical outputs, legacy draw) -> tie
    assert by_pref[2.0] == ("B", -1.0) and by_pref[1.0] == ("A", 1.0) and by_pref[1.5] == ("tie", 0.0)
    assert by_pref[0.0] == ("tie", 0.0)
    assert by_pref[1.73][0] == "B" and by_pref[1.73][1] == pytest.approx(-0.46)
    assert set(j.loc[j["preference"] == 1.73, "judge"]) == {"weighted_alpaca_eval_gpt4_turbo"}
    r = j.iloc[0]  # "Thiazide diuretics, ACE inhibitors, ARBs and calcium channel blockers." = 9 words, 70 chars
    assert (r["model_a"], r["model_b"], r["len_a"], r["nchar_a"], r["len_b"]) == ("gpt4_turbo", "med-llama-8b", 9.0, 70.0, 19.0)
    # record 8 repeats record 2: repeat 1 in judgments, dropped (counted) from annotations
    assert j["repeat"].tolist() == [0, 0, 0, 0, 0, 0, 0, 1] and j.iloc[7]["item"] == j.iloc[1]["item"]
    assert len(res.annotations) == 7 and res.annotations["label"].isna().sum() == 2
    assert [(n, w) for _, n, w in res.dropped] == [(1, "record 8")]
    assert len(res.items) == 7 and len(res.responses) == 14  # 7 instructions x 2 generators


def test_alpaca_eval_length_bias_runs_on_import():
    j = read_alpaca_eval(ALPACA).judgments
    out = bias.longer_preferred_rate(j).set_index("judge")
    # parsed non-tie verdicts with unequal word counts: records 1 (B; 9 < 19 words), 2 (A; 15 > 4) and 8 (= 2)
    # for the _fn annotator, record 4 (B; 3 < 5) for the weighted one: all prefer the longer output.
    # The two failed records (null, -1) are counted in n_failed, not used.
    assert out["n"].to_dict() == {"alpaca_eval_gpt4_turbo_fn": 3, "weighted_alpaca_eval_gpt4_turbo": 1}
    assert out["estimate"].tolist() == [1.0, 1.0]
    assert out.loc["alpaca_eval_gpt4_turbo_fn", "n_failed"] == 2


# =========================================================================== MT-bench
def test_mtbench_pair_two_orders_verdicts_and_failures():
    res = read_mtbench(PAIR)
    j = res.judgments
    # 6 lines; line 6 has m1_score/m2_score (single grading in pair mode) -> dropped; 5 x 2 games = 10 rows
    assert res.n_records == 6 and len(j) == 10
    assert [(n, w) for _, n, w in res.dropped] == [(1, "line 6")] and "m1_score" in res.dropped[0][0]
    assert j["order"].value_counts().to_dict() == {"AB": 5, "BA": 5}
    assert _status(j) == {"ok": 8, "failed": 2}  # $ERROR$ (line 4) and a judgment without a verdict tag (line 5)
    assert set(j.loc[j["parse_status"] == "failed", "verdict"].map(type)) == {type(None)}  # never a tie
    # line 1: model_1 = vicuna-13b; sorted pair A = alpaca-13b, B = vicuna-13b. Game 1 shows vicuna first (BA),
    # g1_winner model_1 -> B, slot first; game 2 shows alpaca first (AB), g2_winner model_1 -> B, slot second
    g1 = _row(j, item="81/turn1/alpaca-13b vs vicuna-13b", order="BA")
    g2 = _row(j, item="81/turn1/alpaca-13b vs vicuna-13b", order="AB")
    assert (g1["verdict"], g1["slot_verdict"], g1["score"]) == ("B", "first", -1.0)
    assert (g2["verdict"], g2["slot_verdict"], g2["game"]) == ("B", "second", "g2")
    ties = j[j["item"] == "82/turn1/claude-v1 vs gpt-4"]  # [[C]] in both games
    assert ties["verdict"].tolist() == ["tie", "tie"] and ties["score"].tolist() == [0.0, 0.0]
    err = _row(j, item="83/turn1/gpt-4 vs llama-13b", order="AB")
    assert err["raw"] == "$ERROR$" and err["note"] == "judge API error ($ERROR$)"
    assert set(j["judge"]) == {"gpt-4"} and set(j["template"]) == {"pair-v2", "pair-v2-multi-turn"}
    ann = res.annotations.set_index("item")
    # resolved per pair with FastChat's rule (inconsistent -> tie); a failed game leaves no label
    assert ann["label"].to_dict() == {"81/turn1/alpaca-13b vs vicuna-13b": "B", "81/turn2/alpaca-13b vs vicuna-13b": "tie",
                                      "82/turn1/claude-v1 vs gpt-4": "tie", "83/turn1/gpt-4 vs llama-13b": None,
                                      "84/turn1/claude-v1 vs llama-13b": None}
    assert ann.loc["81/turn2/alpaca-13b vs vicuna-13b", "resolution"] == "inconsistent->tie"


def test_mtbench_pair_round_trip_position_bias():
    j = read_format("mtbench", PAIR, table="judgments")
    pb = bias.position_bias(j).set_index("metric")
    # parsed non-tie calls in presented-slot terms: 81/t1 first+second, 81/t2 first+first, 83 second, 84 first
    # -> first-slot rate 4/6; pairs with both games parsed: 81/t1 (consistent), 81/t2 (flip), 82 (tie, tie)
    # -> consistency 2/3; ties 2 of 8 parsed calls; 2 failed calls counted, not used
    assert pb.loc["first_slot_rate", "estimate"] == pytest.approx(4 / 6)
    assert pb.loc["consistency", "estimate"] == pytest.approx(2 / 3)
    assert pb.loc["flip_rate", "estimate"] == pytest.approx(1 / 3)
    assert pb.loc["tie_rate", "estimate"] == pytest.approx(2 / 8)
    assert int(pb.loc["first_slot_rate", "n_failed"]) == 2


def test_mtbench_single_scores_failures_and_repeats():
    res = read_mtbench(SINGLE)
    j = res.judgments
    assert res.n_records == 5 and len(j) == 5 and res.annotations is None
    assert _status(j) == {"ok": 3, "failed": 2}  # score -1 (no [[rating]]) and $ERROR$
    assert set(j["protocol"]) == {"rubric"} and set(j["max_score"]) == {10.0}
    v = j[j["item"] == "81/turn1:vicuna-13b"]
    assert v["repeat"].tolist() == [0, 1] and v["score"].tolist() == [8.0, 7.0]  # re-run appended -> repeat 1
    assert _row(j, item="82/turn1:alpaca-13b")["note"] == "judge API error ($ERROR$)"
    assert _row(j, item="81/turn2:vicuna-13b")["template"] == "single-v1-multi-turn"


def test_mtbench_human_votes():
    res = read_mtbench_human(HUMAN)
    a = res.annotations
    # 6 votes, the 4th repeats expert_0 on the same pair and turn -> dropped (kept the first)
    assert res.n_records == 6 and len(a) == 5 and [(n, w) for _, n, w in res.dropped] == [(1, "record 4")]
    assert a["rater_kind"].value_counts().to_dict() == {"human": 4, "llm": 1}
    item = "81/turn1/alpaca-13b vs vicuna-13b"  # the same id as in the pair-judgment file
    got = a[a["item"] == item].set_index("rater")["label"].to_dict()
    # expert_0: model_a = vicuna = B; expert_1: tie (bothbad) -> tie; author_2: model_b = alpaca = A;
    # gpt-4 (list judge) voted on model_a = alpaca, model_b = vicuna, winner model_b = vicuna = B
    assert got == {"expert_0": "B", "expert_1": "tie", "author_2": "A", "gpt-4": "B"}
    assert _row(a, rater="expert_0", question_id="82")["label"] == "B"  # gpt-4 over claude-v1; A = claude-v1
    assert sorted(res.items["item"]) == ["81/turn1", "82/turn1", "82/turn2"] and len(res.responses) == 6
    assert res.items.set_index("item").loc["82/turn2", "question"] == "Now critique your own email."


def test_mtbench_human_unknown_judge_kind(tmp_path):
    p = tmp_path / "votes.jsonl"
    p.write_text(json.dumps({"question_id": 1, "model_a": "x", "model_b": "y", "winner": "model_a",
                             "judge": "mturk_7", "turn": 1}) + "\n")
    with pytest.raises(ReaderError, match=r"votes\.jsonl: line 1: field 'judge': cannot tell.*rater_kinds"):
        read_mtbench_human(p)
    a = read_mtbench_human(p, rater_kinds={"mturk_7": "human"}).annotations
    assert a["rater_kind"].tolist() == ["human"] and a["label"].tolist() == ["A"]


# =========================================================================== HealthBench
def test_healthbench_meta_physicians_and_grader():
    res = read_healthbench_meta(HEALTH)
    a = res.annotations
    # 7 lines; line 6 repeats line 1 -> dropped; 6 criteria. Physician labels 3+2+3+2+3+3 = 16 after dropping
    # ph_a's second label on line 5; grader labels on all 6 kept lines
    assert res.n_records == 7 and len(res.items) == 6
    assert a["rater_kind"].value_counts().to_dict() == {"human": 16, "llm": 6}
    assert sorted((n, w) for _, n, w in res.dropped) == [(1, "line 5, anonymized_physician_ids[3]"), (1, "line 6")]
    assert set(a["label"].dropna()) == {"met", "not_met"}
    # NA labels: ph_b's null on line 3, and the grader's unparseable reply on line 4
    na = a[a["label"].isna()]
    assert sorted(na["rater"]) == ["grader", "ph_b"]
    assert _row(a, rater="grader", item=na.loc[na["rater"] == "grader", "item"].iloc[0])["note"] == "grader reply is not JSON"
    fenced = a[(a["rater"] == "grader") & (a["item"].str.startswith("p-head/")) & a["label"].notna()]
    assert fenced["label"].tolist() == ["met"]  # ```json {...} ``` reply parsed like simple-evals
    assert a["item"].str.startswith("p-chest/c-chest-1/").sum() == 7  # prompt_id/completion_id/criterion hash
    ctx = res.items.set_index("item")["context"]
    assert ctx.str.contains("assistant: Call emergency services now").any()


def test_healthbench_round_trip_judge_vs_humans():
    ann = read_format("healthbench", HEALTH, table="annotations")
    res = agreement.judge_vs_humans(ann, n_boot=50, seed=0)
    t = res.table.set_index("role")
    assert t.loc["humans", "n_humans"] == 3 and t.loc["judge", "rater"] == "grader"
    assert t.loc["judge", "n_items"] == 5  # the grader has no label on one criterion (unparseable reply)


def test_healthbench_grader_name_and_physician_only_file(tmp_path):
    p = tmp_path / "meta.jsonl"
    p.write_text(json.dumps({"rubric": "Asks about allergies.", "binary_labels": [True, False],
                             "anonymized_physician_ids": ["d1", "d2"], "completion": "Any allergies?"}) + "\n")
    res = read_healthbench_meta(p, grader="gpt-4.1")
    assert res.annotations["rater"].tolist() == ["d1", "d2"]
    assert any("no grader labels" in n for n in res.notes)


# =========================================================================== promptfoo
def test_promptfoo_llm_rubric_and_select_best():
    res = read_promptfoo(PROMPTFOO)
    j = res.judgments
    # 6 results (3 tests x 2 providers). llm-rubric rows: t0 x2, t1 x2 (one grader error, one provider error
    # before grading -> missing), t2 x2 = 6; select-best rows: t0, t1 = 2
    assert res.n_records == 6 and len(j) == 8
    assert _status(j) == {"ok": 5, "failed": 2, "missing": 1}
    rub = j[j["protocol"] == "rubric"]
    assert dict(zip(rub["item"], rub["verdict"])) == {
        "t0:openai:gpt-4o-mini": "pass", "t0:meditron": "fail", "t1:openai:gpt-4o-mini": None,
        "t1:meditron": None, "t2:openai:gpt-4o-mini": "pass", "t2:meditron": "fail"}
    assert _row(rub, item="t2:meditron")["score"] == 0.3
    # grader: config.defaultTest (t0), the declared assertion's provider (t1), the test's options (t2)
    assert dict(zip(rub["question_item"], rub["judge"])) == {
        "t0": "openai:gpt-4.1-mini", "t1": "anthropic:messages:claude-3-5-haiku-20241022", "t2": "openai:gpt-4o"}
    assert _row(rub, item="t1:openai:gpt-4o-mini")["parse_status"] == "failed"
    assert _row(rub, item="t1:meditron")["note"] == "not graded: API error: 500 Internal Server Error"
    assert _row(rub, item="t1:meditron")["criterion"] == "dosing_safety"  # the assertion's metric
    sb = j[j["protocol"] == "multi_response"].set_index("item")
    assert sb.loc["t0", "verdict"] == "openai:gpt-4o-mini" and sb.loc["t0", "order"] == "openai:gpt-4o-mini | meditron"
    assert sb.loc["t0", "judge"] == "anthropic:messages:claude-3-5-sonnet-20241022"
    assert sb.loc["t1", "parse_status"] == "failed" and sb.loc["t1", "verdict"] is None
    assert any("icontains x2" in n for n in res.notes)  # not model-graded: counted, not imported
    assert len(res.responses) == 6 and res.responses["text"].isna().sum() == 1


# =========================================================================== dispatch, summary
def test_read_format_dispatch_and_tables():
    assert set(FORMATS) == {"inspect", "alpaca_eval", "mtbench", "mtbench_human", "healthbench", "promptfoo"}
    assert read_format("MT-bench", PAIR).format == "mtbench"
    assert read_format("mtbench_human", HUMAN, table="primary").equals(read_mtbench_human(HUMAN).annotations)
    with pytest.raises(ReaderError, match="unknown format 'lmeval'"):
        read_format("lmeval", PAIR)
    with pytest.raises(ReaderError, match=r"gpt-4_single\.jsonl: the mtbench reader found no annotations rows.*judgments"):
        read_format("mtbench", SINGLE, table="annotations")


def test_summary_counts_reads_rows_and_drops():
    s = read_mtbench(PAIR).summary()
    assert "read 6 lines" in s and "judgments: 10 rows (8 ok, 2 failed)" in s
    assert "dropped 1:" in s and "1 x pairwise record derived from single-answer grading" in s and "(first: line 6)" in s
    frame = read_mtbench(PAIR).to_frame()
    assert frame.loc[frame["kind"] == "dropped", "n"].tolist() == [1]


# =========================================================================== errors
@pytest.mark.parametrize("fmt, text, where, field", [
    ("mtbench", None, "line 2", "g2_winner"),
    ("alpaca_eval", None, "record 2", "generator_2"),
    ("alpaca_eval", "pref3", "record 1", "preference"),
    ("healthbench", None, "line 1", "binary_labels"),
    ("healthbench", "labels", "line 1", "binary_labels[1]"),
    ("mtbench_human", None, "record 1", "winner"),
])
def test_broken_record_names_file_line_and_field(tmp_path, fmt, text, where, field):
    if fmt == "mtbench":
        lines = PAIR.read_text().splitlines()
        rec = json.loads(lines[1])
        rec["g2_winner"] = "model_3"
        p = tmp_path / "pair.jsonl"
        p.write_text("\n".join([lines[0], json.dumps(rec)]) + "\n")
    elif fmt == "alpaca_eval":
        recs = json.loads(ALPACA.read_text())[:2]
        if text == "pref3":
            recs[0]["preference"] = 3
        else:
            del recs[1]["generator_2"]
        p = tmp_path / "annotations.json"
        p.write_text(json.dumps(recs, indent=2))
    elif fmt == "healthbench":
        rec = json.loads(HEALTH.read_text().splitlines()[0])
        if text == "labels":
            rec["binary_labels"][1] = "yes"
        else:
            rec["anonymized_physician_ids"] = rec["anonymized_physician_ids"][:2]
        p = tmp_path / "meta.jsonl"
        p.write_text(json.dumps(rec) + "\n")
    else:
        recs = json.loads(HUMAN.read_text())[:1]
        recs[0]["winner"] = "model_c"
        p = tmp_path / "human.json"
        p.write_text(json.dumps(recs))
    with pytest.raises(ReaderError) as exc:
        read_format(fmt, p)
    msg = str(exc.value)
    assert msg.startswith(str(p)) and f": {where}: field '{field}'" in msg, msg


def test_broken_files_name_the_place(tmp_path):
    p = tmp_path / "pair.jsonl"
    lines = PAIR.read_text().splitlines()
    p.write_text("\n".join(lines[:2] + ['{"question_id": 81, "model_1": ']) + "\n")
    with pytest.raises(ReaderError, match=r"pair\.jsonl: line 3 is not valid JSON"):
        read_mtbench(p)
    p.write_text(lines[0].replace('"turn": 1', '"turn": "one"') + "\n")
    with pytest.raises(ReaderError, match=r"line 1: field 'turn': expected an integer, got a string 'one'"):
        read_mtbench(p)
    q = tmp_path / "results.json"
    obj = json.loads(PROMPTFOO.read_text())
    del obj["results"]["results"][2]["testIdx"]
    q.write_text(json.dumps(obj))
    with pytest.raises(ReaderError, match=r"results\.json: results\.results\[2\]: field 'testIdx': missing"):
        read_promptfoo(q)
    q.write_text(json.dumps({"version": 3}))
    with pytest.raises(ReaderError, match="not a promptfoo results file"):
        read_promptfoo(q)
    with pytest.raises(ReaderError, match=r"missing\.json: file not found"):
        read_alpaca_eval(tmp_path / "missing.json")


def test_broken_inspect_sample_names_member_and_field(tmp_path):
    members = {str(p.relative_to(INSPECT_MEMBERS)): p.read_bytes() for p in INSPECT_MEMBERS.rglob("*.json")}
    bad = json.loads(members["samples/a_epoch_1.json"])
    bad["epoch"] = 0
    members["samples/a_epoch_1.json"] = json.dumps(bad).encode()
    with pytest.raises(ReaderError, match=r"log\.eval: sample member samples/a_epoch_1\.json: field 'epoch': "
                                          r"expected an integer >= 1, got 0"):
        read_inspect(_eval_zip(tmp_path, members), use_inspect_ai=False)
    (tmp_path / "x.eval").write_text("not a zip")
    with pytest.raises(ReaderError, match=r"x\.eval: not a zip archive"):
        read_inspect(tmp_path / "x.eval", use_inspect_ai=False)
    with pytest.raises(ReaderError, match=r"\.txt.*ends in \.eval or \.json"):
        read_inspect(tmp_path / "log.txt")


# =========================================================================== CLI
def test_cli_import_writes_a_csv_that_validates(tmp_path, capsys):
    out = tmp_path / "judgments.csv"
    assert cli.main(["import", "mtbench", str(PAIR), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "judgments: 10 rows (8 ok, 2 failed)" in err and "dropped 1:" in err and f"wrote 10 judgments rows to {out}" in err
    back = read_tidy(out, "judgments")
    validate(back, "judgments", source=str(out), categories={"verdict": ["A", "B", "tie"]})
    # a tidy table whose columns the user renamed reads back the same through columns=
    mine = tmp_path / "mine.csv"
    pd.read_csv(out, dtype=str, keep_default_na=False).rename(columns={"item": "case", "judge": "grader"}).to_csv(
        mine, index=False)
    pd.testing.assert_frame_equal(read_tidy(mine, "judgments", columns={"item": "case", "judge": "grader"}), back)
    # the CSV round trip feeds the position-bias analysis exactly like the in-memory table
    pd.testing.assert_frame_equal(bias.position_bias(back), bias.position_bias(read_mtbench(PAIR).judgments))


@pytest.mark.parametrize("fmt, path, table, n", [
    ("healthbench", HEALTH, None, 22),
    ("mtbench_human", HUMAN, "responses", 6),
    ("inspect", INSPECT_JSON, "items", 3),
    ("alpaca_eval", ALPACA, "annotations", 7),
    ("promptfoo", PROMPTFOO, "judgments", 8),
])
def test_cli_import_every_format(tmp_path, capsys, fmt, path, table, n):
    out = tmp_path / "tidy.csv"
    argv = ["import", fmt, str(path), "-o", str(out)] + (["--table", table] if table else [])
    if fmt == "inspect":
        argv.append("--no-inspect-ai")
    assert cli.main(argv) == 0
    name = table or read_format(fmt, path).primary
    back = read_tidy(out, name)
    assert len(back) == n
    validate(back, name, source=str(out))
    assert f"wrote {n} {name} rows" in capsys.readouterr().err


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl", ".ndjson", ".parquet", ".pq"])
def test_cli_import_writes_every_output_type(tmp_path, capsys, suffix):
    from medeval_kit.cli.imports import _WRITERS

    assert suffix in _WRITERS  # every documented output type has a writer
    out = tmp_path / f"judgments{suffix}"
    assert cli.main(["import", "mtbench", str(PAIR), "-o", str(out)]) == 0
    back = read_tidy(out, "judgments")
    pd.testing.assert_frame_equal(bias.position_bias(back), bias.position_bias(read_mtbench(PAIR).judgments))


def test_cli_import_errors(tmp_path, capsys):
    assert cli.main(["import", "mtbench", str(SINGLE), "-o", str(tmp_path / "a.csv"), "--table", "annotations"]) == 2
    assert "no annotations rows" in capsys.readouterr().err
    assert cli.main(["import", "mtbench", str(PAIR), "-o", str(tmp_path / "a.xlsx")]) == 2
    assert "unknown output type '.xlsx'" in capsys.readouterr().err
    assert cli.main(["import", "mtbench", str(PAIR), "-o", str(tmp_path / "a.csv"), "--grader", "x"]) == 2
    assert "--grader applies to the healthbench format only" in capsys.readouterr().err


def test_cli_import_to_stdout(capsys):
    assert cli.main(["import", "healthbench", str(HEALTH), "-o", "-", "--grader", "gpt-4.1"]) == 0
    cap = capsys.readouterr()
    df = pd.read_csv(io.StringIO(cap.out))
    assert len(df) == 22 and "gpt-4.1" in set(df["rater"]) and "read 7 lines" in cap.err
