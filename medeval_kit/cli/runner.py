"""Studies as data: ordered, parameterised notebook runs executed headlessly with papermill.

A study is ``studies/<name>.yaml``::

    description: Counts and label distributions of every bundled dataset
    runs:
      - name: pandalm
        notebook: data_overview.ipynb
        parameters: {dataset: pandalm}
        needs: []

Everything a run writes goes to its own folder, ``runs/<study>/<name>/`` (git-ignored; ``out=``/``--out DIR``
moves it to ``DIR/<study>/<name>/``): the executed notebook ``<name>.ipynb`` and, injected into notebooks
that declare ``figures_dir`` and ``tables_dir``, ``figures/`` and ``tables/``. A parameter that reads another
study's committed table (``../tables/judging/judgments.csv``) reads the output of the run it needs instead.
Only ``publish=True`` (``medeval run --publish``, used by ``make figures``) writes the committed
``figures/<study>/`` and ``tables/<study>/``. Independent runs execute in parallel; a failed run skips
only the runs that need it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from medeval_kit import paths
from medeval_kit.errors import ParameterError, StudyError

__all__ = [
    "Run",
    "RunResult",
    "Study",
    "load_studies",
    "notebook_parameters",
    "check_parameters",
    "run_studies",
    "run_folder",
    "project_root",
]

INJECTED = ("study", "figures_dir", "tables_dir")
COMMITTED = ("figures", "tables")
"""The committed output folders (``<root>/figures/<study>``, ``<root>/tables/<study>``); only ``publish`` writes them."""
_TYPES = {"str": str, "int": int, "float": float, "bool": bool, "list": list, "dict": dict}


def project_root() -> Path:
    """Return the project folder (:func:`medeval_kit.paths.root`)."""
    return paths.root()


@dataclass(frozen=True)
class Run:
    """One notebook execution in a study."""

    study: str
    name: str
    notebook: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    needs: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        """``study/name``, unique over all studies."""
        return f"{self.study}/{self.name}"


@dataclass(frozen=True)
class Study:
    """A named, ordered list of runs."""

    name: str
    description: str
    runs: tuple[Run, ...]
    path: Path


@dataclass
class RunResult:
    """The outcome of one run: ``ok``, ``failed`` or ``skipped``, with where it failed."""

    run: Run
    status: str
    seconds: float = 0.0
    output: str = ""
    cell: int | None = None
    error: str = ""

    def line(self) -> str:
        """Return a one-line human summary."""
        if self.status == "ok":
            return f"ok       {self.run.id:<40} {self.seconds:6.1f}s  -> {self.output}"
        if self.status == "skipped":
            return f"skipped  {self.run.id:<40} {self.error}"
        where = f" cell {self.cell}" if self.cell is not None else ""
        return f"FAILED   {self.run.id:<40} {self.run.notebook}{where}: {self.error}"


def load_studies(folder: str | Path | None = None) -> dict[str, Study]:
    """Return every study defined in ``folder`` (default ``studies/``), validated."""
    root = project_root()
    d = Path(folder) if folder else root / "studies"
    if not d.is_dir():
        raise StudyError(f"{d}: no studies folder")
    studies: dict[str, Study] = {}
    for p in sorted(d.glob("*.yaml")):
        try:
            spec = yaml.safe_load(p.read_text()) or {}
        except yaml.YAMLError as exc:
            raise StudyError(f"{p}: not valid YAML: {exc}") from None
        if not isinstance(spec, dict) or not isinstance(spec.get("runs"), list) or not spec["runs"]:
            raise StudyError(f"{p}: expected a mapping with a non-empty 'runs' list")
        name = spec.get("name", p.stem)
        runs = []
        for i, r in enumerate(spec["runs"]):
            if not isinstance(r, dict) or "notebook" not in r:
                raise StudyError(f"{p}: runs[{i}] needs a 'notebook' key")
            unknown = set(r) - {"name", "notebook", "parameters", "needs"}
            if unknown:
                raise StudyError(f"{p}: runs[{i}] has unknown key(s) {sorted(unknown)}")
            nb = r["notebook"]
            run_name = r.get("name", Path(nb).stem)
            runs.append(Run(name, run_name, nb, dict(r.get("parameters") or {}), tuple(r.get("needs") or ())))
        names = [r.name for r in runs]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise StudyError(f"{p}: run names must be unique; repeated: {sorted(dup)}")
        studies[name] = Study(name, spec.get("description", ""), tuple(runs), p)
    return studies


def notebook_parameters(notebook: str | Path) -> dict[str, dict]:
    """Return the parameters a notebook declares: name -> {type, default, help}."""
    import papermill as pm

    path = _notebook_path(notebook)
    params = pm.inspect_notebook(str(path))
    return {
        name: {"type": p.get("inferred_type_name", "None"), "default": p.get("default"), "help": p.get("help", "")}
        for name, p in params.items()
    }


def _notebook_path(notebook: str | Path) -> Path:
    p = Path(notebook)
    if not p.suffix:
        p = p.with_suffix(".ipynb")
    if not p.exists():
        p = project_root() / "notebooks" / p.name
    if not p.exists():
        raise StudyError(f"notebook {notebook!r} not found (looked in notebooks/)")
    return p


def _literal_type(default: Any) -> str:
    try:
        import ast

        value = ast.literal_eval(str(default))
    except (ValueError, SyntaxError):
        return "None"
    return type(value).__name__


def check_parameters(notebook: str | Path, values: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``values`` if each names a declared parameter of the right type; else raise ParameterError."""
    declared = notebook_parameters(notebook)
    out = {}
    for key, value in values.items():
        if key not in declared:
            raise ParameterError(
                f"{Path(str(notebook)).name}: unknown parameter {key!r}; it declares {sorted(declared)}"
            )
        tname = declared[key]["type"]
        if tname in ("None", "", None):
            tname = _literal_type(declared[key]["default"])
        want = _TYPES.get(str(tname).split("[")[0])
        if isinstance(value, _Typed):  # -p name=yes / =2024 / =null: a str parameter keeps the text
            value = value.raw if want is str else value.value
        if want is None or value is None:
            out[key] = value
            continue
        ok = isinstance(value, want) and not (want is int and isinstance(value, bool))
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            ok, value = True, float(value)
        if not ok:
            raise ParameterError(
                f"{Path(str(notebook)).name}: parameter {key!r} must be {want.__name__}, "
                f"got {type(value).__name__} {value!r}"
            )
        out[key] = value
    return out


