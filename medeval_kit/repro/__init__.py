"""Paper reproduction, above the generic library: printed numbers as data, four statuses with one rule each, ours
beside them.

* ``data/published/<paper-id>.yaml``: one file per paper with its full citation, its canonical
  id (``name-year``) and every number a study checks (id, source, quantity, value *as printed*,
  ``kind`` printed or derived, and where ours cannot be computed the reason), plus the printed
  inputs the checks compute from.
* :mod:`medeval_kit.repro.published`: the :class:`Published` type and four statuses with one rule
  each (:data:`STATUS_RULES`): ``reproduced`` (ours, computed independently from public data, rounds
  or truncates to the printed value at its printed precision), ``consistent`` (the printed value is
  reachable from the paper's own other numbers), ``differs`` (with the cause, or "cause unknown:
  tried ...") and ``not recoverable`` (ours is None/NaN, with what is missing).
* :mod:`medeval_kit.repro.papers`: one module per paper computing ours with the generic library.
* Study glue: :func:`published_numbers` (``study`` = agreement, rounds, position_bias,
  length_and_self_preference or generation) and the paper tables the notebooks save.

Nothing in the library imports this package; notebooks, the report and tests do.

>>> from medeval_kit import repro
>>> repro.decide("0.85", 0.846), repro.decide("87.5%", 0.875), repro.decide("105", 104.6)
('reproduced', 'reproduced', 'differs')
>>> repro.decide("-0.016", (-0.0165, -0.0145), basis="consistent")
'consistent'
"""

from __future__ import annotations

import pandas as pd

from medeval_kit.repro.inputs import load_study
from medeval_kit.repro.papers import automedeval_2025 as automedeval
from medeval_kit.repro.papers import grounded_synth_2025 as grounded_synth
from medeval_kit.repro.papers import longform_medqa_2024 as longform_medqa
from medeval_kit.repro.papers import mcqg_srefine_2025 as mcqg_srefine
from medeval_kit.repro.papers import medqade_2026 as medqade
from medeval_kit.repro.papers import pandalm_2024 as pandalm
from medeval_kit.repro.published import (
    BASES,
    CAUSE_UNKNOWN,
    COLUMNS,
    KINDS,
    STATUS_RULES,
    STATUSES,
    Number,
    Paper,
    Printed,
    Published,
    cause_problem,
    decide,
    load_paper,
    matches,
    paper_ids,
    parse_printed,
    rounds_to,
    to_frame,
    truncates_to,
    validate_paper_file,
)
from medeval_kit.repro.studies import (
    STUDIES,
    judging_humans,
    judging_inputs,
    pandalm_humans,
    pandalm_reference_scores,
    papers_for,
    published_numbers,
    study_numbers,
)

__all__ = [
    "STATUSES", "STATUS_RULES", "KINDS", "BASES", "CAUSE_UNKNOWN", "COLUMNS", "Printed", "parse_printed",
    "rounds_to", "truncates_to", "matches", "decide", "cause_problem", "Published",
    "Number", "Paper", "load_paper", "paper_ids", "validate_paper_file", "to_frame",
    "STUDIES", "study_numbers", "published_numbers", "papers_for", "paper_contradictions",
    "load_study",
    "judging_inputs", "judging_humans", "pandalm_humans", "pandalm_reference_scores",
    "automedeval", "grounded_synth", "longform_medqa", "mcqg_srefine", "medqade", "pandalm",
]


def paper_contradictions(papers: list[str] | None = None) -> pd.DataFrame:
    """List where papers contradict themselves or their code, from the data files.

    Parameters
    ----------
    papers : list of str, optional
        Canonical paper ids; default every paper with a data file.

    Returns
    -------
    DataFrame
        ``paper, where, says, but, consequence``, one row per contradiction.
    """
    ids = paper_ids() if papers is None else papers
    frames = [load_paper(p).contradictions_frame() for p in ids]
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=["paper", "where", "says", "but", "consequence"])
    return pd.concat(frames, ignore_index=True)
