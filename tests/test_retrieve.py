"""The local few-shot retriever returns relevant examples (TF-IDF and BM25)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medeval_kit.retrieve import Retriever, RetrieverError

BANK = pd.DataFrame({
    "id": ["sepsis", "asthma", "renal", "mi", "stroke"],
    "text": [
        "fever hypotension lactate sepsis broad spectrum antibiotics fluids",
        "wheeze asthma inhaled salbutamol bronchodilator",
        "creatinine renal failure dialysis hyperkalemia",
        "chest pain troponin myocardial infarction aspirin",
        "hemiparesis stroke thrombolysis alteplase",
    ],
})


@pytest.mark.parametrize("method", ["tfidf", "bm25"])
def test_returns_the_relevant_example_first(method):
    r = Retriever(method=method).fit(BANK, text="text", id="id")
    assert r.query("patient with fever and low blood pressure, lactate high: sepsis?", k=1)["id"].tolist() == ["sepsis"]
    assert r.query("troponin rise with chest pain", k=2)["id"].iloc[0] == "mi"
    out = r.query("alteplase", k=3)
    assert out["rank"].tolist() == [1, 2, 3] and out["score"].is_monotonic_decreasing


def test_exclude_drops_examples_from_the_same_source():
    r = Retriever().fit(BANK, text="text", id="id")
    out = r.query("sepsis fever", k=2, exclude=["sepsis"])
    assert "sepsis" not in out["id"].tolist()


def test_bm25_matches_a_hand_computation():
    bank = pd.DataFrame({"t": ["apple apple pie", "banana pie", "cherry"]})
    r = Retriever(method="bm25", k1=1.5, b=0.75, stop_words=None).fit(bank, text="t")
    # query "apple": df=1, N=3 -> idf = ln(1 + (3-1+0.5)/(1+0.5)) = ln(1 + 5/3)
    # doc0: tf=2, |d|=3, avgdl=(3+2+1)/3=2 -> 2*2.5/(2 + 1.5*(0.25+0.75*1.5)) = 5/4.0625
    idf = np.log(1 + 2.5 / 1.5)
    expected = idf * 5 / (2 + 1.5 * (0.25 + 0.75 * 3 / 2))
    assert r.scores("apple")[0] == pytest.approx(expected)
    assert r.scores("apple")[1] == 0


def test_errors_name_the_problem():
    with pytest.raises(RetrieverError, match="method"):
        Retriever(method="colbert")
    with pytest.raises(RetrieverError, match="fit"):
        Retriever().query("x")
    with pytest.raises(RetrieverError, match="no column"):
        Retriever().fit(BANK, text="nope")


def test_fewshot_bank_over_bundled_medqg_questions_is_topical():
    from medeval_kit.generate import build_fewshot_bank

    r = build_fewshot_bank()
    hits = r.query("select most likely diagnosis sepsis septic shock", k=3)
    assert len(hits) == 3
    text = " ".join(hits["stem"].str.lower() + " " + hits["keypoint"].astype(str).str.lower())
    assert "sepsis" in text or "septic" in text
