"""Every public function and class documents every parameter (numpy style) and what it returns.

The public API is every name in a public package's ``__all__`` (``tests/api_surface.py``). Names not
yet documented are listed in ``tests/api_debt/<package>.txt`` (``docs <package>.<name>``); the test
fails on any other undocumented name and on a listed name that has since been documented.
"""

from __future__ import annotations

import inspect

from tests.api_surface import all_public, documented, parameters, ratchet, returns_none, sections


def _problems(obj) -> str:
    doc = inspect.getdoc(obj) or ""
    if not doc.strip():
        return "no docstring"
    missing = [p for p in parameters(obj) if p not in documented(doc)]
    out = []
    if missing:
        out.append(f"parameters not documented: {missing}")
    if not inspect.isclass(obj) and not returns_none(obj):
        secs = sections(doc)
        if "Returns" not in secs and "Yields" not in secs:
            out.append("no Returns section")
    return "; ".join(out)


def test_every_public_name_documents_its_parameters_and_returns():
    failing = {name: why for name, obj in all_public().items() if (why := _problems(obj))}
    problems = ratchet("docs", failing)
    assert not problems, "\n".join(problems)


def test_the_checker_can_fail():
    def f(a, b=1):
        """Do it.

        Parameters
        ----------
        a : int
            The a.
        """

    def g(a, *args, **kwargs):
        """Do it.

        Parameters
        ----------
        a, *args : int
            The a.
        **kwargs
            More.

        Returns
        -------
        int
        """

    assert "['b']" in _problems(f) and "no Returns" in _problems(f)
    assert _problems(g) == ""


def test_no_shared_placeholder_is_left_unfilled():
    """A ``{n_boot}`` line left in a docstring means the function lacks ``@shared_docs``."""
    from medeval_kit.docstrings import PARAMS

    left = [f"{name}: {{{key}}}" for name, obj in all_public().items() for key in PARAMS
            if any(line.strip() == "{" + key + "}" for line in (obj.__doc__ or "").splitlines())]
    assert not left, left
