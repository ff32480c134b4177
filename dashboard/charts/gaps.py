"""Ideal roofline vs realistic time per phase and device, the gap split by cause."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.facets import axis_ids, panels_layout
from dashboard.charts.placement import CHAR_WIDTH, category_ticks
from dashboard.charts.theme import BLUE, GREY, ORANGE, REDDISH_PURPLE, SCREEN_WIDTH, SKY_BLUE, house_figure
from dashboard.units import duration

LABEL_FONT = 14
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


def _bar_label(total_ms: float, ideal_ms: float, slot_px: float) -> str:
    """'1.96 s<br>1.69x ideal', shortened to what the bar's slot holds ('1.69x'), or '' (the hover has it)."""
    ratio = total_ms / ideal_ms if ideal_ms else None
    for lines in ([_duration(total_ms), f"{ratio:.2f}x ideal"], [_duration(total_ms), f"{ratio:.2f}x"],
                  [f"{ratio:.2f}x"]):
        if ratio is None:
            lines = lines[:1]
        if max(map(len, lines)) * CHAR_WIDTH * LABEL_FONT <= slot_px:
            return "<br>".join(lines)
    return ""


def ideal_vs_realistic_figure(kernels: pd.DataFrame, method: str = "realistic") -> go.Figure:
    """Per phase (one panel each, own time axis) and device: the `method` bar stacked as ideal + tile
    quantization + wave quantization + efficiency + overhead, labelled with its time and its ratio to the
    ideal. One device: the ideal roofline bar stands beside it. Several: the ideal is each bar's bottom
    segment (a second bar per device would crowd the axis), the labels shortened to what each bar's slot
    holds and the device names wrapped, never rotated; the legend runs along the bottom.

    kernels: a realistic estimate's kernel table with a `device` column; `method`: the realistic method it
    came from (realistic or realistic-graph), named on the bars and in the title.
    """
    totals = gap_totals(kernels)
    phases = list(dict.fromkeys(totals["phase"]))
    beside = totals["device"].nunique() == 1
    layout = panels_layout(phases, spacing=0.08)
    panel_px = (SCREEN_WIDTH - 110) * (1 - 0.08 * (len(phases) - 1)) / max(len(phases), 1)
    data = []
    for panel, phase in enumerate(phases):
        xaxis, yaxis = axis_ids(panel)
        rows = totals[totals["phase"] == phase]
        devices = list(rows["device"])
        bars = [label for device in devices for label in (f"{device}<br>ideal", f"{device}<br>{method}")] \
            if beside else devices
        for column, label, color in GAP_CAUSES:
            values = []
            for value, ideal in zip(rows[column], rows["ideal_time_s"]):
                values += [ideal * 1e3 if column == "ideal_time_s" else 0.0, value * 1e3] if beside else [value * 1e3]
            data.append(dict(type="bar", x=bars, y=values, name=label, legendgroup=label, showlegend=panel == 0,
                             xaxis=xaxis, yaxis=yaxis, marker=dict(color=color, line=dict(color="white", width=0.8)),
                             hovertemplate=f"{label}: %{{y:.4g}} ms<extra>%{{x}}</extra>"))
        realistic = rows[[c for c, _, _ in GAP_CAUSES]].sum(axis=1) * 1e3
        slot = panel_px / len(bars)
        for device, total, ideal in zip(devices, realistic, rows["ideal_time_s"] * 1e3):
            ratio = f" ({total / ideal:.2f}x)" if ideal else ""
            labelled = ((f"{device}<br>{method}", total, _duration(total) + ratio),
                        (f"{device}<br>ideal", ideal, _duration(ideal))) if beside else \
                ((device, total, _bar_label(total, ideal, slot)),)
            for bar, height, text in labelled:
                layout["annotations"].append(dict(x=bar, y=height, text=text, showarrow=False, yanchor="bottom",
                                                  xref=xaxis, yref=yaxis, font=dict(size=LABEL_FONT), name="bar label"))
        layout[f"yaxis{yaxis[1:]}"]["range"] = [0, float(realistic.max()) * 1.2 if len(realistic) else 1.0]
        if not beside:
            layout[f"xaxis{xaxis[1:]}"].update(category_ticks(devices, panel_px))
    layout["yaxis"]["title"] = dict(text="Time per phase (ms)")
    layout.update(barmode="stack", margin=dict(b=130),
                  legend=dict(orientation="h", x=0, xanchor="left", y=0, yanchor="bottom", yref="container",
                              traceorder="normal"))
    return house_figure(data, layout, title=f"Ideal roofline vs {method}: where the gap comes from")