class _Typed:
    """A -p value read as YAML, with the text it came from (a ``str`` parameter takes the text)."""

    def __init__(self, value: Any, raw: str) -> None:
        self.value, self.raw = value, raw


def parse_assignments(pairs: Iterable[str], *, cwd: str | Path | None = None) -> dict[str, Any]:
    """Return ``{key: value}`` from ``key=value`` strings; values are read as YAML scalars.

    A value of a key ending in ``_path`` that names an existing file or folder relative to ``cwd``
    (the caller's working directory) becomes absolute, since notebooks run in ``notebooks/``.
    """
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise ParameterError(f"-p expects key=value, got {pair!r}")
        key, raw = (t.strip() for t in pair.split("=", 1))
        if key.endswith("_path") and raw and not Path(raw).is_absolute():
            where = Path(cwd or Path.cwd()) / raw
            raw = str(where.resolve()) if where.exists() else raw
        value = yaml.safe_load(raw) if raw != "" else ""
        out[key] = value if isinstance(value, str) else _Typed(value, raw)
    return out


def _plan(studies: Mapping[str, Study], selected: Sequence[str]) -> list[Run]:
    unknown = [s for s in selected if s not in studies]
    if unknown:
        raise StudyError(f"unknown study {unknown}; known: {sorted(studies)}")
    by_id = {r.id: r for s in studies.values() for r in s.runs}
    runs = [r for s in (selected or list(studies)) for r in studies[s].runs]
    # Pull in runs of other studies that a selected run needs (transitively), ahead of it.
    ids = {r.id for r in runs}
    queue = list(runs)
    while queue:
        r = queue.pop()
        for full in _deps(r):
            if full not in by_id:
                raise StudyError(f"{r.id} needs {full!r}, which no study defines")
            if full not in ids:
                ids.add(full)
                runs.insert(0, by_id[full])
                queue.append(by_id[full])
    _check_acyclic(runs)
    return runs


def _check_acyclic(runs: Sequence[Run]) -> None:
    graph = {r.id: _deps(r) for r in runs}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        if state.get(node) == 1:
            raise StudyError(f"circular 'needs': {' -> '.join(path + [node])}")
        if state.get(node) == 2:
            return
        state[node] = 1
        for dep in graph.get(node, ()):
            visit(dep, path + [node])
        state[node] = 2

    for node in graph:
        visit(node, [])


