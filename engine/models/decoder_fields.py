"""The config.json readers the model families share: heads, the RMSNorm and LayerNorm decoder cores,
per-layer attention schedules, experts per token, quantization.

Each family parser (families_dense.py, families_gemma.py, families_moe.py) starts from one of the two
decoder cores and adds what its family changes; families.py holds the registry that picks the parser.
Every reader raises ModelConfigError naming the field (through ConfigReader).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.models.config_reader import MISSING, ConfigReader
from engine.models.validation import check_experts, check_heads

Fields = dict[str, Any]   # ModelConfig keyword arguments

LAYER_TYPE_NAMES = {"full_attention": "full", "sliding_attention": "sliding"}


def read_heads(r: ConfigReader, hidden: int, heads_field: str, kv_field: str | None) -> Fields:
    """Attention heads, K/V heads (GQA/MQA) and head_dim (explicit, else hidden // heads)."""
    heads = r.positive_int(heads_field)
    kv_heads = r.positive_int(kv_field, default=heads) if kv_field else heads
    hidden_field = "n_embd" if heads_field == "n_head" else "hidden_size"
    check_heads(heads, kv_heads, hidden, r.has("head_dim"), (heads_field, kv_field or heads_field, hidden_field),
                r.prefix)
    head_dim = r.positive_int("head_dim") if r.has("head_dim") else hidden // heads
    return {"num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim}


def rotary_channels(head_dim: int, fraction: float) -> int:
    """Rotated channels per head for a `partial_rotary_factor` / `rotary_pct` share (at least 1)."""
    return max(1, int(head_dim * fraction))


def rmsnorm_decoder(r: ConfigReader, *, act_default: str = "silu", tie_default: bool = False,
                    hidden_act: str | None = None) -> Fields:
    """The common core of the Llama-style families: RMSNorm, rotary positions, gated MLP."""
    hidden = r.positive_int("hidden_size")
    heads = read_heads(r, hidden, "num_attention_heads", "num_key_value_heads")
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
        "rotary_dim": rotary_channels(heads["head_dim"], r.fraction("partial_rotary_factor", default=1.0)),
    }


@dataclass(frozen=True)
class LayerNormFieldNames:
    """Where a LayerNorm-family config.json keeps the shared sizes (GPT-2 spells them its own way)."""
    hidden: str = "hidden_size"
    heads: str = "num_attention_heads"
    intermediate: str = "intermediate_size"
    layers: str = "num_hidden_layers"
    positions: str = "max_position_embeddings"
    activation: str = "hidden_act"
    epsilon: str | None = "layer_norm_eps"   # None: the family fixes 1e-5 (OPT)


def layernorm_decoder(r: ConfigReader, names: LayerNormFieldNames, *, act_default: str, tie_default: bool,
                      attention_bias: bool, mlp_bias: bool, mlp_ratio_default: int | None = None) -> Fields:
    """The common core of the GPT-2-style families: LayerNorm, one ungated MLP (up, down), biases as the family
    says. No position fields: the family adds learned or rotary positions. `mlp_ratio_default`: the MLP width
    when the config omits it, in multiples of the hidden size (GPT-2's `n_inner` = 4 x `n_embd`)."""
    hidden = r.positive_int(names.hidden)
    heads = read_heads(r, hidden, names.heads, None)
    inner_default = mlp_ratio_default * hidden if mlp_ratio_default else MISSING
    return {
        "hidden_size": hidden,
        "intermediate_size": r.positive_int(names.intermediate, default=inner_default),
        "num_layers": r.positive_int(names.layers),
        **heads,
        "vocab_size": r.positive_int("vocab_size"),
        "max_position_embeddings": r.positive_int(names.positions),
        "gated_mlp": False,
        "hidden_act": r.string(names.activation, default=act_default),
        "norm_type": "layernorm",
        "norm_epsilon": r.epsilon(names.epsilon, default=1e-5) if names.epsilon else 1e-5,
        "tie_word_embeddings": r.boolean("tie_word_embeddings", default=tie_default),
        "qkv_bias": attention_bias,
        "attention_output_bias": attention_bias,
        "mlp_bias": mlp_bias,
    }


def reject_mixed_attention(r: ConfigReader) -> None:
    """For families that do not read `layer_types`: only all-global attention is modelled."""
    layer_types = r.raw("layer_types")
    if layer_types and any(kind != "full_attention" for kind in layer_types):
        kinds = sorted(set(layer_types)) if all(isinstance(k, str) for k in layer_types) else layer_types
        raise r.error("layer_types", kinds, "only 'full_attention' layers are supported for "
                                            f"model_type {r.model_type!r}")


def reject_qwen_sliding_window(r: ConfigReader) -> None:
    # Which Qwen layers slide under use_sliding_window has changed between transformers releases.
    if r.boolean("use_sliding_window", default=False):
        raise r.error("use_sliding_window", True, "Qwen sliding-window layers are not supported yet")


def _layer_types(r: ConfigReader, layers: int) -> tuple[str, ...]:
    kinds = r.string_list("layer_types")
    if len(kinds) != layers:
        raise r.error("layer_types", f"{len(kinds)} entries", f"expected one per layer ({layers})")
    unknown = sorted(set(kinds) - set(LAYER_TYPE_NAMES))
    if unknown:
        raise r.error("layer_types", unknown, f"supported layer types: {', '.join(LAYER_TYPE_NAMES)}")
    return tuple(LAYER_TYPE_NAMES[kind] for kind in kinds)


def attention_schedule(r: ConfigReader, layers: int, window_default: int | None,
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


def every_layer(_: int) -> bool:
    return True


def even_layers(i: int) -> bool:
    return i % 2 == 0


def read_experts_per_token(r: ConfigReader, experts: int, default: Any = MISSING) -> int:
    top_k = r.positive_int("num_experts_per_tok", default=default)
    experts_field = next((name for name in ("num_local_experts", "num_experts", "n_routed_experts") if r.has(name)),
                         "num_experts")
    check_experts(experts, top_k, (experts_field, "num_experts_per_tok"), r.prefix)
    return top_k


def read_quantization_method(r: ConfigReader) -> str | None:
    """quantization_config.quant_method (mxfp4, fp8, ...) when the config states one."""
    quantization = r.raw("quantization_config")
    if isinstance(quantization, dict) and isinstance(quantization.get("quant_method"), str):
        return quantization["quant_method"]
    return None
