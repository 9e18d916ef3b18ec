"""The Alternative Annotator Test (alt-test): may an LLM judge replace the human annotators?

Calderon, Reichart & Dror, "The Alternative Annotator Test for LLM-as-a-Judge: How to Statistically
Justify Replacing Human Annotators with LLMs", ACL 2025 (Long Papers, pp. 16051-16081; arXiv
2501.10970). Section and page numbers below refer to the ACL version. The procedure, for each
judge ``f`` separately:

1. **Leave one annotator out** (§3 "Notations and Definitions", p. 16053-16054). ``I_j`` is the set of
   items labelled by human ``h_j``, ``H_i`` the humans who labelled item ``x_i``, ``H_i[-j]`` the
   others. For every human ``j`` and every item ``i`` in ``I_j`` both the judge and ``h_j`` are scored
   against the *other* humans of that item.
2. **Alignment score** ``S`` (§3.1, p. 16054), higher is better:

   * ``accuracy`` (ACC, categorical labels): ``S(f, x_i, j) = 1/(|H_i|-1) * sum_{k in H_i[-j]}
     1{f(x_i) = h_k(x_i)}``, the share of the other humans whose label equals the judge's;
   * ``neg_rmse`` (-RMSE, numeric labels): ``S(f, x_i, j) = -sqrt(1/(|H_i|-1) * sum_{k in H_i[-j]}
     (f(x_i) - h_k(x_i))^2)``; the paper negates RMSE so that higher means better aligned.

   ``S(h_j, x_i, j)`` is the same with the excluded human's label in place of the judge's.
3. **Win indicators** (§3.2, p. 16054): ``W^f_ij = 1`` if ``S(f, x_i, j) >= S(h_j, x_i, j)`` and
   ``W^h_ij = 1`` if ``S(h_j, x_i, j) >= S(f, x_i, j)`` ("reversing the inequality"), so a tie counts
   as a win for both. ``rho^f_j = mean_i W^f_ij`` (the judge's advantage probability over ``h_j``),
   ``rho^h_j = mean_i W^h_ij``.
4. **Test per human** (§3.3, p. 16054-16055): ``H0_j: rho^f_j <= rho^h_j - eps`` against
   ``H1_j: rho^f_j > rho^h_j - eps``, a one-sided paired t-test on ``d_ij = W^h_ij - W^f_ij``:
   ``t_j = (mean(d_j) - eps) / (s_j / sqrt(n_j))`` with the sample SD ``s_j`` (``n_j - 1`` in the
   denominator) and ``n_j = |I_j|``; ``p_j = P(T_{n_j-1} <= t_j)`` (scipy's Student t; identical to
   ``scipy.stats.ttest_1samp(d_j, eps, alternative="less")``, cross-checked in the tests).
5. **Multiple comparisons** (§3.3 "Multiple Comparison Correction", p. 16055; Algorithm 1 in App. C.6,
   p. 16070-16071): Benjamini-Yekutieli at ``q = 0.05`` over the tested humans, because the ``m``
   hypotheses are dependent (each human is a reference for the others). We use statsmodels
   ``multipletests(method="fdr_by")``; its adjusted p-values are ``min(1, min_{k>=i} m*c_m/k * p_(k))``
   with ``c_m = sum_{k=1..m} 1/k``, and ``H0_j`` is rejected when the adjusted p <= q.
6. **Winning rate** (§3.3, p. 16055): ``omega`` = share of tested humans whose ``H0_j`` is rejected;
   the judge **passes** when ``omega >= 0.5`` (footnote 5: 0.5 is itself a choice, "stricter
   thresholds can be used in high-stakes domains").
7. **Verdict** (ours; the numbers above are the paper's, unchanged): every judge row has a ``status``,
   the ``rule`` in words and the ``reasons``. ``pass``: winning rate >= 0.5, as in the paper (``passed``
   is ``status == "pass"``). ``not_testable``: fewer than ``MIN_HUMANS_TESTED = 2`` tested humans (the
   procedure "requires at least two annotators", App. A FAQ), e.g. a sparse panel where nobody has 30
   items; its winning rate is still reported. ``fail``: a pass is out of reach. For each tested human
   the *reverse* one-sided paired t-test (H1: ``mean(d_j) > eps``, i.e. the judge's advantage
   probability is below the human's minus eps; ``p_worse = P(T >= t_j)``) is BY-adjusted at ``q`` over
   the same humans; a human shown so (``shown_worse``) cannot also be beaten, so when the share of
   humans *not* shown worse is below 0.5 (more than half shown worse), even beating every other one
   leaves the winning rate below 0.5. ``inconclusive``: neither; more items per human could decide.
8. **Average advantage probability** (§3.4, p. 16055): ``rho = mean_j rho^f_j``, the measure for
   *comparing* judges (it does not depend on ``eps`` and is finer than ``omega``). Theorem 1 (§3.4,
   App. D): under ACC the majority vote and under -RMSE the item mean of the humans get ``rho = 1``.

Defaults and why:

* ``epsilon=0.2``. The cost-benefit margin by which the human's win share is discounted. Rule of thumb
  (App. A FAQ "How do I select the eps value?" and App. B.1, p. 16065-16067): 0.2 for experts, 0.15
  for skilled annotators (students, trained workers), 0.1 for crowd-workers; the useful range is
  0.05-0.3. Our users' humans are physicians, i.e. experts, hence 0.2; pass ``epsilon=0.15`` for
  residents or trained non-physicians and ``0.1`` for crowd-workers, and justify the choice in the
  write-up as the paper asks.
* ``q_fdr=0.05``: "the standard target FDR level" used in all of the paper's experiments (§3.3).
* ``min_items_per_human=30``: "at least 30 instances" so that the t-test's normality assumption holds
  (§5.1, p. 16059; App. A "How many instances should I annotate?"); 50-100 is usually enough. The
  paper would use a Wilcoxon signed-rank test below 30 (§3.3; App. A); we follow the authors'
  reference implementation (github.com/nitaytech/AltTest, ``min_instances_per_human=30``) and do not
  test such a human: it is *skipped* and listed with its reason, never dropped silently.
* ``min_humans=2``: an item is used only when at least 2 humans labelled it (the excluded one
  included), so that at least one other human remains to score against. This is the reference
  implementation's ``min_humans_per_instance=2`` and the paper's data filter ("annotated by at least
  two annotators", App. E, LGBTeen and MT-Bench). The panel needs at least 2 humans; the paper
  recommends at least 3 (App. A "Why do you recommend at least three human annotators and not two?",
  and §6), so a result from fewer than 3 tested humans carries a note.

Choices the paper leaves open, made explicit here:

* A human who fails the minimums is not tested for that judge but still serves as one of the *other*
  humans when someone else is excluded (as in the reference implementation). ``omega`` and ``rho``
  are over the tested humans.
* Each judge is its own alt-test: BY runs over that judge's tested humans (Table 2 reports every LLM
  separately). To claim that several judges pass *jointly*, correct across all (judge, human) p-values
  (App. A FAQ "several environments").
* An item the judge did not label is not used for that judge; the count is in ``details``
  (``n_no_judge_label``). Human rows with an empty label are dropped and counted.
* Labels are compared as given (``"A" == "A"``; no numeric coercion) for ``accuracy``. For
  ``neg_rmse`` they must be numeric; ``scoring="auto"`` picks ``neg_rmse`` when every label is a
  number (also numbers written as text) and ``accuracy`` otherwise, and says why (``scoring_reason``).
  A column that is mostly numbers (``NUMERIC_SHARE``: >= 90% of the distinct labels or of the
  labelled rows) with a few non-numbers (``3,5``) is an error naming the rows, never a silent switch
  to exact-match scoring. -RMSE ties are decided with a relative tolerance of 1e-9 on the sums of
  squares, so that floating-point noise does not break a tie.
* Zero-variance differences (e.g. every item a tie): ``t = -inf`` (p = 0) when the mean difference is
  below ``eps``, ``+inf`` (p = 1) above it, and p = 1 exactly at ``eps``.

Everything is vectorised: one merge of the human labels with the judge labels, group-by sums for the
win shares and t statistics, scipy for the t distribution, statsmodels for BY.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from medeval_kit.agreement.panel import PanelError, describe_raters, panel_of
from medeval_kit.agreement.verdicts import SEP, join_reasons, label_gate
from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import MedevalError, SchemaError
from medeval_kit.results import RESULT_COLUMNS as CONTRACT
from medeval_kit.results import Result

__all__ = [
    "AltTestError",
    "AltTestResult",
    "alt_test",
    "DEFAULT_EPSILON",
    "DEFAULT_Q_FDR",
    "MIN_ITEMS_PER_HUMAN",
    "MIN_HUMANS_PER_ITEM",
    "MIN_HUMANS_TESTED",
    "NUMERIC_SHARE",
    "RESULT_COLUMNS",
    "JSON_KEYS",
    "DETAIL_COLUMNS",
]

DEFAULT_EPSILON = 0.2
"""Experts (physicians): App. B.1 rule of thumb. 0.15 skilled, 0.1 crowd-workers."""
DEFAULT_Q_FDR = 0.05
MIN_ITEMS_PER_HUMAN = 30
MIN_HUMANS_PER_ITEM = 2
MIN_HUMANS_TESTED = 2
"""The paper's procedure "requires at least two annotators" (App. A FAQ); fewer tested humans: not testable."""
RECOMMENDED_HUMANS = 3
NUMERIC_SHARE = 0.9
"""``scoring="auto"``: a label column this numeric (share of distinct labels or of labelled rows) with a few
non-numbers is an error, never a silent switch to exact-match scoring."""
PASS_RATE = 0.5
SCORINGS = ("accuracy", "neg_rmse")
_RTOL = 1e-9

