"""Leases on cache keys, so that processes sharing a cache never pay twice for one request, even when
one of them is paused past its leases' expiry or runs in another PID namespace (:class:`Leases`, leases
with fencing; the table lives in :class:`~medeval_kit.llm.cache.Cache`)."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from typing import Any

from .cache import Cache
from .secrets import get_logger
from .writer import CacheWriter

log = get_logger(__name__)


LEASE_TTL_ENV = "MEDEVAL_LEASE_TTL"  # seconds; tests shorten it
DEFAULT_TTL = 60.0


def lease_ttl() -> float:
    """The lease time to live: ``$MEDEVAL_LEASE_TTL`` seconds if set (> 0), else 60."""
    try:
        ttl = float(os.environ.get(LEASE_TTL_ENV) or DEFAULT_TTL)
    except ValueError:
        ttl = DEFAULT_TTL
    return ttl if ttl > 0 else DEFAULT_TTL


class Leases:
    """The leases one run holds on cache keys (see ``Cache.take_leases``), so that processes sharing
    a cache never pay twice for a request.

    A lease is owned by a random token (``owner``), never by a pid: a live holder in another PID
    namespace is never taken for dead. It is taken when the request has its concurrency slot, just
    before it is sent (one transaction for the calls reaching that point together), renewed every
    TTL / 3 while the run lasts, released on failure at once and all together when the run ends.

    Fencing: this run counts a lease as surely its own until ``ttl`` after the start of the
    transaction that took (or re-took) it, less a margin (:meth:`fresh`): before then no other process
    can take it over, whatever this one does. Right before a send, a lease that may be near its expiry is taken again
    (:meth:`take`: ``mine`` only if nobody took it over, in one transaction), so a holder that was
    paused (SIGSTOP, a suspended VM) past the expiry never sends a request whose lease another process
    took over: the request waits for that process's result instead. A request whose lease another
    process holds waits, outside its slot, for that process's result (one poller per run reads the
    cache) or for the lease to be released or to expire (at most ``ttl``)."""

    def __init__(self, cache: Cache, writer: CacheWriter | None, ttl: float | None = None) -> None:
        self.cache, self.writer = cache, writer
        self.executor = writer.executor if writer is not None else None
        self.ttl = lease_ttl() if ttl is None else float(ttl)
        self.owner = Cache.lease_owner(uuid.uuid4().hex)
        self.held: set[str] = set()
        self.valid: dict[str, float] = {}  # key -> time until which no other process can have taken it
        self._waiting: dict[str, list[asyncio.Future]] = {}
        self._tasks: set[asyncio.Task] = set()
        self._poller: asyncio.Task | None = None
        self._renewer: asyncio.Task | None = None
        self._warned = False

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def fresh(self, key: str) -> bool:
        """Whether this run surely still holds ``key``: taken (or re-taken) so recently that even a pause
        right now leaves a quarter of the TTL before anyone else may take it over."""
        return key in self.held and time.time() + self.ttl / 4 < self.valid.get(key, 0.0)

    def take_soon(self, key: str) -> asyncio.Future | None:
        """Queue the take of the lease on ``key`` in the writer's next batch (None without a writer); pass
        the future to :meth:`take`, or to :meth:`drop` if the call ends without sending."""
        if self.writer is None:
            return None
        return self.writer.take_nowait(key, self.owner, self.ttl)

    def drop(self, pending: asyncio.Future, key: str) -> None:
        """A take queued by :meth:`take_soon` that nobody will use: free the lease once it is written."""
        def done(fut: asyncio.Future) -> None:
            if not fut.cancelled() and fut.exception() is None and fut.result()[0] == "mine" \
                    and key not in self.held:
                self._release_now([key])

        if pending.done():
            done(pending)
        else:
            pending.add_done_callback(done)

    async def take(self, key: str, pending: asyncio.Future | None = None) -> tuple[str, Any]:
        """Take (or re-take) the lease on ``key``: ``("mine", None)``, ``("done", row)`` or ``("held", owner)``.

        The takes of the calls reaching this point together go in one transaction, with the replies and
        releases queued meanwhile (:class:`~medeval_kit.llm.writer.CacheWriter`); ``pending``: the take
        already queued by :meth:`take_soon`."""
        t0 = time.time()
        try:
            if pending is not None:
                state, payload, t0 = await pending
            elif self.writer is not None:
                state, payload, t0 = await self.writer.take(key, self.owner, self.ttl)
            else:
                state, payload = self.cache.take_leases([key], self.owner, self.ttl)[key]
        except Exception as exc:  # a broken cache must not stop paid work: go on unprotected
            if not self._warned:
                self._warned = True
                log.warning("cache %s: leases unavailable (%s: %s); calls go ahead without them",
                            self.cache.path, type(exc).__name__, exc)
            state, payload = "mine", None
        if state == "mine":
            self.held.add(key)
            self.valid[key] = t0 + self.ttl
            if self._renewer is None:
                self._renewer = self._spawn(self._renew())
        else:  # stored meanwhile, or taken over while this run was paused
            self.held.discard(key)
            self.valid.pop(key, None)
        return state, payload

    async def wait(self, key: str) -> tuple[str, Any]:
        """Wait until another process's lease on ``key`` ends: ``("done", row)`` or ``("free", None)``."""
        fut = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, []).append(fut)
        if self._poller is None:
            self._poller = self._spawn(self._poll())
        return await fut

    async def _poll(self) -> None:
        loop = asyncio.get_running_loop()
        interval = 0.02
        try:
            while self._waiting:
                await asyncio.sleep(interval)
                interval = min(0.25, interval * 1.5)
                keys = list(self._waiting)
                try:
                    res = await loop.run_in_executor(None, self.cache.poll_leases, keys, self.owner)
                except Exception:  # try again at the next tick
                    continue
                for k in keys:
                    state = res.get(k)
                    if state is not None and state[0] != "held":
                        for fut in self._waiting.pop(k, []):
                            if not fut.done():
                                fut.set_result(state)
        finally:
            self._poller = None

    async def _renew(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.ttl / 3)
            if self.held:
                try:
                    await loop.run_in_executor(self.executor, self.cache.renew_leases, self.owner, self.ttl)
                except Exception:
                    pass

    def release(self, key: str) -> None:
        """Release the lease on ``key`` now (the call failed: another process may try)."""
        self.valid.pop(key, None)
        if key in self.held:
            self.held.discard(key)
            self._release_now([key])

    def _release_now(self, keys: list[str]) -> None:
        if self.writer is not None:  # after the replies queued before it
            self.writer.release(self.owner, keys)
            return
        try:
            self.cache.release_leases(self.owner, keys)
        except Exception:  # it expires within the TTL anyway
            pass

    def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for futs in self._waiting.values():
            for fut in futs:
                fut.cancel()
        self._waiting.clear()

    def close(self) -> None:
        """Release every lease of this run (success, failure or cancellation)."""
        try:
            self.cache.release_leases(self.owner)
        except Exception as exc:  # they expire within TTL anyway
            log.warning("cache %s: could not release leases (%s); they expire within %.0f s",
                        self.cache.path, exc, self.ttl)
        self.held.clear()
        self.valid.clear()

