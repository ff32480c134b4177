"""Fit the realistic method's GEMM constants per dtype on the measured tables, leave-one-device-out.

The realistic GEMM time of a device (engine/estimators/realistic.py) uses the workbook's achievable_matrix_fraction,
achievable_memory_bandwidth_fraction and kernel_latency (blank: the defaults). Per dtype two software constants adjust
it, the same on every device (RealisticConstants), so a device known only from the workbook gets them too:

    matrix rate     = peak x achievable_matrix_fraction x gemm_matrix_efficiency[dtype]
    device latency  = max(0, kernel_latency + gemm_format_latency_s[dtype])

The clock-and-power form (CLOCK_DTYPES) replaces the latency and caps the matrix rate by the board's power:

    device latency  = gemm_latency_cycles[dtype] / clock_hz (+ gemm_split_k_cycles[dtype] / clock_hz if split-K)
    matrix rate     = min(peak x achievable_matrix_fraction x gemm_matrix_efficiency[dtype],
                          (tdp_w - static_power_w) / gemm_power_j_per_flop[dtype] over the cores kept busy)

(a chip-level bound), and in the warm condition a tiling candidate adds gemm_overlap_loss x min(compute, memory) and
waves x k steps x gemm_k_step_cycles / clock_hz (tiling.candidate_times); fp8 and fp8_g128 add their tile store
(TILE_STORE_BYTES_PER_VALUE), can add gemm_native_scale_cycles (FIT_NATIVE_SCALE off; h/gemm9), and fp8_g128 on matrix
units without native block scales (Hopper) divides the matrix rate by 1 + gemm_block_scale_flops x block_scale_ratio,
one value per framework (its kernel's promotion; h/gemm10); the warm fp8 tables' quantize constants are then refitted
for Hopper's matrix units (QUANTIZE_BY_SCALE_UNITS, fit_quantize.py; h/gemm11), with a tile rule per framework at
m > 128 (FIT_LARGE_M_TILES, fit_tiles.py; h/gemm12). Both forms are fitted by coordinate descent over 1-D grids,
minimising median |error| + p90 |error| / 2 (engine.calibration.fit.objective) over the training devices' rows pooled,
on engine.calibration.fit.GemmModel (the realistic GEMM time as a fast function of its constants).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from engine.calibration.fit import GemmModel, objective
from engine.estimators.gemm_condition import (QUANTIZE_BYTES_PER_VALUE, block_scale_ratio, epilogue_s_per_value,
                                              native_block_scales, native_scale_latency_applies, warm_byte_scale)
from engine.hardware.dtypes import compute_dtype
from engine.estimators.realistic import DEFAULT_CONSTANTS, DeviceRates
from engine.calibration.silicon.conditions import quantize_key, shipped_clock_of
from engine.calibration.silicon.fit_quantize import by_units
from engine.calibration.silicon.fit_nvfp4 import (K_STEP_BY_FRAMEWORK_DTYPES, excluding, k_step_by_framework,
                                                  no_split_k_mask, table_dtype)
from engine.calibration.silicon.fit_tiles import fit_large_m_tiles, large_m_tiles
from engine.calibration.silicon.fit_constants import clock_constants_with, constants_with  # noqa: F401  (fit.NAME)
from engine.calibration.silicon.score import gemm_kernels, measured_kernels
from engine.calibration.silicon.fit_grids import (  # noqa: F401  (fit's names; fit.NAME patches them here)
    FIT_DTYPES, FRAMEWORKS, EFFICIENCY_GRID, EXTRA_LATENCY_GRID, CLOCK_DTYPES, LATENCY_CYCLES_GRID, JOULES_PER_FLOP_GRID,
    JOULES_PER_FLOP_GRIDS, K_STEP_CYCLES_GRIDS, SPLIT_K_CYCLES_GRID, OVERLAP_LOSS_GRID, SHARED_LATENCY_DTYPES,
    BLOCK_SCALE_FLOPS_GRID, FIT_BLOCK_SCALE,
    K_STEP_CYCLES_GRID, K_STEP_DTYPES, EPILOGUE_BYTES_PER_VALUE, TILE_STORE_BYTES_PER_VALUE, NATIVE_SCALE_CYCLES_GRID,
    NATIVE_SCALE_DTYPES, FIT_NATIVE_SCALE, QUANTIZE_LATENCY_GRID, QUANTIZE_BYTES_GRID, QUANTIZE_BY_SCALE_UNITS,
    LARGE_M_TILE_DTYPES, FIT_LARGE_M_TILES, RULE_REFITS_PROMOTION, LEAST_N_K, EXCLUDED)


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
    """One device's rows of one dtype (and one framework, where the rows say): the fast GEMM model under the
    timing `condition` (gemm_condition.py: "warm" for the tables), the measured times and the device's constants."""

    def __init__(self, rows: pd.DataFrame, hardware, condition: str = "warm", tile_store: dict | None = None):
        """`tile_store`: {dtype: gemm_tile_store_bytes_per_value} (default TILE_STORE_BYTES_PER_VALUE)."""
        columns, index = gemm_kernels(rows.reset_index(drop=True))
        table = {key: values[np.argsort(index)] for key, values in columns.items()}
        warm = condition == "warm"
        scale = warm_byte_scale(table["weight_bytes"], table["activation_bytes"], hardware) if warm else 1.0
        epilogue = epilogue_s_per_value(hardware, replace(DEFAULT_CONSTANTS, gemm_condition=condition,
                                                          gemm_epilogue_bytes_per_value=EPILOGUE_BYTES_PER_VALUE))
        store = (TILE_STORE_BYTES_PER_VALUE if tile_store is None else tile_store).get(str(table["dtype"][0]), 0.0)
        if warm and store and hardware.sram_bandwidth_bytes_per_cycle_per_core:   # gemm_condition.tile_store_s_per_value
            epilogue += store / hardware.sram_bandwidth_bytes_per_cycle_per_core / hardware.clock_hz
        self.model = GemmModel(table, hardware, byte_scale=scale, epilogue_s=epilogue)
        self.measured = rows["time_s"].to_numpy(dtype=float)
        self.shapes = rows.reindex(columns=["device", "dtype", "framework", "m", "n", "k", "time_s"]).reset_index(drop=True)
        self.rates = DeviceRates.of(hardware)
        self.dtype = str(table["dtype"][0])
        self.peak_flops = hardware.matrix_flops_per_s(self.dtype)
        self.framework = str(rows["framework"].iloc[0]) if "framework" in rows else ""
        self.quantize_key = quantize_key(self.framework, warm and native_block_scales(hardware))
        # a block-scaled format's promotion on the vector units, per FLOP per output value and group (0: none)
        self.block_scale_ratio = block_scale_ratio(hardware, self.dtype) if warm else 0.0
        # pays gemm_native_scale_cycles (an fp8-family dtype on matrix units with native block scales, warm)
        self.native_scale = warm and native_scale_latency_applies(hardware, self.dtype)
        # the warm fp8 tables' activation-quantize kernel: its stream at the achievable bandwidth (+ a fitted latency)
        quantized = warm and compute_dtype(self.dtype) in ("fp8", "fp4")    # fp4: nvfp4's e2m1 values + e4m3 scales
        self.quantize_stream_s = (table["m"] * table["k"] * QUANTIZE_BYTES_PER_VALUE
                                  / (self.rates.bandwidth * self.rates.memory_fraction)) if quantized else None
        self.large_m_eligible = warm and self.dtype in LARGE_M_TILE_DTYPES and not native_block_scales(hardware)
        self.large_m_tile, self.excluded = "", None     # its kernel's tiles at large m (fit_tiles.large_m_tiles)
        self.no_split_k = no_split_k_mask(self.model.terms, rows, warm)   # fit_nvfp4.py (None: split-K free)

    def quantize_s(self, quantize_latency: dict | None, quantize_bytes: dict | None = None) -> np.ndarray | float:
        """The activation-quantize kernel's time per row ({quantize_key, else framework: latency s}; 0 where not
        quantized; `quantize_bytes`: {the same key: bytes per activation value}, default QUANTIZE_BYTES_PER_VALUE)."""
        key = self.quantize_key if self.quantize_key in (quantize_latency or {}) else self.framework
        if self.quantize_stream_s is None or not quantize_latency or key not in quantize_latency:
            return 0.0
        scale = (quantize_bytes or {}).get(key, QUANTIZE_BYTES_PER_VALUE) / QUANTIZE_BYTES_PER_VALUE
        return quantize_latency[key] + self.quantize_stream_s * scale

    def predicted(self, efficiency: float, extra_latency_s: float, quantize_latency: dict | None = None) -> np.ndarray:
        rates = self.rates
        return self.model.time(rates.matrix_fraction * efficiency, rates.memory_fraction,
                               max(rates.kernel_latency_s + extra_latency_s, 0.0)) + self.quantize_s(quantize_latency)

    def clock_work(self, efficiency: float, joules_per_flop: float, split_k_cycles: float = 0.0,
                   overlap_loss: float = 0.0, block_scale_flops: float | dict = 0.0,
                   k_step_cycles: float = 0.0) -> np.ndarray:
        """The clock-and-power form's time without its latency (`block_scale_flops`: gemm_block_scale_flops, the
        matrix rate x 1 / (1 + flops x block_scale_ratio); a float, or {framework: flops} as the fit gives it)."""
        power = np.inf      # the chip's power-limited MAC/s, a bound on its aggregate rate (tiling.candidate_times)
        if isinstance(block_scale_flops, dict):     # per framework (the framework's block-scaled kernel)
            block_scale_flops = block_scale_flops.get(self.framework, 0.0)
        if joules_per_flop > 0 and self.rates.dynamic_power_w:
            power = self.rates.dynamic_power_w / (2.0 * joules_per_flop)
        if isinstance(k_step_cycles, dict):         # per framework (fit_nvfp4.py)
            k_step_cycles = k_step_cycles.get(self.framework, 0.0)
        matrix = self.rates.matrix_fraction * efficiency / (1.0 + block_scale_flops * self.block_scale_ratio)
        return self.model.work(matrix, self.rates.memory_fraction, split_k_cycles / self.rates.clock_hz, power,
                               overlap_loss, k_step_cycles / self.rates.clock_hz,
                               excluding(self.excluded, self.no_split_k))

    def predicted_clock(self, efficiency: float, latency_cycles: float, joules_per_flop: float,
                        split_k_cycles: float = 0.0, overlap_loss: float = 0.0, block_scale_flops: float | dict = 0.0,
                        k_step_cycles: float = 0.0, quantize_latency: dict | None = None,
                        quantize_bytes: dict | None = None, native_scale_cycles: float = 0.0) -> np.ndarray:
        return (self.clock_work(efficiency, joules_per_flop, split_k_cycles, overlap_loss, block_scale_flops,
                                k_step_cycles)
                + self.latency_cycles(latency_cycles, native_scale_cycles) / self.rates.clock_hz
                + self.quantize_s(quantize_latency, quantize_bytes))

    def latency_cycles(self, latency_cycles: float, native_scale_cycles: float = 0.0) -> float:
        """The warm latency in core cycles: gemm_latency_cycles (+ gemm_native_scale_cycles where it applies)."""
        return latency_cycles + (native_scale_cycles if self.native_scale else 0.0)


