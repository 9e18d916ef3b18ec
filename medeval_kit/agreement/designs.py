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
from medeval_kit.agreement.panel import panel_of
from medeval_kit.agreement.verdicts import join_reasons, label_gate, noninferiority_verdict
from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.stats import interval, percentile_interval

__all__ = ["DESIGNS", "AVERAGES", "MIN_ITEMS_PER_HUMAN", "MIN_SHARE_IN_MEAN", "judge_vs_humans", "compare_designs",
           "choose_average"]

DESIGNS = ("loo", "pooled", "medqade")
AVERAGES = ("auto", "humans", "instances")
PAIR_WEIGHTS = ("item", "pair")
# "auto" averages over the humans with at least MIN_ITEMS_PER_HUMAN comparisons when they hold at least
# MIN_SHARE_IN_MEAN of the (human, item) instances, else pools the instances: a kappa on a handful of items is
# too noisy to average, and a share (unlike a count of raters) does not flip for one extra rater (choose_average).
MIN_ITEMS_PER_HUMAN = 30
MIN_SHARE_IN_MEAN = 0.9
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


@shared_docs
@takes_columns("item", "rater", "label", "rater_kind")
def judge_vs_humans(
    df: pd.DataFrame,
    humans: Sequence | None = None,
    judges: Sequence | None = None,
    *,
    columns: Columns = None,
    design: str = "loo",
    metric: str = "cohen_kappa",
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
    accept_label_warnings: bool = False,
) -> JudgeComparison:
    """Each judge against the humans, scored exactly like a held-out human (see the module docstring).

    The labels are checked first (:func:`~medeval_kit.agreement.verdicts.label_gate`): labels that
    differ only by case, ``NA`` used as a label, numbers but for a few, or a label used once or by one
    rater only make every judge's ``status`` ``invalid`` with the finding in ``reasons``, unless
    ``accept_label_warnings=True`` (or ``categories`` declares the labels).

    Humans come from ``humans`` or the ``rater_kind`` column (values ``human`` / ``llm``); never
    guessed. Judges default to every other rater. ``metric`` is any pairwise registered coefficient.
    Returns a :class:`JudgeComparison` whose table has one ``humans`` row and one ``judge`` row per
    judge with the result contract (``estimate``, CI, ``n_items`` ...), ``n_pairs``, ``delta`` =
    judge − humans with its paired-bootstrap CI, ``p_value`` (two-sided, H0: Δ = 0) and
    ``p_noninferiority`` (H0: Δ ≤ −``margin``; ``noninferior`` when the lower CI bound of Δ is above
    −margin). Each judge row has a verdict: ``status`` (pass / fail / inconclusive / not_testable),
    ``rule`` in words and ``reasons`` (:mod:`medeval_kit.agreement.verdicts`); ``p_noninferiority`` is
    read from the same replicates as the CI, so ``p_noninferiority < (1 - confidence) / 2`` exactly
    when the verdict is pass. Items without a consensus (ties) are counted in ``n_ties``. Under
    ``"loo"``, ``average="auto"`` averages over the humans with >= 30 items when they hold >= 90% of
    the (human, item) instances, else pools the instances (:func:`choose_average`); the choice and
    its reason are in ``design_note`` and the humans row's ``note``.

    Parameters
    ----------
    df : DataFrame
        Long annotations (``item``, ``rater``, ``label`` [, ``rater_kind``]).
    humans, judges : sequence, optional
        The human raters and the judges; default from the ``rater_kind`` column (judges: every other rater).
    {columns}
    design : {"loo", "pooled", "medqade"}, default "loo"
        Symmetric leave-one-out, pooled pairs, or MedQADE's design (see the module docstring).
    metric : str, default "cohen_kappa"
        A pairwise registered coefficient.
    categories : sequence, optional
        The declared labels (declaring them also accepts the label checks' findings on rare labels).
    weights : {None, "linear", "quadratic"}, optional
        Agreement weights, as in :func:`~medeval_kit.agreement.agreement`.
    rule : {"plurality", "strict"}, default "plurality"
        Voting rule of the consensus references.
    tie_policy : {"na", "first", "random"}, default "na"
        What a tied consensus gives (``"na"``: the instance is left out and counted in ``n_ties``).
    abstain : sequence, default ()
        Labels that are not votes.
    average : {"auto", "humans", "instances"}, default "auto"
        Under ``"loo"``: average the per-human scores over humans, or pool the (human, item) instances.
    pair_weights : {"item", "pair"}, default "item"
        Under ``"pooled"``: each item or each rater pair weighs the same.
    margin : float, default 0.05
        Non-inferiority margin of the verdict.
    n_boot : int, default 1000
        Paired item-bootstrap resamples; ``0``: no CI and no test.
    {confidence}
    {seed}
    {source}
    accept_label_warnings : bool, default False
        Compute the verdict even though the label checks found problems (they stay in ``reasons``).

    Returns
    -------
    JudgeComparison
        ``.table`` (also ``.to_frame()``): one ``humans`` row and one ``judge`` row per judge in the
        result contract, with ``delta``, its CI, ``p_value``, ``p_noninferiority`` and the verdict.

    Raises
    ------
    AgreementError
        An unknown design, metric, average or pair weighting, or bad bootstrap settings.
    PanelError
        Who is human cannot be told.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> res = judge_vs_humans(synthetic_panel(n_items=200, seed=1), n_boot=200)
    >>> list(res.table["role"])
    ['humans', 'judge']
    """
    _check(design, metric, average, pair_weights, n_boot, confidence)
    item, rater, label = "item", "rater", "label"
    humans, judges = panel_of(df, humans, judges,
                                   min_humans=1 if design == "medqade" else 2, source=source)
    if design == "medqade":
        res = medqade_comparison(df, humans, judges, metric=metric, categories=categories, rule=rule, tie_policy=tie_policy, abstain=abstain,
                                 margin=margin, n_boot=n_boot, confidence=confidence, seed=seed)
        return label_gate(res, df, label=label, rater=rater, raters=humans + judges, categories=categories,
                          accept_label_warnings=accept_label_warnings)
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
        sides, rows, how = _pooled(codes, data.K, H, J, judges, metric, weights, pair_weights)
        details = pd.DataFrame(rows)
    ci_method = (f"bootstrap percentile over items (B={n_boot}, seed={seed}); paired for delta" if n_boot else "")
    table = _assemble(sides, judges, design, metric, margin, n_boot, confidence, seed, how)
    table["ci_method"] = ci_method
    if not judges:
        table["note"] = [f"{n}; no judge in the table: only the humans' level" if n else
                         "no judge in the table: only the humans' level" for n in table["note"]]
    res = JudgeComparison(table, details, design, metric, ci_method, tuple(humans), tuple(judges),
                          design_note=sides["humans"].get("design_note", ""))
    return label_gate(res, df, label=label, rater=rater, raters=humans + judges, categories=categories,
                      accept_label_warnings=accept_label_warnings)


