"""Private engine of :mod:`medeval_kit.agreement`: input checks and the item-bootstrap.

Every coefficient here is a smooth function of *sums over items* of per-item features
(contingency cells, count vectors, coincidence matrices, ANOVA sums). A statistic is therefore
a pair ``(F, fn)``: ``F`` is an ``(n_items, p)`` feature matrix and ``fn`` maps summed features
``S`` (shape ``(m, p)``) to ``m`` values. Then

* the point estimate is ``fn(F.sum(0))``;
* bootstrap replicates that resample items are ``fn(W @ F)``, with ``W`` the ``(B, n)`` matrix of
  how often each item was drawn (one matrix product, no Python loop over resamples);
* jackknife (leave-one-item-out) replicates for BCa are ``fn(F.sum(0) - F)``.

Several statistics built on the same item axis share ``W``, which gives paired bootstraps for
differences (judge minus ceiling) for free.

Krippendorff's alpha is written from its published definition (Krippendorff 2011, "Computing
Krippendorff's alpha-reliability", coincidence matrices); the GPL ``krippendorff`` package is
used only as a test oracle. With missing labels, Fleiss' kappa, Conger's kappa, AC1/AC2 and
Brennan-Prediger follow Gwet (2014, Handbook of Inter-Rater Reliability) as implemented in R's
irrCAC; weights are Cohen's (1968) agreement weights on category values or positions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from medeval_kit.errors import MedevalError, SchemaError

LEVELS = ("nominal", "ordinal", "interval", "ratio")
MAX_CATEGORIES = 200
"""More distinct labels than this at a nominal or ordinal level is refused (see :func:`prepare`)."""


class AgreementError(MedevalError, ValueError):
    """Agreement input that cannot be analysed (no overlap, unknown rater, bad parameter)."""


# --------------------------------------------------------------------------- input


@dataclass
class Data:
    """Labels as an item x rater code matrix (-1 = missing)."""

    codes: np.ndarray
    items: np.ndarray
    raters: list
    categories: list
    level: str
    n_missing: int
    values: np.ndarray | None = None  # numeric value of each category (interval/ratio/ordinal)

    @property
    def K(self) -> int:
        return len(self.categories)

    def col(self, rater) -> np.ndarray:
        return self.codes[:, self.raters.index(rater)]


def infer_categories(s: pd.Series, categories, level: str, label: str, source=None) -> list:
    """Return the ordered category list; raise SchemaError for out-of-order ordinal levels."""
    dtype = s.dtype
    is_cat = isinstance(dtype, pd.CategoricalDtype)
    if categories is not None:
        cats = list(categories)
        if len(set(map(repr, cats))) != len(cats):
            raise SchemaError("annotations", label, [], f"declared categories contain duplicates: {cats}", source)
        if level in ("ordinal", "interval", "ratio"):
            if is_cat and dtype.ordered:
                order = [c for c in dtype.categories if c in cats]
                if order != [c for c in cats if c in set(dtype.categories)]:
                    raise SchemaError(
                        "annotations", label, [],
                        f"ordinal levels out of order: declared {cats} but the ordered Categorical says "
                        f"{list(dtype.categories)}; pass the categories in one consistent order", source,
                    )
            num = pd.to_numeric(pd.Series(cats), errors="coerce")
            if num.notna().all() and not num.is_monotonic_increasing:
                bad = int(np.flatnonzero(np.diff(num.to_numpy()) <= 0)[0]) + 1
                raise SchemaError(
                    "annotations", label, [],
                    f"ordinal levels out of order: declared categories {cats} are not increasing "
                    f"(position {bad}: {cats[bad]!r} after {cats[bad - 1]!r}); list them low to high", source,
                )
        return cats
    present = s.dropna()
    if is_cat:
        cats = [c for c in dtype.categories]
        if level == "ordinal" and not dtype.ordered and not _numeric(cats):
            raise SchemaError(
                "annotations", label, [],
                "level='ordinal' needs an order: pass categories=[low, ..., high] or an ordered Categorical", source,
            )
        return cats
    uniq = pd.unique(present)
    if _numeric(uniq):
        return sorted(uniq.tolist())
    if level != "nominal":
        raise SchemaError(
            "annotations", label, [],
            f"level={level!r} needs ordered or numeric labels; got text labels {sorted(map(str, uniq))[:6]}. "
            "Pass categories=[low, ..., high] in order.", source,
        )
    return sorted(uniq.tolist(), key=str)


def _numeric(vals) -> bool:
    vals = list(vals)
    return len(vals) > 0 and all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) for v in vals
    )


def prepare(
    df: pd.DataFrame,
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    raters: Sequence | None = None,
    categories: Sequence | None = None,
    level: str = "nominal",
    source: str | None = None,
    criterion: str | None = "criterion",
) -> Data:
    """Check a long annotations table and return its :class:`Data` code matrix."""
    if level not in LEVELS:
        raise AgreementError(f"level must be one of {LEVELS}; not {level!r}.")
    if not isinstance(df, pd.DataFrame):
        raise SchemaError("annotations", None, [], f"expected a DataFrame, got {type(df).__name__}", source)
    for c in (item, rater, label):
        if c not in df.columns:
            raise SchemaError("annotations", c, [], f"column {c!r} not found; present: {list(df.columns)}", source)
    if criterion and criterion in df.columns and df[criterion].nunique(dropna=True) > 1:
        raise AgreementError(
            f"column {criterion!r} holds several criteria {sorted(map(str, df[criterion].unique()))[:5]}; "
            "filter to one, or use agreement_table(..., by=['criterion'])."
        )
    if not (df.index.is_unique and pd.api.types.is_integer_dtype(df.index.dtype)):
        df = df.reset_index(drop=True)  # error messages quote these row numbers
    if raters is not None:
        raters = list(raters)
        known = set(df[rater].unique())
        unknown = [r for r in raters if r not in known]
        if unknown:
            raise AgreementError(f"rater(s) {unknown} not found in column {rater!r}; known raters: {sorted(map(str, known))}")
        df = df[df[rater].isin(raters)]  # keep the original row numbers for error messages
    dup = df.duplicated([item, rater], keep=False)
    if dup.any():
        first = df.loc[dup, [item, rater]].iloc[0].tolist()
        raise SchemaError(
            "annotations", f"{item},{rater}", [int(i) for i in df.index[dup.to_numpy()]],
            f"duplicate ({item}, {rater}) rows, e.g. item {first[0]!r} rater {first[1]!r}: each rater may label "
            "each item once; filter by criterion or drop repeats", source,
        )
    cats = infer_categories(df[label], categories, level, label, source)
    if level in ("nominal", "ordinal") and len(cats) > MAX_CATEGORIES:
        # Pairwise features are K x K per item: thousands of "categories" would need hundreds of GiB.
        shown = ", ".join(repr(str(c))[:40] for c in cats[:3])
        raise SchemaError(
            "annotations", label, [],
            f"{len(cats)} distinct labels (e.g. {shown}, ...): agreement needs categories, and more than "
            f"{MAX_CATEGORIES} look like free text or an id column. Point the label option at the column with "
            "the verdicts, or map the labels to categories first (numeric scores: use an interval level)", source,
        )
    lab = df[label]
    if isinstance(lab.dtype, pd.CategoricalDtype):
        lab = lab.astype(object)
    notna = lab.notna().to_numpy()
    lookup = {_key(c): i for i, c in enumerate(cats)}
    code = np.array([lookup.get(_key(v), -2) if ok else -1 for v, ok in zip(lab.tolist(), notna)], dtype=np.int64)
    bad = code == -2
    if bad.any():
        unknown = sorted({str(v) for v in lab[bad]})[:5]
        raise SchemaError(
            "annotations", label, [int(i) for i in df.index[bad]], f"label(s) {unknown} outside the declared categories {cats}", source
        )
    r_order = raters if raters is not None else sorted(df[rater].unique().tolist(), key=str)
    ii, items = pd.factorize(df[item], sort=True)
    rr = pd.Index(r_order).get_indexer(df[rater])
    codes = np.full((len(items), len(r_order)), -1, dtype=np.int64)
    codes[ii, rr] = code
    values = None
    if level != "nominal" or _numeric(cats):
        num = pd.to_numeric(pd.Series(cats), errors="coerce")
        if num.notna().all():
            values = num.to_numpy(dtype=float)
        elif level in ("interval", "ratio"):
            raise SchemaError("annotations", label, [], f"level={level!r} needs numeric labels; got {cats[:6]}", source)
        else:
            values = np.arange(len(cats), dtype=float)
    if level == "ratio" and values is not None and (values < 0).any():
        raise SchemaError("annotations", label, [], "level='ratio' needs non-negative values", source)
    return Data(codes, np.asarray(items, dtype=object), list(r_order), cats, level, int((codes < 0).sum()), values)


def _key(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)) and float(v).is_integer():
        return int(v)
    return v


# --------------------------------------------------------------------------- statistics


@dataclass
class Stat:
    """A statistic as per-item features plus a vectorised function of their sums."""

    F: np.ndarray
    fn: Callable[[np.ndarray], np.ndarray]
    n_items: int
    note: str = ""
    analytic: Callable[[np.ndarray, float], tuple] | None = field(default=None, repr=False)

    def value(self) -> float:
        return float(self.fn(self.F.sum(0, keepdims=True))[0])


def _safe_div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.true_divide(a, b)
    return np.where(np.abs(b) < 1e-12, np.nan, out)


WEIGHT_NAMES = ("linear", "quadratic")
WEIGHT_BASES = ("auto", "positions", "values")
FLEISS_MARGINALS = ("per_item", "pooled")
_BASIS_ERROR = ("weight_basis must be 'auto' (category values for numeric labels, else positions), 'positions' "
                "(ranks 0..K-1, as sklearn) or 'values' (category values, as irrCAC); not {basis!r}")


def is_unweighted(weights) -> bool:
    """True for ``None``/``"none"``/``"unweighted"`` (never for a matrix)."""
    return weights is None or (isinstance(weights, str) and weights in ("none", "unweighted"))


def agreement_weights(K: int, weights, values=None, categories=None) -> np.ndarray:
    """Agreement weights w[k, l] in [0, 1] with 1 on the diagonal (Cohen 1968; Gwet 2014, ch. 3).

    ``weights``: None (identity), ``"linear"`` (1 - |x_k - x_l| / span), ``"quadratic"``
    (1 - (x_k - x_l)^2 / span^2) or a K x K agreement-weight matrix in category order.
    ``x`` are the category ``values`` when given (irrCAC's convention), else the positions
    0..K-1 (sklearn's ``cohen_kappa_score``); ``span = max(x) - min(x)``.
    """
    if weights is not None and not isinstance(weights, str):
        return check_weight_matrix(weights, K, categories)
    if is_unweighted(weights):
        return np.eye(K)
    if weights not in WEIGHT_NAMES:
        raise AgreementError(
            f"weights must be None, 'linear', 'quadratic' or a K x K agreement-weight matrix; not {weights!r}"
        )
    x = np.arange(K, dtype=float) if values is None else np.asarray(values, dtype=float)
    span = float(x.max() - x.min()) if K else 0.0
    if span <= 0:
        return np.eye(K)
    d = np.abs(x[:, None] - x[None, :]) / span
    return 1 - d if weights == "linear" else 1 - d**2


def check_weight_matrix(weights, K: int, categories=None) -> np.ndarray:
    """Validate a user agreement-weight matrix: K x K, finite, symmetric, in [0, 1], ones on the diagonal."""
    where = f" for the {K} categories {list(categories)}" if categories is not None else f" for {K} categories"
    try:
        w = np.asarray(weights, dtype=float)
    except (TypeError, ValueError):
        raise AgreementError(f"weights matrix must be numeric; got {type(weights).__name__}") from None
    if w.shape != (K, K):
        raise AgreementError(
            f"weights matrix has shape {w.shape} but a {K} x {K} matrix is needed{where}; rows and columns "
            "follow the category order (pass categories=[...] to fix it)"
        )
    if not np.isfinite(w).all():
        raise AgreementError("weights matrix contains NaN or infinite entries; use agreement weights in [0, 1]")
    if (w < 0).any() or (w > 1).any():
        raise AgreementError(
            f"weights matrix entries must lie in [0, 1] (agreement weights, not distances); got min {w.min():g}, "
            f"max {w.max():g}. For a distance matrix D pass 1 - D / D.max()"
        )
    if not np.allclose(np.diag(w), 1.0):
        raise AgreementError(f"weights matrix must have 1 on the diagonal (full credit for identical labels); "
                             f"got diagonal {np.round(np.diag(w), 4).tolist()}")
    if not np.allclose(w, w.T):
        raise AgreementError(
            "weights matrix must be symmetric (w[k, l] == w[l, k]); pass (W + W.T) / 2 if that is meant"
        )
    return w


def weight_values(categories, basis: str = "auto") -> np.ndarray | None:
    """Category values to build weights from, or None for positions (see :func:`agreement_weights`).

    ``auto``: the values when every category is a number, else positions. ``values`` needs labels
    that parse as numbers. ``positions`` always uses 0..K-1.
    """
    if basis not in WEIGHT_BASES:
        raise AgreementError(_BASIS_ERROR.format(basis=basis))
    if basis == "positions":
        return None
    if basis == "auto":
        return np.asarray(categories, dtype=float) if _numeric(categories) else None
    num = pd.to_numeric(pd.Series(list(categories), dtype=object), errors="coerce")
    if num.isna().any():
        raise AgreementError(
            f"weight_basis='values' needs numeric labels; got {list(categories)[:6]}. "
            "Use weight_basis='positions' or numeric labels"
        )
    return num.to_numpy(dtype=float)


def check_marginals(marginals: str) -> str:
    """Return ``marginals`` if it names a Fleiss chance-term convention, else raise AgreementError."""
    if marginals not in FLEISS_MARGINALS:
        raise AgreementError(
            f"fleiss_marginals must be 'per_item' (per-item category shares, Gwet 2014 / irrCAC) or 'pooled' "
            f"(category counts pooled over items with >= 2 labels); not {marginals!r}"
        )
    return marginals


def pair_features(a: np.ndarray, b: np.ndarray, K: int) -> tuple[np.ndarray, int]:
    """One-hot contingency cell per item (zeros where either label is missing)."""
    ok = (a >= 0) & (b >= 0)
    F = np.zeros((len(a), K * K))
    F[np.flatnonzero(ok), (a * K + b)[ok]] = 1.0
    return F, int(ok.sum())


def _table(S, K):
    T = S.reshape(len(S), K, K)
    n = T.sum((1, 2))
    P = T / np.where(n == 0, np.nan, n)[:, None, None]
    return P, P.sum(2), P.sum(1), n


def pair_stat(kind: str, a, b, K: int, weights=None) -> Stat:
    """Two-rater coefficient ``kind`` on code vectors ``a``, ``b``."""
    F, n = pair_features(a, b, K)
    w = agreement_weights(K, weights)
    Tw = w.sum()

    def fn(S):
        P, r, c, _ = _table(S, K)
        po = (P * w).sum((1, 2))
        if kind == "percent_agreement" or kind == "accuracy":
            return po
        if kind == "cohen_kappa":
            pe = np.einsum("kl,mk,ml->m", w, r, c)
        elif kind == "scott_pi":
            m = (r + c) / 2
            pe = np.einsum("kl,mk,ml->m", w, m, m)
        elif kind in ("brennan_prediger", "pabak"):
            pe = np.full(len(S), Tw / K**2)
        elif kind in ("gwet_ac1", "gwet_ac2"):
            pi = (r + c) / 2
            pe = Tw / (K * (K - 1)) * (pi * (1 - pi)).sum(1) if K > 1 else np.full(len(S), np.nan)
        elif kind == "macro_f1":
            tp = np.einsum("mkk->mk", P)
            f1 = _safe_div(2 * tp, r + c)  # r: reference (a) marginals, c: rater (b) marginals
            present = (r + c) > 0
            return np.nansum(np.where(present, f1, 0), 1) / np.maximum(present.sum(1), 1)
        else:
            raise AgreementError(f"unknown pairwise metric {kind!r}")
        return _safe_div(po - pe, 1 - pe)

    analytic = None
    if kind == "cohen_kappa":
        analytic = _cohen_analytic(w, K)
    elif kind in ("percent_agreement", "accuracy") and np.array_equal(w, np.eye(K)):
        analytic = _wilson(K)
    return Stat(F, fn, n, analytic=analytic)


def _cohen_analytic(w, K):
    def se(S, est):
        # Fleiss, Cohen & Everitt (1969) large-sample variance of (weighted) kappa.
        P, r, c, n = _table(S, K)
        P, r, c, n = P[0], r[0], c[0], n[0]
        pe = r @ w @ c
        if not np.isfinite(est) or abs(1 - pe) < 1e-12:
            return np.nan
        wi = w @ c  # w-bar_i.
        wj = r @ w  # w-bar_.j
        term = (P * (w - (wi[:, None] + wj[None, :]) * (1 - est)) ** 2).sum()
        var = (term - (est - pe * (1 - est)) ** 2) / (n * (1 - pe) ** 2)
        return float(np.sqrt(max(var, 0.0)))

    return se


def _wilson(K):
    def ci(S, est, level):
        n = S.sum()
        z = sps.norm.ppf(0.5 + level / 2)
        centre = (est + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(est * (1 - est) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return centre - half, centre + half, "analytic (Wilson score interval)"

    ci.interval = True
    return ci


def count_matrix(codes: np.ndarray, K: int) -> np.ndarray:
    """Per-item label counts (n_items, K)."""
    N = np.zeros((codes.shape[0], K))
    for j in range(codes.shape[1]):
        ok = codes[:, j] >= 0
        np.add.at(N, (np.flatnonzero(ok), codes[ok, j]), 1.0)
    return N


def multi_stat(kind: str, codes: np.ndarray, K: int, weights=None, marginals: str = "per_item") -> Stat:
    """Many-rater coefficient from per-item counts (missing labels allowed).

    Observed agreement (Fleiss 1971 for complete data; Gwet 2014 and irrCAC with missing labels): the mean over
    items with r_i >= 2 labels of sum_k n_ik (r*_ik - 1) / (r_i (r_i - 1)), r*_ik = sum_l w_kl n_il.

    Fleiss' chance term sum_kl w_kl pi_k pi_l takes its category shares ``pi`` from
    ``marginals``:

    * ``"per_item"`` (default; Gwet 2014 and R's irrCAC ``fleiss.kappa.raw``):
      pi_k = (1/n) sum_i n_ik / r_i over the n items with at least one label;
    * ``"pooled"``: pi_k = sum_i n_ik / sum_i r_i over items with r_i >= 2 (counts pooled).

    With the same number of labels on every item both equal Fleiss (1971).
    """
    check_marginals(marginals)
    N = count_matrix(codes, K)
    r = N.sum(1)
    v = (r >= 2).astype(float)
    w = agreement_weights(K, weights)
    Tw = w.sum()
    Nw = N @ w.T  # r*_ik = sum_l w_kl n_il
    with np.errstate(invalid="ignore", divide="ignore"):
        Pi = np.where(r >= 2, (N * (Nw - 1)).sum(1) / (r * (r - 1)), 0.0)
        share = np.where((r >= 1)[:, None], N / np.where(r == 0, 1, r)[:, None], 0.0)
    h = (r >= 1).astype(float)
    # columns: [P_i v, v, N v (K), r v, share h (K), h]
    F = np.column_stack([Pi * v, v, N * v[:, None], r * v, share * h[:, None], h])

    def fn(S):
        pa = _safe_div(S[:, 0], S[:, 1])
        if kind == "percent_agreement":
            return pa
        if kind in ("fleiss_kappa", "scott_pi"):
            if marginals == "pooled":
                p = S[:, 2 : 2 + K] / S[:, 2 + K : 3 + K]
            else:
                p = S[:, 3 + K : 3 + 2 * K] / S[:, [3 + 2 * K]]
            pe = np.einsum("kl,mk,ml->m", w, p, p)
        elif kind in ("brennan_prediger", "pabak"):
            pe = np.full(len(S), Tw / K**2)
        elif kind in ("gwet_ac1", "gwet_ac2"):
            pi = S[:, 3 + K : 3 + 2 * K] / S[:, [3 + 2 * K]]
            pe = Tw / (K * (K - 1)) * (pi * (1 - pi)).sum(1) if K > 1 else np.full(len(S), np.nan)
        else:
            raise AgreementError(f"unknown many-rater metric {kind!r}")
        return _safe_div(pa - pe, 1 - pe)

    return Stat(F, fn, int(v.sum()))


def conger_stat(codes: np.ndarray, K: int, weights=None) -> Stat:
    """Conger's (1980) kappa: many-rater kappa with rater-specific marginals (irrCAC ``conger.kappa.raw``).

    Observed agreement as in :func:`multi_stat`. Chance agreement (Gwet 2014; irrCAC source):
    with p_gk = n_gk / n_g the share of rater g's labels in category k (n_g = items rater g
    labelled) and r raters, pe = sum_kl w_kl (pbar_k pbar_l - s2_kl / r),
    s2_kl = (sum_g p_gk p_gl - r pbar_k pbar_l) / (r - 1); equivalently the mean over ordered
    rater pairs g != h of sum_kl w_kl p_gk p_hl. Two raters and complete data give Cohen's kappa.
    Raters without a label in a (re)sample are left out of r.
    """
    n, R = codes.shape
    base = multi_stat("percent_agreement", codes, K, weights)
    w = agreement_weights(K, weights)
    onehot = np.zeros((n, R, K))
    ii, gg = np.nonzero(codes >= 0)
    onehot[ii, gg, codes[ii, gg]] = 1.0
    rated = (codes >= 0).astype(float)
    F = np.column_stack([base.F[:, :2], onehot.reshape(n, R * K), rated])

    def fn(S):
        pa = _safe_div(S[:, 0], S[:, 1])
        C = S[:, 2 : 2 + R * K].reshape(len(S), R, K)
        ng = S[:, 2 + R * K :]
        present = ng > 0
        p = np.where(present[:, :, None], C / np.where(present, ng, 1)[:, :, None], 0.0)
        r = present.sum(1).astype(float)
        P = p.sum(1)  # r * pbar_k
        pairs = np.einsum("kl,mk,ml->m", w, P, P) - np.einsum("kl,mgk,mgl->m", w, p, p)
        pe = _safe_div(pairs, r * (r - 1))
        return _safe_div(pa - pe, 1 - pe)

    return Stat(F, fn, base.n_items)


def category_kappa_stats(codes: np.ndarray, K: int, marginals: str = "per_item") -> list[Stat]:
    """Fleiss' (1971) per-category kappa_j as one :class:`Stat` per category.

    Fleiss' kappa_j = 1 - sum_i x_ij (m - x_ij) / (N m (m - 1) p_j q_j) is Fleiss' kappa of the
    data collapsed to "category j" versus "any other category". That reading carries over to
    unequal numbers of labels per item: observed agreement is the mean over items with r_i >= 2 of
    [n_ij (n_ij - 1) + (r_i - n_ij)(r_i - n_ij - 1)] / (r_i (r_i - 1)); the share p_j follows
    ``marginals`` exactly as in :func:`multi_stat`, and chance agreement is p_j^2 + q_j^2.
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
    out = []
    for j in range(K):
        if marginals == "pooled":
            F = np.column_stack([agree[:, j], v, N[:, j] * v, r * v])
        else:
            F = np.column_stack([agree[:, j], v, share[:, j], h])

        def fn(S):
            pa = _safe_div(S[:, 0], S[:, 1])
            p = _safe_div(S[:, 2], S[:, 3])
            pe = p**2 + (1 - p) ** 2
            return _safe_div(pa - pe, 1 - pe)

        out.append(Stat(F, fn, int(v.sum())))
    return out


def delta_matrix(level: str, K: int, values=None) -> np.ndarray | None:
    """Krippendorff's squared difference function for fixed-metric levels (None for ordinal)."""
    if level == "nominal":
        return 1.0 - np.eye(K)
    if level == "ordinal":
        return None
    v = np.asarray(values, dtype=float)
    if level == "interval":
        return (v[:, None] - v[None, :]) ** 2
    if level == "ratio":
        s = v[:, None] + v[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            d = ((v[:, None] - v[None, :]) / s) ** 2
        return np.nan_to_num(d)
    raise AgreementError(f"unknown level {level!r}")


def alpha_stat(codes: np.ndarray, K: int, level: str, values=None) -> Stat:
    """Krippendorff's alpha from per-item coincidence matrices (Krippendorff 2011).

    Per item u with m_u >= 2 pairable values: o_u[c, k] = (n_uc n_uk - [c == k] n_uc) / (m_u - 1).
    alpha = 1 - (n - 1) * sum_ck o_ck delta_ck / sum_ck n_c n_k delta_ck, with n_c = sum_k o_ck.
    For nominal/interval/ratio delta is fixed, so each item contributes one scalar
    d_u = sum_ck o_u[c, k] delta_ck plus its pairable counts; ordinal delta depends on the
    marginals, so the full per-item coincidence matrix is kept.
    """
    N = count_matrix(codes, K)
    m = N.sum(1)
    pairable = m >= 2
    Np = N * pairable[:, None]
    denom = np.where(pairable, m - 1, 1.0)
    delta = delta_matrix(level, K, values)
    if delta is not None:
        # d_u = (sum_ck n_c n_k delta_ck - sum_c n_c delta_cc) / (m_u - 1); delta_cc = 0.
        d = np.einsum("uc,ck,uk->u", Np, delta, Np) / denom
        F = np.column_stack([d, Np])

        def fn(S):
            Do = S[:, 0]
            nc = S[:, 1:]
            n = nc.sum(1)
            De = np.einsum("mc,ck,mk->m", nc, delta, nc)
            return 1 - _safe_div((n - 1) * Do, De)

    else:
        O = (Np[:, :, None] * Np[:, None, :] - Np[:, :, None] * np.eye(K)[None]) / denom[:, None, None]
        F = O.reshape(len(N), K * K)
        iu = np.arange(K)

        def fn(S):
            Om = S.reshape(len(S), K, K)
            nc = Om.sum(2)
            n = nc.sum(1)
            cum = np.cumsum(nc, 1)  # delta_ck = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2
            lo = np.minimum(iu[:, None], iu[None, :])
            hi = np.maximum(iu[:, None], iu[None, :])
            cum0 = np.concatenate([np.zeros((len(S), 1)), cum], 1)
            between = cum0[:, hi + 1] - cum0[:, lo]
            dl = (between - (nc[:, :, None] + nc[:, None, :]) / 2) ** 2
            Do = (Om * dl).sum((1, 2))
            De = np.einsum("mc,mck,mk->m", nc, dl, nc)
            return 1 - _safe_div((n - 1) * Do, De)

    return Stat(F, fn, int(pairable.sum()))


def icc_stat(X: np.ndarray, form: str) -> Stat:
    """Shrout & Fleiss (1979) ICC on a complete items x raters matrix of numbers."""
    n, k = X.shape
    S_i = X.sum(1)
    F = np.column_stack([np.ones(n), S_i, S_i**2, (X**2).sum(1), X])

    def ms(S):
        nn = S[:, 0]
        T = S[:, 1]
        C = S[:, 4:]
        cf = T**2 / (nn * k)
        ssr = S[:, 2] / k - cf
        ssc = (C**2).sum(1) / nn - cf
        sst = S[:, 3] - cf
        sse = sst - ssr - ssc
        ssw = sst - ssr
        return nn, ssr / (nn - 1), ssw / (nn * (k - 1)), ssc / (k - 1), sse / ((nn - 1) * (k - 1))

    def fn(S):
        nn, msr, msw, msc, mse = ms(S)
        if form == "icc1":
            return _safe_div(msr - msw, msr + (k - 1) * msw)
        if form == "icc2":
            return _safe_div(msr - mse, msr + (k - 1) * mse + k * (msc - mse) / nn)
        if form == "icc3":
            return _safe_div(msr - mse, msr + (k - 1) * mse)
        if form == "icc1k":
            return _safe_div(msr - msw, msr)
        if form == "icc2k":
            return _safe_div(msr - mse, msr + (msc - mse) / nn)
        if form == "icc3k":
            return _safe_div(msr - mse, msr)
        raise AgreementError(f"unknown ICC form {form!r}; use icc1, icc2, icc3, icc1k, icc2k or icc3k")

    def ci(S, est, level):
        # F-distribution intervals of McGraw & Wong (1996), as in Shrout & Fleiss (1979).
        nn, msr, msw, msc, mse = (float(x[0]) for x in ms(S))
        q = 0.5 + level / 2
        if form in ("icc1", "icc1k", "icc3", "icc3k"):
            den, df2 = (msw, nn * (k - 1)) if form.startswith("icc1") else (mse, (nn - 1) * (k - 1))
            Fv = msr / den
            fl = Fv / sps.f.ppf(q, nn - 1, df2)
            fu = Fv * sps.f.ppf(q, df2, nn - 1)
            if form.endswith("k"):
                return 1 - 1 / fl, 1 - 1 / fu, "analytic (F distribution)"
            return (fl - 1) / (fl + k - 1), (fu - 1) / (fu + k - 1), "analytic (F distribution)"
        icc2 = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / nn)
        a = k * icc2 / (nn * (1 - icc2))
        b = 1 + k * icc2 * (nn - 1) / (nn * (1 - icc2))
        v = (a * msc + b * mse) ** 2 / ((a * msc) ** 2 / (k - 1) + (b * mse) ** 2 / ((nn - 1) * (k - 1)))
        fl = sps.f.ppf(q, nn - 1, v)
        fu = sps.f.ppf(q, v, nn - 1)
        lo = nn * (msr - fl * mse) / (fl * (k * msc + (k * nn - k - nn) * mse) + nn * msr)
        hi = nn * (fu * msr - mse) / (k * msc + (k * nn - k - nn) * mse + nn * fu * msr)
        if form == "icc2k":
            lo, hi = lo * k / (1 + lo * (k - 1)), hi * k / (1 + hi * (k - 1))
        return lo, hi, "analytic (F distribution, Satterthwaite df)"

    ci.interval = True
    return Stat(F, fn, n, analytic=ci)


def pearson_stat(x: np.ndarray, y: np.ndarray) -> Stat:
    ok = np.isfinite(x) & np.isfinite(y)
    x0, y0 = np.where(ok, x, 0.0), np.where(ok, y, 0.0)
    F = np.column_stack([ok, x0, y0, x0**2, y0**2, x0 * y0]).astype(float)

    def fn(S):
        n, sx, sy, sxx, syy, sxy = S.T
        cov = sxy - sx * sy / n
        return _safe_div(cov, np.sqrt(np.maximum(sxx - sx**2 / n, 0) * np.maximum(syy - sy**2 / n, 0)))

    return Stat(F, fn, int(ok.sum()), analytic=_fisher(1.0, 3))


def _fisher(c, k):
    def ci(S, est, level):
        n = S[0, 0] if S.ndim == 2 else S[0]
        z = sps.norm.ppf(0.5 + level / 2)
        se = np.sqrt(c / (n - k))
        zr = np.arctanh(np.clip(est, -0.999999999, 0.999999999))
        return float(np.tanh(zr - z * se)), float(np.tanh(zr + z * se)), "analytic (Fisher z)"

    ci.interval = True
    return ci


def rank_stat(kind: str, x: np.ndarray, y: np.ndarray) -> Stat:
    """Spearman or Kendall: not a function of item sums, so replicates loop (see bootstrap)."""
    ok = np.isfinite(x) & np.isfinite(y)
    F = np.column_stack([ok, np.where(ok, x, 0.0), np.where(ok, y, 0.0)]).astype(float)
    st = Stat(F, None, int(ok.sum()))
    st.rank = kind  # type: ignore[attr-defined]
    st.analytic = _fisher(1.06, 3) if kind == "spearman" else _fisher(0.437, 4)
    return st


def _rank_value(kind, x, y):
    if len(x) < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        return np.nan
    return (sps.spearmanr(x, y)[0] if kind == "spearman" else sps.kendalltau(x, y)[0])


# --------------------------------------------------------------------------- bootstrap


def resample_weights(n: int, n_boot: int, rng: np.random.Generator, chunk: int):
    """Yield (b, n) count matrices of how often each item is drawn, in chunks."""
    done = 0
    while done < n_boot:
        b = min(chunk, n_boot - done)
        idx = rng.integers(0, n, size=(b, n))
        W = np.bincount((idx + (np.arange(b) * n)[:, None]).ravel(), minlength=b * n).reshape(b, n)
        yield W.astype(np.float64), idx
        done += b


def replicates(stats: Sequence[Stat], n_boot: int, seed, chunk: int | None = None) -> np.ndarray:
    """Bootstrap replicates (n_boot, len(stats)), all stats resampled with the same item draws."""
    n = stats[0].F.shape[0]
    rng = np.random.default_rng(seed)
    chunk = chunk or max(1, min(n_boot, int(4e6 // max(n, 1))))
    out = np.empty((n_boot, len(stats)))
    pos = 0
    for W, idx in resample_weights(n, n_boot, rng, chunk):
        for j, st in enumerate(stats):
            if getattr(st, "rank", None):
                X = st.F
                vals = []
                for row in idx:
                    sel = X[row]
                    sel = sel[sel[:, 0] > 0]
                    vals.append(_rank_value(st.rank, sel[:, 1], sel[:, 2]))
                out[pos : pos + len(W), j] = vals
            else:
                out[pos : pos + len(W), j] = st.fn(W @ st.F)
        pos += len(W)
    return out


def point(st: Stat) -> float:
    if getattr(st, "rank", None):
        sel = st.F[st.F[:, 0] > 0]
        return float(_rank_value(st.rank, sel[:, 1], sel[:, 2]))
    return st.value()


def jackknife(st: Stat) -> np.ndarray:
    """Leave-one-item-out values (only items that carry data)."""
    keep = np.flatnonzero(np.abs(st.F).sum(1) > 0)
    if getattr(st, "rank", None):
        sel = st.F[keep]
        return np.array([_rank_value(st.rank, np.delete(sel[:, 1], i), np.delete(sel[:, 2], i)) for i in range(len(sel))])
    tot = st.F.sum(0, keepdims=True)
    out = np.empty(len(keep))
    for s in range(0, len(keep), 2048):
        out[s : s + 2048] = st.fn(tot - st.F[keep[s : s + 2048]])
    return out


def interval(est: float, reps: np.ndarray, level: float, method: str, jack: np.ndarray | None = None):
    """Percentile or BCa interval from replicates; returns (lo, hi, n_valid)."""
    reps = reps[np.isfinite(reps)]
    if len(reps) < 2 or not np.isfinite(est):
        return np.nan, np.nan, len(reps)
    a_lo, a_hi = (1 - level) / 2, 1 - (1 - level) / 2
    if method == "bca":
        prop = (np.sum(reps < est) + 0.5 * np.sum(reps == est)) / len(reps)
        z0 = sps.norm.ppf(np.clip(prop, 1e-10, 1 - 1e-10))
        acc = 0.0
        if jack is not None:
            j = jack[np.isfinite(jack)]
            if len(j) > 2:
                d = j.mean() - j
                den = 6 * (np.sum(d**2) ** 1.5)
                acc = float(np.sum(d**3) / den) if den > 0 else 0.0
        zs = sps.norm.ppf([a_lo, a_hi])
        adj = sps.norm.cdf(z0 + (z0 + zs) / (1 - acc * (z0 + zs)))
        a_lo, a_hi = float(adj[0]), float(adj[1])
    lo, hi = np.quantile(reps, [a_lo, a_hi])
    return float(lo), float(hi), len(reps)
