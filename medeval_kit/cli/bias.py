"""``medeval position-bias FILE``: position bias of a pairwise judge's two-order judgments file."""

from __future__ import annotations

import json
import sys
from collections.abc import Collection

import numpy as np
import pandas as pd

from medeval_kit.bias import position_bias, position_bias_wide
from medeval_kit.bias._common import rows_of
from medeval_kit.bias.inputs import VERDICT_TERMS, _read_raw, model_terms, nothing_left_to_score, verdict_terms_advice
from medeval_kit.cli.inputs import add_file_options
from medeval_kit.errors import DataFileError, SchemaError
from medeval_kit.pairwise import ORDERS, SLOT_LABELS, to_slot

_TABLE = "judgments"
_WIDE_METRICS = ("consistency", "flip_rate", "first_slot_rate")


def register_cli(subparsers) -> None:
    """Add ``medeval position-bias FILE ...`` to the ``medeval`` command."""
    from medeval_kit.readers import add_from_option

    p = subparsers.add_parser(
        "position-bias",
        help="consistency, flip rate and first-slot preference of a pairwise judge (both orders)",
        description="Position bias of pairwise judgments holding both presentation orders. The verdict "
                    "column is in presented-slot terms by default: first, second or tie (neither is also "
                    "accepted); with --verdict-terms model, model-any-case or arena it says which model won (A, "
                    "B, tie, neither; also a, b; or model_a, model_b, tie) and is mapped to the presented slot "
                    "with the order column (AB = A shown first, BA = B shown first). An empty cell, or a token "
                    "passed with --failed, is a parse failure: counted in n_failed, never a tie; any other value "
                    "is an error naming the rows. With --from FORMAT, "
                    "FILE is another tool's results file (e.g. --from mtbench gpt-4_pair.jsonl).",
    )
    p.add_argument("file", metavar="FILE",
                   help="judgments file: .csv, .tsv, .jsonl, .json or .parquet; or with --from another tool's "
                        "results file")
    add_from_option(p, "judgments")
    add_file_options(p)
    p.add_argument("--item", default="item", help="item (pair) id column [item]")
    p.add_argument("--judge", default="judge", help="judge column [judge; absent = one judge]")
    p.add_argument("--order", default="order",
                   help="presentation order column, two values [order]; AB and BA with --verdict-terms model")
    p.add_argument("--verdict", default=None,
                   help="verdict column, read as text exactly as written (a literal NA is a token, not a missing "
                        "value) [verdict]")
    p.add_argument("--verdict-terms", choices=tuple(VERDICT_TERMS), default=None,
                   help="the verdicts' vocabulary. " + "; ".join(f"{t}: {m}" for t, m in VERDICT_TERMS.items())
                        + ". The model vocabularies are mapped to slots with --order (AB/BA) [slot; with --from: "
                        "model, the tidy verdict column]")
    p.add_argument("--failed", nargs="+", default=None, metavar="TOKEN",
                   help="verdict values that mean the judge's output could not be parsed, e.g. --failed error NA "
                        "unparsed: counted as failed parses (parse_status 'failed', n_failed), never ties")
    p.add_argument("--criterion", default="criterion",
                   help="criterion column [criterion; absent = one criterion 'overall']")
    p.add_argument("--repeat", default="repeat", help="repeat column, if calls are repeated [repeat]")
    p.add_argument("--parse-status", default="parse_status", help="parse status column; non-'ok' = failed")
    p.add_argument("--n-boot", type=int, default=1000,
                   help="bootstrap replicates over items for the CIs (respects calls clustered in items); "
                        "0 = exact binomial CIs [1000]")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed [0]")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table", help="output format [table]")
    p.set_defaults(func=_cli_position_bias)


def _text_or_none(v) -> str | None:
    """A verdict cell as stripped text; None for a missing value or an empty / blank cell."""
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return None
    t = str(v).strip()
    return t or None


def _unknown_verdicts_error(d: pd.DataFrame, text: pd.Series, bad: np.ndarray, *, verdict: str, terms: str,
                            order: str, source: str) -> SchemaError:
    """The located error for verdicts that are neither the expected terms nor --failed tokens, saying what to do:
    the --verdict-terms vocabulary that reads them, and --failed only for values that are in no vocabulary."""
    expected = f"{VERDICT_TERMS[terms]} (--verdict-terms {terms})"
    unknown = sorted(set(text[bad]))
    shown = unknown[:8] + (["..."] if len(unknown) > 8 else [])
    advice, rest = verdict_terms_advice(unknown, text.dropna(), terms)
    todo = []
    if advice:
        if not advice.endswith(("--verdict-terms slot", "write them in one")):  # a model vocabulary
            advice += (f" to map them to the presented slots with the order column {order!r} (AB = A shown first, "
                       "BA = B shown first)")
        if terms == "slot" and "slot_verdict" in d.columns and verdict != "slot_verdict":
            advice += ", or use this file's slot_verdict column (--verdict slot_verdict)"
        todo.append(advice)
    if rest:
        one = len(rest) == 1
        todo.append(f"if {', '.join(map(repr, rest[:8]))} mean{'s' if one else ''} that the judge's output could "
                    f"not be parsed, count {'it as a failed parse' if one else 'them as failed parses'} with "
                    f"--failed {' '.join(rest[:8])}")
    failed = ", or a --failed token" if rest else ""  # never offered for values that are verdicts
    return SchemaError(_TABLE, verdict, rows_of(bad), f"unknown verdict(s) {shown}; expected {expected}, an empty "
                       f"cell for a failed parse{failed}. {'; '.join(todo)}", source)


