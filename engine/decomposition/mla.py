"""Multi-head latent attention (DeepSeek-V2/V3) on one device: projections, the compressed KV cache,
prompts in the naive (decompressed) form, decode tokens in the absorbed form (Scenario.mla_decode
"absorbed", the default) or the naive one ("naive", as Hugging Face transformers decodes).

Per layer, H query heads on the device (num_attention_heads / tp), latent rank r (kv_lora_rank),
per-head channels d_n (qk_nope_head_dim), d_r (qk_rope_head_dim, one rotary key shared by all heads)
and d_v (v_head_dim); T tokens in the pass:

    Q_a*W      T x hidden -> q_lora_rank  (replicated over tp), then Norm_q_a    [q_lora_rank set]
    Q_b*W      T x q_lora_rank -> H (d_n + d_r)                                  (or Q*W from hidden)
    KV_a*W     T x hidden -> r + d_r      (kv_a_proj_with_mqa: the latent and the shared rotary key)
    Norm_kv_a  RMSNorm of the latent (r weights)
    Rotary     the H query rope parts and the one shared rope key: T (H + 1) d_r values
    KVCache_Store  r + d_r values per token and layer (the compressed cache; replicated over tp)

Naive form (prompts and the prompt part of a chunk; what training and prefill kernels run; decode
tokens too with mla_decode="naive"):
    KV_b*W     the latent of every key token (new, plus cached ones a continuing chunk or a decode step
               reads back) decompressed: m = those tokens, k = r, n = H (d_n + d_v); a naive decode
               step decompresses its whole context (cached tokens + 1) again, every step
    attention  MHA with H heads: scores over d_n + d_r channels, values over d_v (causal pairs as MHA)

Absorbed form (decode tokens by default; DeepSeek-V2 paper section 2.1.3, FlashMLA / vLLM's MLA decode):
    W_UK (the key half of kv_b_proj) is absorbed into the query and W_UV (the value half) into the
    output, so attention runs over the cached latent itself, as multi-query attention with one
    shared "head" of r + d_r key channels and r value channels:
    KVCache_Read  context x (r + d_r) values per sequence and layer
    Q*W_UK     per head [tokens, d_n] @ [d_n, r] (batch = H): tokens H d_n r MACs
    Q*gK       H (r + d_r) MACs per (query, key) pair
    Q*gK*gV    H r MACs per pair
    O*W_UV     per head [tokens, r] @ [r, d_v] (batch = H): tokens H r d_v MACs
Both forms read all of kv_b_proj's weights once per step (W_UK + W_UV = kv_b_proj), so one decode
step streams exactly the layer's parameters. O*W (H d_v -> hidden) follows in both forms.
"""

from __future__ import annotations

import numpy as np

from engine.kernels.fields import norm_fields
from engine.kernels.table import FLOPS_PER_ELEMENT


