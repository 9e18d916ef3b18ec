"""Aspect search at the paper's scale and its honest companion: how much an exhaustive search over
rubric-aspect subsets flatters itself.

MCQG-SRefine (Table 2) raises judge-expert kappa from 0.226 (all 30 aspects) to 0.539 by searching
every subset of up to 11 of 30 aspects (~1.1e8) and reporting the best on the same 40 items.
:func:`search_optimism` repeats that search on synthetic data where only a few planted aspects carry
the human preference (and on a null where none does), and reports per replicate the in-sample value,
the K-fold cross-validated value (the whole search re-run on the training folds), the optimism, and
the value of the chosen subset on many new items from the same population. The input helpers turn
a long rubric-score file (two systems) or a refinement-rounds table into the per-item aspect
differences :func:`~medeval_kit.judge.aspects.select_aspects` takes.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from medeval_kit.columns import Columns, apply_columns, takes_columns
from medeval_kit.datasets._io import read_table
from medeval_kit.datasets.synthetic import synthetic_aspect_scores
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import ParameterError, SchemaError
from medeval_kit.results import result_frame, result_row
from medeval_kit.stats import mean_interval

from .aspects import (
    _LAB,
    MAX_SUBSETS,
    OBJECTIVES,
    AspectSelection,
    _evaluate,
    _search_all,
    _search_inputs,
    _selections_of,
    _use_compiled,
    count_subsets,
    select_aspects_all,
)

__all__ = ["score_differences", "read_aspect_scores", "human_preferences", "round_differences",
           "search_optimism", "optimism_summary", "selection_table", "feasible_max_k", "SCENARIOS"]

SCENARIOS: dict[str, dict] = {"planted": {"n_planted": 3}, "no_signal": {"n_planted": 0}}
"""Default synthetic scenarios: three planted aspects among noise, and the null (no aspect carries signal;
named ``no_signal`` because CSV readers take ``null`` for a missing value)."""


def _need(df: pd.DataFrame, cols: Sequence[str], what: str, source: str = "") -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise SchemaError(source or what, missing[0], [],
                          f"{what} needs columns {list(cols)}; missing {missing}; has {list(df.columns)[:12]}")


_SCORE_ROLES = ("item", "system", "aspect", "score")


def _old_columns(old: Mapping[str, str], roles: Sequence[str], what: str,
                 aliases: Mapping[str, str] | None = None) -> dict:
    """The deprecated per-column keywords of a reader as a ``columns`` mapping (warns; unknown keywords raise)."""
    old = {(aliases or {}).get(k, k): v for k, v in old.items()}
    unknown = sorted(set(old) - set(roles))
    if unknown:
        raise TypeError(f"{what}() got unexpected keyword argument(s) {unknown}")
    renamed = {k: v for k, v in old.items() if v != k}
    if renamed:
        warnings.warn(f"{what}({', '.join(f'{k}={v!r}' for k, v in renamed.items())}) is deprecated; "
                      f"pass columns={renamed!r}", DeprecationWarning, stacklevel=3)
    return renamed


@shared_docs
@takes_columns(*_SCORE_ROLES)
def score_differences(scores: pd.DataFrame, a: str = "A", b: str = "B", *, aggregate: str = "mean",
                      columns: Columns = None) -> pd.DataFrame:
    """Return per item and aspect ``score(a) - score(b)`` from a long table of two systems' rubric scores.

    Parameters
    ----------
    scores : DataFrame
        One row per score: ``item``, ``system``, ``aspect``, ``score``.
    a, b : str
        The two systems compared (values of ``system``).
    aggregate : str
        How repeated scores of one item, aspect and system are combined (a pandas aggregation).
    {columns}

    Returns
    -------
    DataFrame
        Items x aspects (index ``item``, columns in order of first appearance); NaN where either side is
        unscored.

    Raises
    ------
    ParameterError
        ``a`` or ``b`` has no scores.
    SchemaError
        A needed column is missing.

    Examples
    --------
    >>> import pandas as pd
    >>> long = pd.DataFrame({"item": ["q1"] * 4, "system": ["A", "B", "A", "B"],
    ...                      "aspect": ["clear", "clear", "correct", "correct"], "score": [4, 2, 3, 3]})
    >>> score_differences(long).loc["q1"].tolist()
    [2.0, 0.0]
    """
    item, system, aspect, score = _SCORE_ROLES
    _need(scores, [item, system, aspect, score], "aspect scores")
    d = scores[[item, system, aspect, score]].copy()
    d[system] = d[system].astype(str)
    present = sorted(d[system].unique())
    for s in (a, b):
        if s not in present:
            raise ParameterError(f"system {s!r} has no scores; systems present: {present[:10]}")
    d = d[d[system].isin([a, b])]
    d[score] = pd.to_numeric(d[score], errors="coerce")
    d[item], d[aspect] = d[item].astype(str), d[aspect].astype(str)
    order = list(pd.unique(d[aspect]))
    wide = d.groupby([item, aspect, system], sort=False, dropna=False)[score].agg(aggregate).unstack(system)
    for s in (a, b):
        if s not in wide.columns:
            wide[s] = np.nan
    diff = (wide[a] - wide[b]).unstack(aspect).reindex(columns=order)
    diff.index.name, diff.columns.name = "item", "aspect"
    return diff.astype(float)


@shared_docs
def read_aspect_scores(path: str | Path, *, columns: Columns = None, **old_columns: str) -> pd.DataFrame:
    """Read a long rubric-score file (CSV, JSONL, Parquet ...) and check its columns; rows as read.

    Parameters
    ----------
    path : str or Path
        The file: one row per score with ``item``, ``system``, ``aspect``, ``score``.
    {columns}
    **old_columns : str
        Deprecated per-column keywords (``item=``, ``system=``, ``aspect=``, ``score=``), kept for one
        release with a ``DeprecationWarning``; pass ``columns`` instead.

    Returns
    -------
    DataFrame
        The file's rows, the score columns under their canonical names.

    Raises
    ------
    SchemaError
        A column is missing or a score is not a number (names the file and rows).
    """
    mapping = {**_old_columns(old_columns, _SCORE_ROLES, "read_aspect_scores"), **dict(columns or {})}
    df = apply_columns(read_table(path), mapping, _SCORE_ROLES, where=str(path))
    item, system, aspect, score = _SCORE_ROLES
    _need(df, [item, system, aspect, score], "aspect scores", str(path))
    bad = pd.to_numeric(df[score], errors="coerce").isna() & df[score].notna()
    if bad.any():
        rows = list(np.flatnonzero(bad.to_numpy())[:10])
        raise SchemaError(str(path), score, rows, f"scores must be numbers; e.g. {df[score][bad].iloc[0]!r}")
    return df


@takes_columns("item", "preference")
def _preferences(prefs: pd.DataFrame, source: str, *, columns: Columns = None) -> pd.Series:
    item, label = "item", "preference"
    _need(prefs, [item, label], "preferences", source)
    raw = prefs[label]
    norm = raw.astype(str).str.strip().str.lower().map({"a": "A", "b": "B", "tie": "tie"})
    bad = raw.notna() & norm.isna()
    if bad.any():
        raise SchemaError(source or "preferences", label, list(np.flatnonzero(bad.to_numpy())[:10]),
                          f"preferences must be A, B or tie; found {sorted(map(str, raw[bad].unique()))[:5]}")
    out = pd.Series(norm.to_numpy(dtype=object), index=prefs[item].astype(str).to_numpy(), name="preference")
    if out.index.duplicated().any():
        dup = out.index[out.index.duplicated()][0]
        raise SchemaError(source or "preferences", item, [], f"one preference per item; {dup!r} appears twice")
    return out


@shared_docs
def human_preferences(prefs: pd.DataFrame | str | Path, *, columns: Columns = None, **old_columns: str) -> pd.Series:
    """Return the human preference per item (``A``, ``B`` or ``tie``; case and spaces ignored) as a Series by item.

    Empty labels stay NaN (those items are dropped and counted by the search); any other label raises
    SchemaError naming the rows.

    Parameters
    ----------
    prefs : DataFrame or str or Path
        A table or a file with ``item`` and ``preference``.
    {columns}
    **old_columns : str
        Deprecated per-column keywords kept for one release with a ``DeprecationWarning``: ``item=``,
        ``label=`` (the preference column; now ``columns={"preference": ...}``).

    Returns
    -------
    Series
        ``preference`` by item.

    Raises
    ------
    SchemaError
        A column is missing, a label is not A/B/tie, or an item appears twice.

    Examples
    --------
    >>> import pandas as pd
    >>> human_preferences(pd.DataFrame({"case": ["q1", "q2"], "winner": ["a", " TIE"]}),
    ...                   columns={"item": "case", "preference": "winner"}).tolist()
    ['A', 'tie']
    """
    mapping = {**_old_columns(old_columns, ("item", "preference"), "human_preferences", {"label": "preference"}),
               **dict(columns or {})}
    source = ""
    if not isinstance(prefs, pd.DataFrame):
        source, prefs = str(prefs), read_table(prefs, text=True)
    return _preferences(prefs, source, columns=mapping)


@shared_docs
@takes_columns("item", "round", "component", "aspect", "score", "best")
def round_differences(rounds_df: pd.DataFrame, *, a_round: int | str = 1, b_round: int | str = "best",
                      total: str = "total", columns: Columns = None) -> pd.DataFrame:
    """Return per-item aspect differences ``score(round a) - score(round b)`` from a refinement-rounds table.

    A round is a number or ``"best"`` (the round flagged in ``best``; else the highest mean aspect
    score, earliest on ties). Aspects are named ``component:aspect``; an item whose best round is
    round 1 has all differences 0.

    Parameters
    ----------
    rounds_df : DataFrame
        A ``rounds`` table: ``item``, ``round``, ``aspect``, ``score``; optional ``component`` and ``best``.
    a_round, b_round : int or "best"
        The two rounds compared.
    total : str
        The ``aspect`` value of component totals, which are excluded.
    {columns}

    Returns
    -------
    DataFrame
        Items x aspects (NaN where unscored).

    Raises
    ------
    SchemaError
        A needed column is missing.
    """
    item, round, component, aspect, score, best = "item", "round", "component", "aspect", "score", "best"  # noqa: A001
    _need(rounds_df, [item, round, aspect, score], "rounds")
    d = rounds_df[rounds_df[aspect].astype(str) != total].copy()
    d["_aspect"] = (d[component].astype(str) + ":" + d[aspect].astype(str)) if component in d else d[aspect].astype(str)
    d["_item"] = d[item].astype(str)
    d["_score"] = pd.to_numeric(d[score], errors="coerce")
    d["_round"] = pd.to_numeric(d[round], errors="coerce")

    def chosen(which) -> pd.Series:
        if which != "best":
            return pd.Series(int(which), index=pd.Index(sorted(d["_item"].unique())))
        flagged = d[d[best].astype(bool)].groupby("_item")["_round"].min() if best in d else pd.Series(dtype=float)
        means = d.groupby(["_item", "_round"])["_score"].mean().reset_index()
        means = means.sort_values(["_item", "_score", "_round"], ascending=[True, False, True], kind="stable")
        top = means.drop_duplicates("_item").set_index("_item")["_round"]
        return flagged.reindex(top.index).fillna(top).astype(int)

    sides = []
    for which in (a_round, b_round):
        r = chosen(which)
        sel = d[d["_round"].to_numpy() == d["_item"].map(r).to_numpy(float)]
        sides.append(sel.groupby(["_item", "_aspect"], sort=False)["_score"].mean().unstack("_aspect"))
    order = list(dict.fromkeys(d["_aspect"]))
    diff = (sides[0] - sides[1]).reindex(columns=order)
    diff.index.name, diff.columns.name = "item", "aspect"
    return diff.astype(float)


def feasible_max_k(n_aspects: int, max_k: int, max_subsets: int = MAX_SUBSETS) -> int:
    """Return the largest subset size <= ``max_k`` (and <= ``n_aspects``) whose exhaustive search stays within ``max_subsets``.

    Parameters
    ----------
    n_aspects : int
        Aspects searched over.
    max_k : int
        The largest subset size wanted.
    max_subsets : int
        The cap on subsets an exhaustive search may try.

    Returns
    -------
    int
        The feasible size (at least 1).

    Examples
    --------
    >>> feasible_max_k(30, 11), feasible_max_k(30, 11, max_subsets=10_000)
    (11, 3)
    """
    k = max(1, min(max_k, n_aspects))
    while k > 1 and count_subsets(n_aspects, k) > max_subsets:
        k -= 1
    return k


def _planted_mask(scores: pd.DataFrame, names: list[str]) -> np.ndarray:
    planted = scores.drop_duplicates("aspect").set_index("aspect")["planted"]
    return planted.reindex(names).fillna(False).to_numpy(bool)


def _synthetic_differences(scores: pd.DataFrame) -> pd.DataFrame:
    """:func:`score_differences` of a :func:`~medeval_kit.datasets.synthetic.synthetic_aspect_scores` table,
    by array indexing instead of a group-by (the same frame; falls back to it on repeated scores)."""
    items, aspects = pd.factorize(scores["item"]), pd.factorize(scores["aspect"])
    system = scores["system"].to_numpy()
    cell = items[0] * len(aspects[1]) + aspects[0]
    score = pd.to_numeric(scores["score"], errors="coerce").to_numpy(float)
    grid = np.full((2, len(items[1]) * len(aspects[1])), np.nan)
    for side, name in enumerate(("A", "B")):
        mine = system == name
        if mine.any() and np.bincount(cell[mine]).max() > 1:  # repeated scores: aggregate as score_differences does
            return score_differences(scores)
        grid[side, cell[mine]] = score[mine]
    diff = (grid[0] - grid[1]).reshape(len(items[1]), len(aspects[1]))
    return pd.DataFrame(diff, index=pd.Index(items[1], name="item"), columns=pd.Index(aspects[1], name="aspect"))


def _values_on(diffs: pd.DataFrame, human: pd.Series, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kappa, agreement, n) of the judges summing the aspects in each row of ``masks`` on these items."""
    X = diffs.to_numpy(float)
    y = human.reindex(diffs.index).map(_LAB).to_numpy(int)
    kap, po, n, _, _ = _evaluate(np.nan_to_num(X), np.isnan(X), np.atleast_2d(masks).astype(float), y)
    return kap, po, n


