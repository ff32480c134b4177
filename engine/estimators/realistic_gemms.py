"""The realistic method's records (KernelRows, TimeChain) and its GEMM timing: discrete tiles with tile and wave
quantization, split-K and achievable rates (engine/estimators/tiling.py), GEMVs streamed on the vector units
(engine/estimators/realistic.py describes the chain of times)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.common.arrays import all_true, any_true
from engine.estimators.gemm_condition import (
    QUANTIZE_BYTES_PER_VALUE, RowDtypes, block_scale_efficiency, check_condition, clock_and_power,
    condition_efficiency, condition_latency, epilogue_s_per_value, k_step_cycles, native_block_scales, native_scale_cycles,
    overlap_loss, per_row, tile_store_s_per_value, warm_byte_scale)
from engine.estimators.moe_4bit import four_bit_scales
from engine.estimators.realistic_constants import DeviceRates, RealisticConstants
from engine.estimators.row_groups import RowGroups
from engine.estimators.structure_memo import remembered
from engine.estimators.tiling import SMALL_TABLE_ROWS, GemmRates, Tiling, choose_tilings
from engine.estimators.tiling_pass import pass_tilings
from engine.hardware.device import Hardware
from engine.hardware.dtypes import is_block_scaled

@dataclass(frozen=True, slots=True)
class KernelRows:
    """The kernel table being timed and what every timing step reads (per-row arrays span the whole table)."""

    out: dict                       # the roofline's columns (the table), completed in place
    row_groups: RowGroups
    hardware: Hardware
    rates: DeviceRates
    per_core_macs: np.ndarray       # peak matrix MAC/s of one core for the row's dtype
    value_bytes: np.ndarray         # bytes per value of the row's dtype
    constants: RealisticConstants
    host_launch_s: float            # the host's launch per kernel (eager mode; 0 under graph capture)


@dataclass(frozen=True, slots=True)
class TimeChain:
    """Per-row arrays the timing steps fill in place (the record is frozen, its arrays are not).

    ideal, t1, t2, t3: the chain of the module docstring (roofline, + tiles, + waves, + efficiency);
    compute, memory: the achievable compute and memory parts; latency, floor: the kernel's fixed device time and
    the least time of an element-wise kernel."""

    ideal: np.ndarray
    t1: np.ndarray
    t2: np.ndarray
    t3: np.ndarray
    compute: np.ndarray
    memory: np.ndarray
    latency: np.ndarray
    floor: np.ndarray


@dataclass(frozen=True, slots=True)
class GemmShapes:
    """The GEMM rows being tiled: shape, bytes, per-core MAC rate and bytes per value (arrays over those rows)."""

    m: np.ndarray
    n: np.ndarray
    k: np.ndarray
    batch: np.ndarray
    nbytes: np.ndarray
    per_core_macs: np.ndarray
    value_bytes: np.ndarray


def _gemm_format_constants(out, rows, constants, dtypes: RowDtypes) -> tuple[np.ndarray, np.ndarray]:
    """Per GEMM row: the matrix efficiency of its compute format and the extra latency (see RealisticConstants)."""
    if not (constants.gemm_matrix_efficiency or constants.gemm_format_latency_s):
        return np.ones(rows.sum()), np.zeros(rows.sum())
    return (per_row(out, rows, constants.gemm_matrix_efficiency, 1.0, dtypes),
            per_row(out, rows, constants.gemm_format_latency_s, 0.0, dtypes))


def tiling_classes(efficiency, memory_efficiency=None, split_k_latency_s=None, power_macs_per_s=None, overlap=None,
                   k_step_s=None, epilogue_s=None):
    """The distinct (matrix efficiency, memory efficiency, split-K latency, chip power-limited MAC/s, overlap loss,
    k-step seconds) of the GEMM rows (usually one or two) and each row's class: (classes, inverse), inverse None for
    one class."""
    memory_efficiency = np.ones_like(efficiency) if memory_efficiency is None else memory_efficiency
    split = np.zeros_like(efficiency) if split_k_latency_s is None else split_k_latency_s
    power = np.full_like(efficiency, np.inf) if power_macs_per_s is None else power_macs_per_s
    overlap = np.zeros_like(efficiency) if overlap is None else overlap
    k_step = np.zeros_like(efficiency) if k_step_s is None else k_step_s
    epilogue = np.zeros_like(efficiency) + (0.0 if epilogue_s is None else epilogue_s)   # per device or per row
    stacked = np.stack([efficiency, memory_efficiency, split, power, overlap, k_step, epilogue], axis=1)
    if len(stacked) and all_true(stacked == stacked[0]):           # the usual case: one class of GEMM
        return stacked[:1].tolist(), None
    pairs, inverse = np.unique(stacked, axis=0, return_inverse=True)
    return pairs.tolist(), inverse.reshape(-1)


def _tilings_by_class(shapes: GemmShapes, table: KernelRows, classes: tuple):
    """choose_tilings once per tiling class (tiling_classes), merged back per row."""
    rates = table.rates
    pairs, inverse = classes
    if inverse is None and not pairs[0][6] and 0 < len(shapes.m) <= SMALL_TABLE_ROWS:   # one class: the kept plan
        tiling = _one_pass_tilings(shapes, table, pairs[0])                          # (it has no epilogue term)
        if tiling is not None:
            return tiling
    parts = {}
    for number, (value, memory_value, split_value, power_value, overlap_value, step_value,
                 epilogue) in enumerate(pairs):
        mine = slice(None) if inverse is None else inverse == number      # one class: every row, no copies
        gemm_rates = GemmRates(shapes.per_core_macs[mine], shapes.value_bytes[mine], rates.matrix_fraction * value,
                               rates.bandwidth, min(1.0, rates.memory_fraction * memory_value), rates.kernel_latency_s,
                               float(split_value), float(power_value), float(overlap_value), float(step_value),
                               float(epilogue))
        parts[number] = (mine, choose_tilings(shapes.m[mine], shapes.n[mine], shapes.k[mine], shapes.batch[mine],
                                             shapes.nbytes[mine], table.hardware, gemm_rates))
    if len(parts) == 1:
        return next(iter(parts.values()))[1]
    merged = {}
    for name in Tiling.__dataclass_fields__:
        column = np.empty(shapes.m.size)
        for mine, tiling in parts.values():
            column[mine] = getattr(tiling, name)
        merged[name] = column
    return Tiling(**merged)


def _one_pass_tilings(shapes: GemmShapes, table: KernelRows, values: list) -> Tiling | None:
    """tiling_pass.pass_tilings of the GEMM rows of one tiling class and one bytes per value (None: choose_tilings)."""
    value_bytes = shapes.value_bytes.tolist()
    if value_bytes.count(value_bytes[0]) != len(value_bytes) or shapes.per_core_macs.dtype != np.float64:
        return None
    rates, (value, memory_value, split_value, power_value, overlap_value, step_value, _) = table.rates, values
    gemm_rates = GemmRates(shapes.per_core_macs, shapes.value_bytes, rates.matrix_fraction * value, rates.bandwidth,
                           min(1.0, rates.memory_fraction * memory_value), rates.kernel_latency_s, float(split_value),
                           float(power_value), float(overlap_value), float(step_value))
    return pass_tilings(shapes.m, shapes.n, shapes.k, shapes.batch, shapes.nbytes, shapes.per_core_macs,
                        float(value_bytes[0]), table.hardware, gemm_rates)


def is_expert_gemm(names) -> np.ndarray:
    """MoE grouped-GEMM rows (engine/decomposition/moe.py: Expert_up, Expert_gate, Expert_down, any d/p prefix)."""
    return np.array(["Expert_" in name for name in np.asarray(names).astype(str).ravel().tolist()],
                    dtype=bool).reshape(np.shape(names))


def _gated_expert_rows(table: KernelRows, rows: np.ndarray, grouped: np.ndarray) -> np.ndarray:
    """Of the GEMM rows `rows`, the grouped ones of gated experts (their phase has Expert_gate rows): their kernels
    quantize inside the gated activation and the permutation (RealisticConstants.moe_fused_quantize)."""
    phases = table.row_groups.strings("phase")
    gate = table.row_groups.map("name", lambda name: str(name).endswith("Expert_gate")).astype(bool)
    return grouped & np.isin(phases[rows], np.unique(phases[gate]))


def _block_scaled_expert_factor(table: KernelRows, rows: np.ndarray, factor: float) -> np.ndarray:
    """Per GEMM row of `rows`: `factor` on grouped GEMMs of a software block-scaled format (fp8_g128), 1 elsewhere
    (RealisticConstants.moe_block_scaled_efficiency; the caller checks the device has no microscaled matrix format)."""
    groups = table.row_groups
    grouped = is_expert_gemm(groups.group_strings("name"))[groups.inverse[rows]]
    block = groups.map("dtype", lambda dtype: bool(is_block_scaled(str(dtype)))).astype(bool)[rows]
    return np.where(grouped & block, factor, 1.0)


def _grouped_latency(table: KernelRows, rows: np.ndarray, latency: np.ndarray, grouped: np.ndarray, fused,
                     dtypes: RowDtypes) -> np.ndarray:
    """The GEMM rows' latency with the grouped MoE rows' own terms (RealisticConstants' MoE block): the grouped
    kernel's fixed time (moe_gemm_latency_s, else the condition's), the fused quantization's bytes, and the launch's
    walk over every expert the device holds (cycles per format)."""
    out, rates, constants = table.out, table.rates, table.constants
    if constants.moe_gemm_latency_s is not None:
        own = condition_latency(out, rows, np.full(len(latency), constants.moe_gemm_latency_s), None, rates, constants,
                                dtypes, fused)
        latency = np.where(grouped, own, latency)
    if constants.moe_fused_gate_launch:     # up and gate: one launch (its latency on Expert_up)
        latency = np.where(grouped & _named(table, rows, "Expert_gate"), 0.0, latency)
    if fused is not None and constants.moe_fused_quantize_bytes:
        latency = latency + _fused_quantize_s(table, rows, fused, dtypes)
    if constants.moe_group_cycles or constants.moe_group_format_cycles:
        per_expert = per_row(out, rows, constants.moe_group_format_cycles, constants.moe_group_cycles, dtypes)
        latency = latency + np.where(grouped, per_expert * out["group_size"][rows] / rates.clock_hz, 0.0)
    return latency


def _named(table: KernelRows, rows: np.ndarray, suffix: str) -> np.ndarray:
    return table.row_groups.map("name", lambda name: str(name).endswith(suffix)).astype(bool)[rows]


def _fused_quantize_s(table: KernelRows, rows: np.ndarray, fused: np.ndarray, dtypes: RowDtypes) -> np.ndarray:
    """Per GEMM row of `rows`: the bytes a fused quantization still moves (RealisticConstants.moe_fused_quantize_bytes):
    the input of each quantized grouped GEMM row (`fused`, a dtype with a quantize kernel) read in bf16 and written
    in 8 bits, m x k x batch x QUANTIZE_BYTES_PER_VALUE at the achievable bandwidth, with no kernel latency;
    Expert_gate rows share Expert_up's quantized input (0 there and on every other row)."""
    out, rates = table.out, table.rates
    quantized = np.isfinite(per_row(out, rows, table.constants.gemm_quantize_latency_s, dtypes=dtypes))
    charged = fused & quantized & ~_named(table, rows, "Expert_gate")
    if not any_true(charged):
        return np.zeros(len(charged))
    m, k, batch = (out[c][rows].astype(float) for c in ("m", "k", "batch"))
    stream = m * k * batch * QUANTIZE_BYTES_PER_VALUE / (rates.bandwidth * rates.memory_fraction)
    return np.where(charged, stream, 0.0)


