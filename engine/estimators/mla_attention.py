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
    decode (the absorbed form: one shared latent "head" of rank + rope > 256 channels, LATENT_HEAD_DIM_ABOVE)
        decode_bandwidth_efficiency, decode_stream_cap, decode_pair_bytes_per_core_cycle, decode_cta_cycles
                                     in place of the shared ones, and no shared latency; then
        time = floor + max(that time, latent values x mla_decode_fp8_value_cycles / (cores x clock))
        floor: mla_decode_latency_s where the matrix units take fp4, else mla_decode_latency_cycles at the clock;
        the conversion bound only over an 8-bit cache on a device whose matrix units take fp8 and not fp4 (Hopper).

Only on devices that run kernels as CTAs over SIMT cores (DeviceRates.row_waves: GPUs); elsewhere the shared model.
A device whose matrix units take no fp8 (A100) runs another MLA decode kernel (flat in the batch up to 32 sequences,
no split over the context: mla_fit's docstring) that no other device runs, so nothing here is fitted to it: it gets
these constants, and its MLA decode stays ~45% too fast at the median (was 62% with the shared ones; docs/accuracy.md,
"MLA attention, fitted").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from engine.common.arrays import any_true
from engine.common.float_or_array import logical_not, maximum, where

LATENT_HEAD_DIM_ABOVE = 256     # a decode kernel whose head is wider than this is MLA's latent one (576 = 512 + 64)


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
class MlaAttention:
    """MLA's constants per phase (None: that phase's MLA kernels take the shared constants)."""

    prefill: MlaPrefill | None = None
    decode: MlaDecode | None = None


# Fitted by engine/calibration/silicon/mla_fit.py on every device's MLA rows (2,000 per device; decode: the devices
# whose matrix units take fp8) over the shipped attention constants, 2026-11-27 (docs/accuracy.md, "MLA attention,
# fitted": leave-one-device-out decode 18.8 -> 11.8%, prefill 18.7 -> 12.4% median |error|).
SHIPPED_MLA = MlaAttention(
    prefill=MlaPrefill(attention_matrix_efficiency=0.964, prefill_cta_cycles=7088.0, prefill_tile_cycles=0.0,
                       attention_prefill_latency_s=15.74e-6, prefill_score_vector_flops=0.0,
                       mla_prefill_fp8_matrix_efficiency=0.5964, mla_prefill_fp8_cta_cycles=15690.0),
    decode=MlaDecode(decode_bandwidth_efficiency=1.031, decode_stream_cap=0.9275,
                     decode_pair_bytes_per_core_cycle=15.86, decode_cta_cycles=7191.0,
                     mla_decode_latency_s=10.12e-6, mla_decode_latency_cycles=24510.0,
                     mla_decode_fp8_value_cycles=0.08203))


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
                                 prefill_score_vector_flops=mla.prefill_score_vector_flops),
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


__all__ = ["LATENT_HEAD_DIM_ABOVE", "MlaAttention", "MlaDecode", "MlaPrefill", "SHIPPED_MLA", "any_mla", "combine",
           "decode_constants", "decode_convert_s", "decode_floor_s", "decode_kernel_s", "mla_groups",
           "prefill_constants"]
