"""Model coverage of the hand decomposition: multi-head latent attention, sliding-window and alternating
attention, attention sinks, QK-norm, Gemma's extra norms, and skewed MoE routing, checked by hand.

Shapes typed from the official config.json files (and checked against the loaded ModelConfig):
- DeepSeek-V3: hidden 7168, 61 layers (3 dense + 58 MoE), 128 heads, q_lora_rank 1536, kv_lora_rank 512,
  qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, 256 routed experts (top-8) of 2048, 1 shared.
- gpt-oss-20b: hidden 2880, 24 layers alternating sliding (window 128) / full, 64 query / 8 K/V heads of 64,
  attention sinks, 32 experts (top-4).
- gemma-2-9b: 42 layers alternating sliding (4096) / full, 16 / 8 heads of 256, 4 norms per layer,
  attention logit soft-capping 50, final logit soft-capping 30.
- gemma-3-27b-pt: 62 layers, 5 sliding (1024) : 1 full, 32 / 16 heads of 128, QK-norm, 4 norms per layer.
- Mixtral-8x7B: 8 experts, top-2.
"""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.kernels.attention_window import causal_pairs, prefix_pairs
from engine.decomposition.moe import expected_active_experts, routing_probabilities
from engine.models import catalog_ids
from engine.workload.parallel import ParallelismError
from engine.decomposition.chunked import chunked_schedule


def rows_of(table):
    return table.set_index("name")


def total(table, column):
    return float((table[column] * table["count"]).sum())


@pytest.fixture(scope="module")
def deepseek():
    model = engine.load_model("deepseek-ai/DeepSeek-V3")
    assert (model.hidden_size, model.num_layers, model.num_attention_heads, model.q_lora_rank, model.kv_lora_rank,
            model.qk_nope_head_dim, model.qk_rope_head_dim, model.v_head_dim) == (7168, 61, 128, 1536, 512, 128, 64,
                                                                                   128)
    return model


@pytest.fixture(scope="module")
def gpt_oss():
    model = engine.load_model("openai/gpt-oss-20b")
    assert (model.num_layers, model.num_attention_heads, model.num_key_value_heads, model.head_dim,
            model.sliding_window, model.num_sliding_layers, model.attention_sinks) == (24, 64, 8, 64, 128, 12, True)
    return model


# ------------------------------------------------------------------------------ multi-head latent attention

H, RANK, NOPE, ROPE, VALUE, HIDDEN, Q_RANK = 128, 512, 128, 64, 128, 7168, 1536


def test_mla_compressed_kv_cache_per_token_per_layer(deepseek):
    """The cache holds the latent plus the shared rotary key: (512 + 64) values per token per layer."""
    context = 1000
    for kv_dtype, value_bytes in (("bf16", 2), ("fp8", 1)):
        rows = rows_of(engine.decompose(deepseek, engine.Scenario(phase="decode", batch=1, context_length=context,
                                                                  kv_dtype=kv_dtype)))
        assert rows.loc["KVCache_Store", "kv_bytes"] == (512 + 64) * value_bytes
        assert rows.loc["KVCache_Store", "count"] == 61
        assert rows.loc["KVCache_Read", "kv_bytes"] == (context + 1) * (512 + 64) * value_bytes
        assert rows.loc["KVCache_Read", "count"] == 61
        # what the footprint holds for the sequence after the step
        assert 61 * rows.loc["KVCache_Read", "kv_bytes"] == deepseek.kv_cache_bytes(context + 1, kv_dtype)


