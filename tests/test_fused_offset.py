"""The fused attention kernel's offset over its fused roofline never grows with bandwidth (engine/estimators/
fused_offset.py): where the fused roofline is memory-bound it is taken where that roofline turns compute-bound."""

from __future__ import annotations

import engine


def _attention_s(hardware, model, scenario):
    kernels = engine.estimate(hardware, model, scenario, method="realistic").kernels
    rows = kernels[kernels["op"].isin(["attention", "softmax", "kv_read"])]
    return float(rows["time_s"].sum())


def test_a_tpu_decode_of_many_short_sequences_never_slower_with_bandwidth(devices):
    """Before: TPU-v5e, DeepSeek-V3 decode of 256 sequences of 257 cached tokens, attention 204.3 -> 216.0 -> 226.9 us
    at 1, 1.5 and 2x the bandwidth (its t3 does not fall, the offset grew as the rows' bytes shrank)."""
    from engine.models import load_model
    tpu, model = devices["TPU-v5e"], load_model("deepseek-ai/DeepSeek-V3")
    scenario = engine.Scenario(phase="decode", batch=256, input_length=257, output_length=2)
    times = [_attention_s(tpu.with_changes(memory_bandwidth_bytes_per_s=tpu.memory_bandwidth_bytes_per_s * factor),
                          model, scenario) for factor in (1.0, 1.25, 1.5, 2.0, 4.0)]
    assert all(later <= earlier * (1 + 1e-12) for earlier, later in zip(times, times[1:]))


def test_the_hypothesis_counterexample_is_never_slower(devices, llama8b):
    """ux20's hypothesis database (session 20): A100, chunked, batch 1, 255 prompt tokens in chunks of 65, int4
    weights; doubling the bandwidth took the step 12.113 -> 12.155 ms (the split ramp and this offset)."""
    a100 = devices["A100-80GB-SXM"]
    scenario = engine.Scenario(phase="chunked", batch=1, input_length=255, output_length=8, chunk_size=65,
                               weight_dtype="int4")
    base = engine.estimate(a100, llama8b, scenario, method="realistic").total_time_s
    faster = a100.with_changes(memory_bandwidth_bytes_per_s=a100.memory_bandwidth_bytes_per_s * 2.0)
    assert engine.estimate(faster, llama8b, scenario, method="realistic").total_time_s <= base
