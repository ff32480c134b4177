"""The `realistic` kernel timing a serving backend's runs use: its framework's 4-bit kernels.

A backend whose profile sets `moe_4bit_classes` (engine/serving/backends.py) times grouped GEMMs of 4-bit expert
weights with the classes fitted on its own framework's MoE tables (engine/estimators/moe_4bit.FRAMEWORK_FORMATS,
RealisticConstants.moe_4bit_formats); one whose profile sets `fp4_quantize_latency_s` charges that fixed time to the
kernel that quantizes a dense nvfp4 GEMM's activations (its framework's, fitted on its nvfp4 GEMM tables:
engine/calibration/silicon/conditions.TABLE_QUANTIZE_LATENCY_S; RealisticConstants.gemm_quantize_latency_s["fp4"]).
Every other backend, and every method but `realistic` / `realistic-graph`, keeps the method as it is. One Method per
(method, backend) is kept, so the estimator's per-structure memo (keyed by the constants' identity) stays valid.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache, partial

from engine.estimators import Method, cached_decomposition, get_method, with_collectives
from engine.estimators.moe_4bit import framework_formats
from engine.estimators.realistic import DEFAULT_CONSTANTS, estimate_realistic
from engine.serving.backends import backend_profile

LAUNCHES = {"realistic": "eager", "realistic-graph": "graph"}
FP4_ROW_DTYPE = "fp4"     # nvfp4 x nvfp4 GEMM rows carry their compute format (engine/hardware/dtypes.gemm_dtype)


def backend_method(method: Method, backend: str) -> Method:
    """`method` as `backend` runs it: with its framework's 4-bit MoE classes and nvfp4 quantize kernel where the
    backend's profile sets them and the method is realistic (eager or graph launch); else `method` itself."""
    if method.name not in LAUNCHES:
        return method
    profile = backend_profile(backend)
    if not profile.moe_4bit_classes and profile.fp4_quantize_latency_s is None:
        return method
    return _backend_method(method.name, profile.name, profile.moe_4bit_classes, profile.fp4_quantize_latency_s)


def backend_constants(backend: str):
    """DEFAULT_CONSTANTS with `backend`'s 4-bit MoE classes and nvfp4 quantize latency where its profile sets them."""
    profile = backend_profile(backend)
    return _constants(profile.name, profile.moe_4bit_classes, profile.fp4_quantize_latency_s)


@lru_cache(maxsize=None)
def _constants(framework: str, moe_4bit_classes: bool, fp4_quantize_latency_s: float | None):
    changes = {}
    if moe_4bit_classes:
        changes["moe_4bit_formats"] = dict(framework_formats(framework))
    if fp4_quantize_latency_s is not None:
        changes["gemm_quantize_latency_s"] = {**DEFAULT_CONSTANTS.gemm_quantize_latency_s,
                                              FP4_ROW_DTYPE: float(fp4_quantize_latency_s)}
    return replace(DEFAULT_CONSTANTS, **changes) if changes else DEFAULT_CONSTANTS


@lru_cache(maxsize=None)
def _backend_method(name: str, backend: str, moe_4bit_classes: bool, fp4_quantize_latency_s: float | None) -> Method:
    """One Method per (method, backend, settings): a profile changed in place (tests) gets its own."""
    constants = _constants(backend, moe_4bit_classes, fp4_quantize_latency_s)
    estimate = with_collectives(partial(estimate_realistic, launch=LAUNCHES[name], constants=constants))
    return Method(name, f"{get_method(name).description} 4-bit kernels: {backend}'s.", cached_decomposition, estimate)
