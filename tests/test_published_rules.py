"""Issue 23: four statuses with one rule each, every status earned, every cause stated, derived numbers
not counted as printed, and shares of integers shown exactly."""

from __future__ import annotations

import ast
import math
import re
import subprocess
from html import escape as html_escape
from pathlib import Path

import pandas as pd
import pytest

from medeval_kit import repro
from medeval_kit.cli.report import SYMBOLS, build_report, collect_published, headline, paper_counts, show_ours
from medeval_kit.errors import DataFileError, SchemaError
from medeval_kit.repro.published import (
    CAUSE_UNKNOWN,
    STATUS_RULES,
    STATUSES,
    Published,
    cause_problem,
    decide,
    matches,
    parse_printed,
    rounds_to,
    truncates_to,
    validate_paper_file,
)

ROOT = Path(__file__).resolve().parents[1]
PAPER_MODULES = sorted((ROOT / "medeval_kit" / "repro" / "papers").glob("*_[12][09][0-9][0-9].py"))


def check(value, ours, **kw) -> Published:
    return Published.check("p-2024", "x", "Table 1", "q", value, ours, **kw)


# --------------------------------------------------------------------------- the rule, one per status


def test_four_statuses_with_one_rule_each_held_as_data():
    assert STATUSES == ("reproduced", "consistent", "differs", "not recoverable")
    assert tuple(STATUS_RULES) == STATUSES
    assert "rounds or truncates" in STATUS_RULES["reproduced"] and "independently" in STATUS_RULES["reproduced"]
    assert "paper's own other numbers" in STATUS_RULES["consistent"]
    assert "cause unknown: tried" in STATUS_RULES["differs"]
    assert "not public" in STATUS_RULES["not recoverable"]


@pytest.mark.parametrize("printed, ours, how", [
    ("0.85", 0.852, "rounds"), ("0.85", 0.846, "rounds"), ("0.85", 0.855, "rounds"),  # a tie counts
    ("0.571428", 4 / 7, "truncates"),  # 0.5714286: cut, not rounded
    ("0.505409582", 327 / 647, "truncates"),  # 0.50540958269...
    ("-0.0636", -0.06368, "truncates"),  # towards zero
    ("0.85", 0.8599, "truncates"),
    ("0.85", 0.844, ""), ("0.85", 0.8601, ""), ("0.85", 0.8551 - 0.01 - 0.0002, ""),
    ("105", 105.0, "rounds"), ("105", 105.4, ""), ("105", 104.6, ""),  # a count is exact: never truncated
    ("57.5%", 23 / 40, "rounds"), ("57%", 23 / 40, "rounds"), ("58%", 23 / 40, "rounds"),  # a tie either way
    ("57.4%", 23 / 40, ""),
])
def test_reproduced_rounds_or_truncates_and_says_which(printed, ours, how):
    assert matches(printed, ours) == how
    assert rounds_to(printed, ours) == (how == "rounds")
    assert decide(printed, ours) == ("reproduced" if how else "differs")
    if how:
        r = check(printed, ours)
        assert r.status == "reproduced" and r.match == how and r.basis == "independent"
        assert f"ours {how} to {printed}" in r.to_row()["note"] or f"{how} to {printed}" in r.to_row()["note"]
    if how == "truncates":
        assert truncates_to(printed, ours) and "rounded it would be" in check(printed, ours).reason


def test_truncation_is_named_with_the_digits_that_show_it():
    r = check("0.571428", 4 / 7)
    assert r.reason == "ours 0.57142857 truncates to 0.571428 (rounded it would be 0.571429)"
    assert check("0.85", 0.852).reason == "ours rounds to 0.85"


def test_consistent_needs_how_and_says_what_it_was_reached_from():
    with pytest.raises(ValueError, match="needs how"):
        check("0.85", 0.852, basis="consistent")
    r = check("0.85", 0.852, basis="consistent", how="kappa from the printed PA 0.90 and chance 0.33")
    assert r.status == "consistent" and r.basis == "consistent"
    assert r.to_row()["note"].startswith("kappa from the printed PA 0.90 and chance 0.33; ours rounds to 0.85")
    # the paper's own numbers never make a number "reproduced", and a miss is still "differs"
    assert decide("0.85", 0.852, "consistent") == "consistent"
    miss = check("0.85", 0.80, basis="consistent", how="back-solved from Table 2",
                 why="no integer counts of 40 items give a chance agreement that reaches 0.85")
    assert miss.status == "differs"
    with pytest.raises(ValueError, match="rule gives 'consistent'"):
        Published("p-2024", "x", "T", "q", "0.85", 0.852, "reproduced", "r", basis="consistent", how="h")
    with pytest.raises(ValueError, match="needs how"):
        Published("p-2024", "x", "T", "q", "0.85", 0.852, "consistent", "r", basis="consistent")
    with pytest.raises(ValueError, match="unknown basis"):
        check("0.85", 0.852, basis="close enough")


