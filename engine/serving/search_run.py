"""Evaluating the configurations of a serving search: one task per (device, layout), here or on Dask.

A task runs every (concurrency, token budget) point of one layout on one device, through the screen
(engine/serving/search_screen.py, `exact` False) or through serve()'s exact evaluation with shared work
(engine/serving/search_eval.py, `exact` True), and returns one row per point: the metrics, or `fits`
False and the reason (the model does not split into the layout, the weights leave no
room for the KV cache, a request's KV cache exceeds it, a token budget below the decode batch, ...).
With a dask.distributed `client` the tasks are submitted to it, the model, devices and options
scattered once, as engine/explore/dask_cluster.py runs sweeps.
"""

from __future__ import annotations

import uuid

import numpy as np

from engine.results.run import ScenarioError
from engine.serving.options import ServingOptions
from engine.serving.search_eval import LayoutEvaluator, ScheduleCache, needs_serve
from engine.serving.search_layouts import Layout, layout_problem
from engine.serving.search_screen import LayoutScreen
from engine.serving.simulate import serve

METRIC_COLUMNS = ("ttft_s", "ttft_p90_s", "tpot_s", "tpot_p90_s", "e2e_s", "tokens_per_s",
                  "tokens_per_s_per_device", "tokens_per_s_per_user", "requests_per_s")


def _base_row(device: str, layout: Layout, concurrency: int, budget: int) -> dict:
    return {"device": device, "mode": "aggregated", **layout.fields(), "attention_dp": layout.attention_dp,
            "concurrency": int(concurrency), "token_budget": int(budget), "devices": layout.devices,
            "layout": layout.name, "fits": False, "reason": "", "exact": False}


def _message(error: Exception) -> str:
    return " ".join(str(error).split())


def layout_rows(hardware, model, method: str, base: ServingOptions, scenario_fields: dict, layout: Layout,
                points: list[tuple[int, int]], schedules: ScheduleCache | None = None, exact: bool = True,
                label: str | None = None) -> list[dict]:
    """One row per (concurrency, token budget) point of `layout` on `hardware` (module docstring); `label` names
    the device in the rows (default: its name; a search's {label: Hardware} keeps edited copies apart)."""
    rows = [_base_row(label or hardware.name, layout, c, b) for c, b in points]
    problem = layout_problem(model, layout)
    if problem:
        for row in rows:
            row["reason"] = problem
        return rows
    fields = {**scenario_fields, **layout.fields()}
    exact = exact or needs_serve(base)
    if needs_serve(base):
        results = []
        for c, b in points:
            try:
                results.append(serve(hardware, model, base.model_copy(update={"concurrency": c, "token_budget": b}),
                                     method=method, **fields).metrics)
            except (ScenarioError, ValueError) as error:
                results.append(error)
    else:
        try:
            evaluator = LayoutEvaluator(hardware, model, method, base, fields, schedules) if exact else \
                LayoutScreen(hardware, model, method, base, fields)
            results = evaluator.evaluate(points)
        except (ScenarioError, ValueError) as error:
            results = [error] * len(points)
    for row, result in zip(rows, results):
        if isinstance(result, Exception):
            row["reason"] = _message(result)
        else:
            row.update({name: result[name] for name in METRIC_COLUMNS}, fits=True, exact=exact)
    return rows


def evaluate_all(devices: dict, model, method: str, base: ServingOptions, scenario_fields: dict,
                 tasks: list[tuple[str, Layout]], points: list[tuple[int, int]], client=None,
                 exact: bool = True) -> list[dict]:
    """Rows of every (device name, layout) task, in task order; on `client`'s Dask workers when given."""
    if client is None:
        caches = {name: ScheduleCache() for name in devices}     # schedules shared by a device's layouts
        rows = []
        for name, layout in tasks:
            rows.extend(layout_rows(devices[name], model, method, base, scenario_fields, layout, points,
                                    caches[name], exact, name))
        return rows
    [shared] = client.scatter([(devices, model, method, base, scenario_fields, points, exact)], broadcast=True,
                              hash=False)
    run = uuid.uuid4().hex
    futures = [client.submit(_task, shared, name, layout, key=f"llm-roofline-serving-search-{run}-{i}")
               for i, (name, layout) in enumerate(tasks)]
    try:
        parts = client.gather(futures)
    finally:
        client.cancel(futures + [shared])
    return [row for part in parts for row in part]


def _task(shared: tuple, name: str, layout: Layout) -> list[dict]:
    devices, model, method, base, scenario_fields, points, exact = shared
    return layout_rows(devices[name], model, method, base, scenario_fields, layout, points, exact=exact, label=name)


def finite(value) -> bool:
    return value is not None and bool(np.isfinite(value))
