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

Issue 20: parameter values are plain data (:mod:`medeval_kit.cli.params`), study and run names are plain names
and every output stays in its output folder; a study may set ``budget_usd:``, one cap for the whole run
(:mod:`medeval_kit.cli.budget`); a run whose LLM calls failed fails (:mod:`medeval_kit.cli.calllog`).
Issue 21: ``medeval run --notebook NAME`` / ``medeval run own.ipynb`` runs one notebook without a study
(:mod:`medeval_kit.cli.notebook_run`).
Issue 24: each run's kernel gets its provenance (study, notebook and every parameter value, :func:`run_context`) in
``MEDEVAL_RUN_CONTEXT``; ``save_table`` and ``save_figure`` record it in their sidecars (:mod:`medeval_kit.provenance`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medeval_kit import paths, provenance
from medeval_kit.cli.budget import decimal_text, new_run_id, run_budget, run_environment, spend_line
from medeval_kit.cli.calllog import CALL_LOG, CallStats, read_call_log
from medeval_kit.cli.notebook_run import (
    cmd_list,
    default_value,
    find_notebook,
    hint_notebook,
    notebook_plan,
    notebook_study,
    project_env,
    run_name,
)
from medeval_kit.cli.params import Typed as _Typed
from medeval_kit.cli.params import check_inside, check_plain, parse_assignments, positive_usd, usd_argument
from medeval_kit.cli.studies import Run, Study, load_studies
from medeval_kit.errors import ParameterError, StudyError
from medeval_kit.json_schema import preload

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
    "parse_assignments",
    "read_call_log",
    "run_budget",
    "run_context",
    "run_notebook",
]

INJECTED = ("study", "figures_dir", "tables_dir")
COMMITTED = ("figures", "tables")
"""The committed output folders (``<root>/figures/<study>``, ``<root>/tables/<study>``); only ``publish`` writes
them."""
_TYPES = {"str": str, "int": int, "float": float, "bool": bool, "list": list, "dict": dict}


def project_root() -> Path:
    """Return the project folder (:func:`medeval_kit.paths.root`)."""
    return paths.root()


@dataclass
class RunResult:
    """The outcome of one run: ``ok``, ``failed`` or ``skipped``, with where it failed and its LLM calls."""

    run: Run
    status: str
    seconds: float = 0.0
    output: str = ""
    cell: int | None = None
    error: str = ""
    calls: CallStats = field(default_factory=CallStats)

    def line(self) -> str:
        """Return a one-line human summary."""
        calls = self.calls.summary()
        calls = f"  [{calls}]" if calls else ""
        if self.status == "ok":
            return f"ok       {self.run.id:<40} {self.seconds:6.1f}s  -> {self.output}{calls}"
        if self.status == "skipped":
            return f"skipped  {self.run.id:<40} {self.error}"
        where = f" cell {self.cell}" if self.cell is not None else ""
        return f"FAILED   {self.run.id:<40} {self.run.notebook}{where}: {self.error}{calls}"


def _papermill():
    """papermill, imported after :func:`medeval_kit.json_schema.preload` (nbformat then imports jsonschema
    without its slow optional parser)."""
    preload()
    import papermill

    return papermill


def notebook_parameters(notebook: str | Path) -> dict[str, dict]:
    """Return the parameters a notebook declares: name -> {type, default, help}."""
    pm = _papermill()
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
    return p if p.exists() else find_notebook(p.name)  # the project's notebooks/, then the packaged ones


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
        check_plain(value, f"{Path(str(notebook)).name}: parameter {key!r}")
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


def run_context(run: Run, params: Mapping[str, Any], declared: Mapping[str, dict] | None = None
                ) -> provenance.RunContext:
    """The provenance a run's kernel gets: study, notebook and every parameter value it runs with.

    ``params`` are the values passed to papermill; a declared parameter not among them records its default
    (``declared``: :func:`notebook_parameters` of the run's notebook, read when not given). The output folders
    are left out (:data:`medeval_kit.provenance.OUTPUT_PARAMETERS`).
    """
    declared = notebook_parameters(run.notebook) if declared is None else declared
    values = {k: default_value(spec) for k, spec in declared.items()}
    values.update(params)
    return provenance.runner_context(study=run.study, notebook=Path(run.notebook).name, parameters=values)


