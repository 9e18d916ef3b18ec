"""The reproduction report is built from the studies' outputs and lists every published number."""

import json

import pandas as pd
import pytest

from medeval_kit.report import build_report, collect_published
from medeval_kit.errors import SchemaError


@pytest.fixture()
def outputs(tmp_path):
    (tmp_path / "tables" / "s1").mkdir(parents=True)
    (tmp_path / "figures" / "s1").mkdir(parents=True)
    pd.DataFrame([
        {"paper": "P", "source": "Table 1", "quantity": "kappa 1-2", "published": "0.85", "ours": "0.852",
         "status": "reproduced", "note": ""},
        {"paper": "P", "source": "Table 9", "quantity": "share", "published": "42.5%", "ours": "57.5%",
         "status": "differs", "note": "Table 19 disagrees with Table 9"},
        {"paper": "Q", "source": "§3", "quantity": "judge prefs", "published": "n/a", "ours": "",
         "status": "not recoverable from public data", "note": "files not public"},
    ]).to_csv(tmp_path / "tables" / "s1" / "published_numbers.csv", index=False)
    (tmp_path / "figures" / "s1" / "f.json").write_text(json.dumps(
        {"figure": "f", "files": ["f.png"], "notebook": "n.ipynb", "parameters": {"a": 1}, "data_hash": "x"}))
    (tmp_path / "figures" / "s1" / "f.png").write_bytes(b"\x89PNG")
    return tmp_path


def test_report_lists_numbers_figures_and_tables(outputs):
    rep = build_report(outputs)
    assert list(rep.published["status"]) == ["reproduced", "differs", "not recoverable"]
    html = rep.html_path.read_text()
    md = rep.md_path.read_text()
    for text in ("0.852", "42.5%", "Table 19 disagrees with Table 9", "not recoverable"):
        assert text in html and text in md
    assert 'src="../figures/s1/f.png"' in html
    assert "published_numbers" in md  # the table itself is listed among the tables
    assert "1 figures" in rep.summary() and "reproduced: 1" in rep.summary()


def test_bad_published_table_is_named(outputs):
    p = outputs / "tables" / "s1" / "published_numbers.csv"
    pd.read_csv(p).drop(columns="status").to_csv(p, index=False)
    with pytest.raises(SchemaError, match=r"published_numbers\.csv: table 'published_numbers', column 'status'"):
        collect_published(outputs)


def test_unknown_status_is_an_error(outputs):
    p = outputs / "tables" / "s1" / "published_numbers.csv"
    df = pd.read_csv(p)
    df.loc[0, "status"] = "close enough"
    df.to_csv(p, index=False)
    with pytest.raises(ValueError, match="unknown status 'close enough'"):
        collect_published(outputs)


# Published numbers that the golden tests check (test_agreement, test_rounds*, test_generate*, test_bias):
# (paper keyword, published value, expected status).
GOLDEN = [
    ("PandaLM", 0.85, "reproduced"), ("PandaLM", 0.88, "reproduced"), ("PandaLM", 0.86, "reproduced"),
    ("PandaLM", 105, "reproduced"), ("PandaLM", 422, "reproduced"), ("PandaLM", 472, "reproduced"),
    ("MCQG-SRefine", 0.875, "reproduced"), ("MCQG-SRefine", 0.66722, "reproduced"),
    ("MCQG-SRefine", 0.538904899, "reproduced"), ("MCQG-SRefine", 0.9031, "reproduced"),
    ("MCQG-SRefine", 0.6153, "differs"),  # Table 9 vs Table 19
    ("Long-form", 0.94, "reproduced"), ("Long-form", 293, "reproduced"), ("Long-form", 317, "reproduced"),
    ("MedQADE", 0.766, "reproduced"), ("MedQADE", 36, "reproduced"), ("MedQADE", 256, "reproduced"),
    ("MedQADE", 0.709, "not recoverable"),
    ("grounded", 0.9066, "reproduced"), ("grounded", 0.86, "differs"), ("grounded", 0.91, "differs"),
    ("longform", 337, "reproduced"),
    ("AutoMedEval", 0.5274, "reproduced"), ("AutoMedEval", 44.41, "reproduced"), ("AutoMedEval", 52.13, "reproduced"),
]


def test_report_lists_every_published_number_of_the_golden_tests(tmp_path):
    """Built from the committed study outputs; `make figures` regenerates them."""
    rep = build_report(outdir=tmp_path)
    pub = rep.published.copy()
    pub["value"] = pd.to_numeric(pub["published"], errors="coerce")
    md = rep.md_path.read_text()
    for paper, value, status in GOLDEN:
        rows = pub[pub["paper"].str.contains(paper, case=False, regex=False) & ((pub["value"] - value).abs() < 1e-9)]
        assert len(rows), f"{paper} {value} is missing from the report"
        assert status in set(rows["status"]), f"{paper} {value}: status {set(rows['status'])}, expected {status}"
        assert str(rows["published"].iloc[0]) in md
