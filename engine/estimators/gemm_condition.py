"""The realistic GEMM's clock-and-power form and the operating condition its time is for.

Two conditions (RealisticConstants.gemm_condition, GEMM_CONDITIONS):

- "model" (the default, what `estimate` uses): a GEMM inside a model's layer stack. Its weights differ from the
  previous layer's, so they stream from HBM, and its fixed device time is not hidden behind a neighbour:
  latency = the device's kernel_latency (an isolated kernel), matrix efficiency gemm_model_matrix_efficiency
  where it has the dtype (our own GPUs' flushed GEMMs), else the tables', no split-K cycles (chosen on the
  serving runs and our GPUs' steps, docs/accuracy.md); the power cap and the fp8 quantize kernel as in "warm".
- "warm": the method of NVIDIA AIConfigurator's collector (collect_gemm.py): min(WARM_COPIES_LIMIT,
  ceil(L2 / weight bytes)) weight copies called back to back in one CUDA graph, mean per call. The kernels run
  without gaps, so only gemm_latency_cycles / clock is exposed; split-K cycles and the overlap loss
  (gemm_overlap_loss: max(c, m) + loss x min(c, m) per tiling candidate) are fitted there and apply only there.
  (Where the copies and the activation fit the
  last-level cache, llc_capacity, their operands could be read at llc_bandwidth: WARM_LLC_READS, off, see there.)

In both conditions a GEMM on fp8 activations also pays the activation-quantize kernel (bf16 -> e4m3) before it:
gemm_quantize_latency_s[dtype] + m x k x (2 + 1) bytes at the achievable bandwidth (on the tables each framework's
own latency and bytes per value, gemm_quantize_bytes_per_value, engine/calibration/silicon/conditions.py; for a bare
GEMM on pre-quantized inputs, none).

Workbook fields only (clock, llc_capacity, llc_bandwidth, memory bandwidth, tdp_w, static_power_w).
"""

from __future__ import annotations

import numpy as np

from engine.common.arrays import any_true
from engine.estimators.row_groups import unique_inverse
from engine.hardware.dtypes import compute_dtype, is_block_scaled, number_format

GEMM_CONDITIONS = ("model", "warm")
WARM_COPIES_LIMIT = 5                 # aiconfigurator's collector: at most 5 weight copies per CUDA graph
QUANTIZE_BYTES_PER_VALUE = 2.0 + 1.0  # the quantize kernel reads a bf16 activation and writes its e4m3 copy
# Read the resident operands of the warm condition at llc_bandwidth? Off: tried and not kept. On the tables it costs
# bf16 leave-one-device-out accuracy (9.3% -> 9.8% median), and our H100 timed both ways shows no L2 effect: the
# flushed - warm difference is the same ~3.5 us whether the weight copies fit the L2 or not (docs/accuracy.md).
WARM_LLC_READS = False


class RowDtypes:
    """The distinct dtypes of some rows and each row's position among them, found once for the several per-dtype
    lookups of one timing (`per_row`)."""

    __slots__ = ("distinct", "inverse")

    def __init__(self, out, rows) -> None:
        dtypes, inverse = unique_inverse(np.asarray(out["dtype"])[rows].astype(str))
        self.distinct, self.inverse = dtypes.tolist(), inverse.reshape(-1)


def per_row(out, rows, table: dict, default: float = np.nan, dtypes: RowDtypes | None = None) -> np.ndarray:
    """Per GEMM row: `table`'s entry for the row's dtype, else for its compute format, else `default`.
    `dtypes`: RowDtypes(out, rows) where the caller has it already."""
    dtypes = dtypes or RowDtypes(out, rows)
    values = np.array([table.get(d, table.get(compute_dtype(d), default)) for d in dtypes.distinct], dtype=float)
    return values[dtypes.inverse]