METRIC = "winning_rate"
"""The ``metric`` of an alt-test row: ``estimate`` is the judge's winning rate omega."""
RESULT_COLUMNS = ["judge", "metric", *CONTRACT, "status", "advantage_probability", "passed", "epsilon",
                  "n_humans_tested", "n_humans_skipped", "scoring", "q_fdr", "rule", "reasons", "scoring_reason",
                  "skipped"]
"""One row per judge: keys, the result contract (no CI: ``ci_low``/``ci_high`` NaN), the verdict ``status``
(pass / fail / inconclusive / not_testable / invalid; ``passed`` is ``status == "pass"``), the test's extras,
the ``rule`` and ``reasons`` in words, why this ``scoring``, and every ``skipped`` human with the reason
(``"human: reason; ..."``)."""
JSON_KEYS = [c for c in RESULT_COLUMNS if c != "q_fdr"]
"""The fields of ``medeval alt-test --format json``; ``skipped`` is a list of ``{"human", "n_items", "reason"}``
there."""
DETAIL_COLUMNS = ["judge", "human", "n_items", "n_ties", "n_no_judge_label", "n_too_few_humans", "rho_llm",
                  "rho_human", "t", "p_value", "p_adjusted", "rejected", "p_worse", "p_worse_adjusted",
                  "shown_worse", "skipped_reason"]
