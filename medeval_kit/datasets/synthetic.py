"""Synthetic tables with planted effects, so tests can show that estimators recover the truth.

* :func:`synthetic_annotations` plants an inter-rater kappa.
* :func:`synthetic_panel` plants a human panel (dense or sparse) and judges with known noise.
* :func:`synthetic_pairwise` plants a first-slot (position) preference.
* :func:`synthetic_rounds` plants a per-round improvement and, optionally, a score-driven drop-out.
* :func:`synthetic_aspect_scores` plants a few rubric aspects that carry a human A/B/tie preference
  among many noise aspects (or none: the null), for aspect-selection optimism.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["synthetic_annotations", "synthetic_panel", "synthetic_pairwise", "synthetic_rounds",
           "synthetic_aspect_scores"]

COMPONENTS = ("context", "question", "answer", "distractors", "reasoning")


def synthetic_annotations(
    n_items: int = 200,
    n_raters: int = 3,
    kappa: float = 0.6,
    categories: Sequence[str] = ("A", "B", "tie"),
    prevalence: Sequence[float] | None = None,
    missing: float = 0.0,
    rater_kind: str = "human",
    criterion: str = "overall",
    seed: int = 0,
) -> pd.DataFrame:
    """Return an ``annotations`` table in which every rater pair has population kappa ``kappa``.

    Latent-class model: each item has a true class drawn from ``prevalence``; each rater reports it
    with probability ``r = sqrt(kappa)`` and otherwise draws a label from ``prevalence``. Then every
    rater's marginal equals ``prevalence``, P(agree) = r² + (1 − r²)·Σp², and Cohen's κ = Scott's π =
    Fleiss' κ = Krippendorff's α (nominal) = r² = ``kappa`` in the population. ``missing`` removes
    that share of labels completely at random (label NA).
    """
    if not 0 <= kappa <= 1:
        raise ValueError(f"kappa must be in [0, 1] for this generator; got {kappa}")
    rng = np.random.default_rng(seed)
    k = len(categories)
    p = np.full(k, 1 / k) if prevalence is None else np.asarray(prevalence, float)
    if len(p) != k or not np.isclose(p.sum(), 1):
        raise ValueError("prevalence must have one probability per category and sum to 1")
    truth = rng.choice(k, size=n_items, p=p)
    r = np.sqrt(kappa)
    copy = rng.random((n_items, n_raters)) < r
    noise = rng.choice(k, size=(n_items, n_raters), p=p)
    codes = np.where(copy, truth[:, None], noise)
    labels = np.asarray(categories, dtype=object)[codes]
    if missing > 0:
        labels[rng.random(labels.shape) < missing] = None
    width = len(str(n_items - 1))
    return pd.DataFrame({
        "item": np.repeat([f"i{j:0{width}d}" for j in range(n_items)], n_raters),
        "rater": np.tile([f"r{j + 1}" for j in range(n_raters)], n_items),
        "rater_kind": rater_kind,
        "criterion": criterion,
        "label": labels.ravel(),
    })


def synthetic_panel(
    n_items: int = 200,
    n_humans: int = 3,
    n_judges: int = 1,
    kappa: float = 0.6,
    judge_kappa: float | Sequence[float] | None = None,
    labels_per_item: tuple[int, int] | None = None,
    categories: Sequence[str] = ("A", "B", "tie"),
    prevalence: Sequence[float] | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Return an ``annotations`` table of humans and LLM judges with planted, comparable noise.

    Same latent-class model as :func:`synthetic_annotations`: every rater reports the item's true
    class with probability sqrt(kappa) and otherwise draws from ``prevalence``, so any two raters
    have population kappa ``kappa``. Judges use ``judge_kappa`` (default: the humans' ``kappa``,
    i.e. judges exchangeable with the humans, so the true judge-minus-humans difference is 0).
    ``labels_per_item=(lo, hi)`` makes a sparse panel: each item is labelled by a random subset of
    lo..hi humans (judges label every item). Columns: item, rater, rater_kind, label.

    >>> t = synthetic_panel(n_items=10, n_humans=60, labels_per_item=(2, 4), seed=0)
    >>> int(t[t.rater_kind == "human"].groupby("item").size().max()) <= 4
    True
    """
    rng = np.random.default_rng(seed)
    k = len(categories)
    p = np.full(k, 1 / k) if prevalence is None else np.asarray(prevalence, float)
    jk = [kappa] * n_judges if judge_kappa is None else (
        [judge_kappa] * n_judges if np.isscalar(judge_kappa) else list(judge_kappa))
    if len(jk) != n_judges or not all(0 <= v <= 1 for v in [kappa, *jk]):
        raise ValueError("kappa and judge_kappa must be in [0, 1], one judge_kappa per judge")
    truth = rng.choice(k, size=n_items, p=p)
    r = np.sqrt(np.array([kappa] * n_humans + jk))
    copy = rng.random((n_items, n_humans + n_judges)) < r[None, :]
    noise = rng.choice(k, size=(n_items, n_humans + n_judges), p=p)
    codes = np.where(copy, truth[:, None], noise)
    present = np.ones_like(codes, dtype=bool)
    if labels_per_item is not None:
        lo, hi = labels_per_item
        if not 1 <= lo <= hi <= n_humans:
            raise ValueError(f"labels_per_item must satisfy 1 <= lo <= hi <= n_humans; got {labels_per_item}")
        present[:, :n_humans] = False
        sizes = rng.integers(lo, hi + 1, n_items)
        for i, m in enumerate(sizes):
            present[i, rng.choice(n_humans, m, replace=False)] = True
    width = len(str(n_items - 1))
    hw, jw = len(str(n_humans)), len(str(n_judges))
    names = [f"h{j + 1:0{hw}d}" for j in range(n_humans)] + [f"llm{j + 1:0{jw}d}" for j in range(n_judges)]
    kinds = ["human"] * n_humans + ["llm"] * n_judges
    ii, rr = np.nonzero(present)
    return pd.DataFrame({
        "item": np.array([f"i{j:0{width}d}" for j in range(n_items)], dtype=object)[ii],
        "rater": np.array(names, dtype=object)[rr],
        "rater_kind": np.array(kinds, dtype=object)[rr],
        "label": np.asarray(categories, dtype=object)[codes[ii, rr]],
    })


