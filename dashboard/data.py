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
from engine.models import ModelConfig, load_model
from engine.specs import load_specs
from engine.collectives import interconnect_ceilings
from engine.layout_sweep import layout_sweep
from engine.sweeps import sweep
from engine.workload import Scenario


@st.cache_resource(show_spinner=False)
def bundled_specs() -> dict[str, Hardware]:
    return load_specs()


@st.cache_resource(show_spinner=False)
def offline_model(model_id: str) -> ModelConfig:
    """Catalog, local path or local Hugging Face cache; never the network (links must open fast)."""
    return load_model(model_id, offline=True)


def hub_model(model_id: str, token: str | None) -> ModelConfig:
    """An explicit Hub download (the user pressed Load)."""
    return load_model(model_id, token=token or None)


@st.cache_data(show_spinner=False, max_entries=512)
def _estimate(hardware_json: str, model_json: str, scenario_json: str, method: str):
    hardware = Hardware.model_validate_json(hardware_json)
    model = ModelConfig.model_validate_json(model_json)
    scenario = Scenario.model_validate_json(scenario_json)
    return engine.estimate(hardware, model, scenario, method=method)


def estimate(hardware: Hardware, model: ModelConfig, scenario: Scenario, method: str):
    return _estimate(hardware.model_dump_json(), model.model_dump_json(), scenario.model_dump_json(), method)


@st.cache_data(show_spinner=False, max_entries=64)
def _sweep(hardware_json: str, model_json: str, scenario_json: str, field: str, values_json: str, method: str):
    return sweep(Hardware.model_validate_json(hardware_json), ModelConfig.model_validate_json(model_json),
                 Scenario.model_validate_json(scenario_json), field, json.loads(values_json), method=method)


def sweep_frame(hardware: Hardware, model: ModelConfig, scenario: Scenario, field: str, values, method: str) -> pd.DataFrame:
    return _sweep(hardware.model_dump_json(), model.model_dump_json(), scenario.model_dump_json(), field,
                  json.dumps([int(v) for v in values]), method)


@st.cache_data(show_spinner=False, max_entries=64)
def _layout_sweep(hardware_json: str, model_json: str, scenario_json: str, field: str, values_json: str, method: str):
    return layout_sweep(Hardware.model_validate_json(hardware_json), ModelConfig.model_validate_json(model_json),
                        Scenario.model_validate_json(scenario_json), field, json.loads(values_json), method=method)


def layout_sweep_frame(hardware: Hardware, model: ModelConfig, scenario: Scenario, field: str, values,
                       method: str) -> pd.DataFrame:
    return _layout_sweep(hardware.model_dump_json(), model.model_dump_json(), scenario.model_dump_json(), field,
                         json.dumps([int(v) for v in values]), method)


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
