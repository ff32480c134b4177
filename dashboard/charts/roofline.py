"""Roofline chart: attainable FLOP/s against arithmetic intensity, every kernel a point."""

from __future__ import annotations

import math
from collections import Counter
from typing import Iterable, Optional

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.frames import attention_with_kv_reads, in_order, records, shape_text, si, with_device, wrap_words
from dashboard.charts.placement import PlotArea, label_box, place, side_by_side
from dashboard.charts.roofline_legend import bound_key_traces, device_legend_group, legend_columns, legend_height
from dashboard.charts.theme import (
    BLACK, BLUE, BLUISH_GREEN, FIGURE_SIZE, GREY, MEMORY_LEVEL_COLORS, SCREEN_WIDTH, SKY_BLUE, TEXT, bound_color,
    bound_sort_key, device_style, house_figure,
)

COMPUTE_COLORS = {"matrix": BLUE, "vector": SKY_BLUE}
# interconnect slopes (drawn when the layout spans devices): scale-up (NVLink, Infinity Fabric) and scale-out
# (InfiniBand, Ethernet) differ in colour, width and dash pattern, and each is named on the plot
# (scale-up keeps the device's dash; scale-out has a dash-dot pattern of its own)
LINK_STYLES = {"scale-up link": dict(color=BLUISH_GREEN, width=2.5),
               "scale-out link": dict(color=BLACK, width=1.5, dash="10px,4px,2px,4px")}
HEIGHT = FIGURE_SIZE[1]   # on screen as in the export, so nothing is cut off at plotly's default 450 px
MARGIN = dict(l=90, r=30, t=80)   # the dashboard adds 18 px per line of scenario subtitle to t
SUBTITLE = 36             # two lines of scenario subtitle, left free in the plot height the labels assume
LEGEND_WIDTH = 260        # a vertical legend right of the plot (one device)
CAPTION_LINE = 18         # px per line of the footnote (font 13)
X_TITLE = "Arithmetic intensity (FLOP/byte)"
Y_TITLE = "Performance (FLOP/s)"


def default_dtypes(kernels: Optional[pd.DataFrame]) -> list[str]:
    """Matrix dtypes the kernels actually ran at (the engine's `matrix_rate_dtype`, else `dtype`)."""
    if kernels is None or kernels.empty:
        return []
    matrix = kernels[kernels["unit"] == "matrix"] if "unit" in kernels else kernels
    column = "matrix_rate_dtype" if "matrix_rate_dtype" in matrix else "dtype"
    values = [v for v in matrix[column].astype(str) if v and v != "nan"]
    if not values and column != "dtype" and "dtype" in matrix:
        values = [v for v in matrix["dtype"].astype(str) if v and v != "nan"]
    return in_order(values)


def plottable(kernels: pd.DataFrame) -> pd.Series:
    """Kernels that can sit on a log-log roofline: FLOPs > 0, bytes > 0 and time > 0."""
    return (kernels["flops"] > 0) & (kernels["bytes"] > 0) & (kernels["time_s"] > 0)


def _hover(rows: list[dict]) -> list[str]:
    texts = []
    for row in rows:
        count = row.get("count", 1)
        share = row.get("time_share", np.nan)
        texts.append(
            f"<b>{row['name']}</b>  ({row.get('phase', '')}, {row['device']})<br>"
            f"shape {shape_text(row)}<br>"
            f"{si(row['flops'], 'FLOP')} · {si(row['bytes'], 'B')} · {row['flops'] / row['bytes']:.3g} FLOP/byte<br>"
            f"{si(row['flops'] / row['time_s'], 'FLOP/s')} attained<br>"
            f"time {row['time_s'] * 1e6:.4g} µs per call × {count:g} calls"
            + ("" if pd.isna(share) else f" ({share * 100:.1f}% of phase)")
            + f"<br>bound: {row['bound']}"
            + (f"<br>includes the KV-cache read ({si(row['kv_read_bytes'], 'B')} per call)"
               if row.get("kv_read_bytes", 0) > 0 else "")
        )
    return texts


def _merge_equal_roofs(compute: list[dict]) -> list[dict]:
    """One roof per device, unit and peak: dtypes with the same rate share it ("bf16/fp16")."""
    merged: dict[tuple, dict] = {}
    for roof in compute:
        key = (roof["device"], roof["unit"], roof["value"])
        if key in merged:
            merged[key]["dtype"] += "/" + roof["dtype"]
        else:
            merged[key] = dict(roof)
    return list(merged.values())


