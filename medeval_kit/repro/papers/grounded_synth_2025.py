"""Grounded generative evaluations (Majurski & Matuszek, 2025): Spearman identities and the MMLU-Pro replication.

Every printed Spearman value is checked through the no-ties identity with an integer sum of squared
rank differences (:func:`medeval_kit.generate.spearman_identity_check`): consistent, since the per-model
accuracies behind them are not bundled. The Sec. 5.9 MMLU-Pro replication (Pearson 0.86, Spearman 0.91)
is not recoverable: the public results file is a different run, with a different set of models. The plausible
aggregations of that file are still tabulated (:func:`mmlu_pro_aggregations`) for the notebook.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from medeval_kit.repro.published import Published, load_paper, rounds_to
from medeval_kit.results import result_frame, result_row

PAPER = "grounded-synth-2025"
TABLE3 = ("table3.spearman.ensemble-mc", "table3.spearman.ensemble-oe", "table3.spearman.llama-4-maverick-mc",
          "table3.spearman.llama-3.2-3b-instruct-mc", "table3.spearman.gpt-4.1-mini-mc",
          "table3.spearman.gemma-3-27b-it-oe")


#: models of the bundled replication that the paper's Table 2 does not list (evaluated later)
LATER_MODELS = {"gpt-oss": ["openai/gpt-oss-120b", "openai/gpt-oss-20b"],
                "qwen3": ["Qwen/Qwen3-1.7B", "Qwen/Qwen3-4B-Instruct-2507"], "gemma-3-1b": ["google/gemma-3-1b-it"]}
CORRELATIONS = (("pearson", sps.pearsonr), ("spearman", sps.spearmanr))


def paper():
    """The paper's data file."""
    return load_paper(PAPER)


def _identity(ids) -> pd.DataFrame:
    from medeval_kit.generate import spearman_identity_check

    p = paper()
    n_of = p.input("spearman_n")
    parts = []
    for n in sorted({n_of[i] for i in ids}):
        group = [i for i in ids if n_of[i] == n]
        chk = spearman_identity_check({i: p.value(i) for i in group}, n=n)
        parts.append(chk.assign(number=group))
    out = pd.concat(parts, ignore_index=True).set_index("number").loc[list(ids)].reset_index()
    return out


def spearman_identity() -> pd.DataFrame:
    """Table 3's Spearman values: the integer sum d^2 (n = 13) behind each, and whether it gives the printed value."""
    p = paper()
    t = _identity(TABLE3)
    t["quantity"] = [p.number(i).quantity.removeprefix("Spearman ") for i in t["number"]]
    t["matches_4dp"] = [rounds_to(p.number(i).value, r) for i, r in zip(t["number"], t["rho_identity"])]
    return t.rename(columns={"rho": "published"})[["quantity", "published", "n", "sum_d2", "sum_d2_even",
                                                   "rho_identity", "rho_scipy", "matches_4dp"]]


def model_subsets(models) -> dict[str, list[str]]:
    """The model subsets tried: all evaluated models, the paper's Table 2 models, and leave-outs of the later ones."""
    allm = sorted(models)
    later = LATER_MODELS
    return {"all 16 evaluated models": allm,
            "without gpt-oss": [m for m in allm if m not in later["gpt-oss"]],
            "without Qwen3": [m for m in allm if m not in later["qwen3"]],
            "without gemma-3-1b": [m for m in allm if m not in later["gemma-3-1b"]],
            "without gpt-oss and Qwen3": [m for m in allm if m not in later["gpt-oss"] + later["qwen3"]],
            "Table 2 models only (11)": [m for m in allm if m not in sum(later.values(), [])]}


def _wide(t: pd.DataFrame) -> pd.DataFrame:
    """Columns ``novel`` (True/False) renamed to ``orig``/``novel``."""
    t.columns = ["orig" if not c else "novel" for c in t.columns]
    return t