"""Per (judge, human): counts, win shares, the paper's test (``p_value``, BY ``p_adjusted``, ``rejected``: the
judge beats this human) and the reverse test (``p_worse``, ``p_worse_adjusted``, ``shown_worse``: the judge's
advantage probability is shown below the human's minus epsilon), or why the human was skipped."""
_VERDICT_WORDS = {"pass": "PASSED", "fail": "FAILED", "inconclusive": "INCONCLUSIVE", "not_testable": "NOT TESTABLE",
                  "invalid": "INVALID"}


class AltTestError(MedevalError, ValueError):
    """Invalid alt-test parameters.

    Parameters
    ----------
    *args
        The message.
    """


# --------------------------------------------------------------------------- result


@dataclass(frozen=True)
class AltTestResult(Result):
    """Alt-test outcome for every judge; ``details`` has one row per (judge, human).

    Attributes
    ----------
    results : DataFrame
        One row per judge (:data:`RESULT_COLUMNS`; :meth:`to_frame` returns it).
    details : DataFrame
        One row per (judge, human) (:data:`DETAIL_COLUMNS`).
    epsilon, q_fdr : float
        The test's margin and false-discovery rate.
    scoring : str
        ``accuracy`` or ``neg_rmse``.
    min_items_per_human, min_humans : int
        The thresholds used.
    humans, judges : tuple
        Who was compared.
    n_dropped : int
        Human rows with an empty label.
    scoring_reason : str
        What ``scoring`` was used and why.
    """

    results: pd.DataFrame = field(compare=False, repr=False)
    details: pd.DataFrame = field(compare=False, repr=False)
    epsilon: float = DEFAULT_EPSILON
    q_fdr: float = DEFAULT_Q_FDR
    scoring: str = "accuracy"
    min_items_per_human: int = MIN_ITEMS_PER_HUMAN
    min_humans: int = MIN_HUMANS_PER_ITEM
    humans: tuple = ()
    judges: tuple = ()
    n_dropped: int = 0
    scoring_reason: str = ""
    """What ``scoring`` was used and why, e.g. ``"neg_rmse, because every label is a number"``."""

    def to_frame(self) -> pd.DataFrame:
        """One row per judge (:data:`RESULT_COLUMNS`): ``estimate`` is the winning rate, ``n_items`` the items
        the judge was compared on, ``n_failed`` the human rows with an empty label."""
        return self.results[RESULT_COLUMNS].copy()

    @property
    def skipped(self) -> pd.DataFrame:
        """The humans not tested, per judge, with ``n_items`` and the ``reason``."""
        d = self.details
        s = d.loc[d["skipped_reason"] != "", ["judge", "human", "n_items", "skipped_reason"]]
        return s.rename(columns={"skipped_reason": "reason"}).reset_index(drop=True)

    def summary(self) -> str:
        """A few lines: verdict, winning rate and advantage probability per judge, skipped humans."""
        lines = [f"alt-test (Calderon et al. 2025): epsilon = {self.epsilon:g}, scoring = {self.scoring}, "
                 f"BY q = {self.q_fdr:g}; pass when winning rate >= {PASS_RATE:g}; "
                 f"humans: {describe_raters(self.humans)}"]
        if self.scoring_reason:
            lines.append(f"  scoring: {self.scoring_reason}")
        rules = [x for x in pd.unique(self.results["rule"]) if x]
        lines += [f"  rule: {x}" for x in rules]
        for r in self.results.itertuples(index=False):
            wr = "NaN" if pd.isna(r.estimate) else f"{r.estimate:.2f}"
            ap = "NaN" if pd.isna(r.advantage_probability) else f"{r.advantage_probability:.3f}"
            n_rej = self.details.loc[(self.details["judge"] == r.judge) & (self.details["rejected"] == True)]  # noqa: E712
            verdict = _VERDICT_WORDS.get(r.status, str(r.status).upper())
            lines.append(f"  {r.judge}: {verdict}  winning rate = {wr} ({len(n_rej)}/{r.n_humans_tested} humans "
                         f"beaten), advantage probability = {ap}; {r.n_humans_skipped} skipped")
            if r.reasons:
                lines.append(f"    why: {r.reasons}")
            if r.note:
                lines.append(f"    note: {r.note}")
        skipped = self.skipped_lines()
        if skipped:
            lines.append("  skipped humans (not tested):")
            lines.extend(f"    {x}" for x in skipped)
        return "\n".join(lines)

    def skipped_lines(self) -> list[str]:
        """``'human: reason'`` once per human and reason, naming the judges unless it holds for all of them."""
        sk = self.skipped
        out = []
        for (human, reason), g in sk.groupby(["human", "reason"], sort=False):
            js = list(g["judge"])
            who = "" if len(js) == len(self.judges) else f" [{', '.join(map(str, js))}]"
            out.append(f"{human}{who}: {reason}")
        return out

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        html = self.to_frame().to_html(index=False)
        sk = self.skipped
        if len(sk):
            html += "<p>Skipped humans</p>" + sk.to_html(index=False)
        return html


