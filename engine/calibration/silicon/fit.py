"""Fit the realistic method's GEMM constants per dtype on the measured tables, leave-one-device-out.

The realistic GEMM time of a device (engine/estimators/realistic.py) uses the workbook's
achievable_matrix_fraction, achievable_memory_bandwidth_fraction and kernel_latency (blank: the defaults).
Per dtype two software constants adjust it, the same on every device (RealisticConstants):

    matrix rate     = peak x achievable_matrix_fraction x gemm_matrix_efficiency[dtype]
    device latency  = max(0, kernel_latency + gemm_format_latency_s[dtype])

so a device known only from the workbook gets them too. The clock-and-power form (CLOCK_DTYPES: bf16) replaces
the latency and caps the matrix rate by the board's power, again from workbook fields only:

    device latency  = gemm_latency_cycles[dtype] / clock_hz (+ gemm_split_k_cycles[dtype] / clock_hz if split-K)
    matrix rate     = min(peak x achievable_matrix_fraction x gemm_matrix_efficiency[dtype],
                          (tdp_w - static_power_w) / gemm_power_j_per_flop[dtype])

Both forms are fitted by coordinate descent over 1-D grids, minimising median |error| + p90 |error| / 2
(engine.calibration.fit.objective) over the training devices' rows pooled; `leave_one_device_out` fits without
device X and scores X.
The GEMM model is engine.calibration.fit.GemmModel (the realistic GEMM time as a fast function of
matrix fraction, memory fraction and latency: tile candidates evaluated once).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from engine.calibration.fit import GemmModel, objective
from engine.estimators.realistic import DEFAULT_CONSTANTS, DeviceRates
from engine.calibration.silicon.score import gemm_kernels, measured_kernels

FIT_DTYPES = ("bf16", "fp8", "fp8_g128")
FRAMEWORKS = ("trtllm", "vllm", "sglang")
EFFICIENCY_GRID = np.round(np.arange(0.40, 1.40001, 0.01), 2)
EXTRA_LATENCY_GRID = np.round(np.arange(-6.0, 15.0001, 0.25), 2) * 1e-6   # negative: shorter than kernel_latency


CLOCK_DTYPES = ("bf16",)     # fitted in the clock-and-power form (RealisticConstants.gemm_latency_cycles ...)
LATENCY_CYCLES_GRID = np.arange(0.0, 12000.001, 100.0)
JOULES_PER_FLOP_GRID = np.concatenate([[0.0], np.round(np.arange(0.30, 1.50001, 0.01), 2) * 1e-12])   # 0: no cap
SPLIT_K_CYCLES_GRID = np.arange(0.0, 10000.001, 100.0)
LEAST_N_K = 128            # layer-shaped GEMMs only: n, k >= 128 (the tables sweep n, k down to 32)
EXCLUDED = {("vllm", "fp8_g128")}   # vLLM 0.24.0's block-scaled fp8 table: even 32 x 32 x 32 takes 55-500 us


def fit_rows(devices: dict, root=None, frameworks=FRAMEWORKS, rows_per_group: int = 1500,
             seed: int = 0) -> pd.DataFrame:
    """GEMM measurements of FIT_DTYPES (weights and activations alike) on workbook devices, n and k >= LEAST_N_K,
    without the EXCLUDED (framework, dtype) tables, at most `rows_per_group` per device x dtype x framework
    (a fixed random sample)."""
    parts = []
    for framework in frameworks:
        frame = measured_kernels("gemm", root, framework)
        excluded = frame["dtype"].map(lambda d: (framework, d) in EXCLUDED)
        frame = frame[frame["device"].isin(list(devices)) & frame["dtype"].isin(FIT_DTYPES) & ~excluded
                      & (frame["weight_dtype"] == frame["activation_dtype"])
                      & (frame["n"] >= LEAST_N_K) & (frame["k"] >= LEAST_N_K)]
        for _, rows in frame.groupby(["device", "dtype"]):
            parts.append(rows.sample(n=min(rows_per_group, len(rows)), random_state=seed))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


class DeviceGemms:
    """One device's rows of one dtype: the fast GEMM model, the measured times and the device's constants."""

    def __init__(self, rows: pd.DataFrame, hardware):
        columns, index = gemm_kernels(rows.reset_index(drop=True))
        self.model = GemmModel({key: values[np.argsort(index)] for key, values in columns.items()}, hardware)
        self.measured = rows["time_s"].to_numpy(dtype=float)
        self.rates = DeviceRates.of(hardware)
        self.peak_flops = hardware.matrix_flops_per_s(str(columns["dtype"][0]))

    def predicted(self, efficiency: float, extra_latency_s: float) -> np.ndarray:
        rates = self.rates
        return self.model.time(rates.matrix_fraction * efficiency, rates.memory_fraction,
                               max(rates.kernel_latency_s + extra_latency_s, 0.0))

    def clock_work(self, efficiency: float, joules_per_flop: float, split_k_cycles: float = 0.0) -> np.ndarray:
        """The clock-and-power form's time without its latency."""
        matrix = self.rates.matrix_fraction * efficiency
        if joules_per_flop > 0 and self.rates.dynamic_power_w:
            matrix = min(matrix, self.rates.dynamic_power_w / joules_per_flop / self.peak_flops)
        return self.model.work(matrix, self.rates.memory_fraction, split_k_cycles / self.rates.clock_hz)

    def predicted_clock(self, efficiency: float, latency_cycles: float, joules_per_flop: float,
                        split_k_cycles: float = 0.0) -> np.ndarray:
        return self.clock_work(efficiency, joules_per_flop, split_k_cycles) + latency_cycles / self.rates.clock_hz


