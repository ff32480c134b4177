"""Does it fit? Weights, KV cache and activations against each device's memory capacity."""

from __future__ import annotations

from typing import Optional

import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.frames import in_order, with_device, wrap_words
from dashboard.charts.placement import CHAR_WIDTH, category_ticks
from dashboard.charts.theme import BLUE, BLUISH_GREEN, GREY, ORANGE, SCREEN_WIDTH, TEXT, WARNING, house_figure

GB = 1e9
PARTS = (("weights_bytes", "weights", BLUE), ("kv_cache_bytes", "KV cache", ORANGE),
         ("activation_bytes", "activations", BLUISH_GREEN), ("workspace_bytes", "workspace (runtime headroom)", GREY))
FITS_TEXT, NO_FIT_TEXT = "fits", "does not fit"
PLOT_WIDTH = SCREEN_WIDTH - 110        # the legend sits under the plot, so the bars have the figure's width
LABEL_FONT = 14


def memory_fit_figure(memory: pd.DataFrame, title: Optional[str] = None) -> go.Figure:
    """Per device a stacked bar of weights / KV cache / activations (GB) against its capacity.

    memory: one row per device with columns device, weights_bytes, kv_cache_bytes,
    activation_bytes, capacity_bytes and optionally fits and max_batch (as in
    `Estimate.memory.to_dict()` plus `device`). The capacity is a black line across the bar;
    when the total exceeds it the line turns red and the bar is labelled "does not fit".
    """
    frame = with_device(memory).drop_duplicates(subset=["device"], keep="last")
    devices = in_order(frame["device"])
    frame = frame.set_index("device").loc[devices]
    parts = [part for part in PARTS if part[0] in frame]          # workspace only when the engine reports it
    total = sum(frame[column] for column, _, _ in parts)
    fits = frame["fits"].astype(bool) if "fits" in frame else total <= frame["capacity_bytes"]
    data = [dict(type="bar", x=devices, y=frame[column] / GB, name=label,
                 marker=dict(color=color, line=dict(color="white", width=1)),
                 hovertemplate=f"{label}: %{{y:.3g}} GB<extra>%{{x}}</extra>", meta=dict(role="part", part=column))
            for column, label, color in parts]
    # a legend entry for the capacity line (shapes have none)
    data.append(dict(type="scatter", x=[None], y=[None], mode="lines", name="capacity",
                     line=dict(color=TEXT, width=4), hoverinfo="skip", meta=dict(role="legend")))
    shapes, annotations = [], []
    # each label is wrapped to its bar's slot, so the labels of neighbouring bars never meet
    chars = max(int(PLOT_WIDTH / max(len(devices), 1) / (CHAR_WIDTH * LABEL_FONT)), 8)
    for position, device in enumerate(devices):
        capacity, used, ok = frame.at[device, "capacity_bytes"] / GB, total[device] / GB, bool(fits[device])
        shapes.append(dict(type="line", x0=position - 0.42, x1=position + 0.42, y0=capacity, y1=capacity,
                           xref="x", yref="y", line=dict(color=TEXT if ok else WARNING, width=4), name="capacity"))
        text = (f"{FITS_TEXT}: {used:.3g} of {capacity:.3g} GB ({100 * used / capacity:.0f}%)" if ok
                else f"<b>{NO_FIT_TEXT}</b>: {used:.3g} GB > {capacity:.3g} GB")
        if "max_batch" in frame and pd.notna(frame.at[device, "max_batch"]):
            text += f"<br>largest batch that fits: {int(frame.at[device, 'max_batch'])}"
        kept = text.replace(NO_FIT_TEXT, NO_FIT_TEXT.replace(" ", "\0"))     # "does not fit" stays on one line
        text = "<br>".join(wrap_words(line, chars) for line in kept.split("<br>")).replace("\0", " ")
        annotations.append(dict(x=device, y=max(used, capacity), yanchor="bottom", yshift=6, showarrow=False,
                                text=text, font=dict(size=LABEL_FONT, color=TEXT if ok else WARNING),
                                name="fit" if ok else "warning"))
    top = float(max(total.max(), frame["capacity_bytes"].max())) / GB
    return house_figure(data, dict(
        barmode="stack", bargap=0.4, margin=dict(b=110),
        legend=dict(traceorder="normal", orientation="h", x=0, xanchor="left", y=0, yanchor="bottom", yref="container"),
        xaxis=category_ticks(devices, PLOT_WIDTH),
        yaxis=dict(title=dict(text="Memory (GB)"), range=[0, top * 1.3], rangemode="tozero"),
        shapes=shapes, annotations=annotations,
    ), title or "Memory: weights, KV cache and activations vs capacity")
