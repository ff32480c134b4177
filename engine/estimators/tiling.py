"""Discrete GEMM tilings: tile and wave quantization, split-K, chosen per GEMM over all candidates.

A GEMM C[m,n] = A[m,k] @ B[k,n] runs as CTA tiles of tile_m x tile_n outputs (the shapes the
device's kernels use, `Hardware.gemm_tile_shapes`); split-K cuts k into `split_k` slices that
run as separate tiles and add their fp32 partial sums. One core runs one tile at a time, so

    tiles = ceil(m / tile_m) * ceil(n / tile_n) * batch * split_k       (tile quantization)
    waves = ceil(tiles / cores)                                          (wave quantization)

Seed 002's example: A100 (108 SMs), 256x128 tiles, m = n = 1792 gives 7 * 14 = 98 tiles in one
wave; 1793 gives 8 * 15 = 120 tiles, two waves.

`choose_tilings` evaluates every (tile, split-K) candidate for every GEMM at once (numpy arrays
of rows x candidates; identical shapes are evaluated once) and keeps the fastest, as a GEMM
library's heuristics try to.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from engine.common.arrays import all_true
from engine.estimators.row_groups import unique_rows
from engine.hardware.device import Hardware

# CUTLASS's SM80 tensor-op threadblock shapes (python/cutlass_library/generator.py,
# GenerateSM80_TensorOp_16816); used where the spec leaves gemm_tile_shapes blank.
DEFAULT_TILE_SHAPES: tuple[tuple[int, int], ...] = (
    (256, 128), (128, 256), (256, 64), (64, 256), (128, 128), (128, 64), (64, 128), (64, 64),
)
SPLIT_K_FACTORS: tuple[int, ...] = (1, 2, 3, 4, 6, 8, 16)
TILE_K = 32              # k elements per pipeline stage of a tile
PIPELINE_STAGES = 2      # a tile fits the core's SRAM if two stages of its A and B slices do
PARTIAL_SUM_BYTES = 4.0  # split-K partial sums are fp32, written once and read once
SMALL_TABLE_ROWS = 64    # choose_tilings evaluates up to this many GEMM rows without removing duplicates


def tile_count(m, n, tile_m, tile_n, batch=1, split_k=1):
    """CTA tiles of a (batched, split-K) GEMM: ceil(m/tile_m) * ceil(n/tile_n) * batch * split_k."""
    return np.ceil(np.divide(m, tile_m)) * np.ceil(np.divide(n, tile_n)) * np.multiply(batch, split_k)


def wave_count(tiles, cores):
    """Waves of tiles over `cores` cores running one tile each: ceil(tiles / cores)."""
    return np.ceil(np.divide(tiles, cores))


@lru_cache(maxsize=256)
def _candidates(shapes: tuple[tuple[int, int], ...], sram_bytes, value_bytes: float) -> tuple[np.ndarray, ...]:
    fits = [s for s in shapes if sram_bytes is None
            or (s[0] + s[1]) * TILE_K * value_bytes * PIPELINE_STAGES <= sram_bytes]
    if not fits:  # nothing fits the SRAM: keep the smallest tile rather than none
        fits = [min(shapes, key=lambda s: s[0] + s[1])]
    grid = [(tm, tn, s) for tm, tn in fits for s in SPLIT_K_FACTORS]
    return tuple(np.array([g[i] for g in grid], dtype=float) for i in range(3))


def tile_candidates(hardware: Hardware, value_bytes: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tile_m, tile_n, split_k) arrays of every candidate whose two pipeline stages fit the SRAM."""
    shapes = hardware.tile_shapes or DEFAULT_TILE_SHAPES
    return _candidates(tuple(shapes), hardware.sram_per_core_bytes, float(value_bytes))


