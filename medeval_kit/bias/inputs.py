"""Reading and checking bias inputs: judgments files, the two-order pairwise table, and adapters from
pairwise annotations to judgments-like and per-response score tables."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from medeval_kit.bias._common import legacy_columns, rows_of, user_column_error
from medeval_kit.columns import Columns, apply_columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import DataFileError, SchemaError
from medeval_kit.pairwise import ORDERS, SLOT_LABELS, to_slot, unswap
from medeval_kit.schemas import validate

__all__ = ["read_judgments", "check_pairwise", "pairwise_from_annotations", "pairwise_to_response_scores",
           "VERDICT_TERMS", "MODEL_TERMS", "model_terms", "guess_verdict_terms",
           "verdict_terms_advice", "nothing_left_to_score"]

_TABLE = "judgments"

# --------------------------------------------------------------------------- verdict vocabularies
VERDICT_TERMS = {
    "slot": "the presented slot that won: first, second, tie or neither (any case)",
    "model": "the model that won: A or B as written (upper case), tie or neither",
    "model-any-case": "the model that won: A or B in any case (a, b), tie or neither",
    "arena": "the model that won in Chatbot Arena / MT-bench words: model_a, model_b, tie, tie (bothbad) or "
             "neither (any case)",
}
"""The verdict vocabularies (``verdict_terms`` / ``--verdict-terms``), one meaning each, for every command that
reads pairwise verdicts (``position-bias`` reads all four, ``rank`` the three model vocabularies)."""
MODEL_TERMS = ("model", "model-any-case", "arena")
"""The vocabularies that name the model that won (mapped to ``A``/``B``/``tie``/``neither``)."""

_TERMS_LOOK = {  # how a value in each vocabulary looks, for the advice
    "slot": "slot terms",
    "model": "model terms A/B/tie",
    "model-any-case": "lower-case model terms a/b/tie",
    "arena": "model_a/model_b/tie (the Chatbot Arena / MT-bench words for which model won)",
}
_ARENA = {"model_a": "A", "model_b": "B", "tie (bothbad)": "tie"}


def _model_term(cell: str | None, terms: str) -> str | None:
    """One cell as A/B/tie/neither under ``terms`` (a model vocabulary); None when empty; ``"?"`` when unknown."""
    if cell is None:
        return None
    low = str(cell).strip().lower()
    if low in ("tie", "neither"):
        return low
    if terms == "model":
        return cell if cell in ("A", "B") else "?"
    if terms == "model-any-case":
        return low.upper() if low in ("a", "b") else "?"
    return _ARENA.get(low, "?")


def _check_terms(terms: str, allowed: Collection[str] = tuple(VERDICT_TERMS)) -> None:
    if terms not in allowed:
        from medeval_kit.errors import ParameterError

        raise ParameterError(f"verdict_terms must be one of {list(allowed)} ("
                             + "; ".join(f"{t}: {VERDICT_TERMS[t]}" for t in allowed) + f"); got {terms!r}")


def model_terms(cells, terms: str = "model") -> pd.Series:
    """Verdict cells read in a model vocabulary, as the model terms ``A``, ``B``, ``tie`` or ``neither``.

    Parameters
    ----------
    cells : sequence or pandas.Series
        Verdicts as text (stripped); None or NaN is an empty cell.
    terms : {"model", "model-any-case", "arena"}
        The vocabulary (:data:`VERDICT_TERMS`): ``model`` reads ``A``/``B`` as written, ``model-any-case``
        also ``a``/``b``, ``arena`` reads ``model_a``/``model_b``/``tie (bothbad)``. ``tie`` and ``neither``
        are read in any case in all three.

    Returns
    -------
    pandas.Series
        ``A``, ``B``, ``tie`` or ``neither``; None for an empty cell; ``"?"`` for a value outside the vocabulary.

    Examples
    --------
    >>> list(model_terms(["model_a", "Tie", "tie (bothbad)", "A", None], "arena"))
    ['A', 'tie', 'tie', '?', None]
    """
    _check_terms(terms, MODEL_TERMS)
    s = pd.Series(cells, dtype=object) if not isinstance(cells, pd.Series) else cells.astype(object)
    return pd.Series([_model_term(_cell_text(v), terms) for v in s], index=s.index, dtype=object)


def nothing_left_to_score(failed_cells, cells, terms: str, *, allowed: Collection[str] = tuple(VERDICT_TERMS),
                          cli: bool = True, what: str = "score", n_ties: int = 0) -> str:
    """The message for a verdict column with nothing left to score once the failure tokens are taken out.

    Parameters
    ----------
    failed_cells : iterable of str
        The cells matched by the failure tokens (``failed`` / ``--failed``).
    cells : iterable of str
        Every non-empty cell of the verdict column.
    terms : str
        The vocabulary in use (a name of :data:`VERDICT_TERMS`).
    allowed : collection of str
        The vocabularies the caller accepts.
    cli : bool
        Name the command-line options rather than the function arguments.
    what : str
        What there is nothing left to do ("score", "rank").
    n_ties : int
        Verdicts left that are ties (for ``rank``, where only a win or a loss orders two models).

    Returns
    -------
    str
        Says which tokens took every verdict and, when they are verdicts of a vocabulary, which option reads them.

    Examples
    --------
    >>> nothing_left_to_score(["a", "b"], ["a", "b", "a"], "model", what="rank")[:62]
    'the --failed tokens a, b cover every verdict (3 rows): nothing'
    """
    failed = sorted({str(c) for c in failed_cells if c is not None})
    n = sum(1 for c in cells if c is not None)
    opt = "--failed" if cli else "failed"
    if not failed:
        return (f"every verdict is a tie ({n_ties}): no model ever wins, so there is nothing to {what}" if n_ties
                else f"every verdict is empty (failed parses): nothing is left to {what}")
    which = (f"that names a winner (the other {n_ties} {'is a tie' if n_ties == 1 else 'are ties'})" if n_ties
             else f"({n} rows)")
    msg = (f"the {opt} tokens {', '.join(failed[:8])} cover every verdict {which}: nothing is left to {what}; "
           "failure tokens are the judge's unparsable replies, never its verdicts")
    fits = guess_verdict_terms(failed, allowed)
    if fits:
        how = f"--verdict-terms {fits[0]}" if cli else f"verdict_terms={fits[0]!r}"
        msg += f". {', '.join(map(repr, failed[:8]))} look like {_TERMS_LOOK[fits[0]]}: read them with {how}"
    return msg


def _reads(value: str, terms: str) -> bool:
    """Whether ``terms`` reads ``value`` as a verdict."""
    if terms == "slot":
        return value.strip().lower() in SLOT_LABELS
    return _model_term(value, terms) != "?"


def guess_verdict_terms(values, allowed: Collection[str] = tuple(VERDICT_TERMS)) -> list[str]:
    """The vocabularies (of ``allowed``) in which every one of ``values`` is a verdict, most specific first.

    Parameters
    ----------
    values : iterable of str
        Verdict values (empty cells left out).
    allowed : collection of str
        The vocabularies to try, names of :data:`VERDICT_TERMS`.

    Returns
    -------
    list of str
        In the order ``model``, ``arena``, ``model-any-case``, ``slot``; empty when none reads them all.

    Examples
    --------
    >>> guess_verdict_terms(["model_a", "tie", "model_b"])
    ['arena']
    >>> guess_verdict_terms(["a", "B", "tie"])
    ['model-any-case']
    """
    vals = {str(v) for v in values if v is not None}
    return [t for t in ("model", "arena", "model-any-case", "slot")
            if t in allowed and vals and all(_reads(v, t) for v in vals)]


def verdict_terms_advice(unknown, present, terms: str, *, allowed: Collection[str] = tuple(VERDICT_TERMS),
                         cli: bool = True) -> tuple[str, list[str]]:
    """Advice for verdicts outside vocabulary ``terms``: the vocabulary that reads them, and the values no
    vocabulary reads (the only ones that may be parse-failure tokens).

    Parameters
    ----------
    unknown : iterable of str
        The values ``terms`` does not read.
    present : iterable of str
        All the verdict values of the column (to name a vocabulary that reads the whole column).
    terms : str
        The vocabulary in use.
    allowed : collection of str
        The vocabularies the caller accepts.
    cli : bool
        Name the command-line option (``--verdict-terms X``) rather than the argument (``verdict_terms``).

    Returns
    -------
    (str, list of str)
        The advice ("" when no other vocabulary reads any of ``unknown``), and the values of ``unknown``
        that are in no vocabulary, sorted.

    Examples
    --------
    >>> advice, rest = verdict_terms_advice(["model_a", "error"], ["model_a", "tie", "error"], "model")
    >>> advice.endswith("pass --verdict-terms arena"), rest
    (True, ['error'])
    """
    unknown = sorted({str(v) for v in unknown})
    others = [t for t in allowed if t != terms]
    like = [v for v in unknown if any(_reads(v, t) for t in others)]
    rest = [v for v in unknown if v not in like]
    if not like:
        return "", rest
    fits = guess_verdict_terms([v for v in present if v is not None and str(v) not in rest], others) \
        or guess_verdict_terms(like, others)
    shown = ", ".join(map(repr, like[:8])) + (", ..." if len(like) > 8 else "")
    verb = "looks" if len(like) == 1 else "look"
    if not fits:
        return (f"{shown} {verb} like verdicts of several vocabularies mixed in one column ("
                + "; ".join(f"{t}: {VERDICT_TERMS[t]}" for t in allowed) + "): write them in one", rest)
    t = fits[0]
    how = f"pass --verdict-terms {t}" if cli else f"set verdict_terms to {t}"
    return f"{shown} {verb} like {_TERMS_LOOK[t]}: {how}", rest


def _read_raw(path: str | Path, *, text_columns: Collection[str] = (), sep: str | None = None,
              encoding: str | None = None) -> pd.DataFrame:
    """Read a judgments file as it is (CSV, TSV, JSONL, JSON array or Parquet); errors name the file and line.

    ``text_columns`` (e.g. the verdict column) are read from CSV/TSV as written, without pandas' NA
    guessing: only an empty cell is missing, so a judge's literal ``NA`` or ``None`` token stays text.
    ``sep`` / ``encoding``: the CSV/TSV layout, as in :func:`medeval_kit.datasets.read_table`. The
    low-level reader behind :func:`read_judgments` and ``medeval position-bias``.
    """
    from medeval_kit.datasets._io import read_table, sniff_text_file

    try:
        df = read_table(path, sep=sep, encoding=encoding)
        cols = [c for c in dict.fromkeys(text_columns) if c in df.columns]
        suffix = Path(path).suffix.lower()
        if cols and suffix in (".csv", ".tsv", ".txt"):
            lay = sniff_text_file(path, sep=sep, encoding=encoding)
            raw = pd.read_csv(path, sep=lay.sep, encoding=lay.encoding, usecols=cols, dtype=str,
                              keep_default_na=False, na_values=[""])
            for c in cols:
                df[c] = raw[c].astype(object).where(raw[c].notna(), None).to_numpy()
        return df
    except DataFileError:
        raise
    except Exception as exc:  # e.g. pyarrow errors on a corrupt parquet file
        raise DataFileError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None


def _check_columns(df: pd.DataFrame, names: Sequence[str], judge: str | None, criterion: str | None,
                   source: str | None) -> None:
    """Raise when a needed column is missing or the table is empty."""
    missing = [c for c in names if c not in df.columns]
    # judge / criterion may be absent under their default names (one judge, one criterion)
    missing += [c for c, default in ((judge, "judge"), (criterion, "criterion"))
                if c and c not in df.columns and c != default]
    if missing:
        raise SchemaError(_TABLE, missing[0], [], f"missing column(s) {missing}; present: {list(df.columns)}. "
                          "Name the right columns (e.g. --item/--order/--verdict)", source)
    if len(df) == 0:
        raise SchemaError(_TABLE, None, [], "the table is empty", source)


def _check_protocol(d: pd.DataFrame, protocol: str | None, source: str | None) -> None:
    """Raise unless every row has the one protocol ``pairwise`` (when there is a protocol column)."""
    if not protocol or protocol not in d.columns:
        return
    protos = d[protocol].astype(str)
    if protos.nunique() > 1:
        top = "pairwise" if (protos == "pairwise").any() else protos.mode().iloc[0]
        raise SchemaError(_TABLE, protocol, rows_of(protos != top),
                          f"the table mixes protocols {sorted(protos.unique())}; position bias needs "
                          f"one pairwise protocol - filter the rows first", source)
    if protos.iloc[0] != "pairwise":
        raise SchemaError(_TABLE, protocol, rows_of(protos != "pairwise"),
                          f"protocol is {protos.iloc[0]!r}; position bias of two orders needs 'pairwise' "
                          "(use slot_preference for k-slot protocols)", source)


def _check_orders(d: pd.DataFrame, order: str, source: str | None) -> pd.Series:
    """The upper-case order per row; raise unless there are two orders and every pair has both."""
    if d[order].isna().any():
        raise SchemaError(_TABLE, order, rows_of(d[order].isna()), "missing presentation order", source)
    o = d[order].astype(str).str.strip().str.upper()
    orders = sorted(o.unique())
    if len(orders) != 2:
        what = "only one order" if len(orders) == 1 else f"{len(orders)} orders"
        top2 = o.value_counts().index[:2]
        raise SchemaError(_TABLE, order, [] if len(orders) == 1 else rows_of(~o.isin(top2)),
                          f"{what} {orders} found; position bias needs each pair in exactly two orders "
                          "(e.g. AB and BA). For k-slot protocols use slot_preference", source)
    n_orders = o.groupby([d["_judge"], d["_criterion"], d["_item"]]).transform("nunique")
    bad = n_orders < 2
    if bad.any():
        ex = d.loc[bad].iloc[0]
        raise SchemaError(_TABLE, order, rows_of(bad),
                          f"order without its swap: {int(bad.sum())} row(s) have no row in the other order "
                          f"for the same item, judge and criterion (e.g. item {ex['_item']!r}, judge "
                          f"{ex['_judge']!r}, order {o[bad].iloc[0]!r}). Add the swapped call or drop those rows",
                          source)
    return o


def _check_slots(d: pd.DataFrame, slot_verdict: str, source: str | None) -> pd.Series:
    """The lower-case slot verdict per row (None when missing); raise on an unknown verdict."""
    raw = d[slot_verdict]
    slot = raw.map(lambda v: None if pd.isna(v) else str(v).strip().lower())
    bad = slot.notna() & ~slot.isin(SLOT_LABELS)
    if bad.any():
        unknown = sorted({str(v) for v in raw[bad]})[:5]
        hint = ("; this file has a 'slot_verdict' column (--verdict slot_verdict)"
                if "slot_verdict" in d.columns and slot_verdict != "slot_verdict" else "")
        raise SchemaError(_TABLE, slot_verdict, rows_of(bad),
                          f"unknown slot verdict(s) {unknown}; expected presented-slot terms {list(SLOT_LABELS)} "
                          "(NA for a failed parse). Model-terms verdicts (A/B) must be mapped with "
                          "pairwise.to_slot(verdict, order) first" + hint, source)
    return slot


@shared_docs
@takes_columns("item", "judge", "criterion", "order", "slot_verdict", "repeat", "protocol")
def check_pairwise(df: pd.DataFrame, *, source: str | None = None, columns: Columns = None) -> pd.DataFrame:
    """Check a two-order pairwise judgments table; return it with normalised columns, else raise.

    Errors (:class:`SchemaError`, naming ``source``, the column and the 0-based data rows):
    a missing column; more than one protocol; a non-pairwise protocol; a number of distinct orders
    other than two; an (item, judge, criterion) shown in only one order ("order without its swap");
    an unknown slot verdict; a duplicated (item, judge, criterion, order, repeat).

    Parameters
    ----------
    df : DataFrame
        Judgments: ``item, order, slot_verdict`` (first/second/tie/neither, NA for a failed parse) and
        optionally ``judge``, ``criterion`` (absent: one judge, one criterion), ``repeat`` and ``protocol``.
    {source}
    {columns}

    Returns
    -------
    DataFrame
        A copy with ``_judge``, ``_criterion``, ``_item``, ``_order`` (upper-case str), ``_slot`` (lower-case
        slot verdict or NA) and ``_repeat`` columns added.

    Raises
    ------
    SchemaError
        The table fails a check above.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_pairwise
    >>> d = check_pairwise(synthetic_pairwise(n_items=5, seed=0))
    >>> sorted(d["_order"].unique().tolist())
    ['AB', 'BA']
    """
    item, judge, criterion, order, slot_verdict, repeat, protocol = (
        "item", "judge", "criterion", "order", "slot_verdict", "repeat", "protocol")
    judge, criterion = judge or None, criterion or None
    _check_columns(df, (item, order, slot_verdict), judge, criterion, source)
    d = df.reset_index(drop=True).copy()
    _check_protocol(d, protocol, source)
    d["_judge"] = d[judge].astype(str) if judge and judge in d.columns else "judge"
    d["_criterion"] = d[criterion].astype(str) if criterion and criterion in d.columns else "overall"
    d["_item"] = d[item].astype(str)
    d["_order"] = _check_orders(d, order, source)
    d["_slot"] = _check_slots(d, slot_verdict, source)
    has_repeat = bool(repeat and repeat in d.columns)
    d["_repeat"] = d[repeat] if has_repeat else 0
    dup = d.duplicated(["_judge", "_criterion", "_item", "_order", "_repeat"], keep=False)
    if dup.any():
        raise SchemaError(_TABLE, f"{item},{order}" + (f",{repeat}" if has_repeat else ""),
                          rows_of(dup), "duplicate calls: each item, judge, criterion, order and repeat must "
                          "occur once (add a repeat column if the calls are repeats)", source)
    return d


def _unique_mode(df: pd.DataFrame, keys: list[str], value: str) -> pd.Series:
    """Per ``keys`` group: the mode of ``value`` when one value is most frequent, else 0.0 (NaN ignored).

    What ``groupby(keys)[value].agg(lambda v: float(v.mode().iloc[0]) if len(v.mode()) == 1 else 0.0)``
    gives, with counts instead of a Python call per group.

    Parameters
    ----------
    df : DataFrame
        The rows.
    keys : list of str
        The group columns.
    value : str
        The numeric column.

    Returns
    -------
    Series
        Float, indexed by the groups (sorted, as ``groupby`` orders them).
    """
    groups = df.groupby(keys).size().index
    counts = df.dropna(subset=[value]).groupby([*keys, value]).size().rename("_n").reset_index()
    top = counts[counts["_n"] == counts.groupby(keys)["_n"].transform("max")]
    winners = top.groupby(keys)[value].agg(["size", "first"])
    mode = pd.Series(np.where(winners["size"] == 1, winners["first"].astype(float), 0.0), index=winners.index)
    return mode.reindex(groups, fill_value=0.0).astype(float).rename(value)


@shared_docs
@takes_columns("item", "rater", "criterion", "label", "len_a", "len_b")
def pairwise_from_annotations(
    annotations: pd.DataFrame,
    lengths: pd.DataFrame | None = None,
    *,
    shown_order: str = "AB",
    reference_raters: Sequence[str] | None = None,
    order: str | None = None,
    columns: Columns = None,
) -> pd.DataFrame:
    """Turn one-order pairwise ``annotations`` (labels A/B/tie) into a judgments-like frame.

    Parameters
    ----------
    annotations : DataFrame
        ``item, rater, criterion, label`` (A/B/tie/neither; NA for a failed label).
    lengths : DataFrame, optional
        ``item, len_a, len_b`` (e.g. :func:`response_lengths`), joined by item.
    shown_order : {"AB", "BA"}, default "AB"
        The presentation order every annotation was made in (a value, not a column).
    reference_raters : sequence of str, optional
        Raters (e.g. the human annotators) whose majority label per item and criterion is added as
        ``reference_pref``: +1 (A), -1 (B), 0 (tie or no majority), usable as a quality covariate in
        :func:`~medeval_kit.bias.length_bias`.
    order : str, optional
        Deprecated name of ``shown_order``.
    {columns}

    Returns
    -------
    DataFrame
        ``item, judge, criterion, order, verdict, parse_status`` (``failed`` where the label is NA), with
        ``reference_pref`` and ``len_a, len_b`` when asked for.
    """
    if order is not None:
        import warnings

        warnings.warn("pairwise_from_annotations(order=...) is deprecated; use shown_order=", DeprecationWarning,
                      stacklevel=4)
        shown_order = order
    item, rater, criterion, label = "item", "rater", "criterion", "label"
    order = shown_order
    d = pd.DataFrame({
        "item": annotations[item].astype(str).to_numpy(),
        "judge": annotations[rater].astype(str).to_numpy(),
        "criterion": annotations[criterion].astype(str).to_numpy(),
        "order": order,
        "verdict": annotations[label].to_numpy(),
    })
    d["parse_status"] = np.where(d["verdict"].notna(), "ok", "failed")
    if reference_raters:
        ref = d[d["judge"].isin(list(reference_raters)) & d["verdict"].notna()]
        code = ref["verdict"].map({"A": 1.0, "B": -1.0, "tie": 0.0, "neither": 0.0})
        maj = _unique_mode(ref.assign(_c=code), ["item", "criterion"], "_c")
        d = d.merge(maj.rename("reference_pref").reset_index(), on=["item", "criterion"], how="left")
    if lengths is not None:
        ln = lengths.assign(item=lambda x: x["item"].astype(str))
        d = d.merge(ln[["item", "len_a", "len_b"]], on="item", how="left")
    return d


@shared_docs
@takes_columns("item", "rater", "label", "model", "slot")
def pairwise_to_response_scores(
    annotations: pd.DataFrame,
    responses: pd.DataFrame,
    *,
    columns: Columns = None,
) -> pd.DataFrame:
    """Per-response scores from pairwise labels, for :func:`~medeval_kit.bias.self_preference`.

    The response in slot A scores 1 when the rater chose A, 0 when it chose B, 0.5 on a tie (and
    the mirror for slot B); NA labels stay NA. Since all raters judged the same pair, the paired
    difference against peers keeps the opponent fixed.

    Parameters
    ----------
    annotations : DataFrame
        Pairwise labels: ``item, rater, label`` (A/B/tie).
    responses : DataFrame
        The two responses per item: ``item, model, slot`` (A/B).
    {columns}

    Returns
    -------
    DataFrame
        ``item, model, rater, score``: two rows per label.
    """
    item, rater, label, model, slot = "item", "rater", "label", "model", "slot"
    slots = responses[[item, model, slot]].astype({item: str})
    a = slots[slots[slot] == "A"].rename(columns={model: "model_a"}).drop(columns=slot)
    b = slots[slots[slot] == "B"].rename(columns={model: "model_b"}).drop(columns=slot)
    d = annotations[[item, rater, label]].astype({item: str}).merge(a, on=item).merge(b, on=item)
    sa = d[label].map({"A": 1.0, "B": 0.0, "tie": 0.5})
    return pd.concat([
        pd.DataFrame({"item": d[item], "model": d["model_a"], "rater": d[rater], "score": sa}),
        pd.DataFrame({"item": d[item], "model": d["model_b"], "rater": d[rater], "score": 1.0 - sa}),
    ], ignore_index=True)


# --------------------------------------------------------------------------- the user's own judgments file
#: tidy name -> value used when the user's column is absent under its default name
_FILLED = {"judge": "judge", "criterion": "overall", "order": "AB", "repeat": 0}


def _cell_text(v) -> str | None:
    """A verdict cell as stripped text; None for a missing value or a blank cell."""
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return None
    t = str(v).strip()
    return t or None


def _token_list(failed: Collection[str] | str) -> set[str]:
    """Failure tokens from a list or a comma-separated string."""
    parts = failed.split(",") if isinstance(failed, str) else [str(t) for t in failed]
    return {t.strip() for t in parts if t.strip()}


def _verdict_terms(v: pd.Series, order: pd.Series, terms: str, column: str, source: str) -> tuple[pd.Series, pd.Series]:
    """(model-terms verdict, slot verdict) from the user's verdicts in ``terms``; a located error otherwise."""
    if terms not in VERDICT_TERMS:
        raise SchemaError(_TABLE, column, [], f"verdict_terms must be one of {list(VERDICT_TERMS)} ("
                          + "; ".join(f"{t}: {m}" for t, m in VERDICT_TERMS.items()) + f"); got {terms!r}", source)
    if terms == "slot":
        lab = v.map(lambda x: x if x is None else x.lower())
        bad = lab.notna() & ~lab.isin(SLOT_LABELS)
    else:
        lab = model_terms(v, terms).set_axis(v.index)
        bad = lab.eq("?")
    if bad.any():
        unknown = sorted(set(v[bad]))
        advice, rest = verdict_terms_advice(unknown, v.dropna(), terms, cli=False)
        todo = [advice] if advice else []
        if rest:
            todo.append(f"if {', '.join(map(repr, rest[:8]))} mean{'s' if len(rest) == 1 else ''} that the judge's "
                        "reply could not be parsed, count them as failed parses with "
                        f"failed={','.join(rest[:8])!r}")
        expected = list(SLOT_LABELS) if terms == "slot" else VERDICT_TERMS[terms]
        raise SchemaError(_TABLE, column, rows_of(bad), f"unknown verdict(s) {unknown[:8]}; expected "
                          f"{expected} (verdict_terms {terms!r}) or an empty cell; {'; '.join(todo)}", source)
    known = order.isin(ORDERS)
    if terms != "slot":
        need = lab.notna() & ~known
        if need.any():
            raise SchemaError(_TABLE, "order", rows_of(need),
                              f"model-terms verdicts are mapped to presented slots with the order, which must be AB "
                              f"(A shown first) or BA (B shown first); found {sorted(set(order[need]))[:5]}", source)
        return lab, to_slot(lab, order).set_axis(lab.index)
    model = pd.Series([unswap(s, o) if s is not None and k else None for s, o, k in zip(lab, order, known)],
                      index=lab.index, dtype=object)
    return model, lab


