"""Where things are (issue 21): the project root, the packaged resources and ``medeval init``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from medeval_kit import paths
from medeval_kit.cli import main as cli_main
from medeval_kit.cli.init import init_project
from medeval_kit.errors import MedevalError

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parents[1]
INIT_FILES = {".gitignore", "README.md", "medeval.toml", "data/example_labels.csv", "studies/starter.yaml"}


@pytest.fixture()
def nowhere(tmp_path, monkeypatch):
    """No MEDEVAL_ROOT; the working directory is an empty folder outside the checkout."""
    monkeypatch.delenv(paths.ENV_VAR, raising=False)
    here = tmp_path / "elsewhere"
    here.mkdir()
    monkeypatch.chdir(here)
    assert paths.find_project() is None, "a medeval.toml above the test's tmp folder"
    return here


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


# --------------------------------------------------------------------------- the project root


def test_the_environment_variable_wins_over_a_marker(tmp_path, monkeypatch):
    (tmp_path / "marked").mkdir()
    (tmp_path / "marked" / paths.MARKER).write_text('name = "m"\n')
    monkeypatch.chdir(tmp_path / "marked")
    monkeypatch.setenv(paths.ENV_VAR, str(tmp_path / "mine"))
    assert paths.root() == (tmp_path / "mine").resolve()
    assert paths.cache_path() == (tmp_path / "mine" / "data" / "cache" / "llm.sqlite").resolve()
    assert paths.studies_dir() == (tmp_path / "mine" / "studies").resolve()


def test_the_nearest_marker_up_from_the_working_directory_is_the_root(nowhere, monkeypatch):
    proj = nowhere / "proj"
    deep = proj / "data" / "a" / "b"
    deep.mkdir(parents=True)
    (proj / paths.MARKER).write_text('name = "p"\n')
    (deep / "inner").mkdir()
    (deep / "inner" / paths.MARKER).mkdir()  # a folder named like the marker is not a marker
    monkeypatch.chdir(deep / "inner")
    assert paths.root() == proj.resolve()
    assert paths.find_project(deep) == proj.resolve()
    assert paths.cache_path() == proj.resolve() / "data" / "cache" / "llm.sqlite"


def test_without_a_marker_the_root_is_the_working_directory_not_the_checkout(nowhere):
    # the package under test sits in the toolkit's checkout, which is a project of its own ...
    assert paths.toolkit_home() == REPO and (REPO / paths.MARKER).is_file()
    # ... yet from a folder outside it, nothing resolves to the checkout
    assert paths.root() == nowhere.resolve()
    assert paths.cache_path() == nowhere.resolve() / "data" / "cache" / "llm.sqlite"
    assert paths.studies_dir() == nowhere.resolve() / "studies"
    assert not str(paths.cache_path()).startswith(str(REPO))


def test_inside_the_checkout_the_checkout_is_the_project(monkeypatch):
    monkeypatch.delenv(paths.ENV_VAR, raising=False)
    monkeypatch.chdir(REPO / "notebooks")  # where papermill runs the toolkit's notebooks
    assert paths.root() == REPO
    assert paths.cache_path() == REPO / "data" / "cache" / "llm.sqlite"
    assert tomllib.loads((REPO / paths.MARKER).read_text())["name"] == "medeval_kit"


# --------------------------------------------------------------------------- resources


def test_in_a_checkout_the_package_resources_are_the_checkout_folders(nowhere):
    assert paths.package_resource("data", "prices.yaml") == REPO / "data" / "prices.yaml"
    assert paths.data_dir() == REPO / "data" and (paths.data_dir() / "pandalm" / "testset-v1.json").is_file()
    assert (paths.notebooks_dir() / "agreement.ipynb").is_file()
    assert (paths.example_studies_dir() / "agreement.yaml").is_file()
    # a project without its own copies falls back to the toolkit's
    assert paths.prompts_dir() == REPO / "prompts"
    assert paths.prices_path() == REPO / "data" / "prices.yaml"
    assert paths.published_dir() == REPO / "data" / "published"


def test_a_projects_own_resources_come_first(nowhere):
    (nowhere / paths.MARKER).write_text('name = "p"\n')
    (nowhere / "prompts").mkdir()
    (nowhere / "data" / "published").mkdir(parents=True)
    (nowhere / "data" / "prices.yaml").write_text("{}\n")
    (nowhere / "data" / "pandalm").mkdir()  # the bundled datasets are never the project's
    assert paths.prompts_dir() == nowhere.resolve() / "prompts"
    assert paths.prices_path() == nowhere.resolve() / "data" / "prices.yaml"
    assert paths.published_dir() == nowhere.resolve() / "data" / "published"
    assert paths.data_dir() == REPO / "data"
    assert paths.resource("no", "such") == REPO / "no" / "such"


def test_a_built_package_reads_its_bundle_not_the_folder_above_it(tmp_path, monkeypatch):
    """In a wheel the resources are medeval_kit/_bundle/...; the folder above the package is site-packages."""
    pkg = tmp_path / "site-packages" / "medeval_kit"
    (pkg / paths.BUNDLE / "data").mkdir(parents=True)
    (pkg / paths.BUNDLE / "data" / "prices.yaml").write_text("{}\n")
    monkeypatch.setattr(paths._resources, "files", lambda name: pkg)
    monkeypatch.delenv(paths.ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    assert paths.package_resource("data", "prices.yaml") == pkg / paths.BUNDLE / "data" / "prices.yaml"
    assert paths.prices_path() == pkg / paths.BUNDLE / "data" / "prices.yaml"
    assert paths.notebooks_dir() == pkg / paths.BUNDLE / "notebooks"
    assert paths.data_dir() == pkg / paths.BUNDLE / "data"


# --------------------------------------------------------------------------- medeval init


def test_init_creates_a_project_that_the_root_resolves_to(nowhere, monkeypatch, capsys):
    assert cli_main(["init", "proj"]) == 0
    out = capsys.readouterr().out
    proj = nowhere / "proj"
    assert _files(proj) == INIT_FILES
    assert "medeval agreement data/example_labels.csv" in out
    settings = paths.project_settings(proj)
    assert settings == tomllib.loads((proj / "medeval.toml").read_text())
    assert settings["name"] == "proj" and settings["model"] and settings["budget_usd"] > 0
    assert "runs/" in (proj / ".gitignore").read_text().split()
    assert "data/cache/*.sqlite-wal" in (proj / ".gitignore").read_text().split()
    monkeypatch.chdir(proj / "data")
    assert paths.root() == proj.resolve() and paths.project_settings()["name"] == "proj"
    monkeypatch.chdir(nowhere)
    assert paths.project_settings() == {}
    (proj / "medeval.toml").write_text("name = \n")
    with pytest.raises(MedevalError, match="medeval.toml: not valid TOML"):
        paths.project_settings(proj)


def test_init_works_in_an_existing_empty_folder_and_names_a_project(nowhere):
    (nowhere / "empty").mkdir()
    written = init_project(nowhere / "empty", name='my "eval"')
    assert {p.relative_to(nowhere / "empty").as_posix() for p in written} == INIT_FILES
    assert tomllib.loads((nowhere / "empty" / "medeval.toml").read_text())["name"] == 'my "eval"'
    assert (nowhere / "empty" / "README.md").read_text().startswith('# my "eval"')


def test_init_refuses_to_overwrite_and_writes_nothing_then(nowhere, capsys):
    (nowhere / "p" / "studies").mkdir(parents=True)
    (nowhere / "p" / "studies" / "starter.yaml").write_text("mine\n")
    (nowhere / "p" / "README.md").write_text("mine\n")
    with pytest.raises(MedevalError, match=r"refusing to overwrite.*README\.md, studies/starter\.yaml"):
        init_project(nowhere / "p")
    assert _files(nowhere / "p") == {"README.md", "studies/starter.yaml"}
    assert (nowhere / "p" / "README.md").read_text() == "mine\n"
    init_project(nowhere / "q")
    assert cli_main(["init", "q"]) == 2  # a second init of the same folder
    assert "refusing to overwrite" in capsys.readouterr().err
    (nowhere / "f").write_text("")
    with pytest.raises(MedevalError, match="not a folder"):
        init_project(nowhere / "f")


def test_the_example_is_the_pandalm_subset_the_readme_says_it_is(nowhere):
    from medeval_kit.datasets.pandalm import load_pandalm

    init_project(nowhere / "p")
    ex = pd.read_csv(nowhere / "p" / "data" / "example_labels.csv", dtype=str)
    assert ex.groupby("rater").size().to_dict() == {"annotator1": 20, "annotator2": 20, "gpt-3.5-turbo": 20}
    b = load_pandalm()
    humans = b.annotations.set_index(["item", "rater"])["label"]
    gpt = b.judgments[b.judgments.judge == "gpt-3.5-turbo"].set_index("item")["verdict"]
    for row in ex.itertuples():
        want = gpt[row.item] if row.rater == "gpt-3.5-turbo" else humans[(row.item, row.rater)]
        assert row.label == want, row
    assert "PandaLM" in (nowhere / "p" / "README.md").read_text()


def test_the_starter_study_sets_parameters_the_agreement_notebook_has(nowhere):
    from medeval_kit.cli import runner

    init_project(nowhere / "p")
    study = yaml.safe_load((nowhere / "p" / "studies" / "starter.yaml").read_text())
    (run,) = study["runs"]
    params = runner.check_parameters(paths.notebooks_dir() / run["notebook"], run["parameters"])
    assert params["annotations_path"] == "../data/example_labels.csv"
    assert (nowhere / "p" / "notebooks" / params["annotations_path"]).resolve() == \
        (nowhere / "p" / "data" / "example_labels.csv").resolve()


def test_the_checkout_marker_does_not_ship_a_marker_inside_the_package():
    # a medeval.toml inside medeval_kit/ would make that folder a project for commands run in it
    assert not list((REPO / "medeval_kit").rglob(paths.MARKER))