def synthetic_pairwise(
    n_items: int = 200,
    judges: Sequence[str] = ("judge",),
    criteria: Sequence[str] = ("overall",),
    first_slot_preference: float = 0.2,
    tie_rate: float = 0.1,
    p_a: float = 0.6,
    repeats: int = 1,
    seed: int = 0,
) -> pd.DataFrame:
    """Return a pairwise ``judgments`` table, both orders, with a planted first-slot preference.

    Each item has a true winner (A with probability ``p_a``). Each call is a tie with probability
    ``tie_rate``; otherwise the judge picks the first slot regardless of content with probability
    ``b = 2·first_slot_preference`` and the true winner otherwise. Pooled over both orders the
    content choice is first-slot half the time, so among non-tie verdicts
    P(first slot) = 0.5 + ``first_slot_preference`` exactly. Columns add ``slot_verdict``
    (first/second/tie, as presented) to the un-swapped ``verdict`` (A/B/tie), and ``len_a``/``len_b``.
    """
    if not 0 <= first_slot_preference <= 0.5:
        raise ValueError("first_slot_preference must be in [0, 0.5]")
    rng = np.random.default_rng(seed)
    b = 2 * first_slot_preference
    width = len(str(n_items - 1))
    item_ids = np.array([f"i{j:0{width}d}" for j in range(n_items)])
    winner = np.where(rng.random(n_items) < p_a, "A", "B")
    len_a = rng.lognormal(4.5, 0.5, n_items).round().astype(int)
    len_b = rng.lognormal(4.5, 0.5, n_items).round().astype(int)
    frames = []
    for judge in judges:
        for crit in criteria:
            for order in ("AB", "BA"):
                for rep in range(repeats):
                    u_tie, u_pos = rng.random(n_items), rng.random(n_items)
                    first_model = "A" if order == "AB" else "B"
                    content_first = winner == first_model
                    picks_first = np.where(u_pos < b, True, content_first)
                    slot = np.where(u_tie < tie_rate, "tie", np.where(picks_first, "first", "second"))
                    second_model = "B" if order == "AB" else "A"
                    verdict = np.where(slot == "tie", "tie", np.where(slot == "first", first_model, second_model))
                    frames.append(pd.DataFrame({
                        "item": item_ids, "judge": judge, "protocol": "pairwise", "criterion": crit,
                        "order": order, "repeat": rep, "raw": slot, "verdict": verdict,
                        "slot_verdict": slot, "parse_status": "ok", "len_a": len_a, "len_b": len_b,
                        "true_winner": winner,
                    }))
    return pd.concat(frames, ignore_index=True)


