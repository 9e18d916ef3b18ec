"""Resolution policies for pairwise verdicts: each checked against a hand-worked example."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medeval_kit.errors import SchemaError
from medeval_kit.pairwise import (
    majority_over_repeats,
    merge_judges,
    resolve_orders,
    resolve_pairwise,
    to_slot,
    unswap,
    win_rate,
)
from medeval_kit.pairwise.resolve import POLICIES


def _j(rows, criterion="overall"):
    """rows: (item, order, repeat, verdict or None for a failed parse)."""
    return pd.DataFrame([
        {"item": it, "judge": "j", "protocol": "pairwise", "criterion": criterion, "order": o, "repeat": r,
         "raw": str(v), "verdict": v, "parse_status": "ok" if v is not None else "failed"}
        for it, o, r, v in rows
    ])


# ---------------------------------------------------------------- un-swapping
def test_unswap_scalar_table():
    # AB: A is in the first slot. BA: B is in the first slot.
    assert unswap("first", "AB") == "A"
    assert unswap("second", "AB") == "B"
    assert unswap("first", "BA") == "B"
    assert unswap("second", "BA") == "A"
    assert unswap("tie", "BA") == "tie"
    assert unswap("neither", "AB") == "neither"
    assert unswap(None, "AB") is None


def test_unswap_vectorised_and_inverse():
    slots = pd.Series(["first", "second", "tie", None, "first"])
    orders = pd.Series(["AB", "BA", "BA", "AB", "ba"])
    v = unswap(slots, orders)
    assert v.tolist() == ["A", "A", "tie", None, "B"]
    back = to_slot(v, orders)
    assert back.tolist() == ["first", "second", "tie", None, "first"]


def test_unswap_matches_synthetic_verdicts():
    from medeval_kit.datasets.synthetic import synthetic_pairwise

    df = synthetic_pairwise(n_items=50, seed=3)
    assert (unswap(df["slot_verdict"], df["order"]).to_numpy() == df["verdict"].to_numpy()).all()
    assert (to_slot(df["verdict"], df["order"]).to_numpy() == df["slot_verdict"].to_numpy()).all()


def test_unswap_rejects_bad_input():
    with pytest.raises(ValueError, match="order"):
        unswap("first", "XY")
    with pytest.raises(ValueError, match="slot verdict"):
        unswap("A", "AB")


# ---------------------------------------------------------------- majority over repeats
def test_majority_over_repeats_hand_worked():
    df = _j([
        ("i1", "AB", 0, "A"), ("i1", "AB", 1, "A"), ("i1", "AB", 2, "B"),        # 2:1 -> A
        ("i2", "AB", 0, "A"), ("i2", "AB", 1, "B"), ("i2", "AB", 2, "tie"),      # 1:1:1, tie present -> tie
        ("i3", "AB", 0, "A"), ("i3", "AB", 1, "B"), ("i3", "AB", 2, None),       # 1:1 + failure -> NA
        ("i4", "AB", 0, None), ("i4", "AB", 1, None), ("i4", "AB", 2, "B"),      # only one parsed -> B
    ])
    m = majority_over_repeats(df).set_index("item")
    assert m.loc["i1", "verdict"] == "A" and m.loc["i1", "unanimous"] == False  # noqa: E712
    assert m.loc["i2", "verdict"] == "tie" and m.loc["i2", "no_majority"]
    assert pd.isna(m.loc["i3", "verdict"]) and m.loc["i3", "no_majority"] and m.loc["i3", "n_failed"] == 1
    assert m.loc["i4", "verdict"] == "B" and m.loc["i4", "n_failed"] == 2 and m.loc["i4", "n_ok"] == 1
    assert (m["repeat_policy"] == "majority").all()


def test_majority_reversed_criterion_prefers_neither():
    # On a reversed criterion the neutral label is "neither": A, B, neither -> neither.
    df = _j([("i1", "AB", 0, "A"), ("i1", "AB", 1, "B"), ("i1", "AB", 2, "neither")], criterion="harmfulness")
    m = majority_over_repeats(df, reversed_criteria={"harmfulness"})
    assert m["verdict"].iloc[0] == "neither"
    # ... and the polarity column form gives the same answer
    m2 = majority_over_repeats(df.assign(polarity=-1), polarity="polarity")
    assert m2["verdict"].iloc[0] == "neither"


# ---------------------------------------------------------------- orders
ORDERS_EXAMPLE = [
    ("i1", "AB", 0, "A"), ("i1", "BA", 0, "A"),      # consistent A
    ("i2", "AB", 0, "A"), ("i2", "BA", 0, "B"),      # inconsistent (a flip)
    ("i3", "AB", 0, "tie"), ("i3", "BA", 0, "B"),    # inconsistent (tie vs B)
    ("i4", "AB", 0, None), ("i4", "BA", 0, "B"),     # AB failed to parse
    ("i5", "AB", 0, "B"), ("i5", "BA", 0, "B"),      # consistent B
]


@pytest.mark.parametrize("policy, expected", [
    # hand-worked: i1 A, i2/i3 inconsistent -> policy, i4 failed -> NA (never a tie), i5 B
    ("drop", ["A", None, None, None, "B"]),
    ("tie", ["A", "tie", "tie", None, "B"]),
    ("neither", ["A", "neither", "neither", None, "B"]),
    ("neutral", ["A", "tie", "tie", None, "B"]),
])
def test_resolve_orders_policies(policy, expected):
    out = resolve_orders(_j(ORDERS_EXAMPLE), policy).set_index("item")
    got = [None if pd.isna(v) else v for v in out["verdict"]]
    assert got == expected
    assert (out["policy"] == policy).all()
    assert out.loc["i4", "resolution"] == "failed" and out.loc["i4", "n_failed"] == 1
    assert pd.isna(out.loc["i4", "consistent"])
    assert out.loc["i2", "consistent"] == False  # noqa: E712
    if policy == "drop":
        assert (out.loc[["i2", "i3"], "resolution"] == "dropped").all()


def test_resolve_orders_neutral_uses_polarity():
    df = pd.concat([_j(ORDERS_EXAMPLE, "correctness"), _j(ORDERS_EXAMPLE, "harmfulness")], ignore_index=True)
    out = resolve_orders(df, "neutral", reversed_criteria={"harmfulness"}).set_index(["criterion", "item"])
    assert out.loc[("correctness", "i2"), "verdict"] == "tie"
    assert out.loc[("harmfulness", "i2"), "verdict"] == "neither"
    assert out.loc[("harmfulness", "i2"), "resolution"] == "inconsistent->neither"


def test_resolve_orders_with_repeats_longform_pipeline():
    # Longform-MedQA: 3 repeats per order, majority per order, then the two orders.
    rows = [("i1", "AB", r, v) for r, v in enumerate(["A", "A", "B"])]      # AB majority A
    rows += [("i1", "BA", r, v) for r, v in enumerate(["A", "tie", "A"])]   # BA majority A -> agree
    rows += [("i2", "AB", r, v) for r, v in enumerate(["A", "A", "A"])]     # AB A
    rows += [("i2", "BA", r, v) for r, v in enumerate(["B", "B", "tie"])]   # BA B -> inconsistent -> tie
    out = resolve_orders(_j(rows), "neutral").set_index("item")
    assert out.loc["i1", "verdict"] == "A"
    assert out.loc["i2", "verdict"] == "tie"


def test_resolve_orders_bad_labels_and_policy():
    with pytest.raises(ValueError, match="policy"):
        resolve_orders(_j(ORDERS_EXAMPLE), "coinflip")
    bad = _j(ORDERS_EXAMPLE)
    bad.loc[2, "verdict"] = "first"  # slot terms where model terms are expected
    with pytest.raises(SchemaError) as e:
        resolve_orders(bad)
    assert e.value.column == "verdict" and e.value.rows == [2]


# ---------------------------------------------------------------- merging judges
def test_merge_judges_hand_worked():
    res = pd.DataFrame({
        "item": ["i1", "i2", "i3", "i4"] * 2,
        "judge": ["g"] * 4 + ["c"] * 4,
        "criterion": "correctness",
        "verdict": ["A", "A", "B", None, "A", "B", "B", "A"],
    })
    # i1 agree A; i2 A vs B -> neutral tie; i3 agree B; i4 one judge has no verdict -> NA (failed)
    out = merge_judges(res, ("g", "c"), "neutral").set_index("item")
    assert [None if pd.isna(v) else v for v in out["verdict"]] == ["A", "tie", "B", None]
    assert out.loc["i4", "resolution"] == "failed"
    assert (out["judge"] == "g+c").all() and (out["merge_policy"] == "neutral").all()
    out = merge_judges(res, ("g", "c"), "drop").set_index("item")
    assert out.loc["i2", "resolution"] == "dropped" and pd.isna(out.loc["i2", "verdict"])


def test_resolve_pairwise_with_merge():
    a = _j(ORDERS_EXAMPLE)
    b = _j(ORDERS_EXAMPLE).assign(judge="k")
    b.loc[b["item"] == "i1", "verdict"] = "B"   # judge k: i1 consistent B
    out = resolve_pairwise(pd.concat([a, b], ignore_index=True), "neutral", merge=("j", "k")).set_index("item")
    # i1: j says A, k says B -> tie; i5: both B
    assert out.loc["i1", "verdict"] == "tie" and out.loc["i5", "verdict"] == "B"


# ---------------------------------------------------------------- win rates and polarity
def test_win_rate_reversed_polarity():
    res = pd.DataFrame({
        "judge": "j",
        "criterion": ["helpfulness"] * 4 + ["harmfulness"] * 4,
        "verdict": ["A", "A", "B", "tie", "B", "B", "A", None],
    })
    out = win_rate(res, reversed_criteria={"harmfulness"}, ties="exclude").set_index("criterion")
    # helpfulness: A chosen 2, B chosen 1 -> A wins 2/3
    assert out.loc["helpfulness", "estimate"] == pytest.approx(2 / 3)
    # harmfulness: choosing = worse. B chosen (as more harmful) twice -> A wins 2 of 3; NA counted as dropped
    assert out.loc["harmfulness", "estimate"] == pytest.approx(2 / 3)
    assert out.loc["harmfulness", "n_dropped"] == 1 and out.loc["harmfulness", "polarity"] == -1
    half = win_rate(res, reversed_criteria={"harmfulness"}).set_index("criterion")
    # ties count half: (2 + 0.5) / 4
    assert half.loc["helpfulness", "estimate"] == pytest.approx(2.5 / 4)
    assert half.loc["helpfulness", "ci_low"] < 2.5 / 4 < half.loc["helpfulness", "ci_high"]


def test_polarity_column_checked():
    res = pd.DataFrame({"judge": "j", "criterion": "x", "verdict": ["A", "B"], "polarity": [1, 0]})
    with pytest.raises(SchemaError, match="polarity"):
        win_rate(res)


def test_proportion_ci_matches_scipy():
    from scipy.stats import binomtest

    from medeval_kit.stats import proportion_ci

    lo, hi = proportion_ci(7, 20)
    ci = binomtest(7, 20).proportion_ci(method="exact")
    assert (lo, hi) == pytest.approx((ci.low, ci.high))
    assert all(np.isnan(proportion_ci(0, 0)))


def test_no_majority_is_not_a_parse_failure():
    rows = [("i1", "AB", 0, "A"), ("i1", "AB", 1, "B"), ("i1", "BA", 0, "A"), ("i1", "BA", 1, "A")]
    out = resolve_orders(_j(rows), "tie")
    # AB: A vs B, no tie among the votes -> no majority; the pair gets NA, labelled no_majority
    assert out["resolution"].iloc[0] == "no_majority" and pd.isna(out["verdict"].iloc[0])
    assert out["n_failed"].iloc[0] == 0


def test_merge_judges_reversed_criterion_neither():
    res = pd.DataFrame({"item": ["i1", "i1"], "judge": ["g", "c"], "criterion": "bias",
                        "verdict": ["A", "B"], "polarity": [-1, -1]})
    out = merge_judges(res, ("g", "c"), "neutral")
    assert out["verdict"].iloc[0] == "neither" and out["resolution"].iloc[0] == "inconsistent->neither"


# --------------------------------------------------------------------------- against a plain-Python reference
def _key(v):
    return None if v is None or (isinstance(v, float) and np.isnan(v)) else v


def _reference_majority(df: pd.DataFrame, reversed_criteria=()) -> dict:
    """(item, judge, criterion, order) -> (verdict, n_repeats, n_ok, unanimous, no_majority, polarity), by the
    docstring's rules, one row at a time. A call with a missing key takes part in no vote."""
    groups: dict = {}
    for r in df.itertuples(index=False):
        k = tuple(_key(getattr(r, c)) for c in ("item", "judge", "criterion", "order"))
        g = groups.setdefault(k, {"n": 0, "votes": {}, "n_ok": 0, "pol": -1 if r.criterion in reversed_criteria else 1})
        g["n"] += 1
        if _key(r.verdict) is not None and r.parse_status == "ok":
            g["n_ok"] += 1
            if None not in k:
                g["votes"][r.verdict] = g["votes"].get(r.verdict, 0) + 1
    out = {}
    for k, g in groups.items():
        votes, neutral, other = g["votes"], *(("neither", "tie") if g["pol"] < 0 else ("tie", "neither"))
        top = [v for v, n in votes.items() if n == max(votes.values())]
        verdict = top[0] if len(top) == 1 else neutral if neutral in top else other if other in top else None
        unanimous = len(votes) == 1 if g["n_ok"] else None
        out[k] = (verdict, g["n"], g["n_ok"], unanimous, len(top) > 1, g["pol"])
    return out


