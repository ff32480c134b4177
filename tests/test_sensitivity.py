"""Sensitivity (engine/explore/hardware_sensitivity.py): each hardware field alone at -X% and +X%.

Oracles: hand arithmetic for a memory-bound decode step (time = bytes / bandwidth, so +20% bandwidth gives
1/1.2 of the time), and engine.estimate (the point-by-point path) on devices perturbed here by hand.
"""

from __future__ import annotations

import math
import time

import pytest

import engine
import engine.explore.hardware_sensitivity as sensitivity_module
from engine.explore.hardware_sensitivity import COLUMNS, sensitivity

H100 = engine.load_hardware("H100-SXM")
LLAMA8 = engine.load_model("meta-llama/Llama-3.1-8B")
LLAMA70 = engine.load_model("meta-llama/Llama-3.1-70B")
# batch 1, 16 tokens of context: every kernel but the attention scores and softmax is memory bound, and those
# take 3e-7 of the step (their K/V reads are timed in KVCache_Read)
MEMORY_BOUND = engine.Scenario(phase="decode", batch=1, input_length=1024, context_length=16)
COMPUTE_BOUND = engine.Scenario(phase="prefill", batch=16, input_length=4096)
DECODE70 = engine.Scenario(phase="decode", batch=64, input_length=2048, tp=4)


def row(table, field, metric):
    rows = table[(table["field"] == field) & (table["metric"] == metric)]
    assert len(rows) == 1, (field, metric, table[["field", "metric"]])
    return rows.iloc[0]


def scaled_compute(hardware, factor):
    """Every matrix rate and the vector rate times `factor`, by hand."""
    fields = {f"matrix_macs_per_cycle_per_core_{d}": getattr(hardware, f"matrix_macs_per_cycle_per_core_{d}") * factor
              for d in ("tf32", "bf16", "fp16", "fp8", "int8")}
    return hardware.with_changes(vector_flops_per_cycle_per_core=hardware.vector_flops_per_cycle_per_core * factor,
                                 **fields)


def test_memory_bound_decode_swings_with_bandwidth_only():
    table = sensitivity(LLAMA8, MEMORY_BOUND, H100, change=0.2)
    assert list(table.columns) == list(COLUMNS)
    bandwidth = row(table, "memory_bandwidth", "tpot_s")
    assert bandwidth["low_value"] == pytest.approx(2680) and bandwidth["high_value"] == pytest.approx(4020)
    assert bandwidth["high_change"] == pytest.approx(1 / 1.2 - 1, rel=1e-6)
    assert bandwidth["low_change"] == pytest.approx(1 / 0.8 - 1, rel=1e-6)
    assert bandwidth["swing"] == pytest.approx(1 / 0.8 - 1 / 1.2, rel=1e-6)
    throughput = row(table, "memory_bandwidth", "tokens_per_s")
    assert throughput["high_change"] == pytest.approx(0.2, rel=1e-6)             # tokens/s ~ bandwidth
    for field in ("compute_scale", "clock", "num_cores"):
        assert row(table, field, "tpot_s")["swing"] < 1e-6, field
    assert table[table["metric"] == "tpot_s"].iloc[0]["field"] == "memory_bandwidth"   # the top bar


def test_metrics_the_phase_does_not_define_are_dropped():
    table = sensitivity(LLAMA8, MEMORY_BOUND, H100)
    assert set(table["metric"]) == {"tpot_s", "tokens_per_s"}                     # no TTFT for a decode step
    assert list(dict.fromkeys(table["metric"])) == ["tpot_s", "tokens_per_s"]    # in the order asked
    for metric, part in table.groupby("metric"):
        assert part["swing"].is_monotonic_decreasing, metric


def test_compute_bound_prefill_is_led_by_compute():
    table = sensitivity(LLAMA8, COMPUTE_BOUND, H100, metrics=("ttft_s",))
    assert set(table["metric"]) == {"ttft_s"}
    compute = row(table, "compute_scale", "ttft_s")
    assert table.iloc[0]["swing"] == pytest.approx(compute["swing"], rel=1e-9)     # clock and cores tie with it
    assert compute["swing"] > 5 * row(table, "memory_bandwidth", "ttft_s")["swing"]
    assert compute["label"] == "compute (matrix + vector rates)" and compute["unit"] == "x"


def test_rows_equal_estimates_on_perturbed_devices():
    table = sensitivity(LLAMA70, DECODE70, H100, metrics=("tpot_s",))
    cases = [
        ("memory_bandwidth", "low", H100.with_changes(memory_bandwidth_bytes_per_s=0.8 * 3350e9)),
        ("compute_scale", "high", scaled_compute(H100, 1.2)),
        ("num_cores", "low", H100.with_changes(num_cores=106)),                   # round(132 x 0.8)
        ("num_cores", "high", H100.with_changes(num_cores=158)),                  # round(132 x 1.2)
        ("link_bandwidth", "high", H100.with_changes(link_bandwidth_bytes_per_s=30e9)),
    ]
    for field, side, device in cases:
        expected = engine.estimate(device, LLAMA70, DECODE70).tpot_s
        assert row(table, field, "tpot_s")[side] == pytest.approx(expected, rel=1e-9), (field, side)
    assert row(table, "memory_bandwidth", "tpot_s")["base"] == pytest.approx(
        engine.estimate(H100, LLAMA70, DECODE70).tpot_s, rel=1e-9)


