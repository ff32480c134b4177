"""The multi-device roofline is legible (issue 14): labels apart, legend and footnote inside the figure,
scale-up and scale-out links told apart. Checked on the figure object: each label's box is worked out
here in pixels from its text, font, anchor and shifts on the plot area the figure leaves."""

from __future__ import annotations

import itertools
import math
import re

import pandas as pd
import pytest

import engine
from dashboard.charts import FIGURE_SIZE, roofline_figure

DEVICES = ("H100-SXM", "MI300X", "B200")
SCREEN_WIDTH = 960          # the dashboard's main column at a 1440 px window
SUBTITLE = 36               # two lines of scenario subtitle the dashboard adds above the plot


@pytest.fixture(scope="module")
def figure(devices, llama8b):
    from dashboard.data import ceilings
    scenario = engine.Scenario(tp=2)     # two devices: the interconnect slopes are drawn
    roofs = pd.concat([ceilings(devices[name], links=True) for name in DEVICES], ignore_index=True)
    kernels = pd.concat([engine.estimate(devices[name], llama8b, scenario).kernels.assign(device=name)
                         for name in DEVICES], ignore_index=True)
    return roofline_figure(roofs, kernels)


def plot_size(figure, width: float) -> tuple[float, float]:
    margin = figure.layout.margin
    return width - margin.l - margin.r, figure.layout.height - margin.t - SUBTITLE - margin.b


def box(label, figure, width: float) -> tuple[float, float, float, float]:
    """Pixel box (x0, x1, y0, y1; y up) of a label on log axes: 0.6 em per character, 1.3 em per line."""
    plot_w, plot_h = plot_size(figure, width)
    (x0, x1), (y0, y1) = figure.layout.xaxis.range, figure.layout.yaxis.range
    lines = re.sub(r"<[^>]+>", "", label.text.replace("<br>", "\n")).split("\n")
    size = label.font.size
    w, h = max(map(len, lines)) * 0.6 * size, len(lines) * 1.3 * size
    if label.textangle == -90:
        w, h = h, w
    x = (label.x - x0) / (x1 - x0) * plot_w + (label.xshift or 0)
    y = (label.y - y0) / (y1 - y0) * plot_h + (label.yshift or 0)
    left = {"left": x, "right": x - w}.get(label.xanchor, x - w / 2)
    bottom = {"bottom": y, "top": y - h}.get(label.yanchor, y - h / 2)
    return left, left + w, bottom, bottom + h


def apart(a, b) -> bool:
    return a[1] <= b[0] or b[1] <= a[0] or a[3] <= b[2] or b[3] <= a[2]


def on_plot_labels(figure):
    return [a for a in figure.layout.annotations if a.name in ("roof label", "link label", "ridge")]


@pytest.mark.parametrize("width", [SCREEN_WIDTH, FIGURE_SIZE[0]])
def test_ceiling_link_and_ridge_labels_do_not_overlap(figure, width):
    labels = on_plot_labels(figure)
    # every compute roof (bf16 matrix, fp32 vector), both H100 links and every ridge point has its label
    assert sum(a.name == "roof label" for a in labels) == 2 * len(DEVICES)
    assert sum(a.name == "ridge" for a in labels) == 2 * len(DEVICES)
    plot_w, plot_h = plot_size(figure, width)
    for a, b in itertools.combinations(labels, 2):
        assert apart(box(a, figure, width), box(b, figure, width)), (a.text, b.text)
    for label in labels:
        x0, x1, y0, y1 = box(label, figure, width)
        assert x0 >= -2 and x1 <= plot_w + 2 and y0 >= -2 and y1 <= plot_h + 2, label.text


def test_ridge_labels_of_nearby_ridges_stand_side_by_side(figure):
    ridges = sorted((a for a in figure.layout.annotations if a.name == "ridge"), key=lambda a: a.x)
    # H100 989 TFLOP/s / 3.35 TB/s = 295, B200 2.25 PFLOP/s / 8 TB/s = 281: 0.02 decades, a few pixels apart
    h100 = next(a for a in ridges if "H100" in a.text and "295" in a.text)
    b200 = next(a for a in ridges if "B200" in a.text and "281" in a.text)
    assert abs(h100.x - b200.x) == pytest.approx(math.log10(989.4e12 / 3.35e12) - math.log10(2.25e15 / 8e12), abs=0.01)
    assert apart(box(h100, figure, SCREEN_WIDTH), box(b200, figure, SCREEN_WIDTH))


