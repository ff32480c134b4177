"""Mixture of experts, latent attention, sliding windows and the newer dense families (Gemma 2/3, Phi-3, Qwen3).

Oracles are published figures (model cards, papers, safetensors totals) and hand arithmetic written out
tensor by tensor, never this code's own output. Where a published figure is rounded, the tolerance is
half its last digit (stated per case).
"""

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.models import ModelConfig, ModelConfigError, load_catalog_config

BF16 = 2


def model(repo_id: str) -> ModelConfig:
    return ModelConfig.from_hf_config(load_catalog_config(repo_id), name=repo_id)


def parse(data: dict) -> ModelConfig:
    return ModelConfig.from_hf_config(data, name="test/model")


def edited(repo_id: str, **changes) -> dict:
    data = copy.deepcopy(load_catalog_config(repo_id))
    data.update(changes)
    return data


# ------------------------------------------------------------------ published totals and active parameters

def test_mixtral_8x7b_total_and_active():
    # Mistral AI: 46.7B total, 12.9B active (both rounded to 0.1B: +-0.05B)
    m = model("mistralai/Mixtral-8x7B-v0.1")
    attention = 2 * 4096 * 4096 + 2 * 4096 * 1024
    expert = 3 * 4096 * 14336
    layer = attention + 8 * expert + 8 * 4096 + 2 * 4096  # + router [4096, 8] + two RMSNorms
    total = 32 * layer + 2 * 32000 * 4096 + 4096
    assert total == 46_702_792_704 == m.params_total
    assert m.params_active == total - 32 * (8 - 2) * expert == 12_879_925_248
    assert m.params_total == pytest.approx(46.7e9, abs=0.05e9)
    assert m.params_active == pytest.approx(12.9e9, abs=0.05e9)  # Mistral counts embeddings as active
    assert m.params_per_expert == expert


def test_deepseek_v3_total_and_active():
    """671B total / 37B active (paper); README_WEIGHTS: main model 671B, activated 36.6B incl. the 0.9B head.
    Hugging Face shows 685B: the 671B plus the multi-token-prediction module (num_nextn_predict_layers=1),
    which is not counted here."""
    m = model("deepseek-ai/DeepSeek-V3")
    h, heads = 7168, 128
    attention = (h * 1536 + 1536 + 1536 * heads * 192      # q_a_proj, q_a_layernorm, q_b_proj
                 + h * (512 + 64) + 512                     # kv_a_proj_with_mqa, kv_a_layernorm
                 + 512 * heads * (128 + 128)                # kv_b_proj: k_nope and v for every head
                 + heads * 128 * h)                         # o_proj
    expert = 3 * h * 2048
    dense_layer = attention + 3 * h * 18432 + 2 * h
    moe_layer = attention + (h * 256 + 256) + 256 * expert + expert + 2 * h  # router + bias, routed, 1 shared
    total = 3 * dense_layer + 58 * moe_layer + 2 * 129280 * h + h
    assert m.params_total == total == 671_026_419_200
    # transformers (meta device) counts 671,026,404,352 parameters plus e_score_correction_bias as a buffer
    assert total - 58 * 256 == 671_026_404_352
    assert m.params_total == pytest.approx(671e9, abs=0.5e9)
    active = total - 58 * (256 - 8) * expert
    assert m.params_active == active
    assert m.params_active_excluding_embedding == active - 129280 * h == 36_625_618_432
    assert m.params_active_excluding_embedding == pytest.approx(36.6e9, abs=0.05e9)  # README_WEIGHTS
    assert m.params_active_excluding_embedding == pytest.approx(37e9, abs=0.5e9)  # paper headline
    assert m.multi_token_prediction_layers == 1 and m.quantization_method == "fp8"


