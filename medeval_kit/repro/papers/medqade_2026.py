"""MedQADE (Philipp et al., 2026): printed arithmetic, Fig. 8's bias numbers and the 80:20 sample."""

from __future__ import annotations

import math

import pandas as pd

from medeval_kit.repro.published import Published, load_paper

PAPER = "medqade-2026"

FIG8_SIMULATION = {
    "models": ("gemini-2.5-flash", "gpt-5-nano", "gemma-3-27b", "gemma-3-4b", "qwen3-4b"),
    "raters": ("gemini-2.5-flash", "gpt-5-nano", "gemma-3-27b", "gemma-3-4b", "qwen3-4b",
               "gemini-3-flash", "gemini-2.5-flash-lite", "gpt-5.4-nano", "gpt-5.4-mini"),
    "effects": {("gemma-3-4b", "gemma-3-4b"): 0.16, ("qwen3-4b", "qwen3-4b"): -0.04,
                ("gemma-3-4b", "gemma-3-27b"): 0.115},
}
"""MedQADE-shaped settings of :func:`medeval_kit.bias.simulate_self_preference`: the paper's students and
annotators, and planted effects with Fig. 8's signs (gemma-3-4b self +0.16, qwen3-4b self -0.04,
gemma-3-4b -> gemma-3-27b +0.115)."""


def printed_rows() -> list[Published]:
    """PABAK = 2 PA - 1, the 36 rater pairs, the 256 ensembles, Fig. 6's delta kappa and the ceiling."""
    p = load_paper(PAPER)
    rows = [p.check("fig6.pabak-ceiling", 2 * p.input("ceiling_pa") - 1),
            p.check("fig2.pabak-max", 2 * p.input("max_pa") - 1),
            p.check("sec3.1.rater-pairs", float(math.comb(p.input("n_physicians"), 2))),
            p.check("sec3.3.ensembles", float(sum(math.comb(p.input("n_annotators"), k)
                                                  for k in range(1, p.input("n_annotators") + 1, 2))))]
    ceiling = p.value("sec3.3.kappa-ceiling")
    for name, rec in p.input("llm_kappa").items():
        rows.append(p.check(rec["delta"], round(rec["kappa"] - ceiling, 3),
                            why="the paper subtracts unrounded values", note=f"{name}: {rec['kappa']} - {ceiling}"))
    rows.append(p.check("sec3.3.kappa-ceiling"))
    return rows


def self_preference_rows() -> list[Published]:
    """Fig. 8's Delta_self / Delta_family: not recoverable (per-slot LLM labels are not public)."""
    p = load_paper(PAPER)
    return [p.check(nid) for nid in p.numbers if nid.startswith("fig8.")]


def sampling_rows(seed: int = 0) -> list[Published]:
    """The 80:20 stratified sample of 3,800 items, drawn with the generic stratified sampler."""
    from medeval_kit.generate.cloze import stratified_sample

    p = load_paper(PAPER)
    s = p.input("sample")
    pop = pd.DataFrame({"item": range(sum(s["population"].values())),
                        "stratum": ["nomatch"] * s["population"]["nomatch"] + ["match"] * s["population"]["match"]})
    frac = {"nomatch": s["no_match"], "match": 1 - s["no_match"]}
    sizes = stratified_sample(pop, n=s["n"], frac=frac, seed=seed)["stratum"].value_counts()
    return [p.check("sec2.sample.no-match", int(sizes["nomatch"])),
            p.check("sec2.sample.match", int(sizes["match"]))]
