"""The README is a front page that stays true.

* its tour runs as written and prints what the README says it prints;
* it is at most 150 lines and names the two development commands (`make figures`, `make test`);
* every count it quotes that changes with the project (notebook runs, checks, printed numbers, papers) is
  the real one, computed here from the study files and the committed report, and it quotes at least one;
* every relative link in README.md and in the documentation pages points to a file that exists (the
  generated reference pages, `docs/reference/cli.md` and `docs/reference/api/*.md`, excepted).
"""

import contextlib
import io
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
REPORT = ROOT / "report" / "report.md"
MAX_LINES = 150

# The documentation pages this test owns and checks (the site's other pages are generated or written elsewhere).
DOC_PAGES = [
    "docs/index.md",
    "docs/getting-started.md",
    "docs/your-data.md",
    "docs/glossary.md",
    "docs/guide/judge-vs-humans.md",
    "docs/guide/agreement.md",
    "docs/guide/bias-and-calibration.md",
    "docs/guide/rankings.md",
    "docs/guide/item-analysis.md",
    "docs/guide/generation.md",
    "docs/guide/llm-client.md",
    "docs/guide/studies-and-notebooks.md",
    "docs/guide/marimo-apps.md",
    "docs/guide/reproducing-papers.md",
]


def _readme() -> str:
    return README.read_text(encoding="utf-8")


# --------------------------------------------------------------------------- the tour


def test_readme_tour_runs(tmp_path, monkeypatch):
    text = _readme()
    tour = text[text.index("## A ten-line tour"):]
    code = re.search(r"```python\n(.*?)```", tour, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    first = out.getvalue().splitlines()[0]
    assert first in text, f"README shows a different first line than the tour prints: {first}"
    assert (tmp_path / "runs" / "tour" / "forest.pdf").exists()
    assert (tmp_path / "runs" / "tour" / "judges_vs_humans.tex").exists()
    assert "first_slot_rate" in out.getvalue()


# --------------------------------------------------------------------------- a front page


def test_readme_is_a_front_page():
    lines = _readme().splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; the front page keeps to {MAX_LINES}"


def test_readme_names_the_two_development_commands():
    text = _readme()
    assert "make test" in text, "CI runs `make test`: the README must quote it literally"
    assert "make figures" in text


# --------------------------------------------------------------------------- counts that change with the project


def _notebook_runs() -> int:
    """The notebook runs `make figures` (`medeval run --publish`, every study) executes, via the study loader."""
    from medeval_kit.cli.studies import load_studies

    return sum(len(study.runs) for study in load_studies(ROOT / "studies").values())


_HEADLINE = re.compile(
    r"(?P<printed>\d+) printed numbers \(\+(?P<derived>\d+) derived checks\) from (?P<papers>\d+) papers, "
    r"checked (?P<checks>\d+) times"
)


def _report_headline() -> dict[str, int]:
    """The committed reproduction report's headline counts (printed numbers, papers, checks)."""
    match = _HEADLINE.search(REPORT.read_text(encoding="utf-8"))
    assert match, f"{REPORT.relative_to(ROOT)} has no headline '<n> printed numbers ... checked <n> times'"
    return {k: int(v) for k, v in match.groupdict().items()}


# phrase in the README -> the real value. Each pattern captures the number it quotes.
COUNTS = {
    "notebook runs": (r"\b(\d[\d,]*) notebook runs\b", _notebook_runs),
    "checks": (r"\b(\d[\d,]*) checks\b", lambda: _report_headline()["checks"]),
    "printed numbers": (r"\b(\d[\d,]*) printed numbers\b", lambda: _report_headline()["printed"]),
    "papers": (r"\bfrom (\d[\d,]*) papers\b", lambda: _report_headline()["papers"]),
}


def quoted_counts(text: str) -> list[tuple[str, int]]:
    """Every (kind, number) the text quotes, in order."""
    found = []
    for kind, (pattern, _) in COUNTS.items():
        found += [(kind, int(m.group(1).replace(",", ""))) for m in re.finditer(pattern, text)]
    return found


def wrong_counts(text: str) -> list[str]:
    """One message per quoted count that is not the real one."""
    real = {}
    wrong = []
    for kind, quoted in quoted_counts(text):
        if kind not in real:
            real[kind] = COUNTS[kind][1]()
        if quoted != real[kind]:
            wrong.append(f"README quotes {quoted} {kind}; the real number is {real[kind]}")
    return wrong


def test_readme_quotes_at_least_one_live_count():
    assert quoted_counts(_readme()), (
        "README.md quotes none of the counts this test checks (" + ", ".join(COUNTS) + "): quote at least one"
    )


def test_readme_counts_are_the_real_ones():
    assert not wrong_counts(_readme()), "\n".join(wrong_counts(_readme()))


def test_the_count_check_catches_a_wrong_number_and_a_missing_one():
    runs = _notebook_runs()
    assert quoted_counts(f"executes the {runs} notebook runs") == [("notebook runs", runs)]
    assert wrong_counts(f"executes the {runs} notebook runs") == []
    assert wrong_counts(f"executes the {runs + 1} notebook runs")
    checks = _report_headline()["checks"]
    assert wrong_counts(f"{checks + 10} checks of numbers") and not wrong_counts(f"{checks} checks of numbers")
    assert quoted_counts("a README that quotes no count at all") == []


# --------------------------------------------------------------------------- links


_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_GENERATED = re.compile(r"^docs/(reference/cli\.md|reference/api/[A-Za-z0-9_]+\.md|gallery\.md)$")


def _relative_links(page: Path, *, anchors: bool = False) -> list[str]:
    """The relative link targets of a Markdown page, fenced code left out (``anchors``: keep ``#anchor``)."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    targets = []
    for target in _LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # http:, https:, mailto: and same-page anchors
        targets.append(target if anchors else target.split("#", 1)[0])
    return [t for t in targets if t]


def _slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension gives a heading (its default ``slugify``)."""
    text = re.sub(r"[`*_]", "", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m) for m in re.findall(r"^#{1,6} +(.+?) *$", text, flags=re.M)}


