"""The model axis of a sweep: several models as {id: model} or a list, or ids loaded by engine.load_model.

    engine.sweep_grid({"gpt2": gpt2, "llama": llama}, scenario, {"batch": [1, 8]}, hardware=h100)
    engine.sweep_grid(["openai-community/gpt2", "meta-llama/Llama-3.1-8B"], scenario, {"batch": [1, 8]}, ...)

Either adds a categorical `model` column (the first field, so it varies slowest) unless the grid names
`model` itself; a grid's `model` values are looked up in the mapping first, then loaded by id. An id that
cannot be loaded raises GridError naming it.
"""

from __future__ import annotations

from typing import Mapping, Optional

from engine.common.errors import GridError, one_line

MODEL_FIELD = "model"


def model_choices(model) -> Optional[dict]:
    """{id: model} when `model` names several models (a mapping, or a list of models and ids), else None.
    A list's ids are loaded with engine.load_model (GridError naming the id when it cannot be)."""
    if isinstance(model, Mapping):
        if not model:
            raise GridError("model: an empty mapping; expected {model id: model}")
        return {str(name): value for name, value in model.items()}
    if not isinstance(model, (list, tuple)):
        return None
    if not model:
        raise GridError("model: an empty list; expected model ids or models")
    choices = {}
    for item in model:
        if isinstance(item, str):
            choices[item] = _load_model_id(item)
        else:
            choices[str(item.name)] = item
    return choices


def _load_model_id(name: str):
    from engine.models import load_model
    try:
        return load_model(name)
    except (KeyError, ValueError, OSError) as error:
        raise GridError(f"grid field 'model': model {name!r} cannot be loaded: {one_line(error)}") from None


def point_models(points: dict, n: int, model) -> list:
    """The model of every point: from `model` ({id: model} when several), else loaded by id."""
    if MODEL_FIELD not in points:
        if model is None:
            raise GridError("no model: pass one or sweep the 'model' field")
        return [model] * n
    known = model if isinstance(model, dict) else {}
    names = [str(name) for name in points[MODEL_FIELD].tolist()]
    loaded = {name: known[name] if name in known else _load_model_id(name) for name in dict.fromkeys(names)}
    return [loaded[name] for name in names]
