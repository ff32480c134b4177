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

from engine.common.arrays import any_true
from engine.estimators.row_groups import RowGroups

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


def prefill_macs_per_s_per_core(per_core, decode, kv_value_bytes, fp8_macs_per_s_per_core):
    """Per group: the matrix MAC/s of one core its fused kernel runs at: a prefill (not `decode`) over a cache of at
    most 8 bits per value (0 < kv_value_bytes < EIGHT_BIT_BELOW) at least at the device's fp8 rate where it has one
    (fp8_macs_per_s_per_core > 0), every other group at `per_core` (its dtype's rate). Only max and where: any
    unit of rate does (the roofline passes FLOP/s of the whole device), and arrays broadcast (rows x devices)."""
    fp8 = fp8_macs_per_s_per_core       # a float (the usual device) tested without numpy's reduction set-up
    if kv_value_bytes is None or not (fp8 > 0 if fp8.__class__ is float else any_true(np.asarray(fp8) > 0)):
        return per_core
    if isinstance(decode, (bool, np.bool_)):        # one group, as floats
        eight_bit = not decode and 0.0 < kv_value_bytes < EIGHT_BIT_BELOW
        return max(per_core, fp8_macs_per_s_per_core) if eight_bit else per_core
    with np.errstate(invalid="ignore"):
        eight_bit = ~np.asarray(decode) & (kv_value_bytes > 0) & (kv_value_bytes < EIGHT_BIT_BELOW)   # NaN: False
    return np.where(eight_bit, np.maximum(per_core, fp8_macs_per_s_per_core), per_core)


def eight_bit_prefill_rates(columns, rate, fp8_rate, row_groups=None):
    """Per row: `rate` (its dtype's matrix rate, per row, or rows x devices), raised to `fp8_rate` (the device's fp8
    matrix rate in the same unit, or per device; 0: none) on the matrix rows of attention (op "attention") of a
    prefill (type not Va_Mqa) over an 8-bit cache (their kv_value_bytes), by prefill_macs_per_s_per_core: the rate
    the realistic method runs that fused kernel at, so the roofline's ideal of such a row is never slower than the
    realistic estimate. `rate` itself where the table has no kv_value_bytes column or no such row. `row_groups`: the
    table's RowGroups where the caller has them."""
    if "kv_value_bytes" not in columns:
        return rate
    kv = np.asarray(columns["kv_value_bytes"], dtype=float)
    with np.errstate(invalid="ignore"):
        narrow = (kv > 0) & (kv < EIGHT_BIT_BELOW)             # NaN: False
    if not any_true(narrow):
        return rate
    row_groups = row_groups or RowGroups(columns)
    matrix = (row_groups.group_strings("op") == "attention")[row_groups.inverse]
    decode = (row_groups.group_strings("type") == "Va_Mqa")[row_groups.inverse] | ~matrix
    if np.ndim(rate) == 2:              # rows x devices
        decode, kv = decode[:, None], kv[:, None]
    return prefill_macs_per_s_per_core(rate, decode, kv, fp8_rate)


def row_ideals(out, rows, is_matrix, row_rate, kernel_rate):
    """Per row of `rows` (an attention group's, arrays; row_rate: the rate the roofline timed each row at,
    per_core_matrix_rates; kernel_rate per row: its group's kernel rate): its roofline time (out's time_s), except
    that a matrix row whose kernel runs above the row's roofline rate has its ideal at the kernel's rate:
    max(compute_time_s x row_rate / kernel_rate, memory_time_s). The roofline already times an 8-bit cache's prefill
    rows at the fp8 rate where the table has kv_value_bytes; this is for a table without it (the width inferred from
    the group's bytes). None where no row is raised (the roofline times stand)."""
    raised = np.asarray(is_matrix) & (kernel_rate > row_rate)
    if not any_true(raised):
        return None
    ideal = np.asarray(out["time_s"])[rows].astype(float)
    at = rows[raised]
    ideal[raised] = np.maximum(np.asarray(out["compute_time_s"])[at] * (row_rate / kernel_rate)[raised],
                               np.asarray(out["memory_time_s"])[at])
    return ideal
