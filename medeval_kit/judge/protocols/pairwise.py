"""``pairwise``: two responses, verdict A / B / tie [/ neither], in both presentation orders and any
number of repeats; one criterion per call, or all of them in one call (``one_call=True``, template
``judge/pairwise_multi``). The judge answers in presented slots; ``slot_verdict`` keeps them and
``verdict`` is un-swapped to model terms (``A`` = ``model_a``) with :func:`medeval_kit.pairwise.unswap`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from medeval_kit import agreement, bias
from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.pairwise import ORDERS, SLOT_OF, majority_over_repeats, resolve_orders, unswap, win_rate
from medeval_kit.prompts import POLARITIES, Prompt, PromptError, Rubric, load_rubric
from medeval_kit.stats import nested_sample

from .. import engine
from ..engine import Call, JudgeError, text
from ..registry import protocol
from ..summary import to_annotations

__all__ = ["judge_pairwise", "pairs_from_bundle", "sample_ids", "TEMPLATES"]

TEMPLATES = {"normal": "judge/pairwise", "reversed": "judge/pairwise_reversed", "multi": "judge/pairwise_multi"}
"""Default templates: one per criterion polarity, and ``multi`` for all criteria in one call."""

_PREF_SCORE = {"A": 1.0, "B": -1.0, "tie": 0.0, "neither": 0.0}  # margin of model A
_REVERSED_FLAG = " [REVERSED polarity: name the response that is WORSE on this; 'neither' = neither has the problem]"
HUMAN_LABELS = ("A", "B", "tie")
_UNNAMED_MODEL = {"model_a": "A", "model_b": "B"}  # model names written when the pairs table has none


def sample_ids(ids: list, n_items: int | None, seed: int) -> list:
    """A seeded subset of ``ids`` kept in order, or all of them: nested (:func:`medeval_kit.stats.nested_sample`),
    so the draw of 10 items is a subset of the draw of 40 with the same seed and reuses its cached calls."""
    return nested_sample(ids, n_items, seed)


def pairs_from_bundle(bundle, *, n_items: int | None = None, seed: int = 0) -> pd.DataFrame:
    """Return a pairwise dataset bundle (PandaLM) as a pairs table for :func:`judge_pairwise`.

    ``question`` is the instruction followed by its input (if any).

    Parameters
    ----------
    bundle : Bundle
        A bundled pairwise dataset (``items`` and two-slot ``responses``), e.g. from
        :func:`medeval_kit.datasets.load_pandalm`.
    n_items : int, optional
        Draw a seeded subset of this many items, kept in item order: the first ``n_items`` of one seeded
        permutation (:func:`sample_ids`), so smaller draws nest in larger ones. Default all.
    seed : int
        Random seed of the draw.

    Returns
    -------
    DataFrame
        ``item, question, answer_a, answer_b, model_a, model_b``.

    Raises
    ------
    JudgeError
        The dataset has no two-slot responses.
    """
    items, resp = bundle.items, bundle.responses
    if resp is None or "slot" not in resp.columns:
        raise JudgeError(f"dataset {bundle.name!r} has no two-slot responses (column 'slot' A/B); "
                         "pairwise judging needs a pairwise dataset such as pandalm")
    a = resp[resp["slot"] == "A"].set_index("item")
    b = resp[resp["slot"] == "B"].set_index("item")
    it = items.set_index("item")
    ids = sample_ids([i for i in it.index if i in a.index and i in b.index], n_items, seed)
    q = [text(it.at[i, "question"]) + (("\n\n" + text(it.at[i, "context"])) if "context" in it.columns
                                       and text(it.at[i, "context"]) else "") for i in ids]
    return pd.DataFrame({
        "item": ids, "question": q,
        "answer_a": [text(a.at[i, "text"]) for i in ids], "answer_b": [text(b.at[i, "text"]) for i in ids],
        "model_a": [str(a.at[i, "model"]) for i in ids], "model_b": [str(b.at[i, "model"]) for i in ids],
    })


# =========================================================================== schema and jobs
def pairwise_schema(prompt: Prompt, labels: Sequence[str]) -> dict:
    """The template's verdict schema with its enum restricted to ``labels``."""
    schema = copy.deepcopy(prompt.schema) if prompt.schema else None
    if not schema or "verdict" not in schema.get("properties", {}):
        raise PromptError(f"{prompt.path or prompt.name}: a pairwise template needs a schema with a "
                          "'verdict' property (enum of A/B/tie/neither)")
    allowed = schema["properties"]["verdict"].get("enum", list(labels))
    bad = [x for x in labels if x not in allowed]
    if bad:
        raise PromptError(f"{prompt.path or prompt.name}: labels {bad} are not in the template's verdict enum "
                          f"{allowed}")
    schema["properties"]["verdict"]["enum"] = list(labels)
    return schema


