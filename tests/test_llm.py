"""Tests of the LLM layer: types, keys, parsing, cache, client against the stub, cost, CLI, secrets.

Every network call goes to tests/stub_server.py on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import multiprocessing as mp
import sqlite3
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from llm_helpers import env, fast, req, stub  # noqa: E402,F401

from medeval_kit.llm import (  # noqa: E402
    BudgetError,
    Cache,
    CacheMissError,
    MissingKeyError,
    Request,
    RunStats,
    UnknownModelError,
    estimate_cost,
    extract_json,
    get_client,
    parse_model,
    parse_reply,
    reparse,
    to_frame,
)
from medeval_kit.llm.execute import redact  # noqa: E402
from medeval_kit.llm.limits import RateLimiter  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

SCHEMA = {"type": "object", "properties": {"label": {"enum": ["A", "B", "tie"]}, "reason": {"type": "string"}},
          "required": ["label"]}


# --------------------------------------------------------------------------- model strings and keys
def test_parse_model_strings():
    assert parse_model("local/smollm2-135m").id == "local/smollm2-135m"
    s = parse_model("openai/meta-llama/Llama-3-8B@http://10.0.0.1:8000/v1")
    assert (s.provider, s.name, s.base_url, s.replay) == ("openai", "meta-llama/Llama-3-8B", "http://10.0.0.1:8000/v1", False)
    r = parse_model("replay/anthropic/claude-3-5-sonnet-latest")
    assert r.replay and r.id == "anthropic/claude-3-5-sonnet-latest"
    for bad in ("gpt-4o", "mistral/x", "", "anthropic/x@http://h/v1"):
        with pytest.raises(UnknownModelError):
            parse_model(bad)


def test_a_provider_is_one_registered_class(tmp_path):
    """A toy provider registered here: its model strings resolve, get_client runs it through the cache
    (and replays it), the batch engine refuses it (no batch API); unregistered, it is unknown again."""
    from medeval_kit.llm import Completion, LLMError, Provider, make_provider, provider, provider_names, unregister

    @provider("echo")
    class EchoProvider(Provider):
        default_concurrency = 2
        uses_network = False
        example = "echo/upper"

        async def acomplete(self, request):
            text = request.messages[-1]["content"].upper()
            return Completion(text=text, prompt_tokens=3, completion_tokens=1, finish_reason="stop")

    cache = tmp_path / "c.sqlite"
    try:
        assert "echo" in provider_names() and EchoProvider.name == "echo"
        assert type(make_provider(parse_model("echo/upper"))) is EchoProvider
        with pytest.raises(UnknownModelError, match="'echo/upper'"):  # the help lists it with its example
            parse_model("nosuch/x")
        with pytest.raises(UnknownModelError, match="base URL"):
            parse_model("echo/upper@http://127.0.0.1:1/v1")
        with pytest.raises(ValueError, match="already registered"):
            provider("openai")(EchoProvider)
        client = get_client("echo/upper", cache_path=cache)
        [r] = client.run([req("hello")], progress=False)
        assert (r.text, r.provider, r.model, r.cached, r.usage["prompt_tokens"]) == ("HELLO", "echo", "upper", False, 3)
        assert client.last_run.n_called == 1 and math.isnan(client.last_run.cost_usd)  # no price: unknown cost
        [again] = get_client("replay/echo/upper", cache_path=cache).run([req("hello")], progress=False)
        assert again.cached and again.text == "HELLO"
        with pytest.raises(LLMError, match="batch APIs exist for 'openai/...' and 'anthropic/...' only"):
            client.submit_batch([req("other")])
    finally:
        unregister("echo")
    assert "echo" not in provider_names()
    with pytest.raises(UnknownModelError):
        parse_model("echo/upper")


def test_key_covers_what_changes_the_output_and_nothing_else():
    base = req("q", model="openai/gpt-4o")
    k = base.key()
    assert len(k) == 64
    assert req("q", model="openai/gpt-4o", metadata={"item": 7}).key() == k  # metadata not in key
    assert req("q", model="openai/gpt-4o", temperature=0).key() == k  # 0 == 0.0
    assert req("q", model="openai/gpt-4o@http://127.0.0.1:1/v1").key() == k  # base URL not in key
    assert req("q", model="replay/openai/gpt-4o").key() == k  # replay answers the same key
    for other in (req("q", model="openai/gpt-4o", repeat=1), req("q", model="openai/gpt-4o", temperature=0.7),
                  req("q", model="openai/gpt-4o", schema=SCHEMA), req("q", model="openai/gpt-4o", seed=1),
                  req("q", model="openai/gpt-4o", max_tokens=10), req("q", model="openai/gpt-4o-mini"),
                  req("q2", model="openai/gpt-4o"), req("q", model="anthropic/gpt-4o")):
        assert other.key() != k
    assert base.effective_seed != req("q", repeat=1).effective_seed


def test_request_validation():
    from medeval_kit.llm import RequestError

    with pytest.raises(RequestError):
        Request(messages=[])
    with pytest.raises(RequestError, match="messages\\[0\\]"):
        Request(messages=[{"role": "robot", "content": "x"}])
    with pytest.raises(RequestError):
        req("q", max_tokens=0)


# --------------------------------------------------------------------------- parsing
def test_extract_json_and_parse_reply():
    assert extract_json('{"a": 1}') == {"a": 1}
    assert extract_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert extract_json('Sure! {"label": "A"} hope this helps') == {"label": "A"}
    with pytest.raises(ValueError):
        extract_json("no json here")
    assert parse_reply('{"label": "B"}', SCHEMA) == ({"label": "B"}, "ok", None)
    parsed, status, err = parse_reply('{"label": "C"}', SCHEMA)  # not an allowed label
    assert parsed is None and status == "failed" and "label" in err
    assert parse_reply("the answer is A", SCHEMA)[1] == "failed"
    assert parse_reply(None, SCHEMA) == (None, "missing", None)
    assert parse_reply("free text", None) == (None, "ok", None)


# --------------------------------------------------------------------------- client against the stub
def test_openai_compatible_run_order_cache_and_stats(stub, env):
    model = f"openai/gpt-4o@{stub.openai_url}"
    reqs = [req(f"q{i}", schema=SCHEMA if i % 2 else None, metadata={"item": i}) for i in range(10)]
    reqs.append(req("q0", metadata={"item": "dup"}))  # same key as reqs[0]: called once
    reqs.append(req("[[bad-json]]", schema=SCHEMA))
    client = fast(model)
    out = client.run(reqs, progress=False)
    assert [r.request.metadata.get("item") for r in out[:11]] == [*range(10), "dup"]
    assert all(r.error is None and r.text for r in out)
    assert out[10].text == out[0].text and out[10].key == out[0].key
    assert all(r.parse_status == "ok" and r.parsed["label"] in ("A", "B", "tie") for r in out[1:10:2])
    assert out[11].parse_status == "failed" and out[11].text and out[11].parsed is None
    st = client.last_run
    assert isinstance(st, RunStats)
    assert (st.n, st.n_cached, st.n_called, st.n_failed, st.n_parse_failed, st.n_duplicates) == (12, 0, 11, 0, 1, 1)
    assert stub.stats()["successes"] == 11
    assert st.prompt_tokens > 0 and st.completion_tokens > 0 and "12 requests" in st.summary()

    again = fast(model).run(reqs, progress=False)
    assert all(r.cached for r in again) and stub.stats()["successes"] == 11  # re-run costs nothing
    assert [r.text for r in again] == [r.text for r in out]
    assert [r.parsed for r in again] == [r.parsed for r in out]
    df = to_frame(again)
    assert {"item", "key", "text", "parse_status", "cost_usd", "cached"} <= set(df.columns)


def test_anthropic_structured_output_via_tool_use(stub, env, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.url)
    client = fast("anthropic/claude-3-5-sonnet-latest")
    out = client.run([req("q1", schema=SCHEMA), req("q2"), req("[[bad-json]]", schema=SCHEMA)], progress=False)
    assert out[0].parse_status == "ok" and out[0].parsed["label"] in ("A", "B", "tie")
    assert out[1].text.startswith("stub reply") and out[1].parse_status == "ok"
    assert out[2].parse_status == "failed" and out[2].text
    # priced model: cost from usage at 3 / 15 USD per 1M tokens
    r = out[0]
    assert r.cost_usd == pytest.approx((r.usage["prompt_tokens"] * 3 + r.usage["completion_tokens"] * 15) / 1e6)
    assert client.last_run.cost_usd == pytest.approx(sum(x.cost_usd for x in out))


def test_cache_modes(stub, env):
    model = f"openai/m@{stub.openai_url}"
    reqs = [req(f"q{i}") for i in range(4)]
    fast(model, cache_mode="off").run(reqs, progress=False)
    assert len(Cache()) == 0 and stub.stats()["successes"] == 4
    fast(model, cache_mode="use").run(reqs[:2], progress=False)
    assert len(Cache()) == 2 and stub.stats()["successes"] == 6
    with pytest.raises(CacheMissError) as ei:  # replay: misses listed, no call made
        fast(model, cache_mode="replay").run(reqs, progress=False)
    assert len(ei.value.missing) == 2 and "q2" in str(ei.value) and "q3" in str(ei.value)
    assert stub.stats()["successes"] == 6
    out = fast("replay/openai/m").run(reqs[:2], progress=False)  # replay model string, any URL
    assert all(r.cached for r in out)
    before = Cache().get(reqs[0].key("openai/m"))["created_utc"]
    time.sleep(0.01)
    out = fast(model, cache_mode="refresh").run(reqs[:1], progress=False)
    assert not out[0].cached and stub.stats()["successes"] == 7
    assert Cache().get(reqs[0].key("openai/m"))["created_utc"] > before


def test_errors_are_not_cached_and_4xx_not_retried(stub, env):
    model = f"openai/m@{stub.openai_url}"
    stub.queue("400")
    out = fast(model).run([req("q")], progress=False)
    assert out[0].error and "400" in out[0].error and out[0].attempts == 1
    assert out[0].parse_status == "missing" and out[0].text is None
    assert len(Cache()) == 0
    out = fast(model).run([req("q")], progress=False)  # the next run calls again and succeeds
    assert out[0].error is None and not out[0].cached and len(Cache()) == 1


def test_retry_after_is_honoured(stub, env):
    stub.set(retry_after=0.4)
    stub.queue("429")
    t0 = time.perf_counter()
    out = fast(f"openai/m@{stub.openai_url}").run([req("q")], progress=False)
    assert out[0].error is None and out[0].attempts == 2
    assert time.perf_counter() - t0 >= 0.4


def test_final_failure_is_recorded(stub, env):
    stub.queue(*["500"] * 3)
    client = fast(f"openai/m@{stub.openai_url}", max_retries=2)
    out = client.run([req("q")], progress=False)
    assert out[0].error and "500" in out[0].error and out[0].attempts == 3
    assert client.last_run.n_failed == 1 and client.last_run.n_retries == 2


def test_timeout(stub, env):
    stub.set(timeout_sleep=1.0)
    stub.queue("timeout")
    out = fast(f"openai/m@{stub.openai_url}", timeout=0.3).run([req("q")], progress=False)
    assert out[0].error is None and out[0].attempts == 2


def test_run_inside_a_running_event_loop(stub, env):
    client = fast(f"openai/m@{stub.openai_url}")

    async def notebook_cell():  # what Jupyter does: a loop is already running
        return client.run([req("q1"), req("q2")], progress=False)

    out = asyncio.run(notebook_cell())
    assert [r.error for r in out] == [None, None]


def test_missing_key_message(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    client = get_client("openai/gpt-4o", cache_path=tmp_path / "c.sqlite")
    with pytest.raises(MissingKeyError, match="set the environment variable OPENAI_API_KEY"):
        client.run([req("q")], progress=False)  # a configuration error: fail before any call


# --------------------------------------------------------------------------- cost and budget
def test_estimate_cost_hand_derived(env):
    r = Request(messages=[{"role": "user", "content": "x" * 30}], model="openai/gpt-4o", max_tokens=100)
    # prompt estimate = 30 // 3 + 4 * 1 message + 3 = 17 tokens; gpt-4o is 2.50 / 10.00 USD per 1M
    # upper = (17 * 2.5 + 100 * 10) / 1e6 = 0.0010425 ; lower = 17 * 2.5 / 1e6 = 4.25e-05
    e = estimate_cost([r, r])  # duplicates are called once
    assert (e.n_requests, e.n_to_call, e.prompt_tokens, e.max_completion_tokens) == (2, 1, 17, 100)
    assert e.cost_usd == pytest.approx(0.0010425) and e.cost_usd_low == pytest.approx(4.25e-05)
    assert estimate_cost([r], batch=True).cost_usd == pytest.approx(0.0010425 / 2)
    u = estimate_cost([r.with_model("anthropic/unknown-model")])
    assert math.isnan(u.cost_usd) and "no price" in u.note
    assert estimate_cost([r.with_model("local/smollm2-135m")]).cost_usd == 0.0


def test_budget_cap_stops_before_exceeding(stub, env, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.url)
    stub.set(usage="bytes")  # replies cost close to their ceiling (else all 20 fit: none may be refused)
    reqs = [req(f"question {i}", max_tokens=100) for i in range(20)]
    # each call costs (~20 prompt tok * 3 + 100 * 15) / 1e6 ~= 0.00156 USD; its ceiling is a little more
    client = fast("anthropic/claude-3-5-sonnet-latest", budget_usd=0.005, concurrency=2)
    est = client.estimate(reqs)
    assert est.cost_usd > 0.005
    out = client.run(reqs, progress=False)
    st = client.last_run
    assert st.n_skipped_budget > 0 and st.cost_usd <= 0.005
    assert sum(r.error is None for r in out) + st.n_skipped_budget == 20
    assert all("budget" in r.error for r in out if r.error)
    with pytest.raises(BudgetError):
        fast("anthropic/some-unpriced-model", budget_usd=1.0).run([req("q")], progress=False)


def test_rate_limiter_rpm():
    # rpm 600 -> 10 requests/s with a burst of 100 (10 s worth): request 111 waits >= 1 s
    async def go():
        lim = RateLimiter(rpm=600)
        t0 = time.perf_counter()
        for _ in range(111):
            await lim.acquire(1)
        return time.perf_counter() - t0

    assert 0.95 <= asyncio.run(go()) < 3.0


def test_rate_limiter_tpm():
    # tpm 6000 -> 100 tokens/s with a burst of 1000: 1000 tokens pass at once, 100 more wait ~1 s
    async def go():
        lim = RateLimiter(tpm=6000)
        await lim.acquire(1000)
        t0 = time.perf_counter()
        await lim.acquire(100)
        return time.perf_counter() - t0

    assert 0.9 <= asyncio.run(go()) < 3.0


def test_progress_bar_shows_hits_failures_tokens_cost(stub, env, capsys):
    model = f"openai/m@{stub.openai_url}"
    fast(model).run([req("q1")], progress=False)
    stub.queue("400")
    fast(model).run([req("q1"), req("q2"), req("q3")], progress=True, desc="judging")
    err = capsys.readouterr().err
    assert "judging" in err and "3/3" in err
    assert "hits=1" in err and "fail=1" in err and "tok=" in err and "$" in err


# --------------------------------------------------------------------------- cache storage
def _writer(path: str, worker: int, n: int) -> None:
    c = Cache(path)
    for i in range(n):
        c.put({"key": f"{worker}-{i}", "provider": "openai", "model": "m", "request_json": "{}", "text": str(i)})


def test_cache_is_wal_and_safe_with_several_processes(tmp_path):
    path = str(tmp_path / "multi.sqlite")
    Cache(path).stats()  # create
    ctx = mp.get_context("fork" if sys.platform == "linux" else "spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 150)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    assert len(Cache(path)) == 600
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("PRAGMA user_version").fetchone()[0] == 1


def test_cache_stats_export_prune_and_cli(stub, env, capsys):
    from medeval_kit.cli import main

    fast(f"openai/a@{stub.openai_url}").run([req("q1"), req("q2", schema=SCHEMA)], progress=False)
    fast(f"openai/b@{stub.openai_url}").run([req("q1")], progress=False)
    cache = Cache()
    st = cache.stats()
    assert st.set_index("model")["n"].to_dict() == {"a": 2, "b": 1}
    out = env / "x.jsonl"
    assert cache.export(out) == 3
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert {"key", "request", "text", "raw", "prompt_tokens", "cost_usd", "latency_s", "created_utc"} <= set(rows[0])
    assert main(["cache", "stats"]) == 0 and "3 entries" in capsys.readouterr().out
    assert main(["cache", "export", "--out", str(env / "y.jsonl"), "--model", "openai/a"]) == 0
    assert len((env / "y.jsonl").read_text().splitlines()) == 2
    assert main(["cache", "prune", "--model", "openai/b", "--dry-run"]) == 0 and len(cache) == 3
    assert main(["cache", "prune", "--model", "openai/b"]) == 0 and len(cache) == 2
    assert main(["cache", "prune", "--older-than", "1"]) == 0 and len(cache) == 2
    assert main(["cache", "checkpoint"]) == 0 and "2 entries, ready to commit" in capsys.readouterr().out
    assert cache.prune(older_than_days=0) == 2 and len(cache) == 0


def test_reparse_applies_a_new_parser_without_calls(stub, env, capsys):
    from medeval_kit.cli import main

    fast(f"openai/m@{stub.openai_url}").run([req(f"q{i}", schema=SCHEMA) for i in range(3)]
                                            + [req("[[bad-json]]", schema=SCHEMA)], progress=False)
    calls = stub.stats()["attempts"]
    df = reparse(Cache())  # default: the JSON parser with each request's schema
    assert sorted(df["parse_status"]) == ["failed", "ok", "ok", "ok"]
    df2 = reparse(Cache(), lambda text: "A" if "A" in text else text[:1])  # a lenient new parser
    assert (df2["parse_status"] == "ok").all()
    assert df2.loc[df2["text"].str.startswith("Sorry"), "parsed"].item() == "A"
    df3 = reparse(Cache(), lambda text: 1 / 0)
    assert (df3["parse_status"] == "failed").all() and df3["parse_error"].str.contains("ZeroDivision").all()
    assert main(["reparse", "--parser", "json:loads", "--out", str(env / "r.jsonl")]) == 0
    assert "re-parsed 4" in capsys.readouterr().out and len((env / "r.jsonl").read_text().splitlines()) == 4
    assert stub.stats()["attempts"] == calls  # no call


# --------------------------------------------------------------------------- secrets
CANARY = "sk-canary-5c1d8e7f9a0b2c4d6e8f0a1b2c3d4e5f"


def test_canary_key_never_written(stub, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.url)
    cache_path = tmp_path / "c.sqlite"
    log_path = tmp_path / "run.log"
    handler = logging.FileHandler(log_path)
    logging.getLogger("medeval_kit").addHandler(handler)
    logging.getLogger("medeval_kit").setLevel(logging.DEBUG)
    caplog.set_level(logging.DEBUG)
    try:
        stub.queue("429", "500", "401")
        out = []
        for model in ("openai/gpt-4o-mini", "anthropic/claude-haiku-4-5"):
            # real-API model names; the stub stands in for the API via base URLs
            m = model if model.startswith("anthropic") else f"openai/gpt-4o-mini@{stub.openai_url}"
            client = fast(m, cache_path=cache_path)
            out += client.run([req("q1", schema=SCHEMA), req("q2")], progress=True)
        assert any(r.error and "401" in r.error for r in out)  # the echoed, masked key is redacted
        assert sum(r.error is None for r in out) == 3
    finally:
        logging.getLogger("medeval_kit").removeHandler(handler)
        handler.close()
    assert any(a.endswith(CANARY) for a in stub.state.auth_seen)  # the key was really used...
    Cache(cache_path).export(tmp_path / "export.jsonl")
    to_frame(out).to_csv(tmp_path / "responses.csv")
    (tmp_path / "stats.txt").write_text(client.last_run.summary())
    for f in tmp_path.iterdir():  # ...and is nowhere on disk: cache (+WAL), log, export, tables
        data = f.read_bytes()
        assert CANARY.encode() not in data, f.name
        assert CANARY[:8].encode() not in data, f.name  # not even the masked prefix
    assert CANARY not in caplog.text and CANARY[:8] not in caplog.text
    assert "sk-canary" not in (redact(f"Incorrect API key provided: {CANARY[:8]}****{CANARY[-4:]}") or "")


def test_raw_newlines_inside_json_strings_parse():
    # llama.cpp's JSON grammar admits raw control characters inside strings; they are unambiguous.
    from medeval_kit.llm.parse import extract_json

    assert extract_json('{"feedback": "line one\nline two"}') == {"feedback": "line one\nline two"}
    assert extract_json('noise {"a": "x\ty"} tail') == {"a": "x\ty"}


def test_env_cache_mode_forces_replay(tmp_path, monkeypatch):
    # make test exports MEDEVAL_CACHE_MODE=replay: even cache_mode="use" must not call anything.
    from medeval_kit.llm import Request, get_client
    from medeval_kit.llm.errors import CacheMissError

    monkeypatch.setenv("MEDEVAL_CACHE_MODE", "replay")
    client = get_client("openai/gpt-4o-mini@http://127.0.0.1:9/v1", cache_mode="use",
                        cache_path=tmp_path / "c.sqlite")
    with pytest.raises(CacheMissError, match="replay mode"):
        client.run([Request(messages=[{"role": "user", "content": "hi"}])], progress=False)
