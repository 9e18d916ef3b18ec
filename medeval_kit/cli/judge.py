"""``medeval judge ITEMS``: run a judge protocol on the user's own items and write the tidy judgments table."""

from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path

import pandas as pd

from medeval_kit import judge
from medeval_kit.cli.imports import _WRITERS
from medeval_kit.cli.params import usd_argument
from medeval_kit.errors import ParameterError
from medeval_kit.llm import get_client
from medeval_kit.llm.calllog import short_reason
from medeval_kit.schemas import validate

__all__ = ["register_cli"]

#: the column options: tidy name -> what it holds (the defaults are the tidy names)
_COLUMNS = {
    "item": "item (pair, question) id",
    "question": "question or instruction shown to the judge",
    "answer_a": "pairwise: first response",
    "answer_b": "pairwise: second response",
    "model_a": "pairwise: model of the first response (optional)",
    "model_b": "pairwise: model of the second response (optional)",
    "response": "rubric, reference: the judged response",
    "reference": "reference, multi_answer: the reference answer",
    "answer": "multi_answer: one of the item's answers",
    "target": "model (or option) the judged text belongs to; multi_answer: required, others: optional",
}
_ORDERS = {"both": ("AB", "BA"), "AB": ("AB",), "BA": ("BA",)}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def register_cli(subparsers) -> None:
    """Add ``medeval judge ITEMS --protocol P --model M ...`` to the ``medeval`` command."""
    p = subparsers.add_parser(
        "judge", help="run a judge protocol on your own items and write the tidy judgments table",
        description="Judge your own items with an LLM: read ITEMS (one row per judged unit), render the protocol's "
                    "prompt (the project's prompts/ first, else the packaged one), call the model through the "
                    "project's cache with a progress bar (cost, ETA), and write the judgments table that "
                    "position-bias, rank and the notebooks read. Failed calls are counted; the command exits 1 "
                    "when some got no reply (--allow-failed-calls: 0). Unparseable replies are kept and counted, "
                    "never turned into ties.")
    p.add_argument("items", metavar="ITEMS", help="items file: .csv, .tsv, .jsonl, .json or .parquet")
    p.add_argument("--protocol", default="pairwise", choices=judge.protocol_names(),
                   help="judge protocol [pairwise]")
    p.add_argument("--model", required=True, metavar="MODEL",
                   help="judge model: openai/gpt-4o-mini, anthropic/..., local/smollm2-135m, "
                        "openai/<name>@http://host:port/v1 (OpenAI-compatible server), replay/<provider>/<name>")
    p.add_argument("--orders", choices=sorted(_ORDERS), default=None,
                   help="pairwise: presentation orders, both = AB and BA [both]")
    p.add_argument("--repeats", type=int, default=1, help="calls per unit (and order); temperature 0.7 when > 1 [1]")
    p.add_argument("--rubric", default=None, metavar="NAME",
                   help="rubric in prompts/rubrics/ (pairwise, rubric) [the protocol's: overall, mcqg_srefine]")
    p.add_argument("--budget-usd", type=usd_argument, default=None, metavar="USD",
                   help="hard cap on what the calls may cost; calls beyond it are refused and counted as failed")
    p.add_argument("--out", default="judgments.csv", metavar="FILE",
                   help="where to write the judgments: .csv, .tsv, .jsonl or .parquet [judgments.csv]")
    g = p.add_argument_group("columns of ITEMS (default: the tidy name)")
    for name, what in _COLUMNS.items():
        g.add_argument(_flag(name), dest=f"col_{name}", default=None, metavar="COL", help=f"{what} [{name}]")
    p.add_argument("--seed", type=int, default=0, help="seed sent with each call and of k-slot shuffles [0]")
    p.add_argument("--free-text", action="store_true",
                   help="send no JSON schema (no constrained decoding): shows how often the judge fails to parse")
    p.add_argument("--schema-format", choices=("json_schema", "json_object", "prompt", "auto"), default=None,
                   help="how an OpenAI-compatible server gets the schema [json_schema]")
    p.add_argument("--cache", default=None, metavar="FILE",
                   help="SQLite cache of the calls [the project's data/cache/llm.sqlite]")
    p.add_argument("--cache-mode", choices=("use", "off", "replay", "refresh"), default="use",
                   help="use: read and write; replay: cache only, no call; refresh: call again [use]")
    p.add_argument("--allow-failed-calls", action="store_true",
                   help="exit 0 even when some calls got no reply (they are still counted)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cli_judge)


def _options(args) -> dict:
    """The protocol's keyword arguments from the command line; an option it does not take is an error."""
    required, optional = judge.item_columns(args.protocol)
    wrong = [_flag(c) for c in _COLUMNS if getattr(args, f"col_{c}") is not None and c not in required + optional]
    if wrong:
        raise ParameterError(f"{', '.join(wrong)}: not a column of protocol {args.protocol!r}; its columns are "
                             f"{', '.join(required + optional)}")
    if args.repeats < 1:
        raise ParameterError(f"--repeats must be 1 or more, got {args.repeats}")
    kw = {"repeats": args.repeats, "seed": args.seed, "constrained": not args.free_text, "progress": not args.quiet,
          "orders": _ORDERS[args.orders] if args.orders else None, "rubric": args.rubric}
    return judge.protocol_options(args.protocol, kw, flags={"orders": "--orders", "rubric": "--rubric"})


def _check_out(out: str) -> Path:
    """The output file, checked before any call is paid for."""
    o = Path(out)
    if o.suffix.lower() not in _WRITERS:
        raise ParameterError(f"--out {o}: unknown output type {o.suffix.lower() or '(none)'!r}; "
                             "use .csv, .tsv, .jsonl or .parquet")
    if not o.parent.is_dir():
        raise ParameterError(f"--out {o}: the folder {o.parent} does not exist")
    return o


def _calls(judgments: pd.DataFrame, status: str) -> pd.DataFrame:
    """One row per call with that parse status (a rubric call writes one row per aspect)."""
    return judgments[judgments["parse_status"] == status].drop_duplicates("call")


def _summary(data: pd.DataFrame, judgments: pd.DataFrame, stats, args) -> tuple[str, str | None]:
    """The summary line and, when calls failed, the failure line."""
    unparsed = len(_calls(judgments, "failed"))
    cost = "unknown (no price)" if math.isnan(stats.cost_usd) else f"${stats.cost_usd:.4f}"
    orders = "+".join(sorted(judgments["order"].unique()))
    line = (f"judged {data['item'].nunique()} items ({len(data)} rows of {args.items}) with {args.protocol} "
            f"({orders}, {args.repeats} repeat{'s' if args.repeats > 1 else ''}), judge {stats.model}: "
            f"{stats.n} calls, {stats.n_cached} from cache, {stats.n_called} made, {stats.n_failed} failed, "
            f"{unparsed} unparsed; cost {cost}")
    if stats.budget_usd is not None:
        line += f" of the ${stats.budget_usd:g} budget"
    if not stats.n_failed:
        return line, None
    reasons = Counter(short_reason(e) for e in _calls(judgments, "missing")["parse_error"].fillna("no reply"))
    why = ", ".join(f"{r} x{n}" for r, n in reasons.most_common(3))
    fail = f"{stats.n_failed} of {stats.n} LLM calls failed ({why})"
    if stats.n_skipped_budget:
        fail += f"; {stats.n_skipped_budget} refused by the budget (--budget-usd {args.budget_usd:g})"
    return line, fail


def _cli_judge(args) -> int:
    """Run ``medeval judge``; return the exit code."""
    out = _check_out(args.out)
    kw = _options(args)
    cols = {c: getattr(args, f"col_{c}") for c in _COLUMNS}
    data = judge.read_items(args.items, args.protocol, columns=cols,
                            flags={c: _flag(c) for c in _COLUMNS})
    opts = {"schema_format": args.schema_format} if args.schema_format else {}
    client = get_client(args.model, cache_mode=args.cache_mode, cache_path=args.cache, budget_usd=args.budget_usd,
                        **opts)
    judgments = judge.run_protocol(args.protocol, data, client=client, model=args.model, **kw)
    validate(judgments, "judgments", source=str(out))
    _WRITERS[out.suffix.lower()](judgments, out)
    line, fail = _summary(data, judgments, client.last_run, args)
    print(line)
    print(f"wrote {len(judgments)} judgments rows to {out}")
    if judgments["protocol"].iloc[0] == "pairwise" and judgments["order"].nunique() == 2:
        print(f"position bias: medeval position-bias {out} --verdict-terms model")
    if fail and not args.allow_failed_calls:  # exit 1 as `medeval run` does; 2 stays "bad input"
        print(f"medeval: error: {fail}; their rows have parse_status 'missing' in {out}; --allow-failed-calls "
              "exits 0", file=sys.stderr)
        return 1
    if fail:
        print(f"warning: {fail}", file=sys.stderr)
    return 0
