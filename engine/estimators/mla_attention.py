"""MLA attention's own constants in the realistic fused attention (DeepSeek-V2/V3, Kimi-K2: multi-head latent attention).

The decomposition (engine/decomposition/mla.py) builds an MLA attention as any attention's rows, so the fused kernel
(realistic_fused.fused_group_kernel_s) times it like MHA / GQA; measured, MLA's kernels (FlashMLA-style decode over the
shared latent cache, TensorRT-LLM's MLA context kernel) run otherwise. Fitted on AIConfigurator's MLA tables
(engine/calibration/silicon/mla_fit.py, leave-one-device-out scored there through this module), an MLA kernel takes
MLA values of a few of the shared constants and three terms of its own:

    prefill (the naive form: MHA over K/V rebuilt from the latent; its score head, nope + rope channels, is wider than
             its value head)
        attention_matrix_efficiency, prefill_cta_cycles, prefill_tile_cycles, attention_prefill_latency_s,
        prefill_score_vector_flops   in place of the shared ones;
        mla_prefill_fp8_matrix_efficiency, mla_prefill_fp8_cta_cycles   the same two over an 8-bit cache on a device
                                     whose matrix units take fp8 (the tables: slower than the 16-bit kernel up to ~8k
                                     tokens on Hopper and Blackwell)
        mla_prefill_largest_cta_share   beyond one wave of query-tile CTAs, the kernel takes the cores' mean work +
                                     this share of the largest CTA (AttentionOverheads.prefill_largest_cta_share: the
                                     CTAs' unequal causal spans listed over the cores; 0 in the shared model)
    decode (the absorbed form: one shared latent "head" of rank + rope > 256 channels, LATENT_HEAD_DIM_ABOVE)
        decode_bandwidth_efficiency, decode_stream_cap, decode_pair_bytes_per_core_cycle, decode_cta_cycles
                                     in place of the shared ones, and no shared latency; then
        time = floor + max(that time, latent values x mla_decode_fp8_value_cycles / (cores x clock))
        floor: mla_decode_latency_s where the matrix units take fp4, else mla_decode_latency_cycles at the clock;
        the conversion bound only over an 8-bit cache on a device whose matrix units take fp8 and not fp4 (Hopper).

Only on devices that run kernels as CTAs over SIMT cores (DeviceRates.row_waves: GPUs); elsewhere the shared model.

The decode above is the split-context kernels' (FlashMLA on Hopper, TensorRT-LLM's on Blackwell): they split a
sequence's context over CTAs, each holding a 64-head query tile of the latent and double-buffered 64-token latent
tiles in shared memory (FlashMLA's SharedStorageMLA: 64 x 576 x 2 B + 2 x 64 x 576 x 2 B = 221,184 B), which fits
a core with 256 KiB of SRAM (Hopper, Blackwell) and not one with less (A100: 192 KiB; Ada and the RTX Blackwell
cards: 128 KiB). Such an NVIDIA core runs the one-core kernel (runs_one_core_decode: the workbook's vendor and
sram_per_core; a blank field, or AMD's kernels, which split the context in their own tiling: the split model):
the tables (A100 and L40S, TensorRT-LLM 1.0; the RTX PRO 6000's 16-bit caches too) show it flat in query heads up
to 64 (128 heads take twice the CTAs), flat in the batch up to ~32 sequences, proportional to the context, an 8-bit
cache as slow as a 16-bit one: each CTA (a sequence x 64 query heads) streams its context alone on one core.
    one_core_decode (MlaOneCoreDecode)
        A = ceil(context / 64) x 64 x latent channels x value_cycles / clock      one CTA's stream
            x sqrt(1 + (CTAs / (cta_share x cores))^2)                            more CTAs than the cores run at once
        B = the group's bytes / (bandwidth x bandwidth_efficiency)                 the HBM stream
        time = floor_cycles / clock + sqrt(A^2 + B^2), at least the split model's time without its floor (the
               rows' time chain is that model's; on A100's rows the one-core time is always the larger)
Fitted on A100's rows (the only training device that runs it: in-sample there; L40S, left out of training as every
PCIe card is, scores it as a device known only from the workbook; docs/accuracy.md, "A100's MLA decode").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from engine.common.arrays import any_true
from engine.common.float_or_array import ceil, logical_not, maximum, where

LATENT_HEAD_DIM_ABOVE = 256     # a decode kernel whose head is wider than this is MLA's latent one (576 = 512 + 64)
# the split-context MLA decode kernels' shared memory: a 64-head query tile and two 64-token tiles of the 576-channel
# latent in 16-bit values (FlashMLA's SharedStorageMLA); a core with less on-chip SRAM runs the one-core kernel
SPLIT_DECODE_SRAM_BYTES = 3 * 64 * 576 * 2
ONE_CORE_HEADS = 64             # query heads one CTA of the one-core kernel takes (128 heads: two CTAs per sequence)
ONE_CORE_TOKENS = 64            # ... and the cached tokens of one tile (a context pads to whole tiles)


@dataclass(frozen=True, slots=True)
class MlaPrefill:
    """An MLA prefill kernel's constants (names as the shared model's, `mla_` ones its own; module docstring)."""

    attention_matrix_efficiency: float
    prefill_cta_cycles: float
    prefill_tile_cycles: float
    attention_prefill_latency_s: float
    prefill_score_vector_flops: float
    mla_prefill_fp8_matrix_efficiency: float
    mla_prefill_fp8_cta_cycles: float
    mla_prefill_largest_cta_share: float = 0.0


@dataclass(frozen=True, slots=True)
class MlaDecode:
    """An MLA (latent) decode kernel's constants (module docstring)."""

    decode_bandwidth_efficiency: float
    decode_stream_cap: float
    decode_pair_bytes_per_core_cycle: float
    decode_cta_cycles: float
    mla_decode_latency_s: float
    mla_decode_latency_cycles: float
    mla_decode_fp8_value_cycles: float


