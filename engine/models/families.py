"""Model families: how each Hugging Face `model_type` maps its config.json onto ModelConfig fields.

One parser per family returns the ModelConfig keyword arguments; `parse_hf_config` picks the parser.
Every field is read through ConfigReader, so a bad or missing value raises ModelConfigError naming it.

Per-layer schedules follow the reference implementations in Hugging Face transformers:
  * MoE layers: Qwen2/Qwen3-MoE `(i + 1) % decoder_sparse_step == 0 and i not in mlp_only_layers`;
    DeepSeek `i >= first_k_dense_replace and i % moe_layer_freq == 0`; Mixtral and gpt-oss every layer.
  * Sliding-window layers: `layer_types` where the family reads it (Gemma 2/3, gpt-oss); otherwise
    Gemma 2 and gpt-oss alternate (even layers slide), Gemma 3 slides except every
    `sliding_window_pattern`-th layer (default 6), Mistral, Mixtral and Phi-3 slide on every layer
    when `sliding_window` is set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.models.config_reader import MISSING, ConfigReader, ModelConfigError, field_error
from engine.models.families_recent import parse_kimi_k25, parse_minimax_m2
from engine.models.validation import check_experts, check_heads

# Fields that mean "mixture of experts" or "multi-head latent attention". A family that does not model
# them rejects a config that sets them, naming the field.
MOE_AND_MLA_FIELDS: dict[str, str] = {
    "num_local_experts": "mixture of experts",
    "num_experts": "mixture of experts",
    "n_routed_experts": "mixture of experts",
    "moe_intermediate_size": "mixture of experts",
    "q_lora_rank": "multi-head latent attention (DeepSeek MLA)",
    "kv_lora_rank": "multi-head latent attention (DeepSeek MLA)",
}

LAYER_TYPE_NAMES = {"full_attention": "full", "sliding_attention": "sliding"}

Fields = dict[str, Any]


@dataclass(frozen=True)
class Family:
    parse: Callable[[ConfigReader], Fields]
    uses: frozenset[str] = frozenset()  # which MOE_AND_MLA_FIELDS this family models


# --------------------------------------------------------------------- shared pieces

def _heads(r: ConfigReader, hidden: int, heads_field: str, kv_field: str | None) -> Fields:
    """Attention heads, K/V heads (GQA/MQA) and head_dim (explicit, else hidden // heads)."""
    heads = r.positive_int(heads_field)
    kv_heads = r.positive_int(kv_field, default=heads) if kv_field else heads
    hidden_field = "n_embd" if heads_field == "n_head" else "hidden_size"
    check_heads(heads, kv_heads, hidden, r.has("head_dim"), (heads_field, kv_field or heads_field, hidden_field),
                r.prefix)
    head_dim = r.positive_int("head_dim") if r.has("head_dim") else hidden // heads
    return {"num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim}


def _rotary_dim(head_dim: int, fraction: float) -> int:
    return max(1, int(head_dim * fraction))


def _rmsnorm_decoder(r: ConfigReader, *, act_default: str = "silu", tie_default: bool = False,
                     hidden_act: str | None = None) -> Fields:
    """The common core of the Llama-style families: RMSNorm, rotary positions, gated MLP."""
    hidden = r.positive_int("hidden_size")
    heads = _heads(r, hidden, "num_attention_heads", "num_key_value_heads")
    return {
        "hidden_size": hidden,
        "intermediate_size": r.positive_int("intermediate_size"),
        "num_layers": r.positive_int("num_hidden_layers"),
        **heads,
        "vocab_size": r.positive_int("vocab_size"),
        "max_position_embeddings": r.positive_int("max_position_embeddings"),
        "gated_mlp": True,
        "hidden_act": hidden_act or r.string("hidden_act", default=act_default),
        "norm_type": "rmsnorm",
        "norm_epsilon": r.epsilon("rms_norm_eps", default=1e-6),
        "tie_word_embeddings": r.boolean("tie_word_embeddings", default=tie_default),
        "qkv_bias": False,
        "attention_output_bias": False,
        "mlp_bias": False,
        "position_embedding": "rotary",
        "rotary_dim": _rotary_dim(heads["head_dim"], r.fraction("partial_rotary_factor", default=1.0)),
    }


def _reject_mixed_attention(r: ConfigReader) -> None:
    """For families that do not read `layer_types`: only all-global attention is modelled."""
    layer_types = r.raw("layer_types")
    if layer_types and any(kind != "full_attention" for kind in layer_types):
        kinds = sorted(set(layer_types)) if all(isinstance(k, str) for k in layer_types) else layer_types
        raise r.error("layer_types", kinds, "only 'full_attention' layers are supported for "
                                            f"model_type {r.model_type!r}")


def _layer_types(r: ConfigReader, layers: int) -> tuple[str, ...]:
    kinds = r.string_list("layer_types")
    if len(kinds) != layers:
        raise r.error("layer_types", f"{len(kinds)} entries", f"expected one per layer ({layers})")
    unknown = sorted(set(kinds) - set(LAYER_TYPE_NAMES))
    if unknown:
        raise r.error("layer_types", unknown, f"supported layer types: {', '.join(LAYER_TYPE_NAMES)}")
    return tuple(LAYER_TYPE_NAMES[kind] for kind in kinds)


def _attention_schedule(r: ConfigReader, layers: int, window_default: int | None,
                        is_sliding: Callable[[int], bool], read_layer_types: bool = True) -> Fields:
    """Per-layer "full"/"sliding" and the window: `layer_types` when given, else the family's rule."""
    window = r.positive_int("sliding_window") if r.has("sliding_window") else (
        None if "sliding_window" in r.data else window_default)
    if read_layer_types and r.has("layer_types"):
        kinds = _layer_types(r, layers)
    else:
        kinds = tuple("sliding" if window is not None and is_sliding(i) else "full" for i in range(layers))
    if "sliding" in kinds and window is None:
        raise r.error("sliding_window", None, "sliding-window layers need a window size")
    return {"layer_attention": kinds, "sliding_window": window if "sliding" in kinds else None}


def _every_layer(_: int) -> bool:
    return True


def _even_layers(i: int) -> bool:
    return i % 2 == 0


def _experts_per_token(r: ConfigReader, experts: int, default: Any = MISSING) -> int:
    top_k = r.positive_int("num_experts_per_tok", default=default)
    experts_field = next((name for name in ("num_local_experts", "num_experts", "n_routed_experts") if r.has(name)),
                         "num_experts")
    check_experts(experts, top_k, (experts_field, "num_experts_per_tok"), r.prefix)
    return top_k


def _quantization_method(r: ConfigReader) -> str | None:
    quantization = r.raw("quantization_config")
    if isinstance(quantization, dict) and isinstance(quantization.get("quant_method"), str):
        return quantization["quant_method"]
    return None


# --------------------------------------------------------------------- dense families

def _parse_llama_family(r: ConfigReader) -> Fields:
    """llama, mistral, qwen2: RMSNorm, rotary, gated SiLU MLP, optional GQA."""
    model_type = r.model_type
    fields = _rmsnorm_decoder(r)
    _reject_mixed_attention(r)
    # Llama: one switch for q/k/v/o biases; Qwen2: q/k/v biases always, none on o; Mistral: none.
    attention_bias = r.boolean("attention_bias", default=False) if model_type == "llama" else False
    fields["qkv_bias"] = True if model_type == "qwen2" else attention_bias
    fields["attention_output_bias"] = attention_bias
    fields["mlp_bias"] = r.boolean("mlp_bias", default=False) if model_type == "llama" else False
    if model_type == "mistral":  # Mistral slides on every layer when a window is set
        fields.update(_attention_schedule(r, fields["num_layers"], None, _every_layer, read_layer_types=False))
    if model_type == "qwen2":
        _reject_qwen_sliding_window(r)
    return fields


def _reject_qwen_sliding_window(r: ConfigReader) -> None:
    # Which Qwen layers slide under use_sliding_window has changed between transformers releases.
    if r.boolean("use_sliding_window", default=False):
        raise r.error("use_sliding_window", True, "Qwen sliding-window layers are not supported yet")


def _parse_qwen3(r: ConfigReader) -> Fields:
    """Qwen3: Llama layout plus per-head RMSNorm on q and k; `attention_bias` on q, k, v and o."""
    fields = _rmsnorm_decoder(r)
    _reject_mixed_attention(r)
    _reject_qwen_sliding_window(r)
    bias = r.boolean("attention_bias", default=False)
    fields.update(qkv_bias=bias, attention_output_bias=bias, qk_norm=True)
    return fields


def _parse_phi3(r: ConfigReader) -> Fields:
    """Phi-3: fused qkv_proj and gate_up_proj (same weights as separate ones), no biases; HF slides every
    layer when `sliding_window` is set (Phi-3-mini-4k: 2047)."""
    fields = _rmsnorm_decoder(r, tie_default=False)
    fields.update(fused_qkv_proj=True, fused_gate_up_proj=True, norm_epsilon=r.epsilon("rms_norm_eps", 1e-5))
    fields.update(_attention_schedule(r, fields["num_layers"], None, _every_layer, read_layer_types=False))
    return fields


def _gemma_core(r: ConfigReader, *, softcap_defaults: tuple[float | None, float | None]) -> Fields:
    """Gemma 2 and 3: RMSNorm before and after both blocks (4 per layer), GeGLU, tied embeddings."""
    act = r.string("hidden_activation", default=r.raw("hidden_act", "gelu_pytorch_tanh"))
    fields = _rmsnorm_decoder(r, tie_default=True, hidden_act=act)
    bias = r.boolean("attention_bias", default=False)
    attn_cap, final_cap = softcap_defaults

    def softcap(field: str, default: float | None) -> float | None:
        return r.optional_positive_number(field) if field in r.data else default

    fields.update(
        qkv_bias=bias, attention_output_bias=bias, norms_per_layer=4,
        query_pre_attn_scalar=r.optional_positive_number("query_pre_attn_scalar") or 256.0,
        attn_logit_softcapping=softcap("attn_logit_softcapping", attn_cap),
        final_logit_softcapping=softcap("final_logit_softcapping", final_cap),
    )
    return fields


def _parse_gemma2(r: ConfigReader) -> Fields:
    fields = _gemma_core(r, softcap_defaults=(50.0, 30.0))
    fields.update(_attention_schedule(r, fields["num_layers"], 4096, _even_layers))
    return fields


def _gemma3_text_fields(r: ConfigReader) -> Fields:
    """Gemma 3 text model; the defaults are Gemma3TextConfig's (Google's configs state only the sizes)."""
    data_with_defaults = {"vocab_size": 262208, "max_position_embeddings": 131072, **r.data}
    r = ConfigReader(data_with_defaults, r.model_type, r.prefix)
    fields = _gemma_core(r, softcap_defaults=(None, None))
    fields["qk_norm"] = True
    pattern_field = "sliding_window_pattern" if r.has("sliding_window_pattern") else "_sliding_window_pattern"
    pattern = r.positive_int(pattern_field, default=6)
    fields.update(_attention_schedule(r, fields["num_layers"], 4096, lambda i: (i + 1) % pattern != 0))
    return fields


def _parse_gemma3_text(r: ConfigReader) -> Fields:
    return _gemma3_text_fields(r)


def _parse_gemma3(r: ConfigReader) -> Fields:
    """Gemma3ForConditionalGeneration: the language model is `text_config`; the SigLIP vision tower and the
    multimodal projector are counted apart (params_vision_encoder), not in params_total."""
    text = r.nested("text_config", "gemma3")
    fields = _gemma3_text_fields(text)
    fields["tie_word_embeddings"] = r.boolean("tie_word_embeddings", default=True)
    if r.has("vision_config"):
        fields["params_vision_encoder"] = _siglip_vision_params(r.nested("vision_config")) + \
            _gemma3_projector_params(r.nested("vision_config"), fields["hidden_size"])
    return fields


def _siglip_vision_params(v: ConfigReader) -> int:
    """SigLIP vision tower (SiglipVisionModel): patch conv, position table, encoder layers, post LayerNorm."""
    kind = v.string("model_type", default="siglip_vision_model")
    if kind != "siglip_vision_model":
        raise v.error("model_type", kind, "only 'siglip_vision_model' vision towers are counted")
    h = v.positive_int("hidden_size", default=768)
    inner = v.positive_int("intermediate_size", default=3072)
    layers = v.positive_int("num_hidden_layers", default=12)
    channels = v.positive_int("num_channels", default=3)
    image, patch = v.positive_int("image_size", default=224), v.positive_int("patch_size", default=16)
    embeddings = channels * patch * patch * h + h + (image // patch) ** 2 * h
    mlp = h * inner + inner + inner * h + h
    layer = 4 * (h * h + h) + 2 * 2 * h + mlp
    head = (h + 3 * h * h + 3 * h + h * h + h + 2 * h + mlp) if v.boolean("vision_use_head", default=True) else 0
    return embeddings + layers * layer + 2 * h + head


def _gemma3_projector_params(v: ConfigReader, text_hidden: int) -> int:
    """Gemma3MultiModalProjector: RMSNorm on the vision features and a [vision_hidden, text_hidden] matrix."""
    h = v.positive_int("hidden_size", default=768)
    return h + h * text_hidden


# --------------------------------------------------------------------- mixture-of-experts families

def _parse_mixtral(r: ConfigReader) -> Fields:
    """Mixtral: every layer is MoE; each expert is a SwiGLU MLP of `intermediate_size`; router without bias."""
    fields = _rmsnorm_decoder(r, tie_default=False)
    fields["norm_epsilon"] = r.epsilon("rms_norm_eps", default=1e-5)
    experts = r.positive_int("num_local_experts")
    layers = fields["num_layers"]
    fields.update(
        num_experts=experts, experts_per_token=_experts_per_token(r, experts, default=2),
        moe_intermediate_size=fields["intermediate_size"], moe_layers=(True,) * layers,
        **_attention_schedule(r, layers, None, _every_layer, read_layer_types=False),
    )
    return fields


def _qwen_moe_layers(r: ConfigReader, layers: int, experts: int) -> tuple[bool, ...]:
    step = r.positive_int("decoder_sparse_step", default=1)
    dense_only = r.int_list("mlp_only_layers", default=[])
    bad = [i for i in dense_only if not 0 <= i < layers]
    if bad:
        raise r.error("mlp_only_layers", bad, f"layer indices must be in 0..{layers - 1}")
    return tuple(i not in dense_only and experts > 0 and (i + 1) % step == 0 for i in range(layers))


def _parse_qwen_moe(r: ConfigReader) -> Fields:
    """Qwen2-MoE / Qwen3-MoE: routed experts of `moe_intermediate_size`; Qwen2-MoE adds one shared expert of
    `shared_expert_intermediate_size` behind a sigmoid gate; Qwen3-MoE adds q/k norms and has no shared expert."""
    qwen3 = r.model_type == "qwen3_moe"
    fields = _rmsnorm_decoder(r)
    _reject_mixed_attention(r)
    _reject_qwen_sliding_window(r)
    experts = r.positive_int("num_experts")
    layers = fields["num_layers"]
    fields.update(
        num_experts=experts, experts_per_token=_experts_per_token(r, experts),
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


def _parse_deepseek(r: ConfigReader) -> Fields:
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
        "quantization_method": _quantization_method(r),
    }
    _reject_mixed_attention(r)
    experts = r.optional_positive_int("n_routed_experts") or 0
    if experts:
        first_dense = r.non_negative_int("first_k_dense_replace", default=0)
        frequency = r.positive_int("moe_layer_freq", default=1)
        moe_layers = tuple(i >= first_dense and i % frequency == 0 for i in range(layers))
        width = r.positive_int("moe_intermediate_size")
        shared = r.non_negative_int("n_shared_experts", default=0)
        topk_method = r.raw("topk_method", "greedy")
        fields.update(
            num_experts=experts, experts_per_token=_experts_per_token(r, experts), moe_intermediate_size=width,
            num_shared_experts=shared, shared_expert_intermediate_size=shared * width, moe_layers=moe_layers,
            # V3 (and V2 with noaux_tc) stores e_score_correction_bias, one value per routed expert
            router_bias=r.model_type == "deepseek_v3" or topk_method == "noaux_tc",
        )
    return fields


def _parse_gpt_oss(r: ConfigReader) -> Fields:
    """gpt-oss: alternating sliding (128) / full attention with a learned sink per head, biases on q/k/v/o,
    every layer MoE with router bias and expert biases; experts ship as MXFP4 (counted as elements)."""
    fields = _rmsnorm_decoder(r)
    fields["norm_epsilon"] = r.epsilon("rms_norm_eps", default=1e-5)
    experts = r.positive_int("num_local_experts")
    bias = r.boolean("attention_bias", default=True)
    layers = fields["num_layers"]
    fields.update(
        qkv_bias=bias, attention_output_bias=bias, attention_sinks=True,
        num_experts=experts,
        experts_per_token=_experts_per_token(r, experts, default=r.raw("experts_per_token", 4)),
        moe_intermediate_size=fields["intermediate_size"], moe_layers=(True,) * layers,
        router_bias=True, expert_bias=True, quantization_method=_quantization_method(r),
        **_attention_schedule(r, layers, 128, _even_layers),
    )
    return fields


# --------------------------------------------------------------------- learned-position families

def _parse_gpt2(r: ConfigReader) -> Fields:
    """GPT-2: LayerNorm, learned positions, Conv1D projections with biases, GELU MLP, tied head."""
    hidden = r.positive_int("n_embd")
    heads = _heads(r, hidden, "n_head", None)
    positions = r.positive_int("n_positions")
    return {
        "hidden_size": hidden,
        "intermediate_size": r.positive_int("n_inner", default=4 * hidden),
        "num_layers": r.positive_int("n_layer"),
        **heads,
        "vocab_size": r.positive_int("vocab_size"),
        "max_position_embeddings": positions,
        "gated_mlp": False,
        "hidden_act": r.string("activation_function", default="gelu_new"),
        "norm_type": "layernorm",
        "norm_epsilon": r.epsilon("layer_norm_epsilon", default=1e-5),
        "tie_word_embeddings": r.boolean("tie_word_embeddings", default=True),
        "qkv_bias": True,
        "attention_output_bias": True,
        "mlp_bias": True,
        "position_embedding": "learned",
        "num_position_embeddings": positions,
    }


def _parse_gpt_neox(r: ConfigReader) -> Fields:
    """GPT-NeoX / Pythia: LayerNorm, partial rotary, fused QKV with biases, GELU MLP, untied head."""
    hidden = r.positive_int("hidden_size")
    heads = _heads(r, hidden, "num_attention_heads", None)
    attention_bias = r.boolean("attention_bias", default=True)
    return {
        "hidden_size": hidden,
        "intermediate_size": r.positive_int("intermediate_size"),
        "num_layers": r.positive_int("num_hidden_layers"),
        **heads,
        "vocab_size": r.positive_int("vocab_size"),
        "max_position_embeddings": r.positive_int("max_position_embeddings"),
        "gated_mlp": False,
        "hidden_act": r.string("hidden_act", default="gelu"),
        "norm_type": "layernorm",
        "norm_epsilon": r.epsilon("layer_norm_eps", default=1e-5),
        "tie_word_embeddings": r.boolean("tie_word_embeddings", default=False),
        "qkv_bias": attention_bias,
        "attention_output_bias": attention_bias,
        "mlp_bias": True,
        "position_embedding": "rotary",
        "rotary_dim": _rotary_dim(heads["head_dim"], r.fraction("rotary_pct", default=0.25)),
        "parallel_residual": r.boolean("use_parallel_residual", default=True),
        "fused_qkv_proj": True,
    }


def _parse_opt(r: ConfigReader) -> Fields:
    """OPT: LayerNorm, learned positions (+2 offset rows), ReLU MLP with biases, tied head."""
    hidden = r.positive_int("hidden_size")
    projection = r.positive_int("word_embed_proj_dim", default=hidden)
    if projection != hidden:
        raise r.error("word_embed_proj_dim", projection,
                      f"differs from hidden_size ({hidden}); OPT embedding projections are not supported yet")
    if not r.boolean("layer_norm_elementwise_affine", default=True):
        raise r.error("layer_norm_elementwise_affine", False, "LayerNorm without weights is not supported yet")
    heads = _heads(r, hidden, "num_attention_heads", None)
    bias = r.boolean("enable_bias", default=True)
    positions = r.positive_int("max_position_embeddings")
    norm_before = r.boolean("do_layer_norm_before", default=True)
    return {
        "hidden_size": hidden,
        "intermediate_size": r.positive_int("ffn_dim"),
        "num_layers": r.positive_int("num_hidden_layers"),
        **heads,
        "vocab_size": r.positive_int("vocab_size"),
        "max_position_embeddings": positions,
        "gated_mlp": False,
        "hidden_act": r.string("activation_function", default="relu"),
        "norm_type": "layernorm",
        "norm_epsilon": 1e-5,
        "has_final_norm": norm_before and not r.boolean("_remove_final_layer_norm", default=False),
        "tie_word_embeddings": r.boolean("tie_word_embeddings", default=True),
        "qkv_bias": bias,
        "attention_output_bias": bias,
        "mlp_bias": bias,
        "position_embedding": "learned",
        "num_position_embeddings": positions + 2,  # OPTLearnedPositionalEmbedding offsets ids by 2
    }


# --------------------------------------------------------------------- registry

FAMILIES: dict[str, Family] = {
    "llama": Family(_parse_llama_family),
    "mistral": Family(_parse_llama_family),
    "qwen2": Family(_parse_llama_family),
    "gpt2": Family(_parse_gpt2),
    "gpt_neox": Family(_parse_gpt_neox),
    "opt": Family(_parse_opt),
    "mixtral": Family(_parse_mixtral, frozenset({"num_local_experts"})),
    "qwen2_moe": Family(_parse_qwen_moe, frozenset({"num_experts", "moe_intermediate_size"})),
    "qwen3": Family(_parse_qwen3),
    "qwen3_moe": Family(_parse_qwen_moe, frozenset({"num_experts", "moe_intermediate_size"})),
    "deepseek_v2": Family(_parse_deepseek, frozenset({"n_routed_experts", "moe_intermediate_size",
                                                      "q_lora_rank", "kv_lora_rank"})),
    "deepseek_v3": Family(_parse_deepseek, frozenset({"n_routed_experts", "moe_intermediate_size",
                                                      "q_lora_rank", "kv_lora_rank"})),
    "gemma2": Family(_parse_gemma2),
    "gemma3": Family(_parse_gemma3),
    "gemma3_text": Family(_parse_gemma3_text),
    "phi3": Family(_parse_phi3),
    "gpt_oss": Family(_parse_gpt_oss, frozenset({"num_local_experts"})),
    "kimi_k2": Family(_parse_deepseek, frozenset({"n_routed_experts", "moe_intermediate_size",
                                                  "q_lora_rank", "kv_lora_rank"})),   # Kimi-K2: DeepSeek-V3 shapes
    "kimi_k25": Family(parse_kimi_k25),     # its MoE and MLA fields are under text_config
    "minimax_m2": Family(parse_minimax_m2, frozenset({"num_local_experts"})),
}
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(FAMILIES)

# When a config has no model_type, its architecture class tells us the family.
ARCHITECTURE_TO_MODEL_TYPE: dict[str, str] = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "GPT2LMHeadModel": "gpt2",
    "GPTNeoXForCausalLM": "gpt_neox",
    "OPTForCausalLM": "opt",
    "MixtralForCausalLM": "mixtral",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3_text",
    "Gemma3ForConditionalGeneration": "gemma3",
    "Phi3ForCausalLM": "phi3",
    "GptOssForCausalLM": "gpt_oss",
    "KimiK25ForConditionalGeneration": "kimi_k25",
    "MiniMaxM2ForCausalLM": "minimax_m2",
}


def model_type_of(data: dict) -> str:
    model_type = data.get("model_type")
    if model_type is None:
        for architecture in data.get("architectures") or ():
            if architecture in ARCHITECTURE_TO_MODEL_TYPE:
                return ARCHITECTURE_TO_MODEL_TYPE[architecture]
        raise ModelConfigError(
            "config.json field 'model_type' is missing (and no known 'architectures' entry); "
            f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}")
    if model_type not in FAMILIES:
        raise field_error("model_type", model_type,
                          f"not supported yet; supported: {', '.join(SUPPORTED_MODEL_TYPES)}")
    return model_type


def parse_hf_config(data: dict) -> tuple[str, Fields]:
    """(model_type, ModelConfig keyword arguments) for the dict of a config.json."""
    model_type = model_type_of(data)
    family = FAMILIES[model_type]
    if data.get("is_encoder_decoder") is True:
        raise field_error("is_encoder_decoder", True, "encoder-decoder models are not supported")
    for field, feature in MOE_AND_MLA_FIELDS.items():
        if data.get(field) and field not in family.uses:
            modelled = sorted(t for t, f in FAMILIES.items() if field in f.uses)
            raise field_error(field, data[field], f"{feature} is not modelled for model_type {model_type!r} "
                                                  f"(it is for {', '.join(modelled)})")
    return model_type, family.parse(ConfigReader(data, model_type))
