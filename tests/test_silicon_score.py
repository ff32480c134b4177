"""engine.calibration.silicon.score: the methods' predictions for measured kernels, checked against hand arithmetic."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.calibration.silicon import score, tables
from engine.hardware.specs import load_specs

SUBSET = Path(__file__).parent / "data" / "aiconfigurator" / "systems"


@pytest.fixture(scope="module")
def devices():
    return load_specs()


def test_gemm_roofline_is_the_hand_roofline(devices):
    frame = tables.gemm_table(SUBSET, ["h100_sxm"])
    tidy = score.score_family(frame, "gemm", methods=("roofline",), devices=devices)
    hw = devices["H100-SXM"]
    m, n, k = (tidy[c].to_numpy(dtype=float) for c in ("m", "n", "k"))
    width = np.where(tidy["dtype"] == "fp8", 1.0, 2.0)
    macs_per_cycle = np.where(tidy["dtype"] == "fp8", 4096.0, 2048.0)     # per SM per cycle (workbook)
    compute = 2 * m * n * k / (132 * 1.83e9 * macs_per_cycle * 2)
    memory = (m * k + k * n + m * n) * width / 3.35e12
    assert hw.num_cores == 132 and hw.clock_hz == 1.83e9 and hw.memory_bandwidth_bytes_per_s == 3.35e12
    np.testing.assert_allclose(tidy["predicted_s"], np.maximum(compute, memory), rtol=1e-9)
    np.testing.assert_allclose(tidy["error"], tidy["predicted_s"] / tidy["time_s"] - 1, rtol=1e-12)
    assert set(tidy["precision"]) == {"bf16", "fp8"}


def test_collectives_are_scored_with_the_engines_collective_model(devices):
    # the model itself is checked by hand in tests/test_collectives_calibration.py; here: every measured row is
    # timed as the engine times that collective (message bytes over the group's links), for every method alike
    from engine.estimators.collectives import collective_time
    frame = tables.collective_table(SUBSET, ["h100_sxm"])
    tidy = score.score_family(frame, "collective", methods=("roofline",), devices=devices)
    h100 = devices["H100-SXM"]
    expected = [collective_time(op, size, int(n), h100) for op, size, n in
                zip(tidy["op"], tidy["message_bytes"], tidy["group_size"])]
    np.testing.assert_allclose(tidy["predicted_s"], expected, rtol=1e-9)
    assert (tidy["predicted_s"] > 0).all()


def test_decode_attention_roofline_streams_the_kv_cache(devices):
    frame = tables.generation_attention_table(SUBSET, ["h100_sxm"])
    long = frame[frame["prior_tokens"] >= 1023].reset_index(drop=True)
    assert len(long) >= 3
    tidy = score.score_family(long, "decode_attention", methods=("roofline",), devices=devices)
    batch, heads, dim = tidy["batch"], tidy["heads"], tidy["head_dim"]
    context = tidy["prior_tokens"] + 1                               # the new token attends to itself too
    kv_width = np.where(tidy["kv_dtype"] == "fp8", 1.0, 2.0)
    kv_read = batch * context * tidy["kv_heads"] * dim * 2 * kv_width / 3.35e12     # K and V read once
    # the roofline method times the unfused rows one by one: scores and values at the bf16 matrix peak
    # (attention multiplies in the wider of bf16 queries and the cache), softmax (5 FLOP/score) on the vector units
    matrix = 2 * (2 * batch * heads * context * dim) / (132 * 1.83e9 * 2048 * 2)
    softmax = 5 * batch * heads * context / (132 * 1.83e9 * 256)
    ratio = tidy["predicted_s"] / (kv_read + matrix + softmax)
    assert ((ratio > 0.99) & (ratio < 1.05)).all(), ratio.describe()    # the rest: queries and outputs


def test_prefill_attention_realistic_one_fused_kernel_per_measurement(devices):
    frame = tables.context_attention_table(SUBSET, ["h100_sxm"])
    tidy = score.score_family(frame, "prefill_attention", devices=devices)
    roofline = tidy[tidy["method"] == "roofline"]["predicted_s"].to_numpy()
    realistic = tidy[tidy["method"] == "realistic"]["predicted_s"].to_numpy()
    assert len(roofline) == len(frame) and (realistic >= roofline * (1 - 1e-9)).all()   # never under the ideal
    pairs = frame["batch"] * frame["heads"] * frame["input_length"] * (frame["input_length"] + 1) / 2   # causal
    flops = 4 * pairs * frame["head_dim"]                    # scores and values: 2 x 2 FLOP per pair and channel
    big = ((flops > 1e11) & (frame["input_length"] >= 1024)).to_numpy()    # long prompts: compute-bound
    assert big.any()
    # compute-bound prefill: the unfused rows' roofline is the causal FLOPs at the matrix peak plus the
    # softmax (5 FLOP per score) on the vector units; the peak is fp8's where the compute or the KV cache is 8-bit
    # (a prefill over an 8-bit cache runs its matrix work at the fp8 rate: h/kern6, and the ideal with it: h/roof7)
    eight_bit = (frame["dtype"] == "fp8") | (frame["kv_dtype"] == "fp8")
    peak = 132 * 1.83e9 * np.where(eight_bit, 4096, 2048) * 2
    expected = (flops / peak + 5 * pairs / (132 * 1.83e9 * 256)).to_numpy()
    # at the fp8 rate a wide-KV prompt can turn memory-bound: Q and O (activation width) and K and V (cache width)
    # read or written once at least, at the workbook's bandwidth; equality where compute is over twice that
    act = np.where(frame["dtype"] == "fp8", 1, 2)
    kv = np.where(frame["kv_dtype"] == "fp8", 1, 2)
    tokens = frame["batch"] * frame["input_length"] * frame["head_dim"]
    least_bytes = (tokens * (2 * frame["heads"] * act + 2 * frame["kv_heads"] * kv)).to_numpy()
    compute_bound = big & (expected > 2 * least_bytes / devices["H100-SXM"].memory_bandwidth_bytes_per_s)
    assert compute_bound.sum() >= 6 and (frame["kv_dtype"] == "fp8").to_numpy()[compute_bound].any()
    np.testing.assert_allclose(roofline[compute_bound], expected[compute_bound], rtol=0.02)
    assert (roofline[big] >= expected[big] * 0.98).all()         # never under the compute time


def test_devices_outside_the_workbook_are_dropped_and_named(devices):
    frame = tables.gemm_table(SUBSET)
    only_h100 = {"H100-SXM": devices["H100-SXM"]}
    tidy = score.score_family(frame, "gemm", methods=("roofline",), devices=only_h100)
    assert set(tidy["device"]) == {"H100-SXM"}
    assert score.devices_missing(frame, only_h100) == ["b200_sxm (B200)"]


def test_summary_counts_medians_and_bias():
    tidy = pd.DataFrame({"method": "roofline", "device": "X", "family": "gemm", "precision": "bf16",
                         "error": [-0.5, -0.1, 0.2, 0.3, np.nan]})
    row = score.summary(tidy).iloc[0]
    assert row["count"] == 4
    assert row["median_abs_error"] == pytest.approx(0.25)        # |e| = 0.1, 0.2, 0.3, 0.5
    assert row["bias"] == pytest.approx(0.05)                    # median of -0.5, -0.1, 0.2, 0.3
    assert row["p90_abs_error"] == pytest.approx(0.44)           # linear interpolation between 0.3 and 0.5


def test_moe_roofline_is_the_hand_sum_of_top_k_expert_gemms_activation_and_combine(devices):
    frame = tables.moe_table(SUBSET, ["h100_sxm"])
    row = frame[(frame["distribution"] == "balanced") & (frame["file_dtype"] == "bfloat16")
                & (frame["kernel_source"] == "moe_torch_flow_cutlass")].iloc[[0]].reset_index(drop=True)
    tidy = score.score_family(row, "moe", methods=("roofline",), devices=devices)
    tokens, hidden, inner, topk, experts, moe_tp, moe_ep = (float(row[c].iloc[0]) for c in (
        "tokens", "hidden", "intermediate", "topk", "experts", "moe_tp", "moe_ep"))
    inner /= moe_tp
    # the collector's balanced routing: 96 tokens, top-8 of 128 (stride 16): token i picks (i + 16 j) mod 128; the
    # measured rank of 128 holds expert 0 only, which tokens 0, 16, ..., 80 pick: 6 pairs on 1 active expert
    assert (tokens, topk, experts, moe_ep) == (96, 8, 128, 128)
    pairs, active = 6.0, 1.0
    matrix_peak, vector_peak, bandwidth = 132 * 1.83e9 * 2048 * 2, 132 * 1.83e9 * 256, 3.35e12
    expected = 0.0
    for k, n in ((hidden, inner), (hidden, inner), (inner, hidden)):     # up, gate, down (bf16: 2 B per value)
        expected += max(2 * pairs * k * n / matrix_peak, (active * k * n + pairs * (k + n)) * 2 / bandwidth)
    expected += max(5 * pairs * inner / vector_peak, 3 * pairs * inner * 2 / bandwidth)   # silu(gate) * up
    expected += max(2 * pairs * hidden / vector_peak, (pairs + tokens) * hidden * 2 / bandwidth)   # combine
    # top-k over every token's 128 logits: 5 FLOPs per logit, logits read, 8 (id, weight) pairs of 4 + 4 bytes written
    expected += max(5 * tokens * experts / vector_peak, tokens * (experts * 2 + topk * 8) / bandwidth)
    assert tidy["predicted_s"].iloc[0] == pytest.approx(expected, rel=1e-9)
    assert tidy["precision"].iloc[0] == "bf16"
