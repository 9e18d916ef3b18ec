"""Describe bundled or user datasets: table sizes, label and score distributions, and one figure each."""

from __future__ import annotations

import numpy as np
import pandas as pd

from medeval_kit.datasets import Bundle

__all__ = [
    "table_counts",
    "label_distribution",
    "score_distribution",
    "answer_letter_balance",
    "load_overview",
    "plot_label_distribution",
    "plot_score_distribution",
]


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
    """Return n, n_missing, mean, sd, median, min and max of ``score`` per group."""
    by = [by] if isinstance(by, str) else list(by)
    g = judgments.groupby(by)["score"]
    out = pd.DataFrame({
        "n": g.count(), "n_missing": g.apply(lambda s: int(s.isna().sum())),
        "mean": g.mean(), "sd": g.std(), "median": g.median(), "min": g.min(), "max": g.max(),
    }).reset_index()
    return out


def answer_letter_balance(items: pd.DataFrame, *, answer: str = "answer", by: str | None = None) -> pd.DataFrame:
    """Return the count and share of each correct-answer letter (per ``by`` group), with a chi-square p-value.

    The p-value tests the letters against a uniform distribution over the letters seen in the group.
    """
    from scipy.stats import chisquare

    groups = [(None, items)] if by is None else list(items.groupby(by))
    rows = []
    for key, g in groups:
        counts = g[answer].value_counts().sort_index()
        p = chisquare(counts.to_numpy()).pvalue if len(counts) > 1 else np.nan
        for letter, n in counts.items():
            rows.append({**({by: key} if by else {}), "letter": letter, "n": int(n),
                         "n_group": int(counts.sum()), "share": n / counts.sum(), "p_uniform": p})
    return pd.DataFrame(rows)


def load_overview(dataset: str) -> tuple[list[Bundle], dict[str, pd.DataFrame]]:
    """Return the bundles of a bundled dataset and its overview tables by name.

    ``dataset`` is ``"pandalm"``, ``"medqg"`` or ``"grounded_synth"``.
    """
    from medeval_kit import datasets as ds

    tables: dict[str, pd.DataFrame] = {}
    if dataset == "pandalm":
        b = ds.load_pandalm()
        bundles = [b]
        tables["labels"] = label_distribution(b.annotations, by=["rater_kind", "rater"])
        tables["parse_status"] = (
            b.judgments.groupby(["judge", "parse_status"]).size().rename("n").reset_index()
        )
    elif dataset == "medqg":
        t19, q = ds.load_medqg_table19(), ds.load_medqg_questions()
        bundles = [t19, q]
        tables["labels"] = label_distribution(t19.annotations, by=["rater_kind", "rater"])
        tables["answer_letters"] = answer_letter_balance(q.items, by="kp_source")
        if hasattr(ds, "load_medqg_rounds"):
            r = ds.load_medqg_rounds()
            bundles.append(Bundle(name="medqg_rounds", rounds=r[list(_ROUND_COLS)], source="data/medqg"))
            per_item = r.groupby(["source", "item"])["round"].max().rename("n_rounds").reset_index()
            tables["rounds_per_item"] = (
                per_item.groupby(["source", "n_rounds"]).size().rename("n_items").reset_index()
            )
    elif dataset == "grounded_synth":
        b = ds.load_grounded_synth()
        bundles = [b]
        tables["scores"] = score_distribution(b.judgments, by="criterion")
        merged = b.judgments.merge(b.items[["item", "generator", "format"]], on="item")
        tables["scores_by_generator"] = score_distribution(merged, by=["generator", "format", "criterion"])
        mcq = b.items[b.items["format"] == "mcq"]
        tables["answer_letters"] = answer_letter_balance(mcq, by="generator")
        mm = ds.load_mmlu_pro_replication()
        tables["mmlu_pro_replication"] = (
            mm.groupby("novel")["eval_accuracy"].agg(["count", "mean", "std"]).reset_index()
        )
    else:
        raise ValueError(f"unknown dataset {dataset!r}; choose one of {list(ds.DATASETS)}")
    tables["counts"] = table_counts(*bundles)
    return bundles, tables


_ROUND_COLS = ("item", "round", "component", "aspect", "score", "max_score", "stop", "best")


def plot_label_distribution(dist: pd.DataFrame, *, group: str = "rater", label: str = "label", title: str = ""):
    """Return a horizontal stacked-bar Figure of label shares per group, with n in each group label."""
    from medeval_kit.viz import figure, paper_style

    with paper_style():
        wide = dist.pivot_table(index=group, columns=label, values="share", fill_value=0.0, sort=False)
        n = dist.groupby(group, sort=False)["n_group"].first()
        fig, ax = figure("single", aspect=0.2 + 0.12 * len(wide))
        left = np.zeros(len(wide))
        for col in wide.columns:
            ax.barh([f"{g} (n={n[g]})" for g in wide.index], wide[col], left=left, label=str(col))
            left += wide[col].to_numpy()
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of labels")
        ax.legend(ncols=min(4, len(wide.columns)), loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
        if title:
            ax.set_title(title, pad=18)
    return fig


def plot_score_distribution(judgments: pd.DataFrame, items: pd.DataFrame, *, by: str = "generator"):
    """Return a Figure of mean judge score (±95% CI) per ``by`` group, one panel per criterion."""
    import seaborn as sns

    from medeval_kit.viz import DOUBLE_COLUMN, paper_style

    data = judgments.merge(items[["item", by]], on="item").dropna(subset=["score"])
    with paper_style():
        order = data.groupby(by)["score"].mean().sort_values().index
        g = sns.catplot(data=data, x="score", y=by, col="criterion", kind="point", order=order,
                        errorbar=("ci", 95), seed=0, linestyle="none", col_wrap=2,
                        height=DOUBLE_COLUMN / 3, aspect=1.3, markersize=3)
        g.set_titles("{col_name}")
        g.set_axis_labels("judge score (1-10)", "")
    return g.figure
