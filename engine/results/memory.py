"""Memory per device: weights after sharding, KV cache, activations and a workspace, against capacity.

- Weights: the largest pipeline stage's (ceil(num_layers / pp) layers, plus the embedding shard on
  the first stage, the final norm and LM-head shard on the last; a tied LM head keeps a copy of the
  embedding shard on the last stage when pp > 1). Tensor parallelism splits every projection over
  tp (K/V projections keep one head per device when num_kv_heads < tp), the embedding and LM head
  by vocabulary rows; norms, routers and low-rank "a" projections are replicated. Routed experts
  are split over ep (whole experts per device) or, without expert parallelism, over tp.
- KV cache: every sequence's tokens at the scenario's peak, for the stage's layers and the
  device's K/V heads (MLA latents are replicated over tp).
- Activations: the largest single kernel's inputs and outputs on the device (the peak pass).
- Workspace: WORKSPACE_FRACTION of device memory, the headroom serving engines leave outside their
  weight and KV pools for the CUDA context, library and communication buffers and fragmentation
  (vLLM's default gpu_memory_utilization = 0.9 leaves 10%).

`memory` values are per device; `total_all_devices_bytes` sums every device (tp x pp x dp).
`fewest_devices` searches tensor/pipeline layouts for the smallest device count that fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from types import SimpleNamespace
from typing import Optional

import numpy as np

from engine.common.arrays import any_true
from engine.hardware.dtypes import bytes_per_value
from engine.workload.module_dtypes import check_modules, tensor_module, weight_bytes_of
from engine.workload.parallel import ParallelismError, ParallelLayout, parallel_layout

WORKSPACE_FRACTION = 0.10
GB = 1e9
REPLICATED_PARTS = ("norm", "router", "sink", "_a_proj", "sigmoid_gate")


@dataclass
class MemoryFootprint:
    """Memory of ONE device (the most loaded one) against its capacity."""

    weights_bytes: float
    kv_cache_bytes: float
    activation_bytes: float
    capacity_bytes: float
    max_batch: int
    workspace_bytes: float = 0.0
    devices: int = 1
    total_all_devices_bytes: float = float("nan")
    message: str = ""

    @property
    def total_bytes(self) -> float:
        return self.weights_bytes + self.kv_cache_bytes + self.activation_bytes + self.workspace_bytes

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.capacity_bytes

    def to_dict(self) -> dict:
        return {"weights_bytes": self.weights_bytes, "kv_cache_bytes": self.kv_cache_bytes,
                "activation_bytes": self.activation_bytes, "workspace_bytes": self.workspace_bytes,
                "total_bytes": self.total_bytes, "capacity_bytes": self.capacity_bytes, "fits": self.fits,
                "max_batch": self.max_batch, "devices": self.devices,
                "total_all_devices_bytes": self.total_all_devices_bytes, "message": self.message}


# ---- weights ---------------------------------------------------------------------------------

def _layer_breakdowns(model) -> list[tuple[int, dict]]:
    """[(layers, params by tensor)] for the model's layer kinds (dense, MoE)."""
    if not getattr(model, "is_moe", False):
        return [(model.num_layers, model.params_per_layer_breakdown())]
    moe = model.num_moe_layers
    kinds = [(model.num_layers - moe, "dense"), (moe, "moe")]
    return [(count, model.params_per_layer_breakdown(kind)) for count, kind in kinds if count]


@lru_cache(maxsize=1024)
def _replicated(name: str) -> bool:
    """Whether the tensor `name` of a layer is held whole on every tensor-parallel rank."""
    return any(tag in name for tag in REPLICATED_PARTS)


def layer_weights_per_device(model, layout: ParallelLayout) -> float:
    """Weights (elements) of all layers on one tensor-parallel rank, summed over the pipeline stages (kept per
    (model, layout): both are frozen, and every estimate of the model asks)."""
    return _layer_weights_kept(model, layout)[0]


def layer_weights_by_module(model, layout: ParallelLayout) -> dict:
    """layer_weights_per_device split by module group (engine/workload/module_dtypes.py; None: the routed experts,
    norms and sinks)."""
    return _layer_weights_kept(model, layout)[1]


