"""Resolution policies for pairwise verdicts: un-swapping, repeats, the two orders, and two judges.

A pairwise judge sees two responses, A and B, in a presentation ``order`` (``"AB"``: A shown first;
``"BA"``: B shown first). Its verdict in *presented-slot* terms (``first``/``second``/``tie``/
``neither``) is mapped back to *model* terms (``A``/``B``/``tie``/``neither``) by :func:`unswap`.

Then three steps turn many calls into one verdict per item, each step naming its policy in the
output (column ``policy`` / ``repeat_policy`` / ``merge_policy``):

1. :func:`majority_over_repeats` - the majority over repeated calls in the same order
   (Longform-MedQA: 3 repeats per order).
2. :func:`resolve_orders` - combine the two orders. Policies:

   * ``"drop"``     an inconsistent pair gets verdict NA and ``resolution="dropped"`` (MCQG-SRefine,
                    which removes its -1 items);
   * ``"tie"``      an inconsistent pair becomes ``tie``;
   * ``"neither"``  an inconsistent pair becomes ``neither``;
   * ``"neutral"``  ``tie`` for ordinary criteria and ``neither`` for reversed-polarity criteria
                    (harmfulness, bias), the cautious MT-Bench rule used by Longform-MedQA.

3. :func:`merge_judges` - combine two judges with the same policies.

Parse failures (``parse_status != "ok"`` or an NA verdict) are counted (``n_failed``) and never
turned into ties: a pair whose order is missing or unparsed gets ``resolution="failed"`` and
verdict NA.

Calibrated policies (Wang et al. 2023, "Large Language Models are not Fair Evaluators", arXiv
2305.17926), :func:`resolve_calibrated`, average the margin of A instead of voting; the margin of one
call is ``score_a - score_b`` when the table has scores (the ``pairwise_mec`` protocol), else its vote
(A = +1, B = -1, tie/neither = 0):

* ``"mec"``      Multiple Evidence Calibration: the mean margin over the k repeats of ONE order
                 (``mec_order``, default AB);
* ``"bpc"``      Balanced Position Calibration: the first repeat of each order, the two orders averaged
                 with equal weight;
* ``"mec_bpc"``  both: every repeat of both orders, each order's mean weighted equally.

Each row also carries the balanced position diversity entropy (BPDE, column ``entropy``) of the calls
used: the entropy of the A-win / tie / B-win shares, each order's share weighted equally - the
uncertainty by which :mod:`medeval_kit.bias.calibration` ranks items for human review.
:func:`resolve_pairwise` accepts every policy of :data:`POLICIES` and :data:`CALIBRATED_POLICIES`.

Polarity. For criteria phrased negatively (harmfulness, bias) *choosing* a response means it is
WORSE. Pass ``reversed_criteria={"harmfulness", "bias"}`` or a ``polarity`` column (+1 / -1);
:func:`win_rate` then counts A as the winner when B was chosen.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import numpy as np
import pandas as pd

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import SchemaError

from .slots import MODEL_LABELS, ORDERS, neutral_label, polarity_series

__all__ = ["POLICIES", "CALIBRATED_POLICIES", "MARGIN_SOURCES", "majority_over_repeats", "resolve_orders",
           "merge_judges", "resolve_pairwise", "mean_over_repeats", "resolve_calibrated", "position_entropy"]

POLICIES = ("drop", "tie", "neither", "neutral")
CALIBRATED_POLICIES = ("mec", "bpc", "mec_bpc")
"""Score-averaging policies of Wang et al. 2023: MEC (k samples, one order), BPC (both orders), both."""
MARGIN_SOURCES = ("auto", "scores", "verdicts")
"""Where a call's margin of A comes from: ``score_a - score_b``, the vote, or scores when present (auto)."""
_VOTE = {"A": 1.0, "B": -1.0, "tie": 0.0, "neither": 0.0}


def _ok_mask(df: pd.DataFrame, verdict: str, parse_status: str | None) -> pd.Series:
    ok = df[verdict].notna()
    if parse_status and parse_status in df.columns:
        ok &= df[parse_status].eq("ok")
    return ok


def _check_labels(df: pd.DataFrame, column: str, allowed: Iterable[str], table: str = "judgments") -> None:
    s = df[column]
    bad = s.notna() & ~s.isin(list(allowed))
    if bad.any():
        raise SchemaError(table, column, [int(i) for i in np.flatnonzero(bad)],
                          f"unknown verdict(s) {sorted(map(str, set(s[bad])))[:5]}; allowed: {list(allowed)}")


