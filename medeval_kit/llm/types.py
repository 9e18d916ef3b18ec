"""Request, Response, RunStats and model-string parsing.

The cache key of a request is a SHA-256 over its canonical JSON form: provider, model, messages,
sampling parameters, schema, seed and repeat index, plus any non-default provider option that changes
the request on the wire (``schema_format``, as given or as found by ``"auto"`` for the endpoint; see
``Provider.key_options``). ``metadata`` (item ids and
the like) and the base URL of an OpenAI-compatible server are *not* part of the key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

from .errors import RequestError, UnknownModelError
from .registry import REPLAY, is_provider, provider_class, provider_names

KEY_VERSION = 1
ROLES = ("system", "user", "assistant")


# --------------------------------------------------------------------------- model strings
@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A parsed model string ``[replay/]provider/name[@base_url]``.

    Parameters
    ----------
    provider : str
        The registered provider, e.g. ``openai``.
    name : str
        The model's name at that provider.
    base_url : str, optional
        An OpenAI-compatible server's address (``...@http://host:port/v1``).
    replay : bool, default False
        Answers come from the cache only.
    """

    provider: str
    name: str
    base_url: str | None = None
    replay: bool = False

    @property
    def id(self) -> str:
        """``provider/name``: what goes into the cache key and the price table."""
        return f"{self.provider}/{self.name}"

    @property
    def endpoint(self) -> str:
        """``provider/name@base_url`` (replayed or not): what options found by probing a server belong to."""
        return f"{self.id}@{self.base_url or 'default'}"

    def __str__(self) -> str:
        s = ("replay/" if self.replay else "") + self.id
        return s + (f"@{self.base_url}" if self.base_url else "")


def parse_model(model: str) -> ModelSpec:
    """Parse a model string.

    Parameters
    ----------
    model : str
        ``<provider>/<name>`` for any registered provider (:mod:`medeval_kit.llm.registry`), e.g.
        ``local/smollm2-135m``, ``openai/gpt-4o``, ``anthropic/claude-3-5-sonnet-latest``;
        ``openai/<name>@http://host:port/v1`` (any OpenAI-compatible server) and ``replay/<provider>/<name>``
        (answers from the cache only).

    Returns
    -------
    ModelSpec
        The parsed string.

    Raises
    ------
    LLMError
        The string has no provider part or names no registered provider.

    Examples
    --------
    >>> parse_model("openai/gpt-4o-mini@http://127.0.0.1:8000/v1").base_url
    'http://127.0.0.1:8000/v1'
    """
    if not isinstance(model, str) or not model.strip():
        raise UnknownModelError(f"model must be a string such as 'openai/gpt-4o', got {model!r}")
    s = model.strip()
    replay = False
    if s.startswith(REPLAY + "/"):
        replay, s = True, s[len(REPLAY) + 1:]
    base_url = None
    for marker in ("@http://", "@https://"):
        if marker in s:
            s, rest = s.split(marker, 1)
            base_url = marker[1:] + rest
            break
    provider, _, name = s.partition("/")
    if not is_provider(provider) or not name:
        raise UnknownModelError(_unknown_model(model))
    if base_url and not provider_class(provider).accepts_base_url:
        served = [f"'{p}/...'" for p in provider_names() if provider_class(p).accepts_base_url]
        raise UnknownModelError(f"{model!r}: a base URL is only supported for {' and '.join(served)} "
                                "(OpenAI-compatible servers)")
    return ModelSpec(provider, name, base_url, replay)


def _unknown_model(model: str) -> str:
    """The message for a model string whose provider is not registered, with registered examples."""
    names = provider_names()
    examples = [f"'{provider_class(p).example}'" for p in names if provider_class(p).example]
    examples += [f"'{p}/my-model@http://127.0.0.1:8000/v1'" for p in names if provider_class(p).accepts_base_url]
    return (f"unknown model string {model!r}: write 'provider/name' with provider one of {', '.join(names)} "
            f"(e.g. {', '.join(examples)}), optionally prefixed by '{REPLAY}/'")


