"""pyproject.toml is the single source of dependencies; environment.yml must stay consistent with it."""

from pathlib import Path

import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_environment_yml_installs_the_project_with_its_extras():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    assert any(str(d).startswith("python=3.11") for d in deps)
    pip = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    extras = {e for line in pip if line.startswith("-e .[") for e in line[len("-e .["):-1].split(",")}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # the extras the Makefile installs must be the ones conda users get
    assert extras == {"dev", "local"}
    assert extras <= set(project["optional-dependencies"])
    # no package is pinned in two places: conda lists only python, pip and build tools
    conda_pkgs = {str(d).split("=")[0] for d in deps if not isinstance(d, dict)}
    assert conda_pkgs <= {"python", "pip", "cmake"}


def test_core_dependencies_named_by_the_design_are_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {d.split(">")[0].split("=")[0].split("[")[0].strip().lower() for d in project["dependencies"]}
    for need in ["pandas", "numpy", "scipy", "statsmodels", "scikit-learn", "krippendorff", "matplotlib",
                 "seaborn", "plotly", "papermill", "nbformat", "ipykernel", "jupyterlab", "marimo", "openai",
                 "anthropic", "tqdm", "pyyaml"]:
        assert need in names, need


def test_makefile_installs_the_extras_environment_yml_names():
    mk = (ROOT / "Makefile").read_text()
    assert "-e '.[dev,local]'" in mk


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()
