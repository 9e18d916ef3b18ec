"""Study and ``-p`` values as plain data, and study/run names as plain names (issue 20).

A value that reaches a notebook's parameters cell is JSON-like data only: ``str``, ``int``, ``float``, ``bool``,
``None`` and lists / str-keyed mappings of these. YAML is read with :class:`DataLoader`, which refuses every
explicit tag (``!!binary``, ``!!set``, ``!!python/...``, ``!foo``, even ``!!str``) and every alias, and reads a
bare date (``2024-01-01``) as its text. NaN and infinite floats (``.nan``, ``.inf``) are allowed: they are
floats, and papermill writes them as ``float('nan')`` / ``float('inf')``.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

import yaml

from medeval_kit.errors import ParameterError, StudyError

__all__ = [
    "DataLoader",
    "Typed",
    "check_inside",
    "check_name",
    "check_plain",
    "load_data",
    "parse_assignments",
    "positive_usd",
]

_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_REFUSED = "tag:medeval.refused:"
_JSON_TAGS = ("null", "bool", "int", "float", "str", "seq", "map")
_NOT_JSON = ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value")
ALLOWED = "str, int, float, bool, null, lists and mappings with str keys"


class Refused:
    """A YAML node that carried an explicit tag; :func:`check_plain` turns it into an error naming the value."""

    def __init__(self, tag: str, line: int) -> None:
        self.tag, self.line = tag, line

    def __repr__(self) -> str:
        return f"<YAML tag {self.tag} on line {self.line}>"


class DataLoader(yaml.SafeLoader):
    """A YAML loader that builds plain JSON-like data only (no tags, no aliases, dates as text)."""

    yaml_implicit_resolvers: ClassVar[dict] = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in _NOT_JSON]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    yaml_constructors: ClassVar[dict] = {
        tag: fn for tag, fn in yaml.SafeLoader.yaml_constructors.items()
        if tag is None or tag.rsplit(":", 1)[-1] in _JSON_TAGS
    }
    yaml_multi_constructors: ClassVar[dict] = {}

    def compose_node(self, parent, index):
        """Compose a node; refuse an alias, mark an explicitly tagged node as refused."""
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "YAML aliases (*name) are not allowed", event.start_mark)
        node = super().compose_node(parent, index)
        if event.tag is not None:  # an explicit tag: kept aside so the error can name the parameter
            node.tag = _REFUSED + event.tag
        return node


DataLoader.add_multi_constructor(
    _REFUSED, lambda loader, tag, node: Refused(tag.replace("tag:yaml.org,2002:", "!!"), node.start_mark.line + 1))


def load_data(text: str) -> Any:
    """Return the plain data a YAML text holds (see :class:`DataLoader`); raise ``yaml.YAMLError``.

    Parameters
    ----------
    text : str
        YAML text.

    Returns
    -------
    Any
        ``str``, ``int``, ``float``, ``bool``, ``None``, lists and dicts; an explicitly tagged value is a
        :class:`Refused` placeholder, which :func:`check_plain` rejects.

    Example
    -------
    >>> load_data("[2024-01-01, yes, 1.5]")
    ['2024-01-01', True, 1.5]
    """
    return yaml.load(text, Loader=DataLoader)  # a SafeLoader that builds JSON types only


def check_plain(value: Any, where: str, error: type[Exception] = ParameterError) -> Any:
    """Return ``value`` if it is plain JSON-like data; else raise ``error`` naming ``where`` and the part.

    Parameters
    ----------
    value : Any
        A parameter value.
    where : str
        What the value is, in CLI terms, e.g. ``"-p metrics"`` or ``"studies/x.yaml: parameter 'n'"``.
    error : type
        The exception class to raise.

    Returns
    -------
    Any
        ``value`` unchanged.

    Example
    -------
    >>> check_plain({"a": [1, "x", None]}, "-p a")
    {'a': [1, 'x', None]}
    """
    def walk(v: Any, at: str) -> None:
        if isinstance(v, Refused):
            raise error(f"{where}{at}: YAML tag {v.tag} (line {v.line}) is not allowed; a value is plain data: "
                        f"{ALLOWED}")
        if v is None or isinstance(v, (str, bool, int, float)):
            return
        if isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, f"{at}[{i}]")
            return
        if isinstance(v, dict):
            for k, x in v.items():
                if not isinstance(k, str):
                    raise error(f"{where}{at}: mapping key {k!r} is a {type(k).__name__}; keys must be str")
                walk(x, f"{at}[{k!r}]")
            return
        raise error(f"{where}{at}: a {type(v).__name__} ({str(v)[:60]!r}) is not plain data; a value is one of: "
                    f"{ALLOWED}")

    walk(value, "")
    return value


def check_name(name: Any, what: str, where: str) -> str:
    """Return ``name`` if it is a plain name (``[A-Za-z0-9_.-]+``, not ``.`` or ``..``); else raise StudyError.

    Parameters
    ----------
    name : Any
        A study or run name.
    what : str
        ``"study name"``, ``"run name"``, ...
    where : str
        The study file, for the message.

    Returns
    -------
    str
        ``name``.

    Example
    -------
    >>> check_name("local_pairwise", "run name", "studies/judging.yaml")
    'local_pairwise'
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name in (".", ".."):
        raise StudyError(f"{where}: {what} {name!r} is not a plain name: use letters, digits, '_', '.' and '-' "
                         "(not '.' or '..')")
    return name