def _layer_weights_kept(model, layout: ParallelLayout) -> tuple[float, dict]:
    try:
        return _kept_layer_weights(model, layout)
    except TypeError:        # an unhashable model: computed every time
        return _layer_weights(model, layout)


@lru_cache(maxsize=64)
def _kept_layer_weights(model, layout: ParallelLayout) -> tuple[float, dict]:
    return _layer_weights(model, layout)


def _layer_weights(model, layout: ParallelLayout) -> tuple[float, dict]:
    """(all layers' weights on one device, the same by module group)."""
    kv_share = layout.kv_heads / model.num_key_value_heads
    experts = max(getattr(model, "num_experts", 0), 1)
    total, by_module = 0.0, {}
    for layers, parts in _layer_breakdowns(model):
        for name, params in parts.items():
            if _replicated(name):
                share = 1.0
            elif name in ("k_proj", "v_proj"):
                share = kv_share
            elif name.startswith("experts_"):       # routed experts: whole experts over ep, else split over tp
                share = math.ceil(experts / layout.ep) / experts if layout.ep > 1 else 1.0 / layout.tp
            else:
                share = 1.0 / layout.tp
            module = tensor_module(name)
            total += layers * params * share
            by_module[module] = by_module.get(module, 0.0) + layers * params * share
    return total, by_module


def weights_per_device(model, layout: ParallelLayout, weight_dtype: str, unquantized_modules: tuple = (),
                       unquantized_dtype: str = "bf16") -> tuple[float, float]:
    """(bytes on the most loaded device, bytes over all devices) of the weights: `unquantized_modules` (groups of
    engine/workload/module_dtypes.py, or their aliases) in `unquantized_dtype`, the rest in `weight_dtype`."""
    if not unquantized_modules:
        value = bytes_per_value(weight_dtype)
        device, every = _weight_elements(model, layout, layer_weights_per_device(model, layout), 1.0, 1.0)
        return device * value, every * value
    unquantized_modules = check_modules(unquantized_modules)

    def value(module):
        return weight_bytes_of(weight_dtype, unquantized_dtype, unquantized_modules, module)

    layers = sum(elements * value(module) for module, elements in layer_weights_by_module(model, layout).items())
    device, every = _weight_elements(model, layout, layers / value(None), value("embedding") / value(None),
                                     value("lm_head") / value(None))
    return device * value(None), every * value(None)


def _weight_elements(model, layout: ParallelLayout, layers: float, embedding_scale: float, head_scale: float):
    """(on the most loaded device, over all devices) of `layers` (the layers' weights on one device) plus the
    embedding, LM head and final norm, these scaled by `embedding_scale` / `head_scale` (their bytes per value over
    the others'; `layers` comes divided by the others' bytes per value by the caller, or in elements)."""
    h = model.hidden_size
    per_stage_layers = layers / model.num_layers
    embedding = (layout.vocab * h + getattr(model, "num_position_embeddings", 0) * h) * embedding_scale
    head = 0 if model.tie_word_embeddings else layout.vocab * h * head_scale
    tied_copy = layout.vocab * h * embedding_scale if model.tie_word_embeddings and layout.pp > 1 else 0
    final_norm = model.params_final_norm
    if layout.pp == 1:
        device = layers + embedding + head + final_norm
    else:
        stage = per_stage_layers * layout.max_layers
        device = max(stage + embedding, stage + head + tied_copy + final_norm)
    return device, layout.tp * layout.dp * (layers + embedding + head + tied_copy + final_norm)


# ---- KV cache ----------------------------------------------------------------------------------

def sequences_held(scenario) -> list[tuple[float, int]]:
    """(sequences, tokens each) held in the KV cache at the scenario's peak (per replica)."""
    s = scenario
    if s.phase == "prefill":
        return [(s.batch, s.input_length)]
    if s.phase == "decode":
        return [(s.batch, s.decode_context + 1)]
    if s.phase == "chunked":
        _, decode_tokens = s.chunk_mix()
        decode_context = s.context_length if s.context_length is not None else s.input_length + s.output_length // 2
        return [(decode_tokens, decode_context), (1, s.input_length)]
    return [(s.batch, s.input_length + s.output_length)]


