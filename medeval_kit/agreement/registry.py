"""The coefficient registry: every agreement coefficient is one function decorated with :func:`coefficient`.

:func:`~medeval_kit.agreement.agreement`, the public per-coefficient functions
(``agreement.cohen_kappa`` ...), ``agreement.METRICS``, the ``medeval agreement`` and
``medeval judge-vs-humans`` choices and help, the plot labels and the app's dropdown all read
:data:`REGISTRY`; nothing else lists the coefficients. Three families, by what the function gets:

``labels``
    ``fn(t: Table) -> values``: a function of the summed agreement counts of ``m`` (re)samples
    (:class:`~medeval_kit.agreement.forms.Table`: observed agreement ``po``, category shares,
    joint proportions of a pair, the weights). The engine builds the two-rater contingency form and
    the many-rater count form from it, weights included.
``icc``
    ``fn(ms: MeanSquares) -> values``: an intraclass correlation from the ANOVA mean squares.
``custom``
    ``fn(data: Data, opts: Options) -> (Stat, note)``: anything else (Krippendorff's alpha,
    Conger's kappa, correlations).

A new coefficient is one decorated function plus a test::

    @coefficient(label="Bangdiwala's B", more_raters="light")
    def bangdiwala_b(t):
        \"\"\"Bangdiwala's B: squared diagonal over the products of the marginals.\"\"\"
        return safe_div((np.einsum("mkk->mk", t.joint) ** 2).sum(1), (t.rows * t.cols).sum(1))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from medeval_kit.agreement.data import AgreementError

__all__ = ["Coefficient", "Options", "REGISTRY", "FAMILIES", "FORMS", "coefficient", "get", "names", "unregister"]

FAMILIES = ("labels", "icc", "custom")
FORMS = ("pair", "multi", "light")
"""How a ``labels`` coefficient is computed: on a pair's contingency table, on per-item counts of many
raters, or as the mean over rater pairs (Light's kappa)."""


@dataclass(frozen=True)
class Options:
    """What a ``custom`` coefficient may need beyond the data: resolved weights and the Fleiss convention."""

    weights: np.ndarray | None = None
    fleiss_marginals: str = "per_item"


@dataclass(frozen=True)
class Coefficient:
    """One registered coefficient and how the engine computes it."""

    name: str
    fn: Callable
    family: str
    label: str
    two_raters: str = "pair"
    more_raters: str | None = "multi"
    weighted: bool = False
    default_weights: str | None = None
    fleiss_marginals: bool = False
    reference: bool = False
    many_note: str = ""
    level: str = "nominal"
    analytic: Callable | None = None

    @property
    def summary(self) -> str:
        """The first line of the function's docstring."""
        return (self.fn.__doc__ or self.label).strip().splitlines()[0]

    @property
    def nominal(self) -> bool:
        """True when the coefficient needs no order of the labels (no default weights)."""
        return self.default_weights is None and self.level == "nominal"

    @property
    def pairwise(self) -> bool:
        """True when two raters give the contingency-table form (usable on label pairs and designs)."""
        return self.family == "labels" and self.two_raters == "pair"


REGISTRY: dict[str, Coefficient] = {}
"""Coefficient name -> :class:`Coefficient`, in registration order."""


def coefficient(name: str | None = None, *, label: str, family: str = "labels", two_raters: str = "pair",
                more_raters: str | None = "multi", weighted: bool | None = None, default_weights: str | None = None,
                fleiss_marginals: bool = False, reference: bool = False, many_note: str = "",
                level: str | None = None, analytic: Callable | None = None) -> Callable[[Callable], Callable]:
    """Register the decorated function as a coefficient (named after it unless ``name``); returns it unchanged.

    ``label``: readable name (axes, help). ``labels`` family: ``two_raters`` (``pair`` or ``multi``)
    and ``more_raters`` (``multi``, ``light`` or None = exactly two raters) pick the forms;
    ``reference`` marks a coefficient that scores ``raters[1]`` against the reference ``raters[0]``;
    ``weighted`` (default True for ``labels``) accepts linear/quadratic/matrix weights, and
    ``default_weights`` applies when none are given; ``fleiss_marginals`` uses that option (with
    its note); ``many_note`` is the note of the many-rater form (``{pairs}``: number of rater
    pairs). ``level``: measurement level when the caller gives none (``interval`` for ``icc``).
    ``analytic``: the analytic interval, ``(w, K) -> Analytic | None`` for the pair form of a
    ``labels`` coefficient, ``(ms, confidence) -> (lo, hi, ci_method)`` for an ``icc`` one.
    """
    if family not in FAMILIES:
        raise AgreementError(f"family must be one of {FAMILIES}; not {family!r}")
    if two_raters not in ("pair", "multi") or more_raters not in (None, *FORMS):
        raise AgreementError(f"two_raters must be 'pair' or 'multi' and more_raters one of {FORMS} or None")

    def register(fn: Callable) -> Callable:
        key = name or fn.__name__
        if key in REGISTRY:
            raise AgreementError(f"coefficient {key!r} is already registered; unregister it first")
        REGISTRY[key] = Coefficient(
            key, fn, family, label, two_raters, None if reference else more_raters,
            (family == "labels") if weighted is None else weighted, default_weights, fleiss_marginals, reference,
            many_note, level or ("interval" if family == "icc" else "nominal"), analytic)
        return fn

    return register


def unregister(name: str) -> Coefficient:
    """Remove a coefficient from the registry and return it."""
    return REGISTRY.pop(name)


def get(name: str) -> Coefficient:
    """The registered coefficient ``name``; AgreementError naming the choices otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise AgreementError(f"unknown metric {name!r}; choose one of {names()}") from None


def names(*, family: str | None = None, **flags: bool) -> list[str]:
    """Registered coefficient names, optionally one ``family`` and only those whose flags (``pairwise``,
    ``reference``, ``nominal``, ``weighted``) have the given values."""
    return [c.name for c in REGISTRY.values()
            if (family is None or c.family == family) and all(getattr(c, k) == v for k, v in flags.items())]
