"""Issue 20, LLM layer: leases with fencing (a paused process or one in another PID namespace never makes a
request paid twice), the call log the study runner reads, one budget for every process of a run (the run
ledger), and a 200 with an unreadable body retried at most once with every attempt counted.

Every network call goes to tests/stub_server.py on 127.0.0.1. Run with ``pytest -s`` to see the measured
paid-per-unique-request ratios and the per-seed budget figures.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from llm_helpers import env, fast, stub  # noqa: E402,F401
from llm_helpers import req as chat  # noqa: E402
from stub_server import StubServer  # noqa: E402

from medeval_kit.llm import Request, cost_of, get_client  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

GPT4O = "openai/gpt-4o"  # priced at 2.50 / 10.00 USD per 1M tokens in data/prices.yaml
SCHEMA = {"type": "object", "properties": {"label": {"enum": ["A", "B", "tie"]}}, "required": ["label"]}
ROOT = Path(__file__).resolve().parents[1]

# A client process: runs n requests "item {i}" (prefix: which set) against the stub; prints its RunStats as JSON.
CHILD = textwrap.dedent("""
    import json, sys
    from medeval_kit.llm import Request, get_client
    model, cache, n, conc, prefix, mode = sys.argv[1:7]
    n, conc = int(n), int(conc)
    max_tokens = [int(x) for x in sys.argv[7].split(",")] if len(sys.argv) > 7 else [64]
    client = get_client(model, cache_path=cache, cache_mode=mode, concurrency=conc, timeout=20,
                        backoff_base=0.01, backoff_max=0.05)
    reqs = [Request(messages=[{"role": "user", "content": f"{prefix} item {i}"}],
                    max_tokens=max_tokens[i % len(max_tokens)]) for i in range(n)]
    out = client.run(reqs, progress=False)
    st = client.last_run
    print(json.dumps({"n_called": st.n_called, "n_failed": st.n_failed, "n_from_peers": st.n_from_peers,
                      "n_skipped_budget": st.n_skipped_budget, "errors": sorted({str(r.error)[:80] for r in out
                                                                               if r.error})[:3]}))
""")


def _child_env(**extra: str) -> dict[str, str]:
    e = dict(os.environ, OPENAI_API_KEY="sk-test-not-a-real-key", PYTHONUNBUFFERED="1", **extra)
    e.pop("MEDEVAL_CACHE_MODE", None)
    e["PYTHONPATH"] = os.pathsep.join([p for p in [e.get("PYTHONPATH")] if p] + [str(ROOT)])
    return e


def _rows(path: Path) -> int:
    try:
        with sqlite3.connect(path, timeout=5) as con:
            return con.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.Error:
        return 0


def _leases(path: Path) -> int:
    try:
        with sqlite3.connect(path, timeout=5) as con:
            return con.execute("SELECT COUNT(*) FROM leases").fetchone()[0]
    except sqlite3.Error:
        return 0


def _paid(srv: StubServer) -> int:
    with srv.state.lock:
        return sum(srv.state.successes.values())


def _result(proc: subprocess.Popen, timeout: float) -> dict:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"a client process did not finish within {timeout:.0f} s: {err[-2000:]}")
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


# =========================================================================== 3. a paused process
def _stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()[0] in ("T", "t")


def _write_lock_free(path: Path) -> bool:
    con = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        con.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:  # database is locked
        return False
    finally:
        con.close()


def _pause_outside_a_write(proc: subprocess.Popen, path: Path, tries: int = 200) -> None:
    """SIGSTOP ``proc`` at a moment it holds no write lock on the cache ``path``. A process stopped inside a write
    transaction keeps SQLite's lock until it resumes (no other process can take a file lock over), so every other
    process's writes wait for it whatever the toolkit does; the finding is about paying twice, not that."""
    for _ in range(tries):
        proc.send_signal(signal.SIGSTOP)
        deadline = time.time() + 5
        while not _stopped(proc.pid) and time.time() < deadline:
            time.sleep(0.001)
        if _write_lock_free(path):
            return
        proc.send_signal(signal.SIGCONT)
        time.sleep(0.005)
    pytest.fail(f"the process held the cache's write lock at each of {tries} pauses")


