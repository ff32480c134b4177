"""The seed notebook's theoretical tiler (`estimate_kernel_times_by_theoretical_tiler`), reproduced.

The notebook picks one tile that fills the last-level cache (split equally between the
three matrices, or around the GEMM's small dimensions), then charges each tile's compute
against peak MACs/s and each tile's A and B loads against memory bandwidth. Its quirks are
kept on purpose (fractional tiles, binary-unit bandwidth via the NVL-AX spec, KV store free,
the output tile never written back). Values match ../shared/calibration/seed_notebook_outputs.csv.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pandas as pd

from engine.hardware.dtypes import bytes_per_value
from engine.hardware.device import Hardware
from engine.kernels.table import as_columns


def tiling_size(cache_size: float, value_bytes: float, fixed: tuple[float, ...]) -> float:
    """The notebook's `estimate_tiling_sizes` for 0, 1 or 2 fixed dimensions."""
    if len(fixed) == 0:
        return (cache_size / 3 / value_bytes) ** (1 / 2)
    if len(fixed) == 1:
        b = fixed[0] * 2
        return (-b + math.sqrt(b**2 + 4 * (cache_size / value_bytes))) / 2
    return (cache_size - fixed[0] * fixed[1] * value_bytes) / (value_bytes * (fixed[0] + fixed[1]))


@lru_cache(maxsize=65536)
def seed_tile(m: float, k: float, n: float, batch: float, cache_size: float, value_bytes: float) -> tuple[float, float, float]:
    """Steps 0-3 of the notebook's tiler: the tile (m, k, n) it picks for one GEMM."""
    dims = [m, k, n]
    if batch > 1:  # step 0: fold the batch into m or n so the output is closer to square
        if dims[0] > dims[2] and dims[0] / dims[2] > batch:
            dims[2] = dims[2] * batch
        elif dims[2] > dims[0] and dims[2] / dims[0] > batch:
            dims[0] = dims[0] * batch
        else:
            ratio = dims[0] / dims[2]
            batch = batch / ratio
            dims[2] = dims[0] = dims[0] * (batch ** (1 / 2))
    ordered = sorted([(0, dims[0]), (1, dims[1]), (2, dims[2])], key=lambda x: x[1])
    t = tiling_size(cache_size, value_bytes, ())
    if ordered[0][1] >= t:
        return (t, t, t)
    t = tiling_size(cache_size, value_bytes, (ordered[0][1],))
    if ordered[1][1] >= t:
        ordered[1] = (ordered[1][0], t)
        ordered[2] = (ordered[2][0], t)
    else:
        t = tiling_size(cache_size, value_bytes, (ordered[0][1], ordered[1][1]))
        if ordered[2][1] >= t:
            ordered[2] = (ordered[2][0], t)
    tile = sorted(ordered, key=lambda x: x[0])
    return (tile[0][1], tile[1][1], tile[2][1])


def estimate_seed(table: pd.DataFrame, hardware: Hardware, scenario) -> dict[str, np.ndarray]:
    """Cycles per layer as the notebook computes them, plus the uniform result columns."""
    if hardware.llc_capacity_bytes is None:
        raise ValueError(f"the seed method needs llc_capacity for {hardware.name!r} (the notebook's L3_cache_capacity)")
    value_bytes = bytes_per_value(scenario.activation_dtype)
    macs_per_s = hardware.matrix_macs_per_s(scenario.activation_dtype)
    bandwidth, freq, cache = hardware.memory_bandwidth_bytes_per_s, hardware.clock_hz, hardware.llc_capacity_bytes
    n_rows = len(table)
    tiler = np.full(n_rows, None, dtype=object)
    exec_c, cmp_c, mem_c = (np.full(n_rows, np.nan) for _ in range(3))
    bound = np.full(n_rows, None, dtype=object)
    columns = [table[c].to_numpy() for c in ("type", "m", "k", "n", "batch", "compute_macs", "kv_cache_elems")]
    for i, (kind, m, k, n, batch, compute, kv) in enumerate(zip(*columns)):
        if "M" in kind or "w" in kind:
            if np.isnan(compute):
                continue
            tm, tk, tn = seed_tile(float(m), float(k), float(n), float(batch), cache, value_bytes)
            tiler[i] = f"{tm:.1f}x{tk:.1f}x{tn:.1f}"
            block = tm * tk * tn
            cmp_c[i] = block / macs_per_s * freq * compute / block
            mem_c[i] = (tm * tk + tn * tk) * value_bytes / bandwidth * freq * compute / block
            exec_c[i], bound[i] = (cmp_c[i], "Compute") if cmp_c[i] > mem_c[i] else (mem_c[i], "Memory")
        elif kind == "KVCache" and not np.isnan(kv):
            exec_c[i], bound[i] = kv * value_bytes / bandwidth * freq, "Memory"
    out = table.copy()
    out["best_tiler"], out["exec_cycle"], out["cmp_cycle"], out["mem_cycle"] = tiler, exec_c, cmp_c, mem_c
    out["seed_bound"] = bound
    return as_columns(_uniform_columns(out, value_bytes, bandwidth, freq, scenario.activation_dtype))


def _uniform_columns(out: pd.DataFrame, value_bytes: float, bandwidth: float, freq: float, dtype: str) -> pd.DataFrame:
    kinds = out["type"].to_numpy().astype(str)
    is_kv = np.isin(kinds, ("KVCache", "Async_KVCache"))
    macs = np.nan_to_num(out["compute_macs"].to_numpy(dtype=float))
    kv_bytes = np.nan_to_num(out["kv_cache_elems"].to_numpy(dtype=float)) * value_bytes
    mem_time = np.nan_to_num(out["mem_cycle"].to_numpy(dtype=float)) / freq
    out["op"] = np.select([kinds == "KVCache", kinds == "Async_KVCache", np.char.find(kinds, "Mqa") >= 0],
                          ["kv_read", "kv_store", "attention"], "gemm")
    out["unit"] = np.where(is_kv, "memory", "matrix")
    out["dtype"] = dtype
    out["macs"] = macs
    out["matrix_flops"], out["vector_flops"], out["flops"] = 2 * macs, 0.0, 2 * macs
    out["weight_bytes"] = np.nan_to_num(out["weight_elems"].to_numpy(dtype=float)) * value_bytes
    out["activation_bytes"] = 0.0
    out["kv_bytes"] = kv_bytes
    out["bytes"] = np.where(kinds == "KVCache", kv_bytes, mem_time * bandwidth)   # traffic the tiler charges
    out["compute_time_s"] = np.nan_to_num(out["cmp_cycle"].to_numpy(dtype=float)) / freq
    out["memory_time_s"] = np.where(kinds == "KVCache", kv_bytes / bandwidth, mem_time)
    out["time_s"] = np.nan_to_num(out["exec_cycle"].to_numpy(dtype=float)) / freq
    out["bound"] = np.where(out["seed_bound"].to_numpy() == "Compute", "compute", "memory")
    with np.errstate(divide="ignore", invalid="ignore"):
        out["intensity"] = np.where(out["bytes"] > 0, out["flops"] / out["bytes"], np.inf)
    out["context"] = np.where(np.char.find(kinds, "Mqa") >= 0, out["n"], np.nan)
    return out
