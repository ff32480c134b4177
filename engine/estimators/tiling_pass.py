"""The tile search of one pass's GEMMs with what does not depend on m kept (fast path, issue 15).

A prefill sweep (1024, 1025, ... tokens) gives a pass's GEMMs a new m every call while n, k, batch, the rows' MAC
rates and the device stay: `pass_tilings` keeps per (n, k, batch, per-core rate, bytes per value, device tiles, SRAM,
cores, GemmRates' scalars) a `PassPlan` of every candidate's terms without m, then computes per call only what m
changes, in fewer numpy calls than tiling._choose: products of integers are formed once per plan where they are exact
(the tiles' MAC counts tile_m x tile_n x k_slice and batch x tile_m x tile_n x k), the split-K reduction's latency
column and the partial sums' zero factor (non-split candidates: 0.0 x m x n x batch, +0.0 where m > 0 and n, batch
are finite) are kept, and the chosen candidate's values are taken from the stacked candidate arrays in one `take`.

Every value is bit for bit tiling._choose's: each kept product is of integers whose every partial product is exact
(below 2**53, checked per call against the rows' largest m), so reordering it changes no bit; every other operation is
tiling's own, in its order. Rows outside those guards (fractional n, k or batch, m <= 0 or not finite, a product that
could round) return None and the caller takes tiling.choose_tilings (tests/test_tiling_pass.py compares the two over
many shapes, devices and constants).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from engine.common.kept import touch, trim
from engine.estimators.tiling import PARTIAL_SUM_BYTES, TILE_K, GemmRates, Tiling, tile_candidates
from engine.hardware.device import Hardware

KEPT = 64
EXACT = 2.0 ** 53          # integers up to this are exact doubles
_KEPT: OrderedDict = OrderedDict()
# the candidate arrays stacked for the one take, in this order (the Tiling fields they fill)
_STACKED = ("tiles", "waves", "padded_compute_s", "wave_compute_s", "compute_s", "memory_s", "peak_memory_s", "time_s")


@dataclass(frozen=True, slots=True)
class PassPlan:
    """One pass's GEMMs' candidate terms without m (rows x candidates, or 1 x candidates)."""

    tile_m: np.ndarray          # 1 x C
    n_tiles: np.ndarray         # ceil(n / tile_n)
    batch_split: np.ndarray     # batch x split_k
    cores: int
    partial_scale: np.ndarray   # 2 x PARTIAL_SUM_BYTES x split_k on split-K candidates, 0.0 on the others
    n: np.ndarray               # rows x 1
    batch: np.ndarray           # rows x 1
    padded_macs: np.ndarray     # batch x tile_m x tile_n x k: the MACs of one output tile's column of the batch
    tile_macs: np.ndarray       # tile_m x tile_n x k_slice: one tile's MACs (1 x C or R x C)
    per_core: np.ndarray        # rows x 1
    all_cores: np.ndarray       # per_core x cores (rows x 1)
    split_latency: np.ndarray | None    # where(split_k > 1, split_k_latency_s, 0.0), None: no split-K latency
    k_loop_steps: np.ndarray    # ceil(ceil(k / split_k) / TILE_K)
    tie_break: np.ndarray
    choices: np.ndarray         # 3 x C: tile_m, tile_n, split_k
    offsets: np.ndarray         # len(_STACKED) x rows: where each row's candidates start in the stacked arrays
    m_limit: list               # per row: the largest ceil(m / smallest tile_m) whose products stay exact


def pass_tilings(m, n, k, batch, nbytes, per_core, value_bytes: float, hardware: Hardware,
                 rates: GemmRates) -> Tiling | None:
    """tiling.choose_tilings of a short table of one bytes-per-value (1-D float arrays over its GEMM rows), bit for bit,
    or None where the rows are outside this path's guards (see the module)."""
    plan = _plan(n, k, batch, per_core, value_bytes, hardware, rates)
    if plan is None:
        return None
    smallest = plan.tile_m[0].min()
    for value, limit in zip(m.tolist(), plan.m_limit):
        if not (0.0 < value < EXACT) or math.ceil(value / smallest) > limit:
            return None
    return _choose(plan, m.reshape(-1, 1), nbytes.reshape(-1, 1), rates)


