"""Model + scenario -> kernel table (the default, corrected decomposition).

One transformer layer, in execution order:
  Norm_attn, Q/K/V*W, Rotary, KVCache_Store, [KVCache_Read], Q*gK, Softmax, Q*gK*gV, O*W,
  Residual_attn, Norm_ffn, FFN_up, [FFN_gate], FFN_act, FFN_down, Residual_ffn
plus once per forward pass: Embedding (a lookup: only the rows for the tokens are read),
Norm_final and LM_head (logits only for the last position of each sequence).

Differences from the seed notebook (whose decomposition lives in decompose_seed.py):
- causal attention: a prompt of q tokens after p cached ones scores q*p + q(q+1)/2 pairs, not q^2;
- the GQA group size reaches the attention shapes (m = q * group, batch = sequences * kv_heads);
- chunked decode attention spans the decode context, not head_dim * kv_heads;
- every operand's bytes are counted: activations in and out, weights, KV cache read and store;
- attention is fused (flash-style): scores and probabilities stay on chip.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.dtypes import bytes_per_value, compute_dtype
from engine.kernels import FLOPS_PER_ELEMENT, KernelTableBuilder, activation_flops
from engine.workload import Scenario


@dataclass(frozen=True)
class AttentionPart:
    """Sequences that attend alike within one pass: `new_tokens` each after `prior` cached ones."""

    prefix: str          # "" for plain prefill/decode, "p"/"d" for the two halves of a chunk
    sequences: int
    new_tokens: int
    prior: np.ndarray    # cached tokens before this pass; one value per step
    matrix_type: str     # Ma_Mqa (many query tokens) or Va_Mqa (one query token)


@dataclass(frozen=True)
class ForwardPass:
    phase: str
    tokens: int          # tokens through the linear layers in one step
    logit_rows: int      # rows through the LM head in one step
    steps: int           # times this pass runs
    attention: tuple[AttentionPart, ...]


def decompose(model, scenario: Scenario) -> pd.DataFrame:
    """The kernel table for `scenario` on `model` (per occurrence, with counts)."""
    return pd.DataFrame(decompose_columns(model, scenario))


def decompose_columns(model, scenario: Scenario) -> dict[str, np.ndarray]:
    """`decompose` as a dict of numpy arrays (the fast form the estimators use)."""
    builder = KernelTableBuilder()
    for forward_pass in forward_passes(scenario):
        add_forward_pass(builder, model, scenario, forward_pass)
    return builder.build_columns()


def forward_passes(s: Scenario) -> list[ForwardPass]:
    one = np.array([0.0])
    if s.phase == "prefill":
        return [_prefill_pass(s)]
    if s.phase == "decode":
        return [_decode_pass("decode", s.batch, np.array([float(s.decode_context)]))]
    if s.phase == "chunked":
        prefill_tokens, decode_tokens = s.chunk_mix()
        decode_context = s.context_length if s.context_length is not None else s.input_length + s.output_length // 2
        prefill_prior = max(0, (s.input_length - prefill_tokens) // 2)  # mean over the prompt's chunks
        parts = [AttentionPart("p", 1, prefill_tokens, one + prefill_prior, "Ma_Mqa")]
        if decode_tokens:
            parts.insert(0, AttentionPart("d", decode_tokens, 1, one + decode_context - 1, "Va_Mqa"))
        return [ForwardPass("chunked", s.chunk_size, 1 + decode_tokens, 1, tuple(parts))]
    passes = [_prefill_pass(s)]
    if s.output_length > 1:
        # decode step j = 1..O-1 feeds generated token j; the cache holds L + j - 1 tokens before it
        priors = s.input_length + np.arange(1, s.output_length, dtype=float) - 1
        passes.append(_decode_pass("decode", s.batch, priors))
    return passes


def _prefill_pass(s: Scenario) -> ForwardPass:
    part = AttentionPart("", s.batch, s.input_length, np.array([0.0]), "Ma_Mqa")
    return ForwardPass("prefill", s.batch * s.input_length, s.batch, 1, (part,))


def _decode_pass(phase: str, batch: int, priors: np.ndarray) -> ForwardPass:
    part = AttentionPart("", batch, 1, priors, "Va_Mqa")
    return ForwardPass(phase, batch, batch, len(priors), (part,))


# ---- one kernel's shape, FLOPs and bytes (shared with engine/calibration.py) ------------------
def gemm_fields(m, k, n, weight_value_bytes, activation_value_bytes, bias=False) -> dict:
    """C[m,n] = A[m,k] @ W[k,n]: the weights (and bias) read once, A read once, C written once."""
    return dict(m=m, k=k, n=n, macs=m * k * n,
                weight_bytes=(k * n + (n if bias else 0)) * weight_value_bytes,
                activation_bytes=(m * k + m * n) * activation_value_bytes)


def elementwise_fields(tokens, elements, flops_per_element, reads, activation_value_bytes,
                       weight_elements=0, weight_value_bytes=0) -> dict:
    """An element-wise kernel with `elements` outputs: `reads` inputs of that size read, the output
    written, plus an optional weight vector (m = tokens, n = elements per token)."""
    return dict(m=tokens, n=elements / tokens, vector_flops=elements * flops_per_element,
                weight_bytes=weight_elements * weight_value_bytes,
                activation_bytes=elements * (reads + 1) * activation_value_bytes)


def norm_fields(tokens, hidden, norm_type, activation_value_bytes, weight_value_bytes) -> dict:
    """RMSNorm/LayerNorm over tokens x hidden: reads x and the weight (and bias) vector, writes y."""
    weight_elements = hidden * (2 if norm_type == "layernorm" else 1)
    return elementwise_fields(tokens, tokens * hidden, FLOPS_PER_ELEMENT[norm_type], 1, activation_value_bytes,
                              weight_elements, weight_value_bytes)


def residual_fields(tokens, hidden, activation_value_bytes) -> dict:
    """x + residual over tokens x hidden: reads two, writes one."""
    return elementwise_fields(tokens, tokens * hidden, FLOPS_PER_ELEMENT["residual"], 2, activation_value_bytes)


def mlp_activation_fields(tokens, inner, hidden_act, gated, activation_value_bytes) -> dict:
    """The MLP activation over tokens x inner; gated (SwiGLU): act(gate) * up reads two inputs."""
    if gated:
        flops = activation_flops(hidden_act) + FLOPS_PER_ELEMENT["gate_multiply"]
        return elementwise_fields(tokens, tokens * inner, flops, 2, activation_value_bytes)
    return elementwise_fields(tokens, tokens * inner, activation_flops(hidden_act), 1, activation_value_bytes)


def add_forward_pass(b: KernelTableBuilder, model, s: Scenario, fp: ForwardPass) -> None:
    act, wgt, kvb = (bytes_per_value(d) for d in (s.activation_dtype, s.weight_dtype, s.kv_dtype))
    gemm_dtype = compute_dtype(s.weight_dtype, s.activation_dtype)
    attention_dtype = compute_dtype(s.activation_dtype, s.kv_dtype)
    vector_dtype = s.activation_dtype
    h, d, qh, kvh = model.hidden_size, model.head_dim, model.num_attention_heads, model.num_key_value_heads
    T, layers, steps = fp.tokens, model.num_layers, fp.steps
    per_layer = layers * steps
    matrix_type = "Va_Mw" if all(p.new_tokens == 1 for p in fp.attention) else "Ma_Mw"
    norm = norm_fields(T, h, model.norm_type, act, wgt)
    residual = residual_fields(T, h, act)

    def gemm(name, m, k, n, count, bias):
        b.add(phase=fp.phase, name=name, type=matrix_type, op="gemm", unit="matrix", dtype=gemm_dtype,
              count=count, **gemm_fields(m, k, n, wgt, act, bias))

    def elementwise(name, op, fields, count, type="Elementwise"):
        b.add(phase=fp.phase, name=name, type=type, op=op, unit="vector", dtype=vector_dtype, count=count, **fields)

    # ---- once per pass: token (and learned position) embedding lookup ----
    tables = 2 if model.position_embedding == "learned" else 1
    b.add(phase=fp.phase, name="Embedding", type="Gather", op="embedding", unit="memory", dtype=vector_dtype,
          m=T, n=h, count=steps, vector_flops=T * h * (tables - 1),
          weight_bytes=tables * T * h * wgt, activation_bytes=T * h * act)

    # ---- attention block ----
    elementwise("Norm_attn", "norm", norm, per_layer, type="Norm")
    gemm("Q/K/V*W", T, h, (qh + 2 * kvh) * d, per_layer, model.qkv_bias)
    if model.position_embedding == "rotary":
        rotated = T * (qh + kvh) * model.rotary_dim
        b.add(phase=fp.phase, name="Rotary", type="Elementwise", op="rotary", unit="vector", dtype=vector_dtype,
              m=T, n=(qh + kvh) * model.rotary_dim, count=per_layer,
              vector_flops=rotated * FLOPS_PER_ELEMENT["rotary"],
              activation_bytes=(2 * rotated + T * model.rotary_dim) * act)  # q,k in and out; cos/sin rows
    kv_elements = T * 2 * kvh * d
    b.add(phase=fp.phase, name="KVCache_Store", type="Async_KVCache", op="kv_store", unit="memory",
          dtype=s.kv_dtype, m=T, k=d, n=2 * kvh, count=per_layer,
          activation_bytes=kv_elements * act, kv_bytes=kv_elements * kvb)
    for part in fp.attention:
        _add_attention(b, fp, part, model, act, kvb, attention_dtype, vector_dtype, layers)
    gemm("O*W", T, qh * d, h, per_layer, model.attention_output_bias)
    elementwise("Residual_attn", "residual", residual, per_layer)

    # ---- MLP block ----
    elementwise("Norm_ffn", "norm", norm, per_layer, type="Norm")
    inner = model.intermediate_size
    gemm("FFN_up", T, h, inner, per_layer, model.mlp_bias)
    if model.gated_mlp:
        gemm("FFN_gate", T, h, inner, per_layer, model.mlp_bias)
    elementwise("FFN_act", "activation", mlp_activation_fields(T, inner, model.hidden_act, model.gated_mlp, act),
                per_layer)
    gemm("FFN_down", T, inner, h, per_layer, model.mlp_bias)
    elementwise("Residual_ffn", "residual", residual, per_layer)

    # ---- once per pass: final norm over all tokens, logits for the last position of each sequence ----
    if getattr(model, "has_final_norm", True):
        elementwise("Norm_final", "norm", norm, steps, type="Norm")
    rows = fp.logit_rows
    b.add(phase=fp.phase, name="LM_head", type=matrix_type, op="gemm", unit="matrix", dtype=gemm_dtype,
          m=rows, k=h, n=model.vocab_size, count=steps, macs=rows * h * model.vocab_size,
          weight_bytes=h * model.vocab_size * wgt,
          activation_bytes=rows * h * act + rows * model.vocab_size * act)


def _add_attention(b, fp, part, model, act, kvb, attention_dtype, vector_dtype, layers) -> None:
    d, qh, kvh = model.head_dim, model.num_attention_heads, model.num_key_value_heads
    group = qh // kvh
    q, seqs = part.new_tokens, part.sequences
    context = part.prior + q                                  # tokens attended by the last query
    scores_per_head = q * part.prior + q * (q + 1) / 2.0      # causal (query, key) pairs
    # one row per step when the context grows, else one row counted `steps` times
    count = layers if len(part.prior) > 1 else layers * fp.steps
    shape = dict(m=q * group, k=d, n=context, batch=seqs * kvh, context=context)
    macs = seqs * qh * d * scores_per_head
    q_bytes = seqs * q * qh * d * act
    own_kv_bytes = seqs * q * kvh * d * act                  # K (or V) of the new tokens, as activations
    from_cache = part.new_tokens == 1 or part.prior[0] > 0
    name = part.prefix
    if from_cache:   # new K/V were stored first; the kernel streams the whole context from the cache
        b.add(phase=fp.phase, name=f"{name}KVCache_Read", type="KVCache", op="kv_read", unit="memory",
              dtype=attention_dtype, m=context, k=d, n=2 * kvh, batch=seqs, context=context, count=count,
              kv_bytes=seqs * context * 2 * kvh * d * kvb)
        own_kv_bytes = 0.0
    b.add(phase=fp.phase, name=f"{name}Q*gK", type=part.matrix_type, op="attention", unit="matrix",
          dtype=attention_dtype, count=count, macs=macs, activation_bytes=q_bytes + own_kv_bytes, **shape)
    b.add(phase=fp.phase, name=f"{name}Softmax", type="Softmax", op="softmax", unit="vector", dtype=vector_dtype,
          count=count, vector_flops=seqs * qh * scores_per_head * FLOPS_PER_ELEMENT["softmax"], **shape)
    b.add(phase=fp.phase, name=f"{name}Q*gK*gV", type=part.matrix_type, op="attention", unit="matrix",
          dtype=attention_dtype, count=count, macs=macs, activation_bytes=q_bytes + own_kv_bytes, **shape)