def test_mla_decode_runs_the_absorbed_form(deepseek):
    """Decode attends over the latent: per head and context token r + d_r = 576 MACs for the scores and
    r = 512 for the values; W_UK and W_UV are per-head GEMMs on the query and the output."""
    context, batch = 4095, 3
    rows = rows_of(engine.decompose(deepseek, engine.Scenario(phase="decode", batch=batch, context_length=context)))
    keys = context + 1
    assert rows.loc["Q*gK", "macs"] == batch * H * (RANK + ROPE) * keys
    assert rows.loc["Q*gK*gV", "macs"] == batch * H * RANK * keys
    assert (rows.loc["Q*gK", "m"], rows.loc["Q*gK", "k"], rows.loc["Q*gK", "n"], rows.loc["Q*gK", "batch"]) == \
        (H, RANK + ROPE, keys, batch)                       # MQA-like: all 128 heads share the one latent
    assert rows.loc["Q*W_UK", "macs"] == batch * H * NOPE * RANK
    assert rows.loc["O*W_UV", "macs"] == batch * H * RANK * VALUE
    assert (rows.loc["Q*W_UK", "batch"], rows.loc["O*W_UV", "batch"]) == (H, H)
    # the two halves of kv_b_proj together: every kv_b_proj weight read once
    assert rows.loc["Q*W_UK", "weight_bytes"] + rows.loc["O*W_UV", "weight_bytes"] == RANK * H * (NOPE + VALUE) * 2
    assert "KV_b*W" not in rows.index                       # no decompression of the cached latent
    assert rows.loc["Softmax", "vector_flops"] == 5 * batch * H * keys


def test_mla_naive_decode_expands_the_cached_latent_every_step(deepseek):
    """mla_decode="naive" (as transformers decodes): every step, KV_b*W decompresses the latent of the whole
    context (c cached + 1 new tokens): (c + 1) x r x H x (d_n + d_v) MACs per layer and sequence, beyond
    the absorbed form's per-token W_UK / W_UV; then MHA over the decompressed K/V (d_n + d_r score channels,
    d_v value channels per head). The cache still holds only the latent, and the weights read are the same."""
    context, batch = 4095, 3
    scenario = engine.Scenario(phase="decode", batch=batch, context_length=context)
    absorbed = rows_of(engine.decompose(deepseek, scenario))
    naive = rows_of(engine.decompose(deepseek, scenario.model_copy(update={"mla_decode": "naive"})))
    keys = context + 1
    expand = keys * RANK * H * (NOPE + VALUE)                       # 4096 x 512 x 128 x 256 = 68,719,476,736
    assert expand == 68_719_476_736
    assert naive.loc["KV_b*W", "macs"] == batch * expand
    assert (naive.loc["KV_b*W", "m"], naive.loc["KV_b*W", "k"], naive.loc["KV_b*W", "n"]) == \
        (batch * keys, RANK, H * (NOPE + VALUE))
    assert naive.loc["KV_b*W", "count"] == 61
    assert naive.loc["Q*gK", "macs"] == batch * H * (NOPE + ROPE) * keys
    assert naive.loc["Q*gK*gV", "macs"] == batch * H * VALUE * keys
    assert "Q*W_UK" not in naive.index and "O*W_UV" not in naive.index
    # the attention block's MACs per layer: the naive form minus the absorbed form, by hand
    attention = ["KV_b*W", "Q*W_UK", "O*W_UV", "Q*gK", "Q*gK*gV"]
    per_layer = {name: rows.reindex(attention)["macs"].fillna(0).sum() for name, rows in
                 (("naive", naive), ("absorbed", absorbed))}
    by_hand = batch * (expand + H * (NOPE + ROPE + VALUE) * keys
                       - H * NOPE * RANK - H * RANK * VALUE - H * (2 * RANK + ROPE) * keys)
    assert per_layer["naive"] - per_layer["absorbed"] == by_hand
    # the same compressed cache and the same weights (kv_b_proj once, whole or as its two halves)
    for name in ("KVCache_Store", "KVCache_Read"):
        assert naive.loc[name, "kv_bytes"] == absorbed.loc[name, "kv_bytes"]
    assert naive.loc["KV_b*W", "weight_bytes"] == absorbed.loc["Q*W_UK", "weight_bytes"] + \
        absorbed.loc["O*W_UV", "weight_bytes"]
    assert total(engine.decompose(deepseek, scenario.model_copy(update={"mla_decode": "naive"})), "weight_bytes") == \
        total(engine.decompose(deepseek, scenario), "weight_bytes")
    # prompts are naive in either setting
    prefill = engine.Scenario(phase="prefill", batch=2, input_length=256)
    assert engine.decompose(deepseek, prefill).equals(
        engine.decompose(deepseek, prefill.model_copy(update={"mla_decode": "naive"})))


def test_mla_decode_form_is_validated():
    with pytest.raises(ValueError, match="mla_decode"):
        engine.Scenario(mla_decode="fused")


