"""Where the tracer catches what aten ops alone do not show: attention, mixture-of-experts GEMMs, KV stores.

- `AttentionRecord`: one attention call, caught at transformers' attention interface (a registered
  attention implementation that records q/k/v shapes, the sliding window and causality, and returns an
  empty output) or at `torch.nn.functional.scaled_dot_product_attention` for models that call it
  directly. The scores never materialise, so no mask is built and causal work is counted exactly
  (see engine/decomposition/auto/attention_rows.py).
- `KVStoreRecord`: one `Cache.update` call (the new tokens' K and V written to the cache); the
  cache's own concatenation is not traced.
- `ExpertsRecord`: one grouped expert GEMM of a mixture-of-experts block, caught at transformers'
  experts interface (routing is data-dependent, so the expert GEMMs are recorded from their shapes:
  tokens x top-k rows; the expert activation and the weighted combine are traced as usual).
"""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_flatten

from engine.decomposition.auto.records import AttentionRecord, ExpertsRecord, KVStoreRecord
from engine.decomposition.auto.tracer import Tracer, active

TRACE_ATTENTION = "llm_roofline_trace"   # the attention / experts implementation registered below


def attention_hook(module, query, key, value, attention_mask=None, *args, **kwargs):
    """A transformers attention implementation that records the call and returns an empty output.

    q: [batch, q_heads, q_tokens, d_qk], k: [batch, kv_heads, kv_tokens, d_qk], v: [..., d_v];
    returns ([batch, q_tokens, q_heads, d_v], None) like the sdpa implementation."""
    tracer = active()
    window = kwargs.get("sliding_window")
    if window is None:
        window = getattr(module, "sliding_window", None)
    causal = kwargs.get("is_causal")
    if causal is None:
        causal = getattr(module, "is_causal", True)
    softcap = kwargs.get("softcap") is not None
    batch, q_heads, q_tokens, d_qk = (int(x) for x in query.shape)
    kv_heads, kv_tokens, d_v = int(key.shape[1]), int(key.shape[2]), int(value.shape[-1])
    if tracer is not None:
        inputs = tuple(tracer.operand(t) for t in (query, key, value))
        tracer.add(AttentionRecord(tracer.site(), batch, q_heads, kv_heads, q_tokens, kv_tokens, d_qk, d_v,
                                   int(window) if window else None, bool(causal), softcap, inputs))
        tracer.suppress += 1
    try:
        output = torch.empty(batch, q_tokens, q_heads, d_v, dtype=query.dtype, device=query.device)
    finally:
        if tracer is not None:
            tracer.suppress -= 1
    return output, None


def sdpa_hook(original):
    """torch.nn.functional.scaled_dot_product_attention for models that call it directly."""

    def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                     scale=None, enable_gqa=False, **kwargs):
        tracer = active()
        if tracer is None or query.dim() != 4:
            return original(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                            scale=scale, enable_gqa=enable_gqa, **kwargs)
        batch, q_heads, q_tokens, d_qk = (int(x) for x in query.shape)
        kv_heads, kv_tokens, d_v = int(key.shape[1]), int(key.shape[2]), int(value.shape[-1])
        # a mask passed by a causal LM is its causal mask; is_causal=False with no mask and one query is decode
        causal = bool(is_causal) or attn_mask is not None or q_tokens == 1
        inputs = tuple(tracer.operand(t) for t in (query, key, value))
        tracer.add(AttentionRecord(tracer.site(), batch, q_heads, kv_heads, q_tokens, kv_tokens, d_qk, d_v,
                                   None, causal, False, inputs))
        tracer.suppress += 1
        try:
            return torch.empty(batch, q_heads, q_tokens, d_v, dtype=query.dtype, device=query.device)
        finally:
            tracer.suppress -= 1

    return scaled_dot_product_attention


def experts_hook(self, hidden_states, top_k_index, top_k_weights):
    """A transformers experts implementation: grouped GEMMs recorded from shapes, the rest traced.

    Routing is data-dependent (which expert gets which token), so the two grouped GEMMs are recorded
    as `tokens x top_k` rows against per-expert weights; the activation (`_apply_gate`/`act_fn`) and the
    weighted sum over the top-k run on meta tensors of the right shapes and are traced like any op."""
    tracer = active()
    tokens, hidden = int(hidden_states.shape[0]), int(hidden_states.shape[-1])
    top_k = int(top_k_index.shape[-1])
    rows = tokens * top_k
    experts = int(self.num_experts)
    has_gate = getattr(self, "has_gate", True)
    up_name = "gate_up_proj" if has_gate else "up_proj"
    up_weight, down_weight = getattr(self, up_name), self.down_proj
    transposed = getattr(self, "is_transposed", False)
    up_out = int(up_weight.shape[-1] if transposed else up_weight.shape[-2])
    down_in = int(down_weight.shape[-2] if transposed else down_weight.shape[-1])
    has_bias = getattr(self, "has_bias", False)

    def bias_elements(weight_name):
        bias = getattr(self, f"{weight_name}_bias", None) if has_bias else None
        return int(bias.numel() // experts) if bias is not None else 0

    dtype, device = hidden_states.dtype, hidden_states.device
    if tracer is not None:
        tracer.add(ExpertsRecord(tracer.site(), up_name, rows, hidden, up_out, tokens, experts, top_k,
                                 int(up_weight.numel() // experts), bias_elements(up_name)))
        tracer.suppress += 1
    projected = torch.empty(rows, up_out, dtype=dtype, device=device)
    if tracer is not None:
        tracer.suppress -= 1
        tracer.mark(projected, "act")
    activated = self._apply_gate(projected) if has_gate else self.act_fn(projected)
    if tracer is not None:
        tracer.add(ExpertsRecord(tracer.site(), "down_proj", rows, down_in, hidden, tokens, experts, top_k,
                                 int(down_weight.numel() // experts), bias_elements("down_proj")))
        tracer.suppress += 1
    down = torch.empty(rows, hidden, dtype=activated.dtype, device=device)
    if tracer is not None:
        tracer.suppress -= 1
        tracer.mark(down, "act")
    weighted = down * top_k_weights.reshape(-1, 1).to(down.dtype)
    return weighted.view(tokens, top_k, hidden).sum(dim=1).to(dtype)


def register_implementations() -> None:
    from transformers import AttentionInterface
    AttentionInterface.register(TRACE_ATTENTION, attention_hook)
    try:
        from transformers.integrations.moe import ExpertsInterface
        ExpertsInterface.register(TRACE_ATTENTION, experts_hook)
    except ImportError:  # pragma: no cover - transformers without the experts interface
        pass


def wrap_cache(cache, tracer: Tracer):
    """Record each Cache.update (the new K and V stored) and mark what it returns as KV-cache reads."""
    original = cache.update

    def update(key_states, value_states, layer_idx, *args, **kwargs):
        inputs = tuple(tracer.operand(t) for t in (key_states, value_states))
        tokens = int(key_states.shape[0] * key_states.shape[-2]) if key_states.dim() == 4 else int(key_states.shape[0])
        kv_heads = int(key_states.shape[1]) if key_states.dim() == 4 else 1
        tracer.add(KVStoreRecord(tracer.site(), tokens, int(key_states.numel()), int(value_states.numel()),
                                 kv_heads, int(key_states.shape[-1]), inputs))
        tracer.suppress += 1
        try:
            result = original(key_states, value_states, layer_idx, *args, **kwargs)
        finally:
            tracer.suppress -= 1
        for tensor in tree_flatten(result)[0]:
            if isinstance(tensor, torch.Tensor):
                tracer.mark(tensor, "kv")
        return result

    cache.update = update
    return cache

