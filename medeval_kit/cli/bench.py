"""``medeval bench NAME``: run a benchmark script from benchmarks/ (speed is printed, never asserted)."""

from __future__ import annotations

import argparse
import subprocess
import sys

__all__ = ["register_cli", "available"]


def available() -> list[str]:
    """Return the benchmark names found in ``benchmarks/bench_*.py``."""
    from medeval_kit.paths import root as project_root

    return sorted(p.stem.removeprefix("bench_") for p in (project_root() / "benchmarks").glob("bench_*.py"))


def _cmd_bench(args: argparse.Namespace) -> int:
    from medeval_kit.errors import MedevalError
    from medeval_kit.paths import root as project_root

    names = available()
    if args.name not in names:
        raise MedevalError(f"unknown benchmark {args.name!r}; available: {names}")
    script = project_root() / "benchmarks" / f"bench_{args.name}.py"
    return subprocess.call([sys.executable, str(script), *args.args])


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``medeval bench``."""
    p = sub.add_parser("bench", help="run a benchmark script (agreement, aspects, llm, outputs, plan, readers, suite ...) "
                                     "and print its figures")
    p.add_argument("name", help="benchmark name (a benchmarks/bench_NAME.py), e.g. agreement, aspects, llm, outputs "
                                "(save_figure and save_table against the stock paths), plan (medeval plan's fast path "
                                "against judge_vs_humans and alt_test on every panel) or "
                                "readers (format readers on ~200 MB JSON-lines files: time and peak RSS) or suite (every "
                                "study's notebook runs and the test suite per file: the timing record)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script (see its --help)")
    p.set_defaults(func=_cmd_bench)
