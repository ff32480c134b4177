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

Parallelism (docs/parallelism.md): the table describes what ONE device does. Tensor parallelism
splits Q/K/V and the MLP up/gate by columns, O and the MLP down by rows (heads split over tp; K/V
heads replicated when there are fewer than tp), the embedding and LM head by vocabulary rows, and
adds `AllReduce_attn`, `AllReduce_ffn` (after O*W and FFN_down), `AllReduce_embed` and
`AllGather_logits`; pipeline parallelism keeps num_layers / pp layers per device and adds
`SendRecv_stage`; prefill micro-batches shrink the pass and repeat it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.collectives import bandwidth_factor, kind_of
from engine.decompose_moe import add_moe_block, expected_active_experts  # noqa: F401  (re-exported)
from engine.dtypes import bytes_per_value, compute_dtype
from engine.kernel_fields import (  # noqa: F401  (re-exported: engine/calibration.py uses them)
    elementwise_fields, gemm_fields, mlp_activation_fields, norm_fields, residual_fields)
from engine.kernels import FLOPS_PER_ELEMENT, KernelTableBuilder
from engine.parallel import ParallelLayout, parallel_layout
from engine.workload import Scenario


@dataclass(frozen=True)
class AttentionPart:
    """Sequences attending within one pass, as totals per row (one row per step or iteration).

    `pairs` counts causal (query, key) pairs per head summed over the sequences; `cache_tokens`
    the K (and V) tokens streamed from the KV cache; `fresh_tokens` the new tokens whose K/V the
    kernel takes straight from the projection (a prompt's first chunk). `context` is the mean
    context a sequence attends to (the shape's n).
    """

    prefix: str          # "" for plain prefill/decode, "p"/"d" for the two halves of a chunk
    matrix_type: str     # Ma_Mqa (many query tokens) or Va_Mqa (one query token)
    sequences: np.ndarray
    query_tokens: np.ndarray
    context: np.ndarray
    pairs: np.ndarray
    cache_tokens: np.ndarray
    fresh_tokens: np.ndarray
    per_row_count: bool = False   # True: each row is one step/iteration (count = layers), else counted `steps` times

    @classmethod
    def uniform(cls, prefix: str, sequences: int, new_tokens: int, prior: np.ndarray, matrix_type: str):
        """`sequences` alike: `new_tokens` each after `prior` cached tokens (one value per step)."""
        q = new_tokens
        context = prior + q                                     # tokens attended by the last query
        from_cache = q == 1 or prior[0] > 0   # new K/V were stored first; the kernel streams the context
        rows = len(prior)
        return cls(prefix, matrix_type, np.full(rows, float(sequences)), np.full(rows, float(sequences * q)), context,
                   sequences * (q * prior + q * (q + 1) / 2.0),
                   sequences * context if from_cache else np.zeros(rows),
                   np.zeros(rows) if from_cache else np.full(rows, float(sequences * q)),
                   per_row_count=rows > 1)


@dataclass(frozen=True)
class ForwardPass:
    phase: str
    tokens: object       # tokens through the linear layers in one step (an array: one value per iteration)
    logit_rows: object   # rows through the LM head in one step
    steps: int           # times this pass runs on the device (decode steps; prefill micro-batches)
    attention: tuple[AttentionPart, ...]
    micro_batches: int = 1


def decompose(model, scenario: Scenario) -> pd.DataFrame:
    """The kernel table for `scenario` on `model` (per occurrence, with counts)."""
    return pd.DataFrame(decompose_columns(model, scenario))


def decompose_columns(model, scenario: Scenario) -> dict[str, np.ndarray]:
    """`decompose` as a dict of numpy arrays (the fast form the estimators use)."""
    layout = parallel_layout(model, scenario)
    builder = KernelTableBuilder()
    for forward_pass in forward_passes(scenario):
        add_forward_pass(builder, model, scenario, forward_pass, layout)
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
        parts = [AttentionPart.uniform("p", 1, prefill_tokens, one + prefill_prior, "Ma_Mqa")]
        if decode_tokens:
            parts.insert(0, AttentionPart.uniform("d", decode_tokens, 1, one + decode_context - 1, "Va_Mqa"))
        return [ForwardPass("chunked", s.chunk_size, 1 + decode_tokens, 1, tuple(parts))]
    if s.chunked_prefill:
        from engine.schedule import chunked_request_pass
        return [chunked_request_pass(s)]
    passes = [_prefill_pass(s)]
    if s.output_length > 1:
        # decode step j = 1..O-1 feeds generated token j; the cache holds L + j - 1 tokens before it
        priors = s.input_length + np.arange(1, s.output_length, dtype=float) - 1
        passes.append(_decode_pass("decode", s.batch, priors))
    return passes


