"""The plots read as words and say what they show: readable metric labels (never snake_case), legend order
equal to the drawing order, n per round under round-wise axes, and open markers plus a footnote where an
interval is degenerate (none, zero width, or n < 2) instead of a zero-width bar. Each test inspects the
returned Figure (tick labels, legend texts, annotations, marker face colours)."""

from __future__ import annotations

import re

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from medeval_kit import agreement as ag  # noqa: E402
from medeval_kit import bias, viz  # noqa: E402
from medeval_kit import rounds as R  # noqa: E402
from medeval_kit.viz.intervals import NO_INTERVAL, no_interval_reasons  # noqa: E402

SNAKE = re.compile(r"\b[a-z]+_[a-z0-9_]+\b")


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _texts(fig) -> list[str]:
    """Every visible word of a figure: titles, axis labels (incl. colour bars), tick labels, legends, annotations."""
    out = []
    for ax in fig.axes:
        out += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        out += [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
        out += [t.get_text() for t in ax.texts]
        leg = ax.get_legend()
        if leg is not None:
            out += [t.get_text() for t in leg.get_texts()] + [leg.get_title().get_text()]
    return [t for t in out if t]


def _open_markers(ax) -> list:
    """The (x, y) points drawn with an open (unfilled) marker."""
    pts = []
    for line in ax.lines:
        if line.get_marker() not in (None, "", "None", "none") and str(line.get_markerfacecolor()) == "none":
            pts += list(zip(line.get_xdata(), line.get_ydata()))
    return pts


def _filled_points(ax) -> list:
    """The (x, y) points drawn with a filled marker."""
    pts = []
    for line in ax.lines:
        if line.get_marker() not in (None, "", "None", "none") and str(line.get_markerfacecolor()) != "none":
            every = line.get_markevery()
            x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
            keep = np.asarray(every, bool) if isinstance(every, (list, np.ndarray)) else np.ones(len(x), bool)
            pts += list(zip(x[keep], y[keep]))
    return pts


# --------------------------------------------------------------------------- readable labels


def test_metric_label_reads_the_registry_and_weights_and_designs():
    assert viz.metric_label("cohen_kappa") == "Cohen's κ"
    assert viz.metric_label("krippendorff_alpha") == "Krippendorff's α"
    assert viz.metric_label("gwet_ac1") == "Gwet's AC1"
    assert viz.metric_label("pabak") == "PABAK"
    assert viz.metric_label("cohen_kappa_quadratic") == "Cohen's κ (quadratic weights)"
    assert viz.metric_label("cohen_kappa (loo)") == "Cohen's κ (loo)"  # the report's judge-vs-humans rows
    assert "_" not in viz.metric_label("some_unknown_metric")


def _pairs():
    return pd.DataFrame({"rater_a": ["ann", "ann", "bob"], "rater_b": ["bob", "cy", "cy"],
                         "metric": ["cohen_kappa"] * 3, "estimate": [0.5, 0.6, 0.7], "ci_low": [0.3, 0.4, 0.5],
                         "ci_high": [0.7, 0.8, 0.9], "ci_method": "bootstrap", "n_items": [40, 40, 40]})


def test_agreement_plots_label_coefficients_in_words():
    heat = viz.plot_kappa_heatmap(_pairs())
    colorbar = heat.axes[1].get_ylabel()
    assert colorbar == "Cohen's κ", colorbar  # was 'cohen_kappa'
    assert heat.axes[0].get_title().startswith("Cohen's κ")
    ens = pd.DataFrame({"size": [1, 1, 3], "cohen_kappa": [0.4, 0.5, 0.6], "members": ["a", "b", "abc"]})
    assert viz.plot_ensembles(ens).axes[0].get_ylabel() == "Cohen's κ"  # was 'cohen_kappa'


def _letters():
    return bias.letter_balance(pd.DataFrame({"generator": ["gpt"] * 8 + ["llama"] * 6,
                                             "answer": list("AABBCCDA") + list("ABCDDD")}), by="generator")


def _round_means():
    # 8 items; drop-out leaves 8, 6, 3 and 1 item(s) at rounds 1-4 (the last: one item, no interval)
    rng = np.random.default_rng(0)
    rows = [dict(item=i, round=r, total=float(rng.random())) for i in range(8) for r in range(1, 2 + (i % 3 if i else 3))]
    return R.round_means(pd.DataFrame(rows), "total", bounds=(0, 1))


def _trajectories():
    rng = np.random.default_rng(1)
    comp = pd.DataFrame([dict(item=i, round=r, component=c, value=float(rng.random()))
                         for i in range(6) for r in range(1, 2 + i % 4) for c in ("answer", "question")])
    return R.round_means(comp, "value", by="component", bounds=(0, 1))


def _position():
    from medeval_kit.datasets.synthetic import synthetic_pairwise

    df = synthetic_pairwise(n_items=30, criteria=("accuracy", "clarity"), seed=0)
    df["judge"] = df["judge"].astype(str).str.replace("_", "-")
    return bias.position_bias(df, n_boot=0)


def test_no_snake_case_in_any_plot():
    pos = _position()
    figs = {
        "heatmap": viz.plot_kappa_heatmap(_pairs()),
        "ensembles": viz.plot_ensembles(pd.DataFrame({"size": [1, 3], "cohen_kappa": [0.4, 0.6]})),
        "flips": viz.plot_flip_rates(pos),
        "first slot": viz.plot_first_slot(pos),
        "rate by judge": viz.plot_rate_by_judge(pos, "first_slot_rate"),
        "letters": viz.plot_letter_balance(_letters()),
        "round means": viz.plot_round_means(_round_means()),
        "trajectories": viz.plot_component_trajectories(_trajectories()),
    }
    for name, fig in figs.items():
        snake = [t for t in _texts(fig) if SNAKE.search(t)]
        assert not snake, (name, snake)


def test_rate_by_judge_and_item_rounds_axes_are_words():
    pos = _position()
    xlabel = viz.plot_rate_by_judge(pos, "first_slot_rate").axes[0].get_xlabel()
    assert "first-slot rate" in xlabel and "first_slot" not in xlabel
    shares = pd.DataFrame({"component": ["a", "a", "b", "b"], "round": [1, 2, 1, 2], "share": [0.5, 0.7, 0.6, 0.8]})
    fig = viz.plot_item_rounds(shares, pd.DataFrame({"round": [1, 2], "total": [0.55, 0.75]}))
    assert fig.axes[0].get_ylabel() == "share of the maximum score"  # was 'score / max'


# --------------------------------------------------------------------------- legend order = drawing order


def _display_y(ax, y: float) -> float:
    return ax.transData.transform((0, y))[1]


def test_letter_balance_letters_run_top_down_in_legend_order():
    fig = viz.plot_letter_balance(_letters())
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["A", "B", "C", "D"]
    # the filled marker of each letter in the first group (gpt): its height on screen, top first
    heights = {c.get_label(): _display_y(ax, c.lines[0].get_ydata()[0]) for c in ax.containers}
    on_screen = sorted(heights, key=lambda k: -heights[k])  # top to bottom
    assert on_screen == legend, on_screen  # the old plot drew D on top of A, against the legend
    # the first group (sorted) is the top one
    labels = [t.get_text() for t in ax.get_yticklabels()]
    tops = {t.get_text(): _display_y(ax, t.get_position()[1]) for t in ax.get_yticklabels()}
    assert max(tops, key=tops.get) == labels[0] == "gpt"


def test_stacked_bars_read_in_legend_order():
    # 6 labels: a legend in fewer columns than entries must still read row by row in stacking order
    labels = ["agree", "bad", "cannot", "disagree", "excellent", "fair"]
    rows = [dict(rater=r, label=lab, share=1 / 6, n_group=60) for r in ("ann", "bob") for lab in labels]
    fig = viz.plot_label_distribution(pd.DataFrame(rows))
    ax = fig.axes[0]
    fig.canvas.draw()
    leg = ax.get_legend()
    pos = {t.get_text(): t.get_window_extent().get_points()[0] for t in leg.get_texts()}
    reading = sorted(pos, key=lambda k: (-round(pos[k][1]), pos[k][0]))  # rows top-down, then left to right
    first_row = [p for p in ax.patches if abs(p.get_y() + p.get_height() / 2 - ax.patches[0].get_y()
                                                - ax.patches[0].get_height() / 2) < 1e-9]
    stacked = [labels[i] for i in np.argsort([p.get_x() for p in first_row])]
    assert reading == stacked == labels, (reading, stacked)


def test_grounded_letter_balance_stacks_a_to_d_as_the_legend():
    bal = pd.DataFrame({"generator": ["g1"] * 4 + ["g2"] * 4, "letter": list("DCBA") * 2,
                        "estimate": [0.1, 0.2, 0.3, 0.4] * 2})
    ax = viz.plot_grounded_letter_balance(bal).axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    g1 = sorted((p for p in ax.patches if abs(p.get_y() + p.get_height() / 2) < 1e-9), key=lambda p: p.get_x())
    assert legend == ["A", "B", "C", "D"]
    assert [round(p.get_width(), 6) for p in g1] == [0.4, 0.3, 0.2, 0.1]  # A (0.4) leftmost, as in the legend


# --------------------------------------------------------------------------- n per round


def test_round_means_show_n_per_round_under_the_ticks():
    ax = viz.plot_round_means(_round_means()).axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["1\nn=8", "2\nn=6", "3\nn=3", "4\nn=1"], ticks  # available-only n: the drop-out
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["available-only", "last value carried forward (n=8)"]


def test_component_trajectories_show_n_per_round():
    traj = _trajectories()
    ax = viz.plot_component_trajectories(traj).axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    n = traj[traj["imputation"] == "available"].groupby("round")["n_items"].first()
    assert ticks == [f"{r}\nn={n[r]}" for r in n.index]  # the old plot had bare round numbers


def test_srefine_rounds_show_n_items_per_round():
    gen = pd.DataFrame({"item": [1, 1, 1, 2, 2, 3], "round": [1, 2, 3, 1, 2, 1], "total": [5, 6, 7, 4, 6, 8],
                        "best": [False, False, True, False, True, True], "threshold": 7.0})
    ax = viz.plot_rounds(gen).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1\nn=3", "2\nn=2", "3\nn=1"]


# --------------------------------------------------------------------------- degenerate intervals


def test_no_interval_reasons():
    why = no_interval_reasons([0.5, 0.5, 0.5, np.nan, 0.5], [0.4, 0.5, np.nan, np.nan, 0.3],
                              [0.6, 0.5, np.nan, np.nan, 0.7], [10, 10, 10, 10, 1])
    assert list(why) == ["", "zero-width interval", "no interval computed", "", "n < 2"]


def test_round_means_mark_a_one_item_round_open_with_a_footnote():
    m = _round_means()
    ax = viz.plot_round_means(m).axes[0]
    last = m[(m["imputation"] == "available") & (m["round"] == 4)].iloc[0]
    assert last["n_items"] == 1 and np.isnan(last["ci_low"])
    x = 4 - 0.06  # the available-only offset
    assert any(abs(px - x) < 1e-9 and abs(py - last["estimate"]) < 1e-12 for px, py in _open_markers(ax))
    assert not any(abs(px - x) < 1e-9 for px, _ in _filled_points(ax))  # the old plot: a filled dot, zero bar
    assert NO_INTERVAL in ax.get_xlabel() and "n < 2" in ax.get_xlabel()


def test_forest_marks_a_zero_width_judge_interval():
    table = pd.DataFrame({"role": ["humans", "judge", "judge"], "rater": ["humans", "gpt", "llama"],
                          "metric": "cohen_kappa", "estimate": [0.6, 0.5, 0.0], "ci_low": [0.5, 0.4, 0.0],
                          "ci_high": [0.7, 0.6, 0.0], "n_items": [50, 50, 50]})
    ax = viz.plot_forest(table).axes[0]
    # judges are drawn top-down: gpt at y=1, llama at y=0
    assert (0.0, 0.0) in [(float(x), float(y)) for x, y in _open_markers(ax)]
    assert (0.5, 1.0) in [(float(x), float(y)) for x, y in _filled_points(ax)]
    assert "zero-width interval" in ax.get_xlabel() and ax.get_xlabel().startswith("Cohen's κ")


def test_heatmap_says_no_ci_instead_of_a_zero_interval():
    pairs = _pairs()
    pairs.loc[0, ["estimate", "ci_low", "ci_high"]] = [1.0, 1.0, 1.0]
    ax = viz.plot_kappa_heatmap(pairs).axes[0]
    cells = [t.get_text() for t in ax.texts]
    assert not any("[1.00, 1.00]" in c for c in cells), cells
    assert "1.00\nno CI" in cells and "0.60\n[0.40, 0.80]" in cells
    assert "zero-width interval" in ax.get_xlabel()


def test_bias_rates_mark_degenerate_intervals_open():
    res = pd.DataFrame({"judge": ["a", "b"], "criterion": "overall", "metric": "flip_rate", "estimate": [0.0, 0.3],
                        "ci_low": [0.0, 0.1], "ci_high": [0.0, 0.5], "n_items": [1, 30]})
    ax = viz.plot_rate_by_judge(res, "flip_rate").axes[0]
    assert [(float(x), float(y)) for x, y in _open_markers(ax)] == [(0.0, 0.0)]
    assert "n < 2" in ax.get_xlabel()
    ax = viz.plot_flip_rates(res).axes[0]
    assert len(_open_markers(ax)) == 1 and NO_INTERVAL in ax.get_xlabel()


def test_plots_without_degenerate_intervals_have_no_footnote():
    ax = viz.plot_kappa_heatmap(_pairs()).axes[0]
    assert NO_INTERVAL not in " ".join(_texts(ax.figure)) and "no CI" not in " ".join(_texts(ax.figure))
    assert not _open_markers(viz.plot_letter_balance(_letters()).axes[0])


def test_agreement_report_to_forest_end_to_end():
    # a judge that copies one human: every resample gives the same kappa against that human
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 60)
    df = pd.concat([pd.DataFrame({"item": range(60), "rater": r, "label": labels if r in ("h1", "j") else
                                  np.where(rng.random(60) < 0.7, labels, rng.integers(0, 3, 60))})
                    for r in ("h1", "h2", "j")])
    jv = ag.judge_vs_humans(df, humans=["h1", "h2"], n_boot=50)
    fig = viz.plot_forest(jv.to_frame())
    assert fig.axes[0].get_xlabel().startswith("Cohen's κ")