def _broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """The relative links of ``page`` whose target is not a file under ``root`` (generated pages excepted).

    A page under ``docs/`` must link inside ``docs/`` (the site cannot resolve other files), and an anchor into
    a page that exists must name one of its headings.
    """
    broken = []
    docs = (root / "docs").resolve()
    for target in _relative_links(page, anchors=True):
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve()
        try:
            rel = path.relative_to(root.resolve()).as_posix()
        except ValueError:
            broken.append(f"{target} (outside the repository)")
            continue
        if page.resolve().is_relative_to(docs) and not path.is_relative_to(docs):
            broken.append(f"{target} (outside docs/: the site cannot link to it)")
        elif _GENERATED.match(rel):
            continue  # generated by the site build
        elif not path.is_file():
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{target} (no heading with that anchor)")
    return broken


@pytest.mark.parametrize("page", ["README.md", *DOC_PAGES])
def test_relative_links_point_to_files_that_exist(page):
    path = ROOT / page
    assert path.is_file(), f"{page} is missing"
    assert not _broken_links(path), f"{page} links to missing files: {_broken_links(path)}"


def test_the_link_check_sees_a_broken_link(tmp_path):
    guide = tmp_path / "docs" / "guide"
    guide.mkdir(parents=True)
    (guide / "agreement.md").write_text("# Agreement\n\n## The `--pairwise` table: rater pairs\n")
    (tmp_path / "ARCHITECTURE.md").write_text("# Architecture\n")
    probe = guide / "probe.md"
    probe.write_text("[a](agreement.md#the-pairwise-table-rater-pairs) [b](../nowhere.md) [c](https://x.org)\n"
                     "[d](#x)\n```\n[e](in-a-fence.md)\n```\n[f](../reference/api/agreement.md)\n"
                     "[g](../../../x.md) [h](agreement.md#no-such-heading) [i](../../ARCHITECTURE.md)\n")
    assert _relative_links(probe) == ["agreement.md", "../nowhere.md", "../reference/api/agreement.md",
                                      "../../../x.md", "agreement.md", "../../ARCHITECTURE.md"]
    assert _broken_links(probe, tmp_path) == [
        "../nowhere.md",
        "../../../x.md (outside the repository)",
        "agreement.md#no-such-heading (no heading with that anchor)",
        "../../ARCHITECTURE.md (outside docs/: the site cannot link to it)",
    ]
