"""Schema validation: every bad input gets an error naming the table, column and rows."""

import numpy as np
import pandas as pd
import pytest

from medeval_kit.schemas import SCHEMAS, SchemaError, validate


def annotations(**over):
    df = pd.DataFrame({
        "item": ["1", "1", "2"], "rater": ["a", "b", "a"], "rater_kind": ["human"] * 3,
        "criterion": ["overall"] * 3, "label": ["A", "B", None],
    })
    for k, v in over.items():
        df[k] = v
    return df


def test_valid_table_passes_unchanged():
    df = annotations()
    assert validate(df, "annotations") is df


def test_missing_column_is_named():
    with pytest.raises(SchemaError, match=r"table 'annotations', column 'rater'.*missing required column"):
        validate(annotations().drop(columns="rater"), "annotations", source="my.csv")


def test_error_names_source_file():
    with pytest.raises(SchemaError, match=r"^my\.csv: table 'annotations'"):
        validate(annotations().drop(columns="rater"), "annotations", source="my.csv")


def test_unknown_label_names_rows_and_values():
    df = annotations(label=["A", "C", "B"])
    with pytest.raises(SchemaError) as exc:
        validate(df, "annotations", categories={"label": ["A", "B", "tie"]})
    assert exc.value.column == "label" and exc.value.rows == [1]
    assert "unknown label(s) ['C']" in str(exc.value)


def test_duplicate_keys_are_reported_with_all_rows():
    df = annotations(item=["1", "1", "1"], rater=["a", "b", "a"])
    with pytest.raises(SchemaError, match="duplicate keys") as exc:
        validate(df, "annotations")
    assert exc.value.rows == [0, 2]


def test_empty_table():
    with pytest.raises(SchemaError, match="empty"):
        validate(annotations().iloc[:0], "annotations")


def test_no_silent_coercion_of_numbers_to_strings():
    df = annotations(item=[1, 1, 2])
    with pytest.raises(SchemaError, match="expected str values") as exc:
        validate(df, "annotations")
    assert exc.value.column == "item"


def test_disallowed_rater_kind_and_null_in_required():
    with pytest.raises(SchemaError, match="rater_kind"):
        validate(annotations(rater_kind=["human", "robot", "llm"]), "annotations")
    with pytest.raises(SchemaError, match="missing values are not allowed") as exc:
        validate(annotations(rater=["a", None, "b"]), "annotations")
    assert exc.value.rows == [1]


def test_rounds_types():
    df = pd.DataFrame({"item": ["x"], "round": [1], "component": ["context"], "aspect": ["total"],
                       "score": [np.nan], "max_score": [1.0], "stop": [True], "best": [True]})
    validate(df, "rounds")
    with pytest.raises(SchemaError, match="column 'round'.*expected int"):
        validate(df.assign(round=[1.5]), "rounds")
    with pytest.raises(SchemaError, match="column 'stop'.*expected bool"):
        validate(df.assign(stop=["yes"]), "rounds")


def test_judgments_parse_status_and_protocol():
    df = pd.DataFrame({"item": ["x"], "judge": ["j"], "protocol": ["pairwise"], "criterion": ["c"],
                       "order": ["AB"], "repeat": [0], "raw": ["??"], "verdict": [None],
                       "parse_status": ["failed"]})
    validate(df, "judgments")
    with pytest.raises(SchemaError, match="parse_status"):
        validate(df.assign(parse_status=["tie"]), "judgments")
    with pytest.raises(SchemaError, match="protocol"):
        validate(df.assign(protocol=["vibes"]), "judgments")


def test_every_schema_documents_its_columns():
    for name, schema in SCHEMAS.items():
        d = schema.describe()
        assert list(d["column"]) == [c.name for c in schema.columns]
        assert set(schema.key) <= set(d["column"]), name


def test_the_duplicate_key_check_agrees_with_pandas_on_random_tables():
    """validate's set-of-tuples shortcut must report a duplicate key exactly when ``DataFrame.duplicated`` does,
    on text keys of object and string dtype and integer keys (every key column is required and never missing,
    so a table with a missing key fails before the check)."""
    rng = np.random.default_rng(7)
    pools = {"str": ["a", "b", "c", None], "int": [0, 1, 2], "float": [0.0, -0.0, 1.5, np.nan], "bool": [True, False]}
    seen = {"duplicate": 0, "unique": 0}
    for _ in range(600):
        table = str(rng.choice(sorted(SCHEMAS)))
        schema = SCHEMAS[table]
        n = int(rng.choice([1, 2, 3, 5, 8]))
        cols = {}
        for c in schema.columns:
            if not (c.required or rng.random() < 0.7) or c.kind not in pools:
                continue
            pool = [v for v in pools[c.kind] if c.nullable or not pd.isna(v)]
            values = [pool[i] for i in rng.integers(0, len(pool), n)]
            cols[c.name] = pd.Series(values, dtype=object if c.kind == "str" and rng.random() < 0.5 else None)
        df = pd.DataFrame(cols)
        expected = bool(df.duplicated(list(schema.key)).any()) if set(schema.key) <= set(df.columns) else None
        try:
            validate(df, table)
            got = False
        except SchemaError as exc:
            if "duplicate keys" not in str(exc):
                continue  # another check failed first
            got = True
        except KeyError:
            got = None
        assert got == expected, (table, df.to_dict("list"))
        seen["duplicate" if got else "unique"] += got is not None
    assert min(seen.values()) > 100, seen


