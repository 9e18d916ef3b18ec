"""Grounded-synth PubMedQA questions (13 generating models x MCQ/open-ended) and MMLU-Pro replication results."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pandas as pd

from medeval_kit.datasets._io import data_dir, read_jsonl
from medeval_kit.datasets.bundle import Bundle
from medeval_kit.errors import DataFileError, SchemaError

__all__ = ["load_grounded_synth", "load_mmlu_pro_replication", "GROUNDED_SCORES"]

GROUNDED_SCORES = (
    "answer_correctness_score",
    "explanation_validity_score",
    "question_clarity_score",
    "question_groundedness_score",
)
"""The 1-10 LLM-judge quality scores stored with every generated question."""

_FILE = re.compile(r"pubmed_qa_(?P<model>.+)_(?P<fmt>mcq|oe)\.jsonl$")


def _choices(value, path: Path, row: int):
    if value is None or (isinstance(value, float) and np.isnan(value)) or value == "None":
        return None
    if isinstance(value, (list, dict)):
        return value
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        raise SchemaError("items", "choices", [row], "choices is not a list/dict literal", str(path)) from None


def _score(value, path: Path, column: str, row: int) -> float:
    if value is None or value == "None" or value == "":
        return np.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        raise SchemaError("judgments", column, [row], f"score {value!r} is not a number", str(path)) from None


def load_grounded_synth(root: str | Path | None = None) -> Bundle:
    """Return the PubMedQA questions as items plus their 1-10 judge scores as a ``judgments`` table.

    Items carry ``generator`` (model or ``reformat_original`` for the human questions) and ``format``
    (``mcq`` or ``oe``). Judgments use protocol ``rubric``, judge ``paper_judge`` and one criterion per
    score column; a missing score has ``parse_status="missing"``.

    Parameters
    ----------
    root : str or Path, optional
        The folder of the PubMedQA files; default the bundled ``data/grounded_synth/pubmed_qa``.

    Returns
    -------
    Bundle
        ``items`` and ``judgments`` (name ``grounded_synth``).
    """
    base = Path(root) if root else data_dir() / "grounded_synth" / "pubmed_qa"
    files = sorted(base.glob("pubmed_qa_*.jsonl"))
    if not files:
        raise DataFileError(f"{base}: no pubmed_qa_*.jsonl files found")
    items, judg = [], []
    for p in files:
        m = _FILE.search(p.name)
        if not m:
            raise DataFileError(f"{p}: file name does not match pubmed_qa_<model>_<mcq|oe>.jsonl")
        model, fmt = m["model"], m["fmt"]
        for i, rec in enumerate(read_jsonl(p)):
            for col in ("context", "question", "answer"):
                if col not in rec:
                    raise SchemaError("items", col, [i], "missing field", str(p))
            item = f"{model}:{fmt}:{i}"
            items.append({
                "item": item, "dataset": "grounded_synth", "generator": model, "format": fmt,
                "context": rec["context"], "question": rec["question"], "answer": str(rec["answer"]),
                "choices": _choices(rec.get("choices"), p, i), "topic": rec.get("topic"),
                "explanation": rec.get("explanation"),
                "question_tokens": _score(rec.get("question_token_count"), p, "question_token_count", i),
            })
            for crit in GROUNDED_SCORES:
                s = _score(rec.get(crit), p, crit, i)
                judg.append({
                    "item": item, "judge": "paper_judge", "protocol": "rubric",
                    "criterion": crit.removesuffix("_score"), "order": "single", "repeat": 0,
                    "raw": None if np.isnan(s) else str(rec.get(crit)),
                    "score": s, "parse_status": "missing" if np.isnan(s) else "ok",
                })
    return Bundle(name="grounded_synth", items=pd.DataFrame(items), judgments=pd.DataFrame(judg), source=str(base))


def load_mmlu_pro_replication(path: str | Path | None = None) -> pd.DataFrame:
    """Return the MMLU-Pro replication table: eval_model, subject, novel, eval_accuracy and the judge means.

    ``novel`` is True for the generated benchmark and False for the original MMLU-Pro questions.

    Parameters
    ----------
    path : str or Path, optional
        The CSV; default the bundled ``mmlu_pro_replication_overall_results.csv``.

    Returns
    -------
    DataFrame
        One row per (eval_model, subject, novel): ``eval_accuracy`` and the judge means.
    """
    p = Path(path) if path else data_dir() / "grounded_synth" / "mmlu_pro_replication_overall_results.csv"
    if not p.exists():
        raise DataFileError(f"{p}: file not found")
    df = pd.read_csv(p)
    need = ["eval_model", "generating_model", "dataset", "novel", "eval_accuracy"]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise SchemaError("mmlu_pro_replication", missing[0], [], f"missing column(s) {missing}", str(p))
    df = df.dropna(axis=1, how="all").copy()
    df.insert(2, "subject", df["dataset"].str.removeprefix("mmlu_pro_"))
    df["novel"] = df["novel"].astype(bool)
    return df
