"""What the Explore charts show: the metrics (display unit, which way is better), the swept fields' labels
and units, and the helpers the line, heatmap, Pareto and inverse-search charts share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd
from plotly.colors import sample_colorscale

from dashboard.charts.theme import SERIES_COLORS
from dashboard.units import significant
from engine import field_unit

DEVICE, MODEL = "device", "model"
CATEGORICAL = (DEVICE, MODEL)           # swept fields whose values are names, drawn as categories
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
    "weights_per_device_bytes": Metric("Weights per device", "GB", 1e-9, "lower"),
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
    if field in CATEGORICAL:
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
    """A field value for hover text and names, four significant digits and never an exponent: 3350 -> '3,350 GB/s',
    16384 -> '16,384', 0.0125 -> '0.0125', 'H100-SXM' -> 'H100-SXM'."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return f"{significant(float(value), 4)} {unit}".strip()
    return str(value)


def display_values(frame: pd.DataFrame, metric: str) -> np.ndarray:
    return pd.to_numeric(frame[metric], errors="coerce").to_numpy(float) * METRICS[metric].scale


def point_status(frame: pd.DataFrame) -> np.ndarray:
    """'' for a point that runs and fits, 'does not fit in memory', or the engine's error."""
    error = frame["error"].fillna("").astype(str).to_numpy() if "error" in frame else np.full(len(frame), "")
    fits = frame["fits"].fillna(False).astype(bool).to_numpy() if "fits" in frame else np.ones(len(frame), bool)
    return np.where(error != "", error, np.where(fits, "", "does not fit in memory")).astype(object)


def axis_layout(field: str, values, log: Optional[bool]) -> dict:
    if field in CATEGORICAL or not pd.api.types.is_numeric_dtype(pd.Series(list(values))):
        return dict(type="category", title=dict(text=field_title(field)))
    log = is_geometric(values) if log is None else log
    return dict(type="log" if log else "linear", title=dict(text=field_title(field)))


def hover_field(field: str, axis_letter: str) -> str:
    if field == DEVICE:
        return f"%{{{axis_letter}}}"
    if field == MODEL:
        return f"Model %{{{axis_letter}}}"
    return f"{field_label(field)} %{{{axis_letter}:.4g}} {field_unit_of(field)}".rstrip()


def series_colors(count: int) -> list[str]:
    if count <= len(SERIES_COLORS):
        return list(SERIES_COLORS[:count])
    return sample_colorscale(SEQUENTIAL, [i / (count - 1) for i in range(count)])


# ------------------------------------------------------------------------------------------- line


ENERGY_METRICS = ("energy_per_token_j", "tokens_per_j", "average_power_w")


def devices_without_values(frame: pd.DataFrame, metric: str) -> list[str]:
    """Devices with points that run (fitting or not) but no value of `metric` anywhere: a chart of `metric`
    would drop them silently (a device without energy values in the workbook has no tokens per joule)."""
    if metric not in frame or frame.empty:
        return []
    runs = frame[np.isin(point_status(frame), ["", "does not fit in memory"])]
    if DEVICE not in frame:     # one device: named "the device" when none of its points has a value
        values = pd.to_numeric(runs[metric], errors="coerce").to_numpy(float)
        return ["the device"] if len(runs) and not np.isfinite(values).any() else []
    values = pd.to_numeric(runs[metric], errors="coerce")
    has = np.isfinite(values.to_numpy(float))
    with_values = set(runs.loc[has, DEVICE].astype(str))
    return [device for device in dict.fromkeys(runs[DEVICE].astype(str)) if device not in with_values]


def left_out_note(devices: list[str], metric: str) -> str:
    """'Tokens per joule leaves out T4, TPU-v5e: ...', naming why when the metric is an energy one; '' when none."""
    if not devices:
        return ""
    label = METRICS[metric].label if metric in METRICS else metric
    why = ("no energy values for them in the specs workbook (per-operation energies and static power; "
           "see docs/energy.md, or add them as edits)" if metric in ENERGY_METRICS else "the engine gives no value")
    return f"{label} leaves out {', '.join(devices)}: {why}."
