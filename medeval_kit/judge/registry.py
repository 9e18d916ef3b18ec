"""The ``@protocol`` registry: protocol name -> :class:`Protocol` (its run function, default template,
reply schema, input check and the hooks the summaries dispatch to).

A protocol is one file in ``judge/protocols/`` whose ``judge_<name>`` function is decorated with
``@protocol(name, template=..., schema=..., inputs=...)``, or a module of another distribution declared
as an entry point of group ``medeval_kit.protocols`` (loaded at the first read of the registry; a
built-in keeps its name, see :mod:`medeval_kit.plugins`). The ``judgments`` table accepts every
registered name: :func:`medeval_kit.schemas.validate` reads this registry at validation time.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from medeval_kit import plugins
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import ParameterError, SchemaError

from .engine import need

__all__ = ["Protocol", "protocol", "unregister", "get", "names", "default_templates", "run_protocol",
           "check_protocol", "protocol_of"]


@dataclass(frozen=True)
class Protocol:
    """One judge protocol: how to run it and how its judgments are read.

    Parameters
    ----------
    name : str
        The protocol's name (``pairwise``, ``rubric`` ...).
    run : callable
        ``judge_<name>(data, *, model=, client=, repeats=, columns=, **kw)``, with its input check.
    template : str or mapping of str to str
        The default prompt template's name (or polarity -> name).
    schema : callable
        Builds one call's reply schema.
    inputs : tuple of str
        The column parameters the input table must have (empty when the run function checks its inputs).
    scores, order_effects, humans : callable, optional
        What :func:`~medeval_kit.judge.score_summary`, :func:`~medeval_kit.judge.order_effects` and
        :func:`~medeval_kit.judge.human_agreement` call for this protocol; ``None``: the generic default.
    verdicts_by : str, default "criterion"
        How :func:`~medeval_kit.judge.verdict_counts` groups the verdicts.
    verdict_column : str, default "verdict"
        The column holding the verdicts it counts.
    row_unit : str, default "rows"
        What one counted row is, in words.
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


_REGISTRY: dict[str, Protocol] = {}  # read through _registry(), which loads the plugins first
plugins.attach(plugins.PROTOCOLS, names=lambda: list(_REGISTRY), drop=lambda name: _REGISTRY.pop(name, None))


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
    """Register a run function as a judge protocol (a decorator).

    Parameters
    ----------
    name : str
        The protocol's name; a built-in keeps its name when a plugin reuses it.
    template : str or mapping of str to str
        The default prompt template (or polarity -> template).
    schema : callable
        Builds one call's reply schema.
    inputs : sequence of str
        The column parameters the input table must have; checked before each run.
    scores, order_effects, humans : callable, optional
        Protocol-specific summaries (see :class:`Protocol`).
    verdicts_by : str, default "criterion"
        How verdicts are grouped by :func:`~medeval_kit.judge.verdict_counts`.
    verdict_column : str, default "verdict"
        The verdict column it counts.
    row_unit : str, default "rows"
        What one counted row is.

    Returns
    -------
    callable
        The decorator; it returns the run function with its input check.

    Raises
    ------
    ParameterError
        ``name`` is already registered, or ``inputs`` names a column that is not a parameter.
    """

    def register(run: Callable) -> Callable:
        checked = _with_input_check(run, inputs)
        verdict = plugins.admit(plugins.PROTOCOLS, name, name in _REGISTRY, run.__module__)
        if verdict == "duplicate":
            raise ParameterError(f"protocol {name!r} is already registered (by {_REGISTRY[name].run.__module__})")
        if verdict == "keep":  # a plugin's protocol under a taken name (warned): not registered
            return checked
        _REGISTRY.pop(name, None)  # "replace": a built-in takes its name back from a plugin
        _REGISTRY[name] = Protocol(name, checked, template, schema, tuple(inputs), scores, order_effects, humans,
                                   verdicts_by, verdict_column, row_unit)
        return checked

    return register


def unregister(name: str) -> None:
    """Remove a protocol from the registry (and so from the names the ``judgments`` table accepts).

    Parameters
    ----------
    name : str
        A registered protocol.

    Raises
    ------
    ParameterError
        No protocol has that name.
    """
    get(name)
    del _REGISTRY[name]
    plugins.release(plugins.PROTOCOLS, name)


