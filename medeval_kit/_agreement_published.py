"""Published agreement numbers of the seed papers next to ours, and the agreement study inputs.

:func:`published_numbers` returns a tidy table (paper, source, quantity, published, ours,
status, note) with status ``reproduced``, ``differs`` or ``not recoverable``. Printed arithmetic
(P/C -> kappa, totals identities, PABAK = 2 PA - 1, counts of pairs and ensembles) is checked
from the numbers the papers print; the data sets are re-analysed with :mod:`medeval_kit.agreement`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import pandas as pd

PANDALM = "PandaLM (Wang et al., ICLR 2024)"
MCQG = "MCQG-SRefine (seed 000, arXiv 2410.13191)"
LONGFORM = "Long-form medical QA benchmark (seed 001)"
MEDQADE = "MedQADE (seed 002, arXiv 2607.01103)"

COLUMNS = ["paper", "source", "quantity", "published", "ours", "status", "note"]

# --- printed numbers --------------------------------------------------------------------------

LONGFORM_TABLE3 = pd.DataFrame(
    # criterion, batch, P (observed), C (chance) -- Table 3 of seed 001, N = 100 per batch.
    [(c, b + 1, p, ch) for c, ps in {
        "difficulty": [(0.57, 0.42), (0.50, 0.39), (0.40, 0.34), (0.37, 0.33)],
        "correctness": [(0.45, 0.25), (0.36, 0.31), (0.37, 0.30), (0.49, 0.42)],
        "helpfulness": [(0.47, 0.27), (0.42, 0.33), (0.23, 0.19), (0.20, 0.19)],
        "harmfulness": [(0.51, 0.38), (0.50, 0.44), (0.77, 0.73), (0.81, 0.82)],
        "reasoning": [(0.40, 0.27), (0.36, 0.33), (0.17, 0.16), (0.27, 0.27)],
        "efficiency": [(0.32, 0.24), (0.37, 0.31), (0.26, 0.25), (0.11, 0.11)],
        "bias": [(0.92, 0.90), (0.95, 0.95), (0.95, 0.95), (0.95, 0.95)],
    }.items() for b, (p, ch) in enumerate(ps)],
    columns=["criterion", "batch", "P", "C"],
)
LONGFORM_TABLE4 = {  # label pair -> counts in batches 1..4 (Table 4 of seed 001)
    "A-B": (29, 35, 42, 32), "A-tie": (115, 82, 196, 209), "B-tie": (47, 114, 24, 32),
    "A-neither": (43, 24, 14, 14), "B-neither": (27, 23, 17, 10), "tie-neither": (32, 26, 32, 20),
}
MCQG_TABLE2 = [  # method, PA, kappa (Table 2 of seed 000, rating judge vs Expert X, n = 40)
    ("w/o aspect filtering", 0.675, 0.226190476), ("PA-based Greedy", 0.725, 0.342301943),
    ("CK-based Greedy", 0.725, 0.423328965), ("PA-based All-Comb", 0.80, 0.505409582),
    ("CK-based All-Comb*", 0.80, 0.538904899),
]
MCQG_TABLE9 = {  # judge -> (No POS Bias share, PA, tau) as printed in Table 9 of seed 000
    "gpt-4": (0.65, 0.6153, 0.2121), "gpt-4o": (0.425, 0.5882, 0.3340), "gpt-3.5-turbo": (0.35, 0.6429, 0.0572),
    "claude-3-haiku": (0.425, 0.4118, -0.0636), "claude-3.5-sonnet": (0.375, 0.4667, 0.1517),
    "claude-3-opus": (0.475, 0.6842, 0.3152),
}
# Two students' preference labels, reconstructed as the only 3x3 tables consistent with the printed
# PA/kappa per arm (Section 3.2 / Table 10 of seed 000): rows Expert 1, columns Expert 2, order
# (gpt4_baseline, mcqg_srefine, tie). Human arm: PA 18/20, kappa 0.75 -> p_e = 0.6; with Expert 1's
# printed marginals (3, 16, 1) the only Expert 2 marginals with p_e = 0.6 are (5, 14, 1).
# Machine arm: PA 17/20, kappa 4/7 -> p_e = 0.65; Expert 1 (4, 16, 0) and Expert 2 (5, 15, 0).
TWO_STUDENTS = {"human": np.array([[3, 0, 0], [2, 14, 0], [0, 0, 1]]),
                "machine": np.array([[3, 1, 0], [2, 14, 0], [0, 0, 0]])}


def _row(paper, source, quantity, published, ours, status=None, note="", tol=None):
    if status is None:
        if ours is None or (isinstance(ours, float) and math.isnan(ours)):
            status = "not recoverable"
        else:
            tol = tol if tol is not None else 10.0 ** -_decimals(published)  # one unit in the last printed digit (rounded or truncated)
            status = "reproduced" if abs(float(ours) - float(published)) <= tol + 1e-12 else "differs"
    return dict(paper=paper, source=source, quantity=quantity, published=published, ours=ours, status=status,
                note=note)


def _decimals(x) -> int:
    s = repr(float(x))
    return len(s.split(".")[1].rstrip("0")) if "." in s and "e" not in s else 0


# --- data-based rows --------------------------------------------------------------------------


def _pandalm_rows(ann: pd.DataFrame, n_boot: int, seed: int) -> list[dict]:
    from medeval_kit import agreement as ag

    rows = []
    humans = ["annotator1", "annotator2", "annotator3"]
    for (a, b), pub in zip(itertools.combinations(humans, 2), (0.85, 0.88, 0.86)):
        r = ag.cohen_kappa(ann, raters=[a, b], n_boot=n_boot, seed=seed)
        rows.append(_row(PANDALM, "README / paper Sec. 4 (human annotation)", f"Cohen's kappa {a} vs {b}", pub,
                         r.estimate, note=f"n = {r.n_items}; 95% CI [{r.ci_low:.3f}, {r.ci_high:.3f}]"))
    mv = ag.majority_vote(ann, raters=humans)
    counts = mv["label"].value_counts()
    for lab, code, pub in (("tie", 0, 105), ("A", 1, 422), ("B", 2, 472)):
        rows.append(_row(PANDALM, "README (test set label distribution)",
                         f"majority label {code} ({lab}) count", pub, float(counts.get(lab, 0)), tol=0,
                         note=f"3-annotator plurality vote; {int((mv['status'] != 'majority').sum())} items without majority"))
    return rows


def _medqg_rows(ann: pd.DataFrame) -> list[dict]:
    from medeval_kit import agreement as ag

    rows = []
    x = ann[ann["rater"] == "expert_x"]["label"].value_counts()
    for lab, pub in (("tie", 4), ("gpt4_baseline", 7), ("mcqg_srefine", 29)):
        rows.append(_row(MCQG, "Figure 3 (Expert X preferences)", f"Expert X count {lab}", pub,
                         float(x.get(lab, 0)), tol=0, note="recounted from Table 19"))
    codes = ann.pivot(index="item", columns="rater", values="code")
    for judge, (share, pa, tau) in MCQG_TABLE9.items():
        valid = codes[judge] != -1
        n_valid = int(valid.sum())
        r_share = n_valid / len(codes)
        note = f"{n_valid}/40 position-consistent in Table 19"
        if abs((1 - r_share) - share) < 1e-9:
            note += "; the printed value equals the INconsistent share"
        rows.append(_row(MCQG, "Table 9 vs Table 19", f"{judge}: share without position bias", share, r_share,
                         note=note))
        sub = ann[ann["rater"].isin([judge, "expert_x"])]
        sub = sub[sub["item"].isin(codes.index[valid])]
        r_pa = ag.percent_agreement(sub, raters=["expert_x", judge], n_boot=0).estimate
        agree = int(round(r_pa * n_valid))
        rows.append(_row(MCQG, "Table 9 vs Table 19", f"{judge}: PA with Expert X on consistent items", pa, r_pa,
                         tol=5e-5, note=f"{agree}/{n_valid} in Table 19 ('inconsistent' dropped)"))
        xv = codes.loc[valid, "expert_x"].astype(float).to_numpy()
        jv = codes.loc[valid, judge].astype(float).to_numpy()
        from scipy.stats import kendalltau

        r_tau = float(kendalltau(xv, jv)[0])
        r_kap = ag.cohen_kappa(sub, raters=["expert_x", judge], n_boot=0).estimate
        rows.append(_row(MCQG, "Table 9 vs Table 19", f"{judge}: tau (caption: Kendall; text: Cohen's kappa)",
                         tau, r_tau, tol=5e-5,
                         note=f"Kendall tau-b on codes 0/1/2 = {r_tau:.4f}; Cohen's kappa = {r_kap:.4f}"))
    g = codes[codes["gpt-4"] != -1]
    pa_g = float((g["gpt-4"] == g["expert_x"]).mean())
    rows.append(_row(MCQG, "Appendix D.2", "gpt-4 comparison-judge PA with Expert X (26 valid items)", 0.538, pa_g,
                     note=f"{int((g['gpt-4'] == g['expert_x']).sum())}/{len(g)} in Table 19; "
                          "Table 9 prints 61.53% instead, which equals D.2's *rating* PA"))
    return rows


# --- printed arithmetic -----------------------------------------------------------------------


def _expand(table: np.ndarray, cats=("gpt4_baseline", "mcqg_srefine", "tie"), prefix="") -> pd.DataFrame:
    rows = []
    n = 0
    for i, j in itertools.product(range(3), range(3)):
        for _ in range(int(table[i, j])):
            rows += [(f"{prefix}{n}", "expert1", cats[i]), (f"{prefix}{n}", "expert2", cats[j])]
            n += 1
    return pd.DataFrame(rows, columns=["item", "rater", "label"])


def printed_arithmetic(n_boot: int = 0, seed: int = 0) -> pd.DataFrame:
    """Checks of the arithmetic the three papers print (no data needed)."""
    from medeval_kit import agreement as ag

    rows = []
    # Long-form benchmark, Table 3: kappa from P and C (not printed; derived), judge-judge identity.
    rows.append(_row(LONGFORM, "Sec. 4 (judge vs judge)", "kappa from P 0.96, C 0.33", 0.94,
                     ag.kappa_from_p_c(0.96, 0.33), note="(P - C)/(1 - C)"))
    t3 = LONGFORM_TABLE3
    pairwise = t3[t3["criterion"] != "difficulty"]
    for b in range(1, 5):
        total = sum(v[b - 1] for v in LONGFORM_TABLE4.values())
        identity = 600 - round(100 * pairwise.loc[pairwise["batch"] == b, "P"].sum())
        rows.append(_row(LONGFORM, "Table 4 vs Table 3", f"batch {b}: disagreements (sum of Table 4 row)",
                         float(total), float(identity), tol=0,
                         note="ours = 600 - 100 x sum of the 6 pairwise-criterion P values of Table 3"))
    # MedQADE
    for pa, pub in ((0.883, 0.766), (0.89, 0.78)):
        rows.append(_row(MEDQADE, "Fig. 6 / Fig. 2 text", f"PABAK = 2 x PA - 1 at PA {pa}", pub, 2 * pa - 1))
    rows.append(_row(MEDQADE, "Sec. 3.1", "rater pairs among 9 physicians", 36.0, float(math.comb(9, 2)), tol=0))
    rows.append(_row(MEDQADE, "Sec. 3.3", "odd-sized majority-vote ensembles of 9 annotators", 256.0,
                     float(sum(math.comb(9, k) for k in range(1, 10, 2))), tol=0, note="9 + 84 + 126 + 36 + 1"))
    for name, k, pub in (("Gemini 3 Flash", 0.694, -0.016), ("Gemini 2.5 Flash-Lite", 0.602, -0.108),
                         ("GPT-5.4 Mini", 0.616, -0.093)):
        rows.append(_row(MEDQADE, "Fig. 6", f"{name}: delta kappa = kappa - ceiling 0.709", pub, round(k - 0.709, 3),
                         tol=0.0005, note="differs by 0.001 when it does: the paper subtracts unrounded values"))
    rows.append(_row(MEDQADE, "Sec. 3.3", "kappa ceiling 0.709 (physician data)", 0.709, None,
                     note="data not released ('upon publication'); the synthetic run shows the design"))
    # MCQG-SRefine: two students, Table 2
    both = pd.concat([_expand(TWO_STUDENTS["human"], prefix="h"), _expand(TWO_STUDENTS["machine"], prefix="m")])
    for arm, df, pa_pub, k_pub in (("overall", both, 0.875, 0.66722),
                                   ("human arm", _expand(TWO_STUDENTS["human"]), 0.90, 0.75),
                                   ("machine arm", _expand(TWO_STUDENTS["machine"]), 0.85, 0.571428)):
        pa = ag.percent_agreement(df, n_boot=0).estimate
        k = ag.cohen_kappa(df, n_boot=n_boot, seed=seed)
        rows.append(_row(MCQG, "Sec. 4.1 / Table 10 caption", f"two students, {arm}: PA", pa_pub, pa))
        ci = "" if math.isnan(k.ci_low) else f"; 95% CI [{k.ci_low:.3f}, {k.ci_high:.3f}]"
        rows.append(_row(MCQG, "Sec. 4.1 / Table 10 caption", f"two students, {arm}: Cohen's kappa", k_pub, k.estimate,
                         note="3-class kappa on the reconstructed 3x3 tables (unique given Table 10 marginals)" + ci))
    for arm, marg in (("human", (5, 14, 1)), ("machine", (5, 15, 0))):
        share = 100 * TWO_STUDENTS[arm].sum(0)[0] / 20
        rows.append(_row(MCQG, "Table 10", f"Expert 2 GPT-4 share ({arm} arm, %)", 20.0, float(share),
                         note=f"the printed kappa forces Expert 2 marginals {marg} (GPT-4, SRefine, tie), i.e. "
                              "25%; that also makes the printed row (which sums to 95%) sum to 100%"))
    for method, pa, kap in MCQG_TABLE2:
        sol = _table2_margins(pa, kap)
        if sol is None:
            rows.append(_row(MCQG, "Table 2", f"{method}: Cohen's kappa", kap, None,
                             note="no integer judge marginals fit with Expert X (4, 7, 29)"))
            continue
        pe, marg = sol
        rows.append(_row(MCQG, "Table 2", f"{method}: Cohen's kappa", kap, float(ag.kappa_from_p_c(pa, pe)),
                         tol=1e-9, note=f"PA {round(pa * 40)}/40; p_e = {Fraction(pe).limit_denominator(1600)} "
                                         f"with Expert X (tie 4, GPT-4 7, SRefine 29) and judge {marg}"))
    return pd.DataFrame(rows, columns=COLUMNS)


def _table2_margins(pa, kappa, expert=(4, 7, 29), n=40):
    """Judge marginals (tie, GPT-4, SRefine) that give exactly the printed kappa, if any."""
    pe = (pa - kappa) / (1 - kappa)
    for t in range(n + 1):
        for g in range(n + 1 - t):
            s = n - t - g
            cand = (expert[0] * t + expert[1] * g + expert[2] * s) / n**2
            if abs(cand - pe) < 5e-9 and abs(float(np.clip(cand, 0, 1)) - pe) < 1:
                return cand, (t, g, s)
    return None


def longform_table3_kappa() -> pd.DataFrame:
    """Table 3 of seed 001 with kappa = (P - C)/(1 - C) (approximate: P, C printed to 2 decimals)."""
    from medeval_kit import agreement as ag

    t = LONGFORM_TABLE3.copy()
    t["kappa"] = ag.kappa_from_p_c(t["P"], t["C"])
    t["landis_koch"] = ag.landis_koch(t["kappa"])
    return t


def published_numbers(dataset: str = "all", annotations: pd.DataFrame | None = None, *, n_boot: int = 0,
                      seed: int = 0) -> pd.DataFrame:
    """Published agreement numbers next to ours: paper, source, quantity, published, ours, status, note.

    ``dataset``: ``"pandalm"``, ``"medqg_table19"``, ``"printed"`` (arithmetic printed in the papers,
    no data) or ``"all"``. ``annotations`` overrides the bundled table of that dataset.
    """
    from medeval_kit.datasets import load_medqg_table19, load_pandalm

    parts = []
    if dataset in ("pandalm", "all"):
        ann = annotations if annotations is not None and dataset == "pandalm" else load_pandalm().annotations
        parts.append(pd.DataFrame(_pandalm_rows(ann, n_boot, seed), columns=COLUMNS))
    if dataset in ("medqg_table19", "all"):
        ann = annotations if annotations is not None and dataset == "medqg_table19" else load_medqg_table19().annotations
        parts.append(pd.DataFrame(_medqg_rows(ann), columns=COLUMNS))
    if dataset in ("printed", "synthetic", "all"):
        parts.append(printed_arithmetic(n_boot, seed))
    if not parts:
        from medeval_kit.agreement import AgreementError

        raise AgreementError(f"unknown dataset {dataset!r}; use pandalm, medqg_table19, printed or all")
    return pd.concat(parts, ignore_index=True)


def papers_for(dataset: str) -> list[str]:
    """Papers whose published numbers a dataset's run checks (``synthetic`` = the printed arithmetic)."""
    return {"pandalm": [PANDALM], "medqg_table19": [MCQG]}.get(dataset, [LONGFORM, MEDQADE, MCQG])


