"""``openai/<model>``: chat completions on api.openai.com or any OpenAI-compatible server
(``openai/<model>@http://host:port/v1``), and the OpenAI Batch API.

A reply schema goes on the wire in one of three forms (``schema_format``): ``json_schema`` (OpenAI's
structured outputs; the default), ``json_object`` (``{"type": "json_object", "schema": ...}``: the
llama.cpp servers constrain decoding by the schema field) or ``prompt`` (no ``response_format``; the
schema is appended to the last user message). ``"auto"`` tries them in that order until the server
takes one (a refusal is an HTTP 400/422/500 naming the format, e.g. llama.cpp's Python server's
"Input should be 'text' or 'json_object'"), and keeps the one that worked for the endpoint.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from typing import Any

from ..errors import LLMError, MissingDependencyError, ProviderError
from ..registry import provider
from ..secrets import get_logger, redact
from ..types import Request
from .base import BATCH_PENDING, BATCH_READY, BatchAPI, Completion
from .failures import reported_usage
from .http import HTTPProvider, call_kwargs, json_body

log = get_logger(__name__)

CHAT_PATH = "/chat/completions"
BATCH_URL = "/v1/chat/completions"
BATCH_WINDOW = "24h"
SCHEMA_FORMATS = ("json_schema", "json_object", "prompt")  # the order "auto" tries them in
AUTO = "auto"
PROMPT_SCHEMA = "\n\nAnswer with one JSON value only, valid against this JSON schema:\n{schema}"
_BATCH_CLOSED = ("failed", "expired", "cancelled")
# A server refusing the response format it was sent: these statuses, with a body naming the format.
_FORMAT_REFUSED_STATUS = frozenset({400, 422, 500, 501})
_FORMAT_REFUSED = re.compile(r"response[_ .]?format|json[_ ]?schema|json[_ ]?object|structured output",
                             re.IGNORECASE)


def schema_format_option(options: dict[str, Any]) -> str:
    """The ``schema_format`` option (default ``json_schema``); an unknown value is an error naming the choices."""
    fmt = options.get("schema_format") or SCHEMA_FORMATS[0]
    if fmt not in SCHEMA_FORMATS + (AUTO,):
        raise LLMError(f"schema_format={fmt!r} is unknown: use one of {', '.join(SCHEMA_FORMATS + (AUTO,))}")
    return fmt


def format_refused(exc: BaseException) -> bool:
    """Whether a failed call is the server refusing the schema format it was sent (HTTP 400, 422, 500
    or 501 whose body names ``response_format``, ``json_schema`` or ``json_object``)."""
    status = getattr(exc, "status", None) or getattr(exc, "status_code", None)
    return status in _FORMAT_REFUSED_STATUS and bool(_FORMAT_REFUSED.search(str(exc)))


def schema_in_prompt(messages: list[dict[str, Any]], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """``messages`` with the schema appended to the last user message (a new user message if there is none)."""
    out = [{"role": m["role"], "content": m["content"]} for m in messages]
    note = PROMPT_SCHEMA.format(schema=json.dumps(schema, ensure_ascii=False, sort_keys=True))
    users = [i for i, m in enumerate(out) if m["role"] == "user"]
    if users:
        out[users[-1]]["content"] += note
    else:
        out.append({"role": "user", "content": note.strip()})
    return out


def completion_from_chat(raw: dict[str, Any], raw_text: str | None = None) -> Completion:
    """The Completion of a chat-completions reply (OpenAI, OpenAI-compatible servers, llama.cpp);
    ``raw_text``: the reply's body as received, when known."""
    choices = raw.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        raise ProviderError(f"malformed chat completion (no choices): {json.dumps(raw)[:200]}", broken_body=True,
                            usage=reported_usage(raw, "prompt_tokens", "completion_tokens"))
    msg = choices[0].get("message") or {}
    usage = raw.get("usage") or {}
    return Completion(
        text=msg.get("content"),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        finish_reason=choices[0].get("finish_reason"),
        response_id=raw.get("id"),
        raw=raw,
        raw_text=raw_text,
    )


