"""API keys: which ones the LLM layer knows, refusing malformed ones before any request, and
scrubbing every form of them from the text that leaves the layer.

* **Known keys** are the values of every variable the layer could read a key from: the registered
  providers' own (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``: ``Provider.key_env``), every
  ``api_key_env=`` a provider was built with in this process (both via :func:`register_key_env`) and
  any other ``*API_KEY`` variable. Values are read at the
  moment of redaction, so a key set or changed later is still covered.
* **Forms**: the value as set and stripped, ``repr``'d and bytes-``repr``'d (``\\r\\n`` as escapes),
  JSON-escaped, URL-encoded, the first 8 characters (the part APIs echo before their ``****``) and a
  masked tail (``****`` + last 4). ``sk-...`` tokens are masked whatever their origin.
* **One exit point per channel**: :func:`redact` for ``Response.error`` and batch errors, a logging
  filter on every ``medeval_kit.llm`` logger for log records (message, arguments, tracebacks), and
  :func:`scrubbed` / :func:`scrub_exception` for exceptions raised to the caller.
* :func:`check_key` refuses a key with a line break, surrounding white space, a control character or
  a non-ASCII character (an HTTP header cannot carry it, and the HTTP library would quote it in its
  error) with an error that names the variable, never the value.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
import unicodedata
import urllib.parse
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache

from .errors import LLMError, MissingKeyError, ProviderError

MIN_SECRET_LEN = 6  # shorter values ("EMPTY", "none") are not secrets and would over-redact
MASK = "***"
_SK_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9*_\-]{3,}|sk-ant-[A-Za-z0-9*_\-]{3,})")
_BEARER_PATTERN = re.compile(r"(?i)\b(bearer\s+)(?=[A-Za-z._~+/=\-]*\d)[A-Za-z0-9._~+/=\-]{8,}")

_registered: set[str] = set()
_lock = threading.Lock()


class InvalidKeyError(MissingKeyError):
    """An API key variable is set but its value cannot be sent (line break, white space, control
    character). The message names the variable, never the value."""


# --------------------------------------------------------------------------- which keys
def register_key_env(name: str | None) -> None:
    """Remember that a key may be read from the environment variable ``name`` (a provider's
    ``key_env``, or ``api_key_env=``)."""
    if name:
        with _lock:
            _registered.add(str(name))


def key_env_names(extra: Iterable[str] = ()) -> list[str]:
    """Every variable a key could come from: the registered ones (the providers'), any ``*API_KEY``."""
    names = dict.fromkeys((*sorted(_registered), *extra))
    for var in os.environ:
        if var.upper().endswith("API_KEY"):
            names.setdefault(var)
    return list(names)


def known_keys(extra_env: Iterable[str] = ()) -> tuple[str, ...]:
    """The current values of :func:`key_env_names` (only values long enough to be secrets).

    Read at every call, from a snapshot of the environment; the answer for the last snapshot is kept, so
    a call costs one comparison of the environment with that snapshot, not a scan decoding every variable.
    """
    global _memo
    extra = tuple(extra_env)
    data = getattr(os.environ, "_data", None)  # CPython's os._Environ: the encoded items, kept in sync
    if not isinstance(data, dict):
        return _keys_in(dict(os.environ), lambda k: k, lambda v: v, lambda k: k, frozenset(_registered), extra)
    with _lock:
        memo = _memo
        if memo is not None and memo[0] == data and memo[1] == _registered and memo[2] == extra:
            return memo[3]
        snap, registered = dict(data), frozenset(_registered)
    env = os.environ
    keys = _keys_in(snap, env.decodekey, env.decodevalue, env.encodekey, registered, extra)
    with _lock:
        _memo = (snap, registered, extra, keys)
    return keys


def _keys_in(snap: dict, decodekey, decodevalue, encodekey, registered: frozenset[str],
             extra: tuple[str, ...]) -> tuple[str, ...]:
    """:func:`known_keys` of the environment snapshot ``snap`` (as ``os.environ`` keeps it)."""
    names = dict.fromkeys((*sorted(registered), *extra))
    for k in snap:
        var = decodekey(k)
        if var.upper().endswith("API_KEY"):
            names.setdefault(var)
    vals = []
    for var in names:
        raw = snap.get(encodekey(var))
        v = decodevalue(raw) if raw is not None else None
        if v and len(v.strip()) >= MIN_SECRET_LEN:
            vals.append(v)
    return tuple(sorted(set(vals)))


_memo: tuple[dict, frozenset[str], tuple[str, ...], tuple[str, ...]] | None = None  # (env, registered, extra, keys)


# --------------------------------------------------------------------------- refusing bad keys
def key_problem(value: str) -> str | None:
    """What makes ``value`` unusable as a key in an HTTP header, without quoting it; None if fine."""
    n = len(value)
    for i, ch in enumerate(value):
        if ch in "\r\n\u2028\u2029\x85":
            where = "ends with" if not value[i:].strip() else "contains"
            hint = " (\\r\\n: a .env file saved on Windows?)" if "\r" in value else ""
            return f"{where} a line break{hint} at character {i + 1} of {n}"
    if value != value.strip():
        return "starts or ends with white space"
    for i, ch in enumerate(value):
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            return f"contains a control character (U+{ord(ch):04X}) at character {i + 1} of {n}"
        if ch.isspace():
            return f"contains white space (U+{ord(ch):04X}) at character {i + 1} of {n}"
        if not ch.isascii():
            return f"contains a non-ASCII character (U+{ord(ch):04X}) at character {i + 1} of {n}"
    return None


def check_key(value: str, var: str) -> str:
    """Return ``value`` if it can be sent as a key; else raise :class:`InvalidKeyError` naming ``var``."""
    problem = key_problem(value)
    if problem is not None:
        raise InvalidKeyError(
            f"the API key in the environment variable {var} {problem}: an HTTP header cannot carry it, so "
            f"nothing was sent. Fix the variable (or the .env file it is loaded from; save it with Unix "
            f"line endings). The value is not shown."
        )
    return value


# --------------------------------------------------------------------------- redaction
def _forms(value: str) -> set[str]:
    out: set[str] = set()
    for v in {value, value.strip()}:
        if len(v) < MIN_SECRET_LEN:
            continue
        out |= {v, repr(v)[1:-1], json.dumps(v)[1:-1], json.dumps(v, ensure_ascii=False)[1:-1],
                repr(v.encode("utf-8", "backslashreplace"))[2:-1], urllib.parse.quote(v, safe=""),
                urllib.parse.quote_plus(v)}
    core = value.strip()
    if len(core) >= 16:  # what APIs echo of a key: its first 8 characters, then ****
        out.add(core[:8])
    return {f for f in out if len(f) >= MIN_SECRET_LEN}


@lru_cache(maxsize=64)
def _patterns(values: tuple[str, ...]):
    """``(forms, regex of the forms, tails, regex of masked tails)``; the plain forms allow a fast
    ``in`` pre-check, so text without any key costs a few substring searches."""
    forms: set[str] = set()
    tails: set[str] = set()
    for v in values:
        forms |= _forms(v)
        for f in _forms(v) | {v}:
            if len(f) >= 12:
                tails.add(f[-4:])
    full = re.compile("|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))) if forms else None
    # a masked echo "abcd1234****wxyz": drop the visible tail after the mask
    tail = (re.compile(r"(\*{3,}|…|\.{3,})(?:" + "|".join(re.escape(t) for t in sorted(tails, key=len, reverse=True))
                       + ")") if tails else None)
    return tuple(forms), full, tuple(tails), tail


def redact(text: str | None, extra_env: Sequence[str] = (), keys: Iterable[str] = (), *,
           patterns: bool = True, known: tuple[str, ...] | None = None) -> str | None:
    """``text`` with every form of every known key replaced by ``***``; with ``patterns`` (error
    text, logs) also ``sk-...`` tokens and ``Bearer <token>`` whatever their origin. ``known``: what
    :func:`known_keys` (with ``extra_env``) returned just now, for a caller redacting several texts."""
    if not text:
        return text
    values = known_keys(extra_env) if known is None else known
    extra = tuple(k for k in keys if k and len(k.strip()) >= MIN_SECRET_LEN) if keys else ()
    # known_keys gives a sorted tuple of distinct values: the patterns' cache key as it is
    forms, full, tails, tail = _patterns(tuple(sorted(set(values + extra))) if extra else values)
    if full is not None:
        for f in forms:
            if f in text:
                text = full.sub(MASK, text)
                break
    if tail is not None:
        for t in tails:
            if t in text:
                text = tail.sub(r"\1", text)
                break
    if not patterns:
        return text
    text = _BEARER_PATTERN.sub(r"\1" + MASK, text)
    return _SK_PATTERN.sub("sk-" + MASK, text)


def contains_secret(text: str | None, *, patterns: bool = True) -> bool:
    """True when :func:`redact` would change ``text``."""
    return bool(text) and redact(text, patterns=patterns) != text


def redact_json(obj, *, known: tuple[str, ...] | None = None) -> str | None:
    """``obj`` as JSON text (as the cache stores it) without any known key value. Model output is
    left as it is unless it holds the value of a known key (no ``sk-`` pattern is applied). ``known``
    as for :func:`redact`."""
    if obj is None:
        return None
    s = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False, default=str)
    red = redact(s, patterns=False, known=known)
    if red == s:
        return s
    try:
        json.loads(red)
        return red
    except ValueError:
        return json.dumps({"redacted": "this provider response held an API key and was not stored"})


# --------------------------------------------------------------------------- exceptions
def _exception_texts(exc: BaseException) -> Iterator[str]:
    seen: set[int] = set()
    e: BaseException | None = exc
    stack = [exc]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield str(e)
        yield repr(e)
        for attr in ("message", "body"):
            v = getattr(e, attr, None)
            if v is not None:
                yield v if isinstance(v, str) else repr(v)
        stack += [e.__cause__, e.__context__]


def scrub_exception(exc: BaseException) -> BaseException:
    """``exc`` itself when no text of it (or of its causes) holds a key; otherwise an exception whose
    message is redacted and which carries no chain (our own error classes keep their class, others
    become :class:`ProviderError` named after the original class)."""
    if not any(contains_secret(t) for t in _exception_texts(exc)):
        return exc
    if isinstance(exc, LLMError):
        exc.args = (redact(str(exc)),)
        new: BaseException = exc
    else:
        new = ProviderError(redact(f"{type(exc).__name__}: {exc}") or type(exc).__name__, retryable=False,
                            status=getattr(exc, "status_code", None))
    new.__cause__ = None
    new.__context__ = None
    new.__suppress_context__ = True
    return new


@contextlib.contextmanager
def scrubbed() -> Iterator[None]:
    """Re-raise any exception from the block with every key removed (see :func:`scrub_exception`)."""
    try:
        yield
    except Exception as exc:
        new = scrub_exception(exc)
        if new is exc:
            raise
        raise new from None


def scrub_errors(fn):
    """Decorator: :func:`scrubbed` around every call of ``fn``."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with scrubbed():
            return fn(*args, **kwargs)

    return wrapper


# --------------------------------------------------------------------------- logging
class RedactingFilter(logging.Filter):
    """Redacts a record's message (after %-formatting), traceback and stack text in place."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # a broken format string: let logging report it as usual
            return True
        red = redact(msg)
        if red != msg:
            record.msg, record.args = red, None
        if record.exc_info:
            text = logging.Formatter().formatException(record.exc_info)
            red = redact(text)
            if red != text:
                record.exc_text, record.exc_info = red, None
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


LOG_FILTER = RedactingFilter()
# Loggers that may carry text of the LLM layer: every module's (see get_logger) and their packages'.
LLM_LOGGERS = ("medeval_kit.llm", "medeval_kit.llm.execute", "medeval_kit.llm.calls", "medeval_kit.llm.budget",
               "medeval_kit.llm.leases", "medeval_kit.llm.providers", "medeval_kit.llm.batch",
               "medeval_kit.llm.cache", "medeval_kit.llm.cost", "medeval_kit.llm.parse", "medeval_kit.llm.types",
               "medeval_kit.llm.secrets")


def get_logger(name: str) -> logging.Logger:
    """Return the logger ``name`` with :data:`LOG_FILTER` attached (a logger's filters see only the
    records created on it, so each module of the layer takes its logger from here)."""
    lg = logging.getLogger(name)
    if LOG_FILTER not in lg.filters:
        lg.addFilter(LOG_FILTER)
    return lg


def install_log_filter() -> None:
    """Attach :data:`LOG_FILTER` to every ``medeval_kit.llm`` logger that exists or is listed."""
    names = set(LLM_LOGGERS) | {n for n in list(logging.Logger.manager.loggerDict) if n.startswith("medeval_kit.llm")}
    for name in names:
        get_logger(name)


install_log_filter()
