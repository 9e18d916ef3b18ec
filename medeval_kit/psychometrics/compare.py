"""Item statistics against what the items were meant to be: planted difficulty labels and refinement rounds.

:func:`label_association` asks whether p falls as the planted difficulty rises (Spearman's rho with a
bootstrap CI that resamples whole clusters, e.g. the clinical note all five levels were written from,
and a paired per-cluster test of the easiest against the hardest level). :func:`roundwise_item_change`
asks whether self-refinement improves discrimination and distractor efficiency: it hands per-item
statistics by round to :func:`medeval_kit.rounds.paired_round_tests` (paired differences over the
traces observed in both rounds, bootstrap CI, Wilcoxon test).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from medeval_kit.columns import Columns, apply_columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import ParameterError
from medeval_kit.results import result_frame, result_row
from medeval_kit.stats import percentile_interval

from .ctt import _groups

__all__ = ["label_association", "roundwise_item_change", "with_item_info"]


_INFO = ("source", "trace", "round", "difficulty_label", "difficulty_rank", "key", "n_options")


def with_item_info(table: pd.DataFrame, items: pd.DataFrame, info: Sequence[str] = _INFO, *,
                   columns: Columns = None) -> pd.DataFrame:
    """Return ``table`` (one row per item) with the items' descriptive columns joined on ``item``.

    Parameters
    ----------
    table : DataFrame
        One row per item (e.g. :func:`medeval_kit.psychometrics.item_flags`).
    items : DataFrame
        The items table.
    info : sequence of str
        The items' columns to join (those present and not already in ``table``).
    columns : mapping of str to str, optional
        ``{"item": your column}`` when the tables name the item otherwise (see :mod:`medeval_kit.columns`).
        A list here is the old spelling of ``info`` (deprecated, warns).

    Returns
    -------
    DataFrame
        ``table`` with the joined columns.
    """
    if columns is not None and not isinstance(columns, Mapping):
        warnings.warn("with_item_info(columns=[...]) is deprecated; pass info=[...]", DeprecationWarning,
                      stacklevel=2)
        info, columns = columns, None
    table = apply_columns(table, columns, ("item",), where="with_item_info(table=...)")
    items = apply_columns(items, columns, ("item",), where="with_item_info(items=...)")
    cols = ["item"] + [c for c in info if c in items.columns and c not in table.columns]
    return table.merge(items[cols], on="item", how="left")


def _spearman_draws(x: np.ndarray, y: np.ndarray, draws: list[np.ndarray]) -> np.ndarray:
    """Spearman's rho of ``x[rows], y[rows]`` for each array of row positions in ``draws``.

    Equal to ``scipy.stats.spearmanr`` per draw (a test checks it): the same average ranks and
    ``numpy.corrcoef``'s arithmetic on them (sums of half-integers, exact), batched over the draws of
    equal length; NaN for a draw where either side is constant (as a resample without variation).

    Parameters
    ----------
    x, y : numpy.ndarray
        The two finite variables, one value per row.
    draws : list of numpy.ndarray
        Row positions of each bootstrap draw.

    Returns
    -------
    numpy.ndarray
        One rho per draw.
    """
    out = np.full(len(draws), np.nan)
    sizes = np.array([len(r) for r in draws])
    for size in np.unique(sizes):
        which = np.flatnonzero(sizes == size)
        idx = np.stack([draws[b] for b in which])
        X, Y = x[idx], y[idx]
        varied = (np.ptp(X, axis=1) > 0) & (np.ptp(Y, axis=1) > 0)
        if size < 2 or not varied.any():
            continue
        rx, ry = sps.rankdata(X[varied], axis=1), sps.rankdata(Y[varied], axis=1)
        rx, ry = rx - rx.mean(1, keepdims=True), ry - ry.mean(1, keepdims=True)
        f = 1 / (size - 1)
        cxx, cyy, cxy = (rx * rx).sum(1) * f, (ry * ry).sum(1) * f, (rx * ry).sum(1) * f
        out[which[varied]] = np.clip(cxy / np.sqrt(cyy) / np.sqrt(cxx), -1.0, 1.0)
    return out


@shared_docs
def label_association(table: pd.DataFrame, *, planted: str = "difficulty_rank", value: str = "p",
                      cluster: str | None = "trace", n_boot: int = 1000, seed: int = 0,
                      confidence: float = 0.95, **old: str) -> pd.DataFrame:
    """Return Spearman's rho of a statistic with the planted difficulty rank, and the hardest-minus-easiest change.

    Rho has a cluster-bootstrap CI (whole clusters resampled, e.g. the clinical note all five levels were
    written from); the second row is the paired per-cluster difference of ``value`` between the hardest
    and the easiest planted level (bootstrap CI, Wilcoxon signed-rank p). A well-calibrated difficulty
    label gives a negative rho for p (harder items, fewer right).

    Parameters
    ----------
    table : DataFrame
        One row per item with the planted rank, the statistic and the cluster (e.g. :func:`with_item_info`).
    planted : str
        The column holding the planted rank (numeric).
    value : str
        The column holding the statistic (e.g. ``p``).
    cluster : str or None
        The column of the clusters to resample; ``None`` resamples items and skips the paired row.
    {n_boot}
    {seed}
    {confidence}
    **old : str
        ``label=`` is the old name of ``planted`` (deprecated, warns).

    Returns
    -------
    DataFrame
        Contract rows keyed ``statistic, x, y`` (``spearman_rho`` and ``mean_difference_...``); the
        second row adds ``test`` and ``p_value``.

    Raises
    ------
    ParameterError
        A named column is missing.
    """
    if "label" in old:
        warnings.warn("label_association(label=...) is deprecated; pass planted=", DeprecationWarning, stacklevel=2)
        planted = old.pop("label")
    if old:
        raise TypeError(f"label_association() got unexpected keyword argument(s) {sorted(old)}")
    label = planted
    need = [c for c in (label, value) + ((cluster,) if cluster else ()) if c not in table.columns]
    if need:
        raise ParameterError(f"label_association needs column(s) {need}; present: {list(table.columns)}")
    d = table[[label, value] + ([cluster] if cluster else [])].copy()
    d[label] = pd.to_numeric(d[label], errors="coerce")
    d[value] = pd.to_numeric(d[value], errors="coerce")
    n_failed = int(d[[label, value]].isna().any(axis=1).sum())
    d = d.dropna(subset=[label, value])
    rows = []
    if len(d) < 3 or d[label].nunique() < 2 or d[value].nunique() < 2:
        rho = math.nan
    else:
        rho = float(sps.spearmanr(d[label], d[value])[0])
    ci, method = (math.nan, math.nan), ""
    if np.isfinite(rho) and n_boot:
        rng = np.random.default_rng(seed)
        # row positions of each cluster (groupby order); a draw is the rows of the drawn clusters, in draw order
        rows_of = ([pos for _, pos in _groups(d[cluster])] if cluster else [np.array([i]) for i in range(len(d))])
        draws = [np.concatenate([rows_of[i] for i in rng.integers(0, len(rows_of), len(rows_of))])
                 for _ in range(int(n_boot))]
        reps = _spearman_draws(d[label].to_numpy(float), d[value].to_numpy(float), draws)
        ci = percentile_interval(reps, confidence=confidence)
        method = f"percentile bootstrap over {'clusters (' + cluster + ')' if cluster else 'items'} ({int(n_boot)} resamples)"
    rows.append(result_row(rho, ci, method, n_items=len(d), n_failed=n_failed,
                           note="" if np.isfinite(rho) else "needs 3 items and variation in both",
                           statistic="spearman_rho", x=label, y=value))
    if cluster:
        lo, hi = d[label].min(), d[label].max()
        w = d.pivot_table(index=cluster, columns=label, values=value, aggfunc="mean")
        pair = w[[lo, hi]].dropna() if lo in w.columns and hi in w.columns else pd.DataFrame()
        diff = (pair[hi] - pair[lo]).to_numpy(float) if len(pair) else np.array([])
        p_value, note = math.nan, ""
        if len(diff) and not np.allclose(diff, 0):
            p_value = float(sps.wilcoxon(diff, zero_method="wilcox").pvalue)
        elif len(diff):
            note = "all differences are zero"
        ci2 = (math.nan, math.nan)
        if len(diff) >= 2 and n_boot:
            rng = np.random.default_rng(seed + 1)
            ci2 = percentile_interval(diff[rng.integers(0, len(diff), (int(n_boot), len(diff)))].mean(axis=1),
                                      confidence=confidence)
        rows.append(result_row(diff.mean() if len(diff) else math.nan, ci2,
                               f"percentile bootstrap over {cluster} ({int(n_boot)} resamples)" if np.isfinite(ci2[0])
                               else "", n_items=len(diff), n_failed=int(len(w) - len(diff)), note=note,
                               statistic=f"mean_difference_{value}_{hi:g}_minus_{lo:g}", x=label, y=value,
                               test="Wilcoxon signed-rank", p_value=p_value))
    return result_frame(rows, keys=["statistic", "x", "y"])


@shared_docs
@takes_columns("trace", "round")
def roundwise_item_change(table: pd.DataFrame, *, statistics: Sequence[str] = ("p", "r_pbis", "D",
                                                                                  "distractor_efficiency"),
                          by: str | None = "source", pairs: str = "consecutive", n_boot: int = 1000,
                          seed: int = 0, columns: Columns = None) -> pd.DataFrame:
    """Return paired round-to-round changes of per-item statistics (one item = one trace in one round).

    Calls :func:`medeval_kit.rounds.paired_round_tests` once per statistic (and per ``by`` group), with
    the trace as the paired unit.

    Parameters
    ----------
    table : DataFrame
        One row per item with ``trace``, ``round`` and the statistics (e.g. :func:`item_flags` joined with
        the items by :func:`with_item_info`).
    statistics : sequence of str
        The statistic columns to compare; those absent are skipped.
    by : str or None
        A column to compare within (when present), e.g. ``source``.
    pairs : str
        Which rounds to pair (``consecutive``, ...), as in :func:`medeval_kit.rounds.paired_round_tests`.
    {n_boot}
    {seed}
    {columns}

    Returns
    -------
    DataFrame
        :func:`medeval_kit.rounds.paired_round_tests`' contract rows with ``statistic`` (and ``by``) first.

    Raises
    ------
    ParameterError
        ``trace`` or ``round`` is missing, or none of the statistics is a column.
    """
    from medeval_kit.rounds import paired_round_tests

    missing = [c for c in ("trace", "round") if c not in table.columns]
    if missing:
        raise ParameterError(f"roundwise_item_change needs column(s) {missing}: join the items (with_item_info)")
    d = table[table["round"].notna()].copy()
    d["round"] = d["round"].astype("int64")
    # the paired unit is the trace: it is the ``item`` of the rounds analysis
    d = d.drop(columns=[c for c in ("item",) if c in d.columns]).rename(columns={"trace": "item"})
    out = []
    for s in statistics:
        if s not in d.columns:
            continue
        res = paired_round_tests(d, s, pairs=pairs, by=by if by and by in d.columns else None, n_boot=n_boot,
                                 seed=seed)
        out.append(res.assign(statistic=s))
    if not out:
        raise ParameterError(f"none of the statistics {list(statistics)} is a column of the table")
    res = pd.concat(out, ignore_index=True)
    first = ["statistic"] + ([by] if by and by in res.columns else [])
    return res[first + [c for c in res.columns if c not in first]]
