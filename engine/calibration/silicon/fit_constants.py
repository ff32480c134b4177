"""The fitted GEMM constants as RealisticConstants (fit.py's values to ship; fit.py re-exports both)."""

from __future__ import annotations

from dataclasses import replace

from engine.estimators.realistic import DEFAULT_CONSTANTS


def clock_constants_with(fitted: dict, base=DEFAULT_CONSTANTS):
    """`base` with {dtype: (efficiency, latency cycles, joules per FLOP, split-K cycles[, overlap loss[, quantize,
    block-scale FLOPs]])} of the
    clock-and-power form (fit_dtype_clock) added (its efficiency joins gemm_matrix_efficiency; the format latency of
    those dtypes is then unused)."""
    efficiency = {**base.gemm_matrix_efficiency, **{d: values[0] for d, values in fitted.items()}}
    return replace(base, gemm_matrix_efficiency=efficiency,
                   gemm_latency_cycles={d: values[1] for d, values in fitted.items()},
                   gemm_power_j_per_flop={d: values[2] for d, values in fitted.items() if values[2] > 0},
                   gemm_split_k_cycles={d: values[3] for d, values in fitted.items() if values[3] > 0},
                   gemm_overlap_loss={d: values[4] for d, values in fitted.items()
                                      if len(values) > 4 and not isinstance(values[4], dict) and values[4] > 0},
                   gemm_block_scale_flops={d: values[6] for d, values in fitted.items()   # per framework: the tables'
                                           if len(values) > 6 and not isinstance(values[6], dict) and values[6] > 0},
                   gemm_k_step_cycles={d: values[8] for d, values in fitted.items()
                                       if len(values) > 8 and values[8] > 0})


def constants_with(fitted: dict, base=DEFAULT_CONSTANTS):
    """`base` with the fitted per-dtype GEMM constants."""
    return replace(base, gemm_matrix_efficiency={d: e for d, (e, _) in fitted.items()},
                   gemm_format_latency_s={d: x for d, (_, x) in fitted.items()})
