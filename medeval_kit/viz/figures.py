"""Paper-style figures: one style, colourblind-safe palette, and a saver with provenance sidecars."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from medeval_kit.tables import CSV_DIGITS, format_frame  # noqa: E402

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
    """Context manager applying the paper style (fonts, sizes, colourblind palette)."""
    with sns.axes_style("ticks"), sns.color_palette(PALETTE), plt.rc_context(_RC):
        yield


def figure(width: str | float = "single", aspect: float = 0.75, **kw: Any):
    """Return ``(fig, ax)`` sized for a single or double column, in the paper style."""
    w = {"single": SINGLE_COLUMN, "double": DOUBLE_COLUMN}.get(width, width)  # type: ignore[arg-type]
    plt.rcParams.update(_RC)
    sns.set_palette(PALETTE)
    return plt.subplots(figsize=(float(w), float(w) * aspect), **kw)


def data_hash(*frames: pd.DataFrame) -> str:
    """Return a short SHA-256 of the frames' contents as a saved table writes them, for the provenance sidecar.

    Numbers are hashed at the CSV's significant digits (:func:`medeval_kit.tables.format_frame`), so
    last-digit floating-point differences between machines do not change the hash.
    """
    h = hashlib.sha256()
    for df in frames:
        h.update(format_frame(df).to_csv(index=True, lineterminator="\n").encode())
    return h.hexdigest()[:16]


def _stable(value: Any) -> Any:
    """``value`` with every float at the CSV's significant digits (recursively), for a byte-stable sidecar."""
    if isinstance(value, Mapping):
        return {str(k): _stable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_stable(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if not math.isfinite(f) else float(f"{f:.{CSV_DIGITS}g}")
    return value


_SIDECAR_KEYS = ("study", "notebook", "parameters")


def _sidecar(name: str, paths: Mapping[str, Path], data, meta: Mapping[str, Any] | None) -> dict:
    """Provenance record: figure, files, data hash, study, notebook and parameters.

    Keys of ``meta`` other than study/notebook/parameters are folded into ``parameters`` so that
    every sidecar has the same shape.
    """
    meta = dict(meta or {})
    params = dict(meta.pop("parameters", None) or {})
    study, notebook = meta.pop("study", None), meta.pop("notebook", None)
    params.update(meta)
    return {
        "figure": name,
        "files": sorted(p.name for p in paths.values()),
        "data_hash": data_hash(data) if data is not None else None,
        "study": study,
        "notebook": notebook,
        "parameters": _stable(params),
    }


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

    ``meta`` (study, notebook, parameters ...) and the hash of ``data`` go into the sidecar, with floats
    at the tables' significant digits. Outputs carry no timestamps, and the sidecar no last-digit float
    noise, so re-running leaves git clean.
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
    side = _sidecar(name, paths, data, meta)
    paths["json"] = out / f"{name}.json"
    paths["json"].write_text(json.dumps(side, indent=2, sort_keys=True, default=str) + "\n")
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
    side = {**_sidecar(name, paths, data, meta), "kind": "plotly", "offline": offline}
    paths["json"] = out / f"{name}.json"
    paths["json"].write_text(json.dumps(side, indent=2, sort_keys=True, default=str) + "\n")
    return paths
