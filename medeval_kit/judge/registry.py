"""The ``@protocol`` registry: protocol name -> :class:`Protocol` (its run function, default template,
reply schema, input check and the hooks the summaries dispatch to).

A protocol is one file in ``judge/protocols/`` whose ``judge_<name>`` function is decorated with
``@protocol(name, template=..., schema=..., inputs=...)``; registering also lets the ``judgments``
table accept the name (:data:`medeval_kit.schemas.PROTOCOLS`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from medeval_kit.errors import ParameterError, SchemaError
from medeval_kit.schemas import PROTOCOLS

from .engine import need

__all__ = ["Protocol", "protocol", "unregister", "get", "names", "default_templates", "run_protocol",
           "check_protocol", "protocol_of"]


@dataclass(frozen=True)
class Protocol:
    """One judge protocol: how to run it and how its judgments are read.

    ``run``: ``judge_<name>(data, *, judge=, client=, repeats=, **kw)`` (input columns checked).
    ``template``: the default template name (or polarity -> name). ``schema``: builds one call's reply
    schema. ``inputs``: the column parameters the input table must have. ``scores`` /
    ``order_effects`` / ``humans``: what :func:`~medeval_kit.judge.score_summary`,
    :func:`~medeval_kit.judge.order_effects` and :func:`~medeval_kit.judge.human_agreement` call
    (None: the generic default). ``verdicts_by`` / ``verdict_column`` / ``row_unit``: how
    :func:`~medeval_kit.judge.verdict_counts` groups the verdicts.
    """

    name: str
    run: Callable[..., pd.DataFrame]
    template: str | Mapping[str, str]
    schema: Callable[..., dict]
    inputs: tuple[str, ...]
    scores: Callable[..., pd.DataFrame] | None = None
    order_effects: Callable[..., pd.DataFrame] | None = None
    humans: Callable[..., pd.DataFrame] | None = None
    verdicts_by: str = "criterion"
    verdict_column: str = "verdict"
    row_unit: str = "rows"


_REGISTRY: dict[str, Protocol] = {}


def _with_input_check(run: Callable, inputs: Sequence[str]) -> Callable:
    """``run`` preceded by the check that its input table has the columns named by ``inputs``."""
    sig = inspect.signature(run)
    unknown = [r for r in inputs if r not in sig.parameters]
    if unknown:
        raise ParameterError(f"{run.__name__}: inputs {unknown} are not parameters of the function")

    @functools.wraps(run)
    def checked(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        data = next(iter(bound.arguments.values()))
        need(data, {role: bound.arguments[role] for role in inputs}, run.__name__)
        return run(*args, **kwargs)

    return checked


def protocol(name: str, *, template: str | Mapping[str, str], schema: Callable[..., dict], inputs: Sequence[str],
             scores: Callable | None = None, order_effects: Callable | None = None, humans: Callable | None = None,
             verdicts_by: str = "criterion", verdict_column: str = "verdict",
             row_unit: str = "rows") -> Callable[[Callable], Callable]:
    """Decorator: register ``judge_<name>`` as protocol ``name``; returns it with its input check."""

    def register(run: Callable) -> Callable:
        if name in _REGISTRY:
            raise ParameterError(f"protocol {name!r} is already registered (by {_REGISTRY[name].run.__module__})")
        checked = _with_input_check(run, inputs)
        _REGISTRY[name] = Protocol(name, checked, template, schema, tuple(inputs), scores, order_effects, humans,
                                   verdicts_by, verdict_column, row_unit)
        if name not in PROTOCOLS:
            PROTOCOLS.append(name)
        return checked

    return register


def unregister(name: str) -> None:
    """Remove protocol ``name`` from the registry and from the names the ``judgments`` table accepts."""
    get(name)
    del _REGISTRY[name]
    if name in PROTOCOLS:
        PROTOCOLS.remove(name)


def get(name: str) -> Protocol:
    """The registered :class:`Protocol` called ``name``; :class:`ParameterError` naming the known ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ParameterError(f"unknown protocol {name!r}; choose one of {names()}") from None


def names() -> list[str]:
    """The registered protocol names, in registration order."""
    return list(_REGISTRY)


def default_templates() -> dict[str, str | Mapping[str, str]]:
    """Protocol name -> its default template (or polarity -> template)."""
    return {p.name: p.template for p in _REGISTRY.values()}


def run_protocol(protocol: str, data: pd.DataFrame, *, judge: str = "local/smollm2-135m", client=None,
                 repeats: int = 1, **kwargs) -> pd.DataFrame:
    """Run the registered protocol ``protocol`` on ``data``; ``kwargs`` go through unchanged.

    For ``pairwise`` both orders are judged unless ``orders=`` says otherwise.
    """
    return get(protocol).run(data, judge=judge, client=client, repeats=repeats, **kwargs)


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


def protocol_of(judgments: pd.DataFrame, *, source: str | None = None) -> Protocol:
    """The registered :class:`Protocol` of a one-protocol ``judgments`` table."""
    name = check_protocol(judgments, source=source)
    if name not in _REGISTRY:
        raise SchemaError("judgments", "protocol", list(range(min(len(judgments), 10))),
                          f"protocol {name!r} is not registered; known: {names()}", source)
    return _REGISTRY[name]
