"""Reproduction report: a summary per paper first, then each study's published numbers, figures and tables.

The report is built from the studies' outputs only: figure sidecars in ``figures/<study>/*.json`` (and
their PNGs), tables in ``tables/<study>/*.csv``, and the ``published_numbers.csv`` table each study writes
with columns ``paper, source, quantity, published, ours, status, kind, note`` (written by
:mod:`medeval_kit.repro`; a table without ``kind`` is read as all ``printed``). Nothing is typed in here. A
status that is not one of :data:`STATUSES`, or that the rule does not give for the row's printed value and
ours, is an error. The four statuses and their rules come from
:data:`medeval_kit.repro.published.STATUS_RULES` and are printed in the report.

The headline counts printed numbers only, each once however many studies check it (``kind`` printed);
derived quantities (sums, sample sizes, shares we compute from printed numbers) are counted beside them,
never in them. ``report.md`` and ``report.html`` carry the same headline (:func:`headline`).

``report.html`` is one self-contained file (CSS inline, figures embedded as base64 PNG, no script): the
summary per paper (citation from ``data/published/<paper-id>.yaml``) comes first, then one collapsible
section per study. Ours is shown at the printed precision of the value it is compared with (the rule's
:meth:`Printed.show`, exact for shares of integers: 23/40 is 57.5%), counts as integers. Statuses carry a
symbol and a word besides their colour (Okabe-Ito blue, sky blue, orange, grey), so they read without
colour. ``report.md`` holds the same summary and
numbers as Markdown, with links to the figures and tables instead of embedded images.
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from medeval_kit.errors import DataFileError
from medeval_kit.repro.published import KINDS, STATUS_RULES, STATUSES, decide, parse_printed

__all__ = ["RULE", "STATUSES", "STATUS_RULES", "SYMBOLS", "Report", "build_report", "collect_figures",
           "collect_published", "collect_tables", "display_table", "headline", "paper_counts", "show_ours"]

PRECISION = ("The printed string sets the precision: a percentage compares ours x 100 at its decimals, and a "
             "count must match exactly.")
RULE = " ".join(f"{k}: {v}" for k, v in STATUS_RULES.items()) + " " + PRECISION
"""The four statuses' rules in words (from :data:`STATUS_RULES`), then how the precision is read."""

PUBLISHED_COLUMNS = ("paper", "source", "quantity", "published", "ours", "status", "kind", "note")
NUMBER_KEY = ["paper", "source", "quantity", "published", "kind"]  # one number (several studies may check it)
SYMBOLS = {"reproduced": "✓", "consistent": "≈", "differs": "≠", "not recoverable": "∅"}
VERBS = {"reproduced": "reproduced", "consistent": "consistent", "differs": "differ",
         "not recoverable": "not recoverable"}  # "38 differ"
MISSING = "—"
PREVIEW_ROWS = 20  # rows of each table shown in the HTML report; the CSV has them all
CELL_CHARS = 160  # longer text cells (model replies) are cut in the preview
SHORT_CHARS = 28  # text columns no longer than this are kept on one line
P_VALUE = re.compile(r"^p(_|$)")  # p-value columns (p_value, p_uniform ...): 3 significant digits, 1.23e-05
WIDE_PX = 1800  # figures at least this wide (heatmaps, panels) take a whole row


def _root(root: str | Path | None) -> Path:
    from medeval_kit.paths import root as project_root

    return Path(root) if root else project_root()


# --------------------------------------------------------------------------- collecting


def _check_statuses(df: pd.DataFrame, path: Path) -> None:
    """Every status is one of STATUSES and is what the rule gives for (published, ours); every kind is one
    of KINDS.

    A ``consistent`` row is decided with the paper's own numbers as its basis (for an interval, ours is its
    value nearest the printed one), every other row as an independent computation.
    """
    from medeval_kit.errors import SchemaError

    bad = [i for i, v in enumerate(df["status"]) if v not in STATUSES]
    if bad:
        raise SchemaError("published_numbers", "status", bad,
                          f"unknown status {df['status'].iloc[bad[0]]!r}; use one of {STATUSES}", str(path))
    wrong = []
    for i, (pub, ours, status) in enumerate(zip(df["published"], df["ours"], df["status"])):
        try:
            basis = "consistent" if status == "consistent" else "independent"
            expected = decide(pub, float(ours) if ours.strip() else None, basis)
        except (ValueError, TypeError):
            expected = None
        if expected != status:
            wrong.append(i)
    if wrong:
        r = df.iloc[wrong[0]]
        raise SchemaError("published_numbers", "status", wrong,
                          f"status {r['status']!r} is not what the rule gives for published {r['published']!r} and "
                          f"ours {r['ours']!r}; regenerate the table with medeval_kit.repro", str(path))
    bad = [i for i, v in enumerate(df["kind"]) if v not in KINDS]
    if bad:
        raise SchemaError("published_numbers", "kind", bad,
                          f"unknown kind {df['kind'].iloc[bad[0]]!r}; use one of {KINDS}", str(path))


