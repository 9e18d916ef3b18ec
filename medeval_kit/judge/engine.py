"""The one judging engine every protocol shares: calls -> LLM client -> parse -> ``judgments`` rows.

A protocol builds a list of :class:`Call` (rendered messages, reply schema, the columns its rows carry)
and a ``decode(call, parsed)`` that turns one parsed reply into rows; :func:`execute` sends the calls,
parses every reply with the LLM layer's rule, adds the provenance columns and returns the tidy table.
"""

from __future__ import annotations

import functools
import hashlib
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from medeval_kit.errors import MedevalError
from medeval_kit.llm import Request, get_client
from medeval_kit.llm.parse import parse_reply
from medeval_kit.llm.parse import validate as validate_json
from medeval_kit.prompts import Prompt, load_prompt

__all__ = ["JUDGMENT_COLUMNS", "DEFAULT_MODEL", "JudgeError", "Run", "Call", "start", "execute", "need", "requires", "optional_columns",
           "resolve_model", "text", "shuffle_seed", "load_template", "unit_ids"]

DEFAULT_MODEL = "local/smollm2-135m"
"""The judge model when none is given: a small local model, so nothing is sent to a paid API by default."""

JUDGMENT_COLUMNS = ["item", "judge", "protocol", "criterion", "order", "repeat", "raw", "verdict", "score",
                    "parse_status"]

#: sampling temperature when repeats are asked and none is given (repeats at temperature 0 are copies)
REPEAT_TEMPERATURE = 0.7


class JudgeError(MedevalError, ValueError):
    """A judge protocol was called with unusable input (missing columns, unknown criterion ...)."""


# =========================================================================== small helpers
def shuffle_seed(seed: int, item: str, repeat: int) -> int:
    """Return the recorded seed of one shuffle: a stable hash of (seed, item, repeat), < 2**32.

    ``numpy.random.default_rng(shuffle_seed(seed, item, repeat)).permutation(k)`` is the order shown.

    Parameters
    ----------
    seed : int
        The run's random seed.
    item : str
        The item whose texts are shuffled.
    repeat : int
        The repeat (0-based).

    Returns
    -------
    int
        The seed of this item's and repeat's permutation.

    Examples
    --------
    >>> shuffle_seed(0, "q1", 0) == shuffle_seed(0, "q1", 0) != shuffle_seed(0, "q1", 1)
    True
    """
    h = hashlib.sha256(f"{int(seed)}|{item}|{int(repeat)}".encode()).digest()
    return int.from_bytes(h[:4], "big")


def need(df: pd.DataFrame, cols: Mapping[str, str | None], what: str) -> None:
    """Raise :class:`JudgeError` unless ``df`` is a non-empty DataFrame with the named columns."""
    if not isinstance(df, pd.DataFrame):
        raise JudgeError(f"{what}: expected a pandas DataFrame, got {type(df).__name__}")
    missing = [f"{role}={name!r}" for role, name in cols.items() if name is not None and name not in df.columns]
    if missing:
        raise JudgeError(f"{what}: missing column(s) {', '.join(missing)}; present: {list(df.columns)}. "
                         "Map your column names with columns={canonical name: your column}.")
    if len(df) == 0:
        raise JudgeError(f"{what}: the input table is empty")


def requires(*inputs: str) -> Callable[[Callable], Callable]:
    """Decorate a protocol's run function: check that its input table has the canonical columns ``inputs``.

    Put it below ``@takes_columns`` (the check sees the renamed table). The columns are recorded as
    ``__medeval_inputs__`` (read by :func:`medeval_kit.judge.item_columns`).
    """

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def checked(data, *args, **kwargs):
            need(data, {c: c for c in inputs}, fn.__name__)
            return fn(data, *args, **kwargs)

        checked.__medeval_inputs__ = tuple(inputs)
        return checked

    return decorate


