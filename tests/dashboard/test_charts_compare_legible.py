"""Compare with four devices (issue 14): device names level (wrapped, never rotated), bar labels that fit
their bar's slot, and no legend over the tick labels. Checked on the figure objects: the space each bar
has is worked out here from the figure's width on screen, its margins and the panel's domain."""

from __future__ import annotations

import re

import pytest

import engine
from dashboard.charts import (
    bound_share_figure, energy_by_component_figure, energy_by_kernel_figure, kernel_time_bars, memory_fit_figure,
)
from dashboard.charts.gaps import ideal_vs_realistic_figure

DEVICES = ("H100-SXM", "A100-80GB-SXM", "MI300X", "B200")
SCREEN_WIDTH = 960          # the dashboard's main column at a 1440 px window
CHAR = 0.6                  # px per character per px of font size (Liberation Sans averages ~0.55)


@pytest.fixture(scope="module")
def results(devices, llama8b):
    return {name: engine.estimate(devices[name], llama8b, engine.Scenario(), method="realistic") for name in DEVICES}


@pytest.fixture(scope="module")
def figures(results):
    from dashboard.context import kernels_frame, memory_frame, phases_frame
    kernels = kernels_frame(results)
    return {
        "kernel bars": kernel_time_bars(kernels, stack_by="family", percent=False),
        "bound shares": bound_share_figure(phases_frame(results)),
        "memory": memory_fit_figure(memory_frame(results)),
        "gap": ideal_vs_realistic_figure(kernels, "realistic-graph"),
        "energy by kernel": energy_by_kernel_figure(kernels, stack_by="family", percent=False),
        "energy by component": energy_by_component_figure(kernels),
    }


def plot_width(figure) -> float:
    """The plot's width on screen: the figure less its side margins and a legend to its right (about 220 px)."""
    right_legend = figure.layout.legend.orientation != "h"
    return SCREEN_WIDTH - 110 - (220 if right_legend else 0)


def category_axes(figure):
    for name in dir(figure.layout):
        if re.fullmatch(r"xaxis\d*", name):
            axis = figure.layout[name]
            if axis.tickvals and all(isinstance(v, str) for v in axis.tickvals):
                yield name, axis


def lines_of(text: str) -> list[str]:
    return re.sub(r"<[^>]+>", "", text.replace("<br>", "\n")).split("\n")


@pytest.mark.parametrize("chart", ["kernel bars", "bound shares", "memory", "gap", "energy by kernel",
                                   "energy by component"])
def test_device_names_are_level_and_each_fits_its_slot(figures, chart):
    figure = figures[chart]
    axes = list(category_axes(figure))
    assert axes, "the devices are on a category axis with explicit tick texts"
    for _, axis in axes:
        assert axis.tickangle == 0
        assert list(axis.tickvals) == list(DEVICES)
        domain = axis.domain or (0, 1)
        slot = plot_width(figure) * (domain[1] - domain[0]) / len(axis.tickvals)
        for text in axis.ticktext:
            widest = max(len(line) for line in lines_of(text)) * CHAR * 14
            assert widest <= slot, (chart, text, slot)


@pytest.mark.parametrize("chart", ["memory", "gap"])
def test_bar_labels_fit_their_bar_slot_so_neighbours_never_meet(figures, chart):
    figure = figures[chart]
    labels = [a for a in figure.layout.annotations if a.text and a.name in ("bar label", "fit", "warning")]
    assert len(labels) >= len(DEVICES)
    for label in labels:
        axis = figure.layout["xaxis" + (label.xref or "x")[1:]]
        domain = axis.domain or (0, 1)
        slot = plot_width(figure) * (domain[1] - domain[0]) / len(DEVICES)
        widest = max(len(line) for line in lines_of(label.text)) * CHAR * label.font.size
        assert widest <= slot, (chart, label.text, slot)


def test_gap_chart_bars_stack_to_each_devices_time_with_its_ratio_to_the_ideal(figures, results):
    figure = figures["gap"]
    for device, result in results.items():
        for panel, (phase, time_s) in enumerate(result.phases["time_s"].items()):
            axis = "x" if panel == 0 else f"x{panel + 1}"
            bars = [t for t in figure.data if t.xaxis == axis]
            total_ms = sum(t.y[list(t.x).index(device)] for t in bars)
            assert total_ms == pytest.approx(time_s * 1e3, rel=1e-9)
            ideal_ms = next(t for t in bars if t.name == "ideal roofline").y[list(bars[0].x).index(device)]
            label = next(a for a in figure.layout.annotations if a.name == "bar label" and a.x == device
                         and a.xref == axis)
            assert f"{total_ms / ideal_ms:.2f}x" in label.text


@pytest.mark.parametrize("chart", ["memory", "gap"])
def test_legend_runs_along_the_bottom_under_the_tick_labels(figures, chart):
    figure = figures[chart]
    legend = figure.layout.legend
    assert legend.orientation == "h" and legend.yref == "container" and legend.y == 0 and legend.yanchor == "bottom"
    tick_lines = max(len(lines_of(text)) for _, axis in category_axes(figure) for text in axis.ticktext)
    # ticks (18 px a line) and an axis gap above the legend (two rows of 21 px)
    assert figure.layout.margin.b >= 18 * tick_lines + 20 + 2 * 21


def test_rotated_or_unwrapped_names_would_not_fit(figures):
    """The oracle has teeth: 'A100-80GB-SXM' on one line does not fit a quarter of a panel of the bar charts."""
    figure = figures["kernel bars"]
    _, axis = next(category_axes(figure))
    slot = plot_width(figure) * (axis.domain[1] - axis.domain[0]) / len(DEVICES)
    assert len("A100-80GB-SXM") * CHAR * 14 > slot
    assert "A100-<br>80GB-SXM" in axis.ticktext


def test_memory_labels_keep_does_not_fit_on_one_line(devices, llama70b):
    from dashboard.context import memory_frame
    results = {name: engine.estimate(devices[name], llama70b, engine.Scenario()) for name in DEVICES}
    figure = memory_fit_figure(memory_frame(results))
    warnings = [a for a in figure.layout.annotations if a.name == "warning"]
    # 70.6 B parameters x 2 B = 141 GB: more than the 80 GB of an H100 or A100, less than MI300X's 192 GB
    assert {a.x for a in warnings} == {"H100-SXM", "A100-80GB-SXM"}
    assert all("does not fit" in a.text for a in warnings)
