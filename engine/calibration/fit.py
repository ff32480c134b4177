"""Fit the realistic method's free parameters to measured kernel times (cheap: grids and least squares).

Per device (stored in specs.xlsx): achievable_matrix_fraction, achievable_memory_bandwidth_fraction and
kernel_latency, fitted on the device's GEMM rows by coordinate descent over 1-D grids, minimising
median |error| + p90 |error| / 2 of the realistic GEMM model (tiles, waves, split-K, GEMV).
Per element-wise kernel class (software constants in engine/estimators/realistic.py): per device,
time = max(floor, latency + max(bytes / bandwidth, row waves)) by coordinate descent over 1-D grids
(same objective); bandwidth relative to the device's GEMM memory fraction; averaged over the devices fitted.

    fit = fit_realistic(load_measurements(), load_specs())              # every device in the data
    fit = fit_realistic(measurements, devices, train_devices=["A100-80GB-SXM"])   # cross-device check
    hardware = fit.apply(devices["H100-SXM"], from_device="A100-80GB-SXM")
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from engine.calibration.measurements import kernel_table
from engine.hardware.dtypes import bytes_per_value
from engine.estimators.realistic import (
    DEFAULT_CONSTANTS, ROW_CTAS_PER_CORE, DeviceRates, KernelClass, RealisticConstants, row_cta_bytes,
)
from engine.estimators.tiling import candidate_terms, epilogue_values, k_steps
from engine.hardware.device import Hardware

CLASS_OF_KIND = {"swiglu": "activation", "rmsnorm": "norm", "residual_add": "residual"}
MATRIX_GRID = np.round(np.arange(0.40, 1.0001, 0.01), 2)
MEMORY_GRID = np.round(np.arange(0.40, 1.0001, 0.01), 2)
LATENCY_GRID = np.round(np.arange(0.0, 10.0001, 0.25), 2) * 1e-6


@dataclass
class DeviceFit:
    matrix_fraction: float
    memory_fraction: float
    kernel_latency_s: float
    gemm_rows: int
    elementwise: dict = field(default_factory=dict)   # class -> (fraction of peak, latency_s, floor_s, row B/cycle)


@dataclass
class RealisticFit:
    devices: dict           # device name -> DeviceFit
    constants: RealisticConstants

    def apply(self, hardware: Hardware, from_device: str | None = None) -> Hardware:
        """`hardware` with the fitted device values of `from_device` (default: its own name)."""
        fit = self.devices[from_device or hardware.name]
        return hardware.with_changes(achievable_matrix_fraction=fit.matrix_fraction,
                                     achievable_memory_bandwidth_fraction=fit.memory_fraction,
                                     kernel_latency_s=fit.kernel_latency_s)


def objective(predicted: np.ndarray, measured: np.ndarray) -> float:
    error = np.abs(predicted / measured - 1.0)
    return float(np.median(error) + 0.5 * np.quantile(error, 0.9))


class GemmModel:
    """The realistic GEMM time of many rows as a fast function of (matrix, memory, latency)."""

    def __init__(self, table: dict, hardware: Hardware, byte_scale=1.0, epilogue_s: float = 0.0):
        """`byte_scale`: per row, bytes counted x this (the warm condition's LLC reads, gemm_condition.py);
        `epilogue_s`: seconds per output value of each wave's tiles (gemm_condition.epilogue_s_per_value)."""
        rates = DeviceRates.of(hardware)
        m, n, k = (table[c].astype(float)[:, None] for c in ("m", "n", "k"))
        nbytes = (table["bytes"].astype(float) * byte_scale)[:, None]
        dtype = str(table["dtype"][0])
        per_core = hardware.matrix_macs_per_s(dtype) / hardware.num_cores
        self.terms = candidate_terms(m, n, k, 1.0, nbytes, per_core, hardware, bytes_per_value(dtype),
                                     rates.bandwidth)
        self.gemv = (m[:, 0] <= DEFAULT_CONSTANTS.gemv_max_rows)
        self.vector_s = table["matrix_flops"].astype(float) / rates.vector_flops_per_s
        self.stream_peak_s = nbytes[:, 0] / rates.bandwidth
        self.ideal_s = np.maximum(table["matrix_flops"] / hardware.matrix_flops_per_s(dtype), self.stream_peak_s)
        self.epilogue = epilogue_s * epilogue_values(self.terms) if epilogue_s else None

    def work(self, matrix: float, memory: float, split_k_latency_s: float = 0.0,
             power_macs_per_s: float = np.inf, overlap_loss: float = 0.0, k_step_s: float = 0.0,
             excluded: np.ndarray | None = None) -> np.ndarray:
        """`power_macs_per_s`: the chip's power-limited matrix rate; `overlap_loss`: the part of min(compute, memory)
        not hidden; `k_step_s`: seconds per wave per k step (tiling.candidate_times; inf, 0, 0: none); `excluded`:
        rows x candidates, inf where a candidate is not the kernel's to take, else 0 (None: all)."""
        compute = self.terms["wave_peak_s"] / matrix
        if np.isfinite(power_macs_per_s):
            compute = np.maximum(compute, self.terms["work_macs"] / power_macs_per_s)
        streamed = self.terms["peak_memory_s"] / memory
        candidates = np.maximum(compute, streamed)
        if overlap_loss:
            candidates = candidates + overlap_loss * np.minimum(compute, streamed)
        if split_k_latency_s:       # a split-K candidate's reduction pass (tiling.candidate_times)
            candidates = candidates + np.where(self.terms["split_k"] > 1, split_k_latency_s, 0.0)
        if k_step_s:                # each wave's k loop: seconds per TILE_K-deep step (tiling.candidate_times)
            candidates = candidates + k_step_s * k_steps(self.terms)
        if self.epilogue is not None:   # each wave's unhidden epilogue (tiling.candidate_times)
            candidates = candidates + self.epilogue
        if excluded is not None:
            candidates = candidates + excluded
        tiled = np.min(candidates, axis=1)
        gemv = np.maximum(self.vector_s, self.stream_peak_s / memory)
        return np.maximum(np.where(self.gemv, gemv, tiled), self.ideal_s)

    def time(self, matrix: float, memory: float, latency: float) -> np.ndarray:
        return latency + self.work(matrix, memory)


def fit_gemm(model: GemmModel, measured: np.ndarray, rounds: int = 3) -> tuple[float, float, float]:
    """(matrix fraction, memory fraction, latency) by coordinate descent over the grids."""
    matrix, memory, latency = 0.75, 0.85, 4e-6
    for _ in range(rounds):
        matrix = min(MATRIX_GRID, key=lambda x: objective(model.time(x, memory, latency), measured))
        memory = min(MEMORY_GRID, key=lambda x: objective(model.time(matrix, x, latency), measured))
        work = model.work(matrix, memory)
        latency = min(LATENCY_GRID, key=lambda x: objective(work + x, measured))
    return float(matrix), float(memory), float(latency)


FRACTION_GRID = np.round(np.arange(0.30, 1.0001, 0.01), 2)
ELEMENTWISE_LATENCY_GRID = np.round(np.arange(0.0, 6.0001, 0.25), 2) * 1e-6
FLOOR_GRID = np.round(np.arange(0.0, 12.0001, 0.25), 2) * 1e-6
ROW_RATE_GRID = np.round(np.arange(1.0, 16.0001, 0.25), 2)        # bytes per cycle of one row's CTA
ROW_WISE_CLASSES = ("norm", "activation")                           # one CTA per token


class ElementwiseModel:
    """The realistic element-wise kernel time of many rows as a function of its class constants."""

    def __init__(self, table: dict, hardware: Hardware, row_wise: bool, weights_cached: bool = False):
        self.at_peak = table["bytes"] / hardware.memory_bandwidth_bytes_per_s
        tokens = np.maximum(table["m"].astype(float), 1.0)
        waves = np.ceil(tokens / (hardware.num_cores * ROW_CTAS_PER_CORE))
        row_bytes = row_cta_bytes(table["bytes"], table["weight_bytes"], tokens, weights_cached)
        self.row_cycles = waves * row_bytes / hardware.clock_hz if row_wise else None

    def time(self, fraction: float, latency: float, floor: float, row_bytes_per_cycle: float | None) -> np.ndarray:
        work = self.at_peak / fraction
        if self.row_cycles is not None and row_bytes_per_cycle:
            work = np.maximum(work, self.row_cycles / row_bytes_per_cycle)
        return np.maximum(floor, latency + work)


def fit_elementwise(model: ElementwiseModel, measured: np.ndarray, rounds: int = 3) -> tuple:
    """(fraction of peak bandwidth, latency, floor, row bytes per cycle or None) of one kernel class,
    by coordinate descent over grids (the fraction is at most 1: nothing streams faster than the peak)."""
    fraction, latency, floor = 0.8, 1e-6, 0.0
    row = 6.0 if model.row_cycles is not None else None
    score = lambda *p: objective(model.time(*p), measured)  # noqa: E731
    for _ in range(rounds):
        fraction = min(FRACTION_GRID, key=lambda v: score(v, latency, floor, row))
        latency = min(ELEMENTWISE_LATENCY_GRID, key=lambda v: score(fraction, v, floor, row))
        floor = min(FLOOR_GRID, key=lambda v: score(fraction, latency, v, row))
        if row is not None:
            row = float(min(ROW_RATE_GRID, key=lambda v: score(fraction, latency, floor, v)))
    return float(fraction), float(latency), float(floor), row


def fit_realistic(measurements: pd.DataFrame, devices: dict, train_devices=None) -> RealisticFit:
    """Fit device values on each training device and kernel-class constants averaged over them."""
    names = list(train_devices or dict.fromkeys(measurements["device"]))
    fits = {}
    for name in names:
        rows = measurements[measurements["device"] == name]
        hardware = devices[name]
        gemm = rows[rows["kind"] == "gemm"]
        model = GemmModel(kernel_table(gemm), hardware)
        matrix, memory, latency = fit_gemm(model, gemm["measured_s"].to_numpy())
        fit = DeviceFit(matrix, memory, latency, len(gemm))
        for kind, kernel_class in CLASS_OF_KIND.items():
            subset = rows[rows["kind"] == kind]
            if len(subset):
                model = ElementwiseModel(kernel_table(subset), hardware, kernel_class in ROW_WISE_CLASSES,
                                         DEFAULT_CONSTANTS.kernel_classes[kernel_class].row_weights_cached)
                fit.elementwise[kernel_class] = fit_elementwise(model, subset["measured_s"].to_numpy())
        fits[name] = fit
    classes = dict(DEFAULT_CONSTANTS.kernel_classes)
    for kernel_class in CLASS_OF_KIND.values():
        pairs = [(f.elementwise[kernel_class], f) for f in fits.values() if kernel_class in f.elementwise]
        if pairs:
            mean = lambda values: round(float(np.mean(values)), 2)  # noqa: E731
            classes[kernel_class] = KernelClass(
                bandwidth_efficiency=mean([c[0] / f.memory_fraction for c, f in pairs]),
                latency_s=round(float(np.mean([c[1] for c, _ in pairs])), 9),
                floor_s=round(float(np.mean([c[2] for c, _ in pairs])), 9),
                row_bytes_per_cycle=mean([c[3] for c, _ in pairs]) if pairs[0][0][3] is not None else None,
                row_weights_cached=classes[kernel_class].row_weights_cached,
            )
    return RealisticFit(fits, replace(DEFAULT_CONSTANTS, kernel_classes=classes))
