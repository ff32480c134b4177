"""One kernel's shape, FLOPs and bytes (shared by engine/decomposition/transformer.py, decompose_moe.py and calibration.py)."""

from __future__ import annotations

from engine.kernels.table import FLOPS_PER_ELEMENT, activation_flops


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
