"""Benchmark: bootstrap CI of Krippendorff's alpha, vectorised vs a loop of ``krippendorff.alpha``.

Data: 20 raters x 5,000 items, 10% of labels missing, 5 categories; 2,000 item resamples.
The loop baseline calls ``krippendorff.alpha`` once per resample on the same resampled items;
it is timed on a subset of the resamples and extrapolated (printed as such), and its values are
compared with ours on that subset. Prints measured figures; nothing is asserted.

    python benchmarks/bench_agreement.py [--levels nominal ordinal interval] [--loop-subset 40]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raters", type=int, default=20)
    ap.add_argument("--items", type=int, default=5000)
    ap.add_argument("--missing", type=float, default=0.10)
    ap.add_argument("--categories", type=int, default=5)
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--loop-subset", type=int, default=40, help="resamples timed for the loop baseline")
    ap.add_argument("--levels", nargs="+", default=["nominal", "ordinal", "interval"])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    import krippendorff

    from medeval_kit.agreement.alpha import alpha_stat
    from medeval_kit.agreement.engine import point, replicates
    from medeval_kit.stats import interval

    rng = np.random.default_rng(args.seed)
    n, R, K = args.items, args.raters, args.categories
    truth = rng.integers(0, K, n)
    codes = np.where(rng.random((n, R)) < 0.6, truth[:, None], rng.integers(0, K, (n, R)))
    codes[rng.random(codes.shape) < args.missing] = -1
    M = np.where(codes < 0, np.nan, codes + 1.0)  # values 1..K for the oracle
    print(f"data: {R} raters x {n} items, {100 * (codes < 0).mean():.1f}% missing, {K} categories; "
          f"B = {args.n_boot} resamples of items")
    print(f"{'level':<9} {'ours (s)':>9} {'loop (s, extrap.)':>18} {'ratio':>8} {'max |diff|':>11}  point estimate")
    for level in args.levels:
        t0 = time.perf_counter()
        st = alpha_stat(codes, K, level, np.arange(1, K + 1, dtype=float))
        est = point(st)
        reps = replicates([st], args.n_boot, seed=args.seed)[:, 0]
        lo, hi, _ = interval(est, reps, 0.95, "percentile")
        ours = time.perf_counter() - t0

        g = np.random.default_rng(args.seed)
        chunk = max(1, min(args.n_boot, int(4e6 // n)))
        idx = g.integers(0, n, size=(chunk, n))[: args.loop_subset]  # the first resamples we drew
        t0 = time.perf_counter()
        loop_vals = [krippendorff.alpha(reliability_data=M[row].T, level_of_measurement=level) for row in idx]
        loop_sub = time.perf_counter() - t0
        loop_full = loop_sub * args.n_boot / len(idx)
        diff = float(np.max(np.abs(np.asarray(loop_vals) - reps[: len(idx)])))
        oracle = krippendorff.alpha(reliability_data=M.T, level_of_measurement=level)
        print(f"{level:<9} {ours:>9.2f} {loop_full:>18.1f} {loop_full / ours:>7.0f}x {diff:>11.1e}  "
              f"{est:.6f} (oracle {oracle:.6f}) 95% CI [{lo:.4f}, {hi:.4f}]")
    import pandas as pd

    from medeval_kit.agreement import krippendorff_alpha

    long = pd.DataFrame({"item": np.repeat(np.arange(n).astype(str), R), "rater": np.tile([f"r{j}" for j in range(R)], n),
                         "label": codes.ravel() + 1})
    long = long[codes.ravel() >= 0]
    t0 = time.perf_counter()
    res = krippendorff_alpha(long, level="nominal", n_boot=args.n_boot, seed=args.seed)
    print(f"end to end through the public API (long table of {len(long):,} rows -> checks -> alpha + "
          f"{args.n_boot} resamples): {time.perf_counter() - t0:.2f} s; {res.summary()}")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"loop baseline: timed on the first {args.loop_subset} of {args.n_boot} resamples and extrapolated "
          f"linearly; values compared on those resamples.")
    print(f"peak memory (max RSS of this process, incl. the loop baseline): {peak_mb:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
