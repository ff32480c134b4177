"""Our GPU's GEMMs timed two ways (calibration/measure_gemm_methods.py), scored each under its condition.

`flushed` rows (L2 flushed, one call: as our ground-truth files and a model's layer stack) are scored under the
"model" condition, `graph_copies` rows (AIConfigurator's method) under the "warm" one (engine/estimators/
gemm_condition.py); the median difference of the two times is what an isolated GEMM pays beyond the back-to-back
latency (the model condition's kernel_latency: on the H100 7.25 us = 2.79 us back to back + 4.4 us).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from engine.calibration.silicon.score import gemm_kernels
from engine.estimators.realistic import DEFAULT_CONSTANTS, estimate_realistic


def measured_isolated_latency_s(path) -> dict:
    """{dtype: median of flushed - graph_copies seconds} over the GEMMs of a file written by
    calibration/measure_gemm_methods.py (each shape timed both ways on one GPU): what an isolated GEMM (L2 flushed,
    one call, as in our ground-truth files and a model's layer stack) spends beyond the tables' back-to-back time.
    On the H100 it is kernel_latency - gemm_latency_cycles / clock (tests/test_gemm_condition.py)."""
    frame = pd.read_csv(path, comment="#")
    wide = frame.pivot_table(index=["m", "n", "k", "dtype"], columns="method", values="ms").reset_index()
    difference = (wide["flushed"] - wide["graph_copies"]) * 1e-3
    return {str(dtype): float(values.median()) for dtype, values in difference.groupby(wide["dtype"])}


# the timing methods of calibration/measure_gemm_methods.py and the condition each is scored under
METHOD_CONDITIONS = {"flushed": "model", "graph_copies": "warm"}


def score_methods_file(path, devices: dict, constants=None) -> pd.DataFrame:
    """The realistic method on a file of calibration/measure_gemm_methods.py: `flushed` rows (L2 flushed, one call)
    under the model condition, `graph_copies` rows (the tables' method, bare GEMMs without a quantize kernel) under
    the warm condition. Tidy: the rows + condition, predicted_s, measured_s, error."""
    frame = pd.read_csv(path, comment="#")
    frame = frame[frame["method"].isin(list(METHOD_CONDITIONS))].reset_index(drop=True)
    frame = frame.assign(weight_dtype=frame["dtype"], activation_dtype=frame["dtype"], measured_s=frame["ms"] * 1e-3,
                         condition=frame["method"].map(METHOD_CONDITIONS), predicted_s=np.nan)
    for (hardware, condition), rows in frame.groupby(["hardware", "condition"]):
        part = rows.reset_index(drop=True)
        columns, index = gemm_kernels(part)
        chosen = replace(constants or DEFAULT_CONSTANTS, gemm_condition=condition, gemm_quantize_latency_s={})
        seconds = estimate_realistic(columns, devices[hardware], constants=chosen)["kernel_time_s"]
        frame.loc[rows.index, "predicted_s"] = np.bincount(index, weights=seconds, minlength=len(part))
    return frame.assign(error=frame["predicted_s"] / frame["measured_s"] - 1.0)
