"""Stacked bars faceted by phase, devices side by side: the layout kernel-time and bound charts share."""

from __future__ import annotations

from typing import Callable, Optional

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.charts.frames import in_order
from dashboard.charts.theme import TEXT


def text_color(background: str) -> str:
    """White on dark fills, near-black on light ones (relative luminance, WCAG formula)."""
    if not (isinstance(background, str) and background.startswith("#") and len(background) == 7):
        return "white"
    channels = [int(background[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return TEXT if luminance > 0.3 else "white"


def phase_stacked_bars(long: pd.DataFrame, *, stack: str, value: str, color_of: Callable[[str], str],
                       percent: bool, unit_scale: float, y_title: str, stack_order: Optional[list] = None,
                       total_format: Callable[[float], str] = lambda v: f"{v:.3g}",
                       hover_value: Callable[[float], str] = lambda v: f"{v:.4g}") -> go.Figure:
    """One facet per phase; within it one bar per device, stacked by `stack`.

    long: columns phase, device, <stack>, <value> (absolute, in SI units). Bars show
    value x unit_scale, or percent of the (phase, device) total when `percent`. Each stack
    segment's trace carries meta {"role": "stack", "phase", "stack"}.
    """
    phases = in_order(long["phase"])
    devices = in_order(long["device"])
    keys = stack_order or in_order(long[stack])
    sums = long.groupby(["phase", "device", stack], sort=False)[value].sum()
    totals = long.groupby(["phase", "device"], sort=False)[value].sum()
    fig = make_subplots(rows=1, cols=len(phases), subplot_titles=[str(p) for p in phases],
                        shared_yaxes=percent, horizontal_spacing=0.06 if percent else 0.09)
    fig.update_annotations(font=dict(size=18, color=TEXT))  # the facet (phase) titles
    for col, phase in enumerate(phases, start=1):
        for key in keys:
            absolute = [float(sums.get((phase, device, key), 0.0)) for device in devices]
            if not any(absolute):
                continue
            denominators = [float(totals.get((phase, device), 0.0)) for device in devices]
            ys = [100.0 * a / d if d > 0 else 0.0 for a, d in zip(absolute, denominators)] if percent \
                else [a * unit_scale for a in absolute]
            shares = [100.0 * a / d if d > 0 else 0.0 for a, d in zip(absolute, denominators)]
            fig.add_trace(go.Bar(
                x=devices, y=ys, name=str(key), legendgroup=str(key), showlegend=False,
                marker=dict(color=color_of(key), line=dict(color="white", width=0.8)),
                text=[f"{key}" if s >= 4 else "" for s in shares], textposition="inside",
                insidetextanchor="middle", textfont=dict(color=text_color(color_of(key)), size=13), textangle=0,
                hovertext=[f"<b>{key}</b> ({phase}, {device})<br>{hover_value(a)} · {s:.1f}% of phase"
                           for device, a, s in zip(devices, absolute, shares)],
                hovertemplate="%{hovertext}<extra></extra>",
                meta=dict(role="stack", phase=phase, stack=str(key)),
            ), row=1, col=col)
        if not percent:
            for device in devices:
                total = float(totals.get((phase, device), 0.0))
                fig.add_annotation(x=device, y=total * unit_scale, text=total_format(total), showarrow=False,
                                   yanchor="bottom", yshift=2, font=dict(size=14, color=TEXT), row=1, col=col)
    seen = set()
    for trace in fig.data:  # one legend entry per stack key, in stacking order
        if trace.name not in seen:
            trace.showlegend = True
            seen.add(trace.name)
    fig.update_layout(barmode="stack", bargap=0.35, uniformtext=dict(minsize=11, mode="hide"),
                      legend=dict(traceorder="reversed", x=1.01, xanchor="left", y=1, yanchor="top"))
    fig.update_yaxes(title_text=y_title, row=1, col=1)
    if percent:
        fig.update_yaxes(range=[0, 100.5], ticksuffix="")
    else:
        for col in range(1, len(phases) + 1):  # room for the total label on top
            top = max((float(totals.get((phases[col - 1], d), 0.0)) for d in devices), default=0.0) * unit_scale
            fig.update_yaxes(range=[0, top * 1.12 if top > 0 else 1], row=1, col=col)
    return fig
