"""A model of a physician panel and its judges, and panels simulated from it: what planning draws on.

:class:`PanelModel` holds the categories and their prevalence, and for every physician and every judge
a confusion matrix against a latent true class (rows: true class, columns: label given), plus each
judge's share of labelled items, the physicians per item and the number of physicians.
:func:`panel_model` estimates it from a pilot file by the Dawid & Skene (1979) EM algorithm (every
rater conditionally independent given the true class; initialised at the humans' vote shares, so
class k stays label k; a pseudo-count of ``smoothing`` in every cell keeps a small pilot from
producing zero probabilities). :func:`panel_model_from` builds it from stated values: accuracies
(errors spread over the other categories in proportion to their prevalence) or a pairwise κ under the
latent-class model of :func:`~medeval_kit.datasets.synthetic.synthetic_panel`.
:func:`simulate_panel` draws one study from it. :mod:`medeval_kit.agreement.planning` uses both.

References: Dawid, A. P. & Skene, A. M. (1979), Maximum likelihood estimation of observer error-rates
using the EM algorithm, *Applied Statistics* 28(1), 20-28.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from medeval_kit.agreement.data import AgreementError, prepare
from medeval_kit.agreement.panel import panel_of

__all__ = ["PlanningError", "PanelModel", "panel_model", "panel_model_from", "simulate_panel", "REFERENCE_JUDGE"]

REFERENCE_JUDGE = "reference (as good as a physician)"
"""The name of the reference judge added to every plan: a judge whose confusion matrix is the physicians'
average (so its Δ is about 0): the usual planning assumption of a non-inferiority study."""
class PlanningError(AgreementError):
    """A planning input that cannot be used (bad power, margin, model or design)."""


# --------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class PanelModel:
    """The structure and noise of a panel: everything a simulated study needs.

    ``human_confusion`` is (physicians, K, K) and ``judge_confusion`` (judges, K, K); row k is the
    distribution of the label given true class k. ``judge_coverage`` is each judge's share of labelled
    items. ``raters_per_item`` and ``n_physicians`` are the pilot's (or stated) design.
    """

    categories: tuple
    prevalence: np.ndarray
    humans: tuple
    human_confusion: np.ndarray
    judges: tuple
    judge_confusion: np.ndarray
    judge_coverage: np.ndarray
    raters_per_item: int
    n_physicians: int
    source: str = "stated values"
    n_items: int = 0
    method: str = ""
    log_likelihood: float = float("nan")
    n_iter: int = 0

    @property
    def K(self) -> int:
        """The number of categories."""
        return len(self.categories)

    @property
    def human_accuracy(self) -> np.ndarray:
        """Each physician's probability of giving the true class (prevalence-weighted diagonal)."""
        return _accuracy(self.human_confusion, self.prevalence)

    @property
    def judge_accuracy(self) -> np.ndarray:
        """Each judge's probability of giving the true class, when it labels the item."""
        return _accuracy(self.judge_confusion, self.prevalence)

    def with_reference(self, name: str = REFERENCE_JUDGE) -> PanelModel:
        """The model plus a judge with the physicians' average confusion matrix (true Δ about 0), unless one of
        its judges already has exactly that matrix (e.g. a stated judge as good as the physicians)."""
        avg = self.human_confusion.mean(0)
        if name in self.judges or any(np.allclose(c, avg, atol=1e-9) for c in self.judge_confusion):
            return self  # already there, or a judge of the model is exactly as good as the physicians
        conf = np.concatenate([self.judge_confusion, avg[None]])
        return replace(self, judges=(*self.judges, name), judge_confusion=conf,
                       judge_coverage=np.append(self.judge_coverage, 1.0))

    def only_judges(self, judges: Sequence) -> PanelModel:
        """The model with only the named judges (in that order)."""
        idx = [self.judges.index(j) for j in judges]
        return replace(self, judges=tuple(judges), judge_confusion=self.judge_confusion[idx],
                       judge_coverage=self.judge_coverage[idx])

    def to_frame(self) -> pd.DataFrame:
        """One row per rater: role, rater, accuracy, coverage and the confusion matrix's rows."""
        rows = []
        for role, names, confs, cov in (("physician", self.humans, self.human_confusion, np.ones(len(self.humans))),
                                        ("judge", self.judges, self.judge_confusion, self.judge_coverage)):
            acc = _accuracy(confs, self.prevalence)
            for name, c, a, v in zip(names, confs, acc, cov):
                row = dict(role=role, rater=name, accuracy=float(a), coverage=float(v))
                for k, cat in enumerate(self.categories):
                    row[f"P(label | true {cat})"] = " ".join(f"{x:.3f}" for x in c[k])
                rows.append(row)
        return pd.DataFrame(rows)

    def describe(self) -> list[str]:
        """The assumptions in words, one line each."""
        prev = ", ".join(f"{c} {p:.2f}" for c, p in zip(self.categories, self.prevalence))
        acc = self.human_accuracy
        lines = [f"model: {self.source}" + (f"; {self.method}" if self.method else ""),
                 f"categories and prevalence of the true class: {prev}",
                 f"physicians: {len(self.humans)} modelled, accuracy against the true class "
                 f"{_range(acc)} (mean {acc.mean():.3f}); {self.raters_per_item} per item in the pilot design, "
                 f"pool of {self.n_physicians}"]
        for name, a, cov in zip(self.judges, self.judge_accuracy, self.judge_coverage):
            extra = "" if cov >= 0.9995 else f", labels {cov:.1%} of the items"
            lines.append(f"judge '{name}': accuracy {a:.3f}{extra}")
        lines.append("errors independent given the true class (Dawid-Skene); a larger pool of physicians reuses "
                     "the modelled physicians' confusion matrices in turn")
        return lines