def check_condition(condition: str) -> None:
    if condition not in GEMM_CONDITIONS:
        raise ValueError(f"RealisticConstants.gemm_condition must be one of {', '.join(GEMM_CONDITIONS)}, "
                         f"got {condition!r}")


def clock_and_power(out, rows, rates, constants, dtypes: RowDtypes | None = None):
    """(latency cycles or NaN, split-K seconds, the chip's power-limited matrix MAC/s or inf) per GEMM row
    (gemm_latency_cycles, gemm_split_k_cycles, gemm_power_j_per_flop of RealisticConstants). The power cap is the
    board's dynamic power (tdp_w - static_power_w) / J per FLOP: a bound on the chip's aggregate matrix rate over
    the cores a GEMM keeps busy (tiling.candidate_times), not on each core's rate. Split-K cycles only in the warm
    condition: in the model condition a split-K GEMM is timed as the additive form times it (kernel_latency covers
    it), because the serving runs say so (held-out TPOT 7.6% without them, 11.2% with; docs/accuracy.md)."""
    dtypes = dtypes or RowDtypes(out, rows)
    cycles = per_row(out, rows, constants.gemm_latency_cycles, dtypes=dtypes)
    joules = per_row(out, rows, constants.gemm_power_j_per_flop, dtypes=dtypes)
    power = np.empty(len(cycles))
    power.fill(np.inf)
    if rates.dynamic_power_w:      # where the dtype has a finite, positive energy per FLOP (no division elsewhere)
        power = np.divide(rates.dynamic_power_w, 2.0 * joules, out=power, where=np.isfinite(joules) & (joules > 0))
    split = (per_row(out, rows, constants.gemm_split_k_cycles, 0.0, dtypes) if constants.gemm_condition == "warm"
             else 0.0)
    return cycles, np.zeros(len(cycles)) + split / rates.clock_hz, power


def overlap_loss(out, rows, constants, dtypes: RowDtypes | None = None):
    """Per GEMM row: gemm_overlap_loss[dtype] (tiling.candidate_times: the part of min(compute, memory) a tile's
    pipeline does not hide) in the warm condition, where it is fitted; None (no loss) in the model condition and
    where the constants have none."""
    if constants.gemm_condition != "warm" or not constants.gemm_overlap_loss:
        return None
    return per_row(out, rows, constants.gemm_overlap_loss, 0.0, dtypes)


def k_step_cycles(out, rows, constants, dtypes: RowDtypes | None = None):
    """Per GEMM row: gemm_k_step_cycles[dtype] (tiling.candidate_times: cycles per wave per TILE_K-deep step of the
    k loop) in the warm condition, where it is fitted; None in the model condition and where the constants have
    none."""
    if constants.gemm_condition != "warm" or not constants.gemm_k_step_cycles:
        return None
    return per_row(out, rows, constants.gemm_k_step_cycles, 0.0, dtypes)


def synchronous_epilogue(hardware) -> bool:
    """Do the device's GEMM kernels write each output tile through shared memory after the k loop, unhidden? The
    workbook has no field for asynchronous tensor-memory copies (TMA, Hopper on); a matrix unit without an fp8 rate is
    its proxy (Ampere, Turing, Volta: yes; Hopper, Blackwell: no). Ada (L4) has fp8 but no TMA: the proxy misses it."""
    return hardware.kind == "gpu" and "fp8" not in hardware.matrix_dtypes and bool(
        hardware.sram_bandwidth_bytes_per_cycle_per_core)


def epilogue_s_per_value(hardware, constants) -> float:
    """Seconds per output value of a tile's epilogue in each wave (warm condition, synchronous_epilogue devices):
    gemm_epilogue_bytes_per_value / sram_bandwidth_bytes_per_cycle_per_core / clock_hz; 0 elsewhere (tiling.
    candidate_times adds waves x tile_m x tile_n x this)."""
    if (constants.gemm_condition != "warm" or not constants.gemm_epilogue_bytes_per_value
            or not synchronous_epilogue(hardware)):
        return 0.0
    return (constants.gemm_epilogue_bytes_per_value / hardware.sram_bandwidth_bytes_per_cycle_per_core
            / hardware.clock_hz)


