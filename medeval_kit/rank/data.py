"""Pairwise comparisons for ranking: one row per judged pair (item, judge, model_a, model_b, verdict).

The tidy ``comparisons`` table has the columns ``item, unit, judge, model_a, model_b, verdict, status,
raw``: ``verdict`` is ``"A"`` (model_a won), ``"B"`` or ``"tie"`` in model terms (the one pairwise
vocabulary, :data:`medeval_kit.pairwise.MODEL_LABELS`; ``neither`` counts as a tie), or missing for a
failed verdict (``status == "failed"``, counted, never a tie). ``unit`` is what the bootstrap resamples (the
item unless a cluster column is named, e.g. the instruction a pair of responses answers).

:func:`comparisons` builds it from any DataFrame (your column names mapped by ``columns=``), :func:`read_comparisons`
from a file, :func:`comparisons_from_counts` from win/tie counts (published tables), and
:func:`comparisons_from_bundle` from a bundled dataset's responses + annotations (human majority vote
and each rater). :func:`demo_comparisons` is a small seeded example with planted strengths.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from medeval_kit.bias._common import legacy_columns, user_column_error
from medeval_kit.bias.inputs import (
    MODEL_TERMS,
    VERDICT_TERMS,
    model_terms,
    nothing_left_to_score,
    verdict_terms_advice,
)
from medeval_kit.columns import Columns, apply_columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import DataFileError, ParameterError, SchemaError

__all__ = ["COLUMNS", "VERDICTS", "VERDICT_TERMS", "MODEL_TERMS", "comparisons", "read_comparisons", "comparisons_from_counts",
           "comparisons_from_bundle", "demo_comparisons"]

COLUMNS = ("item", "unit", "judge", "model_a", "model_b", "verdict", "status", "raw")
"""Columns of the tidy comparisons table, in order."""
VERDICTS = ("A", "B", "tie")
"""Verdicts after reading: model_a won, model_b won, tie (``neither`` is read as a tie)."""

_TABLE = "comparisons"


def _rows(mask) -> list[int]:
    """0-based row numbers where ``mask`` is true."""
    return [int(i) for i in np.flatnonzero(np.asarray(mask, dtype=bool))]


def _text(v) -> str | None:
    """A cell as stripped text; None for a missing value or a blank cell."""
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return None
    t = str(v).strip()
    return t or None


def _tokens(failed: Collection[str] | str) -> set[str]:
    """Failure tokens from a list or a comma-separated string."""
    parts = failed.split(",") if isinstance(failed, str) else [str(t) for t in failed]
    return {t.strip() for t in parts if t.strip()}


def _verdict(term: str | None, cell: str | None, a: str, b: str) -> str | None:
    """A verdict in model terms A/B/tie from its reading in the vocabulary (``term``: A/B/tie/neither or "?";
    neither is a tie) or, failing that, the winning model's name in ``cell``."""
    if cell is None:
        return None
    if term != "?":
        return "tie" if term == "neither" else term
    if cell == a:
        return "A"
    if cell == b:
        return "B"
    return "?"


def _unknown_verdicts(cells: pd.Series, bad: np.ndarray, terms: str, model_a: str, model_b: str,
                      verdict: str, src: str | None) -> SchemaError:
    """The located error for unknown verdicts: the --verdict-terms that reads them, --failed only for the rest."""
    unknown = sorted({str(c) for c in cells[bad]})
    advice, rest = verdict_terms_advice(unknown, cells.dropna(), terms, allowed=MODEL_TERMS)
    todo = []
    if advice:
        t = advice.rsplit("--verdict-terms ", 1)[-1]
        todo.append(advice + (f" (verdict_terms={t!r})" if t in MODEL_TERMS else ""))
    if rest:
        todo.append(f"if {', '.join(map(repr, rest[:8]))} mean{'s' if len(rest) == 1 else ''} that the judge's reply "
                    f"could not be parsed, count {'it as a failed verdict' if len(rest) == 1 else 'them as failed verdicts'} "
                    f"(failed={','.join(rest[:8])!r} / --failed {' '.join(rest[:8])})")
    return SchemaError(_TABLE, verdict, _rows(bad), f"unknown verdict(s) {unknown[:8]}; expected "
                       f"{VERDICT_TERMS[terms]} (--verdict-terms {terms}; A: {model_a} won, B: {model_b} won), "
                       f"the winning model's name, or an empty cell. {'; '.join(todo)}", src)