def _many_pairs(n_raters: int) -> pd.DataFrame:
    import itertools

    rng = np.random.default_rng(n_raters)
    pairs = list(itertools.combinations([f"physician{i}" for i in range(1, n_raters + 1)], 2))
    est = rng.uniform(-0.2, 0.9, len(pairs)).round(2)
    return pd.DataFrame({"rater_a": [a for a, _ in pairs], "rater_b": [b for _, b in pairs], "metric": "cohen_kappa",
                         "estimate": est, "ci_low": est - 0.11, "ci_high": est + 0.12, "ci_method": "bootstrap",
                         "n_items": 80})


@pytest.mark.parametrize("width", ["single", "double"])
def test_heatmap_cell_texts_never_overlap_and_say_what_is_left_out(width):
    """With many raters the CI, then the estimate, no longer fit in a cell: each cell shows only what fits (no text
    overlaps another or leaves its cell) and the footnote sends the reader to the table (18 raters, as in the
    printed synthetic panel, once overlapped unreadably)."""
    import matplotlib.pyplot as plt

    shown = set()
    for n_raters in (3, 6, 9, 12, 18, 30):
        fig = viz.plot_kappa_heatmap(_many_pairs(n_raters), width=width)
        ax = fig.axes[0]
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        boxes = [t.get_window_extent(r) for t in ax.texts]
        cell = ax.transData.transform((1, 0))[0] - ax.transData.transform((0, 0))[0]  # a cell's width, in pixels
        assert all(b.width < cell and b.height < cell for b in boxes), (n_raters, width)
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:]), (n_raters, width)
        lines = {len(t.get_text().split("\n")) for t in ax.texts} or {0}
        assert len(lines) == 1, lines  # every cell shows the same
        (n,) = lines
        shown.add(n)
        foot = ax.get_xlabel()
        assert ("too small for the CIs" in foot) == (n == 1) and ("too small for the numbers" in foot) == (n == 0)
        assert ax.get_title().endswith("(95% CI)") == (n == 2)
        assert len(ax.texts) == (n_raters * (n_raters - 1) if n else 0)
        plt.close(fig)
    assert 2 in shown and 0 in shown, shown