def device_gemms(rows: pd.DataFrame, devices: dict) -> dict:
    """{(device, dtype): DeviceGemms}."""
    return {key: DeviceGemms(part, devices[key[0]]) for key, part in rows.groupby(["device", "dtype"])}


def pooled_objective(groups: list, efficiency: float, extra_latency_s: float) -> float:
    predicted = np.concatenate([g.predicted(efficiency, extra_latency_s) for g in groups])
    measured = np.concatenate([g.measured for g in groups])
    return objective(predicted, measured)


def fit_dtype(groups: list, rounds: int = 3) -> tuple[float, float]:
    """(gemm_matrix_efficiency, gemm_format_latency_s) minimising the pooled objective."""
    efficiency, extra = 1.0, 0.0
    for _ in range(rounds):
        efficiency = float(min(EFFICIENCY_GRID, key=lambda e: pooled_objective(groups, e, extra)))
        extra = float(min(EXTRA_LATENCY_GRID, key=lambda x: pooled_objective(groups, efficiency, x)))
    return efficiency, extra


def fit_dtype_clock(groups: list, rounds: int = 3) -> tuple[float, float, float, float]:
    """(gemm_matrix_efficiency, gemm_latency_cycles, gemm_power_j_per_flop, gemm_split_k_cycles) of the
    clock-and-power form minimising the pooled objective (coordinate descent over EFFICIENCY_GRID,
    JOULES_PER_FLOP_GRID, SPLIT_K_CYCLES_GRID and LATENCY_CYCLES_GRID)."""
    measured = np.concatenate([g.measured for g in groups])
    clocks = np.concatenate([np.full(g.measured.size, g.rates.clock_hz) for g in groups])
    def work(efficiency, joules, split):
        return np.concatenate([g.clock_work(efficiency, joules, split) for g in groups])
    efficiency, cycles, joules, split = 1.0, 5000.0, 0.0, 0.0
    for _ in range(rounds):
        efficiency = float(min(EFFICIENCY_GRID, key=lambda e: objective(work(e, joules, split) + cycles / clocks,
                                                                         measured)))
        joules = float(min(JOULES_PER_FLOP_GRID, key=lambda j: objective(work(efficiency, j, split) + cycles / clocks,
                                                                          measured)))
        split = float(min(SPLIT_K_CYCLES_GRID, key=lambda x: objective(work(efficiency, joules, x) + cycles / clocks,
                                                                        measured)))
        fixed = work(efficiency, joules, split)
        cycles = float(min(LATENCY_CYCLES_GRID, key=lambda c: objective(fixed + c / clocks, measured)))
    return efficiency, cycles, joules, split