def test_default_fields_follow_method_and_layout():
    single = sensitivity(LLAMA8, MEMORY_BOUND, H100)
    assert set(single["field"]) == {"memory_bandwidth", "compute_scale", "clock", "num_cores"}
    parallel = set(sensitivity(LLAMA70, DECODE70, H100)["field"])
    assert {"link_bandwidth", "num_links"} <= parallel
    assert "link_latency" not in parallel                        # H100-SXM leaves it blank: skipped
    assert "inter_node_bandwidth" not in parallel                # tp = 4 stays inside an 8-GPU node
    hierarchical = set(sensitivity(LLAMA8, MEMORY_BOUND, H100, method="hierarchical")["field"])
    assert {"llc_capacity", "llc_bandwidth", "sram_per_core"} <= hierarchical


def test_named_fields_are_kept_even_when_they_cannot_matter():
    table = sensitivity(LLAMA70, DECODE70, H100, fields=["llc_capacity", "link_latency", "memory_bandwidth"])
    llc = row(table, "llc_capacity", "tpot_s")
    # the roofline has no caches: only the collectives' fitted latency scale reads the L2 (docs/parallelism.md)
    assert 0 < llc["swing"] < 0.02 * llc["base"] and llc["error"] == ""
    blank = row(table, "link_latency", "tpot_s")
    assert "blank" in blank["error"] and math.isnan(blank["swing"])


def test_memory_capacity_appears_when_the_fit_changes():
    """Llama-3.1-70B at tp = 2, batch 16 needs ~84 GB per device: 80 GB misses, 96 GB (+20%) fits."""
    scenario = engine.Scenario(phase="decode", batch=16, input_length=2048, tp=2)
    assert not engine.estimate(H100, LLAMA70, scenario).memory.fits
    assert engine.estimate(H100.with_changes(memory_capacity_bytes=96e9), LLAMA70, scenario).memory.fits
    capacity = row(sensitivity(LLAMA70, scenario, H100), "memory_capacity", "tpot_s")
    assert not capacity["base_fits"] and capacity["high_fits"] and not capacity["low_fits"]
    assert capacity["swing"] == 0
    assert "memory_capacity" not in set(sensitivity(LLAMA70, DECODE70, H100)["field"])   # fits either way


def test_whole_numbers_never_equal_the_base():
    """TPU-v5e has one core: no whole number below it (reported), 2 above it."""
    tpu = engine.load_hardware("TPU-v5e")
    cores = row(sensitivity(LLAMA8, MEMORY_BOUND, tpu, fields=["num_cores"], change=0.1), "num_cores", "tpot_s")
    assert cores["low_value"] is None or math.isnan(cores["low_value"])
    assert cores["high_value"] == 2 and "below" in cores["error"]
    small = sensitivity(LLAMA8, MEMORY_BOUND, H100.with_changes(num_cores=4), fields=["num_cores"], change=0.05)
    assert small.iloc[0]["low_value"] == 3 and small.iloc[0]["high_value"] == 5


def test_one_sweep_for_all_points(monkeypatch):
    calls = []
    original = sensitivity_module.sweep_points

    def counting(*args, **kwargs):
        calls.append(len(args[2]))
        return original(*args, **kwargs)

    monkeypatch.setattr(sensitivity_module, "sweep_points", counting)
    table = sensitivity(LLAMA70, DECODE70, H100)
    fields = table["field"].nunique() + 1        # + memory_capacity: evaluated, dropped (the fit does not change)
    assert calls == [1 + 2 * fields]


@pytest.mark.parametrize("change", [0, 1, -0.2, 1.5, float("nan"), "0.2", True])
def test_bad_change_raises(change):
    with pytest.raises(ValueError, match="change"):
        sensitivity(LLAMA8, MEMORY_BOUND, H100, change=change)


def test_bad_fields_and_metrics_raise():
    with pytest.raises(ValueError, match="fields"):
        sensitivity(LLAMA8, MEMORY_BOUND, H100, fields=["bandwidth"])
    with pytest.raises(ValueError, match="metrics"):
        sensitivity(LLAMA8, MEMORY_BOUND, H100, metrics=("latency",))
    with pytest.raises(ValueError, match="metrics"):
        sensitivity(LLAMA8, MEMORY_BOUND, H100, metrics=("ttft_s",))                # undefined for decode


def test_fast_on_llama70_decode():
    sensitivity(LLAMA70, DECODE70, H100)
    started = time.perf_counter()
    sensitivity(LLAMA70, DECODE70, H100)
    assert time.perf_counter() - started < 1.0