def _choose(plan: PassPlan, m, nbytes, rates: GemmRates) -> Tiling:
    """tiling._choose with the plan's kept terms (see the module: the same values, fewer numpy calls)."""
    output_tiles = np.ceil(np.divide(m, plan.tile_m)) * plan.n_tiles
    tiles = output_tiles * plan.batch_split
    waves = np.ceil(np.divide(tiles, plan.cores))
    partial_sums = plan.partial_scale * m * plan.n * plan.batch
    padded_s = output_tiles * plan.padded_macs / plan.all_cores
    wave_peak_s = waves * plan.tile_macs / plan.per_core
    peak_memory_s = (nbytes + partial_sums) / rates.bandwidth_bytes_per_s
    compute = wave_peak_s / rates.matrix_fraction
    if np.isfinite(rates.power_macs_per_s):
        compute = np.maximum(compute, tiles * plan.tile_macs / rates.power_macs_per_s)
    memory = peak_memory_s / rates.memory_fraction
    time = rates.latency_s + np.maximum(compute, memory)
    if rates.overlap_loss:
        time = time + rates.overlap_loss * np.minimum(compute, memory)
    if plan.split_latency is not None:
        time = time + plan.split_latency
    if rates.k_step_s:
        time = time + rates.k_step_s * (waves * plan.k_loop_steps)
    best = np.argmin(time * plan.tie_break, axis=1)
    stacked = np.concatenate((tiles, waves, padded_s, wave_peak_s, compute, memory, peak_memory_s, time))
    tiles, waves, padded_s, wave_peak_s, compute, memory, peak_memory_s, time = stacked.take(plan.offsets + best)
    tile_m, tile_n, split_k = plan.choices.take(best, axis=1)
    overlap = rates.overlap_loss * np.minimum(compute, memory)
    if rates.k_step_s:
        overlap = overlap + rates.k_step_s * (waves * plan.k_loop_steps.take(plan.offsets[0] + best))
    return Tiling(tile_m=tile_m, tile_n=tile_n, split_k=split_k, tiles=tiles, waves=waves, padded_compute_s=padded_s,
                  wave_compute_s=wave_peak_s, compute_s=compute, peak_memory_s=peak_memory_s, memory_s=memory,
                  time_s=time, overlap_s=overlap)


def _plan(n, k, batch, per_core, value_bytes: float, hardware: Hardware, rates: GemmRates) -> PassPlan | None:
    key = (n.tobytes(), k.tobytes(), batch.tobytes(), per_core.tobytes(), float(value_bytes), hardware.gemm_tile_shapes,
           hardware.sram_per_core_bytes, hardware.num_cores, rates.matrix_fraction, rates.bandwidth_bytes_per_s,
           rates.memory_fraction, rates.latency_s, rates.split_k_latency_s, rates.power_macs_per_s, rates.overlap_loss,
           rates.k_step_s)
    try:
        plan = _KEPT.get(key, False)
    except TypeError:          # an unhashable device field: no plan
        return None
    if plan is not False:
        touch(_KEPT, key)
        return plan
    plan = _new_plan(n, k, batch, per_core, value_bytes, hardware, rates)
    _KEPT[key] = plan
    trim(_KEPT, KEPT)
    return plan


def _new_plan(n, k, batch, per_core, value_bytes: float, hardware: Hardware, rates: GemmRates) -> PassPlan | None:
    """The plan of these rows, or None where a kept product could round (n, k or batch not whole numbers >= 1)."""
    for values in (n, k, batch):
        if not all(math.isfinite(v) and v >= 1.0 and v == math.floor(v) for v in values.tolist()):
            return None
    n, k, batch, per_core = (values.reshape(-1, 1) for values in (n, k, batch, per_core))
    tile_m, tile_n, split_k = (c[None, :] for c in tile_candidates(hardware, value_bytes))
    rows, count = len(n), tile_m.shape[1]
    k_slice = np.ceil(k / split_k)
    n_tiles = np.ceil(np.divide(n, tile_n))
    batch_split = np.multiply(batch, split_k)
    tile_macs = tile_m * tile_n * k_slice
    padded_macs = batch * tile_m * tile_n * k
    # every kept product, and every partial product of tiling's order, is at most ceil(m / tile_m) x n_tiles x this
    largest = np.maximum(padded_macs, batch_split * tile_macs) * n_tiles
    if not np.all(largest < EXACT):
        return None
    m_limit = [math.floor(EXACT / value) for value in largest.max(axis=1).tolist()]
    split = split_k > 1
    plan = PassPlan(
        tile_m=tile_m, n_tiles=n_tiles, batch_split=batch_split, cores=hardware.num_cores,
        partial_scale=np.where(split, 2.0 * PARTIAL_SUM_BYTES * split_k, 0.0), n=n, batch=batch,
        padded_macs=padded_macs, tile_macs=tile_macs, per_core=per_core, all_cores=per_core * hardware.num_cores,
        split_latency=np.where(split, rates.split_k_latency_s, 0.0) if rates.split_k_latency_s else None,
        k_loop_steps=np.ceil(k_slice / TILE_K), tie_break=1.0 + 1e-9 * np.arange(count),
        choices=np.concatenate((tile_m, tile_n, split_k)),
        offsets=(np.arange(len(_STACKED))[:, None] * rows + np.arange(rows)[None, :]) * count, m_limit=m_limit)
    for name in plan.__slots__:
        value = getattr(plan, name)
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
    return plan


def clear() -> None:
    _KEPT.clear()
