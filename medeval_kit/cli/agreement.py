"""``medeval agreement`` and ``medeval judge-vs-humans``: agreement on the user's own file, no notebook.

Both work on any panel, including sparse physician panels where each item has its own 2-4
raters: a statistic that is undefined for a design becomes NaN with the reason in ``note`` and
never aborts the other rows.
"""

from __future__ import annotations

import json
import math
import re
import sys

import numpy as np
import pandas as pd

from medeval_kit.agreement import (
    DEFAULT_METRICS,
    DESIGNS,
    AgreementError,
    PanelError,
    agreement_report,
    describe_raters,
    judge_vs_humans,
    read_checked,
    registry,
)
from medeval_kit.agreement.data import DuplicateLabelError, LabelOrderError, UnknownLabelError
from medeval_kit.agreement.dependence import dependence_warnings
from medeval_kit.agreement.report import split_metric
from medeval_kit.agreement.weights import WEIGHT_NAMES
from medeval_kit.cli.inputs import (
    INVALID_EXIT,
    add_file_options,
    add_label_options,
    blocking,
    column_options,
    read_options,
    report_notes,
    typed_categories,
)
from medeval_kit.errors import MedevalError, SchemaError
from medeval_kit.results import RESULT_COLUMNS

__all__ = ["register_cli", "jsonable", "metric_choices", "CommandError", "in_cli_words", "cli_text"]

JVH_FIELDS = ["role", "rater", "design", "metric", *RESULT_COLUMNS, "n_pairs", "delta", "delta_ci_low",
              "delta_ci_high", "p_value", "p_noninferiority", "noninferior", "margin", "status", "rule", "reasons"]


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
            rec["raters"] = str(r["raters"]).split("|") if r["raters"] != "" else []  # "" : the hidden-pairs row
            recs.append(rec)
        json.dump(recs, out, indent=2)
        out.write("\n")
        return
    for section, sub in table.groupby("section", sort=False):
        sub = sub.copy()
        hidden = []  # the pairwise section's "N of M rater pairs ... are hidden" row(s): a footnote, not a pair
        if section == "pairwise":
            summary = sub["raters"].astype(str).eq("")
            for r in sub[summary].to_dict("records"):
                m = re.search(r"\d+ of \d+ rater pairs share fewer than \d+ items and are hidden", str(r["note"]))
                crit = f"{r['criterion']}: " if "criterion" in r else ""
                if m:
                    hidden.append(f"{crit}{m.group(0)} (--min-overlap 0 shows them)")
            sub = sub[~summary]
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
        if len(sub):
            out.write(_show(sub, cols + ["note"]) + "\n")
        if section == "pairwise":
            none = int((sub["n_items"] == 0).sum())
            if none:
                out.write(f"  {none} of {len(sub)} rater pairs shown share no item (NaN)\n")
            for h in hidden:
                out.write(f"  {h}\n")
        out.write("\n")
    for f in _footnotes(table):
        out.write(f"{f}\n")


# --------------------------------------------------------------------------- commands


def _read(args):
    wide = getattr(args, "wide", False)
    frame = _from_format(args)
    df, notes = read_checked(args.file, columns=column_options(args, criterion=True), wide=wide,
                             raters=args.raters if wide else None, frame=frame, **read_options(args))
    if not getattr(args, "rater_kind", None) and "rater_kind" in df.columns:
        df = df.drop(columns="rater_kind")  # --rater-kind '': no rater-kind column
    report_notes(notes, args)
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
        raise AgreementError(f"--n-boot must be 0 or more (0 = the analytic CI where one exists); got {args.n_boot}")
    if not 0 < args.confidence < 1:
        raise AgreementError(f"--confidence must be a level between 0 and 1, e.g. 0.95; got {args.confidence}")


class CommandError(MedevalError):
    """A library error in the command's own words: its options, the user's column names and the file."""


def _columns(args) -> dict[str, str]:
    """Our internal column names -> what the user calls them (wide files: the rater columns)."""
    if getattr(args, "wide", False):
        raters = ", ".join(args.raters) if getattr(args, "raters", None) else f"every column but {args.item!r}"
        return {"item": args.item, "rater": f"rater columns ({raters})", "label": f"rater columns ({raters})"}
    names = {"item": args.item, "rater": args.rater, "label": args.label}
    kind = getattr(args, "rater_kind", None)
    if kind:
        names["rater_kind"] = kind
    return names