def test_a_delta_forest_without_any_delta_says_why_instead_of_empty_axes():
    """One human rater: no design gives a Δ (the committed medqg_table19 figure was a bare axis)."""
    table = pd.DataFrame({"role": ["humans", "judge", "judge"], "rater": ["humans", "gpt-4o", "gpt-4"],
                          "design": ["loo", "medqade", "medqade"], "metric": "percent_agreement",
                          "estimate": [np.nan, 0.22, 0.46], "delta": np.nan, "delta_ci_low": np.nan,
                          "delta_ci_high": np.nan, "margin": 0.05, "n_items": [0, 23, 26],
                          "note": ["design not applicable: this design needs at least 2 human raters; got ['x']",
                                   "MedQADE design with one reference rater (x): no human ceiling",
                                   "MedQADE design with one reference rater (x): no human ceiling"]})
    fig = viz.plot_delta_forest(table, title="t")
    (ax,) = fig.axes
    text = " ".join(t.get_text() for t in ax.texts).replace("\n", " ")
    assert text.startswith("No judge has a Δ:") and "needs at least 2 human raters" in text
    assert "no human ceiling" in text and not ax.axison and ax.get_title() == "t"
    drawn = viz.plot_delta_forest(table.assign(delta=[np.nan, -0.02, 0.01], delta_ci_low=[np.nan, -0.1, -0.05],
                                               delta_ci_high=[np.nan, 0.06, 0.07]))
    assert drawn.axes[0].axison and not drawn.axes[0].texts


