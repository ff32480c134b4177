"""The model built from its config on PyTorch's meta device, and which of its layers a trace runs.

Under `torch.device("meta")` tensors carry a shape and a dtype but no data: nothing is allocated and
no weights are downloaded. Layers built alike (`module_signature`) run the same ops on the same shapes,
so a trace runs a few representatives of each class of alike layers (`PreparedModel`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

import torch

import transformers
from transformers import AutoConfig, AutoModelForCausalLM

from engine.models.config_reader import ModelConfigError
from engine.models.validation import check_required_fields, has_sliding_layers
from engine.decomposition.auto.hooks import TRACE_ATTENTION, register_implementations

TRACE_DTYPE = torch.bfloat16             # element counts do not depend on it; bytes are rescaled later
DEFAULT_TRACED_LAYERS = 2                # representatives traced per class of alike layers (PreparedModel)


class TraceError(RuntimeError):
    """The model could not be built or traced on the meta device."""


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
    register_implementations()
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

