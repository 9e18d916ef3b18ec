"""The LLM layer: one client for the embedded local model, OpenAI, Anthropic and OpenAI-compatible
servers, with a record/replay SQLite cache, concurrency, retries, cost and batch APIs.

    from medeval_kit.llm import Request, get_client
    client = get_client("local/smollm2-135m")
    [resp] = client.run([Request(messages=[{"role": "user", "content": "Hi"}], max_tokens=20)])
"""

from __future__ import annotations

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
from .execute import Budget, Client, RateLimiter, RetryPolicy, get_client, redact
from .parse import extract_json, parse_reply, reparse
from .secrets import InvalidKeyError
from .types import ModelSpec, Request, Response, RunStats, parse_model, to_frame

__all__ = [
    "CACHE_MODES", "Budget", "BudgetError", "Cache", "CacheMissError", "Client", "CostEstimate", "InvalidKeyError", "LLMError",
    "MissingDependencyError", "MissingKeyError", "ModelSpec", "Price", "ProviderError", "RateLimiter",
    "Request", "RequestError", "Response", "RetryPolicy", "RunStats", "UnknownModelError", "cost_of",
    "default_cache_path", "estimate_cost", "extract_json", "get_client", "load_prices", "parse_model",
    "parse_reply", "price_for", "redact", "register_cli", "reparse", "to_frame",
]


# --------------------------------------------------------------------------- CLI
def _load_parser(spec: str):
    """``package.module:function`` -> the function."""
    import importlib

    from medeval_kit.errors import ParameterError

    mod, _, fn = spec.partition(":")
    if not mod or not fn:
        raise ParameterError(f"--parser {spec!r}: write it as 'package.module:function'")
    try:
        return getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError) as exc:
        raise ParameterError(f"--parser {spec!r}: cannot import it ({exc})") from exc


def _cmd_cache(args) -> int:
    cache = Cache(args.cache, mode="use")
    if args.cache_command == "stats":
        df = cache.stats()
        print(f"cache {cache.path}: {int(df['n'].sum()) if len(df) else 0} entries")
        if len(df):
            print(df.to_string(index=False))
        pending = [b for b in cache.batches() if b["status"] not in ("collected", "failed", "expired", "cancelled")]
        if pending:
            print(f"{len(pending)} batch(es) not collected yet: " + ", ".join(b["batch_id"] for b in pending))
        return 0
    if args.cache_command == "export":
        n = cache.export(args.out, model=args.model)
        print(f"wrote {n} entries to {args.out}")
        return 0
    if args.cache_command == "prune":
        if args.older_than is None and args.model is None:
            print("medeval cache prune: give --older-than DAYS and/or --model provider/name (nothing deleted)")
            return 2
        n = cache.prune(older_than_days=args.older_than, model=args.model, dry_run=args.dry_run)
        print(f"{'would delete' if args.dry_run else 'deleted'} {n} entries from {cache.path}")
        return 0
    if args.cache_command == "checkpoint":
        cache.checkpoint()
        print(f"checkpointed {cache.path}: {len(cache)} entries, ready to commit")
        return 0
    return 2


def _cmd_reparse(args) -> int:
    import json

    schema = None
    if args.schema:
        with open(args.schema, encoding="utf-8") as fh:
            schema = json.load(fh)
    parser = _load_parser(args.parser) if args.parser else None
    df = reparse(Cache(args.cache, mode="use"), parser, schema=schema, model=args.model)
    counts = df["parse_status"].value_counts().to_dict() if len(df) else {}
    print(f"re-parsed {len(df)} stored outputs without any call: "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if args.out:
        df.to_json(args.out, orient="records", lines=True, force_ascii=False)
        print(f"wrote {args.out}")
    return 0


def register_cli(subparsers) -> None:
    """Add ``medeval cache stats|export|prune|checkpoint`` and ``medeval reparse``."""
    p = subparsers.add_parser("cache", help="inspect, export or prune the LLM response cache")
    csub = p.add_subparsers(dest="cache_command", metavar="ACTION")
    common = {"help": "SQLite cache file (default: $MEDEVAL_CACHE or data/cache/llm.sqlite)"}
    s = csub.add_parser("stats", help="entries, tokens and cost per model")
    s.add_argument("--cache", default=None, **common)
    e = csub.add_parser("export", help="write entries as JSON Lines")
    e.add_argument("--out", required=True, help="output .jsonl file")
    e.add_argument("--model", default=None, help="only this provider/name")
    e.add_argument("--cache", default=None, **common)
    r = csub.add_parser("prune", help="delete entries by age and/or model")
    r.add_argument("--older-than", type=float, default=None, metavar="DAYS")
    r.add_argument("--model", default=None, help="only this provider/name")
    r.add_argument("--dry-run", action="store_true", help="count only")
    r.add_argument("--cache", default=None, **common)
    k = csub.add_parser("checkpoint", help="fold the WAL into the .sqlite file (before git commit)")
    k.add_argument("--cache", default=None, **common)
    for q in (p, s, e, r, k):
        q.set_defaults(func=_cmd_cache)
    p.set_defaults(cache_command="stats", cache=None)

    rp = subparsers.add_parser("reparse", help="re-apply a parser to stored raw outputs (no call)")
    rp.add_argument("--parser", default=None, help="package.module:function taking the raw text")
    rp.add_argument("--schema", default=None, help="JSON schema file to validate against")
    rp.add_argument("--model", default=None, help="only this provider/name")
    rp.add_argument("--out", default=None, help="write the re-parsed rows as JSON Lines")
    rp.add_argument("--cache", default=None, **common)
    rp.set_defaults(func=_cmd_reparse)
