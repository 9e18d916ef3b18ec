"""``medeval agreement``: agreement statistics on the user's own file, without a notebook."""

from __future__ import annotations

import json
import sys

import pandas as pd

from medeval_kit.errors import SchemaError

DEFAULT_METRICS = ("percent_agreement", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha")


def _split_metric(name: str):
    """``cohen_kappa_linear`` -> (``cohen_kappa``, ``linear``); other names -> (name, None)."""
    base, _, suffix = name.rpartition("_")
    return (base, suffix) if suffix in ("linear", "quadratic") and base else (name, None)


def agreement_report(
    df: pd.DataFrame,
    *,
    metrics=DEFAULT_METRICS,
    level: str = "nominal",
    categories=None,
    raters=None,
    pairwise: bool = False,
    ceiling: bool = False,
    humans=None,
    criterion: str | None = None,
    n_boot: int = 2000,
    ci: float = 0.95,
    ci_method: str = "percentile",
    seed: int = 0,
) -> pd.DataFrame:
    """One tidy row per result: the table behind ``medeval agreement`` and the notebook's summary.

    Columns: [criterion,] metric, raters, estimate, ci_low, ci_high, n_items, n_raters, n_missing,
    method, note. ``metrics`` may name weighted kappas as ``cohen_kappa_linear`` or
    ``cohen_kappa_quadratic``; ``level`` applies to Krippendorff's alpha. ``pairwise`` adds every
    rater pair (first metric that is pairwise, default Cohen's kappa); ``ceiling`` adds the
    leave-one-out and mean-pairwise human ceilings (``humans``, or rater_kind == "human").
    """
    from medeval_kit import agreement as ag

    groups = [(None, df)]
    if criterion and criterion in df.columns:
        groups = [(c, sub.drop(columns=[criterion])) for c, sub in df.groupby(criterion, sort=True)]
    frames = []
    for crit, sub in groups:
        rows = []
        for name in metrics:
            m, w = _split_metric(name)
            lv = level if m in ("krippendorff_alpha",) else None
            if w and m in ("cohen_kappa", "gwet_ac2") and categories is None and level == "nominal":
                lv = "ordinal"
            res = ag.agreement(sub, m, raters=raters, categories=categories, level=lv, weights=w, n_boot=n_boot,
                               ci=ci, ci_method=ci_method, seed=seed)
            rows.append(res.to_frame())
        if pairwise:
            pair_names = [_split_metric(n) for n in metrics if _split_metric(n)[0] in ag.PAIR_METRICS]
            pm_metric = next((p for p in pair_names if p[0] == "cohen_kappa"),
                             pair_names[0] if pair_names else ("cohen_kappa", None))
            pm = ag.pairwise_matrix(sub, pm_metric[0], raters=raters, categories=categories, weights=pm_metric[1],
                                    n_boot=n_boot, ci=ci, ci_method=ci_method, seed=seed)
            pm = pm.assign(raters=pm["rater_a"] + "|" + pm["rater_b"], n_raters=2)
            rows.append(pm.drop(columns=["rater_a", "rater_b"]))
        if ceiling:
            hs = humans
            for form in ("loo", "pairwise"):
                res = ag.human_ceiling(sub, hs, form=form, categories=categories, n_boot=n_boot, ci=ci,
                                       ci_method=ci_method, seed=seed)
                rows.append(res.to_frame())
        out = pd.concat(rows, ignore_index=True)
        if crit is not None:
            out.insert(0, "criterion", crit)
        frames.append(out)
    cols = ["metric", "raters", "estimate", "ci_low", "ci_high", "n_items", "n_raters", "n_missing", "method", "note"]
    out = pd.concat(frames, ignore_index=True)
    return out[[c for c in (["criterion"] if "criterion" in out.columns else []) + cols]]


def _cmd(args) -> int:
    from medeval_kit import agreement as ag

    df = ag.read_annotations(args.file, item=args.item, rater=args.rater, label=args.label,
                             criterion=args.criterion, wide=args.wide, raters=args.raters if args.wide else None)
    cats = args.categories
    if cats and pd.api.types.is_numeric_dtype(df["label"]):
        cats = [float(c) if "." in c else int(c) for c in cats]
    humans = args.humans
    if args.ceiling and not humans and "rater_kind" not in df.columns:
        humans = args.raters or sorted(df["rater"].unique())
    try:
        table = _report(df, args, cats, humans)
    except SchemaError as exc:  # name the file; row numbers are data rows of the (long) file, 0-based
        raise SchemaError(exc.table, exc.column, exc.rows, exc.problem, exc.source or str(args.file)) from None
    out = sys.stdout
    _write(table, args.format, out)
    return 0


def _report(df, args, cats, humans):
    return agreement_report(
        df, metrics=args.metric or DEFAULT_METRICS, level=args.level, categories=cats,
        raters=None if args.wide else args.raters, pairwise=args.pairwise, ceiling=args.ceiling, humans=humans,
        criterion="criterion" if args.criterion else None, n_boot=args.n_boot, ci=args.ci,
        ci_method=args.ci_method, seed=args.seed,
    )


def _write(table: pd.DataFrame, fmt: str, out) -> None:
    if fmt == "csv":
        table.to_csv(out, index=False)
    elif fmt == "json":
        recs = []
        for r in table.to_dict("records"):
            rs = str(r.pop("raters")).split("|")
            rec = {"metric": r.pop("metric"), "raters": rs, "estimate": _num(r.pop("estimate")),
                   "ci_low": _num(r.pop("ci_low")), "ci_high": _num(r.pop("ci_high")), "n_items": int(r.pop("n_items"))}
            rec.update({k: (_num(v) if isinstance(v, float) else v) for k, v in r.items()})
            recs.append(rec)
        json.dump(recs, out, indent=2)
        out.write("\n")
    else:
        shown = table.copy()
        for c in ("estimate", "ci_low", "ci_high"):
            shown[c] = shown[c].map(lambda v: "NaN" if pd.isna(v) else f"{v:.3f}")
        out.write(shown.to_string(index=False) + "\n")


def _num(v):
    return None if v is None or pd.isna(v) else float(v)


def register_cli(subparsers) -> None:
    """Add ``medeval agreement`` to the ``medeval`` command."""
    p = subparsers.add_parser(
        "agreement", help="agreement statistics (kappa, alpha, ...) with bootstrap CIs on an annotations file",
        description="Agreement statistics with CIs that resample items. FILE is CSV, TSV, JSONL or Parquet, "
                    "long format (one row per item and rater) or wide (--wide: one column per rater).",
    )
    p.add_argument("file", help="annotations file (.csv, .tsv, .jsonl, .json, .parquet)")
    p.add_argument("--item", default="item", help="item column (default: item)")
    p.add_argument("--rater", default="rater", help="rater column, long format (default: rater)")
    p.add_argument("--label", default="label", help="label column, long format (default: label)")
    p.add_argument("--criterion", default=None, help="criterion column: one set of results per criterion")
    p.add_argument("--wide", action="store_true", help="wide format: one column per rater")
    p.add_argument("--raters", nargs="+", default=None, help="raters to use (wide: the rater columns)")
    p.add_argument("--humans", nargs="+", default=None, help="human raters for --ceiling")
    p.add_argument("--categories", nargs="+", default=None, help="declared labels, low to high for ordinal")
    p.add_argument("--level", default="nominal", choices=["nominal", "ordinal", "interval", "ratio"],
                   help="measurement level for Krippendorff's alpha")
    p.add_argument("--metric", nargs="+", default=None,
                   help="metrics (default: percent_agreement cohen_kappa fleiss_kappa krippendorff_alpha); "
                        "also scott_pi pabak brennan_prediger gwet_ac1 gwet_ac2 icc1..icc3k pearson spearman "
                        "kendall accuracy macro_f1 cohen_kappa_linear cohen_kappa_quadratic")
    p.add_argument("--pairwise", action="store_true", help="add every rater pair")
    p.add_argument("--ceiling", action="store_true", help="add the human ceiling (leave-one-out and pairwise)")
    p.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples of items (0 = no CI)")
    p.add_argument("--ci", type=float, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--ci-method", default="percentile", choices=["percentile", "bca", "analytic"])
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--format", default="table", choices=["table", "csv", "json"], help="output format")
    p.set_defaults(func=_cmd)
