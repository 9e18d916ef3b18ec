"""``multi_response``: the k anonymised responses of one item ("Doctor 1..k") scored on a scale in
ONE prompt (AutoMedEval), shown in a seeded, recorded order; :func:`~medeval_kit.judge.acc_tuple_triple`
scores them against reference scores.
"""

from __future__ import annotations

from functools import partial

import pandas as pd

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.prompts import Prompt

from .. import engine
from ..registry import protocol
from ..summary import acc_tuple_triple, mean_scores
from .shuffled import judge_shuffled, position_effects

__all__ = ["judge_multi_response", "responses_schema", "TEMPLATE"]

TEMPLATE = "judge/multi_response"


def responses_schema(k: int, lo: int = 1, hi: int = 5) -> dict:
    """``doctor_1`` .. ``doctor_k``, each an integer in [lo, hi]."""
    return {"type": "object",
            "properties": {f"doctor_{i}": {"type": "integer", "minimum": lo, "maximum": hi} for i in range(1, k + 1)},
            "required": [f"doctor_{i}" for i in range(1, k + 1)]}


def _render(prompt: Prompt, row: pd.Series, shown: list[str], *, question: str, lo: int, hi: int) -> list[dict]:
    block = "\n\n".join(f"[Doctor {i}]\n{t}" for i, t in enumerate(shown, start=1))
    return prompt.render(question=engine.text(row[question]), responses=block, n_responses=len(shown),
                         scale_min=lo, scale_max=hi)


def _decode(parsed: dict, pos: int) -> tuple[None, float]:
    return None, float(parsed[f"doctor_{pos}"])


def _vs_reference(judgments: pd.DataFrame, reference: pd.DataFrame, *, policy: str, n_boot: int,
                  seed: int) -> pd.DataFrame:
    """Acc-2-tuple / Acc-triple against reference scores (item, target, score) of the judged items."""
    judged = set(judgments["question_item"].astype(str))
    return acc_tuple_triple(judgments, reference[reference["item"].astype(str).isin(judged)])


@shared_docs(**engine.RUN_DOCS)
@protocol("multi_response", template=TEMPLATE, schema=responses_schema,
          inputs=(), scores=mean_scores, order_effects=position_effects,
          humans=_vs_reference, verdicts_by="position")
@takes_columns("item", "question", "response", "target")
@engine.requires("item", "question", "response", "target")
def judge_multi_response(
    responses: pd.DataFrame,
    *,
    model: str | None = None,
    client=None,
    scale: tuple[int, int] = (1, 5),
    repeats: int = 1,
    shuffle: bool = True,
    template: str | Prompt = TEMPLATE,
    temperature: float | None = None,
    max_tokens: int = 80,
    seed: int = 0,
    constrained: bool = True,
    cache_mode: str = "use",
    progress: bool = True,
    criterion: str | None = None,
    columns: Columns = None,
    **old: str,
) -> pd.DataFrame:
    """Score the k anonymised responses of each item ("Doctor 1..k") in one prompt (AutoMedEval).

    The slot order is shuffled (seeded, recorded) and un-shuffled back to ``target``. One row per
    response with its integer ``score`` on ``scale``. A reply that cannot be parsed into all k
    scores marks every response of that call ``failed`` (see :func:`acc_tuple_triple`).

    Parameters
    ----------
    responses : DataFrame
        One row per (item, target): ``item``, ``question``, ``response``, ``target`` (who wrote it).
    scale : tuple of int
        The score range ``(low, high)``.
    repeats : int
        Calls per item.
    shuffle : bool
        Show the responses in a seeded, recorded random order; ``False`` keeps the sorted target order.
    template : str or Prompt
        The scoring template.
    criterion : str, optional
        The value written to the ``criterion`` column; default ``"overall"``.
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
    model = engine.resolve_model(model, old, "judge_multi_response")
    # canonical names: columns= renamed the table
    item, question, response, target = "item", "question", "response", "target"
    criterion = "overall" if criterion is None else criterion
    lo, hi = int(scale[0]), int(scale[1])
    prompt = engine.load_template(template)
    run = engine.start("multi_response", judge=model, client=client, cache_mode=cache_mode, repeats=repeats,
                       temperature=temperature, max_tokens=max_tokens, seed=seed, constrained=constrained)
    return judge_shuffled(responses, run, prompt, progress=progress, shuffle=shuffle, item=item, text=response,
                          target=target, criterion=criterion, render=partial(_render, question=question, lo=lo, hi=hi),
                          schema_for=partial(responses_schema, lo=lo, hi=hi), decode=_decode)
