"""Causal flash prefill (FlashAttention-style) of one fused attention group: tiles, waves and fixed work.

Query tiles of FLASH_BLOCK_Q rows (64 from head dim 256) over key tiles of FLASH_BLOCK_K, causal: the work is padded
to whole tiles (the diagonal tiles run in full), spread over the cores in CTAs of one (head, query tile); the largest
CTA (the last query tile) bounds the time from below. engine/estimators/fused_attention.py's fused_times takes
_prefill_work's padded MACs, waves and fixed cycles.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from engine.common.arrays import any_true
from engine.common.float_or_array import ceil, maximum, minimum, power, rint, where
from engine.kernels.attention_window import causal_pairs

FLASH_BLOCK_Q = 128        # FlashAttention-2 forward tile for head_dim <= 128 (query rows); 64 from head_dim 256
FLASH_BLOCK_K = 64         # ... and key columns


def _ceil_to(x, multiple):
    return ceil(x / multiple) * multiple


def query_tokens(m, k, n, batch, macs, window=None):
    """Query tokens per sequence of a causal Q*gK row, recovered from its shape and MACs.

    Q*gK has m = q x group, k = head_dim, n = context = prior + q, batch = sequences x kv_heads and
    MACs = batch x group x head_dim x (q x prior + q(q+1)/2), so q = 2 (n + 1/2 - MACs / (batch k m)).
    With a sliding window w (NaN: none) n = min(prior, w - 1) + q and every query attends at most w
    keys: a mean of w keys per query means prior >= w - 1 (q = n - w + 1); otherwise prior = n - q and
    the mean keys per query, which falls as q grows, is matched by bisection.
    """
    if m.__class__ is float:        # one group (a float; batch, k and m are at least 1, window None)
        q = rint(2.0 * (n + 0.5 - macs / (batch * k * m) * 1.0))
        return minimum(maximum(q, 1.0), maximum(n, 1.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        keys_per_query = macs / (batch * k * m) * 1.0           # pairs / q
        q = np.rint(2.0 * (n + 0.5 - keys_per_query))
    # np.clip(np.nan_to_num(q, nan=1.0), 1.0, max(n, 1)) in three ufuncs (infinities clip alike either way)
    q = np.minimum(np.maximum(np.where(q == q, q, 1.0), 1.0), np.maximum(n, 1.0))
    if window is None:
        return q
    window = np.broadcast_to(np.asarray(window, dtype=float), np.shape(q))
    windowed = np.isfinite(window) & (n > window)
    if not any_true(windowed):
        return q
    w, span, mean = window[windowed], n[windowed], np.nan_to_num(keys_per_query[windowed], nan=1.0)
    saturated = mean >= w - 1e-9
    low, high = np.ones_like(span), np.maximum(span, 1.0)
    while (high > low).any():       # the smallest q whose mean keys per query is at most the row's
        middle = np.floor((low + high) / 2.0)
        too_many = causal_pairs(middle, span - middle, w) / middle > mean * (1 + 1e-12)
        low, high = np.where(too_many, middle + 1.0, low), np.where(too_many, high, middle)
    q = np.array(q, dtype=float)
    q[windowed] = np.where(saturated, np.maximum(span - w + 1.0, 1.0), high)
    return q


def prefill_tiles(q, k, n, window):
    """(query tile rows, query tiles, padded (query, key) pairs, keys of the last tile) of causal flash prefill:
    the key span of each query tile rounded up to whole key tiles; a sliding window's query tiles skip the key
    tiles outside their band of window + FLASH_BLOCK_Q - 1 keys."""
    BQ = where(k >= 256, FLASH_BLOCK_Q / 2, FLASH_BLOCK_Q)     # 64-row query tiles from head dim 256 (SRAM)
    prior = n - q
    blocks = ceil(q / BQ)
    last = _ceil_to(prior + q, FLASH_BLOCK_K)
    first = _ceil_to(prior, FLASH_BLOCK_K)   # query tile b < blocks - 1 spans first + BQ (b + 1) keys
    padded_pairs = BQ * ((blocks - 1) * first + BQ * blocks * (blocks - 1) / 2.0 + last)
    if window is not None and any_true(np.isfinite(window)):
        band = _ceil_to(np.nan_to_num(window, nan=0.0) + BQ - 1, FLASH_BLOCK_K)
        below = np.clip(np.floor((band - first) / BQ), 0.0, blocks - 1)    # tiles narrower than the band
        banded = BQ * (below * first + BQ * below * (below + 1) / 2.0
                                  + (blocks - 1 - below) * band + np.minimum(last, band))
        windowed = np.isfinite(window)
        padded_pairs = np.where(windowed, banded, padded_pairs)
        last = np.where(windowed, np.minimum(last, band), last)
    return BQ, blocks, padded_pairs, last


# Blackwell's (B200, GB200) dense fp4 matrix MACs per core cycle: the baseline of softmax_rate_scale
BLACKWELL_FP4_MACS_PER_CORE_CYCLE = 16384.0


def softmax_rate_scale(hardware) -> float:
    """A core's softmax rate (its exponentials per cycle) relative to its generation's baseline, from the workbook:
    the fp4 matrix MACs per core cycle over Blackwell's (BLACKWELL_FP4_MACS_PER_CORE_CYCLE), at least 1 (1 without an
    fp4 rate). Blackwell Ultra (B300, GB300: 24,576, 1.5) doubled the special-function units' exponential rate for
    attention as it raised the fp4 rate 1.5x over Blackwell's; the workbook has no special-function field, so the
    core's fp4 rate stands for it: a generation marker as much as a mechanism (A100, Hopper, B200, RTX PRO 6000: 1).
    AIConfigurator's tables: B300 and GB300 run long prefills 15-28% faster than B200 and GB200 at equal cores and
    clocks, more at small head dims. (It was the fp4 over 4x the bf16 rate, the same 1.5 and 1 on every workbook
    device, but a higher bf16 rate then slowed the softmax: GB300 with 1.5x its bf16 rate ran an fp8-cache prefill's
    attention 18% slower.)"""
    fp4 = hardware.matrix_macs_per_cycle_per_core_fp4
    return max(1.0, fp4 / BLACKWELL_FP4_MACS_PER_CORE_CYCLE) if fp4 else 1.0


def prefill_work(shapes, rates, overheads) -> dict:
    """Causal flash prefill of each group (fused_times' prefill branch): padded MACs, the time of its waves (the
    largest CTA bounds it from below) and its fixed cycles per key tile and per query-tile CTA."""
    m, k, n, batch, matrix_macs = shapes.m, shapes.k, shapes.n, shapes.batch, shapes.matrix_macs
    per_core, cores = rates.macs_per_s_per_core, rates.cores
    q = query_tokens(m, k, n, batch, matrix_macs / 2.0 if shapes.score_macs is None else shapes.score_macs,
                     shapes.window)
    heads = batch * m / q
    BQ, blocks, padded_pairs, last = prefill_tiles(q, k, n, shapes.window)
    padded_prefill = maximum(2.0 * heads * k * padded_pairs, matrix_macs)
    largest_cta = 2.0 * BQ * k * last
    mean_cta = padded_prefill / cores
    if overheads.prefill_largest_cta_share:
        # CTAs of unequal causal spans listed over the cores: beyond one wave the kernel takes the cores' mean work
        # + a share of the largest CTA (Graham's list-scheduling bound: the mean + the largest); one wave or less
        # (a CTA per core), the largest CTA alone
        beyond = where(heads * blocks > cores, overheads.prefill_largest_cta_share, 0.0)
        mean_cta = mean_cta + beyond * largest_cta
    waves_prefill = maximum(mean_cta, largest_cta) / per_core
    tile_iterations = heads * padded_pairs / (BQ * FLASH_BLOCK_K)
    softmax = rates.softmax_rate_scale
    share = overheads.prefill_cta_softmax_share
    cta_cycles = overheads.prefill_cta_cycles * power(minimum(q, BQ) / BQ, overheads.prefill_cta_rows_exponent)
    if share:
        cta_cycles = cta_cycles * (1.0 - share + share / softmax)
    cycles = tile_iterations * overheads.prefill_tile_cycles + heads * blocks * cta_cycles
    if overheads.prefill_score_vector_flops:
        # per padded (query, key) score, after the matrix work (not overlapped with it): the online softmax's vector
        # work at the vector units' FLOPs per core cycle (A100: 128, Hopper and Blackwell: 256) x the softmax scale
        vector_per_cycle = rates.vector_flops_per_s / (cores * rates.clock_hz) * softmax
        cycles = cycles + heads * padded_pairs * (overheads.prefill_score_vector_flops / vector_per_cycle)
    return {"padded": padded_prefill, "waves": waves_prefill, "cycles": cycles}


def prefill_terms(shapes, rates, overheads, kind_is_decode, any_decode) -> dict:
    """prefill_work of every group of fused_times' FusedShapes (only the kinds present are computed): where decode
    groups are present too (a request: one prefill group among ~1,000 decode steps), on the prefill groups alone,
    scattered back into arrays over all groups (0 at the decode groups, which fused_times takes from its decode
    terms). Element-wise, so each prefill group's values are bit for bit those of prefill_work over all groups."""
    if not any_decode:
        return prefill_work(shapes, rates, overheads)
    at = np.flatnonzero(~kind_is_decode)
    if at.size == 1:                # a request's one prefill group: in Python floats (float_or_array's contract)
        terms = _one_prefill_terms(shapes, rates, overheads, int(at[0]))
        if terms is not None:
            return {name: _scattered(kind_is_decode.size, int(at[0]), value) for name, value in terms.items()}
    subset = lambda values: values if values is None or np.ndim(values) == 0 else values[at]  # noqa: E731
    sub_shapes = shapes.__class__(**{field: subset(getattr(shapes, field)) for field in shapes.__slots__})
    sub_rates = replace(rates, macs_per_s_per_core=subset(rates.macs_per_s_per_core))
    terms = {}
    for name, values in prefill_work(sub_shapes, sub_rates, overheads).items():
        terms[name] = np.zeros(kind_is_decode.size)
        terms[name][at] = values
    return terms


def _one_prefill_terms(shapes, rates, overheads, index: int):
    """prefill_work of group `index` alone, as floats (None where its window is set or a float operation has no exact
    numpy equivalent: the arrays then say what it gives)."""
    pick = lambda values: values if values is None or np.ndim(values) == 0 else float(values[index])  # noqa: E731
    window = pick(shapes.window)
    if window is not None and window == window:        # a sliding window: the arrays
        return None
    one = shapes.__class__(decode=False, window=None,
                           **{field: pick(getattr(shapes, field)) for field in shapes.__slots__
                              if field not in ("decode", "window")})
    try:
        return prefill_work(one, replace(rates, macs_per_s_per_core=pick(rates.macs_per_s_per_core)), overheads)
    except ArithmeticError:
        return None


def _scattered(size: int, index: int, value) -> np.ndarray:
    values = np.zeros(size)
    values[index] = value
    return values
