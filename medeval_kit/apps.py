"""Data access for the marimo apps in notebooks/, kept here so tests can reach it."""

from __future__ import annotations

import pandas as pd

__all__ = ["load_annotations_for_app", "load_judgments_for_app", "load_rounds_for_app"]


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
    (``tables/judging/judgments.csv``), or a synthetic table with a planted bias if that is absent.
    """
    from pathlib import Path

    from medeval_kit.datasets import read_table
    from medeval_kit.runner import project_root

    p = Path(path) if path else project_root() / "tables" / "judging" / "judgments.csv"
    if p.exists():
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

    return load_medqg_rounds(source)
