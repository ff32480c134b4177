"""Realistic: discrete tiles, tile and wave quantization, fused attention, achievable rates, overheads.

Per kernel the method builds a chain of times, each adding one effect to the one before, so the
gap between the ideal roofline and the realistic time splits into named parts:

    ideal_time_s       the roofline: max(FLOP / peak, bytes / peak bandwidth)
    + gap_tile_quantization_s   GEMM tiles padded to whole tiles (flash-attention tiles, 16-row fragments)
    + gap_wave_quantization_s   whole waves of tiles over the cores (the largest causal attention
                                tile), split-K partial sums; rows of row-wise element-wise kernels
                                (one CTA per token) in waves over the cores
    + gap_efficiency_s          achievable fractions of peak (per device, `achievable_*_fraction`),
                                element-wise kernels' own bandwidth efficiency
    + gap_overhead_s            device kernel latency (`kernel_latency`) and, in eager mode, the host
                                launch (`launch_overhead`): time_s = max(kernel_time_s, launch)
    = time_s

GEMMs choose their tile and split-K among the device's tiles (engine/estimators/tiling.py); a
GEMV (one row per GEMM) streams its weights on the vector units. Attention groups run as one
fused kernel (engine/estimators/fused_attention.py). Element-wise kernels stream at the device's
achievable bandwidth times their kernel class's efficiency, after a fixed time per class; row-wise
ones (norms, activations: one CTA per token) also run their tokens in waves over the cores.

`launch`: "eager" (every kernel is launched by the host: a kernel shorter than the launch overhead
waits for the host) or "graph" (CUDA-graph capture: the host launches one graph per step, so no
per-kernel host cost; the device latency stays). The method `realistic-graph` is the graph mode.

Calibrated constants: per device in specs.xlsx (achievable fractions, kernel latency; see docs/accuracy.md for
the fit); software constants in engine/estimators/realistic_constants.py (each named, with what it was fitted
on). Where a device leaves them blank, the DEFAULT_* values apply.

The timing steps share KernelRows (the table and what every step reads: rates, constants, host launch) and
TimeChain (the per-row arrays they fill).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from engine.hardware.dtypes import bytes_per_value, compute_dtype
from engine.estimators.fused_attention import (AttentionOverheads, FusedRates, FusedShapes, attention_groups,
                                               cached_value_bytes, fused_times, is_scores_row)
from engine.estimators.realistic_constants import (  # noqa: F401  (re-exported: the method's public constants)
    ACTIVATION_CLASS, ATTENTION_OVERHEADS, DEFAULT_CONSTANTS, DEFAULT_KERNEL_LATENCY_S, DEFAULT_MATRIX_FRACTION,
    DEFAULT_MEMORY_FRACTION, LAUNCH_MODES, NORM_CLASS, RESIDUAL_CLASS, ROW_CTAS_PER_CORE, ROW_WAVE_KINDS,
    DeviceRates, KernelClass, RealisticConstants, decode_attention_latency_s, moe_combine_s)
from engine.estimators.gemm_condition import (
    check_condition, clock_and_power, condition_efficiency, condition_latency, warm_byte_scale)
from engine.estimators.roofline import estimate_roofline
from engine.estimators.row_groups import RowGroups, least_per_id, unique_inverse
from engine.estimators.tiling import GemmRates, Tiling, choose_tilings
from engine.hardware.device import Hardware

GAP_COLUMNS = ("gap_tile_quantization_s", "gap_wave_quantization_s", "gap_efficiency_s", "gap_overhead_s")


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


_BOUND_LABELS = np.array(["memory", "compute", "overhead"], dtype=object)


def estimate_realistic(table, hardware: Hardware, scenario=None, launch: str = "eager",
                       constants: RealisticConstants = DEFAULT_CONSTANTS) -> dict[str, np.ndarray]:
    """The roofline columns plus the realistic time, its ideal, the gap breakdown and the tiling."""
    if launch not in LAUNCH_MODES:
        raise ValueError(f"launch must be one of {', '.join(LAUNCH_MODES)}, got {launch!r}")
    row_groups = RowGroups(table)        # string columns once per kernel, shared with the roofline
    out = estimate_roofline(table, hardware, row_groups=row_groups)
    rates = DeviceRates.of(hardware)
    rows = len(out["time_s"])
    ideal = out["time_s"].astype(float)
    chain = TimeChain(ideal=ideal, t1=ideal.copy(), t2=ideal.copy(), t3=ideal.copy(),
                      compute=out["compute_time_s"].astype(float).copy(),
                      memory=out["memory_time_s"].astype(float).copy(),
                      latency=np.full(rows, rates.kernel_latency_s), floor=np.zeros(rows))
    for column in ("tile_m", "tile_n", "split_k", "tiles", "waves"):
        out[column] = np.full(rows, np.nan)

    op = row_groups.strings("op")
    kernel_rows = KernelRows(
        out=out, row_groups=row_groups, hardware=hardware, rates=rates,
        per_core_macs=row_groups.map("dtype", hardware.matrix_macs_per_s) / rates.cores,
        value_bytes=row_groups.map("dtype", bytes_per_value), constants=constants,
        host_launch_s=rates.launch_overhead_s if launch == "eager" else 0.0)
    fused = attention_groups(out, row_groups)
    is_gemm = (op == "gemm") & (fused < 0)
    _time_gemms(kernel_rows, is_gemm, chain)
    kind = row_groups.map("op", lambda o: constants.class_of_op.get(str(o), "residual"))
    _time_elementwise(kernel_rows, (~is_gemm) & (fused < 0), kind, chain)

    kernel_time = np.maximum(chain.latency + chain.t3, chain.floor)
    time = np.maximum(kernel_time, kernel_rows.host_launch_s)
    if (fused >= 0).any():
        time, kernel_time = _time_fused(kernel_rows, fused, chain, time, kernel_time)
    compute, memory = chain.compute, chain.memory
    out["ideal_time_s"] = ideal
    out["kernel_time_s"] = kernel_time
    out["gap_tile_quantization_s"] = chain.t1 - ideal
    out["gap_wave_quantization_s"] = chain.t2 - chain.t1
    out["gap_efficiency_s"] = chain.t3 - chain.t2
    out["gap_overhead_s"] = time - chain.t3
    out["compute_time_s"], out["memory_time_s"], out["time_s"] = compute, memory, time
    out["fused_group"] = fused
    out["launches"] = launches_per_row(fused)
    overhead = out["gap_overhead_s"] > np.maximum(compute, memory)
    # one shared str object per label (engine/estimators/roofline.py)
    out["bound"] = _BOUND_LABELS[np.where(overhead, 2, (compute > memory).astype(np.intp))]
    return out


def launches_per_row(fused: np.ndarray) -> np.ndarray:
    """1 per kernel launch: a fused attention's rows launch once (on its first row), others once each."""
    launches = np.ones(len(fused))
    members = np.flatnonzero(fused >= 0)
    if len(members):
        first = least_per_id(fused[members])
        launches[members] = 0.0
        launches[members[first]] = 1.0
    return launches