def device_gemms(rows: pd.DataFrame, devices: dict, condition: str = "warm", tile_store: dict | None = None) -> dict:
    """{(device, dtype, framework): DeviceGemms} (framework "" where the rows have none)."""
    rows = rows if "framework" in rows else rows.assign(framework="")
    return {key: DeviceGemms(part, devices[key[0]], condition, tile_store)
            for key, part in rows.groupby(["device", "dtype", "framework"])}


def pooled_objective(groups: list, efficiency: float, extra_latency_s: float, quantize: dict | None = None) -> float:
    predicted = np.concatenate([g.predicted(efficiency, extra_latency_s, quantize) for g in groups])
    measured = np.concatenate([g.measured for g in groups])
    return objective(predicted, measured)


def _quantized_frameworks(groups: list) -> list[str]:
    return sorted({g.framework for g in groups if g.quantize_stream_s is not None})


def fit_dtype(groups: list, rounds: int = 3) -> tuple[float, float]:
    """(gemm_matrix_efficiency, gemm_format_latency_s) minimising the pooled objective (warm fp8 groups: with
    each framework's activation-quantize latency fitted alongside, fit_quantize_latency)."""
    efficiency, extra, quantize = 1.0, 0.0, {f: 0.0 for f in _quantized_frameworks(groups)}
    for _ in range(rounds):
        efficiency = float(min(EFFICIENCY_GRID, key=lambda e: pooled_objective(groups, e, extra, quantize)))
        extra = float(min(EXTRA_LATENCY_GRID, key=lambda x: pooled_objective(groups, efficiency, x, quantize)))
        for framework in quantize:
            quantize[framework] = float(min(QUANTIZE_LATENCY_GRID, key=lambda q: pooled_objective(
                groups, efficiency, extra, {**quantize, framework: q})))
    return efficiency, extra


