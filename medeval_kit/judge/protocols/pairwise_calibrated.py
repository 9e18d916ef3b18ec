"""``pairwise_mec``: explanation-first pairwise scoring for position-bias calibration (Wang et al. 2023,
"Large Language Models are not Fair Evaluators", arXiv 2305.17926). The judge writes its evidence first,
then scores both responses 1-10 (template ``judge/pairwise_mec``); it is sampled ``repeats`` = k times
in each presentation order (temperature 1 for k > 1, as FairEval samples). The scores are un-swapped to
model terms (``score_a``, ``score_b``), the verdict names the higher score, and ``score`` is the margin of
A, so :func:`medeval_kit.pairwise.resolve.resolve_calibrated` averages scores over the k samples (MEC)
and the two orders (BPC). The ``pairwise`` protocol, its templates and its requests are unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit import bias
from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.pairwise import ORDERS, majority_over_repeats, unswap, win_rate
from medeval_kit.pairwise.resolve import CALIBRATED_POLICIES, resolve_pairwise
from medeval_kit.prompts import Prompt, PromptError, Rubric

from .. import engine
from ..engine import Call, JudgeError
from ..registry import protocol
from ..summary import to_annotations
from .pairwise import _calls, _check_orders, _criteria, _Job, labels_vs_humans

__all__ = ["judge_pairwise_mec", "mec_schema", "TEMPLATE", "SAMPLE_TEMPERATURE"]

TEMPLATE = "judge/pairwise_mec"
SAMPLE_TEMPERATURE = 1.0
"""Sampling temperature of the k > 1 evidence samples when none is given (FairEval samples at 1)."""
_FIELDS = ("evidence", "score_a", "score_b")


def mec_schema(prompt: Prompt, labels: Sequence[str] | None = None) -> dict:
    """The template's reply schema (evidence first, then the two scores); an error if it lacks a field."""
    schema = copy.deepcopy(prompt.schema) if prompt.schema else None
    props = (schema or {}).get("properties", {})
    if not schema or any(f not in props for f in _FIELDS):
        raise PromptError(f"{prompt.path or prompt.name}: an explanation-first template needs a schema with "
                          f"properties {list(_FIELDS)} (evidence first, then the scores of the responses shown "
                          "first and second)")
    return schema


def _decode(call: Call, parsed):
    """One row per call: scores of the shown slots un-swapped to model terms, their margin and verdict."""
    c = call.context[0]
    row = {"criterion": c, "polarity": 1, "verdict": None, "slot_verdict": None, "score": np.nan,
           "score_a": np.nan, "score_b": np.nan, "score_first": np.nan, "score_second": np.nan, "evidence": None}
    if parsed is not None:
        first, second = float(parsed["score_a"]), float(parsed["score_b"])
        slot = "first" if first > second else "second" if second > first else "tie"
        a, b = (first, second) if call.columns["order"] == "AB" else (second, first)
        row.update(verdict=unswap(slot, call.columns["order"]), slot_verdict=slot, score=a - b, score_a=a,
                   score_b=b, score_first=first, score_second=second, evidence=str(parsed["evidence"]))
    yield row


# =========================================================================== analysis hooks
def _scores(judgments: pd.DataFrame, *, policy: str, confidence: float) -> pd.DataFrame:
    return win_rate(resolve_pairwise(judgments, policy, polarity="polarity"), confidence=confidence)


def _order_effects(judgments: pd.DataFrame, *, n_boot: int, seed: int) -> pd.DataFrame:
    return bias.position_bias(judgments, n_boot=n_boot, seed=seed)


def _judge_labels(judgments: pd.DataFrame, policy: str) -> list[pd.DataFrame]:
    """The judge's labels by ``policy`` (a calibrated one averages scores), then each order alone (MEC)."""
    parts = [to_annotations(resolve_pairwise(judgments, policy, polarity="polarity"))]
    for o in ORDERS:
        if policy in CALIBRATED_POLICIES:
            one = resolve_pairwise(judgments, "mec", mec_order=o, polarity="polarity")
            one = one[one["missing_order"].map(lambda s, o=o: o not in s.split(","))]
        else:
            one = majority_over_repeats(judgments, polarity="polarity")
            one = one[one["order"] == o]
        if len(one):
            parts.append(to_annotations(one.assign(judge=one["judge"] + f" [{o} only]")))
    return parts


def _vs_humans(judgments: pd.DataFrame, humans: pd.DataFrame, *, policy: str, n_boot: int,
               seed: int) -> pd.DataFrame:
    """The judge scored like a held-out annotator against the human ``annotations`` (A/B/tie)."""
    return labels_vs_humans(_judge_labels(judgments, policy), humans, policy=policy, n_boot=n_boot, seed=seed,
                            neutral_as_tie=True)


