"""Length bias of pairwise judges: response lengths, the logistic model of "A preferred" on position and
length, the longer-preferred rate, the length-controlled win rate, and a simulator with a planted effect."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from medeval_kit.bias._common import EXACT, bias_frame, rows_of
from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import SchemaError
from medeval_kit.pairwise import MODEL_LABELS, polarity_series
from medeval_kit.stats import proportion_ci

__all__ = ["response_lengths", "length_bias", "longer_preferred_rate", "length_controlled_win_rate",
           "simulate_length_bias"]

_LOGIT = "logit (statsmodels GLM)"


@shared_docs
@takes_columns("item", "slot", "text")
def response_lengths(
    responses: pd.DataFrame,
    *,
    slots: tuple[str, str] = ("A", "B"),
    columns: Columns = None,
) -> pd.DataFrame:
    """Whitespace-token lengths of the two responses per item.

    Parameters
    ----------
    responses : DataFrame
        ``item, slot, text``: one row per response.
    slots : pair of str, default ("A", "B")
        The slot values of response A and response B.
    {columns}

    Returns
    -------
    DataFrame
        ``item, len_a, len_b``; a missing text has length NA (such pairs are dropped by
        :func:`length_bias` and counted).
    """
    item, slot, text = "item", "slot", "text"
    d = responses[responses[slot].isin(slots)].copy()
    d["_len"] = d[text].map(lambda t: np.nan if pd.isna(t) else float(len(str(t).split())))
    wide = d.pivot_table(index=item, columns=slot, values="_len", aggfunc="first")
    wide = wide.reindex(columns=list(slots))
    return pd.DataFrame({item: wide.index.astype(str), "len_a": wide[slots[0]].to_numpy(),
                         "len_b": wide[slots[1]].to_numpy()})


def _pairwise_design(
    df: pd.DataFrame, item, judge, criterion, order, verdict, len_a, len_b, parse_status,
    reversed_criteria, polarity,
) -> pd.DataFrame:
    """A copy with ``_ok``, ``_pos`` (+-0.5), ``_y`` (1 = A preferred, 0 = B, NaN = tie/failed),
    ``_dl`` (len_a - len_b) and ``_lr`` (log length ratio)."""
    need = [c for c in (item, verdict, len_a, len_b) if c not in df.columns]
    if need:
        raise SchemaError("judgments", need[0], [], f"missing column(s) {need}; present: {list(df.columns)}")
    d = df.reset_index(drop=True).copy()
    if judge not in d.columns:
        d[judge] = "judge"
    if criterion not in d.columns:
        d[criterion] = "overall"
    d["_pol"] = polarity_series(d, criterion, reversed_criteria, polarity)
    ok = d[verdict].notna()
    if parse_status and parse_status in d.columns:
        ok &= d[parse_status].eq("ok")
    bad = ok & ~d[verdict].isin(MODEL_LABELS)
    if bad.any():
        raise SchemaError("judgments", verdict, rows_of(bad), f"verdicts must be model terms {list(MODEL_LABELS)}")
    d["_ok"] = ok
    d["_order"] = d[order].astype(str).str.upper() if order in d.columns else "AB"
    d["_pos"] = np.where(d["_order"] == "BA", -0.5, 0.5)
    win = np.where(d["_pol"] > 0, "A", "B")
    loss = np.where(d["_pol"] > 0, "B", "A")
    d["_y"] = np.where(d[verdict] == win, 1.0, np.where(d[verdict] == loss, 0.0, np.nan))
    d["_y"] = d["_y"].where(ok)
    d["_dl"] = pd.to_numeric(d[len_a], errors="coerce") - pd.to_numeric(d[len_b], errors="coerce")
    with np.errstate(divide="ignore", invalid="ignore"):
        d["_lr"] = np.log(pd.to_numeric(d[len_a], errors="coerce") / pd.to_numeric(d[len_b], errors="coerce"))
    return d


def _fit_logit(y, X, groups):
    """The fitted Binomial GLM and how its SEs were made (cluster-robust by item when items repeat)."""
    import statsmodels.api as sm

    model = sm.GLM(y, X, family=sm.families.Binomial())
    if groups is not None and pd.Series(groups).duplicated().any():
        return model.fit(cov_type="cluster", cov_kwds={"groups": pd.factorize(groups)[0]}), "cluster-robust SE by item"
    return model.fit(), "model-based SE"


def _length_design(g: pd.DataFrame, length: str, length_unit: float,
                   covariates: Sequence[str]) -> tuple[pd.Series, pd.DataFrame, list[str]]:
    """(rows used, design matrix, notes) of one judge and criterion's logistic length model."""
    L = g["_dl"] / length_unit if length == "diff" else g["_lr"]
    use = g["_y"].notna() & L.notna() & np.isfinite(L)
    for cv in covariates:
        use &= g[cv].notna()
    gg = g[use]
    X = pd.DataFrame({"intercept": 1.0}, index=gg.index)
    notes = []
    if gg["_pos"].nunique() > 1:
        X["position_first"] = gg["_pos"]
    else:
        notes.append("one presentation order only: position term omitted")
    X["length"] = L[use]
    for cv in covariates:
        X[cv] = pd.to_numeric(gg[cv])
    return use, X, notes


