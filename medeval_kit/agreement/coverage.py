"""Does a design call equally noisy judges equal? The coverage of Δ's CI when the true Δ is 0."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.agreement import registry
from medeval_kit.agreement.ceiling import _percentile
from medeval_kit.agreement.consensus import vote_counts
from medeval_kit.agreement.data import MAX_CATEGORIES, AgreementError, count_matrix
from medeval_kit.agreement.designs import (
    DESIGNS,
    _check,
    _pooled,
    choose_average,
    delta_interval,
    judge_vs_humans,
)
from medeval_kit.agreement.engine import Stat, mean_stat, points, replicates, stacked_stat
from medeval_kit.agreement.forms import pair_features, pair_stat
from medeval_kit.docstrings import shared_docs
from medeval_kit.results import result_frame
from medeval_kit.stats import wilson_interval

__all__ = ["PANELS", "equal_noise_coverage"]

PANELS = {
    "dense3": dict(n_humans=3),
    "two": dict(n_humans=2),
    "sparse": dict(n_humans=60, labels_per_item=(2, 4)),
}
"""Panel shapes of the simulation: keywords of :func:`~medeval_kit.datasets.synthetic.synthetic_panel`."""


def _covered(t: pd.DataFrame, metric: str, design: str, n_boot: int, confidence: float, seed: int) -> list[tuple]:
    """(covers 0, Δ) for every judge of one simulated table whose Δ has a CI (the reference path)."""
    tab = judge_vs_humans(t, design=design, metric=metric, n_boot=n_boot, confidence=confidence, seed=seed).table
    return [(j.delta_ci_low <= 0 <= j.delta_ci_high, j.delta) for j in tab[tab["role"] == "judge"].itertuples()
            if np.isfinite(j.delta_ci_low)]


# --------------------------------------------------------------------------- the fast path
# The simulation needs only each judge's Δ and its CI. judge_vs_humans also checks the labels, builds the
# tables, notes and verdicts, and reads every input anew per design; the fast path below reads each simulated
# table once, builds the same statistics (leave-one-out votes for all humans at once) and resamples every
# design and panel shape of a replication with one call of the engine: the draws depend only on the seed and
# the number of items, so they are the draws of judge_vs_humans, and the Δs and CIs are the same numbers
# (tests/test_jvh_fast_coverage.py checks equality against the reference path).


def panel_codes(t: pd.DataFrame) -> tuple[np.ndarray, int, list, list] | None:
    """(codes, K, humans, judges) of a simulated panel: the code matrix (humans, then judges) that
    :func:`~medeval_kit.agreement.panel.panel_of` and :func:`~medeval_kit.agreement.data.prepare` give.

    Returns None for a table whose input checks could matter (other rater kinds, a criterion column,
    missing names, non-text labels, duplicates, fewer than two humans): the reference path then runs.
    """
    if not {"item", "rater", "rater_kind", "label"} <= set(t.columns) or "criterion" in t.columns:
        return None
    (rc, rnames), (kc, knames), (lc, lnames), (ii, inames) = (_factorize(t[c]) for c in
                                                            ("rater", "rater_kind", "label", "item"))
    if ((rc < 0).any() or (kc < 0).any() or (ii < 0).any() or not set(knames) <= {"human", "llm"}
            or not all(isinstance(v, str) for v in lnames + rnames + inames) or len(lnames) > MAX_CATEGORIES):
        return None
    if any(a >= b for a, b in zip(inames, inames[1:])):  # prepare sorts the items; here they come sorted
        ii = pd.factorize(t["item"], sort=True)[0]
    kind = np.full(len(rnames), -1)
    kind[rc] = kc
    if not np.array_equal(kind[rc], kc):  # a rater of two kinds
        return None
    of_kind = {k: sorted((r for r, c in zip(rnames, kind) if knames[c] == k), key=str) for k in ("human", "llm")}
    humans, judges = of_kind["human"], of_kind["llm"]
    if len(humans) < 2:
        return None
    cats = sorted(lnames, key=str)
    R = len(rnames)
    col = {r: i for i, r in enumerate(humans + judges)}
    rr = np.array([col[r] for r in rnames], dtype=np.int64)[rc]
    if np.bincount(ii * R + rr).max() > 1:  # duplicate (item, rater) rows
        return None
    code = np.array([cats.index(v) for v in lnames] + [-1], dtype=np.int64)[lc]  # lc = -1 (NA) -> -1
    codes = np.full((len(inames), R), -1, dtype=np.int64)
    codes[ii, rr] = code
    return codes, len(cats), humans, judges


def _factorize(s: pd.Series) -> tuple[np.ndarray, list]:
    """(codes, values) in order of appearance (code -1: missing)."""
    codes, uniq = s.array.factorize()
    return np.asarray(codes, dtype=np.int64), uniq.tolist()


def labelled_votes(C: np.ndarray, K: int) -> tuple[np.ndarray, ...]:
    """The labelled cells of ``C`` (items x raters codes, -1 missing) and the plurality vote of the *other*
    raters at each: ``(item, rater, code, vote, counts)``, one entry per labelled cell (vote -1: a tie or no
    other vote), and ``counts`` (n, K) the item's label counts.

    At cell (i, k) the vote is ``vote(C[:, others of k], K, "plurality", "na", rng)[0][i]``
    (:func:`~medeval_kit.agreement.consensus.vote`): the same rule on the same counts, the item's
    counts minus its own label (:func:`~medeval_kit.agreement.consensus.vote_counts`).
    """
    i, k = np.nonzero(C >= 0)
    c = C[i, k]
    N = count_matrix(C, K)
    O = N[i]
    O[np.arange(len(i)), c] -= 1.0
    return i, k, c, vote_counts(O, "plurality", "na", None)[0], N


def loo_votes(C: np.ndarray, K: int) -> np.ndarray:
    """(items, raters) plurality votes of the other raters where a rater labelled the item, -1 elsewhere.

    Examples
    --------
    >>> loo_votes(np.array([[0, 0, 1], [1, -1, 1]]), 2).tolist()
    [[-1, -1, 0], [1, -1, 1]]
    """
    i, k, _, v, _ = labelled_votes(C, K)
    out = np.full(C.shape, -1, dtype=np.int64)
    out[i, k] = v
    return out


def _builtin(metric: str) -> bool:
    """True for the package's own coefficients: they compute each row of their sums alone."""
    return registry.get(metric).fn.__module__ == "medeval_kit.agreement.coefficients"


