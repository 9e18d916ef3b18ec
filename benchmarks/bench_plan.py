"""Benchmark: ``medeval plan``'s simulations, the fast path against the study's own functions on every panel.

1. ``judge-vs-humans``: :func:`plan_judge_vs_humans` for one judge and the reference judge (3 physicians,
   pairwise kappa 0.6, margin 0.15, 200 panels per n, 200 resamples each), leave-one-out and pooled. ``fast``
   reads each simulated panel's verdict from its code matrix; ``reference`` (``fast_path=False``) runs
   ``judge_vs_humans`` on every panel's table.
2. ``alt-test``: :func:`plan_alt_test` for a judge at 85% and the reference (physicians at 80%, epsilon 0.2,
   200 panels per n), with its epsilon table.

Rounds alternate fast and reference in one process (``--rounds``, default 1); the medians of the CPU times are
printed with their ratio, and whether the two plans are identical (they must be: the tests check it too).

    python benchmarks/bench_plan.py [--cases judge-vs-humans alt-test] [--rounds 1] [--n-sim 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from medeval_kit.agreement.alt_test_planning import plan_alt_test  # noqa: E402
from medeval_kit.agreement.panel_model import panel_model_from  # noqa: E402
from medeval_kit.agreement.planning import plan_judge_vs_humans  # noqa: E402


def _same(a, b) -> bool:
    frames = [(a.table, b.table), (a.planned, b.planned)]
    if a.epsilon is not None:
        frames += [(a.epsilon, b.epsilon), (a.epsilon_planned, b.epsilon_planned)]
    try:
        for x, y in frames:
            pd.testing.assert_frame_equal(x, y, check_exact=True)
    except AssertionError:
        return False
    return True


def _timed(fn):
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def bench(label: str, run, rounds: int) -> None:
    times = {"fast": [], "reference": []}
    same = True
    for _ in range(rounds):
        tf, a = _timed(lambda: run(True))
        tr, b = _timed(lambda: run(False))
        times["fast"].append(tf)
        times["reference"].append(tr)
        same &= _same(a, b)
    f, r = statistics.median(times["fast"]), statistics.median(times["reference"])
    planned = ", ".join(f"{p.judge}: {p.planned_n:g}" for p in a.planned.itertuples())
    print(f"{label}: fast {f:.1f} s, reference {r:.1f} s (fast / reference = {f / r:.2f}; CPU time, median of "
          f"{rounds} round(s)); {int(a.table['n_sim'].sum() / len(a.model.judges))} panels simulated; "
          f"planned n {planned}; plans identical: {'yes' if same else 'NO'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", default=["judge-vs-humans", "alt-test"],
                    choices=["judge-vs-humans", "alt-test"])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--n-sim", type=int, default=200)
    args = ap.parse_args(argv)
    import statsmodels.api  # noqa: F401 - imported by the first probit fit; outside the timing

    if "judge-vs-humans" in args.cases:
        m = panel_model_from(kappa=0.6, n_physicians=3)
        for design in ("loo", "pooled"):
            bench(f"plan judge-vs-humans ({design})",
                  lambda fast, d=design: plan_judge_vs_humans(m, 0.15, 0.8, design=d, n_sim=args.n_sim, fast_path=fast),
                  args.rounds)
    if "alt-test" in args.cases:
        m = panel_model_from(accuracy_humans=0.8, accuracy_judge=0.85, n_physicians=3)
        bench("plan alt-test", lambda fast: plan_alt_test(m, 0.2, 0.8, n_sim=args.n_sim, fast_path=fast),
              args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
