"""``reference``: each response graded against its reference answer, ``correct`` (score 1) or
``incorrect`` (0), no partial credit (Inspect ``model_graded_qa`` style).
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.prompts import Prompt, PromptError

from .. import engine
from ..engine import Call, text
from ..registry import protocol
from ..summary import share_correct

__all__ = ["judge_reference", "reference_schema", "TEMPLATE"]

TEMPLATE = "judge/reference"
_SCORE = {"correct": 1.0, "incorrect": 0.0}


def reference_schema(prompt: Prompt) -> dict:
    """The template's schema, which must have a ``grade`` property."""
    schema = copy.deepcopy(prompt.schema)
    if not schema or "grade" not in schema.get("properties", {}):
        raise PromptError(f"{prompt.path or prompt.name}: a reference template needs a schema with a 'grade' property")
    return schema


def _decode(call: Call, parsed):
    v = parsed["grade"] if parsed is not None else None
    yield {"criterion": call.context, "order": "single", "verdict": v, "score": _SCORE.get(v, np.nan)}


@shared_docs(**engine.RUN_DOCS)
@protocol("reference", template=TEMPLATE, schema=reference_schema,
          inputs=(), scores=share_correct)
@engine.optional_columns("target")
@takes_columns("item", "question", "reference", "response", "target")
@engine.requires("item", "question", "reference", "response")
def judge_reference(
    responses: pd.DataFrame,
    *,
    model: str | None = None,
    client=None,
    repeats: int = 1,
    template: str | Prompt = TEMPLATE,
    temperature: float | None = None,
    max_tokens: int = 32,
    seed: int = 0,
    constrained: bool = True,
    cache_mode: str = "use",
    progress: bool = True,
    criterion: str | None = None,
    columns: Columns = None,
    **old: str,
) -> pd.DataFrame:
    """Grade each response against its reference answer: ``correct`` (score 1) or ``incorrect`` (0).

    Parameters
    ----------
    responses : DataFrame
        One row per response: ``item``, ``question``, ``reference``, ``response``; optional ``target``.
    repeats : int
        Calls per response.
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
    model = engine.resolve_model(model, old, "judge_reference")
    # canonical names: columns= renamed the table
    item, question, reference, response, target = "item", "question", "reference", "response", "target"
    criterion = "correctness" if criterion is None else criterion
    prompt = engine.load_template(template)
    schema = reference_schema(prompt)
    units = engine.unit_ids(responses, item, target, "judge_reference")
    run = engine.start("reference", judge=model, client=client, cache_mode=cache_mode, repeats=repeats,
                       temperature=temperature, max_tokens=max_tokens, seed=seed, constrained=constrained)
    has_t = bool(target and target in responses.columns)
    calls = []
    for (_, r), unit in zip(responses.iterrows(), units):
        msgs = prompt.render(question=text(r[question]), reference=text(r[reference]), response=text(r[response]))
        for k in range(run.repeats):
            meta = {"item": unit, "question_item": str(r[item]), "target": str(r[target]) if has_t else None,
                    "repeat": k}
            calls.append(Call(msgs, prompt, schema, k, meta, context=criterion))
    out = engine.execute(run, calls, _decode, progress=progress, extra_order=["question_item", "target"])
    return out if has_t else out.drop(columns=["target"])
