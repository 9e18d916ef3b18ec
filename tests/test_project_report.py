"""Issue 21: `medeval report` in a team's project builds its own self-contained report.html from runs/*/*/:
headline table, embedded figures, parameters with the data hash, LLM call counts, judge verdicts; every run
string escaped; nothing loaded from outside the file. The toolkit's checkout keeps its reproduction report."""

import hashlib
import json
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from medeval_kit import paths
from medeval_kit.cli import main
from medeval_kit.cli import project_report as pr

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = '<script>alert("x")</script>'
# a 1x1 PNG
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")


class _Refs(HTMLParser):
    """Every src/href attribute and every element name of a page."""

    def __init__(self):
        super().__init__()
        self.refs, self.tags = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.refs += [(k, v) for k, v in attrs if k in ("src", "href", "srcset", "action", "poster")]


def _run(project: Path, name: str = "mine", hostile: bool = True) -> Path:
    """A finished --notebook run folder as the runner writes it (papermill's parameters in the notebook)."""
    data = project / "data" / "mine.csv"
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text("item,rater,label\n1,a,yes\n")
    run = project / "runs" / "judge_validation" / name
    (run / "tables").mkdir(parents=True)
    (run / "figures").mkdir()
    params = {"annotations_path": str(data), "study": "judge_validation", "n_boot": 50,
              "humans": HOSTILE if hostile else "a", "tables_dir": str(run / "tables")}
    nb = {"cells": [], "nbformat": 4, "nbformat_minor": 5,
          "metadata": {"papermill": {"parameters": params, "input_path": "/x/judge_validation.ipynb"},
                       "medeval": {"headline": ["_designs"]}}}
    (run / f"{name}.ipynb").write_text(json.dumps(nb))
    pd.DataFrame({"rater": ["a", HOSTILE], "n": [1, 2]}).to_csv(run / "tables" / "your_data_label_counts.csv",
                                                                 index=False)
    pd.DataFrame({"role": ["humans", "judge"], "rater": ["humans (3)", f"gpt{HOSTILE}"], "design": ["loo", "loo"],
                  "metric": ["cohen_kappa"] * 2, "estimate": [0.9, 0.5], "delta": [None, -0.4],
                  "noninferior": [None, False]}).to_csv(run / "tables" / "your_data_designs.csv", index=False)
    (run / "figures" / "your_data_delta_forest.png").write_bytes(PNG)
    (run / "llm_calls.jsonl").write_text(json.dumps({"model": "m", "n_requests": 7, "n_failed": 2,
                                                     "n_parse_failed": 1, "failed_reasons": {"timeout": 2},
                                                     "cost_usd": 0.25}) + "\n")
    return run


@pytest.fixture()
def project(tmp_path, monkeypatch):
    proj = (tmp_path / "proj").resolve()
    proj.mkdir()
    (proj / paths.MARKER).write_text("")
    monkeypatch.delenv(paths.ENV_VAR, raising=False)
    monkeypatch.chdir(proj)
    return proj


def test_report_from_a_run_folder(project, capsys):
    run = _run(project)
    assert main(["report"]) == 0
    assert "project report" in capsys.readouterr().out
    page = (project / "report" / "report.html").read_text()
    assert "judge_validation/mine" in page and "judge_validation.ipynb" in page
    # headline: the marked table (designs), not the first written one
    assert "Headline table: your_data_designs" in page
    assert "cohen_kappa" in page and ">0.5<" in page
    # parameters and the sha256 of the data file
    assert "annotations_path" in page and "n_boot" in page and ">50<" in page
    assert hashlib.sha256((project / "data" / "mine.csv").read_bytes()).hexdigest() in page
    assert str(run / "tables") not in page  # output folders are not parameters of the analysis
    # LLM calls and judge verdicts
    assert "7 requests, 2 failed, 1 unparsed" in page and "timeout x2" in page
    assert "Judge verdicts by design" in page and "humans (3)" not in page.split("Judge verdicts")[1]
    # the figure embedded
    assert 'src="data:image/png;base64,' in page


def test_run_strings_are_escaped_and_the_page_stands_alone(project):
    _run(project)
    path = pr.build_project_report(project)
    page = path.read_text()
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    refs = _Refs()
    refs.feed(page)
    assert refs.refs and all(k == "src" and v.startswith("data:image/png;base64,") for k, v in refs.refs), refs.refs
    assert not {"script", "link", "iframe", "object", "embed"} & set(refs.tags)


def test_headline_defaults_to_the_first_table_written(project):
    run = _run(project, hostile=False)
    nb = json.loads((run / "mine.ipynb").read_text())
    del nb["metadata"]["medeval"]
    (run / "mine.ipynb").write_text(json.dumps(nb))
    first, second = run / "tables" / "your_data_label_counts.csv", run / "tables" / "your_data_designs.csv"
    import os

    os.utime(first, ns=(1, 1))
    os.utime(second, ns=(2, 2))
    (rec,) = pr.collect_runs(project)
    assert rec.headline == first and rec.id == "judge_validation/mine"


def test_missing_data_file_and_no_runs(project):
    page = pr.build_project_report(project).read_text()
    assert "No runs yet" in page
    run = _run(project, hostile=False)
    (project / "data" / "mine.csv").unlink()
    (rec,) = pr.collect_runs(project)
    assert rec.hashes == {"annotations_path": "(file not found)"} and rec.folder == run


def test_the_checkout_keeps_its_reproduction_report(tmp_path):
    assert pr.is_toolkit_checkout(ROOT)
    assert not pr.is_toolkit_checkout(tmp_path)
    # --project forces the project report, even for the checkout (written elsewhere: the committed report stays)
    assert main(["report", "--root", str(ROOT), "--project", "--out", str(tmp_path / "r")]) == 0
    page = (tmp_path / "r" / "report.html").read_text()
    assert "evaluation report" in page and "reproduction report" not in page