def collect_published(root: str | Path | None = None) -> pd.DataFrame:
    """Return all studies' published-number rows, with a ``study`` column; statuses checked against the rule.

    A table written before numbers had a ``kind`` is read as all ``printed``.
    """
    frames = []
    for p in sorted((_root(root) / "tables").glob("*/published_numbers.csv")):
        df = pd.read_csv(p, dtype=str, keep_default_na=False)
        if "kind" not in df.columns and "status" in df.columns:
            df.insert(list(df.columns).index("status") + 1, "kind", "printed")
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
    """Return one row per saved figure: study, figure, png (relative to the root), notebook, parameters, data hash."""
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
    """Return one row per saved table: study, table, rows, columns, path (relative to the root)."""
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


def _paper_file(paper: str, base: Path):
    """The paper's data file (the project's ``data/published`` first, then the toolkit's), or None."""
    from medeval_kit.repro.published import published_dir, validate_paper_file

    for folder in (base / "data" / "published", published_dir()):
        if (folder / f"{paper}.yaml").is_file():
            return validate_paper_file(folder / f"{paper}.yaml")
    return None


def _study_descriptions(base: Path) -> dict[str, str]:
    """Return each study's one-line description from ``studies/*.yaml`` ({} when there is no such folder)."""
    from medeval_kit.cli.runner import load_studies

    folder = base / "studies"
    return {k: s.description for k, s in load_studies(folder).items()} if folder.is_dir() else {}


# --------------------------------------------------------------------------- numbers as a reader sees them


def show_ours(published: str, ours: str | float | None) -> str:
    """Return ours written like the printed value (its decimals, ``%`` when printed with one; a count as an
    integer), or ``""`` when ours is missing."""
    if ours is None or (isinstance(ours, str) and not ours.strip()):
        return ""
    x = float(ours)
    return "" if math.isnan(x) else parse_printed(published).show(x)


def _kind(published: pd.DataFrame) -> pd.Series:
    """The ``kind`` column (``printed`` where a table has none)."""
    if "kind" in published.columns:
        return published["kind"]
    return pd.Series("printed", index=published.index, name="kind")


def _distinct(published: pd.DataFrame, kind: str) -> pd.DataFrame:
    """The numbers of one kind, each once per status however many studies check it."""
    df = published.assign(kind=_kind(published))
    return df[df["kind"] == kind].drop_duplicates([*NUMBER_KEY, "status"])


def paper_counts(published: pd.DataFrame) -> pd.DataFrame:
    """Return per paper the distinct printed numbers by status, their total, the derived numbers, the checks
    and the studies that checked them.

    Parameters
    ----------
    published : DataFrame
        Published-number rows with ``study``, ``paper``, ``source``, ``quantity``, ``published``, ``status``
        and ``kind`` (``printed`` when absent).

    Returns
    -------
    DataFrame
        ``paper``, one column per status (printed numbers only), ``numbers`` (printed numbers), ``derived``
        (derived numbers, not in the status counts), ``checks`` (all rows) and ``studies``. A number checked
        by two studies is counted once (same paper, source, quantity, printed value, kind and status).

    Examples
    --------
    >>> rows = pd.DataFrame({"study": ["a", "b", "b"], "paper": "p-2024", "source": ["T1", "T1", "T2"],
    ...                      "quantity": ["k", "k", "n"], "published": ["0.85", "0.85", "40"],
    ...                      "status": "reproduced", "kind": ["printed", "printed", "derived"]})
    >>> paper_counts(rows)[["paper", "reproduced", "numbers", "derived", "checks"]].values.tolist()
    [['p-2024', 1, 1, 1, 3]]
    """
    cols = ["paper", *STATUSES, "numbers", "derived", "checks", "studies"]
    if published.empty:
        return pd.DataFrame(columns=cols)
    papers = sorted(set(published["paper"]))
    distinct = _distinct(published, "printed")
    counts = (distinct.groupby("paper")["status"].value_counts().unstack(fill_value=0)
              .reindex(index=papers, columns=list(STATUSES), fill_value=0).astype(int))
    counts.index.name = "paper"
    counts["numbers"] = counts[list(STATUSES)].sum(axis=1)
    derived = _distinct(published, "derived")
    counts["derived"] = (derived.drop_duplicates(NUMBER_KEY).groupby("paper").size()
                         .reindex(papers, fill_value=0).astype(int))
    counts["checks"] = published.groupby("paper").size()
    counts["studies"] = published.groupby("paper")["study"].agg(lambda s: ", ".join(sorted(set(s))))
    return counts.reset_index()[cols].sort_values("paper", ignore_index=True)


