"""Turn a ViewState into engine objects (devices with clones and edits, model, scenario).

Pure functions, no Streamlit. Every problem becomes a warning that names the URL parameter or
field, and the view falls back for that item only.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Mapping

from pydantic import ValidationError

from dashboard.state import DEFAULT_DEVICE, DEFAULT_MODEL, UPLOAD_PREFIX, URL_KEY_OF, ViewState, check_model_id
from engine import apply_edits, EditError, Hardware, Scenario


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
    state = replace(state, devices=selected, clones=tuple(clones), edits=tuple(edits))
    return devices, _known_pools(state, devices, warnings), warnings


def _known_pools(state: ViewState, devices: Mapping[str, Hardware], warnings: list[str]) -> ViewState:
    """The Serving page's prefill and decode devices (sv.pd, sv.dd): an unknown one falls back to the primary device
    with a warning (a URL warning: shown on every run, not only the one that read the link)."""
    for field, key, label in (("serving_prefill_device", "sv.pd", "Prefill"), ("serving_decode_device", "sv.dd",
                                                                               "Decode")):
        name = getattr(state, field)
        if name and name not in devices:
            warnings.append(f"URL parameter {key}: {label} device {name!r} is not a known device; using the primary "
                            "device")
            state = replace(state, **{field: ""})
    return state


def resolve_scenario(state: ViewState) -> tuple[Scenario, list[str]]:
    """The Scenario; a combination pydantic rejects falls back to the defaults with a warning naming the URL
    parameters involved."""
    try:
        return Scenario(**state.scenario_fields), []
    except ValidationError as error:
        problems = "; ".join(": ".join(filter(None, (".".join(map(str, e["loc"])),
                                                     str(e["msg"]).removeprefix("Value error, "))))
                             for e in error.errors())
        keys = [key for attribute, key in URL_KEY_OF.items()
                if attribute in state.scenario_fields and re.search(rf"\b{attribute}\b", problems)]
        named = f" (URL parameters {', '.join(keys)})" if keys else ""
        return Scenario(), [f"workload not valid{named}: {problems}; showing the default workload"]


SERVING_CHUNKS = "serving engines run chunks of 256 to 8,192 tokens"


def resolve_lengths(state: ViewState, model) -> tuple[ViewState, list[str]]:
    """A shared link's lengths checked against the model: `ctx`, `in` and `out` beyond its positions
    (max_position_embeddings) fall back with a warning naming the parameter; a chunked-prefill chunk of a few
    tokens is kept but warned about (`chunk` with `cpf=1`)."""
    positions = getattr(model, "max_position_embeddings", None)
    warnings: list[str] = []
    if isinstance(positions, int) and positions > 1:
        state = _fit_lengths(state, model.name, positions, warnings)
    if state.chunked_prefill and state.phase == "request" and state.chunk_size < 64:
        iterations = -(-state.batch * state.input_length // state.chunk_size)
        warnings.append(f"URL parameters chunk={state.chunk_size} and cpf=1: each chunked-prefill iteration runs only "
                        f"{state.chunk_size} token(s), so the prompts take about {iterations:,} iterations; "
                        f"{SERVING_CHUNKS} (kept as given)")
    return state, warnings


def _fit_lengths(state: ViewState, name: str, positions: int, warnings: list[str]) -> ViewState:
    holds = f"{name} holds {positions:,} positions (max_position_embeddings)"
    if state.phase == "decode" and state.context_length is not None and state.context_length + 1 > positions:
        warnings.append(f"URL parameter ctx={state.context_length}: a decode step after {state.context_length:,} "
                        f"cached tokens needs {state.context_length + 1:,} positions but {holds}; using none "
                        "(the prompt length)")
        state = replace(state, context_length=None)
    extra = 1 if state.phase == "decode" and state.context_length is None else 0
    if state.input_length + extra > positions:
        fallback = min(ViewState().input_length, positions // 2)
        warnings.append(f"URL parameter in={state.input_length}: the prompt is longer than the model can hold "
                        f"({holds}); using {fallback}")
        state = replace(state, input_length=fallback)
    if state.phase in ("request", "chunked") and state.input_length + state.output_length > positions:
        fallback = max(1, min(ViewState().output_length, positions - state.input_length))
        warnings.append(f"URL parameter out={state.output_length}: in + out = "
                        f"{state.input_length + state.output_length:,} tokens but {holds}; using {fallback}")
        state = replace(state, output_length=fallback)
    return state


def resolve_model(state: ViewState, load, uploaded: Mapping[str, object]) -> tuple[object, ViewState, list[str]]:
    """The model for `state.model`: an uploaded config by name, else `load(id)` (catalog, cache or Hub)."""
    if state.model in uploaded:
        return uploaded[state.model], state, []
    try:
        if check_model_id(state.model).startswith(UPLOAD_PREFIX):
            raise ValueError("a config.json uploaded in another browser session (uploads are not shared: "
                             "upload it here)")
        return load(state.model), state, []
    except (ValueError, OSError, ImportError) as error:
        warning = f"URL parameter model={state.model[:100]!r}: {error}; showing {DEFAULT_MODEL}"
        return load(DEFAULT_MODEL), replace(state, model=DEFAULT_MODEL), [warning]


def resolve_models(state: ViewState, load, uploaded: Mapping[str, object]) -> tuple[dict, ViewState, list[str]]:
    """{id: model} for `state.models` (the Compare models page): uploads by name, else `load(id)`; an id that
    cannot be loaded is left out with a warning naming the URL parameter `models`, the others are kept."""
    models: dict = {}
    warnings: list[str] = []
    for model_id in state.models:
        try:
            if model_id in uploaded:
                models[model_id] = uploaded[model_id]
                continue
            if check_model_id(model_id).startswith(UPLOAD_PREFIX):
                raise ValueError("a config.json uploaded in another browser session (uploads are not shared: "
                                 "upload it here)")
            models[model_id] = load(model_id)
        except (ValueError, OSError, ImportError) as error:
            others = [m for m in state.models if m != model_id]
            kept = f"; keeping {', '.join(others)}" if others else ""
            warnings.append(f"URL parameter models: model {model_id[:100]!r} cannot be shown ({error}){kept}")
    return models, replace(state, models=tuple(models)), warnings
