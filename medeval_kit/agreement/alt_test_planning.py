"""Planning the Alt-Test: items per physician, and the ε at which a judge passes with the target power.

The same search as :func:`medeval_kit.agreement.planning.plan_judge_vs_humans`, with
:func:`medeval_kit.agreement.alt_test` as the verdict. ``alt_test`` runs once per simulated panel; the
verdict at any other ε is recomputed from its per-physician details (the same one-sided t-tests and
Benjamini–Yekutieli step-up), so the ε curve costs no extra simulation.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from functools import partial

import numpy as np
import pandas as pd
from scipy import stats as sps

from medeval_kit.agreement.alt_test import (
    DEFAULT_EPSILON,
    DEFAULT_Q_FDR,
    MIN_HUMANS_PER_ITEM,
    MIN_HUMANS_TESTED,
    MIN_ITEMS_PER_HUMAN,
    PASS_RATE,
    alt_test,
    paired_t,
)
from medeval_kit.agreement.data import AgreementError
from medeval_kit.agreement.panel import PanelError
from medeval_kit.agreement.panel_model import (
    PanelModel,
    PlanningError,
    simulate_panel,
)
from medeval_kit.agreement.planning import (
    N_BIG,
    PowerPlan,
    _check_plan,
    _draw,
    _finish,
    _pool,
    _progress,
    _rpi_list,
    _Runner,
    _search,
)
from medeval_kit.stats import wilson_interval

__all__ = ["plan_alt_test"]


# --------------------------------------------------------------------------- alt-test


def _by_reject_count(p: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
    """(rejections, tests) of Benjamini-Yekutieli at level q per row of p (NaN = not tested), as statsmodels'
    ``multipletests(method="fdr_by")``: step-up, so every hypothesis up to the largest passing rank is rejected."""
    m = np.isfinite(p).sum(1)
    ps = np.sort(np.where(np.isfinite(p), p, np.inf), axis=1)
    k = np.arange(1, p.shape[1] + 1)[None, :]
    cm = np.array([np.sum(1 / np.arange(1, x + 1)) if x else 1.0 for x in m])[:, None]
    ok = ps <= k / (m[:, None] * cm) * q
    ok &= k <= m[:, None]
    # step-up: every hypothesis up to the largest k that passes is rejected
    last = np.where(ok.any(1), p.shape[1] - np.argmax(ok[:, ::-1], axis=1), 0)
    return last, m


def _alt_pass(eps: np.ndarray, stats_: dict, q: float) -> np.ndarray:
    """alt-test verdicts at ``eps`` (one per row) from the per-human sums of alt_test's details."""
    n, dd, kk = stats_["n"], stats_["dd"], stats_["k"]
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = dd / n
        zero = kk * n == dd * dd
        var = np.where(zero, 0.0, (kk - dd * dd / n) / (n - 1))
        e = eps[:, None]
        t = np.where(zero, np.where(mean < e, -np.inf, np.where(mean > e, np.inf, np.nan)),
                     (mean - e) / np.sqrt(var / n))
        p = np.where(np.isnan(t), 1.0, sps.t.cdf(t, n - 1))
    p = np.where(stats_["tested"], p, np.nan)
    rej, m = _by_reject_count(p, q)
    return (m > 0) & (rej >= PASS_RATE * m)


def _critical_eps(stats_: dict, q: float) -> np.ndarray:
    """Per panel: the smallest epsilon at which the judge passes (bisection; the verdict is monotone in eps)."""
    S = len(stats_["n"])
    lo, hi = np.full(S, -1.0), np.full(S, 2.0)
    never = ~_alt_pass(hi, stats_, q)
    for _ in range(40):
        mid = (lo + hi) / 2
        ok = _alt_pass(mid, stats_, q)
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    return np.where(never, np.inf, hi)


