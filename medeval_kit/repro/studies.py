"""Study glue: which papers' numbers each study checks, in the order its table lists them; the judging
study's bundled inputs and human labels."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from medeval_kit import datasets, judge
from medeval_kit.agreement import majority_vote
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import ParameterError
from medeval_kit.judge.engine import text
from medeval_kit.repro.papers import (
    automedeval_2025,
    grounded_synth_2025,
    longform_medqa_2024,
    mcqg_srefine_2025,
    medqade_2026,
    pandalm_2024,
)
from medeval_kit.repro.published import Published, to_frame
from medeval_kit.stats import nested_sample

AGREEMENT_PARTS = ("pandalm", "medqg_table19", "printed", "all")


def agreement(*, part: str = "all", annotations: pd.DataFrame | None = None, n_boot: int = 0,
              seed: int = 0) -> list[Published]:
    """PandaLM's kappas and counts, MCQG-SRefine Table 9/19, and the printed arithmetic of three papers.

    ``part``: ``pandalm``, ``medqg_table19``, ``printed`` (no data) or ``all``; ``annotations``
    replaces the bundled table of that one dataset (not with ``all``).
    """
    if part not in AGREEMENT_PARTS and part != "synthetic":
        raise ParameterError(f"unknown part {part!r}; use one of {AGREEMENT_PARTS}")
    own = annotations if part in ("pandalm", "medqg_table19") else None
    rows: list[Published] = []
    if part in ("pandalm", "all"):
        rows += pandalm_2024.agreement_rows(own, n_boot=n_boot, seed=seed)
    if part in ("medqg_table19", "all"):
        rows += mcqg_srefine_2025.table19_rows(own)
    if part in ("printed", "synthetic", "all"):
        rows += longform_medqa_2024.printed_rows() + medqade_2026.printed_rows()
        rows += mcqg_srefine_2025.printed_rows(n_boot=n_boot, seed=seed)
    return rows


def rounds(*, rounds_df: pd.DataFrame | None = None) -> list[Published]:
    """MCQG-SRefine's Tables 4-8, stopping rule and Figures 6-7 (bundled traces), and AutoMedEval App. F."""
    return mcqg_srefine_2025.rounds_rows(rounds_df) + automedeval_2025.rows()


def position_bias(*, estimates: pd.DataFrame | None = None) -> list[Published]:
    """MCQG-SRefine's Table 9 / Sec. 4 position consistency against ``estimates``; the long-form Table 6."""
    return mcqg_srefine_2025.position_rows(estimates) + longform_medqa_2024.position_rows()


def length_and_self_preference() -> list[Published]:
    """MedQADE's Fig. 8 self/family bias (not recoverable from public data)."""
    return medqade_2026.self_preference_rows()


def generation(*, mmlu_results: pd.DataFrame | None = None) -> list[Published]:
    """The grounded paper's Spearman identities and MMLU-Pro replication (``mmlu_results``: the bundled
    replication results by default); Cochran's n; MedQADE's 80:20 sample."""
    return (grounded_synth_2025.rows(mmlu_results) + longform_medqa_2024.cochran_rows()
            + medqade_2026.sampling_rows())


STUDIES: dict[str, Callable[..., list[Published]]] = {
    "agreement": agreement,
    "rounds": rounds,
    "position_bias": position_bias,
    "length_and_self_preference": length_and_self_preference,
    "generation": generation,
}
"""Study name -> the function that returns its published numbers (keyword inputs only)."""


def study_numbers(study: str, **inputs) -> list[Published]:
    """Return the checked published numbers of one study.

    Parameters
    ----------
    study : str
        The study (``agreement``, ``rounds``, ``position_bias``, ``length_and_self_preference``,
        ``generation`` ...).
    **inputs
        What the study computes ours from (see :func:`published_numbers`).

    Returns
    -------
    list of Published
        One row per number.
    """
    try:
        fn = STUDIES[study]
    except KeyError:
        raise ParameterError(f"no published numbers for study {study!r}; known: {sorted(STUDIES)}") from None
    return fn(**inputs)