def test_qwen3_30b_a3b_total_and_active():
    # Qwen: 30.5B total, 3.3B activated, 29.9B non-embedding (rounded to 0.1B: +-0.05B)
    m = model("Qwen/Qwen3-30B-A3B")
    attention = 2 * 2048 * 4096 + 2 * 2048 * 512 + 2 * 128  # q, o, k, v + q_norm, k_norm
    expert = 3 * 2048 * 768
    layer = attention + 128 * expert + 128 * 2048 + 2 * 2048
    embeddings = 2 * 151936 * 2048  # untied
    assert m.params_total == 48 * layer + embeddings + 2048 == 30_532_122_624
    assert m.params_active == m.params_total - 48 * 120 * expert == 3_353_032_704
    assert m.params_total == pytest.approx(30.5e9, abs=0.05e9)
    assert m.params_active == pytest.approx(3.3e9, abs=0.06e9)  # 3.35B: Qwen's "3.3B" counts embeddings
    assert m.params_total - embeddings == pytest.approx(29.9e9, abs=0.05e9)


@pytest.mark.parametrize("repo_id, layers, experts, mlp, attention, total, active", [
    # gpt-oss model card, Table 1 (rounded to 0.01B): MLP, attention, embed+unembed 1.16B, active, total;
    # "Unembedding parameters are counted towards active, but not embeddings."
    ("openai/gpt-oss-120b", 36, 128, 114.71e9, 0.96e9, 116.83e9, 5.13e9),
    ("openai/gpt-oss-20b", 24, 32, 19.12e9, 0.64e9, 20.91e9, 3.61e9),
])
def test_gpt_oss_against_the_model_card(repo_id, layers, experts, mlp, attention, total, active):
    m = model(repo_id)
    parts = m.params_per_layer_breakdown()
    h, inner = 2880, 2880
    assert parts["q_proj"] == h * 64 * 64 + 64 * 64 and parts["k_proj"] == h * 8 * 64 + 8 * 64
    assert parts["o_proj"] == 64 * 64 * h + h and parts["attention_sinks"] == 64
    assert parts["router"] == h * experts + experts
    assert parts["experts_gate"] == parts["experts_up"] == experts * (h * inner + inner)
    assert parts["experts_down"] == experts * (inner * h + h)
    card_attention = layers * sum(parts[k] for k in ("q_proj", "k_proj", "v_proj", "o_proj", "attention_sinks"))
    card_mlp = layers * sum(parts[k] for k in ("router", "experts_gate", "experts_up", "experts_down"))
    assert card_attention == pytest.approx(attention, abs=0.005e9)
    assert card_mlp == pytest.approx(mlp, abs=0.005e9)
    assert m.params_embedding + m.params_lm_head == pytest.approx(1.16e9, abs=0.005e9)
    assert m.params_total == pytest.approx(total, abs=0.005e9)
    assert m.params_active_excluding_embedding == pytest.approx(active, abs=0.005e9)
    assert m.quantization_method == "mxfp4"  # experts ship as MXFP4; counted here as elements


def test_gpt_oss_exact_totals():
    # transformers' GptOssForCausalLM on the meta device counts the same
    assert model("openai/gpt-oss-120b").params_total == 116_829_156_672
    assert model("openai/gpt-oss-20b").params_total == 20_914_757_184


@pytest.mark.parametrize("repo_id, exact, published, tolerance, source", [
    ("Qwen/Qwen3-8B", 8_190_735_360, 8.2e9, 0.05e9, "model card: 8.2B (6.95B non-embedding)"),
    ("google/gemma-2-9b", 9_241_705_984, 9.24e9, 0.005e9, "Hub safetensors: 9.24B"),
    ("microsoft/Phi-3-mini-4k-instruct", 3_821_079_552, 3.82e9, 0.005e9, "model card: 3.8B; Hub safetensors 3.82B"),
    ("google/gemma-3-27b-pt", 27_009_346_304, 27.0e9, 0.05e9, "language model; + vision 27.4B on the Hub"),
])
def test_dense_family_totals(repo_id, exact, published, tolerance, source):
    m = model(repo_id)
    assert m.params_total == exact, source
    assert m.params_total == pytest.approx(published, abs=tolerance), source
    assert m.params_active == m.params_total


def test_qwen3_8b_by_hand():
    m = model("Qwen/Qwen3-8B")
    layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 2 * 128 + 3 * 4096 * 12288 + 2 * 4096
    assert m.params_total == 36 * layer + 2 * 151936 * 4096 + 4096
    assert m.params_total - 2 * 151936 * 4096 == pytest.approx(6.95e9, abs=0.005e9)  # card: 6.95B non-embedding
    parts = m.params_per_layer_breakdown()
    assert parts["q_norm"] == parts["k_norm"] == 128 and m.qk_norm


