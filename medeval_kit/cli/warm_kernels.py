"""Warm kernels: notebook kernels forked from a process that has already imported the toolkit.

A cold kernel spends ~1.5 s of CPU starting ipykernel and ~2.5 s importing numpy, pandas, scipy.stats, matplotlib
and the toolkit before the first cell does any work: about half of ``make figures``. During ``medeval run``
(:func:`warm_kernels`), one warm process imports all that once; each kernel jupyter_client starts is a fork of it
(``os.fork`` shares the imported modules copy-on-write), started through :mod:`medeval_kit.cli.kernel_launcher`.

A kernel is forked only when a cold start would run the same thing: the same interpreter, ``ipykernel_launcher``,
and the same environment as the warm process's except the per-kernel variables (:data:`PER_KERNEL`), since the
thread counts of BLAS, OpenMP and numba are fixed when those libraries load. Otherwise, when the warm process is
still importing after :data:`READY_WAIT_S`, and with ``MEDEVAL_WARM_KERNELS=0``, the kernel starts cold. Either way the notebook computes the same numbers; ``.ci/run``
checks that the committed outputs do not change. Linux only (fork after these imports is not safe on macOS).

Why by hand: jupyter_client has no fork-based kernel start (its provisioners start commands), and papermill starts
one kernel per notebook.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import dataclasses
import gc
import importlib
import importlib.util
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager, KernelManager

ENV = "MEDEVAL_WARM_KERNELS"
"""The warm process's socket, set for the kernel managers during a run; ``0`` turns warm kernels off."""

LAUNCHER = Path(__file__).with_name("kernel_launcher.py")

PRELOAD = (
    "ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.debugger", "IPython", "matplotlib_inline.backend_inline",
    "tornado.queues", "sqlite3", "pdb",
    "numpy", "pandas", "scipy.stats", "matplotlib.pyplot", "seaborn",
    # what save_figure and save_table import on first use (fontTools' subsetter, pandas' Styler for LaTeX,
    # tabulate for Markdown): about 0.2 s that every kernel writing a figure or table paid again
    "matplotlib.backends.backend_pdf", "matplotlib.backends.backend_svg", "pandas.io.formats.style", "tabulate",
    "medeval_kit.agreement", "medeval_kit.bias", "medeval_kit.datasets", "medeval_kit.generate",
    "medeval_kit.judge", "medeval_kit.llm", "medeval_kit.overview", "medeval_kit.pairwise",
    "medeval_kit.provenance", "medeval_kit.psychometrics", "medeval_kit.rank", "medeval_kit.repro",
    "medeval_kit.rounds", "medeval_kit.tables", "medeval_kit.viz",
)
"""Modules the warm process imports (a missing one is skipped: the kernel imports it itself)."""

PER_KERNEL = frozenset({"JPY_PARENT_PID", "JPY_SESSION_NAME", "PYTEST_CURRENT_TEST", "MPLBACKEND"})
"""Variables that may differ between the warm process and a kernel (none is read at import time), besides the
toolkit's own ``MEDEVAL_*``, which it reads only when called (``tests/test_warm_kernels.py`` checks), and
:data:`PER_KERNEL_SUFFIXES`."""

PER_KERNEL_SUFFIXES = ("_API_KEY", "_BASE_URL")
"""Endings of variable names that may differ too: providers' keys and endpoints (``OPENAI_API_KEY``,
``OPENAI_BASE_URL`` ...), read when a client is made (the toolkit's providers, the openai and anthropic SDKs),
never at import."""

READY_WAIT_S = 15.0
"""How long a kernel started while the warm process still imports waits for it (it takes a few seconds) before
it starts cold."""

FORKED = "MEDEVAL_KERNEL_FORKED"
"""Set to ``1`` in a forked kernel's environment."""


def supported() -> bool:
    """Whether warm kernels can run here: Linux (fork, Unix sockets, passing file descriptors)."""
    return sys.platform.startswith("linux") and hasattr(socket, "send_fds") and hasattr(os, "fork")


