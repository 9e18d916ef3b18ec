"""The LLM layer: one client for the embedded local model, OpenAI, Anthropic and OpenAI-compatible
servers, with a record/replay SQLite cache, concurrency, retries, a hard budget, cost and batch APIs.

``types`` (Request, Response, RunStats, model strings), ``registry`` (provider name -> class) and
``providers/`` (one file per provider), ``execute`` (the Client and :func:`get_client`) with the stages
of a run in ``calls``, ``limits`` (rate limits, concurrency slots, retry delays), ``budget``, ``ledger``
(one budget for every process of a study run), ``leases`` (with fencing), ``writer`` (a run's cache writes
in batches: group commit), ``calllog`` (one line per run for the study runner), ``record`` (replies ->
Responses and cache rows), ``cache``, ``cost``, ``batch``,
``parse`` and ``secrets`` (key checks and redaction). The ``medeval cache`` and ``medeval reparse``
commands are in :mod:`medeval_kit.cli.cache`.

    from medeval_kit.llm import Request, get_client
    client = get_client("local/smollm2-135m")
    [resp] = client.run([Request(messages=[{"role": "user", "content": "Hi"}], max_tokens=20)])
"""

from __future__ import annotations

from .budget import Budget
from .cache import MODES as CACHE_MODES
from .cache import Cache, default_cache_path
from .cost import CostEstimate, Price, cost_of, estimate_cost, load_prices, price_for
from .errors import (
    BudgetError,
    CacheMissError,
    LLMError,
    MissingDependencyError,
    MissingKeyError,
    ProviderError,
    RequestError,
    UnknownModelError,
)
from .execute import Client, get_client, redact
from .ledger import run_spend
from .limits import RateLimiter, RetryPolicy
from .parse import extract_json, parse_reply, reparse
from .providers import Completion, Provider
from .registry import make_provider, provider, provider_names, unregister
from .secrets import InvalidKeyError
from .types import ModelSpec, Request, Response, RunStats, parse_model, to_frame

__all__ = [
    "CACHE_MODES", "Budget", "BudgetError", "Cache", "CacheMissError", "Client", "Completion", "CostEstimate",
    "InvalidKeyError", "LLMError", "MissingDependencyError", "MissingKeyError", "ModelSpec", "Price", "Provider",
    "ProviderError", "RateLimiter", "Request", "RequestError", "Response", "RetryPolicy", "RunStats",
    "UnknownModelError", "cost_of", "default_cache_path", "estimate_cost", "extract_json", "get_client",
    "load_prices", "make_provider", "parse_model", "parse_reply", "price_for", "provider", "provider_names",
    "redact", "reparse", "run_spend", "to_frame", "unregister",
]
