"""``medeval rank FILE``: Bradley-Terry / Davidson ratings of the models in a pairwise verdicts file, per
judge, with bootstrap CIs; with ``--reference`` also whether each judge ranks the models like the reference."""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pandas as pd

from medeval_kit import rank
from medeval_kit.cli.inputs import add_file_options
from medeval_kit.errors import MedevalError, ParameterError

_SHOW = ("ratings", "win-prob", "agreement", "flips", "elo")


def register_cli(subparsers) -> None:
    """Add ``medeval rank FILE ...`` to the ``medeval`` command."""
    p = subparsers.add_parser(
        "rank",
        help="Bradley-Terry ratings and rank agreement from pairwise verdicts (with ties)",
        description="Rank models from pairwise verdicts: one row per judged pair with the two models and the "
                    "verdict (A = model-a won, B = model-b won, tie or neither, or the winning model's own name). "
                    "Strengths are Bradley-Terry log-strengths (mean 0) per judge, ties as Davidson's tie "
                    "parameter (--ties davidson), half a win (half) or dropped (exclude), with percentile bootstrap "
                    "CIs over items (or --unit clusters), the same draws for every judge. A judge whose "
                    "comparison graph is not strongly connected (a model never wins or never loses) gets rows "
                    "saying so, unless --prior ranks it. An empty verdict, or a "
                    "--failed token, is a failed verdict: counted, never a tie. --reference JUDGE adds Kendall tau, "
                    "Spearman rho and top-k overlap of every judge's ranking with that judge's, and the "
                    "probability that each adjacent pair flips.",
    )
    p.add_argument("file", metavar="FILE", help="verdicts file: .csv, .tsv, .jsonl, .json or .parquet")
    add_file_options(p)
    p.add_argument("--item", default="item", help="item (pair) id column [item]")
    p.add_argument("--model-a", default="model_a", help="column naming the first model of the pair [model_a]")
    p.add_argument("--model-b", default="model_b", help="column naming the second model of the pair [model_b]")
    p.add_argument("--verdict", default="verdict",
                   help="verdict column: A, B, tie, neither (or the words of --verdict-terms), or the winning "
                        "model's name [verdict]")
    p.add_argument("--verdict-terms", choices=rank.MODEL_TERMS, default="model",
                   help="the verdicts' vocabulary. " + "; ".join(f"{t}: {rank.VERDICT_TERMS[t]}"
                                                                  for t in rank.MODEL_TERMS)
                        + ". The winning model's own name is read in all three [model]")
    p.add_argument("--judge", default="judge",
                   help="judge (or human group) column [judge; absent = one judge]")
    p.add_argument("--unit", default=None,
                   help="column the bootstrap resamples, e.g. the prompt when one prompt has several pairs "
                        "[the item]")
    p.add_argument("--failed", nargs="+", default=None, metavar="TOKEN",
                   help="verdict values meaning the judge's reply could not be parsed (e.g. --failed error NA): "
                        "counted as failed, never ties")
    p.add_argument("--ties", choices=rank.TIES, default="davidson",
                   help="davidson: a tie parameter (Davidson 1970); half: a tie is half a win; exclude: drop ties "
                        "[davidson]")
    p.add_argument("--prior", type=float, default=None, metavar="STRENGTH",
                   help="rank with a Gaussian prior N(0, 1/STRENGTH) on every log-strength (e.g. --prior 1): the "
                        "maximum a-posteriori fit, which ranks judges whose comparison graph is not strongly "
                        "connected (models that never win or never lose); strengths, SEs and CIs are then shrunk "
                        "toward equal strength, as the output says [none: maximum likelihood]")
    p.add_argument("--reference", default=None, metavar="JUDGE",
                   help="compare every judge's ranking with this judge's (e.g. the physicians)")
    p.add_argument("--top-k", type=int, nargs="+", default=None, metavar="K",
                   help="top-k overlaps to report with --reference [1 and half the models]")
    p.add_argument("--show", nargs="+", choices=_SHOW, default=None,
                   help="tables to print: ratings, win-prob (win-probability matrix), agreement and flips (need "
                        "--reference), elo (Elo under shuffled orders, for comparison) [ratings; with --reference "
                        "also agreement and flips]")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap draws for the CIs; 0 = none [1000]")
    p.add_argument("--confidence", type=float, default=0.95, help="CI level [0.95]")
    p.add_argument("--seed", type=int, default=0, help="bootstrap (and Elo shuffle) seed [0]")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="output format; csv prints one table (pick it with --show) [table]")
    p.set_defaults(func=_cli_rank)


