"""The reproduction report is built from the studies' outputs and lists every published number."""

import base64
import json
import re

import pandas as pd
import pytest

from medeval_kit.cli.report import (
    CELL_CHARS,
    SYMBOLS,
    build_report,
    collect_published,
    display_table,
    paper_counts,
    show_ours,
)
from medeval_kit.errors import SchemaError
from medeval_kit.repro.published import STATUSES


@pytest.fixture()
def outputs(tmp_path):
    (tmp_path / "tables" / "s1").mkdir(parents=True)
    (tmp_path / "figures" / "s1").mkdir(parents=True)
    pd.DataFrame([
        {"paper": "p-2024", "source": "Table 1", "quantity": "kappa 1-2", "published": "0.85", "ours": "0.852",
         "status": "reproduced", "kind": "printed", "note": "ours rounds to 0.85"},
        {"paper": "p-2024", "source": "Table 9", "quantity": "share", "published": "42.5%", "ours": "0.575",
         "status": "differs", "kind": "printed", "note": "Table 19 disagrees with Table 9"},
        {"paper": "q-2025", "source": "§3", "quantity": "judge prefs", "published": "12", "ours": "",
         "status": "not recoverable", "kind": "printed", "note": "files not public"},
    ]).to_csv(tmp_path / "tables" / "s1" / "published_numbers.csv", index=False)
    (tmp_path / "figures" / "s1" / "f.json").write_text(json.dumps(
        {"figure": "f", "files": ["f.png"], "notebook": "n.ipynb", "parameters": {"a": 1}, "data_hash": "x"}))
    (tmp_path / "figures" / "s1" / "f.png").write_bytes(b"\x89PNG")
    return tmp_path


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + (640).to_bytes(4, "big") + (480).to_bytes(4, "big")


def test_report_lists_numbers_figures_and_tables(outputs):
    rep = build_report(outputs)
    assert list(rep.published["status"]) == ["reproduced", "differs", "not recoverable"]
    html = rep.html_path.read_text()
    md = rep.md_path.read_text()
    for text in ("42.5%", "Table 19 disagrees with Table 9", "not recoverable", "at its printed precision",
                 "p-2024", "q-2025"):
        assert text in html and text in md
    # ours at the printed precision of its published value: 0.852 beside "0.85" shows 0.85, the share 0.575
    # beside "42.5%" shows 57.5%; the unrounded value is not shown
    assert "57.5%" in html and "57.5%" in md
    assert "0.852" not in html and "0.852" not in md
    assert "| 0.85 | 0.85 |" in md
    # the figure is embedded, not linked: the HTML stands alone; the Markdown links it relative to report/
    assert 'src="data:image/png;base64,' + base64.b64encode(b"\x89PNG").decode() + '"' in html
    assert 'src="../' not in html and "<link" not in html
    assert "(../figures/s1/f.png)" in md
    assert "published_numbers" in md  # the table itself is listed among the tables
    assert "1 figures" in rep.summary() and "✓ 1 reproduced" in rep.summary()
    # the headline counts printed numbers, each once, in both files
    head = "3 printed numbers (+0 derived checks) from 2 papers, checked 3 times in 1 studies."
    assert head in md and head in html and head in rep.summary()


def test_summary_comes_first_with_counts_per_paper(outputs):
    html = build_report(outputs).html_path.read_text()
    assert html.index('<section id="summary">') < html.index("<details")
    summary = html[html.index('<section id="summary">'):html.index("</section>")]
    # reproduced, consistent, differs, not recoverable, printed numbers, derived: p-2024 1, 0, 1, 0, 2, 0;
    # q-2025 0, 0, 0, 1, 1, 0 (the row order of the summary table)
    cells = re.findall(r'<td class="num">(\d+)</td>', summary)
    assert cells == ["1", "0", "1", "0", "2", "0", "0", "0", "0", "1", "1", "0"]
    assert "no data file data/published/p-2024.yaml" in summary