# --------------------------------------------------------------------------- repeats
@shared_docs
@takes_columns("item", "judge", "criterion", "order", "verdict", "parse_status", "polarity")
def majority_over_repeats(
    df: pd.DataFrame,
    *,
    reversed_criteria: Collection[str] | None = None,
    polarity: str | None = None,
    columns: Columns = None,
) -> pd.DataFrame:
    """Return one row per (item, judge, criterion, order): the majority verdict over the repeats.

    Failed calls are excluded from the vote and counted in ``n_failed``. With no strict majority
    (e.g. 3 different votes) the neutral label (``tie``; ``neither`` for reversed criteria) is taken
    if it was among the top votes, the other neutral label next, else the verdict is NA
    (``no_majority=True``). This is Longform-MedQA's ``get_majority_vote`` without its coin flip.

    Parameters
    ----------
    df : DataFrame
        Pairwise judgments in model terms: ``item, judge, criterion, order, verdict`` (A/B/tie/neither)
        and optionally ``parse_status`` (calls other than ``"ok"`` are failed).
    reversed_criteria : collection of str, optional
        Criteria phrased negatively (choosing means worse, e.g. harmfulness); their neutral label is
        ``neither``.
    polarity : str, optional
        Name of a column holding each row's polarity (+1 / -1); overrides ``reversed_criteria``.
    {columns}

    Returns
    -------
    DataFrame
        The keys, ``verdict``, ``n_repeats``, ``n_ok``, ``n_failed``, ``unanimous`` (all ok repeats
        agree), ``no_majority``, ``polarity`` and ``repeat_policy="majority"``.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_pairwise
    >>> m = majority_over_repeats(synthetic_pairwise(n_items=5, repeats=3, seed=0))
    >>> sorted(m["n_repeats"].unique().tolist())
    [3]
    """
    keys = ["item", "judge", "criterion", "order"]
    pol = polarity_series(df, "criterion", reversed_criteria, polarity).to_numpy()
    ok = _ok_mask(df, "verdict", "parse_status").to_numpy(dtype=bool)
    # Group codes in groupby's sorted order, then counts by code with numpy: the groupby-merge version of this
    # took ~25 ms on any table, most of each order resolution (resolve_orders) of a small study.
    grouped = df.groupby(keys, sort=True, dropna=False)
    gid = grouped.ngroup().to_numpy()
    out = grouped.size().index.to_frame(index=False)  # the keys with groupby's dtypes
    n_groups = len(out)
    _, first = np.unique(gid, return_index=True)
    n_repeats = np.bincount(gid, minlength=n_groups)
    n_ok = np.bincount(gid, weights=ok, minlength=n_groups).astype(np.int64)
    group_pol = pol[first].astype(int)
    # votes of the ok calls; a call with a missing item, judge, criterion or order is counted but casts no vote
    voting = ok & df[keys].notna().all(axis=1).to_numpy()
    codes, labels = pd.factorize(df["verdict"].to_numpy(dtype=object)[voting], sort=True)
    n_labels = len(labels)
    votes = np.bincount(gid[voting] * n_labels + codes, minlength=n_groups * n_labels).reshape(n_groups, n_labels)
    top = (votes == votes.max(axis=1, initial=0)[:, None]) & (votes > 0)
    n_top, n_distinct = top.sum(axis=1), (votes > 0).sum(axis=1)
    verdict = np.full(n_groups, None, dtype=object)
    single = n_top == 1
    if single.any():
        verdict[single] = np.asarray(labels, dtype=object)[top[single].argmax(axis=1)]
    # a tied top: the neutral label (tie; neither for a reversed criterion), else the other one, else no verdict
    tied, column = n_top > 1, {label: i for i, label in enumerate(labels)}
    neutral = np.where(group_pol < 0, "neither", "tie")
    other = np.where(group_pol < 0, "tie", "neither")
    for wanted in (other, neutral):  # the neutral label, written last, wins
        for label in ("tie", "neither"):
            if label in column:
                verdict[tied & (wanted == label) & top[:, column[label]]] = label
    out["verdict"] = pd.Series(verdict, dtype=object)
    out["n_repeats"] = n_repeats
    out["n_ok"] = n_ok
    out["n_failed"] = n_repeats - n_ok
    unanimous = (n_distinct == 1).astype(object)
    unanimous[n_ok == 0] = None
    out["unanimous"] = pd.Series(unanimous, dtype=object)
    out["no_majority"] = n_top > 1
    out["polarity"] = group_pol
    out["repeat_policy"] = "majority"
    return out


