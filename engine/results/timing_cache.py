"""The timed kernel table of one (method, hardware, model, scenario), kept between estimates (fast path, issue 15).

Hardware, ModelConfig and Scenario are frozen pydantic objects and every method is a pure function of them,
so equal inputs give the same timed table: a dashboard rerun, or the same estimate asked again, reuses it
instead of decomposing and timing anew. What is kept is read-only (numpy arrays flagged not writeable, so an
in-place write raises) and each estimate builds its own result objects (KernelColumns, DataFrames, notes) from
it. Automatically decomposed (traced) models, and anything that is not of those frozen types, are timed on
every call. `clear()` empties the cache (benchmarks/engine_speed.py --cold).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

import numpy as np

from engine.estimators import _decomposition
from engine.hardware.device import Hardware
from engine.models.config import ModelConfig
from engine.results.columns import combine_steps, step_bound_times
from engine.workload.parallel import add_pipeline_bubble
from engine.workload.scenario import Scenario

TIMINGS_KEPT = 16


@dataclass(frozen=True)
class TimedSteps:
    """One estimate's timed tables: `steps` (a row per kernel and decode step, before the pipeline bubble:
    the chunked schedule reads it), `with_bubble` (steps plus the bubble rows), the kernels combined over
    steps (`kernel_source`, `kernel_keep`: KernelColumns' arguments), the time per (phase, bound) over the
    steps and the largest kernel's activations (None where the table does not hold the peak pass)."""

    steps: dict
    with_bubble: dict
    kernel_source: dict
    kernel_keep: Optional[np.ndarray]
    bound_times: dict
    activations: Optional[float]


def timed_steps(method, hardware, model, scenario: Scenario, table_scenario: Scenario) -> TimedSteps:
    """`method` (an engine.estimators.Method) timing `model`'s table for `table_scenario` on `hardware`
    (the scenario's own collectives and launch), combined; from the cache when the inputs are frozen ones."""
    if type(hardware) is Hardware and type(model) is ModelConfig and type(scenario) is Scenario \
            and table_scenario is scenario:
        return _kept(method, hardware, model, scenario)
    return _time(method, hardware, model, scenario, table_scenario)


@lru_cache(maxsize=TIMINGS_KEPT)
def _kept(method, hardware, model, scenario: Scenario) -> TimedSteps:
    timed = _time(method, hardware, model, scenario, scenario)
    for table in (timed.steps, timed.with_bubble, timed.kernel_source):
        for values in table.values():
            if isinstance(values, np.ndarray):
                values.setflags(write=False)
    if timed.kernel_keep is not None:
        timed.kernel_keep.setflags(write=False)
    return timed


def _time(method, hardware, model, scenario: Scenario, table_scenario: Scenario) -> TimedSteps:
    steps = method.estimate(method.decompose(model, table_scenario), hardware, scenario)
    activations = None   # the largest kernel's activations: from the table when it has the peak pass
    if method.name != "seed" and not scenario.chunked_prefill:
        activations = float(steps["activation_bytes"][np.asarray(steps["op"]) != "collective"].max())
    with_bubble = add_pipeline_bubble(steps, scenario, {"prefill": scenario.prefill_micro_batches})
    kernels = combine_steps(with_bubble)
    return TimedSteps(steps, with_bubble, kernels.source, kernels.keep, step_bound_times(with_bubble), activations)


def clear() -> None:
    """Empty the timing cache and the decomposition cache under it."""
    _kept.cache_clear()
    _decomposition.cache_clear()
