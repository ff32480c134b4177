"""engine/serving/validation_rate.py: the matrix rate a measured closed-loop run implies, by hand arithmetic."""

import pytest

from engine.serving.validation_rate import implied_matrix_rate, implied_peak_share, linear_params_per_token

# Llama-3.1-8B: 32 layers, hidden 4096, q 4096 + k, v 2 x 1024 (8 KV heads x 128), o 4096, SwiGLU 3 x 4096 x 14336
LLAMA_8B_LINEAR = 32 * (4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336)
LLAMA_8B_NORMS = 32 * 2 * 4096     # the two RMSNorm weights per layer, counted by params_active as well


@pytest.fixture(scope="module")
def llama(llama8b):
    return llama8b


def test_linear_params_are_the_layers_weights(llama):
    assert linear_params_per_token(llama) == LLAMA_8B_LINEAR + LLAMA_8B_NORMS


def test_rate_of_a_measured_h200_run(llama, devices):
    # aiconfigurator-core's silicon_sample.csv, vLLM 0.12.0 on H200, Llama-3.1-8B-Instruct-FP8, tp 1, 112 clients,
    # 1000-token prompts, 100 output tokens: TTFT 71.91 ms, TPOT 11.25 ms
    latency = 0.07191 + 99 * 0.01125                       # 1.18566 s per request
    by_hand = 112 / latency * 1100 * 2 * (LLAMA_8B_LINEAR + LLAMA_8B_NORMS)   # 1.4505e15 FLOP/s
    rate = implied_matrix_rate(llama, concurrency=112, input_length=1000, output_length=100, ttft_s=0.07191,
                               tpot_s=0.01125, devices=1)
    assert rate == pytest.approx(by_hand, rel=1e-12)
    assert rate == pytest.approx(1.4505e15, rel=1e-3)
    hardware = devices["H200-SXM"]
    share = implied_peak_share(llama, hardware, "fp8", concurrency=112, input_length=1000, output_length=100,
                               ttft_s=0.07191, tpot_s=0.01125, devices=1)
    assert share == pytest.approx(by_hand / hardware.matrix_flops_per_s("fp8"), rel=1e-12)
    assert share > 0.66    # above the 1.30 PFLOP/s (0.66 of the peak) its own GEMMs reach in the vLLM fp8 table


def test_devices_divide_the_rate(llama):
    run = dict(concurrency=48, input_length=4000, output_length=100, ttft_s=0.14568, tpot_s=0.00948)
    one_device = implied_matrix_rate(llama, **run, devices=1)
    assert implied_matrix_rate(llama, **run, devices=2) == pytest.approx(one_device / 2)


@pytest.mark.parametrize("field, value", [("ttft_s", 0.0), ("devices", 0)])
def test_bad_input_is_named(llama, field, value):
    run = dict(concurrency=1, input_length=10, output_length=1, ttft_s=0.1, tpot_s=0.01, devices=1)
    run[field] = value
    with pytest.raises(ValueError, match="TTFT|devices"):
        implied_matrix_rate(llama, **run)
