"""One budget for a whole study run, shared by every process and client of the run (the run ledger).

The study runner sets ``MEDEVAL_RUN_ID`` (a hex token) and, when the run has a budget,
``MEDEVAL_RUN_BUDGET_USD`` (a decimal string) in the environment of every notebook process. Every
:class:`~medeval_kit.llm.Client` created while both are set keeps the run's spending in one row of the
table ``run_ledger`` of the project's cache database (the file of :class:`~medeval_kit.llm.cache.Cache`;
the table is created on first use, so a run without a budget never changes the file), in addition to
its own ``budget_usd`` if any: a call is sent only if both allow it.

The guarantees are those of :class:`~medeval_kit.llm.budget.Budget`, across processes: each call
reserves its proven ceiling before it is sent, in one ``BEGIN IMMEDIATE`` transaction (the calls that
reach that point together share one), so ``spent + reserved + unconfirmed <= cap`` holds whatever
the processes do; a reply settles at its reported usage; an attempt whose reply may have been billed
but never arrived stays counted at its ceiling as unconfirmed. A process that dies with calls in flight
leaves their reservations counted: the cap may then refuse more than it had to, never overshoot.
:func:`run_spend` reads the state of a run (the runner prints it).
"""

from __future__ import annotations

import asyncio
import math
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from .cache import connect_wal, default_cache_path
from .errors import BudgetError
from .secrets import get_logger

log = get_logger(__name__)

RUN_ID_ENV = "MEDEVAL_RUN_ID"
RUN_BUDGET_ENV = "MEDEVAL_RUN_BUDGET_USD"
_EPS = 1e-12
_COLS = ("cap_usd", "spent_usd", "reserved_usd", "unconfirmed_usd", "n_refused", "halted")
_TABLE = ("CREATE TABLE IF NOT EXISTS run_ledger (run_id TEXT PRIMARY KEY, cap_usd REAL NOT NULL, "
          "spent_usd REAL NOT NULL DEFAULT 0, reserved_usd REAL NOT NULL DEFAULT 0, "
          "unconfirmed_usd REAL NOT NULL DEFAULT 0, n_refused INTEGER NOT NULL DEFAULT 0, halted TEXT, "
          "updated REAL NOT NULL)")


def run_budget_from_env() -> tuple[str, float] | None:
    """``(run_id, cap_usd)`` when ``MEDEVAL_RUN_ID`` and ``MEDEVAL_RUN_BUDGET_USD`` are both set, else None.

    Raises
    ------
    BudgetError
        When the budget is not a finite number >= 0.
    """
    run_id, cap = os.environ.get(RUN_ID_ENV, "").strip(), os.environ.get(RUN_BUDGET_ENV, "").strip()
    if not run_id or not cap:
        return None
    try:
        value = float(cap)
    except ValueError:
        value = math.nan
    if not value >= 0.0 or math.isinf(value):
        raise BudgetError(f"{RUN_BUDGET_ENV}={cap!r}: the run budget must be a finite number of USD >= 0")
    return run_id, value


