"""The KV cache's width as a kernel-table column (`kv_value_bytes`), and the prefill rate it selects.

TensorRT-LLM's context kernel computes Q.K and P.V in fp8 when the KV cache is fp8: AIConfigurator's tables time a bf16
prefill over an fp8 cache like an fp8 one. The decomposition writes the cache's width on every attention row and the
realistic method times a prefill group over an 8-bit cache at the device's fp8 matrix rate (workbook field
matrix_macs_per_cycle_per_core_fp8) where it has one. The width is the column, never read back from bytes: a serving
iteration's row of unequal chunks has a key span that matches its pairs, not its mean context (h/kern5's attempt read
a bf16 cache there as ~1 byte per value; docs/accuracy.md).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import engine
import engine.decomposition.auto as auto
from engine.calibration.silicon import attention_fit
from engine.decomposition.transformer import add_forward_pass, decompose_columns
from engine.estimators.fused_attention import attention_groups
from engine.estimators.realistic import (DEFAULT_CONSTANTS, DeviceRates, estimate_realistic, fused_group_inputs,
                                        per_core_matrix_rates)
from engine.estimators.roofline import estimate_roofline
from engine.estimators.row_groups import RowGroups
from engine.kernels.table import KernelTableBuilder
from engine.models import load_model
from engine.serving.cost import mixed_pass
from engine.workload.parallel import parallel_layout

SUBSET = Path(__file__).parent / "data" / "aiconfigurator" / "systems"
ATTENTION_OPS = ("kv_read", "attention", "softmax")


def _groups(columns, hw):
    """fused_group_inputs of a kernel table's attention groups on `hw` (the realistic method's inputs)."""
    out = estimate_roofline(columns, hw)
    row_groups = RowGroups(out)
    rates = DeviceRates.of(hw)
    per_core = per_core_matrix_rates(out, row_groups, hw, rates)
    return fused_group_inputs(out, attention_groups(out, row_groups), row_groups, rates, per_core, DEFAULT_CONSTANTS)


def _per_core(hw, field):    # hand arithmetic from the workbook: MAC/s of one core
    return hw.clock_hz * getattr(hw, f"matrix_macs_per_cycle_per_core_{field}")


def _scenario(kv, phase="prefill"):
    return engine.Scenario(phase=phase, batch=1, input_length=4096, context_length=4096, activation_dtype="bf16",
                           kv_dtype=kv)


@pytest.mark.parametrize("kv, width", [("fp8", 1.0), ("bf16", 2.0), ("fp32", 4.0)])
@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_every_attention_row_carries_the_caches_width_and_no_other_row_does(llama8b, kv, width, phase):
    columns = decompose_columns(llama8b, _scenario(kv, phase))
    attention = np.isin(columns["op"], ATTENTION_OPS)
    assert attention.any() and (~attention).any()
    np.testing.assert_array_equal(columns["kv_value_bytes"][attention], width)
    assert np.isnan(columns["kv_value_bytes"][~attention]).all()


@pytest.mark.parametrize("device, kv, rate", [("H100-SXM", "fp8", "fp8"), ("H100-SXM", "bf16", "bf16"),
                                              ("B200", "fp8", "fp8"), ("A100-80GB-SXM", "fp8", "bf16")])
def test_a_bf16_prefill_over_an_fp8_cache_runs_at_the_fp8_rate_where_the_device_has_it(devices, llama8b, device,
                                                                                        kv, rate):
    hw = devices[device]
    inputs = _groups(decompose_columns(llama8b, _scenario(kv)), hw)
    assert not inputs.decode.any()
    np.testing.assert_allclose(inputs.rates.macs_per_s_per_core, _per_core(hw, rate), rtol=1e-12)


def test_the_fp8_cache_prefill_attention_is_faster_on_h100_and_unchanged_in_rate_on_a100(devices, llama8b):
    """Llama-3.1-8B, 4,096-token prompt (compute bound): H100's fp8 rate is twice its bf16 rate, so the attention
    kernels take well under 0.9x; A100 has no fp8 units: the same within 1%."""
    def attention_s(device, kv):
        rows = pd.DataFrame(estimate_realistic(decompose_columns(llama8b, _scenario(kv)), devices[device],
                                               _scenario(kv)))
        return float((rows["time_s"] * rows["count"])[rows["op"].isin(["attention", "softmax"])].sum())
    assert attention_s("H100-SXM", "fp8") < 0.9 * attention_s("H100-SXM", "bf16")
    assert attention_s("A100-80GB-SXM", "fp8") == pytest.approx(attention_s("A100-80GB-SXM", "bf16"), rel=0.01)


@pytest.mark.parametrize("kv, width, rate", [("bf16", 2.0, "bf16"), ("fp8", 1.0, "fp8")])
def test_a_serving_row_of_unequal_chunks_keeps_the_caches_width(devices, kv, width, rate):
    """The end of an 8k prompt (1,000 tokens after 7,192) beside a new one (24 tokens) in one iteration: the row's key
    span matches its pairs (engine/decomposition/passes.py), so bytes / (2 x batch x span x head dim) reads a bf16
    cache as 1.06 bytes per value (h/kern5's failure); the column says 2 (or 1 over an fp8 cache)."""
    hw, model = devices["H200-SXM"], load_model("meta-llama/Llama-3.1-8B")
    scenario = engine.Scenario(phase="request", batch=1, input_length=8192, output_length=64, kv_dtype=kv)
    iteration = SimpleNamespace(decode_priors=np.zeros(0, dtype=np.int64), chunk_tokens=np.array([1000, 24]),
                                chunk_priors=np.array([7192, 0]), completions=0)
    builder = KernelTableBuilder()
    add_forward_pass(builder, model, scenario, mixed_pass([iteration]), parallel_layout(model, scenario))
    columns = builder.build_columns()
    inputs = _groups(columns, hw)
    prefill = ~inputs.decode          # the iteration's (empty) decode part is a group of its own
    assert prefill.sum() == 1
    np.testing.assert_array_equal(inputs.shapes.kv_value_bytes[prefill], width)
    np.testing.assert_allclose(inputs.rates.macs_per_s_per_core[prefill], _per_core(hw, rate), rtol=1e-12)
    read_back = _groups({k: v for k, v in columns.items() if k != "kv_value_bytes"}, hw).shapes.kv_value_bytes
    assert read_back[prefill] == pytest.approx(width * 8216 / (2 * 7767), rel=0.01)   # what bytes would have said


def test_mla_prefill_over_an_8_bit_cache_runs_the_8_bit_kernel_and_its_latent_cache_reads_the_cache(devices):
    """DeepSeek-V3 (bf16 activations) prefill over an fp8 cache: the naive form's K/V, rebuilt from the latent, are
    read at the cache's width (TensorRT-LLM's MLA context kernel over an 8-bit cache; AIConfigurator's 8-bit MLA rows
    are bf16 over fp8, which mla_fit fits at the cache's width), so its group runs at the fp8 rate (was: the bf16 one,
    the activation's width); the absorbed decode reads the fp8 latent cache."""
    model = load_model("deepseek-ai/DeepSeek-V3")
    hw = devices["H100-SXM"]
    prefill = decompose_columns(model, engine.Scenario(phase="prefill", batch=1, input_length=2048, kv_dtype="fp8"))
    matrix = prefill["op"] == "attention"
    np.testing.assert_array_equal(prefill["kv_value_bytes"][matrix], 1.0)
    np.testing.assert_allclose(_groups(prefill, hw).rates.macs_per_s_per_core, _per_core(hw, "fp8"), rtol=1e-12)
    decode = decompose_columns(model, engine.Scenario(phase="decode", batch=8, context_length=2048, kv_dtype="fp8"))
    np.testing.assert_array_equal(decode["kv_value_bytes"][np.isin(decode["op"], ATTENTION_OPS)], 1.0)


@pytest.mark.skipif(not auto.available()[0], reason="the optional 'auto' extra (torch, transformers) is missing")
def test_the_automatic_decomposition_carries_the_cache_width_alike(devices, llama8b):
    hw = devices["H100-SXM"]
    scenario = _scenario("fp8")
    hand = _groups(decompose_columns(llama8b, scenario), hw)
    traced = _groups(auto.decompose_auto_columns("meta-llama/Llama-3.1-8B", scenario), hw)
    np.testing.assert_array_equal(traced.shapes.kv_value_bytes, hand.shapes.kv_value_bytes)
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


def test_a_table_without_the_column_times_prefills_at_their_dtypes_rate(devices, llama8b):
    """A kernel table built without kv_value_bytes (older callers): no width is read back from a prefill's bytes."""
    hw = devices["H100-SXM"]
    columns = dict(decompose_columns(llama8b, _scenario("fp8")))
    del columns["kv_value_bytes"]
    np.testing.assert_allclose(_groups(columns, hw).rates.macs_per_s_per_core, _per_core(hw, "bf16"), rtol=1e-12)
