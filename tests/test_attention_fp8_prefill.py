"""A prefill over an 8-bit KV cache runs its fused attention at the fp8 matrix rate where the device has fp8 units.

TensorRT-LLM's context kernel computes Q.K and P.V in fp8 when the KV cache is fp8: AIConfigurator's tables time a
bf16 prefill over an fp8 cache like an fp8 one (docs/accuracy.md, "Prefill attention"). The prefill attention rows
carry the cache's width in kv_bytes (the new tokens' K/V, read as cached values) and the realistic method times
such a group at the device's fp8 rate (workbook field matrix_macs_per_cycle_per_core_fp8), else as before.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import engine
import engine.decomposition.auto as auto
from engine.calibration.silicon import attention_fit
from engine.decomposition.transformer import decompose_columns
from engine.estimators.fused_attention import attention_groups
from engine.estimators.realistic import DEFAULT_CONSTANTS, DeviceRates, estimate_realistic, fused_group_inputs
from engine.estimators.roofline import estimate_roofline
from engine.estimators.row_groups import RowGroups

SUBSET = Path(__file__).parent / "data" / "aiconfigurator" / "systems"


def _prefill_groups(columns, hw):
    """fused_group_inputs of a kernel table's attention groups on `hw` (the realistic method's inputs)."""
    out = estimate_roofline(columns, hw)
    row_groups = RowGroups(out)
    rates = DeviceRates.of(hw)
    per_core = row_groups.map("dtype", hw.matrix_macs_per_s) / rates.cores
    return fused_group_inputs(out, attention_groups(out, row_groups), row_groups, rates, per_core, DEFAULT_CONSTANTS)


def _per_core(hw, field):    # hand arithmetic from the workbook: MAC/s of one core
    return hw.clock_hz * getattr(hw, f"matrix_macs_per_cycle_per_core_{field}")


def _scenario(kv):
    return engine.Scenario(phase="prefill", batch=1, input_length=4096, activation_dtype="bf16", kv_dtype=kv)


@pytest.mark.parametrize("device, kv, rate", [("H100-SXM", "fp8", "fp8"), ("H100-SXM", "bf16", "bf16"),
                                              ("B200", "fp8", "fp8"), ("A100-80GB-SXM", "fp8", "bf16")])
def test_a_bf16_prefill_over_an_fp8_cache_runs_at_the_fp8_rate_where_the_device_has_it(devices, llama8b, device,
                                                                                        kv, rate):
    hw = devices[device]
    inputs = _prefill_groups(decompose_columns(llama8b, _scenario(kv)), hw)
    assert not inputs.decode.any()
    np.testing.assert_allclose(inputs.shapes.kv_value_bytes, 1.0 if kv == "fp8" else 2.0, rtol=1e-12)
    np.testing.assert_allclose(inputs.rates.macs_per_s_per_core, _per_core(hw, rate), rtol=1e-12)


def test_the_fp8_cache_prefill_attention_is_faster_on_h100_and_unchanged_in_rate_on_a100(devices, llama8b):
    """Llama-3.1-8B, 4,096-token prompt (compute bound): H100's fp8 rate is twice its bf16 rate, so the attention
    kernels take well under 0.9x; A100 has no fp8 units: the same within 1% (only the new K/V's bytes halve)."""
    def attention_s(device, kv):
        rows = pd.DataFrame(estimate_realistic(decompose_columns(llama8b, _scenario(kv)), devices[device],
                                               _scenario(kv)))
        return float((rows["time_s"] * rows["count"])[rows["op"].isin(["attention", "softmax"])].sum())
    assert attention_s("H100-SXM", "fp8") < 0.9 * attention_s("H100-SXM", "bf16")
    assert attention_s("A100-80GB-SXM", "fp8") == pytest.approx(attention_s("A100-80GB-SXM", "bf16"), rel=0.01)


@pytest.mark.skipif(not auto.available()[0], reason="the optional 'auto' extra (torch, transformers) is missing")
def test_the_automatic_decomposition_carries_the_cache_width_alike(devices, llama8b):
    hw = devices["H100-SXM"]
    scenario = _scenario("fp8")
    hand = _prefill_groups(decompose_columns(llama8b, scenario), hw)
    traced = _prefill_groups(auto.decompose_auto_columns("meta-llama/Llama-3.1-8B", scenario), hw)
    np.testing.assert_allclose(traced.shapes.kv_value_bytes, hand.shapes.kv_value_bytes, rtol=1e-12)
    np.testing.assert_allclose(traced.rates.macs_per_s_per_core, _per_core(hw, "fp8"), rtol=1e-12)


def test_the_measured_rows_are_scored_with_their_cache_dtype(devices):
    """The shipped subset's H100-SXM and B200 prefill rows (trtllm): bf16 over an fp8 cache at the fp8 rate, like
    fp8 over fp8; bf16 over bf16 at the bf16 rate."""
    rows = attention_fit.fit_rows("prefill_attention", devices, SUBSET)
    for device, part in rows.groupby("device"):
        hw = devices[device]
        group = attention_fit.DeviceAttention(part, hw, "prefill_attention")
        measured = group.rows.iloc[group.measurement]
        expected = np.where(measured["kv_dtype"] == "fp8", _per_core(hw, "fp8"), _per_core(hw, "bf16"))
        assert (measured["kv_dtype"] == "fp8").any() and (measured["kv_dtype"] == "bf16").any()
        np.testing.assert_allclose(group.inputs.rates.macs_per_s_per_core, expected, rtol=1e-12)
