"""Time a stacked table (engine/explore/points.py) on many hardware variants at once and sum it per point.

`roofline` is broadcast: each row's time on every variant is one numpy expression over a rows x variants
array (the same `roofline_times` that estimate_roofline uses, and the same collective coefficients as
engine/estimators/collectives.py). Other methods time the stacked table once per hardware variant (each call is
vectorised over all the points). The per-point sums then follow engine/results/run.py: phase times, the
pipeline bubble, the latency and throughput metrics, energy (engine/results/energy.py) and the memory fit
(engine/results/memory.py).
"""

from __future__ import annotations

import numpy as np

from engine.estimators.collectives import collective_row_seconds, producer_rows
from engine.results.energy import energy_tokens, kernel_energy
from engine.estimators import get_method
from engine.estimators.attention_cache_width import eight_bit_prefill_rates
from engine.estimators.roofline import fp8_matrix_flops_per_s, roofline_times
from engine.explore.points import PointValues, StackedTable
from engine.explore.variants import ENERGY_ATTRIBUTES, LINK_ATTRIBUTES, PEAK_ATTRIBUTES, Variant, as_variants
from engine.hardware.device import Hardware
from engine.results.memory import WORKSPACE_FRACTION, kv_cache_bytes, kv_share_per_device, weights_per_device
from engine.workload.parallel import PER_PASS_KERNELS, parallel_layout
from engine.results.report import latency_metrics
from engine.workload.scenario import Scenario

PHASE_CODES = {"prefill": 0, "decode": 1}
BLOCK_ELEMENTS = 2_000_000      # rows x variants per block (16 MB per float array)


