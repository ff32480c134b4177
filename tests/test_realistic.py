"""Realistic method: gap breakdown, fused attention, launch modes; oracles by hand or from measurement."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import engine
from engine.calibration import measurements as calibration
from engine.decomposition.transformer import decompose_columns
from engine.estimators.fused_attention import FLASH_BLOCK_K, FLASH_BLOCK_Q, attention_groups, query_tokens
from engine.estimators.realistic import GAP_COLUMNS, estimate_realistic

SCENARIOS = [
    engine.Scenario(phase="prefill", batch=2, input_length=1000),
    engine.Scenario(phase="decode", batch=8, input_length=3000),
    engine.Scenario(phase="chunked", batch=1, input_length=2048, output_length=512, chunk_size=512),
    engine.Scenario(phase="request", batch=4, input_length=300, output_length=40),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.phase)
def test_gaps_add_up_and_nothing_beats_the_ideal(devices, llama8b, scenario):
    for name in ("A100-80GB-SXM", "H100-SXM", "NVL-AX"):
        rows = pd.DataFrame(estimate_realistic(decompose_columns(llama8b, scenario), devices[name], scenario))
        gaps = rows[list(GAP_COLUMNS)]
        assert (gaps >= -1e-15).all().all()
        np.testing.assert_allclose(gaps.sum(axis=1), rows["time_s"] - rows["ideal_time_s"], rtol=1e-9, atol=1e-15)
        assert (rows["time_s"] >= rows["ideal_time_s"]).all()
        assert set(rows["bound"]) <= {"compute", "memory", "overhead"}
        roofline = engine.estimators.roofline.estimate_roofline(decompose_columns(llama8b, scenario), devices[name])
        np.testing.assert_array_equal(rows["ideal_time_s"], roofline["time_s"])


def test_whole_model_realistic_is_slower_than_roofline_and_graph_launch_helps(devices, llama8b):
    hw = devices["H100-SXM"]
    scenario = engine.Scenario(phase="request", batch=1, input_length=512, output_length=32)
    roofline = engine.estimate(hw, llama8b, scenario).total_time_s
    eager = engine.estimate(hw, llama8b, scenario, method="realistic")
    graph = engine.estimate(hw, llama8b, scenario, method="realistic-graph")
    assert roofline < graph.total_time_s < eager.total_time_s
    assert "overhead" in set(pd.DataFrame(estimate_realistic(
        decompose_columns(llama8b, scenario), hw, scenario))["bound"])   # 1-token norms wait for the host
    for result in (eager, graph):
        for phase, total in result.phases["time_s"].items():
            rows = result.kernels[result.kernels["phase"] == phase]
            assert (rows["count"] * rows["time_s"]).sum() == pytest.approx(total, rel=1e-9)


def test_launch_overhead_bounds_short_kernels_in_eager_mode(devices):
    """A 1-token residual add: 8192 x 2 B x 3 moved in nanoseconds; eager waits for the 4 us launch."""
    hw = devices["A100-80GB-SXM"]
    table = calibration.kernel_table(pd.DataFrame([{"device": hw.name, "model": "x", "op": "add", "kind": "residual_add",
                                                    "tokens": 1, "tp": 1, "m": 1, "n": 8192, "k": 0, "dtype": "fp16",
                                                    "measured_s": np.nan}]))
    eager = estimate_realistic(table, hw)
    graph = estimate_realistic(table, hw, launch="graph")
    assert eager["time_s"][0] == hw.launch_overhead_s == 4e-6 and eager["bound"][0] == "overhead"
    assert graph["time_s"][0] == graph["kernel_time_s"][0] < 4e-6
    with pytest.raises(ValueError, match="launch"):
        estimate_realistic(table, hw, launch="cuda")


def test_query_tokens_recovered_from_attention_rows(llama8b):
    cases = [(engine.Scenario(phase="prefill", batch=3, input_length=777), "Q*gK", 777),
             (engine.Scenario(phase="decode", batch=5, input_length=100), "Q*gK", 1),
             (engine.Scenario(phase="chunked", input_length=4000, output_length=1000, chunk_size=512), "pQ*gK",
              512 - 512 * 1000 // 5000)]
    for scenario, name, expected in cases:
        t = decompose_columns(llama8b, scenario)
        row = np.flatnonzero(t["name"] == name)[0]
        assert query_tokens(t["m"][row], t["k"][row], t["n"][row], t["batch"][row], t["macs"][row]) == expected


def test_attention_rows_fuse_into_one_kernel_per_attention(llama8b):
    scenario = engine.Scenario(phase="request", batch=2, input_length=64, output_length=5)
    t = decompose_columns(llama8b, scenario)
    groups = attention_groups(t)
    attention = np.isin(t["op"], ("kv_read", "attention", "softmax"))
    assert (groups[~attention] == -1).all()
    # prefill: Q*gK, Softmax, Q*gK*gV; each of the 4 decode steps: KVCache_Read, Q*gK, Softmax, Q*gK*gV
    sizes = np.bincount(groups[attention])
    assert sorted(sizes) == [3] + [4] * 4
    for g in range(len(sizes)):
        assert len(set(t["context"][groups == g])) == 1   # one context per fused kernel


def _group_rows(llama8b, hw, scenario):
    table = decompose_columns(llama8b, scenario)
    out = estimate_realistic(table, hw, scenario, launch="graph")
    fused = out["fused_group"] >= 0
    ideal_sum = engine.estimators.roofline.estimate_roofline(table, hw)["time_s"][fused].sum()
    return out, fused, ideal_sum


def test_decode_attention_streams_the_kv_cache_once(devices, llama8b):
    """Llama-3.1-8B decode, 1 sequence, 4096 cached tokens: the fused kernel reads K and V (8 KV heads x 128 x
    4097 tokens x 2 x 2 B), Q and O once. It is memory-bound: the attention latency (A100 has no fp4 matrix units:
    the floor is 15,480 cycles at 1.41 GHz) + bytes / (achievable fraction x decode stream efficiency, at most the
    decode stream cap, x 2.039 TB/s) + each (sequence, KV head)'s share at decode_pair_bytes_per_core_cycle x 108
    cores x 1.41 GHz (added to the stream since h/dattn5) + 8 (sequence, KV head) units x (decode cycles + the
    wide-KV cycles of a grouped-query decode over a 16-bit cache) / (108 cores x 1.41 GHz) + the split-KV reduction
    beyond 32,768 cached values per head (4,097 tokens x 128 head dim splits; its cycles + the ramp x 2.039 TB/s /
    (108 x 1.41 GHz) bytes per core cycle) at the clock, plus what the separate rows' roofline charges beyond the
    fused roofline, taken where that roofline turns compute-bound (engine/estimators/fused_offset.py): each row's
    roofline with its bytes at the bandwidth where the group's bytes take its compute roofline Tc (the matrix MACs at
    A100's bf16 peak or the vector FLOPs at its vector peak), summed, less Tc."""
    from engine.estimators.realistic import DEFAULT_CONSTANTS as C
    O = C.attention_overheads
    hw = devices["A100-80GB-SXM"]
    out, fused, ideal_sum = _group_rows(llama8b, hw, engine.Scenario(phase="decode", batch=1, input_length=4096))
    kv, q_and_o = 2 * 8 * 128 * 4097 * 2, 2 * 32 * 128 * 2
    assert out["bytes"][fused].sum() == kv + q_and_o
    fraction = min(O.decode_stream_cap, hw.achievable_memory_bandwidth_fraction * O.decode_bandwidth_efficiency)
    per_pair = (kv + q_and_o) / (8 * O.decode_pair_bytes_per_core_cycle * 108 * 1.41e9)
    streaming = (kv + q_and_o) / (2.039e12 * fraction) + per_pair
    split_cycles = O.decode_split_cycles + O.decode_split_ramp_cycles * 2.039e12 / (108 * 1.41e9)
    fixed = 8 * (O.decode_cta_cycles + O.decode_wide_kv_cta_cycles) / (108 * 1.41e9) + split_cycles / 1.41e9
    latency = C.attention_decode_latency_cycles / 1.41e9
    roofline = engine.estimators.roofline.estimate_roofline(decompose_columns(
        llama8b, engine.Scenario(phase="decode", batch=1, input_length=4096)), hw)
    compute_roofline = max(roofline["macs"][fused].sum() / (hw.matrix_flops_per_s("bf16") / 2),
                           roofline["vector_flops"][fused].sum() / hw.vector_flops_per_s)
    assert compute_roofline < (kv + q_and_o) / 2.039e12          # the fused roofline is memory-bound
    scale = compute_roofline / ((kv + q_and_o) / 2.039e12)
    at_transition = np.maximum(roofline["compute_time_s"][fused], roofline["memory_time_s"][fused] * scale).sum()
    assert at_transition - compute_roofline > ideal_sum - (kv + q_and_o) / 2.039e12 >= 0   # the offset it replaces
    expected = latency + streaming + fixed + (at_transition - compute_roofline)
    assert out["time_s"][fused].sum() == pytest.approx(expected, rel=1e-9)
    assert out["gap_efficiency_s"][fused].sum() == pytest.approx(streaming + fixed - (kv + q_and_o) / 2.039e12,
                                                                 rel=1e-9)
    assert set(out["bound"][fused]) == {"overhead"}   # the 10.6 us attention floor exceeds the ~2 us stream