def check_inside(path: Path, base: Path, what: str) -> Path:
    """Return ``path`` if, resolved, it lies under ``base``; else raise StudyError (outputs stay in their folder).

    Parameters
    ----------
    path : Path
        A folder or file the runner is about to write.
    base : Path
        The output folder it must stay in.
    what : str
        What ``path`` is, for the message.

    Returns
    -------
    Path
        ``path`` unchanged.

    Example
    -------
    >>> check_inside(Path("/tmp/out/s/a"), Path("/tmp/out"), "run folder of s/a")
    PosixPath('/tmp/out/s/a')
    """
    root = Path(base).resolve()
    if not Path(path).resolve().is_relative_to(root):
        raise StudyError(f"{what}: {path} is outside the output folder {root}")
    return path


def positive_usd(value: Any) -> float | None:
    """Return ``value`` as a finite float > 0, or None when it is not one (bools and text are not numbers).

    Example
    -------
    >>> positive_usd(0.05), positive_usd(0), positive_usd("1")
    (0.05, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and value > 0 else None


def usd_argument(text: str) -> float:
    """argparse type of every ``--budget-usd``: a finite number of US dollars > 0.

    Example
    -------
    >>> usd_argument("0.5")
    0.5
    """
    try:
        value = positive_usd(float(text))
    except ValueError:
        value = None
    if value is None:
        raise argparse.ArgumentTypeError(f"expected a positive number of US dollars, got {text!r}")
    return value


class Typed:
    """A -p value read as YAML, with the text it came from (a ``str`` parameter takes the text)."""

    def __init__(self, value: Any, raw: str) -> None:
        self.value, self.raw = value, raw


def parse_assignments(pairs: Iterable[str], *, cwd: str | Path | None = None) -> dict[str, Any]:
    """Return ``{key: value}`` from ``-p key=value`` strings; values are read as plain YAML data.

    A value of a key ending in ``_path`` that names an existing file or folder relative to ``cwd``
    (the caller's working directory) becomes absolute, since notebooks run in ``notebooks/``.

    Parameters
    ----------
    pairs : iterable of str
        ``key=value`` strings.
    cwd : str or Path, optional
        The folder relative paths are read from (default: the current one).

    Returns
    -------
    dict
        ``{key: value}``; a value that is not a str is a :class:`Typed` (a ``str`` parameter keeps the text).

    Example
    -------
    >>> parse_assignments(["n_boot=50"])["n_boot"].value
    50
    """
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise ParameterError(f"-p expects key=value, got {pair!r}")
        key, raw = (t.strip() for t in pair.split("=", 1))
        if not key.isidentifier():
            raise ParameterError(f"-p {pair!r}: {key!r} is not a parameter name")
        if key.endswith("_path") and raw and not Path(raw).is_absolute():
            where = Path(cwd or Path.cwd()) / raw
            raw = str(where.resolve()) if where.exists() else raw
        try:
            value = load_data(raw) if raw != "" else ""
        except yaml.YAMLError as exc:
            raise ParameterError(f"-p {key}: {' '.join(str(exc).split())}") from None
        check_plain(value, f"-p {key}")
        out[key] = value if isinstance(value, str) else Typed(value, raw)
    return out