# --------------------------------------------------------------------------- procedure


@shared_docs
@takes_columns("item", "rater", "label", "rater_kind")
def alt_test(
    df: pd.DataFrame,
    humans: Sequence | None = None,
    judges: Sequence | None = None,
    *,
    columns: Columns = None,
    epsilon: float = DEFAULT_EPSILON,
    scoring: str = "auto",
    q_fdr: float = DEFAULT_Q_FDR,
    min_items_per_human: int = MIN_ITEMS_PER_HUMAN,
    min_humans: int = MIN_HUMANS_PER_ITEM,
    source: str | None = None,
    accept_label_warnings: bool = False,
) -> AltTestResult:
    """Run the alt-test of every judge against the human panel of a long annotations table.

    ``df`` has one row per (item, rater) with the label. Who is human comes from ``humans=[...]`` or
    the ``rater_kind`` column (values ``human`` / ``llm``), never from a guess (see
    :func:`medeval_kit.agreement.resolve_panel`); judges are ``judges=[...]``, the ``llm`` raters or every
    other rater. ``scoring`` is ``"accuracy"``, ``"neg_rmse"`` or ``"auto"`` (numeric labels ->
    ``neg_rmse``; the choice and why in ``scoring_reason``; a mostly numeric column with a few
    non-numbers raises :class:`~medeval_kit.errors.SchemaError` naming the rows). Every judge row has
    ``status`` (pass / fail / inconclusive / not_testable), ``rule`` and ``reasons``, and ``skipped``
    lists every human not tested with the reason. The labels are checked first
    (:func:`~medeval_kit.agreement.verdicts.label_gate`): a blocking finding makes every judge
    ``invalid`` unless ``accept_label_warnings=True``. See the module docstring for the procedure, the
    verdict, the defaults and where each comes from.

    Parameters
    ----------
    df : DataFrame
        Long annotations (``item``, ``rater``, ``label`` [, ``rater_kind``]).
    humans, judges : sequence, optional
        The human raters and the judges; default from the ``rater_kind`` column (judges: every other rater).
    {columns}
    epsilon : float, default 0.2
        The cost-benefit margin: the judge's advantage over a human needs only exceed ``-epsilon``
        (0.2 experts, 0.15 skilled annotators, 0.1 crowd-workers).
    scoring : {"auto", "accuracy", "neg_rmse"}, default "auto"
        How a label is scored against the other humans' labels.
    q_fdr : float, default 0.05
        Benjamini-Yekutieli false-discovery rate over the humans.
    min_items_per_human : int, default 30
        Humans with fewer compared items are skipped (with the reason).
    min_humans : int, default 2
        Humans per item needed (the left-out human plus at least one other).
    {source}
    accept_label_warnings : bool, default False
        Compute the verdict even though the label checks found problems.

    Returns
    -------
    AltTestResult
        ``.to_frame()``: one row per judge (:data:`RESULT_COLUMNS`: the result contract with the winning
        rate as ``estimate``, the verdict and the test's extras); ``.details``: one row per (judge, human).

    Raises
    ------
    AltTestError
        Invalid parameters.
    PanelError
        Who is human cannot be told, or there is no judge.
    SchemaError
        A column is missing, a (item, rater) pair repeats, or mostly numeric labels hold a few non-numbers.

    Examples
    --------
    >>> rows = [(f"i{i}", h, "A" if (i + k) % 5 else "B") for i in range(40) for k, h in enumerate("xyz")]
    >>> rows += [(f"i{i}", "gpt", "A") for i in range(40)]
    >>> t = pd.DataFrame(rows, columns=["item", "rater", "label"])
    >>> res = alt_test(t, humans=["x", "y", "z"])
    >>> res.to_frame()[["judge", "estimate", "passed"]].to_dict("records")
    [{'judge': 'gpt', 'estimate': 1.0, 'passed': True}]
    """
    eps, q = _check_params(epsilon, q_fdr, min_items_per_human, min_humans, scoring)
    item, rater, label, rater_kind = "item", "rater", "label", "rater_kind"
    where = f"{source}: " if source else ""
    for c in (item, rater, label):
        if c not in df.columns:
            raise SchemaError("annotations", c, [], f"column {c!r} not found; columns: {list(df.columns)}", source)
    humans, judges = panel_of(df, humans, judges, rater=rater, rater_kind=rater_kind,
                              min_humans=MIN_HUMANS_PER_ITEM, source=source)
    if not judges:
        raise PanelError(f"{where}no judge to test: every rater is human; pass judges=[...] / --judges NAME ...")

    data = pd.DataFrame({"item": df[item].to_numpy(), "rater": df[rater].to_numpy(),
                         "label": df[label].to_numpy(), "row": np.arange(len(df))})
    data = data[data["rater"].isin(set(humans) | set(judges))]
    n_dropped = int(data.loc[data["rater"].isin(set(humans)), "label"].isna().sum())
    data = data[data["label"].notna()]
    dup = data.duplicated(["item", "rater"], keep=False)
    if dup.any():
        raise SchemaError("annotations", rater, data.loc[dup, "row"].tolist(),
                          "a rater labelled the same item more than once; keep one label per (item, rater) "
                          "(resolve repeats first, e.g. with medeval_kit.pairwise)", source)
    scoring, scoring_reason = _resolve_scoring(scoring, data, label, source)
    if scoring == "neg_rmse":
        data = data.assign(value=_numeric(data, label, source))
    else:
        data = data.assign(value=pd.factorize(data["label"])[0].astype(np.int64))

    details, items = _details(data, humans, judges, scoring, min_humans)
    details, results = _decide(details, items, judges, eps, q, scoring, min_items_per_human)
    results["n_failed"] = n_dropped
    results["scoring_reason"] = scoring_reason
    if n_dropped:
        drop = f"{n_dropped} human row(s) with an empty label dropped"
        results["note"] = [f"{n}; {drop}" if n else drop for n in results["note"]]
    res = AltTestResult(results=results, details=details, epsilon=eps, q_fdr=q, scoring=scoring,
                        min_items_per_human=int(min_items_per_human), min_humans=int(min_humans),
                        humans=tuple(humans), judges=tuple(judges), n_dropped=n_dropped,
                        scoring_reason=scoring_reason)
    return label_gate(res, df, label=label, rater=rater, raters=list(humans) + list(judges),
                      accept_label_warnings=accept_label_warnings)


