"""Roofline chart: attainable FLOP/s against arithmetic intensity, every kernel a point."""

from __future__ import annotations

from typing import Iterable, Optional

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.frames import in_order, shape_text, si, with_device
from dashboard.charts.theme import (
    BLUE, GREY, MEMORY_LEVEL_COLORS, SKY_BLUE, TEXT, apply_theme, bound_color, bound_sort_key, device_style,
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


def _hover(rows: pd.DataFrame) -> list[str]:
    texts = []
    for _, row in rows.iterrows():
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
        )
    return texts


def _merge_equal_roofs(compute: pd.DataFrame) -> pd.DataFrame:
    """One roof per device, unit and peak: dtypes with the same rate share it ("bf16/fp16")."""
    if compute.empty:
        return compute
    keys = ["device", "unit", "value"]
    merged = compute.groupby(keys, sort=False, as_index=False).agg(
        {"dtype": "/".join, **{c: "first" for c in compute.columns if c not in (*keys, "dtype")}})
    return merged[list(compute.columns)]


def _axis_ranges(ceilings: pd.DataFrame, points: pd.DataFrame) -> tuple[float, float, float, float]:
    """Log-space ranges that hold every point, ridge point and ceiling."""
    compute = ceilings[ceilings["kind"] == "compute"]
    memory = ceilings[ceilings["kind"] == "memory"]
    ridges = compute["ridge_point"].dropna()
    xs = list(points["x"]) + list(ridges)
    x_lo = min([*xs, 1.0]) / 3 if xs else 0.1
    x_hi = max([*xs, 10.0]) * 4
    top = compute["value"].max() if not compute.empty else (points["y"].max() if not points.empty else 1.0)
    lows = list(points["y"])
    if not memory.empty:
        lows.append(memory["value"].min() * x_lo)
    y_lo = min(lows) / 2 if lows else top / 1e4
    return np.log10(x_lo), np.log10(x_hi), np.log10(max(y_lo, top / 1e9)), np.log10(top * 2.5)


def _ceiling_traces(device: str, index: int, compute: pd.DataFrame, memory: pd.DataFrame,
                    x_lo: float, x_hi: float, several: bool) -> list[go.Scatter]:
    style = device_style(index)
    group = dict(legendgroup=f"ceilings {device}", legendgrouptitle_text=f"{device} ceilings")
    traces = []
    top = compute["value"].max() if not compute.empty else None
    fastest = memory["value"].max() if not memory.empty else None
    for _, row in memory.iterrows():
        bandwidth = row["value"]
        x_end = top / bandwidth if top else x_hi
        traces.append(go.Scatter(
            x=[x_lo, x_end], y=[bandwidth * x_lo, bandwidth * x_end], mode="lines",
            name=f"{row['level']} {si(bandwidth, 'B/s')}",
            line=dict(color=MEMORY_LEVEL_COLORS.get(row["level"], GREY), width=2.5, dash=style["dash"]),
            hovertemplate=f"{device} {row['level']} bandwidth {si(bandwidth, 'B/s')}<br>"
                          "%{x:.3g} FLOP/byte → %{y:.3s}FLOP/s<extra></extra>",
            meta=dict(role="ceiling", kind="memory", device=device, level=row["level"], value=bandwidth),
            **group,
        ))
    for _, row in compute.iterrows():
        peak = row["value"]
        x_start = peak / fastest if fastest else x_lo
        label = f"{row['dtype']} {row['unit']}"
        traces.append(go.Scatter(
            x=[x_start, x_hi], y=[peak, peak], mode="lines",
            name=f"{label} {si(peak, 'FLOP/s')}",
            line=dict(color=COMPUTE_COLORS.get(row["unit"], GREY), width=2.5, dash=style["dash"]),
            hovertemplate=f"{device} {label} peak {si(peak, 'FLOP/s')}<extra></extra>",
            meta=dict(role="ceiling", kind="compute", device=device, unit=row["unit"], dtype=row["dtype"],
                      value=peak),
            **group,
        ))
    return traces