# --------------------------------------------------------------------------- orders
def _resolve(v1, v2, policy: str, pol: int) -> tuple[object, str]:
    if v1 is None or v2 is None or (isinstance(v1, float) and np.isnan(v1)) or (isinstance(v2, float) and np.isnan(v2)):
        return None, "failed"
    if v1 == v2:
        return v1, "agree"
    if policy == "drop":
        return None, "dropped"
    lab = neutral_label(pol) if policy == "neutral" else policy
    return lab, f"inconsistent->{lab}"


@shared_docs
@takes_columns("item", "judge", "criterion", "order", "verdict", "parse_status", "polarity")
def resolve_orders(
    df: pd.DataFrame,
    policy: str = "drop",
    *,
    reversed_criteria: Collection[str] | None = None,
    polarity: str | None = None,
    columns: Columns = None,
) -> pd.DataFrame:
    """Combine the ``AB`` and ``BA`` verdicts (model terms) of each (item, judge, criterion).

    ``df`` holds one verdict per order; if it has repeats (several rows per order) they are first
    reduced with :func:`majority_over_repeats`. Dropped and failed pairs keep a row with verdict NA
    so that they are counted; filter with ``out[out.verdict.notna()]``.

    Parameters
    ----------
    df : DataFrame
        Pairwise judgments in model terms: ``item, judge, criterion, order`` (AB/BA), ``verdict``
        (A/B/tie/neither) and optionally ``parse_status``.
    policy : {"drop", "tie", "neither", "neutral"}, default "drop"
        What an inconsistent pair (the two orders disagree) becomes (:data:`POLICIES`).
    reversed_criteria : collection of str, optional
        Criteria phrased negatively (choosing means worse); ``neutral`` gives them ``neither``.
    polarity : str, optional
        Name of a column holding each row's polarity (+1 / -1); overrides ``reversed_criteria``.
    {columns}

    Returns
    -------
    DataFrame
        One row per (item, judge, criterion): ``verdict_ab``, ``verdict_ba``, ``consistent`` (NA when
        an order failed), the resolved ``verdict``, ``resolution`` (``agree``, ``dropped``,
        ``inconsistent->tie``, ``inconsistent->neither``, ``failed`` - an order has no parsed call or is
        absent - or ``no_majority``), ``n_failed`` (failed calls), ``missing_order``, ``polarity`` and
        ``policy``.

    Raises
    ------
    SchemaError
        A column is missing, or a verdict or order is not in the pairwise vocabulary.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_pairwise
    >>> out = resolve_orders(synthetic_pairwise(n_items=20, seed=0), "tie")
    >>> set(out["resolution"]) <= {"agree", "inconsistent->tie", "failed", "no_majority"}
    True
    """
    item, judge, criterion, order, verdict = "item", "judge", "criterion", "order", "verdict"
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}; got {policy!r}")
    need = [item, judge, criterion, order, verdict]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise SchemaError("judgments", missing[0], [], f"missing column(s) {missing}")
    _check_labels(df, verdict, MODEL_LABELS)
    d = df.copy()
    d[order] = d[order].astype(str).str.upper()
    bad = ~d[order].isin(ORDERS)
    if bad.any():
        raise SchemaError("judgments", order, [int(i) for i in np.flatnonzero(bad)],
                          f"order must be one of {ORDERS}; found {sorted(set(d.loc[bad, order]))[:5]}")
    maj = majority_over_repeats(d, reversed_criteria=reversed_criteria, polarity=polarity)
    keys = [item, judge, criterion]
    # one row per (item, judge, criterion) with a value in each key (groupby's dropna); each has at most one
    # majority row per order
    gid = maj.groupby(keys, sort=True).ngroup().to_numpy()
    keep = ~np.isnan(gid) if gid.dtype.kind == "f" else np.ones(len(gid), dtype=bool)
    maj, gid = maj[keep].reset_index(drop=True), gid[keep].astype(np.int64)
    _, first = np.unique(gid, return_index=True)
    out = maj[keys].iloc[first].reset_index(drop=True)
    n_groups = len(out)
    out["n_failed"] = np.bincount(gid, weights=maj["n_failed"].to_numpy(), minlength=n_groups).astype(np.int64)
    out["polarity"] = maj["polarity"].to_numpy()[first]
    verdicts, n_ok_calls = maj[verdict].to_numpy(dtype=object), maj["n_ok"].to_numpy()

    def per_order(o: str) -> tuple[pd.Series, np.ndarray, np.ndarray]:
        """Each group's majority verdict in order ``o`` (None when absent), whether it has the order, its ok calls."""
        rows = (maj[order] == o).to_numpy()
        v, has, n_ok = np.full(n_groups, None, dtype=object), np.zeros(n_groups, bool), np.zeros(n_groups, np.int64)
        v[gid[rows]], has[gid[rows]], n_ok[gid[rows]] = verdicts[rows], True, n_ok_calls[rows]
        return pd.Series(v, dtype=object), has, n_ok

    (v_ab, has_ab, n_ok_ab), (v_ba, has_ba, n_ok_ba) = (per_order(o) for o in ORDERS)
    pres = np.column_stack([has_ab, has_ba])
    failed = v_ab.isna() | v_ba.isna()
    # an order with parsed repeats but no majority is "no_majority", not a parse failure
    nomaj = failed.to_numpy() & ((v_ab.isna().to_numpy() & (n_ok_ab > 0)) | (v_ba.isna().to_numpy() & (n_ok_ba > 0)))
    agree = ~failed & (v_ab == v_ba)
    neutral = np.where(out["polarity"] < 0, "neither", "tie")
    if policy == "drop":
        how = np.where(failed, "failed", np.where(agree, "agree", "dropped"))
        res = np.where(agree, v_ab, None)
    else:
        lab = neutral if policy == "neutral" else np.full(len(out), policy)
        how = np.where(failed, "failed", np.where(agree, "agree", "inconsistent->" + lab.astype(object)))
        res = np.where(failed, None, np.where(agree, v_ab, lab))
    out["verdict_ab"], out["verdict_ba"] = v_ab, v_ba
    out["consistent"] = pd.Series(agree, dtype=object).where(~failed, None)
    out[verdict] = pd.Series(res, dtype=object)
    out["resolution"] = np.where(nomaj, "no_majority", how)
    out["missing_order"] = [",".join(o for o, ok in zip(ORDERS, row) if not ok) for row in pres]
    out["policy"] = policy
    return out[keys + ["verdict_ab", "verdict_ba", "consistent", verdict, "resolution", "n_failed",
                       "missing_order", "polarity", "policy"]]


