"""Benchmark: exhaustive rubric-aspect search at MCQG-SRefine's scale (30 aspects, every subset up to k = 11,
~1.1e8 subsets, 40 items), compiled kernel against a per-subset loop.

1. First call: the numba kernels compiled from scratch (fresh process, empty cache) and loaded from
   numba's on-disk cache (fresh process, warm cache), each timed separately from the search.
2. The search, in a fresh process after the warm-up: best subset of each size for both objectives
   (Cohen's kappa and percent agreement) on all items; then the same plus the K training-fold
   searches of a K-fold cross-validation (one pass, ``select_aspects_all``). Wall and CPU time, peak
   memory (max RSS of the process) and subsets per second.
3. Baselines on a random sample of the same subsets, extrapolated to all of them (printed as such):
   the naive loop (one subset at a time through the numpy evaluation, as a Python loop would) and
   the vectorised numpy reference (``engine="numpy"``: blocks of 20,000 subsets).

Random integer differences in -2..2 and random A/B/tie labels (the search cost does not depend on
the signal). Prints measured figures; nothing is asserted. The machine may be shared: CPU time is
printed next to wall time.

    python benchmarks/bench_aspects.py [--aspects 30] [--items 40] [--max-k 11] [--folds 5] [--sample 3000]
    medeval bench aspects -- --max-k 9
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_COMPILE = """import json, time
t0 = time.perf_counter()
from medeval_kit.judge import _kernels
t1 = time.perf_counter()
first = _kernels.warm_up()
print(json.dumps({"import_s": t1 - t0, "first_call_s": first}))
"""

_SEARCH = """import json, resource, sys, time
import numpy as np, pandas as pd
p, n, max_k, folds, seed = (int(a) for a in sys.argv[1:6])
from medeval_kit.judge import _kernels
from medeval_kit.judge.aspects import TIE_TOLERANCE, select_aspects_all
_kernels.warm_up()
rng = np.random.default_rng(seed)
X = rng.integers(-2, 3, size=(n, p)).astype(float)
y = rng.choice([1, -1, 0], size=n)
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = {}
t, c = time.perf_counter(), time.process_time()
counts, combos = _kernels.exhaustive_best(X, np.zeros_like(X, dtype=bool), y, max_k, TIE_TOLERANCE)
out["search_s"], out["search_cpu_s"] = time.perf_counter() - t, time.process_time() - c
out["best_kappa"] = [float(a) / b if b > 0 else None for a, b in counts[0, :, 0, :2]]
diffs = pd.DataFrame(X, columns=[f"a{j}" for j in range(p)])
human = pd.Series(np.array(["B", "tie", "A"], dtype=object)[y + 1], index=diffs.index)
t, c = time.perf_counter(), time.process_time()
sel = select_aspects_all(diffs, human, max_k=max_k, k_folds=folds, seed=seed)
out["cv_s"], out["cv_cpu_s"] = time.perf_counter() - t, time.process_time() - c
out["cv_summary"] = [s.summary() for s in sel.values()]
out["rss_before_mb"] = rss0 / 1024
out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
import numba
out["threads"] = numba.get_num_threads()
out["layer"] = numba.threading_layer()
print(json.dumps(out))
"""


def child(code: str, args: list[str], env: dict | None = None) -> dict:
    """Run ``code`` in a fresh interpreter; return the JSON it prints last."""
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=str(ROOT),
                          env={**os.environ, "MEDEVAL_ROOT": str(ROOT), **(env or {})})
    if proc.returncode:
        raise SystemExit(f"benchmark child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def sample_subsets(p: int, max_k: int, m: int, rng) -> list[tuple[int, ...]]:
    """``m`` random subsets, sizes drawn in proportion to how many subsets each size has."""
    sizes = list(range(1, max_k + 1))
    w = [math.comb(p, k) for k in sizes]
    ks = rng.choice(sizes, size=m, p=[x / sum(w) for x in w])
    return [tuple(sorted(rng.choice(p, size=k, replace=False))) for k in ks]


def baselines(p: int, n: int, max_k: int, m: int, seed: int) -> tuple[float, float]:
    """Seconds per subset of the naive loop and of the vectorised numpy scorer, on ``m`` sampled subsets."""
    import numpy as np

    from medeval_kit.judge.aspects import _evaluate

    rng = np.random.default_rng(seed)
    X = rng.integers(-2, 3, size=(n, p)).astype(float)
    y = rng.choice([1, -1, 0], size=n)
    M = np.zeros_like(X, dtype=bool)
    subsets = sample_subsets(p, max_k, m, rng)
    _evaluate(X, M, np.ones((1, p)), y)  # warm-up
    t = time.perf_counter()
    for c in subsets:  # the naive loop: one subset at a time
        S = np.zeros((1, p))
        S[0, list(c)] = 1
        _evaluate(X, M, S, y)
    naive = (time.perf_counter() - t) / len(subsets)
    big = sample_subsets(p, max_k, 100_000, rng)
    t = time.perf_counter()
    for i in range(0, len(big), 20_000):  # the numpy reference: blocks of 20,000 subsets
        block = big[i:i + 20_000]
        S = np.zeros((len(block), p))
        for r, c in enumerate(block):
            S[r, list(c)] = 1
        _evaluate(X, M, S, y)
    vectorised = (time.perf_counter() - t) / len(big)
    return naive, vectorised


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--aspects", type=int, default=30, help="number of aspects (paper: 30)")
    ap.add_argument("--items", type=int, default=40, help="number of items (paper: 40)")
    ap.add_argument("--max-k", type=int, default=11, help="largest subset size (paper: 11)")
    ap.add_argument("--folds", type=int, default=5, help="cross-validation folds for the one-pass CV timing")
    ap.add_argument("--sample", type=int, default=3000, help="subsets timed in the naive loop")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-compile", action="store_true", help="skip the cold-compile timing (about a minute)")
    args = ap.parse_args(argv)
    p, n, k = args.aspects, args.items, min(args.max_k, args.aspects)
    total = sum(math.comb(p, j) for j in range(1, k + 1))
    print(f"Exhaustive aspect search: {p} aspects, every subset of size 1..{k} ({total:,} subsets), {n} items, "
          f"both objectives (kappa, agreement); {os.cpu_count()} CPUs")

    if not args.skip_compile:
        with tempfile.TemporaryDirectory(prefix="medeval-numba-") as cache:
            cold = child(_COMPILE, [], {"NUMBA_CACHE_DIR": cache})
            warm = child(_COMPILE, [], {"NUMBA_CACHE_DIR": cache})
        print(f"1. first call (fresh process): compile {cold['first_call_s']:.1f} s with an empty cache, "
              f"{warm['first_call_s']:.2f} s loading numba's cache (import {warm['import_s']:.1f} s); "
              f"not included below")

    r = child(_SEARCH, [str(p), str(n), str(k), str(args.folds), str(args.seed)])
    rate = total / r["search_s"]
    print(f"2. compiled search ({r['threads']} threads, {r['layer']} layer): {r['search_s']:.2f} s wall "
          f"({r['search_cpu_s']:.2f} s CPU), {rate / 1e6:.1f} M subsets/s; peak memory {r['maxrss_mb']:.0f} MB "
          f"(process, {r['rss_before_mb']:.0f} MB before the search)")
    print(f"   with {args.folds}-fold cross-validation (in-sample + {args.folds} training-fold searches, both "
          f"objectives, one pass): {r['cv_s']:.2f} s wall ({r['cv_cpu_s']:.2f} s CPU); "
          f"{args.folds + 1} separate searches would take ~{(args.folds + 1) * r['search_s']:.1f} s")
    best = ", ".join("NaN" if v is None else f"{v:.3f}" for v in r["best_kappa"])
    print(f"   best in-sample kappa by size 1..{k} on this noise: {best}")
    for line in r["cv_summary"]:
        print(f"   {line}")

    naive, vec = baselines(p, n, k, args.sample, args.seed)
    print(f"3. baselines on sampled subsets, extrapolated to all {total:,}:")
    print(f"   naive per-subset loop ({args.sample:,} subsets timed): {naive * 1e6:.0f} us/subset -> "
          f"{naive * total / 3600:.1f} h; compiled is {naive * total / r['search_s']:,.0f}x faster")
    print(f"   vectorised numpy reference (100,000 subsets timed): {vec * 1e6:.1f} us/subset -> "
          f"{vec * total / 60:.0f} min; compiled is {vec * total / r['search_s']:,.0f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
