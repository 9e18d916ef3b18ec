"""The agreement coefficients, one registered function each (see :mod:`medeval_kit.agreement.registry`).

``labels`` coefficients map a :class:`~medeval_kit.agreement.forms.Table` to values; the engine
computes them on a pair's contingency table or on many raters' per-item counts. Conger's kappa and
the correlations are ``custom``: they build their own per-item features. Krippendorff's alpha lives
in :mod:`~medeval_kit.agreement.alpha`, the intraclass correlations in :mod:`~medeval_kit.agreement.icc`.
"""

from __future__ import annotations

import numpy as np

from medeval_kit.agreement.data import AgreementError, Data, check_overlap, count_matrix
from medeval_kit.agreement.engine import Stat, safe_div
from medeval_kit.agreement.forms import Table, chance_corrected, multi_features
from medeval_kit.agreement.registry import Options, coefficient
from medeval_kit.agreement.weights import agreement_weights, check_marginals
from medeval_kit.stats import fisher_z_interval, normal_interval, wilson_interval

__all__ = ["percent_agreement", "cohen_kappa", "scott_pi", "fleiss_kappa", "conger_kappa", "brennan_prediger",
           "pabak", "gwet_ac1", "gwet_ac2", "accuracy", "macro_f1", "pearson", "spearman", "kendall",
           "conger_stat", "category_kappa_stats"]


# --------------------------------------------------------------------------- analytic intervals


def _wilson(w: np.ndarray, K: int):
    """Wilson score interval of an unweighted share (None for weighted agreement)."""
    if not np.array_equal(w, np.eye(K)):
        return None

    def ci(S, est, confidence):
        n = float(S.sum())
        lo, hi = wilson_interval(est * n, n, confidence=confidence)
        return lo, hi, "analytic (Wilson score interval)"

    return ci


def _fleiss_cohen_everitt(w: np.ndarray, K: int):
    """Normal interval from the Fleiss, Cohen & Everitt (1969) large-sample SE of (weighted) kappa."""
    method = "analytic SE (Fleiss, Cohen & Everitt 1969), normal interval"

    def ci(S, est, confidence):
        T = S.reshape(K, K)
        n = T.sum()
        P = T / n
        r, c = P.sum(1), P.sum(0)
        pe = r @ w @ c
        if not np.isfinite(est) or abs(1 - pe) < 1e-12:
            return np.nan, np.nan, method
        wi, wj = w @ c, r @ w  # w-bar_i. and w-bar_.j
        term = (P * (w - (wi[:, None] + wj[None, :]) * (1 - est)) ** 2).sum()
        se = float(np.sqrt(max((term - (est - pe * (1 - est)) ** 2) / (n * (1 - pe) ** 2), 0.0)))
        return (*normal_interval(est, se, confidence=confidence), method)

    return ci


# --------------------------------------------------------------------------- label coefficients


@coefficient(label="percent agreement", analytic=_wilson)
def percent_agreement(t: Table) -> np.ndarray:
    """Share of identical labels (mean pairwise share for >2 raters)."""
    return t.po


@coefficient(label="Cohen's κ", more_raters="light", analytic=_fleiss_cohen_everitt,
             many_note="Light's kappa (mean of {pairs} pairwise Cohen kappas)")
def cohen_kappa(t: Table) -> np.ndarray:
    """Cohen's kappa; ``weights='linear'|'quadratic'|matrix`` for weighted kappa (distances between category
    values for numeric labels, else positions as sklearn: see ``weight_basis``). >2 raters: Light's kappa."""
    return chance_corrected(t.po, np.einsum("kl,mk,ml->m", t.w, t.rows, t.cols))


def _fleiss_chance(t: Table) -> np.ndarray:
    p = t.fleiss_shares()
    return np.einsum("kl,mk,ml->m", t.w, p, p)


@coefficient(label="Scott's π", fleiss_marginals=True, many_note="many-rater form (Fleiss kappa)")
def scott_pi(t: Table) -> np.ndarray:
    """Scott's pi (pooled marginals); Fleiss' kappa for >2 raters (``fleiss_marginals`` applies)."""
    return chance_corrected(t.po, _fleiss_chance(t))


@coefficient(label="Fleiss' κ", two_raters="multi", fleiss_marginals=True)
def fleiss_kappa(t: Table) -> np.ndarray:
    """Fleiss' (1971) kappa; observed agreement over items with two or more labels. With unequal labels per
    item the chance term uses per-item category shares (Gwet 2014; irrCAC) unless ``fleiss_marginals='pooled'``."""
    return chance_corrected(t.po, _fleiss_chance(t))


