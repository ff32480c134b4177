"""Memory fit per device and the fewest devices that fit, against hand counts.

Parameter counts come from the published config.json values typed below; the workspace is the
engine's documented 10% of device memory; capacities are the datasheets' (H100-SXM 80 GB,
H200-SXM 141 GB).
"""

from __future__ import annotations

import pytest

import engine
from engine.results.memory import fewest_devices

WORKSPACE = 0.10


def llama_params(h, layers, qh, kvh, d, inter, vocab, tp=1):
    """(sharded, replicated) parameters of one tensor-parallel rank of a Llama (untied head)."""
    sharded = layers * (h * (qh + kvh + kvh) * d + qh * d * h + 3 * h * inter) + 2 * vocab * h
    replicated = layers * 2 * h + h
    return sharded / tp, replicated


L405 = dict(h=16384, layers=126, qh=128, kvh=8, d=128, inter=53248, vocab=128256)
L70 = dict(h=8192, layers=80, qh=64, kvh=8, d=128, inter=28672, vocab=128256)


def test_405b_in_bf16_does_not_fit_one_h100(devices):
    model = engine.load_model("meta-llama/Llama-3.1-405B")
    sharded, replicated = llama_params(**L405)
    assert sharded + replicated == 405_853_388_800                      # 405.85 B parameters
    result = engine.estimate(devices["H100-SXM"], model, phase="decode", batch=1, context_length=1024)
    memory = result.memory
    assert memory.weights_bytes == 2 * 405_853_388_800 and not memory.fits and memory.max_batch == 0
    assert memory.message == ("Does not fit on one device: meta-llama/Llama-3.1-405B in bf16 needs 812 GB of "
                              "weights and one H100-SXM holds 80 GB.")


def test_405b_in_fp8_fits_eight_h200(devices):
    """fp8 weights and KV cache, tp = 8 on one 8 x H200 node, 32 requests of 4096 + 1024 tokens."""
    model = engine.load_model("meta-llama/Llama-3.1-405B")
    scenario = engine.Scenario(phase="request", batch=32, input_length=4096, output_length=1024, tp=8,
                               weight_dtype="fp8", kv_dtype="fp8")
    memory = engine.estimate(devices["H200-SXM"], model, scenario).memory
    sharded, replicated = llama_params(**L405, tp=8)
    assert memory.weights_bytes == pytest.approx(sharded + replicated, rel=1e-12)             # 1 B each: ~50.7 GB
    kv = 32 * (4096 + 1024) * 126 * 2 * (8 // 8) * 128 * 1                                   # one K/V head per device
    assert memory.kv_cache_bytes == kv                                                       # 5.3 GB
    # largest kernel: the prefill's residual add over 32 x 4096 tokens x 16384, bf16: reads 2, writes 1
    # (larger than its SwiGLU over 53248 / 8 columns)
    activations = 32 * 4096 * 16384 * 3 * 2
    assert activations > 32 * 4096 * (53248 // 8) * 3 * 2
    assert memory.activation_bytes == activations                                            # 12.9 GB
    total = sharded + replicated + kv + activations + WORKSPACE * 141e9
    assert memory.total_bytes == pytest.approx(total, rel=1e-12) and total < 141e9 and memory.fits
    assert memory.message.startswith("Fits: ") and memory.message.endswith(f"is {memory.max_batch:,}.")


def _70b_on_h100_bytes(batch, tokens, tp):
    sharded, replicated = llama_params(**L70, tp=tp)
    weights = 2 * (sharded + replicated)
    kv = batch * tokens * 80 * 2 * (8 // tp) * 128 * 2
    prefill_tokens = batch * 1024
    activations = max(prefill_tokens * (28672 // tp) * 3 * 2,                  # SwiGLU: two in, one out
                      prefill_tokens * 8192 * 3 * 2,                           # residual add: two in, one out
                      prefill_tokens * (8192 + 28672 // tp) * 2)               # FFN_up in and out
    return weights + kv + activations + WORKSPACE * 80e9


@pytest.mark.parametrize("batch, output, expected_tp", [(1, 256, 2), (8, 1024, 4)])
def test_fewest_h100_for_llama70b_in_bf16(devices, llama70b, batch, output, expected_tp):
    """Weights alone (141 GB) need 2 devices; with KV, activations and 8 GB of workspace the small batch
    still fits 2 (78.9 GB), 8 requests of 2048 tokens need 4 (2 would hold 81.9 GB)."""
    tokens = 1024 + output
    by_hand = {tp: _70b_on_h100_bytes(batch, tokens, tp) for tp in (1, 2, 4)}
    assert by_hand[1] > 80e9
    assert (by_hand[2] <= 80e9) == (expected_tp == 2)
    assert by_hand[4] <= 80e9
    scenario = engine.Scenario(phase="request", batch=batch, input_length=1024, output_length=output)
    fit = fewest_devices(devices["H100-SXM"], llama70b, scenario)
    assert (fit.devices, fit.tp, fit.pp) == (expected_tp, expected_tp, 1)
    assert fit.memory.total_bytes == pytest.approx(by_hand[expected_tp], rel=1e-12)


def test_not_fitting_kv_names_the_parts_and_the_largest_batch(devices, llama70b):
    scenario = engine.Scenario(phase="request", batch=8, input_length=1024, output_length=1024, tp=2)
    memory = engine.estimate(devices["H100-SXM"], llama70b, scenario).memory
    assert not memory.fits and memory.weights_bytes < 80e9
    assert memory.message.startswith("Does not fit over TP 2: ") and "KV cache" in memory.message
    per_sequence = (memory.kv_cache_bytes + memory.activation_bytes) / 8
    assert memory.max_batch == int((80e9 - memory.weights_bytes - 8e9) // per_sequence)
    assert memory.message.endswith(f"The largest batch that fits is {memory.max_batch:,}.")
