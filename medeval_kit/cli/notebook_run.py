"""One notebook on your own data, without writing a study (issue 21).

``medeval run --notebook judge_validation -p annotations_path=data/mine.csv`` runs one packaged notebook once;
``medeval run path/to/own.ipynb -p ...`` runs a team's own notebook the same way. The notebook is looked up in the
project's ``notebooks/`` first, then among the packaged ones (:func:`medeval_kit.paths.notebooks_dir`).

The run is a one-run study named after the notebook: its outputs go to ``<root>/runs/<notebook>/<run>/``
(``--out DIR``: ``DIR/<notebook>/<run>/``). The run name is ``--name``, else the file name (without suffix) of the
first ``*_path`` parameter given (``data/mine.csv`` -> ``mine``), else ``defaults``; it is made a plain name
(:func:`medeval_kit.cli.params.check_name`). Papermill runs the notebook in the project root, so relative paths
resolve against the project, and the kernel sees ``MEDEVAL_ROOT`` set to that root for the run's duration. A
notebook default that is a relative ``*_path`` / ``*_dir`` is read from the notebook's own folder, as it would be
in Jupyter. A notebook with bundled reproductions declares ``reproduce: bool = True`` (what its study runs);
given a ``*_path`` file, the run sets it false unless ``-p reproduce=true``. Failed-call, budget and run-id
handling are the runner's (:func:`medeval_kit.cli.runner.run_studies`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from medeval_kit import paths
from medeval_kit.cli.params import check_name
from medeval_kit.cli.studies import Run, Study, load_studies
from medeval_kit.errors import StudyError

__all__ = ["DEFAULT_RUN", "REPRODUCE", "cmd_list", "cmd_list_notebooks", "default_value", "find_notebook",
           "hint_notebook", "notebook_plan", "notebook_study", "packaged_notebooks", "project_env", "run_name"]

REPRODUCE = "reproduce"
"""A notebook parameter (bool) that runs its bundled reproductions; a run on your file sets it false unless you do."""
DEFAULT_RUN = "defaults"
"""The run name when no ``*_path`` parameter is given (the notebook's own data)."""
_UNPLAIN = re.compile(r"[^A-Za-z0-9_.-]+")
_INJECTED = ("study", "figures_dir", "tables_dir")


def _plain(text: str, fallback: str) -> str:
    """``text`` with every run of characters outside ``[A-Za-z0-9_.-]`` replaced by ``_`` (``fallback`` if empty)."""
    name = _UNPLAIN.sub("_", text).strip("_.")
    return name or fallback


def _search_dirs() -> list[Path]:
    """The folders a notebook name is looked up in: the project's ``notebooks/``, then the packaged ones."""
    dirs = [paths.root() / "notebooks", paths.notebooks_dir()]
    return [d for i, d in enumerate(dirs) if d.resolve() not in {x.resolve() for x in dirs[:i]}]


def find_notebook(name: str | Path) -> Path:
    """Return the notebook file ``name`` names: an existing ``.ipynb`` file, else a name looked up in the project.

    Parameters
    ----------
    name : str or Path
        ``judge_validation``, ``judge_validation.ipynb`` or a path to an existing ``.ipynb`` file.

    Returns
    -------
    Path
        The absolute path of the notebook.

    Example
    -------
    >>> find_notebook("agreement").name
    'agreement.ipynb'
    """
    p = Path(name).expanduser()
    if p.suffix == ".ipynb" and p.is_file():
        return p.resolve()
    file = p.name if p.suffix == ".ipynb" else f"{p.name}.ipynb"
    for d in _search_dirs():
        if (d / file).is_file():
            return (d / file).resolve()
    known = ", ".join(n for n, _ in packaged_notebooks())
    raise StudyError(f"notebook {str(name)!r} not found (looked in {', '.join(str(d) for d in _search_dirs())}); "
                     f"packaged notebooks: {known}")


def run_name(overrides: Mapping[str, Any], name: str | None = None) -> str:
    """Return the run name: ``name``, else the stem of the first ``*_path`` value, else :data:`DEFAULT_RUN`.

    Parameters
    ----------
    overrides : mapping
        The ``-p`` values (as :func:`medeval_kit.cli.params.parse_assignments` returns them).
    name : str, optional
        An explicit run name (``--name``); it must be a plain name.

    Returns
    -------
    str
        A plain name (letters, digits, ``_``, ``.``, ``-``).

    Example
    -------
    >>> run_name({"n_boot": 50, "annotations_path": "/data/my ratings.csv"})
    'my_ratings'
    """
    if name is not None:
        return check_name(name, "run name", "--name")
    for key, value in overrides.items():
        if key.endswith("_path") and isinstance(value, str) and value.strip():
            return _plain(Path(value.strip()).stem, DEFAULT_RUN)
    return DEFAULT_RUN


def default_value(spec: Mapping[str, Any]) -> Any:
    """The declared default of a notebook parameter as a Python value (None when it is not a literal)."""
    import ast

    try:
        return ast.literal_eval(str(spec.get("default")))
    except (ValueError, SyntaxError):
        return None


def _your_file(overrides: Mapping[str, Any]) -> bool:
    """True when a ``*_path`` parameter names a file (a non-empty value)."""
    return any(k.endswith("_path") and isinstance(v, str) and v.strip() for k, v in overrides.items())


def notebook_study(notebook: Path, name: str, overrides: Mapping[str, Any],
                   declared: Mapping[str, Mapping[str, Any]]) -> Study:
    """Return the one-run study that executes ``notebook`` as run ``name``.

    Parameters
    ----------
    notebook : Path
        The notebook file (:func:`find_notebook`).
    name : str
        The run name (:func:`run_name`).
    overrides : mapping
        The ``-p`` values; a relative default ``*_path`` / ``*_dir`` that they do not set is made absolute
        against the notebook's folder. When one names a file (a ``*_path`` key) and the notebook declares
        :data:`REPRODUCE` which they do not set, it is set false: the run analyses only that file.
    declared : mapping
        The notebook's parameters, name -> ``{"default": ...}`` (:func:`medeval_kit.cli.runner.notebook_parameters`).

    Returns
    -------
    Study
        Named after the notebook (a plain name), with one run and no ``needs``.

    Example
    -------
    >>> from medeval_kit.cli.runner import notebook_parameters
    >>> nb = find_notebook("agreement")
    >>> notebook_study(nb, "mine", {}, notebook_parameters(nb)).runs[0].id
    'agreement/mine'
    """
    study = _plain(notebook.stem, "notebook")
    params = {}
    for key, spec in declared.items():
        default = default_value(spec)
        if (key.endswith(("_path", "_dir")) and key not in _INJECTED and key not in overrides
                and isinstance(default, str) and default.strip() and "://" not in default
                and not Path(default).is_absolute()):
            params[key] = os.path.normpath(notebook.parent / default)
    # your file given, the bundled reproductions not asked for: the notebook analyses only your file
    if REPRODUCE in declared and REPRODUCE not in overrides and _your_file(overrides):
        params[REPRODUCE] = False
    run = Run(study, name, str(notebook), params, ())
    return Study(study, f"{notebook.name} on your data", (run,), notebook)


@contextlib.contextmanager
def project_env(root: Path) -> Iterator[None]:
    """Set ``MEDEVAL_ROOT`` to ``root`` while the block runs (the kernels inherit it); restore it after."""
    saved = os.environ.get(paths.ENV_VAR)
    os.environ[paths.ENV_VAR] = str(root)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(paths.ENV_VAR, None)
        else:
            os.environ[paths.ENV_VAR] = saved


def hint_notebook(studies: Mapping[str, Study], selected: Sequence[str], overrides: Mapping[str, Any]) -> None:
    """Point a study run given your file (``-p X_path=``) at ``--notebook``, which analyses only that file."""
    keys = sorted(k for k in overrides if k.endswith("_path"))
    notebooks = sorted({Path(r.notebook).stem for s in (selected or list(studies)) if s in studies
                        for r in studies[s].runs})
    if keys and len(notebooks) == 1:
        print(f"note: the study runs every one of its runs; `medeval run --notebook {notebooks[0]} "
              f"-p {keys[0]}=...` runs the notebook once, on your file only", file=sys.stderr)


def _title(path: Path) -> str:
    """The first ``# heading`` of a notebook ("" when it has none or is not readable)."""
    try:
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError):
        return ""
    for c in cells:
        if c.get("cell_type") == "markdown":
            for line in "".join(c.get("source", [])).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return ""


