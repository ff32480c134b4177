"""Multi-head latent attention (DeepSeek-V2/V3) on one device: projections, the compressed KV cache,
prompts in the naive (decompressed) form, decode tokens in the absorbed form (Scenario.mla_decode
"absorbed", the default) or the naive one ("naive", as Hugging Face transformers decodes).

Per layer, H query heads on the device (num_attention_heads / tp), latent rank r (kv_lora_rank),
per-head channels d_n (qk_nope_head_dim), d_r (qk_rope_head_dim, one rotary key shared by all heads)
and d_v (v_head_dim); T tokens in the pass:

    Q_a*W      T x hidden -> q_lora_rank  (replicated over tp), then Norm_q_a    [q_lora_rank set]
               (with KV_a*W as one GEMM, QKV_a*W, under FUSED_A_PROJECTION: the default)
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

from engine.decomposition.attention import AttentionRows, LayerKind
from engine.decomposition.passes import AttentionPart
from engine.kernels.fields import norm_fields
from engine.kernels.table import FLOPS_PER_ELEMENT
from engine.models.config import ModelConfig
from engine.workload.parallel import ParallelLayout

# Q_a*W and KV_a*W as one GEMM (QKV_a*W: T x hidden -> q_lora_rank + r + d_r), as the serving engines run them:
# vLLM's and SGLang's DeepseekV2 attention build fused_qkv_a_proj (MergedColumnParallelLinear over [q_lora_rank,
# kv_lora_rank + qk_rope_head_dim], replicated), TensorRT-LLM's MLA its fused_a. Same weights and MACs, one kernel
# fewer per layer. Measured on the serving runs (docs/serving.md, session 19, h/kimi: leave-one-system-out TPOT 11.7% /
# 34.0% -> 11.3% / 33.7%, TTFT 27.5% / 79.8% -> 27.7% / 79.8%). False: the two GEMMs as before.
FUSED_A_PROJECTION = True


def add_mla_attention(attention: AttentionRows, model: ModelConfig, layout: ParallelLayout, kinds: list[LayerKind],
                      decode_form: str = "absorbed") -> None:
    """The attention block of MLA layers on one device (module docstring): the projections once, the
    attention rows per kind of layer in `kinds`; `decode_form` is the form decode tokens run in
    ("absorbed" or "naive"; prompts are always naive)."""
    if decode_form not in ("absorbed", "naive"):
        raise ValueError(f"mla_decode={decode_form!r}: expected 'absorbed' or 'naive'")
    kernels = attention.kernels
    activation, weight, kv = kernels.value_bytes.activation, kernels.value_bytes.weight, kernels.value_bytes.kv
    tokens, heads, hidden = kernels.tokens, layout.q_heads, model.hidden_size
    rank, nope, rope = model.kv_lora_rank, model.qk_nope_head_dim, model.qk_rope_head_dim
    latent = rank + rope
    per_layer = layout.layers * kernels.steps
    fused_a = bool(model.q_lora_rank) and FUSED_A_PROJECTION
    if fused_a:
        kernels.gemm("QKV_a*W", tokens, hidden, model.q_lora_rank + latent, per_layer, model.qkv_bias,
                     module="attention_qkv")
    if model.q_lora_rank:
        if not fused_a:
            kernels.gemm("Q_a*W", tokens, hidden, model.q_lora_rank, per_layer, model.qkv_bias,
                         module="attention_qkv")
        kernels.elementwise("Norm_q_a", "norm", norm_fields(tokens, model.q_lora_rank, model.norm_type, activation,
                                                            weight), per_layer, type="Norm")
        kernels.gemm("Q_b*W", tokens, model.q_lora_rank, heads * (nope + rope), per_layer, False,
                     module="attention_qkv")
    else:
        kernels.gemm("Q*W", tokens, hidden, heads * (nope + rope), per_layer, False, module="attention_qkv")
    if not fused_a:
        kernels.gemm("KV_a*W", tokens, hidden, latent, per_layer, model.qkv_bias, module="attention_qkv")
    kernels.elementwise("Norm_kv_a", "norm", norm_fields(tokens, rank, model.norm_type, activation, weight),
                        per_layer, type="Norm")
    rotated = tokens * (heads + 1) * rope
    kernels.add(name="Rotary", type="Elementwise", op="rotary", unit="vector", dtype=kernels.vector_dtype,
                m=tokens, n=(heads + 1) * rope, count=per_layer, vector_flops=rotated * FLOPS_PER_ELEMENT["rotary"],
                activation_bytes=(2 * rotated + tokens * rope) * activation)
    kernels.add(name="KVCache_Store", type="Async_KVCache", op="kv_store", unit="memory", dtype=kernels.kv_dtype,
                m=tokens, k=latent, n=1, count=per_layer, activation_bytes=tokens * latent * activation,
                kv_bytes=tokens * latent * kv)
    for kind in kinds:
        for part in kernels.forward_pass.attention:
            part = part.windowed(kind.window)
            if part.matrix_type == "Va_Mqa" and decode_form == "absorbed":
                _absorbed(attention, part, kind.layers, kind.suffix, heads, model)
            else:
                _naive(attention, part, kind.layers, kind.suffix, heads, model)


def _weights_gemm(attention: AttentionRows, part: AttentionPart, layers, name, type, m, k, n, batch) -> None:
    """`batch` GEMMs [m, k] @ [k, n], each with its own weights (per-head slices of kv_b_proj: attention_qkv)."""
    kernels = attention.kernels
    dtypes = kernels.module_gemm("attention_qkv")
    kernels.add(name=name, type=type, op="gemm", unit="matrix", dtype=dtypes.gemm_dtype,
                m=m, k=k, n=n, batch=batch, count=attention.count(part, layers), macs=m * k * n * batch,
                weight_bytes=batch * k * n * dtypes.weight_bytes,
                activation_bytes=m * batch * (k + n) * dtypes.activation_bytes)


def _naive(attention: AttentionRows, part: AttentionPart, layers, suffix, heads, model: ModelConfig) -> None:
    rank, nope, rope, value = model.kv_lora_rank, model.qk_nope_head_dim, model.qk_rope_head_dim, model.v_head_dim
    latent, activation = rank + rope, attention.kernels.value_bytes.activation
    decompressed = part.fresh_tokens + part.cache_tokens       # key tokens whose K/V are rebuilt from the latent
    if np.any(part.cache_tokens > 0):
        attention.kv_read(part, layers, suffix, latent, latent, 1)
    _weights_gemm(attention, part, layers, f"{part.prefix}KV_b*W{suffix}", "Ma_Mw", decompressed, rank,
                  heads * (nope + value), 1)
    q_bytes = part.query_tokens * heads * (nope + rope) * activation
    k_bytes = decompressed * (heads * nope + rope) * activation      # per-head K_nope plus the shared rope key
    v_bytes = decompressed * heads * value * activation
    out_bytes = part.query_tokens * heads * value * activation
    # the kernel's K/V width: a prompt's K/V rebuilt from the latent are quantized to the cache's dtype for the
    # context kernel (TensorRT-LLM's MLA context over an 8-bit cache runs the 8-bit kernel: AIConfigurator's 8-bit MLA
    # rows are bf16 activations over an fp8 cache, as mla_fit fits them); a naive decode reads them as activations
    width = activation if part.matrix_type == "Va_Mqa" else attention.kernels.value_bytes.kv
    attention.core(part, layers, suffix, heads, heads, nope + rope, value, q_bytes + k_bytes, out_bytes + v_bytes,
                   kv_value_bytes=width)


def _absorbed(attention: AttentionRows, part: AttentionPart, layers, suffix, heads, model: ModelConfig) -> None:
    rank, nope, rope, value = model.kv_lora_rank, model.qk_nope_head_dim, model.qk_rope_head_dim, model.v_head_dim
    latent, activation = rank + rope, attention.kernels.value_bytes.activation
    tokens = part.query_tokens
    if np.any(part.cache_tokens > 0):
        attention.kv_read(part, layers, suffix, latent, latent, 1)
    _weights_gemm(attention, part, layers, f"{part.prefix}Q*W_UK{suffix}", "Va_Mw", tokens, nope, rank, heads)
    own_latent = part.fresh_tokens * latent * activation             # new tokens' latent straight from KV_a*W
    q_bytes = tokens * heads * latent * activation                   # absorbed query: latent + rope channels
    out_bytes = tokens * heads * rank * activation                   # attention output in the latent space
    attention.core(part, layers, suffix, heads, 1, latent, rank, q_bytes + own_latent, out_bytes + own_latent)
    _weights_gemm(attention, part, layers, f"{part.prefix}O*W_UV{suffix}", "Va_Mw", tokens, rank, value, heads)