def test_prefill_attention_pads_causal_work_to_flash_tiles(devices, llama8b):
    """1024 prompt tokens, 128-row query tiles over 64-key tiles: query tile i covers 128 (i + 1) keys, so
    the padded pairs are 128 x (128 + 256 + ... + 1024) = 589,824 against 1024 x 1025 / 2 = 524,800
    per head; 32 heads x 128 head_dim x 2 (QK and PV) MACs per pair."""
    assert (FLASH_BLOCK_Q, FLASH_BLOCK_K) == (128, 64)
    hw = devices["H100-SXM"]
    out, fused, ideal_sum = _group_rows(llama8b, hw, engine.Scenario(phase="prefill", batch=1, input_length=1024))
    macs_per_s = hw.matrix_flops_per_s("bf16") / 2
    exact_s = 32 * 128 * 524_800 * 2 / macs_per_s
    padded_s = 32 * 128 * 589_824 * 2 / macs_per_s
    assert out["macs"][fused].sum() == 32 * 128 * 524_800 * 2
    assert out["gap_tile_quantization_s"][fused].sum() == pytest.approx(padded_s - exact_s, rel=1e-9)
    # 256 query tiles on 132 SMs: the wave evens out (the padded work over 132 exceeds the largest tile)
    assert out["gap_wave_quantization_s"][fused].sum() == pytest.approx(0.0, abs=1e-15)
    from engine.estimators.realistic import DEFAULT_CONSTANTS as C
    efficiency = padded_s / (hw.achievable_matrix_fraction * C.attention_matrix_efficiency) - padded_s
    # fixed work: 32 heads x 72 (query, key) tile iterations (589,824 / (128 x 64)) and 32 x 8 CTAs, and the softmax's
    # vector FLOPs per padded score at H100's 256 vector FLOPs per core cycle (softmax rate scale 1), over 132 SMs
    O = C.attention_overheads
    assert O.prefill_score_vector_flops > 0
    fixed = (32 * 72 * O.prefill_tile_cycles + 32 * 8 * O.prefill_cta_cycles
             + 32 * 589_824 * O.prefill_score_vector_flops / 256) / (132 * 1.83e9)
    assert out["gap_efficiency_s"][fused].sum() == pytest.approx(efficiency + fixed, rel=1e-9)
    assert out["time_s"][fused].sum() == pytest.approx(
        ideal_sum + padded_s - exact_s + efficiency + fixed + C.attention_prefill_latency_s, rel=1e-9)


