"""Compiled exhaustive aspect search: every subset of 1..max_k aspects, best of each size, both objectives.

Subsets are enumerated depth-first in lexicographic order with running partial sums (one sum vector
per depth, no subset matrix). For each subset the 3 x 3 table (human A/B/tie x sign of the summed
difference) is counted in one pass over the items: each item adds its bit-field weight to three
int64 accumulators (valid, positive, negative sums) with masked adds, which vectorises. Cohen's kappa
(N a - s) / (N^2 - s) and percent agreement a / N come from the integer counts and are compared by
cross-multiplication, so ties are exact. A missing score is NaN and propagates through the sums: an
item with an unscored selected aspect drops out of that subset's table.

Items may carry a group (a cross-validation fold). The bit fields are then per (group, human block),
and one pass evaluates every subset on all items (view 0) and on all items but group g (view 1 + g),
so the in-sample search and the K training-fold searches of a cross-validation share one enumeration.

Work is split into tasks by the first two aspects; tasks run in parallel (numba prange) and the
per-task winners are merged in lexicographic task order, so results do not depend on threads.
"""

from __future__ import annotations

import math
import time

import numba as nb
import numpy as np

__all__ = ["exhaustive_best", "warm_up", "fits", "COMPILE", "MAX_ITEMS", "SERIAL_SUBSETS"]

MAX_ITEMS = 50_000
"""Most items the compiled search takes (kappa's numerator x denominator must fit in int64)."""
_WIDE = 21  # bits per count field without groups: three fields (A, B, tie) per int64
SERIAL_SUBSETS = 1_000_000
"""Searches over fewer subsets run on one thread (waking the thread team costs more than it saves,
most of all on a busy machine); larger ones use numba's threads."""

COMPILE: dict[str, float] = {}
"""Seconds of the first call in this process (compile, or load from numba's on-disk cache)."""


@nb.njit(cache=True, inline="always")
def _accumulate(P, Dj, Wt, n, tol):
    """Bit-field sums of item weights where P + Dj is valid (not NaN), > tol and < -tol."""
    av = 0
    ap = 0
    an = 0
    for i in range(n):  # one flat loop from 0: numba's index checks otherwise stop LLVM vectorising
        x = P[i] + Dj[i]
        w = Wt[i]
        av += w if x == x else 0
        ap += w if x > tol else 0
        an += w if x < -tol else 0
    return av, ap, an


@nb.njit(cache=True, inline="always")
def _offer(r, t, size, num, den, a, N, combo, last, rec, best):
    """Keep subset combo[:size-1] + [last] for each objective in which it beats slot t's best of its size.

    ``rec[r, t, size, o]`` holds the objective's best (num, den, a, N), starting at (-1, 0, -1, 0).
    The objective x / y (kappa num / den, agreement a / N) beats bx / by when x by > bx y: with
    y, by > 0 that is x / y > bx / by; the start (by = 0) loses to every defined value (y > 0), and
    an undefined value (y = 0, then x <= 0) never wins. Equal values do not replace the first.
    """
    for o in range(2):
        x = num if o == 0 else a
        y = den if o == 0 else N
        if x * rec[r, t, size, o, 2 * o + 1] > rec[r, t, size, o, 2 * o] * y:
            rec[r, t, size, o, 0] = num
            rec[r, t, size, o, 1] = den
            rec[r, t, size, o, 2] = a
            rec[r, t, size, o, 3] = N
            for q in range(size - 1):
                best[r, t, size, o, q] = combo[q]
            best[r, t, size, o, size - 1] = last


@nb.njit(cache=True, inline="always")
def _stats(vA, vB, vT, pA, pB, pT, nA, nB, nT):
    """(num, den, a, N): kappa = num / den, agreement = a / N, from the nine counts."""
    N = vA + vB + vT
    a = pA + nB + (vT - pT - nT)
    cpos = pA + pB + pT
    cneg = nA + nB + nT
    s = vA * cpos + vB * cneg + vT * (N - cpos - cneg)
    return N * a - s, N * N - s, a, N


