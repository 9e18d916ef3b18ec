"""Pairwise comparisons for ranking: one row per judged pair (item, judge, model_a, model_b, verdict).

The tidy ``comparisons`` table has the columns ``item, unit, judge, model_a, model_b, verdict, status,
raw``: ``verdict`` is ``"A"`` (model_a won), ``"B"`` or ``"tie"`` in model terms (the one pairwise
vocabulary, :data:`medeval_kit.pairwise.MODEL_LABELS`; ``neither`` counts as a tie), or missing for a
failed verdict (``status == "failed"``, counted, never a tie). ``unit`` is what the bootstrap resamples (the
item unless a cluster column is named, e.g. the instruction a pair of responses answers).

:func:`comparisons` builds it from any DataFrame with the user's column names, :func:`read_comparisons`
from a file, :func:`comparisons_from_counts` from win/tie counts (published tables), and
:func:`comparisons_from_bundle` from a bundled dataset's responses + annotations (human majority vote
and each rater). :func:`demo_comparisons` is a small seeded example with planted strengths.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from medeval_kit.bias.inputs import (
                                     MODEL_TERMS,
                                     VERDICT_TERMS,
                                     model_terms,
                                     nothing_left_to_score,
                                     verdict_terms_advice,
)
from medeval_kit.errors import DataFileError, ParameterError, SchemaError

__all__ = ["COLUMNS", "VERDICTS", "VERDICT_TERMS", "MODEL_TERMS", "comparisons", "read_comparisons", "comparisons_from_counts",
           "comparisons_from_bundle", "demo_comparisons"]

COLUMNS = ("item", "unit", "judge", "model_a", "model_b", "verdict", "status", "raw")
"""Columns of the tidy comparisons table, in order."""
VERDICTS = ("A", "B", "tie")
"""Verdicts after reading: model_a won, model_b won, tie (``neither`` is read as a tie)."""

_TABLE = "comparisons"
_ONE_JUDGE = "judge"


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


def comparisons(
    df: pd.DataFrame,
    *,
    item: str = "item",
    model_a: str = "model_a",
    model_b: str = "model_b",
    verdict: str = "verdict",
    judge: str | None = None,
    unit: str | None = None,
    failed: Collection[str] | str = (),
    source: str | None = None,
    verdict_terms: str = "model",
) -> pd.DataFrame:
    """Return the tidy comparisons table from ``df`` with the user's column names (errors name the rows).

    ``verdict`` holds the winner in the vocabulary ``verdict_terms`` (:data:`VERDICT_TERMS`): ``"model"``
    reads ``A`` (``model_a`` won), ``B`` as written, ``tie`` or ``neither`` (any case; neither is a tie);
    ``"model-any-case"`` also ``a``/``b``; ``"arena"`` the Chatbot Arena / MT-bench words ``model_a``,
    ``model_b``, ``tie``, ``tie (bothbad)``. The name of the winning model itself is read in all three.
    Empty cells and the ``failed`` tokens (a list or comma-separated) are failed verdicts: kept with
    ``status="failed"`` and counted, never ties. A table in which no verdict names a winner (e.g. failure
    tokens that took every verdict) is an error. ``judge`` names the column of judges (or human groups);
    None, or ``"judge"`` when absent, means one judge. ``unit`` names the column the bootstrap resamples
    (default: the item).
    """
    src = source
    if verdict_terms not in MODEL_TERMS:
        raise ParameterError(f"verdict_terms must be one of {list(MODEL_TERMS)} ("
                             + "; ".join(f"{t}: {VERDICT_TERMS[t]}" for t in MODEL_TERMS) + f"); got {verdict_terms!r}")
    need = [item, model_a, model_b, verdict]
    if judge and judge != _ONE_JUDGE:
        need.append(judge)
    if unit:
        need.append(unit)
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise SchemaError(_TABLE, missing[0], [], f"missing column(s) {missing}; present: {list(df.columns)}. "
                          "Name your item, model_a, model_b, verdict (and judge) columns", src)
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


def read_comparisons(
    path: str | Path,
    *,
    item: str = "item",
    model_a: str = "model_a",
    model_b: str = "model_b",
    verdict: str = "verdict",
    judge: str | None = "judge",
    unit: str | None = None,
    failed: Collection[str] | str = (),
    verdict_terms: str = "model",
    sep: str | None = None,
    encoding: str | None = None,
) -> pd.DataFrame:
    """Return the tidy comparisons table of a CSV, TSV, JSONL, JSON or Parquet file (errors name file, column, rows).

    CSV cells are read as written (a verdict ``NA`` stays text; only an empty cell is missing). A judge
    column absent under its default name ``judge`` means one judge. ``verdict_terms``: the verdicts'
    vocabulary, as in :func:`comparisons`. ``sep`` / ``encoding``: the CSV/TSV layout, as in
    :func:`medeval_kit.datasets.read_table`.
    """
    from medeval_kit.datasets import read_table

    try:
        df = read_table(path, text=True, sep=sep, encoding=encoding)
    except DataFileError:
        raise
    except Exception as exc:  # e.g. a corrupt parquet file
        raise DataFileError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    if judge == _ONE_JUDGE and judge not in df.columns:
        judge = None
    return comparisons(df, item=item, model_a=model_a, model_b=model_b, verdict=verdict, judge=judge, unit=unit,
                       failed=failed, source=str(path), verdict_terms=verdict_terms)


def comparisons_from_counts(
    counts: pd.DataFrame,
    *,
    player1: str,
    player2: str,
    wins1: str,
    wins2: str,
    ties: str | None = None,
    judge: str = "all",
) -> pd.DataFrame:
    """Expand a table of counts (one row per pair: wins of player1, wins of player2, ties) to one row per game.

    Each game is its own item and bootstrap unit. Counts must be whole numbers.
    """
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
    out.insert(2, "judge", judge)
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

    Labels ``A``/``B``/``tie`` name the slot's model. ``majority_of`` (e.g. the human annotators) adds one
    more judge, ``majority_name``: their plurality vote per item (no single winner: a failed verdict,
    counted). ``raters`` keeps those raters (default: all). ``unit`` names an ``items`` column to resample
    by instead of the item (e.g. ``question``, when one instruction is answered by several pairs); an
    item with no value there is its own unit.
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
        maj = majority_vote(votes, item="item", rater="rater", label="label", name=majority_name)
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
    return comparisons(d, item="item", model_a="model_a", model_b="model_b", verdict="label", judge="judge",
                       unit="unit", source=bundle.name)


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
    strengths alone). About ``tie_rate`` of the verdicts are ties and ``fail_rate`` fail. Columns are
    the user-facing names ``case_id, physician_group, response_a_model, response_b_model, winner``
    (winner = the model's name, ``tie`` or empty), so the demo exercises the column mapping.
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