def test_summary_cites_the_paper_data_file(outputs):
    (outputs / "data" / "published").mkdir(parents=True)
    (outputs / "data" / "published" / "p-2024.yaml").write_text(
        "id: p-2024\nshort: P\ncitation: Ann Author, Bo Author. A paper on kappa. Venue 2024.\n"
        "url: https://example.org/p\nnumbers:\n  - {id: k, source: Table 1, quantity: kappa, value: '0.85'}\n")
    rep = build_report(outputs)
    html, md = rep.html_path.read_text(), rep.md_path.read_text()
    for text in ("Ann Author, Bo Author. A paper on kappa. Venue 2024.", "https://example.org/p"):
        assert text in html and text in md


def test_statuses_read_without_colour(outputs):
    """Okabe-Ito blue, sky blue, orange and grey, and every status also carries its symbol and word."""
    html = build_report(outputs).html_path.read_text()
    assert "#0072B2" in html and "#56B4E9" in html and "#E69F00" in html
    badges = re.findall(r'<span class="badge ([a-z-]+)">([^<]*)</span>', html)
    assert {b for b, _ in badges} == {"reproduced", "consistent", "differs", "not-recoverable"}  # with the rules
    for cls, text in badges:
        status = cls.replace("-", " ")
        assert SYMBOLS[status] in text and status in text, (cls, text)


def test_text_from_data_is_escaped(outputs):
    p = outputs / "tables" / "s1" / "published_numbers.csv"
    df = pd.read_csv(p, dtype=str, keep_default_na=False)
    df.loc[1, "note"] = "a | b <script>x</script>\nline 2"
    df.to_csv(p, index=False)
    rep = build_report(outputs)
    html, md = rep.html_path.read_text(), rep.md_path.read_text()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "a \\| b &lt;script&gt;x&lt;/script&gt;<br>line 2" in md


@pytest.mark.parametrize(("printed", "ours", "shown"), [
    ("0.85", "0.8520226785167023", "0.85"),  # two printed decimals
    ("0.85", 0.844, "0.84"),
    ("105", "105.0", "105"),  # a count: an integer, never 105.0
    ("20", "25.0", "25"),
    ("87.5%", 0.875, "87.5%"),  # a percentage: ours x 100 at the printed decimals
    ("42.5%", "0.575", "57.5%"),
    ("35%", "0.575", "57.5%"),  # 23/40: a tie at the printed precision keeps its digit (never 57%)
    ("57%", 23 / 40, "57.5%"),
    ("65%", 0.65, "65%"),
    ("0.3340", -0.30081496336545066, "-0.3008"),  # the printed trailing zero sets four decimals
    ("-1.0", "-1.0", "-1.0"),
    ("0.709", "", ""),  # not recoverable: nothing to show
    ("0.709", None, ""),
    ("0.709", float("nan"), ""),
])
def test_ours_is_shown_at_the_printed_precision(printed, ours, shown):
    assert show_ours(printed, ours) == shown


def test_tables_show_counts_as_integers_and_floats_rounded():
    # as pandas reads a CSV whose count column has a gap: n_items becomes float (105.0)
    df = pd.DataFrame({"metric": ["kappa", "alpha"], "estimate": [0.8520226785167023, -1e-17],
                       "p_value": [0.00001234, 0.5], "n_items": [105.0, float("nan")], "n_failed": [0, 3],
                       "note": ["x" * 500, ""]})
    shown, numeric = display_table(df)
    assert shown["n_items"].tolist() == ["105", ""] and shown["n_failed"].tolist() == ["0", "3"]
    assert shown["estimate"].tolist() == ["0.852", "0.000"]  # 3 decimals below 10; no "-0.000"
    assert shown["p_value"].tolist() == ["1.23e-05", "0.5"]  # a p-value column: 3 significant digits
    assert len(shown["note"][0]) == CELL_CHARS and shown["note"][0].endswith("…")
    assert set(numeric) == {"estimate", "p_value", "n_items", "n_failed"}
    # a published-numbers table keeps the printed strings and shows ours at their precision
    pub, _ = display_table(pd.DataFrame({"published": ["0.3340", "105"], "ours": [-0.30081496336545066, 105.0]}))
    assert pub.to_dict("list") == {"published": ["0.3340", "105"], "ours": ["-0.3008", "105"]}