@shared_docs
def read_judgments(
    path: str | Path,
    *,
    from_format: str | None = None,
    verdict_terms: str = "model",
    failed: Collection[str] | str = (),
    default_protocol: str = "pairwise",
    sep: str | None = None,
    encoding: str | None = None,
    columns: Columns = None,
    text_columns: Collection[str] | None = None,
    **legacy,
) -> pd.DataFrame:
    """Read your pairwise judgments file as a validated ``judgments`` table with the canonical column names.

    Your ``item, judge, criterion, order, repeat, verdict, parse_status`` columns are mapped by
    ``columns``; ``verdict`` (model terms A/B/tie/neither) and ``slot_verdict`` (first/second/tie/neither)
    are both filled: ``verdict_terms="model"`` means the column names the winning model (mapped to slots
    with the AB/BA order), ``"slot"`` the winning presented slot; ``"model-any-case"`` (a/b too) and
    ``"arena"`` (model_a/model_b/tie) are the other model vocabularies (:data:`VERDICT_TERMS`). Failure
    tokens that leave no verdict naming a winner are an error (nothing left to score). A judge, criterion,
    order or repeat column absent *under its canonical name* (and not mapped) means one judge, one
    criterion (``overall``), one order (``AB``: response A shown first) or one call per order; a column
    named in ``columns`` must exist. Empty verdicts and the ``failed`` tokens are failed parses, never
    ties; a parse-status value other than ok/missing counts as failed. Other columns (lengths, model
    names) are kept. Errors name the file, your column and the rows.

    Parameters
    ----------
    path : str or Path
        The file (CSV, TSV, JSONL, JSON array or Parquet).
    from_format : str, optional
        ``path`` is another tool's results file, read with :func:`medeval_kit.readers.read_format`
        (already tidy; ``columns`` is not used).
    verdict_terms : {"model", "model-any-case", "arena", "slot"}, default "model"
        The vocabulary of the verdict column (:data:`VERDICT_TERMS`).
    failed : str or collection of str, default ()
        Verdict cells that mean a failed parse (a list or a comma-separated string).
    default_protocol : str, default "pairwise"
        The ``protocol`` of every row when the file has no protocol column.
    sep : str, optional
        The CSV/TSV separator, as in :func:`medeval_kit.datasets.read_table`.
    encoding : str, optional
        The text encoding, as in :func:`medeval_kit.datasets.read_table`.
    {columns}
    text_columns : collection of str, optional
        Deprecated: the old low-level ``read_judgments(path, text_columns=...)``, which returns the file as
        it is (those columns read as written); it warns.
    **legacy
        The old per-column keywords of ``user_judgments`` (``item="case_id"`` ...) and its ``protocol=``,
        accepted for one release with a ``DeprecationWarning``; use ``columns`` and ``default_protocol``.

    Returns
    -------
    DataFrame
        The ``judgments`` table (:mod:`medeval_kit.schemas`) with ``verdict``, ``slot_verdict``, ``raw``,
        ``parse_status`` and ``protocol`` filled, and your other columns kept.

    Raises
    ------
    SchemaError
        A mapped column is missing, a verdict is outside the vocabulary, an order is not AB/BA for
        model-terms verdicts, a repeat is not a whole number, or nothing is left to score.
    DataFileError
        The file cannot be read.

    Examples
    --------
    >>> import pandas as pd, tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "calls.csv"
    >>> pd.DataFrame({"case": ["q1", "q1"], "shown": ["AB", "BA"], "winner": ["A", "B"]}).to_csv(p, index=False)
    >>> j = read_judgments(p, columns={"item": "case", "order": "shown", "verdict": "winner"})
    >>> j[["item", "order", "verdict", "slot_verdict"]].values.tolist()
    [['q1', 'AB', 'A', 'first'], ['q1', 'BA', 'B', 'first']]
    """
    import warnings

    if text_columns is not None:
        warnings.warn("read_judgments(path, text_columns=...) (the file as it is) is deprecated; read_judgments "
                      "now returns the validated judgments table (pass columns=)", DeprecationWarning, stacklevel=2)
        return _read_raw(path, text_columns=text_columns, sep=sep, encoding=encoding)
    if "protocol" in legacy:
        warnings.warn("read_judgments(protocol=...) is deprecated; use default_protocol=", DeprecationWarning,
                      stacklevel=2)
        default_protocol = legacy.pop("protocol")
    mapping = legacy_columns("read_judgments", columns, legacy, _READ_ROLES) or {}
    try:
        return _read_judgments(path, from_format, verdict_terms, failed, default_protocol, sep, encoding, mapping)
    except SchemaError as e:
        raise user_column_error(e, mapping) from None


