"""Item response theory: 1PL and 2PL fits by marginal maximum likelihood, their SEs and item curves.

The model is P(correct | theta) = 1 / (1 + exp(-a (theta - b))) with ability theta ~ N(0, 1):
``2pl`` estimates a discrimination ``a`` and a difficulty ``b`` per item, ``1pl`` one common ``a``
and a ``b`` per item (ltm's ``rasch()``), ``rasch`` fixes a = 1.

Two engines give the point estimates. ``girth`` (the default; the maintained ``girth`` package, its
own 41-point quadrature on [-4.5, 4.5]; it bounds a to [0.2, 5] (2PL) or [0.25, 10] (1PL) and b to
[-6, 6], so it cannot return a negative discrimination) and ``mml`` (this module: scipy L-BFGS-B on
the marginal likelihood integrated by Gauss-Hermite quadrature, ``quadrature`` points, 21 as R's
``ltm``; a in [-6, 6], b in [-8, 8], so a miskeyed item can show a < 0; missing answers drop out of
the likelihood). Both reproduce ltm's LSAT estimates (tests/test_psychometrics.py). girth gives point estimates only, so the standard errors come
from the observed information: the inverse of the numerical Hessian (central differences of the
analytic gradient) of the Gauss-Hermite marginal log-likelihood at the estimates (``se="observed"``,
Wald CIs), or from a parametric bootstrap that simulates examinees from the fit (same missing
answers) and refits (``se="bootstrap"``, percentile CIs). Items everyone got right or wrong have no
finite estimate: they are reported with NaN and a note, never fitted; estimates at the engine's
bounds (:data:`BOUNDS`: the data cannot identify them) keep a note and no SE or CI.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize
from scipy.special import expit, logsumexp

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import ParameterError
from medeval_kit.results import Result, result_frame, result_row
from medeval_kit.stats import normal_interval, percentile_interval

__all__ = ["FAMILIES", "ENGINES", "BOUNDS", "IRTFit", "fit_irt", "icc_table", "marginal_loglik"]

FAMILIES = ("2pl", "1pl", "rasch")
MODELS = FAMILIES  # the old name (deprecated: psychometrics.MODELS warns)
ENGINES = ("girth", "mml")
A_BOUND, B_BOUND = 6.0, 8.0
BOUNDS = {("mml", "2pl"): (-A_BOUND, A_BOUND, B_BOUND), ("mml", "1pl"): (1e-3, A_BOUND, B_BOUND),
          ("mml", "rasch"): (None, None, B_BOUND), ("girth", "2pl"): (0.2, 5.0, 6.0),
          ("girth", "1pl"): (0.25, 10.0, 6.0), ("girth", "rasch"): (None, None, 6.0)}
"""(engine, model) -> (lowest a, highest a, largest |b|) each engine's optimiser can return (girth's are its own)."""


@dataclass(frozen=True)
class IRTFit(Result):
    """A fitted 1PL/2PL/Rasch model (:func:`fit_irt`): parameter rows, log-likelihood and covariance.

    Attributes
    ----------
    family : str
        The IRT family: ``2pl``, ``1pl`` or ``rasch``.
    engine : str
        The engine of the point estimates: ``girth`` or ``mml``.
    se_method : str
        How the standard errors and CIs were made.
    parameters : DataFrame
        Contract rows keyed ``item, parameter`` (``a``, ``b``) with extra ``se``.
    loglik : float
        The marginal log-likelihood at the estimates.
    n_examinees : int
        Examinees in the fit.
    n_fitted_items : int
        Items fitted (items without variance are not).
    covariance : ndarray
        Covariance of the free parameters (NaN where unknown).
    index : dict
        ``{"items": fitted items, "map": {(parameter, item position): free-parameter index}}``.
    notes : tuple of str
        Anything a reader must know about the fit.
    """

    family: str
    engine: str
    se_method: str
    parameters: pd.DataFrame
    loglik: float
    n_examinees: int
    n_fitted_items: int
    covariance: np.ndarray = field(repr=False)
    index: dict = field(repr=False, default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def model(self) -> str:
        """The IRT family under its old name (deprecated: use :attr:`family`)."""
        warnings.warn("IRTFit.model is deprecated; use IRTFit.family", DeprecationWarning, stacklevel=2)
        return self.family

    def to_frame(self) -> pd.DataFrame:
        """Return the parameter rows.

        Returns
        -------
        DataFrame
            Contract rows keyed ``item, parameter`` with extra ``se``.
        """
        return self.parameters.copy()

    def wide(self) -> pd.DataFrame:
        """Return one row per item: a, b and their SEs and CIs.

        Returns
        -------
        DataFrame
            ``item, a, a_se, a_low, a_high, b, b_se, b_low, b_high``.
        """
        p = self.parameters
        out = []
        for name in ("a", "b"):
            d = p[p["parameter"] == name].set_index("item")[["estimate", "se", "ci_low", "ci_high"]]
            out.append(d.rename(columns={"estimate": name, "se": f"{name}_se", "ci_low": f"{name}_low",
                                         "ci_high": f"{name}_high"}))
        return pd.concat(out, axis=1).reset_index()

    def summary(self) -> str:
        """Return a one-line description of the fit.

        Returns
        -------
        str
            Family, engine, items, examinees, log-likelihood, SE method and notes.
        """
        p = self.parameters
        fitted = p[(p["parameter"] == "b") & p["estimate"].notna()]
        s = (f"{self.family.upper()} ({self.engine}): {self.n_fitted_items} items fitted of "
             f"{p['item'].nunique()}, {self.n_examinees} examinees, log-likelihood {self.loglik:.3f}; "
             f"SEs: {self.se_method}; median |b| {fitted['estimate'].abs().median():.2f}")
        return s + ("; " + "; ".join(self.notes) if self.notes else "")

    def _repr_html_(self) -> str:
        return f"<pre>{self.summary()}</pre>"


# --------------------------------------------------------------------------- the likelihood
def _quadrature(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Hermite nodes and log-weights for E[f(theta)], theta ~ N(0, 1)."""
    x, w = np.polynomial.hermite_e.hermegauss(int(n))
    return x, np.log(w / math.sqrt(2 * math.pi))


