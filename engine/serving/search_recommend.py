"""The fewest devices that serve a target (R requests/s, or C concurrent users) within the SLA.

Every configuration that meets the SLA offers a unit to copy: one replica of its layout (tp x pp devices;
with attention data parallelism the whole expert-parallel group, tp x pp x dp) serving its share of the
clients (the concurrency / replicas, when the clients split evenly). Replicas of a closed-loop layout are
independent, so n copies serve n times the requests/s at the same TTFT and TPOT, and hold n times the
clients. For each unit the copies needed are n = ceil(R / its requests/s) (or ceil(C / its clients)); the
recommendation is the unit with the fewest devices n x unit (ties: the most tokens/s per device). The best
copy of each of the CHECKED most promising layouts is then re-checked with engine.serve() at dp = n replicas
(and, for users, at exactly C clients), growing n while the check fails and then bisecting down to the fewest
copies serve() confirms (fewer users per copy than the searched concurrency may still meet the SLA); the
fewest devices serve() confirms wins, and the row reports serve() at one copy fewer, which falls short.
Disaggregated configurations are scaled the same way from their simulated totals, and then re-run with
serve_disaggregated() at the answer and with one device fewer, the pools balanced again for each device count
(engine/serving/search_recommend_disagg.py).
"""

from __future__ import annotations

import math

import pandas as pd

from engine.serving.search_layouts import Layout
from engine.serving.search_recommend_disagg import check_disaggregated
from engine.serving.simulate import serve
from engine.serving.sla import SLA

RECOMMENDATION_COLUMNS = ("device", "mode", "target", "devices_needed", "layout", "replicas", "concurrency",
                          "concurrency_per_replica", "token_budget", "requests_per_s", "users", "ttft_s", "tpot_s",
                          "e2e_s", "checked_by_serve", "one_fewer", "sentence", "prefill_workers", "decode_workers")
MAX_GROWTH = 8
CHECKED = 3
MAX_EXTENSION = 4        # doublings of a copy's clients beyond the largest searched concurrency (16 x)


def recommend(configs: pd.DataFrame, sla: SLA | None, device_map: dict, model, method: str, base, scenario_fields: dict,
              requests_per_s: float | None, concurrent_users: int | None,
              disaggregated: dict | None = None) -> pd.DataFrame:
    """One row per device and mode (module docstring); `disaggregated`: {"prefill": Hardware, "decode":
    Hardware, "link": ...} of the search's disaggregated rows (None: scaled only, not re-run)."""
    if requests_per_s is not None and not requests_per_s > 0:
        raise ValueError(f"requests_per_s = {requests_per_s!r}: expected requests per second > 0")
    if concurrent_users is not None and (int(concurrent_users) != concurrent_users or concurrent_users < 1):
        raise ValueError(f"concurrent_users = {concurrent_users!r}: expected a whole number of users >= 1")
    target = (f"{requests_per_s:g} requests/s" if requests_per_s is not None else f"{int(concurrent_users)} concurrent users")
    within = f"within {sla.describe()}" if sla is not None and not sla.is_empty else "(no SLA given)"
    rows = []
    for (device, mode), group in configs.groupby(["device", "mode"], sort=False):
        row = {"device": device, "mode": mode, "target": target}
        candidates = [c for c in (_candidate(r, requests_per_s, concurrent_users)
                                  for r in group[group["meets_sla"]].to_dict("records")) if c is not None]
        if not candidates:
            row["sentence"] = (f"{model.name} on {device} ({mode}): no configuration meets the SLA, so no device "
                               f"count serves {target} {within}")
            rows.append(row)
            continue
        candidates.sort(key=lambda c: (c["devices_needed"], -c["tokens_per_s_per_device"]))
        pick = candidates[0]
        units, seen = [], set()        # the most promising copy of each of the CHECKED layouts
        for candidate in candidates:
            if candidate["layout"] not in seen:
                seen.add(candidate["layout"])
                units.append(candidate)
        units = units[:CHECKED]
        if mode == "aggregated":       # confirmed by serve()
            if requests_per_s is not None:      # copies at the largest load searched: try heavier loads
                largest = group.groupby("layout")["concurrency"].max()
                units = [_extend(c, sla, device_map[device], model, method, base, scenario_fields, requests_per_s)
                         if c["searched_concurrency"] >= largest.get(c["searched_layout"], float("inf")) else c
                         for c in units]
            checked = [_check(c, sla, device_map[device], model, method, base, scenario_fields, requests_per_s,
                              concurrent_users) for c in units]
            pick = min(checked, key=lambda c: (not c["checked_by_serve"], c["devices_needed"],
                                               -c["tokens_per_s_per_device"]))
        elif disaggregated is not None:     # re-run with serve_disaggregated(), in order until one is confirmed
            for unit in units:
                checked = check_disaggregated(dict(unit), sla, disaggregated, model, method, base, scenario_fields,
                                              requests_per_s, concurrent_users, _falls_short)
                if checked["checked_by_serve"]:
                    pick = checked
                    break
        row.update({k: pick.get(k) for k in RECOMMENDATION_COLUMNS if k in pick})
        row["sentence"] = _sentence(model.name, device, mode, target, within, pick)
        rows.append(row)
    return pd.DataFrame(rows).reindex(columns=list(RECOMMENDATION_COLUMNS))


