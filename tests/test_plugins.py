"""Registries read at call time, and third-party extensions through entry points (``medeval_kit.plugins``).

The plugins in ``tests/plugins/`` are copied to a temporary folder, installed there offline (pip
``--no-index --no-build-isolation --target``) and put on the path of a fresh process: the CLI, or
``python -c``, so the test process itself never imports a plugin and import order is really fresh.

A fresh interpreter spends ~2 s importing numpy, pandas and scipy before it reaches the toolkit, so most
checks run in processes forked from one server (``ZYGOTE``, a ``python -c`` process started once per module)
that has imported those third-party libraries and nothing of medeval_kit or of a plugin: each check is a
process of its own whose ``medeval_kit`` import, registries and plugin loading start from nothing, with the
plugin folders where ``PYTHONPATH`` puts them (``sys.path[1:]``), its own exit code, and its file descriptors
1 and 2 captured. One check (the broken plugin) runs the real ``python -m medeval_kit.cli`` with ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from medeval_kit import plugins, schemas
from medeval_kit.errors import SchemaError

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "plugins"

# the installs and the fork server are built once per module: under pytest-xdist --dist loadgroup, once per run
pytestmark = pytest.mark.xdist_group("test_plugins")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Plugin folder name -> a folder where it is installed (built once per module, offline)."""
    built: dict[str, Path] = {}

    def install(name: str) -> Path:
        if name not in built:
            tmp = tmp_path_factory.mktemp(name)
            src = tmp / "src"  # build a copy: setuptools writes build/ and *.egg-info next to the sources
            shutil.copytree(SOURCES / name, src)
            target = tmp / "site"
            subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                            "--no-index", "--disable-pip-version-check", "--quiet", "--target", str(target), str(src)],
                           check=True, capture_output=True, text=True, timeout=300)
            built[name] = target
        return built[name]

    return install


def _env(*paths: Path) -> dict[str, str]:
    # Python's own warning filters, as a user has them (a PluginWarning is shown)
    env = {k: v for k, v in os.environ.items() if k not in ("MEDEVAL_CACHE_MODE", "PYTHONPATH", "PYTHONWARNINGS")}
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(map(str, paths))
    return env