def _uniform_chance(t: Table) -> np.ndarray:
    return np.full(len(t.po), t.w.sum() / t.K**2)


@coefficient(label="Brennan–Prediger")
def brennan_prediger(t: Table) -> np.ndarray:
    """Brennan-Prediger coefficient: chance agreement 1/K."""
    return chance_corrected(t.po, _uniform_chance(t))


@coefficient(label="PABAK")
def pabak(t: Table) -> np.ndarray:
    """Prevalence- and bias-adjusted kappa, (K*PA - 1)/(K - 1); 2*PA - 1 for two categories."""
    return chance_corrected(t.po, _uniform_chance(t))


def _gwet_chance(t: Table) -> np.ndarray:
    if t.K < 2:
        return np.full(len(t.po), np.nan)
    pi = t.shares
    return t.w.sum() / (t.K * (t.K - 1)) * (pi * (1 - pi)).sum(1)


@coefficient(label="Gwet's AC1")
def gwet_ac1(t: Table) -> np.ndarray:
    """Gwet's AC1 (nominal)."""
    return chance_corrected(t.po, _gwet_chance(t))


@coefficient(label="Gwet's AC2", default_weights="quadratic")
def gwet_ac2(t: Table) -> np.ndarray:
    """Gwet's AC2 (weighted AC; quadratic weights unless ``weights`` says otherwise)."""
    return chance_corrected(t.po, _gwet_chance(t))


@coefficient(label="accuracy", reference=True, analytic=_wilson)
def accuracy(t: Table) -> np.ndarray:
    """Accuracy of ``raters[1]`` against the reference ``raters[0]``."""
    return t.po


@coefficient(label="macro-F1", reference=True)
def macro_f1(t: Table) -> np.ndarray:
    """Macro-F1 of ``raters[1]`` against the reference ``raters[0]`` (classes present)."""
    tp = np.einsum("mkk->mk", t.joint)
    f1 = safe_div(2 * tp, t.rows + t.cols)  # rows: reference marginals, cols: rater marginals
    present = (t.rows + t.cols) > 0
    return np.nansum(np.where(present, f1, 0), 1) / np.maximum(present.sum(1), 1)


# --------------------------------------------------------------------------- Conger's kappa


def conger_stat(codes: np.ndarray, K: int, weights=None) -> Stat:
    """Conger's (1980) kappa: many-rater kappa with rater-specific marginals (irrCAC ``conger.kappa.raw``).

    Observed agreement as in the many-rater form. Chance agreement (Gwet 2014; irrCAC source):
    with p_gk = n_gk / n_g the share of rater g's labels in category k (n_g = items rater g
    labelled) and r raters, pe = sum_kl w_kl (pbar_k pbar_l - s2_kl / r),
    s2_kl = (sum_g p_gk p_gl - r pbar_k pbar_l) / (r - 1); equivalently the mean over ordered
    rater pairs g != h of sum_kl w_kl p_gk p_hl. Two raters and complete data give Cohen's kappa.
    Raters without a label in a (re)sample are left out of r.
    """
    n, R = codes.shape
    w = agreement_weights(K, weights)
    base = multi_features(codes, K, w)
    onehot = np.zeros((n, R, K))
    ii, gg = np.nonzero(codes >= 0)
    onehot[ii, gg, codes[ii, gg]] = 1.0
    F = np.column_stack([base[:, :2], onehot.reshape(n, R * K), (codes >= 0).astype(float)])

    def fn(S):
        pa = safe_div(S[:, 0], S[:, 1])
        C = S[:, 2 : 2 + R * K].reshape(len(S), R, K)
        ng = S[:, 2 + R * K :]
        present = ng > 0
        p = np.where(present[:, :, None], C / np.where(present, ng, 1)[:, :, None], 0.0)
        r = present.sum(1).astype(float)
        P = p.sum(1)  # r * pbar_k
        pairs = np.einsum("kl,mk,ml->m", w, P, P) - np.einsum("kl,mgk,mgl->m", w, p, p)
        return chance_corrected(pa, safe_div(pairs, r * (r - 1)))

    return Stat(F, fn, int(base[:, 1].sum()))


@coefficient(label="Conger's κ", family="custom", weighted=True)
def conger_kappa(data: Data, opts: Options) -> tuple[Stat, str]:
    """Conger's (1980) kappa: many-rater kappa with each rater's own marginals (irrCAC ``conger.kappa.raw``);
    Cohen's kappa for two raters with complete data. Weights as in :func:`agreement`."""
    if len(data.raters) < 2:
        raise AgreementError(f"conger_kappa needs at least two raters; got {data.raters}")
    return conger_stat(data.codes, data.K, opts.weights), ""


