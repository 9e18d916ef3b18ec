"""The package's layering (ARCHITECTURE.md): imports only go down, no cycles, and nothing in the library
imports ``repro``. An AST walk over every import, including the ones inside functions."""

from __future__ import annotations

import ast
import collections
import functools
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "medeval_kit"

# Layer of each top-level module or folder of medeval_kit; an import may only go to the same or a lower layer.
LAYERS = {
    "__init__": 0, "errors": 0, "paths": 0, "plugins": 0, "results": 0, "schemas": 0, "tables": 0, "templates": 0,
    "columns": 0, "docstrings": 0, "deprecation": 0, "provenance": 0, "json_schema": 0,
    "stats": 1,
    "datasets": 2, "prompts": 2, "llm": 2, "embed": 2, "retrieve": 2, "pairwise": 2,
    "readers": 3,
    "agreement": 4, "bias": 4, "rounds": 4, "rank": 4, "psychometrics": 4,
    "judge": 5, "generate": 5, "overview": 5,
    "viz": 6,
    "repro": 7,
    "apps": 8, "cli": 8,
}
LIBRARY_MAX = LAYERS["viz"]  # everything at or below this is "the library"


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = p.relative_to(PKG.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """Every medeval_kit module `name` imports (resolved to a module that exists)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            cands = [f"{target}.{a.name}" for a in node.names] + [target]
        elif isinstance(node, ast.Import):
            cands = [a.name for a in node.names]
        else:
            continue
        for c in cands:
            if c.startswith("medeval_kit"):
                while c and c not in mods:
                    c = c.rpartition(".")[0]
                if c and c != name:
                    found.add(c)
    return found


@functools.lru_cache(maxsize=1)
def _graph():
    """The modules and their imports, parsed once for the tests below (they only read it)."""
    mods = _modules()
    return mods, {n: _imports(n, p, mods) for n, p in mods.items()}


def _top(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_module_has_a_layer():
    mods, _ = _graph()
    unknown = sorted({_top(n) for n in mods} - set(LAYERS))
    assert not unknown, f"give these a layer in LAYERS and ARCHITECTURE.md: {unknown}"


def test_imports_only_go_down():
    _, g = _graph()
    bad = [f"{a} (layer {LAYERS.get(_top(a))}) imports {b} (layer {LAYERS.get(_top(b))})"
           for a, deps in sorted(g.items()) for b in sorted(deps)
           if _top(a) in LAYERS and _top(b) in LAYERS and LAYERS[_top(b)] > LAYERS[_top(a)]
           and not b.startswith(a + ".")]  # a package's __init__ may re-export its own modules
    assert not bad, "\n".join(bad)


def test_library_never_imports_repro():
    _, g = _graph()
    bad = [f"{a} imports {b}" for a, deps in g.items() for b in deps
           if _top(b) == "repro" and LAYERS.get(_top(a), 99) <= LIBRARY_MAX]
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    _, g = _graph()
    # a package __init__ importing its own submodules is not a cycle
    edges = {a: {b for b in deps if not b.startswith(a + ".")} for a, deps in g.items()}
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    assert not sccs, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in sccs)


def test_the_checker_sees_a_violation(tmp_path):
    """The walk resolves relative and lazy imports (so the tests above can fail)."""
    mods = {"medeval_kit.stats": PKG / "stats" / "__init__.py", "medeval_kit.stats.x": tmp_path / "x.py",
            "medeval_kit.viz": PKG / "viz" / "__init__.py"}
    (tmp_path / "x.py").write_text("def f():\n    from ..viz import figure\n    from . import bootstrap\n")
    assert "medeval_kit.viz" in _imports("medeval_kit.stats.x", tmp_path / "x.py", mods)
    assert LAYERS[_top("medeval_kit.viz")] > LAYERS[_top("medeval_kit.stats.x")]
    assert collections.Counter(LAYERS.values())[0] >= 5


def test_plots_live_in_viz_and_take_ax():
    """Every plot is in viz/, takes ax=None and returns the Figure it drew on; nothing else imports matplotlib."""
    import inspect

    import matplotlib.pyplot as plt
    import pandas as pd

    from medeval_kit import viz

    plots = [n for n in viz.__all__ if n.startswith("plot_")]
    assert len(plots) >= 20
    for n in plots:
        p = inspect.signature(getattr(viz, n)).parameters
        assert "ax" in p and p["ax"].default is None, n
    outside = [str(p.relative_to(PKG)) for p in PKG.rglob("*.py") if p.parent.name != "viz"
               and any(f"import {m}" in p.read_text() or f"from {m}" in p.read_text()
                       for m in ("matplotlib", "seaborn", "plotly"))]
    assert not outside, f"plotting outside viz/: {outside}"
    fig, ax = plt.subplots()
    shares = pd.DataFrame({"component": ["c", "c"], "round": [1, 2], "share": [0.5, 0.8]})
    assert viz.plot_item_rounds(shares, pd.DataFrame({"round": [1, 2], "total": [0.5, 0.8]}), ax=ax) is fig
    plt.close(fig)
