"""Can this LLM judge replace our physicians? Every answer the toolkit has, on one panel, in one call.

:func:`validate_judges` runs the three comparison designs side by side
(:func:`~medeval_kit.agreement.compare_designs`), the Alt-Test (:func:`~medeval_kit.agreement.alt_test`)
and, optionally, the equal-noise coverage simulation
(:func:`~medeval_kit.agreement.equal_noise_coverage`). A part that cannot run on the panel (for
example the Alt-Test with one adjudicated expert) becomes rows that say why; it never stops the rest.
This is what the ``judge_validation`` notebook and study call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from medeval_kit.agreement.alt_test import METRIC, RESULT_COLUMNS, alt_test
from medeval_kit.agreement.coverage import equal_noise_coverage
from medeval_kit.agreement.designs import compare_designs
from medeval_kit.errors import MedevalError

__all__ = ["JudgeValidation", "validate_judges"]


@dataclass(frozen=True)
class JudgeValidation:
    """The designs table, the Alt-Test per judge and per (judge, human), and the coverage simulation."""

    designs: pd.DataFrame
    alt_test: pd.DataFrame
    alt_details: pd.DataFrame
    coverage: pd.DataFrame

    def summary(self) -> str:
        """One line per judge and design (Δ with CI) and per judge for the Alt-Test."""
        lines = []
        for r in self.designs.itertuples():
            if r.role == "judge":
                d = "NaN" if pd.isna(r.delta) else f"{r.delta:+.3f} [{r.delta_ci_low:+.3f}, {r.delta_ci_high:+.3f}]"
                lines.append(f"{r.design:16s} {r.rater}: {r.metric} {r.estimate:.3f}, delta {d} ({r.n_items} items)")
            elif pd.isna(r.estimate) and r.note:
                lines.append(f"{r.design:16s} {r.note}")
        for r in self.alt_test.itertuples():
            verdict = "passes" if r.passed else "does not pass"
            lines.append(f"alt-test {r.judge}: winning rate {r.estimate:.2f}, advantage probability "
                         f"{r.advantage_probability:.2f} ({r.n_humans_tested} humans tested) -> {verdict}")
        return "\n".join(lines)


def validate_judges(
    df: pd.DataFrame,
    humans: Sequence,
    judges: Sequence,
    *,
    reference: str | None = None,
    metric: str = "cohen_kappa",
    margin: float = 0.05,
    epsilon: float = 0.2,
    abstain: Sequence = (),
    n_boot: int = 1000,
    seed: int = 0,
    coverage_reps: int = 0,
    coverage_items: int = 150,
) -> JudgeValidation:
    """Return a :class:`JudgeValidation`: designs side by side, the Alt-Test, and (``coverage_reps`` > 0) coverage."""
    designs = compare_designs(df, humans, judges, reference=reference, metric=metric, margin=margin,
                              abstain=abstain, n_boot=n_boot, seed=seed)
    try:
        res = alt_test(df[df["label"].notna()], list(humans), list(judges), epsilon=epsilon)
        alt, details = res.to_frame(), res.details
    except MedevalError as exc:
        alt = pd.DataFrame([{c: pd.NA for c in RESULT_COLUMNS} | {
            "judge": j, "metric": METRIC, "ci_method": "", "n_items": 0, "n_failed": 0, "epsilon": epsilon,
            "n_humans_tested": 0, "passed": False, "note": f"alt-test not applicable: {exc}"} for j in judges],
            columns=RESULT_COLUMNS)
        alt[["estimate", "ci_low", "ci_high", "advantage_probability"]] = float("nan")
        details = pd.DataFrame()
    coverage = (equal_noise_coverage(coverage_reps, n_items=coverage_items, n_boot=min(n_boot, 500), seed=seed,
                                     progress=True)
                if coverage_reps > 0 else pd.DataFrame())
    return JudgeValidation(designs, alt, details, coverage)
