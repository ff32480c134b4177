"""Turn a ViewState into engine objects (devices with clones and edits, model, scenario).

Pure functions, no Streamlit. Every problem becomes a warning that names the URL parameter or
field, and the view falls back for that item only.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from pydantic import ValidationError

from dashboard.state import DEFAULT_DEVICE, DEFAULT_MODEL, ViewState
from engine.hardware import Hardware
from engine.what_if import EditError, apply_edits
from engine.workload import Scenario


def resolve_devices(state: ViewState, base: Mapping[str, Hardware]) -> tuple[dict[str, Hardware], ViewState, list[str]]:
    """All devices (workbook + clones, with edits applied) and the state with bad items dropped."""
    devices = dict(base)
    warnings: list[str] = []
    clones = []
    for new_name, base_name in state.clones:
        if new_name in devices:
            warnings.append(f"URL parameter clone.{new_name}: a device named {new_name!r} already exists; ignored")
        elif base_name not in devices:
            warnings.append(f"URL parameter clone.{new_name}={base_name!r}: unknown device; ignored")
        else:
            devices[new_name] = devices[base_name].with_changes(name=new_name, kind="hypothetical")
            clones.append((new_name, base_name))
    edits = []
    for device, fields in state.edits:
        if device not in devices:
            warnings.append(f"URL parameter edit.{device}: unknown device {device!r}; ignored")
            continue
        kept = []
        for key, value in fields:
            try:
                devices[device] = apply_edits(devices[device], {key: value})
                kept.append((key, value))
            except EditError as error:
                warnings.append(f"URL parameter edit.{device}: {error}; edit ignored")
        if kept:
            edits.append((device, tuple(kept)))
    selected = tuple(name for name in state.devices if name in devices)
    for name in state.devices:
        if name not in devices:
            warnings.append(f"URL parameter hw: unknown device {name!r} ignored")
    if not selected:
        selected = (DEFAULT_DEVICE,) if DEFAULT_DEVICE in devices else (next(iter(devices)),)
    return devices, replace(state, devices=selected, clones=tuple(clones), edits=tuple(edits)), warnings


def resolve_scenario(state: ViewState) -> tuple[Scenario, list[str]]:
    """The Scenario; a combination pydantic rejects falls back to the defaults with a warning."""
    try:
        return Scenario(**state.scenario_fields), []
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        return Scenario(), [f"workload not valid ({problems}); showing the default workload"]


def resolve_model(state: ViewState, load, uploaded: Mapping[str, object]) -> tuple[object, ViewState, list[str]]:
    """The model for `state.model`: an uploaded config by name, else `load(id)` (catalog, cache or Hub)."""
    if state.model in uploaded:
        return uploaded[state.model], state, []
    try:
        return load(state.model), state, []
    except (ValueError, OSError) as error:
        warning = f"URL parameter model={state.model!r}: {error}; showing {DEFAULT_MODEL}"
        return load(DEFAULT_MODEL), replace(state, model=DEFAULT_MODEL), [warning]
