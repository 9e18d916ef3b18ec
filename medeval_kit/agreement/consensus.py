"""Majority votes: the consensus of several raters (:func:`majority_vote`) and ensembles of judges (:func:`ensembles`)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.agreement.data import AgreementError, Data, count_matrix, prepare
from medeval_kit.agreement.engine import point, replicates
from medeval_kit.agreement.forms import pair_stat
from medeval_kit.agreement.panel import humans_from_kind
from medeval_kit.stats import interval

__all__ = ["RULES", "TIE_POLICIES", "vote", "abstain_codes", "majority_vote", "ensembles"]

RULES = ("plurality", "strict")
TIE_POLICIES = ("na", "first", "random")
_NAN = float("nan")


def vote(codes: np.ndarray, K: int, rule: str, tie_policy: str, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Consensus code per item (-1 = none), votes cast and the top count."""
    N = count_matrix(codes, K)
    n = N.sum(1)
    top = N.max(1) if K else np.zeros(len(N))
    winners = top[:, None] == N
    n_win = winners.sum(1)
    out = np.where(n_win == 1, N.argmax(1), -1)
    tied = (n_win > 1) & (n > 0)
    if tie_policy == "first":
        out = np.where(tied, N.argmax(1), out)
    elif tie_policy == "random":
        for i in np.flatnonzero(tied):
            out[i] = rng.choice(np.flatnonzero(winners[i]))
    elif tie_policy not in TIE_POLICIES:
        raise AgreementError(f"tie_policy must be one of {TIE_POLICIES}; not {tie_policy!r}")
    if rule == "strict":
        out = np.where(top > n / 2, out, -1)
    elif rule not in RULES:
        raise AgreementError(f"rule must be one of {RULES}; not {rule!r}")
    out = np.where(n > 0, out, -1)
    return out, n, top


def abstain_codes(data: Data, abstain) -> np.ndarray:
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


def majority_vote(
    df: pd.DataFrame,
    *,
    item="item",
    rater="rater",
    label="label",
    raters=None,
    categories=None,
    rule: str = "plurality",
    tie_policy: str = "na",
    abstain: Sequence = (),
    seed: int = 0,
    name: str = "consensus",
) -> pd.DataFrame:
    """Consensus label per item by majority vote.

    ``abstain`` labels (and NA) are dropped before counting. ``rule="plurality"`` takes the most
    frequent label; ``"strict"`` also needs more than half of the votes cast. ``tie_policy``:
    ``"na"`` (no consensus), ``"first"`` (first tied label in category order) or ``"random"``
    (seeded). Returns item, rater (= ``name``), label, n_votes, n_top, status
    (majority / tie / no_majority / no_votes); rows without consensus have label NA.
    """
    data = prepare(df, item=item, rater=rater, label=label, raters=raters, categories=categories)
    codes = abstain_codes(data, abstain)
    out, n, top = vote(codes, data.K, rule, tie_policy, np.random.default_rng(seed))
    N = count_matrix(codes, data.K)
    tied = ((top[:, None] == N).sum(1) > 1) & (n > 0)
    status = np.where(n == 0, "no_votes", np.where(out >= 0, "majority", np.where(tied, "tie", "no_majority")))
    status = np.where((out >= 0) & tied, f"tie_{tie_policy}", status)
    lab = pd.array([data.categories[c] if c >= 0 else pd.NA for c in out], dtype=object)
    return pd.DataFrame({item: data.items, rater: name, label: lab, "n_votes": n.astype(int),
                         "n_top": top.astype(int), "status": status})


def _sizes(sizes, J: int) -> list[int]:
    return [s for s in range(1, J + 1) if s % 2 == 1] if sizes == "odd" else list(sizes)


def ensembles(
    df: pd.DataFrame,
    judges: Sequence[str] | None = None,
    humans: Sequence[str] | None = None,
    *,
    reference: str | None = None,
    metrics: Sequence[str] = ("percent_agreement", "cohen_kappa", "pabak"),
    sizes: str | Sequence[int] = "odd",
    item="item",
    rater="rater",
    label="label",
    categories=None,
    rule: str = "plurality",
    tie_policy: str = "na",
    abstain: Sequence = (),
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Every majority-vote ensemble of judges (odd sizes by default) scored against the reference.

    The reference is the majority of ``humans`` or the single rater ``reference``. With 9 judges
    the odd sizes give 9 + 84 + 126 + 36 + 1 = 256 ensembles. Items where an ensemble ties are
    left out for that ensemble (``tie_policy="na"``) and counted in ``n_items``.
    Returns one row per ensemble: members, size, one column per metric (+ ``_ci_low``/``_ci_high``
    when ``n_boot`` > 0), n_items, sorted best first by the second metric.
    """
    if judges is None:
        judges = sorted(df.loc[df["rater_kind"] == "llm", rater].unique(), key=str)
    judges = list(judges)
    if humans is None:
        humans = [reference] if reference else humans_from_kind(df, rater)
    humans = list(humans)
    data = prepare(df, item=item, rater=rater, label=label, raters=humans + judges, categories=categories)
    codes = abstain_codes(data, abstain)
    rng = np.random.default_rng(seed)
    ref = codes[:, 0] if len(humans) == 1 else vote(codes[:, : len(humans)], data.K, rule, tie_policy, rng)[0]
    rows, stats = [], []
    for s in _sizes(sizes, len(judges)):
        for combo in itertools.combinations(range(len(judges)), s):
            cons = vote(codes[:, [len(humans) + c for c in combo]], data.K, rule, tie_policy, rng)[0]
            sts = [pair_stat(m, ref, cons, data.K) for m in metrics]
            row = dict(members="+".join(judges[c] for c in combo), size=s)
            row.update({m: point(st) if st.n_items else _NAN for m, st in zip(metrics, sts)})
            row["n_items"] = sts[0].n_items
            rows.append(row)
            stats.append(sts)
    out = pd.DataFrame(rows)
    if n_boot:
        reps = replicates([st for sts in stats for st in sts], n_boot, seed)
        for k, m in enumerate(metrics):
            cis = [interval(out.loc[i, m], reps[:, i * len(metrics) + k], confidence, "percentile")[:2]
                   for i in range(len(out))]
            out[f"{m}_ci_low"] = [c[0] for c in cis]
            out[f"{m}_ci_high"] = [c[1] for c in cis]
    key = metrics[1] if len(metrics) > 1 else metrics[0]
    return out.sort_values([key, "size"], ascending=[False, True], kind="stable").reset_index(drop=True)