def _prefill_pass(s: Scenario) -> ForwardPass:
    micro = s.prefill_micro_batches
    sequences = s.batch // micro
    part = AttentionPart.uniform("", sequences, s.input_length, np.array([0.0]), "Ma_Mqa")
    return ForwardPass("prefill", sequences * s.input_length, sequences, micro, (part,), micro)


def _decode_pass(phase: str, batch: int, priors: np.ndarray) -> ForwardPass:
    part = AttentionPart.uniform("", batch, 1, priors, "Va_Mqa")
    return ForwardPass(phase, batch, batch, len(priors), (part,))


def add_forward_pass(b: KernelTableBuilder, model, s: Scenario, fp: ForwardPass,
                     layout: ParallelLayout | None = None) -> None:
    """One forward pass on one device: `layout` gives the per-device heads, widths and layers."""
    layout = layout or parallel_layout(model, s)
    act, wgt, kvb = (bytes_per_value(d) for d in (s.activation_dtype, s.weight_dtype, s.kv_dtype))
    gemm_dtype = compute_dtype(s.weight_dtype, s.activation_dtype)
    attention_dtype = compute_dtype(s.activation_dtype, s.kv_dtype)
    vector_dtype = s.activation_dtype
    h, d = model.hidden_size, model.head_dim
    qh, kvh, tp = layout.q_heads, layout.kv_heads, layout.tp
    T, steps = fp.tokens, fp.steps
    per_layer = layout.layers * steps
    matrix_type = "Va_Mw" if all(p.matrix_type == "Va_Mqa" for p in fp.attention) else "Ma_Mw"
    norm = norm_fields(T, h, model.norm_type, act, wgt)
    residual = residual_fields(T, h, act)

    def gemm(name, m, k, n, count, bias):
        return b.add(phase=fp.phase, name=name, type=matrix_type, op="gemm", unit="matrix", dtype=gemm_dtype,
                     count=count, **gemm_fields(m, k, n, wgt, act, bias))

    def elementwise(name, op, fields, count, type="Elementwise"):
        return b.add(phase=fp.phase, name=name, type=type, op=op, unit="vector", dtype=vector_dtype, count=count,
                     **fields)

    def collective(name, tokens, width, message_bytes, group, count, producer=-1):
        """A collective of `message_bytes` per device over `group` devices (docs/parallelism.md)."""
        factor = bandwidth_factor(kind_of(name), group, s.collective_algorithm)
        return b.add(phase=fp.phase, name=name, type="Collective", op="collective", unit="link", dtype=vector_dtype,
                     m=tokens, n=width, count=count, link_bytes=factor * np.asarray(message_bytes, dtype=float),
                     group_size=group, overlap_group=producer)

    # ---- once per pass: token (and learned position) embedding lookup; vocab-parallel over tp ----
    tables = 2 if model.position_embedding == "learned" else 1
    embedding = b.add(phase=fp.phase, name="Embedding", type="Gather", op="embedding", unit="memory",
                      dtype=vector_dtype, m=T, n=h, count=steps, vector_flops=T * h * (tables - 1),
                      weight_bytes=(1.0 / tp + tables - 1) * T * h * wgt, activation_bytes=T * h * act)
    if tp > 1:   # each device looks up the rows of its vocabulary shard; the sum completes the rows
        collective("AllReduce_embed", T, h, T * h * act, tp, steps, embedding)

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
        _add_attention(b, fp, part, layout, d, act, kvb, attention_dtype, vector_dtype)
    output = gemm("O*W", T, qh * d, h, per_layer, model.attention_output_bias)
    if tp > 1:
        collective("AllReduce_attn", T, h, T * h * act, tp, per_layer, output)
    elementwise("Residual_attn", "residual", residual, per_layer)

    # ---- MLP block: dense layers and mixture-of-experts layers ----
    elementwise("Norm_ffn", "norm", norm, per_layer, type="Norm")
    moe_layers = getattr(model, "num_moe_layers", 0) if getattr(model, "is_moe", False) else 0
    dense_layers = model.num_layers - moe_layers
    if dense_layers:
        inner = model.intermediate_size // tp
        count = dense_layers / layout.pp * steps
        gemm("FFN_up", T, h, inner, count, model.mlp_bias)
        if model.gated_mlp:
            gemm("FFN_gate", T, h, inner, count, model.mlp_bias)
        elementwise("FFN_act", "activation", mlp_activation_fields(T, inner, model.hidden_act, model.gated_mlp, act),
                    count)
        down = gemm("FFN_down", T, inner, h, count, model.mlp_bias)
        if tp > 1:
            collective("AllReduce_ffn", T, h, T * h * act, tp, count, down)
    if moe_layers:
        add_moe_block(b, fp, model, layout, T, moe_layers / layout.pp * steps, gemm, elementwise, collective,
                      act, wgt, gemm_dtype, matrix_type)
    elementwise("Residual_ffn", "residual", residual, per_layer)

    # ---- pipeline: the stage's output hidden states go to the next stage ----
    if layout.pp > 1:   # pp - 1 of the pp stages send: (pp - 1) / pp sends per pass per device, on average
        collective("SendRecv_stage", T, h, T * h * act, 2, steps * (layout.pp - 1) / layout.pp)

    # ---- once per pass: final norm over all tokens, logits for the last position of each sequence ----
    if getattr(model, "has_final_norm", True):
        elementwise("Norm_final", "norm", norm, steps, type="Norm")
    rows, vocab = fp.logit_rows, layout.vocab
    head = b.add(phase=fp.phase, name="LM_head", type=matrix_type, op="gemm", unit="matrix", dtype=gemm_dtype,
                 m=rows, k=h, n=vocab, count=steps, macs=rows * h * vocab,
                 weight_bytes=h * vocab * wgt, activation_bytes=rows * h * act + rows * vocab * act)
    if tp > 1:   # vocab-parallel logits gathered to one device for sampling
        collective("AllGather_logits", rows, vocab * tp, rows * vocab * tp * act, tp, steps, head)


