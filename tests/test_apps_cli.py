"""marimo apps on a path: ``--data FILE`` and a column per role after ``--`` (``mo.cli_args()``). The arguments'
parsing and the file's reading and mapping (plain pandas, shared with the upload), then each app exported to
HTML and run as a script on a small file with the user's own column names."""

import html
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from marimo_helpers import serve_app

from medeval_kit import apps
from medeval_kit.errors import ParameterError

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "MARIMO_SKIP_UPDATE_CHECK": "1"}


# --------------------------------------------------------------------------- small files under the user's names
def _labels() -> pd.DataFrame:
    """Eight cases labelled by two physicians and an LLM with rare names, columns case / doctor / verdict."""
    a = ["A", "B", "A", "tie", "B", "A", "B", "A"]
    b = ["A", "B", "B", "tie", "B", "A", "A", "A"]
    c = ["A", "A", "B", "B", "B", "A", "B", "A"]
    rows = [{"case": f"c{i}", "doctor": who, "verdict": lab, "kind": kind}
            for who, kind, labs in [("Dr_Zyxwv", "human", a), ("Dr_Qopmn", "human", b), ("llm_Kxq", "llm", c)]
            for i, lab in enumerate(labs)]
    return pd.DataFrame(rows)


def _judgments() -> pd.DataFrame:
    """Five pairs judged in both orders by 'judge_Wqxz', slot verdicts; pairs p3, p4 flip."""
    rows = []
    for i in range(5):
        ab, ba = ("first", "second") if i < 3 else ("first", "first")
        rows += [{"pair": f"p{i}", "who_judged": "judge_Wqxz", "shown": "AB", "pick": ab},
                 {"pair": f"p{i}", "who_judged": "judge_Wqxz", "shown": "BA", "pick": ba}]
    return pd.DataFrame(rows)


def _rounds() -> pd.DataFrame:
    """Two items ('draft_Zqv1', 'draft_Zqv2') over 2 and 3 rounds, two parts each, 'x/20' scores."""
    rows = []
    for item, scores in {"draft_Zqv1": [(12, 15), (18, 19)], "draft_Zqv2": [(10, 10), (14, 13), (20, 19)]}.items():
        for k, (q, a) in enumerate(scores, start=1):
            rows += [{"qid": item, "pass_no": k, "part": "question", "pts": f"{q}/20"},
                     {"qid": item, "pass_no": k, "part": "answer", "pts": f"{a}/20"}]
    return pd.DataFrame(rows)


CASES = {  # app -> (table, options after --data, a value only the user's file has)
    "agreement": (_labels, ["--item", "case", "--rater", "doctor", "--label", "verdict", "--rater-kind", "kind"],
                  "Dr_Zyxwv"),
    "judgments": (_judgments, ["--item", "pair", "--judge", "who_judged", "--order", "shown", "--verdict", "pick"],
                  "judge_Wqxz"),
    "rounds": (_rounds, ["--item", "qid", "--round", "pass_no", "--component", "part", "--score", "pts"],
               "draft_Zqv2"),
}


def _args(options: list[str], data: str) -> dict:
    """What ``mo.cli_args()`` holds for ``-- --data <data> <options>``."""
    from marimo._cli.parse_args import parse_args

    return dict(parse_args(["--data", data, *options]))


# --------------------------------------------------------------------------- arguments
def test_data_request_reads_roles_with_dashes_and_empty_values():
    req = apps.data_request("agreement", {"data": "x.csv", "item": "case", "rater-kind": "kind", "criterion": ""})
    assert req.path == "x.csv" and req.mapping == {"item": "case", "rater_kind": "kind", "criterion": None}
    assert apps.data_request("agreement", {}) is None
    req = apps.data_request("judgments", _args(["--failed", "ERR", "--failed", "n/a"], "j.csv"))
    assert req.options == {"failed": ["ERR", "n/a"]}
    # marimo turns `--label 1` into an int; a column name is text
    assert apps.data_request("agreement", _args(["--label", "1"], "x.csv")).mapping == {"label": "1"}


