"""``medeval alt-test``: the Alternative Annotator Test (Calderon et al. 2025) on the user's own file."""

from __future__ import annotations

import json
import sys

import pandas as pd

from medeval_kit.agreement import AgreementError, PanelError, alt_test, describe_raters, read_checked
from medeval_kit.agreement.alt_test import (
    DEFAULT_EPSILON,
    DEFAULT_Q_FDR,
    JSON_KEYS,
    MIN_HUMANS_PER_ITEM,
    MIN_ITEMS_PER_HUMAN,
    PASS_RATE,
    SCORINGS,
    AltTestError,
    AltTestResult,
)
from medeval_kit.cli.agreement import CommandError, cli_text, in_cli_words, jsonable
from medeval_kit.cli.inputs import add_file_options, add_label_options, column_options, read_options, report_notes
from medeval_kit.errors import SchemaError

__all__ = ["register_cli", "write_result"]

# columns of the per-judge table that carry nothing in the text format (no CI for a winning rate)
# nor the verdict's words (printed underneath, one line each)
_HIDDEN = ("note", "metric", "ci_low", "ci_high", "ci_method", "rule", "reasons", "scoring_reason", "skipped")
_RATES = ("estimate", "advantage_probability", "rho_llm", "rho_human", "t", "p_value", "p_adjusted", "p_worse",
          "p_worse_adjusted")


def _cmd(args) -> int:
    df = _read(args)
    if args.rater_kind and "rater_kind" not in df.columns and not args.humans:
        raise PanelError(f"{args.file}: --rater-kind column {args.rater_kind!r} not found; pass --humans NAME ... "
                         "instead")
    try:
        res = alt_test(df, humans=args.humans, judges=args.judges, epsilon=args.epsilon,
                       scoring=args.scoring, q_fdr=args.q_fdr, min_items_per_human=args.min_items_per_human,
                       min_humans=args.min_humans, source=str(args.file),
                       accept_label_warnings=True)  # checked on reading, in CLI words
    except AltTestError as exc:  # a parameter: said with its option
        raise CommandError(f"{args.file}: {cli_text(str(exc), args)}") from None
    except (SchemaError, AgreementError, PanelError) as exc:  # the user's columns, the options, the file
        raise in_cli_words(exc, args) from None
    from medeval_kit.agreement.verdicts import mark_invalid
    from medeval_kit.cli.inputs import INVALID_EXIT, blocking

    block = blocking(getattr(args, "label_notes", None) or [], args)
    for b in block:  # dirty labels: the numbers are shown, the verdict is not given
        res = mark_invalid(res, cli_text(b, args))
    write_result(res, args.format, sys.stdout, details=args.details)
    return INVALID_EXIT if block else 0


def _read(args) -> pd.DataFrame:
    """The user's file in the long layout, the rater-kind column (if any) as ``rater_kind``.

    The label checks' notes go to stderr and onto ``args.label_notes`` (blocking ones withhold the verdict)."""
    frame = None
    if getattr(args, "from_format", None):  # another tool's file: its tidy annotations, the summary on stderr
        from medeval_kit.readers import read_for_command

        frame = read_for_command(args.from_format, args.file, "annotations", command="alt-test")
    df, notes = read_checked(args.file, columns=column_options(args), frame=frame, **read_options(args))
    report_notes(notes, args)
    args.label_notes = notes
    return df


def _fmt(v) -> str:
    return "NaN" if pd.isna(v) else f"{v:.3f}" if abs(v) >= 1e-3 or v == 0 else f"{v:.1e}"


def _write_text(res: AltTestResult, table: pd.DataFrame, out, details: bool) -> None:
    shown = table.drop(columns=[c for c in _HIDDEN if c in table.columns])
    for c in _RATES:
        if c in shown.columns:
            shown[c] = shown[c].map(_fmt)
    out.write(shown.rename(columns={"estimate": "winning_rate"}).to_string(index=False) + "\n")
    out.write(f"(alt-test, Calderon et al. 2025: pass when winning_rate >= {PASS_RATE:g}; BY q = {res.q_fdr:g}; "
              f"humans: {describe_raters(res.humans, limit=6)})\n")
    if res.scoring_reason:
        out.write(f"scoring: {res.scoring_reason}\n")
    for rule in pd.unique(res.results["rule"]):
        if rule:
            out.write(f"rule: {rule}\n")
    for r in res.results.itertuples(index=False):
        if r.status:
            out.write(f"  {r.judge}: {r.status}: {r.reasons}\n")
    skipped = res.skipped_lines()
    if skipped:
        out.write("skipped humans (not tested):\n")
        out.writelines(f"  {x}\n" for x in skipped)
    for r in res.results.itertuples(index=False):
        parts = [x for x in r.note.split("; ") if "skipped" not in x] if r.note and not details else []
        if parts:
            out.write(f"note ({r.judge}): {'; '.join(parts)}\n")