def test_cloze_accuracy_shows_an_estimate_of_zero_and_every_count():
    acc = pd.DataFrame({"match": ["exact_match", "normalized_match"], "estimate": [0.0, 0.25], "ci_low": [0.0, 0.05],
                        "ci_high": [0.49, 0.7], "ci_method": "Wilson", "n_items": 4})
    ax = viz.plot_cloze_accuracy(acc).axes[0]
    assert [t.get_text() for t in ax.texts] == ["0.00 (0/4)", "0.25 (1/4)"]
    (points,) = [line for line in ax.lines if line.get_marker() == "o"]
    assert list(points.get_ydata()) == [0.0, 0.25] and not points.get_clip_on()
    assert ax.get_ylim() == (0.0, 1.1)


def test_a_legend_placed_clear_of_the_data_overlaps_no_error_bar():
    """Round means' error bars rose into their legend (figures/generation/srefine_round_means.png): the legend now
    sits above the data's top, the ticks stop at that top (a probability axis shows no tick above 1), and two
    panels sharing y are raised once, not twice."""
    import matplotlib.pyplot as plt
    from matplotlib.transforms import Bbox

    from medeval_kit.viz.figures import figure, legend_clear_of_data

    means = pd.DataFrame({"round": [1, 2, 3, 1, 2, 3], "imputation": ["available"] * 3 + ["locf"] * 3,
                          "estimate": [0.2, 0.21, 0.22] * 2, "ci_low": [0.19, 0.19, 0.2] * 2,
                          "ci_high": [0.21, 0.23, 0.24] * 2, "n_items": 10})
    ax = viz.plot_round_means(means).axes[0]
    fig = ax.figure
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(r)
    bars = [Bbox(ax.transData.transform(seg)) for c in ax.collections for seg in c.get_segments()]  # error bars
    drawn = bars + [line.get_window_extent(r) for line in ax.lines]  # lines, markers and caps
    assert len(bars) == 6 and all(np.isfinite(b.get_points()).all() for b in drawn)
    assert not any(legend.overlaps(b) for b in drawn)
    plt.close(fig)

    fig, ax = figure("single")
    ax.errorbar([0, 1], [0.9, 0.95], yerr=0.05, label="judge")
    ax.set_ylim(0, 1)
    legend_clear_of_data(ax)
    assert ax.get_ylim()[1] > 1 and max(ax.get_yticks()) <= 1 and ax.spines["left"].get_bounds() == (0, 1)
    plt.close(fig)

    fig, (a, b) = plt.subplots(1, 2, sharey=True)
    for x in (a, b):
        x.plot([0, 1], [0, 1], label="line")
    a.set_ylim(0, 1)
    legend_clear_of_data(a)
    once = a.get_ylim()
    legend_clear_of_data(b)
    assert b.get_ylim() == once and once[1] > 1
    plt.close(fig)


