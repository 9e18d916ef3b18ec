"""Study glue: the bundled panels the agreement and judge-validation notebooks run on (:func:`load_study`).

Each panel is a :class:`~medeval_kit.agreement.StudyInputs` (annotations, humans, judges, reference,
abstention labels); the user's own file goes through :func:`medeval_kit.agreement.user_study` instead.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from medeval_kit.agreement import AgreementError, StudyInputs
from medeval_kit.docstrings import shared_docs

__all__ = ["STUDY_DATASETS", "load_study"]

PANDALM_HUMANS = ["annotator1", "annotator2", "annotator3"]
PANDALM_JUDGES = ["gpt-3.5-turbo", "pandalm-7b"]
MEDQG_JUDGES = ["gpt-4o", "gpt-4", "gpt-3.5-turbo", "claude-3-opus", "claude-3.5-sonnet", "claude-3-haiku"]
NO_HUMAN_RATINGS = {
    "grounded_synth": "grounded_synth has no human ratings: its public data holds only LLM-judge scores (1-10) of "
                      "human-written and generated PubMedQA questions, so no judge-vs-human design applies; use "
                      "pandalm, medqg_table19, sparse_synthetic or your own file (annotations_path)",
}


def _pandalm(seed: int) -> StudyInputs:
    from medeval_kit.datasets import load_pandalm

    return StudyInputs("pandalm", load_pandalm().annotations, list(PANDALM_HUMANS), list(PANDALM_JUDGES),
                       criterion="overall", description="PandaLM test set (999 pairs), general domain")


def _medqg_table19(seed: int) -> StudyInputs:
    from medeval_kit.datasets import load_medqg_table19

    return StudyInputs("medqg_table19", load_medqg_table19().annotations, ["expert_x"], list(MEDQG_JUDGES),
                       reference="expert_x", abstain=["inconsistent"], criterion="preference",
                       description="MCQG-SRefine Table 19 (40 cases)")


def _synthetic(seed: int) -> StudyInputs:
    return StudyInputs("synthetic", _synthetic_medqade(seed), [f"physician{i}" for i in range(1, 10)],
                       [f"llm{i}" for i in range(1, 10)], criterion="correctness",
                       description="synthetic MedQADE-shaped design (9 + 9 raters, 200 items)")


def _sparse_synthetic(seed: int) -> StudyInputs:
    from medeval_kit.datasets.synthetic import synthetic_panel

    ann = synthetic_panel(n_items=120, n_humans=107, n_judges=2, labels_per_item=(2, 4), kappa=0.5,
                          judge_kappa=[0.5, 0.3], seed=seed).assign(criterion="overall")
    hum = sorted(ann.loc[ann["rater_kind"] == "human", "rater"].unique())
    return StudyInputs("sparse_synthetic", ann, hum, ["llm1", "llm2"], criterion="overall",
                       description="synthetic sparse physician panel: 120 items, 107 physicians with 2-4 labels "
                                   "per item, judge llm1 as noisy as the physicians (kappa 0.5), llm2 noisier (0.3)")


STUDY_DATASETS = {"pandalm": _pandalm, "medqg_table19": _medqg_table19, "synthetic": _synthetic,
                  "sparse_synthetic": _sparse_synthetic}
"""Bundled panel name -> its builder (seed -> StudyInputs)."""


@shared_docs
def load_study(dataset: str = "pandalm", *, raters=None, criterion: str | None = None, seed: int = 0) -> StudyInputs:
    """Load a bundled agreement study: annotations plus who is human and who is a judge.

    ``pandalm``: 3 annotators vs GPT-3.5 and PandaLM-7B (GPT-3.5's 25 unparseable outputs stay NA).
    ``medqg_table19``: 6 LLM judges vs Expert X; the position-inconsistent code (-1) is an explicit
    ``inconsistent`` label treated as an abstention. ``synthetic``: a MedQADE-shaped design (9 physicians,
    9 LLM annotators, binary correct/incorrect, 200 items, planted kappas). ``sparse_synthetic``: 107
    physicians with 2-4 labels per item and 2 judges.

    Parameters
    ----------
    dataset : {"pandalm", "medqg_table19", "synthetic", "sparse_synthetic"}, default "pandalm"
        The bundled study.
    raters : list of str or str, optional
        Keep only these raters (a list or a comma-separated string).
    criterion : str, optional
        Override the dataset's criterion.
    {seed}

    Returns
    -------
    StudyInputs
        The annotations, the humans, the judges and the reference.
    """
    if dataset in NO_HUMAN_RATINGS:
        raise AgreementError(NO_HUMAN_RATINGS[dataset])
    if dataset not in STUDY_DATASETS:
        raise AgreementError(f"unknown dataset {dataset!r}; use {', '.join(STUDY_DATASETS)}")
    out = STUDY_DATASETS[dataset](seed)
    if raters:
        raters = [r.strip() for r in raters.split(",")] if isinstance(raters, str) else list(raters)
        out.humans = [r for r in out.humans if r in raters]
        out.judges = [r for r in out.judges if r in raters]
    if criterion:
        out.criterion = criterion
    out.annotations = out.annotations[out.annotations["criterion"] == out.criterion].reset_index(drop=True)
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
