"""Issue 20, findings 8 and 9: a user's strings reach Markdown, HTML, CSV, LaTeX and prompts verbatim and inert.

The apps' Markdown builders get the hostile strings a user's file can hold; no tag, event handler, code span,
emphasis or link survives, and the text still reads the same once rendered. CSV cells that a spreadsheet would
run as a formula are prefixed with ``'`` (text only, never numbers); LaTeX cells hold no line break."""

from __future__ import annotations

import html
import re

import markdown
import numpy as np
import pandas as pd
import pytest

from medeval_kit import apps
from medeval_kit.tables import escape_markdown, save_table, spreadsheet_safe

IFRAME = "a` <iframe onload=alert(1)></iframe> `b"
SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=1">'
MD_TRICKS = "*em* _u_ [link](javascript:alert(1)) | pipe `code` {: onclick=x } $x$ ~~s~~ \\ it's \"q\""
HOSTILE = [IFRAME, SCRIPT, IMG, "<failed>", MD_TRICKS, "# heading", "> quote", "1. item", "- item",
           "line 1\nline 2\r\nline 3", "&amp; &lt;"]


def _render(md: str) -> str:
    """Markdown -> HTML as marimo renders it (Python-Markdown, with tables and attribute lists)."""
    return markdown.markdown(md, extensions=["tables", "attr_list", "md_in_html"])


def _no_markup(rendered: str) -> None:
    """No element or attribute came from the data: only <p>, <br>, <code>, <b>, <strong> and table tags."""
    tags = set(re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)", rendered))
    assert tags <= {"p", "br", "code", "b", "strong", "table", "thead", "tbody", "tr", "th", "td", "span"}, tags
    assert not re.search(r"<[^>]*\s(on\w+|href|src)=", rendered), rendered


def _text(rendered: str) -> str:
    """The text a reader sees: tags dropped, entities decoded, <br> as a newline."""
    return html.unescape(re.sub(r"<[^>]+>", "", rendered.replace("<br />", "\n").replace("<br>", "\n")))


@pytest.mark.parametrize("value", HOSTILE)
def test_escape_markdown_renders_the_text_literally(value):
    rendered = _render(escape_markdown(value))
    _no_markup(rendered)
    want = value.replace("\r\n", "\n")
    assert _text(rendered).strip() == want.strip()


def test_escape_markdown_is_inert_in_html_attributes_and_leaves_plain_text_alone():
    s = escape_markdown("x\" onmouseover='alert(1)")
    assert '"' not in s and "'" not in s
    assert escape_markdown("pandalm-2024 cohen_kappa 0.85 (n = 12)") == "pandalm-2024 cohen_kappa 0.85 (n = 12)"
    assert escape_markdown(None) == "" and escape_markdown(3) == "3"
    assert escape_markdown("a\nb", newline=" ") == "a b"


def test_table_note_keeps_a_column_name_inside_its_code_element():
    note = apps.table_note(pd.DataFrame({IFRAME: [1], "ok": [2]}), SCRIPT)
    rendered = _render(note)
    _no_markup(rendered)
    assert IFRAME in _text(rendered) and SCRIPT in _text(rendered)
    # the whole column name sits in one <code> element: the backticks in it do not close it
    assert [html.unescape(c) for c in re.findall(r"<code>(.*?)</code>", rendered)] == [IFRAME, "ok"]


def _hostile_judgments() -> pd.DataFrame:
    rows = []
    for i in range(3):
        for order, verdict in (("AB", "A"), ("BA", "B" if i else "A")):
            rows.append({"pair_id": f"{IMG}{i}", "judge_model": SCRIPT, "criterion": MD_TRICKS, "order": order,
                         "winner": "" if (i, order) == (0, "AB") else verdict, "question": IFRAME,
                         "response_a": "# A\n<b>bold</b>", "response_b": "- B"})
    return pd.DataFrame(rows)


def test_judgments_markdown_builders_escape_names_and_show_a_failed_verdict():
    t = _hostile_judgments()
    j = apps.judgments_from_table(t, apps.guess_mapping(t.columns, "judgments"), source=IFRAME)
    judge, criterion = j["judge"].iloc[0], j["criterion"].iloc[0]
    flips = apps.flip_table(j, judge=judge, criterion=criterion)
    bias = apps.position_summary(j, judge=judge, criterion=criterion, n_boot=50).set_index("metric")
    summary = _render(apps.flip_summary_markdown(flips, bias, judge=judge, criterion=criterion, n_boot=50,
                                                 n_shown=len(flips)))
    _no_markup(summary)
    assert f"{SCRIPT} / {MD_TRICKS}" in _text(summary)
    row = flips.iloc[0]
    assert row["verdict_AB"] == "<failed>"
    pair = _render(apps.pair_markdown(row))
    _no_markup(pair)
    assert "AB order said <failed>, BA order said A." in _text(pair)
    assert IFRAME in _text(pair) and f"{IMG}0" in _text(pair)
    for side, want in (("a", "# A\n<b>bold</b>"), ("b", "- B")):
        text = _render(apps.response_markdown(row, side))
        _no_markup(text)
        assert _text(text).strip().endswith(want)


