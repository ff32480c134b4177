"""Trace a Hugging Face causal LM on PyTorch's meta device: every matmul, attention and element-wise op.

Needs the `auto` extra (PyTorch and transformers). Nothing here allocates real memory or downloads
weights: the model is built from its config under `torch.device("meta")`, where tensors carry a shape
and a dtype but no data, and one forward pass runs under a TorchDispatchMode that sees every aten op.

What is recorded (`Trace.events`, plain Python records, no torch objects):
- `TracedOp`: one aten op with the module call it ran in (module hooks keep a stack), the Python
  helper function it came from (e.g. `apply_rotary_pos_emb`), its operands (weight / activation /
  KV cache / constant, element counts) and its outputs. Matmuls carry their GEMM shape.
- `AttentionRecord`: one attention call, caught at transformers' attention interface (a registered
  attention implementation that records q/k/v shapes, the sliding window and causality, and returns an
  empty output) or at `torch.nn.functional.scaled_dot_product_attention` for models that call it
  directly. The scores never materialise, so no mask is built and causal work is counted exactly
  (see engine/decomposition/auto/to_kernels.py).
- `KVStoreRecord`: one `Cache.update` call (the new tokens' K and V written to the cache); the
  cache's own concatenation is not traced.
- `ExpertsRecord`: one grouped expert GEMM of a mixture-of-experts block, caught at transformers'
  experts interface (routing is data-dependent, so the expert GEMMs are recorded from their shapes:
  tokens x top-k rows; the expert activation and the weighted combine are traced as usual).

Ops whose inputs are all weights, buffers or constants (no dependency on the tokens or the cache,
e.g. the rotary cos/sin table, `1 + weight`) are treated as precomputed and not recorded; a lookup in a
weight table (a learned position embedding indexed by positions) is recorded all the same, since a
serving engine gathers those rows for every token.
"""

from __future__ import annotations

import json
import math
import sys
import threading
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.weak import WeakIdKeyDictionary

import transformers
from transformers import AutoConfig, AutoModelForCausalLM, DynamicCache

from engine.models.config_reader import ModelConfigError
from engine.models.validation import check_required_fields, has_sliding_layers
from engine.decomposition.auto.records import (AttentionRecord, ExpertsRecord, Gemm, KVStoreRecord, Operand, Output, Site, Trace,
                                 TracedOp, layer_of)

TRACE_ATTENTION = "llm_roofline_trace"   # the attention / experts implementation registered below
TRACE_DTYPE = torch.bfloat16             # element counts do not depend on it; bytes are rescaled later
DEFAULT_TRACED_LAYERS = 2                # representatives traced per class of alike layers (PreparedModel)

_TORCH_DIR = str(Path(torch.__file__).parent)
_THIS_FILE = __file__
_LOCK = threading.Lock()
_ACTIVE: list["Tracer"] = []             # the tracer of the forward pass now running (hooks find it here)


class TraceError(RuntimeError):
    """The model could not be built or traced on the meta device."""


# ------------------------------------------------------------------------------------------ op tables

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


def _op_name(func) -> str:
    name = func.overloadpacket.__name__
    return name[:-1] if name.endswith("_") and not name.startswith("_") else name


def _is_view(func) -> bool:
    try:
        return bool(func.is_view)
    except AttributeError:  # pragma: no cover - older torch
        return False


# ------------------------------------------------------------------------------------------ tracer

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
        name = _op_name(func)
        tensors_in = _tensors(args) + (_tensors(tuple(kwargs.values())) if kwargs else [])
        tensors_out = _tensors(out if isinstance(out, (tuple, list)) else (out,))
        # views share their input's storage (and what it holds: weight, KV cache, ...)
        if _is_view(func) or name in ALIAS_OPS:
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

    # ---- events from the hooks below
    def add(self, event) -> None:
        self.events.append(event)


def _tensors(values) -> list:
    """The tensors among op arguments (one level of lists, as aten.cat takes them)."""
    found = []
    for value in values:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(v for v in value if isinstance(v, torch.Tensor))
    return found


def _helper_name() -> str | None:
    """The function the op's module forward called (e.g. apply_rotary_pos_emb), or None."""
    frame = sys._getframe(2)
    below = None
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        if not (filename.startswith(_TORCH_DIR) or filename == _THIS_FILE):
            if code.co_name == "forward":
                return below
            below = code.co_name
        frame = frame.f_back
    return None