def _axis_ranges(compute: list[dict], memory: list[dict], points: list[dict]) -> tuple[float, float, float, float]:
    """Log-space ranges that hold every point, ridge point and ceiling."""
    ridges = [roof["ridge_point"] for roof in compute if not pd.isna(roof["ridge_point"])]
    xs = [point["x"] for point in points] + ridges
    x_lo = min([*xs, 1.0]) / 3 if xs else 0.1
    x_hi = max([*xs, 10.0]) * 4
    top = max(roof["value"] for roof in compute) if compute else (
        max(point["y"] for point in points) if points else 1.0)
    lows = [point["y"] for point in points]
    if memory:
        lows.append(min(roof["value"] for roof in memory) * x_lo)
    y_lo = min(lows) / 2 if lows else top / 1e4
    return math.log10(x_lo), math.log10(x_hi), math.log10(max(y_lo, top / 1e9)), math.log10(top * 2.5)


def _ceiling_traces(device: str, index: int, compute: list[dict], memory: list[dict],
                    x_lo: float, x_hi: float, several: bool = False) -> list[dict]:
    """Memory slopes and compute roofs. With several devices the roofs and the interconnect slopes stay out of
    the legend (each is named on the plot), so the legend is short enough to sit under the plot."""
    style = device_style(index)
    group = device_legend_group(device, index) if several else dict(
        legendgroup=f"ceilings {device}", legendgrouptitle=dict(text=f"{device} ceilings"))
    traces = []
    top = max((roof["value"] for roof in compute), default=None)
    fastest = max((roof["value"] for roof in memory), default=None)
    for row in memory:
        bandwidth = row["value"]
        x_end = top / bandwidth if top else x_hi
        line = dict(color=MEMORY_LEVEL_COLORS.get(row["level"], GREY), width=2.5, dash=style["dash"])
        line.update(LINK_STYLES.get(row["level"], {}))
        traces.append(dict(
            type="scatter", x=[x_lo, x_end], y=[bandwidth * x_lo, bandwidth * x_end], mode="lines",
            name=f"{row['level']} {si(bandwidth, 'B/s')}", line=line,
            showlegend=not (several and row["level"] in LINK_STYLES),
            hovertemplate=f"{device} {row['level']} bandwidth {si(bandwidth, 'B/s')}<br>"
                          "%{x:.3g} FLOP/byte → %{y:.3s}FLOP/s<extra></extra>",
            meta=dict(role="ceiling", kind="memory", device=device, level=row["level"], value=bandwidth),
            **group,
        ))
    for row in compute:
        peak = row["value"]
        x_start = peak / fastest if fastest else x_lo
        label = f"{row['dtype']} {row['unit']}"
        traces.append(dict(
            type="scatter", x=[x_start, x_hi], y=[peak, peak], mode="lines",
            name=f"{label} {si(peak, 'FLOP/s')}",
            line=dict(color=COMPUTE_COLORS.get(row["unit"], GREY), width=2.5, dash=style["dash"]),
            hovertemplate=f"{device} {label} peak {si(peak, 'FLOP/s')}<extra></extra>", showlegend=not several,
            meta=dict(role="ceiling", kind="compute", device=device, unit=row["unit"], dtype=row["dtype"],
                      value=peak),
            **group,
        ))
    return traces


def _roof_label_candidates(start: float, plot: PlotArea) -> list[dict]:
    """Where a compute roof's label may go, best first: beside the point where the roof meets the fastest
    memory slope (right of it in the left half of the plot, else left), above the line, then below it;
    then further along the roof; then stacked above or below the line (a roof's label names its device,
    peak and dtype, so it can stand a little off its line)."""
    right = dict(xanchor="left", xshift=4)
    left = dict(xanchor="right", xshift=-4)
    sides = [right, left] if start < sum(plot.x_range) / 2 else [left, right]
    above, below = dict(yanchor="bottom", yshift=1), dict(yanchor="top", yshift=-1)
    near = [dict(side, **level) for level in (above, below) for side in sides]
    along = [dict(right, x=x, **level) for x in np.arange(start + 0.25, plot.x_range[1], 0.25)
             for level in (above, below)]
    stacked = [dict(side, yanchor=anchor, yshift=sign * (1 + 12 * step))
               for step in range(1, 6) for anchor, sign in (("bottom", 1), ("top", -1)) for side in sides]
    return near + along + stacked


