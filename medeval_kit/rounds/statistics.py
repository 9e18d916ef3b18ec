"""Round-wise statistics: means per round (available-only vs LOCF), stop/best distributions, paired
round-to-round tests, a mixed model and correlations; :func:`roundwise_tables` runs them all.

Every table follows the result contract (:mod:`medeval_kit.results`): ``estimate, ci_low, ci_high,
ci_method, n_items, n_failed, note`` after its key columns, domain extras after them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import ParameterError
from medeval_kit.results import Result, result_frame, result_row
from medeval_kit.rounds.stopping import item_summary, stopping_rule_consistency
from medeval_kit.rounds.tables import (
    component_table,
    item_rounds,
    load_summary,
    need_columns,
)
from medeval_kit.stats import (
    bootstrap_means,
    mean_interval,
    percentile_interval,
    proportion_ci,
)

__all__ = ["IMPUTATIONS", "round_means", "stop_best_distribution", "paired_round_tests", "mixed_model",
           "round_correlations", "roundwise_tables", "RoundwiseTables"]

IMPUTATIONS = ("available", "locf")
"""``available``: the items that reached the round and have a value; ``locf``: every item, its last
observed value carried forward."""
PAIRINGS = ("consecutive", "from_first")
_ZERO_ATOL = 1e-12


def _wide(df: pd.DataFrame, value: str, item: str, round: str) -> tuple[pd.DataFrame, pd.DataFrame]:  # noqa: A002
    """Return (values, present): item x round tables of ``value`` (NaN when absent or NA) and of row presence."""
    w = pd.DataFrame({"item": df[item].astype(str), "round": df[round].astype("int64"),
                      "v": pd.to_numeric(df[value], errors="coerce").astype(float)})
    wide = w.pivot_table(index="item", columns="round", values="v", aggfunc="first", dropna=False)
    present = w.assign(p=1.0).pivot_table(index="item", columns="round", values="p", aggfunc="first")
    return wide, present.reindex(index=wide.index, columns=wide.columns).notna()


def _groups(df: pd.DataFrame, by: str | Sequence[str] | None) -> tuple[list[str], list[tuple[tuple, pd.DataFrame]]]:
    """Return (by columns, [(key tuple, group)]) for ``by`` = None, a column or columns."""
    bys = [by] if isinstance(by, str) else list(by or [])
    if not bys:
        return bys, [((), df)]
    return bys, [(k if isinstance(k, tuple) else (k,), g) for k, g in df.groupby(bys, sort=True)]


def _mean_row(x: np.ndarray, confidence: float, ci_method: str, bounds: tuple[float, float] | None) -> dict:
    """Return the contract part of a round mean: estimate, CI (clipped to ``bounds``), sd and note."""
    if not len(x):
        return {"estimate": math.nan, "ci": (math.nan, math.nan), "ci_method": "", "note": "no values",
                "sd": math.nan}
    lo, hi, cim, note = mean_interval(x, confidence=confidence, method=ci_method)
    if bounds is not None and not np.isnan(lo) and (lo < bounds[0] or hi > bounds[1]):
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
        note = "; ".join(filter(None, [note, f"CI clipped to {tuple(bounds)}"]))
    return {"estimate": float(x.mean()), "ci": (lo, hi), "ci_method": cim, "note": note,
            "sd": float(x.std(ddof=1)) if len(x) > 1 else math.nan}


@shared_docs
@takes_columns("item", "round")
def round_means(
    df: pd.DataFrame,
    value: str = "total",
    *,
    by: str | Sequence[str] | None = None,
    imputations: Sequence[str] = IMPUTATIONS,
    max_round: int | None = None,
    confidence: float = 0.95,
    ci_method: str = "auto",
    bounds: tuple[float, float] | None = None,
    columns: Columns = None,
) -> pd.DataFrame:
    """Per round, the mean of ``value`` with its n, available-only and last-value-carried-forward.

    ``df`` has one row per item and round (e.g. :func:`~medeval_kit.rounds.item_rounds`, or
    :func:`~medeval_kit.rounds.component_table` with ``value="value", by="component"``).
    *available*: the items that reached the round and have a value. *locf*: every item, an item
    that stopped earlier (or whose value failed to parse) carrying its last observed value forward.
    Comparing them shows survivor bias.

    Parameters
    ----------
    df : DataFrame
        One row per item and round, with ``item``, ``round`` and the ``value`` column.
    value : str, default "total"
        The column to average (which column; not a rename).
    by : str or list of str, optional
        Columns to split by (e.g. ``component``, ``source``).
    imputations : sequence of str, default ("available", "locf")
        Which means to give (:data:`IMPUTATIONS`).
    max_round : int, optional
        Extend the rounds to this one (LOCF carries values into it); default the last observed.
    {confidence}
    ci_method : str, default "auto"
        The interval of :func:`medeval_kit.stats.mean_interval`: ``auto`` is Wilson for 0/1 values, else t.
    bounds : tuple of float, optional
        The possible range, e.g. ``(0, 1)``; t-intervals are clipped to it (and the note says so).
    {columns}

    Returns
    -------
    DataFrame
        ``[by...], imputation, round``, ``estimate`` (the mean), ``ci_low, ci_high, ci_method``,
        ``n_items`` (values averaged), ``n_failed`` (items without a value: reached the round with a NA
        value, or for LOCF nothing to carry), ``note``, and ``n_items_total`` (items in the group),
        ``n_reached``, ``n_carried``, ``sd`` (ddof=1).

    Raises
    ------
    ParameterError
        A needed column is missing or an imputation is unknown.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_rounds
    >>> from medeval_kit.rounds import item_rounds
    >>> m = round_means(item_rounds(synthetic_rounds(n_items=10, seed=0)), bounds=(0, 1))
    >>> sorted(m["imputation"].unique().tolist())
    ['available', 'locf']
    """
    item, round = "item", "round"  # noqa: A001 - the schema's column name
    need_columns(df, [item, round, value])
    for m in imputations:
        if m not in IMPUTATIONS:
            raise ParameterError(f"imputation must be one of {list(IMPUTATIONS)}, not {m!r}")
    bys, groups = _groups(df, by)
    rows = []
    for key, g in groups:
        wide, present = _wide(g, value, item, round)
        cols = list(range(int(min(wide.columns)), int(max_round or max(wide.columns)) + 1))
        wide, present = wide.reindex(columns=cols), present.reindex(columns=cols, fill_value=False)
        filled = wide.ffill(axis=1)
        for m in imputations:
            for r in cols:
                obs = wide[r]
                x = (obs if m == "available" else filled[r]).dropna().to_numpy(float)
                n_reached = int(present[r].sum())
                stat = _mean_row(x, confidence, ci_method, bounds)
                rows.append(result_row(
                    stat["estimate"], stat["ci"], stat["ci_method"], n_items=len(x),
                    n_failed=len(wide) - len(x) if m == "locf" else n_reached - len(x), note=stat["note"],
                    **dict(zip(bys, key)), imputation=m, round=r, n_items_total=len(wide), n_reached=n_reached,
                    n_carried=int((obs.isna() & filled[r].notna()).sum()) if m == "locf" else 0, sd=stat["sd"]))
    return result_frame(rows, keys=[*bys, "imputation", "round"])


@shared_docs
@takes_columns("item", "round", "component", "aspect", "score", "max_score", "stop", "best")
def stop_best_distribution(
    rounds_df: pd.DataFrame, *, by: str | None = None, tie_break: str = "earliest", confidence: float = 0.95,
    columns: Columns = None,
) -> pd.DataFrame:
    """Distribution of stop rounds and best rounds over the items.

    Stop = the ``stop`` flag (else the last round); best = the ``best`` flag (else re-selected with
    ``tie_break``).

    Parameters
    ----------
    rounds_df : DataFrame
        The ``rounds`` table.
    by : str, optional
        A column to split the items by (e.g. ``source``).
    tie_break : {"earliest", "latest"}, default "earliest"
        Which of tied rounds is best when the table flags none.
    {confidence}
    {columns}

    Returns
    -------
    DataFrame
        ``[by], kind, round``, ``estimate`` (the share of items stopping / best at that round),
        ``ci_low, ci_high, ci_method`` (Wilson), ``n_items`` (items with such a round), ``n_failed``
        (items without one), ``note`` and ``n_at_round``.

    Raises
    ------
    ParameterError
        ``by`` is not a column.
    """
    summ = item_summary(rounds_df, tie_break=tie_break)
    if by is not None and by not in summ.columns:
        raise ParameterError(f"column {by!r} is not in the rounds table")
    bys, groups = _groups(summ, by)
    rmax = max(int(summ["n_rounds"].max()), int(summ["stop_round"].max())) if len(summ) else 0
    rows = []
    for key, g in groups:
        for kind in ("stop_round", "best_round"):
            s = g[kind].dropna().astype(int)
            for r in range(1, rmax + 1):
                k = int((s == r).sum())
                rows.append(result_row(
                    k / len(s) if len(s) else math.nan,
                    proportion_ci(k, len(s), confidence=confidence, method="wilson"), "Wilson",
                    n_items=len(s), n_failed=len(g) - len(s), note="" if len(s) else f"no item has a {kind}",
                    **dict(zip(bys, key)), kind=kind, round=r, n_at_round=k))
    return result_frame(rows, keys=[*bys, "kind", "round"])


def _round_pairs(rounds: list[int], pairs: str | Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Return the (round_a, round_b) pairs to compare."""
    if not isinstance(pairs, str):
        return [tuple(p) for p in pairs]
    if pairs == "consecutive":
        return list(zip(rounds[:-1], rounds[1:]))
    if pairs == "from_first":
        return [(rounds[0], r) for r in rounds[1:]]
    raise ParameterError(f"pairs must be one of {list(PAIRINGS)} or a list of pairs, not {pairs!r}")


