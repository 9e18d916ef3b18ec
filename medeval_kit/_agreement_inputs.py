"""The agreement study inputs: annotations plus who is human and who is a judge (:func:`load_study`,
:func:`user_study`, :class:`StudyInputs`).

The papers' printed numbers and the checks against them live in :mod:`medeval_kit.repro`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from medeval_kit._agreement_core import AgreementError

# --- study inputs -----------------------------------------------------------------------------


@dataclass
class StudyInputs:
    """What the agreement notebook needs for one dataset."""

    dataset: str
    annotations: pd.DataFrame
    humans: list
    judges: list
    reference: str | None = None
    abstain: list = field(default_factory=list)
    criterion: str = "overall"
    description: str = ""

    @property
    def raters(self) -> list:
        return list(self.humans) + list(self.judges)

    def for_agreement(self) -> pd.DataFrame:
        """Annotations of the study's raters with abstention labels (e.g. ``inconsistent``) set to NA."""
        a = self.annotations[self.annotations["rater"].isin(self.raters)].copy()
        a["label"] = a["label"].where(~a["label"].isin(self.abstain))
        return a.reset_index(drop=True)

    def label_counts(self) -> pd.DataFrame:
        """Labels per rater, NA and abstentions included: the denominators behind every result."""
        a = self.annotations[self.annotations["rater"].isin(self.raters)]
        t = pd.crosstab(a["rater"], a["label"].fillna("<NA>").astype(str))
        t["n_items"] = t.sum(axis=1)
        t["n_used"] = t["n_items"] - t[[c for c in t.columns if c in list(self.abstain) + ["<NA>"]]].sum(axis=1)
        return t.reindex(self.raters).reset_index()

    def summary(self) -> str:
        a = self.annotations
        return (f"{self.dataset}: {a['item'].nunique()} items, humans {self.humans}, judges {self.judges}, "
                f"reference {self.reference or 'majority of humans'}, abstain {self.abstain}, "
                f"{int(a['label'].isna().sum())} NA labels")


def load_study(dataset: str = "pandalm", *, raters=None, criterion: str | None = None, seed: int = 0) -> StudyInputs:
    """Annotations plus the human/judge roles for the agreement study.

    ``pandalm``: 3 annotators vs GPT-3.5 and PandaLM-7B (GPT-3.5's 25 unparseable outputs stay NA).
    ``medqg_table19``: 6 LLM judges vs Expert X; the position-inconsistent code (-1) is an
    explicit ``inconsistent`` label treated as an abstention. ``synthetic``: a MedQADE-shaped
    design (9 physicians, 9 LLM annotators, binary correct/incorrect, 200 items, planted kappas).
    """
    from medeval_kit.datasets import load_medqg_table19, load_pandalm

    if dataset == "pandalm":
        ann = load_pandalm().annotations
        out = StudyInputs(dataset, ann, ["annotator1", "annotator2", "annotator3"], ["gpt-3.5-turbo", "pandalm-7b"],
                          criterion="overall", description="PandaLM test set (999 pairs), general domain")
    elif dataset == "medqg_table19":
        ann = load_medqg_table19().annotations
        judges = ["gpt-4o", "gpt-4", "gpt-3.5-turbo", "claude-3-opus", "claude-3.5-sonnet", "claude-3-haiku"]
        out = StudyInputs(dataset, ann, ["expert_x"], judges, reference="expert_x", abstain=["inconsistent"],
                          criterion="preference", description="MCQG-SRefine Table 19 (40 cases)")
    elif dataset == "synthetic":
        out = StudyInputs(dataset, _synthetic_medqade(seed), [f"physician{i}" for i in range(1, 10)],
                          [f"llm{i}" for i in range(1, 10)], criterion="correctness",
                          description="synthetic MedQADE-shaped design (9 + 9 raters, 200 items)")
    elif dataset == "sparse_synthetic":
        from medeval_kit.datasets.synthetic import synthetic_panel

        ann = synthetic_panel(n_items=120, n_humans=107, n_judges=2, labels_per_item=(2, 4), kappa=0.5,
                              judge_kappa=[0.5, 0.3], seed=seed).assign(criterion="overall")
        hum = sorted(ann.loc[ann["rater_kind"] == "human", "rater"].unique())
        out = StudyInputs(dataset, ann, hum, ["llm1", "llm2"], criterion="overall",
                          description="synthetic sparse physician panel: 120 items, 107 physicians with 2-4 labels "
                                      "per item, judge llm1 as noisy as the physicians (kappa 0.5), llm2 noisier (0.3)")
    elif dataset == "grounded_synth":
        raise AgreementError(
            "grounded_synth has no human ratings: its public data holds only LLM-judge scores (1-10) of human-written "
            "and generated PubMedQA questions, so no judge-vs-human design applies; use pandalm, medqg_table19, "
            "sparse_synthetic or your own file (annotations_path)")
    else:
        raise AgreementError(f"unknown dataset {dataset!r}; use pandalm, medqg_table19, synthetic or sparse_synthetic")
    if raters:
        raters = [r.strip() for r in raters.split(",")] if isinstance(raters, str) else list(raters)
        out.humans = [r for r in out.humans if r in raters]
        out.judges = [r for r in out.judges if r in raters]
    if criterion:
        out.criterion = criterion
    out.annotations = out.annotations[out.annotations["criterion"] == out.criterion].reset_index(drop=True)
    return out