def _patterns(Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (Y with 0 for missing, answered mask, counts) of the distinct response patterns."""
    code = np.where(np.isnan(Y), 2, Y).astype(np.int8)
    uniq, counts = np.unique(code, axis=0, return_counts=True)
    M = (uniq != 2).astype(float)
    return np.where(uniq == 2, 0, uniq).astype(float), M, counts.astype(float)


def _unpack(x: np.ndarray, model: str, J: int, a_fixed: float) -> tuple[np.ndarray, np.ndarray]:
    """Return (a, b) per item from the free parameter vector."""
    if model == "2pl":
        return x[:J], x[J:]
    if model == "1pl":
        return np.full(J, x[0]), x[1:]
    return np.full(J, a_fixed), x


def _negll_grad(x, model, Yp, M, cnt, nodes, logw, a_fixed):
    """Return (-loglik, -gradient) of the marginal likelihood at the free parameters ``x``."""
    J = Yp.shape[1]
    a, b = _unpack(x, model, J, a_fixed)
    z = a[:, None] * (nodes[None, :] - b[:, None])  # J x Q
    logp, log1mp = -np.logaddexp(0, -z), -np.logaddexp(0, z)
    L = Yp @ logp + (M - Yp) @ log1mp + logw[None, :]  # patterns x Q
    ll = logsumexp(L, axis=1)
    R = np.exp(L - ll[:, None]) * cnt[:, None]
    resid = (R.T @ Yp) - (R.T @ M) * expit(z).T  # Q x J: d loglik / d z
    ga = ((nodes[:, None] - b[None, :]) * resid).sum(0)
    gb = (-a[None, :] * resid).sum(0)
    if model == "2pl":
        g = np.concatenate([ga, gb])
    elif model == "1pl":
        g = np.concatenate([[ga.sum()], gb])
    else:
        g = gb
    return -float(cnt @ ll), -g


def marginal_loglik(Y: np.ndarray, a: np.ndarray, b: np.ndarray, *, quadrature: int = 21) -> float:
    """Return the marginal log-likelihood of a 2PL model at (a, b), ability integrated over N(0, 1).

    Parameters
    ----------
    Y : ndarray
        Examinees x items, 1 right, 0 wrong, NaN missing (missing answers drop out).
    a : ndarray
        Discrimination per item.
    b : ndarray
        Difficulty per item.
    quadrature : int
        Gauss-Hermite points.

    Returns
    -------
    float
        The log-likelihood.
    """
    Yp, M, cnt = _patterns(np.asarray(Y, float))
    nodes, logw = _quadrature(quadrature)
    x = np.concatenate([np.asarray(a, float), np.asarray(b, float)])
    return -_negll_grad(x, "2pl", Yp, M, cnt, nodes, logw, 1.0)[0]


def _start(Y: np.ndarray, model: str, a_fixed: float) -> np.ndarray:
    """Starting values: a = 1, b from the logit of each item's p."""
    p = np.clip(np.nanmean(Y, axis=0), 0.02, 0.98)
    b0 = -np.log(p / (1 - p)) / 1.0
    J = Y.shape[1]
    if model == "2pl":
        return np.concatenate([np.ones(J), b0])
    if model == "1pl":
        return np.concatenate([[1.0], b0])
    return b0 / a_fixed


def _bounds(model: str, J: int) -> list[tuple[float, float]]:
    """Optimiser bounds of the free parameters."""
    ab, bb = (-A_BOUND, A_BOUND), (-B_BOUND, B_BOUND)
    return {"2pl": [ab] * J + [bb] * J, "1pl": [(1e-3, A_BOUND)] + [bb] * J, "rasch": [bb] * J}[model]


def _fit_mml(Y: np.ndarray, model: str, quadrature: int, a_fixed: float) -> tuple[np.ndarray, bool]:
    """Return (free parameters, converged) of the Gauss-Hermite MML fit."""
    Yp, M, cnt = _patterns(Y)
    nodes, logw = _quadrature(quadrature)
    res = optimize.minimize(_negll_grad, _start(Y, model, a_fixed), jac=True, method="L-BFGS-B",
                            args=(model, Yp, M, cnt, nodes, logw, a_fixed), bounds=_bounds(model, Y.shape[1]),
                            options={"maxiter": 2000, "ftol": 1e-13, "gtol": 1e-8})
    return res.x, bool(res.success)


def _fit_girth(Y: np.ndarray, model: str, a_fixed: float) -> tuple[np.ndarray, bool]:
    """Return (free parameters, True) from girth's MML (missing answers tagged as girth's invalid response)."""
    import girth

    data = np.where(np.isnan(Y), girth.INVALID_RESPONSE, Y).T.astype(int)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if model == "2pl":
            r = girth.twopl_mml(data)
            x = np.concatenate([np.asarray(r["Discrimination"], float), np.asarray(r["Difficulty"], float)])
        elif model == "1pl":
            r = girth.onepl_mml(data)
            x = np.concatenate([[float(r["Discrimination"])], np.asarray(r["Difficulty"], float)])
        else:
            r = girth.rasch_mml(data, discrimination=a_fixed)
            x = np.asarray(r["Difficulty"], float)
    return x, bool(np.all(np.isfinite(x)))


def _hessian(x: np.ndarray, model, Yp, M, cnt, nodes, logw, a_fixed, step: float = 1e-4) -> np.ndarray:
    """Return the Hessian of -loglik by central differences of the analytic gradient."""
    k = len(x)
    H = np.empty((k, k))
    for i in range(k):
        e = np.zeros(k)
        e[i] = step * max(1.0, abs(x[i]))
        gp = _negll_grad(x + e, model, Yp, M, cnt, nodes, logw, a_fixed)[1]
        gm = _negll_grad(x - e, model, Yp, M, cnt, nodes, logw, a_fixed)[1]
        H[:, i] = (gp - gm) / (2 * e[i])
    return (H + H.T) / 2


def _observed_cov(x, model, Y, quadrature, a_fixed) -> tuple[np.ndarray, str]:
    """Return (covariance of the free parameters, note): the inverse observed information, NaN if singular."""
    Yp, M, cnt = _patterns(Y)
    nodes, logw = _quadrature(quadrature)
    H = _hessian(x, model, Yp, M, cnt, nodes, logw, a_fixed)
    try:
        cov = np.linalg.inv(H)
    except np.linalg.LinAlgError:
        return np.full_like(H, np.nan), "observed information is singular: no SEs"
    if not np.all(np.isfinite(cov)) or np.any(np.diag(cov) <= 0):
        bad = ~np.isfinite(np.diag(cov)) | (np.diag(cov) <= 0)
        cov[bad, :] = np.nan
        cov[:, bad] = np.nan
        return cov, "observed information not positive definite for some parameters: their SEs are NaN"
    return cov, ""


def _simulate(a: np.ndarray, b: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Simulate a 0/1 matrix from (a, b) for examinees with theta ~ N(0, 1), NaN where ``mask`` is False."""
    theta = rng.standard_normal(mask.shape[0])
    p = expit(a[None, :] * (theta[:, None] - b[None, :]))
    y = (rng.random(p.shape) < p).astype(float)
    return np.where(mask, y, np.nan)


@shared_docs
@takes_columns("item", "examinee", "correct")
def fit_irt(responses: pd.DataFrame, *, family: str = "2pl", engine: str = "girth", se: str = "observed",
            n_boot: int = 200, quadrature: int = 21, a_fixed: float = 1.0, confidence: float = 0.95,
            seed: int = 0, columns: Columns = None, **old: str) -> IRTFit:
    """Fit a 1PL, 2PL or Rasch model to the scored ``responses``; return an :class:`IRTFit` (see module doc).

    ``n_items`` per parameter row is the number of examinees who answered the item, ``n_failed`` those
    whose answer is missing. Items without variance are not fitted (NaN rows with a note).

    Parameters
    ----------
    responses : DataFrame
        A scored ``responses`` table.
    family : {"2pl", "1pl", "rasch"}
        The IRT family: a and b per item, one common a, or a fixed at ``a_fixed``.
    engine : {"girth", "mml"}
        The point estimates: girth's MML or this module's Gauss-Hermite MML (scipy).
    se : {"observed", "bootstrap", "none"}
        Standard errors: observed information (Wald CIs), parametric bootstrap (percentile CIs) or none.
    n_boot : int, default 200
        Parametric-bootstrap replicates when ``se="bootstrap"``.
    quadrature : int
        Gauss-Hermite points of the marginal likelihood.
    a_fixed : float
        The discrimination of the Rasch family.
    {confidence}
    {seed}
    {columns}
    **old : str
        ``model=`` is the old name of ``family`` (deprecated, warns).

    Returns
    -------
    IRTFit
        ``to_frame()`` gives contract rows keyed ``item, parameter`` (``a``, ``b``) with extra ``se``.

    Raises
    ------
    ParameterError
        An unknown family, engine or ``se``, or fewer than 2 items with variance or 3 examinees.

    Examples
    --------
    >>> from medeval_kit.psychometrics import synthetic_exam
    >>> fit = fit_irt(synthetic_exam(6, 300, seed=0).responses, family="2pl", engine="mml", se="none")
    >>> fit.family, fit.n_fitted_items
    ('2pl', 6)
    """
    if "model" in old:
        warnings.warn("fit_irt(model=...) is deprecated; the IRT family is family=", DeprecationWarning, stacklevel=3)
        family = old.pop("model")
    if old:
        raise TypeError(f"fit_irt() got unexpected keyword argument(s) {sorted(old)}")
    model = family
    if model not in FAMILIES:
        raise ParameterError(f"family must be one of {list(FAMILIES)}, not {model!r}")
    if engine not in ENGINES:
        raise ParameterError(f"engine must be one of {list(ENGINES)}, not {engine!r}")
    if se not in ("observed", "bootstrap", "none"):
        raise ParameterError(f"se must be 'observed', 'bootstrap' or 'none', not {se!r}")
    m = responses.pivot(index="examinee", columns="item", values="correct").astype("Float64").astype(float)
    items = [str(c) for c in m.columns]
    Y_all = m.to_numpy()
    answered = (~np.isnan(Y_all)).sum(0)
    p = np.nanmean(np.where(answered > 0, Y_all, 0), axis=0) if Y_all.size else np.array([])
    with np.errstate(invalid="ignore"):
        p = np.nansum(Y_all, axis=0) / np.maximum(answered, 1)
    usable = (answered >= 2) & (p > 0) & (p < 1)
    Y = Y_all[:, usable]
    Y = Y[~np.isnan(Y).all(axis=1)]
    notes = []
    if Y.shape[1] < 2 or Y.shape[0] < 3:
        raise ParameterError(f"an IRT fit needs at least 2 items with variance and 3 examinees; got {Y.shape[1]} "
                             f"items and {Y.shape[0]} examinees")
    fit = _fit_girth if engine == "girth" else (lambda Yy, mm, af: _fit_mml(Yy, mm, quadrature, af))
    x, converged = fit(Y, model, a_fixed)
    if not converged:
        notes.append("the optimiser did not report convergence")
    J = Y.shape[1]
    Yp, M, cnt = _patterns(Y)
    nodes, logw = _quadrature(quadrature)
    loglik = -_negll_grad(x, model, Yp, M, cnt, nodes, logw, a_fixed)[0]
    a, b = _unpack(x, model, J, a_fixed)
    a_lo, a_hi, b_max = BOUNDS[(engine, model)]
    at_a = np.zeros(J, bool) if a_lo is None else (a <= a_lo + 1e-3) | (a >= a_hi - 1e-3)
    at_b = np.abs(b) >= b_max - 1e-3
    at_bound = {"a": at_a, "b": at_b}
    cov = np.full((len(x), len(x)), np.nan)
    reps = None
    if se == "observed":
        cov, note = _observed_cov(x, model, Y, quadrature, a_fixed)
        if note:
            notes.append(note)
        se_method = f"Wald, observed information ({quadrature}-point Gauss-Hermite marginal likelihood at the estimates)"
    elif se == "bootstrap":
        rng = np.random.default_rng(seed)
        mask = ~np.isnan(Y)
        reps = []
        for _ in range(int(n_boot)):
            Ys = _simulate(a, b, mask, rng)
            keep = (np.nansum(Ys, 0) > 0) & (np.nansum(Ys, 0) < mask.sum(0))
            if not keep.all():  # an item without variance in this replicate: its estimate is unbounded
                reps.append(np.full(len(x), np.nan))
                continue
            reps.append(fit(Ys, model, a_fixed)[0])
        reps = np.array(reps)
        ok = np.isfinite(reps).all(axis=1)
        if ok.sum() >= 2:
            cov = np.cov(reps[ok].T)
        notes.append(f"{int(ok.sum())} of {int(n_boot)} bootstrap replicates usable")
        se_method = f"parametric bootstrap ({int(n_boot)} replicates, percentile CIs)"
    else:
        se_method = "none"
    index = _param_index(model, J)
    rows = []
    fitted = [it for it, u in zip(items, usable) if u]
    n_ans = dict(zip(items, answered))
    n_ex = Y_all.shape[0]
    for it, u, pj in zip(items, usable, p):
        if not u:
            why = "no answers" if n_ans[it] == 0 else ("no variance: every examinee " +
                                                      ("right" if pj == 1 else "wrong") if n_ans[it] >= 2
                                                      else "fewer than 2 answers")
            for name in ("a", "b"):
                rows.append(result_row(math.nan, n_items=int(n_ans[it]), n_failed=int(n_ex - n_ans[it]),
                                       note=f"not fitted: {why}", item=it, parameter=name, se=math.nan))
            continue
        j = fitted.index(it)
        for name, est in (("a", a[j]), ("b", b[j])):
            k = index.get((name, j))
            if k is None:
                rows.append(result_row(est, n_items=int(n_ans[it]), n_failed=int(n_ex - n_ans[it]),
                                       note="fixed" if model == "rasch" else "", item=it, parameter=name, se=0.0))
                continue
            s = math.sqrt(cov[k, k]) if np.isfinite(cov[k, k]) and cov[k, k] > 0 else math.nan
            bound = bool(at_bound[name][j])
            note = f"at the {engine} optimiser's bound: not identified by the data" if bound else ""
            if bound:
                s = math.nan
            if bound or not np.isfinite(s):
                ci, method = (math.nan, math.nan), ""
            elif reps is not None:
                ci, method = percentile_interval(reps[:, k], confidence=confidence), "parametric bootstrap"
            else:
                ci, method = normal_interval(est, s, confidence=confidence), "Wald (observed information)"
            if model == "1pl" and name == "a":
                note = (note + "; " if note else "") + "common to all items"
            rows.append(result_row(est, ci, method, n_items=int(n_ans[it]), n_failed=int(n_ex - n_ans[it]),
                                   note=note, item=it, parameter=name, se=s))
    params = result_frame(rows, keys=["item", "parameter"])
    if at_b.any():
        notes.append(f"{int(at_b.sum())} difficulty estimate(s) at the optimiser's bound")
    if at_a.any():
        notes.append("the common discrimination is at the optimiser's bound" if model == "1pl" else
                     f"{int(at_a.sum())} discrimination estimate(s) at the optimiser's bound")
    return IRTFit(family=model, engine=engine, se_method=se_method, parameters=params, loglik=float(loglik),
                  n_examinees=int(Y.shape[0]), n_fitted_items=J, covariance=cov,
                  index={"items": fitted, "map": index}, notes=tuple(notes))


def _param_index(model: str, J: int) -> dict[tuple[str, int], int]:
    """(parameter, item position) -> index in the free parameter vector."""
    if model == "2pl":
        return {**{("a", j): j for j in range(J)}, **{("b", j): J + j for j in range(J)}}
    if model == "1pl":
        return {**{("a", j): 0 for j in range(J)}, **{("b", j): 1 + j for j in range(J)}}
    return {("b", j): j for j in range(J)}


@shared_docs
def icc_table(fit: IRTFit, *, theta: np.ndarray | None = None, items: list[str] | None = None,
              confidence: float = 0.95) -> pd.DataFrame:
    """Return the item characteristic curves with a delta-method band on the logit.

    Parameters
    ----------
    fit : IRTFit
        The fit (:func:`fit_irt`).
    theta : ndarray, optional
        Ability grid; default 81 points on [-4, 4].
    items : list of str, optional
        Items to draw; default every fitted item.
    {confidence}

    Returns
    -------
    DataFrame
        One row per item and theta: ``item, theta``, the contract columns (``estimate`` = P(correct),
        ``ci_method`` the delta method, ``n_items`` the examinees of the fit), then ``p`` (= estimate),
        ``a``, ``b``.
    """
    from scipy import stats as sps

    grid = np.linspace(-4, 4, 81) if theta is None else np.asarray(theta, float)
    w = fit.wide().set_index("item")
    fitted = fit.index.get("items", [])
    pmap = fit.index.get("map", {})
    z = sps.norm.ppf(0.5 + confidence / 2)
    rows = []
    for it in (items if items is not None else fitted):
        if it not in fitted:
            continue
        j = fitted.index(it)
        a, b = float(w.loc[it, "a"]), float(w.loc[it, "b"])
        logit = a * (grid - b)
        ka, kb = pmap.get(("a", j)), pmap.get(("b", j))
        var = np.zeros_like(grid)
        terms = [(k, d) for k, d in ((ka, grid - b), (kb, np.full_like(grid, -a))) if k is not None]
        for k1, d1 in terms:
            for k2, d2 in terms:
                var = var + d1 * d2 * fit.covariance[k1, k2]
        se = np.sqrt(np.where(var >= 0, var, np.nan))
        p = expit(logit)
        ok = np.isfinite(se)
        rows.append(pd.DataFrame({"item": it, "theta": grid, "estimate": p, "ci_low": expit(logit - z * se),
                                  "ci_high": expit(logit + z * se),
                                  "ci_method": np.where(ok, "delta method (logit)", ""),
                                  "n_items": int(fit.n_examinees), "n_failed": 0,
                                  "note": np.where(ok, "", "no SE"), "p": p, "a": a, "b": b}))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(
        columns=["item", "theta", "estimate", "ci_low", "ci_high", "ci_method", "n_items", "n_failed", "note",
                 "p", "a", "b"])
