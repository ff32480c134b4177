"""Explore charts over an `engine.grid.sweep_grid` frame: a metric along one field, over two fields
(heatmap), and the Pareto fronts of throughput and energy efficiency against latency.

The frame has the swept fields as columns (batch, memory_bandwidth, device, ...) and the engine's
metric columns in SI units (tpot_s, tokens_per_s, energy_per_token_j, ..., fits, error); the
charts show each metric in its display unit (METRICS) and every field with its unit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from dashboard.charts.facets import panels_layout
from dashboard.charts.theme import BLACK, GREY, SERIES_COLORS, device_style, house_figure
from engine.grid import field_unit

DEVICE = "device"
MAX_CLOUD_POINTS = 2500     # Pareto clouds above this are thinned (evenly, front points always kept)
UNFIT_COLOR = "rgba(205,205,205,0.85)"   # wash over cells that do not fit in memory
MAX_MARKED_CELLS = 2500                  # grids up to this size also get a cross on each such cell
ERROR_COLOR = "#5a5a5a"                  # cells that cannot run at all
SEQUENTIAL = "Cividis"                   # colour-blind-safe sequential scale


@dataclass(frozen=True)
class Metric:
    label: str
    unit: str
    scale: float            # display value = SI value * scale
    better: str             # "lower" or "higher"

    @property
    def title(self) -> str:
        return f"{self.label} ({self.unit})"


METRICS = {
    "tpot_s": Metric("TPOT", "ms", 1e3, "lower"),
    "ttft_s": Metric("TTFT", "ms", 1e3, "lower"),
    "e2e_s": Metric("End-to-end latency", "ms", 1e3, "lower"),
    "tokens_per_s": Metric("Output tokens/s", "tokens/s", 1.0, "higher"),
    "tokens_per_s_per_device": Metric("Output tokens/s per device", "tokens/s", 1.0, "higher"),
    "prefill_tokens_per_s": Metric("Prefill tokens/s", "tokens/s", 1.0, "higher"),
    "energy_per_token_j": Metric("Energy per token", "mJ", 1e3, "lower"),
    "tokens_per_j": Metric("Tokens per joule", "tokens/J", 1.0, "higher"),
    "average_power_w": Metric("Average power", "W", 1.0, "lower"),
    "memory_per_device_bytes": Metric("Memory per device", "GB", 1e-9, "lower"),
    "compute_bound_share": Metric("Compute-bound share of time", "%", 100.0, "higher"),
}

FIELD_LABELS = {
    "batch": ("Batch", "sequences"), "input_length": ("Input length", "tokens"),
    "output_length": ("Output length", "tokens"), "context_length": ("Context", "tokens"),
    "chunk_size": ("Chunk size", "tokens"), "tp": ("Tensor-parallel degree", "devices"),
    "pp": ("Pipeline stages", "devices"), "dp": ("Data-parallel replicas", "replicas"),
    "memory_bandwidth": ("Memory bandwidth", None), "matrix_tflops": ("Matrix peak, bf16", None),
    "compute_scale": ("Compute scale", "x the device's rates"), "clock": ("Clock", None),
    "num_cores": ("Cores", None), "memory_capacity": ("Memory capacity", None), "llc_capacity": ("LLC capacity", None),
    "llc_bandwidth": ("LLC bandwidth", None), "link_bandwidth": ("Link bandwidth", None),
}


def field_label(field: str) -> str:
    """'memory_bandwidth' -> 'Memory bandwidth'."""
    if field in FIELD_LABELS:
        return FIELD_LABELS[field][0]
    return field.replace("_", " ").capitalize()


def field_unit_of(field: str) -> str:
    if field == DEVICE:
        return ""
    unit = FIELD_LABELS.get(field, (None, None))[1]
    return unit or field_unit(field)


def field_title(field: str) -> str:
    """The axis title of a swept field, with its unit: 'Memory bandwidth (GB/s)'; 'Device' for devices."""
    unit = field_unit_of(field)
    return f"{field_label(field)} ({unit})" if unit else field_label(field)


def is_geometric(values) -> bool:
    """Whether `values` are best drawn on a log axis: all > 0 and either spanning two decades or
    more, or spaced geometrically (near-equal ratios) over at least a factor 4."""
    array = pd.to_numeric(pd.Series(list(values)), errors="coerce").to_numpy(float)
    array = np.unique(array[np.isfinite(array)])
    if len(array) < 2 or array[0] <= 0:
        return False
    span = array[-1] / array[0]
    if span >= 100:
        return True
    if len(array) < 3 or span < 4:
        return False
    ratios = array[1:] / array[:-1]
    return bool(ratios.std() / ratios.mean() < 0.05)


def format_value(value, unit: str = "") -> str:
    """A field value for hover text and names: 3350 -> '3350 GB/s', 'H100-SXM' -> 'H100-SXM'."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return f"{float(value):.4g} {unit}".strip()
    return str(value)