def _add_attention(b, fp, part: AttentionPart, layout: ParallelLayout, d, act, kvb, attention_dtype,
                   vector_dtype) -> None:
    qh, kvh = layout.q_heads, layout.kv_heads
    group = qh // kvh
    layers = layout.layers
    seqs = np.maximum(part.sequences, 1.0)
    count = layers if part.per_row_count else layers * fp.steps
    count = np.where(part.sequences > 0, count, 0.0)          # a chunked iteration without this part
    context = np.maximum(part.context, 1.0)
    shape = dict(m=part.query_tokens / seqs * group, k=d, n=context, batch=seqs * kvh, context=context)
    macs = qh * d * part.pairs
    q_bytes = part.query_tokens * qh * d * act
    own_kv_bytes = part.fresh_tokens * kvh * d * act            # K (or V) of new tokens, as activations
    name = part.prefix
    if np.any(part.cache_tokens > 0):
        b.add(phase=fp.phase, name=f"{name}KVCache_Read", type="KVCache", op="kv_read", unit="memory",
              dtype=attention_dtype, m=context, k=d, n=2 * kvh, batch=seqs, context=context, count=count,
              kv_bytes=part.cache_tokens * 2 * kvh * d * kvb)
    b.add(phase=fp.phase, name=f"{name}Q*gK", type=part.matrix_type, op="attention", unit="matrix",
          dtype=attention_dtype, count=count, macs=macs, activation_bytes=q_bytes + own_kv_bytes, **shape)
    b.add(phase=fp.phase, name=f"{name}Softmax", type="Softmax", op="softmax", unit="vector", dtype=vector_dtype,
          count=count, vector_flops=qh * part.pairs * FLOPS_PER_ELEMENT["softmax"], **shape)
    b.add(phase=fp.phase, name=f"{name}Q*gK*gV", type=part.matrix_type, op="attention", unit="matrix",
          dtype=attention_dtype, count=count, macs=macs, activation_bytes=q_bytes + own_kv_bytes, **shape)