def test_label_notes_and_shown_text_are_escaped():
    for v in HOSTILE:
        _no_markup(_render(apps.shown_text(v)))
    note = _render(apps.notes_markdown([f"label {SCRIPT} read as missing", f"label {IMG}"]))
    _no_markup(note)
    assert SCRIPT in _text(note) and IMG in _text(note)


# --------------------------------------------------------------------------- CSV formulas (finding 9)
FORMULAS = ["=1+1", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tx", "\rx", "=HYPERLINK(\"http://x\")"]


def test_csv_text_cells_that_start_a_formula_are_prefixed(tmp_path):
    cells = FORMULAS + ["-0.41", "+3", "-1e-05", "ok", "a=b"]
    df = pd.DataFrame({"text": [c.replace("\r", "\t") for c in cells], "x": [-0.41] * 12, "k": [-3] * 12})
    save_table(df, "t", tmp_path)
    back = pd.read_csv(tmp_path / "t.csv", dtype=str, keep_default_na=False)
    want = ["'" + v for v in df["text"][:7]] + ["-0.41", "+3", "-1e-05", "ok", "a=b"]
    assert back["text"].tolist() == want
    assert back["x"].tolist() == ["-0.41"] * 12 and back["k"].tolist() == ["-3"] * 12
    # a carriage return opening a cell is prefixed too (pandas writes a bare CR unquoted: read the bytes)
    save_table(pd.DataFrame({"text": ["\rx"]}), "cr", tmp_path)
    assert (tmp_path / "cr.csv").read_bytes() == b"text\n'\rx\n"
    # a header that starts a formula is text too
    save_table(pd.DataFrame({"=cmd": ["a"], "-n": [-1]}), "h", tmp_path)
    assert (tmp_path / "h.csv").read_text().splitlines()[0] == "'=cmd,'-n"


def test_spreadsheet_safe_leaves_numbers_and_plain_text():
    assert spreadsheet_safe("=1") == "'=1" and spreadsheet_safe("-x") == "'-x"
    assert spreadsheet_safe("-0.41") == "-0.41" and spreadsheet_safe("+1e3") == "+1e3"
    assert spreadsheet_safe("-inf") == "-inf" and spreadsheet_safe("plain") == "plain"
    assert spreadsheet_safe("+16.29%") == "+16.29%" and spreadsheet_safe("-4%x") == "'-4%x"
    assert spreadsheet_safe(-0.41) == -0.41 and spreadsheet_safe("") == ""


def test_markdown_and_latex_are_not_prefixed(tmp_path):
    p = save_table(pd.DataFrame({"text": ["=1+1"]}), "t", tmp_path)
    assert "'=1+1" not in p["md"].read_text() and "'=1+1" not in p["tex"].read_text()


# --------------------------------------------------------------------------- LaTeX (finding 9)
def test_latex_cells_hold_no_line_break_and_specials_are_escaped(tmp_path):
    df = pd.DataFrame({"reply line\n\nnext": ["para 1\n\npara 2", "a\r\nb", "& % $ # _ { } ~ ^ \\"],
                       "n": [1, 2, 3]})
    tex = save_table(df, "t", tmp_path)["tex"].read_text()
    body = tex[tex.index("\\midrule"):tex.index("\\bottomrule")]
    tabular = tex[tex.index("\\begin{tabular}"):tex.index("\\end{tabular}")]
    assert "\n\n" not in tabular  # a blank line ends the tabular's paragraph: LaTeX error
    assert "para 1 para 2" in body and "a b" in body and "reply line next" in tex
    for raw, escaped in (("&", "\\&"), ("%", "\\%"), ("$", "\\$"), ("#", "\\#"), ("_", "\\_"), ("{", "\\{"),
                         ("}", "\\}"), ("~", "\\textasciitilde"), ("^", "\\textasciicircum"),
                         ("\\ ", "\\textbackslash")):
        assert escaped in body, raw
    assert len([ln for ln in body.splitlines() if ln.strip().endswith("\\\\")]) == 3  # one line per row


def test_numbers_unchanged_in_every_format(tmp_path):
    df = pd.DataFrame({"x": [-0.41, np.nan, 2.0], "s": ["a", "b", "c"]})
    p = save_table(df, "t", tmp_path)
    assert p["csv"].read_text() == "x,s\n-0.41,a\n,b\n2,c\n"
