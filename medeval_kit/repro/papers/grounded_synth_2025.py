"""Grounded generative evaluations (Majurski & Matuszek, 2025): Spearman identities and the MMLU-Pro replication.

Every printed Spearman value is checked through the no-ties identity with an integer sum of squared
rank differences (:func:`medeval_kit.generate.grounded.spearman_identity_check`); the Sec. 5.9
MMLU-Pro replication (Pearson 0.86, Spearman 0.91) against the plausible aggregations of the bundled
results file (:func:`medeval_kit.generate.grounded.mmlu_pro_aggregations`).
"""

from __future__ import annotations

import pandas as pd

from medeval_kit.repro.published import Published, load_paper, rounds_to

PAPER = "grounded-synth-2025"
TABLE3 = ("table3.spearman.ensemble-mc", "table3.spearman.ensemble-oe", "table3.spearman.llama-4-maverick-mc",
          "table3.spearman.llama-3.2-3b-instruct-mc", "table3.spearman.gpt-4.1-mini-mc",
          "table3.spearman.gemma-3-27b-it-oe")


def paper():
    return load_paper(PAPER)


def _identity(ids) -> pd.DataFrame:
    from medeval_kit.generate.grounded import spearman_identity_check

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


def mmlu_pro_aggregations(mmlu_results: pd.DataFrame | None = None) -> pd.DataFrame:
    """The MMLU-Pro aggregations beside the printed 0.86 / 0.91, with whether each rounds to it.

    ``mmlu_results``: the replication's results table (default: the bundled one).
    """
    from medeval_kit.generate.grounded import mmlu_pro_aggregations as aggregations

    p = paper()
    printed = {stat: p.number(nid) for nid, stat in p.input("mmlu_pro").items()}
    agg = aggregations(mmlu_results)
    agg["published"] = [float(printed[s].value) for s in agg["statistic"]]
    agg["rounds_to_published"] = [rounds_to(printed[s].value, v) for s, v in zip(agg["statistic"], agg["value"])]
    return agg


def rows(mmlu_results: pd.DataFrame | None = None) -> list[Published]:
    """The Spearman identities, the MMLU-Pro replication and the data notes' recomputation."""
    p = paper()
    out = []
    for r in _identity(list(p.input("spearman_n"))).itertuples():
        inferred = "" if r.number in TABLE3 else "; the evaluated-model count n is inferred, not stated"
        out.append(p.check(r.number, r.rho_identity,
                           note=f"n = {r.n}, sum d^2 = {r.sum_d2}: identity 1-6*sum_d2/(n(n^2-1)); scipy on "
                                f"constructed ranks gives {r.rho_scipy:.4f}{inferred}"))
    agg = mmlu_pro_aggregations(mmlu_results)
    v = agg.set_index(["subset", "aggregation", "statistic"])["value"]
    pub = {stat: p.value(nid) for nid, stat in p.input("mmlu_pro").items()}
    combos = [("pairs", "macro")] + [(a, a) for a in ("macro", "micro", "subject_mean", "subject_median")]
    tries = []
    for sub in agg["subset"].unique():
        for pa, sa in combos:
            pv, sv = v[(sub, pa, "pearson")], v[(sub, sa, "spearman")]
            tries.append((max(abs(pv - pub["pearson"]), abs(sv - pub["spearman"])), sub, pa, sa, pv, sv))
    tries.sort(key=lambda t: t[0])
    _, sub, pa, sa, pv, sv = tries[0]
    ids = {stat: nid for nid, stat in p.input("mmlu_pro").items()}
    joint = rounds_to(p.number(ids["pearson"]).value, pv) and rounds_to(p.number(ids["spearman"]).value, sv)
    note = (f"closest JOINT match of {len(tries)} (subset x Pearson/Spearman aggregation) tries: Pearson on {pa}, "
            f"Spearman on {sa}, subset '{sub}'; all values in mmlu_pro_aggregations.csv")
    why = ""
    if not joint:
        why = ("no tried aggregation/subset gives both 0.86 and 0.91 - the bundled results file (2026 snapshot, "
               "16 eval models incl. gpt-oss/Qwen3 not in the paper's Table 2) is likely not the paper's run")
        single = agg[agg["rounds_to_published"]]
        if len(single):
            hits = "; ".join(f"{r.statistic} {r.aggregation} '{r.subset}' = {r.value:.3f}" for r in single.itertuples())
            why += f"; single-statistic coincidences (other statistic off): {hits}"
    out.append(p.check(ids["pearson"], pv, why=why, note=note))
    out.append(p.check(ids["spearman"], sv, why=why, note=note))
    base = agg[agg["subset"] == "all 16 evaluated models"].set_index(["aggregation", "statistic"])["value"]
    for nid, rec in p.input("mmlu_pro_notes").items():
        out.append(p.check(nid, base[(rec["aggregation"], rec["statistic"])]))
    return out