def _gemm_format_constants(out, rows, constants) -> tuple[np.ndarray, np.ndarray]:
    """Per GEMM row: the matrix efficiency of its compute format and the extra latency (see RealisticConstants)."""
    if not (constants.gemm_matrix_efficiency or constants.gemm_format_latency_s):
        return np.ones(rows.sum()), np.zeros(rows.sum())
    dtypes, inverse = unique_inverse(np.asarray(out["dtype"])[rows].astype(str))
    def lookup(table: dict, dtype: str, default: float) -> float:     # the dtype's own entry, else its format's
        return table.get(dtype, table.get(compute_dtype(dtype), default))
    efficiency = np.array([lookup(constants.gemm_matrix_efficiency, d, 1.0) for d in dtypes], dtype=float)
    extra = np.array([lookup(constants.gemm_format_latency_s, d, 0.0) for d in dtypes], dtype=float)
    return efficiency[inverse.reshape(-1)], extra[inverse.reshape(-1)]


def _tilings_by_efficiency(shapes: GemmShapes, table: KernelRows, efficiency, memory_efficiency=None,
                           split_k_latency_s=None, power_macs_per_s=None):
    """choose_tilings once per distinct (matrix efficiency, memory efficiency, split-K latency, chip power-limited
    MAC/s) (usually one or two), merged back per row."""
    rates = table.rates
    parts = {}
    memory_efficiency = np.ones_like(efficiency) if memory_efficiency is None else memory_efficiency
    split = np.zeros_like(efficiency) if split_k_latency_s is None else split_k_latency_s
    power = np.full_like(efficiency, np.inf) if power_macs_per_s is None else power_macs_per_s
    stacked = np.stack([efficiency, memory_efficiency, split, power], axis=1)
    if len(stacked) and (stacked == stacked[0]).all():           # the usual case: one class of GEMM
        pairs, inverse = stacked[:1], np.zeros(len(stacked), dtype=np.intp)
    else:
        pairs, inverse = np.unique(stacked, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
    for number, (value, memory_value, split_value, power_value) in enumerate(pairs):
        mine = slice(None) if len(pairs) == 1 else inverse == number      # one class: every row, no copies
        gemm_rates = GemmRates(shapes.per_core_macs[mine], shapes.value_bytes[mine], rates.matrix_fraction * value,
                               rates.bandwidth, min(1.0, rates.memory_fraction * memory_value), rates.kernel_latency_s,
                               float(split_value), float(power_value))
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


def is_expert_gemm(names) -> np.ndarray:
    """MoE grouped-GEMM rows (engine/decomposition/moe.py: Expert_up, Expert_gate, Expert_down, any d/p prefix)."""
    return np.array(["Expert_" in name for name in np.asarray(names).astype(str).ravel().tolist()],
                    dtype=bool).reshape(np.shape(names))


def _time_gemms(table: KernelRows, rows: np.ndarray, chain: TimeChain) -> None:
    """Tiled GEMMs (tile and wave quantization, split-K, achievable rates) and GEMVs, in place on `chain`."""
    if not rows.any():
        return
    out, rates, constants = table.out, table.rates, table.constants
    m, n, k, batch = (out[c][rows].astype(float) for c in ("m", "n", "k", "batch"))
    nbytes = out["bytes"][rows].astype(float)
    check_condition(constants.gemm_condition)
    if constants.gemm_condition == "warm":    # operands from the LLC where the copies fit (gemm_condition.py)
        nbytes = nbytes * warm_byte_scale(out["weight_bytes"][rows], out["activation_bytes"][rows], table.hardware)
        chain.ideal[rows] = chain.t1[rows] = np.maximum(out["compute_time_s"][rows], nbytes / rates.bandwidth)
    efficiency, extra_latency = _gemm_format_constants(out, rows, constants)
    efficiency = condition_efficiency(out, rows, efficiency, constants)
    memory_efficiency = np.ones_like(efficiency)
    if constants.moe_matrix_efficiency != 1.0 or constants.moe_bandwidth_efficiency != 1.0:
        grouped = is_expert_gemm(np.asarray(out["name"])[rows])
        efficiency = np.where(grouped, efficiency * constants.moe_matrix_efficiency, efficiency)
        memory_efficiency = np.where(grouped, constants.moe_bandwidth_efficiency, 1.0)
    shapes = GemmShapes(m, n, k, batch, nbytes, table.per_core_macs[rows], table.value_bytes[rows])
    cycles = split_s = power = None
    if constants.gemm_latency_cycles or constants.gemm_power_j_per_flop or constants.gemm_split_k_cycles:
        cycles, split_s, power = clock_and_power(out, rows, rates, constants)
    tiling = _tilings_by_efficiency(shapes, table, efficiency, memory_efficiency, split_s, power)
    chain.latency[rows] = condition_latency(out, rows, np.maximum(chain.latency[rows] + extra_latency, 0.0), cycles,
                                            rates, constants)
    ideal = chain.t1[rows]
    t1 = np.maximum(ideal, np.maximum(tiling.padded_compute_s, nbytes / rates.bandwidth))
    t2 = np.maximum(t1, np.maximum(tiling.wave_compute_s, tiling.peak_memory_s))
    t3 = np.maximum(t2, np.maximum(tiling.compute_s, tiling.memory_s))
    part_compute, part_memory = tiling.compute_s, tiling.memory_s
    tiles = {c: getattr(tiling, c) for c in ("tile_m", "tile_n", "split_k", "tiles", "waves")}
    # GEMV: one row per GEMM streams the weights on the vector units, no tiles
    gemv = m * batch <= constants.gemv_max_rows
    if gemv.any():
        vector_s = out["matrix_flops"][rows].astype(float) / rates.vector_flops_per_s
        stream_s = nbytes / (rates.bandwidth * rates.memory_fraction)
        t1, t2 = np.where(gemv, ideal, t1), np.where(gemv, ideal, t2)
        t3 = np.where(gemv, np.maximum(ideal, np.maximum(vector_s, stream_s)), t3)
        part_compute, part_memory = np.where(gemv, vector_s, part_compute), np.where(gemv, stream_s, part_memory)
        tiles = {c: np.where(gemv, np.nan, v) for c, v in tiles.items()}
    if split_s is not None:     # a split-K tiling's reduction pass is device time beyond the work
        chain.latency[rows] += np.where((tiling.split_k > 1) & ~gemv, split_s, 0.0)
    chain.t1[rows], chain.t2[rows], chain.t3[rows] = t1, t2, t3
    chain.compute[rows], chain.memory[rows] = part_compute, part_memory
    for column, values in tiles.items():
        out[column][rows] = values


def _time_elementwise(table: KernelRows, rows: np.ndarray, kind: np.ndarray, chain: TimeChain) -> None:
    """Streaming kernels (norms, activations, residuals, rotary, KV store, embedding, any other)."""
    if not rows.any():
        return
    out, rates = table.out, table.rates
    classes = table.constants.kernel_classes
    efficiency, fixed, least = np.ones(rows.sum()), np.zeros(rows.sum()), np.zeros(rows.sum())
    row_rate = np.full(rows.sum(), np.inf)          # bytes per second of one row's CTA (inf: not row-wise)
    for name, kernel_class in classes.items():
        mine = kind[rows] == name
        efficiency[mine], fixed[mine] = kernel_class.bandwidth_efficiency, kernel_class.latency_s
        least[mine] = kernel_class.floor_s
        if kernel_class.row_bytes_per_cycle and rates.row_waves:
            row_rate[mine] = kernel_class.row_bytes_per_cycle * rates.clock_hz
    nbytes = out["bytes"][rows].astype(float)
    tokens = np.maximum(out["m"][rows].astype(float), 1.0)
    row_waves = np.ceil(tokens / (rates.cores * ROW_CTAS_PER_CORE))
    row_s = row_waves * (nbytes / tokens) / row_rate
    fraction = np.minimum(1.0, rates.memory_fraction * efficiency)
    stream_s = np.maximum(nbytes / (rates.bandwidth * fraction), moe_combine_s(table, rows))
    t2 = np.maximum(chain.t2[rows], row_s)
    chain.t2[rows] = t2
    chain.t3[rows] = np.maximum(t2, np.maximum(chain.compute[rows], stream_s))
    chain.memory[rows] = np.maximum(stream_s, row_s)
    chain.latency[rows] = fixed
    chain.floor[rows] = least


@dataclass(frozen=True, slots=True)
class FusedGroups:
    """Per fused attention kernel: its shapes and rates (fused_times' inputs), its lead row and its rows' ideal sum."""

    shapes: FusedShapes
    rates: FusedRates
    lead: np.ndarray          # the row each group's shape comes from (its Q*gK row, else its first matrix row)
    ideal_sum: np.ndarray     # the group's rows' roofline times summed

    @property
    def decode(self) -> np.ndarray:
        return self.shapes.decode


def fused_group_inputs(out, fused, row_groups: RowGroups, rates: DeviceRates, per_core_macs, constants) -> FusedGroups:
    """Per attention group: fused_times' inputs, its lead row (its Q*gK row, else its first matrix row), ideal sum."""
    rows = np.flatnonzero(fused >= 0)
    group = fused[rows]
    groups = int(group.max()) + 1
    total = lambda column: np.bincount(group, weights=out[column][rows].astype(float), minlength=groups)  # noqa: E731
    of_row = row_groups.inverse[rows]     # string tests once per group, then per row
    is_scores = is_scores_row(row_groups.group_strings("name"))[of_row]
    is_matrix = (row_groups.group_strings("op") == "attention")[of_row]
    priority = 2 * (~is_matrix).astype(np.int64) + (~is_scores).astype(np.int64)   # scores, matrix, other rows
    lead = rows[least_per_id(group, priority * rows.size + np.arange(rows.size)) % rows.size]   # lexsort's first
    m, k, n, batch = (np.maximum(out[c][lead].astype(float), 1.0) for c in ("m", "k", "n", "batch"))
    fused_rates = FusedRates(
        macs_per_s_per_core=per_core_macs[lead], cores=rates.cores, clock_hz=rates.clock_hz,
        vector_flops_per_s=rates.vector_flops_per_s, bandwidth=rates.bandwidth,
        matrix_fraction=rates.matrix_fraction * constants.attention_matrix_efficiency,
        memory_fraction=rates.memory_fraction, matrix_fp4=rates.matrix_fp4)
    decode = row_groups.group_strings("type")[row_groups.inverse[lead]] == "Va_Mqa"
    score_macs = np.bincount(group, weights=np.where(is_scores, out["macs"][rows].astype(float), 0.0),
                             minlength=groups)
    score_macs = np.where(score_macs > 0, score_macs, total("macs") / 2.0)   # a group without a Q*gK row
    window = out["attention_window"][lead].astype(float) if "attention_window" in out else None
    shapes = FusedShapes(decode=decode, m=m, k=k, n=n, batch=batch, matrix_macs=total("macs"),
                         vector_flops=total("vector_flops"), nbytes=total("bytes"), score_macs=score_macs,
                         window=window, kv_value_bytes=cached_value_bytes(total, out, batch, n, k))
    return FusedGroups(shapes=shapes, rates=fused_rates, lead=lead,
                       ideal_sum=np.bincount(group, weights=out["time_s"][rows].astype(float), minlength=groups))


def fused_group_kernel_s(inputs: FusedGroups, rates: DeviceRates, constants) -> tuple[dict, np.ndarray]:
    """fused_times of each group and its device time: latency + t3 + the rows' ideal sum over the fused t0."""
    overheads = constants.attention_overheads
    if not rates.row_waves:     # tile and CTA cycles are a SIMT GPU's; a TPU core streams the whole attention
        overheads = AttentionOverheads(decode_bandwidth_efficiency=overheads.decode_bandwidth_efficiency)
    times = fused_times(inputs.shapes, inputs.rates, overheads)
    prefill, decode = constants.attention_prefill_latency_s, decode_attention_latency_s(constants, rates, inputs.shapes.k)
    latency = np.where(inputs.decode, rates.kernel_latency_s if decode is None else decode,
                       rates.kernel_latency_s if prefill is None else prefill)
    offset = np.maximum(inputs.ideal_sum - times["t0"], 0.0)
    return times, latency + times["t3"] + offset


def _time_fused(table: KernelRows, fused: np.ndarray, chain: TimeChain, time: np.ndarray,
                kernel_time: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Time each attention group once and charge it to its rows by their ideal times: (time, kernel_time)."""
    rows = np.flatnonzero(fused >= 0)
    group = fused[rows]
    inputs = fused_group_inputs(table.out, fused, table.row_groups, table.rates, table.per_core_macs,
                                table.constants)
    ideal_sum, ideal = inputs.ideal_sum, chain.ideal
    times, group_kernel = fused_group_kernel_s(inputs, table.rates, table.constants)
    offset = np.maximum(ideal_sum - times["t0"], 0.0)
    group_time = np.maximum(group_kernel, table.host_launch_s)
    gaps = np.stack([times["t1"] - times["t0"], times["t2"] - times["t1"], times["t3"] - times["t2"],
                     group_time - times["t3"] - offset])
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(ideal_sum[group] > 0, ideal[rows] / ideal_sum[group], 1.0 / np.bincount(group)[group])
    row_gaps = gaps[:, group] * share
    chain.t1[rows] = ideal[rows] + row_gaps[0]
    chain.t2[rows] = chain.t1[rows] + row_gaps[1]
    chain.t3[rows] = chain.t2[rows] + row_gaps[2]
    time = time.copy()
    kernel_time = kernel_time.copy()
    time[rows] = chain.t3[rows] + row_gaps[3]
    kernel_time[rows] = group_kernel[group] * share
    chain.compute[rows] = times["compute"][group] * share
    chain.memory[rows] = times["memory"][group] * share
    return time, kernel_time


def with_attention_matrix_efficiency(inputs: FusedGroups, rates: DeviceRates, efficiency: float) -> FusedGroups:
    """`inputs` with its fused rates' matrix fraction recomputed for another attention matrix efficiency."""
    return replace(inputs, rates=replace(inputs.rates, matrix_fraction=rates.matrix_fraction * efficiency))


__all__ = [  # the method, and the constants re-exported from realistic_constants.py
    "estimate_realistic", "launches_per_row", "is_expert_gemm", "fused_group_inputs", "fused_group_kernel_s",
    "with_attention_matrix_efficiency", "GAP_COLUMNS", "KernelRows", "TimeChain", "GemmShapes", "FusedGroups",
    "ACTIVATION_CLASS", "ATTENTION_OVERHEADS", "DEFAULT_CONSTANTS", "DEFAULT_KERNEL_LATENCY_S",
    "DEFAULT_MATRIX_FRACTION", "DEFAULT_MEMORY_FRACTION", "LAUNCH_MODES", "NORM_CLASS", "RESIDUAL_CLASS",
    "ROW_CTAS_PER_CORE", "ROW_WAVE_KINDS", "DeviceRates", "KernelClass", "RealisticConstants",
]
