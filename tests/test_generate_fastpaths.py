"""The fast paths of medeval_kit.generate give what the slow code gave (issue 25).

* the bundled few-shot bank and USMLE outline are fitted once per process; each call gets a copy;
* retrievals from those fits are remembered (the stopping rules of one notebook repeat them);
* ``match_topic`` normalizes the checklist once (``_TopicMatcher``) and ``topic_overlap`` groups notes once.
"""

from __future__ import annotations

import difflib

import numpy as np
import pandas as pd
import pytest

from medeval_kit import generate as G
from medeval_kit.generate import _common
from medeval_kit.generate import topics as T
from medeval_kit.retrieve import Retriever


def test_bundled_retrievers_are_fitted_once_and_copied():
    a, b = G.build_fewshot_bank(), G.build_fewshot_bank()
    assert a is not b and a._X is b._X  # one fit, two copies
    cached = _common._RETRIEVERS.pop(a._medeval_fit)
    try:
        c = G.build_fewshot_bank()  # fitted again from the data: the same retrievals
        assert c._X is not cached._X
        q = "sepsis lactate fluids hypotension"
        pd.testing.assert_frame_equal(c.query(q, k=3, exclude=["x"]), cached.query(q, k=3, exclude=["x"]))
    finally:
        _common._RETRIEVERS[a._medeval_fit] = cached
    o1, o2 = G.build_outline_retriever(), G.build_outline_retriever()
    assert o1 is not o2 and o1._X is o2._X


def test_refitting_a_copy_leaves_the_cache_alone():
    r = G.build_outline_retriever()
    before = G.build_outline_retriever().query("asthma wheeze", k=2)
    r.fit(pd.DataFrame({"text": ["asthma wheeze inhaler", "renal failure"]}), text="text")
    assert r.query("asthma wheeze", k=1)["text"].tolist() == ["asthma wheeze inhaler"]
    pd.testing.assert_frame_equal(G.build_outline_retriever().query("asthma wheeze", k=2), before)
    # the refitted copy is no longer answered from memory
    hits = _common.retriever_query(r, "renal failure", 1)
    assert hits["text"].tolist() == ["renal failure"]


def test_remembered_queries_equal_fresh_ones_and_are_copies():
    r = G.build_fewshot_bank()
    note = r._bank["note"].iloc[0]
    for q in ("chest pain troponin", "child fever rash", "chest pain troponin"):
        got = _common.retriever_query(r, q, 2, exclude=[note])
        pd.testing.assert_frame_equal(got, r.query(q, k=2, exclude=[note]))
    got["score"] = -1.0  # changing a result never changes the memory
    pd.testing.assert_frame_equal(_common.retriever_query(r, "chest pain troponin", 2, exclude=[note]),
                                  r.query("chest pain troponin", k=2, exclude=[note]))
    own = Retriever().fit(pd.DataFrame({"text": ["sepsis lactate", "asthma wheeze"]}))  # not a cached fit
    assert _common.retriever_query(own, "wheeze", 1)["text"].tolist() == ["asthma wheeze"]


def _match_topic_reference(text, checklist):
    norm = G.normalize_text(text)
    if not norm:
        return None
    keys = [G.normalize_text(t) for t in checklist["topic"]]
    if norm in keys:
        return int(checklist["topic_id"].iloc[keys.index(norm)])
    squash = norm.replace(" ", "")
    ratios = [difflib.SequenceMatcher(None, squash, k.replace(" ", "")).ratio() for k in keys]
    best = int(np.argmax(ratios))
    return int(checklist["topic_id"].iloc[best]) if ratios[best] >= T._TOPIC_MATCH_RATIO else None


def test_topic_matcher_equals_match_topic_reference():
    cl = G.load_topic_checklist()
    human = G.human_topics()
    texts = [*cl["topic"], *human["topic"], *G.bundled_machine_topics(human)["topic"], "", None, np.nan, "xyz",
             "Underlying  processes/pathways.", "DIAGNOSIS: most likely", " ".join(cl["topic"].iloc[3].split()[:-1])]
    m = T._TopicMatcher(cl)
    for t in texts:
        assert m(t) == _match_topic_reference(t, cl) == G.match_topic(t, cl)
    assert m(texts[0]) == m(texts[0])  # remembered


_ratio_ci = T._ratio_ci  # unchanged by the fast paths: the reference below calls it as before


def _overlap_reference(machine, human, n_boot, seed):
    """The former topic_overlap loops (a .loc filter per note, match_topic per topic)."""
    cl = G.load_topic_checklist()
    cases = sorted(set(machine["case"].dropna()) & set(human["case"].dropna()))
    m_all = machine[machine["case"].isin(cases)]
    m = m_all.dropna(subset=["topic"])
    h = human[human["case"].isin(cases)]
    out = []
    for how in ("exact", "normalized"):
        key = (lambda s: " ".join(str(s).split())) if how == "exact" else (lambda s: _match_topic_reference(s, cl))
        num, den_p, den_r = [], [], []
        for c in cases:
            ms = {key(t) for t in m.loc[m["case"] == c, "topic"]} - {None}
            hs = {key(t) for t in h.loc[h["case"] == c, "topic"]} - {None}
            num.append(len(ms & hs))
            den_p.append(len(ms))
            den_r.append(len(hs))
        for den in (den_p, den_r):
            out.append(_ratio_ci(np.array(num, float), np.array(den, float), n_boot, seed))
    mk = m_all.dropna(subset=["keypoint"])
    for how in ("exact", "normalized", "contains"):
        num, den = [], []
        for c in cases:
            hs = [str(x) for x in h.loc[h["case"] == c, "keypoint"].dropna()]
            ks = [str(x) for x in mk.loc[mk["case"] == c, "keypoint"]]
            num.append(sum(T._kp_match(k, hs, how) for k in ks))
            den.append(len(ks))
        out.append(_ratio_ci(np.array(num, float), np.array(den, float), n_boot, seed))
    return out


@pytest.mark.parametrize("machine", ["paper", "noisy"])
def test_topic_overlap_equals_reference(machine):
    human = G.human_topics()
    m = G.bundled_machine_topics(human)
    if machine == "noisy":  # typos, off-list topics, missing topics and test points
        m = m.copy()
        m.loc[m.index[::3], "topic"] = m["topic"].iloc[::3].str.upper() + "."
        m.loc[m.index[1::7], "topic"] = np.nan
        m.loc[m.index[2::5], "keypoint"] = np.nan
        m.loc[m.index[4::9], "topic"] = "not a checklist topic"
    res = G.topic_overlap(m, human, n_boot=300, seed=2)
    ref = _overlap_reference(m, human, 300, 2)
    assert len(res) == len(ref) == 7
    for (_, row), (est, (lo, hi)) in zip(res.iterrows(), ref):
        assert (row["estimate"], row["ci_low"], row["ci_high"]) == pytest.approx((est, lo, hi), abs=0, nan_ok=True)
