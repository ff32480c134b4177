"""The decomposition cache of the fast path (engine/estimators/__init__.py, issue 15): equal (model, scenario)
pairs share one read-only kernel table, and what a caller does with its table never reaches the next caller."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.decomposition.transformer import decompose_columns
from engine.estimators import _decomposition, cached_decomposition


@pytest.fixture(scope="module")
def model():
    return engine.load_model("meta-llama/Llama-3.1-8B")


def test_equal_scenarios_share_one_read_only_table(model):
    _decomposition.cache_clear()
    first = cached_decomposition(model, engine.Scenario(phase="decode", context_length=100))
    second = cached_decomposition(model, engine.Scenario(phase="decode", context_length=100))
    assert first is not second and first["macs"] is second["macs"]
    assert _decomposition.cache_info().hits == 1
    with pytest.raises(ValueError):
        first["macs"][0] = 0.0


def test_cached_table_equals_a_fresh_decomposition(model):
    scenario = engine.Scenario(phase="request", input_length=64, output_length=8, tp=2)
    cached, fresh = cached_decomposition(model, scenario), decompose_columns(model, scenario)
    assert list(cached) == list(fresh)
    for key in fresh:
        assert np.array_equal(cached[key], fresh[key], equal_nan=fresh[key].dtype != object), key


def test_a_caller_adding_columns_does_not_change_the_cache(model):
    scenario = engine.Scenario(phase="prefill", input_length=32)
    table = cached_decomposition(model, scenario)
    table["time_s"] = np.zeros(len(table["macs"]))
    assert "time_s" not in cached_decomposition(model, scenario)


def test_different_scenarios_get_different_tables(model):
    short = cached_decomposition(model, engine.Scenario(phase="decode", context_length=100))
    long = cached_decomposition(model, engine.Scenario(phase="decode", context_length=5000))
    assert not np.array_equal(short["kv_bytes"], long["kv_bytes"])


def test_repeated_estimates_are_identical(model):
    hardware = engine.load_hardware("H100-SXM")
    scenario = engine.Scenario(phase="request", input_length=128, output_length=16)
    first = engine.estimate(hardware, model, scenario, method="realistic")
    second = engine.estimate(hardware, model, scenario, method="realistic")
    assert first.kernels.equals(second.kernels) and first.phases.equals(second.phases)


def test_timed_tables_are_kept_per_method_and_device(model):
    from engine.results import estimate_cache
    estimate_cache.clear()
    scenario = engine.Scenario(phase="decode", context_length=300)
    h100, a100 = engine.load_hardware("H100-SXM"), engine.load_hardware("A100-80GB-SXM")
    first = engine.estimate(h100, model, scenario, method="realistic")
    engine.estimate(h100, model, scenario, method="realistic")
    assert estimate_cache._kept.cache_info().hits == 1
    other_device = engine.estimate(a100, model, scenario, method="realistic")
    other_method = engine.estimate(h100, model, scenario, method="roofline")
    assert other_device.total_time_s != first.total_time_s != other_method.total_time_s
    assert estimate_cache._kept.cache_info().hits == 1 and _decomposition.cache_info().hits == 2
    first.kernels.loc[0, "time_s"] = 1.0          # a user's edit of one result reaches no other
    assert engine.estimate(h100, model, scenario, method="realistic").kernels["time_s"].iloc[0] != 1.0


def test_an_unhashable_model_is_estimated_without_the_cache(model):
    unhashable = model.model_copy(update={"name": ["not", "hashable"]})   # a list slipped past validation
    with pytest.raises(TypeError):
        hash(unhashable)
    hardware = engine.load_hardware("H100-SXM")
    scenario = engine.Scenario(phase="decode", context_length=64)
    result = engine.estimate(hardware, unhashable, scenario)
    assert result.total_time_s == engine.estimate(hardware, model, scenario).total_time_s


def test_long_requests_are_not_kept(model):
    from engine.estimators import MAX_KEPT_STEPS
    from engine.results import estimate_cache
    estimate_cache.clear()
    hardware = engine.load_hardware("H100-SXM")
    long = engine.Scenario(phase="request", input_length=16, output_length=MAX_KEPT_STEPS + 1)
    first, second = engine.estimate(hardware, model, long), engine.estimate(hardware, model, long)
    assert estimate_cache._kept.cache_info().currsize == 0 and _decomposition.cache_info().currsize == 0
    assert first.total_time_s == second.total_time_s
    engine.estimate(hardware, model, long.model_copy(update={"output_length": MAX_KEPT_STEPS}))
    assert estimate_cache._kept.cache_info().currsize == 1