def _fixed_decimals(values: pd.Series) -> int:
    """Decimals for a float column: 3 significant digits at its largest magnitude (0.852, 25.33, 203.0)."""
    finite = values[values.map(math.isfinite)].abs()
    top = finite.max() if len(finite) else 0.0
    return 3 if top < 10 else 2 if top < 100 else 1 if top < 1000 else 0


def _show_float(x: float, decimals: int | None) -> str:
    """``x`` at fixed ``decimals`` (None: 3 significant digits, for p-values); "" for NaN, never "-0.000"."""
    if math.isnan(x):
        return ""
    if not math.isfinite(x):
        return str(x)
    text = f"{x:.3g}" if decimals is None else f"{x:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def display_table(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Return ``df`` as strings for reading (counts as integers, floats at 3 significant digits per column, long
    text cut) and the names of its numeric columns; ``ours`` beside ``published`` at the printed precision."""
    cols: dict[str, list[str]] = {}  # built as lists, one frame at the end (column by column costs ~20 ms a table)
    numeric = []
    for col in df.columns:
        s = df[col]
        if col == "published":
            cols[col] = s.fillna("").astype(str).tolist()
            continue
        if col == "ours" and "published" in df.columns:
            try:
                cols[col] = [show_ours(str(p), o if pd.notna(o) else None) for p, o in zip(df["published"], s)]
                numeric.append(col)
                continue
            except (DataFileError, TypeError, ValueError):  # not printed values: shown like any other column
                pass
        if pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s):
            text = ["" if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA else str(v)
                    for v in s.tolist()]
            cols[col] = [v if len(v) <= CELL_CHARS else v[:CELL_CHARS - 1] + "…" for v in text]
            continue
        numeric.append(col)
        x = s.astype(float).tolist()
        finite = [v for v in x if math.isfinite(v)]
        if all(v == round(v) and abs(v) < 2**53 for v in finite):
            cols[col] = [str(int(v)) if math.isfinite(v) else _show_float(v, 0) for v in x]
        else:
            d = None if P_VALUE.match(str(col)) else _fixed_decimals(pd.Series(x, dtype=float))
            cols[col] = [_show_float(v, d) for v in x]
    out = pd.DataFrame(cols, index=df.index, columns=list(df.columns)) if cols else pd.DataFrame(index=df.index)
    return out, numeric


def _read_table(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path, dtype={"published": str}, keep_default_na=True)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


# --------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class Report:
    """The collected report content and where it was written."""

    published: pd.DataFrame
    figures: pd.DataFrame
    tables: pd.DataFrame
    papers: pd.DataFrame
    html_path: Path
    md_path: Path

    def summary(self) -> str:
        """Return the report's headline (printed numbers by status, derived checks, figures, tables) and where
        it was written."""
        return (f"{headline(self.published, self.papers, self.figures, self.tables)} "
                f"-> {self.html_path}, {self.md_path}")


def _studies(pub: pd.DataFrame, figs: pd.DataFrame, tabs: pd.DataFrame) -> list[str]:
    return sorted(set(pub["study"]) | set(figs["study"]) | set(tabs["study"]))


def _status_counts(df: pd.DataFrame) -> pd.Series:
    return df["status"].value_counts().reindex(STATUSES, fill_value=0).astype(int)


def _by_status(c: pd.Series, *, all_: bool = True) -> str:
    """``✓ 60 reproduced, ≈ 9 consistent, ≠ 30 differ, ∅ 35 not recoverable`` (``all_=False``: non-zero only)."""
    return ", ".join(f"{SYMBOLS[k]} {c[k]} {VERBS[k]}" for k in STATUSES if all_ or c[k])


def _counts_line(df: pd.DataFrame) -> str:
    """Printed numbers by status, then the derived checks: the study-level line of the report."""
    kind = _kind(df)
    line = _by_status(_status_counts(df[kind == "printed"]))
    derived = df[kind == "derived"]
    if len(derived):
        line += f" (+{len(derived)} derived checks: {_by_status(_status_counts(derived), all_=False)})"
    return line


def headline(pub: pd.DataFrame, papers: pd.DataFrame, figs: pd.DataFrame, tabs: pd.DataFrame) -> str:
    """The report's headline: printed numbers by status (each once), the derived checks beside them, the
    checks, studies, figures and tables. ``report.md``, ``report.html`` and ``medeval report`` print it alike.

    Parameters
    ----------
    pub : DataFrame
        :func:`collect_published`.
    papers : DataFrame
        :func:`paper_counts`.
    figs, tabs : DataFrame
        :func:`collect_figures`, :func:`collect_tables`.

    Returns
    -------
    str
        E.g. "138 printed numbers (+12 derived checks) from 6 papers, checked 150 times in 5 studies.
        Printed numbers: ✓ 60 reproduced, ≈ 9 consistent, ≠ 34 differ, ∅ 35 not recoverable. Derived
        checks: ✓ 12 reproduced. 62 figures and 194 tables from 12 studies."

    Examples
    --------
    >>> pub = pd.DataFrame({"study": "s", "paper": "p-2024", "source": ["T1", "T2", "T3"],
    ...                     "quantity": ["k", "d", "n"], "published": ["0.85", "-0.016", "40"],
    ...                     "status": ["reproduced", "consistent", "reproduced"],
    ...                     "kind": ["printed", "printed", "derived"]})
    >>> empty = pd.DataFrame(columns=["study"])
    >>> headline(pub, paper_counts(pub), empty, empty)  # doctest: +NORMALIZE_WHITESPACE
    '2 printed numbers (+1 derived checks) from 1 papers, checked 3 times in 1 studies. Printed numbers:
    ✓ 1 reproduced, ≈ 1 consistent, ≠ 0 differ, ∅ 0 not recoverable. Derived checks: ✓ 1 reproduced.
    0 figures and 0 tables from 1 studies.'
    """
    printed, derived = _distinct(pub, "printed"), _distinct(pub, "derived")
    n_printed, n_derived = len(printed.drop_duplicates(NUMBER_KEY)), len(derived.drop_duplicates(NUMBER_KEY))
    text = (f"{n_printed} printed numbers (+{n_derived} derived checks) from {len(papers)} papers, checked "
            f"{len(pub)} times in {pub['study'].nunique()} studies. "
            f"Printed numbers: {_by_status(_status_counts(printed))}.")
    if n_derived:
        text += f" Derived checks: {_by_status(_status_counts(derived), all_=False)}."
    return text + (f" {len(figs)} figures and {len(tabs)} tables from {len(_studies(pub, figs, tabs))} "
                   "studies.")


def _rules() -> list[tuple[str, str]]:
    """(status with its symbol, its rule) for every status, from :data:`STATUS_RULES`."""
    return [(f"{SYMBOLS[k]} {k}", STATUS_RULES[k]) for k in STATUSES]


DERIVED_NOTE = ("Derived: a quantity we derive from printed numbers (a sum, a sample size, a share we compute); "
                "checked and shown, marked \"(derived)\", never counted among the printed numbers.")


def _params(parameters: str) -> str:
    """Sidecar parameters as ``k=v`` pairs, empty values left out."""
    d = json.loads(parameters) if parameters else {}
    return ", ".join(f"{k}={v}" for k, v in d.items() if v not in ("", None, [], {}))


# --------------------------------------------------------------------------- Markdown


def _md_table(df: pd.DataFrame, right: tuple[str, ...] = (), raw: tuple[str, ...] = ()) -> str:
    """A compact pipe table of string cells, escaped by :func:`medeval_kit.tables._markdown_safe` (except the
    ``raw`` columns, escaped by the caller)."""
    from medeval_kit.tables import _markdown_safe

    safe = _markdown_safe(df.astype(str))
    for c in raw:
        safe[c] = df[c].tolist()
    align = ["--:" if c in right else ":--" for c in df.columns]
    lines = ["| " + " | ".join(safe.columns) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in safe.itertuples(index=False)]
    return "\n".join(lines)


def _published_rows(df: pd.DataFrame) -> pd.DataFrame:
    """A study's published numbers for reading: status (symbol + word), quantity, source, printed, ours, note."""
    kind = _kind(df)
    return pd.DataFrame({
        "status": [f"{SYMBOLS[s]} {s}" for s in df["status"]],
        "quantity": [q + (" (derived)" if k == "derived" else "") for q, k in zip(df["quantity"], kind)],
        "source": df["source"].tolist(),
        "published": df["published"].tolist(),
        "ours": [show_ours(p, o) or MISSING for p, o in zip(df["published"], df["ours"])],
        "note": df["note"].tolist(),
    })


