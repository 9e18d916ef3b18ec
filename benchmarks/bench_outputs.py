"""Benchmark: writing the committed outputs, ``save_figure`` and ``save_table``, against the stock paths.

1. ``figures``: four kinds of paper figure (error bars with a legend and Greek/ligature text, an annotated 8 x 8
   heatmap, grouped bars, two panels of lines), each saved as PDF, PNG and SVG by ``save_figure``. ``stock`` is
   the same call with matplotlib's own font embedding in the PDF (fontTools subsets each font with its OpenType
   layout tables, which ``save_figure`` leaves out since no PDF reader uses them). Also the PDF alone.
2. ``tables``: every committed table (``tables/*/*.csv``) through ``save_table``. ``stock`` writes the LaTeX
   with pandas' ``to_latex`` (its Styler) and formats the table a second time for the sidecar's hash, as
   ``save_table`` did before; the files are the same bytes either way.

Rounds alternate ours and stock in one process (``--rounds``, default 3); the medians are printed with their
ratio. Nothing is asserted.

    python benchmarks/bench_outputs.py [--cases figures tables] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from medeval_kit import tables as tb  # noqa: E402
from medeval_kit.viz import figures as vf  # noqa: E402


def _errorbars(ax):
    x = np.arange(6)
    for k, name in enumerate(("gpt-4o", "claude", "pandalm-7b")):
        ax.errorbar(x + 0.1 * k, 0.5 + 0.05 * k + 0.03 * np.sin(x), yerr=0.04, fmt="o-", label=name)
    ax.set_title("Judge vs physicians: Δκ with 95% CI (n = 120), fi ffl")
    ax.set_xlabel("Round")
    ax.legend()


def _heatmap(ax):
    rng = np.random.default_rng(0)
    m = np.round(rng.uniform(0.2, 0.9, (8, 8)), 2)
    ax.imshow(m, cmap="viridis")
    for i in range(8):
        for j in range(8):
            ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize=5)
    names = [f"rater{k}" for k in range(8)]
    ax.set_xticks(range(8), names, rotation=90)
    ax.set_yticks(range(8), names)


def _bars(ax):
    cats = ["A", "B", "tie", "neither"]
    for k in range(3):
        ax.bar(np.arange(4) + 0.25 * k, [0.4, 0.3, 0.2, 0.1][::1 if k % 2 else -1], width=0.25, label=f"judge {k}")
    ax.set_xticks(np.arange(4) + 0.25, cats)
    ax.legend(title="Judge")


def _panels(axes):
    x = np.linspace(0, 1, 50)
    for k, ax in enumerate(axes):
        ax.plot(x, x ** (k + 1), label="power")
        ax.fill_between(x, x ** (k + 1) - 0.05, x ** (k + 1) + 0.05, alpha=0.3)
        ax.set_title(f"Panel {k + 1}: κ ≥ 0.6")


KINDS = {"errorbars": (1, _errorbars), "heatmap": (1, _heatmap), "bars": (1, _bars), "panels": (2, _panels)}


def _figure(kind: str):
    n, draw = KINDS[kind]
    fig, axes = vf.figure("double" if n > 1 else "single", ncols=n)
    draw(axes)
    return fig


@contextlib.contextmanager
def _stock_fonts():
    """matplotlib's own PDF font embedding (the subsets keep their layout tables)."""
    lean = vf._lean_pdf_fonts
    vf._lean_pdf_fonts = contextlib.nullcontext
    try:
        yield
    finally:
        vf._lean_pdf_fonts = lean


@contextlib.contextmanager
def _stock_tables():
    """pandas' to_latex for the LaTeX, and the table formatted again for the sidecar's hash."""
    latex, fhash = tb._latex, tb._formatted_hash

    def pandas_latex(df, *, index, caption, label):
        return df.to_latex(index=index, caption=caption, label=label, escape=True)

    def hash_again(*frames):  # save_table passes the CSV's frame; the old path formatted the table once more
        return fhash(*(tb.format_frame(f) for f in frames))

    tb._latex, tb._formatted_hash = pandas_latex, hash_again
    try:
        yield
    finally:
        tb._latex, tb._formatted_hash = latex, fhash


def bench_figures(rounds: int, out: Path) -> None:
    for fmts, label in ((("pdf", "png", "svg"), "PDF + PNG + SVG"), (("pdf",), "PDF only")):
        times: dict[str, list[float]] = {"ours": [], "stock": []}
        for _ in range(rounds):
            for who in ("ours", "stock"):
                with _stock_fonts() if who == "stock" else contextlib.nullcontext():
                    t0 = time.process_time()
                    for kind in KINDS:
                        vf.save_figure(_figure(kind), f"{who}_{kind}", out, formats=fmts)
                    times[who].append((time.process_time() - t0) / len(KINDS))
        ours, stock = statistics.median(times["ours"]), statistics.median(times["stock"])
        print(f"save_figure, {label}: {1000 * ours:.0f} ms a figure, stock {1000 * stock:.0f} ms "
              f"(ours / stock = {ours / stock:.2f}; CPU time, median of {rounds} rounds of {len(KINDS)} figures)")
    plt.close("all")


def bench_tables(rounds: int, out: Path) -> None:
    frames = [pd.read_csv(p) for p in sorted((ROOT / "tables").glob("*/*.csv"))]
    rows = sum(len(f) for f in frames)
    times: dict[str, list[float]] = {"ours": [], "stock": []}
    for _ in range(rounds):
        for who in ("ours", "stock"):
            with _stock_tables() if who == "stock" else contextlib.nullcontext():
                t0 = time.process_time()
                for k, df in enumerate(frames):
                    tb.save_table(df, f"t{k}", out / who)
                times[who].append((time.process_time() - t0) / len(frames))
    ours, stock = statistics.median(times["ours"]), statistics.median(times["stock"])
    same = all((out / "ours" / f"t{k}.{ext}").read_bytes() == (out / "stock" / f"t{k}.{ext}").read_bytes()
               for k in range(len(frames)) for ext in ("csv", "md", "tex", "table.json"))
    print(f"save_table: {1000 * ours:.1f} ms a table, stock {1000 * stock:.1f} ms (ours / stock = {ours / stock:.2f}; "
          f"{len(frames)} committed tables, {rows / len(frames):.0f} rows on average; CPU time, median of {rounds} "
          f"rounds); the files are {'byte-identical' if same else 'NOT identical'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", default=["figures", "tables"], choices=["figures", "tables"])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        out = Path(d)
        vf.save_figure(_figure("errorbars"), "warm", out)  # imports and font caches, outside the timing
        tb.save_table(pd.DataFrame({"a": [1.5]}), "warm", out)
        if "figures" in args.cases:
            bench_figures(args.rounds, out)
        if "tables" in args.cases:
            bench_tables(args.rounds, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
