"""Study glue: which papers' numbers each study checks, in the order its table lists them."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from medeval_kit.errors import ParameterError
from medeval_kit.repro.papers import (
    automedeval_2025, grounded_synth_2025, longform_medqa_2024, mcqg_srefine_2025, medqade_2026, pandalm_2024,
)
from medeval_kit.repro.published import Published, to_frame

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
    """The :class:`Published` rows one study checks."""
    try:
        fn = STUDIES[study]
    except KeyError:
        raise ParameterError(f"no published numbers for study {study!r}; known: {sorted(STUDIES)}") from None
    return fn(**inputs)


def published_numbers(study: str, **inputs) -> pd.DataFrame:
    """The published-numbers table of one study: paper, source, quantity, published, ours, status, note.

    ``paper`` is the canonical paper id; ``published`` the value as printed; ``status`` one of
    ``reproduced``, ``differs``, ``not recoverable`` by the one rule. Inputs by study:
    ``agreement(part, annotations, n_boot, seed)``, ``rounds(rounds_df)``,
    ``position_bias(estimates)``, ``length_and_self_preference()``, ``generation(mmlu_results)``.
    """
    return to_frame(study_numbers(study, **inputs))


def papers_for(dataset: str) -> list[str]:
    """Papers whose numbers one agreement-study dataset checks (``synthetic`` = the printed arithmetic)."""
    return {"pandalm": [pandalm_2024.PAPER], "medqg_table19": [mcqg_srefine_2025.PAPER]}.get(
        dataset, [longform_medqa_2024.PAPER, medqade_2026.PAPER, mcqg_srefine_2025.PAPER])
