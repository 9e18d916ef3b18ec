"""Shared test setup.

``make test`` exports MEDEVAL_CACHE_MODE=replay so that executed notebooks (nbval) can never make a
real LLM call. Unit tests choose their cache mode explicitly, so the override is removed here.
"""

import pytest

# notebooks under fixtures/ are inputs of the runner tests, run there with their parameters; nbval must not
# execute them on their own (`make test` collects *.ipynb)
collect_ignore_glob = ["fixtures/*"]


@pytest.fixture(autouse=True)
def _no_global_cache_mode(monkeypatch):
    monkeypatch.delenv("MEDEVAL_CACHE_MODE", raising=False)
