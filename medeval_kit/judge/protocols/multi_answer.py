"""``multi_answer``: the k answers of one item in ONE prompt, each labelled correct / incorrect /
abstain against the reference answer (MedQADE); shown in a seeded, recorded random order.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np
import pandas as pd

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.prompts import Prompt

from .. import engine
from ..registry import protocol
from ..summary import share_correct
from .shuffled import judge_shuffled, position_effects

__all__ = ["judge_multi_answer", "answers_schema", "TEMPLATE", "LABELS"]

TEMPLATE = "judge/multi_answer"
LABELS = ("correct", "incorrect", "abstain")
_SCORE = {"correct": 1.0, "incorrect": 0.0, "abstain": float("nan")}  # abstaining is not a quality judgement


def answers_schema(k: int, labels: Sequence[str] = LABELS) -> dict:
    """``answer_1`` .. ``answer_k``, each one of ``labels``."""
    return {"type": "object", "properties": {f"answer_{i}": {"enum": list(labels)} for i in range(1, k + 1)},
            "required": [f"answer_{i}" for i in range(1, k + 1)]}


def _render(prompt: Prompt, row: pd.Series, shown: list[str], *, question: str, reference: str) -> list[dict]:
    block = "\n\n".join(f"[Answer {i}]\n{t}" for i, t in enumerate(shown, start=1))
    return prompt.render(question=engine.text(row[question]), reference=engine.text(row[reference]), answers=block,
                         n_answers=len(shown))


def _decode(parsed: dict, pos: int) -> tuple[str, float]:
    lab = parsed[f"answer_{pos}"]
    return lab, _SCORE.get(lab, np.nan)


@shared_docs(**engine.RUN_DOCS)
@protocol("multi_answer", template=TEMPLATE, schema=answers_schema,
          inputs=(), scores=share_correct,
          order_effects=partial(position_effects, labelled=True), verdicts_by="position")
@takes_columns("item", "question", "reference", "answer", "target")
@engine.requires("item", "question", "reference", "answer", "target")
def judge_multi_answer(
    answers: pd.DataFrame,
    *,
    model: str | None = None,
    client=None,
    labels: Sequence[str] = LABELS,
    repeats: int = 1,
    shuffle: bool = True,
    template: str | Prompt = TEMPLATE,
    temperature: float | None = None,
    max_tokens: int = 120,
    seed: int = 0,
    constrained: bool = True,
    cache_mode: str = "use",
    progress: bool = True,
    criterion: str | None = None,
    columns: Columns = None,
    **old: str,
) -> pd.DataFrame:
    """Grade the k answers of each item in ONE prompt: correct / incorrect / abstain (MedQADE).

    ``answers`` has one row per (item, target): the question, its reference answer and one answer.
    The answers are shown in a seeded, recorded random order (``shuffle=False`` keeps the sorted
    target order). One output row per answer: ``verdict`` is its label, ``score`` 1 (correct), 0
    (incorrect) or NA (abstain: not a quality judgement), ``position`` the slot it was shown in.

    Parameters
    ----------
    answers : DataFrame
        One row per (item, target): ``item``, ``question``, ``reference`` (the reference answer), ``answer``,
        ``target`` (who wrote the answer).
    labels : sequence of str
        The labels allowed (correct / incorrect / abstain).
    repeats : int
        Calls per item.
    shuffle : bool
        Show the answers in a seeded, recorded random order; ``False`` keeps the sorted target order.
    template : str or Prompt
        The grading template.
    criterion : str, optional
        The value written to the ``criterion`` column; default ``"correctness"``.
    {model}
    {client}
    {temperature}
    {max_tokens}
    {seed}
    {constrained}
    {cache_mode}
    {progress}
    {columns}
    {old_keywords}

    Returns
    -------
    {judgments}

    Raises
    ------
    JudgeError
        A needed column is missing (map yours with ``columns``), the table is empty, or an option is invalid.
    """
    model = engine.resolve_model(model, old, "judge_multi_answer")
    # canonical names: columns= renamed the table
    item, question, reference, answer, target = "item", "question", "reference", "answer", "target"
    criterion = "correctness" if criterion is None else criterion
    prompt = engine.load_template(template)
    run = engine.start("multi_answer", judge=model, client=client, cache_mode=cache_mode, repeats=repeats,
                       temperature=temperature, max_tokens=max_tokens, seed=seed, constrained=constrained)
    return judge_shuffled(answers, run, prompt, progress=progress, shuffle=shuffle, item=item, text=answer,
                          target=target, criterion=criterion,
                          render=partial(_render, question=question, reference=reference),
                          schema_for=partial(answers_schema, labels=list(labels)), decode=_decode)
