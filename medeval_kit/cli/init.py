"""``medeval init DIR``: start a project (a folder with a ``medeval.toml`` marker, see :mod:`medeval_kit.paths`).

The files come from ``medeval_kit/templates/project/``: a ``*.tmpl`` file is written without that suffix
with ``$name`` filled in, and ``gitignore`` becomes ``.gitignore`` (a real ``.gitignore`` inside the package
would be read by git in the toolkit's checkout).
"""

from __future__ import annotations

import argparse
import json
import re
from importlib import resources
from pathlib import Path
from string import Template

from medeval_kit.errors import MedevalError

__all__ = ["init_project", "register_cli"]

_TEMPLATE = ("medeval_kit.templates", "project")


def _template_files() -> dict[str, tuple[str, bool]]:
    """Map each destination path (relative, POSIX) to (template text, whether it is a template)."""
    base = resources.files(_TEMPLATE[0]) / _TEMPLATE[1]
    out: dict[str, tuple[str, bool]] = {}
    stack = [(base, "")]
    while stack:
        folder, prefix = stack.pop()
        for entry in folder.iterdir():
            rel = f"{prefix}{entry.name}"
            if entry.is_dir():
                if entry.name != "__pycache__":
                    stack.append((entry, rel + "/"))
                continue
            is_tmpl = rel.endswith(".tmpl")
            dest = rel[: -len(".tmpl")] if is_tmpl else rel
            dest = re.sub(r"(^|/)gitignore$", r"\1.gitignore", dest)
            out[dest] = (entry.read_text(encoding="utf-8"), is_tmpl)
    return out


def init_project(folder: str | Path, name: str | None = None) -> list[Path]:
    """Create a project in ``folder`` and return the files written.

    ``folder`` may be missing or an existing folder; no file in it is ever overwritten: when any of
    the files to write exists already, nothing is written and :class:`~medeval_kit.errors.MedevalError`
    names them.

    Parameters
    ----------
    folder : str or path-like
        The project folder (created with its parents when missing).
    name : str, optional
        The project's name in ``medeval.toml`` and the README (default: the folder's name).

    Returns
    -------
    list of pathlib.Path
        The files written, sorted.

    Example
    -------
    >>> files = init_project("my_eval")  # doctest: +SKIP
    >>> sorted(f.name for f in files)  # doctest: +SKIP
    ['.gitignore', 'README.md', 'example_labels.csv', 'medeval.toml', 'starter.yaml']
    """
    root = Path(folder).expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise MedevalError(f"{folder}: exists and is not a folder")
    name = name or root.name or "medeval_project"
    files = _template_files()
    clash = sorted(rel for rel in files if (root / rel).exists() or (root / rel).is_symlink())
    if clash:
        raise MedevalError(f"{root}: refusing to overwrite existing file(s): {', '.join(clash)}; "
                           "choose an empty folder or move them away")
    values = {"name": name, "name_toml": json.dumps(name)}  # a JSON string is a valid TOML basic string
    written = []
    for rel, (text, is_tmpl) in sorted(files.items()):
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest, "x", encoding="utf-8") as fh:  # "x": never replace a file created meanwhile
            fh.write(Template(text).safe_substitute(values) if is_tmpl else text)
        written.append(dest)
    return written


def _cmd_init(args: argparse.Namespace) -> int:
    written = init_project(args.dir, name=args.name)
    root = Path(args.dir).expanduser().resolve()
    print(f"created project {root}")
    for f in written:
        print(f"  {f.relative_to(root)}")
    cd = "" if root == Path.cwd().resolve() else f"cd {args.dir} && "
    print("next:")
    print(f"  {cd}medeval agreement data/example_labels.csv")
    print("  medeval list")
    print("  medeval run starter")
    return 0


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``medeval init``."""
    p = sub.add_parser("init", help="start a project: medeval.toml, data/ with an example, studies/, README",
                       description="Start a medeval project in DIR (created when missing; an existing file is "
                                   "never overwritten). Commands run inside DIR then read and write there.")
    p.add_argument("dir", nargs="?", default=".", metavar="DIR", help="project folder (default: .)")
    p.add_argument("--name", default=None, help="project name (default: the folder's name)")
    p.set_defaults(func=_cmd_init)