def fit_dtype_clock(groups: list, rounds: int = 3) -> tuple[float, float, float, float, float]:
    """(gemm_matrix_efficiency, gemm_latency_cycles, gemm_power_j_per_flop, gemm_split_k_cycles, gemm_overlap_loss)
    of the clock-and-power form minimising the pooled objective (coordinate descent over EFFICIENCY_GRID,
    JOULES_PER_FLOP_GRID, SPLIT_K_CYCLES_GRID, OVERLAP_LOSS_GRID and LATENCY_CYCLES_GRID); warm fp8 groups: each
    framework's activation-quantize latency (QUANTIZE_LATENCY_GRID) is fitted alongside (fit_dtype_clock_quantize)."""
    return fit_dtype_clock_quantize(groups, rounds)[:5]


def fit_dtype_clock_quantize(groups: list, rounds: int = 3, latency_cycles: float | None = None,
                             joules_per_flop: float | None = None) -> tuple[float, float, float, float, float, dict]:
    """fit_dtype_clock's five constants and {framework: activation-quantize latency s} (empty: none quantized);
    `latency_cycles` given: held at that value (SHARED_LATENCY_DTYPES: bf16's), not fitted; `joules_per_flop` given:
    the power cap held (it binds the model condition too: fit_all's `hold_power`). The form before h/gemm5: no
    block-scale promotion, the quantize kernel at QUANTIZE_BYTES_PER_VALUE, no k-step cycles
    (fit_dtype_clock_block_scaled fits all three)."""
    return fit_dtype_clock_block_scaled(groups, rounds, latency_cycles, joules_per_flop, block_scale=False,
                                        quantize_bytes=False, k_step=False)[:6]


