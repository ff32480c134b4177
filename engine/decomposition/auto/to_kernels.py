"""A traced forward pass -> the kernel table (engine/kernels/table.py columns), like the hand decomposition.

Pure numpy; reads the plain records of engine/decomposition/auto/trace.py (it never imports torch).

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

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from engine.hardware.dtypes import bytes_per_value, compute_dtype
from engine.kernels.attention_window import causal_pairs, key_span
from engine.kernels.table import FLOPS_PER_ELEMENT, KernelTableBuilder

from engine.decomposition.auto.records import (AttentionRecord, ExpertsRecord, KVStoreRecord, TracedOp, layer_of)

ACTIVATION_CLASSES = ("act", "silu", "gelu", "relu", "tanh", "sigmoid", "swish", "mish", "glu")
SOFTCAP_FLOPS_PER_SCORE = 3.0      # divide, tanh, multiply


@dataclass
class Kernel:
    """Events fused into one kernel (a GEMM and its epilogue, or a run of element-wise ops)."""

    kind: str                      # gemm | gather | elementwise
    site: object
    ops: list = field(default_factory=list)

    @property
    def lead(self) -> TracedOp:
        return self.ops[0]


def fuse(events: list) -> tuple[list, list]:
    """Split the trace into kernels (TracedOp groups) and the other records, in execution order.

    Returns (items, kernels): items mixes Kernel objects and Attention/KVStore/Experts records."""
    items: list = []
    current: Kernel | None = None
    for event in events:
        if isinstance(event, TracedOp):
            key = (event.site.call, event.site.helper)
            if event.kind == "elementwise" and current is not None and (current.site.call, current.site.helper) == key \
                    and (current.kind == "elementwise" or (current.kind == "gemm" and event.site.leaf)):
                current.ops.append(event)
                continue
            current = Kernel(event.kind, event.site, [event])
            items.append(current)
        else:
            current = None
            items.append(event)
    return items, [item for item in items if isinstance(item, Kernel)]


@dataclass(frozen=True)
class Traffic:
    weight_elements: float
    activation_elements: float     # floating tensors (scaled to the activation dtype)
    kv_elements: float
    other_bytes: float             # integer / boolean tensors at their own size


def traffic(items: list) -> dict[int, Traffic]:
    """Bytes each kernel moves: external storages read once each, outputs written when another kernel reads
    them (outputs nobody reads, like LayerNorm's saved statistics, are not written; a kernel whose outputs
    nobody reads, like the LM head, writes its main output)."""
    owner: dict[int, int] = {}                 # storage serial -> kernel index that produced it
    consumers: dict[int, set] = defaultdict(set)
    for index, item in enumerate(items):
        for operand in _inputs_of(item):
            consumers[operand.serial].add(index)
        if isinstance(item, Kernel):
            for op in item.ops:
                for output in op.outputs:
                    owner[output.serial] = index
    result = {}
    for index, item in enumerate(items):
        if not isinstance(item, Kernel):
            continue
        reads: dict[int, object] = {}
        for operand in _inputs_of(item):
            if owner.get(operand.serial) == index:
                continue
            if operand.serial not in reads or operand.elements > reads[operand.serial].elements:
                reads[operand.serial] = operand
        weight = activation = kv = other = 0.0
        for operand in reads.values():
            if operand.kind == "weight":
                weight += operand.elements
            elif not operand.floating:
                other += operand.elements * operand.itemsize
            elif operand.kind == "kv":
                kv += operand.elements
            else:
                activation += operand.elements
        if item.kind == "gather":   # a lookup reads only the rows it returns, not the whole table
            weight = float(sum(o.elements for o in item.lead.outputs))
        written = [output for op in item.ops for output in op.outputs
                   if consumers.get(output.serial, set()) - {index}]
        if not written:   # nothing else reads it: the forward's result (the logits), its main output only
            written = [item.ops[-1].outputs[0]] if item.ops[-1].outputs else []
        for output in written:
            if output.floating:
                activation += output.elements
            else:
                other += output.elements * output.itemsize
        result[index] = Traffic(weight, activation, kv, other)
    return result


def _inputs_of(item) -> tuple:
    if isinstance(item, Kernel):
        return tuple(operand for op in item.ops for operand in op.inputs)
    return getattr(item, "inputs", ())


# ------------------------------------------------------------------------------------------ naming

def display_name(module_path: str, base_prefix: str = "model") -> str:
    """A readable kernel name from a module path: the layer prefix and the base model prefix go.

    model.layers.3.self_attn.q_proj -> self_attn.q_proj; model.layers.3 -> layer; model.norm -> norm;
    transformer.h.0.mlp.c_fc -> mlp.c_fc; lm_head -> lm_head; "" (the top model) -> model."""
    layer, pattern = layer_of(module_path)
    if layer is not None:
        before, _, after = pattern.partition("*")
        after = after.lstrip(".")
        return after if after else "layer"
    if not module_path:
        return "model"
    parts = module_path.split(".")
    if len(parts) > 1 and parts[0] in (base_prefix, "model", "transformer"):
        parts = parts[1:]
    return ".".join(parts)


def _op_summary(kernel: Kernel) -> str:
    names = [op.aten.lstrip("_") for op in kernel.ops if op.aten not in ("_to_copy", "clone", "copy")]
    unique = list(dict.fromkeys(names or [kernel.lead.aten.lstrip("_")]))
    return "+".join(unique[:3]) + ("+..." if len(unique) > 3 else "")


def _classify(kernel: Kernel) -> tuple[str, str]:
    """(type, op) of a fused element-wise kernel."""
    site = kernel.site
    atens = {op.aten for op in kernel.ops}
    module_class = site.module_class.lower()
    if "norm" in module_class or atens & {"native_layer_norm", "_fused_rms_norm", "native_group_norm"}:
        return "Norm", "norm"
    if atens & {"_softmax", "_safe_softmax", "_log_softmax"}:
        return "Softmax", "softmax"
    helper = (site.helper or "").lower()
    if "rotary" in helper or "rope" in helper:
        return "Elementwise", "rotary"
    last = site.module.rsplit(".", 1)[-1].lower()
    if site.leaf and (any(word in module_class for word in ACTIVATION_CLASSES) or last in ("act", "act_fn",
                                                                                           "activation_fn")):
        return "Elementwise", "activation"
    if not site.leaf and atens <= {"add", "_to_copy"} and "add" in atens:
        return "Elementwise", "residual"
    return "Elementwise", "elementwise"


# ------------------------------------------------------------------------------------------ rows

@dataclass(frozen=True)
class Row:
    """One kernel's row before folding (values per occurrence)."""

    name: str
    type: str
    op: str
    unit: str
    dtype: str
    m: float = 0.0
    k: float = 0.0
    n: float = 0.0
    batch: float = 1.0
    macs: float = 0.0
    vector_flops: float = 0.0
    weight_bytes: float = 0.0
    activation_bytes: float = 0.0
    kv_bytes: float = 0.0