@nb.njit(cache=True, inline="always")
def _record(t, size, av, ap, an, G, w, C, combo, last, rec, best):
    """Unpack the counts per group and offer the subset to every view (all items; all but group g)."""
    f = (1 << w) - 1
    if G == 1:  # no groups (an in-sample search): one view, no per-group table
        num, den, a, N = _stats(av & f, (av >> w) & f, (av >> (2 * w)) & f, ap & f, (ap >> w) & f,
                                (ap >> (2 * w)) & f, an & f, (an >> w) & f, (an >> (2 * w)) & f)
        _offer(0, t, size, num, den, a, N, combo, last, rec, best)
        return
    vA = vB = vT = pA = pB = pT = nA = nB = nT = 0
    for g in range(G):
        sh = 3 * w * g
        C[g, 0] = (av >> sh) & f
        C[g, 1] = (av >> (sh + w)) & f
        C[g, 2] = (av >> (sh + 2 * w)) & f
        C[g, 3] = (ap >> sh) & f
        C[g, 4] = (ap >> (sh + w)) & f
        C[g, 5] = (ap >> (sh + 2 * w)) & f
        C[g, 6] = (an >> sh) & f
        C[g, 7] = (an >> (sh + w)) & f
        C[g, 8] = (an >> (sh + 2 * w)) & f
        vA += C[g, 0]
        vB += C[g, 1]
        vT += C[g, 2]
        pA += C[g, 3]
        pB += C[g, 4]
        pT += C[g, 5]
        nA += C[g, 6]
        nB += C[g, 7]
        nT += C[g, 8]
    num, den, a, N = _stats(vA, vB, vT, pA, pB, pT, nA, nB, nT)
    _offer(0, t, size, num, den, a, N, combo, last, rec, best)
    for g in range(G):
        num, den, a, N = _stats(vA - C[g, 0], vB - C[g, 1], vT - C[g, 2], pA - C[g, 3], pB - C[g, 4],
                                pT - C[g, 5], nA - C[g, 6], nB - C[g, 7], nT - C[g, 8])
        _offer(1 + g, t, size, num, den, a, N, combo, last, rec, best)


@nb.njit(cache=True)
def _task(t, c0, c1, D, Wt, G, w, max_k, tol, S, C, combo, rec, best):
    """Slot t: all subsets whose two smallest aspects are c0 < c1, depth-first in lexicographic order."""
    p, n = D.shape
    combo[0] = c0
    combo[1] = c1
    for i in range(n):
        S[0, i] = D[c0, i]
    av, ap, an = _accumulate(S[0], D[c1], Wt, n, tol)
    _record(t, 2, av, ap, an, G, w, C, combo, c1, rec, best)
    if max_k == 2:
        return
    for i in range(n):
        S[1, i] = S[0, i] + D[c1, i]
    d = 1  # depth of the current node: combo[:d+1] is evaluated and S[d] holds its sums
    while True:
        if d + 2 == max_k:  # children are leaves: evaluate them without storing their sums
            for j in range(combo[d] + 1, p):
                av, ap, an = _accumulate(S[d], D[j], Wt, n, tol)
                _record(t, max_k, av, ap, an, G, w, C, combo, j, rec, best)
        elif combo[d] + 1 < p:  # descend to the first child
            d += 1
            combo[d] = combo[d - 1] + 1
            av, ap, an = _accumulate(S[d - 1], D[combo[d]], Wt, n, tol)
            _record(t, d + 1, av, ap, an, G, w, C, combo, combo[d], rec, best)
            for i in range(n):
                S[d, i] = S[d - 1, i] + D[combo[d], i]
            continue
        while d > 1:  # next sibling, climbing while a depth is exhausted
            combo[d] += 1
            if combo[d] < p:
                break
            d -= 1
        if d == 1:
            return
        av, ap, an = _accumulate(S[d - 1], D[combo[d]], Wt, n, tol)
        _record(t, d + 1, av, ap, an, G, w, C, combo, combo[d], rec, best)
        for i in range(n):
            S[d, i] = S[d - 1, i] + D[combo[d], i]


