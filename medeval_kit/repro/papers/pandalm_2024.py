"""PandaLM (Wang et al., ICLR 2024): the README's annotator kappas and majority-label counts."""

from __future__ import annotations

import itertools

import pandas as pd

from medeval_kit.repro.published import Published, load_paper

PAPER = "pandalm-2024"
HUMANS = ("annotator1", "annotator2", "annotator3")


def agreement_rows(annotations: pd.DataFrame | None = None, *, n_boot: int = 0, seed: int = 0) -> list[Published]:
    """Pairwise Cohen's kappa of the three annotators and the 3-annotator majority-label counts."""
    from medeval_kit import agreement as ag
    from medeval_kit.datasets import load_pandalm

    p = load_paper(PAPER)
    ann = load_pandalm().annotations if annotations is None else annotations
    rows = []
    for a, b in itertools.combinations(HUMANS, 2):
        r = ag.cohen_kappa(ann, raters=[a, b], n_boot=n_boot, seed=seed)
        rows.append(p.check(f"readme.kappa.{a}-{b}", r.estimate,
                            note=f"n = {r.n_items}; 95% CI [{r.ci_low:.3f}, {r.ci_high:.3f}]"))
    mv = ag.majority_vote(ann, raters=list(HUMANS))
    counts = mv["label"].value_counts()
    no_majority = int((mv["status"] != "majority").sum())
    for lab, key in (("tie", "tie"), ("A", "a"), ("B", "b")):
        rows.append(p.check(f"readme.majority.{key}", float(counts.get(lab, 0)),
                            note=f"3-annotator plurality vote; {no_majority} items without majority"))
    return rows