def _check_params(epsilon, q_fdr, min_items, min_humans, scoring):
    try:
        eps, q = float(epsilon), float(q_fdr)
    except (TypeError, ValueError):
        raise AltTestError(f"epsilon and q_fdr must be numbers; got {epsilon!r}, {q_fdr!r}") from None
    if not math.isfinite(eps) or not -1 < eps < 1:
        raise AltTestError(f"epsilon must be a margin in (-1, 1) (paper: 0.2 experts, 0.15 skilled, 0.1 crowd); "
                           f"got {epsilon!r}")
    if not 0 < q < 1:
        raise AltTestError(f"q_fdr must be in (0, 1) (paper: 0.05); got {q_fdr!r}")
    if int(min_items) != min_items or min_items < 2:
        raise AltTestError(f"min_items_per_human must be an integer >= 2 (paper: 30); got {min_items!r}")
    if int(min_humans) != min_humans or min_humans < 2:
        raise AltTestError(f"min_humans (humans per item, the excluded one included) must be an integer >= 2 so "
                           f"that another human remains; got {min_humans!r}")
    if scoring not in ("auto",) + SCORINGS:
        raise AltTestError(f"scoring must be 'auto', 'accuracy' or 'neg_rmse'; got {scoring!r}")
    return eps, q


def _resolve_scoring(scoring, data, label, source) -> tuple[str, str]:
    """The scoring and why; a mostly numeric label column with a few non-numbers is an error naming the rows."""
    if scoring != "auto":
        return scoring, f"{scoring}, as asked"
    lab = data["label"].infer_objects()
    if pd.api.types.is_bool_dtype(lab):
        return "accuracy", "accuracy, because the labels are true/false"
    if pd.api.types.is_numeric_dtype(lab):
        return "neg_rmse", "neg_rmse, because every label is a number"
    codes, uniq = pd.factorize(data["label"])
    vals = [v.strip() if isinstance(v, str) else v for v in uniq]
    num = pd.to_numeric(pd.Series(vals, dtype=object), errors="coerce").astype(float).to_numpy()
    isnum = np.isfinite(num) & np.array([not isinstance(v, (bool, np.bool_)) for v in uniq], dtype=bool)
    if len(uniq) and isnum.all():
        return "neg_rmse", "neg_rmse, because every label is a number (some written as text)"
    row_share = float(isnum[codes].mean()) if len(codes) else 0.0
    if isnum.sum() >= 2 and (isnum.mean() >= NUMERIC_SHARE or row_share >= NUMERIC_SHARE):
        bad = [str(v) for v in uniq[~isnum]]
        rows = data.loc[~isnum[codes], "row"].tolist()
        shown = ", ".join(map(repr, bad[:5])) + (f" and {len(bad) - 5} other value(s)" if len(bad) > 5 else "")
        tokens = " ".join(shlex.quote(v) for v in bad[:5])
        raise SchemaError("annotations", label, rows,
                          f"the labels are numbers except {shown} ({len(rows)} row(s); {row_share:.1%} of the labelled "
                          f"rows are numbers), so scoring='auto' cannot choose: fix these rows (e.g. a decimal point), "
                          f"count these values as missing (--missing {tokens}), or score every label as a category "
                          "with scoring='accuracy' (--scoring accuracy)", source)
    ex = ", ".join(repr(str(v)) for v in uniq[:3])
    return "accuracy", f"accuracy, because the labels are not numbers (e.g. {ex})"


