"""The reproduction report is built from the studies' outputs and lists every published number."""

import json

import pandas as pd
import pytest

from medeval_kit.cli.report import build_report, collect_published
from medeval_kit.errors import SchemaError


@pytest.fixture()
def outputs(tmp_path):
    (tmp_path / "tables" / "s1").mkdir(parents=True)
    (tmp_path / "figures" / "s1").mkdir(parents=True)
    pd.DataFrame([
        {"paper": "p-2024", "source": "Table 1", "quantity": "kappa 1-2", "published": "0.85", "ours": "0.852",
         "status": "reproduced", "note": ""},
        {"paper": "p-2024", "source": "Table 9", "quantity": "share", "published": "42.5%", "ours": "0.575",
         "status": "differs", "note": "Table 19 disagrees with Table 9"},
        {"paper": "q-2025", "source": "§3", "quantity": "judge prefs", "published": "12", "ours": "",
         "status": "not recoverable", "note": "files not public"},
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
    for text in ("0.852", "42.5%", "Table 19 disagrees with Table 9", "not recoverable", "at its printed precision"):
        assert text in html and text in md
    assert 'src="../figures/s1/f.png"' in html
    assert "published_numbers" in md  # the table itself is listed among the tables
    assert "1 figures" in rep.summary() and "reproduced: 1" in rep.summary()


def test_bad_published_table_is_named(outputs):
    p = outputs / "tables" / "s1" / "published_numbers.csv"
    pd.read_csv(p).drop(columns="status").to_csv(p, index=False)
    with pytest.raises(SchemaError, match=r"published_numbers\.csv: table 'published_numbers', column 'status'"):
        collect_published(outputs)


@pytest.mark.parametrize("bad", ["close enough", "not recoverable from public data", "Reproduced"])
def test_unknown_status_is_an_error(outputs, bad):
    # no normalising of free-text statuses: exactly reproduced, differs or not recoverable
    p = outputs / "tables" / "s1" / "published_numbers.csv"
    df = pd.read_csv(p, dtype=str, keep_default_na=False)
    df.loc[0, "status"] = bad
    df.to_csv(p, index=False)
    with pytest.raises(SchemaError, match=f"column 'status', rows \\[0\\].*unknown status '{bad}'"):
        collect_published(outputs)


def test_a_status_the_rule_does_not_give_is_an_error(outputs):
    # printed 0.85 vs ours 0.844: |0.844 - 0.85| = 0.006 > half a unit (0.005), so the rule says differs
    p = outputs / "tables" / "s1" / "published_numbers.csv"
    df = pd.read_csv(p, dtype=str, keep_default_na=False)
    df.loc[0, "ours"] = "0.844"
    df.to_csv(p, index=False)
    with pytest.raises(SchemaError, match="status 'reproduced' is not what the rule gives"):
        collect_published(outputs)


# Published numbers that the golden tests check (test_repro, test_agreement, test_rounds*, test_generate*,
# test_bias): (canonical paper id, value as printed, expected status).
GOLDEN = [
    ("pandalm-2024", "0.85", "reproduced"), ("pandalm-2024", "0.88", "reproduced"),
    ("pandalm-2024", "0.86", "reproduced"), ("pandalm-2024", "105", "reproduced"),
    ("pandalm-2024", "422", "reproduced"), ("pandalm-2024", "472", "reproduced"),
    ("mcqg-srefine-2025", "87.5%", "reproduced"), ("mcqg-srefine-2025", "0.66722", "reproduced"),
    ("mcqg-srefine-2025", "0.538904899", "reproduced"), ("mcqg-srefine-2025", "0.9031", "reproduced"),
    ("mcqg-srefine-2025", "61.53%", "differs"),  # Table 9 vs Table 19
    ("mcqg-srefine-2025", "0.571428", "differs"),  # 4/7 = 0.5714286 truncated, not rounded
    ("longform-medqa-2024", "0.94", "reproduced"), ("longform-medqa-2024", "293", "reproduced"),
    ("longform-medqa-2024", "317", "reproduced"), ("longform-medqa-2024", "337", "reproduced"),
    ("medqade-2026", "0.766", "reproduced"), ("medqade-2026", "36", "reproduced"),
    ("medqade-2026", "256", "reproduced"), ("medqade-2026", "0.709", "not recoverable"),
    ("grounded-synth-2025", "0.9066", "reproduced"), ("grounded-synth-2025", "0.86", "differs"),
    ("grounded-synth-2025", "0.91", "differs"),
    ("automedeval-2025", "0.5274", "reproduced"), ("automedeval-2025", "44.41", "reproduced"),
    ("automedeval-2025", "52.13", "reproduced"),
]


def test_report_lists_every_published_number_of_the_golden_tests(tmp_path):
    """Built from the committed study outputs; `make figures` regenerates them."""
    rep = build_report(outdir=tmp_path)
    pub = rep.published
    md = rep.md_path.read_text()
    for paper, value, status in GOLDEN:
        rows = pub[(pub["paper"] == paper) & (pub["published"] == value)]
        assert len(rows), f"{paper} {value} is missing from the report"
        assert status in set(rows["status"]), f"{paper} {value}: status {set(rows['status'])}, expected {status}"
        assert value in md
