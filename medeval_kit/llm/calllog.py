"""The call log the study runner reads: with ``MEDEVAL_CALL_LOG`` set to a file, every client run (live,
batch or replay) appends one JSON line when it finishes, so that failed calls are visible to the runner.

One line: ``{"model", "n_requests", "n_failed", "n_parse_failed", "n_skipped_budget", "failed_reasons",
"cost_usd"}``. ``n_failed`` counts requests that got no reply (HTTP errors, timeouts, budget refusals,
which are also in ``n_skipped_budget``); ``failed_reasons`` groups them by a short reason (``"401
unauthorized"``, ``"timeout"``, ``"budget"``...), redacted, never a secret. The line is written with one
``write`` call in append mode, so concurrent clients never interleave; a failure to write it is logged
and never breaks the run.
"""

from __future__ import annotations

import http
import json
import math
import os
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from .secrets import get_logger, redact

log = get_logger(__name__)

CALL_LOG_ENV = "MEDEVAL_CALL_LOG"
_HTTP = re.compile(r"\bHTTP (\d{3})\b")
_MAX_REASON = 60


def short_reason(error: str) -> str:
    """A short, redacted reason for a failed request's ``Response.error``.

    Parameters
    ----------
    error : str
        The error text of a Response.

    Returns
    -------
    str
        ``"budget"``, ``"<status> <phrase>"`` for HTTP errors (e.g. ``"401 unauthorized"``),
        ``"timeout"``, ``"batch item failed"``, or the error's first words.
    """
    text = str(error)
    if text.startswith("budget") or text.startswith("run budget"):
        return "budget"
    m = _HTTP.search(text)
    if m:
        code = int(m.group(1))
        try:
            return f"{code} {http.HTTPStatus(code).phrase.lower()}"
        except ValueError:
            return f"HTTP {code}"
    if text.startswith("timeout"):
        return "timeout"
    if text.startswith("batch item failed"):
        return "batch item failed"
    head = re.split(r"[:(\n]", text, maxsplit=1)[0].strip() or "error"
    return (redact(head) or "error")[:_MAX_REASON]


def call_log_line(model: str, responses: Sequence[Any], n_skipped_budget: int, cost_usd: float) -> dict[str, Any]:
    """The call-log record of one run (see the module docstring)."""
    reasons = Counter(short_reason(r.error) for r in responses if r.error is not None)
    return {"model": model, "n_requests": len(responses),
            "n_failed": sum(1 for r in responses if r.error is not None),
            "n_parse_failed": sum(1 for r in responses if r.parse_status == "failed"),
            "n_skipped_budget": int(n_skipped_budget), "failed_reasons": dict(sorted(reasons.items())),
            "cost_usd": 0.0 if cost_usd is None or math.isnan(cost_usd) else float(cost_usd)}


def append_call_log(model: str, responses: Sequence[Any], n_skipped_budget: int = 0, cost_usd: float = 0.0) -> None:
    """Append the run's line to ``$MEDEVAL_CALL_LOG`` when it is set; never raises.

    Parameters
    ----------
    model : str
        The client's model string.
    responses : sequence of Response
        The run's responses, one per request.
    n_skipped_budget : int
        Requests a budget refused.
    cost_usd : float
        What the run's delivered replies cost (NaN, unknown, is written as 0).
    """
    path = os.environ.get(CALL_LOG_ENV)
    if not path:
        return
    try:
        line = json.dumps(call_log_line(model, responses, n_skipped_budget, cost_usd), ensure_ascii=False)
        line = (redact(line) or "") + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))  # one write of one line: O_APPEND keeps lines whole
        finally:
            os.close(fd)
    except Exception as exc:
        log.warning("call log %s=%s: could not append the run's line (%s: %s)", CALL_LOG_ENV, path,
                    type(exc).__name__, exc)