def _deps(run: Run) -> set[str]:
    return {n if "/" in n else f"{run.study}/{n}" for n in run.needs}


def _execute(run: Run, params: dict[str, Any], out: str, cwd: str, kernel: str | None) -> tuple[float, int | None, str]:
    """Execute one notebook (in a worker process); return (seconds, failing cell, error)."""
    import logging

    import papermill as pm

    logging.getLogger("papermill").setLevel(logging.WARNING)
    t0 = time.perf_counter()
    with _kernel_stderr() as captured:  # the kernel's own chatter is shown only when the run fails
        for attempt in range(3):
            try:
                pm.execute_notebook(
                    str(_notebook_path(run.notebook)), out, parameters=params, cwd=cwd,
                    kernel_name=kernel, progress_bar=False, log_output=False,
                )
            except pm.PapermillExecutionError as exc:
                return time.perf_counter() - t0, exc.exec_count, f"{exc.ename}: {str(exc.evalue)[:300]}"
            except Exception as exc:  # kernel failed to start (e.g. a port race between parallel kernels)
                if attempt == 2:
                    tail = captured().strip()[-500:]
                    return (time.perf_counter() - t0, None,
                            f"{type(exc).__name__}: {str(exc)[:300]}" + (f"\nkernel stderr: {tail}" if tail else ""))
                time.sleep(1 + attempt)
            else:
                break
    return time.perf_counter() - t0, None, ""


@contextlib.contextmanager
def _kernel_stderr():
    """Send file descriptor 2 (inherited by the kernel) to a temporary file; yield a reader of it.

    ipykernel prints "Kernel is running over TCP without encryption" for every kernel and
    "KeyboardInterrupt caught in kernel" when a finished kernel is shut down: noise on success.
    Runs execute in worker processes, so the parent's progress bar is not affected.
    """
    import tempfile

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield lambda: (tmp.seek(0), tmp.read().decode("utf-8", "replace"))[1]
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def run_folder(run: Run, out: str | Path | None = None) -> Path:
    """Return the folder of one run's outputs: ``<out>/<study>/<name>/`` (``out`` defaults to ``runs/``)."""
    base = Path(out).expanduser().resolve() if out else project_root() / "runs"
    return base / run.study / run.name


def _output_dirs(run: Run, folder: Path, publish: bool) -> dict[str, str]:
    """``figures_dir`` and ``tables_dir`` of a run: its own folder, or the committed ones when publishing."""
    if publish:
        root = project_root()
        return {f"{kind}_dir": str(root / kind / run.study) for kind in COMMITTED}
    return {f"{kind}_dir": str(folder / kind) for kind in COMMITTED}


def _committed_ref(value: Any, root: Path) -> tuple[str, str, Path] | None:
    """``(kind, study, file)`` when ``value`` is a path into the committed ``figures/<study>/`` or
    ``tables/<study>/`` (relative paths are read from ``notebooks/``, as the notebooks run there); else None."""
    if not isinstance(value, str) or not value.strip() or "://" in value:
        return None
    p = Path(value).expanduser()
    p = Path(os.path.normpath(p if p.is_absolute() else root / "notebooks" / p))
    try:
        parts = p.relative_to(root).parts
    except ValueError:
        return None
    if len(parts) >= 3 and parts[0] in COMMITTED:
        return parts[0], parts[1], Path(*parts[2:])
    return None


def _default_value(spec: Mapping[str, Any]) -> Any:
    """The declared default of a notebook parameter as a Python value (None when it is not a literal)."""
    import ast

    try:
        return ast.literal_eval(str(spec.get("default")))
    except (ValueError, SyntaxError):
        return None


def _ancestors(run: Run, by_id: Mapping[str, Run]) -> list[Run]:
    """Every run that ``run`` needs, directly or through others, in a fixed (sorted) order."""
    seen: set[str] = set()
    stack = sorted(_deps(run))
    while stack:
        rid = stack.pop()
        if rid not in seen and rid in by_id:
            seen.add(rid)
            stack.extend(sorted(_deps(by_id[rid])))
    return [by_id[rid] for rid in sorted(seen)]


