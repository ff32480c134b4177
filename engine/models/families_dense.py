"""Dense model families without Gemma's extras: the Llama-style RMSNorm decoders (llama, mistral, qwen2, qwen3,
phi3) and the LayerNorm decoders (gpt2, gpt_neox, opt). Each parser returns ModelConfig keyword arguments.

Sliding windows: Mistral and Phi-3 slide on every layer when `sliding_window` is set; Qwen's
`use_sliding_window` is refused (which layers slide has changed between transformers releases).
"""

from __future__ import annotations

from engine.models.config_reader import ConfigReader
from engine.models.decoder_fields import Fields, LayerNormFieldNames, attention_schedule, every_layer, \
    layernorm_decoder, reject_mixed_attention, reject_qwen_sliding_window, rmsnorm_decoder, rotary_channels

GPT2_FIELD_NAMES = LayerNormFieldNames(hidden="n_embd", heads="n_head", intermediate="n_inner", layers="n_layer",
                                       positions="n_positions", activation="activation_function",
                                       epsilon="layer_norm_epsilon")
GPT_NEOX_FIELD_NAMES = LayerNormFieldNames()
OPT_FIELD_NAMES = LayerNormFieldNames(intermediate="ffn_dim", activation="activation_function", epsilon=None)


# --------------------------------------------------------------------- RMSNorm, rotary, gated MLP

def parse_llama_family(r: ConfigReader) -> Fields:
    """llama, mistral, qwen2: RMSNorm, rotary, gated SiLU MLP, optional GQA."""
    model_type = r.model_type
    fields = rmsnorm_decoder(r)
    reject_mixed_attention(r)
    # Llama: one switch for q/k/v/o biases; Qwen2: q/k/v biases always, none on o; Mistral: none.
    attention_bias = r.boolean("attention_bias", default=False) if model_type == "llama" else False
    fields["qkv_bias"] = True if model_type == "qwen2" else attention_bias
    fields["attention_output_bias"] = attention_bias
    fields["mlp_bias"] = r.boolean("mlp_bias", default=False) if model_type == "llama" else False
    if model_type == "mistral":  # Mistral slides on every layer when a window is set
        fields.update(attention_schedule(r, fields["num_layers"], None, every_layer, read_layer_types=False))
    if model_type == "qwen2":
        reject_qwen_sliding_window(r)
    return fields


def parse_qwen3(r: ConfigReader) -> Fields:
    """Qwen3: Llama layout plus per-head RMSNorm on q and k; `attention_bias` on q, k, v and o."""
    fields = rmsnorm_decoder(r)
    reject_mixed_attention(r)
    reject_qwen_sliding_window(r)
    bias = r.boolean("attention_bias", default=False)
    fields.update(qkv_bias=bias, attention_output_bias=bias, qk_norm=True)
    return fields


def parse_phi3(r: ConfigReader) -> Fields:
    """Phi-3: fused qkv_proj and gate_up_proj (same weights as separate ones), no biases; HF slides every
    layer when `sliding_window` is set (Phi-3-mini-4k: 2047)."""
    fields = rmsnorm_decoder(r, tie_default=False)
    fields.update(fused_qkv_proj=True, fused_gate_up_proj=True, norm_epsilon=r.epsilon("rms_norm_eps", 1e-5))
    fields.update(attention_schedule(r, fields["num_layers"], None, every_layer, read_layer_types=False))
    return fields


# --------------------------------------------------------------------- LayerNorm, ungated MLP

def parse_gpt2(r: ConfigReader) -> Fields:
    """GPT-2: LayerNorm, learned positions, Conv1D projections with biases, GELU MLP, tied head."""
    fields = layernorm_decoder(r, GPT2_FIELD_NAMES, act_default="gelu_new", tie_default=True,
                               attention_bias=True, mlp_bias=True, mlp_ratio_default=4)
    fields.update(position_embedding="learned", num_position_embeddings=fields["max_position_embeddings"])
    return fields


def parse_gpt_neox(r: ConfigReader) -> Fields:
    """GPT-NeoX / Pythia: LayerNorm, partial rotary, fused QKV with biases, GELU MLP, untied head."""
    attention_bias = r.boolean("attention_bias", default=True)
    fields = layernorm_decoder(r, GPT_NEOX_FIELD_NAMES, act_default="gelu", tie_default=False,
                               attention_bias=attention_bias, mlp_bias=True)
    fields.update(
        position_embedding="rotary",
        rotary_dim=rotary_channels(fields["head_dim"], r.fraction("rotary_pct", default=0.25)),
        parallel_residual=r.boolean("use_parallel_residual", default=True),
        fused_qkv_proj=True,
    )
    return fields


def parse_opt(r: ConfigReader) -> Fields:
    """OPT: LayerNorm (epsilon 1e-5), learned positions (+2 offset rows), ReLU MLP with biases, tied head."""
    hidden = r.positive_int("hidden_size")
    projection = r.positive_int("word_embed_proj_dim", default=hidden)
    if projection != hidden:
        raise r.error("word_embed_proj_dim", projection,
                      f"differs from hidden_size ({hidden}); OPT embedding projections are not supported yet")
    if not r.boolean("layer_norm_elementwise_affine", default=True):
        raise r.error("layer_norm_elementwise_affine", False, "LayerNorm without weights is not supported yet")
    bias = r.boolean("enable_bias", default=True)
    norm_before = r.boolean("do_layer_norm_before", default=True)
    fields = layernorm_decoder(r, OPT_FIELD_NAMES, act_default="relu", tie_default=True,
                               attention_bias=bias, mlp_bias=bias)
    fields.update(
        has_final_norm=norm_before and not r.boolean("_remove_final_layer_norm", default=False),
        position_embedding="learned",
        # OPTLearnedPositionalEmbedding offsets ids by 2
        num_position_embeddings=fields["max_position_embeddings"] + 2,
    )
    return fields
