"""Input checks: a long annotations table becomes an item x rater code matrix (:class:`Data`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from medeval_kit.errors import MedevalError, SchemaError

__all__ = ["AgreementError", "LabelOrderError", "UnknownLabelError", "DuplicateLabelError", "Data", "LEVELS",
           "MAX_CATEGORIES", "prepare", "infer_categories", "count_matrix", "check_overlap"]

LEVELS = ("nominal", "ordinal", "interval", "ratio")
MAX_CATEGORIES = 200
"""More distinct labels than this at a nominal or ordinal level is refused (see :func:`prepare`)."""


class AgreementError(MedevalError, ValueError):
    """Agreement input that cannot be analysed (no overlap, unknown rater, bad parameter)."""


class LabelOrderError(SchemaError):
    """The measurement level needs an order (or numbers) the labels do not give.

    Structured for callers that re-word it (the CLI): ``level``; ``need`` is ``"order"`` (text labels
    without a declared order), ``"numbers"`` (interval/ratio with text labels) or ``"increasing"``
    (declared numeric categories not increasing); ``labels`` the labels found; ``declared`` the
    categories given (or None).
    """

    def __init__(self, column, problem, source, *, level: str, need: str, labels=(), declared=None):
        super().__init__("annotations", column, [], problem, source)
        self.level, self.need, self.labels = level, need, list(labels)
        self.declared = None if declared is None else list(declared)


class UnknownLabelError(SchemaError):
    """Labels outside the declared categories: ``labels`` (the unknown ones, up to 5), ``declared``."""

    def __init__(self, column, rows, problem, source, *, labels, declared):
        super().__init__("annotations", column, rows, problem, source)
        self.labels, self.declared = list(labels), list(declared)


class DuplicateLabelError(SchemaError):
    """A rater labelled an item twice: ``item`` and ``rater`` (the columns), ``example`` one (item, rater) pair."""

    def __init__(self, rows, problem, source, *, item: str, rater: str, example: tuple):
        super().__init__("annotations", f"{item},{rater}", rows, problem, source)
        self.item, self.rater, self.example = item, rater, tuple(example)


@dataclass
class Data:
    """Labels as an item x rater code matrix (-1 = missing)."""

    codes: np.ndarray
    items: np.ndarray
    raters: list
    categories: list
    level: str
    n_missing: int
    values: np.ndarray | None = None  # numeric value of each category (interval/ratio/ordinal)
    _groups: tuple[np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def K(self) -> int:
        """The number of categories."""
        return len(self.categories)

    def col(self, rater) -> np.ndarray:
        """The codes of one rater."""
        return self.codes[:, self.raters.index(rater)]

    def numbers(self) -> np.ndarray:
        """Item x rater matrix of category values (positions when the labels are not numbers), NaN if missing."""
        v = self.values if self.values is not None else np.arange(self.K, dtype=float)
        out = np.full(self.codes.shape, np.nan)
        ok = self.codes >= 0
        out[ok] = v[self.codes[ok]]
        return out

    def row_groups(self) -> tuple[np.ndarray, np.ndarray]:
        """(groups, first): items with the same labels from every rater share a group; ``first`` is one item
        per group (computed once; see :func:`medeval_kit.agreement.engine.compact`)."""
        if self._groups is None:
            from medeval_kit.agreement.engine import row_groups

            self._groups = row_groups(self.codes)
        return self._groups

    def subset(self, raters: Sequence) -> Data:
        """The same items restricted to ``raters`` (in that order)."""
        codes = self.codes[:, [self.raters.index(r) for r in raters]]
        return replace(self, codes=codes, raters=list(raters), n_missing=int((codes < 0).sum()))


def check_overlap(data: Data, a, b) -> None:
    """Raise AgreementError when raters ``a`` and ``b`` share no labelled item."""
    if not ((data.col(a) >= 0) & (data.col(b) >= 0)).any():
        raise AgreementError(
            f"raters {a!r} and {b!r} have no overlapping items (no item labelled by both); "
            "check the rater names or choose raters that share items"
        )


def count_matrix(codes: np.ndarray, K: int) -> np.ndarray:
    """Per-item label counts (n_items, K)."""
    n = codes.shape[0]
    ok = codes >= 0
    cells = (np.arange(n)[:, None] * K + codes)[ok]
    return np.bincount(cells, minlength=n * K).reshape(n, K).astype(float)


def is_numeric(vals) -> bool:
    """True when every value is a (non-boolean) number."""
    vals = list(vals)
    return len(vals) > 0 and all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) for v in vals
    )


# --------------------------------------------------------------------------- categories


def infer_categories(s: pd.Series, categories, level: str, label: str, source=None) -> list:
    """Return the ordered category list; raise SchemaError for out-of-order ordinal levels."""
    if categories is not None:
        return _declared(s, list(categories), level, label, source)
    dtype = s.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        cats = list(dtype.categories)
        if level == "ordinal" and not dtype.ordered and not is_numeric(cats):
            raise LabelOrderError(
                label, "level='ordinal' needs an order: pass categories=[low, ..., high] or an ordered Categorical",
                source, level=level, need="order", labels=cats,
            )
        return cats
    uniq = pd.unique(s.dropna())
    if is_numeric(uniq):
        return sorted(uniq.tolist())
    if level != "nominal":
        shown = sorted(map(str, uniq))
        raise LabelOrderError(
            label,
            f"level={level!r} needs ordered or numeric labels; got text labels {shown[:6]}. "
            "Pass categories=[low, ..., high] in order.", source,
            level=level, need="order" if level == "ordinal" else "numbers", labels=shown,
        )
    return sorted(uniq.tolist(), key=str)


def _declared(s: pd.Series, cats: list, level: str, label: str, source) -> list:
    """Check declared categories: no duplicates, and for ordered levels one consistent increasing order."""
    if len(set(map(repr, cats))) != len(cats):
        raise SchemaError("annotations", label, [], f"declared categories contain duplicates: {cats}", source)
    if level not in ("ordinal", "interval", "ratio"):
        return cats
    dtype = s.dtype
    if isinstance(dtype, pd.CategoricalDtype) and dtype.ordered:
        order = [c for c in dtype.categories if c in cats]
        if order != [c for c in cats if c in set(dtype.categories)]:
            raise SchemaError(
                "annotations", label, [],
                f"ordinal levels out of order: declared {cats} but the ordered Categorical says "
                f"{list(dtype.categories)}; pass the categories in one consistent order", source,
            )
    num = pd.to_numeric(pd.Series(cats), errors="coerce")
    if num.notna().all() and not num.is_monotonic_increasing:
        bad = int(np.flatnonzero(np.diff(num.to_numpy()) <= 0)[0]) + 1
        raise LabelOrderError(
            label,
            f"ordinal levels out of order: declared categories {cats} are not increasing "
            f"(position {bad}: {cats[bad]!r} after {cats[bad - 1]!r}); list them low to high", source,
            level=level, need="increasing", labels=[cats[bad - 1], cats[bad]], declared=cats,
        )
    return cats


# --------------------------------------------------------------------------- the code matrix


def prepare(
    df: pd.DataFrame,
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    raters: Sequence | None = None,
    categories: Sequence | None = None,
    level: str = "nominal",
    source: str | None = None,
    criterion: str | None = "criterion",
) -> Data:
    """Check a long annotations table and return its :class:`Data` code matrix."""
    df = _checked_frame(df, item, rater, label, level, source, criterion)
    if raters is not None:
        raters = list(raters)
        df = _only_raters(df, raters, rater)
    _no_duplicates(df, item, rater, source)
    cats = infer_categories(df[label], categories, level, label, source)
    _not_free_text(cats, level, label, source)
    code = _encode(df, label, cats, source)
    r_order = raters if raters is not None else sorted(df[rater].unique().tolist(), key=str)
    ii, items = pd.factorize(df[item], sort=True)
    rr = pd.Index(r_order).get_indexer(df[rater])
    codes = np.full((len(items), len(r_order)), -1, dtype=np.int64)
    codes[ii, rr] = code
    values = _category_values(cats, level, label, source)
    return Data(codes, np.asarray(items, dtype=object), list(r_order), cats, level, int((codes < 0).sum()), values)


def _checked_frame(df, item, rater, label, level, source, criterion) -> pd.DataFrame:
    """The table after the checks on its shape; row numbers kept for error messages."""
    if level not in LEVELS:
        raise AgreementError(f"level must be one of {LEVELS}; not {level!r}.")
    if not isinstance(df, pd.DataFrame):
        raise SchemaError("annotations", None, [], f"expected a DataFrame, got {type(df).__name__}", source)
    for c in (item, rater, label):
        if c not in df.columns:
            raise SchemaError("annotations", c, [], f"column {c!r} not found; present: {list(df.columns)}", source)
    if criterion and criterion in df.columns and df[criterion].nunique(dropna=True) > 1:
        raise AgreementError(
            f"column {criterion!r} holds several criteria {sorted(map(str, df[criterion].unique()))[:5]}; "
            "filter to one, or use agreement_table(..., by=['criterion'])."
        )
    if not (df.index.is_unique and pd.api.types.is_integer_dtype(df.index.dtype)):
        df = df.reset_index(drop=True)  # error messages quote these row numbers
    return df


def _only_raters(df: pd.DataFrame, raters: list, rater: str) -> pd.DataFrame:
    """The rows of ``raters`` (original row numbers kept); unknown raters raise AgreementError."""
    known = set(df[rater].unique())
    unknown = [r for r in raters if r not in known]
    if unknown:
        raise AgreementError(f"rater(s) {unknown} not found in column {rater!r}; known raters: {sorted(map(str, known))}")
    return df[df[rater].isin(raters)]


def _no_duplicates(df: pd.DataFrame, item: str, rater: str, source) -> None:
    dup = df.duplicated([item, rater], keep=False)
    if dup.any():
        first = df.loc[dup, [item, rater]].iloc[0].tolist()
        raise DuplicateLabelError(
            [int(i) for i in df.index[dup.to_numpy()]],
            f"duplicate ({item}, {rater}) rows, e.g. item {first[0]!r} rater {first[1]!r}: each rater may label "
            "each item once; filter by criterion or drop repeats", source, item=item, rater=rater, example=first,
        )


def _not_free_text(cats: list, level: str, label: str, source) -> None:
    if level in ("nominal", "ordinal") and len(cats) > MAX_CATEGORIES:
        # Pairwise features are K x K per item: thousands of "categories" would need hundreds of GiB.
        shown = ", ".join(repr(str(c))[:40] for c in cats[:3])
        raise SchemaError(
            "annotations", label, [],
            f"{len(cats)} distinct labels (e.g. {shown}, ...): agreement needs categories, and more than "
            f"{MAX_CATEGORIES} look like free text or an id column. Point the label option at the column with "
            "the verdicts, or map the labels to categories first (numeric scores: use an interval level)", source,
        )


def _encode(df: pd.DataFrame, label: str, cats: list, source) -> np.ndarray:
    """Category code of every row (-1 = missing); labels outside ``cats`` raise SchemaError."""
    lab = df[label]
    if isinstance(lab.dtype, pd.CategoricalDtype):
        lab = lab.astype(object)
    seen, uniq = pd.factorize(lab, use_na_sentinel=True)  # the lookup runs once per distinct label
    lookup = {_key(c): i for i, c in enumerate(cats)}
    to_code = np.array([lookup.get(_key(v), -2) for v in uniq] + [-1], dtype=np.int64)  # last: missing
    code = to_code[seen]
    bad = code == -2
    if bad.any():
        unknown = sorted({str(v) for v in lab[bad]})[:5]
        raise UnknownLabelError(label, [int(i) for i in df.index[bad]],
                                f"label(s) {unknown} outside the declared categories {cats}", source,
                                labels=unknown, declared=cats)
    return code


def _category_values(cats: list, level: str, label: str, source) -> np.ndarray | None:
    """Numeric value of each category (None for nominal text labels)."""
    values = None
    if level != "nominal" or is_numeric(cats):
        num = pd.to_numeric(pd.Series(cats), errors="coerce")
        if num.notna().all():
            values = num.to_numpy(dtype=float)
        elif level in ("interval", "ratio"):
            raise LabelOrderError(label, f"level={level!r} needs numeric labels; got {cats[:6]}", source,
                                  level=level, need="numbers", labels=cats)
        else:
            values = np.arange(len(cats), dtype=float)
    if level == "ratio" and values is not None and (values < 0).any():
        raise SchemaError("annotations", label, [], "level='ratio' needs non-negative values", source)
    return values


def _key(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)) and float(v).is_integer():
        return int(v)
    return v
