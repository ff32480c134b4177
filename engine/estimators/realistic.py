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
fused kernel (engine/estimators/fused_attention.py; its inputs and the charge to its rows:
engine/estimators/realistic_fused.py). Element-wise kernels stream at the device's achievable
bandwidth times their kernel class's efficiency, after a fixed time per class; row-wise ones (norms,
activations: one CTA per token) also run their tokens in waves over the cores.

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

from functools import partial

import numpy as np

from engine.common.arrays import any_true
from engine.hardware.dtypes import bytes_per_value
from engine.estimators.attention_cache_width import eight_bit_prefill_rates
from engine.estimators.realistic_constants import (  # noqa: F401  (re-exported: the method's public constants)
    ACTIVATION_CLASS, ATTENTION_OVERHEADS, DEFAULT_CONSTANTS, DEFAULT_KERNEL_LATENCY_S, DEFAULT_MATRIX_FRACTION,
    DEFAULT_MEMORY_FRACTION, LAUNCH_MODES, NORM_CLASS, RESIDUAL_CLASS, ROW_CTAS_PER_CORE, ROW_WAVE_KINDS,
    DeviceRates, KernelClass, RealisticConstants, device_rates, moe_combine_s, moe_layer_latency_s,
    moe_topk_latency_s)
from engine.estimators.bound_labels import labelled
from engine.estimators.attention_group_cache import kept_attention_groups
from engine.estimators.kept_rows import timed_rows
from engine.estimators.structure_memo import memo_for, remembered
from engine.estimators.roofline import estimate_roofline
from engine.estimators.realistic_fused import (  # noqa: F401  (re-exported: the fused attention's public names)
    FusedGroups, fused_group_inputs, fused_group_kernel_s, time_fused,
    with_attention_matrix_efficiency)
from engine.estimators.realistic_gemms import (GemmShapes, KernelRows, TimeChain, time_gemms,  # noqa: F401
                                               is_expert_gemm)
from engine.estimators.row_groups import SMALL_UNIQUE, RowGroups, least_per_id
from engine.estimators.weight_only import apply_weight_only
from engine.hardware.device import Hardware

GAP_COLUMNS = ("gap_tile_quantization_s", "gap_wave_quantization_s", "gap_efficiency_s", "gap_overhead_s")


_BOUND_LABELS = np.array(["memory", "compute", "overhead"], dtype=object)


def estimate_realistic(table, hardware: Hardware, scenario=None, launch: str = "eager",
                       constants: RealisticConstants = DEFAULT_CONSTANTS) -> dict[str, np.ndarray]:
    """The roofline columns plus the realistic time, its ideal, the gap breakdown and the tiling."""
    if launch not in LAUNCH_MODES:
        raise ValueError(f"launch must be one of {', '.join(LAUNCH_MODES)}, got {launch!r}")
    row_groups = RowGroups(table)        # string columns once per kernel, shared with the roofline
    # what depends on a short table's strings alone: kept per structure (engine/estimators/structure_memo.py)
    memo = memo_for(table, row_groups, hardware, constants, launch) if isinstance(table, dict) else None
    if memo is not None:
        row_groups.share_strings(remembered(memo, "strings", dict))
    out = estimate_roofline(table, hardware, row_groups=row_groups, label_bound=False)    # labelled below
    rates = device_rates(hardware)
    rows = len(out["time_s"])
    ideal = out["time_s"].astype(float)
    latency, no_tiles = np.empty(rows), np.empty(rows)     # filled (np.full's wrapper costs more on a short table)
    latency.fill(rates.kernel_latency_s)
    no_tiles.fill(np.nan)
    chain = TimeChain(ideal=ideal, t1=ideal.copy(), t2=ideal.copy(), t3=ideal.copy(),
                      compute=out["compute_time_s"].astype(float),     # astype copies
                      memory=out["memory_time_s"].astype(float), latency=latency, floor=np.zeros(rows))
    for column in ("tile_m", "tile_n", "split_k", "tiles", "waves"):
        out[column] = no_tiles.copy()

    kernel_rows = KernelRows(
        out=out, row_groups=row_groups, hardware=hardware, rates=rates,
        per_core_macs=per_core_matrix_rates(out, row_groups, hardware, rates, memo),
        value_bytes=remembered(memo, "value_bytes", lambda: row_groups.map("dtype", bytes_per_value)),
        constants=constants, host_launch_s=rates.launch_overhead_s if launch == "eager" else 0.0)
    # kept per structure (attention_group_cache.py, structure_memo.py), with each row's launches
    fused, launches = remembered(memo, "fused", lambda: kept_attention_groups(out, row_groups, launches_per_row))
    if memo is not None:         # copies: the result's columns are the caller's
        fused, launches = fused.copy(), launches.copy()
    unfused, is_gemm, kind = remembered(memo, "masks", lambda: _row_masks(row_groups, fused, constants))
    # a decode step's rows outside the fused attention: kept per structure (engine/estimators/kept_rows.py)
    timed_rows(kernel_rows, unfused, chain,
               partial(_time_unfused, kernel_rows, unfused, is_gemm, kind, chain, memo), memo)
    apply_weight_only(kernel_rows, is_gemm, chain, scenario)     # int4/int8 weights, 16-bit activations: weight_only.py

    kernel_time = np.maximum(chain.latency + chain.t3, chain.floor)
    time = np.maximum(kernel_time, kernel_rows.host_launch_s)
    if any_true(fused >= 0):
        time, kernel_time = time_fused(kernel_rows, fused, chain, time, kernel_time, memo)
    compute, memory = chain.compute, chain.memory
    out["ideal_time_s"] = ideal
    out["kernel_time_s"] = kernel_time
    out["gap_tile_quantization_s"] = chain.t1 - ideal
    out["gap_wave_quantization_s"] = chain.t2 - chain.t1
    out["gap_efficiency_s"] = chain.t3 - chain.t2
    out["gap_overhead_s"] = time - chain.t3
    out["compute_time_s"], out["memory_time_s"], out["time_s"] = compute, memory, time
    out["fused_group"] = fused
    out["launches"] = launches
    overhead = out["gap_overhead_s"] > np.maximum(compute, memory)
    # one shared str object per label (engine/estimators/roofline.py)
    out["bound"] = labelled(_BOUND_LABELS, np.where(overhead, 2, (compute > memory).astype(np.intp)))
    return out


