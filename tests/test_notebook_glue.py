"""Issue 24 item 8: thin notebooks. One import path per function, no private imports, no hand-built ``meta``;
the runner's provenance reaches every saved table and figure, and a notebook run by hand says so."""

from __future__ import annotations

import ast
import collections
import importlib
import inspect
import json
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medeval_kit import provenance
from medeval_kit.tables import SIDECAR_SUFFIX, save_table
from medeval_kit.viz import figure, save_figure

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SAVERS = {"save_table", "save_figure", "save_plotly"}


@pytest.fixture(autouse=True)
def _no_context(monkeypatch):
    """Every test starts with no started context and no runner context."""
    monkeypatch.delenv(provenance.ENV, raising=False)
    provenance.reset()
    yield
    provenance.reset()


def _code(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    src = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return "\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("%", "!")))


def _paths(tree: ast.AST) -> list[str]:
    """Every dotted medeval_kit name the code reaches: ``from medeval_kit.x import f`` gives ``medeval_kit.x.f``,
    ``from medeval_kit import bias`` then ``bias.calibration.truth_annotations(...)`` gives the full chain."""
    alias, out = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "medeval_kit":
            for a in node.names:
                alias[a.asname or a.name] = f"{node.module}.{a.name}"
                out.append(f"{node.module}.{a.name}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "medeval_kit":
                    alias[a.asname or "medeval_kit"] = a.name if a.asname else "medeval_kit"
                    out.append(a.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, n = [], node
            while isinstance(n, ast.Attribute):
                chain.append(n.attr)
                n = n.value
            if isinstance(n, ast.Name) and n.id in alias:
                out.append(".".join([alias[n.id], *reversed(chain)]))
    return out


def _resolve(path: str):
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            if not hasattr(obj, p):
                return None
            obj = getattr(obj, p)
        return obj
    return None


def _functions() -> dict[int, set[tuple[str, str]]]:
    """id of each medeval_kit function or class the notebooks use -> {(path, notebook)}.

    A wrapper (``functools.wraps``) counts as the function it wraps; every object is kept alive while ids are
    compared, so a name resolved to a fresh object each time cannot reuse another's id."""
    used, alive = collections.defaultdict(set), []
    for nb in NOTEBOOKS:
        for p in _paths(ast.parse(_code(nb))):
            obj = _resolve(p)
            if callable(obj) and not isinstance(obj, types.ModuleType) \
                    and str(getattr(obj, "__module__", "")).startswith("medeval_kit"):
                obj = inspect.unwrap(obj)
                alive.append(obj)
                used[id(obj)].add((p, nb.name))
    return used


# --------------------------------------------------------------------------- imports
def test_the_notebooks_are_found():
    assert len(NOTEBOOKS) >= 10


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_private_names(path):
    private = [p for p in _paths(ast.parse(_code(path))) if any(s.startswith("_") for s in p.split(".")[1:])]
    assert not private, f"{path.name} reaches private names {sorted(set(private))}: add a public API instead"


def test_each_function_is_reached_through_one_path():
    two = {tuple(sorted({p for p, _ in v})): sorted({nb for _, nb in v}) for v in _functions().values()
           if len({p for p, _ in v}) > 1}
    assert not two, f"functions imported through several paths (path: notebooks): {two}"


def test_package_level_names_are_preferred():
    """A function a package exports (its ``__all__``) is used as ``pkg.f`` or ``from medeval_kit.pkg import f``,
    not through the module that defines it (``medeval_kit.viz.rank.plot_ratings``)."""
    deep = set()
    for v in _functions().values():
        for path, nb in v:
            parts = path.split(".")
            if len(parts) <= 3:
                continue
            pkg = importlib.import_module(".".join(parts[:2]))
            if parts[-1] in getattr(pkg, "__all__", ()) \
                    and inspect.unwrap(getattr(pkg, parts[-1])) is inspect.unwrap(_resolve(path)):
                deep.add((nb, path, f"{'.'.join(parts[:2])}.{parts[-1]}"))
    assert not deep, f"use the package-level name (notebook, path, use): {sorted(deep)}"


def test_the_checks_see_what_they_should():
    """The path walk catches a private module, an alias chain and a second path to one function."""
    code = ("from medeval_kit.judge import _kernels\nfrom medeval_kit import bias\nfrom medeval_kit.bias import "
            "calibration as cal\nbias.calibrate(x)\ncal.calibrate(y)\nbias.calibration.truth_annotations(z)\n")
    paths = _paths(ast.parse(code))
    assert "medeval_kit.judge._kernels" in paths and "medeval_kit.bias.calibration.truth_annotations" in paths
    assert {"medeval_kit.bias.calibrate", "medeval_kit.bias.calibration.calibrate"} <= set(paths)
    assert _resolve("medeval_kit.bias.calibrate") is _resolve("medeval_kit.bias.calibration.calibrate")


# --------------------------------------------------------------------------- provenance in the notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_hand_built_meta(path):
    tree = ast.parse(_code(path))
    bad = [ast.unparse(n)[:80] for n in ast.walk(tree) if isinstance(n, ast.Call)
           and (getattr(n.func, "id", None) or getattr(n.func, "attr", None)) in SAVERS
           and any(k.arg == "meta" for k in n.keywords)]
    assert not bad, f"{path.name}: the runner gives the provenance; drop meta= from {bad}"
    assigned = [t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets
                if isinstance(t, ast.Name) and t.id.endswith("meta")]
    assert not assigned, f"{path.name}: hand-built provenance dicts {assigned}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_starts_its_context_once_with_its_own_name(path):
    tree = ast.parse(_code(path))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "start" and getattr(n.func.value, "id", None) == "provenance"]
    assert len(calls) == 1, f"{path.name}: call provenance.start(...) once, after the parameters cell"
    call = calls[0]
    assert isinstance(call.args[0], ast.Constant) and call.args[0].value == path.name
    assert ast.unparse(call.args[1]) == "globals()"


# --------------------------------------------------------------------------- the savers pick up the context
def _fig():
    fig, ax = figure("single")
    ax.plot([0, 1, 2], [0, 1, 4])
    return fig


RESULT = pd.DataFrame({"metric": ["kappa", "ac1"], "estimate": [0.1 + 0.2, 2 / 3], "n_items": [10, 12]})


def _runner_env(monkeypatch, **parameters):
    ctx = provenance.runner_context(study="demo_study", notebook="/anywhere/demo.ipynb",
                                    parameters={"seed": 3, "margin": 0.1 + 0.2, "figures_dir": "/abs/run/figures",
                                                "tables_dir": "/abs/run/tables", "study": "demo_study", **parameters})
    monkeypatch.setenv(provenance.ENV, ctx.to_json())
    return ctx


def test_save_table_and_figure_record_the_runner_context(tmp_path, monkeypatch):
    _runner_env(monkeypatch)
    table = json.loads(save_table(RESULT, "t", tmp_path / "tables")["json"].read_text())
    fig = json.loads(save_figure(_fig(), "f", tmp_path / "figures", data=RESULT)["json"].read_text())
    for side in (table, fig):
        assert side["study"] == "demo_study" and side["notebook"] == "demo.ipynb"
        assert side["runner"] == provenance.RUNNER
        assert side["parameters"] == {"seed": 3, "margin": 0.3}  # no output folders, floats at 6 digits
        assert len(side["data_hash"]) == 16
    assert table["table"] == "t" and table["files"] == ["t.csv", "t.md", "t.tex"]
    assert fig["figure"] == "f" and fig["files"] == ["f.pdf", "f.png", "f.svg"]
    assert table["data_hash"] == fig["data_hash"]  # the same data hashes alike for tables and figures
    assert (tmp_path / "tables" / f"t{SIDECAR_SUFFIX}").is_file()


def test_sidecars_are_byte_identical_across_calls(tmp_path, monkeypatch):
    _runner_env(monkeypatch)
    noisy = RESULT.assign(estimate=RESULT["estimate"] * (1 + 4e-16))
    a = save_table(RESULT, "t", tmp_path / "a")["json"].read_bytes()
    b = save_table(noisy, "t", tmp_path / "b")["json"].read_bytes()
    assert a == b
    fa = save_figure(_fig(), "f", tmp_path / "a", data=RESULT)["json"].read_bytes()
    fb = save_figure(_fig(), "f", tmp_path / "b", data=noisy)["json"].read_bytes()
    assert fa == fb
    text = (a + fa).decode()
    assert str(tmp_path) not in text and "/abs/run" not in text  # no folder of the run


def test_started_context_under_the_runner_keeps_the_runners_values(tmp_path, monkeypatch):
    _runner_env(monkeypatch, dataset="pandalm", n_items=40)
    ctx = provenance.start("other_name.ipynb", {"seed": 99, "dataset": "x"}, unused=("dataset", "n_items"))
    assert ctx.by_runner and ctx.notebook == "demo.ipynb" and dict(ctx.parameters) == {"seed": 3, "margin": 0.1 + 0.2}
    side = json.loads(save_table(RESULT, "t", tmp_path)["json"].read_text())
    assert side["parameters"] == {"seed": 3, "margin": 0.3}


def test_a_notebook_run_by_hand_says_so_and_records_its_parameters(tmp_path):
    # the parameters cell of a real notebook names the parameters; other names in the namespace are left out
    namespace = {"study": "rankings", "seed": 5, "n_boot": 10, "figures_dir": str(tmp_path / "f"),
                 "tables_dir": str(tmp_path / "t"), "pd": pd, "helper": 1, "In": ["x"]}
    ctx = provenance.start("rankings.ipynb", namespace)
    assert not ctx.by_runner and ctx.runner == provenance.OUTSIDE
    side = json.loads(save_figure(_fig(), "f", tmp_path, data=RESULT)["json"].read_text())
    assert side["runner"] == provenance.OUTSIDE and side["study"] == "rankings" and side["notebook"] == "rankings.ipynb"
    assert side["parameters"] == {"seed": 5, "n_boot": 10}
    table = json.loads(save_table(RESULT, "t", tmp_path)["json"].read_text())
    assert table["runner"] == provenance.OUTSIDE and table["parameters"] == {"seed": 5, "n_boot": 10}


def test_a_notebook_not_found_by_hand_records_its_plain_values(tmp_path):
    ctx = provenance.start("mine.ipynb", {"study": "s", "seed": 1, "ratio": 0.5, "names": ["a"], "pd": pd,
                                          "_private": 1, "In": ["x"], "tables_dir": "/x"}, unused=["ratio"])
    assert dict(ctx.parameters) == {"seed": 1, "names": ["a"]}


def test_a_save_with_no_context_at_all_says_it_ran_outside_the_runner(tmp_path):
    side = json.loads(save_table(RESULT, "t", tmp_path)["json"].read_text())
    assert side["runner"] == provenance.OUTSIDE and side["study"] is None and side["parameters"] == {}


def test_meta_still_overrides(tmp_path, monkeypatch):
    _runner_env(monkeypatch)
    side = json.loads(save_figure(_fig(), "f", tmp_path, data=RESULT,
                                  meta={"study": "s", "notebook": "n.ipynb", "seed": 1})["json"].read_text())
    assert (side["study"], side["notebook"], side["parameters"]) == ("s", "n.ipynb", {"seed": 1})


def test_the_runner_gives_every_parameter_with_its_default(monkeypatch):
    from medeval_kit.cli import runner
    from medeval_kit.cli.studies import Run

    run = Run(study="rankings", name="rankings", notebook="rankings.ipynb", parameters={"n_boot": 10})
    params = {"study": "rankings", "n_boot": 10, "figures_dir": "/abs/f", "tables_dir": "/abs/t"}
    ctx = runner.run_context(run, params)
    declared = runner.notebook_parameters("rankings.ipynb")
    assert ctx.by_runner and ctx.study == "rankings" and ctx.notebook == "rankings.ipynb"
    assert set(ctx.parameters) == set(declared) - {"study", "figures_dir", "tables_dir"}
    assert ctx.parameters["n_boot"] == 10 and ctx.parameters["seed"] == 0  # passed, and the default
    assert json.loads(ctx.to_json())["parameters"] == dict(ctx.parameters)


# --------------------------------------------------------------------------- logic moved out of the notebooks
def test_effect_against_target_is_the_notebooks_former_merge():
    from medeval_kit import bias

    calls, humans = bias.synthetic_scored_pairwise(40, position_bonus=2.0, samples=3, seed=0)
    pop, pop_humans = bias.synthetic_scored_pairwise(400, position_bonus=0.0, samples=3, seed=1)
    got = bias.calibration.effect_against_target(bias.calibrate(calls), humans, bias.calibrate(pop), pop_humans,
                                                 hitl_share=0.2, n_boot=20, seed=0, in_ci=True)
    # what position_calibration.ipynb computed inline before
    effect = bias.calibration_effect(bias.calibrate(calls), humans, hitl_share=0.2, n_boot=20, seed=0)
    target = bias.calibration_effect(bias.calibrate(pop), pop_humans, hitl_share=0.2, n_boot=0)
    want = effect.merge(target.loc[target["comparison"] == "level", ["metric", "method", "estimate"]].rename(
        columns={"estimate": "unbiased_target"}), on=["metric", "method"], how="left")
    want["target_in_ci"] = (want["ci_low"] <= want["unbiased_target"]) & (want["unbiased_target"] <= want["ci_high"])
    pd.testing.assert_frame_equal(got, want)
    no_flag = bias.calibration.effect_against_target(bias.calibrate(calls), humans, bias.calibrate(pop), pop_humans,
                                                     n_boot=20)
    assert list(no_flag.columns) == list(want.columns[:-1])


def test_selection_paths_and_warm_up():
    from medeval_kit import judge

    rng = np.random.default_rng(0)
    diffs = pd.DataFrame(rng.integers(-2, 3, size=(20, 4)).astype(float), columns=list("abcd"),
                         index=[f"i{k}" for k in range(20)])
    labels = pd.Series(rng.choice(["A", "B", "tie"], size=20), index=diffs.index)
    sel = judge.select_aspects_all(diffs, labels, max_k=2, k_folds=2, seed=0)
    paths = judge.aspects.selection_paths(sel)
    assert set(paths["objective"]) == set(sel.by_objective) and len(paths) == sum(
        len(s.path) for s in sel.by_objective.values())
    assert judge.aspects.warm_up() >= 0