# =========================================================================== the protocol
@shared_docs(**engine.RUN_DOCS)
@protocol("pairwise_mec", template=TEMPLATE, schema=mec_schema, inputs=(),
          scores=_scores, order_effects=_order_effects, humans=_vs_humans, verdicts_by="order",
          verdict_column="slot_verdict", row_unit="calls")
@engine.optional_columns("model_a", "model_b")
@takes_columns("item", "question", "answer_a", "answer_b", "model_a", "model_b")
@engine.requires("item", "question", "answer_a", "answer_b")
def judge_pairwise_mec(
    pairs: pd.DataFrame,
    *,
    model: str | None = None,
    client=None,
    rubric: str | Rubric = "overall",
    criteria: Sequence[str] | None = None,
    orders: Sequence[str] = ORDERS,
    repeats: int = 3,
    template: str | Prompt = TEMPLATE,
    temperature: float | None = None,
    max_tokens: int = 96,
    seed: int = 0,
    constrained: bool = True,
    cache_mode: str = "use",
    progress: bool = True,
    columns: Columns = None,
    **old: str,
) -> pd.DataFrame:
    """Score each pair explanation-first, k = ``repeats`` samples in every order; return a ``judgments`` table.

    The columns of :func:`~medeval_kit.judge.judge_pairwise` (``verdict`` in model terms, ``slot_verdict``
    as shown, ``score`` = margin of A) plus ``score_a`` / ``score_b`` (1-10, model terms), ``score_first`` /
    ``score_second`` (as shown) and ``evidence``. ``temperature`` defaults to 1 for k > 1 (the paper's
    sampling) and 0 for k = 1; each sample has its own seed and cache key. Only criteria of normal polarity
    (higher = better) can be scored; a reversed criterion is an error. ``max_tokens`` bounds the evidence:
    a reply cut off there fails to parse and is counted, never guessed. Resolve with
    ``pairwise.resolve.resolve_calibrated`` (``mec``, ``bpc``, ``mec_bpc``) or analyse with
    :mod:`medeval_kit.bias.calibration`.

    Parameters
    ----------
    pairs : DataFrame
        One row per pair: ``item``, ``question``, ``answer_a``, ``answer_b``; optional ``model_a``, ``model_b``.
    rubric : str or Rubric
        The criteria (normal polarity only).
    criteria : sequence of str, optional
        Some of the rubric's criteria; default all.
    orders : sequence of str
        Presentation orders, ``"AB"`` and/or ``"BA"``.
    repeats : int
        Samples k per pair, criterion and order (MEC averages them).
    template : str or Prompt
        The explanation-first template.
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
    model = engine.resolve_model(model, old, "judge_pairwise_mec")
    # canonical names: columns= renamed the table
    item, question, answer_a, answer_b = "item", "question", "answer_a", "answer_b"
    model_a, model_b = "model_a", "model_b"
    if pairs[item].duplicated().any():
        raise JudgeError(f"judge_pairwise_mec: column {item!r} has duplicate ids "
                         f"{sorted(map(str, pairs.loc[pairs[item].duplicated(), item]))[:5]}; one row per pair")
    orders = _check_orders(orders)
    rub, crit, _ = _criteria(rubric, criteria, None)
    rev = [c for c in crit if rub.aspect(c).polarity == "reversed"]
    if rev:
        raise JudgeError(f"judge_pairwise_mec scores quality (higher = better); criteria {rev} of rubric "
                         f"{rub.name!r} have reversed polarity. Judge them with protocol 'pairwise'")
    prompt = engine.load_template(template)
    schema = mec_schema(prompt)
    temp = temperature if temperature is not None else (SAMPLE_TEMPERATURE if int(repeats) > 1 else 0.0)
    run = engine.start("pairwise_mec", judge=model, client=client, cache_mode=cache_mode, repeats=repeats,
                       temperature=temp, max_tokens=max_tokens, seed=seed, constrained=constrained)
    jobs = [_Job(prompt, schema, [c], {"criterion": c, "criterion_description": rub.aspect(c).description or c})
            for c in crit]
    cols = {"item": item, "question": question, "answer_a": answer_a, "answer_b": answer_b, "model_a": model_a,
            "model_b": model_b}
    calls = _calls(pairs, jobs, orders, run.repeats, rub.name, cols)
    return engine.execute(run, calls, _decode, progress=progress,
                          extra_order=["slot_verdict", "polarity", "score_a", "score_b", "score_first",
                                       "score_second", "evidence", "model_a", "model_b"])
