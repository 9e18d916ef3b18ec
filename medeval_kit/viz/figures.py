"""Paper-style figures: one style, colourblind-safe palette, and a saver with provenance sidecars."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from medeval_kit.docstrings import shared_docs
from medeval_kit.tables import data_hash, sidecar, write_sidecar  # noqa: E402

__all__ = [
    "SINGLE_COLUMN", "DOUBLE_COLUMN", "PALETTE", "paper_style", "figure", "save_figure", "save_plotly", "data_hash",
]

SINGLE_COLUMN = 3.5
"""Width in inches of a single-column figure (most two-column journals)."""
DOUBLE_COLUMN = 7.0
"""Width in inches of a double-column figure."""
PALETTE = "colorblind"

_RC = {
    "font.size": 8,
    "axes.titlesize": 9,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "pdf.fonttype": 42,  # embed TrueType fonts, as journals require
    "ps.fonttype": 42,
    "svg.fonttype": "path",
    "svg.hashsalt": "medeval_kit",  # deterministic SVG ids
    "savefig.bbox": "tight",
    "savefig.dpi": 300,
}


@contextmanager
def paper_style():
    """Apply the paper style (fonts, sizes, colourblind palette) inside a ``with`` block.

    Returns
    -------
    contextmanager
        Use as ``with paper_style(): ...``.
    """
    with sns.axes_style("ticks"), sns.color_palette(PALETTE), plt.rc_context(_RC):
        yield


@shared_docs
def figure(width: str | float = "single", aspect: float = 0.75, **kw: Any):
    """Return a new figure sized for one or two journal columns, in the paper style.

    Parameters
    ----------
    {width}
    aspect : float, default 0.75
        Height over width.
    **kw
        Passed to :func:`matplotlib.pyplot.subplots` (``ncols``, ``sharey`` ...).

    Returns
    -------
    fig : Figure
        The figure.
    ax : Axes or array of Axes
        Its axes.
    """
    w = {"single": SINGLE_COLUMN, "double": DOUBLE_COLUMN}.get(width, width)  # type: ignore[arg-type]
    plt.rcParams.update(_RC)
    sns.set_palette(PALETTE)
    return plt.subplots(figsize=(float(w), float(w) * aspect), **kw)


def save_figure(
    fig,
    name: str,
    outdir: str | Path,
    *,
    data: pd.DataFrame | None = None,
    meta: Mapping[str, Any] | None = None,
    formats: tuple[str, ...] = ("pdf", "png", "svg"),
) -> dict[str, Path]:
    """Write ``fig`` as PDF, PNG (300 dpi) and SVG plus ``name.json`` provenance; return the paths.

    The sidecar records the run context (:func:`medeval_kit.provenance.current`: the study, notebook and
    parameters ``medeval run`` gave the notebook, or what :func:`medeval_kit.provenance.start` found when it
    ran by hand) and the hash of ``data``, with floats at the tables' significant digits
    (:func:`medeval_kit.tables.sidecar`). ``meta`` (study, notebook, parameters ...), when given, replaces the
    context's study, notebook and parameters. Outputs carry no timestamps, and the sidecar no last-digit float
    noise, so re-running leaves git clean.

    Parameters
    ----------
    fig : Figure
        The figure.
    name : str
        The file name without extension.
    outdir : path-like
        The folder (created if missing).
    data : DataFrame, optional
        The table the figure was drawn from; its hash goes into the sidecar.
    meta : mapping, optional
        Study, notebook and parameters to record instead of the run context's.
    formats : tuple of str, default ("pdf", "png", "svg")
        The formats to write.

    Returns
    -------
    dict of str to Path
        The files written, by format, and ``json`` (the sidecar).
    """
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    stamp = {
        "pdf": {"CreationDate": None, "ModDate": None, "Producer": "medeval_kit"},
        "svg": {"Date": None},
        "png": {"Software": "medeval_kit"},
    }
    with plt.rc_context(_RC):
        for fmt in formats:
            p = out / f"{name}.{fmt}"
            fig.savefig(p, format=fmt, metadata=stamp.get(fmt), dpi=300)
            paths[fmt] = p
    paths["json"] = write_sidecar(out / f"{name}.json", sidecar("figure", name, paths, data=data, meta=meta))
    plt.close(fig)
    return paths


def save_plotly(
    fig,
    name: str,
    outdir: str | Path,
    *,
    offline: bool = False,
    static: tuple[str, ...] = (),
    data: pd.DataFrame | None = None,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Path]:
    """Write a plotly figure as HTML (+ JSON sidecar); return the paths.

    ``offline=True`` embeds plotly.js (about 4.8 MB a file) so the page opens with no network;
    the default loads it from a CDN (a few KB). ``static=("png", "svg")`` also exports images
    through kaleido, which needs a Chrome/Chromium (Debian's ``chromium`` works); install the
    ``export`` extra for it.

    Parameters
    ----------
    fig : plotly Figure
        The figure.
    name : str
        The file name without extension.
    outdir : path-like
        The folder (created if missing).
    offline : bool, default False
        Embed plotly.js in the page.
    static : tuple of str
        Image formats to export too (``"png"``, ``"svg"``).
    data : DataFrame, optional
        The table the figure was drawn from; its hash goes into the sidecar.
    meta : mapping, optional
        Study, notebook and parameters to record instead of the run context's.

    Returns
    -------
    dict of str to Path
        The files written, by format, and ``json`` (the sidecar).
    """
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"html": out / f"{name}.html"}
    fig.write_html(paths["html"], include_plotlyjs=True if offline else "cdn", full_html=True,
                   div_id=f"medeval-{name}")
    for fmt in static:
        try:
            fig.write_image(out / f"{name}.{fmt}", format=fmt, scale=2)
        except Exception as exc:  # kaleido or a browser missing: say what to install
            raise RuntimeError(
                f"static plotly export to {fmt} failed ({type(exc).__name__}: {exc}); install the 'export' "
                "extra (kaleido) and Debian's chromium, or keep the HTML output"
            ) from exc
        paths[fmt] = out / f"{name}.{fmt}"
    side = {**sidecar("figure", name, paths, data=data, meta=meta), "kind": "plotly", "offline": offline}
    paths["json"] = write_sidecar(out / f"{name}.json", side)
    return paths