# --------------------------------------------------------------------------- Fleiss' per-category kappa


def category_kappa_stats(codes: np.ndarray, K: int, marginals: str = "per_item") -> list[Stat]:
    """Fleiss' (1971) per-category kappa_j as one :class:`Stat` per category.

    Fleiss' kappa_j = 1 - sum_i x_ij (m - x_ij) / (N m (m - 1) p_j q_j) is Fleiss' kappa of the
    data collapsed to "category j" versus "any other category". That reading carries over to
    unequal numbers of labels per item: observed agreement is the mean over items with r_i >= 2 of
    [n_ij (n_ij - 1) + (r_i - n_ij)(r_i - n_ij - 1)] / (r_i (r_i - 1)); the share p_j follows
    ``marginals`` as in the many-rater form, and chance agreement is p_j^2 + q_j^2.
    """
    check_marginals(marginals)
    N = count_matrix(codes, K)
    r = N.sum(1)
    v = (r >= 2).astype(float)
    h = (r >= 1).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        den = np.where(r >= 2, r * (r - 1), 1.0)[:, None]
        agree = np.where(v[:, None] > 0, (N * (N - 1) + (r[:, None] - N) * (r[:, None] - N - 1)) / den, 0.0)
        share = np.where(h[:, None] > 0, N / np.where(r == 0, 1, r)[:, None], 0.0)

    def fn(S):
        pa = safe_div(S[:, 0], S[:, 1])
        p = safe_div(S[:, 2], S[:, 3])
        return chance_corrected(pa, p**2 + (1 - p) ** 2)

    if marginals == "pooled":
        return [Stat(np.column_stack([agree[:, j], v, N[:, j] * v, r * v]), fn, int(v.sum())) for j in range(K)]
    return [Stat(np.column_stack([agree[:, j], v, share[:, j], h]), fn, int(v.sum())) for j in range(K)]


# --------------------------------------------------------------------------- correlations


def _fisher(variance: float, k: int):
    """Fisher-z interval with SE sqrt(variance / (n - k)) (:func:`medeval_kit.stats.fisher_z_interval`)."""

    def ci(S, est, confidence):
        lo, hi = fisher_z_interval(est, int(S[0, 0]), confidence=confidence, variance=variance, k=k)
        return lo, hi, "analytic (Fisher z)"

    return ci


def _two_numbers(data: Data, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ok, x, y): the two raters' numbers where both labelled; AgreementError unless exactly two raters."""
    if len(data.raters) != 2:
        raise AgreementError(f"{name} needs exactly two raters; got {data.raters}")
    check_overlap(data, *data.raters)
    vals = data.numbers()
    x, y = vals[:, 0], vals[:, 1]
    ok = np.isfinite(x) & np.isfinite(y)
    return ok, np.where(ok, x, 0.0), np.where(ok, y, 0.0)


@coefficient(label="Pearson's r", family="custom", level="interval")
def pearson(data: Data, opts: Options) -> tuple[Stat, str]:
    """Pearson correlation of two raters' numeric labels (Fisher z when analytic)."""
    ok, x, y = _two_numbers(data, "pearson")
    F = np.column_stack([ok, x, y, x**2, y**2, x * y]).astype(float)

    def fn(S):
        n, sx, sy, sxx, syy, sxy = S.T
        cov = sxy - sx * sy / n
        return safe_div(cov, np.sqrt(np.maximum(sxx - sx**2 / n, 0) * np.maximum(syy - sy**2 / n, 0)))

    return Stat(F, fn, int(ok.sum()), analytic=_fisher(1.0, 3)), ""


def _rank(kind: str, data: Data, variance: float, k: int) -> tuple[Stat, str]:
    ok, x, y = _two_numbers(data, kind)
    F = np.column_stack([ok, x, y]).astype(float)
    return Stat(F, None, int(ok.sum()), analytic=_fisher(variance, k), rank=kind), ""


@coefficient(label="Spearman's ρ", family="custom", level="interval")
def spearman(data: Data, opts: Options) -> tuple[Stat, str]:
    """Spearman correlation of two raters' labels (bootstrap loops over resamples)."""
    return _rank("spearman", data, 1.06, 3)


@coefficient(label="Kendall's τ", family="custom", level="interval")
def kendall(data: Data, opts: Options) -> tuple[Stat, str]:
    """Kendall's tau-b of two raters' labels (bootstrap loops over resamples)."""
    return _rank("kendall", data, 0.437, 4)