@pytest.mark.parametrize("args, message", [
    ({"data": "x.csv", "rator": "who"}, r"unknown option\(s\) \['--rator'\]; the agreement app takes --data FILE"),
    ({"data": "x.csv", "item": ["a", "b"]}, r"--item is given 2 times"),
    ({"item": "case"}, r"--data needs the path of your file"),
    ({"data": ""}, r"--data needs the path"),
])
def test_bad_arguments_are_named(args, message):
    with pytest.raises(ParameterError, match=message):
        apps.data_request("agreement", args)
    d = apps.app_data("agreement", [], "pandalm", args)
    assert d.table is None and re.search(message, d.problem)


# --------------------------------------------------------------------------- (file, mapping) -> the app's tables
def test_user_data_reads_the_file_like_an_upload_and_maps_the_given_columns(tmp_path, monkeypatch):
    table, options, _ = CASES["agreement"]
    (tmp_path / "mine.csv").write_text(table().to_csv(index=False))
    monkeypatch.chdir(tmp_path)  # a relative --data is relative to the working directory
    d = apps.app_data("agreement", [], "pandalm", _args(options, "mine.csv"))
    assert d.problem == "" and d.source == "mine.csv"
    assert d.mapping == {"item": "case", "rater": "doctor", "label": "verdict", "rater_kind": "kind",
                         "criterion": None}

    class Upload:  # the same file through the upload widget
        name, contents = "mine.csv", (tmp_path / "mine.csv").read_bytes()

    up = apps.app_data("agreement", [Upload()], "pandalm")
    pd.testing.assert_frame_equal(d.table, up.table)
    ann, humans, _ = apps.annotations_from_table(d.table, d.mapping, source=d.source)
    assert humans == ["Dr_Qopmn", "Dr_Zyxwv"] and set(ann["rater"]) == {"Dr_Qopmn", "Dr_Zyxwv", "llm_Kxq"}
    # an upload wins over --data
    assert apps.app_data("agreement", [Upload()], "pandalm", {"data": "gone.csv"}).problem == ""


@pytest.mark.parametrize("app", sorted(CASES))
def test_each_apps_tables_from_a_path(app, tmp_path):
    table, options, marker = CASES[app]
    path = tmp_path / f"{app}.csv"
    path.write_text(table().to_csv(index=False))
    d = apps.app_data(app, [], None, _args(options, str(path)))
    assert d.problem == ""
    tidy = {"agreement": lambda: apps.annotations_from_table(d.table, d.mapping, source=d.source)[0],
            "judgments": lambda: apps.judgments_from_table(d.table, d.mapping, source=d.source),
            "rounds": lambda: apps.rounds_from_table(d.table, d.mapping, source=d.source)}[app]()
    assert marker in set(tidy["rater" if app == "agreement" else "judge" if app == "judgments" else "item"])
    if app == "judgments":
        assert int(apps.flip_table(tidy, judge=marker, criterion="overall")["flip"].sum()) == 2


def test_missing_file_unknown_column_and_missing_role_are_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _labels().to_csv(tmp_path / "mine.csv", index=False)
    d = apps.app_data("agreement", [], None, {"data": "nope.csv", "item": "case"})
    assert d.table is None and d.problem.startswith("nope.csv: file not found")
    assert str(tmp_path / "nope.csv") in d.problem
    d = apps.app_data("agreement", [], None, {"data": "mine.csv", "rater": "doctr"})
    assert d.problem.startswith("mine.csv: column 'doctr' (given as --rater) is not in the file")
    assert "'doctor'" in d.problem
    d = apps.app_data("agreement", [], None, {"data": "mine.csv", "rater": "", "item": "case"})
    assert "no column was given or recognised for ['rater']; pass --rater COLUMN" in d.problem


def test_mapping_markdown_states_the_file_and_escapes_the_users_names(tmp_path):
    hostile = "<img src=x onerror=alert(1)>`*x*`"
    pd.DataFrame({hostile: ["c1", "c2"], "annotator": ["a", "b"], "verdict": ["A", "B"]}).to_csv(
        tmp_path / "m.csv", index=False)
    d = apps.app_data("agreement", [], None, {"data": str(tmp_path / "m.csv"), "item": hostile})
    md = apps.mapping_markdown(d)
    assert str(tmp_path / "m.csv") in md and "<img" not in md and "`" not in md
    assert "item &larr; <code>&lt;img" in md and "rater &larr; <code>annotator</code> (guessed)" in md
    assert apps.mapping_markdown(apps.app_data("agreement", [], "pandalm")) == ""


