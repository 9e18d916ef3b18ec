"""Statistics as per-item features, and their item bootstrap (the engine under every coefficient).

Every coefficient is a smooth function of *sums over items* of per-item features (contingency
cells, count vectors, coincidence matrices, ANOVA sums). A :class:`Stat` is therefore a pair
``(F, fn)``: ``F`` is an ``(n_items, p)`` feature matrix and ``fn`` maps summed features ``S``
(shape ``(m, p)``) to ``m`` values. Then

* the point estimate is ``fn(F.sum(0))``;
* bootstrap replicates that resample items are ``fn(W @ F)``, with ``W`` the ``(B, n)`` matrix of
  how often each item was drawn (the draws of :func:`medeval_kit.stats.item_draws`; one matrix
  product, no Python loop over resamples);
* jackknife (leave-one-item-out) replicates for BCa are ``fn(F.sum(0) - F)``.

A statistic that rests on fewer than :data:`medeval_kit.stats.MIN_CI_ITEMS` items (``n_items``) is never
resampled: :func:`replicates` gives it NaN replicates, so no agreement CI (a coefficient's, a design's,
a ceiling's, an ensemble's) comes from fewer items than the bootstrap supports, whoever asks.

Items with the same labels have the same features, so a statistic may hold only the distinct rows:
with ``groups`` (item -> row of ``F``, see :func:`compact`) the sums become ``counts @ F`` with
``counts`` how often each row's items were drawn. On 100,000 items and 10 raters with 3 labels that
is about 20,000 rows instead of 100,000, and a 2,000-resample bootstrap never builds the dense
``(B, n)`` matrix. The values are the same sums in another order.

Several statistics built on the same item axis share the draws, which gives paired bootstraps for
differences (judge minus humans) for free, and one pass over the draws for a whole report. Rank
correlations are not functions of item sums: their replicates loop over the same draws.

Many small statistics with one coefficient (a pair's contingency table per human, per design, per
simulated panel) spend their time in the coefficient's per-call overhead, not in the sums: a
:func:`stacked_stat` keeps its blocks of features side by side, and :func:`replicates` and
:func:`points` evaluate every block of every stacked statistic that shares the (row-wise) function in
one call. The values are the same; the equal-noise simulation (``coverage``) runs on them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace

import numpy as np

from medeval_kit.stats import MIN_CI_ITEMS, item_draws

__all__ = ["Stat", "safe_div", "replicates", "point", "points", "jackknife", "mean_stat", "stacked_stat",
           "pooled_stat", "compact", "row_groups", "shrinks"]

Analytic = Callable[[np.ndarray, float, float], tuple[float, float, str]]
"""(summed features (1, p), estimate, confidence) -> (ci_low, ci_high, ci_method)."""

_CHUNK_CELLS = 4e6  # resample rows x items per chunk: bounds the memory of the draws (and fixes their stream)
_COUNT_CELLS = 2**15  # draws per bincount when counting them (in cache; _draw_counts)
_PRUNE_BLOCK = 8  # blocks of a plain mean evaluated together before dropping rows already NaN (_pruned_mean)
_MIN_SHRINK = 0.5  # compact only when the distinct rows are at most this share of the items


@dataclass
class Stat:
    """A statistic as per-item features plus a vectorised function of their sums.

    ``groups`` (optional, one entry per item) maps each item to its row of ``F``; ``F`` then holds
    only the distinct rows (:func:`compact`). ``stack`` (optional) says that ``F`` holds blocks of
    features of one row-wise function, which the engine may evaluate together (:func:`stacked_stat`).
    """

    F: np.ndarray
    fn: Callable[[np.ndarray], np.ndarray] | None
    n_items: int
    note: str = ""
    analytic: Analytic | None = field(default=None, repr=False)
    rank: str | None = None  # "spearman"/"kendall": F holds (ok, x, y) and fn is None
    groups: np.ndarray | None = field(default=None, repr=False)
    stack: tuple | None = field(default=None, repr=False)  # (row-wise fn, s, p, mean): see stacked_stat

    @property
    def n_rows(self) -> int:
        """The number of items on the statistic's item axis (what the bootstrap resamples)."""
        return len(self.F) if self.groups is None else len(self.groups)

    def item_features(self) -> np.ndarray:
        """The (n_items, p) features, one row per item (expanded when the statistic is compact)."""
        return self.F if self.groups is None else self.F[self.groups]

    def totals(self) -> np.ndarray:
        """The (1, p) features summed over all items."""
        if self.groups is None:
            return self.F.sum(0, keepdims=True)
        return (np.bincount(self.groups, minlength=len(self.F)).astype(float) @ self.F)[None, :]

    def value(self) -> float:
        """The point estimate on all items."""
        return point(self)


