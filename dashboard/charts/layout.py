"""Tensor-parallel sweep: latency and throughput per device against the number of devices."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.facets import axis_ids, panels_layout
from dashboard.charts.frames import in_order, wrap_words
from dashboard.charts.theme import WARNING, device_style, house_figure

FOOTNOTE_SHIFT = 66
PANELS = (("tpot_s", "TPOT (ms)", 1e3), ("tokens_per_s_per_device", "Output tokens/s per device", 1.0))


def layout_sweep_figure(sweep: pd.DataFrame, field: str = "tp") -> go.Figure:
    """Two panels against `field` (tp by default): TPOT and output tokens/s per device, one line per
    device; layouts that do not fit memory are drawn as hollow red-ringed markers and layouts the
    model or device cannot take are left out (their reason is in the sweep's `error` column).

    sweep: engine.explore.layouts.layout_sweep() rows (device, tp, pp, dp, ep, tpot_s,
    tokens_per_s_per_device, fits, error, ...), several devices stacked.
    """
    valid = sweep[sweep["error"].fillna("") == ""] if "error" in sweep else sweep
    layout = panels_layout([label for _, label, _ in PANELS], spacing=0.1)
    data = []
    for index, device in enumerate(in_order(sweep["device"])):
        rows = valid[valid["device"] == device].sort_values(field)
        style = device_style(index)
        for panel, (column, label, scale) in enumerate(PANELS):
            xaxis, yaxis = axis_ids(panel)
            fits = rows["fits"].astype(bool).tolist()
            messages = rows["message"].fillna("").tolist() if "message" in rows else [""] * len(rows)
            why = ["" if ok else f"<br><b>does not fit in memory</b>: {wrap_words(m or 'no reason given')}"
                   for ok, m in zip(fits, messages)]
            data.append(dict(
                type="scatter", mode="lines+markers", x=rows[field].tolist(), y=(rows[column] * scale).tolist(),
                name=device, legendgroup=device, showlegend=panel == 0, xaxis=xaxis, yaxis=yaxis,
                line=dict(color=style["color"], dash=style["dash"], width=3),
                marker=dict(symbol=[style["symbol"] if ok else style["symbol"] + "-open" for ok in fits], size=11,
                            color=style["color"], line=dict(color=[style["color"] if ok else WARNING for ok in fits],
                                                            width=2)),
                customdata=why,
                hovertemplate=f"{device}, {field}=%{{x}}: %{{y:.4g}} {label}%{{customdata}}<extra></extra>"))
    for panel, (_, label, _) in enumerate(PANELS):
        xaxis, yaxis = axis_ids(panel)
        layout[f"xaxis{xaxis[1:]}"].update(type="log", dtick=0.30102999566, title=dict(text=f"{field.upper()} degree (devices)"))
        layout[f"yaxis{yaxis[1:]}"].update(title=dict(text=label), rangemode="tozero")
    # the footnote in pixels under the axis title (tick labels and title take about 55 px), not in paper units
    layout["annotations"].append(dict(text="hollow marker: does not fit in memory (hover for why)", x=0, y=0,
                                      yshift=-FOOTNOTE_SHIFT, xref="paper", yref="paper", yanchor="top",
                                      showarrow=False, xanchor="left", font=dict(size=13), name="footnote"))
    layout["margin"] = dict(b=FOOTNOTE_SHIFT + 30)
    return house_figure(data, layout, title=f"Sweep over {field.upper()}: latency vs throughput per device")
