"""Footnotes and stacked panels keep clear of axis titles (issue 14): worked out in pixels from the figure's
height, margins and domains. Under an x axis, tick labels (14 px font) and the axis title (18 px font,
10 px standoff) take about 14 x 1.3 + 4 + 10 + 18 x 1.3 = 56 px."""

from __future__ import annotations

import engine
from dashboard.charts import tornado_figure
from dashboard.charts.layout import layout_sweep_figure

UNDER_AXIS_PX = 14 * 1.3 + 4 + 10 + 18 * 1.3       # tick labels, tick length, standoff, axis title
SUBTITLE = 36                                        # the scenario subtitle the dashboard adds above the plot


def test_tp_sweep_footnote_sits_under_the_axis_titles_in_pixels(devices, llama70b):
    from engine.explore.layouts import layout_sweep
    frame = layout_sweep(devices["H100-SXM"], llama70b, engine.Scenario(), "tp", [1, 2, 4, 8])
    assert not frame["fits"].all()                     # 141 GB of weights: TP 1 does not fit an 80 GB H100
    figure = layout_sweep_figure(frame, "tp")
    (note,) = [a for a in figure.layout.annotations if "hollow marker" in a.text]
    # anchored at the plot's bottom edge and shifted down in pixels: the same place at any figure height
    assert note.yref == "paper" and note.y == 0 and note.yanchor == "top"
    assert -note.yshift >= UNDER_AXIS_PX
    assert figure.layout.margin.b >= -note.yshift + 13 * 1.3     # and the footnote is inside the figure


def test_sensitivity_panels_leave_room_for_each_axis_title_before_the_next(devices, llama8b):
    from engine.explore.hardware_sensitivity import sensitivity
    metrics = ("tpot_s", "ttft_s", "tokens_per_s")
    frame = sensitivity(llama8b, engine.Scenario(), devices["H100-SXM"], change=0.2, metrics=metrics)
    figure = tornado_figure(frame, metrics=list(metrics), change=0.2)
    assert figure.layout.height >= 600                 # three panels: not plotly's default 450 px
    plot_px = figure.layout.height - figure.layout.margin.t - SUBTITLE - figure.layout.margin.b
    domains = sorted((figure.layout[f"yaxis{s}"].domain for s in ("", "2", "3")), key=lambda d: -d[1])
    for upper, lower in zip(domains, domains[1:]):
        gap_px = (upper[0] - lower[1]) * plot_px
        assert gap_px >= UNDER_AXIS_PX, gap_px          # the upper panel's ticks and title fit above the next
    for domain in domains:
        assert (domain[1] - domain[0]) * plot_px >= 100  # and each panel keeps room for its bars


def test_sweep_crossing_note_keeps_clear_of_the_ridge_labels(devices, llama8b):
    from dashboard.charts import sweep_figure
    from engine.explore.sweeps import sweep
    frame = sweep(devices["H100-SXM"], llama8b, engine.Scenario(), "batch", [1, 8, 64])
    figure = sweep_figure(frame, x="value")
    (note,) = [a for a in figure.layout.annotations if a.name == "crossing note"]
    assert "memory-bound throughout" in note.text     # decode at batch 64: ~60 FLOP/B, below the 295 FLOP/B ridge
    ridge = next(a for a in figure.layout.annotations if "ridge" in (a.text or "") and a.xref == "x")
    # the ridge label starts at the left end of its line (top of the panel); the note sits bottom right
    assert ridge.xanchor == "left" and note.xanchor == "right" and note.x >= 0.9 and note.y <= 0.1
