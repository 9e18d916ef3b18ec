"""``openai/<model>``: chat completions on api.openai.com or any OpenAI-compatible server
(``openai/<model>@http://host:port/v1``), and the OpenAI Batch API."""

from __future__ import annotations

import json
import os
from typing import Any

from ..errors import MissingDependencyError, ProviderError
from ..registry import provider
from ..secrets import redact
from ..types import Request
from .base import BATCH_PENDING, BATCH_READY, BatchAPI, Completion
from .http import HTTPProvider, call_kwargs, json_body

CHAT_PATH = "/chat/completions"
BATCH_URL = "/v1/chat/completions"
BATCH_WINDOW = "24h"
SCHEMA_FORMATS = ("json_schema", "json_object")
_BATCH_CLOSED = ("failed", "expired", "cancelled")


def completion_from_chat(raw: dict[str, Any]) -> Completion:
    """The Completion of a chat-completions reply (OpenAI, OpenAI-compatible servers, llama.cpp)."""
    choices = raw.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        raise ProviderError(f"malformed chat completion (no choices): {json.dumps(raw)[:200]}", broken_body=True)
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


@provider("openai")
class OpenAIProvider(HTTPProvider, BatchAPI):
    """Chat completions on api.openai.com or any OpenAI-compatible server (``@base_url``).

    Options: ``api_key_env`` (default ``OPENAI_API_KEY``), ``timeout`` (s),
    ``schema_format`` (``"json_schema"``, default; or ``"json_object"`` for servers such as the
    llama.cpp server that take ``{"type": "json_object", "schema": ...}``).
    """

    default_concurrency = 32
    key_env = "OPENAI_API_KEY"
    accepts_base_url = True
    example = "openai/gpt-4o"
    path = CHAT_PATH

    def __init__(self, spec, **options: Any) -> None:
        super().__init__(spec, **options)
        self.schema_format = options.get("schema_format") or SCHEMA_FORMATS[0]

    @classmethod
    def key_options(cls, options: dict[str, Any], request: Request) -> dict[str, Any]:
        """``schema_format="json_object"`` changes ``response_format`` on the wire, so it is in the key."""
        if request.schema is not None:
            fmt = options.get("schema_format") or SCHEMA_FORMATS[0]
            if fmt != SCHEMA_FORMATS[0]:
                return {"schema_format": fmt}
        return {}

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

    async def acomplete(self, request: Request) -> Completion:
        if self.transport != "sdk":
            return completion_from_chat(await self.post(self.body(request)))
        if self.client is None:
            await self.open()
        chat = self.client.chat.completions
        # the raw variant skips building SDK objects: we keep the JSON as returned
        raw = await chat.with_raw_response.create(**call_kwargs(chat.create, self.body(request)))
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
