"""Loaders that turn the bundled public datasets into medeval_kit's tidy tables, plus synthetic data.

Each ``load_*`` returns a :class:`Bundle` whose tables follow :mod:`medeval_kit.schemas`.

>>> from medeval_kit.datasets import load_pandalm
>>> b = load_pandalm()
>>> b.annotations.groupby("rater").size().to_dict()["annotator1"]
999
"""

from __future__ import annotations

from medeval_kit.datasets._io import data_dir as _data_dir
from medeval_kit.datasets._io import read_json, read_jsonl, read_table, sniff_text_file
from medeval_kit.datasets.bundle import Bundle
from medeval_kit.datasets.grounded import load_grounded_synth, load_mmlu_pro_replication
from medeval_kit.datasets.medqg import load_medqg_questions, load_medqg_table19, load_srefine_inputs
from medeval_kit.datasets.medqg_rounds import load_medqg_rounds
from medeval_kit.datasets.pandalm import load_pandalm

DATASETS = ("pandalm", "medqg", "grounded_synth")

__all__ = [
    "Bundle",
    "DATASETS",
    "load_grounded_synth",
    "load_medqg_questions",
    "load_medqg_rounds",
    "load_medqg_table19",
    "load_srefine_inputs",
    "load_mmlu_pro_replication",
    "load_pandalm",
    "read_json",
    "read_jsonl",
    "read_table",
    "sniff_text_file",
]

# Old names, kept for one release (medeval_kit.deprecation).
_OLD = {"data_dir": ("paths.data_dir", _data_dir)}


def __getattr__(name):
    from medeval_kit.deprecation import deprecated_attribute

    return deprecated_attribute(__name__, name, _OLD)