_PERMUTATION_MAX_N = 13
"""scipy's ``wilcoxon(method="auto")`` runs an exact sign-flip permutation test (all 2**n flips) when the
differences have ties or zeros and n <= 13; above that it is asymptotic."""


def _rank_sums(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Wilcoxon's R+ along ``axis`` (zeros dropped), vectorised over the other axes.

    The ranks are the average ranks of |x| among the non-zero values, as scipy's ``wilcoxon(zero_method=
    "wilcox")`` ranks them (zeros ranked last and left out of the sums); half-integer ranks sum exactly, so
    every R+ equals scipy's bit for bit.

    Parameters
    ----------
    x : ndarray
        Paired differences.
    axis : int, default -1
        The axis of the pairs.

    Returns
    -------
    ndarray
        R+ per slice along ``axis``.
    """
    from scipy.stats import rankdata

    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    r = rankdata(np.where(x == 0, np.inf, np.abs(x)), axis=-1)
    return np.sum(np.where(x > 0, r, 0.0), axis=-1)


def _wilcoxon_permutation(d: np.ndarray) -> tuple[float, float] | None:
    """(statistic, p_value) of scipy's exact permutation path of ``wilcoxon(d, zero_method="wilcox")``.

    scipy takes that path when ``d`` has ties or zeros and ``len(d) <= 13``; it then calls
    ``permutation_test`` with a statistic that is not vectorised (one Python call per sign flip: 8192 for
    n = 13). This runs the same ``permutation_test`` (same null distribution over all 2**n flips, same
    p-value rule) with a vectorised R+. Returns None when scipy would take another path.

    Parameters
    ----------
    d : ndarray
        Paired differences, no NaN.

    Returns
    -------
    tuple of float or None
        ``(min(R+, R-), p_value)``, or None outside the permutation path.
    """
    from scipy.stats import permutation_test

    n = len(d)
    nonzero = np.abs(d[d != 0])
    ties = len(np.unique(nonzero)) < len(nonzero)
    if n > _PERMUTATION_MAX_N or not (ties or len(nonzero) < n) or not len(nonzero):
        return None
    r = _rank_sums(d)
    r_minus = _rank_sums(-d)
    p = permutation_test((d,), _rank_sums, permutation_type="samples", vectorized=True, n_resamples=9999,
                         alternative="two-sided", axis=-1).pvalue
    return float(min(r, r_minus)), float(p)


def _wilcoxon(d: np.ndarray) -> tuple[float, float, str]:
    """Return (statistic, p_value, note) of scipy's Wilcoxon signed-rank test (zero differences dropped).

    With ties or zeros and at most 13 pairs scipy's own permutation path is slow (a Python call per sign
    flip); :func:`_wilcoxon_permutation` computes the same numbers vectorised.
    """
    from scipy.stats import wilcoxon

    if not len(d):
        return math.nan, math.nan, ""
    if np.all(np.isclose(d, 0, atol=_ZERO_ATOL)):
        return math.nan, math.nan, "all differences are zero"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fast = _wilcoxon_permutation(np.asarray(d, dtype=float))
            if fast is not None:
                return fast[0], fast[1], ""
            res = wilcoxon(d, zero_method="wilcox")
        except ValueError as exc:
            return math.nan, math.nan, f"wilcoxon undefined: {exc}"
    return float(res.statistic), float(res.pvalue), ""


def _paired_row(wide: pd.DataFrame, present: pd.DataFrame, a: int, b: int, n_boot: int,
                rng: np.random.Generator, confidence: float) -> dict:
    """Return the contract row comparing rounds ``a`` and ``b`` on the items observed in both."""
    if a not in wide.columns or b not in wide.columns:
        return result_row(math.nan, n_items=0, note="round not observed", round_a=int(a), round_b=int(b))
    both = wide[[a, b]].dropna()
    d = (both[b] - both[a]).to_numpy(float)
    n = len(d)
    notes = []
    ci, ci_method = (math.nan, math.nan), ""
    if n >= 2:
        ci = percentile_interval(bootstrap_means(d, n_boot, rng), confidence=confidence)
        ci_method = f"percentile bootstrap ({int(n_boot)} resamples)"
    else:
        notes.append("fewer than 2 pairs")
    stat, p, note = _wilcoxon(d)
    notes.append(note)
    n_reached_both = int((present[a] & present[b]).sum())
    return result_row(
        d.mean() if n else math.nan, ci, ci_method, n_items=n, n_failed=n_reached_both - n,
        note="; ".join(filter(None, notes)), round_a=int(a), round_b=int(b),
        mean_a=both[a].mean() if n else math.nan, mean_b=both[b].mean() if n else math.nan,
        median_delta=float(np.median(d)) if n else math.nan,
        n_zero=int(np.sum(np.isclose(d, 0, atol=_ZERO_ATOL))) if n else 0,
        test="Wilcoxon signed-rank", wilcoxon_stat=stat, p_value=p)


@shared_docs
@takes_columns("item", "round")
def paired_round_tests(
    df: pd.DataFrame,
    value: str = "total",
    *,
    pairs: str | Sequence[tuple[int, int]] = "consecutive",
    by: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    columns: Columns = None,
) -> pd.DataFrame:
    """Paired round-to-round comparisons on the items observed in both rounds.

    ``pairs``: ``"consecutive"`` (1→2, 2→3, ...), ``"from_first"`` (1→2, 1→3, ...) or a list of
    ``(round_a, round_b)``. Per pair: ``estimate`` = the mean Δ (b − a) with a percentile-bootstrap
    CI over items (``n_boot`` resamples, ``seed``), ``n_items`` (pairs), ``n_failed`` (items that
    reached both rounds but lack a value in one), ``mean_a``, ``mean_b``, ``median_delta`` and the
    Wilcoxon signed-rank test (scipy, zero differences dropped: ``zero_method="wilcox"``;
    ``n_zero`` counts them). Undefined tests are NaN with a ``note``.

    Parameters
    ----------
    df : DataFrame
        One row per item and round, with ``item``, ``round`` and the ``value`` column.
    value : str, default "total"
        The column compared (which column; not a rename).
    pairs : str or sequence of (int, int), default "consecutive"
        ``"consecutive"``, ``"from_first"`` or explicit ``(round_a, round_b)`` pairs.
    by : str, optional
        A column to split by.
    {n_boot}
    {seed}
    {confidence}
    {columns}

    Returns
    -------
    DataFrame
        ``[by], round_a, round_b``, the contract columns and ``mean_a``, ``mean_b``, ``median_delta``,
        ``n_zero``, ``test``, ``wilcoxon_stat``, ``p_value``.
    """
    item, round = "item", "round"  # noqa: A001 - the schema's column name
    need_columns(df, [item, round, value])
    bys, groups = _groups(df, by)
    rng = np.random.default_rng(seed)
    rows = []
    for key, g in groups:
        wide, present = _wide(g, value, item, round)
        wide = wide[[c for c in wide.columns if wide[c].notna().any()]]  # rounds with at least one value
        for a, b in _round_pairs(sorted(wide.columns), pairs):
            rows.append({**dict(zip(bys, key)), **_paired_row(wide, present, a, b, n_boot, rng, confidence)})
    return result_frame(rows, keys=[*bys, "round_a", "round_b"])


_TERMS = ("Intercept", "round", "item_var")
_MODEL = "statsmodels MixedLM, REML (Nelder-Mead), random intercept per item"


def _mixed_rows(estimates: dict | None, note: str, base: dict) -> pd.DataFrame:
    """Return the three term rows (NaN when ``estimates`` is None) with the shared counts and note."""
    rows = []
    for t in _TERMS:
        e = (estimates or {}).get(t, {})
        ci = (e.get("ci_low", math.nan), e.get("ci_high", math.nan))
        rows.append(result_row(e.get("estimate", math.nan), ci, "Wald" if np.isfinite(ci[0]) else "",
                               note=note, **base, term=t, se=e.get("se", math.nan), z=e.get("z", math.nan),
                               p_value=e.get("p_value", math.nan)))
    return result_frame(rows, keys=["term"])


def _fit_mixed(d: pd.DataFrame, confidence: float) -> tuple[dict, bool, list[str]]:
    """Fit y ~ rnd + (1 | g); return (estimates per term, converged, notes)."""
    import statsmodels.formula.api as smf

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # Nelder-Mead from statsmodels' fixed start, not the default bfgs -> lbfgs -> cg chain: near a flat
        # likelihood that chain switched optimizer on 1e-16 input differences, so fits differed by machine.
        fit = smf.mixedlm("y ~ rnd", d, groups=d["g"]).fit(reml=True, method=["nm"], maxiter=20000, ftol=1e-12)
    item_var = float(fit.cov_re.iloc[0, 0])
    notes = []
    for w in caught:
        msg = str(w.message).split("\n")[0]
        if "boundary" in msg and item_var > 1e-8 * float(d["y"].var()):
            continue  # an intermediate step touched the boundary; the final estimate is interior
        if msg not in notes:
            notes.append(msg)
    ci = fit.conf_int(alpha=1 - confidence)
    est = {t: {"estimate": float(fit.fe_params[n]), "se": float(fit.bse_fe[n]), "z": float(fit.tvalues[n]),
               "p_value": float(fit.pvalues[n]), "ci_low": float(ci.loc[n, 0]), "ci_high": float(ci.loc[n, 1])}
           for t, n in (("Intercept", "Intercept"), ("round", "rnd"))}
    est["item_var"] = {"estimate": item_var}
    se = np.array([est["Intercept"]["se"], est["round"]["se"]])
    if not np.all(np.isfinite(se)) or np.any(se > 100 * float(d["y"].std())):
        est = {t: ({"estimate": e["estimate"]}) for t, e in est.items()}
        notes.append("singular fit: standard errors unusable, inference set to NaN")
    return est, bool(fit.converged), notes


def _degenerate(d: pd.DataFrame) -> str:
    """Why a mixed model cannot be fitted to ``d`` ("" when it can)."""
    if d["g"].nunique() < 2 or d["rnd"].nunique() < 2:
        return "needs at least 2 items and 2 distinct rounds"
    if d["y"].std() == 0:
        return "the outcome is constant"
    if int((d.groupby("g").size() >= 2).sum()) < 2:
        return "needs at least 2 items observed in 2 or more rounds"
    return ""


@shared_docs
@takes_columns("item", "round")
def mixed_model(
    df: pd.DataFrame,
    value: str = "total",
    *,
    by: str | None = None,
    confidence: float = 0.95,
    columns: Columns = None,
) -> pd.DataFrame:
    """Fit ``value ~ round + (1 | item)`` with statsmodels MixedLM (REML) on the available rows.

    Returns one row per term (``Intercept``, ``round``, ``item_var``): ``estimate, ci_low, ci_high,
    ci_method`` (Wald), ``n_items``, ``n_failed`` (item-rounds dropped for a NA value), ``note``,
    ``se, z, p_value, n_obs, model, converged``; with ``by``, one fit per group (the group in the
    first column). Too little data or a singular fit gives NaN with a ``note`` rather than an
    exception. Likelihood-based, it stays unbiased when drop-out depends only on the observed scores
    (the stopping rule), unlike available-only means.

    Parameters
    ----------
    df : DataFrame
        One row per item and round, with ``item``, ``round`` and the ``value`` column.
    value : str, default "total"
        The outcome column (which column; not a rename).
    by : str, optional
        A column to fit one model per value of.
    {confidence}
    {columns}

    Returns
    -------
    DataFrame
        One row per term (``Intercept``, ``round``, ``item_var``; with ``by``, per group and term):
        ``term``, the contract columns (Wald CIs), ``se, z, p_value, n_obs, model, converged``.
    """
    item, round = "item", "round"  # noqa: A001 - the schema's column name
    need_columns(df, [item, round, value])
    if by is not None:
        parts = [mixed_model(g, value, confidence=confidence).assign(**{by: k})
                 for k, g in df.groupby(by, sort=True)]
        out = pd.concat(parts, ignore_index=True)
        return out[[by, *[c for c in out.columns if c != by]]]
    d = pd.DataFrame({"y": pd.to_numeric(df[value], errors="coerce").astype(float),
                      "rnd": df[round].astype(float), "g": df[item].astype(str)}).dropna()
    base = {"n_items": d["g"].nunique(), "n_failed": len(df) - len(d), "n_obs": len(d), "model": _MODEL}
    why = _degenerate(d)
    if why:
        return _mixed_rows(None, why, base).assign(converged=False)
    try:
        est, converged, notes = _fit_mixed(d, confidence)
    except (np.linalg.LinAlgError, ValueError) as exc:
        return _mixed_rows(None, f"fit failed: {exc}", base).assign(converged=False)
    return _mixed_rows(est, "; ".join(notes), base).assign(converged=converged)


CORRELATIONS = ("pearson", "spearman", "kendall")
LEVELS = ("item", "aggregated")


@shared_docs
@takes_columns("round")
def round_correlations(
    df: pd.DataFrame,
    x: str = "round",
    y: str = "question_length",
    *,
    unit: str | None = None,
    level: str | None = None,
    columns: Columns = None,
) -> pd.DataFrame:
    """Pearson, Spearman and Kendall correlation of ``x`` with ``y``, each with its n and p.

    Parameters
    ----------
    df : DataFrame
        A table holding the ``x`` and ``y`` columns (e.g. :func:`~medeval_kit.rounds.item_rounds`).
    x, y : str, default "round", "question_length"
        The columns to correlate (which columns; not renames).
    unit : {"item", "aggregated"}, optional
        The unit of a point. ``"item"`` (the default, also for None): one point per row (item-rounds
        are not independent: p-values are optimistic). ``"aggregated"``: one point per distinct ``x``
        (the mean of ``y``), as MCQG-SRefine's Table 8 appears to have done; ``n_items`` is then the
        number of distinct x values.
    level : str, optional
        Deprecated name of ``unit`` (``level`` means the measurement level elsewhere).
    {columns}

    Returns
    -------
    DataFrame
        ``x, y, level`` (the unit), ``correlation``, then the contract columns (no CI: the points are
        not independent, or too few), ``n_items``, ``n_failed`` (rows with a NA x or y), ``note`` and
        ``p_value``.

    Raises
    ------
    ParameterError
        A column is missing or ``unit`` is unknown.

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"round": [1, 2, 3, 4], "question_length": [100, 90, 95, 80]})
    >>> round(float(round_correlations(d).set_index("correlation").loc["spearman", "estimate"]), 2)
    -0.8
    """
    from scipy.stats import kendalltau, pearsonr, spearmanr

    if level is not None:
        warnings.warn("round_correlations(level=...) is deprecated; use unit=", DeprecationWarning, stacklevel=4)
        unit = unit or level
    level = unit or "item"
    need_columns(df, [x, y])
    if level not in LEVELS:
        raise ParameterError(f"unit must be one of {list(LEVELS)}, not {level!r}")
    d = pd.DataFrame({"x": pd.to_numeric(df[x], errors="coerce").astype(float),
                      "y": pd.to_numeric(df[y], errors="coerce").astype(float)}).dropna()
    n_failed = int(len(df) - len(d))
    if level == "aggregated":
        d = d.groupby("x", as_index=False)["y"].mean()
    too_few = len(d) < 3 or d["x"].nunique() < 2 or d["y"].nunique() < 2
    rows = []
    for name, fn in zip(CORRELATIONS, (pearsonr, spearmanr, kendalltau)):
        keys = {"x": x, "y": y, "level": level, "correlation": name}
        if too_few:
            rows.append(result_row(math.nan, n_items=len(d), n_failed=n_failed, p_value=math.nan, **keys,
                                   note="needs at least 3 points and variation in both variables"))
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fn(d["x"], d["y"])
        rows.append(result_row(float(res[0]), n_items=len(d), n_failed=n_failed, p_value=float(res[1]), **keys,
                               note="item-rounds are not independent" if level == "item" and x == "round" else ""))
    return result_frame(rows, keys=["x", "y", "level", "correlation"])


class RoundwiseTables(Result):
    """The tables of the whole round-wise analysis (:func:`roundwise_tables`), by name.

    ``tables`` holds them; each is also an attribute (``res.round_means``). :meth:`to_frame` stacks the
    statistic tables (those following the result contract) with a first column ``table``. The old
    dict access (``res["round_means"]``, ``res.items()``, ``"stop_best" in res``) works for one release,
    with a ``DeprecationWarning``.

    Parameters
    ----------
    tables : mapping of str to DataFrame
        The tables by name.
    """

    def __init__(self, tables: dict[str, pd.DataFrame]):
        self.tables = dict(tables)

    def __getattr__(self, name: str) -> pd.DataFrame:
        tables = self.__dict__.get("tables", {})
        if name in tables:
            return tables[name]
        raise AttributeError(f"{type(self).__name__} has no table {name!r}; tables: {list(tables)}")

    def __dir__(self):
        return [*super().__dir__(), *self.tables]

    def names(self) -> list[str]:
        """Return the names of the tables.

        Returns
        -------
        list of str
            The names, in the order of the analysis.
        """
        return list(self.tables)

    def to_frame(self) -> pd.DataFrame:
        """Return the statistic tables stacked, a first column ``table`` naming each row's table.

        Returns
        -------
        DataFrame
            ``table`` and the union of the tables' columns (the contract columns among them).
        """
        from medeval_kit.results import check_result

        parts = [t.assign(table=name) for name, t in self.tables.items() if not check_result(t) and len(t)]
        if not parts:
            return result_frame([], keys=["table"])
        out = pd.concat(parts, ignore_index=True)
        return out[["table", *[c for c in out.columns if c != "table"]]]

    def summary(self) -> str:
        """Return the tables' names and sizes, then the total's round means.

        Returns
        -------
        str
            A short text report.
        """
        lines = [f"round-wise analysis: {len(self.tables)} tables"]
        lines += [f"  {name}: {len(t)} rows" for name, t in self.tables.items()]
        if "round_means" in self.tables:
            lines += ["", self.tables["round_means"].to_string(index=False)]
        return "\n".join(lines)

    def _old(self, what: str) -> None:
        warnings.warn(f"roundwise_tables(...){what} (dict access) is deprecated; use .tables{what}, an attribute "
                      "(.round_means) or .to_frame()", DeprecationWarning, stacklevel=3)

    def __getitem__(self, name: str) -> pd.DataFrame:
        self._old(f"[{name!r}]")
        return self.tables[name]

    def __contains__(self, name: object) -> bool:
        self._old(" in")
        return name in self.tables

    def __iter__(self):
        self._old(" iteration")
        return iter(self.tables)

    def __len__(self) -> int:
        return len(self.tables)

    def keys(self):
        """Deprecated: ``.tables.keys()``.

        Returns
        -------
        dict_keys
            The names.
        """
        self._old(".keys()")
        return self.tables.keys()

    def items(self):
        """Deprecated: ``.tables.items()``.

        Returns
        -------
        dict_items
            ``(name, table)`` pairs.
        """
        self._old(".items()")
        return self.tables.items()

    def values(self):
        """Deprecated: ``.tables.values()``.

        Returns
        -------
        dict_values
            The tables.
        """
        self._old(".values()")
        return self.tables.values()


@shared_docs
@takes_columns("item", "round", "component", "aspect", "score", "max_score", "stop", "best", "parse_status")
def roundwise_tables(rounds_df: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0,
                     by: str | None = None, columns: Columns = None) -> RoundwiseTables:
    """Run the whole round-wise analysis on one rounds table.

    Parameters
    ----------
    rounds_df : DataFrame
        The ``rounds`` table.
    {n_boot}
    {seed}
    by : str, optional
        A column to split by (e.g. ``source``).
    {columns}

    Returns
    -------
    RoundwiseTables
        The tables ``load_summary``, ``round_means`` (total, available vs LOCF), ``component_trajectories``,
        ``stop_best``, ``paired_tests``, ``mixed_model``, ``stopping_rule_consistency`` and, when the
        table has them, ``question_length`` / ``length_correlations`` / ``self_answer``.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_rounds
    >>> res = roundwise_tables(synthetic_rounds(n_items=10, seed=0), n_boot=50)
    >>> "round_means" in res.names()
    True
    """
    per = item_rounds(rounds_df)
    comp = component_table(rounds_df)
    comp_by = ["component"] if by is None else [by, "component"]
    out = {
        "load_summary": load_summary(rounds_df),
        "round_means": round_means(per, "total", by=by, bounds=(0, 1)),
        "component_trajectories": round_means(comp, "value", by=comp_by if by in comp.columns or by is None
                                              else "component", bounds=(0, 1)),
        "stop_best": stop_best_distribution(rounds_df, by=by),
        "paired_tests": paired_round_tests(per, "total", by=by, n_boot=n_boot, seed=seed),
        "mixed_model": mixed_model(per, "total"),
        "stopping_rule_consistency": stopping_rule_consistency(rounds_df, by=by),
    }
    if "question_length" in per.columns:
        out["question_length"] = round_means(per, "question_length", by=by)
        out["length_correlations"] = pd.concat(
            [round_correlations(per, "round", "question_length", unit=u) for u in LEVELS], ignore_index=True)
    if "self_answer_correct" in per.columns:
        out["self_answer"] = round_means(per, "self_answer_correct", by=by)
    return RoundwiseTables(out)
