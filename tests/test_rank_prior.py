"""Rankings on real designs (issue 22, finding 10): a Gaussian prior on the log-strengths ranks judges whose
comparison graph is not strongly connected; without it such a judge gets rows that say why (naming the models
that never win or never lose), and the other judges keep their rankings.

The design is MT-bench's with gpt-4o as judge: every pair includes one model (``x``), and two models (``y``,
``z``) never win.
"""

from __future__ import annotations

import json
import math
from io import StringIO

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from medeval_kit import rank
from medeval_kit.cli import main
from medeval_kit.errors import ParameterError


def _games(judge: str, games: list[tuple[str, str, str, int]]) -> list[dict]:
    rows = []
    for a, b, v, n in games:
        rows += [{"judge": judge, "model_a": a, "model_b": b, "verdict": v}] * n
    return rows


STAR = [("x", "w", "A", 6), ("x", "w", "B", 4), ("x", "y", "A", 5), ("z", "x", "B", 5), ("x", "w", "tie", 2)]
ROUND_ROBIN = [("x", "w", "A", 5), ("x", "w", "B", 3), ("x", "y", "A", 4), ("x", "y", "B", 2), ("x", "z", "A", 4),
               ("x", "z", "B", 1), ("w", "y", "A", 3), ("w", "y", "B", 2), ("w", "z", "A", 3), ("w", "z", "B", 2),
               ("y", "z", "A", 3), ("y", "z", "B", 3), ("y", "z", "tie", 2)]


def _table() -> pd.DataFrame:
    d = pd.DataFrame(_games("gpt-4o", STAR) + _games("physicians", ROUND_ROBIN))
    return d.assign(item=[f"i{k}" for k in range(len(d))])


def _comp() -> pd.DataFrame:
    return rank.comparisons(_table())


def _strength(res, judge):
    r = res.ratings
    return r[(r["judge"] == judge) & (r["metric"] == "strength")].set_index("model")


# --------------------------------------------------------------------------- the library
def test_without_a_prior_the_judge_gets_rows_that_say_why():
    res = rank.rank_models(_comp(), n_boot=50)
    s = _strength(res, "gpt-4o")
    assert len(s) == 4 and s["estimate"].isna().all()  # rows, not a silent drop
    note = s["note"].iloc[0]
    assert "never win: y, z" in note and "prior" in note
    assert _strength(res, "physicians")["estimate"].notna().all()  # the others keep their ranking
    assert "gpt-4o" in res.summary() and "no ranking" in res.summary()


def test_a_prior_ranks_the_star_design_and_says_so():
    res = rank.rank_models(_comp(), n_boot=100, prior=1.0, seed=1)
    s = _strength(res, "gpt-4o")
    assert s["estimate"].notna().all() and s["ci_low"].notna().all() and s["se"].notna().all()
    e = s["estimate"]
    assert e["x"] > e["w"] > e["y"] and e["y"] == pytest.approx(e["z"]) and e.sum() == pytest.approx(0, abs=1e-9)
    assert "never win: y, z" in s["note"].iloc[0]
    assert all("prior 1" in n and "shrunk toward equal strength" in n for n in s["ci_method"])
    assert set(res.ratings["prior"]) == {1.0} and res.prior == 1.0
    assert "prior" in res.summary()
    # the win-probability matrix of the star judge exists too
    assert (res.win_probability["judge"] == "gpt-4o").sum() == 4 * 3


@pytest.mark.parametrize("prior", [0.1, 1.0, 5.0])
def test_bradley_terry_with_a_prior_equals_choix_map_estimate(prior):
    """choix.opt_pairwise minimises -loglik + alpha * sum(theta^2): our N(0, 1/prior) prior is alpha = prior/2."""
    import choix

    comp = _comp()
    res = rank.rank_models(comp, ties="exclude", n_boot=0, prior=prior)
    for judge in ("gpt-4o", "physicians"):
        c = comp[(comp["judge"] == judge) & (comp["verdict"] != "tie")]
        models = list(res.models)
        ix = {m: i for i, m in enumerate(models)}
        data = [(ix[a], ix[b]) if v == "A" else (ix[b], ix[a]) for a, b, v in
                zip(c["model_a"], c["model_b"], c["verdict"])]
        ref = choix.opt_pairwise(len(models), data, alpha=prior / 2, method="Newton-CG", tol=1e-12)
        ours = _strength(res, judge)["estimate"].reindex(models).to_numpy()
        np.testing.assert_allclose(ours, ref - ref.mean(), atol=1e-6)