def _candidate(row: dict, requests_per_s, users) -> dict | None:
    if row["mode"] == "aggregated":
        layout = Layout(int(row["tp"]), int(row["pp"]), int(row["dp"]), int(row["ep"]))
        copies = layout.devices // layout.unit_devices
        if row["concurrency"] % copies:
            return None                       # the clients do not split evenly over the copies
        unit = Layout(layout.tp, layout.pp, layout.dp if layout.attention_dp else 1, layout.ep)
    else:
        copies, unit = 1, None
    per_copy_clients = int(row["concurrency"]) // copies
    per_copy_rate = float(row["requests_per_s"]) / copies
    if not per_copy_rate > 0:
        return None
    n = math.ceil(requests_per_s / per_copy_rate) if requests_per_s is not None else math.ceil(users / per_copy_clients)
    unit_devices = unit.devices if unit is not None else int(row["devices"])
    return {**row, "unit": unit, "unit_devices": unit_devices, "replicas": n, "devices_needed": n * unit_devices,
            "concurrency_per_replica": per_copy_clients, "layout": unit.name if unit is not None else row["layout"],
            "requests_per_s": n * per_copy_rate,
            "concurrency": n * per_copy_clients if users is None else int(users), "users": n * per_copy_clients,
            "checked_by_serve": False, "one_fewer": "", "searched_concurrency": int(row["concurrency"]),
            "searched_layout": row["layout"], "load_note": ""}


def _extend(pick: dict, sla, device, model, method, base, scenario_fields, requests_per_s) -> dict:
    """A copy at the largest searched concurrency still meets the SLA, so a heavier load may serve more requests/s
    per copy (fewer copies): double its clients with serve() on one copy while it meets the SLA, MAX_EXTENSION
    times at most; keep the load needing the fewest copies; say how far it went in `load_note`."""
    clients, best, why = pick["concurrency_per_replica"], None, ""
    searched = clients
    for _ in range(MAX_EXTENSION):
        clients *= 2
        metrics = _serve_copies(pick["unit"], 1, clients, pick["token_budget"], device, model, method, base,
                                scenario_fields)
        why = sla.check(metrics["ttft_s"], metrics["tpot_s"], metrics["e2e_s"]) if sla is not None else ""
        if why:
            break
        if best is None or metrics["requests_per_s"] > best[1]["requests_per_s"]:
            best = (clients, metrics)
    if why:
        held = f"{best[0]} clients per copy meet it, " if best is not None else ""
        note = (f"copies were also tried beyond the searched concurrencies (at most {searched} clients per copy): "
                f"{held}{clients} miss the SLA ({why})")
    else:
        note = (f"copies were tried beyond the searched concurrencies up to {clients} clients each, still within "
                f"the SLA: heavier loads (search larger concurrencies) may need fewer devices")
    if best is None:
        return {**pick, "load_note": note}
    clients, metrics = best
    n = math.ceil(requests_per_s / metrics["requests_per_s"])
    if n * pick["unit_devices"] > pick["devices_needed"]:
        return {**pick, "load_note": note}
    return {**pick, "load_note": note, "replicas": n, "devices_needed": n * pick["unit_devices"],
            "concurrency_per_replica": clients, "concurrency": n * clients, "users": n * clients,
            "requests_per_s": n * metrics["requests_per_s"]}


