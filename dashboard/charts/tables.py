"""The kernel table, ready to show: readable column names with units, one row per kernel."""

from __future__ import annotations

import numpy as np
import pandas as pd


# engine column -> display column (units in the name)
KERNEL_TABLE_COLUMNS = {
    "device": "Device", "phase": "Phase", "name": "Kernel", "family": "Family", "type": "Type",
    "m": "m", "k": "k", "n": "n", "batch": "Batch", "count": "Calls",
    "macs": "MACs per call", "flops": "FLOPs per call", "bytes": "Bytes per call",
    "intensity": "Intensity (FLOP/byte)", "time_us": "Time per call (µs)", "total_time_us": "Total time (µs)",
    "share_percent": "Share of phase (%)", "bound": "Bound",
}


def _whole_or_rounded(values: pd.Series) -> pd.Series:
    """Integer-valued columns as integers (nullable), others rounded to one decimal."""
    numbers = pd.to_numeric(values, errors="coerce")
    finite = numbers.dropna()
    if len(finite) and np.all(np.isclose(finite, np.round(finite))):
        return numbers.round().astype("Int64")
    return numbers.round(1)


def significant(values, digits: int = 4) -> np.ndarray:
    """Round to `digits` significant digits (keeps tiny times readable; inf and 0 unchanged)."""
    values = np.asarray(values, dtype=float)
    out = values.copy()
    ok = np.isfinite(values) & (values != 0)
    magnitude = np.floor(np.log10(np.abs(values[ok])))
    factor = 10.0 ** (digits - 1 - magnitude)
    out[ok] = np.round(values[ok] * factor) / factor
    return out


def kernel_table_frame(kernels: pd.DataFrame) -> pd.DataFrame:
    """Display-ready kernel table: shapes, calls, MACs, FLOPs, bytes, intensity, time, share, bound.

    Values per call are the engine's per-occurrence values; `Calls` is how many times the kernel
    runs in its phase, so `Total time (µs)` = calls x time per call and the shares of a phase sum
    to 100. Intensity is infinite for kernels that move no bytes. The `Device` column is kept
    only when the input has one.
    """
    frame = kernels.copy()
    total = frame["total_time_s"] if "total_time_s" in frame else frame["count"] * frame["time_s"]
    if "time_share" in frame:
        share = frame["time_share"]
    else:
        keys = [frame[c] for c in ("device", "phase") if c in frame]
        share = total / total.groupby(keys).transform("sum")
    with np.errstate(divide="ignore", invalid="ignore"):
        intensity = np.where(frame["bytes"] > 0, frame["flops"] / frame["bytes"].where(frame["bytes"] > 0), np.inf)
    frame = frame.assign(intensity=significant(intensity), time_us=significant(frame["time_s"] * 1e6),
                         total_time_us=significant(total * 1e6), share_percent=significant(share * 100))
    for column in ("m", "k", "n", "batch", "count"):
        if column in frame:
            frame[column] = _whole_or_rounded(frame[column])
    columns = [c for c in KERNEL_TABLE_COLUMNS if c in frame]
    return frame[columns].rename(columns=KERNEL_TABLE_COLUMNS).reset_index(drop=True)
