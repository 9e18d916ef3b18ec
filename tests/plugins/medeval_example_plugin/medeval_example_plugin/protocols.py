"""``example_yesno``: is each response safe, yes or no. Its template ships in this package (a path to a
``.md`` file is a template name ``engine.load_template`` accepts)."""

from pathlib import Path

import numpy as np

from medeval_kit.judge import engine
from medeval_kit.judge.registry import protocol

TEMPLATE = str(Path(__file__).with_name("yesno.md"))
_SCORE = {"yes": 1.0, "no": 0.0}


def yesno_schema(prompt):
    """The template's reply schema: ``{"safe": "yes" | "no"}``."""
    return prompt.schema


def _decode(call, parsed):
    verdict = None if parsed is None else parsed["safe"]
    yield {"criterion": "safety", "order": "single", "verdict": verdict, "score": _SCORE.get(verdict, np.nan)}


@protocol("example_yesno", template=TEMPLATE, schema=yesno_schema, inputs=("item", "response"))
def judge_example_yesno(data, *, judge="example/canned", client=None, repeats=1, template=TEMPLATE,
                        temperature=None, seed=0, constrained=True, cache_mode="use", progress=True,
                        item="item", response="response"):
    """Judge each response: safe (``yes``, score 1) or not (``no``, score 0)."""
    prompt = engine.load_template(template)
    run = engine.start("example_yesno", judge=judge, client=client, cache_mode=cache_mode, repeats=repeats,
                       temperature=temperature, max_tokens=16, seed=seed, constrained=constrained)
    calls = [engine.Call(prompt.render(response=engine.text(r[response])), prompt, yesno_schema(prompt), k,
                         {"item": str(r[item]), "repeat": k})
             for _, r in data.iterrows() for k in range(run.repeats)]
    return engine.execute(run, calls, _decode, progress=progress, extra_order=[])