def _registry() -> dict[str, Protocol]:
    """The registry, after the built-ins and the ``medeval_kit.protocols`` plugins are loaded."""
    plugins.load(plugins.PROTOCOLS)
    return _REGISTRY


def get(name: str) -> Protocol:
    """The registered :class:`Protocol` called ``name``; :class:`ParameterError` naming the known ones."""
    try:
        return _registry()[name]
    except KeyError:
        raise ParameterError(f"unknown protocol {name!r}; choose one of {names()}") from None


def names() -> list[str]:
    """List the registered protocols, in registration order (built-ins, then plugins).

    Returns
    -------
    list of str
        The names.
    """
    return list(_registry())


def default_templates() -> dict[str, str | Mapping[str, str]]:
    """Give each protocol's default prompt template.

    Returns
    -------
    dict
        Protocol name -> its template name (or polarity -> template name).
    """
    return {p.name: p.template for p in _registry().values()}


@shared_docs
def run_protocol(protocol: str, data: pd.DataFrame, *, model: str | None = None, client=None,
                 repeats: int = 1, **kwargs) -> pd.DataFrame:
    """Run a registered protocol on a table.

    For ``pairwise`` both orders are judged unless ``orders=`` says otherwise.

    Parameters
    ----------
    protocol : str
        A registered protocol (:func:`~medeval_kit.judge.protocol_names`).
    data : DataFrame
        The protocol's input table (items with their responses).
    model : str, optional
        The judge LLM, as ``provider/name``; default ``"local/smollm2-135m"``, the embedded model.
    {client}
    repeats : int, default 1
        Calls per item (and order); different repeats are different samples.
    **kwargs
        The protocol's own options (``columns=``, ``criterion=``, ``template=``, ``orders=`` ...), passed
        through unchanged; ``judge=`` is the deprecated name of ``model``.

    Returns
    -------
    DataFrame
        A ``judgments`` table: one row per call and criterion, with the raw reply kept.
    """
    if "judge" in kwargs:
        warnings.warn("run_protocol(judge=...) is deprecated; pass model=", DeprecationWarning, stacklevel=2)
        old = kwargs.pop("judge")
        model = old if model is None else model
    run = get(protocol).run
    params = inspect.signature(run).parameters
    if "model" not in params and "judge" in params:  # a protocol written before model= (a plugin's)
        return run(data, judge=model or "local/smollm2-135m", client=client, repeats=repeats, **kwargs)
    return run(data, model=model, client=client, repeats=repeats, **kwargs)


@shared_docs
def check_protocol(judgments: pd.DataFrame, expected: str | Sequence[str] | None = None, *,
                   source: str | None = None, protocol: str | None = None) -> str:
    """Return the single protocol of a judgments table; raise if it mixes protocols.

    Parameters
    ----------
    judgments : DataFrame
        A ``judgments`` table (its ``protocol`` column).
    expected : str or sequence of str, optional
        The protocol(s) the caller can analyse; another one is an error.
    {source}
    protocol : str, optional
        Deprecated: the name of the protocol column (use a ``columns=`` mapping upstream).

    Returns
    -------
    str
        The protocol.

    Raises
    ------
    SchemaError
        No ``protocol`` column, an empty table, mixed protocols, or not one of ``expected``.
    """
    if protocol is not None:
        warnings.warn("check_protocol(protocol=...) is deprecated; map the column with columns= where the table "
                      "is read", DeprecationWarning, stacklevel=2)
    else:
        protocol = "protocol"
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


@shared_docs
def protocol_of(judgments: pd.DataFrame, *, source: str | None = None) -> Protocol:
    """Return the registered protocol of a one-protocol judgments table.

    Parameters
    ----------
    judgments : DataFrame
        A ``judgments`` table.
    {source}

    Returns
    -------
    Protocol
        Its registry entry.

    Raises
    ------
    SchemaError
        The table mixes protocols, or its protocol is not registered.
    """
    name = check_protocol(judgments, source=source)
    if name not in _registry():
        raise SchemaError("judgments", "protocol", list(range(min(len(judgments), 10))),
                          f"protocol {name!r} is not registered; known: {names()}", source)
    return _REGISTRY[name]
