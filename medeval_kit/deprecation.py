"""Old public names kept for one release: calling one warns and names its replacement.

A package keeps an old name out of its ``__all__`` and serves it from its module ``__getattr__``::

    _OLD = {"user_rounds": ("read_rounds", read_rounds)}

    def __getattr__(name):
        return deprecated_attribute(__name__, name, _OLD)

so ``rounds.user_rounds(...)`` still works, with a ``DeprecationWarning``, while the reference pages,
tab completion and ``__all__`` show only the new name.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["REMOVED_IN", "deprecated_alias", "deprecated_attribute"]

REMOVED_IN = "0.3"
"""The release that drops the deprecated names."""


def deprecated_alias(old: str, new: str, fn: Callable) -> Callable:
    """Return ``fn`` under its old name: the same function, warning on every call.

    Parameters
    ----------
    old : str
        The old public name, e.g. ``"bias.user_judgments"``.
    new : str
        The name that replaces it, e.g. ``"bias.read_judgments"``.
    fn : callable
        The function behind the new name.

    Returns
    -------
    callable
        A wrapper that warns with :class:`DeprecationWarning` and calls ``fn``.
    """

    @functools.wraps(fn)
    def alias(*args, **kwargs):
        warnings.warn(f"{old} is deprecated and will be removed in {REMOVED_IN}; use {new}",
                      DeprecationWarning, stacklevel=2)
        return fn(*args, **kwargs)

    alias.__name__ = old.rsplit(".", 1)[-1]
    alias.__qualname__ = alias.__name__
    return alias


def deprecated_attribute(module: str, name: str, old: Mapping[str, tuple[str, Any]]) -> Any:
    """Serve an old name from a module's ``__getattr__``; raise ``AttributeError`` for anything else.

    Parameters
    ----------
    module : str
        The module's ``__name__``.
    name : str
        The attribute asked for.
    old : mapping
        ``{old name: (new name, object)}``.

    Returns
    -------
    object
        A warning alias of a callable (:func:`deprecated_alias`); another object after a warning.

    Raises
    ------
    AttributeError
        ``name`` is neither public nor an old name.
    """
    if name not in old:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    new, obj = old[name]
    short = module.removeprefix("medeval_kit.")
    if callable(obj):
        return deprecated_alias(f"{short}.{name}", new, obj)
    warnings.warn(f"{short}.{name} is deprecated and will be removed in {REMOVED_IN}; use {new}",
                  DeprecationWarning, stacklevel=2)
    return obj
