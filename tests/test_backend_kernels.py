"""The kernels a serving backend's runs are timed with (engine/serving/backend_kernels.py): its framework's nvfp4
activation-quantize kernel (BackendProfile.fp4_quantize_latency_s) and 4-bit MoE classes; and the MXFP4 checkpoint
reading of validation_express (MXFP4_CHECKPOINTS). Oracles: one B200 nvfp4 GEMM by hand from the fitted latency and
workbook fields; other dtypes bit-identical to the plain method."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from engine.calibration.silicon.conditions import TABLE_QUANTIZE_LATENCY_S
from engine.estimators import get_method
from engine.estimators.realistic import DEFAULT_CONSTANTS
from engine.estimators.realistic_constants import DEFAULT_MEMORY_FRACTION
from engine.serving import backends, validation_express
from engine.serving.backend_kernels import backend_constants, backend_method
from tests.test_silicon_fit import one_gemm


def _time(method, gemm, hardware) -> float:
    return float(method.estimate(gemm, hardware, None)["kernel_time_s"][0])


def test_an_nvfp4_gemm_pays_its_backends_quantize_kernel_by_hand(devices, monkeypatch):
    """One B200 nvfp4 x nvfp4 GEMM (m 64, n 7168, k 2048): a backend whose profile sets fp4_quantize_latency_s adds
    that latency + m x k x 3 B (a bf16 read, a 4-bit write and its scales, gemm_condition.QUANTIZE_BYTES_PER_VALUE) at
    the workbook's bandwidth x the achievable fraction, and nothing else."""
    monkeypatch.setitem(backends.BACKENDS, "vllm", replace(backends.BACKENDS["vllm"], fp4_quantize_latency_s=4.5e-6))
    hardware = devices["B200"]
    m, n, k = 64.0, 7168.0, 2048.0
    gemm = one_gemm(m, n, k, "fp4", 0.5 + 1.0 / 16.0)
    plain = _time(get_method("realistic"), gemm, hardware)
    mine = _time(backend_method(get_method("realistic"), "vllm"), gemm, hardware)
    fraction = hardware.achievable_memory_bandwidth_fraction or DEFAULT_MEMORY_FRACTION     # B200: no field, 0.815
    assert hardware.memory_bandwidth_bytes_per_s == 8.0e12 and fraction == 0.815
    assert mine - plain == pytest.approx(4.5e-6 + m * k * 3.0 / (8.0e12 * 0.815), rel=1e-9)
    assert "fp4" not in DEFAULT_CONSTANTS.gemm_quantize_latency_s      # estimate (no backend) charges none


@pytest.mark.parametrize("dtype, value_bytes", [("bf16", 2.0), ("fp8", 1.0)])
def test_other_dtypes_are_bit_identical_under_a_backends_constants(devices, monkeypatch, dtype, value_bytes):
    monkeypatch.setitem(backends.BACKENDS, "vllm", replace(backends.BACKENDS["vllm"], fp4_quantize_latency_s=4.5e-6,
                                                           moe_4bit_classes=True))
    gemm = one_gemm(64.0, 7168.0, 2048.0, dtype, value_bytes)
    for device in ("B200", "H100-SXM"):
        plain = get_method("realistic").estimate(gemm, devices[device], None)
        for backend in ("vllm", "sglang"):      # sglang: its shipped profile
            mine = backend_method(get_method("realistic"), backend).estimate(gemm, devices[device], None)
            assert mine["time_s"][0] == plain["time_s"][0]