def test_mla_prefill_runs_the_naive_form(deepseek):
    """A prompt decompresses its latent (KV_b*W) and attends as MHA: 192-channel scores, 128-channel values."""
    tokens = 1024
    rows = rows_of(engine.decompose(deepseek, engine.Scenario(phase="prefill", batch=2, input_length=tokens)))
    pairs = tokens * (tokens + 1) / 2
    assert (rows.loc["KV_b*W", "m"], rows.loc["KV_b*W", "k"], rows.loc["KV_b*W", "n"]) == \
        (2 * tokens, RANK, H * (NOPE + VALUE))
    assert rows.loc["Q*gK", "macs"] == 2 * H * (NOPE + ROPE) * pairs
    assert rows.loc["Q*gK*gV", "macs"] == 2 * H * VALUE * pairs
    assert (rows.loc["Q_b*W", "k"], rows.loc["Q_b*W", "n"]) == (Q_RANK, H * 192)
    assert (rows.loc["QKV_a*W", "k"], rows.loc["QKV_a*W", "n"]) == (HIDDEN, Q_RANK + RANK + ROPE)  # q_a and kv_a fused
    assert (rows.loc["O*W", "k"], rows.loc["O*W", "n"]) == (H * VALUE, HIDDEN)
    assert rows.loc["Rotary", "n"] == (H + 1) * ROPE          # query rope parts and the one shared rope key
    assert rows.loc["Norm_q_a", "weight_bytes"] == Q_RANK * 2 and rows.loc["Norm_kv_a", "weight_bytes"] == RANK * 2
    assert "Q*W_UK" not in rows.index and "KVCache_Read" not in rows.index


def test_mla_decode_streams_the_active_parameters(deepseek):
    """One decode step of one sequence reads every weight a token uses once: params_active without the
    embedding table (DeepSeek's own convention, 36.6B of "37B"; docs/models.md), 8 of 256 experts."""
    table = engine.decompose(deepseek, engine.Scenario(phase="decode", batch=1, context_length=100))
    streamed = table[table["name"] != "Embedding"]
    assert total(streamed, "weight_bytes") == pytest.approx(deepseek.params_active_excluding_embedding * 2, rel=1e-12)
    assert deepseek.params_active_excluding_embedding == 36_625_618_432


def test_mla_tensor_parallelism_splits_heads(deepseek):
    one = rows_of(engine.decompose(deepseek, engine.Scenario(phase="decode", batch=2, context_length=511)))
    tp8 = rows_of(engine.decompose(deepseek, engine.Scenario(phase="decode", batch=2, context_length=511, tp=8)))
    heads = H // 8
    assert tp8.loc["Q_b*W", "n"] == heads * (NOPE + ROPE)
    assert tp8.loc["Q*W_UK", "batch"] == heads and tp8.loc["O*W_UV", "batch"] == heads
    assert tp8.loc["O*W", "k"] == heads * VALUE
    assert tp8.loc["Q*gK", "macs"] == one.loc["Q*gK", "macs"] / 8
    # the low-rank "a" projections and the latent cache are replicated on every device
    for name in ("QKV_a*W", "KVCache_Store", "KVCache_Read"):
        assert tp8.loc[name, "weight_bytes"] == one.loc[name, "weight_bytes"]
        assert tp8.loc[name, "kv_bytes"] == one.loc[name, "kv_bytes"]
    with pytest.raises(ParallelismError, match="num_attention_heads=128"):
        engine.decompose(deepseek, engine.Scenario(phase="decode", tp=3))


def test_mla_chunk_mixes_both_forms(deepseek):
    """A chunk's prompt part decompresses (pKV_b*W over its new tokens plus the cached ones it reads
    back), its decode part attends over the latent (dQ*W_UK, dO*W_UV)."""
    scenario = engine.Scenario(phase="chunked", chunk_size=256, input_length=2048, output_length=2048,
                               context_length=3000)
    rows = rows_of(engine.decompose(deepseek, scenario))
    prefill_tokens, decode_tokens = scenario.chunk_mix()
    prior = (2048 - prefill_tokens) // 2
    assert rows.loc["pKV_b*W", "m"] == prior + prefill_tokens
    assert rows.loc["pKVCache_Read", "kv_bytes"] == (prior + prefill_tokens) * 576 * 2
    assert rows.loc["dQ*W_UK", "m"] == decode_tokens
    assert rows.loc["dQ*gK", "macs"] == decode_tokens * H * 576 * 3000


