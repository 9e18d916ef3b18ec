"""Can this judge replace our physicians? Designs that score a judge exactly like a held-out human.

:func:`judge_vs_humans` compares each LLM judge with the human raters under one of three designs:

``"loo"`` (default), symmetric leave-one-out
    For each human h and each item h labelled, the reference is the consensus of the *other*
    humans who labelled that item. h and every judge are scored against that same reference, on
    the same items; the per-human scores are then averaged over humans (or pooled over the
    (human, item) instances for sparse panels, see ``average``). The judge is treated exactly
    like a held-out human, so a judge with the humans' noise has Δ = 0 in expectation. With two
    humans this is the pairwise form (each human's reference is the other human).
``"pooled"``, pooled pairs
    Every (human, human) label pair that shares an item goes into one contingency table, every
    (judge, human) pair into another, and the metric is computed on each pool. Each item carries
    the same total weight in both pools (``pair_weights="item"``), so items with large panels do
    not count more for the humans than for the judge. Rater order within a pair is arbitrary, so
    both tables are symmetrised (Cohen's κ on them is Scott's π).
``"medqade"``, the design of the MedQADE paper, kept so its numbers reproduce
    Each judge against the majority of *all* humans; the ceiling is each human against the
    majority of the *other* humans, on the items where the others agree. The judge's reference
    has one more rater than each human's, and the human side loses the items where the others
    tie, so the two numbers are not comparable: with equally noisy judges and humans the judge
    looks worse under plurality voting over an even number of others, and the bias changes sign
    with the panel. Use it only to reproduce the paper.

Every design returns Δ = judge − humans with a paired item bootstrap (the same item resamples
for both sides), a two-sided p-value and a one-sided non-inferiority test at ``margin``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from medeval_kit import _agreement_core as core
from medeval_kit._agreement_core import AgreementError
from medeval_kit._panel import describe_raters, resolve_panel

__all__ = ["DESIGNS", "JudgeComparison", "judge_vs_humans", "judge_vs_ceiling", "equal_noise_coverage",
           "compare_designs", "vote", "abstain_codes", "mean_stat"]

DESIGNS = ("loo", "pooled", "medqade")
AVERAGES = ("auto", "humans", "instances")
# Pair metrics that compare two label vectors; accuracy/macro_f1 treat the reference as truth.
_PAIR = ("percent_agreement", "cohen_kappa", "scott_pi", "brennan_prediger", "pabak", "gwet_ac1", "gwet_ac2",
         "accuracy", "macro_f1")
_NAN = float("nan")
# "auto" averages over humans when every human has at least this many comparisons, else pools
# the (human, item) instances: a kappa on a handful of items is too noisy to average.
MIN_ITEMS_PER_HUMAN = 30

COLUMNS = ["role", "rater", "design", "metric", "estimate", "ci_low", "ci_high", "n_items", "n_pairs", "delta",
           "delta_ci_low", "delta_ci_high", "p_value", "p_noninferiority", "noninferior", "margin", "n_humans",
           "n_ties", "note"]


# --------------------------------------------------------------------------- shared tools


def vote(codes: np.ndarray, K: int, rule: str, tie_policy: str, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Consensus code per item (-1 = none), votes cast and the top count."""
    N = core.count_matrix(codes, K)
    n = N.sum(1)
    top = N.max(1) if K else np.zeros(len(N))
    winners = N == top[:, None]
    n_win = winners.sum(1)
    out = np.where(n_win == 1, N.argmax(1), -1)
    tied = (n_win > 1) & (n > 0)
    if tie_policy == "first":
        out = np.where(tied, N.argmax(1), out)
    elif tie_policy == "random":
        for i in np.flatnonzero(tied):
            out[i] = rng.choice(np.flatnonzero(winners[i]))
    elif tie_policy != "na":
        raise AgreementError(f"tie_policy must be 'na', 'first' or 'random'; not {tie_policy!r}")
    if rule == "strict":
        out = np.where(top > n / 2, out, -1)
    elif rule != "plurality":
        raise AgreementError(f"rule must be 'plurality' or 'strict'; not {rule!r}")
    out = np.where(n > 0, out, -1)
    return out, n, top


