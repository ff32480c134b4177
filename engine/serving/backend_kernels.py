"""The `realistic` kernel timing a serving backend's runs use: its framework's 4-bit MoE classes.

A backend whose profile sets `moe_4bit_classes` (engine/serving/backends.py) times grouped GEMMs of 4-bit expert
weights with the classes fitted on its own framework's MoE tables (engine/estimators/moe_4bit.FRAMEWORK_FORMATS,
RealisticConstants.moe_4bit_formats); every other backend, and every method but `realistic` / `realistic-graph`,
keeps the method as it is. One Method per (method, backend) is kept, so the estimator's per-structure memo (keyed
by the constants' identity) stays valid.

No shipped backend sets it: with each backend's classes the 4-bit serving runs score worse leave-one-system-out
(TPOT p90 34.5% -> 39.4%, TTFT p90 79.6% -> 82.9%: docs/accuracy.md, "MoE grouped GEMMs in 4-bit formats, fitted").
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache, partial

from engine.estimators import Method, cached_decomposition, get_method, with_collectives
from engine.estimators.moe_4bit import framework_formats
from engine.estimators.realistic import DEFAULT_CONSTANTS, estimate_realistic
from engine.serving.backends import backend_profile

LAUNCHES = {"realistic": "eager", "realistic-graph": "graph"}


def backend_method(method: Method, backend: str) -> Method:
    """`method` as `backend` runs it: with its framework's 4-bit MoE classes where the backend's profile asks for
    them and the method is realistic (eager or graph launch); else `method` itself."""
    if method.name not in LAUNCHES or not backend_profile(backend).moe_4bit_classes:
        return method
    return _four_bit_method(method.name, backend_profile(backend).name)


@lru_cache(maxsize=None)
def _four_bit_method(name: str, backend: str) -> Method:
    constants = replace(DEFAULT_CONSTANTS, moe_4bit_formats=dict(framework_formats(backend)))
    estimate = with_collectives(partial(estimate_realistic, launch=LAUNCHES[name], constants=constants))
    return Method(name, f"{get_method(name).description} 4-bit MoE experts: {backend}'s classes.",
                  cached_decomposition, estimate)
