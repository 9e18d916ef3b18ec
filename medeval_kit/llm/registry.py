"""The provider registry: model-string prefix -> Provider class.

A provider is one class in ``llm/providers/<name>.py`` decorated with ``@provider("<name>")``; the
model string ``<name>/<model>`` then resolves to it (:func:`~medeval_kit.llm.types.parse_model`,
:func:`make_provider`). ``replay`` is registered the same way but is selected by the ``replay/``
prefix of any model string, never as a provider of its own. This module imports no provider, so
the model-string parser can use it without a cycle. Another distribution adds providers through the
entry-point group ``medeval_kit.providers`` (a module of decorated classes), loaded at the first read of
the registry; a built-in keeps its name (see :mod:`medeval_kit.plugins`).
"""

from __future__ import annotations

from typing import Any

from medeval_kit import plugins

from .errors import UnknownModelError
from .secrets import register_key_env

REPLAY = "replay"

_REGISTRY: dict[str, type] = {}  # read through _registry(), which loads the plugins first
plugins.attach(plugins.PROVIDERS, names=lambda: [n for n in _REGISTRY if n != REPLAY],
               drop=lambda name: _REGISTRY.pop(name, None))


def _registry() -> dict[str, type]:
    """The registry, after the built-ins and the ``medeval_kit.providers`` plugins are loaded."""
    plugins.load(plugins.PROVIDERS)
    return _REGISTRY


def provider(name: str):
    """Register a :class:`~medeval_kit.llm.Provider` class under a model-string prefix (a class decorator).

    Parameters
    ----------
    name : str
        The prefix, e.g. ``"echo"`` for model strings ``echo/<model>``; a built-in keeps its name when a
        plugin (entry-point group ``medeval_kit.providers``) reuses it.

    Returns
    -------
    callable
        The decorator; it returns the class with ``name`` set.
    """
    if not name or "/" in name or "@" in name:
        raise ValueError(f"provider name {name!r}: a non-empty word without '/' or '@'")

    def register(cls: type) -> type:
        if _REGISTRY.get(name) is not cls:
            verdict = plugins.admit(plugins.PROVIDERS, name, name in _REGISTRY, cls.__module__)
            if verdict == "duplicate":
                raise ValueError(f"provider {name!r} is already registered ({_REGISTRY[name].__name__})")
            if verdict == "keep":  # a plugin's provider under a taken name (warned): not registered
                return cls
            _REGISTRY.pop(name, None)  # "replace": a built-in takes its name back from a plugin
        cls.name = name
        register_key_env(getattr(cls, "key_env", None))  # its value is redacted from every error and log
        _REGISTRY[name] = cls
        return cls

    return register


def unregister(name: str) -> None:
    """Remove a provider from the registry (tests, plug-ins being reloaded).

    Parameters
    ----------
    name : str
        A registered prefix.
    """
    _registry().pop(name, None)
    plugins.release(plugins.PROVIDERS, name)


def provider_names() -> tuple[str, ...]:
    """List the registered model-string prefixes, in registration order (built-ins, then plugins).

    Returns
    -------
    tuple of str
        The prefixes; ``replay`` is left out.
    """
    return tuple(n for n in _registry() if n != REPLAY)


def is_provider(name: str) -> bool:
    """Return whether ``name`` is a registered model-string prefix."""
    return name != REPLAY and name in _registry()


def provider_class(name: str) -> type:
    """Return the Provider class registered under ``name``; UnknownModelError when there is none."""
    try:
        return _registry()[name]
    except KeyError:
        raise UnknownModelError(f"no provider {name!r}: registered are {', '.join(provider_names())}") from None


def make_provider(spec: Any, **options: Any):
    """Return the provider instance for a parsed model string (the replay provider for ``replay/...``).

    Parameters
    ----------
    spec : ModelSpec or str
        The parsed model string (:func:`~medeval_kit.llm.parse_model`).
    **options
        Provider options (see :func:`~medeval_kit.llm.get_client`).

    Returns
    -------
    Provider
        A new instance of the registered provider class.

    Raises
    ------
    LLMError
        No provider is registered under the model string's prefix.
    """
    return provider_class(REPLAY if spec.replay else spec.provider)(spec, **options)


def key_options(spec: Any, options: dict[str, Any], request: Any) -> dict[str, Any]:
    """Return the provider options that change ``request`` on the wire, for its cache key (see
    ``Provider.key_options``); a replayed model has the key of the provider it replays."""
    return provider_class(spec.provider).key_options(options, request)