@dataclass(frozen=True)
class GemmRates:
    """What one GEMM's tiles run at, per row (arrays broadcast against the rows)."""

    macs_per_s_per_core: np.ndarray      # peak matrix MAC/s of one core for the row's dtype
    value_bytes: np.ndarray              # bytes per operand value (A and B tiles)
    matrix_fraction: float               # achievable fraction of the peak matrix rate
    bandwidth_bytes_per_s: float         # peak memory bandwidth
    memory_fraction: float               # achievable fraction of it for GEMM operand streams
    latency_s: float                     # device time beyond the work
    split_k_latency_s: float = 0.0       # a split-K candidate's extra device time (its partial sums' reduction pass)
    # the chip's power-limited matrix rate (MAC/s over all its cores together: the board's dynamic power / energy
    # per MAC; inf: not capped). It bounds the aggregate rate of the cores a GEMM keeps busy, never one core's rate,
    # so a GEMM of few tiles is not slowed by cores it leaves idle and more cores are never slower.
    power_macs_per_s: float = np.inf
    overlap_loss: float = 0.0            # the fraction of the shorter of compute and memory the pipeline does not hide
    k_step_s: float = 0.0                # per wave per TILE_K-deep k step beyond its work (k_step_cycles / clock)
    epilogue_s: float = 0.0              # per wave per output value of a tile: an epilogue not overlapped


@dataclass
class Tiling:
    """The chosen tiling per row, and the times of its quantization chain (see realistic.py)."""

    tile_m: np.ndarray
    tile_n: np.ndarray
    split_k: np.ndarray
    tiles: np.ndarray
    waves: np.ndarray
    padded_compute_s: np.ndarray   # padded tiles at peak, spread over all cores
    wave_compute_s: np.ndarray     # whole waves at peak
    compute_s: np.ndarray          # whole waves at the achievable rate
    peak_memory_s: np.ndarray      # bytes incl. split-K partial sums at peak bandwidth
    memory_s: np.ndarray           # the same at the achievable bandwidth
    time_s: np.ndarray             # latency + max(compute_s, memory_s) + overlap_s
    overlap_s: np.ndarray          # overlap_loss x min(compute_s, memory_s): operand loads and MMAs not overlapped,
                                   # + k_step_s x waves x k steps: the k loop's per-step time not hidden
                                   # + epilogue_s x waves x tile_m x tile_n: the epilogue not hidden


def choose_tilings(m, n, k, batch, nbytes, hardware: Hardware, rates: GemmRates) -> Tiling:
    """The fastest (tile, split-K) per GEMM row (each row's choice depends on that row alone); identical rows
    of a large table are evaluated once."""
    m, n, k, batch, nbytes = (np.asarray(v, dtype=float) for v in (m, n, k, batch, nbytes))
    per_core, value_bytes = (_rows_of(np.asarray(v, dtype=float), m.shape)
                             for v in (rates.macs_per_s_per_core, rates.value_bytes))
    if m.size == 0:
        empty = np.zeros(0)
        return Tiling(*([empty] * 12))
    if len(m) <= SMALL_TABLE_ROWS and all_true(value_bytes == value_bytes[0]):
        # a short table of one dtype width (a prefill or decode step): every row its own candidates, in order
        return _choose(*(np.reshape(v, (-1, 1)) for v in (m, n, k, batch, nbytes, per_core)), hardware, rates,
                       float(value_bytes[0]))
    keys = np.stack([m, n, k, batch, nbytes, per_core, value_bytes], axis=1)
    if len(keys) <= SMALL_TABLE_ROWS:     # each row's choice is its own: dedup only pays off on large tables
        unique, inverse = keys, np.arange(len(keys))
    else:
        unique, inverse = unique_rows(keys)
    by_value_bytes = list(_by_value_bytes(unique[:, 6]))
    chosen = [_choose_unique(unique[rows], hardware, rates, vb) for vb, rows in by_value_bytes]
    if len(chosen) == 1 and unique is keys:        # every row its own candidate set, in order: nothing to merge
        return chosen[0]
    merged = {}
    for field in Tiling.__dataclass_fields__:
        values = np.empty(len(unique))
        for (vb, rows), result in zip(by_value_bytes, chosen):
            values[rows] = getattr(result, field)
        merged[field] = values[inverse]
    return Tiling(**merged)


def _rows_of(values: np.ndarray, shape: tuple) -> np.ndarray:
    return values if values.shape == shape else np.broadcast_to(values, shape)


def _by_value_bytes(values: np.ndarray):
    if all_true(values == values[0]):          # one dtype width (the usual table): no sort
        yield float(values[0]), np.arange(len(values))
        return
    for vb in np.unique(values):
        yield float(vb), np.flatnonzero(values == vb)


