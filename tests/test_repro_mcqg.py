"""MCQG-SRefine's reproduction checks: the claims the rows' reasons make, verified by enumeration."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from medeval_kit import repro
from medeval_kit.datasets import load_medqg_table19
from medeval_kit.repro.papers import mcqg_srefine_2025 as mq


@pytest.fixture(scope="module")
def codes():
    ann = load_medqg_table19().annotations
    return ann.pivot(index="item", columns="rater", values="code").rename(index=int).sort_index()


def test_expert_x_counts_come_from_table10_not_table19(codes):
    p = mq.paper()
    t10 = mq.table10_expert_x(p)
    assert t10 == {"gpt4": 7, "srefine": 29, "tie": 4}
    ex = p.input("expert_x_counts")
    assert (ex["gpt4_baseline"], ex["mcqg_srefine"], ex["tie"]) == (7, 29, 4)
    # Table 19's Expert X column: 8 / 28 / 4; cases 1-20 match Table 10's human row, cases 21-40 do not
    x = codes["expert_x"]
    assert [int((x == c).sum()) for c in (1, 2, 0)] == [8, 28, 4]
    assert [int((x.loc[1:20] == c).sum()) for c in (1, 2, 0)] == [3, 15, 2]
    assert [int((x.loc[21:40] == c).sum()) for c in (1, 2, 0)] == [5, 13, 2]


def test_table2_kappas_need_expert_x_7_29_4():
    p = mq.paper()
    found = {}
    for rec in p.input("table2"):
        agree = round(rec["pa"] * 40 / 100)
        printed = p.number(rec["kappa"]).value
        found[rec["kappa"]] = (mq.table2_judge_counts(agree, printed, (7, 29, 4)),
                               mq.table2_judge_counts(agree, printed, (8, 28, 4)))
    # with Table 10's Expert X every printed kappa is reached by some integer judge counts ...
    assert all(len(a) >= 1 for a, _ in found.values())
    assert found["table2.no-filter.kappa"][0][0] == ((6, 30, 4), Fraction(19, 84))
    assert found["table2.pa-allcomb.kappa"][0][0] == ((6, 31, 3), Fraction(327, 647))
    # ... with Table 19's 8 / 28 / 4 only the first row is, never the four filtered rows
    assert {k for k, (_, b) in found.items() if b} == {"table2.no-filter.kappa"}
    # 0.505409582 is 327/647 cut; 0.423328965 is 323/763 rounded (cutting gives ...964)
    assert repro.truncates_to("0.505409582", 327 / 647) and not repro.rounds_to("0.505409582", 327 / 647)
    assert repro.rounds_to("0.423328965", 323 / 763) and not repro.truncates_to("0.423328965", 323 / 763)


def test_students_tables_are_unique_and_the_pooled_kappa_is_a_real_check():
    h, m = mq.student_tables("human"), mq.student_tables("machine")
    assert len(h) == 1 and len(m) == 1
    assert np.array_equal(h[0][0], mq.TWO_STUDENTS["human"]) and h[0][1] == Fraction(3, 4)
    assert np.array_equal(m[0][0], mq.TWO_STUDENTS["machine"]) and m[0][1] == Fraction(4, 7)
    pooled = mq._kappa_table(mq.TWO_STUDENTS["human"] + mq.TWO_STUDENTS["machine"])
    assert pooled == Fraction(401, 601) and repro.rounds_to("0.66722", float(pooled))
    # without Expert 2's tie shares, the per-arm values allow other tables and other pooled kappas
    loose = {mq._kappa_table(a + b) for a, _ in mq.student_tables("human", False)
             for b, _ in mq.student_tables("machine", False)}
    assert len(loose) == 6 and sum(repro.rounds_to("0.66722", float(k)) for k in loose) == 1
    # Expert 2's GPT-4 column is forced to 5 of 20 (25%), while Table 10 prints 20% in rows summing to 95%
    assert [int(mq.TWO_STUDENTS[a].sum(0)[0]) for a in ("human", "machine")] == [5, 5]
    c = mq.table10_counts()
    assert sum(c[("expert2", "human")]) == 19 and sum(c[("expert2", "machine")]) == 19


def test_table9_denominators_are_its_own_no_pos_bias_counts(codes):
    p = mq.paper()
    for judge in mq.JUDGES:
        n9, k9 = mq._table9_counts(p, judge)
        assert repro.rounds_to(p.number(f"table9.{judge}.pa").value, k9 / n9) or \
            repro.truncates_to(p.number(f"table9.{judge}.pa").value, k9 / n9)
        consistent = int((codes[judge] != -1).sum())
        # only GPT-4's count agrees with Table 19; no other PA is a count out of Table 19's consistent items
        assert (n9 == consistent) == (judge == "gpt-4")
        if judge != "gpt-4":
            assert not mq._fits_count(p.number(f"table9.{judge}.pa").value, consistent)
    assert [mq._table9_counts(p, j) for j in mq.JUDGES] == [(26, 16), (17, 10), (14, 9), (17, 7), (15, 7), (19, 13)]


def test_d2_split_at_case_20(codes):
    g = codes[codes["gpt-4"] != -1]
    first, second = g.loc[1:20], g.loc[21:40]
    assert (int((first["gpt-4"] == first["expert_x"]).sum()), len(first)) == (5, 12)   # D.2 human: 7/12
    assert (int((second["gpt-4"] == second["expert_x"]).sum()), len(second)) == (7, 14)  # D.2 machine: 7/14


def test_table9_tau_search_finds_nothing():
    s = mq.table9_tau_search()
    assert len(s) == 972 and s.groupby("judge").size().eq(162).all()
    assert list(s.columns) == ["judge", "printed", "coding", "items", "statistic", "n", "value", "distance",
                               "matches"]
    assert not s["matches"].any()
    assert s["statistic"].nunique() == 9 and s["items"].nunique() == 6 and s["coding"].nunique() == 3
    # the standard computation (tau-b on the printed codes, consistent items) is in the table
    row = s.query("judge == 'gpt-4' and statistic == 'Kendall tau-b' and items == 'position-consistent items' "
                  "and coding.str.startswith('codes as printed')", engine="python")
    assert row["value"].iloc[0] == pytest.approx(0.0823593, abs=1e-6)
    # the tau rows show the search: "cause unknown: tried ..." with the count and the closest value
    rows = {r.id: r for r in mq.table19_rows()}
    for judge in mq.JUDGES:
        r = rows[f"table9.{judge}.tau"]
        assert r.status == "differs" and "cause unknown: tried 162 ways" in r.reason and "closest" in r.reason


def test_no_row_compares_with_a_number_the_paper_does_not_print():
    from medeval_kit.datasets.medqg_rounds import load_medqg_rounds

    p = mq.paper()
    rows = (mq.table19_rows() + mq.printed_rows() + mq.rounds_rows(load_medqg_rounds("all", aspects=True))
            + mq.position_rows(pd.DataFrame(columns=["judge", "metric", "estimate", "n"])))
    seen = {r.id for r in rows}
    assert seen == set(p.numbers)
    text = " ".join(f"{r.reason} {r.note} {r.source} {r.quantity}" for r in rows)
    for word in (".csv", ".py", ".yaml", "SOURCE.md", "'inconsistent' dropped", "look swapped"):
        assert word not in text, word


def test_statuses_follow_what_each_check_rests_on():
    from medeval_kit import rounds
    from medeval_kit.datasets.medqg_rounds import load_medqg_rounds

    traces = rounds.fill_best_rounds(load_medqg_rounds("all", aspects=True))
    rows = {r.id: r for r in mq.table19_rows() + mq.printed_rows() + mq.rounds_rows(traces)}
    # Table 2: integer counts exist (consistent), one of them printed cut instead of rounded
    for nid in ("no-filter", "pa-greedy", "ck-greedy", "pa-allcomb", "ck-allcomb"):
        r = rows[f"table2.{nid}.kappa"]
        assert r.status == "consistent" and r.basis == "consistent" and "7 / 29 / 4" in r.how
    assert rows["table2.pa-allcomb.kappa"].match == "truncates"
    assert "no judge counts give it" in rows["table2.pa-greedy.kappa"].note
    # the students: tables built to match the per-arm values; only the pooled kappa is a check that could fail
    assert [rows[f"students.{a}.{q}"].status for a in ("human", "machine") for q in ("pa", "kappa")] == \
        ["consistent"] * 4
    assert rows["students.machine.kappa"].match == "truncates" and rows["students.overall.pa"].status == "consistent"
    assert rows["students.overall.kappa"].status == "reproduced"
    assert {rows[f"table10.expert2.{a}.gpt4"].status for a in ("human", "machine")} == {"differs"}
    # the Introduction's shares against Table 19, with both places named
    assert rows["intro.expert-x.tie"].status == "reproduced"
    for nid in ("intro.expert-x.gpt4-baseline", "intro.expert-x.mcqg-srefine"):
        assert rows[nid].status == "differs" and rows[nid].source.startswith("Introduction")
        assert "Table 10" in rows[nid].cause and "8 GPT-4 / 28 MCQG-SRefine / 4 tie" in rows[nid].cause
    # Table 9: its own denominators, not a swapped column; D.2 split at case 20
    r = rows["table9.gpt-4o.no-pos-bias"]
    assert r.status == "differs" and "10/17" in r.cause and "not simply swapped" in r.cause
    assert "7/14" in rows["d2.gpt-4.comparison-pa"].cause and "5/12" in rows["d2.gpt-4.comparison-pa"].cause
    # Table 8 correlates with the best-scoring round: not recoverable, never a proxy that cannot fail
    assert all(rows[i].status == "not recoverable" for i in rows if i.startswith("table8."))
    # Tables 4-5 totals are the paper's own arithmetic; the two "100%" rows are derived, not printed
    assert all(rows[i].status == "consistent" for i in rows if i.startswith(("table4.", "table5.")))
    assert {i for i, r in rows.items() if r.kind == "derived"} == {"appa.text-rule.consistent",
                                                                   "data.top10.total-score"}


def test_compositions_are_every_tuple_with_the_sum_in_order():
    """The searches behind Table 2 and the students' tables enumerate counts with ``_compositions``: it must give
    exactly the tuples of ``itertools.product`` that have the sum, in the same order."""
    import itertools

    for parts in (1, 2, 3, 4):
        for total in (0, 1, 2, 7, 20, 40) if parts < 4 else (0, 3, 9):
            want = [c for c in itertools.product(range(total + 1), repeat=parts) if sum(c) == total]
            assert list(mq._compositions(total, parts)) == want, (total, parts)