def test_interval_arithmetic_on_rounded_printed_inputs():
    # MedQADE-like: Delta kappa = 0.694 - 0.709, each printed at three decimals (+- 0.0005)
    lo, hi = (0.694 - 0.0005) - (0.709 + 0.0005), (0.694 + 0.0005) - (0.709 - 0.0005)
    r = check("-0.016", (lo, hi), basis="consistent", how="0.694 - 0.709, both printed at three decimals")
    assert r.status == "consistent" and r.interval == (lo, hi)
    assert "the rounded printed inputs allow -0.01600 to -0.01400, which contains -0.016" in r.reason
    assert r.ours == pytest.approx(-0.016)  # the value of the interval nearest the printed one
    # the table can be checked from its published and ours columns alone
    row = r.to_row()
    assert decide(row["published"], row["ours"], "consistent") == row["status"]
    # just outside, but a value of the interval still rounds to the printed value
    near = check("-0.017", (-0.0168, -0.015), basis="consistent", how="h")
    assert near.status == "consistent" and "reaches -0.017 at its printed precision" in near.reason
    # outside: differs, with a cause
    out = check("-0.020", (lo, hi), basis="consistent", how="h",
                why="the printed difference is larger than any the rounded printed kappas allow")
    assert out.status == "differs" and "allow -0.01600 to -0.01400, printed -0.020" in out.reason
    with pytest.raises(ValueError, match="basis='consistent'"):
        check("-0.016", (lo, hi))
    for bad in ((hi, lo), (lo, math.nan), (1.0, 2.0, 3.0)):
        with pytest.raises(ValueError, match="interval"):
            check("-0.016", bad, basis="consistent", how="h")


def test_differs_needs_a_cause_or_cause_unknown_with_what_was_tried():
    d = check("0.85", 0.80, why="the paper's kappa uses 26 items, ours the 40 of Table 19")
    assert d.status == "differs" and d.cause.startswith("the paper's kappa uses 26 items")
    assert d.reason == "ours 0.80, printed 0.85; the paper's kappa uses 26 items, ours the 40 of Table 19"
    assert cause_problem(d.cause) == ""
    # counts alone are not a cause; an unknown cause says what was tried
    assert "not a sentence" in cause_problem("recounted from Table 19: 8/40")
    assert "no cause" in cause_problem("")
    assert cause_problem(f"{CAUSE_UNKNOWN} Kendall tau-b, tau-c, Spearman and Pearson on three codings") == ""
    assert "lists what was tried" in cause_problem("cause unknown")
    for bad in ("cause unknown", "Cause unknown, maybe a typo", "cause unknown: tried"):
        with pytest.raises(ValueError, match="cause unknown: tried|must list what was tried"):
            check("0.85", 0.80, why=bad)


def test_not_recoverable_needs_what_is_missing(tmp_path):
    with pytest.raises(ValueError, match="say what is missing"):
        check("0.85", None)
    r = check("0.85", math.nan, why="the per-item labels of the two judges are not released")
    assert r.status == "not recoverable" and r.cause.startswith("the per-item labels")
    p = tmp_path / "x-2024.yaml"
    p.write_text("id: x-2024\ncitation: A. Author, B. Author. A long enough title of the paper. Venue 2024.\n"
                 "numbers:\n  - {id: a, source: Fig. 8, quantity: d, value: '+6.63%', "
                 "not_recoverable: the per-slot labels are not released}\n")
    row = validate_paper_file(p).check("a").to_row()
    assert row["status"] == "not recoverable" and row["note"].startswith("the per-slot labels are not released")


