"""Sweeps: where a phase crosses from memory- to compute-bound as the batch (or length) grows."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.facets import panels_layout
from dashboard.charts.frames import in_order, records, with_device, wrap_words
from dashboard.charts.theme import GREY, device_style, house_figure

AXIS_TITLES = {"batch": "Batch (sequences)", "input_length": "Input length (tokens)",
               "context_length": "Context (tokens)", "output_length": "Output length (tokens)"}
RIGHT_PANELS = {"tokens_per_s": ("Throughput (tokens/s)", 1.0), "time_s": ("Time per step (ms)", 1e3)}


def _axis_kind(values: pd.Series) -> dict:
    """Log axis with one tick per decade when the values span two decades or more, else linear."""
    values = pd.to_numeric(values, errors="coerce")
    values = values[values > 0]
    if len(values) and values.max() / values.min() >= 100:
        return dict(type="log", dtick=1)
    return dict(type="linear", rangemode="tozero")


def ridge_crossings(sweep: pd.DataFrame, x: str = "batch") -> pd.DataFrame:
    """Per device: the `x` at which the phase intensity reaches the ridge point.

    Interpolated linearly in log-log space between the two sweep points that bracket the
    ridge. `crossing` is NaN when the sweep never reaches it; `status` says which case holds:
    "crosses", "compute-bound throughout" or "memory-bound throughout".
    """
    rows = []
    for device, group in with_device(sweep).groupby("device", sort=False):
        group = group.sort_values(x)
        xs, intensity = group[x].to_numpy(float), group["intensity"].to_numpy(float)
        ridge = float(group["ridge_point"].iloc[0])
        above = np.flatnonzero(intensity >= ridge)
        if len(above) == 0:
            rows.append((device, np.nan, ridge, "memory-bound throughout"))
        elif above[0] == 0:
            rows.append((device, xs[0], ridge, "compute-bound throughout"))
        else:
            i = above[0]
            t = (np.log(ridge) - np.log(intensity[i - 1])) / (np.log(intensity[i]) - np.log(intensity[i - 1]))
            rows.append((device, float(np.exp(np.log(xs[i - 1]) + t * (np.log(xs[i]) - np.log(xs[i - 1])))),
                         ridge, "crosses"))
    return pd.DataFrame(rows, columns=["device", "crossing", "ridge_point", "status"])


def _fits(group: pd.DataFrame) -> list[bool]:
    """Whether each point fits in device memory (True where the sweep does not say)."""
    if "fits" not in group:
        return [True] * len(group)
    return [True if pd.isna(ok) else bool(ok) for ok in group["fits"]]


def _point_hover(group: pd.DataFrame, device: str, x: str, x_name: str, fits: list[bool]) -> list[str]:
    """Per point: the x value, intensity, step time, compute-bound share and, when it does not fit, why."""
    share = group["compute_bound_share"] if "compute_bound_share" in group else pd.Series(np.nan, index=group.index)
    return [f"<b>{device}</b><br>{x_name} {v:g}<br>{i:.3g} FLOP/byte<br>{t * 1e3:.4g} ms per step"
            + ("" if pd.isna(s) else f"<br>{100 * s:.0f}% of time compute-bound")
            + ("" if ok else f"<br><b>does not fit in memory</b>: {wrap_words(why)}")
            for v, i, t, s, ok, why in zip(group[x], group["intensity"], group["time_s"], share, fits,
                                           _memory_messages(group))]


def _memory_messages(group: pd.DataFrame) -> list[str]:
    if "memory_message" not in group:
        return ["the sweep gives no reason"] * len(group)
    return [m if isinstance(m, str) and m else "the sweep gives no reason" for m in group["memory_message"]]


def _x_name(frame: pd.DataFrame, x: str) -> str:
    """What the x column measures: `field` names it when x is the generic `value` column."""
    if x == "value" and "field" in frame and len(frame):
        return str(frame["field"].iloc[0])
    return x


def sweep_figure(sweep: pd.DataFrame, x: str = "batch", right: str = "tokens_per_s",
                 phase: Optional[str] = None, title: Optional[str] = None) -> go.Figure:
    """Two panels over a sweep of `x` (batch by default), one line per device.

    Left: phase arithmetic intensity (FLOP/byte, = flops / bytes) with each device's ridge
    point as a horizontal dashed line; where the intensity crosses it is marked (star and
    dotted line on both panels). Right: tokens/s (right="tokens_per_s") or time per step in
    ms (right="time_s").

    sweep columns: device, phase, <x> (batch, input_length, ...; or x="value" with a `field`
    column naming what `value` is, as `engine.explore.sweeps.sweep` returns), time_s (s per step), flops,
    bytes (per step), intensity (FLOP/byte; computed from flops/bytes when missing),
    ridge_point (FLOP/byte, device's matrix peak / HBM bandwidth), compute_bound_share (0..1),
    tokens_per_s; optional fits (bool) and memory_message: points that do not fit in memory are drawn
    hollow with the message on hover. One row per device and x value of a single phase (`phase` picks one when
    several are present; default decode).
    """
    if right not in RIGHT_PANELS:
        raise ValueError(f"right must be one of {tuple(RIGHT_PANELS)}, got {right!r}")
    frame = with_device(sweep)
    if x not in frame and "value" in frame:
        x = "value"
    if x not in frame:
        raise ValueError(f"the sweep has no {x!r} column (columns: {', '.join(map(str, frame.columns))})")
    x_name = _x_name(frame, x)
    if "phase" in frame:
        phases = in_order(frame["phase"])
        chosen = phase or ("decode" if "decode" in phases else phases[0])
        frame = frame[frame["phase"] == chosen]
    else:
        chosen = phase or ""
    if "intensity" not in frame:
        frame = frame.assign(intensity=frame["flops"] / frame["bytes"])
    crossings = {row["device"]: row for row in records(ridge_crossings(frame, x))}
    right_title, scale = RIGHT_PANELS[right]
    layout = panels_layout(["Arithmetic intensity vs ridge point", right_title.split(" (")[0]], 0.12)
    data, shapes, annotations = [], [], layout["annotations"]
    x_axis = _axis_kind(frame[x])
    y_axis = _axis_kind(pd.concat([frame["intensity"], frame["ridge_point"]]))
    # annotations on a log axis are placed in log10 units (shapes and traces are not)
    ax = (lambda v: float(np.log10(v))) if x_axis["type"] == "log" else float
    ay = (lambda v: float(np.log10(v))) if y_axis["type"] == "log" else float
    xs_all = frame[x].to_numpy(float)
    x_lo, x_hi = float(xs_all.min()), float(xs_all.max())
    any_unfit = False
    for index, (device, group) in enumerate(frame.groupby("device", sort=False)):
        style = device_style(index)
        group = group.sort_values(x)
        fits = _fits(group)
        hover = _point_hover(group, device, x, x_name, fits)
        any_unfit |= not all(fits)
        # later devices drawn thinner, so identical curves (intensity is a workload property) stay visible
        line = dict(color=style["color"], width=max(4.5 - 1.5 * index, 1.5))
        marker = dict(symbol=[style["symbol"] if ok else style["symbol"] + "-open" for ok in fits],
                      size=max(12 - 3 * index, 6), color=style["color"], line=dict(color=style["color"], width=2))
        ridge = float(group["ridge_point"].iloc[0])
        data += [
            dict(type="scatter", x=group[x], y=group["intensity"], mode="lines+markers", name=device,
                 legendgroup=device, line=line, marker=marker, hovertext=hover,
                 hovertemplate="%{hovertext}<extra></extra>", meta=dict(role="intensity", device=device)),
            dict(type="scatter", x=[x_lo, x_hi], y=[ridge, ridge], mode="lines", name=f"{device} ridge point",
                 legendgroup=device, showlegend=False, line=dict(color=style["color"], width=2, dash="dash"),
                 hovertemplate=f"{device} ridge point {ridge:.0f} FLOP/byte<extra></extra>",
                 meta=dict(role="ridge", device=device, value=ridge)),
            dict(type="scatter", x=group[x], y=group[right] * scale, xaxis="x2", yaxis="y2", mode="lines+markers",
                 name=device, legendgroup=device, showlegend=False, line=line, marker=marker, hovertext=hover,
                 hovertemplate="%{hovertext}<extra></extra>", meta=dict(role=right, device=device)),
        ]
        annotations.append(dict(x=ax(x_lo), y=ay(ridge), xref="x", yref="y", xanchor="left", yanchor="bottom",
                                showarrow=False, text=f"{device} ridge {ridge:.0f} FLOP/B",
                                font=dict(size=13, color=style["color"]), bgcolor="rgba(255,255,255,0.8)"))
        crossing = crossings[device]
        if crossing["status"] == "crosses":
            at = float(crossing["crossing"])
            data.append(dict(type="scatter", x=[at], y=[ridge], mode="markers", name=f"{device} crosses the ridge",
                             legendgroup=device, showlegend=False,
                             marker=dict(symbol="star", size=18, color=style["color"],
                                         line=dict(color="white", width=1)),
                             hovertemplate=f"{device}: compute-bound from {x_name} ≈ {at:.3g}<extra></extra>",
                             meta=dict(role="crossing", device=device, value=at)))
            annotations.append(dict(x=ax(at), y=ay(ridge), xref="x", yref="y", text=f"{x_name} ≈ {at:.3g}",
                                    showarrow=True, arrowhead=0, ax=30, ay=40,
                                    font=dict(size=14, color=style["color"]), bgcolor="rgba(255,255,255,0.8)"))
            shapes += [dict(type="line", x0=at, x1=at, y0=0, y1=1, xref=x_ref, yref=f"{y_ref} domain",
                            line=dict(color=style["color"], width=1.5, dash="dot"))
                       for x_ref, y_ref in (("x", "y"), ("x2", "y2"))]
    notes = [f"{device}: {row['status']}" for device, row in crossings.items() if row["status"] != "crosses"]
    if notes:
        # bottom right: the ridge labels sit at the left end of their lines, and intensity rises to the right
        annotations.append(dict(x=0.99, y=0.01, xref="x domain", yref="y domain", xanchor="right", yanchor="bottom",
                                showarrow=False, align="right", text="<br>".join(notes), font=dict(size=13, color=GREY),
                                bgcolor="rgba(255,255,255,0.85)", name="crossing note"))
    if any_unfit:
        annotations.append(dict(x=0, y=0, xref="paper", yref="paper", xanchor="left", yanchor="top", yshift=-70,
                                showarrow=False, font=dict(size=13, color=GREY),
                                text="hollow markers: does not fit in device memory (hover for why)"))
        layout["margin"] = dict(b=110)
    x_title = dict(text=AXIS_TITLES.get(x_name, x_name))
    layout["xaxis"].update(title=x_title, **x_axis)
    layout["xaxis2"].update(title=x_title, **x_axis)
    layout["yaxis"].update(title=dict(text="Arithmetic intensity (FLOP/byte)"), **y_axis)
    layout["yaxis2"].update(title=dict(text=right_title), **_axis_kind(frame[right] * scale))
    layout.update(shapes=shapes, legend=dict(x=1.01, xanchor="left", y=1), hovermode="closest")
    what = f"{chosen} " if chosen else ""
    return house_figure(data, layout, title or f"{what.capitalize()}sweep over {x_name}: where the ridge is crossed")
