"""serve_disaggregated(): prefill on one pool of workers, decode on another, the KV cache moved between them.

C clients in a closed loop (as serve()) send requests to `prefill_workers` prefill workers (device P, its
layout); a request's KV cache then crosses the link (engine/serving/kv_transfer.py) to one of
`decode_workers` decode workers (device D, its layout), which only decode. The two pools are coupled by
the loop; each is simulated with serve()'s pieces and the loop is closed with Little's law:

Prefill pool (serve() on P with output_length = 1: prefill-only iterations, chunked by token_budget):
- L: a prompt's time on an idle worker (one client per replica, requests sent one after another);
- mu_p: requests/s of a saturated worker (2 x token_budget / input_length clients per replica), at most
  what the worker's links can send (each device sends its KV share: kv_transfer.py); times prefill_workers;
- the first round's burst: all C clients send at t = 0, C / prefill_workers prompts queue on each worker
  (serve() with two requests per client: the first round is measured).

Decode pool: every decode replica (decode_workers x its dp) runs decode-only iterations; with n requests
decoding, an iteration takes tau(n) (the cost grid of engine/serving/cost.py on D, CUDA-graph launched under
`realistic`, averaged over the contexts input_length .. input_length + output_length - 1, plus the
backend's iteration overhead). A request spends D(n) = (output_length - 1) tau(n) there. n is capped by
max_batch and by the requests whose whole KV cache fits in D's memory (serve()'s KV budget).

Closing the loop: throughput X = replicas_d x n / D(n) (Little's law on the decode pool); each client's
cycle is C / X = front + D(n), where the front (queue + prefill + transfer, server clock) is at least
L + T_x. n is the largest value with X <= mu_p, X <= the link's rate, n <= cap, n <= C / replicas_d and
front >= L + T_x (front falls as n grows): `bound` names the limit reached (prefill, link, decode,
clients).

Metrics: TTFT (request overhead included) averaged over the rounds as serve() counts them: the first
round's burst (its measured TTFTs plus T_x) and requests_per_client - 2 steady rounds at
front + request overhead (only steady rounds with warm-up requests); TPOT = tau(n); latency = TTFT +
(output_length - 1) TPOT; output tokens/s = X x output_length; per device over all devices of both
pools; per user 1 / TPOT. With length_spread the mean lengths are used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from engine.estimators import get_method
from engine.workload.parallel import parallel_layout
from engine.serving.cost import grid_pass, time_pass
from engine.serving.kv_transfer import KVLink, as_link, kv_bytes_per_request, workbook_link
from engine.serving.options import ServingOptions
from engine.serving.scheduler import ServingCapacityError
from engine.serving.simulate import SCENARIO_FIELDS, _quantile, kv_budget, metric_attribute, serve, split_fields
from engine.serving.backends import backend_profile, overheads
from engine.results.memory import kv_share_per_device
from engine.workload.scenario import Scenario

LAYOUT_FIELDS = ("tp", "pp", "dp", "ep")
DECODE_GRID_BATCHES = 12
DECODE_GRID_CONTEXTS = 4


@dataclass
class DisaggregatedResult:
    """Steady-state metrics of disaggregated serving (seconds, tokens/s) and how they came about."""

    prefill_hardware: str
    decode_hardware: str
    model: str
    method: str
    options: ServingOptions
    prefill_scenario: Scenario       # one prefill worker
    decode_scenario: Scenario        # one decode worker
    prefill_workers: int
    decode_workers: int
    link: KVLink
    metrics: dict[str, float]
    bound: str                       # what limits the throughput: prefill, link, decode or clients
    notes: list[str] = field(default_factory=list)

    __getattr__ = metric_attribute

    @property
    def prefill_devices(self) -> int:
        return self.prefill_workers * self.prefill_scenario.device_count

    @property
    def decode_devices(self) -> int:
        return self.decode_workers * self.decode_scenario.device_count

    @property
    def devices(self) -> int:
        return self.prefill_devices + self.decode_devices

    def to_dict(self) -> dict:
        def layout(s):
            return {"tp": s.tp, "pp": s.pp, "dp": s.dp, "ep": s.ep}
        return {"mode": "disaggregated", "prefill_hardware": self.prefill_hardware,
                "decode_hardware": self.decode_hardware, "model": self.model, "method": self.method,
                **{k: (float(v) if v is not None and np.isfinite(v) else None) for k, v in self.metrics.items()},
                "devices": self.devices, "prefill_workers": self.prefill_workers,
                "decode_workers": self.decode_workers, "prefill_layout": layout(self.prefill_scenario),
                "decode_layout": layout(self.decode_scenario), "bound": self.bound,
                "link": self.link.model_dump(), "serving": self.options.model_dump(), "notes": list(self.notes)}


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
    chosen = get_method(method)
    graphed = chosen.name == "realistic" and options.graph_decode
    graph = get_method("realistic-graph") if graphed else chosen
    overlap = (backend_profile(options.backend).graph_latency_overlap if options.graph_latency_overlap is None
               else options.graph_latency_overlap) if graphed else 0.0    # as serve() (engine/serving/backends.py)
    times = time_pass(grid_pass(batches, contexts), len(batches) * len(contexts), model, replica, hardware,
                      graph, layout, overlap).reshape(len(batches), len(contexts)).mean(axis=1)
    overhead = options.iteration_overhead_s or 0.0

    def tau(n):
        return np.interp(n, batches, times) + overhead
    return tau, cap, layout


def _solve_decode_batch(tau, decode_steps: int, replicas: int, clients: int, cap: int, front_min: float,
                        rate_limit: float) -> tuple[float, str]:
    """The decode requests per replica n (module docstring) and the limit that sets it."""
    def rate(n):
        return replicas * n / max(decode_steps * tau(n), 1e-30)

    def front(n):
        return clients / rate(n) - decode_steps * tau(n)
    top = min(float(cap), clients / replicas)
    bound = "decode" if cap < clients / replicas else "clients"
    if rate(top) > rate_limit:
        bound = "prefill"
    elif front(top) >= front_min or decode_steps == 0:
        return top, bound
    else:
        bound = "clients"
    low, high = 1e-6 * top, top            # rate rises and front falls with n: bisect on both conditions
    for _ in range(60):
        mid = 0.5 * (low + high)
        if rate(mid) <= rate_limit and front(mid) >= front_min:
            low = mid
        else:
            high = mid
    return low, bound



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


def serve_disaggregated(model, prefill_hardware, decode_hardware, prefill_layout=None, decode_layout=None,
                        prefill_workers: int = 1, decode_workers: int = 1, options: ServingOptions | None = None,
                        method: str = "realistic", link=None, *, cache: dict | None = None,
                        largest_batch: int | None = None, prefill_max_batch: int | None = None,
                        **fields) -> DisaggregatedResult:
    """Disaggregated serving (module docstring). Layouts: dicts of tp/pp/dp/ep (or Scenarios); `fields` are
    ServingOptions fields (concurrency, lengths, token_budget, max_batch: per decode replica, backend, ...)
    and Scenario fields both pools share (weight_dtype, activation_dtype, kv_dtype, ...). `link`: a KVLink or a
    (bandwidth B/s, latency s) pair; None takes the workbook's link (kv_transfer.workbook_link). `cache` (a
    dict) keeps the pools' costs between calls on the same devices, layouts and options (a sweep over
    concurrency or worker counts); `largest_batch` sizes the decode grid for the largest batch such a sweep
    reaches. `prefill_max_batch`: prompts a prefill replica admits at once (None: the token budget decides).
    """
    if prefill_workers < 1 or decode_workers < 1:
        raise ValueError(f"prefill_workers={prefill_workers} and decode_workers={decode_workers} must be >= 1")
    common, option_fields = split_fields(fields)
    options = options.model_copy(update=option_fields) if options is not None else ServingOptions(**option_fields)
    options = ServingOptions.model_validate(options.model_dump())
    chosen = get_method(method).name
    fitted = overheads(options.backend, chosen)
    options = options.model_copy(update={
        "iteration_overhead_s": fitted[0] if options.iteration_overhead_s is None else options.iteration_overhead_s,
        "request_overhead_s": fitted[1] if options.request_overhead_s is None else options.request_overhead_s})
    prefill = pool_scenario(prefill_layout, common)
    decode = pool_scenario(decode_layout, common)
    isl = options.input_length
    osl = options.output_length
    devices = prefill_workers * prefill.device_count + decode_workers * decode.device_count
    link = as_link(link) or workbook_link(prefill_hardware, decode_hardware, devices)
    clients = options.concurrency
    request_overhead = options.request_overhead_s or 0.0

    cache = {} if cache is None else cache
    idle, busy = prefill_pool(model, prefill_hardware, prefill, options, chosen, cache, prefill_max_batch)
    dp = prefill.dp
    burst = serve(prefill_hardware, model, _prefill_options(options, prefill_max_batch).model_copy(
        update={"concurrency": math.ceil(clients / prefill_workers), "requests_per_client": 2}), chosen,
        **_layout_fields(prefill))
    prefill_layout_obj = parallel_layout(model, one_replica(prefill))
    per_replica = clients / (decode_workers * decode.dp)
    tau, cap, decode_layout_obj = decode_pool(model, decode_hardware, decode, options, chosen,
                                              max(per_replica, largest_batch or 0), cache)

    # the KV transfer and the link's rate
    total_kv = kv_bytes_per_request(model, isl, prefill.kv_dtype)
    sent = total_kv * kv_share_per_device(model, prefill_layout_obj)
    received = total_kv * kv_share_per_device(model, decode_layout_obj)
    transfer_s = link.seconds(sent, received)
    link_rate = min(prefill_workers * dp * link.bandwidth_bytes_per_s / sent,
                    decode_workers * decode.dp * link.bandwidth_bytes_per_s / received)
    prefill_rate = prefill_workers * busy.requests_per_s
    replicas = decode_workers * decode.dp          # every attention-DP rank decodes its own n requests
    front_min = idle.ttft_s - request_overhead + transfer_s
    steps = max(osl - 1, 0)
    n, bound = _solve_decode_batch(tau, steps, replicas, clients, cap, front_min, min(prefill_rate, link_rate))
    if bound == "prefill" and link_rate < prefill_rate:
        bound = "link"
    tpot = float(tau(n)) if osl > 1 else float("nan")
    decode_time = steps * float(tau(n))
    rate = replicas * n / decode_time if decode_time > 0 else min(prefill_rate, link_rate, clients / front_min)
    steady_ttft = max(clients / rate - decode_time, front_min) + request_overhead

    measured = burst.requests[burst.requests["measured"]]["ttft_s"].to_numpy(dtype=float) + transfer_s
    steady_rounds = options.requests_per_client - 2
    if options.warmup_requests > 0:
        measured, steady_rounds = measured[:0], max(steady_rounds, 1)
    values = np.concatenate([measured, np.full(len(measured) if len(measured) else 1, steady_ttft)])
    weights = np.concatenate([np.ones(len(measured)), np.full(len(measured) if len(measured) else 1,
                                                              float(max(steady_rounds, 0)))])
    if weights.sum() == 0:
        values, weights = values[:1], np.ones(1)
    ttft = float(np.average(values, weights=weights))
    tokens_per_s = rate * osl
    metrics = {
        "ttft_s": ttft, "ttft_p50_s": _quantile(values, weights, 0.5), "ttft_p90_s": _quantile(values, weights, 0.9),
        "ttft_p99_s": _quantile(values, weights, 0.99), "tpot_s": tpot, "tpot_p50_s": tpot, "tpot_p90_s": tpot,
        "e2e_s": ttft + decode_time, "tokens_per_s": tokens_per_s, "tokens_per_s_per_device": tokens_per_s / devices,
        "tokens_per_s_per_user": 1.0 / tpot if osl > 1 and tpot > 0 else float("nan"), "requests_per_s": rate,
        "kv_transfer_s": transfer_s, "kv_bytes_per_request": total_kv, "prefill_s": idle.ttft_s - request_overhead,
        "prefill_requests_per_s": prefill_rate, "link_requests_per_s": link_rate,
        "decode_requests_per_s": replicas * cap / (steps * float(tau(cap))) if steps else float("inf"),
        "decode_batch": n, "decode_batch_limit": float(cap)}
    notes = [f"KV cache over {link.description}: {link.bandwidth_bytes_per_s / 1e9:.4g} GB/s, "
             f"{link.latency_s * 1e6:.3g} us latency; {total_kv / 1e6:.4g} MB per request, {transfer_s * 1e3:.3g} ms",
             f"throughput limited by the {bound}" + {"prefill": " pool (requests queue before prefill)",
                                                     "link": " (the KV transfer)", "decode": " pool's batch limit "
                                                     f"({cap} requests per replica: max_batch or KV cache)",
                                                     "clients": " (every pool has room)"}[bound]]
    if options.length_spread:
        notes.append("length_spread: the pools are balanced on the mean lengths")
    return DisaggregatedResult(prefill_hardware.name, decode_hardware.name, model.name, chosen, options,
                               prefill, decode, prefill_workers, decode_workers, link, metrics, bound, notes)


COMPARE_COLUMNS = ("mode", "devices", "layout", "ttft_s", "tpot_s", "e2e_s", "tokens_per_s",
                   "tokens_per_s_per_device", "tokens_per_s_per_user", "requests_per_s", "error")


def compare_with_aggregated(model, prefill_hardware, decode_hardware, prefill_layout=None, decode_layout=None,
                            prefill_workers: int = 1, decode_workers: int = 1, options: ServingOptions | None = None,
                            method: str = "realistic", link=None, aggregated_hardware=None, aggregated_layout=None,
                            **fields) -> pd.DataFrame:
    """Two rows, disaggregated and aggregated, on the same number of devices and clients. The aggregated
    run uses `aggregated_hardware` (default: the decode device) and `aggregated_layout` (default: the
    decode layout's tp, pp and ep, with dp replicas filling the disaggregated run's devices)."""
    rows = []
    disagg = serve_disaggregated(model, prefill_hardware, decode_hardware, prefill_layout, decode_layout,
                                 prefill_workers, decode_workers, options, method, link, **fields)
    layout = (f"{prefill_workers} x P[{layout_text(disagg.prefill_scenario)}] + "
              f"{decode_workers} x D[{layout_text(disagg.decode_scenario)}]")
    rows.append({"mode": "disaggregated", "devices": disagg.devices, "layout": layout, **disagg.metrics, "error": ""})
    hardware = aggregated_hardware or decode_hardware
    d = disagg.decode_scenario
    agg = dict(aggregated_layout or {"tp": d.tp, "pp": d.pp, "ep": d.ep,
                                     "dp": max(1, disagg.devices // (d.tp * d.pp))})
    common, option_fields = split_fields(fields)
    row = {"mode": "aggregated", "devices": agg.get("tp", 1) * agg.get("pp", 1) * agg.get("dp", 1),
           "layout": f"TP{agg.get('tp', 1)} PP{agg.get('pp', 1)} DP{agg.get('dp', 1)} EP{agg.get('ep', 1)}", "error": ""}
    try:
        result = serve(hardware, model, options, method, **{**option_fields, **common, **agg})
        row.update(result.metrics)
    except ValueError as error:
        row["error"] = str(error).splitlines()[0]
    rows.append(row)
    return pd.DataFrame(rows).reindex(columns=list(dict.fromkeys([*COMPARE_COLUMNS, *rows[0]])))
