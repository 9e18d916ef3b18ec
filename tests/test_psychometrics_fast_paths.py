"""The fast paths of medeval_kit.psychometrics (issue 25) equal the computations they replace, exactly.

The per-item pandas loops of ``distractor_analysis`` / ``distractor_efficiency`` became one pass over
numpy columns, and ``label_association``'s cluster bootstrap computes Spearman's rho for all draws at
once. The old implementations are kept here, verbatim but for names, as the reference.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from medeval_kit import psychometrics as pm
from medeval_kit.psychometrics import compare, ctt
from medeval_kit.results import result_frame, result_row
from medeval_kit.stats import percentile_interval, wilson_interval


# --------------------------------------------------------------------------- the old implementations
def _old_options(responses):
    out = {}
    for it, g in responses.groupby("item", sort=False):
        letters = set(g["key"].dropna().astype(str)) | set(g["choice"].dropna().astype(str))
        if "offered" in g.columns:
            for s in g["offered"].dropna().astype(str):
                letters |= set(s)
        out[str(it)] = sorted(letters)
    return {k: sorted(v) for k, v in out.items()}


def _old_distractor_analysis(responses, *, fraction=0.27, nonfunctional=0.05, confidence=0.95):
    Y, _, examinees = ctt._matrix(responses)
    total, _, _ = ctt._scores(Y)
    wu, wl = ctt.group_weights(total, fraction)
    w_up = dict(zip(examinees, wu))
    w_lo = dict(zip(examinees, wl))
    opts = _old_options(responses)
    rows = []
    for it, g in responses.groupby("item", sort=True):
        it = str(it)
        key = g["key"].dropna().astype(str)
        key = key.iloc[0] if len(key) else None
        ans = g[g["choice"].notna()]
        n, miss = len(ans), len(g) - len(ans)
        wu_i = ans["examinee"].astype(str).map(w_up).to_numpy(float)
        wl_i = ans["examinee"].astype(str).map(w_lo).to_numpy(float)
        for o in opts[it]:
            chose = (ans["choice"].astype(str) == o).to_numpy()
            k = int(chose.sum())
            su = float(wu_i @ chose / wu_i.sum()) if wu_i.sum() > 0 else math.nan
            sl = float(wl_i @ chose / wl_i.sum()) if wl_i.sum() > 0 else math.nan
            share = k / n if n else math.nan
            is_key = o == key
            rows.append(result_row(share, wilson_interval(k, n, confidence=confidence) if n else (math.nan, math.nan),
                                   "Wilson" if n else "", n_items=n, n_failed=miss, note="" if n else "no answers",
                                   item=it, option=o, is_key=is_key, n_chosen=k, share_upper=su, share_lower=sl,
                                   discrimination=su - sl,
                                   functional=(pd.NA if is_key or not n else bool(share >= nonfunctional))))
    return result_frame(rows, keys=["item", "option"])


def _old_distractor_efficiency(distractors):
    rows = []
    for it, g in distractors.groupby("item", sort=True):
        dis = g[~g["is_key"].astype(bool)]
        key = g[g["is_key"].astype(bool)]
        func = dis["functional"].dropna().astype(bool)
        n = len(func)
        key_up = float(key["share_upper"].iloc[0]) if len(key) else math.nan
        top_up = float(dis["share_upper"].max()) if len(dis) else math.nan
        rejected = bool(top_up > key_up) if np.isfinite(key_up) and np.isfinite(top_up) else pd.NA
        rows.append(result_row(func.mean() if n else math.nan, n_items=n,
                               n_failed=int(g["n_failed"].max()) if len(g) else 0,
                               note="" if n else "no distractors or no answers", item=str(it),
                               n_functional=int(func.sum()),
                               nonfunctional_options="".join(dis.loc[func.index[~func.to_numpy()], "option"].astype(str))
                               if n else "",
                               key_share_upper=key_up, top_distractor_share_upper=top_up,
                               key_rejected_by_upper=rejected))
    return result_frame(rows, keys=["item"])


def _old_cluster_bootstrap(d, label, value, cluster, n_boot, seed, confidence=0.95):
    rng = np.random.default_rng(seed)
    groups = [g for _, g in d.groupby(cluster)] if cluster else [d.iloc[[i]] for i in range(len(d))]
    reps = []
    for _ in range(int(n_boot)):
        s = pd.concat([groups[i] for i in rng.integers(0, len(groups), len(groups))])
        reps.append(sps.spearmanr(s[label], s[value])[0] if s[label].nunique() > 1 and s[value].nunique() > 1
                    else np.nan)
    return percentile_interval(reps, confidence=confidence)


# --------------------------------------------------------------------------- data
def _messy() -> pd.DataFrame:
    """An exam with what real answer files have: missing answers, an item without a key, unordered rows,
    letters never offered, an item nobody answered, numeric-looking item ids."""
    r = pm.synthetic_exam(9, 60, n_miskeyed=1, missing_rate=0.08, seed=5).responses
    r = r.sample(frac=1.0, random_state=1).reset_index(drop=True)  # rows in no particular order
    r.loc[r["item"] == "q003", "key"] = pd.NA  # no key at all
    r.loc[(r["item"] == "q004") & (r.index % 3 == 0), "key"] = pd.NA  # the key on some rows only
    r.loc[r["item"] == "q005", ["choice", "correct"]] = pd.NA  # nobody answered
    r.loc[r.index[:4], "choice"] = "Z"  # a letter not offered
    r["item"] = r["item"].str.replace("q00", "1")  # ids such as "11", "12", ...
    return r


@pytest.fixture(params=["messy", "synthetic", "no_offered"])
def responses(request):
    if request.param == "messy":
        return _messy()
    r = pm.synthetic_exam(14, 150, missing_rate=0.02, seed=3).responses
    return r.drop(columns=["offered"]) if request.param == "no_offered" else r


def test_distractor_analysis_equals_the_per_item_loop(responses):
    new = pm.distractor_analysis(responses)
    old = _old_distractor_analysis(responses)
    pd.testing.assert_frame_equal(new, old, check_exact=True)


def test_distractor_efficiency_equals_the_per_item_loop(responses):
    d = pm.distractor_analysis(responses)
    pd.testing.assert_frame_equal(pm.distractor_efficiency(d), _old_distractor_efficiency(d), check_exact=True)
    d["functional"] = [pd.NA if bool(k) or not np.isfinite(s) else bool(s >= 0.2)  # as item_flags recomputes it
                       for k, s in zip(d["is_key"], d["estimate"].astype(float))]
    pd.testing.assert_frame_equal(pm.distractor_efficiency(d), _old_distractor_efficiency(d), check_exact=True)


def test_groups_follow_groupby_order():
    s = pd.Series(["b", "a", None, "c", "a", "b", "a"], dtype="str")
    got = [(k, pos.tolist()) for k, pos in ctt._groups(s)]
    want = [(k, g.index.tolist()) for k, g in s.to_frame("x").groupby("x", sort=True)]
    assert got == want


def test_batched_spearman_equals_scipy_per_draw():
    rng = np.random.default_rng(0)
    for n in (2, 3, 8, 41):
        x = rng.integers(1, 6, n).astype(float)
        y = rng.random(n).round(1)
        draws = [rng.integers(0, n, int(rng.integers(1, 2 * n + 1))) for _ in range(300)]  # lengths vary
        got = compare._spearman_draws(x, y, draws)
        want = np.array([sps.spearmanr(x[r], y[r])[0] if len(set(x[r])) > 1 and len(set(y[r])) > 1 else np.nan
                         for r in draws])
        np.testing.assert_array_equal(got, want)  # same bits; NaN for a draw without variation


@pytest.mark.parametrize("cluster", ["trace", None])
def test_label_association_equals_the_per_draw_loop(cluster):
    rng = np.random.default_rng(4)
    n = 46
    table = pd.DataFrame({"difficulty_rank": rng.integers(1, 6, n).astype(float),
                          "p": rng.integers(0, 7, n) / 6,  # six examinees: many ties
                          "trace": rng.choice(["t1", "t2", "t3", "t4", "t5", "t6", "t7"], n)})  # unequal clusters
    table.loc[[3, 9], "trace"] = None  # items of no cluster are never resampled, as before
    out = pm.label_association(table, planted="difficulty_rank", value="p", cluster=cluster, n_boot=400, seed=2)
    row = out[out["statistic"] == "spearman_rho"].iloc[0]
    want = _old_cluster_bootstrap(table, "difficulty_rank", "p", cluster, 400, 2)
    assert (row["ci_low"], row["ci_high"]) == want