def test_gemma_2_9b_by_hand():
    m = model("google/gemma-2-9b")
    layer = 2 * 3584 * 16 * 256 + 2 * 3584 * 8 * 256 + 3 * 3584 * 14336 + 4 * 3584  # 4 RMSNorms per layer
    assert m.params_total == 42 * layer + 256000 * 3584 + 3584  # tied: no separate LM head
    assert m.tie_word_embeddings and m.params_lm_head == 0 and m.norms_per_layer == 4
    parts = m.params_per_layer_breakdown()
    assert parts["post_attention_norm"] == parts["post_mlp_norm"] == 3584
    assert (m.query_pre_attn_scalar, m.attn_logit_softcapping, m.final_logit_softcapping) == (256, 50, 30)
    assert m.hidden_act == "gelu_pytorch_tanh" and m.head_dim == 256 and m.q_width == 4096


def test_gemma_3_27b_vision_tower_is_counted_apart():
    """Gemma3ForConditionalGeneration: text_config is the language model; the SigLIP tower (27 layers, width
    1152, 896 px / 14 px patches) and the projector are params_vision_encoder. Hub safetensors: 27.4B."""
    m = model("google/gemma-3-27b-pt")
    h, inner = 1152, 4304
    siglip_layer = 4 * (h * h + h) + 4 * h + (h * inner + inner) + (inner * h + h)
    siglip = 3 * 14 * 14 * h + h + 64 * 64 * h + 27 * siglip_layer + 2 * h
    projector = h + h * 5376
    assert m.params_vision_encoder == siglip + projector == 423_060_336
    assert m.params_total + m.params_vision_encoder == 27_432_406_640
    text_layer = 2 * 5376 * 32 * 128 + 2 * 5376 * 16 * 128 + 2 * 128 + 3 * 5376 * 21504 + 4 * 5376
    assert m.params_total == 62 * text_layer + 262208 * 5376 + 5376
    assert m.vocab_size == 262208 and m.qk_norm and m.query_pre_attn_scalar == 168
    assert m.attn_logit_softcapping is None and m.final_logit_softcapping is None


def test_phi3_fused_projections_count_like_separate_ones():
    phi = model("microsoft/Phi-3-mini-4k-instruct")
    assert phi.fused_qkv_proj and phi.fused_gate_up_proj
    layer = 4 * 3072 * 3072 + 3 * 3072 * 8192 + 2 * 3072
    assert phi.params_per_layer == layer
    assert phi.params_total == 32 * layer + 2 * 32064 * 3072 + 3072


def test_qwen1_5_moe_shared_expert():
    # Qwen1.5-MoE-A2.7B (card: 14.3B total, 2.7B activated): 60 experts top-4 + one 5632-wide shared expert
    data = {"architectures": ["Qwen2MoeForCausalLM"], "hidden_size": 2048, "intermediate_size": 5632,
            "max_position_embeddings": 8192, "model_type": "qwen2_moe", "moe_intermediate_size": 1408,
            "num_attention_heads": 16, "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 24,
            "num_key_value_heads": 16, "shared_expert_intermediate_size": 5632, "tie_word_embeddings": False,
            "vocab_size": 151936, "use_sliding_window": False}
    m = parse(data)
    expert, shared = 3 * 2048 * 1408, 3 * 2048 * 5632
    layer = 4 * 2048 * 2048 + 3 * 2048 + 60 * expert + shared + 2048 + 60 * 2048 + 2 * 2048
    assert m.params_total == 24 * layer + 2 * 151936 * 2048 + 2048 == 14_315_784_192
    assert m.params_active == m.params_total - 24 * 56 * expert
    assert m.params_total == pytest.approx(14.3e9, abs=0.05e9)
    assert m.params_active == pytest.approx(2.7e9, abs=0.05e9)
    assert (m.num_shared_experts, m.shared_expert_intermediate_size, m.shared_expert_gate) == (1, 5632, True)


