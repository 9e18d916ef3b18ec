"""Issue 20 finding 8 in a real browser: a judgments file whose column names, file name and cells hold HTML is
uploaded to the judgments app under ``marimo run``; nothing in it runs and every string shows as written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from marimo_helpers import serve_app

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
IFRAME = "a` <iframe onload=alert(1)></iframe> `b"
SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=1">'

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (apt-get install chromium)"),
]


@pytest.fixture()
def judgments_app():
    """`marimo run --headless` of notebooks/judgments_app.py on 127.0.0.1; yields its URL."""
    with serve_app(ROOT / "notebooks" / "judgments_app.py") as url:
        yield url


def _hostile_file(folder: Path) -> Path:
    """Three pairs in both orders; judge, criterion, item, question and an extra column name hold HTML; the first
    pair's AB verdict is empty (a failed parse, shown as <failed>)."""
    rows = []
    for i in range(3):
        for order, verdict in (("AB", "A"), ("BA", "B" if i else "A")):
            rows.append({"pair_id": f"{IMG}{i}", "judge_model": SCRIPT, "criterion": IMG, "order": order,
                         "winner": "" if (i, order) == (0, "AB") else verdict, "question": IFRAME,
                         "response_a": SCRIPT, "response_b": IMG, IFRAME: "x"})
    path = folder / "hostile<img src=x onerror=window.__pwned=1>.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_hostile_upload_runs_nothing_and_shows_the_text(judgments_app, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (extra 'dev')")
    path = _hostile_file(tmp_path)
    dialogs: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"],
        )
        page = browser.new_page(viewport={"width": 1300, "height": 1600})
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(judgments_app)
        page.locator("#n-flips").wait_for(timeout=120_000)
        page.locator("input[type=file]").set_input_files(str(path))
        page.wait_for_function(
            "want => { const e = document.getElementById('data-source'); return !!e && e.innerText.trim() === want; }",
            arg=path.name, timeout=120_000)
        page.wait_for_function("() => document.body.innerText.includes('AB order said')", timeout=120_000)
        page.wait_for_timeout(3000)  # let every cell render (and any injected handler fire)
        text = page.evaluate("document.body.innerText")
        pwned = page.evaluate("typeof window.__pwned")
        injected = page.evaluate("document.querySelectorAll('iframe[onload], img[onerror]').length + [...document"
                                 ".scripts].filter(s => s.textContent.includes('__pwned')).length")
        browser.close()
    assert dialogs == [] and pwned == "undefined" and injected == 0
    for shown in ("AB order said <failed>", f"{SCRIPT} / {IMG}", IFRAME, path.name, f"{IMG}0"):
        assert shown in text, shown