def _accuracy(conf: np.ndarray, prev: np.ndarray) -> np.ndarray:
    return np.einsum("rkk,k->r", conf, prev) if len(conf) else np.zeros(0)


def _range(a: np.ndarray) -> str:
    return f"{a[0]:.3f}" if len(a) == 1 or np.ptp(a) < 5e-4 else f"{a.min():.3f}-{a.max():.3f}"


def panel_model(
    df: pd.DataFrame,
    humans: Sequence | None = None,
    judges: Sequence | None = None,
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    rater_kind: str | None = "rater_kind",
    categories: Sequence | None = None,
    smoothing: float = 0.5,
    max_iter: int = 500,
    tol: float = 1e-7,
    source: str | None = None,
) -> PanelModel:
    """Estimate a panel's structure and noise from a pilot annotations table (Dawid-Skene EM).

    Parameters
    ----------
    df : DataFrame
        Long annotations table, one row per (item, rater) with the label.
    humans, judges : sequence of str, optional
        Who is human and who is a judge (as in :func:`~medeval_kit.agreement.judge_vs_humans`; default:
        the ``rater_kind`` column).
    item, rater, label, rater_kind : str
        Column names.
    categories : sequence, optional
        The labels (default: those in the table).
    smoothing : float
        Pseudo-count added to every cell of every confusion matrix and to the prevalence, so that a
        small pilot gives no zero probabilities (default 0.5).
    max_iter, tol : int, float
        EM stops after ``max_iter`` iterations or when the log-likelihood gains less than ``tol`` per item.
    source : str, optional
        The file name, for messages.

    Returns
    -------
    PanelModel
        Prevalence, one confusion matrix per physician and per judge, each judge's labelling rate,
        physicians per item (median over items) and the number of physicians.

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> m = panel_model(synthetic_panel(n_items=2000, kappa=0.64, seed=1))  # accuracy 0.8 + 0.2 / 3 = 0.867
    >>> [round(float(a), 2) for a in m.human_accuracy]
    [0.87, 0.85, 0.87]
    """
    humans, judges = panel_of(df, humans, judges, rater=rater, rater_kind=rater_kind, min_humans=2,
                                   source=source)
    data = prepare(df, item=item, rater=rater, label=label, raters=humans + judges, categories=categories,
                   source=source)
    H = len(humans)
    codes = data.codes
    lab_h = (codes[:, :H] >= 0).sum(1)
    keep = lab_h >= 1
    if keep.sum() < 2:
        raise PlanningError(f"{source + ': ' if source else ''}the pilot has {int(keep.sum())} item(s) labelled by a "
                            "human; a model of the panel needs more")
    codes = codes[keep]
    K = data.K
    if K < 2:
        raise PlanningError(f"{source + ': ' if source else ''}the pilot uses a single label "
                            f"({data.categories[0]!r}); planning needs at least two categories")
    X = np.zeros(codes.shape + (K,))
    ii, rr = np.nonzero(codes >= 0)
    X[ii, rr, codes[ii, rr]] = 1.0
    T = X[:, :H].sum(1) + 1e-3  # soft vote of the humans: class k starts as label k
    T /= T.sum(1, keepdims=True)
    ll_old, it = -np.inf, 0
    for it in range(1, max_iter + 1):  # noqa: B007 - the count is reported
        prev = T.sum(0) + smoothing
        prev /= prev.sum()
        cnt = np.einsum("ik,irl->rkl", T, X) + smoothing
        conf = cnt / cnt.sum(2, keepdims=True)
        logp = np.log(prev)[None] + np.einsum("irl,rkl->ik", X, np.log(conf))
        mx = logp.max(1, keepdims=True)
        ll = float((mx[:, 0] + np.log(np.exp(logp - mx).sum(1))).sum())
        T = np.exp(logp - mx)
        T /= T.sum(1, keepdims=True)
        if ll - ll_old < tol * len(codes):
            break
        ll_old = ll
    cover = (codes[:, H:] >= 0).mean(0) if judges else np.zeros(0)
    rpi = int(max(2, round(float(np.median(lab_h[keep])))))
    where = f"pilot {source}" if source else "pilot table"
    return PanelModel(categories=tuple(data.categories), prevalence=prev, humans=tuple(humans),
                      human_confusion=conf[:H], judges=tuple(judges), judge_confusion=conf[H:],
                      judge_coverage=cover, raters_per_item=rpi, n_physicians=H,
                      source=f"estimated from the {where} ({len(codes)} items, {H} physicians, {len(judges)} "
                             "judge(s))",
                      n_items=int(len(codes)),
                      method=f"Dawid-Skene EM over every rater ({it} iterations, pseudo-count {smoothing:g})",
                      log_likelihood=ll, n_iter=it)