def _numeric(data, label, source):
    vals = pd.to_numeric(data["label"], errors="coerce")
    if pd.api.types.is_bool_dtype(data["label"]):
        vals = data["label"].astype(float)
    bad = vals.isna() | ~np.isfinite(vals.astype(float))
    if bad.any():
        ex = data.loc[bad, "label"].astype(str).unique()[:3].tolist()
        raise SchemaError("annotations", label, data.loc[bad, "row"].tolist(),
                          f"scoring='neg_rmse' needs finite numeric labels; got {ex}. Use scoring='accuracy' "
                          "(--scoring accuracy) for categorical labels, or fix these rows", source)
    return vals.astype(float).to_numpy()


def _details(data, humans, judges, scoring, min_humans) -> tuple[pd.DataFrame, pd.Series]:
    """Per (judge, human) counts and win sums, vectorised over every item at once; items compared per judge."""
    H = data[data["rater"].isin(set(humans))][["item", "rater", "value"]].rename(columns={"rater": "human"})
    J = data[data["rater"].isin(set(judges))][["item", "rater", "value"]].rename(
        columns={"rater": "judge", "value": "jvalue"})
    n_i = H.groupby("item")["human"].transform("size")
    H = H.assign(n_i=n_i.to_numpy())
    few = H[H["n_i"] < min_humans].groupby("human").size()
    H = H[H["n_i"] >= min_humans]

    if scoring == "accuracy":
        # c_i(label): how many humans gave this label on this item
        cnt = H.groupby(["item", "value"]).size().rename("c")
        H = H.join(cnt, on=["item", "value"])
        M = H.merge(J, on="item", how="inner")
        cb = cnt.rename("cb").rename_axis(["item", "jvalue"])
        M = M.join(cb, on=["item", "jvalue"])
        cb_v = M["cb"].fillna(0).to_numpy(np.int64)
        a, b = M["value"].to_numpy(), M["jvalue"].to_numpy()
        # both scores share the denominator |H_i| - 1, so compare the numerators exactly:
        # ACC(f) * (|H_i|-1) = c_i(b) - 1{b = a};  ACC(h_j) * (|H_i|-1) = c_i(a) - 1
        num_f = cb_v - (a == b)
        num_h = M["c"].to_numpy(np.int64) - 1
        wf, wh = num_f >= num_h, num_h >= num_f
    else:
        g = H.groupby("item")["value"]
        mu = g.transform("mean").to_numpy()
        V = ((H["value"].to_numpy() - mu) ** 2)
        H = H.assign(mu=mu, V=pd.Series(V, index=H.index).groupby(H["item"]).transform("sum").to_numpy())
        M = H.merge(J, on="item", how="inner")
        a, b = M["value"].to_numpy(), M["jvalue"].to_numpy()
        n, mu, V = M["n_i"].to_numpy(float), M["mu"].to_numpy(), M["V"].to_numpy()
        # sum over the other humans of (x - h_k)^2 = n_i (x - mu_i)^2 + V_i - (x - a)^2, centred for stability;
        # both RMSEs share the denominator |H_i| - 1, so compare the sums of squares
        ss_f = np.maximum(n * (b - mu) ** 2 + V - (b - a) ** 2, 0.0)
        ss_h = np.maximum(n * (a - mu) ** 2 + V, 0.0)
        tol = _RTOL * np.maximum(1.0, np.maximum(ss_f, ss_h))
        wf, wh = ss_f <= ss_h + tol, ss_h <= ss_f + tol

    items = M.groupby("judge")["item"].nunique()
    M = pd.DataFrame({"judge": M["judge"].to_numpy(), "human": M["human"].to_numpy(),
                      "wf": wf.astype(np.int64), "wh": wh.astype(np.int64), "tie": (wf & wh).astype(np.int64)})
    agg = M.groupby(["judge", "human"]).agg(n_items=("wf", "size"), sum_wf=("wf", "sum"), sum_wh=("wh", "sum"),
                                            n_ties=("tie", "sum"))
    grid = pd.MultiIndex.from_product([list(judges), list(humans)], names=["judge", "human"])
    out = agg.reindex(grid).fillna(0).astype(np.int64).reset_index()
    n_elig = H.groupby("human").size()
    out["n_eligible"] = out["human"].map(n_elig).fillna(0).astype(np.int64)
    out["n_no_judge_label"] = out["n_eligible"] - out["n_items"]
    out["n_too_few_humans"] = out["human"].map(few).fillna(0).astype(np.int64)
    return out, items