def _reference_resolution(maj: dict, policy: str) -> dict:
    """(item, judge, criterion) -> (verdict_ab, verdict_ba, verdict, resolution, n_failed, missing_order)."""
    out = {}
    for k in sorted({k[:3] for k in maj if None not in k[:3]}, key=repr):
        ab, ba = maj.get((*k, "AB")), maj.get((*k, "BA"))
        v_ab, v_ba = ab[0] if ab else None, ba[0] if ba else None
        pol = (ab or ba)[5]
        n_failed = sum(m[1] - m[2] for m in (ab, ba) if m)
        missing = ",".join(o for o, m in (("AB", ab), ("BA", ba)) if m is None)
        label = ("neither" if pol < 0 else "tie") if policy == "neutral" else policy
        if v_ab is None or v_ba is None:
            no_majority = any(m and m[0] is None and m[2] > 0 for m in (ab, ba))
            verdict, how = None, "no_majority" if no_majority else "failed"
        elif v_ab == v_ba:
            verdict, how = v_ab, "agree"
        elif policy == "drop":
            verdict, how = None, "dropped"
        else:
            verdict, how = label, f"inconsistent->{label}"
        out[k] = (v_ab, v_ba, verdict, how, n_failed, missing)
    return out


def _random_judgments(seed: int) -> pd.DataFrame:
    r = np.random.default_rng(seed)
    items = [f"q{i}" for i in range(int(r.integers(1, 25)))]
    if r.random() < 0.2:
        items = list(range(len(items)))
    n = int(r.integers(1, 200))
    df = pd.DataFrame({
        "item": r.choice(np.array(items, dtype=object), n), "judge": r.choice(["j1", "j2"], n),
        "criterion": r.choice(["helpful", "harm"], n), "order": r.choice(["AB", "BA", "ab"], n),
        "verdict": r.choice(np.array(["A", "B", "tie", "neither", None], dtype=object), n, p=[.3, .3, .15, .15, .1]),
        "parse_status": r.choice(["ok", "ok", "ok", "failed"], n)})
    if r.random() < 0.15:
        df.loc[0, "item"] = None
    return df