def _md_text(v) -> str:
    """Free text for a Markdown paragraph or list item: inert (:func:`~medeval_kit.tables.escape_markdown`),
    on one line."""
    from medeval_kit.tables import escape_markdown

    return escape_markdown(" ".join(str(v).split()), quote=False)  # Markdown text, never an attribute


_SAFE_URL = re.compile(r"https?://[^\s<>\"'`]+")


def _md_url(url: str) -> str:
    """`` <url>`` (an autolink) for a plain http(s) address, else the text escaped; "" for no address."""
    if not url:
        return ""
    return f" <{url}>" if _SAFE_URL.fullmatch(url) else f" {_md_text(url)}"


def _link(base: Path, out: Path, rel: str) -> str:
    """A link to ``base/rel`` from a file in ``out``: relative when ``out`` is inside the project, else absolute."""
    if out.is_relative_to(base):
        return Path(os.path.relpath(base / rel, out)).as_posix()
    return (base / rel).as_posix()


def _markdown(pub, papers, figs, tabs, cites, descriptions, base: Path, out: Path) -> str:
    md = ["# medeval_kit reproduction report", "",
          "Built from the studies' outputs (`tables/*/published_numbers.csv`, figure sidecars, tables).", "",
          "## Summary", "", _md_text(headline(pub, papers, figs, tabs)), "",
          "Each number has one of four statuses, each with one rule:", ""]
    md += [f"- **{_md_text(k)}**: {_md_text(v)}" for k, v in _rules()]
    md += ["", _md_text(PRECISION + " " + DERIVED_NOTE), ""]
    if len(papers):
        rows = pd.DataFrame({
            "paper": [f"**{_md_text(p)}** — {_md_text(cites[p][1])}" if cites[p][1] else f"**{_md_text(p)}**"
                      for p in papers["paper"]],
            **{f"{SYMBOLS[k]} {k}": papers[k].astype(str) for k in STATUSES},
            "printed numbers": papers["numbers"].astype(str), "derived": papers["derived"].astype(str),
            "studies": papers["studies"],
        })
        md += [_md_table(rows, right=tuple(c for c in rows.columns if c not in ("paper", "studies")),
                         raw=("paper",)), ""]
        md += [f"- **{_md_text(p)}**: {_md_text(cites[p][0]) or _md_text('no data file data/published/' + p + '.yaml')}"
               + _md_url(cites[p][2]) for p in papers["paper"]]
        md.append("")
    else:
        md += ["_No study wrote published_numbers.csv yet._", ""]
    md += [(f"Status symbols: {', '.join(f'{v} {k}' for k, v in SYMBOLS.items())}. Ours is shown at the "
            "printed precision of the value it is compared with; the CSV tables keep full precision."), ""]
    for study in _studies(pub, figs, tabs):
        md += [f"## Study: {study}", ""]
        if descriptions.get(study):
            md += [_md_text(descriptions[study]), ""]
        sp = pub[pub["study"] == study]
        if len(sp):
            md += ["### Published numbers", "", _md_text(_counts_line(sp)), ""]
            for paper, rows in sp.groupby("paper", sort=False):
                md += [f"#### {_md_text(paper)}", "", _md_table(_published_rows(rows), right=("published", "ours")), ""]
        sf = figs[figs["study"] == study]
        if len(sf):
            md += ["### Figures", ""]
            md += [f"- [{_md_text(r.figure)}]({_link(base, out, r.png)}) — {_md_text(r.notebook)}"
                   + (f"; {_md_text(_params(r.parameters))}" if _params(r.parameters) else "") for r in sf.itertuples()]
            md.append("")
        st = tabs[tabs["study"] == study]
        if len(st):
            rows = pd.DataFrame({"table": [f"[{t}]({_link(base, out, p)})" for t, p in zip(st["table"], st["path"])],
                                 "rows": st["rows"].astype(int).astype(str).tolist(), "columns": st["columns"].tolist()})
            md += ["### Tables", "", _md_table(rows, right=("rows",)), ""]
    return "\n".join(md)


