"""Validation and timing of "can this judge replace the humans?" (judge_vs_humans, alt-test).

1. Equal-noise coverage: judges with exactly the humans' noise (true delta = 0), >= 200
   replications per panel shape (3 dense humans, 2 humans, a sparse panel of 60 raters with 2-4
   labels per item), every design. An unbiased design covers 0 in about 95% of replications;
   MedQADE's design does not.
   Side by side: the simulation's fast path (the default) against its reference path
   (``fast_path=False``: judge_vs_humans per panel and design) on ``--compare-reps`` replications,
   their seconds, the ratio, and whether the two tables are identical (they must be).
2. Timing of both commands on a 120-item sparse panel with 107 raters, 2-4 labels per item,
   B = 2,000, measured in-process and as a fresh `medeval` process.

    python benchmarks/bench_judge_validation.py [--reps 200] [--n-boot 500] [--items 150] [--compare-reps 20]
Prints measured figures; nothing is asserted.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200, help="replications per panel shape")
    ap.add_argument("--n-boot", type=int, default=500, help="bootstrap resamples per replication")
    ap.add_argument("--items", type=int, default=150, help="items per simulated panel")
    ap.add_argument("--kappa", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-coverage", action="store_true")
    ap.add_argument("--compare-reps", type=int, default=20,
                    help="replications of the fast-vs-reference comparison (0 skips it)")
    args = ap.parse_args(argv)

    import pandas as pd

    from medeval_kit import agreement as ag
    from medeval_kit.datasets.synthetic import synthetic_panel

    if not args.skip_coverage:
        t0 = time.perf_counter()
        cov = ag.equal_noise_coverage(args.reps, n_items=args.items, kappa=args.kappa, n_boot=args.n_boot,
                                      seed=args.seed, progress=True)
        dt = time.perf_counter() - t0
        print(f"\nEqual-noise coverage of delta's 95% CI (true delta = 0): {args.reps} replications per panel, "
              f"{args.items} items, kappa {args.kappa}, B = {args.n_boot}; {dt:.0f} s")
        show = cov[["panel", "design", "n_items", "n_covered", "estimate", "ci_low", "ci_high", "mean_delta"]].rename(
            columns={"n_items": "n_valid", "estimate": "coverage"})
        with pd.option_context("display.width", 160):
            print(show.round(4).to_string(index=False))
        if args.compare_reps:
            kw = dict(n_items=args.items, kappa=args.kappa, n_boot=args.n_boot, seed=args.seed)
            t0 = time.perf_counter()
            ref = ag.equal_noise_coverage(args.compare_reps, fast_path=False, **kw)
            t_ref = time.perf_counter() - t0
            t0 = time.perf_counter()
            fast = ag.equal_noise_coverage(args.compare_reps, **kw)
            t_fast = time.perf_counter() - t0
            same = ref.equals(fast)  # exact: every float, count and note
            print(f"\nFast path vs reference path (judge_vs_humans per design), {args.compare_reps} replications: "
                  f"{t_fast:.2f} s vs {t_ref:.2f} s ({t_ref / t_fast:.0f}x); identical tables: {same}")

    t = synthetic_panel(n_items=120, n_humans=107, n_judges=2, labels_per_item=(2, 4), kappa=args.kappa, seed=1)
    print(f"\nSparse panel: {t['item'].nunique()} items, {t['rater'].nunique()} raters "
          f"({t[t.rater_kind == 'human'].rater.nunique()} humans with labels, 2 judges), {len(t)} labels, B = 2000")
    for design in ("loo", "pooled"):
        t0 = time.perf_counter()
        ag.judge_vs_humans(t, design=design, n_boot=2000)
        print(f"  judge_vs_humans(design={design!r}) in-process: {time.perf_counter() - t0:.2f} s")
    t0 = time.perf_counter()
    ag.alt_test(t)
    print(f"  alt_test in-process: {time.perf_counter() - t0:.2f} s")
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "sparse.csv"
        t.to_csv(f, index=False)
        for cmd in (["judge-vs-humans", str(f), "--n-boot", "2000"],
                    ["agreement", str(f), "--ceiling", "--pairwise", "--n-boot", "2000"],
                    ["alt-test", str(f)]):
            t0 = time.perf_counter()
            rc = subprocess.call([sys.executable, "-m", "medeval_kit.cli", *cmd], stdout=subprocess.DEVNULL)
            print(f"  medeval {cmd[0]} ... (fresh process, incl. imports): {time.perf_counter() - t0:.2f} s, exit {rc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
