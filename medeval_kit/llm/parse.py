"""Parsing and validating replies; re-parsing stored raw outputs without any call."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from .types import canonical_json

_DECODER = json.JSONDecoder(strict=False)


def extract_json(text: str) -> Any:
    """Decode the JSON value in ``text``.

    Accepts a bare JSON document, one wrapped in a Markdown code fence, or the first JSON object
    or array in surrounding prose. Raises ``ValueError`` when there is none. Nothing is invented:
    the returned value is exactly a JSON value present in the text. Raw control characters
    (newlines, tabs) inside strings are accepted (``strict=False``): llama.cpp's JSON grammar lets
    them through, and they carry no ambiguity.
    """
    s = text.strip()
    try:
        return json.loads(s, strict=False)
    except ValueError:
        pass
    if "```" in s:  # ```json ... ```
        parts = s.split("```")
        for block in parts[1::2]:
            body = block.split("\n", 1)[1] if "\n" in block and not block.lstrip().startswith(("{", "[")) else block
            try:
                return json.loads(body.strip(), strict=False)
            except ValueError:
                continue
    starts = [i for i in (s.find("{"), s.find("[")) if i >= 0]
    for start in sorted(starts):
        try:
            value, _ = _DECODER.raw_decode(s, start)
            return value
        except ValueError:
            continue
    raise ValueError("no JSON value found in the reply")


@lru_cache(maxsize=256)
def _validator(schema_json: str):
    import jsonschema

    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def validate(value: Any, schema: dict[str, Any]) -> str | None:
    """Return None if ``value`` satisfies ``schema``, else a one-line reason."""
    v = _validator(canonical_json(schema))
    err = next(iter(v.iter_errors(value)), None)
    if err is None:
        return None
    where = "/".join(map(str, err.absolute_path)) or "(root)"
    return f"schema violation at {where}: {err.message}"


def parse_reply(text: str | None, schema: dict[str, Any] | None) -> tuple[Any, str, str | None]:
    """Parse ``text`` against ``schema``; return ``(parsed, parse_status, parse_error)``.

    Never raises: a reply that is not JSON or not valid for the schema gives
    ``(None, "failed", reason)``; no text gives ``(None, "missing", None)``; no schema gives
    ``(None, "ok", None)``.
    """
    if text is None:
        return None, "missing", None
    if schema is None:
        return None, "ok", None
    try:
        value = extract_json(text)
    except ValueError as exc:
        return None, "failed", f"not JSON: {exc}"
    problem = validate(value, schema)
    if problem is not None:
        return None, "failed", problem
    return value, "ok", None


def reparse(cache, parser: Callable[[str], Any] | None = None, *, schema: dict[str, Any] | None = None,
            model: str | None = None, keys: Iterable[str] | None = None):
    """Re-apply a parser to the raw outputs stored in ``cache``; makes no call.

    Args:
        cache: a :class:`~medeval_kit.llm.Cache` (or a path to the SQLite file).
        parser: ``parser(text) -> value``; raising any exception marks the row ``"failed"``.
            When ``None``, the JSON parser is used with ``schema`` (or each request's own schema).
        schema: validate the parser's output against this schema.
        model: only entries of this ``provider/name``.
        keys: only these cache keys.

    Returns:
        A DataFrame with ``key, provider, model, repeat, text, parsed, parse_status, parse_error``.
    """
    import pandas as pd

    from .cache import Cache

    if not isinstance(cache, Cache):
        cache = Cache(cache, mode="use")
    rows = []
    for e in cache.iter_entries(model=model, keys=keys):
        req = json.loads(e["request_json"]) if e["request_json"] else {}
        text = e["text"]
        use_schema = schema if schema is not None else (req.get("schema") if parser is None else None)
        if parser is None:
            parsed, status, perr = parse_reply(text, use_schema)
        else:
            try:
                parsed, status, perr = parser(text), "ok", None
                if use_schema is not None:
                    perr = validate(parsed, use_schema)
                    if perr is not None:
                        parsed, status = None, "failed"
            except Exception as exc:  # a user parser may raise anything: record it, never raise
                parsed, status, perr = None, "failed", f"{type(exc).__name__}: {exc}"
        rows.append({
            "key": e["key"], "provider": e["provider"], "model": e["model"],
            "repeat": req.get("repeat"), "text": text, "parsed": parsed,
            "parse_status": status, "parse_error": perr,
        })
    cols = ["key", "provider", "model", "repeat", "text", "parsed", "parse_status", "parse_error"]
    return pd.DataFrame(rows, columns=cols)