ATTENTION_PLACE = Row("(attention)", "", "", "", "")   # marks where the attention rows go


@dataclass(frozen=True)
class Bytes:
    weight: float
    activation: float
    kv: float


@dataclass(frozen=True)
class Dtypes:
    weight: str
    activation: str
    kv: str

    @property
    def gemm(self) -> str:
        return compute_dtype(self.weight, self.activation)

    @property
    def attention(self) -> str:
        return compute_dtype(self.activation, self.kv)

    def bytes(self) -> Bytes:
        return Bytes(*(bytes_per_value(d) for d in (self.weight, self.activation, self.kv)))


def kernel_rows(trace, dtypes: Dtypes, matrix_type: str, base_prefix: str = "model") -> tuple[list, list]:
    """Rows for every traced kernel except attention; plus the attention records (for the passes).

    Returns ([(row, occurrences in the full model)], attention_records) in execution order, not folded:
    a kernel traced in a representative layer occurs once per layer it stands for."""
    value = dtypes.bytes()
    items, _ = fuse(trace.events)
    moved = traffic(items)
    tokens = trace.tokens
    rows: list[Row] = []
    attention: list[AttentionRecord] = []
    seen_names: dict[tuple, int] = defaultdict(int)

    def unique(site, base: str) -> str:
        key = (site.call, base)
        seen_names[key] += 1
        return base if seen_names[key] == 1 else f"{base}#{seen_names[key]}"

    for index, item in enumerate(items):
        if isinstance(item, AttentionRecord):
            if not attention:   # the attention rows go where the first attention ran
                rows.append((ATTENTION_PLACE, 0.0))
            attention.append(item)
            continue
        weight = trace.weight(item.site.module)
        display = display_name(item.site.module, base_prefix)
        if isinstance(item, KVStoreRecord):
            elements = item.key_elements + item.value_elements
            rows.append((Row(f"{display}.KVCache_Store", "Async_KVCache", "kv_store", "memory", dtypes.kv,
                            m=item.tokens, k=item.head_dim, n=2 * item.kv_heads,
                            activation_bytes=elements * value.activation, kv_bytes=elements * value.kv), weight))
            continue
        if isinstance(item, ExpertsRecord):
            rows.append((_experts_row(item, display, dtypes, value, matrix_type), weight))
            continue
        bytes_ = moved[index]
        weight_bytes = bytes_.weight_elements * value.weight
        activation_bytes = bytes_.activation_elements * value.activation + bytes_.other_bytes
        kv_bytes = bytes_.kv_elements * value.kv
        vector_flops = float(sum(op.vector_flops for op in item.ops))
        out_elements = item.ops[-1].outputs[0].elements if item.ops[-1].outputs else 0
        if item.kind == "gemm":
            g = item.lead.gemm
            has_weight = g.weight_elements > 0
            has_kv = any(o.kind == "kv" for o in item.lead.inputs)
            base = display if item.site.leaf else f"{display}:{item.site.helper or item.lead.aten}"
            if has_weight:     # (it may also read the KV cache, e.g. a latent expanded every step)
                kind, op, dtype = matrix_type, "gemm", dtypes.gemm
            elif has_kv:       # attention written as plain matmuls against the cache
                kind, op, dtype = matrix_type.replace("Mw", "Mqa"), "attention", dtypes.attention
            else:
                kind, op, dtype = "Ma_Ma" if g.m > 1 else "Va_Ma", "gemm", dtypes.activation
            rows.append((Row(unique(item.site, base), kind, op, "matrix", dtype, m=g.m, k=g.k, n=g.n,
                                 batch=g.batch, macs=float(g.batch) * g.m * g.k * g.n, vector_flops=vector_flops,
                                 weight_bytes=weight_bytes, activation_bytes=activation_bytes, kv_bytes=kv_bytes),
                             weight))
        elif item.kind == "gather":
            width = item.lead.outputs[0].elements / max(1, _rows_of(item.lead))
            rows.append((Row(unique(item.site, display), "Gather", "embedding", "memory", dtypes.activation,
                                 m=_rows_of(item.lead), n=width, vector_flops=vector_flops, weight_bytes=weight_bytes,
                                 activation_bytes=activation_bytes, kv_bytes=kv_bytes), weight))
        else:
            kind, op = _classify(item)
            base = display if item.site.leaf else f"{display}:{item.site.helper or _op_summary(item)}"
            rows.append((Row(unique(item.site, base), kind, op, "vector", dtypes.activation,
                                 m=tokens, n=out_elements / max(tokens, 1), vector_flops=vector_flops,
                                 weight_bytes=weight_bytes, activation_bytes=activation_bytes, kv_bytes=kv_bytes),
                             weight))
    return rows, attention


