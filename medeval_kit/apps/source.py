"""Where an app's data comes from: an upload, a file named on the command line, or a bundled dataset.

``marimo run notebooks/agreement_app.py -- --data mine.csv --item case --rater doctor --label verdict``
(also ``marimo export html ... -- --data ...`` and ``python notebooks/agreement_app.py --data ...``) hands
the app its arguments through ``mo.cli_args()``; :func:`data_request` reads them, :func:`app_data`
reads the file with the upload's reader and pre-fills the column mapping, and the app then maps and
checks the table exactly as it does an upload (``mapping_form`` and the ``*_from_table`` functions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from medeval_kit.errors import MedevalError, ParameterError
from medeval_kit.tables import escape_markdown

from .upload import BUNDLED, ROLES, guess_mapping, read_upload, read_user_file

__all__ = ['DataRequest', 'UserData', 'data_request', 'app_data', 'app_table', 'cli_usage', 'mapping_markdown']

_EXTRA = {"judgments": ("failed",)}
"""Options besides the roles: the judgments app's verdict values that mean a failed parse."""


@dataclass(frozen=True)
class DataRequest:
    """The user's file and column mapping as given on the command line.

    Parameters
    ----------
    path : str
        The ``--data`` file.
    mapping : dict of str to str or None
        ``{role: column}`` from the per-role options (``--item COLUMN`` ...).
    options : dict of str to list of str
        Further options (e.g. ``--failed`` tokens).
    """

    path: str
    mapping: dict[str, str | None] = field(default_factory=dict)
    options: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class UserData:
    """What an app shows: the table, its source, the pre-filled mapping, or a problem.

    Parameters
    ----------
    table : DataFrame or None
        The data; ``None`` on a problem.
    source : str
        Where it comes from (a file name or a bundled dataset).
    mapping : dict of str to str or None
        The pre-filled column mapping.
    problem : str
        "" or a message naming the file, column or option.
    request : DataRequest, optional
        The command line's request, when there was one.
    """

    table: pd.DataFrame | None
    source: str
    mapping: dict[str, str | None]
    problem: str = ""
    request: DataRequest | None = None


def cli_usage(app: str) -> str:
    """Return the app's command-line options.

    Parameters
    ----------
    app : {"agreement", "judgments", "rounds"}
        The app.

    Returns
    -------
    str
        E.g. ``--data FILE --item COLUMN ... [--criterion COLUMN]``.
    """
    opts = [(f"--{r.name.replace('_', '-')} COLUMN", r.required) for r in ROLES[app]]
    roles = " ".join(o if required else f"[{o}]" for o, required in opts)
    extra = " ".join(f"[--{o} VALUE ...]" for o in _EXTRA.get(app, ()))
    return f"--data FILE {roles} {extra}".strip()


def data_request(app: str, args: Mapping[str, Any] | None) -> DataRequest | None:
    """Return the ``--data`` file and mapping in ``args`` (``mo.cli_args()``), or None when no option is given.

    Parameters
    ----------
    app : str
        ``"agreement"``, ``"judgments"`` or ``"rounds"``.
    args : Mapping or None
        Option name (without dashes) -> value, as ``mo.cli_args()`` holds them. A role's option is its name
        with ``-`` or ``_`` (``--rater-kind``); an empty value (``--criterion ""``) maps no column to the role.

    Returns
    -------
    DataRequest or None

    Raises
    ------
    medeval_kit.errors.ParameterError
        An unknown option, an option given twice, a mapping without ``--data``, or ``--data`` without a path.

    Example
    -------
    >>> data_request("agreement", {"data": "mine.csv", "rater-kind": "kind", "criterion": ""}).mapping
    {'rater_kind': 'kind', 'criterion': None}
    """
    given = {str(k).replace("-", "_"): v for k, v in dict((args or {}).items()).items()}
    if not given:
        return None
    roles, extra = [r.name for r in ROLES[app]], _EXTRA.get(app, ())
    unknown = [k for k in given if k not in ("data", *roles, *extra)]
    if unknown:
        raise ParameterError(f"unknown option(s) {['--' + k.replace('_', '-') for k in unknown]}; the {app} app "
                           f"takes {cli_usage(app)}")
    for k, v in given.items():
        if isinstance(v, list) and k not in extra:
            raise ParameterError(f"--{k.replace('_', '-')} is given {len(v)} times ({[str(x) for x in v]}); "
                                 "give it once")
    path = given.get("data")
    if path is None or str(path).strip() == "":  # marimo reads a bare `--data` as ""
        raise ParameterError(f"--data needs the path of your file; the {app} app takes {cli_usage(app)}")
    mapping = {k: (str(v) if str(v) != "" else None) for k, v in given.items() if k in roles}
    options = {k: [str(x) for x in (v if isinstance(v, list) else [v])] for k, v in given.items() if k in extra}
    return DataRequest(str(path), mapping, options)