def abstain_codes(data: core.Data, abstain) -> np.ndarray:
    """Codes with abstention labels set to missing; ``data`` loses those categories (K shrinks)."""
    drop = [data.categories.index(a) for a in (abstain or ()) if a in data.categories]
    if not drop:
        return data.codes.copy()
    keep = [k for k in range(data.K) if k not in drop]
    remap = np.full(data.K + 1, -1)
    remap[keep] = np.arange(len(keep))
    codes = remap[data.codes]  # -1 maps to remap[-1] = -1
    data.categories = [data.categories[k] for k in keep]
    if data.values is not None:
        data.values = data.values[keep]
    return codes


def mean_stat(stats: Sequence[core.Stat], n_items: int, *, skip_undefined: bool = False) -> core.Stat:
    """Mean of several statistics over one item axis; ``skip_undefined`` averages the defined ones."""
    F = np.hstack([s.F for s in stats])
    cuts = np.cumsum([0] + [s.F.shape[1] for s in stats])

    def fn(S):
        vals = np.array([s.fn(S[:, a:b]) for s, a, b in zip(stats, cuts[:-1], cuts[1:])])
        if skip_undefined:
            with np.errstate(all="ignore"):
                cnt = np.isfinite(vals).sum(0)
                return np.where(cnt > 0, np.nansum(vals, 0) / np.maximum(cnt, 1), np.nan)
        return vals.mean(0)

    return core.Stat(F, fn, n_items)


def _pooled_stat(stats: Sequence[core.Stat], n_items: int) -> core.Stat:
    """One statistic on the summed per-item features of several same-shaped statistics."""
    return core.Stat(np.sum([s.F for s in stats], axis=0), stats[0].fn, n_items)


# --------------------------------------------------------------------------- result


@dataclass(frozen=True)
class JudgeComparison:
    """Judges against the humans under one design: ``table`` (one row per side), ``details`` per human."""

    table: pd.DataFrame
    details: pd.DataFrame = field(repr=False)
    design: str
    metric: str
    method: str
    humans: tuple
    judges: tuple

    def to_frame(self) -> pd.DataFrame:
        """The tidy table: role, rater, design, metric, estimate, CI, n, delta with CI, p-values, note."""
        return self.table.copy()

    def summary(self) -> str:
        """A few lines: the humans' level, then each judge's Δ with its CI and the tests."""
        lines = [f"{self.metric}, design {self.design!r}: {len(self.humans)} humans, {len(self.judges)} judge(s); "
                 f"{self.method}"]
        for r in self.table.itertuples():
            est = "NaN" if pd.isna(r.estimate) else f"{r.estimate:.3f}"
            ci = "" if pd.isna(r.ci_low) else f" [{r.ci_low:.3f}, {r.ci_high:.3f}]"
            line = f"  {r.role:6s} {r.rater}: {est}{ci} ({r.n_items} items, {r.n_pairs} pairs)"
            if r.role == "judge" and pd.notna(r.delta):
                dci = "" if pd.isna(r.delta_ci_low) else f" [{r.delta_ci_low:+.3f}, {r.delta_ci_high:+.3f}]"
                ni = "non-inferior" if r.noninferior else "not shown non-inferior"
                line += f"; delta {r.delta:+.3f}{dci}, p = {r.p_value:.3g}; {ni} at margin {r.margin:g}"
            if r.note:
                line += f"  note: {r.note}"
            lines.append(line)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return self.table.to_html(index=False)


# --------------------------------------------------------------------------- designs


