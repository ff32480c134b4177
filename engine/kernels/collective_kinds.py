"""Which collective a kernel-table row is, and its shape: bytes each device sends per message byte and the
sequential link steps, by kind, group size and algorithm (the table in engine/estimators/collectives.py's
docstring). The decomposition sizes collective rows with these; the estimators time them."""

from __future__ import annotations

import numpy as np

KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")
KIND_BY_PREFIX = {"AllReduce_": "all_reduce", "AllGather_": "all_gather", "ReduceScatter_": "reduce_scatter",
                  "AllToAll_": "all_to_all", "SendRecv_": "send_recv"}


def kind_of(name: str) -> str:
    """The collective a kernel-table row is, from its name (AllReduce_attn -> all_reduce)."""
    for prefix, kind in KIND_BY_PREFIX.items():
        if name.startswith(prefix):
            return kind
    raise ValueError(f"{name!r} is not a collective name (expected one of {', '.join(KIND_BY_PREFIX)}...)")


def bandwidth_factor(kind: str, n, algorithm: str = "ring"):
    """Bytes each device sends over its links per byte of message M (table above); n may be an array."""
    n = np.asarray(n, dtype=float)
    if kind == "send_recv":
        factor = np.ones_like(n)
    elif kind == "all_reduce":
        factor = np.full_like(n, 2.0) if algorithm == "tree" else 2.0 * (n - 1) / np.maximum(n, 1)
    else:
        factor = (n - 1) / np.maximum(n, 1)
    factor = np.where((n <= 1) & (kind != "send_recv"), 0.0, factor)
    return float(factor) if factor.ndim == 0 else factor


def hops(kind: str, n, algorithm: str = "ring"):
    """Sequential link steps (each pays one hop latency); n may be an array."""
    n = np.asarray(n, dtype=float)
    depth = np.ceil(np.log2(np.maximum(n, 1)))
    if kind == "send_recv":
        steps = np.ones_like(n)
    elif kind == "all_reduce":
        steps = 2 * depth if algorithm == "tree" else 2 * (n - 1)
    elif kind in ("all_gather", "reduce_scatter"):
        steps = depth if algorithm == "tree" else n - 1
    else:
        steps = np.log2(np.maximum(n, 1))          # all-to-all: pairwise exchanges overlap
    steps = np.where((n <= 1) & (kind != "send_recv"), 0.0, steps)
    return float(steps) if steps.ndim == 0 else steps
