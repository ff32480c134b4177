"""Results: kernels summed per kernel, totals per phase, latency metrics and memory fit."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pandas as pd

from engine.dtypes import bytes_per_value
from engine.estimators import STEP_MEAN_COLUMNS
from engine.kernels import kernel_family

# per-occurrence columns that are averaged (weighted by count) when decode steps are summed up
MEAN_COLUMNS = (
    "m", "k", "n", "batch", "context", "macs", "matrix_flops", "vector_flops", "flops", "weight_bytes",
    "activation_bytes", "kv_bytes", "bytes", "compute_time_s", "memory_time_s", "time_s",
) + STEP_MEAN_COLUMNS
JSON_KERNEL_COLUMNS = (
    "phase", "name", "type", "op", "unit", "dtype", "m", "k", "n", "batch", "context", "count", "macs",
    "flops", "weight_bytes", "activation_bytes", "kv_bytes", "bytes", "intensity", "compute_time_s",
    "memory_time_s", "time_s", "bound", "family", "total_time_s", "time_share",
    # hierarchical and realistic methods
    "ideal_time_s", "kernel_time_s", "gap_tile_quantization_s", "gap_wave_quantization_s", "gap_efficiency_s",
    "gap_overhead_s", "tile_m", "tile_n", "split_k", "tiles", "waves", "fused_group", "launches",
    "hbm_bytes", "llc_bytes", "sram_bytes", "hbm_time_s", "llc_time_s", "sram_time_s",
)


def aggregate_steps(columns: dict) -> pd.DataFrame:
    """One row per kernel: rows sharing a `group` (a kernel at each decode step) are combined.

    Per-occurrence values become count-weighted means, so count x time_s still sums to the
    phase time; `bound` is the bound that holds for most of the kernel's time.
    """
    groups = columns["group"]
    codes, first, inverse = np.unique(groups, return_index=True, return_inverse=True)
    if len(codes) == len(groups):
        return pd.DataFrame(columns)
    out = {key: np.asarray(values)[first] for key, values in columns.items()}
    count = columns["count"].astype(float)
    total_count = np.bincount(inverse, weights=count)
    for column in MEAN_COLUMNS:
        if column in columns:
            values = np.nan_to_num(columns[column].astype(float))
            means = np.bincount(inverse, weights=values * count) / total_count
            out[column] = np.where(np.isnan(out[column].astype(float)), np.nan, means)
    # bound: the label (compute, memory, llc, overhead, ...) holding most of the kernel's time
    labels, label_codes = np.unique(np.asarray(columns["bound"]).astype(str), return_inverse=True)
    time_by_label = np.zeros((len(codes), len(labels)))
    np.add.at(time_by_label, (inverse, label_codes.reshape(-1)), columns["time_s"] * count)
    out["bound"] = labels[time_by_label.argmax(axis=1)].astype(object)
    out["count"] = total_count
    with np.errstate(divide="ignore", invalid="ignore"):
        out["intensity"] = np.where(out["bytes"] > 0, out["flops"] / out["bytes"], np.inf)
    return pd.DataFrame(out)


def add_presentation_columns(kernels: pd.DataFrame) -> pd.DataFrame:
    """family (for grouped charts), total_time_s = count x time_s, and time_share within the phase."""
    kernels["family"] = [kernel_family(name) for name in kernels["name"]]
    kernels["total_time_s"] = kernels["count"] * kernels["time_s"]
    phase_time = kernels.groupby("phase", sort=False)["total_time_s"].transform("sum")
    kernels["time_share"] = np.where(phase_time > 0, kernels["total_time_s"] / phase_time, 0.0)
    return kernels


PHASE_TOTAL_COLUMNS = ("time_s", "macs", "flops", "bytes", "kernel_launches", "compute_bound_time_s", "memory_bound_time_s")


def phase_totals(kernels: pd.DataFrame) -> pd.DataFrame:
    """Per phase: time, MACs, FLOPs, bytes and kernel launches over every occurrence; time by bound.

    Time by bound has a `<bound>_bound_time_s` column per bound label present (compute and memory
    always; llc, sram, overhead when a method reports them).
    """
    phase = kernels["phase"].to_numpy()
    count = kernels["count"].to_numpy(dtype=float)
    launches = count * (kernels["launches"].to_numpy(dtype=float) if "launches" in kernels else 1.0)
    time = kernels["time_s"].to_numpy(dtype=float) * count
    bound = kernels["bound"].to_numpy().astype(str)
    labels = ["compute", "memory"] + sorted(set(bound) - {"compute", "memory"})
    totals = {}
    for name in dict.fromkeys(phase):
        rows = phase == name
        totals[name] = {
            "time_s": time[rows].sum(),
            "macs": (kernels["macs"].to_numpy(dtype=float)[rows] * count[rows]).sum(),
            "flops": (kernels["flops"].to_numpy(dtype=float)[rows] * count[rows]).sum(),
            "bytes": (kernels["bytes"].to_numpy(dtype=float)[rows] * count[rows]).sum(),
            "kernel_launches": launches[rows].sum(),
            **{f"{label}_bound_time_s": time[rows & (bound == label)].sum() for label in labels},
        }
    frame = pd.DataFrame.from_dict(totals, orient="index")
    frame.index.name = "phase"
    return frame


@dataclass
class MemoryFootprint:
    weights_bytes: float
    kv_cache_bytes: float
    activation_bytes: float
    capacity_bytes: float
    max_batch: int

    @property
    def total_bytes(self) -> float:
        return self.weights_bytes + self.kv_cache_bytes + self.activation_bytes

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.capacity_bytes

    def to_dict(self) -> dict:
        return {"weights_bytes": self.weights_bytes, "kv_cache_bytes": self.kv_cache_bytes,
                "activation_bytes": self.activation_bytes, "total_bytes": self.total_bytes,
                "capacity_bytes": self.capacity_bytes, "fits": self.fits, "max_batch": self.max_batch}


def kv_tokens(scenario) -> float:
    """Tokens held in the KV cache at the scenario's peak, summed over the batch."""
    s = scenario
    if s.phase == "prefill":
        return s.batch * s.input_length
    if s.phase == "decode":
        return s.batch * (s.decode_context + 1)
    if s.phase == "chunked":
        prefill_tokens, decode_tokens = s.chunk_mix()
        decode_context = s.context_length if s.context_length is not None else s.input_length + s.output_length // 2
        return decode_tokens * decode_context + s.input_length
    return s.batch * (s.input_length + s.output_length)


