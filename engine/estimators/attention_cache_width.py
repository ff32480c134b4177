"""The KV cache's width as the fused attention kernels see it, and the matrix rate it selects for a prefill.

The kernel table carries, on every attention row, `kv_value_bytes`: the bytes per K/V value the fused kernel reads
(the KV cache's dtype; the activation dtype where K/V are rebuilt from a latent each step). The realistic method
reads it from each group's lead row. A table without that column (built by hand before it existed) falls back to
the width inferred from the group's KV read (fused_attention.cached_value_bytes), which is right for a uniform decode
only: a prefill reads its new K/V as activations, and a serving iteration's mixed chunks give a row the key span that
matches its pairs, not its mean context, so bytes / (2 x batch x span x head dim) is not the cache's width there.

A prefill over a cache of at most 8 bits per value runs its fused kernel at the device's fp8 matrix rate where the
workbook gives one (`matrix_macs_per_cycle_per_core_fp8`): TensorRT-LLM's context kernel computes Q.K and P.V in fp8
when the cache is fp8, and AIConfigurator's tables time a bf16 prefill over an fp8 cache like an fp8 one (0.72-0.97x
the bf16 time on H100, B200, GB200, B300 and GB300, at every length; docs/accuracy.md, "Prefill attention").
"""

from __future__ import annotations

import math

import numpy as np

EIGHT_BIT_BELOW = 1.5     # a K/V value narrower than this many bytes is an 8-bit (or narrower) cache


def group_kv_value_bytes(out, lead, inferred):
    """Per fused group (lead: its lead row, an int or an array of them): the lead row's kv_value_bytes where the table
    has the column and the value is finite, else `inferred()` (the width read back from the group's bytes, or None)."""
    if "kv_value_bytes" not in out:
        return inferred()
    column = np.asarray(out["kv_value_bytes"])
    if isinstance(lead, (int, np.integer)):
        value = float(column[lead])
        return value if math.isfinite(value) else inferred()
    values = column[lead].astype(float)
    if np.isfinite(values).all():
        return values
    fallback = inferred()
    return values if fallback is None else np.where(np.isfinite(values), values, fallback)


def prefill_macs_per_s_per_core(per_core, decode, kv_value_bytes, fp8_macs_per_s_per_core: float):
    """Per group: the matrix MAC/s of one core its fused kernel runs at: a prefill (not `decode`) over a cache of at
    most 8 bits per value (0 < kv_value_bytes < EIGHT_BIT_BELOW) at least at the device's fp8 rate where it has one
    (fp8_macs_per_s_per_core > 0), every other group at `per_core` (its dtype's rate)."""
    if kv_value_bytes is None or fp8_macs_per_s_per_core <= 0:
        return per_core
    if isinstance(decode, (bool, np.bool_)):        # one group, as floats
        eight_bit = not decode and 0.0 < kv_value_bytes < EIGHT_BIT_BELOW
        return max(per_core, fp8_macs_per_s_per_core) if eight_bit else per_core
    with np.errstate(invalid="ignore"):
        eight_bit = ~np.asarray(decode) & (kv_value_bytes > 0) & (kv_value_bytes < EIGHT_BIT_BELOW)   # NaN: False
    return np.where(eight_bit, np.maximum(per_core, fp8_macs_per_s_per_core), per_core)


def row_ideals(out, rows, is_matrix, row_rate, kernel_rate):
    """Per row of `rows` (an attention group's, arrays; kernel_rate per row: its group's kernel rate): its roofline
    time (out's time_s), except that a matrix row whose kernel runs above the row's own dtype rate (an 8-bit cache's
    prefill at the fp8 rate) has its ideal at the kernel's rate: max(compute_time_s x row_rate / kernel_rate,
    memory_time_s). So the fused kernel's time is not floored at the 16-bit roofline of its rows. None where no row
    is raised (the roofline times stand)."""
    raised = np.asarray(is_matrix) & (kernel_rate > row_rate)
    if not raised.any():
        return None
    ideal = np.asarray(out["time_s"])[rows].astype(float)
    at = rows[raised]
    ideal[raised] = np.maximum(np.asarray(out["compute_time_s"])[at] * (row_rate / kernel_rate)[raised],
                               np.asarray(out["memory_time_s"])[at])
    return ideal
