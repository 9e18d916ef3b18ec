"""Parsing and validating replies; re-parsing stored raw outputs without any call."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from .types import canonical_json

_DECODER = json.JSONDecoder(strict=False)


def _fence_parts(s: str) -> list[tuple[bool, str]]:
    """Split ``s`` at Markdown code fences: ``(inside_fence, text)`` pieces, the language tag of a
    fence (```json) removed. An unterminated fence runs to the end."""
    if "```" not in s:
        return [(False, s)]
    out = []
    for i, part in enumerate(s.split("```")):
        if i % 2 == 1:
            first, nl, rest = part.partition("\n")
            if nl and first.strip() and not first.lstrip().startswith(("{", "[")):
                part = rest  # ```json\n...
            out.append((True, part))
        else:
            out.append((False, part))
    return out


def _scan(s: str) -> list[Any]:
    """Every top-level JSON object or array in ``s``, left to right (a value inside another is not
    counted again; text that only looks like JSON is skipped)."""
    out, i, n = [], 0, len(s)
    while i < n:
        j = min((k for k in (s.find("{", i), s.find("[", i)) if k >= 0), default=-1)
        if j < 0:
            break
        try:
            value, end = _DECODER.raw_decode(s, j)
        except ValueError:
            i = j + 1
            continue
        out.append(value)
        i = end
    return out


def json_candidates(text: str) -> list[Any]:
    """Every JSON value a reply offers, in order.

    A reply that is one JSON document gives exactly that value. Otherwise: each fenced block that is
    a JSON document, and every JSON object or array found in fenced blocks that are not, and in
    the prose around them. Raw control characters inside strings are accepted (``strict=False``):
    llama.cpp's JSON grammar lets them through, and they carry no ambiguity.
    """
    s = text.strip()
    try:
        return [json.loads(s, strict=False)]
    except ValueError:
        pass
    out: list[Any] = []
    for fenced, part in _fence_parts(s):
        if fenced:
            try:
                out.append(json.loads(part.strip(), strict=False))
                continue
            except ValueError:
                pass
        out.extend(_scan(part))
    return out


def extract_json(text: str) -> Any:
    """Return the first JSON value in a text.

    Nothing is invented: the value is exactly a JSON value present in the text (see
    :func:`~medeval_kit.llm.parse.json_candidates`). :func:`parse_reply` with a schema does not take the
    first value blindly: it needs the values that validate to agree.

    Parameters
    ----------
    text : str
        A model's reply.

    Returns
    -------
    object
        The first JSON value (dict, list, str, number, bool or None).

    Raises
    ------
    ValueError
        The text holds no JSON value.

    Examples
    --------
    >>> extract_json('Verdict: {"winner": "A"} because ...')
    {'winner': 'A'}
    """
    values = json_candidates(text)
    if not values:
        raise ValueError("no JSON value found in the reply")
    return values[0]


def _canon(value: Any) -> str:
    """Canonical JSON text of a decoded value (NaN and Infinity, which Python's decoder accepts, too)."""
    try:
        return canonical_json(value)
    except ValueError:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _brief(value: Any, n: int = 60) -> str:
    s = _canon(value)
    return s if len(s) <= n else s[: n - 1] + "…"


@lru_cache(maxsize=256)
def _validator(schema_json: str):
    from medeval_kit.json_schema import validator_class

    schema = json.loads(schema_json)
    return validator_class(schema)(schema)


def validate(value: Any, schema: dict[str, Any]) -> str | None:
    """Return None if ``value`` satisfies ``schema``, else a one-line reason."""
    v = _validator(canonical_json(schema))
    err = next(iter(v.iter_errors(value)), None)
    if err is None:
        return None
    where = "/".join(map(str, err.absolute_path)) or "(root)"
    return f"schema violation at {where}: {err.message}"


def empty_reason(finish_reason: str | None = None) -> str:
    """The ``parse_error`` of a reply with no content."""
    return f"empty reply (finish_reason={finish_reason})" if finish_reason else "empty reply"


def parse_reply(text: str | None, schema: dict[str, Any] | None, *, finish_reason: str | None = None
                ) -> tuple[Any, str, str | None]:
    """Parse a reply against a schema; never raises.

    * ``text is None``: no reply at all (the call failed): ``(None, "missing", None)``.
    * empty or white-space text (OpenAI ``content: null``, an empty Anthropic message):
      ``(None, "failed", "empty reply (finish_reason=...)")``, with or without a schema.
    * no schema: ``(None, "ok", None)``.
    * with a schema, the reply is ``ok`` only when exactly one of its JSON values validates, or all that
      validate are equal after canonicalisation (key order, white space). Two or more different valid
      values are ``"ambiguous: N candidate verdicts: v1 | v2 ..."``: a model that echoes the option list
      (``{"verdict": "A"} or {"verdict": "B"}``) or shows an example before its answer is never read as
      choosing the first one. No valid value: ``"not JSON: ..."`` or the first value's schema violation.

    Parameters
    ----------
    text : str or None
        The reply.
    schema : dict or None
        A JSON schema.
    finish_reason : str, optional
        Why generation stopped; named in the error of an empty reply.

    Returns
    -------
    parsed : object
        The valid value, or ``None``.
    parse_status : {"ok", "failed", "missing"}
        The outcome.
    parse_error : str or None
        Why it failed.

    Examples
    --------
    >>> schema = {"type": "object", "properties": {"v": {"enum": ["A", "B"]}}, "required": ["v"]}
    >>> parse_reply('{"v": "A"} or {"v": "B"}', schema)[1:]
    ('failed', 'ambiguous: 2 candidate verdicts: {"v":"A"} | {"v":"B"}')
    """
    if text is None:
        return None, "missing", None
    if not text.strip():
        return None, "failed", empty_reason(finish_reason)
    if schema is None:
        return None, "ok", None
    values = json_candidates(text)
    if not values:
        return None, "failed", "not JSON: no JSON value found in the reply"
    valid: dict[str, Any] = {}
    first_problem = None
    for v in values:
        problem = validate(v, schema)
        if problem is None:
            valid.setdefault(_canon(v), v)
        elif first_problem is None:
            first_problem = problem
    if len(valid) == 1:
        return next(iter(valid.values())), "ok", None
    if not valid:
        return None, "failed", first_problem
    shown = " | ".join(_brief(v) for v in list(valid.values())[:4])
    more = f" | ... ({len(valid) - 4} more)" if len(valid) > 4 else ""
    return None, "failed", f"ambiguous: {len(valid)} candidate verdicts: {shown}{more}"


def reparse(cache, parser: Callable[[str], Any] | None = None, *, schema: dict[str, Any] | None = None,
            model: str | None = None, keys: Iterable[str] | None = None):
    """Re-apply a parser to the raw outputs stored in a cache; makes no call.

    Parameters
    ----------
    cache : Cache or path-like
        The cache, or its SQLite file.
    parser : callable, optional
        ``parser(text) -> value``; raising any exception marks the row ``"failed"``. When ``None``,
        :func:`parse_reply` is used with ``schema`` (or each request's own schema), under the same rules as
        a live run (ambiguous replies fail). An empty stored reply is ``failed`` with
        ``"empty reply (finish_reason=...)"`` and never reaches ``parser``.
    schema : dict, optional
        Validate the parser's output against this schema.
    model : str, optional
        Only the entries of this ``provider/name``.
    keys : iterable of str, optional
        Only these cache keys.

    Returns
    -------
    DataFrame
        ``key, provider, model, repeat, text, parsed, parse_status, parse_error``, one row per entry.
    """
    import pandas as pd

    from .cache import Cache

    if not isinstance(cache, Cache):
        cache = Cache(cache, mode="use")
    rows = []
    for e in cache.iter_entries(model=model, keys=keys):
        req = json.loads(e["request_json"]) if e["request_json"] else {}
        text = e["text"] if e["text"] is not None else ""  # a stored row is a reply, maybe an empty one
        use_schema = schema if schema is not None else (req.get("schema") if parser is None else None)
        if parser is None or not text.strip():
            parsed, status, perr = parse_reply(text, use_schema, finish_reason=e.get("finish_reason"))
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
