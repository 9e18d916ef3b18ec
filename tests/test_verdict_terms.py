"""Verdict vocabularies of ``medeval rank`` and ``medeval position-bias`` (issue 22, finding 4).

``model_a``/``model_b``/``tie`` (Chatbot Arena, MT-bench) and lower-case ``a``/``b`` are verdicts, not
parse failures: the commands read them with ``--verdict-terms arena`` / ``model-any-case`` and their errors
name that option, never ``--failed``. ``--failed`` tokens that leave nothing to score are an error, never an
all-NaN table with exit code 0.
"""

from __future__ import annotations

import argparse
import json

import pandas as pd
import pytest

from medeval_kit import bias, rank
from medeval_kit.bias import inputs
from medeval_kit.cli import main
from medeval_kit.errors import SchemaError

# --------------------------------------------------------------------------- a small hand-made verdicts table
# four models, every pair judged both ways round, winners chosen by hand so the graph is strongly connected
GAMES = [  # model_a, model_b, winner in A/B terms
    ("w", "x", "A"), ("x", "w", "B"), ("w", "x", "B"), ("w", "y", "A"), ("y", "w", "B"), ("w", "z", "A"),
    ("x", "y", "A"), ("y", "x", "A"), ("x", "z", "A"), ("z", "x", "tie"), ("y", "z", "A"), ("z", "y", "A"),
    ("w", "z", "tie"), ("z", "w", "A"), ("x", "y", "B"), ("y", "z", "B"),
]
ARENA = {"A": "model_a", "B": "model_b", "tie": "tie"}


def _verdicts(words=None) -> pd.DataFrame:
    words = words or {}
    return pd.DataFrame({"item": [f"i{k}" for k in range(len(GAMES))], "model_a": [g[0] for g in GAMES],
                         "model_b": [g[1] for g in GAMES], "verdict": [words.get(g[2], g[2]) for g in GAMES]})


def _run(capsys, argv):
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _csv(tmp_path, df, name="v.csv"):
    p = tmp_path / name
    df.to_csv(p, index=False)
    return p


# --------------------------------------------------------------------------- medeval rank
def test_rank_reads_arena_words_with_verdict_terms_arena(tmp_path, capsys):
    ab = _csv(tmp_path, _verdicts(), "ab.csv")
    arena = _csv(tmp_path, _verdicts(ARENA), "arena.csv")
    rc1, want, _ = _run(capsys, ["rank", ab, "--n-boot", 50, "--format", "csv"])
    rc2, got, _ = _run(capsys, ["rank", arena, "--n-boot", 50, "--format", "csv", "--verdict-terms", "arena"])
    assert rc1 == rc2 == 0 and got == want
    t = pd.read_csv(pd.io.common.StringIO(got))
    assert t.loc[t["metric"] == "strength", "estimate"].notna().all()


def test_rank_error_on_arena_words_names_the_option_not_failed(tmp_path, capsys):
    arena = _csv(tmp_path, _verdicts(ARENA))
    rc, out, err = _run(capsys, ["rank", arena, "--n-boot", 0])
    assert rc == 2 and out == ""
    assert "--verdict-terms arena" in err and "model_a/model_b/tie" in err
    assert "--failed" not in err


def test_rank_failed_tokens_that_cover_every_verdict_are_an_error(tmp_path, capsys):
    """Following the old hint (--failed model_a model_b) left only a tie: an all-NaN table with exit code 0."""
    arena = _csv(tmp_path, _verdicts(ARENA))
    rc, out, err = _run(capsys, ["rank", arena, "--n-boot", 0, "--failed", "model_a", "model_b"])
    assert rc != 0 and "NaN" not in out
    assert "--failed" in err and "nothing" in err and "--verdict-terms arena" in err
    rc, out, err = _run(capsys, ["rank", arena, "--n-boot", 0, "--failed", "model_a", "model_b", "tie"])
    assert rc != 0 and out == "" and "nothing" in err


def test_rank_lower_case_a_b_needs_the_explicit_option(tmp_path, capsys):
    low = _csv(tmp_path, _verdicts({"A": "a", "B": "b"}))
    rc, _, err = _run(capsys, ["rank", low, "--n-boot", 0])
    assert rc == 2 and "--verdict-terms model-any-case" in err and "--failed" not in err
    ab = _csv(tmp_path, _verdicts(), "ab.csv")
    rc1, want, _ = _run(capsys, ["rank", ab, "--n-boot", 20, "--format", "csv"])
    rc2, got, _ = _run(capsys, ["rank", low, "--n-boot", 20, "--format", "csv", "--verdict-terms", "model-any-case"])
    assert rc1 == rc2 == 0 and got == want