def _roof_labels(fig: go.Figure, traces: list[go.Scatter], several: bool, x_lo: float, x_hi: float) -> None:
    """Name each compute roof on the plot, above the line where it meets the fastest memory slope.

    Roofs that start in the right half are labelled to the left of that point (above the slope,
    where nothing else is drawn), others to its right, so labels stay inside the plot.
    """
    for trace in traces:
        if trace.meta["kind"] != "compute":
            continue
        prefix = f"{trace.meta['device']} · " if several else ""
        start = float(np.log10(trace.x[0]))
        left = start > x_lo + 0.5 * (x_hi - x_lo)
        fig.add_annotation(
            x=start, y=float(np.log10(trace.y[0])), xanchor="right" if left else "left", yanchor="bottom",
            xshift=-4 if left else 4, yshift=1, showarrow=False, text=f"{prefix}{trace.name}",
            bgcolor="rgba(255,255,255,0.8)", font=dict(size=14, color=trace.line.color), borderpad=1,
            name="roof label",
        )


def _ridge_trace(device: str, index: int, compute: pd.DataFrame, several: bool) -> Optional[go.Scatter]:
    """Where the HBM slope meets each compute roof (markers; labels are added by `_ridge_labels`)."""
    ridges = compute.dropna(subset=["ridge_point"]).drop_duplicates(subset=["value"])
    if ridges.empty:
        return None
    style = device_style(index)
    return go.Scatter(
        x=ridges["ridge_point"], y=ridges["value"], mode="markers",
        marker=dict(symbol=style["symbol"], size=11, color="white", line=dict(color=TEXT, width=2)),
        name=f"{device} ridge points" if several else "ridge points", showlegend=False,
        hovertext=[f"{device}: {row['dtype']} {row['unit']} roof meets the HBM slope at "
                   f"{row['ridge_point']:.1f} FLOP/byte" for _, row in ridges.iterrows()],
        hovertemplate="%{hovertext}<extra></extra>",
        meta=dict(role="ridge", device=device, ridge_points=list(ridges["ridge_point"])),
    )


def _ridge_labels(fig: go.Figure, ridge: go.Scatter, y_lo: float, several: bool) -> None:
    """A dotted drop line from each ridge point to the x axis, labelled with its intensity."""
    for x, y in zip(ridge.x, ridge.y):
        fig.add_shape(type="line", x0=x, x1=x, y0=10 ** y_lo, y1=y, line=dict(color=GREY, width=1, dash="dot"),
                      layer="below", name="ridge drop line")
        fig.add_annotation(
            x=float(np.log10(x)), y=y_lo, yanchor="bottom", xanchor="right", xshift=-2, yshift=6,
            text=f"ridge {x:.0f} FLOP/B" + (f" ({ridge.meta['device']})" if several else ""),
            textangle=-90, showarrow=False, font=dict(size=12, color=TEXT), name="ridge",
        )