def _confusion(K: int, prev: np.ndarray, accuracy: float | None, kappa: float | None, what: str) -> np.ndarray:
    if kappa is not None:
        if not 0 <= kappa <= 1:
            raise PlanningError(f"{what} kappa must be between 0 and 1; got {kappa}")
        r = math.sqrt(kappa)
        return r * np.eye(K) + (1 - r) * np.tile(prev, (K, 1))
    if accuracy is None or not 0 < accuracy <= 1:
        raise PlanningError(f"{what} accuracy must be between 0 and 1, e.g. 0.85; got {accuracy}")
    off = np.tile(prev, (K, 1)) * (1 - np.eye(K))
    off = off / off.sum(1, keepdims=True) * (1 - accuracy)
    return off + accuracy * np.eye(K)


def panel_model_from(
    accuracy_humans: float | Sequence[float] | None = None,
    accuracy_judge: float | Sequence[float] | None = None,
    *,
    kappa: float | None = None,
    judge_kappa: float | None = None,
    categories: int | Sequence = 3,
    prevalence: Sequence[float] | None = None,
    n_physicians: int = 3,
    raters_per_item: int | None = None,
    judges: Sequence[str] = ("judge",),
) -> PanelModel:
    """A panel model from stated values, without a pilot.

    Parameters
    ----------
    accuracy_humans : float or sequence of float, optional
        Each physician's probability of giving the true class (one value for all, or one per physician);
        errors go to the other categories in proportion to their prevalence.
    accuracy_judge : float or sequence of float, optional
        The judge's (or each judge's) accuracy; default: the physicians' mean (a judge as good as them).
    kappa : float, optional
        Instead of accuracies: the physicians' pairwise κ under the latent-class model of
        :func:`~medeval_kit.datasets.synthetic.synthetic_panel` (true class with probability √κ,
        otherwise a guess from the prevalence).
    judge_kappa : float, optional
        The judge's κ with a physician under the same model (default: ``kappa``, or ``accuracy_judge``).
    categories : int or sequence
        The number of categories (labels ``c1, c2, ...``) or the labels.
    prevalence : sequence of float, optional
        The true classes' prevalence (default uniform).
    n_physicians : int
        The pool of physicians (default 3).
    raters_per_item : int, optional
        Physicians per item (default: ``n_physicians``, i.e. every physician labels every item).
    judges : sequence of str
        The judges' names.

    Returns
    -------
    PanelModel

    Examples
    --------
    >>> m = panel_model_from(accuracy_humans=0.8, categories=3)
    >>> round(float(m.human_accuracy[0]), 3), round(float(m.judge_accuracy[0]), 3)
    (0.8, 0.8)
    """
    cats = tuple(f"c{k + 1}" for k in range(categories)) if isinstance(categories, (int, np.integer)) \
        else tuple(categories)
    K = len(cats)
    if K < 2:
        raise PlanningError(f"categories must be 2 or more; got {K}")
    p = np.full(K, 1 / K) if prevalence is None else np.asarray(prevalence, float)
    if len(p) != K or (p <= 0).any() or not np.isclose(p.sum(), 1, atol=1e-3):
        raise PlanningError(f"prevalence must have one positive share per category ({K}) summing to 1; got "
                            f"{list(np.round(p, 4))}")
    p = p / p.sum()
    if n_physicians < 2:
        raise PlanningError(f"n_physicians must be 2 or more; got {n_physicians}")
    if (accuracy_humans is None) == (kappa is None):
        raise PlanningError("state the physicians' noise: accuracy_humans=... (--accuracy-humans) or kappa=... "
                            "(--kappa), one of the two")
    accs = np.atleast_1d(np.asarray(accuracy_humans, float)) if accuracy_humans is not None else None
    if accs is not None and len(accs) not in (1, n_physicians):
        raise PlanningError(f"accuracy_humans needs one value or one per physician ({n_physicians}); got {len(accs)}")
    if accs is not None:
        H = np.stack([_confusion(K, p, float(a), None, "physicians'") for a in np.resize(accs, n_physicians)])
    else:
        H = np.stack([_confusion(K, p, None, kappa, "physicians'")] * n_physicians)
    judges = tuple(judges)
    if judge_kappa is not None:
        J = np.stack([_confusion(K, p, None, judge_kappa, "the judge's")] * len(judges))
    elif accuracy_judge is not None:
        ja = np.resize(np.atleast_1d(np.asarray(accuracy_judge, float)), len(judges))
        J = np.stack([_confusion(K, p, float(a), None, "the judge's") for a in ja])
    elif kappa is not None:
        J = np.stack([_confusion(K, p, None, kappa, "the judge's")] * len(judges))
    else:
        J = np.stack([H.mean(0)] * len(judges))
    rpi = n_physicians if raters_per_item is None else int(raters_per_item)
    if not 2 <= rpi <= n_physicians:
        raise PlanningError(f"raters_per_item must be between 2 and n_physicians ({n_physicians}); got {rpi}")
    said = (f"physicians' kappa {kappa:g}" if kappa is not None else
            f"physicians' accuracy {', '.join(f'{a:g}' for a in accs)}")
    if judge_kappa is not None:
        said += f", judge's kappa {judge_kappa:g}"
    elif accuracy_judge is not None:
        said += f", judge's accuracy {', '.join(f'{a:g}' for a in np.atleast_1d(accuracy_judge))}"
    else:
        said += ", judge as good as the physicians"
    return PanelModel(categories=cats, prevalence=p, humans=tuple(f"physician{k + 1}" for k in range(n_physicians)),
                      human_confusion=H, judges=judges, judge_confusion=J, judge_coverage=np.ones(len(judges)),
                      raters_per_item=rpi, n_physicians=n_physicians, source=f"stated values ({said})",
                      method="latent-class model: true class with probability sqrt(kappa), else a guess from the "
                             "prevalence" if kappa is not None or judge_kappa is not None else
                             "errors spread over the other categories in proportion to their prevalence")