def alt_sums(codes: np.ndarray, P: int, K: int, n_judges: int, min_items: int,
             min_humans: int = MIN_HUMANS_PER_ITEM) -> list[dict] | None:
    """Per judge, the per-physician sums of :func:`~medeval_kit.agreement.alt_test`'s details (accuracy
    scoring) read from a simulated panel's code matrix (:func:`~medeval_kit.agreement.panel_model.simulate_codes`): ``n`` items, ``dd`` =
    sum_wh - sum_wf, ``k`` = n - ties, ``tested`` (>= ``min_items`` items), one entry per physician who
    labelled an item; the arrays have a leading axis of 1 (one panel).

    The same counts as ``alt_test``'s ``_details``: on each item that at least ``min_humans`` physicians
    labelled, physician h's label a is scored against the others (c(a) - 1 of them agree) and the judge's
    label b in h's place (c(b) - [a = b]). None where ``alt_test`` could refuse the table (fewer than two
    physicians, a judge without labels): the caller then runs ``alt_test`` itself.
    """
    H = np.flatnonzero((codes[:, :P] >= 0).any(axis=0))
    J = codes[:, P:P + n_judges]
    if len(H) < 2 or not (J >= 0).any(axis=0).all():
        return None
    C = codes[:, H]
    lab = C >= 0
    keep = lab.sum(axis=1) >= min_humans
    N = np.zeros((len(C), K), np.int64)  # label counts per item (kept items)
    ii, hh = np.nonzero(lab & keep[:, None])
    a = C[ii, hh]
    np.add.at(N, (ii, a), 1)
    out = []
    for j in range(n_judges):
        b = J[ii, j]
        use = b >= 0
        i, h, av, bv = ii[use], hh[use], a[use], b[use]
        num_f = N[i, bv] - (av == bv)
        num_h = N[i, av] - 1
        wf, wh = num_f >= num_h, num_h >= num_f
        n = np.bincount(h, minlength=len(H))
        dd = np.bincount(h, weights=wh.astype(float) - wf, minlength=len(H))
        ties = np.bincount(h, weights=(wf & wh).astype(float), minlength=len(H))
        out.append(dict(n=n[None].astype(float), dd=dd[None], k=(n - ties)[None], tested=(n >= min_items)[None]))
    return out


def _details_sums(d: pd.DataFrame) -> dict:
    """:func:`alt_sums`' entry of one judge, from ``alt_test``'s details of that judge."""
    n = d["n_items"].to_numpy(float)
    return dict(n=n[None], dd=np.round((d["rho_human"] - d["rho_llm"]).to_numpy() * n)[None],
                k=(n - d["n_ties"].to_numpy(float))[None], tested=(d["skipped_reason"] == "").to_numpy()[None])


def alt_passed(st: dict, eps: float, q: float) -> bool:
    """``passed`` of :func:`~medeval_kit.agreement.alt_test` from one judge's :func:`alt_sums`: the same
    t-tests (:func:`~medeval_kit.agreement.alt_test.paired_t`), Benjamini-Yekutieli (statsmodels) and rule."""
    from statsmodels.stats.multitest import multipletests

    t = st["tested"][0]
    m = int(t.sum())
    if m < max(1, MIN_HUMANS_TESTED):
        return False
    n = st["n"][0][t].astype(np.int64)
    dd = st["dd"][0][t].astype(np.int64)
    k = st["k"][0][t].astype(np.int64)
    p = paired_t(n, dd, k, eps, worse=False)[1]
    rej = multipletests(p, alpha=q, method="fdr_by")[0]
    return float(np.mean(rej)) >= PASS_RATE