def _model_terms_to_slots(d: pd.DataFrame, text: pd.Series, order: str, source: str, terms: str = "model") -> pd.Series:
    """Model-terms verdicts (A/B/tie/neither) mapped to presented slots with the AB/BA ``order`` column; else a
    located error."""
    if order not in d.columns:
        raise SchemaError(_TABLE, order, [], f"missing column {order!r}; present: {list(d.columns)}. --verdict-terms "
                          f"{terms} maps the winning model to the presented slots with the presentation-order column "
                          "(AB / BA): name it with --order", source)
    o = d[order].map(lambda v: None if _text_or_none(v) is None else str(v).strip().upper())
    bad = ~o.isin(ORDERS).to_numpy()
    if bad.any():
        found = sorted({str(v) for v in d.loc[bad, order]})[:5]
        raise SchemaError(_TABLE, order, rows_of(bad),
                          f"--verdict-terms {terms} maps the winning model to the presented slots with the order, "
                          "which must be "
                          f"AB (A shown first) or BA (B shown first); found {found}. Use --verdict-terms slot "
                          "for verdicts that name the presented slot (first/second)", source)
    return to_slot(text, o)


def _mark_failed(d: pd.DataFrame, cells: list, is_failed: np.ndarray, parse_status: str, source: str) -> None:
    """Set ``parse_status`` to ``failed`` on the --failed token rows (in place) and say how many on stderr."""
    if not is_failed.any():
        return
    counts = pd.Series([v for v, f in zip(cells, is_failed) if f], dtype=object).value_counts()
    if parse_status not in d.columns:
        d[parse_status] = "ok"
    d[parse_status] = d[parse_status].astype(object).where(~is_failed, "failed")
    print(f"medeval: {source}: {int(is_failed.sum())} verdict(s) counted as failed parses (--failed): "
          + ", ".join(f"{t!r} x{int(n)}" for t, n in counts.items()), file=sys.stderr)


def _slot_verdicts(df: pd.DataFrame, *, verdict: str, terms: str, order: str, failed: Collection[str],
                   parse_status: str, source: str) -> pd.DataFrame:
    """The CLI's verdict column in presented-slot terms, failure tokens as failed parses; else a located error.

    Returns a copy (0-based rows) whose ``verdict`` column holds first/second/tie/neither or None, and
    whose ``parse_status`` column is ``failed`` on the rows with a ``failed`` token. Model terms are
    mapped with :func:`pairwise.to_slot` and the ``order`` column (AB / BA).
    """
    if verdict not in df.columns:
        raise SchemaError(_TABLE, verdict, [], f"missing column {verdict!r}; present: {list(df.columns)}. Name the "
                          "verdict column with --verdict", source)
    d = df.reset_index(drop=True).copy()
    tokens = {t.strip() for t in map(str, failed)}
    cells = [_text_or_none(v) for v in d[verdict]]
    is_failed = np.array([v in tokens for v in cells], dtype=bool)
    text = pd.Series([None if f else v for v, f in zip(cells, is_failed)], dtype=object)
    if terms == "slot":
        bad = np.array([v is not None and v.lower() not in SLOT_LABELS for v in text], dtype=bool)
    else:
        lab = model_terms(text, terms)
        bad = lab.eq("?").to_numpy()
    if bad.any():
        raise _unknown_verdicts_error(d, text, bad, verdict=verdict, terms=terms, order=order, source=source)
    if terms != "slot":
        text = _model_terms_to_slots(d, lab, order, source, terms)
    sides = text.map(lambda v: v is not None and v.lower() in ("first", "second"))
    if not sides.any() and (is_failed.any() or text.isna().all()):  # only ties (or nothing) left
        raise SchemaError(_TABLE, verdict, [], nothing_left_to_score(
            [c for c, f in zip(cells, is_failed) if f], cells, terms, n_ties=int(text.notna().sum())), source)
    d[verdict] = text.to_numpy()
    _mark_failed(d, cells, is_failed, parse_status, source)
    return d


