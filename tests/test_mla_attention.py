"""MLA attention's own constants in realistic (engine/estimators/mla_attention.py): DeepSeek-V3's decode attention is
hand arithmetic from the shipped MLA constants and the workbook's fields, its prefill is the shared model with MLA's
values, in one group (a prefill) and over arrays of groups (a chunked batch); MHA / GQA models do not move."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import engine
from engine.decomposition.transformer import decompose_columns
from engine.estimators.fused_attention import FusedShapes
from engine.estimators.mla_attention import SHIPPED_MLA, MlaAttention, mla_groups
from engine.estimators.realistic import DEFAULT_CONSTANTS, DEFAULT_MEMORY_FRACTION, estimate_realistic
from engine.models import load_model

ATTENTION_OPS = ["kv_read", "attention", "softmax"]
DEEPSEEK = "deepseek-ai/DeepSeek-V3"


@pytest.fixture(scope="module")
def deepseek():
    return load_model(DEEPSEEK)


def _attention(model, hardware, scenario, method="realistic") -> pd.DataFrame:
    kernels = engine.estimate(hardware, model, scenario, method=method).kernels
    return kernels[kernels["op"].isin(ATTENTION_OPS)]


@pytest.mark.parametrize("device", ["H100-SXM", "B200"])
def test_deepseek_decode_attention_is_hand_arithmetic_from_the_shipped_mla_constants(devices, deepseek, device):
    hw, mla = devices[device], SHIPPED_MLA.decode
    batch, context = 2, 4096
    scenario = engine.Scenario(phase="decode", batch=batch, context_length=context, tp=8, ep=8)
    realistic, ideal = _attention(deepseek, hw, scenario), _attention(deepseek, hw, scenario, "roofline")
    keys = context + 1                              # the cached tokens and the new one
    read = realistic[realistic["name"] == "KVCache_Read"]
    assert read["bytes"].item() == batch * keys * (512 + 64) * 2      # the latent + rope key, bf16, per layer
    nbytes = realistic["bytes"].sum()
    core_cycle_s = 1.0 / (hw.num_cores * hw.clock_hz)
    fraction = hw.achievable_memory_bandwidth_fraction or DEFAULT_MEMORY_FRACTION     # the workbook's, or the default
    stream = min(fraction * mla.decode_bandwidth_efficiency, mla.decode_stream_cap)
    memory_s = nbytes / (hw.memory_bandwidth_bytes_per_s * stream)
    pair_s = nbytes * core_cycle_s / (batch * mla.decode_pair_bytes_per_core_cycle)    # one latent pair per sequence
    cta_s = batch * mla.decode_cta_cycles * core_cycle_s
    # the rows' ideals beyond the kernel's own ideal, taken where its memory-bound roofline turns compute-bound
    # (engine/estimators/fused_offset.py): each row's roofline with its bytes at the bandwidth where the kernel's bytes
    # take its compute roofline (its MACs at the bf16 peak or its vector FLOPs at the vector peak), less that roofline
    compute_s = max(ideal["macs"].sum() / (hw.matrix_flops_per_s("bf16") / 2),
                    ideal["vector_flops"].sum() / hw.vector_flops_per_s)
    assert compute_s < nbytes / hw.memory_bandwidth_bytes_per_s
    scale = compute_s / (nbytes / hw.memory_bandwidth_bytes_per_s)
    offset_s = np.maximum(ideal["compute_time_s"], ideal["memory_time_s"] * scale).sum() - compute_s
    fp4 = hw.matrix_macs_per_cycle_per_core_fp4 is not None
    floor_s = mla.mla_decode_latency_s if fp4 else mla.mla_decode_latency_cycles / hw.clock_hz
    expected = floor_s + memory_s + pair_s + cta_s + offset_s
    assert realistic["kernel_time_s"].sum() == pytest.approx(expected, rel=1e-9)


def _timed(model, hw, scenario, constants) -> pd.DataFrame:
    return pd.DataFrame(estimate_realistic(decompose_columns(model, scenario), hw, scenario, "eager", constants))


def _shared_with_mla_prefill(mla_decode=None):
    """DEFAULT_CONSTANTS with MLA's prefill values in the shared fields (and MLA's own constants for decode only)."""
    values = SHIPPED_MLA.prefill
    overheads = replace(DEFAULT_CONSTANTS.attention_overheads, prefill_cta_cycles=values.prefill_cta_cycles,
                        prefill_tile_cycles=values.prefill_tile_cycles,
                        prefill_score_vector_flops=values.prefill_score_vector_flops,
                        prefill_largest_cta_share=values.mla_prefill_largest_cta_share)
    return replace(DEFAULT_CONSTANTS, attention_overheads=overheads,
                   attention_matrix_efficiency=values.attention_matrix_efficiency,
                   attention_prefill_latency_s=values.attention_prefill_latency_s,
                   mla_attention=None if mla_decode is None else MlaAttention(decode=mla_decode))


@pytest.mark.parametrize("fields", [dict(phase="prefill", batch=1, input_length=2048),
                                    dict(phase="chunked", batch=4, input_length=512, context_length=1000)])
def test_an_mla_prefill_is_the_shared_model_with_mla_values(devices, deepseek, fields):
    hw = devices["H100-SXM"]
    scenario = engine.Scenario(tp=8, ep=8, **fields)
    shipped = _timed(deepseek, hw, scenario, DEFAULT_CONSTANTS)
    moved = _timed(deepseek, hw, scenario, _shared_with_mla_prefill(SHIPPED_MLA.decode))
    # a chunked batch's decode kernels (MLA's own constants in both) keep the shared matrix efficiency: their compute
    # part (not their time: memory-bound) moves with it, so they are left out
    decoding = shipped["op"].isin(ATTENTION_OPS) & (shipped["type"] != "Ma_Mqa") & shipped["name"].str.startswith("d")
    pd.testing.assert_frame_equal(shipped[~decoding], moved[~decoding], check_exact=True)
    unshipped = _timed(deepseek, hw, scenario, replace(DEFAULT_CONSTANTS, mla_attention=None))
    attention = shipped["op"].isin(ATTENTION_OPS) & (shipped["type"] == "Ma_Mqa")
    assert attention.any()
    assert not np.allclose(shipped.loc[attention, "time_s"], unshipped.loc[attention, "time_s"], rtol=1e-3)


def test_an_eight_bit_mla_prefill_on_hopper_takes_the_fp8_values(devices, deepseek):
    hw = devices["H100-SXM"]
    scenario = engine.Scenario(phase="prefill", batch=1, input_length=4096, tp=8, ep=8, activation_dtype="fp8",
                               kv_dtype="fp8", weight_dtype="fp8")
    values = SHIPPED_MLA.prefill
    as_fp8 = replace(values, attention_matrix_efficiency=values.mla_prefill_fp8_matrix_efficiency,
                     prefill_cta_cycles=values.mla_prefill_fp8_cta_cycles)
    shipped = _timed(deepseek, hw, scenario, DEFAULT_CONSTANTS)
    sixteen = _timed(deepseek, hw, scenario, replace(DEFAULT_CONSTANTS, mla_attention=MlaAttention(prefill=replace(
        values, mla_prefill_fp8_matrix_efficiency=values.attention_matrix_efficiency,
        mla_prefill_fp8_cta_cycles=values.prefill_cta_cycles))))
    eight = _timed(deepseek, hw, scenario, replace(DEFAULT_CONSTANTS, mla_attention=MlaAttention(prefill=as_fp8)))
    attention = shipped["op"].isin(ATTENTION_OPS)
    assert np.array_equal(shipped.loc[attention, "time_s"], eight.loc[attention, "time_s"])
    assert shipped.loc[attention, "time_s"].sum() > 1.05 * sixteen.loc[attention, "time_s"].sum()  # fp8: slower


@pytest.mark.parametrize("model_id,fields", [
    ("meta-llama/Llama-3.1-8B", dict(phase="request", batch=4, input_length=512, output_length=8)),
    ("meta-llama/Llama-3.1-8B", dict(phase="chunked", batch=4, input_length=512, context_length=1000)),
    ("openai/gpt-oss-20b", dict(phase="decode", batch=8, context_length=2000, kv_dtype="fp8")),
    (DEEPSEEK, dict(phase="decode", batch=8, context_length=2000, tp=8, ep=8, mla_decode="naive"))])
def test_mha_gqa_and_naive_mla_decode_do_not_move(devices, model_id, fields):
    hw, model = devices["H100-SXM"], load_model(model_id)
    scenario = engine.Scenario(**fields)
    pd.testing.assert_frame_equal(_timed(model, hw, scenario, DEFAULT_CONSTANTS),
                                  _timed(model, hw, scenario, replace(DEFAULT_CONSTANTS, mla_attention=None)),
                                  check_exact=True)


def test_mla_groups_are_the_latent_decode_and_the_wider_score_prefill():
    """MLA's absorbed decode (576 / 512) and naive prefill (192 / 128); not an MHA decode of head dim 128 or 512 (the
    tables have both), an MHA prefill, nor MLA's naive decode (192 / 128, no latent)."""
    ones = np.ones(6)
    shapes = FusedShapes(decode=np.array([True, True, True, True, False, False]), m=16 * ones,
                         k=np.array([576, 128, 512, 192, 192, 128.0]), n=1000 * ones, batch=ones,
                         matrix_macs=np.array([1088, 256, 1024, 320, 320, 256.0]), vector_flops=ones, nbytes=ones,
                         score_macs=np.array([576, 128, 512, 192, 192, 128.0]))
    prefill, decode = mla_groups(shapes)
    assert prefill.tolist() == [False] * 4 + [True, False]
    assert decode.tolist() == [True] + [False] * 5
