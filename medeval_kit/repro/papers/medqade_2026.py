"""MedQADE (Philipp et al., 2026): printed arithmetic, Fig. 8's bias numbers and the 80:20 sample."""

from __future__ import annotations

import math
from fractions import Fraction

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


def _interval(value: float, printed_decimals: int = 3) -> tuple[Fraction, Fraction]:
    """The values that round to a number printed at ``printed_decimals`` decimals (exact fractions)."""
    half = Fraction(1, 2 * 10 ** printed_decimals)
    v = Fraction(str(value))
    return v - half, v + half


def printed_rows() -> list[Published]:
    """PABAK = 2 PA - 1, the 36 rater pairs, the 256 ensembles, Fig. 6's delta kappa and the ceiling."""
    p = load_paper(PAPER)
    pabak = [float(2 * Fraction(str(pa)) - 1) for pa in p.input("max_pa")]
    rows = [p.check("fig6.pabak-ceiling", 2 * p.input("ceiling_pa") - 1, basis="consistent",
                    how=f"PABAK = 2 x PA - 1 with the printed PA {p.input('ceiling_pa')} of the same ceiling"),
            p.check("fig2.pabak-max", tuple(pabak), basis="consistent",
                    how=f"2 x PA - 1 over the printed PA of about {' to '.join(f'{pa:.0%}' for pa in p.input('max_pa'))} "
                        f"gives {pabak[0]:.2f} to {pabak[1]:.2f}; the paper does not say which student's PABAK is "
                        "0.78 or give its exact PA"),
            p.check("sec3.1.rater-pairs", float(math.comb(p.input("n_physicians"), 2)), basis="consistent",
                    how=f"the pairs among the printed {p.input('n_physicians')} physicians, "
                        f"{p.input('n_physicians')} choose 2"),
            p.check("sec3.3.ensembles", float(sum(math.comb(p.input("n_annotators"), k)
                                                  for k in range(1, p.input("n_annotators") + 1, 2))),
                    basis="consistent", how=f"the groups of odd size among the printed {p.input('n_annotators')} "
                                            "LLM annotators, counted size by size")]
    ceiling = p.value("sec3.3.kappa-ceiling")
    c_lo, c_hi = _interval(ceiling)
    deltas, fits = [], []
    for name, rec in p.input("llm_kappa").items():
        k_lo, k_hi = _interval(rec["kappa"])
        d_lo, d_hi = _interval(p.value(rec["delta"]))
        fits.append((max(c_lo, k_lo - d_hi), min(c_hi, k_hi - d_lo)))  # ceilings that allow this printed delta
        deltas.append((rec["delta"], name, rec["kappa"], (float(k_lo - c_hi), float(k_hi - c_lo))))
    lo, hi = max(f[0] for f in fits), min(f[1] for f in fits)
    together = (f"all three printed differences fit one ceiling between {float(lo):.4f} and {float(hi):.4f}"
                if lo <= hi else "no single ceiling fits all three printed differences")
    for nid, name, kappa, interval in deltas:
        point = kappa - ceiling
        rows.append(p.check(nid, interval, basis="consistent",
                            how=f"{name}'s printed kappa {kappa} minus the printed ceiling {ceiling} is {point:.3f}, "
                                "but both are rounded to three decimals, so the difference of the unrounded values "
                                "can be up to 0.001 away",
                            note=together))
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
    how = (f"{s['no_match']:.0%} : {1 - s['no_match']:.0%} of the printed {s['n']:,} items, drawn with our stratified "
           "sampler from an illustrative population")
    return [p.check("sec2.sample.no-match", int(sizes["nomatch"]), basis="consistent", how=how),
            p.check("sec2.sample.match", int(sizes["match"]), basis="consistent", how=how)]
