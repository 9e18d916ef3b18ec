"""The result of judges against humans: :class:`JudgeComparison`, one row per side in the result contract."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from medeval_kit.results import Result

__all__ = ["JudgeComparison", "COLUMNS", "KEYS", "as_comparison_table", "paired_p_values"]

KEYS = ["role", "rater", "design", "metric"]
COLUMNS = KEYS + ["estimate", "ci_low", "ci_high", "ci_method", "n_items", "n_failed", "note", "n_pairs", "delta",
                  "delta_ci_low", "delta_ci_high", "p_value", "p_noninferiority", "noninferior", "margin", "n_humans",
                  "n_ties", "status", "rule", "reasons"]
"""The columns of every judges-vs-humans table: keys, the result contract, then the design's extras and the
verdict (``status``, ``rule``, ``reasons``; see :mod:`medeval_kit.agreement.verdicts`; empty on humans rows)."""
_TEXT = ("ci_method", "note", "status", "rule", "reasons")

_NAN = float("nan")


_DEFAULTS = {c: 0 if c == "n_failed" else "" if c in _TEXT else None if c == "noninferior" else _NAN for c in COLUMNS}


def _missing(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and v != v)


def as_comparison_table(t: pd.DataFrame | list[dict]) -> pd.DataFrame:
    """``t`` (a frame, or its rows as dicts) with every column of :data:`COLUMNS` (missing ones NaN; ``n_failed``
    0, text ""), in that order."""
    if isinstance(t, list):
        # rows (the designs' own): one frame with the defaults filled in, a third of the time of a frame of the
        # rows and then the steps below, inside every verdict (and hundreds of times in a planning simulation)
        rows = [{**_DEFAULTS, **{k: "" if k in _TEXT and _missing(v) else v for k, v in r.items()}} for r in t]
        df = pd.DataFrame(rows, columns=COLUMNS)
        df["noninferior"] = df["noninferior"].astype("boolean")
        return df
    # One new frame from the columns (a column assignment per missing column cost more than the rest of a
    # planning simulation's table)
    data = {}
    for c in COLUMNS:
        if c in t.columns:
            col = t[c]
        else:
            col = pd.Series(0 if c == "n_failed" else ("" if c in _TEXT else _NAN), index=t.index)
        if c == "noninferior":
            col = col.astype("boolean")
        elif c in _TEXT:
            col = col.fillna("")
        data[c] = col
    return pd.DataFrame(data, index=t.index)


def paired_p_values(d: np.ndarray, margin: float) -> dict:
    """Bootstrap p-values of Δ from finite paired replicates ``d`` (+1 correction: never exactly 0).

    ``p_value`` two-sided for H0: Δ = 0; ``p_noninferiority`` one-sided for H0: Δ <= -margin. The tables use
    :func:`~medeval_kit.agreement.verdicts.noninferiority_p` for the latter, which agrees with the CI exactly.
    """
    B = len(d)
    return dict(p_value=min(1.0, 2 * min((1 + (d <= 0).sum()) / (B + 1), (1 + (d >= 0).sum()) / (B + 1))),
                p_noninferiority=(1 + (d <= -margin).sum()) / (B + 1))


@dataclass(frozen=True)
class JudgeComparison(Result):
    """Judges against the humans under one design: ``table`` (one row per side), ``details`` per human.

    Attributes
    ----------
    table : DataFrame
        One ``humans`` row and one ``judge`` row per judge (:data:`COLUMNS`: keys, the result contract,
        ``delta`` with its CI, p-values and the verdict).
    details : DataFrame
        Per human (leave-one-out) or per pool: the components of the humans' level.
    design : str
        ``loo``, ``pooled`` or ``medqade``.
    metric : str
        The coefficient.
    ci_method : str
        How the intervals were made.
    humans, judges : tuple
        Who was compared.
    design_note : str
        Which aggregation the design used and why.
    """

    table: pd.DataFrame
    details: pd.DataFrame = field(repr=False)
    design: str
    metric: str
    ci_method: str
    humans: tuple
    judges: tuple
    design_note: str = ""
    """Which aggregation the design used and why (leave-one-out: mean over humans or pooled instances)."""

    def to_frame(self) -> pd.DataFrame:
        """The tidy table: role, rater, design, metric, the result contract, n_pairs, delta with CI, p-values."""
        return self.table.copy()

    def summary(self) -> str:
        """A few lines: the humans' level, then each judge's Δ with its CI and the tests."""
        lines = [f"{self.metric}, design {self.design!r}: {len(self.humans)} humans, {len(self.judges)} judge(s); "
                 f"{self.ci_method or 'no CI'}"]
        if self.design_note:
            lines.append(f"  design: {self.design_note}")
        rules = [x for x in pd.unique(self.table["rule"]) if x]
        lines += [f"  rule: {x}" for x in rules]
        for r in self.table.itertuples():
            est = "NaN" if pd.isna(r.estimate) else f"{r.estimate:.3f}"
            ci = "" if pd.isna(r.ci_low) else f" [{r.ci_low:.3f}, {r.ci_high:.3f}]"
            line = f"  {r.role:6s} {r.rater}: {est}{ci} ({r.n_items} items, {r.n_pairs} pairs)"
            if r.role == "judge" and pd.notna(r.delta):
                dci = "" if pd.isna(r.delta_ci_low) else f" [{r.delta_ci_low:+.3f}, {r.delta_ci_high:+.3f}]"
                p = "" if pd.isna(r.p_value) else f", p = {r.p_value:.3g}"
                line += f"; delta {r.delta:+.3f}{dci}{p}"
            if r.role == "judge" and r.status:
                line += f"; {r.status} at margin {r.margin:g}: {r.reasons}"
            if r.note:
                line += f"  note: {r.note}"
            lines.append(line)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return self.table.to_html(index=False)
