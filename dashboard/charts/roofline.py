"""Roofline chart: attainable FLOP/s against arithmetic intensity, every kernel a point."""

from __future__ import annotations

import math
from collections import Counter
from typing import Iterable, Optional

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.frames import attention_with_kv_reads, in_order, records, shape_text, si, with_device
from dashboard.charts.theme import (
    BLUE, GREY, MEMORY_LEVEL_COLORS, SKY_BLUE, TEXT, bound_color, bound_sort_key, device_style, house_figure,
)

COMPUTE_COLORS = {"matrix": BLUE, "vector": SKY_BLUE}
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
                    x_lo: float, x_hi: float) -> list[dict]:
    style = device_style(index)
    group = dict(legendgroup=f"ceilings {device}", legendgrouptitle=dict(text=f"{device} ceilings"))
    traces = []
    top = max((roof["value"] for roof in compute), default=None)
    fastest = max((roof["value"] for roof in memory), default=None)
    for row in memory:
        bandwidth = row["value"]
        x_end = top / bandwidth if top else x_hi
        traces.append(dict(
            type="scatter", x=[x_lo, x_end], y=[bandwidth * x_lo, bandwidth * x_end], mode="lines",
            name=f"{row['level']} {si(bandwidth, 'B/s')}",
            line=dict(color=MEMORY_LEVEL_COLORS.get(row["level"], GREY), width=2.5, dash=style["dash"]),
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
            hovertemplate=f"{device} {label} peak {si(peak, 'FLOP/s')}<extra></extra>",
            meta=dict(role="ceiling", kind="compute", device=device, unit=row["unit"], dtype=row["dtype"],
                      value=peak),
            **group,
        ))
    return traces


def _roof_labels(traces: list[dict], several: bool, x_lo: float, x_hi: float) -> list[dict]:
    """Name each compute roof on the plot, above the line where it meets the fastest memory slope.

    Roofs that start in the right half are labelled to the left of that point (above the slope,
    where nothing else is drawn), others to its right, so labels stay inside the plot.
    """
    labels = []
    for trace in traces:
        if trace["meta"]["kind"] != "compute":
            continue
        prefix = f"{trace['meta']['device']} · " if several else ""
        start = math.log10(trace["x"][0])
        left = start > x_lo + 0.5 * (x_hi - x_lo)
        labels.append(dict(
            x=start, y=math.log10(trace["y"][0]), xanchor="right" if left else "left", yanchor="bottom",
            xshift=-4 if left else 4, yshift=1, showarrow=False, text=f"{prefix}{trace['name']}",
            bgcolor="rgba(255,255,255,0.8)", font=dict(size=14, color=trace["line"]["color"]), borderpad=1,
            name="roof label",
        ))
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
    """A dotted drop line from each ridge point to the x axis, labelled with its intensity: (shapes, annotations)."""
    shapes, labels = [], []
    for x, y in zip(ridge["x"], ridge["y"]):
        shapes.append(dict(type="line", x0=x, x1=x, y0=10 ** y_lo, y1=y, line=dict(color=GREY, width=1, dash="dot"),
                           layer="below", name="ridge drop line"))
        labels.append(dict(
            x=math.log10(x), y=y_lo, yanchor="bottom", xanchor="right", xshift=-2, yshift=6,
            text=f"ridge {x:.0f} FLOP/B" + (f" ({ridge['meta']['device']})" if several else ""),
            textangle=-90, showarrow=False, font=dict(size=12, color=TEXT), name="ridge",
        ))
    return shapes, labels


def _kernel_traces(points: list[dict], devices: list[str]) -> list[dict]:
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
                legendgroup=f"kernels {device}", legendgrouptitle=dict(text=f"{device} kernels"),
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
    data, shapes, annotations = [], [], []
    for index, device in enumerate(devices):
        device_compute = [roof for roof in compute if roof["device"] == device]
        device_memory = [roof for roof in memory if roof["device"] == device]
        traces = _ceiling_traces(device, index, device_compute, device_memory, 10 ** x_lo, 10 ** x_hi)
        data += traces
        annotations += _roof_labels(traces, several, x_lo, x_hi)
        ridge = _ridge_trace(device, index, device_compute, several) if has_hbm else None
        if ridge is not None:
            data.append(ridge)
            drop_lines, labels = _ridge_labels(ridge, y_lo, several)
            shapes += drop_lines
            annotations += labels
    data += _kernel_traces(points, devices)
    layout = {}
    if len(left_out):
        names = in_order(left_out["name"])
        shown = ", ".join(names[:6]) + (", …" if len(names) > 6 else "")
        per_device = Counter(left_out["device"])
        counted = f"{len(left_out)} kernels" if len(per_device) == 1 else (
            f"{len(left_out)} kernels ({', '.join(f'{d}: {n}' for d, n in per_device.items())})")
        annotations.append(dict(  # a footnote under the x axis: the plot area stays free for the data
            x=0, y=0, xref="paper", yref="paper", xanchor="left", yanchor="top", yshift=-58, showarrow=False,
            text=f"{counted} not plotted (zero FLOPs or zero bytes: no finite intensity): {shown}",
            font=dict(size=13, color=GREY), align="left", name="left out",
        ))
        layout["margin"] = dict(b=100)
    decades = range(math.ceil(y_lo), math.floor(y_hi) + 1)
    layout.update(
        xaxis=dict(type="log", range=[x_lo, x_hi], title=dict(text=X_TITLE), dtick=1),
        yaxis=dict(type="log", range=[y_lo, y_hi], title=dict(text=Y_TITLE),
                   tickvals=[10.0 ** d for d in decades], ticktext=[si(10.0 ** d) for d in decades]),
        shapes=shapes, annotations=annotations,
        legend=dict(x=1.01, xanchor="left", y=1, yanchor="top"), hovermode="closest",
    )
    return house_figure(data, layout, title or "Roofline: " + " vs ".join(devices))
