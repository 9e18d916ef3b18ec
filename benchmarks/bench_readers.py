"""Benchmark: the line-based format readers on large JSON-lines files (issue 20, finding 7).

Writes a file of about ``--mb`` megabytes (default 200) of each line-based format - MT-bench pair
JSONL, MT-bench single JSONL, MT-bench human judgments JSONL, HealthBench meta-eval JSONL - by
repeating the records of the test fixtures (question ids made unique so rows do not collapse into
repeats), reads each with :func:`medeval_kit.readers.read_format` in a fresh process, and prints
the wall time, rows produced and peak RSS (max RSS of the reading process). Target: peak RSS at most
1 GB at 200 MB. Prints measured figures; nothing is asserted.

    python benchmarks/bench_readers.py [--mb 200] [--formats mtbench_pair,healthbench] [--keep DIR]
    medeval bench readers -- --mb 50
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FX = ROOT / "tests" / "fixtures" / "formats"

# name -> (reader format, fixture, key made unique per copy)
FORMATS = {
    "mtbench_pair": ("mtbench", FX / "mtbench" / "gpt-4_pair.jsonl", "question_id"),
    "mtbench_single": ("mtbench", FX / "mtbench" / "gpt-4_single.jsonl", "question_id"),
    "mtbench_human": ("mtbench_human", FX / "mtbench" / "human_judgments.json", "question_id"),
    "healthbench": ("healthbench", FX / "healthbench" / "meta_eval.jsonl", "prompt_id"),
}

_READ = """import json, resource, sys, time
t0 = time.perf_counter()
from medeval_kit.readers import read_format
import medeval_kit
res = read_format(sys.argv[1], sys.argv[2])
dt = time.perf_counter() - t0
rows = {t: len(df) for t, df in res.tables.items()}
print(json.dumps({"kit": medeval_kit.__file__, "s": dt, "rows": rows, "records": res.n_records,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _records(fixture: Path) -> list[dict]:
    text = fixture.read_text()
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(x) for x in text.splitlines() if x.strip()]


def write_file(name: str, out: Path, mb: float) -> int:
    """Write ``out`` of about ``mb`` MB in format ``name`` by repeating its fixture; return the lines written."""
    _, fixture, key = FORMATS[name]
    recs = _records(fixture)
    target, n, copy = int(mb * (1 << 20)), 0, 0
    with out.open("w", encoding="utf-8") as f:
        while f.tell() < target:
            for r in recs:
                r = dict(r, **{key: f"{r.get(key)}-{copy}"})
                f.write(json.dumps(r) + "\n")
                n += 1
            copy += 1
    return n


def read_one(fmt: str, path: Path, pythonpath: str | None = None) -> dict:
    """Read ``path`` in a fresh process; return its time, rows and peak RSS (or the error)."""
    # "-c" puts the working folder first on sys.path: run in the folder whose medeval_kit is wanted
    env = dict(os.environ, PYTHONPATH=pythonpath) if pythonpath else None
    proc = subprocess.run([sys.executable, "-c", _READ, fmt, str(path)], capture_output=True, text=True,
                          cwd=pythonpath or ROOT, env=env)
    if proc.returncode:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=200, help="size of each file in MB [200]")
    ap.add_argument("--formats", default=",".join(FORMATS), help=f"comma-separated, of {', '.join(FORMATS)}")
    ap.add_argument("--keep", default=None, help="write the files to this folder and keep them")
    ap.add_argument("--pythonpath", default=None, help="read with the medeval_kit found here (e.g. an old copy)")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.formats.split(",") if n.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        print(f"{'format':<16} {'MB':>7} {'lines':>10} {'read s':>8} {'peak RSS MB':>12}  rows")
        for name in names:
            fmt = FORMATS[name][0]
            path = folder / f"{name}.jsonl"
            t0 = time.perf_counter()
            n = write_file(name, path, args.mb)
            wrote = time.perf_counter() - t0
            r = read_one(fmt, path, args.pythonpath)
            size = path.stat().st_size / (1 << 20)
            if "error" in r:
                print(f"{name:<16} {size:7.1f} {n:10d}  error: {r['error']}")
            else:
                rows = ", ".join(f"{t} {k}" for t, k in r["rows"].items())
                print(f"{name:<16} {size:7.1f} {n:10d} {r['s']:8.1f} {r['peak_mb']:12.0f}  {rows}"
                      f"  (file written in {wrote:.0f} s)", flush=True)
            if not args.keep:
                path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