# ------------------------------------------------------------------------------------------ hooks

def _active() -> Tracer | None:
    return _ACTIVE[-1] if _ACTIVE else None


def _attention_hook(module, query, key, value, attention_mask=None, *args, **kwargs):
    """A transformers attention implementation that records the call and returns an empty output.

    q: [batch, q_heads, q_tokens, d_qk], k: [batch, kv_heads, kv_tokens, d_qk], v: [..., d_v];
    returns ([batch, q_tokens, q_heads, d_v], None) like the sdpa implementation."""
    tracer = _active()
    window = kwargs.get("sliding_window")
    if window is None:
        window = getattr(module, "sliding_window", None)
    causal = kwargs.get("is_causal")
    if causal is None:
        causal = getattr(module, "is_causal", True)
    softcap = kwargs.get("softcap") is not None
    batch, q_heads, q_tokens, d_qk = (int(x) for x in query.shape)
    kv_heads, kv_tokens, d_v = int(key.shape[1]), int(key.shape[2]), int(value.shape[-1])
    if tracer is not None:
        inputs = tuple(tracer.operand(t) for t in (query, key, value))
        tracer.add(AttentionRecord(tracer.site(), batch, q_heads, kv_heads, q_tokens, kv_tokens, d_qk, d_v,
                                   int(window) if window else None, bool(causal), softcap, inputs))
        tracer.suppress += 1
    try:
        output = torch.empty(batch, q_tokens, q_heads, d_v, dtype=query.dtype, device=query.device)
    finally:
        if tracer is not None:
            tracer.suppress -= 1
    return output, None


def _sdpa_hook(original):
    """torch.nn.functional.scaled_dot_product_attention for models that call it directly."""

    def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                     scale=None, enable_gqa=False, **kwargs):
        tracer = _active()
        if tracer is None or query.dim() != 4:
            return original(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                            scale=scale, enable_gqa=enable_gqa, **kwargs)
        batch, q_heads, q_tokens, d_qk = (int(x) for x in query.shape)
        kv_heads, kv_tokens, d_v = int(key.shape[1]), int(key.shape[2]), int(value.shape[-1])
        # a mask passed by a causal LM is its causal mask; is_causal=False with no mask and one query is decode
        causal = bool(is_causal) or attn_mask is not None or q_tokens == 1
        inputs = tuple(tracer.operand(t) for t in (query, key, value))
        tracer.add(AttentionRecord(tracer.site(), batch, q_heads, kv_heads, q_tokens, kv_tokens, d_qk, d_v,
                                   None, causal, False, inputs))
        tracer.suppress += 1
        try:
            return torch.empty(batch, q_heads, q_tokens, d_v, dtype=query.dtype, device=query.device)
        finally:
            tracer.suppress -= 1

    return scaled_dot_product_attention