def candidate_terms(m, n, k, batch, nbytes, per_core, hardware: Hardware, value_bytes: float,
                    bandwidth) -> dict[str, np.ndarray]:
    """Rows x candidates arrays of the parameter-free parts of each candidate's time.

    Inputs are column vectors (rows x 1). Returns tile_m, tile_n, split_k, tiles, waves,
    padded_s (padded tiles at peak over all cores), wave_peak_s (whole waves at peak), work_macs (the MACs
    the tiles execute, padding included: what the chip's power budget is spent on) and peak_memory_s (bytes plus
    split-K partial sums at peak bandwidth). The terms without m (shape_terms) are kept per (n, k, batch): a prefill
    sweep changes m alone.
    """
    shape = shape_terms(n, k, batch, hardware, value_bytes)
    tile_m, tile_n, split_k, k_slice = shape["tile_m"], shape["tile_n"], shape["split_k"], shape["k_slice"]
    cores = hardware.num_cores
    # tile_count(m, n, tile_m, tile_n, batch, split_k) and tile_count(m, n, tile_m, tile_n, batch): the same
    # operations in the same order (np.multiply(batch, 1) is batch)
    output_tiles = np.ceil(np.divide(m, tile_m)) * shape["n_tiles"]
    tiles = output_tiles * shape["batch_split"]
    waves = wave_count(tiles, cores)
    partial_sums = np.where(shape["split"], shape["partial_scale"] * m * n * batch, 0.0)
    padded_macs = output_tiles * batch * tile_m * tile_n * k
    return {
        "tile_m": tile_m, "tile_n": tile_n, "split_k": split_k, "tiles": tiles, "waves": waves,
        "padded_s": padded_macs / (per_core * cores), "wave_peak_s": waves * tile_m * tile_n * k_slice / per_core,
        "work_macs": tiles * tile_m * tile_n * k_slice,
        "peak_memory_s": (nbytes + partial_sums) / bandwidth, "tie_break": shape["tie_break"],
        "k_loop_steps": shape["k_loop_steps"],
    }


SHAPES_KEPT = 64
_SHAPES: dict = {}


def shape_terms(n, k, batch, hardware: Hardware, value_bytes: float) -> dict[str, np.ndarray]:
    """candidate_terms' parts without m (rows x candidates, read-only), kept for the last SHAPES_KEPT (n, k, batch,
    tile shapes, SRAM, value bytes) by value: the candidates, ceil(n / tile_n), batch x split_k, ceil(k / split_k),
    the split-K mask and 2 x PARTIAL_SUM_BYTES x split_k (the first factors of the partial sums' product)."""
    key = None
    if n.__class__ is np.ndarray and k.__class__ is np.ndarray and batch.__class__ is np.ndarray:   # else: not kept
        key = (n.tobytes(), k.tobytes(), batch.tobytes(), n.shape, k.shape, batch.shape, n.dtype, k.dtype, batch.dtype,
               hardware.gemm_tile_shapes, hardware.sram_per_core_bytes, float(value_bytes))
    terms = None if key is None else _SHAPES.get(key)
    if terms is None:
        tile_m, tile_n, split_k = (c[None, :] for c in tile_candidates(hardware, value_bytes))
        terms = {"tile_m": tile_m, "tile_n": tile_n, "split_k": split_k, "n_tiles": np.ceil(np.divide(n, tile_n)),
                 "batch_split": np.multiply(batch, split_k), "k_slice": np.ceil(k / split_k), "split": split_k > 1,
                 "k_loop_steps": np.ceil(np.ceil(k / split_k) / TILE_K),
                 "partial_scale": 2.0 * PARTIAL_SUM_BYTES * split_k,
                 # ties (to a few parts per billion) go to the earlier candidate: larger tiles, fewer splits
                 "tie_break": 1.0 + 1e-9 * np.arange(split_k.shape[1])}
        if key is None:
            return terms
        for values in terms.values():
            values.setflags(write=False)
        if len(_SHAPES) >= SHAPES_KEPT:
            _SHAPES.pop(next(iter(_SHAPES)))
        _SHAPES[key] = terms
    return terms


def k_steps(terms: dict) -> np.ndarray:
    """Each candidate's waves x TILE_K-deep steps of its k loop (k_step_s is charged per step)."""
    return terms["waves"] * terms["k_loop_steps"]


