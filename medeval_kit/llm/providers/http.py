"""What the HTTP providers share: the API key from the environment, pooled ``httpx2`` clients on the
hot path (or the official SDK with ``transport="sdk"``), and reading JSON bodies and error replies."""

from __future__ import annotations

import codecs
import inspect
import json
import os
import threading
from typing import Any

from ..errors import MissingKeyError, ProviderError
from ..secrets import check_key, redact, register_key_env, scrubbed
from ..types import ModelSpec
from .base import Provider
from .failures import retry_after_from_headers, status_retryable

_SIGS: dict[Any, frozenset[str]] = {}
_SSL: dict[tuple[str | None, str | None], Any] = {}
_SSL_LOCK = threading.Lock()
POOL_SIZE = 16  # calls in flight per httpx2 pool (see HTTPProvider.pools)
MIN_POOLS = 4


def ssl_context() -> Any:
    """The TLS context of httpx2's default verification (``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured), built
    once per process and setting: building one reads the CA store (tens of ms), which every new
    ``httpx2.AsyncClient`` would otherwise do, once per pool and per run."""
    import httpx2

    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    with _SSL_LOCK:
        if key not in _SSL:
            _SSL[key] = httpx2.create_ssl_context()
        return _SSL[key]


def call_kwargs(fn: Any, body: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments for an SDK method: fields it does not name go through ``extra_body``
    (e.g. ``temperature`` for SDK versions that dropped it from their signature)."""
    key = getattr(fn, "__func__", fn)
    if key not in _SIGS:
        _SIGS[key] = frozenset(inspect.signature(fn).parameters)
    names = _SIGS[key]
    kw = {k: v for k, v in body.items() if k in names}
    extra = {k: v for k, v in body.items() if k not in names}
    if extra:
        kw["extra_body"] = extra
    return kw


async def json_body(raw: Any) -> dict[str, Any]:
    """The JSON body of an SDK raw response; a body that is not a JSON object is a retryable error."""
    content = getattr(raw, "content", None)
    if content is None:  # anthropic's AsyncAPIResponse reads lazily
        content = await raw.read()
    return read_json(content)[0]


def read_json(content: bytes) -> tuple[dict[str, Any], str | None]:
    """The JSON object of a reply body, and the body as text when it is plain UTF-8 (else None); a body
    that is not a JSON object is a retryable error (:class:`ProviderError` with ``broken_body``)."""
    text = None
    if not content.startswith(codecs.BOM_UTF8):
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:  # json.loads below says what is wrong, or reads UTF-16/32
            pass
    try:
        data = json.loads(text if text is not None else content)  # bytes: invalid UTF-8 is a ValueError
    except ValueError as exc:
        raise ProviderError(f"malformed JSON body from provider: {exc}", broken_body=True) from exc
    if not isinstance(data, dict):
        raise ProviderError(f"malformed body from provider: {str(data)[:200]!r}", broken_body=True)
    return data, text


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
    the CPU per call of going through the SDK objects; ``transport="sdk"`` uses the SDK instead.

    Options: ``api_key_env`` (default: the class's ``key_env``), ``timeout`` (s, 60), ``transport``
    (``"http"`` or ``"sdk"``), ``n_pools`` (httpx2 pools, round-robin; default one per 16 calls in flight,
    at least 4: see :meth:`pools`).
    """

    path = ""

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        super().__init__(spec, **options)
        self.transport = options.get("transport") or "http"
        self.n_pools = int(options["n_pools"]) if options.get("n_pools") else None
        self.concurrency: int | None = None  # the run's concurrency slots for this provider (set by the run)
        self.http: list[Any] | None = None
        self.url: Any = None  # base_url() + path, as an httpx2.URL
        self._next = 0
        self.api_key_env = options.get("api_key_env") or self.key_env
        register_key_env(self.api_key_env)  # its value is redacted from every error and log
        self.timeout = float(options.get("timeout") or 60.0)
        self.client = None

    def base_url(self) -> str:  # pragma: no cover - abstract
        """Return the URL the ``path`` of each call is relative to."""
        raise NotImplementedError

    def headers(self) -> dict[str, str]:  # pragma: no cover - abstract
        """Return the headers of every call (the key among them)."""
        raise NotImplementedError

    def make_client(self, sync: bool = False) -> Any:  # pragma: no cover - abstract
        """Return the provider's SDK client (synchronous with ``sync``)."""
        raise NotImplementedError

    def keyless(self) -> bool:
        """Whether a missing key is fine (self-hosted servers usually need none)."""
        return False

    def _api_key(self) -> str:
        key = os.environ.get(self.api_key_env)
        if key:
            return check_key(key, self.api_key_env)  # a CR/LF or control character: refused, unsent
        if self.keyless():
            return "EMPTY"
        raise MissingKeyError(
            f"no API key for {self.spec}: set the environment variable {self.api_key_env} "
            f"(keys are read from the environment only), or use 'replay/{self.spec.id}' to answer from the cache"
        )

    def pools(self) -> int:
        """How many httpx2 pools to spread the calls over: ``n_pools`` when given, else one per
        :data:`POOL_SIZE` calls in flight (at least 4). httpcore scans every pooled connection on each
        request, so its CPU per call grows with the connections of a pool: at 256 in flight, one pool costs
        about 2.5x the CPU per call of 16 pools of 16."""
        if self.n_pools:
            return max(1, self.n_pools)
        return max(MIN_POOLS, -(-(self.concurrency or 0) // POOL_SIZE))

    async def open(self) -> None:
        with scrubbed():  # the key is checked here, before any request; no error quotes it
            if self.transport == "sdk":
                self.client = self.make_client()
                return
            import httpx2

            # several small pools (see pools()), sharing one TLS context
            verify, base = ssl_context(), self.base_url().rstrip("/")
            self.http = [httpx2.AsyncClient(
                base_url=base, headers=self.headers(), timeout=self.timeout, verify=verify,
                limits=httpx2.Limits(max_connections=1024, max_keepalive_connections=1024))
                for _ in range(self.pools())]
            self.url = httpx2.URL(base + self.path)  # absolute: httpx2 parses and merges a relative one per call
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
        """POST ``body`` to ``path``; return the JSON reply or raise ProviderError with the status."""
        return (await self.post_reply(body))[0]

    async def post_reply(self, body: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """:meth:`post`, with the reply's text as received (see :func:`read_json`)."""
        if self.http is None:
            await self.open()
        self._next = (self._next + 1) % len(self.http)
        resp = await self.http[self._next].post(self.url, json=body)
        status = resp.status_code
        if status >= 400:
            raise ProviderError(redact(f"HTTP {status}: {_error_text(resp)}"),  # servers may echo the key
                                retryable=status_retryable(status, _error_text(resp)),
                                retry_after=retry_after_from_headers(resp.headers), status=status)
        return read_json(resp.content)
