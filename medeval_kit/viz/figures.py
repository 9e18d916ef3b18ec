"""Paper-style figures: one style, colourblind-safe palette, and a saver with provenance sidecars."""

from __future__ import annotations

import base64
import math
import threading
from collections.abc import Mapping
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib import collections as mcoll  # noqa: E402
from matplotlib import image as mimage  # noqa: E402
from matplotlib import lines as mlines  # noqa: E402
from matplotlib import patches as mpatches  # noqa: E402
from matplotlib import text as mtext  # noqa: E402
from matplotlib import ticker as mticker  # noqa: E402
from matplotlib.path import Path as MplPath  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

from medeval_kit.docstrings import shared_docs
from medeval_kit.tables import STABLE_DIGITS, _stable, data_hash, sidecar, write_sidecar  # noqa: E402

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



def fixed(v, decimals: int) -> str:
    """``v`` with ``decimals`` decimals, after the tables' rounding to 12 significant digits.

    Text drawn into a figure (annotations, legend entries) goes through this, so that a value sitting on a
    rounding tie ("0.615" at 2 decimals) prints the same on every machine, whatever its last bit.
    """
    return f"{_stable(v):.{decimals}f}"


def text_width_pt(text: str, size: float) -> float:
    """Width in points of one line of ``text`` at font ``size``, from the font's metrics (no renderer: the same on
    every machine)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    return text_to_path.get_text_width_height_descent(text, FontProperties(size=size), ismath=False)[0]


def renderer_of(fig: Any):
    """The renderer of ``fig``'s canvas, or None when the canvas has none (nothing can be measured)."""
    get_renderer = getattr(fig.canvas, "get_renderer", None)
    return None if get_renderer is None else get_renderer()


def legend_clear_of_data(ax: Any, *, pad: float = 0.03, **kw: Any):
    """Draw ``ax``'s legend at its top and raise the y limit until no data reaches the legend.

    Error bars and bands often rise into a legend placed inside the axes. The legend's height is measured (font
    metrics, so the same on every machine) and the upper y limit raised so that the data's old top stays below
    it; the y ticks and the left spine still stop at that old top, so an axis bounded by 1 (a probability) shows
    no tick above 1. Axes sharing y with ``ax`` are raised once. A legend taller than two thirds of the axes is
    left where it is.

    Parameters
    ----------
    ax : Axes
        The axes, with its data drawn and its y limits set.
    pad : float, default 0.03
        Room between the data's top and the legend, as a share of the axes' height.
    **kw
        Passed to ``ax.legend`` (default ``loc="upper center"``, ``frameon=False``).

    Returns
    -------
    Legend or None
        The legend (None when nothing has a label).

    Examples
    --------
    >>> fig, ax = figure("single")
    >>> _ = ax.errorbar([1, 2], [0.8, 0.9], yerr=0.1, label="model")
    >>> ax.set_ylim(0, 1) and None
    >>> leg = legend_clear_of_data(ax)
    >>> bool(ax.get_ylim()[1] > 1 and max(ax.get_yticks()) <= 1)
    True
    """
    kw.setdefault("loc", "upper center")
    kw.setdefault("frameon", False)
    handles = kw.get("handles") or ax.get_legend_handles_labels()[0]
    if not handles:
        return None
    leg = ax.legend(**kw)
    renderer = renderer_of(ax.figure)
    if ax.get_yscale() != "linear" or renderer is None or ax.yaxis_inverted():
        return leg
    share = 1 - leg.get_window_extent(renderer).height / max(ax.get_window_extent(renderer).height, 1) - pad
    if share < 1 / 3:
        return leg
    group = ax.get_shared_y_axes().get_siblings(ax)
    top = next((a._medeval_data_top for a in group if hasattr(a, "_medeval_data_top")), None)
    y0, y1 = ax.get_ylim()
    if top is None:
        top = y1
        ticks = [t for t in ax.get_yticks() if y0 - 1e-9 * abs(y1 - y0) <= t <= y1 + 1e-9 * abs(y1 - y0)]
        for a in group:
            a._medeval_data_top = top
        ax.set_yticks(ticks)
    ax.set_ylim(y0, max(ax.get_ylim()[1], y0 + (top - y0) / share))
    ax.spines["left"].set_bounds(y0, top)
    return leg


