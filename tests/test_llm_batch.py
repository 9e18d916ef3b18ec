"""Batch APIs (OpenAI Batch API, Anthropic Message Batches) against tests/stub_server.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from stub_server import StubServer  # noqa: E402

from medeval_kit.llm import Cache, LLMError, Request, get_client  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

SCHEMA = {"type": "object", "properties": {"label": {"enum": ["A", "B", "tie"]}}, "required": ["label"]}


def reqs(n: int, start: int = 0) -> list[Request]:
    return [Request(messages=[{"role": "user", "content": f"item {i}"}], schema=SCHEMA if i % 2 else None,
                    metadata={"i": i}) for i in range(start, start + n)]


@pytest.fixture()
def setup(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    with StubServer(batch_polls=2) as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        yield srv, tmp_path / "c.sqlite"


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_batch_submit_poll_collect_into_the_same_cache(setup, kind):
    srv, cache_path = setup
    model = f"openai/gpt-4o@{srv.openai_url}" if kind == "openai" else "anthropic/claude-sonnet-4-5"
    client = get_client(model, cache_path=cache_path)
    live = client.run(reqs(3), progress=False)  # 3 already cached: not submitted again
    out = client.run_batch(reqs(10), poll_interval=0.01, progress=False)
    assert srv.stats()["batch_creates"] == 1 and srv.stats()["successes"] == 10
    assert [r.request.metadata["i"] for r in out] == list(range(10))
    assert all(r.error is None and r.parse_status == "ok" for r in out)
    assert [r.cached for r in out] == [True] * 3 + [False] * 7
    assert [r.text for r in out[:3]] == [r.text for r in live]
    assert all(r.parsed["label"] in ("A", "B", "tie") for r in out[1::2])
    # batch price: half of 3/15 USD per 1M tokens for the priced Anthropic model
    if kind == "anthropic":
        r = out[5]
        assert r.cost_usd == pytest.approx(0.5 * (r.usage["prompt_tokens"] * 3 + r.usage["completion_tokens"] * 15) / 1e6)
    # the same cache now answers a normal run, and replay mode, with no new call
    again = get_client(f"replay/{client.spec.id}", cache_path=cache_path).run(reqs(10), progress=False)
    assert all(r.cached for r in again) and [r.text for r in again] == [r.text for r in out]
    assert Cache(cache_path).batches()[0]["status"] == "collected"


def test_batch_resumes_after_interruption_without_resubmitting(setup):
    srv, cache_path = setup
    model = f"openai/gpt-4o@{srv.openai_url}"
    client = get_client(model, cache_path=cache_path)
    ids = client.submit_batch(reqs(8))  # ... and then the notebook dies before collecting
    assert len(ids) == 1 and Cache(cache_path).batches()[0]["status"] == "pending"
    client2 = get_client(model, cache_path=cache_path)  # a new process: state comes from the cache
    assert client2.submit_batch(reqs(8)) == []  # pending keys are not submitted twice
    out = client2.run_batch(reqs(8), poll_interval=0.01, progress=False)
    assert all(r.error is None for r in out)
    assert srv.stats()["batch_creates"] == 1 and srv.stats()["successes"] == 8
    df = client2.poll_batches()
    assert df["status"].tolist() == ["collected"] and df["n_ok"].tolist() == [8]


def test_failed_batch_items_are_reported_and_resubmitted(setup):
    srv, cache_path = setup
    model = f"openai/gpt-4o@{srv.openai_url}"
    client = get_client(model, cache_path=cache_path)
    bad = reqs(4)[2].key(client.spec)
    srv.state.batch_error_ids = {bad}
    out = client.run_batch(reqs(4), poll_interval=0.01, progress=False)
    assert [r.error is not None for r in out] == [False, False, True, False]
    assert "batch item failed" in out[2].error and len(Cache(cache_path)) == 3
    srv.state.batch_error_ids = set()
    out = client.run_batch(reqs(4), poll_interval=0.01, progress=False)  # resubmits only the failed one
    assert all(r.error is None for r in out) and srv.stats()["batch_creates"] == 2
    assert srv.stats()["successes"] == 4


def test_batch_rejects_local_models(tmp_path):
    client = get_client("local/smollm2-135m", cache_path=tmp_path / "c.sqlite")
    with pytest.raises(LLMError, match="vLLM"):
        client.submit_batch(reqs(1))
