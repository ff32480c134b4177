"""The inverse design's check: the metric at every value the search tried, the target and the answer."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.theme import BLACK, GREY, SERIES_COLORS, house_figure
from dashboard.charts.explore_fields import (
    METRICS, display_values, field_label, field_unit_of, is_geometric,
)


def inverse_search_figure(tried: pd.DataFrame, field: str, metric: str, target: float, value: Optional[float],
                          base_value: Optional[float] = None, unit: Optional[str] = None,
                          title: Optional[str] = None) -> go.Figure:
    """The inverse design's check: the metric at every value the search evaluated (`tried`: value,
    <metric>, meets), the target as a dashed line, the answer as a star and the sidebar's value as a
    dotted line. Points that meet the target are filled, the others hollow."""
    info = METRICS[metric]
    unit = unit if unit is not None else field_unit_of(field)
    frame = tried.sort_values("value")
    ys = display_values(frame, metric)
    meets = frame["meets"].astype(bool).to_numpy() if "meets" in frame else np.zeros(len(frame), bool)
    axis_title = f"{field_label(field)} ({unit})" if unit else field_label(field)
    hover = (f"{field_label(field)} %{{x:.6g}} {unit}<br>{info.label} %{{y:.4g}} {info.unit}"
             "<extra>%{fullData.name}</extra>")
    data = [dict(type="scatter", x=frame["value"].tolist(), y=ys, mode="lines+markers", name="evaluated",
                 line=dict(color=SERIES_COLORS[0], width=2),
                 marker=dict(size=8, color=SERIES_COLORS[0], symbol=["circle" if m else "circle-open" for m in meets]),
                 hovertemplate=hover, meta=dict(role="tried"))]
    shapes = [dict(type="line", x0=0, x1=1, xref="x domain", y0=target * info.scale, y1=target * info.scale, yref="y",
                   line=dict(color=BLACK, width=2, dash="dash"))]
    annotations = [dict(x=1, xref="x domain", xanchor="right", y=target * info.scale, yref="y", yanchor="bottom",
                        showarrow=False, text=f"target {'≤' if info.better == 'lower' else '≥'} "
                                               f"{target * info.scale:.4g} {info.unit}", font=dict(size=14))]
    if value is not None and (frame["value"] == value).any():
        at = float(ys[np.flatnonzero(frame["value"].to_numpy() == value)[0]])
        data.append(dict(type="scatter", x=[value], y=[at], mode="markers", name="answer",
                         marker=dict(symbol="star", size=20, color=SERIES_COLORS[1], line=dict(color="white", width=1)),
                         hovertemplate=hover, meta=dict(role="answer")))
    values = pd.to_numeric(frame["value"], errors="coerce")
    log = is_geometric(values)
    if base_value is not None and np.isfinite(base_value) and len(values):
        shapes.append(dict(type="line", x0=base_value, x1=base_value, y0=0, y1=1, xref="x", yref="y domain",
                           line=dict(color=GREY, width=2, dash="dot")))
        annotations.append(dict(x=np.log10(base_value) if log else base_value, xref="x", y=1, yref="y domain",
                                yanchor="bottom", showarrow=False, text="sidebar's device",
                                font=dict(size=13, color=GREY)))
    layout = dict(xaxis=dict(title=dict(text=axis_title), type="log" if log else "linear"),
                  yaxis=dict(title=dict(text=info.title), type="log" if is_geometric(ys[ys > 0]) else "linear"),
                  shapes=shapes, annotations=annotations, legend=dict(x=1.01, xanchor="left", y=1),
                  hovermode="closest")
    return house_figure(data, layout, title or f"{info.label} at every {field_label(field).lower()} the search tried")
