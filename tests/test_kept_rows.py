"""The kept timing of a decode step's rows outside its fused attention (engine/estimators/kept_rows.py): a decode
step timed from kept values gives exactly the columns of one timed in full, over context sweeps of dense,
sliding-window, MoE and tensor- or pipeline-parallel models in both launch modes; it is kept only for decode
steps, and a different device or constants object never reads another's entry."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import engine
from engine.estimators import kept_rows
from engine.estimators.realistic import DEFAULT_CONSTANTS, estimate_realistic
from engine.decomposition.transformer import decompose_columns
from engine.results import estimate_cache

MODELS = ("meta-llama/Llama-3.1-8B", "google/gemma-2-9b", "mistralai/Mixtral-8x7B-v0.1", "openai/gpt-oss-20b")
SWEEPS = [dict(batch=1), dict(batch=4, kv_dtype="fp8"), dict(batch=1, tp=2, pp=2)]


def timed(model, hardware, scenario, constants=DEFAULT_CONSTANTS, launch="eager") -> dict:
    return estimate_realistic(decompose_columns(model, scenario), hardware, scenario, launch, constants)


def assert_same_columns(actual: dict, expected: dict) -> None:
    assert list(actual) == list(expected)
    for key, values in expected.items():
        values, got = np.asarray(values), np.asarray(actual[key])
        assert np.array_equal(got, values, equal_nan=values.dtype != object) and got.dtype == values.dtype, key


def in_full(model, hardware, scenario, **options) -> dict:
    kept_rows.clear()
    return timed(model, hardware, scenario, **options)


@pytest.mark.parametrize("model_id", MODELS)
@pytest.mark.parametrize("sweep", range(len(SWEEPS)))
@pytest.mark.parametrize("launch", ["eager", "graph"])
def test_kept_gemvs_give_the_full_timing(model_id, sweep, launch):
    model, hardware = engine.load_model(model_id), engine.load_hardware("H100-SXM")
    scenarios = [engine.Scenario(phase="decode", context_length=context, **SWEEPS[sweep])
                 for context in (500, 501, 4000)]
    expected = [in_full(model, hardware, scenario, launch=launch) for scenario in scenarios]
    kept_rows.clear()
    for scenario, full in zip(scenarios, expected):
        assert_same_columns(timed(model, hardware, scenario, launch=launch), full)
    assert len(kept_rows._KEPT) == 1       # the three steps' unfused rows: one structure


def test_estimates_of_a_context_sweep_are_bit_identical():
    model, hardware = engine.load_model("meta-llama/Llama-3.1-70B"), engine.load_hardware("H100-SXM")
    results = []
    for fresh in (True, False):
        kept_rows.clear()
        estimate_cache.clear()
        run = []
        for context in (1024, 1025, 1026):
            if fresh:
                kept_rows.clear()
            result = engine.estimate(hardware, model, engine.Scenario(phase="decode", context_length=context),
                                     method="realistic")
            run.append((result.kernels, result.phases, result.tpot_s, result.energy))
        results.append(run)
    for (kernels, phases, tpot, energy), (kernels_kept, phases_kept, tpot_kept, energy_kept) in zip(*results):
        assert kernels.equals(kernels_kept) and phases.equals(phases_kept)
        assert tpot == tpot_kept and energy == energy_kept


def test_only_decode_steps_are_kept():
    model, hardware = engine.load_model("meta-llama/Llama-3.1-8B"), engine.load_hardware("H100-SXM")
    kept_rows.clear()
    timed(model, hardware, engine.Scenario(phase="prefill", input_length=64))
    timed(model, hardware, engine.Scenario(phase="request", input_length=64, output_length=8))
    assert len(kept_rows._KEPT) == 0
    timed(model, hardware, engine.Scenario(phase="decode", context_length=64))
    assert len(kept_rows._KEPT) == 1


def test_another_device_or_constants_object_is_its_own_entry():
    model = engine.load_model("meta-llama/Llama-3.1-8B")
    scenario = engine.Scenario(phase="decode", context_length=300)
    h100, a100 = engine.load_hardware("H100-SXM"), engine.load_hardware("A100-80GB-SXM")
    warm = dataclasses.replace(DEFAULT_CONSTANTS, gemm_condition="warm")     # another GEMV latency
    kept_rows.clear()
    timed(model, h100, scenario)
    assert_same_columns(timed(model, a100, scenario), in_full(model, a100, scenario))
    kept_rows.clear()
    timed(model, h100, scenario)
    assert_same_columns(timed(model, h100, scenario, constants=warm),
                        in_full(model, h100, scenario, constants=warm))
    assert not np.array_equal(in_full(model, h100, scenario, constants=warm)["time_s"],
                              in_full(model, h100, scenario)["time_s"])
    kept_rows.clear()
    timed(model, h100, scenario)
    timed(model, a100, scenario)
    timed(model, h100, scenario, constants=warm)
    assert len(kept_rows._KEPT) == 3


def test_the_key_reads_every_column_at_the_rows_and_no_other_row():
    """A changed value of any column at an unfused row (a number, a 64-bit integer, a string) gives another key;
    a changed value on a fused attention row (what the context changes) does not."""
    model, hardware = engine.load_model("meta-llama/Llama-3.1-8B"), engine.load_hardware("H100-SXM")
    scenario = engine.Scenario(phase="decode", context_length=300)
    seen = []
    original = kept_rows._key
    try:
        kept_rows._key = lambda *arguments: seen.append(arguments) or original(*arguments)
        timed(model, hardware, scenario)
    finally:
        kept_rows._key = original
    table, rows, chain, memo = seen[0]
    assert memo is not None
    key = original(table, rows, chain)
    unfused, fused = np.flatnonzero(rows), np.flatnonzero(~rows)
    assert len(unfused) and len(fused)
    for column in ("n", "weight_bytes", "group", "dtype", "time_s"):
        for row, changes in ((unfused[-1], True), (fused[0], False)):
            values = table.out[column]
            before = values[row]
            values[row] = "fp8" if values.dtype == object else before + 1
            try:
                assert (original(table, rows, chain) != key) == changes, (column, row)
            finally:
                values[row] = before
    assert original(table, rows, chain) == key
    # with the structure memo: numbers still by value, the memo's string columns by the memo's identity
    with_memo = original(table, rows, chain, memo)
    for column in ("n", "weight_bytes", "group", "time_s"):
        for row, changes in ((unfused[-1], True), (fused[0], False)):
            values = table.out[column]
            before = values[row]
            values[row] = before + 1
            try:
                assert (original(table, rows, chain, memo) != with_memo) == changes, (column, row)
            finally:
                values[row] = before
    assert original(table, rows, chain, memo) == with_memo
    assert original(table, rows, chain, {**memo}) != with_memo        # another memo object: another key


def test_a_changed_string_is_another_structure_memo_so_another_key():
    """What the memo stands for in the key: a string changed at an unfused row gives another memo (structure_memo
    keys every row's strings), so the decode step is timed afresh, bit for bit as in full."""
    model, hardware = engine.load_model("meta-llama/Llama-3.1-8B"), engine.load_hardware("H100-SXM")
    scenario = engine.Scenario(phase="decode", context_length=300)
    table = decompose_columns(model, scenario)
    kept_rows.clear()
    estimate_realistic(dict(table), hardware, scenario)
    changed = dict(table)
    changed["dtype"] = np.asarray(table["dtype"]).copy()
    changed["dtype"][np.flatnonzero(np.asarray(table["op"]) == "gemm")[-1]] = "fp8"
    kept = estimate_realistic(dict(changed), hardware, scenario)
    assert len(kept_rows._KEPT) == 2
    kept_rows.clear()
    assert_same_columns(kept, estimate_realistic(dict(changed), hardware, scenario))