_READ_ROLES = ("item", "judge", "criterion", "order", "repeat", "verdict", "parse_status")


def _read_judgments(path, from_format, verdict_terms, failed, protocol, sep, encoding, mapping) -> pd.DataFrame:
    """:func:`read_judgments` after its keywords are sorted out."""
    src = str(path)
    if from_format:
        from medeval_kit.readers import read_format

        return read_format(from_format, path, table="judgments")
    cols = {t: mapping.get(t, t) for t in _READ_ROLES}
    verdict, repeat = cols["verdict"], cols["repeat"]
    df = _read_raw(path, text_columns=[verdict], sep=sep, encoding=encoding)
    absent = [c for t, c in cols.items() if c not in df.columns and not (c == t and (t in _FILLED or t == "parse_status"))]
    if absent:
        raise SchemaError(_TABLE, absent[0], [], f"column(s) {absent} not found; present: {list(df.columns)}. Map "
                          "your columns with columns={canonical: yours} (item, judge, criterion, order, verdict, "
                          "repeat)", src)
    mine = {c: t for t, c in cols.items() if c in df.columns}
    clash = {t: f"original_{t}" for t in list(cols) + ["slot_verdict", "raw"] if t in df.columns and t not in mine}
    out = apply_columns(df.reset_index(drop=True).rename(columns=clash), {t: c for t, c in cols.items() if c in mine},
                        where=src)
    for t, value in _FILLED.items():
        if t not in out.columns:
            out[t] = value
    for t in ("item", "judge", "criterion"):
        out[t] = out[t].astype(str)
    out["order"] = out["order"].map(lambda o: "" if _cell_text(o) is None else str(o).strip().upper())
    rep = pd.to_numeric(out["repeat"], errors="coerce")
    if rep.isna().any() or (rep % 1 != 0).any():
        raise SchemaError(_TABLE, repeat, rows_of(rep.isna() | (rep % 1 != 0)), "repeat must be a whole number", src)
    out["repeat"] = rep.astype("int64")
    cells = out["verdict"].map(_cell_text)
    is_failed = cells.isin(_token_list(failed))
    text = pd.Series([None if f else c for c, f in zip(cells, is_failed)], index=out.index, dtype=object)
    out["verdict"], out["slot_verdict"] = _verdict_terms(text, out["order"], verdict_terms, verdict, src)
    if not out["verdict"].isin(["A", "B"]).any() and (is_failed.any() or text.isna().all()):  # only ties left
        raise SchemaError(_TABLE, verdict, [], nothing_left_to_score(
            cells[is_failed], cells.dropna(), verdict_terms, cli=False, n_ties=int(text.notna().sum())), src)
    status = (out["parse_status"].map(lambda s: s if s in ("ok", "missing") else "failed")
              if "parse_status" in out.columns else pd.Series("ok", index=out.index))
    out["parse_status"] = status.where(text.notna() | status.eq("missing"), "failed").where(~is_failed, "failed")
    if "raw" not in out.columns:
        out["raw"] = cells.astype(object)
    if "protocol" not in out.columns:
        out["protocol"] = protocol
    validate(out, "judgments", source=src)
    return out
