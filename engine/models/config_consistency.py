"""The checks across ModelConfig fields that no single field's type can state: heads divide, positions are
rotary or learned, one entry per layer in the per-layer schedules, experts and latent attention complete.

ModelConfig's validators call these; each raises ValueError (pydantic wraps it; ModelConfig.from_hf_config
turns it into a ModelConfigError naming the model).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.models.size_limits import SIZE_LIMITS

if TYPE_CHECKING:
    from engine.models.config import ModelConfig


def fill_per_layer_defaults(data: dict[str, Any]) -> dict[str, Any]:
    """A copy of ModelConfig input with empty `moe_layers` / `layer_attention` spelled out per layer (all MoE
    when the model has experts, all full attention) and an MHA `v_head_dim` defaulting to `head_dim`."""
    data = dict(data)
    layers = data.get("num_layers")
    if isinstance(layers, int) and not isinstance(layers, bool) and 0 < layers <= SIZE_LIMITS["num_layers"].high:
        if not data.get("moe_layers"):
            data["moe_layers"] = (bool(data.get("num_experts")),) * layers
        if not data.get("layer_attention"):
            data["layer_attention"] = ("full",) * layers
    if not data.get("v_head_dim") and data.get("attention_kind", "mha") == "mha":
        data["v_head_dim"] = data.get("head_dim")
    return data


def check_consistency(model: ModelConfig) -> None:
    if model.num_attention_heads % model.num_key_value_heads:
        raise ValueError(
            f"num_attention_heads ({model.num_attention_heads}) must be divisible by "
            f"num_key_value_heads ({model.num_key_value_heads})")
    if model.position_embedding == "rotary":
        if not 0 < model.rotary_dim <= model.head_dim:
            raise ValueError(f"rotary_dim ({model.rotary_dim}) must be in 1..head_dim ({model.head_dim})")
        if model.num_position_embeddings:
            raise ValueError("a rotary model has no learned position table (num_position_embeddings=0)")
    elif model.rotary_dim or model.num_position_embeddings <= 0:
        raise ValueError("a learned-position model needs num_position_embeddings > 0 and rotary_dim=0")
    for field in ("moe_layers", "layer_attention"):
        if len(getattr(model, field)) != model.num_layers:
            raise ValueError(f"{field} has {len(getattr(model, field))} entries; expected one per layer "
                             f"({model.num_layers})")
    _check_experts(model)
    _check_attention(model)


def _check_experts(model: ModelConfig) -> None:
    if model.num_experts == 0:
        if any(model.moe_layers) or model.experts_per_token or model.num_shared_experts:
            raise ValueError("MoE layers, experts_per_token or shared experts need num_experts > 0")
        return
    if not any(model.moe_layers):
        raise ValueError(f"num_experts is {model.num_experts} but moe_layers marks no layer as MoE")
    if not 0 < model.experts_per_token <= model.num_experts:
        raise ValueError(f"experts_per_token ({model.experts_per_token}) must be in 1..num_experts "
                         f"({model.num_experts})")
    if model.moe_intermediate_size <= 0:
        raise ValueError("an MoE model needs moe_intermediate_size > 0")
    if bool(model.num_shared_experts) != bool(model.shared_expert_intermediate_size):
        raise ValueError("num_shared_experts and shared_expert_intermediate_size must both be 0 or both > 0")


def _check_attention(model: ModelConfig) -> None:
    if "sliding" in model.layer_attention and model.sliding_window is None:
        raise ValueError("sliding-window layers need sliding_window")
    if model.attention_kind == "mha":
        if model.kv_lora_rank or model.q_lora_rank or model.qk_nope_head_dim or model.qk_rope_head_dim:
            raise ValueError("q_lora_rank, kv_lora_rank and qk_*_head_dim are for attention_kind 'mla'")
        if model.v_head_dim != model.head_dim:
            raise ValueError(f"v_head_dim ({model.v_head_dim}) must equal head_dim ({model.head_dim}) for 'mha'")
        return
    if not (model.kv_lora_rank and model.qk_rope_head_dim and model.v_head_dim):
        raise ValueError("attention_kind 'mla' needs kv_lora_rank, qk_rope_head_dim and v_head_dim > 0")
    if model.head_dim != model.qk_nope_head_dim + model.qk_rope_head_dim:
        raise ValueError(f"MLA head_dim ({model.head_dim}) must be qk_nope_head_dim + qk_rope_head_dim")
    if model.rotary_dim != model.qk_rope_head_dim or model.num_key_value_heads != model.num_attention_heads:
        raise ValueError("MLA needs rotary_dim == qk_rope_head_dim and num_key_value_heads == num_attention_heads")
