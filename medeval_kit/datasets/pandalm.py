"""PandaLM test set: 999 instruction pairs, 3 human annotators, GPT-3.5 and PandaLM-7B verdicts."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from medeval_kit.datasets._io import data_dir, read_json
from medeval_kit.datasets.bundle import Bundle
from medeval_kit.errors import SchemaError

__all__ = ["load_pandalm", "PANDALM_LABELS"]

PANDALM_LABELS = ("A", "B", "tie")
"""A = response1 better, B = response2 better. The source codes these 1, 2 and 0."""

_HUMAN_CODES = {1: "A", 2: "B", 0: "tie"}
_GPT_CODES = {"1": "A", "2": "B", "Tie": "tie"}  # "garbage" = unparseable -> NA, kept in raw
_JUDGES = {
    "gpt-3.5-turbo": ("gpt-3.5-turbo-testset-v1.json", "gpt_result", _GPT_CODES),
    "pandalm-7b": ("pandalm-7b-testset-v1.json", "pandalm_result", _HUMAN_CODES),
}


def _map_codes(values: pd.Series, codes: dict, path: Path, column: str, strict: bool) -> pd.Series:
    mapped = values.map(codes)
    unknown = values.notna() & mapped.isna()
    if strict and unknown.any():
        rows = [int(i) for i in values.index[unknown]]
        raise SchemaError("annotations", column, rows, f"unknown code(s) {sorted(set(map(str, values[unknown])))}; "
                          f"expected one of {list(codes)}", str(path))
    return mapped


def load_pandalm(path: str | Path | None = None) -> Bundle:
    """Return the PandaLM test set as items, responses, annotations (5 raters) and judgments (2 LLM judges).

    Labels are ``"A"`` (response1 better), ``"B"`` and ``"tie"``. GPT-3.5's 25 ``"garbage"`` outputs are
    kept in ``raw`` with label NA and ``parse_status="failed"``; they are not turned into ties.

    Parameters
    ----------
    path : str or Path, optional
        The PandaLM folder; default the bundled ``data/pandalm``.

    Returns
    -------
    Bundle
        ``items``, ``responses``, ``annotations`` and ``judgments`` (name ``pandalm``).

    Examples
    --------
    >>> load_pandalm().annotations["rater"].nunique()
    5
    """
    root = Path(path) if path else data_dir() / "pandalm"
    src = root / "testset-v1.json"
    test = pd.DataFrame(read_json(src))
    need = ["idx", "cmp_key", "instruction", "input", "response1", "response2",
            "annotator1", "annotator2", "annotator3"]
    missing = [c for c in need if c not in test.columns]
    if missing:
        raise SchemaError("items", missing[0], [], f"missing column(s) {missing}", str(src))
    test["item"] = test["idx"].astype(str)
    # A few responses are JSON booleans/numbers (e.g. `true`); keep them as the text they stand for.
    n_nonstr = 0
    for col in ("instruction", "input", "response1", "response2"):
        nonstr = test[col].notna() & ~test[col].map(lambda v: isinstance(v, str))
        n_nonstr += int(nonstr.sum())
        test[col] = test[col].map(lambda v: v if isinstance(v, str) or v is None else str(v))

    items = pd.DataFrame({
        "item": test["item"], "dataset": "pandalm", "question": test["instruction"],
        "context": test["input"], "motivation_app": test.get("motivation_app"), "cmp_key": test["cmp_key"],
    })
    models = test["cmp_key"].str.split("_", n=1, expand=True)
    responses = pd.concat([
        pd.DataFrame({"item": test["item"], "model": models[0], "repeat": 0, "text": test["response1"], "slot": "A"}),
        pd.DataFrame({"item": test["item"], "model": models[1], "repeat": 0, "text": test["response2"], "slot": "B"}),
    ], ignore_index=True)

    rows = []
    for k in ("annotator1", "annotator2", "annotator3"):
        lab = _map_codes(test[k], _HUMAN_CODES, src, k, strict=True)
        rows.append(pd.DataFrame({"item": test["item"], "rater": k, "rater_kind": "human",
                                  "criterion": "overall", "label": lab, "raw": test[k].astype(str)}))
    judgments = []
    for judge, (fname, col, codes) in _JUDGES.items():
        jp = root / fname
        j = pd.DataFrame(read_json(jp))
        if col not in j.columns:
            raise SchemaError("judgments", col, [], "missing column", str(jp))
        j["item"] = j["idx"].astype(str)
        j = test[["item"]].merge(j, on="item", how="left", validate="one_to_one")
        raw = j[col].map(lambda v: None if pd.isna(v) else str(v))
        key = j[col] if judge == "pandalm-7b" else raw
        lab = key.map(codes)
        status = pd.Series("ok", index=j.index).where(lab.notna(), "failed").where(j[col].notna(), "missing")
        rows.append(pd.DataFrame({"item": j["item"], "rater": judge, "rater_kind": "llm",
                                  "criterion": "overall", "label": lab, "raw": raw}))
        judgments.append(pd.DataFrame({
            "item": j["item"], "judge": judge, "protocol": "pairwise", "criterion": "overall",
            "order": "AB", "repeat": 0, "raw": raw, "verdict": lab, "parse_status": status,
        }))
    annotations = pd.concat(rows, ignore_index=True)
    return Bundle(
        name="pandalm", items=items, responses=responses, annotations=annotations,
        judgments=pd.concat(judgments, ignore_index=True), source=str(root),
        notes={"labels": PANDALM_LABELS, "orders": "one presentation order only (response1 first)",
               "non_string_texts_converted": n_nonstr},
    )