def judge_vs_humans(
    df: pd.DataFrame,
    humans: Sequence | None = None,
    judges: Sequence | None = None,
    *,
    design: str = "loo",
    metric: str = "cohen_kappa",
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    rater_kind: str | None = "rater_kind",
    categories: Sequence | None = None,
    weights: str | None = None,
    rule: str = "plurality",
    tie_policy: str = "na",
    abstain: Sequence = (),
    average: str = "auto",
    pair_weights: str = "item",
    margin: float = 0.05,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
    source: str | None = None,
) -> JudgeComparison:
    """Each judge against the humans, scored exactly like a held-out human (see the module docstring).

    Humans come from ``humans`` or the ``rater_kind`` column (values ``human`` / ``llm``); never
    guessed. Judges default to every other rater. Returns a :class:`JudgeComparison` whose table
    has one ``humans`` row and one ``judge`` row per judge with ``estimate``, CI, ``n_items``,
    ``n_pairs``, ``delta`` = judge − humans with its paired-bootstrap CI, ``p_value`` (two-sided,
    H0: Δ = 0) and ``p_noninferiority`` (H0: Δ ≤ −``margin``; ``noninferior`` when the lower CI
    bound of Δ is above −margin). Items without a consensus (ties) are counted in ``n_ties``.

    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> res = judge_vs_humans(synthetic_panel(n_items=200, seed=1), n_boot=200)
    >>> list(res.table["role"])
    ['humans', 'judge']
    """
    if design not in DESIGNS:
        raise AgreementError(f"design must be one of {DESIGNS}; not {design!r}")
    if metric not in _PAIR:
        raise AgreementError(f"judge_vs_humans compares label pairs: metric must be one of {_PAIR}; not {metric!r}")
    if average not in AVERAGES:
        raise AgreementError(f"average must be one of {AVERAGES}; not {average!r}")
    if pair_weights not in ("item", "pair"):
        raise AgreementError(f"pair_weights must be 'item' or 'pair'; not {pair_weights!r}")
    if n_boot < 0:
        raise AgreementError(f"n_boot must be 0 or more; not {n_boot}")
    if not 0 < ci < 1:
        raise AgreementError(f"ci must be a level between 0 and 1, e.g. 0.95; not {ci!r}")
    humans, judges = resolve_panel(df, humans, judges, rater=rater, rater_kind=rater_kind,
                                   min_humans=1 if design == "medqade" else 2, source=source)
    if design == "medqade":
        return _medqade(df, humans, judges, metric=metric, item=item, rater=rater, label=label,
                        categories=categories, rule=rule, tie_policy=tie_policy, abstain=abstain, margin=margin,
                        n_boot=n_boot, ci=ci, seed=seed)
    level = "ordinal" if weights else "nominal"
    data = core.prepare(df, item=item, rater=rater, label=label, raters=humans + judges, categories=categories,
                        level=level, source=source)
    codes = abstain_codes(data, abstain)
    K = data.K
    H = [data.raters.index(h) for h in humans]
    J = [data.raters.index(j) for j in judges]
    rng = np.random.default_rng(seed)
    if design == "loo":
        sides, details, how = _loo(codes, K, H, J, humans, judges, metric, weights, rule, tie_policy, average, rng)
    else:
        sides, details, how = _pooled(codes, K, H, J, judges, metric, weights, pair_weights)
    method = (f"bootstrap percentile over items (B={n_boot}, seed={seed}); paired for delta" if n_boot
              else "no CI (n_boot=0)")
    table = _assemble(sides, judges, design, metric, margin, n_boot, ci, seed, how)
    if not judges:
        table["note"] = [f"{n}; no judge in the table: only the humans' level" if n else
                         "no judge in the table: only the humans' level" for n in table["note"]]
    return JudgeComparison(table, details, design, metric, method, tuple(humans), tuple(judges))


