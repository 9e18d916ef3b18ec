"""Fault and crash tests of the LLM client against tests/stub_server.py (127.0.0.1 only)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from stub_server import StubServer  # noqa: E402

from medeval_kit.llm import Cache, Request, get_client  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

SCHEMA = {"type": "object", "properties": {"label": {"enum": ["A", "B", "tie"]}}, "required": ["label"]}


def test_fault_storm_1000_requests(tmp_path, monkeypatch):
    """20% 429 (with Retry-After), 10% 500, 5% timeouts, plus malformed and truncated bodies.

    Every request ends with a response or a recorded final failure, and the server's count of
    successful completions equals the number of distinct requests: nothing is paid twice.
    """
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    n = 1000
    with StubServer(latency=0.002, p429=0.20, p500=0.10, ptimeout=0.05, pmalformed=0.02, ptruncated=0.02,
                    retry_after=0.01, timeout_sleep=2.0, seed=1) as srv:
        # a 1 s timeout: a reply the stub sent in 2 ms must not time out on a loaded machine (parallel tests),
        # or the stub counts it and its retry as two successes
        client = get_client(f"openai/gpt-4o@{srv.openai_url}", cache_path=tmp_path / "c.sqlite",
                            concurrency=64, timeout=1.0, max_retries=12, backoff_base=0.01, backoff_max=0.1)
        reqs = [Request(messages=[{"role": "user", "content": f"item {i}"}], schema=SCHEMA if i % 2 else None,
                        metadata={"i": i}) for i in range(n)]
        reqs += reqs[:50]  # duplicates in the same run are called once
        out = client.run(reqs, progress=False)
        stats = srv.stats()
    assert len(out) == n + 50
    assert [r.request.metadata["i"] for r in out[:n]] == list(range(n))
    for r in out:  # a response or a recorded final failure
        assert (r.error is None and r.text is not None) or (r.error and r.text is None)
    ok = {r.key for r in out if r.error is None}
    assert stats["successes"] == stats["distinct_successes"] == len(ok)  # nothing paid twice
    assert stats["max_per_request"] == 1
    assert len(ok) >= n - 2  # 12 retries at a 39% fault rate: final failures are very rare
    assert stats["faults"]["429"] > 100 and stats["faults"]["timeout"] > 20
    assert client.last_run.n_retries > 300
    assert len(Cache(tmp_path / "c.sqlite")) == len(ok)  # every success stored, no error stored
    assert all(r.parse_status == "ok" for r in out if r.error is None)


CHILD = textwrap.dedent("""
    import json, sys
    from medeval_kit.llm import Request, get_client
    url, cache, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    client = get_client(f"openai/gpt-4o@{url}", cache_path=cache, concurrency=8, timeout=10,
                        backoff_base=0.01, backoff_max=0.05)
    reqs = [Request(messages=[{"role": "user", "content": f"item {i}"}], repeat=i % 3) for i in range(n)]
    out = client.run(reqs, progress=False)
    st = client.last_run
    print(json.dumps({"texts": {r.key: r.text for r in out}, "n_called": st.n_called,
                      "n_cached": st.n_cached, "n_failed": st.n_failed}))
""")


def _count(path: Path) -> int:
    try:
        con = sqlite3.connect(path, timeout=5)
        try:
            return con.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def test_crash_sigkill_then_resume(tmp_path):
    """SIGKILL a run halfway; the re-run repeats no call that had succeeded and gives the same results."""
    n = 300
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, OPENAI_API_KEY="sk-test-not-a-real-key", PYTHONUNBUFFERED="1")
    cache = tmp_path / "crash.sqlite"
    with StubServer(latency=0.02) as srv:
        proc = subprocess.Popen([sys.executable, str(script), srv.openai_url, str(cache), str(n)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while _count(cache) < n // 2 and time.time() < deadline and proc.poll() is None:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        time.sleep(0.3)  # let the server finish the requests that were in flight at the kill
        done_before = _count(cache)
        assert n // 4 < done_before < n  # killed mid-run
        served_before = srv.stats()["successes"]
        in_flight_lost = served_before - done_before  # served but not yet stored when killed
        assert 0 <= in_flight_lost <= 8  # at most the concurrency

        res = subprocess.run([sys.executable, str(script), srv.openai_url, str(cache), str(n)], env=env,
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr[-2000:]
        second = json.loads(res.stdout.strip().splitlines()[-1])
        assert second["n_failed"] == 0
        assert second["n_cached"] == done_before and second["n_called"] == n - done_before
        assert srv.stats()["successes"] == n + in_flight_lost  # nothing that was stored is paid again

        fresh = subprocess.run([sys.executable, str(script), srv.openai_url, str(tmp_path / "fresh.sqlite"),
                                str(n)], env=env, capture_output=True, text=True, timeout=120)
        assert fresh.returncode == 0, fresh.stderr[-2000:]
        uninterrupted = json.loads(fresh.stdout.strip().splitlines()[-1])
    assert second["texts"] == uninterrupted["texts"]  # identical to an uninterrupted run
    assert len(second["texts"]) == n


@pytest.mark.parametrize("transport", ["http", "sdk"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_faults_for_each_provider(provider, transport, tmp_path, monkeypatch):
    """Each fault kind once, then success; through our httpx2 path and through the SDKs."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    with StubServer() as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        model = f"openai/m@{srv.openai_url}" if provider == "openai" else "anthropic/claude-sonnet-4-5"
        srv.set(timeout_sleep=0.6)
        srv.queue("429", "500", "malformed", "truncated", "timeout")
        client = get_client(model, cache_path=tmp_path / "c.sqlite", concurrency=1, timeout=0.3,
                            backoff_base=0.01, backoff_max=0.02, transport=transport)
        out = client.run([Request(messages=[{"role": "user", "content": "q"}], schema=SCHEMA)], progress=False)
        # the stub saw the five faults, then the success; on a loaded machine a connection may also time
        # out before the stub sees it (0.3 s), an attempt the client counts and retries too
        assert out[0].error is None and out[0].attempts >= 6 and out[0].parse_status == "ok"
        assert srv.stats()["attempts"] == 6 and srv.stats()["successes"] == 1
