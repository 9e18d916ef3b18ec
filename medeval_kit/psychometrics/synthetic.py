"""Synthetic exams with planted item parameters, and how well a fit recovers them.

:func:`synthetic_exam` draws examinee abilities theta ~ N(0, 1) and answers from a 2PL model with
planted discrimination ``a`` and difficulty ``b``; a wrong answer picks a distractor. Some items get a
planted non-functional distractor (chosen by about 1 % of examinees), some a planted miskey (the
recorded key is a distractor; the strong examinees choose the true answer, so the upper group rejects
the key), and a share of answers can be made missing (``parse_status = "failed"``). The ``truth``
table holds every planted value, so a test can check that the CTT flags and the IRT fits find them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit

from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import ParameterError
from medeval_kit.results import result_frame, result_row
from medeval_kit.stats import fisher_z_interval, mean_interval, wilson_interval

__all__ = ["SyntheticExam", "synthetic_exam", "recovery_table", "recovery"]

_LETTERS = "ABCDEFGHIJ"


@dataclass(frozen=True)
class SyntheticExam:
    """A simulated exam (:func:`synthetic_exam`) with everything that was planted.

    Attributes
    ----------
    responses : DataFrame
        The scored ``responses`` table with choices and ``offered``.
    truth : DataFrame
        One row per item: planted ``a``, ``b``, ``answer``, recorded ``key``, ``miskeyed``,
        ``nonfunctional`` (the planted non-functional distractor's letter, "" if none).
    theta : DataFrame
        ``examinee, theta``: the planted abilities.
    """

    responses: pd.DataFrame
    truth: pd.DataFrame
    theta: pd.DataFrame

    def summary(self) -> str:
        """Return a one-line description.

        Returns
        -------
        str
            Items, examinees, planted ranges, planted flaws and missing answers.
        """
        t = self.truth
        return (f"{len(t)} items x {len(self.theta)} examinees; a in [{t['a'].min():.2f}, {t['a'].max():.2f}], "
                f"b in [{t['b'].min():.2f}, {t['b'].max():.2f}]; {int(t['nonfunctional'].str.len().gt(0).sum())} "
                f"items with a planted non-functional distractor, {int(t['miskeyed'].sum())} miskeyed; "
                f"{int((self.responses['parse_status'] != 'ok').sum())} missing answers")


def synthetic_exam(n_items: int = 30, n_examinees: int = 500, *, n_options: int = 5,
                   a_range: tuple[float, float] = (0.5, 2.0), b_range: tuple[float, float] = (-2.0, 2.0),
                   nonfunctional_items: float = 0.3, nonfunctional_rate: float = 0.01, n_miskeyed: int = 0,
                   missing_rate: float = 0.0, seed: int = 0) -> SyntheticExam:
    """Return a simulated exam from a 2PL model with planted a ~ U(a_range), b ~ U(b_range) (see module doc).

    ``nonfunctional_items``: share of items with one distractor chosen with probability
    ``nonfunctional_rate``; ``n_miskeyed``: items whose recorded key is a distractor; ``missing_rate``:
    share of answers replaced by a failed parse.

    Parameters
    ----------
    n_items : int
        Items of the exam.
    n_examinees : int
        Examinees.
    n_options : int
        Options per item (2 to 10).
    a_range : tuple of float
        The planted discriminations' uniform range.
    b_range : tuple of float
        The planted difficulties' uniform range.
    nonfunctional_items : float
        Share of items with a planted non-functional distractor.
    nonfunctional_rate : float
        How often a non-functional distractor is chosen.
    n_miskeyed : int
        Items whose recorded key is a distractor.
    missing_rate : float
        Share of answers made missing (``parse_status = "failed"``).
    seed : int
        Random seed.

    Returns
    -------
    SyntheticExam
        The responses, the planted truth and the abilities.

    Raises
    ------
    ParameterError
        ``n_options`` out of range, or fewer than 2 items or examinees.

    Examples
    --------
    >>> exam = synthetic_exam(4, 50, n_miskeyed=1, seed=0)
    >>> len(exam.responses), int(exam.truth["miskeyed"].sum())
    (200, 1)
    """
    if not 2 <= n_options <= len(_LETTERS):
        raise ParameterError(f"n_options must be in [2, {len(_LETTERS)}], not {n_options}")
    if n_items < 2 or n_examinees < 2:
        raise ParameterError("a synthetic exam needs at least 2 items and 2 examinees")
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(n_examinees)
    a = rng.uniform(*a_range, n_items)
    b = rng.uniform(*b_range, n_items)
    letters = list(_LETTERS[:n_options])
    answer = rng.choice(letters, n_items)
    nf_items = rng.random(n_items) < nonfunctional_items
    miskeyed = np.zeros(n_items, bool)
    if n_miskeyed:
        miskeyed[rng.choice(n_items, int(n_miskeyed), replace=False)] = True
    rows, truth = [], []
    examinees = [f"e{i:04d}" for i in range(n_examinees)]
    p_right = expit(a[None, :] * (theta[:, None] - b[None, :]))
    right = rng.random(p_right.shape) < p_right
    for j in range(n_items):
        item = f"q{j + 1:03d}"
        others = [x for x in letters if x != answer[j]]
        nf = str(rng.choice(others)) if nf_items[j] else ""
        functional = [x for x in others if x != nf]
        weights = rng.dirichlet(np.full(len(functional), 2.0))
        key = answer[j]
        if miskeyed[j]:
            key = str(rng.choice(functional))
        wrong_pick = rng.choice(functional, n_examinees, p=weights)
        if nf:
            wrong_pick = np.where(rng.random(n_examinees) < nonfunctional_rate / max(1e-9, 1 - p_right[:, j].mean()),
                                  nf, wrong_pick)
        choice = np.where(right[:, j], answer[j], wrong_pick)
        missing = rng.random(n_examinees) < missing_rate
        for i, ex in enumerate(examinees):
            c = None if missing[i] else str(choice[i])
            rows.append({"item": item, "examinee": ex, "choice": c, "key": key,
                         "correct": pd.NA if c is None else int(c == key),
                         "parse_status": "failed" if c is None else "ok", "offered": "".join(letters)})
        truth.append({"item": item, "a": float(a[j]), "b": float(b[j]), "answer": str(answer[j]), "key": key,
                      "miskeyed": bool(miskeyed[j]), "nonfunctional": nf})
    resp = pd.DataFrame(rows)
    resp["correct"] = resp["correct"].astype("Int64")
    return SyntheticExam(responses=resp, truth=pd.DataFrame(truth),
                         theta=pd.DataFrame({"examinee": examinees, "theta": theta}))


def recovery_table(fit, truth: pd.DataFrame) -> pd.DataFrame:
    """Return per item and parameter the planted value, the estimate, its CI and whether the CI covers the truth.

    Miskeyed items (``truth["miskeyed"]``) are left out: scored against a wrong key they follow no 2PL curve.

    Parameters
    ----------
    fit : IRTFit
        The fit (:func:`medeval_kit.psychometrics.fit_irt`).
    truth : DataFrame
        The planted values (:attr:`SyntheticExam.truth`).

    Returns
    -------
    DataFrame
        ``item, parameter, planted``, the contract columns (``estimate`` the fitted value), ``se`` and
        ``covered`` (NA without an interval).
    """
    p = fit.to_frame()
    if "miskeyed" in truth.columns:
        truth = truth[~truth["miskeyed"].astype(bool)]
    t = truth.melt(id_vars="item", value_vars=["a", "b"], var_name="parameter", value_name="planted")
    d = p.merge(t, on=["item", "parameter"], how="inner")
    d["covered"] = [pd.NA if not (np.isfinite(lo) and np.isfinite(hi)) else bool(lo <= v <= hi)
                    for lo, hi, v in zip(d["ci_low"], d["ci_high"], d["planted"])]
    return d[["item", "parameter", "planted", "estimate", "ci_low", "ci_high", "ci_method", "n_items", "n_failed",
              "note", "se", "covered"]]


@shared_docs
def recovery(fit, truth: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Return per parameter: CI coverage of the planted values, correlation, bias and RMSE (contract rows).

    ``coverage`` (Wilson CI over items) is the share of items whose interval holds the planted value
    (nominal: ``confidence``); ``correlation`` is Pearson's r of estimates with planted values (Fisher z);
    ``bias`` the mean error (t interval); ``rmse`` has no interval. Items without an interval count in
    ``n_failed``. For a 1PL fit, ``a`` is compared with the mean planted a.

    Parameters
    ----------
    fit : IRTFit
        The fit (:func:`medeval_kit.psychometrics.fit_irt`).
    truth : DataFrame
        The planted values (:attr:`SyntheticExam.truth`).
    {confidence}

    Returns
    -------
    DataFrame
        Contract rows keyed ``parameter, metric`` (``coverage``, ``correlation``, ``bias``, ``rmse``).
    """
    d = recovery_table(fit, truth)
    rows = []
    for name, g in d.groupby("parameter", sort=True):
        est, tru = g["estimate"].to_numpy(float), g["planted"].to_numpy(float)
        ok = np.isfinite(est)
        cov = g["covered"].dropna().astype(bool)
        n_ci = len(cov)
        rows.append(result_row(cov.mean() if n_ci else math.nan,
                               wilson_interval(float(cov.sum()), n_ci, confidence=confidence) if n_ci
                               else (math.nan, math.nan), "Wilson" if n_ci else "", n_items=n_ci,
                               n_failed=len(g) - n_ci, note=f"nominal {confidence:g}", parameter=name,
                               metric="coverage"))
        e, t = est[ok], tru[ok]
        if fit.family != "2pl" and name == "a":
            t = np.full_like(t, tru.mean())
        r = float(np.corrcoef(e, t)[0, 1]) if len(e) >= 3 and np.ptp(e) > 0 and np.ptp(t) > 0 else math.nan
        rows.append(result_row(r, fisher_z_interval(r, len(e), confidence=confidence), "Fisher z" if np.isfinite(r)
                               else "", n_items=len(e), n_failed=int((~ok).sum()),
                               note="" if np.isfinite(r) else "undefined (constant estimates or planted values)",
                               parameter=name, metric="correlation"))
        err = e - t
        lo, hi, method, note = mean_interval(err, confidence=confidence, method="t")
        rows.append(result_row(err.mean() if len(err) else math.nan, (lo, hi), method, n_items=len(err),
                               n_failed=int((~ok).sum()), note=note, parameter=name, metric="bias"))
        rows.append(result_row(math.sqrt(np.mean(err ** 2)) if len(err) else math.nan, n_items=len(err),
                               n_failed=int((~ok).sum()), parameter=name, metric="rmse"))
    return result_frame(rows, keys=["parameter", "metric"])
