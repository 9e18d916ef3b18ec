"""Where things are: one resolver and one environment variable (``MEDEVAL_ROOT``).

The *project* root holds a study's inputs and outputs (``studies/``, ``notebooks/``, ``figures/``,
``tables/``, ``runs/``, ``report/``, ``data/cache/``). It is ``$MEDEVAL_ROOT`` when set, else the
checkout this package sits in, else the current folder, so an installed package works on the user's
own project. The toolkit's *resources* (``prompts/``, ``data/prices.yaml``, ``data/published/``) are
looked up in the project root first and then in the toolkit, so a user's own ``prompts/`` folder
overrides ours. The bundled datasets always come from the toolkit (``data_dir``): a project's
``data/`` folder holds its own cache and files, which the user passes by path.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ENV_VAR", "root", "toolkit_home", "resource", "data_dir", "prompts_dir", "cache_path",
           "prices_path", "published_dir"]

ENV_VAR = "MEDEVAL_ROOT"


def toolkit_home() -> Path:
    """Return the folder above the installed package (the checkout, in development)."""
    return Path(__file__).resolve().parents[1]


def _is_checkout(p: Path) -> bool:
    return (p / "pyproject.toml").is_file() and (p / "medeval_kit").is_dir()


def root() -> Path:
    """Return the project root: ``$MEDEVAL_ROOT``, else the checkout, else the current folder."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).resolve()
    home = toolkit_home()
    return home if _is_checkout(home) else Path.cwd().resolve()


def resource(*parts: str) -> Path:
    """Return ``root()/parts`` if it exists, else the toolkit's own copy (which may not exist)."""
    mine = root().joinpath(*parts)
    return mine if mine.exists() else toolkit_home().joinpath(*parts)


def data_dir() -> Path:
    """Return the folder of the bundled datasets (the toolkit's ``data/``)."""
    return toolkit_home() / "data"


def prompts_dir() -> Path:
    """Return the prompts folder (``prompts/``)."""
    return resource("prompts")


def prices_path() -> Path:
    """Return the price table (``data/prices.yaml``)."""
    return resource("data", "prices.yaml")


def published_dir() -> Path:
    """Return the folder of the paper data files (``data/published/``)."""
    return resource("data", "published")


def cache_path() -> Path:
    """Return the LLM cache file (``<root>/data/cache/llm.sqlite``; it is the project's, never a fallback)."""
    return root() / "data" / "cache" / "llm.sqlite"
