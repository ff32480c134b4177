"""Fit the realistic method's grouped-GEMM and weight-only constants on the measured MoE tables.

RealisticConstants.grouped_gemm_matrix_efficiency / grouped_gemm_memory_efficiency scale a dense GEMM's
achievable matrix rate and weight-streaming bandwidth for the grouped expert GEMMs (rows Expert_*), and
weight_only_efficiency both rates again for weights narrower than the compute format (mxfp4 / int4 x bf16):
the same on every device, so a device known only from the workbook gets them. Fitted by coordinate descent
over 1-D grids minimising median |error| + p90 |error| / 2 (engine.calibration_fit.objective) on the training
devices' balanced-routing moe_perf rows (trtllm), `leave_one_device_out` fits without device X and scores X.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from engine.calibration_fit import objective
from engine.decompose_moe import expected_active_experts
from engine.dtypes import bytes_per_value, compute_dtype
from engine.estimators.realistic import DEFAULT_CONSTANTS
from engine.silicon.score import measured_kernels, moe_kernels, method_seconds

FIT_DEVICES = ("H100-SXM", "H200-SXM", "B200")
NAMES = ("grouped_gemm_matrix_efficiency", "grouped_gemm_memory_efficiency", "weight_only_efficiency")
GRID = np.round(np.arange(0.20, 1.2001, 0.02), 2)
UNCALIBRATED = {name: 1.0 for name in NAMES}
TOKENS_PER_EXPERT_BUCKETS = (0, 2, 8, 32, 128, 512, np.inf)


def fit_rows(devices=FIT_DEVICES, root=None, rows_per_group: int = 400, seed: int = 0) -> pd.DataFrame:
    """Balanced-routing trtllm moe_perf rows of `devices`, at most `rows_per_group` per device x weight x
    activation dtype (a fixed random sample), with tokens_per_expert."""
    frame = measured_kernels("moe", root)
    frame = frame[frame["device"].isin(list(devices))]
    parts = [rows.sample(n=min(rows_per_group, len(rows)), random_state=seed)
             for _, rows in frame.groupby(["device", "weight_dtype", "activation_dtype"])]
    rows = pd.concat(parts, ignore_index=True)
    return rows.assign(tokens_per_expert=tokens_per_expert(rows))


def tokens_per_expert(rows: pd.DataFrame) -> np.ndarray:
    """(token, expert) pairs on a device / the experts they reach (expected_active_experts)."""
    held = rows["experts"] / rows["moe_ep"]
    active = np.maximum(expected_active_experts(held, rows["experts"], rows["topk"], rows["tokens"]), 1e-9)
    return (rows["tokens"] * rows["topk"] / rows["moe_ep"] / active).to_numpy(dtype=float)


def weight_only(rows: pd.DataFrame) -> np.ndarray:
    """Rows whose weights are narrower than the 16-bit format they are multiplied in (mxfp4 x bf16, int4 x bf16;
    not mxfp4 x mxfp8, a native Blackwell MMA), as engine/estimators/realistic.py tells them."""
    weight, activation = rows["weight_dtype"].astype(str), rows["activation_dtype"].astype(str)
    compute = [bytes_per_value(compute_dtype(w, a)) for w, a in zip(weight, activation)]
    narrower = [bytes_per_value(w) < 0.75 * c and c >= 2 for w, c in zip(weight, compute)]
    return np.asarray(narrower, dtype=bool)


class DeviceMoe:
    """One device's MoE rows: their kernel table (built once) and measured times."""

    def __init__(self, rows: pd.DataFrame, hardware):
        self.rows = rows.reset_index(drop=True)
        self.columns, self.index = moe_kernels(self.rows)
        self.hardware = hardware
        self.measured = self.rows["time_s"].to_numpy(dtype=float)
        self.weight_only = weight_only(self.rows)

    def predicted(self, values: dict) -> np.ndarray:
        constants = replace(DEFAULT_CONSTANTS, **values)
        return method_seconds(self.columns, self.index, len(self.rows), self.hardware, "realistic", constants)


def device_moes(rows: pd.DataFrame, devices: dict) -> dict:
    return {device: DeviceMoe(part, devices[device]) for device, part in rows.groupby("device")}


def pooled_objective(groups: list, values: dict, weight_only_rows: bool) -> float:
    """The objective over the training rows of one kind (weight-only or not)."""
    predicted = np.concatenate([g.predicted(values)[g.weight_only == weight_only_rows] for g in groups])
    measured = np.concatenate([g.measured[g.weight_only == weight_only_rows] for g in groups])
    return objective(predicted, measured) if measured.size else 0.0


def fit(groups: list, rounds: int = 2) -> dict:
    """{constant name: value}: the grouped-GEMM efficiencies on the rows with full-width weights, then the
    weight-only efficiency on the weight-only rows (coordinate descent over GRID)."""
    values = dict(UNCALIBRATED)
    for _ in range(rounds):
        for name in NAMES:
            kind = name == "weight_only_efficiency"
            if not any((g.weight_only == kind).any() for g in groups):
                continue     # no rows of that kind: the constant stays as it is
            values[name] = float(min(GRID, key=lambda v: pooled_objective(groups, {**values, name: v}, kind)))
    return values


def errors(frame: pd.DataFrame, predicted: np.ndarray) -> pd.DataFrame:
    """Per dtype x tokens-per-expert bucket: count, median / p90 |error|, bias."""
    error = predicted / frame["time_s"].to_numpy(dtype=float) - 1.0
    dtype = frame["weight_dtype"].where(frame["weight_dtype"] == frame["activation_dtype"],
                                        frame["weight_dtype"] + "/" + frame["activation_dtype"])
    tidy = pd.DataFrame({"precision": dtype, "bucket": pd.cut(frame["tokens_per_expert"], TOKENS_PER_EXPERT_BUCKETS),
                         "error": error})
    grouped = tidy.groupby(["precision", "bucket"], observed=True)["error"]
    return pd.DataFrame({"count": grouped.size(), "median": grouped.apply(lambda e: float(np.median(np.abs(e)))),
                         "p90": grouped.apply(lambda e: float(np.quantile(np.abs(e), 0.9))),
                         "bias": grouped.median()}).reset_index()


def leave_one_device_out(rows: pd.DataFrame, devices: dict) -> tuple[pd.DataFrame, dict]:
    """Per device x dtype x bucket: errors `before` (uncalibrated) and `lodo` (constants fitted on the other
    devices); returns (table, {device: fitted values})."""
    groups = device_moes(rows, devices)
    lines, fitted = [], {}
    for device, held_out in groups.items():
        fitted[device] = fit([g for d, g in groups.items() if d != device])
        before = errors(held_out.rows, held_out.predicted(UNCALIBRATED))
        after = errors(held_out.rows, held_out.predicted(fitted[device]))
        merged = before.merge(after, on=["precision", "bucket", "count"], suffixes=(" before", " lodo"))
        lines.append(merged.assign(device=device))
    return pd.concat(lines, ignore_index=True), fitted


def overall(rows: pd.DataFrame, groups: dict, values_of) -> dict:
    """Pooled median / p90 |error| over all devices, `values_of(device)` the constants used."""
    error = np.concatenate([g.predicted(values_of(d)) / g.measured - 1.0 for d, g in groups.items()])
    return {"median": float(np.median(np.abs(error))), "p90": float(np.quantile(np.abs(error), 0.9)),
            "bias": float(np.median(error))}