def _execute(run: Run, params: dict[str, Any], out: str, cwd: str, kernel: str | None,
             context: str = "") -> tuple[float, int | None, str]:
    """Execute one notebook (in a worker process); return (seconds, failing cell, error).

    ``context`` (JSON, :func:`run_context`) goes to the kernel in ``MEDEVAL_RUN_CONTEXT``: the variable is set in
    this worker process, which starts one kernel at a time, so parallel runs never share it.
    """
    import logging

    pm = _papermill()

    from medeval_kit.cli.warm_kernels import AsyncWarmKernelManager

    logging.getLogger("papermill").setLevel(logging.WARNING)
    t0 = time.perf_counter()
    log = Path(out).parent / CALL_LOG  # the kernel's LLM clients append their call records here
    log.unlink(missing_ok=True)
    os.environ["MEDEVAL_CALL_LOG"] = str(log)
    if context:
        os.environ[provenance.ENV] = context
    else:
        os.environ.pop(provenance.ENV, None)
    with _kernel_stderr() as captured:  # the kernel's own chatter is shown only when the run fails
        for attempt in range(3):
            try:
                pm.execute_notebook(
                    str(_notebook_path(run.notebook)), out, parameters=params, cwd=cwd,
                    kernel_name=kernel, progress_bar=False, log_output=False, kernel_manager_class=AsyncWarmKernelManager,
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
    return check_inside(base / run.study / run.name, base, f"run folder of {run.id}")


def _output_dirs(run: Run, folder: Path, publish: bool) -> dict[str, str]:
    """``figures_dir`` and ``tables_dir`` of a run: its own folder, or the committed ones when publishing."""
    if publish:
        root = project_root()
        return {f"{kind}_dir": str(check_inside(root / kind / run.study, root / kind, f"{kind}_dir of {run.id}"))
                for kind in COMMITTED}
    return {f"{kind}_dir": str(check_inside(folder / kind, folder, f"{kind}_dir of {run.id}")) for kind in COMMITTED}


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
             root: Path) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, tuple[str, str, Path]]],
                                  dict[str, dict[str, dict]]]:
    """Return each run's checked parameters, the committed-output paths to redirect to a needed run, and the
    parameters its notebook declares."""
    prepared: dict[str, dict[str, Any]] = {}
    declared_of: dict[str, dict[str, dict]] = {}
    refs: dict[str, dict[str, tuple[str, str, Path]]] = {}
    used: set[str] = set()
    for r in runs:
        declared = declared_of[r.id] = notebook_parameters(r.notebook)
        params = {k: v for k, v in r.parameters.items()}
        inject = {"study": r.study, **_output_dirs(r, run_folder(r, out), publish)}
        params.update({k: v for k, v in inject.items() if k in declared})
        # A study's own or default path into another study's committed outputs reads the needed run's output
        # instead (an explicit -p value is taken as given).
        needed_studies = {d.study for d in _ancestors(r, by_id)}
        refs[r.id] = {} if publish else {
            k: ref for k in declared if k not in INJECTED and k not in overrides
            for ref in [_committed_ref(params.get(k, default_value(declared[k])), root)]
            if ref and ref[1] in needed_studies}
        for k, v in overrides.items():
            if k in declared:
                params[k] = v
                used.add(k)
        prepared[r.id] = check_parameters(r.notebook, params)
    unused = set(overrides) - used
    if unused:
        raise ParameterError(f"no selected notebook declares parameter(s) {sorted(unused)}")
    return prepared, refs, declared_of