@dataclass(frozen=True, slots=True)
class GemmConstants:
    """What the GEMM rows' timing derives from their dtypes and names alone (kept per table structure,
    structure_memo.py): per row the matrix and memory efficiencies, the format's extra latency, the clock form's
    cycles, split-K seconds and power-limited MAC/s (None: not set), the grouped MoE rows and the gated ones that
    quantize inside their kernel (None: none), and the tiling classes (tiling_classes)."""

    dtypes: RowDtypes
    efficiency: np.ndarray
    memory_efficiency: np.ndarray
    extra_latency: np.ndarray
    cycles: np.ndarray | None
    split_s: np.ndarray | None
    power: np.ndarray | None
    grouped: np.ndarray
    fused: np.ndarray | None
    classes: tuple


def gemm_constants(table: KernelRows, rows: np.ndarray) -> GemmConstants:
    """The GEMM rows' per-dtype and per-name values (GemmConstants)."""
    out, rates, constants = table.out, table.rates, table.constants
    dtypes = RowDtypes(out, rows)      # the per-dtype constants below look the rows' dtypes up once
    efficiency, extra_latency = _gemm_format_constants(out, rows, constants, dtypes)
    efficiency = condition_efficiency(out, rows, efficiency, constants, dtypes)
    memory_efficiency = np.ones_like(efficiency)
    if constants.moe_matrix_efficiency != 1.0 or constants.moe_bandwidth_efficiency != 1.0:
        groups = table.row_groups        # names tested once per kernel, not once per decode-step row
        grouped = is_expert_gemm(groups.group_strings("name"))[groups.inverse[rows]]
        efficiency = np.where(grouped, efficiency * constants.moe_matrix_efficiency, efficiency)
        memory_efficiency = np.where(grouped, constants.moe_bandwidth_efficiency, 1.0)
    if constants.moe_block_scaled_efficiency != 1.0 and not native_block_scales(table.hardware):
        efficiency = efficiency * _block_scaled_expert_factor(table, rows, constants.moe_block_scaled_efficiency)
    promotion = block_scale_efficiency(out, rows, table.hardware, constants, dtypes)
    if promotion is not None:     # dense block-scaled GEMMs: scales applied on the vector units (grouped: the MoE's own)
        grouped = is_expert_gemm(np.asarray(out["name"])[rows])
        efficiency = efficiency * np.where(grouped, 1.0, promotion)
    cycles = split_s = power = None
    if constants.gemm_latency_cycles or constants.gemm_power_j_per_flop or constants.gemm_split_k_cycles:
        cycles, split_s, power = clock_and_power(out, rows, rates, constants, dtypes)
    grouped = is_expert_gemm(np.asarray(out["name"])[rows])
    native = native_scale_cycles(out, rows, table.hardware, constants, dtypes) if cycles is not None else None
    if native is not None:     # dense fp8-family GEMMs on native block-scale matrix units (warm condition)
        cycles = cycles + np.where(grouped, 0.0, native)
    if power is not None and not constants.moe_power_capped and any_true(grouped):
        power = np.where(grouped, np.inf, power)     # grouped MoE GEMMs: no board-power cap (moe_power_capped)
    fused = (_gated_expert_rows(table, rows, grouped) if constants.moe_fused_quantize and any_true(grouped)
             else None)
    steps = k_step_cycles(out, rows, constants, dtypes)
    overlap = overlap_loss(out, rows, constants, dtypes)
    classes = tiling_classes(efficiency, memory_efficiency, split_s, power, overlap,
                             None if steps is None else steps / rates.clock_hz,
                             epilogue_s_per_value(table.hardware, constants) + tile_store_s_per_value(
                                 out, rows, table.hardware, constants, dtypes))
    return GemmConstants(dtypes, efficiency, memory_efficiency, extra_latency, cycles, split_s, power, grouped, fused,
                         classes)


