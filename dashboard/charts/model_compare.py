"""Several models on one device: a grouped bar chart, one panel per metric, one bar per model in each."""

from __future__ import annotations

import math
from typing import Optional

import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.facets import axis_ids, panels_layout
from dashboard.charts.frames import in_order
from dashboard.charts.theme import TEXT, WARNING, device_style, house_figure

# (column of engine.explore.grid.METRIC_COLUMNS, label, display unit, scale from SI)
PANELS = (("ttft_s", "TTFT", "ms", 1e3), ("tpot_s", "TPOT", "ms", 1e3),
          ("tokens_per_s", "Output tokens/s", "tokens/s", 1.0),
          ("memory_per_device_bytes", "Memory per device", "GB", 1e-9))
UNFIT_PATTERN = "/"
UNFIT_NOTE = "hatched: does not fit in the device's memory (the times are what it would take if it did)"


def _number(value: float) -> str:
    """3 significant digits with thousands separators: 15873.2 -> '15,873', 0.01234 -> '0.0123'."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def model_comparison_figure(metrics: pd.DataFrame, device: str = "", title: Optional[str] = None) -> go.Figure:
    """Per metric (TTFT, TPOT, output tokens/s, memory per device) a panel with one bar per model.

    metrics: one row per model with a `model` column and engine.explore.grid.METRIC_COLUMNS in SI units (seconds,
    tokens/s, bytes; engine.explore.grid.metrics_from_estimate gives them), `fits` and `memory_capacity_bytes`.
    Metrics no model has (TTFT in a decode step) get no panel. A model that does not fit is drawn hatched
    in every panel, with the reason on hover; the memory panel has the device's capacity as a line.
    """
    frame = metrics.drop_duplicates(subset=["model"], keep="last").set_index("model")
    models = in_order(frame.index)
    panels = [p for p in PANELS if p[0] in frame and pd.to_numeric(frame[p[0]], errors="coerce").notna().any()]
    layout = panels_layout([label if label.endswith(unit) else f"{label} ({unit})" for _, label, unit, _ in panels],
                           spacing=0.07)
    fits = frame["fits"].astype(bool) if "fits" in frame else pd.Series(True, index=frame.index)
    data, shapes = [], []
    for index, model in enumerate(models):
        color = device_style(index)["color"]
        ok = bool(fits[model])
        why = "" if ok else _unfit_reason(frame, model)
        for panel, (column, label, unit, scale) in enumerate(panels):
            xaxis, yaxis = axis_ids(panel)
            value = float(pd.to_numeric(pd.Series([frame.at[model, column]]), errors="coerce").iloc[0]) * scale
            shown = value if math.isfinite(value) else None
            data.append(dict(
                type="bar", x=[label], y=[shown], name=model, legendgroup=model, showlegend=panel == 0,
                xaxis=xaxis, yaxis=yaxis, textposition="outside", cliponaxis=False,
                text=[_number(value)],
                marker=dict(color=color, line=dict(color=color, width=2),
                            pattern=dict(shape=UNFIT_PATTERN if not ok else "", fillmode="overlay", fgcolor="white",
                                         size=10, solidity=0.4)),
                hovertemplate=f"{model}<br>{label}: {_number(value)} {unit}{why}<extra></extra>",
                meta=dict(model=model, metric=column, fits=ok)))
    for panel, (column, label, unit, scale) in enumerate(panels):
        xaxis, yaxis = axis_ids(panel)
        layout[f"xaxis{xaxis[1:]}"].update(showticklabels=False, type="category")
        values = pd.to_numeric(frame[column], errors="coerce") * scale
        top = float(values.max()) if values.notna().any() else 1.0
        if column == "memory_per_device_bytes" and "memory_capacity_bytes" in frame:
            capacity = float(frame["memory_capacity_bytes"].max()) * scale
            top = max(top, capacity)
            shapes.append(dict(type="line", xref=f"{xaxis} domain", yref=yaxis, x0=0, x1=1, y0=capacity, y1=capacity,
                               line=dict(color=TEXT, width=3, dash="dash"), name="capacity"))
            layout["annotations"].append(dict(text=f"capacity {_number(capacity)} GB", xref=f"{xaxis} domain",
                                              yref=yaxis, x=1, y=capacity, xanchor="right", yanchor="bottom",
                                              showarrow=False, font=dict(size=13, color=TEXT), name="capacity"))
        layout[f"yaxis{yaxis[1:]}"].update(title=dict(text=unit), rangemode="tozero", range=[0, top * 1.18])
    if not fits.all():
        layout["annotations"].append(dict(text=UNFIT_NOTE, x=0, y=-0.08, xref="paper", yref="paper",
                                          xanchor="left", yanchor="top", showarrow=False,
                                          font=dict(size=13, color=WARNING), name="unfit-note"))
    layout.update(barmode="group", bargap=0.25, bargroupgap=0.08, shapes=shapes, margin=dict(b=130),
                  legend=dict(orientation="h", x=0, y=-0.14, xanchor="left", yanchor="top"))
    on = f" on {device}" if device else ""
    return house_figure(data, layout, title=title or f"Models side by side{on}: latency, throughput and memory")


def _unfit_reason(frame: pd.DataFrame, model: str) -> str:
    used = frame.at[model, "memory_per_device_bytes"] if "memory_per_device_bytes" in frame else float("nan")
    capacity = frame.at[model, "memory_capacity_bytes"] if "memory_capacity_bytes" in frame else float("nan")
    return (f"<br><b>does not fit in memory</b>: needs {_number(used / 1e9)} GB per device, "
            f"the device holds {_number(capacity / 1e9)} GB")
