"""A small plain-PyTorch Llama-family decoder (Llama, Mistral, Qwen2) for ground-truth decode-step timing.

llm-roofline's calibration times real decode steps on a GPU and compares them with the roofline estimate.
This model has random weights (normal(0, 0.02), norms = 1) but the shapes, arithmetic and bytes moved of a real
step: separate q/k/v/o and gate/up/down matmuls, float32 RMSNorm, rotary embedding as in transformers, GQA
attention through `scaled_dot_product_attention(enable_gqa=True)` over a preallocated KV cache, final norm and
lm_head. `decode_step` has static shapes (its `position` is a Python int) and no host syncs, so it can be
captured in a CUDA graph. The oracle tests (tests/test_torch_llama.py) check it against transformers.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn

_SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2")
_MOE_FIELDS = ("num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size")


def _parse(config: dict, num_layers: int | None = None) -> SimpleNamespace:
    """Read the fields this model needs from a Hugging Face config.json dict; ValueError on anything unsupported."""
    def need(key):
        if config.get(key) is None:
            raise ValueError(f"config is missing required field {key!r}")
        return config[key]

    def unsupported(key, why):
        raise ValueError(f"config field {key!r} = {config.get(key)!r}: {why} is not supported by TorchLlama")

    model_type = config.get("model_type")
    if model_type is not None and model_type not in _SUPPORTED_MODEL_TYPES:
        unsupported("model_type", f"model_type other than {_SUPPORTED_MODEL_TYPES}")
    for key in _MOE_FIELDS:
        if config.get(key):
            unsupported(key, "mixture of experts")
    if config.get("hidden_act", "silu") != "silu":
        unsupported("hidden_act", "an activation other than silu")
    if config.get("sliding_window") is not None and config.get("use_sliding_window", True):
        unsupported("sliding_window", "sliding-window attention")
    if any(t != "full_attention" for t in config.get("layer_types") or ()):
        unsupported("layer_types", "a layer type other than full_attention")
    if config.get("mlp_bias"):
        unsupported("mlp_bias", "an MLP bias")
    # transformers 5 writes rope_parameters (with rope_theta inside); older configs rope_theta + rope_scaling.
    rope_key = "rope_parameters" if config.get("rope_parameters") else "rope_scaling"
    rope = dict(config.get(rope_key) or {})
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type not in ("default", "llama3"):
        unsupported(rope_key, f"rope_type {rope_type!r}")
    if rope.get("partial_rotary_factor", config.get("partial_rotary_factor", 1.0)) != 1.0:
        unsupported("partial_rotary_factor", "partial rotary embedding")

    hidden, heads = need("hidden_size"), need("num_attention_heads")
    attention_bias = bool(config.get("attention_bias", False))
    return SimpleNamespace(
        hidden=hidden, intermediate=need("intermediate_size"), heads=heads,
        kv_heads=config.get("num_key_value_heads") or heads,
        head_dim=config.get("head_dim") or hidden // heads,
        layers=num_layers if num_layers is not None else need("num_hidden_layers"),
        vocab=need("vocab_size"), eps=need("rms_norm_eps"),
        rope_theta=config.get("rope_theta") or rope.get("rope_theta") or 10000.0,
        rope=rope if rope_type == "llama3" else None,
        tied=bool(config.get("tie_word_embeddings", False)),
        qkv_bias=model_type == "qwen2" or attention_bias,
        o_bias=attention_bias and model_type != "qwen2",
    )


def parameter_count(config: dict, num_layers: int | None = None) -> int:
    """Number of parameters of the model `from_config(config)` builds, computed from the config alone."""
    c = _parse(config, num_layers)
    q, kv = c.heads * c.head_dim, c.kv_heads * c.head_dim
    attention = c.hidden * q + 2 * c.hidden * kv + q * c.hidden
    attention += (q + 2 * kv) * c.qkv_bias + c.hidden * c.o_bias
    layer = attention + 3 * c.hidden * c.intermediate + 2 * c.hidden
    return c.vocab * c.hidden + c.layers * layer + c.hidden + (0 if c.tied else c.vocab * c.hidden)


def _inv_freq(c: SimpleNamespace) -> torch.Tensor:
    """Rotary inverse frequencies as transformers computes them, with llama3 scaling when configured."""
    inv_freq = 1.0 / (c.rope_theta ** (torch.arange(0, c.head_dim, 2, dtype=torch.int64).float() / c.head_dim))
    if c.rope is None:
        return inv_freq
    factor, low, high = c.rope["factor"], c.rope["low_freq_factor"], c.rope["high_freq_factor"]
    old_len = c.rope["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > old_len / low, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < old_len / high) * ~(wavelen > old_len / low)
    return torch.where(medium, smoothed, scaled)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float, dtype, device):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(dim, dtype=dtype, device=device))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(x.dtype)


class Block(nn.Module):
    """One decoder layer; submodule names follow transformers so its state_dict loads as is."""

    def __init__(self, c: SimpleNamespace, dtype, device):
        super().__init__()
        self.c = c

        def linear(n_in, n_out, bias=False):
            return nn.Linear(n_in, n_out, bias=bias, dtype=dtype, device=device)
        q, kv = c.heads * c.head_dim, c.kv_heads * c.head_dim
        self.self_attn = nn.Module()
        self.self_attn.q_proj = linear(c.hidden, q, c.qkv_bias)
        self.self_attn.k_proj = linear(c.hidden, kv, c.qkv_bias)
        self.self_attn.v_proj = linear(c.hidden, kv, c.qkv_bias)
        self.self_attn.o_proj = linear(q, c.hidden, c.o_bias)
        self.mlp = nn.Module()
        self.mlp.gate_proj = linear(c.hidden, c.intermediate)
        self.mlp.up_proj = linear(c.hidden, c.intermediate)
        self.mlp.down_proj = linear(c.intermediate, c.hidden)
        self.input_layernorm = RMSNorm(c.hidden, c.eps, dtype, device)
        self.post_attention_layernorm = RMSNorm(c.hidden, c.eps, dtype, device)

    def forward(self, x, cos, sin, k_cache, v_cache, start: int):
        """x [b, s, hidden]; k_cache/v_cache [b, kv_heads, max_len, head_dim] of this layer, written at start..start+s-1."""
        b, s, _ = x.shape
        c, attn, mlp = self.c, self.self_attn, self.mlp
        h = self.input_layernorm(x)
        q = attn.q_proj(h).view(b, s, c.heads, c.head_dim).transpose(1, 2)
        k = attn.k_proj(h).view(b, s, c.kv_heads, c.head_dim).transpose(1, 2)
        v = attn.v_proj(h).view(b, s, c.kv_heads, c.head_dim).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        k_cache[:, :, start:start + s] = k
        v_cache[:, :, start:start + s] = v
        # Prefill (start 0, s tokens): causal over the s new keys. Decode (s 1): the one query sees all start+1 keys.
        o = F.scaled_dot_product_attention(q, k_cache[:, :, :start + s], v_cache[:, :, :start + s],
                                           is_causal=s > 1, enable_gqa=True)
        x = x + attn.o_proj(o.transpose(1, 2).reshape(b, s, c.heads * c.head_dim))
        h = self.post_attention_layernorm(x)
        return x + mlp.down_proj(F.silu(mlp.gate_proj(h)) * mlp.up_proj(h))


class TorchLlama(nn.Module):
    def __init__(self, config: dict, *, dtype=torch.bfloat16, device="cpu", num_layers=None):
        """Allocates uninitialised weights (built on the meta device, then materialised on `device` per tensor)."""
        super().__init__()
        c = self.c = _parse(config, num_layers)
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(c.vocab, c.hidden, dtype=dtype, device="meta")
        self.model.layers = nn.ModuleList(Block(c, dtype, "meta") for _ in range(c.layers))
        self.model.norm = RMSNorm(c.hidden, c.eps, dtype, "meta")
        self.lm_head = nn.Linear(c.hidden, c.vocab, bias=False, dtype=dtype, device="meta")
        self.to_empty(device=device)
        if c.tied:
            self.lm_head.weight = self.model.embed_tokens.weight
        self.register_buffer("inv_freq", _inv_freq(c).to(device), persistent=False)

    @classmethod
    def from_hf_state_dict(cls, config: dict, state_dict: dict, dtype=torch.float32, device="cpu") -> "TorchLlama":
        """Load weights named as in transformers' LlamaForCausalLM / Qwen2ForCausalLM state_dict."""
        model = cls(config, dtype=dtype, device=device)
        state_dict = {k: v for k, v in state_dict.items() if not k.endswith("rotary_emb.inv_freq")}
        if model.c.tied:
            state_dict.setdefault("lm_head.weight", state_dict["model.embed_tokens.weight"])
        model.load_state_dict(state_dict, strict=True)
        return model

    def new_cache(self, batch: int, max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Zeroed K and V caches, each [layers, batch, kv_heads, max_len, head_dim]."""
        w = self.model.embed_tokens.weight
        shape = (self.c.layers, batch, self.c.kv_heads, max_len, self.c.head_dim)
        return (torch.zeros(shape, dtype=w.dtype, device=w.device),
                torch.zeros(shape, dtype=w.dtype, device=w.device))

    @torch.no_grad()
    def _forward(self, tokens: torch.Tensor, cache, start: int, last_only: bool = False) -> torch.Tensor:
        x = self.model.embed_tokens(tokens)
        positions = torch.arange(start, start + tokens.shape[1], device=x.device, dtype=torch.float32)
        freqs = positions[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        k_cache, v_cache = cache
        for i, layer in enumerate(self.model.layers):
            x = layer(x, cos, sin, k_cache[i], v_cache[i], start)
        if last_only:
            x = x[:, -1:]                                     # serving engines take logits of the last token only
        return self.lm_head(self.model.norm(x))

    def prefill(self, tokens: torch.Tensor, cache, last_only: bool = False) -> torch.Tensor:
        """tokens [b, s] at positions 0..s-1 (written to the cache); returns logits [b, s, vocab]
        ([b, 1, vocab] of the last position with `last_only`, as a serving engine's prefill)."""
        return self._forward(tokens, cache, 0, last_only)

    def decode_step(self, tokens: torch.Tensor, cache, position: int) -> torch.Tensor:
        """tokens [b, 1] at `position` (a Python int, so shapes are static); returns logits [b, 1, vocab]."""
        return self._forward(tokens, cache, position)

    def parameter_bytes(self) -> int:
        return sum(p.numel() * p.element_size() for p in self.parameters())


def from_config(config: dict, *, dtype=torch.bfloat16, device="cpu", num_layers=None, seed=0) -> TorchLlama:
    """A TorchLlama with random weights: normal(0, 0.02) from a generator seeded by `seed`, norms 1, biases 0."""
    model = TorchLlama(config, dtype=dtype, device=device, num_layers=num_layers)
    generator = torch.Generator(device=model.inv_freq.device).manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            elif name.endswith(".bias"):
                p.zero_()
            else:
                p.normal_(0.0, 0.02, generator=generator)
    return model


from_hf_state_dict = TorchLlama.from_hf_state_dict
