"""Model + scenario -> kernel table (the default, corrected decomposition).

One transformer layer, in execution order:
  Norm_attn, Q/K/V*W, Rotary, KVCache_Store, [KVCache_Read], Q*gK, Softmax, Q*gK*gV, O*W,
  Residual_attn, Norm_ffn, FFN_up, [FFN_gate], FFN_act, FFN_down, Residual_ffn
plus once per forward pass: Embedding (a lookup: only the rows for the tokens are read),
Norm_final and LM_head (logits only for the last position of each sequence).
Model features (docs/methods.md): Norm_qk after Q/K/V*W (QK-norm), Norm_post_attn / Norm_post_ffn
before the residual adds (Gemma), attention sinks and logit soft-capping in Softmax, sliding-window
layers with their own attention rows (`Q*gK (sliding)`, ...; engine/kernels/attention_window.py), multi-head
latent attention (engine/decomposition/mla.py) and mixture-of-experts layers (engine/decomposition/moe.py).

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

from engine.kernels.collective_kinds import bandwidth_factor, kind_of
from engine.decomposition.moe import add_moe_block, expected_active_experts  # noqa: F401  (re-exported)
from engine.hardware.dtypes import bytes_per_value, compute_dtype
from engine.kernels.fields import (  # noqa: F401  (re-exported: engine/calibration/measurements.py uses them)
    elementwise_fields, gemm_fields, mlp_activation_fields, norm_fields, residual_fields)
from engine.decomposition.chunked import chunked_request_pass
from engine.decomposition.mla import add_mla_attention
from engine.decomposition.passes import AttentionPart, ForwardPass
from engine.kernels.table import FLOPS_PER_ELEMENT, SLIDING_SUFFIX, KernelTableBuilder
from engine.workload.parallel import ParallelLayout, parallel_layout
from engine.workload.scenario import Scenario


def decompose(model, scenario: Scenario) -> pd.DataFrame:
    """The kernel table for `scenario` on `model` (per occurrence, with counts)."""
    return pd.DataFrame(decompose_columns(model, scenario))


def decompose_columns(model, scenario: Scenario) -> dict[str, np.ndarray]:
    """`decompose` as a dict of numpy arrays (the fast form the estimators use)."""
    if getattr(model, "automatic", False):      # traced models (engine.decomposition.auto.AutoModel) decompose themselves
        return model.decompose_columns(scenario)
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

    # ---- attention block (per layer kind: full and sliding-window layers get their own attention rows) ----
    elementwise("Norm_attn", "norm", norm, per_layer, type="Norm")
    kinds = attention_layer_kinds(model, layout)
    rows = AttentionRows(b, fp, act, wgt, kvb, attention_dtype, vector_dtype, gemm_dtype,
                         sinks=getattr(model, "attention_sinks", False),
                         softcap=getattr(model, "attn_logit_softcapping", None) is not None)
    if getattr(model, "attention_kind", "mha") == "mla":
        add_mla_attention(rows, model, layout, kinds, gemm, elementwise, s.kv_dtype, s.mla_decode)
        value_width = qh * model.v_head_dim
    else:
        gemm("Q/K/V*W", T, h, (qh + 2 * kvh) * d, per_layer, model.qkv_bias)
        if getattr(model, "qk_norm", False):   # RMSNorm over every query and key head: head_dim weights each
            elementwise("Norm_qk", "norm", elementwise_fields(T, T * (qh + kvh) * d, FLOPS_PER_ELEMENT["rmsnorm"], 1,
                                                              act, 2 * d, wgt), per_layer, type="Norm")
        if model.position_embedding == "rotary":
            rotated = T * (qh + kvh) * model.rotary_dim
            b.add(phase=fp.phase, name="Rotary", type="Elementwise", op="rotary", unit="vector", dtype=vector_dtype,
                  m=T, n=(qh + kvh) * model.rotary_dim, count=per_layer,
                  vector_flops=rotated * FLOPS_PER_ELEMENT["rotary"],
                  activation_bytes=(2 * rotated + T * model.rotary_dim) * act)  # q,k in and out; cos/sin rows
        kv_elements = T * 2 * kvh * d   # every new token's K and V are written (a window only limits the reads)
        b.add(phase=fp.phase, name="KVCache_Store", type="Async_KVCache", op="kv_store", unit="memory",
              dtype=s.kv_dtype, m=T, k=d, n=2 * kvh, count=per_layer,
              activation_bytes=kv_elements * act, kv_bytes=kv_elements * kvb)
        for window, suffix, layers in kinds:
            for part in fp.attention:
                rows.add_mha(part.windowed(window), layers, suffix, qh, kvh, d)
        value_width = qh * d
    output = gemm("O*W", T, value_width, h, per_layer, model.attention_output_bias)
    if tp > 1:
        collective("AllReduce_attn", T, h, T * h * act, tp, per_layer, output)
    if getattr(model, "norms_per_layer", 2) == 4:   # Gemma: RMSNorm of the attention output before the residual
        elementwise("Norm_post_attn", "norm", norm, per_layer, type="Norm")
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
                      act, wgt, gemm_dtype, matrix_type, routing_skew=s.routing_skew)
    if getattr(model, "norms_per_layer", 2) == 4:   # Gemma: RMSNorm of the MLP output before the residual
        elementwise("Norm_post_ffn", "norm", norm, per_layer, type="Norm")
    elementwise("Residual_ffn", "residual", residual, per_layer)

    # ---- pipeline: the stage's output hidden states go to the next stage ----
    if layout.pp > 1:   # pp - 1 of the pp stages send: (pp - 1) / pp sends per pass per device, on average
        collective("SendRecv_stage", T, h, T * h * act, 2, steps * (layout.pp - 1) / layout.pp)

    # ---- once per pass: final norm over all tokens, logits for the last position of each sequence ----
    if getattr(model, "has_final_norm", True):
        elementwise("Norm_final", "norm", norm, steps, type="Norm")
    rows, vocab = fp.logit_rows, layout.vocab
    softcap = FLOPS_PER_ELEMENT["softcap"] if getattr(model, "final_logit_softcapping", None) is not None else 0.0
    head = b.add(phase=fp.phase, name="LM_head", type=matrix_type, op="gemm", unit="matrix", dtype=gemm_dtype,
                 m=rows, k=h, n=vocab, count=steps, macs=rows * h * vocab, vector_flops=softcap * rows * vocab,
                 weight_bytes=h * vocab * wgt, activation_bytes=rows * h * act + rows * vocab * act)
    if tp > 1:   # vocab-parallel logits gathered to one device for sampling
        collective("AllGather_logits", rows, vocab * tp, rows * vocab * tp * act, tp, steps, head)


def attention_layer_kinds(model, layout: ParallelLayout) -> list[tuple[int | None, str, float]]:
    """(window, kernel-name suffix, layers per device) for the model's full and sliding-window layers."""
    kinds = tuple(getattr(model, "layer_attention", ()))
    sliding = kinds.count("sliding") if getattr(model, "sliding_window", None) else 0
    full = model.num_layers - sliding
    found = []
    if full:
        found.append((None, "", full / layout.pp))
    if sliding:
        found.append((int(model.sliding_window), SLIDING_SUFFIX, sliding / layout.pp))
    return found