def _loo(codes, K, H, J, humans, judges, metric, weights, rule, tie_policy, average, rng):
    """Per-human components: human h vs others' consensus, and each judge vs that same consensus."""
    hum_stats, judge_stats, rows = [], {j: [] for j in J}, []
    n_ties = n_alone = 0
    used_items = np.zeros(len(codes), bool)
    for k, h in zip(H, humans):
        others = [o for o in H if o != k]
        cons, n_votes, _ = vote(codes[:, others], K, rule, tie_policy, rng)
        lab = codes[:, k] >= 0
        ties = lab & (n_votes > 0) & (cons < 0)
        n_ties += int(ties.sum())
        n_alone += int((lab & (n_votes == 0)).sum())
        ref = np.where(lab & (cons >= 0), cons, -1)
        used_items |= ref >= 0
        st_h = core.pair_stat(metric, ref, codes[:, k], K, weights)
        hum_stats.append(st_h)
        row = dict(human=h, n_items=st_h.n_items, n_ties=int(ties.sum()), human_estimate=_point(st_h))
        for j, name in zip(J, judges):
            both = np.where(codes[:, j] >= 0, ref, -1)
            st_j = core.pair_stat(metric, both, codes[:, j], K, weights)
            st_hj = core.pair_stat(metric, both, codes[:, k], K, weights)  # h on the judge's items
            judge_stats[j].append((st_j, st_hj))
            row[f"{name}_estimate"] = _point(st_j)
            row[f"{name}_n_items"] = st_j.n_items
        rows.append(row)
    sizes = [s.n_items for s in hum_stats]
    how = average
    if how == "auto":
        how = "humans" if min(sizes) >= MIN_ITEMS_PER_HUMAN else "instances"
    note_how = (f"mean over humans of each human's {metric}" if how == "humans" else
                f"{metric} on the pooled (human, item) instances")
    defined = [i for i, s in enumerate(hum_stats) if np.isfinite(_point(s))] if how == "humans" else list(range(len(H)))
    skipped = len(hum_stats) - len(defined)
    if not defined:
        raise AgreementError(f"{metric} is undefined for every human against the others' consensus "
                             "(too few items, or a single category used)")

    def agg(sts, n_items):
        if how == "humans":
            return mean_stat([sts[i] for i in defined], n_items, skip_undefined=True)
        return _pooled_stat(sts, n_items)

    n = int(used_items.sum())
    notes = [f"leave-one-out: {note_how}"]
    if skipped:
        notes.append(f"{skipped} human(s) with an undefined {metric} left out of the mean")
    if n_ties:
        notes.append(f"{n_ties} (human, item) instances without a consensus of the others (ties) left out")
    if n_alone:
        notes.append(f"{n_alone} (human, item) instances with no other human left out")
    sides = {"humans": dict(stat=agg(hum_stats, n), n_pairs=int(sum(sizes)), n_ties=n_ties, note="; ".join(notes),
                            n_humans=len(H) - skipped)}
    for j, name in zip(J, judges):
        sj = [a for a, _ in judge_stats[j]]
        sh = [b for _, b in judge_stats[j]]
        items_j = np.zeros(len(codes), bool)
        for st in sj:
            items_j |= st.F.sum(1) > 0
        n_j = int(items_j.sum())
        a, b = agg(sj, n_j), agg(sh, n_j)
        jnote = ""
        if n_j < n:
            jnote = f"the judge labelled {n_j} of the {n} items; delta compares the humans on those items only"
        sides[name] = dict(stat=a, ref=b, n_pairs=int(sum(s.n_items for s in sj)), n_ties=n_ties, note=jnote,
                           n_humans=len(H) - skipped)
    return sides, pd.DataFrame(rows), how


def _pooled(codes, K, H, J, judges, metric, weights, pair_weights):
    """Pooled pairs: symmetrised human-human and judge-human contingency tables per item."""
    N = core.count_matrix(codes[:, H], K)
    m = N.sum(1)
    ok = m >= 2
    hh = (N[:, :, None] * N[:, None, :] - N[:, :, None] * np.eye(K)[None]).reshape(len(N), K * K)
    w_h = np.where(ok, 1.0 / np.where(ok, m * (m - 1), 1), 0.0) if pair_weights == "item" else ok * 1.0
    F_h = hh * w_h[:, None]  # ordered pairs, so the table is symmetric
    fn = core.pair_stat(metric, np.zeros(1, int), np.zeros(1, int), K, weights).fn
    n_h = int(ok.sum())
    sides = {"humans": dict(stat=core.Stat(F_h, fn, n_h), n_pairs=int((m * (m - 1) / 2)[ok].sum()), n_ties=0,
                            note=f"pooled pairs ({'each item weighted equally' if pair_weights == 'item' else 'each pair weighted equally'}); "
                                 "symmetrised tables", n_humans=len(H))}
    rows = [dict(human="(all)", n_items=n_h, n_pairs=sides["humans"]["n_pairs"])]
    for j, name in zip(J, judges):
        lab = codes[:, j] >= 0
        use = ok & lab
        e = np.zeros((len(N), K))
        e[np.flatnonzero(lab), codes[lab, j]] = 1.0
        jh = (e[:, :, None] * N[:, None, :] + N[:, :, None] * e[:, None, :]).reshape(len(N), K * K)
        w_j = np.where(use, 1.0 / np.where(use, 2 * m, 1), 0.0) if pair_weights == "item" else use * 0.5
        w_hj = np.where(use, w_h, 0.0)
        n_j = int(use.sum())
        note = "" if n_j == n_h else f"the judge labelled {n_j} of the {n_h} items; delta uses those items only"
        sides[name] = dict(stat=core.Stat(jh * w_j[:, None], fn, n_j), ref=core.Stat(hh * w_hj[:, None], fn, n_j),
                           n_pairs=int(m[use].sum()), n_ties=0, note=note, n_humans=len(H))
        rows.append(dict(human=f"{name} vs humans", n_items=n_j, n_pairs=int(m[use].sum())))
    return sides, pd.DataFrame(rows), "pairs"


