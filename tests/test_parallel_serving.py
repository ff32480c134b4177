"""Serving: the chunked-prefill schedule of a batch of requests, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.decomposition.chunked import chunked_schedule


def test_a_small_schedule_by_hand():
    """2 requests of 300 prompt tokens and 3 output tokens, 256 tokens per iteration.

    it 0: 256 tokens of prompt 0                                     (no decode yet)
    it 1: prompt 0's last 44 + prompt 1's first 212 -> prompt 0 has its first token
    it 2: 1 decode (prompt 0, token 2) + prompt 1's last 88           -> prompt 1 has its first token
    it 3: 2 decodes (prompt 0 token 3: done; prompt 1 token 2)
    it 4: 1 decode (prompt 1 token 3: done)
    """
    plan = chunked_schedule(batch=2, input_length=300, output_length=3, chunk_size=256)
    assert list(plan.prefill_tokens) == [256, 256, 88, 0, 0]
    assert list(plan.decode_tokens) == [0, 0, 1, 2, 1]
    assert list(plan.first_token_iteration) == [1, 2]
    assert list(plan.completions) == [0, 1, 1, 0, 0]
    assert list(plan.prefill_sequences) == [1, 2, 1, 0, 0]
    # causal pairs: 256*257/2; prompt 0's 44 after 256 cached + prompt 1's 212; prompt 1's 88 after 212
    assert list(plan.prefill_pairs) == [256 * 257 / 2, 44 * 256 + 44 * 45 / 2 + 212 * 213 / 2, 88 * 212 + 88 * 89 / 2,
                                        0, 0]
    assert list(plan.prefill_cache_tokens) == [0, 300, 300, 0, 0]          # continuing prompts re-read their K/V
    # a decode of token j+1 attends to 300 + j tokens
    assert list(plan.decode_context_sum) == [0, 0, 301, 302 + 301, 302]
    assert list(plan.logit_rows) == [0, 1, 2, 2, 1]


@pytest.mark.parametrize("batch, prompt, output, chunk", [(8, 1000, 100, 512), (3, 70, 9, 64), (16, 4096, 1, 2048),
                                                          (5, 333, 40, 5)])
def test_every_token_is_scheduled_once(batch, prompt, output, chunk):
    plan = chunked_schedule(batch, prompt, output, chunk)
    assert plan.prefill_tokens.sum() == batch * prompt
    assert plan.decode_tokens.sum() == batch * (output - 1)
    assert plan.logit_rows.sum() == batch * output                 # one sampled token per output token
    assert (plan.tokens <= chunk).all() and (plan.tokens > 0).all()
    assert plan.prefill_pairs.sum() == batch * prompt * (prompt + 1) / 2
    # decode tokens at iteration i: requests with c_r < i <= c_r + output - 1 (recounted directly)
    c = plan.first_token_iteration
    i = np.arange(plan.iterations)[:, None]
    assert (plan.decode_tokens == ((c < i) & (i <= c + output - 1)).sum(axis=1)).all()


def test_chunked_request_has_the_flops_of_prefill_plus_decode(devices, llama8b):
    """Causal attention over chunks: a chunk of q tokens after p scores q p + q(q+1)/2 pairs, which sums
    over a prompt's chunks to I(I+1)/2, the unchunked prefill's pairs: the difference is 0 by hand.
    Linear layers see the same tokens, the LM head the same rows: the FLOPs agree exactly."""
    base = engine.Scenario(phase="request", batch=8, input_length=1000, output_length=100, chunk_size=512)
    chunked = engine.estimate(devices["H100-SXM"], llama8b, base.model_copy(update={"chunked_prefill": True}))
    plain = engine.estimate(devices["H100-SXM"], llama8b, base)
    plain_flops = plain.phases.loc["prefill", "flops"] + plain.phases.loc["decode", "flops"]
    assert chunked.phases.loc["chunked", "flops"] == pytest.approx(plain_flops, rel=1e-12)
    assert list(chunked.phases.index) == ["chunked"]


@pytest.mark.parametrize("method", ["roofline", "realistic"])
def test_serving_metrics_follow_the_iterations(devices, llama8b, method):
    scenario = engine.Scenario(phase="request", batch=4, input_length=600, output_length=20, chunk_size=256,
                               chunked_prefill=True)
    result = engine.estimate(devices["H100-SXM"], llama8b, scenario, method=method)
    iterations, requests = result.iterations, result.requests
    assert iterations["time_s"].sum() == pytest.approx(result.phases.loc["chunked", "time_s"], rel=1e-12)
    ends = iterations["end_s"].to_numpy()
    c = requests["first_token_iteration"].to_numpy()
    np.testing.assert_allclose(requests["ttft_s"], ends[c])
    np.testing.assert_allclose(requests["e2e_s"], ends[c + 19])
    np.testing.assert_allclose(requests["tpot_s"], (ends[c + 19] - ends[c]) / 19)
    assert result.ttft_s == pytest.approx(ends[c].mean())
    assert result.e2e_s == pytest.approx(ends[-1])
    assert result.tokens_per_s == pytest.approx(4 * 20 / ends[-1])
    assert requests["ttft_s"].is_monotonic_increasing                       # first come, first served
    summary = result.to_dict()["schedule"]
    assert summary["prefill_tokens"] == 4 * 600 and summary["decode_tokens"] == 4 * 19


def test_chunked_prefill_needs_room_for_every_running_request():
    with pytest.raises(ValueError, match="chunk_size"):
        engine.Scenario(phase="request", batch=64, chunk_size=32, chunked_prefill=True)
    with pytest.raises(ValueError, match="request"):
        engine.Scenario(phase="decode", chunked_prefill=True)


def test_a_pipelined_schedule_waits_for_every_stage(devices, llama8b):
    """Each iteration passes both stages in turn: its time is twice its per-layer work plus the
    per-pass kernels and one hop, and the iterations still add up to the phase (bubble included)."""
    scenario = engine.Scenario(phase="request", batch=4, input_length=600, output_length=20, chunk_size=256,
                               chunked_prefill=True, pp=2)
    result = engine.estimate(devices["H100-SXM"], llama8b, scenario)
    assert result.iterations["time_s"].sum() == pytest.approx(result.phases.loc["chunked", "time_s"], rel=1e-12)
    single = engine.estimate(devices["H100-SXM"], llama8b, scenario.model_copy(update={"pp": 1}))
    hops = result.kernels.set_index("name").loc["SendRecv_stage"]
    # same layers in sequence, plus one send per iteration (count x time = iterations x 1/2 x hop)
    assert result.e2e_s == pytest.approx(single.e2e_s + 2 * hops["count"] * hops["time_s"], rel=1e-9)
