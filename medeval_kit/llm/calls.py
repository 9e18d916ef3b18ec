"""One run of a client, stage by stage.

:class:`Run` is what the requests of one ``Client.run`` share: their keys, the cache lookup, the
concurrency slots and rate limits per provider, the leases, the cache writer, the progress bar, the
tally its :class:`~medeval_kit.llm.types.RunStats` is made from. :class:`Call` takes one request
through **lease** (another process may already be calling it) -> **admit** (rate limits, then the
budget and the run ledger reserve the call's ceiling) -> **fence** (the lease is surely still ours, else
taken again; see :mod:`medeval_kit.llm.leases`) -> **send** (with a safety-net timeout) -> **record**
(settle the budget at the reported usage and queue the reply for the cache, which frees the slot; the call
is done once the reply is committed, see :mod:`medeval_kit.llm.writer`), and **back off** and retry while
the failure is worth retrying.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from collections.abc import Sequence
from typing import Any

from .budget import Budget
from .cost import Price, price_for
from .errors import BudgetError, CacheMissError, RequestError
from .leases import Leases
from .ledger import Guard, LedgerGate
from .limits import RateLimiter, Slots
from .progress import progress_bar
from .providers.base import Completion, Provider
from .providers.failures import failure
from .providers.http import HTTPProvider
from .record import error_response, response_from_completion, response_from_row
from .secrets import get_logger, redact
from .types import ModelSpec, Request, Response, RunStats
from .writer import CacheWriter

log = get_logger(__name__)

SAFETY_TIMEOUT_S = 5.0  # added to the client's timeout: a net over httpx2's own timeouts
DEADLINE_TICK_S = 0.5  # how often the safety net looks for calls past their deadline
# A 200 with an unreadable body was generated and billed: it is retried at most once (a second one in a row
# ends the request), and a request gets at most this many in all (other transient faults in between).
MAX_BROKEN_BODIES = 2
MISSING_SHOWN = 20  # missing requests listed by a replay error
WINDOW = 4  # requests started and not finished, per concurrency slot (see Run._call_all)


@dataclasses.dataclass
class Tally:
    """What a run counted so far (``tokens`` and ``cost`` only while a progress bar shows them)."""

    called: int = 0
    retries: int = 0
    failed: int = 0
    budget: int = 0
    tokens: int = 0
    cost: float = 0.0
    unconfirmed: float = 0.0
    n_unconfirmed: int = 0
    not_stored: int = 0
    peers: int = 0
    broken_cost: float = 0.0  # billed but unusable replies whose usage could be read, at that usage


@dataclasses.dataclass(frozen=True, slots=True)
class Retry:
    """A failed attempt worth retrying: the server's Retry-After (or None) and when the attempt began."""

    after: float | None
    t0: float


