"""Kimi-K2.5 and MiniMax-M2.5 parsed from their config.json (sizes as aiconfigurator-core's model_configs state
them), parameter counts against hand arithmetic and the model cards (Kimi-K2.5: 1T total, 32B active;
MiniMax-M2.5: 230B total, 10B active), refusals naming the field, and the architectures we refuse."""

import copy

import pytest

from engine.models import ModelConfig, ModelConfigError

KIMI_TEXT = {"model_type": "kimi_k2", "hidden_size": 7168, "intermediate_size": 18432, "num_hidden_layers": 61,
             "num_attention_heads": 64, "num_key_value_heads": 64, "q_lora_rank": 1536, "kv_lora_rank": 512,
             "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 163840,
             "max_position_embeddings": 262144, "n_routed_experts": 384, "n_shared_experts": 1,
             "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "first_k_dense_replace": 1,
             "moe_layer_freq": 1, "topk_method": "noaux_tc", "rms_norm_eps": 1e-5, "tie_word_embeddings": False}
KIMI = {"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25", "text_config": KIMI_TEXT,
        "vision_config": {"patch_size": 14}, "tie_word_embeddings": False}
MINIMAX = {"architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2", "num_hidden_layers": 62,
           "hidden_size": 3072, "num_attention_heads": 48, "num_key_value_heads": 8, "head_dim": 128,
           "intermediate_size": 1536, "vocab_size": 200064, "num_experts_per_tok": 8, "num_local_experts": 256,
           "max_position_embeddings": 196608, "rotary_dim": 64, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
           "use_qk_norm": True, "qk_norm_type": "per_layer", "use_routing_bias": True, "shared_intermediate_size": 0,
           "quantization_config": {"quant_method": "fp8"}}


def parse(data):
    return ModelConfig.from_hf_config(copy.deepcopy(data), name="x")


def test_kimi_k25_counts_by_hand():
    m = parse(KIMI)
    h, heads, layers, vocab = 7168, 64, 61, 163840
    attention = (h * 1536 + 1536 + 1536 * heads * 192 + h * (512 + 64) + 512 + 512 * heads * (128 + 128)
                 + heads * 128 * h)
    dense = 2 * h + attention + 3 * h * 18432
    expert = 3 * h * 2048
    moe = 2 * h + attention + (h * 384 + 384) + 384 * expert + expert   # router with its bias, 384 routed, 1 shared
    total = 2 * vocab * h + h + dense + (layers - 1) * moe
    assert m.attention_kind == "mla" and m.num_moe_layers == 60
    assert m.params_total == total
    assert m.params_active_excluding_embedding == total - vocab * h - 60 * (384 - 8) * expert
    assert 1.00e12 < m.params_total < 1.05e12                       # the card: 1T total
    assert 31e9 < m.params_active_excluding_embedding < 33e9        # the card: 32B activated


def test_minimax_m25_counts_by_hand():
    m = parse(MINIMAX)
    h, layers, vocab, expert = 3072, 62, 200064, 3 * 3072 * 1536
    attention = h * 6144 + 2 * h * 1024 + 6144 * h + 2 * 128       # q, k, v, o; q/k norms counted per head
    layer = 2 * h + attention + (h * 256 + 256) + 256 * expert
    total = 2 * vocab * h + h + layers * layer
    assert (m.num_key_value_heads, m.head_dim, m.rotary_dim, m.qk_norm, m.num_moe_layers) == (8, 128, 64, True, 62)
    assert m.params_total == total
    assert m.params_active_excluding_embedding == total - vocab * h - layers * (256 - 8) * expert
    assert 225e9 < m.params_total < 232e9                           # the card: 230B total
    assert 9.8e9 < m.params_active_excluding_embedding < 10.6e9    # the card: 10B active


@pytest.mark.parametrize("data, field", [
    ({**MINIMAX, "num_local_experts": None}, "num_local_experts"),
    ({**MINIMAX, "rotary_dim": 256}, "rotary_dim"),
    ({**MINIMAX, "qk_norm_type": "per_token"}, "qk_norm_type"),
    ({**MINIMAX, "shared_intermediate_size": 512}, "shared_intermediate_size"),
    ({**KIMI, "text_config": {**KIMI_TEXT, "model_type": "llama"}}, "model_type"),
    ({**KIMI, "text_config": {**KIMI_TEXT, "kv_lora_rank": 0}}, "kv_lora_rank"),
    ({**KIMI, "text_config": None}, "text_config"),
])
def test_bad_fields_are_named(data, field):
    with pytest.raises(ModelConfigError, match=field):
        parse(data)


@pytest.mark.parametrize("model_type", ["qwen3_5_moe", "glm_moe_dsa"])
def test_linear_and_sparse_attention_families_are_refused(model_type):
    with pytest.raises(ModelConfigError, match=f"'model_type' is '{model_type}'"):
        parse({**MINIMAX, "model_type": model_type})
