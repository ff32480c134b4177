"""Decomposition checked against hand-computed FLOPs and bytes from published architecture numbers."""

from __future__ import annotations

import numpy as np
import pytest

import engine

# Llama-3.1-8B, from its model card / config.json (typed here, not read from the code)
H, INTER, LAYERS, QH, KVH, D, VOCAB = 4096, 14336, 32, 32, 8, 128, 128256


def by_name(table, phase=None):
    if phase is not None:
        table = table[table["phase"] == phase]
    return {row["name"]: row for _, row in table.iterrows()}


def test_llama8b_decode_step_is_weights_plus_kv_over_bandwidth(devices, llama8b):
    """Batch 1, context 1024 on H100-SXM: every weight streamed once (not the embedding table) + KV."""
    bf16, context = 2, 1024
    layer_weights = H * (QH * D) + 2 * H * (KVH * D) + (QH * D) * H + 3 * H * INTER + 2 * H
    streamed_weights = LAYERS * layer_weights + H + H * VOCAB          # + final norm + LM head
    kv_read = LAYERS * 2 * KVH * D * (context + 1) * bf16             # the step attends to 1025 tokens
    kv_store = LAYERS * 2 * KVH * D * (bf16 + bf16)                   # read new K,V; write them to the cache
    per_layer_activations = (2 * H + (H + (QH + 2 * KVH) * D) + 2 * (QH + KVH) * D + D + QH * D + QH * D
                             + 2 * H + 3 * H + 2 * H + 2 * (H + INTER) + 3 * INTER + (INTER + H) + 3 * H)
    activations = (LAYERS * per_layer_activations + H + 2 * H + H + VOCAB) * bf16   # embed out, final norm, head
    embedding_row = H * bf16
    total = streamed_weights * bf16 + kv_read + kv_store + activations + embedding_row
    result = engine.estimate(devices["H100-SXM"], llama8b, phase="decode", batch=1, context_length=context)
    assert result.tpot_s == pytest.approx(total / 3.35e12, rel=0.01)
    assert result.phases.loc["decode", "bytes"] == pytest.approx(total, rel=0.01)
    kernels = by_name(result.kernels)
    assert kernels["Embedding"]["weight_bytes"] == embedding_row     # looked up, not streamed
    assert kernels["LM_head"]["weight_bytes"] == H * VOCAB * bf16
    assert kernels["KVCache_Read"]["kv_bytes"] * LAYERS == kv_read


