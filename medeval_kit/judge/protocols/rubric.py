"""``rubric``: pointwise rating of one response on the aspects of a rubric (e.g. MCQG-SRefine's 5
components x 30 aspects, 1-5), one call per component and repeat;
:func:`~medeval_kit.judge.rubric_scores` gives component = sum / max and total = mean over components.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.prompts import Prompt, Rubric, load_rubric
from medeval_kit.results import result_frame, result_row

from .. import engine
from ..engine import Call, text
from ..registry import protocol
from ..summary import rubric_scores

__all__ = ["judge_rubric", "rubric_schema", "TEMPLATE"]

TEMPLATE = "judge/rubric"


def rubric_schema(aspects) -> dict:
    """One integer property per aspect, bounded by the aspect's scale."""
    return {
        "type": "object",
        "properties": {a.id: {"type": "integer", "minimum": a.min, "maximum": a.max} for a in aspects},
        "required": [a.id for a in aspects],
    }


def _calls(responses: pd.DataFrame, units: pd.Series, comps, prompt: Prompt, rub: Rubric, repeats: int,
           item: str, question: str, response: str, target: str | None) -> list[Call]:
    """One call per response, component and repeat."""
    has_t = bool(target and target in responses.columns)
    calls = []
    for (_, r), unit in zip(responses.iterrows(), units):
        for comp in comps:
            schema = rubric_schema(comp.aspects)
            msgs = prompt.render(question=text(r[question]), response=text(r[response]), component=comp.id,
                                 component_description=comp.description or comp.id,
                                 aspects="\n".join(f"- {a.id}: {a.description}" for a in comp.aspects),
                                 scale_min=min(a.min for a in comp.aspects), scale_max=max(a.max for a in comp.aspects))
            for k in range(repeats):
                meta = {"item": unit, "question_item": str(r[item]), "target": str(r[target]) if has_t else None,
                        "component": comp.id, "rubric": rub.name, "repeat": k}
                calls.append(Call(msgs, prompt, schema, k, meta, context=comp))
    return calls


def _decode(call: Call, parsed):
    """One row per aspect of the call's component; NA scores when the reply did not parse."""
    for a in call.context.aspects:
        yield {"criterion": a.id, "order": "single", "verdict": None,
               "score": float(parsed[a.id]) if parsed is not None else np.nan, "max_score": float(a.max)}


def _scores(judgments: pd.DataFrame, *, policy: str, confidence: float) -> pd.DataFrame:
    """Mean component and total score per judge (and target); NaN units are counted, not imputed."""
    keys = ["judge"] + (["target"] if "target" in judgments.columns else []) + ["component"]
    agg = rubric_scores(judgments).groupby(keys, sort=False)["score"].agg(["mean", "std", "count", "size"])
    rows = [result_row(r["mean"], n_items=int(r["count"]), n_failed=int(r["size"] - r["count"]),
                       note="component = sum/max; total = mean of components; NaN units not imputed",
                       **dict(zip(keys, key if isinstance(key, tuple) else (key,))), sd=r["std"])
            for key, r in agg.iterrows()]
    return result_frame(rows, keys=keys)


@shared_docs(**engine.RUN_DOCS)
@protocol("rubric", template=TEMPLATE, schema=rubric_schema, inputs=(), scores=_scores)
@engine.optional_columns("target")
@takes_columns("item", "question", "response", "target")
@engine.requires("item", "question", "response")
def judge_rubric(
    responses: pd.DataFrame,
    *,
    model: str | None = None,
    client=None,
    rubric: str | Rubric = "mcqg_srefine",
    components: Sequence[str] | None = None,
    repeats: int = 1,
    template: str | Prompt = TEMPLATE,
    temperature: float | None = None,
    max_tokens: int = 200,
    seed: int = 0,
    constrained: bool = True,
    cache_mode: str = "use",
    progress: bool = True,
    columns: Columns = None,
    **old: str,
) -> pd.DataFrame:
    """Rate each response on every aspect of a pointwise rubric; one call per component and repeat.

    Returns one row per aspect (``criterion`` = aspect id, ``component``, integer ``score``);
    a call that cannot be parsed gives ``parse_status="failed"`` and NA scores on all its aspects.
    With a ``target`` column (the model that wrote the response), ``item`` is
    ``"<item>:<target>"`` and ``question_item``/``target`` are kept. See :func:`rubric_scores`.

    Parameters
    ----------
    responses : DataFrame
        One row per response: ``item``, ``question``, ``response``; optional ``target`` (the model that wrote it).
    rubric : str or Rubric
        The pointwise rubric (components of aspects with their scales).
    components : sequence of str, optional
        Some of the rubric's components; default all.
    repeats : int
        Calls per response and component.
    template : str or Prompt
        The rating template.
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
    model = engine.resolve_model(model, old, "judge_rubric")
    # canonical names: columns= renamed the table
    item, question, response, target = "item", "question", "response", "target"
    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
    comps = [rub.component(c) for c in components] if components is not None else list(rub.components)
    prompt = engine.load_template(template)
    units = engine.unit_ids(responses, item, target, "judge_rubric")
    run = engine.start("rubric", judge=model, client=client, cache_mode=cache_mode, repeats=repeats,
                       temperature=temperature, max_tokens=max_tokens, seed=seed, constrained=constrained)
    calls = _calls(responses, units, comps, prompt, rub, run.repeats, item, question, response, target)
    out = engine.execute(run, calls, _decode, progress=progress,
                         extra_order=["component", "question_item", "target", "max_score"])
    return out if target is not None and target in responses.columns else out.drop(columns=["target"])

