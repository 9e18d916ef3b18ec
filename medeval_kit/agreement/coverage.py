"""Does a design call equally noisy judges equal? The coverage of Δ's CI when the true Δ is 0."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.agreement.data import AgreementError
from medeval_kit.agreement.designs import DESIGNS, judge_vs_humans
from medeval_kit.docstrings import shared_docs
from medeval_kit.results import result_frame
from medeval_kit.stats import wilson_interval

__all__ = ["PANELS", "equal_noise_coverage"]

PANELS = {
    "dense3": dict(n_humans=3),
    "two": dict(n_humans=2),
    "sparse": dict(n_humans=60, labels_per_item=(2, 4)),
}
"""Panel shapes of the simulation: keywords of :func:`~medeval_kit.datasets.synthetic.synthetic_panel`."""


def _covered(t: pd.DataFrame, metric: str, design: str, n_boot: int, confidence: float, seed: int) -> list[tuple]:
    """(covers 0, Δ) for every judge of one simulated table whose Δ has a CI."""
    tab = judge_vs_humans(t, design=design, metric=metric, n_boot=n_boot, confidence=confidence, seed=seed).table
    return [(j.delta_ci_low <= 0 <= j.delta_ci_high, j.delta) for j in tab[tab["role"] == "judge"].itertuples()
            if np.isfinite(j.delta_ci_low)]


@shared_docs
def equal_noise_coverage(
    n_reps: int = 200,
    *,
    panels: Sequence[str] = tuple(PANELS),
    designs: Sequence[str] = DESIGNS,
    n_items: int = 150,
    n_judges: int = 1,
    kappa: float = 0.5,
    metric: str = "cohen_kappa",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    progress: bool = False,
) -> pd.DataFrame:
    """Coverage of Δ's CI when the judges have exactly the humans' noise (true Δ = 0).

    Each replication draws :func:`~medeval_kit.datasets.synthetic.synthetic_panel` for each panel
    shape (``dense3``: 3 humans; ``two``: 2 humans; ``sparse``: 60 humans, 2-4 per item) and runs
    every design on the same table.

    Parameters
    ----------
    n_reps : int, default 200
        Simulated panels per shape.
    panels : sequence of str, default ("dense3", "two", "sparse")
        Panel shapes.
    designs : sequence of str, default ("loo", "pooled", "medqade")
        Designs of :func:`~medeval_kit.agreement.judge_vs_humans`.
    n_items : int, default 150
        Items per simulated panel.
    n_judges : int, default 1
        Judges per panel.
    kappa : float, default 0.5
        The planted agreement of every rater with the truth.
    metric : str, default "cohen_kappa"
        The pairwise coefficient.
    {n_boot}
    {confidence}
    {seed}
    progress : bool, default False
        Show a progress bar.

    Returns
    -------
    DataFrame
        One row per (panel, design) in the result contract: ``estimate`` = coverage with its Wilson CI,
        ``n_items`` = (replication, judge) pairs where Δ had a CI (``n_failed`` the others), plus
        ``n_reps, n_covered, mean_delta``, the ``rejection_rate`` of H0: Δ = 0 at 1 − ``confidence`` and
        the simulation's ``items_per_panel, kappa, n_boot``.

    Raises
    ------
    AgreementError
        An unknown panel shape.

    Examples
    --------
    >>> t = equal_noise_coverage(2, panels=["two"], designs=["loo"], n_items=30, n_boot=50)
    >>> t[["panel", "design", "n_reps"]].values.tolist()
    [['two', 'loo', 2]]
    """
    from tqdm.auto import tqdm

    from medeval_kit.datasets.synthetic import synthetic_panel

    unknown = [p for p in panels if p not in PANELS]
    if unknown:
        raise AgreementError(f"unknown panel(s) {unknown}; choose from {list(PANELS)}")
    res = {(p, d): [] for p in panels for d in designs}
    bar = tqdm(total=n_reps * len(panels), desc="equal-noise coverage", disable=not progress)
    for p in panels:
        for r in range(n_reps):
            t = synthetic_panel(n_items=n_items, n_judges=n_judges, kappa=kappa, seed=seed * 100003 + r, **PANELS[p])
            for d in designs:
                res[(p, d)] += _covered(t, metric, d, n_boot, confidence, r)
            bar.update(1)
    bar.close()
    rows = []
    for (p, d), v in res.items():
        n, k = len(v), int(sum(c for c, _ in v))
        lo, hi = wilson_interval(k, n, confidence=confidence)
        rows.append(dict(panel=p, design=d, estimate=k / n if n else np.nan, ci_low=lo, ci_high=hi,
                         ci_method="Wilson score interval" if n else "", n_items=n, n_failed=n_reps * n_judges - n,
                         note="" if n else "no delta under this design (e.g. MedQADE needs 3 humans)",
                         n_reps=n_reps, n_covered=k, mean_delta=float(np.mean([x for _, x in v])) if n else np.nan,
                         rejection_rate=1 - k / n if n else np.nan, items_per_panel=n_items, kappa=kappa,
                         n_boot=n_boot))
    return result_frame(rows, keys=["panel", "design"])