def _in_sample_selections(diffs, human, *, method, objectives, max_k, engine) -> dict[str, AspectSelection]:
    """The search on all items without cross-validation (the paper's protocol): one
    :class:`AspectSelection` per objective with ``k_folds=0`` and NaN cross-validated values."""
    D, M, y, names, n_missing, k_cap = _search_inputs(diffs, human, method=method, objectives=objectives,
                                                      max_k=max_k, max_subsets=MAX_SUBSETS, check_method=False)
    p = len(names)
    view = _search_all(D, M, y, names, method, tuple(objectives), k_cap, engine)[0]
    allk, allpo, _, _, _ = _evaluate(D, M, np.ones((1, p)), y)
    out = {}
    for objective in objectives:
        col = OBJECTIVES.index(objective)
        mask = view[objective][0]
        kap_in, po_in, _, _, _ = _evaluate(D, M, mask[None, :].astype(float), y)
        out[objective] = AspectSelection(
            method=method, objective=objective, selected=tuple(nm for nm, m in zip(names, mask) if m),
            in_sample=float((kap_in, po_in)[col][0]), in_sample_agreement=float(po_in[0]),
            all_aspects=float((allk, allpo)[col][0]), cv_estimate=np.nan, cv_mean_fold=np.nan,
            n_items=len(y), n_missing=n_missing, k_folds=0, path=view[objective][2], folds=pd.DataFrame(),
            note="in-sample only (no cross-validation)",
            engine="numba" if _use_compiled(method, engine, len(y)) else "numpy")
    return out