def safe_div(a, b):
    """a / b with NaN where |b| < 1e-12."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.true_divide(a, b)
    return np.where(np.abs(b) < 1e-12, np.nan, out)


def row_groups(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(groups, first) of an (n, r) integer matrix: equal rows share a group; ``first`` is one row per group."""
    rows = np.asarray(rows)
    if rows.ndim == 1:
        rows = rows[:, None]
    lo = rows.min(initial=0)
    base = int(rows.max(initial=0)) - int(lo) + 1
    if rows.shape[1] * np.log2(max(base, 2)) < 62:  # one int64 key per row
        key = (rows - lo).astype(np.int64) @ (base ** np.arange(rows.shape[1], dtype=np.int64))
        _, first, groups = np.unique(key, return_index=True, return_inverse=True)
    else:
        _, first, groups = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    return groups.ravel().astype(np.int64), first


def shrinks(groups: np.ndarray, first: np.ndarray) -> bool:
    """True when the distinct rows (``first``) are few enough against the items (``groups``) to compact."""
    return len(groups) > 0 and len(first) <= _MIN_SHRINK * len(groups)


def compact(st: Stat, groups: np.ndarray, first: np.ndarray) -> Stat:
    """``st`` on its distinct feature rows when items of one group (:func:`row_groups`) share features.

    Returned unchanged when it is a rank statistic, already compact, the groups barely shrink the
    items, or some item's features differ from its group's (the features are then not a function
    of what ``groups`` encodes).
    """
    if st.rank or st.groups is not None or len(groups) != len(st.F) or not shrinks(groups, first):
        return st
    U = st.F[first]
    if not np.array_equal(U[groups], st.F, equal_nan=True):
        return st
    return replace(st, F=U, groups=groups)


def _rank_value(kind: str, x: np.ndarray, y: np.ndarray) -> float:
    from scipy import stats as sps  # only rank correlations need it

    if len(x) < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        return np.nan
    return sps.spearmanr(x, y)[0] if kind == "spearman" else sps.kendalltau(x, y)[0]


def _rank_rows(st: Stat, rows: np.ndarray) -> float:
    sel = st.F[rows]
    sel = sel[sel[:, 0] > 0]
    return _rank_value(st.rank, sel[:, 1], sel[:, 2])


def point(st: Stat) -> float:
    """The point estimate of ``st`` on all items."""
    if st.rank:
        return float(_rank_rows(st, np.arange(len(st.F))))
    return float(st.fn(st.totals())[0])


