"""KV-cache admission by engine (engine/serving/scheduler.py `kv_bytes_admitted`, engine/serving/backends.py
`kv_admitted_output_share`): TensorRT-LLM reserves a request's whole sequence at admission, vLLM allocates blocks as
tokens are generated, so in a steady state a request counts its prompt and half its output; checked by hand on small
schedules and through serve() (KV-bound runs admit more requests at once under vLLM's share), and read in the
vLLM attention-DP recording (engine/serving/validation_express.py attention_dp_reading)."""

import numpy as np
import pandas as pd
import pytest

import engine
from engine.serving import ServingCapacityError, schedule, serve
from engine.serving.backends import BACKENDS, admitted_tokens
from engine.serving.validation_express import attention_dp_reading


def test_admission_counts_the_admitted_bytes_by_hand():
    # 3 clients, prompts of 8, outputs of 5; the cache holds 30 bytes; a whole sequence is 13 bytes
    whole = dict(concurrency=3, token_budget=64, max_batch=8, kv_capacity_bytes=30.0,
                 kv_bytes_per_request=np.full(6, 13.0))
    reserved = schedule(np.full(6, 8), np.full(6, 5), **whole)
    # whole sequences: two fit (26 <= 30), the third waits for the first to finish
    r = reserved.requests
    assert r["first_token_iteration"][:2].tolist() == [0, 0]
    assert r["first_token_iteration"][2] == r["finish_iteration"][0] + 1
    assert reserved.peak_kv_bytes == 26.0
    # prompt + half the output (8 + 3 = 11 bytes): all three fit at once (33 > 30 would not; 3 x 10 = 30 does)
    lazy = schedule(np.full(6, 8), np.full(6, 5), **whole, kv_bytes_admitted=np.full(6, 10.0))
    assert lazy.requests["first_token_iteration"][:3].tolist() == [0, 0, 0]
    assert lazy.peak_kv_bytes == 30.0
    # a request must still fit whole on its own, whatever it counts at admission
    with pytest.raises(ServingCapacityError, match="KV cache"):
        schedule(np.full(2, 8), np.full(2, 5), 1, 64, 8, kv_capacity_bytes=12.0, kv_bytes_per_request=np.full(2, 13.0),
                 kv_bytes_admitted=np.full(2, 5.0))


def test_admitted_tokens_by_hand():
    assert admitted_tokens([1000, 8], [1000, 5], 0.5).tolist() == [1500, 11]
    assert admitted_tokens([1000], [1000], 1.0).tolist() == [2000]
    assert BACKENDS["vllm"].kv_admitted_output_share == 0.5
    assert BACKENDS["sglang"].kv_admitted_output_share == 0.5
    assert BACKENDS["trtllm"].kv_admitted_output_share == 1.0


@pytest.fixture(scope="module")
def kv_bound():
    """Llama-3.1-8B in bf16 on one H100 at 96 clients of 4k + 4k tokens (about 1 GB of KV cache each: the cache holds
    fewer than 96 whole sequences)."""
    from engine.models import load_model
    hardware, model = engine.load_hardware("H100-SXM"), load_model("meta-llama/Llama-3.1-8B")
    fields = dict(concurrency=96, input_length=4096, output_length=4096, requests_per_client=3, backend="vllm",
                  arrival_jitter=0)
    return hardware, model, fields


def test_vllm_admits_more_of_a_kv_bound_run(kv_bound):
    hardware, model, fields = kv_bound
    whole = serve(hardware, model, **fields, kv_admitted_output_share=1.0)
    lazy = serve(hardware, model, **fields)          # vLLM's 0.5
    assert lazy.options.kv_admitted_output_share == 0.5
    per_token = model.kv_cache_bytes_per_token("bf16")
    capacity = whole.kv_capacity_bytes
    # the cache holds floor(capacity / (prompt + output)) whole sequences, floor(capacity / (prompt + output / 2))
    # lazily allocated ones
    expected = [int(capacity // (per_token * 8192)), int(capacity // (per_token * 6144))]
    assert expected[0] < expected[1] < 96
    running = [int(result.schedules[0][1].decoding_requests().max()) for result in (whole, lazy)]
    assert running == expected
    # more requests decode at once: more tokens/s, and less queueing before the first token
    assert lazy.tokens_per_s > whole.tokens_per_s
    assert lazy.ttft_s < whole.ttft_s


def test_the_vllm_attention_dp_recording_is_one_tensor_parallel_group():
    def run(backend, tp, dp, moe_ep, concurrency, batch):
        return next(pd.DataFrame([dict(backend=backend, concurrency=concurrency, max_batch=batch, moe_tp=1,
                                       moe_ep=moe_ep)]).itertuples(index=False))
    # vLLM, tp 4, attention_dp 4, moe_ep 16 = tp squared: one group of 4 devices holding every client
    assert attention_dp_reading(run("vllm", 4, 4, 16, 64, 16), 4, 4, 16) == (4, 1, 4)
    # the same recording from another engine keeps aiconfigurator's tp x attention_dp devices
    assert attention_dp_reading(run("trtllm", 4, 4, 16, 64, 16), 4, 4, 16) == (4, 4, 16)
    # vLLM with an expert group that is not tp squared: as written
    assert attention_dp_reading(run("vllm", 2, 2, 8, 16, 8), 2, 2, 8) == (2, 2, 8)
