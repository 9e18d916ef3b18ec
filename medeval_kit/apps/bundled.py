"""The bundled datasets the marimo apps show when nothing is uploaded, and the per-item views of the
rounds explorer (trajectory, component shares, texts, where a stopping rule stops)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ['load_annotations_for_app', 'load_judgments_for_app', 'load_rounds_for_app', 'round_trajectory', 'item_component_shares', 'round_rows', 'round_texts', 'rule_stop']

def _text(v) -> str | None:
    """A cell as stripped text; None for a missing value or a blank cell."""
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return None
    t = str(v).strip()
    return t or None


def load_annotations_for_app(dataset: str) -> tuple[pd.DataFrame, list[str], list[str]]:
    """Load a bundled agreement panel for the agreement app.

    In Table 19 the position-inconsistent code (-1) becomes a missing label, so agreement is computed on
    consistent verdicts only; the number of such labels stays visible as ``n_missing``.

    Parameters
    ----------
    dataset : {"pandalm", "medqg_table19"}
        The bundled panel.

    Returns
    -------
    annotations : DataFrame
        ``item, rater, label, criterion``.
    humans : list of str
        The human raters.
    judges : list of str
        The LLM judges.
    """
    from medeval_kit import datasets as ds

    if dataset == "pandalm":
        ann = ds.load_pandalm().annotations
    elif dataset == "medqg_table19":
        ann = ds.load_medqg_table19().annotations.copy()
        ann["label"] = ann["label"].where(ann["label"] != "inconsistent")
    else:
        raise ValueError(f"unknown dataset {dataset!r}; choose 'pandalm' or 'medqg_table19'")
    kinds = ann.drop_duplicates("rater").set_index("rater")["rater_kind"]
    return ann, sorted(kinds[kinds == "human"].index), sorted(kinds[kinds == "llm"].index)


def load_judgments_for_app(path: str = "") -> pd.DataFrame:
    """Load pairwise judgments joined with both responses' texts.

    Parameters
    ----------
    path : str, default ""
        A judgments CSV written by the judging study; "" means the default study output
        (``tables/judging/judgments.csv``), or a synthetic table with a planted bias if that is absent;
        ``"synthetic"`` asks for the synthetic table.

    Returns
    -------
    DataFrame
        Judgments with ``text_a`` and ``text_b``.
    """
    from medeval_kit.datasets import read_table
    from medeval_kit.paths import root as project_root

    p = Path(path) if path and path != "synthetic" else project_root() / "tables" / "judging" / "judgments.csv"
    if path != "synthetic" and p.exists():
        j = read_table(p)
        j["item"] = j["item"].astype(str)
        from medeval_kit.datasets import load_pandalm

        b = load_pandalm()
        texts = b.responses.pivot(index="item", columns="slot", values="text").rename(
            columns={"A": "text_a", "B": "text_b"})
        q = b.items.set_index("item")["question"].rename("question")
        return j.join(texts, on="item").join(q, on="item")
    from medeval_kit.datasets.synthetic import synthetic_pairwise

    j = synthetic_pairwise(n_items=60, judges=("judge-1", "judge-2"), criteria=("overall", "safety"), seed=0)
    j["question"] = "synthetic item " + j["item"]
    j["text_a"] = "response A, " + j["len_a"].astype(str) + " tokens"
    j["text_b"] = "response B, " + j["len_b"].astype(str) + " tokens"
    return j


def load_rounds_for_app(source: str = "all") -> pd.DataFrame:
    """Load the bundled MedQG refinement rounds, with texts and critiques, for the rounds explorer.

    Parameters
    ----------
    source : str, default "all"
        Which bundled traces (``all`` or one source).

    Returns
    -------
    DataFrame
        A ``rounds`` table with ``text`` and ``critique``.
    """
    from medeval_kit.datasets import load_medqg_rounds
    from medeval_kit.rounds import fill_best_rounds

    return fill_best_rounds(load_medqg_rounds(source))


# --------------------------------------------------------------------------- rounds views
def _component_rows(rounds: pd.DataFrame, item: str) -> pd.DataFrame:
    """The item's component rows (aspect ``total``) with ``share`` = score / max (the score when max is NA)."""
    r = rounds[(rounds["item"] == item) & (rounds["aspect"] == "total")].copy()
    mx = r["max_score"].where(r["max_score"] > 0)
    r["share"] = (r["score"] / mx).where(mx.notna(), r["score"])
    return r


