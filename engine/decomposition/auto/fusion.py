"""Traced ops -> kernels: element-wise ops fused per module call and helper, and the bytes each kernel moves.

One kernel per matmul (GEMM); element-wise ops are fused into one kernel per module call and helper
function (an RMSNorm module's pow/mean/rsqrt/mul is one `Norm` kernel; the rotary helper one kernel;
a residual add in the layer's forward one kernel), as HF's module structure runs them; a bias add in a
Linear module is the GEMM's epilogue. A fused kernel reads what it did not produce (each storage once)
and writes what other kernels read.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from engine.decomposition.auto.records import TracedOp


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