def per_core_matrix_rates(out, row_groups: RowGroups, hardware: Hardware, rates: DeviceRates,
                          memo: dict | None = None) -> np.ndarray:
    """Per row: the matrix MAC/s of one core the roofline timed it at (estimate_roofline's `out`): its dtype's rate,
    the fp8 rate on an 8-bit cache's prefill attention rows (eight_bit_prefill_rates). `memo`: the structure's
    (structure_memo.py), which keeps the dtypes' rates."""
    per_dtype = remembered(memo, "matrix_rates", lambda: row_groups.map("dtype", hardware.matrix_macs_per_s) / rates.cores)
    return eight_bit_prefill_rates(out, per_dtype, rates.fp8_macs_per_s_per_core, row_groups)


def _row_masks(row_groups: RowGroups, fused: np.ndarray, constants: RealisticConstants) -> tuple[np.ndarray, ...]:
    """(rows outside the fused attention, GEMM rows among them, each row's kernel class name)."""
    unfused = fused < 0
    is_gemm = row_groups.per_row(row_groups.group_strings("op") == "gemm") & unfused     # compared once per kernel
    kind = row_groups.map("op", lambda o: constants.class_of_op.get(str(o), "residual"))
    return unfused, is_gemm, kind


def launches_per_row(fused: np.ndarray) -> np.ndarray:
    """1 per kernel launch: a fused attention's rows launch once (on its first row), others once each."""
    launches = np.ones(len(fused))
    members = np.flatnonzero(fused >= 0)
    if len(members):
        first = least_per_id(fused[members])
        launches[members] = 0.0
        launches[members[first]] = 1.0
    return launches


def _time_unfused(table: KernelRows, unfused: np.ndarray, is_gemm: np.ndarray, kind: np.ndarray,
                  chain: TimeChain, memo: dict | None = None) -> None:
    """The GEMMs and element-wise kernels outside the fused attention groups, in place on `chain`."""
    time_gemms(table, is_gemm, chain, memo)
    _time_elementwise(table, (~is_gemm) & unfused, kind, chain, memo)


def row_cta_bytes(nbytes, weight_bytes, tokens, weights_cached):
    """The bytes one CTA of a row-wise kernel streams at its row rate: where `weights_cached` (1/True: the class's
    row_weights_cached), its token's own activations, (bytes - weight_bytes) / tokens (a norm's gamma, read by every
    CTA, comes from the cache; its one HBM read is in the kernel's stream); elsewhere bytes / tokens, the weights
    shared out over the tokens, so that a norm of more tokens within a wave ran shorter CTAs (Llama-3.1-8B on JGS: a
    2-token prefill 1.5% faster than a 1-token one; benchmarks/monotonicity_hunt.py). Arrays or floats."""
    return (nbytes - weight_bytes * weights_cached) / tokens


