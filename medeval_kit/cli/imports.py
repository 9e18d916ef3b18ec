"""``medeval import FORMAT FILE -o OUT``: another tool's results file -> one of medeval_kit's tidy tables."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from medeval_kit.readers import DESCRIPTIONS, FORMATS, TABLES, ReaderError, read_format

#: output suffix -> how a table is written there
_WRITERS = {
    ".csv": lambda df, o: df.to_csv(o, index=False),
    ".tsv": lambda df, o: df.to_csv(o, index=False, sep="\t"),
    ".jsonl": lambda df, o: df.to_json(o, orient="records", lines=True, force_ascii=False),
    ".ndjson": lambda df, o: df.to_json(o, orient="records", lines=True, force_ascii=False),
    ".parquet": lambda df, o: df.to_parquet(o, index=False),
    ".pq": lambda df, o: df.to_parquet(o, index=False),
}


def register_cli(subparsers) -> None:
    """Add ``medeval import FORMAT FILE -o OUT [--table T]`` to the ``medeval`` command."""
    fmts = "\n".join(f"  {k:<14} {v}" for k, v in DESCRIPTIONS.items())
    p = subparsers.add_parser(
        "import",
        help="turn another tool's results (Inspect, AlpacaEval, MT-bench, HealthBench, promptfoo) into a tidy table",
        description="Read a results file written by another evaluation tool and write one of medeval_kit's "
                    "tidy tables (validated). The summary - records read, rows written, rows dropped and "
                    f"why - goes to stderr.\n\nformats:\n{fmts}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("format", metavar="FORMAT", choices=sorted(FORMATS), help="one of: " + ", ".join(FORMATS))
    p.add_argument("file", metavar="FILE", help="the tool's results file")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="where to write the table: .csv, .tsv, .jsonl or .parquet; '-' = CSV on stdout")
    p.add_argument("--table", choices=TABLES, default=None,
                   help="which table to write [the format's main one: judgments, or annotations for "
                        "mtbench_human and healthbench]")
    p.add_argument("--grader", default=None, help="healthbench: name of the grader rater [grader]")
    p.add_argument("--no-inspect-ai", action="store_true",
                   help="inspect: use the built-in reader even when inspect_ai is installed")
    p.add_argument("--max-member-mb", type=float, default=None, metavar="MB",
                   help="inspect: refuse an .eval zip member that inflates to more than MB megabytes "
                        "[512, or $MEDEVAL_MAX_MEMBER_MB]")
    p.add_argument("--max-json-mb", type=float, default=None, metavar="MB",
                   help="refuse a JSON file (parsed whole) or a JSON line larger than MB megabytes "
                        "[256, or $MEDEVAL_MAX_JSON_MB]")
    p.set_defaults(func=_cli_import)


def _reader_options(args) -> dict:
    """The reader options of the command line; an option given for another format is an error."""
    opts = {}
    if args.grader is not None:
        if args.format != "healthbench":
            raise ReaderError("--grader applies to the healthbench format only")
        opts["grader"] = args.grader
    if args.no_inspect_ai:
        if args.format != "inspect":
            raise ReaderError("--no-inspect-ai applies to the inspect format only")
        opts["use_inspect_ai"] = False
    if args.max_member_mb is not None:
        if args.format != "inspect":
            raise ReaderError("--max-member-mb applies to the inspect format only")
        opts["max_member_bytes"] = _bytes(args.max_member_mb, "--max-member-mb")
    if args.max_json_mb is not None:
        opts["max_json_bytes"] = _bytes(args.max_json_mb, "--max-json-mb")
    return opts


def _bytes(mb: float, flag: str) -> int:
    if not mb > 0:
        raise ReaderError(f"{flag} must be a positive number of megabytes, got {mb}")
    return int(mb * (1 << 20))


def _write(df: pd.DataFrame, out: str) -> None:
    """Write ``df`` to ``out`` by its suffix ('-' = CSV on stdout)."""
    if out == "-":
        sys.stdout.write(df.to_csv(index=False))
        return
    o = Path(out)
    if o.parent and not o.parent.exists():
        raise ReaderError(f"{o}: the folder {o.parent} does not exist")
    writer = _WRITERS.get(o.suffix.lower())
    if writer is None:
        raise ReaderError(f"{o}: unknown output type {o.suffix.lower() or '(none)'!r}; "
                          "use .csv, .tsv, .jsonl or .parquet")
    writer(df, o)


def _cli_import(args) -> int:
    res = read_format(args.format, args.file, **_reader_options(args))
    df = res.table(args.table)
    _write(df, args.output)
    name = args.table or res.primary
    print(res.summary(), file=sys.stderr)
    print(f"wrote {len(df)} {name} rows to {'stdout' if args.output == '-' else args.output}", file=sys.stderr)
    return 0
