"""``medeval items FILE``: classical item analysis of an examinees' answers file (p, discrimination, flags, KR-20)."""

from __future__ import annotations

import pandas as pd

from medeval_kit import psychometrics as pm
from medeval_kit.cli.inputs import add_file_options


def register_cli(subparsers) -> None:
    """Add ``medeval items FILE`` (one row per item and examinee: chosen letter and key, or a 0/1 column)."""
    p = subparsers.add_parser("items", help="item analysis of examinees' answers (difficulty, discrimination, "
                                            "distractors, KR-20, review flags)",
                              description="Classical test theory item analysis of an answers file: p, corrected "
                                          "point-biserial, upper-lower index, distractor efficiency, KR-20 and flags. "
                                          "Missing answers are counted, never scored wrong.")
    p.add_argument("file", help="answers table (.csv/.tsv/.jsonl/.json/.parquet), one row per item and examinee")
    for name, default in (("item", "item"), ("examinee", "examinee"), ("choice", "choice"), ("key", "key"),
                          ("correct", "correct")):
        p.add_argument(f"--{name}", default=default, help=f"{name} column (default {default!r})")
    add_file_options(p)
    p.add_argument("--fraction", type=float, default=0.27, help="upper/lower group share (default 0.27)")
    for name, default in pm.FLAG_DEFAULTS.items():
        p.add_argument(f"--{name.replace('_', '-')}", type=float, default=default, help=f"flag threshold (default {default})")
    p.add_argument("--out", default=None, help="write the item table as CSV here")
    p.set_defaults(func=_cli_items)


def _cli_items(args) -> int:
    """Print the flagged items, the flag counts and KR-20; return 0."""
    columns = {name: getattr(args, name) for name in ("item", "examinee", "choice", "key", "correct")}
    r = pm.read_responses(args.file, columns={k: v for k, v in columns.items() if v != k}, sep=args.sep,
                          encoding=args.encoding)
    stats = pm.item_statistics(r, fraction=args.fraction, n_boot=0)
    dis = pm.distractor_analysis(r, fraction=args.fraction, nonfunctional=args.nonfunctional) \
        if r["choice"].notna().any() else None
    flags = pm.item_flags(stats, dis, too_easy=args.too_easy, too_hard=args.too_hard,
                          min_discrimination=args.min_discrimination, low_discrimination=args.low_discrimination,
                          nonfunctional=args.nonfunctional)
    cols = [c for c in ("item", "p", "r_pbis", "D", "distractor_efficiency", "n_answered", "n_missing", "flags")
            if c in flags.columns]
    with pd.option_context("display.width", 160, "display.max_columns", 20, "display.max_colwidth", 60):
        print(flags.sort_values(["n_flags", "r_pbis"], ascending=[False, True])[cols]
              .to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print()
        print(pm.flag_counts(flags)[["flag", "n_flagged", "n_items", "estimate"]].to_string(index=False))
    kr = pm.reliability(r).iloc[0]
    ms = pm.missing_summary(r).iloc[0]
    print(f"\nKR-20 {kr['estimate']:.3f} [{kr['ci_low']:.3f}, {kr['ci_high']:.3f}] on {kr['n_items']} examinees "
          f"({kr['n_failed']} with a missing answer left out); answers: {ms['n']}, failed {ms['failed']}, "
          f"missing {ms['missing']}")
    if args.out:
        flags.to_csv(args.out, index=False)
    return 0