def test_deepseek_v2_lite_uncompressed_queries():
    # DeepSeek-V2-Lite (card: 15.7B total, 2.4B activated): q_lora_rank null -> a plain q_proj
    data = {"architectures": ["DeepseekV2ForCausalLM"], "first_k_dense_replace": 1, "hidden_size": 2048,
            "intermediate_size": 10944, "kv_lora_rank": 512, "max_position_embeddings": 163840,
            "model_type": "deepseek_v2", "moe_intermediate_size": 1408, "moe_layer_freq": 1, "n_routed_experts": 64,
            "n_shared_experts": 2, "num_attention_heads": 16, "num_experts_per_tok": 6, "num_hidden_layers": 27,
            "num_key_value_heads": 16, "q_lora_rank": None, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
            "tie_word_embeddings": False, "topk_method": "greedy", "v_head_dim": 128, "vocab_size": 102400}
    m = parse(data)
    parts = m.params_per_layer_breakdown()
    assert parts["q_proj"] == 2048 * 16 * 192 and "q_a_proj" not in parts
    assert parts["router"] == 2048 * 64  # no correction bias with greedy top-k
    assert m.params_total == 15_706_484_224 == pytest.approx(15.7e9, abs=0.05e9)
    assert m.params_active_excluding_embedding == pytest.approx(2.4e9, abs=0.06e9)
    assert m.layer_pattern() == "1 dense + 26 MoE (64 experts, top-6, 2 shared); MLA"


# ------------------------------------------------------------------ layer schedules

def test_deepseek_v3_first_three_layers_are_dense():
    m = model("deepseek-ai/DeepSeek-V3")
    assert m.moe_layers == (False,) * 3 + (True,) * 58
    assert m.layer_pattern() == "3 dense + 58 MoE (256 experts, top-8, 1 shared); MLA"
    assert m.layer_groups() == {("dense", "full"): 3, ("moe", "full"): 58}
    assert m.params_per_layer_breakdown("dense")["mlp_up"] == 7168 * 18432
    assert (m.num_shared_experts, m.shared_expert_intermediate_size) == (1, 2048)
    assert m.router_bias and not m.expert_bias


def test_qwen3_moe_every_layer_is_moe_and_the_schedule_fields_work():
    m = model("Qwen/Qwen3-30B-A3B")
    assert m.moe_layers == (True,) * 48 and m.is_moe
    assert m.layer_pattern() == "48 MoE (128 experts, top-8); full attention"
    sparse = parse(edited("Qwen/Qwen3-30B-A3B", decoder_sparse_step=2, mlp_only_layers=[1]))
    # MoE where (i + 1) % 2 == 0 and i not in mlp_only_layers: layers 3, 5, ..., 47
    assert sparse.moe_layers == tuple(i % 2 == 1 and i != 1 for i in range(48))
    dense_layer = sum(sparse.params_per_layer_breakdown("dense").values())
    assert sparse.params_per_layer_breakdown("dense")["mlp_gate"] == 2048 * 6144
    moe_layer = sum(sparse.params_per_layer_breakdown("moe").values())
    assert sparse.params_total == 25 * dense_layer + 23 * moe_layer + 2 * 151936 * 2048 + 2048


def test_gemma_3_every_sixth_layer_is_global():
    m = model("google/gemma-3-27b-pt")
    assert m.layer_attention == tuple("full" if (i + 1) % 6 == 0 else "sliding" for i in range(62))
    assert m.num_sliding_layers == 52 and m.sliding_window == 1024
    assert m.layer_pattern() == "62 dense; 5 sliding (1024) : 1 full"


def test_gemma_2_and_gpt_oss_alternate_starting_with_sliding():
    gemma = model("google/gemma-2-9b")
    assert gemma.layer_attention[:4] == ("sliding", "full", "sliding", "full") and gemma.sliding_window == 4096
    oss = model("openai/gpt-oss-120b")
    assert oss.layer_attention == ("sliding", "full") * 18 and oss.sliding_window == 128
    assert oss.layer_pattern() == "36 MoE (128 experts, top-4); 1 sliding (128) : 1 full"
    assert oss.layer_groups() == {("moe", "full"): 18, ("moe", "sliding"): 18}


