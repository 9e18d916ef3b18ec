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
from medeval_kit.agreement.verdicts import join_reasons, mark_invalid
from medeval_kit.columns import Columns, takes_columns
from medeval_kit.errors import MedevalError
from medeval_kit.results import RESULT_COLUMNS as CONTRACT
from medeval_kit.results import Result

__all__ = ["JudgeValidation", "validate_judges"]


@dataclass(frozen=True)
class JudgeValidation(Result):
    """The designs table, the Alt-Test per judge and per (judge, human), and the coverage simulation.

    Attributes
    ----------
    designs : DataFrame
        :func:`~medeval_kit.agreement.compare_designs`: every design's table, stacked.
    alt_test : DataFrame
        The Alt-Test, one row per judge (:data:`~medeval_kit.agreement.alt_test.RESULT_COLUMNS`).
    alt_details : DataFrame
        The Alt-Test per (judge, human).
    coverage : DataFrame
        :func:`~medeval_kit.agreement.equal_noise_coverage` (empty unless asked for).
    """

    designs: pd.DataFrame
    alt_test: pd.DataFrame
    alt_details: pd.DataFrame
    coverage: pd.DataFrame

    def to_frame(self) -> pd.DataFrame:
        """Every verdict in one table: the designs' rows, then one Alt-Test row per judge.

        Returns
        -------
        DataFrame
            ``part`` (``designs`` or ``alt_test``), ``design, role, rater, metric``, the result contract,
            ``status``, ``reasons``, then the parts' other columns.
        """
        d = self.designs.assign(part="designs")
        a = self.alt_test.rename(columns={"judge": "rater"}).assign(part="alt_test", role="judge", design="alt_test")
        out = pd.concat([d, a], ignore_index=True)
        lead = ["part", "design", "role", "rater", "metric", *CONTRACT, "status", "reasons"]
        lead = [c for c in lead if c in out.columns]
        return out[lead + [c for c in out.columns if c not in lead]]

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
            why = f": {r.reasons}" if isinstance(r.reasons, str) and r.reasons and r.status != "pass" else ""
            lines.append(f"alt-test {r.judge}: winning rate {r.estimate:.2f}, advantage probability "
                         f"{r.advantage_probability:.2f} ({r.n_humans_tested} humans tested) -> {r.status}{why}")
        return "\n".join(lines)


@takes_columns("item", "rater", "label", "rater_kind")
def validate_judges(
    df: pd.DataFrame,
    humans: Sequence,
    judges: Sequence,
    *,
    columns: Columns = None,
    reference: str | None = None,
    metric: str = "cohen_kappa",
    margin: float = 0.05,
    epsilon: float = 0.2,
    abstain: Sequence = (),
    n_boot: int = 1000,
    seed: int = 0,
    coverage_reps: int = 0,
    coverage_items: int = 150,
    invalid: Sequence[str] = (),
    accept_label_warnings: bool = False,
) -> JudgeValidation:
    """Return a :class:`JudgeValidation`: designs side by side, the Alt-Test, and (``coverage_reps`` > 0) coverage.

    Parameters
    ----------
    df : DataFrame
        Long annotations (item, rater, label).
    humans, judges : sequence
        Who is human and which judges to test.
    columns : mapping of str to str, optional
        Your column names as ``{canonical name: your column}``, e.g. ``{"item": "case_id"}``.
    reference, metric, margin, epsilon, abstain, n_boot, seed
        As in :func:`~medeval_kit.agreement.compare_designs` and :func:`~medeval_kit.agreement.alt_test`.
    coverage_reps, coverage_items : int
        The equal-noise simulation (0 skips it).
    invalid : sequence of str
        Findings that make every verdict ``invalid`` (e.g. the blocking label notes of
        :func:`~medeval_kit.agreement.read_study` read from the file as written).
    accept_label_warnings : bool
        Keep the verdicts although the label checks found problems.

    Returns
    -------
    JudgeValidation
        ``designs`` and ``alt_test`` carry each judge's ``status``, ``rule`` and ``reasons``;
        ``.to_frame()`` stacks them in the result contract.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> v = validate_judges(synthetic_panel(n_items=60, seed=1), ["h1", "h2", "h3"], ["llm1"], n_boot=100)
    >>> sorted(set(v.designs["design"]))[:1]
    ['loo (humans)']
    """
    designs = compare_designs(df, humans, judges, reference=reference, metric=metric, margin=margin,
                              abstain=abstain, n_boot=n_boot, seed=seed, accept_label_warnings=accept_label_warnings)
    try:
        res = alt_test(df[df["label"].notna()], list(humans), list(judges), epsilon=epsilon,
                       accept_label_warnings=accept_label_warnings)
        if invalid and not accept_label_warnings:
            res = mark_invalid(res, "; ".join(map(str, invalid)))
        alt, details = res.to_frame(), res.details
    except MedevalError as exc:
        alt = pd.DataFrame([{c: pd.NA for c in RESULT_COLUMNS} | {
            "judge": j, "metric": METRIC, "ci_method": "", "n_items": 0, "n_failed": 0, "epsilon": epsilon,
            "n_humans_tested": 0, "passed": False, "status": "not_testable", "reasons": f"not applicable: {exc}",
            "note": f"alt-test not applicable: {exc}"} for j in judges], columns=RESULT_COLUMNS)
        alt[["estimate", "ci_low", "ci_high", "advantage_probability"]] = float("nan")
        details = pd.DataFrame()
    coverage = (equal_noise_coverage(coverage_reps, n_items=coverage_items, n_boot=min(n_boot, 500), seed=seed,
                                     progress=True)
                if coverage_reps > 0 else pd.DataFrame())
    if invalid and not accept_label_warnings:
        sel = designs["role"].eq("judge")
        designs.loc[sel, "status"] = "invalid"
        designs.loc[sel, "noninferior"] = False
        designs.loc[sel, "reasons"] = [join_reasons([f"invalid input: {'; '.join(map(str, invalid))}", r])
                                       for r in designs.loc[sel, "reasons"]]
    return JudgeValidation(designs, alt, details, coverage)