def sum_by(keys: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """Rows of `values` (rows x variants) summed per key (0..size-1), each key's rows in their table order
    (so a point sums alike in any chunk of a sweep: engine/explore/dask_cluster.py's results are bit for bit)."""
    out = np.zeros((size,) + values.shape[1:])
    if keys.size == 0:
        return out
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    out[sorted_keys[starts]] = np.add.reduceat(values[order], starts, axis=0)
    return out


class RowTimes:
    """Per row and variant: time_s and whether compute bound; per row, the dynamic energy of each distinct
    energy spec (rows x K, NaN columns where the spec lacks a value) with the column of every variant
    (`dynamic_of`), and per variant the static power (energy = dynamic + static power x time)."""

    def __init__(self, time: np.ndarray, compute: np.ndarray, dynamic: np.ndarray, dynamic_of: np.ndarray,
                 static_w: np.ndarray):
        self.time, self.compute, self.static_w = time, compute, static_w
        self.dynamic, self.dynamic_of = dynamic, dynamic_of


def _cached(cache: dict, key, make):
    if key not in cache:
        cache[key] = make()
    return cache[key]


def roofline_rows(columns: dict, variants: list[Variant], scenario: Scenario, cache: dict | None = None) -> RowTimes:
    """Broadcast roofline over all variants (estimate_roofline + time_collectives, for many devices).
    Derived numbers are computed once per distinct value of the fields they depend on (`cache`: kept
    across the blocks of one table)."""
    dtypes, dtype_code = np.unique(np.asarray(columns["dtype"]).astype(str), return_inverse=True)
    cache = {} if cache is None else cache
    rates = [_cached(cache, v.key(PEAK_ATTRIBUTES), lambda v=v: _rates(v.on(PEAK_ATTRIBUTES), dtypes))
             for v in variants]
    peaks = np.array([r[0] for r in rates]).T.reshape(len(dtypes), len(variants))          # dtypes x H
    vector = np.array([r[1] for r in rates])
    bandwidth = np.array([v.get("memory_bandwidth_bytes_per_s") for v in variants])
    col = lambda name: columns[name].astype(float)[:, None]   # noqa: E731
    fp8 = np.array([r[2] for r in rates])
    row_peaks = eight_bit_prefill_rates(columns, peaks[dtype_code.reshape(-1)], fp8[None, :])
    compute, memory = roofline_times(col("matrix_flops"), col("vector_flops"), col("bytes"),
                                     row_peaks, vector[None, :], bandwidth[None, :])
    time = np.maximum(compute, memory)
    is_compute = compute > memory
    rows = np.flatnonzero(np.asarray(columns["op"]) == "collective")
    if rows.size:
        names, sizes = np.asarray(columns["name"])[rows], columns["group_size"][rows]
        link_bytes = columns["link_bytes"][rows]
        seconds = np.stack([_cached(cache, ("link",) + v.key(LINK_ATTRIBUTES), lambda v=v:
                                    collective_row_seconds(names, sizes, link_bytes, v.on(LINK_ATTRIBUTES), scenario))
                            for v in variants], axis=1)
        if scenario.overlap_communication:
            index, has = producer_rows(columns, rows)
            seconds = seconds - np.minimum(seconds, np.where(has[:, None], time[index], 0.0))
        time[rows] = seconds
        is_compute[rows] = False
    idle = {**columns, "time_s": np.zeros(len(columns["count"]))}
    keys = [("energy",) + v.key(ENERGY_ATTRIBUTES) for v in variants]
    distinct = list(dict.fromkeys(keys))
    position = {key: j for j, key in enumerate(distinct)}
    specs = {key: variant for key, variant in zip(keys, variants)}
    per_spec = [_cached(cache, key, lambda v=specs[key]: kernel_energy(idle, v.on(ENERGY_ATTRIBUTES))[0])
                for key in distinct]
    dynamic = _energy_stack([None if p is None else p["energy_j"] for p in per_spec], time.shape[0])
    dynamic_of = np.array([position[key] for key in keys], dtype=np.int64)
    static = _static_power([per_spec[j] for j in dynamic_of], variants)
    return RowTimes(time, is_compute, dynamic, dynamic_of, static)


def _rates(hardware: Hardware, dtypes) -> tuple[list[float], float, float]:
    return [hardware.matrix_flops_per_s(d) for d in dtypes], hardware.vector_flops_per_s, \
        fp8_matrix_flops_per_s(hardware)


def _energy_stack(per_variant: list, rows: int) -> np.ndarray:
    """rows x variants; NaN columns for variants whose spec lacks an energy value."""
    return np.stack([np.full(rows, np.nan) if e is None else e for e in per_variant], axis=1) if per_variant \
        else np.zeros((rows, 0))


def _static_power(per_variant: list, variants: list[Variant]) -> np.ndarray:
    return np.array([np.nan if e is None else v.get("static_power_w") for e, v in zip(per_variant, variants)])


def method_rows(columns: dict, variants: list[Variant], scenario: Scenario, method: str) -> RowTimes:
    """Any method: the stacked table timed once per variant."""
    chosen = get_method(method)
    times, compute, energies = [], [], []
    for variant in variants:
        hw = variant.on()
        out = chosen.estimate(dict(columns), hw, scenario)
        times.append(out["time_s"].astype(float))
        compute.append(np.asarray(out["bound"]) == "compute")
        energy = kernel_energy({**out, "time_s": np.zeros(len(out["time_s"]))}, hw)[0]   # dynamic only
        energies.append(None if energy is None else energy["energy_j"])
    return RowTimes(np.stack(times, axis=1), np.stack(compute, axis=1), _energy_stack(energies, len(times[0])),
                    np.arange(len(variants)), _static_power(energies, variants))


def evaluate_stack(stack: StackedTable, model, base: Scenario, values: PointValues, variants: list,
                   method: str = "roofline") -> dict[str, np.ndarray]:
    """Per point x variant (U x H arrays): latency, throughput, energy and memory metrics on `variants`
    (engine/explore/variants.py Variants, or Hardware). Variants are taken in blocks so that a rows x
    variants array stays under BLOCK_ELEMENTS (a request has a row per decode step and kernel)."""
    variants = as_variants(variants)
    block = max(1, BLOCK_ELEMENTS // max(len(stack.point), 1))
    cache: dict = {}
    parts = [_evaluate_block(stack, model, base, values, variants[start:start + block], method, cache)
             for start in range(0, len(variants), block)]
    if len(parts) == 1:
        return parts[0]
    return {name: np.concatenate([np.asarray(part[name]) for part in parts], axis=1) for name in parts[0]}


def _evaluate_block(stack: StackedTable, model, base: Scenario, values: PointValues, variants: list[Variant],
                    method: str, cache: dict) -> dict[str, np.ndarray]:
    columns = stack.columns
    rows = roofline_rows(columns, variants, base, cache) if method == "roofline" else \
        method_rows(columns, variants, base, method)
    U = stack.points
    count = columns["count"].astype(float)[:, None]
    phase = np.array([PHASE_CODES[p] for p in np.asarray(columns["phase"]).astype(str)]) if U else np.zeros(0, int)
    keys = stack.point * 2 + phase
    work = count * rows.time
    phase_time = sum_by(keys, work, 2 * U).reshape(U, 2, -1)
    bubble = np.zeros_like(phase_time)
    if base.pp > 1:
        stage = ~np.isin(np.asarray(columns["name"]).astype(str), PER_PASS_KERNELS)
        stage_time = sum_by(keys[stage], work[stage], 2 * U).reshape(U, 2, -1)
        micro = np.stack([stack.micro_batches, np.ones(U)], axis=1)[:, :, None]
        bubble = (base.pp - 1) / micro * stage_time
        phase_time = phase_time + bubble
    device_time = phase_time.sum(axis=1)
    compute_time = sum_by(stack.point, work * rows.compute, U)
    out = _latency_metrics(phase_time, values, base)
    out["time_s"] = device_time
    out["compute_bound_share"] = np.where(device_time > 0, compute_time / np.where(device_time > 0, device_time, 1), 0.0)
    for name in ("flops", "bytes"):    # the same on every variant
        out[name] = np.broadcast_to(sum_by(stack.point, count * columns[name].astype(float)[:, None], U),
                                    device_time.shape)
    out.update(_energy_metrics(rows, count, stack.point, device_time, values, base, variants))
    out.update(_memory_metrics(stack, model, base, values, variants))
    return out


def _latency_metrics(phase_time: np.ndarray, values: PointValues, s: Scenario) -> dict[str, np.ndarray]:
    """engine/results/run.py's metrics (report.latency_metrics) for every point and variant."""
    column = lambda array: array[:, None]   # noqa: E731
    return latency_metrics(s.phase, phase_time[:, 0], phase_time[:, 1], column(values.batch),
                           column(values.input_length), column(values.output_length), s.dp, s.device_count)


def _energy_metrics(rows: RowTimes, count, point, device_time, values: PointValues, s: Scenario,
                    variants) -> dict[str, np.ndarray]:
    """engine/results/energy.py's energy_summary for every point and variant (NaN where the spec lacks a value):
    the dynamic energy of the rows plus static power x the device's time (the pipeline bubble included)."""
    shape = device_time.shape
    tdp = np.array([v.get("tdp_w") for v in variants], dtype=float)[None, :]
    dynamic = sum_by(point, count * rows.dynamic, shape[0])[:, rows.dynamic_of]
    device_energy = dynamic + device_time * rows.static_w[None, :]
    tokens = energy_tokens(s.phase, values.batch, values.input_length, values.output_length, s.dp)[:, None]
    energy = device_energy * s.device_count
    with np.errstate(divide="ignore", invalid="ignore"):
        power = np.where(device_time > 0, device_energy / device_time, np.nan)
        return {"energy_j": energy, "energy_per_token_j": energy / tokens,
                "tokens_per_j": np.where(energy > 0, tokens / energy, np.nan), "average_power_w": power,
                "tdp_w": np.broadcast_to(tdp, shape), "exceeds_tdp": power > tdp}


def _memory_metrics(stack: StackedTable, model, s: Scenario, values: PointValues, variants) -> dict[str, np.ndarray]:
    """engine/results/memory.py's per-device footprint (weights + KV cache + peak activations + workspace) per point."""
    layout = parallel_layout(model, s)
    weights, _ = weights_per_device(model, layout, s.weight_dtype, s.unquantized_modules, s.unquantized_dtype)
    columns = stack.columns
    active = (columns["count"] > 0) & (np.asarray(columns["op"]) != "collective")
    activations = np.zeros(stack.points)
    np.maximum.at(activations, stack.point[active], columns["activation_bytes"][active].astype(float))
    kv = np.array([kv_cache_bytes(model, s.model_copy(update=_point_fields(values, i))) for i in range(values.size)])
    kv = kv * kv_share_per_device(model, layout)
    capacity = np.array([v.get("memory_capacity_bytes") for v in variants])[None, :]
    total = weights + kv[:, None] + activations[:, None] + WORKSPACE_FRACTION * capacity
    return {"weights_per_device_bytes": np.broadcast_to(np.float64(weights), total.shape),
            "memory_per_device_bytes": total, "memory_capacity_bytes": np.broadcast_to(capacity, total.shape),
            "fits": total <= capacity}


def _point_fields(values: PointValues, i: int) -> dict:
    context = values.context_length[i]
    return {"batch": int(values.batch[i]), "input_length": int(values.input_length[i]),
            "output_length": int(values.output_length[i]),
            "context_length": None if np.isnan(context) else int(context)}