def _read_request(app: str, req: DataRequest) -> UserData:
    """The requested file, read like an upload; the given mapping over the guessed one, its columns checked."""
    path = Path(req.path).expanduser()
    path = path if path.is_absolute() else Path.cwd() / path
    try:
        table = read_user_file(path, name=req.path)
    except MedevalError as exc:
        hint = "" if Path(req.path).is_absolute() else (f" (looked for {path}: a relative --data path is "
                                                        "relative to the folder marimo or python was started in)")
        return UserData(None, req.path, {}, str(exc) + hint, req)
    cols = [str(c) for c in table.columns]
    for role, col in req.mapping.items():
        if col is not None and col not in cols:
            return UserData(None, req.path, {}, f"{req.path}: column {col!r} (given as --{role.replace('_', '-')}) "
                            f"is not in the file; its columns: {cols}", req)
    mapping = {**guess_mapping(cols, app), **req.mapping}
    missing = [r.name for r in ROLES[app] if r.required and mapping.get(r.name) is None]
    if missing:
        return UserData(None, req.path, {}, f"{req.path}: no column was given or recognised for "
                        f"{missing}; pass {' '.join('--' + m.replace('_', '-') + ' COLUMN' for m in missing)}. "
                        f"Columns: {cols}", req)
    return UserData(table, req.path, mapping, "", req)


def app_data(app: str, files: Sequence = (), bundled: str | None = None,
              args: Mapping[str, Any] | None = None) -> UserData:
    """Return the data an app shows: the upload if any, else the ``--data`` file of ``args``, else ``bundled``.

    Parameters
    ----------
    app : str
        ``"agreement"``, ``"judgments"`` or ``"rounds"``.
    files : Sequence
        ``mo.ui.file``'s value (objects with ``name`` and ``contents``); an upload wins over ``--data``.
    bundled : str, optional
        A key of :data:`BUNDLED` ``[app]``; the app's first bundled dataset when None.
    args : Mapping, optional
        ``mo.cli_args()``: ``--data FILE`` and a column per role (:func:`data_request`).

    Returns
    -------
    UserData
        ``problem`` is "" or a message naming the file, column or option (``table`` is then None);
        ``mapping`` is the guessed mapping (:func:`guess_mapping`) with the command line's over it.
    """
    if files:
        f = files[0]
        try:
            table = read_upload(f.name, f.contents)
        except MedevalError as exc:
            return UserData(None, f.name, {}, str(exc))
        return UserData(table, f.name, guess_mapping(table.columns, app))
    try:
        req = data_request(app, args)
    except MedevalError as exc:
        return UserData(None, "the command line", {}, str(exc))
    if req is not None:
        return _read_request(app, req)
    bundled = bundled or next(iter(BUNDLED[app]))
    table = BUNDLED[app][bundled]()
    return UserData(table, f"bundled dataset {bundled!r}", guess_mapping(table.columns, app))


def app_table(app: str, files: Sequence, bundled: str) -> tuple[pd.DataFrame | None, str, str]:
    """Return the data an app shows, without command-line arguments.

    Parameters
    ----------
    app : {"agreement", "judgments", "rounds"}
        The app.
    files : sequence
        ``mo.ui.file``'s value.
    bundled : str
        A bundled dataset's key.

    Returns
    -------
    table : DataFrame or None
        The data.
    source : str
        Where it comes from.
    problem : str
        "" or what went wrong.
    """
    d = app_data(app, files, bundled)
    return d.table, d.source, d.problem


def mapping_markdown(data: UserData) -> str:
    """State the ``--data`` file shown and its column mapping in one Markdown line.

    Every name is escaped by :func:`~medeval_kit.tables.escape_markdown` and sits in a ``<code>`` element.

    Parameters
    ----------
    data : UserData
        What the app shows.

    Returns
    -------
    str
        The line; "" for other data.
    """
    if data.request is None or data.table is None:
        return ""

    def code(v: Any) -> str:
        return f"<code>{escape_markdown(v, newline=' ')}</code>"

    path = Path(data.request.path).expanduser()
    shown = path if path.is_absolute() else Path.cwd() / path
    pairs = ", ".join(f"{r} &larr; {code(c) if c else '<i>none</i>'}"
                      + (" (guessed)" if c and r not in data.request.mapping else "")
                      for r, c in data.mapping.items())
    opts = "".join(f"; --{k}: " + ", ".join(code(v) for v in vs) for k, vs in data.request.options.items())
    return (f"From the command line: <b id='cli-data'>{escape_markdown(str(shown), newline=' ')}</b>; "
            f"<span id='cli-mapping'>{pairs}</span>{opts}.")


def __getattr__(name: str):
    from medeval_kit.deprecation import deprecated_attribute

    return deprecated_attribute(__name__, name, {"user_data": ("apps.app_data", app_data)})
