"""Weight-only quantized GEMMs in `realistic` (W4A16, W8A16: int4 or int8 weights, 16-bit activations): a lower bound
from the mixed-input kernels' measured tables (issue 12).

A weight-only GEMM reads the narrow weights and multiplies at the activation's rate (engine/hardware/dtypes.py), so
the tiles-and-waves timing sees a bf16 GEMM with fewer weight bytes. The mixed-input kernels are slower than that at
small m (aiconfigurator-core's A100 TensorRT-LLM tables, m <= 16: -44.5% int4, -36.7% int8 at the median): they have
their own fixed time, stream the packed weights, walk all of k in one thread block and dequantize every weight on the
vector units once per ROW_TILE activation rows. On every dense GEMM whose weights are narrower than its activations,
of a scenario whose weight format is int4 or int8 (any group size) with 16-bit activations:

    time = max(realistic, latency_cycles / clock
                          + max(bytes / (memory_bandwidth x stream_fraction), k_cycles x k / clock)
                          + dequant_flops x n x k x ceil(m / ROW_TILE) / (vector FLOP/cycle/core x cores x clock))

`bytes` is the row's own (packed weights with their group scales, activation read once, output written once). The
extra time is charged to the efficiency gap (gap_efficiency_s). Workbook fields only (clock, HBM bandwidth, vector
rate, cores): no device names. The grouped MoE GEMMs (Expert_*) keep their own timing (MoE path); fp8 weights with
bf16 activations are not covered (no table).

SHIPPED: one set of constants per weight format, both from A100-SXM TensorRT-LLM 1.0.0, fitted in-sample on every m
of its tables (engine/calibration/silicon/weight_only_fit.py; benchmarks/weight_only_accuracy.py prints the shipped
constants' errors), because the term applies at every m: int8's constants fitted on m <= 16 alone put its m > 1024
rows 40% slow (the dequantization pass per 16 rows grows with m). TensorRT-LLM for int8 too (the tables also hold
H100 SGLang int8_wo) because it is the only framework with tables of both formats, its int4 and int8 kernels (CUTLASS
mixed-input GEMMs) fit alike (15.4-15.5k cycles, 3.0-3.1 cycles per k value), and SGLang's H100 int8 kernel is no
faster than bf16 (1.06x bf16's time at m = 1, 8192 x 8192; 1.4-1.5x at m >= 1024), i.e. not the kernel a user
quantizes for; its constants (40-44k cycles) would bound every device by one framework's slow kernel. Not
cross-validated across devices (int8 leave-one-device-out: 47-101% off, the two tables being two frameworks):
engine/estimators/validity.py says so on every weight-only estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.common.arrays import any_true
from engine.estimators.realistic_gemms import is_expert_gemm
from engine.hardware.dtypes import number_format

ROW_TILE = 16            # activation rows per dequantization pass of the weights (the GEMV kernels' m tile)


@dataclass(frozen=True)
class WeightOnlyConstants:
    latency_cycles: float      # the mixed-input kernel's fixed time, in clock cycles
    stream_fraction: float     # the fraction of the HBM bandwidth its byte stream reaches
    dequant_flops: float       # vector FLOPs per weight per ROW_TILE activation rows (unpack, scale, convert)
    k_cycles: float = 0.0      # cycles per k value of one thread block's serial k loop

    def as_array(self) -> np.ndarray:
        return np.array([self.latency_cycles, self.stream_fraction, self.dequant_flops, self.k_cycles])


# {weight format (compute format of the weight dtype): constants}: A100-SXM TensorRT-LLM 1.0.0, fitted in-sample on
# every m of its table (benchmarks/weight_only_accuracy.py --fit-max-m 0, rounded), since the term applies at every m
SHIPPED = {"int4": WeightOnlyConstants(15500.0, 1.0, 2.5, 3.0), "int8": WeightOnlyConstants(15400.0, 1.0, 2.3, 3.1)}
SHIPPED_SOURCE = "A100-SXM TensorRT-LLM 1.0.0 tables"


def weight_only_format(scenario) -> str | None:
    """'int4' or 'int8' where the scenario quantizes weights only (int4 / int8 weights, any group size, with 16-bit
    activations), else None (also for no scenario)."""
    weight, activation = getattr(scenario, "weight_dtype", None), getattr(scenario, "activation_dtype", None)
    if weight is None or activation is None:
        return None
    name = number_format(weight).compute_format
    return name if name in SHIPPED and number_format(activation).element_bits == 16 else None


def weight_only_seconds(m, n, k, nbytes, hardware, constants: WeightOnlyConstants) -> np.ndarray:
    """The weight-only term (the module docstring's second argument of max) on `hardware`."""
    m, n, k = (np.asarray(v, dtype=float) for v in (m, n, k))
    vector_flops_per_s = hardware.vector_flops_per_cycle_per_core * hardware.num_cores * hardware.clock_hz
    stream = np.asarray(nbytes, dtype=float) / (hardware.memory_bandwidth_bytes_per_s * constants.stream_fraction)
    return (constants.latency_cycles / hardware.clock_hz
            + np.maximum(stream, constants.k_cycles * k / hardware.clock_hz)
            + constants.dequant_flops * n * k * np.ceil(m / ROW_TILE) / vector_flops_per_s)


def weight_only_rows(out: dict, gemm: np.ndarray, value_bytes: np.ndarray, expert: np.ndarray) -> np.ndarray:
    """Of the GEMM rows `gemm`, the dense ones whose weights are narrower than the row's dtype (16-bit activations:
    bytes per weight, bias included, below `value_bytes`), not the grouped MoE rows (`expert`: Expert_*)."""
    k, n = out["k"].astype(float), out["n"].astype(float)
    weights = out["weight_bytes"].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        narrow = (weights > 0) & (weights < k * n * value_bytes)
    return gemm & narrow & ~expert


def apply_weight_only(table, gemm: np.ndarray, chain, scenario) -> None:
    """Raise the weight-only GEMM rows' time to the weight-only term (module docstring), in place on `chain`: t3 to
    term - latency where that is more, so latency + t3 = max(realistic, term). Nothing for other scenarios."""
    name = weight_only_format(scenario)
    if name is None or not any_true(gemm):
        return
    out = table.out
    groups = table.row_groups          # names tested once per kernel, not once per row
    rows = weight_only_rows(out, gemm, table.value_bytes, is_expert_gemm(groups.group_strings("name"))[groups.inverse])
    if not any_true(rows):
        return
    term = weight_only_seconds(out["m"][rows], out["n"][rows], out["k"][rows], out["bytes"][rows], table.hardware,
                               SHIPPED[name])
    chain.t3[rows] = np.maximum(chain.t3[rows], term - chain.latency[rows])
