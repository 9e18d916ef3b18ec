"""Ratings from pairwise verdicts: Bradley-Terry / Davidson strengths per judge with item-bootstrap CIs on
strengths, ranks and win probabilities.

Every judge is resampled with the *same* bootstrap draws of units (items, or the clusters named by the
``unit`` column), so judge-vs-judge comparisons (:mod:`medeval_kit.rank.compare`) are paired.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import sparse

from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import ParameterError, SchemaError
from medeval_kit.results import Result, result_frame, result_row
from medeval_kit.stats import percentile_interval, resample_counts

from .data import COLUMNS
from .models import TIES, _fit_bradley_terry_batch, fit_davidson, graph_problem, information, outcome_probabilities

__all__ = ["RankResult", "rank_models", "TIE_LABELS", "prior_label"]

_CHUNK = 100  # bootstrap draws generated at a time (fixed, so the draws do not depend on memory)

TIE_LABELS = {
    "davidson": "ties: Davidson (1970) tie parameter",
    "half": "ties: half a win each (Bradley-Terry)",
    "exclude": "ties: dropped (Bradley-Terry)",
}
"""How each ``ties`` policy is described in notes and plots."""


@dataclass(frozen=True)
class RankResult(Result):
    """Strengths, ranks and win probabilities per judge, with the bootstrap draws behind their CIs.

    ``ratings``: result rows per judge and model, metric ``strength`` (mean-zero log-strength; Wald
    ``se`` under the sum-to-zero constraint) and ``rank`` (1 = strongest; its percentile interval widened
    to whole ranks). ``win_probability``: rows per
    judge, model and opponent, metric ``p_win`` (with ``p_tie``, ``p_loss``, ``expected_score`` =
    P(win) + P(tie)/2 and the observed pair counts). ``point[judge]`` and ``draws[judge]`` (n_boot x
    models) hold the strengths in ``models`` order (NaN: not estimable), on the same unit draws for all judges.
    ``prior``: the precision of the Gaussian prior on the log-strengths (None: maximum likelihood); under a
    prior the strengths, SEs (posterior SDs) and CIs are those of the shrunk estimate, as their notes say.
    Made by :func:`rank_models`.

    Attributes
    ----------
    ratings : DataFrame
        Result rows per judge, model and metric (``strength``, ``rank``) with ``se``, ``n_comparisons``,
        ``wins``, ``losses``, ``ties``, ``log_nu``, ``ties_policy`` and ``prior``.
    win_probability : DataFrame
        Result rows per judge, model and opponent, metric ``p_win``, with ``p_tie``, ``p_loss``,
        ``expected_score`` and the observed pair counts.
    models : tuple of str
        The models, in the order of the arrays.
    judges : tuple of str
        The judges, in the table's order.
    ties : str
        The tie policy (:data:`TIES`).
    point : mapping of str to numpy.ndarray
        Per judge, the (K,) log-strengths (NaN: not estimable).
    draws : mapping of str to numpy.ndarray
        Per judge, the (n_boot, K) bootstrap log-strengths, on the same unit draws for all judges.
    units : mapping of str to frozenset
        Per judge, the units with a scored comparison.
    log_nu : mapping of str to float
        Per judge, Davidson's log tie parameter (NaN unless ``ties="davidson"``).
    n_boot : int
        Bootstrap draws.
    confidence : float
        Coverage of the intervals.
    seed : int
        The random seed of the draws.
    notes : mapping of str to str
        Per judge, what a reader must know ("" when nothing).
    prior : float or None
        The precision of the prior on the log-strengths; None for maximum likelihood.
    """

    ratings: pd.DataFrame
    win_probability: pd.DataFrame
    models: tuple[str, ...]
    judges: tuple[str, ...]
    ties: str
    point: Mapping[str, np.ndarray]
    draws: Mapping[str, np.ndarray]
    units: Mapping[str, frozenset]
    log_nu: Mapping[str, float]
    n_boot: int
    confidence: float
    seed: int
    notes: Mapping[str, str] = field(default_factory=dict)
    prior: float | None = None

    def to_frame(self) -> pd.DataFrame:
        """Return the ratings rows (strength and rank per judge and model).

        Returns
        -------
        DataFrame
            :attr:`ratings`, a result-contract table.
        """
        return self.ratings

    def wide(self, metric: str = "strength") -> pd.DataFrame:
        """Return ``metric`` (strength or rank) as a models x judges table.

        Parameters
        ----------
        metric : {"strength", "rank"}, default "strength"
            The metric to spread.

        Returns
        -------
        DataFrame
            Models as rows, judges as columns, the estimates as values.
        """
        d = self.ratings[self.ratings["metric"] == metric]
        return d.pivot(index="model", columns="judge", values="estimate").reindex(index=list(self.models),
                                                                                   columns=list(self.judges))

    def summary(self) -> str:
        """Return one line per judge: its ranking with strengths and rank intervals.

        Returns
        -------
        str
            The header line and one line per judge.
        """
        lines = [f"Bradley-Terry ranking ({TIE_LABELS[self.ties]}); {int(self.confidence * 100)}% "
                 f"bootstrap CIs, B = {self.n_boot}" + (f"; {prior_label(self.prior)}" if self.prior else "")]
        for j in self.judges:
            d = self.ratings[(self.ratings["judge"] == j)]
            s = d[d["metric"] == "strength"].set_index("model")
            r = d[d["metric"] == "rank"].set_index("model")
            order = s["estimate"].dropna().sort_values(ascending=False).index
            parts = [f"{m} {s.at[m, 'estimate']:+.2f} (rank {r.at[m, 'ci_low']:.0f}-{r.at[m, 'ci_high']:.0f})"
                     if np.isfinite(r.at[m, "ci_low"]) else f"{m} {s.at[m, 'estimate']:+.2f}" for m in order]
            n = int(s["n_items"].iloc[0]) if len(s) else 0
            why = (self.notes.get(j, "") or "no strengths").removeprefix("no ranking: ")
            text = " > ".join(parts) if len(order) >= 2 else f"no ranking: {why}"
            lines.append(f"  {j} (n = {n}): " + text)
        return "\n".join(lines)


def _counts(rows: pd.DataFrame, unit_index: Mapping[str, int], model_index: Mapping[str, int], n_units: int,
            K: int):
    """Per-unit win and tie counts of one judge's scored rows, as sparse (n_units, K*K) matrices."""
    u = rows["unit"].map(unit_index).to_numpy(dtype=int)
    a = rows["model_a"].map(model_index).to_numpy(dtype=int)
    b = rows["model_b"].map(model_index).to_numpy(dtype=int)
    v = rows["verdict"].to_numpy()
    win = np.where(v == "A", a * K + b, b * K + a)
    w = v != "tie"
    t = ~w
    shape = (n_units, K * K)
    Fw = sparse.csr_matrix((np.ones(int(w.sum())), (u[w], win[w])), shape=shape)
    Ft = sparse.csr_matrix((np.ones(2 * int(t.sum())), (np.r_[u[t], u[t]], np.r_[a[t] * K + b[t], b[t] * K + a[t]])),
                           shape=shape)
    return Fw, Ft


