"""Plots of agreement results (:mod:`medeval_kit.agreement` tables): rater x rater heatmap, forest plots of
judges against the humans and of Δ per design, ensemble size against kappa, and the equal-noise coverage.
Each takes the tidy result table and ``ax=None`` and returns the Figure."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from medeval_kit.agreement.registry import REGISTRY
from medeval_kit.docstrings import shared_docs
from medeval_kit.viz.figures import figure, fixed, paper_style, text_width_pt
from medeval_kit.viz.intervals import draw_estimates, no_interval_reasons, note_no_interval

__all__ = ["metric_label", "plot_kappa_heatmap", "plot_forest", "plot_ensembles", "plot_delta_forest",
           "plot_coverage"]


def _axes(ax, width="single", aspect: float = 0.75):
    """(fig, ax): the given axes and their figure, else a new paper-style figure."""
    return figure(width, aspect=aspect) if ax is None else (ax.figure, ax)


_WEIGHTS = {"linear": "linear weights", "quadratic": "quadratic weights", "custom": "custom weights"}
_OTHER_METRICS = {"fleiss_kappa_j": "Fleiss' κ_j", "kappa": "κ", "estimate": "estimate"}


@shared_docs
def metric_label(metric: str) -> str:
    """Readable label for a metric name, from the coefficient registry: ``cohen_kappa`` -> ``Cohen's κ``,
    ``cohen_kappa_quadratic`` -> ``Cohen's κ (quadratic weights)``, ``cohen_kappa (loo)`` -> ``Cohen's κ (loo)``.

    Parameters
    ----------
    metric : str
        A metric name, optionally followed by a note in parentheses (``cohen_kappa (loo)``).

    Returns
    -------
    str
        The readable label.
    """
    metric = str(metric)
    name, _, rest = metric.partition(" ")
    base, _, weights = name.rpartition("_")
    if name in REGISTRY:
        text = REGISTRY[name].label
    elif base in REGISTRY and weights in _WEIGHTS:
        text = f"{REGISTRY[base].label} ({_WEIGHTS[weights]})"
    else:
        text = _OTHER_METRICS.get(name, name.replace("_", " "))
    return f"{text} {rest}" if rest else text


def _heat_cells(pairs: pd.DataFrame, raters: list) -> tuple[np.ndarray, list[list[list[str]]], list[str]]:
    """Symmetric estimate matrix, each cell's text lines (estimate, then CI or "no CI") and why cells have no CI."""
    R = len(raters)
    M = np.full((R, R), np.nan)
    lines: list[list[list[str]]] = [[[] for _ in range(R)] for _ in range(R)]
    nan = pd.Series(np.nan, index=pairs.index)
    why = no_interval_reasons(pairs["estimate"], pairs.get("ci_low", nan), pairs.get("ci_high", nan),
                              pairs["n_items"] if "n_items" in pairs else None)
    for (_, r), w in zip(pairs.iterrows(), why):
        i, j = raters.index(r["rater_a"]), raters.index(r["rater_b"])
        M[i, j] = M[j, i] = r["estimate"]
        cell = ["NaN" if pd.isna(r["estimate"]) else fixed(r['estimate'], 2)]
        if w:
            cell.append("no CI")
        elif pd.notna(r["estimate"]):
            cell.append(f"[{fixed(r['ci_low'], 2)}, {fixed(r['ci_high'], 2)}]")
        lines[i][j] = lines[j][i] = cell
    return M, lines, [w for w in why if w]


CELL_FONT_PT = 5.0
"""Font size of the heatmap's cell texts, in points."""


def _cell_lines_shown(lines: list[list[list[str]]], cell_pt: float) -> int:
    """How many text lines every cell of a ``cell_pt`` square shows: 2 (estimate and CI), 1 (the estimate) or 0,
    the most at which the widest text and the lines' height fit in 90% of the cell (measured with the font's
    metrics, so the same on every machine)."""
    room = 0.9 * cell_pt
    for n in (2, 1):
        texts = {t for row in lines for cell in row for t in cell[:n]}
        widest = max((text_width_pt(t, CELL_FONT_PT) for t in texts), default=0.0)
        if widest <= room and n * 1.2 * CELL_FONT_PT <= room:
            return n
    return 0


def _hidden_note(pairs: pd.DataFrame) -> str:
    """``"2 of 21 rater pairs share fewer than 10 items"`` when the table hid pairs (its note says so), else ""."""
    for n in pairs.get("note", pd.Series(dtype=object)).dropna().astype(str):
        m = re.search(r"(\d+ of \d+ rater pairs share fewer than \d+ items)", n)
        if m:
            return m.group(1)
    return ""


