"""Inverse design (engine/explore/inverse.py): the least resource that meets a target.

Oracles are independent of the search: every answer is re-estimated with engine.estimate (the
point-by-point path, not the sweep) on a device built here by hand, at the answer (must meet the
target) and just below it (must miss it); one answer is checked against hand arithmetic
(bandwidth = bytes per step / target time for a memory-bound decode step).
"""

from __future__ import annotations

import time

import pytest

import engine
from engine.explore.inverse import INVERSE_FIELDS, InverseResult, least_value

H100 = engine.load_hardware("H100-SXM")
LLAMA70 = engine.load_model("meta-llama/Llama-3.1-70B")
LLAMA8 = engine.load_model("meta-llama/Llama-3.1-8B")
DECODE70 = engine.Scenario(phase="decode", batch=64, input_length=2048, tp=4)       # fits on 4 x 80 GB


def with_bandwidth(gb_per_s: float):
    return H100.with_changes(memory_bandwidth_bytes_per_s=gb_per_s * 1e9)


def with_matrix_tflops(tflops: float):
    """Every matrix format scaled by one factor so that bf16 peaks at `tflops` (by hand, not via the engine)."""
    bf16 = 2 * H100.num_cores * H100.clock_hz * H100.matrix_macs_per_cycle_per_core_bf16
    factor = tflops * 1e12 / bf16
    fields = (f"matrix_macs_per_cycle_per_core_{d}" for d in ("tf32", "bf16", "fp16", "fp8", "int8"))
    return H100.with_changes(**{f: getattr(H100, f) * factor for f in fields})


def tpot(hardware, scenario=DECODE70, model=LLAMA70, **fields):
    return engine.estimate(hardware, model, scenario, **fields).tpot_s


def test_least_bandwidth_for_tpot_is_verified_by_estimate():
    """TPOT <= 20 ms for Llama-3.1-70B at batch 64 (tp = 4): meets at the answer, misses just below."""
    result = least_value(LLAMA70, DECODE70, H100, "memory_bandwidth", "tpot_s", 0.020)
    assert isinstance(result, InverseResult) and result.reachable and result.fits
    assert result.comparison == "<=" and result.unit == "GB/s" and result.base_value == 3350
    assert tpot(with_bandwidth(result.value)) <= 0.020 < tpot(with_bandwidth(result.value_below))
    assert result.value_below >= result.value * (1 - 1e-4)                   # the bracket is within rtol
    assert 1500 < result.value < 3350                                          # H100 already beats 20 ms
    assert result.metric_at_value == pytest.approx(tpot(with_bandwidth(result.value)), rel=1e-9)
    assert result.base_metric == pytest.approx(tpot(H100), rel=1e-9)
    assert result.hardware_at_value.memory_bandwidth_bytes_per_s == pytest.approx(result.value * 1e9, rel=1e-12)
    assert tpot(result.hardware_at_value) <= 0.020
    assert result.scenario_at_value is None
    assert "memory bandwidth" in result.message and "GB/s" in result.message


def test_least_bandwidth_for_throughput():
    """A throughput target is met at or above it: tokens/s >= 4,500."""
    result = least_value(LLAMA70, DECODE70, H100, "memory_bandwidth", "tokens_per_s", 4500)
    assert result.comparison == ">=" and result.reachable
    fast = engine.estimate(with_bandwidth(result.value), LLAMA70, DECODE70).tokens_per_s
    slow = engine.estimate(with_bandwidth(result.value_below), LLAMA70, DECODE70).tokens_per_s
    assert fast >= 4500 > slow
    assert result.value > 3350                                                  # H100 gives ~4,055 tokens/s


