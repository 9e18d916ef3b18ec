"""Columns that always work: one ``columns=`` mapping reaches every part of every public function.

Every example of ``tests/api_examples`` whose function reads tables (``@takes_columns``) runs twice:
on the shared tables as they are, and on the same tables with every canonical column renamed and
``columns=`` mapping them back. The results must be equal. No public function takes a per-column
keyword (``item="item"``) any more, except through the deprecated path of ``@takes_columns``.
What is not there yet is listed in ``tests/api_debt/<package>.txt`` as ``columns <package>.<name>``.
"""

from __future__ import annotations

import inspect
import warnings

import pandas as pd
import pytest

from medeval_kit.columns import ColumnError, apply_columns, column_roles, known_columns, takes_columns
from tests.api_examples import Tables, examples
from tests.api_surface import PACKAGES, public, ratchet


def _frame(result):
    return result.to_frame() if hasattr(result, "to_frame") else result


def _column_keywords(obj) -> list[str]:
    """Parameters that name a column the old way: a known column name with a string default."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    known = known_columns()
    return [n for n, p in sig.parameters.items()
            if n.endswith("_col") or n in known and isinstance(p.default, str) and (p.default == n or p.default in known)]


def _failing() -> dict[str, str]:
    canonical, renamed = Tables(), Tables(renamed=True)
    out = {}
    for package in PACKAGES:
        calls, _ = examples(package)
        for name, obj in public(package).items():
            key = f"{package}.{name}"
            old = _column_keywords(obj)
            if old:
                out[key] = f"takes per-column keywords {old}; take columns= (medeval_kit.columns)"
                continue
            if not column_roles(obj) or name not in calls:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = _frame(calls[name](canonical))
                try:
                    got = _frame(calls[name](renamed))
                except Exception as e:  # noqa: BLE001 - any failure under renamed columns is the finding
                    out[key] = f"fails with renamed columns: {type(e).__name__}: {e}"
                    continue
            try:
                if isinstance(want, pd.DataFrame):
                    pd.testing.assert_frame_equal(got, want)
                else:
                    assert got == want
            except AssertionError as e:
                out[key] = f"differs with renamed columns: {str(e)[:300]}"
    return out


def test_renamed_columns_give_the_canonical_results():
    problems = ratchet("columns", _failing())
    assert not problems, "\n".join(problems)


def test_every_column_reading_statistic_has_an_example():
    missing = []
    for package in PACKAGES:
        calls, other = examples(package)
        missing += [f"{package}.{n}" for n, obj in public(package).items()
                    if column_roles(obj) and n not in calls and n not in other]
    assert not missing, missing


@takes_columns("item", "label")
def _count(df, *, columns=None):
    return df.groupby("item")["label"].count()


def test_takes_columns_renames_and_keeps_the_old_keywords_for_one_release():
    df = pd.DataFrame({"q": ["a", "a", "b"], "lab": [1, 2, 3]})
    want = _count(df.rename(columns={"q": "item", "lab": "label"}))
    pd.testing.assert_series_equal(_count(df, columns={"item": "q", "label": "lab"}), want)
    with pytest.warns(DeprecationWarning, match=r"columns=\{'item': 'q'"):
        pd.testing.assert_series_equal(_count(df.rename(columns={"lab": "label"}), item="q"), want)
    assert column_roles(_count) == ("item", "label")


def test_the_mapping_wins_and_errors_name_the_problem():
    df = pd.DataFrame({"q": ["a"], "item": ["b"], "label": [1]})
    assert apply_columns(df, {"item": "q"}).to_dict("list") == {"item": ["a"], "label": [1]}
    with pytest.raises(ColumnError, match="'kase' \\(for 'item'\\), which no table given has"):
        _count(df, columns={"item": "kase"})
    assert _count(df, columns={"item": "q", "criterion": "crit"}).to_dict() == {"a": 1}  # optional, absent
    with pytest.warns(DeprecationWarning, match="leave \\['label'\\] out"):
        assert list(_columns_seen(df, label=None)) == ["q", "item"]
    with pytest.raises(ColumnError, match="no table uses: \\['itme'\\]"):
        apply_columns(df, {"itme": "q"})
    with pytest.raises(ColumnError, match="mapping"):
        _count(df, columns=["item"])
    assert apply_columns(df, None) is df


@takes_columns("item", "label")
def _columns_seen(df, *, columns=None):
    return df.columns


def test_the_equality_check_can_fail():
    @takes_columns("item")
    def forgets(df, *, columns=None):
        return pd.DataFrame({"n": [len(df.columns.intersection(["item"]))]})

    canonical = forgets(pd.DataFrame({"item": [1]}))
    partial = forgets(pd.DataFrame({"x": [1]}), columns={"label": "x"})  # a key this function does not read
    with pytest.raises(AssertionError):
        pd.testing.assert_frame_equal(partial, canonical)