@shared_docs
def plot_kappa_heatmap(pairs: pd.DataFrame, *, order=None, title: str | None = None, width="single", ax=None):
    """Heatmap of a :func:`~medeval_kit.agreement.pairwise_matrix` table; cells show estimate and CI.

    A cell shows what fits in it: the estimate and its CI; with many raters, the estimate only; with more, the
    colour only. The footnote then says the numbers are in the table, and the title drops "(95% CI)".

    Parameters
    ----------
    pairs : DataFrame
        A :func:`~medeval_kit.agreement.pairwise_matrix` table: one row per rater pair with the
        contract columns.
    order : sequence of str, optional
        The raters in row and column order; default as they first appear.
    {title}
    {width}
    {ax}

    Returns
    -------
    {figure}
    """
    raters = order or list(dict.fromkeys(list(pairs["rater_a"]) + list(pairs["rater_b"])))
    M, lines, why = _heat_cells(pairs, raters)
    R = len(raters)
    with paper_style():
        fig, ax = _axes(ax, width, aspect=0.85)
        im = ax.imshow(M, vmin=min(0.0, np.nanmin(M) if np.isfinite(M).any() else 0.0), vmax=1.0, cmap="viridis")
        ax.set_xticks(range(R), raters, rotation=45, ha="right")
        ax.set_yticks(range(R), raters)
        metric = metric_label(pairs["metric"].iloc[0] if len(pairs) else "estimate")
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label=metric)
        ax.apply_aspect()  # the axes' final box: each cell's size decides what its text can show
        box = ax.get_position()
        cell_pt = 72 * min(box.width * fig.get_figwidth(), box.height * fig.get_figheight()) / max(R, 1)
        shown = _cell_lines_shown(lines, cell_pt)
        hidden = _hidden_note(pairs)
        for i in range(R):
            for j in range(R):
                if lines[i][j] and shown:
                    v = M[i, j]
                    ax.text(j, i, "\n".join(lines[i][j][:shown]), ha="center", va="center", fontsize=CELL_FONT_PT,
                            color="black" if np.isfinite(v) and v > 0.6 else "white")
                elif hidden and i != j and not lines[i][j] and shown:
                    ax.text(j, i, "hidden", ha="center", va="center", fontsize=CELL_FONT_PT, color="0.5")
        ax.set_title(title or f"{metric} per rater pair" + (" (95% CI)" if shown == 2 else ""))
        small = {1: "the cells are too small for the CIs: they are in the table",
                 0: "the cells are too small for the numbers: they are in the table"}.get(shown)
        foot = ([f"no CI: {'; '.join(sorted(set(why)))}"] if why and shown == 2 else []) + (
            [f"hidden: {hidden}"] if hidden else []) + ([small] if small else [])
        if foot:
            ax.set_xlabel("\n".join(foot))
        for s in ax.spines.values():
            s.set_visible(False)
    return fig