def _canon_float(x: float | None) -> float | None:
    return None if x is None else float(x)


# --------------------------------------------------------------------------- Request
@dataclass(frozen=True)
class Request:
    """One chat call.

    Parameters
    ----------
    messages : list of dict
        ``[{"role": "system" | "user" | "assistant", "content": str}, ...]``.
    model : str, optional
        A model string (:func:`parse_model`); ``None`` means the client's model.
    temperature : float, default 0.0
        Sampling temperature (in the cache key, like every sampling parameter).
    max_tokens : int, default 512
        The reply's token limit; also what the budget reserves for it.
    schema : dict, optional
        A JSON schema; the reply is then parsed and validated into ``Response.parsed``.
    repeat : int, default 0
        Repeat index; different repeats are different samples with different keys.
    seed : int, default 0
        Sampling seed passed to providers that take one.
    top_p : float, optional
        Nucleus sampling.
    stop : list of str, optional
        Stop sequences.
    extra : dict
        Further provider parameters (in the key), e.g. ``{"presence_penalty": 0.5}``.
    metadata : dict
        Free data carried to the Response (item ids ...); not in the cache key.
    """

    messages: list[dict[str, Any]]
    model: str | None = None
    temperature: float = 0.0
    max_tokens: int = 512
    schema: dict[str, Any] | None = None
    repeat: int = 0
    seed: int = 0
    top_p: float | None = None
    stop: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)

    __hash__ = None  # type: ignore[assignment]  # holds dicts

    def __post_init__(self) -> None:
        if not isinstance(self.messages, (list, tuple)) or not self.messages:
            raise RequestError("Request.messages must be a non-empty list of {'role', 'content'} dicts")
        for i, m in enumerate(self.messages):
            if not isinstance(m, dict) or m.get("role") not in ROLES or not isinstance(m.get("content"), str):
                raise RequestError(
                    f"Request.messages[{i}] must be {{'role': one of {ROLES}, 'content': str}}, got {m!r}"
                )
        if int(self.max_tokens) <= 0:
            raise RequestError(f"Request.max_tokens must be positive, got {self.max_tokens}")
        if int(self.repeat) < 0:
            raise RequestError(f"Request.repeat must be >= 0, got {self.repeat}")
        if self.schema is not None and not isinstance(self.schema, dict):
            raise RequestError("Request.schema must be a JSON-schema dict or None")

    def with_model(self, model: str) -> Request:
        """Return a copy with ``model`` set."""
        return dataclasses.replace(self, model=model)

    @property
    def effective_seed(self) -> int:
        """The seed sent to the provider: derived from (seed, repeat) so repeats differ."""
        return (int(self.seed) + 1_000_003 * int(self.repeat)) % (2**31 - 1)

    def canonical(self, spec: ModelSpec | None = None, wire: dict[str, Any] | None = None) -> dict[str, Any]:
        """The canonical dict that is hashed into the cache key.

        ``wire``: non-default provider options that change the request on the wire (e.g.
        ``{"schema_format": "json_object"}``); added under ``"wire"`` only when not empty, so the keys
        of requests sent in the default form are unchanged.
        """
        spec = spec or parse_model(self.model or "")
        canon = {
            "v": KEY_VERSION,
            "provider": spec.provider,
            "model": spec.name,
            "messages": [{"role": m["role"], "content": m["content"]} for m in self.messages],
            "temperature": _canon_float(self.temperature),
            "max_tokens": int(self.max_tokens),
            "top_p": _canon_float(self.top_p),
            "stop": list(self.stop) if self.stop else None,
            "seed": int(self.seed),
            "schema": self.schema,
            "repeat": int(self.repeat),
            "extra": self.extra or {},
        }
        if wire:
            canon["wire"] = dict(wire)
        return canon

    def key(self, model: str | ModelSpec | None = None, wire: dict[str, Any] | None = None) -> str:
        """Content-addressed cache key (hex SHA-256); ``wire`` as in :meth:`canonical`."""
        spec = model if isinstance(model, ModelSpec) else parse_model(model or self.model or "")
        return canonical_key(self.canonical(spec, wire))

    def preview(self, n: int = 60) -> str:
        """A one-line preview of the last message (for error lists)."""
        text = " ".join(self.messages[-1]["content"].split())
        return text if len(text) <= n else text[: n - 1] + "…"


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(obj: Any) -> str:
    return _CANONICAL.encode(obj)  # json.dumps would build this encoder at every call