def published_numbers(study: str, **inputs) -> pd.DataFrame:
    """Return the published-numbers table of one study.

    Parameters
    ----------
    study : str
        The study.
    **inputs
        What the study computes ours from: ``agreement(part, annotations, n_boot, seed)``,
        ``rounds(rounds_df)``, ``position_bias(estimates)``, ``length_and_self_preference()``,
        ``generation(mmlu_results)``.

    Returns
    -------
    DataFrame
        ``paper, source, quantity, published, ours, status, kind, note``: ``paper`` is the canonical paper
        id; ``published`` the value as printed; ``status`` one of ``reproduced``, ``consistent``,
        ``differs``, ``not recoverable`` by its rule (:data:`~medeval_kit.repro.published.STATUS_RULES`);
        ``kind`` ``printed`` or ``derived``.
    """
    return to_frame(study_numbers(study, **inputs))


def papers_for(dataset: str) -> list[str]:
    """List the papers whose numbers one agreement-study dataset checks.

    Parameters
    ----------
    dataset : str
        A bundled agreement dataset (``synthetic`` = the printed arithmetic).

    Returns
    -------
    list of str
        Canonical paper ids.
    """
    return {"pandalm": [pandalm_2024.PAPER], "medqg_table19": [mcqg_srefine_2025.PAPER]}.get(
        dataset, [longform_medqa_2024.PAPER, medqade_2026.PAPER, mcqg_srefine_2025.PAPER])


# --------------------------------------------------------------------------- judging study: bundled inputs
def _pandalm_pairs(n_items: int | None, seed: int) -> pd.DataFrame:
    return judge.pairs_from_bundle(datasets.load_pandalm(), n_items=n_items, seed=seed)


def _pandalm_graded(pairs: pd.DataFrame) -> pd.DataFrame:
    """Response 2 with response 1 as its reference (a smoke test, not a validated use)."""
    return pd.DataFrame({"item": pairs["item"], "question": pairs["question"], "response": pairs["answer_b"],
                         "target": pairs["model_b"], "reference": pairs["answer_a"]})


def _pandalm_both(pairs: pd.DataFrame) -> pd.DataFrame:
    first = pd.DataFrame({"item": pairs["item"], "question": pairs["question"], "response": pairs["answer_a"],
                          "target": pairs["model_a"]})
    return pd.concat([first, _pandalm_graded(pairs).drop(columns="reference")], ignore_index=True)


def _medqg_items(n_items: int | None, seed: int) -> pd.DataFrame:
    it = datasets.load_medqg_questions().items.reset_index(drop=True)
    ids = nested_sample(it["item"].astype(str).tolist(), n_items, seed)  # nested: smaller draws reuse the cache
    return it.set_index("item").loc[ids].reset_index()


def _medqg_mcqs(it: pd.DataFrame) -> pd.DataFrame:
    """Each MCQ (question, options, key) rated against its source note, topic and keypoint."""
    def opts(o):
        return "\n".join(f"{k}. {v}" for k, v in o.items()) if isinstance(o, dict) else text(o)

    mcq = [f"Question: {text(r.question)}\nOptions:\n{opts(r.options)}\nCorrect answer: {text(r.answer)}"
           for r in it.itertuples()]
    src = [f"Clinical note: {text(r.context)}\nTopic: {text(r.topic)}\nKeypoint: {text(r.keypoint)}"
           for r in it.itertuples()]
    return pd.DataFrame({"item": it["item"], "question": src, "response": mcq})


def _medqg_options(it: pd.DataFrame) -> pd.DataFrame:
    """The keyed answer and the distractors of each MCQ, graded against the key."""
    rows = [{"item": r.item, "question": text(r.question), "reference": text(r.answer_text) or text(r.answer),
             "answer": text(txt), "target": f"option_{letter}"}
            for r in it.itertuples() for letter, txt in (r.options if isinstance(r.options, dict) else {}).items()]
    if not rows:
        raise ParameterError("medqg items carry no option dict to grade")
    return pd.DataFrame(rows)


