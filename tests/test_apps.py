"""marimo apps: they run as scripts, and in a real browser a changed control changes what is shown."""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APPS = sorted((ROOT / "notebooks").glob("*_app.py"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SHOTS = ROOT / "runs" / "screenshots"


def test_apps_exist():
    assert {p.name for p in APPS} >= {"agreement_app.py", "judgments_app.py", "rounds_app.py"}


@pytest.mark.parametrize("app", APPS, ids=lambda p: p.name)
def test_app_runs_as_a_script(app):
    proc = subprocess.run([sys.executable, str(app)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip(), f"{app.name} printed nothing in script mode"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def served(request):
    """Start `marimo run --headless` for an app on 127.0.0.1 and yield its URL."""
    app = request.param
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "marimo", "run", "--headless", "--host", "127.0.0.1", "--port", str(port),
         "--no-token", str(app)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=ROOT,
        env={**os.environ, "MARIMO_SKIP_UPDATE_CHECK": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url + "/health", timeout=1)
            break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail(f"marimo did not start: {proc.stdout.read().decode()[-2000:]}")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def _browser(p):
    return p.chromium.launch(
        executable_path=CHROMIUM,
        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--no-first-run", "--disable-quic"],
    )


needs_browser = pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (apt-get install chromium)")


@needs_browser
@pytest.mark.browser
@pytest.mark.parametrize("served", [ROOT / "notebooks" / "agreement_app.py"], indirect=True, ids=["agreement"])
def test_agreement_app_updates_when_metric_changes(served):
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1300, "height": 1600})
        page.goto(served)
        number = page.locator("#mean-pairwise")
        number.wait_for(timeout=120_000)
        before = number.inner_text()
        page.get_by_role("combobox").filter(has_text="cohen_kappa").first.select_option("gwet_ac1")
        page.wait_for_function(
            "before => { const e = document.querySelector('#mean-pairwise'); return e && e.innerText !== before; }",
            arg=before, timeout=120_000,
        )
        after = number.inner_text()
        page.wait_for_timeout(4000)  # let the dependent figure cells re-render before the screenshot
        page.screenshot(path=str(SHOTS / "agreement_app.png"), full_page=True)
        browser.close()
    assert before != after
    assert float(before) == pytest.approx(0.577, abs=0.01)  # mean pairwise Cohen's kappa, PandaLM, 5 raters


@needs_browser
@pytest.mark.browser
@pytest.mark.parametrize(
    ("served", "number_id"),
    [(ROOT / "notebooks" / "rounds_app.py", "final-total"), (ROOT / "notebooks" / "judgments_app.py", "n-flips")],
    indirect=["served"], ids=["rounds", "judgments"],
)
def test_app_number_changes_with_a_dropdown(served, number_id):
    """Pick other options of the app's dropdowns, in order, until the displayed number changes."""
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1300, "height": 1400})
        page.goto(served)
        number = page.locator(f"#{number_id}")
        number.wait_for(timeout=120_000)
        before = number.inner_text()
        changed = False
        selects = page.get_by_role("combobox")
        for k in range(selects.count()):
            select = selects.nth(k)
            options = [o for o in select.locator("option").all_inner_texts() if o.strip()]
            current = select.input_value()
            for opt in [o for o in options if o != current][:6]:
                select.select_option(label=opt)
                try:
                    page.wait_for_function(
                        "([id, before]) => { const e = document.getElementById(id); return e && e.innerText !== before; }",
                        arg=[number_id, before], timeout=15_000,
                    )
                    changed = True
                    break
                except Exception:  # same number for this option: try the next
                    continue
            if changed:
                break
        page.wait_for_timeout(2000)
        page.screenshot(path=str(SHOTS / f"{number_id}.png"), full_page=True)
        after = number.inner_text()
        browser.close()
    assert changed and before != after, f"#{number_id} stayed {before!r} for every option tried"
