"""Stacked bars faceted by phase, devices side by side: the layout kernel-time and bound charts share."""

from __future__ import annotations

from typing import Callable, Iterable, Optional

import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.facets import axis_ids, panels_layout
from dashboard.charts.frames import in_order
from dashboard.charts.placement import category_ticks
from dashboard.charts.theme import LEGEND_WIDTH, SCREEN_WIDTH, TEXT, house_figure, register_template

# What every segment shares, set once in the template rather than on each of the dozens of traces
SEGMENTS_TEMPLATE = register_template("llm_roofline_segments", bar=[dict(
    marker=dict(line=dict(color="white", width=0.8)), textposition="inside", insidetextanchor="middle",
    textangle=0, textfont=dict(size=13), hovertemplate="%{hovertext}<extra></extra>",
)])


def text_color(background: str) -> str:
    """White on dark fills, near-black on light ones (relative luminance, WCAG formula)."""
    if not (isinstance(background, str) and background.startswith("#") and len(background) == 7):
        return "white"
    channels = [int(background[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return TEXT if luminance > 0.3 else "white"


def phase_stacked_bars(segments: Iterable[tuple], *, color_of: Callable[[str], str], percent: bool,
                       unit_scale: float, y_title: str, title: str, stack_order: Optional[list] = None,
                       label: Callable[[str, float], str] = lambda key, share: str(key),
                       total_format: Callable[[float], str] = lambda v: f"{v:.3g}",
                       hover_value: Callable[[float], str] = lambda v: f"{v:.4g}") -> go.Figure:
    """One facet per phase; within it one bar per device, stacked by key, with the house look.

    segments: (phase, device, stack key, value) rows, value absolute in SI units; rows with the
    same phase, device and key add up. Bars show value x unit_scale, or percent of the
    (phase, device) total when `percent`. Segments of 4% of the bar or more are labelled
    `label(key, percent share)`. Each segment's trace carries meta {"role": "stack", "phase", "stack"}.
    """
    sums: dict[tuple, float] = {}
    totals: dict[tuple, float] = {}
    for phase, device, key, value in segments:  # a few dozen rows: plain dicts beat a pandas groupby
        value = 0.0 if pd.isna(value) else float(value)  # missing counts as 0, as in a pandas sum
        sums[phase, device, key] = sums.get((phase, device, key), 0.0) + value
        totals[phase, device] = totals.get((phase, device), 0.0) + value
    phases = in_order(phase for phase, _ in totals)
    devices = in_order(device for _, device in totals)
    keys = stack_order or in_order(key for _, _, key in sums)
    layout = panels_layout([str(p) for p in phases], 0.06 if percent else 0.09, shared_y=percent)
    data, in_legend = [], set()
    for panel, phase in enumerate(phases):
        x_axis, y_axis = axis_ids(panel)
        phase_totals = [totals.get((phase, device), 0.0) for device in devices]
        for key in keys:
            absolute = [sums.get((phase, device, key), 0.0) for device in devices]
            if not any(absolute):
                continue
            shares = [100.0 * a / d if d > 0 else 0.0 for a, d in zip(absolute, phase_totals)]
            color, name = color_of(key), str(key)
            data.append(dict(
                type="bar", x=devices, y=shares if percent else [a * unit_scale for a in absolute],
                xaxis=x_axis, yaxis=y_axis, name=name, legendgroup=name, showlegend=name not in in_legend,
                marker=dict(color=color), text=[label(key, s) if s >= 4 else "" for s in shares],
                textfont=dict(color=text_color(color)),
                hovertext=[f"<b>{key}</b> ({phase}, {device})<br>{hover_value(a)} · {s:.1f}% of phase"
                           for device, a, s in zip(devices, absolute, shares)],
                meta=dict(role="stack", phase=phase, stack=name),
            ))
            in_legend.add(name)  # one legend entry per stack key, in stacking order
        x_layout = layout[f"xaxis{x_axis[1:]}"]
        x_layout.update(category_ticks(devices, (SCREEN_WIDTH - 110 - LEGEND_WIDTH) * (x_layout["domain"][1]
                                                                                      - x_layout["domain"][0])))
        y_layout = layout[f"yaxis{y_axis[1:]}"]
        if percent:
            y_layout.update(range=[0, 100.5], ticksuffix="")
        else:
            top = max(phase_totals, default=0.0) * unit_scale  # room for the total label on top
            y_layout["range"] = [0, top * 1.12 if top > 0 else 1]
            layout["annotations"] += [
                dict(x=device, y=total * unit_scale, xref=x_axis, yref=y_axis, text=total_format(total),
                     showarrow=False, yanchor="bottom", yshift=2, font=dict(size=14, color=TEXT))
                for device, total in zip(devices, phase_totals)]
    layout["yaxis"]["title"] = dict(text=y_title)
    layout.update(barmode="stack", bargap=0.35, uniformtext=dict(minsize=11, mode="hide"),
                  legend=dict(traceorder="reversed", x=1.01, xanchor="left", y=1, yanchor="top"))
    return house_figure(data, layout, title, template=SEGMENTS_TEMPLATE)