def _rows_of(op: TracedOp) -> int:
    """Rows looked up by a gather: the index tensor's element count (its non-weight integer input)."""
    indices = [o for o in op.inputs if o.kind != "weight" and not o.floating]
    return int(indices[0].elements) if indices else int(op.outputs[0].elements)


def expected_active_experts(experts: int, top_k: int, tokens: float) -> float:
    """Distinct experts hit when `tokens` tokens each pick `top_k` of `experts` uniformly at random."""
    if experts <= 0:
        return 0.0
    return experts * (1.0 - (1.0 - top_k / experts) ** max(tokens, 0.0))


def _experts_row(item: ExpertsRecord, display, dtypes, value, matrix_type) -> Row:
    active = expected_active_experts(item.experts, item.top_k, item.tokens)
    rows = float(item.rows)
    per_expert = item.weight_elements_per_expert + item.bias_elements_per_expert
    return Row(f"{display}.{item.name}", matrix_type, "gemm", "matrix", dtypes.gemm,
               m=rows / active, k=item.k, n=item.n, batch=active, macs=rows * item.k * item.n,
               vector_flops=rows * item.n if item.bias_elements_per_expert else 0.0,
               weight_bytes=active * per_expert * value.weight,
               activation_bytes=(rows * item.k + rows * item.n) * value.activation)


# ------------------------------------------------------------------------------------------ attention

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
    """The hand model's attention rows (engine/decomposition/attention.py `AttentionRows`) for one variant."""
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
    shape = dict(m=q * group, k=dqk, n=context, batch=seqs * kvh, context=context, attention_window=window_column)
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
                    attention_window=window_column, count=count,
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


# ------------------------------------------------------------------------------------------ a pass

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
