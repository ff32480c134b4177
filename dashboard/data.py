"""Cached engine calls for the dashboard: nothing is recomputed unless its inputs changed.

Cache keys are JSON strings of the pydantic objects, so an edited device or a different
workload is a different entry and an unchanged one is a hit.
"""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

import engine
from engine.hardware import Hardware
from engine.auto import load_any_model
from engine.models import ModelConfig
from engine.specs import load_specs
from engine.collectives import interconnect_ceilings
from engine.layout_sweep import layout_sweep
from engine.memory import fewest_devices
from engine.sweeps import sweep
from engine.workload import Scenario


@st.cache_resource(show_spinner=False)
def bundled_specs() -> dict[str, Hardware]:
    return load_specs()


@st.cache_resource(show_spinner=False)
def offline_model(model_id: str):
    """Catalog, local path or local Hugging Face cache (hand model, else automatic when the `auto`
    extra is installed); never the network, so shared links open fast."""
    return load_any_model(model_id, offline=True)


def hub_model(model_id: str, token: str | None):
    """An explicit Hub download (the user pressed Load)."""
    return load_any_model(model_id, token=token or None)


def model_key(model) -> str:
    """What identifies a model for the caches: its full config, hand or automatic."""
    if isinstance(model, ModelConfig):
        return model.model_dump_json()
    return json.dumps({"automatic": model.name, "config": model.config_dict}, sort_keys=True, default=str)


# Each cached function takes the objects as `_`-prefixed arguments (not hashed) and the JSON keys
# that identify them (hashed): an edited device or another workload is a new entry.
@st.cache_data(show_spinner=False, max_entries=512)
def _estimate(hardware_json: str, model_json: str, scenario_json: str, method: str, _model):
    return engine.estimate(Hardware.model_validate_json(hardware_json), _model,
                           Scenario.model_validate_json(scenario_json), method=method)


def estimate(hardware: Hardware, model, scenario: Scenario, method: str):
    return _estimate(hardware.model_dump_json(), model_key(model), scenario.model_dump_json(), method, model)


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