def memory_footprint(model, scenario, hardware, per_step_kernels: dict) -> MemoryFootprint:
    """Weights + KV cache + the largest kernel's live activations, against device memory.

    The largest batch that fits scales KV and activations linearly with the batch.
    """
    weights = model.params_total * bytes_per_value(scenario.weight_dtype)
    kv = kv_tokens(scenario) * model.kv_cache_bytes_per_token(scenario.kv_dtype)
    activations = float(per_step_kernels["activation_bytes"].max()) if len(per_step_kernels) else 0.0
    capacity = hardware.memory_capacity_bytes
    per_sequence = (kv + activations) / max(scenario.batch, 1)
    room = capacity - weights
    max_batch = int(room // per_sequence) if room > 0 and per_sequence > 0 else 0
    return MemoryFootprint(weights, kv, activations, capacity, max_batch)


def _clean(value):
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


@dataclass
class Estimate:
    """An estimate: the kernel table, totals per phase, and the headline metrics."""

    hardware_name: str
    model_name: str
    method: str
    scenario: object
    kernels: pd.DataFrame
    phases: pd.DataFrame
    memory: MemoryFootprint
    ttft_s: Optional[float] = None
    tpot_s: Optional[float] = None
    e2e_s: Optional[float] = None
    tokens_per_s: Optional[float] = None
    prefill_tokens_per_s: Optional[float] = None
    notes: list[str] = field(default_factory=list)

    @property
    def total_time_s(self) -> float:
        return float(self.phases["time_s"].sum())

    def to_dict(self, include_kernels: bool = True) -> dict:
        result = {
            "hardware": self.hardware_name, "model": self.model_name, "method": self.method,
            "scenario": self.scenario.model_dump(),
            "phases": {phase: {k: _clean(v) for k, v in row.items()} for phase, row in self.phases.iterrows()},
            "ttft_s": self.ttft_s, "tpot_s": self.tpot_s, "e2e_s": self.e2e_s,
            "tokens_per_s": self.tokens_per_s, "prefill_tokens_per_s": self.prefill_tokens_per_s,
            "memory": self.memory.to_dict(), "notes": list(self.notes),
        }
        if include_kernels:
            columns = [c for c in JSON_KERNEL_COLUMNS if c in self.kernels]
            extra = [c for c in ("best_tiler", "exec_cycle", "cmp_cycle", "mem_cycle") if c in self.kernels]
            records = self.kernels[columns + extra].to_dict(orient="records")
            result["kernels"] = [{k: _clean(v) for k, v in row.items()} for row in records]
        return result
