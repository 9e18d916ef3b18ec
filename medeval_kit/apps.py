"""Data access for the marimo apps in notebooks/, kept here so tests can reach it."""

from __future__ import annotations

import pandas as pd

__all__ = [
    "load_annotations_for_app", "load_judgments_for_app", "load_rounds_for_app",
    "round_trajectory", "item_component_shares", "flip_table",
]


def load_annotations_for_app(dataset: str) -> tuple[pd.DataFrame, list[str], list[str]]:
    """Return (annotations, human raters, LLM judges) for ``"pandalm"`` or ``"medqg_table19"``.

    In Table 19 the position-inconsistent code (-1) becomes a missing label, so agreement is
    computed on consistent verdicts only; the number of such labels stays visible as ``n_missing``.
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
    """Return pairwise judgments joined with both responses' texts.

    ``path`` is a judgments CSV written by the judging study; empty means the default study output
    (``tables/judging/judgments.csv``), or a synthetic table with a planted bias if that is absent;
    ``"synthetic"`` asks for the synthetic table.
    """
    from pathlib import Path

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
    """Return the bundled MedQG refinement rounds (with texts and critiques) for the rounds explorer."""
    from medeval_kit.datasets import load_medqg_rounds
    from medeval_kit.rounds import fill_best_rounds

    return fill_best_rounds(load_medqg_rounds(source))


def round_trajectory(rounds: pd.DataFrame, item: str) -> pd.DataFrame:
    """Return one row per round of ``item``: total (mean of component score / max), best, stop."""
    r = rounds[(rounds["item"] == item) & (rounds["aspect"] == "total")].copy()
    r["share"] = r["score"] / r["max_score"]
    out = r.groupby("round").agg(total=("share", "mean"), n_components=("share", "count"),
                                 best=("best", "any"), stop=("stop", "any")).reset_index()
    return out


def item_component_shares(rounds: pd.DataFrame, item: str) -> pd.DataFrame:
    """Return one row per (component, round) of ``item`` with its score share (score / max)."""
    r = rounds[(rounds["item"] == item) & (rounds["aspect"] == "total")].copy()
    r["share"] = r["score"] / r["max_score"]
    return r[["component", "round", "share"]]


def flip_table(judgments: pd.DataFrame, *, judge: str, criterion: str) -> pd.DataFrame:
    """Return one row per item with the (majority) verdict in each order and whether it flipped.

    Verdicts are in model terms (A/B/tie); rows with parse failures count in ``n_failed`` and
    their verdict is shown as ``"<failed>"``, so a failure is never read as a flip or a tie.
    """
    j = judgments[(judgments["judge"] == judge) & (judgments["criterion"] == criterion)].copy()
    j["shown"] = j["verdict"].astype(object).where(j["parse_status"] == "ok", "<failed>")
    agg = (j.groupby(["item", "order"])["shown"].agg(lambda s: s.mode().iloc[0] if len(s.mode()) == 1 else "mixed")
           .unstack("order"))
    fails = j.groupby("item")["parse_status"].apply(lambda s: int((s != "ok").sum())).rename("n_failed")
    extra = j.groupby("item")[["question", "text_a", "text_b"]].first() if "text_a" in j else None
    out = agg.rename(columns={"AB": "verdict_AB", "BA": "verdict_BA"}).join(fails)
    if extra is not None:
        out = out.join(extra)
    out = out.dropna(subset=["verdict_AB", "verdict_BA"]).reset_index()
    valid = ~out["verdict_AB"].isin(["<failed>", "mixed"]) & ~out["verdict_BA"].isin(["<failed>", "mixed"])
    out["flip"] = valid & (out["verdict_AB"] != out["verdict_BA"])
    return out