def tile_store_s_per_value(out, rows, hardware, constants, dtypes: RowDtypes | None = None):
    """Per GEMM row in the warm condition: gemm_tile_store_bytes_per_value[dtype] / sram_bandwidth_bytes_per_cycle_
    per_core / clock_hz, seconds per output value of each wave's tiles moved through shared memory after the k loop
    and not hidden (every device; tiling.candidate_times adds waves x tile_m x tile_n x this); 0 elsewhere."""
    if (constants.gemm_condition != "warm" or not constants.gemm_tile_store_bytes_per_value
            or not hardware.sram_bandwidth_bytes_per_cycle_per_core):
        return 0.0
    values = per_row(out, rows, constants.gemm_tile_store_bytes_per_value, 0.0, dtypes)
    return values / hardware.sram_bandwidth_bytes_per_cycle_per_core / hardware.clock_hz


def warm_byte_scale(weight_bytes, activation_bytes, hardware, llc_reads: bool | None = None) -> np.ndarray:
    """Per GEMM row in the warm condition: HBM bandwidth / LLC bandwidth where the weight copies and the activation
    fit the LLC (its operands are then read at the LLC bandwidth), else 1 (all 1 unless `llc_reads`, default
    WARM_LLC_READS)."""
    weight_bytes = np.asarray(weight_bytes, dtype=float)
    capacity, llc = hardware.llc_capacity_bytes, hardware.llc_bandwidth_bytes_per_s
    if not (WARM_LLC_READS if llc_reads is None else llc_reads) or not capacity or not llc:
        return np.ones_like(weight_bytes)
    with np.errstate(divide="ignore"):
        copies = np.minimum(WARM_COPIES_LIMIT, np.ceil(capacity / np.maximum(weight_bytes, 1.0)))
    resident = copies * weight_bytes + np.asarray(activation_bytes, dtype=float) <= capacity
    return np.where(resident, hardware.memory_bandwidth_bytes_per_s / llc, 1.0)


def condition_efficiency(out, rows, efficiency, constants, dtypes: RowDtypes | None = None) -> np.ndarray:
    """The GEMM rows' matrix efficiency under the constants' condition: in the model condition
    gemm_model_matrix_efficiency[dtype] where it has the dtype (else the tables' gemm_matrix_efficiency)."""
    if constants.gemm_condition != "model" or not constants.gemm_model_matrix_efficiency:
        return efficiency
    model = per_row(out, rows, constants.gemm_model_matrix_efficiency, dtypes=dtypes)
    return np.where(np.isfinite(model), model, efficiency)


def condition_latency(out, rows, latency, cycles, rates, constants, dtypes: RowDtypes | None = None,
                      fused_quantize=None) -> np.ndarray:
    """The GEMM rows' device latency under the constants' condition. `latency`: kernel_latency + the format's
    latency (the additive form). Where the clock form has `cycles` (finite): warm, cycles / clock (back to back, the
    ramp hidden); model, the device's kernel_latency (an isolated kernel: on our H100 it equals cycles / clock + the
    isolated latency measured as flushed - graph_copies, 7.25 us vs 2.8 + 4.4 us). Both conditions add the
    activation-quantize kernel of fp8 activations (gemm_quantize_latency_s empty: none, as for a bare GEMM on
    pre-quantized inputs). `fused_quantize`: a mask of rows whose kernel quantizes its own input (grouped MoE
    GEMMs: RealisticConstants.moe_fused_quantize), no quantize kernel."""
    if cycles is not None:
        clock_form = cycles / rates.clock_hz if constants.gemm_condition == "warm" else rates.kernel_latency_s
        latency = np.where(np.isfinite(cycles), clock_form, latency)
    fixed = per_row(out, rows, constants.gemm_quantize_latency_s, dtypes=dtypes)
    if fused_quantize is not None:
        fixed = np.where(fused_quantize, np.nan, fixed)
    if not any_true(np.isfinite(fixed)):
        return latency
    m, k, batch = (out[c][rows].astype(float) for c in ("m", "k", "batch"))
    values = (per_row(out, rows, constants.gemm_quantize_bytes_per_value, QUANTIZE_BYTES_PER_VALUE, dtypes)
              if constants.gemm_quantize_bytes_per_value else QUANTIZE_BYTES_PER_VALUE)
    stream = m * k * batch * values / (rates.bandwidth * rates.memory_fraction)
    return latency + np.where(np.isfinite(fixed), fixed + stream, 0.0)


