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

from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.agreement import registry
from medeval_kit.agreement.ceiling import medqade_comparison, single_reference
from medeval_kit.agreement.comparison import JudgeComparison, as_comparison_table, paired_p_values
from medeval_kit.agreement.consensus import abstain_codes, vote
from medeval_kit.agreement.data import AgreementError, count_matrix, prepare
from medeval_kit.agreement.engine import Stat, mean_stat, point, pooled_stat, replicates
from medeval_kit.agreement.forms import pair_stat
from medeval_kit.agreement.panel import resolve_panel
from medeval_kit.stats import interval, percentile_interval

__all__ = ["DESIGNS", "AVERAGES", "MIN_ITEMS_PER_HUMAN", "judge_vs_humans", "compare_designs"]

DESIGNS = ("loo", "pooled", "medqade")
AVERAGES = ("auto", "humans", "instances")
PAIR_WEIGHTS = ("item", "pair")
# "auto" averages over humans when every human has at least this many comparisons, else pools
# the (human, item) instances: a kappa on a handful of items is too noisy to average.
MIN_ITEMS_PER_HUMAN = 30
_NAN = float("nan")


def _point(st: Stat) -> float:
    return point(st) if st.n_items else _NAN


def _check(design, metric, average, pair_weights, n_boot, confidence) -> None:
    if design not in DESIGNS:
        raise AgreementError(f"design must be one of {DESIGNS}; not {design!r}")
    pairwise = registry.names(pairwise=True)
    if metric not in pairwise:
        raise AgreementError(f"judge_vs_humans compares label pairs: metric must be one of {tuple(pairwise)}; "
                             f"not {metric!r}")
    if average not in AVERAGES:
        raise AgreementError(f"average must be one of {AVERAGES}; not {average!r}")
    if pair_weights not in PAIR_WEIGHTS:
        raise AgreementError(f"pair_weights must be 'item' or 'pair'; not {pair_weights!r}")
    if n_boot < 0:
        raise AgreementError(f"n_boot must be 0 or more; not {n_boot}")
    if not 0 < confidence < 1:
        raise AgreementError(f"confidence must be a level between 0 and 1, e.g. 0.95; not {confidence!r}")


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
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    source: str | None = None,
) -> JudgeComparison:
    """Each judge against the humans, scored exactly like a held-out human (see the module docstring).

    Humans come from ``humans`` or the ``rater_kind`` column (values ``human`` / ``llm``); never
    guessed. Judges default to every other rater. ``metric`` is any pairwise registered coefficient.
    Returns a :class:`JudgeComparison` whose table has one ``humans`` row and one ``judge`` row per
    judge with the result contract (``estimate``, CI, ``n_items`` ...), ``n_pairs``, ``delta`` =
    judge − humans with its paired-bootstrap CI, ``p_value`` (two-sided, H0: Δ = 0) and
    ``p_noninferiority`` (H0: Δ ≤ −``margin``; ``noninferior`` when the lower CI bound of Δ is above
    −margin). Items without a consensus (ties) are counted in ``n_ties``.

    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> res = judge_vs_humans(synthetic_panel(n_items=200, seed=1), n_boot=200)
    >>> list(res.table["role"])
    ['humans', 'judge']
    """
    _check(design, metric, average, pair_weights, n_boot, confidence)
    humans, judges = resolve_panel(df, humans, judges, rater=rater, rater_kind=rater_kind,
                                   min_humans=1 if design == "medqade" else 2, source=source)
    if design == "medqade":
        return medqade_comparison(df, humans, judges, metric=metric, item=item, rater=rater, label=label,
                                  categories=categories, rule=rule, tie_policy=tie_policy, abstain=abstain,
                                  margin=margin, n_boot=n_boot, confidence=confidence, seed=seed)
    data = prepare(df, item=item, rater=rater, label=label, raters=humans + judges, categories=categories,
                   level="ordinal" if weights else "nominal", source=source)
    codes = abstain_codes(data, abstain)
    H = [data.raters.index(h) for h in humans]
    J = [data.raters.index(j) for j in judges]
    if design == "loo":
        rng = np.random.default_rng(seed)
        sides, details, how = _loo(codes, data.K, H, J, humans, judges, metric, weights, rule, tie_policy, average,
                                   rng)
    else:
        sides, details, how = _pooled(codes, data.K, H, J, judges, metric, weights, pair_weights)
    ci_method = (f"bootstrap percentile over items (B={n_boot}, seed={seed}); paired for delta" if n_boot else "")
    table = _assemble(sides, judges, design, metric, margin, n_boot, confidence, seed, how)
    table["ci_method"] = ci_method
    if not judges:
        table["note"] = [f"{n}; no judge in the table: only the humans' level" if n else
                         "no judge in the table: only the humans' level" for n in table["note"]]
    return JudgeComparison(table, details, design, metric, ci_method, tuple(humans), tuple(judges))