def test_a_large_table_is_checked_by_duplicated_and_names_the_rows():
    """Over 10,000 rows the key check skips the set of tuples (its memory) and DataFrame.duplicated decides."""
    n = 12_000
    df = pd.DataFrame({"item": [str(i) for i in range(n)], "rater": "a", "rater_kind": "human", "criterion": "overall",
                       "label": "A"})
    assert validate(df, "annotations") is df
    df.loc[n - 1, "item"] = "7"
    with pytest.raises(SchemaError, match="duplicate keys") as exc:
        validate(df, "annotations")
    assert exc.value.rows == [7, n - 1]


def test_the_allowed_values_check_agrees_with_isin_on_random_columns(monkeypatch):
    """Up to 10,000 rows the allowed values are checked with a set; it must find the same rows and values as
    ``Series.isin`` (the check on larger tables): numbers equal across types (1 == 1.0 == True), every kind of
    missing value skipped, an unhashable cell an unknown value."""
    from medeval_kit import schemas

    rng = np.random.default_rng(11)
    pool = ["A", "B", "tie", "a", 1, 1.0, True, 0, False, 2.5, None, np.nan, pd.NA, ["A"], ("A",)]
    allowed_pool = ["A", "B", "tie", 1, 0.0, 2.5, ("A",)]

    def outcome(s, allowed):
        try:
            schemas._check_allowed(s, "judgments", "verdict", allowed, None)
            return None
        except SchemaError as exc:
            return exc.rows, str(exc)

    seen = {"ok": 0, "bad": 0}
    for _ in range(400):
        n = int(rng.integers(1, 9))
        values = [pool[i] for i in rng.integers(0, len(pool), n)]
        s = pd.Series(values, dtype=object) if rng.random() < 0.7 else pd.Series(
            [v if isinstance(v, str) else None for v in values], dtype="str")
        allowed = tuple(allowed_pool[i] for i in rng.choice(len(allowed_pool), int(rng.integers(1, 5)), replace=False))
        small = outcome(s, allowed)
        with monkeypatch.context() as m:
            m.setattr(schemas, "_SET_CHECK_ROWS", 0)
            large = outcome(s, allowed)
        assert small == large, (values, allowed)
        seen["ok" if small is None else "bad"] += 1
    assert min(seen.values()) > 50, seen


def test_a_readers_table_is_validated_as_validate_would():
    """Readers pass the columns they built the table from (no lookup per column): the same errors, rows and
    table as ``validate`` on the finished DataFrame."""
    from medeval_kit.schemas import _validate

    base = {"item": ["1", "2", "2"], "rater": ["a", "a", "a"], "rater_kind": ["human", "human", "llm"],
            "criterion": ["overall"] * 3, "label": ["A", "B", "C"]}
    cases = [base, {**base, "rater_kind": ["human", "robot", "llm"]}, {**base, "item": ["1", "1", "2"],
             "rater_kind": ["human"] * 3}, {**base, "label": [None, "B", "A"]}, {k: v for k, v in base.items()
             if k != "rater"}, {**base, "item": [1, 2, 3]}]
    for cols in cases:
        for categories in (None, {"label": ["A", "B"]}):
            index = pd.RangeIndex(3)
            data = {k: pd.Series(v, index=index, dtype=object) for k, v in cols.items()}
            df = pd.DataFrame(data, index=index, copy=False)
            results = []
            for columns in (None, data):
                try:
                    results.append(("ok", _validate(df, "annotations", categories=categories, columns=columns) is df))
                except SchemaError as exc:
                    results.append(("error", exc.column, exc.rows, str(exc)))
            try:
                results.append(("ok", validate(df, "annotations", categories=categories) is df))
            except SchemaError as exc:
                results.append(("error", exc.column, exc.rows, str(exc)))
            assert results[0] == results[1] == results[2], (cols, categories, results)