def _nan_coefficients(base: dict, names, note: str) -> list[dict]:
    """One NaN row per coefficient, with the reason."""
    return [{**base, "metric": name, "estimate": np.nan, "ci_method": _LOGIT, "note": note, "p_value": np.nan,
             "odds_ratio": np.nan} for name in names]


@shared_docs
@takes_columns("item", "judge", "criterion", "order", "verdict", "len_a", "len_b", "parse_status", "polarity")
def length_bias(
    df: pd.DataFrame,
    *,
    length: str = "diff",
    length_unit: float = 100.0,
    covariates: Sequence[str] = (),
    reversed_criteria: Collection[str] | None = None,
    polarity: str | None = None,
    confidence: float = 0.95,
    columns: Columns = None,
) -> pd.DataFrame:
    """Logistic regression of "A preferred" on presentation position and length difference.

    Per judge and criterion, over parsed non-tie verdicts (ties and failures counted, not modelled):
    ``logit P(A preferred) = b0 + b_pos * pos + b_len * L + sum(b_k * covariate_k)``, with
    ``pos = +0.5`` when A is shown first and ``-0.5`` when second (so ``b_pos`` is the log-odds gain of
    being shown first), and ``L = (len_a - len_b) / length_unit`` (``length="diff"``) or
    ``log(len_a / len_b)`` (``"log_ratio"``). On reversed criteria "A preferred" means B was chosen
    (as worse). With one order only, ``pos`` is omitted (noted). Fitted with statsmodels GLM
    (Binomial, logit link), cluster-robust by item when items repeat. Rows: one per coefficient
    (``metric`` = ``intercept``, ``position_first``, ``length``, covariates), ``estimate`` = log-odds
    coefficient, Wald CI, ``p_value``, ``odds_ratio``.

    Parameters
    ----------
    df : DataFrame
        Judgments in model terms with lengths: ``item, verdict, len_a, len_b`` and optionally ``judge``,
        ``criterion`` (absent: one of each), ``order`` (absent: AB) and ``parse_status``.
    length : {"diff", "log_ratio"}, default "diff"
        The length term L.
    length_unit : float, default 100.0
        Tokens per unit of L for ``"diff"``.
    covariates : sequence of str, default ()
        Further numeric columns in the model (e.g. ``reference_pref``); which columns, not renames.
    reversed_criteria : collection of str, optional
        Criteria phrased negatively (choosing means worse).
    polarity : str, optional
        Name of a column holding each row's polarity (+1 / -1).
    {confidence}
    {columns}

    Returns
    -------
    DataFrame
        The coefficient rows described above.

    Examples
    --------
    >>> res = length_bias(simulate_length_bias(200, length_effect=1.0, seed=0))
    >>> bool(res.set_index("metric").loc["length", "estimate"] > 0)
    True
    """
    item, judge, criterion, order, verdict, len_a, len_b, parse_status = (
        "item", "judge", "criterion", "order", "verdict", "len_a", "len_b", "parse_status")
    if length not in ("diff", "log_ratio"):
        raise ValueError("length must be 'diff' or 'log_ratio'")
    d = _pairwise_design(df, item, judge, criterion, order, verdict, len_a, len_b, parse_status,
                         reversed_criteria, polarity)
    rows = []
    for (j, c), g in d.groupby([judge, criterion], sort=True):
        n_failed = int((~g["_ok"]).sum())
        n_ties = int((g["_ok"] & g["_y"].isna()).sum())
        use, X, notes = _length_design(g, length, length_unit, covariates)
        gg = g[use]
        base = {"judge": j, "criterion": c, "n_items": int(gg[item].nunique()), "n_failed": n_failed,
                "n": int(use.sum()), "n_ties": n_ties, "n_dropped": int(len(g) - use.sum() - n_failed - n_ties),
                "unit": "call", "length": length, "length_unit": length_unit if length == "diff" else None}
        if len(gg) < X.shape[1] + 2 or gg["_y"].nunique() < 2:
            rows += _nan_coefficients(base, X.columns, "too few non-tie verdicts or only one outcome")
            continue
        try:
            fit, se = _fit_logit(gg["_y"].to_numpy(), X, gg[item].to_numpy())
        except Exception as exc:  # perfect separation, singular design
            rows += _nan_coefficients(base, X.columns, f"fit failed: {type(exc).__name__}: {exc}")
            continue
        ci = fit.conf_int(alpha=1 - confidence)
        for name in X.columns:
            rows.append({**base, "metric": name, "estimate": float(fit.params[name]),
                         "ci_low": float(ci.loc[name, 0]), "ci_high": float(ci.loc[name, 1]),
                         "ci_method": f"logit (statsmodels GLM Binomial), Wald CI, {se}", "note": "; ".join(notes),
                         "p_value": float(fit.pvalues[name]), "odds_ratio": float(np.exp(fit.params[name]))})
    return bias_frame(rows)