def _points(d: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Original vs novel accuracy per aggregation: every (model, subject) point, per-model macro mean,
    per-model micro (pooled over questions)."""
    w = _wide(d.pivot_table(index=["eval_model", "subject"], columns="novel", values="eval_accuracy").dropna())
    k = d.assign(k=d["eval_accuracy"] * d["n_questions"]).groupby(["eval_model", "novel"])[["k", "n_questions"]].sum()
    return {"pairs": w, "macro": w.groupby("eval_model").mean(),
            "micro": _wide((k["k"] / k["n_questions"]).unstack()).dropna()}


def aggregations(df: pd.DataFrame, subsets: dict | None = None) -> pd.DataFrame:
    """Pearson and Spearman of original vs novel accuracy under every plausible aggregation, per model subset.

    Aggregations: ``pairs`` (every (model, subject) point), ``macro`` (per-model unweighted mean over
    the subjects), ``micro`` (per-model accuracy pooled over questions; n questions per cell recovered
    as (std/stderr)^2 + 1), ``subject_mean`` / ``subject_median`` (of the per-subject correlations).
    One row per (subset, aggregation, statistic): ``estimate``, ``n_items`` (points), ``n_models``.
    """
    df = df.copy()
    df["n_questions"] = ((df["std eval_accuracy"] / df["stderr eval_accuracy"]) ** 2 + 1).round()
    subsets = model_subsets(df["eval_model"].unique()) if subsets is None else subsets
    rows = []
    for sname, models in subsets.items():
        d = df[df["eval_model"].isin(models)]
        key = {"subset": sname, "n_models": len(models)}
        points = _points(d)
        for agg, pts in points.items():
            for stat, fn in CORRELATIONS:
                rows.append(result_row(float(fn(pts["orig"], pts["novel"])[0]), n_items=len(pts), **key,
                                       aggregation=agg, statistic=stat))
        per_subject = points["pairs"].groupby("subject")
        per = {stat: [float(fn(g["orig"], g["novel"])[0]) for _, g in per_subject] for stat, fn in CORRELATIONS}
        for agg, f in (("subject_mean", np.mean), ("subject_median", np.median)):
            for stat, _ in CORRELATIONS:
                rows.append(result_row(float(f(per[stat])), n_items=len(per[stat]), **key, aggregation=agg,
                                       statistic=stat))
    out = result_frame(rows, keys=["subset", "aggregation", "statistic"])
    return out[[c for c in out.columns if c != "n_models"] + ["n_models"]]


def mmlu_pro_aggregations(mmlu_results: pd.DataFrame | None = None) -> pd.DataFrame:
    """The MMLU-Pro aggregations beside the printed 0.86 / 0.91, with whether each rounds to it.

    ``mmlu_results``: the replication's results table (default: the bundled one).
    """
    from medeval_kit.datasets import load_mmlu_pro_replication

    p = paper()
    printed = {stat: p.number(nid) for nid, stat in p.input("mmlu_pro").items()}
    agg = aggregations(load_mmlu_pro_replication() if mmlu_results is None else mmlu_results)
    agg["published"] = [float(printed[s].value) for s in agg["statistic"]]
    agg["rounds_to_published"] = [rounds_to(printed[s].value, v) for s, v in zip(agg["statistic"], agg["estimate"])]
    return agg


def _mmlu_missing(models) -> str:
    """What the public results file lacks to give Sec. 5.9's numbers: the paper's set of evaluated models."""
    table2 = list(paper().input("table2_models"))
    extra = sorted(m.split("/")[-1] for m in set(models) - set(table2))
    missing = sorted(m.split("/")[-1] for m in set(table2) - set(models))
    return (f"the authors' public MMLU-Pro results (a repository snapshot of 25 Feb 2026) are not the paper's run: "
            f"{len(extra)} of the {len(set(models))} models they evaluate ({', '.join(extra)}) are not in the paper's "
            f"Table 2, and {len(missing)} of Table 2's {len(table2)} ({', '.join(missing)}) are missing; the "
            "paper's own results and how it aggregates over models and subjects are not published")


def rows(mmlu_results: pd.DataFrame | None = None) -> list[Published]:
    """The Spearman identities (consistent) and the MMLU-Pro replication (not recoverable)."""
    from medeval_kit.datasets import load_mmlu_pro_replication

    p = paper()
    out = []
    for r in _identity(list(p.input("spearman_n"))).itertuples():
        out.append(p.check(r.number, r.rho_identity, basis="consistent",
                           how=f"a whole sum of squared rank differences of {r.sum_d2} over n = {r.n} models without "
                               f"ties gives 1 - 6 x {r.sum_d2} / ({r.n} x ({r.n}^2 - 1)) = {r.rho_identity:.4f} (n is "
                               "inferred, not stated in the paper); we found no published per-model accuracies "
                               "for these runs, so no data confirm it"))
    df = load_mmlu_pro_replication() if mmlu_results is None else mmlu_results
    why = _mmlu_missing(df["eval_model"].unique())
    agg = mmlu_pro_aggregations(df)
    both = agg.pivot_table(index=["subset", "aggregation"], columns="statistic", values="rounds_to_published")
    n_both = int(both.all(axis=1).sum())
    shared = agg[agg["subset"] == "Table 2 models only (11)"]
    for nid, stat in p.input("mmlu_pro").items():
        v = shared.loc[shared["statistic"] == stat, "estimate"]
        note = (f"on the {shared['n_models'].iloc[0]} models the file shares with Table 2, the ways of aggregating "
                "we tried (every model-subject pair, each model's mean or pooled accuracy, the mean or median of the "
                f"per-subject values) give {stat.capitalize()} {v.min():.2f} to {v.max():.2f}; "
                if len(v) else "")
        printed = " and ".join(p.number(i).value for i in p.input("mmlu_pro"))
        note += (f"{n_both or 'none'} of the {len(both)} combinations of model subset and "
                 f"aggregation tried give{'s' if n_both <= 1 else ''} both {printed}, so we give no value of our own")
        out.append(p.check(nid, None, why=why, note=note))
    return out
