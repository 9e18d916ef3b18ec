"""The client: cache lookup, asyncio execution with per-provider concurrency and RPM/TPM limits,
retries (``Retry-After`` as given, else exponential backoff with jitter; failures that will recur are
not retried), timeouts, a budget that is a hard ceiling (:class:`Budget`), leases that keep processes
sharing a cache from paying twice, and a progress bar. ``Client.run`` is synchronous and also works
inside Jupyter's running loop.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import dataclasses
import logging
import math
import os
import random
import threading
import time
from collections.abc import Sequence
from typing import Any

from .cache import Cache, utcnow
from .cost import cost_of, estimate_cost, price_for
from .errors import BudgetError, CacheMissError, LLMError, RequestError
from . import secrets as _secrets
from .parse import parse_reply
from .progress import progress_bar
from .providers import Completion, Provider, failure, key_options, make_provider
from .types import ModelSpec, Request, Response, RunStats, canonical_json, parse_model

log = logging.getLogger(__name__)

KEY_ENV_VARS = _secrets.PROVIDER_KEY_ENVS


def redact(text: str | None, extra_env: Sequence[str] = ()) -> str | None:
    """Remove every form of every known API key from text (see :mod:`medeval_kit.llm.secrets`): the
    values of the providers' variables, of every ``api_key_env=`` in use and of any ``*API_KEY``
    variable, as set and stripped, repr'd, JSON-escaped or URL-encoded, their echoed prefixes and
    masked tails, and ``sk-...`` tokens."""
    return _secrets.redact(text, extra_env)


# --------------------------------------------------------------------------- limits
class _Bucket:
    """Continuous-refill token bucket sized for ``per_minute`` (bursts of at most 10 s worth)."""

    def __init__(self, per_minute: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, per_minute / 6.0)
        self.level = self.capacity
        self.t = time.monotonic()

    def wait_for(self, amount: float) -> float:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.t) * self.rate)
        self.t = now
        amount = min(amount, self.capacity)
        return 0.0 if self.level >= amount else (amount - self.level) / self.rate

    def take(self, amount: float) -> None:
        self.level -= min(amount, self.capacity)

    def give(self, amount: float) -> None:
        self.level = min(self.capacity, self.level + amount)


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits shared by the calls to one provider."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None) -> None:
        self.req = _Bucket(rpm) if rpm else None
        self.tok = _Bucket(tpm) if tpm else None
        self._lock = asyncio.Lock()

    async def acquire(self, tokens: int) -> None:
        if self.req is None and self.tok is None:
            return
        async with self._lock:
            while True:
                wait = max(self.req.wait_for(1) if self.req else 0.0,
                           self.tok.wait_for(tokens) if self.tok else 0.0)
                if wait <= 0:
                    if self.req:
                        self.req.take(1)
                    if self.tok:
                        self.tok.take(tokens)
                    return
                await asyncio.sleep(wait)

    def refund(self, tokens: int) -> None:
        if self.tok is not None and tokens > 0:
            self.tok.give(tokens)


class _Slots:
    """The concurrency slots of one provider: a semaphore that serves retries before first attempts,
    so that a request's retries run while fresh requests still fill the other slots instead of
    queueing behind all of them (which would add a tail of retry chains after the queue drains)."""

    def __init__(self, n: int) -> None:
        self._n = self._free = int(n)
        self._queues: tuple[collections.deque, collections.deque] = (collections.deque(), collections.deque())

    async def acquire(self, retry: bool = False) -> None:
        if self._free > 0 and not self._queues[0] and not self._queues[1]:
            self._free -= 1
            return
        fut = asyncio.get_running_loop().create_future()
        q = self._queues[0 if retry else 1]
        q.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release()  # the slot was handed to us just as we were cancelled: pass it on
            else:
                try:
                    q.remove(fut)
                except ValueError:
                    pass
            raise

    def release(self) -> None:
        for q in self._queues:
            while q:
                fut = q.popleft()
                if not fut.done():
                    fut.set_result(None)  # handed over: the count of free slots is unchanged
                    return
        self._free += 1

    @contextlib.asynccontextmanager
    async def slot(self, retry: bool = False):
        await self.acquire(retry)
        try:
            yield
        finally:
            self.release()


_EPS = 1e-12  # USD: float rounding of sums of prices


def _wake(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)


class Budget:
    """A spending cap in USD that is never exceeded: the ceiling of a client's whole lifetime (every
    ``run``), or of a study run when several clients share one (``get_client(..., budget=shared)``).

    It keeps ``spent + reserved + unconfirmed <= cap``, where

    * ``reserved`` is the proven upper-bound cost of the calls in flight: each call reserves its
      ceiling (prompt tokens at :func:`~medeval_kit.llm.cost.prompt_token_bound`, ``max_tokens`` at
      the output price) just before it is sent, never while it waits in the queue;
    * ``spent`` is what delivered replies cost, at their reported usage (settled on arrival);
    * ``unconfirmed`` is the reserved cost of attempts whose reply may have been generated, and
      billed, but never arrived: a timeout after sending, a reset mid-body, an unreadable body, a
      cancelled call.

    A call that does not fit waits while calls in flight may free enough, and is refused only when
    it cannot fit even then. A reply that reports more usage than its reservation means the bound
    failed or the server over-reports: the cap can no longer be proven, so no new call is sent
    (``halted`` says why; a new Budget starts afresh). Thread-safe: clients in different threads
    may share one.
    """

    def __init__(self, cap_usd: float) -> None:
        cap = float(cap_usd)
        if not cap >= 0.0 or math.isinf(cap):
            raise BudgetError(f"budget: the cap must be a finite number of USD >= 0, got {cap_usd!r}")
        self.cap = cap
        self.spent = 0.0
        self.reserved = 0.0
        self.unconfirmed = 0.0
        self.halted: str | None = None
        self.batches: dict[str, dict[str, float]] = {}  # batch id -> {key: ceiling}, until collected
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = []

    def __repr__(self) -> str:
        return (f"Budget(cap=${self.cap:.4f}, spent=${self.spent:.4f}, reserved=${self.reserved:.4f}, "
                f"unconfirmed=${self.unconfirmed:.4f}{', halted' if self.halted else ''})")

    @property
    def remaining(self) -> float:
        """What a new call may still reserve now."""
        return max(0.0, self.cap - self.spent - self.reserved - self.unconfirmed)

    def _refusal(self, amount: float) -> str:
        return (f"spent ${self.spent:.4f} + unconfirmed ${self.unconfirmed:.4f} + this call's ceiling "
                f"${amount:.4f} would exceed the budget of ${self.cap:.4f}")

    def _try(self, amount: float) -> tuple[str, str | None]:
        if self.halted:
            return "refuse", self.halted
        if self.spent + self.unconfirmed + self.reserved + amount <= self.cap + _EPS:
            self.reserved += amount
            return "ok", None
        if self.reserved > _EPS and self.spent + self.unconfirmed + amount <= self.cap + _EPS:
            return "wait", None  # fits once calls in flight settle
        return "refuse", self._refusal(amount)

    async def reserve(self, amount: float) -> str | None:
        """Reserve ``amount`` USD; wait while calls in flight may free enough. Return None once
        reserved, else the reason it never can be."""
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:
                verdict, why = self._try(amount)
                if verdict == "wait":
                    fut = loop.create_future()
                    self._waiters.append((loop, fut))
            if verdict == "ok":
                return None
            if verdict == "refuse":
                return why
            try:  # woken by a settle; re-checked at least every second (clients in other threads)
                await asyncio.wait_for(fut, 1.0)
            except asyncio.TimeoutError:
                pass

    def _changed(self) -> None:  # with the lock held
        if abs(self.reserved) < _EPS:
            self.reserved = 0.0
        waiters, self._waiters = self._waiters, []
        for loop, fut in waiters:
            try:
                loop.call_soon_threadsafe(_wake, fut)
            except RuntimeError:  # that loop is closed
                pass

    def settle(self, reserved: float, actual: float) -> None:
        """A reply arrived: replace its reservation by its reported cost."""
        with self._lock:
            self.reserved -= reserved
            self.spent += reserved if math.isnan(actual) else actual
            if not math.isnan(actual) and actual > reserved * (1 + 1e-9) + _EPS and not self.halted:
                self.halted = (f"a reply reported usage costing ${actual:.6f}, more than its proven ceiling "
                               f"${reserved:.6f}: the budget of ${self.cap:.4f} can no longer be guaranteed, "
                               "so no new calls are sent")
                log.warning("budget: %s", self.halted)
            self._changed()

    def release(self, reserved: float) -> None:
        """The call generated nothing (refused, or never reached the server): free its reservation."""
        with self._lock:
            self.reserved -= reserved
            self._changed()

    def lose(self, reserved: float) -> None:
        """The reply may have been generated and billed but never arrived: count it as unconfirmed."""
        with self._lock:
            self.reserved -= reserved
            self.unconfirmed += reserved
            self._changed()

    # batch APIs: a submitted batch is billed later, when the provider runs it
    def commit(self, amount: float) -> str | None:
        """Count ``amount`` (the ceiling of a batch about to be submitted) as unconfirmed now; return
        None, or the reason it does not fit (then nothing is counted)."""
        with self._lock:
            if self.halted:
                return self.halted
            if self.spent + self.reserved + self.unconfirmed + amount > self.cap + _EPS:
                return (f"spent ${self.spent:.4f} + in flight ${self.reserved:.4f} + unconfirmed "
                        f"${self.unconfirmed:.4f} + the batch's ceiling ${amount:.4f} would exceed the budget "
                        f"of ${self.cap:.4f}")
            self.unconfirmed += amount
            return None

    def uncommit(self, amount: float) -> None:
        """A batch counted by :meth:`commit` was not submitted after all."""
        with self._lock:
            self.unconfirmed -= amount
            self._changed()

    def settle_batch(self, ceilings: dict[str, float], costs: dict[str, float], failed: set[str]) -> None:
        """Results of a batch submitted under this budget: stored items move from unconfirmed (at their
        ceiling) to spent (at their reported cost); items that failed inside the batch were not billed;
        items with neither stay unconfirmed."""
        with self._lock:
            for k, ceiling in ceilings.items():
                if k in costs:
                    cost = costs[k] if costs[k] is not None and not math.isnan(costs[k]) else ceiling
                    self.unconfirmed -= ceiling
                    self.spent += cost
                    if cost > ceiling * (1 + 1e-9) + _EPS and not self.halted:
                        self.halted = (f"a batch reply reported usage costing ${cost:.6f}, more than its proven "
                                       f"ceiling ${ceiling:.6f}: the budget of ${self.cap:.4f} can no longer be "
                                       "guaranteed, so no new calls are sent")
                        log.warning("budget: %s", self.halted)
                elif k in failed:
                    self.unconfirmed -= ceiling
            if abs(self.unconfirmed) < _EPS:
                self.unconfirmed = 0.0
            self._changed()


# --------------------------------------------------------------------------- client
@dataclasses.dataclass
class RetryPolicy:
    """Retries: up to ``max_retries`` after the first attempt.

    When the server says when to come back (``Retry-After``/``retry-after-ms``), the delay is exactly
    that (capped at ``retry_after_max``) plus a small jitter (up to 10% + ``retry_after_jitter``,
    10 ms), so that calls told to wait together do not all return at once. Otherwise it is
    uniform in [0, min(backoff_max, backoff_base * 2**i)] ("full jitter"), where ``i`` counts the
    earlier failures of the request that came without a Retry-After, and the executor counts it
    from the start of the failed attempt (an attempt that hung until it timed out has waited
    already). Failures that will recur are not retried at all (see ``providers.failure``), and a
    200 with an unreadable body at most twice.
    """

    max_retries: int = 8
    backoff_base: float = 0.5  # the OpenAI and Anthropic SDKs' initial retry delay
    backoff_max: float = 60.0
    retry_after_max: float = 120.0
    retry_after_jitter: float = 0.01

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            ra = min(max(0.0, float(retry_after)), self.retry_after_max)
            return ra + random.uniform(0.0, 0.1 * ra + self.retry_after_jitter)
        return random.uniform(0.0, min(self.backoff_max, self.backoff_base * (2 ** attempt)))


class _Leases:
    """The leases one run holds on cache keys (see ``Cache.take_leases``), so that processes sharing
    a cache never pay twice for a request. Leases are taken in batches: one transaction for the calls
    reaching a slot together and the next ``ahead`` requests in line (so a run costs about one lease
    transaction per ``ahead`` calls, not one per call). They are renewed while the run lasts, released
    on failure at once and all together when the run ends (also on error or cancellation). A request whose lease another
    live process holds waits, outside its concurrency slot, for that process's result (one poller
    per run reads the cache) or for the lease to be released, to expire or to be orphaned."""

    TTL = 60.0  # s; renewed every TTL / 3 while the run lasts

    def __init__(self, cache: Cache, executor: concurrent.futures.Executor | None,
                 order: Sequence[str] = (), ahead: int = 0) -> None:
        import uuid

        self.cache, self.executor = cache, executor
        self.owner = Cache.lease_owner(uuid.uuid4().hex[:12])
        self.held: set[str] = set()
        self._order, self._next, self.ahead = list(order), 0, int(ahead)
        self._asked: set[str] = set()
        self._prefetched: dict[str, tuple[str, Any]] = {}
        self._take: list[tuple[str, asyncio.Future]] = []
        self._taking = False
        self._waiting: dict[str, list[asyncio.Future]] = {}
        self._tasks: set[asyncio.Task] = set()
        self._poller: asyncio.Task | None = None
        self._renewer: asyncio.Task | None = None
        self._warned = False

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def take(self, key: str) -> tuple[str, Any]:
        """``("mine", None)``, ``("done", row)`` or ``("held", owner)``."""
        self._asked.add(key)
        ready = self._prefetched.pop(key, None)
        if ready is not None and ready[0] != "held":  # taken ahead (a held one is asked again)
            return ready
        fut = asyncio.get_running_loop().create_future()
        self._take.append((key, fut))
        if not self._taking:
            self._taking = True
            self._spawn(self._flush())
        return await fut

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._take:
                batch, self._take = self._take, []
                for k, fut in batch:  # taken ahead while they were queued for this batch
                    ready = self._prefetched.get(k)
                    if ready is not None and ready[0] != "held" and not fut.done():
                        del self._prefetched[k]
                        fut.set_result(ready)
                batch = [(k, fut) for k, fut in batch if not fut.done()]
                if not batch:
                    continue
                keys = [k for k, _ in batch]
                asked = set(keys)
                while self._next < len(self._order) and len(keys) < len(batch) + self.ahead:
                    k = self._order[self._next]
                    self._next += 1
                    if k not in self._asked and k not in asked and k not in self._prefetched:
                        keys.append(k)  # the next requests in line: leased now, used when they get a slot
                try:
                    res = await loop.run_in_executor(self.executor, self.cache.take_leases, keys, self.owner, self.TTL)
                except Exception as exc:  # a broken cache must not stop paid work: go on unprotected
                    if not self._warned:
                        self._warned = True
                        log.warning("cache %s: leases unavailable (%s: %s); calls go ahead without them",
                                    self.cache.path, type(exc).__name__, exc)
                    res = {k: ("mine", None) for k in keys}
                for k in keys:
                    if res[k][0] == "mine":
                        self.held.add(k)
                for k, fut in batch:
                    if not fut.done():
                        fut.set_result(res[k])
                for k in keys[len(batch):]:
                    self._prefetched[k] = res[k]
                if self.held and self._renewer is None:
                    self._renewer = self._spawn(self._renew())
        finally:
            self._taking = False

    async def wait(self, key: str) -> tuple[str, Any]:
        """Wait until another process's lease on ``key`` ends: ``("done", row)`` or ``("free", None)``."""
        fut = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, []).append(fut)
        if self._poller is None:
            self._poller = self._spawn(self._poll())
        return await fut

    async def _poll(self) -> None:
        loop = asyncio.get_running_loop()
        interval = 0.02
        try:
            while self._waiting:
                await asyncio.sleep(interval)
                interval = min(0.25, interval * 1.5)
                keys = list(self._waiting)
                try:
                    res = await loop.run_in_executor(None, self.cache.poll_leases, keys, self.owner)
                except Exception:  # try again at the next tick
                    continue
                for k in keys:
                    state = res.get(k)
                    if state is not None and state[0] != "held":
                        for fut in self._waiting.pop(k, []):
                            if not fut.done():
                                fut.set_result(state)
        finally:
            self._poller = None

    async def _renew(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.TTL / 3)
            if self.held:
                try:
                    await loop.run_in_executor(self.executor, self.cache.renew_leases, self.owner, self.TTL)
                except Exception:
                    pass

    def release(self, key: str) -> None:
        """Release the lease on ``key`` now (the call failed: another process may try)."""
        self._prefetched.pop(key, None)
        if key in self.held:
            self.held.discard(key)
            self._release_now([key])

    def _release_now(self, keys: list[str]) -> None:
        def rel() -> None:
            try:
                self.cache.release_leases(self.owner, keys)
            except Exception:
                pass

        if self.executor is not None:
            asyncio.get_running_loop().run_in_executor(self.executor, rel)
        else:
            rel()

    def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for futs in self._waiting.values():
            for fut in futs:
                fut.cancel()
        self._waiting.clear()

    def close(self) -> None:
        """Release every lease of this run (success, failure or cancellation)."""
        try:
            self.cache.release_leases(self.owner)
        except Exception as exc:  # they expire within TTL anyway
            log.warning("cache %s: could not release leases (%s); they expire within %.0f s",
                        self.cache.path, exc, self.TTL)
        self.held.clear()


