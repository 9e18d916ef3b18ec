"""Helpers shared by the LLM-layer tests: a chat request, a client with fast retries, and fixtures.

``env`` makes ``tmp_path`` the project (``MEDEVAL_ROOT``), so the default cache is
``tmp_path/data/cache/llm.sqlite`` (:func:`medeval_kit.paths.cache_path`); ``project`` is a temporary
project that also carries the bundled data (for executed notebooks, which load datasets).

Test modules import what they use (``from llm_helpers import req, fast, stub, env``); pytest then
finds the fixtures in the module's namespace.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from stub_server import StubServer

from medeval_kit import paths
from medeval_kit.llm import Request, get_client

ROOT = Path(__file__).resolve().parents[1]


def req(text: str, **kw) -> Request:
    """A two-message judge request with ``text`` as the user message."""
    return Request(messages=[{"role": "system", "content": "You judge."}, {"role": "user", "content": text}], **kw)


def fast(model: str, **kw):
    """A client whose retries wait milliseconds, not seconds."""
    kw.setdefault("backoff_base", 0.01)
    kw.setdefault("backoff_max", 0.05)
    kw.setdefault("timeout", 5.0)
    return get_client(model, **kw)


@pytest.fixture()
def stub():
    with StubServer() as srv:
        yield srv


@pytest.fixture()
def env(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    monkeypatch.setenv(paths.ENV_VAR, str(tmp_path))
    return tmp_path


def temp_project(monkeypatch, where: Path) -> Path:
    """Make ``where`` an empty user project (``MEDEVAL_ROOT``): its default cache is
    ``where/data/cache/llm.sqlite`` while the bundled data still come from the toolkit. Return the cache path."""
    (where / "data").mkdir(parents=True)
    monkeypatch.setenv(paths.ENV_VAR, str(where))
    assert paths.cache_path() == where / "data" / "cache" / "llm.sqlite"
    return paths.cache_path()
