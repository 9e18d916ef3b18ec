"""``anthropic/<model>``: Anthropic messages (a schema becomes a forced tool call) and Message Batches."""

from __future__ import annotations

import json
import os
from typing import Any

from ..errors import ProviderError
from ..registry import provider
from ..secrets import redact
from ..types import Request
from .base import BATCH_PENDING, BATCH_READY, BatchAPI, Completion
from .failures import reported_usage
from .http import HTTPProvider, call_kwargs, json_body

TOOL_NAME = "respond"
API_VERSION = "2023-06-01"


def completion_from_message(raw: dict[str, Any], structured: bool) -> Completion:
    """The Completion of an Anthropic message; with ``structured`` the forced tool call's input is the text."""
    content = raw.get("content")
    if not isinstance(content, list):
        raise ProviderError(f"malformed Anthropic message (no content): {json.dumps(raw)[:200]}", broken_body=True,
                            usage=reported_usage(raw, "input_tokens", "output_tokens"))
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


@provider("anthropic")
class AnthropicProvider(HTTPProvider, BatchAPI):
    """Anthropic messages; a schema becomes a forced tool call whose input is the answer.

    Options: ``api_key_env`` (default ``ANTHROPIC_API_KEY``), ``timeout`` (s), ``base_url``.
    """

    default_concurrency = 16
    key_env = "ANTHROPIC_API_KEY"
    example = "anthropic/claude-3-5-sonnet-latest"
    path = "/v1/messages"
    api_version = API_VERSION

    def __init__(self, spec, **options: Any) -> None:
        super().__init__(spec, **options)
        self.base_url_option = options.get("base_url")

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
        """The messages body for ``request`` (also used for batch items)."""
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

    async def acomplete(self, request: Request) -> Completion:
        structured = request.schema is not None
        if self.transport != "sdk":
            raw, text = await self.post_reply(self.body(request))
            c = completion_from_message(raw, structured)
            c.raw_text = text
            return c
        if self.client is None:
            await self.open()
        msgs = self.client.messages
        raw = await msgs.with_raw_response.create(**call_kwargs(msgs.create, self.body(request)))
        return completion_from_message(await json_body(raw), structured)

    # ------------------------------------------------------------------ Message Batches
    def batch_submit(self, sdk: Any, items: list[tuple[str, Request]]) -> tuple[str, dict[str, Any]]:
        b = sdk.messages.batches.create(requests=[{"custom_id": k, "params": self.body(r)} for k, r in items])
        return b.id, {}

    def batch_poll(self, sdk: Any, batch_id: str) -> tuple[str, str, dict[str, Any]]:
        remote = sdk.messages.batches.retrieve(batch_id).processing_status
        return (BATCH_READY if remote == "ended" else BATCH_PENDING), remote, {}

    def batch_results(self, sdk: Any, batch_id: str, detail: dict[str, Any]
                      ) -> list[tuple[str, dict[str, Any] | None, str | None]]:
        out: list[tuple[str, dict[str, Any] | None, str | None]] = []
        for item in sdk.messages.batches.results(batch_id):
            d = item.model_dump(mode="json") if hasattr(item, "model_dump") else dict(item)
            res = d.get("result") or {}
            if res.get("type") == "succeeded":
                out.append((d["custom_id"], res.get("message") or {}, None))
            else:
                out.append((d["custom_id"], None, redact(json.dumps(res))[:300]))
        return out

    def batch_completion(self, raw: dict[str, Any], canonical: dict[str, Any]) -> Completion:
        return completion_from_message(raw, canonical.get("schema") is not None)