def canonical_key(canon: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(canon).encode("utf-8")).hexdigest()


def key_of_json(text: str) -> str:
    """The cache key of a canonical request already written as :func:`canonical_json` text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- Response
@dataclass(slots=True)
class Response:
    """The outcome of one :class:`Request`, from a provider or the cache.

    Parameters
    ----------
    text : str or None
        The reply; ``None`` when the call failed (see ``error``), ``""`` for an empty reply.
    parsed : object
        The JSON value read from the reply when the request had a schema.
    parse_status : {"ok", "failed", "missing"}
        ``ok``: text present and, with a schema, exactly one valid JSON value in it (or several equal
        ones); ``failed``: see ``parse_error`` (not valid for the schema, ambiguous, or empty), the text
        is kept; ``missing``: no text, the call failed.
    error : str, optional
        Why the call failed.
    usage : dict of str to int
        ``prompt_tokens`` and ``completion_tokens``.
    cost_usd : float
        What the reply cost (0 from the cache).
    latency_s : float
        Seconds from sending to the reply.
    provider, model : str
        Who answered.
    key : str
        The cache key.
    cached : bool
        Whether the reply came from the cache.
    request : Request, optional
        The request answered.
    parse_error : str, optional
        Why parsing failed.
    finish_reason : str, optional
        Why generation stopped.
    response_id : str, optional
        The provider's id of the reply.
    attempts : int
        Attempts made (retries + 1).
    created_utc : str, optional
        When the reply was first received (kept in the cache).
    cache_error : str, optional
        Set when the reply was received, and paid for, but could not be written to the cache; it is
        returned all the same.
    """

    text: str | None
    parsed: Any = None
    parse_status: str = "missing"
    error: str | None = None
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    cost_usd: float = 0.0
    latency_s: float = 0.0
    provider: str = ""
    model: str = ""
    key: str = ""
    cached: bool = False
    request: Request | None = None
    parse_error: str | None = None
    finish_reason: str | None = None
    response_id: str | None = None
    attempts: int = 0
    created_utc: str | None = None
    cache_error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the call produced text (whatever the parse status)."""
        return self.error is None and self.text is not None

    def to_dict(self) -> dict[str, Any]:
        """One flat row; request metadata is merged in as columns."""
        row = dict(self.request.metadata) if self.request is not None else {}
        row.update(
            key=self.key, provider=self.provider, model=self.model,
            repeat=self.request.repeat if self.request is not None else None,
            text=self.text, parsed=self.parsed, parse_status=self.parse_status,
            parse_error=self.parse_error, error=self.error,
            prompt_tokens=self.usage.get("prompt_tokens", 0),
            completion_tokens=self.usage.get("completion_tokens", 0),
            cost_usd=self.cost_usd, latency_s=self.latency_s, cached=self.cached,
            attempts=self.attempts, finish_reason=self.finish_reason,
        )
        return row


def to_frame(responses: list[Response]):
    """Return responses as a tidy table.

    Parameters
    ----------
    responses : list of Response
        The responses of a run.

    Returns
    -------
    DataFrame
        One row per response: the request's metadata keys first, then ``key, provider, model, repeat,
        text, parsed, parse_status, parse_error, error, prompt_tokens, completion_tokens, cost_usd,
        latency_s, cached, attempts, finish_reason``.
    """
    import pandas as pd

    return pd.DataFrame([r.to_dict() for r in responses])


