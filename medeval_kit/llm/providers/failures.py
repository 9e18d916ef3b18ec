"""How the executor treats a failed attempt: retried or not, possibly billed or not (:func:`failure`),
and the HTTP details it is read from (status codes, ``Retry-After`` headers, error bodies)."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

from ..errors import CacheMissError, MissingDependencyError, MissingKeyError, ProviderError, UnknownModelError


def retry_after_from_headers(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date); None if absent."""
    if not headers:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        ra = headers.get("retry-after")
        if ra is None:
            return None
        try:
            return max(0.0, float(ra))
        except ValueError:
            from datetime import datetime, timezone

            return max(0.0, (parsedate_to_datetime(ra) - datetime.now(timezone.utc)).total_seconds())
    except Exception:
        return None


# A request the server calls invalid fails the same way every time, even when a server (llama.cpp's
# Python server, pydantic validation) answers it with a 500 instead of a 4xx.
_INVALID_REQUEST = re.compile(
    r"input should be|validation error|literal_error|invalid[_ ]request|unprocessable|"
    r"invalid (value|parameter|argument|type|schema|json|format|field|response_format)|"
    r"unrecognized request argument|extra inputs are not permitted|field required|is not supported|"
    r"unsupported (value|parameter|format|type|response_format)|must be one of|"
    r"maximum context length|exceeds the available context|context (length|window) exceeded",
    re.IGNORECASE)
# Requests refused for what they are (bad request, auth, no such model/route, unprocessable): never retried.
NOT_RETRIED_STATUS = frozenset({400, 401, 403, 404, 405, 413, 422})
# Failures of the request itself before or while it is written: the server never saw it whole, so it
# generated (and billed) nothing. Header/encoding errors among them will recur: never retried.
_NOT_SENT = frozenset({"ConnectError", "ConnectTimeout", "PoolTimeout", "WriteError", "WriteTimeout",
                       "LocalProtocolError", "UnsupportedProtocol", "InvalidURL", "ProxyError",
                       "ConnectionRefusedError", "gaierror", "UnicodeEncodeError", "MissingKeyError",
                       "MissingDependencyError", "CacheMissError", "UnknownModelError"})
_WILL_RECUR = frozenset({"LocalProtocolError", "UnsupportedProtocol", "InvalidURL", "UnicodeEncodeError"})
# Substrings of exception class names of transient transport and body errors (httpx, SDKs, JSON).
_TRANSIENT = ("Connect", "Timeout", "Validation", "Protocol", "Decode", "Read", "Write", "Network", "Stream")


def reported_usage(raw: Any, prompt: str, completion: str) -> tuple[int, int] | None:
    """``(prompt_tokens, completion_tokens)`` from a reply's ``usage`` object; None when it cannot be read."""
    usage = raw.get("usage") if isinstance(raw, dict) else None
    try:
        pt, ct = int(usage[prompt]), int(usage[completion])
    except (TypeError, KeyError, ValueError):
        return None
    return (pt, ct) if pt >= 0 and ct >= 0 else None


def status_retryable(status: int, message: str = "") -> bool:
    """Whether an HTTP error status is worth retrying: 408/409/425/429 and 5xx, except a 5xx whose
    body says the request is invalid; 400/401/403/404/422 (and other 4xx) never."""
    if status in NOT_RETRIED_STATUS:
        return False
    if status >= 500:
        return not _INVALID_REQUEST.search(message or "")
    return status in (408, 409, 425, 429)


@dataclass(frozen=True, slots=True)
class Failure:
    """How the executor treats a failed attempt.

    ``billed``: the reply may have been generated (and billed) although it never arrived whole:
    a timeout after the request was sent, a connection reset mid-body, a 200 whose body is
    unreadable. The budget counts such attempts at their reserved cost (``unconfirmed_usd``).
    ``broken_body``: a 200 whose body is unusable; retried at most once (a second in a row ends the request).
    """

    retryable: bool
    retry_after: float | None
    what: str
    billed: bool = False
    broken_body: bool = False


def _chain_names(exc: BaseException) -> set[str]:
    names: set[str] = set()
    seen: set[int] = set()
    stack: list[BaseException | None] = [exc]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        names.add(type(e).__name__)
        stack += [e.__cause__, e.__context__]
    return names


def failure(exc: BaseException) -> Failure:
    """Classify an exception from a call (see :class:`Failure`). When in doubt, an attempt counts as
    possibly billed: the budget must over-count rather than under-count."""
    name = type(exc).__name__
    if isinstance(exc, ProviderError):
        if exc.status is not None:  # the server answered with an error status: nothing generated
            return Failure(exc.retryable, exc.retry_after, str(exc))
        return Failure(exc.retryable, exc.retry_after, str(exc), billed=True,
                       broken_body=getattr(exc, "broken_body", False))
    names = _chain_names(exc)
    not_sent = bool(names & _NOT_SENT)
    if names & _WILL_RECUR:  # an invalid header value, a key that is not ASCII, a bad URL
        return Failure(False, None, f"{name}: {exc}"[:500])
    if isinstance(exc, (MissingKeyError, MissingDependencyError, CacheMissError, UnknownModelError)):
        return Failure(False, None, str(exc))
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return Failure(True, None, "timeout", billed=not not_sent)
    status = getattr(exc, "status_code", None)
    if status is not None:
        response = getattr(exc, "response", None)
        retry_after = retry_after_from_headers(getattr(response, "headers", None))
        msg = getattr(exc, "message", None) or str(exc)
        return Failure(status_retryable(status, msg), retry_after, f"HTTP {status} {name}: {msg}"[:500])
    # APIConnectionError, APITimeoutError, APIResponseValidationError, JSON decode errors,
    # truncated bodies (RemoteProtocolError): transient. Programming errors are not.
    if isinstance(exc, (TypeError, AttributeError, KeyError, NameError, NotImplementedError, ImportError)):
        return Failure(False, None, f"{name}: {exc}"[:500], billed=not not_sent)
    if isinstance(exc, (ValueError, ConnectionError, OSError)) or any(t in name for t in _TRANSIENT):
        broken = (isinstance(exc, ValueError) or "Decode" in name or "Validation" in name) and not not_sent
        return Failure(True, None, f"{name}: {exc}"[:500], billed=not not_sent, broken_body=broken)
    return Failure(False, None, f"{name}: {exc}"[:500], billed=not not_sent)


def classify(exc: BaseException) -> tuple[bool, float | None, str]:
    """Return ``(retryable, retry_after_s, short_description)`` for an exception from a call."""
    f = failure(exc)
    return f.retryable, f.retry_after, f.what
