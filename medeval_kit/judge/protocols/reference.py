"""``reference``: each response graded against its reference answer, ``correct`` (score 1) or
``incorrect`` (0), no partial credit (Inspect ``model_graded_qa`` style).
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd

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


@protocol("reference", template=TEMPLATE, schema=reference_schema,
          inputs=("item", "question", "reference", "response"), scores=share_correct)
def judge_reference(
    responses: pd.DataFrame,
    *,
    judge: str = "local/smollm2-135m",
    client=None,
    repeats: int = 1,
    template: str | Prompt = TEMPLATE,
    temperature: float | None = None,
    max_tokens: int = 32,
    seed: int = 0,
    constrained: bool = True,
    cache_mode: str = "use",
    progress: bool = True,
    item: str = "item",
    question: str = "question",
    reference: str = "reference",
    response: str = "response",
    target: str | None = "target",
    criterion: str = "correctness",
) -> pd.DataFrame:
    """Grade each response against its reference answer: ``correct`` (score 1) or ``incorrect`` (0)."""
    prompt = engine.load_template(template)
    schema = reference_schema(prompt)
    units = engine.unit_ids(responses, item, target, "judge_reference")
    run = engine.start("reference", judge=judge, client=client, cache_mode=cache_mode, repeats=repeats,
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
