"""What each aten op is to the tracer: a view, a matmul, a table lookup, and the FLOPs of the rest.

Plain tables keyed by the op's name (`op_name`: `aten.add_.Tensor` -> `add`); the tracer
(engine/decomposition/auto/tracer.py) reads them to record each op's kind and vector FLOPs.
"""

from __future__ import annotations

import torch


# ops that return a view of (or alias) their input: no work, same storage
ALIAS_OPS = frozenset({"_unsafe_view", "alias", "detach", "lift_fresh", "_reshape_alias", "view_as_real",
                       "view_as_complex", "_conj", "_neg_view"})
GEMM_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm", "addbmm", "linear", "mv", "addmv", "dot", "vdot",
                      "_grouped_mm", "convolution", "_convolution", "matmul"})
GATHER_OPS = frozenset({"embedding", "index_select", "index", "gather", "take"})
# FLOP per output element of point-wise ops (everything else point-wise: 1). Elementary functions count
# one FLOP, so composites add up: silu = exp, add, divide, multiply = 4 (engine.kernels.table: silu 4, gelu 8).
POINTWISE_FLOPS = {
    "silu": 4.0, "gelu": 8.0, "sigmoid": 3.0, "softplus": 3.0, "mish": 6.0, "hardswish": 3.0,
    "elu": 3.0, "selu": 4.0, "logsigmoid": 4.0, "glu": 4.0, "relu": 1.0,
    "_to_copy": 0.0, "clone": 0.0, "copy": 0.0, "lift": 0.0, "fill": 0.0, "zero": 0.0,
}
# FLOP per element of fused row-wise ops (engine.kernels.table.FLOPS_PER_ELEMENT conventions)
ROWWISE_FLOPS = {"native_layer_norm": 7.0, "layer_norm": 7.0, "_fused_rms_norm": 4.0, "rms_norm": 4.0,
                 "native_group_norm": 7.0, "_softmax": 5.0, "_log_softmax": 5.0, "_safe_softmax": 5.0,
                 "softmax": 5.0, "log_softmax": 5.0}
# data movement: bytes, no FLOPs
COPY_OPS = frozenset({"cat", "stack", "clone", "copy", "_to_copy", "contiguous", "repeat", "repeat_interleave",
                      "constant_pad_nd", "flip", "roll", "tril", "triu", "index_put", "scatter", "index_copy",
                      "index_add", "scatter_add", "masked_scatter", "fill", "zero", "zeros_like", "ones_like",
                      "empty_like", "full_like", "new_zeros", "new_empty", "new_ones", "new_full", "_index_put_impl",
                      "slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter",
                      "split_with_sizes_copy", "expand_copy", "view_copy", "unsqueeze_copy", "permute_copy",
                      "t_copy", "transpose_copy"})
COUNTED_PER_INPUT = frozenset({"topk", "sort", "argsort", "cumsum", "cumprod", "logcumsumexp", "kthvalue",
                               "max", "min", "sum", "mean", "amax", "amin", "argmax", "argmin", "prod", "var",
                               "std", "var_mean", "std_mean", "norm", "linalg_vector_norm", "logsumexp", "all",
                               "any", "histc", "bincount", "count_nonzero"})


def op_name(func) -> str:
    name = func.overloadpacket.__name__
    return name[:-1] if name.endswith("_") and not name.startswith("_") else name


def is_view(func) -> bool:
    try:
        return bool(func.is_view)
    except AttributeError:  # pragma: no cover - older torch
        return False


def tensors_of(values) -> list:
    """The tensors among op arguments (one level of lists, as aten.cat takes them)."""
    found = []
    for value in values:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(v for v in value if isinstance(v, torch.Tensor))
    return found