# ------------------------------------------------------------------------------ sliding windows

def test_window_pairs_by_hand():
    # 512 queries, window 128: the first 128 see 1..128 keys, the other 384 see 128 each
    assert prefix_pairs(512, 128) == 128 * 129 / 2 + 384 * 128
    assert causal_pairs(512, 0, 128) == 128 * 129 / 2 + 384 * 128
    assert causal_pairs(1, 999, 128) == 128 and causal_pairs(1, 50, 128) == 51
    assert causal_pairs(10, 100, 128) == sum(min(100 + i, 128) for i in range(1, 11))
    assert causal_pairs(10, 100, None) == 10 * 100 + 55


def test_alternating_layers_decode_by_hand(gpt_oss):
    """gpt-oss-20b at 1000 cached tokens: 12 full layers attend 1001 keys, 12 sliding ones 128."""
    rows = rows_of(engine.decompose(gpt_oss, engine.Scenario(phase="decode", batch=2, context_length=1000)))
    for name, keys in (("Q*gK", 1001), ("Q*gK (sliding)", 128)):
        assert rows.loc[name, "count"] == 12
        assert rows.loc[name, "macs"] == 2 * 64 * 64 * keys
        assert rows.loc[name, "n"] == keys
    assert rows.loc["Q*gK (sliding)", "attention_window"] == 128 and np.isnan(rows.loc["Q*gK", "attention_window"])
    assert rows.loc["KVCache_Read", "kv_bytes"] == 2 * 1001 * 2 * 8 * 64 * 2
    assert rows.loc["KVCache_Read (sliding)", "kv_bytes"] == 2 * 128 * 2 * 8 * 64 * 2
    assert rows.loc["KVCache_Store", "count"] == 24            # every new token's K/V is written in every layer


@pytest.mark.parametrize("model_id", ["openai/gpt-oss-20b", "google/gemma-2-9b", "google/gemma-3-27b-pt",
                                      "mistralai/Mistral-7B-v0.1", "deepseek-ai/DeepSeek-V3"])
@pytest.mark.parametrize("context", [100, 5000])
def test_kv_read_per_step_is_the_cache_the_sequence_holds(model_id, context):
    """Summed over layers, a decode step reads model.kv_cache_bytes(context + 1): full layers the whole
    sequence, sliding layers their window."""
    model = engine.load_model(model_id)
    table = engine.decompose(model, engine.Scenario(phase="decode", batch=3, context_length=context, kv_dtype="fp8"))
    reads = table[table["op"] == "kv_read"]
    assert total(reads, "kv_bytes") == pytest.approx(3 * model.kv_cache_bytes(context + 1, "fp8"), rel=1e-12)


def test_sliding_prefill_pairs_by_hand(gpt_oss):
    rows = rows_of(engine.decompose(gpt_oss, engine.Scenario(phase="prefill", batch=1, input_length=512)))
    assert rows.loc["Q*gK (sliding)", "macs"] == 64 * 64 * (128 * 129 / 2 + 384 * 128)
    assert rows.loc["Q*gK", "macs"] == 64 * 64 * 512 * 513 / 2


def test_layer_kinds_get_their_own_counts():
    gemma3 = engine.load_model("google/gemma-3-27b-pt")
    rows = rows_of(engine.decompose(gemma3, engine.Scenario(phase="decode", batch=1, context_length=100)))
    assert rows.loc["Q*gK", "count"] == 10 and rows.loc["Q*gK (sliding)", "count"] == 52
    # below the window both kinds cost the same per layer
    for column in ("macs", "n", "activation_bytes"):
        assert rows.loc["Q*gK", column] == rows.loc["Q*gK (sliding)", column]
    mistral = engine.load_model("mistralai/Mistral-7B-v0.1")     # every layer slides
    names = set(engine.decompose(mistral, engine.Scenario(phase="decode"))["name"])
    assert "Q*gK (sliding)" in names and "Q*gK" not in names
    llama = engine.load_model("meta-llama/Llama-3.1-8B")
    assert not any("sliding" in name for name in engine.decompose(llama, engine.Scenario(phase="decode"))["name"])


