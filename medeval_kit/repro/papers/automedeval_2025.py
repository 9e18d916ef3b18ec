"""AutoMedEval (Zhang et al., ACL 2025): App. F's saturation curve against Table 3 and its own claims.

f(t) = a / (1 + e^(-bt - c))^3 with the printed a = 0.5274 (= 1 x 0.9 x 0.586), b = 0.453,
c = 2.83, checked against Table 3's Acc_triple at t = 0, 1, 2 and the claimed 52.21 % at t = 6.
The curve and its fit are the generic :func:`medeval_kit.rounds.introspection_curve` and
:func:`medeval_kit.rounds.fit_introspection_curve`; the plot is :func:`medeval_kit.viz.plot_curve_fits`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from medeval_kit.repro.published import Published, load_paper

PAPER = "automedeval-2025"


def paper():
    return load_paper(PAPER)


def constants() -> dict:
    """The printed a, b, c (from the data file)."""
    p = paper()
    return {k: p.value(f"eq7.{k}") for k in ("a", "b", "c")}


def observed() -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Table 3's iterations t and Acc_triple in % (as printed)."""
    p = paper()
    obs = p.input("observed")
    return tuple(float(o["t"]) for o in obs), tuple(p.value(o["acc"]) for o in obs)


def curve(t) -> np.ndarray:
    """f(t) with the printed constants (a fraction; x 100 for %)."""
    from medeval_kit.rounds import introspection_curve

    return introspection_curve(t, **constants(), power=paper().input("power"))


def fit(free: Sequence[str] = ("a", "b", "c")):
    """Least-squares refit of the free constants to Table 3's three points (starting at the printed ones)."""
    from medeval_kit.rounds import fit_introspection_curve

    t, acc = observed()
    return fit_introspection_curve(t, [v / 100 for v in acc], p0=constants(), free=free,
                                   power=paper().input("power"))


def fit_frame(free: Sequence[str] = ("a", "b", "c")) -> pd.DataFrame:
    """:func:`fit` as a table; ``published`` is the printed constant each fit started from."""
    return fit(free).to_frame().rename(columns={"start": "published"})


def curve_table(t: Sequence[float] | None = None) -> pd.DataFrame:
    """f(t) in % with the printed constants, the refits (a only; a, b, c) and Table 3's observed values."""
    t = paper().input("curve_t") if t is None else t
    fit_a, fit_abc = fit(("a",)), fit(("a", "b", "c"))
    obs = dict(zip(*observed()))
    return pd.DataFrame([{"t": ti, "observed": obs.get(float(ti), np.nan),
                          "published_constants": float(curve(ti)) * 100,
                          "refit_a": float(fit_a.predict(ti)) * 100,
                          "refit_abc": float(fit_abc.predict(ti)) * 100} for ti in t])


def rows() -> list[Published]:
    """a = a1 a2 a3, f(t) against Table 3, the notes' recomputation, the t = 6 claims and the refits."""
    p = paper()
    a_prod = float(np.prod(p.input("a_factors")))
    out = [p.check("eq7.a", round(a_prod, 6))]
    for o in p.input("observed"):
        out.append(p.check(o["acc"], round(float(curve(o["t"])) * 100, 2),
                           why=f"f(t) with a={p.number('eq7.a').value}, b={p.number('eq7.b').value}, "
                               f"c={p.number('eq7.c').value} does not pass through the observed accuracies"))
    for ti in (0, 1, 2, 6):
        out.append(p.check(f"notes.eq7.t{ti}", round(float(curve(ti)) * 100, 4)))
    f6 = float(curve(6)) * 100
    t0 = p.value(p.input("observed")[0]["acc"])
    out.append(p.check("appf.t6", round(f6, 2),
                       why=f"the printed constants give {f6:.2f}, not {p.number('appf.t6').value} (the research "
                           "notes' recomputation 44.41/47.22/49.14/52.13 at t = 0/1/2/6 is reproduced exactly); "
                           f"asymptote a = {100 * p.value('eq7.a'):.2f}"))
    out.append(p.check("appf.gain-t6", f6 / t0 - 1,
                       note=f"ours uses f(6) = {f6:.2f} over {t0}; the paper's {p.number('appf.t6').value}/{t0} = "
                            f"+{100 * (p.value('appf.t6') / t0 - 1):.2f} %"))
    refit = fit(("a", "b", "c"))
    for k in ("b", "c"):
        out.append(p.check(f"eq7.{k}", round(refit.params[k], 4),
                           why=f"least-squares interpolation of Table 3's three points; rss {refit.rss:.2g}; "
                               f"refit a = {refit.params['a']:.4f}, f(6) = {float(refit.predict(6)) * 100:.2f} %"))
    return out


def plot_curve(*, ax=None, t_max: float = 10):
    """f(t) with the printed constants and the refit, Table 3's points and the claimed value at t = 6."""
    from medeval_kit.viz import plot_curve_fits

    tt = np.linspace(0, t_max, 200)
    curves = pd.DataFrame({"t": tt, "published constants": curve(tt) * 100,
                           "refit a, b, c to Table 3": fit(("a", "b", "c")).predict(tt) * 100})
    t, acc = observed()
    claimed = paper().number("appf.t6").value
    claims = pd.DataFrame([{"t": 6, "y": float(claimed), "label": f"claimed {claimed} at t=6"}])
    return plot_curve_fits(curves, points=pd.DataFrame({"t": t, "y": acc}), points_label="Table 3 observed",
                           claims=claims, ax=ax, xlabel="introspection iteration t", ylabel="Acc$_{triple}$ (%)")
