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

Differences from the seed notebook (whose decomposition lives in engine/decomposition/seed.py):
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

The passes a scenario runs come from engine/decomposition/phases.py; every kernel is added through one
PassKernels record (engine/decomposition/pass_kernels.py: the pass, its dtypes and bytes per value), the
attention rows by engine/decomposition/attention.py.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import numpy as np
import pandas as pd

from engine.decomposition.attention import AttentionRows, LayerKind, attention_layer_kinds, one_row
from engine.decomposition.mla import add_mla_attention
from engine.decomposition.moe import add_moe_block
from engine.decomposition.pass_kernels import PassKernels
from engine.decomposition.pass_template import add_pass
from engine.decomposition.passes import ForwardPass
from engine.decomposition.phases import forward_passes
from engine.kernels.fields import elementwise_fields, mlp_activation_fields, norm_fields, residual_fields
from engine.kernels.table import FLOPS_PER_ELEMENT, KernelTableBuilder
from engine.models.config import ModelConfig
from engine.workload.parallel import ParallelLayout, parallel_layout
from engine.workload.scenario import Scenario


def decompose(model, scenario: Scenario) -> pd.DataFrame:
    """The kernel table for `scenario` on `model` (per occurrence, with counts)."""
    return pd.DataFrame(decompose_columns(model, scenario))


def decompose_columns(model, scenario: Scenario, read_only: bool = False) -> dict[str, np.ndarray]:
    """`decompose` as a dict of numpy arrays (the fast form the estimators use); `read_only`: arrays read-only."""
    if not isinstance(model, ModelConfig):   # traced models (engine.decomposition.auto.AutoModel) decompose themselves
        return model.decompose_columns(scenario)
    layout = parallel_layout(model, scenario)
    builder = KernelTableBuilder()
    for forward_pass in forward_passes(scenario):
        add_forward_pass(builder, model, scenario, forward_pass, layout)
    return builder.build_columns(read_only)


def add_forward_pass(builder: KernelTableBuilder, model: ModelConfig, scenario: Scenario, forward_pass: ForwardPass,
                     layout: ParallelLayout | None = None) -> None:
    """One forward pass on one device: `layout` gives the per-device heads, widths and layers. The rows that do
    not read the attention come from a pass template where one of the same structure was built before
    (engine/decomposition/pass_template.py)."""
    layout = layout or parallel_layout(model, scenario)
    add_pass(builder, pass_structure(builder, model, scenario, forward_pass, layout),
             partial(_build_forward_pass, builder, model, scenario, forward_pass, layout),
             partial(_add_attention_rows_only, builder, model, scenario, forward_pass, layout), forward_pass.tokens,
             partial(_trace_forward_pass, builder, model, scenario, forward_pass, layout))


_PLAIN_NUMBERS = (int, float)


def pass_structure(builder: KernelTableBuilder, model: ModelConfig, scenario: Scenario, forward_pass: ForwardPass,
                   layout: ParallelLayout) -> tuple | None:
    """What the pass's rows outside its attention rows depend on (every input `_build_forward_pass` reads but the
    attention parts' values and the token count, whose type it names), or None where no template is kept: latent
    attention, tokens given per row (arrays)."""
    tokens, logit_rows = forward_pass.tokens, forward_pass.logit_rows
    if (type(model) is not ModelConfig or model.attention_kind == "mla" or tokens.__class__ not in _PLAIN_NUMBERS
            or logit_rows.__class__ not in _PLAIN_NUMBERS):
        return None
    parts = tuple((part.prefix, part.matrix_type, part.per_row_count, part.window) for part in forward_pass.attention)
    return (model, layout, scenario.activation_dtype, scenario.weight_dtype, scenario.kv_dtype,
            scenario.unquantized_modules, scenario.unquantized_dtype, scenario.collective_algorithm,
            scenario.routing_skew, scenario.moe_dispatch, forward_pass.phase, tokens.__class__, logit_rows.__class__,
            logit_rows, forward_pass.steps, forward_pass.micro_batches, parts, builder.size)


def _add_attention_rows_only(builder: KernelTableBuilder, model: ModelConfig, scenario: Scenario,
                             forward_pass: ForwardPass, layout: ParallelLayout) -> None:
    """The attention rows `_build_forward_pass` adds between its marks, alone (a pass template holds the rest)."""
    kernels = PassKernels.for_scenario(builder, forward_pass, scenario)
    attention = AttentionRows(kernels, sinks=model.attention_sinks, softcap=model.attn_logit_softcapping is not None)
    _add_mha_attention_rows(attention, model, layout, attention_layer_kinds(model, layout))


def _trace_forward_pass(builder: KernelTableBuilder, model: ModelConfig, scenario: Scenario,
                        forward_pass: ForwardPass, layout: ParallelLayout, tokens) -> None:
    """`_build_forward_pass` with `tokens` (a traced variable: engine/common/traced.py) as the pass's token count."""
    _build_forward_pass(builder, model, scenario, replace(forward_pass, tokens=tokens), layout)


