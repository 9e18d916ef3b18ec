"""The published numbers the generation pipelines check, with our recomputation and a status."""

from __future__ import annotations

import pandas as pd

__all__ = ["published_numbers"]

_COLS = ["paper", "source", "quantity", "published", "ours", "status", "note"]


def _status(published: float, ours: float, decimals: int) -> str:
    if ours is None or pd.isna(ours):
        return "not recoverable"
    return "reproduced" if round(float(ours), decimals) == round(float(published), decimals) else "differs"


def published_numbers(*, mmlu: pd.DataFrame | None = None) -> pd.DataFrame:
    """Return the published-numbers table (paper, source, quantity, published, ours, status, note).

    Covers: seed 004 Spearman identity (n = 13, sum d^2 = 34 -> 0.9066) and the other Table 3
    entries checked; the MMLU-Pro replication's Pearson 0.86 / Spearman 0.91 (best matching
    aggregation reported, with what differs); the bundled data notes (pairs Pearson 0.780,
    per-model Pearson 0.904 / Spearman 0.826); seed 001 Cochran n0 and n = 337 for N = 2,698;
    seed 002 80:20 sizes for 3,800 items.
    """
    from medeval_kit.generate.cloze import stratified_sample
    from medeval_kit.generate.grounded import mmlu_pro_aggregations, spearman_identity_check
    from medeval_kit.generate.longform import cochran_sample_size

    rows = []
    for _, r in spearman_identity_check().iterrows():
        rows.append(["seed-004 grounded", "Table 3", f"Spearman {r.quantity} (n=13, sum d^2={r.sum_d2})",
                     r.published, r.rho_identity, _status(r.published, r.rho_identity, 4),
                     f"identity 1-6*sum_d2/(n(n^2-1)); scipy on constructed ranks gives {r.rho_scipy:.4f}"])
    for src, vals, n in (("Fig. 14b", {"gpt-4.1-mini MC (caption)": 0.742}, 13),
                         ("Table 4 / Sec. 5.8", {"Ensemble MC (L4M)": 0.9679, "case-study MCQ": 0.911}, 15),
                         ("Table 4 / Sec. 5.8", {"Ensemble OE (L4M)": 0.9209, "case-study OE": 0.969}, 14)):
        for _, r in spearman_identity_check(vals, n=n).iterrows():
            dec = len(str(r.published).split(".")[1])
            rows.append(["seed-004 grounded", src, f"Spearman {r.quantity} (n={n}, sum d^2={r.sum_d2})",
                         r.published, r.rho_identity, _status(r.published, r.rho_identity, dec),
                         "identity with an even integer sum d^2 - the evaluated-model count n is inferred, not stated"])
    agg = mmlu_pro_aggregations(mmlu)
    v = agg.set_index(["subset", "aggregation", "statistic"])["value"]
    combos = [("pairs", "macro")] + [(a, a) for a in ("macro", "micro", "subject_mean", "subject_median")]
    tries = []
    for sub in agg["subset"].unique():
        for pa, sa in combos:
            pv, sv = v[(sub, pa, "pearson")], v[(sub, sa, "spearman")]
            tries.append((max(abs(pv - 0.86), abs(sv - 0.91)), sub, pa, sa, pv, sv))
    tries.sort(key=lambda t: t[0])
    gap, sub, pa, sa, pv, sv = tries[0]
    joint = round(pv, 2) == 0.86 and round(sv, 2) == 0.91
    single = agg[agg["rounds_to_published"]]
    note = (f"closest JOINT match of {len(tries)} (subset x Pearson/Spearman aggregation) tries: Pearson on {pa}, "
            f"Spearman on {sa}, subset '{sub}'; all values in mmlu_pro_aggregations.csv")
    if not joint:
        note += ("; no tried aggregation/subset gives both 0.86 and 0.91 - the bundled results file (2026 snapshot, "
                 "16 eval models incl. gpt-oss/Qwen3 not in the paper's Table 2) is likely not the paper's run")
        if len(single):
            hits = "; ".join(f"{r.statistic} {r.aggregation} '{r.subset}' = {r.value:.3f}" for r in single.itertuples())
            note += f"; single-statistic coincidences (other statistic off): {hits}"
    for stat, pub, ours in (("pearson", 0.86, pv), ("spearman", 0.91, sv)):
        rows.append(["seed-004 grounded", "Sec. 5.9 MMLU-Pro replication", f"{stat.title()} novel vs original",
                     pub, ours, "reproduced" if joint else "differs", note])
    base = agg[agg["subset"] == "all 16 evaluated models"].set_index(["aggregation", "statistic"])["value"]
    for (ag, st), pub in ((("pairs", "pearson"), 0.780), (("macro", "pearson"), 0.904), (("macro", "spearman"), 0.826)):
        rows.append(["seed-004 grounded", "data/grounded_synth/SOURCE.md", f"MMLU-Pro {ag} {st} (16 models)",
                     pub, base[(ag, st)], _status(pub, base[(ag, st)], 3), "the data notes' naive recomputation"])
    c = cochran_sample_size(2698)
    rows.append(["seed-001 longform", "Sec. 3 query screen", "Cochran n0 (95%, e=0.05, p=0.5)", 384.1, c["n0"],
                 _status(384.1, c["n0"], 1), "z = 1.95996"])
    rows.append(["seed-001 longform", "Sec. 3 query screen", "Cochran sample size for N=2,698", 337, c["n"],
                 _status(337, c["n"], 0), f"exact n = {c['n_exact']:.2f}, rounded up"])
    pop = pd.DataFrame({"item": range(26598), "stratum": ["nomatch"] * 20000 + ["match"] * 6598})
    s = stratified_sample(pop, n=3800, seed=0)
    sizes = s["stratum"].value_counts()
    rows.append(["seed-002 medqade", "Sec. 2 sampling", "no-match items in the 80:20 sample of 3,800", 3040,
                 int(sizes["nomatch"]), _status(3040, sizes["nomatch"], 0),
                 "implied by 80% of 3,800 (stratum sizes of the population are illustrative)"])
    rows.append(["seed-002 medqade", "Sec. 2 sampling", "match items in the 80:20 sample of 3,800", 760,
                 int(sizes["match"]), _status(760, sizes["match"], 0), "implied by 20% of 3,800"])
    return pd.DataFrame(rows, columns=_COLS)
