"""The offset a fused attention kernel adds over its fused roofline, never larger with less bandwidth.

realistic_fused.shared_kernel_s times a fused attention kernel as latency + t3 + offset, the offset being its rows'
roofline times summed (the ideal sum, I) over the fused kernel's roofline t0 = max(Tc, B / b) (Tc: its compute
roofline, the matrix work at the peak or the vector work; B / b: its bytes at the bandwidth b), so that no row is charged
less than its ideal. Where the fused kernel's roofline is memory-bound (B / b > Tc), that offset is
sum over rows of max(compute_i - memory_i, 0), which GROWS with bandwidth: the rows' bytes vanish faster from the
fused roofline than from the rows' own. A kernel whose t3 does not fall with bandwidth (its compute or fixed work
bound it) then got slower with more bandwidth (TPU-v5e, DeepSeek-V3 decode, batch 256, 257 cached tokens: 204 -> 216
-> 227 us at 1, 1.5, 2x the bandwidth).

The offset is therefore taken at max(b, b_t), b_t being the bandwidth where the fused roofline turns compute-bound
(B / b_t = Tc): on a memory-bound kernel, sum over rows of max(compute_i, memory_i x Tc / (B / b)) - Tc, held as the
bandwidth falls. The offset rises with b below b_t and does not above it, so that is the least non-increasing offset
at or above the old one; on a compute-bound kernel it is the old offset, bit for bit.
"""

from __future__ import annotations

import numpy as np


def _compute_bound(shapes, rates):
    """(the fused compute roofline Tc, the fused memory roofline B / b) per group, as fused_times' t0 takes them."""
    peak = rates.macs_per_s_per_core * rates.cores
    compute = shapes.matrix_macs / peak
    vector = shapes.vector_flops / rates.vector_flops_per_s
    return (compute if compute != compute or compute >= vector else vector), shapes.nbytes / rates.bandwidth


def transition_offsets(out, at_rows, group, groups: int, by_group, shapes, rates, is_matrix, row_rate, kernel_rate):
    """Per group (arrays): the offset at the bandwidth where its fused roofline turns compute-bound, for the
    memory-bound groups (0 elsewhere); None where no group is memory-bound. Per attention row: row_rate, the rate the
    roofline timed it at, and kernel_rate, its group's kernel rate (a matrix row whose kernel runs faster has its
    compute at the kernel's rate, as row_ideals)."""
    peak = rates.macs_per_s_per_core * rates.cores
    compute_roofline = np.maximum(shapes.matrix_macs / peak, shapes.vector_flops / rates.vector_flops_per_s)
    memory_roofline = shapes.nbytes / rates.bandwidth
    memory_bound = memory_roofline > compute_roofline
    if not memory_bound.any():
        return None
    ratio = np.where(memory_bound, compute_roofline / np.where(memory_bound, memory_roofline, 1.0), 1.0)
    compute = at_rows.take(np.asarray(out["compute_time_s"])).astype(float)
    raised = np.asarray(is_matrix) & (kernel_rate > row_rate)
    compute = np.where(raised, compute * (row_rate / kernel_rate), compute)
    memory = at_rows.take(np.asarray(out["memory_time_s"])).astype(float)
    ideal = by_group.sums(np.maximum(compute, memory * ratio[group]), groups)
    return np.where(memory_bound, np.maximum(ideal - compute_roofline, 0.0), 0.0)


def one_transition_offset(out, rows, shapes, rates, is_matrix, row_rate):
    """transition_offsets of one group in Python floats (row order, as np.bincount adds); None if compute-bound."""
    compute_roofline, memory_roofline = _compute_bound(shapes, rates)
    if not memory_roofline > compute_roofline:
        return None
    ratio = compute_roofline / memory_roofline
    kernel_rate = rates.macs_per_s_per_core
    total = 0.0
    for compute, memory, matrix, rate in zip(np.asarray(out["compute_time_s"])[rows].astype(float).tolist(),
                                             np.asarray(out["memory_time_s"])[rows].astype(float).tolist(),
                                             is_matrix, np.asarray(row_rate, dtype=float).tolist()):
        if matrix and kernel_rate > rate:
            compute = compute * (rate / kernel_rate)
        scaled = memory * ratio
        total += compute if compute != compute or compute >= scaled else scaled
    offset = total - compute_roofline
    return offset if offset != offset or offset >= 0.0 else 0.0