class RunLedger:
    """The spending of one run in the cache database (synchronous; see the module docstring).

    Parameters
    ----------
    path : path-like
        The cache database (``Cache.path``).
    run_id : str
        The run (``MEDEVAL_RUN_ID``).
    cap_usd : float
        The run's cap; when processes disagree the smallest one holds.
    """

    def __init__(self, path: str | os.PathLike, run_id: str, cap_usd: float) -> None:
        self.path, self.run_id, self.cap = Path(path), str(run_id), float(cap_usd)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None
        self.batches: dict[str, dict[str, float]] = {}  # batch id -> {key: ceiling}, until collected

    def __repr__(self) -> str:
        return f"RunLedger({self.run_id!r}, cap=${self.cap:.4f}, {str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        conn = connect_wal(self.path)
        conn.execute(_TABLE)
        conn.execute("INSERT OR IGNORE INTO run_ledger (run_id, cap_usd, updated) VALUES (?,?,?)",
                     (self.run_id, self.cap, time.time()))
        conn.execute("UPDATE run_ledger SET cap_usd=? WHERE run_id=? AND cap_usd>?", (self.cap, self.run_id, self.cap))
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _txn(self, fn) -> Any:
        """Run ``fn(state)`` on the run's row in one BEGIN IMMEDIATE transaction; write the state back."""
        with self._lock:
            conn = self._connect()
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute(f"SELECT {','.join(_COLS)} FROM run_ledger WHERE run_id=?",
                                   (self.run_id,)).fetchone()
                state = dict(zip(_COLS, row))
                out = fn(state)
                for k in ("reserved_usd", "unconfirmed_usd"):
                    if abs(state[k]) < 1e-9:
                        state[k] = 0.0
                conn.execute("UPDATE run_ledger SET spent_usd=?, reserved_usd=?, unconfirmed_usd=?, n_refused=?, "
                             "halted=?, updated=? WHERE run_id=?",
                             (state["spent_usd"], state["reserved_usd"], state["unconfirmed_usd"], state["n_refused"],
                              state["halted"], time.time(), self.run_id))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return out

    def apply(self, ops: list[tuple[str, float, float]], amounts: list[float]) -> list[str | None]:
        """In one transaction: apply ``ops`` (``("settle", reserved, actual)``, ``("release", reserved, 0)``,
        ``("lose", reserved, 0)``, ``("refused", 0, 0)``), then try to reserve
        each of ``amounts`` in order.

        Returns
        -------
        list
            Per amount: None (reserved), ``"wait"`` (fits once calls in flight settle) or the reason
            it never can.
        """
        def fn(s: dict[str, Any]) -> list[str | None]:
            for kind, reserved, actual in ops:
                _apply_op(s, kind, reserved, actual)
            return [_try(s, a) for a in amounts]

        return self._txn(fn)

    # batch APIs: a submitted batch is billed later, when the provider runs it (as ``Budget.commit`` ...)
    def commit(self, amount: float) -> str | None:
        """Count ``amount`` (the ceiling of a batch about to be submitted) as unconfirmed now; return None,
        or the reason it does not fit (then nothing is counted)."""
        def fn(s: dict[str, Any]) -> str | None:
            if s["halted"]:
                return s["halted"]
            if s["spent_usd"] + s["reserved_usd"] + s["unconfirmed_usd"] + amount > s["cap_usd"] + _EPS:
                s["n_refused"] += 1
                return (f"run budget: spent ${s['spent_usd']:.4f} + in flight ${s['reserved_usd']:.4f} + unconfirmed "
                        f"${s['unconfirmed_usd']:.4f} + the batch's ceiling ${amount:.4f} would exceed the run's "
                        f"budget of ${s['cap_usd']:.4f}")
            s["unconfirmed_usd"] += amount
            return None

        return self._txn(fn)

    def uncommit(self, amount: float) -> None:
        """A batch counted by :meth:`commit` was not submitted after all."""
        self._txn(lambda s: s.__setitem__("unconfirmed_usd", s["unconfirmed_usd"] - amount))

    def settle_batch(self, ceilings: dict[str, float], costs: dict[str, float], failed: set[str]) -> None:
        """Results of a batch committed here: stored items move from unconfirmed (at their ceiling) to spent
        (at their reported cost); items that failed inside the batch were not billed."""
        def fn(s: dict[str, Any]) -> None:
            for k, ceiling in ceilings.items():
                if k in costs:
                    cost = costs[k] if costs[k] is not None and not math.isnan(costs[k]) else ceiling
                    s["unconfirmed_usd"] -= ceiling
                    s["spent_usd"] += cost
                elif k in failed:
                    s["unconfirmed_usd"] -= ceiling

        self._txn(fn)

    def state(self) -> dict[str, Any]:
        """The run's row: ``cap_usd``, ``spent_usd``, ``reserved_usd``, ``unconfirmed_usd``, ``n_refused``,
        ``halted``."""
        return self._txn(lambda s: dict(s))

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _apply_op(s: dict[str, Any], kind: str, reserved: float, actual: float) -> None:
    if kind == "settle":
        s["reserved_usd"] -= reserved
        s["spent_usd"] += reserved if math.isnan(actual) else actual
        if not math.isnan(actual) and actual > reserved * (1 + 1e-9) + _EPS and not s["halted"]:
            s["halted"] = (f"a reply reported usage costing ${actual:.6f}, more than its proven ceiling "
                           f"${reserved:.6f}: the run budget can no longer be guaranteed, so no new calls are sent")
            log.warning("run budget: %s", s["halted"])
    elif kind == "release":
        s["reserved_usd"] -= reserved
    elif kind == "lose":
        s["reserved_usd"] -= reserved
        s["unconfirmed_usd"] += reserved
    elif kind == "refused":
        s["n_refused"] += 1