@provider("openai")
class OpenAIProvider(HTTPProvider, BatchAPI):
    """Chat completions on api.openai.com or any OpenAI-compatible server (``@base_url``).

    Options: ``api_key_env`` (default ``OPENAI_API_KEY``), ``timeout`` (s), ``schema_format``
    (``"json_schema"``, default; ``"json_object"`` for servers such as the llama.cpp servers that take
    ``{"type": "json_object", "schema": ...}``; ``"prompt"``: the schema in the prompt only; or
    ``"auto"``: the first of these the endpoint takes, found by the first call with a schema and kept;
    see the module docstring).
    """

    default_concurrency = 32
    key_env = "OPENAI_API_KEY"
    accepts_base_url = True
    example = "openai/gpt-4o"
    path = CHAT_PATH
    learned_options = ("schema_format",)

    def __init__(self, spec, **options: Any) -> None:
        super().__init__(spec, **options)
        self.schema_format = schema_format_option(options)
        self.found_format: str | None = None  # what "auto" found this endpoint takes
        self.refused: set[str] = set()  # formats the endpoint refused (a probe retried skips them)
        self._probe_lock: tuple[Any, asyncio.Lock] | None = None  # (event loop, lock)

    @classmethod
    def key_options(cls, options: dict[str, Any], request: Request) -> dict[str, Any]:
        """A schema format other than ``json_schema`` changes the request on the wire, so it is in the
        key; ``"auto"`` before its finding is keyed as ``json_schema``, the format it tries first."""
        fmt = schema_format_option(options)
        if request.schema is None or fmt in (SCHEMA_FORMATS[0], AUTO):
            return {}
        return {"schema_format": fmt}

    @property
    def wire_format(self) -> str:
        """The schema format sent now: the fixed one, what "auto" found, or ``json_schema`` to try first."""
        if self.schema_format != AUTO:
            return self.schema_format
        return self.found_format or SCHEMA_FORMATS[0]

    def keyless(self) -> bool:
        return bool(self.spec.base_url)  # self-hosted servers usually need no key

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

    def body(self, request: Request, schema_format: str | None = None) -> dict[str, Any]:
        """The chat-completions body for ``request`` (also used for batch files), its schema sent in
        ``schema_format`` (default: :attr:`wire_format`)."""
        fmt = schema_format or self.wire_format
        prompted = request.schema is not None and fmt == "prompt"
        body: dict[str, Any] = {
            "model": self.spec.name,
            "messages": (schema_in_prompt(request.messages, request.schema) if prompted else
                         [{"role": m["role"], "content": m["content"]} for m in request.messages]),
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.effective_seed,
        }
        if request.top_p is not None:
            body["top_p"] = request.top_p
        if request.stop:
            body["stop"] = list(request.stop)
        if request.schema is not None and not prompted:
            if fmt == "json_object":
                body["response_format"] = {"type": "json_object", "schema": request.schema}
            else:
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "output", "schema": request.schema, "strict": False},
                }
        body.update(request.extra or {})
        return body

    async def acomplete(self, request: Request) -> Completion:
        if request.schema is None or self.schema_format != AUTO:
            if self.transport != "sdk":  # send() inlined: one coroutine less on every call's path
                raw, text = await self.post_reply(self.body(request, self.wire_format))
                return completion_from_chat(raw, text)
            return await self.send(request, self.wire_format)
        if self.found_format is None:
            async with self.probe_lock():  # one call probes; those queued behind it use its finding
                if self.found_format is None:
                    return await self.probe(request)
        c = await self.send(request, self.found_format)
        c.found = {"schema_format": self.found_format}
        return c

    async def probe(self, request: Request) -> Completion:
        """Send ``request`` in each schema format in turn until the server takes one, and keep that one.

        A refusal is an error status, so nothing was generated or billed; it is neither returned
        nor retried. Any other failure is raised as it is (the next call probes again)."""
        for fmt in SCHEMA_FORMATS:
            if fmt in self.refused:
                continue
            try:
                c = await self.send(request, fmt)
            except Exception as exc:
                if fmt == SCHEMA_FORMATS[-1] or not format_refused(exc):
                    raise
                log.info("%s: the server refused schema_format=%r, trying the next (%s)", self.spec, fmt,
                         redact(str(exc))[:200])
                self.refused.add(fmt)
                continue
            self.found_format = fmt
            c.found = {"schema_format": fmt}
            return c
        raise AssertionError("unreachable")  # pragma: no cover

    def probe_lock(self) -> asyncio.Lock:
        """The lock serialising probes, one per event loop (each ``Client.run`` has its own)."""
        loop = asyncio.get_running_loop()
        if self._probe_lock is None or self._probe_lock[0] is not loop:
            self._probe_lock = (loop, asyncio.Lock())
        return self._probe_lock[1]

    async def send(self, request: Request, schema_format: str) -> Completion:
        """One call with the schema in ``schema_format``."""
        body = self.body(request, schema_format)
        if self.transport != "sdk":
            raw, text = await self.post_reply(body)
            return completion_from_chat(raw, text)
        if self.client is None:
            await self.open()
        chat = self.client.chat.completions
        # the raw variant skips building SDK objects: we keep the JSON as returned
        raw = await chat.with_raw_response.create(**call_kwargs(chat.create, body))
        return completion_from_chat(await json_body(raw))

    # ------------------------------------------------------------------ Batch API
    def batch_submit(self, sdk: Any, items: list[tuple[str, Request]]) -> tuple[str, dict[str, Any]]:
        lines = [json.dumps({"custom_id": k, "method": "POST", "url": BATCH_URL, "body": self.body(r)},
                            ensure_ascii=False) for k, r in items]
        f = sdk.files.create(file=("medeval_batch.jsonl", ("\n".join(lines) + "\n").encode()), purpose="batch")
        b = sdk.batches.create(input_file_id=f.id, endpoint=BATCH_URL, completion_window=BATCH_WINDOW)
        return b.id, {"input_file_id": f.id}

    def batch_poll(self, sdk: Any, batch_id: str) -> tuple[str, str, dict[str, Any]]:
        info = sdk.batches.retrieve(batch_id)
        remote = info.status
        files: dict[str, Any] = {}
        if info.output_file_id:
            files["output_file_id"] = info.output_file_id
        if getattr(info, "error_file_id", None):
            files["error_file_id"] = info.error_file_id
        # an expired or cancelled batch may have finished part of its items: collect those
        if remote == "completed" or (remote in ("expired", "cancelled") and info.output_file_id):
            state = BATCH_READY
        else:
            state = remote if remote in _BATCH_CLOSED else BATCH_PENDING
        return state, remote, files

    def batch_results(self, sdk: Any, batch_id: str, detail: dict[str, Any]
                      ) -> list[tuple[str, dict[str, Any] | None, str | None]]:
        text = sdk.files.content(detail["output_file_id"]).text if detail.get("output_file_id") else ""
        out: list[tuple[str, dict[str, Any] | None, str | None]] = []
        for line in text.splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            resp = item.get("response") or {}
            if item.get("error") or resp.get("status_code") != 200:
                out.append((item["custom_id"], None, redact(json.dumps(item.get("error") or resp))[:300]))
            else:
                out.append((item["custom_id"], resp.get("body") or {}, None))
        return out

    def batch_completion(self, raw: dict[str, Any], canonical: dict[str, Any]) -> Completion:
        return completion_from_chat(raw)
