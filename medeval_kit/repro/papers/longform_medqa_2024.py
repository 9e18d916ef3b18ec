"""The long-form medical QA benchmark (Hosseini et al., 2024): printed arithmetic and Table 6."""

from __future__ import annotations

import pandas as pd

from medeval_kit.repro.published import Published, load_paper

PAPER = "longform-medqa-2024"


def table3() -> pd.DataFrame:
    """Table 3 as printed: criterion, batch, P (observed), C (chance); N = 100 per batch."""
    t3 = load_paper(PAPER).input("table3")
    return pd.DataFrame([(c, b + 1, pc[0], pc[1]) for c, batches in t3.items() for b, pc in enumerate(batches)],
                        columns=["criterion", "batch", "P", "C"])


def table3_kappa() -> pd.DataFrame:
    """Table 3 with kappa = (P - C)/(1 - C) (approximate: P and C are printed to 2 decimals)."""
    from medeval_kit import agreement as ag

    t = table3()
    t["kappa"] = ag.kappa_from_p_c(t["P"], t["C"])
    t["landis_koch"] = ag.landis_koch(t["kappa"])
    return t


def printed_rows() -> list[Published]:
    """Judge-vs-judge kappa from its printed P and C, and Table 4's row sums against Table 3."""
    from medeval_kit import agreement as ag

    p = load_paper(PAPER)
    jj = p.input("judge_judge")
    rows = [p.check("judge-judge.kappa", ag.kappa_from_p_c(jj["P"], jj["C"]), note="(P - C)/(1 - C)")]
    t3 = table3()
    pairwise = t3[t3["criterion"] != "difficulty"]
    t4 = p.input("table4")
    for b in range(1, 5):
        total = sum(v[b - 1] for v in t4.values())
        identity = 600 - round(100 * pairwise.loc[pairwise["batch"] == b, "P"].sum())
        if p.value(f"table4.batch{b}.total") != total:
            raise ValueError(f"{p.path}: table4.batch{b}.total is not the sum of inputs.table4 (batch {b})")
        rows.append(p.check(f"table4.batch{b}.total", float(identity),
                            note="ours = 600 - 100 x sum of the 6 pairwise-criterion P values of Table 3"))
    return rows


def position_rows() -> list[Published]:
    """Table 6's ab-vs-ba flips and the repeat inconsistency: not recoverable (no per-call outputs)."""
    p = load_paper(PAPER)
    return [p.check(nid) for nid in p.numbers if nid.startswith(("table6.", "text.repeat-inconsistency."))]


def cochran_rows() -> list[Published]:
    """Sec. 3's query-screen sample: Cochran's n0 and the finite-population n for N = 2,698."""
    from medeval_kit.generate.longform import cochran_sample_size

    p = load_paper(PAPER)
    c = cochran_sample_size(p.input("cochran_population"))
    return [p.check("sec3.cochran.n0", c["n0"], note="z = 1.95996"),
            p.check("sec3.cochran.n", c["n"], note=f"exact n = {c['n_exact']:.2f}, rounded up")]