@dataclasses.dataclass
class WarmKernels:
    """What :func:`warm_kernels` yields: the warm process's socket and, after the block, how kernels started."""

    path: str | None = None
    forked: int = 0
    declined: dict[str, int] = dataclasses.field(default_factory=dict)

    def wait(self, timeout: float = 60.0) -> bool:
        """Wait until the warm process has imported everything (kernels started before start cold); return
        whether it has."""
        if self.path is None:
            return False
        ready, end = Path(self.path).with_suffix(".ready"), time.monotonic() + timeout
        while not ready.exists() and time.monotonic() < end:
            time.sleep(0.05)
        return ready.exists()

    def summary(self) -> str:
        """One line: kernels forked, and kernels started cold with the reasons ("" when warm kernels were off)."""
        if self.path is None:
            return ""
        cold = sum(self.declined.values())
        why = "; ".join(f"{n} x {reason}" for reason, n in sorted(self.declined.items()))
        return f"kernels: {self.forked} forked from a warm process" + (f", {cold} started cold ({why})" if cold else "")


@contextlib.contextmanager
def warm_kernels() -> Iterator[WarmKernels]:
    """Start the warm process for the block; yield a :class:`WarmKernels` (``path`` None when off or unsupported).

    Kernel managers of :class:`WarmKernelManager` started in the block (in this process or its workers) fork
    their kernels from it. The warm process takes the environment as it is now: start it after the thread
    counts and the run's variables are set. A kernel started before it has imported everything waits up to
    :data:`READY_WAIT_S` for it, then starts cold.

    Returns
    -------
    contextlib.AbstractContextManager of WarmKernels
        After the block, ``forked`` and ``declined`` (reason -> count) say how the kernels started.

    Example
    -------
    >>> with warm_kernels() as warm:                                # doctest: +SKIP
    ...     pm.execute_notebook(nb, out, kernel_manager_class=WarmKernelManager)
    >>> print(warm.summary())                                       # doctest: +SKIP
    kernels: 1 forked from a warm process
    """
    if os.environ.get(ENV) or not supported():  # off (0), or already inside a run's block
        yield WarmKernels()
        return
    folder = tempfile.mkdtemp(prefix="medeval-kernels-")
    path = os.path.join(folder, "warm.sock")
    env = dict(os.environ)  # explicit, as jupyter_client passes it: the C environ can hold more (curses' LINES)
    proc = subprocess.Popen([sys.executable, "-m", "medeval_kit.cli.warm_kernels", path, str(os.getpid())], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # the environment kernels are compared with, before the warm process's own imports touch it (a pipe, never
    # a file: it may hold API keys)
    with contextlib.suppress(OSError):
        proc.stdin.write(json.dumps(env).encode())
    with contextlib.suppress(OSError):
        proc.stdin.close()
    for _ in range(500):  # bound within a fraction of a second
        if os.path.exists(path) or proc.poll() is not None:
            break
        time.sleep(0.01)
    os.environ[ENV] = path
    warm = WarmKernels(path)
    try:
        yield warm
    finally:
        os.environ.pop(ENV, None)
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        stats = Path(path).with_suffix(".json")
        with contextlib.suppress(OSError, ValueError):
            got = json.loads(stats.read_text(encoding="utf-8"))
            warm.forked, warm.declined = int(got["forked"]), dict(got["declined"])
        with contextlib.suppress(OSError):  # the stand-ins' own cold starts
            for why in Path(path).with_suffix(".cold").read_text(encoding="utf-8").splitlines():
                warm.declined[why] = warm.declined.get(why, 0) + 1
        for p in (stats, Path(path), *(Path(path).with_suffix(x) for x in (".ready", ".cold"))):
            with contextlib.suppress(OSError):
                p.unlink()
        with contextlib.suppress(OSError):
            os.rmdir(folder)


class _Warm:
    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)  # type: ignore[misc]
        path = os.environ.get(ENV)
        if not path or path == "0" or not _forkable(cmd):
            return cmd
        return [sys.executable, "-I", "-S", str(LAUNCHER), path, str(READY_WAIT_S), *cmd]


