"""Estimation methods: each pairs a decomposition with a way to time its kernels.

Every method returns the same result columns (time_s, compute_time_s, memory_time_s, bound,
intensity) so reports and charts compare them side by side. Collectives (rows of op `collective`)
are timed once, the same way for every method, by engine.estimators.collectives.time_collectives, which each
method's `estimate` runs after its own timing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Callable

from engine.estimators.collectives import time_collectives
from engine.decomposition.transformer import decompose_columns
from engine.decomposition.seed import decompose_seed
from engine.estimators.hierarchical import estimate_hierarchical
from engine.estimators.realistic import estimate_realistic
from engine.estimators.roofline import estimate_roofline
from engine.estimators.seed_tiler import estimate_seed
from engine.models.config import ModelConfig
from engine.workload.scenario import Scenario


def cached_decomposition(model, scenario) -> dict:
    """decompose_columns(model, scenario), kept for the last DECOMPOSITIONS_KEPT (model, scenario) pairs: both
    are frozen pydantic objects, so equal ones give the same table (a dashboard rerun, the same workload on
    another device or with another method). The cached arrays are read-only (an in-place write raises);
    each call gets its own dict, so callers may add or replace columns. Other models (automatic, traced
    ones) and long requests (`worth_keeping`) decompose every time."""
    if type(model) is not ModelConfig or not worth_keeping(scenario):
        return decompose_columns(model, scenario)
    try:
        return dict(_decomposition(model, scenario))
    except TypeError:              # an unhashable field value: decompose without the cache (an error raises again)
        return decompose_columns(model, scenario)


DECOMPOSITIONS_KEPT = 16
MAX_KEPT_STEPS = 4096      # a request's table has a few rows per decode step: longer ones are not kept (memory)


def worth_keeping(scenario) -> bool:
    """Whether the caches keep results for `scenario`: a Scenario whose tables stay small (at most
    MAX_KEPT_STEPS decode steps in a request; 16 kept tables of ~6 rows x 30 columns per step stay < 100 MB)."""
    return type(scenario) is Scenario and (scenario.phase != "request" or scenario.output_length <= MAX_KEPT_STEPS)


@lru_cache(maxsize=DECOMPOSITIONS_KEPT)
def _decomposition(model, scenario) -> dict:
    return decompose_columns(model, scenario, read_only=True)


def with_collectives(estimate: Callable[..., dict]) -> Callable[..., dict]:
    """`estimate` followed by the one shared timing of the collective rows."""
    def timed(table, hardware, scenario=None):
        return time_collectives(estimate(table, hardware, scenario), hardware, scenario)
    timed.__wrapped__ = estimate
    return timed


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
        cached_decomposition, with_collectives(estimate_roofline),
    ),
    "seed": Method(
        "seed",
        "The seed notebook's theoretical tiler on its own decomposition, reproduced exactly (slips included).",
        decompose_seed, with_collectives(estimate_seed),
    ),
    "hierarchical": Method(
        "hierarchical",
        "Cache-aware roofline: max(compute, traffic / bandwidth at HBM, LLC and SRAM), reuse from the "
        "GEMM tile that fits each level; bound names the level.",
        cached_decomposition, with_collectives(estimate_hierarchical),
    ),
    "realistic": Method(
        "realistic",
        "Discrete tiles with tile and wave quantization, split-K, GEMV, fused attention, achievable fractions "
        "of peak, kernel latency and host launch overhead (calibrated on measured kernels); gap to the "
        "ideal roofline broken down per cause.",
        cached_decomposition, with_collectives(estimate_realistic),
    ),
    "realistic-graph": Method(
        "realistic-graph",
        "The realistic method with CUDA-graph launch: no per-kernel host launch cost (device latency stays).",
        cached_decomposition, with_collectives(partial(estimate_realistic, launch="graph")),
    ),
}


# Per-occurrence number columns the hierarchical and realistic methods add: when decode steps are
# combined into one row per kernel (report.aggregate_steps) they are count-weighted means, like time_s,
# so that the realistic gaps still add up to time_s - ideal_time_s on the combined rows.
STEP_MEAN_COLUMNS = (
    "ideal_time_s", "kernel_time_s", "gap_tile_quantization_s", "gap_wave_quantization_s", "gap_efficiency_s",
    "gap_overhead_s", "tiles", "waves", "hbm_bytes", "llc_bytes", "sram_bytes", "hbm_time_s", "llc_time_s",
    "sram_time_s", "launches", "communication_time_s", "hidden_time_s",
)


def get_method(name: str) -> Method:
    key = str(name).strip().lower()
    if key not in METHODS:
        raise ValueError(f"unknown method {name!r}; expected one of {', '.join(METHODS)}")
    return METHODS[key]
