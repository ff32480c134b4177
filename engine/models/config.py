"""ModelConfig: the shape of a dense decoder-only LLM, read from a Hugging Face config.json.

One frozen object holds every dimension the engine needs (hidden size, heads, MLP width, ...)
plus the structural switches that change the weight count (gated MLP, biases, norm type,
learned position table, tied LM head). Parameters are counted tensor by tensor, so every
number can be checked against `model.safetensors` by hand.

Supported `model_type`s: llama, mistral, qwen2, gpt2, gpt_neox, opt. Anything else (MoE,
multi-head latent attention, encoder-decoder, ...) raises ModelConfigError naming the field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, PositiveInt, model_validator

from engine.dtypes import bytes_per_value

SUPPORTED_MODEL_TYPES: tuple[str, ...] = ("llama", "mistral", "qwen2", "gpt2", "gpt_neox", "opt")

# When a config has no model_type, its architecture class tells us the family.
ARCHITECTURE_TO_MODEL_TYPE: dict[str, str] = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "GPT2LMHeadModel": "gpt2",
    "GPTNeoXForCausalLM": "gpt_neox",
    "OPTForCausalLM": "opt",
}

# Fields that mean "this is not a plain dense decoder": mixture of experts, latent attention.
UNSUPPORTED_FEATURE_FIELDS: dict[str, str] = {
    "num_local_experts": "mixture-of-experts models are not supported yet",
    "num_experts": "mixture-of-experts models are not supported yet",
    "n_routed_experts": "mixture-of-experts models are not supported yet",
    "moe_intermediate_size": "mixture-of-experts models are not supported yet",
    "q_lora_rank": "multi-head latent attention (DeepSeek MLA) is not supported yet",
    "kv_lora_rank": "multi-head latent attention (DeepSeek MLA) is not supported yet",
}


class ModelConfigError(ValueError):
    """A config.json this engine cannot model; the message names the field and its value."""


def _field_error(field: str, value: Any, problem: str) -> ModelConfigError:
    return ModelConfigError(f"config.json field {field!r} is {value!r}: {problem}")


class ModelConfig(BaseModel):
    """A dense decoder-only transformer. Sizes are element counts; bytes come from a dtype."""

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())

    name: str  # repo id or path it came from
    model_type: str  # Hugging Face model_type
    architectures: tuple[str, ...] = ()

    hidden_size: PositiveInt
    intermediate_size: PositiveInt  # MLP inner width (per projection)
    num_layers: PositiveInt
    num_attention_heads: PositiveInt
    num_key_value_heads: PositiveInt
    head_dim: PositiveInt
    vocab_size: PositiveInt
    max_position_embeddings: PositiveInt

    gated_mlp: bool  # True: gate+up+down (SwiGLU/GeGLU); False: up+down
    hidden_act: str
    norm_type: Literal["rmsnorm", "layernorm"]  # layernorm has weight and bias
    norm_epsilon: float = 1e-5
    has_final_norm: bool = True  # norm before the LM head (OPT-350m style models drop it)
    tie_word_embeddings: bool

    qkv_bias: bool  # bias on q, k and v projections
    attention_output_bias: bool  # bias on the output projection (o_proj / dense / c_proj)
    mlp_bias: bool  # bias on every MLP projection

    position_embedding: Literal["rotary", "learned"]
    num_position_embeddings: int = 0  # rows of a learned position table; 0 for rotary
    rotary_dim: int = 0  # rotated channels per head; 0 for learned positions

    parallel_residual: bool = False  # GPT-NeoX: attention and MLP read the same input (informational)
    sliding_window: int | None = None  # Mistral: attention window in tokens (informational)

    @model_validator(mode="after")
    def _check_consistency(self) -> ModelConfig:
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_attention_heads}) must be divisible by "
                f"num_key_value_heads ({self.num_key_value_heads})")
        if self.position_embedding == "rotary":
            if not 0 < self.rotary_dim <= self.head_dim:
                raise ValueError(f"rotary_dim ({self.rotary_dim}) must be in 1..head_dim ({self.head_dim})")
            if self.num_position_embeddings:
                raise ValueError("a rotary model has no learned position table (num_position_embeddings=0)")
        elif self.rotary_dim or self.num_position_embeddings <= 0:
            raise ValueError("a learned-position model needs num_position_embeddings > 0 and rotary_dim=0")
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

    # ----------------------------------------------------------------- parameter counts

    @property
    def params_norm(self) -> int:
        """One normalisation layer: weight (+ bias for LayerNorm)."""
        return self.hidden_size * (2 if self.norm_type == "layernorm" else 1)

    def params_per_layer_breakdown(self) -> dict[str, int]:
        """Weights of one decoder layer, tensor by tensor (weight + bias where present)."""
        h, q, kv, ff = self.hidden_size, self.q_width, self.kv_width, self.intermediate_size

        def linear(n_in: int, n_out: int, bias: bool) -> int:
            return n_in * n_out + (n_out if bias else 0)

        return {
            "attention_norm": self.params_norm,
            "q_proj": linear(h, q, self.qkv_bias),
            "k_proj": linear(h, kv, self.qkv_bias),
            "v_proj": linear(h, kv, self.qkv_bias),
            "o_proj": linear(q, h, self.attention_output_bias),
            "mlp_norm": self.params_norm,
            "mlp_gate": linear(h, ff, self.mlp_bias) if self.gated_mlp else 0,
            "mlp_up": linear(h, ff, self.mlp_bias),
            "mlp_down": linear(ff, h, self.mlp_bias),
        }

    @property
    def params_per_layer(self) -> int:
        return sum(self.params_per_layer_breakdown().values())

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
        return (self.params_embedding + self.num_layers * self.params_per_layer
                + self.params_final_norm + self.params_lm_head)

    @property
    def params_active(self) -> int:
        """Weights touched per token; equal to params_total for dense models."""
        return self.params_total

    # ----------------------------------------------------------------- memory

    def kv_cache_bytes_per_token(self, kv_dtype: str = "bf16") -> float:
        """Bytes of K and V stored per token over all layers: 2 * layers * kv_heads * head_dim * bytes."""
        return 2 * self.num_layers * self.num_key_value_heads * self.head_dim * bytes_per_value(kv_dtype)

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model_type": self.model_type,
            "params_total": self.params_total,
            "params_active": self.params_active,
            "params_embedding": self.params_embedding,
            "num_layers": self.num_layers,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "vocab_size": self.vocab_size,
            "max_position_embeddings": self.max_position_embeddings,
            "kv_cache_bytes_per_token": self.kv_cache_bytes_per_token("bf16"),
        }

    # ----------------------------------------------------------------- parsing

    @classmethod
    def from_hf_config(cls, data: dict, name: str) -> ModelConfig:
        """Build from the dict of a Hugging Face config.json; raises ModelConfigError naming the field."""
        if not isinstance(data, dict):
            raise ModelConfigError(f"config.json must be a JSON object, got {type(data).__name__}")
        model_type = _model_type(data)
        reader = _Reader(data, model_type)
        for field, problem in UNSUPPORTED_FEATURE_FIELDS.items():
            if data.get(field):
                raise _field_error(field, data[field], problem)
        fields = _PARSERS[model_type](reader)
        architectures = data.get("architectures") or ()
        if not isinstance(architectures, (list, tuple)) or not all(isinstance(a, str) for a in architectures):
            raise _field_error("architectures", architectures, "expected a list of class names")
        try:
            return cls(name=str(name), model_type=model_type, architectures=tuple(architectures), **fields)
        except ValueError as error:  # pydantic's ValidationError is a ValueError
            raise ModelConfigError(f"config.json for {name!r} is inconsistent: {error}") from None


# --------------------------------------------------------------------- field reading

_MISSING = object()


class _Reader:
    """Typed access to config.json fields; every failure names the field and its value."""

    def __init__(self, data: dict, model_type: str):
        self.data = data
        self.model_type = model_type

    def _get(self, field: str, default: Any) -> Any:
        value = self.data.get(field, _MISSING)
        if value is _MISSING or (value is None and default is not _MISSING):
            if default is _MISSING:
                raise ModelConfigError(
                    f"config.json field {field!r} is missing: required for model_type {self.model_type!r}")
            return default
        return value

    def positive_int(self, field: str, default: Any = _MISSING) -> int:
        value = self._get(field, default)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise _field_error(field, value, "expected a positive integer")
        return value

    def boolean(self, field: str, default: Any = _MISSING) -> bool:
        value = self._get(field, default)
        if not isinstance(value, bool):
            raise _field_error(field, value, "expected true or false")
        return value

    def string(self, field: str, default: Any = _MISSING) -> str:
        value = self._get(field, default)
        if not isinstance(value, str) or not value:
            raise _field_error(field, value, "expected a non-empty string")
        return value

    def fraction(self, field: str, default: Any = _MISSING) -> float:
        """A number in (0, 1], e.g. the share of head channels that are rotated."""
        value = self._get(field, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise _field_error(field, value, "expected a number in (0, 1]")
        return float(value)

    def epsilon(self, field: str, default: float) -> float:
        value = self._get(field, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise _field_error(field, value, "expected a small non-negative number")
        return float(value)


def _model_type(data: dict) -> str:
    model_type = data.get("model_type")
    if model_type is None:
        for architecture in data.get("architectures") or ():
            if architecture in ARCHITECTURE_TO_MODEL_TYPE:
                return ARCHITECTURE_TO_MODEL_TYPE[architecture]
        raise ModelConfigError(
            "config.json field 'model_type' is missing (and no known 'architectures' entry); "
            f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise _field_error("model_type", model_type, f"not supported yet; supported: {', '.join(SUPPORTED_MODEL_TYPES)}")
    return model_type


def _heads(r: _Reader, hidden: int, heads_field: str, kv_field: str | None) -> dict[str, int]:
    """Attention heads, K/V heads (GQA/MQA) and head_dim (explicit, else hidden // heads)."""
    heads = r.positive_int(heads_field)
    kv_heads = r.positive_int(kv_field, default=heads) if kv_field else heads
    if kv_heads > heads or heads % kv_heads:
        raise _field_error(kv_field, kv_heads, f"{heads_field} ({heads}) must be a multiple of it")
    if r.data.get("head_dim") is not None:
        head_dim = r.positive_int("head_dim")
    elif hidden % heads:
        raise _field_error(heads_field, heads, f"does not divide hidden size {hidden} and no head_dim is given")
    else:
        head_dim = hidden // heads
    return {"num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim}


def _rotary_dim(head_dim: int, fraction: float) -> int:
    return max(1, int(head_dim * fraction))


def _parse_llama_family(r: _Reader) -> dict[str, Any]:
    """llama, mistral, qwen2: RMSNorm, rotary, gated SiLU MLP, optional GQA."""
    model_type = r.model_type
    hidden = r.positive_int("hidden_size")
    heads = _heads(r, hidden, "num_attention_heads", "num_key_value_heads")
    _reject_mixed_attention(r)
    # Llama: one switch for q/k/v/o biases; Qwen2: q/k/v biases always, none on o; Mistral: none.
    attention_bias = r.boolean("attention_bias", default=False) if model_type == "llama" else False
    qkv_bias = True if model_type == "qwen2" else attention_bias
    sliding_window = None
    if model_type == "mistral" and r.data.get("sliding_window") is not None:
        sliding_window = r.positive_int("sliding_window")
    if model_type == "qwen2" and r.boolean("use_sliding_window", default=False):
        raise _field_error("use_sliding_window", True, "Qwen2 sliding-window layers are not supported yet")
    return {
        "hidden_size": hidden,
        "intermediate_size": r.positive_int("intermediate_size"),
        "num_layers": r.positive_int("num_hidden_layers"),
        **heads,
        "vocab_size": r.positive_int("vocab_size"),
        "max_position_embeddings": r.positive_int("max_position_embeddings"),
        "gated_mlp": True,
        "hidden_act": r.string("hidden_act", default="silu"),
        "norm_type": "rmsnorm",
        "norm_epsilon": r.epsilon("rms_norm_eps", default=1e-6),
        "tie_word_embeddings": r.boolean("tie_word_embeddings", default=False),
        "qkv_bias": qkv_bias,
        "attention_output_bias": attention_bias,
        "mlp_bias": r.boolean("mlp_bias", default=False) if model_type == "llama" else False,
        "position_embedding": "rotary",
        "rotary_dim": _rotary_dim(heads["head_dim"], r.fraction("partial_rotary_factor", default=1.0)),
        "sliding_window": sliding_window,
    }


def _reject_mixed_attention(r: _Reader) -> None:
    """Newer configs list per-layer attention kinds; only all-global attention is modelled."""
    layer_types = r.data.get("layer_types")
    if layer_types and any(kind != "full_attention" for kind in layer_types):
        kinds = sorted(set(layer_types))
        raise _field_error("layer_types", kinds, "only 'full_attention' layers are supported yet")


def _parse_gpt2(r: _Reader) -> dict[str, Any]:
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


def _parse_gpt_neox(r: _Reader) -> dict[str, Any]:
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
    }


def _parse_opt(r: _Reader) -> dict[str, Any]:
    """OPT: LayerNorm, learned positions (+2 offset rows), ReLU MLP with biases, tied head."""
    hidden = r.positive_int("hidden_size")
    projection = r.positive_int("word_embed_proj_dim", default=hidden)
    if projection != hidden:
        raise _field_error("word_embed_proj_dim", projection,
                           f"differs from hidden_size ({hidden}); OPT embedding projections are not supported yet")
    if not r.boolean("layer_norm_elementwise_affine", default=True):
        raise _field_error("layer_norm_elementwise_affine", False, "LayerNorm without weights is not supported yet")
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


_PARSERS = {
    "llama": _parse_llama_family,
    "mistral": _parse_llama_family,
    "qwen2": _parse_llama_family,
    "gpt2": _parse_gpt2,
    "gpt_neox": _parse_gpt_neox,
    "opt": _parse_opt,
}