THREAD_VARIABLES = ("MEDEVAL_LOCAL_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""Thread counts :func:`share_cores` sets for the kernels (numba's, NUMBA_NUM_THREADS, is left alone)."""


def share_cores(jobs: int) -> str:
    """Set each of :data:`THREAD_VARIABLES` to cores / ``jobs`` unless the user set it; return the share.

    Parallel runs share the cores: each embedded llama.cpp model, BLAS and OpenMP pool gets its share (their
    threads spin while they wait, so oversubscribed cores slow every run several-fold). The committed
    outputs do not depend on these counts (``.ci/run`` checks it with other values).
    """
    share = str(max(1, (os.cpu_count() or 1) // max(1, jobs)))
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, share)
    return os.environ["MEDEVAL_LOCAL_THREADS"]


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
    budget_usd: float | None = None,
    allow_failed_calls: bool = False,
    run_id: str | None = None,
    cwd: str | Path | None = None,
) -> list[RunResult]:
    """Execute the selected studies (all by default) and return one RunResult per run.

    Each run writes its executed notebook, figures and tables to :func:`run_folder` (``runs/<study>/<name>/``,
    or under ``out``); ``publish=True`` writes figures and tables to the committed ``figures/<study>/`` and
    ``tables/<study>/`` instead. ``overrides`` are set on every run whose notebook declares them; a key
    that no selected notebook declares is an error. Independent runs execute in parallel up to ``jobs``.

    Every notebook kernel inherits ``MEDEVAL_RUN_ID`` (``run_id``, a fresh one by default) and, when a budget
    applies, ``MEDEVAL_RUN_BUDGET_USD``: ``budget_usd`` or else the smallest ``budget_usd`` of the selected
    studies, one cap for the whole run. A run whose LLM calls failed (no reply; unparsable replies do not
    count) is ``failed`` unless ``allow_failed_calls``. Papermill runs each notebook in ``cwd`` (default
    ``<root>/notebooks``, where the studies' relative paths are read from).
    """
    if budget_usd is not None and positive_usd(budget_usd) is None:
        raise ParameterError(f"--budget-usd must be a positive number of US dollars, got {budget_usd!r}")
    root = project_root()
    studies = studies or load_studies()
    runs = _plan(studies, list(selected))
    by_id = {r.id: r for r in runs}
    prepared, refs, declared = _prepare(runs, by_id, dict(overrides or {}), out, publish, root)
    cap, _ = run_budget(studies, list(selected), budget_usd)
    share_cores(jobs)
    workdir = Path(cwd) if cwd else root / "notebooks"
    workdir.mkdir(parents=True, exist_ok=True)  # a project's studies read ../data/... from here, notebooks or not
    from medeval_kit.cli.warm_kernels import WarmKernels, warm_kernels

    # kernels resolve the same project and, when there are more runs than jobs, fork from one warm process that
    # imported the toolkit while the first ones started (cli/warm_kernels.py)
    warm_cm = warm_kernels() if len(runs) > max(1, jobs) else contextlib.nullcontext(WarmKernels())
    with run_environment(run_id or new_run_id(), cap), project_env(root), warm_cm as warm:
        results = _execute_all(runs, by_id, prepared, refs, declared, out=out, jobs=jobs, kernel=kernel,
                               progress=progress, allow_failed_calls=allow_failed_calls, root=root, cwd=workdir)
    if progress and warm.summary():
        print(warm.summary(), file=sys.stderr)
    return [results[r.id] for r in runs]


def _execute_all(runs: list[Run], by_id: Mapping[str, Run], prepared: Mapping[str, dict], refs: Mapping[str, dict],
                 declared: Mapping[str, dict], *, out, jobs: int, kernel: str | None, progress: bool, allow_failed_calls: bool, root: Path,
                 cwd: Path) -> dict[str, RunResult]:
    """Run every prepared run in worker processes, each once all it needs succeeded; return the results."""
    from tqdm.auto import tqdm

    results: dict[str, RunResult] = {}
    pending = {r.id: r for r in runs}
    bar = tqdm(total=len(runs), desc="studies", unit="run", disable=not progress, file=sys.stderr)
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        active = {}
        # longest first (by the previous run's time, when there is one): two long runs started last would
        # leave one core idle at the end
        guess = {rid: _previous_seconds(r, out) for rid, r in pending.items()}
        while pending or active:
            for rid, r in sorted(pending.items(), key=lambda kv: -guess[kv[0]]):
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
                    nb_out = check_inside(folder / f"{r.name}.ipynb", folder, f"notebook of {r.id}")
                    folder.mkdir(parents=True, exist_ok=True)
                    redirected, notes = _redirect(refs[rid], _ancestors(r, by_id), out, root)
                    for note in notes:
                        bar.write(f"note     {r.id}: {note}")
                    params = {**prepared[rid], **redirected}
                    context = run_context(r, params, declared[rid]).to_json()
                    fut = pool.submit(_execute, r, params, str(nb_out), str(cwd), kernel, context)
                    active[fut] = (r, nb_out)
                    del pending[rid]
                    bar.set_postfix_str(r.id)
            if not active:
                continue
            done, _ = wait(list(active), return_when=FIRST_COMPLETED)
            for fut in done:
                r, nb_out = active.pop(fut)
                res = _result(r, nb_out, *fut.result(), allow_failed_calls=allow_failed_calls, root=root)
                results[r.id] = res
                bar.update(1)
                bar.write(res.line())
    bar.close()
    return results


def _previous_seconds(run: Run, out) -> float:
    """The wall time papermill recorded for this run's last execution (0 when there is none)."""
    import json

    try:
        nb = json.loads((run_folder(run, out) / f"{run.name}.ipynb").read_text(encoding="utf-8"))
        return float(nb["metadata"]["papermill"]["duration"] or 0.0)
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def _result(run: Run, nb_out: Path, secs: float, cell: int | None, err: str, *, allow_failed_calls: bool,
            root: Path) -> RunResult:
    """The result of an executed run, with its LLM calls; calls that got no reply fail it unless allowed."""
    calls = read_call_log(nb_out.parent / CALL_LOG)
    if not err and calls.n_failed and not allow_failed_calls:
        why = calls.top_reasons()
        err = (f"{calls.n_failed} of {calls.n_requests} LLM calls failed" + (f" ({why})" if why else "")
               + "; --allow-failed-calls keeps such a run ok")
    return RunResult(run, "failed" if err else "ok", secs, _shown(nb_out, root), cell, err, calls)


# --------------------------------------------------------------------------- CLI


def slowest_cells(results: Sequence[RunResult], n: int = 5) -> list[tuple[float, str, int, str]]:
    """Return the ``n`` slowest cells of the executed runs: (seconds, run id, cell index, first code line).

    Read from the executed notebooks' papermill metadata, so it costs nothing during the run.

    Parameters
    ----------
    results : sequence of RunResult
        What :func:`run_studies` returned.
    n : int, default 5
        How many cells.

    Returns
    -------
    list of tuple
        Slowest first.

    Example
    -------
    >>> slowest_cells([])
    []
    """
    import json

    cells = []
    for res in results:
        if res.status != "ok" or not res.output:
            continue
        path = Path(res.output) if Path(res.output).is_absolute() else project_root() / res.output
        try:
            nb = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for i, cell in enumerate(nb.get("cells", [])):
            secs = (cell.get("metadata", {}).get("papermill") or {}).get("duration")
            if cell.get("cell_type") == "code" and isinstance(secs, (int, float)):
                src = "".join(cell.get("source", "")).strip().splitlines()
                cells.append((float(secs), res.run.id, i, src[0][:60] if src else ""))
    return sorted(cells, key=lambda c: (-c[0], c[1], c[2]))[:n]


def run_notebook(notebook: str | Path, overrides: Mapping[str, Any] | None = None, *, name: str | None = None,
                 **kwargs: Any) -> list[RunResult]:
    """Execute one notebook once on the user's data, in the project (:mod:`medeval_kit.cli.notebook_run`).

    Parameters
    ----------
    notebook : str or Path
        A notebook name (the project's ``notebooks/``, then the packaged ones) or an ``.ipynb`` file.
    overrides : mapping, optional
        Parameter values (``-p``); each must be declared by the notebook.
    name : str, optional
        The run name (default :func:`medeval_kit.cli.notebook_run.run_name`).
    **kwargs
        Passed to :func:`run_studies` (``progress``, ``out``, ``budget_usd``, ``allow_failed_calls`` ...).

    Returns
    -------
    list of RunResult
        One result; outputs in ``<root>/runs/<notebook>/<run>/`` (or under ``out``).

    Example
    -------
    >>> run_notebook("agreement", {"annotations_path": "/data/mine.csv"})  # doctest: +SKIP
    """
    path, overrides, root = find_notebook(notebook), dict(overrides or {}), project_root()
    study = notebook_study(path, run_name(overrides, name), overrides, notebook_parameters(path))
    with project_env(root):
        return run_studies([study.name], overrides=overrides, studies={study.name: study}, cwd=root, **kwargs)


def _cmd_run(args: argparse.Namespace) -> int:
    single = bool(args.notebook or [s for s in args.studies if s.endswith(".ipynb")])
    overrides = parse_assignments(args.param or [])
    if single:  # one notebook, once, in the project
        study = notebook_plan(args, notebook_parameters)
        studies, selected = {study.name: study}, [study.name]
    else:
        if args.name:
            raise StudyError("--name names the run of --notebook NAME or of an own .ipynb; a study names its runs")
        if args.publish and overrides:
            print(f"warning: --publish with -p {', '.join(sorted(overrides))}: the committed figures/ and tables/ "
                  "will not match the studies' own parameters", file=sys.stderr)
        studies, selected = load_studies(), args.studies
        hint_notebook(studies, selected, overrides)
    cap, source = run_budget(studies, selected, args.budget_usd)
    if cap is not None:
        print(f"budget ${decimal_text(cap)} for this run ({source})")
    t0, run_id, root = time.perf_counter(), new_run_id(), project_root()
    with project_env(root) if single else contextlib.nullcontext():
        results = run_studies(selected, overrides=overrides, jobs=args.jobs, kernel=args.kernel,
                              progress=not args.quiet, out=args.out, publish=args.publish, studies=studies,
                              budget_usd=cap, allow_failed_calls=args.allow_failed_calls, run_id=run_id,
                              cwd=root if single else None)
    n_ok = sum(r.status == "ok" for r in results)
    print(f"\n{n_ok}/{len(results)} runs ok in {time.perf_counter() - t0:.1f}s")
    base = _shown(Path(args.out).expanduser().resolve(), project_root()) if args.out else "runs"
    if args.publish:
        print(f"figures and tables written to the committed figures/<study>/ and tables/<study>/; "
              f"notebooks in {base}/<study>/<run>/")
    else:
        where = f"{selected[0]}/{studies[selected[0]].runs[0].name}" if single else "<study>/<run>"
        print(f"outputs in {base}/{where}/ (notebook, figures/, tables/); the project's own figures/ and "
              "tables/ are untouched (--publish writes them)")
    for r in results:
        if r.status != "ok" or r.calls.n_failed:
            print(r.line())
    slow = slowest_cells(results)
    if slow:
        print("slowest cells:")
        for secs, rid, cell, line in slow:
            print(f"  {secs:6.1f}s  {rid} cell {cell}: {line}")
    spend = spend_line(run_id, cap)
    if spend:
        print(spend)
    return 0 if n_ok == len(results) else 1


def _cmd_params(args: argparse.Namespace) -> int:
    params = notebook_parameters(args.notebook)
    width = max((len(n) for n in params), default=4)
    for name, p in params.items():
        print(f"{name:<{width}}  {p['type']:<6} = {p['default']:<28}  {p['help']}")
    return 0


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``run``, ``list`` and ``params`` to the ``medeval`` command."""
    p = sub.add_parser("run", help="execute studies headlessly with papermill")
    p.add_argument("studies", nargs="*", help="study names (default: all), or one own notebook file (.ipynb)")
    p.add_argument("--notebook", "-n", metavar="NAME", default=None,
                   help="run one notebook once, without a study: the project's notebooks/NAME.ipynb, else the "
                        "packaged one; outputs in runs/NAME/<run>/ (see --name)")
    p.add_argument("--name", default=None, metavar="RUN",
                   help="run name of --notebook or an own .ipynb (default: the stem of the first -p *_path file, "
                        "else 'defaults')")
    p.add_argument("--jobs", "-j", type=int, default=2, help="parallel notebook runs (default 2)")
    p.add_argument("-p", "--param", action="append", metavar="KEY=VALUE",
                   help="override a parameter in every notebook that declares it (YAML value)")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="write each run's notebook, figures/ and tables/ to DIR/<study>/<run>/ (default: runs/)")
    p.add_argument("--publish", action="store_true",
                   help="write figures and tables to the committed figures/<study>/ and tables/<study>/ "
                        "(what `make figures` does); without it a run never touches them")
    p.add_argument("--budget-usd", type=usd_argument, default=None, metavar="USD",
                   help="one cap on the LLM spend of the whole run, over all its notebooks (default: the "
                        "smallest budget_usd of the selected studies; none if they give none)")
    p.add_argument("--allow-failed-calls", action="store_true",
                   help="keep a run ok when some of its LLM calls got no reply (they are still counted)")
    p.add_argument("--kernel", default=None, help="Jupyter kernel name (default: the notebook's)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("list", help="list the studies, their notebooks and parameters (without studies/: the "
                                    "notebooks --notebook runs)")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("params", help="show the parameters a notebook declares")
    p.add_argument("notebook", help="notebook file or name in notebooks/")
    p.set_defaults(func=_cmd_params)
