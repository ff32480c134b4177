"""Predicted against measured kernel time (log-log), one point per measured kernel."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.theme import BLUE, BLUISH_GREEN, GREY, ORANGE, REDDISH_PURPLE, VERMILLION, house_figure

KIND_COLORS = {"gemm": BLUE, "swiglu": ORANGE, "rmsnorm": BLUISH_GREEN, "residual_add": REDDISH_PURPLE}
DEVICE_SYMBOLS = ("circle", "diamond", "square", "triangle-up")


def accuracy_figure(tidy: pd.DataFrame, method: str) -> go.Figure:
    """Scatter of predicted vs measured seconds (shown in us) for `method`, coloured by op kind,
    one marker symbol per device, with the y = x line and +-25% lines.

    tidy: engine.calibration.predict() output (device, kind, m, n, k, tokens, tp, measured_s,
    method, predicted_s, error).
    """
    rows = tidy[(tidy["method"] == method) & tidy["predicted_s"].notna()]
    data = []
    for d_index, device in enumerate(dict.fromkeys(rows["device"])):
        for kind, color in KIND_COLORS.items():
            part = rows[(rows["device"] == device) & (rows["kind"] == kind)]
            if part.empty:
                continue
            hover = [f"{device} · {kind} m={m} n={n} k={k} (tp {tp})<br>measured {a * 1e6:.1f} us · "
                     f"predicted {b * 1e6:.1f} us ({e:+.0%})"
                     for m, n, k, tp, a, b, e in part[["m", "n", "k", "tp", "measured_s", "predicted_s", "error"]]
                     .itertuples(index=False)]
            data.append(go.Scattergl(
                x=part["measured_s"] * 1e6, y=part["predicted_s"] * 1e6, mode="markers", name=f"{kind} · {device}",
                marker=dict(color=color, size=5, opacity=0.55, symbol=DEVICE_SYMBOLS[d_index % len(DEVICE_SYMBOLS)]),
                hovertext=hover, hoverinfo="text"))
    if len(rows):
        low = float(np.nanmin(rows[["measured_s", "predicted_s"]].to_numpy())) * 1e6 / 1.5
        high = float(np.nanmax(rows[["measured_s", "predicted_s"]].to_numpy())) * 1e6 * 1.5
        line = np.array([low, high])
        for factor, label, dash, color in ((1.0, "predicted = measured", "solid", GREY),
                                           (1.25, "+25%", "dot", VERMILLION), (0.75, "-25%", "dot", VERMILLION)):
            data.append(go.Scatter(x=line, y=line * factor, mode="lines", name=label, hoverinfo="skip",
                                   line=dict(color=color, dash=dash, width=1.5)))
    layout = dict(legend=dict(x=1.01, xanchor="left", y=1),
                  xaxis=dict(type="log", title=dict(text="Measured kernel time (us)")),
                  yaxis=dict(type="log", title=dict(text=f"Predicted by {method} (us)")))
    return house_figure(data, layout, title=f"Predicted vs measured: {method}")
