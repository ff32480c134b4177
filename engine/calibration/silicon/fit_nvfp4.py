"""nvfp4 GEMMs on the tables: the k loop's cycles per framework (issue 12, h/nvfp4, docs/accuracy.md).

The tables' nvfp4 kernels walk k at different speeds per framework: at m <= 16 TensorRT-LLM's time is flat in n up to
one wave and linear in k (~3.4 core cycles per k value on B200: 100 us at k = 51,200), FlashInfer's (vLLM, SGLang) ~1.1
cycles per k value. One gemm_k_step_cycles for every framework cannot follow both, so after fit.py's descent (one
k-step value for every framework, K_STEP_CYCLES_GRIDS) each framework's value is chosen over the grid with the others
held, and the descent is run once more with those values held. A property of the framework's kernel, like its quantize
kernel; it applies in the tables' (warm) condition only, as gemm_k_step_cycles does.
"""

from __future__ import annotations

import numpy as np

from engine.calibration.fit import objective
from engine.calibration.silicon.fit_grids import NO_SPLIT_K_DTYPES

K_STEP_BY_FRAMEWORK_DTYPES = ("nvfp4",)    # table dtypes whose k-step cycles are fitted per framework


def table_dtype(groups: list) -> str:
    """The tables' dtype of `groups` (DeviceGemms of one dtype; nvfp4, where the GEMM rows carry its compute format)."""
    return str(groups[0].shapes["dtype"].iloc[0])


def no_split_k_mask(terms: dict, rows, warm: bool) -> np.ndarray | None:
    """1 x candidates: inf on the split-K candidates (tiling.candidate_terms' `terms`) where the rows' tables dtype
    takes none (fit_grids.NO_SPLIT_K_DTYPES: nvfp4, its kernels never split k) in the warm condition, else None."""
    if not (warm and "dtype" in rows and str(rows["dtype"].iloc[0]) in NO_SPLIT_K_DTYPES):
        return None
    return np.where(terms["split_k"] > 1, np.inf, 0.0)


def excluding(excluded: np.ndarray | None, more: np.ndarray | None) -> np.ndarray | None:
    """Two candidate exclusions (inf where excluded, None: none) as one."""
    return excluded if more is None else more if excluded is None else excluded + more


def predicted(groups: list, fitted: tuple, step) -> np.ndarray:
    """fit_dtype_clock_block_scaled's `fitted` values on `groups` with gemm_k_step_cycles `step` (a float, or
    {framework: cycles})."""
    return np.concatenate([g.predicted_clock(*fitted[:5], fitted[6], step, quantize_latency=fitted[5],
                                             quantize_bytes=fitted[7],
                                             native_scale_cycles=fitted[9].get(g.framework, 0.0)) for g in groups])


def k_step_by_framework(groups: list, fitted: tuple, grid, rounds: int = 2) -> dict:
    """{framework: k-step cycles} over `grid` minimising the pooled objective, every other constant of `fitted` held
    (start: its one value for every framework)."""
    measured = np.concatenate([g.measured for g in groups])
    steps = {f: float(fitted[8]) for f in sorted({g.framework for g in groups})}
    for _ in range(rounds):
        for framework in steps:
            steps[framework] = float(min(grid, key=lambda s: objective(
                predicted(groups, fitted, {**steps, framework: float(s)}), measured)))
    return steps
