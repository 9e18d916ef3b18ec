"""What the LLM clients of one run did, read from the run's ``llm_calls.jsonl`` (issue 20).

The runner sets ``MEDEVAL_CALL_LOG`` to ``<run folder>/llm_calls.jsonl`` before a notebook executes; every LLM
client run in the kernel appends one JSON line when it finishes::

    {"model": str, "n_requests": int, "n_failed": int, "n_parse_failed": int, "n_skipped_budget": int,
     "failed_reasons": {reason: count}, "cost_usd": float}

``n_failed`` counts calls that got no reply (HTTP errors, timeouts, and budget refusals, which are also counted
in ``n_skipped_budget``); ``n_parse_failed`` counts replies that could not be parsed.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CALL_LOG", "CallStats", "read_call_log"]

CALL_LOG = "llm_calls.jsonl"
_COUNTS = ("n_requests", "n_failed", "n_parse_failed", "n_skipped_budget")


@dataclass
class CallStats:
    """The summed call records of one run; ``bad_lines`` counts lines that were not a record (e.g. truncated)."""

    n_requests: int = 0
    n_failed: int = 0
    n_parse_failed: int = 0
    n_skipped_budget: int = 0
    cost_usd: float = 0.0
    failed_reasons: dict[str, int] = field(default_factory=dict)
    bad_lines: int = 0

    def top_reasons(self, k: int = 3) -> str:
        """Return the ``k`` commonest failure reasons as ``"401 unauthorized x40, timeout x2"``."""
        ranked = sorted(self.failed_reasons.items(), key=lambda kv: (-kv[1], kv[0]))
        return ", ".join(f"{reason} x{n}" for reason, n in ranked[:k])

    def summary(self) -> str:
        """Return e.g. ``"40 LLM calls, 40 failed (401 unauthorized x40), 2 unparsed"`` ("" when no calls)."""
        if not (self.n_requests or self.n_failed or self.n_parse_failed or self.bad_lines):
            return ""
        parts = [f"{self.n_requests} LLM calls"]
        if self.n_failed:
            why = self.top_reasons()
            parts.append(f"{self.n_failed} failed" + (f" ({why})" if why else ""))
        if self.n_skipped_budget:
            parts.append(f"{self.n_skipped_budget} refused by the budget")
        if self.n_parse_failed:
            parts.append(f"{self.n_parse_failed} unparsed")
        if self.bad_lines:
            parts.append(f"{self.bad_lines} unreadable log line" + ("s" if self.bad_lines > 1 else ""))
        return ", ".join(parts)


def read_call_log(path: str | Path) -> CallStats:
    """Sum the call records in ``path``; a missing file means no LLM calls, a line that is not one is counted.

    Parameters
    ----------
    path : str or Path
        A run's ``llm_calls.jsonl``.

    Returns
    -------
    CallStats
        The totals over every record.

    Example
    -------
    >>> read_call_log("/nonexistent/llm_calls.jsonl").n_requests
    0
    """
    stats, reasons = CallStats(), Counter()
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return stats
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            counts = {k: int(rec.get(k) or 0) for k in _COUNTS}
            cost = float(rec.get("cost_usd") or 0.0)
            why = {str(r): int(n) for r, n in (rec.get("failed_reasons") or {}).items()}
        except (ValueError, TypeError, AttributeError):  # truncated by a killed kernel, or not a record
            stats.bad_lines += 1
            continue
        for k, n in counts.items():
            setattr(stats, k, getattr(stats, k) + n)
        stats.cost_usd += cost
        reasons.update(why)
    stats.failed_reasons = dict(reasons)
    return stats