@dataclass(frozen=True)
class _Job:
    """One rendered prompt per pair, order and repeat: one criterion, or all of them (one_call)."""

    prompt: Prompt
    schema: dict
    criteria: list[str]
    render: dict


def _check_orders(orders: Sequence[str]) -> list[str]:
    orders = [str(o).upper() for o in orders]
    if not orders or any(o not in ORDERS for o in orders) or len(set(orders)) != len(orders):
        raise JudgeError(f"orders must be a non-empty subset of {ORDERS} without repeats; got {orders}")
    return orders


def _criteria(rubric: str | Rubric, criteria: Sequence[str] | None,
              labels: Sequence[str] | None) -> tuple[Rubric, list[str], list[str]]:
    """The rubric, the criteria judged (checked against it) and the verdict labels allowed."""
    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
    crit = list(criteria) if criteria is not None else list(rub.criteria)
    for c in crit:
        rub.aspect(c)  # raises PromptError naming the rubric file
    labels = list(labels or rub.meta.get("labels") or HUMAN_LABELS)
    if any(x not in SLOT_OF for x in labels) or not {"A", "B"} <= set(labels):
        raise JudgeError(f"labels must include 'A' and 'B' and be among {list(SLOT_OF)}; got {labels}")
    return rub, crit, labels


def _templates(one_call: bool, templates: Mapping[str, str | Prompt] | None) -> dict[str, Prompt]:
    """The templates used (per polarity, or ``multi``); a polarity mismatch is an error."""
    base = {"multi": TEMPLATES["multi"]} if one_call else {k: TEMPLATES[k] for k in POLARITIES}
    prompts = {k: engine.load_template(v) for k, v in {**base, **(templates or {})}.items()}
    for pol, p in prompts.items():
        if pol in POLARITIES and p.polarity != pol:
            raise PromptError(f"{p.path or p.name}: template polarity is {p.polarity!r} but it was given for "
                              f"{pol!r} criteria; mark it 'polarity: {pol}' or pass the right template")
    if one_call and "multi" not in prompts:
        raise JudgeError("one_call=True needs templates={'multi': ...} (default judge/pairwise_multi)")
    return prompts


def _jobs(prompts: dict[str, Prompt], rub: Rubric, crit: list[str], labels: list[str], one_call: bool) -> list[_Job]:
    if one_call:
        schema = {"type": "object", "properties": {c: {"enum": list(labels)} for c in crit}, "required": list(crit)}
        block = "\n".join(f"- {c}: {rub.aspect(c).description or c}"
                          + (_REVERSED_FLAG if rub.aspect(c).polarity == "reversed" else "") for c in crit)
        return [_Job(prompts["multi"], schema, list(crit), {"criteria": block})]
    schemas = {k: pairwise_schema(p, labels) for k, p in prompts.items()}
    return [_Job(prompts[rub.aspect(c).polarity], schemas[rub.aspect(c).polarity], [c],
                 {"criterion": c, "criterion_description": rub.aspect(c).description or c}) for c in crit]


def _calls(pairs: pd.DataFrame, jobs: list[_Job], orders: list[str], repeats: int, rubric_name: str,
           cols: Mapping[str, str | None]) -> list[Call]:
    """One call per pair, job, order and repeat (in that nesting)."""
    calls = []
    model_col = {s: cols[s] if cols[s] and cols[s] in pairs.columns else None for s in _UNNAMED_MODEL}
    for _, r in pairs.iterrows():
        texts = {"A": text(r[cols["answer_a"]]), "B": text(r[cols["answer_b"]])}
        for job in jobs:
            for o in orders:
                msgs = job.prompt.render(question=text(r[cols["question"]]), answer_a=texts[o[0]],
                                         answer_b=texts[o[1]], **job.render)
                for k in range(repeats):
                    meta = {"item": str(r[cols["item"]]), "order": o, "repeat": k, "rubric": rubric_name,
                            **{s: str(r[c]) if c else _UNNAMED_MODEL[s] for s, c in model_col.items()}}
                    calls.append(Call(msgs, job.prompt, job.schema, k, meta, context=job.criteria,
                                      metadata={"criterion": job.criteria[0] if len(job.criteria) == 1 else None,
                                                "criteria": job.criteria}))
    return calls


