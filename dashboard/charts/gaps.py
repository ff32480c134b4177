"""Ideal roofline vs realistic time per phase and device, the gap split by cause."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.facets import axis_ids, panels_layout
from dashboard.charts.theme import BLUE, GREY, ORANGE, REDDISH_PURPLE, SKY_BLUE, house_figure
from dashboard.units import duration

GAP_CAUSES = (  # column, legend label, colour
    ("ideal_time_s", "ideal roofline", BLUE),
    ("gap_tile_quantization_s", "tile quantization", ORANGE),
    ("gap_wave_quantization_s", "wave quantization", REDDISH_PURPLE),
    ("gap_efficiency_s", "achievable fraction of peak", SKY_BLUE),
    ("gap_overhead_s", "launch overhead and latency", GREY),
)


def gap_totals(kernels: pd.DataFrame) -> pd.DataFrame:
    """Per device and phase: each cause summed over occurrences (count x per-occurrence seconds)."""
    columns = [column for column, _, _ in GAP_CAUSES]
    weighted = kernels[columns].mul(kernels["count"], axis=0)
    weighted[["device", "phase"]] = kernels[["device", "phase"]]
    return weighted.groupby(["device", "phase"], sort=False)[columns].sum().reset_index()


def _duration(ms: float) -> str:
    return duration(ms / 1e3)


def ideal_vs_realistic_figure(kernels: pd.DataFrame, method: str = "realistic") -> go.Figure:
    """Per phase (one panel each, own time axis) and device: the ideal roofline bar next to the
    realistic bar stacked as ideal + tile quantization + wave quantization + efficiency + overhead.

    kernels: a realistic estimate's kernel table with a `device` column; `method`: the realistic method it
    came from (realistic or realistic-graph), named on the bars and in the title.
    """
    totals = gap_totals(kernels)
    phases = list(dict.fromkeys(totals["phase"]))
    layout = panels_layout(phases, spacing=0.08)
    data = []
    for panel, phase in enumerate(phases):
        xaxis, yaxis = axis_ids(panel)
        rows = totals[totals["phase"] == phase]
        bars = [label for device in rows["device"] for label in (f"{device}<br>ideal", f"{device}<br>{method}")]
        for column, label, color in GAP_CAUSES:
            values = []
            for value, ideal in zip(rows[column], rows["ideal_time_s"]):
                values += [ideal * 1e3 if column == "ideal_time_s" else 0.0, value * 1e3]
            data.append(dict(type="bar", x=bars, y=values, name=label, legendgroup=label, showlegend=panel == 0,
                             xaxis=xaxis, yaxis=yaxis, marker=dict(color=color, line=dict(color="white", width=0.8)),
                             hovertemplate=f"{label}: %{{y:.4g}} ms<extra></extra>"))
        realistic = rows[[c for c, _, _ in GAP_CAUSES]].sum(axis=1) * 1e3
        for device, total, ideal in zip(rows["device"], realistic, rows["ideal_time_s"] * 1e3):
            ratio = f" ({total / ideal:.2f}x)" if ideal else ""
            for bar, height, text in ((f"{device}<br>{method}", total, _duration(total) + ratio),
                                      (f"{device}<br>ideal", ideal, _duration(ideal))):
                layout["annotations"].append(dict(x=bar, y=height, text=text, showarrow=False, yanchor="bottom",
                                                  xref=xaxis, yref=yaxis))
        layout[f"yaxis{yaxis[1:]}"]["range"] = [0, float(realistic.max()) * 1.15 if len(realistic) else 1.0]
    layout["yaxis"]["title"] = dict(text="Time per phase (ms)")
    layout.update(barmode="stack", legend=dict(orientation="h", y=-0.18, x=0, traceorder="normal"))
    return house_figure(data, layout, title=f"Ideal roofline vs {method}: where the gap comes from")
