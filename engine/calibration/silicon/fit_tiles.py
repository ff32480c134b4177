"""The tiles the tables' fp8 kernels take at m > LARGE_M_ROWS on matrix units without native block scales
(Hopper), chosen per framework inside each leave-one-device-out fold (h/gemm12, docs/accuracy.md).

The model's tile search (tiling.candidate_times) picks the fastest tile and split-K for every shape. SGLang's and
vLLM's per-tensor fp8 CUTLASS kernels likely pick their tile by m instead (a 128-row tile, no split-K above 128 rows),
so at m in (128, 1k] the free search ran them 8-28% faster than measured on Hopper. A rule (fit_grids.LARGE_M_TILE_RULES)
removes the candidates the framework's kernel does not take on rows with m > LARGE_M_ROWS; each fold picks, per
framework, the rule of the least pooled objective on its training rows, every fitted constant held. Matrix units with
native block scales (Blackwell) keep the free search, so folds that hold out a Blackwell are unchanged.
Since h/gemm13 the block-scaled fp8 tables too (fp8_g128: TensorRT-LLM's and SGLang's kernels), where a rule comes
with the framework's promotion refitted (the descent fitted it under the free search's tiles).
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from engine.calibration.fit import objective
from engine.calibration.silicon.fit_grids import BLOCK_SCALE_FLOPS_GRID, LARGE_M_ROWS, LARGE_M_TILE_RULES


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


def fit_large_m_tiles(groups: list, fitted: tuple, refit_promotion: bool = True,
                      rounds: int = 2) -> tuple[dict, tuple]:
    """({framework: rule} of the eligible groups' frameworks minimising the pooled objective over `groups` (the
    training devices' DeviceGemms), `fitted` with its promotion per framework as chosen with the rule):
    `fitted` (fit_dtype_clock_block_scaled's values, quantize refitted) is held, except that a framework with a
    vector-unit promotion (fitted[6]: fp8_g128 on Hopper) takes each rule other than the free search with its
    promotion refitted over BLOCK_SCALE_FLOPS_GRID (where `refit_promotion`, fit.RULE_REFITS_PROMOTION; h/gemm13):
    the descent fitted it under the free search's tiles, which a rule's larger tiles replace."""
    frameworks = sorted({g.framework for g in groups if g.large_m_eligible})
    rules, held = {f: "" for f in frameworks}, dict(fitted[6])
    block = dict(held)
    measured = np.concatenate([g.measured for g in groups])

    def score(candidate: dict, promotion: dict) -> float:
        with large_m_tiles(groups, candidate):
            predicted = np.concatenate([g.predicted_clock(*fitted[:5], promotion, fitted[8], quantize_latency=fitted[5],
                                                          quantize_bytes=fitted[7],
                                                          native_scale_cycles=fitted[9].get(g.framework, 0.0))
                                        for g in groups])
        return objective(predicted, measured)

    def option(framework: str, rule: str) -> tuple[float, dict]:
        """(objective, promotion) of `framework` taking `rule`, the other frameworks' rules and promotions held."""
        candidate = {**rules, framework: rule}
        if not (rule and refit_promotion and framework in held):
            promotion = {**block, framework: held[framework]} if framework in held else block
            return score(candidate, promotion), promotion
        flops = min(BLOCK_SCALE_FLOPS_GRID, key=lambda b: score(candidate, {**block, framework: float(b)}))
        promotion = {**block, framework: float(flops)}
        return score(candidate, promotion), promotion
    for _ in range(rounds):
        for framework in frameworks:
            options = {rule: option(framework, rule) for rule in LARGE_M_TILE_RULES}
            rules[framework] = min(LARGE_M_TILE_RULES, key=lambda r: options[r][0])
            block = options[rules[framework]][1]
    return rules, fitted[:6] + (block,) + fitted[7:]