# --------------------------------------------------------------------------- leave-one-out


def _loo_components(codes, K, H, J, humans, judges, metric, weights, rule, tie_policy, rng):
    """Per human h: h vs the others' consensus, and each judge (and h) vs that consensus on the judge's items."""
    hum_stats, judge_stats, rows = [], {j: [] for j in J}, []
    counts = dict(n_ties=0, n_alone=0)
    used_items = np.zeros(len(codes), bool)
    for k, h in zip(H, humans):
        cons, n_votes, _ = vote(codes[:, [o for o in H if o != k]], K, rule, tie_policy, rng)
        lab = codes[:, k] >= 0
        ties = lab & (n_votes > 0) & (cons < 0)
        counts["n_ties"] += int(ties.sum())
        counts["n_alone"] += int((lab & (n_votes == 0)).sum())
        ref = np.where(lab & (cons >= 0), cons, -1)
        used_items |= ref >= 0
        st_h = pair_stat(metric, ref, codes[:, k], K, weights)
        hum_stats.append(st_h)
        row = dict(human=h, n_items=st_h.n_items, n_ties=int(ties.sum()), human_estimate=_point(st_h))
        for j, name in zip(J, judges):
            both = np.where(codes[:, j] >= 0, ref, -1)
            st_j = pair_stat(metric, both, codes[:, j], K, weights)
            judge_stats[j].append((st_j, pair_stat(metric, both, codes[:, k], K, weights)))  # h on the judge's items
            row[f"{name}_estimate"] = _point(st_j)
            row[f"{name}_n_items"] = st_j.n_items
        rows.append(row)
    return hum_stats, judge_stats, rows, counts, int(used_items.sum())


def _loo(codes, K, H, J, humans, judges, metric, weights, rule, tie_policy, average, rng):
    """Per-human components aggregated over humans (mean) or instances (pooled features)."""
    hum_stats, judge_stats, rows, counts, n = _loo_components(codes, K, H, J, humans, judges, metric, weights, rule,
                                                              tie_policy, rng)
    sizes = [s.n_items for s in hum_stats]
    how = average if average != "auto" else ("humans" if min(sizes) >= MIN_ITEMS_PER_HUMAN else "instances")
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
        return pooled_stat(sts, n_items)

    notes = [f"leave-one-out: {note_how}"]
    if skipped:
        notes.append(f"{skipped} human(s) with an undefined {metric} left out of the mean")
    if counts["n_ties"]:
        notes.append(f"{counts['n_ties']} (human, item) instances without a consensus of the others (ties) left out")
    if counts["n_alone"]:
        notes.append(f"{counts['n_alone']} (human, item) instances with no other human left out")
    sides = {"humans": dict(stat=agg(hum_stats, n), n_pairs=int(sum(sizes)), n_ties=counts["n_ties"],
                            note="; ".join(notes), n_humans=len(H) - skipped)}
    for j, name in zip(J, judges):
        sj = [a for a, _ in judge_stats[j]]
        n_j = int(np.any([st.F.sum(1) > 0 for st in sj], axis=0).sum())
        jnote = ("" if n_j >= n else
                 f"the judge labelled {n_j} of the {n} items; delta compares the humans on those items only")
        sides[name] = dict(stat=agg(sj, n_j), ref=agg([b for _, b in judge_stats[j]], n_j),
                           n_pairs=int(sum(s.n_items for s in sj)), n_ties=counts["n_ties"], note=jnote,
                           n_humans=len(H) - skipped)
    return sides, pd.DataFrame(rows), how


# --------------------------------------------------------------------------- pooled pairs