def test_kind_printed_or_derived_from_the_data_file(tmp_path):
    p = tmp_path / "x-2024.yaml"
    base = ("id: x-2024\ncitation: A. Author, B. Author. A long enough title of the paper. Venue 2024.\nnumbers:\n"
            "  - {id: a, source: Table 1, quantity: kappa, value: '0.85'}\n"
            "  - {id: n, source: Sec. 3, quantity: sum of the batch sizes, value: '3040', kind: derived}\n")
    p.write_text(base)
    paper = validate_paper_file(p)
    assert paper.number("a").kind == "printed" and paper.number("n").kind == "derived"
    rows = repro.to_frame([paper.check("a", 0.852), paper.check("n", float(sum([1520, 1520])))])
    assert list(rows.columns) == ["paper", "source", "quantity", "published", "ours", "status", "kind", "note"]
    assert rows["kind"].tolist() == ["printed", "derived"]
    p.write_text(base.replace("kind: derived", "kind: computed"))
    with pytest.raises(DataFileError, match="kind 'computed' must be one of"):
        validate_paper_file(p)


# --------------------------------------------------------------------------- display: exact shares


def test_a_share_of_integers_shows_exactly():
    # 0.575 * 100 = 57.49999999999999 in floating point; the report computes in decimal
    assert 0.575 * 100 < 57.5
    assert show_ours("35%", 23 / 40) == "57.5%" and show_ours("57.5%", 23 / 40) == "57.5%"
    assert show_ours("42.5%", 0.575) == "57.5%" and show_ours("61.53%", 12 / 26) == "46.15%"
    assert parse_printed("35%").show(23 / 40) == "57.5%"
    r = check("35%", 23 / 40, why="Table 9 divides by its own count of position-consistent items, not by 40")
    assert "ours 57.5%, printed 35%" in r.reason and "57%," not in r.reason
    assert show_ours("0.85", 0.855) == "0.855"  # a tie keeps its digit rather than being rounded either way
    assert show_ours("0.85", 0.8549) == "0.85" and show_ours("0.000", -0.0001) == "0.000"


# --------------------------------------------------------------------------- the report's headline


@pytest.fixture()
def outputs(tmp_path):
    (tmp_path / "tables" / "s1").mkdir(parents=True)
    (tmp_path / "tables" / "s2").mkdir(parents=True)
    rows = [
        ("p-2024", "Table 1", "kappa", "0.85", "0.852", "reproduced", "printed", "ours rounds to 0.85"),
        ("p-2024", "Table 2", "delta kappa", "-0.016", "-0.016", "consistent", "printed",
         "0.694 - 0.709; the rounded printed inputs allow -0.01600 to -0.01400, which contains -0.016"),
        ("p-2024", "Table 9", "share", "35%", "0.575", "differs", "printed",
         "ours 57.5%, printed 35%; Table 9 divides by its own count, not by the 40 items"),
        ("p-2024", "Sec. 3", "batch sum", "3040", "3040", "reproduced", "derived", "ours rounds to 3040"),
        ("q-2025", "Fig. 8", "bias", "+6.63%", "", "not recoverable", "printed", "labels not released"),
    ]
    cols = ["paper", "source", "quantity", "published", "ours", "status", "kind", "note"]
    df = pd.DataFrame(rows, columns=cols)
    df.to_csv(tmp_path / "tables" / "s1" / "published_numbers.csv", index=False)
    df.iloc[[0, 3]].to_csv(tmp_path / "tables" / "s2" / "published_numbers.csv", index=False)  # checked twice
    return tmp_path


def test_derived_rows_are_not_in_the_headline_counts(outputs):
    rep = build_report(outputs)
    counts = paper_counts(rep.published).set_index("paper")
    assert counts.loc["p-2024", ["reproduced", "consistent", "differs", "not recoverable", "numbers", "derived",
                                 "checks"]].tolist() == [1, 1, 1, 0, 3, 1, 6]
    head = headline(rep.published, rep.papers, rep.figures, rep.tables)
    assert head.startswith("4 printed numbers (+1 derived checks) from 2 papers, checked 7 times in 2 studies. "
                           "Printed numbers: ✓ 1 reproduced, ≈ 1 consistent, ≠ 1 differ, ∅ 1 not recoverable. "
                           "Derived checks: ✓ 1 reproduced.")
    md, html = rep.md_path.read_text(), rep.html_path.read_text()
    assert head in md and head in html and head in rep.summary()  # the same headline everywhere
    assert "checked 7 times" in md and "4 printed numbers" in md
    assert "batch sum (derived)" in md and "batch sum (derived)" in html
    assert "57.5%" in md and "57%" not in md.replace("57.5%", "")