# --- study inputs -----------------------------------------------------------------------------


@dataclass
class StudyInputs:
    """What the agreement notebook needs for one dataset."""

    dataset: str
    annotations: pd.DataFrame
    humans: list
    judges: list
    reference: str | None = None
    abstain: list = field(default_factory=list)
    criterion: str = "overall"
    description: str = ""

    @property
    def raters(self) -> list:
        return list(self.humans) + list(self.judges)

    def for_agreement(self) -> pd.DataFrame:
        """Annotations of the study's raters with abstention labels (e.g. ``inconsistent``) set to NA."""
        a = self.annotations[self.annotations["rater"].isin(self.raters)].copy()
        a["label"] = a["label"].where(~a["label"].isin(self.abstain))
        return a.reset_index(drop=True)

    def label_counts(self) -> pd.DataFrame:
        """Labels per rater, NA and abstentions included: the denominators behind every result."""
        a = self.annotations[self.annotations["rater"].isin(self.raters)]
        t = pd.crosstab(a["rater"], a["label"].fillna("<NA>").astype(str))
        t["n_items"] = t.sum(axis=1)
        t["n_used"] = t["n_items"] - t[[c for c in t.columns if c in list(self.abstain) + ["<NA>"]]].sum(axis=1)
        return t.reindex(self.raters).reset_index()

    def summary(self) -> str:
        a = self.annotations
        return (f"{self.dataset}: {a['item'].nunique()} items, humans {self.humans}, judges {self.judges}, "
                f"reference {self.reference or 'majority of humans'}, abstain {self.abstain}, "
                f"{int(a['label'].isna().sum())} NA labels")


