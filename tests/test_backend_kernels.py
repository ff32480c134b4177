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
from engine.estimators.realistic import DEFAULT_CONSTANTS, estimate_realistic
from engine.estimators.realistic_constants import DEFAULT_MEMORY_FRACTION
from engine.serving import backends, validation_express
from engine.serving.backend_kernels import backend_constants, backend_method
from tests.test_silicon_fit import one_gemm


def _time(method, gemm, hardware) -> float:
    return float(method.estimate(gemm, hardware, None)["kernel_time_s"][0])


# The nvfp4 activation-quantize kernel each way of running a model charges: SGLang its framework's fit on its nvfp4
# GEMM tables (h/fp4ship); `estimate`, generic, TensorRT-LLM and vLLM none (their kernels put serving's p90s over the
# targets: docs/accuracy.md, h/fp4all). All of them take the fitted fp4 power cap (RealisticConstants, h/fp4all).
NVFP4_QUANTIZE_S = {None: None, "generic": None, "trtllm": None, "vllm": None, "sglang": 2.0e-6}


def _method_of(backend):
    return get_method("realistic") if backend is None else backend_method(get_method("realistic"), backend)


@pytest.mark.parametrize("backend", list(NVFP4_QUANTIZE_S), ids=lambda b: b or "estimate")
def test_a_compute_bound_nvfp4_gemm_by_hand_from_the_shipped_constants(devices, backend):
    """8192^3 nvfp4 x nvfp4 on B200 in the model condition, `estimate` and every backend: the device latency (B200
    has no kernel_latency field: DEFAULT_KERNEL_LATENCY_S) + the backend's activation-quantize kernel where it has one
    (its latency + m x k x 3 B at the achievable bandwidth) + the matrix work at the board's power cap, (TDP - static
    power) / 0.14 pJ per FLOP, which binds below the fp4 rate x the achievable fraction (every tile shape divides
    8192: the executed MACs are m x n x k)."""
    hardware = devices["B200"]
    m = n = k = 8192.0
    gemm = one_gemm(m, n, k, "fp4", 0.5 + 1.0 / 16.0)      # nvfp4: e2m1 values + one e4m3 scale per 16
    assert (hardware.tdp_w, hardware.static_power_w, hardware.memory_bandwidth_bytes_per_s) == (1000.0, 150.0, 8.0e12)
    assert hardware.kernel_latency_s is None and hardware.achievable_memory_bandwidth_fraction is None
    power_flops = (1000.0 - 150.0) / 0.14e-12                 # 6.07 PFLOP/s
    assert power_flops < 0.71 * 9.0e15                       # under the fp4 rate x the achievable matrix fraction
    latency = NVFP4_QUANTIZE_S[backend]
    quantize = 0.0 if latency is None else latency + m * k * 3.0 / (8.0e12 * 0.815)
    expected = 6.375e-6 + quantize + 2.0 * m * n * k / power_flops
    assert _time(_method_of(backend), gemm, hardware) == pytest.approx(expected, rel=1e-6)
    # without the cap the work runs at the fp4 rate x the achievable fraction (whole waves: at most 1/8 more), faster
    constants = DEFAULT_CONSTANTS if backend is None else backend_constants(backend)
    uncapped = replace(constants, gemm_power_j_per_flop={d: j for d, j in constants.gemm_power_j_per_flop.items()
                                                         if d != "fp4"})
    work = float(estimate_realistic(gemm, hardware, constants=uncapped)["kernel_time_s"][0]) - 6.375e-6 - quantize
    at_rate = 2.0 * m * n * k / (0.71 * 9.0e15)
    assert at_rate * 0.999 <= work <= at_rate * 1.125


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


def test_the_shipped_nvfp4_constants_are_the_tables_fit():
    """The model condition ships the fitted fp4 power cap for `estimate` and every backend; the quantize kernel only
    where a profile sets it (SGLang: its framework's fit); the tables' condition is unchanged by them (each
    framework's own quantize latency, the same cap, its k-step cycles)."""
    from engine.calibration.silicon import conditions
    assert DEFAULT_CONSTANTS.gemm_power_j_per_flop["fp4"] == conditions.TABLE_NVFP4_CLOCK["power_j_per_flop"]
    for name, profile in backends.BACKENDS.items():
        assert profile.fp4_quantize_latency_s == NVFP4_QUANTIZE_S[name]
        assert backend_constants(name).gemm_power_j_per_flop["fp4"] == 0.14e-12
    for framework in ("trtllm", "vllm", "sglang"):
        table = conditions.table_constants(framework)
        assert table.gemm_quantize_latency_s["fp4"] == TABLE_QUANTIZE_LATENCY_S[framework]["nvfp4"]
        assert table.gemm_power_j_per_flop["fp4"] == conditions.TABLE_NVFP4_CLOCK["power_j_per_flop"]
        assert table.gemm_k_step_cycles["fp4"] == conditions.TABLE_NVFP4_K_STEP_CYCLES[framework]


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