@shared_docs
@takes_columns("item", "judge", "criterion", "verdict", "polarity")
def merge_judges(
    resolved: pd.DataFrame,
    judges: tuple[str, str] | list[str],
    policy: str = "neutral",
    *,
    name: str | None = None,
    reversed_criteria: Collection[str] | None = None,
    columns: Columns = None,
) -> pd.DataFrame:
    """Merge two judges' resolved verdicts into one: keep agreement, resolve disagreement by ``policy``.

    Longform-MedQA merges GPT-4o and Claude with the ``neutral`` rule. If either judge has no
    verdict (dropped or failed) the merged verdict is NA with ``resolution="failed"``.

    Parameters
    ----------
    resolved : DataFrame
        One verdict per (item, judge, criterion), e.g. from :func:`resolve_orders`; a ``polarity`` column
        (+1 / -1), when present, gives each row's polarity.
    judges : pair of str
        The two judges to merge.
    policy : {"drop", "tie", "neither", "neutral"}, default "neutral"
        What a disagreement becomes (:data:`POLICIES`).
    name : str, optional
        The merged judge's name; default ``"<judge1>+<judge2>"``.
    reversed_criteria : collection of str, optional
        Criteria phrased negatively (choosing means worse); ``neutral`` gives them ``neither``.
    {columns}

    Returns
    -------
    DataFrame
        One row per (item, criterion): ``verdict_<judge>`` for each judge, ``verdict``, ``resolution``,
        ``judge`` (the merged name) and ``merge_policy``.

    Raises
    ------
    SchemaError
        A judge is not in the table.
    """
    item, judge, criterion, verdict, polarity = "item", "judge", "criterion", "verdict", "polarity"
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}; got {policy!r}")
    judges = list(judges)
    if len(judges) != 2:
        raise ValueError(f"merge_judges merges exactly two judges; got {judges}")
    absent = [j for j in judges if j not in set(resolved[judge])]
    if absent:
        raise SchemaError("judgments", judge, [], f"judge(s) {absent} not in the table; present: "
                          f"{sorted(map(str, set(resolved[judge])))}")
    name = name or "+".join(judges)
    d = resolved[resolved[judge].isin(judges)]
    pol_col = polarity if polarity in d.columns else None
    pol = polarity_series(d, criterion, reversed_criteria, pol_col)
    d = d.assign(_pol=pol)
    dup = d.duplicated([item, criterion, judge], keep=False)
    if dup.any():
        raise SchemaError("judgments", f"{item},{criterion},{judge}", [int(i) for i in np.flatnonzero(dup)],
                          "merge_judges needs one resolved verdict per item, criterion and judge; "
                          "run resolve_orders first")
    wide = d.set_index([item, criterion, judge])[verdict].unstack(judge)
    pols = d.groupby([item, criterion])["_pol"].first()
    rows = []
    for (it, cr), r in wide.iterrows():
        v1 = r.get(judges[0])
        v2 = r.get(judges[1])
        v1 = None if pd.isna(v1) else v1
        v2 = None if pd.isna(v2) else v2
        v, how = _resolve(v1, v2, policy, int(pols.loc[(it, cr)]))
        rows.append({item: it, judge: name, criterion: cr, f"verdict_{judges[0]}": v1,
                     f"verdict_{judges[1]}": v2, verdict: v, "resolution": how,
                     "polarity": int(pols.loc[(it, cr)]), "merge_policy": policy})
    return pd.DataFrame(rows)


