"""Speed of the LLM layer, as side-by-side ratios (printed, never asserted).

1. Execution against the stub (100 ms latency, N = 2,000, concurrency 64), in interleaved rounds, medians:
   efficiency = (N x latency / concurrency) / wall, target >= 0.9; our throughput divided by a baseline of
   raw ``openai.AsyncOpenAI`` calls under an ``asyncio.Semaphore``, target >= 0.9, and by bare ``httpx2``
   posts (the floor of the HTTP stack), target >= 0.95, over one connection pool and over as many pools as
   our client uses (one per 16 calls in flight). Each line also gives the client's CPU per request and the
   stub's: on a machine with few cores the client's CPU, not the stub, bounds the wall
   (``--stub-workers N`` serves one port from N processes).
2. Warm-cache throughput (hits/s), target >= 5,000.
3. Local model: tokens/s through our client / tokens/s of raw ``llama_cpp`` in the same process, target >= 0.9.
4. Faults with DEFAULT client settings: 1,000 requests against the stub (100 ms latency) with 20% 429
   (Retry-After 0.05 s), 10% 500 and 5% timeouts (the stub holds the connection 2 s, then drops it),
   wall time divided by the same run without faults, target <= 3.

    python benchmarks/bench_llm.py [--n 2000] [--latency 0.1] [--concurrency 64] [--rounds 3] [--stub-workers N]
                                   [--skip-sdk] [--skip-warm] [--skip-local] [--skip-faults]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from medeval_kit.llm import Cache, Request, get_client  # noqa: E402


def start_stub(latency: float, *args: str, workers: int = 1) -> tuple[subprocess.Popen, str]:
    """The stub in its own process: the lean asyncio server (in ``workers`` processes on one port), or with
    ``args`` (faults) the threaded one."""
    cmd = [sys.executable, str(ROOT / "tests" / "stub_server.py"), "--latency", str(latency)]
    lean = ["--asyncio"] + (["--workers", str(workers)] if workers > 1 else [])
    proc = subprocess.Popen(cmd + (list(args) if args else lean), stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    assert line.startswith("READY "), line
    return proc, line.split()[1]


def stub_pids(proc: subprocess.Popen) -> list[int]:
    """The stub's processes: the one started and its workers (Linux; else the one started)."""
    try:
        kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    except OSError:
        kids = []
    return [proc.pid, *map(int, kids)]


def cpu_of(pids: list[int]) -> float:
    """CPU seconds (user + system) used so far by the processes ``pids`` (0 where /proc is unreadable)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            pass
    return total


def own_cpu() -> float:
    """CPU seconds used so far by this process, all its threads."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def make_requests(n: int, tag: str) -> list[Request]:
    return [Request(messages=[{"role": "user", "content": f"{tag} item {i}"}], max_tokens=16) for i in range(n)]


async def baseline(url: str, requests: list[Request], concurrency: int) -> float:
    import openai

    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-bench", max_retries=0, timeout=60)
    sem = asyncio.Semaphore(concurrency)

    async def one(r: Request):
        async with sem:
            return await client.chat.completions.create(model="bench", messages=r.messages,
                                                        max_tokens=r.max_tokens, temperature=0.0)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(r) for r in requests))
    wall = time.perf_counter() - t0
    await client.close()
    return wall


async def baseline_http(url: str, requests: list[Request], concurrency: int, pools: int = 1) -> float:
    """The floor of the stack: bare httpx2 posts (no SDK objects, no cache) under a Semaphore, over one
    connection pool, or round-robin over ``pools`` pools (as our client spreads its calls)."""
    import httpx2

    sem = asyncio.Semaphore(concurrency)
    clients = [httpx2.AsyncClient(base_url=url + "/v1", headers={"authorization": "Bearer sk-bench"}, timeout=60,
                                  limits=httpx2.Limits(max_connections=1024, max_keepalive_connections=1024))
               for _ in range(pools)]
    turn = itertools.cycle(clients)
    try:
        async def one(r: Request):
            async with sem:
                resp = await next(turn).post("/chat/completions", json={
                    "model": "bench", "messages": r.messages, "max_tokens": r.max_tokens, "temperature": 0.0})
                return resp.json()

        t0 = time.perf_counter()
        await asyncio.gather(*(one(r) for r in requests))
        return time.perf_counter() - t0
    finally:
        for c in clients:
            await c.aclose()