def cli_text(text: str, args) -> str:
    """Library wording in CLI terms: the user's column names, ``--option value`` for ``option='value'``, and
    no Python alternatives (``--humans NAME ... / humans=[...]`` keeps the option)."""
    for ours, theirs in _columns(args).items():
        text = text.replace(f"'{ours}'", f"'{theirs}'")
    text = re.sub(r"\s*/\s*\w+=(\[\.\.\.\]|\.\.\.)", "", text)  # "--humans NAME ... / humans=[...]"
    text = re.sub(r"\w+=\[\.\.\.\]\s*/\s*", "", text)  # "judges=[...] / --judges NAME ..."
    text = re.sub(r"(\w+)='([^']*)' \((--[\w-]+ [^)]*)\)", r"\3", text)  # "scoring='a' (--scoring a)"
    options = {k for k in vars(args) if not k.startswith("_")}

    def flag(m: re.Match) -> str:
        return f"--{m.group(1).replace('_', '-')} {m.group(2)}" if m.group(1) in options else m.group(0)

    text = re.sub(r"\b(\w+)='([^']*)'", flag, text)
    return re.sub(r"(?<![-\w])(\w+)(?= must be)",  # "q_fdr must be ..." -> "--q-fdr must be ..."
                  lambda m: f"--{m.group(1).replace('_', '-')}" if m.group(1) in options else m.group(0), text)


def _where(exc: SchemaError, args, column: str | None = None) -> str:
    """``FILE, column 'grade', rows [3, 7] (2 in all)`` for a located error, in the user's names."""
    names = _columns(args)
    col = column if column is not None else names.get(exc.column, exc.column)
    shown = ", ".join(map(str, exc.rows[:10])) + (" ..." if len(exc.rows) > 10 else "")
    rows = f", rows [{shown}] ({len(exc.rows)} in all; data rows from 0)" if exc.rows else ""
    where = (f", the {col}" if col.startswith("rater columns") else f", column {col!r}") if col else ""
    return f"{exc.source or args.file}{where}{rows}"


def _asked_for_order(args, level: str) -> str:
    """What in the command asked for ordered labels: ``--level ordinal`` or a weighted ``--metric``."""
    if args.level == level:
        return f"--level {level}"
    weighted = [m for m in (args.metric or DEFAULT_METRICS)
                if split_metric(m)[1] or getattr(registry.REGISTRY.get(m), "default_weights", None)]
    return f"--metric {weighted[0]} (weighted)" if weighted else f"--level {level}"


def in_cli_words(exc: MedevalError, args) -> MedevalError:
    """The error as the command says it: the option to use (``--categories low medium high``), the user's own
    column names and the file. Structured library errors are re-worded from their fields."""
    names = _columns(args)
    if isinstance(exc, LabelOrderError):
        labels = ", ".join(map(repr, exc.labels[:8])) + (" ..." if len(exc.labels) > 8 else "")
        if exc.need == "increasing":
            lo, hi = exc.labels
            problem = (f"--categories {' '.join(map(str, exc.declared))} are not in increasing order ({hi!r} comes "
                       f"after {lo!r}): list the categories lowest first")
        elif exc.need == "numbers":
            problem = (f"--level {exc.level} needs numeric labels; the labels are text ({labels}): use --level "
                       "ordinal with their order, lowest first, e.g. --categories low medium high")
        else:
            problem = (f"{_asked_for_order(args, exc.level)} needs the labels in order; they are text ({labels}): "
                       "list them lowest first with --categories, e.g. --categories low medium high")
        return CommandError(f"{_where(exc, args)}: {problem}")
    if isinstance(exc, UnknownLabelError):
        unknown = " ".join(map(str, exc.labels))
        return CommandError(
            f"{_where(exc, args)}: label(s) {', '.join(map(repr, exc.labels))} are not among --categories "
            f"{' '.join(map(str, exc.declared))}: add them to --categories, or count them as missing with "
            f"--missing {unknown}")
    if isinstance(exc, DuplicateLabelError):
        item, rater = names["item"], names["rater"]
        ex_item, ex_rater = exc.example
        return CommandError(
            f"{_where(exc, args, column=f'{item}, {rater}')}: {rater} {ex_rater!r} labelled {item} {ex_item!r} "
            f"more than once; each {rater} may label each {item} once: keep one row per ({item}, {rater})"
            + (", or name the column that tells the rows apart with --criterion COLUMN"
               if getattr(args, "from_command", "") == "agreement" else ""))
    if isinstance(exc, SchemaError):
        problem = cli_text(exc.problem, args).replace("the label option", "--label")
        return CommandError(f"{_where(exc, args)}: {problem}")
    if isinstance(exc, (AgreementError, PanelError)):
        text = cli_text(str(exc), args)
        if re.search(r"needs at least \d+ human raters", text):
            text += "; pass two or more names to --humans (or mark them 'human' in the --rater-kind column)"
        src = str(args.file)
        return CommandError(text if text.startswith(src) else f"{src}: {text}")
    return exc


