"""The result of judges against humans: :class:`JudgeComparison`, one row per side in the result contract."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["JudgeComparison", "COLUMNS", "KEYS", "as_comparison_table", "paired_p_values"]

KEYS = ["role", "rater", "design", "metric"]
COLUMNS = KEYS + ["estimate", "ci_low", "ci_high", "ci_method", "n_items", "n_failed", "note", "n_pairs", "delta",
                  "delta_ci_low", "delta_ci_high", "p_value", "p_noninferiority", "noninferior", "margin", "n_humans",
                  "n_ties"]
"""The columns of every judges-vs-humans table: keys, the result contract, then the design's extras."""

_NAN = float("nan")


def as_comparison_table(t: pd.DataFrame) -> pd.DataFrame:
    """``t`` with every column of :data:`COLUMNS` (missing ones NaN; ``n_failed`` 0, text ""), in that order."""
    t = t.copy()
    for c in COLUMNS:
        if c not in t.columns:
            t[c] = 0 if c == "n_failed" else ("" if c in ("ci_method", "note") else _NAN)
    t["noninferior"] = t["noninferior"].astype("boolean")
    t["note"] = t["note"].fillna("")
    return t[COLUMNS]


def paired_p_values(d: np.ndarray, margin: float) -> dict:
    """Bootstrap p-values of Δ from finite paired replicates ``d`` (+1 correction: never exactly 0).

    ``p_value`` two-sided for H0: Δ = 0; ``p_noninferiority`` one-sided for H0: Δ <= -margin.
    """
    B = len(d)
    return dict(p_value=min(1.0, 2 * min((1 + (d <= 0).sum()) / (B + 1), (1 + (d >= 0).sum()) / (B + 1))),
                p_noninferiority=(1 + (d <= -margin).sum()) / (B + 1))


@dataclass(frozen=True)
class JudgeComparison:
    """Judges against the humans under one design: ``table`` (one row per side), ``details`` per human."""

    table: pd.DataFrame
    details: pd.DataFrame = field(repr=False)
    design: str
    metric: str
    ci_method: str
    humans: tuple
    judges: tuple

    def to_frame(self) -> pd.DataFrame:
        """The tidy table: role, rater, design, metric, the result contract, n_pairs, delta with CI, p-values."""
        return self.table.copy()

    def summary(self) -> str:
        """A few lines: the humans' level, then each judge's Δ with its CI and the tests."""
        lines = [f"{self.metric}, design {self.design!r}: {len(self.humans)} humans, {len(self.judges)} judge(s); "
                 f"{self.ci_method or 'no CI'}"]
        for r in self.table.itertuples():
            est = "NaN" if pd.isna(r.estimate) else f"{r.estimate:.3f}"
            ci = "" if pd.isna(r.ci_low) else f" [{r.ci_low:.3f}, {r.ci_high:.3f}]"
            line = f"  {r.role:6s} {r.rater}: {est}{ci} ({r.n_items} items, {r.n_pairs} pairs)"
            if r.role == "judge" and pd.notna(r.delta):
                dci = "" if pd.isna(r.delta_ci_low) else f" [{r.delta_ci_low:+.3f}, {r.delta_ci_high:+.3f}]"
                ni = "non-inferior" if r.noninferior else "not shown non-inferior"
                line += f"; delta {r.delta:+.3f}{dci}, p = {r.p_value:.3g}; {ni} at margin {r.margin:g}"
            if r.note:
                line += f"  note: {r.note}"
            lines.append(line)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return self.table.to_html(index=False)
