"""``multi_answer``: the k answers of one item in ONE prompt, each labelled correct / incorrect /
abstain against the reference answer (MedQADE); shown in a seeded, recorded random order.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np
import pandas as pd

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


@protocol("multi_answer", template=TEMPLATE, schema=answers_schema,
          inputs=("item", "question", "reference", "answer", "target"), scores=share_correct,
          order_effects=partial(position_effects, labelled=True), verdicts_by="position")
def judge_multi_answer(
    answers: pd.DataFrame,
    *,
    judge: str = "local/smollm2-135m",
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
    item: str = "item",
    question: str = "question",
    reference: str = "reference",
    answer: str = "answer",
    target: str = "target",
    criterion: str = "correctness",
) -> pd.DataFrame:
    """Grade the k answers of each item in ONE prompt: correct / incorrect / abstain (MedQADE).

    ``answers`` has one row per (item, target): the question, its reference answer and one answer.
    The answers are shown in a seeded, recorded random order (``shuffle=False`` keeps the sorted
    target order). One output row per answer: ``verdict`` is its label, ``score`` 1 (correct), 0
    (incorrect) or NA (abstain: not a quality judgement), ``position`` the slot it was shown in.
    """
    prompt = engine.load_template(template)
    run = engine.start("multi_answer", judge=judge, client=client, cache_mode=cache_mode, repeats=repeats,
                       temperature=temperature, max_tokens=max_tokens, seed=seed, constrained=constrained)
    return judge_shuffled(answers, run, prompt, progress=progress, shuffle=shuffle, item=item, text=answer,
                          target=target, criterion=criterion,
                          render=partial(_render, question=question, reference=reference),
                          schema_for=partial(answers_schema, labels=list(labels)), decode=_decode)