def _assemble(sides, judges, design, metric, margin, n_boot, ci, seed, how) -> pd.DataFrame:
    """Point estimates, one paired bootstrap for every side, Δ, p-values."""
    order = [sides["humans"]["stat"]]
    for j in judges:
        order += [sides[j]["stat"], sides[j]["ref"]]
    ests = np.array([_point(s) for s in order])
    reps = core.replicates(order, n_boot, seed) if n_boot else np.full((0, len(order)), np.nan)
    alpha = (1 - ci) / 2
    rows = []
    h = sides["humans"]
    lo, hi = _ci(ests[0], reps[:, 0], ci)
    rows.append(dict(role="humans", rater=f"humans ({h['n_humans']})", estimate=ests[0], ci_low=lo, ci_high=hi,
                     n_items=h["stat"].n_items, n_pairs=h["n_pairs"], n_humans=h["n_humans"], n_ties=h["n_ties"],
                     note=h["note"]))
    for k, j in enumerate(judges):
        s = sides[j]
        a, b = 1 + 2 * k, 2 + 2 * k
        lo, hi = _ci(ests[a], reps[:, a], ci)
        d_est = ests[a] - ests[b]
        row = dict(role="judge", rater=j, estimate=ests[a], ci_low=lo, ci_high=hi, n_items=s["stat"].n_items,
                   n_pairs=s["n_pairs"], n_humans=s["n_humans"], n_ties=s["n_ties"], delta=d_est, note=s["note"])
        if n_boot and np.isfinite(d_est):
            d = reps[:, a] - reps[:, b]
            d = d[np.isfinite(d)]
            if len(d) >= 2:
                row["delta_ci_low"], row["delta_ci_high"] = np.quantile(d, [alpha, 1 - alpha])
                B = len(d)
                # Bootstrap p-values with the +1 correction (never exactly 0 from B resamples).
                row["p_value"] = min(1.0, 2 * min((1 + (d <= 0).sum()) / (B + 1), (1 + (d >= 0).sum()) / (B + 1)))
                row["p_noninferiority"] = (1 + (d <= -margin).sum()) / (B + 1)
                row["noninferior"] = bool(row["delta_ci_low"] > -margin)
                if B < n_boot:
                    row["note"] = "; ".join(x for x in (row["note"], f"{n_boot - B} of {n_boot} resamples "
                                                        "undefined and dropped") if x)
        rows.append(row)
    out = pd.DataFrame(rows)
    out["design"] = design if design != "loo" else f"loo ({how})"
    out["metric"] = metric
    out["margin"] = margin
    for c in COLUMNS:
        if c not in out.columns:
            out[c] = _NAN if c not in ("noninferior",) else pd.NA
    out["noninferior"] = out["noninferior"].astype("boolean")
    out["note"] = out["note"].fillna("")
    return out[COLUMNS]


def _point(st: core.Stat) -> float:
    return core.point(st) if st.n_items else _NAN


def _ci(est, reps, ci):
    lo, hi, _ = core.interval(est, reps, ci, "percentile")
    return lo, hi


# --------------------------------------------------------------------------- MedQADE's design


