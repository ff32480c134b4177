"""The tracer: a TorchDispatchMode that records every aten op of one forward pass as plain records.

Module hooks keep a stack of the module calls, so each `TracedOp` knows the module it ran in and the
Python helper function it came from (e.g. `apply_rotary_pos_emb`); each tensor is tagged with what it
holds (weight / activation / KV cache / constant), views share their base's tag. Ops whose inputs are all
weights, buffers or constants are precomputable and not recorded; a lookup in a weight table is. The
attention, experts and cache hooks (engine/decomposition/auto/hooks.py) add their records through `add`.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.weak import WeakIdKeyDictionary

from engine.decomposition.auto.aten_ops import (ALIAS_OPS, COPY_OPS, COUNTED_PER_INPUT, GATHER_OPS, GEMM_OPS,
                                                POINTWISE_FLOPS, ROWWISE_FLOPS, is_view, op_name, tensors_of)
from engine.decomposition.auto.records import Gemm, Operand, Output, Site, TracedOp

_TORCH_DIR = str(Path(torch.__file__).parent)
# frames of the tracing machinery itself, skipped when looking for the model's helper function
_TRACING_FILES = frozenset(str(Path(__file__).with_name(name))
                           for name in ("tracer.py", "hooks.py", "trace.py", "aten_ops.py", "meta_model.py"))
ACTIVE_TRACERS: list["Tracer"] = []     # the tracer of the forward pass now running (hooks find it here)


def active() -> "Tracer | None":
    """The tracer of the forward pass now running, if any."""
    return ACTIVE_TRACERS[-1] if ACTIVE_TRACERS else None


@dataclass
class _Info:
    serial: int
    kind: str


class Tracer(TorchDispatchMode):
    """Records the ops of one forward pass (see trace_forward for how it is attached to a model)."""

    def __init__(self):
        super().__init__()
        self.events: list = []
        self.unrecognized: set[str] = set()
        self._info = WeakIdKeyDictionary()
        self._serial = 0
        self._stack: list[Site] = []
        self._calls = 0
        self.suppress = 0

    # ---- tensors
    def _new(self, tensor: torch.Tensor, kind: str) -> _Info:
        self._serial += 1
        info = _Info(self._serial, kind)
        self._info[tensor] = info
        return info

    def info(self, tensor: torch.Tensor) -> _Info:
        found = self._info.get(tensor)
        return found if found is not None else self._new(tensor, "act")

    def mark(self, tensor: torch.Tensor, kind: str) -> None:
        self._new(tensor, kind)

    def operand(self, tensor: torch.Tensor) -> Operand:
        info = self.info(tensor)
        return Operand(info.serial, info.kind, int(tensor.numel()), bool(tensor.is_floating_point()),
                       int(tensor.element_size()))

    def output(self, tensor: torch.Tensor) -> Output:
        info = self.info(tensor)
        return Output(info.serial, int(tensor.numel()), bool(tensor.is_floating_point()), int(tensor.element_size()))

    def register_model(self, model: torch.nn.Module) -> None:
        for parameter in model.parameters():
            self._new(parameter, "weight")
        for buffer in model.buffers():
            self._new(buffer, "const")

    # ---- where we are
    def site(self) -> Site:
        top = self._stack[-1] if self._stack else Site("", "", 0, False, None)
        if top.leaf:      # everything a leaf module does is one kernel: no need to know the helper
            return top
        return Site(top.module, top.module_class, top.call, top.leaf, _helper_name())

    def _enter(self, name: str, module: torch.nn.Module, *_args) -> None:
        self._calls += 1
        leaf = next(iter(module.children()), None) is None
        self._stack.append(Site(name, type(module).__name__, self._calls, leaf, None))

    def _exit(self, name: str, *_args) -> None:
        while self._stack:
            if self._stack.pop().module == name:
                break

    def attach(self, model: torch.nn.Module) -> list:
        handles = []
        for name, module in model.named_modules():
            handles.append(module.register_forward_pre_hook(partial(self._enter, name, module)))
            handles.append(module.register_forward_hook(partial(self._exit, name)))
        return handles

    # ---- ops
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not self.suppress:
            self._observe(func, args, kwargs, out)
        return out

    def _observe(self, func, args, kwargs, out) -> None:
        name = op_name(func)
        tensors_in = tensors_of(args) + (tensors_of(tuple(kwargs.values())) if kwargs else [])
        tensors_out = tensors_of(out if isinstance(out, (tuple, list)) else (out,))
        # views share their input's storage (and what it holds: weight, KV cache, ...)
        if is_view(func) or name in ALIAS_OPS:
            if tensors_in:
                base = self.info(tensors_in[0])
                for tensor in tensors_out:
                    self._info[tensor] = base
            return
        infos = [self.info(t) for t in tensors_in]
        gather = name in GATHER_OPS and bool(infos) and infos[0].kind == "weight"
        if not gather and all(info.kind in ("weight", "const") for info in infos):
            kind = "weight" if any(info.kind == "weight" for info in infos) else "const"
            for tensor in tensors_out:
                self._new(tensor, kind)        # precomputable from weights and constants: not recorded
            return
        inputs = tuple(self.operand(t) for t in tensors_in)
        gemm = bias_flops = None
        if name in GEMM_OPS:
            kind = "gemm"
            gemm, bias_flops = self._gemm(name, args, tensors_out)
        elif gather:   # a table lookup (token or position embedding): per-token traffic, even for constant ids
            kind, bias_flops = "gather", 0.0
        else:
            kind, bias_flops = "elementwise", self._vector_flops(name, func, tensors_in, tensors_out)
        for tensor in tensors_out:
            self._new(tensor, "act")
        outputs = tuple(self.output(t) for t in tensors_out)
        self.events.append(TracedOp(kind, name, self.site(), inputs, outputs, bias_flops, gemm))

    def _vector_flops(self, name, func, tensors_in, tensors_out) -> float:
        out_elements = sum(t.numel() for t in tensors_out if t.is_floating_point())
        in_elements = tensors_in[0].numel() if tensors_in else 0
        if name in ROWWISE_FLOPS:
            return ROWWISE_FLOPS[name] * in_elements
        if name in COPY_OPS:
            return 0.0
        if name in POINTWISE_FLOPS:
            return POINTWISE_FLOPS[name] * out_elements
        if name in COUNTED_PER_INPUT or torch.Tag.reduction in func.tags:
            return float(in_elements)
        if torch.Tag.pointwise in func.tags:
            return float(max(out_elements, sum(t.numel() for t in tensors_out)))
        self.unrecognized.add(name)
        return 0.0

    def _gemm(self, name, args, tensors_out):
        """Shape of a matmul op; the weight (if any) goes to the B side, the activation to A."""
        tensor_args = [a for a in args if isinstance(a, torch.Tensor)]
        bias = None
        if name in ("addmm", "baddbmm", "addbmm", "addmv"):
            bias, tensor_args = tensor_args[0], tensor_args[1:]
        if name in ("convolution", "_convolution"):
            w = tensor_args[1]
            bias = tensor_args[2] if len(tensor_args) > 2 else None
            n = int(w.shape[0])
            m, k = int(tensors_out[0].numel() // n), int(w.shape[1] * math.prod(w.shape[2:]))
            return self._gemm_event(Gemm(m, k, n, 1, self._weight_elements(w) + self._weight_elements(bias),
                                         self._weight_elements(bias)), bias)
        first, second = tensor_args[0], tensor_args[1]
        a_shape, b_shape = tuple(first.shape), tuple(second.shape)
        if name == "linear":   # x @ W^T (+ bias)
            bias = tensor_args[2] if len(tensor_args) > 2 else None
            b_shape = b_shape[:-2] + (b_shape[-1], b_shape[-2])
        a_weight, b_weight = (self.info(t).kind == "weight" for t in (first, second))
        if len(a_shape) == 1:
            a_shape = (1,) + a_shape
        if len(b_shape) == 1:
            b_shape = b_shape + (1,)
        if a_weight and not b_weight:   # W @ X == (X^T @ W^T)^T: put the tokens on the m side
            a_shape, b_shape = (b_shape[:-2] + (b_shape[-1], b_shape[-2]), a_shape[:-2] + (a_shape[-1], a_shape[-2]))
        batch = math.prod(a_shape[:-2]) if len(a_shape) > 2 else (math.prod(b_shape[:-2]) if len(b_shape) > 2 else 1)
        m, k, n = a_shape[-2], a_shape[-1], b_shape[-1]
        if name == "_grouped_mm":   # rows of all groups against per-group weights
            batch, m = 1, int(first.numel() // k)
        weight = self._weight_elements(first) + self._weight_elements(second) + self._weight_elements(bias)
        return self._gemm_event(Gemm(int(m), int(k), int(n), int(batch), weight, self._weight_elements(bias)), bias)

    def _weight_elements(self, tensor) -> int:
        if tensor is None or self.info(tensor).kind != "weight":
            return 0
        return int(tensor.numel())

    @staticmethod
    def _gemm_event(gemm: Gemm, bias) -> tuple[Gemm, float]:
        """The GEMM and the FLOPs of its bias add (an epilogue on the vector units)."""
        return gemm, (float(gemm.batch * gemm.m * gemm.n) if bias is not None else 0.0)

    # ---- events from the hooks (engine/decomposition/auto/hooks.py)
    def add(self, event) -> None:
        self.events.append(event)


def _helper_name() -> str | None:
    """The function the op's module forward called (e.g. apply_rotary_pos_emb), or None."""
    frame = sys._getframe(2)
    below = None
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        if not (filename.startswith(_TORCH_DIR) or filename in _TRACING_FILES):
            if code.co_name == "forward":
                return below
            below = code.co_name
        frame = frame.f_back
    return None

