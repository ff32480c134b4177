"""Pareto fronts over an Explore sweep: tokens/s per device and tokens per joule against latency."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.charts.facets import panels_layout
from dashboard.charts.theme import BLACK, GREY, device_style, house_figure
from dashboard.charts.explore_fields import (
    CATEGORICAL, DEVICE, MAX_CLOUD_POINTS, METRICS, devices_without_values, display_values, field_label,
    field_unit_of, left_out_note, point_status,
)
from dashboard.charts.frames import wrap_words


def pareto_front(frame: pd.DataFrame, x: str, y: str, x_better: str = "lower",
                 y_better: str = "higher") -> pd.DataFrame:
    """The rows of `frame` that no other row dominates in (x, y), sorted by x.

    A row dominates another when it is at least as good in both columns and better in one
    ("lower" or "higher" is better, per column). Rows with NaN in x or y are left out; identical
    rows do not dominate each other, so all of them stay.
    """
    for name, better in (("x_better", x_better), ("y_better", y_better)):
        if better not in ("lower", "higher"):
            raise ValueError(f"{name} must be 'lower' or 'higher', got {better!r}")
    xs = pd.to_numeric(frame[x], errors="coerce").to_numpy(float)
    ys = pd.to_numeric(frame[y], errors="coerce").to_numpy(float)
    keep = np.isfinite(xs) & np.isfinite(ys)
    rows = np.flatnonzero(keep)
    # minimise both: flip the columns where higher is better
    a = xs[rows] * (1 if x_better == "lower" else -1)
    b = ys[rows] * (1 if y_better == "lower" else -1)
    order = np.lexsort((b, a))              # by a, then b
    a, b, rows = a[order], b[order], rows[order]
    if not len(rows):
        return frame.iloc[[]]
    first = np.searchsorted(a, a, side="left")          # first row with the same a (its smallest b)
    best_before = np.concatenate([[np.inf], np.minimum.accumulate(b)])[first]   # smallest b at strictly smaller a
    front = (b == b[first]) & (b < best_before)
    chosen = frame.iloc[rows[front]]
    return chosen.iloc[np.argsort(chosen[x].to_numpy(float), kind="stable")]


PARETO_PANELS = (("tokens_per_s_per_device", "Throughput per device vs latency"),
                 ("tokens_per_j", "Energy efficiency vs latency"))


def _thin(count: int, keep: int) -> np.ndarray:
    if count <= keep:
        return np.arange(count)
    return np.unique(np.linspace(0, count - 1, keep).round().astype(int))


def pareto_figure(frame: pd.DataFrame, fields: Sequence[str], latency: str = "tpot_s",
                  title: Optional[str] = None) -> go.Figure:
    """Two panels: tokens/s per device against latency, and tokens per joule against latency.

    Every point of the sweep is a faint marker (coloured by device; thinned evenly above
    MAX_CLOUD_POINTS); points that do not fit in memory are grey crosses and are not candidates;
    the non-dominated front (lower latency, higher y) is a black line with highlighted markers.
    `fields`: the swept columns, named in the hover.
    """
    x_info = METRICS[latency]
    layout = panels_layout([panel_title for _, panel_title in PARETO_PANELS], 0.15)
    status = point_status(frame)
    runs = frame[status == ""]
    unfit = frame[status == "does not fit in memory"]
    devices = list(dict.fromkeys(frame[DEVICE])) if DEVICE in frame else [None]
    fields = [f for f in fields if f in frame and f != DEVICE]
    per_device_keep = max(MAX_CLOUD_POINTS // max(len(devices), 1), 50)
    data, annotations = [], layout["annotations"]
    thinned = False
    for panel, (metric, _) in enumerate(PARETO_PANELS):
        info = METRICS[metric]
        xa, ya = ("x", "y") if panel == 0 else ("x2", "y2")
        custom_hover = "".join(f"<br>{field_label(f)} %{{customdata[{i}]}}" if f in CATEGORICAL else
                               f"<br>{field_label(f)} %{{customdata[{i}]:.4g}} {field_unit_of(f)}"
                               for i, f in enumerate(fields))
        hover = (f"{x_info.label} %{{x:.4g}} {x_info.unit}<br>{info.label} %{{y:.4g}} {info.unit}"
                 + custom_hover + "<extra>%{fullData.name}</extra>")
        usable = runs[np.isfinite(pd.to_numeric(runs[metric], errors="coerce").to_numpy(float))]
        for index, device in enumerate(devices):
            group = usable if device is None else usable[usable[DEVICE] == device]
            take = _thin(len(group), per_device_keep)
            thinned |= len(take) < len(group)
            group = group.iloc[take]
            color = device_style(index)["color"]
            data.append(dict(type="scatter", x=display_values(group, latency), y=display_values(group, metric), mode="markers",
                             xaxis=xa, yaxis=ya, name=str(device) if device is not None else "grid points",
                             legendgroup=str(device), showlegend=panel == 0,
                             marker=dict(size=7, color=color, opacity=0.3), customdata=group[fields].to_numpy(),
                             hovertemplate=hover, meta=dict(role="cloud", device=str(device))))
        if len(unfit):
            values = pd.to_numeric(unfit[metric], errors="coerce")
            take = _thin(len(unfit), per_device_keep)
            part = unfit.iloc[take]
            data.append(dict(type="scatter", x=display_values(part, latency), y=display_values(part, metric), mode="markers",
                             xaxis=xa, yaxis=ya, name="does not fit in memory", legendgroup="unfit",
                             showlegend=panel == 0,
                             marker=dict(size=6, color=GREY, symbol="x-thin", opacity=0.5,
                                         line=dict(width=1, color=GREY)),
                             customdata=part[fields].to_numpy(), hovertemplate=hover,
                             meta=dict(role="unfit", count=int(values.notna().sum()))))
        front = pareto_front(usable, latency, metric, x_better=x_info.better, y_better=info.better)
        front_hover = hover.replace("<extra>%{fullData.name}</extra>", "<extra>Pareto front</extra>")
        device_hover = "<br>%{text}" if DEVICE in front else ""
        data.append(dict(type="scatter", x=display_values(front, latency), y=display_values(front, metric), mode="lines+markers",
                         xaxis=xa, yaxis=ya, name="Pareto front", legendgroup="front", showlegend=panel == 0,
                         line=dict(color=BLACK, width=2.5, shape="hv" if info.better == "higher" else "linear"),
                         marker=dict(size=11, color="white", line=dict(color=BLACK, width=2.5)),
                         text=front[DEVICE].astype(str).tolist() if DEVICE in front else None,
                         customdata=front[fields].to_numpy(), hovertemplate=front_hover.replace(
                             "<extra>", device_hover + "<extra>"), meta=dict(role="front", metric=metric)))
        if usable.empty:
            annotations.append(dict(x=0.5, y=0.5, xref=f"{xa} domain", yref=f"{ya} domain", showarrow=False,
                                    text=f"no {info.label.lower()} values"
                                    + (" (no energy values in the specs workbook)" if metric == "tokens_per_j" else ""),
                                    font=dict(size=14, color=GREY)))
        spread = display_values(frame, latency)
        spread = spread[np.isfinite(spread) & (spread > 0)]
        x_log = bool(len(spread) and spread.max() / spread.min() >= 30)
        layout["xaxis" + xa[1:]].update(title=dict(text=x_info.title), type="log" if x_log else "linear")
        layout["yaxis" + ya[1:]].update(title=dict(text=info.title), rangemode="tozero")
    notes = [left_out_note(devices_without_values(frame, metric), metric) for metric, _ in PARETO_PANELS]
    if thinned:
        notes.append(f"Faint points thinned evenly to about {MAX_CLOUD_POINTS:,} of {len(frame):,}; "
                     "the front uses every point.")
    footnote = "<br>".join(wrap_words(note, 120) for note in notes if note)
    if footnote:   # under the axis titles, in pixels
        annotations.append(dict(x=0, y=0, xref="paper", yref="paper", xanchor="left", yanchor="top", yshift=-62,
                                showarrow=False, font=dict(size=13, color=GREY), align="left", text=footnote,
                                name="footnote"))
    layout.update(legend=dict(x=1.01, xanchor="left", y=1, yanchor="top"), hovermode="closest",
                  margin=dict(b=90 + 18 * (footnote.count("<br>") + 1 if footnote else 0)))
    return house_figure(data, layout, title or "Pareto fronts over the sweep")
