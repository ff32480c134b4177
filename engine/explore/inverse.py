"""Inverse design: the least of one resource at which a metric meets a target.

    engine.explore.inverse.least_value(model, scenario, engine.load_hardware("H100-SXM"),
                               "memory_bandwidth", "tpot_s", 0.020)      # GB/s for TPOT <= 20 ms

Latency metrics (ttft_s, tpot_s, e2e_s) meet a target when at most it; throughput metrics
(tokens_per_s, tokens_per_s_per_device, prefill_tokens_per_s, tokens_per_j) when at least it.

Hardware fields are searched by bisection on the vectorized model (engine/explore/grid.py): each round
evaluates CANDIDATES_PER_ROUND (64 on the roofline, 16 for the other methods and for the phases
engine/explore/grid.py runs point by point) log-spaced values inside the bracket [largest value that fails,
least value that meets] in one sweep_points call and narrows the bracket to the two neighbours
where the metric crosses the target, until the bracket's relative width is at most `rtol` (whole
numbers: until they are adjacent). That assumes more of the resource never makes the metric worse
(dense sweeps of every field here find it so for the roofline and hierarchical methods; the realistic
method's fused decode attention can grow by ~1e-6 of the step with bandwidth beyond ~40 TB/s); the first
candidate from below that meets the target is taken, so a metric that is not monotone gives the
least value among those tried. Device count (`tp`, alias `devices`) is not monotone (collectives
grow with tp): every layout the model can be split into is evaluated, and the least one that meets
the target is the answer. docs/design_space.md has the details and a worked example.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field as dataclass_field
from typing import Optional

import numpy as np
import pandas as pd

from engine.estimators.collectives import check_interconnect
from engine.results.run import updated_scenario
from engine.explore.grid import field_unit, sweep_points
from engine.explore.points import can_stack
from engine.hardware.device import Hardware
from engine.workload.parallel import parallel_layout
from engine.explore.labels import field_label, format_metric, format_number, metric_label
from engine.explore.hardware_sensitivity import base_value, field_floor, field_limit, hardware_with, is_integer
from engine.workload.scenario import Scenario

LATENCY_METRICS = ("ttft_s", "tpot_s", "e2e_s")
THROUGHPUT_METRICS = ("tokens_per_s", "tokens_per_s_per_device", "prefill_tokens_per_s", "tokens_per_j")
INVERSE_METRICS = LATENCY_METRICS + THROUGHPUT_METRICS
CONTINUOUS_FIELDS = ("memory_bandwidth", "matrix_tflops", "compute_scale", "clock", "llc_capacity", "llc_bandwidth",
                     "link_bandwidth", "inter_node_bandwidth")
INTEGER_FIELDS = ("num_cores",)
DEVICE_FIELDS = ("tp", "devices")             # devices: an alias of tp (pp and dp stay as in the scenario)
INVERSE_FIELDS = CONTINUOUS_FIELDS + INTEGER_FIELDS + DEVICE_FIELDS
CANDIDATES_PER_ROUND = {"roofline": 64}    # broadcast over devices: a wide round costs little; the other
CANDIDATES_PER_OTHER_ROUND = 16             # methods (and point-by-point phases) time each device apart: narrower
                                            # rounds, more of them
BRACKET_FACTOR = 1000.0                       # default bracket: base / 1000 .. base x 1000
MAX_EXPANSIONS = 4                            # times the default bracket is widened (x 1000 each) when needed


@dataclass
class InverseResult:
    """The answer of `least_value` (values in `unit`, the field's workbook unit; metrics in SI)."""

    field: str
    label: str
    unit: str
    metric: str
    target: float
    comparison: str                      # "<=" (latency) or ">=" (throughput)
    value: Optional[float]               # the least value that meets the target; None when unreachable
    metric_at_value: Optional[float]
    value_below: Optional[float]         # the largest value tried that fails (None: the answer is the lowest tried)
    metric_below: Optional[float]
    base_value: float                    # the device's (or scenario's) own value
    base_metric: float
    reachable: bool
    fits: Optional[bool]                 # memory fit at the answer
    evaluations: int                     # points evaluated
    seconds: float
    message: str                         # one plain sentence
    hardware_at_value: Optional[Hardware] = None    # the device with the answer applied (hardware fields)
    scenario_at_value: Optional[Scenario] = None    # the scenario with the answer applied (tp)
    tried: pd.DataFrame = dataclass_field(default=None, repr=False)   # every point evaluated: value, metric, fits

    def as_dict(self) -> dict:
        """The plain fields (no Hardware, Scenario or table), e.g. for JSON."""
        skip = ("hardware_at_value", "scenario_at_value", "tried")
        return {k: v for k, v in self.__dict__.items() if k not in skip}


def least_value(model, scenario: Scenario, hardware: Hardware, field: str, metric: str, target: float, *,
                method: str = "roofline", low: Optional[float] = None, high: Optional[float] = None,
                rtol: float = 1e-4, require_fit: bool = False) -> InverseResult:
    """The least value of `field` at which `metric` meets `target` (<= for latency, >= for throughput).

    `field`: memory_bandwidth (GB/s), matrix_tflops (dense bf16 TFLOP/s; every format scales with it),
    compute_scale (factor on all matrix and vector rates), clock (GHz), num_cores, llc_capacity (MiB),
    llc_bandwidth, link_bandwidth, inter_node_bandwidth (GB/s), or `tp` / `devices` (tensor-parallel
    ways of one replica). `target` is in the metric's SI unit (seconds, tokens/s, tokens/J).

    Assumes more of the resource never makes the metric worse (monotone); bisection on the vectorized
    model narrows [low, high] (default base / 1000 .. base x 1000, widened up to the field's valid range
    when the target lies outside) until its relative width is <= `rtol` (whole numbers: adjacent). If
    even `high` misses the target, the result is unreachable (`reachable` False, `value` None) and says
    why. tp is searched exhaustively over the layouts the model can be split into (tp divides the
    attention heads and MLP width; tp > 1 only on a device with interconnect), from `low` to `high`
    (default 1 .. num_attention_heads). `require_fit`: a point whose memory does not fit fails too.
    """
    started = time.perf_counter()
    _check_arguments(field, metric, target, rtol, low, high)
    search = _Search(model, scenario, hardware, "tp" if field in DEVICE_FIELDS else field, metric, float(target),
                     method, require_fit)
    if search.field == "tp":
        outcome = search.devices(low, high)
    else:
        outcome = search.continuous(low, high, rtol)
    return search.result(field, outcome, time.perf_counter() - started)


def _check_arguments(field, metric, target, rtol, low, high) -> None:
    if field not in INVERSE_FIELDS:
        raise ValueError(f"field {field!r}: expected one of {', '.join(INVERSE_FIELDS)}")
    if metric not in INVERSE_METRICS:
        raise ValueError(f"metric {metric!r}: expected a latency ({', '.join(LATENCY_METRICS)}, met at or below "
                         f"the target) or a throughput ({', '.join(THROUGHPUT_METRICS)}, met at or above it)")
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not math.isfinite(target) or target <= 0:
        raise ValueError(f"target = {target!r}: expected a number > 0 in the metric's unit "
                         "(seconds for latencies, tokens/s or tokens/J for throughputs)")
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float)) or not 0 < rtol < 1:
        raise ValueError(f"rtol = {rtol!r}: expected a relative tolerance between 0 and 1, exclusive")
    for name, value in (("low", low), ("high", high)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or value <= 0):
            raise ValueError(f"{name} = {value!r}: expected a number > 0 (in the field's unit)")
    if low is not None and high is not None and low >= high:
        raise ValueError(f"low = {low!r} must be less than high = {high!r}")


