"""``medeval agreement`` and ``medeval judge-vs-humans``: agreement on the user's own file, no notebook.

Both work on any panel, including sparse physician panels where each item has its own 2-4
raters: a statistic that is undefined for a design becomes NaN with the reason in ``note`` and
never aborts the other rows.
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pandas as pd

from medeval_kit.agreement import (DEFAULT_METRICS, DESIGNS, AgreementError, agreement_report, describe_raters,
                                   judge_vs_humans, read_checked, registry)
from medeval_kit.agreement.weights import WEIGHT_NAMES
from medeval_kit.errors import SchemaError
from medeval_kit.results import RESULT_COLUMNS

__all__ = ["register_cli", "jsonable", "metric_choices"]

JVH_FIELDS = ["role", "rater", "design", "metric", *RESULT_COLUMNS, "n_pairs", "delta", "delta_ci_low",
              "delta_ci_high", "p_value"]


# --------------------------------------------------------------------------- output


def jsonable(v):
    """A JSON-ready value: numpy scalars as Python numbers, NaN / infinity / NA as None."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if v is None or v is pd.NA:
        return None
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(float(v)) else None
    return v


def _footnotes(table: pd.DataFrame) -> list[str]:
    col = "ci_method"
    methods = [m for m in pd.unique(table[col].dropna()) if m] if col in table else []
    return [f"CI: {m}" for m in methods]


def _show(table: pd.DataFrame, cols: list[str]) -> str:
    shown = table[[c for c in cols if c in table.columns]].copy()
    for c in ("estimate", "ci_low", "ci_high", "delta", "delta_ci_low", "delta_ci_high"):
        if c in shown:
            shown[c] = shown[c].map(lambda v: "NaN" if pd.isna(v) else f"{v:.3f}")
    if "p_value" in shown:
        shown["p_value"] = shown["p_value"].map(lambda v: "" if pd.isna(v) else f"{v:.3g}")
    for c in ("n_items", "n_pairs", "n_raters", "n_missing"):
        if c in shown:
            shown[c] = shown[c].map(lambda v: "" if pd.isna(v) else str(int(v)))
    return shown.to_string(index=False)


def _write_agreement(table: pd.DataFrame, fmt: str, out) -> None:
    if fmt == "csv":
        table.to_csv(out, index=False)
        return
    if fmt == "json":
        recs = []
        for r in table.to_dict("records"):
            rec = {k: jsonable(v) for k, v in r.items()}
            rec["raters"] = str(r["raters"]).split("|")
            recs.append(rec)
        json.dump(recs, out, indent=2)
        out.write("\n")
        return
    for section, sub in table.groupby("section", sort=False):
        sub = sub.copy()
        sub["raters"] = [describe_raters(str(r).split("|")) for r in sub["raters"]]
        head = {"agreement": "Agreement", "pairwise": "Every rater pair",
                "judge_vs_humans": "Judges vs humans (delta = judge - humans, paired bootstrap)"}[section]
        out.write(f"{head}\n")
        cols = (["criterion"] if "criterion" in sub else []) + ["metric", "raters", "estimate", "ci_low", "ci_high",
                                                                 "n_items"]
        if section == "judge_vs_humans":
            cols += ["n_pairs", "delta", "delta_ci_low", "delta_ci_high", "p_value"]
        else:
            cols += ["n_raters", "n_missing"]
        out.write(_show(sub, cols + ["note"]) + "\n")
        if section == "pairwise":
            none = int((sub["n_items"] == 0).sum())
            if none:
                out.write(f"  {none} of {len(sub)} rater pairs share no item (NaN)\n")
        out.write("\n")
    for f in _footnotes(table):
        out.write(f"{f}\n")


# --------------------------------------------------------------------------- commands


def _read(args):
    wide = getattr(args, "wide", False)
    frame = _from_format(args)
    df, notes = read_checked(args.file, item=args.item, rater=args.rater, label=args.label,
                             criterion=getattr(args, "criterion", None), wide=wide,
                             raters=args.raters if wide else None, rater_kind=args.rater_kind,
                             missing=args.missing or (), normalize_labels=args.normalize_labels, frame=frame)
    for n in notes:
        print(f"medeval: warning: {args.file}: {n}", file=sys.stderr)
    return df, notes


def _from_format(args) -> pd.DataFrame | None:
    """``--from FORMAT``: the annotations table of another tool's file (summary on stderr), else None."""
    fmt = getattr(args, "from_format", None)
    if not fmt:
        return None
    if getattr(args, "wide", False):
        raise AgreementError(f"{args.file}: --wide does not apply with --from {fmt}: the {fmt} reader gives the "
                             "long annotations table (one row per item and rater)")
    from medeval_kit.readers import read_for_command

    return read_for_command(fmt, args.file, "annotations", command=args.from_command)