def test_a_process_paused_past_its_leases_expiry_does_not_pay_again(tmp_path):
    """Finding 3: a process stopped (SIGSTOP) past its leases' expiry, then resumed, still sent the requests
    whose leases another process had taken over (848 paid calls for 600 unique requests)."""
    n, ttl, latency = 240, 2.0, 0.05
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    cache = tmp_path / "shared.sqlite"
    env = _child_env(MEDEVAL_LEASE_TTL=str(ttl))
    with StubServer(latency=latency) as srv:
        model = f"openai/m@{srv.openai_url}"
        args = [sys.executable, str(script), model, str(cache), str(n), "8", "q", "use"]
        p1 = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        while _rows(cache) < n // 4 and time.time() < deadline and p1.poll() is None:
            time.sleep(0.01)
        _pause_outside_a_write(p1, cache)
        try:
            time.sleep(4 * latency)  # the requests on the wire at the pause are answered (and paid)
            in_flight = _paid(srv) - _rows(cache)  # paid, not yet stored: process 2 must pay them again
            assert 0 < _rows(cache) < n
            t0 = time.time()
            p2 = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            second = _result(p2, 45)
            took = time.time() - t0
            attempts = srv.stats()["attempts"]
        finally:
            p1.send_signal(signal.SIGCONT)
        first = _result(p1, 45)
        # sent by process 1 after it resumed: calls that had passed the fencing check when it was paused
        # (on their way to the socket, inside the HTTP stack), the rest of "in flight at the pause"
        after_resume = srv.stats()["attempts"] - attempts
        paid = _paid(srv)
        max_per = max(srv.successes.values())
    in_flight += after_resume
    print(f"\nSIGSTOP: {paid} paid calls for {n} unique requests ({paid / n:.3f} per unique); "
          f"{in_flight} in flight at the pause ({after_resume} of them sent only after the resume); process 2 "
          f"took {took:.1f} s (TTL {ttl} s); called {first['n_called']} + {second['n_called']}, from peers "
          f"{first['n_from_peers']} + {second['n_from_peers']}")
    assert first["n_failed"] == second["n_failed"] == 0
    assert after_resume <= 8  # at most the concurrency: nothing queued behind it is sent after the resume
    assert paid <= n + in_flight and max_per <= 2
    assert took < ttl + 20  # the waiter took over the expired leases, it did not wait for the paused process
    assert _leases(cache) == 0


# =========================================================================== 4. another PID namespace
# Run inside the new PID namespace: fork until the child's pid there is a pid no process has out here
# (``/proc`` is still the outer one), so that a pid-based liveness check would find the holder "dead".
NS_WRAPPER = textwrap.dedent("""
    import os, sys
    while True:
        pid = os.fork()
        if pid == 0:
            if os.path.exists(f"/proc/{os.getpid()}"):
                os._exit(97)
            os.execv(sys.executable, [sys.executable] + sys.argv[1:])
        _, status = os.waitpid(pid, 0)
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 97):
            sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)
""")


def _unshare_works() -> str | None:
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    try:
        r = subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unshare failed: {exc}"
    return None if r.returncode == 0 else f"unshare --pid --fork failed (needs root): {r.stderr.decode()[:200]}"


