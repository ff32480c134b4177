"""Serving charts: throughput per device against speed per user, and latencies, over the concurrency."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.facets import axis_ids, panels_layout
from dashboard.charts.frames import in_order
from dashboard.charts.theme import INK, device_style, house_figure

LATENCY_PANELS = (("TTFT (ms)", (("ttft_s", "mean", "solid"), ("ttft_p90_s", "p90", "dot"))),
                  ("TPOT (ms)", (("tpot_s", "mean", "solid"), ("tpot_p90_s", "p90", "dot"))))


def _valid(curve: pd.DataFrame) -> pd.DataFrame:
    return curve[curve["error"].fillna("") == ""] if "error" in curve else curve


def serving_curve_figure(curve: pd.DataFrame, concurrency: int | None = None) -> go.Figure:
    """Output tokens/s per device (y) against output tokens/s per user (x), one line per device through
    its concurrencies (each point labelled with its concurrency); the point at `concurrency` is ringed.

    curve: engine.serving.serving_curve() rows (device, concurrency, tokens_per_s_per_device,
    tokens_per_s_per_user, ttft_s, tpot_s, error), several devices stacked. Rows with an error are left out.
    """
    valid = _valid(curve)
    data = []
    for index, device in enumerate(in_order(curve["device"])):
        rows = valid[valid["device"] == device].sort_values("concurrency")
        style = device_style(index)
        data.append(dict(
            type="scatter", mode="lines+markers+text", name=device, x=rows["tokens_per_s_per_user"].tolist(),
            y=rows["tokens_per_s_per_device"].tolist(), text=[str(c) for c in rows["concurrency"]],
            textposition="top right", textfont=dict(size=12, color=style["color"]),
            line=dict(color=style["color"], dash=style["dash"], width=3),
            marker=dict(symbol=style["symbol"], size=10, color=style["color"]),
            customdata=list(zip(rows["concurrency"], rows["ttft_s"] * 1e3, rows["tpot_s"] * 1e3)),
            hovertemplate=(f"{device}, %{{customdata[0]}} clients<br>%{{y:.4g}} tokens/s per device<br>"
                           "%{x:.4g} tokens/s per user<br>TTFT %{customdata[1]:.4g} ms, TPOT %{customdata[2]:.4g} ms"
                           "<extra></extra>")))
        chosen = rows[rows["concurrency"] == concurrency] if concurrency is not None else rows.iloc[:0]
        if not chosen.empty:
            data.append(dict(type="scatter", mode="markers", x=chosen["tokens_per_s_per_user"].tolist(),
                             y=chosen["tokens_per_s_per_device"].tolist(), showlegend=False, hoverinfo="skip",
                             marker=dict(size=22, color="rgba(0,0,0,0)", line=dict(color=INK, width=2.5))))
    note = "point labels: concurrency (clients)" + (f"; ringed: {concurrency} clients" if concurrency is not None else "")
    layout = dict(xaxis=dict(title=dict(text="Output tokens/s per user (1 / TPOT)"), rangemode="tozero"),
                  yaxis=dict(title=dict(text="Output tokens/s per device"), rangemode="tozero"),
                  legend=dict(x=1.0, xanchor="right", y=1.0, yanchor="top"),
                  title=dict(text="Serving: throughput per device against speed per user",
                             subtitle=dict(text=note, font=dict(size=15))),
                  margin=dict(t=100))
    return house_figure(data, layout)


def serving_latency_figure(curve: pd.DataFrame) -> go.Figure:
    """TTFT and TPOT (mean solid, p90 dotted) against the concurrency, one colour per device."""
    valid = _valid(curve)
    layout = panels_layout([title for title, _ in LATENCY_PANELS], spacing=0.12)
    data = []
    for index, device in enumerate(in_order(curve["device"])):
        rows = valid[valid["device"] == device].sort_values("concurrency")
        color = device_style(index)["color"]
        for panel, (title, series) in enumerate(LATENCY_PANELS):
            xaxis, yaxis = axis_ids(panel)
            for column, label, dash in series:
                data.append(dict(type="scatter", mode="lines+markers", x=rows["concurrency"].tolist(),
                                 y=(rows[column] * 1e3).tolist(), name=f"{device} {label}", legendgroup=device,
                                 showlegend=panel == 0, xaxis=xaxis, yaxis=yaxis,
                                 line=dict(color=color, dash=dash, width=3), marker=dict(color=color, size=8),
                                 hovertemplate=f"{device}, %{{x}} clients: {label} %{{y:.4g}} ms<extra></extra>"))
    for panel, (title, _) in enumerate(LATENCY_PANELS):
        xaxis, yaxis = axis_ids(panel)
        layout[f"xaxis{xaxis[1:]}"].update(type="log", dtick=0.30102999566, title=dict(text="Concurrency (clients)"))
        layout[f"yaxis{yaxis[1:]}"].update(title=dict(text=title), rangemode="tozero")
    layout["legend"] = dict(orientation="h", x=0, y=-0.2, xanchor="left", yanchor="top")
    layout["margin"] = dict(b=140)
    return house_figure(data, layout, title="Serving latencies over the concurrency")


HEADLINE_COLUMNS = {"device": "device", "ttft_s": "TTFT mean (ms)", "ttft_p90_s": "TTFT p90 (ms)",
                    "tpot_s": "TPOT mean (ms)", "e2e_s": "request latency (s)",
                    "tokens_per_s_per_device": "tokens/s per device", "tokens_per_s_per_user": "tokens/s per user"}


def headline_table(curve: pd.DataFrame, concurrency: int) -> pd.DataFrame:
    """Each device's metrics at `concurrency` (curve rows as in serving_curve_figure), latencies in ms as the
    page's headline shows them, rounded as its metrics; a device whose point cannot run keeps its row with the
    reason (column "why it cannot run", present only then)."""
    rows = curve[curve["concurrency"] == concurrency]
    table = rows[list(HEADLINE_COLUMNS)].copy()
    for column, digits in (("ttft_s", 1), ("ttft_p90_s", 1), ("tpot_s", 2)):
        table[column] = (table[column] * 1e3).round(digits)
    table["e2e_s"] = table["e2e_s"].round(2)
    table["tokens_per_s_per_device"] = table["tokens_per_s_per_device"].round(0)
    table["tokens_per_s_per_user"] = table["tokens_per_s_per_user"].round(1)
    if "error" in rows and (rows["error"].fillna("") != "").any():
        table["why it cannot run"] = rows["error"].fillna("").to_numpy()
    return table.rename(columns=HEADLINE_COLUMNS).reset_index(drop=True)