class Client:
    """Runs Requests against one model string, through the cache.

    Use :func:`get_client` to build one. ``run(requests)`` returns Responses in request order;
    ``last_run`` holds the :class:`RunStats` of the latest run.
    """

    def __init__(self, model: str, *, cache_mode: str = "use", cache_path: str | os.PathLike | None = None,
                 cache: Cache | None = None, concurrency: int | None = None, rpm: float | None = None,
                 tpm: float | None = None, budget_usd: float | None = None, timeout: float | None = None,
                 max_retries: int = 8, backoff_base: float = 0.5, backoff_max: float = 60.0,
                 budget: Budget | None = None, **provider_options: Any) -> None:
        self.spec = parse_model(model)
        self.model = str(self.spec)
        if self.spec.replay:
            cache_mode = "replay"
        self.cache = cache if cache is not None else Cache(cache_path, mode=cache_mode)
        if cache is not None and cache_mode != "use":
            self.cache.mode = cache_mode
        self.concurrency = concurrency
        self.rpm, self.tpm = rpm, tpm
        if budget is not None and budget_usd is not None:
            raise BudgetError("give budget_usd (a cap for this client) or budget (a Budget shared by several "
                              "clients), not both")
        if budget is not None and not isinstance(budget, Budget):
            raise BudgetError(f"budget must be a medeval_kit.llm.Budget, got {type(budget).__name__}")
        # the cap holds for the client's whole lifetime (every run), or for all clients sharing it
        self.budget: Budget | None = budget if budget is not None else (
            Budget(budget_usd) if budget_usd is not None else None)
        self.budget_usd = self.budget.cap if self.budget is not None else None
        self.timeout = float(timeout) if timeout is not None else 60.0
        self.retry = RetryPolicy(max_retries, backoff_base, backoff_max)
        self.provider_options = dict(provider_options, timeout=self.timeout)
        self._providers: dict[str, Provider] = {}
        self._writer: concurrent.futures.ThreadPoolExecutor | None = None
        self.last_run: RunStats | None = None

    def __repr__(self) -> str:
        return f"Client({self.model!r}, cache={self.cache!r})"

    # ------------------------------------------------------------------ helpers
    def _spec_for(self, request: Request) -> ModelSpec:
        spec = parse_model(request.model) if request.model else self.spec
        if spec.replay or self.spec.replay:
            spec = dataclasses.replace(spec, replay=True)
        return spec

    def provider(self, spec: ModelSpec) -> Provider:
        k = str(spec)
        if k not in self._providers:
            self._providers[k] = make_provider(spec, **self.provider_options)
        return self._providers[k]

    def canonical(self, request: Request, spec: ModelSpec) -> dict[str, Any]:
        """The canonical request that is hashed into the cache key: the request plus the provider
        options that change it on the wire (see ``providers.key_options``)."""
        return request.canonical(spec, key_options(spec, self.provider_options, request))

    def _key(self, request: Request, spec: ModelSpec) -> str:
        """The cache key: the request plus the provider options that change it on the wire."""
        return request.key(spec, key_options(spec, self.provider_options, request))

    def keys(self, requests: Sequence[Request]) -> list[str]:
        """Cache keys of ``requests`` (with this client's model and wire options filled in)."""
        return [self._key(r, self._spec_for(r)) for r in requests]

    def estimate(self, requests: Sequence[Request], *, batch: bool = False):
        """Cost estimate of running ``requests`` (cached ones are free): typical and proven-ceiling
        cost, and with a budget its cap and what is spent, reserved (in flight) and unconfirmed."""
        reqs = [r if r.model else r.with_model(self.model) for r in requests]
        est = estimate_cost(reqs, cache=self.cache if self.cache.reads else None, batch=batch,
                            keys=self.keys(requests),
                            bound=lambda r, s: self.provider(self._spec_for(r)).prompt_token_bound(r))
        b = self.budget
        if b is not None:
            est = dataclasses.replace(est, budget_usd=b.cap, spent_usd=b.spent, reserved_usd=b.reserved,
                                      unconfirmed_usd=b.unconfirmed)
        return est

    def response_from_row(self, row: dict[str, Any], request: Request, spec: ModelSpec) -> Response:
        text = row["text"] if row["text"] is not None else ""  # a stored row is a reply, maybe an empty one
        parsed, status, perr = parse_reply(text, request.schema, finish_reason=row["finish_reason"])
        return Response(
            text=text, parsed=parsed, parse_status=status, error=None,
            usage={"prompt_tokens": row["prompt_tokens"] or 0, "completion_tokens": row["completion_tokens"] or 0},
            cost_usd=0.0, latency_s=row["latency_s"] or 0.0, provider=spec.provider, model=spec.name,
            key=row["key"], cached=True, request=request, parse_error=perr,
            finish_reason=row["finish_reason"], response_id=row["response_id"], attempts=0,
            created_utc=row["created_utc"],
        )

    def response_from_completion(self, c: Completion, request: Request, spec: ModelSpec, key: str,
                                 latency: float, attempts: int, *, batch: bool = False) -> Response:
        # no content (OpenAI ``content: null``, e.g. a refusal; an empty Anthropic content list) is a
        # reply, and paid for: text "", parse_status "failed" with the reason, counted and cached
        text = c.text if c.text is not None else ""
        parsed, status, perr = parse_reply(text, request.schema, finish_reason=c.finish_reason)
        cost = cost_of(spec, c.prompt_tokens, c.completion_tokens, batch=batch)
        return Response(
            text=text, parsed=parsed, parse_status=status, error=None,
            usage={"prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens},
            cost_usd=cost, latency_s=latency, provider=spec.provider, model=spec.name, key=key,
            cached=False, request=request, parse_error=perr, finish_reason=c.finish_reason,
            response_id=c.response_id, attempts=attempts, created_utc=utcnow(),
        )

    def store(self, resp: Response, request: Request, spec: ModelSpec, raw: dict[str, Any],
              source: str = "live") -> None:
        if not self.cache.writes or resp.error is not None or resp.text is None:
            return  # errors are never cached (an empty reply, text "", is)
        text = resp.text
        if _secrets.contains_secret(text, patterns=False):  # a reply that echoes a key is stored without it
            text = _secrets.redact(text, patterns=False)
        raw = _secrets.redact_json(raw)
        self.cache.put({
            "key": resp.key, "provider": spec.provider, "model": spec.name,
            "request_json": canonical_json(self.canonical(request, spec)), "text": text,
            "raw_json": raw, "prompt_tokens": resp.usage["prompt_tokens"],
            "completion_tokens": resp.usage["completion_tokens"],
            "cost_usd": None if math.isnan(resp.cost_usd) else resp.cost_usd,
            "latency_s": resp.latency_s, "finish_reason": resp.finish_reason,
            "response_id": resp.response_id, "source": source, "created_utc": resp.created_utc,
        })

    @staticmethod
    def error_response(request: Request, spec: ModelSpec, key: str, error: str, attempts: int,
                       latency: float = 0.0) -> Response:
        """A failed call: no text, ``parse_status="missing"``, ``error`` redacted (the one place any
        ``Response.error`` is made, live or batch)."""
        return Response(text=None, parsed=None, parse_status="missing", error=redact(error),
                        provider=spec.provider, model=spec.name, key=key, request=request,
                        attempts=attempts, latency_s=latency, created_utc=utcnow())

    # ------------------------------------------------------------------ run
    def run(self, requests: Sequence[Request], progress: bool = True, desc: str | None = None) -> list[Response]:
        """Run ``requests``; return one Response per request, in order.

        Raises :class:`CacheMissError` in replay mode when some requests are not cached (before
        any call). Failed calls come back as Responses with ``error`` set (never cached).
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(requests, progress=progress, desc=desc))
        # inside a running loop (Jupyter): run our own loop in a worker thread
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="medeval-llm") as ex:
            return ex.submit(asyncio.run, self.arun(requests, progress=progress, desc=desc)).result()

    async def arun(self, requests: Sequence[Request], progress: bool = True, desc: str | None = None
                   ) -> list[Response]:
        """The coroutine behind :meth:`run`."""
        t0 = time.perf_counter()
        requests = list(requests)
        for i, r in enumerate(requests):
            if not isinstance(r, Request):
                raise RequestError(f"requests[{i}] is a {type(r).__name__}, not a medeval_kit.llm.Request")
        specs = [self._spec_for(r) for r in requests]
        keys = [self._key(r, s) for r, s in zip(requests, specs)]
        first: dict[str, int] = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)
        rows = self.cache.get_many(first) if self.cache.reads else {}
        done: dict[str, Response] = {}
        for k, row in rows.items():
            i = first[k]
            done[k] = self.response_from_row(row, requests[i], specs[i])
        todo = [(k, i) for k, i in first.items() if k not in done]
        if todo and (self.cache.mode == "replay" or any(specs[i].replay for _, i in todo)):
            missing = [(k, str(specs[i]), requests[i].preview()) for k, i in todo]
            shown = "\n".join(f"  {k[:12]}  {m}  {p!r}" for k, m, p in missing[:20])
            more = f"\n  ... and {len(missing) - 20} more" if len(missing) > 20 else ""
            raise CacheMissError(
                f"replay mode: {len(missing)} of {len(first)} distinct requests are not in the cache "
                f"{self.cache.path}:\n{shown}{more}\nRun once with cache_mode='use' (and API keys set) to "
                f"record them, or point MEDEVAL_CACHE at a cache that has them.", missing)

        budget = self.budget
        if budget is not None:
            unpriced = sorted({specs[i].id for _, i in todo if price_for(specs[i]) is None})
            if unpriced:
                raise BudgetError(f"budget_usd is set but there is no price for {', '.join(unpriced)}: "
                                  "add it to data/prices.yaml (or drop the budget)")

        n_hits = len(done)
        counters = {"called": 0, "retries": 0, "failed": 0, "budget": 0, "tokens": 0, "cost": 0.0,
                    "unconfirmed": 0.0, "n_unconfirmed": 0, "not_stored": 0, "peers": 0}
        bar = None
        if progress:
            bar = progress_bar(total=len(first), desc=desc or self.model, unit="req", dynamic_ncols=True)
            bar.update(len(done))
            bar.set_postfix_str(f"hits={len(done)}", refresh=False)

        providers: dict[str, Provider] = {}
        for _, i in todo:
            p = self.provider(specs[i])
            providers[p.limit_key + "|" + str(specs[i])] = p
        sems: dict[str, _Slots] = {}
        limiters: dict[str, RateLimiter] = {}
        for p in providers.values():
            if p.limit_key not in sems:
                sems[p.limit_key] = _Slots(self.concurrency or p.default_concurrency)
                limiters[p.limit_key] = RateLimiter(self.rpm, self.tpm)

        def tick(resp: Response) -> None:
            if bar is None:
                return
            counters["tokens"] += resp.usage["prompt_tokens"] + resp.usage["completion_tokens"]
            if not math.isnan(resp.cost_usd) and not resp.cached:
                counters["cost"] += resp.cost_usd
            post = f"hits={n_hits + counters['peers']} fail={counters['failed']} tok={counters['tokens']} " \
                   f"${counters['cost']:.4f}"
            if budget is not None:
                post += (f" budget ${budget.cap:.2f}: spent=${budget.spent:.4f} res=${budget.reserved:.4f} "
                         f"unconf=${budget.unconfirmed:.4f}")
            elif counters["n_unconfirmed"]:
                post += f" unconf=${counters['unconfirmed']:.4f}"
            bar.set_postfix_str(post, refresh=False)
            bar.update(1)

        self._writer = (concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="medeval-cache")
                        if self.cache.writes and todo else None)
        # leases keep processes that share the cache from paying twice (``use`` mode only: ``refresh``
        # re-samples on purpose, ``off`` shares nothing)
        # a few hundred keys per lease transaction: with ahead = concurrency the lease round trips held
        # slots idle (bench: 0.69-0.78 of bare httpx2's throughput, 0.86-0.92 with this)
        ahead = max([256] + [4 * s._n for s in sems.values()])
        leases = (_Leases(self.cache, self._writer, [k for k, _ in todo], ahead=ahead)
                  if self.cache.mode == "use" and todo else None)

        async def one(k: str, i: int) -> None:
            resp = await self._call(requests[i], specs[i], k, sems, limiters, budget, counters, leases)
            done[k] = resp
            tick(resp)

        try:
            for p in {id(p): p for p in providers.values()}.values():
                await p.open()
            await asyncio.gather(*(one(k, i) for k, i in todo))
        finally:
            if leases is not None:
                leases.stop()
            if self._writer is not None:
                self._writer.shutdown(wait=True)
                self._writer = None
            if leases is not None:
                leases.close()
            for p in {id(p): p for p in providers.values()}.values():
                try:
                    await p.aclose()
                except Exception:  # closing must not hide the run's outcome
                    pass
            if bar is not None:
                bar.close()

        out: list[Response] = []
        for r, k in zip(requests, keys):
            resp = done[k]
            out.append(resp if resp.request is r else dataclasses.replace(resp, request=r))
        n_cached = sum(1 for r in out if r.cached)
        n_failed = sum(1 for r in out if r.error is not None)
        ptok = sum(done[k].usage["prompt_tokens"] for k in first if not done[k].cached)
        ctok = sum(done[k].usage["completion_tokens"] for k in first if not done[k].cached)
        costs = [done[k].cost_usd for k in first if not done[k].cached and done[k].error is None]
        cost = math.nan if any(math.isnan(c) for c in costs) else float(sum(costs))
        self.last_run = RunStats(
            n=len(out), n_cached=n_cached, n_failed=n_failed,
            n_parse_failed=sum(1 for r in out if r.parse_status == "failed"),
            prompt_tokens=ptok, completion_tokens=ctok, cost_usd=cost,
            wall_s=time.perf_counter() - t0, n_called=counters["called"], n_retries=counters["retries"],
            n_skipped_budget=counters["budget"], n_duplicates=len(out) - len(first), model=self.model,
            unconfirmed_usd=counters["unconfirmed"], n_unconfirmed=counters["n_unconfirmed"],
            budget_usd=budget.cap if budget is not None else None,
            budget_spent_usd=budget.spent if budget is not None else 0.0,
            budget_unconfirmed_usd=budget.unconfirmed if budget is not None else 0.0,
            reserved_usd=budget.reserved if budget is not None else 0.0,
            budget_note=budget.halted if budget is not None else None,
            n_not_stored=counters["not_stored"], n_from_peers=counters["peers"],
        )
        if n_failed:
            log.warning("%s: %d of %d requests failed (first error: %s)", self.model, n_failed, len(out),
                        next(r.error for r in out if r.error is not None))
        if counters["not_stored"]:
            log.warning("%s: %d replies were received (and paid for) but not stored in the cache %s (first "
                        "error: %s); they are returned, but a new run will call them again", self.model,
                        counters["not_stored"], self.cache.path,
                        next(r.cache_error for r in out if r.cache_error is not None))
        return out

    async def _call(self, request: Request, spec: ModelSpec, key: str, sems, limiters, budget: Budget | None,
                    counters: dict[str, Any], leases: _Leases | None = None) -> Response:
        provider = self.provider(spec)
        sem, limiter = sems[provider.limit_key], limiters[provider.limit_key]
        # the ceiling of this call: prompt tokens at a proven upper bound, the reply at max_tokens
        bound = provider.prompt_token_bound(request)
        est_tokens = bound + int(request.max_tokens)
        price = price_for(spec)
        ceiling = price.cost(bound, int(request.max_tokens)) if price is not None else math.nan
        reserve = ceiling if budget is not None else 0.0
        holding = 0.0  # the reservation of the attempt in flight, until settled, released or lost
        t_start = time.perf_counter()
        attempt = 0  # attempts sent so far
        n_backoff = 0  # failures without a Retry-After: the exponent of the backoff
        n_broken = 0  # 200s with an unreadable body
        leased = leases is None
        delivered = False
        try:
            while True:
                retry_after = None
                lease_state = None
                async with sem.slot(retry=attempt > 0):  # retries go first
                    if not leased:  # take the lease on this key just before sending
                        lease_state, row = await leases.take(key)
                        if lease_state == "done":  # another process stored it meanwhile
                            counters["peers"] += 1
                            delivered = True
                            return self.response_from_row(row, request, spec)
                        leased = lease_state == "mine"
                    if leased:
                        await limiter.acquire(est_tokens)
                        if budget is not None:  # reserved now, never while queued
                            why = await budget.reserve(reserve)
                            if why is not None:
                                limiter.refund(est_tokens)
                                counters["budget"] += 1
                                counters["failed"] += 1
                                return self.error_response(request, spec, key, f"budget: not sent: {why}", attempt,
                                                           time.perf_counter() - t_start)
                            holding = reserve
                        counters["called"] += attempt == 0
                        attempt += 1
                        t0 = time.perf_counter()
                        try:
                            if provider.uses_network and hasattr(asyncio, "timeout"):  # 3.11+: no extra task
                                async with asyncio.timeout(self.timeout + 5.0):  # safety net over httpx2's timeouts
                                    c = await provider.acomplete(request)
                            elif provider.uses_network:
                                c = await asyncio.wait_for(provider.acomplete(request), self.timeout + 5.0)
                            else:
                                c = await provider.acomplete(request)
                        except asyncio.CancelledError:  # it was sent: it may be generated and billed
                            holding = 0.0
                            self._lost(budget, reserve, ceiling, counters)
                            raise
                        except Exception as exc:  # classified below; never lost
                            f = failure(exc)
                            holding = 0.0
                            if f.billed:
                                self._lost(budget, reserve, ceiling, counters)
                            elif budget is not None:
                                budget.release(reserve)
                            n_broken += f.broken_body
                            if not f.retryable or attempt > self.retry.max_retries or n_broken > 2:
                                counters["failed"] += 1
                                why = " (a 200 with an unreadable body is retried at most twice)" \
                                    if f.retryable and n_broken > 2 else ""
                                err = f"{f.what} (after {attempt} attempt{'s' if attempt > 1 else ''}){why}"
                                log.warning("%s: request %s failed: %s", spec, key[:12], redact(err))
                                return self.error_response(request, spec, key, err, attempt,
                                                           time.perf_counter() - t_start)
                            retry_after = f.retry_after
                            log.debug("%s: attempt %d of %s failed (%s); retrying", spec, attempt, key[:12],
                                      redact(f.what))
                        else:
                            latency = time.perf_counter() - t0
                            resp = self.response_from_completion(c, request, spec, key, latency, attempt)
                            if budget is not None:
                                holding = 0.0
                                budget.settle(reserve, resp.cost_usd)
                            limiter.refund(est_tokens - c.prompt_tokens - c.completion_tokens)
                            # stored before the call counts as done (a crash loses nothing paid), in a
                            # writer thread so the event loop keeps sending; a failed write keeps the reply
                            try:
                                if self._writer is not None:
                                    await asyncio.get_running_loop().run_in_executor(
                                        self._writer, self.store, resp, request, spec, c.raw)
                                else:
                                    self.store(resp, request, spec, c.raw)
                            except Exception as exc:
                                resp.cache_error = redact(f"{type(exc).__name__}: {exc}")
                                counters["not_stored"] += 1
                                log.warning("%s: reply to %s received but not stored in the cache: %s", spec,
                                            key[:12], resp.cache_error)
                            else:
                                delivered = True
                            return resp
                if not leased:  # another live process is calling it: wait for its result, outside the slot
                    state, row = await leases.wait(key)
                    if state == "done":
                        counters["peers"] += 1
                        delivered = True
                        return self.response_from_row(row, request, spec)
                    continue  # released, expired or orphaned: try to take it
                counters["retries"] += 1
                wait = self.retry.delay(n_backoff, retry_after)
                if retry_after is None:  # backoff spaces attempts from the start of the failed one:
                    n_backoff += 1  # an attempt that hung until a timeout has already waited
                    wait -= time.perf_counter() - t0
                await asyncio.sleep(max(0.0, wait))
        finally:
            if holding and budget is not None:  # the reply arrived but could not be read: it was billed
                self._lost(budget, holding, ceiling, counters)
            if leases is not None and not delivered:
                leases.release(key)  # failed, skipped or cancelled: another process may try

    @staticmethod
    def _lost(budget: Budget | None, reserve: float, ceiling: float, counters: dict[str, Any]) -> None:
        """An attempt whose reply may have been generated (and billed) but never arrived."""
        if budget is not None:
            budget.lose(reserve)
        counters["unconfirmed"] += ceiling
        counters["n_unconfirmed"] += 1

    # ------------------------------------------------------------------ batch APIs
    def submit_batch(self, requests: Sequence[Request], **kw: Any) -> list[str]:
        """Submit the uncached requests to the provider's batch API; return the batch ids."""
        from .batch import submit_batch

        return submit_batch(self, requests, **kw)

    def poll_batches(self, **kw: Any):
        """Refresh the status of the pending batches of this cache; return a DataFrame."""
        from .batch import poll_batches

        return poll_batches(self, **kw)

    def collect_batches(self, **kw: Any) -> int:
        """Store the results of finished batches in the cache; return how many were stored."""
        from .batch import collect_batches

        return collect_batches(self, **kw)

    def run_batch(self, requests: Sequence[Request], **kw: Any) -> list[Response]:
        """Submit (or resume), poll until done, collect into the cache and return the Responses."""
        from .batch import run_batch

        return run_batch(self, requests, **kw)


def get_client(model: str, *, cache_mode: str = "use", cache_path: str | os.PathLike | None = None,
               concurrency: int | None = None, rpm: float | None = None, tpm: float | None = None,
               budget_usd: float | None = None, budget: Budget | None = None, **options: Any) -> Client:
    """Build a :class:`Client` for a model string.

    Args:
        model: ``local/smollm2-135m``, ``openai/gpt-4o``, ``anthropic/claude-3-5-sonnet-latest``,
            ``openai/<name>@http://host:port/v1`` (OpenAI-compatible server) or ``replay/<provider>/<name>``.
        cache_mode: ``off``, ``use`` (default), ``replay`` or ``refresh``. The environment variable
            ``MEDEVAL_CACHE_MODE`` overrides it for a whole process tree (``make test`` sets
            ``replay``, so no test or executed notebook can make a real call).
        cache_path: SQLite file; default ``$MEDEVAL_CACHE`` or ``<repo>/data/cache/llm.sqlite``.
        concurrency: calls in flight per provider (default: local 1, openai 32, anthropic 16).
        rpm, tpm: requests / tokens per minute per provider.
        budget_usd: a hard spending cap in USD for this client's whole lifetime (every ``run``): a
            call is sent only if spent + in flight + unconfirmed + its proven ceiling fit (see :class:`Budget`).
        budget: a :class:`Budget` shared by several clients (e.g. every client of one study run);
            give ``budget_usd`` or ``budget``, not both.
        **options: ``timeout`` (s, default 60), ``max_retries`` (8), ``backoff_base`` (0.5 s),
            ``backoff_max`` (60 s), ``cache`` (a Cache object), and provider options
            (``api_key_env``, ``schema_format``, ``base_url`` for Anthropic, ``transport`` = ``"http"``
            (default: JSON over httpx2) or ``"sdk"`` (through the official SDK), ``n_pools`` (4 httpx2
            pools, round-robin), ``n_ctx``, ``n_threads``).
    """
    if not isinstance(model, str):
        raise LLMError(f"get_client: model must be a string, got {type(model).__name__}")
    cache_mode = os.environ.get("MEDEVAL_CACHE_MODE") or cache_mode
    return Client(model, cache_mode=cache_mode, cache_path=cache_path, concurrency=concurrency, rpm=rpm,
                  tpm=tpm, budget_usd=budget_usd, budget=budget, **options)