def test_backend_constants_follow_the_profile_and_the_fitted_tables(monkeypatch):
    """A profile without either setting keeps the shipped constants (the same object: the estimator's memo stays
    valid); each setting changes only its field; every shipped fp4 latency is its framework's table fit."""
    for name, profile in backends.BACKENDS.items():
        if profile.fp4_quantize_latency_s is not None:
            assert profile.fp4_quantize_latency_s == TABLE_QUANTIZE_LATENCY_S[name]["nvfp4"]
    monkeypatch.setitem(backends.BACKENDS, "vllm", replace(backends.BACKENDS["vllm"], fp4_quantize_latency_s=None,
                                                           moe_4bit_classes=False))
    assert backend_constants("vllm") is DEFAULT_CONSTANTS
    assert backend_method(get_method("realistic"), "vllm") is get_method("realistic")
    monkeypatch.setitem(backends.BACKENDS, "vllm", replace(backends.BACKENDS["vllm"], fp4_quantize_latency_s=4.5e-6))
    changed = backend_constants("vllm")
    assert changed.gemm_quantize_latency_s == {**DEFAULT_CONSTANTS.gemm_quantize_latency_s, "fp4": 4.5e-6}
    assert changed.moe_4bit_formats == DEFAULT_CONSTANTS.moe_4bit_formats
    assert backend_method(get_method("roofline"), "vllm") is get_method("roofline")


def _gpt_oss_run(device: str, system: str):
    return next(pd.DataFrame([dict(device=device, system=system, mode="agg", attention_dp=pd.NA,
                                   model_path="openai/gpt-oss-120b", gemm_quant_mode="nvfp4", concurrency=16,
                                   max_batch=16, moe_ep=pd.NA, moe_tp=pd.NA, input_length=1024, output_length=512,
                                   tp=2, pp=1, backend="trtllm")]).itertuples(index=False))


def test_mxfp4_checkpoints_read_as_their_frameworks_run_them(devices, monkeypatch):
    """With MXFP4_CHECKPOINTS, gpt-oss's runs take mxfp4 expert weights with mxfp8 activations on fp4-rated matrix
    units (B200) and bf16 activations on Hopper, their checkpoint's unconverted modules in bf16; off (the default),
    nvfp4 everywhere as before."""
    assert validation_express.MXFP4_CHECKPOINTS is False
    b200, h200 = _gpt_oss_run("B200", "b200_sxm"), _gpt_oss_run("H200-SXM", "h200_sxm")
    assert validation_express.mxfp4_dtypes(b200, devices["B200"]) is None
    assert validation_express.modules_kept_unquantized(b200, False) == ()
    monkeypatch.setattr(validation_express, "MXFP4_CHECKPOINTS", True)
    assert validation_express.mxfp4_dtypes(b200, devices["B200"]) == ("mxfp4", "mxfp8", "fp8")
    assert validation_express.mxfp4_dtypes(h200, devices["H200-SXM"]) == ("mxfp4", "bf16", "fp8")
    assert set(validation_express.modules_kept_unquantized(b200, False)) == {"attention", "router", "embedding",
                                                                              "lm_head"}
    kimi = next(pd.DataFrame([dict(model_path="moonshotai/Kimi-K2.5", gemm_quant_mode="nvfp4")]).itertuples(index=False))
    assert not validation_express.mxfp4_checkpoint(kimi)


def test_one_sglang_4bit_expert_by_hand_from_the_shipped_classes(devices):
    """serve's SGLang kernels (its profile ships moe_4bit_classes) on one token of one of gpt-oss's experts (2880 x 5760
    fc1, mxfp4 weights x bf16 activations: class w4a16/native on B200): the packed weights (0.53125 B per value) and the
    bf16 token stream take 1 / stream of their time at the workbook's bandwidth x achievable fraction, plus the class's
    latency per launch; everything else as the plain method times it."""
    from tests.test_moe_4bit import _expert_row
    from engine.estimators.moe_4bit import FRAMEWORK_FORMATS
    assert backends.BACKENDS["sglang"].moe_4bit_classes
    hardware = devices["B200"]
    k, n = 2880.0, 5760.0
    stream, _, latency = FRAMEWORK_FORMATS["sglang"]["w4a16/native"]
    packed = k * n * 0.53125 + (k + n) * 2.0
    achievable = 8.0e12 * 0.815
    columns = _expert_row("Expert_up", "bf16", "mxfp4", "bf16", 1.0, k, n, 1.0)
    plain = _time(get_method("realistic"), columns, hardware)
    mine = _time(backend_method(get_method("realistic"), "sglang"), columns, hardware)
    assert mine - plain == pytest.approx(latency + packed / achievable * (1.0 / stream - 1.0), rel=1e-6)