def _decode(call: Call, parsed, *, rub: Rubric, one_call: bool):
    """One row per criterion of the call: slot verdict, un-swapped verdict, polarity-aware margin of A."""
    for c in call.context:
        pol = -1 if rub.aspect(c).polarity == "reversed" else 1
        slot = verdict = None
        score = np.nan
        if parsed is not None:
            slot = SLOT_OF[parsed[c if one_call else "verdict"]]
            verdict = unswap(slot, call.columns["order"])
            score = _PREF_SCORE[verdict] * pol
        yield {"criterion": c, "polarity": pol, "verdict": verdict, "slot_verdict": slot, "score": score}


# =========================================================================== analysis hooks
def _scores(judgments: pd.DataFrame, *, policy: str, confidence: float) -> pd.DataFrame:
    return win_rate(resolve_orders(judgments, policy, polarity="polarity"), confidence=confidence)


def _order_effects(judgments: pd.DataFrame, *, n_boot: int, seed: int) -> pd.DataFrame:
    return bias.position_bias(judgments, n_boot=n_boot, seed=seed)


def _judge_labels(judgments: pd.DataFrame, policy: str) -> list[pd.DataFrame]:
    """The judge's labels after resolving orders, then as read in one order only (``[AB only]`` ...)."""
    parts = [to_annotations(resolve_orders(judgments, policy, polarity="polarity"))]
    maj = majority_over_repeats(judgments, polarity="polarity")
    for o in ORDERS:
        m = maj[maj["order"] == o]
        if len(m):
            parts.append(to_annotations(m.assign(judge=m["judge"] + f" [{o} only]")))
    return parts


def _vs_humans(judgments: pd.DataFrame, humans: pd.DataFrame, *, policy: str, n_boot: int,
               seed: int) -> pd.DataFrame:
    """The judge scored like a held-out annotator against the human ``annotations`` (A/B/tie)."""
    return labels_vs_humans(_judge_labels(judgments, policy), humans, policy=policy, n_boot=n_boot, seed=seed)


def labels_vs_humans(parts: list[pd.DataFrame], humans: pd.DataFrame, *, policy: str, n_boot: int, seed: int,
                     neutral_as_tie: bool = False) -> pd.DataFrame:
    """Judge labels (one annotations-shaped frame per judge; the first one's items count as judged) scored
    like held-out annotators against the human ``annotations``; ``neutral_as_tie`` reads "neither" as tie."""
    hum = humans[humans["rater_kind"] == "human"] if "rater_kind" in humans.columns else humans
    raters = sorted(hum["rater"].unique())
    judged = set(parts[0]["item"])
    hum = hum[hum["item"].isin(judged)].assign(rater_kind="human")
    labels = pd.concat(parts)
    if neutral_as_tie:
        labels["label"] = labels["label"].replace({"neither": "tie"})
    ann = pd.concat([hum[["item", "rater", "rater_kind", "criterion", "label"]], labels], ignore_index=True)
    out = agreement.judge_vs_humans(ann, raters, sorted(set(labels["rater"])), categories=list(HUMAN_LABELS),
                                    n_boot=n_boot, seed=seed).to_frame()
    out["n_judge_labels"] = out["rater"].map(labels.groupby("rater")["label"].apply(lambda s: int(s.notna().sum())))
    out["n_judged_items"] = len(judged)
    out["order_policy"] = policy
    return out


# =========================================================================== the protocol
@shared_docs(**engine.RUN_DOCS)
@protocol("pairwise", template=TEMPLATES, schema=pairwise_schema, inputs=(),
          scores=_scores, order_effects=_order_effects, humans=_vs_humans, verdicts_by="order",
          verdict_column="slot_verdict", row_unit="calls")