@shared_docs
@takes_columns("item", "judge", "criterion", "order", "verdict", "parse_status", "repeat", "score_a", "score_b",
               "polarity")
def resolve_pairwise(
    df: pd.DataFrame,
    policy: str = "neutral",
    *,
    merge: tuple[str, str] | None = None,
    merge_policy: str | None = None,
    columns: Columns = None,
    **options,
) -> pd.DataFrame:
    """Majority over repeats, then :func:`resolve_orders`, then optionally :func:`merge_judges`.

    The Longform-MedQA pipeline is ``resolve_pairwise(df, "neutral", merge=("gpt-4o", "claude"),
    reversed_criteria={"harmfulness", "bias"})``. A policy of :data:`CALIBRATED_POLICIES` goes to
    :func:`resolve_calibrated` instead of :func:`resolve_orders` (merging then defaults to ``neutral``).

    Parameters
    ----------
    df : DataFrame
        Pairwise judgments in model terms (see :func:`resolve_orders`; the calibrated policies also
        read ``repeat`` and, when present, ``score_a``/``score_b``).
    policy : str, default "neutral"
        A policy of :data:`POLICIES` or :data:`CALIBRATED_POLICIES`.
    merge : pair of str, optional
        Two judges to merge with :func:`merge_judges` after resolving.
    merge_policy : str, optional
        The merge's policy; default ``policy`` (``"neutral"`` after a calibrated policy).
    {columns}
    **options
        Passed on to :func:`resolve_orders` or :func:`resolve_calibrated` (``reversed_criteria``,
        ``polarity``, ``margin``, ``tie_margin``, ``mec_order``).

    Returns
    -------
    DataFrame
        The table of :func:`resolve_orders` or :func:`resolve_calibrated`; of :func:`merge_judges` when
        ``merge`` is given.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_pairwise
    >>> df = synthetic_pairwise(n_items=10, judges=("g", "c"), seed=0)
    >>> out = resolve_pairwise(df, "neutral", merge=("g", "c"))
    >>> out["judge"].unique().tolist()
    ['g+c']
    """
    if policy in CALIBRATED_POLICIES:
        res = resolve_calibrated(df, policy, **options)
    else:
        res = resolve_orders(df, policy, **options)
    if merge is None:
        return res
    keep = {k: v for k, v in options.items() if k == "reversed_criteria"}
    return merge_judges(res, merge, merge_policy or (policy if policy in POLICIES else "neutral"), **keep)


# --------------------------------------------------------------------------- calibrated (score-averaging) policies
def _margin_source(df: pd.DataFrame, margin: str, score_a: str, score_b: str) -> str:
    """``scores`` or ``verdicts``: where the per-call margin of A comes from."""
    if margin not in MARGIN_SOURCES:
        raise ValueError(f"margin must be one of {MARGIN_SOURCES}; got {margin!r}")
    has = score_a in df.columns and score_b in df.columns
    if margin == "scores" and not has:
        raise SchemaError("judgments", score_a if score_a not in df.columns else score_b, [],
                          f"margin='scores' needs the score columns {score_a!r} and {score_b!r} (model terms: the "
                          f"scores of response A and B); present: {list(df.columns)}")
    if margin == "auto":
        has = has and bool((pd.to_numeric(df[score_a], errors="coerce").notna()
                            & pd.to_numeric(df[score_b], errors="coerce").notna()).any())
        return "scores" if has else "verdicts"
    return margin


