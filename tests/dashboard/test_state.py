"""The view <-> URL round trip and per-field fallback for bad parameters (pure, no Streamlit)."""

from __future__ import annotations

import pytest

from dashboard.resolve import resolve_devices, resolve_model, resolve_scenario
from dashboard.state import ViewState, parse_query, to_query
from engine.models import load_model


def test_default_view_round_trips():
    state = ViewState()
    parsed, warnings = parse_query(to_query(state))
    assert parsed == state and warnings == []


def test_full_view_round_trips():
    state = ViewState(page="compare", devices=("H100-SXM", "MI300X", "H100-NEXT"), model="Qwen/Qwen2.5-7B",
                      phase="decode", batch=64, input_length=4096, output_length=512, context_length=8000,
                      chunk_size=512, weight_dtype="fp8", activation_dtype="bf16", kv_dtype="fp8",
                      method="seed", stack_by="family", percent=True, sweep_field="input_length",
                      clones=(("H100-NEXT", "H100-SXM"),),
                      edits=(("H100-NEXT", (("memory_bandwidth", "5025"), ("num_cores", "144"))),))
    query = to_query(state)
    assert query["hw"] == "H100-SXM,MI300X,H100-NEXT"
    assert query["edit.H100-NEXT"] == "memory_bandwidth:5025;num_cores:144"
    assert query["clone.H100-NEXT"] == "H100-SXM"
    parsed, warnings = parse_query(query)
    assert parsed == state and warnings == []


@pytest.mark.parametrize("key, value, attribute", [
    ("batch", "lots", "batch"), ("batch", "0", "batch"), ("in", "-3", "input_length"),
    ("phase", "training", "phase"), ("wdt", "fp7", "weight_dtype"), ("method", "magic", "method"),
    ("page", "nowhere", "page"), ("pct", "yes", "percent"),
])
def test_bad_parameter_falls_back_for_that_field_only(key, value, attribute):
    parsed, warnings = parse_query({key: value, "batch" if key != "batch" else "out": "7", "model": "Qwen/Qwen2.5-7B"})
    assert getattr(parsed, attribute) == getattr(ViewState(), attribute)
    assert parsed.model == "Qwen/Qwen2.5-7B"                      # the other fields survive
    assert len(warnings) == 1 and key in warnings[0] and repr(value) in warnings[0]


def test_unknown_and_garbled_parameters_warn():
    parsed, warnings = parse_query({"zoom": "3", "edit.H100-SXM": "memory_bandwidth", "clone.a,b": "H100-SXM"})
    assert parsed.edits == () and parsed.clones == ()
    assert len(warnings) == 3
    assert any("zoom" in w for w in warnings)


def test_resolve_devices_applies_clones_and_edits(devices):
    state, _ = parse_query({"hw": "H100-NEXT,H100-SXM,Z9000", "clone.H100-NEXT": "H100-SXM",
                            "edit.H100-NEXT": "memory_bandwidth:5025;num_cores:oops"})
    resolved, state, warnings = resolve_devices(state, devices)
    assert state.devices == ("H100-NEXT", "H100-SXM")
    assert resolved["H100-NEXT"].memory_bandwidth_bytes_per_s == 5.025e12
    assert resolved["H100-NEXT"].num_cores == resolved["H100-SXM"].num_cores    # bad edit dropped
    assert resolved["H100-SXM"].memory_bandwidth_bytes_per_s == 3.35e12          # base untouched
    assert state.edits == (("H100-NEXT", (("memory_bandwidth", "5025"),)),)
    assert any("Z9000" in w for w in warnings) and any("num_cores" in w and "oops" in w for w in warnings)


def test_resolve_model_and_scenario_fall_back():
    state, _ = parse_query({"model": "no-such-org/no-such-model", "in": "2048"})
    model, state, warnings = resolve_model(state, lambda m: load_model(m, offline=True), {})
    assert model.name == "meta-llama/Llama-3.1-8B" and "no-such-org/no-such-model" in warnings[0]
    scenario, problems = resolve_scenario(state)
    assert scenario.input_length == 2048 and problems == []


def test_downloaded_workbook_carries_clones_and_edits(devices):
    from dashboard.views.hardware import workbook_bytes
    from engine.specs import load_sources, load_specs
    state, _ = parse_query({"clone.H100-NEXT": "H100-SXM", "edit.H100-NEXT": "memory_bandwidth:5025",
                            "edit.MI300X": "num_cores:320"})
    resolved, state, warnings = resolve_devices(state, devices)
    assert warnings == []
    data = workbook_bytes(resolved, state)
    reloaded = load_specs(data)
    assert list(reloaded) == list(devices) + ["H100-NEXT"]
    assert reloaded["H100-NEXT"].memory_bandwidth_bytes_per_s == 5.025e12
    assert reloaded["MI300X"].num_cores == 320 and reloaded["H100-SXM"] == devices["H100-SXM"]
    sources = load_sources(data)
    assert "what-if edit" in sources["MI300X"]["num_cores"][0]
    assert sources["H100-NEXT"]["memory_bandwidth"][0].startswith(("what-if edit", "clone of H100-SXM"))
