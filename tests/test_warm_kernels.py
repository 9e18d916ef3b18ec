"""Warm kernels (cli/warm_kernels.py): a kernel forked from the warm process runs as a cold one would (folder,
environment, sys.path, argv, streams), starts cold when it cannot be the same, dies with its stand-in, is
interrupted through it, and ``medeval run`` says how its kernels started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jupyter_client.manager import KernelManager

from medeval_kit.cli import warm_kernels as wk

pytestmark = pytest.mark.skipif(not wk.supported(), reason="warm kernels need Linux (fork, Unix sockets)")

PROBE = ("import os, sys, json\n"
         "print(json.dumps({'pid': os.getpid(), 'cwd': os.getcwd(), 'path': sys.path, 'argv0': sys.argv[0],"
         " 'env': {k: v for k, v in os.environ.items()}, 'main': sys.modules['__main__'].__name__}))")


class Kernel:
    """A kernel started by ``cls`` in ``cwd``, with a client; ``run(code)`` returns (status, stdout text)."""

    def __init__(self, cls=wk.WarmKernelManager, cwd="."):
        self.km = cls(kernel_name="python3")
        self.km.start_kernel(cwd=str(cwd))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def run(self, code: str, timeout: float = 60):
        out: list[str] = []

        def hook(msg):
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                out.append(msg["content"]["ename"])

        reply = self.kc.execute_interactive(code, output_hook=hook, timeout=timeout)
        return reply["content"]["status"], "".join(out)

    def close(self):
        self.kc.stop_channels()
        if self.km.has_kernel:
            self.km.shutdown_kernel(now=True)


def _probe(cls, cwd) -> dict:
    k = Kernel(cls, cwd)
    try:
        status, text = k.run(PROBE)
        assert status == "ok", text
        return json.loads(text)
    finally:
        k.close()


@pytest.fixture(scope="module")
def warm():
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(wk.ENV, raising=False)  # not the test session's warm process (tests/conftest.py): one of its own
        with wk.warm_kernels() as w:
            assert w.wait()
            yield w


def test_a_forked_kernel_runs_as_a_cold_one_would(warm, tmp_path):
    forked = _probe(wk.WarmKernelManager, tmp_path)
    cold = _probe(KernelManager, tmp_path)
    assert forked["env"].pop(wk.FORKED) == "1" and wk.FORKED not in cold["env"]
    for d in (forked, cold):
        for k in ("JPY_PARENT_PID", "JPY_SESSION_NAME"):
            d["env"].pop(k, None)
    assert forked["pid"] != cold["pid"]
    for key in ("cwd", "path", "argv0", "env", "main"):
        assert forked[key] == cold[key], key
    assert forked["cwd"] == str(tmp_path)


def test_the_warm_process_has_the_toolkit_imported_and_each_kernel_its_own_state(warm, tmp_path):
    a, b = Kernel(cwd=tmp_path), Kernel(cwd=tmp_path)
    try:
        status, text = a.run("import sys; x = 41; print('medeval_kit.agreement' in sys.modules)")
        assert (status, text.strip()) == ("ok", "True")
        # what a figure's or a table's first save imports is there too (fontTools' subsetter, pandas' Styler)
        status, text = a.run("print(sorted(m for m in ('matplotlib.backends.backend_pdf', 'fontTools.subset', "
                             "'matplotlib.backends.backend_svg', 'pandas.io.formats.style', 'tabulate') "
                             "if m not in sys.modules))")
        assert (status, text.strip()) == ("ok", "[]")
        assert a.run("x += 1; print(x)")[1].strip() == "42"
        assert b.run("print('x' in dir())")[1].strip() == "False"
    finally:
        a.close()
        b.close()


def test_another_environment_starts_cold_and_names_the_variable_not_its_value(tmp_path, monkeypatch):
    monkeypatch.delenv(wk.ENV, raising=False)  # not the module's warm process: one of its own
    with wk.warm_kernels() as w:
        assert w.wait()
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", "7")  # fixed when BLAS loads: a fork would not honour it
        monkeypatch.setenv("MEDEVAL_SECRET_LOOKING", "sk-do-not-print")
        got = _probe(wk.WarmKernelManager, tmp_path)
    assert wk.FORKED not in got["env"] and got["env"]["OPENBLAS_NUM_THREADS"] == "7"
    assert (w.forked, sum(w.declined.values())) == (0, 1)
    assert "OPENBLAS_NUM_THREADS" in w.summary() and "sk-do-not-print" not in w.summary()
    assert "1 started cold" in w.summary()


def test_a_provider_key_or_endpoint_set_later_still_forks_and_reaches_the_kernel(tmp_path, monkeypatch):
    """Keys and base URLs are read when a client is made, never at import: a kernel that differs only in them
    is forked, and gets its own values (a test that sets a stub's key used to start every kernel cold)."""
    monkeypatch.delenv(wk.ENV, raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with wk.warm_kernels() as w:
        assert w.wait()
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-1234")
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        got = _probe(wk.WarmKernelManager, tmp_path)
    assert got["env"][wk.FORKED] == "1" and (w.forked, sum(w.declined.values())) == (1, 0)
    assert got["env"]["OPENAI_API_KEY"] == "sk-test-not-a-real-key-1234"
    assert got["env"]["OPENAI_BASE_URL"] == "http://127.0.0.1:9/v1"


def test_without_a_warm_process_the_kernel_starts_cold(tmp_path, monkeypatch):
    monkeypatch.setenv(wk.ENV, str(tmp_path / "nobody-listens.sock"))
    got = _probe(wk.WarmKernelManager, tmp_path)
    assert wk.FORKED not in got["env"]


def test_off_switch_and_nesting(monkeypatch):
    monkeypatch.setenv(wk.ENV, "0")
    with wk.warm_kernels() as w:
        assert w.path is None and w.summary() == ""
    assert wk.WarmKernelManager(kernel_name="python3").kernel_spec is not None


def _gone(pid: int, within: float = 5.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return True
        time.sleep(0.05)
    return False


def test_killing_the_stand_in_kills_the_kernel(warm, tmp_path):
    k = Kernel(cwd=tmp_path)
    pid = int(k.run("import os; print(os.getpid())")[1])
    assert pid != k.km.provisioner.pid  # the kernel manager holds the stand-in
    k.km.signal_kernel(signal.SIGKILL)  # the stand-in cannot forward this one
    assert _gone(pid)
    k.kc.stop_channels()


def test_an_interrupt_reaches_the_forked_kernel(warm, tmp_path):
    k = Kernel(cwd=tmp_path)
    try:
        msg_id = k.kc.execute("import time; time.sleep(60)")
        # interrupt once the cell runs: a SIGINT that arrives while a loaded machine still starts the kernel is
        # lost, and the reply would come after the 60 s (seen under a profiler)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = k.kc.get_iopub_msg(timeout=60)
            if msg["msg_type"] == "execute_input" and msg["parent_header"].get("msg_id") == msg_id:
                break
        time.sleep(0.2)
        t0 = time.monotonic()
        k.km.interrupt_kernel()
        reply = k.kc.get_shell_msg(timeout=20)
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
        assert time.monotonic() - t0 < 10
        # and it goes on (read back from the reply: a stream message right after an interrupt may come late; a
        # request that arrives while ipykernel still aborts the queue after an error is answered "aborted")
        for _ in range(20):
            again = k.kc.execute_interactive("x = 6 * 7", user_expressions={"x": "x"}, timeout=60)["content"]
            if again["status"] != "aborted":
                break
            time.sleep(0.25)
        assert again["status"] == "ok" and again["user_expressions"]["x"]["data"]["text/plain"] == "42"
    finally:
        k.close()


def test_the_warm_process_leaves_when_its_parent_does(tmp_path):
    """A runner killed with SIGKILL cannot stop its warm process: the process notices and leaves."""
    sock = tmp_path / "w.sock"
    script = tmp_path / "runner.py"
    script.write_text(
        "import os, subprocess, sys, time\n"
        "code = 'from medeval_kit.cli import warm_kernels as wk; wk.PRELOAD = (); wk.main(sys.argv[1:])'\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import sys; ' + code, sys.argv[1], str(os.getpid())],\n"
        "                     stdin=subprocess.DEVNULL)\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(60)\n")
    runner = subprocess.Popen([sys.executable, str(script), str(sock)], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(runner.stdout.readline())
        deadline = time.monotonic() + 30
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sock.exists() and not _gone(pid, within=0.5)
        runner.kill()
        assert _gone(pid)
    finally:
        runner.kill()
        runner.wait()


def _probe_project(root: Path, n: int) -> None:
    """Notebook probe.ipynb writing ``<tag>.txt`` = "1" in a forked kernel, else "cold"; study ``s`` of n runs."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    from nbbuild import build

    (root / "notebooks").mkdir()
    (root / "studies").mkdir()
    build(str(root / "notebooks" / "probe.ipynb"), "# probe", 'tag: str = "a"  # which\n',
          [("## probe", "import os, pathlib\npathlib.Path(f'{tag}.txt').write_text(os.environ.get('"
            + wk.FORKED + "', 'cold'))")])
    (root / "studies" / "s.yaml").write_text("description: probe\nruns:\n" + "".join(
        f"  - {{name: r{i}, notebook: probe.ipynb, parameters: {{tag: r{i}}}}}\n" for i in range(n)))


def test_medeval_run_starts_a_warm_process_and_says_how_its_kernels_started(tmp_path, monkeypatch, capsys):
    """More runs than jobs: the first kernel waits for the warm process to finish importing, and every kernel
    forks; the summary says so."""
    from medeval_kit.cli import runner

    monkeypatch.delenv(wk.ENV, raising=False)
    _probe_project(tmp_path, 3)
    monkeypatch.setenv("MEDEVAL_ROOT", str(tmp_path))
    res = runner.run_studies(["s"], jobs=1)
    assert [r.status for r in res] == ["ok"] * 3, [r.error for r in res]
    assert [(tmp_path / "notebooks" / f"r{i}.txt").read_text() for i in range(3)] == ["1"] * 3
    assert "kernels: 3 forked from a warm process\n" in capsys.readouterr().err


def test_a_kernel_that_cannot_wait_starts_cold_and_the_summary_counts_it(tmp_path, monkeypatch, capsys):
    from medeval_kit.cli import runner

    monkeypatch.delenv(wk.ENV, raising=False)
    monkeypatch.setattr(wk, "READY_WAIT_S", 0.0)  # the runner's workers are forked: they see it too
    _probe_project(tmp_path, 3)
    monkeypatch.setenv("MEDEVAL_ROOT", str(tmp_path))
    res = runner.run_studies(["s"], jobs=1)
    assert [r.status for r in res] == ["ok"] * 3, [r.error for r in res]
    seen = [(tmp_path / "notebooks" / f"r{i}.txt").read_text() for i in range(3)]
    assert set(seen) <= {"1", "cold"} and seen[0] == "cold"
    forked = seen.count("1")
    err = capsys.readouterr().err
    assert f"kernels: {forked} forked from a warm process, {3 - forked} started cold" in err
    assert "x the warm process was still importing" in err


def test_a_run_inside_a_warm_block_forks_every_kernel_whatever_its_own_variables(tmp_path, monkeypatch):
    """``medeval run`` sets MEDEVAL_ROOT, MEDEVAL_RUN_ID, MEDEVAL_RUN_CONTEXT for its kernels: the toolkit reads
    them when called, so a warm process started before them still serves (as the test suite's does), given the
    thread counts the run gives its kernels."""
    from medeval_kit.cli import runner

    monkeypatch.delenv(wk.ENV, raising=False)
    for name in runner.THREAD_VARIABLES:
        monkeypatch.setenv(name, str(max(1, (os.cpu_count() or 1) // 2)))
    _probe_project(tmp_path, 3)
    with wk.warm_kernels() as w:
        assert w.wait()
        monkeypatch.setenv("MEDEVAL_ROOT", str(tmp_path))
        res = runner.run_studies(["s"], jobs=2)
    assert [r.status for r in res] == ["ok"] * 3, [r.error for r in res]
    assert [(tmp_path / "notebooks" / f"r{i}.txt").read_text() for i in range(3)] == ["1"] * 3


def test_the_toolkit_reads_no_environment_variable_at_import_time():
    """What lets MEDEVAL_* differ between the warm process and its kernels: no module-level read of os.environ."""
    import ast

    pkg = Path(wk.__file__).resolve().parents[1]
    found = []

    def walk(node, where):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue  # read when called
            if isinstance(child, ast.Attribute) and ast.unparse(child) in ("os.environ", "os.getenv"):
                found.append(f"{where}:{child.lineno}")
            walk(child, where)

    for path in pkg.rglob("*.py"):
        walk(ast.parse(path.read_text(encoding="utf-8")), path.relative_to(pkg.parent))
    assert found == []


def test_the_environment_it_compares_with_never_reaches_a_file(monkeypatch):
    """The warm process gets the environment (API keys included) through a pipe; its folder holds none of it."""
    canary = "sk-canary-5f0c9a1e7d"
    monkeypatch.delenv(wk.ENV, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    with wk.warm_kernels() as w:
        assert w.wait()
        files = [p for p in Path(w.path).parent.iterdir() if p.is_file()]
        assert files and not any(canary.encode() in p.read_bytes() for p in files)


def test_a_run_after_a_blocking_manager_was_driven_from_an_event_loop_does_not_hang(tmp_path):
    """papermill driving a blocking kernel manager leaves jupyter_core's helper thread in the process; workers
    ``medeval run`` forks later inherit it dead. The runner's kernel manager is asynchronous, so nothing waits on
    it (found as a hang of the test suite)."""
    _probe_project(tmp_path, 2)
    script = tmp_path / "scenario.py"
    script.write_text(
        "import os, sys\n"
        "import papermill as pm\n"
        "from medeval_kit.cli import runner, warm_kernels as wk\n"
        f"nb = {str(tmp_path / 'notebooks' / 'probe.ipynb')!r}\n"
        "pm.execute_notebook(nb, nb + '.out.ipynb', kernel_name='python3', progress_bar=False,\n"
        "                    kernel_manager_class=wk.WarmKernelManager)\n"
        f"os.environ['MEDEVAL_ROOT'] = {str(tmp_path)!r}\n"
        "res = runner.run_studies(['s'], jobs=1, progress=False)\n"
        "print([r.status for r in res])\n")
    env = {k: v for k, v in os.environ.items() if k != wk.ENV}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env,
                         cwd=tmp_path)
    assert out.stdout.strip().splitlines()[-1] == "['ok', 'ok']", out.stderr[-2000:]