class AsyncWarmKernelManager(_Warm, AsyncKernelManager):
    """A jupyter_client AsyncKernelManager whose Python kernels start through the warm process when one runs.

    Pass it to papermill (nbclient) as ``kernel_manager_class``; outside :func:`warm_kernels` it is a plain
    AsyncKernelManager. (nbclient drives a blocking manager through a helper thread, which a process forked
    later, as ``medeval run``'s workers are, inherits dead.)
    """


class WarmKernelManager(_Warm, KernelManager):
    """The blocking variant of :class:`AsyncWarmKernelManager`, for code that calls ``start_kernel()`` itself
    (nbval, jupyter_client's ``start_new_kernel``)."""


def _forkable(cmd: list[str]) -> bool:
    """``python [options] -m ipykernel_launcher ...`` with this process's interpreter."""
    if len(cmd) < 3 or os.path.abspath(cmd[0]) != os.path.abspath(sys.executable):
        return False
    return any(cmd[i] == "-m" and cmd[i + 1] == "ipykernel_launcher" for i in range(len(cmd) - 1))


def _decline(base: dict[str, str], argv: list[str], env: dict[str, str]) -> str:
    """Why this request must start cold ("" when it may be forked)."""
    if not _forkable(argv):
        return "not this interpreter's ipykernel"
    keys = {k for k in set(base) | set(env)
            if k not in PER_KERNEL and not k.startswith("MEDEVAL_") and not k.endswith(PER_KERNEL_SUFFIXES)}
    differ = sorted(k for k in keys if base.get(k) != env.get(k))
    return f"environment differs in {', '.join(differ[:5])}" if differ else ""


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = conn.recv(n - len(out))
        if not chunk:
            raise OSError("launcher closed the connection")
        out += chunk
    return out


class _Child(Exception):
    """Raised in a forked child to leave the server loop and start the kernel outside it."""

    def __init__(self, argv: list[str], cwd: str, env: dict[str, str], path0: str):
        super().__init__()
        self.argv, self.cwd, self.env, self.path0 = argv, cwd, env, path0


