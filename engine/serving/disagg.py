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

The pools' workers, serve() runs and decode costs are in engine/serving/disagg_pools.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from engine.estimators import get_method
from engine.serving.disagg_pools import (DecodeCosts, Pools, PrefillRuns, decode_pool, layout_text, pool_scenario,
                                         prefill_runs)
from engine.serving.kv_transfer import KVLink, as_link, kv_bytes_per_request, workbook_link
from engine.serving.options import ServingOptions
from engine.serving.simulate import ServingResult, _quantile, metric_attribute, serve, split_fields
from engine.serving.backends import overheads
from engine.results.memory import kv_share_per_device
from engine.workload.scenario import Scenario


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
    common, options, chosen = _resolved_options(options, fields, method)
    pools = Pools(pool_scenario(prefill_layout, common), pool_scenario(decode_layout, common),
                  prefill_workers, decode_workers)
    link = as_link(link) or workbook_link(prefill_hardware, decode_hardware, pools.devices)
    cache = {} if cache is None else cache
    prefill = prefill_runs(model, prefill_hardware, pools, options, chosen, cache, prefill_max_batch)
    per_replica = options.concurrency / pools.decode_replicas
    decode = DecodeCosts(*decode_pool(model, decode_hardware, pools.decode, options, chosen,
                                     max(per_replica, largest_batch or 0), cache))
    transfer = _kv_transfer(model, link, pools, options.input_length, prefill.layout, decode.layout)
    steady = _steady_state(options, pools, prefill, decode, transfer)
    metrics = _metrics(options, pools, prefill, decode, transfer, steady)
    return DisaggregatedResult(prefill_hardware.name, decode_hardware.name, model.name, chosen, options,
                               pools.prefill, pools.decode, prefill_workers, decode_workers, link, metrics,
                               steady.bound, _notes(options, link, transfer, steady.bound, decode.cap))


@dataclass(frozen=True)
class _KVTransfer:
    """One request's KV cache over the link: its bytes, seconds, and the requests/s the links carry."""

    bytes_per_request: float
    seconds: float
    requests_per_s: float


@dataclass(frozen=True)
class _Steady:
    """The closed loop at steady state (module docstring)."""

    n: float                     # requests decoding per replica
    bound: str
    front_min: float             # queue + prefill + transfer at least (server clock)
    prefill_requests_per_s: float
    decode_s: float              # a request's time decoding
    requests_per_s: float
    ttft_s: float                # a steady round's TTFT, request overhead included


def _resolved_options(options: ServingOptions | None, fields: dict, method: str):
    """(Scenario fields both pools share, the options with `fields` and the backend's fitted overheads, the
    method's name)."""
    common, option_fields = split_fields(fields)
    options = options.model_copy(update=option_fields) if options is not None else ServingOptions(**option_fields)
    options = ServingOptions.model_validate(options.model_dump())
    chosen = get_method(method).name
    fitted = overheads(options.backend, chosen)
    options = options.model_copy(update={
        "iteration_overhead_s": fitted[0] if options.iteration_overhead_s is None else options.iteration_overhead_s,
        "request_overhead_s": fitted[1] if options.request_overhead_s is None else options.request_overhead_s})
    return common, options, chosen


def _kv_transfer(model, link: KVLink, pools: Pools, input_length: int, prefill_layout, decode_layout) -> _KVTransfer:
    total = kv_bytes_per_request(model, input_length, pools.prefill.kv_dtype)
    sent = total * kv_share_per_device(model, prefill_layout)
    received = total * kv_share_per_device(model, decode_layout)
    rate = min(pools.prefill_workers * pools.prefill.dp * link.bandwidth_bytes_per_s / sent,
               pools.decode_replicas * link.bandwidth_bytes_per_s / received)
    return _KVTransfer(total, link.seconds(sent, received), rate)


