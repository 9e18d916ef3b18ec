"""MCQG-SRefine (MedQG) data: final generated questions and the paper's Table 19 judge matrix."""

from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd

from medeval_kit.datasets._io import data_dir
from medeval_kit.datasets.bundle import Bundle
from medeval_kit.errors import DataFileError, SchemaError

__all__ = ["load_medqg_table19", "load_medqg_questions", "load_srefine_inputs", "TABLE19_CODES"]

TABLE19_CODES = {0: "tie", 1: "gpt4_baseline", 2: "mcqg_srefine", -1: "inconsistent"}
"""Table 19 codes: 1 prefers the GPT-4 baseline, 2 prefers MCQG-SRefine, 0 tie,
-1 = position-inconsistent (the judge's preference changed when the order was swapped)."""

_HUMANS = ("expert_x",)


def load_medqg_table19(path: str | Path | None = None) -> Bundle:
    """Return Table 19 (40 cases x 6 LLM judges + Expert X) as an annotations table.

    ``label`` is one of :data:`TABLE19_CODES`' names; ``code`` keeps the printed integer. The
    ``inconsistent`` label is explicit so analyses choose a policy (drop, or count as tie) on purpose.

    Parameters
    ----------
    path : str or Path, optional
        The CSV; default the bundled ``paper_table19_llm_judge_comparison.csv``.

    Returns
    -------
    Bundle
        ``annotations`` (name ``medqg_table19``).
    """
    p = Path(path) if path else data_dir() / "medqg" / "paper_table19_llm_judge_comparison.csv"
    if not p.exists():
        raise DataFileError(f"{p}: file not found")
    wide = pd.read_csv(p)
    if "case" not in wide.columns:
        raise SchemaError("annotations", "case", [], "missing column", str(p))
    long = wide.melt(id_vars="case", var_name="rater", value_name="code")
    unknown = ~long["code"].isin(list(TABLE19_CODES))
    if unknown.any():
        bad = long[unknown]
        raise SchemaError("annotations", str(bad["rater"].iloc[0]), [int(i) for i in bad["case"]],
                          f"unknown code(s) {sorted(set(bad['code']))}; expected {sorted(TABLE19_CODES)} "
                          f"(rows are case numbers)", str(p))
    long["code"] = long["code"].astype(int)
    annotations = pd.DataFrame({
        "item": long["case"].astype(str),
        "rater": long["rater"].astype(str),
        "rater_kind": long["rater"].map(lambda r: "human" if r in _HUMANS else "llm"),
        "criterion": "preference",
        "label": long["code"].map(TABLE19_CODES),
        "code": long["code"],
    })
    return Bundle(name="medqg_table19", annotations=annotations, source=str(p),
                  notes={"codes": TABLE19_CODES, "transcribed": "from the paper's Appendix Table 19"})


def _parse_options(text: str, path: Path, row: int) -> dict:
    try:
        val = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise SchemaError("items", "options", [row], "options is not a Python/JSON dict literal", str(path)) from None
    if not isinstance(val, dict):
        raise SchemaError("items", "options", [row], f"options is a {type(val).__name__}, expected a dict", str(path))
    return val


def load_medqg_questions(which: str = "both", root: str | Path | None = None) -> Bundle:
    """Return the final USMLE MCQs from expert (373) and/or LLM (385) topic/test-point inputs as items.

    Parameters
    ----------
    which : {"both", "human", "machine"}, default "both"
        Questions from expert (``"human"``) or LLM (``"machine"``) topic/test-point inputs, or both.
    root : str or Path, optional
        The folder of the CSV files; default the bundled ``data/medqg``.

    Returns
    -------
    Bundle
        ``items``: item, dataset, context (clinical note), question, options (dict A-E), answer (letter),
        answer_text, topic, keypoint, kp_source.
    """
    files = {"human": "gpt4_usmle_q_hum_kp.csv", "machine": "gpt4_usmle_q_mach_kp.csv"}
    if which not in ("human", "machine", "both"):
        raise ValueError(f"which must be one of 'human', 'machine', 'both'; not {which!r}")
    base = Path(root) if root else data_dir() / "medqg" / "inputs"
    frames = []
    for kind in (["human", "machine"] if which == "both" else [which]):
        p = base / files[kind]
        if not p.exists():
            raise DataFileError(f"{p}: file not found")
        df = pd.read_csv(p)
        need = ["clinical_note", "keypoint", "topic", "question", "options", "answer", "answer_idx"]
        missing = [c for c in need if c not in df.columns]
        if missing:
            raise SchemaError("items", missing[0], [], f"missing column(s) {missing}", str(p))
        frames.append(pd.DataFrame({
            "item": [f"medqg-{kind}-{i}" for i in range(len(df))],
            "dataset": "medqg",
            "context": df["clinical_note"],
            "question": df["question"],
            "options": [_parse_options(t, p, i) for i, t in enumerate(df["options"])],
            "answer": df["answer_idx"].astype(str),
            "answer_text": df["answer"].astype(str),
            "topic": df["topic"],
            "keypoint": df["keypoint"],
            "kp_source": kind,
        }))
    items = pd.concat(frames, ignore_index=True)
    return Bundle(name="medqg_questions", items=items, source=str(base))


def load_srefine_inputs(which: str = "1-35", n: int | None = None, *, seed: int = 0,
                        root=None) -> pd.DataFrame:
    """Return the bundled human (clinical note, topic, keypoint) triplets as a DataFrame.

    Parameters
    ----------
    which : {"1-35", "36-47", "both"}, default "1-35"
        The file: ``"1-35"`` (JSON lines), ``"36-47"`` (one JSON array) or both.
    n : int, optional
        Keep the first ``n`` rows after a seeded shuffle that keeps one triplet per note first (so a
        small ``n`` covers different cases). The order does not depend on ``n``, so the rows of a
        smaller ``n`` are the first rows of a larger one (nested draws reuse cached calls).
        ``None`` keeps every row in file order.
    seed : int, default 0
        Random seed of the shuffle.
    root : str or Path, optional
        The folder of the files; default the bundled one.

    Returns
    -------
    DataFrame
        item (``srefine-<which>-<row>``), case (one id per distinct note), clinical_note, topic, keypoint.
    """
    from medeval_kit.datasets._io import read_json, read_jsonl
    from medeval_kit.stats import nested_order

    base = data_dir() / "medqg" / "inputs" if root is None else Path(root)
    frames = []
    for part in (["1-35", "36-47"] if which == "both" else [which]):
        p = base / f"human_cn_t_kp_{part}.jsonl"
        recs = read_jsonl(p) if part == "1-35" else read_json(p)
        if not isinstance(recs, list):
            raise DataFileError(f"{p}: expected a list of records")
        df = pd.DataFrame(recs)
        missing = {"clinical_note", "topic", "keypoint"} - set(df.columns)
        if missing:
            raise DataFileError(f"{p}: missing field(s) {sorted(missing)}")
        df.insert(0, "item", [f"srefine-{part}-{i}" for i in range(len(df))])
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    df.insert(1, "case", pd.factorize(df["clinical_note"])[0].astype(str))
    df["case"] = "case-" + df["case"]
    if n is not None:
        df = df.iloc[nested_order(len(df), seed)]  # one order for every n: smaller draws nest in larger ones
        df["_dup"] = df.groupby("case").cumcount()
        df = df.sort_values("_dup", kind="stable").drop(columns="_dup").head(int(n)).reset_index(drop=True)
    return df