def kv_tokens(scenario) -> float:
    """Tokens held in the KV cache at the scenario's peak, summed over the batch."""
    return float(sum(count * tokens for count, tokens in sequences_held(scenario)))


def kv_cache_bytes(model, scenario) -> float:
    """KV cache of one replica over all its devices' heads (no tp replication), sliding windows included."""
    per_sequence = getattr(model, "kv_cache_bytes", None)
    if per_sequence is None:
        return kv_tokens(scenario) * model.kv_cache_bytes_per_token(scenario.kv_dtype)
    return float(sum(count * per_sequence(int(tokens), scenario.kv_dtype)
                     for count, tokens in sequences_held(scenario)))


def kv_share_per_device(model, layout: ParallelLayout) -> float:
    """The share of a replica's KV cache one device holds: its stage's layers, its K/V heads."""
    heads = 1.0 if getattr(model, "attention_kind", "mha") == "mla" else layout.kv_heads / model.num_key_value_heads
    return heads * layout.max_layers / model.num_layers


# ---- activations -------------------------------------------------------------------------------

def peak_activation_bytes(model, scenario) -> float:
    """The largest kernel's activation bytes on one device, from the pass with the most tokens
    (prefill for a request; an average chunk of chunk_size tokens for a chunked-prefill request)."""
    from engine.decomposition.transformer import decompose_columns   # automatic models decompose themselves through it
    peak = scenario
    if scenario.phase == "request":
        peak = scenario.model_copy(update={"phase": "chunked" if scenario.chunked_prefill else "prefill",
                                           "chunked_prefill": False})
    if getattr(model, "automatic", False):
        peak = peak.model_copy(update={"dp": 1, "devices": None})
    columns = decompose_columns(model, peak)
    compute = np.asarray(columns["op"]) != "collective"
    return float(columns["activation_bytes"][compute].max()) if any_true(compute) else 0.0


# ---- the footprint -----------------------------------------------------------------------------

