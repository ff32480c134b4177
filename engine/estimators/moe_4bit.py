"""Grouped MoE GEMMs with 4-bit expert weights: the per-class constants of RealisticConstants.moe_4bit_formats.

A grouped GEMM row (Expert_*) holds 4-bit weights when its weight bytes per value, weight_bytes / (batch x k x n),
is below FOUR_BIT_MAX_BYTES (int4 0.5, int4_g128 0.516, mxfp4 0.531, nvfp4 0.5625 B with their scales; 8-bit
formats 1 or more). Its class (`format_key`) is the activation side's compute format, which the row's dtype names
(engine/hardware/dtypes.gemm_dtype): fp4 -> "w4a4" (nvfp4 x nvfp4), fp8 / int8 -> "w4a8" (mxfp4 x mxfp8), else
"w4a16" (weight-only: mxfp4 or int4 x bf16), + "/native" on matrix units rated for fp4 (the workbook's
matrix_macs_per_cycle_per_core_fp4, gemm_condition.native_block_scales: Blackwell) and "/promoted" elsewhere
(Hopper dequantizes the weights in the kernel's main loop). Each class's (stream, matrix, latency):

    weight and activation stream   bytes / (bandwidth x achievable fraction x stream)       (nbytes / stream)
    matrix rate                    per-core MAC/s x matrix                                  (per_core_macs x matrix)
    fixed time                     + latency seconds per launch (Expert_up [with the gate], Expert_down)

The weight width is read from the numbers, so these scales are computed per call (not kept per table structure:
structure_memo keeps only what the strings decide).
"""

from __future__ import annotations

import numpy as np

from engine.estimators.gemm_condition import native_block_scales
from engine.hardware.dtypes import compute_dtype

FOUR_BIT_MAX_BYTES = 0.75        # weight bytes per value below it: 4-bit weights (scales included)
NEUTRAL = (1.0, 1.0, 0.0)


def format_key(dtype: str, native: bool) -> str:
    """The class of a grouped GEMM with 4-bit weights whose row carries `dtype` (see the module docstring)."""
    compute = compute_dtype(str(dtype))
    activation = "a4" if compute in ("fp4", "int4") else "a8" if compute in ("fp8", "int8") else "a16"
    return f"w4{activation}/{'native' if native else 'promoted'}"


def class_constants(formats: dict, key: str) -> tuple[float, float, float]:
    """(stream, matrix, latency) of class `key` ("w4a16/native"): its entry, else its plain class's ("w4a16"),
    else NEUTRAL. Raises ValueError naming the class for an entry that is not three numbers with positive
    efficiencies."""
    value = formats.get(key, formats.get(key.split("/")[0], NEUTRAL))
    try:
        stream, matrix, latency = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"RealisticConstants.moe_4bit_formats[{key!r}] must be (stream, matrix, latency_s), "
                         f"got {value!r}") from None
    if not (stream > 0 and matrix > 0 and latency >= 0):
        raise ValueError(f"RealisticConstants.moe_4bit_formats[{key!r}]: efficiencies must be > 0 and the latency "
                         f">= 0, got {value!r}")
    return stream, matrix, latency


def four_bit_scales(out: dict, rows: np.ndarray, grouped: np.ndarray, hardware, formats: dict):
    """Per GEMM row of `rows`: (stream, matrix, latency) arrays of moe_4bit_formats (1, 1, 0 on rows without 4-bit
    grouped weights), or None where none applies (no entries, or no such row)."""
    if not formats or not grouped.any():
        return None
    batch, k, n = (np.asarray(out[c])[rows].astype(float) for c in ("batch", "k", "n"))
    weight = np.asarray(out["weight_bytes"])[rows].astype(float)
    per_value = np.divide(weight, batch * k * n, out=np.full(len(weight), np.inf), where=batch * k * n > 0)
    four_bit = grouped & (per_value < FOUR_BIT_MAX_BYTES)
    if not four_bit.any():
        return None
    native = native_block_scales(hardware)
    dtypes = np.asarray(out["dtype"])[rows].astype(str)
    scales = np.tile(np.array(NEUTRAL), (len(weight), 1))
    for dtype in np.unique(dtypes[four_bit]):
        mine = four_bit & (dtypes == dtype)
        scales[mine] = class_constants(formats, format_key(dtype, native))
    if np.all(scales == np.array(NEUTRAL)):
        return None
    return scales[:, 0], scales[:, 1], scales[:, 2]


# Per serving framework, {class: (stream, matrix, latency_s)} fitted on that framework's own MoE tables over every
# device that has the class (moe_4bit_fit.fit_all with framework=...; benchmarks/moe_accuracy.py prints them and the
# leave-one-device-out scores). The frameworks run different kernels for the same format (vLLM's nvfp4 experts stream
# at 0.64-0.68 of the bandwidth, TensorRT-LLM's at 0.21-0.28: moe_4bit_fit.model_free), so one set cannot serve all.
FRAMEWORK_FORMATS: dict[str, dict[str, tuple[float, float, float]]] = {
    "trtllm": {"w4a16/native": (0.5, 0.2, 10e-6), "w4a16/promoted": (1.0, 0.6, 29e-6), "w4a4/native": (0.8, 0.2, 4e-6),
               "w4a8/native": (1.0, 1.0, 0.0)},
    "vllm": {"w4a16/native": (0.5, 0.5, 0.0), "w4a16/promoted": (0.8, 1.0, 7e-6), "w4a4/native": (1.0, 0.7, 0.0),
             "w4a8/native": (1.0, 1.0, 0.0)},
    "sglang": {"w4a16/native": (0.7, 0.6, 0.0), "w4a16/promoted": (0.6, 0.6, 9e-6), "w4a4/native": (1.0, 0.8, 0.0),
               "w4a8/native": (1.0, 1.0, 0.0)},
}


def framework_formats(framework: str) -> dict[str, tuple[float, float, float]]:
    """The 4-bit classes fitted on `framework`'s MoE tables (FRAMEWORK_FORMATS); ValueError naming an unknown one."""
    key = str(framework).strip().lower()
    if key not in FRAMEWORK_FORMATS:
        raise ValueError(f"no 4-bit MoE classes for framework {framework!r}; fitted for "
                         f"{', '.join(FRAMEWORK_FORMATS)} (engine/estimators/moe_4bit.FRAMEWORK_FORMATS)")
    return FRAMEWORK_FORMATS[key]
