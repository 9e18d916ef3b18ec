"""Third-party extensions through entry points, and the rules the three registries share.

Three registries hold what can be extended: agreement coefficients (``agreement.registry``), judge
protocols (``judge.registry``) and LLM providers (``llm.registry``). A separate distribution adds to them
by declaring entry points in one of three groups, e.g. in its ``pyproject.toml``::

    [project.entry-points."medeval_kit.coefficients"]
    my_plugin = "my_plugin.coefficients"      # a module whose @coefficient functions register on import
    [project.entry-points."medeval_kit.protocols"]
    my_plugin = "my_plugin.protocols"         # @protocol
    [project.entry-points."medeval_kit.providers"]
    my_plugin = "my_plugin.providers"         # @provider

An entry point names a module (or ``module:object``); loading it imports the module, and the
decorators in it register, exactly as a built-in file in ``agreement/``, ``judge/protocols/`` or
``llm/providers/`` does. The entry point's name is the plugin's name in every message.

Nothing is read at import time. A group is loaded once, at the first read of its registry (its names,
a lookup, an iteration; :func:`load`): first the group's built-ins (:data:`HOMES`), then every entry
point of the group. So:

* a read gives the same answer whatever was imported before it (``schemas.validate`` of a judgments
  table knows every protocol without the caller importing ``medeval_kit.judge``);
* a built-in always wins a name clash: a plugin registering a name that is taken gets a
  :class:`PluginWarning` naming it, and its entry is ignored (:func:`admit`);
* a plugin that fails to load (an import error, an exception while registering) gets a
  :class:`PluginWarning` naming it and is skipped, with whatever it registered before failing; the
  command or notebook goes on with the others.

This module is layer 0: it imports no other part of the package. The built-ins of a group are named
in :data:`HOMES` as module names (like an entry point's value) and imported only when the group is
loaded; each registry attaches itself with :func:`attach` when it is imported.
"""

from __future__ import annotations

import importlib
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib import metadata

# The registries' own hooks (attach, admit, origin, owner, release, LiveNames) are not for users.
__all__ = ["COEFFICIENTS", "PROTOCOLS", "PROVIDERS", "GROUPS", "PluginWarning", "load", "loaded", "registered", "reset"]

COEFFICIENTS = "medeval_kit.coefficients"
PROTOCOLS = "medeval_kit.protocols"
PROVIDERS = "medeval_kit.providers"
GROUPS = {COEFFICIENTS: "coefficient", PROTOCOLS: "protocol", PROVIDERS: "provider"}
"""Entry-point group -> what one registered entry is called in messages."""

HOMES = {COEFFICIENTS: "medeval_kit.agreement", PROTOCOLS: "medeval_kit.judge", PROVIDERS: "medeval_kit.llm"}
"""Entry-point group -> the package whose import registers the group's built-ins (imported before any plugin)."""


class PluginWarning(UserWarning):
    """A plugin was skipped (it failed to load) or one of its entries was ignored (the name was taken)."""


_lock = threading.RLock()
_done: set[str] = set()  # groups whose built-ins and plugins are loaded
_active: set[str] = set()  # groups being loaded (a read during the load sees what is registered so far)
_current: list[str] = []  # the plugins being loaded, innermost last (a plugin may import another group)
_owners: dict[tuple[str, str], str] = {}  # (group, name) -> the plugin that registered it
_status: dict[str, dict[str, str]] = {}  # group -> plugin -> "" (loaded) or why it was skipped
_listers: dict[str, Callable[[], Iterable[str]]] = {}
_droppers: dict[str, Callable[[str], object]] = {}


def _group(group: str) -> str:
    if group not in GROUPS:
        raise ValueError(f"unknown entry-point group {group!r}; one of {', '.join(GROUPS)}")
    return group


def attach(group: str, *, names: Callable[[], Iterable[str]], drop: Callable[[str], object]) -> None:
    """Called by a registry module when it is imported: how to list its names (without loading) and how to
    remove one entry (used to take back what a failing plugin registered)."""
    _listers[_group(group)] = names
    _droppers[group] = drop


def _initializing() -> bool:
    """True while a built-in home package is being imported: its registrations are not all done, and a
    plugin importing it would see half a module, so plugins wait for the next read."""
    for home in HOMES.values():
        spec = getattr(sys.modules.get(home), "__spec__", None)
        if getattr(spec, "_initializing", False):
            return True
    return False


def load(group: str) -> None:
    """Load a group if it is not loaded: import its built-ins, then every entry point of the group.

    Registries call this before every read; after the first complete load it is a set lookup. A read made
    while a built-in package is still being imported (or while this group is being loaded) sees what is
    registered so far, and the plugins load at the next read. A plugin that fails to import is skipped
    with a :class:`PluginWarning` naming it.

    Parameters
    ----------
    group : str
        An entry-point group: ``medeval_kit.coefficients``, ``medeval_kit.protocols`` or
        ``medeval_kit.providers`` (:data:`GROUPS`).
    """
    if group in _done:
        return
    with _lock:
        if _group(group) in _done or group in _active or _initializing():
            return
        _active.add(group)
        try:
            importlib.import_module(HOMES[group])
            status = _status.setdefault(group, {})
            for ep in _entry_points(group):
                _load_one(group, ep, status)
            _done.add(group)
        finally:
            _active.discard(group)


