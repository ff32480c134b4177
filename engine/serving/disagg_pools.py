"""The two pools of disaggregated serving (engine/serving/disagg.py's module docstring): each worker's Scenario
from its layout, the prefill worker's serve() runs and the decode worker's iteration costs, kept in a cache
between calls on the same devices, layouts and options."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from engine.estimators import get_method
from engine.workload.parallel import ParallelLayout, parallel_layout
from engine.serving.cost import grid_pass, time_pass
from engine.serving.options import ServingOptions
from engine.serving.scheduler import ServingCapacityError
from engine.serving.simulate import SCENARIO_FIELDS, ServingResult, kv_budget, serve
from engine.serving.backend_kernels import backend_method
from engine.serving.backends import backend_profile
from engine.workload.scenario import Scenario

LAYOUT_FIELDS = ("tp", "pp", "dp", "ep")
DECODE_GRID_BATCHES = 12
DECODE_GRID_CONTEXTS = 4


def layout_text(scenario) -> str:
    return f"TP{scenario.tp} PP{scenario.pp} DP{scenario.dp} EP{scenario.ep}"


def pool_scenario(layout, common: dict) -> Scenario:
    """One worker's Scenario from a layout (a Scenario, or a dict of tp/pp/dp/ep and other Scenario fields)
    and the fields both pools share (dtypes, ...)."""
    if isinstance(layout, Scenario):
        return layout.model_copy(update={k: v for k, v in common.items() if k not in LAYOUT_FIELDS})
    given = dict(layout or {})
    unknown = sorted(set(given) - set(SCENARIO_FIELDS))
    if unknown:
        raise TypeError(f"layout field(s) {', '.join(unknown)} unknown; expected {', '.join(SCENARIO_FIELDS)}")
    fields = {**{k: v for k, v in common.items() if k not in LAYOUT_FIELDS}, **given}
    fields.setdefault("devices", None)
    return Scenario(phase="request", batch=1, **fields)


def one_replica(scenario: Scenario) -> Scenario:
    """As serve(): independent replicas (ep <= tp) are timed as one (dp 1); an expert-parallel group wider than
    tp spans the attention-DP replicas, which step together, so the scenario keeps its dp."""
    if scenario.ep <= scenario.tp:
        return Scenario.model_validate({**scenario.model_dump(), "dp": 1, "devices": None})
    return scenario


def _decode_costs(model, hardware, scenario: Scenario, options: ServingOptions, method: str, clients: float):
    """(tau(n): seconds of a decode iteration with n requests per replica, host overhead included; cap: the most
    requests a replica holds; one replica's ParallelLayout)."""
    cost = Scenario.model_validate({**scenario.model_dump(), "input_length": options.input_length,
                                    "output_length": options.output_length, "chunked_prefill": False})
    replica = one_replica(cost)
    layout = parallel_layout(model, replica)
    capacity, per_request = kv_budget(model, replica, hardware, options, layout)
    fit = int(capacity // float(per_request(np.array([options.input_length + options.output_length]))[0]))
    cap = min(fit, options.max_batch or fit)
    if cap < 1:
        raise ServingCapacityError(
            f"one request of {options.input_length} + {options.output_length} tokens does not fit the KV cache of a "
            f"decode worker on {hardware.name} ({capacity / 1e9:.3g} GB per device): use more decode devices "
            "(tp/pp) or a smaller kv dtype")
    top = max(1, min(cap, math.ceil(clients)))
    batches = np.unique(np.round(np.geomspace(1, top, DECODE_GRID_BATCHES)))
    first, last = options.input_length, options.input_length + max(options.output_length - 2, 0)
    contexts = np.unique(np.round(np.linspace(first, last, DECODE_GRID_CONTEXTS)))
    chosen = backend_method(get_method(method), options.backend)     # as serve(): the backend's 4-bit kernels
    graphed = chosen.name == "realistic" and options.graph_decode
    graph = backend_method(get_method("realistic-graph"), options.backend) if graphed else chosen
    overlap = (backend_profile(options.backend).graph_latency_overlap if options.graph_latency_overlap is None
               else options.graph_latency_overlap) if graphed else 0.0    # as serve() (engine/serving/backends.py)
    times = time_pass(grid_pass(batches, contexts), len(batches) * len(contexts), model, replica, hardware,
                      graph, layout, overlap).reshape(len(batches), len(contexts)).mean(axis=1)
    overhead = options.iteration_overhead_s or 0.0

    def tau(n):
        return np.interp(n, batches, times) + overhead
    return tau, cap, layout


def _prefill_options(options: ServingOptions, max_batch: int | None) -> ServingOptions:
    return options.model_copy(update={"output_length": 1, "stagger_start": False, "warmup_requests": 0,
                                      "max_batch": max_batch, "concurrency": 1})


def _layout_fields(scenario: Scenario) -> dict:
    return {k: getattr(scenario, k) for k in (*LAYOUT_FIELDS, "weight_dtype", "activation_dtype", "kv_dtype",
                                              "overlap_communication", "collective_algorithm", "routing_skew",
                                              "mla_decode")}


def _key(kind, hardware, scenario, options, *more):
    return (kind, id(hardware), scenario.model_dump_json(), options.model_dump_json(exclude={"concurrency"}), *more)


def prefill_pool(model, hardware, scenario: Scenario, options: ServingOptions, method: str, cache: dict,
                 max_batch: int | None = None):
    """(idle, saturated) serve() results of one prefill worker (module docstring)."""
    key = _key("prefill", hardware, scenario, options, max_batch)
    if key not in cache:
        base, fields = _prefill_options(options, max_batch), _layout_fields(scenario)
        idle = serve(hardware, model, base.model_copy(update={"concurrency": scenario.dp}), method, **fields)
        saturating = scenario.dp * max(2, 2 * math.ceil(options.token_budget / options.input_length))
        busy = serve(hardware, model, base.model_copy(update={"concurrency": saturating}), method, **fields)
        cache[key] = (idle, busy)
    return cache[key]


def decode_pool(model, hardware, scenario: Scenario, options: ServingOptions, method: str, clients: float,
                cache: dict):
    """_decode_costs, kept in `cache` (the grid spans the largest batch asked for first)."""
    key = _key("decode", hardware, scenario, options)
    if key not in cache or cache[key][0] < min(clients, cache[key][1][1]):
        cache[key] = (clients, _decode_costs(model, hardware, scenario, options, method, clients))
    return cache[key][1]


@dataclass(frozen=True)
class Pools:
    """Each pool's worker (its Scenario) and how many workers it has."""

    prefill: Scenario
    decode: Scenario
    prefill_workers: int
    decode_workers: int

    @property
    def devices(self) -> int:
        return self.prefill_workers * self.prefill.device_count + self.decode_workers * self.decode.device_count

    @property
    def decode_replicas(self) -> int:
        return self.decode_workers * self.decode.dp          # every attention-DP rank decodes its own n requests


@dataclass(frozen=True)
class PrefillRuns:
    """One prefill worker's serve() runs (idle, saturated, the first round's burst) and one replica's layout."""

    idle: ServingResult
    busy: ServingResult
    burst: ServingResult
    layout: ParallelLayout


@dataclass(frozen=True)
class DecodeCosts:
    """tau(n) (seconds of a decode iteration, n requests per replica), cap (the most a replica holds), layout."""

    tau: Callable[[float], float]
    cap: int
    layout: ParallelLayout


def prefill_runs(model, hardware, pools: Pools, options: ServingOptions, method: str, cache: dict,
                 max_batch: int | None) -> PrefillRuns:
    """prefill_pool's idle and saturated runs, and the first round's burst: every client's prompt at t = 0, spread
    over the prefill workers."""
    idle, busy = prefill_pool(model, hardware, pools.prefill, options, method, cache, max_batch)
    burst = serve(hardware, model, _prefill_options(options, max_batch).model_copy(
        update={"concurrency": math.ceil(options.concurrency / pools.prefill_workers), "requests_per_client": 2}),
        method, **_layout_fields(pools.prefill))
    return PrefillRuns(idle, busy, burst, parallel_layout(model, one_replica(pools.prefill)))