def test_least_matrix_tflops_for_compute_bound_prefill():
    """A compute-bound prefill (8 x 2048 tokens of Llama-3.1-8B): TTFT <= 150 ms needs more matrix peak."""
    scenario = engine.Scenario(phase="prefill", batch=8, input_length=2048)
    base = engine.estimate(H100, LLAMA8, scenario)
    assert base.phases["compute_bound_time_s"].sum() > 0.8 * base.ttft_s       # compute bound: the question makes sense
    result = least_value(LLAMA8, scenario, H100, "matrix_tflops", "ttft_s", 0.150)
    assert result.reachable and result.unit == "TFLOP/s"
    meets = engine.estimate(with_matrix_tflops(result.value), LLAMA8, scenario).ttft_s
    misses = engine.estimate(with_matrix_tflops(result.value_below), LLAMA8, scenario).ttft_s
    assert meets <= 0.150 < misses
    assert result.value > 989.4                                                  # more than the H100's bf16 peak
    assert result.hardware_at_value.matrix_flops_per_s("bf16") == pytest.approx(result.value * 1e12, rel=1e-9)


def test_least_cores_is_a_whole_number():
    scenario = engine.Scenario(phase="prefill", batch=8, input_length=2048)
    result = least_value(LLAMA8, scenario, H100, "num_cores", "ttft_s", 0.200)
    assert result.reachable and isinstance(result.value, int) and result.value_below == result.value - 1
    assert engine.estimate(H100.with_changes(num_cores=result.value), LLAMA8, scenario).ttft_s <= 0.200
    assert engine.estimate(H100.with_changes(num_cores=result.value - 1), LLAMA8, scenario).ttft_s > 0.200


def test_least_tensor_parallel_ways():
    """TPOT <= 15 ms (tp = 8: 13.3 ms with NCCL-calibrated collectives) for Llama-3.1-70B at batch 64: tp = 8; tp = 4 misses and 5..7 cannot split the model."""
    result = least_value(LLAMA70, DECODE70, H100, "tp", "tpot_s", 0.015)
    assert result.reachable and result.value == 8 and result.value_below == 4
    assert tpot(H100, tp=8) <= 0.015 < tpot(H100, tp=4)
    for tp in (5, 6, 7):
        with pytest.raises(ValueError):
            engine.estimate(H100, LLAMA70, DECODE70, tp=tp)
    assert result.scenario_at_value.tp == 8 and result.hardware_at_value is None
    assert result.fits is True
    devices = least_value(LLAMA70, DECODE70, H100, "devices", "tpot_s", 0.015)
    assert devices.value == 8 and devices.field == "devices"


def test_tp_needs_interconnect():
    """A device without links (NVL-AX) runs only tp = 1: a target that tp = 1 misses is out of reach."""
    nvl = engine.load_hardware("NVL-AX")
    scenario = engine.Scenario(phase="decode", batch=1, input_length=1024)
    slow = engine.estimate(nvl, LLAMA8, scenario).tpot_s
    result = least_value(LLAMA8, scenario, nvl, "tp", "tpot_s", slow / 2)
    assert not result.reachable and result.value is None
    assert result.tried["value"].tolist() == [1]


def test_unreachable_target_says_why():
    """TPOT <= 3 ms at tp = 4 and batch 64: even the largest bandwidth a device may have (1e15 B/s) leaves the
    compute and the collectives above 3 ms."""
    result = least_value(LLAMA70, DECODE70, H100, "memory_bandwidth", "tpot_s", 0.003)
    assert not result.reachable and result.value is None and result.metric_at_value is None
    assert result.hardware_at_value is None and result.fits is None
    assert tpot(H100.with_changes(memory_bandwidth_bytes_per_s=1e15)) > 0.003
    assert result.value_below == pytest.approx(1e6) and result.metric_below > 0.003
    assert "out of reach" in result.message and "3 ms" in result.message and "bound" in result.message