def test_review_fixes_one_ensemble_size_distractor_markers_and_forest_title():
    """From the review of the committed figures: one ensemble size kept its points in their slot (the axis had
    zoomed into the jitter), a share of 1 kept whole markers at the axes' edge, the distractor legend names
    every mark, and the forest title reads "design: loo (humans)", not "(loo (humans))"."""
    import matplotlib.pyplot as plt

    ens = pd.DataFrame({"size": [1, 1], "cohen_kappa": [0.44, 0.49], "members": ["a", "b"]})
    ax = viz.plot_ensembles(ens).axes[0]
    assert ax.get_xlim() == (0.5, 1.5)
    plt.close(ax.figure)
    d = pd.DataFrame({"item": "q1", "option": list("ABC"), "is_key": [True, False, False],
                      "estimate": [0.6, 0.3, 0.1], "ci_low": [0.4, 0.1, 0.0], "ci_high": [0.8, 0.5, 0.3],
                      "share_upper": [1.0, 0.0, 0.0], "share_lower": [0.2, 0.5, 0.3]})
    fig = viz.plot_distractors(d, nonfunctional=0.05)
    marks = [line for line in fig.axes[0].lines if line.get_marker() in ("^", "v")]
    assert len(marks) == 2 and not any(m.get_clip_on() for m in marks)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["upper group", "lower group", "non-functional below 0.05", "key", "distractor"]
    plt.close(fig)
    table = pd.DataFrame({"role": ["humans", "judge", "humans", "judge"], "rater": ["humans", "j", "humans", "j"],
                          "design": ["loo (humans)", "loo (humans)", "pooled", "pooled"], "metric": "cohen_kappa",
                          "estimate": [0.9, 0.5, 0.9, 0.5], "ci_low": [0.85, 0.4, 0.85, 0.4],
                          "ci_high": [0.95, 0.6, 0.95, 0.6], "n_items": 40})
    assert viz.plot_forest(table).axes[0].get_title() == "Judges against the humans; design: loo (humans)"