def test_gemma_2_without_layer_types_uses_the_alternating_rule():
    explicit = model("google/gemma-2-9b")
    data = edited("google/gemma-2-9b", layer_types=["full_attention"] * 42)
    assert parse(data).layer_attention == ("full",) * 42 and parse(data).sliding_window is None
    assert explicit.num_sliding_layers == 21


def test_mistral_and_phi3_slide_on_every_layer():
    assert model("mistralai/Mistral-7B-v0.1").layer_pattern() == "32 dense; all sliding (4096)"
    assert model("microsoft/Phi-3-mini-4k-instruct").layer_attention == ("sliding",) * 32
    mixtral = model("mistralai/Mixtral-8x7B-v0.1")  # sliding_window null
    assert mixtral.layer_attention == ("full",) * 32 and mixtral.sliding_window is None


def test_dense_models_keep_their_plain_pattern():
    llama = model("meta-llama/Llama-3.1-8B")
    assert llama.layer_pattern() == "32 dense; full attention"
    assert llama.moe_layers == (False,) * 32 and llama.attention_kind == "mha" and not llama.is_moe
    assert llama.v_head_dim == 128 and llama.params_per_expert == 0


# ------------------------------------------------------------------ KV cache, by hand

def test_deepseek_v3_kv_cache_is_the_latent():
    m = model("deepseek-ai/DeepSeek-V3")
    per_token = 61 * (512 + 64) * BF16
    assert m.kv_values_per_token_per_layer == 576
    assert m.kv_cache_bytes_per_token("bf16") == per_token == 70_272
    assert m.kv_cache_bytes_per_token("fp8") == 61 * 576
    assert m.kv_cache_bytes(4096, "bf16") == 4096 * per_token
    # the naive decompressed cache would be 2 * 128 heads * 192/128 wide: 56x larger
    assert 61 * 128 * (192 + 128) * BF16 / per_token > 50


@pytest.mark.parametrize("tokens", [1, 100, 128])
def test_gpt_oss_kv_cache_within_the_window(tokens):
    m = model("openai/gpt-oss-20b")
    per_layer_per_token = 2 * 8 * 64 * BF16
    assert m.kv_cache_bytes(tokens, "bf16") == 24 * tokens * per_layer_per_token
    assert m.kv_cache_bytes(tokens) == tokens * m.kv_cache_bytes_per_token()


@pytest.mark.parametrize("tokens", [129, 1000, 131072])
def test_gpt_oss_kv_cache_past_the_window(tokens):
    m = model("openai/gpt-oss-20b")
    per_layer_per_token = 2 * 8 * 64 * BF16
    # 12 full layers hold every token, 12 sliding layers only the last 128
    assert m.kv_cache_bytes(tokens, "bf16") == (12 * tokens + 12 * 128) * per_layer_per_token
    assert m.kv_cache_bytes(1000, "bf16") == 27_721_728
    assert m.kv_cache_bytes_per_token("bf16") == 24 * per_layer_per_token  # every layer, as if full


def test_gemma_3_kv_cache_pattern():
    m = model("google/gemma-3-27b-pt")
    per_layer_per_token = 2 * 16 * 128 * BF16
    assert m.kv_cache_bytes(1024) == 62 * 1024 * per_layer_per_token
    assert m.kv_cache_bytes(32768) == (10 * 32768 + 52 * 1024) * per_layer_per_token
    assert m.kv_cache_bytes(0) == 0


def test_mistral_sliding_window_bounds_the_cache():
    m = model("mistralai/Mistral-7B-v0.1")
    assert m.kv_cache_bytes(10000) == 32 * 4096 * 2 * 8 * 128 * BF16
    assert m.kv_cache_bytes_per_token() == 131072  # unchanged: full-attention bytes per token


def test_dense_full_attention_kv_cache_is_linear():
    m = model("meta-llama/Llama-3.1-8B")
    assert m.kv_cache_bytes(8192, "fp8") == 8192 * m.kv_cache_bytes_per_token("fp8") == 8192 * 65536


