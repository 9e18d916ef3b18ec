"""The client: runs Requests against one model string through the cache, with per-provider
concurrency and RPM/TPM limits, retries (``Retry-After`` as given, else exponential backoff with
jitter; failures that will recur are not retried), timeouts, a budget that is a hard ceiling
(:class:`~medeval_kit.llm.budget.Budget`) and, in a study run, one budget shared by all its processes
(:mod:`~medeval_kit.llm.ledger`, ``MEDEVAL_RUN_ID`` + ``MEDEVAL_RUN_BUDGET_USD``), leases with fencing that
keep processes sharing a cache from paying twice, a progress bar, and one line per run in the call log
``$MEDEVAL_CALL_LOG`` (:mod:`~medeval_kit.llm.calllog`). ``Client.run`` is synchronous and also works
inside Jupyter's running loop; the stages of a run and of each call are in :mod:`medeval_kit.llm.calls`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import os
from collections.abc import Sequence
from typing import Any

from medeval_kit.docstrings import shared_docs

from . import secrets as _secrets
from .budget import Budget
from .cache import Cache
from .calllog import append_call_log
from .calls import Run
from .cost import estimate_cost
from .errors import BudgetError, LLMError
from .ledger import RunLedger, run_budget_from_env
from .limits import RetryPolicy
from .providers.base import Completion, Provider
from .record import cache_entry
from .registry import key_options, make_provider, provider_class
from .secrets import get_logger
from .types import ModelSpec, Request, Response, RunStats, canonical_json, key_of_json, parse_model

log = get_logger(__name__)

CACHE_MODE_ENV = "MEDEVAL_CACHE_MODE"  # forces the cache mode for a whole process tree (``make test``: replay)
DEFAULT_TIMEOUT_S = 60.0


def redact(text: str | None, extra_env: Sequence[str] = ()) -> str | None:
    """Remove every form of every known API key from a text.

    The values of the providers' key variables, of every ``api_key_env=`` in use and of any ``*API_KEY``
    variable are removed as set and stripped, repr'd, JSON-escaped or URL-encoded, with their echoed
    prefixes and masked tails, and ``sk-...`` tokens (:mod:`medeval_kit.llm.secrets`).

    Parameters
    ----------
    text : str or None
        Any text that may reach a log, a cache, an error message or a notebook.
    extra_env : sequence of str
        Further environment variables whose values are secrets.

    Returns
    -------
    str or None
        The text with each secret replaced by a marker; ``None`` stays ``None``.
    """
    return _secrets.redact(text, extra_env)



# The options Client and get_client share, written once for both docstrings
_CLIENT_DOCS = {"client_options": """\
model : str
    ``<provider>/<name>`` for a registered provider (:func:`parse_model`): ``local/smollm2-135m``,
    ``openai/gpt-4o``, ``anthropic/claude-3-5-sonnet-latest``, ``openai/<name>@http://host:port/v1``
    (any OpenAI-compatible server) or ``replay/<provider>/<name>`` (answers from the cache only).
cache_mode : {"use", "off", "replay", "refresh"}, default "use"
    ``use`` reads and writes the cache, ``replay`` answers from it only (a miss raises
    :class:`CacheMissError`), ``refresh`` calls again and overwrites, ``off`` bypasses it. The
    environment variable ``MEDEVAL_CACHE_MODE`` overrides it for a whole process tree (``make test``
    sets ``replay``, so no test or executed notebook can make a real call).
cache_path : path-like, optional
    The SQLite cache; default ``<project>/data/cache/llm.sqlite`` (:func:`default_cache_path`).
concurrency : int, optional
    Calls in flight per provider; default the provider's own (local 1, openai 32, anthropic 16).
rpm, tpm : float, optional
    Requests and tokens per minute per provider (:class:`RateLimiter`).
budget_usd : float, optional
    A hard spending cap in USD for the client's whole lifetime (every ``run``): a call is sent only
    if spent + in flight + unconfirmed + its proven ceiling fit (:class:`Budget`).
budget : Budget, optional
    A budget shared by several clients (e.g. every client of one study run); give ``budget_usd`` or
    ``budget``, not both. With ``MEDEVAL_RUN_ID`` and ``MEDEVAL_RUN_BUDGET_USD`` set (the study runner
    sets them) the client also obeys the run's budget, shared by every process of the run."""}


