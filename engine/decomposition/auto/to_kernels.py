"""A traced forward pass -> the kernel table (engine/kernels/table.py columns), like the hand decomposition.

Pure numpy; reads the plain records a trace produces (engine/decomposition/auto/records.py; it never
imports torch):
fusion.py groups the ops into kernels and counts their bytes, rows.py makes their rows,
attention_rows.py the attention rows; this module folds them into one forward pass.

Conventions (docs/auto.md explains each):
- One kernel per matmul (GEMM); element-wise ops are fused into one kernel per module call and helper
  function (an RMSNorm module's pow/mean/rsqrt/mul is one `Norm` kernel; the rotary helper one kernel;
  a residual add in the layer's forward one kernel), as HF's module structure runs them. A fused kernel
  reads what it did not produce (each storage once) and writes what other kernels read.
- A bias add in a Linear module is the GEMM's epilogue (same kernel, its FLOPs as vector FLOPs).
- Attention is one record per call, turned into the hand model's rows ([KVCache_Read,] Q*gK, Softmax,
  Q*gK*gV) with the same formulas: causal (query, key) pairs q*p + q(q+1)/2 for q new tokens after p
  cached ones, capped by the sliding window when the layer has one, 5 FLOP per score for the softmax.
- KV-cache stores come from `Cache.update`: the new tokens' K and V, read as activations and written
  in the KV dtype.
- Bytes: element counts times the scenario's dtype (weights, activations, KV each their own);
  integer and boolean tensors (token ids, masks) at their own size.
- Identical kernels of different layers fold into one row, `count` = number of layers (x steps).
"""

from __future__ import annotations

import numpy as np

from engine.kernels.table import KernelTableBuilder

from engine.decomposition.auto.attention_rows import add_attention_rows, attention_variants
from engine.decomposition.auto.rows import ATTENTION_PLACE, Dtypes, Row, kernel_rows

_ROW_NUMBERS = ("m", "k", "n", "batch", "macs", "vector_flops", "weight_bytes", "activation_bytes", "kv_bytes")


def fold(rows: list[tuple[Row, float]]) -> list[tuple[Row, float]]:
    """Identical rows (same name, shape, work and bytes) become one row; their occurrences add up."""
    counts: dict[Row, float] = {}
    for row, occurrences in rows:
        counts[row] = counts.get(row, 0.0) + occurrences
    return list(counts.items())


def add_pass(builder: KernelTableBuilder, trace, forward_pass, dtypes: Dtypes, base_prefix: str = "model",
             next_trace=None) -> None:
    """Every kernel of one forward pass (engine/decomposition/passes.py ForwardPass, from phases.py).

    next_trace: for a decode pass, the same step traced with one more cached token. Rows that differ
    between the two traces do work that grows with the cached context (besides attention, whose rows are
    computed per step anyway: e.g. a latent KV cache expanded every step); their values are extended
    linearly to each step's context (one value per step, like the attention rows)."""
    matrix_type = "Va_Mw" if all(p.alike.new_tokens == 1 for p in forward_pass.attention) else "Ma_Mw"
    rows, records = kernel_rows(trace, dtypes, matrix_type, base_prefix)
    folded = fold(rows)
    growth = _growth(folded, trace, next_trace, forward_pass, dtypes, matrix_type, base_prefix)
    steps = forward_pass.steps
    variants = attention_variants(trace, records, base_prefix)
    for position, (row, occurrences) in enumerate(folded):
        if row is ATTENTION_PLACE:
            _add_variants(builder, forward_pass, variants, dtypes)
            continue
        numbers = {key: getattr(row, key) for key in _ROW_NUMBERS}
        count = occurrences * steps
        if growth is not None and growth[position]:
            numbers = {key: value + growth[position].get(key, 0.0) for key, value in numbers.items()}
            if steps > 1:
                count = occurrences       # one row per step
        builder.add(phase=forward_pass.phase, name=row.name, type=row.type, op=row.op, unit=row.unit,
                    dtype=row.dtype, count=count, **numbers)


def _growth(folded, trace, next_trace, forward_pass, dtypes, matrix_type, base_prefix):
    """Per folded row: {column: extra value per step} for rows that grow with the context, else {}."""
    if next_trace is None or len(forward_pass.attention) != 1:
        return None
    following = fold(kernel_rows(next_trace, dtypes, matrix_type, base_prefix)[0])
    if len(following) != len(folded) or any((a.name, a.type, a.op, n) != (b.name, b.type, b.op, m)
                                            for (a, n), (b, m) in zip(folded, following, strict=True)):
        raise ValueError("the decode step traced with one more cached token ran different kernels")
    extra_tokens = np.asarray(forward_pass.attention[0].alike.prior, dtype=float) - trace.prior_tokens
    per_token = next_trace.prior_tokens - trace.prior_tokens
    result = []
    for (row, _), (other, _) in zip(folded, following, strict=True):
        slope = {key: (getattr(other, key) - getattr(row, key)) / per_token for key in _ROW_NUMBERS
                 if getattr(other, key) != getattr(row, key)}
        result.append({key: value * extra_tokens for key, value in slope.items()})
    return result


def _add_variants(builder, forward_pass, variants, dtypes) -> None:
    for label, record, layers in variants:
        for part in forward_pass.attention:
            # one row per step when the context grows, else one row counted `steps` times
            count = layers if len(part.alike.prior) > 1 else layers * forward_pass.steps
            add_attention_rows(builder, forward_pass.phase, part, label, record, count, dtypes)