@pytest.mark.parametrize("tokens", [-1, 1.5, True, "10"])
def test_kv_cache_bytes_rejects_bad_token_counts(tokens):
    with pytest.raises(ValueError, match="tokens"):
        model("openai/gpt-oss-20b").kv_cache_bytes(tokens)


# ------------------------------------------------------------------ MLA shapes

def test_deepseek_v3_mla_fields_and_breakdown():
    m = model("deepseek-ai/DeepSeek-V3")
    assert m.attention_kind == "mla"
    assert (m.q_lora_rank, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim) == \
        (1536, 512, 128, 64, 128)
    assert m.head_dim == 192 and m.num_key_value_heads == 128 and m.rotary_dim == 64
    parts = m.params_per_layer_breakdown()
    assert parts["q_a_proj"] == 7168 * 1536 and parts["q_a_norm"] == 1536
    assert parts["q_b_proj"] == 1536 * 128 * 192
    assert parts["kv_a_proj_with_mqa"] == 7168 * 576 and parts["kv_a_norm"] == 512
    assert parts["kv_b_proj"] == 512 * 128 * 256 and parts["o_proj"] == 128 * 128 * 7168
    assert parts["router"] == 7168 * 256 + 256
    assert parts["experts_down"] == 256 * 2048 * 7168 and parts["shared_experts_up"] == 7168 * 2048


# ------------------------------------------------------------------ summary and serialisation

def test_summary_gains_moe_and_attention_keys():
    s = model("deepseek-ai/DeepSeek-V3").summary()
    assert (s["num_experts"], s["experts_per_token"], s["attention_kind"]) == (256, 8, "mla")
    assert s["layer_pattern"] == "3 dense + 58 MoE (256 experts, top-8, 1 shared); MLA"
    assert s["params_active"] == 37_552_297_472 and s["kv_cache_bytes_per_token"] == 70_272
    dense = model("meta-llama/Llama-3.1-8B").summary()
    assert (dense["num_experts"], dense["experts_per_token"], dense["attention_kind"]) == (0, 0, "mha")


@pytest.mark.parametrize("repo_id", ["deepseek-ai/DeepSeek-V3", "openai/gpt-oss-20b", "google/gemma-3-27b-pt"])
def test_json_round_trip(repo_id):
    m = model(repo_id)
    assert ModelConfig.model_validate_json(m.model_dump_json()) == m


def test_breakdown_kind_must_exist():
    with pytest.raises(ValueError, match="no MoE layers"):
        model("meta-llama/Llama-3.1-8B").params_per_layer_breakdown("moe")
    with pytest.raises(ValueError, match="'dense' or 'moe'"):
        model("openai/gpt-oss-20b").params_per_layer_breakdown("sliding")


# ------------------------------------------------------------------ errors name the field

def test_moe_fields_on_a_dense_family_are_rejected():
    with pytest.raises(ModelConfigError, match="'n_routed_experts' is 64: mixture of experts is not modelled "
                                               "for model_type 'qwen3'"):
        parse(edited("Qwen/Qwen3-8B", n_routed_experts=64))
    with pytest.raises(ModelConfigError, match="'q_lora_rank'"):
        parse(edited("mistralai/Mixtral-8x7B-v0.1", q_lora_rank=1536))


@pytest.mark.parametrize("repo_id, field, value, message", [
    ("mistralai/Mixtral-8x7B-v0.1", "num_experts_per_tok", 9, "more than the 8 routed experts"),
    ("mistralai/Mixtral-8x7B-v0.1", "num_local_experts", 0, "positive integer"),
    ("Qwen/Qwen3-30B-A3B", "mlp_only_layers", [48], "layer indices"),
    ("Qwen/Qwen3-30B-A3B", "decoder_sparse_step", 0, "positive integer"),
    ("deepseek-ai/DeepSeek-V3", "kv_lora_rank", None, "positive integer"),
    ("deepseek-ai/DeepSeek-V3", "q_lora_rank", -1, "positive integer"),
    ("openai/gpt-oss-20b", "layer_types", ["full_attention"] * 23, "one per layer"),
    ("openai/gpt-oss-20b", "layer_types", ["chunked_attention"] * 24, "supported layer types"),
    ("openai/gpt-oss-20b", "sliding_window", None, "need a window"),
    ("google/gemma-2-9b", "attn_logit_softcapping", -1, "positive number"),
    ("Qwen/Qwen3-8B", "use_sliding_window", True, "not supported yet"),
])
def test_bad_values_name_the_field(repo_id, field, value, message):
    with pytest.raises(ModelConfigError, match=message) as caught:
        parse(edited(repo_id, **{field: value}))
    assert f"'{field}'" in str(caught.value)