def test_pipeline_stages_split_each_layer_kind(gpt_oss, devices):
    rows = rows_of(engine.decompose(gpt_oss, engine.Scenario(phase="decode", pp=2, context_length=500)))
    assert rows.loc["Q*gK", "count"] == 6 and rows.loc["Q*gK (sliding)", "count"] == 6


def test_memory_holds_the_window(gpt_oss, devices):
    scenario = engine.Scenario(phase="decode", batch=4, context_length=9999)
    memory = engine.estimate(devices["H100-SXM"], gpt_oss, scenario).memory
    assert memory.kv_cache_bytes == 4 * (12 * 10000 + 12 * 128) * 2 * 8 * 64 * 2


def test_chunked_schedule_windows_by_brute_force():
    """The windowed totals of a chunked-prefill schedule equal a token-by-token count."""
    batch, prompt, out, chunk, window = 3, 50, 9, 16, 20
    plan = chunked_schedule(batch, prompt, out, chunk)
    got = plan.windowed(window)
    stream = np.concatenate([[0.0], np.cumsum(plan.prefill_tokens)])
    for i in range(plan.iterations):
        pairs = cache = context = 0.0
        position = int(stream[i])
        while position < stream[i + 1]:
            offset = position % prompt
            q = int(min(prompt - offset, stream[i + 1] - position))
            pairs += sum(min(offset + j, window) for j in range(1, q + 1))
            context += min(offset, window - 1) + q
            if offset:
                cache += min(offset, window - 1) + q
            position += q
        decode = sum(min(prompt + i - c, window) for c in plan.first_token_iteration if c < i <= c + out - 1)
        assert got["prefill_pairs"][i] == pairs
        assert got["prefill_cache_tokens"][i] == cache
        assert got["prefill_context_sum"][i] == context
        assert got["decode_context_sum"][i] == decode
    unwindowed = plan.windowed(None)
    assert unwindowed["prefill_pairs"] is plan.prefill_pairs
    assert np.array_equal(plan.windowed(10**9)["prefill_pairs"], plan.prefill_pairs)
    assert np.array_equal(plan.windowed(10**9)["decode_context_sum"], plan.decode_context_sum)


def test_chunked_request_rows_per_layer_kind(gpt_oss):
    scenario = engine.Scenario(phase="request", batch=2, input_length=300, output_length=20, chunked_prefill=True,
                               chunk_size=128)
    table = engine.decompose(gpt_oss, scenario)
    names = set(table["name"])
    assert {"pQ*gK", "pQ*gK (sliding)", "dQ*gK", "dQ*gK (sliding)"} <= names
    plan = chunked_schedule(2, 300, 20, 128)
    sliding = table[table["name"] == "pQ*gK (sliding)"]
    assert np.allclose(sliding["macs"], 64 * 64 * plan.windowed(128)["prefill_pairs"])


# ------------------------------------------------------------------------------ sinks, norms, soft-capping

def test_attention_sinks_add_one_score_column_per_head(gpt_oss):
    rows = rows_of(engine.decompose(gpt_oss, engine.Scenario(phase="decode", batch=2, context_length=1000)))
    assert rows.loc["Softmax", "vector_flops"] == 5 * 64 * 2 * (1001 + 1)
    assert rows.loc["Softmax (sliding)", "vector_flops"] == 5 * 64 * 2 * (128 + 1)
    assert rows.loc["Softmax", "weight_bytes"] == 64 * 2          # the layer's sink logits


def test_gemma_extra_norms_and_soft_capping():
    gemma2 = engine.load_model("google/gemma-2-9b")
    tokens = 64
    rows = rows_of(engine.decompose(gemma2, engine.Scenario(phase="prefill", batch=1, input_length=tokens)))
    for name in ("Norm_attn", "Norm_post_attn", "Norm_ffn", "Norm_post_ffn"):
        assert rows.loc[name, "count"] == 42
        assert rows.loc[name, "vector_flops"] == 4 * tokens * 3584 and rows.loc[name, "weight_bytes"] == 3584 * 2
    pairs = tokens * (tokens + 1) / 2
    assert rows.loc["Softmax", "vector_flops"] == (5 + 3) * 16 * pairs          # soft-capped scores
    assert rows.loc["LM_head", "vector_flops"] == 3 * 256000                     # soft-capped logits, one row
    assert "Norm_qk" not in rows.index