def bench_execution(n: int, latency: float, concurrency: int, rounds: int, workers: int = 1,
                    sdk: bool = True) -> None:
    """Interleaved rounds of each client against one stub; median wall, efficiency, ratios, and the CPU
    each one and the stub spent per request (what bounds the wall on a machine with few cores)."""
    import statistics

    from medeval_kit.llm.providers.http import MIN_POOLS, POOL_SIZE

    pools = max(MIN_POOLS, -(-concurrency // POOL_SIZE))  # as our client splits its connections
    proc, url = start_stub(latency, workers=workers)
    pids = stub_pids(proc)
    names = (["raw SDK + Semaphore"] if sdk else []) + [
        "bare httpx2 + Semaphore", f"bare httpx2, {pools} pools", "ours (with cache writes)"]
    wall: dict[str, list[float]] = {k: [] for k in names}
    cpu: dict[str, list[float]] = {k: [] for k in names}
    stub_cpu: list[float] = []
    try:
        ideal = n * latency / concurrency
        with tempfile.TemporaryDirectory() as tmp:
            for k in range(rounds):
                for name in names:
                    reqs = make_requests(n, f"{name[:4]}{k}")
                    c0, s0 = own_cpu(), cpu_of(pids)
                    if name.startswith("raw SDK"):
                        w = asyncio.run(baseline(url, reqs, concurrency))
                    elif name.startswith("bare"):
                        w = asyncio.run(baseline_http(url, reqs, concurrency, 1 if "Semaphore" in name else pools))
                    else:
                        client = get_client(f"openai/bench@{url}/v1", cache_path=Path(tmp) / f"c{k}.sqlite",
                                            concurrency=concurrency)
                        t0 = time.perf_counter()
                        out = client.run(reqs, progress=False)
                        w = time.perf_counter() - t0
                        assert sum(r.error is None for r in out) == n
                    wall[name].append(w)
                    cpu[name].append((own_cpu() - c0) / n * 1e3)
                    stub_cpu.append((cpu_of(pids) - s0) / n * 1e3)
    finally:
        proc.terminate()
        proc.wait()
    med = {k: statistics.median(v) for k, v in wall.items()}
    o, h, hp = med["ours (with cache writes)"], med["bare httpx2 + Semaphore"], med[f"bare httpx2, {pools} pools"]
    print(f"[execution] N={n}, latency={latency * 1000:.0f} ms, concurrency={concurrency}, ideal wall {ideal:.2f} s, "
          f"median of {rounds} interleaved rounds; stub: {workers} process(es), {os.cpu_count()} cores")
    for name in names:
        note = {"ours (with cache writes)": "  (target >= 0.9)",
                "bare httpx2 + Semaphore": "  (floor of the HTTP stack on this machine)"}.get(name, "")
        print(f"  {name + ':':27s} wall {med[name]:6.2f} s  efficiency {ideal / med[name]:.3f}  "
              f"client CPU {statistics.median(cpu[name]):.2f} ms/req{note}")
    if sdk:
        print(f"  throughput ratio ours / raw SDK = {med['raw SDK + Semaphore'] / o:.3f}  (target >= 0.9)")
    print(f"  throughput ratio ours / bare httpx2 = {h / o:.3f} (target >= 0.95); ours / bare httpx2 over "
          f"{pools} pools = {hp / o:.3f}")
    sc = statistics.median(stub_cpu)
    floor = n * min(statistics.median(cpu[k]) for k in names if k.startswith("bare")) / 1e3
    print(f"  stub CPU {sc:.2f} ms/req: the stub alone could serve {1e3 / sc:,.0f} req/s per core; the ideal needs "
          f"{concurrency / latency:,.0f} req/s. One client process (one core) needs >= {floor:.2f} s at the CPU per "
          f"request of the cheaper bare httpx2: efficiency <= {min(1.0, ideal / floor):.2f} whatever the stub")
    print("  all rounds: " + "; ".join(f"{k} {['%.2f' % x for x in v]}" for k, v in wall.items()))


def bench_warm_cache(n: int) -> None:
    schema = {"type": "object", "properties": {"label": {"enum": ["A", "B", "tie"]}}, "required": ["label"]}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "warm.sqlite"
        reqs = [Request(messages=[{"role": "user", "content": f"warm item {i}"}], schema=schema,
                        model="openai/gpt-4o") for i in range(n)]
        cache = Cache(path)
        cache.put_many([{"key": r.key(), "provider": "openai", "model": "gpt-4o", "request_json": "{}",
                         "text": '{"label": "A"}', "prompt_tokens": 10, "completion_tokens": 5}
                        for r in reqs])
        client = get_client("replay/openai/gpt-4o", cache_path=path)
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            out = client.run(reqs, progress=False)
            best = min(best, time.perf_counter() - t0)
        assert all(r.cached and r.parse_status == "ok" for r in out)
        print(f"[warm cache] {n} hits (schema-validated) in {best:.3f} s = {n / best:,.0f} hits/s  (target >= 5,000)")


def bench_local(rounds: int) -> None:
    """Interleaved rounds of: raw llama_cpp in the main thread, raw llama_cpp in a worker thread
    (where our client runs it), and our client (cache off). Median tokens/s of each."""
    import concurrent.futures
    import statistics

    try:
        from medeval_kit.llm.providers import load_llama, local_model_path

        path = local_model_path("smollm2-135m")
        llm, _lock = load_llama(path)
    except Exception as exc:  # llama_cpp or the weights missing
        print(f"[local] skipped: {exc}")
        return
    prompts = [f"Give one short fact about the {w}." for w in ("heart", "liver", "kidney")]
    reqs = [Request(messages=[{"role": "user", "content": p}], max_tokens=32, temperature=0.0) for p in prompts]
    llm.create_chat_completion(messages=reqs[0].messages, max_tokens=4)  # warm-up

    def raw_once() -> tuple[int, float]:
        t0, tok = time.perf_counter(), 0
        for r in reqs:
            res = llm.create_chat_completion(messages=r.messages, max_tokens=r.max_tokens, temperature=0.0,
                                             seed=r.effective_seed)
            tok += res["usage"]["completion_tokens"]
        return tok, time.perf_counter() - t0

    client = get_client("local/smollm2-135m", cache_mode="off")

    def ours_once() -> tuple[int, float]:
        t0 = time.perf_counter()
        out = client.run(reqs, progress=False)
        return sum(o.usage["completion_tokens"] for o in out), time.perf_counter() - t0

    rates: dict[str, list[float]] = {"raw (main thread)": [], "raw (worker thread)": [], "ours": []}
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        for _ in range(rounds):
            for name, fn in (("raw (main thread)", raw_once), ("raw (worker thread)", lambda: ex.submit(raw_once).result()),
                             ("ours", ours_once)):
                tok, wall = fn()
                rates[name].append(tok / wall)
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"[local] median tok/s over {rounds} interleaved rounds ({os.cpu_count()} cores): "
          + ", ".join(f"{k} {v:.1f}" for k, v in med.items()))
    print(f"  ratio ours / raw (main thread) = {med['ours'] / med['raw (main thread)']:.3f}; "
          f"ours / raw (worker thread) = {med['ours'] / med['raw (worker thread)']:.3f}  (target >= 0.9)")
    print("  all rounds: " + "; ".join(f"{k} {['%.0f' % x for x in v]}" for k, v in rates.items()))


def bench_faults(n: int = 1000, latency: float = 0.1, rounds: int = 1) -> None:
    """Faulty vs fault-free wall time with the default client settings (concurrency, timeout, retries,
    backoff): 20% 429 with Retry-After 0.05 s, 10% 500, 5% timeouts."""
    faults = ["--p429", "0.2", "--retry-after", "0.05", "--p500", "0.1", "--ptimeout", "0.05", "--seed", "1"]
    walls: dict[str, list[float]] = {"fault-free": [], "faulty": []}
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(rounds):
            for name, args in (("fault-free", ["--seed", "1"]), ("faulty", faults)):
                proc, url = start_stub(latency, *args)
                try:
                    client = get_client(f"openai/bench@{url}/v1", cache_path=Path(tmp) / f"{name}{k}.sqlite")
                    t0 = time.perf_counter()
                    out = client.run(make_requests(n, f"{name}{k}"), progress=False)
                    walls[name].append(time.perf_counter() - t0)
                    failed += sum(r.error is not None for r in out)
                    if name == "faulty":
                        st = client.last_run
                        retries, unconf = st.n_retries, st.n_unconfirmed
                finally:
                    proc.terminate()
                    proc.wait()
    ok, bad = min(walls["fault-free"]), min(walls["faulty"])
    d = get_client("openai/bench@http://127.0.0.1:1/v1", cache_mode="off")  # the defaults, for the record
    print(f"[faults] N={n}, latency={latency * 1000:.0f} ms, DEFAULT client settings (concurrency "
          f"{d.provider(d.spec).default_concurrency}, timeout {d.timeout:g} s, {d.retry.max_retries} retries, backoff "
          f"base {d.retry.backoff_base:g} s); faulty = 20% 429 (Retry-After 0.05 s), 10% 500, 5% timeouts (the stub "
          "holds the connection 2 s, then drops it)")
    print(f"  fault-free wall {ok:.2f} s, faulty wall {bad:.2f} s ({retries} retries, {unconf} lost replies "
          f"counted unconfirmed, {failed} final failures)")
    print(f"  ratio faulty / fault-free = {bad / ok:.2f}  (target <= 3)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warm-n", type=int, default=20000)
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--skip-faults", action="store_true")
    ap.add_argument("--skip-sdk", action="store_true", help="no raw-SDK baseline (it is the slowest at high concurrency)")
    ap.add_argument("--skip-warm", action="store_true")
    ap.add_argument("--stub-workers", type=int, default=max(1, min(4, (os.cpu_count() or 2) // 4)),
                    help="stub processes on one port (SO_REUSEPORT); default one per 4 cores, at most 4")
    a = ap.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-key")
    bench_execution(a.n, a.latency, a.concurrency, a.rounds, a.stub_workers, sdk=not a.skip_sdk)
    if not a.skip_warm:
        bench_warm_cache(a.warm_n)
    if not a.skip_local:
        bench_local(max(5, a.rounds))
    if not a.skip_faults:
        bench_faults()


if __name__ == "__main__":
    main()