def _check_common(args) -> None:
    if args.n_boot < 0:
        raise AgreementError(f"--n-boot must be 0 or more (0 = no CI); got {args.n_boot}")
    if not 0 < args.confidence < 1:
        raise AgreementError(f"--confidence must be a level between 0 and 1, e.g. 0.95; got {args.confidence}")


def _user_columns(exc: SchemaError, args) -> SchemaError:
    """The same error, naming the user's own columns and the file."""
    names = {"item": args.item, "rater": args.rater, "label": args.label}
    col = names.get(exc.column, exc.column)
    problem = exc.problem
    for ours, theirs in names.items():
        problem = problem.replace(f"'{ours}'", f"'{theirs}'")
    return SchemaError(exc.table, col, exc.rows, problem, exc.source or str(args.file))


def _cmd(args) -> int:
    _check_common(args)
    if getattr(args, "from_format", None) and args.criterion is None:
        args.criterion = "criterion"  # the tidy annotations table has one; one set of results per criterion
    df, notes = _read(args)
    cats = args.categories
    if cats and pd.api.types.is_numeric_dtype(df["label"]):
        cats = [float(c) if "." in c else int(c) for c in cats]
    if args.ceiling and not args.humans and "rater_kind" not in df.columns:
        raise AgreementError(
            f"{args.file}: --ceiling needs to know who is human: pass --humans NAME ... or a rater-kind column "
            f"(--rater-kind COL, values 'human' and 'llm'); no column {args.rater_kind!r} in the file"
        )
    try:
        table = agreement_report(
            df, metrics=args.metric or DEFAULT_METRICS, level=args.level, categories=cats,
            raters=None if args.wide else args.raters, pairwise=args.pairwise, ceiling=args.ceiling,
            humans=args.humans, judges=args.judges, design=args.design, margin=args.margin,
            criterion="criterion" if args.criterion else None, n_boot=args.n_boot, confidence=args.confidence,
            ci_method=args.ci_method, seed=args.seed, notes=notes,
        )
    except SchemaError as exc:  # row numbers are data rows of the (long) file, 0-based
        raise _user_columns(exc, args) from None
    _write_agreement(table, args.format, sys.stdout)
    return 0


def _jvh_cmd(args) -> int:
    _check_common(args)
    df, notes = _read(args)
    if not args.humans and args.rater_kind not in (None, "") and "rater_kind" not in df.columns:
        raise AgreementError(
            f"{args.file}: say who is human: pass --humans NAME ... or --rater-kind COL (a column with values "
            f"'human' and 'llm'); the file has no column {args.rater_kind!r}"
        )
    try:
        res = judge_vs_humans(df, args.humans, args.judges, design=args.design, metric=args.metric,
                              margin=args.margin, n_boot=args.n_boot, confidence=args.confidence, seed=args.seed,
                              source=str(args.file))
    except SchemaError as exc:
        raise _user_columns(exc, args) from None
    t = res.to_frame()
    if notes:
        t["note"] = [f"{n}; {'; '.join(notes)}" if n else "; ".join(notes) for n in t["note"]]
    out = sys.stdout
    if args.format == "csv":
        t.to_csv(out, index=False)
    elif args.format == "json":
        json.dump([{k: jsonable(r[k]) for k in JVH_FIELDS} for r in t.to_dict("records")], out, indent=2)
        out.write("\n")
    else:
        out.write(f"Judges vs humans: {res.metric}, design {res.design!r}; {len(res.humans)} humans "
                  f"({describe_raters(res.humans)}), {len(res.judges)} judge(s)\n")
        t = t.assign(rater=[describe_raters([r]) for r in t["rater"]])
        out.write(_show(t, ["role", "rater", "estimate", "ci_low", "ci_high", "n_items", "n_pairs", "delta",
                            "delta_ci_low", "delta_ci_high", "p_value"]) + "\n")
        for r in t.itertuples():
            if r.role == "judge" and pd.notna(r.noninferior):
                verdict = "non-inferior" if r.noninferior else "not shown non-inferior"
                out.write(f"  {r.rater}: {verdict} at margin {r.margin:g} (p = {r.p_noninferiority:.3g})\n")
        for n in pd.unique(t["note"]):
            if n:
                out.write(f"note: {n}\n")
        if res.ci_method:
            out.write(f"CI: {res.ci_method}\n")
    return 0


def metric_choices() -> list[str]:
    """What ``medeval agreement --metric`` accepts: every registered coefficient and the weighted label ones."""
    return registry.names() + [f"{n}_{w}" for n in _weighted() for w in WEIGHT_NAMES]


def _weighted() -> list[str]:
    return [c.name for c in registry.REGISTRY.values() if c.weighted]


def _described(names: list[str]) -> str:
    """``name (label)`` for each coefficient, for the help text."""
    return "; ".join(f"{n} ({registry.get(n).label})" for n in names)