@nb.njit(cache=True, parallel=True)
def _search(D, Wt, G, w, max_k, tol, tasks, dealt):
    """Per view, slot and size, the best subset for kappa (objective 0) and agreement (objective 1).

    Slot 0 holds the single aspects, slot 1 + t the subsets of task ``tasks[t]`` = (c0, c1);
    ``dealt`` (workers x m) lists the tasks each worker runs, padded with -1.
    """
    p, n = D.shape
    T = tasks.shape[0]
    V = 1 if G == 1 else G + 1
    rec = np.zeros((V, T + 1, max_k + 1, 2, 4), dtype=np.int64)
    rec[:, :, :, :, 0] = -1
    rec[:, :, :, :, 2] = -1
    best = np.full((V, T + 1, max_k + 1, 2, max_k), -1, dtype=np.int64)
    zero = np.zeros(n)
    C = np.zeros((G, 9), dtype=np.int64)
    combo = np.zeros(max_k, dtype=np.int64)
    for j in range(p):
        av, ap, an = _accumulate(zero, D[j], Wt, n, tol)
        _record(0, 1, av, ap, an, G, w, C, combo, j, rec, best)
    for wk in nb.prange(dealt.shape[0]):
        S = np.empty((max(max_k, 2), n))
        Cw = np.zeros((G, 9), dtype=np.int64)
        cw = np.zeros(max_k, dtype=np.int64)
        for r in range(dealt.shape[1]):
            t = dealt[wk, r]
            if t < 0:
                break
            _task(1 + t, tasks[t, 0], tasks[t, 1], D, Wt, G, w, max_k, tol, S, Cw, cw, rec, best)
    return rec, best


@nb.njit(cache=True)
def _merge(rec, best):
    """Per view, size and objective: the winner over slots in order (same rule as :func:`_offer`).

    Returns (V, K + 1, 2, 4) counts (num, den, a, N) and (V, K + 1, 2, K) aspect indices; a size
    without any defined value keeps den / N = 0 and indices -1 (the caller fills its first subset).
    """
    V, T, K1, _, _ = rec.shape
    out = np.zeros((V, K1, 2, 4), dtype=np.int64)
    out[:, :, :, 0] = -1
    out[:, :, :, 2] = -1
    won = np.full((V, K1, 2, best.shape[4]), -1, dtype=np.int64)
    for r in range(V):
        for size in range(1, K1):
            for o in range(2):
                for t in range(T):
                    if rec[r, t, size, o, 2 * o] * out[r, size, o, 2 * o + 1] > \
                            out[r, size, o, 2 * o] * rec[r, t, size, o, 2 * o + 1]:
                        out[r, size, o] = rec[r, t, size, o]
                        won[r, size, o] = best[r, t, size, o]
    return out, won


def _tasks(p: int) -> np.ndarray:
    """Task (c0, c1) pairs in lexicographic order (which is roughly largest first)."""
    return np.array([(a, b) for a in range(p) for b in range(a + 1, p)], dtype=np.int64).reshape(-1, 2)


def _deal(T: int, workers: int) -> np.ndarray:
    """Tasks 0..T-1 dealt to workers back and forth (0, 1, ..., W-1, W-1, ..., 0, ...), padded with -1."""
    workers = max(1, min(workers, T))
    dealt: list[list[int]] = [[] for _ in range(workers)]
    for r in range(T):
        lap, pos = divmod(r, workers)
        dealt[pos if lap % 2 == 0 else workers - 1 - pos].append(r)
    out = np.full((workers, max(1, max(map(len, dealt)))), -1, dtype=np.int64)
    for w, ts in enumerate(dealt):
        out[w, :len(ts)] = ts
    return out