# --------------------------------------------------------------------------- HTML

_CSS = """
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1b1b1b;background:#f6f6f4}
main{max-width:1200px;margin:0 auto;padding:12px 20px 40px}
h1{font-size:26px;margin:16px 0 4px}h2{font-size:21px;margin:24px 0 8px}h3{font-size:17px;margin:18px 0 6px}
h4{font-size:15px;margin:14px 0 4px}
p,li{max-width:75em}a{color:#005a8c}
code{font-size:13px;overflow-wrap:anywhere}
.muted{color:#555;font-size:13px}
.scroll{max-width:100%;overflow-x:auto;margin:6px 0 12px}
table{border-collapse:collapse;font-size:13px;background:#fff}
th,td{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eceae6;font-weight:600;white-space:nowrap}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.pub{width:100%;min-width:600px;table-layout:fixed}table.pub th.status{width:150px}
table.pub th.source{width:20%}table.pub th.num{width:104px}table.pub td{overflow-wrap:anywhere}
table.pub td.num{overflow-wrap:normal}table.pub div.note{color:#444;font-size:12px;margin-top:2px}
table.data td.short{white-space:nowrap}table.data td.text{min-width:14em;max-width:32em}
table.summary th{white-space:normal;vertical-align:bottom}table.summary td.paper b{white-space:nowrap}
table.summary td.studies{overflow-wrap:anywhere;min-width:8em}
ul.refs{padding-left:1.2em;font-size:13px;color:#333}
ul.rules{padding-left:1.2em;font-size:14px}ul.rules li{margin:3px 0}ul.refs li{margin:3px 0;overflow-wrap:anywhere}
.badge{display:inline-block;padding:0 8px;border-radius:10px;font-size:12px;line-height:20px;white-space:nowrap}
.badge.reproduced{background:#0072B2;color:#fff}
.badge.consistent{background:#56B4E9;color:#000}
.badge.differs{background:#E69F00;color:#000}
.badge.not-recoverable{background:#fff;color:#333;border:1px dashed #777;line-height:18px}
.bar{display:flex;width:100px;height:14px;border:1px solid #999;border-radius:3px;overflow:hidden;background:#fff}
.bar span{display:block;height:100%}
.bar .reproduced{background:#0072B2}
.bar .consistent{background:repeating-linear-gradient(-45deg,#56B4E9 0 4px,#A9D9F4 4px 7px)}
.bar .differs{background:repeating-linear-gradient(45deg,#E69F00 0 4px,#F3CF80 4px 7px)}
.bar .not-recoverable{background:#BBBBBB}
details.study{background:#fff;border:1px solid #d6d4cf;border-radius:6px;margin:10px 0;padding:0 16px}
details.study>summary{cursor:pointer;padding:10px 0;font-size:17px;font-weight:600}
details.study>summary .badge{font-weight:400;margin-left:4px}
details.table{margin:4px 0;border-left:3px solid #d6d4cf;padding-left:10px}
details.table>summary{cursor:pointer;font-size:14px}
.figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,460px),1fr));gap:18px;margin:8px 0}
figure{margin:0;min-width:0}figure.wide{grid-column:1/-1}
figure.wide img{max-width:1100px}
figure img{display:block;width:100%;height:auto;border:1px solid #e4e2dd;background:#fff}
figcaption{font-size:12px;color:#444;overflow-wrap:anywhere;margin-top:4px}
"""


