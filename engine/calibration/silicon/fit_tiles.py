"""The tiles the tables' per-tensor fp8 kernels take at m > LARGE_M_ROWS on matrix units without native block scales
(Hopper), chosen per framework inside each leave-one-device-out fold (h/gemm12, docs/accuracy.md).

The model's tile search (tiling.candidate_times) picks the fastest tile and split-K for every shape. SGLang's and
vLLM's per-tensor fp8 CUTLASS kernels likely pick their tile by m instead (a 128-row tile, no split-K above 128 rows),
so at m in (128, 1k] the free search ran them 8-28% faster than measured on Hopper. A rule (fit_grids.LARGE_M_TILE_RULES)
removes the candidates the framework's kernel does not take on rows with m > LARGE_M_ROWS; each fold picks, per
framework, the rule of the least pooled objective on its training rows, every fitted constant held. Matrix units with
native block scales (Blackwell) keep the free search, so folds that hold out a Blackwell are unchanged.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from engine.calibration.fit import objective
from engine.calibration.silicon.fit_grids import LARGE_M_ROWS, LARGE_M_TILE_RULES


def excluded_candidates(terms: dict, m: np.ndarray, rule: str) -> np.ndarray | None:
    """Rows x candidates: inf where `rule` removes a tiling candidate (tiling.candidate_terms' `terms`) of a row with
    m > LARGE_M_ROWS, else 0; None for the free search ("")."""
    if rule not in LARGE_M_TILE_RULES:
        raise ValueError(f"large-m tile rule: {rule!r}, expected one of {LARGE_M_TILE_RULES}")
    if not rule:
        return None
    removed = terms["split_k"] > 1
    if rule == "tile_m":
        removed = removed | (terms["tile_m"] < LARGE_M_ROWS)
    else:       # "square"
        removed = removed | (terms["tile_m"] != LARGE_M_ROWS) | (terms["tile_n"] != LARGE_M_ROWS)
    if not removed.any():       # the device has no such tile: the rule does not apply
        return None
    return np.where((np.asarray(m, dtype=float).reshape(-1, 1) > LARGE_M_ROWS) & removed, np.inf, 0.0)


@contextmanager
def large_m_tiles(groups: list, rules: dict):
    """Within the block, each eligible group (DeviceGemms.large_m_eligible) takes its framework's rule ({framework:
    rule}; absent: ""): its large_m_tile and the candidates it excludes (DeviceGemms.excluded, excluded_candidates);
    afterwards every group is back to the free search."""
    try:
        for g in groups:
            g.large_m_tile = rules.get(g.framework, "") if g.large_m_eligible else ""
            g.excluded = excluded_candidates(g.model.terms, g.shapes["m"].to_numpy(), g.large_m_tile)
        yield
    finally:
        for g in groups:
            g.large_m_tile, g.excluded = "", None


def fit_large_m_tiles(groups: list, fitted: tuple, rounds: int = 2) -> dict:
    """{framework: rule} of the eligible groups' frameworks minimising the pooled objective over `groups` (the
    training devices' DeviceGemms), `fitted` (fit_dtype_clock_block_scaled's values, quantize refitted) held."""
    frameworks = sorted({g.framework for g in groups if g.large_m_eligible})
    rules = {f: "" for f in frameworks}
    measured = np.concatenate([g.measured for g in groups])

    def score(candidate: dict) -> float:
        with large_m_tiles(groups, candidate):
            predicted = np.concatenate([g.predicted_clock(*fitted[:5], fitted[6], fitted[8], quantize_latency=fitted[5],
                                                          quantize_bytes=fitted[7],
                                                          native_scale_cycles=fitted[9].get(g.framework, 0.0))
                                        for g in groups])
        return objective(predicted, measured)
    for _ in range(rounds):
        for framework in frameworks:
            rules[framework] = min(LARGE_M_TILE_RULES, key=lambda r: score({**rules, framework: r}))
    return rules
