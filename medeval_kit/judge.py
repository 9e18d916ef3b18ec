"""LLM-judge protocols. Every protocol writes the same tidy ``judgments`` table.

Protocols (``protocol`` column, see :data:`medeval_kit.schemas.PROTOCOLS`):

``pairwise``        :func:`judge_pairwise` - two responses, verdict A / B / tie [/ neither], in both
                    presentation orders and any number of repeats. The judge answers in
                    presentation slots; the slot verdict (``first``/``second``/``tie``/``neither``)
                    is kept in ``slot_verdict`` and un-swapped back to the fixed model order in
                    ``verdict`` (``A`` = ``model_a``). Criteria come from a rubric file
                    (``prompts/rubrics/overall.yaml``, ``longform.yaml``); reversed-polarity
                    criteria (harmfulness, bias: choosing = worse) use a template marked
                    ``polarity: reversed`` and carry ``polarity = -1``.
``rubric``          :func:`judge_rubric` - pointwise rating on the aspects of a rubric (e.g.
                    MCQG-SRefine's 5 components x 30 aspects, 1-5), one call per component;
                    :func:`rubric_scores` gives component = sum / max and total = mean over
                    components.
``multi_answer``    :func:`judge_multi_answer` - k answers in one prompt, each labelled
                    correct / incorrect / abstain (MedQADE). The order is shuffled and recorded.
``reference``       :func:`judge_reference` - reference-guided correct / incorrect grading.
``multi_response``  :func:`judge_multi_response` - k anonymised responses scored 1-5 in one
                    prompt (AutoMedEval); :func:`acc_tuple_triple` gives Acc-2-tuple and
                    Acc-triple, where ties must match exactly and a parse failure counts as wrong.

Columns written by every protocol: ``item, judge, protocol, criterion, order, repeat, raw, verdict,
score, parse_status`` (the schema), then ``parse_error, template, template_version, temperature,
seed, call, cached, latency_s, cost_usd``. Per protocol: ``slot_verdict, polarity, model_a,
model_b`` (pairwise); ``question_item, target`` (per-response protocols, whose ``item`` is
``"<question item>:<target>"``); ``component`` (rubric); ``position, presented_order,
shuffle_seed`` (shuffled protocols: ``order`` is the permutation of the sorted targets, e.g.
``"2,0,1"``).

Parse failures: a reply that is not valid JSON for the protocol's schema keeps its text in ``raw``,
gets ``parse_status="failed"`` and an NA verdict/score. It is counted (:func:`parse_summary`) and is
never turned into a tie. A call that produced no text (an error) has ``parse_status="missing"``.

Shuffles are seeded and recorded: each (item, repeat) uses ``numpy.random.default_rng(shuffle_seed)``
with ``shuffle_seed`` stored in the row (derived from ``seed``, the item and the repeat), so any row's
presentation can be re-created from the table alone.

Rubric aspect selection (MCQG-SRefine Table 2): :func:`aspect_differences` and
:func:`select_aspects` (greedy prefix, greedy forward and exhaustive search, maximising kappa or
agreement with a human preference) with K-fold cross-validation of the whole search.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from medeval_kit.errors import MedevalError, ParameterError, SchemaError
from medeval_kit.prompts import POLARITIES, Prompt, PromptError, Rubric, load_prompt, load_rubric
from medeval_kit.schemas import PROTOCOLS

__all__ = [
    "PROTOCOLS",
    "JUDGMENT_COLUMNS",
    "DEFAULT_TEMPLATES",
    "JudgeError",
    "judge_pairwise",
    "judge_rubric",
    "judge_multi_answer",
    "judge_reference",
    "judge_multi_response",
    "run_protocol",
    "inputs_for",
    "pairs_from_bundle",
    "check_protocol",
    "parse_summary",
    "rubric_scores",
    "acc_tuple_triple",
    "to_annotations",
    "shuffle_seed",
    "aspect_differences",
    "select_aspects",
    "AspectSelection",
    "order_effects",
    "human_agreement",
    "plot_verdicts",
    "score_summary",
]

JUDGMENT_COLUMNS = ["item", "judge", "protocol", "criterion", "order", "repeat", "raw", "verdict", "score",
                    "parse_status"]

DEFAULT_TEMPLATES = {
    "pairwise": {"normal": "judge/pairwise", "reversed": "judge/pairwise_reversed"},
    "rubric": "judge/rubric",
    "multi_answer": "judge/multi_answer",
    "reference": "judge/reference",
    "multi_response": "judge/multi_response",
    "pairwise_multi": "judge/pairwise_multi",
}

_SLOT = {"A": "first", "B": "second", "tie": "tie", "neither": "neither"}
_UNSWAP = {"AB": {"first": "A", "second": "B"}, "BA": {"first": "B", "second": "A"}}
_PREF_SCORE = {"A": 1.0, "B": -1.0, "tie": 0.0, "neither": 0.0}
_MA_SCORE = {"correct": 1.0, "incorrect": 0.0, "abstain": float("nan")}


class JudgeError(MedevalError, ValueError):
    """A judge protocol was called with unusable input (missing columns, unknown criterion ...)."""


# =========================================================================== helpers
def shuffle_seed(seed: int, item: str, repeat: int) -> int:
    """The recorded seed of one shuffle: a stable hash of (seed, item, repeat), < 2**32.

    ``numpy.random.default_rng(shuffle_seed(seed, item, repeat)).permutation(k)`` is the order shown.
    """
    h = hashlib.sha256(f"{int(seed)}|{item}|{int(repeat)}".encode()).digest()
    return int.from_bytes(h[:4], "big")


def _need(df: pd.DataFrame, cols: Mapping[str, str | None], what: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise JudgeError(f"{what}: expected a pandas DataFrame, got {type(df).__name__}")
    missing = [f"{role}={name!r}" for role, name in cols.items() if name is not None and name not in df.columns]
    if missing:
        raise JudgeError(f"{what}: missing column(s) {', '.join(missing)}; present: {list(df.columns)}. "
                         "Pass the right names as keyword arguments.")
    if len(df) == 0:
        raise JudgeError(f"{what}: the input table is empty")


def _text(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    try:
        if pd.isna(v):
            return ""
    except (TypeError, ValueError):
        pass
    return str(v)


def _client_for(judge: str, client, cache_mode: str):
    if client is not None:
        return client
    from medeval_kit.llm import get_client

    return get_client(judge, cache_mode=cache_mode)


def _judge_name(judge: str, client) -> str:
    if client is not None and isinstance(getattr(client, "model", None), str) and client.model:
        return client.model
    return judge


def _request(messages, judge, schema, *, temperature, max_tokens, repeat, seed, constrained, metadata):
    from medeval_kit.llm import Request

    return Request(messages=messages, model=judge, temperature=float(temperature), max_tokens=int(max_tokens),
                   schema=schema if constrained else None, repeat=int(repeat), seed=int(seed),
                   metadata=dict(metadata))


def _run(client, requests: list, progress: bool, desc: str) -> list:
    if not requests:
        return []
    responses = client.run(requests, progress=progress, desc=desc)
    if len(responses) != len(requests):
        raise JudgeError(f"the LLM client returned {len(responses)} responses for {len(requests)} requests")
    return list(responses)


def _extract(resp, schema: dict | None) -> tuple[str | None, Any, str, str | None]:
    """Return (raw, parsed, parse_status, parse_error) for one Response-like object.

    The provider's ``parsed`` is used when it validates against ``schema``; otherwise the raw text is
    re-parsed here with the LLM layer's rule (:func:`medeval_kit.llm.parse.parse_reply`: ok only when
    exactly one JSON value validates, or all that validate agree) and validated. Nothing else is
    guessed: a reply that does not validate, or is ambiguous, is ``failed`` with its text kept.
    """
    from medeval_kit.llm.parse import parse_reply
    from medeval_kit.llm.parse import validate as validate_json

    text = getattr(resp, "text", None)
    if text is None:
        err = getattr(resp, "error", None)
        return None, None, "missing", str(err) if err else "no reply text"
    parsed = getattr(resp, "parsed", None)
    if parsed is not None and schema is not None and validate_json(parsed, schema) is None:
        return str(text), parsed, "ok", None
    parsed, status, perr = parse_reply(str(text), schema, finish_reason=getattr(resp, "finish_reason", None))
    return str(text), parsed, status, perr


def _common(resp, raw, status, perr, prompt: Prompt, judge_name, protocol, temperature, seed,
            constrained: bool = True) -> dict:
    return {
        "judge": judge_name, "protocol": protocol, "raw": raw, "parse_status": status, "parse_error": perr,
        "template": prompt.name, "template_version": prompt.version, "temperature": float(temperature),
        "seed": int(seed), "constrained": bool(constrained), "call": getattr(resp, "key", None) or None,
        "cached": bool(getattr(resp, "cached", False)), "latency_s": float(getattr(resp, "latency_s", 0.0) or 0.0),
        "cost_usd": float(getattr(resp, "cost_usd", 0.0) or 0.0),
    }


def _finish(rows: list[dict], extra_order: Sequence[str]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=JUDGMENT_COLUMNS + list(extra_order))
    if df["call"].isna().any():  # fake clients without keys: number the calls of this run
        df["call"] = df["call"].fillna(pd.Series(df.pop("_call_no").astype(str), index=df.index))
    else:
        df = df.drop(columns="_call_no")
    df["repeat"] = df["repeat"].astype(int)
    df["score"] = pd.to_numeric(df["score"], errors="coerce").astype(float)
    for c in ("item", "judge", "protocol", "criterion", "order", "parse_status"):
        df[c] = df[c].astype(str)
    for c in ("raw", "verdict"):
        df[c] = df[c].astype(object).where(df[c].notna(), None)
    cols = JUDGMENT_COLUMNS + [c for c in extra_order if c in df.columns]
    cols += [c for c in df.columns if c not in cols]
    return df[cols].reset_index(drop=True)


def _temperature(temperature: float | None, repeats: int) -> float:
    if temperature is not None:
        return float(temperature)
    return 0.0 if int(repeats) <= 1 else 0.7


def _check_repeats(repeats: int) -> int:
    if int(repeats) < 1:
        raise JudgeError(f"repeats must be >= 1, got {repeats}")
    return int(repeats)


def _load_template(name_or_prompt: str | Prompt) -> Prompt:
    return name_or_prompt if isinstance(name_or_prompt, Prompt) else load_prompt(name_or_prompt)


# =========================================================================== pairwise
def pairs_from_bundle(bundle, *, n_items: int | None = None, seed: int = 0) -> pd.DataFrame:
    """Turn a pairwise dataset bundle (PandaLM) into a pairs table for :func:`judge_pairwise`.

    Columns: ``item, question, answer_a, answer_b, model_a, model_b``. ``question`` is the
    instruction followed by its input (if any). ``n_items`` draws a seeded random subset
    (``numpy.random.default_rng(seed)``), kept in item order.
    """
    items, resp = bundle.items, bundle.responses
    if resp is None or "slot" not in resp.columns:
        raise JudgeError(f"dataset {bundle.name!r} has no two-slot responses (column 'slot' A/B); "
                         "pairwise judging needs a pairwise dataset such as pandalm")
    a = resp[resp["slot"] == "A"].set_index("item")
    b = resp[resp["slot"] == "B"].set_index("item")
    it = items.set_index("item")
    ids = [i for i in it.index if i in a.index and i in b.index]
    if n_items is not None and n_items < len(ids):
        pick = np.sort(np.random.default_rng(seed).choice(len(ids), size=int(n_items), replace=False))
        ids = [ids[k] for k in pick]
    q = [_text(it.at[i, "question"]) + (("\n\n" + _text(it.at[i, "context"])) if "context" in it.columns
                                        and _text(it.at[i, "context"]) else "") for i in ids]
    return pd.DataFrame({
        "item": ids, "question": q,
        "answer_a": [_text(a.at[i, "text"]) for i in ids], "answer_b": [_text(b.at[i, "text"]) for i in ids],
        "model_a": [str(a.at[i, "model"]) for i in ids], "model_b": [str(b.at[i, "model"]) for i in ids],
    })


def _pairwise_schema(prompt: Prompt, labels: Sequence[str]) -> dict:
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


def judge_pairwise(
    pairs: pd.DataFrame,
    *,
    judge: str = "local/smollm2-135m",
    client=None,
    rubric: str | Rubric = "overall",
    criteria: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
    orders: Sequence[str] = ("AB", "BA"),
    repeats: int = 1,
    templates: Mapping[str, str | Prompt] | None = None,
    temperature: float | None = None,
    max_tokens: int = 64,
    seed: int = 0,
    constrained: bool = True,
    one_call: bool = False,
    cache_mode: str = "use",
    progress: bool = True,
    item: str = "item",
    question: str = "question",
    answer_a: str = "answer_a",
    answer_b: str = "answer_b",
    model_a: str | None = "model_a",
    model_b: str | None = "model_b",
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
    """
    repeats = _check_repeats(repeats)
    _need(pairs, {"item": item, "question": question, "answer_a": answer_a, "answer_b": answer_b}, "judge_pairwise")
    if pairs[item].duplicated().any():
        raise JudgeError(f"judge_pairwise: column {item!r} has duplicate ids "
                         f"{sorted(map(str, pairs.loc[pairs[item].duplicated(), item]))[:5]}; one row per pair")
    orders = [str(o).upper() for o in orders]
    bad = [o for o in orders if o not in _UNSWAP]
    if bad or not orders or len(set(orders)) != len(orders):
        raise JudgeError(f"orders must be a non-empty subset of ('AB', 'BA') without repeats; got {orders}")
    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
    crit = list(criteria) if criteria is not None else list(rub.criteria)
    for c in crit:
        rub.aspect(c)  # raises PromptError naming the rubric file
    labels = list(labels or rub.meta.get("labels") or ("A", "B", "tie"))
    unknown = [x for x in labels if x not in _SLOT]
    if unknown or not {"A", "B"} <= set(labels):
        raise JudgeError(f"labels must include 'A' and 'B' and be among {list(_SLOT)}; got {labels}")
    temp = _temperature(temperature, repeats)
    base = {} if one_call else dict(DEFAULT_TEMPLATES["pairwise"])
    tmpl = {**base, **({"multi": DEFAULT_TEMPLATES["pairwise_multi"]} if one_call else {}), **(templates or {})}
    prompts = {k: _load_template(v) for k, v in tmpl.items()}
    for pol, p in prompts.items():
        if pol in POLARITIES and p.polarity != pol:
            raise PromptError(f"{p.path or p.name}: template polarity is {p.polarity!r} but it was given for "
                              f"{pol!r} criteria; mark it 'polarity: {pol}' or pass the right template")
    if one_call and "multi" not in prompts:
        raise JudgeError("one_call=True needs templates={'multi': ...} (default judge/pairwise_multi)")
    client = _client_for(judge, client, cache_mode)
    judge_name = _judge_name(judge, client)

    # one "job" = one rendered prompt; it answers one criterion, or all of them when one_call=True
    jobs: list[tuple[Prompt, dict, list[str], dict]] = []  # (template, schema, criteria, extra render kwargs)
    if one_call:
        p = prompts["multi"]
        schema = {"type": "object", "properties": {c: {"enum": list(labels)} for c in crit}, "required": list(crit)}
        block = "\n".join(
            f"- {c}: {rub.aspect(c).description or c}"
            + (" [REVERSED polarity: name the response that is WORSE on this; 'neither' = neither has the problem]"
               if rub.aspect(c).polarity == "reversed" else "")
            for c in crit)
        jobs.append((p, schema, list(crit), {"criteria": block}))
    else:
        schemas = {k: _pairwise_schema(p, labels) for k, p in prompts.items()}
        for c in crit:
            asp = rub.aspect(c)
            jobs.append((prompts[asp.polarity], schemas[asp.polarity], [c],
                         {"criterion": c, "criterion_description": asp.description or c}))

    reqs, metas = [], []
    for _, r in pairs.iterrows():
        texts = {"A": _text(r[answer_a]), "B": _text(r[answer_b])}
        for p, schema, cs, extra in jobs:
            for o in orders:
                first, second = (texts["A"], texts["B"]) if o == "AB" else (texts["B"], texts["A"])
                msgs = p.render(question=_text(r[question]), answer_a=first, answer_b=second, **extra)
                for k in range(repeats):
                    meta = {"item": str(r[item]), "order": o, "repeat": k, "rubric": rub.name,
                            "model_a": str(r[model_a]) if model_a and model_a in pairs.columns else "A",
                            "model_b": str(r[model_b]) if model_b and model_b in pairs.columns else "B"}
                    reqs.append(_request(msgs, judge_name, schema, temperature=temp, max_tokens=max_tokens,
                                         repeat=k, seed=seed, constrained=constrained,
                                         metadata={**meta, "criterion": cs[0] if len(cs) == 1 else None,
                                                   "criteria": cs}))
                    metas.append((meta, p, schema, cs))
    resps = _run(client, reqs, progress, f"judging pairwise ({judge_name})")
    rows = []
    for n, (resp, (meta, p, schema, cs)) in enumerate(zip(resps, metas)):
        raw, parsed, status, perr = _extract(resp, schema)
        common = _common(resp, raw, status, perr, p, judge_name, "pairwise", temp, seed, constrained)
        for c in cs:
            pol = -1 if rub.aspect(c).polarity == "reversed" else 1
            slot = verdict = None
            score = np.nan
            if status == "ok":
                slot = _SLOT[parsed["verdict" if not one_call else c]]
                verdict = _UNSWAP[meta["order"]].get(slot, slot)
                score = _PREF_SCORE[verdict] * pol
            rows.append({**meta, **common, "criterion": c, "polarity": pol, "verdict": verdict,
                         "slot_verdict": slot, "score": score, "_call_no": n})
    return _finish(rows, ["slot_verdict", "polarity", "model_a", "model_b"])