def _common_args(p, *, label_help="label column (default: label)") -> None:
    from medeval_kit.readers import add_from_option

    p.add_argument("file", help="annotations file (.csv, .tsv, .jsonl, .json, .parquet), or with --from another "
                                "tool's results file")
    add_from_option(p, "annotations")
    p.add_argument("--item", default="item", help="item column (default: item)")
    p.add_argument("--rater", default="rater", help="rater column, long format (default: rater)")
    p.add_argument("--label", default="label", help=label_help)
    p.add_argument("--missing", nargs="+", default=None, metavar="TOKEN",
                   help="label values that mean 'no label' (an empty cell always does); e.g. --missing NA n/a")
    p.add_argument("--normalize-labels", action="store_true",
                   help="merge labels that differ only by case or surrounding white space")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples of items (0 = no CI; default 1000)")
    p.add_argument("--confidence", "--ci", type=float, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--format", default="table", choices=["table", "csv", "json"], help="output format")


def _panel_args(p) -> None:
    p.add_argument("--humans", nargs="+", default=None, metavar="NAME", help="the human raters")
    p.add_argument("--rater-kind", default="rater_kind", metavar="COL",
                   help="column saying who is human: values 'human' and 'llm' (default: rater_kind)")
    p.add_argument("--judges", nargs="+", default=None, metavar="NAME",
                   help="the judges to compare (default: every rater that is not human)")
    p.add_argument("--design", default="loo", choices=list(DESIGNS),
                   help="loo: each human and each judge against the other humans' consensus (default); pooled: "
                        "every human-human and judge-human label pair; medqade: the MedQADE paper's design (biased; "
                        "for reproduction only)")
    p.add_argument("--margin", type=float, default=0.05,
                   help="non-inferiority margin for delta = judge - humans (default 0.05)")


def register_cli(subparsers) -> None:
    """Add ``medeval agreement`` and ``medeval judge-vs-humans`` to the ``medeval`` command."""
    p = subparsers.add_parser(
        "agreement", help="agreement statistics (kappa, alpha, ...) with bootstrap CIs on an annotations file",
        description="Agreement statistics with CIs that resample items. FILE is CSV, TSV, JSONL or Parquet, "
                    "long format (one row per item and rater) or wide (--wide: one column per rater). Works on "
                    "sparse panels: a statistic undefined for the panel is NaN with the reason. With --from FORMAT, "
                    "FILE is another tool's results file (e.g. --from healthbench meta_eval.jsonl).",
    )
    _common_args(p)
    p.add_argument("--criterion", default=None,
                   help="criterion column: one set of results per criterion (default: none; with --from: criterion)")
    p.add_argument("--wide", action="store_true", help="wide format: one column per rater")
    p.add_argument("--raters", nargs="+", default=None, help="raters to use (wide: the rater columns)")
    _panel_args(p)
    p.add_argument("--categories", nargs="+", default=None, help="declared labels, low to high for ordinal")
    p.add_argument("--level", default="nominal", choices=["nominal", "ordinal", "interval", "ratio"],
                   help="measurement level for Krippendorff's alpha")
    p.add_argument("--metric", nargs="+", default=None, choices=metric_choices(), metavar="METRIC",
                   help=f"metrics (default: {' '.join(DEFAULT_METRICS)}); any of {' '.join(registry.names())}; "
                        f"weighted: NAME_linear or NAME_quadratic for {', '.join(_weighted())}")
    p.add_argument("--pairwise", action="store_true", help="add every rater pair (NaN for pairs sharing no item)")
    p.add_argument("--ceiling", action="store_true",
                   help="add judges vs humans (--design, first pairwise --metric); needs --humans or --rater-kind")
    p.add_argument("--ci-method", default="percentile", choices=["percentile", "bca", "analytic"])
    p.set_defaults(func=_cmd, from_command="agreement")

    q = subparsers.add_parser(
        "judge-vs-humans", help="can this judge replace the humans? each judge scored like a held-out human",
        description="Each LLM judge against the human raters, scored exactly like a held-out human (default "
                    "design loo), with delta = judge - humans, its paired item-bootstrap CI, a two-sided p-value "
                    "and a one-sided non-inferiority test at --margin. Works for 2 humans, dense panels and "
                    "sparse panels (each item labelled by its own subset of raters). With --from FORMAT, FILE is "
                    "another tool's results file (e.g. --from healthbench meta_eval.jsonl).",
    )
    _common_args(q)
    _panel_args(q)
    q.add_argument("--metric", default="cohen_kappa", choices=registry.names(pairwise=True),
                   help=f"agreement metric (default cohen_kappa): {_described(registry.names(pairwise=True))}")
    q.set_defaults(func=_jvh_cmd, criterion=None, wide=False, raters=None, from_command="judge-vs-humans")