def test_prefill_gemm_macs_and_causal_attention(llama8b):
    tokens, batch = 1000, 2
    table = engine.decompose(llama8b, engine.Scenario(phase="prefill", input_length=tokens, batch=batch))
    rows = by_name(table)
    t = tokens * batch
    assert rows["Q/K/V*W"]["macs"] == t * H * (QH + 2 * KVH) * D
    assert rows["O*W"]["macs"] == t * QH * D * H
    assert rows["FFN_down"]["macs"] == t * INTER * H
    assert rows["LM_head"]["macs"] == batch * H * VOCAB                # logits for the last token only
    causal_pairs = tokens * (tokens + 1) / 2                            # not tokens**2
    assert rows["Q*gK"]["macs"] == batch * QH * D * causal_pairs
    assert rows["Q*gK*gV"]["macs"] == batch * QH * D * causal_pairs
    # GQA: each KV head serves a group of 4 query heads, folded into m
    assert (rows["Q*gK"]["m"], rows["Q*gK"]["k"], rows["Q*gK"]["n"], rows["Q*gK"]["batch"]) == (
        tokens * QH // KVH, D, tokens, batch * KVH)
    assert rows["Softmax"]["vector_flops"] == batch * QH * causal_pairs * 5


def test_prefill_total_macs_match_parameter_count(llama8b):
    """Linear-layer MACs per token = non-embedding matrix parameters (hand identity)."""
    tokens = 512
    table = engine.decompose(llama8b, engine.Scenario(phase="prefill", input_length=tokens))
    gemms = table[(table["op"] == "gemm") & (table["name"] != "LM_head")]
    matrix_params_per_layer = H * (QH + 2 * KVH) * D + QH * D * H + 3 * H * INTER
    assert (gemms["macs"] * gemms["count"]).sum() == tokens * LAYERS * matrix_params_per_layer


def test_request_counts_and_contexts(llama8b):
    s = engine.Scenario(phase="request", input_length=100, output_length=11, batch=3)
    table = engine.decompose(llama8b, s)
    decode = table[table["phase"] == "decode"]
    ffn = decode[decode["name"] == "FFN_up"]
    assert len(ffn) == 1 and ffn["count"].iloc[0] == LAYERS * 10          # 10 decode steps
    kv = decode[decode["name"] == "KVCache_Read"]
    assert list(kv["context"]) == list(range(101, 111))                   # context grows by one a step
    assert (kv["count"] == LAYERS).all()
    assert list(kv["kv_bytes"]) == [3 * c * 2 * KVH * D * 2 for c in range(101, 111)]


def test_request_equals_prefill_plus_each_decode_step(devices, llama8b):
    """The vectorised request sums to the separately estimated prefill and decode steps."""
    hw, s = devices["H100-SXM"], engine.Scenario(phase="request", input_length=64, output_length=9, batch=4)
    request = engine.estimate(hw, llama8b, s)
    prefill = engine.estimate(hw, llama8b, s.model_copy(update={"phase": "prefill"}))
    steps = [engine.estimate(hw, llama8b, phase="decode", batch=4, input_length=64, context_length=64 + j - 1).tpot_s
             for j in range(1, 9)]
    assert request.ttft_s == pytest.approx(prefill.ttft_s, rel=1e-12)
    assert request.phases.loc["decode", "time_s"] == pytest.approx(sum(steps), rel=1e-9)
    assert request.tpot_s == pytest.approx(np.mean(steps), rel=1e-9)
    assert request.e2e_s == pytest.approx(prefill.ttft_s + sum(steps), rel=1e-9)
    assert request.tokens_per_s == pytest.approx(4 * 9 / request.e2e_s)
    kernels = request.kernels
    assert (kernels["count"] * kernels["time_s"]).sum() == pytest.approx(request.total_time_s, rel=1e-12)


def test_chunked_mix_and_decode_context(llama8b):
    s = engine.Scenario(phase="chunked", input_length=8192, output_length=512, chunk_size=256)
    rows = by_name(engine.decompose(llama8b, s))
    decode_tokens = 256 * 512 // (8192 + 512)                            # 15
    assert rows["Q/K/V*W"]["m"] == 256
    assert rows["dQ*gK"]["n"] == 8192 + 256                             # the decode context, not head_dim*kv_heads
    assert rows["dQ*gK"]["macs"] == decode_tokens * QH * D * (8192 + 256)
    assert rows["dKVCache_Read"]["kv_bytes"] == decode_tokens * (8192 + 256) * 2 * KVH * D * 2
    assert rows["LM_head"]["m"] == decode_tokens + 1


def test_quantized_weights_halve_weight_bytes(llama8b):
    s16 = engine.Scenario(phase="decode", batch=1, weight_dtype="bf16")
    s8 = s16.model_copy(update={"weight_dtype": "fp8"})
    w16 = engine.decompose(llama8b, s16)
    w8 = engine.decompose(llama8b, s8)
    assert (w8["weight_bytes"] * 2 == w16["weight_bytes"]).all()
    assert (w8["activation_bytes"] == w16["activation_bytes"]).all()


def test_memory_footprint(devices, llama8b, llama70b):
    s = engine.Scenario(phase="request", input_length=1024, output_length=1024, batch=8)
    result = engine.estimate(devices["H100-SXM"], llama8b, s)
    memory = result.memory
    assert memory.weights_bytes == llama8b.params_total * 2
    assert memory.kv_cache_bytes == 8 * 2048 * (2 * LAYERS * KVH * D * 2)
    assert memory.fits
    per_sequence = (memory.kv_cache_bytes + memory.activation_bytes) / 8
    assert memory.workspace_bytes == 0.10 * 80e9                       # serving headroom (docs/methods.md)
    assert memory.max_batch == int((80e9 - memory.weights_bytes - 8e9) // per_sequence)
    big = engine.estimate(devices["H100-SXM"], llama70b, s).memory
    assert not big.fits and big.weights_bytes > 80e9 and big.max_batch == 0


def test_too_long_for_the_model_is_rejected(devices, llama8b):
    with pytest.raises(engine.ScenarioError, match="max_position_embeddings"):
        engine.estimate(devices["H100-SXM"], llama8b, phase="prefill", input_length=200_000)


@pytest.mark.parametrize("model_id", [
    "meta-llama/Llama-2-7b-hf", "meta-llama/Llama-3.1-70B", "mistralai/Mistral-7B-v0.1", "Qwen/Qwen2.5-7B",
    "openai-community/gpt2", "EleutherAI/pythia-1b", "facebook/opt-1.3b",
])
def test_decode_streams_every_parameter_but_the_embedding_table(model_id):
    """Weights read by one decode step = all parameters except the embedding tables, plus the
    LM head (which, when tied, is the embedding table read in full). Parameter counts are
    checked against published totals in test_models.py; this ties the kernel table to them."""
    model = engine.load_model(model_id)
    table = engine.decompose(model, engine.Scenario(phase="decode", batch=1, weight_dtype="bf16"))
    streamed = table[table["name"] != "Embedding"]
    lm_head_if_tied = model.hidden_size * model.vocab_size if model.tie_word_embeddings else 0
    expected = (model.params_total - model.params_embedding + lm_head_if_tied) * 2
    assert (streamed["weight_bytes"] * streamed["count"]).sum() == expected
