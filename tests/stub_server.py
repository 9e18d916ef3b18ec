"""A stdlib stub of the OpenAI and Anthropic HTTP APIs, on 127.0.0.1 only, for tests and benchmarks.

Speaks enough of: OpenAI chat completions, files (upload + content) and batches; Anthropic
messages and message batches. Replies are deterministic functions of the request body; when the
request carries a JSON schema (``response_format`` or a forced tool) the reply is an instance of
that schema. A user message containing ``[[bad-json]]`` gets a reply that is not JSON.

It can be told to fail (per completion attempt, seeded): ``p429`` (with ``Retry-After``), ``p500``,
``ptimeout`` (sleeps ``timeout_sleep`` s, then drops the connection), ``pmalformed`` (200 with a
body that is not JSON), ``ptruncated`` (a body shorter than its Content-Length), ``p400`` and
``p401`` (echoes a masked key, as the real APIs do). A script of
forced faults can be queued with :meth:`StubServer.queue`; the script also knows ``"401full"`` (a 401
that echoes the whole key, as some servers do) and ``"empty"`` (a 200 whose reply has no content:
OpenAI ``content: null`` with a refusal, an empty Anthropic content list) and ``"nochoices"`` (a 200 that
reports its usage but has no choices / no content: billed, unusable). With ``fault_batches=True``
the script also applies to batch submissions (file upload, batch create). Failed attempts are never counted as
successes: ``server.successes`` counts successful completions per distinct request body.

More faults for the retry and budget tests: ``p403``/``p404``/``p422``, ``p500invalid`` (a 500 whose
body says the request is invalid, like llama.cpp's "Input should be 'text' or 'json_object'"),
``pbadutf8`` (a 200 whose body is not UTF-8) and ``preset`` (the reply is generated, then the
connection is reset half way through the body). Billing: every reply the server generated is
recorded in ``state.billed`` as ``(model, prompt_tokens, completion_tokens, delivered)``, including
replies lost to a timeout, a reset or a broken body (providers bill those too). ``usage="bytes"``
reports adversarial token counts (prompt tokens = UTF-8 bytes of every message, the most a
byte-level BPE tokenizer can emit; completion tokens = ``max_tokens``); ``usage_scale`` multiplies
the reported usage (a server that over-reports). ``refuse_formats`` (e.g. ``("json_schema",)``) makes
the server refuse those ``response_format`` types as servers without them do (``json_schema``: the
llama.cpp Python server's HTTP 500 "Input should be 'text' or 'json_object'"; others: an HTTP 400);
``state.formats`` counts chat attempts per ``response_format`` type (``"none"`` without one). Without
a ``response_format``, a prompt whose last line is a JSON schema is answered with an instance of it.

Use in tests::

    with StubServer(latency=0.01) as srv:
        client = get_client(f"openai/gpt-4o@{srv.openai_url}")

or as a process: ``python tests/stub_server.py --port 0 --latency 0.1`` prints ``READY <url>``;
``GET /_stats`` returns the counters as JSON. ``--asyncio`` runs a lean asyncio server (chat and
messages only, no faults) for throughput benchmarks, where a thread per connection would be the bottleneck;
``--asyncio --workers N`` runs it in N processes on one port (``SO_REUSEPORT``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import threading
import time
from collections import Counter, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULTS = ("429", "500", "timeout", "malformed", "truncated", "400", "401", "403", "404", "422", "500invalid",
          "badutf8", "reset")
BILLED_FAULTS = ("timeout", "malformed", "truncated", "badutf8", "reset")  # generated, then lost


def body_key(body: dict[str, Any]) -> str:
    """Identity of a request body (what 'the same request' means to the server)."""
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def instance_of(schema: dict[str, Any], h: int, defs: dict[str, Any] | None = None) -> Any:
    """A deterministic value that satisfies a (simple) JSON schema; ``h`` picks among choices."""
    defs = defs if defs is not None else (schema.get("$defs") or schema.get("definitions") or {})
    if "$ref" in schema:
        return instance_of(defs.get(schema["$ref"].split("/")[-1], {}), h, defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][h % len(schema["enum"])]
    for k in ("anyOf", "oneOf", "allOf"):
        if k in schema:
            return instance_of(schema[k][0], h, defs)
    t = schema.get("type", "object")
    if isinstance(t, list):
        t = [x for x in t if x != "null"][0] if any(x != "null" for x in t) else "null"
    if t == "object":
        props = schema.get("properties", {})
        return {name: instance_of(sub, h >> (3 * (i + 1)) if h else 0, defs) for i, (name, sub) in enumerate(props.items())}
    if t == "array":
        n = max(int(schema.get("minItems", 1)), 1)
        return [instance_of(schema.get("items", {}), h + i, defs) for i in range(n)]
    if t == "integer":
        lo, hi = int(schema.get("minimum", 0)), int(schema.get("maximum", 9))
        return lo + h % (hi - lo + 1)
    if t == "number":
        lo, hi = float(schema.get("minimum", 0)), float(schema.get("maximum", 1))
        return lo + (hi - lo) * ((h % 100) / 100.0)
    if t == "boolean":
        return bool(h % 2)
    if t == "null":
        return None
    return f"stub-{h % 10007}"


def _last_user(messages: list[dict[str, Any]]) -> str:
    for m in reversed(messages or []):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def reply_text(body: dict[str, Any], schema: dict[str, Any] | None, key: str | None = None) -> str:
    k = key or body_key(body)
    h = int(k[:12], 16)
    if "[[bad-json]]" in _last_user(body.get("messages", [])):
        return "Sorry, I think the answer is probably A." if schema is not None else "plain text"
    if schema is not None:
        return json.dumps(instance_of(schema, h))
    return f"stub reply {k[:8]}"


def schema_at_end(text: str) -> dict[str, Any] | None:
    """The JSON schema a prompt ends with (its last line), as a capable model would follow it; else None."""
    try:
        value = json.loads(text.rstrip().rsplit("\n", 1)[-1])
    except ValueError:
        return None
    return value if isinstance(value, dict) and ("type" in value or "properties" in value) else None


def openai_completion(body: dict[str, Any]) -> dict[str, Any]:
    rf = body.get("response_format") or {}
    schema = None
    if rf.get("type") == "json_schema":
        schema = (rf.get("json_schema") or {}).get("schema") or {}
    elif rf.get("type") == "json_object":
        schema = rf.get("schema") or {}
    elif not rf:
        schema = schema_at_end(_last_user(body.get("messages", [])))
    k = body_key(body)
    text = reply_text(body, schema, k)
    ptok = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", [])) + 3
    return {
        "id": "chatcmpl-" + k[:16], "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", "stub"),
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": text, "refusal": None}}],
        "usage": {"prompt_tokens": ptok, "completion_tokens": len(text.split()) + 1,
                  "total_tokens": ptok + len(text.split()) + 1},
    }


def anthropic_message(body: dict[str, Any]) -> dict[str, Any]:
    tools = body.get("tools") or []
    choice = body.get("tool_choice") or {}
    ptok = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", [])) + 3
    if tools and choice.get("type") == "tool":
        tool = next((t for t in tools if t.get("name") == choice.get("name")), tools[0])
        text = reply_text(body, tool.get("input_schema") or {})
        try:
            value = json.loads(text)
            content = [{"type": "tool_use", "id": "toolu_" + body_key(body)[:12], "name": tool["name"],
                        "input": value}]
            stop = "tool_use"
        except ValueError:
            content, stop = [{"type": "text", "text": text}], "end_turn"
    else:
        text = reply_text(body, None)
        content, stop = [{"type": "text", "text": text}], "end_turn"
    return {
        "id": "msg_" + body_key(body)[:16], "type": "message", "role": "assistant",
        "model": body.get("model", "stub"), "content": content, "stop_reason": stop,
        "stop_sequence": None, "usage": {"input_tokens": ptok, "output_tokens": len(text.split()) + 1},
    }


def _message_bytes(body: dict[str, Any]) -> int:
    """UTF-8 bytes of every message (and the system prompt): the most prompt tokens a byte-level
    BPE tokenizer can emit for them."""
    n = len(str(body.get("system") or "").encode())
    for m in body.get("messages", []):
        c = m.get("content")
        n += len((c if isinstance(c, str) else json.dumps(c)).encode())
    return n


def _parse_multipart(ctype: str, data: bytes) -> dict[str, bytes]:
    boundary = ctype.split("boundary=", 1)[1].strip().strip('"').encode()
    out: dict[str, bytes] = {}
    for part in data.split(b"--" + boundary):
        if b"\r\n\r\n" not in part:
            continue
        head, content = part.split(b"\r\n\r\n", 1)
        if content.endswith(b"\r\n"):
            content = content[:-2]
        for token in head.decode("latin-1").split(";"):
            token = token.strip()
            if token.startswith("name="):
                out[token[5:].strip('"')] = content
                break
    return out


class StubState:
    """Settings, counters and stored files/batches, shared by the handler threads."""

    def __init__(self, *, latency: float = 0.0, p429: float = 0.0, p500: float = 0.0, ptimeout: float = 0.0,
                 pmalformed: float = 0.0, ptruncated: float = 0.0, p400: float = 0.0, p401: float = 0.0,
                 p403: float = 0.0, p404: float = 0.0, p422: float = 0.0, p500invalid: float = 0.0,
                 pbadutf8: float = 0.0, preset: float = 0.0, usage: str = "words", usage_scale: float = 1.0,
                 retry_after: float = 0.0,
                 timeout_sleep: float = 2.0, batch_polls: int = 1, batch_error_ids: set[str] | None = None,
                 batch_error_echo_key: bool = False, fault_batches: bool = False,
                 batch_empty_ids: set[str] | None = None, refuse_formats: tuple[str, ...] = (),
                 seed: int = 0) -> None:
        self.latency, self.retry_after, self.timeout_sleep = latency, retry_after, timeout_sleep
        self.rates = {"429": p429, "500": p500, "timeout": ptimeout, "malformed": pmalformed,
                      "truncated": ptruncated, "400": p400, "401": p401, "403": p403, "404": p404, "422": p422,
                      "500invalid": p500invalid, "badutf8": pbadutf8, "reset": preset}
        self.usage, self.usage_scale = usage, usage_scale  # reported usage (see the module docstring)
        self.billed: list[tuple[str, int, int, bool]] = []  # (model, prompt, completion, delivered)
        self.batch_polls = batch_polls
        self.batch_error_ids = set(batch_error_ids or ())
        self.batch_error_echo_key = batch_error_echo_key  # batch item errors quote the caller's key
        self.fault_batches = fault_batches  # the queued script also applies to batch submissions
        self.batch_empty_ids = set(batch_empty_ids or ())  # batch items answered with no content
        self.refuse_formats = set(refuse_formats)  # response_format types answered with an error
        self.formats: Counter[str] = Counter()  # chat attempts per response_format type ("none": without)
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.script: deque[str] = deque()
        self.successes: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.attempts = 0
        self.auth_seen: list[str] = []
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_polls_seen: Counter[str] = Counter()
        self.batch_creates = 0

    def draw_fault(self) -> str | None:
        with self.lock:
            self.attempts += 1
            if self.script:
                f = self.script.popleft()
                return None if f in ("ok", None) else f
            u = self.rng.random()
            acc = 0.0
            for f in FAULTS:
                acc += self.rates[f]
                if u < acc:
                    return f
            return None

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {"attempts": self.attempts, "successes": sum(self.successes.values()),
                    "billed": len(self.billed), "billed_lost": sum(1 for b in self.billed if not b[3]),
                    "distinct_successes": len(self.successes),
                    "max_per_request": max(self.successes.values(), default=0),
                    "faults": dict(self.faults), "batch_creates": self.batch_creates}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: StubState  # set on the subclass made per server

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    # ---------------------------------------------------------------- plumbing
    def _send(self, obj: Any, code: int = 200, headers: dict[str, str] | None = None,
              raw: bytes | None = None, ctype: str = "application/json") -> None:
        b = raw if raw is not None else json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(b)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(b)

    def _error(self, code: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._send({"error": {"message": message, "type": "stub_error", "code": code},
                    "type": "error"}, code, headers)

    def _body(self) -> bytes:
        n = int(self.headers.get("content-length") or 0)
        return self.rfile.read(n) if n else b""

    def _base(self) -> str:
        return f"http://{self.server.server_address[0]}:{self.server.server_address[1]}"

    def _fault(self, path: str = "", body: dict[str, Any] | None = None) -> bool:
        """Apply an injected fault; True when the request was answered with one."""
        st = self.state
        f = st.draw_fault()
        self.empty_reply = f == "empty"
        if f is None:
            return False
        with st.lock:
            st.faults[f] += 1
        if f in BILLED_FAULTS and body is not None:  # generated (and billed), then lost on the way
            self._bill(self._reply(path, body), delivered=False)
        if f == "429":
            self._error(429, "rate limited (stub)", {"retry-after": f"{st.retry_after:g}"})
        elif f == "500":
            self._error(500, "internal error (stub)")
        elif f == "400":
            self._error(400, "invalid request (stub)")
        elif f in ("403", "404", "422"):
            self._error(int(f), f"request refused (stub {f})")
        elif f == "500invalid":  # llama_cpp.server answers a bad response_format like this
            self._error(500, "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n"
                             "  Input should be 'text' or 'json_object' [type=literal_error, input_value='json_schema']")
        elif f == "badutf8":
            self._send(None, 200, raw=b'{"id": "x", "choices": [{"message": {"content": "\xff\xfe bad"}}]}')
        elif f == "reset":  # the whole reply was generated; the connection dies half way through the body
            b = json.dumps(self._reply(path, body or {})).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(b)))
            self.end_headers()
            self.wfile.write(b[: len(b) // 2])
            self.wfile.flush()
            self.close_connection = True
        elif f == "401":  # like the real APIs, echo a partly masked key
            key = (self.headers.get("authorization") or "").replace("Bearer ", "") or self.headers.get("x-api-key", "")
            self._error(401, f"Incorrect API key provided: {key[:8]}****{key[-4:]}")
        elif f == "401full":  # some servers echo the whole key
            key = (self.headers.get("authorization") or "").replace("Bearer ", "") or self.headers.get("x-api-key", "")
            self._error(401, f"Incorrect API key provided: {key}")
        elif f == "empty":
            return False  # answered by the route with an empty reply
        elif f == "nochoices":  # a 200 that reports its usage but has no choices / content: billed, unusable
            reply = self._reply(path, body or {})
            self._bill(reply, delivered=False)
            if "choices" in reply:
                reply["choices"] = []
            else:
                reply["content"] = None
            self._send(reply)
        elif f == "timeout":
            time.sleep(st.timeout_sleep)
            self.close_connection = True
        elif f == "malformed":
            self._send(None, 200, raw=b'{"id": "x", "choices": [ this is not json')
        elif f == "truncated":
            b = json.dumps({"id": "x", "object": "chat.completion", "choices": []}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(b) + 100))
            self.end_headers()
            self.wfile.write(b[: len(b) // 2])
            self.wfile.flush()
            self.close_connection = True
        return True

    def _reply(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The reply for ``body``, with the usage the server reports (see ``usage``, ``usage_scale``)."""
        st = self.state
        reply = openai_completion(body) if path.endswith("/chat/completions") else anthropic_message(body)
        names = ("prompt_tokens", "completion_tokens") if "choices" in reply else ("input_tokens", "output_tokens")
        u = reply["usage"]
        if st.usage == "bytes":
            u[names[0]] = _message_bytes(body)
            u[names[1]] = int(body.get("max_tokens") or 16)
        if st.usage_scale != 1.0:
            u[names[0]] = int(round(u[names[0]] * st.usage_scale))
            u[names[1]] = int(round(u[names[1]] * st.usage_scale))
        if "total_tokens" in u:
            u["total_tokens"] = u[names[0]] + u[names[1]]
        return reply

    def _bill(self, reply: dict[str, Any], delivered: bool) -> None:
        u = reply["usage"]
        pt = u.get("prompt_tokens", u.get("input_tokens", 0))
        ct = u.get("completion_tokens", u.get("output_tokens", 0))
        with self.state.lock:
            self.state.billed.append((reply.get("model", ""), pt, ct, delivered))

    def _count(self, body: dict[str, Any]) -> None:
        with self.state.lock:
            self.state.successes[body_key(body)] += 1

    # ---------------------------------------------------------------- routes
    def do_GET(self) -> None:  # noqa: N802
        st, path = self.state, self.path.split("?")[0]
        if path == "/_stats":
            return self._send(st.stats())
        if path.startswith("/v1/files/") and path.endswith("/content"):
            fid = path.split("/")[3]
            if fid not in st.files:
                return self._error(404, f"no file {fid}")
            return self._send(None, raw=st.files[fid], ctype="application/octet-stream")
        if path.startswith("/v1/batches/"):
            return self._openai_batch_get(path.split("/")[3])
        if path.startswith("/v1/messages/batches/"):
            parts = path.split("/")
            if len(parts) == 6 and parts[5] == "results":
                return self._anthropic_results(parts[4])
            return self._anthropic_batch_get(parts[4])
        self._error(404, f"unknown path {path}")

    def do_POST(self) -> None:  # noqa: N802
        st, path = self.state, self.path.split("?")[0]
        raw = self._body()
        auth = self.headers.get("authorization") or self.headers.get("x-api-key") or ""
        with st.lock:
            if len(st.auth_seen) < 5:
                st.auth_seen.append(auth)
        if st.fault_batches and path in ("/v1/files", "/v1/messages/batches") and self._fault():
            return
        if path == "/v1/files":
            parts = _parse_multipart(self.headers.get("content-type", ""), raw)
            with st.lock:
                fid = f"file-{len(st.files) + 1:06d}"
                st.files[fid] = parts.get("file", b"")
            return self._send({"id": fid, "object": "file", "bytes": len(st.files[fid]),
                               "created_at": int(time.time()), "filename": "batch.jsonl",
                               "purpose": "batch", "status": "processed"})
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return self._error(400, "request body is not JSON")
        if path == "/v1/batches":
            return self._openai_batch_create(body)
        if path == "/v1/messages/batches":
            return self._anthropic_batch_create(body)
        if path.endswith("/chat/completions") or path == "/v1/messages":
            if self._fault(path, body) or self._refused_format(path, body):
                return
            if st.latency:
                time.sleep(st.latency)
            reply = self._reply(path, body)
            if getattr(self, "empty_reply", False):  # a refusal / an empty message, still billed
                if "choices" in reply:
                    reply["choices"][0]["message"].update(content=None, refusal="I can't help with that.")
                else:
                    reply["content"], reply["stop_reason"] = [], "end_turn"
            self._count(body)
            self._bill(reply, delivered=True)
            return self._send(reply)
        self._error(404, f"unknown path {path}")

    def _refused_format(self, path: str, body: dict[str, Any]) -> bool:
        """Count the chat attempt by response format; refuse it (True) when its type is in ``refuse_formats``."""
        if not path.endswith("/chat/completions"):
            return False
        fmt = (body.get("response_format") or {}).get("type") or "none"
        st = self.state
        with st.lock:
            st.formats[fmt] += 1
        if fmt not in st.refuse_formats:
            return False
        if fmt == "json_schema":  # llama_cpp.server's own words (HTTP 500)
            self._send({"error": {"message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
                                  "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", "
                                  "'input': 'json_schema'}", "type": "internal_server_error", "param": None,
                                  "code": None}}, 500)
        else:
            self._error(400, f"response_format type {fmt!r} is not supported by this server")
        return True

    def _batch_error_message(self) -> str:
        if not self.state.batch_error_echo_key:
            return "stub batch item error"
        key = (self.headers.get("authorization") or "").replace("Bearer ", "") or self.headers.get("x-api-key", "")
        return f"stub batch item error: key {key!r} is not allowed to use this model"

    # ---------------------------------------------------------------- OpenAI batches
    def _openai_batch_create(self, body: dict[str, Any]) -> None:
        st = self.state
        data = st.files.get(body.get("input_file_id", ""))
        if data is None:
            return self._error(404, "input file not found")
        out_lines, n_ok, n_err = [], 0, 0
        for line in data.decode().splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            cid, req = item["custom_id"], item["body"]
            if cid in st.batch_error_ids:
                n_err += 1
                out_lines.append({"id": f"req_{cid[:8]}", "custom_id": cid, "response": None,
                                  "error": {"code": "server_error", "message": self._batch_error_message()}})
                continue
            self._count(req)
            n_ok += 1
            reply = openai_completion(req)
            if cid in st.batch_empty_ids:
                reply["choices"][0]["message"].update(content=None, refusal="I can't help with that.")
            out_lines.append({"id": f"req_{cid[:8]}", "custom_id": cid, "error": None,
                              "response": {"status_code": 200, "request_id": f"r{cid[:8]}", "body": reply}})
        with st.lock:
            st.batch_creates += 1
            bid = f"batch_{len(st.batches) + 1:06d}"
            ofid = f"file-out-{bid}"
            st.files[ofid] = ("\n".join(json.dumps(x) for x in out_lines) + "\n").encode()
            st.batches[bid] = {"kind": "openai", "output_file_id": ofid, "n_ok": n_ok, "n_err": n_err,
                               "input_file_id": body.get("input_file_id"), "created_at": int(time.time())}
        self._openai_batch_get(bid)

    def _openai_batch_get(self, bid: str) -> None:
        st = self.state
        b = st.batches.get(bid)
        if b is None:
            return self._error(404, f"no batch {bid}")
        with st.lock:
            st.batch_polls_seen[bid] += 1
            polls = st.batch_polls_seen[bid]
        done = polls > st.batch_polls
        n = b["n_ok"] + b["n_err"]
        self._send({"id": bid, "object": "batch", "endpoint": "/v1/chat/completions", "errors": None,
                    "input_file_id": b["input_file_id"], "completion_window": "24h",
                    "status": "completed" if done else "in_progress",
                    "output_file_id": b["output_file_id"] if done else None, "error_file_id": None,
                    "created_at": b["created_at"],
                    "request_counts": {"total": n, "completed": b["n_ok"] if done else 0,
                                       "failed": b["n_err"] if done else 0}})

    # ---------------------------------------------------------------- Anthropic batches
    def _anthropic_batch_create(self, body: dict[str, Any]) -> None:
        st = self.state
        results, n_ok, n_err = [], 0, 0
        for item in body.get("requests", []):
            cid, params = item["custom_id"], item["params"]
            if cid in st.batch_error_ids:
                n_err += 1
                results.append({"custom_id": cid, "result": {"type": "errored", "error": {
                    "type": "error", "error": {"type": "api_error", "message": self._batch_error_message()}}}})
                continue
            self._count(params)
            n_ok += 1
            results.append({"custom_id": cid, "result": {"type": "succeeded", "message": anthropic_message(params)}})
        with st.lock:
            st.batch_creates += 1
            bid = f"msgbatch_{len(st.batches) + 1:06d}"
            st.batches[bid] = {"kind": "anthropic", "results": results, "n_ok": n_ok, "n_err": n_err,
                               "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self._anthropic_batch_get(bid)

    def _anthropic_batch_get(self, bid: str) -> None:
        st = self.state
        b = st.batches.get(bid)
        if b is None:
            return self._error(404, f"no batch {bid}")
        with st.lock:
            st.batch_polls_seen[bid] += 1
            polls = st.batch_polls_seen[bid]
        done = polls > st.batch_polls
        n = b["n_ok"] + b["n_err"]
        self._send({"id": bid, "type": "message_batch",
                    "processing_status": "ended" if done else "in_progress",
                    "request_counts": {"processing": 0 if done else n, "succeeded": b["n_ok"] if done else 0,
                                       "errored": b["n_err"] if done else 0, "canceled": 0, "expired": 0},
                    "ended_at": b["created_at"] if done else None, "created_at": b["created_at"],
                    "expires_at": b["created_at"], "archived_at": None, "cancel_initiated_at": None,
                    "results_url": f"{self._base()}/v1/messages/batches/{bid}/results" if done else None})

    def _anthropic_results(self, bid: str) -> None:
        b = self.state.batches.get(bid)
        if b is None:
            return self._error(404, f"no batch {bid}")
        data = ("\n".join(json.dumps(x) for x in b["results"]) + "\n").encode()
        self._send(None, raw=data, ctype="application/binary")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return  # a client that timed out or was cancelled hung up mid-reply: expected in fault tests
        super().handle_error(request, client_address)


class StubServer:
    """The stub on ``127.0.0.1:<port>`` (0 = any free port), serving in a daemon thread.

    Attributes: ``url`` (``http://127.0.0.1:PORT``), ``openai_url`` (``url + "/v1"``),
    ``state`` (counters: ``successes``, ``faults``, ``attempts``...).
    """

    def __init__(self, port: int = 0, **settings: Any) -> None:
        self.state = StubState(**settings)
        handler = type("BoundHandler", (Handler,), {"state": self.state})
        self.httpd = _Server(("127.0.0.1", port), handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.openai_url = self.url + "/v1"
        self._thread: threading.Thread | None = None

    def start(self) -> StubServer:
        # shutdown() waits for the loop's next poll: 0.5 s by default, paid at the end of every test that used a stub
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def queue(self, *faults: str) -> None:
        """Force the next completion attempts to fail in this order (``"ok"`` = no fault)."""
        with self.state.lock:
            self.state.script.extend(faults)

    def set(self, **settings: Any) -> None:
        """Change fault rates (``p429`` ...), ``latency``, ``retry_after`` or ``timeout_sleep``."""
        with self.state.lock:
            for k, v in settings.items():
                if k.startswith("p") and k[1:] in self.state.rates:
                    self.state.rates[k[1:]] = v
                else:
                    setattr(self.state, k, v)

    @property
    def successes(self) -> Counter[str]:
        return self.state.successes

    def stats(self) -> dict[str, Any]:
        return self.state.stats()


def reuseport_socket(port: int = 0) -> Any:
    """A listening TCP socket on ``127.0.0.1:port`` with ``SO_REUSEPORT``: several processes may listen on
    one port, and the kernel spreads the connections over them."""
    import socket

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(1024)
    return sock


async def serve_async(port: int = 0, latency: float = 0.0, ready=None, sock: Any = None,
                      parent: int | None = None) -> None:
    """A lean asyncio variant (chat completions + messages only, no faults) for throughput benchmarks:
    no thread per connection, so the stub itself is not the bottleneck at high concurrency. With ``sock``
    (e.g. :func:`reuseport_socket`) it serves on that socket; ``GET /_stats`` counts this process's replies.
    With ``parent`` (a pid) it stops once that process is gone."""
    import asyncio
    import os

    counts: Counter[str] = Counter()

    async def orphaned() -> None:
        while os.getppid() == parent:
            await asyncio.sleep(0.5)
        server.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1].split("?")[0]
                n = 0
                for line in lines[1:]:
                    if line.lower().startswith("content-length:"):
                        n = int(line.split(":", 1)[1])
                body = json.loads(await reader.readexactly(n)) if n else {}
                if path.endswith("/chat/completions") or path == "/v1/messages":
                    if latency:
                        await asyncio.sleep(latency)
                    reply = openai_completion(body) if path.endswith("/chat/completions") else anthropic_message(body)
                    counts[reply["id"]] += 1  # the id is made of the body's key: one count per distinct body
                    code = b"200 OK"
                elif path == "/_stats":
                    reply, code = {"successes": sum(counts.values()), "distinct_successes": len(counts)}, b"200 OK"
                else:
                    reply, code = {"error": {"message": f"unknown path {path}"}}, b"404 Not Found"
                data = json.dumps(reply).encode()
                writer.write(b"HTTP/1.1 " + code + b"\r\ncontent-type: application/json\r\ncontent-length: "
                             + str(len(data)).encode() + b"\r\n\r\n" + data)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):  # cancelled: shutting down
            pass
        finally:
            writer.close()

    if sock is not None:
        server = await asyncio.start_server(handle, sock=sock, backlog=1024)
    else:
        server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    if ready is not None:
        ready(server.sockets[0].getsockname()[1])
    watch = asyncio.ensure_future(orphaned()) if parent is not None else None
    try:  # SIGTERM closes the server between callbacks (a KeyboardInterrupt raised inside one left tracebacks)
        import signal

        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, server.close)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
        pass
    try:
        async with server:
            await server.serve_forever()
    except asyncio.CancelledError:  # closed by orphaned() or SIGTERM
        pass
    finally:
        if watch is not None:
            watch.cancel()