def _try(s: dict[str, Any], amount: float) -> str | None:
    if s["halted"]:
        return s["halted"]
    used = s["spent_usd"] + s["unconfirmed_usd"]
    if used + s["reserved_usd"] + amount <= s["cap_usd"] + _EPS:
        s["reserved_usd"] += amount
        return None
    if s["reserved_usd"] > _EPS and used + amount <= s["cap_usd"] + _EPS:
        return "wait"
    return (f"run budget: spent ${s['spent_usd']:.4f} + unconfirmed ${s['unconfirmed_usd']:.4f} + this call's "
            f"ceiling ${amount:.4f} would exceed the run's budget of ${s['cap_usd']:.4f}")


class LedgerGate:
    """The run ledger as one ``Client.run`` sees it, with the interface of a Budget (``reserve`` /
    ``settle`` / ``release`` / ``lose``): the reservations of the calls reaching it together and the
    settlements queued meanwhile go in one transaction, in a thread of their own. A reservation that
    fits only once calls in flight (of any process) settle waits, re-checked with a growing interval,
    at most ``max_wait`` seconds."""

    def __init__(self, ledger: RunLedger, max_wait: float = 300.0) -> None:
        self.ledger, self.max_wait = ledger, float(max_wait)
        self._ops: list[tuple[str, float, float]] = []
        self._asks: list[tuple[float, asyncio.Future]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self._exec = None

    def _executor(self):
        if self._exec is None:
            import concurrent.futures

            self._exec = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="medeval-ledger")
        return self._exec

    def _kick(self) -> None:
        if self._task is None or self._task.done():
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop (a synchronous caller): written at close
                return
            self._task = self._loop.create_task(self._flush())

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        while self._ops or self._asks:
            ops, self._ops = self._ops, []
            asks, self._asks = self._asks, []
            try:
                res = await loop.run_in_executor(self._executor(), self.ledger.apply, ops, [a for a, _ in asks])
            except Exception as exc:  # the cap cannot be checked: refuse rather than risk it; the reservations
                # of the dropped settlements stay counted, so the ledger can only over-count
                log.warning("run budget: the ledger in %s is unreadable (%s: %s)", self.ledger.path,
                            type(exc).__name__, exc)
                res = [f"run budget: the ledger in {self.ledger.path} is unreadable ({type(exc).__name__}: {exc})"
                       for _ in asks]
            for (_, fut), r in zip(asks, res):
                if not fut.done():
                    fut.set_result(r)

    async def _ask(self, amount: float) -> str | None:
        fut = asyncio.get_running_loop().create_future()
        self._asks.append((amount, fut))
        self._kick()
        return await fut

    async def reserve(self, amount: float) -> str | None:
        """Reserve ``amount`` USD in the run ledger; None once reserved, else why it cannot be."""
        t0, interval = time.monotonic(), 0.02
        while True:
            why = await self._ask(amount)
            if why != "wait":
                break
            if time.monotonic() - t0 > self.max_wait:
                why = (f"run budget: waited {self.max_wait:.0f} s for calls in flight (of this run's processes) "
                       "to settle")
                break
            await asyncio.sleep(interval)
            interval = min(0.5, interval * 1.5)
        if why is not None:
            self._queue("refused", 0.0, 0.0)
        return why

    def _queue(self, kind: str, reserved: float, actual: float) -> None:
        self._ops.append((kind, reserved, actual))
        self._kick()

    def settle(self, reserved: float, actual: float) -> None:
        """A reply arrived: replace its reservation by its reported cost."""
        self._queue("settle", reserved, actual)

    def release(self, reserved: float) -> None:
        """The call generated nothing: free its reservation."""
        self._queue("release", reserved, 0.0)

    def lose(self, reserved: float) -> None:
        """The reply may have been billed but never arrived: count it as unconfirmed."""
        self._queue("lose", reserved, 0.0)

    async def aclose(self) -> None:
        """Write what is queued (at the end of a run, also on error or cancellation)."""
        if self._task is not None and not self._task.done():
            try:
                await asyncio.shield(self._task)
            except BaseException:  # cancelled: written synchronously below
                pass
        self.close()

    def close(self) -> None:
        """Write what is still queued, synchronously."""
        ops, self._ops = self._ops, []
        if ops:
            try:
                self.ledger.apply(ops, [])
            except Exception as exc:  # the reservations stay counted: never an overshoot
                log.warning("run budget: could not settle %d calls in %s (%s)", len(ops), self.ledger.path, exc)
        if self._exec is not None:
            self._exec.shutdown(wait=True)
            self._exec = None