def alt_test_rule(eps: float, q: float, min_items: int) -> str:
    """The alt-test's verdict rule in words (the ``rule`` column).

    Parameters
    ----------
    eps, q : float
        The cost-benefit margin epsilon and the Benjamini-Yekutieli FDR level.
    min_items : int
        Items a human needs to be tested.

    Returns
    -------
    str
        The rule.

    Examples
    --------
    >>> alt_test_rule(0.2, 0.05, 30)[:40]
    'pass if the winning rate >= 0.5: the sha'
    """
    return (f"pass if the winning rate >= {PASS_RATE:g}: the share of the tested humans h for whom a one-sided "
            f"paired t-test rejects 'the judge's advantage probability <= h's - epsilon' (epsilon = {eps:g}, "
            f"Benjamini-Yekutieli q = {q:g}; Calderon et al. 2025); fail if the reverse t-tests (BY q = {q:g}) show "
            f"the judge's advantage probability below h's - epsilon for so many humans that a winning rate of "
            f"{PASS_RATE:g} is out of reach; not testable with fewer than {MIN_HUMANS_TESTED} tested humans "
            f"(>= {min_items} items each); else inconclusive")


def _skip_summary(reasons: np.ndarray, n_items: np.ndarray, min_items: int) -> str:
    """``"107 with fewer than 30 items, 1 without a judge label"``: the skipped humans counted by kind."""
    small = int(sum(0 < n < min_items for n in n_items))
    no_j = int(sum(r.startswith("the judge labelled none") for r in reasons))
    alone = len(reasons) - small - no_j
    parts = [f"{small} with fewer than {min_items} items" if small else "",
             f"{no_j} without a label from the judge on their items" if no_j else "",
             f"{alone} sharing no item with another human" if alone else ""]
    return ", ".join(x for x in parts if x)


def _verdict(m, n_rej, n_worse, wr, skipped, eps, min_items) -> tuple[str, list[str]]:
    """Status and reasons of one judge from the tested humans ``m``, those beaten and those shown worse."""
    if m == 0:
        return "not_testable", [f"no human could be tested: all {skipped} skipped" if skipped else
                                "no human could be tested"]
    if m < MIN_HUMANS_TESTED:
        return "not_testable", [f"only {m} human tested: the alt-test requires at least {MIN_HUMANS_TESTED} "
                                f"(App. A) with >= {min_items} items each"]
    beaten = f"{n_rej} of {m} tested humans beaten (winning rate {wr:.2f}"
    if wr >= PASS_RATE:
        return "pass", [f"{beaten} >= {PASS_RATE:g})"]
    reach = (m - n_worse) / m
    worse = (f"the judge's advantage probability is shown below the human's minus epsilon ({eps:g}) for {n_worse} of "
             f"{m}")
    if reach < PASS_RATE:
        return "fail", [f"{beaten} < {PASS_RATE:g})",
                        f"{worse}: beating every other tested human gives at most {reach:.2f} < {PASS_RATE:g}"]
    undecided = m - n_rej - n_worse
    return "inconclusive", [f"{beaten} < {PASS_RATE:g})",
                            worse if n_worse else f"the judge is shown worse by more than epsilon ({eps:g}) for none",
                            f"{undecided} undecided: a winning rate of {PASS_RATE:g} is still within reach with "
                            "more items per human"]


