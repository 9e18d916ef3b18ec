"""Where things are: one resolver, one environment variable (``MEDEVAL_ROOT``), one marker file.

A *project* is a folder: it holds a team's inputs and outputs (``studies/``, ``data/``, ``runs/``,
``figures/``, ``tables/``, ``report/`` and the LLM cache ``data/cache/llm.sqlite``). Its root is
``$MEDEVAL_ROOT`` when set, else the nearest folder at or above the working directory that holds the
marker file ``medeval.toml`` (``medeval init`` writes one), else the working directory. It is never
the toolkit's install or checkout, unless one works inside the toolkit's own checkout, which is a
project of its own (it has a marker).

The toolkit's *resources* (``prompts/``, ``data/prices.yaml``, ``data/published/``, the bundled
datasets, the notebooks and the example studies) ship inside the package as ``medeval_kit/_bundle/``
(copied there at build time, see ``setup.py``); in a development checkout they are read from the
checkout's own folders. :func:`resource` looks in the project first, so a project's own
``prompts/`` folder overrides ours; :func:`package_resource` is always the toolkit's copy.
"""

from __future__ import annotations

import os
from importlib import resources as _resources
from pathlib import Path

__all__ = ["ENV_VAR", "MARKER", "BUNDLE", "root", "find_project", "toolkit_home", "package_resource",
           "resource", "data_dir", "prompts_dir", "prices_path", "published_dir", "notebooks_dir",
           "example_studies_dir", "studies_dir", "cache_path", "project_settings"]

ENV_VAR = "MEDEVAL_ROOT"
MARKER = "medeval.toml"
BUNDLE = "_bundle"  # medeval_kit/_bundle/ in a built wheel; absent in a checkout


def find_project(start: str | os.PathLike | None = None) -> Path | None:
    """Return the nearest folder at or above ``start`` that holds the marker file, else ``None``.

    Parameters
    ----------
    start : str or path-like, optional
        Where to start looking (default: the current working directory).

    Returns
    -------
    pathlib.Path or None
        The resolved project folder, or ``None`` when no folder up to the filesystem root has a marker.

    Examples
    --------
    >>> find_project("/tmp/somewhere/without/marker") is None  # doctest: +SKIP
    True
    """
    here = Path(start if start is not None else Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / MARKER).is_file():
            return folder
    return None


def root() -> Path:
    """Return the project root: ``$MEDEVAL_ROOT``, else the nearest marked folder up from cwd, else cwd.

    Returns
    -------
    pathlib.Path
        An absolute path; it may not exist when ``$MEDEVAL_ROOT`` names a missing folder.

    Examples
    --------
    >>> import os; os.environ["MEDEVAL_ROOT"] = "/my/project"; str(root())  # doctest: +SKIP
    '/my/project'
    """
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser().resolve()
    return find_project() or Path.cwd().resolve()


def toolkit_home() -> Path:
    """Return the folder above the installed package: the checkout in development, else ``site-packages``.

    Not a place to read resources from (use :func:`package_resource`) nor to write to (use :func:`root`).

    Returns
    -------
    pathlib.Path
        The parent folder of ``medeval_kit/``.
    """
    return Path(__file__).resolve().parents[1]


def _bundle() -> Path | None:
    """The packaged resources folder of a built install, or ``None`` in a checkout."""
    try:
        b = _resources.files("medeval_kit") / BUNDLE
    except (ModuleNotFoundError, TypeError):  # pragma: no cover - medeval_kit always importable here
        return None
    # wheels install unzipped, so this is a real folder; a zipped install is not supported
    return Path(str(b)) if b.is_dir() else None


def package_resource(*parts: str) -> Path:
    """Return the toolkit's own copy of a resource, as a real filesystem path (which may not exist).

    Parameters
    ----------
    *parts : str
        The path inside the repository layout, e.g. ``"data", "prices.yaml"`` or ``"notebooks"``.

    Returns
    -------
    pathlib.Path
        ``medeval_kit/_bundle/<parts>`` in a built install, else ``<checkout>/<parts>``.

    Examples
    --------
    >>> package_resource("data", "prices.yaml").name
    'prices.yaml'
    """
    base = _bundle()
    return (base if base is not None else toolkit_home()).joinpath(*parts)


def resource(*parts: str) -> Path:
    """Return ``root()/parts`` if it exists, else :func:`package_resource` (which may not exist).

    Parameters
    ----------
    *parts : str
        The path inside the project layout, e.g. ``"prompts"``.

    Returns
    -------
    pathlib.Path
        The project's copy when it exists, else the toolkit's.

    Examples
    --------
    >>> resource("prompts").name
    'prompts'
    """
    mine = root().joinpath(*parts)
    return mine if mine.exists() else package_resource(*parts)


def data_dir() -> Path:
    """Return the folder of the bundled datasets (the toolkit's ``data/``; never the project's).

    Returns
    -------
    pathlib.Path
        The toolkit's ``data/`` folder.
    """
    return package_resource("data")


def prompts_dir() -> Path:
    """Return the prompts folder (``prompts/``: the project's, else the toolkit's).

    Returns
    -------
    pathlib.Path
        The project's ``prompts/`` when it exists, else the toolkit's.
    """
    return resource("prompts")


def prices_path() -> Path:
    """Return the price table (``data/prices.yaml``: the project's, else the toolkit's).

    Returns
    -------
    pathlib.Path
        The project's ``data/prices.yaml`` when it exists, else the toolkit's.
    """
    return resource("data", "prices.yaml")


def published_dir() -> Path:
    """Return the folder of the paper data files (``data/published/``: the project's, else the toolkit's).

    Returns
    -------
    pathlib.Path
        The project's ``data/published/`` when it exists, else the toolkit's.
    """
    return resource("data", "published")


def notebooks_dir() -> Path:
    """Return the toolkit's notebooks folder (packaged, or the checkout's ``notebooks/``).

    Returns
    -------
    pathlib.Path
        The toolkit's ``notebooks/`` folder.
    """
    return package_resource("notebooks")


def example_studies_dir() -> Path:
    """Return the toolkit's example studies folder (packaged, or the checkout's ``studies/``).

    Returns
    -------
    pathlib.Path
        The toolkit's ``studies/`` folder.
    """
    return package_resource("studies")


def studies_dir() -> Path:
    """Return the project's studies folder, ``<root>/studies`` (it may not exist).

    Returns
    -------
    pathlib.Path
        ``<root>/studies``.
    """
    return root() / "studies"


def cache_path() -> Path:
    """Return the LLM cache file (``<root>/data/cache/llm.sqlite``; it is the project's, never a fallback).

    Returns
    -------
    pathlib.Path
        ``<root>/data/cache/llm.sqlite``.
    """
    return root() / "data" / "cache" / "llm.sqlite"


def project_settings(folder: str | os.PathLike | None = None) -> dict:
    """Return the settings in a project's marker file (``name``, ``model``, ``budget_usd``, ...).

    Parameters
    ----------
    folder : str or path-like, optional
        The project folder (default: :func:`root`).

    Returns
    -------
    dict
        The marker's TOML table; ``{}`` when the folder has no marker.

    Raises
    ------
    medeval_kit.errors.MedevalError
        The marker is not valid TOML.

    Examples
    --------
    >>> project_settings("/work/my_eval").get("model")  # doctest: +SKIP
    'local/smollm2-135m'
    """
    marker = Path(folder if folder is not None else root()) / MARKER
    if not marker.is_file():
        return {}
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    from medeval_kit.errors import MedevalError

    try:
        return tomllib.loads(marker.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise MedevalError(f"{marker}: not valid TOML ({exc})") from exc