def _experts_hook(self, hidden_states, top_k_index, top_k_weights):
    """A transformers experts implementation: grouped GEMMs recorded from shapes, the rest traced.

    Routing is data-dependent (which expert gets which token), so the two grouped GEMMs are recorded
    as `tokens x top_k` rows against per-expert weights; the activation (`_apply_gate`/`act_fn`) and the
    weighted sum over the top-k run on meta tensors of the right shapes and are traced like any op."""
    tracer = _active()
    tokens, hidden = int(hidden_states.shape[0]), int(hidden_states.shape[-1])
    top_k = int(top_k_index.shape[-1])
    rows = tokens * top_k
    experts = int(self.num_experts)
    has_gate = getattr(self, "has_gate", True)
    up_name = "gate_up_proj" if has_gate else "up_proj"
    up_weight, down_weight = getattr(self, up_name), self.down_proj
    transposed = getattr(self, "is_transposed", False)
    up_out = int(up_weight.shape[-1] if transposed else up_weight.shape[-2])
    down_in = int(down_weight.shape[-2] if transposed else down_weight.shape[-1])
    has_bias = getattr(self, "has_bias", False)

    def bias_elements(weight_name):
        bias = getattr(self, f"{weight_name}_bias", None) if has_bias else None
        return int(bias.numel() // experts) if bias is not None else 0

    dtype, device = hidden_states.dtype, hidden_states.device
    if tracer is not None:
        tracer.add(ExpertsRecord(tracer.site(), up_name, rows, hidden, up_out, tokens, experts, top_k,
                                 int(up_weight.numel() // experts), bias_elements(up_name)))
        tracer.suppress += 1
    projected = torch.empty(rows, up_out, dtype=dtype, device=device)
    if tracer is not None:
        tracer.suppress -= 1
        tracer.mark(projected, "act")
    activated = self._apply_gate(projected) if has_gate else self.act_fn(projected)
    if tracer is not None:
        tracer.add(ExpertsRecord(tracer.site(), "down_proj", rows, down_in, hidden, tokens, experts, top_k,
                                 int(down_weight.numel() // experts), bias_elements("down_proj")))
        tracer.suppress += 1
    down = torch.empty(rows, hidden, dtype=activated.dtype, device=device)
    if tracer is not None:
        tracer.suppress -= 1
        tracer.mark(down, "act")
    weighted = down * top_k_weights.reshape(-1, 1).to(down.dtype)
    return weighted.view(tokens, top_k, hidden).sum(dim=1).to(dtype)


def _register_implementations() -> None:
    from transformers import AttentionInterface
    AttentionInterface.register(TRACE_ATTENTION, _attention_hook)
    try:
        from transformers.integrations.moe import ExpertsInterface
        ExpertsInterface.register(TRACE_ATTENTION, _experts_hook)
    except ImportError:  # pragma: no cover - transformers without the experts interface
        pass


def _wrap_cache(cache, tracer: Tracer):
    """Record each Cache.update (the new K and V stored) and mark what it returns as KV-cache reads."""
    original = cache.update

    def update(key_states, value_states, layer_idx, *args, **kwargs):
        inputs = tuple(tracer.operand(t) for t in (key_states, value_states))
        tokens = int(key_states.shape[0] * key_states.shape[-2]) if key_states.dim() == 4 else int(key_states.shape[0])
        kv_heads = int(key_states.shape[1]) if key_states.dim() == 4 else 1
        tracer.add(KVStoreRecord(tracer.site(), tokens, int(key_states.numel()), int(value_states.numel()),
                                 kv_heads, int(key_states.shape[-1]), inputs))
        tracer.suppress += 1
        try:
            result = original(key_states, value_states, layer_idx, *args, **kwargs)
        finally:
            tracer.suppress -= 1
        for tensor in tree_flatten(result)[0]:
            if isinstance(tensor, torch.Tensor):
                tracer.mark(tensor, "kv")
        return result

    cache.update = update
    return cache


# ------------------------------------------------------------------------------------------ building

def hf_config(config_dict: dict):
    """A transformers config object from the dict of a config.json (the text model of a multimodal one)."""
    data = dict(config_dict)
    model_type = data.get("model_type")
    if not model_type:
        raise TraceError("config.json has no 'model_type'; automatic decomposition needs it to pick the architecture")
    data.pop("model_type")
    try:
        config = AutoConfig.for_model(model_type, **data)
    except (KeyError, ValueError) as error:
        raise TraceError(f"transformers {transformers.__version__} does not know model_type {model_type!r}: "
                         f"{error}") from None
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    text = text if text is not None else config
    check_stated_fields(config_dict, config, text)
    return text


STATED_FIELDS = ("hidden_size", "num_hidden_layers", "num_attention_heads")


def check_stated_fields(config_dict: dict, config, text) -> None:
    """The width, depth and heads the architecture reads must be in config.json, not transformers' defaults;
    sliding layers need a window (ModelConfigError naming the field, as the hand parser's)."""
    raw, where = config_dict, ""
    if text is not config:
        for key, value in config_dict.items():
            if isinstance(value, dict) and getattr(config, key, None) is text:
                raw, where = value, f"{key}."
                break
    attribute_map = getattr(type(text), "attribute_map", None) or {}
    reads = {}
    for canonical in STATED_FIELDS:
        try:
            present = hasattr(text, canonical)
        except Exception:   # noqa: BLE001 - a config property that fails is not a field it has
            present = False
        if present:
            reads[canonical] = attribute_map.get(canonical, canonical)
    check_required_fields(raw, reads, where)
    if has_sliding_layers(raw) and getattr(text, "sliding_window", None) is None:
        raise ModelConfigError(f"config.json field {where + 'sliding_window'!r} is missing: layer_types has "
                               "sliding layers, which need a window size")


def build_model(config) -> torch.nn.Module:
    """The model on the meta device (no memory, no weights), with the tracing attention and experts.

    Models without transformers' attention interface are built with `sdpa` (their calls to
    torch.nn.functional.scaled_dot_product_attention are caught while tracing), else `eager`."""
    _register_implementations()
    attempts = [{"attn_implementation": TRACE_ATTENTION, "experts_implementation": TRACE_ATTENTION},
                {"attn_implementation": TRACE_ATTENTION}, {"attn_implementation": "sdpa"},
                {"attn_implementation": "eager"}]
    problems = []
    for kwargs in attempts:
        try:
            with torch.device("meta"):
                model = AutoModelForCausalLM.from_config(config, dtype=TRACE_DTYPE, **kwargs)
            return model.eval()
        except (ValueError, KeyError, TypeError, ImportError) as error:
            problems.append(f"{type(error).__name__}: {error}")
            if not any(word in str(error) for word in ("attn", "attention", "experts", TRACE_ATTENTION, "sdpa")):
                break
    raise TraceError(f"cannot build {getattr(config, 'model_type', '?')} from its config: {problems[-1]}")


def num_layers(config) -> int:
    value = getattr(config, "num_hidden_layers", None)
    if not isinstance(value, int) or value < 1:
        raise TraceError(f"config of {config.model_type!r} has no usable num_hidden_layers ({value!r})")
    return value


def layer_lists(model: torch.nn.Module, layers: int) -> list[str]:
    """Paths of the ModuleLists holding the decoder layers (length == number of layers)."""
    return [name for name, module in model.named_modules()
            if isinstance(module, torch.nn.ModuleList) and len(module) == layers and layers > 0]


_SKIPPED_ATTRIBUTES = ("idx", "index", "layer_id", "layer_number", "layer_num")


def module_signature(module: torch.nn.Module) -> tuple:
    """What a layer is built of: submodule classes, parameter shapes and plain settings (not its index)."""
    items = []
    for name, sub in module.named_modules():
        settings = tuple(sorted(
            (key, repr(value)) for key, value in vars(sub).items()
            if not key.startswith("_") and isinstance(value, (int, float, str, bool, type(None), tuple))
            and not any(part in key.lower() for part in _SKIPPED_ATTRIBUTES)))
        params = tuple((n, tuple(p.shape)) for n, p in sub.named_parameters(recurse=False))
        items.append((name, type(sub).__name__, params, settings))
    return tuple(items)


@dataclass(eq=False)
class PreparedModel:
    """The model on meta and which of its layers a trace runs.

    Layers built alike (same `module_signature`: submodule classes, parameter shapes, settings, ignoring
    the layer index) run the same ops on the same shapes, so each class of alike layers is traced through
    `traced_per_class` representatives and each representative stands for (class size / representatives)
    layers. `representatives` are the original layer indices traced (all of them when `None`);
    `layer_weights[p]` is what the p-th traced layer stands for; `layer_classes` groups traced positions."""

    model_type: str
    config_dict: dict
    model: torch.nn.Module
    layers_total: int
    parameters: int
    layer_list: str | None
    representatives: tuple[int, ...] | None
    layer_weights: dict
    layer_classes: tuple[tuple[int, ...], ...]
    notes: tuple[str, ...]

    @property
    def layers_traced(self) -> int:
        return len(self.representatives) if self.representatives is not None else self.layers_total


@lru_cache(maxsize=16)
def _prepare_cached(config_json: str, traced_per_class: int | None) -> PreparedModel:
    config_dict = json.loads(config_json)
    model = build_model(hf_config(config_dict))
    total = num_layers(model.config)
    parameters = sum(p.numel() for p in model.parameters())
    lists = layer_lists(model, total)
    everything = PreparedModel(config_dict.get("model_type", "?"), config_dict, model, total, parameters,
                               lists[0] if len(lists) == 1 else None, None, {i: 1.0 for i in range(total)},
                               tuple((i,) for i in range(total)), (f"traced all {total} layers",))
    if traced_per_class is None or len(lists) != 1:
        return everything
    classes: dict[tuple, list[int]] = {}
    for index, block in enumerate(model.get_submodule(lists[0])):
        classes.setdefault(module_signature(block), []).append(index)
    chosen = sorted(i for members in classes.values() for i in members[:traced_per_class])
    if len(chosen) >= total:
        return everything
    position = {index: p for p, index in enumerate(chosen)}
    weights, groups = {}, []
    for members in classes.values():
        picked = members[:traced_per_class]
        groups.append(tuple(position[i] for i in picked))
        for i in picked:
            weights[position[i]] = len(members) / len(picked)
    kinds = "every layer is built alike" if len(classes) == 1 else f"{len(classes)} kinds of layer"
    note = (f"{kinds} ({', '.join(str(len(m)) for m in classes.values())} of {total}): traced layers "
            f"{', '.join(map(str, chosen))} and scaled each to the layers built like it")
    return PreparedModel(everything.model_type, config_dict, model, total, parameters, lists[0], tuple(chosen),
                         weights, tuple(groups), (note,))


def prepare_model(config_dict: dict, traced_per_class: int | None = DEFAULT_TRACED_LAYERS) -> PreparedModel:
    """Build the model on meta and pick the layers to trace (see PreparedModel); None traces every layer."""
    return _prepare_cached(json.dumps(config_dict, sort_keys=True), traced_per_class)


# ------------------------------------------------------------------------------------------ tracing

def _accepts(model, name: str) -> bool:
    import inspect
    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def _new_cache(model):
    try:
        return DynamicCache(config=model.config)
    except TypeError:  # pragma: no cover - older signature
        return DynamicCache()


class _OnlyRepresentatives:
    """Within the block, the decoder-layer list holds only the representative layers."""

    def __init__(self, prepared: PreparedModel):
        self.prepared = prepared

    def __enter__(self):
        p = self.prepared
        if p.representatives is None:
            return self
        parent_path, _, attribute = p.layer_list.rpartition(".")
        self.parent = p.model.get_submodule(parent_path) if parent_path else p.model
        self.attribute = attribute
        self.original = getattr(self.parent, attribute)
        setattr(self.parent, attribute, torch.nn.ModuleList([self.original[i] for i in p.representatives]))
        return self

    def __exit__(self, *exc):
        if self.prepared.representatives is not None:
            setattr(self.parent, self.attribute, self.original)
        return False


def trace_forward(prepared: PreparedModel, batch: int, new_tokens: int, prior_tokens: int = 0,
                  logits_to_keep: int | None = 1) -> Trace:
    """Trace one forward pass: `batch` sequences of `new_tokens` tokens after `prior_tokens` cached ones.

    logits_to_keep: LM-head rows kept per sequence (the last positions), as serving engines compute;
    None keeps every position. Falls back to tracing every layer when representatives fail."""
    try:
        trace = _trace_cached(prepared, batch, new_tokens, prior_tokens, logits_to_keep)
        if _layers_ran_alike(trace, prepared):
            return trace
        reason = "layers built alike ran different ops"
    except TraceError as error:
        if prepared.representatives is None:
            raise
        reason = str(error)
    full = prepare_model(prepared.config_dict, None)
    trace = _trace_cached(full, batch, new_tokens, prior_tokens, logits_to_keep)
    trace.notes = trace.notes + (f"traced every layer ({reason} with representative layers)",)
    return trace


@lru_cache(maxsize=64)
def _trace_cached(prepared, batch, new_tokens, prior_tokens, logits_to_keep) -> Trace:
    model = prepared.model
    keep = logits_to_keep if _accepts(model, "logits_to_keep") else None
    notes = list(prepared.notes)
    if logits_to_keep is not None and keep is None:
        notes.append("the model's forward has no logits_to_keep: the LM head was traced for every position "
                     "and its rows were scaled to the last positions")
    with _LOCK, torch.no_grad(), _OnlyRepresentatives(prepared):
        cache = _new_cache(model)
        if prior_tokens:   # fill the cache with the earlier tokens (not traced)
            fill = {"logits_to_keep": 1} if keep is not None else {}
            try:
                model(input_ids=torch.zeros(batch, prior_tokens, dtype=torch.long, device="meta"), use_cache=True,
                      past_key_values=cache, **fill)
            except Exception as error:
                raise TraceError(f"running {prepared.model_type} on the meta device failed: "
                                 f"{type(error).__name__}: {error}") from error
        tracer = Tracer()
        tracer.register_model(model)
        _wrap_cache(cache, tracer)
        handles = tracer.attach(model)
        original_sdpa = torch.nn.functional.scaled_dot_product_attention
        torch.nn.functional.scaled_dot_product_attention = _sdpa_hook(original_sdpa)
        _ACTIVE.append(tracer)
        try:
            with tracer:
                input_ids = torch.zeros(batch, new_tokens, dtype=torch.long, device="meta")
                tracer.mark(input_ids, "act")
                kwargs = {"use_cache": True, "past_key_values": cache}
                if keep is not None:
                    kwargs["logits_to_keep"] = keep
                if _accepts(model, "position_ids"):
                    # every sequence carries its own positions, as in a serving batch (HF would broadcast one
                    # row of positions over the batch and look up / rotate with it once)
                    positions = torch.arange(prior_tokens, prior_tokens + new_tokens, device="meta")
                    kwargs["position_ids"] = positions.unsqueeze(0).expand(batch, new_tokens)
                model(input_ids=input_ids, **kwargs)
        except Exception as error:
            raise TraceError(f"tracing {prepared.model_type} on the meta device failed: "
                             f"{type(error).__name__}: {error}") from error
        finally:
            _ACTIVE.pop()
            torch.nn.functional.scaled_dot_product_attention = original_sdpa
            for handle in handles:
                handle.remove()
    logit_rows = batch * (logits_to_keep if logits_to_keep is not None else new_tokens)
    trace = Trace(prepared.model_type, batch, new_tokens, prior_tokens, logit_rows, prepared.layers_total,
                  prepared.layers_traced, tracer.events, getattr(model, "base_model_prefix", "model") or "model",
                  dict(prepared.layer_weights), tuple(sorted(tracer.unrecognized)), tuple(notes))
    if logits_to_keep is not None and keep is None:
        _scale_lm_head(trace, model, batch * new_tokens, logit_rows)
    return trace


def _scale_lm_head(trace: Trace, model, tokens: int, rows: int) -> None:
    head = model.get_output_embeddings()
    path = next((name for name, module in model.named_modules() if module is head), None)
    for i, event in enumerate(trace.events):
        if isinstance(event, TracedOp) and event.kind == "gemm" and event.site.module == path \
                and event.gemm.m == tokens:
            g = event.gemm
            new = Gemm(rows, g.k, g.n, g.batch, g.weight_elements, g.bias_elements)
            outputs = tuple(Output(o.serial, o.elements * rows // tokens, o.floating, o.itemsize)
                            for o in event.outputs)
            inputs = tuple(Operand(o.serial, o.kind, o.elements * rows // tokens if o.kind != "weight" else o.elements,
                                   o.floating, o.itemsize) for o in event.inputs)
            trace.events[i] = TracedOp(event.kind, event.aten, event.site, inputs, outputs,
                                       event.vector_flops * rows / tokens, new)


def _event_signature(event) -> tuple:
    site = event.site
    _, pattern = layer_of(site.module)
    if isinstance(event, TracedOp):
        return ("op", event.kind, event.aten, pattern, site.helper, event.gemm,
                tuple((o.kind, o.elements) for o in event.inputs), tuple(o.elements for o in event.outputs),
                event.vector_flops)
    fields = {k: v for k, v in vars(event).items() if k not in ("site", "inputs")}
    return (type(event).__name__, pattern, site.helper, tuple(sorted(fields.items())))


def _layers_ran_alike(trace: Trace, prepared: PreparedModel) -> bool:
    """Representatives of one class of layers must have run identical op sequences."""
    if prepared.representatives is None:
        return True
    per_layer: dict[int, list] = {}
    for event in trace.events:
        layer, _ = layer_of(event.site.module)
        if layer is not None:
            per_layer.setdefault(layer, []).append(_event_signature(event))
    if set(per_layer) != set(range(prepared.layers_traced)):
        return False
    return all(per_layer[p] == per_layer[group[0]] for group in prepared.layer_classes for p in group)