@shared_docs
@takes_columns("item", "judge", "criterion", "order", "verdict", "len_a", "len_b", "parse_status", "polarity")
def longer_preferred_rate(
    df: pd.DataFrame,
    *,
    reversed_criteria: Collection[str] | None = None,
    polarity: str | None = None,
    confidence: float = 0.95,
    columns: Columns = None,
) -> pd.DataFrame:
    """Share of parsed non-tie verdicts that prefer the longer response (equal lengths skipped).

    Exact CI and exact binomial test against 0.5. Polarity-aware like :func:`length_bias`.

    Parameters
    ----------
    df : DataFrame
        Judgments with lengths (see :func:`length_bias`).
    reversed_criteria : collection of str, optional
        Criteria phrased negatively (choosing means worse).
    polarity : str, optional
        Name of a column holding each row's polarity (+1 / -1).
    {confidence}
    {columns}

    Returns
    -------
    DataFrame
        One row per judge and criterion, metric ``longer_preferred``, with ``p_value``.
    """
    item, judge, criterion, order, verdict, len_a, len_b, parse_status = (
        "item", "judge", "criterion", "order", "verdict", "len_a", "len_b", "parse_status")
    d = _pairwise_design(df, item, judge, criterion, order, verdict, len_a, len_b, parse_status,
                         reversed_criteria, polarity)
    rows = []
    for (j, c), g in d.groupby([judge, criterion], sort=True):
        use = g["_y"].notna() & g["_dl"].notna() & (g["_dl"] != 0)
        gg = g[use]
        longer_pref = ((gg["_y"] == 1) & (gg["_dl"] > 0)) | ((gg["_y"] == 0) & (gg["_dl"] < 0))
        k, n = int(longer_pref.sum()), int(len(gg))
        low, high = proportion_ci(k, n, confidence=confidence)
        rows.append({"judge": j, "criterion": c, "metric": "longer_preferred", "estimate": k / n if n else np.nan,
                     "ci_low": low, "ci_high": high, "ci_method": EXACT, "n_items": int(gg[item].nunique()),
                     "n_failed": int((~g["_ok"]).sum()), "note": "" if n else "no non-tie verdicts with unequal lengths",
                     "n": n, "n_ties": int((g["_ok"] & g["_y"].isna()).sum()),
                     "n_dropped": int((g["_y"].notna() & ~use).sum()),
                     "p_value": float(sps.binomtest(k, n).pvalue) if n else np.nan,
                     "test": "exact binomial test vs 0.5", "unit": "call"})
    return bias_frame(rows)


