"""``medeval ARGS`` in the test process: the CLI's own ``main(argv)``, its output captured with ``capsys``.

A subprocess (``python -m medeval_kit.cli``) spends seconds importing the toolkit before it does anything;
tests whose subject is the command (its output, exit code, files) and not the process boundary call
:func:`run_cli` instead. The result looks like ``subprocess.CompletedProcess``: ``returncode`` (the value
``main`` returns, or the code of a ``SystemExit`` that argparse raises), ``stdout`` and ``stderr``.
``python -m medeval_kit.cli`` is ``sys.exit(main())`` (medeval_kit/cli/__main__.py), so the exit code is the same.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass


@dataclass
class CliResult:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def run_cli(capsys, *args, env: dict[str, str] | None = None) -> CliResult:
    """Run ``medeval *args`` in-process and return its exit code and captured output.

    ``env``: variables set for the call only (restored afterwards). Output printed before the call is discarded,
    so ``stdout`` and ``stderr`` are this command's alone.
    """
    from medeval_kit.cli import main

    argv = [str(a) for a in args]
    capsys.readouterr()
    saved_env = {k: os.environ.get(k) for k in (env or {})}
    try:
        os.environ.update(env or {})
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse: --help, a bad choice or value
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:  # sys.exit("message"): the interpreter prints it and exits 1
                print(exc.code, file=sys.stderr)
                code = 1
    finally:
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    cap = capsys.readouterr()
    return CliResult(argv, int(code or 0), cap.out, cap.err)