def _esc(v) -> str:
    return html.escape(str(v))


def _badge(status: str, count: int | None = None) -> str:
    text = f"{SYMBOLS[status]} {status}" if count is None else f"{SYMBOLS[status]} {count} {status}"
    return f'<span class="badge {status.replace(" ", "-")}">{_esc(text)}</span>'


def _bar(counts: pd.Series) -> str:
    """A stacked bar of status shares (hatched sky blue for consistent, hatched orange for differs); the counts
    are written beside it."""
    total = int(counts.sum()) or 1
    parts = "".join(f'<span class="{k.replace(" ", "-")}" style="width:{100 * counts[k] / total:.2f}%"></span>'
                    for k in STATUSES if counts[k])
    label = ", ".join(f"{counts[k]} {k}" for k in STATUSES)
    return f'<div class="bar" role="img" aria-label="{_esc(label)}">{parts}</div>'


def _html_table(df: pd.DataFrame, *, numeric=(), classes: dict[str, str] | None = None, raw=(),
                table_class: str = "") -> str:
    """An HTML table of string cells (escaped, except the ``raw`` columns) inside its own scrolling box."""
    classes = dict(classes or {})
    for c in numeric:
        classes[c] = "num"
    head = "".join(f'<th class="{classes[c]}">{_esc(c)}</th>' if c in classes else f"<th>{_esc(c)}</th>"
                   for c in df.columns)
    body = []
    for r in df.itertuples(index=False):
        cells = []
        for c, v in zip(df.columns, r):
            text = v if c in raw else _esc(v)
            cells.append(f'<td class="{classes[c]}">{text}</td>' if c in classes else f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    tc = f' class="{table_class}"' if table_class else ""
    return f'<div class="scroll"><table{tc}><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def _summary_html(pub, papers, figs, tabs, cites) -> str:
    rules = "".join(f"<li>{_badge(k)} {_esc(STATUS_RULES[k])}</li>" for k in STATUSES)
    parts = [f"<p>{_esc(headline(pub, papers, figs, tabs))}</p>",
             f'<p>Each number has one of four statuses, each with one rule:</p><ul class="rules">{rules}</ul>',
             f'<p class="muted">{_esc(PRECISION)} {_esc(DERIVED_NOTE)}</p>']
    if len(papers):
        rows, refs = [], []
        for _, r in papers.iterrows():
            citation, short, url = cites[r.paper]
            counts = r[list(STATUSES)].astype(int)
            rows.append({"paper": f"<b>{_esc(r.paper)}</b>" + (f'<br><span class="muted">{_esc(short)}</span>'
                                                                 if short else ""),
                         "share": _bar(counts), **{f"{SYMBOLS[k]} {k}": str(counts[k]) for k in STATUSES},
                         "printed numbers": str(r.numbers), "derived": str(r.derived),
                         "studies": _esc(r.studies)})
            cite = _esc(citation) if citation else f"<i>no data file data/published/{_esc(r.paper)}.yaml</i>"
            link = f' <a href="{_esc(url)}">{_esc(url)}</a>' if url else ""
            refs.append(f"<li><b>{_esc(r.paper)}</b>: {cite}{link}</li>")
        df = pd.DataFrame(rows)
        parts.append(_html_table(df, numeric=[c for c in df.columns if c[0] in SYMBOLS.values()]
                                 + ["printed numbers", "derived"],
                                 classes={"paper": "paper", "studies": "studies"}, raw=("paper", "share"),
                                 table_class="summary"))
        legend = " ".join(_badge(k) for k in STATUSES)
        parts.append(f'<p class="muted">{legend}<br>Ours is shown at the printed precision of the '
                     "value it is compared with (a count as an integer; a tie at that precision keeps its next "
                     "digit, 23/40 is 57.5%); the CSV tables keep full precision. A number that several studies "
                     "check is counted once here; the status columns count printed numbers only.</p>")
        parts.append(f'<h3>Papers</h3><ul class="refs">{"".join(refs)}</ul>')
    else:
        parts.append("<p><i>No study wrote published_numbers.csv yet.</i></p>")
    return '<section id="summary"><h2>Summary</h2>' + "".join(parts) + "</section>"


def _png_width(data: bytes) -> int:
    """Width in pixels from a PNG's IHDR chunk (0 when the bytes are not a PNG)."""
    return int.from_bytes(data[16:20], "big") if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24 else 0


def _figure_html(r, base: Path) -> str:
    png = base / r.png
    caption = (f"<b>{_esc(r.figure)}</b> · {_esc(r.notebook)}"
               + (f" · {_esc(_params(r.parameters))}" if _params(r.parameters) else ""))
    if not png.is_file():
        return f"<figure><p><i>{_esc(r.png)} is missing</i></p><figcaption>{caption}</figcaption></figure>"
    raw = png.read_bytes()
    data = base64.b64encode(raw).decode("ascii")
    wide = ' class="wide"' if _png_width(raw) >= WIDE_PX else ""
    return (f'<figure{wide}><img src="data:image/png;base64,{data}" alt="{_esc(r.figure)}">'
            f"<figcaption>{caption}</figcaption></figure>")


def _table_html(r, base: Path) -> str:
    df = _read_table(base / r.path)
    shown, numeric = display_table(df.head(PREVIEW_ROWS))
    more = (f"first {PREVIEW_ROWS} of {len(df)} rows; " if len(df) > PREVIEW_ROWS else "")
    text = {c: "short" if shown[c].str.len().max() <= SHORT_CHARS else "text"
            for c in shown.columns if c not in numeric and len(shown)}
    body = (_html_table(shown, numeric=numeric, classes=text, table_class="data") if len(df.columns)
            else "<p><i>empty</i></p>")
    return (f'<details class="table"><summary><b>{_esc(r.table)}</b> '
            f'<span class="muted">{len(df)} rows × {len(df.columns)} columns</span></summary>'
            f'{body}<p class="muted">{more}full table: <code>{_esc(r.path)}</code></p></details>')


def _study_html(study: str, pub, figs, tabs, descriptions, base: Path) -> str:
    sp, sf, st = pub[pub["study"] == study], figs[figs["study"] == study], tabs[tabs["study"] == study]
    c = _status_counts(sp)  # every check of the study, derived ones included (each table row has its badge)
    head = (f"{_esc(study)} " + "".join(_badge(k, c[k]) for k in STATUSES if c[k])
            + f' <span class="muted">{len(sf)} figures · {len(st)} tables</span>')
    parts = [f"<p>{_esc(descriptions[study])}</p>"] if descriptions.get(study) else []
    if len(sp):
        parts.append(f"<h3>Published numbers</h3><p>{_esc(_counts_line(sp))}</p>")
        for paper, rows in sp.groupby("paper", sort=False):
            shown = _published_rows(rows)
            shown["status"] = [_badge(s) for s in rows["status"]]
            # the note under its quantity: the table then fits 800 px without a squeezed note column
            shown["quantity"] = [_esc(q) + (f'<div class="note">{_esc(n)}</div>' if n else "")
                                 for q, n in zip(shown["quantity"], shown.pop("note"))]
            shown = shown.rename(columns={"quantity": "quantity and note"})
            parts.append(f"<h4>{_esc(paper)}</h4>")
            parts.append(_html_table(shown, numeric=("published", "ours"), raw=("status", "quantity and note"),
                                     table_class="pub", classes={"status": "status", "source": "source"}))
    if len(sf):
        parts.append("<h3>Figures</h3><div class=\"figs\">" + "".join(_figure_html(r, base) for r in sf.itertuples())
                     + "</div>")
    if len(st):
        parts.append("<h3>Tables</h3>" + "".join(_table_html(r, base) for r in st.itertuples()))
    return (f'<details class="study" id="study-{_esc(study)}"><summary>{head}</summary>'
            + "".join(parts) + "</details>")


def _html(pub, papers, figs, tabs, cites, descriptions, base: Path) -> str:
    studies = "".join(_study_html(s, pub, figs, tabs, descriptions, base) for s in _studies(pub, figs, tabs))
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>medeval_kit reproduction report</title><style>{_CSS}</style></head><body><main>"
            "<h1>medeval_kit reproduction report</h1>"
            "<p class=\"muted\">Built from the studies' outputs (tables/*/published_numbers.csv, figure sidecars, "
            "tables); every figure is embedded, so this file stands alone.</p>"
            + _summary_html(pub, papers, figs, tabs, cites)
            + f'<section id="studies"><h2>Studies</h2>{studies}</section></main></body></html>\n')


