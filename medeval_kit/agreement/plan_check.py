"""Does a plan deliver its power? :func:`validate_plan` plans, then re-simulates fresh panels at the planned n."""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial

import numpy as np
import pandas as pd

from medeval_kit.agreement.panel_model import (
    REFERENCE_JUDGE,
    PanelModel,
    PlanningError,
    panel_model_from,
)
from medeval_kit.agreement.planning import PLAN_DESIGNS, _draw, _FastVerdicts, _panel_verdicts, plan_judge_vs_humans
from medeval_kit.stats import wilson_interval

__all__ = ["validate_plan"]


# --------------------------------------------------------------------------- validation


def validate_plan(
    model: PanelModel | None = None,
    *,
    judge: str | None = None,
    designs: Sequence[str] = PLAN_DESIGNS,
    powers: Sequence[float] = (0.8, 0.9),
    margin: float = 0.1,
    n_fresh: int = 400,
    n_boot_check: int = 1000,
    n_sim: int = 200,
    n_boot: int = 200,
    seed: int = 0,
    fresh_seed: int = 987654,
    progress: bool = False,
    fast_path: bool = True,
) -> pd.DataFrame:
    """Does the plan deliver its power? Plan, then re-simulate fresh panels at the planned n.

    For every (design, target power) the judge's n is planned with :func:`plan_judge_vs_humans`
    (``n_sim`` panels, ``n_boot`` resamples, seeds from ``seed``); then ``n_fresh`` fresh panels
    (seeds from ``fresh_seed``) at the planned n are analysed with ``judge_vs_humans`` at
    ``n_boot_check`` resamples (the study's default 1000), and the realised power is compared with the
    target (the issue asks for ±5 points).

    Parameters
    ----------
    model : PanelModel, optional
        Default: 3 physicians with pairwise κ 0.6, 3 categories, one judge as good as them.
    judge : str, optional
        The judge whose plan is checked (default: the model's first; :data:`REFERENCE_JUDGE` for the reference).
    designs, powers : sequences
        The scenarios (every combination).
    margin : float
        Non-inferiority margin.
    n_fresh, n_boot_check : int
        Fresh panels per scenario and bootstrap resamples in each.
    n_sim, n_boot, seed : int
        Passed to :func:`plan_judge_vs_humans`.
    fresh_seed : int
        Seed of the fresh panels (different from ``seed``).
    progress : bool
        Progress bars.
    fast_path : bool
        Read the verdicts of the plan's panels and of the fresh panels from their code matrices (the
        verdicts of ``judge_vs_humans``, see :func:`plan_judge_vs_humans`); ``False`` runs
        ``judge_vs_humans`` on every panel.

    Returns
    -------
    DataFrame
        One row per scenario: design, target_power, planned_n, realised_power with its Wilson CI,
        n_fresh, within_5_points, plan_seconds, check_seconds, n_sim, n_boot.

    Examples
    --------
    >>> t = validate_plan(designs=["pooled"], powers=[0.8], margin=0.15, n_fresh=40, n_sim=40)  # doctest: +SKIP
    """
    if model is None:
        model = panel_model_from(kappa=0.6, n_physicians=3, categories=3)
    if judge is None:
        judge = model.judges[0] if model.judges else REFERENCE_JUDGE
    if judge == REFERENCE_JUDGE:
        model = model.with_reference()
        judge = judge if judge in model.judges else model.judges[-1]
    if judge not in model.judges:
        raise PlanningError(f"judge {judge!r} is not in the model; judges: {list(model.judges)}")
    model = model.only_judges([judge])
    rows = []
    for design in designs:
        for pw in powers:
            plan = plan_judge_vs_humans(model, margin, pw, design=design, reference=False, n_sim=n_sim,
                                        n_boot=n_boot, seed=seed, progress=progress, fast_path=fast_path)
            row = plan.planned.iloc[0]
            n = row["planned_n"]
            base = dict(design=design, target_power=pw, margin=margin, planned_n=n,
                        raters_per_item=int(row["raters_per_item"]), plan_seconds=plan.seconds, n_sim=n_sim,
                        n_boot=n_boot)
            if not np.isfinite(n):
                rows.append(dict(base, realised_power=np.nan, ci_low=np.nan, ci_high=np.nan, n_fresh=0,
                                 within_5_points=False, check_seconds=0.0, note=row["reason"]))
                continue
            t0 = time.perf_counter()
            k = 0
            study = dict(design=design, metric="cohen_kappa", margin=margin, n_boot=n_boot_check, confidence=0.95)
            fast = _FastVerdicts(model, **study) if fast_path else None
            for s in range(n_fresh):
                v = _panel_verdicts(partial(_draw, model, int(n), None, None, [fresh_seed, s]), fresh_seed + s,
                                    model=model, fast=fast, **study)
                k += 0 if v is None else int(v[0])  # no verdict on a panel: not a pass
            lo, hi = wilson_interval(k, n_fresh)
            rows.append(dict(base, realised_power=k / n_fresh, ci_low=lo, ci_high=hi, n_fresh=n_fresh,
                             within_5_points=abs(k / n_fresh - pw) <= 0.05, check_seconds=time.perf_counter() - t0,
                             note=f"fresh panels analysed with n_boot={n_boot_check}"))
    return pd.DataFrame(rows)
