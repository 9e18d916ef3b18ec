"""The coefficient registry: every agreement coefficient is one function decorated with :func:`coefficient`.

:func:`~medeval_kit.agreement.agreement`, the public per-coefficient functions
(``agreement.cohen_kappa`` ...), ``agreement.METRICS``, the ``medeval agreement`` and
``medeval judge-vs-humans`` choices and help, the plot labels and the app's dropdown all read
:data:`REGISTRY`; nothing else lists the coefficients. Another distribution adds coefficients through
the entry-point group ``medeval_kit.coefficients`` (a module of decorated functions), loaded at the first
read of the registry; a built-in keeps its name (see :mod:`medeval_kit.plugins`). Three families, by
what the function gets:

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

from medeval_kit import plugins
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
    """One registered coefficient and how the engine computes it (see :func:`coefficient`).

    Parameters
    ----------
    name : str
        The coefficient's name (``cohen_kappa``).
    fn : callable
        Computes it from the engine's tables.
    family : {"labels", "alpha", "icc", "correlation"}
        Which engine computes it.
    label : str
        The readable name (axes, help).
    two_raters : {"pair", "multi"}, default "pair"
        The form used for two raters.
    more_raters : {"multi", "light"} or None, default "multi"
        The form for more raters; ``None`` means exactly two raters.
    weighted : bool, default False
        Accepts linear, quadratic or matrix weights.
    default_weights : str, optional
        The weights used when the caller gives none.
    fleiss_marginals : bool, default False
        Uses the ``fleiss_marginals`` option (with its note).
    reference : bool, default False
        Scores ``raters[1]`` against the reference ``raters[0]``.
    many_note : str
        The note of the many-rater form (``{pairs}``: the number of rater pairs).
    level : str, default "nominal"
        The measurement level when the caller gives none.
    analytic : callable, optional
        Its analytic interval, when it has one.
    """

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


class _Registry(dict):
    """A dict whose reads (lookup, ``in``, iteration, ``len``, ``get``, ``keys``, ``values``, ``items``) first
    load the built-ins and the ``medeval_kit.coefficients`` plugins (once; see :mod:`medeval_kit.plugins`)."""

    def __getitem__(self, name):
        plugins.load(plugins.COEFFICIENTS)
        return super().__getitem__(name)

    def __contains__(self, name) -> bool:
        plugins.load(plugins.COEFFICIENTS)
        return super().__contains__(name)

    def __iter__(self):
        plugins.load(plugins.COEFFICIENTS)
        return super().__iter__()

    def __len__(self) -> int:
        plugins.load(plugins.COEFFICIENTS)
        return super().__len__()

    def get(self, name, default=None):
        plugins.load(plugins.COEFFICIENTS)
        return super().get(name, default)

    def keys(self):
        plugins.load(plugins.COEFFICIENTS)
        return super().keys()

    def values(self):
        plugins.load(plugins.COEFFICIENTS)
        return super().values()

    def items(self):
        plugins.load(plugins.COEFFICIENTS)
        return super().items()

    def __repr__(self) -> str:
        plugins.load(plugins.COEFFICIENTS)
        return super().__repr__()


REGISTRY: dict[str, Coefficient] = _Registry()
"""Coefficient name -> :class:`Coefficient`, in registration order (built-ins, then plugins). Every read
loads the plugins first, so it is complete whatever was imported before."""
plugins.attach(plugins.COEFFICIENTS, names=lambda: list(dict.keys(REGISTRY)),
               drop=lambda name: dict.pop(REGISTRY, name, None))


def coefficient(name: str | None = None, *, label: str, family: str = "labels", two_raters: str = "pair",
                more_raters: str | None = "multi", weighted: bool | None = None, default_weights: str | None = None,
                fleiss_marginals: bool = False, reference: bool = False, many_note: str = "",
                level: str | None = None, analytic: Callable | None = None) -> Callable[[Callable], Callable]:
    """Register the decorated function as a coefficient (named after it unless ``name``); returns it unchanged.

    The coefficient then reaches :func:`~medeval_kit.agreement.agreement`, the CLI's ``--metric`` choices,
    the plots' labels and the agreement app, with the same item-bootstrap CI as every other coefficient.

    Parameters
    ----------
    name : str, optional
        The registered name; default the function's name.
    label : str
        The readable name (axes, help).
    family : {"labels", "alpha", "icc", "correlation"}, default "labels"
        Which engine computes it.
    two_raters : {"pair", "multi"}, default "pair"
        The form for two raters.
    more_raters : {"multi", "light"} or None, default "multi"
        The form for more raters (``light``: the mean over rater pairs); ``None`` = exactly two raters.
    weighted : bool, optional
        Accepts linear/quadratic/matrix weights; default True for the ``labels`` family.
    default_weights : str, optional
        The weights when none are given.
    fleiss_marginals : bool, default False
        Uses that option (with its note).
    reference : bool, default False
        Scores ``raters[1]`` against the reference ``raters[0]``.
    many_note : str
        The note of the many-rater form (``{pairs}``: number of rater pairs).
    level : str, optional
        The measurement level when the caller gives none (``interval`` for ``icc``).
    analytic : callable, optional
        The analytic interval: ``(w, K) -> Analytic | None`` for the pair form of a ``labels`` coefficient,
        ``(ms, confidence) -> (lo, hi, ci_method)`` for an ``icc`` one.

    Returns
    -------
    callable
        The decorator; it returns the function unchanged.

    Raises
    ------
    ParameterError
        The name is already registered.
    """
    if family not in FAMILIES:
        raise AgreementError(f"family must be one of {FAMILIES}; not {family!r}")
    if two_raters not in ("pair", "multi") or more_raters not in (None, *FORMS):
        raise AgreementError(f"two_raters must be 'pair' or 'multi' and more_raters one of {FORMS} or None")

    def register(fn: Callable) -> Callable:
        key = name or fn.__name__
        verdict = plugins.admit(plugins.COEFFICIENTS, key, dict.__contains__(REGISTRY, key), fn.__module__)
        if verdict == "duplicate":
            raise AgreementError(f"coefficient {key!r} is already registered; unregister it first")
        if verdict == "keep":  # a plugin's coefficient under a taken name (warned): not registered
            return fn
        dict.pop(REGISTRY, key, None)  # "replace": a built-in takes its name back from a plugin
        REGISTRY[key] = Coefficient(
            key, fn, family, label, two_raters, None if reference else more_raters,
            (family == "labels") if weighted is None else weighted, default_weights, fleiss_marginals, reference,
            many_note, level or ("interval" if family == "icc" else "nominal"), analytic)
        return fn

    return register


def unregister(name: str) -> Coefficient:
    """Remove a coefficient from the registry and return it."""
    plugins.load(plugins.COEFFICIENTS)
    plugins.release(plugins.COEFFICIENTS, name)
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