def test_qk_norm_over_query_and_key_heads():
    gemma3 = engine.load_model("google/gemma-3-27b-pt")
    rows = rows_of(engine.decompose(gemma3, engine.Scenario(phase="prefill", batch=2, input_length=100)))
    assert rows.loc["Norm_qk", "vector_flops"] == 4 * 200 * (32 + 16) * 128
    assert rows.loc["Norm_qk", "weight_bytes"] == 2 * 128 * 2                    # q_norm and k_norm
    assert rows.loc["Norm_qk", "count"] == 62
    qwen3 = engine.load_model("Qwen/Qwen3-8B")
    assert "Norm_qk" in set(engine.decompose(qwen3, engine.Scenario(phase="decode"))["name"])


@pytest.mark.parametrize("model_id", catalog_ids())
def test_decode_weights_are_the_active_parameters_for_every_catalog_model(model_id):
    """One decode step of one sequence reads every weight one token uses once (norms, sinks, q/k norms,
    routers, the k experts it is sent to) except the embedding table, of which it looks up one row;
    a tied table is read whole as the LM head (docs/models.md, params_active)."""
    model = engine.load_model(model_id)
    table = engine.decompose(model, engine.Scenario(phase="decode", batch=1, context_length=64))
    streamed = table[table["name"] != "Embedding"]
    tied_head = model.hidden_size * model.vocab_size if model.tie_word_embeddings else 0
    expected = (model.params_active - model.params_embedding + tied_head) * 2
    assert total(streamed, "weight_bytes") == pytest.approx(expected, rel=1e-12)


# ------------------------------------------------------------------------------ MoE routing

def test_mixtral_experts_touched_by_hand(devices):
    mixtral = engine.load_model("mistralai/Mixtral-8x7B-v0.1")
    assert expected_active_experts(8, 8, 2, 1) == 2
    assert expected_active_experts(8, 8, 2, 4) == pytest.approx(8 * (1 - (6 / 8) ** 4))      # 5.47
    assert 8 * (1 - (6 / 8) ** 4) == pytest.approx(5.46875)
    hardware = devices["H100-SXM"]
    one = engine.estimate(hardware, mixtral, engine.Scenario(phase="decode", batch=1))
    four = engine.estimate(hardware, mixtral, engine.Scenario(phase="decode", batch=4))
    skewed = engine.estimate(hardware, mixtral, engine.Scenario(phase="decode", batch=4, routing_skew=1.0))
    assert one.experts_touched == {"decode": pytest.approx(2.0)}
    assert four.experts_touched == {"decode": pytest.approx(5.46875)}
    assert 2.0 < skewed.experts_touched["decode"] < 5.46875                  # skew: fewer distinct experts
    assert four.to_dict(include_kernels=False)["experts_touched"] == {"decode": pytest.approx(5.46875)}
    # fewer experts touched, fewer expert weights read: a faster memory-bound step
    assert skewed.tpot_s < four.tpot_s


def test_skewed_routing_formula_by_hand():
    """Zipf exponent 1 over 8 experts, top-2: p_j = 2 (1/j) / H_8; touched = sum_j 1 - (1 - p_j)^4."""
    harmonic = sum(1 / j for j in range(1, 9))
    p = [2 / j / harmonic for j in range(1, 9)]
    assert routing_probabilities(8, 2, 1.0) == pytest.approx(p)
    assert expected_active_experts(8, 8, 2, 4, routing_skew=1.0) == pytest.approx(sum(1 - (1 - x) ** 4 for x in p))
    assert expected_active_experts(8, 8, 2, 1, routing_skew=1.0) == pytest.approx(2.0)    # one token: k experts
    # a steep skew caps the hottest experts at probability 1 and keeps k picks per token
    steep = routing_probabilities(8, 2, 4.0)
    assert steep[0] == 1.0 and steep.sum() == pytest.approx(2.0) and (np.diff(steep) <= 0).all()
    assert routing_probabilities(8, 2, 0.0) == pytest.approx([0.25] * 8)
    # more skew, fewer distinct experts; a large batch still touches nearly all of them
    values = [expected_active_experts(8, 8, 2, 4, routing_skew=s) for s in (0.0, 0.5, 1.0, 2.0)]
    assert values == sorted(values, reverse=True)
    assert expected_active_experts(8, 8, 2, 10_000, routing_skew=1.0) == pytest.approx(8.0)


