"""Parameter descriptions written once and reused in every docstring that shares them.

A docstring names a shared parameter by a line holding only ``{name}`` (indented like the other
entries of its Parameters section); :func:`shared_docs` replaces the line with the text below, at
that indentation. Only whole lines of known names are replaced, so braces elsewhere in a docstring
(a dict in an example) are left alone. The reference site renders the filled docstrings.

>>> @shared_docs
... def f(df, *, n_boot=1000):
...     '''Do it.
...
...     Parameters
...     ----------
...     {n_boot}
...     '''
>>> "resamples" in f.__doc__
True
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from typing import TypeVar

__all__ = ["PARAMS", "shared_docs"]

F = TypeVar("F", bound=Callable)

PARAMS: dict[str, str] = {
    "columns": """\
columns : mapping of str to str, optional
    Your column names as ``{canonical name: your column}``, e.g. ``{"item": "case_id"}``. The tables
    are renamed before anything runs (see :mod:`medeval_kit.columns`); results use the canonical names.
    ``None`` (default) means the tables already use them.""",
    "n_boot": """\
n_boot : int, default 1000
    Item-bootstrap resamples for the CI; ``0`` gives the analytic interval where there is one, else none.""",
    "confidence": """\
confidence : float, default 0.95
    Coverage of the confidence interval.""",
    "seed": """\
seed : int, default 0
    Random seed; the same seed gives the same numbers on every machine.""",
    "ci_method": """\
ci_method : {"percentile", "bca", "analytic"}, default "percentile"
    How the interval is made: item-bootstrap percentile or BCa, or the coefficient's analytic interval.""",
    "source": """\
source : str, optional
    What to call the input in messages and notes (e.g. its file name).""",
    "ax": """\
ax : matplotlib Axes, optional
    Axes to draw on; a new figure when omitted.""",
    "title": """\
title : str, optional
    The title; empty or ``None`` for none.""",
    "width": """\
width : {"single", "double"} or float, default "single"
    Figure width: one or two journal columns, or inches (a new figure only).""",
    "figure": """\
Figure
    The matplotlib figure drawn on (``ax``'s figure when ``ax`` is given).""",
    "model": """\
model : str, optional
    The LLM, as ``provider/name`` (e.g. ``"local/smollm2-135m"``, ``"openai/gpt-4o-mini"``).""",
    "client": """\
client : Client, optional
    The LLM client (:func:`medeval_kit.llm.get_client`); one is made from ``model`` when omitted.""",
}

_LINE = re.compile(r"^(?P<indent>[ \t]*)\{(?P<name>[a-z_]+)\}[ \t]*$", re.M)


def shared_docs(fn=None, /, **more: str):
    """Fill the ``{name}`` lines of a docstring with the shared descriptions in :data:`PARAMS`.

    Use it bare (``@shared_docs``) or with a module's own shared texts
    (``@shared_docs(timeout="timeout : float, default 60\\n    Seconds per call.")``), which add to
    :data:`PARAMS` for that docstring.

    Parameters
    ----------
    fn : callable, optional
        A function or class whose docstring may hold ``{name}`` lines.
    **more : str
        Extra shared descriptions by name, for the functions of one module.

    Returns
    -------
    callable
        ``fn`` itself with its ``__doc__`` filled; without ``fn``, a decorator that does so.

    Raises
    ------
    KeyError
        A ``{name}`` line names no shared description.
    """
    texts = {**PARAMS, **more}

    def fill_doc(f: F) -> F:
        doc = f.__doc__
        if doc:
            def fill(m: re.Match) -> str:
                name = m["name"]
                if name not in texts:
                    raise KeyError(f"{f.__qualname__}: no shared description for {{{name}}}")
                return textwrap.indent(texts[name], m["indent"])

            f.__doc__ = _LINE.sub(fill, doc)
        return f

    return fill_doc(fn) if fn is not None else fill_doc
