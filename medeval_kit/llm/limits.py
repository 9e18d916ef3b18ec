"""How fast and how often: requests- and tokens-per-minute limits (:class:`RateLimiter`), the
concurrency slots of a provider (:class:`Slots`, retries served first) and the delay before a retry
(:class:`RetryPolicy`)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import random
import time
from collections.abc import Callable


class _Bucket:
    """Continuous-refill token bucket sized for ``per_minute`` (bursts of at most 10 s worth)."""

    def __init__(self, per_minute: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, per_minute / 6.0)
        self.level = self.capacity
        self.t = time.monotonic()

    def wait_for(self, amount: float) -> float:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.t) * self.rate)
        self.t = now
        amount = min(amount, self.capacity)
        return 0.0 if self.level >= amount else (amount - self.level) / self.rate

    def take(self, amount: float) -> None:
        self.level -= min(amount, self.capacity)

    def give(self, amount: float) -> None:
        self.level = min(self.capacity, self.level + amount)


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits shared by the calls to one provider.

    Parameters
    ----------
    rpm : float, optional
        Requests per minute; no limit when omitted.
    tpm : float, optional
        Tokens per minute (prompt bound plus ``max_tokens``); no limit when omitted.
    """

    def __init__(self, rpm: float | None = None, tpm: float | None = None) -> None:
        self.req = _Bucket(rpm) if rpm else None
        self.tok = _Bucket(tpm) if tpm else None
        self._lock = asyncio.Lock()

    async def acquire(self, tokens: int) -> None:
        """Wait until one more request and ``tokens`` more tokens fit under the limits; take them."""
        if self.req is None and self.tok is None:
            return
        async with self._lock:
            while True:
                wait = max(self.req.wait_for(1) if self.req else 0.0,
                           self.tok.wait_for(tokens) if self.tok else 0.0)
                if wait <= 0:
                    if self.req:
                        self.req.take(1)
                    if self.tok:
                        self.tok.take(tokens)
                    return
                await asyncio.sleep(wait)

    def refund(self, tokens: int) -> None:
        """Give back tokens taken but not used (the reply was shorter than its estimate)."""
        if self.tok is not None and tokens > 0:
            self.tok.give(tokens)


class Slots:
    """The concurrency slots of one provider: a semaphore that serves retries before first attempts,
    so that a request's retries run while fresh requests still fill the other slots instead of
    queueing behind all of them (which would add a tail of retry chains after the queue drains).

    A waiter may pass ``granted``, called at the moment a slot is handed to it, before it resumes (one
    turn of the event loop later): work queued there (the call's lease take) is done by the time it runs.
    """

    def __init__(self, n: int) -> None:
        self.size = self._free = int(n)
        self._queues: tuple[collections.deque, collections.deque] = (collections.deque(), collections.deque())

    async def acquire(self, retry: bool = False, granted: Callable[[], None] | None = None) -> None:
        """Wait for a free slot (a retry is served before first attempts) and take it; ``granted`` is
        called when a busy slot is handed over (not when one is free at once)."""
        if self._free > 0 and not self._queues[0] and not self._queues[1]:
            self._free -= 1
            return
        fut = asyncio.get_running_loop().create_future()
        q = self._queues[0 if retry else 1]
        item = (fut, granted)
        q.append(item)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release()  # the slot was handed to us just as we were cancelled: pass it on
            else:
                try:
                    q.remove(item)
                except ValueError:
                    pass
            raise

    def release(self) -> None:
        """Hand the slot to the next waiter, or free it."""
        for q in self._queues:
            while q:
                fut, granted = q.popleft()
                if not fut.done():
                    if granted is not None:  # first: what it queues runs before the waiter resumes
                        granted()
                    fut.set_result(None)  # handed over: the count of free slots is unchanged
                    return
        self._free += 1

    @contextlib.asynccontextmanager
    async def slot(self, retry: bool = False, granted: Callable[[], None] | None = None):
        """Hold a slot for the block."""
        await self.acquire(retry, granted)
        try:
            yield
        finally:
            self.release()


@dataclasses.dataclass
class RetryPolicy:
    """When and how often a failed call is tried again.

    When the server says when to come back (``Retry-After``/``retry-after-ms``), the delay is exactly that
    (capped at ``retry_after_max``) plus a small jitter (up to 10% + ``retry_after_jitter``), so calls told to
    wait together do not all return at once. Otherwise it is uniform in [0, min(backoff_max,
    backoff_base * 2**i)] ("full jitter"), where ``i`` counts the request's earlier failures without a
    Retry-After, counted from the start of the failed attempt. Failures that will recur are not retried, and
    a 200 with an unreadable body (billed, unusable) at most once.

    Parameters
    ----------
    max_retries : int, default 8
        Retries after the first attempt.
    backoff_base : float, default 0.5
        Seconds of the first backoff step.
    backoff_max : float, default 60.0
        The backoff's ceiling in seconds.
    retry_after_max : float, default 120.0
        The longest server-requested wait honoured, in seconds.
    retry_after_jitter : float, default 0.01
        Seconds of jitter added to a server-requested wait, besides up to 10% of it.
    """

    max_retries: int = 8
    backoff_base: float = 0.5  # the OpenAI and Anthropic SDKs' initial retry delay
    backoff_max: float = 60.0
    retry_after_max: float = 120.0
    retry_after_jitter: float = 0.01

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Return the seconds to wait before the next attempt (``attempt``: failures without a Retry-After)."""
        if retry_after is not None:
            ra = min(max(0.0, float(retry_after)), self.retry_after_max)
            return ra + random.uniform(0.0, 0.1 * ra + self.retry_after_jitter)
        return random.uniform(0.0, min(self.backoff_max, self.backoff_base * (2 ** attempt)))

