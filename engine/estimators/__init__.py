"""Estimation methods: each pairs a decomposition with a way to time its kernels.

Every method returns the same result columns (time_s, compute_time_s, memory_time_s, bound,
intensity) so reports and charts compare them side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

from engine.decompose import decompose_columns
from engine.decompose_seed import decompose_seed
from engine.estimators.hierarchical import estimate_hierarchical
from engine.estimators.realistic import estimate_realistic
from engine.estimators.roofline import estimate_roofline
from engine.estimators.seed_tiler import estimate_seed


@dataclass(frozen=True)
class Method:
    name: str
    description: str
    decompose: Callable[..., object]                    # (model, scenario) -> kernel table
    estimate: Callable[..., dict]                       # (table, hardware, scenario) -> columns


METHODS: dict[str, Method] = {
    "roofline": Method(
        "roofline",
        "Per kernel max(FLOP / peak of its unit and dtype, bytes / memory bandwidth); every operand's bytes.",
        decompose_columns, estimate_roofline,
    ),
    "seed": Method(
        "seed",
        "The seed notebook's theoretical tiler on its own decomposition, reproduced exactly (slips included).",
        decompose_seed, estimate_seed,
    ),
    "hierarchical": Method(
        "hierarchical",
        "Cache-aware roofline: max(compute, traffic / bandwidth at HBM, LLC and SRAM), reuse from the "
        "GEMM tile that fits each level; bound names the level.",
        decompose_columns, estimate_hierarchical,
    ),
    "realistic": Method(
        "realistic",
        "Discrete tiles with tile and wave quantization, split-K, GEMV, fused attention, achievable fractions "
        "of peak, kernel latency and host launch overhead (calibrated on measured kernels); gap to the "
        "ideal roofline broken down per cause.",
        decompose_columns, estimate_realistic,
    ),
    "realistic-graph": Method(
        "realistic-graph",
        "The realistic method with CUDA-graph launch: no per-kernel host launch cost (device latency stays).",
        decompose_columns, partial(estimate_realistic, launch="graph"),
    ),
}


# Per-occurrence number columns the hierarchical and realistic methods add: when decode steps are
# combined into one row per kernel (report.aggregate_steps) they are count-weighted means, like time_s,
# so that the realistic gaps still add up to time_s - ideal_time_s on the combined rows.
STEP_MEAN_COLUMNS = (
    "ideal_time_s", "kernel_time_s", "gap_tile_quantization_s", "gap_wave_quantization_s", "gap_efficiency_s",
    "gap_overhead_s", "tiles", "waves", "hbm_bytes", "llc_bytes", "sram_bytes", "hbm_time_s", "llc_time_s",
    "sram_time_s", "launches",
)


def get_method(name: str) -> Method:
    key = str(name).strip().lower()
    if key not in METHODS:
        raise ValueError(f"unknown method {name!r}; expected one of {', '.join(METHODS)}")
    return METHODS[key]
