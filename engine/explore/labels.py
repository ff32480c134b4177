"""Labels and units of the hardware fields and metrics that engine/explore/hardware_sensitivity.py and inverse.py
report, and how their numbers are written ('3,350', '15.8 ms')."""

from __future__ import annotations

import math

FIELD_LABELS = {
    "memory_bandwidth": "memory bandwidth",
    "compute_scale": "compute (matrix + vector rates)",
    "matrix_tflops": "matrix peak (bf16)",
    "clock": "clock",
    "num_cores": "cores",
    "memory_capacity": "memory capacity",
    "llc_capacity": "LLC capacity",
    "llc_bandwidth": "LLC bandwidth",
    "sram_per_core": "SRAM per core",
    "sram_bandwidth_per_core": "SRAM bandwidth per core",
    "register_file_per_core": "register file per core",
    "link_bandwidth": "link bandwidth (per link)",
    "num_links": "links per device",
    "devices_per_node": "devices per node",
    "link_latency": "link latency",
    "inter_node_bandwidth": "inter-node bandwidth",
    "inter_node_latency": "inter-node latency",
    "launch_overhead": "launch overhead",
    "kernel_latency": "kernel latency",
    "achievable_matrix_fraction": "achievable matrix fraction",
    "achievable_memory_bandwidth_fraction": "achievable memory-bandwidth fraction",
    "tp": "devices (tensor-parallel ways)",
    "devices": "devices (tensor-parallel ways)",
}
METRIC_LABELS = {
    "ttft_s": "TTFT", "tpot_s": "TPOT", "e2e_s": "end-to-end latency", "time_s": "time",
    "tokens_per_s": "throughput", "tokens_per_s_per_device": "throughput per device",
    "prefill_tokens_per_s": "prefill throughput", "tokens_per_j": "energy efficiency",
    "energy_j": "energy", "energy_per_token_j": "energy per token", "average_power_w": "average power",
}
METRIC_UNITS = {
    "ttft_s": "s", "tpot_s": "s", "e2e_s": "s", "time_s": "s", "tokens_per_s": "tokens/s",
    "tokens_per_s_per_device": "tokens/s/device", "prefill_tokens_per_s": "tokens/s", "tokens_per_j": "tokens/J",
    "energy_j": "J", "energy_per_token_j": "J/token", "average_power_w": "W",
}


def field_label(field: str) -> str:
    return FIELD_LABELS.get(field, field.replace("_", " "))


def metric_label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric)


def format_number(value: float) -> str:
    """3350 -> '3,350'; 1.83 -> '1.83'; 100000 -> '100,000'."""
    if value is None or not math.isfinite(value):
        return str(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def format_metric(metric: str, value: float) -> str:
    """A metric value with its unit: seconds as s/ms/us, rates with theirs."""
    if value is None or not math.isfinite(value):
        return "n/a"
    unit = METRIC_UNITS.get(metric, "")
    if unit == "s":
        for scale, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
            if abs(value) >= scale * 0.9995 or name == "us":
                return f"{_three_digits(value / scale)} {name}"
    return f"{format_number(value)} {unit}".strip()


def _three_digits(value: float) -> str:
    """About three significant digits without an exponent: 15.78 -> '15.8', 999.98 -> '1000', 0.5 -> '0.5'."""
    digits = max(0, 2 - math.floor(math.log10(abs(value)))) if value else 0
    text = f"{value:,.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