def _roof_labels(traces: list[dict], several: bool, plot: PlotArea, placed: list) -> list[dict]:
    """Name each compute roof on the plot, beside the point where it meets the fastest memory slope,
    at the first place clear of the labels already placed (highest roof first)."""
    labels = []
    roofs = sorted((trace for trace in traces if trace["meta"]["kind"] == "compute"), key=lambda t: -t["y"][0])
    for trace in roofs:
        prefix = f"{trace['meta']['device']} · " if several else ""
        start = math.log10(trace["x"][0])
        label = dict(x=start, y=math.log10(trace["y"][0]), showarrow=False, text=f"{prefix}{trace['name']}",
                     bgcolor="rgba(255,255,255,0.8)", font=dict(size=14, color=trace["line"]["color"]), borderpad=1,
                     name="roof label")
        labels.append(place(label, _roof_label_candidates(start, plot), placed, plot))
    return labels


def _link_labels(traces: list[dict], several: bool, plot: PlotArea, placed: list) -> list[dict]:
    """Name each interconnect slope on the plot (device, link, bandwidth), just above the line, at the first
    place along it clear of the labels already placed."""
    labels = []
    (x_lo, x_hi), (y_lo, y_hi) = plot.x_range, plot.y_range
    for trace in traces:
        level = trace["meta"].get("level", "")
        if trace["meta"]["kind"] != "memory" or level not in LINK_STYLES:
            continue
        bandwidth = math.log10(trace["meta"]["value"])
        enters = max(x_lo, y_lo - bandwidth) + 0.1          # where the slope comes into the plot
        label = dict(showarrow=False, xanchor="left", yanchor="bottom", xshift=2, yshift=2,
                     text=(f"{trace['meta']['device']} " if several else "") + trace["name"],
                     bgcolor="rgba(255,255,255,0.8)", font=dict(size=12, color=trace["line"]["color"]), borderpad=1,
                     name="link label")
        along = [x for x in np.arange(enters, x_hi, 0.25) if bandwidth + x < y_hi]
        candidates = [dict(x=x, y=bandwidth + x, **side) for side in (
            {}, dict(xanchor="right", yanchor="top", xshift=-2, yshift=-2)) for x in along]   # above-left, below-right
        labels.append(place(label, candidates, placed, plot))
    return labels


def _ridge_trace(device: str, index: int, compute: list[dict], several: bool) -> Optional[dict]:
    """Where the HBM slope meets each compute roof (markers; labels are added by `_ridge_labels`)."""
    ridges = {}  # one per peak
    for roof in compute:
        if not pd.isna(roof["ridge_point"]):
            ridges.setdefault(roof["value"], roof)
    if not ridges:
        return None
    style = device_style(index)
    return dict(
        type="scatter", x=[roof["ridge_point"] for roof in ridges.values()], y=list(ridges), mode="markers",
        marker=dict(symbol=style["symbol"], size=11, color="white", line=dict(color=TEXT, width=2)),
        name=f"{device} ridge points" if several else "ridge points", showlegend=False,
        hovertext=[f"{device}: {roof['dtype']} {roof['unit']} roof meets the HBM slope at "
                   f"{roof['ridge_point']:.1f} FLOP/byte" for roof in ridges.values()],
        hovertemplate="%{hovertext}<extra></extra>",
        meta=dict(role="ridge", device=device, ridge_points=[roof["ridge_point"] for roof in ridges.values()]),
    )


def _ridge_labels(ridge: dict, y_lo: float, several: bool) -> tuple[list[dict], list[dict]]:
    """A dotted drop line from each ridge point to the x axis, labelled with its intensity: (shapes, annotations).
    The labels stand upright left of their line; `placement.side_by_side` then moves apart those that would meet."""
    shapes, labels = [], []
    for x, y in zip(ridge["x"], ridge["y"]):
        shapes.append(dict(type="line", x0=x, x1=x, y0=10 ** y_lo, y1=y, line=dict(color=GREY, width=1, dash="dot"),
                           layer="below", name="ridge drop line"))
        labels.append(dict(
            x=math.log10(x), y=y_lo, yanchor="bottom", xanchor="right", xshift=-2, yshift=6,
            text=f"ridge {x:.0f} FLOP/B" + (f"<br>{ridge['meta']['device']}" if several else ""),   # two short lines
            textangle=-90, showarrow=False, font=dict(size=12, color=TEXT), borderpad=0, name="ridge",
        ))
    return shapes, labels