def test_best_by_size_does_not_zoom_into_a_flat_line():
    """Eleven items gave the same best value at every k: the axis spanned 0.0255-0.028 and the flat line looked
    like a scale; it now spans +-0.05 around the value and says so."""
    import matplotlib.pyplot as plt

    path = pd.DataFrame({"k": [1, 2, 3] * 2, "kappa": [0.0265] * 3 + [0.1, 0.2, 0.25],
                         "agreement": [0.73] * 3 + [0.5, 0.6, 0.7], "objective": ["kappa"] * 3 + ["agreement"] * 3})
    fig = viz.plot_best_by_size(path)
    flat, varied = fig.axes
    assert flat.get_ylim() == pytest.approx((0.0265 - 0.05, 0.0265 + 0.05))
    assert [t.get_text() for t in flat.texts] == ["the same at every k"] and not varied.texts
    plt.close(fig)


def test_rounds_legend_names_every_mark():
    """Ten items: the lines had no legend and the ring and the dashed line were unexplained."""
    import matplotlib.pyplot as plt

    rows = [dict(item=f"i{i}", round=r, total=0.2 + 0.01 * ((i + r) % 4), best=r == 2, threshold=0.9)
            for i in range(10) for r in range(1, 5)]
    ax = viz.plot_rounds(pd.DataFrame(rows)).axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "one line per item (10)", "selected round", "stopping threshold 0.9"]
    plt.close(ax.figure)
    few = viz.plot_rounds(pd.DataFrame([r for r in rows if r["item"] in ("i0", "i1")])).axes[0]
    assert [t.get_text() for t in few.get_legend().get_texts()] == ["i0", "i1", "selected round",
                                                                     "stopping threshold 0.9"]
    plt.close(few.figure)


