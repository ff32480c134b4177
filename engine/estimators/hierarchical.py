"""Hierarchical (cache-aware) roofline: traffic and bandwidth per memory level.

Each level serves bytes to the level below it, seen from the cores (as in the cache-aware roofline
model): HBM serves what the LLC misses, the LLC serves what the per-core SRAM misses, the SRAM
serves what the register file misses. Reuse at a level comes from the largest square-ish GEMM tile
that fits the next level closer to the cores (its capacity from the spec):

    traffic = A_bytes * ceil(n / tile_n) + B_bytes * ceil(m / tile_m) + C_bytes

for C[m,n] = A[m,k] @ B[k,n] (tile_m x tile_n outputs plus a TILE_K-deep slice of A and B fit the
capacity; a GEMM that fits whole moves each operand once). Element-wise and KV-cache kernels have
no reuse: their bytes cross every level once.

    time = max(compute, hbm_bytes / HBM bandwidth, llc_bytes / LLC bandwidth, sram_bytes / SRAM bandwidth)

`bound` names the winner: "compute", "memory" (HBM), "llc" or "sram". A level whose bandwidth the
spec does not publish is skipped (its time is NaN); a level whose inner capacity is unknown reuses
the next known inner capacity (none known: the compulsory bytes).
"""

from __future__ import annotations

import numpy as np

from engine.hardware.dtypes import bytes_per_value
from engine.estimators.roofline import estimate_roofline
from engine.estimators.row_groups import RowGroups
from engine.estimators.bound_labels import labelled
from engine.hardware.device import Hardware

TILE_K = 32   # k elements of A and B held next to the output tile


def tile_fitting(capacity_bytes: float, m, n, value_bytes):
    """(tile_m, tile_n): the largest square-ish output tile whose A and B slices of TILE_K fit too.

    tile_m * tile_n + (tile_m + tile_n) * TILE_K values fit in the capacity; a dimension smaller
    than the square tile is taken whole and the other grows into the room left.
    """
    values = capacity_bytes / value_bytes
    square = np.sqrt(TILE_K**2 + values) - TILE_K
    tile_m = np.where(m < square, m, np.where(n < square, np.maximum((values - n * TILE_K) / (n + TILE_K), 1.0), square))
    tile_n = np.where(n < square, n, np.where(m < square, np.maximum((values - m * TILE_K) / (m + TILE_K), 1.0), square))
    return np.maximum(np.minimum(tile_m, m), 1.0), np.maximum(np.minimum(tile_n, n), 1.0)


def gemm_operand_bytes(columns: dict, op: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A, B, C) bytes of matrix rows: B = the weights where there are any, else the activation bytes
    split by element counts m k : k n : m n; A and C split the activation bytes by m k : m n.
    Attention rows keep their scores on chip (C = 0)."""
    m, k, n, batch = (columns[c].astype(float) for c in ("m", "k", "n", "batch"))
    activation, weight = columns["activation_bytes"].astype(float), columns["weight_bytes"].astype(float)
    attention = op == "attention"
    a_el, b_el, c_el = m * k, k * n, np.where(attention, 0.0, m * n)
    with np.errstate(divide="ignore", invalid="ignore"):
        has_weights = weight > 0
        a = np.where(has_weights, activation * a_el / (a_el + c_el), activation * a_el / (a_el + b_el + c_el))
        b = np.where(has_weights, weight, activation * b_el / (a_el + b_el + c_el))
        c = np.where(has_weights, activation * c_el / (a_el + c_el), activation * c_el / (a_el + b_el + c_el))
    return (np.nan_to_num(a), np.nan_to_num(b), np.nan_to_num(c + columns["kv_bytes"].astype(float)))


def level_traffic(columns: dict, op: np.ndarray, capacity_bytes, value_bytes) -> np.ndarray:
    """Bytes a level serves when the next inner level holds `capacity_bytes` (None: no reuse model)."""
    nbytes = columns["bytes"].astype(float)
    matrix = np.isin(op, ("gemm", "attention")) & (columns["macs"].astype(float) > 0)
    if capacity_bytes is None or not matrix.any():
        return nbytes
    m, n = columns["m"].astype(float), columns["n"].astype(float)
    tile_m, tile_n = tile_fitting(capacity_bytes, np.maximum(m, 1.0), np.maximum(n, 1.0), value_bytes)
    a, b, c = gemm_operand_bytes(columns, op)
    reused = a * np.ceil(n / tile_n) + b * np.ceil(m / tile_m) + c
    return np.where(matrix, np.maximum(reused, nbytes), nbytes)


def estimate_hierarchical(table, hardware: Hardware, scenario=None) -> dict[str, np.ndarray]:
    """Roofline columns plus hbm/llc/sram bytes and times; time and bound over compute and every level."""
    out = estimate_roofline(table, hardware)
    row_groups = RowGroups(out)
    op = row_groups.strings("op")
    value_bytes = row_groups.map("dtype", bytes_per_value) if len(op) else np.zeros(0)
    registers, sram, llc = (hardware.register_file_per_core_bytes, hardware.sram_per_core_bytes,
                            hardware.llc_capacity_bytes)
    inner = {  # capacity that gives each level its reuse: the next known level closer to the cores
        "sram": registers,
        "llc": sram if sram is not None else registers,
        "hbm": llc if llc is not None else (sram if sram is not None else registers),
    }
    bandwidth = {"hbm": hardware.memory_bandwidth_bytes_per_s, "llc": hardware.llc_bandwidth_bytes_per_s,
                 "sram": hardware.sram_bandwidth_bytes_per_s}
    times = {}
    for level in ("hbm", "llc", "sram"):
        traffic = level_traffic(out, op, inner[level], value_bytes)
        out[f"{level}_bytes"] = traffic
        times[level] = traffic / bandwidth[level] if bandwidth[level] else np.full(len(traffic), np.nan)
        out[f"{level}_time_s"] = times[level]
    compute = out["compute_time_s"].astype(float)
    candidates = np.stack([compute] + [np.nan_to_num(times[level], nan=-1.0) for level in ("hbm", "llc", "sram")])
    winner = np.argmax(candidates, axis=0)
    out["memory_time_s"] = np.nanmax(np.stack([times["hbm"], times["llc"], times["sram"]]), axis=0)
    out["time_s"] = candidates.max(axis=0)
    out["bound"] = labelled(np.array(["compute", "memory", "llc", "sram"], dtype=object), winner)
    return out
