"""Reproduction report: every figure, every table, and each published number beside ours.

The report is built from the studies' outputs only: figure sidecars in ``figures/<study>/*.json``,
tables in ``tables/<study>/*.csv``, and the ``published_numbers.csv`` table each study writes with
columns ``paper, source, quantity, published, ours, status, note`` (written by
:mod:`medeval_kit.repro`). Nothing is typed in here. A status that is not one of :data:`STATUSES`,
or that the one rule does not give for the row's printed value and ours, is an error.
"""

from __future__ import annotations

import argparse
import html
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from medeval_kit.repro.published import STATUSES, decide

__all__ = ["STATUSES", "RULE", "collect_published", "collect_figures", "collect_tables", "build_report", "Report"]

RULE = ("reproduced: ours rounds to the value as printed, at its printed precision (a percentage compares "
        "ours x 100; an integer must match exactly); differs: with the reason in the note; not recoverable: "
        "the public data cannot give it.")

PUBLISHED_COLUMNS = ("paper", "source", "quantity", "published", "ours", "status", "note")


def _root(root: str | Path | None) -> Path:
    from medeval_kit.paths import root as project_root

    return Path(root) if root else project_root()


def _check_statuses(df: pd.DataFrame, path: Path) -> None:
    """Every status is one of STATUSES and is what the one rule gives for (published, ours)."""
    from medeval_kit.errors import SchemaError

    bad = [i for i, v in enumerate(df["status"]) if v not in STATUSES]
    if bad:
        raise SchemaError("published_numbers", "status", bad,
                          f"unknown status {df['status'].iloc[bad[0]]!r}; use one of {STATUSES}", str(path))
    wrong = []
    for i, (pub, ours, status) in enumerate(zip(df["published"], df["ours"], df["status"])):
        try:
            expected = decide(pub, float(ours) if ours.strip() else None)
        except (ValueError, TypeError):
            expected = None
        if expected != status:
            wrong.append(i)
    if wrong:
        r = df.iloc[wrong[0]]
        raise SchemaError("published_numbers", "status", wrong,
                          f"status {r['status']!r} is not what the rule gives for published {r['published']!r} and "
                          f"ours {r['ours']!r}; regenerate the table with medeval_kit.repro", str(path))


def collect_published(root: str | Path | None = None) -> pd.DataFrame:
    """Return all studies' published-number rows, with a ``study`` column; statuses checked against the rule."""
    frames = []
    for p in sorted((_root(root) / "tables").glob("*/published_numbers.csv")):
        df = pd.read_csv(p, dtype=str, keep_default_na=False)
        missing = [c for c in PUBLISHED_COLUMNS if c not in df.columns]
        if missing:
            from medeval_kit.errors import SchemaError

            raise SchemaError("published_numbers", missing[0], [], f"missing column(s) {missing}", str(p))
        _check_statuses(df, p)
        df.insert(0, "study", p.parent.name)
        frames.append(df[["study", *PUBLISHED_COLUMNS]])
    if not frames:
        return pd.DataFrame(columns=["study", *PUBLISHED_COLUMNS])
    return pd.concat(frames, ignore_index=True)


def collect_figures(root: str | Path | None = None) -> pd.DataFrame:
    """Return one row per saved figure: study, figure, files, notebook, parameters, data hash."""
    rows = []
    for side in sorted((_root(root) / "figures").glob("*/*.json")):
        meta = json.loads(side.read_text())
        rows.append({
            "study": side.parent.name, "figure": meta.get("figure", side.stem),
            "png": str(side.with_suffix(".png").relative_to(_root(root))),
            "files": ", ".join(meta.get("files", [])), "notebook": meta.get("notebook", ""),
            "parameters": json.dumps(meta.get("parameters", {}), sort_keys=True),
            "data_hash": meta.get("data_hash") or "",
        })
    return pd.DataFrame(rows, columns=["study", "figure", "png", "files", "notebook", "parameters", "data_hash"])


def collect_tables(root: str | Path | None = None) -> pd.DataFrame:
    """Return one row per saved table: study, table, rows, columns."""
    rows = []
    for p in sorted((_root(root) / "tables").glob("*/*.csv")):
        try:
            df = pd.read_csv(p)
            n, cols = len(df), ", ".join(map(str, df.columns))
        except pd.errors.EmptyDataError:
            n, cols = 0, ""
        rows.append({"study": p.parent.name, "table": p.stem, "rows": n, "columns": cols,
                     "path": str(p.relative_to(_root(root)))})
    return pd.DataFrame(rows, columns=["study", "table", "rows", "columns", "path"])