def synthetic_rounds(
    n_items: int = 100,
    n_rounds: int = 4,
    improvement: float = 0.05,
    start: float = 0.6,
    noise: float = 0.05,
    components: Sequence[str] = COMPONENTS,
    stop_threshold: float | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Return a ``rounds`` table whose component scores rise by ``improvement`` per round.

    score = clip(start + u_item + improvement·(round − 1) + ε, 0, 1), u_item ~ N(0, 0.08),
    ε ~ N(0, noise). With ``stop_threshold`` an item stops after the first round whose mean component
    score exceeds it, so better items leave early: the available-only round means are then
    survivor-biased while the planted per-item improvement stays ``improvement``.
    """
    rng = np.random.default_rng(seed)
    width = len(str(n_items - 1))
    rows = []
    for i in range(n_items):
        u = rng.normal(0, 0.08)
        kept = []
        for r in range(1, n_rounds + 1):
            scores = np.clip(start + u + improvement * (r - 1) + rng.normal(0, noise, len(components)), 0, 1)
            kept.append(scores)
            if stop_threshold is not None and scores.mean() > stop_threshold:
                break
        means = [s.mean() for s in kept]
        best = int(np.argmax(means))  # earliest round among equal maxima
        for r, scores in enumerate(kept, start=1):
            for comp, s in zip(components, scores):
                rows.append({
                    "item": f"i{i:0{width}d}", "round": r, "component": comp, "aspect": "total",
                    "score": float(s), "max_score": 1.0, "stop": r == len(kept), "best": r - 1 == best,
                })
    return pd.DataFrame(rows)


def synthetic_aspect_scores(
    n_items: int = 40,
    n_aspects: int = 30,
    n_planted: int = 3,
    signal: float = 1.5,
    noise: float = 0.8,
    prevalence: Sequence[float] = (0.45, 0.40, 0.15),
    label_noise: float = 0.0,
    missing: float = 0.0,
    seed: int = 0,
    population_seed: int | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return (scores, preferences): 1-5 rubric scores of two systems A and B on ``n_aspects`` aspects,
    and a human A/B/tie preference per item that only ``n_planted`` aspects carry.

    Each item has a true preference (A, B, tie with ``prevalence``) and a quality q ~ N(3.4, 0.6);
    each aspect an offset m ~ N(0, 0.4). A system's latent score on an aspect is q + m + e,
    e ~ N(0, ``noise``), plus ``signal``/2 for the preferred system and minus it for the other on a
    planted aspect (nothing on a tie); scores are rounded and clipped to 1-5. Noise aspects carry no
    information about the preference, so ``n_planted=0`` (or ``signal=0``) is the null. The human
    label is the true preference, replaced by a random draw from ``prevalence`` with probability
    ``label_noise``; ``missing`` blanks that share of scores (NaN) at random. ``scores`` is long
    (``item, system, aspect, score, planted``), ``preferences`` has ``item, preference, truth``.
    """
    p = np.asarray(prevalence, float)
    if len(p) != 3 or not np.isclose(p.sum(), 1):
        raise ValueError("prevalence must be three probabilities (A, B, tie) summing to 1")
    if not 0 <= n_planted <= n_aspects:
        raise ValueError(f"n_planted must be in [0, n_aspects]; got {n_planted}")
    pop = np.random.default_rng(seed if population_seed is None else population_seed)
    planted = np.zeros(n_aspects, dtype=bool)
    planted[pop.choice(n_aspects, size=n_planted, replace=False)] = True
    m = pop.normal(0.0, 0.4, n_aspects)[None, :]
    rng = np.random.default_rng([seed, 1])
    labels = np.array(["A", "B", "tie"], dtype=object)
    truth = rng.choice(3, size=n_items, p=p)
    sign = np.select([truth == 0, truth == 1], [1.0, -1.0], 0.0)
    q = rng.normal(3.4, 0.6, n_items)[:, None]
    shift = signal / 2 * sign[:, None] * planted[None, :]
    za = q + m + shift + rng.normal(0, noise, (n_items, n_aspects))
    zb = q + m - shift + rng.normal(0, noise, (n_items, n_aspects))
    scores = np.stack([np.clip(np.rint(za), 1, 5), np.clip(np.rint(zb), 1, 5)])  # system x item x aspect
    if missing > 0:
        scores[rng.random(scores.shape) < missing] = np.nan
    human = np.where(rng.random(n_items) < label_noise, rng.choice(3, size=n_items, p=p), truth)
    iw, aw = len(str(n_items - 1)), len(str(n_aspects))
    items = np.array([f"i{j:0{iw}d}" for j in range(n_items)], dtype=object)
    aspects = np.array([f"aspect{j + 1:0{aw}d}" for j in range(n_aspects)], dtype=object)
    long = pd.DataFrame({
        "item": np.tile(np.repeat(items, n_aspects), 2),
        "system": np.repeat(["A", "B"], n_items * n_aspects),
        "aspect": np.tile(aspects, 2 * n_items),
        "score": scores.reshape(-1),
        "planted": np.tile(planted, 2 * n_items),
    })
    prefs = pd.DataFrame({"item": items, "preference": labels[human], "truth": labels[truth]})
    return long, prefs