def load_study(dataset: str = "pandalm", *, raters=None, criterion: str | None = None, seed: int = 0) -> StudyInputs:
    """Annotations plus the human/judge roles for the agreement study.

    ``pandalm``: 3 annotators vs GPT-3.5 and PandaLM-7B (GPT-3.5's 25 unparseable outputs stay NA).
    ``medqg_table19``: 6 LLM judges vs Expert X; the position-inconsistent code (-1) is an
    explicit ``inconsistent`` label treated as an abstention. ``synthetic``: a MedQADE-shaped
    design (9 physicians, 9 LLM annotators, binary correct/incorrect, 200 items, planted kappas).
    """
    from medeval_kit.datasets import load_medqg_table19, load_pandalm

    if dataset == "pandalm":
        ann = load_pandalm().annotations
        out = StudyInputs(dataset, ann, ["annotator1", "annotator2", "annotator3"], ["gpt-3.5-turbo", "pandalm-7b"],
                          criterion="overall", description="PandaLM test set (999 pairs), general domain")
    elif dataset == "medqg_table19":
        ann = load_medqg_table19().annotations
        judges = ["gpt-4o", "gpt-4", "gpt-3.5-turbo", "claude-3-opus", "claude-3.5-sonnet", "claude-3-haiku"]
        out = StudyInputs(dataset, ann, ["expert_x"], judges, reference="expert_x", abstain=["inconsistent"],
                          criterion="preference", description="MCQG-SRefine Table 19 (40 cases)")
    elif dataset == "synthetic":
        out = StudyInputs(dataset, _synthetic_medqade(seed), [f"physician{i}" for i in range(1, 10)],
                          [f"llm{i}" for i in range(1, 10)], criterion="correctness",
                          description="synthetic MedQADE-shaped design (9 + 9 raters, 200 items)")
    elif dataset == "sparse_synthetic":
        from medeval_kit.datasets.synthetic import synthetic_panel

        ann = synthetic_panel(n_items=120, n_humans=107, n_judges=2, labels_per_item=(2, 4), kappa=0.5,
                              judge_kappa=[0.5, 0.3], seed=seed).assign(criterion="overall")
        hum = sorted(ann.loc[ann["rater_kind"] == "human", "rater"].unique())
        out = StudyInputs(dataset, ann, hum, ["llm1", "llm2"], criterion="overall",
                          description="synthetic sparse physician panel: 120 items, 107 physicians with 2-4 labels "
                                      "per item, judge llm1 as noisy as the physicians (kappa 0.5), llm2 noisier (0.3)")
    elif dataset == "grounded_synth":
        from medeval_kit.agreement import AgreementError

        raise AgreementError(
            "grounded_synth has no human ratings: its public data holds only LLM-judge scores (1-10) of human-written "
            "and generated PubMedQA questions, so no judge-vs-human design applies; use pandalm, medqg_table19, "
            "sparse_synthetic or your own file (annotations_path)")
    else:
        from medeval_kit.agreement import AgreementError

        raise AgreementError(f"unknown dataset {dataset!r}; use pandalm, medqg_table19, synthetic or sparse_synthetic")
    if raters:
        raters = [r.strip() for r in raters.split(",")] if isinstance(raters, str) else list(raters)
        out.humans = [r for r in out.humans if r in raters]
        out.judges = [r for r in out.judges if r in raters]
    if criterion:
        out.criterion = criterion
    out.annotations = out.annotations[out.annotations["criterion"] == out.criterion].reset_index(drop=True)
    return out