def fit_label(ax: Any, text: str, axis: str = "y") -> str:
    """Set ``ax``'s ``axis`` label to ``text``, broken into lines where it is longer than the axes' side.

    A long y label on a short axes ran above and below the figure. The text is measured with the font's metrics
    (the same on every machine) and wrapped at spaces into as few lines as fit.

    Parameters
    ----------
    ax : Axes
        The axes.
    text : str
        The label.
    axis : {"y", "x"}, default "y"
        Which label.

    Returns
    -------
    str
        The label as set (with its line breaks).

    Examples
    --------
    >>> fig, ax = figure("single", aspect=0.4)
    >>> "\\n" in fit_label(ax, "flip rate (verdict changes with the order), 95% CI")
    True
    """
    import textwrap

    label = ax.yaxis.label if axis == "y" else ax.xaxis.label
    box = ax.get_position()
    room = 72 * (box.height * ax.figure.get_figheight() if axis == "y" else box.width * ax.figure.get_figwidth())
    width = text_width_pt(text, label.get_fontsize())
    if width > room and " " in text:
        lines = int(np.ceil(width / max(room, 1.0)))
        text = "\n".join(textwrap.wrap(text, width=int(np.ceil(len(text) / lines)) + 1, break_long_words=False))
    (ax.set_ylabel if axis == "y" else ax.set_xlabel)(text)
    return text


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

    Before writing, every data coordinate drawn (lines, markers, error bars, bands, bars and other patches,
    text positions, image extents, colour values, then the axes' positions and limits) is rounded to
    :data:`medeval_kit.tables.STABLE_DIGITS` (12) significant digits, as the tables' numbers are: results
    that differ between machines in their last bits (~1e-16) are drawn from the same numbers, so a coordinate
    near a rounding boundary of the SVG or PDF writer is written the same everywhere. ``fig`` is changed in
    place (and closed). All formats share one tight bounding box, found by one layout pass at 300 dpi. PDFs
    embed each font (TrueType, as journals require) as matplotlib's subset without the OpenType layout tables,
    which no PDF reader uses (:data:`LAYOUT_TABLES`).

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

    Examples
    --------
    >>> import tempfile
    >>> fig, ax = figure("single")
    >>> _ = ax.plot([0.0, 1.0], [0.1 + 0.2, 1 / 3])
    >>> sorted(save_figure(fig, "demo", tempfile.mkdtemp(), formats=("svg",)))
    ['json', 'svg']
    """
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    stamp = {
        "pdf": {"CreationDate": None, "ModDate": None, "Producer": "medeval_kit"},
        "svg": {"Date": None},
        "png": {"Software": "medeval_kit"},
    }
    _round_artists(fig, STABLE_DIGITS)
    with plt.rc_context(_RC):
        box = _tight_box(fig, dpi=300)
        for fmt in formats:
            p = out / f"{name}.{fmt}"
            with _lean_pdf_fonts() if fmt == "pdf" else nullcontext():
                fig.savefig(p, format=fmt, metadata=stamp.get(fmt), dpi=300, bbox_inches=box)
            paths[fmt] = p
    paths["json"] = write_sidecar(out / f"{name}.json", sidecar("figure", name, paths, data=data, meta=meta))
    plt.close(fig)
    return paths


LAYOUT_TABLES = ("GSUB", "GPOS", "GDEF", "MATH", "BASE", "JSTF")
"""OpenType layout tables left out of the fonts embedded in PDFs (:func:`save_figure`)."""

_lean = {"users": 0, "default": None}
_lean_lock = threading.Lock()


@contextmanager
def _lean_pdf_fonts():
    """Inside the block, fontTools' subsetter (which matplotlib calls to embed each font in a PDF) leaves out the
    OpenType layout tables (:data:`LAYOUT_TABLES`).

    matplotlib shapes text itself, from the font file on disk, and writes every glyph's id and position into the
    PDF; a PDF reader draws glyphs by id and never reads these tables. fontTools decompiles them all the same
    before it can drop the unused glyphs: with DejaVu Sans, that is about 70 ms of each PDF's save, most of it.
    matplotlib passes no option through, so the default list of tables fontTools drops is extended for the
    duration of the block and restored after it (reference-counted: saves in several threads share it). A
    fontTools without that list is left as it is.
    """
    from fontTools import subset  # matplotlib's own dependency

    options = subset.Options
    if not isinstance(getattr(options, "_drop_tables_default", None), list):
        yield
        return
    with _lean_lock:
        if _lean["users"] == 0:
            _lean["default"] = options._drop_tables_default
            options._drop_tables_default = _lean["default"] + [t for t in LAYOUT_TABLES
                                                               if t not in _lean["default"]]
        _lean["users"] += 1
    try:
        yield
    finally:
        with _lean_lock:
            _lean["users"] -= 1
            if _lean["users"] == 0:
                options._drop_tables_default = _lean["default"]


def _tight_box(fig: Any, dpi: float) -> Bbox | str:
    """The tight bounding box (padded, in inches) of ``fig`` at ``dpi``, from one layout pass.

    ``bbox_inches="tight"`` runs a layout pass for every format written; one box for all formats saves two of
    the three (about a third of :func:`save_figure`'s time). Its corners are rounded to
    :data:`~medeval_kit.tables.STABLE_DIGITS` like the coordinates drawn. A figure with a layout engine
    (constrained layout) lays itself out at each save anyway, so it keeps matplotlib's own tight box.
    """
    if fig.get_layout_engine() is not None:
        return "tight"
    old = fig.dpi
    try:
        fig.set_dpi(dpi)
        fig.draw_without_rendering()
        box = fig.get_tightbbox().padded(plt.rcParams["savefig.pad_inches"])
    finally:
        fig.set_dpi(old)
    r = _round_array(box.get_points(), STABLE_DIGITS)
    return Bbox(box.get_points() if r is None else r)


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
    ``export`` extra for it. Floats in the traces and layout are written at 12 significant digits
    (:data:`medeval_kit.tables.STABLE_DIGITS`), as :func:`save_figure` draws them; ``fig`` is left unchanged.

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

    Examples
    --------
    >>> import plotly.graph_objects as go, tempfile
    >>> sorted(save_plotly(go.Figure(go.Bar(x=["a", "b"], y=[0.1 + 0.2, 1 / 3])), "demo", tempfile.mkdtemp()))
    ['html', 'json']
    """
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    fig = _round_plotly(fig, STABLE_DIGITS)
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


# --------------------------------------------------------------------------- drawing from stable numbers
# Issue 25: a coordinate computed 1 ulp apart on two machines can straddle the SVG/PDF writers' 6th decimal.
# Rounding what is drawn to STABLE_DIGITS makes both machines draw the same doubles; everything after
# (transforms, autoscaling, ticks, rendering) is then the same arithmetic on the same inputs.


def _round_value(v: float, digits: int) -> float:
    """``v`` at ``digits`` significant digits; NaN and inf unchanged.

    Decimal formatting is correctly rounded on every platform, unlike ``np.round``/``log10`` (libm, SIMD).
    """
    return float(f"{v:.{digits}g}") if math.isfinite(v) else v


def _round_array(a: Any, digits: int) -> Any:
    """A float array (masked or not) at ``digits`` significant digits, or ``None`` when nothing changes.

    Anything that is not floating point (ints, text, dates, categories) gives ``None``: left as drawn.
    """
    if isinstance(a, (str, bytes)) or a is None:
        return None
    try:
        arr = np.ma.asarray(a) if np.ma.isMaskedArray(a) else np.asarray(a)
    except (TypeError, ValueError):
        return None
    if arr.dtype.kind != "f" or arr.size == 0:
        return None
    data = np.ma.getdata(arr)
    flat = data.ravel()
    out = np.fromiter((_round_value(float(v), digits) for v in flat), dtype=float, count=flat.size)
    out = out.astype(data.dtype, copy=False).reshape(data.shape)
    if np.array_equal(out, data, equal_nan=True):
        return None
    if np.ma.isMaskedArray(arr):
        return np.ma.array(out, mask=np.ma.getmask(arr), copy=False)
    return out


def _round_scalar(v: Any, digits: int) -> Any:
    """A float scalar at ``digits`` significant digits; anything else (ints, text, dates) unchanged."""
    if isinstance(v, (float, np.floating)) and not isinstance(v, bool):
        return type(v)(_round_value(float(v), digits))
    return v


def _round_pair(xy: Any, digits: int) -> Any:
    """An (x, y) position with its float members rounded; ``None`` when nothing changes."""
    try:
        x, y = xy
    except (TypeError, ValueError):
        return None
    rx, ry = _round_scalar(x, digits), _round_scalar(y, digits)
    return None if (rx is x and ry is y) or (rx == x and ry == y) else (rx, ry)


def _round_line(line: mlines.Line2D, digits: int) -> None:
    x, y = line.get_xdata(orig=True), line.get_ydata(orig=True)
    rx, ry = _round_array(x, digits), _round_array(y, digits)
    if rx is not None or ry is not None:
        line.set_data(x if rx is None else rx, y if ry is None else ry)


def _round_paths(paths: Any, digits: int) -> None:
    """Round the vertices of ``paths`` in place (read-only paths are shared unit shapes, not data)."""
    for path in paths or ():
        if getattr(path, "readonly", False):
            continue
        r = _round_array(path.vertices, digits)
        if r is not None:
            path.vertices = r


def _round_collection(coll: mcoll.Collection, digits: int) -> None:
    if isinstance(coll, mcoll.QuadMesh):
        coords = coll.get_coordinates()  # the mesh is drawn from this array, not from get_paths()
        r = _round_array(coords, digits)
        if r is not None:
            coords[...] = r
    else:
        _round_paths(coll.get_paths(), digits)  # line segments (error bars), polygons (bands), markers
    r = _round_array(coll.get_offsets(), digits)  # scatter points
    if r is not None:
        coll.set_offsets(r)
    if hasattr(coll, "get_sizes") and hasattr(coll, "set_sizes"):
        r = _round_array(coll.get_sizes(), digits)
        if r is not None:
            coll.set_sizes(r)
    coll.stale = True


def _round_patch(patch: mpatches.Patch, digits: int) -> None:
    def rnd(v):
        return _round_scalar(v, digits)

    if isinstance(patch, mpatches.Rectangle):  # bars, axvspan
        patch.set_bounds(rnd(patch.get_x()), rnd(patch.get_y()), rnd(patch.get_width()), rnd(patch.get_height()))
    elif isinstance(patch, mpatches.Polygon):
        r = _round_array(patch.get_xy(), digits)
        if r is not None:
            patch.set_xy(r)
    elif isinstance(patch, mpatches.Wedge):  # pie slices
        patch.set_center(_round_pair(patch.center, digits) or patch.center)
        patch.set_radius(rnd(patch.r))
        patch.set_theta1(rnd(patch.theta1))
        patch.set_theta2(rnd(patch.theta2))
        if patch.width is not None:
            patch.set_width(rnd(patch.width))
    elif isinstance(patch, mpatches.Ellipse):  # Circle, Arc
        patch.set_center(_round_pair(patch.get_center(), digits) or patch.get_center())
        patch.set_width(rnd(patch.get_width()))
        patch.set_height(rnd(patch.get_height()))
        patch.set_angle(rnd(patch.get_angle()))
    elif isinstance(patch, mpatches.StepPatch):  # stairs
        values, edges, baseline = patch.get_data()
        rv, re_ = _round_array(values, digits), _round_array(edges, digits)
        rb = _round_array(baseline, digits)  # a number, an array (stacked steps) or None
        patch.set_data(values if rv is None else rv, edges if re_ is None else re_,
                       baseline if rb is None else rb)
    elif type(patch) is mpatches.PathPatch:  # exact type: subclasses may derive their path
        path = patch.get_path()
        r = _round_array(path.vertices, digits)
        if r is not None:
            patch.set_path(MplPath(r, path.codes))


def _round_text(text: mtext.Text, digits: int) -> None:
    r = _round_pair(text.get_position(), digits)
    if r is not None:
        text.set_position(r)
    if isinstance(text, mtext.Annotation):  # the annotated point; the position above is the text's
        r = _round_pair(text.xy, digits)
        if r is not None:
            text.xy = r
            text.stale = True


def _round_image(image: mimage.AxesImage, digits: int) -> None:
    r = _round_array(image.get_array(), digits)
    if r is not None:
        image.set_data(r)
    if image._extent is not None:  # an explicit extent (data); the default one is -0.5 .. n - 0.5
        r = _round_array(image.get_extent(), digits)
        if r is not None:
            image.set_extent(tuple(r))


def _round_mappable(artist: Any, digits: int) -> None:
    """Colour values and colour limits: a heatmap's cells, a colour bar's range."""
    if not hasattr(artist, "get_array") or not hasattr(artist, "norm"):
        return
    if not isinstance(artist, mimage.AxesImage):  # an image's values: _round_image
        r = _round_array(artist.get_array(), digits)
        if r is not None:
            artist.set_array(r)
    norm = artist.norm
    for name in ("vmin", "vmax"):
        v = getattr(norm, name, None)
        r = _round_scalar(v, digits)
        if v is not None and r != v:
            setattr(norm, name, r)  # a colour bar on this norm redraws itself from the rounded range


def _round_one(artist: Any, digits: int) -> None:
    """Round one artist's data coordinates; artist types not listed are left as they are."""
    if isinstance(artist, mlines.Line2D):
        _round_line(artist, digits)
    elif isinstance(artist, mcoll.Collection):
        _round_collection(artist, digits)
    elif isinstance(artist, mpatches.Patch):
        _round_patch(artist, digits)
    elif isinstance(artist, mtext.Text):
        _round_text(artist, digits)
    elif isinstance(artist, mimage.AxesImage):
        _round_image(artist, digits)
    _round_mappable(artist, digits)
    sticky = getattr(artist, "sticky_edges", None)  # autoscaling snaps to these (bar bases, image edges)
    for edges in (sticky.x, sticky.y) if sticky is not None else ():
        r = _round_array(edges, digits)
        if r is not None:
            edges[:] = list(r)


def _round_axes(ax: Any, digits: int) -> None:
    """Position, data limits, then view limits and fixed ticks, rounded after the data they come from."""
    # a layout run while plotting (fig.tight_layout()) placed the axes from text extents of the unrounded
    # data; SVG clip-path ids hash the clip box at full precision, so the last bits would reach the file
    r = _round_array(ax.get_position(original=True).get_points(), digits)
    if r is not None:
        in_layout = ax.get_in_layout()
        ax.set_position(Bbox(r), which="both")
        ax.set_in_layout(in_layout)  # set_position takes an Axes out of the layout engine: put it back
    lim = ax.dataLim
    r = _round_array(lim.get_points(), digits)  # min/max of the data: rounding is monotone, so this is
    if r is not None:                           # the data limits of the rounded data
        lim.set_points(r)
    for name in ("x", "y"):
        lo, hi = getattr(ax, f"get_{name}lim")()  # runs a pending autoscale, now on the rounded limits
        rlo, rhi = _round_scalar(lo, digits), _round_scalar(hi, digits)
        if (rlo, rhi) != (lo, hi):
            getattr(ax, f"set_{name}lim")(rlo, rhi, auto=None)  # auto=None: keep the autoscale setting
        axis = getattr(ax, f"{name}axis")
        for locator in (axis.get_major_locator(), axis.get_minor_locator()):
            if isinstance(locator, mticker.FixedLocator):
                r = _round_array(locator.locs, digits)
                if r is not None:
                    locator.locs = r


def _attempt(fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 - an artist or axes of a kind not foreseen is saved as drawn, never lost
        pass


def _round_artists(fig: Any, digits: int = STABLE_DIGITS) -> None:
    """Round every data coordinate drawn in ``fig`` (in place) to ``digits`` significant digits.

    Lines, collections (scatter offsets, error-bar segments, bands, meshes, sizes), patches (bars, polygons,
    wedges, ellipses, steps, paths), texts and annotations, images (values and extent), colour values and
    colour limits; then each Axes' data and view limits and fixed tick positions, so that autoscaled limits
    come from the rounded data, and each Axes' position (placed by a layout run while plotting). NaN, inf,
    masks, and non-float data (ints, text, dates) are kept; artists of other kinds are left untouched.
    """
    figs, seen, axes = [fig], set(), []
    while figs:  # the figure and its subfigures
        f = figs.pop()
        figs.extend(getattr(f, "subfigs", []))
        for ax in getattr(f, "axes", []):
            stack = [ax]
            while stack:  # an Axes and its inset axes
                a = stack.pop()
                if id(a) not in seen:
                    seen.add(id(a))
                    axes.append(a)
                    stack.extend(getattr(a, "child_axes", []))
        for artist in [*getattr(f, "lines", []), *getattr(f, "patches", []), *getattr(f, "texts", []),
                       *getattr(f, "images", [])]:
            _attempt(_round_one, artist, digits)
    for ax in axes:
        for artist in [*ax.lines, *ax.collections, *ax.patches, *ax.texts, *ax.images, *ax.artists]:
            _attempt(_round_one, artist, digits)
    for ax in axes:  # after every artist: a colour bar's axes follows its (rounded) norm
        _attempt(_round_axes, ax, digits)


def _round_tree(obj: Any, digits: int) -> Any:
    """A plotly figure dict with every float (in lists, arrays and scalars) at ``digits`` significant digits."""
    if isinstance(obj, dict) and isinstance(obj.get("bdata"), str) and isinstance(obj.get("dtype"), str):
        # plotly >= 6 holds numpy arrays as base64 typed arrays: the raw doubles, last bits included
        arr = np.frombuffer(base64.b64decode(obj["bdata"]), dtype=np.dtype(obj["dtype"]))
        if "shape" in obj:
            arr = arr.reshape([int(n) for n in str(obj["shape"]).split(",") if n.strip()])
        r = _round_array(arr, digits)
        return obj if r is None else r
    if isinstance(obj, dict):
        return {k: _round_tree(v, digits) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_round_tree(v, digits) for v in obj)
    if isinstance(obj, np.ndarray):
        r = _round_array(obj, digits)
        return obj if r is None else r
    return _round_scalar(obj, digits)


def _round_plotly(fig: Any, digits: int = STABLE_DIGITS) -> Any:
    """A copy of a plotly figure with its trace and layout floats rounded; ``fig`` itself when that fails."""
    try:
        return type(fig)(_round_tree(fig.to_dict(), digits))
    except Exception:  # noqa: BLE001 - an unforeseen figure class is written as it is
        return fig
