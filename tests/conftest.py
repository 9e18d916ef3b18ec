"""Shared test setup.

``make test`` exports MEDEVAL_CACHE_MODE=replay so that executed notebooks (nbval) can never make a
real LLM call. Unit tests choose their cache mode explicitly, so the override is removed here.
"""

import pytest


@pytest.fixture(autouse=True)
def _no_global_cache_mode(monkeypatch):
    monkeypatch.delenv("MEDEVAL_CACHE_MODE", raising=False)
