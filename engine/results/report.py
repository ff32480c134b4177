"""Results: kernels summed per kernel, totals per phase, latency and serving metrics, memory fit."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pandas as pd

from engine.results.memory import MemoryFootprint, kv_tokens, memory_footprint  # noqa: F401  (re-exported)
from engine.results.columns import MEAN_COLUMNS, KernelColumns, combine_steps, presentation_columns  # noqa: F401
from engine.results.phase_totals import phase_frame, phase_total_rows, step_bound_times

JSON_KERNEL_COLUMNS = (
    "phase", "name", "type", "op", "unit", "dtype", "m", "k", "n", "batch", "context", "attention_window", "count",
    "macs",
    "flops", "weight_bytes", "activation_bytes", "kv_bytes", "bytes", "intensity", "compute_time_s",
    "memory_time_s", "time_s", "bound", "family", "total_time_s", "time_share",
    # hierarchical and realistic methods
    "ideal_time_s", "kernel_time_s", "gap_tile_quantization_s", "gap_wave_quantization_s", "gap_efficiency_s",
    "gap_overhead_s", "tile_m", "tile_n", "split_k", "tiles", "waves", "fused_group", "launches",
    "hbm_bytes", "llc_bytes", "sram_bytes", "hbm_time_s", "llc_time_s", "sram_time_s",
    # collectives (every method)
    "link_bytes", "group_size", "communication_time_s", "hidden_time_s",
    # energy (engine/results/energy.py), per occurrence; total_energy_j = count x energy_j
    "matrix_energy_j", "vector_energy_j", "hbm_energy_j", "llc_energy_j", "sram_energy_j", "link_energy_j",
    "static_energy_j", "energy_j", "total_energy_j",
)


def aggregate_steps(columns: dict) -> pd.DataFrame:
    """One row per kernel: rows sharing a `group` (a kernel at each decode step) are combined
    (engine/report_columns.combine_steps: count-weighted means; `bound` holds for most of the time)."""
    return combine_steps(columns).frame()


def add_presentation_columns(kernels: pd.DataFrame) -> pd.DataFrame:
    """family (for grouped charts), total_time_s = count x time_s, and time_share within the phase."""
    for name, values in presentation_columns(kernels).items():
        kernels[name] = values
    return kernels


def latency_metrics(phase: str, prefill_s, decode_s, batch, input_length, output_length, dp: int,
                    devices: int) -> dict:
    """TTFT, TPOT, end-to-end time and throughputs from a phase's times (scalars or numpy arrays; NaN where
    the phase does not define one). Latency is per replica; throughput counts every dp replica, each
    running its own `batch`. `decode_s` of a request is all its decode steps (0 with one output token)."""
    nan = np.full(np.shape(prefill_s), np.nan) if np.ndim(prefill_s) else np.nan
    tokens = np.multiply(batch, dp)
    with np.errstate(divide="ignore", invalid="ignore"):
        if phase == "prefill":
            ttft, tpot, e2e, rate = prefill_s, nan, nan, nan
        elif phase == "decode":
            ttft, tpot, e2e, rate = nan, decode_s, nan, tokens / decode_s
        elif phase == "request":
            steps = np.subtract(output_length, 1.0)
            ttft, e2e = prefill_s, prefill_s + decode_s
            tpot = np.where(steps > 0, decode_s / np.where(steps > 0, steps, 1.0), np.nan)
            rate = tokens * output_length / e2e
        else:
            ttft = tpot = e2e = rate = nan
        prefill_rate = tokens * input_length / ttft if phase in ("prefill", "request") else nan
    return {"ttft_s": ttft, "tpot_s": tpot, "e2e_s": e2e, "tokens_per_s": rate,
            "tokens_per_s_per_device": rate / devices, "prefill_tokens_per_s": prefill_rate}


bound_times = step_bound_times


def phase_totals(kernels: pd.DataFrame, by_bound: Optional[dict[tuple[str, str], float]] = None) -> pd.DataFrame:
    """Per phase: time, MACs, FLOPs, bytes and kernel launches over every occurrence; time by bound.

    Time by bound has a `<bound>_bound_time_s` column per bound label present (compute and memory
    always; llc, sram, overhead, communication, pipeline_bubble when present): from `by_bound`
    (bound_times of the step-by-step table) when given, else from each kernel's `bound`. Collectives add
    link_bytes, communication_time_s (their full time) and hidden_communication_time_s (the part
    overlapped with compute): time_s + hidden_communication_time_s is the time without overlap.
    """
    return phase_frame(phase_total_rows(kernels, by_bound))


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
    kernel_columns: KernelColumns                      # the kernel table as numpy columns (`kernels` builds
    phase_rows: dict                                   # the DataFrame on first use); {phase: totals}
    memory: MemoryFootprint
    ttft_s: Optional[float] = None
    tpot_s: Optional[float] = None
    e2e_s: Optional[float] = None
    tokens_per_s: Optional[float] = None
    prefill_tokens_per_s: Optional[float] = None
    notes: list[str] = field(default_factory=list)
    devices: int = 1                                   # tp x pp x dp
    tokens_per_s_per_device: Optional[float] = None    # tokens_per_s / devices
    requests: Optional[pd.DataFrame] = None            # chunked-prefill schedule: one row per request
    iterations: Optional[pd.DataFrame] = None          # chunked-prefill schedule: one row per iteration
    experts_touched: dict = field(default_factory=dict)  # MoE: {phase: routed experts read per MoE layer per step
                                                         # on one device}; empty for dense models
    energy: Optional[dict] = None                      # engine/results/energy.py energy_summary; None: energy unavailable
    validation: Optional[dict] = None                  # realistic methods: validated on measurements or not
                                                       # (engine/estimators/validity.py)

    _kernels: Optional[pd.DataFrame] = field(default=None, init=False, repr=False, compare=False)
    _phases: Optional[pd.DataFrame] = field(default=None, init=False, repr=False, compare=False)

    @property
    def kernels(self) -> pd.DataFrame:
        """One row per kernel (a DataFrame built on first use from `kernel_columns`, then kept)."""
        if self._kernels is None:
            self._kernels = self.kernel_columns.frame()
        return self._kernels

    @kernels.setter
    def kernels(self, frame: pd.DataFrame) -> None:
        self._kernels = frame

    @property
    def phases(self) -> pd.DataFrame:
        """Totals per phase, one row each (a DataFrame built on first use from `phase_rows`, then kept)."""
        if self._phases is None:
            self._phases = phase_frame(self.phase_rows)
        return self._phases

    @phases.setter
    def phases(self, frame: pd.DataFrame) -> None:
        self._phases = frame

    @property
    def total_time_s(self) -> float:
        if self._phases is not None:
            return float(self._phases["time_s"].sum())
        return float(np.nansum(np.array([row["time_s"] for row in self.phase_rows.values()], dtype=float)))

    @property
    def parallelism(self) -> dict:
        s = self.scenario
        return {"tp": s.tp, "pp": s.pp, "dp": s.dp, "ep": s.ep, "devices": s.device_count,
                "micro_batches": s.prefill_micro_batches, "overlap_communication": s.overlap_communication,
                "collective_algorithm": s.collective_algorithm}

    def schedule_summary(self) -> Optional[dict]:
        """Chunked-prefill schedule: iterations and the spread of TTFT / TPOT over the requests."""
        if self.requests is None or self.iterations is None:
            return None
        r, it = self.requests, self.iterations
        mixed = int(((it["prefill_tokens"] > 0) & (it["decode_tokens"] > 0)).sum())
        return {"iterations": int(len(it)), "mixed_iterations": mixed,
                "prefill_tokens": float(it["prefill_tokens"].sum()), "decode_tokens": float(it["decode_tokens"].sum()),
                "ttft_min_s": float(r["ttft_s"].min()), "ttft_mean_s": float(r["ttft_s"].mean()),
                "ttft_max_s": float(r["ttft_s"].max()), "tpot_mean_s": _clean(float(r["tpot_s"].mean())),
                "tpot_max_s": _clean(float(r["tpot_s"].max())), "e2e_max_s": float(r["e2e_s"].max())}

    def _phase_dicts(self) -> dict:
        if self._phases is not None:
            return {phase: {k: _clean(v) for k, v in row.items()} for phase, row in self._phases.iterrows()}
        return {phase: {k: _clean(float(v)) for k, v in row.items()} for phase, row in self.phase_rows.items()}

    def to_dict(self, include_kernels: bool = True) -> dict:
        result = {
            "hardware": self.hardware_name, "model": self.model_name, "method": self.method,
            "scenario": self.scenario.model_dump(),
            "phases": self._phase_dicts(),
            "ttft_s": self.ttft_s, "tpot_s": self.tpot_s, "e2e_s": self.e2e_s,
            "tokens_per_s": self.tokens_per_s, "prefill_tokens_per_s": self.prefill_tokens_per_s,
            "devices": self.devices, "parallelism": self.parallelism,
            "tokens_per_s_per_device": self.tokens_per_s_per_device,
            "memory": self.memory.to_dict(), "memory_total_bytes": self.memory.total_all_devices_bytes,
            "notes": list(self.notes),
            "experts_touched": {phase: _clean(value) for phase, value in self.experts_touched.items()},
            "energy": self.energy,
            "realistic_validation": self.validation,
        }
        summary = self.schedule_summary()
        if summary is not None:
            result["schedule"] = summary
        if include_kernels:
            columns = [c for c in JSON_KERNEL_COLUMNS if c in self.kernels]
            extra = [c for c in ("best_tiler", "exec_cycle", "cmp_cycle", "mem_cycle") if c in self.kernels]
            records = self.kernels[columns + extra].to_dict(orient="records")
            result["kernels"] = [{k: _clean(v) for k, v in row.items()} for row in records]
        return result
