"""Where the GEMM fit misses: leave-one-device-out signed errors grouped by shape regime (h/gemm9, issue 12).

`fit.leave_one_device_out(..., residuals=parts)` collects each held-out device's rows with the prediction of the
constants fitted without it; `regime_table` gives, per dtype x device (x framework), the median signed error
(predicted / measured - 1; negative = predicted too fast) and the row count in each bin of one shape regime:
m (the activation rows), k (the reduction depth), n (the output width) or the measured time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

REGIMES = {
    "m": ("m", [0, 64, 1024, np.inf], ["m<=64", "m<=1k", "m>1k"]),
    "k": ("k", [0, 1024, 8192, np.inf], ["k<=1k", "k<=8k", "k>8k"]),
    "n": ("n", [0, 1024, 8192, np.inf], ["n<=1k", "n<=8k", "n>8k"]),
    "time": ("time_s", [0, 10e-6, 50e-6, 200e-6, np.inf], ["<10us", "10-50us", "50-200us", ">200us"]),
}


def with_errors(parts: list) -> pd.DataFrame:
    """The collected rows with error = predicted_s / time_s - 1."""
    frame = pd.concat(parts, ignore_index=True)
    return frame.assign(error=frame["predicted_s"] / frame["time_s"] - 1.0)


def regime_table(frame: pd.DataFrame, regime: str, by_framework: bool = False) -> pd.DataFrame:
    """Median signed error in percent and count ("+3.1 (540)") per dtype x device [x framework] and bin of
    `regime` (a key of REGIMES)."""
    if regime not in REGIMES:
        raise ValueError(f"unknown regime {regime!r}; expected one of {', '.join(REGIMES)}")
    column, edges, labels = REGIMES[regime]
    bins = pd.cut(frame[column], edges, labels=labels, right=True)
    keys = ["dtype", "device"] + (["framework"] if by_framework else [])
    grouped = frame.assign(bin=bins).groupby(keys + ["bin"], observed=True)["error"]
    cells = (100 * grouped.median()).map("{:+.1f}".format) + " (" + grouped.size().astype(str) + ")"
    return cells.unstack("bin").fillna("")


def summary_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per dtype x device: count, median |error| and bias (median signed error), in percent."""
    grouped = frame.groupby(["dtype", "device"])["error"]
    return pd.DataFrame({"count": grouped.size(), "median |error| %": (100 * grouped.apply(
        lambda e: np.median(np.abs(e)))).round(2), "bias %": (100 * grouped.median()).round(1)})