def fit_dtype_clock_block_scaled(groups: list, rounds: int = 3, latency_cycles: float | None = None,
                                 joules_per_flop: float | None = None, block_scale: bool = True,
                                 quantize_bytes: bool = True, k_step: bool = False,
                                 native_scale: bool = False) -> tuple:
    """fit_dtype_clock_quantize's six values, {framework: gemm_block_scale_flops} (BLOCK_SCALE_FLOPS_GRID, per
    framework of the groups with a vector-unit promotion, DeviceGemms.block_scale_ratio; {}: none or `block_scale`
    False), {framework: the quantize kernel's bytes per
    activation value} (QUANTIZE_BYTES_GRID; `quantize_bytes` False: QUANTIZE_BYTES_PER_VALUE; `block_scale` False:
    no promotion fitted), gemm_k_step_cycles (K_STEP_CYCLES_GRID where `k_step`, else 0) and
    gemm_native_scale_cycles (NATIVE_SCALE_CYCLES_GRID where `native_scale` and some group pays it, else 0).
    The k-step cycles move the efficiency, latency and overlap loss with them, so each grid value gets its own
    coordinate descent and the one of the least objective is kept."""
    measured = np.concatenate([g.measured for g in groups])
    best, best_score = None, np.inf
    for step in (K_STEP_CYCLES_GRIDS.get(table_dtype(groups), K_STEP_CYCLES_GRID) if k_step else [0.0]):
        fitted = _fit_clock_at_step(groups, rounds, latency_cycles, joules_per_flop, block_scale, quantize_bytes,
                                    float(step), native_scale)
        predicted = np.concatenate([g.predicted_clock(*fitted[:5], fitted[6], fitted[8], quantize_latency=fitted[5],
                                                      quantize_bytes=fitted[7],
                                                      native_scale_cycles=fitted[9].get(g.framework, 0.0))
                                    for g in groups])
        score = objective(predicted, measured)
        if score < best_score:
            best, best_score = fitted, score
    if k_step and table_dtype(groups) in K_STEP_BY_FRAMEWORK_DTYPES:     # per framework (fit_nvfp4.py), then refitted
        steps = k_step_by_framework(groups, best, K_STEP_CYCLES_GRIDS[table_dtype(groups)])
        best = _fit_clock_at_step(groups, rounds, latency_cycles, joules_per_flop, block_scale, quantize_bytes,
                                  steps, native_scale)
    return best


