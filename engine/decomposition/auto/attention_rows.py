"""The hand model's attention rows ([KVCache_Read,] Q*gK, Softmax, Q*gK*gV) from the traced attention calls.

Same formulas as engine/decomposition/attention.py (pairs and spans from engine/kernels/attention_window.py): causal (query, key) pairs q*p + q(q+1)/2 for q new
tokens after p cached ones, capped by the sliding window when the layer has one, 5 FLOP per score for the
softmax (3 more with a logit softcap).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from engine.kernels.attention_window import causal_pairs, key_span
from engine.kernels.table import FLOPS_PER_ELEMENT, KernelTableBuilder

from engine.decomposition.auto.rows import Dtypes, display_name
from engine.decomposition.auto.records import AttentionRecord

SOFTCAP_FLOPS_PER_SCORE = 3.0      # divide, tanh, multiply


def attention_variants(trace, records: list[AttentionRecord], base_prefix: str = "model") -> list[tuple]:
    """Distinct attentions (same module pattern, heads, dims, window, causality): (label, record, layers)."""
    found: dict[tuple, list] = {}
    for record in records:
        display = display_name(record.site.module, base_prefix)
        key = (display, record.q_heads, record.kv_heads, record.head_dim_qk, record.head_dim_v, record.window,
               record.causal, record.softcap)
        found.setdefault(key, []).append(record)
    displays = defaultdict(int)
    for key in found:
        displays[key[0]] += 1
    variants = []
    for key, members in found.items():
        display, window = key[0], key[5]
        label = display if displays[display] == 1 else f"{display}[{'window ' + str(window) if window else 'full'}]"
        variants.append((label, members[0], sum(trace.weight(m.site.module) for m in members)))
    return variants


def add_attention_rows(builder: KernelTableBuilder, phase: str, part, label: str, record: AttentionRecord,
                       count, dtypes: Dtypes) -> None:
    """The hand model's attention rows (engine/decomposition/transformer.py `AttentionRows`) for one attention variant."""
    value = dtypes.bytes()
    qh, kvh, dqk, dv = record.q_heads, record.kv_heads, record.head_dim_qk, record.head_dim_v
    group = qh / kvh
    q, seqs = part.alike.new_tokens, part.alike.sequences
    window = record.window
    prior = np.asarray(part.alike.prior, dtype=float)
    if record.causal:
        pairs = causal_pairs(q, prior, window)
    else:
        pairs = q * key_span(q, prior, window)
    context = key_span(q, prior, window)
    window_column = float(window) if window else np.nan       # the kernel table's attention_window
    # bytes per K/V value the kernel reads: the cache's, or the activations' where K/V are rebuilt each step
    kv_width = value.kv if record.kv_from_cache else value.activation
    shape = dict(m=q * group, k=dqk, n=context, batch=seqs * kvh, context=context, attention_window=window_column,
                 kv_value_bytes=kv_width)
    q_bytes = seqs * q * qh * dqk * value.activation
    from_cache = q == 1 or prior[0] > 0
    # K/V the kernel reads as activations: the new tokens' own (straight from the projection), or the
    # whole span when the model computes K/V for the cached tokens each step (e.g. expanded from a latent)
    own_tokens = q if record.kv_from_cache or not from_cache else context
    own_k = seqs * own_tokens * kvh * dqk * value.activation
    own_v = seqs * own_tokens * kvh * dv * value.activation
    name = f"{label}.{part.prefix}"
    if from_cache and record.kv_from_cache:
        builder.add(phase=phase, name=f"{name}KVCache_Read", type="KVCache", op="kv_read", unit="memory",
                    dtype=dtypes.attention, m=context, k=dqk, n=2 * kvh, batch=seqs, context=context,
                    attention_window=window_column, kv_value_bytes=value.kv, count=count,
                    kv_bytes=seqs * context * kvh * (dqk + dv) * value.kv)
        own_k = own_v = 0.0 * context
    scores = seqs * qh * pairs
    softmax_flops = FLOPS_PER_ELEMENT["softmax"] + (SOFTCAP_FLOPS_PER_SCORE if record.softcap else 0.0)
    builder.add(phase=phase, name=f"{name}Q*gK", type=part.matrix_type, op="attention", unit="matrix",
                dtype=dtypes.attention, count=count, macs=scores * dqk, activation_bytes=q_bytes + own_k, **shape)
    builder.add(phase=phase, name=f"{name}Softmax", type="Softmax", op="softmax", unit="vector",
                dtype=dtypes.activation, count=count, vector_flops=scores * softmax_flops, **shape)
    builder.add(phase=phase, name=f"{name}Q*gK*gV", type=part.matrix_type, op="attention", unit="matrix",
                dtype=dtypes.attention, count=count, macs=scores * dv, activation_bytes=q_bytes + own_v,
                **{**shape, "k": dv})