def time_gemms(table: KernelRows, rows: np.ndarray, chain: TimeChain, memo: dict | None = None) -> None:
    """Tiled GEMMs (tile and wave quantization, split-K, achievable rates) and GEMVs, in place on `chain`.
    `memo`: the table structure's memo (structure_memo.py), which keeps gemm_constants."""
    if not any_true(rows):
        return
    out, rates, constants = table.out, table.rates, table.constants
    m, n, k, batch = (out[c][rows].astype(float) for c in ("m", "n", "k", "batch"))
    nbytes = out["bytes"][rows].astype(float)
    check_condition(constants.gemm_condition)
    if constants.gemm_condition == "warm":    # operands from the LLC where the copies fit (gemm_condition.py)
        nbytes = nbytes * warm_byte_scale(out["weight_bytes"][rows], out["activation_bytes"][rows], table.hardware)
        chain.ideal[rows] = chain.t1[rows] = np.maximum(out["compute_time_s"][rows], nbytes / rates.bandwidth)
    fixed = remembered(memo, ("gemm", rows.tobytes()), lambda: gemm_constants(table, rows))
    dtypes, grouped, fused = fixed.dtypes, fixed.grouped, fixed.fused
    per_core_macs = table.per_core_macs[rows]
    four_bit = (four_bit_scales(out, rows, grouped, table.hardware, constants.moe_4bit_formats)
                if constants.moe_4bit_formats else None)
    if four_bit is not None:      # 4-bit expert weights: the class's stream and matrix efficiencies (moe_4bit.py)
        nbytes, per_core_macs = nbytes / four_bit[0], per_core_macs * four_bit[1]
    shapes = GemmShapes(m, n, k, batch, nbytes, per_core_macs, table.value_bytes[rows])
    latency = condition_latency(out, rows, np.maximum(chain.latency[rows] + fixed.extra_latency, 0.0), fixed.cycles,
                                rates, constants, dtypes, fused)
    chain.latency[rows] = _grouped_latency(table, rows, latency, grouped, fused, dtypes) if any_true(grouped) \
        else latency
    if four_bit is not None:      # ... and its fixed time per launch (the gate shares the up GEMM's when fused)
        gate = _named(table, rows, "Expert_gate") if constants.moe_fused_gate_launch else False
        chain.latency[rows] += np.where(gate, 0.0, four_bit[2])
    # GEMV: one row per GEMM streams the weights on the vector units, no tiles
    gemv = m * batch <= constants.gemv_max_rows
    ideal = chain.t1[rows]
    if all_true(gemv):       # a decode step's weight GEMMs: no tiling to choose
        t1 = t2 = ideal
        t3, part_compute, part_memory = _gemv_times(out, rows, nbytes, ideal, rates)
        tiles = dict.fromkeys(("tile_m", "tile_n", "split_k", "tiles", "waves"), np.full(len(ideal), np.nan))
    else:
        tiling = _tilings_by_class(shapes, table, fixed.classes)
        t1, t2, t3, part_compute, part_memory, tiles = _tiled_times(out, rows, tiling, gemv, nbytes, ideal, rates)
        if fixed.split_s is not None:     # a split-K tiling's reduction pass is device time beyond the work
            chain.latency[rows] += np.where((tiling.split_k > 1) & ~gemv, fixed.split_s, 0.0)
    chain.t1[rows], chain.t2[rows], chain.t3[rows] = t1, t2, t3
    chain.compute[rows], chain.memory[rows] = part_compute, part_memory
    for column, values in tiles.items():
        out[column][rows] = values