def _lc_design(gg: pd.DataFrame, transform: str, length_unit: float) -> tuple[pd.DataFrame, float]:
    """(design matrix, sd of the length difference) of the length-controlled win-rate model."""
    sd = float(gg["_dl"].std(ddof=0)) if len(gg) else 0.0
    X = pd.DataFrame({"intercept": 1.0}, index=gg.index)
    if gg["_pos"].nunique() > 1:
        X["position_first"] = gg["_pos"]
    if transform == "tanh":
        X["length"] = np.tanh(gg["_dl"] / sd) if sd > 0 else 0.0
    else:
        X["length"] = gg["_dl"] / length_unit
    return X, sd


def _lc_row(gg: pd.DataFrame, item: str, base: dict, transform: str, length_unit: float,
            confidence: float) -> dict:
    """The ``win_rate_lc`` row: expit(theta) of the length-controlled logit, or NaN with the reason."""
    from scipy.special import expit

    X, sd = _lc_design(gg, transform, length_unit)
    method = f"length-controlled logit ({transform} length term; statsmodels GLM), expit(theta)"
    lc = {**base, "metric": "win_rate_lc", "estimate": np.nan, "ci_method": method, "p_value": np.nan,
          "test": "Wald test of theta = 0 (a win rate of 0.5)", "transform": transform}
    if len(gg) < X.shape[1] + 2 or gg["_y"].nunique() < 2 or sd == 0:
        return {**lc, "note": "too few verdicts, one outcome or no length variation"}
    try:
        fit, se = _fit_logit(gg["_y"].to_numpy(), X, gg[item].to_numpy())
    except Exception as exc:
        return {**lc, "note": f"fit failed: {type(exc).__name__}: {exc}"}
    ci = fit.conf_int(alpha=1 - confidence).loc["intercept"]
    return {**lc, "estimate": float(expit(fit.params["intercept"])), "ci_low": float(expit(ci[0])),
            "ci_high": float(expit(ci[1])), "ci_method": f"{method}, {se}", "note": "ties excluded",
            "p_value": float(fit.pvalues["intercept"]), "length_coef": float(fit.params["length"])}


@shared_docs
@takes_columns("item", "judge", "criterion", "order", "verdict", "len_a", "len_b", "parse_status", "polarity")
def length_controlled_win_rate(
    df: pd.DataFrame,
    *,
    transform: str = "linear",
    length_unit: float = 100.0,
    reversed_criteria: Collection[str] | None = None,
    polarity: str | None = None,
    confidence: float = 0.95,
    columns: Columns = None,
) -> pd.DataFrame:
    """Raw and length-controlled win rate of model A, per judge and criterion (ties excluded).

    Fit ``logit P(A wins) = theta + b_pos * pos + b_len * f(dlen)`` over all calls, with
    ``f(dlen) = dlen / length_unit`` (``transform="linear"``) or AlpacaEval-2's
    ``tanh(dlen / sd(dlen))`` (``"tanh"``). The length-controlled win rate is ``expit(theta)``: the
    predicted win rate when both responses have the same length and the position is balanced
    (``pos`` = +-0.5). Its CI maps the Wald CI of ``theta`` (cluster-robust by item) through
    ``expit``. The raw win rate has an exact CI. The estimate is only as good as ``f``: if the
    judge's length response is not of that shape, some of it leaks into ``theta``.

    Parameters
    ----------
    df : DataFrame
        Judgments with lengths (see :func:`length_bias`).
    transform : {"linear", "tanh"}, default "linear"
        The length term f.
    length_unit : float, default 100.0
        Tokens per unit for ``"linear"``.
    reversed_criteria : collection of str, optional
        Criteria phrased negatively (choosing means worse).
    polarity : str, optional
        Name of a column holding each row's polarity (+1 / -1).
    {confidence}
    {columns}

    Returns
    -------
    DataFrame
        Per judge and criterion, metrics ``win_rate_raw`` (exact CI, ``p_value``) and ``win_rate_lc``.

    Examples
    --------
    >>> lc = length_controlled_win_rate(simulate_length_bias(300, seed=0)).set_index("metric")
    >>> bool(lc.loc["win_rate_raw", "estimate"] > lc.loc["win_rate_lc", "estimate"])
    True
    """
    item, judge, criterion, order, verdict, len_a, len_b, parse_status = (
        "item", "judge", "criterion", "order", "verdict", "len_a", "len_b", "parse_status")
    if transform not in ("linear", "tanh"):
        raise ValueError("transform must be 'linear' or 'tanh'")
    d = _pairwise_design(df, item, judge, criterion, order, verdict, len_a, len_b, parse_status,
                         reversed_criteria, polarity)
    rows = []
    for (j, c), g in d.groupby([judge, criterion], sort=True):
        gg = g[g["_y"].notna() & g["_dl"].notna()]
        n_failed = int((~g["_ok"]).sum())
        n_ties = int((g["_ok"] & g["_y"].isna()).sum())
        k, n = int((gg["_y"] == 1).sum()), int(len(gg))
        low, high = proportion_ci(k, n, confidence=confidence)
        base = {"judge": j, "criterion": c, "n_items": int(gg[item].nunique()), "n_failed": n_failed, "n": n,
                "n_ties": n_ties, "n_dropped": int(len(g) - n - n_failed - n_ties), "unit": "call"}
        rows.append({**base, "metric": "win_rate_raw", "estimate": k / n if n else np.nan, "ci_low": low,
                     "ci_high": high, "ci_method": f"{EXACT}, ties excluded", "note": "",
                     "p_value": float(sps.binomtest(k, n).pvalue) if n else np.nan,
                     "test": "exact binomial test vs 0.5"})
        rows.append(_lc_row(gg, item, base, transform, length_unit, confidence))
    return bias_frame(rows)