def test_estimate_gemm_accepts_every_method(devices):
    hw = devices["A100-40GB-PCIe"]
    for method in engine.METHODS:
        row = engine.estimate_gemm(hw, 32, 8192, 4096, method=method)
        assert row["time_s"] > 0 and row["bound"] in ("compute", "memory", "llc", "sram", "overhead")
    seed = engine.estimate_gemm(hw, 32, 8192, 4096, method="seed")
    assert seed["best_tiler"] and seed["matrix_rate_dtype"] == "bf16"   # the notebook's tiler ran
    realistic = engine.estimate_gemm(hw, 32, 8192, 4096, method="realistic")
    assert realistic["time_s"] > engine.estimate_gemm(hw, 32, 8192, 4096)["time_s"] == realistic["ideal_time_s"]
    with pytest.raises(ValueError, match="unknown method"):
        engine.estimate_gemm(hw, 32, 8192, 4096, method="magic")


def test_seed_000_measured_191_us_within_10_percent(devices):
    """Seed 000: torch.compile'd MLP on A100 40GB PCIe measured at 191 us (roofline 129.8 us)."""
    predicted = calibration.seed_000_prediction(devices["A100-40GB-PCIe"], "realistic")
    assert abs(predicted / 191e-6 - 1) <= 0.10
    assert calibration.seed_000_prediction(devices["A100-40GB-PCIe"], "roofline") < 0.75 * 191e-6


def test_blank_calibration_fields_fall_back_to_documented_defaults(devices):
    from engine.estimators import realistic
    hw = devices["B200"]
    assert hw.achievable_matrix_fraction is None and hw.kernel_latency_s is None
    rates = realistic.DeviceRates.of(hw)
    assert (rates.matrix_fraction, rates.memory_fraction, rates.kernel_latency_s) == (
        realistic.DEFAULT_MATRIX_FRACTION, realistic.DEFAULT_MEMORY_FRACTION, realistic.DEFAULT_KERNEL_LATENCY_S)
    a100, h100 = devices["A100-80GB-SXM"], devices["H100-SXM"]
    assert realistic.DEFAULT_MATRIX_FRACTION == pytest.approx(
        (a100.achievable_matrix_fraction + h100.achievable_matrix_fraction) / 2)
    assert realistic.DEFAULT_KERNEL_LATENCY_S == pytest.approx((a100.kernel_latency_s + h100.kernel_latency_s) / 2)
