"""The request overhead's part per routed expert-layer (engine/serving/backends.py request_overhead): serve() adds
coefficient x (MoE layers x routed experts) to every request's TTFT and latency and nothing to TPOT; the validation
re-times it (with_overheads) as serve() does, and the fit (fit_overheads) recovers a planted coefficient. Oracles: the
models' layer and expert counts from their configs, and hand-planted synthetic measurements."""

import numpy as np
import pandas as pd
import pytest

import engine
from engine.serving import serve
from engine.serving.backends import BACKENDS, routed_expert_layers
from engine.serving.validation import _quantiles, backend_grids, fit_overheads, with_overheads

FIELDS = dict(concurrency=2, input_length=256, output_length=16, requests_per_client=3, backend="trtllm",
              arrival_jitter=0, benchmark_requests=None, iteration_overhead_s=0.0)


@pytest.fixture(scope="module")
def moe():
    from engine.models import load_model
    return engine.load_hardware("H100-SXM"), load_model("openai/gpt-oss-20b")


def test_routed_expert_layers_count_moe_layers_times_experts():
    from engine.models import load_model
    # DeepSeek-V3: 61 layers, the first 3 dense, 256 routed experts: 58 x 256; gpt-oss-20b: 24 MoE layers x 32 experts
    assert routed_expert_layers(load_model("deepseek-ai/DeepSeek-V3")) == 58 * 256 == 14848
    assert routed_expert_layers(load_model("openai/gpt-oss-20b")) == 24 * 32
    assert routed_expert_layers(load_model("meta-llama/Llama-3.1-8B")) == 0


def test_serve_adds_the_per_expert_layer_time_to_ttft_and_latency_only(moe):
    fixed = BACKENDS["trtllm"].request_overhead_s
    base = serve(*moe, **FIELDS, request_overhead_per_expert_layer_s=0.0)
    more = serve(*moe, **FIELDS, request_overhead_per_expert_layer_s=5e-6)
    added = 5e-6 * 24 * 32      # 3.84 ms
    assert base.options.request_overhead_s == pytest.approx(fixed)
    assert more.options.request_overhead_s == pytest.approx(fixed + added)
    assert (more.requests["ttft_s"] - base.requests["ttft_s"]).to_numpy() == pytest.approx(added)
    assert (more.requests["e2e_s"] - base.requests["e2e_s"]).to_numpy() == pytest.approx(added)
    assert more.tpot_s == pytest.approx(base.tpot_s, rel=1e-12)
    # a request overhead given in the options is the whole per-request time: nothing added to it
    given = serve(*moe, **FIELDS, request_overhead_s=0.05, request_overhead_per_expert_layer_s=5e-6)
    assert given.options.request_overhead_s == pytest.approx(0.05)
    # left to the backend: TensorRT-LLM's shipped part per expert-layer
    shipped = serve(*moe, **FIELDS)
    assert shipped.options.request_overhead_s == pytest.approx(
        fixed + BACKENDS["trtllm"].request_overhead_per_expert_layer_s * 768)
    assert BACKENDS["trtllm"].request_overhead_per_expert_layer_s > 0
    # the ideal methods add no host time
    assert serve(*moe, **FIELDS, method="roofline").options.request_overhead_s == 0.0


def test_validation_retiming_matches_serve(moe):
    base = serve(*moe, **FIELDS, request_overhead_per_expert_layer_s=0.0)
    more = serve(*moe, **FIELDS, request_overhead_per_expert_layer_s=8e-6)
    row = pd.DataFrame([{"ttft_s": base.ttft_s, "tpot_s": base.tpot_s, "iteration_overhead_s": 0.0,
                         "request_overhead_s": base.options.request_overhead_s, "first_token_iterations": 1.0,
                         "routed_expert_layers": 24 * 32, "request_overhead_per_expert_layer_s": 0.0}])
    retimed = with_overheads(row, 0.0, BACKENDS["trtllm"].request_overhead_s, per_expert_layer_s=8e-6).iloc[0]
    assert retimed["ttft_s"] == pytest.approx(more.ttft_s, rel=1e-9)
    assert retimed["tpot_s"] == pytest.approx(more.tpot_s, rel=1e-12)
    assert retimed["request_overhead_s"] == pytest.approx(more.options.request_overhead_s)


def test_fit_recovers_a_planted_per_expert_layer_time():
    # synthetic runs: TTFT measured = modelled (no request overhead) + 30 ms + 6 us x expert-layers; TPOT exact
    rng = np.random.default_rng(3)
    layers = np.repeat([0, 4608, 12032, 14848], 10)
    modelled = rng.uniform(0.02, 0.3, layers.size)
    frame = pd.DataFrame({"reason": "", "ttft_s": modelled, "tpot_s": 0.01, "measured_tpot_s": 0.01,
                          "measured_ttft_s": modelled + 0.030 + 6e-6 * layers, "routed_expert_layers": layers,
                          "iteration_overhead_s": 0.0, "request_overhead_s": 0.0, "graph_latency_overlap": 0.0,
                          "decode_kernel_latency_s": 0.0, "first_token_iterations": 1.0})
    iteration, request, overlap, per_request, share, scale, per_expert = fit_overheads(
        frame, per_request_grid=[0.0], wait_share_grid=[0.0], prefill_scale_grid=[1.0])
    assert (iteration, per_request, share, scale) == (0.0, 0.0, 0.0, 1.0)
    assert request == pytest.approx(0.030) and per_expert == pytest.approx(6e-6)
    # left out (a single 0): the request overhead alone absorbs what it can
    *_, alone = fit_overheads(frame, per_request_grid=[0.0], wait_share_grid=[0.0], prefill_scale_grid=[1.0],
                              expert_grid=[0.0])
    assert alone == 0.0


def test_only_the_listed_backends_fit_the_term():
    assert "expert_grid" not in backend_grids("trtllm", {})
    assert backend_grids("trtllm", {})["prefill_scale_grid"] == [1.0]
    assert "prefill_scale_grid" not in backend_grids("sglang", {})
    assert backend_grids("vllm", {})["expert_grid"] == [0.0]
    assert backend_grids("vllm", {"expert_grid": [1e-6]})["expert_grid"] == [1e-6]


def test_partial_sort_quantiles_equal_numpy():
    values = np.random.default_rng(0).normal(size=(7, 101))
    for n in (101, 10, 2, 1):
        got = _quantiles(values[:, :n], (0.5, 0.9))
        expected = np.quantile(values[:, :n], [0.5, 0.9], axis=1)
        assert np.allclose(got, expected, rtol=0, atol=1e-15)