def build_report(root: str | Path | None = None, outdir: str | Path | None = None) -> Report:
    """Write ``report.html`` and ``report.md`` (default into ``<root>/report/``) and return the Report."""
    base = _root(root).resolve()
    out = (Path(outdir) if outdir else base / "report").resolve()
    out.mkdir(parents=True, exist_ok=True)
    pub, figs, tabs = collect_published(base), collect_figures(base), collect_tables(base)
    papers = paper_counts(pub)
    cites = {}
    for p in papers["paper"]:
        f = _paper_file(p, base)
        cites[p] = (f.citation, f.short, f.url) if f else ("", "", "")
    descriptions = _study_descriptions(base)

    md_path = out / "report.md"
    md_path.write_text(_markdown(pub, papers, figs, tabs, cites, descriptions, base, out), encoding="utf-8")
    html_path = out / "report.html"
    html_path.write_text(_html(pub, papers, figs, tabs, cites, descriptions, base), encoding="utf-8")
    return Report(pub, figs, tabs, papers, html_path, md_path)


def _cmd_report(args: argparse.Namespace) -> int:
    from medeval_kit.cli.project_report import build_project_report, is_toolkit_checkout

    if args.project or not is_toolkit_checkout(_root(args.root)):  # a team's project: its own runs
        print(f"project report -> {build_project_report(args.root, args.out)}")
        return 0
    rep = build_report(args.root, args.out)
    print(rep.summary())
    return 0


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``medeval report``."""
    p = sub.add_parser("report", help="build report.html (self-contained) / report.md from the studies' outputs")
    p.add_argument("--root", default=None, help="project folder (default: the project, medeval_kit.paths.root)")
    p.add_argument("--out", default=None, help="output folder (default: <project>/report)")
    p.add_argument("--project", action="store_true",
                   help="build the project's own report from runs/*/*/ (the default outside the toolkit's checkout)")
    p.set_defaults(func=_cmd_report)