@shared_docs
@takes_columns("item", "model_a", "model_b", "verdict", "judge", "unit")
def comparisons(
    df: pd.DataFrame,
    *,
    failed: Collection[str] | str = (),
    source: str | None = None,
    verdict_terms: str = "model",
    columns: Columns = None,
) -> pd.DataFrame:
    """Return the tidy comparisons table from ``df`` (errors name the column and rows).

    ``verdict`` holds the winner in the vocabulary ``verdict_terms`` (:data:`VERDICT_TERMS`): ``"model"``
    reads ``A`` (``model_a`` won), ``B`` as written, ``tie`` or ``neither`` (any case; neither is a tie);
    ``"model-any-case"`` also ``a``/``b``; ``"arena"`` the Chatbot Arena / MT-bench words ``model_a``,
    ``model_b``, ``tie``, ``tie (bothbad)``. The name of the winning model itself is read in all three.
    Empty cells and the ``failed`` tokens are failed verdicts: kept with ``status="failed"`` and counted,
    never ties. A table in which no verdict names a winner (e.g. failure tokens that took every verdict)
    is an error.

    Parameters
    ----------
    df : DataFrame
        One row per judged pair: ``item``, ``model_a``, ``model_b``, ``verdict``; optionally ``judge``
        (the judge or human group; absent: one judge, ``"all"``) and ``unit`` (what the bootstrap
        resamples, e.g. the instruction a pair answers; absent: the item).
    failed : str or collection of str, default ()
        Verdict cells that mean a failed verdict (a list or a comma-separated string).
    {source}
    verdict_terms : {"model", "model-any-case", "arena"}, default "model"
        The verdicts' vocabulary (:data:`VERDICT_TERMS`).
    {columns}

    Returns
    -------
    DataFrame
        The comparisons table, columns :data:`COLUMNS`: ``item, unit, judge, model_a, model_b, verdict``
        (A/B/tie; missing when failed), ``status`` (ok/failed) and ``raw`` (the cell as read).

    Raises
    ------
    SchemaError
        A column is missing, a model name or item is empty, a model is compared with itself, a verdict
        is unknown, or no verdict names a winner.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"case": ["c1", "c2"], "m1": ["x", "x"], "m2": ["y", "z"], "who": ["A", "z"]})
    >>> c = comparisons(df, columns={"item": "case", "model_a": "m1", "model_b": "m2", "verdict": "who"})
    >>> c["verdict"].tolist()
    ['A', 'B']
    """
    item, model_a, model_b, verdict = "item", "model_a", "model_b", "verdict"
    judge = "judge" if "judge" in df.columns else None
    unit = "unit" if "unit" in df.columns else None
    src = source
    if verdict_terms not in MODEL_TERMS:
        raise ParameterError(f"verdict_terms must be one of {list(MODEL_TERMS)} ("
                             + "; ".join(f"{t}: {VERDICT_TERMS[t]}" for t in MODEL_TERMS) + f"); got {verdict_terms!r}")
    need = [item, model_a, model_b, verdict]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise SchemaError(_TABLE, missing[0], [], f"missing column(s) {missing}; present: {list(df.columns)}. "
                          "Map your item, model_a, model_b, verdict (and judge) columns with columns={...}", src)
    if len(df) == 0:
        raise SchemaError(_TABLE, None, [], "the table is empty: no comparisons to rank", src)
    d = df.reset_index(drop=True)
    a = d[model_a].map(_text)
    b = d[model_b].map(_text)
    for col, s in ((model_a, a), (model_b, b)):
        if s.isna().any():
            raise SchemaError(_TABLE, col, _rows(s.isna()), "empty model name: every row needs the two models "
                              "compared", src)
    same = (a == b).to_numpy()
    if same.any():
        raise SchemaError(_TABLE, model_a, _rows(same), f"a model compared with itself ({model_a} equals "
                          f"{model_b}); drop those rows", src)
    items = d[item].map(_text)
    if items.isna().any():
        raise SchemaError(_TABLE, item, _rows(items.isna()), "empty item id", src)
    tokens = _tokens(failed)
    cells = d[verdict].map(_text)
    is_failed = cells.isin(tokens).to_numpy() | cells.isna().to_numpy()
    terms = model_terms(cells, verdict_terms)
    lab = pd.Series([None if f else _verdict(t, c, x, y) for t, c, f, x, y in zip(terms, cells, is_failed, a, b)],
                    dtype=object)
    bad = (lab == "?").to_numpy()
    if bad.any():
        raise _unknown_verdicts(cells, bad, verdict_terms, model_a, model_b, verdict, src)
    if not lab.isin(["A", "B"]).any():
        n_ties = int((lab == "tie").sum())
        raise SchemaError(_TABLE, verdict, [], nothing_left_to_score(cells[is_failed].dropna(), cells.dropna(),
                                                                     verdict_terms, allowed=MODEL_TERMS, what="rank",
                                                                     n_ties=n_ties), src)
    judges = (d[judge].map(_text).fillna("") if judge and judge in d.columns
              else pd.Series("all", index=d.index))
    units = d[unit].map(_text) if unit else items
    if units.isna().any():
        raise SchemaError(_TABLE, unit, _rows(units.isna()), "empty unit id", src)
    return pd.DataFrame({
        "item": items.to_numpy(), "unit": units.to_numpy(), "judge": judges.astype(str).to_numpy(),
        "model_a": a.to_numpy(), "model_b": b.to_numpy(), "verdict": lab.to_numpy(),
        "status": np.where(is_failed, "failed", "ok"), "raw": cells.to_numpy(),
    })[list(COLUMNS)]