def test_paper_counts_count_a_number_checked_by_two_studies_once():
    rows = pd.DataFrame([
        {"study": "a", "paper": "p-2024", "source": "T1", "quantity": "k", "published": "0.85", "status": "reproduced"},
        {"study": "b", "paper": "p-2024", "source": "T1", "quantity": "k", "published": "0.85", "status": "reproduced"},
        {"study": "b", "paper": "p-2024", "source": "T2", "quantity": "n", "published": "12", "status": "differs"},
        {"study": "b", "paper": "q-2025", "source": "T3", "quantity": "m", "published": "3", "status": "not recoverable"},
    ])
    got = paper_counts(rows).set_index("paper")  # no kind column: all printed
    assert got.loc["p-2024", ["reproduced", "consistent", "differs", "not recoverable", "numbers", "derived",
                              "checks"]].tolist() == [1, 0, 1, 0, 2, 0, 3]
    assert got.loc["p-2024", "studies"] == "a, b"
    assert got.loc["q-2025", ["reproduced", "differs", "not recoverable", "numbers"]].tolist() == [0, 0, 1, 1]
    derived = paper_counts(rows.assign(kind=["printed", "printed", "derived", "printed"])).set_index("paper")
    assert derived.loc["p-2024", ["reproduced", "differs", "numbers", "derived", "checks"]].tolist() == [1, 0, 1, 1, 3]


def test_bad_published_table_is_named(outputs):
    p = outputs / "tables" / "s1" / "published_numbers.csv"
    pd.read_csv(p).drop(columns="status").to_csv(p, index=False)
    with pytest.raises(SchemaError, match=r"published_numbers\.csv: table 'published_numbers', column 'status'"):
        collect_published(outputs)


@pytest.mark.parametrize("bad", ["close enough", "not recoverable from public data", "Reproduced"])
def test_unknown_status_is_an_error(outputs, bad):
    # no normalising of free-text statuses: exactly reproduced, consistent, differs or not recoverable
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


# Published numbers that the golden tests check (test_repro, test_published_rules, test_agreement, test_rounds*,
# test_generate*, test_bias): (canonical paper id, value as printed, expected status).
GOLDEN = [
    ("pandalm-2024", "0.85", "reproduced"), ("pandalm-2024", "0.88", "reproduced"),
    ("pandalm-2024", "0.86", "reproduced"), ("pandalm-2024", "105", "reproduced"),
    ("pandalm-2024", "422", "reproduced"), ("pandalm-2024", "472", "reproduced"),
    ("mcqg-srefine-2025", "0.66722", "reproduced"),  # the pooled two-student kappa: an independent check
    ("mcqg-srefine-2025", "87.5%", "consistent"),  # 35/40 from per-arm tables built to match the printed values
    ("mcqg-srefine-2025", "0.538904899", "consistent"), ("mcqg-srefine-2025", "0.9031", "consistent"),
    ("mcqg-srefine-2025", "61.53%", "differs"),  # Table 9 vs Table 19
    ("mcqg-srefine-2025", "42.5%", "differs"),  # 23/40 shown as 57.5%, never 57%
    ("mcqg-srefine-2025", "0.571428", "consistent"),  # 4/7 = 0.5714286 truncated, not rounded: the note says so
    ("longform-medqa-2024", "0.94", "consistent"), ("longform-medqa-2024", "293", "consistent"),
    ("longform-medqa-2024", "317", "consistent"), ("longform-medqa-2024", "337", "consistent"),
    ("medqade-2026", "0.766", "consistent"), ("medqade-2026", "36", "consistent"),
    ("medqade-2026", "256", "consistent"), ("medqade-2026", "0.709", "not recoverable"),
    ("medqade-2026", "-0.016", "consistent"),  # interval arithmetic on the rounded printed kappas
    ("grounded-synth-2025", "0.9066", "consistent"), ("grounded-synth-2025", "0.86", "not recoverable"),
    ("grounded-synth-2025", "0.91", "not recoverable"),
    ("automedeval-2025", "0.5274", "consistent"), ("automedeval-2025", "44.61", "differs"),
    ("automedeval-2025", "52.21", "differs"),
]