def test_legend_sits_under_the_plot_and_the_figure_is_tall_enough_for_it(figure):
    assert figure.layout.height == FIGURE_SIZE[1]            # on screen as exported, not plotly's 450 px
    legend = figure.layout.legend
    assert legend.orientation == "h" and legend.yref == "container" and legend.y == 0 and legend.yanchor == "bottom"
    # one column per device plus the key to the bound colours; each column a title and its entries
    columns = {}
    for trace in figure.data:
        if trace.showlegend is not False and trace.legendgroup:
            title = trace.legendgrouptitle.text
            columns.setdefault(trace.legendgroup, (title, []))[1].append(trace.name)
    assert len(columns) == len(DEVICES) + 1
    # at 960 px the columns (title 14 px, entries 13 px plus a 46 px sample) must fit side by side, in rows
    widths = [max(len(title) * 0.6 * 14, max(map(len, names)) * 0.6 * 13 + 46) + 12 for title, names in columns.values()]
    rows_of_columns, used = 1, 0.0
    for width in widths:
        if used and used + width > SCREEN_WIDTH - 20:
            rows_of_columns, used = rows_of_columns + 1, 0.0
        used += width
    tallest = max(len(names) for _, names in columns.values())
    legend_px = rows_of_columns * (tallest + 1.5) * 20
    caption = next(a for a in figure.layout.annotations if a.name == "left out")
    caption_px = 18 * (caption.text.count("<br>") + 1)
    assert figure.layout.margin.b >= 60 + caption_px + legend_px              # axis title + footnote + legend
    assert plot_size(figure, SCREEN_WIDTH)[1] >= 300                           # and the plot keeps its room
    # the group titles say which dash and which marker are whose
    titles = {title for title, _ in columns.values()}
    assert titles == {"H100-SXM: solid, ●", "MI300X: dashed, ◆", "B200: dotted, ■", "Kernels: colour = bound"}
    # the kernel points sit in their device's group (its title hides them with it), out of the legend
    for trace in figure.data:
        if trace.meta and trace.meta.get("role") == "kernels":
            assert trace.showlegend is False and trace.legendgroup == f"device {trace.meta['device']}"


def test_not_plotted_footnote_is_wrapped_to_the_figure_width_and_names_every_kernel(figure, devices, llama8b):
    caption = next(a for a in figure.layout.annotations if a.name == "left out")
    lines = caption.text.split("<br>")
    assert len(lines) >= 2
    assert all(len(line) * 0.6 * caption.font.size <= SCREEN_WIDTH - figure.layout.margin.l for line in lines)
    kernels = engine.estimate(devices["H100-SXM"], llama8b, engine.Scenario(tp=2)).kernels
    skipped = set(kernels.loc[(kernels["flops"] == 0) & (kernels["op"] != "kv_read"), "name"])
    assert skipped and all(name in caption.text.replace("<br>", " ") for name in skipped)


def test_scale_up_and_scale_out_links_look_different_and_are_named_on_the_plot(figure):
    links = {t.meta["level"]: t for t in figure.data
             if t.meta and t.meta.get("device") == "H100-SXM" and "link" in str(t.meta.get("level"))}
    up, out = links["scale-up link"], links["scale-out link"]
    assert (up.line.color, up.line.dash, up.line.width) != (out.line.color, out.line.dash, out.line.width)
    assert up.line.dash != out.line.dash and up.line.color != out.line.color
    texts = [a.text for a in figure.layout.annotations if a.name == "link label"]
    # H100-SXM: NVLink 450 GB/s per direction, 400 Gb/s InfiniBand = 50 GB/s per GPU
    assert "H100-SXM scale-up link 450 GB/s" in texts and "H100-SXM scale-out link 50 GB/s" in texts
    for label in (a for a in figure.layout.annotations if a.name == "link label"):
        trace = links.get(label.text.split("H100-SXM ")[-1].rsplit(" ", 2)[0]) if "H100" in label.text else None
        if trace is not None:       # the label sits on (just above) its own line: y = bandwidth x intensity
            assert label.y == pytest.approx(math.log10(trace.meta["value"]) + label.x, abs=1e-9)


def test_one_device_keeps_its_legend_right_of_the_plot_and_labels_apart(devices, llama8b):
    from dashboard.data import ceilings
    h100 = devices["H100-SXM"]
    figure = roofline_figure(ceilings(h100, links=True),
                             engine.estimate(h100, llama8b, engine.Scenario(tp=2)).kernels)
    assert figure.layout.legend.orientation != "h" and figure.layout.legend.x > 1
    width = SCREEN_WIDTH - 260                                  # the legend takes the right of the figure
    labels = on_plot_labels(figure)
    for a, b in itertools.combinations(labels, 2):
        assert apart(box(a, figure, width), box(b, figure, width)), (a.text, b.text)


def test_four_devices_keep_labels_apart_with_room_for_the_plot(devices, llama8b):
    from dashboard.data import ceilings
    names = ("H100-SXM", "A100-80GB-SXM", "MI300X", "B200")
    scenario = engine.Scenario(tp=2)
    figure = roofline_figure(
        pd.concat([ceilings(devices[name], links=True) for name in names], ignore_index=True),
        pd.concat([engine.estimate(devices[name], llama8b, scenario).kernels.assign(device=name) for name in names],
                  ignore_index=True))
    labels = on_plot_labels(figure)
    links = [t for t in figure.data if t.meta and "link" in str(t.meta.get("level"))]
    assert len(links) >= 7                     # MI300X's workbook column gives a scale-up link only
    assert sum(a.name == "link label" for a in labels) == len(links)
    for a, b in itertools.combinations(labels, 2):
        assert apart(box(a, figure, SCREEN_WIDTH), box(b, figure, SCREEN_WIDTH)), (a.text, b.text)
    assert plot_size(figure, SCREEN_WIDTH)[1] >= 300
