"""Leases on cache keys, so that processes sharing a cache never pay twice for one request
(:class:`Leases`; the table lives in :class:`~medeval_kit.llm.cache.Cache`)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from collections.abc import Sequence
from typing import Any

from .cache import Cache
from .secrets import get_logger

log = get_logger(__name__)


class Leases:
    """The leases one run holds on cache keys (see ``Cache.take_leases``), so that processes sharing
    a cache never pay twice for a request. Leases are taken in batches: one transaction for the calls
    reaching a slot together and the next ``ahead`` requests in line (so a run costs about one lease
    transaction per ``ahead`` calls, not one per call). They are renewed while the run lasts, released
    on failure at once and all together when the run ends (also on error or cancellation). A request
    whose lease another live process holds waits, outside its concurrency slot, for that process's
    result (one poller per run reads the cache) or for the lease to be released, to expire or to be
    orphaned."""

    TTL = 60.0  # s; renewed every TTL / 3 while the run lasts

    def __init__(self, cache: Cache, executor: concurrent.futures.Executor | None,
                 order: Sequence[str] = (), ahead: int = 0) -> None:
        self.cache, self.executor = cache, executor
        self.owner = Cache.lease_owner(uuid.uuid4().hex[:12])
        self.held: set[str] = set()
        self._order, self._next, self.ahead = list(order), 0, int(ahead)
        self._asked: set[str] = set()
        self._prefetched: dict[str, tuple[str, Any]] = {}
        self._take: list[tuple[str, asyncio.Future]] = []
        self._taking = False
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

    async def take(self, key: str) -> tuple[str, Any]:
        """``("mine", None)``, ``("done", row)`` or ``("held", owner)``."""
        self._asked.add(key)
        ready = self._prefetched.pop(key, None)
        if ready is not None and ready[0] != "held":  # taken ahead (a held one is asked again)
            return ready
        fut = asyncio.get_running_loop().create_future()
        self._take.append((key, fut))
        if not self._taking:
            self._taking = True
            self._spawn(self._flush())
        return await fut

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._take:
                batch, self._take = self._take, []
                for k, fut in batch:  # taken ahead while they were queued for this batch
                    ready = self._prefetched.get(k)
                    if ready is not None and ready[0] != "held" and not fut.done():
                        del self._prefetched[k]
                        fut.set_result(ready)
                batch = [(k, fut) for k, fut in batch if not fut.done()]
                if not batch:
                    continue
                keys = [k for k, _ in batch]
                asked = set(keys)
                while self._next < len(self._order) and len(keys) < len(batch) + self.ahead:
                    k = self._order[self._next]
                    self._next += 1
                    if k not in self._asked and k not in asked and k not in self._prefetched:
                        keys.append(k)  # the next requests in line: leased now, used when they get a slot
                try:
                    res = await loop.run_in_executor(self.executor, self.cache.take_leases, keys, self.owner, self.TTL)
                except Exception as exc:  # a broken cache must not stop paid work: go on unprotected
                    if not self._warned:
                        self._warned = True
                        log.warning("cache %s: leases unavailable (%s: %s); calls go ahead without them",
                                    self.cache.path, type(exc).__name__, exc)
                    res = {k: ("mine", None) for k in keys}
                for k in keys:
                    if res[k][0] == "mine":
                        self.held.add(k)
                for k, fut in batch:
                    if not fut.done():
                        fut.set_result(res[k])
                for k in keys[len(batch):]:
                    self._prefetched[k] = res[k]
                if self.held and self._renewer is None:
                    self._renewer = self._spawn(self._renew())
        finally:
            self._taking = False

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
            await asyncio.sleep(self.TTL / 3)
            if self.held:
                try:
                    await loop.run_in_executor(self.executor, self.cache.renew_leases, self.owner, self.TTL)
                except Exception:
                    pass

    def release(self, key: str) -> None:
        """Release the lease on ``key`` now (the call failed: another process may try)."""
        self._prefetched.pop(key, None)
        if key in self.held:
            self.held.discard(key)
            self._release_now([key])

    def _release_now(self, keys: list[str]) -> None:
        def rel() -> None:
            try:
                self.cache.release_leases(self.owner, keys)
            except Exception:
                pass

        if self.executor is not None:
            asyncio.get_running_loop().run_in_executor(self.executor, rel)
        else:
            rel()

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
                        self.cache.path, exc, self.TTL)
        self.held.clear()

