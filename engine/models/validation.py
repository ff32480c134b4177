"""One validation of config.json fields for both decompositions, and a bounded reader for the file.

The hand parser (ModelConfig.from_hf_config, engine/models/families.py and its parsers) and the automatic decomposition
(engine/decomposition/auto) both call `check_config_fields(data)` before anything else reads the config:

* every size field, under any of its spellings (`hidden_size`, `n_embd`, `d_model`, ...), must be a whole
  number (not a string, a float, a list or true/false) within physical bounds (SIZE_LIMITS says why);
* the attention heads must agree: key/value heads at most the query heads and dividing them, heads
  dividing the width when no `head_dim` is given;
* experts: top-k at least 1 and at most the routed experts;
* `layer_types`: a list of strings, one per layer; a sliding layer needs `sliding_window`.

The automatic path adds `check_required_fields` (the width, depth and heads must be stated, not left to
transformers' defaults). Every failure is a ModelConfigError naming the field (`text_config.hidden_size`).

`parse_config_json` reads a config.json's bytes with a size cap and a nesting cap, so neither a huge
file nor a deeply nested one (RecursionError) gets past it.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from engine.models.errors import ModelConfigError, field_error, shown
from engine.models.size_limits import (  # noqa: F401  (SIZE_LIMITS, SizeLimit, check_size re-exported)
    _EXPLICIT_HEAD_WIDTH, _HEAD_WIDTH, SIZE_LIMITS, SPELLINGS, SizeLimit, _kind, check_size)

MAX_CONFIG_BYTES = 4 * 2**20          # real config.json files are a few kB (Gemma 3 with its vision tower: ~2 kB)
MAX_JSON_DEPTH = 20                   # real ones nest 3-4 levels (text_config.rope_scaling.{...})
_NESTED_CONFIG_DEPTH = 3              # text_config, vision_config, ... are checked this deep


def _present(data: Mapping, canonical: str) -> tuple[str, Any] | None:
    """(spelling, value) of the first spelling of `canonical` present and not null."""
    for name in SPELLINGS[canonical]:
        if data.get(name) is not None:
            return name, data[name]
    return None


def check_heads(heads: int, kv_heads: int, hidden: int | None, head_width_given: bool,
                names: tuple[str, str, str], where: str = "") -> None:
    """Key/value heads at most the heads and dividing them; heads dividing the width when no head width
    is given. `names`: the spellings of (heads, key/value heads, hidden size) in this config."""
    heads_name, kv_name, hidden_name = names
    if kv_heads > heads or heads % kv_heads:
        raise field_error(where + kv_name, kv_heads, f"{where + heads_name} ({heads}) must be a multiple of it")
    if hidden is not None and not head_width_given and hidden % heads:
        raise field_error(where + heads_name, heads, f"does not divide {where + hidden_name} ({hidden}) "
                                                     "and no head_dim is given")
    if hidden is not None and not head_width_given and hidden // heads > _HEAD_WIDTH.high:
        raise field_error(where + heads_name, heads, f"{where + hidden_name} / {heads_name} = {hidden // heads:,} "
                                                     f"channels per head, more than {_HEAD_WIDTH.high:,} "
                                                     f"({_HEAD_WIDTH.why})")


def check_experts(experts: int, top_k: int, names: tuple[str, str], where: str = "") -> None:
    if not experts and top_k:
        raise field_error(where + names[0], experts, f"expected a positive integer: {where + names[1]} = {top_k} "
                                                     "routes each token to experts")
    if top_k > experts:
        raise field_error(where + names[1], top_k, f"more than the {experts} routed experts "
                                                   f"({where + names[0]})")


def _check_layer_types(data: Mapping, where: str) -> None:
    kinds = data.get("layer_types")
    if kinds is None:
        return
    if not isinstance(kinds, list) or not all(isinstance(kind, str) for kind in kinds):
        raise field_error(where + "layer_types", kinds, "expected a list of layer kinds such as "
                                                        "'full_attention' and 'sliding_attention'")
    layers = _present(data, "num_hidden_layers")
    if layers is not None and len(kinds) != layers[1]:
        raise field_error(where + "layer_types", f"{len(kinds)} entries",
                          f"expected one per layer ({where + layers[0]} = {layers[1]})")
    # absent, a family's default window applies (Gemma 2: 4096); the automatic path checks that one exists
    if has_sliding_layers(data) and "sliding_window" in data and data["sliding_window"] is None:
        raise field_error(where + "sliding_window", data.get("sliding_window"),
                          "layer_types has sliding layers: they need a window size")


def has_sliding_layers(data: Mapping) -> bool:
    kinds = data.get("layer_types")
    return isinstance(kinds, list) and any(isinstance(kind, str) and "sliding" in kind for kind in kinds)


def check_consistency(data: Mapping, where: str = "") -> None:
    """Heads, experts and layer_types of one (already size-checked) config dict agree."""
    heads, kv_heads, hidden = (_present(data, c) for c in ("num_attention_heads", "num_key_value_heads",
                                                            "hidden_size"))
    if heads is not None:
        kv = kv_heads or heads
        given = any(data.get(name) is not None for name in _EXPLICIT_HEAD_WIDTH)
        check_heads(heads[1], kv[1], hidden[1] if hidden else None, given,
                    (heads[0], kv[0], hidden[0] if hidden else "hidden_size"), where)
    experts, top_k = _present(data, "num_experts"), _present(data, "num_experts_per_tok")
    if experts is not None and top_k is not None:
        check_experts(experts[1], top_k[1], (experts[0], top_k[0]), where)
    _check_layer_types(data, where)


def _check_names(data: Mapping, where: str) -> None:
    """model_type a non-empty string, architectures a list of class names (both pick the code that runs)."""
    model_type = data.get("model_type")
    if model_type is not None and (not isinstance(model_type, str) or not model_type.strip()):
        raise field_error(where + "model_type", model_type, "expected a model type name such as 'llama'")
    architectures = data.get("architectures")
    if architectures is not None and (not isinstance(architectures, list)
                                      or not all(isinstance(name, str) for name in architectures)):
        raise field_error(where + "architectures", architectures,
                          "expected a list of class names such as ['LlamaForCausalLM']")


def check_config_fields(data: Any, where: str = "", _depth: int = 0) -> None:
    """The checks every config.json passes before either decomposition reads it (module docstring)."""
    if not isinstance(data, dict):
        raise ModelConfigError(f"config.json{' field ' + repr(where.rstrip('.')) if where else ''} must be a "
                               f"JSON object, got {_kind(data)}")
    _check_names(data, where)
    for name, value in data.items():
        if name in SIZE_LIMITS and value is not None:
            check_size(name, value, where)
        elif isinstance(value, dict) and name.endswith("_config") and _depth < _NESTED_CONFIG_DEPTH:
            check_config_fields(value, f"{where}{name}.", _depth + 1)
    check_consistency(data, where)


def check_required_fields(data: Mapping, reads: Mapping[str, str], where: str = "") -> None:
    """The automatic path: each of `reads` (canonical name -> the name the architecture reads) must be
    stated in `data`; transformers would otherwise fill in its default silently (4096 wide, 32 layers)."""
    for canonical, name in reads.items():
        if data.get(name) is None and _present(data, canonical) is None:
            raise ModelConfigError(f"config.json field {where + name!r} is missing: the automatic decomposition "
                                   "needs it (it is not guessed)")


def parse_config_json(content: bytes | str, where: str) -> dict:
    """The JSON object of a config.json's content; ModelConfigError naming `where` when it is too large,
    not JSON, nested deeper than MAX_JSON_DEPTH, or not an object."""
    size = len(content)
    if size > MAX_CONFIG_BYTES:
        raise ModelConfigError(f"{where} is {size:,} bytes: a config.json is at most {MAX_CONFIG_BYTES:,} bytes "
                               "(real ones are a few kB)")
    try:
        data = json.loads(content)
    except json.JSONDecodeError as error:
        raise ModelConfigError(f"{where} is not valid JSON: {error.msg} at line {error.lineno}, "
                               f"column {error.colno}") from None
    except RecursionError:
        raise ModelConfigError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError) as error:      # e.g. an integer of more than 4300 digits
        raise ModelConfigError(f"{where} cannot be read as JSON: {shown(str(error))}") from None
    if json_depth(data) > MAX_JSON_DEPTH:
        raise ModelConfigError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    if not isinstance(data, dict):
        raise ModelConfigError(f"{where} must hold a JSON object, not {_kind(data)}")
    return data


def json_depth(value: Any) -> int:
    """Nesting depth of lists and objects, without recursion (a 10,000-deep value is fine)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, depth)
            if depth > MAX_JSON_DEPTH:
                return depth
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest
