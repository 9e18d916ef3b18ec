"""Planning: how many items and physicians does a decision need?

Before paying physicians, a team wants to know how many items (and how many physicians per item)
a judge-vs-humans study needs so that a judge that is good enough is actually *shown* to be good
enough. This module answers by simulation, with the very verdicts the study will use:

1. **A model of the panel** (:class:`PanelModel`): the categories and their prevalence, and for every
   physician and every judge a confusion matrix against a latent true class (rows: true class,
   columns: label given), plus each judge's share of labelled items, the physicians per item and the
   number of physicians. :func:`panel_model` estimates it from a pilot file by the Dawid & Skene (1979)
   EM algorithm (every rater, humans and judges, conditionally independent given the true class;
   initialised at the humans' vote shares, so class k stays label k; a pseudo-count of ``smoothing``
   in every cell keeps a small pilot from producing zero probabilities). :func:`panel_model_from`
   builds it from stated values without a pilot: the physicians' and the judge's accuracy (errors
   spread over the other categories in proportion to their prevalence), or a pairwise κ under the
   latent-class model of :func:`~medeval_kit.datasets.synthetic.synthetic_panel` (each rater reports
   the true class with probability √κ and otherwise guesses from the prevalence, so any two raters
   have population κ).
2. **Simulated studies** (:func:`simulate_panel`): ``n_items`` items with true classes drawn from the
   prevalence; each item gets ``raters_per_item`` physicians drawn at random from a pool of
   ``n_physicians`` (the pilot's physicians; a larger pool reuses their confusion matrices in turn),
   and every judge labels it (or not, at the judge's pilot labelling rate).
3. **The verdict on every simulated study**: :func:`plan_judge_vs_humans` runs
   :func:`medeval_kit.agreement.judge_vs_humans` itself (same design, metric, margin, confidence and
   percentile bootstrap; only ``n_boot`` is smaller by default, 200 instead of 1000, for speed: the
   lower CI bound then has a little more Monte Carlo noise, about 0.2 of its standard error, which
   changes the power by well under a point; :func:`~medeval_kit.agreement.plan_check.validate_plan` checks the plan against fresh
   panels analysed with 1000 resamples). A study passes when ``noninferior`` is true (the lower CI
   bound of Δ = judge − humans is above −margin). By default (``fast_path``) the verdict is read from the
   panel's code matrix with the same statistics, draws and rule, without the table checks and result
   tables (the same verdicts, checked panel by panel in the tests). :func:`~medeval_kit.agreement.alt_test_planning.plan_alt_test` runs
   :func:`medeval_kit.agreement.alt_test` and counts ``passed``.
4. **The search for n** (the same for both): the expected verdict on one very large panel says whether
   a judge can pass at all (e.g. its Δ is below −margin: then no n helps, and the plan says so). From
   a start at the normal-approximation n, the number of items is doubled (or halved) with a few
   panels per step until the target power is bracketed (early stopping: nothing beyond the bracket is
   simulated); the bracket's points are topped up to ``n_sim`` panels and refined by secant steps on
   the probit scale against √n (the shape of the normal approximation: probit(power) is linear in
   √n); the planned n is where a probit regression (statsmodels GLM) of all simulated verdicts on √n
   crosses the target, rounded up. Every simulated n is a row of the table with its power, the
   Wilson 95% CI of that Monte Carlo estimate and ``n_sim``.

:func:`~medeval_kit.agreement.plan_check.validate_plan` re-simulates fresh panels (other seeds) at the planned n and reports the realised
power next to the target. Everything is reproducible from ``seed``.

References: Dawid, A. P. & Skene, A. M. (1979), Maximum likelihood estimation of observer error-rates
using the EM algorithm, *Applied Statistics* 28(1), 20-28.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd
from scipy import stats as sps

from medeval_kit.agreement.alt_test import PASS_RATE
from medeval_kit.agreement.coverage import _builtin, _loo_specs, _pair, paired_deltas
from medeval_kit.agreement.data import AgreementError
from medeval_kit.agreement.designs import _pooled, judge_vs_humans
from medeval_kit.agreement.forms import pair_stat
from medeval_kit.agreement.panel import PanelError
from medeval_kit.agreement.panel_model import (
    PanelModel,
    PlanningError,
    simulate_codes,
    simulate_panel,
)
from medeval_kit.agreement.verdicts import noninferiority_verdict
from medeval_kit.stats import wilson_interval

__all__ = ["PowerPlan", "plan_judge_vs_humans", "PLAN_DESIGNS", "PLAN_COLUMNS", "PLANNED_COLUMNS"]

PLAN_DESIGNS = ("loo", "pooled")
PLAN_COLUMNS = ["judge", "raters_per_item", "n_physicians", "n_items", "items_per_physician", "power",
                "power_ci_low", "power_ci_high", "n_sim", "n_passed", "n_failed_runs", "step", "planned_n"]
"""The columns of :meth:`PowerPlan.to_frame`: one row per (judge, physicians per item, simulated n)."""
PLANNED_COLUMNS = ["judge", "raters_per_item", "n_physicians", "planned_n", "items_per_physician", "total_labels",
                   "fitted_power", "status", "reason"]
"""The columns of :attr:`PowerPlan.planned`: one row per (judge, physicians per item)."""

N_BIG = 20000
"""Items of the one large panel that gives each judge's expected statistic (reachable or not)."""


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class PowerPlan:
    """A plan: power by number of items (``table``), the planned n per judge (``planned``) and the model.

    ``epsilon`` (alt-test only) has the power at several ε at ``epsilon_n_items`` items, and
    ``epsilon_planned`` the smallest ε with the target power per judge.
    """

    kind: str
    table: pd.DataFrame
    planned: pd.DataFrame
    model: PanelModel
    settings: dict
    epsilon: pd.DataFrame | None = field(default=None, repr=False)
    epsilon_planned: pd.DataFrame | None = field(default=None, repr=False)
    seconds: float = 0.0

    def to_frame(self) -> pd.DataFrame:
        """The power table with each (judge, physicians per item)'s ``planned_n`` (NaN when not reachable)."""
        return self.table[PLAN_COLUMNS].copy()

    def rule(self) -> str:
        """The verdict whose power is planned, in words."""
        s = self.settings
        if self.kind == "alt_test":
            return (f"alt-test passes (epsilon {s['epsilon']:g}, BY q = {s['q_fdr']:g}, winning rate >= "
                    f"{PASS_RATE:g}; humans with < {s['min_items_per_human']} items not tested)")
        conf = s["confidence"]
        return (f"non-inferior: the {conf:.0%} CI's lower bound of delta = judge - humans > -{s['margin']:g} "
                f"(design {s['design']}, {s['metric']}; one-sided alpha = {(1 - conf) / 2:g})")

    def simulation(self) -> str:
        """How the power was simulated, in words (with the seed)."""
        s = self.settings
        how = (f"judge_vs_humans(design={s['design']!r}, metric={s['metric']!r}, n_boot={s['n_boot']}, "
               f"confidence={s['confidence']:g})" if self.kind == "judge_vs_humans" else
               f"alt_test(epsilon={s['epsilon']:g}, q_fdr={s['q_fdr']:g}, "
               f"min_items_per_human={s['min_items_per_human']})")
        boot = ("; the study itself would use n_boot=1000 (fewer resamples here for speed change the power by "
                "well under a point)" if self.kind == "judge_vs_humans" and s["n_boot"] < 1000 else "")
        return (f"{s['n_sim']} simulated panels per n (fewer while bracketing), each analysed with {how}{boot}; "
                f"planned n where a probit fit of the verdicts on sqrt(n) reaches the target; seed {s['seed']}; "
                f"{self.seconds:.1f} s")

    def summary(self) -> str:
        """The plan in a few lines: the rule, the planned n per judge, the assumptions."""
        lines = [f"Plan ({self.kind.replace('_', '-')}): target power {self.settings['power']:g} for: {self.rule()}"]
        for r in self.planned.itertuples():
            lines.append(f"  {r.judge}, {r.raters_per_item} physicians per item: " + _planned_words(r, self.kind))
        lines += [f"  {x}" for x in self.model.describe()]
        lines.append(f"  {self.simulation()}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def _planned_words(r, kind: str) -> str:
    if r.status != "planned":
        return r.reason
    words = (f"{int(r.planned_n)} items ({r.items_per_physician:.0f} items per physician, {int(r.total_labels)} "
             "physician labels in all)")
    return f"{words}; {r.reason}" if r.reason else words


def _check_plan(power, n_sim, n_boot, n_min, n_max):
    if not 0 < power < 1:
        raise PlanningError(f"power must be between 0 and 1, e.g. 0.8; got {power}")
    if n_sim < 20:
        raise PlanningError(f"n_sim must be 20 or more; got {n_sim}")
    if n_boot is not None and n_boot < 50:
        raise PlanningError(f"n_boot must be 50 or more for a CI per simulated panel; got {n_boot}")
    if not 2 <= n_min < n_max:
        raise PlanningError(f"need 2 <= n_min < n_max; got n_min={n_min}, n_max={n_max}")


def _rpi_list(model: PanelModel, raters_per_item) -> list[int]:
    if raters_per_item is None:
        return [model.raters_per_item]
    out = sorted({int(r) for r in np.atleast_1d(raters_per_item)})
    if out[0] < 2:
        raise PlanningError(f"raters_per_item must be 2 or more (the designs need another physician to compare with); "
                            f"got {out[0]}")
    return out


def _pool(model: PanelModel, n_physicians, r: int) -> int:
    P = max(model.n_physicians, r) if n_physicians is None else int(n_physicians)
    if r > P:
        raise PlanningError(f"n_physicians ({P}) must be at least raters_per_item ({r})")
    return P


class _Runner:
    """Simulates panels at n items and counts each judge's passes; the seed of panel k at n is fixed.

    ``verdict(draw, k)`` gets panel k as ``draw``: ``draw()`` is its table, ``draw(codes=True)`` its code matrix.
    """

    def __init__(self, model, r, P, verdict: Callable, seed, bar):
        self.model, self.r, self.P, self.verdict, self.seed, self.bar = model, r, P, verdict, seed, bar
        self.passes: dict[int, list[np.ndarray]] = {}
        self.failed: dict[int, int] = {}

    def run(self, n: int, upto: int) -> np.ndarray:
        """Make sure ``upto`` panels at n are simulated; return their pass counts per judge."""
        got = self.passes.setdefault(n, [])
        for k in range(len(got), upto):
            seed = [self.seed, self.r, self.P, n, k]
            v = self.verdict(partial(_draw, self.model, n, self.r, self.P, seed), k)
            if v is None:
                self.failed[n] = self.failed.get(n, 0) + 1
                v = np.zeros(len(self.model.judges), bool)
            got.append(v)
            self.bar.update(1)
        return np.sum(got[:upto], axis=0)

    def power(self, n: int) -> np.ndarray:
        return np.mean(self.passes[n], axis=0)

    def sims(self, n: int) -> int:
        return len(self.passes.get(n, ()))


def _draw(model, n, r, P, seed, codes=False):
    """Panel ``seed`` at n items: its table (:func:`simulate_panel`) or, with ``codes``, its code matrix."""
    return (simulate_codes if codes else simulate_panel)(model, n, r, P, seed=seed)


class _FastVerdicts:
    """Each judge's ``noninferior`` on a simulated panel, read from its code matrix: the verdict of
    :func:`~medeval_kit.agreement.judge_vs_humans` (the same statistics, draws and rule), without its
    checks, tables and notes.

    The plan needs only the verdicts of hundreds of panels; ``judge_vs_humans`` spends most of its time on a
    small panel checking the table and writing the result (about 8 ms a panel, against 2 here). Its checks
    cannot fail on a simulated table except where a judge labelled nothing or fewer than two physicians
    labelled anything: those panels (``NotImplemented``) go to ``judge_vs_humans`` itself.
    tests/test_plan.py checks the verdicts and whole plans against ``judge_vs_humans`` panel by panel.
    """

    def __init__(self, model, design, metric, margin, n_boot, confidence):
        self.K, self.design, self.metric = model.K, design, metric
        self.margin, self.n_boot, self.confidence = margin, n_boot, confidence
        self.fn = pair_stat(metric, np.zeros(1, int), np.zeros(1, int), model.K).fn  # = designs' pair_stat
        self.builtin = _builtin(metric)

    def __call__(self, codes: np.ndarray, names: list[str], P: int, seed: int):
        present = np.flatnonzero((codes >= 0).any(axis=0))
        humans = sorted((i for i in present if i < P), key=lambda i: names[i])  # judge_vs_humans' order
        judges = np.arange(P, len(names))
        if len(humans) < 2 or len(present) - len(humans) < len(judges) or set(names[:P]) & set(names[P:]):
            return NotImplemented
        C = codes[:, humans + judges.tolist()]
        nH = len(humans)
        if self.design == "loo":
            try:
                specs = _loo_specs(C, self.K, nH, self.metric, self.fn)
            except AgreementError:
                return None  # what judge_vs_humans raises on this panel
        else:
            sides = _pooled(C, self.K, list(range(nH)), list(range(nH, C.shape[1])), list(judges), self.metric,
                            None, "item")[0]
            specs = [(_pair(sides[j]["stat"].F, self.fn, sides[j]["stat"].n_items, self.builtin),
                      _pair(sides[j]["ref"].F, self.fn, sides[j]["ref"].n_items, self.builtin), "verdict")
                     for j in judges]
        out = []
        for (a, _, _), (delta, d) in zip(specs, paired_deltas(specs, self.n_boot, seed)):
            v = noninferiority_verdict(d, delta, self.margin, self.confidence, a.n_items, n_boot=self.n_boot)
            out.append(v["noninferior"] is not pd.NA and bool(v["noninferior"]))
        return np.array(out, bool)


def _judge_vs_humans(t: pd.DataFrame, model: PanelModel, boot_seed, **study):
    """``judge_vs_humans`` of the model's judges against the physicians of simulated panel ``t``."""
    hum = sorted(t.loc[t["rater_kind"] == "human", "rater"].unique())
    return judge_vs_humans(t, hum, list(model.judges), seed=boot_seed, categories=list(model.categories),
                           accept_label_warnings=True, **study)  # simulated labels are clean


def _panel_verdicts(draw, boot_seed, *, model: PanelModel, fast: _FastVerdicts | None, **study) -> np.ndarray | None:
    """Each judge's ``noninferior`` on panel ``draw`` (see :class:`_Runner`): from its code matrix when ``fast``
    can tell, else from ``judge_vs_humans``; None when that refuses the panel (a failed run)."""
    if fast is not None:
        v = fast(*draw(codes=True), boot_seed)
        if v is not NotImplemented:
            return v
    try:
        tab = _judge_vs_humans(draw(), model, boot_seed, **study).table
    except (AgreementError, PanelError):
        return None
    j = tab[tab["role"] == "judge"].set_index("rater")["noninferior"].reindex(list(model.judges))
    return j.fillna(False).astype(bool).to_numpy()


def _nice(n: float, n_min: int, n_max: int) -> int:
    """n rounded to two significant digits, within [n_min, n_max]."""
    n = max(n_min, min(n_max, n))
    mag = 10 ** max(0, int(math.floor(math.log10(max(n, 1)))) - 1)
    return int(max(n_min, min(n_max, round(n / mag) * mag)))


def _probit_n(ns, ks, ms, target: float) -> tuple[float, float] | None:
    """Where a probit GLM of passes on sqrt(n) reaches ``target``: (n, fitted power there), or None."""
    import statsmodels.api as sm

    ns, ks, ms = map(np.asarray, (ns, ks, ms))
    if len(ns) < 2 or ks.sum() == 0 or ks.sum() == ms.sum():
        return None
    X = sm.add_constant(np.sqrt(ns.astype(float)))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = sm.GLM(np.column_stack([ks, ms - ks]), X,
                         family=sm.families.Binomial(link=sm.families.links.Probit())).fit()
    except Exception:  # noqa: BLE001 - perfect separation and friends: fall back to the secant
        return None
    a, b = fit.params
    if not np.isfinite(b) or b <= 0:
        return None
    root = (sps.norm.ppf(target) - a) / b
    if root <= 0:
        return None
    return float(root ** 2), float(target)


def _secant(n_lo, p_lo, n_hi, p_hi, target, m) -> float:
    """The n between n_lo and n_hi where the probit of power (continuity-corrected) is linear in sqrt(n)."""
    z = [sps.norm.ppf((p * m + 0.5) / (m + 1)) for p in (p_lo, p_hi)]
    zt = sps.norm.ppf(target)
    s_lo, s_hi = math.sqrt(n_lo), math.sqrt(n_hi)
    if z[1] <= z[0]:
        return math.sqrt(n_lo * n_hi)
    s = s_lo + (zt - z[0]) * (s_hi - s_lo) / (z[1] - z[0])
    return min(max(s, s_lo), s_hi) ** 2


def _search(runner: _Runner, active: list[int], start: int, target: float, *, n_sim: int, n_coarse: int,
            n_min: int, n_max: int, refine: int) -> dict[int, dict]:
    """Bracket, top up, refine and fit the planned n of each active judge (indices into the model's judges)."""
    out = {}
    if not active:
        for n in sorted({_nice(start / 2, n_min, n_max), _nice(start, n_min, n_max)}):
            runner.run(n, n_coarse)
        return out
    # 1. bracket: double (or halve) with n_coarse panels until every active judge is bracketed
    n = _nice(start, n_min, n_max)
    runner.run(n, n_coarse)
    if all(runner.power(n)[j] >= target for j in active):
        while n > n_min and all(runner.power(n)[j] >= target for j in active):
            n = _nice(n / 2, n_min, n_max)
            runner.run(n, n_coarse)
    while n < n_max and any(runner.power(max(runner.passes))[j] < target for j in active):
        n = _nice(max(runner.passes) * 2, n_min, n_max)
        runner.run(n, n_coarse)
    # 2. top up the points around each judge's crossing to n_sim panels
    for j in active:
        ns = sorted(runner.passes)
        above = [m for m in ns if runner.power(m)[j] >= target]
        if not above:
            continue
        hi = above[0]
        lo = max([m for m in ns if m < hi], default=None)
        for m in (lo, hi):
            if m is not None:
                runner.run(m, n_sim)
        below = [m for m in ns if lo is not None and m < lo]
        if below:
            runner.run(below[-1], n_sim)
    # 3. full-size points clearly on each side of the target (the top-up may have moved the crossing), so that
    # the fit is anchored on both sides; then refine by secant steps and fit, per judge
    lo_anchor, hi_anchor = target - 0.1, min(target + 0.08, (1 + target) / 2)
    for j in active:
        for _ in range(5):
            full = sorted(m for m in runner.passes if runner.sims(m) >= n_sim)
            if not full:
                break
            pw = [runner.power(m)[j] for m in full]
            if min(pw) > lo_anchor and full[0] > n_min:
                runner.run(_nice(full[0] / (2 if min(pw) >= target else 1.4), n_min, n_max), n_sim)
            elif max(pw) < hi_anchor and full[-1] < n_max:
                runner.run(_nice(full[-1] * (2 if max(pw) < target else 1.4), n_min, n_max), n_sim)
            else:
                break
        for _ in range(refine):
            full = sorted(m for m in runner.passes if runner.sims(m) >= n_sim)
            pw = {m: runner.power(m)[j] for m in full}
            hi = next((m for m in full if pw[m] >= target), None)
            lo = max([m for m in full if hi is not None and m < hi], default=None)
            if hi is None or lo is None or hi - lo <= max(2, 0.03 * hi):
                break
            m_new = int(round(_secant(lo, pw[lo], hi, pw[hi], target, n_sim)))
            if m_new in (lo, hi) or m_new in runner.passes and runner.sims(m_new) >= n_sim:
                break
            runner.run(m_new, n_sim)
        full = sorted(m for m in runner.passes if runner.sims(m) >= n_sim)
        pw = {m: runner.power(m)[j] for m in full}
        reached = [m for m in full if pw[m] >= target]
        if not reached:
            out[j] = dict(status="above_max", n=None)
            continue
        fit = _probit_n(full, [pw[m] * n_sim for m in full], [n_sim] * len(full), target)
        # the fit uses every panel around the crossing (about 1 point of Monte Carlo error at n_sim=200); the
        # first grid point at or above the target carries its own point's noise (about 3 points)
        first = reached[0]
        n_plan = first if fit is None else min(max(fit[0], full[0]), full[-1])
        n_plan = int(math.ceil(n_plan))
        # context for the table: a point well below and well above the planned n (fewer panels)
        for m in (_nice(n_plan / 2, n_min, n_max), _nice(n_plan * 2, n_min, n_max)):
            if not any(0.6 * m <= x <= 1.6 * m for x in runner.passes):
                runner.run(m, n_coarse)
        out[j] = dict(status="planned", n=n_plan, by="probit fit" if fit else "first grid point",
                      note=f"the target power is reached already at the smallest n searched ({n_min})"
                      if n_plan <= n_min else "")
    return out


def _finish(runner_out, model, target, settings) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The power table and the planned n per (judge, physicians per item)."""
    rows, planned = [], []
    for r, P, runner, plan, why in runner_out:
        planned_by_judge = {}
        for j, name in enumerate(model.judges):
            p = plan.get(j)
            base = dict(judge=name, raters_per_item=r, n_physicians=P)
            if p is not None and p["status"] == "planned":
                n = p["n"]
                planned_by_judge[name] = n
                planned.append(dict(base, planned_n=n, items_per_physician=n * r / P, total_labels=n * r,
                                    fitted_power=target, status="planned", reason=p.get("note", "")))
            else:
                reason = why.get(j) or (f"the target power is not reached at n_max = {settings['n_max']} items"
                                        if p is not None else "not simulated")
                planned.append(dict(base, planned_n=np.nan, items_per_physician=np.nan, total_labels=np.nan,
                                    fitted_power=np.nan, status="not_reachable" if j in why else "above_max",
                                    reason=reason))
        for n in sorted(runner.passes):
            v = np.asarray(runner.passes[n])
            m = len(v)
            for j, name in enumerate(model.judges):
                k = int(v[:, j].sum())
                lo, hi = wilson_interval(k, m)
                rows.append(dict(judge=name, raters_per_item=r, n_physicians=P, n_items=n,
                                 items_per_physician=n * r / P, power=k / m, power_ci_low=lo, power_ci_high=hi,
                                 n_sim=m, n_passed=k, n_failed_runs=runner.failed.get(n, 0),
                                 step="grid" if m >= settings["n_sim"] else "coarse",
                                 planned_n=planned_by_judge.get(name, np.nan)))
    table = pd.DataFrame(rows, columns=PLAN_COLUMNS)
    return table, pd.DataFrame(planned, columns=PLANNED_COLUMNS)


def _progress(progress: bool, desc: str):
    from tqdm.auto import tqdm

    return tqdm(desc=desc, unit=" panels", disable=None if progress else True, delay=2, leave=False)


def plan_judge_vs_humans(
    model: PanelModel,
    margin: float = 0.05,
    power: float = 0.8,
    *,
    design: str = "loo",
    metric: str = "cohen_kappa",
    raters_per_item: int | Sequence[int] | None = None,
    n_physicians: int | None = None,
    reference: bool = True,
    n_sim: int = 200,
    n_boot: int = 200,
    confidence: float = 0.95,
    n_start: int | None = None,
    n_min: int = 20,
    n_max: int = 10000,
    refine: int = 2,
    seed: int = 0,
    progress: bool = False,
    fast_path: bool = True,
) -> PowerPlan:
    """How many items a judge-vs-humans study needs to show a judge non-inferior with the target power.

    Parameters
    ----------
    model : PanelModel
        From :func:`panel_model` (a pilot) or :func:`panel_model_from` (stated values).
    margin : float
        Non-inferiority margin for Δ = judge − humans (as in ``judge_vs_humans``).
    power : float
        Target probability that the study calls the judge non-inferior.
    design, metric : str
        The design (``loo`` or ``pooled``) and pairwise metric of the study.
    raters_per_item : int or sequence of int, optional
        Physicians per item; several values give one plan each (default: the model's).
    n_physicians : int, optional
        The pool of physicians (default: the model's, at least ``raters_per_item``).
    reference : bool
        Add :data:`REFERENCE_JUDGE`, a judge as good as the average physician (true Δ about 0).
    n_sim : int
        Simulated panels per n around the planned n (fewer while bracketing).
    n_boot : int
        Bootstrap resamples in each simulated ``judge_vs_humans`` (default 200, for speed; the study
        itself uses 1000).
    confidence : float
        Confidence level of Δ's CI (0.95: one-sided α = 0.025).
    n_start : int, optional
        First n tried (default: the normal approximation from one large panel).
    n_min, n_max : int
        The range of n searched.
    refine : int
        Secant steps between the bracketing grid points.
    seed : int
        Seed of every simulated panel and bootstrap.
    progress : bool
        Show a tqdm progress bar (after 2 s).
    fast_path : bool
        Read each simulated panel's verdicts from its code matrix (the same numbers as
        ``judge_vs_humans``; ``medeval bench plan``: about 5 times faster); ``False`` runs ``judge_vs_humans`` on
        every panel.

    Returns
    -------
    PowerPlan
        ``table`` (judge, raters_per_item, n_items, power with its Wilson CI, n_sim, planned_n),
        ``planned`` (one row per judge and physicians per item, with the reason when no n reaches the power).

    Examples
    --------
    >>> from medeval_kit.agreement.panel_model import panel_model_from
    >>> m = panel_model_from(kappa=0.6, n_physicians=3)
    >>> plan = plan_judge_vs_humans(m, margin=0.15, n_sim=40, reference=False)
    >>> bool(plan.planned["planned_n"].iloc[0] > 20)
    True
    """
    if design not in PLAN_DESIGNS:
        raise PlanningError(f"design must be one of {PLAN_DESIGNS}; not {design!r}")
    if not 0 < margin < 1:
        raise PlanningError(f"margin must be between 0 and 1, e.g. 0.05; got {margin}")
    _check_plan(power, n_sim, n_boot, n_min, n_max)
    t0 = time.perf_counter()
    if reference:
        model = model.with_reference()
    if not model.judges:
        raise PlanningError("the model has no judge to plan for; pass reference=True (--reference) or a judge")
    study = dict(design=design, metric=metric, margin=margin, n_boot=n_boot, confidence=confidence)
    verdict = partial(_panel_verdicts, model=model, fast=_FastVerdicts(model, **study) if fast_path else None,
                      **study)

    z = sps.norm.ppf(0.5 + confidence / 2) + sps.norm.ppf(power)
    settings = dict(margin=margin, power=power, design=design, metric=metric, n_sim=n_sim, n_boot=n_boot,
                    confidence=confidence, seed=seed, n_min=n_min, n_max=n_max)
    out, expected = [], []
    bar = _progress(progress, "plan judge-vs-humans")
    try:
        for r in _rpi_list(model, raters_per_item):
            P = _pool(model, n_physicians, r)
            # the expected Delta and its SE on one large panel: who can pass at all, and where to start
            big = simulate_panel(model, N_BIG, r, P, seed=[seed, r, P, 0, 10**9])
            tab = _judge_vs_humans(big, model, seed, **dict(study, n_boot=200)).table
            tab = tab[tab["role"] == "judge"].set_index("rater").reindex(list(model.judges))
            why, starts = {}, []
            for j, name in enumerate(model.judges):
                d, lo, hi = tab.loc[name, ["delta", "delta_ci_low", "delta_ci_high"]]
                expected.append(dict(judge=name, raters_per_item=r, expected_delta=d))
                if not np.isfinite(d) or d - 0.5 * (hi - lo) / 1.96 <= -margin:
                    why[j] = (f"not reachable: the judge's expected delta is {d:+.3f}, not clearly above "
                              f"-{margin:g} (by one standard error on {N_BIG} items); no feasible number of items "
                              "shows it non-inferior")
                    continue
                sd = (hi - lo) / (2 * 1.96) * math.sqrt(N_BIG)
                starts.append((z * sd / (d + margin)) ** 2)
            active = [j for j in range(len(model.judges)) if j not in why]
            start = n_start or (min(starts) if starts else max(n_min, model.n_items or 100))
            runner = _Runner(model, r, P, verdict, seed, bar)
            plan = _search(runner, active, start, power, n_sim=n_sim, n_coarse=max(20, n_sim // 4), n_min=n_min,
                           n_max=n_max, refine=refine)
            out.append((r, P, runner, plan, why))
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    table, planned = _finish(out, model, power, settings)
    planned = planned.merge(pd.DataFrame(expected), on=["judge", "raters_per_item"], how="left")
    return PowerPlan("judge_vs_humans", table, planned, model, settings, seconds=seconds)