def _display(frame: pd.DataFrame, metric: str) -> np.ndarray:
    return pd.to_numeric(frame[metric], errors="coerce").to_numpy(float) * METRICS[metric].scale


def _status(frame: pd.DataFrame) -> np.ndarray:
    """'' for a point that runs and fits, 'does not fit in memory', or the engine's error."""
    error = frame["error"].fillna("").astype(str).to_numpy() if "error" in frame else np.full(len(frame), "")
    fits = frame["fits"].fillna(False).astype(bool).to_numpy() if "fits" in frame else np.ones(len(frame), bool)
    return np.where(error != "", error, np.where(fits, "", "does not fit in memory")).astype(object)


def _axis(field: str, values, log: Optional[bool]) -> dict:
    if field == DEVICE or not pd.api.types.is_numeric_dtype(pd.Series(list(values))):
        return dict(type="category", title=dict(text=field_title(field)))
    log = is_geometric(values) if log is None else log
    return dict(type="log" if log else "linear", title=dict(text=field_title(field)))


def _hover_field(field: str, axis_letter: str) -> str:
    if field == DEVICE:
        return f"%{{{axis_letter}}}"
    return f"{field_label(field)} %{{{axis_letter}:.4g}} {field_unit_of(field)}".rstrip()


def _series_colors(count: int) -> list[str]:
    if count <= len(SERIES_COLORS):
        return list(SERIES_COLORS[:count])
    return sample_colorscale(SEQUENTIAL, [i / (count - 1) for i in range(count)])