@dataclass(frozen=True)
class Report:
    """The collected report content and where it was written."""

    published: pd.DataFrame
    figures: pd.DataFrame
    tables: pd.DataFrame
    html_path: Path
    md_path: Path

    def summary(self) -> str:
        """Return counts of published numbers by status, figures and tables."""
        counts = self.published["status"].value_counts().reindex(STATUSES, fill_value=0)
        parts = ", ".join(f"{k}: {v}" for k, v in counts.items())
        return (f"{len(self.published)} published numbers ({parts}); {len(self.figures)} figures; "
                f"{len(self.tables)} tables -> {self.html_path}, {self.md_path}")


_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:13px;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}
th{background:#f3f3f3}.reproduced{background:#e6f4ea}.differs{background:#fdecea}.not-recoverable{background:#fff4e5}
figure{display:inline-block;margin:8px;width:320px;vertical-align:top}figure img{width:100%}figcaption{font-size:12px}
"""


def build_report(root: str | Path | None = None, outdir: str | Path | None = None) -> Report:
    """Write ``report.html`` and ``report.md`` (default into ``<root>/report/``) and return the Report."""
    base = _root(root)
    out = Path(outdir) if outdir else base / "report"
    out.mkdir(parents=True, exist_ok=True)
    pub, figs, tabs = collect_published(base), collect_figures(base), collect_tables(base)

    counts = pub["status"].value_counts().reindex(STATUSES, fill_value=0)
    md = ["# medeval_kit reproduction report", "",
          "Built from the studies' outputs (`tables/*/published_numbers.csv`, figure sidecars, tables).", "",
          "## Published numbers", "",
          " · ".join(f"**{k}**: {v}" for k, v in counts.items()), "", RULE, ""]
    md.append(pub.to_markdown(index=False) if len(pub) else "_No study wrote published_numbers.csv yet._")
    md += ["", "## Figures", "", figs.drop(columns=["parameters"]).to_markdown(index=False) if len(figs) else "_none_",
           "", "## Tables", "", tabs.to_markdown(index=False) if len(tabs) else "_none_", ""]
    md_path = out / "report.md"
    md_path.write_text("\n".join(md))

    def row_html(r) -> str:
        cls = r["status"].replace(" ", "-")
        cells = "".join(f"<td>{html.escape(str(r[c]))}</td>" for c in ["study", *PUBLISHED_COLUMNS])
        return f'<tr class="{cls}">{cells}</tr>'

    head = "".join(f"<th>{c}</th>" for c in ["study", *PUBLISHED_COLUMNS])
    pub_html = f"<table><tr>{head}</tr>{''.join(row_html(r) for _, r in pub.iterrows())}</table>"
    rel = Path(*([".."] * len(out.relative_to(base).parts))) if out.is_relative_to(base) else base
    fig_html = "".join(
        f'<figure><img src="{html.escape(str(rel / r.png))}" alt="{html.escape(r.figure)}">'
        f"<figcaption><b>{html.escape(r.study)}/{html.escape(r.figure)}</b> · {html.escape(r.notebook)}"
        f" · {html.escape(r.parameters)}</figcaption></figure>"
        for r in figs.itertuples()
    )
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>medeval_kit reproduction report</title>"
            f"<style>{_CSS}</style></head><body><h1>medeval_kit reproduction report</h1>"
            f"<p>{' · '.join(f'<b>{k}</b>: {v}' for k, v in counts.items())}</p><p>{html.escape(RULE)}</p>"
            f"<h2>Published numbers</h2>{pub_html}<h2>Figures</h2>{fig_html}"
            f"<h2>Tables</h2>{tabs.to_html(index=False)}</body></html>")
    html_path = out / "report.html"
    html_path.write_text(page)
    return Report(pub, figs, tabs, html_path, md_path)


def _cmd_report(args: argparse.Namespace) -> int:
    rep = build_report(args.root, args.out)
    print(rep.summary())
    return 0


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``medeval report``."""
    p = sub.add_parser("report", help="build report.html / report.md from the studies' outputs")
    p.add_argument("--root", default=None, help="project folder (default: this checkout)")
    p.add_argument("--out", default=None, help="output folder (default: <project>/report)")
    p.set_defaults(func=_cmd_report)
