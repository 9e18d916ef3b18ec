"""What the k-slot protocols (``multi_answer``, ``multi_response``) share: the k texts of one item in
ONE prompt, shown in a seeded, recorded order (``shuffle_seed`` per item and repeat), un-shuffled back
to their ``target`` in the rows; and the order effect they can measure (scores by shown position).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from medeval_kit.prompts import Prompt
from medeval_kit.results import result_frame, result_row

from .. import engine
from ..engine import Call, JudgeError, Run

__all__ = ["judge_shuffled", "position_effects"]

SlotDecode = Callable[[dict, int], tuple]
"""``decode(parsed, position)`` -> (verdict, score) of the text shown at 1-based ``position``."""


def _groups(df: pd.DataFrame, item: str, target: str) -> list[tuple[str, pd.DataFrame]]:
    """The rows of each item, sorted by target; a target twice in one item is an error."""
    out = []
    for it, g in df.groupby(item, sort=True):
        g = g.sort_values(target, kind="stable")
        if g[target].duplicated().any():
            dup = sorted(map(str, g.loc[g[target].duplicated(), target]))
            raise JudgeError(f"item {it!r} has duplicate targets {dup}")
        out.append((str(it), g))
    return out


def _permutation(k: int, seed: int, item: str, repeat: int, shuffle: bool) -> tuple[np.ndarray, int | None]:
    if not shuffle:
        return np.arange(k), None
    s = engine.shuffle_seed(seed, item, repeat)
    return np.random.default_rng(s).permutation(k), s


def _calls(data: pd.DataFrame, run: Run, prompt: Prompt, *, shuffle: bool, item: str, text: str, target: str,
           render: Callable, schema_for: Callable[[int], dict]) -> list[Call]:
    """One call per item and repeat, its texts in the recorded order."""
    calls = []
    for it, g in _groups(data, item, target):
        targets = [str(t) for t in g[target]]
        texts = [engine.text(t) for t in g[text]]
        schema = schema_for(len(g))
        for rep in range(run.repeats):
            perm, s = _permutation(len(g), run.seed, it, rep, shuffle)
            meta = {"question_item": it, "repeat": rep, "order": ",".join(map(str, perm)),
                    "presented_order": "|".join(targets[j] for j in perm), "shuffle_seed": s}
            calls.append(Call(render(prompt, g.iloc[0], [texts[j] for j in perm]), prompt, schema, rep, meta,
                              context=(perm, targets)))
    return calls


def judge_shuffled(data: pd.DataFrame, run: Run, prompt: Prompt, *, progress: bool, shuffle: bool, item: str,
                   text: str, target: str, criterion: str, render: Callable, schema_for: Callable[[int], dict],
                   decode: SlotDecode) -> pd.DataFrame:
    """Judge the k texts of each item in one prompt per repeat; one row per text, back in target terms.

    ``render(prompt, first_row, shown_texts)`` -> messages; ``schema_for(k)`` -> reply schema;
    ``decode(parsed, position)`` -> (verdict, score) of the text shown at ``position``.
    """
    def rows(call: Call, parsed):
        perm, targets = call.context
        for pos, j in enumerate(perm, start=1):
            verdict, score = decode(parsed, pos) if parsed is not None else (None, np.nan)
            yield {"item": f"{call.columns['question_item']}:{targets[j]}", "target": targets[j],
                   "criterion": criterion, "position": pos, "verdict": verdict, "score": score}

    calls = _calls(data, run, prompt, shuffle=shuffle, item=item, text=text, target=target, render=render,
                   schema_for=schema_for)
    out = engine.execute(run, calls, rows, progress=progress,
                         extra_order=["question_item", "target", "position", "presented_order", "shuffle_seed"])
    out["position"] = out["position"].astype(int)
    if not shuffle:
        out["shuffle_seed"] = pd.array([pd.NA] * len(out), dtype="Int64")
    else:
        out["shuffle_seed"] = out["shuffle_seed"].astype("int64")
    return out


def position_effects(judgments: pd.DataFrame, *, n_boot: int, seed: int, labelled: bool = False) -> pd.DataFrame:
    """Per judge and shown ``position``: the mean parsed score (and, ``labelled``, the share correct).

    Content is shuffled over positions (seeded, recorded), so a trend over positions is a position
    effect. ``n_boot`` and ``seed`` are unused (no CI here); they keep the hook's signature.
    """
    ok_all = judgments["parse_status"].eq("ok")
    rows = []
    for (j, pos), g in judgments.groupby(["judge", "position"], sort=True):
        ok = g[ok_all.loc[g.index]]
        rows.append(result_row(float(ok["score"].mean()) if len(ok) else np.nan, n_items=len(ok),
                               n_failed=int(len(g) - len(ok)), judge=j, criterion=g["criterion"].iloc[0],
                               metric="by_position", position=int(pos),
                               share_correct=float((ok["verdict"] == "correct").mean())
                               if labelled and len(ok) else np.nan,
                               note="content shuffled over positions (seeded, recorded)"))
    return result_frame(rows, keys=["judge", "criterion", "metric", "position"])
