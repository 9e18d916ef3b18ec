"""Majority votes: the consensus of several raters (:func:`majority_vote`) and ensembles of judges (:func:`ensembles`)."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.agreement.data import AgreementError, Data, count_matrix, prepare
from medeval_kit.agreement.engine import point, replicates
from medeval_kit.agreement.forms import pair_stat
from medeval_kit.agreement.panel import humans_from_kind
from medeval_kit.columns import Columns, apply_columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.results import RESULT_COLUMNS
from medeval_kit.stats import interval

__all__ = ["RULES", "TIE_POLICIES", "vote", "vote_counts", "abstain_codes", "majority_vote", "ensembles"]

RULES = ("plurality", "strict")
TIE_POLICIES = ("na", "first", "random")
_NAN = float("nan")


def vote(codes: np.ndarray, K: int, rule: str, tie_policy: str, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Consensus code per item (-1 = none), votes cast and the top count."""
    return vote_counts(count_matrix(codes, K), rule, tie_policy, rng)


def vote_counts(N: np.ndarray, rule: str, tie_policy: str, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`vote` on per-item label counts ``N`` (n, K): consensus code (-1 = none), votes cast, top count.

    Each row is decided alone (``tie_policy="random"`` draws from ``rng`` for the tied rows, in order).
    """
    K = N.shape[1]
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


_VOTE_COLUMNS = ("item", "rater", "label")


def majority_vote(
    df: pd.DataFrame,
    *,
    columns: Columns = None,
    raters: Sequence | None = None,
    categories: Sequence | None = None,
    rule: str = "plurality",
    tie_policy: str = "na",
    abstain: Sequence = (),
    seed: int = 0,
    name: str = "consensus",
    **kw,
) -> pd.DataFrame:
    """Consensus label per item by majority vote: a new rater ``name`` in annotations form.

    ``abstain`` labels (and NA) are dropped before counting.

    Parameters
    ----------
    df : DataFrame
        Long annotations (``item``, ``rater``, ``label``).
    columns : mapping of str to str, optional
        Your column names as ``{canonical name: your column}``, e.g. ``{"item": "case_id"}``; the result
        uses the canonical names.
    raters : sequence, optional
        The raters who vote; default every rater.
    categories : sequence, optional
        The declared labels, in order (``tie_policy="first"`` takes the first tied one).
    rule : {"plurality", "strict"}, default "plurality"
        The most frequent label, or (``"strict"``) only one with more than half of the votes cast.
    tie_policy : {"na", "first", "random"}, default "na"
        A tie gives no consensus, the first tied label in category order, or a seeded random one.
    abstain : sequence, default ()
        Labels that are not votes (e.g. ``"inconsistent"``).
    seed : int, default 0
        Random seed of ``tie_policy="random"``.
    name : str, default "consensus"
        The consensus rater's name.
    **kw
        Deprecated: the old per-column keywords ``item``, ``rater``, ``label`` (use ``columns``). For
        this release the result then keeps those names, as before.

    Returns
    -------
    DataFrame
        ``item, rater`` (= ``name``), ``label`` (NA without consensus), ``n_votes, n_top`` and ``status``
        (majority / tie / no_majority / no_votes, ``tie_<policy>`` when a tie was broken).

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"item": [1, 1, 1, 2, 2], "rater": list("abcab"), "label": list("xxyxy")})
    >>> majority_vote(t)[["item", "status"]].values.tolist()
    [[1, 'majority'], [2, 'tie']]
    """
    old = {r: kw.pop(r) for r in _VOTE_COLUMNS if r in kw}
    if kw:
        raise TypeError(f"majority_vote() got unexpected keyword arguments {sorted(kw)}")
    renamed = {r: v for r, v in old.items() if v != r}
    if renamed:  # the old way: take just these columns (a canonical namesake may sit beside them), answer in them
        warnings.warn(f"majority_vote({', '.join(f'{k}={v!r}' for k, v in renamed.items())}) is deprecated; "
                      f"pass columns={renamed!r}", DeprecationWarning, stacklevel=2)
        keep = {renamed.get(r, r): r for r in _VOTE_COLUMNS}
        out = majority_vote(df[list(keep)].rename(columns=keep), columns=columns, raters=raters,
                            categories=categories, rule=rule, tie_policy=tie_policy, abstain=abstain, seed=seed,
                            name=name)
        return out.rename(columns=renamed)
    df = apply_columns(df, columns, _VOTE_COLUMNS, where="majority_vote(df=...)")
    item, rater, label = _VOTE_COLUMNS
    data = prepare(df, raters=raters, categories=categories)
    codes = abstain_codes(data, abstain)
    out, n, top = vote(codes, data.K, rule, tie_policy, np.random.default_rng(seed))
    N = count_matrix(codes, data.K)
    tied = ((top[:, None] == N).sum(1) > 1) & (n > 0)
    status = np.where(n == 0, "no_votes", np.where(out >= 0, "majority", np.where(tied, "tie", "no_majority")))
    status = np.where((out >= 0) & tied, f"tie_{tie_policy}", status)
    lab = pd.array([data.categories[c] if c >= 0 else pd.NA for c in out], dtype=object)
    return pd.DataFrame({item: data.items, rater: name, label: lab, "n_votes": n.astype(int),
                         "n_top": top.astype(int), "status": status})


majority_vote.__medeval_columns__ = _VOTE_COLUMNS  # what @takes_columns declares (column_roles)


def _sizes(sizes, J: int) -> list[int]:
    return [s for s in range(1, J + 1) if s % 2 == 1] if sizes == "odd" else list(sizes)


@shared_docs
@takes_columns("item", "rater", "label", "rater_kind")
def ensembles(
    df: pd.DataFrame,
    judges: Sequence[str] | None = None,
    humans: Sequence[str] | None = None,
    *,
    columns: Columns = None,
    reference: str | None = None,
    metrics: Sequence[str] = ("percent_agreement", "cohen_kappa", "pabak"),
    sizes: str | Sequence[int] = "odd",
    categories: Sequence | None = None,
    rule: str = "plurality",
    tie_policy: str = "na",
    abstain: Sequence = (),
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Every majority-vote ensemble of judges (odd sizes by default) scored against the reference.

    With 9 judges the odd sizes give 9 + 84 + 126 + 36 + 1 = 256 ensembles. Items where an ensemble
    ties are left out for that ensemble (``tie_policy="na"``) and not counted in ``n_items``.

    Parameters
    ----------
    df : DataFrame
        Long annotations (``item``, ``rater``, ``label`` [, ``rater_kind``]).
    judges : sequence of str, optional
        The judges to combine; default the raters whose ``rater_kind`` is ``llm``.
    humans : sequence of str, optional
        The humans whose majority is the reference; default ``[reference]``, else the ``rater_kind`` humans.
    {columns}
    reference : str, optional
        A single reference rater instead of the humans' majority.
    metrics : sequence of str, default ("percent_agreement", "cohen_kappa", "pabak")
        Pairwise coefficients; the ensembles are sorted best first by the second (``estimate``).
    sizes : "odd" or sequence of int, default "odd"
        Ensemble sizes.
    categories : sequence, optional
        The declared labels.
    rule : {"plurality", "strict"}, default "plurality"
        The voting rule of :func:`majority_vote`.
    tie_policy : {"na", "first", "random"}, default "na"
        What a tied vote gives, as in :func:`majority_vote`.
    abstain : sequence, default ()
        Labels that are not votes.
    n_boot : int, default 1000
        Item-bootstrap resamples for the CIs; ``0``: no CI.
    {confidence}
    {seed}

    Returns
    -------
    DataFrame
        One row per ensemble, best first: ``members, size``, the result contract for the ranking metric
        (the second of ``metrics``: ``estimate, ci_low, ci_high, ci_method, n_items, n_failed, note``),
        ``metric`` (its name), then one column per metric with ``<metric>_ci_low`` / ``<metric>_ci_high``
        when ``n_boot`` > 0.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> t = ensembles(synthetic_panel(n_items=40, n_judges=3, seed=1), n_boot=0)
    >>> sorted(t["size"])
    [1, 1, 1, 3]
    """
    rater = "rater"
    if judges is None:
        judges = sorted(df.loc[df["rater_kind"] == "llm", rater].unique(), key=str)
    judges = list(judges)
    if humans is None:
        humans = [reference] if reference else humans_from_kind(df, rater)
    humans = list(humans)
    data = prepare(df, raters=humans + judges, categories=categories)
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
    if out.empty:
        return pd.DataFrame(columns=["members", "size", *RESULT_COLUMNS, "metric", *metrics])
    k = list(metrics).index(key)
    out.insert(2, "estimate", out[key])
    out.insert(3, "ci_low", out[f"{key}_ci_low"] if n_boot else _NAN)
    out.insert(4, "ci_high", out[f"{key}_ci_high"] if n_boot else _NAN)
    out.insert(5, "ci_method", f"bootstrap percentile over items (B={n_boot}, seed={seed})" if n_boot else "")
    out = out[[c for c in out.columns if c != "n_items"]]
    out.insert(6, "n_items", [sts[k].n_items for sts in stats])
    out.insert(7, "n_failed", 0)
    out.insert(8, "note", ["" if np.isfinite(e) else "undefined on this ensemble's items" for e in out["estimate"]])
    out.insert(9, "metric", key)
    return out.sort_values([key, "size"], ascending=[False, True], kind="stable").reset_index(drop=True)