# =========================================================================== rubric
def _rubric_schema(aspects) -> dict:
    return {
        "type": "object",
        "properties": {a.id: {"type": "integer", "minimum": a.min, "maximum": a.max} for a in aspects},
        "required": [a.id for a in aspects],
    }


def _unit(df: pd.DataFrame, item: str, target: str | None) -> pd.Series:
    if target and target in df.columns:
        return df[item].astype(str) + ":" + df[target].astype(str)
    return df[item].astype(str)


def judge_rubric(
    responses: pd.DataFrame,
    *,
    judge: str = "local/smollm2-135m",
    client=None,
    rubric: str | Rubric = "mcqg_srefine",
    components: Sequence[str] | None = None,
    repeats: int = 1,
    template: str | Prompt = DEFAULT_TEMPLATES["rubric"],
    temperature: float | None = None,
    max_tokens: int = 200,
    seed: int = 0,
    constrained: bool = True,
    cache_mode: str = "use",
    progress: bool = True,
    item: str = "item",
    question: str = "question",
    response: str = "response",
    target: str | None = "target",
) -> pd.DataFrame:
    """Rate each response on every aspect of a pointwise rubric; one call per component and repeat.

    Returns one row per aspect (``criterion`` = aspect id, ``component``, integer ``score``);
    a call that cannot be parsed gives ``parse_status="failed"`` and NA scores on all its aspects.
    With a ``target`` column (the model that wrote the response), ``item`` is
    ``"<item>:<target>"`` and ``question_item``/``target`` are kept. See :func:`rubric_scores`.
    """
    repeats = _check_repeats(repeats)
    _need(responses, {"item": item, "question": question, "response": response}, "judge_rubric")
    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
    comps = [rub.component(c) for c in components] if components is not None else list(rub.components)
    p = _load_template(template)
    units = _unit(responses, item, target)
    if units.duplicated().any():
        raise JudgeError(f"judge_rubric: duplicate (item, target) rows {sorted(units[units.duplicated()])[:5]}")
    temp = _temperature(temperature, repeats)
    client = _client_for(judge, client, cache_mode)
    judge_name = _judge_name(judge, client)
    reqs, metas = [], []
    for (_, r), unit in zip(responses.iterrows(), units):
        for comp in comps:
            schema = _rubric_schema(comp.aspects)
            lo = min(a.min for a in comp.aspects)
            hi = max(a.max for a in comp.aspects)
            asp_text = "\n".join(f"- {a.id}: {a.description}" for a in comp.aspects)
            msgs = p.render(question=_text(r[question]), response=_text(r[response]), component=comp.id,
                            component_description=comp.description or comp.id, aspects=asp_text,
                            scale_min=lo, scale_max=hi)
            for k in range(repeats):
                meta = {"item": unit, "question_item": str(r[item]),
                        "target": str(r[target]) if target and target in responses.columns else None,
                        "component": comp.id, "rubric": rub.name, "repeat": k}
                reqs.append(_request(msgs, judge_name, schema, temperature=temp, max_tokens=max_tokens, repeat=k,
                                     seed=seed, constrained=constrained, metadata=meta))
                metas.append((meta, comp, schema))
    resps = _run(client, reqs, progress, f"judging rubric ({judge_name})")
    rows = []
    for n, (resp, (meta, comp, schema)) in enumerate(zip(resps, metas)):
        raw, parsed, status, perr = _extract(resp, schema)
        common = _common(resp, raw, status, perr, p, judge_name, "rubric", temp, seed, constrained)
        for a in comp.aspects:
            rows.append({**meta, **common, "criterion": a.id, "order": "single", "verdict": None,
                         "score": float(parsed[a.id]) if status == "ok" else np.nan,
                         "max_score": float(a.max), "_call_no": n})
    out = _finish(rows, ["component", "question_item", "target", "max_score"])
    if target is None or target not in responses.columns:
        out = out.drop(columns=["target"])
    return out


