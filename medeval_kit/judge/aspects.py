"""Rubric aspect selection (MCQG-SRefine Table 2): which aspects' summed score difference best
reproduces a human preference, by greedy prefix, greedy forward or exhaustive search, with K-fold
cross-validation of the whole search. Cohen's kappa (3 classes) and percent agreement are computed
from each candidate subset's 3 x 3 contingency table exactly, (N a - s) / (N^2 - s) and a / N, so
equal values are equal floats and ties go to the first subset in lexicographic order (the tests
check them against :mod:`medeval_kit.agreement` and scikit-learn). The exhaustive search runs in a
compiled kernel (:mod:`._kernels`, numba) that scores every subset of 30 aspects up to size 11 (the
paper's ~1.1e8) in seconds, the in-sample and all K training-fold searches in one pass; the numpy
path is the reference (``engine="numpy"``).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import ParameterError, SchemaError
from medeval_kit.results import Result, result_frame, result_row

from .engine import JudgeError
from .registry import check_protocol

__all__ = ["aspect_differences", "select_aspects", "select_aspects_all", "AspectSelection", "SEARCHES",
           "OBJECTIVES", "ENGINES", "TIE_TOLERANCE", "count_subsets", "selection_paths", "warm_up"]

_LAB = {"A": 1, "B": -1, "tie": 0}  # preference codes: the sign of the summed difference A - B
_CODES = (-1, 0, 1)
OBJECTIVES = ("kappa", "agreement")
ENGINES = ("auto", "numba", "numpy")
TIE_TOLERANCE = 1e-9
"""A summed difference within this of 0 is a tie (so float round-off such as 0.1 + 0.2 - 0.3 is not a preference)."""
MAX_SUBSETS = 200_000_000
"""Default cap on an exhaustive search (the paper's 30 aspects up to size 11 is ~1.08e8 subsets)."""


def count_subsets(p: int, max_k: int) -> int:
    """Number of subsets of size 1..max_k of p aspects."""
    return sum(math.comb(p, k) for k in range(1, min(max_k, p) + 1))


@shared_docs
@takes_columns("question_item", "target", "criterion", "score", "protocol")
def aspect_differences(judgments: pd.DataFrame, a: str, b: str, *, aggregate: str = "mean",
                       columns: Columns = None) -> pd.DataFrame:
    """Return the per-item, per-aspect score difference ``score(a) - score(b)`` from rubric judgments.

    Positive means ``a`` rated higher. Feed it to :func:`select_aspects`.

    Parameters
    ----------
    judgments : DataFrame
        Rubric ``judgments`` with ``question_item`` (the question), ``target`` (the system judged),
        ``criterion`` (the aspect) and ``score``.
    a, b : str
        The two targets compared.
    aggregate : str
        How repeats are combined (a pandas aggregation).
    {columns}

    Returns
    -------
    DataFrame
        Items x aspects (aspects in rubric order of first appearance); NaN where either side is unscored.

    Raises
    ------
    JudgeError
        Neither target has rubric judgments.
    SchemaError
        The judgments are not rubric judgments.
    """
    item, target, aspect, score = "question_item", "target", "criterion", "score"
    check_protocol(judgments, "rubric")
    d = judgments[judgments[target].isin([a, b])]
    if d.empty:
        raise JudgeError(f"no rubric judgments for targets {a!r} / {b!r}; present: "
                         f"{sorted(map(str, judgments[target].dropna().unique()))[:10]}")
    order = list(dict.fromkeys(d[aspect].astype(str)))
    wide = d.pivot_table(index=[item, aspect], columns=target, values=score, aggfunc=aggregate, dropna=False)
    for t in (a, b):
        if t not in wide.columns:
            wide[t] = np.nan
    diff = (wide[a] - wide[b]).unstack(aspect)
    return diff.reindex(columns=order)


# =========================================================================== kappa of many subsets at once
def _table_stats(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kappa, agreement, n) of m integer 3 x 3 tables (m x 9; human rows, judge columns, codes -1/0/1).

    kappa = (N a - s) / (N^2 - s) = (po - pe) / (1 - pe) and agreement = a / N from the integer
    counts (a the diagonal, s the sum of row x column margins); NaN where a denominator is 0.
    """
    T = tables.reshape(len(tables), 3, 3).astype(np.int64)
    N = T.sum((1, 2))
    a = np.einsum("mkk->m", T)
    s = (T.sum(2) * T.sum(1)).sum(1)
    num, den = N * a - s, N * N - s
    with np.errstate(divide="ignore", invalid="ignore"):
        kap = np.where(den != 0, num / np.where(den != 0, den, 1), np.nan)
        agr = np.where(N > 0, a / np.where(N > 0, N, 1), np.nan)
    return kap, agr, N.astype(float)


def _kappa_matrix(pred: np.ndarray, valid: np.ndarray, human: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cohen's kappa and agreement of each column of ``pred`` (codes -1/0/1) against ``human``.

    ``valid`` masks usable items per column. Returns (kappa, agreement, n).
    """
    hv = human[:, None]
    tables = np.stack([((hv == h) & (pred == p) & valid).sum(0) for h in _CODES for p in _CODES], axis=1)
    return _table_stats(tables)  # one 3 x 3 contingency table (human rows, judge columns) per column


def _sign(sums: np.ndarray) -> np.ndarray:
    """-1 / 0 / 1: the judge's preference from a summed difference (a tie within TIE_TOLERANCE of 0)."""
    return np.where(sums > TIE_TOLERANCE, 1, np.where(sums < -TIE_TOLERANCE, -1, 0))


def _evaluate(D: np.ndarray, M: np.ndarray, S: np.ndarray, human: np.ndarray):
    """Evaluate subsets S (m x p, 0/1) on diffs D (n x p, NaN->0) with missing mask M."""
    sums = D @ S.T
    miss = (M.astype(float) @ S.T) > 0
    pred = _sign(sums)
    valid = ~miss & (human[:, None] > -9)
    return (*_kappa_matrix(pred, valid, human), pred, valid)


@dataclass(frozen=True)
class AspectSelection(Result):
    """Result of :func:`select_aspects`: the chosen aspects and honest (cross-validated) numbers.

    Attributes
    ----------
    method : str
        The search: ``greedy``, ``forward`` or ``exhaustive``.
    objective : str
        ``kappa`` (Cohen, 3 classes) or ``agreement``.
    selected : tuple of str
        The chosen aspects.
    in_sample : float
        The objective of the chosen subset on the items it was chosen on.
    in_sample_agreement : float
        Its percent agreement on those items.
    all_aspects : float
        The objective of all aspects together (no selection).
    cv_estimate : float
        The K-fold cross-validated objective (held-out predictions pooled).
    cv_mean_fold : float
        The mean over folds of the held-out objective.
    n_items : int
        Items with a human label.
    n_missing : int
        Items dropped for a missing label.
    k_folds : int
        Cross-validation folds.
    path : DataFrame
        The best subset of each size (``k, added, kappa, agreement, n_items, aspects``).
    folds : DataFrame
        Per fold: the subset chosen on the training folds and its held-out value.
    note : str
        Anything a reader must know.
    engine : str
        Where the search ran (``numba`` or ``numpy``).
    """

    method: str
    objective: str
    selected: tuple[str, ...]
    in_sample: float
    in_sample_agreement: float
    all_aspects: float
    cv_estimate: float
    cv_mean_fold: float
    n_items: int
    n_missing: int
    k_folds: int
    path: pd.DataFrame = field(repr=False, compare=False)
    folds: pd.DataFrame = field(repr=False, compare=False)
    note: str = ""
    engine: str = ""

    @property
    def optimism(self) -> float:
        """float: In-sample minus cross-validated objective, how much the search flatters itself."""
        return self.in_sample - self.cv_estimate

    def to_frame(self) -> pd.DataFrame:
        """Return one result row per quantity (all aspects, in-sample, cross-validated, mean fold, optimism).

        Returns
        -------
        DataFrame
            Contract rows keyed ``search_method, objective, quantity``; extras ``k``, ``selected``.
        """
        return result_frame(self._rows(), keys=["search_method", "objective", "quantity"])

    def _rows(self) -> list[dict]:
        """The result rows of :meth:`to_frame`, as dicts (no DataFrame: a simulation stacks many)."""
        rows = [
            ("all_aspects", self.all_aspects, "all aspects, no selection, full data"),
            ("in_sample", self.in_sample, f"best subset found and scored on the same {self.n_items} items"),
            ("cross_validated", self.cv_estimate,
             f"{self.k_folds}-fold: search on train folds, score pooled held-out predictions"),
            ("cv_mean_fold", self.cv_mean_fold, "mean over folds of the held-out value"),
            ("optimism", self.optimism, "in_sample - cross_validated"),
        ]
        return [result_row(v, n_items=self.n_items, n_failed=self.n_missing, note=d, search_method=self.method,
                           objective=self.objective, quantity=q, k=len(self.selected),
                           selected=", ".join(self.selected)) for q, v, d in rows]

    def summary(self) -> str:
        """Return one line: the aspects chosen, in-sample vs cross-validated objective, and n.

        Returns
        -------
        str
            The line.
        """
        f = (lambda v: "NaN" if v is None or not np.isfinite(v) else f"{v:.3f}")
        return (f"{self.method} aspect selection ({self.objective}): {len(self.selected)} aspects "
                f"[{', '.join(self.selected)}]; in-sample {f(self.in_sample)} vs {self.k_folds}-fold CV "
                f"{f(self.cv_estimate)} (optimism {f(self.optimism)}); all aspects {f(self.all_aspects)}; "
                f"n={self.n_items} items")

    def _repr_html_(self) -> str:
        return self.to_frame().to_html(index=False)


# =========================================================================== the three searches
Scorer = Callable[[np.ndarray], np.ndarray]
"""Subsets (m x p, 0/1) -> 3 x m array of (kappa, agreement, n)."""


def _path_row(k: int, added: str, res: np.ndarray, aspects) -> dict:
    return {"k": k, "added": added, "kappa": res[0], "agreement": res[1], "n_items": int(res[2]),
            "aspects": ", ".join(aspects)}


def _greedy(score: Scorer, names: list[str], col: int, max_k: int, chunk: int):
    """Rank aspects by their own objective and keep the best prefix (MCQG-SRefine Tables 23/24)."""
    p = len(names)
    vals = np.nan_to_num(score(np.eye(p))[col], nan=-np.inf)
    rank = np.argsort(-vals, kind="stable")
    S = np.zeros((p, p))
    for k in range(p):
        S[k, rank[: k + 1]] = 1
    res = score(S)
    rows = [_path_row(k + 1, names[rank[k]], res[:, k], [names[j] for j in rank[: k + 1]]) for k in range(p)]
    best = int(np.argmax(np.nan_to_num(res[col], nan=-np.inf)[:max_k]))
    return S[best].astype(bool), float(res[col, best]), pd.DataFrame(rows)


def _forward(score: Scorer, names: list[str], col: int, max_k: int, chunk: int):
    """Add, each step, the aspect that most improves the objective; stop when nothing improves."""
    p = len(names)
    chosen: list[int] = []
    best_val, best_mask, rows = -np.inf, None, []
    for k in range(max_k):
        cand = [j for j in range(p) if j not in chosen]
        if not cand:
            break
        S = np.zeros((len(cand), p))
        for r, j in enumerate(cand):
            S[r, chosen + [j]] = 1
        res = score(S)
        v = np.nan_to_num(res[col], nan=-np.inf)
        r = int(np.argmax(v))
        if v[r] <= best_val and chosen:
            break  # no strict improvement: stop (the paper's pseudocode)
        chosen.append(cand[r])
        best_val, best_mask = float(v[r]), S[r].astype(bool)
        rows.append(_path_row(k + 1, names[cand[r]], res[:, r], [names[j] for j in chosen]))
    return best_mask, best_val, pd.DataFrame(rows)


def _best_of_size(score: Scorer, p: int, k: int, col: int, chunk: int) -> tuple[float, np.ndarray, np.ndarray]:
    """The best subset of size k (first maximum = lexicographically first): (value, mask, its scores)."""
    kbest, kres = -np.inf, None
    combos = itertools.combinations(range(p), k)
    while block := list(itertools.islice(combos, chunk)):
        S = np.zeros((len(block), p))
        for r, c in enumerate(block):
            S[r, list(c)] = 1
        res = score(S)
        v = np.nan_to_num(res[col], nan=-np.inf)
        r = int(np.argmax(v))
        if kres is None or v[r] > kbest:  # the first subset stands when no value is defined
            kbest, kres = v[r], (S[r].astype(bool), res[:, r])
    return kbest, *kres


def _exhaustive(score: Scorer, names: list[str], col: int, max_k: int, chunk: int):
    """Every subset of size 1..max_k (Tables 25/26); smaller subsets win ties."""
    best_val, best_mask, rows = -np.inf, None, []
    for k in range(1, max_k + 1):
        kbest, mask, vals = _best_of_size(score, len(names), k, col, chunk)
        rows.append(_path_row(k, "", vals, [n for n, m in zip(names, mask) if m]))
        if best_mask is None or kbest > best_val:  # strictly better: smaller subsets win ties
            best_val, best_mask = kbest, mask
    return best_mask, float(best_val), pd.DataFrame(rows)


SEARCHES = {"greedy": _greedy, "forward": _forward, "exhaustive": _exhaustive}
"""Search method -> ``search(score, names, col, max_k, chunk) -> (mask, value, path)``."""


def _search(D, M, human, names, method, objective, max_k, chunk=20000):
    """Run one search on the given rows; return (best_mask, best_value, path DataFrame)."""
    if method not in SEARCHES:
        raise ParameterError(f"method must be 'greedy', 'forward' or 'exhaustive'; got {method!r}")

    def score(S):
        kap, po, n, _, _ = _evaluate(D, M, S, human)
        return np.vstack([kap, po, n])

    return SEARCHES[method](score, names, OBJECTIVES.index(objective), max_k or len(names), chunk)


def _compiled_views(D, M, human, max_k, groups=None) -> list[dict[str, tuple]]:
    """The compiled exhaustive search: per view (all rows; all rows but fold g), per objective,
    (best_mask, best_value, path) exactly as :func:`_exhaustive` returns them."""
    from . import _kernels

    counts, combos = _kernels.exhaustive_best(D, M, human, max_k, TIE_TOLERANCE, groups=groups)
    p = D.shape[1]
    views = []
    for cv, cb in zip(counts, combos):
        out = {}
        for col, objective in enumerate(OBJECTIVES):
            best_val, best_mask, rows = -np.inf, None, []
            for k in range(1, cv.shape[0] + 1):
                num, den, a, n = (int(x) for x in cv[k - 1, col])
                vals = (num / den if den > 0 else np.nan, a / n if n > 0 else np.nan, float(n))
                idx = [int(j) for j in cb[k - 1, col, :k]]
                mask = np.zeros(p, dtype=bool)
                mask[idx] = True
                rows.append({"k": k, "idx": idx, "vals": vals})
                v = -np.inf if np.isnan(vals[col]) else vals[col]
                if best_mask is None or v > best_val:  # strictly better: smaller subsets win ties
                    best_val, best_mask = v, mask
            out[objective] = (best_mask, float(best_val), rows)
        views.append(out)
    return views


def _use_compiled(method: str, engine: str, n: int) -> bool:
    """Whether an exhaustive search runs in the compiled kernel."""
    if engine not in ENGINES:
        raise ParameterError(f"engine must be one of {ENGINES}; got {engine!r}")
    if method != "exhaustive" or engine == "numpy":
        return False
    from . import _kernels

    if n > _kernels.MAX_ITEMS:
        if engine == "numba":
            raise ParameterError(f"the compiled search takes at most {_kernels.MAX_ITEMS:,} items; got {n:,}")
        return False
    return True


def _search_all(D, M, human, names, method, objectives, max_k, engine, groups=None):
    """Every objective's search on all rows and, with ``groups``, on all rows but each group.

    Returns a list of views (0: all rows; 1 + g: all but group g), each {objective: (mask, value,
    path DataFrame)}. The compiled exhaustive search does all views and objectives in one pass.
    """
    G = 0 if groups is None else int(groups.max()) + 1
    row_sets = [np.ones(len(human), dtype=bool)] + [groups != g for g in range(G)]
    if _use_compiled(method, engine, len(human)):
        from . import _kernels

        if groups is None or _kernels.fits(len(human), groups, human):
            raw = _compiled_views(D, M, human, max_k, groups)
        else:  # too many fold x label cells for one pass: one pass per row set
            raw = [_compiled_views(D[r], M[r], human[r], max_k)[0] for r in row_sets]
        # the path (best subset of each size) is reported for all rows only; a training fold's is not used
        return [{o: (m, v, pd.DataFrame([_path_row(r["k"], "", r["vals"], [names[j] for j in r["idx"]])
                                          for r in rows]) if i == 0 else None)
                 for o, (m, v, rows) in view.items() if o in objectives} for i, view in enumerate(raw)]
    return [{o: _search(D[r], M[r], human[r], names, method, o, max_k) for o in objectives} for r in row_sets]


# =========================================================================== select_aspects
def _aligned(diffs: pd.DataFrame, human) -> tuple[np.ndarray, np.ndarray, list[str], int]:
    """(diffs of the labelled items, their human codes, aspect names, items without a label)."""
    if not isinstance(diffs, pd.DataFrame) or diffs.shape[1] == 0:
        raise JudgeError("diffs must be a non-empty items x aspects DataFrame (see aspect_differences)")
    h = pd.Series(human)
    h.index = h.index.astype(str)
    d = diffs.copy()
    d.index = d.index.astype(str)
    if h.index.is_unique and d.index.is_unique:  # one label per item: align by reindexing
        labels = h.reindex(d.index)
        keep = labels.notna().to_numpy()
        found = labels[keep].tolist()
        X = d.to_numpy(dtype=float)[keep]
    else:
        common = [i for i in d.index if i in h.index and pd.notna(h.loc[i])]
        found = list(h.loc[common])
        X = d.loc[common].to_numpy(dtype=float)
    bad = sorted({str(v) for v in found if v not in _LAB})
    if bad:
        raise SchemaError("annotations", "label", [], f"human preference labels must be A, B or tie; found {bad}")
    if len(found) < 2:
        raise JudgeError(f"only {len(found)} item(s) have both aspect scores and a human label")
    return X, np.array([_LAB[v] for v in found]), [str(c) for c in d.columns], len(d) - len(found)


def _check_size(method: str, p: int, k_cap: int, max_subsets: int) -> None:
    if method == "exhaustive":
        total = count_subsets(p, k_cap)
        if total > max_subsets:
            raise ParameterError(f"exhaustive search over {p} aspects up to size {k_cap} is {total:,} subsets "
                                 f"(> max_subsets={max_subsets:,}); lower max_k or raise max_subsets")


def _folds(n: int, k_folds: int, seed: int) -> np.ndarray:
    """Fold (0..K-1) of each item: a seeded permutation dealt round-robin."""
    fold_of = np.empty(n, dtype=int)
    fold_of[np.random.default_rng(seed).permutation(n)] = np.arange(n) % k_folds
    return fold_of


def _cross_validate(D, M, y, names, objective, fold_of, trained):
    """Score each fold's search (``trained[f]``: run on the other folds) on the held-out fold.

    Returns (pooled held-out kappa/agreement, one row per fold).
    """
    col = OBJECTIVES.index(objective)
    n = len(y)
    pooled_pred, pooled_valid = np.zeros(n, dtype=int), np.zeros(n, dtype=bool)
    rows = []
    for f, (m_f, v_f, _) in enumerate(trained):
        tr, te = fold_of != f, fold_of == f
        row = {"fold": f, "n_train": int(tr.sum()), "n_test": int(te.sum())}
        if m_f is None:
            rows.append({**row, "train": np.nan, "test": np.nan, "selected": ""})
            continue
        k_t, po_t, _, pred, valid = _evaluate(D[te], M[te], m_f[None, :].astype(float), y[te])
        pooled_pred[te], pooled_valid[te] = pred[:, 0], valid[:, 0]
        rows.append({**row, "train": v_f, "test": float((k_t, po_t)[col][0]),
                     "selected": ", ".join(nm for nm, m in zip(names, m_f) if m)})
    kc, poc, _ = _kappa_matrix(pooled_pred[:, None], pooled_valid[:, None], y)
    return float((kc, poc)[col][0]), pd.DataFrame(rows)


def _search_inputs(diffs, human, *, method, objectives, max_k, max_subsets, check_method=True):
    """The checked objectives (and method), the items aligned with the human labels and the search's size:
    ``(D, M, y, names, n_missing, k_cap)`` with ``D`` the differences (NaN as 0) and ``M`` their NaN mask."""
    bad = [o for o in objectives if o not in OBJECTIVES]
    if bad or not objectives:
        raise ParameterError(f"objective must be 'kappa' or 'agreement'; got {bad[0] if bad else objectives!r}")
    if check_method and method not in SEARCHES:
        raise ParameterError(f"method must be 'greedy', 'forward' or 'exhaustive'; got {method!r}")
    X, y, names, n_missing = _aligned(diffs, human)
    p = len(names)
    k_cap = min(max_k or p, p)
    _check_size(method, p, k_cap, max_subsets)
    return np.nan_to_num(X, nan=0.0), np.isnan(X), y, names, n_missing, k_cap


def _selections(diffs, human, *, method, objectives, max_k, k_folds, seed, max_subsets, engine
                ) -> dict[str, AspectSelection]:
    """The search, its in-sample scores and its K-fold cross-validation, for each objective."""
    D, M, y, names, n_missing, k_cap = _search_inputs(diffs, human, method=method, objectives=objectives,
                                                      max_k=max_k, max_subsets=max_subsets)
    p = len(names)
    k_folds = int(max(2, min(k_folds, len(y))))
    fold_of = _folds(len(y), k_folds, seed)
    compiled = _use_compiled(method, engine, len(y))
    views = _search_all(D, M, y, names, method, tuple(objectives), k_cap, engine, groups=fold_of)
    allk, allpo, _, _, _ = _evaluate(D, M, np.ones((1, p)), y)
    out = {}
    for objective in objectives:
        col = OBJECTIVES.index(objective)
        mask, _, path = views[0][objective]
        kap_in, po_in, _, _, _ = _evaluate(D, M, mask[None, :].astype(float), y)
        cv, folds = _cross_validate(D, M, y, names, objective, fold_of, [v[objective] for v in views[1:]])
        out[objective] = AspectSelection(
            method=method, objective=objective, selected=tuple(nm for nm, m in zip(names, mask) if m),
            in_sample=float((kap_in, po_in)[col][0]), in_sample_agreement=float(po_in[0]),
            all_aspects=float((allk, allpo)[col][0]), cv_estimate=cv,
            cv_mean_fold=float(np.nanmean(folds["test"])) if folds["test"].notna().any() else np.nan,
            n_items=len(y), n_missing=n_missing, k_folds=k_folds, path=path, folds=folds,
            note="ties are a class; kappa is 3-class Cohen (A/B/tie)",
            engine="numba" if compiled else "numpy",
        )
    return out


def select_aspects(
    diffs: pd.DataFrame,
    human: pd.Series | Mapping[str, str],
    *,
    method: str = "greedy",
    objective: str = "kappa",
    max_k: int | None = None,
    k_folds: int = 5,
    seed: int = 0,
    max_subsets: int = MAX_SUBSETS,
    engine: str = "auto",
) -> AspectSelection:
    """Choose the rubric aspects whose summed score difference best reproduces a human preference.

    ``diffs``: items x aspects, ``score(A) - score(B)`` (:func:`aspect_differences`). ``human``: the
    preferred side per item, ``"A"``, ``"B"`` or ``"tie"`` (items without a label are dropped and
    counted). For a subset of aspects the judge prefers A when the summed difference is > 0, B when
    < 0 and tie when it is 0 (within ``TIE_TOLERANCE``; ties are a class, as in MCQG-SRefine). Items
    with an unscored selected aspect get no prediction and are left out of that subset's denominator
    (``n_items`` per row).

    ``method``: ``"greedy"`` ranks aspects by their own objective and keeps the best prefix
    (MCQG-SRefine Tables 23/24); ``"forward"`` adds, each step, the aspect that most improves the
    objective and stops when nothing improves; ``"exhaustive"`` tries every subset of size
    1..``max_k`` (Tables 25/26; the best of each size is in ``path``; ties go to the smaller, then
    the lexicographically first subset; refused above ``max_subsets`` subsets - lower ``max_k``).
    ``objective``: ``"kappa"`` (Cohen, 3 classes) or ``"agreement"``. ``engine``: ``"auto"`` runs an
    exhaustive search in the compiled kernel (numba; 30 aspects up to size 11 in seconds),
    ``"numpy"`` in the vectorised reference; both give identical results.

    Cross-validation: the whole search is re-run on K-1 folds and the chosen subset scored on the
    held-out fold; held-out predictions are pooled into ``cv_estimate``. The gap to ``in_sample``
    is the optimism of reporting the searched number on the same items.

    Parameters
    ----------
    diffs : DataFrame
        Items x aspects, ``score(A) - score(B)``.
    human : Series or mapping
        The preferred side per item: ``"A"``, ``"B"`` or ``"tie"``.
    method : {"greedy", "forward", "exhaustive"}
        The search.
    objective : {"kappa", "agreement"}
        What the search maximises.
    max_k : int, optional
        The largest subset size; default all aspects.
    k_folds : int
        Cross-validation folds (at most the items).
    seed : int
        Random seed of the fold assignment.
    max_subsets : int
        Refuse an exhaustive search over more subsets than this.
    engine : {"auto", "numba", "numpy"}
        Where the exhaustive search runs.

    Returns
    -------
    AspectSelection
        The chosen aspects, the in-sample and cross-validated values, the path and the folds.

    Raises
    ------
    ParameterError
        An unknown method or objective, or a search too large for ``max_subsets``.

    Examples
    --------
    >>> import pandas as pd
    >>> diffs = pd.DataFrame({"a": [1, -1, 1, -1, 0, 1], "b": [0, 1, -1, 0, 1, 0]},
    ...                      index=[f"q{i}" for i in range(6)], dtype=float)
    >>> human = pd.Series(["A", "B", "A", "B", "tie", "A"], index=diffs.index)
    >>> select_aspects(diffs, human, k_folds=2).selected
    ('a',)
    """
    return _selections(diffs, human, method=method, objectives=(objective,), max_k=max_k, k_folds=k_folds,
                       seed=seed, max_subsets=max_subsets, engine=engine)[objective]


def select_aspects_all(
    diffs: pd.DataFrame,
    human: pd.Series | Mapping[str, str],
    *,
    method: str = "exhaustive",
    objectives: tuple[str, ...] = OBJECTIVES,
    max_k: int | None = None,
    k_folds: int = 5,
    seed: int = 0,
    max_subsets: int = MAX_SUBSETS,
    engine: str = "auto",
) -> AspectSelections:
    """Run :func:`select_aspects` for several objectives at once.

    The compiled exhaustive search scores both objectives, on all items and on every training fold,
    in one enumeration, so this costs about one search instead of 2 x (1 + K).

    Parameters
    ----------
    diffs : DataFrame
        Items x aspects, ``score(A) - score(B)``.
    human : Series or mapping
        The preferred side per item: ``"A"``, ``"B"`` or ``"tie"``.
    method : {"greedy", "forward", "exhaustive"}
        The search.
    objectives : tuple of str
        ``kappa`` and/or ``agreement``.
    max_k : int, optional
        The largest subset size; default all aspects.
    k_folds : int
        Cross-validation folds.
    seed : int
        Random seed of the fold assignment.
    max_subsets : int
        Refuse an exhaustive search over more subsets than this.
    engine : {"auto", "numba", "numpy"}
        Where the exhaustive search runs.

    Returns
    -------
    AspectSelections
        One :class:`AspectSelection` per objective (``.by_objective``); ``to_frame()`` stacks their rows.
        Indexing it by objective (the old dict result) works for one release, with a ``DeprecationWarning``.

    Raises
    ------
    ParameterError
        An unknown method or objective, or a search too large for ``max_subsets``.
    """
    return AspectSelections(_selections(diffs, human, method=method, objectives=tuple(objectives), max_k=max_k,
                                        k_folds=k_folds, seed=seed, max_subsets=max_subsets, engine=engine))


def selection_paths(selections) -> pd.DataFrame:
    """The best subset of each size for every objective, as one table: each selection's ``path`` with an
    ``objective`` column (``selections``: :func:`select_aspects_all`'s result, or a dict objective -> selection)."""
    by_objective = getattr(selections, "by_objective", selections)
    return pd.concat([s.path.assign(objective=o) for o, s in by_objective.items()], ignore_index=True)


def warm_up() -> float:
    """Compile the exhaustive search now (or load it from numba's on-disk cache); return the seconds it took.

    Otherwise the first compiled search of a process pays this inside its own call.
    """
    from . import _kernels

    return _kernels.warm_up()


@dataclass(frozen=True)
class AspectSelections(Result):
    """The result of :func:`select_aspects_all`: one :class:`AspectSelection` per objective.

    Attributes
    ----------
    by_objective : dict of str to AspectSelection
        ``{objective: selection}``, in the order the objectives were asked for.
    """

    by_objective: dict = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """Return every selection's result rows, one block per objective.

        Returns
        -------
        DataFrame
            Contract rows keyed ``search_method, objective, quantity`` (:meth:`AspectSelection.to_frame`).
        """
        return pd.concat([s.to_frame() for s in self.by_objective.values()], ignore_index=True)

    def summary(self) -> str:
        """Return one line per objective (:meth:`AspectSelection.summary`).

        Returns
        -------
        str
            The lines, joined.
        """
        return "\n".join(s.summary() for s in self.by_objective.values())

    def paths(self) -> pd.DataFrame:
        """Return the best subset of each size for every objective (each selection's ``path``).

        Returns
        -------
        DataFrame
            The paths with an ``objective`` column.
        """
        return pd.concat([s.path.assign(objective=o) for o, s in self.by_objective.items()], ignore_index=True)

    def _old(self, what: str) -> dict:
        warnings.warn(f"select_aspects_all() returns an AspectSelections result; {what} on it is deprecated: use "
                      ".by_objective (a dict), .to_frame() or .paths()", DeprecationWarning, stacklevel=3)
        return self.by_objective

    def __getitem__(self, objective: str) -> AspectSelection:
        return self._old("[objective]")[objective]

    def __iter__(self):
        return iter(self._old("iteration"))

    def __len__(self) -> int:
        return len(self.by_objective)

    def keys(self):
        """Deprecated dict access: the objectives (use ``.by_objective``)."""
        return self._old(".keys()").keys()

    def values(self):
        """Deprecated dict access: the selections (use ``.by_objective``)."""
        return self._old(".values()").values()

    def items(self):
        """Deprecated dict access: (objective, selection) pairs (use ``.by_objective``)."""
        return self._old(".items()").items()


def _selections_of(selections) -> dict[str, AspectSelection]:
    """``{objective: AspectSelection}`` from an :class:`AspectSelections` or a mapping (the old result)."""
    if isinstance(selections, AspectSelections):
        return dict(selections.by_objective)
    if isinstance(selections, Mapping):
        return dict(selections)
    raise TypeError(f"expected the result of select_aspects_all, got {type(selections).__name__}")