def test_the_report_states_the_four_rules_in_words(outputs):
    rep = build_report(outputs)
    md, html = rep.md_path.read_text(), rep.html_path.read_text()
    for status, rule in STATUS_RULES.items():
        assert f"- **{SYMBOLS[status]} {status}**: {rule[:40]}" in md, status
        assert html_escape(rule) in html, status
    assert '<span class="badge consistent">≈ consistent</span>' in html


def test_the_report_checks_consistent_rows_by_their_rule(outputs):
    p = outputs / "tables" / "s1" / "published_numbers.csv"
    df = pd.read_csv(p, dtype=str, keep_default_na=False)
    df.loc[1, "ours"] = "-0.0185"  # no longer reaches -0.016
    df.to_csv(p, index=False)
    with pytest.raises(SchemaError, match="status 'consistent' is not what the rule gives"):
        collect_published(outputs)
    df.loc[1, ["ours", "kind"]] = ["-0.016", "copied"]
    df.to_csv(p, index=False)
    with pytest.raises(SchemaError, match="unknown kind 'copied'"):
        collect_published(outputs)


# --------------------------------------------------------------------------- every row of every paper


@pytest.fixture(scope="module")
def all_rows() -> list[Published]:
    """Every row every study checks, with the bundled inputs the notebooks use, and without inputs."""
    from medeval_kit import bias, rounds
    from medeval_kit.datasets import load_medqg_table19
    from medeval_kit.datasets.medqg_rounds import load_medqg_rounds

    ann = load_medqg_table19().annotations
    est = pd.concat([bias.flip_rate_from_labels(ann), bias.agreement_on_consistent(ann, "expert_x")],
                    ignore_index=True)
    traces = rounds.fill_best_rounds(load_medqg_rounds("all", aspects=True))
    inputs = {"rounds": {"rounds_df": traces}, "position_bias": {"estimates": est}}
    rows = [r for study in repro.STUDIES for r in repro.study_numbers(study, **inputs.get(study, {}))]
    rows += [r for study in ("rounds", "position_bias") for r in repro.study_numbers(study)]
    return rows


def _ids(rows, status):
    return [r for r in rows if r.status == status]


def test_every_row_has_one_of_the_four_statuses(all_rows):
    assert all_rows and {r.status for r in all_rows} <= set(STATUSES)
    assert {r.kind for r in all_rows} <= {"printed", "derived"}
    for r in all_rows:
        row = r.to_row()
        basis = "consistent" if r.status == "consistent" else "independent"
        assert decide(row["published"], None if math.isnan(row["ours"]) else row["ours"], basis) == r.status, r


def test_every_reproduced_row_is_an_independent_computation(all_rows):
    for r in _ids(all_rows, "reproduced"):
        assert r.basis == "independent" and r.match in ("rounds", "truncates"), r
        assert re.search(r"\b(rounds|truncates) to\b", r.reason), r


def _ours_arg(call: ast.Call) -> ast.AST | None:
    """``ours`` of ``paper.check(number_id, ours, ...)`` or ``Published.check(paper, id, source, quantity, value,
    ours, ...)``."""
    for kw in call.keywords:
        if kw.arg == "ours":
            return kw.value
    at = 5 if isinstance(call.func.value, ast.Name) and call.func.value.id == "Published" else 1
    return call.args[at] if len(call.args) > at else None


