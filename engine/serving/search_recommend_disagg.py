"""The fewest devices for a target with disaggregated serving, re-checked with serve_disaggregated().

A disaggregated configuration of the search (Wp prefill workers of layout P and Wd decode workers of layout D
on N0 devices, C clients) first gives a scaled estimate, as an aggregated one does: n = ceil(R / its
requests/s) (or ceil(U / C)) copies, n x N0 devices. That estimate is then re-run: for a device count N the
pools are balanced again within N devices (disagg_balance.balance_pools on the pools' rates at this load) and
engine.serving.disagg.serve_disaggregated simulates the result with C_N clients (the users target: U; a
requests/s target: C x N / N0, the load growing with the devices as the copies' would). The balance maximises
requests/s, which is not always what an SLA needs (more decode workers for a TPOT limit), so when the balanced
split falls short every other split of the N devices is tried too (nearest the balanced one first): N is met when
any split meets the SLA and the target. N grows (N0 at a time, at most MAX_GROWTH times) while it falls short,
then bisects down to the fewest devices that meet both; the row reports that answer (`checked_by_serve` True)
and serve_disaggregated at one device fewer (`one_fewer`: the balanced split's workers and why it falls short;
every other split of those devices falls short too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from engine.results.run import ScenarioError
from engine.serving.disagg import serve_disaggregated
from engine.serving.disagg_pools import pool_scenario
from engine.serving.disagg_balance import balance_pools, pool_rates
from engine.serving.options import ServingOptions
from engine.workload.scenario import Scenario

MAX_GROWTH = 8


def layout_fields(text: str) -> dict:
    """{"tp": 2, "pp": 1, "dp": 1, "ep": 1} from 'TP2 PP1 DP1 EP1' (disagg.layout_text)."""
    fields = {name.lower(): int(value) for name, value in re.findall(r"(TP|PP|DP|EP)(\d+)", str(text))}
    if set(fields) != {"tp", "pp", "dp", "ep"}:
        raise ValueError(f"layout {text!r}: expected 'TPn PPn DPn EPn'")
    return fields


def check_disaggregated(pick: dict, sla, context: dict, model, method: str, base, scenario_fields: dict,
                        requests_per_s, users, falls_short) -> dict:
    """`pick` (a scaled candidate row) re-run with serve_disaggregated() (module docstring); `context`: the
    search's {"prefill": Hardware, "decode": Hardware, "link": link or None}; `falls_short(metrics, sla,
    requests_per_s)` says why a result misses ("" when it meets both)."""
    try:
        prefill = pool_scenario(layout_fields(pick["prefill_layout"]), scenario_fields)
        decode = pool_scenario(layout_fields(pick["decode_layout"]), scenario_fields)
    except (ScenarioError, ValueError):
        return pick                          # a row without both pools' layouts: stays scaled, not re-run
    unit, per_copy = int(pick["unit_devices"]), int(pick["concurrency_per_replica"])
    options = base.model_copy(update={"token_budget": int(pick["token_budget"])})
    check = _Recheck(model, method, context, prefill, decode, options, _Target(sla, requests_per_s, users, falls_short),
                     unit, per_copy)
    enough = check.first_meeting(max(int(pick["devices_needed"]), check.smallest))
    if enough is None:
        return pick                          # still short after MAX_GROWTH steps: stays scaled
    result = check.run(check.fewest_meeting(enough))[0]
    m = result.metrics
    pick.update(devices_needed=result.devices, replicas=1, concurrency=result.options.concurrency,
                concurrency_per_replica=result.options.concurrency, users=result.options.concurrency,
                requests_per_s=m["requests_per_s"], ttft_s=m["ttft_s"], tpot_s=m["tpot_s"], e2e_s=m["e2e_s"],
                checked_by_serve=True, prefill_workers=result.prefill_workers, decode_workers=result.decode_workers,
                layout=describe_pools(result))
    fewer, why = check.run(result.devices - 1)
    what = f" ({describe_pools(fewer)}, {fewer.options.concurrency} clients)" if fewer is not None else ""
    pick["one_fewer"] = f"{result.devices - 1} devices{what}: {why or 'meets the target too'}"
    return pick


@dataclass(frozen=True)
class _Target:
    """What a re-run must meet: the SLA and the requests/s or users target; `falls_short(metrics, sla,
    requests_per_s)` says why a result misses ("" when it meets both)."""

    sla: Any
    requests_per_s: Optional[float]
    users: Optional[int]
    falls_short: Callable[..., str]


@dataclass
class _Recheck:
    """serve_disaggregated runs of one row's pools (`prefill`, `decode` workers) on a growing or shrinking number
    of devices, kept by device count in `runs` as (result or None, "" when it meets the target, else why not).
    `unit`: the devices of one copy of the row; `per_copy`: its clients."""

    model: Any
    method: str
    context: dict
    prefill: Scenario
    decode: Scenario
    options: ServingOptions
    target: _Target
    unit: int
    per_copy: int
    cache: dict = field(default_factory=dict)
    runs: dict = field(default_factory=dict)

    @property
    def smallest(self) -> int:
        return self.prefill.device_count + self.decode.device_count

    def clients(self, total: int) -> int:
        users = self.target.users
        return int(users) if users is not None else max(1, round(self.per_copy * total / self.unit))

    def run(self, total: int) -> tuple:
        """(result or None, "" when `total` devices meet the SLA and the target, else why not)."""
        if total not in self.runs:
            self.runs[total] = self._run(total)
        return self.runs[total]

    def first_meeting(self, start: int) -> Optional[int]:
        """`start` devices, or more (a copy at a time, at most MAX_GROWTH times) until they meet the target."""
        most = start
        for _ in range(MAX_GROWTH):
            if not self.run(most)[1]:
                return most
            most += self.unit
        return None

    def fewest_meeting(self, most: int) -> int:
        """Bisection between the smallest pools and `most` devices (which meet the target)."""
        low, high = self.smallest, most
        while low < high:
            middle = (low + high) // 2
            if self.run(middle)[1]:
                low = middle + 1
            else:
                high = middle
        return high

    def _run(self, total: int) -> tuple:
        if total < self.smallest:
            return None, f"fewer than the {self.smallest} devices of one prefill and one decode worker"
        load = self.options.model_copy(update={"concurrency": self.clients(total)})
        try:
            rates = pool_rates(self.model, self.context["prefill"], self.context["decode"], self.prefill, self.decode,
                               load, self.method, self.cache)
            balanced = balance_pools(rates["prefill"], lambda w: rates["decode"](load.concurrency / w), total,
                                     rates["prefill_devices"], rates["decode_devices"])
        except (ScenarioError, ValueError) as error:
            return None, " ".join(str(error).split())
        first = None
        for workers in splits(total, self.prefill.device_count, self.decode.device_count, balanced):
            outcome = self._serve(workers, load)
            first = first or outcome
            if not outcome[1]:
                return outcome
        return first                         # no split meets it: the balanced one says why

    def _serve(self, workers: tuple[int, int], load: ServingOptions) -> tuple:
        # the prefill pool's serve() results are shared; the decode grid is sized afresh for each run (a shared
        # one spans the largest batch asked first), so the numbers are a fresh call's
        fresh = {key: value for key, value in self.cache.items() if key[0] != "decode"}
        try:
            result = serve_disaggregated(self.model, self.context["prefill"], self.context["decode"], self.prefill,
                                         self.decode, workers[0], workers[1], load, self.method,
                                         self.context.get("link"), cache=fresh)
        except (ScenarioError, ValueError) as error:
            return None, " ".join(str(error).split())
        return result, self.target.falls_short(result.metrics, self.target.sla, self.target.requests_per_s)


def splits(total: int, prefill_devices: int, decode_devices: int, balanced: tuple[int, int]) -> list:
    """Every (prefill workers, decode workers) using as many of `total` devices as fit, the balanced one first,
    then the others by their distance from it."""
    options = []
    for prefill_workers in range(1, total // prefill_devices + 1):
        decode_workers = (total - prefill_workers * prefill_devices) // decode_devices
        if decode_workers >= 1:
            options.append((prefill_workers, decode_workers))
    options.sort(key=lambda w: (w != tuple(balanced), abs(w[0] - balanced[0])))
    return ([tuple(balanced)] if tuple(balanced) not in options else []) + options


def describe_pools(result) -> str:
    """'2 x P[TP1 PP1 DP1 EP1] + 3 x D[TP2 PP1 DP1 EP1]' (the workers of a DisaggregatedResult)."""
    p, d = result.prefill_scenario, result.decode_scenario
    return (f"{result.prefill_workers} x P[TP{p.tp} PP{p.pp} DP{p.dp} EP{p.ep}] + "
            f"{result.decode_workers} x D[TP{d.tp} PP{d.pp} DP{d.dp} EP{d.ep}]")
