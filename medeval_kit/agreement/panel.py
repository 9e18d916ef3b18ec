"""Who is human and who is a judge in an annotations table: one rule for every design and command.

The answer is never guessed. Humans come from ``humans=[...]`` or from a rater-kind column whose
values are ``human`` and ``llm``; judges are ``judges=[...]`` or every other rater.
:class:`StudyInputs` carries a panel (annotations, humans, judges) into the notebooks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from medeval_kit.agreement.data import AgreementError
from medeval_kit.columns import Columns, takes_columns
from medeval_kit.errors import MedevalError

__all__ = ["HUMAN_KINDS", "JUDGE_KINDS", "PanelError", "resolve_panel", "panel_of", "humans_from_kind", "describe_raters",
           "StudyInputs"]

HUMAN_KINDS = ("human",)
JUDGE_KINDS = ("llm", "judge", "model")


class PanelError(MedevalError, ValueError):
    """The humans and judges of a comparison are not given, unknown or overlapping.

    Parameters
    ----------
    *args
        The message.
    """


@takes_columns("rater", "rater_kind")
def resolve_panel(
    df: pd.DataFrame,
    humans: Sequence | None = None,
    judges: Sequence | None = None,
    *,
    columns: Columns = None,
    min_humans: int = 2,
    source: str | None = None,
) -> tuple[list, list]:
    """Return ``(humans, judges)`` as lists of rater names; raise :class:`PanelError` when unclear.

    Humans come from ``humans`` or from the ``rater_kind`` column (values ``human`` and ``llm``);
    judges are ``judges`` or every other rater. Nothing is guessed.

    Parameters
    ----------
    df : DataFrame
        Long annotations (``rater`` [, ``rater_kind``]).
    humans, judges : sequence, optional
        The human raters and the judges.
    columns : mapping of str to str, optional
        Your column names as ``{canonical name: your column}`` for ``rater`` and ``rater_kind``.
    min_humans : int, default 2
        Fewer humans is an error.
    source : str, optional
        What to call the input in messages.

    Returns
    -------
    humans : list
        The human raters, in the order given (or sorted).
    judges : list
        The judges.

    Raises
    ------
    PanelError
        Who is human cannot be told, a name is unknown or listed twice, or too few humans.

    Examples
    --------
    >>> t = pd.DataFrame({"rater": ["a", "b", "gpt"], "rater_kind": ["human", "human", "llm"]})
    >>> resolve_panel(t)
    (['a', 'b'], ['gpt'])
    """
    return panel_of(df, humans, judges, min_humans=min_humans, source=source)


def panel_of(
    df: pd.DataFrame,
    humans: Sequence | None = None,
    judges: Sequence | None = None,
    *,
    rater: str = "rater",
    rater_kind: str | None = "rater_kind",
    min_humans: int = 2,
    source: str | None = None,
) -> tuple[list, list]:
    """:func:`resolve_panel` on column names of the caller's (``rater_kind=None``: no rater-kind column)."""
    where = f"{source}: " if source else ""
    known = pd.unique(df[rater].dropna())
    known_set = set(known.tolist())
    if humans is None:
        if not rater_kind or rater_kind not in df.columns:
            raise PanelError(
                f"{where}say who is human: pass the human raters (--humans NAME ... / humans=[...]) or a "
                f"rater-kind column with values 'human' and 'llm' (--rater-kind COL / rater_kind=...); "
                f"the table has no column {rater_kind!r}. Raters seen: {_few(known)}"
            )
        kinds = df[rater_kind].astype(str).str.strip().str.lower()
        humans = _ordered(df.loc[kinds.isin(HUMAN_KINDS), rater])
        if not humans:
            vals = sorted(set(kinds))[:6]
            raise PanelError(f"{where}column {rater_kind!r} has no rater of kind 'human' (values: {vals})")
        if judges is None:
            judges = _ordered(df.loc[kinds.isin(JUDGE_KINDS), rater])
            other = sorted(set(kinds) - set(HUMAN_KINDS) - set(JUDGE_KINDS))
            if other:
                raise PanelError(
                    f"{where}column {rater_kind!r} has values {other} that are neither 'human' nor 'llm'; "
                    "pass --judges / judges=[...] to say which raters are judges"
                )
    humans = list(dict.fromkeys(humans))
    unknown = [h for h in humans if h not in known_set]
    if unknown:
        raise PanelError(f"{where}human rater(s) {unknown} not found in column {rater!r}; raters seen: {_few(known)}")
    if judges is None:
        judges = [r for r in _ordered(df[rater]) if r not in set(humans)]
    judges = list(dict.fromkeys(judges))
    unknown = [j for j in judges if j not in known_set]
    if unknown:
        raise PanelError(f"{where}judge(s) {unknown} not found in column {rater!r}; raters seen: {_few(known)}")
    both = [r for r in judges if r in set(humans)]
    if both:
        raise PanelError(f"{where}rater(s) {both} are listed both as human and as judge; each rater is one or the other")
    if len(humans) < min_humans:
        raise PanelError(f"{where}this design needs at least {min_humans} human raters; got {humans}")
    return humans, judges