def paired_t(n: np.ndarray, delta: np.ndarray, k: np.ndarray, eps: float, *, worse: bool = True) -> tuple:
    """The alt-test's one-sided paired t-tests of d = W^h - W^f against ``eps``, from group sums (integers):
    ``n`` pairs, ``delta`` = sum d = S_h - S_f, ``k`` = sum d^2 = n - ties (d is +-1 off ties, 0 on ties).

    Returns ``(t, p, p_worse)``: p of H1 mean < eps (the judge is not worse than the human by eps or more)
    and, with ``worse``, of the reverse H1 mean > eps (it decides "fail"; else None). A zero variance
    (every d equal) gives t = +-inf, or NaN and p = 1 when the mean is exactly eps.
    """
    from scipy import stats

    nn = n.astype(float)
    mean = delta / nn
    zero_var = k * n == delta * delta  # all d_ij equal (exact, integers)
    var = np.where(zero_var, 0.0, (k - delta * delta / nn) / (nn - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        tt = np.where(zero_var, np.where(mean < eps, -np.inf, np.where(mean > eps, np.inf, np.nan)),
                      (mean - eps) / np.sqrt(var / nn))
    pp = np.where(np.isnan(tt), 1.0, stats.t.cdf(tt, nn - 1))
    ppw = np.where(np.isnan(tt), 1.0, stats.t.sf(tt, nn - 1)) if worse else None
    return tt, pp, ppw


def _decide(d, items, judges, eps, q, scoring, min_items):
    from statsmodels.stats.multitest import multipletests

    n = d["n_items"].to_numpy(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        d["rho_llm"] = np.where(n > 0, d["sum_wf"] / n, np.nan)
        d["rho_human"] = np.where(n > 0, d["sum_wh"] / n, np.nan)
    reason = np.full(len(d), "", dtype=object)
    reason[(d["n_eligible"] == 0).to_numpy()] = (
        f"no item shared with at least {MIN_HUMANS_PER_ITEM - 1} other human (min_humans)")
    no_j = (d["n_eligible"] > 0).to_numpy() & (n == 0)
    reason[no_j] = "the judge labelled none of this human's usable items"
    small = (n > 0) & (n < min_items)
    reason[small] = [f"{k} items < {min_items} (min_items_per_human, the paper's t-test needs >= 30)"
                     for k in n[small]]
    d["skipped_reason"] = reason
    tested = reason == ""

    # paired t-test of d_ij = W^h - W^f against eps (one-sided, H1: mean < eps), from group sums:
    # sum d = S_h - S_f, sum d^2 = n - n_ties (d is +-1 off ties, 0 on ties)
    delta = (d["sum_wh"] - d["sum_wf"]).to_numpy(np.int64)
    k = (n - d["n_ties"]).to_numpy(np.int64)
    t = np.full(len(d), np.nan)
    p = np.full(len(d), np.nan)
    pw = np.full(len(d), np.nan)
    idx = np.flatnonzero(tested)
    if len(idx):
        t[idx], p[idx], pw[idx] = paired_t(n[idx], delta[idx], k[idx], eps)
    d["t"], d["p_value"], d["p_worse"] = t, p, pw
    d["p_adjusted"] = np.nan
    d["p_worse_adjusted"] = np.nan
    d["rejected"] = pd.array([pd.NA] * len(d), dtype="boolean")
    d["shown_worse"] = pd.array([pd.NA] * len(d), dtype="boolean")

    rule = alt_test_rule(eps, q, min_items)
    rows = []
    for judge in judges:
        sel = (d["judge"] == judge).to_numpy()
        ti = np.flatnonzero(sel & tested)
        notes = []
        n_rej = n_worse = 0
        if len(ti):
            rej, padj, _, _ = multipletests(d["p_value"].to_numpy()[ti], alpha=q, method="fdr_by")
            d.loc[d.index[ti], "p_adjusted"] = padj
            d.loc[d.index[ti], "rejected"] = rej
            rw, pwadj, _, _ = multipletests(d["p_worse"].to_numpy()[ti], alpha=q, method="fdr_by")
            d.loc[d.index[ti], "p_worse_adjusted"] = pwadj
            d.loc[d.index[ti], "shown_worse"] = rw
            n_rej, n_worse = int(rej.sum()), int(rw.sum())
            wr = float(np.mean(rej))
            ap = float(d["rho_llm"].to_numpy()[ti].mean())
            if len(ti) < RECOMMENDED_HUMANS:
                notes.append(f"only {len(ti)} human(s) tested; the paper recommends at least {RECOMMENDED_HUMANS} "
                             "(App. A)")
        else:
            wr = ap = float("nan")
            notes.append("no human could be tested (see skipped); winning rate undefined")
        skip = sel & ~tested
        n_skip = int(skip.sum())
        sk_h, sk_r, sk_n = d["human"].to_numpy()[skip], d["skipped_reason"].to_numpy()[skip], n[skip]
        if n_skip:
            notes.append(f"{n_skip} human(s) skipped (see skipped)")
        miss = int(d.loc[sel, "n_no_judge_label"].sum())
        if miss:
            notes.append(f"{miss} (human, item) pairs unused: no label from this judge")
        status, reasons = _verdict(len(ti), n_rej, n_worse, wr, n_skip, eps, min_items)
        if n_skip and status == "not_testable":
            reasons.append(f"skipped: {_skip_summary(sk_r, sk_n, min_items)}")
        rows.append({"judge": judge, "metric": METRIC, "estimate": wr, "ci_low": np.nan, "ci_high": np.nan,
                     "ci_method": "", "n_items": int(items.get(judge, 0)), "n_failed": 0, "status": status,
                     "advantage_probability": ap, "passed": status == "pass", "epsilon": eps,
                     "n_humans_tested": int(len(ti)), "n_humans_skipped": n_skip, "scoring": scoring, "q_fdr": q,
                     "note": "; ".join(notes), "rule": rule, "reasons": join_reasons(reasons), "scoring_reason": "",
                     "skipped": SEP.join(f"{h}: {r}" for h, r in zip(sk_h, sk_r))})
    details = d[DETAIL_COLUMNS].reset_index(drop=True)
    return details, pd.DataFrame(rows, columns=RESULT_COLUMNS)