# ------------------------------------------------------------------------------------------- line
def line_figure(frame: pd.DataFrame, x: str, metric: str, series: Optional[str] = None, *,
                base: Optional[float] = None, log_x: Optional[bool] = None, title: Optional[str] = None) -> go.Figure:
    """`metric` over the swept field `x`, one line per value of `series` (a device column or a second
    swept field; None: a single line). Points that do not fit in memory are hollow; points that cannot
    run leave a gap. `base`: the sidebar's value of `x`, marked by a dotted vertical line.
    """
    info = METRICS[metric]
    series_values = list(dict.fromkeys(frame[series])) if series else [None]
    colors = _series_colors(len(series_values))
    categorical = x == DEVICE
    data, any_unfit = [], False
    for index, value in enumerate(series_values):
        group = frame if value is None else frame[frame[series] == value]
        if not categorical:
            group = group.sort_values(x)
        ys = _display(group, metric)
        status = _status(group)
        ys = np.where((status == "") | (status == "does not fit in memory"), ys, np.nan)
        unfit = status == "does not fit in memory"
        any_unfit |= bool(unfit.any())
        if series == DEVICE:
            style = device_style(index)
            symbol, dash = style["symbol"], style["dash"]
        else:
            symbol, dash = "circle", "solid"
        name = "" if value is None else (str(value) if series == DEVICE else
                                         f"{field_label(series)} {format_value(value, field_unit_of(series))}")
        hover = (f"<b>{name}</b><br>" if name else "") + _hover_field(x, "x") + \
            f"<br>{info.label} %{{y:.4g}} {info.unit}<br>%{{customdata}}<extra></extra>"
        data.append(dict(
            type="scatter", x=group[x].tolist(), y=ys, mode="lines+markers", name=name or info.label,
            showlegend=value is not None, line=dict(color=colors[index], width=3, dash=dash),
            marker=dict(size=9, color=colors[index], symbol=[f"{symbol}-open" if u else symbol for u in unfit],
                        line=dict(width=2, color=colors[index])),
            customdata=[s or "fits in memory" for s in status], hovertemplate=hover,
            meta=dict(role="line", series="" if value is None else str(value)),
        ))
    layout = dict(xaxis=_axis(x, frame[x], log_x), yaxis=dict(title=dict(text=info.title), rangemode="tozero"),
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
    if any_unfit:
        layout["annotations"].append(dict(x=0, y=0, xref="paper", yref="paper", xanchor="left", yanchor="top",
                                          yshift=-58, showarrow=False, font=dict(size=13, color=GREY),
                                          text="hollow markers: does not fit in device memory"))
        layout["margin"] = dict(b=100)
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
    frame = frame.assign(_value=_display(frame, metric), _status=_status(frame))
    xs, ys, z = heatmap_grid(frame, x, y, "_value")
    status = heatmap_grid(frame, x, y, "_status")[2]
    status = np.where(pd.isna(status), "no point", status)
    errored = (status != "") & (status != "does not fit in memory")
    unfit = status == "does not fit in memory"
    z = np.where(errored, np.nan, z)
    hover = (_hover_field(x, "x") + "<br>" + _hover_field(y, "y") + f"<br><b>{info.label} %{{z:.4g}} {info.unit}</b>"
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
    x_axis, y_axis = _axis(x, xs, log_x), _axis(y, ys, log_y)
    for axis in (x_axis, y_axis):
        axis.update(showgrid=False, ticks="outside")
    layout = dict(xaxis=x_axis, yaxis=y_axis, hovermode="closest",
                  legend=dict(orientation="h", x=1, xanchor="right", y=1.01, yanchor="bottom"))
    default_title = f"{info.label} over {field_label(x).lower()} × {field_label(y).lower()}"
    return house_figure(data, layout, title or default_title)


# ----------------------------------------------------------------------------------------- pareto
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
    status = _status(frame)
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
        custom_hover = "".join(f"<br>{field_label(f)} %{{customdata[{i}]:.4g}} {field_unit_of(f)}"
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
            data.append(dict(type="scatter", x=_display(group, latency), y=_display(group, metric), mode="markers",
                             xaxis=xa, yaxis=ya, name=str(device) if device is not None else "grid points",
                             legendgroup=str(device), showlegend=panel == 0,
                             marker=dict(size=7, color=color, opacity=0.3), customdata=group[fields].to_numpy(),
                             hovertemplate=hover, meta=dict(role="cloud", device=str(device))))
        if len(unfit):
            values = pd.to_numeric(unfit[metric], errors="coerce")
            take = _thin(len(unfit), per_device_keep)
            part = unfit.iloc[take]
            data.append(dict(type="scatter", x=_display(part, latency), y=_display(part, metric), mode="markers",
                             xaxis=xa, yaxis=ya, name="does not fit in memory", legendgroup="unfit",
                             showlegend=panel == 0,
                             marker=dict(size=6, color=GREY, symbol="x-thin", opacity=0.5,
                                         line=dict(width=1, color=GREY)),
                             customdata=part[fields].to_numpy(), hovertemplate=hover,
                             meta=dict(role="unfit", count=int(values.notna().sum()))))
        front = pareto_front(usable, latency, metric, x_better=x_info.better, y_better=info.better)
        front_hover = hover.replace("<extra>%{fullData.name}</extra>", "<extra>Pareto front</extra>")
        device_hover = "<br>%{text}" if DEVICE in front else ""
        data.append(dict(type="scatter", x=_display(front, latency), y=_display(front, metric), mode="lines+markers",
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
        spread = _display(frame, latency)
        spread = spread[np.isfinite(spread) & (spread > 0)]
        x_log = bool(len(spread) and spread.max() / spread.min() >= 30)
        layout["xaxis" + xa[1:]].update(title=dict(text=x_info.title), type="log" if x_log else "linear")
        layout["yaxis" + ya[1:]].update(title=dict(text=info.title), rangemode="tozero")
    if thinned:
        annotations.append(dict(x=0, y=0, xref="paper", yref="paper", xanchor="left", yanchor="top", yshift=-58,
                                showarrow=False, font=dict(size=13, color=GREY),
                                text=f"faint points thinned evenly to about {MAX_CLOUD_POINTS:,} of {len(frame):,}; "
                                     "the front uses every point"))
    layout.update(legend=dict(x=1.01, xanchor="left", y=1, yanchor="top"), margin=dict(b=100), hovermode="closest")
    return house_figure(data, layout, title or "Pareto fronts over the sweep")


# ---------------------------------------------------------------------------------------- inverse
def inverse_search_figure(tried: pd.DataFrame, field: str, metric: str, target: float, value: Optional[float],
                          base_value: Optional[float] = None, unit: Optional[str] = None,
                          title: Optional[str] = None) -> go.Figure:
    """The inverse design's check: the metric at every value the search evaluated (`tried`: value,
    <metric>, meets), the target as a dashed line, the answer as a star and the sidebar's value as a
    dotted line. Points that meet the target are filled, the others hollow."""
    info = METRICS[metric]
    unit = unit if unit is not None else field_unit_of(field)
    frame = tried.sort_values("value")
    ys = _display(frame, metric)
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