def _fit_clock_at_step(groups: list, rounds: int, latency_cycles: float | None, joules_per_flop: float | None,
                       block_scale: bool, quantize_bytes: bool, step: float, native_scale: bool = False) -> tuple:
    """fit_dtype_clock_block_scaled's values with gemm_k_step_cycles held at `step`."""
    fit_bytes = quantize_bytes
    measured = np.concatenate([g.measured for g in groups])
    clocks = np.concatenate([np.full(g.measured.size, g.rates.clock_hz) for g in groups])
    # gemm_native_scale_cycles per framework (a property of the framework's kernels, like its quantize kernel)
    natives = sorted({g.framework for g in groups if g.native_scale}) if native_scale else []
    native = {f: 0.0 for f in natives}
    def native_cycles(values):
        return np.concatenate([np.full(g.measured.size, values.get(g.framework, 0.0) if g.native_scale else 0.0)
                               for g in groups])
    # gemm_block_scale_flops per framework of the groups with a vector-unit promotion (block_scale_ratio > 0; h/gemm10)
    block = {f: 0.0 for f in sorted({g.framework for g in groups if g.block_scale_ratio > 0})} if block_scale else {}
    def work(efficiency, joules, split, overlap, block_flops=None, step_cycles=None):
        block_flops = block if block_flops is None else block_flops
        step_cycles = step if step_cycles is None else step_cycles
        return np.concatenate([g.clock_work(efficiency, joules, split, overlap, block_flops, step_cycles)
                               for g in groups])
    def extra(quantize, qbytes=None):
        qbytes = quantize_bytes if qbytes is None else qbytes
        return np.concatenate([np.broadcast_to(g.quantize_s(quantize, qbytes), g.measured.shape) for g in groups])
    efficiency, split, overlap = 1.0, 0.0, 0.0
    cycles, joules = 5000.0 if latency_cycles is None else latency_cycles, 0.0
    quantize = {f: 0.0 for f in _quantized_frameworks(groups)}
    quantize_bytes = {f: QUANTIZE_BYTES_PER_VALUE for f in quantize}
    cycles_grid = LATENCY_CYCLES_GRID if latency_cycles is None else [latency_cycles]
    joules_grid = (JOULES_PER_FLOP_GRIDS.get(table_dtype(groups), JOULES_PER_FLOP_GRID) if joules_per_flop is None
                   else [joules_per_flop])
    joules = joules if joules_per_flop is None else joules_per_flop
    for _ in range(rounds):
        fixed = (cycles + native_cycles(native)) / clocks + extra(quantize)
        efficiency = float(min(EFFICIENCY_GRID, key=lambda e: objective(work(e, joules, split, overlap) + fixed,
                                                                          measured)))
        joules = float(min(joules_grid, key=lambda j: objective(work(efficiency, j, split, overlap) + fixed,
                                                                          measured)))
        split = float(min(SPLIT_K_CYCLES_GRID, key=lambda x: objective(work(efficiency, joules, x, overlap) + fixed,
                                                                        measured)))
        overlap = float(min(OVERLAP_LOSS_GRID, key=lambda a: objective(work(efficiency, joules, split, a) + fixed,
                                                                        measured)))
        for framework in block:
            block[framework] = float(min(BLOCK_SCALE_FLOPS_GRID, key=lambda b: objective(
                work(efficiency, joules, split, overlap, {**block, framework: b}) + fixed, measured)))
        done = work(efficiency, joules, split, overlap)
        cycles = float(min(cycles_grid, key=lambda c: objective(done + (c + native_cycles(native)) / clocks
                                                                + extra(quantize), measured)))
        for framework in natives:
            native[framework] = float(min(NATIVE_SCALE_CYCLES_GRID, key=lambda x: objective(
                done + (cycles + native_cycles({**native, framework: x})) / clocks + extra(quantize), measured)))
        done = done + (cycles + native_cycles(native)) / clocks
        for framework in quantize:
            quantize[framework] = float(min(QUANTIZE_LATENCY_GRID, key=lambda q: objective(
                done + extra({**quantize, framework: q}), measured)))
            if fit_bytes:
                quantize_bytes[framework] = float(min(QUANTIZE_BYTES_GRID, key=lambda b: objective(
                    done + extra(quantize, {**quantize_bytes, framework: b}), measured)))
    return efficiency, cycles, joules, split, overlap, quantize, block, quantize_bytes, step, native