def test_report_lists_every_published_number_of_the_golden_tests(tmp_path):
    """Built from the committed study outputs; `make figures` regenerates them."""
    rep = build_report(outdir=tmp_path)
    pub = rep.published
    md = rep.md_path.read_text()
    html = rep.html_path.read_text()
    for paper, value, status in GOLDEN:
        rows = pub[(pub["paper"] == paper) & (pub["published"] == value)]
        assert len(rows), f"{paper} {value} is missing from the report"
        assert status in set(rows["status"]), f"{paper} {value}: status {set(rows['status'])}, expected {status}"
        # each row as the reader sees it: symbol and status, the printed value and ours at its precision
        shown = show_ours(value, rows["ours"].iloc[0]) or "—"
        line = f"| {SYMBOLS[status]} {status} | "
        assert any(ln.startswith(line) and ln.endswith(f"| {value} | {shown} | " + ln.rsplit(" | ", 1)[-1])
                   for ln in md.splitlines()), f"{paper} {value}: no Markdown row '{line}... | {value} | {shown} |'"
        assert f'<td class="num">{value}</td><td class="num">{shown}</td>' in html
        if status in ("reproduced", "consistent") and "." not in value and "%" not in value:  # a count: an integer
            assert shown == value
    assert "| 42.5% | 57.5% |" in md  # 23/40 from exact decimals: 0.575 x 100 is 57.4999... in floating point
    # the per-paper summary comes first and counts every paper of the golden checks
    summary = html[html.index('<section id="summary">'):html.index("</section>")]
    assert html.index('<section id="summary">') < html.index("<details")
    for paper in {g[0] for g in GOLDEN}:
        assert f"<b>{paper}</b>" in summary
    assert set(rep.papers["paper"]) >= {g[0] for g in GOLDEN}
    assert (rep.papers[list(STATUSES)].sum(axis=1) == rep.papers["numbers"]).all()
    # derived numbers (sums, sample sizes) are shown but not counted among the printed numbers
    assert {"longform-medqa-2024", "medqade-2026"} <= set(rep.papers.loc[rep.papers["derived"] > 0, "paper"])
    assert "(derived)" in md and "derived checks" in md.split("## Study")[0]


def test_paper_names_from_the_data_file_are_escaped_in_markdown(outputs):
    """Issue 20 finding 9: report.md printed a paper's short name, citation and link as raw HTML / Markdown."""
    (outputs / "data" / "published").mkdir(parents=True)
    hostile = '<img src=x onerror="alert(1)"> *P* [x](javascript:alert(1))'
    (outputs / "data" / "published" / "p-2024.yaml").write_text(
        f"id: p-2024\nshort: '{hostile}'\ncitation: 'Ann Author <script>alert(1)</script>. A *paper*. Venue 2024.'\n"
        "url: 'https://example.org/p><script>alert(2)</script>'\n"
        "numbers:\n  - {id: k, source: Table 1, quantity: kappa, value: '0.85'}\n")
    rep = build_report(outputs)
    md, page = rep.md_path.read_text(), rep.html_path.read_text()
    for raw in ("<img src=x", "<script>alert", "*P*", "[x](", "*paper*", "org/p><"):
        assert raw not in md, raw
        assert raw not in page or raw in ("*P*", "[x](", "*paper*"), raw  # HTML needs no Markdown escapes
    assert "&lt;img src=x onerror=" in md and "&lt;script&gt;alert(1)&lt;/script&gt;" in md