@dataclass
class _Outcome:
    value: Optional[float]
    value_below: Optional[float]
    best: Optional[float] = None         # unreachable: the value tried with the best metric
    note: str = ""                       # how the search ended, for the message


class _Search:
    """The points evaluated so far (value -> metric, fits) and the sweeps that add them."""

    def __init__(self, model, scenario, hardware, field, metric, target, method, require_fit):
        self.model, self.scenario, self.hardware, self.field = model, scenario, hardware, field
        self.metric, self.target, self.method, self.require_fit = metric, target, method, require_fit
        self.latency = metric in LATENCY_METRICS
        self.metrics: dict[float, float] = {}
        self.fits: dict[float, bool] = {}
        self.errors: dict[float, str] = {}
        self.evaluations = 0
        self.integer = is_integer(field)
        if field == "tp":
            self.base = scenario.tp
        else:
            self.base = base_value(hardware, field)
            if self.base is None:
                self.base = math.nan
        self.base_metric = math.nan

    # ---- evaluation ------------------------------------------------------------------------------
    def evaluate(self, values) -> np.ndarray:
        """Evaluate the values not yet tried in one sweep; return whether each of `values` meets the target."""
        values = [int(v) if self.integer else float(v) for v in values]
        new = [v for v in dict.fromkeys(values) if v not in self.metrics]
        if new:
            frame = sweep_points(self.model, self.scenario, pd.DataFrame({self.field: new}), self.hardware,
                                 self.method)
            self.evaluations += len(new)
            for value, result, fits, error in zip(new, frame[self.metric].to_numpy(dtype=float),
                                                  frame["fits"].to_numpy(), frame["error"].to_numpy()):
                self.metrics[value], self.fits[value], self.errors[value] = float(result), bool(fits), str(error)
        return np.array([self.meets(v) for v in values], dtype=bool)

    def meets(self, value) -> bool:
        result = self.metrics[value]
        if not math.isfinite(result):
            return False
        ok = result <= self.target if self.latency else result >= self.target
        return ok and (self.fits[value] or not self.require_fit)

    def check_base(self, extra=()) -> None:
        """Evaluate the base point (with `extra` values in the same sweep); ValueError when it cannot run or the
        metric is undefined for the phase. For tp the base layout may be one the device cannot run: the first
        candidate that runs stands in for it."""
        values = ([self.base] if math.isfinite(self.base) else []) + list(extra)
        self.evaluate(values)
        keys = [int(v) if self.integer else float(v) for v in values]
        running = [k for k in keys if not self.errors[k]]
        if keys and keys[0] in running and math.isfinite(self.base):
            self.base_metric = self.metrics[keys[0]]
        if not keys or (not running and self.field == "tp"):
            return
        key = running[0] if self.field == "tp" else keys[0]
        error, result = self.errors[key], self.metrics[key]
        if error:
            raise ValueError(f"scenario: cannot evaluate {self.model.name} on {self.hardware.name}: {error}")
        if not math.isfinite(result):
            raise ValueError(f"metric {self.metric!r} is not defined for phase {self.scenario.phase!r}"
                             + (" with output_length 1" if self.metric == "tpot_s" else "")
                             + (f" on {self.hardware.name} (no energy values)" if self.metric == "tokens_per_j"
                                else ""))

    # ---- continuous and whole-number hardware fields ---------------------------------------------------
    def continuous(self, low, high, rtol) -> _Outcome:
        limit = field_limit(self.hardware, self.field)
        if not math.isfinite(self.base) and (low is None or high is None):
            raise ValueError(f"field {self.field!r}: {self.hardware.name} leaves it blank; give low and high "
                             "to search a range anyway")
        floor = max(1.0 if self.integer else 0.0, field_floor(self.hardware, self.field))
        if low is not None and low < floor:
            raise ValueError(f"low = {low!r}: below the smallest valid {self.field} "
                             f"({format_number(floor)} {field_unit(self.field)})")
        lo = low if low is not None else max(floor, self.base / BRACKET_FACTOR)
        hi = min(high if high is not None else self.base * BRACKET_FACTOR, limit)
        if high is not None and high > limit:
            raise ValueError(f"high = {high!r}: above the largest valid {self.field} "
                             f"({format_number(limit)} {field_unit(self.field)})")
        if lo >= hi:
            raise ValueError(f"low = {lo!r} must be less than high = {hi!r}")
        per_round = CANDIDATES_PER_ROUND.get(self.method, CANDIDATES_PER_OTHER_ROUND) \
            if can_stack(self.model, self.scenario, self.method) else CANDIDATES_PER_OTHER_ROUND
        candidates = self._spaced(lo, hi, per_round, ends=True)
        self.check_base(candidates)
        meets = self.evaluate(candidates)
        for _ in range(MAX_EXPANSIONS):          # widen a default bracket that does not hold the answer
            if not meets.any() and high is None and hi < limit:
                lo, hi = hi, min(hi * BRACKET_FACTOR, limit)
            elif meets[0] and low is None and lo > floor and (self.integer or lo > self.base / BRACKET_FACTOR ** 2):
                lo, hi = max(floor, lo / BRACKET_FACTOR), lo
            else:
                break
            candidates = self._spaced(lo, hi, per_round, ends=True)
            meets = self.evaluate(candidates)
        if not meets.any():
            return _Outcome(None, candidates[-1], best=self._best(), note="high")
        first = int(np.argmax(meets))
        if first == 0:
            return _Outcome(candidates[0], None, note="low")
        fail, good = candidates[first - 1], candidates[first]
        while not self._narrow_enough(fail, good, rtol):
            inside = self._spaced(fail, good, per_round + 2, ends=False)
            if not inside:
                break
            meets = self.evaluate(inside)
            if meets.any():
                first = int(np.argmax(meets))
                good = inside[first]
                fail = inside[first - 1] if first else fail
            else:
                fail = inside[-1]
        return _Outcome(good, fail)

    def _narrow_enough(self, fail, good, rtol) -> bool:
        return good - fail <= 1 if self.integer else (good - fail) <= rtol * good

    def _spaced(self, lo, hi, count, ends) -> list:
        values = np.geomspace(lo, hi, count)
        if not ends:
            values = values[1:-1]
        if self.integer:
            values = np.unique(np.round(values).astype(np.int64))
            values = values[(values >= lo) & (values <= hi)] if ends else values[(values > lo) & (values < hi)]
            if not ends and values.size == 0 and hi - lo > 1:
                values = np.array([(lo + hi) // 2])
        return [int(v) if self.integer else float(v) for v in values]

    def _best(self) -> Optional[float]:
        finite = {v: m for v, m in self.metrics.items() if math.isfinite(m)}
        if not finite:
            return None
        if self.latency:
            return min(finite, key=lambda v: (finite[v], v))
        return max(finite, key=lambda v: (finite[v], -v))

    # ---- device count ----------------------------------------------------------------------------
    def devices(self, low, high) -> _Outcome:
        options = self.tp_options(low, high)
        if not options:
            raise ValueError(f"field 'tp': {self.model.name} splits into no tp between {low or 1} and "
                             f"{high or self.model.num_attention_heads} on {self.hardware.name}")
        self.check_base(options)
        meets = self.evaluate(options)
        if not meets.any():
            return _Outcome(None, options[-1], best=self._best(), note="high")
        first = int(np.argmax(meets))
        return _Outcome(options[first], options[first - 1] if first else None, note="" if first else "low")

    def tp_options(self, low, high) -> list[int]:
        """Every tp in [low, high] the model divides into (parallel_layout) and, above 1, the device can
        connect (check_interconnect)."""
        top = int(high) if high is not None else self.model.num_attention_heads
        options = []
        for tp in range(max(1, math.ceil(low or 1)), min(top, 4096) + 1):
            try:
                trial = updated_scenario(self.scenario, tp=tp)
                parallel_layout(self.model, trial)
                if max(trial.tp, trial.pp, trial.ep) > 1:
                    check_interconnect(self.hardware, trial)
            except ValueError:
                continue
            options.append(tp)
        return options

    # ---- the result ------------------------------------------------------------------------------
    def result(self, asked_field: str, outcome: _Outcome, seconds: float) -> InverseResult:
        value, below = outcome.value, outcome.value_below
        reachable = value is not None
        hardware_at = scenario_at = None
        if reachable and self.field == "tp":
            scenario_at = updated_scenario(self.scenario, tp=int(value))
        elif reachable:
            hardware_at = hardware_with(self.hardware, self.field, value,
                                        new_name=f"{self.hardware.name} ({self.field} {format_number(value)})")
        tried = pd.DataFrame({"value": list(self.metrics), self.metric: list(self.metrics.values()),
                              "fits": [self.fits[v] for v in self.metrics],
                              "meets": [self.meets(v) for v in self.metrics],
                              "error": [self.errors[v] for v in self.metrics]}).sort_values("value",
                                                                                            ignore_index=True)
        return InverseResult(
            field=asked_field, label=field_label(asked_field), unit=field_unit(self.field),
            metric=self.metric, target=self.target, comparison="<=" if self.latency else ">=",
            value=value, metric_at_value=self.metrics[value] if reachable else None,
            value_below=below, metric_below=self.metrics[below] if below is not None else None,
            base_value=self.base, base_metric=self.base_metric, reachable=reachable,
            fits=self.fits[value] if reachable else None, evaluations=self.evaluations, seconds=seconds,
            message=_capitalized(self.message(outcome)), hardware_at_value=hardware_at,
            scenario_at_value=scenario_at, tried=tried,
        )

    def message(self, outcome: _Outcome) -> str:
        goal = (f"{metric_label(self.metric)} {'at most' if self.latency else 'at least'} "
                f"{format_metric(self.metric, self.target)}")
        label = field_label(self.field)
        shown = self.shown
        if outcome.value is None:
            best = outcome.best
            if best is None:
                return f"{goal} could not be evaluated: {next(iter(self.errors.values()), '')}"
            means = "more devices" if self.field == "tp" else f"{label} alone"
            tried = ", ".join(str(int(v)) for v in sorted(self.metrics))
            at = shown(outcome.value_below) if self.field != "tp" else f"every tp tried ({tried})"
            reason = self._why(best) if self.field != "tp" else ""
            if self.field != "tp" and abs(self.metrics[best] - self.base_metric) <= 1e-9 * abs(self.base_metric):
                reason = f": {label} does not change {metric_label(self.metric)} here ({self.method} method)"
            fit = (" (or does not fit in memory)" if self.require_fit and not self.fits.get(best, True) else "")
            return (f"{goal} is out of reach by {means}: at {at} {metric_label(self.metric)} is still "
                    f"{format_metric(self.metric, self.metrics[outcome.value_below if self.field != 'tp' else best])}"
                    + (f" (best: {shown(best)})" if self.field == "tp" else "") + f"{fit}{reason}.")
        value = outcome.value
        there = f"{metric_label(self.metric)} {format_metric(self.metric, self.metrics[value])}"
        base = (f"the scenario has tp = {int(self.base)}" if self.field == "tp"
                else f"{self.hardware.name} has {shown(self.base)}") if math.isfinite(self.base) else ""
        fit = "" if self.fits[value] else "; the memory does not fit there"
        if outcome.note == "low" and self.field == "tp":
            return f"{goal} is met already at {shown(value)}, the fewest devices tried ({there}){fit}."
        if outcome.note == "low":
            return (f"{goal} is met at every value tried, down to {shown(value)} ({there}): "
                    f"{label} does not limit it here{fit}.")
        needs = (f"needs at least {shown(value)}" if self.field == "tp" or field_unit(self.field) == "count"
                 else f"needs {label} of at least {shown(value)}")
        return f"{goal} {needs} ({there}; {base}){fit}."

    def shown(self, value) -> str:
        """A value of the field as a reader says it: '2,580 GB/s', '1.2 x its compute rates', 'tp = 8'."""
        if self.field == "tp":
            return f"tp = {int(value)}"
        if self.field == "compute_scale":
            return f"{format_number(value)} x its compute rates"
        unit = field_unit(self.field)
        if unit == "count":
            return f"{format_number(value)} {field_label(self.field)}"
        return f"{format_number(value)} {unit}".strip()

    def _why(self, value) -> str:
        """' (compute bound 60%, communication bound 40% of the time)' from a full estimate at `value`."""
        from engine.results.run import estimate
        try:
            hardware = hardware_with(self.hardware, self.field, value)
            phases = estimate(hardware, self.model, self.scenario, method=self.method).phases
        except ValueError:
            return ""
        columns = [c for c in phases.columns if c.endswith("_bound_time_s")]
        total = float(phases["time_s"].sum())
        if total <= 0 or not columns:
            return ""
        shares = (phases[columns].sum() / total).sort_values(ascending=False)
        parts = [f"{name[:-len('_time_s')].replace('_', ' ')} {share:.0%}" for name, share in shares.items()
                 if share >= 0.05]
        return f" ({', '.join(parts)} of the time)" if parts else ""


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]