def _json_records(res: AltTestResult, table: pd.DataFrame) -> list[dict]:
    """One record per judge (:data:`JSON_KEYS`), ``skipped`` as ``{human, n_items, reason}`` for every human."""
    sk = res.skipped
    recs = []
    for r in table.to_dict("records"):
        rec = {k: jsonable(r[k]) for k in JSON_KEYS}
        mine = sk[sk["judge"] == r["judge"]]
        rec["skipped"] = [{"human": jsonable(h), "n_items": int(n), "reason": why}
                          for h, n, why in zip(mine["human"], mine["n_items"], mine["reason"])]
        recs.append(rec)
    return recs


def write_result(res: AltTestResult, fmt: str, out, *, details: bool = False) -> None:
    """Write a result as ``table`` (with the verdicts and the skipped humans underneath), ``csv`` or ``json``."""
    table = res.details if details else res.to_frame()
    if fmt == "csv":
        table.to_csv(out, index=False)
    elif fmt == "json":
        recs = ([{k: jsonable(r[k]) for k in table.columns} for r in table.to_dict("records")] if details else
                _json_records(res, table))
        json.dump(recs, out, indent=2)
        out.write("\n")
    else:
        _write_text(res, table, out, details)


def register_cli(subparsers) -> None:
    """Add ``medeval alt-test`` to the ``medeval`` command."""
    from medeval_kit.readers import add_from_option

    p = subparsers.add_parser(
        "alt-test", help="Alternative Annotator Test: may an LLM judge replace the human annotators?",
        description="The alt-test of Calderon, Reichart & Dror (ACL 2025): leave one human out, ask whether the "
                    "judge or the left-out human agrees better with the other humans, one-sided paired t-test "
                    "with cost-benefit margin epsilon per human, Benjamini-Yekutieli across humans; the judge "
                    "passes when it beats at least half of the humans. FILE is CSV, TSV, JSONL or Parquet in "
                    "long format (one row per item and rater). Say who is human with --humans or a rater-kind "
                    "column (values human / llm). With --from FORMAT, FILE is another tool's results file "
                    "(e.g. --from healthbench meta_eval.jsonl).",
    )
    p.add_argument("file", help="annotations file (.csv, .tsv, .jsonl, .json, .parquet), or with --from another "
                                "tool's results file")
    add_from_option(p, "annotations")
    p.add_argument("--item", default="item", help="item column (default: item)")
    p.add_argument("--rater", default="rater", help="rater column (default: rater)")
    p.add_argument("--label", default="label", help="label column (default: label)")
    add_file_options(p)
    add_label_options(p)
    who = p.add_mutually_exclusive_group()
    who.add_argument("--humans", nargs="+", default=None, help="the human raters")
    who.add_argument("--rater-kind", default=None, metavar="COL",
                     help="column with values human / llm saying who is human (default: a column named rater_kind, "
                          "if the file has one)")
    p.add_argument("--judges", nargs="+", default=None, help="judges to test (default: the llm raters, or all others)")
    p.add_argument("--epsilon", type=float, default=DEFAULT_EPSILON,
                   help="cost-benefit margin (default 0.2 for expert humans such as physicians; the paper: 0.15 "
                        "skilled, 0.1 crowd-workers)")
    p.add_argument("--scoring", default="auto", choices=["auto", *SCORINGS],
                   help="alignment score: accuracy (categorical) or neg_rmse (numeric); auto picks by the label type")
    p.add_argument("--q-fdr", type=float, default=DEFAULT_Q_FDR, help="Benjamini-Yekutieli FDR level (default 0.05)")
    p.add_argument("--min-items-per-human", type=int, default=MIN_ITEMS_PER_HUMAN,
                   help="humans with fewer usable items are skipped and listed (default 30, the paper's t-test minimum)")
    p.add_argument("--min-humans", type=int, default=MIN_HUMANS_PER_ITEM,
                   help="items labelled by fewer humans are not used (default 2)")
    p.add_argument("--details", action="store_true", help="print one row per (judge, human) instead")
    p.add_argument("--format", default="table", choices=["table", "csv", "json"], help="output format")
    p.set_defaults(func=_cmd)
