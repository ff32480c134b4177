"""ModelConfig: the shape of a decoder-only LLM, read from a Hugging Face config.json.

One frozen object holds every dimension the engine needs (hidden size, heads, MLP width, ...)
plus the structural switches that change the weight count (gated MLP, biases, norm type,
learned position table, tied LM head), and, per layer, whether the MLP is dense or a mixture of
experts and whether attention is full or sliding-window. Parameters are counted tensor by tensor,
so every number can be checked against `model.safetensors` by hand.

Families (the registry engine/models/families.py; parsers in families_dense/_gemma/_moe.py): llama, mistral,
qwen2, gpt2, gpt_neox, opt, mixtral, qwen2_moe, qwen3, qwen3_moe, deepseek_v2, deepseek_v3, gemma2, gemma3,
gemma3_text, phi3, gpt_oss, kimi_k2, kimi_k25, minimax_m2. Checks across fields: config_consistency.py.
Anything else (encoder-decoder, unknown model_types, MoE/MLA fields on a family that has none)
raises ModelConfigError naming the field.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, model_validator

from engine.hardware.dtypes import bytes_per_value
from engine.common.errors import one_line
from engine.models.config_consistency import check_consistency, fill_per_layer_defaults
from engine.models.config_reader import ModelConfigError
from engine.models.families import ARCHITECTURE_TO_MODEL_TYPE, MOE_AND_MLA_FIELDS, SUPPORTED_MODEL_TYPES, \
    parse_hf_config
from engine.models.layer_pattern import describe_layer_pattern
from engine.models.validation import SIZE_LIMITS, check_config_fields
from engine.common.frozen_hash import hash_once

__all__ = ["ARCHITECTURE_TO_MODEL_TYPE", "MOE_AND_MLA_FIELDS", "SUPPORTED_MODEL_TYPES", "ModelConfig",
           "ModelConfigError"]

MlpKind = Literal["dense", "moe"]
AttentionKind = Literal["full", "sliding"]


def _bounded(field: str):
    """An int field within the physical bounds of engine/models/validation.py (SIZE_LIMITS)."""
    limit = SIZE_LIMITS[field]
    return Annotated[int, Field(ge=limit.low, le=limit.high)]


def _linear(n_in: int, n_out: int, bias: bool) -> int:
    return n_in * n_out + (n_out if bias else 0)


class ModelConfig(BaseModel):
    """A decoder-only transformer. Sizes are element counts; bytes come from a dtype."""

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())
    # a hand model, not a traced one (engine.decomposition.auto.AutoModel says True); a class attribute, so that
    # getattr(model, "automatic", False) does not go through pydantic's missing-attribute path on every estimate
    automatic: ClassVar[bool] = False

    def __hash__(self) -> int:     # pydantic's hash of the field values, once per object (common/frozen_hash.py)
        return hash_once(self)

    name: str  # repo id or path it came from
    model_type: str  # Hugging Face model_type
    architectures: tuple[str, ...] = ()

    hidden_size: _bounded("hidden_size")
    intermediate_size: _bounded("intermediate_size")  # dense MLP inner width (per projection); MoE layers use moe_intermediate_size
    num_layers: _bounded("num_hidden_layers")
    num_attention_heads: _bounded("num_attention_heads")
    num_key_value_heads: _bounded("num_key_value_heads")  # MLA: = num_attention_heads (K/V decompressed per head)
    head_dim: _bounded("head_dim")  # query/key width per head; MLA: qk_nope_head_dim + qk_rope_head_dim
    vocab_size: _bounded("vocab_size")
    max_position_embeddings: _bounded("max_position_embeddings")

    gated_mlp: bool  # True: gate+up+down (SwiGLU/GeGLU); False: up+down (experts follow the same switch)
    hidden_act: str
    norm_type: Literal["rmsnorm", "layernorm"]  # layernorm has weight and bias
    norm_epsilon: float = 1e-5
    has_final_norm: bool = True  # norm before the LM head (OPT-350m style models drop it)
    tie_word_embeddings: bool

    qkv_bias: bool  # bias on q, k and v projections (MLA: on q_a_proj and kv_a_proj_with_mqa)
    attention_output_bias: bool  # bias on the output projection (o_proj / dense / c_proj)
    mlp_bias: bool  # bias on every dense-MLP (and shared-expert) projection

    position_embedding: Literal["rotary", "learned"]
    num_position_embeddings: int = 0  # rows of a learned position table; 0 for rotary
    rotary_dim: int = 0  # rotated channels per head; 0 for learned positions

    parallel_residual: bool = False  # GPT-NeoX: attention and MLP read the same input (informational)
    sliding_window: PositiveInt | None = None  # tokens a sliding-window layer attends to (None: no such layer)

    # ---- mixture of experts (num_experts == 0: dense) ----
    num_experts: _bounded("num_experts") = 0  # routed experts in each MoE layer
    experts_per_token: NonNegativeInt = 0  # routed experts each token uses (top-k)
    moe_intermediate_size: NonNegativeInt = 0  # inner width of one routed expert
    num_shared_experts: NonNegativeInt = 0  # experts every token uses, besides the routed ones
    shared_expert_intermediate_size: NonNegativeInt = 0  # total inner width of the shared-expert MLP (0: none)
    shared_expert_gate: bool = False  # Qwen2-MoE: sigmoid gate [hidden, 1] scaling the shared expert
    router_bias: bool = False  # one bias per routed expert (gpt-oss router.bias, DeepSeek-V3 e_score_correction_bias)
    expert_bias: bool = False  # biases on every routed-expert projection (gpt-oss)
    moe_layers: tuple[bool, ...] = ()  # one per layer, True = MoE MLP; empty input = all dense (or all MoE)

    # ---- attention ----
    attention_kind: Literal["mha", "mla"] = "mha"  # "mha" covers MHA, GQA and MQA; "mla" DeepSeek latent
    q_lora_rank: PositiveInt | None = None  # MLA: query compression rank (None: plain q_proj)
    kv_lora_rank: NonNegativeInt = 0  # MLA: rank of the cached K/V latent
    qk_nope_head_dim: NonNegativeInt = 0  # MLA: per-head query/key channels without rotary
    qk_rope_head_dim: NonNegativeInt = 0  # MLA: per-head rotary channels (a single key shared by all heads)
    v_head_dim: NonNegativeInt = 0  # value width per head; 0 on input = head_dim
    layer_attention: tuple[AttentionKind, ...] = ()  # one per layer, "full" or "sliding"; empty input = all full
    qk_norm: bool = False  # RMSNorm (head_dim weights) on each query and key head (Qwen3, Gemma 3)
    attention_sinks: bool = False  # gpt-oss: one learned sink logit per head per layer
    query_pre_attn_scalar: float | None = None  # Gemma: scores scaled by query_pre_attn_scalar**-0.5
    attn_logit_softcapping: float | None = None  # Gemma 2: cap * tanh(scores / cap)
    final_logit_softcapping: float | None = None  # Gemma 2: the same on the output logits
    norms_per_layer: Literal[2, 4] = 2  # 4: Gemma's extra norms after attention and after the MLP
    fused_qkv_proj: bool = False  # one qkv_proj weight (Phi-3, GPT-NeoX); same count as q, k, v apart
    fused_gate_up_proj: bool = False  # one gate_up_proj weight (Phi-3); same count as gate, up apart

    # ---- informational: stored weights outside params_total, quantized checkpoints ----
    quantization_method: str | None = None  # config's quantization_config.quant_method (mxfp4, fp8, ...)
    multi_token_prediction_layers: NonNegativeInt = 0  # DeepSeek num_nextn_predict_layers; not counted
    params_vision_encoder: NonNegativeInt = 0  # Gemma 3: SigLIP tower + projector; not in params_total

    @model_validator(mode="before")
    @classmethod
    def _fill_per_layer_defaults(cls, data: Any) -> Any:
        return fill_per_layer_defaults(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _check_consistency(self) -> ModelConfig:
        check_consistency(self)          # engine/models/config_consistency.py
        return self

    # ----------------------------------------------------------------- shape helpers

    @property
    def q_heads_per_kv_head(self) -> int:
        """Query heads sharing one K/V head: 1 for MHA, num_attention_heads for MQA."""
        return self.num_attention_heads // self.num_key_value_heads

    @property
    def q_width(self) -> int:
        """Output width of the query projection (num_attention_heads * head_dim)."""
        return self.num_attention_heads * self.head_dim

    @property
    def kv_width(self) -> int:
        """Output width of the key (and of the value) projection (num_key_value_heads * head_dim)."""
        return self.num_key_value_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def num_moe_layers(self) -> int:
        return sum(self.moe_layers)

    @property
    def num_sliding_layers(self) -> int:
        return self.layer_attention.count("sliding")

    def layer_groups(self) -> dict[tuple[MlpKind, AttentionKind], int]:
        """Layers counted by (MLP kind, attention kind), e.g. {("moe", "sliding"): 18, ("moe", "full"): 18}."""
        kinds = Counter(("moe" if moe else "dense", attention)
                        for moe, attention in zip(self.moe_layers, self.layer_attention))
        return dict(sorted(kinds.items()))

    def layer_pattern(self) -> str:
        """Short text: "3 dense + 58 MoE (256 experts, top-8, 1 shared); MLA", "62 dense; 5 sliding (1024) : 1 full"."""
        return describe_layer_pattern(self)

    # ----------------------------------------------------------------- parameter counts

    @property
    def params_norm(self) -> int:
        """One normalisation layer over the hidden size: weight (+ bias for LayerNorm)."""
        return self.hidden_size * (2 if self.norm_type == "layernorm" else 1)

    def _attention_params(self) -> dict[str, int]:
        h, heads = self.hidden_size, self.num_attention_heads
        if self.attention_kind == "mla":
            parts = {}
            if self.q_lora_rank:
                parts["q_a_proj"] = _linear(h, self.q_lora_rank, self.qkv_bias)
                parts["q_a_norm"] = self.q_lora_rank
                parts["q_b_proj"] = _linear(self.q_lora_rank, heads * self.head_dim, False)
            else:
                parts["q_proj"] = _linear(h, heads * self.head_dim, False)
            parts["kv_a_proj_with_mqa"] = _linear(h, self.kv_lora_rank + self.qk_rope_head_dim, self.qkv_bias)
            parts["kv_a_norm"] = self.kv_lora_rank
            parts["kv_b_proj"] = _linear(self.kv_lora_rank, heads * (self.qk_nope_head_dim + self.v_head_dim), False)
            parts["o_proj"] = _linear(heads * self.v_head_dim, h, self.attention_output_bias)
        else:
            parts = {
                "q_proj": _linear(h, self.q_width, self.qkv_bias),
                "k_proj": _linear(h, self.kv_width, self.qkv_bias),
                "v_proj": _linear(h, self.kv_width, self.qkv_bias),
                "o_proj": _linear(self.q_width, h, self.attention_output_bias),
            }
            if self.qk_norm:
                parts.update(q_norm=self.head_dim, k_norm=self.head_dim)
        if self.attention_sinks:
            parts["attention_sinks"] = heads
        return parts

    def _gated_mlp_params(self, prefix: str, inner: int, bias: bool) -> dict[str, int]:
        h = self.hidden_size
        return {f"{prefix}_gate": _linear(h, inner, bias) if self.gated_mlp else 0,
                f"{prefix}_up": _linear(h, inner, bias),
                f"{prefix}_down": _linear(inner, h, bias)}

    @property
    def params_per_expert(self) -> int:
        """Weights of one routed expert (gate, up, down and their biases); 0 for dense models."""
        if not self.is_moe:
            return 0
        return sum(self._gated_mlp_params("expert", self.moe_intermediate_size, self.expert_bias).values())

    def _moe_params(self) -> dict[str, int]:
        experts = self.num_experts
        parts = {"router": _linear(self.hidden_size, experts, self.router_bias)}
        routed = self._gated_mlp_params("experts", self.moe_intermediate_size, self.expert_bias)
        parts.update({key: experts * value for key, value in routed.items()})
        if self.shared_expert_intermediate_size:
            parts.update(self._gated_mlp_params("shared_experts", self.shared_expert_intermediate_size,
                                                self.mlp_bias))
        if self.shared_expert_gate:
            parts["shared_experts_sigmoid_gate"] = self.hidden_size
        return parts

    def params_per_layer_breakdown(self, mlp: MlpKind | None = None) -> dict[str, int]:
        """Weights of one decoder layer, tensor by tensor (weight + bias where present).

        mlp: "dense" or "moe"; the default is "moe" for MoE models (their MoE layers), "dense" otherwise.
        MoE entries: "router", "experts_gate/up/down" (all routed experts together), "shared_experts_*".
        Attention params do not depend on full vs sliding attention.
        """
        mlp = mlp or ("moe" if self.is_moe else "dense")
        if mlp not in ("dense", "moe"):
            raise ValueError(f"mlp must be 'dense' or 'moe', got {mlp!r}")
        if mlp == "moe" and not self.is_moe:
            raise ValueError(f"{self.name} has no MoE layers")
        norm = self.params_norm
        parts = {"attention_norm": norm, **self._attention_params()}
        if self.norms_per_layer == 4:
            parts["post_attention_norm"] = norm
        parts["mlp_norm"] = norm
        if mlp == "dense":
            parts.update(self._gated_mlp_params("mlp", self.intermediate_size, self.mlp_bias))
        else:
            parts.update(self._moe_params())
        if self.norms_per_layer == 4:
            parts["post_mlp_norm"] = norm
        return parts

    @property
    def params_per_layer(self) -> int:
        """Weights of one layer of the default kind (see params_per_layer_breakdown)."""
        return sum(self.params_per_layer_breakdown().values())

    @property
    def params_layers(self) -> int:
        """Weights of all decoder layers, dense and MoE."""
        moe = self.num_moe_layers
        dense_total = (self.num_layers - moe) * sum(self.params_per_layer_breakdown("dense").values()) \
            if moe < self.num_layers else 0
        moe_total = moe * sum(self.params_per_layer_breakdown("moe").values()) if moe else 0
        return dense_total + moe_total

    @property
    def params_embedding(self) -> int:
        """Token table plus learned position table (none for rotary models)."""
        return (self.vocab_size + self.num_position_embeddings) * self.hidden_size

    @property
    def params_final_norm(self) -> int:
        return self.params_norm if self.has_final_norm else 0

    @property
    def params_lm_head(self) -> int:
        """Output projection to the vocabulary; 0 when it shares the token table."""
        return 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size

    @property
    def params_total(self) -> int:
        """Every weight of the language model: embeddings, layers, final norm, LM head.

        Not included: multi-token-prediction modules (multi_token_prediction_layers) and vision towers
        (params_vision_encoder). Quantized checkpoints are counted in elements, not packed bytes.
        """
        return self.params_embedding + self.params_layers + self.params_final_norm + self.params_lm_head

    @property
    def params_active(self) -> int:
        """Weights one token uses: everything except the routed experts it is not sent to.

        = params_total - MoE layers x (num_experts - experts_per_token) x params_per_expert. Routers and shared
        experts count in full; so do the embedding table and the LM head (the convention of Mixtral's 12.9B and
        Qwen3-30B-A3B's 3.3B). Dense models: params_total.
        """
        inactive = self.num_moe_layers * (self.num_experts - self.experts_per_token) * self.params_per_expert
        return self.params_total - inactive

    @property
    def params_active_excluding_embedding(self) -> int:
        """params_active without the input embedding tables (a lookup reads one row per token); a tied table
        still counts once as the LM head. The convention of DeepSeek-V3's 37B (36.6B) and gpt-oss's 5.1B/3.6B."""
        tied_head = self.vocab_size * self.hidden_size if self.tie_word_embeddings else 0
        return self.params_active - self.params_embedding + tied_head

    # ----------------------------------------------------------------- memory

    @property
    def kv_values_per_token_per_layer(self) -> int:
        """Values cached per token in one layer: K and V heads (MHA/GQA/MQA) or the MLA latent
        (kv_lora_rank + qk_rope_head_dim: the compressed K/V plus the shared rotary key)."""
        if self.attention_kind == "mla":
            return self.kv_lora_rank + self.qk_rope_head_dim
        return self.num_key_value_heads * (self.head_dim + self.v_head_dim)

    def kv_cache_bytes_per_token(self, kv_dtype: str = "bf16") -> float:
        """Bytes cached per token over all layers as if every layer kept the whole sequence (full attention):
        layers x kv_values_per_token_per_layer x bytes; for MHA 2 * layers * kv_heads * head_dim * bytes.
        Sliding-window layers hold fewer tokens: see kv_cache_bytes(tokens)."""
        return self.num_layers * self.kv_values_per_token_per_layer * bytes_per_value(kv_dtype)

    def kv_cache_tokens_held(self, tokens: int) -> int:
        """Token entries cached over all layers for a `tokens`-long sequence: full layers hold every token,
        sliding layers min(tokens, sliding_window)."""
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise ValueError(f"tokens must be a non-negative integer, got {tokens!r}")
        window = self.sliding_window or tokens
        sliding = self.layer_attention.count("sliding")
        return sliding * min(tokens, window) + (len(self.layer_attention) - sliding) * tokens

    def kv_cache_bytes(self, tokens: int, kv_dtype: str = "bf16") -> float:
        """Bytes of KV cache one sequence of `tokens` tokens holds, sliding windows and MLA latents included."""
        return self.kv_cache_tokens_held(tokens) * self.kv_values_per_token_per_layer * bytes_per_value(kv_dtype)

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model_type": self.model_type,
            "params_total": self.params_total,
            "params_active": self.params_active,
            "params_active_excluding_embedding": self.params_active_excluding_embedding,
            "params_embedding": self.params_embedding,
            "num_layers": self.num_layers,
            "layer_pattern": self.layer_pattern(),
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "attention_kind": self.attention_kind,
            "sliding_window": self.sliding_window,
            "num_experts": self.num_experts,
            "experts_per_token": self.experts_per_token,
            "moe_intermediate_size": self.moe_intermediate_size,
            "vocab_size": self.vocab_size,
            "max_position_embeddings": self.max_position_embeddings,
            "kv_cache_bytes_per_token": self.kv_cache_bytes_per_token("bf16"),
        }

    # ----------------------------------------------------------------- parsing

    @classmethod
    def from_hf_config(cls, data: dict, name: str) -> ModelConfig:
        """Build from the dict of a Hugging Face config.json; raises ModelConfigError naming the field."""
        check_config_fields(data)          # the same checks as the automatic decomposition's
        model_type, fields = parse_hf_config(data)
        architectures = data.get("architectures") or ()
        if not isinstance(architectures, (list, tuple)) or not all(isinstance(a, str) for a in architectures):
            raise ModelConfigError(f"config.json field 'architectures' is {architectures!r}: "
                                   "expected a list of class names")
        try:
            return cls(name=str(name), model_type=model_type, architectures=tuple(architectures), **fields)
        except ValueError as error:  # pydantic's ValidationError is a ValueError
            raise ModelConfigError(f"config.json for {name!r} is inconsistent: {one_line(error)}") from None