def memory_footprint(model, scenario, hardware, layout: Optional[ParallelLayout] = None,
                     workspace_fraction: float = WORKSPACE_FRACTION,
                     activation_bytes: Optional[float] = None) -> MemoryFootprint:
    """Per-device memory for `scenario` (docstring above); `message` says whether and why it fits.
    `activation_bytes`: the peak kernel's activations when the caller has the kernel table already.
    Automatically decomposed models (engine.decomposition.auto) run on one device per replica: every weight
    (params_total) and the KV cache at kv_cache_bytes_per_token for every held token."""
    kv_replica = kv_cache_bytes(model, scenario)
    activations = peak_activation_bytes(model, scenario) if activation_bytes is None else activation_bytes
    if getattr(model, "automatic", False):
        layout = SimpleNamespace(tp=1, pp=1, dp=scenario.dp, ep=1, devices=scenario.dp)
        weights = model.params_total * bytes_per_value(scenario.weight_dtype)
        weights_all, kv, kv_all = weights * scenario.dp, kv_replica, kv_replica * scenario.dp
    else:
        layout = layout or parallel_layout(model, scenario)
        weights, weights_all = weights_per_device(model, layout, scenario.weight_dtype, scenario.unquantized_modules,
                                                  scenario.unquantized_dtype)
        kv = kv_replica * kv_share_per_device(model, layout)
        kv_all = kv_replica * (layout.kv_heads / model.num_key_value_heads if getattr(model, "attention_kind", "mha")
                               != "mla" else 1.0) * layout.tp * layout.dp
    capacity = hardware.memory_capacity_bytes
    workspace = workspace_fraction * capacity
    per_sequence = (kv + activations) / max(scenario.batch, 1)
    room = capacity - weights - workspace
    max_batch = int(room // per_sequence) if room > 0 and per_sequence > 0 else 0
    devices = layout.devices
    total_all = weights_all + kv_all + devices * (activations + workspace)
    footprint = MemoryFootprint(weights, kv, activations, capacity, max_batch, workspace, devices, total_all)
    footprint.message = fit_message(footprint, model, scenario, hardware, layout, weights_all)
    return footprint


def _layout_text(layout: ParallelLayout) -> str:
    parts = [f"{name} {value}" for name, value in (("TP", layout.tp), ("PP", layout.pp), ("DP", layout.dp),
                                                  ("EP", layout.ep)) if value > 1]
    return " x ".join(parts) if parts else "one device"


def fit_message(memory: MemoryFootprint, model, scenario, hardware, layout: ParallelLayout,
                weights_all: float) -> str:
    """Sentences: it fits (and the largest batch that does), or it does not, where, and what is too big:
    'Does not fit on one device: meta-llama/Llama-3.1-405B in bf16 needs 812 GB of weights and one H100-SXM
    holds 80 GB.'"""
    capacity = memory.capacity_bytes / GB
    one = f"one {hardware.name} holds {capacity:.0f} GB"
    largest = ("No batch fits." if memory.max_batch < 1
               else f"The largest batch that fits is {memory.max_batch:,}.")
    if memory.fits:
        return f"Fits: {memory.total_bytes / GB:.1f} of {capacity:.0f} GB per device. {largest}"
    where = "on one device" if layout.devices == 1 else f"over {_layout_text(layout)}"
    if memory.weights_bytes > memory.capacity_bytes:
        if layout.devices == 1:
            return (f"Does not fit on one device: {model.name} in {scenario.weight_dtype} needs "
                    f"{memory.weights_bytes / GB:.0f} GB of weights and {one}.")
        return (f"Does not fit {where}: {model.name} in {scenario.weight_dtype} needs "
                f"{memory.weights_bytes / GB:.0f} GB of weights per device ({weights_all / layout.dp / GB:.0f} GB "
                f"in all) and {one}.")
    return (f"Does not fit {where}: {model.name} needs {memory.total_bytes / GB:.1f} GB per device (weights "
            f"{memory.weights_bytes / GB:.1f}, KV cache {memory.kv_cache_bytes / GB:.1f}, activations "
            f"{memory.activation_bytes / GB:.2f}, workspace {memory.workspace_bytes / GB:.1f} GB) and {one}. "
            f"{largest}")


@dataclass(frozen=True)
class DeviceFit:
    """A layout that fits: its device count, tp, pp and the per-device memory."""

    devices: int
    tp: int
    pp: int
    memory: MemoryFootprint = field(compare=False)


TP_OPTIONS = (1, 2, 4, 8)
PP_OPTIONS = (1, 2, 4, 8, 16, 32, 64)


def fewest_devices(hardware, model, scenario, tp_options=TP_OPTIONS, pp_options=PP_OPTIONS,
                   workspace_fraction: float = WORKSPACE_FRACTION) -> Optional[DeviceFit]:
    """The smallest tp x pp (one replica) whose most loaded device fits `scenario`, trying every tp in
    `tp_options` and pp in `pp_options`; ties go to the fewer pipeline stages (lower latency).
    None when nothing tried fits (or the model divides no way tried; automatic models, which run on one
    device per replica, fit on one or on none)."""
    if getattr(model, "automatic", False):
        trial = scenario.model_copy(update={"tp": 1, "pp": 1, "dp": 1, "devices": None, "micro_batches": None})
        memory = memory_footprint(model, trial, hardware, None, workspace_fraction)
        return DeviceFit(1, 1, 1, memory) if memory.fits else None
    candidates = sorted((tp * pp, pp, tp) for tp in tp_options for pp in pp_options)
    for devices, pp, tp in candidates:
        try:
            trial = scenario.model_copy(update={"tp": tp, "pp": pp, "dp": 1, "devices": None, "micro_batches": None})
            layout = parallel_layout(model, trial)
        except (ParallelismError, ValueError):
            continue
        memory = memory_footprint(model, trial, hardware, layout, workspace_fraction)
        if memory.fits:
            return DeviceFit(devices, tp, pp, memory)
    return None
