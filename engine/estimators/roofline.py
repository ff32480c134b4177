"""Roofline: per kernel, max(FLOP / peak of its unit and dtype, bytes / memory bandwidth).

Matrix work runs on the matrix units at the rate of the kernel's dtype (or the format the
device falls back to: `Hardware.matrix_rate_dtype`); element-wise work on the vector units.
A kernel with both (a fused MLP) takes the longer of the two, as the units run concurrently.
The matrix rows of a prefill's attention over an 8-bit KV cache (kv_value_bytes) run at the device's fp8 matrix
rate where it has one, as the realistic method runs that fused kernel (attention_cache_width.py).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from engine.common.arrays import any_true
from engine.estimators.attention_cache_width import EIGHT_BIT_BELOW, eight_bit_prefill_rates
from engine.estimators.bound_labels import labelled
from engine.estimators.row_groups import SMALL_UNIQUE, RowGroups, unique_inverse
from engine.hardware.device import Hardware
from engine.kernels.table import as_columns


_MEMORY_COMPUTE = np.array(["memory", "compute"], dtype=object)
# 0-d operands: numpy converts a Python scalar operand to an array on every call (~1/3 of a small ufunc call)
_ZERO = np.array(0.0)
_NO_RATE = np.array("", dtype=object)


def matrix_peaks(dtypes: np.ndarray, hardware: Hardware) -> tuple[np.ndarray, np.ndarray]:
    """Per row: peak matrix FLOP/s for its dtype, and the dtype the matrix units run it in."""
    if len(dtypes) <= SMALL_UNIQUE:          # one estimate's kernels: a dict of the few dtypes, no sort
        once: dict = {}
        for dtype in dtypes.tolist():
            if dtype not in once:
                once[dtype] = _matrix_rate(hardware, str(dtype))
        rates = [once[dtype] for dtype in dtypes.tolist()]
        return np.array([peak for peak, _ in rates]), np.array([rate_dtype for _, rate_dtype in rates], dtype=object)
    unique, inverse = unique_inverse(dtypes.astype(str))
    rates = [_matrix_rate(hardware, d) for d in unique.tolist()]
    peaks = np.array([peak for peak, _ in rates])
    rate_dtypes = np.array([rate_dtype for _, rate_dtype in rates], dtype=object)
    return peaks[inverse], rate_dtypes[inverse]


def fp8_matrix_flops_per_s(hardware: Hardware) -> float:
    """The device's fp8 matrix peak FLOP/s, 0 where the workbook gives it no fp8 rate."""
    per_cycle = hardware.matrix_macs_per_cycle_per_core_fp8
    return 2.0 * hardware.num_cores * hardware.clock_hz * per_cycle if per_cycle else 0.0


@lru_cache(maxsize=256)
def _row_rates(hardware: Hardware, dtypes: tuple) -> tuple[np.ndarray, np.ndarray]:
    """matrix_peaks of a short table's dtype column (a tuple of its values), kept per (device, column): a sweep's
    tables repeat their dtypes. Read-only arrays (every caller shares them)."""
    peaks, rate_dtypes = matrix_peaks(np.array(dtypes, dtype=object), hardware)
    peaks.setflags(False)
    rate_dtypes.setflags(False)
    return peaks, rate_dtypes


@lru_cache(maxsize=256)
def _matrix_rate(hardware: Hardware, dtype: str) -> tuple[float, str]:
    """(peak matrix FLOP/s, the format the matrix units run it in) of `dtype` on `hardware` (frozen: once each)."""
    return hardware.matrix_flops_per_s(dtype), hardware.matrix_rate_dtype(dtype)


def roofline_times(matrix_flops, vector_flops, nbytes, matrix_peak, vector_peak, bandwidth):
    """(compute time, memory time); numpy broadcasting times many devices at once (engine/explore/evaluation.py)."""
    return np.maximum(matrix_flops / matrix_peak, vector_flops / vector_peak), nbytes / bandwidth


def intensity(flops: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """FLOP per byte, inf where a kernel moves no bytes: np.where(nbytes > 0, flops / nbytes, inf) without dividing
    where it does not keep the quotient (no floating-point warnings to silence, no errstate)."""
    values = np.empty(np.shape(nbytes))
    values.fill(np.inf)
    return np.divide(flops, nbytes, out=values, where=nbytes > _ZERO)


def _narrow_cache(out) -> bool:
    """Whether a row's kv_value_bytes is below EIGHT_BIT_BELOW (NaN compares False, without a warning): only then can
    eight_bit_prefill_rates raise a rate (one comparison instead of its mask and error-state set-up)."""
    return "kv_value_bytes" in out and any_true(np.asarray(out["kv_value_bytes"], dtype=float) < EIGHT_BIT_BELOW)


def estimate_roofline(table, hardware: Hardware, scenario=None, row_groups: RowGroups | None = None,
                      label_bound: bool = True) -> dict[str, np.ndarray]:
    """The table's columns plus compute_time_s, memory_time_s, time_s, bound and intensity. `row_groups`: the
    table's RowGroups where the caller has them (the realistic method shares its own). label_bound=False: `bound`
    is an object column of None in its place (the realistic method labels its own bound there)."""
    out = as_columns(table)
    # read-only views (no copy: the table's number columns are floats already)
    matrix_flops, vector_flops, flops, nbytes = (np.asarray(out[c], dtype=float)
                                                 for c in ("matrix_flops", "vector_flops", "flops", "bytes"))
    if row_groups is None and len(matrix_flops) <= SMALL_UNIQUE:    # one step's kernels: its dtypes' rates kept
        groups = None
        matrix_peak, rate_dtype = _row_rates(hardware, tuple(np.asarray(out["dtype"]).tolist()))
    else:
        groups = row_groups or RowGroups(out)   # dtype lookups once per kernel, not once per decode-step row
        matrix_peak, rate_dtype = (values[groups.inverse]
                                   for values in matrix_peaks(np.asarray(out["dtype"])[groups.first], hardware))
    if _narrow_cache(out):
        raised = eight_bit_prefill_rates(out, matrix_peak, fp8_matrix_flops_per_s(hardware), groups)
        if raised is not matrix_peak:           # an 8-bit cache's prefill attention: the fp8 rate, as realistic runs it
            rate_dtype = np.where(raised > matrix_peak, "fp8", rate_dtype).astype(object)
            matrix_peak = raised
    compute_time, memory_time = roofline_times(matrix_flops, vector_flops, nbytes, matrix_peak,
                                               hardware.vector_flops_per_s, hardware.memory_bandwidth_bytes_per_s)
    out["intensity"] = intensity(flops, nbytes)
    out["matrix_rate_dtype"] = np.where(matrix_flops > _ZERO, rate_dtype, _NO_RATE)
    out["compute_time_s"] = compute_time
    out["memory_time_s"] = memory_time
    out["time_s"] = np.maximum(compute_time, memory_time)
    # one shared str object per label (np.where(...).astype(object) makes one per row: set() and == on a
    # request's ~20,000 rows then hash and compare each string)
    out["bound"] = (labelled(_MEMORY_COMPUTE, (compute_time > memory_time).astype(np.intp)) if label_bound
                    else np.empty(len(compute_time), dtype=object))
    return out