class _Server:
    def __init__(self, path: str, parent: int):
        self.path, self.parent, self.pid = path, parent, os.getpid()
        self.path0 = sys.path[0] if sys.path else ""
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)  # bound before the imports; kernels fork once ".ready" exists
        self.sock.listen(64)
        try:
            self.base = json.loads(sys.stdin.read() or "null") or dict(os.environ)
        except (OSError, ValueError):
            self.base = dict(os.environ)
        self.kids: dict[int, socket.socket] = {}  # kernel pid -> its launcher's connection
        self.forked, self.declined = 0, collections.Counter()
        self.sel = selectors.DefaultSelector()

    def preload(self) -> None:
        os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")  # as ipykernel sets it
        for name in PRELOAD:
            with contextlib.suppress(Exception):
                importlib.import_module(name)
        self.added = {k: v for k, v in os.environ.items() if k not in self.base}
        # the imported objects go to the collector's permanent generation: kernels neither scan nor copy them
        gc.freeze()
        # a fork copies only the forking thread: a module that started a thread makes every kernel start cold
        self.threads = threading.active_count()
        Path(self.path).with_suffix(".ready").touch()  # kernels started before this start cold, without waiting

    def serve(self) -> None:
        self.sel.register(self.sock, selectors.EVENT_READ)
        # a kernel's exit wakes the loop at once (its stand-in exits, and the kernel manager with it)
        self.wake, wake_w = socket.socketpair()
        self.wake.setblocking(False)
        wake_w.setblocking(False)
        self.wake_w = wake_w
        signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.sel.register(self.wake, selectors.EVENT_READ)
        while os.getppid() == self.parent:
            for key, _ in self.sel.select(0.5):
                if key.fileobj is self.sock:
                    self.accept()
                elif key.fileobj is self.wake:
                    with contextlib.suppress(OSError):
                        self.wake.recv(4096)
                else:  # a launcher's connection closed: its kernel must go too
                    conn = key.fileobj
                    with contextlib.suppress(OSError):
                        if conn.recv(1):
                            continue
                    self.sel.unregister(conn)
                    for pid, c in self.kids.items():
                        if c is conn:
                            with contextlib.suppress(OSError):
                                os.kill(pid, signal.SIGKILL)
            self.reap()

    def accept(self) -> None:
        conn, _ = self.sock.accept()
        fds: list[int] = []
        try:
            conn.settimeout(10)
            head, fds, _, _ = socket.recv_fds(conn, 8, 3)
            head += _recv_exact(conn, 8 - len(head))
            req = json.loads(_recv_exact(conn, struct.unpack("!Q", head)[0]))
            why = (_decline(self.base, req["argv"], req["env"]) if len(fds) == 3 else "no standard streams") or (
                "the warm process runs threads" if self.threads > 1 else "")
            if why:
                self.declined[why] += 1
                conn.sendall(f"no {why}\n".encode())
                raise OSError(why)
            pid = os.fork()
            if pid == 0:
                self.become_kernel(conn, fds, req)
            self.kids[pid] = conn
            self.forked += 1
            conn.settimeout(None)
            self.sel.register(conn, selectors.EVENT_READ)
            conn.sendall(f"pid {pid}\n".encode())
        except (OSError, ValueError, KeyError, TypeError, struct.error):
            if conn.fileno() >= 0 and conn not in self.kids.values():
                conn.close()
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def become_kernel(self, conn: socket.socket, fds: list[int], req: dict) -> None:
        """In the forked child: take the launcher's streams, folder and environment, then leave the loop."""
        os.setsid()  # a terminal's Ctrl-C reaches the runner, not every kernel (as with a cold start)
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
        signal.set_wakeup_fd(-1)
        self.sel.close()
        self.sock.close()
        self.wake.close()
        self.wake_w.close()
        conn.close()
        for c in self.kids.values():
            c.close()
        for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL if sig != signal.SIGINT else signal.default_int_handler)
        raise _Child(req["argv"], req["cwd"], {**self.added, **req["env"], FORKED: "1"}, self.path0)

    def reap(self) -> None:
        while self.kids:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.kids.pop(pid, None)
            if conn is not None:
                with contextlib.suppress(OSError, ValueError, KeyError):
                    self.sel.unregister(conn)
                with contextlib.suppress(OSError):
                    conn.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
                conn.close()

    def close(self) -> None:
        for pid in list(self.kids):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        self.reap()
        self.sock.close()
        with contextlib.suppress(OSError):  # read by WarmKernels.summary()
            Path(self.path).with_suffix(".json").write_text(
                json.dumps({"forked": self.forked, "declined": dict(self.declined)}), encoding="utf-8")


def _run_kernel(child: _Child) -> None:
    os.chdir(child.cwd)
    os.environ.clear()
    os.environ.update(child.env)
    argv = child.argv[child.argv.index("ipykernel_launcher") + 1:]
    spec = importlib.util.find_spec("ipykernel_launcher")
    sys.argv = [spec.origin if spec and spec.origin else "ipykernel_launcher", *argv]
    if sys.path and sys.path[0] == child.path0:  # ``-m``'s entry for the warm process's folder; ipykernel_launcher
        del sys.path[0]  # removes its own the same way
    from ipykernel import kernelapp

    # read from the environment when ipykernel was imported, i.e. in the warm process: give this kernel's
    parent = [f"--IPKernelApp.parent_handle={child.env['JPY_PARENT_PID']}"] if child.env.get("JPY_PARENT_PID") else []
    try:
        kernelapp.launch_new_instance(argv=[*argv, *parent])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    # a kernel's exit handlers run; tearing down every module of the warm process (~0.5 s) is skipped
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def main(argv: list[str]) -> None:
    path, parent = argv[0], int(argv[1])
    server = _Server(path, parent)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.preload()
        server.serve()
    except _Child as child:
        kernel = child
    else:
        return
    finally:
        if os.getpid() == server.pid:  # the warm process, not a kernel forked from it
            server.close()
    _run_kernel(kernel)


if __name__ == "__main__":
    main(sys.argv[1:])
