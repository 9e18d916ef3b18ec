"""The input options every verdict command shares: how to read the file, and what the labels mean.

``--sep`` and ``--encoding`` say how a CSV/TSV is laid out (when they are not given the file is
checked first, and a semicolon-separated or Windows-1252 file is an early error naming the option).
``--categories``, ``--missing`` and ``--normalize-labels`` say what the labels mean. The label
checks (:func:`medeval_kit.agreement.check_labels`) then look for labels that differ only by case,
missing-value tokens used as labels, numbers but for a few, and labels used once or by one rater
only. A blocking finding withholds the verdict: the command marks its rows ``invalid``, says why
and exits with :data:`INVALID_EXIT`, unless the input is fixed or ``--accept-label-warnings`` is given.
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

__all__ = ["INVALID_EXIT", "add_file_options", "add_label_options", "separator", "blocking", "report_notes",
           "typed_categories", "read_options", "column_options"]

INVALID_EXIT = 1
"""Exit code of a verdict command whose input cannot support a verdict (an error in the command line is 2)."""

_SEP_NAMES = {"comma": ",", "semicolon": ";", "tab": "\t", "\\t": "\t", "pipe": "|"}


def separator(value: str) -> str:
    """``--sep`` value: one character, or a name (comma, semicolon, tab, pipe; ``\\t`` is a tab)."""
    v = _SEP_NAMES.get(value.lower(), value)
    if len(v) != 1:
        raise argparse.ArgumentTypeError(f"{value!r}: give one character (e.g. ';') or comma, semicolon, tab, pipe")
    return v


def add_file_options(p: argparse.ArgumentParser) -> None:
    """Add ``--sep`` and ``--encoding`` (CSV/TSV layout) to a command."""
    p.add_argument("--sep", type=separator, default=None, metavar="CHAR",
                   help="field separator of a CSV/TSV file: one character or comma, semicolon, tab, pipe "
                        "(default: ',' for .csv, tab for .tsv; a file that looks otherwise is an error naming this)")
    p.add_argument("--encoding", default=None, metavar="NAME",
                   help="text encoding of a CSV/TSV file, e.g. cp1252 for Excel on Windows (default: UTF-8, or "
                        "what a byte-order mark says)")


def add_label_options(p: argparse.ArgumentParser, *, categories_help: str | None = None) -> None:
    """Add ``--categories``, ``--missing``, ``--normalize-labels`` and ``--accept-label-warnings`` to a command."""
    p.add_argument("--categories", nargs="+", default=None, metavar="LABEL",
                   help=categories_help or "the declared labels (low to high when ordered): any other label is an "
                                           "error naming its rows, and declared labels are never reported as rare")
    p.add_argument("--missing", nargs="+", default=None, metavar="TOKEN",
                   help="label values that mean 'no label' (an empty cell always does); e.g. --missing NA n/a")
    p.add_argument("--normalize-labels", action="store_true",
                   help="merge labels that differ only by case or surrounding white space")
    p.add_argument("--accept-label-warnings", action="store_true",
                   help="compute the verdict even though the label checks found problems (they are still reported)")


def read_options(args) -> dict:
    """The keywords of :func:`medeval_kit.agreement.read_checked` that the shared options set."""
    return dict(sep=getattr(args, "sep", None), encoding=getattr(args, "encoding", None),
                missing=getattr(args, "missing", None) or (),
                normalize_labels=getattr(args, "normalize_labels", False),
                categories=getattr(args, "categories", None))


def column_options(args, *, criterion: bool = False) -> dict[str, str]:
    """The ``columns=`` mapping of the column options (``--item``, ``--rater``, ``--label``, ``--rater-kind``,
    ``--criterion``): ``{canonical name: the user's column}`` for the options given."""
    names = {"item": getattr(args, "item", None), "rater": getattr(args, "rater", None),
             "label": getattr(args, "label", None), "rater_kind": getattr(args, "rater_kind", None)}
    if criterion:
        names["criterion"] = getattr(args, "criterion", None)
    return {k: str(v) for k, v in names.items() if v}


def blocking(notes, args) -> list[str]:
    """The notes that withhold the verdict (none when ``--accept-label-warnings`` is given)."""
    if getattr(args, "accept_label_warnings", False):
        return []
    return [str(n) for n in notes if getattr(n, "blocking", False)]


def report_notes(notes, args, out=None) -> None:
    """Every label note on stderr, in CLI words: ``medeval: warning: FILE: ...`` (accepted ones say so)."""
    out = out or sys.stderr
    accepted = getattr(args, "accept_label_warnings", False)
    for n in notes:
        kind = "warning" if (not getattr(n, "blocking", False) or accepted) else "invalid input"
        out.write(f"medeval: {kind}: {args.file}: {n}\n")
    if any(getattr(n, "blocking", False) for n in notes) and not accepted:
        out.write("medeval: no verdict is given until the labels are fixed: fix the file or use the options named "
                  "above, or pass --accept-label-warnings to compute it anyway\n")


def typed_categories(cats, labels: pd.Series):
    """``--categories`` as the labels' type: numbers when the labels are numbers, else text as given."""
    if not cats or not pd.api.types.is_numeric_dtype(labels):
        return cats
    out = []
    for c in cats:
        try:
            out.append(float(c) if any(ch in c for ch in ".eE") else int(c))
        except ValueError:
            from medeval_kit.errors import MedevalError

            raise MedevalError(f"--categories {c!r}: the labels are numbers, so the categories must be too") from None
    return out
