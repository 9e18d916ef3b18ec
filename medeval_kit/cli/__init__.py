"""The ``medeval`` command line: one module per command group, each with ``register_cli(subparsers)``.
Also the study runner (``runner``: papermill over ``studies/*.yaml``), the reproduction report
(``report``) and ``bench``. This is the top layer: it may import anything; nothing imports it."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# Modules that contribute sub-commands, in the order they appear in --help.
# Each defines ``register_cli(subparsers) -> None`` and sets ``func`` on its parsers.
COMMAND_MODULES = (
    "medeval_kit.cli.init",
    "medeval_kit.cli.runner",
    "medeval_kit.cli.agreement",
    "medeval_kit.cli.alt_test",
    "medeval_kit.cli.plan",
    "medeval_kit.cli.bias",
    "medeval_kit.cli.imports",
    "medeval_kit.cli.cache",
    "medeval_kit.cli.rounds",
    "medeval_kit.cli.rank",
    "medeval_kit.cli.items",
    "medeval_kit.cli.judge",
    "medeval_kit.cli.report",
    "medeval_kit.cli.bench",
)


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level argument parser with every registered sub-command."""
    parser = argparse.ArgumentParser(
        prog="medeval", description="Evaluate LLMs as generators and judges in medicine."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register_cli(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - silence the interpreter's flush at exit
        return 0
    except Exception as exc:  # user-facing: one clear line, not a traceback
        from medeval_kit.errors import MedevalError

        if isinstance(exc, (MedevalError, FileNotFoundError)):
            print(f"medeval: error: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
