"""The comparisons of benchmarks/monotonicity_hunt.py: improved devices, kernels as the table times them, a log.

- `improved(hw, knob, factor)`: the device with one workbook field better by `factor` (more bandwidth, cores, clock,
  matrix or vector rate, cache, links; less latency; a higher achievable fraction, at most 1).
- `kernel_seconds(result)`: one entry per kernel launch of an estimate: a row's time_s x count (time_s is per
  occurrence: micro-batch or decode step), a fused attention group's rows summed (one launch whose time the table
  shares out over its rows by their ideal times, so a single row may move either way), and a collective that overlaps
  its producer counted whole (its exposed part grows as the producer gets faster: that is the overlap, the total
  holds it).
- `compare` / `below_roofline`: every total (total_time_s, ttft_s, tpot_s) and every kernel of two estimates against a
  relative tolerance of RTOL; `Log` keeps the violations grouped by (property, method, knob, metric or kernel), the
  worst case of each and how often it was seen.
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict

import numpy as np
from pydantic import ValidationError

RTOL = 1e-9
MATRIX = [f"matrix_macs_per_cycle_per_core_{d}" for d in ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")]

# knob -> (workbook fields, how it improves): "up" x factor, "up_int" a whole number x factor (at least + 1),
# "down" / factor (latencies), "fraction" x factor at most 1 (achievable fractions of peak)
KNOBS = {
    "memory_bandwidth": (["memory_bandwidth_bytes_per_s"], "up"),
    "cores": (["num_cores"], "up_int"),
    "clock": (["clock_hz"], "up"),
    "matrix_rate": (MATRIX, "up"),
    "vector_rate": (["vector_flops_per_cycle_per_core"], "up"),
    "sram": (["sram_per_core_bytes"], "up"),
    "sram_bandwidth": (["sram_bandwidth_bytes_per_cycle_per_core"], "up"),
    "registers": (["register_file_per_core_bytes"], "up"),
    "llc": (["llc_capacity_bytes"], "up"),
    "llc_bandwidth": (["llc_bandwidth_bytes_per_s"], "up"),
    "link_bandwidth": (["link_bandwidth_bytes_per_s"], "up"),
    "num_links": (["num_links"], "up_int"),
    "inter_node_bandwidth": (["inter_node_bandwidth_bytes_per_s"], "up"),
    "link_latency": (["link_latency_s"], "down"),
    "inter_node_latency": (["inter_node_latency_s"], "down"),
    "launch_overhead": (["launch_overhead_s"], "down"),
    "kernel_latency": (["kernel_latency_s"], "down"),
    "devices_per_node": (["devices_per_node"], "up_int"),
    "matrix_fraction": (["achievable_matrix_fraction"], "fraction"),
    "memory_fraction": (["achievable_memory_bandwidth_fraction"], "fraction"),
    **{"rate_" + name.rsplit("_", 1)[1]: ([name], "up") for name in MATRIX},     # one format's rate alone
}


def improved(hw, knob: str, factor: float):
    """`hw` with `knob` better by `factor`, or None where the device leaves the field blank or it cannot improve."""
    fields, how = KNOBS[knob]
    changes = {}
    for name in fields:
        value = getattr(hw, name)
        if value is None:
            continue
        if how == "up":
            changes[name] = value * factor
        elif how == "up_int":
            changes[name] = max(int(math.ceil(value * factor)), value + 1)
        elif how == "down":
            changes[name] = value / factor
        elif min(1.0, value * factor) > value:
            changes[name] = min(1.0, value * factor)
    if not changes:
        return None
    try:
        return hw.with_changes(**changes)
    except ValidationError:         # beyond the workbook's physical limits
        return None


def kernel_seconds(result, fused_like=None) -> tuple[list[str], np.ndarray]:
    """(names, seconds) per kernel launch of an estimate (module docstring). `fused_like`: take the fused groups from
    this estimate of the same rows instead (the roofline has none: its rows summed as the realistic method fuses)."""
    columns = result.kernel_columns
    seconds = np.asarray(columns["time_s"], dtype=float)
    if getattr(result.scenario, "overlap_communication", False):
        collective = np.asarray(columns["op"]) == "collective"
        seconds = np.where(collective, np.asarray(columns["communication_time_s"], dtype=float), seconds)
    seconds = seconds * np.asarray(columns["count"], dtype=float)
    grouped = (fused_like or result).kernel_columns
    fused = (np.nan_to_num(np.asarray(grouped["fused_group"], dtype=float), nan=-1.0) if "fused_group" in grouped
             else np.full(len(seconds), -1.0))
    phases, names = list(columns["phase"]), list(columns["name"])
    keys, sums, first = [], [], {}
    for row, group in enumerate(fused.astype(int)):
        at = first.get((phases[row], group)) if group >= 0 else None
        if at is not None:
            keys[at] += "+" + names[row]
            sums[at] += seconds[row]
            continue
        if group >= 0:
            first[(phases[row], group)] = len(keys)
        keys.append(f"{phases[row]}/{names[row]}")
        sums.append(seconds[row])
    return keys, np.asarray(sums)


class Log:
    """Violations grouped by key (property, method, knob, metric or kernel), the worst kept; counts of checks."""

    def __init__(self):
        self.checks = defaultdict(int)
        self.rejected = defaultdict(int)
        self.worst = {}
        self.count = defaultdict(int)

    def violation(self, key, excess: float, case: str) -> None:
        self.count[key] += 1
        if key not in self.worst or excess > self.worst[key][0]:
            self.worst[key] = (excess, case)

    def report(self, out=sys.stdout) -> None:
        print(f"checks: {dict(self.checks)}", file=out)
        common = sorted(self.rejected.items(), key=lambda item: -item[1])[:12]
        print(f"not run (invalid for the device, model or phase; the commonest): {dict(common)}", file=out)
        if not self.worst:
            print("no violation", file=out)
        for key in sorted(self.worst, key=lambda k: -self.worst[k][0]):
            excess, case = self.worst[key]
            label = " | ".join(map(str, key))
            print(f"VIOLATION {label}: seen {self.count[key]}x, worst {excess:+.4g} relative: {case}", file=out)


LOG = Log()


def compare(prop: str, method: str, knob: str, base, other, case: str, expect="not_slower", rows=True) -> float:
    """`other` must not be slower than `base` (expect "not_slower") or not faster ("not_faster"), in every total and,
    with `rows`, every kernel (kernel_seconds). Logs each violation; returns the largest relative excess (0: none)."""
    sign = 1.0 if expect == "not_slower" else -1.0
    LOG.checks[prop] += 1
    worst = 0.0
    totals = [("total", base.total_time_s, other.total_time_s)]
    totals += [(metric, getattr(base, metric), getattr(other, metric)) for metric in ("ttft_s", "tpot_s")
               if getattr(base, metric) is not None and getattr(other, metric) is not None]
    for metric, before, after in totals:
        excess = sign * (after - before) / before if before > 0 else 0.0
        if excess > RTOL:
            LOG.violation((prop, method, knob, metric), excess, case)
            worst = max(worst, excess)
    if not rows:
        return worst
    names, before = kernel_seconds(base)
    other_names, after = kernel_seconds(other)
    if names != other_names:
        LOG.violation((prop, method, knob, "other kernels"), 1.0, case)
        return worst
    excess = sign * (after - before) / np.where(before > 0, before, 1.0)
    for row in np.nonzero(excess > RTOL)[0]:
        LOG.violation((prop, method, knob, "kernel " + names[row]), float(excess[row]), case)
        worst = max(worst, float(excess[row]))
    return worst


def below_roofline(method: str, result, roofline, case: str) -> float:
    """`result` (a realistic or hierarchical estimate) never faster than the roofline's, in total and per kernel."""
    LOG.checks["roofline"] += 1
    worst = 0.0
    if result.total_time_s < roofline.total_time_s * (1 - RTOL):
        worst = 1 - result.total_time_s / roofline.total_time_s
        LOG.violation(("roofline", method, "total"), worst, case)
    columns, ideal = result.kernel_columns, roofline.kernel_columns
    if list(columns["name"]) != list(ideal["name"]) or list(columns["phase"]) != list(ideal["phase"]):
        LOG.violation(("roofline", method, "other kernels than the roofline's"), 1.0, case)
        return worst
    names, seconds = kernel_seconds(result)
    _, ideal_seconds = kernel_seconds(roofline, fused_like=result)
    excess = 1 - seconds / np.where(ideal_seconds > 0, ideal_seconds, 1.0)
    for row in np.nonzero(excess > RTOL)[0]:
        LOG.violation(("roofline", method, "kernel " + names[row]), float(excess[row]), case)
        worst = max(worst, float(excess[row]))
    return worst