def optional_columns(*names: str) -> Callable[[Callable], Callable]:
    """Decorate a protocol's run function (above ``@takes_columns``): the old ``target=None`` keeps working.

    Before ``columns=``, ``target=None`` (or ``model_a=None`` ...) told a protocol to ignore an optional
    column. For one release it still does, with a ``DeprecationWarning``: the column is dropped from the
    table before the call.
    """

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(data, *args, **kwargs):
            drop = [n for n in names if n in kwargs and kwargs[n] is None]
            if drop:
                for n in drop:
                    del kwargs[n]
                warnings.warn(f"{fn.__name__}({', '.join(f'{n}=None' for n in drop)}) is deprecated; drop the "
                              f"column(s) from the table instead", DeprecationWarning, stacklevel=3)
                if isinstance(data, pd.DataFrame):
                    data = data.drop(columns=[n for n in drop if n in data.columns])
            return fn(data, *args, **kwargs)

        return wrapper

    return decorate


def resolve_model(model: str | None, old: dict, what: str) -> str:
    """The judge model of a protocol call: ``model``, else the deprecated ``judge=`` keyword, else the default.

    ``old`` holds the keywords a run function received beyond its own; anything but ``judge`` is an error.
    """
    old = dict(old)
    if "judge" in old:
        judge = old.pop("judge")
        warnings.warn(f"{what}(judge=...) is deprecated; the judge model is model=", DeprecationWarning,
                      stacklevel=6)
        if model is None:
            model = judge
    if old:
        raise TypeError(f"{what}() got unexpected keyword argument(s) {sorted(old)}")
    return DEFAULT_MODEL if model is None else str(model)


def text(v: Any) -> str:
    """The cell as prompt text: "" for None/NaN/NA, else ``str(v)``."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    try:
        if pd.isna(v):
            return ""
    except (TypeError, ValueError):
        pass
    return str(v)


def load_template(name_or_prompt: str | Prompt) -> Prompt:
    """The :class:`Prompt` itself, or the template of that name from ``prompts/``."""
    return name_or_prompt if isinstance(name_or_prompt, Prompt) else load_prompt(name_or_prompt)


def unit_ids(df: pd.DataFrame, item: str, target: str | None, what: str) -> pd.Series:
    """``item`` ids, or ``"<item>:<target>"`` when a target column is given; duplicates are an error."""
    if target and target in df.columns:
        ids = df[item].astype(str) + ":" + df[target].astype(str)
    else:
        ids = df[item].astype(str)
    if ids.duplicated().any():
        raise JudgeError(f"{what}: duplicate (item, target) rows {sorted(ids[ids.duplicated()])[:5]}")
    return ids


# =========================================================================== one run
@dataclass(frozen=True)
class Run:
    """The settings every call of one judging run shares."""

    protocol: str
    judge: str  # the name written to the ``judge`` column
    client: Any
    repeats: int
    temperature: float
    max_tokens: int
    seed: int
    constrained: bool


@dataclass
class Call:
    """One rendered prompt: its reply schema, the columns its rows carry, and what ``decode`` needs."""

    messages: list[dict]
    prompt: Prompt
    schema: dict | None
    repeat: int
    columns: dict  # written to every row of the call and sent as request metadata
    metadata: dict = field(default_factory=dict)  # sent as request metadata only
    context: Any = None  # for decode only


def start(protocol: str, *, judge: str, client, cache_mode: str, repeats: int, temperature: float | None,
          max_tokens: int, seed: int, constrained: bool) -> Run:
    """Check the repeats, pick the client and temperature; return the run's :class:`Run`."""
    if int(repeats) < 1:
        raise JudgeError(f"repeats must be >= 1, got {repeats}")
    if client is None:
        client = get_client(judge, cache_mode=cache_mode)
    name = client.model if isinstance(getattr(client, "model", None), str) and client.model else judge
    temp = float(temperature) if temperature is not None else (0.0 if int(repeats) <= 1 else REPEAT_TEMPERATURE)
    return Run(protocol, name, client, int(repeats), temp, int(max_tokens), int(seed), bool(constrained))