def rubric_scores(
    judgments: pd.DataFrame,
    rubric: str | Rubric | None = None,
    *,
    item: str = "item",
    judge: str = "judge",
    repeat: str = "repeat",
    criterion: str = "criterion",
    score: str = "score",
) -> pd.DataFrame:
    """Component and total scores from rubric judgments (MCQG-SRefine).

    A component score is the sum of its aspect scores over its maximum (``max_score`` = sum of the
    aspects' maxima). The total is the unweighted mean over the components (not the pooled sum of
    raw points). A component with any unscored aspect (parse failure, missing row) is NaN with its
    count in ``n_failed``/``n_missing`` and a ``note``; the total is then NaN too - nothing is
    imputed. Returns one row per (item, judge, repeat, component) plus ``component="total"``.
    """
    check_protocol(judgments, "rubric")
    if rubric is None:
        names = sorted(set(judgments["rubric"].dropna())) if "rubric" in judgments.columns else []
        if len(names) != 1:
            raise SchemaError("judgments", "rubric", [], f"cannot tell the rubric (found {names}); pass rubric=")
        rubric = names[0]
    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
    known = set(rub.criteria)
    unknown = sorted(set(judgments[criterion].astype(str)) - known)
    if unknown:
        raise SchemaError("judgments", criterion, [int(i) for i in np.flatnonzero(~judgments[criterion].isin(known))],
                          f"aspect(s) {unknown[:5]} are not in rubric {rub.name!r} ({rub.path}); pass the rubric "
                          "the judgments were made with")
    rows = []
    keys = [item, judge, repeat]
    extra = [c for c in ("question_item", "target") if c in judgments.columns]
    for key, g in judgments.groupby(keys, sort=True):
        by = g.set_index(criterion)
        base = dict(zip(keys, key))
        for c in extra:
            base[c] = g[c].iloc[0]
        comp_scores = []
        n_failed_all = 0
        for comp in rub.components:
            ids = [a.id for a in comp.aspects]
            present = [i for i in ids if i in by.index]
            vals = pd.to_numeric(by.loc[present, score], errors="coerce") if present else pd.Series(dtype=float)
            n_missing = len(ids) - len(present)
            n_failed = int(vals.isna().sum())
            n_failed_all += n_failed + n_missing
            s = float(vals.sum()) if (n_missing == 0 and n_failed == 0) else np.nan
            note = "" if np.isfinite(s) else f"{n_failed} aspect(s) unparsed, {n_missing} absent: not imputed"
            val = s / comp.max_score if np.isfinite(s) else np.nan
            comp_scores.append(val)
            rows.append({**base, "component": comp.id, "score": val, "points": s, "max_score": float(comp.max_score),
                         "n_aspects": len(ids), "n_scored": int(vals.notna().sum()), "n_failed": n_failed,
                         "n_missing": n_missing, "note": note})
        total = float(np.mean(comp_scores)) if all(np.isfinite(comp_scores)) else np.nan
        rows.append({**base, "component": "total", "score": total, "points": np.nan,
                     "max_score": 1.0, "n_aspects": len(rub.aspects),
                     "n_scored": int(sum(r["n_scored"] for r in rows[-len(rub.components):])),
                     "n_failed": n_failed_all, "n_missing": 0,
                     "note": "" if np.isfinite(total) else "a component is NaN: total not computed"})
    return pd.DataFrame(rows)


# =========================================================================== k-slot protocols
def _groups(df: pd.DataFrame, item: str, target: str) -> list[tuple[str, pd.DataFrame]]:
    out = []
    for it, g in df.groupby(item, sort=True):
        g = g.sort_values(target, kind="stable")
        if g[target].duplicated().any():
            raise JudgeError(f"item {it!r} has duplicate targets {sorted(map(str, g.loc[g[target].duplicated(), target]))}")
        out.append((str(it), g))
    return out


def _permutation(k: int, seed: int, item: str, repeat: int, shuffle: bool) -> tuple[np.ndarray, int | None]:
    if not shuffle:
        return np.arange(k), None
    s = shuffle_seed(seed, item, repeat)
    return np.random.default_rng(s).permutation(k), s


