"""A canary API key used by an executed notebook appears nowhere: not in the notebook, tables, figures or cache."""

import sys
from pathlib import Path

import papermill as pm
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llm_helpers import temp_project  # noqa: E402
from stub_server import StubServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CANARY = "sk-canary-0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c"


@pytest.mark.slow
def test_canary_key_absent_from_executed_notebook_and_outputs(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    cache = temp_project(monkeypatch, tmp_path / "project")  # the notebook's default cache goes there
    monkeypatch.delenv("MEDEVAL_CACHE_MODE", raising=False)  # this test must really call the (stub) API
    with StubServer(latency=0.0) as srv:
        out = tmp_path / "judging.ipynb"
        pm.execute_notebook(
            str(ROOT / "notebooks" / "judging.ipynb"), str(out), cwd=str(ROOT / "notebooks"),
            parameters={
                "judge_model": f"openai/gpt-4o-mini@{srv.openai_url}", "n_items": 3, "repeats": 1,
                "cache_mode": "use", "figures_dir": str(tmp_path / "figures"), "tables_dir": str(tmp_path / "tables"),
            },
            progress_bar=False, kernel_name="python3",
        )
        assert any(a.endswith(CANARY) for a in srv.state.auth_seen), "the key was not used: the test proves nothing"
    files = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()]  # not our bundled data
    assert any(p.suffix == ".csv" for p in files) and cache in files
    for p in files:
        data = p.read_bytes()
        assert CANARY.encode() not in data, p
        assert CANARY[:12].encode() not in data, p
    assert CANARY not in str(cache)