def _gemv_times(out, rows, nbytes, ideal, rates: DeviceRates):
    """(t3, compute, memory) of GEMVs: the weights stream at the achievable bandwidth, the MACs on the vector units."""
    vector_s = out["matrix_flops"][rows].astype(float) / rates.vector_flops_per_s
    stream_s = nbytes / (rates.bandwidth * rates.memory_fraction)
    return np.maximum(ideal, np.maximum(vector_s, stream_s)), vector_s, stream_s


def _tiled_times(out, rows, tiling: Tiling, gemv, nbytes, ideal, rates: DeviceRates):
    """(t1, t2, t3, compute, memory, tile columns) of tiled GEMMs, GEMV rows (`gemv`) streamed instead."""
    t1 = np.maximum(ideal, np.maximum(tiling.padded_compute_s, nbytes / rates.bandwidth))
    t2 = np.maximum(t1, np.maximum(tiling.wave_compute_s, tiling.peak_memory_s))
    t3 = np.maximum(t2, np.maximum(tiling.compute_s, tiling.memory_s) + tiling.overlap_s)
    part_compute, part_memory = tiling.compute_s, tiling.memory_s
    tiles = {c: getattr(tiling, c) for c in ("tile_m", "tile_n", "split_k", "tiles", "waves")}
    if any_true(gemv):
        gemv_t3, vector_s, stream_s = _gemv_times(out, rows, nbytes, ideal, rates)
        t1, t2 = np.where(gemv, ideal, t1), np.where(gemv, ideal, t2)
        t3 = np.where(gemv, gemv_t3, t3)
        part_compute, part_memory = np.where(gemv, vector_s, part_compute), np.where(gemv, stream_s, part_memory)
        tiles = {c: np.where(gemv, np.nan, v) for c, v in tiles.items()}
    return t1, t2, t3, part_compute, part_memory, tiles