def test_rank_unknown_tokens_still_suggest_failed_for_those_only(tmp_path, capsys):
    df = _verdicts(ARENA)
    df.loc[[2, 5], "verdict"] = ["error", "ERR"]
    p = _csv(tmp_path, df)
    rc, _, err = _run(capsys, ["rank", p, "--n-boot", 0, "--verdict-terms", "arena"])
    assert rc == 2 and "rows [2, 5]" in err and "--failed ERR error" in err
    rc, _, err = _run(capsys, ["rank", p, "--n-boot", 0])  # both problems: each gets its own advice
    assert rc == 2 and "--verdict-terms arena" in err and "--failed ERR error" in err
    assert "--failed ERR error model_a" not in err and "model_a model_b" not in err.split("--failed")[1]


def test_rank_library_verdict_terms():
    c = rank.comparisons(_verdicts(ARENA).assign(verdict=lambda d: d["verdict"].replace({"tie": "tie (bothbad)"})),
                         verdict_terms="arena")
    want = rank.comparisons(_verdicts())
    assert list(c["verdict"]) == list(want["verdict"])
    with pytest.raises(SchemaError) as e:
        rank.comparisons(_verdicts(ARENA))
    assert "verdict_terms='arena'" in str(e.value) and "failed=" not in str(e.value)
    low = rank.comparisons(_verdicts({"A": "a", "B": "b"}), verdict_terms="model-any-case")
    assert list(low["verdict"]) == list(want["verdict"])
    # the winner's own name is read in every vocabulary
    named = _verdicts(ARENA)
    named.loc[0, "verdict"] = named.loc[0, "model_a"]
    assert rank.comparisons(named, verdict_terms="arena")["verdict"].iloc[0] == "A"
    with pytest.raises(Exception, match="verdict_terms"):
        rank.comparisons(_verdicts(), verdict_terms="slot")  # rank has no presented slots
    with pytest.raises(SchemaError, match="nothing"):
        rank.comparisons(_verdicts(ARENA), failed=["model_a", "model_b"])


# --------------------------------------------------------------------------- medeval position-bias
PB = [  # item, order, verdict in A/B terms
    ("p1", "AB", "A"), ("p1", "BA", "A"), ("p2", "AB", "A"), ("p2", "BA", "B"), ("p3", "AB", "B"),
    ("p3", "BA", "A"), ("p4", "AB", "tie"), ("p4", "BA", "tie"), ("p5", "AB", "B"), ("p5", "BA", "B"),
]


def _pb(words=None) -> pd.DataFrame:
    words = words or {}
    return pd.DataFrame({"item": [r[0] for r in PB], "order": [r[1] for r in PB],
                         "verdict": [words.get(r[2], r[2]) for r in PB]})


@pytest.mark.parametrize("terms, words", [("model-any-case", {"A": "a", "B": "b"}),
                                          ("model-any-case", {"A": "a", "B": "B", "tie": "TIE"}),
                                          ("arena", ARENA),
                                          ("arena", {"A": "model_a", "B": "model_b", "tie": "tie (bothbad)"})])
def test_position_bias_reads_the_vocabularies(tmp_path, capsys, terms, words):
    ab = _csv(tmp_path, _pb(), "ab.csv")
    other = _csv(tmp_path, _pb(words), "other.csv")
    rc1, want, _ = _run(capsys, ["position-bias", ab, "--verdict-terms", "model", "--n-boot", 0, "--format", "json"])
    rc2, got, _ = _run(capsys, ["position-bias", other, "--verdict-terms", terms, "--n-boot", 0, "--format", "json"])
    assert rc1 == rc2 == 0 and got == want
    (r,) = json.loads(got)
    assert r["n_items"] == 5 and r["consistency"] == pytest.approx(3 / 5)


@pytest.mark.parametrize("given", [None, "slot", "model"])
def test_position_bias_lower_case_hint_names_the_option_not_failed(tmp_path, capsys, given):
    low = _csv(tmp_path, _pb({"A": "a", "B": "b"}))
    rc, out, err = _run(capsys, ["position-bias", low, "--n-boot", 0]
                        + (["--verdict-terms", given] if given else []))
    assert rc == 2 and out == ""
    assert "--verdict-terms model-any-case" in err and "--failed" not in err


def test_position_bias_arena_hint(tmp_path, capsys):
    p = _csv(tmp_path, _pb(ARENA))
    rc, _, err = _run(capsys, ["position-bias", p, "--n-boot", 0, "--verdict-terms", "model"])
    assert rc == 2 and "--verdict-terms arena" in err and "model_a/model_b/tie" in err and "--failed" not in err


def test_position_bias_failed_tokens_that_cover_every_verdict_are_an_error(tmp_path, capsys):
    low = _csv(tmp_path, _pb({"A": "a", "B": "b", "tie": "c"}))
    rc, out, err = _run(capsys, ["position-bias", low, "--n-boot", 0, "--failed", "a", "b", "c"])
    assert rc != 0 and "nan" not in out.lower()
    assert "--failed" in err and "nothing" in err
    # the old hint (--failed a b) left only the ties: all-NaN rates with exit code 0
    low = _csv(tmp_path, _pb({"A": "a", "B": "b"}), "ties_left.csv")
    rc, out, err = _run(capsys, ["position-bias", low, "--n-boot", 0, "--failed", "a", "b"])
    assert rc != 0 and out == "" and "nothing" in err and "--verdict-terms model-any-case" in err
    # ties alone, with no failure tokens, are a verdict: a tie rate of 1
    ties = _csv(tmp_path, _pb({"A": "tie", "B": "tie"}), "ties.csv")
    rc, out, _ = _run(capsys, ["position-bias", ties, "--n-boot", 0, "--verdict-terms", "model", "--format", "json"])
    assert rc == 0 and json.loads(out)[0]["consistency"] == 1


