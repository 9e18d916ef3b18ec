"""Shared helpers of the generation pipelines: client access, calls with provenance, option shuffling."""

from __future__ import annotations

import copy
import functools
import json
import warnings
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from medeval_kit.errors import MedevalError

__all__ = [
    "GenerationError",
    "LETTERS",
    "resolve_client",
    "run_prompt",
    "derived_seed",
    "shuffle_options",
    "truncate",
    "schema_token_budget",
    "DEFAULT_MODEL",
    "legacy_keywords",
    "cached_retriever",
    "retriever_query",
]

LETTERS = "ABCDEFGHIJ"
DEFAULT_MODEL = "local/smollm2-135m"
"""The LLM a generation function uses when ``model`` is not given (offline, bundled)."""


_RETRIEVERS: dict[tuple, Any] = {}


def cached_retriever(key: tuple, build: Callable[[], Any]) -> Any:
    """A fitted retriever over bundled data, fitted once per process and ``key``; a shallow copy each call.

    Refitting the returned copy rebinds its own attributes and leaves the cached fit alone; querying
    never mutates it.

    Parameters
    ----------
    key : tuple
        What identifies the fit (function, method, data folder).
    build : callable
        Returns the fitted retriever.

    Returns
    -------
    Retriever
        A copy of the cached fit.
    """
    if key not in _RETRIEVERS:
        _RETRIEVERS[key] = build()
    out = copy.copy(_RETRIEVERS[key])
    out._medeval_fit = key
    return out


_QUERIES: dict[tuple, Any] = {}
_MAX_QUERIES = 4096


def retriever_query(retriever, query: str, k: int, exclude: Sequence | None = None):
    """``retriever.query(query, k=k, exclude=exclude)``, remembered for the fits of :func:`cached_retriever`.

    The runs of one notebook repeat their retrievals (the two stopping rules share every INIT call), so a
    copy that still holds the cached fit (every attribute the same object) answers from memory; any other
    retriever, or a copy refitted since, is queried as it is.

    Parameters
    ----------
    retriever : Retriever
        A fitted retriever.
    query : str
        The query text.
    k : int
        Rows to return.
    exclude : sequence, optional
        Ids whose rows are dropped.

    Returns
    -------
    DataFrame
        The hits (a copy the caller may change).
    """
    key = getattr(retriever, "_medeval_fit", None)
    fit = _RETRIEVERS.get(key) if key is not None else None
    if fit is None or any(v is not fit.__dict__.get(a) for a, v in vars(retriever).items() if a != "_medeval_fit"):
        return retriever.query(query, k=k, exclude=exclude)
    memo = (key, query, int(k), None if exclude is None else tuple(exclude))
    if memo not in _QUERIES:
        if len(_QUERIES) >= _MAX_QUERIES:
            _QUERIES.clear()
        _QUERIES[memo] = retriever.query(query, k=k, exclude=exclude)
    return _QUERIES[memo].copy()


def legacy_keywords(**renames: str) -> Callable:
    """Accept old keyword names for one release, with a ``DeprecationWarning``.

    ``renames`` maps an old keyword to its replacement: a parameter name (``judge="model"``), or
    ``"columns:<canonical>"`` for an old per-column keyword whose value goes into the ``columns``
    mapping (``text="columns:question"``; ``None``, "no such column", is dropped). Put it between ``@shared_docs`` and ``@takes_columns``.

    Parameters
    ----------
    **renames : str
        ``{old keyword: new parameter or "columns:<canonical name>"}``.

    Returns
    -------
    callable
        The decorator.
    """

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            for old, new in renames.items():
                if old not in kwargs:
                    continue
                value = kwargs.pop(old)
                if new.startswith("columns:"):
                    role = new.split(":", 1)[1]
                    if value is None:  # "no such column": the function uses the column only when present
                        warnings.warn(f"{fn.__name__}({old}=None) is deprecated; leave it out",
                                      DeprecationWarning, stacklevel=2)
                    elif value != role:
                        warnings.warn(f"{fn.__name__}({old}={value!r}) is deprecated; pass "
                                      f"columns={{{role!r}: {value!r}}}", DeprecationWarning, stacklevel=2)
                        kwargs["columns"] = {role: value, **dict(kwargs.get("columns") or {})}
                else:
                    warnings.warn(f"{fn.__name__}({old}=...) is deprecated; use {new}=", DeprecationWarning,
                                  stacklevel=2)
                    if new in kwargs:
                        raise TypeError(f"{fn.__name__}() got both {old}= (deprecated) and {new}=")
                    kwargs[new] = value
            return fn(*args, **kwargs)

        return wrapper

    return decorate


