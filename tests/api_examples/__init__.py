"""One example call per public statistic, by package, for the contract and column tests.

Each module ``tests/api_examples/<package>.py`` defines

``EXAMPLES``  ``{name: call}``: ``call(t)`` runs the public function ``<package>.<name>`` on the shared
              tables ``t`` (:class:`Tables`) and returns its result. A function that reads tables passes
              ``columns=t.columns``; the column test runs each example twice, on canonical tables and on
              tables whose every column was renamed, and the results must be equal.
``OTHER``     ``{name: kind}`` for public names that are not statistics (kinds in :data:`KINDS`).

A public function of a package must be in one of them, or in the package's debt list.
"""

from __future__ import annotations

import importlib
from functools import cached_property

import pandas as pd

KINDS = ("reader", "writer", "plot", "data", "llm", "helper", "class", "registry", "prompt", "deprecated")


def examples(package: str) -> tuple[dict, dict]:
    """``(EXAMPLES, OTHER)`` of one package (empty when it has no module yet)."""
    try:
        mod = importlib.import_module(f"tests.api_examples.{package}")
    except ModuleNotFoundError:
        return {}, {}
    return getattr(mod, "EXAMPLES", {}), getattr(mod, "OTHER", {})


def rename(df: pd.DataFrame) -> pd.DataFrame:
    """Every canonical column renamed to an awkward name of the user's (a space, capitals, a prefix)."""
    from medeval_kit.columns import known_columns

    known = known_columns()
    return df.rename(columns={c: f"My {c.upper()}" for c in df.columns if c in known})


class Tables:
    """The shared synthetic tidy tables, canonical (``renamed=False``) or with every column renamed."""

    def __init__(self, renamed: bool = False):
        self.renamed = renamed

    @property
    def columns(self) -> dict | None:
        """The mapping that undoes :func:`rename` (``None`` for canonical tables)."""
        if not self.renamed:
            return None
        from medeval_kit.columns import known_columns

        return {c: f"My {c.upper()}" for c in sorted(known_columns())}

    def own(self, df: pd.DataFrame) -> pd.DataFrame:
        """A table an example builds itself, renamed like the shared ones."""
        return rename(df) if self.renamed else df

    @cached_property
    def annotations(self) -> pd.DataFrame:
        """Three physicians and two LLM judges label 40 items A/B/tie (``item, rater, rater_kind, label``)."""
        from medeval_kit.datasets.synthetic import synthetic_panel

        return self.own(synthetic_panel(n_items=40, n_humans=3, n_judges=2, seed=1))

    @cached_property
    def judgments(self) -> pd.DataFrame:
        """Two pairwise judges, both orders, two repeats, 40 items (the ``judgments`` table and extras)."""
        from medeval_kit.datasets.synthetic import synthetic_pairwise

        return self.own(synthetic_pairwise(n_items=40, judges=("j1", "j2"), repeats=2, seed=1))

    @cached_property
    def rounds(self) -> pd.DataFrame:
        """Scores of five components over four refinement rounds, 20 items (the ``rounds`` table)."""
        from medeval_kit.datasets.synthetic import synthetic_rounds

        return self.own(synthetic_rounds(n_items=20, seed=1))
