"""Sensitivity tornado: how much each hardware or workload field moves each metric.

Input: the frame of `engine.explore.hardware_sensitivity.sensitivity` — one row per (field, metric) with field,
label, unit, base_value, low_value, high_value (the field at -X% and +X%), metric, base, low, high
(the metric there, SI units), low_change, high_change (relative change of the metric), swing
and error.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.explore_fields import METRICS, Metric
from dashboard.charts.theme import BLUE, FIGURE_SIZE, GREY, VERMILLION, house_figure

LOW_COLOR, HIGH_COLOR = BLUE, VERMILLION
HEIGHT = FIGURE_SIZE[1]      # on screen as exported: three panels need more than plotly's default 450 px
TOP = 116                    # title and a two-line scenario subtitle
AXIS_BAND = 64               # px under each panel for its tick labels and axis title, clear of the next panel
LABEL_PX = 18                # px a field's tick label needs: a panel shows at most its height / LABEL_PX fields


def tornado_order(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The rows of one metric with at least one side evaluated, largest swing first."""
    rows = frame[frame["metric"] == metric]
    ok = np.isfinite(pd.to_numeric(rows["low_change"], errors="coerce")) \
        | np.isfinite(pd.to_numeric(rows["high_change"], errors="coerce"))
    return rows[ok].sort_values("swing", ascending=False, kind="stable", na_position="last")


def fields_that_fit(panels: int, bottom: int = 110) -> int:
    """How many field labels one of `panels` stacked panels shows legibly (LABEL_PX each, at least 3)."""
    plot = HEIGHT - TOP - bottom
    return max(3, int((plot - AXIS_BAND * (panels - 1)) / panels // LABEL_PX))


def _metric_info(metric: str) -> Metric:
    return METRICS.get(metric, Metric(metric.replace("_", " "), "", 1.0, "lower"))


def _rows_layout(count: int, spacing: float) -> dict:
    """xaxis/yaxis, xaxis2/yaxis2, ... stacked top to bottom, `spacing` (paper fraction) apart."""
    height = (1.0 - spacing * (count - 1)) / count
    layout = {}
    for panel in range(count):
        suffix = str(panel + 1) if panel else ""
        top = 1.0 - panel * (height + spacing)
        layout[f"xaxis{suffix}"] = dict(anchor=f"y{suffix}", domain=[0.0, 1.0])
        layout[f"yaxis{suffix}"] = dict(anchor=f"x{suffix}", domain=[max(top - height, 0.0), top])
    return layout


def tornado_figure(frame: pd.DataFrame, metrics: Optional[Sequence[str]] = None, change: Optional[float] = None,
                   title: Optional[str] = None) -> go.Figure:
    """One panel per metric (top to bottom): per field, a bar for the metric's relative change (%) when
    the field is lowered by `change` (blue) and raised by it (vermillion), fields sorted by swing with
    the largest on top. A side that could not be evaluated has no bar; the reasons (`error`) are named
    under the chart, and rows with neither side are left out.

    change: the relative step (0.2 = ±20%), for the legend; read from the frame when not given.
    """
    metrics = list(metrics) if metrics is not None else list(dict.fromkeys(frame["metric"]))
    if change is None and len(frame):
        base, high = float(frame["base_value"].iloc[0]), float(frame["high_value"].iloc[0])
        change = abs(high / base - 1) if base else None
    step = f"{change * 100:.0f}%" if change else "X%"
    layout = _rows_layout(max(len(metrics), 1), AXIS_BAND / (HEIGHT - TOP - 110))   # 110: the largest bottom margin
    data, annotations = [], []
    left_out, thinned = [], 0
    room = fields_that_fit(max(len(metrics), 1))
    for panel, metric in enumerate(metrics):
        info = _metric_info(metric)
        suffix = str(panel + 1) if panel else ""
        rows = tornado_order(frame, metric)
        thinned = max(thinned, len(rows) - room)
        rows = rows.head(room)                   # labels thinned to what the panel shows legibly: largest swings
        left_out += [f"{r.label}: {r.error}" for r in frame[frame["metric"] == metric].itertuples()
                     if str(getattr(r, "error", "") or "")]
        labels = rows["label"].astype(str).tolist()
        for side, color, width in (("low", LOW_COLOR, 0.8), ("high", HIGH_COLOR, 0.45)):
            sign = "−" if side == "low" else "+"
            hover = [f"<b>{r.label}</b> {sign}{step}: not evaluated" if not np.isfinite(c) else
                     f"<b>{r.label}</b> {sign}{step}: {r_value:.4g} {r.unit}<br>"
                     f"{info.label} {m * info.scale:.4g} {info.unit} ({c * 100:+.2f}%)<br>"
                     f"base: {r.base_value:.4g} {r.unit} -> {r.base * info.scale:.4g} {info.unit}"
                     for r, r_value, m, c in zip(rows.itertuples(), rows[f"{side}_value"], rows[side],
                                                 rows[f"{side}_change"])]
            data.append(dict(type="bar", orientation="h", x=(rows[f"{side}_change"] * 100).tolist(), y=labels,
                             xaxis=f"x{suffix}", yaxis=f"y{suffix}", width=width, marker=dict(color=color),
                             name=f"field {sign}{step}", legendgroup=side, showlegend=panel == 0,
                             hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
                             meta=dict(role=side, metric=metric)))
        layout[f"xaxis{suffix}"].update(title=dict(text=f"Change in {info.label} (%)"), zeroline=True,
                                        zerolinecolor=GREY, zerolinewidth=2)
        layout[f"yaxis{suffix}"].update(type="category", categoryorder="array", categoryarray=labels[::-1],
                                        title=dict(text=info.label), showgrid=False)
        if rows.empty:
            annotations.append(dict(x=0.5, y=0.5, xref=f"x{suffix} domain", yref=f"y{suffix} domain",
                                    showarrow=False, text="no usable fields", font=dict(size=14, color=GREY)))
    left_out = list(dict.fromkeys(left_out))
    notes = []
    if thinned > 0:
        notes.append(f"{thinned} field{'s' if thinned > 1 else ''} with smaller swings not drawn (each panel shows "
                     f"its {room} largest; all are in the table)")
    if left_out:
        notes.append("not evaluated: " + "; ".join(left_out[:4]) + (" …" if len(left_out) > 4 else ""))
    if notes:
        annotations.append(dict(x=0, y=0, xref="paper", yref="paper", xanchor="left", yanchor="top", yshift=-60,
                                showarrow=False, align="left", font=dict(size=12, color=GREY),
                                text="<br>".join(notes)))
        left_out = notes
    layout.update(barmode="overlay", annotations=annotations, hovermode="closest",
                  legend=dict(orientation="h", x=1, xanchor="right", y=1.01, yanchor="bottom"),
                  margin=dict(l=80, r=30, t=80, b=110 if left_out else 70), height=HEIGHT)
    names = ", ".join(_metric_info(m).label for m in metrics)
    return house_figure(data, layout, title or f"Sensitivity of {names} to ±{step} in each field")
