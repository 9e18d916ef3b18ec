"""A scripted offline LLM client with the `.run(requests)` contract, for generation tests."""

from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass
class FakeResponse:
    text: str | None
    parsed: object = None
    parse_status: str = "ok"
    error: str | None = None
    cached: bool = False
    latency_s: float = 0.0
    cost_usd: float = 0.0
    parse_error: str | None = None
    request: object = None


@dataclass
class FakeClient:
    """``responder(request) -> dict | str | None``: a dict is JSON-encoded (and parsed when the
    request has a schema), a str is returned raw (parse failure if a schema is set), None = failed call."""

    responder: object
    calls: list = field(default_factory=list)

    def run(self, requests, progress=False, desc=""):
        out = []
        for r in requests:
            self.calls.append(r)
            val = self.responder(r)
            if val is None:
                out.append(FakeResponse(text=None, parse_status="missing", error="boom", request=r))
            elif isinstance(val, dict):
                txt = json.dumps(val)
                out.append(FakeResponse(text=txt, parsed=val if r.schema is not None else None, request=r))
            else:
                out.append(FakeResponse(text=str(val), parsed=None,
                                        parse_status="failed" if r.schema is not None else "ok", request=r))
        return out
