"""Group commit of one run's cache writes (:class:`CacheWriter`): the paid replies to store and the leases
to take and release, queued by the calls of a ``Client.run`` and written together.

The calls reaching the writer in one turn of the event loop (dozens when the run is busy, one when it is
not; there is no timer) make one batch: the replies in one transaction (if it fails, each reply alone, so
one unwritable row never costs the others), then the lease releases, then the lease takes in one
transaction. A batch is written right away in the event loop's thread when that cannot wait: the
connection is free and no other process holds the database's write lock (``Cache.now_or_never``; SQLite
in WAL mode commits such a batch in tens of microseconds, without an fsync). Otherwise it is written again,
whole (every step is idempotent), by the writer's thread, which waits as long as it takes. That thread also
runs the WAL checkpoints (the fsyncs), on a connection of its own, so no commit in the loop's thread ever
waits for one. No thread hop per call, no transaction per call: that was most of the client's CPU per
call beyond the HTTP stack.

What it guarantees (see ``Call._attempt`` in :mod:`medeval_kit.llm.calls`): a call counts as done, and
frees its lease, only once its reply is committed. It frees its concurrency slot as soon as the reply is
queued, but the next call in that slot sends only after a batch that commits it: the lease that call takes
is written after the replies queued before it (in the same batch or a later one), and a call that needs no
take waits for :meth:`CacheWriter.barrier`. So at any moment each slot holds at most one call that is sent,
or paid, but not yet committed: a kill -9 loses at most ``concurrency`` paid replies, never one a run
reported as done, and a resumed run pays again only for those. A reply is committed before its lease is
released, so another process sees the lease or the reply, never neither. A reply whose caller was cancelled
is still written (it was paid for).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from typing import Any

from .cache import Cache, connect_wal
from .secrets import get_logger

log = get_logger(__name__)

CHECKPOINT_EVERY = 1000  # rows written (replies and leases) between two WAL checkpoints of a run


def _resolve(fut: asyncio.Future, result: Any = None, exc: BaseException | None = None) -> None:
    if fut.done():  # the caller was cancelled: its entry was written all the same
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(result)


class CacheWriter:
    """The writer of one run: replies, lease takes and lease releases, batched (see the module docstring).

    Parameters
    ----------
    cache : Cache
        The cache the run writes to.
    """

    def __init__(self, cache: Cache, *, inline: bool = True) -> None:
        self.cache, self.inline = cache, inline
        self.executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="medeval-cache")
        self._puts: list[tuple[dict[str, Any], asyncio.Future | None]] = []
        self._takes: list[tuple[str, str, float, asyncio.Future]] = []  # (key, owner, ttl, future)
        self._releases: list[tuple[str, str]] = []  # (owner, key)
        self._barriers: list[asyncio.Future] = []
        self._writing = False  # a batch with replies is being written
        self._task: asyncio.Task | None = None
        self.n_batches = 0  # batches written
        self.n_inline = 0  # of which in the loop's thread
        # WAL checkpoints (copying the log into the database, with an fsync) run in the thread, on a
        # connection of their own, never inside a commit made in the loop's thread
        self._own_checkpoints = False
        self._since_checkpoint = 0
        self._checkpoint: concurrent.futures.Future | None = None
        self._checkpoint_conn: Any = None

    # ------------------------------------------------------------------ queueing
    def put_nowait(self, entry: dict[str, Any]) -> asyncio.Future:
        """Queue a cache row; return a future done once it is committed (its exception: what writing it
        raised)."""
        fut = asyncio.get_running_loop().create_future()
        self._puts.append((entry, fut))
        self._kick()
        return fut

    async def put(self, entry: dict[str, Any]) -> None:
        """Queue a cache row; return once it is committed, or raise what writing it raised."""
        await self.put_nowait(entry)

    @property
    def pending(self) -> bool:
        """Whether some reply is queued or being written."""
        return bool(self._puts) or self._writing

    async def barrier(self) -> None:
        """Return once every reply queued so far is committed (or failed)."""
        if not self.pending:
            return
        fut = asyncio.get_running_loop().create_future()
        self._barriers.append(fut)
        self._kick()
        await fut

    def take_nowait(self, key: str, owner: str, ttl: float) -> asyncio.Future:
        """Queue the take (or re-take) of the lease on ``key`` (``Cache.take_leases``); return a future of
        ``(state, payload, t0)``, where the lease, when ``state`` is ``"mine"``, lasts at least until
        ``t0 + ttl``."""
        fut = asyncio.get_running_loop().create_future()
        self._takes.append((key, owner, float(ttl), fut))
        self._kick()
        return fut

    async def take(self, key: str, owner: str, ttl: float) -> tuple[str, Any, float]:
        """Take (or re-take) the lease on ``key``: the result of :meth:`take_nowait`, once written."""
        return await self.take_nowait(key, owner, ttl)

    def release(self, owner: str, keys: list[str]) -> None:
        """Queue the release of ``owner``'s leases on ``keys`` (written after the replies queued before)."""
        self._releases.extend((owner, k) for k in keys)
        self._kick()

    def _kick(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._flush())

    # ------------------------------------------------------------------ writing
    def _swap(self) -> tuple[list, list, list, list]:
        batch = (self._puts, self._releases, self._takes, self._barriers)
        self._puts, self._releases, self._takes, self._barriers = [], [], [], []
        return batch

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        while self._puts or self._takes or self._releases or self._barriers:
            puts, rels, takes, barriers = self._swap()
            self._writing = bool(puts)
            try:
                if self.inline and not self._own_checkpoints:  # once the connection is open
                    self._own_checkpoints = self.cache.now_or_never(self.cache.autocheckpoint, 0)[0]
                t0 = time.time()  # before the transaction: a lease it grants lasts at least until t0 + ttl
                done, res = (self.cache.now_or_never(self._write, puts, rels, takes, True) if self.inline
                             else (False, None))
                self._since_checkpoint += len(puts) + len(takes)
                if self._own_checkpoints and self._since_checkpoint >= CHECKPOINT_EVERY and (
                        self._checkpoint is None or self._checkpoint.done()):
                    self._since_checkpoint = 0
                    self._checkpoint = self.executor.submit(self._wal_checkpoint)
                if done:
                    self.n_inline += 1
                else:  # the thread writes the batch even if this task is cancelled meanwhile
                    res = await loop.run_in_executor(self.executor, self._write, puts, rels, takes)
                self._writing = False
                self._settle(puts, takes, *res, t0)
            except BaseException as exc:  # cancelled, or a bug: no caller may wait forever
                self._writing = False
                err = exc if isinstance(exc, Exception) else RuntimeError("the write was not confirmed")
                for _, fut in puts:
                    if fut is not None:
                        _resolve(fut, exc=err)
                for *_, fut in takes:
                    _resolve(fut, exc=err)
                raise
            finally:
                for fut in barriers:
                    _resolve(fut)

    def _settle(self, puts: list, takes: list, put_errs: list, took: dict, t0: float) -> None:
        for (_, fut), err in zip(puts, put_errs):
            if fut is not None:
                _resolve(fut, exc=err)
        for key, owner, ttl, fut in takes:
            res = took[(owner, ttl)]
            if isinstance(res, BaseException):
                _resolve(fut, exc=res)
            else:
                state, payload = res[key]
                _resolve(fut, (state, payload, t0))

    def _write(self, puts: list, rels: list, takes: list, strict: bool = False) -> tuple[list, dict]:
        """The replies, then the releases, then the takes (see the module docstring); with ``strict`` any
        failure raises (the batch is then written again by the thread, where waiting is fine)."""
        entries = [e for e, _ in puts]
        errs: list[Exception | None] = [None] * len(entries)
        if entries:
            try:
                self.cache.put_many(entries)
            except Exception as exc:
                if strict:
                    raise
                if len(entries) == 1:
                    errs[0] = exc
                else:  # each alone: one row that cannot be written must not cost the others
                    for i, e in enumerate(entries):
                        try:
                            self.cache.put_many([e])
                        except Exception as exc1:
                            errs[i] = exc1
        by_owner: dict[str, list[str]] = {}
        for owner, key in rels:
            by_owner.setdefault(owner, []).append(key)
        for owner, keys in by_owner.items():
            try:
                self.cache.release_leases(owner, keys)
            except Exception:  # they expire within the TTL anyway
                if strict:
                    raise
        groups: dict[tuple[str, float], list[str]] = {}
        for key, owner, ttl, _ in takes:
            groups.setdefault((owner, ttl), []).append(key)
        took: dict[tuple[str, float], Any] = {}
        for (owner, ttl), keys in groups.items():
            try:
                took[(owner, ttl)] = self.cache.take_leases(keys, owner, ttl)
            except Exception as exc:
                if strict:
                    raise
                took[(owner, ttl)] = exc
        self.n_batches += 1
        return errs, took

    def _wal_checkpoint(self) -> None:
        """In the thread: copy the WAL into the database (PASSIVE: never waits for, nor blocks, a writer)."""
        try:
            if self._checkpoint_conn is None:
                self._checkpoint_conn = connect_wal(self.cache.path)
            self._checkpoint_conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except Exception as exc:  # the next one, or another connection's, will do it
            log.debug("cache %s: WAL checkpoint failed (%s)", self.cache.path, exc)

    # ------------------------------------------------------------------ closing
    async def aclose(self) -> None:
        """Wait for the batch being written, then write what is still queued (also after a cancellation)."""
        if self._task is not None and not self._task.done():
            try:
                await asyncio.shield(self._task)
            except BaseException:  # cancelled again: the rest is written synchronously below
                pass
        self.close()

    def close(self) -> None:
        """Write what is still queued, synchronously, and stop the thread."""
        self.executor.shutdown(wait=True)
        if self._checkpoint_conn is not None:
            self._checkpoint_conn.close()
            self._checkpoint_conn = None
        if self._own_checkpoints:  # back to SQLite's own checkpoints
            self._own_checkpoints = False
            try:
                self.cache.autocheckpoint(1000)
            except Exception:
                pass
        while self._puts or self._takes or self._releases or self._barriers:
            puts, rels, takes, barriers = self._swap()
            for fut in [*(f for *_, f in takes), *barriers]:  # nobody is left to send: no lease is taken
                fut.cancel()
            put_errs, _ = self._write(puts, rels, [])
            for (_, fut), err in zip(puts, put_errs):
                if fut is not None and not fut.done():
                    try:
                        _resolve(fut, exc=err)
                    except RuntimeError:  # the loop of the future is closed
                        pass
