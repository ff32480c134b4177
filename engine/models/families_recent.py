"""Model families added for the measured serving runs (aiconfigurator-core's model_configs): Kimi-K2.5 and MiniMax-M2.

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

Fields = dict


def parse_kimi_k25(r: ConfigReader) -> Fields:
    from engine.models.families import _parse_deepseek
    text = r.nested("text_config")
    kind = text.string("model_type", default="kimi_k2")
    if kind not in ("kimi_k2", "deepseek_v3"):
        raise text.error("model_type", kind, "a Kimi-K2.5 language model is 'kimi_k2' (a DeepSeek-V3 decoder)")
    fields = _parse_deepseek(ConfigReader(text.data, "deepseek_v3", text.prefix))
    fields["tie_word_embeddings"] = r.boolean("tie_word_embeddings", default=fields["tie_word_embeddings"])
    return fields


def parse_minimax_m2(r: ConfigReader) -> Fields:
    from engine.models.families import _attention_schedule, _every_layer, _experts_per_token, \
        _quantization_method, _rmsnorm_decoder, _rotary_dim
    fields = _rmsnorm_decoder(r, tie_default=False)
    fields["norm_epsilon"] = r.epsilon("rms_norm_eps", default=1e-6)
    head_dim = fields["head_dim"]
    fields["rotary_dim"] = r.positive_int("rotary_dim") if r.has("rotary_dim") else _rotary_dim(head_dim, 1.0)
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
        num_experts=experts, experts_per_token=_experts_per_token(r, experts),
        moe_intermediate_size=fields["intermediate_size"], moe_layers=(True,) * layers,
        router_bias=r.boolean("use_routing_bias", default=True),
        quantization_method=_quantization_method(r),
        **_attention_schedule(r, layers, None, _every_layer, read_layer_types=False),
    )
    return fields
