"""Weight-only GEMMs in `realistic` (engine/estimators/weight_only.py): a Llama-3.1-8B decode step with int4 weights
and bf16 activations on A100 against hand arithmetic from the shipped constants and the workbook's fields; a lower
bound only (never faster than the GEMM timing without it); every other GEMM (bf16, fp8, W8A16 fp8, the checkpoint's
unquantized modules, MoE experts) unchanged; the validity note in the estimate, its JSON, serve() and the CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

import engine
from engine.estimators import cached_decomposition
from engine.estimators.realistic import estimate_realistic
from engine.models import load_model
from tests.conftest import REPO

# the shipped int4 constants, written out (engine/estimators/weight_only.SHIPPED["int4"]: A100 TensorRT-LLM, all m)
LATENCY_CYCLES, STREAM_FRACTION, DEQUANT_FLOPS, K_CYCLES = 15500.0, 1.0, 2.5, 3.0
INT4_G128_BYTES = 0.5 + 2 / 128          # int4 values and one bf16 scale per 128 weights: 0.515625 B per weight


@pytest.fixture(scope="module")
def a100(devices):
    return devices["A100-80GB-SXM"]


@pytest.fixture(scope="module")
def h100(devices):
    return devices["H100-SXM"]


def decode(batch: int, weight: str = "int4_g128", activation: str = "bf16", **fields) -> engine.Scenario:
    return engine.Scenario(phase="decode", batch=batch, context_length=1000, weight_dtype=weight,
                           activation_dtype=activation, **fields)


def kernel_time(result, name: str) -> float:
    rows = result.kernels[result.kernels["name"] == name]
    assert len(rows) == 1
    return float(rows["kernel_time_s"].iloc[0])


def by_hand(m: int, n: int, k: int, hardware) -> float:
    """latency cycles / clock + max(bytes / (HBM x stream fraction), k loop) + dequantization on the vector units."""
    assert (hardware.clock_hz, hardware.memory_bandwidth_bytes_per_s, hardware.num_cores,
            hardware.vector_flops_per_cycle_per_core) == (1.41e9, 2.039e12, 108, 128.0)
    nbytes = n * k * INT4_G128_BYTES + (m * k + m * n) * 2           # packed weights + bf16 activation in and out
    latency = LATENCY_CYCLES / 1.41e9
    stream = nbytes / (2.039e12 * STREAM_FRACTION)
    k_loop = K_CYCLES * k / 1.41e9
    dequant = DEQUANT_FLOPS * n * k * math.ceil(m / 16) / (128 * 108 * 1.41e9)
    return latency + max(stream, k_loop) + dequant


def without_the_term(hardware, model, scenario):
    """realistic on the same kernel table without the scenario (so without the weight-only term)."""
    return estimate_realistic(cached_decomposition(model, scenario), hardware, None)


def with_the_scenario(hardware, model, scenario):
    return estimate_realistic(cached_decomposition(model, scenario), hardware, scenario)


@pytest.mark.parametrize("batch", [1, 16])
def test_a_decode_steps_int4_gemms_on_a100_by_hand(a100, llama8b, batch):
    scenario = decode(batch)
    result = engine.estimate(a100, llama8b, scenario, method="realistic")
    before = without_the_term(a100, llama8b, scenario)
    before = dict(zip(np.asarray(before["name"]).astype(str), before["kernel_time_s"]))
    # FFN_up: 4096 -> 14,336, bound by the weight stream (30.3 MB at 2.039 TB/s: 14.9 us; k loop 8.7 us)
    up = by_hand(batch, 14336, 4096, a100)
    assert 33.0e-6 < up < 34.0e-6        # 11.0 latency + 14.9 stream + 7.6 dequantization (us)
    assert kernel_time(result, "FFN_up") == pytest.approx(max(up, before["FFN_up"]), rel=1e-12)
    # FFN_down: 14,336 -> 4096, bound by the serial k loop (3 cycles x 14,336 at 1.41 GHz: 30.5 us)
    down = by_hand(batch, 4096, 14336, a100)
    assert 49.0e-6 < down < 49.2e-6
    assert kernel_time(result, "FFN_down") == pytest.approx(down, rel=1e-12)
    assert down > before["FFN_down"]
    if batch == 1:       # one row: the term is above the tiled timing of every weight GEMM
        assert up > before["FFN_up"] and kernel_time(result, "FFN_up") == pytest.approx(up, rel=1e-12)
    else:                # 16 rows: the tiled timing of FFN_up (~40 us) is above the term already
        assert before["FFN_up"] > up


def test_seventeen_rows_take_two_dequantization_passes(a100, llama8b):
    result = engine.estimate(a100, llama8b, decode(17), method="realistic")
    assert kernel_time(result, "FFN_down") == pytest.approx(by_hand(17, 4096, 14336, a100), rel=1e-12)
    assert by_hand(17, 4096, 14336, a100) - by_hand(16, 4096, 14336, a100) > 7.5e-6      # one more 7.55 us pass


@pytest.mark.parametrize("weight", ["int4", "int4_g128", "int8", "int8_g64"])
@pytest.mark.parametrize("batch", [1, 16, 512])
def test_weight_only_is_a_lower_bound(a100, llama8b, weight, batch):
    scenario = decode(batch, weight)
    before, after = without_the_term(a100, llama8b, scenario), with_the_scenario(a100, llama8b, scenario)
    gemm = np.asarray(before["op"]) == "gemm"
    weights = before["weight_bytes"] > 0
    assert np.all(after["kernel_time_s"] >= before["kernel_time_s"])
    assert np.array_equal(after["kernel_time_s"][~(gemm & weights)], before["kernel_time_s"][~(gemm & weights)])
    if batch == 1:        # one row: every layer's weight GEMM is slower than the bf16-style timing said
        layer = gemm & weights & (np.asarray(before["name"]).astype(str) != "LM_head")   # (a 0.5 GB int8 LM head
        assert layer.sum() == 5                                                    # streams as fast either way)
        assert np.all(after["kernel_time_s"][layer] > before["kernel_time_s"][layer])


@pytest.mark.parametrize("weight, activation", [("bf16", "bf16"), ("fp8", "fp8"), ("fp8", "bf16"), ("int8", "int8"),
                                                ("int4_g128", "fp8"), ("nvfp4", "nvfp4")])
def test_other_gemms_are_unchanged(devices, llama8b, weight, activation):
    for device in ("A100-80GB-SXM", "H100-SXM", "B200"):
        scenario = decode(4, weight, activation)
        before = without_the_term(devices[device], llama8b, scenario)
        after = with_the_scenario(devices[device], llama8b, scenario)
        for column in ("kernel_time_s", "time_s", "gap_efficiency_s"):
            assert np.array_equal(after[column], before[column]), (device, column)


def test_the_checkpoints_unquantized_modules_keep_their_timing(a100, llama8b):
    scenario = decode(1, unquantized_modules=("attention",))
    before, after = without_the_term(a100, llama8b, scenario), with_the_scenario(a100, llama8b, scenario)
    names = np.asarray(before["name"]).astype(str)
    attention = np.isin(names, ["Q/K/V*W", "O*W"])
    mlp = np.isin(names, ["FFN_up", "FFN_gate", "FFN_down"])
    assert attention.sum() == 2 and mlp.sum() == 3
    assert np.array_equal(after["kernel_time_s"][attention], before["kernel_time_s"][attention])
    assert np.all(after["kernel_time_s"][mlp] > before["kernel_time_s"][mlp])


def test_moe_experts_keep_their_own_timing(devices):
    mixtral = load_model("mistralai/Mixtral-8x7B-v0.1")
    h100 = devices["H100-SXM"]
    scenario = decode(4, "int4_g128")
    before, after = without_the_term(h100, mixtral, scenario), with_the_scenario(h100, mixtral, scenario)
    names = np.asarray(before["name"]).astype(str)
    experts = np.char.find(names, "Expert_") >= 0
    assert experts.any()
    assert np.array_equal(after["kernel_time_s"][experts], before["kernel_time_s"][experts])
    projections = names == "Q/K/V*W"
    assert np.all(after["kernel_time_s"][projections] > before["kernel_time_s"][projections])


def test_weight_only_estimates_say_how_they_are_calibrated(a100, h100, llama8b):
    for hardware in (a100, h100):
        result = engine.estimate(hardware, llama8b, decode(1, "int8"), method="realistic")
        notes = [note for note in result.notes if "weight-only int8 GEMMs" in note]
        assert len(notes) == 1 and "in-sample on one device per format" in notes[0]
        assert "not cross-validated across devices" in notes[0]
        validation = result.to_dict()["realistic_validation"]
        assert validation["validated"] is True and validation["weight_only"] == notes[0]
    plain = engine.estimate(a100, llama8b, decode(1, "bf16"), method="realistic")
    assert "weight_only" not in plain.to_dict()["realistic_validation"]
    assert not any("weight-only" in note and "calibrated" in note for note in plain.notes)
    roofline = engine.estimate(a100, llama8b, decode(1, "int8"), method="roofline")
    assert roofline.to_dict()["realistic_validation"] is None


def test_serving_carries_the_note(a100, llama8b):
    result = engine.serve(a100, llama8b, concurrency=2, input_length=64, output_length=8, weight_dtype="int4_g128",
                          activation_dtype="bf16")
    assert any("weight-only int4_g128 GEMMs" in note for note in result.notes)
    assert "weight_only" in result.to_dict()["realistic_validation"]


def test_the_cli_json_carries_the_note():
    done = subprocess.run([sys.executable, "-m", "engine.cli.entry", "estimate", "--hardware", "A100-80GB-SXM",
                           "--model", "meta-llama/Llama-3.1-8B", "--phase", "decode", "--batch", "1",
                           "--weight-dtype", "int4_g128", "--act-dtype", "bf16", "--method", "realistic", "--json"],
                          capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert "not cross-validated across devices" in out["realistic_validation"]["weight_only"]
    assert any("weight-only int4_g128 GEMMs" in note for note in out["notes"])