def user_study(
    path,
    *,
    item: str = "item",
    rater: str = "rater",
    label: str = "label",
    rater_kind: str = "rater_kind",
    humans=None,
    judges=None,
    missing=(),
    normalize_labels: bool = False,
) -> StudyInputs:
    """The user's own annotations file as study inputs; who is human comes from ``humans`` or ``rater_kind``."""
    from medeval_kit._agreement_io import read_checked
    from medeval_kit._panel import resolve_panel

    ann, notes = read_checked(path, item=item, rater=rater, label=label, rater_kind=rater_kind, missing=missing,
                              normalize_labels=normalize_labels)
    split = (lambda v: [x.strip() for x in v.split(",") if x.strip()] if isinstance(v, str) else v)  # noqa: E731
    hum, jud = resolve_panel(ann, split(humans) or None, split(judges) or None, min_humans=1, source=str(path))
    out = StudyInputs(str(path), ann.assign(criterion="overall"), hum, jud, criterion="overall",
                      description=f"your file {path}" + (f" ({'; '.join(notes)})" if notes else ""))
    return out


def _synthetic_medqade(seed: int = 0) -> pd.DataFrame:
    """9 physicians (pairwise kappa 0.6) and 9 LLMs of falling quality on 200 binary items.

    Each rater copies the item's true label with probability sqrt(q) (q = 0.6 for physicians,
    0.55 down to 0.05 for the LLMs); otherwise physicians guess independently, while LLMs mostly
    share one guess per item (correlated errors, so voting cannot average them away).
    """
    rng = np.random.default_rng(seed)
    n = 200
    truth = rng.random(n) < 0.55
    shared = rng.random(n) < 0.55
    frames = []
    for kind, name, q in ([("human", f"physician{i}", 0.6) for i in range(1, 10)]
                          + [("llm", f"llm{i}", k) for i, k in enumerate(np.linspace(0.55, 0.05, 9), 1)]):
        copy = rng.random(n) < math.sqrt(q)
        noise = rng.random(n) < 0.55
        if kind == "llm":
            noise = np.where(rng.random(n) < 0.8, shared, noise)
        lab = np.where(np.where(copy, truth, noise), "correct", "incorrect")
        frames.append(pd.DataFrame({"item": [f"s{j:03d}" for j in range(n)], "rater": name, "rater_kind": kind,
                                    "criterion": "correctness", "label": lab}))
    return pd.concat(frames, ignore_index=True)
