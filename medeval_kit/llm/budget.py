"""A spending cap in USD that is never exceeded (:class:`Budget`), shared by the calls of one client or
of several (a study run), in one thread or several, live or through batch APIs."""

from __future__ import annotations

import asyncio
import math
import threading

from .errors import BudgetError
from .secrets import get_logger

log = get_logger(__name__)

_EPS = 1e-12  # USD: float rounding of sums of prices


def _wake(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)


class Budget:
    """A spending cap in USD that is never exceeded.

    The cap holds for a client's whole lifetime (every ``run``), or for a study run when several clients
    share one (``get_client(..., budget=shared)``). It keeps ``spent + reserved + unconfirmed <= cap``:

    * ``reserved`` is the proven upper-bound cost of the calls in flight: each call reserves its ceiling
      (prompt tokens at :func:`~medeval_kit.llm.cost.prompt_token_bound`, ``max_tokens`` at the output
      price) just before it is sent, never while it waits in the queue;
    * ``spent`` is what delivered replies cost, at their reported usage (settled on arrival);
    * ``unconfirmed`` is the reserved cost of attempts whose reply may have been generated, and billed,
      but never arrived: a timeout after sending, a reset mid-body, an unreadable body, a cancelled call.

    A call that does not fit waits while calls in flight may free enough, and is refused only when it
    cannot fit even then. A reply that reports more usage than its reservation means the bound failed or
    the server over-reports: the cap can no longer be proven, so no new call is sent (``halted`` says why;
    a new Budget starts afresh). Thread-safe: clients in different threads may share one.

    Parameters
    ----------
    cap_usd : float
        The cap in USD (``>= 0``).
    """

    def __init__(self, cap_usd: float) -> None:
        cap = float(cap_usd)
        if not cap >= 0.0 or math.isinf(cap):
            raise BudgetError(f"budget: the cap must be a finite number of USD >= 0, got {cap_usd!r}")
        self.cap = cap
        self.spent = 0.0
        self.reserved = 0.0
        self.unconfirmed = 0.0
        self.halted: str | None = None
        self.batches: dict[str, dict[str, float]] = {}  # batch id -> {key: ceiling}, until collected
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = []

    def __repr__(self) -> str:
        return (f"Budget(cap=${self.cap:.4f}, spent=${self.spent:.4f}, reserved=${self.reserved:.4f}, "
                f"unconfirmed=${self.unconfirmed:.4f}{', halted' if self.halted else ''})")

    @property
    def remaining(self) -> float:
        """What a new call may still reserve now."""
        return max(0.0, self.cap - self.spent - self.reserved - self.unconfirmed)

    def _refusal(self, amount: float) -> str:
        return (f"spent ${self.spent:.4f} + unconfirmed ${self.unconfirmed:.4f} + this call's ceiling "
                f"${amount:.4f} would exceed the budget of ${self.cap:.4f}")

    def _try(self, amount: float) -> tuple[str, str | None]:
        if self.halted:
            return "refuse", self.halted
        if self.spent + self.unconfirmed + self.reserved + amount <= self.cap + _EPS:
            self.reserved += amount
            return "ok", None
        if self.reserved > _EPS and self.spent + self.unconfirmed + amount <= self.cap + _EPS:
            return "wait", None  # fits once calls in flight settle
        return "refuse", self._refusal(amount)

    async def reserve(self, amount: float) -> str | None:
        """Reserve ``amount`` USD; wait while calls in flight may free enough. Return None once
        reserved, else the reason it never can be."""
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:
                verdict, why = self._try(amount)
                if verdict == "wait":
                    fut = loop.create_future()
                    self._waiters.append((loop, fut))
            if verdict == "ok":
                return None
            if verdict == "refuse":
                return why
            try:  # woken by a settle; re-checked at least every second (clients in other threads)
                await asyncio.wait_for(fut, 1.0)
            except asyncio.TimeoutError:
                pass

    def _changed(self) -> None:  # with the lock held
        if abs(self.reserved) < _EPS:
            self.reserved = 0.0
        waiters, self._waiters = self._waiters, []
        for loop, fut in waiters:
            try:
                loop.call_soon_threadsafe(_wake, fut)
            except RuntimeError:  # that loop is closed
                pass

    def settle(self, reserved: float, actual: float) -> None:
        """A reply arrived: replace its reservation by its reported cost."""
        with self._lock:
            self.reserved -= reserved
            self.spent += reserved if math.isnan(actual) else actual
            if not math.isnan(actual) and actual > reserved * (1 + 1e-9) + _EPS and not self.halted:
                self.halted = (f"a reply reported usage costing ${actual:.6f}, more than its proven ceiling "
                               f"${reserved:.6f}: the budget of ${self.cap:.4f} can no longer be guaranteed, "
                               "so no new calls are sent")
                log.warning("budget: %s", self.halted)
            self._changed()

    def release(self, reserved: float) -> None:
        """The call generated nothing (refused, or never reached the server): free its reservation."""
        with self._lock:
            self.reserved -= reserved
            self._changed()

    def lose(self, reserved: float) -> None:
        """The reply may have been generated and billed but never arrived: count it as unconfirmed."""
        with self._lock:
            self.reserved -= reserved
            self.unconfirmed += reserved
            self._changed()

    # batch APIs: a submitted batch is billed later, when the provider runs it
    def commit(self, amount: float) -> str | None:
        """Count ``amount`` (the ceiling of a batch about to be submitted) as unconfirmed now; return
        None, or the reason it does not fit (then nothing is counted)."""
        with self._lock:
            if self.halted:
                return self.halted
            if self.spent + self.reserved + self.unconfirmed + amount > self.cap + _EPS:
                return (f"spent ${self.spent:.4f} + in flight ${self.reserved:.4f} + unconfirmed "
                        f"${self.unconfirmed:.4f} + the batch's ceiling ${amount:.4f} would exceed the budget "
                        f"of ${self.cap:.4f}")
            self.unconfirmed += amount
            return None

    def uncommit(self, amount: float) -> None:
        """A batch counted by :meth:`commit` was not submitted after all."""
        with self._lock:
            self.unconfirmed -= amount
            self._changed()

    def settle_batch(self, ceilings: dict[str, float], costs: dict[str, float], failed: set[str]) -> None:
        """Results of a batch submitted under this budget: stored items move from unconfirmed (at their
        ceiling) to spent (at their reported cost); items that failed inside the batch were not billed;
        items with neither stay unconfirmed."""
        with self._lock:
            for k, ceiling in ceilings.items():
                if k in costs:
                    cost = costs[k] if costs[k] is not None and not math.isnan(costs[k]) else ceiling
                    self.unconfirmed -= ceiling
                    self.spent += cost
                    if cost > ceiling * (1 + 1e-9) + _EPS and not self.halted:
                        self.halted = (f"a batch reply reported usage costing ${cost:.6f}, more than its proven "
                                       f"ceiling ${ceiling:.6f}: the budget of ${self.cap:.4f} can no longer be "
                                       "guaranteed, so no new calls are sent")
                        log.warning("budget: %s", self.halted)
                elif k in failed:
                    self.unconfirmed -= ceiling
            if abs(self.unconfirmed) < _EPS:
                self.unconfirmed = 0.0
            self._changed()

