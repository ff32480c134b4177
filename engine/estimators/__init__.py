"""Estimation methods: each pairs a decomposition with a way to time its kernels.

Every method returns the same result columns (time_s, compute_time_s, memory_time_s, bound,
intensity) so reports and charts compare them side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from engine.decompose import decompose_columns
from engine.decompose_seed import decompose_seed
from engine.estimators.roofline import estimate_roofline
from engine.estimators.seed_tiler import estimate_seed


@dataclass(frozen=True)
class Method:
    name: str
    description: str
    decompose: Callable[..., object]                    # (model, scenario) -> kernel table
    estimate: Callable[..., dict]                       # (table, hardware, scenario) -> columns


METHODS: dict[str, Method] = {
    "roofline": Method(
        "roofline",
        "Per kernel max(FLOP / peak of its unit and dtype, bytes / memory bandwidth); every operand's bytes.",
        decompose_columns, estimate_roofline,
    ),
    "seed": Method(
        "seed",
        "The seed notebook's theoretical tiler on its own decomposition, reproduced exactly (slips included).",
        decompose_seed, estimate_seed,
    ),
}


def get_method(name: str) -> Method:
    key = str(name).strip().lower()
    if key not in METHODS:
        raise ValueError(f"unknown method {name!r}; expected one of {', '.join(METHODS)}")
    return METHODS[key]