def _call_margins(df: pd.DataFrame, source: str, verdict: str, score_a: str, score_b: str,
                  parse_status: str | None) -> tuple[pd.Series, pd.Series]:
    """(margin of A per call, parsed mask): NA margins count as failed calls."""
    if source == "scores":
        m = pd.to_numeric(df[score_a], errors="coerce") - pd.to_numeric(df[score_b], errors="coerce")
    else:
        m = df[verdict].map(_VOTE).astype(float)
    ok = m.notna()
    if parse_status and parse_status in df.columns:
        ok &= df[parse_status].eq("ok")
    return m.where(ok), ok


def position_entropy(p_a, p_b, p_tie) -> np.ndarray:
    """The entropy (natural log, nats) of the A-win / tie / B-win shares; 0 log 0 = 0, max ln 3.

    Parameters
    ----------
    p_a, p_b, p_tie : float or array-like
        The shares of calls won by A, won by B and tied (aligned arrays or scalars).

    Returns
    -------
    ndarray
        The entropy per element; NaN where a share is NaN.

    Examples
    --------
    >>> float(position_entropy(0.5, 0.5, 0.0)) == float(np.log(2))
    True
    """
    p = np.stack([np.asarray(p_a, float), np.asarray(p_b, float), np.asarray(p_tie, float)])
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    out = terms.sum(0)
    return np.where(np.isnan(p).any(0), np.nan, out)


@shared_docs
@takes_columns("item", "judge", "criterion", "order", "repeat", "verdict", "score_a", "score_b", "parse_status", "polarity")
def mean_over_repeats(
    df: pd.DataFrame,
    *,
    samples: str = "all",
    margin: str = "auto",
    tie_margin: float = 0.0,
    reversed_criteria: Collection[str] | None = None,
    polarity: str | None = None,
    columns: Columns = None,
) -> pd.DataFrame:
    """Return one row per (item, judge, criterion, order): the mean margin of A over the parsed repeats (MEC).

    The margin of a call is ``score_a - score_b`` or its vote (A = +1, B = -1, tie/neither = 0).
    ``verdict`` is ``A`` when the mean margin exceeds ``tie_margin``, ``B`` below ``-tie_margin``, else
    the neutral label (tie; neither for reversed criteria); NA when no repeat parsed.

    Parameters
    ----------
    df : DataFrame
        Pairwise calls: ``item, judge, criterion, order``, ``repeat`` (needed for ``samples="first"``),
        ``verdict`` and/or ``score_a``/``score_b``, optionally ``parse_status``.
    samples : {"all", "first"}, default "all"
        ``"all"`` averages every repeat (Multiple Evidence Calibration over k samples); ``"first"``
        keeps only the lowest ``repeat`` of each order (one call, the uncalibrated judge).
    margin : {"auto", "scores", "verdicts"}, default "auto"
        Where a call's margin comes from (:data:`MARGIN_SOURCES`); ``auto`` uses the scores when present.
    tie_margin : float, default 0.0
        Mean margins within ``+-tie_margin`` are the neutral label.
    reversed_criteria : collection of str, optional
        Criteria phrased negatively (choosing means worse); their neutral label is ``neither``.
    polarity : str, optional
        Name of a column holding each row's polarity (+1 / -1); overrides ``reversed_criteria``.
    {columns}

    Returns
    -------
    DataFrame
        The keys, ``margin``, ``verdict``, ``n_win_a``, ``n_win_b``, ``n_tie`` (calls by the sign of their
        margin), ``n_repeats``, ``n_ok``, ``n_failed``, ``polarity``, ``margin_source``, ``repeat_policy``.

    Raises
    ------
    SchemaError
        A needed column is missing, or a verdict is outside the pairwise vocabulary.
    """
    item, judge, criterion, order, repeat, verdict = "item", "judge", "criterion", "order", "repeat", "verdict"
    score_a, score_b, parse_status = "score_a", "score_b", "parse_status"
    if samples not in ("all", "first"):
        raise ValueError(f"samples must be 'all' or 'first'; got {samples!r}")
    need = [item, judge, criterion, order] + ([repeat] if samples == "first" else [])
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise SchemaError("judgments", missing[0], [], f"missing column(s) {missing}")
    source = _margin_source(df, margin, score_a, score_b)
    if source == "verdicts":
        if verdict not in df.columns:
            raise SchemaError("judgments", verdict, [], f"missing column {verdict!r} (and no score columns)")
        _check_labels(df, verdict, MODEL_LABELS)
    d = df.copy()
    if samples == "first":
        rep = pd.to_numeric(d[repeat], errors="coerce")
        d = d[rep.eq(rep.groupby([d[c] for c in [item, judge, criterion, order]]).transform("min"))]
    d["_pol"] = polarity_series(d, criterion, reversed_criteria, polarity)
    d["_m"], d["_ok"] = _call_margins(d, source, verdict, score_a, score_b, parse_status)
    d["_a"], d["_b"], d["_t"] = d["_m"] > 0, d["_m"] < 0, d["_m"] == 0
    keys = [item, judge, criterion, order]
    out = d.groupby(keys, sort=True, dropna=False).agg(
        margin=("_m", "mean"), n_win_a=("_a", "sum"), n_win_b=("_b", "sum"), n_tie=("_t", "sum"),
        n_repeats=("_ok", "size"), n_ok=("_ok", "sum"), polarity=("_pol", "first")).reset_index()
    for c in ("n_win_a", "n_win_b", "n_tie", "n_repeats", "n_ok", "polarity"):
        out[c] = out[c].astype(int)
    out["n_failed"] = out["n_repeats"] - out["n_ok"]
    out[verdict] = _margin_verdict(out["margin"], out["polarity"], tie_margin)
    out["margin_source"] = source
    out["repeat_policy"] = "mean" if samples == "all" else "first"
    return out[keys + ["margin", verdict, "n_win_a", "n_win_b", "n_tie", "n_repeats", "n_ok", "n_failed",
                       "polarity", "margin_source", "repeat_policy"]]


