"""The public API as the API tests see it: every name in a public package's ``__all__``.

Used by ``test_api_docs.py``, ``test_api_contract.py`` and ``test_api_columns.py``. A check that
still fails for a name is listed in ``tests/api_debt/<package>.txt`` as ``<check> <package>.<name>``;
the tests fail on a new failure and on a debt entry that has been paid (so the list only shrinks).
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

PACKAGES = (
    "agreement", "bias", "rounds", "rank", "psychometrics", "judge", "generate", "llm", "pairwise",
    "readers", "datasets", "stats", "viz", "repro", "prompts", "schemas", "results", "tables", "paths",
    "embed", "retrieve", "overview", "apps", "columns", "docstrings", "deprecation", "errors", "plugins", "provenance",
    "json_schema",
)
DEBT_DIR = Path(__file__).parent / "api_debt"
CHECKS = ("docs", "contract", "columns", "names")


def public(package: str) -> dict[str, object]:
    """``{name: object}`` for the functions and classes in ``medeval_kit.<package>.__all__``."""
    mod = importlib.import_module(f"medeval_kit.{package}")
    out = {}
    for name in getattr(mod, "__all__", ()):
        obj = getattr(mod, name, None)
        if inspect.isclass(obj) or callable(obj) and (inspect.isfunction(obj) or hasattr(obj, "__wrapped__")):
            out[name] = obj
    return out


def all_public() -> dict[str, object]:
    """``{"<package>.<name>": object}`` over every public package."""
    return {f"{p}.{n}": o for p in PACKAGES for n, o in public(p).items()}


def debt(check: str) -> set[str]:
    """The names still allowed to fail ``check`` (``docs``, ``contract`` or ``columns``)."""
    out = set()
    for f in sorted(DEBT_DIR.glob("*.txt")):
        for line in f.read_text().splitlines():
            line = line.split("#")[0].strip()
            if line:
                kind, name = line.split()
                assert kind in CHECKS, f"{f.name}: unknown check {kind!r}"
                if kind == check:
                    out.add(name)
    return out


def ratchet(check: str, failing: dict[str, str]) -> list[str]:
    """Problems: names failing ``check`` outside the debt list, and paid debts still listed."""
    owed = debt(check)
    new = [f"{n}: {why}" for n, why in sorted(failing.items()) if n not in owed]
    paid = [f"{n}: passes now; remove '{check} {n}' from tests/api_debt/" for n in sorted(owed - set(failing))]
    return new + paid


_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")


def sections(doc: str | None) -> dict[str, list[str]]:
    """A numpy-style docstring's sections: ``{"Parameters": [lines], "Returns": [...], ...}``."""
    lines = inspect.cleandoc(doc or "").splitlines()
    out: dict[str, list[str]] = {}
    current = None
    for i, line in enumerate(lines):
        if _UNDERLINE.match(line):
            continue
        if i + 1 < len(lines) and _UNDERLINE.match(lines[i + 1]) and line.strip():
            current = line.strip()
            out[current] = []
            continue
        if current is not None:
            out[current].append(line)
    return out


def documented(doc: str | None, kinds=("Parameters", "Other Parameters", "Attributes")) -> set[str]:
    """Names documented in the given sections (``a, b : int`` documents both; ``*args`` as ``args``)."""
    names: set[str] = set()
    secs = sections(doc)
    for kind in kinds:
        for line in secs.get(kind, []):
            if line and not line[0].isspace():
                head = line.split(" : ")[0].rstrip(" :")
                names.update(n.strip().lstrip("*") for n in head.split(",") if n.strip())
    return names


def parameters(obj) -> list[str]:
    """The parameters a caller passes: the signature minus ``self``/``cls`` (for a class, its constructor's)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    return [n for n in sig.parameters if n not in ("self", "cls")]


def returns_none(obj) -> bool:
    try:
        ann = inspect.signature(obj).return_annotation
    except (TypeError, ValueError):
        return False
    return ann is None or ann == "None"