def errors(group: DeviceGemms, efficiency: float, extra_latency_s: float, clock: tuple | None = None) -> dict:
    predicted = group.predicted_clock(*clock) if clock else group.predicted(efficiency, extra_latency_s)
    error = predicted / group.measured - 1.0
    return {"count": error.size, "median_abs_error": float(np.median(np.abs(error))),
            "p90_abs_error": float(np.quantile(np.abs(error), 0.9)), "bias": float(np.median(error))}


def leave_one_device_out(rows: pd.DataFrame, devices: dict) -> pd.DataFrame:
    """Per device x dtype: errors uncalibrated (efficiency 1, no extra latency: `before`), with the constants
    fitted on the OTHER devices (`lodo`; their values in efficiency / extra_latency_us) and with the shipped
    DEFAULT_CONSTANTS (`shipped`: fitted on every device, in-sample)."""
    groups = device_gemms(rows, devices)
    lines = []
    for (device, dtype), held_out in groups.items():
        training = [g for (d, t), g in groups.items() if t == dtype and d != device]
        if not training:
            continue
        shipped = (DEFAULT_CONSTANTS.gemm_matrix_efficiency.get(dtype, 1.0),
                   DEFAULT_CONSTANTS.gemm_format_latency_s.get(dtype, 0.0))
        if dtype in CLOCK_DTYPES:
            efficiency, cycles, joules, split = clock = fit_dtype_clock(training)
            extra, lodo = float("nan"), (efficiency, 0.0, clock)
        else:
            (efficiency, extra), cycles, joules, split = fit_dtype(training), float("nan"), float("nan"), float("nan")
            lodo = (efficiency, extra)
        line = {"device": device, "dtype": dtype, "count": held_out.measured.size, "efficiency": efficiency,
                "extra_latency_us": extra * 1e6, "latency_cycles": cycles, "joules_per_tflop": joules * 1e12,
                "split_k_cycles": split}
        for label, values in (("before", (1.0, 0.0)), ("lodo", lodo), ("shipped", shipped)):
            line.update({f"{label} {k}": v for k, v in errors(held_out, *values).items() if k != "count"})
        lines.append(line)
    return pd.DataFrame(lines)


def fit_all(rows: pd.DataFrame, devices: dict) -> dict:
    """{dtype: (efficiency, extra latency)} fitted on every device (the values to ship)."""
    groups = device_gemms(rows, devices)
    return {dtype: fit_dtype([g for (_, t), g in groups.items() if t == dtype]) for dtype in FIT_DTYPES
            if any(t == dtype for _, t in groups)}


def clock_constants_with(fitted: dict, base=DEFAULT_CONSTANTS):
    """`base` with {dtype: (efficiency, latency cycles, joules per FLOP, split-K cycles)} of the clock-and-power form
    (fit_dtype_clock) added (its efficiency joins gemm_matrix_efficiency; the format latency of those dtypes is then
    unused)."""
    efficiency = {**base.gemm_matrix_efficiency, **{d: values[0] for d, values in fitted.items()}}
    return replace(base, gemm_matrix_efficiency=efficiency,
                   gemm_latency_cycles={d: values[1] for d, values in fitted.items()},
                   gemm_power_j_per_flop={d: values[2] for d, values in fitted.items() if values[2] > 0},
                   gemm_split_k_cycles={d: values[3] for d, values in fitted.items() if values[3] > 0})


def constants_with(fitted: dict, base=DEFAULT_CONSTANTS):
    """`base` with the fitted per-dtype GEMM constants."""
    return replace(base, gemm_matrix_efficiency={d: e for d, (e, _) in fitted.items()},
                   gemm_format_latency_s={d: x for d, (_, x) in fitted.items()})