@dataclass(frozen=True)
class AttentionRows:
    """Adds the rows of one attention (per part of a pass and layer kind) to the kernel table.

    One attention is `[KVCache_Read,] Q*gK, Softmax, Q*gK*gV` (fused into one kernel by the realistic
    method): scores over `qk_dim` channels, values over `v_dim`, `q_heads` query heads sharing
    `kv_heads` K/V heads. Attention sinks add one score column per query head and token (its softmax
    work and the sink logits, read as weights); logit soft-capping adds cap * tanh(x / cap) per score.
    """

    b: KernelTableBuilder
    fp: ForwardPass
    act: float
    wgt: float
    kvb: float
    attention_dtype: str
    vector_dtype: str
    gemm_dtype: str
    sinks: bool = False
    softcap: bool = False

    def count(self, part: AttentionPart, layers: float):
        count = layers if part.per_row_count else layers * self.fp.steps
        return np.where(part.sequences > 0, count, 0.0)          # a chunked iteration without this part

    def add_mha(self, part: AttentionPart, layers: float, suffix: str, q_heads: int, kv_heads: int, d: int) -> None:
        """MHA/GQA/MQA: K/V heads of head_dim `d` cached per token; new K/V come from the projection."""
        if np.any(part.cache_tokens > 0):
            self.kv_read(part, layers, suffix, kv_heads * 2 * d, d, 2 * kv_heads)
        q_bytes = part.query_tokens * q_heads * d * self.act
        own_kv_bytes = part.fresh_tokens * kv_heads * d * self.act            # K (or V) of new tokens
        self.core(part, layers, suffix, q_heads, kv_heads, d, d, q_bytes + own_kv_bytes, q_bytes + own_kv_bytes)

    def kv_read(self, part: AttentionPart, layers: float, suffix: str, values_per_token, k, n) -> None:
        """The cached K/V (or latent) of the part's context streamed from the KV cache."""
        seqs = np.maximum(part.sequences, 1.0)
        context = np.maximum(part.context, 1.0)
        self.b.add(phase=self.fp.phase, name=f"{part.prefix}KVCache_Read{suffix}", type="KVCache", op="kv_read",
                   unit="memory", dtype=self.attention_dtype, m=context, k=k, n=n, batch=seqs, context=context,
                   attention_window=_window_value(part), count=self.count(part, layers),
                   kv_bytes=part.cache_tokens * values_per_token * self.kvb)

    def core(self, part: AttentionPart, layers: float, suffix: str, q_heads, kv_heads, qk_dim, v_dim,
             score_activation_bytes, value_activation_bytes) -> None:
        """Q*gK (m = query tokens per sequence x group, k = qk_dim, n = context, batch = sequences x
        kv_heads), Softmax, Q*gK*gV (k = v_dim)."""
        seqs = np.maximum(part.sequences, 1.0)
        context = np.maximum(part.context, 1.0)
        group = q_heads / kv_heads
        count = self.count(part, layers)
        shape = dict(m=part.query_tokens / seqs * group, k=qk_dim, n=context, batch=seqs * kv_heads, context=context,
                     attention_window=_window_value(part))
        scores = q_heads * part.pairs
        per_score = FLOPS_PER_ELEMENT["softmax"] + (FLOPS_PER_ELEMENT["softcap"] if self.softcap else 0.0)
        softmax_flops = scores * per_score
        sink_bytes = 0.0
        if self.sinks:      # one learned logit per head joins every query's softmax denominator
            softmax_flops = softmax_flops + q_heads * part.query_tokens * FLOPS_PER_ELEMENT["softmax"]
            sink_bytes = q_heads * self.wgt
        phase, name = self.fp.phase, part.prefix
        self.b.add(phase=phase, name=f"{name}Q*gK{suffix}", type=part.matrix_type, op="attention", unit="matrix",
                   dtype=self.attention_dtype, count=count, macs=scores * qk_dim,
                   activation_bytes=score_activation_bytes, **shape)
        self.b.add(phase=phase, name=f"{name}Softmax{suffix}", type="Softmax", op="softmax", unit="vector",
                   dtype=self.vector_dtype, count=count, vector_flops=softmax_flops, weight_bytes=sink_bytes, **shape)
        self.b.add(phase=phase, name=f"{name}Q*gK*gV{suffix}", type=part.matrix_type, op="attention", unit="matrix",
                   dtype=self.attention_dtype, count=count, macs=scores * v_dim,
                   activation_bytes=value_activation_bytes, **{**shape, "k": v_dim})


def _window_value(part: AttentionPart) -> float:
    return float(part.window) if part.window is not None else np.nan
