"""Physical bounds of config.json size fields (widths, layers, heads, vocabulary, experts), their spellings,
and the check that names the field, the value and the range (engine/models/validation.py uses them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.models.errors import field_error


@dataclass(frozen=True)
class SizeLimit:
    low: int
    high: int
    why: str

    def expected(self) -> str:
        kind = {0: "a non-negative integer", 1: "a positive integer"}.get(self.low, f"an integer >= {self.low:,}")
        return f"expected {kind} up to {self.high:,}"


_WIDTH = SizeLimit(1, 2**20, "the widest trained models are about 25,000 wide")
_MLP = SizeLimit(1, 2**22, "the widest trained MLPs are about 100,000 wide")
_LAYERS = SizeLimit(1, 10_000, "the deepest trained decoders have about 200 layers")
_HEADS = SizeLimit(1, 16_384, "trained models have at most a few hundred heads")
_HEAD_WIDTH = SizeLimit(1, 16_384, "trained models use 64 to 512 channels per head")
_VOCAB = SizeLimit(1, 2**24, "the largest vocabularies hold about 260,000 tokens")
_POSITIONS = SizeLimit(1, 2**27, "the longest-context models reach about 10 million tokens")
_EXPERTS = SizeLimit(0, 65_536, "the most experts a trained model routes to is about 512")
_TOP_K = SizeLimit(1, 65_536, "each token uses at least one expert")
_LAYER_COUNT = SizeLimit(0, 10_000, "the deepest trained decoders have about 200 layers")
_LAYER_STEP = SizeLimit(1, 10_000, "a step of layers")

# canonical name -> its spellings in config.json files
SPELLINGS: dict[str, tuple[str, ...]] = {
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "intermediate_size": ("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"),
    "num_hidden_layers": ("num_hidden_layers", "n_layer", "n_layers", "num_layers"),
    "num_attention_heads": ("num_attention_heads", "n_head", "n_heads", "num_heads"),
    "num_key_value_heads": ("num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num"),
    "head_dim": ("head_dim", "kv_channels"),
    "vocab_size": ("vocab_size",),
    "max_position_embeddings": ("max_position_embeddings", "n_positions", "n_ctx", "seq_length",
                                "max_sequence_length"),
    "num_experts": ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"),
    "num_experts_per_tok": ("num_experts_per_tok", "experts_per_token"),
}
_LIMIT_OF_CANONICAL = {"hidden_size": _WIDTH, "intermediate_size": _MLP, "num_hidden_layers": _LAYERS,
                       "num_attention_heads": _HEADS, "num_key_value_heads": _HEADS, "head_dim": _HEAD_WIDTH,
                       "vocab_size": _VOCAB, "max_position_embeddings": _POSITIONS, "num_experts": _EXPERTS,
                       "num_experts_per_tok": _TOP_K}
# raw config.json name -> its bounds
SIZE_LIMITS: dict[str, SizeLimit] = {
    **{name: _LIMIT_OF_CANONICAL[canonical] for canonical, names in SPELLINGS.items() for name in names},
    "moe_intermediate_size": _MLP,
    "shared_expert_intermediate_size": SizeLimit(0, 2**22, _MLP.why),
    "qk_nope_head_dim": SizeLimit(0, 16_384, _HEAD_WIDTH.why),
    "qk_rope_head_dim": _HEAD_WIDTH,
    "v_head_dim": _HEAD_WIDTH,
    "kv_lora_rank": _WIDTH,
    "q_lora_rank": _WIDTH,
    "sliding_window": _POSITIONS,
    "n_shared_experts": _EXPERTS,
    "num_shared_experts": _EXPERTS,
    "first_k_dense_replace": _LAYER_COUNT,
    "num_nextn_predict_layers": _LAYER_COUNT,
    "decoder_sparse_step": _LAYER_STEP,
    "moe_layer_freq": _LAYER_STEP,
    "sliding_window_pattern": _LAYER_STEP,
}
# a head width stated by one of these: the heads need not divide the hidden size
_EXPLICIT_HEAD_WIDTH = ("head_dim", "kv_channels", "qk_nope_head_dim", "qk_rope_head_dim")


def _kind(value: Any) -> str:
    return {bool: "true/false", str: "a string", float: "a decimal number", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)


def check_size(field: str, value: Any, where: str = "") -> int:
    """`value` of config.json field `field` as an int within SIZE_LIMITS[field]; else ModelConfigError
    naming `where + field`, the value and the range."""
    limit = SIZE_LIMITS[field]
    if isinstance(value, bool) or not isinstance(value, int):
        raise field_error(where + field, value, f"{limit.expected()}, not {_kind(value)}")
    if not limit.low <= value <= limit.high:
        raise field_error(where + field, value, f"{limit.expected()} ({limit.why})")
    return value
