"""The hash of a frozen pydantic model, computed once per object (fast path, issue 15).

Hardware and ModelConfig are frozen pydantic models used as cache keys (the estimate, decomposition, layer-weight
and device-rate caches): pydantic hashes every field value on each call (a few microseconds for a model with
tuples per layer), several times per estimate. `hash_once` keeps each object's hash, computed as pydantic computes
it (the field values in field order), until the object is freed; equal objects still hash alike, and a what-if
edit makes a new object with its own hash.
"""

from __future__ import annotations

import weakref
from operator import itemgetter

_HASHES: dict[int, int] = {}       # id(object) -> hash, while the object lives
_GETTERS: dict[type, itemgetter] = {}


def hash_once(model) -> int:
    """hash(model) as pydantic's frozen models compute it, kept for the object's lifetime."""
    key = id(model)
    value = _HASHES.get(key)
    if value is None:
        cls = type(model)
        getter = _GETTERS.get(cls)
        if getter is None:
            getter = _GETTERS[cls] = itemgetter(*cls.model_fields)
        value = hash(getter(model.__dict__))
        _HASHES[key] = value
        weakref.finalize(model, _HASHES.pop, key, None)    # before the id can be reused
    return value