def _steady_state(options: ServingOptions, pools: Pools, prefill: PrefillRuns, decode: DecodeCosts,
                  transfer: _KVTransfer) -> _Steady:
    """n from _solve_decode_batch, the limit it reached, and the throughput and TTFT that follow."""
    clients, request_overhead = options.concurrency, options.request_overhead_s or 0.0
    prefill_rate = pools.prefill_workers * prefill.busy.requests_per_s
    front_min = prefill.idle.ttft_s - request_overhead + transfer.seconds
    steps = max(options.output_length - 1, 0)
    n, bound = _solve_decode_batch(decode.tau, steps, pools.decode_replicas, clients, decode.cap, front_min,
                                   min(prefill_rate, transfer.requests_per_s))
    if bound == "prefill" and transfer.requests_per_s < prefill_rate:
        bound = "link"
    decode_time = steps * float(decode.tau(n))
    rate = (pools.decode_replicas * n / decode_time if decode_time > 0
            else min(prefill_rate, transfer.requests_per_s, clients / front_min))
    steady_ttft = max(clients / rate - decode_time, front_min) + request_overhead
    return _Steady(n, bound, front_min, prefill_rate, decode_time, rate, steady_ttft)


def _ttft_samples(options: ServingOptions, burst: ServingResult, transfer_s: float, steady_ttft: float):
    """(TTFTs, weights) over the rounds serve() counts: the first round's burst and the steady rounds."""
    measured = burst.requests[burst.requests["measured"]]["ttft_s"].to_numpy(dtype=float) + transfer_s
    steady_rounds = options.requests_per_client - 2
    if options.warmup_requests > 0:
        measured, steady_rounds = measured[:0], max(steady_rounds, 1)
    values = np.concatenate([measured, np.full(len(measured) if len(measured) else 1, steady_ttft)])
    weights = np.concatenate([np.ones(len(measured)), np.full(len(measured) if len(measured) else 1,
                                                              float(max(steady_rounds, 0)))])
    if weights.sum() == 0:
        values, weights = values[:1], np.ones(1)
    return values, weights


def _metrics(options: ServingOptions, pools: Pools, prefill: PrefillRuns, decode: DecodeCosts,
             transfer: _KVTransfer, steady: _Steady) -> dict[str, float]:
    osl, tau, cap = options.output_length, decode.tau, decode.cap
    values, weights = _ttft_samples(options, prefill.burst, transfer.seconds, steady.ttft_s)
    ttft = float(np.average(values, weights=weights))
    tpot = float(tau(steady.n)) if osl > 1 else float("nan")
    steps, tokens_per_s = max(osl - 1, 0), steady.requests_per_s * osl
    return {
        "ttft_s": ttft, "ttft_p50_s": _quantile(values, weights, 0.5), "ttft_p90_s": _quantile(values, weights, 0.9),
        "ttft_p99_s": _quantile(values, weights, 0.99), "tpot_s": tpot, "tpot_p50_s": tpot, "tpot_p90_s": tpot,
        "e2e_s": ttft + steady.decode_s, "tokens_per_s": tokens_per_s,
        "tokens_per_s_per_device": tokens_per_s / pools.devices,
        "tokens_per_s_per_user": 1.0 / tpot if osl > 1 and tpot > 0 else float("nan"),
        "requests_per_s": steady.requests_per_s, "kv_transfer_s": transfer.seconds,
        "kv_bytes_per_request": transfer.bytes_per_request,
        "prefill_s": prefill.idle.ttft_s - (options.request_overhead_s or 0.0),
        "prefill_requests_per_s": steady.prefill_requests_per_s, "link_requests_per_s": transfer.requests_per_s,
        "decode_requests_per_s": pools.decode_replicas * cap / (steps * float(tau(cap))) if steps else float("inf"),
        "decode_batch": steady.n, "decode_batch_limit": float(cap)}


def _notes(options: ServingOptions, link: KVLink, transfer: _KVTransfer, bound: str, cap: int) -> list[str]:
    notes = [f"KV cache over {link.description}: {link.bandwidth_bytes_per_s / 1e9:.4g} GB/s, "
             f"{link.latency_s * 1e6:.3g} us latency; {transfer.bytes_per_request / 1e6:.4g} MB per request, "
             f"{transfer.seconds * 1e3:.3g} ms",
             f"throughput limited by the {bound}" + {"prefill": " pool (requests queue before prefill)",
                                                     "link": " (the KV transfer)", "decode": " pool's batch limit "
                                                     f"({cap} requests per replica: max_batch or KV cache)",
                                                     "clients": " (every pool has room)"}[bound]]
    if options.length_spread:
        notes.append("length_spread: the pools are balanced on the mean lengths")
    return notes


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
