"""Ideal roofline vs realistic time per phase and device, the gap split by cause."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.charts.theme import BLUE, GREY, ORANGE, REDDISH_PURPLE, SKY_BLUE, VERMILLION, apply_theme

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
    return f"{ms / 1e3:.3g} s" if ms >= 1e3 else f"{ms:.3g} ms"


def ideal_vs_realistic_figure(kernels: pd.DataFrame) -> go.Figure:
    """Per phase (one panel each, own time axis) and device: the ideal roofline bar next to the
    realistic bar stacked as ideal + tile quantization + wave quantization + efficiency + overhead.

    kernels: a realistic estimate's kernel table with a `device` column.
    """
    totals = gap_totals(kernels)
    phases = list(dict.fromkeys(totals["phase"]))
    fig = make_subplots(rows=1, cols=len(phases), subplot_titles=phases, horizontal_spacing=0.08)
    for col, phase in enumerate(phases, start=1):
        rows = totals[totals["phase"] == phase]
        bars = [label for device in rows["device"] for label in (f"{device}<br>ideal", f"{device}<br>realistic")]
        for column, label, color in GAP_CAUSES:
            values = []
            for value, ideal in zip(rows[column], rows["ideal_time_s"]):
                values += [ideal * 1e3 if column == "ideal_time_s" else 0.0, value * 1e3]
            fig.add_trace(go.Bar(x=bars, y=values, name=label, legendgroup=label, showlegend=col == 1,
                                 marker=dict(color=color, line=dict(color="white", width=0.8)),
                                 hovertemplate=f"{label}: %{{y:.4g}} ms<extra></extra>"), row=1, col=col)
        realistic = rows[[c for c, _, _ in GAP_CAUSES]].sum(axis=1) * 1e3
        for device, total, ideal in zip(rows["device"], realistic, rows["ideal_time_s"] * 1e3):
            ratio = f" ({total / ideal:.2f}x)" if ideal else ""
            fig.add_annotation(x=f"{device}<br>realistic", y=total, text=_duration(total) + ratio, showarrow=False,
                               yanchor="bottom", row=1, col=col)
            fig.add_annotation(x=f"{device}<br>ideal", y=ideal, text=_duration(ideal), showarrow=False,
                               yanchor="bottom", row=1, col=col)
        fig.update_yaxes(range=[0, realistic.max() * 1.15 if len(realistic) else 1], row=1, col=col)
    fig.update_yaxes(title_text="Time per phase (ms)", row=1, col=1)
    fig.update_layout(barmode="stack", legend=dict(orientation="h", y=-0.18, x=0, traceorder="normal"))
    return apply_theme(fig, title="Ideal roofline vs realistic: where the gap comes from")