def _redirect(refs: Mapping[str, tuple[str, str, Path]], needed: Sequence[Run], out: str | Path | None,
              root: Path) -> tuple[dict[str, str], list[str]]:
    """Point committed-output paths at the outputs of the needed runs that wrote them; return (values, notes)."""
    values, notes = {}, []
    for key, (kind, study, rel) in refs.items():
        found = [run_folder(d, out) / kind / rel for d in needed if d.study == study]
        found = [f for f in found if f.exists()]
        if found:
            values[key] = str(found[0])
        else:
            notes.append(f"{key} reads the committed {Path(kind, study, rel)}: no run it needs wrote {rel}")
    return values, notes


def _shown(path: Path, root: Path) -> str:
    """``path`` relative to the project root when it is inside it, else absolute."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _prepare(runs: list[Run], by_id: Mapping[str, Run], overrides: dict[str, Any], out, publish: bool,
             root: Path) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, tuple[str, str, Path]]]]:
    """Return each run's checked parameters and the committed-output paths to redirect to a needed run."""
    prepared: dict[str, dict[str, Any]] = {}
    refs: dict[str, dict[str, tuple[str, str, Path]]] = {}
    used: set[str] = set()
    for r in runs:
        declared = notebook_parameters(r.notebook)
        params = {k: v for k, v in r.parameters.items()}
        inject = {"study": r.study, **_output_dirs(r, run_folder(r, out), publish)}
        params.update({k: v for k, v in inject.items() if k in declared})
        # A study's own or default path into another study's committed outputs reads the needed run's output
        # instead (an explicit -p value is taken as given).
        needed_studies = {d.study for d in _ancestors(r, by_id)}
        refs[r.id] = {} if publish else {
            k: ref for k in declared if k not in INJECTED and k not in overrides
            for ref in [_committed_ref(params.get(k, _default_value(declared[k])), root)]
            if ref and ref[1] in needed_studies}
        for k, v in overrides.items():
            if k in declared:
                params[k] = v
                used.add(k)
        prepared[r.id] = check_parameters(r.notebook, params)
    unused = set(overrides) - used
    if unused:
        raise ParameterError(f"no selected notebook declares parameter(s) {sorted(unused)}")
    return prepared, refs


