"""The reproduction report in a real browser: it stands alone, the summary comes first, and it fits 800 and
1,400 px without the page scrolling sideways (wide tables scroll inside their own box)."""

import shutil

import pytest

from medeval_kit.cli.report import STATUSES, build_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (apt-get install chromium)"),
    # the report and the browser are built once per module: under pytest-xdist --dist loadgroup, once per run
    pytest.mark.xdist_group("test_report_browser"),
]

OVERFLOW = "[document.documentElement.scrollWidth, window.innerWidth]"
OPEN_ALL = "document.querySelectorAll('details').forEach(d => { d.open = true; })"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The report of the committed study outputs, written to a temporary folder."""
    return build_report(outdir=tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (extra 'dev')")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"],
        )
        yield b
        b.close()


@pytest.mark.parametrize("width", [1400, 800])
def test_report_fits_the_width_and_stands_alone(report, browser, tmp_path, width):
    requests = []
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.on("request", lambda r: requests.append(r.url))
    page.goto(report.html_path.as_uri())
    try:
        _check_page(page, report, requests, width)
    except BaseException:
        # what the page looked like when a check failed (a screenshot costs ~1 s, so only then)
        page.screenshot(path=str(tmp_path / f"report_{width}_failed.png"), full_page=True)
        raise
    page.close()


def _check_page(page, report, requests, width):
    scroll_width, inner_width = page.evaluate(OVERFLOW)
    assert scroll_width <= inner_width, f"the page overflows at {width} px: {scroll_width} > {inner_width}"

    # the summary is the first section, above every study; one row per paper
    first = page.evaluate("document.querySelector('main > section').id")
    assert first == "summary"
    assert page.evaluate("document.querySelector('#summary').getBoundingClientRect().bottom <= "
                         "document.querySelector('details.study').getBoundingClientRect().top")
    assert page.locator("#summary table tbody tr").count() == len(report.papers)

    # open every study and table: still no sideways scrolling of the page
    page.evaluate(OPEN_ALL)
    page.wait_for_timeout(300)
    scroll_width, inner_width = page.evaluate(OVERFLOW)
    assert scroll_width <= inner_width, f"the opened page overflows at {width} px: {scroll_width} > {inner_width}"
    page.evaluate("document.querySelector('details.study').scrollIntoView()")

    # every figure is embedded and decodes; nothing is fetched but the file itself
    images = page.evaluate("[...document.images].map(i => [i.getAttribute('src').slice(0, 22), i.complete, "
                           "i.naturalWidth])")
    assert len(images) == len(report.figures) > 0
    assert all(src == "data:image/png;base64," for src, _, _ in images), {src for src, _, _ in images}
    assert all(done and w > 0 for _, done, w in images), "an embedded figure did not decode"
    assert requests == [report.html_path.as_uri()], requests
    assert page.locator("link[rel=stylesheet], script[src]").count() == 0
    hrefs = page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))")
    assert all(h.startswith(("https://", "http://", "#")) for h in hrefs), hrefs

    # every status badge says its status in words and a symbol, not by colour alone
    badges = page.locator(".badge").all_inner_texts()
    assert badges and all(t[:1] in ("✓", "≈", "≠", "∅") and any(s in t for s in STATUSES) for t in badges), set(badges)
