"""The provider registry: model-string prefix -> Provider class.

A provider is one class in ``llm/providers/<name>.py`` decorated with ``@provider("<name>")``; the
model string ``<name>/<model>`` then resolves to it (:func:`~medeval_kit.llm.types.parse_model`,
:func:`make_provider`). ``replay`` is registered the same way but is selected by the ``replay/``
prefix of any model string, never as a provider of its own. This module imports no provider, so
the model-string parser can use it without a cycle.
"""

from __future__ import annotations

from typing import Any

from .errors import UnknownModelError
from .secrets import register_key_env

REPLAY = "replay"

_REGISTRY: dict[str, type] = {}


def provider(name: str):
    """Class decorator: register a Provider class under the model-string prefix ``name``."""
    if not name or "/" in name or "@" in name:
        raise ValueError(f"provider name {name!r}: a non-empty word without '/' or '@'")

    def register(cls: type) -> type:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"provider {name!r} is already registered ({_REGISTRY[name].__name__})")
        cls.name = name
        register_key_env(getattr(cls, "key_env", None))  # its value is redacted from every error and log
        _REGISTRY[name] = cls
        return cls

    return register


def unregister(name: str) -> None:
    """Remove the provider ``name`` from the registry (tests, plug-ins being reloaded)."""
    _REGISTRY.pop(name, None)


def provider_names() -> tuple[str, ...]:
    """Return the registered model-string prefixes, in registration order (``replay`` excluded)."""
    return tuple(n for n in _REGISTRY if n != REPLAY)


def is_provider(name: str) -> bool:
    """Return whether ``name`` is a registered model-string prefix."""
    return name != REPLAY and name in _REGISTRY


def provider_class(name: str) -> type:
    """Return the Provider class registered under ``name``; UnknownModelError when there is none."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownModelError(f"no provider {name!r}: registered are {', '.join(provider_names())}") from None


def make_provider(spec: Any, **options: Any):
    """Return the provider instance for a parsed model string (the replay provider for ``replay/...``)."""
    return provider_class(REPLAY if spec.replay else spec.provider)(spec, **options)


def key_options(spec: Any, options: dict[str, Any], request: Any) -> dict[str, Any]:
    """Return the provider options that change ``request`` on the wire, for its cache key (see
    ``Provider.key_options``); a replayed model has the key of the provider it replays."""
    return provider_class(spec.provider).key_options(options, request)
