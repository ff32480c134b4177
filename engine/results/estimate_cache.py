"""Estimates kept between calls (fast path, issue 15), and the timed tables an estimate starts from.

Hardware, ModelConfig and Scenario are frozen pydantic objects and every method is a pure function of them,
so equal inputs give the same estimate: a dashboard rerun, or the same estimate asked again, reuses the one
computed before. Each call gets its own Estimate (its own notes, phase totals, memory, energy, schedule
frames and KernelColumns, so a caller's edits reach no other result); the numpy arrays they share are
read-only (an in-place write raises). Automatically decomposed (traced) models, inputs that are not of
those frozen types and requests longer than MAX_KEPT_STEPS decode steps are estimated on every call. `clear()` empties the cache and the decomposition cache
under it (benchmarks/engine_speed.py --cold).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Optional

import numpy as np

from engine.common.arrays import SHORT_ROWS
from engine.estimators import _decomposition, worth_keeping
from engine.hardware.device import Hardware
from engine.kernels.table import column_equals
from engine.models.config import ModelConfig
from engine.results.columns import KernelColumns, bound_codes, combine_steps
from engine.results.phase_totals import step_bound_times
from engine.results.report import Estimate
from engine.workload.parallel import add_pipeline_bubble
from engine.workload.scenario import Scenario

ESTIMATES_KEPT = 64


@dataclass(frozen=True)
class TimedSteps:
    """One estimate's timed tables: `steps` (a row per kernel and decode step, before the pipeline bubble:
    the chunked schedule reads it), the kernels combined over steps with the bubble rows (`kernels`), the time
    per (phase, bound) over the steps and the largest kernel's activations (None where the table does not
    hold the peak pass)."""

    steps: dict
    kernels: KernelColumns
    bound_times: dict
    activations: Optional[float]


def timed_steps(method, hardware, model, scenario: Scenario, table_scenario: Scenario) -> TimedSteps:
    """`method` (an engine.estimators.Method) timing `model`'s table for `table_scenario` on `hardware`."""
    steps = method.estimate(method.decompose(model, table_scenario), hardware, scenario)
    activations = None
    if method.name != "seed" and not scenario.chunked_prefill:
        activations = peak_activations(steps)
    with_bubble = add_pipeline_bubble(steps, scenario, {"prefill": scenario.prefill_micro_batches})
    bounds = bound_codes(with_bubble)          # label codes of the per-step rows, once for both
    return TimedSteps(steps, combine_steps(with_bubble, bounds), step_bound_times(with_bubble, bounds), activations)


def peak_activations(steps: dict) -> float:
    """The largest activation bytes of a row that is not a collective (np.maximum.reduce is what ndarray.max runs,
    without its Python wrapper); a short table without a collective takes every row without a mask."""
    op = steps["op"]
    if len(op) <= SHORT_ROWS and "collective" not in np.asarray(op).tolist():
        return float(np.maximum.reduce(steps["activation_bytes"]))
    return float(np.maximum.reduce(steps["activation_bytes"][~column_equals(steps, "op", "collective")]))


def kept_estimate(compute: Callable[..., Estimate], hardware, model, scenario, method: str) -> Estimate:
    """compute(hardware, model, scenario, method), from the cache when the inputs are frozen ones."""
    if type(hardware) is Hardware and type(model) is ModelConfig and worth_keeping(scenario):
        try:
            kept = _kept(compute, hardware, model, scenario, method)
        except TypeError:          # an unhashable field value: compute without the cache (an error raises again)
            return compute(hardware, model, scenario, method)
        return fresh_copy(kept)
    return compute(hardware, model, scenario, method)


@lru_cache(maxsize=ESTIMATES_KEPT)
def _kept(compute, hardware, model, scenario, method: str) -> Estimate:
    result = compute(hardware, model, scenario, method)
    result.kernel_columns.freeze()
    return result


def fresh_copy(kept: Estimate) -> Estimate:
    """An Estimate of its own: containers copied, read-only arrays and immutable values shared."""
    columns = KernelColumns(kept.kernel_columns.source, kept.kernel_columns.keep)
    columns.added = _copied(kept.kernel_columns.added)
    copy = _shallow(kept)           # every field as kept (numbers, strings, the frozen scenario), then the containers
    copy.__dict__.update(
        kernel_columns=columns, phase_rows=_copied(kept.phase_rows), memory=_shallow(kept.memory),
        notes=list(kept.notes), experts_touched=dict(kept.experts_touched), energy=_copied(kept.energy),
        validation=_copied(kept.validation), _kernels=None, _phases=None,
        **{name: None if getattr(kept, name) is None else getattr(kept, name).copy()
           for name in ("requests", "iterations")})
    return copy


def _shallow(value):
    """A new instance of a plain dataclass with the same field values (dataclasses.replace without the __init__
    call: the kept values were validated when the estimate was made)."""
    copy = object.__new__(value.__class__)
    copy.__dict__.update(value.__dict__)
    return copy


def _copied(value):
    """Dicts and lists copied all the way down (their leaves are numbers, strings or read-only arrays)."""
    if isinstance(value, dict):      # leaves kept as they are without a call each (most values are numbers)
        return {key: _copied(item) if isinstance(item, (dict, list)) else item for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) if isinstance(item, (dict, list)) else item for item in value]
    return value


def clear() -> None:
    """Empty the estimate cache and the decomposition cache under it."""
    _kept.cache_clear()
    _decomposition.cache_clear()
