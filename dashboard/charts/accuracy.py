"""Predicted against measured time (log-log), one point per measured kernel, attention call or decode step."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.theme import (BLACK, BLUE, BLUISH_GREEN, GREY, ORANGE, REDDISH_PURPLE, SKY_BLUE, VERMILLION,
                                    house_figure)
from engine import SCENARIO_KINDS   # described by batch and context, not m, n, k

# One colour per measurement kind (engine.calibration.measurements.ALL_KINDS): kernels built from m, n, k, then the
# scenario kinds measured on a GPU (one layer's attention, a whole decode step or prefill).
KIND_COLORS = {"gemm": BLUE, "swiglu": ORANGE, "rmsnorm": BLUISH_GREEN, "residual_add": REDDISH_PURPLE,
               "attention_prefill": SKY_BLUE, "attention_decode": VERMILLION, "decode_step": BLACK,
               "prefill_step": GREY}
DEVICE_SYMBOLS = ("circle", "diamond", "square", "triangle-up")


def _whole(value) -> str:
    """A shape number as written in the file (16, not 16.0); '?' where it is missing."""
    return "?" if pd.isna(value) else f"{float(value):g}"


def _shape(row) -> str:
    if row.kind in SCENARIO_KINDS:
        return f"{row.model} batch {_whole(row.batch)}, context {_whole(row.context)}"
    return f"m={_whole(row.m)} n={_whole(row.n)} k={_whole(row.k)}"


def accuracy_figure(tidy: pd.DataFrame, method: str) -> go.Figure:
    """Scatter of predicted vs measured seconds (shown in us) for `method`, coloured by op kind,
    one marker symbol per device, with the y = x line and +-25% lines.

    tidy: engine.calibration.measurements.predict() output (device, kind, model, m, n, k, batch, context, tokens, tp,
    measured_s, method, predicted_s, error). Kernel rows are described by m, n, k; attention and
    decode-step rows by batch and context (their m, n, k are NaN). A decode_step is a whole model step,
    not one kernel, hence "measured time".
    """
    rows = tidy[(tidy["method"] == method) & tidy["predicted_s"].notna()]
    rows = rows.assign(**{c: rows[c] if c in rows else np.nan for c in ("model", "batch", "context")})
    data = []
    for d_index, device in enumerate(dict.fromkeys(rows["device"])):
        for kind, color in KIND_COLORS.items():
            part = rows[(rows["device"] == device) & (rows["kind"] == kind)]
            if part.empty:
                continue
            hover = [f"{device} · {kind} {_shape(row)} (tp {_whole(row.tp)})<br>measured {row.measured_s * 1e6:.1f} us"
                     f" · predicted {row.predicted_s * 1e6:.1f} us ({row.error:+.0%})"
                     for row in part.itertuples(index=False)]
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
                  xaxis=dict(type="log", title=dict(text="Measured time (us)")),
                  yaxis=dict(type="log", title=dict(text=f"Predicted by {method} (us)")))
    return house_figure(data, layout, title=f"Predicted vs measured time: {method}")
