"""Self-preference and lineage (family) bias: the lineage map (data), MedQADE's Delta_self and
Delta_family with item-bootstrap CIs, and a simulator with planted rater -> model effects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from medeval_kit.bias._common import bias_frame, bootstrap_p, rows_of
from medeval_kit.columns import Columns, takes_columns
from medeval_kit.docstrings import shared_docs
from medeval_kit.errors import DataFileError, SchemaError
from medeval_kit.paths import data_dir
from medeval_kit.stats import bootstrap_means, percentile_interval

__all__ = ["load_lineage", "self_preference", "simulate_self_preference"]


def load_lineage(path: str | Path | None = None) -> pd.DataFrame:
    """Read the lineage map (model -> family, vendor) from YAML; default ``data/lineage.yaml``.

    The YAML has a top-level ``models:`` mapping ``name: {family: ..., vendor: ...}``. (A bundled
    map, hence ``load_``.)

    Parameters
    ----------
    path : str or Path, optional
        The YAML file; default the project's (else the toolkit's) ``data/lineage.yaml``.

    Returns
    -------
    DataFrame
        ``model, family, vendor``: one row per model.

    Raises
    ------
    DataFileError
        The file is missing or malformed.
    """
    import yaml

    p = Path(path) if path else data_dir() / "lineage.yaml"
    if not p.exists():
        raise DataFileError(f"{p}: lineage file not found")
    try:
        content = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise DataFileError(f"{p}: malformed YAML: {exc}") from None
    models = (content or {}).get("models")
    if not isinstance(models, dict) or not models:
        raise DataFileError(f"{p}: expected a top-level 'models:' mapping of model -> {{family, vendor}}")
    rows = []
    for name, info in models.items():
        if not isinstance(info, dict) or "family" not in info:
            raise DataFileError(f"{p}: model {name!r} needs at least a 'family' entry")
        rows.append({"model": str(name), "family": str(info["family"]), "vendor": str(info.get("vendor", ""))})
    return pd.DataFrame(rows)


def _lineage_dict(lineage, level: str) -> dict[str, str]:
    """Model -> lineage at ``level``, from a table, a mapping, a path or the default file (None)."""
    if lineage is None:
        lineage = load_lineage()
    if isinstance(lineage, (str, Path)):
        lineage = load_lineage(lineage)
    if isinstance(lineage, pd.DataFrame):
        if level not in lineage.columns:
            raise ValueError(f"lineage level {level!r} is not a column of the lineage table {list(lineage.columns)}")
        return dict(zip(lineage["model"].astype(str), lineage[level].astype(str)))
    if isinstance(lineage, Mapping):
        return {str(k): (v[level] if isinstance(v, Mapping) else str(v)) for k, v in lineage.items()}
    raise TypeError("lineage must be a DataFrame, a mapping, a path or None")


def _scores(scores: pd.DataFrame, item: str, model: str, rater: str, score: str) -> pd.DataFrame:
    """The four columns with a numeric score; raise on a missing column or a duplicated score."""
    for col in (item, model, rater, score):
        if col not in scores.columns:
            raise SchemaError("annotations", col, [], f"missing column; present: {list(scores.columns)}")
    d = scores[[item, model, rater, score]].copy()
    d[score] = pd.to_numeric(d[score], errors="coerce")
    dup = d.duplicated([item, model, rater], keep=False)
    if dup.any():
        raise SchemaError("annotations", f"{item},{model},{rater}", rows_of(dup),
                          "one score per item, response model and rater expected")
    return d


def _targets(a: str, models: list[str], lin: dict[str, str], fam: dict[str, str]) -> list[tuple[str, str]]:
    """(metric, response model) pairs rater ``a`` is tested on: itself, then its same-lineage siblings."""
    out = [("delta_self", a)] if a in models else []
    return out + [("delta_family", m) for m in models
                  if m != a and lin.get(m) is not None and lin.get(m) == fam[a]]


def _delta_row(sub: pd.DataFrame, a: str, peers: list[str], base: dict, *, n_boot: int, rng,
               confidence: float, note: str) -> dict:
    """The row of one (rater, target): mean per-item paired difference against the peers' mean."""
    own = sub[a]
    diff = own - sub[peers].mean(axis=1, skipna=True)
    valid = diff.notna()
    per_item = diff[valid].groupby(level=0).mean()
    n = len(per_item)
    low = high = p = np.nan
    if n and n_boot:
        reps = bootstrap_means(per_item.to_numpy(), n_boot, rng)
        low, high = percentile_interval(reps, confidence=confidence)
        p = bootstrap_p(reps)
    return {**base, "estimate": float(per_item.mean()) if n else np.nan, "ci_low": low, "ci_high": high,
            "ci_method": f"percentile bootstrap over items (B={n_boot})", "n_items": n,
            "n_failed": int(own.isna().sum()), "note": note, "n": int(valid.sum()), "n_dropped": int((~valid).sum()),
            "p_value": p, "test": "two-sided bootstrap p"}