def test_experts_touched_with_expert_parallelism_and_requests(devices):
    deepseek = engine.load_model("deepseek-ai/DeepSeek-V3")
    result = engine.estimate(devices["H200-SXM"], deepseek, engine.Scenario(phase="request", batch=2,
                                                                           input_length=64, output_length=4))
    assert result.experts_touched["prefill"] == pytest.approx(256 * (1 - (1 - 8 / 256) ** 128))
    assert result.experts_touched["decode"] == pytest.approx(256 * (1 - (1 - 8 / 256) ** 2))
    mixtral = engine.load_model("mistralai/Mixtral-8x7B-v0.1")
    ep = engine.estimate(devices["H100-SXM"], mixtral, engine.Scenario(phase="decode", batch=4, dp=2, ep=2))
    # each device holds 4 of the 8 experts; tokens of both replicas can reach it
    assert ep.experts_touched["decode"] == pytest.approx(4 * (1 - (6 / 8) ** 8))
    dense = engine.estimate(devices["H100-SXM"], engine.load_model("meta-llama/Llama-3.1-8B"),
                            engine.Scenario(phase="decode"))
    assert dense.experts_touched == {} and dense.to_dict(include_kernels=False)["experts_touched"] == {}


def test_routing_skew_is_validated():
    with pytest.raises(ValueError, match="routing_skew"):
        engine.Scenario(routing_skew=-1)


# ------------------------------------------------------------------------------ realistic: windowed flash tiles

@pytest.mark.parametrize("new_tokens, prior, window", [(4096, 0, 1024), (200, 100, 256), (200, 300, 256),
                                                      (50, 10, 256), (1, 5000, 256), (300, 0, 128), (129, 0, 128)])
def test_query_tokens_recovered_for_windowed_rows(new_tokens, prior, window):
    from engine.kernels.attention_window import key_span
    from engine.estimators.fused_attention import query_tokens

    sequences, q_heads, kv_heads, d = 3, 32, 8, 128
    group = q_heads // kv_heads
    n = key_span(new_tokens, prior, window)
    macs = sequences * q_heads * d * causal_pairs(new_tokens, prior, window)
    got = query_tokens(np.array([new_tokens * group], float), np.array([d], float), np.array([n], float),
                       np.array([sequences * kv_heads], float), np.array([macs], float), np.array([float(window)]))
    assert got[0] == new_tokens


def test_realistic_sliding_prefill_costs_its_band(devices):
    """A 8192-token prompt: gemma-3's sliding layers (window 1024) attend ~1/4 of the causal pairs; the
    fused flash kernel skips the key tiles outside the band, so its realistic time follows the pairs."""
    gemma3 = engine.load_model("google/gemma-3-27b-pt")
    result = engine.estimate(devices["H100-SXM"], gemma3, engine.Scenario(phase="prefill", input_length=8192),
                             method="realistic")
    rows = rows_of(result.kernels)
    ratio = rows.loc["Q*gK (sliding)", "macs"] / rows.loc["Q*gK", "macs"]
    assert 0.2 < ratio < 0.25
    sliding = rows.loc[["Q*gK (sliding)", "Softmax (sliding)", "Q*gK*gV (sliding)"], "time_s"].sum()
    full = rows.loc[["Q*gK", "Softmax", "Q*gK*gV"], "time_s"].sum()
    # both kernels pay the same per-CTA work (32 heads x 64 query tiles of 128 rows) and latency, which the
    # band does not shrink; the rest follows the band's padded pairs (its tile padding costs about +12%)
    from engine.estimators.realistic import DEFAULT_CONSTANTS as C
    per_kernel = C.attention_prefill_latency_s + 32 * 64 * C.attention_overheads.prefill_cta_cycles / (132 * 1.83e9)
    assert ratio <= (sliding - per_kernel) / (full - per_kernel) < 1.3 * ratio
    # the sliding and full attentions are separate fused kernels
    assert rows.loc["Q*gK", "fused_group"] != rows.loc["Q*gK (sliding)", "fused_group"]