def user_study(
    path,
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    rater_kind: str = "rater_kind",
    humans=None,
    judges=None,
    missing=(),
    normalize_labels: bool = False,
) -> StudyInputs:
    """The user's own annotations file as study inputs; who is human comes from ``humans`` or ``rater_kind``."""
    from medeval_kit._agreement_io import read_checked
    from medeval_kit._panel import resolve_panel

    ann, notes = read_checked(path, item=item, rater=rater, label=label, rater_kind=rater_kind, missing=missing,
                              normalize_labels=normalize_labels)
    split = (lambda v: [x.strip() for x in v.split(",") if x.strip()] if isinstance(v, str) else v)  # noqa: E731
    hum, jud = resolve_panel(ann, split(humans) or None, split(judges) or None, min_humans=1, source=str(path))
    out = StudyInputs(str(path), ann.assign(criterion="overall"), hum, jud, criterion="overall",
                      description=f"your file {path}" + (f" ({'; '.join(notes)})" if notes else ""))
    return out


def _synthetic_medqade(seed: int = 0) -> pd.DataFrame:
    """9 physicians (pairwise kappa 0.6) and 9 LLMs of falling quality on 200 binary items.

    Each rater copies the item's true label with probability sqrt(q) (q = 0.6 for physicians,
    0.55 down to 0.05 for the LLMs); otherwise physicians guess independently, while LLMs mostly
    share one guess per item (correlated errors, so voting cannot average them away).
    """
    rng = np.random.default_rng(seed)
    n = 200
    truth = rng.random(n) < 0.55
    shared = rng.random(n) < 0.55
    frames = []
    for kind, name, q in ([("human", f"physician{i}", 0.6) for i in range(1, 10)]
                          + [("llm", f"llm{i}", k) for i, k in enumerate(np.linspace(0.55, 0.05, 9), 1)]):
        copy = rng.random(n) < math.sqrt(q)
        noise = rng.random(n) < 0.55
        if kind == "llm":
            noise = np.where(rng.random(n) < 0.8, shared, noise)
        lab = np.where(np.where(copy, truth, noise), "correct", "incorrect")
        frames.append(pd.DataFrame({"item": [f"s{j:03d}" for j in range(n)], "rater": name, "rater_kind": kind,
                                    "criterion": "correctness", "label": lab}))
    return pd.concat(frames, ignore_index=True)
