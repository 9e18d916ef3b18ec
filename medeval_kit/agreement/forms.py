"""The two forms of a ``labels`` coefficient: a pair's contingency table and many raters' per-item counts.

Both reduce the summed per-item features of ``m`` (re)samples to one :class:`Table`, and the
registered function maps that table to ``m`` values. With missing labels the many-rater form
follows Gwet (2014, Handbook of Inter-Rater Reliability) as implemented in R's irrCAC; weights are
Cohen's (1968) agreement weights on category values or positions.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from medeval_kit.agreement import registry
from medeval_kit.agreement.data import AgreementError, Data, check_overlap, count_matrix
from medeval_kit.agreement.engine import Stat, compact, mean_stat, safe_div, shrinks
from medeval_kit.agreement.registry import Coefficient
from medeval_kit.agreement.weights import agreement_weights, check_marginals

__all__ = ["Table", "chance_corrected", "pair_features", "pair_stat", "multi_features", "multi_stat", "label_stat"]


@dataclass(frozen=True)
class Table:
    """Summed agreement counts of ``m`` (re)samples: what a ``labels`` coefficient is computed from.

    ``po`` (m,) weighted observed agreement; ``shares`` (m, K) category shares (a pair: the mean of
    the two raters' marginals; many raters: per-item shares averaged over items, Gwet 2014);
    ``pooled`` (m, K) shares from counts pooled over items with >= 2 labels (a pair: = ``shares``);
    ``w`` the K x K agreement weights; ``marginals`` the Fleiss convention asked for. The pair form
    also has ``joint`` (m, K, K) proportions (reference rows, rater columns), ``rows`` and ``cols``.
    """

    po: np.ndarray
    shares: np.ndarray
    pooled: np.ndarray
    w: np.ndarray
    marginals: str = "per_item"
    pair: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # (joint, rows, cols) of the pair form

    @property
    def K(self) -> int:
        """The number of categories."""
        return len(self.w)

    def _pair(self, i: int) -> np.ndarray:
        if self.pair is None:
            raise AgreementError("this coefficient needs a pair's contingency table, which many raters do not have: "
                                 "register it with more_raters='light' (mean over rater pairs) or None")
        return self.pair[i]

    @property
    def joint(self) -> np.ndarray:
        """(m, K, K) joint proportions of a pair (reference rows, rater columns)."""
        return self._pair(0)

    @property
    def rows(self) -> np.ndarray:
        """(m, K) marginals of the first (reference) rater."""
        return self._pair(1)

    @property
    def cols(self) -> np.ndarray:
        """(m, K) marginals of the second rater."""
        return self._pair(2)

    def fleiss_shares(self) -> np.ndarray:
        """The category shares of Fleiss' chance term under ``marginals``."""
        return self.pooled if self.marginals == "pooled" else self.shares


def chance_corrected(po: np.ndarray, pe) -> np.ndarray:
    """(po - pe) / (1 - pe), NaN where pe = 1."""
    return safe_div(po - pe, 1 - pe)


# --------------------------------------------------------------------------- two raters


def pair_features(a: np.ndarray, b: np.ndarray, K: int) -> tuple[np.ndarray, int]:
    """One-hot contingency cell per item (zeros where either label is missing)."""
    ok = (a >= 0) & (b >= 0)
    F = np.zeros((len(a), K * K))
    F[np.flatnonzero(ok), (a * K + b)[ok]] = 1.0
    return F, int(ok.sum())


def _pair_table(S: np.ndarray, w: np.ndarray) -> Table:
    K = len(w)
    T = S.reshape(len(S), K, K)
    n = T.sum((1, 2))
    P = T / np.where(n == 0, np.nan, n)[:, None, None]
    r, c = P.sum(2), P.sum(1)
    m = (r + c) / 2
    return Table(po=(P * w).sum((1, 2)), shares=m, pooled=m, w=w, pair=(P, r, c))


def pair_stat(coef: Coefficient | str, a, b, K: int, weights=None) -> Stat:
    """Two-rater coefficient ``coef`` on code vectors ``a`` (reference) and ``b``."""
    coef = registry.get(coef) if isinstance(coef, str) else coef
    if not coef.pairwise:
        raise AgreementError(f"{coef.name} is not a two-rater label coefficient; choose one of "
                             f"{registry.names(pairwise=True)}")
    F, n = pair_features(a, b, K)
    w = agreement_weights(K, weights)
    analytic = coef.analytic(w, K) if coef.analytic else None
    return Stat(F, lambda S: coef.fn(_pair_table(S, w)), n, analytic=analytic)


# --------------------------------------------------------------------------- many raters


def multi_features(codes: np.ndarray, K: int, w: np.ndarray) -> np.ndarray:
    """Per-item features of the many-rater form (missing labels allowed).

    Columns: [P_i v, v, N v (K), r v, share h (K), h] with N the per-item counts, r_i their sum,
    v = [r_i >= 2], h = [r_i >= 1], share = N / r and P_i = sum_k n_ik (r*_ik - 1) / (r_i (r_i - 1)),
    r*_ik = sum_l w_kl n_il (Fleiss 1971 for complete data; Gwet 2014 and irrCAC with missing labels).
    """
    N = count_matrix(codes, K)
    r = N.sum(1)
    v = (r >= 2).astype(float)
    Nw = N @ w.T
    with np.errstate(invalid="ignore", divide="ignore"):
        Pi = np.where(r >= 2, (N * (Nw - 1)).sum(1) / (r * (r - 1)), 0.0)
        share = np.where((r >= 1)[:, None], N / np.where(r == 0, 1, r)[:, None], 0.0)
    h = (r >= 1).astype(float)
    return np.column_stack([Pi * v, v, N * v[:, None], r * v, share * h[:, None], h])


def _multi_table(S: np.ndarray, w: np.ndarray, marginals: str) -> Table:
    K = len(w)
    return Table(po=safe_div(S[:, 0], S[:, 1]), shares=S[:, 3 + K : 3 + 2 * K] / S[:, [3 + 2 * K]],
                 pooled=S[:, 2 : 2 + K] / S[:, 2 + K : 3 + K], w=w, marginals=marginals)


def multi_stat(coef: Coefficient | str, codes: np.ndarray, K: int, weights=None, marginals: str = "per_item") -> Stat:
    """Many-rater form of ``coef`` from per-item counts (see :func:`multi_features`).

    Fleiss' chance term takes its category shares from ``marginals``: ``"per_item"`` (default;
    Gwet 2014 and R's irrCAC ``fleiss.kappa.raw``): pi_k = (1/n) sum_i n_ik / r_i over the n items
    with at least one label; ``"pooled"``: pi_k = sum_i n_ik / sum_i r_i over items with r_i >= 2.
    With the same number of labels on every item both equal Fleiss (1971).
    """
    coef = registry.get(coef) if isinstance(coef, str) else coef
    check_marginals(marginals)
    w = agreement_weights(K, weights)
    F = multi_features(codes, K, w)
    return Stat(F, lambda S: coef.fn(_multi_table(S, w, marginals)), int(F[:, 1].sum()))


# --------------------------------------------------------------------------- dispatch


def label_stat(coef: Coefficient, data: Data, w: np.ndarray | None, wnote: str, marginals: str) -> tuple[Stat, str]:
    """The statistic of a ``labels`` coefficient on every rater of ``data`` and its note."""
    R = len(data.raters)
    if R < 2:
        raise AgreementError(f"{coef.name} needs at least two raters; got {data.raters}")
    form = coef.two_raters if R == 2 else coef.more_raters
    if form is None:
        if coef.reference:
            raise AgreementError(f"{coef.name} compares one rater with a reference: pass raters=[reference, rater]")
        raise AgreementError(f"{coef.name} needs exactly two raters; got {data.raters}")
    notes = [wnote] if wnote else []
    if R > 2 and coef.two_raters == "pair":
        n_pairs = R * (R - 1) // 2
        default = "many-rater form" if form == "multi" else "mean of {pairs} pairwise values"
        notes.insert(0, f"{R} raters: " + (coef.many_note or default).format(pairs=n_pairs))
    groups = data.row_groups()  # items with the same labels share features: keep the distinct rows only
    if form == "pair":
        check_overlap(data, *data.raters)
        return compact(pair_stat(coef, data.codes[:, 0], data.codes[:, 1], data.K, w), *groups), "; ".join(notes)
    if form == "light":
        pairs = list(itertools.combinations(range(R), 2))
        for i, j in pairs:
            check_overlap(data, data.raters[i], data.raters[j])
        n_items = int(((data.codes >= 0).sum(1) >= 2).sum())
        if not shrinks(*groups):
            sts = [pair_stat(coef, data.codes[:, i], data.codes[:, j], data.K, w) for i, j in pairs]
            return mean_stat(sts, n_items), "; ".join(notes)
        rows = data.codes[groups[1]]  # a pair's features are a function of its two labels: build them once per row
        sts = [pair_stat(coef, rows[:, i], rows[:, j], data.K, w) for i, j in pairs]
        return replace(mean_stat(sts, n_items), groups=groups[0]), "; ".join(notes)
    if coef.fleiss_marginals:
        notes += _marginals_note(data, marginals)
    return compact(multi_stat(coef, data.codes, data.K, w, marginals), *groups), "; ".join(notes)


def _marginals_note(data: Data, fleiss_marginals: str) -> list[str]:
    """Say which chance term Fleiss' kappa used when the number of labels varies across items."""
    r = (data.codes >= 0).sum(1)
    r = r[r >= 1]
    if len(r) == 0 or r.min() == r.max():
        return []
    if fleiss_marginals == "pooled":
        return ["unequal labels per item: chance term from category counts pooled over items with >= 2 labels"]
    return ["unequal labels per item: chance term from per-item category shares (Gwet 2014; irrCAC)"]