def _jsonable(v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if v is None or v is pd.NA:
        return None
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(float(v)) else None
    return v


def _fmt_ci(t: pd.DataFrame, digits: int) -> pd.Series:
    return pd.Series([("NaN" if pd.isna(e) else f"{e:.{digits}f}") + ("" if pd.isna(lo) else
                      f" [{lo:.{digits}f}, {hi:.{digits}f}]") for e, lo, hi in zip(t["estimate"], t["ci_low"],
                                                                                     t["ci_high"])], index=t.index)


def _ratings_view(r: pd.DataFrame) -> pd.DataFrame:
    s = r[r["metric"] == "strength"].set_index(["judge", "model"])
    k = r[r["metric"] == "rank"].set_index(["judge", "model"])
    v = pd.DataFrame({"strength [CI]": _fmt_ci(s, 3), "se": s["se"].map(lambda x: "" if pd.isna(x) else f"{x:.3f}"),
                      "rank [CI]": [("" if pd.isna(e) else f"{e:.0f}") + ("" if pd.isna(lo) else f" [{lo:.0f}, {hi:.0f}]")
                                    for e, lo, hi in zip(k["estimate"], k["ci_low"], k["ci_high"])],
                      "W-L-T": [f"{w}-{lo}-{t}" for w, lo, t in zip(s["wins"], s["losses"], s["ties"])],
                      "n_items": s["n_items"], "n_failed": s["n_failed"], "note": s["note"]}).reset_index()
    v["_order"] = -s["estimate"].fillna(-np.inf).to_numpy()
    judges = list(dict.fromkeys(r["judge"]))
    v["_j"] = v["judge"].map({j: i for i, j in enumerate(judges)})
    return v.sort_values(["_j", "_order"]).drop(columns=["_order", "_j"])


def _table_text(name: str, t: pd.DataFrame) -> str:
    if name == "ratings":
        return _ratings_view(t).to_string(index=False)
    if name == "win-prob":
        v = t.assign(p_win=_fmt_ci(t, 3))[["judge", "model", "opponent", "p_win", "p_tie", "expected_score",
                                             "observed_wins", "observed_losses", "observed_ties"]]
        return v.to_string(index=False, float_format=lambda x: f"{x:.3f}")
    if name == "agreement":
        v = t.assign(value=_fmt_ci(t, 2))[["judge", "reference", "metric", "value", "n_models", "n_items", "note"]]
        return v.to_string(index=False)
    if name == "flips":
        v = t[["judge", "reference", "rank", "higher", "lower", "estimate", "judge_agrees", "n_draws", "note"]]
        return v.rename(columns={"estimate": "p_flip"}).to_string(index=False, float_format=lambda x: f"{x:.3f}")
    return t.to_string(index=False, float_format=lambda x: f"{x:.1f}")


def _cli_rank(args) -> int:
    """Run ``medeval rank``; return the exit code."""
    if args.n_boot < 0:
        raise ParameterError(f"--n-boot must be 0 or more (0 = no CI); got {args.n_boot}")
    if not 0 < args.confidence < 1:
        raise ParameterError(f"--confidence must be between 0 and 1, e.g. 0.95; got {args.confidence}")
    if args.prior is not None and not (math.isfinite(args.prior) and args.prior > 0):
        raise ParameterError(f"--prior must be a positive number, the precision of the N(0, 1/STRENGTH) prior on "
                             f"the log-strengths (e.g. --prior 1); got {args.prior}")
    show = list(args.show or (["ratings"] + (["agreement", "flips"] if args.reference else [])))
    if {"agreement", "flips"} & set(show) and not args.reference:
        raise ParameterError("--show agreement/flips compare the judges with a reference: name it with "
                             "--reference JUDGE")
    if args.format == "csv" and len(show) != 1:
        raise ParameterError(f"--format csv prints one table; pick one with --show (asked for {' '.join(show)})")
    named = {"item": args.item, "model_a": args.model_a, "model_b": args.model_b, "verdict": args.verdict,
             "judge": args.judge, "unit": args.unit}
    comp = rank.read_comparisons(args.file, failed=args.failed or (), verdict_terms=args.verdict_terms, sep=args.sep,
                                 encoding=args.encoding, columns={k: v for k, v in named.items() if v})
    n_failed = int((comp["status"] == "failed").sum())
    if n_failed:
        print(f"medeval: {args.file}: {n_failed} failed verdict(s) counted, not scored", file=sys.stderr)
    res = rank.rank_models(comp, ties=args.ties, n_boot=args.n_boot, seed=args.seed, confidence=args.confidence,
                           prior=args.prior)
    unranked = [j for j in res.judges if np.isfinite(res.point[j]).sum() < 2]
    for j in unranked:
        print(f"medeval: {args.file}: judge {j!r} has no ranking: {res.notes[j].removeprefix('no ranking: ')}",
              file=sys.stderr)
    if args.reference and args.reference not in res.judges:
        raise MedevalError(f"{args.file}: --reference {args.reference!r} is not a judge in column {args.judge!r}; "
                           f"judges: {list(res.judges)}")
    tables = {}
    for name in show:
        if name == "ratings":
            tables[name] = res.ratings
        elif name == "win-prob":
            tables[name] = res.win_probability
        elif name == "agreement":
            tables[name] = rank.rank_agreement(res, args.reference, top_k=args.top_k)
        elif name == "flips":
            tables[name] = rank.rank_flips(res, reference=args.reference)
        else:
            tables[name] = rank.elo_spread(rank.elo_ratings(comp, seed=args.seed))
    rc = 1 if len(unranked) == len(res.judges) else 0  # no judge ranked: the rows say why, the exit code too
    if args.format == "csv":
        sys.stdout.write(next(iter(tables.values())).to_csv(index=False))
        return rc
    if args.format == "json":
        out = {k.replace("-", "_"): [{c: _jsonable(v) for c, v in rec.items()} for rec in t.to_dict("records")]
               for k, t in tables.items()}
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return rc
    heads = {"ratings": f"Ratings ({rank.TIE_LABELS[args.ties]}"
             + (f"; {rank.prior_label(args.prior)})" if args.prior else ")"), "win-prob": "Win probabilities: P(model beats "
             "opponent)", "agreement": f"Rank agreement with {args.reference}", "flips": "Adjacent pairs of the "
             "reference's ranking: P(judge orders them the other way)", "elo": "Elo (for comparison): spread over "
             "shuffled orders of the same games"}
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_colwidth", 80):
        for name, t in tables.items():
            sys.stdout.write(f"{heads[name]}\n{_table_text(name, t)}\n\n")
    method = f"percentile bootstrap over {'units (' + args.unit + ')' if args.unit else 'items'}, B = {res.n_boot}"
    prior = f"; {rank.prior_label(args.prior)} (se = posterior sd)" if args.prior else ""
    sys.stdout.write(f"CIs: {method}, {args.confidence:.0%}; strength = log-strength, mean 0 per judge{prior}.\n")
    return rc