# --------------------------------------------------------------------------- leave-one-out


def _loo_components(codes, K, H, J, humans, judges, metric, weights, rule, tie_policy, rng):
    """Per human h: h vs the others' consensus, and each judge (and h) vs that consensus on the judge's items."""
    hum_stats, judge_stats, rows, used = [], {j: [] for j in J}, [], []
    counts = dict(n_ties=0, n_alone=0)
    for k, h in zip(H, humans):
        cons, n_votes, _ = vote(codes[:, [o for o in H if o != k]], K, rule, tie_policy, rng)
        lab = codes[:, k] >= 0
        ties = lab & (n_votes > 0) & (cons < 0)
        counts["n_ties"] += int(ties.sum())
        counts["n_alone"] += int((lab & (n_votes == 0)).sum())
        ref = np.where(lab & (cons >= 0), cons, -1)
        used.append(ref >= 0)
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
    return hum_stats, judge_stats, rows, counts, used


def _listed(pairs: list[str], limit: int = 10) -> str:
    """``a (1 item), b (5 items)``, the first ``limit`` and how many more (the count is the rest, exactly)."""
    more = f" and {len(pairs) - limit} more (see details)" if len(pairs) > limit else ""
    return ", ".join(pairs[:limit]) + more


def choose_average(sizes: Sequence[int], average: str = "auto") -> tuple[str, np.ndarray, str]:
    """How leave-one-out aggregates the per-human components, which humans enter, and why (in words).

    ``average="auto"`` takes the mean over humans when the humans with at least
    :data:`MIN_ITEMS_PER_HUMAN` comparisons hold at least :data:`MIN_SHARE_IN_MEAN` of all the
    (human, item) comparisons and are at least two; the humans below the minimum are then left
    out of the mean. Otherwise it pools the instances of every human. A rule on a *share of
    instances*, not on a count of raters: one extra rater with one item adds one instance to the
    total (N), which moves the share by less than 1/N, so it can flip the choice only on a panel
    already within one instance of the 90% line (never on one where every rater has >= 30 items),
    and that rater is left out of the mean (his label still enters the others' consensus on his item).

    Parameters
    ----------
    sizes : sequence of int
        Comparisons (items with a reference) per human.
    average : {"auto", "humans", "instances"}
        ``"humans"`` averages every human (as asked), ``"instances"`` pools every human.

    Returns
    -------
    (str, numpy.ndarray, str)
        ``"humans"`` or ``"instances"``, a boolean mask of the humans that enter, and why.

    Examples
    --------
    >>> how, used, why = choose_average([200, 180, 150, 1])
    >>> how, used.tolist()
    ('humans', [True, True, True, False])
    >>> choose_average([8, 5, 7, 6])[0]
    'instances'
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    total = int(sizes.sum())
    big = sizes >= MIN_ITEMS_PER_HUMAN
    share = float(sizes[big].sum() / total) if total else 0.0
    held = (f"the {int(big.sum())} human(s) with >= {MIN_ITEMS_PER_HUMAN} items hold {share:.1%} of the {total} "
            f"(human, item) instances")
    if average == "humans":
        return "humans", np.ones(len(sizes), bool), "average='humans' was asked for"
    if average == "instances":
        return "instances", np.ones(len(sizes), bool), "average='instances' was asked for"
    if share >= MIN_SHARE_IN_MEAN and big.sum() >= 2:
        return "humans", big, f"{held} (>= {MIN_SHARE_IN_MEAN:.0%})"
    why = (f"{held} (< {MIN_SHARE_IN_MEAN:.0%})" if share < MIN_SHARE_IN_MEAN else
           f"fewer than 2 humans have >= {MIN_ITEMS_PER_HUMAN} items")
    return "instances", np.ones(len(sizes), bool), why


def _loo(codes, K, H, J, humans, judges, metric, weights, rule, tie_policy, average, rng):
    """Per-human components aggregated over humans (mean) or instances (pooled features)."""
    hum_stats, judge_stats, rows, counts, used = _loo_components(codes, K, H, J, humans, judges, metric, weights,
                                                                 rule, tie_policy, rng)
    sizes = [s.n_items for s in hum_stats]
    how, enter, why = choose_average(sizes, average)
    note_how = (f"mean over humans of each human's {metric}" if how == "humans" else
                f"{metric} on the pooled (human, item) instances")
    small = [f"{humans[i]} ({sizes[i]} item{'s' if sizes[i] != 1 else ''})" for i in np.flatnonzero(~enter)]
    undefined = [i for i in np.flatnonzero(enter) if how == "humans" and not np.isfinite(_point(hum_stats[i]))]
    idx = [i for i in np.flatnonzero(enter) if i not in undefined]
    if not idx:
        raise AgreementError(f"{metric} is undefined for every human against the others' consensus "
                             "(too few items, or a single category used)")
    n = int(np.any([used[i] for i in idx], axis=0).sum())

    def agg(sts, n_items):
        if how == "humans":
            return mean_stat([sts[i] for i in idx], n_items, skip_undefined=True)
        return pooled_stat([sts[i] for i in idx], n_items)

    design_note = f"{note_how}, because {why}" + (
        f"; {len(small)} human(s) with fewer than {MIN_ITEMS_PER_HUMAN} items left out of the mean: {_listed(small)}"
        if small else "")
    notes = [f"leave-one-out: {design_note}"]
    if undefined:
        notes.append(f"{len(undefined)} human(s) with an undefined {metric} left out of the mean")
    if counts["n_ties"]:
        notes.append(f"{counts['n_ties']} (human, item) instances without a consensus of the others (ties) left out")
    if counts["n_alone"]:
        notes.append(f"{counts['n_alone']} (human, item) instances with no other human left out")
    sides = {"humans": dict(stat=agg(hum_stats, n), n_pairs=int(sum(sizes[i] for i in idx)),
                            n_ties=counts["n_ties"], note="; ".join(notes), n_humans=len(idx),
                            design_note=design_note)}
    for j, name in zip(J, judges):
        sj = [a for a, _ in judge_stats[j]]
        n_j = int(np.any([sj[i].F.sum(1) > 0 for i in idx], axis=0).sum())
        jnote = ("" if n_j >= n else
                 f"the judge labelled {n_j} of the {n} items; delta compares the humans on those items only")
        sides[name] = dict(stat=agg(sj, n_j), ref=agg([b for _, b in judge_stats[j]], n_j),
                           n_pairs=int(sum(sj[i].n_items for i in idx)), n_ties=counts["n_ties"], note=jnote,
                           n_humans=len(idx))
    details = pd.DataFrame(rows)
    if len(details):
        details["in_mean"] = [i in idx for i in range(len(H))]
        details["left_out"] = ["" if i in idx else
                               f"undefined {metric}" if i in undefined else
                               f"fewer than {MIN_ITEMS_PER_HUMAN} items" for i in range(len(H))]
    return sides, details, how


# --------------------------------------------------------------------------- pooled pairs


def _pooled(codes, K, H, J, judges, metric, weights, pair_weights):
    """Pooled pairs: symmetrised human-human and judge-human contingency tables per item.

    Returns the sides, the rows of the details table (a list of dicts) and ``"pairs"``.
    """
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
    return sides, rows, "pairs"


# --------------------------------------------------------------------------- the table


def delta_interval(d: np.ndarray, confidence: float) -> tuple[float, float]:
    """Δ's percentile CI from its paired replicates ``d`` (non-finite ones dropped); NaN with fewer than two.

    What :func:`verdict_columns` puts in ``delta_ci_low`` / ``delta_ci_high`` (also used by the
    equal-noise simulation, :mod:`medeval_kit.agreement.coverage`).
    """
    d = np.asarray(d, float)
    d = d[np.isfinite(d)]
    return percentile_interval(d, confidence=confidence) if len(d) >= 2 else (_NAN, _NAN)


def verdict_columns(row: dict, d: np.ndarray | None, n_boot: int, confidence: float, margin: float) -> None:
    """Add Δ's percentile CI, p-values and the verdict (status, rule, reasons) from paired replicates ``d``.

    The verdict and ``p_noninferiority`` come from the same replicates (see
    :func:`~medeval_kit.agreement.verdicts.noninferiority_verdict`); the CI decides.
    """
    d = np.asarray([] if d is None else d, float)
    d = d[np.isfinite(d)]
    if len(d) >= 2:
        row["delta_ci_low"], row["delta_ci_high"] = delta_interval(d, confidence)
        row["p_value"] = paired_p_values(d, margin)["p_value"]
    v = noninferiority_verdict(d, row.get("delta", _NAN), margin, confidence, int(row.get("n_items") or 0),
                               n_boot=n_boot)
    row.update(status=v["status"], rule=v["rule"], reasons=join_reasons(v["reasons"]), noninferior=v["noninferior"],
               p_noninferiority=v.get("p_noninferiority", _NAN))
    if n_boot and 0 < len(d) < n_boot:
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
    same = dict(design=design if design != "loo" else f"loo ({how})", metric=metric, margin=margin)
    lo, hi, _ = interval(ests[0], reps[:, 0], confidence, "percentile")
    rows = [dict(role="humans", rater=f"humans ({h['n_humans']})", estimate=ests[0], ci_low=lo, ci_high=hi,
                 n_items=h["stat"].n_items, n_pairs=h["n_pairs"], n_humans=h["n_humans"], n_ties=h["n_ties"],
                 note=h["note"], **same)]
    for k, j in enumerate(judges):
        s = sides[j]
        a, b = 1 + 2 * k, 2 + 2 * k
        lo, hi, _ = interval(ests[a], reps[:, a], confidence, "percentile")
        row = dict(role="judge", rater=j, estimate=ests[a], ci_low=lo, ci_high=hi, n_items=s["stat"].n_items,
                   n_pairs=s["n_pairs"], n_humans=s["n_humans"], n_ties=s["n_ties"], delta=ests[a] - ests[b],
                   note=s["note"], **same)
        verdict_columns(row, reps[:, a] - reps[:, b] if n_boot and np.isfinite(row["delta"]) else None, n_boot,
                        confidence, margin)
        rows.append(row)
    return as_comparison_table(rows)


# --------------------------------------------------------------------------- every design


_SINGLE_REFERENCE_KEYS = ("metric", "categories", "rule", "tie_policy", "abstain", "n_boot",
                          "confidence", "seed", "margin")


@shared_docs
@takes_columns("item", "rater", "label", "rater_kind")
def compare_designs(
    df: pd.DataFrame,
    humans: Sequence | None = None,
    judges: Sequence | None = None,
    *,
    columns: Columns = None,
    designs: Sequence[str] = DESIGNS,
    reference: str | None = None,
    **kw,
) -> pd.DataFrame:
    """Every design side by side: the tables of :func:`judge_vs_humans` stacked, one block per design.

    A design that cannot run on this panel (for example leave-one-out with a single adjudicated
    expert) gives one row with NaN and the reason in ``note``; it never stops the others.

    Parameters
    ----------
    df : DataFrame
        Long annotations (``item``, ``rater``, ``label`` [, ``rater_kind``]).
    humans, judges : sequence, optional
        The human raters and the judges, as in :func:`judge_vs_humans`.
    {columns}
    designs : sequence of str, default ("loo", "pooled", "medqade")
        The designs to run.
    reference : str, optional
        A single expert: the MedQADE design's reference rater.
    **kw
        The keywords of :func:`judge_vs_humans` (``metric``, ``n_boot``, ``seed``, ``margin`` ...).

    Returns
    -------
    DataFrame
        The designs' tables stacked (``design`` column), each in the result contract with ``delta`` and the verdict.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> t = compare_designs(synthetic_panel(n_items=60, seed=1), n_boot=0)
    >>> len(t)
    6
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
            frames.append(as_comparison_table([row]))
    return as_comparison_table(pd.concat(frames, ignore_index=True))