def test_position_bias_library_verdict_terms(tmp_path):
    d = _pb(ARENA).assign(judge="j", criterion="overall")
    res = bias.position_bias(d, verdict_terms="arena", n_boot=0)  # no slot_verdict column: read from verdict
    want = bias.position_bias(_pb().assign(judge="j", criterion="overall"), n_boot=0)
    pd.testing.assert_frame_equal(res, want)
    with pytest.raises(SchemaError, match="set verdict_terms to arena"):
        bias.position_bias(d, n_boot=0)
    with pytest.raises(SchemaError, match="set verdict_terms to arena") as e:  # the error names your column
        bias.position_bias(d.rename(columns={"verdict": "winner"}), n_boot=0, columns={"verdict": "winner"})
    assert e.value.column == "winner"
    with pytest.warns(DeprecationWarning, match=r"slot_verdict=None\) is deprecated"):  # the old "no such column"
        old = bias.position_bias(d, slot_verdict=None, verdict="verdict", verdict_terms="arena", n_boot=0)
    pd.testing.assert_frame_equal(old, res)
    p = _csv(tmp_path, _pb({"A": "a", "B": "b"}))
    j = bias.read_judgments(p, verdict_terms="model-any-case")
    assert list(j["verdict"]) == [r[2] for r in PB]
    with pytest.raises(SchemaError) as e:
        bias.read_judgments(p)
    assert "set verdict_terms to model-any-case" in str(e.value) and "failed=" not in str(e.value)
    with pytest.raises(SchemaError, match="nothing"):
        bias.read_judgments(p, verdict_terms="model-any-case", failed=["a", "b", "tie"])


def test_read_judgments_is_the_one_reader_and_the_old_names_warn(tmp_path):
    """Issue 24: read_judgments(path, columns=...) does what user_judgments did; the old names work for one
    release (user_judgments; read_judgments(path, text_columns=...), the raw file) with a warning."""
    p = _csv(tmp_path, _pb().rename(columns={"item": "case", "verdict": "winner"}))
    cols = {"item": "case", "verdict": "winner"}
    j = bias.read_judgments(p, columns=cols)
    assert {"item", "verdict", "slot_verdict", "parse_status", "protocol"} <= set(j.columns)
    with pytest.warns(DeprecationWarning, match="deprecated") as caught:
        old = bias.user_judgments(p, item="case", verdict="winner")
    assert any("bias.user_judgments is deprecated" in str(w.message) for w in caught)
    pd.testing.assert_frame_equal(old, j)
    assert "user_judgments" not in bias.__all__
    with pytest.warns(DeprecationWarning, match="text_columns"):
        raw = bias.read_judgments(p, text_columns=["winner"])
    assert list(raw.columns) == list(pd.read_csv(p).columns)
    with pytest.warns(DeprecationWarning, match="default_protocol"):
        assert set(bias.read_judgments(p, columns=cols, protocol="pairwise_mec")["protocol"]) == {"pairwise_mec"}
    with pytest.raises(SchemaError, match=r"\['nope'\] not found") as e:
        bias.read_judgments(p, columns={**cols, "judge": "nope"})
    assert e.value.column == "nope"


# --------------------------------------------------------------------------- one name, one meaning
def _choices(command: str) -> dict[str, str]:
    from medeval_kit.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    act = next(a for a in sub.choices[command]._actions if "--verdict-terms" in a.option_strings)
    return {c: act.help for c in act.choices}


def test_verdict_terms_mean_the_same_in_both_commands():
    r, p = _choices("rank"), _choices("position-bias")
    assert set(r) == {"model", "model-any-case", "arena"} and set(p) == set(r) | {"slot"}
    for name, meaning in inputs.VERDICT_TERMS.items():  # every choice is described once, in both helps
        assert name in p and meaning in p[name]
        if name in r:
            assert meaning in r[name]


def test_the_vocabularies_map_to_model_terms():
    cells = pd.Series(["A", "b", "model_a", "MODEL_B", "Tie", "tie (bothbad)", "neither", None])
    got = {t: list(inputs.model_terms(cells, t)) for t in ("model", "model-any-case", "arena")}
    assert got["model"] == ["A", "?", "?", "?", "tie", "?", "neither", None]
    assert got["model-any-case"] == ["A", "B", "?", "?", "tie", "?", "neither", None]
    assert got["arena"] == ["?", "?", "A", "B", "tie", "tie", "neither", None]
    assert inputs.guess_verdict_terms(["model_a", "tie"]) == ["arena"]