def test_hand_arithmetic_bandwidth_is_bytes_over_time():
    """A batch-1 decode step with 16 tokens of context is memory bound on the roofline (the compute-bound
    attention-score and softmax kernels take 3e-7 of it), so TPOT = bytes / bandwidth and the least bandwidth
    for TPOT <= T is bytes / T."""
    scenario = engine.Scenario(phase="decode", batch=1, input_length=1024, context_length=16)
    step_bytes = float(engine.estimate(H100, LLAMA8, scenario).phases["bytes"].sum())
    target = 0.010
    result = least_value(LLAMA8, scenario, H100, "memory_bandwidth", "tpot_s", target, rtol=1e-5)
    assert result.value == pytest.approx(step_bytes / target / 1e9, rel=2e-5)
    assert result.value >= step_bytes / target / 1e9 * (1 - 1e-6)


def test_target_met_at_every_value():
    """LLC capacity does not enter the roofline: a target the device meets is met at the lowest value tried."""
    result = least_value(LLAMA70, DECODE70, H100, "llc_capacity", "tpot_s", 0.020)
    assert result.reachable and result.value_below is None
    assert "does not limit" in result.message


@pytest.mark.parametrize("kwargs, message", [
    (dict(field="bandwidth"), "field"),
    (dict(metric="latency"), "metric"),
    (dict(target=0), "target"),
    (dict(target=-1.0), "target"),
    (dict(metric="ttft_s"), "metric 'ttft_s' is not defined"),
    (dict(rtol=0), "rtol"),
    (dict(low=10, high=5), "low"),
])
def test_bad_arguments_name_the_argument(kwargs, message):
    arguments = dict(field="memory_bandwidth", metric="tpot_s", target=0.02) | kwargs
    with pytest.raises(ValueError, match=message):
        least_value(LLAMA70, DECODE70, H100, arguments.pop("field"), arguments.pop("metric"),
                    arguments.pop("target"), **arguments)


def test_every_field_runs_fast():
    """Each field answers (or says why not) on Llama-3.1-70B decode in well under a second."""
    for field in INVERSE_FIELDS:
        started = time.perf_counter()
        result = least_value(LLAMA70, DECODE70, H100, field, "tpot_s", 0.015)
        assert time.perf_counter() - started < 2.0, field
        assert result.message and result.evaluations > 0
        if result.reachable:
            assert result.comparison == "<=" and result.metric_at_value <= 0.015


def test_require_fit_skips_layouts_that_do_not_fit():
    """TPOT <= 35 ms: tp = 2 is fast enough but 70B weights and cache overflow 2 x 80 GB; tp = 4 fits."""
    scenario = engine.Scenario(phase="decode", batch=64, input_length=2048, tp=1)
    two = engine.estimate(H100, LLAMA70, scenario, tp=2)
    assert two.tpot_s <= 0.035 and not two.memory.fits
    assert engine.estimate(H100, LLAMA70, scenario, tp=1).tpot_s > 0.035
    loose = least_value(LLAMA70, scenario, H100, "tp", "tpot_s", 0.035)
    strict = least_value(LLAMA70, scenario, H100, "tp", "tpot_s", 0.035, require_fit=True)
    assert (loose.value, loose.fits) == (2, False) and "does not fit" in loose.message
    assert (strict.value, strict.fits, strict.value_below) == (4, True, 2)
    assert engine.estimate(H100, LLAMA70, scenario, tp=4).memory.fits


def test_tp_search_from_a_layout_the_device_cannot_run():
    """NVL-AX has no links, so the scenario's tp = 2 cannot run there; the search still answers tp = 1."""
    nvl = engine.load_hardware("NVL-AX")
    scenario = engine.Scenario(phase="decode", batch=1, input_length=1024, tp=2)
    with pytest.raises(ValueError):
        engine.estimate(nvl, LLAMA8, scenario)
    result = least_value(LLAMA8, scenario, nvl, "tp", "tpot_s", 1.0)
    assert result.value == 1 and result.metric_at_value == pytest.approx(
        engine.estimate(nvl, LLAMA8, scenario, tp=1).tpot_s, rel=1e-9)