def epilogue_values(terms: dict) -> np.ndarray:
    """Each candidate's waves x tile_m x tile_n: the output values its cores write per wave, summed over waves
    (epilogue_s is charged per value)."""
    return terms["waves"] * terms["tile_m"] * terms["tile_n"]


def candidate_times(terms: dict, matrix_fraction: float, memory_fraction: float, latency_s: float,
                    split_k_latency_s: float = 0.0, power_macs_per_s: float = np.inf, overlap_loss: float = 0.0,
                    k_step_s: float = 0.0, epilogue_s: float = 0.0):
    """(time, compute, memory) of every candidate: latency + max(whole waves at the achievable matrix
    rate, bytes at the achievable bandwidth), + split_k_latency_s for split-K candidates (their reduction).
    Compute is at least the executed MACs at the chip's power-limited rate `power_macs_per_s` (a chip-level
    bound: it does not depend on the core count, so more cores never make a candidate slower).
    `overlap_loss`: a tile's operand loads and its matrix instructions overlap only in part (the pipeline's fill
    before the first MMA and its drain and epilogue after the last load), so overlap_loss x min(compute, memory)
    is added (0: perfect overlap, the roofline's max)."""
    compute = terms["wave_peak_s"] / matrix_fraction
    if np.isfinite(power_macs_per_s):
        compute = np.maximum(compute, terms["work_macs"] / power_macs_per_s)
    memory = terms["peak_memory_s"] / memory_fraction
    time = latency_s + np.maximum(compute, memory)
    if overlap_loss:
        time = time + overlap_loss * np.minimum(compute, memory)
    if split_k_latency_s:
        time = time + np.where(terms["split_k"] > 1, split_k_latency_s, 0.0)
    if k_step_s:
        time = time + k_step_s * k_steps(terms)
    if epilogue_s:
        time = time + epilogue_s * epilogue_values(terms)
    return time, compute, memory


def _choose_unique(keys: np.ndarray, hardware: Hardware, rates: GemmRates, value_bytes: float) -> Tiling:
    return _choose(*(keys[:, i:i + 1] for i in range(6)), hardware, rates, value_bytes)


def _choose(m, n, k, batch, nbytes, per_core, hardware: Hardware, rates: GemmRates, value_bytes: float) -> Tiling:
    """The fastest candidate of each row (column vectors: rows x 1)."""
    terms = candidate_terms(m, n, k, batch, nbytes, per_core, hardware, value_bytes, rates.bandwidth_bytes_per_s)
    time, compute, memory = candidate_times(terms, rates.matrix_fraction, rates.memory_fraction, rates.latency_s,
                                            rates.split_k_latency_s, rates.power_macs_per_s, rates.overlap_loss,
                                            rates.k_step_s, rates.epilogue_s)
    best = np.argmin(time * terms["tie_break"], axis=1)
    flat = best + np.arange(len(best)) * time.shape[1]      # each row's choice in the flattened rows x candidates
    pick = lambda a: a.take(flat) if a.shape == time.shape else a.take(best)  # noqa: E731  (a candidate row: 1 x n)
    chosen_compute, chosen_memory = pick(compute), pick(memory)
    return Tiling(
        tile_m=pick(terms["tile_m"]), tile_n=pick(terms["tile_n"]), split_k=pick(terms["split_k"]),
        tiles=pick(terms["tiles"]), waves=pick(terms["waves"]), padded_compute_s=pick(terms["padded_s"]),
        wave_compute_s=pick(terms["wave_peak_s"]), compute_s=chosen_compute, peak_memory_s=pick(terms["peak_memory_s"]),
        memory_s=chosen_memory, time_s=pick(time),
        overlap_s=_unhidden(rates, terms, pick, chosen_compute, chosen_memory),
    )


def _unhidden(rates: GemmRates, terms: dict, pick, chosen_compute, chosen_memory) -> np.ndarray:
    """The chosen candidates' time beyond max(compute, memory): the overlap loss, k-step and epilogue terms."""
    unhidden = rates.overlap_loss * np.minimum(chosen_compute, chosen_memory)
    if rates.k_step_s:
        unhidden = unhidden + rates.k_step_s * pick(k_steps(terms))
    if rates.epilogue_s:
        unhidden = unhidden + rates.epilogue_s * pick(epilogue_values(terms))
    return unhidden