def plan_alt_test(
    model: PanelModel,
    epsilon: float = DEFAULT_EPSILON,
    power: float = 0.8,
    *,
    raters_per_item: int | Sequence[int] | None = None,
    n_physicians: int | None = None,
    reference: bool = True,
    q_fdr: float = DEFAULT_Q_FDR,
    min_items_per_human: int = MIN_ITEMS_PER_HUMAN,
    epsilon_items: int | None = None,
    n_sim: int = 200,
    n_start: int | None = None,
    n_min: int | None = None,
    n_max: int = 10000,
    refine: int = 2,
    seed: int = 0,
    progress: bool = False,
    fast_path: bool = True,
) -> PowerPlan:
    """Items per annotator and ε for the alt-test (Calderon et al. 2025) to pass with the target power.

    Parameters
    ----------
    model : PanelModel
        From :func:`panel_model` or :func:`panel_model_from`.
    epsilon : float
        The alt-test's cost-benefit margin (0.2 for physicians).
    power : float
        Target probability that the judge passes.
    raters_per_item, n_physicians, reference, n_sim, n_start, n_max, refine, seed, progress
        As in :func:`plan_judge_vs_humans`.
    q_fdr, min_items_per_human : float, int
        As in :func:`~medeval_kit.agreement.alt_test`.
    epsilon_items : int, optional
        Items at which the ε table is simulated (default: the pilot's items, else the planned n of the
        first judge that has one, else 100).
    n_min : int, optional
        Smallest n searched (default: the n that gives each physician ``min_items_per_human`` items).
    fast_path : bool
        Count each simulated panel's per-physician wins from its code matrix and decide with the same
        t-tests and Benjamini-Yekutieli step-up (the same verdicts as ``alt_test``; ``medeval bench plan``: about
        25 times faster); ``False`` runs ``alt_test`` on every panel.

    Returns
    -------
    PowerPlan
        As for :func:`plan_judge_vs_humans`, plus ``epsilon`` (power at several ε at ``epsilon_items``
        items, with Wilson CIs) and ``epsilon_planned`` (the smallest ε with the target power per judge).
        The ε curve comes from the same alt-test statistics as the verdict: each panel's per-human sums give
        the verdict at any ε (checked against ``passed``; ``check_mismatches`` counts disagreements).

    Examples
    --------
    >>> from medeval_kit.agreement.panel_model import panel_model_from
    >>> m = panel_model_from(accuracy_humans=0.8, accuracy_judge=0.85, n_physicians=3)
    >>> plan = plan_alt_test(m, epsilon=0.2, n_sim=40, reference=False)
    >>> bool(plan.planned["planned_n"].iloc[0] >= 30)
    True
    """
    if not 0 <= epsilon < 1:
        raise PlanningError(f"epsilon must be between 0 and 1, e.g. 0.2; got {epsilon}")
    _check_plan(power, n_sim, None, n_min or 2, n_max)
    t0 = time.perf_counter()
    if reference:
        model = model.with_reference()
    if not model.judges:
        raise PlanningError("the model has no judge to plan for; pass reference=True or a judge")
    judges = list(model.judges)

    def run_alt(t, eps=epsilon):
        hum = sorted(t.loc[t["rater_kind"] == "human", "rater"].unique())
        return alt_test(t, hum, judges, epsilon=eps, q_fdr=q_fdr, min_items_per_human=min_items_per_human,
                        scoring="accuracy", accept_label_warnings=True)

    def sums(draw):
        """Each judge's alt_sums of the panel (None: alt_test must read its table)."""
        codes, _, P = draw(codes=True)
        return alt_sums(codes, P, model.K, len(judges), min_items_per_human) if fast_path else None

    def verdict(draw, k):
        st = sums(draw)
        if st is not None:
            return np.array([alt_passed(s, epsilon, q_fdr) for s in st])
        try:
            res = run_alt(draw())
        except (AgreementError, PanelError):
            return None
        return res.results.set_index("judge")["passed"].reindex(judges).fillna(False).astype(bool).to_numpy()

    settings = dict(epsilon=epsilon, power=power, q_fdr=q_fdr, min_items_per_human=min_items_per_human, n_sim=n_sim,
                    seed=seed, n_max=n_max)
    z = sps.norm.ppf(1 - q_fdr / 2) + sps.norm.ppf(power)
    out, eps_rows, eps_planned = [], [], []
    bar = _progress(progress, "plan alt-test")
    try:
        for r in _rpi_list(model, raters_per_item):
            P = _pool(model, n_physicians, r)
            lo_n = n_min or int(math.ceil(min_items_per_human * P / r))
            big = simulate_panel(model, N_BIG, r, P, seed=[seed, r, P, 0, 10**9])
            res = run_alt(big)
            why, starts = {}, []
            for j, name in enumerate(judges):
                d = res.details[res.details["judge"] == name]
                gap = epsilon - (d["rho_human"] - d["rho_llm"]).median()
                if not bool(res.results.set_index("judge").loc[name, "passed"]):
                    why[j] = (f"not reachable at epsilon {epsilon:g}: on a panel of {N_BIG} items the judge does not "
                              f"pass (median rho_human - rho_llm = {epsilon - gap:+.3f}, not below epsilon); see the "
                              "epsilon table")
                    continue
                sd = math.sqrt(max(1e-6, float(((d["n_items"] - d["n_ties"]) / d["n_items"]).median())
                                   - float(((d["rho_human"] - d["rho_llm"]) ** 2).median())))
                starts.append((z * sd / max(gap, 1e-3)) ** 2 * P / r)
            active = [j for j in range(len(judges)) if j not in why]
            start = max(lo_n, n_start or (min(starts) if starts else max(lo_n, model.n_items or 100)))
            runner = _Runner(model, r, P, verdict, seed, bar)
            plan = _search(runner, active, start, power, n_sim=n_sim, n_coarse=max(20, n_sim // 4), n_min=lo_n,
                           n_max=n_max, refine=refine)
            out.append((r, P, runner, plan, why))
            # the epsilon table at epsilon_items items
            n_eps = epsilon_items or model.n_items or next((p["n"] for p in plan.values() if p.get("n")), None) or 100
            n_eps = max(int(n_eps), lo_n)
            crit = {name: [] for name in judges}
            mismatch = 0
            for k in range(n_sim):
                draw = partial(_draw, model, n_eps, r, P, [seed, r, P, n_eps, 10**6 + k])
                st_all = sums(draw)
                if st_all is None:
                    res = run_alt(draw())
                    st_all = [_details_sums(res.details[res.details["judge"] == name]) for name in judges]
                    passed = res.results.set_index("judge")["passed"].reindex(judges).astype(bool).tolist()
                else:
                    passed = [alt_passed(st, epsilon, q_fdr) for st in st_all]
                for name, st, ok in zip(judges, st_all, passed):
                    crit[name].append(float(_critical_eps(st, q_fdr)[0]))
                    mismatch += int(ok != bool(_alt_pass(np.array([epsilon]), st, q_fdr)[0]))
                bar.update(1)
            grid = sorted({round(x, 3) for x in np.arange(0.05, 0.401, 0.05)} | {round(epsilon, 3)})
            for name in judges:
                c = np.sort(np.asarray(crit[name]))
                for e in grid:
                    k = int((c <= e + 1e-12).sum())
                    lo, hi = wilson_interval(k, len(c))
                    eps_rows.append(dict(judge=name, raters_per_item=r, n_physicians=P, n_items=n_eps,
                                         items_per_physician=n_eps * r / P, epsilon=e, power=k / len(c),
                                         power_ci_low=lo, power_ci_high=hi, n_sim=len(c)))
                need = c[int(math.ceil(power * len(c))) - 1]
                eps_planned.append(dict(judge=name, raters_per_item=r, n_physicians=P, n_items=n_eps,
                                        items_per_physician=n_eps * r / P,
                                        epsilon_needed=float(need) if np.isfinite(need) else np.nan,
                                        n_sim=len(c), check_mismatches=mismatch))
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    table, planned = _finish(out, model, power, settings)
    return PowerPlan("alt_test", table, planned, model, settings, epsilon=pd.DataFrame(eps_rows),
                     epsilon_planned=pd.DataFrame(eps_planned), seconds=seconds)
