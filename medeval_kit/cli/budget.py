"""One budget for a whole ``medeval run`` (issue 20): the run id and cap that every notebook kernel inherits.

Before the worker processes start, the runner sets ``MEDEVAL_RUN_ID`` (a fresh ``uuid4().hex`` per
:func:`medeval_kit.cli.runner.run_studies` call) and, when a budget applies, ``MEDEVAL_RUN_BUDGET_USD`` (the cap
as a decimal string). The LLM layer's run ledger (``medeval_kit.llm.ledger``) charges every call of the run to
that id, across processes.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

__all__ = ["RUN_BUDGET", "RUN_ID", "decimal_text", "new_run_id", "run_budget", "run_environment", "spend_line"]

RUN_ID = "MEDEVAL_RUN_ID"
RUN_BUDGET = "MEDEVAL_RUN_BUDGET_USD"


def run_budget(studies: Mapping[str, Any], selected: Sequence[str], flag: float | None = None
               ) -> tuple[float | None, str]:
    """Return the budget of a run and where it comes from: ``--budget-usd``, else the smallest study budget.

    Parameters
    ----------
    studies : mapping
        Study name -> :class:`medeval_kit.cli.runner.Study`.
    selected : sequence of str
        The selected studies (all when empty).
    flag : float, optional
        ``--budget-usd``; it wins over the studies' ``budget_usd``.

    Returns
    -------
    (float or None, str)
        The cap in USD (None: no budget) and its source, e.g. ``"budget_usd of studies/judging.yaml"``.

    Example
    -------
    >>> run_budget({}, [], 0.5)
    (0.5, '--budget-usd')
    """
    if flag is not None:
        return float(flag), "--budget-usd"
    given = [(s.budget_usd, s.path.name) for name in (selected or list(studies)) if name in studies
             for s in [studies[name]] if getattr(s, "budget_usd", None) is not None]
    if not given:
        return None, "no budget"
    cap, file = min(given)
    also = " (the smallest of the selected studies')" if len(given) > 1 else ""
    return cap, f"budget_usd of {file}{also}"


def decimal_text(value: float) -> str:
    """Return ``value`` as a plain decimal: ``0.00002`` rather than ``2e-05``."""
    return format(Decimal(repr(float(value))).normalize(), "f")


@contextlib.contextmanager
def run_environment(run_id: str, cap: float | None) -> Iterator[None]:
    """Set ``MEDEVAL_RUN_ID`` (and ``MEDEVAL_RUN_BUDGET_USD`` when ``cap``) for the run; restore them after.

    Parameters
    ----------
    run_id : str
        A fresh token (:func:`new_run_id`).
    cap : float, optional
        The run's budget in USD; without one ``MEDEVAL_RUN_BUDGET_USD`` is left as it is.

    Example
    -------
    >>> with run_environment("abc", 0.05):
    ...     os.environ["MEDEVAL_RUN_BUDGET_USD"]
    '0.05'
    """
    saved = {k: os.environ.get(k) for k in (RUN_ID, RUN_BUDGET)}
    os.environ[RUN_ID] = run_id
    if cap is not None:
        os.environ[RUN_BUDGET] = decimal_text(cap)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def new_run_id() -> str:
    """Return a fresh run id (``uuid4().hex``)."""
    return uuid.uuid4().hex


def spend_line(run_id: str, cap: float | None) -> str | None:
    """Return what the run spent, from the LLM layer's run ledger; None without a ledger, budget or spend.

    Parameters
    ----------
    run_id : str
        The run's ``MEDEVAL_RUN_ID``.
    cap : float, optional
        The budget the runner applied (shown when the ledger has no row for the run).

    Returns
    -------
    str or None
        One line for the end of ``medeval run``.

    Example
    -------
    ``budget $0.05 for this run: spent $0.0312, unconfirmed $0.0000, 4 requests refused``
    """
    try:
        from medeval_kit.llm.ledger import run_spend
    except ImportError:
        return None
    s = run_spend(run_id)
    if s.get("cap_usd") is not None:
        cap = s["cap_usd"]
    if cap is None and not (s.get("spent_usd") or s.get("unconfirmed_usd") or s.get("n_refused")):
        return None  # no budget and nothing spent: nothing worth a line
    head = f"budget ${decimal_text(cap)} for this run" if cap is not None else "no budget for this run"
    return (f"{head}: spent ${s.get('spent_usd', 0.0):.4f}, unconfirmed ${s.get('unconfirmed_usd', 0.0):.4f}, "
            f"{s.get('n_refused', 0)} requests refused")
