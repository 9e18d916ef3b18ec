"""Issue 22, "hints are tested": every flag a command names in its output is a flag that command accepts.

Each verdict command is run on a battery of realistic mistakes (files from Excel, dirty labels, wrong
columns, other verdict vocabularies). Every ``--flag`` in what it prints, stdout and stderr, must be
one of its own options: on main, judge-vs-humans suggested ``--criterion``, alt-test
``--normalize-labels`` and rank ``--failed model_a model_b``, none of which helped.
"""

from __future__ import annotations

import argparse
import re

import numpy as np
import pandas as pd
import pytest

from medeval_kit.cli import build_parser, main

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _options(argv: list[str]) -> set[str]:
    """The option strings of the (sub)command that ``argv`` runs."""
    parser = build_parser()
    words = [a for a in argv if not a.startswith("-")]
    for w in words:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or w not in subs[0].choices:
            break
        parser = subs[0].choices[w]
    return {s for a in parser._actions for s in a.option_strings}


def _flags_named(argv, capsys) -> tuple[int, set[str], str]:
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse: an unknown flag in the battery itself is a test bug
        code = exc.code
    cap = capsys.readouterr()
    text = cap.out + cap.err
    return code, set(FLAG.findall(text)), text


def _write(path, rows, **kw):
    pd.DataFrame(rows).to_csv(path, index=False, **kw)
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("hints")
    rng = np.random.default_rng(0)
    raters = ("h1", "h2", "h3", "judge")
    ann = [dict(item=i, rater=r, rater_kind="llm" if r == "judge" else "human",
                label=rng.choice(["yes", "no", "unsure"])) for i in range(40) for r in raters]
    out = {"clean": _write(d / "clean.csv", ann)}
    case = [dict(r, label=r["label"].upper() if r["rater"] == "h1" else r["label"]) for r in ann]
    out["case"] = _write(d / "case.csv", case)
    out["na"] = _write(d / "na.csv", [dict(r, label="NA") if k == 5 else r for k, r in enumerate(ann)])
    out["typo"] = _write(d / "typo.csv", [dict(r, label="yse") if k == 9 else r for k, r in enumerate(ann)])
    out["dup"] = _write(d / "dup.csv", ann + [dict(ann[0], label="no")])
    out["nokind"] = _write(d / "nokind.csv", [{k: v for k, v in r.items() if k != "rater_kind"} for r in ann])
    nums = [dict(r, label=str(rng.integers(1, 6))) for r in ann]
    nums[11]["label"] = "3,5"
    out["decimal_comma"] = _write(d / "decimal_comma.csv", nums)
    out["semicolon"] = _write(d / "semicolon.csv", ann, sep=";")
    win = d / "win.csv"
    win.write_bytes("item,rater,label\n1,Dr. Müller,ja\n1,Dr. Weiß,nein\n".encode("cp1252"))
    out["cp1252"] = win
    pairs = [dict(item=i, model_a="m1", model_b=f"m{2 + i % 3}", verdict=rng.choice(["A", "B", "tie"]))
             for i in range(30)]
    out["verdicts"] = _write(d / "verdicts.csv", pairs)
    out["verdicts_model"] = _write(d / "verdicts_model.csv", [
        dict(p, verdict={"A": "model_a", "B": "model_b", "tie": "tie"}[p["verdict"]]) for p in pairs])
    out["verdicts_lower"] = _write(d / "verdicts_lower.csv", [dict(p, verdict=p["verdict"].lower()) for p in pairs])
    orders = [dict(item=i, order=o, verdict=rng.choice(["A", "B", "tie"])) for i in range(20) for o in ("AB", "BA")]
    out["orders_lower"] = _write(d / "orders_lower.csv", [dict(r, verdict=r["verdict"].lower()) for r in orders])
    out["orders_model"] = _write(d / "orders_model.csv", [
        dict(r, verdict={"A": "model_a", "B": "model_b", "tie": "tie"}[r["verdict"]]) for r in orders])
    out["orders_semicolon"] = _write(d / "orders_semicolon.csv", orders, sep=";")
    return out


ANNOTATION_FILES = ("clean", "case", "na", "typo", "dup", "nokind", "decimal_comma", "semicolon", "cp1252")
CASES = (
    [(["agreement", f, "--n-boot", "0"], f) for f in ANNOTATION_FILES]
    + [(["agreement", f, "--n-boot", "0", "--level", "ordinal"], f) for f in ("clean", "case")]
    + [(["agreement", f, "--n-boot", "0", "--ceiling"], f) for f in ("clean", "nokind")]
    + [(["judge-vs-humans", f, "--n-boot", "50"], f) for f in ANNOTATION_FILES]
    + [(["alt-test", f, "--min-items-per-human", "10"], f) for f in ANNOTATION_FILES]
    + [(["alt-test", "clean", "--epsilon", "-1"], "clean")]
    + [(["rank", f, "--n-boot", "0"], f) for f in ("verdicts", "verdicts_model", "verdicts_lower", "semicolon")]
    + [(["position-bias", f, "--n-boot", "0"], f) for f in ("orders_lower", "orders_model", "orders_semicolon")]
    + [(["position-bias", f, "--n-boot", "0", "--verdict-terms", "model"], f) for f in ("orders_lower",)]
    + [(["items", f], f) for f in ("semicolon", "clean")]
)


@pytest.mark.parametrize("argv, name", CASES, ids=[" ".join(a[:1] + [n] + a[2:]) for a, n in CASES])
def test_every_flag_a_command_names_is_one_it_accepts(files, capsys, argv, name):
    argv = [str(files[name]) if a == name else a for a in argv]
    code, named, text = _flags_named(argv, capsys)
    assert "Traceback" not in text
    unknown = named - _options(argv)
    assert not unknown, f"{argv[0]} names {sorted(unknown)}, which it does not accept:\n{text}"


def test_the_battery_does_produce_hints(files, capsys):
    """The test above is not vacuous: the battery makes the commands name flags."""
    seen = set()
    for argv, name in CASES:
        argv = [str(files[name]) if a == name else a for a in argv]
        seen |= _flags_named(argv, capsys)[1]
    assert {"--sep", "--encoding", "--normalize-labels", "--missing", "--categories"} <= seen
