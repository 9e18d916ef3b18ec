"""Agreement weights (Cohen 1968; Gwet 2014, ch. 3) and the Fleiss chance-term convention."""

from __future__ import annotations

import numpy as np
import pandas as pd

from medeval_kit.agreement.data import AgreementError, Data, is_numeric

__all__ = ["WEIGHT_NAMES", "WEIGHT_BASES", "FLEISS_MARGINALS", "is_unweighted", "agreement_weights",
           "check_weight_matrix", "weight_values", "check_weight_basis", "check_marginals", "weights_for"]

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


def check_weight_basis(basis: str) -> str:
    """Return ``basis`` if it is one of :data:`WEIGHT_BASES`, else raise AgreementError."""
    if basis not in WEIGHT_BASES:
        raise AgreementError(_BASIS_ERROR.format(basis=basis))
    return basis


def weight_values(categories, basis: str = "auto") -> np.ndarray | None:
    """Category values to build weights from, or None for positions (see :func:`agreement_weights`).

    ``auto``: the values when every category is a number, else positions. ``values`` needs labels
    that parse as numbers. ``positions`` always uses 0..K-1.
    """
    check_weight_basis(basis)
    if basis == "positions":
        return None
    if basis == "auto":
        return np.asarray(categories, dtype=float) if is_numeric(categories) else None
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


def weights_for(data: Data, weights, weight_basis: str) -> tuple[np.ndarray | None, str]:
    """Resolve ``weights`` to a K x K matrix (None when unweighted) and a note on the basis used."""
    values = weight_values(data.categories, weight_basis)  # validates weight_basis
    if is_unweighted(weights):
        return None, ""
    w = agreement_weights(data.K, weights, values, data.categories)
    note = ""
    if isinstance(weights, str) and values is not None and data.K > 2:
        gaps = np.diff(np.sort(values))
        if not np.allclose(gaps, gaps[0]):
            note = (f"{weights} weights from the category values {data.categories} (unevenly spaced); "
                    "weight_basis='positions' weights by rank as sklearn does")
    return w, note