def share_cores(jobs: int) -> str:
    """Set ``MEDEVAL_LOCAL_THREADS`` to cores / ``jobs`` unless the user set it; return its value.

    Parallel runs share the cores: each embedded llama.cpp model gets its share (its threads spin while
    they wait, so oversubscribed cores slow every run several-fold).
    """
    return os.environ.setdefault("MEDEVAL_LOCAL_THREADS", str(max(1, (os.cpu_count() or 1) // max(1, jobs))))


def run_studies(
    selected: Sequence[str] = (),
    *,
    overrides: Mapping[str, Any] | None = None,
    jobs: int = 2,
    kernel: str | None = None,
    progress: bool = True,
    studies: Mapping[str, Study] | None = None,
    out: str | Path | None = None,
    publish: bool = False,
) -> list[RunResult]:
    """Execute the selected studies (all by default) and return one RunResult per run.

    Each run writes its executed notebook, figures and tables to :func:`run_folder` (``runs/<study>/<name>/``,
    or under ``out``); ``publish=True`` writes figures and tables to the committed ``figures/<study>/`` and
    ``tables/<study>/`` instead. ``overrides`` are set on every run whose notebook declares them; a key
    that no selected notebook declares is an error. Independent runs execute in parallel up to ``jobs``.
    """
    from tqdm.auto import tqdm

    root = project_root()
    runs = _plan(studies or load_studies(), list(selected))
    by_id = {r.id: r for r in runs}
    prepared, refs = _prepare(runs, by_id, dict(overrides or {}), out, publish, root)

    results: dict[str, RunResult] = {}
    pending = {r.id: r for r in runs}
    share_cores(jobs)
    bar = tqdm(total=len(runs), desc="studies", unit="run", disable=not progress, file=sys.stderr)
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        active = {}
        while pending or active:
            for rid, r in list(pending.items()):
                deps = _deps(r)
                bad = [d for d in deps if d in results and results[d].status != "ok"]
                if bad:
                    results[rid] = RunResult(r, "skipped", error=f"needs {bad[0]}, which did not succeed")
                    del pending[rid]
                    bar.update(1)
                    bar.write(results[rid].line())
                    continue
                if all(d in results for d in deps) and len(active) < max(1, jobs):
                    folder = run_folder(r, out)
                    nb_out = folder / f"{r.name}.ipynb"
                    folder.mkdir(parents=True, exist_ok=True)
                    redirected, notes = _redirect(refs[rid], _ancestors(r, by_id), out, root)
                    for note in notes:
                        bar.write(f"note     {r.id}: {note}")
                    params = {**prepared[rid], **redirected}
                    fut = pool.submit(_execute, r, params, str(nb_out), str(root / "notebooks"), kernel)
                    active[fut] = (r, nb_out)
                    del pending[rid]
                    bar.set_postfix_str(r.id)
            if not active:
                continue
            done, _ = wait(list(active), return_when=FIRST_COMPLETED)
            for fut in done:
                r, nb_out = active.pop(fut)
                secs, cell, err = fut.result()
                res = RunResult(r, "failed" if err else "ok", secs, _shown(nb_out, root), cell, err)
                results[r.id] = res
                bar.update(1)
                bar.write(res.line())
    bar.close()
    return [results[r.id] for r in runs]


# --------------------------------------------------------------------------- CLI


def _cmd_run(args: argparse.Namespace) -> int:
    overrides = parse_assignments(args.param or [])
    if args.publish and overrides:
        print(f"warning: --publish with -p {', '.join(sorted(overrides))}: the committed figures/ and tables/ "
              "will not match the studies' own parameters", file=sys.stderr)
    t0 = time.perf_counter()
    results = run_studies(args.studies, overrides=overrides, jobs=args.jobs, kernel=args.kernel,
                          progress=not args.quiet, out=args.out, publish=args.publish)
    n_ok = sum(r.status == "ok" for r in results)
    print(f"\n{n_ok}/{len(results)} runs ok in {time.perf_counter() - t0:.1f}s")
    base = _shown(Path(args.out).expanduser().resolve(), project_root()) if args.out else "runs"
    if args.publish:
        print(f"figures and tables written to the committed figures/<study>/ and tables/<study>/; "
              f"notebooks in {base}/<study>/<run>/")
    else:
        print(f"outputs in {base}/<study>/<run>/ (notebook, figures/, tables/); the committed figures/ and "
              "tables/ are untouched (--publish writes them)")
    for r in results:
        if r.status != "ok":
            print(r.line())
    return 0 if n_ok == len(results) else 1


def _cmd_list(args: argparse.Namespace) -> int:
    studies = load_studies()
    if args.format == "json":
        print(json.dumps({
            s.name: {"description": s.description,
                     "runs": [{"name": r.name, "notebook": r.notebook, "parameters": dict(r.parameters),
                               "needs": list(r.needs)} for r in s.runs]}
            for s in studies.values()
        }, indent=2, default=str))
        return 0
    runs = [r for s in studies.values() for r in s.runs]
    wn = max((len(r.name) for r in runs), default=4)  # columns as wide as the longest entry
    wb = max((len(r.notebook) for r in runs), default=8)
    for s in studies.values():
        print(f"{s.name}: {s.description}")
        for r in s.runs:
            params = ", ".join(f"{k}={v!r}" for k, v in r.parameters.items())
            needs = f"  (needs {', '.join(r.needs)})" if r.needs else ""
            print(f"  - {r.name:<{wn}}  {r.notebook:<{wb}}  {params}{needs}")
    return 0


def _cmd_params(args: argparse.Namespace) -> int:
    params = notebook_parameters(args.notebook)
    width = max((len(n) for n in params), default=4)
    for name, p in params.items():
        print(f"{name:<{width}}  {p['type']:<6} = {p['default']:<28}  {p['help']}")
    return 0


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``run``, ``list`` and ``params`` to the ``medeval`` command."""
    p = sub.add_parser("run", help="execute studies headlessly with papermill")
    p.add_argument("studies", nargs="*", help="study names (default: all)")
    p.add_argument("--jobs", "-j", type=int, default=2, help="parallel notebook runs (default 2)")
    p.add_argument("-p", "--param", action="append", metavar="KEY=VALUE",
                   help="override a parameter in every notebook that declares it (YAML value)")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="write each run's notebook, figures/ and tables/ to DIR/<study>/<run>/ (default: runs/)")
    p.add_argument("--publish", action="store_true",
                   help="write figures and tables to the committed figures/<study>/ and tables/<study>/ "
                        "(what `make figures` does); without it a run never touches them")
    p.add_argument("--kernel", default=None, help="Jupyter kernel name (default: the notebook's)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("list", help="list the studies, their notebooks and parameters")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=_cmd_list)

    p = sub.add_parser("params", help="show the parameters a notebook declares")
    p.add_argument("notebook", help="notebook file or name in notebooks/")
    p.set_defaults(func=_cmd_params)
