"""Helpers shared by the LLM-layer tests: a chat request, a client with fast retries, and fixtures.

Test modules import what they use (``from llm_helpers import req, fast, stub, env``); pytest then
finds the fixtures in the module's namespace.
"""

from __future__ import annotations

import pytest
from stub_server import StubServer

from medeval_kit.llm import Request, get_client


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
    monkeypatch.setenv("MEDEVAL_CACHE", str(tmp_path / "cache.sqlite"))
    return tmp_path
