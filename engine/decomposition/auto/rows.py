"""The row of each traced kernel (GEMMs, lookups, fused element-wise ops, KV stores, expert GEMMs), unfolded.

Names come from the module path (`display_name`), types and ops from what the kernel ran (`_classify`);
bytes are element counts times the scenario's dtype (weights, activations, KV each their own), integer and
boolean tensors at their own size. Attention is left to engine/decomposition/auto/attention_rows.py:
`kernel_rows` marks where its rows go (`ATTENTION_PLACE`) and hands back the attention records.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from engine.decomposition.pass_kernels import BytesPerValue
from engine.hardware.dtypes import bytes_per_value, compute_dtype

from engine.decomposition.auto.fusion import Kernel, Traffic, fuse, traffic
from engine.decomposition.auto.records import AttentionRecord, ExpertsRecord, KVStoreRecord, TracedOp, layer_of

ACTIVATION_CLASSES = ("act", "silu", "gelu", "relu", "tanh", "sigmoid", "swish", "mish", "glu")


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

    def bytes(self) -> BytesPerValue:
        return BytesPerValue(activation=bytes_per_value(self.activation), weight=bytes_per_value(self.weight),
                             kv=bytes_per_value(self.kv))


def kernel_rows(trace, dtypes: Dtypes, matrix_type: str, base_prefix: str = "model") -> tuple[list, list]:
    """Rows for every traced kernel except attention; plus the attention records (for the passes).

    Returns ([(row, occurrences in the full model)], attention_records) in execution order, not folded:
    a kernel traced in a representative layer occurs once per layer it stands for."""
    value = dtypes.bytes()
    items, _ = fuse(trace.events)
    moved = traffic(items)
    rows: list[Row] = []
    attention: list[AttentionRecord] = []
    unique = _UniqueNames()
    for index, item in enumerate(items):
        if isinstance(item, AttentionRecord):
            if not attention:   # the attention rows go where the first attention ran
                rows.append((ATTENTION_PLACE, 0.0))
            attention.append(item)
            continue
        weight = trace.weight(item.site.module)
        display = display_name(item.site.module, base_prefix)
        if isinstance(item, KVStoreRecord):
            row = _kv_store_row(item, display, dtypes, value)
        elif isinstance(item, ExpertsRecord):
            row = _experts_row(item, display, dtypes, value, matrix_type)
        else:
            row = _kernel_row(item, moved[index], unique(item.site, _base_name(item, display)), trace.tokens,
                              dtypes, value, matrix_type)
        rows.append((row, weight))
    return rows, attention


class _UniqueNames:
    """A kernel's name, with `#2`, `#3`, ... when one module call runs several kernels of that name."""

    def __init__(self):
        self.seen: dict[tuple, int] = defaultdict(int)

    def __call__(self, site, base: str) -> str:
        key = (site.call, base)
        self.seen[key] += 1
        return base if self.seen[key] == 1 else f"{base}#{self.seen[key]}"


def _base_name(kernel: Kernel, display: str) -> str:
    """The module's name, and in a module that is not a leaf the helper function (or the ops) it ran."""
    if kernel.site.leaf or kernel.kind == "gather":
        return display
    if kernel.kind == "gemm":
        return f"{display}:{kernel.site.helper or kernel.lead.aten}"
    return f"{display}:{kernel.site.helper or _op_summary(kernel)}"


def _kv_store_row(item: KVStoreRecord, display: str, dtypes: Dtypes, value: BytesPerValue) -> Row:
    elements = item.key_elements + item.value_elements
    return Row(f"{display}.KVCache_Store", "Async_KVCache", "kv_store", "memory", dtypes.kv,
               m=item.tokens, k=item.head_dim, n=2 * item.kv_heads,
               activation_bytes=elements * value.activation, kv_bytes=elements * value.kv)


def _kernel_row(kernel: Kernel, moved: Traffic, name: str, tokens, dtypes: Dtypes, value: BytesPerValue,
                matrix_type: str) -> Row:
    """The row of a fused kernel: a GEMM (and its epilogue), a table lookup or a run of element-wise ops."""
    work = dict(vector_flops=float(sum(op.vector_flops for op in kernel.ops)),
                weight_bytes=moved.weight_elements * value.weight,
                activation_bytes=moved.activation_elements * value.activation + moved.other_bytes,
                kv_bytes=moved.kv_elements * value.kv)
    if kernel.kind == "gemm":
        return _gemm_row(kernel, name, dtypes, matrix_type, work)
    if kernel.kind == "gather":
        looked_up = _rows_of(kernel.lead)
        return Row(name, "Gather", "embedding", "memory", dtypes.activation,
                   m=looked_up, n=kernel.lead.outputs[0].elements / max(1, looked_up), **work)
    kind, op = _classify(kernel)
    out_elements = kernel.ops[-1].outputs[0].elements if kernel.ops[-1].outputs else 0
    return Row(name, kind, op, "vector", dtypes.activation, m=tokens, n=out_elements / max(tokens, 1), **work)


def _gemm_row(kernel: Kernel, name: str, dtypes: Dtypes, matrix_type: str, work: dict) -> Row:
    g = kernel.lead.gemm
    has_weight = g.weight_elements > 0
    has_kv = any(o.kind == "kv" for o in kernel.lead.inputs)
    if has_weight:     # (it may also read the KV cache, e.g. a latent expanded every step)
        kind, op, dtype = matrix_type, "gemm", dtypes.gemm
    elif has_kv:       # attention written as plain matmuls against the cache
        kind, op, dtype = matrix_type.replace("Mw", "Mqa"), "attention", dtypes.attention
    else:
        kind, op, dtype = "Ma_Ma" if g.m > 1 else "Va_Ma", "gemm", dtypes.activation
    return Row(name, kind, op, "matrix", dtype, m=g.m, k=g.k, n=g.n, batch=g.batch,
               macs=float(g.batch) * g.m * g.k * g.n, **work)


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

