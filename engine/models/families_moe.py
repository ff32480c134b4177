"""Mixture-of-experts families: Mixtral, Qwen2/Qwen3-MoE, DeepSeek-V2/V3 (and Kimi-K2, Kimi-K2.5), gpt-oss,
MiniMax-M2. Each parser returns ModelConfig keyword arguments.

Which layers are MoE follows the reference implementations in Hugging Face transformers: Qwen2/Qwen3-MoE
`(i + 1) % decoder_sparse_step == 0 and i not in mlp_only_layers`; DeepSeek
`i >= first_k_dense_replace and i % moe_layer_freq == 0`; Mixtral, gpt-oss and MiniMax-M2 every layer.
Sliding windows: Mixtral and MiniMax-M2 slide on every layer when `sliding_window` is set; gpt-oss reads
`layer_types`, else alternates (even layers slide, window 128).

Kimi-K2.5 (`kimi_k25`, KimiK25ForConditionalGeneration): the language model is `text_config`, a DeepSeek-V3
decoder (MLA, 1 dense layer then 384 routed experts top-8 with one shared expert) read by the DeepSeek parser;
the MoonViT vision tower is not counted (serving benchmarks send text).

MiniMax-M2 / M2.5 (`minimax_m2`): GQA attention with explicit head_dim, partial rotary (`rotary_dim`), an RMSNorm
over the whole query and key projections (`qk_norm_type` "per_layer"; counted as per-head q/k norms: the weights
differ by (heads - 1) x head_dim per layer and the cross-device reduction of its variance under tp is not timed),
and a mixture of `num_local_experts` SwiGLU experts of `intermediate_size` on every layer with a routing bias and
no shared expert. The MTP modules (`num_mtp_modules`) are not counted, like DeepSeek's.

Not modelled (refused by name): Qwen3.5 (`qwen3_5_moe`: 3 of 4 layers are Gated DeltaNet linear attention, a
recurrent state the kernel vocabulary has no kind for) and GLM-5 (`glm_moe_dsa`: MLA with DeepSeek sparse
attention, an indexer picking `index_topk` keys per query, which dense MLA would overstate beyond that length).
"""

from __future__ import annotations

from engine.models.config_reader import ConfigReader
from engine.models.decoder_fields import Fields, attention_schedule, even_layers, every_layer, \
    read_experts_per_token, read_quantization_method, reject_mixed_attention, reject_qwen_sliding_window, \
    rmsnorm_decoder, rotary_channels


def parse_mixtral(r: ConfigReader) -> Fields:
    """Mixtral: every layer is MoE; each expert is a SwiGLU MLP of `intermediate_size`; router without bias."""
    fields = rmsnorm_decoder(r, tie_default=False)
    fields["norm_epsilon"] = r.epsilon("rms_norm_eps", default=1e-5)
    experts = r.positive_int("num_local_experts")
    layers = fields["num_layers"]
    fields.update(
        num_experts=experts, experts_per_token=read_experts_per_token(r, experts, default=2),
        moe_intermediate_size=fields["intermediate_size"], moe_layers=(True,) * layers,
        **attention_schedule(r, layers, None, every_layer, read_layer_types=False),
    )
    return fields


def _qwen_moe_layers(r: ConfigReader, layers: int, experts: int) -> tuple[bool, ...]:
    step = r.positive_int("decoder_sparse_step", default=1)
    dense_only = r.int_list("mlp_only_layers", default=[])
    bad = [i for i in dense_only if not 0 <= i < layers]
    if bad:
        raise r.error("mlp_only_layers", bad, f"layer indices must be in 0..{layers - 1}")
    return tuple(i not in dense_only and experts > 0 and (i + 1) % step == 0 for i in range(layers))