@shared_docs
@takes_columns("item", "model", "rater", "score")
def self_preference(
    scores: pd.DataFrame,
    *,
    lineage=None,
    lineage_level: str = "family",
    raters: Sequence[str] | None = None,
    peer_pool: Sequence[str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    level: str | None = None,
    columns: Columns = None,
) -> pd.DataFrame:
    """MedQADE's Delta_self and Delta_family for every rater, with percentile-bootstrap CIs.

    ``scores`` has one row per (item, response model, rater) with a numeric ``score`` (e.g. 1 =
    correct, 0 = incorrect, NA = abstain). For rater A, the peers are the raters of *other* lineages
    (``lineage_level`` = ``family`` or ``vendor`` of the lineage map). For each response r,
    diff(r) = S(A, r) - mean over peers of S(peer, r) (NA scores dropped; responses without an A score
    or without any peer score are dropped and counted in ``n_dropped``).

    * ``delta_self``  - mean diff over responses written by A itself;
    * ``delta_family`` - mean diff over responses of each sibling (same lineage, different model);
      one row per (A, sibling).

    Per-item paired differences (averaged within an item first) are resampled ``n_boot`` times;
    the CI is the percentile interval. ``p_value`` is the two-sided bootstrap p (twice the smaller
    tail share at 0). A rater missing from the lineage map is its own lineage (noted), so it is a
    peer of everyone else. ``peer_pool`` restricts the candidate peers (default: all raters);
    ``raters`` restricts the raters A that are evaluated.
    Estimates are on the score scale (x100 for MedQADE's percent).

    Parameters
    ----------
    scores : DataFrame
        ``item, model`` (the response's model), ``rater`` and a numeric ``score``.
    lineage : DataFrame, mapping, str or Path, optional
        The lineage map (:func:`load_lineage`'s table, ``{model: {family, vendor}}``, or a YAML path);
        default the bundled map.
    lineage_level : {"family", "vendor"}, default "family"
        Which lineage makes raters kin.
    raters : sequence of str, optional
        The raters A to evaluate; default all.
    peer_pool : sequence of str, optional
        The candidate peers; default all raters.
    {n_boot}
    {seed}
    {confidence}
    level : str, optional
        Deprecated name of ``lineage_level`` (``level`` is the measurement level elsewhere).
    {columns}

    Returns
    -------
    DataFrame
        Per rater and target, metric ``delta_self`` / ``delta_family``: the contract columns, ``target``,
        ``level`` (the lineage level), ``n_peers``, ``peers``, ``p_value`` and ``test``.

    Raises
    ------
    SchemaError
        A column is missing or a score is duplicated.

    Examples
    --------
    >>> sim = simulate_self_preference(200, models=["gpt-4o", "claude-3"], raters=["gpt-4o", "claude-3"],
    ...                                effects={("gpt-4o", "gpt-4o"): 0.3}, seed=0)
    >>> res = self_preference(sim, lineage={"gpt-4o": {"family": "gpt"}, "claude-3": {"family": "claude"}},
    ...                       n_boot=50)
    >>> bool(res.set_index(["judge", "metric"]).loc[("gpt-4o", "delta_self"), "estimate"] > 0.1)
    True
    """
    if level is not None:
        import warnings

        warnings.warn("self_preference(level=...) is deprecated; use lineage_level=", DeprecationWarning,
                      stacklevel=4)
        lineage_level = level
    level = lineage_level
    item, model, rater, score = "item", "model", "rater", "score"
    d = _scores(scores, item, model, rater, score)
    lin = _lineage_dict(lineage, level)
    all_raters = sorted(d[rater].astype(str).unique())
    fam = {r: lin.get(r, f"?{r}") for r in all_raters}
    wide = d.pivot_table(index=[item, model], columns=rater, values=score, aggfunc="first")
    rng = np.random.default_rng(seed)
    rows = []
    models = sorted(d[model].astype(str).unique())
    pool = all_raters if peer_pool is None else [str(r) for r in peer_pool]
    for a in (raters or all_raters):
        peers = [r for r in pool if r in fam and r != a and fam[r] != fam[a]]
        unmapped = [r for r in [a, *peers] if r not in lin]
        note = f"not in the lineage map (own lineage): {unmapped}" if unmapped else ""
        for metric, m in _targets(a, models, lin, fam):
            sub = wide.xs(m, level=model, drop_level=True) if m in wide.index.get_level_values(model) else None
            base = {"judge": a, "criterion": "self_preference", "metric": metric, "target": m,
                    "level": level, "n_peers": len(peers), "peers": ",".join(peers), "unit": "item"}
            if sub is None or not peers or a not in sub.columns:
                rows.append({**base, "estimate": np.nan, "ci_method": "", "n_items": 0, "n_failed": 0, "n": 0,
                             "n_dropped": 0, "p_value": np.nan, "test": "",
                             "note": "no peers of another lineage" if not peers else "no scores by this rater"})
                continue
            rows.append(_delta_row(sub, a, peers, base, n_boot=n_boot, rng=rng, confidence=confidence, note=note))
    return bias_frame(rows)


@shared_docs
def simulate_self_preference(
    n_items: int = 500,
    *,
    models: Sequence[str],
    raters: Sequence[str],
    effects: Mapping[tuple[str, str], float] | None = None,
    accuracy: float = 0.5,
    noise: float = 0.1,
    seed: int = 0,
) -> pd.DataFrame:
    """Binary correctness scores (``item, model, rater, score``) with planted rater -> model biases.

    Each response of each of ``models`` is truly correct with probability ``accuracy``; every one of
    ``raters`` reports the truth with error rate ``noise``. For each ``(rater, model): delta`` in
    ``effects`` the rater's score is shifted by ``delta`` in expectation (a positive delta turns
    incorrect into correct with the needed probability, a negative one the reverse), so
    Delta_self/Delta_family = delta. (MedQADE-shaped settings: ``repro.papers.medqade_2026.FIG8_SIMULATION``.)

    Parameters
    ----------
    n_items : int, default 500
        Items (questions) per model.
    models : sequence of str
        The response models.
    raters : sequence of str
        The raters.
    effects : mapping of (str, str) to float, optional
        ``{(rater, model): delta}``: the planted shift of that rater's scores of that model.
    accuracy : float, default 0.5
        The chance a response is truly correct.
    noise : float, default 0.1
        Every rater's error rate.
    {seed}

    Returns
    -------
    DataFrame
        ``item, model, rater, score`` (1.0 / 0.0).
    """
    effects = dict(effects or {})
    rng = np.random.default_rng(seed)
    rows = []
    # peer mean of a response = accuracy*(1-noise) + (1-accuracy)*noise
    p_peer = accuracy * (1 - noise) + (1 - accuracy) * noise
    for m in models:
        truth = rng.random(n_items) < accuracy
        for r in raters:
            s = np.where(rng.random(n_items) < noise, ~truth, truth)
            delta = effects.get((r, m), 0.0)
            if delta > 0:
                s = np.where(~s & (rng.random(n_items) < delta / (1 - p_peer)), True, s)
            elif delta < 0:
                s = np.where(s & (rng.random(n_items) < -delta / p_peer), False, s)
            rows.append(pd.DataFrame({"item": [f"q{j:04d}" for j in range(n_items)], "model": m, "rater": r,
                                      "score": s.astype(float)}))
    return pd.concat(rows, ignore_index=True)