def predictions(groups: list, efficiency: float, extra_latency_s: float, clock: tuple | None = None,
                quantize: dict | None = None, quantize_bytes: dict | None = None, native: dict | None = None) -> list:
    """Per group (DeviceGemms): its predicted seconds (`native`: {framework: gemm_native_scale_cycles})."""
    return [g.predicted_clock(*clock, quantize_latency=quantize, quantize_bytes=quantize_bytes,
                              native_scale_cycles=(native or {}).get(g.framework, 0.0))
            if clock else g.predicted(efficiency, extra_latency_s, quantize) for g in groups]


def errors(groups: list, *values) -> dict:
    """|error| median / p90 and bias over `groups` (DeviceGemms) pooled (`values`: predictions')."""
    predicted = np.concatenate(predictions(groups, *values))
    error = predicted / np.concatenate([g.measured for g in groups]) - 1.0
    return {"count": error.size, "median_abs_error": float(np.median(np.abs(error))),
            "p90_abs_error": float(np.quantile(np.abs(error), 0.9)), "bias": float(np.median(error))}


def leave_one_device_out(rows: pd.DataFrame, devices: dict, condition: str = "warm",
                         residuals: list | None = None, held_out: set | None = None) -> pd.DataFrame:
    """Per device x dtype: errors uncalibrated (efficiency 1, no extra latency: `before`), with the constants
    fitted on the OTHER devices (`lodo`; their values in efficiency / extra_latency_us ...; the fp8 tables'
    activation-quantize latencies in quantize_us) and with the shipped DEFAULT_CONSTANTS (`shipped`: their
    quantize latencies from conditions.TABLE_QUANTIZE_LATENCY_S), all under the tables' timing `condition`.
    `residuals`: a list that gets, per device x dtype, its held-out rows with the lodo prediction (predicted_s;
    gemm_residuals.py groups their errors by shape regime). `held_out`: the devices scored (default every one)."""
    from engine.calibration.silicon.conditions import quantize_bytes_of, quantize_latency_of
    groups = device_gemms(rows, devices, condition)
    shipped_store = DEFAULT_CONSTANTS.gemm_tile_store_bytes_per_value     # the shipped scores: the engine's tile store
    shipped_groups = (groups if shipped_store == TILE_STORE_BYTES_PER_VALUE
                      else device_gemms(rows, devices, condition, shipped_store))
    lines, bf16_cycles = [], {}
    for device, dtype in sorted({(d, t) for d, t, _ in groups if held_out is None or d in held_out}):  # bf16 first
        held_out = [g for (d, t, _), g in groups.items() if (d, t) == (device, dtype)]
        training = [g for (d, t, _), g in groups.items() if t == dtype and d != device]
        if not training:
            continue
        shipped = (DEFAULT_CONSTANTS.gemm_matrix_efficiency.get(dtype, 1.0),
                   DEFAULT_CONSTANTS.gemm_format_latency_s.get(dtype, 0.0), shipped_clock_of(dtype),
                   quantize_latency_of(dtype), quantize_bytes_of(dtype))
        if dtype in CLOCK_DTYPES:
            shared = bf16_cycles.get(device) if dtype in SHARED_LATENCY_DTYPES else None
            fitted = by_units(QUANTIZE_BY_SCALE_UNITS, training, fit_dtype_clock_block_scaled(
                training, latency_cycles=shared, block_scale=FIT_BLOCK_SCALE, k_step=dtype in K_STEP_DTYPES,
                native_scale=FIT_NATIVE_SCALE and dtype in NATIVE_SCALE_DTYPES))
            rules, fitted = (fit_large_m_tiles(training, fitted, RULE_REFITS_PROMOTION)   # its promotion with the rule
                             if FIT_LARGE_M_TILES and dtype in LARGE_M_TILE_DTYPES else ({}, fitted))
            efficiency, cycles, joules, split, overlap, quantize, block, qbytes, step, native = fitted
            bf16_cycles.update({device: cycles} if dtype == "bf16" else {})
            extra, lodo = float("nan"), (efficiency, 0.0, fitted[:5] + (block, step), quantize, qbytes, native)
        else:
            (efficiency, extra), cycles, joules, split = fit_dtype(training), float("nan"), float("nan"), float("nan")
            overlap = block = float("nan")
            quantize = fit_quantize_latency(training, efficiency, extra)
            lodo, qbytes, rules = (efficiency, extra, None, quantize), {}, {}
        line = {"device": device, "dtype": dtype, "count": sum(g.measured.size for g in held_out),
                "efficiency": efficiency, "extra_latency_us": extra * 1e6, "latency_cycles": cycles,
                "joules_per_tflop": joules * 1e12, "split_k_cycles": split, "overlap_loss": overlap,
                "block_scale_flops": block, "k_step_cycles": step if dtype in CLOCK_DTYPES else float("nan"),
                "quantize_us": ", ".join(f"{f} {v * 1e6:.2f}" + (f" ({qbytes[f]:g} B)" if dtype in CLOCK_DTYPES else "")
                                         for f, v in quantize.items()),
                "large_m_tiles": ", ".join(f"{f} {r or 'free'}" for f, r in rules.items())}
        shipped_held_out = [g for (d, t, _), g in shipped_groups.items() if (d, t) == (device, dtype)]
        for label, values, mine in (("before", (1.0, 0.0, None, None), shipped_held_out), ("lodo", lodo, held_out),
                                    ("shipped", shipped, shipped_held_out)):
            with large_m_tiles(mine, rules if label == "lodo" else {}):
                line.update({f"{label} {k}": v for k, v in errors(mine, *values).items() if k != "count"})
                if label == "lodo" and residuals is not None:
                    residuals.extend(g.shapes.assign(predicted_s=p) for g, p in zip(mine, predictions(mine, *lodo)))
        lines.append(line)
    return pd.DataFrame(lines)


