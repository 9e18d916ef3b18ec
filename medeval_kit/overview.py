"""Describe bundled or user datasets: table sizes, label and score distributions, mean scores with CIs and
the correct-letter balance of MCQ items (:func:`medeval_kit.bias.letter_balance`). Plots are in
:mod:`medeval_kit.viz.overview`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from medeval_kit.bias import letter_balance
from medeval_kit.datasets import Bundle
from medeval_kit.results import result_frame, result_row
from medeval_kit.stats import bootstrap_means, percentile_interval

__all__ = [
    "table_counts",
    "label_distribution",
    "score_distribution",
    "score_means",
    "load_overview",
]

_ROUND_COLS = ("item", "round", "component", "aspect", "score", "max_score", "stop", "best")


def table_counts(*bundles: Bundle) -> pd.DataFrame:
    """Return one row per (dataset, table): rows, distinct items and the columns present."""
    rows = []
    for b in bundles:
        for name, df in b.tables().items():
            rows.append({
                "dataset": b.name, "table": name, "rows": len(df),
                "items": int(df["item"].nunique()) if "item" in df else np.nan,
                "columns": ", ".join(map(str, df.columns)),
            })
    return pd.DataFrame(rows)


def label_distribution(
    df: pd.DataFrame, *, by: str | list[str] = "rater", label: str = "label", dropna: bool = False
) -> pd.DataFrame:
    """Return counts and shares of each label per group; NA labels appear as ``"<missing>"`` rows.

    Columns: the ``by`` columns, label, n, n_group (the group's total, the share's denominator), share.
    """
    by = [by] if isinstance(by, str) else list(by)
    work = df[by + [label]].copy()
    work[label] = work[label].astype(object).where(work[label].notna(), "<missing>")
    if dropna:
        work = work[work[label] != "<missing>"]
    counts = work.groupby(by + [label], sort=True).size().rename("n").reset_index()
    counts["n_group"] = counts.groupby(by)["n"].transform("sum")
    counts["share"] = counts["n"] / counts["n_group"]
    return counts


def score_distribution(judgments: pd.DataFrame, *, by: str | list[str] = "criterion") -> pd.DataFrame:
    """Return n, n_missing, mean, sd, median, min and max of ``score`` per group (a description, no CIs)."""
    by = [by] if isinstance(by, str) else list(by)
    g = judgments.groupby(by)["score"]
    return pd.DataFrame({
        "n": g.count(), "n_missing": g.apply(lambda s: int(s.isna().sum())),
        "mean": g.mean(), "sd": g.std(), "median": g.median(), "min": g.min(), "max": g.max(),
    }).reset_index()


def score_means(judgments: pd.DataFrame, items: pd.DataFrame, *, by: str = "generator",
                criterion: str = "criterion", n_boot: int = 1000, seed: int = 0,
                confidence: float = 0.95) -> pd.DataFrame:
    """Return the mean ``score`` per (``by`` of the item, criterion) with a percentile-bootstrap CI.

    Scored rows are resampled ``n_boot`` times with a fresh ``default_rng(seed)`` per group (seaborn's
    ``errorbar=("ci", 95)``, so the numbers match a seaborn point plot). ``n_items`` counts the scored
    rows, ``n_failed`` the rows with an NA score.
    """
    data = judgments.merge(items[["item", by]], on="item")
    rows = []
    for (g, c), d in data.groupby([by, criterion], sort=True):
        s = d["score"].dropna().to_numpy(float)
        reps = bootstrap_means(s, n_boot, np.random.default_rng(seed))
        rows.append(result_row(s.mean() if len(s) else np.nan, percentile_interval(reps, confidence=confidence),
                               f"percentile bootstrap over scored rows (B={n_boot})", n_items=len(s),
                               n_failed=int(d["score"].isna().sum()), **{by: g, criterion: c}))
    return result_frame(rows, keys=[by, criterion])


def _pandalm_tables() -> tuple[list[Bundle], dict[str, pd.DataFrame]]:
    from medeval_kit import datasets as ds

    b = ds.load_pandalm()
    parse = b.judgments.groupby(["judge", "parse_status"]).size().rename("n").reset_index()
    return [b], {"labels": label_distribution(b.annotations, by=["rater_kind", "rater"]), "parse_status": parse}


def _medqg_tables() -> tuple[list[Bundle], dict[str, pd.DataFrame]]:
    from medeval_kit import datasets as ds

    t19, q = ds.load_medqg_table19(), ds.load_medqg_questions()
    bundles = [t19, q]
    tables = {"labels": label_distribution(t19.annotations, by=["rater_kind", "rater"]),
              "answer_letters": letter_balance(q.items, options="options", by="kp_source")}
    r = ds.load_medqg_rounds()
    bundles.append(Bundle(name="medqg_rounds", rounds=r[list(_ROUND_COLS)], source="data/medqg"))
    per_item = r.groupby(["source", "item"])["round"].max().rename("n_rounds").reset_index()
    tables["rounds_per_item"] = per_item.groupby(["source", "n_rounds"]).size().rename("n_items").reset_index()
    return bundles, tables


def _grounded_tables() -> tuple[list[Bundle], dict[str, pd.DataFrame]]:
    from medeval_kit import datasets as ds

    b = ds.load_grounded_synth()
    merged = b.judgments.merge(b.items[["item", "generator", "format"]], on="item")
    mm = ds.load_mmlu_pro_replication()
    return [b], {
        "scores": score_distribution(b.judgments, by="criterion"),
        "scores_by_generator": score_distribution(merged, by=["generator", "format", "criterion"]),
        "answer_letters": letter_balance(b.items[b.items["format"] == "mcq"], options="choices", by="generator"),
        "mmlu_pro_replication": mm.groupby("novel")["eval_accuracy"].agg(["count", "mean", "std"]).reset_index(),
    }


_OVERVIEWS = {"pandalm": _pandalm_tables, "medqg": _medqg_tables, "grounded_synth": _grounded_tables}


def load_overview(dataset: str) -> tuple[list[Bundle], dict[str, pd.DataFrame]]:
    """Return the bundles of a bundled dataset and its overview tables by name.

    ``dataset`` is ``"pandalm"``, ``"medqg"`` or ``"grounded_synth"``.
    """
    if dataset not in _OVERVIEWS:
        raise ValueError(f"unknown dataset {dataset!r}; choose one of {list(_OVERVIEWS)}")
    bundles, tables = _OVERVIEWS[dataset]()
    tables["counts"] = table_counts(*bundles)
    return bundles, tables