def prior_label(prior: float | None) -> str:
    """How a prior is stated next to the estimates, CIs and SEs it shrinks ("" without a prior).

    Parameters
    ----------
    prior : float or None
        The precision lambda of the N(0, 1/lambda) prior on each log-strength.

    Returns
    -------
    str
        e.g. "with prior 1 (log-strengths ~ N(0, sd 1)): shrunk toward equal strength".

    Examples
    --------
    >>> prior_label(4.0)
    'with prior 4 (log-strengths ~ N(0, sd 0.5)): shrunk toward equal strength'
    """
    if not prior:
        return ""
    return (f"with prior {prior:g} (log-strengths ~ N(0, sd {1 / math.sqrt(prior):.3g})): shrunk toward equal "
            "strength")


def _fit(W: np.ndarray, T: np.ndarray, ties: str, start: np.ndarray | None = None,
         prior: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Log-strengths (B, k) and log nu (B,) for count arrays (B, k, k); NaN where no finite estimate exists."""
    B, k, _ = W.shape
    if ties == "davidson":
        theta, lam, conv = fit_davidson(W, T, prior=prior)
        theta[~conv] = np.nan
        return theta, lam
    comp = W + T / 2 if ties == "half" else W
    if prior:
        theta = (fit_davidson(comp, np.zeros_like(comp), prior=prior)[0] if B else np.zeros((0, k)))
    else:
        theta = _fit_bradley_terry_batch(comp, start=start) if B else np.zeros((0, k))
    return theta, np.full(B, np.nan)


def _ranks(theta: np.ndarray) -> np.ndarray:
    """Ranks (1 = strongest; ties share the best rank) per row; NaN rows stay NaN."""
    out = np.full(theta.shape, np.nan)
    ok = np.isfinite(theta).all(-1)
    t = theta[ok]
    out[ok] = 1 + (t[:, None, :] > t[:, :, None]).sum(-1)
    return out


def _check(comparisons: pd.DataFrame, ties: str, n_boot: int, confidence: float, prior: float | None) -> None:
    if prior is not None and not (isinstance(prior, (int, float)) and math.isfinite(prior) and prior > 0):
        raise ParameterError(f"prior must be a positive number, the precision of the N(0, 1/prior) prior on the "
                             f"log-strengths (e.g. 1.0), or None for none; got {prior!r}")
    missing = [c for c in COLUMNS if c not in comparisons.columns]
    if missing:
        raise SchemaError("comparisons", missing[0], [], f"missing column(s) {missing}: build the table with "
                          "rank.comparisons(...) or rank.read_comparisons(...)")
    if ties not in TIES:
        raise ParameterError(f"ties must be one of {list(TIES)}; got {ties!r}")
    if n_boot < 0:
        raise ParameterError(f"n_boot must be 0 or more (0 = no CI); got {n_boot}")
    if not 0 < confidence < 1:
        raise ParameterError(f"confidence must be between 0 and 1, e.g. 0.95; got {confidence}")


@shared_docs
def rank_models(
    comparisons: pd.DataFrame,
    *,
    ties: str = "davidson",
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    prior: float | None = None,
) -> RankResult:
    """Return Bradley-Terry (``ties="half"``/``"exclude"``) or Davidson (``"davidson"``) ratings per judge.

    ``comparisons`` is the tidy table of :func:`medeval_kit.rank.comparisons`. CIs are percentile
    intervals over ``n_boot`` draws of units with replacement, the same draws for every judge; a draw
    whose comparison graph is not strongly connected has no finite MLE and is left out (counted in the
    note). A judge whose own data are not strongly connected gets rows with NaN strengths whose note
    names the models that never win or never lose (:func:`~medeval_kit.rank.graph_problem`).

    ``prior`` (a precision lambda > 0, e.g. 1.0) ranks such judges too: the maximum a-posteriori estimate
    under independent N(0, 1/lambda) priors on the log-strengths, which is finite whatever the graph and
    shrunk toward equal strength. Every judge is then fitted with it; the ``prior`` column, ``ci_method``
    and ``note`` say so (SEs are posterior SDs, from the penalised information).

    Parameters
    ----------
    comparisons : DataFrame
        The tidy comparisons table (:func:`medeval_kit.rank.comparisons`, :data:`COLUMNS`).
    ties : {"davidson", "half", "exclude"}, default "davidson"
        Davidson's tie parameter, half a win each, or ties dropped (:data:`TIES`).
    {n_boot}
    {seed}
    {confidence}
    prior : float, optional
        The precision lambda > 0 of N(0, 1/lambda) priors on the log-strengths; None: maximum likelihood.

    Returns
    -------
    RankResult
        Strengths, ranks and win probabilities per judge; ``to_frame()`` gives the ratings rows.

    Raises
    ------
    SchemaError
        The table lacks a column of :data:`COLUMNS`.
    ParameterError
        ``ties``, ``n_boot``, ``confidence`` or ``prior`` is invalid.

    Examples
    --------
    >>> from medeval_kit import rank
    >>> c = rank.comparisons(rank.demo_comparisons(n_items=60), columns={"item": "case_id",
    ...     "judge": "physician_group", "model_a": "response_a_model", "model_b": "response_b_model",
    ...     "verdict": "winner"})
    >>> res = rank_models(c, n_boot=50)
    >>> res.judges
    ('physicians', 'llm_judge')
    """
    _check(comparisons, ties, n_boot, confidence, prior)
    d = comparisons.reset_index(drop=True)
    models = tuple(sorted(set(d["model_a"]) | set(d["model_b"])))
    judges = tuple(dict.fromkeys(d["judge"].astype(str)))
    units = sorted(set(d["unit"].astype(str)))
    unit_index = {u: i for i, u in enumerate(units)}
    model_index = {m: i for i, m in enumerate(models)}
    K, U = len(models), len(units)
    rows, wp_rows = [], []
    point, draws, judge_units, log_nus, notes = {}, {}, {}, {}, {}
    method = (f"percentile bootstrap over units (B = {n_boot})" + (f", {prior_label(prior)}" if prior else "")
              if n_boot > 0 else "")
    scored, sparse_counts = {}, {}
    for j in judges:
        dj = d[d["judge"].astype(str) == j]
        ok = dj[dj["status"] == "ok"]
        scored[j] = ok[ok["verdict"] != "tie"] if ties == "exclude" else ok
        sparse_counts[j] = _counts(scored[j], unit_index, model_index, U, K)
    # one set of unit draws for every judge (paired), in chunks: counts per draw are (draw x unit) @ (unit x pair)
    boot = {j: (np.zeros((n_boot, K * K)), np.zeros((n_boot, K * K))) for j in judges}
    done = 0
    for Cb, _ in resample_counts(U, n_boot, np.random.default_rng(seed), chunk=_CHUNK):
        for j in judges:
            Fw, Ft = sparse_counts[j]
            boot[j][0][done:done + len(Cb)] = (Fw.T @ Cb.T).T
            boot[j][1][done:done + len(Cb)] = (Ft.T @ Cb.T).T
        done += len(Cb)
    for j in judges:
        dj = d[d["judge"].astype(str) == j]
        ok = scored[j]
        seen = sorted(set(ok["model_a"]) | set(ok["model_b"]), key=model_index.get)
        idx = np.array([model_index[m] for m in seen], dtype=int)
        Fw, Ft = sparse_counts[j]
        W0 = np.asarray(Fw.sum(0)).reshape(K, K)
        T0 = np.asarray(Ft.sum(0)).reshape(K, K)
        theta = np.full(K, np.nan)
        reps = np.full((n_boot, K), np.nan)
        lam0 = np.nan
        lam_reps = np.full(n_boot, np.nan)
        note = ""
        problem = ""
        if len(idx) >= 2:
            sub = np.ix_(idx, idx)
            problem = graph_problem(W0[sub], T0[sub], [models[i] for i in idx])
            t0, l0 = _fit(W0[sub][None], T0[sub][None], ties, prior=prior)
            theta[idx], lam0 = t0[0], float(l0[0])
            if not np.isfinite(t0).all():
                if W0[sub].sum() == 0:
                    why = "no verdict names a winner (only ties)"
                elif problem:
                    why = f"the comparison graph is not strongly connected: {problem}"
                else:
                    why = "the fit did not converge"
                note = f"no ranking: {why}" + ("" if prior or not problem else
                                               ". Maximum likelihood puts such models at +/- infinity; rank with "
                                               "a prior (--prior 1 / prior=1.0) to shrink toward equal strength")
            else:
                if problem:
                    note = (f"the comparison graph is not strongly connected ({problem}): the prior orders what "
                            "the data cannot")
                if n_boot:
                    Wb = boot[j][0].reshape(-1, K, K)[:, idx[:, None], idx[None, :]]
                    Tb = boot[j][1].reshape(-1, K, K)[:, idx[:, None], idx[None, :]]
                    tb, lam_reps = _fit(Wb, Tb, ties, start=t0[0], prior=prior)
                    reps[:, idx] = tb
                    bad = int((~np.isfinite(tb).all(1)).sum())
                    if bad:
                        what = "no finite estimate (no win in the draw)" if prior else "no finite MLE"
                        note = "; ".join(filter(None, [note, f"{bad} of {n_boot} bootstrap draws had {what} "
                                                              "(left out of the CIs)"]))
                if prior:
                    note = "; ".join(filter(None, [note, f"{prior_label(prior)}; se = posterior sd"]))
        else:
            note = "no ranking: fewer than two models with scored comparisons"
        point[j], draws[j], log_nus[j], notes[j] = theta, reps, lam0, note
        judge_units[j] = frozenset(ok["unit"].astype(str))
        se = np.full(K, np.nan)
        if np.isfinite(theta[idx]).all() and len(idx) >= 2:
            sub = np.ix_(idx, idx)
            use_tie = ties == "davidson" and np.isfinite(lam0)
            W_fit = W0[sub] + (T0[sub] / 2 if ties == "half" else 0)
            info = information(theta[idx], W_fit, T0[sub] if use_tie else None, lam0 if use_tie else None)
            if prior:  # the prior's precision on each log-strength: posterior (Laplace) covariance
                info[np.arange(len(idx)), np.arange(len(idx))] += prior
            se[idx] = np.sqrt(np.clip(np.diag(np.linalg.pinv(info))[:len(idx)], 0, None))
        rk = _ranks(theta[idx][None])[0] if len(idx) else np.array([])
        rk_full = np.full(K, np.nan)
        rk_full[idx] = rk
        rk_reps = np.full(reps.shape, np.nan)
        if len(idx):
            rk_reps[:, idx] = _ranks(reps[:, idx])
        n_items = int(ok["item"].nunique())
        n_failed = int(dj.loc[dj["status"] == "failed", "item"].nunique())
        dropped = int(((dj["status"] == "ok") & (dj["verdict"] == "tie")).sum()) if ties == "exclude" else 0
        if dropped:
            note = "; ".join(filter(None, [note, f"{dropped} tie verdict(s) dropped (ties='exclude')"]))
            notes[j] = note
        for m in models:
            k = model_index[m]
            mine = ok[(ok["model_a"] == m) | (ok["model_b"] == m)]
            won = int(((mine["model_a"] == m) & (mine["verdict"] == "A")).sum()
                      + ((mine["model_b"] == m) & (mine["verdict"] == "B")).sum())
            tied = int((mine["verdict"] == "tie").sum())
            extra = {"n_comparisons": len(mine), "wins": won, "losses": len(mine) - won - tied, "ties": tied,
                     "log_nu": lam0, "ties_policy": ties, "prior": float(prior) if prior else math.nan}
            why = note if np.isfinite(theta[k]) or note else "no scored comparisons of this model"
            for metric, est, rep, se_k in (("strength", theta[k], reps[:, k], se[k]),
                                           ("rank", rk_full[k], rk_reps[:, k], np.nan)):
                ci = percentile_interval(rep, confidence=confidence) if np.isfinite(est) else (math.nan, math.nan)
                if metric == "rank":  # whole ranks: the percentile interval widened outwards
                    ci = (math.floor(ci[0]), math.ceil(ci[1])) if np.isfinite(ci[0]) else ci
                rows.append(result_row(est, ci, method if np.isfinite(ci[0]) else "", n_items=n_items,
                                       n_failed=n_failed, note=why, judge=j, model=m, metric=metric, se=se_k,
                                       **extra))
        wp_rows += _win_probability_rows(j, models, theta, lam0, reps, lam_reps, ties, W0, T0, confidence,
                                         method, n_items, n_failed)
    ratings = result_frame(rows, keys=["judge", "model", "metric"])
    wp = result_frame(wp_rows, keys=["judge", "model", "opponent", "metric"])
    return RankResult(ratings=ratings, win_probability=wp, models=models, judges=judges, ties=ties, point=point,
                      draws=draws, units=judge_units, log_nu=log_nus, n_boot=int(n_boot),
                      confidence=confidence, seed=seed, notes=notes, prior=float(prior) if prior else None)


def _win_probability_rows(judge, models, theta, lam0, reps, lam_reps, ties, W0, T0, confidence, method, n_items,
                          n_failed):
    """Rows of the win-probability matrix of one judge (model vs opponent, both estimable)."""
    K = len(models)
    davidson = ties == "davidson"
    p_win, p_tie = outcome_probabilities(theta, lam0 if davidson else None)
    rep_win = outcome_probabilities(reps, lam_reps if davidson else None)[0] if reps.shape[0] else None
    out = []
    for i in range(K):
        for k in range(K):
            if i == k or not (np.isfinite(theta[i]) and np.isfinite(theta[k])):
                continue
            ci = percentile_interval(rep_win[:, i, k], confidence=confidence) if rep_win is not None else (
                math.nan, math.nan)
            pw, pt = float(p_win[i, k]), float(p_tie[i, k])
            out.append(result_row(pw, ci, method if np.isfinite(ci[0]) else "", n_items=n_items, n_failed=n_failed,
                                  judge=judge, model=models[i], opponent=models[k], metric="p_win", p_tie=pt,
                                  p_loss=1 - pw - pt, expected_score=pw + pt / 2,
                                  observed_wins=int(W0[i, k]), observed_losses=int(W0[k, i]),
                                  observed_ties=int(T0[i, k])))
    return out