def _pooled(codes, K, H, J, judges, metric, weights, pair_weights):
    """Pooled pairs: symmetrised human-human and judge-human contingency tables per item."""
    N = count_matrix(codes[:, H], K)
    m = N.sum(1)
    ok = m >= 2
    hh = (N[:, :, None] * N[:, None, :] - N[:, :, None] * np.eye(K)[None]).reshape(len(N), K * K)
    w_h = np.where(ok, 1.0 / np.where(ok, m * (m - 1), 1), 0.0) if pair_weights == "item" else ok * 1.0
    fn = pair_stat(metric, np.zeros(1, int), np.zeros(1, int), K, weights).fn
    n_h = int(ok.sum())
    weighting = "each item weighted equally" if pair_weights == "item" else "each pair weighted equally"
    sides = {"humans": dict(stat=Stat(hh * w_h[:, None], fn, n_h), n_pairs=int((m * (m - 1) / 2)[ok].sum()),
                            n_ties=0, note=f"pooled pairs ({weighting}); symmetrised tables", n_humans=len(H))}
    rows = [dict(human="(all)", n_items=n_h, n_pairs=sides["humans"]["n_pairs"])]
    for j, name in zip(J, judges):
        lab = codes[:, j] >= 0
        use = ok & lab
        e = np.zeros((len(N), K))
        e[np.flatnonzero(lab), codes[lab, j]] = 1.0
        jh = (e[:, :, None] * N[:, None, :] + N[:, :, None] * e[:, None, :]).reshape(len(N), K * K)
        w_j = np.where(use, 1.0 / np.where(use, 2 * m, 1), 0.0) if pair_weights == "item" else use * 0.5
        n_j = int(use.sum())
        note = "" if n_j == n_h else f"the judge labelled {n_j} of the {n_h} items; delta uses those items only"
        sides[name] = dict(stat=Stat(jh * w_j[:, None], fn, n_j), ref=Stat(hh * np.where(use, w_h, 0.0)[:, None], fn, n_j),
                           n_pairs=int(m[use].sum()), n_ties=0, note=note, n_humans=len(H))
        rows.append(dict(human=f"{name} vs humans", n_items=n_j, n_pairs=int(m[use].sum())))
    return sides, pd.DataFrame(rows), "pairs"


# --------------------------------------------------------------------------- the table


def _delta(row: dict, d: np.ndarray, n_boot: int, confidence: float, margin: float) -> None:
    """Add Δ's percentile CI, p-values and the non-inferiority verdict from paired replicates ``d``."""
    d = d[np.isfinite(d)]
    if len(d) < 2:
        return
    row["delta_ci_low"], row["delta_ci_high"] = percentile_interval(d, confidence=confidence)
    row.update(paired_p_values(d, margin))
    row["noninferior"] = bool(row["delta_ci_low"] > -margin)
    if len(d) < n_boot:
        row["note"] = "; ".join(x for x in (row["note"], f"{n_boot - len(d)} of {n_boot} resamples "
                                            "undefined and dropped") if x)


def _assemble(sides, judges, design, metric, margin, n_boot, confidence, seed, how) -> pd.DataFrame:
    """Point estimates, one paired bootstrap for every side, Δ, p-values."""
    order = [sides["humans"]["stat"]]
    for j in judges:
        order += [sides[j]["stat"], sides[j]["ref"]]
    ests = np.array([_point(s) for s in order])
    reps = replicates(order, n_boot, seed) if n_boot else np.full((0, len(order)), np.nan)
    h = sides["humans"]
    lo, hi, _ = interval(ests[0], reps[:, 0], confidence, "percentile")
    rows = [dict(role="humans", rater=f"humans ({h['n_humans']})", estimate=ests[0], ci_low=lo, ci_high=hi,
                 n_items=h["stat"].n_items, n_pairs=h["n_pairs"], n_humans=h["n_humans"], n_ties=h["n_ties"],
                 note=h["note"])]
    for k, j in enumerate(judges):
        s = sides[j]
        a, b = 1 + 2 * k, 2 + 2 * k
        lo, hi, _ = interval(ests[a], reps[:, a], confidence, "percentile")
        row = dict(role="judge", rater=j, estimate=ests[a], ci_low=lo, ci_high=hi, n_items=s["stat"].n_items,
                   n_pairs=s["n_pairs"], n_humans=s["n_humans"], n_ties=s["n_ties"], delta=ests[a] - ests[b],
                   note=s["note"])
        if n_boot and np.isfinite(row["delta"]):
            _delta(row, reps[:, a] - reps[:, b], n_boot, confidence, margin)
        rows.append(row)
    out = pd.DataFrame(rows).assign(design=design if design != "loo" else f"loo ({how})", metric=metric,
                                    margin=margin)
    return as_comparison_table(out)


# --------------------------------------------------------------------------- every design


_SINGLE_REFERENCE_KEYS = ("metric", "item", "rater", "label", "categories", "rule", "tie_policy", "abstain", "n_boot",
                          "confidence", "seed", "margin")


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
                frames.append(single_reference(df, reference, judges,
                                               **{k: v for k, v in kw.items() if k in _SINGLE_REFERENCE_KEYS}))
            else:
                frames.append(judge_vs_humans(df, humans, judges, design=d, **kw).table)
        except (AgreementError, ValueError) as exc:
            row = dict(role="humans", rater="humans", design=d, metric=kw.get("metric", "cohen_kappa"), n_items=0,
                       n_pairs=0, note=f"design not applicable: {exc}")
            frames.append(as_comparison_table(pd.DataFrame([row])))
    return as_comparison_table(pd.concat(frames, ignore_index=True))