def test_a_holder_in_another_pid_namespace_is_not_taken_over(tmp_path):
    """Finding 4: a live process in another PID namespace of the same host looked dead (its pid is not
    ours), so its leases were taken: 1.13-1.61 paid calls per unique request."""
    why = _unshare_works()
    if why:
        pytest.skip(why)
    n = 200
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    cache = tmp_path / "shared.sqlite"
    env = _child_env(MEDEVAL_LEASE_TTL="3")
    with StubServer(latency=0.03) as srv:
        model = f"openai/m@{srv.openai_url}"
        args = [sys.executable, str(script), model, str(cache), str(n), "8", "q", "use"]
        inside = subprocess.Popen(["unshare", "--pid", "--fork", sys.executable, "-c", NS_WRAPPER, *args[1:]], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        while _leases(cache) == 0 and time.time() < deadline and inside.poll() is None:
            time.sleep(0.01)
        outside = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        a, b = _result(inside, 50), _result(outside, 50)
        paid = _paid(srv)
        max_per = max(srv.successes.values())
    print(f"\nPID namespaces: {paid} paid calls for {n} unique requests ({paid / n:.3f} per unique); called "
          f"{a['n_called']} inside + {b['n_called']} outside, from peers {a['n_from_peers']} + {b['n_from_peers']}")
    assert a["n_failed"] == b["n_failed"] == 0
    assert b["n_from_peers"] > 0  # they did overlap
    assert paid == n and max_per == 1


def test_only_a_holder_proven_gone_is_freed_before_its_expiry(stub, env):
    """A lease of a process of this kernel boot and PID namespace that no longer runs is free at once; a
    lease naming another namespace, machine or an unknown owner form waits for its expiry."""
    from medeval_kit.llm import Cache
    from medeval_kit.paths import cache_path

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = Cache.lease_owner("x", pid=dead.pid)
    tag, boot, ns, pid = gone.split("|")
    assert not Cache._owner_alive(gone) and Cache._owner_alive(Cache.lease_owner("x"))
    assert Cache._owner_alive("|".join([tag, boot, "pid:[1]", pid]))  # another PID namespace
    assert Cache._owner_alive("|".join([tag, "another-boot", ns, pid]))  # another machine or boot
    assert Cache._owner_alive(f"{os.uname().nodename}|{dead.pid}|x")  # the old host|pid form: expiry only
    model = f"openai/m@{stub.openai_url}"
    r = chat("dead owner")
    other = Cache(cache_path())
    other.take_leases(fast(model).keys([r]), gone, ttl=600.0)
    t0 = time.time()
    out = fast(model).run([r], progress=False)
    assert out[0].error is None and stub.stats()["successes"] == 1 and time.time() - t0 < 10
    assert _leases(cache_path()) == 0


# =========================================================================== 6. the call log
def _log_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_run_appends_one_line_to_the_call_log(stub, env, monkeypatch):
    """Finding 6: failed calls were invisible to the study runner. With MEDEVAL_CALL_LOG set every run
    appends one JSON line: requests, failures by (redacted) reason, parse failures, budget refusals, cost."""
    log_path = env / "calls.jsonl"
    monkeypatch.setenv("MEDEVAL_CALL_LOG", str(log_path))
    monkeypatch.setenv("OPENAI_BASE_URL", stub.openai_url)
    stub.queue("401full", "ok", "ok")
    client = fast(f"openai/m@{stub.openai_url}", concurrency=1)
    out = client.run([chat("a"), chat("b [[bad-json]]", schema=SCHEMA), chat("c")], progress=False)
    assert sum(r.error is not None for r in out) == 1
    client.run([chat("b [[bad-json]]", schema=SCHEMA), chat("c")], progress=False)  # all from the cache
    broke = fast(GPT4O, budget_usd=0.0)  # every request refused by the budget
    broke.run([chat("d"), chat("e")], progress=False)
    lines = _log_lines(log_path)
    assert len(lines) == 3
    first, cached, refused = lines
    assert set(first) == {"model", "n_requests", "n_failed", "n_parse_failed", "n_skipped_budget",
                          "failed_reasons", "cost_usd"}
    assert first["model"] == f"openai/m@{stub.openai_url}"
    assert (first["n_requests"], first["n_failed"], first["n_parse_failed"], first["n_skipped_budget"]) == (3, 1, 1, 0)
    assert first["failed_reasons"] == {"401 unauthorized": 1}
    assert (cached["n_requests"], cached["n_failed"], cached["n_parse_failed"]) == (2, 0, 1)
    assert cached["failed_reasons"] == {} and cached["cost_usd"] == 0.0
    assert refused["model"] == GPT4O and refused["n_failed"] == refused["n_skipped_budget"] == 2
    assert refused["failed_reasons"] == {"budget": 2} and refused["cost_usd"] == 0.0
    assert "sk-test" not in log_path.read_text() and "not-a-real-key" not in log_path.read_text()


def test_a_call_log_that_cannot_be_written_does_not_break_the_run(stub, env, monkeypatch, caplog):
    monkeypatch.setenv("MEDEVAL_CALL_LOG", str(env))  # a folder: not writable as a file
    with caplog.at_level(logging.WARNING, logger="medeval_kit"):
        out = fast(f"openai/m@{stub.openai_url}").run([chat("a")], progress=False)
    assert out[0].error is None
    assert any("MEDEVAL_CALL_LOG" in r.getMessage() or "call log" in r.getMessage() for r in caplog.records)


def test_concurrent_clients_write_whole_lines(stub, env, monkeypatch, tmp_path):
    log_path = tmp_path / "calls.jsonl"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    e = _child_env(MEDEVAL_CALL_LOG=str(log_path))
    model = f"openai/m@{stub.openai_url}"
    procs = [subprocess.Popen([sys.executable, str(script), model, str(tmp_path / f"c{i}.sqlite"), "5", "4", f"p{i}",
                               "use"], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(4)]
    for p in procs:
        _result(p, 60)
    lines = _log_lines(log_path)
    assert len(lines) == 4 and all(x["n_requests"] == 5 and x["n_failed"] == 0 for x in lines)


# =========================================================================== 5. one budget for a whole run
def _billed(srv: StubServer, since: int = 0) -> float:
    with srv.state.lock:
        rows = list(srv.state.billed[since:])
    return sum(cost_of(GPT4O, pt, ct) for _, pt, ct, _ in rows)


# A client process that serves many runs: per line of stdin (a JSON run: env, n, conc, prefix, max_tokens), a
# new client with that environment (as a notebook of a study run reads it), one run, one JSON line out.
SERVING_CHILD = textwrap.dedent("""
    import json, os, sys
    from medeval_kit.llm import Request, get_client
    model, cache = sys.argv[1:3]
    for line in sys.stdin:
        run = json.loads(line)
        for k in ("MEDEVAL_RUN_ID", "MEDEVAL_RUN_BUDGET_USD"):
            os.environ.pop(k, None)
        os.environ.update(run["env"])
        client = get_client(model, cache_path=cache, cache_mode="off", concurrency=run["conc"], timeout=20,
                            backoff_base=0.01, backoff_max=0.05)
        mt = run["max_tokens"]
        reqs = [Request(messages=[{"role": "user", "content": f"{run['prefix']} item {i}"}],
                        max_tokens=mt[i % len(mt)]) for i in range(run["n"])]
        client.run(reqs, progress=False)
        st = client.last_run
        print(json.dumps({"n_called": st.n_called, "n_failed": st.n_failed,
                          "n_skipped_budget": st.n_skipped_budget}), flush=True)
""")


def test_a_run_budget_holds_across_three_processes(tmp_path):
    """Finding 5: `medeval run --jobs 3` with a cap in each notebook spent $0.115 for a $0.05 cap. With
    MEDEVAL_RUN_ID and MEDEVAL_RUN_BUDGET_USD set, every client of every process shares one ledger in
    the cache database: the total stays under the cap, and a cap twice the true total refuses nothing.

    The three processes serve all 15 runs (5 seeds x free, tight and roomy), each run's three clients
    started together, one per process: starting 45 processes took most of this test's time."""
    from medeval_kit.llm.ledger import run_spend

    script = tmp_path / "child.py"
    script.write_text(SERVING_CHILD)
    cache = tmp_path / "c.sqlite"
    figures = []
    with StubServer(latency=0.002, usage="bytes") as srv:
        procs = [subprocess.Popen([sys.executable, str(script), GPT4O, str(cache)],
                                  env=_child_env(OPENAI_BASE_URL=srv.openai_url), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
        try:
            for seed in range(5):
                rng = random.Random(seed)
                sizes = [rng.randrange(5, 25) for _ in range(3)]
                concs = [rng.randrange(1, 17) for _ in range(3)]
                max_tokens = [rng.choice([16, 64, 256, 512]) for _ in range(7)]

                def run3(tag: str, cap: float | None) -> tuple[float, list[dict], str]:
                    run_id = os.urandom(8).hex()
                    env = {"MEDEVAL_RUN_ID": run_id, "MEDEVAL_RUN_BUDGET_USD": repr(cap)} if cap is not None else {}
                    mark = len(srv.state.billed)
                    for j, p in enumerate(procs):  # the three clients start together
                        p.stdin.write(json.dumps({"env": env, "n": sizes[j], "conc": concs[j],  # noqa: B023
                                                  "prefix": f"s{seed}-p{j}", "max_tokens": max_tokens}) + "\n")  # noqa: B023
                        p.stdin.flush()
                    res = []
                    for p in procs:
                        line = p.stdout.readline()
                        if not line:
                            p.kill()
                            pytest.fail(f"a client process died: {p.stderr.read()[-3000:]}")
                        res.append(json.loads(line))
                    return _billed(srv, mark), res, run_id

                true_total, res, _ = run3("free", None)
                assert all(r["n_failed"] == 0 for r in res)
                cap = true_total * rng.uniform(0.1, 0.9)
                billed, res, run_id = run3("tight", cap)
                spend = run_spend(run_id, cache)
                refused = sum(r["n_skipped_budget"] for r in res)
                assert billed <= cap + 1e-12, (seed, billed, cap)
                assert spend["spent_usd"] + spend["unconfirmed_usd"] >= billed - 1e-9
                assert spend["spent_usd"] + spend["reserved_usd"] + spend["unconfirmed_usd"] <= cap + 1e-9
                assert spend["n_refused"] == refused > 0 and spend["cap_usd"] == pytest.approx(cap)
                billed2, res2, run_id2 = run3("roomy", 2 * true_total)
                refused2 = sum(r["n_skipped_budget"] for r in res2)
                assert refused2 == 0 and billed2 <= 2 * true_total
                figures.append({"seed": seed, "true_total": round(true_total, 5), "cap": round(cap, 5),
                                "billed": round(billed, 5), "refused": refused,
                                "roomy_cap": round(2 * true_total, 5), "roomy_billed": round(billed2, 5),
                                "roomy_refused": refused2})
        finally:
            for p in procs:
                p.stdin.close()
            for p in procs:
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
    print("\nrun budget, 3 processes per run:\n" + "\n".join(json.dumps(f) for f in figures))


def test_the_ledger_table_is_created_only_when_a_run_budget_is_used(stub, env, monkeypatch):
    from medeval_kit.paths import cache_path

    monkeypatch.setenv("MEDEVAL_RUN_ID", "ab12")  # a run without a budget: no ledger
    monkeypatch.delenv("MEDEVAL_RUN_BUDGET_USD", raising=False)
    fast(f"openai/m@{stub.openai_url}").run([chat("a")], progress=False)
    with sqlite3.connect(cache_path()) as con:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert not any("ledger" in t for t in tables)


def test_run_budget_and_client_budget_both_apply(stub, env, monkeypatch):
    from medeval_kit.llm.ledger import run_spend

    monkeypatch.setenv("OPENAI_BASE_URL", stub.openai_url)
    stub.set(usage="bytes")
    monkeypatch.setenv("MEDEVAL_RUN_ID", "cd34")
    monkeypatch.setenv("MEDEVAL_RUN_BUDGET_USD", "0.004")
    reqs = [chat(f"q{i}", max_tokens=100) for i in range(10)]  # ~$0.0014 ceiling each
    c1 = fast(GPT4O, cache_mode="off", budget_usd=1.0)
    c1.run(reqs[:5], progress=False)
    c2 = fast(GPT4O, cache_mode="off")
    c2.run(reqs[5:], progress=False)
    spend = run_spend("cd34")
    assert _billed(stub) <= 0.004 + 1e-12
    assert c1.last_run.n_skipped_budget + c2.last_run.n_skipped_budget == spend["n_refused"] >= 7
    assert spend["spent_usd"] == pytest.approx(_billed(stub))
    monkeypatch.setenv("MEDEVAL_RUN_BUDGET_USD", "1.0")
    monkeypatch.setenv("MEDEVAL_RUN_ID", "ef56")
    c3 = fast(GPT4O, cache_mode="off", budget_usd=0.0)  # its own cap refuses even though the run has room
    c3.run(reqs[:1], progress=False)
    assert c3.last_run.n_skipped_budget == 1


def test_batch_submissions_count_against_the_run_budget(tmp_path, monkeypatch):
    """A batch is billed when the provider runs it: under a run budget its ceiling counts as unconfirmed in
    the ledger from submission until it is collected."""
    from medeval_kit.llm.ledger import run_spend

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    reqs = [Request(messages=[{"role": "user", "content": f"batch item {i}"}]) for i in range(20)]  # max_tokens 512
    cache = tmp_path / "c.sqlite"
    with StubServer(batch_polls=1) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_url)
        monkeypatch.setenv("MEDEVAL_RUN_ID", "b1")
        monkeypatch.setenv("MEDEVAL_RUN_BUDGET_USD", "0.01")
        with pytest.raises(Exception, match="budget: batch not submitted"):
            get_client(GPT4O, cache_path=cache).submit_batch(reqs)  # 20 x ~$0.0027 at the batch price > $0.01
        assert srv.state.batch_creates == 0 and run_spend("b1", cache)["unconfirmed_usd"] == 0
        monkeypatch.setenv("MEDEVAL_RUN_ID", "b2")
        monkeypatch.setenv("MEDEVAL_RUN_BUDGET_USD", "1.0")
        client = get_client(GPT4O, cache_path=cache)
        client.submit_batch(reqs)
        assert run_spend("b2", cache)["unconfirmed_usd"] > 0.02  # counted from submission ...
        out = client.run_batch(reqs, poll_interval=0.01, progress=False)
    assert all(r.error is None for r in out)
    spend = run_spend("b2", cache)
    assert spend["unconfirmed_usd"] == 0 and spend["reserved_usd"] == 0  # ... and settled on collection
    assert spend["spent_usd"] == pytest.approx(sum(cost_of(GPT4O, r.usage["prompt_tokens"],
                                                           r.usage["completion_tokens"], batch=True) for r in out))


# =========================================================================== 10. unreadable 200s
@pytest.mark.parametrize("fault", ["malformed", "badutf8"])
def test_an_unreadable_200_is_retried_once_and_every_attempt_is_counted(stub, env, monkeypatch, fault):
    """Finding 10: a 200 whose body could not be read was billed three times (retried twice)."""
    monkeypatch.setenv("OPENAI_BASE_URL", stub.openai_url)
    stub.queue(*[fault] * 5)
    r = chat("q", max_tokens=50)
    client = fast(GPT4O, budget_usd=1.0)
    out = client.run([r], progress=False)
    assert out[0].error and out[0].attempts == 2 and stub.stats()["attempts"] == 2
    ceiling = client.provider(client.spec).prompt_token_bound(r) * 2.5e-6 + 50 * 10e-6
    st = client.last_run
    assert st.n_unconfirmed == 2 and st.unconfirmed_usd == pytest.approx(2 * ceiling)
    assert client.budget.unconfirmed == pytest.approx(2 * ceiling)
    assert "unconfirmed" in st.summary()
    stub.queue(*[fault] * 5)
    bare = fast(GPT4O, cache_mode="off")  # no budget: the run's tally still counts both attempts
    bare.run([r], progress=False)
    assert bare.last_run.n_unconfirmed == 2 and bare.last_run.unconfirmed_usd == pytest.approx(2 * ceiling)


def test_an_unusable_200_that_reports_its_usage_is_counted_at_that_usage(stub, env, monkeypatch):
    """A 200 without choices still says what it cost: each attempt is spent at that usage (not unconfirmed)."""
    monkeypatch.setenv("OPENAI_BASE_URL", stub.openai_url)
    stub.queue("nochoices", "nochoices", "ok")
    client = fast(GPT4O, budget_usd=1.0)
    out = client.run([chat("q", max_tokens=50)], progress=False)
    assert out[0].error and out[0].attempts == 2 and stub.stats()["attempts"] == 2
    st, billed = client.last_run, _billed(stub)
    assert billed > 0 and st.cost_usd == pytest.approx(billed) and client.budget.spent == pytest.approx(billed)
    assert st.n_unconfirmed == 0 and client.budget.unconfirmed == 0