def _medqade(df, humans, judges, *, metric, item, rater, label, categories, rule, tie_policy, abstain, margin,
             n_boot, ci, seed) -> JudgeComparison:
    """The MedQADE design in the common table layout (see :func:`judge_vs_ceiling`)."""
    t = judge_vs_ceiling(df, humans, judges, metric=metric, form="loo", item=item, rater=rater, label=label,
                         categories=categories, rule=rule, tie_policy=tie_policy, abstain=abstain, n_boot=n_boot,
                         ci=ci, seed=seed, margin=margin)
    t = t.assign(role=t["role"].replace({"ceiling": "humans"}), design="medqade", n_pairs=t["n_items"],
                 n_humans=len(humans), n_ties=np.nan, margin=margin)
    bias = ("MedQADE design: judge vs the majority of all humans, humans vs the majority of the others on the "
            "items where the others agree; the two references differ, so delta is biased (see judge_vs_humans)")
    t["note"] = bias
    hum = t["role"] == "humans"
    if hum.any() and t.loc[hum, "estimate"].isna().all():
        t.loc[hum, "note"] = (bias + "; the ceiling is the plain mean of per-human values and at least one is "
                              "undefined on this panel (too few items or one category), so it is NaN")
    for c in COLUMNS:
        if c not in t.columns:
            t[c] = _NAN
    t["noninferior"] = t["noninferior"].astype("boolean")
    method = f"bootstrap percentile over items (B={n_boot}, seed={seed}); paired for delta"
    return JudgeComparison(t[COLUMNS], pd.DataFrame(), "medqade", metric, method, tuple(humans), tuple(judges))


def _ceiling_stats(codes, K, hidx, humans, metric, form, rule, tie_policy, seed):
    rng = np.random.default_rng(seed)
    stats, rows = [], []
    if form == "loo":
        for k, h in zip(hidx, humans):
            others = [j for j in hidx if j != k]
            cons, _, _ = vote(codes[:, others], K, rule, tie_policy, rng)
            st = core.pair_stat(metric, cons, codes[:, k], K)
            stats.append(st)
            rows.append(dict(rater=h, reference="majority of the other humans", n_items=st.n_items))
    elif form == "pairwise":
        for a, b in itertools.combinations(range(len(hidx)), 2):
            st = core.pair_stat(metric, codes[:, hidx[a]], codes[:, hidx[b]], K)
            stats.append(st)
            rows.append(dict(rater=humans[b], reference=humans[a], n_items=st.n_items))
    else:
        raise AgreementError(f"form must be 'loo' or 'pairwise'; not {form!r}")
    return stats, rows


