"""Example calls of the public judge API (see tests/api_examples/__init__.py)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from medeval_kit import judge


@lru_cache(maxsize=1)
def _rubric_judgments() -> pd.DataFrame:
    """Rubric judgments of two targets on three questions (every aspect of mcqg_srefine, one unscored)."""
    from medeval_kit.prompts import load_rubric

    rng = np.random.default_rng(0)
    rub = load_rubric("mcqg_srefine")
    rows = []
    for q in ("q1", "q2", "q3"):
        for t in ("gpt4", "llama"):
            for a in rub.aspects:
                failed = (q, t, a.id) == ("q3", "llama", rub.aspects[0].id)
                rows.append({"item": f"{q}:{t}", "question_item": q, "target": t, "judge": "j1", "repeat": 0,
                             "protocol": "rubric", "rubric": "mcqg_srefine", "criterion": a.id,
                             "order": "single", "score": np.nan if failed else float(rng.integers(a.min, a.max + 1)),
                             "parse_status": "failed" if failed else "ok"})
    return pd.DataFrame(rows)


def _multi_response() -> tuple[pd.DataFrame, pd.DataFrame]:
    """multi_response judgments of three responses per question, and the reference scores."""
    rng = np.random.default_rng(1)
    ref = pd.DataFrame([{"item": f"q{i}", "target": t, "score": float(s)}
                        for i in range(6) for t, s in zip(("a", "b", "c"), rng.permutation([1, 3, 5]))])
    j = ref.rename(columns={"item": "question_item"}).assign(
        item=lambda d: d["question_item"] + ":" + d["target"], judge="j1", repeat=0, protocol="multi_response",
        parse_status="ok", criterion="overall", order="0,1,2", position=1)
    j.loc[j.index[:3], "score"] = [5.0, 3.0, 1.0]
    return j, ref


def _humans(t) -> pd.DataFrame:
    """Two physicians' A/B/tie labels on the shared pairwise items."""
    items = [f"i{k:02d}" for k in range(40)]  # the items of Tables.judgments
    rng = np.random.default_rng(2)
    return t.own(pd.DataFrame([{"item": i, "rater": r, "rater_kind": "human", "criterion": "overall",
                                "label": rng.choice(["A", "B", "tie"])} for i in items for r in ("h1", "h2")]))


@lru_cache(maxsize=1)
def _diffs() -> tuple[pd.DataFrame, pd.Series]:
    from medeval_kit.datasets.synthetic import synthetic_aspect_scores

    scores, prefs = synthetic_aspect_scores(n_items=30, n_aspects=6, seed=0)
    return judge.score_differences(scores), prefs.set_index("item")["preference"]


@lru_cache(maxsize=1)
def _optimism() -> pd.DataFrame:
    return judge.search_optimism(replicates=2, n_items=20, n_aspects=5, max_k=2, k_folds=2, n_new=200,
                                 engine="numpy")


EXAMPLES = {
    "parse_summary": lambda t: judge.parse_summary(t.judgments, columns=t.columns),
    "score_summary": lambda t: judge.score_summary(t.judgments, columns=t.columns),
    "order_effects": lambda t: judge.order_effects(t.judgments, n_boot=50, columns=t.columns),
    "human_agreement": lambda t: judge.human_agreement(t.judgments, _humans(t), n_boot=50, columns=t.columns),
    "verdict_counts": lambda t: judge.verdict_counts(t.judgments, columns=t.columns),
    "rubric_scores": lambda t: judge.rubric_scores(t.own(_rubric_judgments()), columns=t.columns),
    "acc_tuple_triple": lambda t: judge.acc_tuple_triple(*map(t.own, _multi_response()), columns=t.columns),
    "select_aspects": lambda t: judge.select_aspects(*_diffs(), max_k=3, k_folds=2, engine="numpy"),
    "select_aspects_all": lambda t: judge.select_aspects_all(*_diffs(), max_k=2, k_folds=2, engine="numpy"),
    "selection_table": lambda t: judge.selection_table(
        judge.select_aspects_all(*_diffs(), max_k=2, k_folds=2, engine="numpy"), data="synthetic"),
    "search_optimism": lambda t: _optimism(),
    "optimism_summary": lambda t: judge.optimism_summary(_optimism()),
}

OTHER = {
    "Protocol": "class",
    "AspectSelection": "class",
    "AspectSelections": "class",
    "protocol": "registry",
    "unregister": "registry",
    "protocol_names": "registry",
    "protocol_of": "registry",
    "default_templates": "registry",
    "check_protocol": "helper",
    "judge_pairwise": "llm",
    "judge_pairwise_mec": "llm",
    "judge_rubric": "llm",
    "judge_multi_answer": "llm",
    "judge_reference": "llm",
    "judge_multi_response": "llm",
    "run_protocol": "llm",
    "read_items": "reader",
    "read_aspect_scores": "reader",
    "human_preferences": "reader",
    "item_columns": "helper",
    "protocol_options": "helper",
    "pairs_from_bundle": "data",
    "to_annotations": "helper",
    "shuffle_seed": "helper",
    "aspect_differences": "helper",
    "score_differences": "helper",
    "round_differences": "helper",
    "feasible_max_k": "helper",
}


# ---------------------------------------------------------------- composites that call an LLM, on a scripted one
_PAIRS = pd.DataFrame({
    "item": ["1", "2", "3"], "question": ["q1", "q2", "q3"],
    "answer_a": ["good one", "good two", "same"], "answer_b": ["bad one", "bad two", "same"],
    "model_a": ["mA", "mA", "mA"], "model_b": ["mB", "mB", "mB"],
})


class _Scripted:
    """A client that prefers the response holding "good" (a tie when both are the same), deterministic."""

    model = "fake/judge"

    def run(self, requests, progress=True, desc=None):
        import re

        from medeval_kit.llm import Response
        from medeval_kit.llm.parse import parse_reply

        out = []
        for k, r in enumerate(requests):
            u = r.messages[-1]["content"]
            a = re.search(r"\[Response A\]\n(.*?)\n\[End of Response A\]", u, re.S).group(1)
            b = re.search(r"\[Response B\]\n(.*?)\n\[End of Response B\]", u, re.S).group(1)
            text = '{"verdict": "%s"}' % ("tie" if a == b else "A" if "good" in a else "B")
            parsed, status, err = parse_reply(text, r.schema)
            out.append(Response(text=text, parsed=parsed, parse_status=status, parse_error=err, request=r, key=f"k{k}"))
        return out


EXAMPLES.update({
    # the finding: judge_pairwise resolved the orders with the default columns, whatever the caller's
    "judge_pairwise": lambda t: judge.judge_pairwise(t.own(_PAIRS), client=_Scripted(), progress=False,
                                                     columns=t.columns),
})