class GenerationError(MedevalError, ValueError):
    """A generation pipeline got bad inputs or parameters."""


def resolve_client(model: str | None, client=None, cache_mode: str = "use"):
    """Return ``client`` if given (anything with ``.run(requests, ...)``), else ``llm.get_client``."""
    model = model or DEFAULT_MODEL
    if client is not None:
        return client
    from medeval_kit.llm import get_client

    return get_client(model, cache_mode=cache_mode)


def derived_seed(*parts: Any) -> int:
    """A stable 31-bit seed from arbitrary parts (crc32 of their repr), independent of PYTHONHASHSEED.

    Parameters
    ----------
    *parts : object
        Anything with a stable ``repr`` (a run's seed, an item id ...).

    Returns
    -------
    int
        A seed in ``[0, 2**31)``.

    Examples
    --------
    >>> derived_seed(0, "item-1") == derived_seed(0, "item-1") != derived_seed(0, "item-2")
    True
    """
    return zlib.crc32(repr(tuple(parts)).encode("utf-8")) & 0x7FFFFFFF


def truncate(text: Any, max_chars: int | None) -> str:
    """``str(text)`` cut to ``max_chars`` characters (with an ellipsis mark); None/NaN -> ''."""
    if text is None or (isinstance(text, float) and np.isnan(text)):
        return ""
    s = str(text)
    if max_chars is None or len(s) <= max_chars:
        return s
    return s[: max(0, max_chars - 5)].rstrip() + " [...]"


def schema_token_budget(schema: dict | None) -> int | None:
    """Upper bound on the tokens of any JSON reply valid for ``schema`` (one token per character
    of a capped string, plus key/punctuation overhead); None if a string or array is unbounded.

    Used so that a grammar-constrained reply can always finish inside ``max_tokens``: a reply
    cut off by the token limit is unparseable even though the grammar was respected.

    >>> schema_token_budget({"type": "object", "properties": {"a": {"type": "string", "maxLength": 10}}})
    20
    """
    if schema is None:
        return None
    t = schema.get("type")
    if "enum" in schema or t in ("integer", "number", "boolean"):
        return 4
    if t == "string":
        return None if "maxLength" not in schema else int(schema["maxLength"]) + 4
    if t == "array":
        item = schema_token_budget(schema.get("items", {}))
        if item is None or "maxItems" not in schema:
            return None
        return int(schema["maxItems"]) * (item + 1) + 2
    if t == "object":
        total = 2
        for k, v in (schema.get("properties") or {}).items():
            b = schema_token_budget(v)
            if b is None:
                return None
            total += b + len(k) // 2 + 4
        return total
    return None