def parse_qwen_moe(r: ConfigReader) -> Fields:
    """Qwen2-MoE / Qwen3-MoE: routed experts of `moe_intermediate_size`; Qwen2-MoE adds one shared expert of
    `shared_expert_intermediate_size` behind a sigmoid gate; Qwen3-MoE adds q/k norms and has no shared expert."""
    qwen3 = r.model_type == "qwen3_moe"
    fields = rmsnorm_decoder(r)
    reject_mixed_attention(r)
    reject_qwen_sliding_window(r)
    experts = r.positive_int("num_experts")
    layers = fields["num_layers"]
    fields.update(
        num_experts=experts, experts_per_token=read_experts_per_token(r, experts),
        moe_intermediate_size=r.positive_int("moe_intermediate_size"),
        moe_layers=_qwen_moe_layers(r, layers, experts),
    )
    if qwen3:
        bias = r.boolean("attention_bias", default=False)
        fields.update(qkv_bias=bias, attention_output_bias=bias, qk_norm=True)
    else:
        fields["qkv_bias"] = r.boolean("qkv_bias", default=True)
        shared = r.non_negative_int("shared_expert_intermediate_size", default=0)
        if shared:
            fields.update(num_shared_experts=1, shared_expert_intermediate_size=shared, shared_expert_gate=True)
    return fields


def parse_deepseek(r: ConfigReader) -> Fields:
    """DeepSeek-V2/V3: multi-head latent attention, dense first layers then MoE with shared experts.

    head_dim is the query/key head width (qk_nope_head_dim + qk_rope_head_dim) and num_key_value_heads
    the number of heads, i.e. the shapes of the decompressed attention; the cache holds the latent.
    """
    hidden = r.positive_int("hidden_size")
    heads = r.positive_int("num_attention_heads")
    nope, rope = r.positive_int("qk_nope_head_dim"), r.positive_int("qk_rope_head_dim")
    layers = r.positive_int("num_hidden_layers")
    bias = r.boolean("attention_bias", default=False)
    fields: Fields = {
        "hidden_size": hidden,
        "intermediate_size": r.positive_int("intermediate_size"),
        "num_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": heads,
        "head_dim": nope + rope,
        "vocab_size": r.positive_int("vocab_size"),
        "max_position_embeddings": r.positive_int("max_position_embeddings"),
        "gated_mlp": True,
        "hidden_act": r.string("hidden_act", default="silu"),
        "norm_type": "rmsnorm",
        "norm_epsilon": r.epsilon("rms_norm_eps", default=1e-6),
        "tie_word_embeddings": r.boolean("tie_word_embeddings", default=False),
        "qkv_bias": bias,  # on q_a_proj and kv_a_proj_with_mqa
        "attention_output_bias": bias,
        "mlp_bias": r.boolean("mlp_bias", default=False) if r.model_type == "deepseek_v2" else False,
        "position_embedding": "rotary",
        "rotary_dim": rope,
        "attention_kind": "mla",
        "q_lora_rank": r.optional_positive_int("q_lora_rank"),
        "kv_lora_rank": r.positive_int("kv_lora_rank"),
        "qk_nope_head_dim": nope,
        "qk_rope_head_dim": rope,
        "v_head_dim": r.positive_int("v_head_dim"),
        "multi_token_prediction_layers": r.non_negative_int("num_nextn_predict_layers", default=0),
        "quantization_method": read_quantization_method(r),
    }
    reject_mixed_attention(r)
    fields.update(_deepseek_experts(r, layers))
    return fields


def _deepseek_experts(r: ConfigReader, layers: int) -> Fields:
    """DeepSeek's routed and shared experts (none without `n_routed_experts`)."""
    experts = r.optional_positive_int("n_routed_experts") or 0
    if not experts:
        return {}
    first_dense = r.non_negative_int("first_k_dense_replace", default=0)
    frequency = r.positive_int("moe_layer_freq", default=1)
    moe_layers = tuple(i >= first_dense and i % frequency == 0 for i in range(layers))
    width = r.positive_int("moe_intermediate_size")
    shared = r.non_negative_int("n_shared_experts", default=0)
    topk_method = r.raw("topk_method", "greedy")
    return dict(
        num_experts=experts, experts_per_token=read_experts_per_token(r, experts), moe_intermediate_size=width,
        num_shared_experts=shared, shared_expert_intermediate_size=shared * width, moe_layers=moe_layers,
        # V3 (and V2 with noaux_tc) stores e_score_correction_bias, one value per routed expert
        router_bias=r.model_type == "deepseek_v3" or topk_method == "noaux_tc",
    )


