"""Benchmark: agreement on large files, and the vectorised bootstrap of Krippendorff's alpha.

1. ``large``: 1,000,000 annotation rows (100,000 items x 10 raters, 3 labels, CSV) through
   ``medeval agreement FILE --n-boot 2000`` (default metrics), each run a fresh process as a user
   would start it. One warm-up run, then the best of 3: wall time and the process's peak memory
   (max RSS). ``--baseline-rev REV`` (or ``--baseline DIR``, a folder holding an older
   ``medeval_kit``) times the same command on that version side by side and prints the ratio.
2. ``alpha``: bootstrap CI of Krippendorff's alpha, vectorised vs a loop of ``krippendorff.alpha``.
   Data: 20 raters x 5,000 items, 10% of labels missing, 5 categories; 2,000 item resamples. The
   loop baseline calls ``krippendorff.alpha`` once per resample on the same resampled items; it is
   timed on a subset of the resamples and extrapolated (printed as such), and its values are
   compared with ours on that subset.

Prints measured figures; nothing is asserted.

    python benchmarks/bench_agreement.py [--cases large alpha] [--baseline-rev HEAD~1] [--levels nominal]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

# A child reports its own peak memory: ru_maxrss of this process, in KB on Linux.
_CHILD = """import resource, sys
from medeval_kit.cli import main
rc = main(sys.argv[1:])
print(f"MAXRSS_KB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
sys.exit(rc)
"""


def write_large(path: Path, items: int, raters: int, seed: int = 0) -> int:
    """Write the long annotations CSV (3 labels, 60% of labels equal an item's true label); return its rows."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, items)
    codes = np.where(rng.random((items, raters)) < 0.6, truth[:, None], rng.integers(0, 3, (items, raters)))
    labels = np.array(["low", "medium", "high"])[codes.ravel()]
    item = np.repeat(np.char.add("item", np.arange(items).astype(str)), raters)
    rater = np.tile(np.char.add("rater", np.arange(raters).astype(str)), items)
    with path.open("w") as fh:
        fh.write("item,rater,label\n")
        np.savetxt(fh, np.column_stack([item, rater, labels]), fmt="%s", delimiter=",")
    return items * raters


def run_cli(args: list[str], package_dir: Path | None = None) -> tuple[float, float, str]:
    """(wall seconds, peak MB, stdout) of ``medeval ARGS`` in a fresh process (``package_dir``: another medeval_kit)."""
    env = dict(os.environ, MEDEVAL_ROOT=str(ROOT))
    if package_dir is not None:
        env["PYTHONPATH"] = str(package_dir)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, env=env,
                          cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"medeval {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    kb = [int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("MAXRSS_KB")]
    return wall, (kb[-1] / 1024 if kb else float("nan")), proc.stdout


def best_of(args: list[str], repeats: int, package_dir: Path | None = None) -> tuple[float, float, str]:
    """One warm-up run (file cache, imports), then the best wall time and peak memory of ``repeats`` runs."""
    run_cli(args, package_dir)
    runs = [run_cli(args, package_dir) for _ in range(repeats)]
    return min(r[0] for r in runs), min(r[1] for r in runs), runs[0][2]


def _baseline_dir(args, tmp: Path) -> Path | None:
    """A folder holding the baseline medeval_kit: ``--baseline DIR``, or ``--baseline-rev`` extracted with git."""
    if args.baseline:
        return Path(args.baseline)
    if not args.baseline_rev:
        return None
    out = tmp / "baseline"
    out.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline_rev, "medeval_kit"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def bench_large(args) -> None:
    """1M annotation rows through ``medeval agreement``: best of 3 after a warm-up, optional baseline ratio."""
    with tempfile.TemporaryDirectory(prefix="medeval-bench-") as tmp:
        path = Path(tmp) / "annotations_1m.csv"
        rows = write_large(path, args.items, args.raters, args.seed)
        cmd = ["agreement", str(path), "--n-boot", str(args.n_boot)]
        print(f"1. {rows:,} annotation rows ({args.items:,} items x {args.raters} raters, 3 labels, "
              f"{path.stat().st_size / 1e6:.0f} MB CSV): medeval {' '.join(cmd[:1])} FILE {' '.join(cmd[2:])} "
              f"(default metrics); fresh process per run, 1 warm-up + best of {args.repeats}; {os.cpu_count()} CPUs")
        wall, peak, out = best_of(cmd, args.repeats)
        print(f"   this version: {wall:6.2f} s, peak memory {peak:,.0f} MB")
        base = _baseline_dir(args, Path(tmp))
        if base is not None:
            b_wall, b_peak, b_out = best_of(cmd, args.repeats, base)
            same = "same table" if b_out == out else "TABLES DIFFER"
            print(f"   baseline ({args.baseline_rev or base}): {b_wall:6.2f} s, peak memory {b_peak:,.0f} MB; "
                  f"speed-up {b_wall / wall:.1f}x, memory {peak / b_peak:.2f}x of the baseline's; {same}")
        print("   " + "\n   ".join(out.strip().splitlines()))


def bench_alpha(args) -> None:
    """Krippendorff's alpha bootstrap: vectorised against a loop of ``krippendorff.alpha``."""
    import krippendorff
    import pandas as pd

    from medeval_kit.agreement import krippendorff_alpha
    from medeval_kit.agreement.alpha import alpha_stat
    from medeval_kit.agreement.engine import point, replicates
    from medeval_kit.stats import interval

    rng = np.random.default_rng(args.seed)
    n, R, K = args.alpha_items, args.alpha_raters, args.categories
    truth = rng.integers(0, K, n)
    codes = np.where(rng.random((n, R)) < 0.6, truth[:, None], rng.integers(0, K, (n, R)))
    codes[rng.random(codes.shape) < args.missing] = -1
    M = np.where(codes < 0, np.nan, codes + 1.0)  # values 1..K for the oracle
    print(f"2. Krippendorff's alpha: {R} raters x {n} items, {100 * (codes < 0).mean():.1f}% missing, {K} categories; "
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=["large", "alpha"], choices=["large", "alpha"])
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--items", type=int, default=100_000, help="large: items")
    ap.add_argument("--raters", type=int, default=10, help="large: raters (every rater labels every item)")
    ap.add_argument("--repeats", type=int, default=3, help="large: timed runs after the warm-up (best is printed)")
    ap.add_argument("--baseline-rev", default=None, metavar="REV",
                    help="large: also time the medeval_kit of this git revision (git archive into a temp folder)")
    ap.add_argument("--baseline", default=None, metavar="DIR", help="large: folder holding a baseline medeval_kit")
    ap.add_argument("--alpha-raters", type=int, default=20)
    ap.add_argument("--alpha-items", type=int, default=5000)
    ap.add_argument("--missing", type=float, default=0.10)
    ap.add_argument("--categories", type=int, default=5)
    ap.add_argument("--loop-subset", type=int, default=40, help="alpha: resamples timed for the loop baseline")
    ap.add_argument("--levels", nargs="+", default=["nominal", "ordinal", "interval"])
    args = ap.parse_args(argv)
    for case in args.cases:
        {"large": bench_large, "alpha": bench_alpha}[case](args)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