def run_prompt(client, prompt, variables: Sequence[dict], *, model: str, temperature: float = 0.0,
               max_tokens: int = 300, seed: int = 0, constrained: bool = True, schema: dict | None = None,
               schemas: Sequence[dict | None] | None = None, metadata: Sequence[dict] | None = None,
               progress: bool = False, desc: str = "generating") -> list[dict]:
    """Render ``prompt`` for each dict of ``variables``, call the client once, parse, return records.

    With ``constrained=True`` the JSON schema goes into the Request (grammar-constrained with the
    local model; structured output with APIs). With ``constrained=False`` the request carries no
    schema and the reply text is parsed here against the same schema, so failures are counted,
    not hidden. Each record: ``parsed``, ``text``, ``parse_status``, ``parse_error``, ``error``,
    ``cached``, ``latency_s``, ``cost_usd``, ``prompt``, ``prompt_version``, ``model``, ``seed``.
    """
    from medeval_kit.llm import Request
    from medeval_kit.llm.parse import parse_reply

    if schemas is None:
        schemas = [schema if schema is not None else prompt.schema] * len(variables)
    reqs = []
    for i, v in enumerate(variables):
        mt = int(max_tokens)
        if constrained and schemas[i] is not None:
            budget = schema_token_budget(schemas[i])
            mt = max(mt, budget) if budget is not None else mt
        md = dict(metadata[i]) if metadata is not None else {}
        md.update({"prompt": prompt.name, "prompt_version": prompt.version})
        reqs.append(Request(messages=prompt.render(**v), model=model, temperature=temperature,
                            max_tokens=mt, schema=schemas[i] if constrained else None,
                            repeat=0, seed=seed, metadata=md))
    if not reqs:
        return []
    import inspect

    try:
        takes = set(inspect.signature(client.run).parameters)
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        takes = set()
    kw = {k: v for k, v in (("progress", progress), ("desc", desc)) if k in takes}
    responses = client.run(reqs, **kw)
    if len(responses) != len(reqs):
        raise GenerationError(f"client returned {len(responses)} responses for {len(reqs)} requests")
    out = []
    for r, sch in zip(responses, schemas):
        text = getattr(r, "text", None)
        if constrained:
            parsed, status = getattr(r, "parsed", None), getattr(r, "parse_status", "missing")
            perr = getattr(r, "parse_error", None)
            if sch is not None and status == "ok" and parsed is None and text is not None:
                parsed, status, perr = parse_reply(text, sch)
        else:
            parsed, status, perr = parse_reply(text, sch)
        if status == "failed" and text is not None and sch is not None:
            parsed, status, perr = _lenient_parse(text, sch, parsed, status, perr)
        if text is None:
            status = "missing"
        out.append({
            "parsed": parsed, "text": text, "parse_status": status, "parse_error": perr,
            "error": getattr(r, "error", None), "cached": bool(getattr(r, "cached", False)),
            "latency_s": float(getattr(r, "latency_s", 0.0) or 0.0),
            "cost_usd": float(getattr(r, "cost_usd", 0.0) or 0.0),
            "prompt": prompt.name, "prompt_version": str(prompt.version), "model": model, "seed": int(seed),
        })
    return out


def _lenient_parse(text: str, schema: dict, parsed, status, perr):
    """Second chance for a reply that failed strict parsing: llama.cpp's JSON grammar lets raw
    control characters (newlines, tabs) into strings, which strict JSON rejects. Decode with
    ``json.loads(strict=False)`` and re-validate; on success ``parse_error`` says so."""
    from medeval_kit.llm.parse import validate

    t = text.strip()
    start = t.find("{")
    if start < 0:
        return parsed, status, perr
    try:
        value, _ = json.JSONDecoder(strict=False).raw_decode(t[start:])
    except ValueError:
        return parsed, status, perr
    problem = validate(value, schema)
    if problem is not None:
        return parsed, status, perr
    return value, "ok", "lenient: control characters inside JSON strings (strict=False)"


def shuffle_options(correct: str, distractors: Sequence[str], *, seed: int) -> dict:
    """Shuffle ``[correct] + distractors`` with a seeded RNG and letter them A, B, C ...

    Parameters
    ----------
    correct : str
        The correct option.
    distractors : sequence of str
        The wrong options.
    seed : int
        Random seed of the shuffle.

    Returns
    -------
    dict
        ``options`` (letter -> text), ``answer_letter`` and ``shuffle_order`` (the source index of each
        lettered option: 0 = the correct answer, 1.. = distractors in their given order).

    Examples
    --------
    >>> s = shuffle_options("yes", ["no", "maybe"], seed=1)
    >>> s["options"][s["answer_letter"]]
    'yes'
    """
    texts = [str(correct)] + [str(d) for d in distractors]
    order = np.random.default_rng(int(seed)).permutation(len(texts)).tolist()
    options = {LETTERS[i]: texts[j] for i, j in enumerate(order)}
    return {"options": options, "answer_letter": LETTERS[order.index(0)], "shuffle_order": order}


def dumps(value: Any) -> str | None:
    """JSON text of ``value`` (None stays None) for storing lists/dicts in CSV-friendly columns."""
    return None if value is None else json.dumps(value, ensure_ascii=False)
