"""The realistic method's per-structure memo (engine/estimators/structure_memo.py): a prefill, decode step or request
timed with the memo of an earlier table of the same strings gives exactly the columns of one timed with an empty
memo, over length sweeps of dense, sliding-window, MoE and tensor- or pipeline-parallel models (both launch modes
for the one-phase tables); a table whose strings differ, another constants object, device or launch mode gets its
own memo, a table out of the builder's order none, and the kept arrays are read-only."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import engine
from engine.decomposition.transformer import decompose_columns
from engine.estimators import kept_rows, structure_memo
from engine.estimators.realistic import DEFAULT_CONSTANTS, estimate_realistic
from engine.estimators.row_groups import RowGroups

MODELS = ("meta-llama/Llama-3.1-8B", "google/gemma-2-9b", "mistralai/Mixtral-8x7B-v0.1", "openai/gpt-oss-20b")
SWEEPS = [dict(batch=1), dict(batch=4, kv_dtype="fp8"), dict(batch=1, tp=2, pp=2)]
LENGTH = {"prefill": "input_length", "decode": "context_length"}


def timed(model, hardware, scenario, constants=DEFAULT_CONSTANTS, launch="eager") -> dict:
    return estimate_realistic(decompose_columns(model, scenario), hardware, scenario, launch, constants)


def fresh(model, hardware, scenario, **options) -> dict:
    structure_memo.clear()
    kept_rows.clear()
    return timed(model, hardware, scenario, **options)


def assert_same_columns(actual: dict, expected: dict) -> None:
    assert list(actual) == list(expected)
    for key, values in expected.items():
        values, got = np.asarray(values), np.asarray(actual[key])
        assert np.array_equal(got, values, equal_nan=values.dtype != object) and got.dtype == values.dtype, key


@pytest.mark.parametrize("model_id", MODELS)
@pytest.mark.parametrize("sweep", range(len(SWEEPS)))
@pytest.mark.parametrize("phase", ["prefill", "decode"])
@pytest.mark.parametrize("launch", ["eager", "graph"])
def test_a_kept_memo_gives_the_fresh_timing(model_id, sweep, phase, launch):
    model, hardware = engine.load_model(model_id), engine.load_hardware("H100-SXM")
    scenarios = [engine.Scenario(phase=phase, **{LENGTH[phase]: length}, **SWEEPS[sweep])
                 for length in (500, 501, 4000)]
    expected = [fresh(model, hardware, scenario, launch=launch) for scenario in scenarios]
    structure_memo.clear()
    kept_rows.clear()
    for scenario, full in zip(scenarios, expected):
        assert_same_columns(timed(model, hardware, scenario, launch=launch), full)
    assert len(structure_memo._KEPT) == 1       # the three lengths: one structure


def _memo(table, hardware, constants=DEFAULT_CONSTANTS, launch="eager"):
    return structure_memo.memo_for(table, RowGroups(table), hardware, constants, launch)


def test_each_structure_constants_and_device_has_its_own_memo():
    structure_memo.clear()
    model, h100 = engine.load_model("meta-llama/Llama-3.1-8B"), engine.load_hardware("H100-SXM")
    table = decompose_columns(model, engine.Scenario(phase="prefill", input_length=512))
    memo = _memo(table, h100)
    memo["marker"] = 1
    longer = decompose_columns(model, engine.Scenario(phase="prefill", input_length=513))
    assert _memo(longer, h100) is memo                       # numbers differ, strings equal: the same memo
    other_dtype = dict(table, dtype=np.array(["fp8"] + list(np.asarray(table["dtype"])[1:]), dtype=object))
    assert _memo(other_dtype, h100) is not memo
    renamed = dict(table, name=np.array(["Other"] + list(np.asarray(table["name"])[1:]), dtype=object))
    assert _memo(renamed, h100) is not memo
    assert _memo(table, h100, dataclasses.replace(DEFAULT_CONSTANTS)) is not memo
    assert _memo(table, engine.load_hardware("A100-80GB-SXM")) is not memo
    assert _memo(table, h100, launch="graph") is not memo
    assert _memo(table, h100) is memo


@pytest.mark.parametrize("model_id", MODELS)
def test_a_request_sweep_with_a_kept_memo_gives_the_fresh_timing(model_id):
    model, hardware = engine.load_model(model_id), engine.load_hardware("H100-SXM")
    scenarios = [engine.Scenario(phase="request", input_length=length, output_length=6) for length in (64, 65, 300)]
    expected = [fresh(model, hardware, scenario) for scenario in scenarios]
    structure_memo.clear()
    for scenario, full in zip(scenarios, expected):
        assert_same_columns(timed(model, hardware, scenario), full)
    assert len(structure_memo._KEPT) == 1       # the three prompt lengths: one structure


def test_a_table_out_of_the_builders_order_has_no_memo():
    model, hardware = engine.load_model("meta-llama/Llama-3.1-8B"), engine.load_hardware("H100-SXM")
    table = decompose_columns(model, engine.Scenario(phase="request", input_length=64, output_length=8))
    assert _memo(table, hardware) is not None
    reordered = dict(table, group=np.asarray(table["group"])[::-1].copy())
    assert _memo(reordered, hardware) is None


def test_kept_arrays_are_read_only_and_results_are_the_callers():
    structure_memo.clear()
    kept_rows.clear()
    model, hardware = engine.load_model("meta-llama/Llama-3.1-8B"), engine.load_hardware("H100-SXM")
    scenario = engine.Scenario(phase="prefill", input_length=512)
    first = timed(model, hardware, scenario)
    (memo,) = [entry[1] for entry in structure_memo._KEPT.values()]
    arrays = [value for value in memo.values() if isinstance(value, np.ndarray)]
    arrays += [item for value in memo.values() if isinstance(value, tuple) for item in value
               if isinstance(item, np.ndarray)]
    assert arrays and not any(array.flags.writeable for array in arrays)
    first["fused_group"][:] = 7          # the caller's copy: the next estimate is unchanged
    first["launches"][:] = 7
    second = timed(model, hardware, scenario)
    assert 7 not in second["fused_group"].tolist() and 7 not in second["launches"].tolist()