def _build_forward_pass(builder: KernelTableBuilder, model: ModelConfig, scenario: Scenario,
                        forward_pass: ForwardPass, layout: ParallelLayout) -> None:
    kernels = PassKernels.for_scenario(builder, forward_pass, scenario)
    layer_count = layout.layers * kernels.steps   # count of a kernel that runs once per layer: layers x steps
    _add_embedding(kernels, model, layout)
    _add_attention_block(kernels, model, scenario, layout, layer_count)
    _add_mlp_block(kernels, model, scenario, layout, layer_count)
    if layout.pp > 1:   # the stage's output hidden states go to the next stage: (pp - 1) / pp sends per pass
        kernels.hidden_state_collective("SendRecv_stage", model.hidden_size, 2,
                                        kernels.steps * (layout.pp - 1) / layout.pp)
    _add_output(kernels, model, layout)


def _norm(kernels: PassKernels, model: ModelConfig, name: str, count) -> None:
    """A layer norm (or RMSNorm) over the hidden states of the pass's tokens."""
    fields = norm_fields(kernels.tokens, model.hidden_size, model.norm_type, kernels.value_bytes.activation,
                         kernels.value_bytes.weight)
    kernels.elementwise(name, "norm", fields, count, type="Norm")


def _residual(kernels: PassKernels, model: ModelConfig, name: str, count) -> None:
    fields = residual_fields(kernels.tokens, model.hidden_size, kernels.value_bytes.activation)
    kernels.elementwise(name, "residual", fields, count)


def _add_embedding(kernels: PassKernels, model: ModelConfig, layout: ParallelLayout) -> None:
    """Once per pass: the token (and learned position) embedding lookup, vocabulary-parallel over tp."""
    tokens, hidden, tp = kernels.tokens, model.hidden_size, layout.tp
    activation, weight = kernels.value_bytes.activation, kernels.module_gemm("embedding").weight_bytes
    tables = 2 if model.position_embedding == "learned" else 1
    embedding = kernels.add(name="Embedding", type="Gather", op="embedding", unit="memory",
                            dtype=kernels.vector_dtype, m=tokens, n=hidden, count=kernels.steps,
                            vector_flops=tokens * hidden * (tables - 1),
                            weight_bytes=(1.0 / tp + tables - 1) * tokens * hidden * weight,
                            activation_bytes=tokens * hidden * activation)
    if tp > 1:   # each device looks up the rows of its vocabulary shard; the sum completes the rows
        kernels.hidden_state_collective("AllReduce_embed", hidden, tp, kernels.steps, embedding)


def _add_attention_block(kernels: PassKernels, model: ModelConfig, scenario: Scenario, layout: ParallelLayout,
                         layer_count) -> None:
    """Norm, attention (per layer kind: full and sliding-window layers get their own attention rows), the
    output projection, its all-reduce, [post-attention norm,] residual."""
    _norm(kernels, model, "Norm_attn", layer_count)
    kinds = attention_layer_kinds(model, layout)
    attention = AttentionRows(kernels, sinks=model.attention_sinks,
                              softcap=model.attn_logit_softcapping is not None)
    if model.attention_kind == "mla":
        add_mla_attention(attention, model, layout, kinds, scenario.mla_decode)
        value_width = layout.q_heads * model.v_head_dim
    else:
        _add_mha_attention(attention, model, layout, kinds, layer_count)
        value_width = layout.q_heads * model.head_dim
    output = kernels.gemm("O*W", kernels.tokens, value_width, model.hidden_size, layer_count,
                          model.attention_output_bias, module="attention_output")
    if layout.tp > 1:
        kernels.hidden_state_collective("AllReduce_attn", model.hidden_size, layout.tp, layer_count, output)
    if model.norms_per_layer == 4:   # Gemma: RMSNorm of the attention output before the residual
        _norm(kernels, model, "Norm_post_attn", layer_count)
    _residual(kernels, model, "Residual_attn", layer_count)


def _add_mha_attention(attention: AttentionRows, model: ModelConfig, layout: ParallelLayout, kinds: list[LayerKind],
                       layer_count) -> None:
    """MHA/GQA/MQA: the Q/K/V projection, [QK-norm,] rotary, the K/V store and the attention rows."""
    kernels = attention.kernels
    tokens, head_dim = kernels.tokens, model.head_dim
    q_heads, kv_heads = layout.q_heads, layout.kv_heads
    activation, weight = kernels.value_bytes.activation, kernels.value_bytes.weight
    kernels.gemm("Q/K/V*W", tokens, model.hidden_size, (q_heads + 2 * kv_heads) * head_dim, layer_count,
                 model.qkv_bias, module="attention_qkv")
    if model.qk_norm:   # RMSNorm over every query and key head: head_dim weights each
        fields = elementwise_fields(tokens, tokens * (q_heads + kv_heads) * head_dim, FLOPS_PER_ELEMENT["rmsnorm"], 1,
                                    activation, 2 * head_dim, weight)
        kernels.elementwise("Norm_qk", "norm", fields, layer_count, type="Norm")
    if model.position_embedding == "rotary":
        rotary_dim = model.rotary_dim
        rotated = tokens * (q_heads + kv_heads) * rotary_dim
        kernels.add(name="Rotary", type="Elementwise", op="rotary", unit="vector", dtype=kernels.vector_dtype,
                    m=tokens, n=(q_heads + kv_heads) * rotary_dim, count=layer_count,
                    vector_flops=rotated * FLOPS_PER_ELEMENT["rotary"],
                    activation_bytes=(2 * rotated + tokens * rotary_dim) * activation)  # q, k in and out; cos/sin
    kv_elements = tokens * 2 * kv_heads * head_dim   # every new K and V is written (a window limits only the reads)
    kernels.add(name="KVCache_Store", type="Async_KVCache", op="kv_store", unit="memory", dtype=kernels.kv_dtype,
                m=tokens, k=head_dim, n=2 * kv_heads, count=layer_count,
                activation_bytes=kv_elements * activation, kv_bytes=kv_elements * kernels.value_bytes.kv)
    kernels.builder.mark()
    _add_mha_attention_rows(attention, model, layout, kinds)
    kernels.builder.mark()