# --------------------------------------------------------------------------- the apps on a path
def _export(app: str, args: list[str], out: Path, cwd: Path) -> str:
    """``marimo export html`` of the app with ``-- args``; the HTML's text with its JSON and HTML escapes undone
    (twice: a callout's HTML sits in an attribute)."""
    proc = subprocess.run([sys.executable, "-m", "marimo", "export", "html", str(ROOT / "notebooks" / f"{app}_app.py"),
                           "-o", str(out), "--", *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=ENV)
    assert out.exists(), proc.stderr[-2000:]
    text = re.sub(r"\\u([0-9A-Fa-f]{4})", lambda m: chr(int(m.group(1), 16)), out.read_text(encoding="utf-8"))
    return html.unescape(html.unescape(text))


@pytest.mark.slow
@pytest.mark.parametrize("app", sorted(CASES))
def test_exported_app_shows_the_users_file(app, tmp_path):
    table, options, marker = CASES[app]
    table().to_csv(tmp_path / "mine.csv", index=False)
    page = _export(app, ["--data", "mine.csv", *options], tmp_path / "out.html", tmp_path)
    assert "<b id='data-source'>mine.csv</b>" in page and "bundled dataset '" not in page
    assert f"<b id='cli-data'>{tmp_path / 'mine.csv'}</b>" in page and marker in page
    assert "medeval-problem" not in page and "Traceback" not in page
    if app == "agreement":
        assert "annotator1" not in page  # the bundled PandaLM raters


@pytest.mark.slow
def test_exported_app_names_a_missing_file_and_a_wrong_column(tmp_path):
    _labels().to_csv(tmp_path / "mine.csv", index=False)
    page = _export("agreement", ["--data", "nope.csv", "--item", "case"], tmp_path / "a.html", tmp_path)
    assert "class='medeval-problem'" in page and "nope.csv: file not found" in page and "Traceback" not in page
    page = _export("rounds", ["--data", "mine.csv", "--round", "stage"], tmp_path / "b.html", tmp_path)
    assert "mine.csv: column 'stage' (given as --round) is not in the file" in page and "Traceback" not in page


@pytest.mark.slow
def test_app_as_a_script_on_a_path(tmp_path, monkeypatch, capsys):
    table, options, marker = CASES["agreement"]
    table().to_csv(tmp_path / "mine.csv", index=False)
    app = str(ROOT / "notebooks" / "agreement_app.py")
    # the good file: run as Python runs the script (argv, __main__, cwd), in this process
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [app, "--data", "mine.csv", *options])
    monkeypatch.syspath_prepend(str(Path(app).parent))
    try:
        runpy.run_path(app, run_name="__main__")
    except SystemExit as exc:  # the exit status a process would have had
        assert exc.code in (None, 0), f"exit status {exc.code}: {capsys.readouterr().err[-2000:]}"
    out = capsys.readouterr().out
    assert "data: mine.csv" in out and marker in out, out[-2000:]
    # a wrong column, in a real process: what reaches its stderr is one message, never a traceback
    proc = subprocess.run([sys.executable, app, "--data", "mine.csv", "--label", "grade"], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path, env=ENV)
    assert "mine.csv: column 'grade' (given as --label) is not in the file" in proc.stderr
    assert "Traceback" not in proc.stderr and "data:" not in proc.stdout


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(not (shutil.which("chromium") or shutil.which("chromium-browser")), reason="needs Debian chromium")
def test_marimo_run_on_a_path_shows_the_users_file_in_a_browser(tmp_path):
    from playwright.sync_api import sync_playwright

    table, options, marker = CASES["judgments"]
    table().to_csv(tmp_path / "mine.csv", index=False)
    with serve_app(ROOT / "notebooks" / "judgments_app.py", "--data", "mine.csv", *options, cwd=tmp_path) as url, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium") or shutil.which("chromium-browser"),
                                    args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        page.goto(url)
        page.locator("#n-flips").wait_for(timeout=120_000)
        assert page.locator("#data-source").inner_text() == "mine.csv"
        assert page.locator("#cli-data").inner_text() == str(tmp_path / "mine.csv")
        assert page.locator("#n-flips").inner_text() == "2" and marker in page.inner_text("body")
        browser.close()


def test_user_data_is_a_deprecated_alias_of_app_data():
    with pytest.warns(DeprecationWarning, match="apps.app_data"):
        d = apps.user_data("agreement", [], "pandalm")
    assert d.problem == "" and d.table is not None