def parse_kimi_k25(r: ConfigReader) -> Fields:
    """Kimi-K2.5: a DeepSeek-V3 decoder under `text_config` (its MoE and MLA fields live there)."""
    text = r.nested("text_config")
    kind = text.string("model_type", default="kimi_k2")
    if kind not in ("kimi_k2", "deepseek_v3"):
        raise text.error("model_type", kind, "a Kimi-K2.5 language model is 'kimi_k2' (a DeepSeek-V3 decoder)")
    fields = parse_deepseek(ConfigReader(text.data, "deepseek_v3", text.prefix))
    fields["tie_word_embeddings"] = r.boolean("tie_word_embeddings", default=fields["tie_word_embeddings"])
    return fields


def parse_gpt_oss(r: ConfigReader) -> Fields:
    """gpt-oss: alternating sliding (128) / full attention with a learned sink per head, biases on q/k/v/o,
    every layer MoE with router bias and expert biases; experts ship as MXFP4 (counted as elements)."""
    fields = rmsnorm_decoder(r)
    fields["norm_epsilon"] = r.epsilon("rms_norm_eps", default=1e-5)
    experts = r.positive_int("num_local_experts")
    bias = r.boolean("attention_bias", default=True)
    layers = fields["num_layers"]
    fields.update(
        qkv_bias=bias, attention_output_bias=bias, attention_sinks=True,
        num_experts=experts,
        experts_per_token=read_experts_per_token(r, experts, default=r.raw("experts_per_token", 4)),
        moe_intermediate_size=fields["intermediate_size"], moe_layers=(True,) * layers,
        router_bias=True, expert_bias=True, quantization_method=read_quantization_method(r),
        **attention_schedule(r, layers, 128, even_layers),
    )
    return fields


def parse_minimax_m2(r: ConfigReader) -> Fields:
    """MiniMax-M2: GQA with partial rotary and q/k norms, a SwiGLU expert mixture on every layer, routing bias."""
    fields = rmsnorm_decoder(r, tie_default=False)
    fields["norm_epsilon"] = r.epsilon("rms_norm_eps", default=1e-6)
    head_dim = fields["head_dim"]
    fields["rotary_dim"] = r.positive_int("rotary_dim") if r.has("rotary_dim") else rotary_channels(head_dim, 1.0)
    if fields["rotary_dim"] > head_dim:
        raise r.error("rotary_dim", fields["rotary_dim"], f"must be at most head_dim ({head_dim})")
    norm_type = r.string("qk_norm_type", default="per_layer")
    if norm_type not in ("per_layer", "per_head"):
        raise r.error("qk_norm_type", norm_type, "expected 'per_layer' or 'per_head'")
    shared = r.non_negative_int("shared_intermediate_size", default=0)
    if shared:
        raise r.error("shared_intermediate_size", shared, "a MiniMax-M2 shared expert is not modelled (0 expected)")
    experts = r.positive_int("num_local_experts")
    layers = fields["num_layers"]
    fields.update(
        qk_norm=r.boolean("use_qk_norm", default=True),
        num_experts=experts, experts_per_token=read_experts_per_token(r, experts),
        moe_intermediate_size=fields["intermediate_size"], moe_layers=(True,) * layers,
        router_bias=r.boolean("use_routing_bias", default=True),
        quantization_method=read_quantization_method(r),
        **attention_schedule(r, layers, None, every_layer, read_layer_types=False),
    )
    return fields
