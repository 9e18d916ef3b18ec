"""``medeval plan``: how many items (and physicians per item) does a judge-vs-humans or alt-test decision need?

``medeval plan judge-vs-humans [PILOT] --margin 0.05 --power 0.8 [--design loo|pooled] [--raters-per-item 2-4]``
and ``medeval plan alt-test [PILOT] --epsilon 0.2 --power 0.8``. With a PILOT file (the same file and column
options as ``medeval judge-vs-humans``) the panel's structure and noise are estimated from it; without one they
come from ``--accuracy-humans`` / ``--accuracy-judge`` or ``--kappa`` and ``--categories``. The power at
several numbers of items comes from simulated studies analysed with the very verdict the study will use
(:mod:`medeval_kit.agreement.planning`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys

import pandas as pd

from medeval_kit.agreement import AgreementError, PanelError, registry
from medeval_kit.agreement.alt_test import DEFAULT_EPSILON, DEFAULT_Q_FDR, MIN_ITEMS_PER_HUMAN
from medeval_kit.agreement.alt_test_planning import plan_alt_test
from medeval_kit.agreement.panel_model import REFERENCE_JUDGE, PlanningError, panel_model, panel_model_from
from medeval_kit.agreement.planning import PLAN_DESIGNS, PowerPlan, plan_judge_vs_humans
from medeval_kit.cli.agreement import (
    CommandError,
    _common_args,
    _panel_args,
    _read,
    cli_text,
    in_cli_words,
    jsonable,
)
from medeval_kit.errors import SchemaError

__all__ = ["register_cli", "parse_raters_per_item"]

_STATED = ("accuracy_humans", "accuracy_judge", "kappa", "judge_kappa", "prevalence")


# --------------------------------------------------------------------------- inputs


def parse_raters_per_item(text: str | None) -> list[int] | None:
    """``"3"`` -> [3]; ``"2-4"`` -> [2, 3, 4]; ``"2,4"`` -> [2, 4]; None -> None (the pilot's)."""
    if text is None:
        return None
    t = str(text).strip()
    m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", t)
    try:
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if lo > hi:
                raise ValueError
            vals = list(range(lo, hi + 1))
        else:
            vals = [int(x) for x in t.split(",") if x.strip()]
    except ValueError:
        raise CommandError(f"--raters-per-item takes a number (3), a range (2-4) or a list (2,4); got {text!r}") \
            from None
    if not vals or min(vals) < 2:
        raise CommandError(f"--raters-per-item must be 2 or more physicians per item; got {text!r}")
    if len(vals) > 6:
        raise CommandError(f"--raters-per-item: at most 6 values at once (each is a plan of its own); got {text!r}")
    return vals


def _where(args) -> str:
    return str(args.file) if args.file else f"plan {args.plan_command}"


def _model(args):
    """The panel model: estimated from the pilot file, or from the stated values."""
    stated = [f"--{k.replace('_', '-')}" for k in _STATED if getattr(args, k, None) is not None]
    if args.file:
        if stated:
            raise CommandError(f"{args.file}: {', '.join(stated)} state the panel without a pilot; with a PILOT file "
                               "the accuracies are estimated from it: drop the file or the option(s)")
        df, notes = _read(args)
        held = [str(n) for n in notes if getattr(n, "blocking", False)]
        if held and not getattr(args, "accept_label_warnings", False):
            raise CommandError(f"{args.file}: no plan from this pilot until its labels are fixed (see the messages "
                               "above): a model estimated from them would be wrong; fix the file or use the options "
                               "named above, or pass --accept-label-warnings")
        if not args.humans and "rater_kind" not in df.columns:
            raise CommandError(f"{args.file}: say who is human: pass --humans NAME ... or --rater-kind COL (a column "
                               f"with values 'human' and 'llm'); the file has no column {args.rater_kind!r}")
        cats = args.categories
        if cats and pd.api.types.is_numeric_dtype(df["label"]):
            cats = [float(c) if "." in c else int(c) for c in cats]
        try:
            return panel_model(df, args.humans, args.judges, categories=cats, source=str(args.file))
        except (SchemaError, AgreementError, PanelError) as exc:
            raise in_cli_words(exc, args) from None
    if args.accuracy_humans is None and args.kappa is None:
        raise CommandError(f"plan {args.plan_command}: give a PILOT file, or state the physicians' noise with "
                           "--accuracy-humans A (e.g. 0.85) or --kappa K (their pairwise kappa, e.g. 0.6)")
    cats = args.categories or ["3"]
    categories = int(cats[0]) if len(cats) == 1 and cats[0].isdigit() else list(cats)
    rpi = parse_raters_per_item(args.raters_per_item)
    n_phys = args.physicians or max([3, *(rpi or [])])
    try:
        return panel_model_from(args.accuracy_humans, args.accuracy_judge, kappa=args.kappa,
                                judge_kappa=args.judge_kappa, categories=categories, prevalence=args.prevalence,
                                n_physicians=n_phys, raters_per_item=min(rpi) if rpi else None)
    except PlanningError as exc:
        raise CommandError(f"plan {args.plan_command}: {_words(str(exc), args)}") from None


def _words(text: str, args) -> str:
    """Library parameter names as the command's options."""
    for ours, flag in (("accuracy_humans", "--accuracy-humans"), ("accuracy_judge", "--accuracy-judge"),
                       ("judge_kappa", "--judge-kappa"), ("n_physicians", "--physicians"),
                       ("raters_per_item", "--raters-per-item"), ("n_sim", "--n-sim"), ("n_boot", "--n-boot"),
                       ("n_max", "--max-items"), ("kappa", "--kappa"), ("prevalence", "--prevalence"),
                       ("epsilon", "--epsilon"), ("power", "--power"), ("margin", "--margin")):
        # only where the name is the parameter: "power must be", "n_physicians (3) must", "kappa=..."
        text = re.sub(rf"(?<![-\w']){re.escape(ours)}(?=\s+must\b|\s+needs\b|\s+\(\d|=)", flag, text)
    return cli_text(text, args)


def _checked(args) -> None:
    if not 0 < args.power < 1:
        raise CommandError(f"--power must be a probability between 0 and 1, e.g. 0.8; got {args.power}")
    if args.n_sim < 20:
        raise CommandError(f"--n-sim must be 20 or more simulated panels per n (200 for a final plan); got {args.n_sim}")
    if args.max_items < 30:
        raise CommandError(f"--max-items must be 30 or more; got {args.max_items}")
    if args.physicians is not None and args.physicians < 2:
        raise CommandError(f"--physicians must be 2 or more; got {args.physicians}")


def _judges_of(args, model):
    keep = list(model.judges)
    if args.file is None and args.judges:
        raise CommandError(f"plan {args.plan_command}: --judges names judges of a PILOT file; without one the judge is "
                           "stated with --accuracy-judge or --judge-kappa")
    return keep


# --------------------------------------------------------------------------- commands


def _jvh(args) -> int:
    _checked(args)
    if not 0 < args.confidence < 1:
        raise CommandError(f"--confidence must be a level between 0 and 1, e.g. 0.95; got {args.confidence}")
    if args.n_boot < 50:
        raise CommandError(f"--n-boot must be 50 or more resamples per simulated panel; got {args.n_boot}")
    model = _model(args)
    _judges_of(args, model)
    try:
        plan = plan_judge_vs_humans(model, args.margin, args.power, design=args.design, metric=args.metric,
                                    raters_per_item=parse_raters_per_item(args.raters_per_item),
                                    n_physicians=args.physicians, reference=not args.no_reference,
                                    n_sim=args.n_sim, n_boot=args.n_boot, confidence=args.confidence,
                                    n_max=args.max_items, seed=args.seed, progress=True)
    except PlanningError as exc:
        raise CommandError(f"{_where(args)}: {_words(str(exc), args)}") from None
    _write(plan, args, sys.stdout)
    return 0


def _alt(args) -> int:
    _checked(args)
    model = _model(args)
    _judges_of(args, model)
    try:
        plan = plan_alt_test(model, args.epsilon, args.power,
                             raters_per_item=parse_raters_per_item(args.raters_per_item),
                             n_physicians=args.physicians, reference=not args.no_reference, q_fdr=args.q_fdr,
                             min_items_per_human=args.min_items_per_human, epsilon_items=args.epsilon_items,
                             n_sim=args.n_sim, n_max=args.max_items, seed=args.seed, progress=True)
    except PlanningError as exc:
        raise CommandError(f"{_where(args)}: {_words(str(exc), args)}") from None
    _write(plan, args, sys.stdout)
    return 0


# --------------------------------------------------------------------------- output


def _records(t: pd.DataFrame | None) -> list[dict]:
    if t is None:
        return []
    return [{k: jsonable(v) for k, v in r.items()} for r in t.to_dict("records")]


def _f(v, spec=".3f") -> str:
    return "" if pd.isna(v) else format(v, spec)


def _write(plan: PowerPlan, args, out) -> None:
    if args.format == "csv":
        plan.to_frame().to_csv(out, index=False)
        return
    if args.format == "json":
        doc = dict(command=f"plan {args.plan_command}", pilot=str(args.file) if args.file else None,
                   rule=plan.rule(), settings={k: jsonable(v) for k, v in plan.settings.items()},
                   planned=_records(plan.planned), power=_records(plan.to_frame()),
                   epsilon=_records(plan.epsilon) if plan.epsilon is not None else None,
                   epsilon_planned=_records(plan.epsilon_planned) if plan.epsilon_planned is not None else None,
                   assumptions=plan.model.describe(), model=_records(plan.model.to_frame()),
                   simulation=plan.simulation(), seed=args.seed, seconds=round(plan.seconds, 2))
        json.dump(doc, out, indent=2)
        out.write("\n")
        return
    s = plan.settings
    out.write(f"Plan: {args.plan_command}, target power {s['power']:g}\n")
    out.write(f"verdict: {plan.rule()}\n\n")
    t = plan.to_frame()
    order = {j: k for k, j in enumerate(plan.model.judges)}
    t = t.assign(_o=t["judge"].map(order)).sort_values(["raters_per_item", "_o", "n_items"], kind="stable")
    shown = pd.DataFrame({
        "judge": t["judge"], "per_item": t["raters_per_item"], "n_items": t["n_items"],
        "items/physician": t["items_per_physician"].map(lambda v: _f(v, ".0f")),
        "power": t["power"].map(_f), "ci_low": t["power_ci_low"].map(_f), "ci_high": t["power_ci_high"].map(_f),
        "n_sim": t["n_sim"]})
    out.write("Power by number of items (share of simulated studies that pass; 95% Wilson CI of that share; "
              "per_item = physicians per item):\n")
    out.write(shown.to_string(index=False) + "\n\n")
    out.write("Planned number of items:\n")
    for r in plan.planned.itertuples():
        if r.status == "planned":
            words = (f"{int(r.planned_n)} items, {r.raters_per_item} physicians per item of {r.n_physicians} "
                     f"({r.items_per_physician:.0f} items per physician, {int(r.total_labels)} physician labels)")
            if r.reason:
                words += f"; {r.reason}"
        else:
            words = r.reason
        if r.status == "planned" and pd.notna(getattr(r, "expected_delta", None)):
            words += f" [expected delta {r.expected_delta:+.3f}]"
        out.write(f"  {r.judge}: {words}\n")
    if plan.epsilon_planned is not None and len(plan.epsilon_planned):
        out.write("\nepsilon: the smallest epsilon at which the judge passes with the target power\n")
        for r in plan.epsilon_planned.itertuples():
            need = "not below 2 (never passes)" if pd.isna(r.epsilon_needed) else f"{r.epsilon_needed:.3f}"
            out.write(f"  {r.judge}: epsilon {need} at {r.n_items} items ({r.items_per_physician:.0f} per "
                      f"physician, {r.raters_per_item} per item; {r.n_sim} panels)\n")
        e = plan.epsilon
        piv = e.pivot_table(index="epsilon", columns="judge", values="power", sort=False)
        out.write("  power by epsilon at those items:\n")
        out.write("\n".join("    " + x for x in piv.map(_f).to_string().splitlines()) + "\n")
    out.write("\nAssumptions:\n")
    out.writelines(f"  {x}\n" for x in plan.model.describe())
    if REFERENCE_JUDGE in plan.model.judges:
        out.write(f"  '{REFERENCE_JUDGE}': a judge with the physicians' average confusion matrix (the usual "
                  "planning assumption: as good as the physicians; --no-reference drops it)\n")
    out.write(f"\nSimulation: {plan.simulation()}\n")


# --------------------------------------------------------------------------- parser


def _action(p, dest: str):
    return next(a for a in p._actions if a.dest == dest)


def _add(p, *flags, **kw) -> None:
    """Add an option unless the shared column options already have it (e.g. --categories)."""
    if not any(f in p._option_string_actions for f in flags):
        p.add_argument(*flags, **kw)


def _plan_args(q, what: str) -> None:
    _common_args(q)
    pilot = _action(q, "file")
    pilot.nargs, pilot.default, pilot.metavar = "?", None, "PILOT"
    pilot.help = ("pilot annotations file (.csv, .tsv, .jsonl, .json, .parquet), long format, as for 'medeval "
                  "judge-vs-humans'; without it, state the panel with --accuracy-humans or --kappa")
    q.add_argument("--power", type=float, default=0.8, help="target power: the share of studies that pass (default 0.8)")
    q.add_argument("--raters-per-item", default=None, metavar="R",
                   help="physicians per item: a number (3), a range (2-4: one plan each) or a list (2,4); default: "
                        "the pilot's median, or --physicians")
    q.add_argument("--physicians", type=int, default=None, metavar="N",
                   help="physicians in the pool; each item gets --raters-per-item of them at random (default: the "
                        "pilot's, at least --raters-per-item)")
    q.add_argument("--n-sim", type=int, default=200, help="simulated studies per number of items (default 200)")
    q.add_argument("--max-items", type=int, default=10000, help="largest number of items searched (default 10000)")
    q.add_argument("--no-reference", action="store_true",
                   help=f"leave out the reference judge ('{REFERENCE_JUDGE}')")
    g = q.add_argument_group("without a pilot file: the panel in stated values")
    g.add_argument("--accuracy-humans", type=float, nargs="+", default=None, metavar="A",
                   help="each physician's probability of giving the true class (one value, or one per physician)")
    g.add_argument("--accuracy-judge", type=float, nargs="+", default=None, metavar="A",
                   help="the judge's accuracy (default: as good as the physicians)")
    g.add_argument("--kappa", type=float, default=None, help="instead of accuracies: the physicians' pairwise kappa")
    g.add_argument("--judge-kappa", type=float, default=None, help="the judge's kappa with a physician (default --kappa)")
    _add(g, "--categories", nargs="+", default=None, metavar="C",
         help="the number of categories (3) or their labels (default 3); with a pilot: the declared labels")
    g.add_argument("--prevalence", type=float, nargs="+", default=None, metavar="P",
                   help="share of each true category (default uniform)")
    q.set_defaults(criterion=None, wide=False, raters=None, from_command=f"plan {what}", plan_command=what)


def register_cli(subparsers) -> None:
    """Add ``medeval plan judge-vs-humans`` and ``medeval plan alt-test`` to the ``medeval`` command."""
    p = subparsers.add_parser(
        "plan", help="how many items and physicians does a judge-vs-humans or alt-test decision need?",
        description="Sample size by simulation: the panel's structure and noise come from a pilot file (Dawid-Skene "
                    "EM) or from stated accuracies or kappa; simulated studies are analysed with the same verdict "
                    "the study will use, and the power is given at several numbers of items.")
    sub = p.add_subparsers(dest="plan_command", metavar="VERDICT")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    q = sub.add_parser(
        "judge-vs-humans", help="items (and physicians per item) to show a judge non-inferior with the target power",
        description="How many items does 'medeval judge-vs-humans' need to call a judge non-inferior (the lower "
                    "bound of delta's CI above -margin) with the target power? Each judge of the pilot is planned at "
                    "its estimated accuracy, next to a reference judge as good as the physicians.")
    _plan_args(q, "judge-vs-humans")
    _panel_args(q)
    design = _action(q, "design")
    design.choices = list(PLAN_DESIGNS)
    design.help = "loo (default) or pooled, as in 'medeval judge-vs-humans'"
    q.add_argument("--metric", default="cohen_kappa", choices=registry.names(pairwise=True),
                   help="agreement metric of the study (default cohen_kappa)")
    boot = _action(q, "n_boot")
    boot.help = ("bootstrap resamples in each simulated study (default 200, for speed; the study itself uses 1000: "
                 "the power changes by well under a point)")
    q.set_defaults(func=_jvh, n_boot=200)

    a = sub.add_parser(
        "alt-test", help="items per annotator (and epsilon) for the alt-test to pass with the target power",
        description="How many items per physician does 'medeval alt-test' need for a judge to pass with the target "
                    "power, and at which epsilon would it pass with the items you have?")
    _plan_args(a, "alt-test")
    a.add_argument("--humans", nargs="+", default=None, metavar="NAME", help="the human raters of the pilot")
    a.add_argument("--rater-kind", default="rater_kind", metavar="COL",
                   help="column saying who is human: values 'human' and 'llm' (default: rater_kind)")
    a.add_argument("--judges", nargs="+", default=None, metavar="NAME", help="the judges of the pilot to plan for")
    a.add_argument("--epsilon", type=float, default=DEFAULT_EPSILON,
                   help="the alt-test's cost-benefit margin (default 0.2, physicians)")
    a.add_argument("--q-fdr", type=float, default=DEFAULT_Q_FDR, help="Benjamini-Yekutieli FDR level (default 0.05)")
    a.add_argument("--min-items-per-human", type=int, default=MIN_ITEMS_PER_HUMAN,
                   help="physicians with fewer items are not tested (default 30)")
    a.add_argument("--epsilon-items", type=int, default=None, metavar="N",
                   help="items at which the epsilon table is simulated (default: the pilot's, else the planned n)")
    for dest in ("n_boot", "confidence"):
        _action(a, dest).help = argparse.SUPPRESS
    a.set_defaults(func=_alt)
