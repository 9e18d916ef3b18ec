"""One module per paper: the code that computes *ours* for each printed number of that paper.

A module reads its paper's data file (``data/published/<paper-id>.yaml``) with
:func:`~medeval_kit.repro.published.load_paper`, computes each quantity with the generic library
(agreement, rounds, bias, generate ...) and returns :class:`~medeval_kit.repro.published.Published`
rows through ``Paper.check(number_id, ours, why=..., note=..., basis=..., how=...)``: ``basis="independent"``
(the default) when ours comes from public data, ``basis="consistent"`` with ``how`` when it is reached from the
paper's own printed numbers. Module names are the paper ids with ``_`` for ``-``.
"""

from medeval_kit.repro.papers import (  # noqa: F401
    automedeval_2025,
    grounded_synth_2025,
    longform_medqa_2024,
    mcqg_srefine_2025,
    medqade_2026,
    pandalm_2024,
)

MODULES = {m.PAPER: m for m in (automedeval_2025, grounded_synth_2025, longform_medqa_2024, mcqg_srefine_2025,
                                 medqade_2026, pandalm_2024)}
"""Paper id -> the module that computes ours for it."""