def _margin_verdict(margin: pd.Series, pol: pd.Series, tie_margin: float) -> pd.Series:
    """A above ``tie_margin``, B below its negative, else the neutral label; NA where the margin is NA."""
    m = pd.to_numeric(margin, errors="coerce").to_numpy(float)
    neutral = np.where(np.asarray(pol) < 0, "neither", "tie").astype(object)
    lab = np.where(m > tie_margin, "A", np.where(m < -tie_margin, "B", neutral)).astype(object)
    return pd.Series(np.where(np.isnan(m), None, lab), index=margin.index, dtype=object)


@shared_docs
@takes_columns("item", "judge", "criterion", "order", "repeat", "verdict", "score_a", "score_b", "parse_status", "polarity")
def resolve_calibrated(
    df: pd.DataFrame,
    policy: str = "mec_bpc",
    *,
    margin: str = "auto",
    tie_margin: float = 0.0,
    mec_order: str = "AB",
    reversed_criteria: Collection[str] | None = None,
    polarity: str | None = None,
    columns: Columns = None,
) -> pd.DataFrame:
    """One verdict per (item, judge, criterion) by a calibrated policy of :data:`CALIBRATED_POLICIES`.

    ``mec``: the mean margin over the repeats of ``mec_order``; ``bpc``: the first repeat of each
    order, the two margins averaged; ``mec_bpc``: every repeat, each order's mean margin averaged.
    The verdict is ``A`` / ``B`` when the (balanced) margin is above ``tie_margin`` / below its negative,
    else the neutral label (tie; neither for reversed criteria). Failed pairs keep a row with verdict
    NA, so they are counted.

    Parameters
    ----------
    df : DataFrame
        Pairwise calls (see :func:`mean_over_repeats`).
    policy : {"mec", "bpc", "mec_bpc"}, default "mec_bpc"
        The calibrated policy.
    margin : {"auto", "scores", "verdicts"}, default "auto"
        Where a call's margin comes from (:data:`MARGIN_SOURCES`).
    tie_margin : float, default 0.0
        Margins within ``+-tie_margin`` are the neutral label.
    mec_order : {"AB", "BA"}, default "AB"
        The order whose repeats ``mec`` averages.
    reversed_criteria : collection of str, optional
        Criteria phrased negatively (choosing means worse); their neutral label is ``neither``.
    polarity : str, optional
        Name of a column holding each row's polarity (+1 / -1); overrides ``reversed_criteria``.
    {columns}

    Returns
    -------
    DataFrame
        One row per (item, judge, criterion): ``verdict_ab``, ``verdict_ba``, ``margin_ab``, ``margin_ba``
        (per order, over the calls the policy uses), ``margin``, the shares ``p_a``, ``p_b``, ``p_tie`` of
        calls won by A / B / tied (each order weighted equally), ``entropy`` (their BPDE, nats; NaN when
        no call parsed), ``verdict``, ``resolution`` (``calibrated``; ``failed`` when an order the policy
        needs has no parsed call), ``n_calls``, ``n_ok``, ``n_failed``, ``missing_order``, ``polarity``,
        ``margin_source`` and ``policy``.

    Raises
    ------
    SchemaError
        A needed column is missing, or an order is not AB/BA.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_pairwise
    >>> out = resolve_calibrated(synthetic_pairwise(n_items=10, repeats=3, seed=0), "mec_bpc")
    >>> out["resolution"].unique().tolist()
    ['calibrated']
    """
    item, judge, criterion, order, verdict = "item", "judge", "criterion", "order", "verdict"
    if policy not in CALIBRATED_POLICIES:
        raise ValueError(f"policy must be one of {CALIBRATED_POLICIES}; got {policy!r}")
    mo = str(mec_order).upper()
    if mo not in ORDERS:
        raise ValueError(f"mec_order must be one of {ORDERS}; got {mec_order!r}")
    if order not in df.columns:
        raise SchemaError("judgments", order, [], f"missing column(s) [{order!r}]")
    d = df.copy()
    d[order] = d[order].astype(str).str.upper()
    bad = ~d[order].isin(ORDERS)
    if bad.any():
        raise SchemaError("judgments", order, [int(i) for i in np.flatnonzero(bad)],
                          f"order must be one of {ORDERS}; found {sorted(set(d.loc[bad, order]))[:5]}")
    per = mean_over_repeats(d, samples="first" if policy == "bpc" else "all", margin=margin,
                            tie_margin=tie_margin, reversed_criteria=reversed_criteria, polarity=polarity)
    keys = [item, judge, criterion]
    idx = per.groupby(keys, sort=True).agg(n_calls=("n_repeats", "sum"), n_ok=("n_ok", "sum"),
                                            n_failed=("n_failed", "sum"), polarity=("polarity", "first"))
    per = per.assign(_ok=per["n_ok"].where(per["n_ok"] > 0))
    for c, n in (("p_a", "n_win_a"), ("p_b", "n_win_b"), ("p_tie", "n_tie")):
        per[c] = per[n] / per["_ok"]

    def wide(col: str) -> pd.DataFrame:
        return per.pivot(index=keys, columns=order, values=col).reindex(index=idx.index, columns=list(ORDERS))

    m, v = wide("margin"), wide(verdict)
    out = idx.copy()
    out["margin_ab"], out["margin_ba"] = m["AB"].astype(float), m["BA"].astype(float)
    out["verdict_ab"] = v["AB"].astype(object).where(v["AB"].notna(), None)
    out["verdict_ba"] = v["BA"].astype(object).where(v["BA"].notna(), None)
    for c in ("p_a", "p_b", "p_tie"):
        out[c] = wide(c).astype(float).mean(axis=1)  # each order with a parsed call weighted equally
    out["entropy"] = position_entropy(out["p_a"], out["p_b"], out["p_tie"])
    need = [mo] if policy == "mec" else list(ORDERS)
    has = m[need].notna().all(axis=1)
    out["margin"] = (m[mo] if policy == "mec" else m[list(ORDERS)].mean(axis=1)).where(has).astype(float)
    out[verdict] = _margin_verdict(out["margin"], out["polarity"], tie_margin)
    out["resolution"] = np.where(has, "calibrated", "failed")
    present = per.assign(_p=True).pivot(index=keys, columns=order, values="_p").reindex(
        index=idx.index, columns=list(ORDERS)).notna().to_numpy()
    out["missing_order"] = [",".join(o for o, ok in zip(ORDERS, row) if not ok) for row in present]
    out["margin_source"] = per["margin_source"].iloc[0] if len(per) else "verdicts"
    out["policy"] = policy
    out = out.reset_index()
    for c in ("n_calls", "n_ok", "n_failed", "polarity"):
        out[c] = out[c].astype(int)
    return out[keys + ["verdict_ab", "verdict_ba", "margin_ab", "margin_ba", "margin", "p_a", "p_b", "p_tie",
                       "entropy", verdict, "resolution", "n_calls", "n_ok", "n_failed", "missing_order",
                       "polarity", "margin_source", "policy"]]