class Guard:
    """What a call must pass before it is sent: the client's Budget and the run ledger, both when set."""

    def __init__(self, budget: Any, gate: LedgerGate | None) -> None:
        self.budget, self.gate = budget, gate

    async def reserve(self, amount: float) -> str | None:
        if self.budget is not None:
            why = await self.budget.reserve(amount)
            if why is not None:
                return why
        if self.gate is not None:
            why = await self.gate.reserve(amount)
            if why is not None:
                if self.budget is not None:
                    self.budget.release(amount)
                return why
        return None

    def settle(self, reserved: float, actual: float) -> None:
        for b in (self.budget, self.gate):
            if b is not None:
                b.settle(reserved, actual)

    def release(self, reserved: float) -> None:
        for b in (self.budget, self.gate):
            if b is not None:
                b.release(reserved)

    def lose(self, reserved: float) -> None:
        for b in (self.budget, self.gate):
            if b is not None:
                b.lose(reserved)


def run_spend(run_id: str, path: str | os.PathLike | None = None) -> dict[str, Any]:
    """What a run spent under its run budget, as kept in the cache database.

    Parameters
    ----------
    run_id : str
        The run (the ``MEDEVAL_RUN_ID`` its processes had).
    path : path-like, optional
        The cache database; default :func:`~medeval_kit.llm.cache.default_cache_path`.

    Returns
    -------
    dict
        ``cap_usd`` (None when the run had no budget), ``spent_usd`` (replies at their reported usage),
        ``reserved_usd`` (calls still in flight, or of processes that died), ``unconfirmed_usd``
        (attempts whose reply may have been billed but never arrived, at their ceiling) and
        ``n_refused`` (calls the run budget refused).
    """
    if path is None:
        path = default_cache_path()
    out: dict[str, Any] = {"cap_usd": None, "spent_usd": 0.0, "reserved_usd": 0.0, "unconfirmed_usd": 0.0,
                           "n_refused": 0}
    if not Path(path).exists():
        return out
    conn = sqlite3.connect(path, timeout=60.0)
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='run_ledger'").fetchone() is None:
            return out
        row = conn.execute(f"SELECT {','.join(_COLS[:5])} FROM run_ledger WHERE run_id=?", (str(run_id),)).fetchone()
    finally:
        conn.close()
    if row is not None:
        out.update(zip(_COLS[:5], row))
    return out