def _ordered(s: pd.Series) -> list:
    return sorted(pd.unique(s.dropna()).tolist(), key=str)


def _few(names, k: int = 8) -> str:
    names = sorted(map(str, names))
    return ", ".join(names[:k]) + (f" ... ({len(names)} in all)" if len(names) > k else "")


def describe_raters(names: Sequence, limit: int = 4) -> str:
    """Compact rater list for tables: ``'a, b'`` or ``'107 raters'``.

    Parameters
    ----------
    names : sequence
        Rater names.
    limit : int, default 4
        Longer lists are given as a count.

    Returns
    -------
    str
        The names joined with ``", "``, or ``"<n> raters"``.

    Examples
    --------
    >>> describe_raters(["a", "b"]), describe_raters(range(107))
    ('a, b', '107 raters')
    """
    names = list(names)
    return ", ".join(map(str, names)) if len(names) <= limit else f"{len(names)} raters"


def humans_from_kind(df: pd.DataFrame, rater: str = "rater", kind: str = "rater_kind") -> list:
    """The raters whose ``kind`` column says ``human`` (sorted); AgreementError without that column."""
    if kind not in df.columns:
        raise AgreementError("pass humans=[...]: the table has no 'rater_kind' column to find them")
    return sorted(df.loc[df[kind] == "human", rater].unique().tolist(), key=str)


@dataclass
class StudyInputs:
    """Annotations plus who is human and who is a judge: what the agreement notebooks need for one panel.

    Attributes
    ----------
    dataset : str
        The panel's name (a bundled study, or the user's file).
    annotations : DataFrame
        Long annotations (``item``, ``rater``, ``label``, ``criterion`` [, ``rater_kind``]).
    humans, judges : list
        The human raters and the judges.
    reference : str, optional
        A single reference rater (an adjudicated expert), else the humans' majority.
    abstain : list
        Labels that are not votes (set to NA by :meth:`for_agreement`).
    criterion : str
        The criterion the panel labelled (a value of the ``criterion`` column), default ``"overall"``.
    description : str
        What the panel is, in words.
    label_notes : list
        The label checks' findings (:class:`~medeval_kit.agreement.io.LabelNote`).
    """

    dataset: str
    annotations: pd.DataFrame
    humans: list
    judges: list
    reference: str | None = None
    abstain: list = field(default_factory=list)
    criterion: str = "overall"
    description: str = ""
    label_notes: list = field(default_factory=list)

    @property
    def invalid(self) -> list[str]:
        """The blocking label findings (:class:`~medeval_kit.agreement.io.LabelNote`): no verdict should stand on them."""
        return [str(n) for n in self.label_notes if getattr(n, "blocking", False)]

    @property
    def raters(self) -> list:
        """Humans then judges."""
        return list(self.humans) + list(self.judges)

    def for_agreement(self) -> pd.DataFrame:
        """Annotations of the study's raters with abstention labels (e.g. ``inconsistent``) set to NA."""
        a = self.annotations[self.annotations["rater"].isin(self.raters)].copy()
        a["label"] = a["label"].where(~a["label"].isin(self.abstain))
        return a.reset_index(drop=True)

    def label_counts(self) -> pd.DataFrame:
        """Labels per rater, NA and abstentions included: the denominators behind every result."""
        a = self.annotations[self.annotations["rater"].isin(self.raters)]
        t = pd.crosstab(a["rater"], a["label"].fillna("<NA>").astype(str))
        t["n_items"] = t.sum(axis=1)
        t["n_used"] = t["n_items"] - t[[c for c in t.columns if c in list(self.abstain) + ["<NA>"]]].sum(axis=1)
        return t.reindex(self.raters).reset_index()

    def summary(self) -> str:
        """One line: items, humans, judges, reference, abstentions and NA labels."""
        a = self.annotations
        return (f"{self.dataset}: {a['item'].nunique()} items, humans {self.humans}, judges {self.judges}, "
                f"reference {self.reference or 'majority of humans'}, abstain {self.abstain}, "
                f"{int(a['label'].isna().sum())} NA labels")
