"""``medeval rounds FILE``: per-round means, stop/best rounds and stopping-rule consistency of a rounds table."""

from __future__ import annotations

import pandas as pd

from medeval_kit import rounds

_BUNDLED = "medqg:"


def register_cli(subparsers) -> None:
    """Add ``medeval rounds FILE`` (a rounds CSV/Parquet, or ``medqg:top10|iter_feedback|icl_qgqa|all``)."""
    p = subparsers.add_parser("rounds", help="round-wise summary of an iterative-refinement rounds table",
                              description="Per-round means (available-only and LOCF), stop/best rounds and "
                                          "stopping-rule consistency of a rounds table.")
    p.add_argument("file", help=f"rounds table (.csv/.parquet/.jsonl) or {_BUNDLED}SOURCE for the bundled traces")
    p.add_argument("--rule", choices=rounds.STOP_RULES, default=None,
                   help="re-derive stop/best flags with this stopping rule before summarising")
    p.add_argument("--threshold", type=float, default=0.9)
    p.add_argument("--max-rounds", type=int, default=4)
    p.add_argument("--tie-break", choices=rounds.TIE_BREAKS, default="earliest")
    p.set_defaults(func=_cli_rounds)


def _read(path: str, tie_break: str) -> pd.DataFrame:
    """Return the rounds table at ``path``; bundled traces get their missing best rounds selected."""
    if str(path).startswith(_BUNDLED):
        from medeval_kit.datasets.medqg_rounds import load_medqg_rounds

        return rounds.fill_best_rounds(load_medqg_rounds(path[len(_BUNDLED):]), tie_break)
    return rounds.read_rounds(path, tie_break=tie_break)


def _cli_rounds(args) -> int:
    """Print the round means, the stop/best distribution and the stopping-rule consistency; return 0."""
    df = _read(args.file, args.tie_break)
    if args.rule:
        df = rounds.apply_stopping_rule(df, args.rule, args.threshold, max_rounds=args.max_rounds,
                                        tie_break=args.tie_break)
    ir = rounds.item_rounds(df)
    share = {"float_format": lambda v: f"{v:.3f}", "index": False}
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(rounds.round_means(ir, "total")[["imputation", "round", "n_items", "n_items_total", "estimate",
                                                "ci_low", "ci_high"]]
              .to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        print()
        d = rounds.stop_best_distribution(df, tie_break=args.tie_break)
        print(d[["kind", "round", "n_at_round", "n_items", "estimate"]].to_string(**share))
        print()
        print(rounds.stopping_rule_consistency(df, threshold=args.threshold, max_rounds=args.max_rounds)
              [["rule", "n_items", "n_consistent", "estimate"]].to_string(**share))
    print(f"\nitems: {ir['item'].nunique()}, item-rounds: {len(ir)}, "
          f"component scores not parsed: {int(ir['n_failed'].sum())}")
    return 0