_CV_QUANTITIES = ("cross_validated", "cv_mean_fold", "optimism")


def search_optimism(
    *,
    scenarios: Mapping[str, Mapping] | None = None,
    replicates: int = 5,
    n_items: int = 40,
    n_aspects: int = 30,
    max_k: int = 11,
    k_folds: int = 5,
    method: str = "exhaustive",
    objectives: Sequence[str] = OBJECTIVES,
    n_new: int = 10_000,
    seed: int = 0,
    engine: str = "auto",
    **generator,
) -> pd.DataFrame:
    """In-sample vs cross-validated aspect search on synthetic replicates: one result row per
    scenario x replicate x objective x quantity.

    Each scenario (name -> :func:`~medeval_kit.datasets.synthetic.synthetic_aspect_scores`
    arguments; default :data:`SCENARIOS`, planted and no_signal) is drawn ``replicates`` times (population
    and items seeded ``seed + replicate``) with ``n_items`` items and ``n_aspects`` aspects; the
    search (default: exhaustive up to ``max_k``, the paper's) runs on it with ``k_folds``-fold
    cross-validation. Quantities: ``all_aspects``, ``in_sample``, ``cross_validated``,
    ``cv_mean_fold``, ``optimism`` (in-sample - CV), ``new_items`` (the chosen subset on ``n_new``
    new items from the same population: its real performance) and ``planted_new_items`` (the
    planted aspects' judge on them; NaN in the null). ``k_folds=0`` runs the search once on all
    items without cross-validation (the paper's protocol; no ``cross_validated``, ``cv_mean_fold``
    or ``optimism`` rows), e.g. to run the paper-scale search once next to a smaller replicated
    simulation. Extra columns: ``k`` and ``selected`` (the chosen subset), ``n_planted_selected``,
    and the sizes of the simulation, ``max_k``, ``k_folds`` and ``n_subsets`` (the subsets one
    exhaustive search tries; 0 for the other methods).

    Parameters
    ----------
    scenarios : mapping, optional
        Scenario name -> arguments of :func:`~medeval_kit.datasets.synthetic.synthetic_aspect_scores`.
    replicates : int
        Draws per scenario.
    n_items : int
        Items per draw.
    n_aspects : int
        Aspects per draw.
    max_k : int
        The largest subset size searched.
    k_folds : int
        Cross-validation folds; 0 for the in-sample search only.
    method : {"greedy", "forward", "exhaustive"}
        The search.
    objectives : sequence of str
        ``kappa`` and/or ``agreement``.
    n_new : int
        New items the chosen subset is scored on.
    seed : int
        Random seed (replicate r uses ``seed + r``).
    engine : {"auto", "numba", "numpy"}
        Where the exhaustive search runs.
    **generator
        More arguments of :func:`~medeval_kit.datasets.synthetic.synthetic_aspect_scores` for every scenario.

    Returns
    -------
    DataFrame
        Contract rows keyed ``scenario, replicate, seed, objective, search_method, quantity``.

    Raises
    ------
    ParameterError
        ``replicates`` < 1, ``k_folds`` is 1 or negative, or an invalid search option.
    """
    scenarios = dict(SCENARIOS if scenarios is None else scenarios)
    if replicates < 1:
        raise ParameterError(f"replicates must be >= 1; got {replicates}")
    if k_folds < 0 or k_folds == 1:
        raise ParameterError(f"k_folds must be 0 (no cross-validation) or >= 2; got {k_folds}")
    sizes = {"max_k": int(max_k), "k_folds": int(k_folds),
             "n_subsets": count_subsets(n_aspects, max_k) if method == "exhaustive" else 0}
    rows = []
    for name, extra in scenarios.items():
        args = {"n_items": n_items, "n_aspects": n_aspects, **generator, **dict(extra)}
        for r in range(replicates):
            s = seed + r
            scores, prefs = synthetic_aspect_scores(**{**args, "seed": s, "population_seed": s})
            diffs = _synthetic_differences(scores)
            human = prefs.set_index("item")["preference"]
            if k_folds:
                sels = select_aspects_all(diffs, human, method=method, objectives=tuple(objectives), max_k=max_k,
                                          k_folds=k_folds, seed=s, engine=engine)
            else:
                sels = _in_sample_selections(diffs, human, method=method, objectives=tuple(objectives),
                                             max_k=max_k, engine=engine)
            new_scores, new_prefs = synthetic_aspect_scores(**{**args, "n_items": n_new, "seed": 1_000_003 + s,
                                                               "population_seed": s})
            new_diffs = _synthetic_differences(new_scores).reindex(columns=diffs.columns)
            new_human = new_prefs.set_index("item")["preference"]
            planted = _planted_mask(scores, list(diffs.columns))
            by_objective = _selections_of(sels)
            chosen = {o: np.isin(np.asarray(diffs.columns), sel.selected) for o, sel in by_objective.items()}
            new_values = _values_on(new_diffs, new_human, np.array([*chosen.values(), planted]))  # one pass
            for i, (objective, sel) in enumerate(by_objective.items()):
                col = OBJECTIVES.index(objective)
                keys = {"scenario": name, "replicate": r, "seed": s, "objective": objective,
                        "search_method": method}
                extra_cols = {"k": len(sel.selected), "selected": ", ".join(sel.selected),
                              "n_planted": int(planted.sum()),
                              "n_planted_selected": int((chosen[objective] & planted).sum()), **sizes}
                for q in sel._rows():
                    if k_folds or q["quantity"] not in _CV_QUANTITIES:
                        rows.append(result_row(q["estimate"], n_items=q["n_items"], n_failed=q["n_failed"],
                                               note=q["note"], **keys, quantity=q["quantity"], **extra_cols))
                rows.append(result_row(new_values[col][i], n_items=int(new_values[2][i]),
                                       note=f"chosen subset on {n_new:,} new items",
                                       **keys, quantity="new_items", **extra_cols))
                v_pl, n_pl = (new_values[col][-1], int(new_values[2][-1])) if planted.any() else (np.nan, 0)
                rows.append(result_row(v_pl, n_items=n_pl, note="planted aspects' judge on the new items"
                                       if planted.any() else "no planted aspect (the null)",
                                       **keys, quantity="planted_new_items", **extra_cols))
    return result_frame(rows, keys=["scenario", "replicate", "seed", "objective", "search_method", "quantity"])