def _row_values(fn, totals: np.ndarray, builtin: bool) -> np.ndarray:
    """``fn`` on each row of ``totals`` (r, p) as on that row alone: one call for a built-in coefficient."""
    return fn(totals) if builtin else np.array([fn(totals[h : h + 1])[0] for h in range(len(totals))])


def _cells(n: int, K: int, items: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """(n, K*K) per-item counts of contingency ``cells`` (float, as summed one-hot features)."""
    return np.bincount(items * K * K + cells, minlength=n * K * K).reshape(n, K * K).astype(float)


def _stacked(n: int, K: int, items, subs, cells, s: int) -> np.ndarray:
    """(n, s, K*K) one-hot features of ``s`` pair statistics (sub-statistic ``subs`` of each cell)."""
    F3 = np.zeros((n, s, K * K))
    F3[items, subs, cells] = 1.0
    return F3


def _pair(F: np.ndarray, fn, n_items: int, builtin: bool) -> Stat:
    """The pair statistic ``Stat(F, fn, n_items)`` (stacked for a built-in coefficient: see ``stacked_stat``)."""
    return stacked_stat(F[:, None, :], fn, n_items) if builtin else Stat(F, fn, n_items)


def _mean(F3: np.ndarray, fn, n_items: int, builtin: bool, skip_undefined: bool) -> Stat:
    """``mean_stat`` of the pair statistics in ``F3`` (stacked for a built-in coefficient)."""
    if builtin:
        return stacked_stat(F3, fn, n_items, mean=True, skip_undefined=skip_undefined)
    return mean_stat([Stat(F3[:, s], fn, 0) for s in range(F3.shape[1])], n_items, skip_undefined=skip_undefined)


def _loo_specs(codes, K, nH, metric, fn, average="auto") -> list[tuple]:
    """(judge stat, humans-on-the-judge's-items stat, "verdict") per judge: the sides of ``_loo`` in designs.

    Each human's reference is the others' vote at the items the human labelled; the judge and the
    human are scored on those with a vote that the judge also labelled; per-human statistics are
    averaged (``mean_stat``, undefined ones skipped) or pooled, as :func:`choose_average` says.
    """
    n = len(codes)
    i, k, c, ref, _ = labelled_votes(codes[:, :nH], K)
    ok = ref >= 0
    i, k, c, ref = i[ok], k[ok], c[ok], ref[ok]
    sizes = np.bincount(k, minlength=nH)
    how, enter, _ = choose_average(sizes, average)
    builtin = _builtin(metric)
    undefined = []
    if how == "humans":  # each human's own value: designs' _point of the human's statistic
        totals = np.bincount(k * K * K + ref * K + c, minlength=nH * K * K).reshape(nH, K * K).astype(float)
        vals = _row_values(fn, totals, builtin)
        undefined = [h for h in np.flatnonzero(enter) if not (sizes[h] and np.isfinite(vals[h]))]
    idx = [h for h in np.flatnonzero(enter) if h not in undefined]
    if not idx:
        raise AgreementError(f"{metric} is undefined for every human against the others' consensus "
                             "(too few items, or a single category used)")
    pos = np.full(nH, -1)
    pos[idx] = np.arange(len(idx))
    specs = []
    for j in range(nH, codes.shape[1]):
        cj = codes[i, j]
        v = (pos[k] >= 0) & (cj >= 0)
        n_j = int(np.count_nonzero(np.bincount(i[v], minlength=n)))
        if how == "humans":
            a = _mean(_stacked(n, K, i[v], pos[k[v]], ref[v] * K + cj[v], len(idx)), fn, n_j, builtin, True)
            b = _mean(_stacked(n, K, i[v], pos[k[v]], ref[v] * K + c[v], len(idx)), fn, n_j, builtin, True)
        else:
            a = _pair(_cells(n, K, i[v], ref[v] * K + cj[v]), fn, n_j, builtin)
            b = _pair(_cells(n, K, i[v], ref[v] * K + c[v]), fn, n_j, builtin)
        specs.append((a, b, "verdict"))
    return specs


def _medqade_specs(codes, K, nH, metric, fn, seed) -> list[tuple]:
    """(judge stat, ceiling, "medqade") per judge: ``judge_vs_ceiling`` (leave-one-out ceiling) in ceiling.

    The ceiling is the plain mean over humans of each human against the others' vote; when one human's
    value is undefined the mean is NaN, so is Δ, and there is nothing to resample.
    """
    if nH < 3:
        return []  # no ceiling: no delta
    n = len(codes)
    C = codes[:, :nH]
    i, k, c, cons, N = labelled_votes(C, K)
    ref = vote_counts(N, "plurality", "na", np.random.default_rng(seed))[0]  # = vote(C, K, ...)
    ok = cons >= 0
    cells = cons[ok] * K + c[ok]
    totals = np.bincount(k[ok] * K * K + cells, minlength=nH * K * K).reshape(nH, K * K).astype(float)
    builtin = _builtin(metric)
    if not np.isfinite(_row_values(fn, totals, builtin)).all():
        return []
    ceiling = _mean(_stacked(n, K, i[ok], k[ok], cells, nH), fn, int((ref >= 0).sum()), builtin, False)
    specs = []
    for j in range(nH, codes.shape[1]):
        F, n_j = pair_features(ref, codes[:, j], K)  # pair_stat(metric, ref, codes[:, j], K)
        specs.append((_pair(F, fn, n_j, builtin), ceiling, "medqade"))
    return specs


def _fast_specs(t: pd.DataFrame, metric: str, designs: Sequence[str], seed: int, fns: dict | None = None
                ) -> dict | None:
    """Each design's delta specs of one simulated table (None: run the reference path).

    ``fns`` keeps one coefficient function per number of categories, so that the statistics of all
    tables share it (and go through one evaluation, see ``stacked_stat``).
    """
    got = panel_codes(t)
    if got is None:
        return None
    codes, K, humans, judges = got
    nH = len(humans)
    fns = {} if fns is None else fns
    if K not in fns:  # what pair_stat(metric, a, b, K) computes, whatever a and b
        fns[K] = pair_stat(metric, np.zeros(1, int), np.zeros(1, int), K).fn
    fn = fns[K]
    out = {}
    for d in designs:
        if d == "loo":
            out[d] = _loo_specs(codes, K, nH, metric, fn)
        elif d == "pooled":
            sides = _pooled(codes, K, list(range(nH)), list(range(nH, len(humans) + len(judges))), judges, metric,
                            None, "item")[0]
            b = _builtin(metric)
            out[d] = [(_pair(sides[j]["stat"].F, fn, sides[j]["stat"].n_items, b),
                       _pair(sides[j]["ref"].F, fn, sides[j]["ref"].n_items, b), "verdict") for j in judges]
        else:
            out[d] = _medqade_specs(codes, K, nH, metric, fn, seed)
    return out


def paired_deltas(specs: list[tuple], n_boot: int, seed: int) -> list[tuple[float, np.ndarray | None]]:
    """(Δ, paired replicates of Δ) of each spec ``(a, b, kind)``: Δ = a − b; every statistic's replicates
    from one set of draws (None: no bootstrap, or Δ not finite, as in ``_assemble`` of designs).

    The draws depend only on (items, ``n_boot``, ``seed``), so they are those of
    :func:`~medeval_kit.agreement.judge_vs_humans` with the same seed, and the replicates the same floats.
    """
    uniq = list({id(st): st for a, b, _ in specs for st in (a, b)}.values())
    est = {id(st): v if st.n_items else np.nan for st, v in zip(uniq, points(uniq))}  # designs' _point
    deltas = [est[id(a)] - est[id(b)] for a, b, _ in specs]
    need = {}
    for (a, b, _), dl in zip(specs, deltas):
        if n_boot and np.isfinite(dl):
            need.setdefault(id(a), a)
            need.setdefault(id(b), b)
    by_axis: dict[int, list] = {}
    for k, st in need.items():
        by_axis.setdefault(st.n_rows, []).append((k, st))
    reps = {}
    for group in by_axis.values():  # the draws depend only on (items, n_boot, seed): those of judge_vs_humans
        r = replicates([st for _, st in group], n_boot, seed)
        for c, (k, _) in enumerate(group):
            reps[k] = r[:, c]
    return [(dl, reps[id(a)] - reps[id(b)] if id(a) in reps and np.isfinite(dl) else None)
            for (a, b, _), dl in zip(specs, deltas)]


def _evaluate(specs: list[tuple], n_boot: int, confidence: float, seed: int) -> list[tuple[float, float, float]]:
    """(Δ, CI low, CI high) of each spec, the replicates of every statistic from one set of draws.

    ``"verdict"``: Δ's CI as ``verdict_columns`` in designs; ``"medqade"``: as ``_judge_row`` in ceiling.
    A Δ that is not finite gets no CI in either, so its statistics are not resampled.
    """
    out = []
    for (_, _, kind), (dl, d) in zip(specs, paired_deltas(specs, n_boot, seed)):
        lo = hi = np.nan
        if d is not None:
            if kind == "verdict":
                lo, hi = delta_interval(d, confidence)
            else:
                d = d[np.isfinite(d)]
                if len(d):
                    lo, hi = _percentile(dl, d, confidence)
        out.append((dl, lo, hi))
    return out


@shared_docs
def equal_noise_coverage(
    n_reps: int = 200,
    *,
    panels: Sequence[str] = tuple(PANELS),
    designs: Sequence[str] = DESIGNS,
    n_items: int = 150,
    n_judges: int = 1,
    kappa: float = 0.5,
    metric: str = "cohen_kappa",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    progress: bool = False,
    fast_path: bool = True,
) -> pd.DataFrame:
    """Coverage of Δ's CI when the judges have exactly the humans' noise (true Δ = 0).

    Each replication draws :func:`~medeval_kit.datasets.synthetic.synthetic_panel` for each panel
    shape (``dense3``: 3 humans; ``two``: 2 humans; ``sparse``: 60 humans, 2-4 per item) and runs
    every design on the same table.

    Parameters
    ----------
    n_reps : int, default 200
        Simulated panels per shape.
    panels : sequence of str, default ("dense3", "two", "sparse")
        Panel shapes.
    designs : sequence of str, default ("loo", "pooled", "medqade")
        Designs of :func:`~medeval_kit.agreement.judge_vs_humans`.
    n_items : int, default 150
        Items per simulated panel.
    n_judges : int, default 1
        Judges per panel.
    kappa : float, default 0.5
        The planted agreement of every rater with the truth.
    metric : str, default "cohen_kappa"
        The pairwise coefficient.
    {n_boot}
    {confidence}
    {seed}
    progress : bool, default False
        Show a progress bar.
    fast_path : bool, default True
        Compute only each judge's Δ and its CI, reading each table once and resampling a replication's
        designs and panels with one set of draws (the same numbers); ``False`` runs
        :func:`~medeval_kit.agreement.judge_vs_humans` per design (the reference path).

    Returns
    -------
    DataFrame
        One row per (panel, design) in the result contract: ``estimate`` = coverage with its Wilson CI,
        ``n_items`` = (replication, judge) pairs where Δ had a CI (``n_failed`` the others), plus
        ``n_reps, n_covered, mean_delta``, the ``rejection_rate`` of H0: Δ = 0 at 1 − ``confidence`` and
        the simulation's ``items_per_panel, kappa, n_boot``.

    Raises
    ------
    AgreementError
        An unknown panel shape.

    Examples
    --------
    >>> t = equal_noise_coverage(2, panels=["two"], designs=["loo"], n_items=30, n_boot=50)
    >>> t[["panel", "design", "n_reps"]].values.tolist()
    [['two', 'loo', 2]]
    """
    from tqdm.auto import tqdm

    from medeval_kit.datasets.synthetic import synthetic_panel

    unknown = [p for p in panels if p not in PANELS]
    if unknown:
        raise AgreementError(f"unknown panel(s) {unknown}; choose from {list(PANELS)}")
    for d in designs:  # judge_vs_humans' own checks, once
        _check(d, metric, "auto", "item", n_boot, confidence)
    res = {(p, d): [] for p in panels for d in designs}
    bar = tqdm(total=n_reps * len(panels), desc="equal-noise coverage", disable=not progress)
    fns: dict = {}
    for r in range(n_reps):  # each (panel, design) list still fills in replication order
        specs, keys = [], []
        for p in panels:
            t = synthetic_panel(n_items=n_items, n_judges=n_judges, kappa=kappa, seed=seed * 100003 + r, **PANELS[p])
            fast = _fast_specs(t, metric, designs, r, fns) if fast_path else None
            for d in designs:
                if fast is None:
                    res[(p, d)] += _covered(t, metric, d, n_boot, confidence, r)
                else:
                    specs += fast[d]
                    keys += [(p, d)] * len(fast[d])
            bar.update(1)
        for key, (dl, lo, hi) in zip(keys, _evaluate(specs, n_boot, confidence, r)):
            if np.isfinite(lo):
                res[key].append((lo <= 0 <= hi, dl))
    bar.close()
    rows = []
    for (p, d), v in res.items():
        n, k = len(v), int(sum(c for c, _ in v))
        lo, hi = wilson_interval(k, n, confidence=confidence)
        rows.append(dict(panel=p, design=d, estimate=k / n if n else np.nan, ci_low=lo, ci_high=hi,
                         ci_method="Wilson score interval" if n else "", n_items=n, n_failed=n_reps * n_judges - n,
                         note="" if n else "no delta under this design (e.g. MedQADE needs 3 humans)",
                         n_reps=n_reps, n_covered=k, mean_delta=float(np.mean([x for _, x in v])) if n else np.nan,
                         rejection_rate=1 - k / n if n else np.nan, items_per_panel=n_items, kappa=kappa,
                         n_boot=n_boot))
    return result_frame(rows, keys=["panel", "design"])