def _serve_copies(unit: Layout, n: int, clients: int, budget: int, device, model, method, base, scenario_fields):
    fields = {**scenario_fields, "tp": unit.tp, "pp": unit.pp, "dp": unit.dp * n, "ep": unit.ep}
    options = base.model_copy(update={"concurrency": clients, "token_budget": int(budget)})
    return serve(device, model, options, method=method, **fields).metrics


def _falls_short(metrics: dict, sla, requests_per_s) -> str:
    miss = sla.check(metrics["ttft_s"], metrics["tpot_s"], metrics["e2e_s"]) if sla is not None else ""
    if requests_per_s is not None and metrics["requests_per_s"] < requests_per_s:
        miss = "; ".join(filter(None, [miss, f"{metrics['requests_per_s']:.3g} requests/s < {requests_per_s:g}"]))
    return miss


def _check(pick: dict, sla, device, model, method, base, scenario_fields, requests_per_s, users) -> dict:
    """Re-simulate the answer with serve(): grow the copies while it falls short, then search down for the fewest
    copies that still meet the target (bisection: more copies never serve less), and report one copy fewer."""
    unit, per_copy, budget = pick["unit"], pick["concurrency_per_replica"], pick["token_budget"]
    results: dict = {}

    def clients(copies):
        return copies * per_copy if users is None else int(users)

    def short(copies) -> str:
        """"" when `copies` copies meet the SLA and the target under serve(), else why not."""
        if copies not in results:
            metrics = _serve_copies(unit, copies, clients(copies), budget, device, model, method, base, scenario_fields)
            results[copies] = (metrics, _falls_short(metrics, sla, requests_per_s))
        return results[copies][1]
    most = pick["replicas"] if users is None else min(pick["replicas"], int(users))   # every copy needs a client
    for _ in range(MAX_GROWTH):
        if not short(most):
            break
        if users is not None and most >= users:
            return pick
        most += 1
    else:
        return pick
    low, high = 1, most                     # high meets the target; find the fewest copies that do
    while low < high:
        middle = (low + high) // 2
        if short(middle):
            low = middle + 1
        else:
            high = middle
    metrics = results[high][0]
    pick.update(replicas=high, devices_needed=high * pick["unit_devices"], concurrency=clients(high),
                requests_per_s=metrics["requests_per_s"], ttft_s=metrics["ttft_s"], tpot_s=metrics["tpot_s"],
                e2e_s=metrics["e2e_s"], checked_by_serve=True, concurrency_per_replica=math.ceil(clients(high) / high))
    if high > 1:
        fewer = high - 1
        pick["one_fewer"] = f"{fewer * pick['unit_devices']} devices ({fewer} replica{'s' if fewer > 1 else ''}): " \
            + short(fewer)
    return pick


def _sentence(model_name, device, mode, target, within, pick) -> str:
    if mode == "aggregated":
        what = f"{pick['replicas']} x {pick['layout']}"
    else:
        what = pick["layout"] if pick.get("checked_by_serve") else f"{pick['replicas']} x ({pick['layout']})"
    load = (f"{pick['concurrency']} clients" if pick.get("concurrency") is not None else "")
    budget = pick.get("token_budget")
    budget_text = f", token budget {int(budget)}" if budget is not None and budget == budget else ""
    text = (f"{model_name} on {device} ({mode}): {pick['devices_needed']} devices serve {target} {within}: "
            f"{what}, {load}{budget_text}")
    if pick.get("checked_by_serve"):
        checker = "serve" if mode == "aggregated" else "serve_disaggregated"
        text += (f" (checked with {checker}: {pick['requests_per_s']:.3g} requests/s, TTFT {pick['ttft_s']:.3g} s, "
                 f"TPOT {pick['tpot_s'] * 1e3:.3g} ms)")
    elif mode == "aggregated":
        text += " (serve() did not confirm it within the SLA after growing the replicas: treat as a lower bound)"
    else:
        text += " (scaled from the simulated configuration; serve_disaggregated did not confirm it)"
    if pick.get("one_fewer"):
        text += f"; with {pick['one_fewer']}"
    if pick.get("load_note"):
        text += f"; {pick['load_note']}"
    return text