def native_block_scales(hardware) -> bool:
    """Do the device's matrix units take block scales themselves? Those rated for fp4 (the workbook's
    matrix_macs_per_cycle_per_core_fp4: Blackwell's microscaled tensor cores) do; the others (Hopper, Ampere) apply a
    software block-scaled format's scales to the partial sums on the vector units."""
    return "fp4" in hardware.matrix_dtypes


def native_scale_latency_applies(hardware, dtype: str) -> bool:
    """Does a warm `dtype` GEMM on `hardware` pay gemm_native_scale_cycles? fp8-family dtypes (per-tensor and
    block-scaled fp8) on matrix units with native block scales (native_block_scales: fp4-rated, Blackwell)."""
    return compute_dtype(dtype) == "fp8" and native_block_scales(hardware)


def native_scale_cycles(out, rows, hardware, constants, dtypes: RowDtypes | None = None):
    """Per GEMM row in the warm condition: gemm_native_scale_cycles[dtype] where native_scale_latency_applies, else
    0 (added to gemm_latency_cycles); None where nothing applies (model condition, no constants, no native block
    scales)."""
    if constants.gemm_condition != "warm" or not constants.gemm_native_scale_cycles or not native_block_scales(hardware):
        return None
    dtypes = dtypes or RowDtypes(out, rows)
    values = np.array([constants.gemm_native_scale_cycles.get(d, 0.0) if native_scale_latency_applies(hardware, d)
                       else 0.0 for d in dtypes.distinct], dtype=float)
    return values[dtypes.inverse]


def block_scale_ratio(hardware, dtype: str) -> float:
    """A block-scaled GEMM's (`<base>_g<N>`, e.g. fp8_g128) vector work per unit of matrix work, per vector FLOP
    spent on one output value per scale group: matrix MAC/s / (N x vector FLOP/s) (0 where the matrix units take the
    scales, native_block_scales, or the format has no block scales). H100 fp8_g128: 989 T / (128 x 61.8 T) = 0.125."""
    if not is_block_scaled(dtype) or native_block_scales(hardware):
        return 0.0
    group = number_format(dtype).group_size
    return hardware.matrix_macs_per_s(dtype) / (group * hardware.vector_flops_per_s)


def block_scale_efficiency(out, rows, hardware, constants, dtypes: RowDtypes | None = None):
    """Per GEMM row in the warm condition: 1 / (1 + gemm_block_scale_flops[dtype] x block_scale_ratio), the matrix rate
    left when each k-block's scales are applied to the tile's fp32 partial sums on the vector units between
    tensor-core steps (promotion; DeepGEMM, CUTLASS's blockwise kernels on Hopper); None where nothing applies (model
    condition, no constants, native block scales)."""
    if constants.gemm_condition != "warm" or not constants.gemm_block_scale_flops or native_block_scales(hardware):
        return None
    dtypes = dtypes or RowDtypes(out, rows)
    factors = np.array([1.0 / (1.0 + constants.gemm_block_scale_flops.get(d, 0.0) * block_scale_ratio(hardware, d))
                        for d in dtypes.distinct], dtype=float)
    return factors[dtypes.inverse]