@shared_docs
def optimism_summary(table: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Return the mean over replicates of each scenario x objective x quantity of :func:`search_optimism`.

    Parameters
    ----------
    table : DataFrame
        The result of :func:`search_optimism`.
    {confidence}

    Returns
    -------
    DataFrame
        Contract rows keyed ``scenario, objective, search_method, quantity`` with a t interval over
        replicates (``n_items`` the replicates); extra ``mean_items`` and, when the table has them, the
        simulation's sizes ``max_k``, ``k_folds`` and ``n_subsets``.
    """
    rows = []
    keys = [c for c in ("scenario", "objective", "search_method", "quantity") if c in table.columns]
    sizes = [c for c in ("max_k", "k_folds", "n_subsets") if c in table.columns]
    for key, g in table.groupby(keys, sort=False):
        x = g["estimate"].to_numpy(float)
        ok = x[np.isfinite(x)]
        lo, hi, method, note = mean_interval(ok, confidence=confidence, method="t") if len(ok) else (
            np.nan, np.nan, "", "no finite value")
        rows.append(result_row(ok.mean() if len(ok) else np.nan, (lo, hi), method if len(ok) else "",
                               n_items=len(ok), n_failed=len(x) - len(ok),
                               note=note or f"mean over {len(ok)} replicates", **dict(zip(keys, key)),
                               mean_items=float(g["n_items"].mean()), **{c: g[c].iloc[0] for c in sizes}))
    return result_frame(rows, keys=keys)


def selection_table(selections, **keys) -> pd.DataFrame:
    """Return the result rows of several aspect selections (one per objective), with ``keys`` as leading columns.

    Parameters
    ----------
    selections : AspectSelections or mapping of str to AspectSelection
        The result of :func:`~medeval_kit.judge.select_aspects_all` (or ``{objective: selection}``).
    **keys
        Constant columns put first (e.g. ``data="mine"``).

    Returns
    -------
    DataFrame
        The selections' contract rows (:meth:`AspectSelection.to_frame`) with ``keys`` first.
    """
    frames = [s.to_frame() for s in _selections_of(selections).values()]
    out = pd.concat(frames, ignore_index=True)
    for i, (k, v) in enumerate(keys.items()):
        out.insert(i, k, v)
    return out