def roofline_figure(ceilings: pd.DataFrame, kernels: Optional[pd.DataFrame] = None, *,
                    dtypes: Optional[Iterable[str]] = None, show_vector: bool = True,
                    memory_levels: Optional[Iterable[str]] = None, title: Optional[str] = None) -> go.Figure:
    """Log-log roofline of one or more devices with every kernel as a point.

    ceilings: rows of `engine.roofline_ceilings(hw)` (device, kind, label, unit, dtype, level,
        value, ridge_point), several devices concatenated.
    kernels: `Estimate.kernels` rows (with a `device` column when several devices are shown):
        x = flops / bytes, y = flops / time_s, size by `time_share`, colour by `bound`, symbol by
        device. Kernels with zero FLOPs, zero bytes or zero time have no place on a log-log
        roofline; they are left out and an annotation says how many.
    dtypes: matrix roofs to draw (default: the dtypes the kernels ran at; all when no kernels);
        the vector roof is drawn too unless `show_vector=False`.
    memory_levels: memory slopes to draw (default every level present: HBM, LLC, SRAM).
    """
    ceilings = with_device(ceilings)
    devices = in_order(ceilings["device"])
    if kernels is not None and not kernels.empty:
        kernels = with_device(kernels, devices[0] if len(devices) == 1 else "device")
        devices = in_order([*devices, *kernels["device"]])
    else:
        kernels = None
    chosen = list(dtypes) if dtypes is not None else default_dtypes(kernels)
    compute = ceilings[ceilings["kind"] == "compute"]
    matrix = compute[compute["unit"] == "matrix"]
    if not chosen:
        chosen = in_order(matrix["dtype"])
    keep = (compute["unit"] == "matrix") & compute["dtype"].isin(chosen)
    if show_vector:
        keep |= compute["unit"] == "vector"
    compute = _merge_equal_roofs(compute[keep])
    memory = ceilings[ceilings["kind"] == "memory"]
    if memory_levels is not None:
        memory = memory[memory["level"].isin(list(memory_levels))]

    points = pd.DataFrame({"x": [], "y": []})
    left_out = pd.DataFrame()
    if kernels is not None:
        ok = plottable(kernels)
        left_out = kernels[~ok]
        kept = kernels[ok].copy()
        if "time_share" not in kept:
            total = kept["count"] * kept["time_s"]
            kept["time_share"] = total / total.groupby([kept["device"], kept["phase"]]).transform("sum")
        kept["x"] = kept["flops"] / kept["bytes"]
        kept["y"] = kept["flops"] / kept["time_s"]
        points = kept
    x_lo, x_hi, y_lo, y_hi = _axis_ranges(pd.concat([compute, memory]), points)

    several = len(devices) > 1
    fig = go.Figure()
    for index, device in enumerate(devices):
        device_compute = compute[compute["device"] == device]
        device_memory = memory[memory["device"] == device]
        traces = _ceiling_traces(device, index, device_compute, device_memory, 10 ** x_lo, 10 ** x_hi, several)
        fig.add_traces(traces)
        _roof_labels(fig, traces, several, x_lo, x_hi)
        has_hbm = (device_memory["level"] == "HBM").any() or (ceilings["level"] == "HBM").any()
        ridge = _ridge_trace(device, index, device_compute, several) if has_hbm else None
        if ridge is not None:
            fig.add_trace(ridge)
            _ridge_labels(fig, ridge, y_lo, several)
    if kernels is not None:
        for index, device in enumerate(devices):
            mine = points[points["device"] == device]
            for bound in sorted(in_order(mine["bound"]), key=bound_sort_key):
                rows = mine[mine["bound"] == bound]
                shares = rows["time_share"].fillna(0).clip(0, 1).to_numpy()
                fig.add_trace(go.Scatter(
                    x=rows["x"], y=rows["y"], mode="markers",
                    name=f"{bound}-bound",
                    marker=dict(color=bound_color(bound), symbol=device_style(index)["symbol"],
                                size=8 + 34 * np.sqrt(shares), opacity=0.8, line=dict(color="white", width=1)),
                    hovertext=_hover(rows), hovertemplate="%{hovertext}<extra></extra>",
                    legendgroup=f"kernels {device}", legendgrouptitle_text=f"{device} kernels",
                    meta=dict(role="kernels", device=device, bound=bound, names=list(rows["name"])),
                ))
    if len(left_out):
        names = in_order(left_out["name"])
        shown = ", ".join(names[:6]) + (", …" if len(names) > 6 else "")
        per_device = left_out.groupby("device", sort=False).size()
        counted = f"{len(left_out)} kernels" if len(per_device) == 1 else (
            f"{len(left_out)} kernels ({', '.join(f'{d}: {n}' for d, n in per_device.items())})")
        fig.add_annotation(  # a footnote under the x axis: the plot area stays free for the data
            x=0, y=0, xref="paper", yref="paper", xanchor="left", yanchor="top", yshift=-58, showarrow=False,
            text=f"{counted} not plotted (zero FLOPs or zero bytes: no finite intensity): {shown}",
            font=dict(size=13, color=GREY), align="left", name="left out",
        )
        fig.update_layout(margin_b=100)
    fig.update_xaxes(type="log", range=[x_lo, x_hi], title_text=X_TITLE, dtick=1)
    decades = np.arange(np.ceil(y_lo), np.floor(y_hi) + 1)
    fig.update_yaxes(type="log", range=[y_lo, y_hi], title_text=Y_TITLE,
                     tickvals=10 ** decades, ticktext=[si(10 ** d) for d in decades])
    default_title = "Roofline: " + " vs ".join(devices)
    apply_theme(fig, title or default_title)
    fig.update_layout(legend=dict(x=1.01, xanchor="left", y=1, yanchor="top"), hovermode="closest")
    return fig
