"""Describe bundled or user datasets: table sizes, label and score distributions, mean scores with CIs and
the correct-letter balance of MCQ items (:func:`medeval_kit.bias.letter_balance`). Plots are in
:mod:`medeval_kit.viz.overview`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from medeval_kit.bias import letter_balance
from medeval_kit.columns import Columns, takes_columns
from medeval_kit.datasets import Bundle
from medeval_kit.docstrings import shared_docs
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
    """Return one row per (dataset, table): rows, distinct items and the columns present.

    Parameters
    ----------
    *bundles : Bundle
        Loaded datasets (:mod:`medeval_kit.datasets`).

    Returns
    -------
    DataFrame
        ``dataset, table, rows, items`` (distinct ``item`` values; NaN without an ``item`` column),
        ``columns`` (comma-separated).
    """
    rows = []
    for b in bundles:
        for name, df in b.tables().items():
            rows.append({
                "dataset": b.name, "table": name, "rows": len(df),
                "items": int(df["item"].nunique()) if "item" in df else np.nan,
                "columns": ", ".join(map(str, df.columns)),
            })
    return pd.DataFrame(rows)


@shared_docs
@takes_columns("label", "rater", "rater_kind")
def label_distribution(
    df: pd.DataFrame, *, by: str | list[str] = "rater", dropna: bool = False, columns: Columns = None
) -> pd.DataFrame:
    """Return counts and shares of each label per group; NA labels appear as ``"<missing>"`` rows.

    A description, not an inference: the share has no interval.

    Parameters
    ----------
    df : DataFrame
        A table with a ``label`` column and the ``by`` columns (e.g. ``annotations``).
    by : str or list of str, default "rater"
        The column(s) to group by; a canonical name (``rater``, ``rater_kind``) follows ``columns``.
    dropna : bool, default False
        Drop the ``"<missing>"`` rows (shares are then over the labelled rows).
    {columns}

    Returns
    -------
    DataFrame
        One row per (group, label): the ``by`` columns, ``label``, ``estimate`` (the share), the
        contract columns (``n_items`` = the group's rows, the share's denominator), and ``n``,
        ``n_group`` (= ``n_items``), ``share`` (= ``estimate``).

    Examples
    --------
    >>> from medeval_kit.datasets.synthetic import synthetic_panel
    >>> d = label_distribution(synthetic_panel(n_items=10, seed=1), by="rater_kind")
    >>> d.groupby("rater_kind")["share"].sum().round(6).tolist()
    [1.0, 1.0]
    """
    by = [by] if isinstance(by, str) else list(by)
    work = df[by + ["label"]].copy()
    work["label"] = work["label"].astype(object).where(work["label"].notna(), "<missing>")
    if dropna:
        work = work[work["label"] != "<missing>"]
    counts = work.groupby(by + ["label"], sort=True).size().rename("n").reset_index()
    counts["n_group"] = counts.groupby(by)["n"].transform("sum")
    counts["share"] = counts["n"] / counts["n_group"]
    rows = [result_row(r["share"], n_items=r["n_group"], **{k: r[k] for k in [*by, "label", "n", "n_group", "share"]})
            for r in counts.to_dict("records")]
    return result_frame(rows, keys=[*by, "label"])


@shared_docs
@takes_columns("score", "criterion", "judge")
def score_distribution(judgments: pd.DataFrame, *, by: str | list[str] = "criterion",
                       columns: Columns = None) -> pd.DataFrame:
    """Return n, n_missing, mean, sd, median, min and max of ``score`` per group (a description, no CIs).

    Parameters
    ----------
    judgments : DataFrame
        A table with a numeric ``score`` column and the ``by`` columns.
    by : str or list of str, default "criterion"
        The column(s) to group by; a canonical name (``criterion``, ``judge``) follows ``columns``.
    {columns}

    Returns
    -------
    DataFrame
        One row per group: the ``by`` columns, ``estimate`` (the mean score, no interval), the contract
        columns (``n_items`` = scored rows, ``n_failed`` = NA scores), and ``n``, ``n_missing``, ``mean``,
        ``sd``, ``median``, ``min``, ``max``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"criterion": ["a", "a", "b"], "score": [1.0, 3.0, None]})
    >>> score_distribution(df)[["criterion", "estimate", "n_items", "n_failed"]].values.tolist()
    [['a', 2.0, 2, 0], ['b', nan, 0, 1]]
    """
    by = [by] if isinstance(by, str) else list(by)
    g = judgments.groupby(by)["score"]
    d = pd.DataFrame({
        "n": g.count(), "n_missing": g.apply(lambda s: int(s.isna().sum())),
        "mean": g.mean(), "sd": g.std(), "median": g.median(), "min": g.min(), "max": g.max(),
    }).reset_index()
    rows = [result_row(r["mean"], n_items=r["n"], n_failed=r["n_missing"],
                       note="" if r["n"] else "no scored rows", **r) for r in d.to_dict("records")]
    return result_frame(rows, keys=by)


@shared_docs
@takes_columns("item", "criterion", "score")
def score_means(judgments: pd.DataFrame, items: pd.DataFrame, *, by: str = "generator", n_boot: int = 1000,
                seed: int = 0, confidence: float = 0.95, columns: Columns = None) -> pd.DataFrame:
    """Return the mean ``score`` per (``by`` of the item, criterion) with a percentile-bootstrap CI.

    Scored rows are resampled ``n_boot`` times with a fresh ``default_rng(seed)`` per group (seaborn's
    ``errorbar=("ci", 95)``, so the numbers match a seaborn point plot).

    Parameters
    ----------
    judgments : DataFrame
        ``item, criterion, score`` (one row per score).
    items : DataFrame
        ``item`` and the ``by`` column.
    by : str, default "generator"
        The column of ``items`` to group by.
    {n_boot}
    {seed}
    {confidence}
    {columns}

    Returns
    -------
    DataFrame
        One row per (``by``, ``criterion``): ``estimate`` (the mean score), the percentile interval and
        the contract columns (``n_items`` = scored rows, ``n_failed`` = rows with an NA score).

    Examples
    --------
    >>> import pandas as pd
    >>> j = pd.DataFrame({"item": ["a", "b", "c"], "criterion": "overall", "score": [1.0, 2.0, 3.0]})
    >>> it = pd.DataFrame({"item": ["a", "b", "c"], "generator": ["g", "g", "h"]})
    >>> score_means(j, it, n_boot=50)[["generator", "estimate", "n_items"]].values.tolist()
    [['g', 1.5, 2], ['h', 3.0, 1]]
    """
    criterion = "criterion"
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

    Parameters
    ----------
    dataset : {"pandalm", "medqg", "grounded_synth"}
        The bundled dataset.

    Returns
    -------
    tuple of (list of Bundle, dict of str to DataFrame)
        The loaded bundles, and the overview tables by name (``counts``, ``labels``, ...).

    Raises
    ------
    ValueError
        An unknown dataset.
    """
    if dataset not in _OVERVIEWS:
        raise ValueError(f"unknown dataset {dataset!r}; choose one of {list(_OVERVIEWS)}")
    bundles, tables = _OVERVIEWS[dataset]()
    tables["counts"] = table_counts(*bundles)
    return bundles, tables