@shared_docs
def plot_forest(table: pd.DataFrame, *, design: str | None = None, title: str | None = None, width="single",
                ax=None):
    """Forest plot of judges with CIs and the humans' level as a band.

    Takes :func:`~medeval_kit.agreement.judge_vs_ceiling`, :func:`~medeval_kit.agreement.judge_vs_humans` or
    :func:`~medeval_kit.agreement.compare_designs`; from the last it draws ``design`` (default: the first
    design whose judges have estimates).

    Parameters
    ----------
    table : DataFrame
        A :func:`~medeval_kit.agreement.judge_vs_ceiling`, :func:`~medeval_kit.agreement.judge_vs_humans`
        or :func:`~medeval_kit.agreement.compare_designs` table.
    design : str, optional
        Which design of a ``compare_designs`` table to draw; default the first whose judges have
        estimates.
    {title}
    {width}
    {ax}

    Returns
    -------
    {figure}
    """
    if "design" in table.columns and table["design"].nunique() > 1:
        if design is None:
            ok = table[(table["role"] == "judge") & table["estimate"].notna()]
            design = ok["design"].iloc[0] if len(ok) else table["design"].iloc[0]
        table = table[table["design"] == design]
        title = title or f"Judges against the humans; design: {design}"
    judges = table[table["role"] == "judge"].reset_index(drop=True)
    ceil = table[table["role"].isin(["ceiling", "humans"])]
    with paper_style():
        fig, ax = _axes(ax, width, aspect=0.25 + 0.12 * max(len(judges), 1))
        why = []
        if len(ceil):
            c = ceil.iloc[0]
            if np.isfinite(c["estimate"]):
                w = no_interval_reasons([c["estimate"]], [c["ci_low"]], [c["ci_high"]],
                                        [c["n_items"]] if "n_items" in c else None)[0]
                if w:
                    why.append(f"humans: {w}")
                else:
                    ax.axvspan(c["ci_low"], c["ci_high"], color="0.85", zorder=0, label="humans 95% CI")
                ax.axvline(c["estimate"], color="0.4", ls="--", lw=0.8, label=f"humans {fixed(c['estimate'], 3)}")
        y = np.arange(len(judges))[::-1]
        why += draw_estimates(ax, y, judges["estimate"], judges["ci_low"], judges["ci_high"], horizontal=True,
                              n=judges["n_items"] if "n_items" in judges else None, color="C0",
                              label="judge vs consensus")
        ax.set_yticks(y, judges["rater"])
        ax.set_xlabel(metric_label(judges["metric"].iloc[0]) if len(judges) else "estimate")
        lines = 1 + bool(note_no_interval(ax, why))
        ax.axvline(0, color="0.7", lw=0.5)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12 * lines - 0.3 / max(len(judges), 1)), ncol=3,
                  frameon=False)
        ax.set_title(title or "Judges against the human ceiling")
    return fig


@shared_docs
def plot_ensembles(table: pd.DataFrame, metric: str = "cohen_kappa", *, title: str | None = None, width="single",
                   ax=None):
    """Ensemble size against ``metric``: every ensemble as a dot, the best per size as a line.

    Parameters
    ----------
    table : DataFrame
        An :func:`~medeval_kit.agreement.ensembles` table (``size`` and one column per metric).
    metric : str, default "cohen_kappa"
        The column on the y axis.
    {title}
    {width}
    {ax}

    Returns
    -------
    {figure}
    """
    with paper_style():
        fig, ax = _axes(ax, width)
        rng = np.random.default_rng(0)  # horizontal jitter only, fixed so figures are byte-stable
        x = table["size"] + rng.uniform(-0.12, 0.12, len(table))
        ax.scatter(x, table[metric], s=6, alpha=0.6, color="C0", label="ensemble")
        best = table.groupby("size")[metric].max()
        ax.plot(best.index, best.values, "-o", ms=3, color="C1", label="best per size")
        sizes = sorted(table["size"].unique())
        ax.set_xticks(sizes)
        if sizes:  # the jitter stays within its size's slot, even when there is one size
            ax.set_xlim(sizes[0] - 0.5, sizes[-1] + 0.5)
        ax.set_xlabel("ensemble size (majority vote)")
        ax.set_ylabel(metric_label(metric))
        ax.legend(frameon=False)
        ax.set_title(title or f"{len(table)} ensembles")
    return fig


def _withheld(table: pd.DataFrame, ax, width, title: str, headline: str):
    """A figure that says why there is nothing to draw: ``headline`` and the table's notes, in the axes."""
    import textwrap

    notes = [str(n) for n in dict.fromkeys(table.get("note", pd.Series(dtype=object)).dropna()) if str(n)]
    with paper_style():
        fig, ax = _axes(ax, width, aspect=0.45)
        body = "\n".join(textwrap.fill(n, 70) for n in notes[:4]) or "the table has no rows"
        ax.text(0.5, 0.5, f"{headline}:\n{body}", ha="center", va="center", fontsize=7, transform=ax.transAxes)
        ax.set_axis_off()
        ax.set_title(title)
    return fig