def _kernel_traces(points: list[dict], devices: list[str], several: bool = False) -> list[dict]:
    """One marker trace per device and bound: colour by bound, symbol by device, size by share of the phase."""
    groups: dict[tuple, list[dict]] = {}
    for point in points:
        groups.setdefault((point["device"], point["bound"]), []).append(point)
    traces = []
    for index, device in enumerate(devices):
        for bound in sorted((b for d, b in groups if d == device), key=bound_sort_key):
            rows = groups[device, bound]
            shares = [0.0 if pd.isna(row["time_share"]) else min(max(row["time_share"], 0.0), 1.0) for row in rows]
            traces.append(dict(
                type="scatter", x=[row["x"] for row in rows], y=[row["y"] for row in rows], mode="markers",
                name=f"{bound}-bound",
                marker=dict(color=bound_color(bound), symbol=device_style(index)["symbol"],
                            size=[8 + 34 * math.sqrt(share) for share in shares], opacity=0.8,
                            line=dict(color="white", width=1)),
                hovertext=_hover(rows), hovertemplate="%{hovertext}<extra></extra>",
                # several devices: in the device's group (its title hides them with it), the colours in the key
                **(dict(device_legend_group(device, index), showlegend=False) if several else dict(
                    legendgroup=f"kernels {device}", legendgrouptitle=dict(text=f"{device} kernels"))),
                meta=dict(role="kernels", device=device, bound=bound, names=[row["name"] for row in rows]),
            ))
    return traces