def _kslot(
    data: pd.DataFrame, protocol: str, *, judge, client, repeats, template, temperature, max_tokens, seed,
    constrained, cache_mode, progress, shuffle, item, question, text, target, criterion, render, schema_for, decode,
) -> pd.DataFrame:
    repeats = _check_repeats(repeats)
    p = _load_template(template)
    temp = _temperature(temperature, repeats)
    client = _client_for(judge, client, cache_mode)
    judge_name = _judge_name(judge, client)
    reqs, metas = [], []
    for it, g in _groups(data, item, target):
        k = len(g)
        targets = [str(t) for t in g[target]]
        texts = [_text(t) for t in g[text]]
        schema = schema_for(k)
        for rep in range(repeats):
            perm, s = _permutation(k, seed, it, rep, shuffle)
            msgs = render(p, g.iloc[0], [texts[j] for j in perm])
            meta = {"question_item": it, "repeat": rep, "order": ",".join(map(str, perm)),
                    "presented_order": "|".join(targets[j] for j in perm), "shuffle_seed": s,
                    "_perm": perm, "_targets": targets}
            reqs.append(_request(msgs, judge_name, schema, temperature=temp, max_tokens=max_tokens, repeat=rep,
                                 seed=seed, constrained=constrained,
                                 metadata={kk: v for kk, v in meta.items() if not kk.startswith("_")}))
            metas.append((meta, schema))
    resps = _run(client, reqs, progress, f"judging {protocol} ({judge_name})")
    rows = []
    for n, (resp, (meta, schema)) in enumerate(zip(resps, metas)):
        raw, parsed, status, perr = _extract(resp, schema)
        common = _common(resp, raw, status, perr, p, judge_name, protocol, temp, seed, constrained)
        perm, targets = meta["_perm"], meta["_targets"]
        for pos, j in enumerate(perm, start=1):
            verdict, score = decode(parsed, pos) if status == "ok" else (None, np.nan)
            rows.append({**{kk: v for kk, v in meta.items() if not kk.startswith("_")}, **common,
                         "item": f"{meta['question_item']}:{targets[j]}", "target": targets[j],
                         "criterion": criterion, "position": pos, "verdict": verdict, "score": score,
                         "_call_no": n})
    out = _finish(rows, ["question_item", "target", "position", "presented_order", "shuffle_seed"])
    out["position"] = out["position"].astype(int)
    if not shuffle:
        out["shuffle_seed"] = pd.array([pd.NA] * len(out), dtype="Int64")
    else:
        out["shuffle_seed"] = out["shuffle_seed"].astype("int64")
    return out