class Deadlines:
    """The safety-net timeout of a run's calls in flight: one timer for the run, looking every
    :data:`DEADLINE_TICK_S` for calls past their deadline and cancelling them (as ``asyncio.timeout`` does,
    whose timer and bookkeeping per call cost several microseconds), so a deadline fires up to one tick late.
    Only for Python 3.11+ (``Task.uncancel`` tells its cancellation from any other)."""

    __slots__ = ("loop", "due", "fired", "handle")

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.due: dict[asyncio.Task, float] = {}
        self.fired: set[asyncio.Task] = set()
        self.handle: asyncio.TimerHandle | None = None

    def watch(self, task: asyncio.Task, limit: float) -> None:
        """Cancel ``task`` if it is still watched ``limit`` seconds from now."""
        self.due[task] = self.loop.time() + limit
        if self.handle is None:
            self.handle = self.loop.call_later(DEADLINE_TICK_S, self._tick)

    def unwatch(self, task: asyncio.Task) -> bool:
        """Stop watching ``task``; True when it was cancelled for its deadline (the caller then owes the
        task an ``uncancel``)."""
        self.due.pop(task, None)
        if task in self.fired:
            self.fired.discard(task)
            return True
        return False

    def _tick(self) -> None:
        self.handle = None
        now = self.loop.time()
        late = [t for t, due in self.due.items() if due <= now]
        for task in late:
            del self.due[task]
            self.fired.add(task)
            task.cancel()
        if self.due:
            self.handle = self.loop.call_later(DEADLINE_TICK_S, self._tick)

    def close(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None


class Pending:
    """A paid reply queued for the cache: :meth:`wait` returns its Response once the write is committed
    (or failed: the reply is returned with ``cache_error`` set)."""

    __slots__ = ("call", "resp", "fut")

    def __init__(self, call: Call, resp: Response, fut: asyncio.Future) -> None:
        self.call, self.resp, self.fut = call, resp, fut

    async def wait(self) -> Response:
        try:
            await self.fut
        except Exception as exc:
            self.call._not_stored(self.resp, exc)
        else:
            self.call.delivered = True
        return self.resp


class Run:
    """The shared state of one ``Client.run`` (see the module docstring)."""

    def __init__(self, client: Any, requests: Sequence[Request]) -> None:
        self.t0 = time.perf_counter()
        self.client = client
        self.budget: Budget | None = client.budget
        ledger = getattr(client, "ledger", None)
        self.gate: LedgerGate | None = (LedgerGate(ledger, max_wait=client.timeout + 60.0)
                                           if ledger is not None else None)
        # what a call must pass: the client's budget and the run ledger (MEDEVAL_RUN_BUDGET_USD), both when set
        self.guard: Guard | None = (Guard(self.budget, self.gate)
                                    if self.budget is not None or self.gate is not None else None)
        self.requests = list(requests)
        for i, r in enumerate(self.requests):
            if not isinstance(r, Request):
                raise RequestError(f"requests[{i}] is a {type(r).__name__}, not a medeval_kit.llm.Request")
        self.specs = [client._spec_for(r) for r in self.requests]
        # the canonical JSON of each key is kept: it is the stored request_json of the reply
        wire: dict[ModelSpec, dict[str, Any]] = {}  # wire options per model, looked up once
        pairs = [client._key_json(r, s, wire[s] if s in wire else wire.setdefault(s, client.wire_options(s)))
                 for r, s in zip(self.requests, self.specs)]
        self.keys = [k for k, _ in pairs]
        self.canon = [j for _, j in pairs]
        self.first: dict[str, int] = {}  # key -> index of its first request (duplicates are run once)
        for i, k in enumerate(self.keys):
            self.first.setdefault(k, i)
        self.done: dict[str, Response] = {}
        self.todo: list[tuple[str, int]] = []
        self.tally = Tally()
        self.n_hits = 0
        self.slots: dict[str, Slots] = {}
        self.limiters: dict[str, RateLimiter] = {}
        self.leases: Leases | None = None
        self.writer: CacheWriter | None = None
        self.deadlines: Deadlines | None = None
        self._prices: dict[str, Price | None] = {}
        self.bar = None

    # ------------------------------------------------------------------ before any call
    def lookup(self) -> None:
        """Answer what the cache holds; the rest is ``todo``. Raises CacheMissError in replay mode
        and BudgetError when a budget is set and some model to call has no price (before any call)."""
        cache = self.client.cache
        rows = cache.get_many(self.first) if cache.reads else {}
        for k, row in rows.items():
            i = self.first[k]
            self.done[k] = response_from_row(row, self.requests[i], self.specs[i])
        self.n_hits = len(self.done)
        self.todo = [(k, i) for k, i in self.first.items() if k not in self.done]
        if self.todo and (cache.mode == "replay" or any(self.specs[i].replay for _, i in self.todo)):
            raise self._missing()
        if self.guard is not None:
            unpriced = sorted({self.specs[i].id for _, i in self.todo if self.price(self.specs[i]) is None})
            if unpriced:
                what = "budget_usd" if self.budget is not None else "a run budget (MEDEVAL_RUN_BUDGET_USD)"
                raise BudgetError(f"{what} is set but there is no price for {', '.join(unpriced)}: "
                                  "add it to data/prices.yaml (or drop the budget)")

    def price(self, spec: ModelSpec) -> Price | None:
        """The price of ``spec`` (:func:`~medeval_kit.llm.cost.price_for`), looked up once per run: finding
        the price table means searching for the project, a few file-system calls per lookup."""
        if spec.id not in self._prices:
            self._prices[spec.id] = price_for(spec)
        return self._prices[spec.id]

    def _missing(self) -> CacheMissError:
        """The replay error listing the requests the cache does not hold."""
        missing = [(k, str(self.specs[i]), self.requests[i].preview()) for k, i in self.todo]
        shown = "\n".join(f"  {k[:12]}  {m}  {p!r}" for k, m, p in missing[:MISSING_SHOWN])
        more = f"\n  ... and {len(missing) - MISSING_SHOWN} more" if len(missing) > MISSING_SHOWN else ""
        return CacheMissError(
            f"replay mode: {len(missing)} of {len(self.first)} distinct requests are not in the cache "
            f"{self.client.cache.path}:\n{shown}{more}\nRun once with cache_mode='use' (and API keys set) to "
            f"record them, or pass cache_path= (or set MEDEVAL_ROOT to a project) whose cache has them.", missing)

    def _providers(self) -> list[Provider]:
        """The providers of the requests to call (one per model string), each with its slots and limits."""
        providers: dict[str, Provider] = {}
        for _, i in self.todo:
            p = self.client.provider(self.specs[i])
            providers[p.limit_key + "|" + str(self.specs[i])] = p
        for p in providers.values():
            if p.limit_key not in self.slots:
                self.slots[p.limit_key] = Slots(self.client.concurrency or p.default_concurrency)
                self.limiters[p.limit_key] = RateLimiter(self.client.rpm, self.client.tpm)
            if isinstance(p, HTTPProvider):  # it sizes its connection pools by the calls in flight
                p.concurrency = self.slots[p.limit_key].size
        return list({id(p): p for p in providers.values()}.values())

    def _open_bar(self, desc: str | None) -> None:
        """Show a progress bar over the distinct requests, the cache hits already counted."""
        self.bar = progress_bar(total=len(self.first), desc=desc or self.client.model, unit="req",
                                dynamic_ncols=True)
        self.bar.update(self.n_hits)
        self.bar.set_postfix_str(f"hits={self.n_hits}", refresh=False)

    def _tick(self, resp: Response) -> None:
        """Advance the progress bar by one reply, with hits, failures, tokens, cost and the budget."""
        if self.bar is None:
            return
        t, budget = self.tally, self.budget
        t.tokens += resp.usage["prompt_tokens"] + resp.usage["completion_tokens"]
        if not math.isnan(resp.cost_usd) and not resp.cached:
            t.cost += resp.cost_usd
        post = f"hits={self.n_hits + t.peers} fail={t.failed} tok={t.tokens} ${t.cost:.4f}"
        if budget is not None:
            post += (f" budget ${budget.cap:.2f}: spent=${budget.spent:.4f} res=${budget.reserved:.4f} "
                     f"unconf=${budget.unconfirmed:.4f}")
        elif t.n_unconfirmed:
            post += f" unconf=${t.unconfirmed:.4f}"
        self.bar.set_postfix_str(post, refresh=False)
        self.bar.update(1)

    # ------------------------------------------------------------------ the calls
    async def execute(self, progress: bool, desc: str | None) -> None:
        """Call every request of ``todo`` (:meth:`_call_all`); always close what the run opened."""
        cache = self.client.cache
        if progress:
            self._open_bar(desc)
        providers: list[Provider] = []
        try:
            providers = self._providers()
            # replies, lease takes and releases are written in batches (group commit, see writer.py)
            self.writer = CacheWriter(cache) if cache.writes and self.todo else None
            # leases keep processes that share the cache from paying twice (``use`` mode only: ``refresh``
            # re-samples on purpose, ``off`` shares nothing); taken just before sending, never ahead
            self.leases = Leases(cache, self.writer) if cache.mode == "use" and self.todo else None
            for p in providers:
                await p.open()
            if hasattr(asyncio.Task, "uncancel"):  # 3.11+
                self.deadlines = Deadlines()
            await self._call_all()
        finally:
            await self._close(providers)

    async def _call_all(self) -> None:
        """Call every request of ``todo``, in order, with at most :data:`WINDOW` x the concurrency slots of
        them started and not finished: enough to keep every slot busy while others back off, wait for a
        peer or for their cache write, and a few thousand objects for the garbage collector to scan at
        every full collection, not a task, a call and their frames per request of the run (the GC took
        over a tenth of a 20,000-request run). The first failure cancels the rest."""
        loop = asyncio.get_running_loop()
        window = WINDOW * max(1, sum(s.size for s in self.slots.values()))
        todo = iter(self.todo)
        running: dict[asyncio.Task, str] = {}  # the task of each call started, and its key
        finished = loop.create_future()

        def fail(exc: BaseException) -> None:
            if not finished.done():
                finished.set_exception(exc)

        def start() -> None:
            while len(running) < window and not finished.done():
                nxt = next(todo, None)
                if nxt is None:
                    if not running:
                        finished.set_result(None)
                    return
                key, i = nxt
                try:  # the call's own task, no coroutine around it: its Response is kept by done()
                    task = loop.create_task(Call(self, self.requests[i], self.specs[i], key, self.canon[i]).run())
                except Exception as exc:
                    return fail(exc)
                running[task] = key
                task.add_done_callback(done)

        def done(task: asyncio.Task) -> None:
            key = running.pop(task)
            if task.cancelled():
                return start()
            if task.exception() is not None:
                return fail(task.exception())
            try:
                resp = self.done[key] = task.result()
                self._tick(resp)
            except Exception as exc:
                return fail(exc)
            start()

        start()
        try:
            await finished
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)

    async def _close(self, providers: list[Provider]) -> None:
        """Stop the lease tasks, drain the cache writer, release the leases, close providers and bar."""
        if self.leases is not None:
            self.leases.stop()
        if self.writer is not None:
            await self.writer.aclose()
            self.writer = None
        if self.leases is not None:
            self.leases.close()
        if self.deadlines is not None:
            self.deadlines.close()
        if self.gate is not None:
            await self.gate.aclose()
        for p in providers:
            try:
                await p.aclose()
            except Exception:  # closing must not hide the run's outcome
                pass
        if self.bar is not None:
            self.bar.close()

    # ------------------------------------------------------------------ after the calls
    def responses(self) -> list[Response]:
        """One Response per request, in request order (a duplicate shares its first request's reply)."""
        out: list[Response] = []
        for r, k in zip(self.requests, self.keys):
            resp = self.done[k]
            out.append(resp if resp.request is r else dataclasses.replace(resp, request=r))
        return out

    def stats(self, out: list[Response]) -> RunStats:
        """The RunStats of the run whose responses are ``out`` (tokens and cost of the calls made)."""
        called = [self.done[k] for k in self.first if not self.done[k].cached]
        costs = [r.cost_usd for r in called if r.error is None]
        t, b = self.tally, self.budget
        return RunStats(
            n=len(out), n_cached=sum(1 for r in out if r.cached), n_failed=sum(1 for r in out if r.error is not None),
            n_parse_failed=sum(1 for r in out if r.parse_status == "failed"),
            prompt_tokens=sum(r.usage["prompt_tokens"] for r in called),
            completion_tokens=sum(r.usage["completion_tokens"] for r in called),
            cost_usd=math.nan if any(math.isnan(c) for c in costs) else float(sum(costs)) + t.broken_cost,
            wall_s=time.perf_counter() - self.t0, n_called=t.called, n_retries=t.retries,
            n_skipped_budget=t.budget, n_duplicates=len(out) - len(self.first), model=self.client.model,
            unconfirmed_usd=t.unconfirmed, n_unconfirmed=t.n_unconfirmed,
            budget_usd=b.cap if b is not None else None,
            budget_spent_usd=b.spent if b is not None else 0.0,
            budget_unconfirmed_usd=b.unconfirmed if b is not None else 0.0,
            reserved_usd=b.reserved if b is not None else 0.0,
            budget_note=b.halted if b is not None else None,
            n_not_stored=t.not_stored, n_from_peers=t.peers,
        )

    def warn(self, out: list[Response]) -> None:
        """Log failed requests and replies that could not be stored."""
        model = self.client.model
        n_failed = sum(1 for r in out if r.error is not None)
        if n_failed:
            log.warning("%s: %d of %d requests failed (first error: %s)", model, n_failed, len(out),
                        next(r.error for r in out if r.error is not None))
        if self.tally.n_unconfirmed:
            t = self.tally
            log.warning("%s: %d attempts may have been billed without a usable reply (lost, timed out or "
                        "unreadable); counted at their ceiling, $%.4f unconfirmed", model, t.n_unconfirmed,
                        t.unconfirmed)
        if self.tally.not_stored:
            log.warning("%s: %d replies were received (and paid for) but not stored in the cache %s (first "
                        "error: %s); they are returned, but a new run will call them again", model,
                        self.tally.not_stored, self.client.cache.path,
                        next(r.cache_error for r in out if r.cache_error is not None))


