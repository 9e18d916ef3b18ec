"""The client: cache lookup, asyncio execution with per-provider concurrency and RPM/TPM limits,
retries with exponential backoff and jitter (honouring ``Retry-After``), timeouts, a budget cap
and a progress bar. ``Client.run`` is synchronous and also works inside Jupyter's running loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import math
import os
import random
import re
import time
from collections.abc import Sequence
from typing import Any

from .cache import Cache, utcnow
from .cost import cost_of, estimate_cost, estimate_prompt_tokens, price_for
from .errors import BudgetError, CacheMissError, LLMError, RequestError
from .parse import parse_reply
from .providers import Completion, Provider, classify, make_provider
from .types import ModelSpec, Request, Response, RunStats, canonical_json, parse_model

log = logging.getLogger(__name__)

KEY_ENV_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
_KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9*_\-]{3,}|sk-ant-[A-Za-z0-9*_\-]{3,})")


def redact(text: str | None, extra_env: Sequence[str] = ()) -> str | None:
    """Remove API keys (values of the key environment variables, ``sk-...`` tokens) from text."""
    if not text:
        return text
    for var in (*KEY_ENV_VARS, *extra_env):
        val = os.environ.get(var)
        if val and len(val) >= 6:
            text = text.replace(val, "***")
    return _KEY_PATTERN.sub("sk-***", text)


def progress_bar(**kw: Any):
    """A tqdm bar: the notebook widget when ipywidgets is installed, else the text bar."""
    import importlib.util

    if importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.auto import tqdm
    else:
        from tqdm import tqdm
    return tqdm(**kw)


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


class _Budget:
    """Spent plus reserved (upper-bound cost of calls in flight) never exceeds the cap."""

    def __init__(self, cap: float | None) -> None:
        self.cap, self.spent, self.reserved = cap, 0.0, 0.0

    def reserve(self, amount: float) -> bool:
        if self.cap is None:
            return True
        if self.spent + self.reserved + amount > self.cap:
            return False
        self.reserved += amount
        return True

    def settle(self, reserved: float, actual: float) -> None:
        if self.cap is not None:
            self.reserved -= reserved
        if not math.isnan(actual):
            self.spent += actual


# --------------------------------------------------------------------------- client
@dataclasses.dataclass
class RetryPolicy:
    """Retries: up to ``max_retries`` after the first attempt; the delay before retry ``i`` is
    uniform in [0, min(backoff_max, backoff_base * 2**i)] ("full jitter"), and at least the
    server's ``Retry-After`` when it sends one (capped at ``retry_after_max``)."""

    max_retries: int = 8
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    retry_after_max: float = 120.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        d = random.uniform(0.0, min(self.backoff_max, self.backoff_base * (2 ** attempt)))
        if retry_after is not None:
            d = max(d, min(retry_after, self.retry_after_max))
        return d