def judge_vs_ceiling(
    df: pd.DataFrame,
    humans: Sequence[str] | None = None,
    judges: Sequence[str] | None = None,
    *,
    metric: str = "cohen_kappa",
    form: str = "loo",
    item="item",
    rater="rater",
    label="label",
    categories=None,
    rule: str = "plurality",
    tie_policy: str = "na",
    abstain: Sequence = (),
    reference: str | None = None,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
    margin: float = 0.05,
) -> pd.DataFrame:
    """The MedQADE design: each judge against the majority of *all* humans, next to the human ceiling.

    Kept so MedQADE's published numbers reproduce; for the question "can this judge replace the
    humans?" use :func:`judge_vs_humans`, whose default design has no bias. Here the judge's score
    is ``metric`` against the majority of all humans (or against the single rater ``reference``,
    e.g. an adjudicated expert; then the ceiling is not defined and left NaN), while the ceiling
    (``form="loo"``) scores each human against the majority of the *other* humans, only on items
    where those others agree. The references differ, so Δ is biased: in a simulation with
    equally noisy judges and humans (3 humans) the judges come out significantly worse, and with
    ``form="pairwise"`` significantly better (``benchmarks/bench_judge_validation.py`` shows it).
    Returns one row for the ceiling and one per judge with estimate and percentile CI, ``delta``
    with its paired-bootstrap CI and two-sided ``p_value``, and ``ci_overlap`` (MedQADE's rule).
    """
    if humans is None and reference is not None:
        humans = [reference]
    humans, judges = resolve_panel(df, humans, judges, rater=rater, min_humans=1)
    data = core.prepare(df, item=item, rater=rater, label=label, raters=humans + judges, categories=categories)
    codes = abstain_codes(data, abstain)
    rng = np.random.default_rng(seed)
    ceiling = None
    if reference is not None or len(humans) == 1:
        ref = codes[:, data.raters.index(humans[0])]
    else:
        ref, _, _ = vote(codes[:, [data.raters.index(h) for h in humans]], data.K, rule, tie_policy, rng)
        if len(humans) >= (3 if form == "loo" else 2):
            hidx = [data.raters.index(h) for h in humans]
            c_stats, _ = _ceiling_stats(codes, data.K, hidx, humans, metric, form, rule, tie_policy, seed)
            ceiling = mean_stat(c_stats, int((ref >= 0).sum()))
    j_stats = [core.pair_stat(metric, ref, codes[:, data.raters.index(j)], data.K) for j in judges]
    all_stats = ([ceiling] if ceiling is not None else []) + j_stats
    reps = core.replicates(all_stats, n_boot, seed) if n_boot else np.full((0, len(all_stats)), np.nan)
    ests = [_point(s) for s in all_stats]
    rows = []
    c_est = ests[0] if ceiling is not None else _NAN
    c_lo = c_hi = _NAN
    if ceiling is not None:
        c_lo, c_hi = _ci(c_est, reps[:, 0], ci)
        rows.append(dict(role="ceiling", rater=f"humans ({form})", metric=metric, estimate=c_est, ci_low=c_lo,
                         ci_high=c_hi, n_items=ceiling.n_items, delta=_NAN, delta_ci_low=_NAN,
                         delta_ci_high=_NAN, p_value=_NAN, ci_overlap=pd.NA))
    off = 1 if ceiling is not None else 0
    for k, (j, st) in enumerate(zip(judges, j_stats)):
        est = ests[off + k]
        lo, hi = _ci(est, reps[:, off + k], ci)
        row = dict(role="judge", rater=j, metric=metric, estimate=est, ci_low=lo, ci_high=hi, n_items=st.n_items,
                   delta=_NAN, delta_ci_low=_NAN, delta_ci_high=_NAN, p_value=_NAN, ci_overlap=pd.NA)
        if ceiling is not None and n_boot:
            d = reps[:, off + k] - reps[:, 0]
            d = d[np.isfinite(d)]
            row["delta"] = est - c_est
            row["delta_ci_low"], row["delta_ci_high"] = _ci(est - c_est, d, ci)
            row["p_value"] = float(min(1.0, 2 * min((d <= 0).mean(), (d >= 0).mean()))) if len(d) else _NAN
            row["p_noninferiority"] = float((1 + (d <= -margin).sum()) / (len(d) + 1)) if len(d) else _NAN
            row["noninferior"] = bool(row["delta_ci_low"] > -margin) if len(d) else pd.NA
            row["ci_overlap"] = bool(lo <= c_hi and c_lo <= hi)
        rows.append(row)
    out = pd.DataFrame(rows)
    out["ceiling_form"] = form if ceiling is not None else "none (one reference rater)"
    out["reference"] = reference or f"majority of {len(humans)} humans ({rule}, ties {tie_policy})"
    out["method"] = f"bootstrap percentile over items (B={n_boot}, seed={seed}); paired for delta"
    return out