@shared_docs
def read_comparisons(
    path: str | Path,
    *,
    failed: Collection[str] | str = (),
    verdict_terms: str = "model",
    sep: str | None = None,
    encoding: str | None = None,
    columns: Columns = None,
    **legacy,
) -> pd.DataFrame:
    """Return the tidy comparisons table of a CSV, TSV, JSONL, JSON or Parquet file (errors name file, column, rows).

    CSV cells are read as written (a verdict ``NA`` stays text; only an empty cell is missing). A file
    without a ``judge`` column has one judge.

    Parameters
    ----------
    path : str or Path
        The file.
    failed : str or collection of str, default ()
        Verdict cells that mean a failed verdict.
    verdict_terms : {"model", "model-any-case", "arena"}, default "model"
        The verdicts' vocabulary, as in :func:`comparisons`.
    sep : str, optional
        The CSV/TSV separator, as in :func:`medeval_kit.datasets.read_table`.
    encoding : str, optional
        The text encoding, as in :func:`medeval_kit.datasets.read_table`.
    {columns}
    **legacy
        The old per-column keywords (``item="case_id"`` ...), accepted for one release with a
        ``DeprecationWarning``; use ``columns``.

    Returns
    -------
    DataFrame
        The comparisons table (:func:`comparisons`).

    Raises
    ------
    DataFileError
        The file cannot be read.
    SchemaError
        As :func:`comparisons`, naming the file.
    """
    from medeval_kit.datasets import read_table

    mapping = legacy_columns("read_comparisons", columns, legacy, _READ_ROLES)
    try:
        df = read_table(path, text=True, sep=sep, encoding=encoding)
    except DataFileError:
        raise
    except Exception as exc:  # e.g. a corrupt parquet file
        raise DataFileError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    df = apply_columns(df, mapping, _READ_ROLES, where=str(path))
    try:
        return comparisons(df, failed=failed, source=str(path), verdict_terms=verdict_terms)
    except SchemaError as e:
        raise user_column_error(e, mapping) from None


_READ_ROLES = ("item", "model_a", "model_b", "verdict", "judge", "unit")