def test_a_long_y_label_is_wrapped_to_the_axes_height():
    """One criterion makes a short axes: the flip-rate label ran above and below the figure."""
    import matplotlib.pyplot as plt

    res = pd.DataFrame({"judge": ["local"], "criterion": "overall", "metric": "flip_rate", "estimate": [0.97],
                        "ci_low": [0.9], "ci_high": [1.0], "n_items": [40]})
    for fig in (viz.plot_flip_rates(res), viz.plot_first_slot(res.assign(metric="first_slot_rate"))):
        ax = fig.axes[0]
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        assert "\n" in ax.get_ylabel()
        assert ax.yaxis.label.get_window_extent(r).height <= ax.get_window_extent(r).height
        plt.close(fig)


def test_difficulty_discrimination_keys_its_marks_under_the_axis_not_over_the_data():
    """The '-1' note sat on the plot's bottom row, crossed by the p = 0.3 / 0.9 lines and an error bar."""
    import matplotlib.pyplot as plt

    t = pd.DataFrame({"item": ["a", "b", "c"], "source": "s", "p": [0.5, 1.0, 0.0], "r_pbis": [0.3, np.nan, np.nan],
                      "r_pbis_low": [0.1, np.nan, np.nan], "r_pbis_high": [0.5, np.nan, np.nan], "n_flags": [1, 0, 0]})
    ax = viz.plot_difficulty_discrimination(t).axes[0]
    assert not ax.texts
    assert ax.get_xlabel().split("\n")[1] == "ringed: flagged; x at -1: 2 items with no r (everyone right or wrong)"
    plt.close(ax.figure)


def test_stop_rules_plot_says_what_it_measures_in_words():
    """The review: 'share all rounds (wilson 95% CI)' and no title."""
    import matplotlib.pyplot as plt

    comp = pd.DataFrame({"topics": ["human", "human"], "stop_rule": ["total", "all_components"],
                         "measure": "share_all_rounds", "estimate": [1.0, 0.8], "ci_low": [0.72, 0.49],
                         "ci_high": [1.0, 0.94], "ci_method": "Wilson", "n_items": 10})
    ax = viz.plot_stop_rules(comp).axes[0]
    assert ax.get_title() == "Stop rules: share of items that ran every round"
    assert ax.get_ylabel().replace("\n", " ") == "share of items that ran every round (Wilson 95% CI)"
    assert [t.get_text().split("\n")[1] for t in ax.get_xticklabels()] == ["total score", "every component"]
    plt.close(ax.figure)
