"""Does a judge track one physician? The error-dependence diagnostic behind every judge-vs-humans design.

:func:`~medeval_kit.agreement.judge_vs_humans` assumes the judge's errors are independent of each
physician's. A judge whose errors copy one physician (trained on that physician's notes, or prompted
with their guideline) agrees with that physician far beyond chance, so it also agrees better with any
consensus that physician is part of; with the physicians' own accuracy it is then declared
significantly *better* than them in about half of simulated panels. The estimate is right for the
design; the design's assumption is not.

:func:`error_dependence` measures it directly. For a rater r (a judge, or a human as the baseline)
and a human h, on the items that r, h and at least one other human labelled:

* ``with_human``: r's agreement with h;
* ``with_others``: r's agreement with the other humans (their labels pooled, each item weighing the same);
* ``estimate`` (the excess) = ``with_human`` − ``with_others``, with a CI from its paired item-bootstrap SE
  (a normal interval: the Bonferroni levels below sit further in the tails than B resamples resolve).

When errors are independent and the humans exchangeable, the excess is 0 in expectation for every
(r, h). The humans' own excesses with h (``human_max_excess``: the largest) show how much pairwise
affinity the panel has anyway. A judge ``tracks`` h when its excess's CI lies above ``margin`` (the CI
at level 1 − (1 − confidence) / n_h, Bonferroni over the n_h humans the judge is tested against), its
excess is larger than every human's excess with h, and the pair shares at least :data:`MIN_FLAG_ITEMS`
(30) items. :func:`dependence_warnings` words the flags
for the command line.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.agreement import registry
from medeval_kit.agreement.data import AgreementError, prepare
from medeval_kit.agreement.engine import Stat, point, replicates
from medeval_kit.agreement.forms import pair_stat
from medeval_kit.agreement.panel import PanelError, panel_of
from medeval_kit.results import result_frame
from medeval_kit.stats import MIN_CI_ITEMS, ci_not_computed, normal_interval

__all__ = ["error_dependence", "dependence_warnings", "DEPENDENCE_COLUMNS", "MIN_FLAG_ITEMS"]

DEPENDENCE_COLUMNS = ["rater", "role", "human", "metric", "estimate", "ci_low", "ci_high", "ci_method", "n_items",
                      "n_failed", "note", "with_human", "with_others", "human_max_excess", "n_others", "ci_level",
                      "tracks"]
"""The columns of :func:`error_dependence` (``estimate`` is the excess)."""
MIN_FLAG_ITEMS = 30
"""A judge is flagged only on a pair with at least this many items. On fewer, the normal interval at a
Bonferroni level is too optimistic (kappa near 1 on 28 items has a small bootstrap SE): in 20 simulated
sparse panels of 107 exchangeable physicians (~28 items per pair) an independent judge was flagged in 5
without this floor, in 1 with it. Such pairs keep their CI and say why they are not flagged."""
_NAN = float("nan")


def _pair_features(a: np.ndarray, b: np.ndarray, K: int) -> np.ndarray:
    """(n, K*K) one-hot cells of the pair (a rows, b columns); every label present."""
    F = np.zeros((len(a), K * K))
    F[np.arange(len(a)), a * K + b] = 1.0
    return F


def _others_features(a: np.ndarray, others: np.ndarray, K: int) -> np.ndarray:
    """(n, K*K) cells of a against the other humans' labels, each item's pairs weighing 1 in all."""
    N = np.zeros((len(a), K))
    for col in others.T:
        ok = col >= 0
        np.add.at(N, (np.flatnonzero(ok), col[ok]), 1.0)
    share = N / N.sum(1, keepdims=True)
    F = np.zeros((len(a), K, K))
    F[np.arange(len(a)), a, :] = share
    return F.reshape(len(a), K * K)


def error_dependence(
    df: pd.DataFrame,
    humans: Sequence | None = None,
    judges: Sequence | None = None,
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    rater_kind: str | None = "rater_kind",
    metric: str = "cohen_kappa",
    categories: Sequence | None = None,
    weights: str | None = None,
    margin: float = 0.0,
    min_overlap: int = MIN_CI_ITEMS,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    source: str | None = None,
) -> pd.DataFrame:
    """Each judge's (and, as the baseline, each human's) agreement with every human against the other humans.

    See the module docstring for the statistic and the rule. One row per (rater, human): judges first,
    then the humans with each other human.

    Parameters
    ----------
    df : DataFrame
        A long annotations table (``item``, ``rater``, ``label`` [, ``rater_kind``]).
    humans, judges : sequence, optional
        The human raters (default: ``rater_kind`` == human) and the judges (default: every other rater).
    item, rater, label, rater_kind : str
        Column names.
    metric : str
        Any pairwise registered coefficient (default ``cohen_kappa``).
    categories, weights : optional
        Declared labels; agreement weights as in :func:`~medeval_kit.agreement.agreement`.
    margin : float
        The excess a judge's CI must clear to be flagged (default 0: any excess that the CI shows).
    min_overlap : int
        (rater, human) pairs with fewer items labelled by both and another human are left out (default 10,
        the fewest a CI is computed from; 0 keeps every pair that shares an item, with the reason it has no CI).
    n_boot, confidence, seed : int, float, int
        The paired item bootstrap (``n_boot=0``: estimates only, nothing flagged).
    source : str, optional
        The file name for error messages.

    Returns
    -------
    DataFrame
        Keys ``rater``, ``role`` (``judge`` / ``human``), ``human``, ``metric``; the result contract with
        ``estimate`` = the excess (``with_human`` − ``with_others``) and its CI at ``ci_level``; then
        ``with_human``, ``with_others``, ``human_max_excess`` (the largest excess of another human with
        this human; NaN with fewer than 3 humans), ``n_others``, ``ci_level`` and ``tracks`` (judges:
        True/False; humans: NA, they are the baseline). One row per pair that shares ``min_overlap`` items;
        no CI from fewer than 10 (the note says so).

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> t = error_dependence(synthetic_panel(n_items=200, n_humans=3, seed=1), n_boot=200)
    >>> t.loc[t["role"] == "judge", ["rater", "human", "tracks"]].to_dict("records")[0]
    {'rater': 'llm1', 'human': 'h1', 'tracks': False}
    """
    coef = registry.get(metric)
    if not coef.pairwise:
        raise AgreementError(f"error_dependence compares label pairs: metric must be one of "
                             f"{tuple(registry.names(pairwise=True))}; not {metric!r}")
    if n_boot < 0 or not 0 < confidence < 1:
        raise AgreementError(f"n_boot must be 0 or more and confidence in (0, 1); got {n_boot}, {confidence}")
    humans, judges = panel_of(df, humans, judges, rater=rater, rater_kind=rater_kind, min_humans=2,
                                   source=source)
    humans, judges = list(humans), list(judges)
    data = prepare(df, item=item, rater=rater, label=label, raters=humans + judges, categories=categories,
                   source=source)
    K, codes = data.K, data.codes
    fn = pair_stat(coef, np.zeros(1, int), np.zeros(1, int), K, weights).fn
    idx = {r: i for i, r in enumerate(data.raters)}
    lab = codes >= 0
    H = np.array([idx[h] for h in humans])
    labelled_h = lab[:, H]  # (items, humans)
    n_humans_on = labelled_h.sum(1)
    rows = []
    for r, role in [(j, "judge") for j in judges] + [(h, "human") for h in humans]:
        own = lab[:, idx[r]]
        others_on = n_humans_on[:, None] - labelled_h - (own[:, None] if role == "human" else 0)
        shared = (own[:, None] & labelled_h & (others_on > 0)).sum(0)  # items r, h and another human labelled
        pairs = [(h, int(n)) for h, n in zip(humans, shared) if h != r and n >= max(min_overlap, 1)]
        tested = [h for h, n in pairs if n >= MIN_CI_ITEMS]
        level = 1 - (1 - confidence) / max(len(tested), 1)  # Bonferroni over the humans r is tested against
        for h, n in pairs:
            others = [idx[o] for o in humans if o not in (r, h)]
            use = own & lab[:, idx[h]] & (lab[:, others].any(1) if others else False)
            row = dict(rater=r, role=role, human=h, metric=metric, n_others=len(others), estimate=_NAN,
                       with_human=_NAN, with_others=_NAN, n_items=n, ci_level=level, note="")
            a = codes[use, idx[r]]
            st_h = Stat(_pair_features(a, codes[use, idx[h]], K), fn, n)
            st_o = Stat(_others_features(a, codes[np.ix_(use, others)], K), fn, n)
            row["with_human"], row["with_others"] = point(st_h), point(st_o)
            row["estimate"] = row["with_human"] - row["with_others"]
            few = ci_not_computed(n)
            if not np.isfinite(row["estimate"]):
                row["note"] = f"{metric} undefined on these {n} items (e.g. a single category used)"
            elif few and n_boot:
                row["note"] = few
            elif n_boot:
                reps = replicates([st_h, st_o], n_boot, seed)
                d = reps[:, 0] - reps[:, 1]
                d = d[np.isfinite(d)]
                if len(d) >= 2:  # Bonferroni levels sit beyond what B percentiles resolve: a normal interval
                    row["ci_low"], row["ci_high"] = normal_interval(row["estimate"], float(d.std(ddof=1)),
                                                                    confidence=level)
                    row["ci_method"] = (f"normal interval, SE from a paired item bootstrap (B={n_boot}, seed={seed}); "
                                        f"level {level:.4g} (Bonferroni over {len(tested)} humans)")
                if len(d) < n_boot:
                    row["note"] = f"{n_boot - len(d)} of {n_boot} resamples undefined and dropped"
            if np.isfinite(row.get("ci_low", _NAN)) and n < MIN_FLAG_ITEMS:
                row["note"] = "; ".join(x for x in (row["note"], f"not flagged on fewer than {MIN_FLAG_ITEMS} items")
                                        if x)
            rows.append(row)
    if not rows:
        return pd.DataFrame(columns=DEPENDENCE_COLUMNS)
    out = result_frame(rows, keys=["rater", "role", "human", "metric"])
    for c in DEPENDENCE_COLUMNS:
        if c not in out.columns:
            out[c] = _NAN
    hum = out[(out["role"] == "human") & out["estimate"].notna()]
    best = hum.sort_values("estimate", ascending=False, kind="stable").groupby("human")
    first, second = best.nth(0).set_index("human"), best.nth(1).set_index("human")
    out["human_max_excess"] = out["human"].map(first["estimate"]).astype(float)
    # a human's baseline leaves the human's own row out: the largest excess of the other humans with h
    own_best = (out["role"] == "human") & out["rater"].eq(out["human"].map(first["rater"]))
    out.loc[own_best, "human_max_excess"] = out.loc[own_best, "human"].map(second["estimate"]).astype(float)
    judge = out["role"] == "judge"
    above = (out["ci_low"].astype(float) > margin) & (out["n_items"] >= MIN_FLAG_ITEMS)
    beyond = out["human_max_excess"].isna() | (out["estimate"] > out["human_max_excess"])
    out["tracks"] = pd.Series((above & beyond).tolist(), index=out.index, dtype=object)
    out.loc[~judge, "tracks"] = pd.NA
    return out[DEPENDENCE_COLUMNS]


def dependence_warnings(
    df: pd.DataFrame,
    humans: Sequence | None = None,
    judges: Sequence | None = None,
    **kw,
) -> list[str]:
    """One line per judge that tracks a human, for ``medeval judge-vs-humans`` (empty when none does).

    Parameters
    ----------
    df : DataFrame
        The annotations table, as for :func:`error_dependence`.
    humans, judges : sequence, optional
        As for :func:`error_dependence` (None: from ``rater_kind`` / every other rater).
    **kw
        Passed to :func:`error_dependence` (``metric``, ``n_boot``, ``seed``, column names ...).

    Returns
    -------
    list of str
        ``"warning: judge X tracks human Y: ..."`` lines. A panel the diagnostic cannot test (fewer
        than two humans, no shared items) gives none.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> dependence_warnings(synthetic_panel(n_items=200, seed=1), n_boot=200)
    []
    """
    try:
        t = error_dependence(df, humans, judges, **kw)
    except (PanelError, AgreementError):
        return []
    out = []
    for r in t[t["role"] == "judge"].to_dict("records"):
        if r["tracks"] is not True:
            continue
        base = ("" if pd.isna(r["human_max_excess"]) else
                f"; no other human exceeds {r['human_max_excess']:+.2f} with {r['human']}")
        out.append(
            f"warning: judge {r['rater']} tracks human {r['human']}: {r['metric']} {r['with_human']:.2f} with "
            f"{r['human']} against {r['with_others']:.2f} with the other humans on the same {r['n_items']} items "
            f"(excess {r['estimate']:+.2f}, {r['ci_level']:.3g} CI [{r['ci_low']:.2f}, {r['ci_high']:.2f}]{base}). "
            "Its errors are not independent of this human's, so agreement with a consensus that includes them "
            "overstates the judge; compare it without this human (--humans) or on items they did not label")
    return out