def comparisons_from_counts(
    counts: pd.DataFrame,
    *,
    player1: str,
    player2: str,
    wins1: str,
    wins2: str,
    ties: str | None = None,
    judge_name: str = "all",
    judge: str | None = None,
) -> pd.DataFrame:
    """Expand a table of counts (one row per pair: wins of player1, wins of player2, ties) to one row per game.

    Each game is its own item and bootstrap unit. Counts must be whole numbers. The counts table is a
    foreign layout (a published table), so its columns are named here rather than through ``columns``.

    Parameters
    ----------
    counts : DataFrame
        One row per pair of models.
    player1, player2 : str
        The columns naming the two models (``model_a``, ``model_b`` of the games).
    wins1, wins2 : str
        The columns counting the wins of player1 and of player2.
    ties : str, optional
        The column counting ties; none when omitted.
    judge_name : str, default "all"
        The judge every game is attributed to.
    judge : str, optional
        Deprecated name of ``judge_name`` (it is a judge's name, not a column).

    Returns
    -------
    DataFrame
        The comparisons table (:data:`COLUMNS`), one row per game (``item`` = ``unit`` = ``g0``, ``g1`` ...).

    Raises
    ------
    SchemaError
        A count is not a whole number >= 0.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"a": ["x"], "b": ["y"], "w": [2], "l": [1]})
    >>> comparisons_from_counts(t, player1="a", player2="b", wins1="w", wins2="l")["verdict"].tolist()
    ['A', 'A', 'B']
    """
    if judge is not None:
        warnings.warn("comparisons_from_counts(judge=...) is deprecated; use judge_name=", DeprecationWarning,
                      stacklevel=2)
        judge_name = judge
    rows = []
    for r, rec in enumerate(counts.to_dict("records")):
        cols = [(wins1, "A"), (wins2, "B")] + ([(ties, "tie")] if ties else [])
        for col, lab in cols:
            n = rec[col]
            if pd.isna(n) or float(n) < 0 or float(n) % 1:
                raise SchemaError(_TABLE, col, [r], f"counts must be whole numbers >= 0; got {n!r}")
            rows += [(str(rec[player1]), str(rec[player2]), lab)] * int(n)
    out = pd.DataFrame(rows, columns=["model_a", "model_b", "verdict"])
    out.insert(0, "item", [f"g{i}" for i in range(len(out))])
    out.insert(1, "unit", out["item"])
    out.insert(2, "judge", judge_name)
    out["status"], out["raw"] = "ok", out["verdict"]
    return out[list(COLUMNS)]


def comparisons_from_bundle(
    bundle,
    *,
    raters: Sequence[str] | None = None,
    majority_of: Sequence[str] | None = None,
    majority_name: str = "human_majority",
    unit: str | None = None,
) -> pd.DataFrame:
    """Comparisons per rater of a bundle with ``responses`` (item, model, slot A/B) and pairwise ``annotations``.

    Labels ``A``/``B``/``tie`` name the slot's model.

    Parameters
    ----------
    bundle : Bundle
        A bundled dataset (e.g. :func:`medeval_kit.datasets.load_pandalm`) with ``responses`` (item, model,
        slot A/B) and pairwise ``annotations``.
    raters : sequence of str, optional
        The raters to keep as judges; default all.
    majority_of : sequence of str, optional
        Raters (e.g. the human annotators) whose plurality vote per item is one more judge (no single
        winner: a failed verdict, counted).
    majority_name : str, default "human_majority"
        That judge's name.
    unit : str, optional
        An ``items`` column to resample by instead of the item (e.g. ``question``, when one instruction is
        answered by several pairs); an item with no value there is its own unit. This selects a column of
        the bundle, not a rename.

    Returns
    -------
    DataFrame
        The comparisons table (:data:`COLUMNS`), one row per rater and item.

    Raises
    ------
    SchemaError
        The bundle lacks responses or annotations, slots A and B, or the ``unit`` column.
    """
    from medeval_kit.agreement import majority_vote

    resp, ann = bundle.responses, bundle.annotations
    if resp is None or ann is None:
        raise SchemaError(_TABLE, None, [], f"bundle {bundle.name!r} needs responses and annotations tables")
    slots = resp.pivot_table(index="item", columns="slot", values="model", aggfunc="first")
    if not {"A", "B"} <= set(slots.columns):
        raise SchemaError("responses", "slot", [], "pairwise responses need slots A and B")
    frames = []
    keep = ann if raters is None else ann[ann["rater"].isin(list(raters))]
    for r, g in keep.groupby("rater", sort=False):
        frames.append(pd.DataFrame({"item": g["item"].astype(str), "judge": str(r), "label": g["label"]}))
    if majority_of:
        votes = ann[ann["rater"].isin(list(majority_of))]
        maj = majority_vote(votes, name=majority_name)
        frames.insert(0, pd.DataFrame({"item": maj["item"].astype(str), "judge": majority_name,
                                       "label": maj["label"]}))
    d = pd.concat(frames, ignore_index=True)
    d = d[d["item"].isin(slots.index)]
    d["model_a"] = d["item"].map(slots["A"])
    d["model_b"] = d["item"].map(slots["B"])
    d["unit"] = d["item"]
    if unit:
        if bundle.items is None or unit not in bundle.items.columns:
            raise SchemaError("items", unit, [], f"no items column {unit!r} to resample by")
        by = bundle.items.assign(item=bundle.items["item"].astype(str)).set_index("item")[unit]
        val = d["item"].map(by).map(_text)
        d["unit"] = val.where(val.notna(), "item " + d["item"])  # an item without a value is its own unit
    return comparisons(d.rename(columns={"label": "verdict"}), source=bundle.name)


