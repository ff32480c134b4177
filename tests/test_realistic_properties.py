"""Properties of the realistic and hierarchical methods that must hold for any input (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
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


WORKBOOK_DEVICES = ("NVL-AX", "JGS", "A100-40GB-PCIe", "A100-80GB-SXM", "H100-SXM", "H200-SXM", "B200", "GB200", "B300",
                    "GB300", "MI300X", "T4", "L4", "L40S", "RTX-PRO-6000-Server", "Arc-Pro-B60", "TPU-v5e",
                    "V100-SXM2-32GB")
# long prefills: the fused kernel's fixed costs then no longer hide its fp8 rate (below ~16k tokens they do)
FP8_CACHE = scenario_strategy(max_batch=4, max_input=65_536, max_output=8, max_chunk=4096, kv_dtypes=("fp8",))
LONG_FP8_PREFILL = engine.Scenario(phase="prefill", batch=1, input_length=65_536, kv_dtype="fp8")


def test_the_workbook_devices_are_all_checked(devices):
    assert sorted(WORKBOOK_DEVICES) == sorted(devices)


@pytest.mark.parametrize("name", WORKBOOK_DEVICES)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=FP8_CACHE, method=METHODS)
@example(scenario=LONG_FP8_PREFILL, method="realistic")
def test_an_fp8_cache_never_beats_the_roofline(devices, llama8b, name, scenario, method):
    """An 8-bit KV cache's prefill attention runs at the fp8 matrix rate in the realistic method (where the device
    has one): the roofline's ideal times it at that rate too, so no row and no total is faster than the ideal."""
    hw = devices[name]
    result = engine.estimate(hw, llama8b, scenario, method=method)
    roofline = engine.estimate(hw, llama8b, scenario)
    assert result.total_time_s >= roofline.total_time_s * (1 - 1e-12)
    assert (result.kernels["time_s"].to_numpy() >= roofline.kernels["time_s"].to_numpy() * (1 - 1e-12)).all()


@pytest.mark.parametrize("name", ["H100-SXM", "B200", "MI300X", "L4", "A100-80GB-SXM"])
def test_an_fp8_cache_prefill_attention_is_timed_at_the_fp8_rate(devices, llama8b, name):
    """Oracle from the workbook: a compute-bound prefill's attention matrix rows over an fp8 cache take
    matrix_flops / (2 x cores x clock x fp8 MACs per cycle per core) where the device has an fp8 rate, else the
    bf16 rate's time; the same rows over a bf16 cache stay at the bf16 rate."""
    hw = devices[name]
    per_cycle = hw.matrix_macs_per_cycle_per_core_fp8 or hw.matrix_macs_per_cycle_per_core_bf16
    for kv_dtype, rate in (("fp8", per_cycle), ("bf16", hw.matrix_macs_per_cycle_per_core_bf16)):
        scenario = engine.Scenario(phase="prefill", batch=1, input_length=8192, kv_dtype=kv_dtype)
        kernels = engine.estimate(hw, llama8b, scenario).kernels
        rows = kernels[kernels["op"] == "attention"]
        assert len(rows) >= 2
        expected = rows["matrix_flops"] / (2.0 * hw.num_cores * hw.clock_hz * rate)
        assert np.allclose(rows["compute_time_s"], expected, rtol=1e-12)
        assert (rows["matrix_rate_dtype"] == ("fp8" if kv_dtype == "fp8" and
                                              hw.matrix_macs_per_cycle_per_core_fp8 else "bf16")).all()