# --------------------------------------------------------------------------- RunStats
@dataclass(frozen=True, slots=True)
class RunStats:
    """What one ``Client.run`` did.

    Parameters
    ----------
    n : int
        Requests.
    n_cached : int
        Answered from the cache.
    n_failed : int
        Failed calls (no text).
    n_parse_failed : int
        Replies that did not parse.
    prompt_tokens, completion_tokens : int
        Tokens of the calls made.
    cost_usd : float
        What the delivered replies cost (their reported usage), plus replies that were billed but
        unusable when they still reported their usage.
    wall_s : float
        Wall time of the run.
    n_called : int
        Calls sent.
    n_retries : int
        Retries.
    n_skipped_budget : int
        Requests the budget refused.
    n_duplicates : int
        Requests identical to an earlier one in the same run (answered once).
    model : str
        The client's model.
    unconfirmed_usd : float
        The reserved (upper-bound) cost of the ``n_unconfirmed`` attempts whose reply may have been
        generated, and billed, but never arrived (a timeout after sending, a reset mid-body, a broken body).
    n_unconfirmed : int
        Those attempts.
    budget_usd : float, optional
        The budget's cap.
    budget_spent_usd, budget_unconfirmed_usd, reserved_usd : float
        The budget's state after the run, over its whole lifetime (``reserved_usd``: calls in flight of
        other clients sharing it).
    budget_note : str, optional
        Why the budget stopped sending, if it did.
    n_not_stored : int
        Replies that could not be written to the cache (see ``Response.cache_error``).
    n_from_peers : int
        Requests answered by another process that held the lease on the same request.
    """

    n: int
    n_cached: int
    n_failed: int
    n_parse_failed: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    wall_s: float
    n_called: int = 0
    n_retries: int = 0
    n_skipped_budget: int = 0
    n_duplicates: int = 0
    model: str = ""
    unconfirmed_usd: float = 0.0
    n_unconfirmed: int = 0
    budget_usd: float | None = None
    budget_spent_usd: float = 0.0
    budget_unconfirmed_usd: float = 0.0
    reserved_usd: float = 0.0
    budget_note: str | None = None
    n_not_stored: int = 0
    n_from_peers: int = 0

    def summary(self) -> str:
        cost = "unknown (no price)" if math.isnan(self.cost_usd) else f"${self.cost_usd:.4f}"
        s = (
            f"{self.model}: {self.n} requests, {self.n_cached} from cache, {self.n_called} called "
            f"({self.n_retries} retries), {self.n_failed} failed, {self.n_parse_failed} parse failures; "
            f"tokens {self.prompt_tokens} in / {self.completion_tokens} out; cost {cost}"
        )
        if self.n_unconfirmed:
            unconf = "unknown (no price)" if math.isnan(self.unconfirmed_usd) else f"${self.unconfirmed_usd:.4f}"
            s += (f" + unconfirmed {unconf} ({self.n_unconfirmed} replies lost after sending, counted at "
                  "their reserved ceiling)")
        s += f"; {self.wall_s:.2f} s"
        if self.n_from_peers:
            s += f"; {self.n_from_peers} answered by another process sharing the cache"
        if self.n_not_stored:
            s += f"; {self.n_not_stored} replies not stored in the cache (see Response.cache_error)"
        if self.budget_usd is not None:
            s += (f"; budget ${self.budget_usd:.4f}: spent ${self.budget_spent_usd:.4f}, reserved "
                  f"${self.reserved_usd:.4f}, unconfirmed ${self.budget_unconfirmed_usd:.4f}")
        if self.n_skipped_budget:
            s += f"; {self.n_skipped_budget} skipped by the budget cap"
        if self.budget_note:
            s += f" ({self.budget_note})"
        return s

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([dataclasses.asdict(self)])

    def _repr_html_(self) -> str:
        return f"<pre>{self.summary()}</pre>"
