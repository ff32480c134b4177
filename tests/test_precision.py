"""Mixed precision: bytes per value with scale factors, and the rate each GEMM multiplies at.

H100-SXM dense peaks from NVIDIA's datasheet (typed here): bf16 989.4 TFLOP/s, fp8 1978.9 TFLOP/s,
no fp4 and no int4 rate.
"""

from __future__ import annotations

import pytest

import engine
from engine.cli.entry import main
from engine.hardware.dtypes import bytes_per_value, check_dtype, compute_dtype

H, INTER = 4096, 14336          # Llama-3.1-8B
H100_BF16, H100_FP8 = 989.4e12, 1978.9e12


@pytest.mark.parametrize("dtype, expected", [
    ("fp8_e4m3", 1.0), ("fp8_e5m2", 1.0), ("e4m3", 1.0),
    ("int4_g128", 0.5 + 2 / 128),       # int4 values, one bf16 scale per 128
    ("int4_g32", 0.5 + 2 / 32),
    ("mxfp4", 0.5 + 1 / 32),            # e8m0 scale per 32
    ("nvfp4", 0.5 + 1 / 16),            # fp8 e4m3 scale per 16
    ("mxfp8", 1 + 1 / 32),
    ("int8_g64", 1 + 2 / 64),
])
def test_bytes_per_value_include_the_scales(dtype, expected):
    assert bytes_per_value(dtype) == expected


def test_unknown_formats_are_rejected_with_the_choices():
    for bad in ("int3", "int4_g0", "int4_gx", "fp16_g128"):
        with pytest.raises(ValueError, match="int4_g128"):
            check_dtype(bad)


def test_one_int4_gemm_counts_half_a_byte_per_weight_plus_scales(llama8b):
    table = engine.decompose(llama8b, engine.Scenario(phase="decode", batch=1, weight_dtype="int4_g128"))
    up = table.set_index("name").loc["FFN_up"]
    weights = H * INTER                                   # 58,720,256 weights, 458,752 groups of 128
    assert up["weight_bytes"] == weights * 0.5 + weights / 128 * 2 == 30_277_632
    assert up["activation_bytes"] == (H + INTER) * 2      # activations stay bf16


def test_memory_uses_the_effective_weight_bytes(devices, llama8b):
    memory = engine.estimate(devices["H100-SXM"], llama8b, phase="decode", weight_dtype="int4_g128").memory
    assert memory.weights_bytes == pytest.approx(llama8b.params_total * (0.5 + 2 / 128), rel=1e-12)


def _compute_bound_gemm(devices, model, **dtypes):
    """FFN_up of a 16 x 1024-token prefill: compute-bound at any of these rates."""
    result = engine.estimate(devices["H100-SXM"], model, phase="prefill", batch=16, input_length=1024, **dtypes)
    return result, result.kernels.set_index("name").loc["FFN_up"]


def test_w4a16_computes_at_the_bf16_rate(devices, llama8b):
    result, up = _compute_bound_gemm(devices, llama8b, weight_dtype="int4_g128")
    assert up["dtype"] == "bf16" and up["matrix_rate_dtype"] == "bf16"
    assert up["compute_time_s"] == pytest.approx(2 * 16 * 1024 * H * INTER / H100_BF16, rel=1e-3)
    assert any("weight-only quantization" in note and "bf16 rate" in note for note in result.notes)


def test_w8a8_fp8_computes_at_the_fp8_rate(devices, llama8b):
    for weights, activations in (("fp8", "fp8"), ("fp8_e4m3", "fp8_e4m3"), ("fp8_e4m3", "fp8_e5m2")):
        _, up = _compute_bound_gemm(devices, llama8b, weight_dtype=weights, activation_dtype=activations)
        assert up["dtype"] == "fp8" and up["matrix_rate_dtype"] == "fp8"
        assert up["compute_time_s"] == pytest.approx(2 * 16 * 1024 * H * INTER / H100_FP8, rel=1e-3)
    # fp8 weights with bf16 activations: weight-only, bf16 rate
    assert compute_dtype("fp8", "bf16") == "bf16" and compute_dtype("nvfp4", "nvfp4") == "fp4"


def test_block_scaled_fp8_keeps_its_format_and_runs_at_the_fp8_rate(devices, llama8b):
    # the row carries fp8_g128 (so RealisticConstants' fp8_g128 entries apply, not per-tensor fp8's) and still
    # multiplies at H100's fp8 peak
    _, up = _compute_bound_gemm(devices, llama8b, weight_dtype="fp8_g128", activation_dtype="fp8_g128")
    assert up["dtype"] == "fp8_g128" and up["matrix_rate_dtype"] == "fp8"
    assert up["compute_time_s"] == pytest.approx(2 * 16 * 1024 * H * INTER / H100_FP8, rel=1e-3)


def test_a_rate_the_device_lacks_falls_back_with_a_note(devices, llama8b, capsys):
    result, up = _compute_bound_gemm(devices, llama8b, weight_dtype="nvfp4", activation_dtype="nvfp4")
    assert up["dtype"] == "fp4" and up["matrix_rate_dtype"] == "fp8"          # H100 has no fp4 tensor-core rate
    assert up["compute_time_s"] == pytest.approx(2 * 16 * 1024 * H * INTER / H100_FP8, rel=1e-3)
    note = "H100-SXM has no fp4 matrix rate: fp4 matrix work runs at the fp8 rate"
    assert note in result.notes and note in result.to_dict()["notes"]
    args = ["estimate", "--hardware", "H100-SXM", "--model", "meta-llama/Llama-3.1-8B", "--phase", "decode",
            "--weight-dtype", "nvfp4", "--act-dtype", "nvfp4"]
    assert main(args) == 0
    assert f"note: {note}" in capsys.readouterr().out
    # B200 has fp4: no note there
    b200 = engine.estimate(devices["B200"], llama8b, phase="decode", weight_dtype="nvfp4", activation_dtype="nvfp4")
    assert not any("matrix rate" in note for note in b200.notes)


def test_int4_by_int4_runs_at_the_int8_rate_on_h100(devices, llama8b):
    result, up = _compute_bound_gemm(devices, llama8b, weight_dtype="int4", activation_dtype="int4")
    assert up["matrix_rate_dtype"] == "int8"
    assert "H100-SXM has no int4 matrix rate: int4 matrix work runs at the int8 rate" in result.notes


def test_fp8_kv_cache_halves_the_kv_bytes(devices, llama8b):
    s = engine.Scenario(phase="decode", batch=4, context_length=2000)
    bf16 = engine.decompose(llama8b, s).set_index("name")
    fp8 = engine.decompose(llama8b, s.model_copy(update={"kv_dtype": "fp8_e4m3"})).set_index("name")
    assert fp8.loc["KVCache_Read", "kv_bytes"] * 2 == bf16.loc["KVCache_Read", "kv_bytes"]
    assert fp8.loc["Q*gK", "dtype"] == "bf16"             # bf16 queries against fp8 keys multiply at bf16