def _check_two_orders(df: pd.DataFrame, fmt: str, order: str, source: str) -> None:
    """``--from``: the file must hold pairwise judgments shown in the two orders AB and BA."""
    from medeval_kit.readers import ReaderError

    proto = df["protocol"].astype(str) if "protocol" in df.columns else pd.Series("pairwise", index=df.index)
    orders = df[order].astype(str) if order in df.columns else pd.Series("", index=df.index)
    norm = orders.str.strip().str.upper()
    if norm[proto.eq("pairwise") & norm.isin(ORDERS)].nunique() == len(ORDERS):
        return
    protos = sorted(proto.unique())[:5]
    found = sorted(orders.unique())[:5]
    raise ReaderError(f"{source}: medeval position-bias --from {fmt} needs pairwise judgments shown in both "
                      f"presentation orders (order AB and BA); the {fmt} judgments in this file have protocol "
                      f"{protos} and order {found}")


def _read(args, verdict: str) -> pd.DataFrame:
    """The judgments table of the command: the user's file, or another tool's file read with --from."""
    if not args.from_format:
        return _read_raw(args.file, text_columns=[verdict], sep=args.sep, encoding=args.encoding)
    from medeval_kit.readers import read_for_command

    # the tidy judgments: verdict in model terms, order AB/BA, parse_status
    df = read_for_command(args.from_format, args.file, "judgments", command="position-bias")
    _check_two_orders(df, args.from_format, args.order, str(args.file))
    return df


def _write(wide: pd.DataFrame, fmt: str) -> None:
    """Print the one-row-per-judge-and-criterion result as JSON, CSV or an aligned table."""
    if fmt == "json":
        recs = [{k: (None if isinstance(v, float) and np.isnan(v) else (v.item() if hasattr(v, "item") else v))
                 for k, v in r.items()} for r in wide.to_dict(orient="records")]
        sys.stdout.write(json.dumps(recs, indent=2) + "\n")
        return
    if fmt == "csv":
        sys.stdout.write(wide.to_csv(index=False))
        return
    show = wide.copy()
    for m in _WIDE_METRICS:
        if m in show.columns:
            show[m] = [f"{e:.3f} [{lo:.3f}, {hi:.3f}]" for e, lo, hi in
                       zip(show[m], show[f"{m}_ci_low"], show[f"{m}_ci_high"])]
            show = show.drop(columns=[f"{m}_ci_low", f"{m}_ci_high"])
    if "first_slot_p_value" in show.columns:
        show["first_slot_p_value"] = show["first_slot_p_value"].map(lambda v: f"{v:.3g}")
    sys.stdout.write(show.to_string(index=False) + "\n")
    sys.stdout.write(f"CIs: {wide['ci_method'].iloc[0]}, 95%. n_items = pairs with both orders parsed; "
                     "first-slot rate over parsed non-tie calls.\n")


# library advice that has no command: said as where to find it
_NO_COMMAND = {
    "For k-slot protocols use slot_preference": "k-slot protocols (one verdict among k shown answers) have no command: "
                                                "use medeval_kit.bias.slot_preference in Python",
    "(use slot_preference for k-slot protocols)": "(k-slot protocols have no command: use "
                                                  "medeval_kit.bias.slot_preference in Python)",
}


def _in_cli_words(exc: SchemaError) -> SchemaError:
    """The library's error with its Python-only advice said for a command-line user."""
    problem = exc.problem
    for ours, theirs in _NO_COMMAND.items():
        problem = problem.replace(ours, theirs)
    return SchemaError(exc.table, exc.column, exc.rows, problem, exc.source)


def _cli_position_bias(args) -> int:
    """Run ``medeval position-bias``; return the exit code."""
    if args.n_boot < 0:
        raise DataFileError(f"--n-boot must be 0 or more (0 = exact binomial CIs); got {args.n_boot}")
    src = str(args.file)
    verdict = args.verdict or "verdict"
    terms = args.verdict_terms or ("model" if args.from_format else "slot")
    parse_status = args.parse_status or "parse_status"
    df = _slot_verdicts(_read(args, verdict), verdict=verdict, terms=terms, order=args.order,
                        failed=args.failed or (), parse_status=parse_status, source=src)
    # the verdict column now holds presented slots: it is the slot_verdict; your other names map onto ours
    named = {"item": args.item, "judge": args.judge, "criterion": args.criterion, "order": args.order,
             "slot_verdict": verdict, "repeat": args.repeat, "parse_status": parse_status}
    cols = {k: v for k, v in named.items() if v}
    absent = [v for k, v in cols.items() if v != k and v not in df.columns and k not in ("parse_status", "repeat")]
    if absent:
        raise SchemaError(_TABLE, absent[0], [], f"missing column(s) {absent}; present: {list(df.columns)}. Name "
                          "the right columns (e.g. --item/--order/--verdict)", src)
    df = df.drop(columns=[k for k, v in cols.items() if v != k and v in df.columns and k in df.columns]
                 + (["verdict"] if "verdict" in df.columns and cols["slot_verdict"] != "verdict" else []))
    try:
        res = position_bias(df, n_boot=args.n_boot, seed=args.seed, source=src, columns=cols)
    except SchemaError as exc:
        raise _in_cli_words(exc) from None
    _write(position_bias_wide(res), args.format)
    return 0
