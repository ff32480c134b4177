"""Summing decode steps into one row per kernel keeps every method's numbers consistent."""

from __future__ import annotations

import numpy as np
import pytest

import engine


@pytest.fixture(scope="module")
def realistic_request(devices, llama8b):
    scenario = engine.Scenario(phase="request", batch=1, input_length=256, output_length=64)
    return engine.estimate(devices["H100-SXM"], llama8b, scenario, method="realistic")


def test_gaps_still_add_up_after_steps_are_combined(realistic_request):
    k = realistic_request.kernels
    gaps = k[["gap_tile_quantization_s", "gap_wave_quantization_s", "gap_efficiency_s", "gap_overhead_s"]].sum(axis=1)
    np.testing.assert_allclose(k["ideal_time_s"] + gaps, k["time_s"], rtol=1e-9, atol=1e-15)
    assert (k["time_s"] >= k["ideal_time_s"] * (1 - 1e-12)).all()


def test_bound_labels_survive_and_phase_time_splits_by_bound(realistic_request):
    k, phases = realistic_request.kernels, realistic_request.phases
    assert "overhead" in set(k["bound"])                      # batch-1 decode: tiny kernels wait on launches
    bound_columns = [c for c in phases.columns if c.endswith("_bound_time_s")]
    assert "overhead_bound_time_s" in bound_columns
    np.testing.assert_allclose(phases[bound_columns].sum(axis=1), phases["time_s"], rtol=1e-12)


def test_fused_attention_launches_once(devices, llama8b):
    """Per decode step per layer: a fused attention is one launch, not four rows' worth."""
    scenario = engine.Scenario(phase="decode", batch=1)
    roofline = engine.estimate(devices["H100-SXM"], llama8b, scenario).phases.loc["decode", "kernel_launches"]
    realistic = engine.estimate(devices["H100-SXM"], llama8b, scenario, method="realistic")
    rows_per_attention = 4                                      # KVCache_Read, Q*gK, Softmax, Q*gK*gV
    assert realistic.phases.loc["decode", "kernel_launches"] == roofline - (rows_per_attention - 1) * 32


@pytest.mark.parametrize("input_length, output_length, batch", [(289, 12, 1), (50, 600, 8)])
def test_time_by_bound_counts_each_decode_step(devices, llama8b, input_length, output_length, batch):
    """An attention kernel can be compute bound at short contexts and memory bound at long ones: the
    decode phase's compute-bound time is the sum over steps of the steps where, by the roofline's own
    definition, FLOP / peak exceeds bytes / bandwidth (here that differs from labelling each whole kernel
    by its majority bound)."""
    hw = devices["H100-SXM"]
    scenario = engine.Scenario(phase="request", batch=batch, input_length=input_length, output_length=output_length)
    table = engine.decompose(llama8b, scenario)
    compute = np.maximum(table["matrix_flops"] / hw.matrix_flops_per_s("bf16"),
                         table["vector_flops"] / hw.vector_flops_per_s)
    memory = table["bytes"] / hw.memory_bandwidth_bytes_per_s
    decode_compute = (table["phase"] == "decode") & (compute > memory)
    expected = float((table["count"] * np.maximum(compute, memory))[decode_compute].sum())
    result = engine.estimate(hw, llama8b, scenario)
    assert result.phases.loc["decode", "compute_bound_time_s"] == pytest.approx(expected, rel=1e-9)
    kernels = result.kernels
    majority = float((kernels["count"] * kernels["time_s"])[(kernels["phase"] == "decode")
                                                           & (kernels["bound"] == "compute")].sum())
    assert majority != pytest.approx(expected, rel=1e-3)      # the per-kernel label would miss it