def test_davidson_with_a_prior_equals_scipy_map_estimate():
    """The penalised Davidson fit = a direct maximisation of loglik - prior/2 * sum(theta^2) (log nu flat)."""
    comp = _comp()
    prior = 0.7
    res = rank.rank_models(comp, ties="davidson", n_boot=0, prior=prior)
    for judge in ("gpt-4o", "physicians"):
        c = comp[comp["judge"] == judge]
        models = list(res.models)
        ix = {m: i for i, m in enumerate(models)}

        def nll(p, c=c, ix=ix):
            th, ln = p[:-1], p[-1]
            out = prior / 2 * np.sum(th ** 2)
            for a, b, v in zip(c["model_a"], c["model_b"], c["verdict"]):
                i, j = ix[a], ix[b]
                z = np.array([th[i], th[j], ln + (th[i] + th[j]) / 2])
                lse = np.log(np.exp(z - z.max()).sum()) + z.max()
                out -= z[{"A": 0, "B": 1, "tie": 2}[v]] - lse
            return out

        ref = optimize.minimize(nll, np.zeros(len(models) + 1), method="BFGS", options={"gtol": 1e-9})
        ours = _strength(res, judge)["estimate"].reindex(models).to_numpy()
        np.testing.assert_allclose(ours, ref.x[:-1], atol=1e-4)
        assert res.log_nu[judge] == pytest.approx(ref.x[-1], abs=1e-4)


def test_a_weak_prior_approaches_the_maximum_likelihood_fit():
    comp = _comp()
    mle = _strength(rank.rank_models(comp, n_boot=0), "physicians")["estimate"]
    weak = _strength(rank.rank_models(comp, n_boot=0, prior=1e-6), "physicians")["estimate"]
    np.testing.assert_allclose(weak, mle, atol=1e-4)
    strong = _strength(rank.rank_models(comp, n_boot=0, prior=100.0), "physicians")["estimate"]
    assert np.abs(strong).max() < np.abs(mle).max() / 5  # shrunk toward equal strength


def test_the_prior_must_be_positive():
    with pytest.raises(ParameterError, match="prior"):
        rank.rank_models(_comp(), n_boot=0, prior=-1.0)
    with pytest.raises(ParameterError, match="prior"):
        rank.rank_models(_comp(), n_boot=0, prior=math.inf)


def test_groups_never_compared_are_named():
    d = pd.DataFrame(_games("j", [("a", "b", "A", 3), ("a", "b", "B", 2), ("c", "d", "A", 2), ("c", "d", "B", 2)]))
    res = rank.rank_models(rank.comparisons(d.assign(item=range(len(d)))), n_boot=0)
    note = _strength(res, "j")["note"].iloc[0]
    assert "never compared" in note and "a, b" in note and "c, d" in note


# --------------------------------------------------------------------------- medeval rank
def _file(tmp_path, df=None):
    p = tmp_path / "verdicts.csv"
    (df if df is not None else _table()).to_csv(p, index=False)
    return p


def test_cli_without_a_prior_prints_the_reason_and_ranks_the_others(tmp_path, capsys):
    p = _file(tmp_path)
    rc = main(["rank", str(p), "--n-boot", "50"])
    out, err = capsys.readouterr()
    assert rc == 0 and "Traceback" not in err
    assert "gpt-4o" in out and "never win: y, z" in out and "--prior" in out
    assert "gpt-4o" in err and "--prior" in err  # said once on stderr as well
    rc = main(["rank", str(p), "--n-boot", "0", "--format", "json"])
    js = json.loads(capsys.readouterr().out)
    star = [r for r in js["ratings"] if r["judge"] == "gpt-4o"]
    assert rc == 0 and len(star) == 8 and all(r["estimate"] is None and "never win" in r["note"] for r in star)


def test_cli_only_unrankable_judges_exit_non_zero(tmp_path, capsys):
    p = _file(tmp_path, _table().query("judge == 'gpt-4o'"))
    rc = main(["rank", str(p), "--n-boot", "0"])
    out, err = capsys.readouterr()
    assert rc == 1 and "never win: y, z" in out and "--prior" in err


def test_cli_prior_ranks_every_judge_and_states_the_shrinkage(tmp_path, capsys):
    p = _file(tmp_path)
    rc = main(["rank", str(p), "--n-boot", "50", "--prior", "1"])
    out, err = capsys.readouterr()
    assert rc == 0 and "with prior 1" in out and "shrunk toward equal strength" in out
    assert "NaN" not in out
    rc = main(["rank", str(p), "--n-boot", "50", "--prior", "1", "--format", "csv"])
    t = pd.read_csv(StringIO(capsys.readouterr().out))
    assert rc == 0 and t["estimate"].notna().all() and set(t["prior"]) == {1.0}
    assert main(["rank", str(p), "--prior", "0"]) == 2
    assert "--prior" in capsys.readouterr().err


def test_reference_tables_keep_the_unranked_judge_with_its_reason(tmp_path, capsys):
    p = _file(tmp_path)
    rc = main(["rank", str(p), "--n-boot", "50", "--reference", "physicians", "--format", "json"])
    js = json.loads(capsys.readouterr().out)
    assert rc == 0
    ag = [r for r in js["agreement"] if r["judge"] == "gpt-4o"]
    fl = [r for r in js["flips"] if r["judge"] == "gpt-4o"]
    assert ag and all(r["estimate"] is None and "never win: y, z" in r["note"] for r in ag)
    assert len(fl) == 1 and fl[0]["estimate"] is None and "never win: y, z" in fl[0]["note"]
    rc = main(["rank", str(p), "--n-boot", "50", "--reference", "physicians", "--prior", "1", "--format", "json"])
    js = json.loads(capsys.readouterr().out)
    assert rc == 0 and all(r["estimate"] is not None for r in js["agreement"] if r["metric"] == "kendall_tau")
