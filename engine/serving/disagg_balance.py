"""Balancing the prefill and decode pools, and the disaggregated rows of the serving search.

Pool rates (requests/s per worker):
- prefill: a saturated prefill worker (serve() with output_length 1 and 2 x token_budget / input_length clients
  per replica), at most what its devices' links send (engine/serving/disagg.py);
- decode: replicas x n / ((output_length - 1) tau(n)) at n requests per replica (Little's law), n capped by
  max_batch and the KV cache.

`balance_pools` picks the worker counts within a device budget that serve the most requests/s:
max over (W_p, W_d) of min(W_p x prefill rate, W_d x decode rate(W_d)) with W_p x prefill devices + W_d x
decode devices <= the budget; ties (within 1e-6) go to fewer devices, then to more decode workers. With rates of 10 and 5 requests/s per one-device worker and 9
devices: 3 prefill and 6 decode workers, 30 requests/s each way.

`disaggregated_candidates` evaluates every (prefill layout, decode layout, concurrency) on `total_devices`
with the balanced worker counts (the decode batch each concurrency gives), one row per configuration in
the serving search's columns (docs/serving.md); layouts that do not fit are rows with `fits` False and the
reason.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from engine.results.run import ScenarioError
from engine.workload.parallel import parallel_layout
from engine.serving.disagg import serve_disaggregated
from engine.serving.disagg_pools import decode_pool, layout_text, one_replica, pool_scenario, prefill_pool
from engine.serving.kv_transfer import as_link
from engine.serving.options import ServingOptions
from engine.serving.simulate import SCENARIO_FIELDS
from engine.workload.scenario import Scenario

CONFIG_COLUMNS = ("device", "mode", "tp", "pp", "dp", "ep", "attention_dp", "concurrency", "token_budget", "devices",
                  "fits", "reason", "ttft_s", "tpot_s", "e2e_s", "tokens_per_s", "tokens_per_s_per_device",
                  "tokens_per_s_per_user", "meets_sla", "sla_failure", "on_front", "layout", "prefill_device",
                  "decode_device", "prefill_layout", "decode_layout", "prefill_workers", "decode_workers",
                  "kv_transfer_s")
DEFAULT_CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def balance_pools(prefill_rate: float, decode_rate: float | Callable[[int], float], total_devices: int,
                  prefill_worker_devices: int = 1, decode_worker_devices: int = 1) -> tuple[int, int]:
    """(prefill workers, decode workers) within `total_devices` that serve the most requests/s (module
    docstring). `decode_rate` is requests/s per decode worker, or a function of the decode worker count
    (the batch each worker gets falls as workers are added); rates are per worker."""
    rate_of = decode_rate if callable(decode_rate) else (lambda workers: decode_rate)
    options = []
    for prefill in range(1, total_devices // prefill_worker_devices + 1):
        room = (total_devices - prefill * prefill_worker_devices) // decode_worker_devices
        for decode in range(1, room + 1):
            served = min(prefill * prefill_rate, decode * rate_of(decode))
            options.append((served, prefill * prefill_worker_devices + decode * decode_worker_devices, prefill, decode))
    if not options:
        raise ValueError(f"total_devices={total_devices} cannot hold one prefill worker ({prefill_worker_devices} "
                         f"devices) and one decode worker ({decode_worker_devices} devices)")
    most = max(served for served, *_ in options)
    near = [o for o in options if o[0] >= most * (1 - 1e-6)]
    _, _, prefill, decode = min(near, key=lambda o: (o[1], -o[3]))   # fewest devices, then most decode workers
    return prefill, decode


def pool_rates(model, prefill_hardware, decode_hardware, prefill_layout, decode_layout, options: ServingOptions,
               method: str = "realistic", cache: dict | None = None, **scenario_fields) -> dict:
    """Per worker: `prefill` (requests/s of a saturated prefill worker), `decode(clients)` (requests/s of a
    decode worker given that many clients, all decoding, n per replica capped by `decode_batch_limit`)."""
    cache = {} if cache is None else cache
    prefill = pool_scenario(prefill_layout, scenario_fields)
    decode = pool_scenario(decode_layout, scenario_fields)
    _, busy = prefill_pool(model, prefill_hardware, prefill, options, method, cache)
    tau, cap, _ = decode_pool(model, decode_hardware, decode, options, method, options.concurrency, cache)
    steps = max(options.output_length - 1, 1)

    def decode_rate(clients: float) -> float:
        n = min(float(cap), clients / decode.dp)
        return decode.dp * n / (steps * float(tau(n)))
    return {"prefill": busy.requests_per_s, "decode": decode_rate, "decode_batch_limit": cap,
            "prefill_devices": prefill.device_count, "decode_devices": decode.device_count}


def default_layouts(model, hardware, total_devices: int) -> list[dict]:
    """tp in 1, 2, 4, 8 (within a scale-up domain and the device budget; pp 1); for MoE models also tp = ep and
    attention data parallelism (tp 1, dp = ep)."""
    per_node = hardware.devices_per_node or 1
    layouts = []
    moe = getattr(model, "is_moe", False)
    for tp in (1, 2, 4, 8):
        if tp > min(per_node, total_devices - 1) and tp > 1:
            continue
        layouts.append({"tp": tp, "ep": tp} if moe else {"tp": tp})
        if moe and tp > 1:
            layouts.append({"tp": 1, "dp": tp, "ep": tp})
    return layouts


def _row(prefill_hw, decode_hw, decode: Scenario | None, concurrency: int, options: ServingOptions) -> dict:
    row = {column: np.nan for column in CONFIG_COLUMNS}
    row.update(device=f"{prefill_hw.name}→{decode_hw.name}", mode="disaggregated", concurrency=int(concurrency),
               token_budget=options.token_budget, fits=False, reason="", meets_sla=False, sla_failure="",
               on_front=False, prefill_device=prefill_hw.name, decode_device=decode_hw.name)
    if decode is not None:
        row.update(tp=decode.tp, pp=decode.pp, dp=decode.dp, ep=decode.ep,
                   attention_dp=bool(decode.dp > 1 and decode.ep > decode.tp))
    return row


def disaggregated_candidates(model, prefill_hw, decode_hw, total_devices: int, options: ServingOptions,
                             method: str = "realistic", link=None, concurrencies=None, *, prefill_layouts=None,
                             decode_layouts=None, **scenario_fields) -> pd.DataFrame:
    """One row per (prefill layout, decode layout, concurrency) with balanced worker counts on at most
    `total_devices` (module docstring). Layout columns tp/pp/dp/ep describe the decode workers (the pool that
    sets the per-user speed); `layout` names both pools and their worker counts. `scenario_fields`:
    dtypes and other Scenario fields both pools share."""
    unknown = sorted(set(scenario_fields) - set(SCENARIO_FIELDS))
    if unknown:
        raise TypeError(f"disaggregated_candidates got unknown field(s) {', '.join(unknown)}")
    link = as_link(link)
    concurrencies = list(concurrencies or DEFAULT_CONCURRENCIES)
    prefill_layouts = prefill_layouts or default_layouts(model, prefill_hw, total_devices)
    decode_layouts = decode_layouts or default_layouts(model, decode_hw, total_devices)
    cache: dict = {}
    rows = []
    for p_layout in prefill_layouts:
        for d_layout in decode_layouts:
            try:
                prefill = pool_scenario(p_layout, scenario_fields)
                decode = pool_scenario(d_layout, scenario_fields)
                for scenario in (prefill, decode):
                    parallel_layout(model, one_replica(scenario))
                if prefill.device_count + decode.device_count > total_devices:
                    raise ValueError(f"one prefill worker ({prefill.device_count} devices) and one decode worker "
                                     f"({decode.device_count}) need more than {total_devices} devices")
            except (ScenarioError, ValueError) as error:
                for concurrency in concurrencies:
                    row = _row(prefill_hw, decode_hw, None, concurrency, options)
                    row.update(layout=f"P[{_text(p_layout)}] D[{_text(d_layout)}]",
                               reason=str(error).splitlines()[0])
                    rows.append(row)
                continue
            for concurrency in concurrencies:
                rows.append(_candidate(model, prefill_hw, decode_hw, prefill, decode, total_devices,
                                       options.model_copy(update={"concurrency": int(concurrency)}), method, link,
                                       cache, max(concurrencies), scenario_fields))
    return pd.DataFrame(rows, columns=list(CONFIG_COLUMNS))


def _text(layout) -> str:
    layout = dict(layout or {})
    return " ".join(f"{k.upper()}{layout.get(k, 1)}" for k in ("tp", "pp", "dp", "ep"))


def _candidate(model, prefill_hw, decode_hw, prefill: Scenario, decode: Scenario, total_devices: int,
               options: ServingOptions, method: str, link, cache: dict, largest: int, scenario_fields) -> dict:
    row = _row(prefill_hw, decode_hw, decode, options.concurrency, options)
    row["layout"] = f"P[{layout_text(prefill)}] D[{layout_text(decode)}]"
    try:
        rates = pool_rates(model, prefill_hw, decode_hw, prefill, decode, options, method, cache)
        clients = options.concurrency
        workers = balance_pools(rates["prefill"], lambda w: rates["decode"](clients / w), total_devices,
                                rates["prefill_devices"], rates["decode_devices"])
        result = serve_disaggregated(model, prefill_hw, decode_hw, prefill, decode, workers[0], workers[1], options,
                                     method, link, cache=cache, largest_batch=largest)
    except (ScenarioError, ValueError) as error:
        row["reason"] = str(error).splitlines()[0]
        return row
    m = result.metrics
    row.update(fits=True, devices=result.devices, ttft_s=m["ttft_s"], tpot_s=m["tpot_s"], e2e_s=m["e2e_s"],
               tokens_per_s=m["tokens_per_s"], tokens_per_s_per_device=m["tokens_per_s_per_device"],
               tokens_per_s_per_user=m["tokens_per_s_per_user"], meets_sla=True, kv_transfer_s=m["kv_transfer_s"],
               prefill_layout=layout_text(prefill), decode_layout=layout_text(decode),
               prefill_workers=workers[0], decode_workers=workers[1],
               layout=f"{workers[0]} x P[{layout_text(prefill)}] + {workers[1]} x D[{layout_text(decode)}]")
    return row