def roofline_figure(ceilings: pd.DataFrame, kernels: Optional[pd.DataFrame] = None, *,
                    dtypes: Optional[Iterable[str]] = None, show_vector: bool = True,
                    memory_levels: Optional[Iterable[str]] = None, title: Optional[str] = None) -> go.Figure:
    """Log-log roofline of one or more devices with every kernel as a point.

    ceilings: rows of `engine.roofline_ceilings(hw)` (device, kind, label, unit, dtype, level,
        value, ridge_point), several devices concatenated.
    kernels: `Estimate.kernels` rows (with a `device` column when several devices are shown):
        x = flops / bytes, y = flops / time_s, size by `time_share`, colour by `bound`, symbol by
        device. A KV-cache read (zero FLOPs) is folded into the attention products that consume it
        (`frames.attention_with_kv_reads`), so decode attention shows the bytes it reads. Kernels with zero FLOPs, zero bytes or zero time have no place on a log-log
        roofline; they are left out and an annotation says how many.
    dtypes: matrix roofs to draw (default: the dtypes the kernels ran at; all when no kernels);
        the vector roof is drawn too unless `show_vector=False`.
    memory_levels: memory slopes to draw (default every level present: HBM, LLC, SRAM).
    """
    ceilings = with_device(ceilings)
    devices = in_order(ceilings["device"])
    if kernels is not None and not kernels.empty:
        kernels = attention_with_kv_reads(with_device(kernels, devices[0] if len(devices) == 1 else "device"))
        devices = in_order([*devices, *kernels["device"]])
    else:
        kernels = None
    # the ceilings are a dozen rows per device: plain records are quicker to sift than DataFrames
    roofs = records(ceilings)
    compute = [roof for roof in roofs if roof["kind"] == "compute"]
    chosen = list(dtypes) if dtypes is not None else default_dtypes(kernels)
    if not chosen:
        chosen = in_order(roof["dtype"] for roof in compute if roof["unit"] == "matrix")
    compute = _merge_equal_roofs([roof for roof in compute if (roof["unit"] == "matrix" and roof["dtype"] in chosen)
                                  or (show_vector and roof["unit"] == "vector")])
    levels = None if memory_levels is None else set(memory_levels)
    memory = [roof for roof in roofs if roof["kind"] == "memory" and (levels is None or roof["level"] in levels)]

    points: list[dict] = []
    left_out = pd.DataFrame()
    if kernels is not None:
        ok = plottable(kernels)
        left_out = kernels[~ok]
        kept = kernels[ok]
        if "time_share" not in kept:
            total = kept["count"] * kept["time_s"]
            kept = kept.assign(time_share=total / total.groupby([kept["device"], kept["phase"]]).transform("sum"))
        points = records(kept.assign(x=kept["flops"] / kept["bytes"], y=kept["flops"] / kept["time_s"]))
    x_lo, x_hi, y_lo, y_hi = _axis_ranges(compute, memory, points)

    several = len(devices) > 1
    has_hbm = any(roof["level"] == "HBM" for roof in roofs)
    data, shapes, ridge_labels, ceiling_traces = [], [], [], []
    for index, device in enumerate(devices):
        device_compute = [roof for roof in compute if roof["device"] == device]
        device_memory = [roof for roof in memory if roof["device"] == device]
        traces = _ceiling_traces(device, index, device_compute, device_memory, 10 ** x_lo, 10 ** x_hi, several)
        data += traces
        ceiling_traces += traces
        ridge = _ridge_trace(device, index, device_compute, several) if has_hbm else None
        if ridge is not None:
            data.append(ridge)
            drop_lines, labels = _ridge_labels(ridge, y_lo, several)
            shapes += drop_lines
            ridge_labels += labels
    data += _kernel_traces(points, devices, several)
    if several:
        data += bound_key_traces(point["bound"] for point in points)
    # the bottom margin holds the axis title, the footnote and (several devices) the legend, sized for the
    # dashboard's width; the plot area left is where the labels are placed
    caption = _left_out_caption(left_out)
    legend_px = legend_height(legend_columns(data), SCREEN_WIDTH - 20) if several else 0
    caption_px = CAPTION_LINE * (caption.count("<br>") + 1) + 10 if caption else 0
    bottom = int(70 + caption_px + legend_px)
    plot = PlotArea(SCREEN_WIDTH - MARGIN["l"] - MARGIN["r"] - (0 if several else LEGEND_WIDTH),
                    HEIGHT - MARGIN["t"] - SUBTITLE - bottom, (x_lo, x_hi), (y_lo, y_hi))
    annotations = side_by_side(ridge_labels, plot)           # fixed along the x axis: placed first
    placed = [label_box(label, plot) for label in annotations]
    annotations += _roof_labels(ceiling_traces, several, plot, placed)
    annotations += _link_labels(ceiling_traces, several, plot, placed)
    if caption:
        annotations.append(dict(  # a footnote under the x axis: the plot area stays free for the data
            x=0, y=0, xref="paper", yref="paper", xanchor="left", yanchor="top", yshift=-62, showarrow=False, text=caption,
            font=dict(size=13, color=GREY), align="left", name="left out",
        ))
    decades = range(math.ceil(y_lo), math.floor(y_hi) + 1)
    # several devices: the legend along the bottom of the figure, under the axis title and the footnote
    legend = (dict(orientation="h", x=0, xanchor="left", y=0, yanchor="bottom", yref="container",
                   font=dict(size=13)) if several else
              dict(x=1.01, xanchor="left", y=1, yanchor="top"))
    layout = dict(
        height=HEIGHT, margin=dict(MARGIN, b=bottom),
        xaxis=dict(type="log", range=[x_lo, x_hi], title=dict(text=X_TITLE), dtick=1),
        yaxis=dict(type="log", range=[y_lo, y_hi], title=dict(text=Y_TITLE),
                   tickvals=[10.0 ** d for d in decades], ticktext=[si(10.0 ** d) for d in decades]),
        shapes=shapes, annotations=annotations, legend=legend, hovermode="closest",
    )
    return house_figure(data, layout, title or "Roofline: " + " vs ".join(devices))


def _left_out_caption(left_out: pd.DataFrame, width: int = 110) -> str:
    """'N kernels not plotted (...): names' wrapped into lines that fit the figure, every name listed."""
    if left_out.empty:
        return ""
    per_device = Counter(left_out["device"])
    counted = f"{len(left_out)} kernels" if len(per_device) == 1 else (
        f"{len(left_out)} kernels ({', '.join(f'{d}: {n}' for d, n in per_device.items())})")
    names = ", ".join(in_order(left_out["name"]))
    return wrap_words(f"{counted} not plotted (zero FLOPs or zero bytes: no finite intensity): {names}", width)
