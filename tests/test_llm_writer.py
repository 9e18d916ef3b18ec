"""Issue 25: the run's cache writes in batches (group commit, :mod:`medeval_kit.llm.writer`), HTTP pools sized
by the calls in flight, key lookups memoised; every guarantee kept.

The kill -9 / resume guarantee (at most the replies in flight lost, none paid twice) is tested by
``test_llm_faults.py::test_crash_sigkill_then_resume``, leases across processes by
``test_llm_budget_retry.py::test_three_processes_on_one_cache_pay_once`` and ``test_llm_safety.py``.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from llm_helpers import env, fast  # noqa: E402,F401
from stub_server import StubServer  # noqa: E402

from medeval_kit.llm import Cache, Request  # noqa: E402
from medeval_kit.llm import writer as writer_mod  # noqa: E402
from medeval_kit.llm.writer import CacheWriter  # noqa: E402


@pytest.fixture()
def writers(monkeypatch):
    """Every CacheWriter a run makes, to read its counters after the run."""
    made: list[CacheWriter] = []
    orig = CacheWriter.__init__

    def init(self, *args, **kw):
        orig(self, *args, **kw)
        made.append(self)

    monkeypatch.setattr(CacheWriter, "__init__", init)
    return made


def _entry(key: str, text: str = "t") -> dict:
    return {"key": key, "provider": "openai", "model": "m", "request_json": "{}", "text": text,
            "prompt_tokens": 1, "completion_tokens": 1}


def _leases(path: Path) -> int:
    with sqlite3.connect(path) as con:
        return con.execute("SELECT COUNT(*) FROM leases").fetchone()[0]


def test_group_commit_writes_concurrent_calls_together(env, writers):
    """200 calls, 32 in flight: their 400 writes (a lease, then a reply each) go in far fewer batches, in the
    loop's thread (the database is free); every reply stored once, every lease released."""
    with StubServer(latency=0.02) as srv:
        path = env / "c.sqlite"
        client = fast(f"openai/m@{srv.openai_url}", concurrency=32, cache_path=path)
        out = client.run([Request(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(200)],
                         progress=False)
        assert srv.stats()["successes"] == 200
    assert all(r.error is None and r.cache_error is None for r in out)
    [w] = writers
    print(f"\n200 calls: {w.n_batches} batches, {w.n_inline} in the loop's thread")
    assert w.n_batches < 200 and w.n_inline >= 1
    assert len(Cache(path)) == 200 and _leases(path) == 0
    # SQLite's own checkpoints again once the run is over
    assert client.cache._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000


def test_a_database_locked_by_another_process_sends_the_batches_to_the_thread(env, writers):
    """While another connection holds the write lock, no batch is written in the loop's thread (it would
    block every call): the writer's thread waits for the lock; nothing is lost or paid twice."""
    path = env / "c.sqlite"
    Cache(path).put(_entry("warm-up"))  # the file exists, so the run opens it before its first write
    other = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    held = threading.Event()

    def hold():
        held.set()
        time.sleep(0.8)
        other.execute("COMMIT")

    with StubServer(latency=0.01) as srv:
        client = fast(f"openai/m@{srv.openai_url}", concurrency=8, cache_path=path)
        t = threading.Thread(target=hold)
        t.start()
        held.wait()
        t0 = time.perf_counter()
        out = client.run([Request(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(40)],
                         progress=False)
        wall = time.perf_counter() - t0
        t.join()
        assert srv.stats()["successes"] == 40 and srv.stats()["max_per_request"] == 1
    other.close()
    assert all(r.error is None and r.cache_error is None for r in out)
    [w] = writers
    assert w.n_batches > w.n_inline  # some batches waited in the thread
    assert wall >= 0.5  # the first leases waited for the lock (the calls could not be sent before)
    assert len(Cache(path)) == 41 and _leases(path) == 0


class _Spy(Cache):
    """A cache recording the order of the writer's calls."""

    def __init__(self, path):
        super().__init__(path)
        self.calls: list[str] = []

    def put_many(self, entries):
        self.calls.append("put")
        return super().put_many(entries)

    def release_leases(self, owner, keys=None):
        self.calls.append("release")
        return super().release_leases(owner, keys)

    def take_leases(self, keys, owner, ttl=60.0):
        self.calls.append("take")
        return super().take_leases(keys, owner, ttl)


@pytest.mark.parametrize("inline", [True, False])
def test_a_batch_commits_replies_then_releases_then_takes(tmp_path, inline):
    """A reply is committed before any lease of its batch is released (another process sees the lease or the
    reply, never neither), and a release before a take (a run never believes it holds a lease it freed)."""
    cache = _Spy(tmp_path / "c.sqlite")
    owner = Cache.lease_owner("t")
    cache.take_leases(["a", "b"], owner)  # opens the connection

    async def go():
        w = CacheWriter(cache, inline=inline)
        put = asyncio.ensure_future(w.put(_entry("a")))
        take = asyncio.ensure_future(w.take("c", owner, 60.0))
        await asyncio.sleep(0)  # both queued, the batch not yet written
        w.release(owner, ["a"])  # queued last, in the same batch
        await put
        state, _, t0 = await take
        await w.aclose()
        return state, t0, w

    cache.calls.clear()
    t_before = time.time()
    state, t0, w = asyncio.run(go())
    assert cache.calls == ["put", "release", "take"] and w.n_batches == 1 and w.n_inline == int(inline)
    assert state == "mine" and t0 >= t_before  # the lease lasts at least until t0 + ttl
    assert cache.get("a")["text"] == "t"
    assert cache.poll_leases(["a", "b", "c"], "someone else")["a"][0] == "done"


def test_the_reply_of_a_cancelled_call_is_still_written(tmp_path):
    """A call cancelled while its reply waits for the batch: the reply was paid for, so it is written."""
    cache = Cache(tmp_path / "c.sqlite")

    async def go():
        w = CacheWriter(cache)
        task = asyncio.ensure_future(w.put(_entry("paid")))
        await asyncio.sleep(0)  # queued ...
        task.cancel()  # ... and its caller gone before the batch is written
        with pytest.raises(asyncio.CancelledError):
            await task
        await w.aclose()

    asyncio.run(go())
    assert cache.get("paid") is not None


def test_wal_checkpoints_run_in_the_writer_thread(env, writers, monkeypatch):
    """The commits in the loop's thread never checkpoint (an fsync): the writer's thread does, on a
    connection of its own; SQLite's own checkpoints are back after the run."""
    monkeypatch.setattr(writer_mod, "CHECKPOINT_EVERY", 50)
    done = []
    orig = CacheWriter._wal_checkpoint

    def spy(self):
        done.append(threading.current_thread().name)
        return orig(self)

    monkeypatch.setattr(CacheWriter, "_wal_checkpoint", spy)
    path = env / "c.sqlite"
    Cache(path).put(_entry("warm-up"))
    with StubServer(latency=0.005) as srv:
        client = fast(f"openai/m@{srv.openai_url}", concurrency=16, cache_path=path)
        client.run([Request(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(150)], progress=False)
    assert done and all(name.startswith("medeval-cache") for name in done)
    assert client.cache._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
    assert len(Cache(path)) == 151


@pytest.mark.parametrize("mode,inline", [("use", True), ("use", False), ("refresh", True)])
def test_a_slot_never_holds_more_than_one_call_sent_or_paid_but_not_committed(tmp_path, monkeypatch, mode,
                                                                               inline):
    """A call frees its slot once its reply is queued for the cache; the next call in that slot sends only
    after that reply is committed (its lease take comes after it, or, retries and ``refresh`` runs without
    leases, it waits for the writer's barrier). So calls sent + replies paid but not committed <= concurrency
    at every send: what a kill -9 can lose. Retried attempts (429s) and slow commits, in the loop's thread or
    in the writer's, included."""
    import random

    from medeval_kit.llm.errors import ProviderError
    from medeval_kit.llm.execute import Client
    from medeval_kit.llm.providers import Completion, Provider

    concurrency, state = 4, {"sent": 0, "uncommitted": 0, "worst": 0, "sends": 0}
    lock = threading.Lock()
    orig_put = CacheWriter.put_nowait

    def put_nowait(self, entry):
        with lock:
            state["uncommitted"] += 1
        return orig_put(self, entry)

    monkeypatch.setattr(CacheWriter, "put_nowait", put_nowait)
    orig_write = CacheWriter._write

    def slow_write(self, puts, rels, takes, strict=False):  # commits that take a while
        time.sleep(0.002)
        errs, took = orig_write(self, puts, rels, takes, strict)
        with lock:  # committed (in the loop's thread or the writer's)
            state["uncommitted"] -= sum(1 for e in errs if e is None)
        return errs, took

    monkeypatch.setattr(CacheWriter, "_write", slow_write)
    orig_init = CacheWriter.__init__
    monkeypatch.setattr(CacheWriter, "__init__", lambda self, cache, **kw: orig_init(self, cache, inline=inline))
    rng = random.Random(3)

    class Fake(Provider):
        uses_network = True

        async def acomplete(self, request):
            state["sends"] += 1
            state["worst"] = max(state["worst"], state["sent"] + 1 + state["uncommitted"])
            state["sent"] += 1
            try:
                await asyncio.sleep(rng.uniform(0, 0.004))
                if rng.random() < 0.4:
                    raise ProviderError("HTTP 429: slow down", retryable=True, retry_after=0.0, status=429)
                return Completion(text="ok", prompt_tokens=1, completion_tokens=1)
            finally:
                state["sent"] -= 1

    client = Client("openai/m@http://127.0.0.1:9/v1", cache_mode=mode, cache_path=tmp_path / "c.sqlite",
                    concurrency=concurrency, backoff_base=0.0, backoff_max=0.0, max_retries=30)
    client._providers[str(client.spec)] = Fake(client.spec)
    out = client.run([Request(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(300)], progress=False)
    assert [r.error for r in out if r.error or r.cache_error] == []
    assert state["sends"] > 400  # retries happened
    assert state["worst"] <= concurrency, state
    assert len(Cache(tmp_path / "c.sqlite")) == 300


def test_a_run_starts_a_window_of_calls_not_one_task_per_request(tmp_path, monkeypatch):
    """At most WINDOW x concurrency calls are started and unfinished at once (the garbage collector scans
    them all at each full collection), in request order, and every request is answered, retries included."""
    import random

    from medeval_kit.llm import calls
    from medeval_kit.llm.errors import ProviderError
    from medeval_kit.llm.execute import Client
    from medeval_kit.llm.providers import Completion, Provider

    state = {"alive": 0, "most": 0, "order": []}
    orig_run = calls.Call.run

    async def run(self):
        state["alive"] += 1
        state["most"] = max(state["most"], state["alive"])
        state["order"].append(self.request.messages[0]["content"])
        try:
            return await orig_run(self)
        finally:
            state["alive"] -= 1

    monkeypatch.setattr(calls.Call, "run", run)
    rng = random.Random(1)

    class Fake(Provider):
        uses_network = True

        async def acomplete(self, request):
            await asyncio.sleep(rng.uniform(0, 0.002))
            if rng.random() < 0.2:
                raise ProviderError("HTTP 500: oops", retryable=True, status=500)
            return Completion(text="ok", prompt_tokens=1, completion_tokens=1)

    client = Client("openai/m@http://127.0.0.1:9/v1", cache_path=tmp_path / "c.sqlite", concurrency=3,
                    backoff_base=0.001, backoff_max=0.002, max_retries=30)
    client._providers[str(client.spec)] = Fake(client.spec)
    reqs = [Request(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(200)]
    out = client.run(reqs, progress=False)
    assert all(r.error is None for r in out) and client.last_run.n_retries > 20
    assert 3 < state["most"] <= calls.WINDOW * 3
    assert state["order"] == [f"q{i}" for i in range(200)]


def test_http_pools_follow_the_calls_in_flight(env):
    """httpcore scans every connection of a pool on each request: one pool per 16 calls in flight (at
    least 4, or ``n_pools``), all sharing one TLS context (building one reads the CA store)."""
    from medeval_kit.llm.providers.http import ssl_context

    async def pools(concurrency, **kw):
        client = fast("openai/m@http://127.0.0.1:9/v1", concurrency=concurrency, cache_mode="off", **kw)
        p = client.provider(client.spec)
        p.concurrency = concurrency  # as Run sets it
        await p.open()
        try:
            return len(p.http)
        finally:
            await p.aclose()

    assert asyncio.run(pools(8)) == 4 and asyncio.run(pools(64)) == 4 and asyncio.run(pools(256)) == 16
    assert asyncio.run(pools(256, n_pools=2)) == 2
    assert ssl_context() is ssl_context()


def test_known_keys_are_read_at_each_redaction(monkeypatch):
    """The known keys are memoised on a snapshot of the environment: a key set or changed later is still
    redacted, one removed no longer is."""
    from medeval_kit.llm.secrets import known_keys, redact

    monkeypatch.setenv("OPENAI_API_KEY", "sk-first-value-123456")
    assert "sk-first-value-123456" in known_keys()
    monkeypatch.setenv("MY_SERVICE_API_KEY", "zz-later-secret-98765")
    assert redact("a zz-later-secret-98765 b", patterns=False) == "a *** b"
    monkeypatch.setenv("MY_SERVICE_API_KEY", "yy-changed-secret-4321")
    assert "zz-later-secret-98765" not in known_keys() and "yy-changed-secret-4321" in known_keys()
    monkeypatch.delenv("MY_SERVICE_API_KEY")
    assert "yy-changed-secret-4321" not in known_keys()


# --------------------------------------------------------------------------- CPU per call (issue: ours vs bare httpx2)
def test_a_slot_handed_over_takes_its_lease_in_the_batch_of_the_last_reply(tmp_path, writers):
    """A call handed a busy slot queues its lease take at once, in the batch that commits the reply of the call
    that freed the slot: one batch per call, not two (a reply, then a take a turn of the loop later), and no
    turn of the event loop between getting the slot and sending."""
    from medeval_kit.llm.execute import Client
    from medeval_kit.llm.providers import Completion, Provider

    sent: list[int] = []

    class Fake(Provider):
        uses_network = True

        async def acomplete(self, request):
            sent.append(len(Cache(tmp_path / "c.sqlite")))  # replies committed when this one is sent
            await asyncio.sleep(0.001)
            return Completion(text="ok", prompt_tokens=1, completion_tokens=1)

    client = Client("openai/m@http://127.0.0.1:9/v1", cache_path=tmp_path / "c.sqlite", concurrency=1)
    client._providers[str(client.spec)] = Fake(client.spec)
    n = 30
    out = client.run([Request(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(n)], progress=False)
    assert all(r.error is None and r.cache_error is None for r in out)
    [w] = writers
    assert w.n_batches <= n + 2, w.n_batches
    assert sent == list(range(n))  # each call sent only once the reply before it was committed
    assert _leases(tmp_path / "c.sqlite") == 0


def test_slots_call_granted_only_when_a_busy_slot_is_handed_over():
    from medeval_kit.llm.limits import Slots

    async def go():
        slots, got = Slots(1), []
        await slots.acquire(granted=lambda: got.append("free"))  # free at once: no hand-over
        waiter = asyncio.ensure_future(slots.acquire(granted=lambda: got.append("handed")))
        await asyncio.sleep(0)
        assert got == []
        slots.release()
        assert got == ["handed"] and not waiter.done()  # called before the waiter resumes
        await waiter
        slots.release()
        return slots._free

    assert asyncio.run(go()) == 1


def test_a_lease_take_queued_for_a_call_that_never_sends_is_released(tmp_path):
    """A call cancelled between the hand-over of its slot and its lease take: the take is written all the
    same (it was queued), then released, so another process need not wait for the lease to expire."""
    from medeval_kit.llm.leases import Leases

    path = tmp_path / "c.sqlite"
    cache = Cache(path)
    cache.put(_entry("warm-up"))

    async def go():
        w = CacheWriter(cache)
        leases = Leases(cache, w, ttl=60)
        fut = leases.take_soon("k")
        leases.drop(fut, "k")
        state, _, _ = await asyncio.shield(fut)
        await w.aclose()
        leases.stop()
        return state

    assert asyncio.run(go()) == "mine"
    assert _leases(path) == 0


@pytest.mark.skipif(sys.version_info < (3, 11), reason="3.10 keeps asyncio.wait_for per call")
def test_the_safety_net_ends_a_call_the_provider_never_answers(tmp_path, monkeypatch):
    """One timer per run (not one per call) cancels a call past the client's timeout + the safety margin: the
    attempt fails as a timeout (retried, counted as possibly billed), and the run ends."""
    from medeval_kit.llm import calls
    from medeval_kit.llm.execute import Client
    from medeval_kit.llm.providers import Completion, Provider

    monkeypatch.setattr(calls, "SAFETY_TIMEOUT_S", 0.05)
    monkeypatch.setattr(calls, "DEADLINE_TICK_S", 0.02)
    attempts = []

    class Hangs(Provider):
        uses_network = True

        async def acomplete(self, request):
            attempts.append(request.messages[0]["content"])
            if request.messages[0]["content"] == "hang":
                await asyncio.Event().wait()  # a provider whose own timeouts failed
            await asyncio.sleep(0.01)
            return Completion(text="ok", prompt_tokens=1, completion_tokens=1)

    client = Client("openai/m@http://127.0.0.1:9/v1", cache_path=tmp_path / "c.sqlite", concurrency=2,
                    timeout=0.05, max_retries=1, backoff_base=0.0, backoff_max=0.0)
    client._providers[str(client.spec)] = Hangs(client.spec)
    t0 = time.perf_counter()
    out = client.run([Request(messages=[{"role": "user", "content": c}]) for c in ("hang", "fine")],
                     progress=False)
    assert time.perf_counter() - t0 < 5
    assert out[1].error is None and out[1].text == "ok"
    assert out[0].error is not None and "timeout" in out[0].error and out[0].attempts == 2
    assert attempts.count("hang") == 2 and client.last_run.n_unconfirmed == 2
    assert len(Cache(tmp_path / "c.sqlite")) == 1 and _leases(tmp_path / "c.sqlite") == 0


def test_the_stored_reply_is_the_body_as_received_and_its_request_hashes_to_its_key(env):
    """The reply body is stored as the server sent it (not decoded and encoded again), the canonical request
    as the text its key hashes (not encoded a second time)."""
    import hashlib
    import json

    with StubServer(latency=0.0) as srv:
        path = env / "c.sqlite"
        reqs = [Request(messages=[{"role": "user", "content": f"q{i} é"}]) for i in range(5)]
        fast(f"openai/m@{srv.openai_url}", cache_path=path).run(reqs, progress=False)
    rows = list(Cache(path).iter_entries())
    assert len(rows) == 5
    for row in rows:
        assert hashlib.sha256(row["request_json"].encode()).hexdigest() == row["key"]
        raw = json.loads(row["raw_json"])
        assert raw["choices"][0]["message"]["content"] == row["text"]


def test_a_body_escaping_a_key_unusually_is_encoded_again_and_redacted(monkeypatch):
    """A body written with escapes json.dumps never uses (``\\/``, ``\\u``) could hide a key from the
    redaction of its plain and JSON-escaped forms: such a body is decoded and encoded again before it is
    stored, so the key is found."""
    import json

    from medeval_kit.llm.providers import Completion
    from medeval_kit.llm.record import cache_entry
    from medeval_kit.llm.types import parse_model

    k = "abc/def/ghi-jkl/mno/123"
    monkeypatch.setenv("MY_SERVICE_API_KEY", k)
    for text in ('{"echo": "%s"}' % k.replace("/", "\\/"), '{"echo": "%s"}' % k.replace("a", "\\u0061")):
        c = Completion(text="ok", raw=json.loads(text), raw_text=text)
        entry = cache_entry("key", parse_model("openai/m"), "{}", c, 0.0, source="live")
        assert json.loads(entry["raw_json"]) == {"echo": "***"}, entry["raw_json"]
    plain = '{"echo": "%s"}' % k
    c = Completion(text="ok", raw=json.loads(plain), raw_text=plain)
    assert json.loads(cache_entry("key", parse_model("openai/m"), "{}", c, 0.0, source="live")["raw_json"]) \
        == {"echo": "***"}


def test_utcnow_keeps_its_format():
    import re
    from datetime import datetime, timezone

    from medeval_kit.llm.cache import utcnow

    before = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    stamps = [utcnow() for _ in range(2000)]
    after = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", s) for s in stamps)
    assert before <= stamps[0] and stamps == sorted(stamps) and stamps[-1] <= after
