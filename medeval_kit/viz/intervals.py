"""Point estimates with their intervals, drawn one way in every plot: a filled marker with CI bars, and an
open marker without bars where there is no interval to draw (none was computed, it has zero width, or it
rests on fewer than two items), explained by a footnote under the axes. A zero-width bar would read as
certainty ("[0.00, 0.00]"); the open marker says there is no interval."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["NO_INTERVAL", "no_interval_reasons", "draw_estimates", "note_no_interval"]

NO_INTERVAL = "open markers: no interval"
"""The start of the footnote of a plot with open markers."""


def no_interval_reasons(est, lo, hi, n=None) -> np.ndarray:
    """Per estimate, why it has no drawable interval ("" when it has one, or when the estimate is NaN)."""
    est, lo, hi = (np.asarray(v, dtype=float) for v in (est, lo, hi))
    nn = np.full(est.shape, np.inf) if n is None else np.asarray(n, dtype=float)
    out = np.full(est.shape, "", dtype=object)
    shown = np.isfinite(est)
    out[shown & ~(np.isfinite(lo) & np.isfinite(hi))] = "no interval computed"
    with np.errstate(invalid="ignore"):
        out[shown & np.isfinite(lo) & np.isfinite(hi) & (np.abs(hi - lo) <= 1e-12)] = "zero-width interval"
        out[shown & (nn < 2)] = "n < 2"
    return out


def draw_estimates(ax, pos, est, lo, hi, *, n=None, horizontal: bool = False, color=None, marker: str = "o",
                   label: str | None = None, ms: float = 3, capsize: float = 2, lw: float | None = None,
                   line: str | None = None, **kw) -> list[str]:
    """Draw ``est`` at positions ``pos`` with CI bars (``horizontal``: bars along x); return the open markers' reasons.

    Estimates without an interval (:func:`no_interval_reasons`) get an open marker and no bar. ``line``
    (a line style) joins every estimate, open or not. The legend entry is the filled marker.
    """
    pos, est, lo, hi = (np.asarray(v, dtype=float) for v in (pos, est, lo, hi))
    why = no_interval_reasons(est, lo, hi, n)
    ok = np.isfinite(est) & (why == "")
    hollow = why != ""
    xy = (lambda p, v: (v, p)) if horizontal else (lambda p, v: (p, v))
    if line is not None and np.isfinite(est).any():
        fin = np.isfinite(est)
        ax.plot(*xy(pos[fin], est[fin]), ls=line, color=color, lw=lw, marker="none")
    if ok.any() or not hollow.any():
        err = np.abs(np.vstack([est[ok] - lo[ok], hi[ok] - est[ok]]))
        bars = {"xerr": err} if horizontal else {"yerr": err}
        h = ax.errorbar(*xy(pos[ok], est[ok]), **bars, fmt=marker, ms=ms, capsize=capsize, color=color, lw=lw,
                        label=label, **kw)
        color = h.lines[0].get_color()
    if hollow.any():
        ax.plot(*xy(pos[hollow], est[hollow]), ls="none", marker=marker, ms=ms, mfc="none", mec=color,
                color=color, label=label if not ok.any() else None, **kw)
    return [str(w) for w in why[hollow]]


def note_no_interval(ax, reasons: Iterable[str]) -> str:
    """Add the footnote for open markers under the axes (a second line of the x label); return it ("" if none)."""
    reasons = sorted(set(r for r in reasons if r))
    if not reasons:
        return ""
    note = f"{NO_INTERVAL} ({'; '.join(reasons)})"
    label = ax.get_xlabel()
    ax.set_xlabel(f"{label}\n{note}" if label else note)
    return note
