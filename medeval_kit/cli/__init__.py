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


# The sub-commands each module registers (tests/test_cli_words.py checks this against register_cli): a command
# imports only its own module, not the numerical stack of every other command (~2 s per process).
COMMANDS = {
    "init": "medeval_kit.cli.init",
    "run": "medeval_kit.cli.runner", "list": "medeval_kit.cli.runner", "params": "medeval_kit.cli.runner",
    "agreement": "medeval_kit.cli.agreement", "judge-vs-humans": "medeval_kit.cli.agreement",
    "alt-test": "medeval_kit.cli.alt_test",
    "plan": "medeval_kit.cli.plan",
    "position-bias": "medeval_kit.cli.bias",
    "import": "medeval_kit.cli.imports",
    "cache": "medeval_kit.cli.cache", "reparse": "medeval_kit.cli.cache",
    "rounds": "medeval_kit.cli.rounds",
    "rank": "medeval_kit.cli.rank",
    "items": "medeval_kit.cli.items",
    "judge": "medeval_kit.cli.judge",
    "report": "medeval_kit.cli.report",
    "bench": "medeval_kit.cli.bench",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Return the top-level argument parser: with only the module of ``command`` when it names a known
    sub-command, else with every registered sub-command (``--help``, a typo)."""
    parser = argparse.ArgumentParser(
        prog="medeval", description="Evaluate LLMs as generators and judges in medicine."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in [COMMANDS[command]] if command in COMMANDS else COMMAND_MODULES:
        importlib.import_module(name).register_cli(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the process exit code."""
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(words[0] if words and not words[0].startswith("-") else None)
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