@shared_docs
def demo_comparisons(
    *,
    strengths: Mapping[str, float] | None = None,
    judges: Mapping[str, float] | None = None,
    n_items: int = 120,
    tie_rate: float = 0.15,
    fail_rate: float = 0.03,
    seed: int = 0,
) -> pd.DataFrame:
    """A small seeded comparisons table with planted log-strengths, for demos and tests.

    Every item is one pair of models (round robin, repeated) judged by every judge; ``judges`` maps a
    judge to the noise (s.d.) it adds to the planted strengths per item (0 = judges by the planted
    strengths alone). About ``tie_rate`` of the verdicts are ties and ``fail_rate`` fail.

    Parameters
    ----------
    strengths : mapping of str to float, optional
        Planted log-strength per model; default four models ``model_w`` .. ``model_z``.
    judges : mapping of str to float, optional
        Noise (s.d.) per judge; default ``{"physicians": 0.0, "llm_judge": 0.6}``.
    n_items : int, default 120
        Items (pairs judged).
    tie_rate : float, default 0.15
        Share of tie verdicts.
    fail_rate : float, default 0.03
        Share of failed (empty) verdicts.
    {seed}

    Returns
    -------
    DataFrame
        Columns under user-facing names, so the demo exercises the column mapping: ``case_id,
        physician_group, response_a_model, response_b_model, winner`` (the model's name, ``tie`` or empty).

    Examples
    --------
    >>> list(demo_comparisons(n_items=6).columns)
    ['case_id', 'physician_group', 'response_a_model', 'response_b_model', 'winner']
    """
    strengths = dict(strengths or {"model_w": 0.8, "model_x": 0.3, "model_y": 0.0, "model_z": -0.6})
    judges = dict(judges or {"physicians": 0.0, "llm_judge": 0.6})
    rng = np.random.default_rng(seed)
    names = list(strengths)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    rows = []
    for k in range(n_items):
        a, b = pairs[k % len(pairs)]
        if rng.random() < 0.5:
            a, b = b, a
        for j, noise in judges.items():
            d = strengths[a] - strengths[b] + rng.normal(0, noise) if noise else strengths[a] - strengths[b]
            u = rng.random()
            if u < fail_rate:
                w = ""
            elif u < fail_rate + tie_rate:
                w = "tie"
            else:
                w = a if rng.random() < 1 / (1 + np.exp(-d)) else b
            rows.append({"case_id": f"case{k:03d}", "physician_group": j, "response_a_model": a,
                         "response_b_model": b, "winner": w})
    return pd.DataFrame(rows)