# --------------------------------------------------------------------------- simulated panels


def _draw(conf_rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Labels from per-cell distributions ``conf_rows`` (..., K) and uniforms ``u`` (...)."""
    cdf = np.cumsum(conf_rows, -1)
    return np.minimum((u[..., None] > cdf).sum(-1), conf_rows.shape[-1] - 1)


def _physician_names(P: int) -> list[str]:
    w = len(str(P))
    return [f"physician{k + 1:0{w}d}" for k in range(P)]


def simulate_panel(
    model: PanelModel,
    n_items: int,
    raters_per_item: int | None = None,
    n_physicians: int | None = None,
    *,
    seed=0,
) -> pd.DataFrame:
    """One simulated study: a long annotations table drawn from ``model``.

    Parameters
    ----------
    model : PanelModel
        The panel's structure and noise.
    n_items : int
        Items in the study.
    raters_per_item : int, optional
        Physicians per item (default: the model's); each item's physicians are drawn at random from the pool.
    n_physicians : int, optional
        The pool of physicians (default: the model's, at least ``raters_per_item``); physician k has the
        confusion matrix of the model's physician ``k mod H``.
    seed : int or sequence of int
        Seed of :func:`numpy.random.default_rng`.

    Returns
    -------
    DataFrame
        Columns item, rater, rater_kind (``human`` / ``llm``), label; judges label every item they cover.

    Examples
    --------
    >>> m = panel_model_from(kappa=0.6, n_physicians=10, raters_per_item=3)
    >>> t = simulate_panel(m, 50, seed=1)
    >>> sorted(set(t[t.rater_kind == "human"].groupby("item").size()))
    [3]
    """
    items, raters, labels, names, P = _simulate(model, n_items, raters_per_item, n_physicians, seed)
    cats = np.asarray(model.categories, dtype=object)
    return pd.DataFrame({"item": items, "rater": names[raters],
                         "rater_kind": np.where(raters < P, "human", "llm"), "label": cats[labels]})


def simulate_codes(
    model: PanelModel,
    n_items: int,
    raters_per_item: int | None = None,
    n_physicians: int | None = None,
    *,
    seed=0,
) -> tuple[np.ndarray, list[str], int]:
    """The study of :func:`simulate_panel` (same arguments, same draws) as a code matrix.

    Returns
    -------
    (numpy.ndarray, list of str, int)
        ``codes`` (n_items, physicians + judges): the index of each label in ``model.categories``,
        -1 where the rater did not label the item; the raters' names (physicians, then the model's
        judges); the number of physicians.

    Examples
    --------
    >>> m = panel_model_from(kappa=0.6, n_physicians=3)
    >>> codes, names, P = simulate_codes(m, 5, seed=1)
    >>> codes.shape, names[:P]
    ((5, 4), ['physician1', 'physician2', 'physician3'])
    """
    items, raters, labels, names, P = _simulate(model, n_items, raters_per_item, n_physicians, seed)
    codes = np.full((int(n_items), len(names)), -1, dtype=np.int64)
    codes[items, raters] = labels
    return codes, names.tolist(), P


def _simulate(model: PanelModel, n_items, raters_per_item, n_physicians, seed):
    """(item, rater, label code) of every label drawn, the raters' names and the number of physicians."""
    rng = np.random.default_rng(seed)
    r = model.raters_per_item if raters_per_item is None else int(raters_per_item)
    P = max(model.n_physicians, r) if n_physicians is None else int(n_physicians)
    n, K = int(n_items), model.K
    truth = np.minimum(np.searchsorted(np.cumsum(model.prevalence), rng.random(n), side="right"), K - 1)
    if r >= P:
        who = np.broadcast_to(np.arange(P), (n, P))
    else:
        who = np.argpartition(rng.random((n, P)), r, axis=1)[:, :r]
    pool = model.human_confusion[np.arange(P) % len(model.humans)]
    hl = _draw(pool[who, truth[:, None]], rng.random(who.shape))
    J = len(model.judges)
    jl = _draw(model.judge_confusion[np.arange(J)[None, :], truth[:, None]], rng.random((n, J)))
    jok = rng.random((n, J)) < model.judge_coverage[None, :]
    names = np.asarray(_physician_names(P) + list(model.judges), dtype=object)
    ji, jj = np.nonzero(jok)
    items = np.concatenate([np.repeat(np.arange(n), who.shape[1]), ji])
    raters = np.concatenate([who.ravel(), P + jj])
    labels = np.concatenate([hl.ravel(), jl[ji, jj]])
    return items, raters, labels, names, P