def _time_elementwise(table: KernelRows, rows: np.ndarray, kind: np.ndarray, chain: TimeChain,
                      memo: dict | None = None) -> None:
    """Streaming kernels (norms, activations, residuals, rotary, KV store, embedding, any other)."""
    if not any_true(rows):
        return
    out, rates = table.out, table.rates
    efficiency, fixed, least, row_rate, weights_cached = remembered(memo, ("classes", rows.tobytes()),
                                                                   lambda: _class_values(table, kind[rows]))
    nbytes = out["bytes"][rows].astype(float)
    tokens = np.maximum(out["m"][rows].astype(float), 1.0)
    row_waves = np.ceil(tokens / (rates.cores * ROW_CTAS_PER_CORE))
    cta_bytes = row_cta_bytes(nbytes, out["weight_bytes"][rows].astype(float), tokens, weights_cached)
    row_s = row_waves * cta_bytes / row_rate
    fraction = np.minimum(1.0, rates.memory_fraction * efficiency)
    stream_s = nbytes / (rates.bandwidth * fraction)
    # a table without MoE_topk or MoE_combine rows (kept per structure): their terms are 0.0 on every row
    no_moe = remembered(memo, "no_moe_rows", lambda: not any("MoE_topk" in name or "MoE_combine" in name
                                                             for name in table.row_groups.group_strings("name").tolist()))
    zeros = np.zeros(len(nbytes)) if no_moe else None
    permute_s = zeros if no_moe else moe_combine_s(table, rows)
    stream_s = stream_s + permute_s if table.constants.moe_combine_cycles_add else np.maximum(stream_s, permute_s)
    t2 = np.maximum(chain.t2[rows], row_s)
    chain.t2[rows] = t2
    chain.t3[rows] = np.maximum(t2, np.maximum(chain.compute[rows], stream_s))
    chain.memory[rows] = np.maximum(stream_s, row_s)
    # the top-k passes (and the MoE layer's unlisted kernels, on MoE_combine) lengthen the kernel's least time too
    selection = zeros if no_moe else moe_topk_latency_s(table, rows) + moe_layer_latency_s(table, rows)
    chain.latency[rows] = fixed + selection
    chain.floor[rows] = least + selection


def _class_values(table: KernelRows, kinds: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per element-wise row of kernel class `kinds`: bandwidth efficiency, fixed latency, floor, the bytes per
    second of one row's CTA (inf: not row-wise) and whether its weights come from the cache (1.0) or are shared out over
    the tokens (0.0); kinds without a class stream at full efficiency, no fixed time."""
    rates, classes = table.rates, table.constants.kernel_classes
    if len(kinds) > SMALL_UNIQUE:       # many rows (a chunked schedule's iterations): one mask per class
        efficiency, fixed, least, row_rate = np.ones(len(kinds)), np.zeros(len(kinds)), np.zeros(len(kinds)), \
            np.full(len(kinds), np.inf)
        whole = np.zeros(len(kinds))
        for name, kernel_class in classes.items():
            mine = kinds == name
            efficiency[mine], fixed[mine] = kernel_class.bandwidth_efficiency, kernel_class.latency_s
            least[mine], whole[mine] = kernel_class.floor_s, float(kernel_class.row_weights_cached)
            if kernel_class.row_bytes_per_cycle and rates.row_waves:
                row_rate[mine] = kernel_class.row_bytes_per_cycle * rates.clock_hz
        return efficiency, fixed, least, row_rate, whole
    found = [classes.get(kind) for kind in kinds.tolist()]
    efficiency = np.array([1.0 if c is None else c.bandwidth_efficiency for c in found], dtype=float)
    fixed = np.array([0.0 if c is None else c.latency_s for c in found], dtype=float)
    least = np.array([0.0 if c is None else c.floor_s for c in found], dtype=float)
    row_rate = np.array([c.row_bytes_per_cycle * rates.clock_hz if c is not None and c.row_bytes_per_cycle
                         and rates.row_waves else np.inf for c in found], dtype=float)
    whole = np.array([0.0 if c is None else float(c.row_weights_cached) for c in found], dtype=float)
    return efficiency, fixed, least, row_rate, whole


__all__ = [  # the method, and the constants re-exported from realistic_constants.py
    "estimate_realistic", "per_core_matrix_rates", "launches_per_row", "is_expert_gemm", "fused_group_inputs",
    "fused_group_kernel_s", "with_attention_matrix_efficiency", "GAP_COLUMNS", "KernelRows", "TimeChain", "GemmShapes",
    "FusedGroups",
    "ACTIVATION_CLASS", "ATTENTION_OVERHEADS", "DEFAULT_CONSTANTS", "DEFAULT_KERNEL_LATENCY_S",
    "DEFAULT_MATRIX_FRACTION", "DEFAULT_MEMORY_FRACTION", "LAUNCH_MODES", "NORM_CLASS", "RESIDUAL_CLASS",
    "ROW_CTAS_PER_CORE", "ROW_WAVE_KINDS", "DeviceRates", "KernelClass", "RealisticConstants",
]
