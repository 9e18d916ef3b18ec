"""``medeval cache stats|export|prune|checkpoint`` (the LLM response cache) and ``medeval reparse``
(re-apply a parser to stored raw outputs, without any call)."""

from __future__ import annotations

import argparse
import importlib
import json
from collections.abc import Callable

from medeval_kit.errors import ParameterError
from medeval_kit.llm import Cache, reparse
from medeval_kit.llm.providers import BATCH_FINAL

__all__ = ["register_cli"]

CACHE_HELP = "SQLite cache file (default: <project>/data/cache/llm.sqlite; the project is $MEDEVAL_ROOT, else the nearest folder with medeval.toml)"


def _load_parser(spec: str) -> Callable:
    """``package.module:function`` -> the function."""
    mod, _, fn = spec.partition(":")
    if not mod or not fn:
        raise ParameterError(f"--parser {spec!r}: write it as 'package.module:function'")
    try:
        return getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError) as exc:
        raise ParameterError(f"--parser {spec!r}: cannot import it ({exc})") from exc


def _stats(cache: Cache, args: argparse.Namespace) -> int:
    df = cache.stats()
    print(f"cache {cache.path}: {int(df['n'].sum()) if len(df) else 0} entries")
    if len(df):
        print(df.to_string(index=False))
    pending = [b for b in cache.batches() if b["status"] not in BATCH_FINAL]
    if pending:
        print(f"{len(pending)} batch(es) not collected yet: " + ", ".join(b["batch_id"] for b in pending))
    return 0


def _export(cache: Cache, args: argparse.Namespace) -> int:
    n = cache.export(args.out, model=args.model)
    print(f"wrote {n} entries to {args.out}")
    return 0


def _prune(cache: Cache, args: argparse.Namespace) -> int:
    if args.older_than is None and args.model is None:
        print("medeval cache prune: give --older-than DAYS and/or --model provider/name (nothing deleted)")
        return 2
    n = cache.prune(older_than_days=args.older_than, model=args.model, dry_run=args.dry_run)
    print(f"{'would delete' if args.dry_run else 'deleted'} {n} entries from {cache.path}")
    return 0


def _checkpoint(cache: Cache, args: argparse.Namespace) -> int:
    cache.checkpoint()
    print(f"checkpointed {cache.path}: {len(cache)} entries, ready to commit")
    return 0


ACTIONS = {"stats": _stats, "export": _export, "prune": _prune, "checkpoint": _checkpoint}


def _cmd_cache(args: argparse.Namespace) -> int:
    return ACTIONS[args.cache_command](Cache(args.cache, mode="use"), args)


def _cmd_reparse(args: argparse.Namespace) -> int:
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


def register_cli(subparsers: argparse._SubParsersAction) -> None:
    """Add ``medeval cache stats|export|prune|checkpoint`` and ``medeval reparse``."""
    p = subparsers.add_parser("cache", help="inspect, export or prune the LLM response cache")
    csub = p.add_subparsers(dest="cache_command", metavar="ACTION")
    s = csub.add_parser("stats", help="entries, tokens and cost per model")
    e = csub.add_parser("export", help="write entries as JSON Lines")
    e.add_argument("--out", required=True, help="output .jsonl file")
    e.add_argument("--model", default=None, help="only this provider/name")
    r = csub.add_parser("prune", help="delete entries by age and/or model")
    r.add_argument("--older-than", type=float, default=None, metavar="DAYS")
    r.add_argument("--model", default=None, help="only this provider/name")
    r.add_argument("--dry-run", action="store_true", help="count only")
    k = csub.add_parser("checkpoint", help="fold the WAL into the .sqlite file (before git commit)")
    for q in (s, e, r, k):
        q.add_argument("--cache", default=None, help=CACHE_HELP)
    for q in (p, s, e, r, k):
        q.set_defaults(func=_cmd_cache)
    p.set_defaults(cache_command="stats", cache=None)

    rp = subparsers.add_parser("reparse", help="re-apply a parser to stored raw outputs (no call)")
    rp.add_argument("--parser", default=None, help="package.module:function taking the raw text")
    rp.add_argument("--schema", default=None, help="JSON schema file to validate against")
    rp.add_argument("--model", default=None, help="only this provider/name")
    rp.add_argument("--out", default=None, help="write the re-parsed rows as JSON Lines")
    rp.add_argument("--cache", default=None, help=CACHE_HELP)
    rp.set_defaults(func=_cmd_reparse)
