"""One way to serve a marimo app in the browser tests: ``marimo run --headless`` on 127.0.0.1."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_app(app: Path, *args: str, cwd: Path = ROOT) -> Iterator[str]:
    """Serve ``app`` with ``marimo run --headless`` in ``cwd`` (``args`` after ``--``); yield its URL, stop it after."""
    port = free_port()
    cmd = [sys.executable, "-m", "marimo", "run", "--headless", "--host", "127.0.0.1", "--port", str(port),
           "--no-token", str(app)] + (["--", *args] if args else [])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd,
                            env={**os.environ, "MARIMO_SKIP_UPDATE_CHECK": "1"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url + "/health", timeout=1)
            break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail(f"marimo did not start: {proc.stdout.read().decode()[-2000:]}")
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
