"""The README's tour runs as written and prints what the README says it prints."""

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_tour_runs(tmp_path, monkeypatch):
    text = (ROOT / "README.md").read_text()
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
