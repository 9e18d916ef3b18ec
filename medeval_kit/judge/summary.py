"""Reading a ``judgments`` table: parse failures, what the judge concludes, order effects, agreement
with human labels, verdict counts, rubric and AutoMedEval scores. Protocol-specific parts dispatch
through the registry (:class:`~medeval_kit.judge.registry.Protocol` hooks); the rest is generic.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import SchemaError
from medeval_kit.prompts import Rubric, load_rubric
from medeval_kit.results import result_frame, result_row
from medeval_kit.stats import proportion_ci

from .registry import check_protocol, protocol_of

__all__ = ["parse_summary", "score_summary", "order_effects", "human_agreement", "verdict_counts",
           "to_annotations", "rubric_scores", "acc_tuple_triple", "share_correct", "mean_scores"]

EXACT = "exact binomial (Clopper-Pearson)"
JUDGMENT_ROLES = ("item", "judge", "protocol", "criterion", "order", "repeat", "raw", "verdict", "score",
                  "parse_status", "target", "component", "question_item", "slot_verdict", "polarity", "model_a",
                  "model_b", "score_a", "score_b", "position")
"""The ``judgments`` columns the summaries read (under these canonical names; map yours with ``columns=``)."""
ANNOTATION_ROLES = ("rater", "rater_kind", "label")
#: verdict_counts keeps the first this many groups (a bar chart of more is unreadable)
MAX_VERDICT_GROUPS = 12


def _judges(judgments: pd.DataFrame) -> str:
    return ", ".join(sorted(map(str, judgments["judge"].unique())))


# =========================================================================== parse failures
@shared_docs
@takes_columns("judge", "protocol", "criterion", "component", "parse_status")
def parse_summary(judgments: pd.DataFrame, *, by: Sequence[str] | None = None, confidence: float = 0.95,
                  columns: Columns = None) -> pd.DataFrame:
    """Return the calls, parse failures and missing replies per group (``by``), never hidden.

    Counts distinct calls (``call`` column; a k-slot or rubric call writes several rows). ``estimate``
    is the parse-failure rate, failed / calls with a reply (``n_items``), with an exact CI; NaN if none
    replied.

    Parameters
    ----------
    judgments : DataFrame
        A ``judgments`` table.
    by : sequence of str, optional
        The columns to group by; default judge, protocol and criterion - or component for rubric
        judgments, where one call covers all aspects of a component. Absent columns are skipped.
    {confidence}
    {columns}

    Returns
    -------
    DataFrame
        Contract rows keyed ``by`` and ``metric`` (``parse_failure_rate``); extras ``n_calls, n_ok, n_missing``.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_pairwise
    >>> parse_summary(synthetic_pairwise(n_items=10, seed=0))["metric"].iloc[0]
    'parse_failure_rate'
    """
    d = judgments.copy()
    if by is None:
        by = ("judge", "protocol", "component" if "component" in d.columns else "criterion")
    by = [c for c in by if c in d.columns]
    if "call" not in d.columns:
        d["call"] = np.arange(len(d)).astype(str)
    calls = d.drop_duplicates(by + ["call"]) if by else d.drop_duplicates(["call"])
    groups = calls.groupby(by, sort=True) if by else [((), calls)]
    rows = []
    for key, g in groups:
        status = g["parse_status"]
        n_ok, n_failed = int((status == "ok").sum()), int((status == "failed").sum())
        replied = n_ok + n_failed
        rows.append(result_row(n_failed / replied if replied else np.nan,
                               proportion_ci(n_failed, replied, confidence=confidence), EXACT if replied else "",
                               n_items=replied, n_failed=n_failed, note="" if replied else "no call replied",
                               **dict(zip(by, key if isinstance(key, tuple) else (key,))),
                               metric="parse_failure_rate", n_calls=len(g), n_ok=n_ok,
                               n_missing=int((status == "missing").sum())))
    return result_frame(rows, keys=[*by, "metric"])


@shared_docs
@takes_columns("item", "judge", "criterion", "verdict")
def to_annotations(df: pd.DataFrame, *, rater_kind: str | None = None, columns: Columns = None) -> pd.DataFrame:
    """Return judge verdicts as an ``annotations`` table (item, rater, rater_kind, criterion, label).

    Use it on one verdict per (item, judge, criterion), e.g. the output of
    :func:`medeval_kit.pairwise.resolve_orders`; NA verdicts (dropped, failed) stay NA labels.

    Parameters
    ----------
    df : DataFrame
        One verdict per ``item``, ``judge`` and ``criterion`` (column ``verdict``).
    rater_kind : str, optional
        The value of the ``rater_kind`` column; default ``"llm"``.
    {columns}

    Returns
    -------
    DataFrame
        ``item, rater, rater_kind, criterion, label`` (the judge is the rater, the verdict the label).

    Raises
    ------
    SchemaError
        A (item, judge, criterion) has more than one verdict.
    """
    item, judge, criterion, verdict = "item", "judge", "criterion", "verdict"
    rater_kind = "llm" if rater_kind is None else rater_kind
    dup = df.duplicated([item, judge, criterion], keep=False)
    if dup.any():
        raise SchemaError("judgments", f"{item},{judge},{criterion}", [int(i) for i in np.flatnonzero(dup)],
                          "one verdict per item, judge and criterion is needed; resolve orders and repeats "
                          "first (medeval_kit.pairwise.resolve_orders)")
    return pd.DataFrame({"item": df[item].astype(str).to_numpy(), "rater": df[judge].astype(str).to_numpy(),
                         "rater_kind": rater_kind, "criterion": df[criterion].astype(str).to_numpy(),
                         "label": df[verdict].astype(object).where(df[verdict].notna(), None).to_numpy()})


# =========================================================================== dispatch through the registry
@shared_docs
@takes_columns(*JUDGMENT_ROLES)
def score_summary(judgments: pd.DataFrame, *, policy: str = "drop", confidence: float = 0.95,
                  columns: Columns = None) -> pd.DataFrame:
    """Return what the judge says about the judged models, with denominators (the protocol's ``scores`` hook).

    ``pairwise``: orders resolved with ``policy``, then the polarity-aware win rate of model A
    (:func:`medeval_kit.pairwise.win_rate`). ``rubric``: mean component / total score per target
    (:func:`rubric_scores`). ``reference`` / ``multi_answer``: the share ``correct``.
    ``multi_response`` and any protocol without a hook: the mean score per judge and target.

    Parameters
    ----------
    judgments : DataFrame
        A one-protocol ``judgments`` table.
    policy : str
        How the two presentation orders of a pairwise verdict are resolved
        (:func:`medeval_kit.pairwise.resolve_orders`: ``drop``, ``tie``, ``first`` ...).
    {confidence}
    {columns}

    Returns
    -------
    DataFrame
        Contract rows keyed by judge (and target, criterion or component, per protocol).

    Raises
    ------
    SchemaError
        The table mixes protocols or its protocol is not registered.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_pairwise
    >>> res = score_summary(synthetic_pairwise(n_items=20, judges=("j1",), seed=0))
    >>> res["judge"].tolist()
    ['j1']
    """
    proto = protocol_of(judgments)
    return (proto.scores or mean_scores)(judgments, policy=policy, confidence=confidence)


@shared_docs
@takes_columns(*JUDGMENT_ROLES)
def order_effects(judgments: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0,
                  columns: Columns = None) -> pd.DataFrame:
    """Return the presentation-order effects of one protocol's judgments (the protocol's ``order_effects`` hook).

    ``pairwise``: :func:`medeval_kit.bias.position_bias` (consistency, flip rate, first-slot rate ...).
    ``multi_answer`` / ``multi_response``: per judge and shown ``position`` the mean score (content is
    shuffled over positions, so a trend over positions is a position effect). Protocols that show
    one response per call in a single order: one row saying no order effect is measurable.

    Parameters
    ----------
    judgments : DataFrame
        A one-protocol ``judgments`` table (pairwise: ``slot_verdict`` and ``polarity`` are read under
        these names when present).
    {n_boot}
    {seed}
    {columns}

    Returns
    -------
    DataFrame
        Contract rows keyed by judge and metric.

    Raises
    ------
    SchemaError
        The table mixes protocols or its protocol is not registered.
    """
    proto = protocol_of(judgments)
    if proto.order_effects is None:
        return result_frame([result_row(np.nan, n_items=len(judgments), judge=_judges(judgments), metric="none",
                                        note=f"protocol {proto.name!r} shows one response per call in a single "
                                        "order: no order effect is measurable")], keys=["judge", "metric"])
    return proto.order_effects(judgments, n_boot=n_boot, seed=seed)


@shared_docs
@takes_columns(*JUDGMENT_ROLES, *ANNOTATION_ROLES)
def human_agreement(judgments: pd.DataFrame, humans: pd.DataFrame | None, *, policy: str = "drop",
                    n_boot: int = 1000, seed: int = 0, columns: Columns = None) -> pd.DataFrame:
    """Score the judge against human labels ``humans`` (the protocol's ``humans`` hook).

    ``pairwise``: ``humans`` is an ``annotations`` table of A/B/tie labels; the judge is scored like a
    held-out annotator (:func:`medeval_kit.agreement.judge_vs_humans`), after resolving the two
    orders with ``policy``, with ``[AB only]`` / ``[BA only]`` rows. ``multi_response``: ``humans``
    holds reference scores (item, target, score) and :func:`acc_tuple_triple` is returned.
    ``humans=None`` or a protocol without a hook: one row with a ``note``.

    Parameters
    ----------
    judgments : DataFrame
        A one-protocol ``judgments`` table.
    humans : DataFrame or None
        The human labels (an ``annotations`` table) or reference scores, per protocol.
    policy : str
        How the two presentation orders of a pairwise verdict are resolved.
    {n_boot}
    {seed}
    {columns}

    Returns
    -------
    DataFrame
        Contract rows keyed by rater (the judge, and its one-order variants) and metric.

    Raises
    ------
    SchemaError
        The table mixes protocols or its protocol is not registered.
    """
    proto = protocol_of(judgments)
    if humans is None or proto.humans is None:
        why = "no human labels given" if humans is None else "no comparison with human labels is defined"
        return result_frame([result_row(np.nan, n_items=0, rater=_judges(judgments), metric="none",
                                        note=f"{why} for protocol {proto.name!r}")], keys=["rater", "metric"])
    return proto.humans(judgments, humans, policy=policy, n_boot=n_boot, seed=seed)


@shared_docs
@takes_columns(*JUDGMENT_ROLES)
def verdict_counts(judgments: pd.DataFrame, *, confidence: float = 0.95, columns: Columns = None) -> pd.DataFrame:
    """Return the verdict counts by the protocol's grouping (order, shown position or criterion), failures as labels.

    Pairwise: presented-slot verdicts per order (a position-biased judge piles up on ``first``).
    k-slot protocols: verdicts by shown position. Others: by criterion (the first 12). A row that did
    not parse is counted under ``parse <status>``.

    Parameters
    ----------
    judgments : DataFrame
        A one-protocol ``judgments`` table.
    {confidence}
    {columns}

    Returns
    -------
    DataFrame
        ``protocol, by, group, label``, the contract columns (``estimate`` the label's share of its group,
        exact CI; ``n_items`` the group's rows), then ``n`` (the count) and ``unit``.
    """
    proto = protocol_of(judgments)
    by = proto.verdicts_by
    d = judgments[judgments[by].isin(list(dict.fromkeys(judgments[by]))[:MAX_VERDICT_GROUPS])]
    lab = d[proto.verdict_column]
    if proto.verdict_column == "verdict" and not lab.notna().any():
        lab = d["score"]
    lab = lab.astype(object).where(d["parse_status"].eq("ok"), "parse " + d["parse_status"])
    lab = lab.map(lambda v: v if isinstance(v, str) else f"{v:g}")
    counts = d.assign(_label=lab).groupby([by, "_label"]).size()
    out = counts.rename_axis(["group", "label"]).reset_index(name="n")
    total = out.groupby("group")["n"].transform("sum")
    rows = [result_row(k / n, proportion_ci(k, n, confidence=confidence), EXACT, n_items=n, protocol=proto.name,
                       by=by, group=g, label=lab, n=k, unit=proto.row_unit)
            for g, lab, k, n in zip(out["group"], out["label"], out["n"].astype(int), total.astype(int))]
    return result_frame(rows, keys=["protocol", "by", "group", "label"])


# =========================================================================== generic score hooks
def mean_scores(judgments: pd.DataFrame, *, policy: str = "drop", confidence: float = 0.95) -> pd.DataFrame:
    """Mean parsed score per judge and target (``target`` column, else ``all``); failures counted."""
    rows = [result_row(float(ok["score"].mean()) if len(ok) else np.nan, n_items=len(ok), n_failed=n_failed,
                       judge=j, target=t, metric="mean_score", **counts)
            for j, t, ok, n_failed, counts in _by_target(judgments)]
    return result_frame(rows, keys=["judge", "target", "metric"])


def share_correct(judgments: pd.DataFrame, *, policy: str = "drop", confidence: float = 0.95) -> pd.DataFrame:
    """Per judge and target: label counts and the share ``correct`` among parsed, non-abstaining calls."""
    rows = []
    for j, t, ok, n_failed, counts in _by_target(judgments):
        labels = ok["verdict"].value_counts()
        n_lab = {f"n_{lab}": int(labels.get(lab, 0)) for lab in ("correct", "incorrect", "abstain")}
        k, n = n_lab["n_correct"], n_lab["n_correct"] + n_lab["n_incorrect"]
        rows.append(result_row(k / n if n else np.nan, proportion_ci(k, n, confidence=confidence), EXACT,
                               n_items=n, n_failed=n_failed, judge=j, target=t, metric="share_correct",
                               **counts, **n_lab))
    return result_frame(rows, keys=["judge", "target", "metric"])


def _by_target(judgments: pd.DataFrame):
    """Yield (judge, target, parsed rows, n_failed, count extras) per judge and target."""
    d = judgments.assign(_t=judgments["target"] if "target" in judgments.columns else "all")
    for (j, t), g in d.groupby(["judge", "_t"], sort=True):
        ok = g[g["parse_status"].eq("ok")]
        yield j, t, ok, int(g["parse_status"].eq("failed").sum()), {
            "n_rows": len(g), "n_ok": len(ok), "n_missing": int(g["parse_status"].eq("missing").sum())}


# =========================================================================== rubric scores
@shared_docs
@takes_columns("item", "judge", "repeat", "criterion", "score", "protocol", "question_item", "target")
def rubric_scores(judgments: pd.DataFrame, rubric: str | Rubric | None = None, *,
                  columns: Columns = None) -> pd.DataFrame:
    """Return component and total scores from rubric judgments (MCQG-SRefine).

    A component score is the sum of its aspect scores over its maximum (``max_score`` = sum of the
    aspects' maxima). The total is the unweighted mean over the components (not the pooled sum of
    raw points). A component with any unscored aspect (parse failure, missing row) is NaN with its
    count in ``n_failed``/``n_missing`` and a ``note``; the total is then NaN too - nothing is imputed.

    Parameters
    ----------
    judgments : DataFrame
        Rubric ``judgments`` (one row per aspect: ``criterion`` the aspect id, ``score``).
    rubric : str or Rubric, optional
        The rubric the judgments were made with; default the table's ``rubric`` column.
    {columns}

    Returns
    -------
    DataFrame
        One row per (item, judge, repeat, component) plus ``component="total"``: ``score`` (0-1),
        ``points``, ``max_score``, ``n_aspects``, ``n_scored``, ``n_missing`` and the contract columns
        (``estimate`` = ``score``, no interval; ``n_items`` the aspects scored, ``n_failed`` those not).

    Raises
    ------
    SchemaError
        The rubric cannot be told, or an aspect is not in it.
    """
    item, judge, repeat, criterion, score = "item", "judge", "repeat", "criterion", "score"
    rub = _rubric_of(judgments, rubric, criterion)
    rows = []
    keys = [item, judge, repeat]
    extra = [c for c in ("question_item", "target") if c in judgments.columns]
    for key, g in judgments.groupby(keys, sort=True):
        base = {**dict(zip(keys, key)), **{c: g[c].iloc[0] for c in extra}}
        comps = [_component_row(g.set_index(criterion)[score], comp) for comp in rub.components]
        scores = [c["score"] for c in comps]
        total = float(np.mean(scores)) if all(np.isfinite(scores)) else np.nan
        rows += [{**base, **c} for c in comps]
        rows.append({**base, "component": "total", "score": total, "points": np.nan, "max_score": 1.0,
                     "n_aspects": len(rub.aspects), "n_scored": int(sum(c["n_scored"] for c in comps)),
                     "n_failed": int(sum(c["n_failed"] + c["n_missing"] for c in comps)), "n_missing": 0,
                     "note": "" if np.isfinite(total) else "a component is NaN: total not computed"})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["estimate"] = out["score"]
    out["ci_low"] = out["ci_high"] = np.nan
    out["ci_method"] = ""
    out["n_items"] = out["n_scored"].astype(int)
    return out


def _rubric_of(judgments: pd.DataFrame, rubric: str | Rubric | None, criterion: str) -> Rubric:
    """The rubric the judgments were made with (``rubric`` column if not given); unknown aspects are an error."""
    check_protocol(judgments, "rubric")
    if rubric is None:
        names = sorted(set(judgments["rubric"].dropna())) if "rubric" in judgments.columns else []
        if len(names) != 1:
            raise SchemaError("judgments", "rubric", [], f"cannot tell the rubric (found {names}); pass rubric=")
        rubric = names[0]
    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
    known = set(rub.criteria)
    unknown = sorted(set(judgments[criterion].astype(str)) - known)
    if unknown:
        raise SchemaError("judgments", criterion, [int(i) for i in np.flatnonzero(~judgments[criterion].isin(known))],
                          f"aspect(s) {unknown[:5]} are not in rubric {rub.name!r} ({rub.path}); pass the rubric "
                          "the judgments were made with")
    return rub


def _component_row(by_aspect: pd.Series, comp) -> dict:
    """One component's score (sum / max) from one unit's aspect scores; NaN with a note if any is unscored."""
    ids = [a.id for a in comp.aspects]
    present = [i for i in ids if i in by_aspect.index]
    vals = pd.to_numeric(by_aspect.loc[present], errors="coerce") if present else pd.Series(dtype=float)
    n_missing = len(ids) - len(present)
    n_failed = int(vals.isna().sum())
    s = float(vals.sum()) if (n_missing == 0 and n_failed == 0) else np.nan
    note = "" if np.isfinite(s) else f"{n_failed} aspect(s) unparsed, {n_missing} absent: not imputed"
    return {"component": comp.id, "score": s / comp.max_score if np.isfinite(s) else np.nan, "points": s,
            "max_score": float(comp.max_score), "n_aspects": len(ids), "n_scored": int(vals.notna().sum()),
            "n_failed": n_failed, "n_missing": n_missing, "note": note}


# =========================================================================== Acc-2-tuple / Acc-triple
@shared_docs
@takes_columns("question_item", "target", "score", "judge", "repeat", "parse_status", "protocol", "item")
def acc_tuple_triple(judgments: pd.DataFrame, reference: pd.DataFrame, *, confidence: float = 0.95,
                     columns: Columns = None, **old: str) -> pd.DataFrame:
    """AutoMedEval's Acc-2-tuple and Acc-triple of multi-response scores against reference scores.

    For every (judge, repeat, item) the judge's scores of the item's responses are compared with the
    reference scores. Acc-2-tuple: each pair of responses counts as correct only if the sign of the
    score difference matches exactly - a reference tie must be a judge tie. Acc-triple: the item is
    correct only if every pair matches (the same weak order). A parse failure (any of the item's
    responses without a score, or ``parse_status != "ok"``) counts as WRONG for all its pairs and
    its triple; it is counted in ``n_failed``. Items whose reference is incomplete are skipped
    (``n_skipped``). Returns rows ``metric`` in (``acc_2tuple``, ``acc_triple``) per judge with
    ``estimate, ci_low, ci_high, ci_method`` (exact binomial; pairs within an item are not
    independent, see ``note``), ``n`` (pairs or items, ``unit``), ``n_items`` (judged item-repeats),
    ``n_failed``, ``n_skipped``.

    Parameters
    ----------
    judgments : DataFrame
        ``multi_response`` judgments: ``question_item``, ``target``, ``score``, ``judge``, ``repeat``.
    reference : DataFrame
        Reference scores: ``item`` (the question), ``target``, ``score``.
    {confidence}
    {columns}
        The same mapping renames both tables.
    **old : str
        Deprecated keywords (one release, with a ``DeprecationWarning``): ``ref_item``, ``ref_target``,
        ``ref_score`` name the reference table's columns; rename them or pass ``columns``.

    Returns
    -------
    DataFrame
        Contract rows keyed ``judge, metric``; extras ``n``, ``unit``, ``n_skipped``.

    Raises
    ------
    SchemaError
        A needed column is missing, or the judgments are not ``multi_response``.
    """
    ref_old = {k: old.pop(k) for k in ("ref_item", "ref_target", "ref_score") if k in old}
    if old:
        raise TypeError(f"acc_tuple_triple() got unexpected keyword argument(s) {sorted(old)}")
    renamed = {v: k.removeprefix("ref_") for k, v in ref_old.items() if v != k.removeprefix("ref_")}
    if renamed:
        warnings.warn(f"acc_tuple_triple({', '.join(f'{k}={v!r}' for k, v in ref_old.items())}) is deprecated; "
                      "name the reference columns item, target, score (or pass columns=)", DeprecationWarning,
                      stacklevel=3)
        reference = reference.rename(columns=renamed)
    item, target, score = "question_item", "target", "score"
    ref_item, ref_target, ref_score = "item", "target", "score"
    check_protocol(judgments, "multi_response")
    for c in (item, target, score, "judge", "repeat"):
        if c not in judgments.columns:
            raise SchemaError("judgments", c, [], "missing column; acc_tuple_triple needs multi_response judgments")
    for c in (ref_item, ref_target, ref_score):
        if c not in reference.columns:
            raise SchemaError("reference", c, [], f"missing column; present: {list(reference.columns)}")
    ref, skipped = _reference_scores(reference, ref_item, ref_target, ref_score)
    d = judgments.copy()
    d[item] = d[item].astype(str)
    d[target] = d[target].astype(str)
    ok = d["parse_status"].eq("ok") if "parse_status" in d.columns else pd.Series(True, index=d.index)
    d["_s"] = pd.to_numeric(d[score], errors="coerce").where(ok)
    rows = []
    for j, gj in d.groupby("judge", sort=True):
        counts = _order_matches(gj, ref, item, target)
        for metric, k, n, unit in (("acc_2tuple", counts["pairs_ok"], counts["pairs_n"], "pairs"),
                                   ("acc_triple", counts["trip_ok"], counts["trip_n"], "items")):
            rows.append(result_row(k / n if n else np.nan, proportion_ci(k, n, confidence=confidence), EXACT,
                                   n_items=counts["units"], n_failed=counts["n_failed"], judge=j, metric=metric,
                                   note=("pairs share items: CI too narrow" if unit == "pairs" else "")
                                   + ("" if n else "no judged item has a complete reference"),
                                   n=n, unit=unit, n_skipped=len(skipped)))
    return result_frame(rows, keys=["judge", "metric"])


def _reference_scores(reference: pd.DataFrame, item: str, target: str, score: str) -> tuple[dict, set]:
    """Item -> {target: reference score}, and the items skipped for an incomplete reference."""
    ref, skipped = {}, set()
    for it, g in reference.groupby(item, sort=True):
        vals = pd.to_numeric(g[score], errors="coerce")
        if vals.isna().any() or len(g) < 2 or g[target].duplicated().any():
            skipped.add(str(it))
            continue
        ref[str(it)] = dict(zip(g[target].astype(str), vals.astype(float)))
    return ref, skipped


def _order_matches(gj: pd.DataFrame, ref: dict, item: str, target: str) -> dict:
    """One judge's matching pairs and triples against the reference orders (a failure is wrong)."""
    c = dict.fromkeys(("pairs_ok", "pairs_n", "trip_ok", "trip_n", "n_failed", "units"), 0)
    for (it, _rep), g in gj.groupby([item, "repeat"], sort=True):
        if it not in ref:
            continue
        c["units"] += 1
        r = ref[it]
        js = dict(zip(g[target], g["_s"]))
        ts = sorted(r)
        failed = any(t not in js or not np.isfinite(js[t]) for t in ts)
        c["n_failed"] += failed
        all_ok = not failed
        for a, b in itertools.combinations(ts, 2):
            c["pairs_n"] += 1
            good = (not failed) and np.sign(js[a] - js[b]) == np.sign(r[a] - r[b])
            c["pairs_ok"] += bool(good)
            all_ok &= bool(good)
        c["trip_n"] += 1
        c["trip_ok"] += bool(all_ok)
    return c