@shared_docs
def plot_delta_forest(table: pd.DataFrame, *, title: str | None = None, width="single", ax=None):
    """Forest plot of Δ = judge − humans with its paired-bootstrap CI, one marker style per design.

    Takes :func:`~medeval_kit.agreement.compare_designs` (or one :func:`judge_vs_humans` table);
    the dashed line is the non-inferiority margin −``margin``. Judges without a Δ are left out; when no judge has
    one, the figure says why (the table's notes, e.g. a design that needs two humans) instead of empty axes.

    Parameters
    ----------
    table : DataFrame
        A :func:`~medeval_kit.agreement.compare_designs` or ``judge_vs_humans`` table with Δ, its CI
        and the margin.
    {title}
    {width}
    {ax}

    Returns
    -------
    {figure}
    """
    j = table[(table["role"] == "judge") & table["delta"].notna()].reset_index(drop=True)
    designs = list(dict.fromkeys(j["design"]))
    judges = list(dict.fromkeys(j["rater"]))
    markers = ["o", "s", "D", "^"]
    if not len(j):
        return _withheld(table, ax, width, title or "Can the judge replace the humans?", "No judge has a Δ")
    with paper_style():
        fig, ax = _axes(ax, width, aspect=0.2 + 0.08 * max(len(judges), 1) * max(len(designs), 1))
        step = 0.6 / max(len(designs), 1)
        why = []
        for k, d in enumerate(designs):
            sub = j[j["design"] == d]
            y = np.array([len(judges) - 1 - judges.index(r) for r in sub["rater"]]) + 0.3 - step * (k + 0.5)
            why += draw_estimates(ax, y, sub["delta"], sub["delta_ci_low"], sub["delta_ci_high"], horizontal=True,
                                  n=sub["n_items"] if "n_items" in sub else None, marker=markers[k % len(markers)],
                                  color=f"C{k}", label=d)
        ax.axvline(0, color="0.3", lw=0.8)
        if len(j) and j["margin"].notna().any():
            m = float(j["margin"].dropna().iloc[0])
            ax.axvline(-m, color="0.5", lw=0.8, ls="--", label=f"non-inferiority margin −{m:g}")
        ax.set_yticks(range(len(judges)), judges[::-1])
        metric = metric_label(j["metric"].iloc[0]) if len(j) else "metric"
        ax.set_xlabel(f"Δ {metric} = judge − humans (95% CI, paired item bootstrap)")
        lines = 1 + bool(note_no_interval(ax, why))
        ax.set_ylim(-0.5, len(judges) - 0.5)
        ax.xaxis.set_major_locator(MaxNLocator(6))
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.11 - 0.11 * lines - 0.25 / max(len(judges), 1)),
                  ncol=2, frameon=False)
        ax.set_title(title or "Can the judge replace the humans?")
    return fig


@shared_docs
def plot_coverage(cov: pd.DataFrame, *, confidence: float = 0.95, title: str | None = None, width="single",
                  ax=None):
    """Coverage of Δ's CI under equal noise (:func:`~medeval_kit.agreement.equal_noise_coverage`), per design.

    Parameters
    ----------
    cov : DataFrame
        An :func:`~medeval_kit.agreement.equal_noise_coverage` table.
    confidence : float, default 0.95
        The nominal coverage, drawn as a dashed line.
    {title}
    {width}
    {ax}

    Returns
    -------
    {figure}
    """
    panels = list(dict.fromkeys(cov["panel"]))
    designs = list(dict.fromkeys(cov["design"]))
    with paper_style():
        fig, ax = _axes(ax, width, aspect=0.6)
        w = 0.8 / max(len(designs), 1)
        why = []
        for k, d in enumerate(designs):
            sub = cov[cov["design"] == d].set_index("panel").reindex(panels)
            x = np.arange(len(panels)) - 0.4 + w * (k + 0.5)
            ok = sub["estimate"].notna().to_numpy()
            why += draw_estimates(ax, x[ok], sub["estimate"][ok], sub["ci_low"][ok], sub["ci_high"][ok],
                                  color=f"C{k}", label=d)
            for xi in x[~ok]:
                ax.text(xi, confidence - 0.02, "n/a", ha="center", va="top", fontsize=6, color=f"C{k}")
            for xi, r in zip(x, sub.itertuples()):
                if 0 < r.n_items < r.n_reps:  # some replications had no delta: say how many did
                    ax.text(xi + 0.05, r.estimate, f"{r.n_items}/{r.n_reps}\nvalid", fontsize=5, va="center",
                            color=f"C{k}")
        ax.axhline(confidence, color="0.4", ls="--", lw=0.8, label=f"nominal {confidence:.0%}")
        ax.set_xticks(range(len(panels)), [f"{p}\n(n = {int(cov.loc[cov.panel == p, 'n_reps'].iloc[0])} reps)"
                                           for p in panels])
        ax.set_ylabel("share of CIs covering Δ = 0")
        note_no_interval(ax, why)
        lo = float(np.nanmin(cov["ci_low"])) if cov["ci_low"].notna().any() else 0.5
        ax.set_ylim(min(lo, 0.8) - 0.05, 1.0)
        ax.legend(frameon=False, ncol=2, loc="lower left")
        ax.set_title(title or "Equal-noise judges: does the design call them equal?")
    return fig
