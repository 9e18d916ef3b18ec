"""Study files, ``studies/<name>.yaml``, read as plain data and validated (see :mod:`medeval_kit.cli.runner`).

Issue 20: every value is plain data (:mod:`medeval_kit.cli.params`), study and run names and ``needs`` entries
are plain names (``[A-Za-z0-9_.-]+``, not ``.`` or ``..``), and ``budget_usd`` is a positive number.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from medeval_kit import paths
from medeval_kit.cli.params import check_name, check_plain, load_data, positive_usd
from medeval_kit.errors import ParameterError, StudyError

__all__ = ["Run", "Study", "load_studies"]


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
    """A named, ordered list of runs, with an optional cap on the LLM spend of a run that selects it."""

    name: str
    description: str
    runs: tuple[Run, ...]
    path: Path
    budget_usd: float | None = None


def load_studies(folder: str | Path | None = None) -> dict[str, Study]:
    """Return every study defined in ``folder`` (default :func:`medeval_kit.paths.studies_dir`), validated."""
    d = Path(folder) if folder else paths.studies_dir()
    if not d.is_dir():
        raise StudyError(f"{d}: no studies folder; `medeval run --notebook NAME` runs one notebook without a "
                         "study (`medeval list` shows them)")
    studies: dict[str, Study] = {}
    for p in sorted(d.glob("*.yaml")):
        study = _load_study(p)
        if study.name in studies:
            raise StudyError(f"{p}: study name {study.name!r} is taken by {studies[study.name].path}")
        studies[study.name] = study
    return studies


_STUDY_KEYS = {"name", "description", "runs", "budget_usd"}
_RUN_KEYS = {"name", "notebook", "parameters", "needs"}


def _load_study(p: Path) -> Study:
    """Read and validate one study file: plain data, plain names, known keys."""
    try:
        spec = load_data(p.read_text()) or {}
    except yaml.YAMLError as exc:
        raise StudyError(f"{p}: not valid YAML: {exc}") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("runs"), list) or not spec["runs"]:
        raise StudyError(f"{p}: expected a mapping with a non-empty 'runs' list")
    unknown = set(spec) - _STUDY_KEYS
    if unknown:
        raise StudyError(f"{p}: unknown key(s) {sorted(unknown)}; a study has {sorted(_STUDY_KEYS)}")
    name = check_name(spec.get("name", p.stem), "study name", str(p))
    budget = spec.get("budget_usd")
    if budget is not None and positive_usd(budget) is None:
        raise StudyError(f"{p}: budget_usd must be a positive number of US dollars, got {budget!r}")
    runs = [_load_run(p, name, i, r) for i, r in enumerate(spec["runs"])]
    names = [r.name for r in runs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise StudyError(f"{p}: run names must be unique; repeated: {sorted(dup)}")
    description = spec.get("description", "")
    check_plain(description, f"{p}: description", StudyError)
    return Study(name, str(description or ""), tuple(runs), p, positive_usd(budget))


def _load_run(p: Path, study: str, i: int, r: Any) -> Run:
    """Read and validate ``runs[i]`` of study file ``p``."""
    if not isinstance(r, dict) or "notebook" not in r:
        raise StudyError(f"{p}: runs[{i}] needs a 'notebook' key")
    unknown = set(r) - _RUN_KEYS
    if unknown:
        raise StudyError(f"{p}: runs[{i}] has unknown key(s) {sorted(unknown)}")
    nb = r["notebook"]
    if not isinstance(nb, str) or not nb:
        raise StudyError(f"{p}: runs[{i}] notebook must be a file name, got {nb!r}")
    run_name = check_name(r.get("name", Path(nb).stem), "run name", str(p))
    params = r.get("parameters") or {}
    if not isinstance(params, dict):
        raise StudyError(f"{p}: runs[{i}] parameters must be a mapping, got {params!r}")
    for key, value in params.items():
        if not isinstance(key, str) or not key.isidentifier():
            raise ParameterError(f"{p}: runs[{i}] ({run_name}): {key!r} is not a parameter name")
        check_plain(value, f"{p}: runs[{i}] ({run_name}) parameter {key!r}")
    needs = r.get("needs") or []
    if not isinstance(needs, list):
        raise StudyError(f"{p}: runs[{i}] needs must be a list of run names, got {needs!r}")
    for n in needs:
        parts = n.split("/") if isinstance(n, str) else [n]
        if len(parts) > 2 or not all(_plain_name(x) for x in parts):
            raise StudyError(f"{p}: needs {n!r} of run {run_name!r} is not a run name or study/run")
    return Run(study, run_name, nb, dict(params), tuple(needs))


def _plain_name(name: Any) -> bool:
    try:
        check_name(name, "", "")
    except StudyError:
        return False
    return True
