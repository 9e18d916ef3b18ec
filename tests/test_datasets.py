"""Bundled-data loaders: shapes, published counts, and clear errors on malformed files."""

import json

import pandas as pd
import pytest

from medeval_kit import datasets as ds
from medeval_kit.datasets.synthetic import synthetic_annotations, synthetic_pairwise, synthetic_rounds
from medeval_kit.errors import DataFileError, SchemaError


@pytest.fixture(scope="module")
def pandalm():
    return ds.load_pandalm()


def test_pandalm_shapes(pandalm):
    assert len(pandalm.items) == 999
    assert pandalm.annotations.groupby("rater").size().to_dict() == {
        "annotator1": 999, "annotator2": 999, "annotator3": 999, "gpt-3.5-turbo": 999, "pandalm-7b": 999}


def test_pandalm_majority_counts_match_the_readme(pandalm):
    # README of PandaLM: majority label distribution 0 (tie): 105, 1: 422, 2: 472.
    humans = pandalm.annotations[pandalm.annotations.rater_kind == "human"]
    wide = humans.pivot(index="item", columns="rater", values="label")
    majority = wide.mode(axis=1)[0]
    assert (wide.apply(lambda r: r.value_counts().max(), axis=1) >= 2).all()
    assert majority.value_counts().to_dict() == {"B": 472, "A": 422, "tie": 105}


def test_pandalm_gpt_garbage_is_kept_and_counted_not_tied(pandalm):
    j = pandalm.judgments[pandalm.judgments.judge == "gpt-3.5-turbo"]
    failed = j[j.parse_status == "failed"]
    assert len(failed) == 25
    assert (failed["raw"] == "garbage").all() and failed["verdict"].isna().all()


def test_table19_codes(tmp_path):
    t = ds.load_medqg_table19().annotations
    ex = t[t.rater == "expert_x"]["label"].value_counts().to_dict()
    # SOURCE.md: Expert X 28 x 2 (MCQG-SRefine), 8 x 1 (GPT-4), 4 x 0 (tie)
    assert ex == {"mcqg_srefine": 28, "gpt4_baseline": 8, "tie": 4}
    assert set(t["label"]) == {"mcqg_srefine", "gpt4_baseline", "tie", "inconsistent"}
    bad = tmp_path / "t19.csv"
    bad.write_text("case,gpt-4o,expert_x\n1,1,2\n2,7,1\n")
    with pytest.raises(SchemaError, match=r"t19\.csv: table 'annotations', column 'gpt-4o', rows \[2\].*unknown code"):
        ds.load_medqg_table19(bad)


def test_medqg_questions_counts_match_the_paper():
    q = ds.load_medqg_questions().items
    assert q.groupby("kp_source").size().to_dict() == {"human": 373, "machine": 385}
    assert q["options"].map(lambda o: isinstance(o, dict)).all()


def test_grounded_synth_and_mmlu():
    g = ds.load_grounded_synth()
    # 12 generating models + the reformatted human originals, x {mcq, oe}, x 100 questions
    assert len(g.items) == 2600
    assert g.items["generator"].nunique() == 13
    assert set(g.judgments["criterion"]) == {
        "answer_correctness", "explanation_validity", "question_clarity", "question_groundedness"}
    m = ds.load_mmlu_pro_replication()
    assert len(m) == 192 and set(m["novel"]) == {True, False}


def test_malformed_json_names_file_and_line(tmp_path):
    p = tmp_path / "testset-v1.json"
    p.write_text('[{"idx": 0,\n "cmp_key": }]')
    with pytest.raises(DataFileError, match=r"testset-v1\.json: malformed JSON at line 2"):
        ds.load_pandalm(tmp_path)


def test_malformed_jsonl_line(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(DataFileError, match=r"x\.jsonl: line 2 is not valid JSON"):
        ds.read_jsonl(p)


def test_pandalm_missing_column_and_unknown_code(tmp_path):
    rows = [{"idx": 0, "cmp_key": "a_b", "instruction": "i", "input": "", "response1": "x",
             "response2": "y", "annotator1": 1, "annotator2": 2, "annotator3": 9}]
    (tmp_path / "testset-v1.json").write_text(json.dumps(rows))
    with pytest.raises(SchemaError, match=r"column 'annotator3', rows \[0\].*unknown code"):
        ds.load_pandalm(tmp_path)
    del rows[0]["response2"]
    (tmp_path / "testset-v1.json").write_text(json.dumps(rows))
    with pytest.raises(SchemaError, match=r"missing column\(s\) \['response2'\]"):
        ds.load_pandalm(tmp_path)


def test_read_table_formats_and_errors(tmp_path):
    df = pd.DataFrame({"item": ["1", "2"], "label": ["A", "B"]})
    df.to_csv(tmp_path / "a.csv", index=False)
    df.to_json(tmp_path / "a.jsonl", orient="records", lines=True)
    df.to_parquet(tmp_path / "a.parquet")
    for ext in ("csv", "jsonl", "parquet"):
        assert ds.read_table(tmp_path / f"a.{ext}")["label"].tolist() == ["A", "B"]
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(DataFileError, match=r"e\.csv"):
        ds.read_table(tmp_path / "e.csv")
    with pytest.raises(DataFileError, match="unknown file type"):
        ds.read_table(tmp_path / "a.csv.bak") if (tmp_path / "a.csv.bak").write_text("x") else None
    with pytest.raises(DataFileError, match="file not found"):
        ds.read_table(tmp_path / "nope.csv")


def test_synthetic_generators_plant_what_they_say():
    a = synthetic_annotations(n_items=4000, n_raters=2, kappa=0.5, seed=1)
    wide = a.pivot(index="item", columns="rater", values="label")
    from sklearn.metrics import cohen_kappa_score
    assert abs(cohen_kappa_score(wide["r1"], wide["r2"]) - 0.5) < 0.04
    p = synthetic_pairwise(n_items=4000, first_slot_preference=0.2, seed=1)
    nontie = p[p.slot_verdict != "tie"]
    assert abs((nontie.slot_verdict == "first").mean() - 0.7) < 0.02
    r = synthetic_rounds(n_items=300, improvement=0.05, noise=0.02, seed=1)
    means = r.groupby("round")["score"].mean()
    assert abs(means.diff().dropna().mean() - 0.05) < 0.01


def test_read_table_applies_columns_and_data_dir_moved_to_paths(tmp_path):
    from medeval_kit import paths

    pd.DataFrame({"case": ["1", "2"], "doc": ["a", "b"], "label": ["NA", "B"]}).to_csv(tmp_path / "m.csv", index=False)
    df = ds.read_table(tmp_path / "m.csv", text=True, columns={"item": "case", "rater": "doc"})
    assert list(df.columns) == ["item", "rater", "label"] and df["label"].tolist() == ["NA", "B"]
    assert "data_dir" not in ds.__all__
    with pytest.warns(DeprecationWarning, match="use paths.data_dir"):
        assert ds.data_dir() == paths.data_dir()