JUDGING_INPUTS: dict[tuple[str, str], Callable[[int | None, int], tuple[pd.DataFrame, dict]]] = {
    ("pandalm", "pairwise"): lambda n, seed: (_pandalm_pairs(n, seed), {"rubric": "overall"}),
    ("pandalm", "multi_response"): lambda n, seed: (_pandalm_both(_pandalm_pairs(n, seed)), {}),
    ("pandalm", "reference"): lambda n, seed: (_pandalm_graded(_pandalm_pairs(n, seed)), {}),
    ("medqg", "rubric"): lambda n, seed: (_medqg_mcqs(_medqg_items(n, seed)), {"rubric": "mcqg_srefine"}),
    ("medqg", "multi_answer"): lambda n, seed: (_medqg_options(_medqg_items(n, seed)), {}),
}
"""(dataset, protocol) -> ``f(n_items, seed)`` returning the judging notebook's input table and options."""


@shared_docs
def judging_inputs(protocol: str, dataset: str, *, n_items: int | None = None,
                   seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """Return the input table and keyword arguments to judge a bundled dataset with a protocol.

    ``pandalm`` x ``pairwise`` (rubric ``overall``), ``multi_response`` (the two responses scored together)
    or ``reference`` (response 2 graded against response 1); ``medqg`` x ``rubric`` (the MCQ on
    MCQG-SRefine's 30 aspects) or ``multi_answer`` (keyed answer and distractors graded against the key).

    Parameters
    ----------
    protocol : str
        The judge protocol.
    dataset : {"pandalm", "medqg"}
        The bundled dataset.
    n_items : int, optional
        A seeded subset of question items, nested: the first ``n_items`` of one seeded permutation, so
        ``n_items=10`` asks nothing that ``n_items=40`` (same seed) has not cached.
    {seed}

    Returns
    -------
    data : DataFrame
        The protocol's input table.
    kwargs : dict
        Its keyword arguments (columns, criteria, template ...).
    """
    try:
        build = JUDGING_INPUTS[(dataset, protocol)]
    except KeyError:
        supported = [f"{d} x {p}" for d, p in JUDGING_INPUTS]
        raise ParameterError(f"dataset {dataset!r} with protocol {protocol!r} is not supported by judging_inputs; "
                             f"supported: {supported}. Build the input table yourself and call "
                             f"judge.judge_<protocol>.") from None
    return build(n_items, seed)


def pandalm_humans() -> pd.DataFrame:
    """Return PandaLM's human annotations (A/B/tie per item from its 3 annotators).

    Returns
    -------
    DataFrame
        ``item, rater, label`` (and ``criterion``).
    """
    ann = datasets.load_pandalm().annotations
    return ann[ann["rater_kind"] == "human"]


#: reference scores of (slot A, slot B) from the human majority: the preferred response scores higher
_PREFERENCE_SCORES = {"A": {"A": 2.0, "B": 1.0}, "B": {"A": 1.0, "B": 2.0}, "tie": {"A": 1.0, "B": 1.0}}


def pandalm_reference_scores() -> pd.DataFrame:
    """Return reference scores of PandaLM's two responses from the human majority.

    Returns
    -------
    DataFrame
        ``item, target, score``.
    """
    maj = majority_vote(pandalm_humans()).dropna(subset=["label"]).set_index("item")["label"]
    slots = datasets.load_pandalm().responses
    slots = slots[slots["item"].isin(maj.index)]
    return pd.DataFrame({"item": slots["item"], "target": slots["model"],
                         "score": [_PREFERENCE_SCORES[maj[i]][s] for i, s in zip(slots["item"], slots["slot"])]})


JUDGING_HUMANS: dict[tuple[str, str], Callable[[], pd.DataFrame]] = {
    ("pandalm", "pairwise"): pandalm_humans,
    ("pandalm", "multi_response"): pandalm_reference_scores,
}
"""(dataset, protocol) -> the bundled human labels ``judge.human_agreement`` compares the judge with."""


def judging_humans(protocol: str, dataset: str) -> pd.DataFrame | None:
    """Return the bundled human labels for judging a dataset with a protocol.

    Parameters
    ----------
    protocol : str
        The judge protocol.
    dataset : str
        The bundled dataset.

    Returns
    -------
    DataFrame or None
        Annotations, or ``None`` where there are none.
    """
    build = JUDGING_HUMANS.get((dataset, protocol))
    return build() if build else None