@dataclass(frozen=True, slots=True)
class MlaOneCoreDecode:
    """The one-core MLA decode kernel's constants (module docstring): core cycles per cached latent value of one CTA,
    the CTAs per core that run at that rate, the HBM stream's fraction of the peak bandwidth, fixed cycles."""

    value_cycles: float
    cta_share: float
    bandwidth_efficiency: float
    floor_cycles: float


@dataclass(frozen=True, slots=True)
class MlaAttention:
    """MLA's constants per phase (None: that phase's MLA kernels take the shared constants); one_core_decode: the
    decode of a device that cannot run the split-context kernels (split_decode; None: it takes `decode`'s)."""

    prefill: MlaPrefill | None = None
    decode: MlaDecode | None = None
    one_core_decode: MlaOneCoreDecode | None = None


# Fitted by engine/calibration/silicon/mla_fit.py on every device's MLA rows (2,000 per device; decode: the devices
# whose matrix units take fp8) over the shipped attention constants, 2026-11-27 (docs/accuracy.md, "MLA attention,
# fitted": leave-one-device-out decode 18.8 -> 11.8%, prefill 18.7 -> 12.4% median |error|); prefill refitted with
# its largest-CTA share, 2026-11-28 (h/moe8, "MLA prefill: CTAs listed over the cores": all seven 12.4 -> 11.0%).
SHIPPED_MLA = MlaAttention(
    prefill=MlaPrefill(attention_matrix_efficiency=1.107, prefill_cta_cycles=7162.0, prefill_tile_cycles=0.0,
                       attention_prefill_latency_s=15.69e-6, prefill_score_vector_flops=0.0,
                       mla_prefill_fp8_matrix_efficiency=0.6816, mla_prefill_fp8_cta_cycles=15790.0,
                       mla_prefill_largest_cta_share=0.7778),
    decode=MlaDecode(decode_bandwidth_efficiency=1.031, decode_stream_cap=0.9275,
                     decode_pair_bytes_per_core_cycle=15.86, decode_cta_cycles=7191.0,
                     mla_decode_latency_s=10.12e-6, mla_decode_latency_cycles=24510.0,
                     mla_decode_fp8_value_cycles=0.08203),
    one_core_decode=MlaOneCoreDecode(value_cycles=0.2835, cta_share=0.6055, bandwidth_efficiency=0.6822,
                                     floor_cycles=11260.0))


def mla_groups(shapes, mla: MlaAttention = SHIPPED_MLA) -> tuple:
    """(prefill, decode) per fused group (FusedShapes; arrays, or bools for one group) that `mla` times: MLA's kernels
    have a score head wider than their value head (the Q*gK MACs above half the group's matrix MACs: 192 against 128
    in the naive prefill, 576 against 512 in the absorbed decode); its prefill kernels where mla.prefill is set, its
    latent decode kernels (decode, head dim above LATENT_HEAD_DIM_ABOVE) where mla.decode is. An MHA / GQA decode of
    head dim 512 (scores and values alike) and MLA's naive decode (head dim 192) are neither."""
    decode = shapes.decode
    wide_scores = shapes.score_macs * 2.0 > shapes.matrix_macs * (1.0 + 1e-9)
    return (logical_not(decode) & wide_scores & (mla.prefill is not None),
            decode & wide_scores & (shapes.k > LATENT_HEAD_DIM_ABOVE) & (mla.decode is not None))


def _with(constants, overheads: dict, **fields):
    return replace(constants, attention_overheads=replace(constants.attention_overheads, **overheads), **fields)


def prefill_constants(constants, mla: MlaPrefill, eight_bit: bool = False):
    """`constants` with an MLA prefill kernel's values (eight_bit: those of an 8-bit cache on an fp8 device)."""
    cta = mla.mla_prefill_fp8_cta_cycles if eight_bit else mla.prefill_cta_cycles
    efficiency = mla.mla_prefill_fp8_matrix_efficiency if eight_bit else mla.attention_matrix_efficiency
    return _with(constants, dict(prefill_cta_cycles=cta, prefill_tile_cycles=mla.prefill_tile_cycles,
                                 prefill_score_vector_flops=mla.prefill_score_vector_flops,
                                 prefill_largest_cta_share=mla.mla_prefill_largest_cta_share),
                 attention_matrix_efficiency=efficiency, attention_prefill_latency_s=mla.attention_prefill_latency_s)


