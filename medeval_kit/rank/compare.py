"""Does a judge rank the models like the reference (e.g. the physicians) does?

:func:`rank_agreement` gives Kendall's tau-b, Spearman's rho and the top-k overlap between each judge's
ranking and the reference's, with paired bootstrap CIs (both rankings refitted on the same unit draws,
:func:`medeval_kit.rank.rank_models`). :func:`rank_flips` gives, for each pair of models adjacent in the
reference's ranking, the share of draws in which a judge orders the pair the other way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from medeval_kit.errors import ParameterError
from medeval_kit.results import result_frame, result_row
from medeval_kit.stats import percentile_interval

from .ratings import RankResult

__all__ = ["rank_agreement", "rank_flips"]


def _judge(result: RankResult, name: str, what: str) -> None:
    if name not in result.judges:
        raise ParameterError(f"{what} {name!r} is not a judge of this result; judges: {list(result.judges)}")


def _top(theta: np.ndarray, k: int) -> np.ndarray:
    """Boolean mask of the k strongest (ties broken by model order, stably)."""
    order = np.argsort(-theta, kind="stable")
    mask = np.zeros(theta.shape, dtype=bool)
    mask[order[:k]] = True
    return mask


def _stats(x: np.ndarray, y: np.ndarray, top_k: Sequence[int]) -> dict[str, float]:
    """Kendall tau-b, Spearman rho and top-k overlaps between two strength vectors."""
    out = {"kendall_tau": float(sps.kendalltau(x, y).statistic), "spearman_rho": float(sps.spearmanr(x, y).statistic)}
    for k in top_k:
        out[f"top_{k}_overlap"] = float((_top(x, k) & _top(y, k)).sum() / k)
    return out


def _stats_draws(X: np.ndarray, Y: np.ndarray, top_k: Sequence[int]) -> dict[str, np.ndarray]:
    """:func:`_stats` for every row of two (B, n) strength arrays at once, equal to it row by row.

    Kendall's tau-b is scipy's formula on the same integer pair counts ((concordant - discordant) /
    sqrt(n0 - ties in x) / sqrt(n0 - ties in y), NaN when either side is all ties); Spearman's rho is
    ``numpy.corrcoef``'s arithmetic on the average ranks (exact sums of half-integers, so the same bits;
    NaN for a constant row); the top-k masks use the same stable sort. A test checks every value against
    :func:`_stats` on draws with ties.

    Parameters
    ----------
    X, Y : numpy.ndarray
        (B, n) finite strengths of the judge and of the reference, per draw.
    top_k : sequence of int
        The k of the top-k overlaps.

    Returns
    -------
    dict of str to numpy.ndarray
        Per metric of :func:`_stats`, the (B,) values.
    """
    B, n = X.shape
    I, J = np.triu_indices(n, 1)
    sx, sy = np.sign(X[:, I] - X[:, J]).astype(np.int64), np.sign(Y[:, I] - Y[:, J]).astype(np.int64)
    tot = n * (n - 1) // 2
    xtie, ytie = (sx == 0).sum(1), (sy == 0).sum(1)
    all_tied = (xtie == tot) | (ytie == tot)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = (sx * sy).sum(1) / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
    tau = np.where(all_tied, np.nan, np.clip(tau, -1.0, 1.0))
    rx, ry = sps.rankdata(X, axis=1), sps.rankdata(Y, axis=1)
    rx, ry = rx - rx.mean(1, keepdims=True), ry - ry.mean(1, keepdims=True)
    f = 1 / (n - 1)
    cxx, cyy, cxy = (rx * rx).sum(1) * f, (ry * ry).sum(1) * f, (rx * ry).sum(1) * f
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = cxy / np.sqrt(cyy) / np.sqrt(cxx)
    rho = np.where((cxx == 0) | (cyy == 0), np.nan, np.clip(rho, -1.0, 1.0))
    out = {"kendall_tau": tau, "spearman_rho": rho}
    if top_k:
        ox, oy = np.argsort(-X, axis=1, kind="stable"), np.argsort(-Y, axis=1, kind="stable")
        rows = np.arange(B)[:, None]
        for k in top_k:
            mx, my = np.zeros((B, n), dtype=bool), np.zeros((B, n), dtype=bool)
            mx[rows, ox[:, :k]] = True
            my[rows, oy[:, :k]] = True
            out[f"top_{k}_overlap"] = (mx & my).sum(1) / k
    return out


def rank_agreement(
    result: RankResult,
    reference: str,
    *,
    judges: Sequence[str] | None = None,
    top_k: Sequence[int] | None = None,
) -> pd.DataFrame:
    """Return Kendall tau-b, Spearman rho and top-k overlap of each judge's ranking with ``reference``'s.

    Computed over the models both rank; CIs are percentiles over the paired bootstrap draws of the
    ratings (draws where either ranking has no finite MLE are left out). ``top_k`` defaults to 1 and
    half the models. Fewer than three common models: NaN with a note (a rank correlation of two items
    is always +1 or -1).

    Parameters
    ----------
    result : RankResult
        The fit of :func:`medeval_kit.rank.rank_models` holding the judges and the reference.
    reference : str
        The judge to compare with (e.g. the physicians).
    judges : sequence of str, optional
        The judges to compare; default every judge but the reference.
    top_k : sequence of int, optional
        The k of the top-k overlaps; default 1 and half the models.

    Returns
    -------
    DataFrame
        One contract row per judge and metric (``kendall_tau``, ``spearman_rho``, ``top_<k>_overlap``),
        keys ``judge, reference, metric``, with ``n_models``.

    Raises
    ------
    ParameterError
        ``reference`` or a judge is not in the result.

    Examples
    --------
    >>> from medeval_kit import rank
    >>> c = rank.comparisons(rank.demo_comparisons(n_items=60), columns={"item": "case_id",
    ...     "judge": "physician_group", "model_a": "response_a_model", "model_b": "response_b_model",
    ...     "verdict": "winner"})
    >>> out = rank_agreement(rank.rank_models(c, n_boot=50), "physicians")
    >>> out["metric"].tolist()
    ['kendall_tau', 'spearman_rho', 'top_1_overlap', 'top_2_overlap']
    """
    _judge(result, reference, "reference")
    names = [j for j in (judges or result.judges) if j != reference]
    for j in names:
        _judge(result, j, "judge")
    ref = result.point[reference]
    rows = []
    method = f"percentile bootstrap over units, paired (B = {result.n_boot})"
    for j in names:
        common = np.isfinite(ref) & np.isfinite(result.point[j])
        n_m = int(common.sum())
        shared = len(result.units[j] & result.units[reference])
        ks = [k for k in (top_k if top_k is not None else sorted({1, max(1, n_m // 2)})) if 0 < k < n_m]
        key = {"judge": j, "reference": reference, "n_models": n_m}
        if n_m < 3:
            unranked = [x for x in (j, reference) if np.isfinite(result.point[x]).sum() < 2]
            why = ("; ".join(f"{x}: {result.notes.get(x, '') or 'no ranking'}" for x in unranked) if unranked else
                   f"{n_m} models ranked by both: a rank correlation needs 3 or more (with 2 it is always +1 "
                   "or -1); see rank_flips for whether the pair is ordered alike")
            for metric in ("kendall_tau", "spearman_rho"):
                rows.append(result_row(math.nan, n_items=shared, note=why, metric=metric, **key))
            continue
        est = _stats(result.point[j][common], ref[common], ks)
        A, R = result.draws[j][:, common], result.draws[reference][:, common]
        ok = np.isfinite(A).all(1) & np.isfinite(R).all(1)
        reps = _stats_draws(A[ok], R[ok], ks)  # every draw at once (equal to _stats per draw)
        has_reps = bool(ok.any())
        left = int((~ok).sum())
        note = f"{left} of {len(ok)} draws left out (no finite MLE)" if left else ""
        for metric, value in est.items():
            ci = percentile_interval(reps[metric], confidence=result.confidence) if has_reps else (
                math.nan, math.nan)
            rows.append(result_row(value, ci, method if has_reps else "", n_items=shared, note=note,
                                   metric=metric, **key))
    return result_frame(rows, keys=["judge", "reference", "metric"])


def rank_flips(result: RankResult, *, reference: str | None = None) -> pd.DataFrame:
    """Return, per judge and each pair of models adjacent in the reference's ranking, P(the judge orders it the other way).

    ``reference`` None: each judge's own ranking (how often its adjacent pairs swap across draws). The
    estimate is the share of bootstrap draws in which the judge's strengths put the lower-ranked model of
    the pair above the higher-ranked one; ``judge_agrees`` says whether the judge's own point estimate
    orders the pair like the reference. A judge (or reference) without a ranking gets one row, rank 0,
    NaN, whose note says why.

    Parameters
    ----------
    result : RankResult
        The fit of :func:`medeval_kit.rank.rank_models`.
    reference : str, optional
        The judge whose ranking defines the adjacent pairs; default each judge's own.

    Returns
    -------
    DataFrame
        One contract row per judge and adjacent pair (metric ``p_flip``), keys ``judge, reference, rank,
        higher, lower, metric``, with ``judge_agrees``, ``n_draws`` and ``strength_gap``.

    Raises
    ------
    ParameterError
        ``reference`` is not a judge of the result.
    """
    if reference is not None:
        _judge(result, reference, "reference")
    rows = []
    for j in result.judges:
        base = result.point[reference if reference is not None else j]
        mine = result.point[j]
        fin = np.flatnonzero(np.isfinite(base) & np.isfinite(mine))
        if len(fin) < 2:  # a row that says why, never a silent drop
            unranked = [x for x in dict.fromkeys((j, reference if reference is not None else j))
                        if np.isfinite(result.point[x]).sum() < 2]
            why = "; ".join(f"{x}: {result.notes.get(x, '') or 'no ranking'}" for x in unranked) or \
                "fewer than two models ranked by both"
            rows.append(result_row(math.nan, n_items=len(result.units[j]), note=why, judge=j,
                                   reference=reference if reference is not None else j, rank=0, higher="",
                                   lower="", metric="p_flip", judge_agrees=False, n_draws=0,
                                   strength_gap=math.nan))
            continue
        order = fin[np.argsort(-base[fin], kind="stable")]
        D = result.draws[j]
        for pos, (hi, lo) in enumerate(zip(order[:-1], order[1:]), start=1):
            ok = np.isfinite(D[:, hi]) & np.isfinite(D[:, lo])
            p = float((D[ok, lo] > D[ok, hi]).mean()) if ok.any() else math.nan
            rows.append(result_row(p, n_items=len(result.units[j]),
                                   note="" if ok.any() else "no bootstrap draws", judge=j,
                                   reference=reference if reference is not None else j, rank=pos,
                                   higher=result.models[hi], lower=result.models[lo], metric="p_flip",
                                   judge_agrees=bool(mine[hi] >= mine[lo]), n_draws=int(ok.sum()),
                                   strength_gap=float(base[hi] - base[lo])))
    return result_frame(rows, keys=["judge", "reference", "rank", "higher", "lower", "metric"])
