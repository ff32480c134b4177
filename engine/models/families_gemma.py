"""Gemma 2 and Gemma 3 (text and multimodal): RMSNorm before and after both blocks, GeGLU, tied embeddings,
logit soft-capping, and the SigLIP vision tower Gemma 3 carries (counted apart from params_total).

Sliding-window layers: `layer_types` when the config gives it; otherwise Gemma 2 alternates (even layers
slide, window 4096) and Gemma 3 slides except every `sliding_window_pattern`-th layer (default 6).
"""

from __future__ import annotations

from engine.models.config_reader import ConfigReader
from engine.models.decoder_fields import Fields, attention_schedule, even_layers, rmsnorm_decoder


def _gemma_core(r: ConfigReader, *, softcap_defaults: tuple[float | None, float | None]) -> Fields:
    """Gemma 2 and 3: RMSNorm before and after both blocks (4 per layer), GeGLU, tied embeddings."""
    act = r.string("hidden_activation", default=r.raw("hidden_act", "gelu_pytorch_tanh"))
    fields = rmsnorm_decoder(r, tie_default=True, hidden_act=act)
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


def parse_gemma2(r: ConfigReader) -> Fields:
    fields = _gemma_core(r, softcap_defaults=(50.0, 30.0))
    fields.update(attention_schedule(r, fields["num_layers"], 4096, even_layers))
    return fields


def parse_gemma3_text(r: ConfigReader) -> Fields:
    """Gemma 3 text model; the defaults are Gemma3TextConfig's (Google's configs state only the sizes)."""
    data_with_defaults = {"vocab_size": 262208, "max_position_embeddings": 131072, **r.data}
    r = ConfigReader(data_with_defaults, r.model_type, r.prefix)
    fields = _gemma_core(r, softcap_defaults=(None, None))
    fields["qk_norm"] = True
    pattern_field = "sliding_window_pattern" if r.has("sliding_window_pattern") else "_sliding_window_pattern"
    pattern = r.positive_int(pattern_field, default=6)
    fields.update(attention_schedule(r, fields["num_layers"], 4096, lambda i: (i + 1) % pattern != 0))
    return fields


def parse_gemma3(r: ConfigReader) -> Fields:
    """Gemma3ForConditionalGeneration: the language model is `text_config`; the SigLIP vision tower and the
    multimodal projector are counted apart (params_vision_encoder), not in params_total."""
    text = r.nested("text_config", "gemma3")
    fields = parse_gemma3_text(text)
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