class Client:
    """Runs Requests against one model string, through the cache.

    Use :func:`get_client` to build one. ``run(requests)`` returns Responses in request order;
    ``last_run`` holds the :class:`RunStats` of the latest run.
    """

    def __init__(self, model: str, *, cache_mode: str = "use", cache_path: str | os.PathLike | None = None,
                 cache: Cache | None = None, concurrency: int | None = None, rpm: float | None = None,
                 tpm: float | None = None, budget_usd: float | None = None, timeout: float | None = None,
                 max_retries: int = 8, backoff_base: float = 1.0, backoff_max: float = 60.0,
                 **provider_options: Any) -> None:
        self.spec = parse_model(model)
        self.model = str(self.spec)
        if self.spec.replay:
            cache_mode = "replay"
        self.cache = cache if cache is not None else Cache(cache_path, mode=cache_mode)
        if cache is not None and cache_mode != "use":
            self.cache.mode = cache_mode
        self.concurrency = concurrency
        self.rpm, self.tpm = rpm, tpm
        self.budget_usd = budget_usd
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

    def keys(self, requests: Sequence[Request]) -> list[str]:
        """Cache keys of ``requests`` (with this client's model filled in)."""
        return [r.key(self._spec_for(r)) for r in requests]

    def estimate(self, requests: Sequence[Request], *, batch: bool = False):
        """Cost estimate of running ``requests`` (cached ones are free)."""
        reqs = [r if r.model else r.with_model(self.model) for r in requests]
        return estimate_cost(reqs, cache=self.cache if self.cache.reads else None, batch=batch)

    def response_from_row(self, row: dict[str, Any], request: Request, spec: ModelSpec) -> Response:
        parsed, status, perr = parse_reply(row["text"], request.schema)
        return Response(
            text=row["text"], parsed=parsed, parse_status=status, error=None,
            usage={"prompt_tokens": row["prompt_tokens"] or 0, "completion_tokens": row["completion_tokens"] or 0},
            cost_usd=0.0, latency_s=row["latency_s"] or 0.0, provider=spec.provider, model=spec.name,
            key=row["key"], cached=True, request=request, parse_error=perr,
            finish_reason=row["finish_reason"], response_id=row["response_id"], attempts=0,
            created_utc=row["created_utc"],
        )

    def response_from_completion(self, c: Completion, request: Request, spec: ModelSpec, key: str,
                                 latency: float, attempts: int, *, batch: bool = False) -> Response:
        parsed, status, perr = parse_reply(c.text, request.schema)
        cost = cost_of(spec, c.prompt_tokens, c.completion_tokens, batch=batch)
        return Response(
            text=c.text, parsed=parsed, parse_status=status, error=None,
            usage={"prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens},
            cost_usd=cost, latency_s=latency, provider=spec.provider, model=spec.name, key=key,
            cached=False, request=request, parse_error=perr, finish_reason=c.finish_reason,
            response_id=c.response_id, attempts=attempts, created_utc=utcnow(),
        )

    def store(self, resp: Response, request: Request, spec: ModelSpec, raw: dict[str, Any],
              source: str = "live") -> None:
        if not self.cache.writes or resp.error is not None or resp.text is None:
            return  # errors are never cached
        self.cache.put({
            "key": resp.key, "provider": spec.provider, "model": spec.name,
            "request_json": canonical_json(request.canonical(spec)), "text": resp.text,
            "raw_json": raw, "prompt_tokens": resp.usage["prompt_tokens"],
            "completion_tokens": resp.usage["completion_tokens"],
            "cost_usd": None if math.isnan(resp.cost_usd) else resp.cost_usd,
            "latency_s": resp.latency_s, "finish_reason": resp.finish_reason,
            "response_id": resp.response_id, "source": source, "created_utc": resp.created_utc,
        })

    @staticmethod
    def error_response(request: Request, spec: ModelSpec, key: str, error: str, attempts: int,
                       latency: float = 0.0) -> Response:
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
        keys = [r.key(s) for r, s in zip(requests, specs)]
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

        budget = _Budget(self.budget_usd)
        if self.budget_usd is not None:
            unpriced = sorted({specs[i].id for _, i in todo if price_for(specs[i]) is None})
            if unpriced:
                raise BudgetError(f"budget_usd is set but there is no price for {', '.join(unpriced)}: "
                                  "add it to data/prices.yaml (or drop the budget)")

        n_hits = len(done)
        counters = {"called": 0, "retries": 0, "failed": 0, "budget": 0, "tokens": 0, "cost": 0.0}
        bar = None
        if progress:
            bar = progress_bar(total=len(first), desc=desc or self.model, unit="req", dynamic_ncols=True)
            bar.update(len(done))
            bar.set_postfix_str(f"hits={len(done)}", refresh=False)

        providers: dict[str, Provider] = {}
        for _, i in todo:
            p = self.provider(specs[i])
            providers[p.limit_key + "|" + str(specs[i])] = p
        sems: dict[str, asyncio.Semaphore] = {}
        limiters: dict[str, RateLimiter] = {}
        for p in providers.values():
            if p.limit_key not in sems:
                sems[p.limit_key] = asyncio.Semaphore(self.concurrency or p.default_concurrency)
                limiters[p.limit_key] = RateLimiter(self.rpm, self.tpm)

        def tick(resp: Response) -> None:
            if bar is None:
                return
            counters["tokens"] += resp.usage["prompt_tokens"] + resp.usage["completion_tokens"]
            if not math.isnan(resp.cost_usd):
                counters["cost"] += resp.cost_usd
            bar.set_postfix_str(
                f"hits={n_hits} fail={counters['failed']} tok={counters['tokens']} ${counters['cost']:.4f}",
                refresh=False)
            bar.update(1)

        async def one(k: str, i: int) -> None:
            resp = await self._call(requests[i], specs[i], k, sems, limiters, budget, counters)
            done[k] = resp
            tick(resp)

        self._writer = (concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="medeval-cache")
                        if self.cache.writes and todo else None)
        try:
            for p in {id(p): p for p in providers.values()}.values():
                await p.open()
            await asyncio.gather(*(one(k, i) for k, i in todo))
        finally:
            if self._writer is not None:
                self._writer.shutdown(wait=True)
                self._writer = None
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
        )
        if n_failed:
            log.warning("%s: %d of %d requests failed (first error: %s)", self.model, n_failed, len(out),
                        next(r.error for r in out if r.error is not None))
        return out

    async def _call(self, request: Request, spec: ModelSpec, key: str, sems, limiters, budget: _Budget,
                    counters: dict[str, Any]) -> Response:
        provider = self.provider(spec)
        sem, limiter = sems[provider.limit_key], limiters[provider.limit_key]
        est_prompt = estimate_prompt_tokens(request)
        est_tokens = est_prompt + int(request.max_tokens)
        price = price_for(spec) if budget.cap is not None else None
        reserve = price.cost(est_prompt, int(request.max_tokens)) if price is not None else 0.0
        last_error = "not attempted"
        t_start = time.perf_counter()
        for attempt in range(self.retry.max_retries + 1):
            if not budget.reserve(reserve):
                counters["budget"] += 1
                counters["failed"] += 1
                return self.error_response(
                    request, spec, key,
                    f"budget: not sent, spent ${budget.spent:.4f} + in flight ${budget.reserved:.4f} + this call "
                    f"(<= ${reserve:.4f}) would exceed budget_usd=${budget.cap:.4f}", attempt)
            retry_after = None
            async with sem:
                await limiter.acquire(est_tokens)
                counters["called"] += attempt == 0
                t0 = time.perf_counter()
                try:
                    if provider.uses_network and hasattr(asyncio, "timeout"):  # 3.11+: no extra task
                        async with asyncio.timeout(self.timeout + 5.0):  # safety net over httpx2's timeouts
                            c = await provider.acomplete(request)
                    elif provider.uses_network:
                        c = await asyncio.wait_for(provider.acomplete(request), self.timeout + 5.0)
                    else:
                        c = await provider.acomplete(request)
                except asyncio.CancelledError:
                    budget.settle(reserve, 0.0)
                    raise
                except Exception as exc:  # classified below; never lost
                    budget.settle(reserve, 0.0)
                    retryable, retry_after, what = classify(exc)
                    last_error = what
                    if not retryable or attempt == self.retry.max_retries:
                        counters["failed"] += 1
                        err = f"{what} (after {attempt + 1} attempt{'s' if attempt else ''})"
                        log.warning("%s: request %s failed: %s", spec, key[:12], redact(err))
                        return self.error_response(request, spec, key, err, attempt + 1,
                                                   time.perf_counter() - t_start)
                    log.debug("%s: attempt %d of %s failed (%s); retrying", spec, attempt + 1, key[:12],
                              redact(what))
                else:
                    latency = time.perf_counter() - t0
                    resp = self.response_from_completion(c, request, spec, key, latency, attempt + 1)
                    budget.settle(reserve, resp.cost_usd)
                    limiter.refund(est_tokens - c.prompt_tokens - c.completion_tokens)
                    # stored before the call counts as done (a crash loses nothing paid), in a
                    # writer thread so the event loop keeps sending
                    if self._writer is not None:
                        await asyncio.get_running_loop().run_in_executor(
                            self._writer, self.store, resp, request, spec, c.raw)
                    else:
                        self.store(resp, request, spec, c.raw)
                    return resp
            counters["retries"] += 1
            await asyncio.sleep(self.retry.delay(attempt, retry_after))
        return self.error_response(request, spec, key, last_error, self.retry.max_retries + 1)  # pragma: no cover

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
               budget_usd: float | None = None, **options: Any) -> Client:
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
        budget_usd: never start a call that could take the run's spending over this.
        **options: ``timeout`` (s, default 60), ``max_retries`` (8), ``backoff_base`` (1 s),
            ``backoff_max`` (60 s), ``cache`` (a Cache object), and provider options
            (``api_key_env``, ``schema_format``, ``base_url`` for Anthropic, ``transport`` = ``"http"``
            (default: JSON over httpx2) or ``"sdk"`` (through the official SDK), ``n_pools`` (4 httpx2
            pools, round-robin), ``n_ctx``, ``n_threads``).
    """
    if not isinstance(model, str):
        raise LLMError(f"get_client: model must be a string, got {type(model).__name__}")
    cache_mode = os.environ.get("MEDEVAL_CACHE_MODE") or cache_mode
    return Client(model, cache_mode=cache_mode, cache_path=cache_path, concurrency=concurrency, rpm=rpm,
                  tpm=tpm, budget_usd=budget_usd, **options)