def test_gemma3_nested_errors_name_the_nested_field():
    data = copy.deepcopy(load_catalog_config("google/gemma-3-27b-pt"))
    del data["text_config"]["hidden_size"]
    with pytest.raises(ModelConfigError, match="'text_config.hidden_size' is missing"):
        parse(data)
    data = copy.deepcopy(load_catalog_config("google/gemma-3-27b-pt"))
    data["vision_config"]["model_type"] = "clip_vision_model"
    with pytest.raises(ModelConfigError, match="'vision_config.model_type' is 'clip_vision_model'"):
        parse(data)
    del data["text_config"]
    with pytest.raises(ModelConfigError, match="'text_config' is missing"):
        parse(data)


def test_encoder_decoder_flag_is_rejected():
    with pytest.raises(ModelConfigError, match="'is_encoder_decoder' is True"):
        parse(edited("meta-llama/Llama-3.1-8B", is_encoder_decoder=True))


def test_direct_construction_checks_consistency():
    base = model("mistralai/Mixtral-8x7B-v0.1").model_dump()
    with pytest.raises(ValueError, match="experts_per_token"):
        ModelConfig(**{**base, "experts_per_token": 9})
    with pytest.raises(ValueError, match="moe_layers has 3 entries"):
        ModelConfig(**{**base, "moe_layers": (True, True, True)})
    with pytest.raises(ValueError, match="sliding_window"):
        ModelConfig(**{**base, "layer_attention": ("sliding",) * 32, "sliding_window": None})
    dense = model("meta-llama/Llama-3.1-8B").model_dump()
    with pytest.raises(ValueError, match="attention_kind 'mla'"):
        ModelConfig(**{**dense, "kv_lora_rank": 512})


def test_model_type_from_new_architectures():
    data = copy.deepcopy(load_catalog_config("openai/gpt-oss-20b"))
    del data["model_type"]
    assert parse(data).model_type == "gpt_oss"


# ------------------------------------------------------------------ properties over random MoE shapes

@settings(max_examples=60, deadline=None)
@given(heads=st.integers(1, 8), head_dim=st.sampled_from([8, 16]), layers=st.integers(1, 8),
       experts=st.integers(1, 16), data=st.data(), inner=st.integers(1, 64), vocab=st.integers(1, 500),
       window=st.integers(1, 40), tokens=st.integers(0, 100))
def test_moe_accounting_properties(heads, head_dim, layers, experts, data, inner, vocab, window, tokens):
    top_k = data.draw(st.integers(1, experts))
    hidden = heads * head_dim
    kinds = data.draw(st.lists(st.sampled_from(["full_attention", "sliding_attention"]),
                               min_size=layers, max_size=layers))
    m = parse({"model_type": "gpt_oss", "hidden_size": hidden, "intermediate_size": inner, "head_dim": head_dim,
               "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": heads,
               "vocab_size": vocab, "max_position_embeddings": 1024, "num_local_experts": experts,
               "num_experts_per_tok": top_k, "layer_types": kinds, "sliding_window": window})
    per_expert = 3 * hidden * inner + 2 * inner + hidden  # gate, up, down with gpt-oss expert biases
    assert m.params_per_expert == per_expert
    assert m.params_total - m.params_active == layers * (experts - top_k) * per_expert
    assert m.params_active <= m.params_total
    full = kinds.count("full_attention")
    values = 2 * heads * head_dim
    assert m.kv_cache_bytes(tokens, "fp8") == (full * tokens + (layers - full) * min(tokens, window)) * values
    assert m.kv_cache_bytes(tokens) <= tokens * m.kv_cache_bytes_per_token()
    assert m.layer_pattern().startswith(f"{layers} MoE ({experts} experts, top-{top_k})")
