"""Sweeps (engine/explore/grid.py): every point equals engine.estimate run on that point alone.

The oracle is the point-by-point estimate (its own decomposition, aggregation, energy and memory code
paths), compared metric by metric; the sweep's stacked tables and broadcast timing are a different code
path that must agree to 1e-9.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import engine
from engine.explore.grid import GridError, METRIC_COLUMNS, expand_grid, metrics_from_estimate, sweep_grid
from engine.hardware.what_if import apply_edits

H100 = engine.load_hardware("H100-SXM")


def point_estimate(model, scenario, row, grid, hardware=H100, method="roofline"):
    """engine.results.run for one grid row: hardware fields applied as what-if edits, the rest on the scenario."""
    device = engine.load_hardware(row["device"]) if "device" in grid else hardware
    edits = {k: row[k] for k in grid if k not in engine.Scenario.model_fields and k not in ("device", "model")}
    if "compute_scale" in edits:
        scale = edits.pop("compute_scale")
        fields = {f"matrix_macs_per_cycle_per_core_{d}": getattr(device, f"matrix_macs_per_cycle_per_core_{d}") * scale
                  for d in device.matrix_dtypes}
        device = device.with_changes(vector_flops_per_cycle_per_core=device.vector_flops_per_cycle_per_core * scale,
                                     **fields)
    if "matrix_tflops" in edits:
        factor = edits.pop("matrix_tflops") * 1e12 / device.matrix_flops_per_s("bf16")
        device = device.with_changes(**{f"matrix_macs_per_cycle_per_core_{d}":
                                        getattr(device, f"matrix_macs_per_cycle_per_core_{d}") * factor
                                        for d in device.matrix_dtypes})
    if edits:
        device = apply_edits(device, edits)
    fields = {k: (None if pd.isna(row[k]) else row[k].item() if hasattr(row[k], "item") else row[k])
              for k in grid if k in engine.Scenario.model_fields}
    return metrics_from_estimate(engine.estimate(device, model, scenario, method=method, **fields), device)


def assert_matches(frame, model, scenario, grid, method="roofline", hardware=H100):
    assert len(frame) == math.prod(len(v) for v in grid.values())
    for _, row in frame.iterrows():
        assert row["error"] == "", row["error"]
        expected = point_estimate(model, scenario, row, grid, hardware, method)
        for name, value in expected.items():
            got = row[name]
            if isinstance(value, bool):
                assert bool(got) == value, (name, dict(row))
            elif value is None or (isinstance(value, float) and math.isnan(value)):
                assert pd.isna(got), (name, dict(row))
            else:
                assert got == pytest.approx(value, rel=1e-9, abs=1e-15), (name, dict(row))


LLAMA8 = engine.load_model("meta-llama/Llama-3.1-8B")


@pytest.mark.parametrize("method", ["roofline", "realistic", "hierarchical"])
@pytest.mark.parametrize("phase", ["prefill", "decode", "request"])
def test_sweep_equals_point_by_point(phase, method):
    scenario = engine.Scenario(phase=phase, batch=4, input_length=512, output_length=9)
    grid = {"batch": [1, 3, 64], "input_length": [1, 100, 2048], "memory_bandwidth": [2000, 3350],
            "compute_scale": [0.5, 1.0]}
    if phase == "request":
        grid["output_length"] = [1, 2, 17]
    frame = sweep_grid(LLAMA8, scenario, grid, hardware=H100, method=method)
    assert list(frame.columns) == list(grid) + list(METRIC_COLUMNS)
    assert_matches(frame, LLAMA8, scenario, grid, method)


@pytest.mark.parametrize("model_id, fields", [
    ("mistralai/Mixtral-8x7B-v0.1", dict(tp=2, ep=1)),                            # MoE, tensor parallel
    ("Qwen/Qwen3-30B-A3B", dict(ep=2, dp=2, routing_skew=1.0)),                   # MoE, expert parallel
    ("deepseek-ai/DeepSeek-V3", dict(tp=8, weight_dtype="fp8")),                  # MLA
    ("google/gemma-2-9b", dict(overlap_communication=True, tp=2)),                # sliding window, overlap
    ("meta-llama/Llama-3.1-70B", dict(pp=4, tp=2, weight_dtype="int4_g128")),      # pipeline bubble
    ("openai/gpt-oss-20b", dict(kv_dtype="fp8")),                                 # sinks, sliding window
])
@pytest.mark.parametrize("phase", ["prefill", "decode", "request"])
def test_sweep_matches_across_families_and_layouts(model_id, fields, phase):
    model = engine.load_model(model_id)
    scenario = engine.Scenario(phase=phase, batch=8, input_length=300, output_length=5, **fields)
    grid = {"batch": [2, 16], "context_length": [None, 5000], "device": ["H100-SXM", "H200-SXM"],
            "link_bandwidth": [25, 50]}
    frame = sweep_grid(model, scenario, grid)
    assert_matches(frame, model, scenario, grid)


def test_an_fp8_cache_prefill_sweeps_at_the_fp8_rate_as_the_point_estimate_does():
    """Long prefills over an fp8 cache: their attention is compute bound at the fp8 matrix rate (the roofline's
    eight_bit_prefill_rates), on the broadcast sweep as on each point, A100 (no fp8 rate) included."""
    scenario = engine.Scenario(phase="prefill", batch=1, input_length=512, kv_dtype="fp8")
    grid = {"input_length": [8192, 32768], "device": ["H100-SXM", "B200", "A100-80GB-SXM"],
            "compute_scale": [1.0, 0.5]}
    assert_matches(sweep_grid(LLAMA8, scenario, grid), LLAMA8, scenario, grid)


def test_structural_fields_and_device_list():
    scenario = engine.Scenario(phase="decode", batch=8, input_length=1024)
    grid = {"weight_dtype": ["bf16", "fp8"], "tp": [1, 2], "device": ["A100-80GB-SXM", "H100-SXM", "MI300X"],
            "matrix_tflops": [500, 1000]}
    frame = sweep_grid(LLAMA8, scenario, grid)
    assert_matches(frame, LLAMA8, scenario, grid)


def test_point_by_point_phases_share_the_columns():
    """Phase `chunked` and chunked-prefill requests run through engine.estimate, one point at a time."""
    scenario = engine.Scenario(phase="request", batch=4, input_length=256, output_length=8, chunk_size=64,
                               chunked_prefill=True)
    grid = {"batch": [2, 4], "chunk_size": [32, 64]}
    assert_matches(sweep_grid(LLAMA8, scenario, grid, hardware=H100), LLAMA8, scenario, grid)
    chunked = engine.Scenario(phase="chunked", chunk_size=256)
    assert_matches(sweep_grid(LLAMA8, chunked, {"input_length": [512, 2048]}, hardware=H100), LLAMA8, chunked,
                   {"input_length": [512, 2048]})


def test_hand_arithmetic_decode_weights_stream():
    """A decode step at batch 1 is memory bound: time ~ bytes / bandwidth, so doubling bandwidth halves it."""
    scenario = engine.Scenario(phase="decode", batch=1, input_length=128)
    frame = sweep_grid(LLAMA8, scenario, {"memory_bandwidth": [1000, 2000]}, hardware=H100)
    slow, fast = frame["tpot_s"]
    assert slow / fast == pytest.approx(2.0, rel=1e-6)
    assert slow == pytest.approx(frame["bytes"][0] / 1000e9, rel=1e-6)
    # the weights dominate the bytes: 8.03e9 parameters less the 0.53e9 input-embedding table, 2 B each
    assert frame["bytes"][0] == pytest.approx(2 * (8_030_261_248 - 128_256 * 4096), rel=0.01)


def test_points_that_cannot_run_say_why():
    scenario = engine.Scenario(phase="decode", batch=1)
    frame = sweep_grid(LLAMA8, scenario, {"context_length": [1024, 200_000], "tp": [1, 3]}, hardware=H100)
    ok = frame[(frame["context_length"] == 1024) & (frame["tp"] == 1)]
    assert ok["error"].item() == "" and ok["tpot_s"].item() > 0
    too_long = frame[frame["context_length"] == 200_000]
    assert too_long["error"].str.contains("max_position_embeddings").all() and too_long["tpot_s"].isna().all()
    assert frame[(frame["tp"] == 3) & (frame["context_length"] == 1024)]["error"].str.contains("tp=3").all()
    no_links = sweep_grid(LLAMA8, scenario.model_copy(update={"tp": 2}), {"device": ["H100-SXM", "NVL-AX"]})
    assert no_links["error"][0] == "" and "link_bandwidth" in no_links["error"][1]


@pytest.mark.parametrize("grid, message", [
    ({"bandwidth": [1]}, "cannot sweep 'bandwidth'"),
    ({"memory_bandwidth": [-5]}, "memory_bandwidth"),
    ({"compute_scale": [0]}, "compute_scale"),
    ({"batch": []}, "no values"),
    ({"compute_scale": [1], "matrix_tflops": [100]}, "not both"),
    ({"device": ["NoSuchChip"]}, "NoSuchChip"),
])
def test_bad_grids_name_the_field(grid, message):
    with pytest.raises(GridError, match=message):
        sweep_grid(LLAMA8, engine.Scenario(phase="decode"), grid, hardware=H100)


def test_expand_grid_is_the_cartesian_product_in_order():
    frame = expand_grid({"batch": [1, 2], "memory_bandwidth": [10, 20, 30]})
    assert frame.values.tolist() == [[1, 10], [1, 20], [1, 30], [2, 10], [2, 20], [2, 30]]


def test_invalid_batch_value_marks_points():
    frame = sweep_grid(LLAMA8, engine.Scenario(phase="decode"), {"batch": [0, 2]}, hardware=H100)
    assert "batch" in frame["error"][0] and np.isnan(frame["tpot_s"][0])
    assert frame["error"][1] == "" and frame["tpot_s"][1] > 0


from hypothesis import given, settings, strategies as st  # noqa: E402

from tests.strategies import scenarios  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(scenario=scenarios(max_batch=16, max_input=600, max_output=12, max_chunk=256),
       batches=st.lists(st.integers(1, 40), min_size=1, max_size=3, unique=True),
       lengths=st.lists(st.integers(1, 700), min_size=1, max_size=3, unique=True),
       bandwidths=st.lists(st.sampled_from([800, 2000, 3350, 9000]), min_size=1, max_size=2, unique=True),
       method=st.sampled_from(["roofline", "realistic"]))
def test_random_sweeps_equal_point_by_point(scenario, batches, lengths, bandwidths, method):
    grid = {"batch": batches, "input_length": lengths, "memory_bandwidth": bandwidths}
    frame = sweep_grid(LLAMA8, scenario, grid, hardware=H100, method=method)
    assert_matches(frame, LLAMA8, scenario, grid, method)