def fit_quantize_latency(groups: list, efficiency: float, extra_latency_s: float) -> dict:
    """{framework: activation-quantize latency} of warm fp8 groups for the additive form's fitted constants."""
    quantize = {f: 0.0 for f in _quantized_frameworks(groups)}
    for _ in range(2):
        for framework in quantize:
            quantize[framework] = float(min(QUANTIZE_LATENCY_GRID, key=lambda q: pooled_objective(
                groups, efficiency, extra_latency_s, {**quantize, framework: q})))
    return quantize


def fit_all(rows: pd.DataFrame, devices: dict, condition: str = "warm", hold_power: bool = False) -> dict:
    """{dtype: fitted constants} on every device (the values to ship): CLOCK_DTYPES (efficiency, latency cycles,
    joules per FLOP, split-K cycles, overlap loss, {framework: quantize s}), others (efficiency, extra latency).
    `hold_power`: the shipped gemm_power_j_per_flop held (it also binds the model condition)."""
    groups = device_gemms(rows, devices, condition)
    fitted = {}
    for dtype in FIT_DTYPES:
        mine = [g for (_, t, _), g in groups.items() if t == dtype]
        if mine and dtype in CLOCK_DTYPES:
            shared = fitted["bf16"][1] if dtype in SHARED_LATENCY_DTYPES and "bf16" in fitted else None
            held = (DEFAULT_CONSTANTS.gemm_power_j_per_flop.get(dtype, 0.0) if hold_power and dtype != "nvfp4"
                    else None)      # nvfp4's cap binds the tables' condition only (conditions.TABLE_NVFP4_CLOCK): free
            fitted[dtype] = by_units(QUANTIZE_BY_SCALE_UNITS, mine, fit_dtype_clock_block_scaled(
                mine, latency_cycles=shared, joules_per_flop=held, block_scale=FIT_BLOCK_SCALE,
                k_step=dtype in K_STEP_DTYPES, native_scale=FIT_NATIVE_SCALE and dtype in NATIVE_SCALE_DTYPES))
        elif mine:
            fitted[dtype] = fit_dtype(mine)
    return fitted

