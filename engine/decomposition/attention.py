"""The attention rows of the kernel table: `[KVCache_Read,] Q*gK, Softmax, Q*gK*gV` per part of a pass and
kind of layer (full attention and sliding-window layers, engine/kernels/attention_window.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.decomposition.pass_kernels import PassKernels
from engine.decomposition.passes import AttentionPart
from engine.kernels.table import FLOPS_PER_ELEMENT, SLIDING_SUFFIX
from engine.models.config import ModelConfig
from engine.workload.parallel import ParallelLayout


@dataclass(frozen=True)
class LayerKind:
    """Layers that attend alike: `window` keys at most (None: full attention), kernel names ending in
    `suffix`, `layers` of them on one device."""

    window: int | None
    suffix: str
    layers: float


def attention_layer_kinds(model: ModelConfig, layout: ParallelLayout) -> list[LayerKind]:
    """The model's full and sliding-window layers on one device (a kind without layers is left out)."""
    sliding = model.num_sliding_layers
    full = model.num_layers - sliding
    kinds = []
    if full:
        kinds.append(LayerKind(None, "", full / layout.pp))
    if sliding:
        kinds.append(LayerKind(int(model.sliding_window), SLIDING_SUFFIX, sliding / layout.pp))
    return kinds


@dataclass(frozen=True)
class AttentionRows:
    """Adds the rows of one attention (per part of a pass and layer kind) to the kernel table.

    One attention is `[KVCache_Read,] Q*gK, Softmax, Q*gK*gV` (fused into one kernel by the realistic
    method): scores over `qk_dim` channels, values over `v_dim`, `q_heads` query heads sharing
    `kv_heads` K/V heads. Attention sinks add one score column per query head and token (its softmax
    work and the sink logits, read as weights); logit soft-capping adds cap * tanh(x / cap) per score.
    """

    kernels: PassKernels
    sinks: bool = False
    softcap: bool = False

    def count(self, part: AttentionPart, layers: float):
        count = layers if part.per_row_count else layers * self.kernels.steps
        if part.sequences.__class__ is float:                     # a OneRowPart
            return count if part.sequences > 0 else 0.0
        return np.where(part.sequences > 0, count, 0.0)          # a chunked iteration without this part

    def add_mha(self, part: AttentionPart, layers: float, suffix: str, q_heads: int, kv_heads: int,
                head_dim: int) -> None:
        """MHA/GQA/MQA: K/V heads of `head_dim` cached per token; new K/V come from the projection."""
        if (part.cache_tokens > 0 if part.cache_tokens.__class__ is float else np.any(part.cache_tokens > 0)):
            self.kv_read(part, layers, suffix, kv_heads * 2 * head_dim, head_dim, 2 * kv_heads)
        activation = self.kernels.value_bytes.activation
        q_bytes = part.query_tokens * q_heads * head_dim * activation
        own_kv_bytes = part.fresh_tokens * kv_heads * head_dim * activation      # K (or V) of new tokens
        self.core(part, layers, suffix, q_heads, kv_heads, head_dim, head_dim, q_bytes + own_kv_bytes,
                  q_bytes + own_kv_bytes)

    def kv_read(self, part: AttentionPart, layers: float, suffix: str, values_per_token, k, n) -> None:
        """The cached K/V (or latent) of the part's context streamed from the KV cache."""
        sequences, context = _at_least_one(part.sequences), _at_least_one(part.context)
        self.kernels.add(name=f"{part.prefix}KVCache_Read{suffix}", type="KVCache", op="kv_read", unit="memory",
                         dtype=self.kernels.attention_dtype, m=context, k=k, n=n, batch=sequences, context=context,
                         attention_window=_window_value(part), kv_value_bytes=self.kernels.value_bytes.kv,
                         count=self.count(part, layers),
                         kv_bytes=part.cache_tokens * values_per_token * self.kernels.value_bytes.kv)

    def core(self, part: AttentionPart, layers: float, suffix: str, q_heads, kv_heads, qk_dim, v_dim,
             score_activation_bytes, value_activation_bytes, kv_value_bytes=None) -> None:
        """Q*gK (m = query tokens per sequence x group, k = qk_dim, n = context, batch = sequences x
        kv_heads), Softmax, Q*gK*gV (k = v_dim). kv_value_bytes: bytes per K/V value the kernel reads (the kernel
        table's column; None: the KV cache's, as a kernel reading the cache, or the new K/V in its format, does)."""
        sequences, context = _at_least_one(part.sequences), _at_least_one(part.context)
        group = q_heads / kv_heads
        count = self.count(part, layers)
        shape = dict(m=part.query_tokens / sequences * group, k=qk_dim, n=context, batch=sequences * kv_heads,
                     context=context, attention_window=_window_value(part),
                     kv_value_bytes=self.kernels.value_bytes.kv if kv_value_bytes is None else kv_value_bytes)
        scores = q_heads * part.pairs
        per_score = FLOPS_PER_ELEMENT["softmax"] + (FLOPS_PER_ELEMENT["softcap"] if self.softcap else 0.0)
        softmax_flops = scores * per_score
        sink_bytes = 0.0
        if self.sinks:      # one learned logit per head joins every query's softmax denominator
            softmax_flops = softmax_flops + q_heads * part.query_tokens * FLOPS_PER_ELEMENT["softmax"]
            sink_bytes = q_heads * self.kernels.value_bytes.weight
        kernels, name = self.kernels, part.prefix
        kernels.add(name=f"{name}Q*gK{suffix}", type=part.matrix_type, op="attention", unit="matrix",
                    dtype=kernels.attention_dtype, count=count, macs=scores * qk_dim,
                    activation_bytes=score_activation_bytes, **shape)
        kernels.add(name=f"{name}Softmax{suffix}", type="Softmax", op="softmax", unit="vector",
                    dtype=kernels.vector_dtype, count=count, vector_flops=softmax_flops, weight_bytes=sink_bytes,
                    **shape)
        kernels.add(name=f"{name}Q*gK*gV{suffix}", type=part.matrix_type, op="attention", unit="matrix",
                    dtype=kernels.attention_dtype, count=count, macs=scores * v_dim,
                    activation_bytes=value_activation_bytes, **{**shape, "k": v_dim})


