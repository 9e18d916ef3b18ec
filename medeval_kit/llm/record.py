"""From replies to Responses and cache rows, and back: the one place a Response is made from a
provider's Completion, a stored row or a failure, and a paid reply becomes a cache row."""

from __future__ import annotations

import math
from typing import Any

from .cache import utcnow
from .cost import cost_of
from .parse import parse_reply
from .providers.base import Completion
from .secrets import known_keys, redact, redact_json
from .types import ModelSpec, Request, Response, canonical_json

LOOKUP = object()  # response_from_completion: look the price up


def response_from_row(row: dict[str, Any], request: Request, spec: ModelSpec) -> Response:
    """Return the Response of a cached reply (cost 0: it was paid when it was stored)."""
    text = row["text"] if row["text"] is not None else ""  # a stored row is a reply, maybe an empty one
    parsed, status, perr = parse_reply(text, request.schema, finish_reason=row["finish_reason"])
    return Response(
        text=text, parsed=parsed, parse_status=status, error=None,
        usage={"prompt_tokens": row["prompt_tokens"] or 0, "completion_tokens": row["completion_tokens"] or 0},
        cost_usd=0.0, latency_s=row["latency_s"] or 0.0, provider=spec.provider, model=spec.name,
        key=row["key"], cached=True, request=request, parse_error=perr,
        finish_reason=row["finish_reason"], response_id=row["response_id"], attempts=0,
        created_utc=row["created_utc"],
    )


def response_from_completion(c: Completion, request: Request, spec: ModelSpec, key: str, latency: float,
                             attempts: int, *, batch: bool = False, price: Any = LOOKUP) -> Response:
    """Return the Response of a provider's reply, parsed and priced (at ``price``, a :class:`Price` or None
    for no price, when the caller has looked it up; else at :func:`cost_of`)."""
    # no content (OpenAI ``content: null``, e.g. a refusal; an empty Anthropic content list) is a
    # reply, and paid for: text "", parse_status "failed" with the reason, counted and cached
    text = c.text if c.text is not None else ""
    parsed, status, perr = parse_reply(text, request.schema, finish_reason=c.finish_reason)
    if price is LOOKUP or batch:
        cost = cost_of(spec, c.prompt_tokens, c.completion_tokens, batch=batch)
    else:
        cost = price.cost(c.prompt_tokens, c.completion_tokens) if price is not None else math.nan
    return Response(
        text=text, parsed=parsed, parse_status=status, error=None,
        usage={"prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens},
        cost_usd=cost, latency_s=latency, provider=spec.provider, model=spec.name, key=key,
        cached=False, request=request, parse_error=perr, finish_reason=c.finish_reason,
        response_id=c.response_id, attempts=attempts, created_utc=utcnow(),
    )


def error_response(request: Request, spec: ModelSpec, key: str, error: str, attempts: int,
                   latency: float = 0.0) -> Response:
    """Return a failed call's Response: no text, ``parse_status="missing"``, ``error`` redacted (the
    one place any ``Response.error`` is made, live or batch)."""
    return Response(text=None, parsed=None, parse_status="missing", error=redact(error),
                    provider=spec.provider, model=spec.name, key=key, request=request,
                    attempts=attempts, latency_s=latency, created_utc=utcnow())


def cache_entry(key: str, spec: ModelSpec, canonical: dict[str, Any] | str, c: Completion, cost_usd: float, *,
                source: str, latency_s: float | None = None, created_utc: str | None = None) -> dict[str, Any]:
    """Return the cache row of a paid reply, without any known key (the model's text is kept as it is
    unless it holds one); without ``created_utc`` the cache stamps the time of writing. ``canonical``: the
    canonical request, or its :func:`canonical_json` text."""
    # the body as received, not encoded again, unless it escapes what json.dumps does not ("\u", "\/"):
    # a key so written would slip past the redaction of its plain and JSON-escaped forms
    text = c.raw_text
    raw = text if text is not None and "\\u" not in text and "\\/" not in text else c.raw
    known = known_keys()  # read once for both texts
    entry = {
        "key": key, "provider": spec.provider, "model": spec.name,
        "request_json": canonical if isinstance(canonical, str) else canonical_json(canonical),
        "text": redact(c.text if c.text is not None else "", patterns=False, known=known),
        "raw_json": redact_json(raw, known=known),
        "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens,
        "cost_usd": None if math.isnan(cost_usd) else cost_usd, "latency_s": latency_s,
        "finish_reason": c.finish_reason, "response_id": c.response_id, "source": source,
    }
    if created_utc is not None:
        entry["created_utc"] = created_utc
    return entry