@engine.optional_columns("model_a", "model_b")
@takes_columns("item", "question", "answer_a", "answer_b", "model_a", "model_b")
@engine.requires("item", "question", "answer_a", "answer_b")
def judge_pairwise(
    pairs: pd.DataFrame,
    *,
    model: str | None = None,
    client=None,
    rubric: str | Rubric = "overall",
    criteria: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
    orders: Sequence[str] = ORDERS,
    repeats: int = 1,
    templates: Mapping[str, str | Prompt] | None = None,
    temperature: float | None = None,
    max_tokens: int = 64,
    seed: int = 0,
    constrained: bool = True,
    one_call: bool = False,
    cache_mode: str = "use",
    progress: bool = True,
    columns: Columns = None,
    **old: str,
) -> pd.DataFrame:
    """Judge each pair on each criterion in every order and repeat; return a ``judgments`` table.

    ``order="AB"`` shows ``answer_a`` first; ``"BA"`` shows ``answer_b`` first. The judge's slot
    choice is stored in ``slot_verdict`` and un-swapped into ``verdict`` (model terms: ``A`` means
    the ``model_a`` response). ``score`` is the margin of A: +1 if the verdict is A, -1 if B, 0 for
    tie / neither - on reversed criteria a verdict of A means A is WORSE, so it scores -1.

    Criteria and their polarity come from ``rubric`` (a file in ``prompts/rubrics``); ``criteria``
    selects some of them. ``labels`` defaults to the rubric's ``labels`` (else A/B/tie) and
    restricts the schema's enum. ``templates`` maps polarity (``normal``/``reversed``) to a
    template; a criterion whose polarity differs from its template's is an error.
    ``temperature`` defaults to 0 for one repeat and 0.7 for several (repeats at temperature 0 are
    copies). ``constrained=False`` sends no schema to the provider (free text), then parses and
    validates the reply here - that is how parse failures of a small model become visible.
    ``one_call=True`` judges all criteria in ONE call per order and repeat (Longform-MedQA's
    6-criterion prompt, template ``judge/pairwise_multi``; reversed criteria are flagged in the
    prompt); a reply that fails to parse then fails every criterion of that call.

    Parameters
    ----------
    pairs : DataFrame
        One row per pair: ``item``, ``question``, ``answer_a``, ``answer_b``; optional ``model_a`` and ``model_b``
        (the models' names, else ``A`` and ``B``).
    rubric : str or Rubric
        The criteria and their polarity (a file in ``prompts/rubrics``).
    criteria : sequence of str, optional
        Some of the rubric's criteria; default all.
    labels : sequence of str, optional
        The verdict labels allowed; default the rubric's ``labels``, else A/B/tie.
    orders : sequence of str
        Presentation orders, ``"AB"`` and/or ``"BA"``.
    repeats : int
        Calls per pair, criterion and order; each repeat has its own cache key.
    templates : mapping, optional
        Polarity (``normal``/``reversed``, or ``multi``) -> template name or :class:`~medeval_kit.prompts.Prompt`.
    one_call : bool
        Judge all criteria in one call per order and repeat (template ``judge/pairwise_multi``).
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
    model = engine.resolve_model(model, old, "judge_pairwise")
    # canonical names: columns= renamed the table
    item, question, answer_a, answer_b = "item", "question", "answer_a", "answer_b"
    model_a, model_b = "model_a", "model_b"
    if pairs[item].duplicated().any():
        raise JudgeError(f"judge_pairwise: column {item!r} has duplicate ids "
                         f"{sorted(map(str, pairs.loc[pairs[item].duplicated(), item]))[:5]}; one row per pair")
    orders = _check_orders(orders)
    rub, crit, labels = _criteria(rubric, criteria, labels)
    prompts = _templates(one_call, templates)
    run = engine.start("pairwise", judge=model, client=client, cache_mode=cache_mode, repeats=repeats,
                       temperature=temperature, max_tokens=max_tokens, seed=seed, constrained=constrained)
    cols = {"item": item, "question": question, "answer_a": answer_a, "answer_b": answer_b, "model_a": model_a,
            "model_b": model_b}
    calls = _calls(pairs, _jobs(prompts, rub, crit, labels, one_call), orders, run.repeats, rub.name, cols)
    return engine.execute(run, calls, partial(_decode, rub=rub, one_call=one_call), progress=progress,
                          extra_order=["slot_verdict", "polarity", "model_a", "model_b"])