def _constant(node: ast.AST) -> bool:
    """A literal number (or an interval of literals): a value typed in, not computed."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand)
    if isinstance(node, (ast.Tuple, ast.List)):
        return any(_constant(e) for e in node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("float", "int", "round"):
        return bool(node.args) and _constant(node.args[0])
    return False


@pytest.mark.parametrize("module", PAPER_MODULES, ids=lambda p: p.stem)
def test_no_check_is_given_a_constant_as_ours(module):
    """Ours is a computation (a function of data or of the paper's other numbers), never a typed-in number,
    and never the printed value of the number it is checked against."""
    tree = ast.parse(module.read_text())
    bad = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "check"):
            continue
        ours = _ours_arg(node)
        if ours is None:
            continue
        if _constant(ours):
            bad.append(f"line {node.lineno}: ours is the literal {ast.unparse(ours)}")
        direct = isinstance(node.func.value, ast.Name) and node.func.value.id == "Published"
        nid = ast.dump(node.args[1 if direct else 0]) if len(node.args) > int(direct) else None
        for sub in ast.walk(ours):
            if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "value"
                    and sub.args and ast.dump(sub.args[0]) == nid and len(list(ast.walk(ours))) <= 6):
                bad.append(f"line {node.lineno}: ours is the printed value itself ({ast.unparse(ours)})")
    assert not bad, f"{module.name}: " + "; ".join(bad)


def test_every_differs_row_states_a_cause(all_rows):
    bad = [f"{r.paper}/{r.id}: {cause_problem(r.cause)} (why = {r.cause!r})" for r in _ids(all_rows, "differs")
           if cause_problem(r.cause)]
    assert not bad, "\n".join(sorted(set(bad)))


def test_consistent_rows_say_what_they_were_reached_from(all_rows):
    for r in _ids(all_rows, "consistent"):
        assert r.basis == "consistent" and len(r.how.split()) >= 4, r


def test_not_recoverable_rows_say_what_is_missing(all_rows):
    for r in _ids(all_rows, "not recoverable"):
        assert len(r.cause.split()) >= 3, r


def _our_file_names() -> set[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False).stdout
    names = {Path(p).name for p in out.split()}
    return {n for n in names if "." in n and n not in ("README.md", "LICENSE", "__init__.py")}


FILE_NAME = re.compile(r"[\w*.-]*\w\.(?:csv|tsv|py|ya?ml|ipynb|json|jsonl|md|parquet|txt|xlsx)\b")
JARGON = {
    "an internal data file (SOURCE.md / a YAML data file)": re.compile(r"SOURCE\.md|\.ya?ml\b"),
    "our research notes": re.compile(r"research notes|\bour notes\b|\bthe notes'", re.I),
    "our package": re.compile(r"medeval_kit|\brepro\b"),
    "a residual sum of squares in code terms": re.compile(r"\brss\b", re.I),
    "code words in capitals (JOINT, INconsistent)": re.compile(r"\b(?:IN|UN|NON)[a-z]{3,}|\b(?:JOINT|PAIRS|BEST|ALL|"
                                                               r"NOT|ONLY|AND|OR|MEAN|MAX|MIN)\b"),
    "'dropped' (say what was left out)": re.compile(r"\bdropped\b", re.I),
    "a code identifier (snake_case)": re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b"),
    "code syntax": re.compile(r"`|==|!=|\b(?:np|pd|df)\.|\bNaN\b|\bnan\b"),
}


def _plain_language_problems(note: str, ours: set[str]) -> list[str]:
    out = []
    external = "repository" in note or "github.com" in note
    for name in FILE_NAME.findall(note):
        if name in ours or not external:
            out.append(f"file name {name!r}")
    text = FILE_NAME.sub(" ", re.sub(r"https?://\S+|github\.com/\S+", " ", note))  # cited names checked above
    for what, pattern in JARGON.items():
        m = pattern.search(note if what.startswith("an internal") else text)
        if m:
            out.append(f"{what}: {m.group(0)!r}")
    return out


def test_plain_language_catches_the_issues_examples():
    ours = _our_file_names()
    for note in ("12/26 in Table 19 ('inconsistent' dropped)", "least-squares refit; rss 1.5e-32",
                 "the closest JOINT match of 30 tries", "recounted from table19.csv",
                 "see data/grounded_synth/SOURCE.md", "the printed value equals the INconsistent share",
                 "the research notes' recomputation", "computed by mmlu_pro_aggregations.csv",
                 "the best_question round"):
        assert _plain_language_problems(note, ours), note
    for note in ("ours rounds to 0.85; n = 999; 95% CI [0.823, 0.880]",
                 "the authors' notebook notebooks/llm-as-a-judge.ipynb in their repository lavita-ai/medical-eval-sphere "
                 "prints 94/81/79/72/71", "Kendall tau-b on the codes 0/1/2, with the 'inconsistent' verdicts left out"):
        assert not _plain_language_problems(note, ours), note


def test_notes_are_plain_language(all_rows):
    ours = _our_file_names()
    bad = {f"{r.paper}/{r.id}: {p}" for r in all_rows for p in _plain_language_problems(r.to_row()["note"], ours)}
    assert not bad, "\n".join(sorted(bad))


def test_no_number_compares_with_our_own_notes():
    """A published value is one the paper prints, never one from our research notes or a data file's SOURCE.md."""
    for pid in repro.paper_ids():
        for n in repro.load_paper(pid).numbers.values():
            assert not n.id.startswith("notes."), (pid, n.id)
            assert not re.search(r"notes|SOURCE\.md|research", n.source, re.I), (pid, n.id, n.source)