def compare_designs(
    df: pd.DataFrame,
    humans: Sequence | None = None,
    judges: Sequence | None = None,
    *,
    designs: Sequence[str] = DESIGNS,
    reference: str | None = None,
    **kw,
) -> pd.DataFrame:
    """Every design side by side: the tables of :func:`judge_vs_humans` stacked, one block per design.

    A design that cannot run on this panel (for example leave-one-out with a single adjudicated
    expert) gives one row with NaN and the reason in ``note``; it never stops the others.
    ``reference`` (a single expert) is passed to the MedQADE design as its reference rater.
    """
    frames = []
    for d in designs:
        try:
            if d == "medqade" and reference is not None:
                t = judge_vs_ceiling(df, [reference], judges, reference=reference, **{
                    k: v for k, v in kw.items() if k in ("metric", "item", "rater", "label", "categories", "rule",
                                                         "tie_policy", "abstain", "n_boot", "ci", "seed", "margin")})
                t = t.assign(role=t["role"].replace({"ceiling": "humans"}), design="medqade", n_pairs=t["n_items"],
                             n_humans=1, n_ties=_NAN, margin=kw.get("margin", 0.05),
                             note=f"MedQADE design with one reference rater ({reference}): no human ceiling")
                for c in COLUMNS:
                    if c not in t.columns:
                        t[c] = _NAN
                frames.append(t[COLUMNS])
            else:
                frames.append(judge_vs_humans(df, humans, judges, design=d, **kw).table)
        except (AgreementError, ValueError) as exc:
            row = {c: _NAN for c in COLUMNS}
            row.update(role="humans", rater="humans", design=d, metric=kw.get("metric", "cohen_kappa"),
                       n_items=0, n_pairs=0, note=f"design not applicable: {exc}")
            frames.append(pd.DataFrame([row]))
    out = pd.concat(frames, ignore_index=True)
    out["noninferior"] = out["noninferior"].astype("boolean")
    return out


# --------------------------------------------------------------------------- validation

PANELS = {
    "dense3": dict(n_humans=3),
    "two": dict(n_humans=2),
    "sparse": dict(n_humans=60, labels_per_item=(2, 4)),
}


def equal_noise_coverage(
    n_reps: int = 200,
    *,
    panels: Sequence[str] = tuple(PANELS),
    designs: Sequence[str] = DESIGNS,
    n_items: int = 150,
    n_judges: int = 1,
    kappa: float = 0.5,
    metric: str = "cohen_kappa",
    n_boot: int = 500,
    ci: float = 0.95,
    seed: int = 0,
    progress: bool = False,
) -> pd.DataFrame:
    """Coverage of Δ's CI when the judges have exactly the humans' noise (true Δ = 0).

    Each replication draws :func:`~medeval_kit.datasets.synthetic.synthetic_panel` for each panel
    shape (``dense3``: 3 humans; ``two``: 2 humans; ``sparse``: 60 humans, 2-4 per item) and runs
    every design on the same table. Returns one row per (panel, design): n_reps, n_valid
    (replications where Δ had a CI), n_covered, coverage with its Wilson CI, mean Δ and
    the rejection rate of H0: Δ = 0 at 1 − ``ci``.
    """
    from statsmodels.stats.proportion import proportion_confint
    from tqdm.auto import tqdm

    from medeval_kit.datasets.synthetic import synthetic_panel

    unknown = [p for p in panels if p not in PANELS]
    if unknown:
        raise AgreementError(f"unknown panel(s) {unknown}; choose from {list(PANELS)}")
    res = {(p, d): [] for p in panels for d in designs}
    bar = tqdm(total=n_reps * len(panels), desc="equal-noise coverage", disable=not progress)
    for p in panels:
        for r in range(n_reps):
            t = synthetic_panel(n_items=n_items, n_judges=n_judges, kappa=kappa, seed=seed * 100003 + r,
                                **PANELS[p])
            for d in designs:
                tab = judge_vs_humans(t, design=d, metric=metric, n_boot=n_boot, ci=ci, seed=r).table
                for j in tab[tab["role"] == "judge"].itertuples():
                    if np.isfinite(j.delta_ci_low):
                        res[(p, d)].append((j.delta_ci_low <= 0 <= j.delta_ci_high, j.delta))
            bar.update(1)
    bar.close()
    rows = []
    for (p, d), v in res.items():
        n = len(v)
        k = int(sum(c for c, _ in v))
        lo, hi = proportion_confint(k, n, alpha=1 - ci, method="wilson") if n else (_NAN, _NAN)
        rows.append(dict(panel=p, design=d, n_reps=n_reps, n_valid=n, n_covered=k,
                         coverage=k / n if n else _NAN, coverage_ci_low=lo, coverage_ci_high=hi,
                         mean_delta=float(np.mean([x for _, x in v])) if n else _NAN,
                         rejection_rate=1 - k / n if n else _NAN, n_items=n_items, kappa=kappa, n_boot=n_boot,
                         note="" if n else "no delta under this design (e.g. MedQADE needs 3 humans)"))
    return pd.DataFrame(rows)