@shared_docs(**_CLIENT_DOCS)
class Client:
    """Runs requests against one model string, through the cache, within the rate limits and the budget.

    Build one with :func:`get_client`. ``run(requests)`` returns :class:`Response` objects in request
    order and keeps the :class:`RunStats` of the latest run in ``last_run``; ``estimate(requests)`` gives a
    :class:`CostEstimate` before any call. An interrupted run resumes from the cache without paying twice.

    Parameters
    ----------
    {client_options}
    cache : Cache, optional
        A cache object to use instead of opening ``cache_path``.
    timeout : float, optional
        Seconds per attempt; default 60.
    max_retries : int, default 8
        Retries after the first attempt (:class:`RetryPolicy`).
    backoff_base, backoff_max : float, default 0.5 and 60.0
        The exponential backoff's first step and ceiling, in seconds.
    **provider_options
        The provider's own options (see :func:`get_client`).
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
        # one budget for every process and client of a study run (MEDEVAL_RUN_ID + MEDEVAL_RUN_BUDGET_USD)
        run_budget = run_budget_from_env()
        self.ledger: RunLedger | None = RunLedger(self.cache.path, *run_budget) if run_budget else None
        self.timeout = float(timeout) if timeout is not None else DEFAULT_TIMEOUT_S
        self.retry = RetryPolicy(max_retries, backoff_base, backoff_max)
        self.provider_options = dict(provider_options, timeout=self.timeout)
        self._providers: dict[str, Provider] = {}
        self.found: dict[str, dict[str, str]] = {}  # endpoint -> options found for those left to "auto"
        self.last_run: RunStats | None = None

    def __repr__(self) -> str:
        return f"Client({self.model!r}, cache={self.cache!r})"

    # ------------------------------------------------------------------ keys and providers
    def _spec_for(self, request: Request) -> ModelSpec:
        spec = parse_model(request.model) if request.model else self.spec
        if spec.replay or self.spec.replay:
            spec = dataclasses.replace(spec, replay=True)
        return spec

    def provider(self, spec: ModelSpec) -> Provider:
        """The provider instance for ``spec`` (one per model string, kept for the client's lifetime)."""
        k = str(spec)
        if k not in self._providers:
            self._providers[k] = make_provider(spec, **self.wire_options(spec))
        return self._providers[k]

    def wire_options(self, spec: ModelSpec) -> dict[str, Any]:
        """The provider options for ``spec``, each one left to ``"auto"`` replaced by what was found
        for its endpoint, in this client's life or by an earlier run (kept in the cache)."""
        auto = [o for o in provider_class(spec.provider).learned_options if self.provider_options.get(o) == "auto"]
        if not auto:
            return self.provider_options
        if spec.endpoint not in self.found:
            self.found[spec.endpoint] = self._stored_options(spec.endpoint)
        found = self.found[spec.endpoint]
        return {**self.provider_options, **{o: found[o] for o in auto if o in found}}

    def _stored_options(self, endpoint: str) -> dict[str, str]:
        """What an earlier run found for ``endpoint`` and kept in the cache ({} with the cache off)."""
        if self.cache.mode == "off":
            return {}
        try:
            return self.cache.endpoint_options(endpoint)
        except Exception as exc:  # an unreadable cache: probe again rather than stop
            log.warning("cache %s: endpoint options unreadable (%s); probing again", self.cache.path, exc)
            return {}

    def learn(self, spec: ModelSpec, found: dict[str, str]) -> None:
        """Keep options a provider found for ``spec``'s endpoint: for this client's life, and in the
        cache when it writes, so later runs send and key their requests the same way without probing."""
        known = self.found.setdefault(spec.endpoint, {})
        new = {k: v for k, v in found.items() if known.get(k) != v}
        if not new:
            return
        known.update(new)
        log.info("%s: found %s", spec.endpoint, ", ".join(f"{k}={v!r}" for k, v in new.items()))
        if self.cache.writes:
            try:
                for k, v in new.items():
                    self.cache.set_endpoint_option(spec.endpoint, k, v)
            except Exception as exc:  # not kept: the next client probes again
                log.warning("cache %s: could not keep %s for %s (%s)", self.cache.path, new, spec.endpoint, exc)

    def canonical(self, request: Request, spec: ModelSpec) -> dict[str, Any]:
        """The canonical request that is hashed into the cache key: the request plus the provider
        options that change it on the wire (see ``Provider.key_options``)."""
        return request.canonical(spec, key_options(spec, self.wire_options(spec), request))

    def _key(self, request: Request, spec: ModelSpec) -> str:
        """The cache key: the request plus the provider options that change it on the wire."""
        return request.key(spec, key_options(spec, self.wire_options(spec), request))

    def _key_json(self, request: Request, spec: ModelSpec, wire: dict[str, Any] | None = None) -> tuple[str, str]:
        """The cache key and the canonical JSON it hashes (stored as the reply's ``request_json``); ``wire``:
        ``wire_options(spec)`` when the caller has it."""
        opts = self.wire_options(spec) if wire is None else wire
        text = canonical_json(request.canonical(spec, key_options(spec, opts, request)))
        return key_of_json(text), text

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

    def entry(self, resp: Response, request: Request, spec: ModelSpec, c: Completion,
              source: str = "live", request_json: str | None = None) -> dict[str, Any] | None:
        """The cache row of a paid reply; None when nothing is to be written (the cache does not write,
        or the call failed: errors are never cached; an empty reply, text "", is). ``request_json``: the
        canonical request's JSON when the caller has it from the key (:meth:`_key_json`)."""
        if not self.cache.writes or resp.error is not None or resp.text is None:
            return None
        canon = request_json if request_json is not None else self.canonical(request, spec)
        return cache_entry(resp.key, spec, canon, c, resp.cost_usd, source=source,
                           latency_s=resp.latency_s, created_utc=resp.created_utc)

    def store(self, resp: Response, request: Request, spec: ModelSpec, c: Completion, source: str = "live") -> None:
        """Write a paid reply to the cache (errors are never cached; an empty reply, text "", is)."""
        entry = self.entry(resp, request, spec, c, source)
        if entry is not None:
            self.cache.put(entry)

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
        """The coroutine behind :meth:`run`: look up the cache, call the rest, count."""
        run = Run(self, requests)
        run.lookup()
        await run.execute(progress, desc)
        out = run.responses()
        self.last_run = st = run.stats(out)
        run.warn(out)
        append_call_log(self.model, out, st.n_skipped_budget, st.cost_usd)  # for the study runner
        return out

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


@shared_docs(**_CLIENT_DOCS)
def get_client(model: str, *, cache_mode: str = "use", cache_path: str | os.PathLike | None = None,
               concurrency: int | None = None, rpm: float | None = None, tpm: float | None = None,
               budget_usd: float | None = None, budget: Budget | None = None, **options: Any) -> Client:
    """Build a :class:`Client` for a model string.

    Parameters
    ----------
    {client_options}
    **options
        ``timeout`` (seconds per attempt, default 60), ``max_retries`` (8), ``backoff_base`` (0.5 s),
        ``backoff_max`` (60 s) (:class:`RetryPolicy`), ``cache`` (a :class:`Cache` object), and the
        provider's options: ``api_key_env`` (the variable holding the key; keys are read from the
        environment only and redacted everywhere), ``schema_format`` (``"json_schema"`` (default),
        ``"json_object"``, ``"prompt"`` or ``"auto"``: the first one an OpenAI-compatible server takes,
        found once per endpoint and kept in the cache), ``base_url`` (Anthropic), ``transport``
        (``"http"``, the default, JSON over httpx; or ``"sdk"``, the official SDK), ``n_pools`` (HTTP
        connection pools, round-robin; default one per 16 calls in flight, at least 4), ``n_ctx`` and ``n_threads`` (the embedded model).

    Returns
    -------
    Client
        A client whose ``run(requests)`` returns one :class:`Response` per request, in order.

    Raises
    ------
    LLMError
        ``model`` is not a string or names no registered provider.

    Examples
    --------
    >>> from medeval_kit.llm import get_client, Request
    >>> client = get_client("local/smollm2-135m", cache_mode="replay")  # doctest: +SKIP
    >>> [r.text for r in client.run([Request([{"role": "user", "content": "Hi"}])])]  # doctest: +SKIP
    """
    if not isinstance(model, str):
        raise LLMError(f"get_client: model must be a string, got {type(model).__name__}")
    cache_mode = os.environ.get(CACHE_MODE_ENV) or cache_mode
    return Client(model, cache_mode=cache_mode, cache_path=cache_path, concurrency=concurrency, rpm=rpm,
                  tpm=tpm, budget_usd=budget_usd, budget=budget, **options)
