"""A project's own report: ``medeval report`` outside the toolkit's checkout (or ``--project``), issue 21.

Built from the project's runs, ``<root>/runs/<notebook or study>/<run>/`` (what ``medeval run --notebook`` and
``medeval run <study>`` write), into one self-contained ``<root>/report/report.html``: no script, CSS inline, every
figure embedded as a ``data:`` URI, no external link. Per run:

* the parameters (papermill's record in the executed notebook) and, for every ``*_path`` parameter naming a file,
  the sha256 of that file as it is now, so a reader can tell which data the numbers come from;
* the LLM calls from the run's ``llm_calls.jsonl`` (requests, failed, unparsed, refused by the budget, cost);
* the headline table: the first table the notebook marks in its metadata (``"medeval": {"headline": ["designs"]}``,
  suffixes of table names), else the first table the run wrote;
* the judges' verdicts with their design, from judge-vs-humans tables (``*_designs``, ``*_judges_vs_humans``);
* the figures (PNG) and the list of the other tables.

Every text from a run (parameters, table cells, file names) is escaped with :func:`html.escape`.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medeval_kit.cli.calllog import CALL_LOG, CallStats, read_call_log

__all__ = ["RunRecord", "build_project_report", "collect_runs", "is_toolkit_checkout"]

VERDICT_TABLES = ("_designs", "_judges_vs_humans")
VERDICT_COLUMNS = ("design", "rater", "metric", "estimate", "ci_low", "ci_high", "delta", "delta_ci_low",
                   "delta_ci_high", "noninferior", "n_items", "note")
PREVIEW_ROWS = 20
CELL_CHARS = 160  # longer text cells (model replies) are cut in the preview


@dataclass
class RunRecord:
    """What one run folder holds, as the project report shows it."""

    folder: Path
    notebook: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    hashes: dict[str, str] = field(default_factory=dict)
    tables: list[Path] = field(default_factory=list)
    headline: Path | None = None
    figures: list[Path] = field(default_factory=list)
    calls: CallStats = field(default_factory=CallStats)
    failed: bool = False

    @property
    def id(self) -> str:
        """``<notebook or study>/<run>``."""
        return f"{self.folder.parent.name}/{self.folder.name}"


def is_toolkit_checkout(root: str | Path) -> bool:
    """Return True when ``root`` is the toolkit's own checkout (whose report is the paper-reproduction report).

    Example
    -------
    >>> is_toolkit_checkout("/tmp")
    False
    """
    from medeval_kit import paths

    home = paths.toolkit_home()
    return Path(root).resolve() == home.resolve() and (home / "pyproject.toml").is_file()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _hashes(parameters: dict[str, Any], root: Path) -> dict[str, str]:
    """``{key: sha256}`` of every ``*_path`` parameter that names a file (relative paths: from ``root``)."""
    out = {}
    for key, value in parameters.items():
        if key.endswith("_path") and isinstance(value, str) and value.strip():
            p = Path(value).expanduser()
            p = p if p.is_absolute() else root / p
            out[key] = _sha256(p) if p.is_file() else "(file not found)"
    return out


def _headline(tables: list[Path], marks: Any) -> Path | None:
    """The first table whose name ends with a marked suffix, else the first table written."""
    for suffix in marks if isinstance(marks, list) else []:
        for t in tables:
            if isinstance(suffix, str) and t.stem.endswith(suffix):
                return t
    return tables[0] if tables else None


def _read_run(folder: Path, root: Path) -> RunRecord:
    rec = RunRecord(folder)
    nbs = sorted(folder.glob("*.ipynb"))
    nb_file = folder / f"{folder.name}.ipynb"
    nb_file = nb_file if nb_file.is_file() else (nbs[0] if nbs else None)
    meta: dict[str, Any] = {}
    if nb_file is not None:
        try:
            meta = json.loads(nb_file.read_text(encoding="utf-8")).get("metadata", {})
        except (OSError, ValueError):
            meta = {}
    pm = meta.get("papermill") or {}
    rec.notebook = Path(str(pm.get("input_path") or (nb_file.name if nb_file else ""))).name
    rec.parameters = {k: v for k, v in (pm.get("parameters") or {}).items()
                      if k not in ("figures_dir", "tables_dir")}
    rec.failed = bool(pm.get("exception"))
    rec.hashes = _hashes(rec.parameters, root)
    # write order (the notebook's order of sections), then name
    rec.tables = sorted((folder / "tables").glob("*.csv"), key=lambda p: (p.stat().st_mtime_ns, p.name))
    rec.headline = _headline(rec.tables, (meta.get("medeval") or {}).get("headline"))
    rec.figures = sorted((folder / "figures").glob("*.png"))
    rec.calls = read_call_log(folder / CALL_LOG)
    return rec


def collect_runs(root: str | Path) -> list[RunRecord]:
    """Return every run folder ``<root>/runs/*/*/`` (one that holds a notebook or tables), sorted by id.

    Parameters
    ----------
    root : str or Path
        The project root.

    Returns
    -------
    list of RunRecord

    Example
    -------
    >>> collect_runs("/nonexistent")
    []
    """
    root = Path(root).resolve()
    base = root / "runs"
    folders = sorted(f for f in base.glob("*/*") if f.is_dir()
                     and (any(f.glob("*.ipynb")) or (f / "tables").is_dir()))
    return [_read_run(f, root) for f in folders]


# --------------------------------------------------------------------------- HTML


def _esc(v: Any) -> str:
    return html.escape(str(v), quote=True)


_CSS = """
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1b1b1b;background:#f6f6f4}
main{max-width:1200px;margin:0 auto;padding:12px 20px 40px}
h1{font-size:26px;margin:16px 0 4px}h3{font-size:17px;margin:18px 0 6px}h4{font-size:15px;margin:14px 0 4px}
code{font-size:13px;overflow-wrap:anywhere}.muted{color:#555;font-size:13px}
.scroll{max-width:100%;overflow-x:auto;margin:6px 0 12px}
table{border-collapse:collapse;font-size:13px;background:#fff}
th,td{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eceae6;font-weight:600;white-space:nowrap}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.badge{display:inline-block;padding:0 8px;border-radius:10px;font-size:12px;background:#E69F00;color:#000}
details.run{background:#fff;border:1px solid #d6d4cf;border-radius:6px;margin:10px 0;padding:0 16px}
details.run>summary{cursor:pointer;padding:10px 0;font-size:17px;font-weight:600}
details.table{margin:4px 0;border-left:3px solid #d6d4cf;padding-left:10px}
details.table>summary{cursor:pointer;font-size:14px}
.figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,460px),1fr));gap:18px;margin:8px 0}
figure{margin:0;min-width:0}figure img{display:block;width:100%;height:auto;border:1px solid #e4e2dd}
figcaption{font-size:12px;color:#444;overflow-wrap:anywhere;margin-top:4px}
"""


def _cell(v: Any) -> tuple[str, bool]:
    """A table cell as text (floats at 3 significant digits, long text cut) and whether it is a number."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "", False
    if isinstance(v, (bool, np.bool_)):
        return str(v), False
    if isinstance(v, (int, np.integer)):
        return str(int(v)), True
    if isinstance(v, (float, np.floating)):
        return (str(int(v)) if float(v).is_integer() and abs(v) < 2**53 else f"{v:.3g}"), True
    text = str(v)
    return (text if len(text) <= CELL_CHARS else text[:CELL_CHARS - 1] + "…"), False


def _html_df(df: pd.DataFrame) -> str:
    """An escaped HTML table of the first rows of ``df``."""
    head = "".join(f"<th>{_esc(c)}</th>" for c in df.columns)
    rows = []
    for r in df.head(PREVIEW_ROWS).itertuples(index=False):
        cells = [_cell(v) for v in r]
        rows.append("<tr>" + "".join(f'<td class="num">{_esc(t)}</td>' if num else f"<td>{_esc(t)}</td>"
                                     for t, num in cells) + "</tr>")
    more = f'<p class="muted">first {PREVIEW_ROWS} of {len(df)} rows</p>' if len(df) > PREVIEW_ROWS else ""
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
            + more)


def _read(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError):
        return pd.DataFrame()


def _preview(path: Path, df: pd.DataFrame | None = None) -> str:
    """An escaped HTML preview (first rows) of one table CSV."""
    df = _read(path) if df is None else df
    return _html_df(df) if len(df.columns) else "<p><i>empty</i></p>"


def _kv_table(rows: dict[str, Any], head: tuple[str, str]) -> str:
    def text(v: Any) -> str:
        return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)

    body = "".join(f"<tr><td><code>{_esc(k)}</code></td><td><code>{_esc(text(v))}</code></td></tr>"
                   for k, v in rows.items())
    return (f'<div class="scroll"><table><thead><tr><th>{_esc(head[0])}</th><th>{_esc(head[1])}</th></tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _verdicts(rec: RunRecord) -> str:
    """The judges' rows of the run's judge-vs-humans tables, with their design."""
    parts = []
    for t in rec.tables:
        if not t.stem.endswith(VERDICT_TABLES):
            continue
        df = _read(t)
        if "role" in df.columns:
            df = df[df["role"].astype(str) == "judge"]
        df = df[[c for c in VERDICT_COLUMNS if c in df.columns]]
        if len(df):
            parts.append(f"<h4>{_esc(t.stem)}</h4>" + _preview(t, df.reset_index(drop=True)))
    return ("<h3>Judge verdicts by design</h3><p class=\"muted\">delta = judge − humans with its paired-bootstrap "
            "CI; noninferior at the run's margin.</p>" + "".join(parts)) if parts else ""


def _figure(png: Path) -> str:
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{_esc(png.stem)}">'
            f"<figcaption>{_esc(png.stem)}</figcaption></figure>")


def _run_html(rec: RunRecord) -> str:
    status = ' <span class="badge differs">failed</span>' if rec.failed else ""
    parts = [f'<p class="muted">notebook <code>{_esc(rec.notebook)}</code> · folder '
             f"<code>runs/{_esc(rec.id)}/</code></p>"]
    parts.append("<h3>Parameters</h3>" + (_kv_table(rec.parameters, ("parameter", "value")) if rec.parameters
                                           else "<p><i>the notebook's defaults</i></p>"))
    if rec.hashes:
        parts.append("<h3>Data</h3>" + _kv_table(rec.hashes, ("parameter", "sha256 of the file")))
    c = rec.calls
    calls = (f"{c.n_requests} requests, {c.n_failed} failed, {c.n_parse_failed} unparsed, "
             f"{c.n_skipped_budget} refused by the budget, ${c.cost_usd:.4f}")
    why = c.top_reasons()
    parts.append(f"<h3>LLM calls</h3><p>{_esc(calls)}" + (f" (failures: {_esc(why)})" if why else "")
                 + (f"; {c.bad_lines} unreadable log lines" if c.bad_lines else "") + "</p>")
    if rec.headline is not None:
        parts.append(f"<h3>Headline table: {_esc(rec.headline.stem)}</h3>" + _preview(rec.headline))
    parts.append(_verdicts(rec))
    if rec.figures:
        parts.append('<h3>Figures</h3><div class="figs">' + "".join(_figure(p) for p in rec.figures) + "</div>")
    others = [t for t in rec.tables if t != rec.headline]
    if others:
        parts.append("<h3>Other tables</h3>" + "".join(
            f'<details class="table"><summary><b>{_esc(t.stem)}</b></summary>{_preview(t)}</details>'
            for t in others))
    return (f'<details class="run" open><summary>{_esc(rec.id)}{status}</summary>' + "".join(parts)
            + "</details>")


def build_project_report(root: str | Path | None = None, outdir: str | Path | None = None) -> Path:
    """Write the project's self-contained ``report.html`` from its runs and return its path.

    Parameters
    ----------
    root : str or Path, optional
        The project root (default :func:`medeval_kit.paths.root`).
    outdir : str or Path, optional
        Where to write ``report.html`` (default ``<root>/report``).

    Returns
    -------
    Path
        The written ``report.html``.

    Example
    -------
    >>> build_project_report("my_project")  # doctest: +SKIP
    PosixPath('.../my_project/report/report.html')
    """
    from medeval_kit import paths

    base = Path(root).resolve() if root else paths.root()
    out = (Path(outdir) if outdir else base / "report").resolve()
    out.mkdir(parents=True, exist_ok=True)
    runs = collect_runs(base)
    body = "".join(_run_html(r) for r in runs) or "<p><i>No runs yet: <code>medeval run --notebook NAME -p " \
                                                  "&lt;name&gt;_path=FILE</code> writes one.</i></p>"
    page = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_esc(base.name)}: medeval report</title><style>{_CSS}</style></head><body><main>"
            f"<h1>{_esc(base.name)}: evaluation report</h1>"
            f"<p class=\"muted\">{len(runs)} runs from <code>runs/</code>; every figure is embedded, so this file "
            "stands alone.</p>" + body + "</main></body></html>\n")
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
