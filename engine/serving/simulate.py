"""serve(): a model served on a device at a fixed concurrency, simulated iteration by iteration.

The schedule (engine/serving/scheduler.py) says which prompt chunks and decode tokens run in each
iteration; the kernel table and the chosen estimator time every iteration (engine/serving/cost.py);
each iteration also pays `iteration_overhead_s` of host/framework time, and each request
`request_overhead_s` on the client's clock (engine/serving/backends.py). Latencies per request follow
from the iteration end times:

    TTFT = end of the iteration with the prompt's last chunk - arrival + request overhead
           (+ arrival_wait_share x the iteration running when a later request reached the server, + that
            iteration once more with async_scheduling: the one scheduled ahead, which it cannot join)
    TPOT = (end of the last token's iteration - end of the first token's) / (output tokens - 1)
    request latency (e2e) = end of the last token's iteration - arrival + request overhead

TTFT counts from the request's arrival at the scheduler (a request in transit, `arrival_jitter`, is on the
client's clock, inside the request overhead).

Which requests count (ServingOptions): by default every request but each client's last (the run winds
down around it), as a benchmark counts them, all clients starting together at t = 0, each weighed as a
benchmark of `benchmark_requests` requests in all weighs it (request_weights: the clients' first requests,
the start-up burst, are min(1, C / N) of those measured); with
`warmup_requests` (and `stagger_start` for out-of-step clients) the first requests of each client and
those queued behind them are left out too. Output tokens/s counts every token produced while all
clients are busy (from the first measured arrival until the first client has finished its last
request), over all replicas; per device divides by tp x pp x dp; per user is 1 / mean TPOT (a user's
streaming speed once the first token is out).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from engine.results.run import ScenarioError, check_fits_model
from engine.estimators import get_method
from engine.estimators.validity import realistic_validation, validation_notes
from engine.results.memory import WORKSPACE_FRACTION, kv_share_per_device, peak_activation_bytes, weights_per_device
from engine.workload.parallel import parallel_layout
from engine.results.named import named_inputs
from engine.serving.backend_kernels import backend_method
from engine.serving.backends import (admitted_tokens, backend_profile, check_backend_device, host_terms,
                                     kv_admitted_share, overheads, prefill_scale, request_overhead, scheduled_ahead,
                                     scheduling)
from engine.serving.cost import iteration_times
from engine.serving.options import ServingOptions
from engine.serving.scheduler import ServingCapacityError, schedule
from engine.serving.speculative import draft_kv_per_token, draft_scenario, draft_times, draft_weight_bytes
from engine.workload.scenario import Scenario

SCENARIO_FIELDS = ("tp", "pp", "dp", "ep", "devices", "weight_dtype", "activation_dtype", "kv_dtype",
                   "unquantized_modules", "unquantized_dtype",
                   "overlap_communication", "collective_algorithm", "routing_skew", "mla_decode", "moe_dispatch")
METRICS = ("ttft_s", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "tpot_s", "tpot_p50_s", "tpot_p90_s", "e2e_s",
           "e2e_p90_s", "tokens_per_s", "tokens_per_s_per_device", "tokens_per_s_per_user", "requests_per_s")


def metric_attribute(self, name):
    """`result.ttft_s` for `result.metrics["ttft_s"]` (the results' __getattr__)."""
    metrics = self.__dict__.get("metrics", {})
    if name in metrics:
        return metrics[name]
    raise AttributeError(name)


@dataclass
class ServingResult:
    """Steady-state serving metrics (seconds, tokens/s) and the simulated requests and iterations."""

    hardware: str
    model: str
    method: str
    options: ServingOptions
    scenario: Scenario
    metrics: dict[str, float]
    requests: pd.DataFrame          # every simulated request (`measured` marks the steady-state ones)
    iterations: pd.DataFrame        # every iteration of the first replica kind
    kv_capacity_bytes: float        # per device, for the KV cache
    iteration_overhead_s: float
    notes: list[str] = field(default_factory=list)
    validation: dict | None = None  # realistic methods: validated on measurements or not (estimators/validity.py)
    decode_kernel_latency_s: float = 0.0   # a decode-only step's summed kernel latency (before graph_latency_overlap)
    schedules: list = field(default_factory=list, repr=False)   # (replicas, Schedule, iteration seconds) per replica kind

    __getattr__ = metric_attribute

    @property
    def devices(self) -> int:
        return self.scenario.device_count

    def to_dict(self) -> dict:
        s = self.scenario
        return {"hardware": self.hardware, "model": self.model, "method": self.method,
                **{name: _clean(value) for name, value in self.metrics.items()},
                "devices": self.devices, "tp": s.tp, "pp": s.pp, "dp": s.dp, "ep": s.ep,
                "serving": self.options.model_dump(), "iteration_overhead_s": self.iteration_overhead_s,
                "kv_capacity_bytes": self.kv_capacity_bytes, "iterations": int(len(self.iterations)),
                "measured_requests": int(self.requests["measured"].sum()), "measured_rule": self.options.measured_rule(),
                "notes": list(self.notes),
                "realistic_validation": self.validation}


def _clean(value):
    return None if value is None or not np.isfinite(value) else float(value)


def split_fields(fields: dict) -> tuple[dict, dict]:
    """Keyword fields of serve(): (Scenario fields, ServingOptions fields); unknown names are refused."""
    scenario = {k: v for k, v in fields.items() if k in SCENARIO_FIELDS}
    options = {k: v for k, v in fields.items() if k not in SCENARIO_FIELDS}
    unknown = sorted(set(options) - set(ServingOptions.model_fields))
    if unknown:
        raise TypeError(f"serve() got unknown field(s) {', '.join(unknown)}; serving fields: "
                        f"{', '.join(ServingOptions.model_fields)}; layout and dtype fields: {', '.join(SCENARIO_FIELDS)}")
    return scenario, options


def serve(hardware, model, options: ServingOptions | None = None, method: str = "realistic",
          scenario: Scenario | None = None, **fields) -> ServingResult:
    """Simulate `model` served on `hardware` (module docstring). Fields are ServingOptions fields
    (concurrency, input_length, output_length, token_budget, ...) and the layout/dtype fields of a
    Scenario (tp, pp, dp, ep, weight_dtype, activation_dtype, kv_dtype, ...). `hardware` and `model` may be names
    (a device of the bundled workbook; a catalog id, Hub repo id or config.json path)."""
    hardware, model = named_inputs(hardware, model)
    scenario_fields, option_fields = split_fields(fields)
    options = options.model_copy(update=option_fields) if options is not None else ServingOptions(**option_fields)
    options = ServingOptions(**dict(options))       # validated again after the update
    base = scenario.model_dump() if scenario is not None else {}
    base.update(phase="request", batch=1, chunked_prefill=False, micro_batches=None, **scenario_fields)
    if "moe_dispatch" not in scenario_fields and (scenario is None or "moe_dispatch" not in scenario.model_fields_set):
        base["moe_dispatch"] = backend_profile(options.backend).moe_dispatch   # how the engine runs EP MoE layers
    if any(name in scenario_fields for name in ("tp", "pp", "dp")) and "devices" not in scenario_fields:
        base["devices"] = None
    longest = options.lengths(options.concurrency)
    base.update(input_length=int(longest[0].max()), output_length=int(longest[1].max()))
    cost_scenario = Scenario.model_validate(base)
    chosen = backend_method(get_method(method), options.backend)
    _check_supported(model, cost_scenario, chosen.name, hardware, options.backend)
    check_fits_model(model, cost_scenario)
    options = resolved_options(options, chosen.name, model)
    graphed = chosen.name == "realistic" and options.graph_decode
    overhead, overlap, jitter = options.iteration_overhead_s, options.graph_latency_overlap, options.arrival_jitter
    admitted_share = options.kv_admitted_output_share
    graph = backend_method(get_method("realistic-graph"), options.backend) if graphed else chosen
    replica = cost_scenario
    if cost_scenario.ep <= cost_scenario.tp:   # replicas are independent; an expert-parallel group wider than tp
        replica = Scenario.model_validate({**cost_scenario.model_dump(), "dp": 1, "devices": None})
        # spans replicas (attention data parallelism): they step together with equal loads, so one device's
        # table is the same with dp kept, and one replica's schedule stands for all
    layout = parallel_layout(model, replica)
    draft = _draft(options.speculative, model, replica)
    capacity, kv_per_request = kv_budget(model, replica, hardware, options, layout, draft)
    spec = options.speculative
    step, verify = (spec.tokens_per_step, spec.verify_tokens) if spec is not None else (1.0, 1)
    runs, latencies = [], []
    for clients, replicas in options.replica_concurrencies(cost_scenario.dp).items():
        isl, osl = options.lengths(clients)
        plan = schedule(isl, osl, clients, options.token_budget, options.batch_limit(clients), capacity,
                        kv_per_request(isl + osl), tokens_per_step=step, verify_tokens=verify,
                        mix_decode=options.mixed_prefill, chunk_prompts=options.chunked_prefill,
                        arrival_delays=options.arrival_delays(clients, jitter),
                        kv_bytes_admitted=kv_per_request(admitted_tokens(isl, osl, admitted_share))
                        if admitted_share < 1 else None, context_gate=options.context_gate_iterations or 1,
                        gate_ranks=cost_scenario.dp)
        times = iteration_times(plan, model, replica, hardware, chosen, layout, graph, decode_tokens=verify,
                                latency_overlap=overlap, latencies=latencies)
        if options.prefill_time_scale != 1.0:
            times = np.where(plan.prefill_tokens() > 0, times * options.prefill_time_scale, times)
        times = times + host_times(plan, options)
        if draft is not None:
            times = times + draft_times(plan, spec, draft[0], draft[1], hardware, chosen, draft[2], graph)
        runs.append((replicas, plan, times))
    result = _result(hardware, model, chosen.name, options, cost_scenario, runs, capacity, overhead)
    result.decode_kernel_latency_s = float(np.mean(latencies[0])) if latencies else 0.0
    result.schedules = runs
    return result


def resolved_options(options: ServingOptions, method: str, model=None) -> ServingOptions:
    """`options` with every backend-dependent field settled: the options' value where given, else the backend's
    (engine/serving/backends.py; none of the host-side times for the ideal methods). With `model`, the request
    overhead includes the backend's part per routed expert-layer (backends.request_overhead)."""
    fitted = overheads(options.backend, method)
    profile = backend_profile(options.backend)
    graphed = method == "realistic" and options.graph_decode
    overlap = (profile.graph_latency_overlap if options.graph_latency_overlap is None
               else options.graph_latency_overlap) if graphed else 0.0
    jitter, benchmark_requests = scheduling(options, method)
    per_decoding, wait_share = host_terms(options, method)
    request, per_expert = request_overhead(options, method, model) if model is not None else (
        fitted[1] if options.request_overhead_s is None else options.request_overhead_s, 0.0)
    return options.model_copy(update={
        "iteration_overhead_s": fitted[0] if options.iteration_overhead_s is None else options.iteration_overhead_s,
        "request_overhead_s": request, "request_overhead_per_expert_layer_s": per_expert,
        "mixed_prefill": profile.mixed_prefill if options.mixed_prefill is None else options.mixed_prefill,
        "chunked_prefill": profile.chunked_prefill if options.chunked_prefill is None else options.chunked_prefill,
        "graph_latency_overlap": overlap, "arrival_jitter": jitter, "benchmark_requests": benchmark_requests,
        "iteration_overhead_per_request_s": per_decoding, "arrival_wait_share": wait_share,
        "async_scheduling": scheduled_ahead(options, method),
        "kv_admitted_output_share": kv_admitted_share(options), "prefill_time_scale": prefill_scale(options, method)})


def _draft(spec, model, replica: Scenario):
    """(draft model, its scenario, its layout) for speculative decoding, or None."""
    if spec is None:
        return None
    drafter = spec.drafter(model)
    scenario = draft_scenario(spec, drafter, replica)
    check_fits_model(drafter, scenario)
    return drafter, scenario, parallel_layout(drafter, scenario)


def _check_supported(model, scenario: Scenario, method: str, hardware, backend: str) -> None:
    check_backend_device(backend, hardware)
    if method == "seed":
        raise ScenarioError("the seed method reproduces the notebook's single-device decomposition and has no "
                            "serving schedule; use roofline, hierarchical, realistic or realistic-graph")
    if getattr(model, "automatic", False):
        raise ScenarioError(f"{model.name} is decomposed automatically (traced): serving simulation needs a hand "
                            "model (its per-iteration kernel table); use estimate() for this model")


def kv_budget(model, replica: Scenario, hardware, options: ServingOptions, layout, draft=None):
    """(bytes of one device's memory for the KV cache, bytes a request of L tokens reserves per device).

    With speculative decoding (`draft`: (draft model, scenario, layout)) the draft's weights come out of the
    memory too, and a request also reserves the draft's KV for its L tokens and the target's for the k
    drafted tokens a verification pass writes beyond them."""
    weights = weights_per_device(model, layout, replica.weight_dtype, replica.unquantized_modules,
                                 replica.unquantized_dtype)[0]
    spec = options.speculative
    if draft is not None:
        weights += draft_weight_bytes(spec, draft[0], draft[2], replica.weight_dtype)
    peak_pass = replica.model_copy(update={"phase": "chunked", "chunk_size": options.token_budget,
                                           "input_length": max(options.token_budget, replica.input_length)})
    activations = peak_activation_bytes(model, peak_pass)
    capacity = hardware.memory_capacity_bytes
    room = (capacity - weights - activations - WORKSPACE_FRACTION * capacity) * options.kv_cache_fraction
    if room <= 0:
        raise ServingCapacityError(
            f"{model.name} does not fit on {hardware.name} with tp={replica.tp}, pp={replica.pp}: weights "
            f"{'(draft included) ' if draft is not None else ''}"
            f"{weights / 1e9:.3g} GB + activations {activations / 1e9:.3g} GB + workspace "
            f"{WORKSPACE_FRACTION * capacity / 1e9:.3g} GB exceed {capacity / 1e9:.3g} GB per device; use more "
            "devices (tp/pp) or narrower weights")
    share = kv_share_per_device(model, layout)
    per_token = model.kv_cache_bytes_per_token(replica.kv_dtype) * share
    extra = spec.draft_tokens if draft is not None else 0
    draft_per_token = draft_kv_per_token(draft[0], draft[2], replica.kv_dtype) if draft is not None else 0.0

    def per_request(tokens: np.ndarray) -> np.ndarray:
        drafted = np.asarray(tokens, dtype=float) * draft_per_token
        tokens = np.asarray(tokens) + extra
        if not hasattr(model, "kv_cache_bytes"):
            return np.asarray(tokens, dtype=float) * per_token + drafted
        unique, inverse = np.unique(tokens, return_inverse=True)
        held = np.array([model.kv_cache_bytes(int(t), replica.kv_dtype) for t in unique]) * share
        return held[inverse] + drafted
    return room, per_request


def host_times(plan, options: ServingOptions) -> np.ndarray:
    """Host seconds of every iteration of `plan`: the fixed iteration overhead and the per-decoding-request one."""
    fixed = options.iteration_overhead_s or 0.0
    per_request = options.iteration_overhead_per_request_s or 0.0
    return fixed + per_request * plan.decoding_requests() if per_request else np.full(plan.iterations, fixed)


def request_arrays(plan, times: np.ndarray, options: ServingOptions, request_overhead_s: float | None = None,
                   benchmark_requests: int | None = None, wait_share: float | None = None,
                   ahead: bool | None = None) -> dict:
    """Per request (numpy arrays): arrival, TTFT, TPOT, latency, finish (seconds), whether it is in the
    steady state and its weight in the statistics (`request_weights`). `request_overhead_s`: the per-request host
    time, `benchmark_requests`: the benchmark's requests in all, `wait_share` and `ahead` (async scheduling) the wait
    for the running iteration (default: the options')."""
    ends = np.cumsum(times)
    starts = ends - times
    r = plan.requests
    arrival = starts[r["arrival_iteration"]]
    share = (options.arrival_wait_share if wait_share is None else wait_share) or 0.0
    share += 1.0 if (options.async_scheduling if ahead is None else ahead) else 0.0
    if share:   # a later request waits for the end of the iteration running when it reached the server (and, with
        # async scheduling, for the one scheduled ahead while it ran: one more iteration, charged on the same one)
        before = r["arrival_iteration"] - 1
        arrival = arrival - share * np.where((r["sequence"] > 0) & (before >= 0), times[np.maximum(before, 0)], 0.0)
    # (a request in transit, engine/serving/scheduler.py arrival_delays, is on the client's clock: its mean time is
    # inside the request overhead, so TTFT and latency count from the arrival at the scheduler)
    first = ends[r["first_token_iteration"]]
    finish = ends[r["finish_iteration"]]
    osl = r["output_length"].astype(float)
    tpot = np.where(osl > 1, (finish - first) / np.maximum(osl - 1, 1), np.nan)
    warmup = r["sequence"] < options.warmup_requests
    settled = r["arrival_iteration"] > (r["first_token_iteration"][warmup].max() if warmup.any() else -1)
    measured = ~warmup & settled & (r["sequence"] < options.requests_per_client - 1)
    client = (options.request_overhead_s if request_overhead_s is None else request_overhead_s) or 0.0
    # (the request overhead is on the client's clock, outside the server's schedule)
    total = options.benchmark_requests if benchmark_requests is None else benchmark_requests
    return {"arrival_s": arrival, "ttft_s": first - arrival + client, "tpot_s": tpot,
            "e2e_s": finish - arrival + client, "finish_s": finish, "measured": measured,
            "weight": request_weights(r["sequence"], measured, options.concurrency, total)}


def request_weights(sequence: np.ndarray, measured: np.ndarray, concurrency: int, benchmark_requests: int | None):
    """Each request's weight in the statistics (0 where not measured; measured ones average 1): a benchmark of N
    requests in all counts its clients' first requests (the start-up burst) as min(1, C / N) of them, the later
    ones as the rest; without N, or without measured first or later requests, all count alike."""
    weight = measured.astype(float)
    burst, later = measured & (sequence == 0), measured & (sequence > 0)
    if not benchmark_requests or not burst.any() or not later.any():
        return weight
    share = min(1.0, concurrency / benchmark_requests)
    weight[burst] = share * measured.sum() / burst.sum()
    weight[later] = (1.0 - share) * measured.sum() / later.sum()
    return weight


def request_table(plan, times: np.ndarray, options: ServingOptions) -> pd.DataFrame:
    """Per request: arrival, TTFT, TPOT, latency (seconds) and whether it is in the steady state."""
    return pd.DataFrame({**plan.requests, **request_arrays(plan, times, options)})


def _window_tokens(plan, times: np.ndarray, start: float, stop: float) -> float:
    """Output tokens produced by iterations ending in (start, stop]: decode tokens and first tokens."""
    ends = np.cumsum(times)
    produced = plan.decode_tokens()
    first = np.bincount(plan.requests["first_token_iteration"], minlength=plan.iterations)
    inside = (ends > start) & (ends <= stop)
    return float((produced + first)[inside].sum())


def _result(hardware, model, method, options, scenario, runs, capacity, overhead) -> ServingResult:
    tables, tokens_per_s = [], 0.0
    for kind, (replicas, plan, times) in enumerate(runs):
        table = {**plan.requests, **request_arrays(plan, times, options)}
        client, sequence = table["client"], table["sequence"]
        last_sequence = np.full(int(client.max()) + 1, -1, dtype=np.int64)
        np.maximum.at(last_sequence, client, sequence)
        # every client is busy from the first measured arrival until the first client's last request ends
        start = _least(table["arrival_s"][table["measured"]])
        stop = _least(table["finish_s"][last_sequence[client] == sequence])
        tokens_per_s += replicas * _window_tokens(plan, times, start, stop) / (stop - start)
        tables.append({**table, "replicas": np.full(len(client), replicas), "replica_kind": np.full(len(client), kind)})
    columns = {name: np.concatenate([table[name] for table in tables]) for name in tables[0]}
    requests = pd.DataFrame(columns)
    measured = columns["measured"]
    weights = columns["replicas"][measured].astype(float) * columns["weight"][measured].astype(float)
    ttft, tpot, e2e = (columns[c][measured].astype(float) for c in ("ttft_s", "tpot_s", "e2e_s"))
    mean_tpot = _mean(tpot, weights)
    metrics = {
        "ttft_s": _mean(ttft, weights), "ttft_p50_s": _quantile(ttft, weights, 0.5),
        "ttft_p90_s": _quantile(ttft, weights, 0.9), "ttft_p99_s": _quantile(ttft, weights, 0.99),
        "tpot_s": mean_tpot, "tpot_p50_s": _quantile(tpot, weights, 0.5), "tpot_p90_s": _quantile(tpot, weights, 0.9),
        "e2e_s": _mean(e2e, weights), "e2e_p90_s": _quantile(e2e, weights, 0.9),
        "tokens_per_s": tokens_per_s, "tokens_per_s_per_device": tokens_per_s / scenario.device_count,
        "tokens_per_s_per_user": 1.0 / mean_tpot if mean_tpot and np.isfinite(mean_tpot) else float("nan"),
    }
    metrics["requests_per_s"] = tokens_per_s / float(np.average(columns["output_length"][measured], weights=weights))
    plan, times = runs[0][1], runs[0][2]
    ends = np.cumsum(times)
    iterations = pd.DataFrame({"iteration": np.arange(plan.iterations), "prefill_tokens": plan.prefill_tokens(),
                               "decode_tokens": plan.decode_tokens(), "time_s": times, "end_s": ends})
    notes = []
    if overhead or options.request_overhead_s:
        notes.append(f"host-side times ({options.backend} profile unless given): {overhead * 1e3:.3g} ms per "
                     f"iteration, {options.request_overhead_s * 1e3:.3g} ms per request (in TTFT and latency)")
    if options.speculative is not None:
        notes.append(options.speculative.describe())
    notes.extend(options.batch_notes(scenario.dp) + validation_notes(hardware, method, scenario, model))
    return ServingResult(hardware.name, model.name, method, options, scenario, metrics, requests, iterations,
                         capacity, overhead, notes, realistic_validation(hardware, method, scenario, model))


def _least(values: np.ndarray) -> float:
    """The smallest value (NaNs left out), NaN when there is none (as a pandas column's min())."""
    values = values[~np.isnan(values)]
    return float(values.min()) if len(values) else float("nan")


def _mean(values: np.ndarray, weights: np.ndarray) -> float:
    ok = np.isfinite(values)
    return float(np.average(values[ok], weights=weights[ok])) if ok.any() else float("nan")


def _quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """Weighted quantile (the replica count weighs each request), linear between order statistics."""
    ok = np.isfinite(values)
    if not ok.any():
        return float("nan")
    order = np.argsort(values[ok])
    sorted_values, sorted_weights = values[ok][order], weights[ok][order]
    cumulative = np.cumsum(sorted_weights) - 0.5 * sorted_weights
    return float(np.interp(q * sorted_weights.sum(), cumulative, sorted_values))
