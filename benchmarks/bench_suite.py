"""Timing record of the two commands: every study's notebook runs (warm ``make figures``) and ``make test``
per test file, so that regressions show up in closing notes.

1. ``figures``: ``medeval run --jobs J --out <temporary folder>`` over every study, i.e. what ``make figures``
   executes, but writing into a temporary folder (the checkout is not touched). Prints the wall time, each
   run's seconds (slowest first) and the slowest cells, read from the executed notebooks.
2. ``tests``: the whole suite as ``make test`` runs it (unit tests, then the notebooks under nbval from a
   scratch copy), with pytest's ``--durations=0``; prints the wall time and the seconds per test file
   (setup + call + teardown summed over its tests; the processes run in parallel, so the sum exceeds the
   wall).

Measured, never asserted. The machine may be shared: the load average is printed next to the times.

    python benchmarks/bench_suite.py [--part figures|tests|all] [--jobs 2] [--test-jobs N] [--top 10]
    medeval bench suite -- --part figures
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

DURATION = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S+?)(?:::\S.*)?$")


def _load() -> str:
    try:
        return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


def figures(jobs: int, top: int) -> None:
    """Run every study into a temporary folder; print per-run and slowest-cell seconds."""
    out = Path(tempfile.mkdtemp(prefix="medeval_bench_suite_"))
    try:
        t0 = time.perf_counter()
        proc = subprocess.run([str(BIN / "medeval"), "run", "--jobs", str(jobs), "--out", str(out), "--quiet"],
                              cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        runs, cells = [], []
        for nb in sorted(out.glob("*/*/*.ipynb")):
            doc = json.loads(nb.read_text(encoding="utf-8"))
            rid = f"{nb.parent.parent.name}/{nb.parent.name}"
            runs.append((float(doc["metadata"].get("papermill", {}).get("duration") or 0.0), rid))
            for i, c in enumerate(doc["cells"]):
                secs = (c.get("metadata", {}).get("papermill") or {}).get("duration")
                if c["cell_type"] == "code" and secs:
                    first = ("".join(c["source"]).strip().splitlines() or [""])[0][:60]
                    cells.append((float(secs), rid, i, first))
        print(f"figures: {len(runs)} notebook runs in {wall:.1f} s wall with --jobs {jobs} "
              f"(sum of runs {sum(s for s, _ in runs):.1f} s; {_load()}); exit code {proc.returncode}")
        if proc.returncode:
            print(proc.stdout[-2000:], proc.stderr[-2000:], sep="\n")
        for secs, rid in sorted(runs, reverse=True)[:top]:
            print(f"  {secs:7.1f} s  {rid}")
        print(f"slowest cells (of {len(cells)}):")
        for secs, rid, i, first in sorted(cells, reverse=True)[:top]:
            print(f"  {secs:7.1f} s  {rid} cell {i}: {first}")
    finally:
        shutil.rmtree(out, ignore_errors=True)


def tests(jobs: int, top: int) -> None:
    """Run the whole suite as ``make test`` does, with --durations=0; print the seconds per test file."""
    scratch = Path(tempfile.mkdtemp(prefix="medeval_bench_nbval_"))
    try:
        for name in ("notebooks", "tables"):
            shutil.copytree(ROOT / name, scratch / name)
        shutil.copy2(ROOT / "medeval.toml", scratch / "medeval.toml")
        (scratch / "data").symlink_to(ROOT / "data")
        env = {**os.environ, "MEDEVAL_CACHE_MODE": "replay"}
        cmd = [str(BIN / "python"), "-m", "pytest", "tests", str(scratch / "notebooks"), "--nbval-lax", "-q",
               "-p", "no:cacheprovider", "-n", str(jobs), "--dist", "loadfile", "--no-loadscope-reorder",
               "--durations=0"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    per_file: dict[str, float] = defaultdict(float)
    for line in proc.stdout.splitlines():
        m = DURATION.match(line)
        if m:
            per_file[Path(m.group(3)).name if "medeval_bench_nbval_" in m.group(3) else m.group(3)] += float(m.group(1))
    summary = [ln for ln in proc.stdout.splitlines() if re.search(r"\d+ passed|\d+ failed", ln)]
    print(f"tests: {summary[-1].strip('= ') if summary else 'no summary'}; {wall:.1f} s wall on {jobs} processes "
          f"({_load()}); exit code {proc.returncode}")
    print(f"slowest test files (of {len(per_file)}; seconds summed over their tests):")
    for name, secs in sorted(per_file.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {secs:7.1f} s  {name}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("figures", "tests", "all"), default="all")
    ap.add_argument("--jobs", type=int, default=2, help="notebook runs in parallel (default 2, as make figures)")
    ap.add_argument("--test-jobs", type=int, default=(os.cpu_count() or 2) + 1,
                    help="test processes (default: one more than the cores, as make test)")
    ap.add_argument("--top", type=int, default=10, help="how many runs, cells and test files to list")
    args = ap.parse_args(argv)
    if args.part in ("figures", "all"):
        figures(args.jobs, args.top)
    if args.part in ("tests", "all"):
        tests(args.test_jobs, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