@dataclass(frozen=True, slots=True)
class OneRowPart:
    """An AttentionPart of one row with its totals as Python floats (a prefill or one decode step): AttentionRows does
    the same arithmetic on them as on one-value arrays, without numpy's cost per operation."""

    prefix: str
    matrix_type: str
    sequences: float
    query_tokens: float
    context: float
    pairs: float
    cache_tokens: float
    fresh_tokens: float
    per_row_count: bool
    window: int | None


ONE_ROW_FIELDS = ("sequences", "query_tokens", "context", "pairs", "cache_tokens", "fresh_tokens")


def one_row(part: AttentionPart) -> AttentionPart | OneRowPart:
    """`part` as a OneRowPart when each of its totals is one float value, else `part`."""
    if part.floats is not None:      # built from these floats (AttentionPart._one_row): no arrays to read back
        return OneRowPart(part.prefix, part.matrix_type, *part.floats, per_row_count=part.per_row_count,
                          window=part.window)
    totals = [getattr(part, name) for name in ONE_ROW_FIELDS]
    if not all(isinstance(values, np.ndarray) and values.shape == (1,) and values.dtype == np.float64
               for values in totals):
        return part
    return OneRowPart(part.prefix, part.matrix_type, *(values.item() for values in totals),
                      per_row_count=part.per_row_count, window=part.window)


def _at_least_one(values):
    """np.maximum(values, 1.0), in Python for a float."""
    return max(values, 1.0) if values.__class__ is float else np.maximum(values, 1.0)


def _window_value(part: AttentionPart) -> float:
    return float(part.window) if part.window is not None else np.nan
