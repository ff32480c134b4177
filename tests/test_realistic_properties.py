"""Properties of the realistic and hierarchical methods that must hold for any input (hypothesis)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from tests.strategies import scenarios as scenario_strategy

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
DEVICES = st.sampled_from(["A100-80GB-SXM", "H100-SXM", "MI300X", "T4", "NVL-AX"])
DIM = st.integers(1, 20_000)
METHODS = st.sampled_from(["realistic", "realistic-graph", "hierarchical"])
scenarios = scenario_strategy(max_batch=32, max_input=3000, max_output=24, max_chunk=512)


@SETTINGS
@given(name=DEVICES, m=DIM, n=DIM, k=DIM, factor=st.floats(1.01, 4.0), method=METHODS)
def test_gemm_more_bandwidth_or_cores_never_slower(devices, name, m, n, k, factor, method):
    hw = devices[name]
    base = engine.estimate_gemm(hw, m, n, k, method=method)["time_s"]
    faster = hw.with_changes(memory_bandwidth_bytes_per_s=hw.memory_bandwidth_bytes_per_s * factor)
    wider = hw.with_changes(num_cores=int(hw.num_cores * factor) + 1)
    assert engine.estimate_gemm(faster, m, n, k, method=method)["time_s"] <= base * (1 + 1e-12)
    assert engine.estimate_gemm(wider, m, n, k, method=method)["time_s"] <= base * (1 + 1e-12)


@SETTINGS
@given(name=DEVICES, m=DIM, n=DIM, k=DIM, grow=st.sampled_from(["m", "n", "k"]), extra=st.integers(1, 300),
       method=METHODS)
def test_larger_gemm_never_faster_and_never_beats_the_roofline(devices, name, m, n, k, grow, extra, method):
    hw = devices[name]
    base = engine.estimate_gemm(hw, m, n, k, method=method)
    sizes = {"m": m, "n": n, "k": k}
    sizes[grow] += extra
    larger = engine.estimate_gemm(hw, sizes["m"], sizes["n"], sizes["k"], method=method)
    assert larger["time_s"] >= base["time_s"] * (1 - 1e-12)
    roofline = engine.estimate_gemm(hw, m, n, k)["time_s"]
    assert base["time_s"] >= roofline * (1 - 1e-12)


@SETTINGS
@given(scenario=scenarios, name=DEVICES, method=METHODS, factor=st.floats(1.01, 3.0))
def test_whole_model_never_beats_the_roofline_and_more_hardware_never_hurts(devices, llama8b, scenario, name,
                                                                             method, factor):
    hw = devices[name]
    result = engine.estimate(hw, llama8b, scenario, method=method)
    roofline = engine.estimate(hw, llama8b, scenario)
    assert result.total_time_s >= roofline.total_time_s * (1 - 1e-12)
    assert (result.kernels["time_s"].to_numpy() >= roofline.kernels["time_s"].to_numpy() * (1 - 1e-12)).all()
    faster = hw.with_changes(memory_bandwidth_bytes_per_s=hw.memory_bandwidth_bytes_per_s * factor)
    wider = hw.with_changes(num_cores=int(hw.num_cores * factor) + 1)
    assert engine.estimate(faster, llama8b, scenario, method=method).total_time_s <= result.total_time_s * (1 + 1e-12)
    assert engine.estimate(wider, llama8b, scenario, method=method).total_time_s <= result.total_time_s * (1 + 1e-12)