def serve_workers(workers: int, port: int = 0, latency: float = 0.0) -> int:
    """The lean asyncio stub in ``workers`` processes on one port (``SO_REUSEPORT``; the kernel spreads the
    connections over them), for clients whose concurrency one process cannot serve. Prints ``READY <url>``
    once every worker listens; stops them all on SIGTERM or SIGINT."""
    import asyncio
    import subprocess

    sock = reuseport_socket(port)
    port = sock.getsockname()[1]
    cmd = [sys.executable, __file__, "--asyncio", "--reuseport", "--port", str(port), "--latency", str(latency)]
    children = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(workers - 1)]
    try:
        for c in children:
            line = c.stdout.readline().strip()
            if not line.startswith("READY "):
                raise RuntimeError(f"a stub worker did not start: {line!r}")
        try:  # SIGTERM: serve_async closes its server
            asyncio.run(serve_async(latency=latency, sock=sock,
                                    ready=lambda p: print(f"READY http://127.0.0.1:{p}", flush=True)))
        except KeyboardInterrupt:
            pass
    finally:
        for c in children:
            c.terminate()
        for c in children:
            c.wait()
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    for name in ("latency", "p429", "p500", "ptimeout", "pmalformed", "ptruncated", "retry_after"):
        ap.add_argument(f"--{name.replace('_', '-')}", type=float, default=0.0)
    ap.add_argument("--timeout-sleep", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--asyncio", action="store_true", help="lean asyncio server (no faults) for benchmarks")
    ap.add_argument("--workers", type=int, default=1,
                    help="with --asyncio: processes serving one port (SO_REUSEPORT)")
    ap.add_argument("--reuseport", action="store_true", help=argparse.SUPPRESS)  # a worker of --workers
    a = ap.parse_args(argv)
    if a.asyncio and a.workers > 1:
        return serve_workers(a.workers, a.port, a.latency)
    if a.asyncio:
        import asyncio

        try:  # SIGTERM: serve_async closes its server
            asyncio.run(serve_async(a.port, a.latency, sock=reuseport_socket(a.port) if a.reuseport else None,
                                    ready=lambda port: print(f"READY http://127.0.0.1:{port}", flush=True),
                                    parent=os.getppid() if a.reuseport else None))
        except KeyboardInterrupt:
            pass
        return 0
    srv = StubServer(a.port, latency=a.latency, p429=a.p429, p500=a.p500, ptimeout=a.ptimeout,
                     pmalformed=a.pmalformed, ptruncated=a.ptruncated, retry_after=a.retry_after,
                     timeout_sleep=a.timeout_sleep, seed=a.seed)
    print(f"READY {srv.url}", flush=True)
    try:
        srv.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