def _add_mha_attention_rows(attention: AttentionRows, model: ModelConfig, layout: ParallelLayout,
                            kinds: list[LayerKind]) -> None:
    """The attention rows of every part of the pass in every kind of layer."""
    for kind in kinds:
        for part in attention.kernels.forward_pass.attention:
            attention.add_mha(one_row(part.windowed(kind.window)), kind.layers, kind.suffix, layout.q_heads,
                              layout.kv_heads, model.head_dim)


def _add_mlp_block(kernels: PassKernels, model: ModelConfig, scenario: Scenario, layout: ParallelLayout,
                   layer_count) -> None:
    """Norm, the dense MLP of dense layers and the experts of mixture-of-experts layers, [post-MLP norm,]
    residual."""
    _norm(kernels, model, "Norm_ffn", layer_count)
    dense_layers = model.num_layers - model.num_moe_layers
    if dense_layers:
        _add_dense_mlp(kernels, model, layout, dense_layers / layout.pp * kernels.steps)
    if model.num_moe_layers:
        add_moe_block(kernels, model, layout, model.num_moe_layers / layout.pp * kernels.steps,
                      routing_skew=scenario.routing_skew, moe_dispatch=scenario.moe_dispatch)
    if model.norms_per_layer == 4:   # Gemma: RMSNorm of the MLP output before the residual
        _norm(kernels, model, "Norm_post_ffn", layer_count)
    _residual(kernels, model, "Residual_ffn", layer_count)


def _add_dense_mlp(kernels: PassKernels, model: ModelConfig, layout: ParallelLayout, count) -> None:
    """FFN_up, [FFN_gate,] the activation, FFN_down: up/gate split by columns over tp, down by rows."""
    tokens, hidden, inner = kernels.tokens, model.hidden_size, model.intermediate_size // layout.tp
    kernels.gemm("FFN_up", tokens, hidden, inner, count, model.mlp_bias, module="dense_mlp")
    if model.gated_mlp:
        kernels.gemm("FFN_gate", tokens, hidden, inner, count, model.mlp_bias, module="dense_mlp")
    fields = mlp_activation_fields(tokens, inner, model.hidden_act, model.gated_mlp, kernels.value_bytes.activation)
    kernels.elementwise("FFN_act", "activation", fields, count)
    down = kernels.gemm("FFN_down", tokens, inner, hidden, count, model.mlp_bias, module="dense_mlp")
    if layout.tp > 1:
        kernels.hidden_state_collective("AllReduce_ffn", hidden, layout.tp, count, down)


def _add_output(kernels: PassKernels, model: ModelConfig, layout: ParallelLayout) -> None:
    """Once per pass: the final norm over all tokens, logits for the last position of each sequence
    (vocabulary-parallel over tp, gathered to one device for sampling)."""
    steps, hidden, activation = kernels.steps, model.hidden_size, kernels.value_bytes.activation
    if model.has_final_norm:
        _norm(kernels, model, "Norm_final", steps)
    rows, vocab = kernels.forward_pass.logit_rows, layout.vocab
    softcap = FLOPS_PER_ELEMENT["softcap"] if model.final_logit_softcapping is not None else 0.0
    dtypes = kernels.module_gemm("lm_head")     # its input in the GEMM's activation dtype, the logits in the pass's
    head = kernels.add(name="LM_head", type=kernels.weight_matrix_type, op="gemm", unit="matrix",
                       dtype=dtypes.gemm_dtype, m=rows, k=hidden, n=vocab, count=steps, macs=rows * hidden * vocab,
                       vector_flops=softcap * rows * vocab, weight_bytes=hidden * vocab * dtypes.weight_bytes,
                       activation_bytes=rows * hidden * dtypes.activation_bytes + rows * vocab * activation)
    if layout.tp > 1:
        kernels.collective("AllGather_logits", rows, vocab * layout.tp, rows * vocab * layout.tp * activation,
                           layout.tp, steps, head)
