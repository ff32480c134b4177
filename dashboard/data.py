"""Cached engine calls for the dashboard: nothing is recomputed unless its inputs changed.

Cache keys are JSON strings of the pydantic objects, so an edited device or a different
workload is a different entry and an unchanged one is a hit.
"""

from __future__ import annotations

import gc
import json

import pandas as pd
import streamlit as st

import engine
from engine import (
    fewest_devices, Hardware, interconnect_ceilings, layout_sweep, load_any_model, load_specs, ModelConfig,
    Scenario, sweep, sweep_grid,
)


@st.cache_resource(show_spinner=False)
def freeze_startup_heap() -> int:
    """Once per server process, at the end of its first script run (the engine, pandas, plotly and the catalog
    loaded): collect, then move every object alive to the collector's permanent generation (gc.freeze), so a later
    full collection walks only what came after (a full collection of the start-up heap takes 0.2-0.6 s here, under
    the interpreter lock that every session's run shares). Returns how many objects were frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


@st.cache_resource(show_spinner=False)
def bundled_specs() -> dict[str, Hardware]:
    return load_specs()


@st.cache_resource(show_spinner=False)
def offline_model(model_id: str):
    """Catalog or local Hugging Face cache (hand model, else automatic when the `auto` extra is installed);
    never the network, so shared links open fast, and never a path on the server (a hosted dashboard
    reads no one's files: dashboard.state.check_model_id)."""
    return load_any_model(model_id, offline=True, local_files=False)


def hub_model(model_id: str, token: str | None):
    """An explicit Hub download (the user pressed Load); a repo id only, never a path on the server."""
    from dashboard.state import check_model_id
    return load_any_model(check_model_id(model_id), token=token or None, local_files=False)


def model_key(model) -> str:
    """What identifies a model for the caches: its full config, hand or automatic."""
    if isinstance(model, ModelConfig):
        return model.model_dump_json()
    return json.dumps({"automatic": model.name, "config": model.config_dict}, sort_keys=True, default=str)


# Each cached function takes the objects as `_`-prefixed arguments (not hashed) and the JSON keys
# that identify them (hashed): an edited device or another workload is a new entry.
@st.cache_data(show_spinner=False, max_entries=128)
def _estimate(hardware_json: str, model_json: str, scenario_json: str, method: str, _model):
    return _with_frames(engine.estimate(Hardware.model_validate_json(hardware_json), _model,
                                        Scenario.model_validate_json(scenario_json), method=method))


def _with_frames(result):
    result.kernels, result.phases    # noqa: B018  the pages show both: built once, cached (pickled) with it
    return result


SESSION_ESTIMATES = "_estimates"     # session_state key: this session's recent estimates, by their cache key
SESSION_ESTIMATES_KEPT = 16


def estimate(hardware: Hardware, model, scenario: Scenario, method: str):
    """The estimate, from this session's own recent ones when the view asked for it before (a rerun that changes
    nothing, a page asking twice), else from the one cache shared by the sessions (`shared_estimate`).
    Estimates are read-only in the dashboard, so one object serves every rerun of the session; no object is
    handed to two sessions."""
    key = (hardware.model_dump_json(), model_key(model), scenario.model_dump_json(), method)
    kept = _session_estimates()
    if key in kept:
        kept[key] = kept.pop(key)                     # most recently used last
        return kept[key]
    result = shared_estimate(key, hardware, model, scenario, method)
    kept[key] = result
    while len(kept) > SESSION_ESTIMATES_KEPT:
        kept.pop(next(iter(kept)))
    return result


def shared_estimate(key: tuple, hardware: Hardware, model, scenario: Scenario, method: str):
    """An Estimate of this caller's own from the one cache that holds it across sessions: for a hand model
    (ModelConfig) the engine's (engine.results.estimate_cache: equal frozen inputs reuse the estimate, each call
    gets a fresh copy, its kernel and phase frames built when first read: the estimate shown beside the selected
    one needs only its headline numbers), for an automatic model (which the engine does not keep) the dashboard's
    `_estimate` (st.cache_data: a fresh unpickled copy, frames included, on every hit). Never both: one copy of
    each estimate in memory."""
    if type(model) is ModelConfig:               # what the engine keeps (a subclass it computes every time)
        return engine.estimate(hardware, model, scenario, method=method)
    return _estimate(*key, model)


def _session_estimates() -> dict:
    """This session's dict of recent estimates (a throwaway dict outside a Streamlit session)."""
    try:
        return st.session_state.setdefault(SESSION_ESTIMATES, {})
    except Exception:                                  # no session (bare mode, a script): nothing kept
        return {}


@st.cache_data(show_spinner=False, max_entries=64)
def _sweep(hardware_json: str, model_json: str, scenario_json: str, field: str, values_json: str, method: str, _model):
    return sweep(Hardware.model_validate_json(hardware_json), _model, Scenario.model_validate_json(scenario_json),
                 field, json.loads(values_json), method=method)


def sweep_frame(hardware: Hardware, model, scenario: Scenario, field: str, values, method: str) -> pd.DataFrame:
    return _sweep(hardware.model_dump_json(), model_key(model), scenario.model_dump_json(), field,
                  json.dumps([int(v) for v in values]), method, model)


@st.cache_data(show_spinner=False, max_entries=64)
def _layout_sweep(hardware_json: str, model_json: str, scenario_json: str, field: str, values_json: str, method: str,
                  _model):
    return layout_sweep(Hardware.model_validate_json(hardware_json), _model,
                        Scenario.model_validate_json(scenario_json), field, json.loads(values_json), method=method)


def layout_sweep_frame(hardware: Hardware, model, scenario: Scenario, field: str, values, method: str) -> pd.DataFrame:
    return _layout_sweep(hardware.model_dump_json(), model_key(model), scenario.model_dump_json(), field,
                         json.dumps([int(v) for v in values]), method, model)


@st.cache_data(show_spinner=False, max_entries=64)
def _fewest_devices(hardware_json: str, model_json: str, scenario_json: str, _model):
    return fewest_devices(Hardware.model_validate_json(hardware_json), _model, Scenario.model_validate_json(scenario_json))


def fewest_devices_fit(hardware: Hardware, model, scenario: Scenario):
    """The smallest tp x pp layout whose most loaded device fits (None when nothing tried fits)."""
    return _fewest_devices(hardware.model_dump_json(), model_key(model), scenario.model_dump_json(), model)


@st.cache_data(show_spinner=False, max_entries=64)
def _ceilings(hardware_json: str) -> pd.DataFrame:
    return engine.roofline_ceilings(Hardware.model_validate_json(hardware_json))


def ceilings(hardware: Hardware, links: bool = False) -> pd.DataFrame:
    """Roofline ceilings; with `links`, the scale-up and scale-out interconnect as two more slopes
    (communication moves bytes over them the way memory-bound kernels move bytes over HBM)."""
    frame = _ceilings(hardware.model_dump_json())
    if not links or hardware.link_bandwidth_bytes_per_s is None:
        return frame
    network = interconnect_ceilings(hardware)
    rows = [{"device": hardware.name, "kind": "memory", "label": f"{level} bandwidth", "unit": "link", "dtype": "",
             "level": level, "value": network[key], "ridge_point": float("nan")}
            for level, key in (("scale-up link", "scale_up_bytes_per_s"), ("scale-out link", "scale_out_bytes_per_s"))
            if network.get(key)]
    return pd.concat([frame, pd.DataFrame(rows)], ignore_index=True)


@st.cache_data(show_spinner=False, max_entries=32)
def _grid(model_json: str, scenario_json: str, grid_json: str, hardware_json: str, devices_json: str, method: str,
          _model) -> pd.DataFrame:
    devices = {name: Hardware.model_validate_json(text) for name, text in json.loads(devices_json).items()}
    return sweep_grid(_model, Scenario.model_validate_json(scenario_json), json.loads(grid_json),
                      hardware=Hardware.model_validate_json(hardware_json), method=method, devices=devices or None)


def grid_frame(model, scenario: Scenario, grid: dict, hardware: Hardware, devices: dict[str, Hardware],
               method: str) -> pd.DataFrame:
    """engine.explore.grid.sweep_grid around `scenario` on `hardware` (`devices`: the ones a `device` field names,
    with their edits; `model`: one model, or {id: model} for a `model` field); keyed on the JSON of every
    input, so an edited device is a new entry."""
    key = json.dumps({name: model_key(m) for name, m in model.items()}, sort_keys=True) if isinstance(model, dict) \
        else model_key(model)
    return _grid(key, scenario.model_dump_json(), json.dumps(grid), hardware.model_dump_json(),
                 json.dumps({name: hw.model_dump_json() for name, hw in devices.items()}, sort_keys=True), method,
                 model)


@st.cache_data(show_spinner=False, max_entries=32)
def _sensitivity(hardware_json: str, model_json: str, scenario_json: str, change: float, metrics: tuple, method: str,
                 _model) -> pd.DataFrame:
    from engine import sensitivity
    return sensitivity(_model, Scenario.model_validate_json(scenario_json), Hardware.model_validate_json(hardware_json),
                       change=change, metrics=metrics, method=method)


def sensitivity_frame(hardware: Hardware, model, scenario: Scenario, change: float, metrics: tuple,
                      method: str) -> pd.DataFrame:
    """engine.explore.hardware_sensitivity.sensitivity: each field -change and +change, one row per (field, metric)."""
    return _sensitivity(hardware.model_dump_json(), model_key(model), scenario.model_dump_json(), change,
                        tuple(metrics), method, model)


@st.cache_data(show_spinner=False, max_entries=32)
def _least_value(hardware_json: str, model_json: str, scenario_json: str, field: str, metric: str, target: float,
                 method: str, _model):
    from engine import least_value
    return least_value(_model, Scenario.model_validate_json(scenario_json), Hardware.model_validate_json(hardware_json),
                       field, metric, target, method=method)


def least_value(hardware: Hardware, model, scenario: Scenario, field: str, metric: str, target: float, method: str):
    """engine.explore.inverse.least_value: the smallest value of `field` at which `metric` meets `target` (SI units)."""
    return _least_value(hardware.model_dump_json(), model_key(model), scenario.model_dump_json(), field, metric,
                        float(target), method, model)


@st.cache_data(show_spinner=False, max_entries=64)
def _serving_curve(hardware_json: str, model_json: str, concurrencies: tuple, method: str, fields_json: str, _model):
    from engine import serving_curve
    return serving_curve(Hardware.model_validate_json(hardware_json), _model, list(concurrencies), method=method,
                         **json.loads(fields_json))


def serving_curve_frame(hardware: Hardware, model, concurrencies, method: str, **fields) -> pd.DataFrame:
    """engine.serving.serving_curve on `hardware`: one row per concurrency (cached on every input)."""
    return _serving_curve(hardware.model_dump_json(), model_key(model), tuple(int(c) for c in concurrencies), method,
                          json.dumps(fields, sort_keys=True), model)
