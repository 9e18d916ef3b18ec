"""JSON Schema validators (the ``jsonschema`` package), imported without its slowest optional part.

``import jsonschema`` imports ``rfc3987_syntax`` when it is installed (Jupyter pulls it in), which builds a
parser grammar at import: about 1.5 s in every notebook kernel that checks a prompt's schema or a reply.
It only serves the ``"iri"`` format, and medeval_kit never turns format checking on, so it is skipped.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["preload", "validator_class"]


def _jsonschema():
    if "jsonschema" not in sys.modules and "rfc3987_syntax" not in sys.modules:
        sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # makes its import an ImportError
        try:
            import jsonschema
        finally:
            del sys.modules["rfc3987_syntax"]  # a later import of it by someone else works as usual
        return jsonschema
    import jsonschema

    return jsonschema


def preload() -> None:
    """Import ``jsonschema`` now, without ``rfc3987_syntax``, so that a later import by nbformat finds it loaded.

    nbformat (papermill, nbclient, nbval) imports ``jsonschema`` for the notebook schema, which uses no
    ``"format"`` keyword; without this, every process that runs or tests a notebook builds that parser
    grammar first. :mod:`medeval_kit.cli.runner` calls it before importing papermill.

    Returns
    -------
    None

    Example
    -------
    >>> preload()
    >>> import sys
    >>> "jsonschema" in sys.modules
    True
    """
    _jsonschema()


def pytest_addoption(parser) -> None:
    """Pytest hook: ``-p medeval_kit.json_schema`` (pyproject's ``addopts``) runs :func:`preload` when pytest
    registers this module, before it loads the plugins installed with packages (nbval imports nbformat)."""
    preload()


def validator_class(schema: dict[str, Any]):
    """Return the ``jsonschema`` validator class for ``schema``'s draft (``$schema``, else the newest).

    Parameters
    ----------
    schema : dict
        A JSON schema.

    Returns
    -------
    type
        A ``jsonschema`` validator class: ``cls.check_schema(schema)`` checks the schema itself and
        ``cls(schema).iter_errors(value)`` lists a value's violations.

    Example
    -------
    >>> cls = validator_class({"type": "object", "required": ["verdict"]})
    >>> [e.message for e in cls({"type": "object", "required": ["verdict"]}).iter_errors({})]
    ["'verdict' is a required property"]
    """
    return _jsonschema().validators.validator_for(schema)
