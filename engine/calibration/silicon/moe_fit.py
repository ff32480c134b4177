"""Fit the realistic method's MoE grouped-GEMM constants on the measured MoE tables, leave-one-device-out.

engine/calibration/silicon/score.py times one MoE measurement as the routed experts engine/decomposition/moe.py builds
(grouped GEMMs Expert_up [, Expert_gate], Expert_down over the active experts, the activation, the combine).
Software constants, the same on every device (RealisticConstants), scale the grouped GEMMs against a plain
GEMM of the same format on the device's workbook rates, and charge the token permutation to the combine row:

    matrix rate     peak x achievable_matrix_fraction x gemm_matrix_efficiency[dtype] x moe_matrix_efficiency
    weight stream   bandwidth x min(1, achievable_memory_bandwidth_fraction x moe_bandwidth_efficiency)
    combine         at least its vector FLOPs x moe_combine_flop_cycles / (cores x clock)

Each device's predictions are evaluated once per point of the grid (MATRIX_GRID x BANDWIDTH_GRID); a fit picks the grid point that
minimises median |error| + p90 |error| / 2 (engine.calibration.fit.objective) over the training devices' rows
pooled, so leave-one-device-out costs no re-evaluation.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from engine.calibration.fit import objective
from engine.estimators.realistic import DEFAULT_CONSTANTS
from engine.calibration.silicon.score import measured_kernels, predicted_seconds

FIT_DTYPES = ("bf16", "fp8", "fp8_g128")        # weights = activations; the 4-bit tables are scored, not fitted
# the matrix efficiency is not fitted: on these tables 0.68-0.92 moves the median |error| by < 0.3 points (even at
# > 64 tokens per expert, where the model is 30-40% too fast: that miss is not the matrix rate); kept at 1
MATRIX_GRID = (1.0,)
BANDWIDTH_GRID = np.round(np.arange(0.55, 1.0001, 0.05), 2)
# core cycles per vector FLOP of the combine row (token permutation and combine: the large per-expert batches of
# narrow experts were 30-65% too fast, the missing time ~1 core cycle per (pair x hidden value) on H100 and B200)
COMBINE_GRID = (0.0, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
TOKEN_BUCKETS = (0, 1, 4, 16, 64, 256, np.inf)     # (token, expert) pairs per expert: tokens x topk / experts
TOKEN_LABELS = ("<=1", "1-4", "4-16", "16-64", "64-256", ">256")


def fit_rows(devices: dict, root=None, rows_per_device: int = 1000, seed: int = 0) -> pd.DataFrame:
    """A fixed random sample of the trtllm MoE measurements (balanced routing, FIT_DTYPES) per workbook device."""
    frame = measured_kernels("moe", root, "trtllm")
    frame = frame[frame["device"].isin(list(devices)) & frame["weight_dtype"].isin(FIT_DTYPES)
                  & (frame["weight_dtype"] == frame["activation_dtype"])]
    parts = [rows.sample(n=min(rows_per_device, len(rows)), random_state=seed) for _, rows in frame.groupby("device")]
    frame = pd.concat(parts, ignore_index=True) if parts else frame
    per_expert = frame["tokens"] * frame["topk"] / frame["experts"]
    return frame.assign(tokens_per_expert=per_expert,
                        tokens_bucket=pd.cut(per_expert, TOKEN_BUCKETS, labels=TOKEN_LABELS))


def constants_with(matrix: float, bandwidth: float, combine_cycles: float = 0.0, base=DEFAULT_CONSTANTS):
    return replace(base, moe_matrix_efficiency=float(matrix), moe_bandwidth_efficiency=float(bandwidth),
                   moe_combine_flop_cycles=float(combine_cycles))


def grid_predictions(rows: pd.DataFrame, devices: dict, grid=None) -> dict:
    """{device: {(matrix, bandwidth, combine cycles): predicted seconds per row of the device (rows' order)}}."""
    grid = grid or [(m, b, c) for m in MATRIX_GRID for b in BANDWIDTH_GRID for c in COMBINE_GRID]
    out = {}
    for device, part in rows.groupby("device", sort=True):
        part = part.reset_index(drop=True)
        out[device] = {point: predicted_seconds(part, "moe", devices[device], "realistic", constants_with(*point))
                       for point in grid}
    return out


def best_point(predictions: dict, measured: dict, training: list) -> tuple[float, float]:
    """The grid point minimising the pooled objective over `training` devices."""
    points = next(iter(predictions.values())).keys()
    truth = np.concatenate([measured[d] for d in training])
    return min(points, key=lambda p: objective(np.concatenate([predictions[d][p] for d in training]), truth))


def leave_one_device_out(rows: pd.DataFrame, devices: dict, predictions: dict | None = None) -> tuple[pd.DataFrame,
                                                                                                    dict]:
    """Tidy errors per measurement under `before` (both efficiencies 1), `lodo` (the grid point fitted without the
    device) and `shipped` (DEFAULT_CONSTANTS); and {device: the lodo point}."""
    predictions = predictions or grid_predictions(rows, devices)
    parts, fitted = [], {}
    measured = {d: part["time_s"].to_numpy(dtype=float) for d, part in rows.groupby("device", sort=True)}
    shipped = (DEFAULT_CONSTANTS.moe_matrix_efficiency, DEFAULT_CONSTANTS.moe_bandwidth_efficiency,
               DEFAULT_CONSTANTS.moe_combine_flop_cycles)
    for device, part in rows.groupby("device", sort=True):
        part = part.reset_index(drop=True)
        fitted[device] = best_point(predictions, measured, [d for d in measured if d != device])
        for label, point in (("before", (1.0, 1.0, 0.0)), ("lodo", fitted[device]), ("shipped", shipped)):
            seconds = predictions[device].get(point)
            if seconds is None:
                seconds = predicted_seconds(part, "moe", devices[device], "realistic", constants_with(*point))
            parts.append(part.assign(model=label, predicted_s=seconds, error=seconds / measured[device] - 1.0))
    return pd.concat(parts, ignore_index=True), fitted


def fit_all(rows: pd.DataFrame, devices: dict, predictions: dict | None = None) -> tuple[float, float]:
    """The point fitted on every device (the values to ship)."""
    predictions = predictions or grid_predictions(rows, devices)
    measured = {d: part["time_s"].to_numpy(dtype=float) for d, part in rows.groupby("device", sort=True)}
    return best_point(predictions, measured, list(measured))