def packaged_notebooks() -> list[tuple[str, str]]:
    """Return ``(name, title)`` of every notebook ``--notebook`` finds (project first, then packaged).

    Returns
    -------
    list of (str, str)
        Sorted by name; a project notebook hides a packaged one of the same name.

    Example
    -------
    >>> "agreement" in dict(packaged_notebooks())
    True
    """
    found: dict[str, str] = {}
    for d in _search_dirs():
        for p in sorted(d.glob("*.ipynb")) if d.is_dir() else []:
            found.setdefault(p.stem, _title(p))
    return sorted(found.items())


def notebook_plan(args: Any, declared_of: Any) -> Study:
    """The one-run study of ``medeval run --notebook NAME`` / ``medeval run own.ipynb`` (checked CLI arguments).

    Parameters
    ----------
    args : argparse.Namespace
        ``studies``, ``notebook``, ``name``, ``publish`` and ``param`` of ``medeval run``.
    declared_of : callable
        Notebook path -> its declared parameters (:func:`medeval_kit.cli.runner.notebook_parameters`).

    Returns
    -------
    Study
        See :func:`notebook_study`.

    Example
    -------
    >>> notebook_plan(args, notebook_parameters)  # doctest: +SKIP
    """
    from medeval_kit.cli.params import parse_assignments

    own = [s for s in args.studies if s.endswith(".ipynb")]
    if len(own) + bool(args.notebook) != 1 or len(args.studies) != len(own):
        raise StudyError("give one notebook (--notebook NAME or a .ipynb file) and no study names")
    if args.publish:
        raise StudyError("--publish writes a study's committed figures/ and tables/; a --notebook run does not")
    if own and not Path(own[0]).expanduser().is_file():
        raise StudyError(f"{own[0]}: no such notebook file")
    path = find_notebook(args.notebook or own[0])
    overrides = parse_assignments(args.param or [])
    return notebook_study(path, run_name(overrides, args.name), overrides, declared_of(path))