class Call:
    """One request's way through the executor: lease, admit, send, record, back off and retry."""

    __slots__ = ("run_state", "client", "request", "spec", "key", "canon", "provider", "slots", "limiter",
                 "budget", "tally", "leases", "est_tokens", "price", "_bound", "_ceiling", "reserve", "holding",
                 "t_start", "attempt", "n_backoff", "n_broken", "broken_in_a_row", "leased", "took", "pre",
                 "delivered")

    def __init__(self, run: Run, request: Request, spec: ModelSpec, key: str, canon: str | None = None) -> None:
        self.run_state, self.client = run, run.client
        self.request, self.spec, self.key = request, spec, key
        self.canon = canon  # the canonical request's JSON (what ``key`` hashes), if known
        self.provider = self.client.provider(spec)
        self.slots, self.limiter = run.slots[self.provider.limit_key], run.limiters[self.provider.limit_key]
        self.budget, self.tally, self.leases = run.guard, run.tally, run.leases
        self.price = run.price(spec)
        self._bound: int | None = None
        self._ceiling: float | None = None
        # the tokens a tokens-per-minute limit takes: the prompt's proven bound plus max_tokens
        self.est_tokens = 0
        if self.limiter.tok is not None or self.budget is not None:
            self.est_tokens = self.prompt_bound() + int(request.max_tokens)
        self.reserve = self.ceiling if self.budget is not None else 0.0
        self.holding = 0.0  # the reservation of the attempt in flight, until settled, released or lost
        self.t_start = time.perf_counter()
        self.attempt = 0  # attempts sent so far
        self.n_backoff = 0  # failures without a Retry-After: the exponent of the backoff
        self.n_broken = 0  # 200s with an unreadable body
        self.broken_in_a_row = 0
        self.leased = False
        self.took = False  # this pass took (or re-took) the lease through the writer
        self.pre: asyncio.Future | None = None  # a take queued when the slot was handed over (see _granted)
        self.delivered = False

    def prompt_bound(self) -> int:
        """The proven upper bound of the prompt tokens (worked out once, when first needed)."""
        if self._bound is None:
            self._bound = self.provider.prompt_token_bound(self.request)
        return self._bound

    @property
    def ceiling(self) -> float:
        """The most this call can cost: the prompt at its proven bound, the reply at max_tokens (NaN without
        a price); worked out when first needed (a budget, or an attempt that may have been billed)."""
        if self._ceiling is None:
            price = self.price
            self._ceiling = (price.cost(self.prompt_bound(), int(self.request.max_tokens))
                             if price is not None else math.nan)
        return self._ceiling

    async def run(self) -> Response:
        """Return the request's Response: a reply, another process's reply, or the error it ended with."""
        try:
            while True:
                outcome = await self._attempt()
                if isinstance(outcome, Response):
                    return outcome
                if not self.leased:  # another live process is calling it: wait for its result, outside the slot
                    resp = await self._from_peer()
                    if resp is not None:
                        return resp
                    continue  # released, expired or orphaned: try to take it
                await self._back_off(outcome)
        finally:
            self._finish()

    async def _attempt(self) -> Response | Retry | None:
        """One pass through a concurrency slot; None when another process holds the lease.

        The slot is freed as soon as the reply is in and queued for the cache, not once it is committed:
        the next call in the slot sends only after a write batch that commits it (the lease it takes is
        in that batch or a later one, after the replies; without a take, :meth:`CacheWriter.barrier`),
        so at any moment a slot has at most one call sent or paid but not yet committed."""
        self.took = False
        slots = self.slots
        await slots.acquire(self.attempt > 0, self._granted)  # retries go first
        try:
            resp = await self._take_lease()  # just before sending: never queued with a lease
            if resp is not None or not self.leased:
                return resp
            refused = await self._admit()
            if refused is not None:
                return refused
            resp = await self._take_lease()  # fencing: admission may have waited past the lease's renewal
            if resp is not None or not self.leased:
                self._unadmit()
                return resp
            writer = self.run_state.writer
            if not self.took and writer is not None and writer.pending:  # the slot's last reply first
                await writer.barrier()
            outcome = await self._send()
        finally:
            slots.release()
        if isinstance(outcome, Pending):  # the reply is paid and queued: committed outside the slot
            return await outcome.wait()
        return outcome

    # ------------------------------------------------------------------ lease
    def _granted(self) -> None:
        """The slot is handed to this call (it resumes at the next turn of the event loop): queue its lease
        take now, in the batch that commits the reply of the call that freed the slot, so the take is
        written by the time this call resumes rather than one batch later."""
        if self.leases is not None and self.pre is None and not self.leases.fresh(self.key):
            try:
                self.pre = self.leases.take_soon(self.key)
            except Exception:  # taken the usual way when the call resumes
                self.pre = None

    async def _take_lease(self) -> Response | None:
        """Make sure this run holds the lease right now (take it, or take it again when it may have run
        out: it stays ours only if no other process took it over meanwhile); the stored reply when
        another process finished the request meanwhile. ``self.leased`` says whether it may be sent."""
        pre, self.pre = self.pre, None
        if self.leases is None or (pre is None and self.leases.fresh(self.key)):
            self.leased = True
            return None
        self.took = True
        state, row = await self.leases.take(self.key, pre)
        self.leased = state == "mine"
        if state == "done":
            return self._peer_reply(row)
        return None

    async def _from_peer(self) -> Response | None:
        """Wait until another process's lease ends: its stored reply, or None (the lease is free)."""
        state, row = await self.leases.wait(self.key)
        return self._peer_reply(row) if state == "done" else None

    def _peer_reply(self, row: dict[str, Any]) -> Response:
        """The Response of the reply another process stored for this request."""
        self.tally.peers += 1
        self.delivered = True
        return response_from_row(row, self.request, self.spec)

    # ------------------------------------------------------------------ admit
    async def _admit(self) -> Response | None:
        """Take the rate limits, then reserve the call's ceiling (now, never while queued); the
        budget's refusal as a failed Response."""
        await self.limiter.acquire(self.est_tokens)
        if self.budget is None:
            return None
        why = await self.budget.reserve(self.reserve)
        if why is not None:
            self.limiter.refund(self.est_tokens)
            self.tally.budget += 1
            self.tally.failed += 1
            return error_response(self.request, self.spec, self.key, f"budget: not sent: {why}", self.attempt,
                                  time.perf_counter() - self.t_start)
        self.holding = self.reserve
        return None

    def _unadmit(self) -> None:
        """Admitted, then not sent (the lease was taken over): give the reservation and tokens back."""
        self.limiter.refund(self.est_tokens)
        if self.budget is not None and self.holding:
            self.budget.release(self.holding)
        self.holding = 0.0

    # ------------------------------------------------------------------ send
    async def _send(self) -> Response | Pending | Retry | None:
        """Send one attempt: the recorded reply (Pending while its cache write is queued), the error the
        request ends with, a Retry, or None (not sent: the lease may have been taken over while this
        process was paused)."""
        if self.leases is not None and not self.leases.fresh(self.key):  # paused since the fencing check
            self.leased = False
            self._unadmit()
            return None
        self.tally.called += self.attempt == 0
        self.attempt += 1
        # the safety net over the provider's own timeouts, when it goes over the network (see Deadlines)
        deadlines = self.run_state.deadlines if self.provider.uses_network else None
        task = asyncio.current_task() if deadlines is not None else None
        if task is not None:
            deadlines.watch(task, self.client.timeout + SAFETY_TIMEOUT_S)
        t0 = time.perf_counter()
        try:
            c = await self._complete(deadlines is None)
        except asyncio.CancelledError:
            if task is not None and deadlines.unwatch(task) and task.uncancel() == 0:  # the deadline's only
                return self._failed(TimeoutError("no reply within the client's timeout (safety net)"), t0)
            self.holding = 0.0  # it was sent: it may be generated and billed
            self._lost(self.reserve)
            raise
        except Exception as exc:  # classified; never lost
            if task is not None and deadlines.unwatch(task):
                task.uncancel()
            return self._failed(exc, t0)
        if task is not None and deadlines.unwatch(task):  # the reply won the race with the deadline
            task.uncancel()
        return self._record(c, time.perf_counter() - t0)

    def _complete(self, net: bool = True) -> Any:
        """The provider's reply (an awaitable), under a safety-net timeout of its own when it goes over the
        network and ``net`` (without the run's :class:`Deadlines`: Python 3.10)."""
        provider = self.provider
        if not net or not provider.uses_network:
            return provider.acomplete(self.request)
        return asyncio.wait_for(provider.acomplete(self.request), self.client.timeout + SAFETY_TIMEOUT_S)

    def _failed(self, exc: Exception, t0: float) -> Response | Retry:
        """Free the attempt's reservation (or count it unconfirmed when it may be billed); the final
        error when the failure will recur or the retries are spent, else a Retry."""
        f = failure(exc)
        self.holding = 0.0
        cost = self._broken_cost(exc) if f.billed else None
        if cost is not None:  # billed, unusable, but its usage could be read: spent at that usage
            self.tally.broken_cost += cost
            if self.budget is not None:
                self.budget.settle(self.reserve, cost)
        elif f.billed:
            self._lost(self.reserve)
        elif self.budget is not None:
            self.budget.release(self.reserve)
        self.n_broken += f.broken_body
        self.broken_in_a_row = self.broken_in_a_row + 1 if f.broken_body else 0
        too_broken = self.broken_in_a_row > 1 or self.n_broken > MAX_BROKEN_BODIES
        if not f.retryable or self.attempt > self.client.retry.max_retries or too_broken:
            self.tally.failed += 1
            why = " (a 200 with an unreadable body is retried at most once)" \
                if f.retryable and too_broken else ""
            err = f"{f.what} (after {self.attempt} attempt{'s' if self.attempt > 1 else ''}){why}"
            log.warning("%s: request %s failed: %s", self.spec, self.key[:12], redact(err))
            return error_response(self.request, self.spec, self.key, err, self.attempt,
                                  time.perf_counter() - self.t_start)
        log.debug("%s: attempt %d of %s failed (%s); retrying", self.spec, self.attempt, self.key[:12],
                  redact(f.what))
        return Retry(f.retry_after, t0)

    def _broken_cost(self, exc: Exception) -> float | None:
        """What an unusable 200 cost when its body still reports its usage (and the model has a price)."""
        usage, price = getattr(exc, "usage", None), self.price
        return price.cost(*usage) if usage is not None and price is not None else None

    # ------------------------------------------------------------------ record
    def _record(self, c: Completion, latency: float) -> Response | Pending:
        """Settle the budget and the token limit at the reply's usage, then store the reply: queued for
        the run's writer (Pending, see :meth:`_attempt`), or written now without one."""
        if c.found:
            self._rekey(c.found)
        resp = response_from_completion(c, self.request, self.spec, self.key, latency, self.attempt,
                                        price=self.price)
        if self.budget is not None:
            self.holding = 0.0
            self.budget.settle(self.reserve, resp.cost_usd)
        self.limiter.refund(self.est_tokens - c.prompt_tokens - c.completion_tokens)
        # committed before the call counts as done and frees its lease (a kill loses at most one call per
        # slot), in one batch with the other calls' writes (group commit, see writer.py); a failed write
        # keeps the reply
        try:
            entry = self.client.entry(resp, self.request, self.spec, c, request_json=self.canon)
            writer = self.run_state.writer
            if entry is not None and writer is not None:
                return Pending(self, resp, writer.put_nowait(entry))
            if entry is not None:
                self.client.cache.put(entry)
        except Exception as exc:
            self._not_stored(resp, exc)
            return resp
        self.delivered = True
        return resp

    def _not_stored(self, resp: Response, exc: Exception) -> None:
        """A paid reply that could not be written: returned all the same, counted and logged."""
        resp.cache_error = redact(f"{type(exc).__name__}: {exc}")
        self.tally.not_stored += 1
        log.warning("%s: reply to %s received but not stored in the cache: %s", self.spec, self.key[:12],
                    resp.cache_error)

    def _rekey(self, found: dict[str, str]) -> None:
        """The provider found an option left to "auto" (the schema format the server takes): the client
        keeps it, and the reply is keyed by the form it was sent in (its lease on the old key is freed)."""
        self.client.learn(self.spec, found)
        key, canon = self.client._key_json(self.request, self.spec)
        if key != self.key:
            if self.leases is not None:
                self.leases.release(self.key)
            self.key = key
        self.canon = canon

    # ------------------------------------------------------------------ retry and finish
    async def _back_off(self, retry: Retry) -> None:
        """Sleep before the next attempt (see ``RetryPolicy``)."""
        self.tally.retries += 1
        wait = self.client.retry.delay(self.n_backoff, retry.after)
        if retry.after is None:  # backoff spaces attempts from the start of the failed one:
            self.n_backoff += 1  # an attempt that hung until a timeout has already waited
            wait -= time.perf_counter() - retry.t0
        await asyncio.sleep(max(0.0, wait))

    def _lost(self, reserved: float) -> None:
        """An attempt whose reply may have been generated (and billed) but never arrived."""
        if self.budget is not None:
            self.budget.lose(reserved)
        self.tally.unconfirmed += self.ceiling
        self.tally.n_unconfirmed += 1

    def _finish(self) -> None:
        """Whatever the outcome: count a held reservation as unconfirmed, free an undelivered lease."""
        if self.holding and self.budget is not None:  # the reply arrived but could not be read: it was billed
            self._lost(self.holding)
        if self.pre is not None:  # cancelled between the hand-over of a slot and its take
            self.leases.drop(self.pre, self.key)
            self.pre = None
        if self.leases is not None and not self.delivered:
            self.leases.release(self.key)  # failed, skipped or cancelled: another process may try