def _words(table: pd.DataFrame, args) -> pd.DataFrame:
    """The table's notes in CLI terms (e.g. an unknown --raters name, said with the user's rater column)."""
    if "note" in table.columns:
        table = table.assign(note=[cli_text(n, args) if isinstance(n, str) else n for n in table["note"]])
    return table


def _cmd(args) -> int:
    _check_common(args)
    if getattr(args, "from_format", None) and args.criterion is None:
        args.criterion = "criterion"  # the tidy annotations table has one; one set of results per criterion
    df, notes = _read(args)
    if blocking(notes, args):
        return INVALID_EXIT
    cats = typed_categories(args.categories, df["label"])
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
            ci_method=args.ci_method, seed=args.seed, notes=[str(n) for n in notes], min_overlap=args.min_overlap,
        )
    except (SchemaError, AgreementError, PanelError) as exc:  # row numbers: data rows of the (long) file, from 0
        raise in_cli_words(exc, args) from None
    _write_agreement(_words(table, args), args.format, sys.stdout)
    return 0


def _jvh_cmd(args) -> int:
    from medeval_kit.agreement.verdicts import mark_invalid

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
                              categories=typed_categories(getattr(args, "categories", None), df["label"]),
                              source=str(args.file), accept_label_warnings=True)  # checked on reading, in CLI words
    except (SchemaError, AgreementError, PanelError) as exc:
        raise in_cli_words(exc, args) from None
    for w in dependence_warnings(df, res.humans, res.judges, metric=args.metric, n_boot=args.n_boot or 1000,
                                 seed=args.seed):
        print(f"medeval: {w}", file=sys.stderr)
    block = blocking(notes, args)
    for b in block:  # dirty labels: the numbers are shown, the verdict is not given
        res = mark_invalid(res, cli_text(b, args))
    t = _words(res.to_frame(), args)
    t = t.assign(reasons=[cli_text(x, args) for x in t["reasons"]])
    notes = [str(n) for n in notes]
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
                            "delta_ci_low", "delta_ci_high", "p_value", "status"]) + "\n")
        for rule in pd.unique(t.loc[t["role"] == "judge", "rule"]):
            if rule:
                out.write(f"rule: {rule}\n")
        for r in t.itertuples():
            if r.role == "judge" and r.status:
                p = "" if pd.isna(r.p_noninferiority) else f" (p_noninferiority = {r.p_noninferiority:.3g})"
                out.write(f"  {r.rater}: {r.status} at margin {r.margin:g}{p}: {r.reasons}\n")
        for n in pd.unique(t["note"]):
            if n:
                out.write(f"note: {n}\n")
        if res.ci_method:
            out.write(f"CI: {res.ci_method}\n")
    return INVALID_EXIT if block else 0


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
    add_file_options(p)
    add_label_options(p)
    p.add_argument("--n-boot", type=int, default=1000,
                   help="bootstrap resamples of items (default 1000; 0 = the analytic CI where the statistic has one, "
                        "else none; judge-vs-humans verdicts need the bootstrap)")
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
    p.add_argument("--level", default="nominal", choices=["nominal", "ordinal", "interval", "ratio"],
                   help="measurement level for Krippendorff's alpha")
    p.add_argument("--metric", nargs="+", default=None, choices=metric_choices(), metavar="METRIC",
                   help=f"metrics (default: {' '.join(DEFAULT_METRICS)}); any of {' '.join(registry.names())}; "
                        f"weighted: NAME_linear or NAME_quadratic for {', '.join(_weighted())}")
    p.add_argument("--pairwise", action="store_true",
                   help="add every rater pair that shares at least --min-overlap items (a footnote counts the others)")
    p.add_argument("--min-overlap", type=int, default=10, metavar="N",
                   help="--pairwise: leave out rater pairs sharing fewer than N items (default 10; 0 shows every "
                        "pair, NaN for pairs sharing no item). No CI is computed from fewer than 10 items")
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