def cmd_list_notebooks(args: Any) -> int:
    """``medeval list`` in a project without ``studies/``: the notebooks ``--notebook`` runs."""
    notebooks = packaged_notebooks()
    if getattr(args, "format", "table") == "json":
        print(json.dumps({"studies": {}, "notebooks": {n: t for n, t in notebooks}}, indent=2))
        return 0
    print(f"no studies yet ({paths.studies_dir()} does not exist). Notebooks to run on your data with "
          "`medeval run --notebook NAME -p <name>_path=FILE` (`medeval params NAME` lists the parameters):")
    width = max((len(n) for n, _ in notebooks), default=4)
    for n, title in notebooks:
        print(f"  - {n:<{width}}  {title}")
    return 0


def cmd_list(args: Any) -> int:
    """``medeval list``: the studies, or without ``studies/`` the notebooks ``--notebook`` runs."""
    from medeval_kit.cli.budget import decimal_text

    if not paths.studies_dir().is_dir():
        return cmd_list_notebooks(args)
    studies = load_studies()
    if args.format == "json":
        print(json.dumps({
            s.name: {"description": s.description, "budget_usd": s.budget_usd,
                     "runs": [{"name": r.name, "notebook": r.notebook, "parameters": dict(r.parameters),
                               "needs": list(r.needs)} for r in s.runs]}
            for s in studies.values()
        }, indent=2, default=str))
        return 0
    runs = [r for s in studies.values() for r in s.runs]
    wn = max((len(r.name) for r in runs), default=4)  # columns as wide as the longest entry
    wb = max((len(r.notebook) for r in runs), default=8)
    for s in studies.values():
        budget = f"  (budget ${decimal_text(s.budget_usd)})" if s.budget_usd is not None else ""
        print(f"{s.name}: {s.description}{budget}")
        for r in s.runs:
            params = ", ".join(f"{k}={v!r}" for k, v in r.parameters.items())
            needs = f"  (needs {', '.join(r.needs)})" if r.needs else ""
            print(f"  - {r.name:<{wn}}  {r.notebook:<{wb}}  {params}{needs}")
    return 0