def test_majority_and_order_resolution_equal_a_plain_python_reference():
    """80 random tables (1-200 calls, repeats, ties, failed calls, a reversed criterion, a missing item):
    majority_over_repeats and resolve_orders, vectorised, give what the docstrings' rules give row by row."""
    seen = {"no_majority": 0, "agree": 0, "failed": 0, "inconsistent": 0, "missing_key": 0}
    for seed in range(80):
        df = _random_judgments(seed)
        rev = ("harm",) if seed % 2 else ()
        want = _reference_majority(df.assign(order=df["order"].str.upper()), rev)
        got = majority_over_repeats(df.assign(order=df["order"].str.upper()), reversed_criteria=rev)
        assert len(got) == len(want)
        for r in got.itertuples(index=False):
            k = tuple(_key(getattr(r, c)) for c in ("item", "judge", "criterion", "order"))
            assert (r.verdict, r.n_repeats, r.n_ok, r.unanimous, r.no_majority, r.polarity) == want[k], (seed, k)
            assert r.n_failed == r.n_repeats - r.n_ok
        policy = POLICIES[seed % len(POLICIES)]
        expected = _reference_resolution(want, policy)
        out = resolve_orders(df, policy, reversed_criteria=rev)
        assert len(out) == len(expected), seed
        for r in out.itertuples(index=False):
            k = (r.item, r.judge, r.criterion)
            assert (r.verdict_ab, r.verdict_ba, r.verdict, r.resolution, r.n_failed, r.missing_order) == expected[k], \
                (seed, k)
            seen["no_majority"] += r.resolution == "no_majority"
            seen["agree"] += r.resolution == "agree"
            seen["failed"] += r.resolution == "failed"
            seen["inconsistent"] += r.resolution in ("dropped", "inconsistent->tie", "inconsistent->neither")
        seen["missing_key"] += bool(df["item"].isna().any())
        assert list(out[["item", "judge", "criterion"]].itertuples(index=False, name=None)) == sorted(
            out[["item", "judge", "criterion"]].itertuples(index=False, name=None))  # sorted like groupby
    assert min(seen.values()) >= 10, seen