@shared_docs
def simulate_length_bias(
    n_items: int = 400,
    *,
    length_effect: float = 1.0,
    position_effect: float = 0.0,
    quality: float = 0.0,
    a_longer: float = 80.0,
    judge_name: str = "judge",
    seed: int = 0,
    judge: str | None = None,
) -> pd.DataFrame:
    """Two-order pairwise judgments with a planted length (and position) effect, no ties.

    ``logit P(A chosen) = quality + position_effect * pos + length_effect * (len_a - len_b) / 100``
    with ``pos = +0.5`` if A is shown first. A is ``a_longer`` tokens longer on average, so with
    ``quality = 0`` the raw win rate is inflated while the true (length-controlled) one is 0.5.

    Parameters
    ----------
    n_items : int, default 400
        Items (pairs), each judged in both orders.
    length_effect : float, default 1.0
        Log-odds of choosing A per 100 tokens of length difference.
    position_effect : float, default 0.0
        Log-odds gain of being shown first.
    quality : float, default 0.0
        Log-odds that A is better, length aside.
    a_longer : float, default 80.0
        How many tokens longer A is on average.
    judge_name : str, default "judge"
        The judge's name in the table.
    {seed}
    judge : str, optional
        Deprecated name of ``judge_name``.

    Returns
    -------
    DataFrame
        A ``judgments`` table (both orders, ``verdict`` and ``slot_verdict``) with ``len_a, len_b``.
    """
    if judge is not None:
        import warnings

        warnings.warn("simulate_length_bias(judge=...) is deprecated; use judge_name=", DeprecationWarning,
                      stacklevel=2)
        judge_name = judge
    judge = judge_name
    rng = np.random.default_rng(seed)
    la = rng.normal(200 + a_longer, 60, n_items).clip(10).round()
    lb = rng.normal(200, 60, n_items).clip(10).round()
    items = [f"i{j:04d}" for j in range(n_items)]
    frames = []
    for o, pos in (("AB", 0.5), ("BA", -0.5)):
        eta = quality + position_effect * pos + length_effect * (la - lb) / 100
        pick_a = rng.random(n_items) < 1 / (1 + np.exp(-eta))
        v = np.where(pick_a, "A", "B")
        slot = np.where((v == "A") == (o == "AB"), "first", "second")
        frames.append(pd.DataFrame({"item": items, "judge": judge, "protocol": "pairwise", "criterion": "overall",
                                    "order": o, "repeat": 0, "raw": slot, "verdict": v, "slot_verdict": slot,
                                    "parse_status": "ok", "len_a": la, "len_b": lb}))
    return pd.concat(frames, ignore_index=True)
