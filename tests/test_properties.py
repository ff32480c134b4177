"""Properties of the roofline estimate that must hold for any scenario (hypothesis)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from tests.strategies import scenarios as scenario_strategy

scenarios = scenario_strategy(max_batch=64, max_input=4096, max_output=64, max_chunk=1024, kv_dtypes=("bf16", "fp8"))
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(scenario=scenarios, factor=st.floats(1.01, 4.0))
def test_more_bandwidth_or_compute_is_never_slower(devices, llama8b, scenario, factor):
    hw = devices["H100-SXM"]
    base = engine.estimate(hw, llama8b, scenario).total_time_s
    faster_memory = hw.with_changes(memory_bandwidth_bytes_per_s=hw.memory_bandwidth_bytes_per_s * factor)
    more_cores = hw.with_changes(num_cores=int(hw.num_cores * factor) + 1)
    assert engine.estimate(faster_memory, llama8b, scenario).total_time_s <= base * (1 + 1e-12)
    assert engine.estimate(more_cores, llama8b, scenario).total_time_s <= base * (1 + 1e-12)


@SETTINGS
@given(scenario=scenarios, extra=st.integers(1, 64))
def test_more_work_is_never_faster(devices, llama8b, scenario, extra):
    hw = devices["A100-80GB-SXM"]
    base = engine.estimate(hw, llama8b, scenario)
    bigger_batch = engine.estimate(hw, llama8b, scenario.model_copy(update={"batch": scenario.batch + extra}))
    assert bigger_batch.total_time_s >= base.total_time_s * (1 - 1e-12)
    if scenario.phase != "chunked":   # a chunk holds chunk_size tokens whatever the prompt; only its mix moves
        longer = scenario.model_copy(update={"input_length": scenario.input_length + extra})
        assert engine.estimate(hw, llama8b, longer).total_time_s >= base.total_time_s * (1 - 1e-12)


@SETTINGS
@given(scenario=scenarios)
def test_time_is_at_least_each_resource_alone(devices, llama8b, scenario):
    """No kernel beats its own compute or memory floor; phase time = sum of count x time_s."""
    hw = devices["MI300X"]
    result = engine.estimate(hw, llama8b, scenario)
    k = result.kernels
    assert (k["time_s"] >= k["bytes"] / hw.memory_bandwidth_bytes_per_s * (1 - 1e-12)).all()
    assert (k["time_s"] >= k["vector_flops"] / hw.vector_flops_per_s * (1 - 1e-12)).all()
    for phase, total in result.phases["time_s"].items():
        rows = k[k["phase"] == phase]
        assert abs((rows["count"] * rows["time_s"]).sum() - total) <= 1e-9 * total