def judge_multi_answer(
    answers: pd.DataFrame,
    *,
    judge: str = "local/smollm2-135m",
    client=None,
    labels: Sequence[str] = ("correct", "incorrect", "abstain"),
    repeats: int = 1,
    shuffle: bool = True,
    template: str | Prompt = DEFAULT_TEMPLATES["multi_answer"],
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
    _need(answers, {"item": item, "question": question, "reference": reference, "answer": answer,
                    "target": target}, "judge_multi_answer")
    labels = list(labels)

    def schema_for(k):
        return {"type": "object", "properties": {f"answer_{i}": {"enum": labels} for i in range(1, k + 1)},
                "required": [f"answer_{i}" for i in range(1, k + 1)]}

    def render(p, row, shown):
        block = "\n\n".join(f"[Answer {i}]\n{t}" for i, t in enumerate(shown, start=1))
        return p.render(question=_text(row[question]), reference=_text(row[reference]), answers=block,
                        n_answers=len(shown))

    def decode(parsed, pos):
        lab = parsed[f"answer_{pos}"]
        return lab, _MA_SCORE.get(lab, np.nan)

    return _kslot(answers, "multi_answer", judge=judge, client=client, repeats=repeats, template=template,
                  temperature=temperature, max_tokens=max_tokens, seed=seed, constrained=constrained,
                  cache_mode=cache_mode, progress=progress, shuffle=shuffle, item=item, question=question,
                  text=answer, target=target, criterion=criterion, render=render, schema_for=schema_for,
                  decode=decode)


def judge_multi_response(
    responses: pd.DataFrame,
    *,
    judge: str = "local/smollm2-135m",
    client=None,
    scale: tuple[int, int] = (1, 5),
    repeats: int = 1,
    shuffle: bool = True,
    template: str | Prompt = DEFAULT_TEMPLATES["multi_response"],
    temperature: float | None = None,
    max_tokens: int = 80,
    seed: int = 0,
    constrained: bool = True,
    cache_mode: str = "use",
    progress: bool = True,
    item: str = "item",
    question: str = "question",
    response: str = "response",
    target: str = "target",
    criterion: str = "overall",
) -> pd.DataFrame:
    """Score the k anonymised responses of each item ("Doctor 1..k") in one prompt (AutoMedEval).

    The slot order is shuffled (seeded, recorded) and un-shuffled back to ``target``. One row per
    response with its integer ``score`` on ``scale``. A reply that cannot be parsed into all k
    scores marks every response of that call ``failed`` (see :func:`acc_tuple_triple`).
    """
    _need(responses, {"item": item, "question": question, "response": response, "target": target},
          "judge_multi_response")
    lo, hi = int(scale[0]), int(scale[1])

    def schema_for(k):
        return {"type": "object",
                "properties": {f"doctor_{i}": {"type": "integer", "minimum": lo, "maximum": hi}
                               for i in range(1, k + 1)},
                "required": [f"doctor_{i}" for i in range(1, k + 1)]}

    def render(p, row, shown):
        block = "\n\n".join(f"[Doctor {i}]\n{t}" for i, t in enumerate(shown, start=1))
        return p.render(question=_text(row[question]), responses=block, n_responses=len(shown),
                        scale_min=lo, scale_max=hi)

    def decode(parsed, pos):
        return None, float(parsed[f"doctor_{pos}"])

    return _kslot(responses, "multi_response", judge=judge, client=client, repeats=repeats, template=template,
                  temperature=temperature, max_tokens=max_tokens, seed=seed, constrained=constrained,
                  cache_mode=cache_mode, progress=progress, shuffle=shuffle, item=item, question=question,
                  text=response, target=target, criterion=criterion, render=render, schema_for=schema_for,
                  decode=decode)


# =========================================================================== reference-guided
def judge_reference(
    responses: pd.DataFrame,
    *,
    judge: str = "local/smollm2-135m",
    client=None,
    repeats: int = 1,
    template: str | Prompt = DEFAULT_TEMPLATES["reference"],
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
    repeats = _check_repeats(repeats)
    _need(responses, {"item": item, "question": question, "reference": reference, "response": response},
          "judge_reference")
    p = _load_template(template)
    schema = copy.deepcopy(p.schema)
    if not schema or "grade" not in schema.get("properties", {}):
        raise PromptError(f"{p.path or p.name}: a reference template needs a schema with a 'grade' property")
    units = _unit(responses, item, target)
    if units.duplicated().any():
        raise JudgeError(f"judge_reference: duplicate (item, target) rows {sorted(units[units.duplicated()])[:5]}")
    temp = _temperature(temperature, repeats)
    client = _client_for(judge, client, cache_mode)
    judge_name = _judge_name(judge, client)
    has_t = bool(target and target in responses.columns)
    reqs, metas = [], []
    for (_, r), unit in zip(responses.iterrows(), units):
        msgs = p.render(question=_text(r[question]), reference=_text(r[reference]), response=_text(r[response]))
        for k in range(repeats):
            meta = {"item": unit, "question_item": str(r[item]), "target": str(r[target]) if has_t else None,
                    "repeat": k}
            reqs.append(_request(msgs, judge_name, schema, temperature=temp, max_tokens=max_tokens, repeat=k,
                                 seed=seed, constrained=constrained, metadata=meta))
            metas.append(meta)
    resps = _run(client, reqs, progress, f"judging reference ({judge_name})")
    rows = []
    for n, (resp, meta) in enumerate(zip(resps, metas)):
        raw, parsed, status, perr = _extract(resp, schema)
        v = parsed["grade"] if status == "ok" else None
        rows.append({**meta, **_common(resp, raw, status, perr, p, judge_name, "reference", temp, seed, constrained),
                     "criterion": criterion, "order": "single", "verdict": v,
                     "score": {"correct": 1.0, "incorrect": 0.0}.get(v, np.nan), "_call_no": n})
    out = _finish(rows, ["question_item", "target"])
    return out if has_t else out.drop(columns=["target"])


# =========================================================================== table checks
def check_protocol(judgments: pd.DataFrame, expected: str | Sequence[str] | None = None, *,
                   protocol: str = "protocol", source: str | None = None) -> str:
    """Return the single protocol of ``judgments``; raise :class:`SchemaError` if it mixes protocols.

    ``expected`` (a name or names) also checks that the protocol is one the caller can analyse.
    """
    if not isinstance(judgments, pd.DataFrame) or protocol not in judgments.columns:
        raise SchemaError("judgments", protocol, [], "no 'protocol' column; is this a judgments table?", source)
    if len(judgments) == 0:
        raise SchemaError("judgments", None, [], "the table is empty", source)
    protos = judgments[protocol].astype(str)
    found = sorted(protos.unique())
    if len(found) > 1:
        top = protos.value_counts().index[0]
        rows = [int(i) for i in np.flatnonzero(protos.to_numpy() != top)]
        raise SchemaError("judgments", protocol, rows,
                          f"the table mixes protocols {found}; analyse one at a time, e.g. "
                          f"df[df.{protocol} == {top!r}]", source)
    exp = [expected] if isinstance(expected, str) else list(expected or [])
    if exp and found[0] not in exp:
        raise SchemaError("judgments", protocol, list(range(min(len(judgments), 10))),
                          f"protocol is {found[0]!r}; this analysis needs {exp}", source)
    return found[0]


def parse_summary(judgments: pd.DataFrame, *, by: Sequence[str] | None = None) -> pd.DataFrame:
    """Calls, parse failures and missing replies per group (``by``), never hidden.

    Counts distinct calls (``call`` column; a k-slot or rubric call writes several rows). ``by``
    defaults to judge, protocol and criterion - or component for rubric judgments, where one call
    covers all aspects of a component. Columns: ``n_calls, n_ok, n_failed, n_missing,
    failure_rate`` (failed / calls with a reply; NaN if none).
    """
    d = judgments.copy()
    if by is None:
        by = ("judge", "protocol", "component" if "component" in d.columns else "criterion")
    by = [c for c in by if c in d.columns]
    if "call" not in d.columns:
        d["call"] = np.arange(len(d)).astype(str)
    calls = d.drop_duplicates(by + ["call"]) if by else d.drop_duplicates(["call"])
    g = calls.groupby(by, sort=True) if by else calls.groupby(lambda _: "all")
    out = g["parse_status"].agg(
        n_calls="size",
        n_ok=lambda s: int((s == "ok").sum()),
        n_failed=lambda s: int((s == "failed").sum()),
        n_missing=lambda s: int((s == "missing").sum()),
    ).reset_index()
    replied = out["n_ok"] + out["n_failed"]
    out["failure_rate"] = np.where(replied > 0, out["n_failed"] / replied.where(replied > 0, 1), np.nan)
    return out


def to_annotations(df: pd.DataFrame, *, item: str = "item", judge: str = "judge", criterion: str = "criterion",
                   verdict: str = "verdict", rater_kind: str = "llm") -> pd.DataFrame:
    """An ``annotations`` table (item, rater, rater_kind, criterion, label) from judge verdicts.

    Use it on one verdict per (item, judge, criterion), e.g. the output of
    :func:`medeval_kit.pairwise.resolve_orders`; NA verdicts (dropped, failed) stay NA labels.
    """
    dup = df.duplicated([item, judge, criterion], keep=False)
    if dup.any():
        raise SchemaError("judgments", f"{item},{judge},{criterion}", [int(i) for i in np.flatnonzero(dup)],
                          "one verdict per item, judge and criterion is needed; resolve orders and repeats "
                          "first (medeval_kit.pairwise.resolve_orders)")
    return pd.DataFrame({"item": df[item].astype(str).to_numpy(), "rater": df[judge].astype(str).to_numpy(),
                         "rater_kind": rater_kind, "criterion": df[criterion].astype(str).to_numpy(),
                         "label": df[verdict].astype(object).where(df[verdict].notna(), None).to_numpy()})


# =========================================================================== Acc-2-tuple / Acc-triple
def acc_tuple_triple(
    judgments: pd.DataFrame,
    reference: pd.DataFrame,
    *,
    item: str = "question_item",
    target: str = "target",
    score: str = "score",
    ref_item: str = "item",
    ref_target: str = "target",
    ref_score: str = "score",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """AutoMedEval's Acc-2-tuple and Acc-triple of multi-response scores against reference scores.

    For every (judge, repeat, item) the judge's scores of the item's responses are compared with the
    reference scores. Acc-2-tuple: each pair of responses counts as correct only if the sign of the
    score difference matches exactly - a reference tie must be a judge tie. Acc-triple: the item is
    correct only if every pair matches (the same weak order). A parse failure (any of the item's
    responses without a score, or ``parse_status != "ok"``) counts as WRONG for all its pairs and
    its triple; it is counted in ``n_failed``. Items whose reference is incomplete are skipped
    (``n_skipped``). Returns rows ``metric`` in (``acc_2tuple``, ``acc_triple``) per judge with
    ``estimate, ci_low, ci_high`` (exact binomial; pairs within an item are not independent, see
    ``note``), ``n`` (pairs or items), ``n_items``, ``n_failed``, ``n_skipped``.
    """
    from medeval_kit.stats import proportion_ci

    check_protocol(judgments, "multi_response")
    for c in (item, target, score, "judge", "repeat"):
        if c not in judgments.columns:
            raise SchemaError("judgments", c, [], "missing column; acc_tuple_triple needs multi_response judgments")
    for c in (ref_item, ref_target, ref_score):
        if c not in reference.columns:
            raise SchemaError("reference", c, [], f"missing column; present: {list(reference.columns)}")
    ref = {}
    skipped = set()
    for it, g in reference.groupby(ref_item, sort=True):
        vals = pd.to_numeric(g[ref_score], errors="coerce")
        if vals.isna().any() or len(g) < 2 or g[ref_target].duplicated().any():
            skipped.add(str(it))
            continue
        ref[str(it)] = dict(zip(g[ref_target].astype(str), vals.astype(float)))
    rows = []
    d = judgments.copy()
    d[item] = d[item].astype(str)
    d[target] = d[target].astype(str)
    ok = d["parse_status"].eq("ok") if "parse_status" in d.columns else pd.Series(True, index=d.index)
    d["_s"] = pd.to_numeric(d[score], errors="coerce").where(ok)
    for j, gj in d.groupby("judge", sort=True):
        pairs_ok = pairs_n = trip_ok = trip_n = n_failed = 0
        units = 0
        for (it, _rep), g in gj.groupby([item, "repeat"], sort=True):
            if it not in ref:
                continue
            units += 1
            r = ref[it]
            js = dict(zip(g[target], g["_s"]))
            ts = sorted(r)
            failed = any(t not in js or not np.isfinite(js[t]) for t in ts)
            n_failed += failed
            all_ok = not failed
            for a, b in itertools.combinations(ts, 2):
                pairs_n += 1
                good = (not failed) and np.sign(js[a] - js[b]) == np.sign(r[a] - r[b])
                pairs_ok += bool(good)
                all_ok &= bool(good)
            trip_n += 1
            trip_ok += bool(all_ok)
        for metric, k, n, unit in (("acc_2tuple", pairs_ok, pairs_n, "pairs"), ("acc_triple", trip_ok, trip_n, "items")):
            lo, hi = proportion_ci(k, n, confidence=confidence)
            rows.append({"judge": j, "metric": metric, "estimate": k / n if n else np.nan, "ci_low": lo,
                         "ci_high": hi, "n": n, "unit": unit, "n_items": units, "n_failed": int(n_failed),
                         "n_skipped": len(skipped),
                         "method": "exact binomial (Clopper-Pearson)",
                         "note": ("pairs share items: CI too narrow" if unit == "pairs" else "")
                         + ("" if n else "no judged item has a complete reference")})
    return pd.DataFrame(rows)


# =========================================================================== inputs from datasets
def inputs_for(protocol: str, dataset: str, *, n_items: int | None = None, seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """The input table and keyword arguments to judge ``dataset`` with ``protocol``.

    Supported: ``pandalm`` x ``pairwise`` (rubric ``overall``); ``pandalm`` x ``reference``
    (response 2 graded against response 1 as the reference - a smoke test, not a validated use);
    ``pandalm`` x ``multi_response`` (the two responses scored together); ``medqg`` x ``rubric``
    (the MCQ rated on MCQG-SRefine's 30 aspects); ``medqg`` x ``multi_answer`` (the keyed answer
    and the distractors graded against the key). Other pairs raise :class:`ParameterError` listing
    the supported ones. ``n_items`` takes a seeded random subset of question items.
    """
    from medeval_kit import datasets as ds

    def subset(ids: list[str]) -> list[str]:
        if n_items is None or n_items >= len(ids):
            return ids
        pick = np.sort(np.random.default_rng(seed).choice(len(ids), size=int(n_items), replace=False))
        return [ids[k] for k in pick]

    key = (dataset, protocol)
    if dataset == "pandalm":
        b = ds.load_pandalm()
        pairs = pairs_from_bundle(b, n_items=n_items, seed=seed)
        if protocol == "pairwise":
            return pairs, {"rubric": "overall"}
        second = pd.DataFrame({"item": pairs["item"], "question": pairs["question"], "response": pairs["answer_b"],
                               "target": pairs["model_b"], "reference": pairs["answer_a"]})
        if protocol == "multi_response":
            first = pd.DataFrame({"item": pairs["item"], "question": pairs["question"],
                                  "response": pairs["answer_a"], "target": pairs["model_a"]})
            return pd.concat([first, second.drop(columns="reference")], ignore_index=True), {}
        if protocol == "reference":
            return second, {}
    if dataset == "medqg":
        b = ds.load_medqg_questions()
        it = b.items.reset_index(drop=True)
        ids = subset(it["item"].astype(str).tolist())
        it = it.set_index("item").loc[ids].reset_index()
        if protocol == "rubric":
            def opts(o):
                return "\n".join(f"{k}. {v}" for k, v in o.items()) if isinstance(o, dict) else _text(o)

            mcq = [f"Question: {_text(r.question)}\nOptions:\n{opts(r.options)}\nCorrect answer: {_text(r.answer)}"
                   for r in it.itertuples()]
            src = [f"Clinical note: {_text(r.context)}\nTopic: {_text(r.topic)}\nKeypoint: {_text(r.keypoint)}"
                   for r in it.itertuples()]
            return pd.DataFrame({"item": it["item"], "question": src, "response": mcq}), {"rubric": "mcqg_srefine",
                                                                                          "target": None}
        if protocol == "multi_answer":
            rows = []
            for r in it.itertuples():
                opts = r.options if isinstance(r.options, dict) else {}
                for letter, txt in opts.items():
                    rows.append({"item": r.item, "question": _text(r.question),
                                 "reference": _text(r.answer_text) or _text(r.answer), "answer": _text(txt),
                                 "target": f"option_{letter}"})
            if not rows:
                raise ParameterError("medqg items carry no option dict to grade")
            return pd.DataFrame(rows), {}
    supported = ["pandalm x pairwise", "pandalm x multi_response", "pandalm x reference", "medqg x rubric",
                 "medqg x multi_answer"]
    raise ParameterError(f"dataset {key[0]!r} with protocol {key[1]!r} is not supported by inputs_for; "
                         f"supported: {supported}. Build the input table yourself and call judge_<protocol>.")


def run_protocol(protocol: str, data: pd.DataFrame, *, judge: str = "local/smollm2-135m", client=None,
                 repeats: int = 1, **kwargs) -> pd.DataFrame:
    """Dispatch to ``judge_<protocol>`` (one of :data:`PROTOCOLS`); ``kwargs`` go through unchanged.

    For ``pairwise`` both orders are judged unless ``orders=`` says otherwise.
    """
    runners = {"pairwise": judge_pairwise, "rubric": judge_rubric, "multi_answer": judge_multi_answer,
               "reference": judge_reference, "multi_response": judge_multi_response}
    if protocol not in runners:
        raise ParameterError(f"unknown protocol {protocol!r}; choose one of {list(runners)}")
    return runners[protocol](data, judge=judge, client=client, repeats=repeats, **kwargs)


# =========================================================================== aspect selection
def aspect_differences(
    judgments: pd.DataFrame,
    a: str,
    b: str,
    *,
    item: str = "question_item",
    target: str = "target",
    aspect: str = "criterion",
    score: str = "score",
    aggregate: str = "mean",
) -> pd.DataFrame:
    """Per-item, per-aspect score difference ``score(a) - score(b)`` from rubric judgments.

    Returns a wide frame (index: items, columns: aspects in rubric order of first appearance); NaN
    where either side is unscored. Repeats are averaged (``aggregate``). Positive means ``a`` rated
    higher. Feed it to :func:`select_aspects`.
    """
    check_protocol(judgments, "rubric")
    d = judgments[judgments[target].isin([a, b])]
    if d.empty:
        raise JudgeError(f"no rubric judgments for targets {a!r} / {b!r}; present: "
                         f"{sorted(map(str, judgments[target].dropna().unique()))[:10]}")
    order = list(dict.fromkeys(d[aspect].astype(str)))
    wide = d.pivot_table(index=[item, aspect], columns=target, values=score, aggfunc=aggregate, dropna=False)
    for t in (a, b):
        if t not in wide.columns:
            wide[t] = np.nan
    diff = (wide[a] - wide[b]).unstack(aspect)
    return diff.reindex(columns=order)


_LAB = {"A": 1, "B": -1, "tie": 0}


def _kappa_matrix(pred: np.ndarray, valid: np.ndarray, human: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cohen's kappa and agreement of each column of ``pred`` (codes -1/0/1) against ``human``.

    ``valid`` masks usable items per column. Returns (kappa, agreement, n).
    """
    hv = human[:, None]
    n = valid.sum(0).astype(float)
    agree = ((pred == hv) & valid).sum(0)
    po = np.divide(agree, n, out=np.full(n.shape, np.nan), where=n > 0)
    pe = np.zeros(pred.shape[1])
    for c in (-1, 0, 1):
        pj = ((pred == c) & valid).sum(0)
        ph = ((hv == c) & valid).sum(0)
        pe += np.divide(pj * ph, n * n, out=np.zeros(n.shape), where=n > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = np.where((n > 0) & (pe < 1), (po - pe) / (1 - pe), np.nan)
    return kappa, po, n


def _evaluate(D: np.ndarray, M: np.ndarray, S: np.ndarray, human: np.ndarray):
    """Evaluate subsets S (m x p, 0/1) on diffs D (n x p, NaN->0) with missing mask M."""
    sums = D @ S.T
    miss = (M.astype(float) @ S.T) > 0
    pred = np.sign(sums).astype(int)
    valid = ~miss & (human[:, None] > -9)
    return (*_kappa_matrix(pred, valid, human), pred, valid)


@dataclass(frozen=True)
class AspectSelection:
    """Result of :func:`select_aspects`: the chosen aspects and honest (cross-validated) numbers."""

    method: str
    objective: str
    selected: tuple[str, ...]
    in_sample: float
    in_sample_agreement: float
    all_aspects: float
    cv_estimate: float
    cv_mean_fold: float
    n_items: int
    n_missing: int
    k_folds: int
    path: pd.DataFrame = field(repr=False, compare=False)
    folds: pd.DataFrame = field(repr=False, compare=False)
    note: str = ""

    @property
    def optimism(self) -> float:
        """In-sample minus cross-validated objective: how much the search flatters itself."""
        return self.in_sample - self.cv_estimate

    def to_frame(self) -> pd.DataFrame:
        rows = [
            ("all_aspects", self.all_aspects, "all aspects, no selection, full data"),
            ("in_sample", self.in_sample, f"best subset found and scored on the same {self.n_items} items"),
            ("cross_validated", self.cv_estimate,
             f"{self.k_folds}-fold: search on train folds, score pooled held-out predictions"),
            ("cv_mean_fold", self.cv_mean_fold, "mean over folds of the held-out value"),
            ("optimism", self.optimism, "in_sample - cross_validated"),
        ]
        return pd.DataFrame([{"method": self.method, "objective": self.objective, "quantity": q, "estimate": v,
                              "n_items": self.n_items, "n_missing": self.n_missing, "k": len(self.selected),
                              "selected": ", ".join(self.selected), "note": d}
                             for q, v, d in rows])

    def summary(self) -> str:
        f = (lambda v: "NaN" if v is None or not np.isfinite(v) else f"{v:.3f}")
        return (f"{self.method} aspect selection ({self.objective}): {len(self.selected)} aspects "
                f"[{', '.join(self.selected)}]; in-sample {f(self.in_sample)} vs {self.k_folds}-fold CV "
                f"{f(self.cv_estimate)} (optimism {f(self.optimism)}); all aspects {f(self.all_aspects)}; "
                f"n={self.n_items} items")

    def _repr_html_(self) -> str:
        return self.to_frame().to_html(index=False)


def _search(D, M, human, names, method, objective, max_k, chunk=20000):
    """Run one search on the given rows; return (best_mask, best_value, path DataFrame)."""
    p = D.shape[1]
    col = 0 if objective == "kappa" else 1

    def score(S):
        kap, po, n, _, _ = _evaluate(D, M, S, human)
        return np.vstack([kap, po, n])

    rows = []
    if method == "greedy":
        single = score(np.eye(p))
        vals = np.nan_to_num(single[col], nan=-np.inf)
        rank = np.argsort(-vals, kind="stable")
        S = np.zeros((p, p))
        for k in range(p):
            S[k, rank[: k + 1]] = 1
        res = score(S)
        for k in range(p):
            rows.append({"k": k + 1, "added": names[rank[k]], "kappa": res[0, k], "agreement": res[1, k],
                         "n_items": int(res[2, k]), "aspects": ", ".join(names[j] for j in rank[: k + 1])})
        v = np.nan_to_num(res[col], nan=-np.inf)[: max_k or p]
        best = int(np.argmax(v))
        return S[best].astype(bool), float(res[col, best]), pd.DataFrame(rows)
    if method == "forward":
        chosen: list[int] = []
        best_val = -np.inf
        best_mask = None
        for k in range(max_k or p):
            cand = [j for j in range(p) if j not in chosen]
            if not cand:
                break
            S = np.zeros((len(cand), p))
            for r, j in enumerate(cand):
                S[r, chosen + [j]] = 1
            res = score(S)
            v = np.nan_to_num(res[col], nan=-np.inf)
            r = int(np.argmax(v))
            if v[r] <= best_val and chosen:
                break  # no strict improvement: stop (the paper's pseudocode)
            chosen.append(cand[r])
            best_val = float(v[r])
            best_mask = S[r].astype(bool)
            rows.append({"k": k + 1, "added": names[cand[r]], "kappa": res[0, r], "agreement": res[1, r],
                         "n_items": int(res[2, r]), "aspects": ", ".join(names[j] for j in chosen)})
        return best_mask, best_val, pd.DataFrame(rows)
    if method == "exhaustive":
        best_val, best_mask = -np.inf, None
        for k in range(1, (max_k or p) + 1):
            kbest, kres = -np.inf, None
            combos = itertools.combinations(range(p), k)
            while True:
                block = list(itertools.islice(combos, chunk))
                if not block:
                    break
                S = np.zeros((len(block), p))
                for r, c in enumerate(block):
                    S[r, list(c)] = 1
                res = score(S)
                v = np.nan_to_num(res[col], nan=-np.inf)
                r = int(np.argmax(v))  # first maximum = lexicographically first combination
                if v[r] > kbest:
                    kbest, kres = v[r], (S[r].astype(bool), res[:, r])
            mask, vals = kres
            rows.append({"k": k, "added": "", "kappa": vals[0], "agreement": vals[1], "n_items": int(vals[2]),
                         "aspects": ", ".join(n for n, m in zip(names, mask) if m)})
            if kbest > best_val:  # strictly better: smaller subsets win ties
                best_val, best_mask = kbest, mask
        return best_mask, float(best_val), pd.DataFrame(rows)
    raise ParameterError(f"method must be 'greedy', 'forward' or 'exhaustive'; got {method!r}")


def select_aspects(
    diffs: pd.DataFrame,
    human: pd.Series | Mapping[str, str],
    *,
    method: str = "greedy",
    objective: str = "kappa",
    max_k: int | None = None,
    k_folds: int = 5,
    seed: int = 0,
    max_subsets: int = 2_000_000,
) -> AspectSelection:
    """Choose the rubric aspects whose summed score difference best reproduces a human preference.

    ``diffs``: items x aspects, ``score(A) - score(B)`` (:func:`aspect_differences`). ``human``: the
    preferred side per item, ``"A"``, ``"B"`` or ``"tie"`` (items without a label are dropped and
    counted). For a subset of aspects the judge prefers A when the summed difference is > 0, B when
    < 0 and tie when it is 0 (ties are a class, as in MCQG-SRefine). Items with an unscored selected
    aspect get no prediction and are left out of that subset's denominator (``n_items`` per row).

    ``method``: ``"greedy"`` ranks aspects by their own objective and keeps the best prefix
    (MCQG-SRefine Tables 23/24); ``"forward"`` adds, each step, the aspect that most improves the
    objective and stops when nothing improves; ``"exhaustive"`` tries every subset of size
    1..``max_k`` (Tables 25/26; refused above ``max_subsets`` subsets - lower ``max_k``).
    ``objective``: ``"kappa"`` (Cohen, 3 classes) or ``"agreement"``.

    Cross-validation: the whole search is re-run on K-1 folds and the chosen subset scored on the
    held-out fold; held-out predictions are pooled into ``cv_estimate``. The gap to ``in_sample``
    is the optimism of reporting the searched number on the same items.
    """
    if objective not in ("kappa", "agreement"):
        raise ParameterError(f"objective must be 'kappa' or 'agreement'; got {objective!r}")
    if not isinstance(diffs, pd.DataFrame) or diffs.shape[1] == 0:
        raise JudgeError("diffs must be a non-empty items x aspects DataFrame (see aspect_differences)")
    h = pd.Series(human)
    h.index = h.index.astype(str)
    d = diffs.copy()
    d.index = d.index.astype(str)
    common = [i for i in d.index if i in h.index and pd.notna(h.loc[i])]
    bad = sorted({str(v) for v in h.loc[common] if v not in _LAB})
    if bad:
        raise SchemaError("annotations", "label", [], f"human preference labels must be A, B or tie; found {bad}")
    n_missing = len(d) - len(common)
    if len(common) < 2:
        raise JudgeError(f"only {len(common)} item(s) have both aspect scores and a human label")
    names = [str(c) for c in d.columns]
    p = len(names)
    k_cap = min(max_k or p, p)
    if method == "exhaustive":
        total = sum(math.comb(p, k) for k in range(1, k_cap + 1))
        if total > max_subsets:
            raise ParameterError(f"exhaustive search over {p} aspects up to size {k_cap} is {total:,} subsets "
                                 f"(> max_subsets={max_subsets:,}); lower max_k or raise max_subsets")
    X = d.loc[common].to_numpy(dtype=float)
    M = np.isnan(X)
    D = np.nan_to_num(X, nan=0.0)
    y = np.array([_LAB[h.loc[i]] for i in common])
    col = 0 if objective == "kappa" else 1

    mask, best, path = _search(D, M, y, names, method, objective, k_cap)
    kap_in, po_in, _, _, _ = _evaluate(D, M, mask[None, :].astype(float), y)
    allk, allpo, _, _, _ = _evaluate(D, M, np.ones((1, p)), y)
    all_val = float((allk if col == 0 else allpo)[0])

    n = len(common)
    k_folds = int(max(2, min(k_folds, n)))
    perm = np.random.default_rng(seed).permutation(n)
    fold_of = np.empty(n, dtype=int)
    fold_of[perm] = np.arange(n) % k_folds
    pooled_pred = np.zeros(n, dtype=int)
    pooled_valid = np.zeros(n, dtype=bool)
    frows = []
    for f in range(k_folds):
        tr, te = fold_of != f, fold_of == f
        m_f, v_f, _ = _search(D[tr], M[tr], y[tr], names, method, objective, k_cap)
        if m_f is None:
            frows.append({"fold": f, "n_train": int(tr.sum()), "n_test": int(te.sum()), "train": np.nan,
                          "test": np.nan, "selected": ""})
            continue
        k_t, po_t, n_t, pred, valid = _evaluate(D[te], M[te], m_f[None, :].astype(float), y[te])
        pooled_pred[te] = pred[:, 0]
        pooled_valid[te] = valid[:, 0]
        frows.append({"fold": f, "n_train": int(tr.sum()), "n_test": int(te.sum()), "train": v_f,
                      "test": float((k_t if col == 0 else po_t)[0]),
                      "selected": ", ".join(nm for nm, m in zip(names, m_f) if m)})
    kc, poc, _ = _kappa_matrix(pooled_pred[:, None], pooled_valid[:, None], y)
    folds = pd.DataFrame(frows)
    return AspectSelection(
        method=method, objective=objective, selected=tuple(nm for nm, m in zip(names, mask) if m),
        in_sample=float((kap_in if col == 0 else po_in)[0]), in_sample_agreement=float(po_in[0]),
        all_aspects=all_val, cv_estimate=float((kc if col == 0 else poc)[0]),
        cv_mean_fold=float(np.nanmean(folds["test"])) if folds["test"].notna().any() else np.nan,
        n_items=n, n_missing=n_missing, k_folds=k_folds, path=path, folds=folds,
        note="ties are a class; kappa is 3-class Cohen (A/B/tie)",
    )


# =========================================================================== notebook-level summaries
def order_effects(judgments: pd.DataFrame, *, n_boot: int = 0, seed: int = 0) -> pd.DataFrame:
    """Presentation-order effects of one protocol's judgments.

    ``pairwise``: :func:`medeval_kit.bias.position_bias` (consistency, flip rate, first-slot rate ...).
    ``multi_answer`` / ``multi_response``: per judge and shown ``position``, the number of parsed
    calls, the mean score and (multi_answer) the share labelled correct - content is shuffled over
    positions, so a trend over positions is a position effect. ``rubric`` / ``reference``: one row
    saying no order varies.
    """
    proto = check_protocol(judgments)
    if proto == "pairwise":
        from medeval_kit import bias

        return bias.position_bias(judgments, n_boot=n_boot, seed=seed)
    if proto in ("multi_answer", "multi_response"):
        d = judgments.assign(_ok=judgments["parse_status"].eq("ok"))
        rows = []
        for (j, pos), g in d.groupby(["judge", "position"], sort=True):
            ok = g[g["_ok"]]
            rows.append({"judge": j, "criterion": g["criterion"].iloc[0], "metric": "by_position",
                         "position": int(pos), "n": len(ok), "n_failed": int((~g["_ok"]).sum()),
                         "mean_score": float(ok["score"].mean()) if len(ok) else np.nan,
                         "share_correct": float((ok["verdict"] == "correct").mean())
                         if proto == "multi_answer" and len(ok) else np.nan,
                         "note": "content shuffled over positions (seeded, recorded)"})
        return pd.DataFrame(rows)
    return pd.DataFrame([{"judge": ", ".join(sorted(map(str, judgments["judge"].unique()))), "metric": "none",
                          "n": len(judgments), "note": f"protocol {proto!r} shows one response per call in a "
                          "single order: no order effect is measurable"}])


def _human_majority(annotations: pd.DataFrame, items) -> pd.Series:
    h = annotations[(annotations["rater_kind"] == "human") & annotations["item"].isin(set(items))]
    out = {}
    for it, g in h.groupby("item"):
        counts = g["label"].dropna().value_counts()
        if len(counts) and (len(counts) == 1 or counts.iloc[0] > counts.iloc[1]):
            out[it] = counts.index[0]
    return pd.Series(out, dtype=object)


def human_agreement(
    judgments: pd.DataFrame,
    dataset: str = "pandalm",
    *,
    policy: str = "drop",
    n_boot: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Score the judge against the bundled human labels of ``dataset``, where they exist.

    ``pairwise`` on PandaLM: the two orders are resolved with ``policy``
    (:func:`medeval_kit.pairwise.resolve_orders`; repeats by majority first) and the judge is compared
    scored exactly like a held-out annotator: against the consensus of the other annotators on each
    item, next to the annotators themselves (:func:`medeval_kit.agreement.judge_vs_humans`, symmetric
    leave-one-out, Cohen's kappa over A/B/tie, paired bootstrap CIs for the gap).
    Rows ``<judge> [AB only]`` / ``[BA only]`` show what a single-order judge would have scored.
    Items the resolution dropped or that failed to parse have no judge label; ``n_items`` says how
    many remain. ``multi_response`` on PandaLM: the human majority becomes reference scores
    (A better -> 2/1, tie -> 1/1) and :func:`acc_tuple_triple` is returned. Anything else: one row
    with a ``note`` (no human labels bundled for it).
    """
    from medeval_kit import agreement
    from medeval_kit.datasets import load_pandalm
    from medeval_kit.pairwise import majority_over_repeats, resolve_orders

    proto = check_protocol(judgments)
    if dataset == "pandalm" and proto == "pairwise":
        hum = load_pandalm().annotations
        hum = hum[hum["rater_kind"] == "human"]
        res = resolve_orders(judgments, policy, polarity="polarity")
        parts = [to_annotations(res)]
        maj = majority_over_repeats(judgments, polarity="polarity")
        for o in ("AB", "BA"):
            m = maj[maj["order"] == o]
            if len(m):
                parts.append(to_annotations(m.assign(judge=m["judge"] + f" [{o} only]")))
        judged = set(res["item"])
        ann = pd.concat([hum[hum["item"].isin(judged)][["item", "rater", "rater_kind", "criterion", "label"]]]
                        + parts, ignore_index=True)
        judges = sorted(set(pd.concat(parts)["rater"]))
        humans = sorted(hum["rater"].unique())
        out = agreement.judge_vs_humans(ann, humans, judges, categories=["A", "B", "tie"], n_boot=n_boot,
                                        seed=seed).to_frame()
        n_lab = pd.concat(parts).groupby("rater")["label"].apply(lambda s: int(s.notna().sum()))
        out["n_judge_labels"] = out["rater"].map(n_lab)
        out["n_judged_items"] = len(judged)
        out["order_policy"] = policy
        return out
    if dataset == "pandalm" and proto == "multi_response":
        hum = load_pandalm()
        items = judgments["question_item"].astype(str).unique()
        maj = _human_majority(hum.annotations, items)
        slots = hum.responses[hum.responses["item"].isin(maj.index)]
        score = {"A": {"A": 2.0, "B": 1.0}, "B": {"A": 1.0, "B": 2.0}, "tie": {"A": 1.0, "B": 1.0}}
        ref = pd.DataFrame({"item": slots["item"], "target": slots["model"],
                            "score": [score[maj[i]][s] for i, s in zip(slots["item"], slots["slot"])]})
        return acc_tuple_triple(judgments, ref)
    return pd.DataFrame([{"rater": ", ".join(sorted(map(str, judgments["judge"].unique()))), "metric": "none",
                          "estimate": np.nan, "n_items": 0,
                          "note": f"no bundled human labels for dataset {dataset!r} with protocol {proto!r}"}])


def plot_verdicts(judgments: pd.DataFrame, *, title: str | None = None):
    """Bar chart of verdict counts (parse failures shown as their own bar), by order / position.

    Pairwise: presented-slot verdicts per order (a position-biased judge piles up on ``first``).
    k-slot protocols: verdicts by shown position. Others: by criterion (first 12). Returns the figure.
    """
    from medeval_kit import viz as plots

    proto = check_protocol(judgments)
    d = judgments.copy()
    if proto == "pairwise":
        x, lab = "order", d["slot_verdict"]
    elif "position" in d.columns:
        x, lab = "position", d["verdict"] if d["verdict"].notna().any() else d["score"]
    else:
        x, lab = "criterion", d["verdict"] if d["verdict"].notna().any() else d["score"]
        keep = list(dict.fromkeys(d[x]))[:12]
        d = d[d[x].isin(keep)]
        lab = lab.loc[d.index]
    d["_label"] = lab.astype(object).where(d["parse_status"].eq("ok"), "parse " + d["parse_status"])
    d["_label"] = d["_label"].map(lambda v: v if isinstance(v, str) else f"{v:g}")
    counts = d.groupby([x, "_label"]).size().unstack(fill_value=0)
    with plots.paper_style():
        fig, ax = plots.figure("single", aspect=0.7)
        counts.plot.bar(ax=ax, width=0.8)
        ax.set_xlabel(x)
        ax.set_ylabel("calls" if proto == "pairwise" else "rows")
        ax.set_title(title or f"{proto}: verdicts by {x} (n={len(d)})")
        ax.legend(title=None, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax.tick_params(axis="x", rotation=0 if x != "criterion" else 45)
    return fig


def score_summary(judgments: pd.DataFrame, *, policy: str = "drop", confidence: float = 0.95) -> pd.DataFrame:
    """What the judge says about the judged models, per protocol, with denominators.

    ``pairwise``: orders resolved with ``policy``, then the polarity-aware win rate of model A
    (:func:`medeval_kit.pairwise.win_rate`). ``rubric``: mean component / total score per target
    (:func:`rubric_scores`), with ``n`` scored units and ``n_failed``. ``reference`` /
    ``multi_answer``: per target the counts of each label and the share correct among parsed,
    non-abstaining calls (exact CI). ``multi_response``: mean score per target.
    """
    from medeval_kit.pairwise import resolve_orders, win_rate
    from medeval_kit.stats import proportion_ci

    proto = check_protocol(judgments)
    if proto == "pairwise":
        return win_rate(resolve_orders(judgments, policy, polarity="polarity"), confidence=confidence)
    tcol = "target" if "target" in judgments.columns else None
    if proto == "rubric":
        sc = rubric_scores(judgments)
        by = ["judge"] + ([tcol] if tcol else []) + ["component"]
        out = sc.groupby(by, sort=False).agg(mean_score=("score", "mean"), sd=("score", "std"),
                                             n=("score", lambda x: int(x.notna().sum())),
                                             n_failed=("score", lambda x: int(x.isna().sum()))).reset_index()
        out["note"] = "component = sum/max; total = mean of components; NaN units not imputed"
        return out
    d = judgments.assign(_t=judgments[tcol] if tcol else "all")
    rows = []
    for (j, t), g in d.groupby(["judge", "_t"], sort=True):
        ok = g[g["parse_status"].eq("ok")]
        row = {"judge": j, "target": t, "n_rows": len(g), "n_ok": len(ok),
               "n_failed": int(g["parse_status"].eq("failed").sum()),
               "n_missing": int(g["parse_status"].eq("missing").sum())}
        if proto == "multi_response":
            row.update(metric="mean_score", estimate=float(ok["score"].mean()) if len(ok) else np.nan,
                       ci_low=np.nan, ci_high=np.nan, n=len(ok))
        else:
            counts = ok["verdict"].value_counts()
            for lab in ("correct", "incorrect", "abstain"):
                row[f"n_{lab}"] = int(counts.get(lab, 0))
            k, n = row["n_correct"], row["n_correct"] + row["n_incorrect"]
            lo, hi = proportion_ci(k, n, confidence=confidence)
            row.update(metric="share_correct", estimate=k / n if n else np.nan, ci_low=lo, ci_high=hi, n=n)
        rows.append(row)
    return pd.DataFrame(rows)