def _draw_counts(idx: np.ndarray, groups: np.ndarray | None, rows: int) -> np.ndarray:
    """(b, rows) float counts: how often each item (or each group's items) was drawn in each resample.

    One ``bincount`` per block of resamples (offset by ``rows`` per resample): the same integers as one
    ``bincount`` per resample, a few times faster; blocks of about ``_COUNT_CELLS`` cells stay in cache.
    """
    b, n = idx.shape
    W = np.empty((b, rows))
    step = max(1, int(_COUNT_CELLS // max(n, rows, 1)))
    off = (np.arange(min(step, b)) * rows)[:, None]
    for s in range(0, b, step):
        blk = idx[s : s + step] if groups is None else groups[idx[s : s + step]]
        k = len(blk)
        W[s : s + k] = np.bincount((blk + off[:k]).ravel(), minlength=k * rows).reshape(k, rows)
    return W


def _exact_in_float32(F: np.ndarray, n: int) -> bool:
    """True when counts @ F is exact in float32: integer features and every sum below 2**24 (e.g. one-hot cells)."""
    if not F.size or not np.array_equal(F[:64], np.round(F[:64])):  # most fractional features show at once
        return False
    return n * float(np.abs(F).max()) < 2**24 and bool(np.array_equal(F, np.round(F)))


def _one_blas_thread():
    """Context: BLAS on one thread. The bootstrap's products are many and small; OpenBLAS threads spin between
    them, and on a busy machine that cost 3x the time (37 s instead of 11 s on 1M rows, measured)."""
    ctl = _blas_controller()
    return nullcontext() if ctl is None else ctl.limit(limits=1, user_api="blas")


@functools.cache
def _blas_controller():
    """The thread pools of the loaded libraries, found once: scanning them costs milliseconds per call
    (``threadpool_limits`` reads ``/proc/self/maps`` each time), more than a small bootstrap itself."""
    try:
        from threadpoolctl import ThreadpoolController  # scikit-learn's dependency
    except ImportError:  # pragma: no cover
        return None
    return ThreadpoolController()


def replicates(stats: Sequence[Stat], n_boot: int, seed, chunk: int | None = None) -> np.ndarray:
    """Bootstrap replicates (n_boot, len(stats)), all stats resampled with the same item draws.

    A statistic on fewer than ``MIN_CI_ITEMS`` items gets NaN replicates (the draws of the others are
    the same with or without it)."""
    n = stats[0].n_rows
    if any(st.n_rows != n for st in stats):
        raise ValueError(f"statistics on different item axes ({sorted({st.n_rows for st in stats})} items)")
    rng = np.random.default_rng(seed)
    chunk = chunk or max(1, min(n_boot, int(_CHUNK_CELLS // max(n, 1))))
    out = np.empty((n_boot, len(stats)))
    # integer features (contingency cells) multiply in float32 at half the cost, with the same exact sums
    few = {j for j, st in enumerate(stats) if st.n_items < MIN_CI_ITEMS}
    f32 = {j: st.F.astype(np.float32) for j, st in enumerate(stats)
           if j not in few and not st.rank and _exact_in_float32(st.F, n)}
    pos = 0
    with _one_blas_thread():
        while pos < n_boot:
            b = min(chunk, n_boot - pos)
            idx = item_draws(n, b, rng)
            counts: dict[tuple, np.ndarray] = {}  # one count matrix per item grouping (and float type), shared
            batch: dict[tuple, list] = {}  # stacked statistics by function: one call each (stacked_stat)
            for j, st in enumerate(stats):
                if j in few:
                    out[pos : pos + b, j] = np.nan
                    continue
                if st.rank:
                    out[pos : pos + b, j] = [_rank_rows(st, row) for row in idx]
                    continue
                key = (id(st.groups), np.float64)
                if key not in counts:
                    counts[key] = _draw_counts(idx, st.groups, len(st.F))
                if j in f32:
                    key32 = (id(st.groups), np.float32)
                    if key32 not in counts:
                        counts[key32] = counts[key].astype(np.float32)
                    S = (counts[key32] @ f32[j]).astype(np.float64)
                else:
                    S = counts[key] @ st.F
                if st.stack is not None:
                    batch.setdefault((id(st.stack[0]), st.stack[2]), []).append((j, (S, st.stack)))
                else:
                    out[pos : pos + b, j] = st.fn(S)
            for group in batch.values():
                for (j, _), v in zip(group, _stacked_batch([g for _, g in group], b)):
                    out[pos : pos + b, j] = v
            pos += b
    return out


def jackknife(st: Stat) -> np.ndarray:
    """Leave-one-item-out values (only items that carry data)."""
    if st.rank:
        sel = st.F[np.flatnonzero(np.abs(st.F).sum(1) > 0)]
        return np.array([_rank_value(st.rank, np.delete(sel[:, 1], i), np.delete(sel[:, 2], i))
                         for i in range(len(sel))])
    tot = st.totals()
    carries = np.abs(st.F).sum(1) > 0
    rows = np.flatnonzero(carries)
    vals = np.full(len(st.F), np.nan)
    for s in range(0, len(rows), 2048):
        vals[rows[s : s + 2048]] = st.fn(tot - st.F[rows[s : s + 2048]])
    if st.groups is None:
        return vals[rows]
    return vals[st.groups[carries[st.groups]]]  # one value per item, in item order


def _shared_groups(stats: Sequence[Stat]) -> np.ndarray | None:
    """The item grouping every statistic shares (the same array), else None."""
    g = stats[0].groups
    return g if g is not None and all(s.groups is g for s in stats) else None


def mean_stat(stats: Sequence[Stat], n_items: int, *, skip_undefined: bool = False) -> Stat:
    """Mean of several statistics over one item axis; ``skip_undefined`` averages the defined ones."""
    groups = _shared_groups(stats)
    F = np.hstack([s.F if groups is not None else s.item_features() for s in stats])
    cuts = np.cumsum([0] + [s.F.shape[1] for s in stats])
    fns = [s.fn for s in stats]  # not the stats: their per-item features need not stay alive

    def fn(S):
        return _mean_of(np.array([f(S[:, a:b]) for f, a, b in zip(fns, cuts[:-1], cuts[1:])]), skip_undefined)

    return Stat(F, fn, n_items, groups=groups)


def _mean_of(vals: np.ndarray, skip_undefined: bool) -> np.ndarray:
    """The mean over the first axis of (statistics, m) values; ``skip_undefined``: of the finite ones."""
    if skip_undefined:
        with np.errstate(all="ignore"):
            cnt = np.isfinite(vals).sum(0)
            return np.where(cnt > 0, np.nansum(vals, 0) / np.maximum(cnt, 1), np.nan)
    return vals.mean(0)


def _stack_values(v: np.ndarray, m: int, s: int, mean: str) -> np.ndarray:
    """(m,) values of a stacked statistic from the (m * s,) values of its ``s`` blocks (see :func:`stacked_stat`)."""
    vals = v.reshape(m, s)
    if not mean:
        return vals[:, 0]
    return _mean_of(np.ascontiguousarray(vals.T), mean == "skip_undefined")  # (s, m), as mean_stat builds it


def stacked_stat(F3: np.ndarray, fn: Callable[[np.ndarray], np.ndarray], n_items: int, *, mean: bool = False,
                 skip_undefined: bool = False) -> Stat:
    """A statistic on ``s`` blocks of features that one row-wise function ``fn`` maps to values.

    ``F3`` (n_items, s, p): ``s = 1`` is the statistic ``Stat(F3[:, 0], fn, n_items)``; with ``mean`` it is
    ``mean_stat([Stat(F3[:, i], fn, .) for i in range(s)], n_items, skip_undefined=...)``. ``fn`` must
    treat each row of its (m, p) sums alone, as the built-in label coefficients do (elementwise arithmetic
    and sums within a row): then every block of every stacked statistic that shares ``fn`` can go through
    one call, here and in :func:`replicates` and :func:`points`, with the same values.
    """
    n, s, p = F3.shape
    if s != 1 and not mean:
        raise ValueError("several blocks of features need mean=True")
    how = ("skip_undefined" if skip_undefined else "plain") if mean else ""

    def stacked_fn(S):
        return _stack_values(fn(np.ascontiguousarray(S).reshape(len(S) * s, p)), len(S), s, how)

    return Stat(np.ascontiguousarray(F3).reshape(n, s * p), stacked_fn, n_items, stack=(fn, s, p, how))


def _pruned_mean(fn: Callable, S: np.ndarray, m: int, s: int, p: int) -> np.ndarray:
    """The plain mean of ``s`` blocks, a row's later blocks evaluated only while its values are not NaN.

    One NaN block makes a row's mean NaN. The (s, m) values keep NaN where they were not evaluated, so
    the mean (of the same shape as in :func:`mean_stat`) is the same numbers; with many blocks on few
    items (a sparse panel's leave-one-out ceiling) most rows are NaN after the first blocks.
    """
    S3 = np.ascontiguousarray(S).reshape(m, s, p)
    vals = np.full((s, m), np.nan)
    alive = np.arange(m)
    for a in range(0, s, _PRUNE_BLOCK):
        if not len(alive):
            break
        k = min(_PRUNE_BLOCK, s - a)
        v = fn(S3[alive, a : a + k].reshape(len(alive) * k, p)).reshape(len(alive), k)
        vals[a : a + k, alive] = v.T
        alive = alive[~np.isnan(v).any(1)]
    return _mean_of(vals, False)


def _stacked_batch(group: list[tuple], m: int) -> list[np.ndarray]:
    """Values of stacked statistics sharing one ``fn``: [(S (m, s * p), stack)] -> one call of ``fn``
    (a plain mean of many blocks on its own, :func:`_pruned_mean`)."""
    fn = group[0][1][0]
    pruned = [how == "plain" and s > _PRUNE_BLOCK for _, (_, s, _, how) in group]
    joint = [np.ascontiguousarray(S).reshape(m * st[1], st[2]) for (S, st), pr in zip(group, pruned) if not pr]
    v = fn(np.concatenate(joint)) if joint else None
    out, off = [], 0
    for (S, (_, s, p, how)), pr in zip(group, pruned):
        if pr:
            out.append(_pruned_mean(fn, S, m, s, p))
            continue
        out.append(_stack_values(v[off : off + m * s], m, s, how))
        off += m * s
    return out


def points(stats: Sequence[Stat]) -> np.ndarray:
    """The point estimates of ``stats`` (:func:`point`); stacked statistics that share a function in one call."""
    out = np.empty(len(stats))
    batch: dict[tuple, list] = {}
    for j, st in enumerate(stats):
        if st.stack is None or st.groups is not None:
            out[j] = point(st)
        else:
            batch.setdefault((id(st.stack[0]), st.stack[2]), []).append((j, (st.totals(), st.stack)))
    for group in batch.values():
        for (j, _), v in zip(group, _stacked_batch([g for _, g in group], 1)):
            out[j] = v[0]
    return out


def pooled_stat(stats: Sequence[Stat], n_items: int) -> Stat:
    """One statistic on the summed per-item features of several same-shaped statistics."""
    groups = _shared_groups(stats)
    F = np.sum([s.F if groups is not None else s.item_features() for s in stats], axis=0)
    return Stat(F, stats[0].fn, n_items, groups=groups)
