"""The run context of a notebook: the study, notebook and parameters its saved outputs come from.

``medeval run`` (:mod:`medeval_kit.cli.runner`) executes each notebook in its own kernel and hands that kernel
the context in :data:`ENV` (set in the worker process that starts the kernel, just before it starts it, so
parallel runs never see each other's): study, notebook and the value of every parameter the notebook
declares (its default, or what the run passed; the output folders ``figures_dir`` and ``tables_dir`` left out,
as they say where a file is, not how it was made). A notebook calls :func:`start` once, after its parameters
cell::

    from medeval_kit import provenance
    provenance.start("agreement.ipynb", globals())

and :func:`medeval_kit.tables.save_table`, :func:`medeval_kit.viz.save_figure` and ``save_plotly`` write the
context into their JSON sidecar, with no ``meta`` argument. Run by hand (Jupyter, or papermill directly) there
is no runner context: :func:`start` records the parameters found in the namespace it is given (the names of
the notebook's ``parameters`` cell when the notebook file is found, else every plain value) and the sidecar
says ``"runner": "none: run outside medeval run"``. A save with no :func:`start` and no runner records only
that. The context holds no time, host or output folder, so a sidecar is the same on every machine.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ENV", "RUNNER", "OUTSIDE", "OUTPUT_PARAMETERS", "RunContext", "start", "current", "reset",
           "runner_context"]

ENV = "MEDEVAL_RUN_CONTEXT"
"""Environment variable through which ``medeval run`` hands one kernel its run context (JSON)."""
RUNNER = "medeval run"
"""The ``runner`` of a context made by the study runner."""
OUTSIDE = "none: run outside medeval run"
"""The ``runner`` of a context made by hand (Jupyter, papermill directly) or of no context at all."""
OUTPUT_PARAMETERS = ("figures_dir", "tables_dir")
"""Parameters that say where outputs go, not how they were made: never recorded (they are absolute paths)."""
_IPYTHON = {"In", "Out", "exit", "quit", "get_ipython", "open"}


@dataclass(frozen=True)
class RunContext:
    """Where saved outputs come from: the study, the notebook, who ran it and its parameters.

    Parameters
    ----------
    study : str, optional
        The study name (``None`` when unknown).
    notebook : str, optional
        The notebook's file name.
    runner : str
        :data:`RUNNER` when ``medeval run`` executed the notebook, else :data:`OUTSIDE`.
    parameters : mapping
        Parameter name -> value, without ``study`` and the output folders.
    """

    study: str | None = None
    notebook: str | None = None
    runner: str = OUTSIDE
    parameters: Mapping[str, Any] = field(default_factory=dict)

    @property
    def by_runner(self) -> bool:
        """True when ``medeval run`` made this context."""
        return self.runner == RUNNER

    def record(self) -> dict[str, Any]:
        """The context as the keys of a sidecar: study, notebook, runner, parameters (sorted)."""
        return {"study": self.study, "notebook": self.notebook, "runner": self.runner,
                "parameters": {k: self.parameters[k] for k in sorted(self.parameters)}}

    def to_json(self) -> str:
        """The context as the JSON text :data:`ENV` holds."""
        return json.dumps(self.record(), sort_keys=True)


_ACTIVE: RunContext | None = None


def _recorded(parameters: Mapping[str, Any], unused: Iterable[str] = ()) -> dict[str, Any]:
    """``parameters`` without the output folders, ``study`` (a key of its own) and ``unused``."""
    drop = {*OUTPUT_PARAMETERS, "study", *unused}
    return {str(k): v for k, v in parameters.items() if k not in drop}


def runner_context(*, study: str, notebook: str, parameters: Mapping[str, Any]) -> RunContext:
    """The context the study runner hands one run's kernel.

    Parameters
    ----------
    study : str
        The run's study.
    notebook : str
        The notebook (a path is reduced to its file name).
    parameters : mapping
        Every parameter value the notebook runs with; ``study`` and the output folders are left out.

    Returns
    -------
    RunContext

    Example
    -------
    >>> runner_context(study="s", notebook="n.ipynb", parameters={"seed": 0, "tables_dir": "/x"}).record()
    {'study': 's', 'notebook': 'n.ipynb', 'runner': 'medeval run', 'parameters': {'seed': 0}}
    """
    return RunContext(study=study, notebook=Path(notebook).name, runner=RUNNER,
                      parameters=_recorded(parameters))


def _from_env() -> RunContext | None:
    text = os.environ.get(ENV)
    if not text:
        return None
    d = json.loads(text)
    return RunContext(study=d.get("study"), notebook=d.get("notebook"), runner=d.get("runner") or RUNNER,
                      parameters=dict(d.get("parameters") or {}))


def _plain(v: Any) -> bool:
    if v is None or isinstance(v, (bool, int, float, str)):
        return True
    if isinstance(v, (list, tuple)):
        return all(_plain(x) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _plain(x) for k, x in v.items())
    return False


def _declared(notebook: str) -> list[str] | None:
    """Names assigned in the ``parameters`` cell of ``notebook`` (in the working folder or the toolkit's
    notebooks), or None when the file is not found."""
    from medeval_kit import paths

    for p in (Path(notebook), paths.notebooks_dir() / Path(notebook).name):
        if not p.is_file():
            continue
        try:
            cells = json.loads(p.read_text(encoding="utf-8")).get("cells", [])
            cell = next(c for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            body = ast.parse(source).body
        except (OSError, ValueError, StopIteration, SyntaxError, KeyError):
            return None
        names = [n.target.id for n in body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
        names += [t.id for n in body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
        return names
    return None


def start(notebook: str, namespace: Mapping[str, Any] | None = None, *, unused: Iterable[str] = ()) -> RunContext:
    """Begin a notebook's run context; every later save records it. Return the context.

    Parameters
    ----------
    notebook : str
        The notebook's file name (the runner's name wins when ``medeval run`` executes it).
    namespace : mapping, optional
        The notebook's ``globals()``, read only when the notebook runs outside the runner: its parameters
        are taken from it (the names of the notebook's ``parameters`` cell when the file is found in the working
        folder or the toolkit's notebooks, else every public plain value). Under the runner the runner's
        values are recorded.
    unused : iterable of str
        Parameters this run does not use (e.g. the bundled ``dataset`` when the user's items are judged), left
        out so the provenance does not claim them.

    Returns
    -------
    RunContext

    Example
    -------
    >>> ctx = start("demo.ipynb", {"study": "demo", "seed": 1, "tables_dir": "/tmp/t"})  # doctest: +SKIP
    """
    global _ACTIVE
    unused = list(unused)
    ctx = _from_env()
    if ctx is not None:
        ctx = RunContext(ctx.study, ctx.notebook, ctx.runner, _recorded(ctx.parameters, unused))
    else:
        ns = dict(namespace or {})
        names = _declared(notebook)
        if names is None:
            names = [k for k, v in ns.items() if not k.startswith("_") and k not in _IPYTHON and _plain(v)]
        params = {k: ns[k] for k in names if k in ns and _plain(ns[k])}
        study = ns.get("study") if isinstance(ns.get("study"), str) else None
        ctx = RunContext(study=study, notebook=Path(notebook).name, parameters=_recorded(params, unused))
    _ACTIVE = ctx
    return ctx


def current() -> RunContext:
    """The context saves record: :func:`start`'s, else the runner's (:data:`ENV`), else an empty one.

    Returns
    -------
    RunContext
        With ``runner`` :data:`OUTSIDE` and no study or parameters when there is neither.
    """
    if _ACTIVE is not None:
        return _ACTIVE
    return _from_env() or RunContext()


def reset() -> None:
    """Forget the context :func:`start` began (a new notebook in the same process, tests)."""
    global _ACTIVE
    _ACTIVE = None