def add_mla_attention(rows, model, layout, kinds, gemm, elementwise, kv_dtype: str,
                      decode_form: str = "absorbed") -> None:
    """The attention block of one MLA layer kind on one device (module docstring); `rows` is the
    decomposition's AttentionRows, `kinds` its (window, suffix, layers) per layer kind, `decode_form`
    the form decode tokens run in ("absorbed" or "naive"; prompts are always naive)."""
    if decode_form not in ("absorbed", "naive"):
        raise ValueError(f"mla_decode={decode_form!r}: expected 'absorbed' or 'naive'")
    b, fp = rows.b, rows.fp
    act, wgt, kvb = rows.act, rows.wgt, rows.kvb
    T, H, h = fp.tokens, layout.q_heads, model.hidden_size
    rank, nope, rope = model.kv_lora_rank, model.qk_nope_head_dim, model.qk_rope_head_dim
    latent = rank + rope
    per_layer = layout.layers * fp.steps
    if model.q_lora_rank:
        gemm("Q_a*W", T, h, model.q_lora_rank, per_layer, model.qkv_bias)
        elementwise("Norm_q_a", "norm", norm_fields(T, model.q_lora_rank, model.norm_type, act, wgt), per_layer,
                    type="Norm")
        gemm("Q_b*W", T, model.q_lora_rank, H * (nope + rope), per_layer, False)
    else:
        gemm("Q*W", T, h, H * (nope + rope), per_layer, False)
    gemm("KV_a*W", T, h, latent, per_layer, model.qkv_bias)
    elementwise("Norm_kv_a", "norm", norm_fields(T, rank, model.norm_type, act, wgt), per_layer, type="Norm")
    rotated = T * (H + 1) * rope
    b.add(phase=fp.phase, name="Rotary", type="Elementwise", op="rotary", unit="vector", dtype=rows.vector_dtype,
          m=T, n=(H + 1) * rope, count=per_layer, vector_flops=rotated * FLOPS_PER_ELEMENT["rotary"],
          activation_bytes=(2 * rotated + T * rope) * act)
    b.add(phase=fp.phase, name="KVCache_Store", type="Async_KVCache", op="kv_store", unit="memory", dtype=kv_dtype,
          m=T, k=latent, n=1, count=per_layer, activation_bytes=T * latent * act, kv_bytes=T * latent * kvb)
    for window, suffix, layers in kinds:
        for part in fp.attention:
            part = part.windowed(window)
            if part.matrix_type == "Va_Mqa" and decode_form == "absorbed":
                _absorbed(rows, part, layers, suffix, H, model)
            else:
                _naive(rows, part, layers, suffix, H, model)


def _weights_gemm(rows, part, layers, name, type, m, k, n, batch) -> None:
    """`batch` GEMMs [m, k] @ [k, n], each with its own weights (per-head slices of kv_b_proj)."""
    rows.b.add(phase=rows.fp.phase, name=name, type=type, op="gemm", unit="matrix", dtype=rows.gemm_dtype,
               m=m, k=k, n=n, batch=batch, count=rows.count(part, layers), macs=m * k * n * batch,
               weight_bytes=batch * k * n * rows.wgt, activation_bytes=m * batch * (k + n) * rows.act)


def _naive(rows, part, layers, suffix, H, model) -> None:
    rank, nope, rope, value = model.kv_lora_rank, model.qk_nope_head_dim, model.qk_rope_head_dim, model.v_head_dim
    latent, act = rank + rope, rows.act
    decompressed = part.fresh_tokens + part.cache_tokens       # key tokens whose K/V are rebuilt from the latent
    if np.any(part.cache_tokens > 0):
        rows.kv_read(part, layers, suffix, latent, latent, 1)
    _weights_gemm(rows, part, layers, f"{part.prefix}KV_b*W{suffix}", "Ma_Mw", decompressed, rank, H * (nope + value),
                  1)
    q_bytes = part.query_tokens * H * (nope + rope) * act
    k_bytes = decompressed * (H * nope + rope) * act               # per-head K_nope plus the shared rope key
    v_bytes = decompressed * H * value * act
    out_bytes = part.query_tokens * H * value * act
    rows.core(part, layers, suffix, H, H, nope + rope, value, q_bytes + k_bytes, out_bytes + v_bytes)


def _absorbed(rows, part, layers, suffix, H, model) -> None:
    rank, nope, rope, value = model.kv_lora_rank, model.qk_nope_head_dim, model.qk_rope_head_dim, model.v_head_dim
    latent, act = rank + rope, rows.act
    tokens = part.query_tokens
    if np.any(part.cache_tokens > 0):
        rows.kv_read(part, layers, suffix, latent, latent, 1)
    _weights_gemm(rows, part, layers, f"{part.prefix}Q*W_UK{suffix}", "Va_Mw", tokens, nope, rank, H)
    own_latent = part.fresh_tokens * latent * act                # new tokens' latent straight from KV_a*W
    q_bytes = tokens * H * latent * act                           # absorbed query: latent + rope channels
    out_bytes = tokens * H * rank * act                           # attention output in the latent space
    rows.core(part, layers, suffix, H, 1, latent, rank, q_bytes + own_latent, out_bytes + own_latent)
    _weights_gemm(rows, part, layers, f"{part.prefix}O*W_UV{suffix}", "Va_Mw", tokens, rank, value, H)