def round_trajectory(rounds: pd.DataFrame, item: str) -> pd.DataFrame:
    """Follow one item through its rounds.

    Parameters
    ----------
    rounds : DataFrame
        A rounds table.
    item : str
        The item.

    Returns
    -------
    DataFrame
        One row per round: ``total`` (mean of component score / max), ``best``, ``stop``.
    """
    r = _component_rows(rounds, item)
    return r.groupby("round").agg(total=("share", "mean"), n_components=("share", "count"),
                                  best=("best", "any"), stop=("stop", "any")).reset_index()


def item_component_shares(rounds: pd.DataFrame, item: str) -> pd.DataFrame:
    """Give each component's score share per round for one item.

    Parameters
    ----------
    rounds : DataFrame
        A rounds table.
    item : str
        The item.

    Returns
    -------
    DataFrame
        One row per (component, round) with ``share`` (score / max).
    """
    return _component_rows(rounds, item)[["component", "round", "share"]]


ROUND_VIEW = ["round", "component", "aspect", "raw_score", "score", "max_score", "parse_status", "critique"]
"""Columns of the rounds app's table, those present shown in this order."""


def round_rows(rounds: pd.DataFrame, item: str, component: str = "(all)") -> pd.DataFrame:
    """Return the rows of one item in the columns of :data:`ROUND_VIEW`.

    Parameters
    ----------
    rounds : DataFrame
        A rounds table.
    item : str
        The item.
    component : str, default "(all)"
        One component, or ``"(all)"``.

    Returns
    -------
    DataFrame
        The rows.
    """
    rows = rounds[rounds["item"] == item]
    if component != "(all)":
        rows = rows[rows["component"] == component]
    return rows[[c for c in ROUND_VIEW if c in rows.columns]].reset_index(drop=True)


def round_texts(rounds: pd.DataFrame, item: str) -> dict[str, str]:
    """Return the texts of one item per round: the question component if there is one, else all.

    Parameters
    ----------
    rounds : DataFrame
        A rounds table with ``text``.
    item : str
        The item.

    Returns
    -------
    dict of str to str
        ``{"round k <component>": text}``.
    """
    if "text" not in rounds.columns:
        return {}
    r = rounds[(rounds["item"] == item) & (rounds["aspect"] == "total")]
    r = r[r["text"].map(lambda v: _text(v) is not None)]
    if (r["component"] == "question").any():
        r = r[r["component"] == "question"]
    return {f"round {int(x.round)} {x.component}": str(x.text) for x in r.itertuples()}


def rule_stop(rounds: pd.DataFrame, item: str, rule: str, threshold: float) -> tuple[int, str]:
    """Find the round at which an item's run would stop under a rule (no round budget).

    Parameters
    ----------
    rounds : DataFrame
        A rounds table.
    item : str
        The item.
    rule : str
        A stopping rule (:mod:`medeval_kit.rounds.stopping`).
    threshold : float
        The rule's threshold.

    Returns
    -------
    round : int
        The stopping round.
    reason : str
        ``rule`` (the scores met it) or ``end_of_trace`` (they never did before the last round).
    """
    from medeval_kit.rounds import apply_stopping_rule

    r = apply_stopping_rule(rounds[rounds["item"] == item], rule, threshold, max_rounds=None, truncate=True)
    return int(r.loc[r["stop"], "round"].min()), str(r["stop_reason"].iloc[0])
