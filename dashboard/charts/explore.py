"""Explore charts over an `engine.explore.grid.sweep_grid` frame: a metric along one field, over two fields
(heatmap); the Pareto fronts are in dashboard/charts/pareto.py, the inverse search in inverse_search.py.

The frame has the swept fields as columns (batch, memory_bandwidth, device, ...) and the engine's
metric columns in SI units (tpot_s, tokens_per_s, energy_per_token_j, ..., fits, error); the
charts show each metric in its display unit (METRICS) and every field with its unit.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.theme import BLACK, GREY, device_style, house_figure

from dashboard.charts.explore_fields import (
    CATEGORICAL, ERROR_COLOR, MAX_MARKED_CELLS, METRICS, SEQUENTIAL, UNFIT_COLOR, axis_layout,
    devices_without_values, display_values, field_label, field_title, field_unit_of, format_value, hover_field,
    left_out_note, point_status, series_colors,
)
from dashboard.charts.frames import wrap_words


def line_figure(frame: pd.DataFrame, x: str, metric: str, series: Optional[str] = None, *,
                base: Optional[float] = None, log_x: Optional[bool] = None, title: Optional[str] = None) -> go.Figure:
    """`metric` over the swept field `x`, one line per value of `series` (a device column or a second
    swept field; None: a single line). Points that do not fit in memory are hollow; points that cannot
    run leave a gap. `base`: the sidebar's value of `x`, marked by a dotted vertical line.
    """
    info = METRICS[metric]
    series_values = list(dict.fromkeys(frame[series])) if series else [None]
    colors = series_colors(len(series_values))
    categorical = x in CATEGORICAL
    data, any_unfit = [], False
    for index, value in enumerate(series_values):
        group = frame if value is None else frame[frame[series] == value]
        if not categorical:
            group = group.sort_values(x)
        ys = display_values(group, metric)
        status = point_status(group)
        ys = np.where((status == "") | (status == "does not fit in memory"), ys, np.nan)
        unfit = status == "does not fit in memory"
        any_unfit |= bool(unfit.any())
        if series in CATEGORICAL:
            style = device_style(index)
            symbol, dash = style["symbol"], style["dash"]
        else:
            symbol, dash = "circle", "solid"
        name = "" if value is None else (str(value) if series in CATEGORICAL else
                                         f"{field_label(series)} {format_value(value, field_unit_of(series))}")
        hover = (f"<b>{name}</b><br>" if name else "") + hover_field(x, "x") + \
            f"<br>{info.label} %{{y:.4g}} {info.unit}<br>%{{customdata}}<extra></extra>"
        data.append(dict(
            type="scatter", x=group[x].tolist(), y=ys, mode="lines+markers", name=name or info.label,
            showlegend=value is not None, line=dict(color=colors[index], width=3, dash=dash),
            marker=dict(size=9, color=colors[index], symbol=[f"{symbol}-open" if u else symbol for u in unfit],
                        line=dict(width=2, color=colors[index])),
            customdata=[s or "fits in memory" for s in status], hovertemplate=hover,
            meta=dict(role="line", series="" if value is None else str(value)),
        ))
    layout = dict(xaxis=axis_layout(x, frame[x], log_x), yaxis=dict(title=dict(text=info.title), rangemode="tozero"),
                  legend=dict(x=1.01, xanchor="left", y=1, title=dict(text=field_title(series) if series else "")),
                  hovermode="closest", shapes=[], annotations=[])
    if base is not None and not categorical:
        numbers = pd.to_numeric(frame[x], errors="coerce")
        if numbers.min() <= base <= numbers.max():
            layout["shapes"].append(dict(type="line", x0=base, x1=base, y0=0, y1=1, xref="x", yref="y domain",
                                         line=dict(color=GREY, width=2, dash="dot")))
            layout["annotations"].append(dict(
                x=np.log10(base) if layout["xaxis"]["type"] == "log" else base, y=1, xref="x", yref="y domain",
                yanchor="bottom", showarrow=False, text=f"sidebar: {format_value(base, field_unit_of(x))}",
                font=dict(size=13, color=GREY)))
    notes = ["hollow markers: does not fit in device memory" if any_unfit else "",
             left_out_note(devices_without_values(frame, metric), metric)]   # devices the metric would drop silently
    footnote = "<br>".join(wrap_words(note, 120) for note in notes if note)
    if footnote:
        layout["annotations"].append(dict(x=0, y=0, xref="paper", yref="paper", xanchor="left", yanchor="top",
                                          yshift=-58, showarrow=False, font=dict(size=13, color=GREY), align="left",
                                          text=footnote, name="footnote"))
        layout["margin"] = dict(b=82 + 18 * (footnote.count("<br>") + 1))
    return house_figure(data, layout, title or f"{info.label} over {field_label(x).lower()}")


# ---------------------------------------------------------------------------------------- heatmap
def heatmap_grid(frame: pd.DataFrame, x: str, y: str, column: str) -> tuple[list, list, np.ndarray]:
    """(x values, y values, matrix[y index, x index]) of `column`: numeric axes ascending, categories in
    order of appearance; cells without a point are NaN (object matrix for non-numeric columns)."""
    xs, x_index = _axis_values(frame[x])
    ys, y_index = _axis_values(frame[y])
    values = frame[column].to_numpy()
    numeric = values.dtype.kind in "iufb"
    matrix = np.full((len(ys), len(xs)), np.nan if numeric else None, dtype=float if numeric else object)
    matrix[y_index, x_index] = values
    return xs, ys, matrix


def _axis_values(column: pd.Series) -> tuple[list, np.ndarray]:
    if pd.api.types.is_numeric_dtype(column):
        values, index = np.unique(column.to_numpy(float), return_inverse=True)
        return values.tolist(), index.reshape(-1)
    codes, uniques = pd.factorize(column, sort=False)
    return list(uniques), codes


def heatmap_figure(frame: pd.DataFrame, x: str, y: str, metric: str, *, base: Optional[tuple] = None,
                   log_x: Optional[bool] = None, log_y: Optional[bool] = None,
                   title: Optional[str] = None) -> go.Figure:
    """`metric` over the swept fields `x` (columns) and `y` (rows) of one device, as one 2-D heatmap.

    Cells that do not fit in memory keep their value under a light wash; cells that cannot run are
    dark grey; the hover names both fields, the metric and the status, with units. `base`: the
    sidebar's (x, y) point, marked with a ring. Log axes where the values are geometric.
    """
    info = METRICS[metric]
    frame = frame.assign(_value=display_values(frame, metric), _status=point_status(frame))
    xs, ys, z = heatmap_grid(frame, x, y, "_value")
    status = heatmap_grid(frame, x, y, "_status")[2]
    status = np.where(pd.isna(status), "no point", status)
    errored = (status != "") & (status != "does not fit in memory")
    unfit = status == "does not fit in memory"
    z = np.where(errored, np.nan, z)
    hover = (hover_field(x, "x") + "<br>" + hover_field(y, "y") + f"<br><b>{info.label} %{{z:.4g}} {info.unit}</b>"
             + "<br>%{customdata}<extra></extra>")
    # Cividis runs dark (low) to yellow (high): reversed for higher-is-better metrics, so dark is always good
    data = [dict(type="heatmap", x=xs, y=ys, z=z, colorscale=SEQUENTIAL, reversescale=info.better != "lower",
                 colorbar=dict(title=dict(text=info.title, side="right")),
                 customdata=np.where(status == "", "fits in memory", status),
                 hovertemplate=hover, name=info.label, meta=dict(role="metric"))]
    legend_rows = []
    for mask, color, label, role in ((unfit, UNFIT_COLOR, "does not fit in memory", "unfit"),
                                     (errored, ERROR_COLOR, "cannot run (see table)", "error")):
        if mask.any():
            data.append(dict(type="heatmap", x=xs, y=ys, z=np.where(mask, 1.0, np.nan), showscale=False,
                             colorscale=[[0, color], [1, color]], hoverinfo="skip", name=label, meta=dict(role=role)))
            legend_rows.append(dict(type="scatter", x=[None], y=[None], mode="markers", name=label, showlegend=True,
                                    marker=dict(symbol="square-x" if role == "unfit" else "square", size=14,
                                                color=color, line=dict(color=GREY, width=1))))
    if unfit.any() and z.size <= MAX_MARKED_CELLS:
        rows, columns = np.nonzero(unfit)
        data.append(dict(type="scatter", x=[xs[c] for c in columns], y=[ys[r] for r in rows], mode="markers",
                         showlegend=False, hoverinfo="skip", name="does not fit in memory",
                         marker=dict(symbol="x-thin", size=12, line=dict(width=2, color=GREY)),
                         meta=dict(role="unfit-mark")))
    if base is not None and base[0] is not None and base[1] is not None:
        data.append(dict(type="scatter", x=[base[0]], y=[base[1]], mode="markers", name="sidebar's point",
                         marker=dict(symbol="circle-open", size=16, color=BLACK, line=dict(width=3)),
                         hovertemplate="sidebar's point<extra></extra>", meta=dict(role="base")))
    data += legend_rows
    x_axis, y_axis = axis_layout(x, xs, log_x), axis_layout(y, ys, log_y)
    for axis in (x_axis, y_axis):
        axis.update(showgrid=False, ticks="outside")
    layout = dict(xaxis=x_axis, yaxis=y_axis, hovermode="closest",
                  legend=dict(orientation="h", x=1, xanchor="right", y=1.01, yanchor="bottom"))
    note = left_out_note(devices_without_values(frame, metric), metric)
    if note:       # a device without the metric's values (no energy in the workbook) would be an empty map
        layout.update(margin=dict(b=100), annotations=[dict(
            x=0, y=0, xref="paper", yref="paper", xanchor="left", yanchor="top", yshift=-58, showarrow=False,
            font=dict(size=13, color=GREY), align="left", text=wrap_words(note, 120), name="footnote")])
    default_title = f"{info.label} over {field_label(x).lower()} × {field_label(y).lower()}"
    return house_figure(data, layout, title or default_title)