def _entry_points(group: str) -> list:
    try:
        found = metadata.entry_points(group=group)
    except Exception as exc:  # a broken installation's metadata must not stop the command
        warnings.warn_explicit(f"medeval_kit: could not read the entry points of group {group!r}: {exc}; no plugin "
                               "loaded", PluginWarning, "<plugins>", 0, module=__name__)
        return []
    return sorted(found, key=lambda ep: (ep.name, ep.value))


def _describe(ep) -> str:
    dist = getattr(getattr(ep, "dist", None), "name", None)
    return f"{ep.name!r} ({ep.value}" + (f", from {dist})" if dist else ")")


def _load_one(group: str, ep, status: dict[str, str]) -> None:
    who = _describe(ep)
    _current.append(who)
    try:
        ep.load()
    except (Exception, SystemExit) as exc:  # whatever a plugin raises, the command goes on without it
        for key in [k for k, o in _owners.items() if o == who]:  # take back what it registered
            _owners.pop(key, None)
            if key[0] in _droppers:
                _droppers[key[0]](key[1])
        status[ep.name] = f"{type(exc).__name__}: {exc}"
        # shown as "<plugin NAME>:0: PluginWarning: ...": no source line of medeval_kit's that is not the cause
        warnings.warn_explicit(f"medeval_kit plugin {who} in group {group!r} failed to load and is skipped: "
                               f"{type(exc).__name__}: {exc}", PluginWarning, f"<plugin {ep.name}>", 0,
                               module=__name__)
    else:
        status[ep.name] = ""
    finally:
        _current.pop()


def origin(module: str | None = None) -> str | None:
    """The plugin whose code registers now (its entry point, described), or None for built-in and user code.

    ``module``: the module of the object being registered. A module of medeval_kit is always built in,
    even when a plugin's import is what imported it.
    """
    if not _current or (module is not None and (module == "medeval_kit" or module.startswith("medeval_kit."))):
        return None
    return _current[-1]


def owner(group: str, name: str) -> str | None:
    """The plugin that registered ``name`` in ``group``; None when it is built in (or user code)."""
    return _owners.get((group, name))


def admit(group: str, name: str, taken: bool, module: str | None = None) -> str:
    """Decide a registration of ``name`` in ``group``; ``taken``: the name is registered already;
    ``module``: the module of the object being registered (``fn.__module__``; see :func:`origin`).

    Returns ``"new"`` (register it), ``"replace"`` (a built-in taking back a name a plugin registered
    first: replace that entry), ``"keep"`` (a plugin's entry whose name is taken: ignore it; warned) or
    ``"duplicate"`` (built-in or user code registering a taken name: the registry raises its usual error).
    """
    who, kind = origin(module), GROUPS[_group(group)]
    if not taken:
        if who:
            _owners[(group, name)] = who
        return "new"
    old = _owners.get((group, name))
    if who is None and old is None:
        return "duplicate"
    if who is None:
        _owners.pop((group, name))
        warnings.warn(f"medeval_kit plugin {old}: its {kind} {name!r} has the name of a built-in one; the "
                      "built-in is used and the plugin's ignored", PluginWarning, stacklevel=3)
        return "replace"
    holder = f"plugin {old}" if old else "medeval_kit (built in) or your own code"
    warnings.warn(f"medeval_kit plugin {who}: {kind} {name!r} is already registered by {holder}; the plugin's "
                  f"{kind} is ignored (rename it)", PluginWarning, stacklevel=3)
    return "keep"


def release(group: str, name: str) -> None:
    """Forget who registered ``name`` (its registry unregistered it)."""
    _owners.pop((group, name), None)


def registered(group: str) -> tuple[str, ...]:
    """List the names registered in a group now: the built-ins and the plugins loaded.

    Parameters
    ----------
    group : str
        An entry-point group: ``medeval_kit.coefficients``, ``medeval_kit.protocols`` or
        ``medeval_kit.providers`` (:data:`GROUPS`).

    Returns
    -------
    tuple of str
        The names, in registration order (what :func:`medeval_kit.schemas.validate` reads).
    """
    load(group)
    lister = _listers.get(group)
    return tuple(lister()) if lister else ()


def loaded(group: str) -> dict[str, str]:
    """Say which plugins of a group loaded, and why the others were skipped; loads the group first.

    Parameters
    ----------
    group : str
        An entry-point group: ``medeval_kit.coefficients``, ``medeval_kit.protocols`` or
        ``medeval_kit.providers`` (:data:`GROUPS`).

    Returns
    -------
    dict of str to str
        Entry-point name -> ``""`` when it loaded, else the reason it was skipped.
    """
    load(group)
    return dict(_status.get(group, {}))


def reset(group: str | None = None) -> None:
    """Forget that a group (or every group) was loaded, so the next read reads the entry points again.

    Plugins already imported stay imported and registered (for tests, or a plugin installed while running).

    Parameters
    ----------
    group : str, optional
        An entry-point group; every group when omitted.
    """
    with _lock:
        for g in [_group(group)] if group else list(GROUPS):
            _done.discard(g)
            _status.pop(g, None)


class LiveNames(Sequence):
    """A read-only sequence of the names registered in a group, read at each use (never a stale copy)."""

    def __init__(self, group: str) -> None:
        self.group = _group(group)

    def _names(self) -> tuple[str, ...]:
        return registered(self.group)

    def __getitem__(self, i):
        return self._names()[i]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and not isinstance(other, str) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LiveNames({self.group!r}: {list(self._names())})"