def medeval(args: list[str], *paths: Path, cwd: Path) -> subprocess.CompletedProcess:
    """The real command in a new interpreter, the plugins on ``PYTHONPATH``."""
    return subprocess.run([sys.executable, "-m", "medeval_kit.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=_env(*paths), timeout=300)


# The fork server. It reads one job per line on stdin ({"paths", "cwd", "steps", "result"}), forks a child per
# job and answers with the child's wait status. The child puts the job's folders on sys.path where PYTHONPATH
# would (after sys.path[0], '' for -c), then runs each step -- {"argv": [...]}: sys.exit(main(argv)) of
# medeval_kit.cli, as `python -m medeval_kit.cli` does; {"code": "..."}: the code, as `python -c` does -- with
# file descriptors 1 and 2 sent to files, and writes [{returncode, stdout, stderr}, ...] to the result file.
ZYGOTE = r"""
import json, os, sys, traceback

for _name in ("numpy", "pandas", "scipy.stats", "scipy.optimize", "yaml", "asyncio"):  # never the toolkit
    __import__(_name)
_seen = sorted(m for m in sys.modules if m.startswith("medeval"))
assert not _seen, f"the fork server imported {_seen}"


def _run(step):
    if "argv" in step:
        from medeval_kit.cli import main

        return main(step["argv"])
    exec(compile(step["code"], "<string>", "exec"), {"__name__": "__main__"})
    return 0


def _exit_code(exc):
    if exc.code is None or isinstance(exc.code, int):
        return exc.code or 0
    print(exc.code, file=sys.stderr)
    return 1


def _child(job):
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # the server's stdout is its answer channel
    os.chdir(job["cwd"])
    sys.path[1:1] = job["paths"]
    results = []
    for i, step in enumerate(job["steps"]):
        files = [f"{job['result']}.{i}.{fd}" for fd in (1, 2)]
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        with open(files[0], "wb") as out, open(files[1], "wb") as err:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            try:
                try:
                    code = _exit_code(SystemExit(_run(step)))
                except SystemExit as exc:
                    code = _exit_code(exc)
                except BaseException:
                    traceback.print_exc()
                    code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
        texts = [open(f, encoding="utf-8", errors="replace").read() for f in files]
        results.append({"returncode": code, "stdout": texts[0], "stderr": texts[1]})
    with open(job["result"], "w", encoding="utf-8") as f:
        json.dump(results, f)


for line in sys.stdin:
    job = json.loads(line)
    pid = os.fork()
    if pid == 0:
        try:
            _child(job)
        except BaseException:
            traceback.print_exc()  # to the server's stderr
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(json.dumps(status) + "\n")
    sys.stdout.flush()
"""


class Forks:
    """Checks in fresh processes forked from the server: ``medeval`` (the CLI), ``python`` (code), ``run`` (steps)."""

    def __init__(self, folder: Path):
        self.folder, self.n, self.proc = folder, 0, None
        self.log = open(folder / "server.stderr", "w+b")  # noqa: SIM115 - closed by close()
        self._start()

    def _start(self):
        # a session of its own: _kill() ends the server and a check still running in one go
        self.proc = subprocess.Popen([sys.executable, "-c", ZYGOTE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, env=_env(), cwd=self.folder, text=True, start_new_session=True)

    def _kill(self):
        if self.proc.returncode is None:  # not reaped yet: its process group is still ours
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass

    def run(self, steps: list[dict], *paths: Path, cwd: Path, timeout: float = 300) -> list[Result]:
        """Run ``steps`` in order in one new process (the plugin folders ``paths`` on its path)."""
        if self.proc.poll() is not None:  # killed after an earlier check failed
            self._start()
        self.n += 1
        result = self.folder / f"job{self.n}.json"
        job = {"paths": [str(p) for p in paths], "cwd": str(cwd), "steps": steps, "result": str(result)}
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line or json.loads(line) != 0 or not result.exists():
            self._kill()
            self.log.seek(0)
            raise AssertionError(f"forked check failed ({line.strip() or 'no answer'}): {steps}\n"
                                 + self.log.read().decode(errors="replace")[-3000:])
        return [Result(**r) for r in json.loads(result.read_text(encoding="utf-8"))]

    def medeval(self, args: list[str], *paths: Path, cwd: Path) -> Result:
        return self.run([{"argv": [str(a) for a in args]}], *paths, cwd=cwd)[0]

    def python(self, code: str, *paths: Path, cwd: Path) -> Result:
        return self.run([{"code": textwrap.dedent(code)}], *paths, cwd=cwd)[0]

    def close(self):
        if self.proc.returncode is None:
            try:
                self.proc.stdin.close()  # the server ends at the end of its input
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()
        self.log.close()


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def forks(tmp_path_factory):
    server = Forks(tmp_path_factory.mktemp("forks"))
    yield server
    server.close()


def _annotations(path: Path) -> Path:
    """Two raters on 12 items; r2 differs on items 0 and 8, so po = 10/12 and Maxwell's RE = 2 po - 1 = 2/3.
    r1 says A on items 0-7 and B on 8-11 (shares 2/3, 1/3), so Cohen's kappa is a different number."""
    r1 = ["A"] * 8 + ["B"] * 4
    r2 = ["B" if i == 0 else "A" if i == 8 else lab for i, lab in enumerate(r1)]
    rows = [(f"i{i}", r, lab) for i in range(12) for r, lab in (("r1", r1[i]), ("r2", r2[i]))]
    pd.DataFrame(rows, columns=["item", "rater", "label"]).to_csv(path, index=False)
    return path


def _estimates(stdout: str) -> dict[str, float]:
    from io import StringIO

    t = pd.read_csv(StringIO(stdout))
    return dict(zip(t.loc[t.section == "agreement", "metric"], t.loc[t.section == "agreement", "estimate"]))


# --------------------------------------------------------------------------- import order


VALIDATE = """
{prelude}
import pandas as pd
from medeval_kit import schemas
from medeval_kit.errors import SchemaError

def table(protocol):
    return pd.DataFrame({{"item": ["1"], "judge": ["j"], "protocol": [protocol], "criterion": ["c"],
                          "order": ["single"], "repeat": [0], "raw": ["x"], "parse_status": ["ok"]}})

for p in ("pairwise_mec", "example_yesno"):  # registered only by a judge protocol module, and by a plugin
    schemas.validate(table(p), "judgments")
try:
    schemas.validate(table("nosuch"), "judgments")
except SchemaError as e:
    assert "medeval_kit.protocols" in str(e), e
else:
    raise AssertionError("an unknown protocol was accepted")
print(sorted(schemas.protocols()))
"""


@pytest.mark.parametrize("prelude", ["", "import medeval_kit.judge", "import medeval_kit.llm, medeval_kit.agreement",
                                     "import medeval_kit.cli; medeval_kit.cli.build_parser()"])
def test_validation_does_not_depend_on_import_order(site, forks, tmp_path, prelude):
    """A fresh process that imports only schemas accepts every registered protocol (the built-in ones, all
    of them only registered by judge/protocols/*.py, and a plugin's), exactly as after importing judge."""
    out = forks.python(VALIDATE.format(prelude=prelude), site("medeval_example_plugin"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(sorted(["multi_answer", "multi_response", "pairwise", "pairwise_mec",
                                             "reference", "rubric", "example_yesno"]))


def test_plugins_load_at_the_first_read_not_at_import(site, forks, tmp_path):
    code = """
    import sys
    import medeval_kit.agreement, medeval_kit.judge, medeval_kit.llm
    from medeval_kit.agreement import registry
    before = sorted(m for m in sys.modules if m.startswith("medeval_example_plugin."))
    assert "example_maxwell_re" in registry.names()  # the first read loads the coefficient plugins
    after = sorted(m for m in sys.modules if m.startswith("medeval_example_plugin."))
    print(before, after)
    """
    out = forks.python(code, site("medeval_example_plugin"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[] ['medeval_example_plugin.coefficients']"


def test_schemas_protocols_is_live_and_read_only():
    import medeval_kit.judge as J

    assert not hasattr(schemas.PROTOCOLS, "append")
    assert tuple(schemas.PROTOCOLS) == schemas.protocols() == tuple(J.protocol_names())
    judgments = pd.DataFrame({"item": ["1"], "judge": ["j"], "protocol": ["live_toy"], "criterion": ["c"],
                              "order": ["single"], "repeat": [0], "raw": ["x"], "parse_status": ["ok"]})
    with pytest.raises(SchemaError, match="unknown label"):
        schemas.validate(judgments, "judgments")
    J.protocol("live_toy", template="judge/rubric", schema=dict, inputs=())(lambda data: data)
    try:
        assert "live_toy" in schemas.PROTOCOLS and "live_toy" in schemas.protocols()
        schemas.validate(judgments, "judgments")
        assert "live_toy" in schemas.SCHEMAS["judgments"].describe().set_index("column").loc["protocol", "allowed"]
    finally:
        J.unregister("live_toy")
    assert "live_toy" not in schemas.PROTOCOLS
    with pytest.raises(SchemaError, match="unknown label"):
        schemas.validate(judgments, "judgments")


# --------------------------------------------------------------------------- the example plugin in the CLI


def test_plugin_appears_in_the_cli(site, forks, tmp_path):
    example = site("medeval_example_plugin")
    assert "example_maxwell_re" not in forks.medeval(["agreement", "--help"], cwd=tmp_path).stdout  # not without it
    # the three helps in one fresh process: every command builds the same parser (build_parser imports every
    # command module and loads the plugins in the same order whatever the command); the first one loads them
    commands = ("agreement", "judge-vs-humans", "judge")
    helps = dict(zip(commands, forks.run([{"argv": [a, "--help"]} for a in commands], example, cwd=tmp_path)))
    assert all(h.returncode == 0 and "Warning" not in h.stderr for h in helps.values()), \
        {a: h.stderr for a, h in helps.items()}
    assert "example_maxwell_re" in helps["agreement"].stdout
    assert "Maxwell's RE (example plugin)" in " ".join(helps["judge-vs-humans"].stdout.split())
    assert "example_yesno" in helps["judge"].stdout
    # the provider: an unknown model string lists the registered providers with their examples
    (tmp_path / "items.csv").write_text("item,response\na,fine\n", encoding="utf-8")
    bad = forks.medeval(["judge", "items.csv", "--protocol", "example_yesno", "--model", "nosuch/x", "--quiet"],
                        example, cwd=tmp_path)
    assert bad.returncode == 2 and "example/canned" in bad.stderr and "Traceback" not in bad.stderr


def test_plugin_coefficient_runs_in_the_cli(site, forks, tmp_path):
    ann = _annotations(tmp_path / "ann.csv")
    out = forks.medeval(["agreement", str(ann), "--metric", "example_maxwell_re", "cohen_kappa", "--format", "csv",
                         "--n-boot", "50"], site("medeval_example_plugin"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    est = _estimates(out.stdout)
    assert est["example_maxwell_re"] == pytest.approx(2 / 3)  # 2 * 10/12 - 1, see _annotations
    assert est["cohen_kappa"] == pytest.approx(0.625)  # po 10/12, pe (8*8 + 4*4)/144 = 5/9: (5/6 - 5/9)/(4/9)
    no_plugin = forks.medeval(["agreement", str(ann), "--metric", "example_maxwell_re"], cwd=tmp_path)
    assert no_plugin.returncode == 2 and "invalid choice" in no_plugin.stderr


def test_plugin_protocol_and_provider_run_in_the_cli(site, forks, tmp_path):
    (tmp_path / "items.csv").write_text("item,response\na,fine\nb,DANGER ahead\nc,ok\n", encoding="utf-8")
    out = forks.medeval(["judge", "items.csv", "--protocol", "example_yesno", "--model", "example/canned", "--cache",
                         str(tmp_path / "c.sqlite"), "--cache-mode", "use", "--out", "j.csv", "--quiet"],
                        site("medeval_example_plugin"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    j = pd.read_csv(tmp_path / "j.csv")
    assert j.protocol.eq("example_yesno").all() and j.judge.eq("example/canned").all()
    assert j.verdict.tolist() == ["yes", "no", "yes"] and j.score.tolist() == [1.0, 0.0, 1.0]
    assert j.template.eq("example/yesno").all()  # the template shipped inside the plugin package


# --------------------------------------------------------------------------- broken plugins and clashes


def test_broken_plugin_is_skipped_with_a_warning(site, forks, tmp_path):
    ann = _annotations(tmp_path / "ann.csv")
    paths = (site("medeval_example_plugin"), site("medeval_broken_plugin"))
    out = medeval(  # the real command in a new interpreter, the plugins on PYTHONPATH
["agreement", str(ann), "--metric", "example_maxwell_re", "--format", "csv", "--n-boot", "0"],
                  *paths, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert _estimates(out.stdout)["example_maxwell_re"] == pytest.approx(2 / 3)  # the other plugin still works
    assert "PluginWarning" in out.stderr and "plugin 'broken'" in out.stderr
    assert "failed to load and is skipped: RuntimeError: this plugin is broken on purpose" in out.stderr
    assert "Traceback" not in out.stderr
    # what it registered before failing is taken back
    assert "broken_half" not in forks.medeval(["agreement", "--help"], *paths, cwd=tmp_path).stdout
    code = """
    import warnings
    from medeval_kit import plugins
    from medeval_kit.agreement import registry
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        names = registry.names()
    assert "broken_half" not in names and "example_maxwell_re" in names, names
    [warning] = w
    assert warning.category is plugins.PluginWarning, warning
    assert str(warning.message).startswith("medeval_kit plugin 'broken' (medeval_broken_plugin.coefficients, "
                                           "from medeval-broken-plugin) in group 'medeval_kit.coefficients' failed"), w
    assert plugins.loaded(plugins.COEFFICIENTS) == {"broken": "RuntimeError: this plugin is broken on purpose",
                                                    "example": ""}
    print("ok")
    """
    res = forks.python(code, *paths, cwd=tmp_path)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr


def test_builtin_name_wins_a_clash(site, forks, tmp_path):
    clash = site("medeval_clash_plugin")
    ann = _annotations(tmp_path / "ann.csv")
    out = forks.medeval(["agreement", str(ann), "--metric", "cohen_kappa", "clash_ok", "--format", "csv",
                         "--n-boot", "0"], clash, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    est = _estimates(out.stdout)
    assert est["cohen_kappa"] == pytest.approx(0.625) and est["clash_ok"] == pytest.approx(10 / 12)
    err = " ".join(out.stderr.split())
    for kind, name in (("coefficient", "cohen_kappa"), ("protocol", "pairwise"), ("provider", "openai")):
        assert f"plugin 'clash' (medeval_clash_plugin.clash, from medeval-clash-plugin): {kind} '{name}' is " \
               "already registered by medeval_kit (built in)" in err, err
    code = """
    from medeval_kit import plugins
    from medeval_kit.agreement import registry
    from medeval_kit.judge import registry as protocols
    from medeval_kit.llm.registry import provider_class
    print(registry.get("cohen_kappa").fn.__module__, protocols.get("pairwise").run.__module__,
          provider_class("openai").__module__)
    print(plugins.owner(plugins.COEFFICIENTS, "clash_ok"), plugins.owner(plugins.COEFFICIENTS, "cohen_kappa"))
    """
    res = forks.python(code, clash, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines() == [
        "medeval_kit.agreement.coefficients medeval_kit.judge.protocols.pairwise medeval_kit.llm.providers.openai",
        "'clash' (medeval_clash_plugin.clash, from medeval-clash-plugin) None"]


def test_a_builtin_registered_after_a_plugin_takes_its_name_back(monkeypatch):
    """The other order of a clash (a plugin loaded while the built-ins are still registering): the
    built-in replaces the plugin's entry, with a warning; built-in against built-in stays an error."""
    from medeval_kit.agreement import registry
    from medeval_kit.agreement.data import AgreementError

    name = "zz_plugin_clash_test"
    monkeypatch.setattr(plugins, "_current", ["'fake' (fake.module)"])
    registry.coefficient(name, label="the plugin's")(lambda t: t.po)
    try:
        assert plugins.owner(plugins.COEFFICIENTS, name) == "'fake' (fake.module)"
        monkeypatch.setattr(plugins, "_current", [])
        with pytest.warns(plugins.PluginWarning, match=r"plugin 'fake' \(fake.module\): its coefficient "
                                                       f"'{name}' has the name of a built-in one"):
            registry.coefficient(name, label="built in")(lambda t: t.po * 0)
        assert registry.get(name).label == "built in" and plugins.owner(plugins.COEFFICIENTS, name) is None
        with pytest.raises(AgreementError, match="already registered"):
            registry.coefficient(name, label="again")(lambda t: t.po)
        monkeypatch.setattr(plugins, "_current", ["'other' (other.module)"])
        with pytest.warns(plugins.PluginWarning, match="plugin 'other'.*already registered by medeval_kit"):
            registry.coefficient(name, label="a later plugin's")(lambda t: t.po)
        assert registry.get(name).label == "built in"
    finally:
        monkeypatch.setattr(plugins, "_current", [])
        registry.unregister(name)
    assert name not in registry.names()


def test_the_registries_are_complete_whatever_was_read_first():
    """Reading through the public dict, names() or a lookup gives the same registry (plugins loaded once)."""
    from medeval_kit.agreement import registry
    from medeval_kit.llm import registry as providers

    assert list(registry.REGISTRY) == registry.names() == list(registry.REGISTRY.keys())
    assert set(providers.provider_names()) == set(plugins.registered(plugins.PROVIDERS))
    assert plugins.COEFFICIENTS in plugins._done and plugins.PROVIDERS in plugins._done
    assert isinstance(plugins.loaded(plugins.COEFFICIENTS), dict)
    with pytest.raises(ValueError, match="unknown entry-point group"):
        plugins.load("medeval_kit.nosuch")
