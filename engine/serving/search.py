"""serving_search(): the serving design space of a model on one or more devices (docs/serving.md).

    import engine
    from engine.serving import SLA
    result = engine.serving_search({"H200-SXM": h200, "B200": b200}, model, devices=8,
                                   input_length=1024, output_length=1024,
                                   sla=SLA(ttft_max_s=0.5, tpot_max_s=0.02), requests_per_s=20)
    result.configs          # every configuration tried: layout, concurrency, token budget, metrics, why not
    result.front            # the Pareto front: tokens/s per user against tokens/s per device
    result.best             # per device: the most tokens/s per device within the SLA (or the closest miss)
    result.recommendation   # per device: the fewest devices that serve 20 requests/s within the SLA

Configurations: every parallel layout of `devices` devices (engine/serving/search_layouts.py: tp x pp x dp
= devices, expert parallelism and attention data parallelism for MoE models) x `concurrencies` (default
1, 2, 4, ..., 512) x `token_budgets` (default 2048 and 8192). Each is first screened in closed form
(engine/serving/search_screen.py: TPOT and tokens/s within a few percent of serve(), TTFT within tens of
percent); the ones the answer depends on (the front, the best and near misses per device) are then
simulated exactly as engine.serve() simulates them (engine/serving/search_refine.py, search_eval.py), until
every one of them is exact (`exact` True: the row's numbers are serve()'s). `exact=True` simulates every
configuration (10-80 ms each instead of about 1 ms). A layout that does not fit (the model does not split that way, the weights leave no room for the KV cache,
...) is kept with `fits` False and the reason.

The front is drawn per device (and mode) over the configurations that ran: a configuration is on it when
no other has at least its tokens/s per user and its tokens/s per device and more of one. `meets_sla` marks
those within the SLA; `best` takes, per device, the one with the most tokens/s per device among them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from engine.estimators import get_method
from engine.serving.curve import doubling_concurrencies
from engine.serving.options import ServingOptions
from engine.serving.search_layouts import check_layouts, enumerate_layouts
from engine.serving.search_recommend import recommend
from engine.serving.search_refine import refine
from engine.serving.search_run import evaluate_all, finite
from engine.serving.simulate import split_fields
from engine.serving.sla import SLA

DEFAULT_LARGEST_CONCURRENCY = 512
DEFAULT_TOKEN_BUDGETS = (2048, 8192)
SEARCHED_FIELDS = ("tp", "pp", "dp", "ep", "devices", "concurrency", "token_budget")
DISAGGREGATED_COLUMNS = ("prefill_device", "decode_device", "prefill_layout", "decode_layout", "prefill_workers",
                         "decode_workers", "kv_transfer_s")
CONFIG_COLUMNS = ("device", "mode", "tp", "pp", "dp", "ep", "attention_dp", "concurrency", "token_budget", "devices",
                  "layout", "fits", "reason", "exact", "ttft_s", "ttft_p90_s", "tpot_s", "tpot_p90_s", "e2e_s", "tokens_per_s",
                  "tokens_per_s_per_device", "tokens_per_s_per_user", "requests_per_s", "meets_sla", "sla_failure",
                  "on_front", *DISAGGREGATED_COLUMNS)


@dataclass
class SearchResult:
    """The configurations tried, the Pareto front, the best per device and the recommendation (module docstring)."""

    configs: pd.DataFrame
    best: pd.DataFrame
    recommendation: pd.DataFrame
    messages: list[str] = field(default_factory=list)
    sla: SLA | None = None

    @property
    def front(self) -> pd.DataFrame:
        return self.configs[self.configs["on_front"]].reset_index(drop=True)

    def to_dict(self) -> dict:
        return {"configs": _records(self.configs), "front": _records(self.front), "best": _records(self.best),
                "recommendation": _records(self.recommendation), "messages": list(self.messages),
                "sla": self.sla.model_dump() if self.sla is not None else None}


def _records(frame: pd.DataFrame) -> list[dict]:
    out = []
    for record in frame.to_dict("records"):
        out.append({k: (None if isinstance(v, float) and not math.isfinite(v) else
                        v.item() if isinstance(v, np.generic) else v) for k, v in record.items()})
    return out


def serving_search(hardware, model, *, devices: int, input_length: int = 1024, output_length: int = 1024,
                   sla: SLA | None = None, method: str = "realistic", concurrencies=None, token_budgets=None,
                   layouts=None, requests_per_s: float | None = None, concurrent_users: int | None = None,
                   disaggregated: bool = False, prefill_hardware=None, decode_hardware=None, link=None,
                   client=None, exact: bool = False, **fields) -> SearchResult:
    """Search the serving design space (module docstring). `hardware`: one Hardware or {label: Hardware} (the
    label names the device in the results, so edited copies of one device stay apart);
    `fields`: serve()'s other fields (dtypes, backend, max_batch, requests_per_client, ...), the same for every
    configuration; `client`: a dask.distributed Client to run the layouts on; `exact`: simulate every
    configuration as serve() does instead of screening them first."""
    device_map = _device_map(hardware)
    searched = sorted(set(fields) & set(SEARCHED_FIELDS))
    if searched:
        raise TypeError(f"serving_search() searches {', '.join(searched)} itself; give concurrencies=, "
                        "token_budgets= or layouts= instead")
    if requests_per_s is not None and concurrent_users is not None:
        raise ValueError("give requests_per_s or concurrent_users, not both")
    if get_method(method).name == "seed":
        raise ValueError("method 'seed' reproduces the notebook's single-device decomposition and has no serving "
                         "schedule; use roofline, hierarchical, realistic or realistic-graph")
    scenario_fields, option_fields = split_fields(fields)
    base = ServingOptions(input_length=input_length, output_length=output_length, **option_fields)
    concurrencies = _whole_numbers("concurrencies", concurrencies or doubling_concurrencies(DEFAULT_LARGEST_CONCURRENCY))
    budgets = _whole_numbers("token_budgets", token_budgets or DEFAULT_TOKEN_BUDGETS)
    layout_list = check_layouts(layouts) if layouts is not None else enumerate_layouts(model, devices)
    points = [(c, b) for b in budgets for c in concurrencies]
    tasks = [(name, layout) for name in device_map for layout in layout_list]
    rows = evaluate_all(device_map, model, method, base, scenario_fields, tasks, points, client, exact)
    frame = pd.DataFrame(rows)
    pools = None
    if disaggregated:
        first = next(iter(device_map.values()))
        pools = {"prefill": _resolve(prefill_hardware, device_map) or first,
                 "decode": _resolve(decode_hardware, device_map) or first, "link": link}
        frame = pd.concat([frame, _disaggregated(model, pools, devices, base, method, concurrencies,
                                                 scenario_fields)], ignore_index=True)
    configs = mark(frame, sla)
    if not exact:
        configs = refine(configs, sla, device_map, model, method, base, scenario_fields, mark)
    best, messages = best_per_device(configs, sla, model.name)
    recommendation = recommend(configs, sla, device_map, model, method, base, scenario_fields, requests_per_s,
                               concurrent_users, pools) if requests_per_s is not None or concurrent_users is not None \
        else pd.DataFrame(columns=["device", "mode"])
    messages += [s for s in recommendation.get("sentence", []) if s]
    return SearchResult(configs, best, recommendation, messages, sla)


def _device_map(hardware) -> dict:
    if isinstance(hardware, dict):
        if not hardware:
            raise ValueError("hardware: no device given; expected a Hardware or {name: Hardware}")
        return dict(hardware)
    if isinstance(hardware, (list, tuple)):
        return {hw.name: hw for hw in hardware}
    return {hardware.name: hardware}


def _whole_numbers(name: str, values) -> list[int]:
    out = []
    for value in values:
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError(f"{name}: {value!r} is not a whole number >= 1")
        out.append(int(value))
    return sorted(set(out))


def mark(frame: pd.DataFrame, sla: SLA | None) -> pd.DataFrame:
    """The configs frame: every column present, meets_sla / sla_failure and on_front filled in."""
    frame = frame.reindex(columns=list(CONFIG_COLUMNS) + [c for c in frame.columns if c not in CONFIG_COLUMNS])
    frame["fits"] = frame["fits"].fillna(False).astype(bool)
    frame["reason"] = frame["reason"].fillna("").astype(str)
    frame["exact"] = frame["exact"].fillna(True).astype(bool)      # rows from elsewhere (disaggregated) stand as given
    frame["attention_dp"] = frame["attention_dp"].fillna(False).astype(bool)
    for name in ("prefill_device", "decode_device", "prefill_layout", "decode_layout"):
        frame[name] = frame[name].astype(object).where(frame[name].notna(), "")
    failures = []
    for fits, ttft, tpot, e2e in zip(frame["fits"], frame["ttft_s"], frame["tpot_s"], frame["e2e_s"]):
        if not fits:
            failures.append("does not run")
        else:
            failures.append(sla.check(ttft, tpot, e2e) if sla is not None else "")
    frame["sla_failure"] = failures
    frame["meets_sla"] = frame["fits"] & (frame["sla_failure"] == "")
    frame["on_front"] = False
    ran = frame["fits"] & np.isfinite(frame["tokens_per_s_per_user"].astype(float)) \
        & np.isfinite(frame["tokens_per_s_per_device"].astype(float))
    for _, group in frame[ran].groupby(["device", "mode"], sort=False):
        frame.loc[pareto_front(group["tokens_per_s_per_user"].to_numpy(float),
                               group["tokens_per_s_per_device"].to_numpy(float), group.index), "on_front"] = True
    return frame


def pareto_front(x: np.ndarray, y: np.ndarray, index) -> list:
    """Labels of the points no other point dominates (at least as much of both, more of one; larger is better).
    Of identical points the first is kept."""
    order = np.lexsort((-x, -y))           # most y first, ties: most x first
    kept, best_x = [], -np.inf
    for position in order:
        if x[position] > best_x:
            kept.append(index[position])
            best_x = x[position]
    return kept


def best_per_device(configs: pd.DataFrame, sla: SLA | None, model_name: str) -> tuple[pd.DataFrame, list[str]]:
    """Per device and mode: the most tokens/s per device within the SLA, else the closest miss and a message."""
    rows, messages = [], []
    for (device, mode), group in configs.groupby(["device", "mode"], sort=False):
        ran = group[group["fits"] & group["tokens_per_s_per_device"].map(finite)]
        inside = ran[ran["meets_sla"]]
        if len(inside):
            row = inside.loc[inside["tokens_per_s_per_device"].astype(float).idxmax()].to_dict()
            where = "best within the SLA" if sla is not None and not sla.is_empty else "most tokens/s per device (no SLA)"
            row["message"] = (f"{model_name} on {device} ({mode}): {where} is {describe(row)}: "
                              f"{row['tokens_per_s_per_device']:.1f} tokens/s per device, "
                              f"{row['tokens_per_s_per_user']:.1f} tokens/s per user")
        elif len(ran):
            miss = [sla.shortfall(t, p, e) for t, p, e in zip(ran["ttft_s"], ran["tpot_s"], ran["e2e_s"])]
            row = ran.iloc[int(np.argmin(miss))].to_dict()
            row["message"] = (f"No configuration of {model_name} on {device} ({mode}) meets the SLA "
                              f"({sla.describe()}); the closest is {describe(row)}: {row['sla_failure']} "
                              f"({min(miss):.0%} over)")
        else:
            reasons = sorted(set(group["reason"]) - {""})
            row = {"device": device, "mode": mode, "fits": False, "meets_sla": False,
                   "message": f"No configuration of {model_name} on {device} ({mode}) runs: " + "; ".join(reasons[:3])}
        rows.append(row)
        messages.append(row["message"])
    columns = list(configs.columns) + ["message"]
    return pd.DataFrame(rows).reindex(columns=columns), messages


def describe(row) -> str:
    """'TP2 PP1 DP4 EP1 (8 devices) at concurrency 64, token budget 8192' (disaggregated: both pools)."""
    if row.get("mode") == "disaggregated" and row.get("prefill_layout"):
        head = (f"prefill {row['prefill_workers']:.0f} x {row['prefill_layout']} on {row['prefill_device']} + decode "
                f"{row['decode_workers']:.0f} x {row['decode_layout']} on {row['decode_device']}")
    else:
        head = str(row.get("layout"))
    budget = row.get("token_budget")
    tail = f", token budget {int(budget)}" if budget is not None and finite(budget) else ""
    devices = int(row["devices"])
    return f"{head} ({devices} device{'s' if devices != 1 else ''}) at concurrency {int(row['concurrency'])}{tail}"


def _disaggregated(model, pools, devices, base, method, concurrencies, scenario_fields):
    try:
        from engine.serving.disagg_balance import disaggregated_candidates
    except ImportError as error:
        raise NotImplementedError(
            "disaggregated=True needs engine.serving.disagg_balance.disaggregated_candidates, which this "
            f"installation does not have yet ({error})") from None
    frame = disaggregated_candidates(model, pools["prefill"], pools["decode"], devices, base, method,
                                     link=pools["link"], concurrencies=concurrencies, **scenario_fields)
    frame = frame.assign(mode="disaggregated")
    if "requests_per_s" not in frame.columns and "tokens_per_s" in frame.columns:
        frame["requests_per_s"] = frame["tokens_per_s"] / base.output_length
    return frame


def _resolve(hardware, device_map):
    if hardware is None or not isinstance(hardware, str):
        return hardware
    if hardware in device_map:
        return device_map[hardware]
    from engine.hardware.specs import load_hardware
    return load_hardware(hardware)