def _request(run: Run, call: Call) -> Request:
    return Request(messages=call.messages, model=run.judge, temperature=run.temperature, max_tokens=run.max_tokens,
                   schema=call.schema if run.constrained else None, repeat=int(call.repeat), seed=run.seed,
                   metadata={**call.columns, **call.metadata})


def _send(run: Run, requests: list[Request], progress: bool) -> list:
    if not requests:
        return []
    responses = run.client.run(requests, progress=progress, desc=f"judging {run.protocol} ({run.judge})")
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
    raw = getattr(resp, "text", None)
    if raw is None:
        err = getattr(resp, "error", None)
        return None, None, "missing", str(err) if err else "no reply text"
    parsed = getattr(resp, "parsed", None)
    if parsed is not None and schema is not None and validate_json(parsed, schema) is None:
        return str(raw), parsed, "ok", None
    parsed, status, perr = parse_reply(str(raw), schema, finish_reason=getattr(resp, "finish_reason", None))
    return str(raw), parsed, status, perr


def _provenance(resp, raw, status: str, perr, prompt: Prompt, run: Run) -> dict:
    return {
        "judge": run.judge, "protocol": run.protocol, "raw": raw, "parse_status": status, "parse_error": perr,
        "template": prompt.name, "template_version": prompt.version, "temperature": run.temperature,
        "seed": run.seed, "constrained": run.constrained, "call": getattr(resp, "key", None) or None,
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


Decode = Callable[[Call, Any], Iterable[dict]]
"""``decode(call, parsed)`` -> the rows of one call; ``parsed`` is None when the reply did not parse."""


def execute(run: Run, calls: list[Call], decode: Decode, *, progress: bool,
            extra_order: Sequence[str]) -> pd.DataFrame:
    """Send ``calls``, parse each reply and return the ``judgments`` rows ``decode`` makes of them.

    Each row is the call's ``columns``, the provenance of its reply (judge, raw text, parse status,
    template, cache key ...) and what ``decode`` returns; columns: :data:`JUDGMENT_COLUMNS`, then
    ``extra_order``, then the rest.
    """
    responses = _send(run, [_request(run, c) for c in calls], progress)
    rows = []
    for n, (resp, call) in enumerate(zip(responses, calls)):
        raw, parsed, status, perr = _extract(resp, call.schema)
        common = _provenance(resp, raw, status, perr, call.prompt, run)
        for row in decode(call, parsed if status == "ok" else None):
            rows.append({**call.columns, **common, **row, "_call_no": n})
    return _finish(rows, extra_order)


# Parameter texts every protocol run function shares (``@shared_docs(**RUN_DOCS)``)
RUN_DOCS: dict[str, str] = {
    "temperature": """\
temperature : float, optional
    Sampling temperature; default 0 for one repeat and 0.7 for several (repeats at 0 are copies).""",
    "max_tokens": """\
max_tokens : int
    Reply length limit; a reply cut off there fails to parse and is counted.""",
    "constrained": """\
constrained : bool
    Send the reply schema to the provider; ``False`` asks in free text and parses and validates here
    (how a small model's parse failures become visible).""",
    "cache_mode": """\
cache_mode : str
    The LLM cache mode (``use``, ``replay``, ``record``) when the client is made here.""",
    "progress": """\
progress : bool
    Show a progress bar.""",
    "old_keywords": """\
**old : str
    Deprecated keywords kept for one release, with a ``DeprecationWarning``: ``judge=`` (the model;
    use ``model``) and the per-column keywords (``item="case_id"``; use ``columns``).""",
    "judgments": """\
DataFrame
    The ``judgments`` table: ``item, judge, protocol, criterion, order, repeat, raw, verdict, score,
    parse_status``, the provenance columns (``parse_error, template, template_version, temperature,
    seed, call, cached, latency_s, cost_usd``) and the protocol's own columns.""",
}
