"""One result shape: every public statistic returns a contract DataFrame or a result object.

The test enumerates the public API (``tests/api_surface.py``), not a hand-picked list. Each public
function is either a statistic with an example call in ``tests/api_examples/<package>.py`` (its
result is checked here) or declared there as another kind (reader, plot, writer ...). What is not
yet either is listed in ``tests/api_debt/<package>.txt`` as ``contract <package>.<name>``.
"""

from __future__ import annotations

import inspect
import warnings

import pandas as pd
import pytest

from medeval_kit.results import RESULT_COLUMNS
from tests.api_examples import KINDS, Tables, examples
from tests.api_surface import PACKAGES, all_public, public, ratchet


def contract_problem(result) -> str:
    """Why ``result`` is outside the contract ("" when it is inside)."""
    if isinstance(result, (dict, tuple, list)):
        return f"returns a {type(result).__name__}; return one DataFrame or one result object"
    if isinstance(result, pd.DataFrame):
        frame = result
    else:
        missing = [m for m in ("to_frame", "summary", "_repr_html_") if not callable(getattr(result, m, None))]
        if missing:
            return f"{type(result).__name__} lacks {missing}"
        frame = result.to_frame()
        if not isinstance(frame, pd.DataFrame):
            return f"{type(result).__name__}.to_frame() returns {type(frame).__name__}"
        if not isinstance(result.summary(), str) or not isinstance(result._repr_html_(), str):
            return f"{type(result).__name__}.summary()/_repr_html_() must return str"
    lacking = [c for c in RESULT_COLUMNS if c not in frame.columns]
    return f"table lacks the contract columns {lacking}" if lacking else ""


@pytest.fixture(scope="module")
def tables():
    return Tables()


def _failing(tables) -> dict[str, str]:
    out = {}
    for package in PACKAGES:
        calls, other = examples(package)
        names = public(package)
        for name in set(calls) | set(other):
            if name not in names:
                out[f"{package}.{name}"] = "has an example or a kind but is not public"
        for name, kind in other.items():
            if kind not in KINDS:
                out[f"{package}.{name}"] = f"unknown kind {kind!r}"
        for name, obj in names.items():
            if name in other or inspect.isclass(obj) and name not in calls:
                continue
            if name not in calls:
                out[f"{package}.{name}"] = "no example call and no declared kind"
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                problem = contract_problem(calls[name](tables))
            if problem:
                out[f"{package}.{name}"] = problem
    return out


def test_every_public_statistic_follows_the_contract(tables):
    problems = ratchet("contract", _failing(tables))
    assert not problems, "\n".join(problems)


def test_nothing_is_exported_from_two_packages():
    seen: dict[int, list[str]] = {}
    for name, obj in all_public().items():
        seen.setdefault(id(obj), []).append(name)
    twice = [names for names in seen.values() if len(names) > 1]
    assert not twice, twice


def test_the_contract_check_can_fail():
    ok = pd.DataFrame([{c: 0 for c in RESULT_COLUMNS}])
    assert contract_problem(ok) == ""
    assert "dict" in contract_problem({"a": ok})
    assert "tuple" in contract_problem((ok, ok))
    assert "lacks the contract" in contract_problem(ok.drop(columns="note"))

    class NoView:
        def to_frame(self):
            return ok

    assert "_repr_html_" in contract_problem(NoView())