def _field_width(block: np.ndarray, groups: np.ndarray, G: int) -> int:
    """Bits per (group, block) count field: 21 without groups, else enough for the largest cell (0 if > 63 bits)."""
    if G == 1:
        return _WIDE
    cells = np.bincount(3 * groups + block, minlength=3 * G)
    w = max(1, int(cells.max()).bit_length())
    return w if 3 * G * w <= 63 else 0


def fits(n_items: int, groups: np.ndarray | None = None, human: np.ndarray | None = None) -> bool:
    """Whether the compiled search takes this many items (and these groups in one pass)."""
    if n_items > MAX_ITEMS:
        return False
    if groups is None:
        return True
    block = np.select([human == 1, human == -1], [0, 1], 2)
    return _field_width(block, np.asarray(groups), int(np.max(groups)) + 1) > 0


def exhaustive_best(D: np.ndarray, M: np.ndarray, human: np.ndarray, max_k: int, tol: float,
                    groups: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Best subset of each size 1..max_k for kappa and agreement, first in lexicographic order on ties.

    ``D`` items x aspects (any value where ``M`` is True), ``M`` missing mask, ``human`` codes
    1 (A) / -1 (B) / 0 (tie); a sum within ``tol`` of 0 is a tie. ``groups`` (optional, 0..G-1 per
    item): also search on all items but group g, for each g. Returns ``counts`` (views, max_k, 2, 4):
    the winner's (kappa numerator, kappa denominator, agreement numerator a, n) per view (0: all
    items; 1 + g: all but group g), size and objective (0 kappa, 1 agreement), and ``combos``
    (views, max_k, 2, max_k): its aspect indices, padded with -1. A size whose every subset has an
    undefined objective keeps its first subset.

    Aspects that are 0 on every item (scored, no difference) change no sum: the kernel enumerates
    only the other aspects and :func:`_pad_zero_aspects` rebuilds the full answer exactly (same
    winners, same ties), so a rubric with many constant aspects costs what its informative ones cost.
    """
    n, p = D.shape
    if n > MAX_ITEMS:
        raise ValueError(f"the compiled search takes at most {MAX_ITEMS:,} items; got {n:,}")
    M = np.asarray(M, dtype=bool)
    zero = ~M.any(axis=0) & ~(np.where(M, 0.0, D) != 0).any(axis=0) if n else np.zeros(p, dtype=bool)
    if zero.any():
        return _pad_zero_aspects(D, M, human, int(min(max_k, p)), tol, groups, zero)
    return _exhaustive_best(D, M, human, max_k, tol, groups)


def _pad_zero_aspects(D, M, human, max_k, tol, groups, zero):
    """:func:`exhaustive_best` when the aspects in ``zero`` are 0 on every item.

    A subset S = A + Z (A informative, Z zero aspects) has the sums, so the counts, of A. The best
    subset of size k is therefore the best over j of the informative search's winner of size j padded
    with the first k - j zero aspects (for a fixed j that padding keeps the lexicographic order of
    the informative subsets, so the informative winner padded is the first winner of its kind);
    candidates are compared in lexicographic order of the padded subsets with the kernel's rule
    (:func:`_offer`: strictly better replaces), which is the full search's first maximum.
    """
    n, p = D.shape
    nz, zc = np.flatnonzero(~zero), np.flatnonzero(zero)
    g = np.zeros(n, dtype=np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
    G = int(g.max()) + 1 if n else 1
    V = 1 if G == 1 else G + 1
    rows = [np.ones(n, dtype=bool)] + ([g != r for r in range(G)] if V > 1 else [])  # the views' items
    if len(nz):
        sub_counts, sub_combos = _exhaustive_best(D[:, nz], M[:, nz], human, min(max_k, len(nz)), tol, groups)
    X = np.where(M, np.nan, D)
    out = np.zeros((V, max_k, 2, 4), dtype=np.int64)
    won = np.full((V, max_k, 2, max_k), -1, dtype=np.int64)
    for r in range(V):
        empty = _counts(np.zeros(int(rows[r].sum())), human[rows[r]], tol)  # no informative aspect: all ties
        for k in range(1, max_k + 1):
            for o in range(2):
                cands = []  # (padded subset, counts) per informative size j
                for j in range(max(0, k - len(zc)), min(k, len(nz)) + 1):
                    cnt = empty if j == 0 else tuple(int(x) for x in sub_counts[r, j - 1, o])
                    sub = [] if j == 0 else [int(nz[c]) for c in sub_combos[r, j - 1, o, :j]]
                    cands.append((tuple(sorted(sub + [int(c) for c in zc[:k - j]])), cnt))
                bx, by, best = -1, 0, None
                for combo, cnt in sorted(cands):
                    x, y = (cnt[0], cnt[1]) if o == 0 else (cnt[2], cnt[3])
                    if x * by > bx * y:
                        bx, by, best = x, y, (combo, cnt)
                if best is None:  # no defined value: the first subset stands, as in the kernel
                    best = (tuple(range(k)), _counts(X[rows[r]][:, :k].sum(axis=1), human[rows[r]], tol))
                won[r, k - 1, o, :k] = best[0]
                out[r, k - 1, o] = best[1]
    return out, won


def _exhaustive_best(D, M, human, max_k, tol, groups=None):
    """:func:`exhaustive_best` without the zero-aspect reduction: one kernel pass over every subset."""
    n, p = D.shape
    X = np.ascontiguousarray(np.where(M, np.nan, D).T, dtype=np.float64)
    block = np.select([human == 1, human == -1], [0, 1], 2).astype(np.int64)
    g = np.zeros(n, dtype=np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
    G = int(g.max()) + 1 if n else 1
    w = _field_width(block, g, G)
    if w == 0:
        raise ValueError(f"{G} groups need more than 63 bits of counts; search the groups one at a time")
    Wt = np.left_shift(np.int64(1), w * (3 * g + block))
    max_k = int(min(max_k, p))
    tasks = _tasks(p) if max_k >= 2 else np.zeros((0, 2), dtype=np.int64)
    threads = nb.get_num_threads()
    serial = sum(math.comb(p, k) for k in range(1, max_k + 1)) < SERIAL_SUBSETS
    t0 = time.perf_counter()
    try:
        if serial:
            nb.set_num_threads(1)
        rec, best = _search(X, Wt, G, w, max_k, float(tol), tasks, _deal(len(tasks), 1 if serial else threads))
    finally:
        nb.set_num_threads(threads)
    out, won = _merge(rec, best)
    COMPILE.setdefault("search", time.perf_counter() - t0)
    for r, size, o in zip(*np.nonzero(won[:, :, :, 0] < 0)):
        if size == 0:
            continue
        rows = np.ones(n, dtype=bool) if r == 0 else g != r - 1  # no defined value: the first subset stands
        won[r, size, o, :size] = np.arange(size)
        out[r, size, o] = _counts(X.T[rows][:, :size].sum(axis=1), human[rows], tol)
    return out[:, 1:], won[:, 1:]


def _counts(sums: np.ndarray, human: np.ndarray, tol: float) -> tuple[int, int, int, int]:
    """(num, den, a, N) of one subset's summed differences (NaN: missing), as the kernel counts them."""
    ok = ~np.isnan(sums)
    pred = np.where(sums[ok] > tol, 1, np.where(sums[ok] < -tol, -1, 0))
    h = human[ok]
    N, a = int(ok.sum()), int((pred == h).sum())
    s = sum(int((h == c).sum()) * int((pred == c).sum()) for c in (1, -1, 0))
    return N * a - s, N * N - s, a, N


def warm_up() -> float:
    """Compile (or load from numba's cache) the kernels on a tiny problem; return the seconds it took."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    D = rng.integers(-2, 3, size=(6, 5)).astype(float)
    _exhaustive_best(D, np.zeros_like(D, dtype=bool), np.array([1, -1, 0, 1, -1, 0]), 4, 1e-9,
                     groups=np.array([0, 1, 0, 1, 0, 1]))
    return time.perf_counter() - t0