def decode_constants(constants, mla: MlaDecode):
    """`constants` with an MLA decode kernel's values and no shared latency (decode_floor_s takes its place)."""
    return _with(constants, dict(decode_bandwidth_efficiency=mla.decode_bandwidth_efficiency,
                                 decode_stream_cap=mla.decode_stream_cap,
                                 decode_pair_bytes_per_core_cycle=mla.decode_pair_bytes_per_core_cycle,
                                 decode_cta_cycles=mla.decode_cta_cycles), attention_decode_latency_s=0.0)


def decode_floor_s(mla: MlaDecode, rates) -> float:
    """The MLA decode kernel's fixed time: seconds where the matrix units take fp4, else cycles at the clock."""
    return mla.mla_decode_latency_s if rates.matrix_fp4 else mla.mla_decode_latency_cycles / rates.clock_hz


def decode_convert_s(mla: MlaDecode, rates, latent_values, eight_bit):
    """The 8-bit latent cache's conversion time on a device whose matrix units take fp8 and not fp4, 0 elsewhere."""
    if not rates.matrix_fp8 or rates.matrix_fp4:
        return latent_values * 0.0
    cycles = latent_values * mla.mla_decode_fp8_value_cycles
    return where(eight_bit, cycles / (rates.cores * rates.clock_hz), 0.0)


def decode_kernel_s(mla: MlaDecode, rates, shapes, body_s, eight_bit):
    """An MLA decode kernel's time: its floor + max(`body_s`, the shared model's time with decode_constants, and the
    conversion of its latent values: sequences x context x latent channels)."""
    latent_values = shapes.batch * shapes.n * shapes.k
    return decode_floor_s(mla, rates) + maximum(body_s, decode_convert_s(mla, rates, latent_values, eight_bit))


def runs_one_core_decode(hardware) -> bool:
    """Whether a device's MLA decode runs the one-core kernel: an NVIDIA GPU whose cores' on-chip SRAM (the workbook's
    sram_per_core) cannot hold the split-context kernels' tiles (SPLIT_DECODE_SRAM_BYTES). A blank field, or another
    vendor's device (AMD's MLA decode kernels split the context in their own tiling), keeps the split kernels."""
    sram = hardware.sram_per_core_bytes
    nvidia = str(hardware.kind).strip().lower() == "gpu" and str(hardware.vendor).strip().upper() == "NVIDIA"
    return nvidia and sram is not None and sram < SPLIT_DECODE_SRAM_BYTES


def split_decode(rates) -> bool:
    """Whether a device (DeviceRates) runs the split-context MLA decode kernels (not runs_one_core_decode)."""
    return not getattr(rates, "mla_one_core_decode", False)


def one_core_decode_s(mla: MlaOneCoreDecode, rates, shapes):
    """The one-core MLA decode kernel's time per group (module docstring): floor + the 2-norm of the CTAs' stream and
    the HBM stream."""
    ctas = shapes.batch * ceil(shapes.m / ONE_CORE_HEADS)
    tokens = ceil(shapes.n / ONE_CORE_TOKENS) * ONE_CORE_TOKENS
    crowding = ctas / (mla.cta_share * rates.cores)
    cta_s = tokens * shapes.k * mla.value_cycles / rates.clock_hz * (1.0 + crowding * crowding) ** 0.5
    hbm_s = shapes.nbytes / (rates.bandwidth * mla.bandwidth_efficiency)
    return mla.floor_cycles / rates.clock_hz + (cta_s * cta_s + hbm_s * hbm_s) ** 0.5


def any_mla(prefill, decode) -> bool:
    return any_true(prefill) or any_true(decode)


def combine(mask, mla_times: dict, mla_kernel, times: dict, kernel):
    """The MLA values where `mask`, the others elsewhere (times: fused_times' dicts; kernel: the device times; None:
    the MLA values everywhere)."""
    if times is None:
        return mla_times, mla_kernel
    if mask.__class__ is bool or (mask.__class__ is np.bool_):
        return (mla_times, mla_kernel) if mask else (times, kernel)
    return {key: where(mask, mla_times[key], value) for key, value in times.items()}, where(mask, mla_kernel, kernel)


__all__ = ["LATENT_HEAD_DIM_ABOVE", "MlaAttention", "MlaDecode", "MlaOneCoreDecode", "MlaPrefill", "ONE_CORE_HEADS",
           "ONE_CORE_TOKENS", "SHIPPED_MLA", "SPLIT_DECODE_SRAM_BYTES", "any_mla", "combine", "decode_constants",
           "decode_convert_s", "decode_floor_s", "decode_kernel_s", "mla_groups", "one_core_decode_s",
           "prefill_constants", "runs_one_core_decode", "split_decode"]
