"""Usual ranges of the workbook's numbers, and the unit slips that would explain a value outside them.

Hardware's Field limits (engine/hardware/device.py) refuse what no chip could have. Inside them, a value far
from every real device is more often a unit slip (a bandwidth in TB/s typed into the GB/s column,
2.048 for a datasheet's 2048) than a bold design, so it loads with a warning naming the cell, the
value, the usual range and the likely slip. Hypothetical chips may be unusual: they are warned
about, never refused.

The usual ranges are in workbook units and span the bundled devices (A100..B200, MI300X, TPU-v5e,
T4, L4, V100 and the seed's NVL-AX and JGS) with room for the next generation at about 2x B200
(GB200, B300, GB300), CPUs with matrix units and small edge accelerators.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from engine.hardware.dtypes import MATRIX_DTYPES
from engine.hardware.device import WORKBOOK_FIELD_BY_KEY

# (low, high) in the unit of the workbook row
USUAL_RANGES: dict[str, tuple[float, float]] = {
    "num_cores": (1, 4096),                # SMs / CUs / TensorCores; 304 on MI300X, 192 on large CPUs
    "clock": (0.3, 5.0),                   # GHz
    # MAC/cycle/core: 128 (MI300X fp32) .. 131,072 (TPU-v5e int8)
    **{f"matrix_macs_per_cycle_per_core_{d}": (16, 2**22) for d in MATRIX_DTYPES},
    "vector_flops_per_cycle_per_core": (8, 65536),  # 128 (GPU SM) .. 4096 (TPU VPU)
    "memory_capacity": (1, 4096),          # GB: 16 (T4) .. 288 (B300)
    "memory_bandwidth": (50, 50_000),      # GB/s: 300 (L4) .. 32,985 (seed JGS)
    "sram_per_core": (8, 262_144),         # KiB: 96 .. 256 on GPUs; up to 256 MiB for a TPU-like core
    "sram_bandwidth_per_core": (16, 65536),  # B/cycle/core: 128 on GPUs
    "register_file_per_core": (1, 262_144),  # KiB: 2 (a CPU core's vector registers) .. 512 (MI300X CU)
    "llc_capacity": (0.5, 65536),          # MiB: 4 (T4) .. 256 (MI300X)
    "llc_bandwidth": (100, 500_000),       # GB/s: 3,133 (V100) .. 18,018 (TPU-v5e)
    "link_bandwidth": (1, 2000),           # GB/s per link and direction: 16 (PCIe 3) .. 64 (MI300X)
    "num_links": (1, 128),
    "devices_per_node": (1, 16384),        # 8 (HGX) .. 256 (TPU-v5e pod) .. 9,216 (largest TPU pods)
    "link_latency": (0.05, 100),           # us
    "inter_node_bandwidth": (1, 300),      # GB/s per device and direction: 3.125 (TPU DCN) .. 50 (400G NIC)
    "inter_node_latency": (0.1, 1000),     # us
    "tdp": (10, 5000),                     # W: 70 (T4) .. 1000 (B200); a GB200 superchip draws 2,700
    "launch_overhead": (0.1, 1000),        # us
    "kernel_latency": (0.1, 1000),         # us
    "achievable_matrix_fraction": (0.2, 1.0),
    "achievable_memory_bandwidth_fraction": (0.2, 1.0),
    **{f"matrix_energy_per_mac_{d}": (0.005, 20) for d in MATRIX_DTYPES},   # pJ/MAC: 0.06 (int8) .. 1 (tf32)
    "vector_energy_per_flop": (0.01, 50),  # pJ/FLOP
    "memory_energy_per_byte": (1, 1000),   # pJ/B: 31 for HBM, ~120 for DDR
    "llc_energy_per_byte": (0.05, 100),    # pJ/B
    "sram_energy_per_byte": (0.01, 50),    # pJ/B
    "link_energy_per_bit": (0.1, 100),     # pJ/bit
    "static_power": (1, 3000),             # W
}

# value x factor is what the user meant when the value was typed in `name` instead of the row's unit
_SLIPS_BY_UNIT: dict[str, tuple[tuple[float, str], ...]] = {
    "GB/s": ((1e3, "TB/s"), (1e-3, "MB/s"), (1 / 8, "Gb/s (bits)")),
    "GB": ((1e3, "TB"), (1e-3, "MB"), (1e-9, "bytes")),
    "GHz": ((1e-3, "MHz"), (1e-9, "Hz")),
    "KiB": ((1024, "MiB"), (1 / 1024, "bytes")),
    "MiB": ((1024, "GiB"), (1 / 1024, "KiB"), (1 / 1024**2, "bytes")),
    "us": ((1e3, "ms"), (1e-3, "ns"), (1e6, "s")),
    "W": ((1e3, "kW"), (1e-3, "mW")),
    "fraction": ((1e-2, "percent"),),
}
_PICO = ((1e3, "nJ"), (1e-3, "fJ"))
_COUNT_SLIPS = ((1e3, None), (1e-3, None))


@dataclass(frozen=True)
class SpecsWarning:
    """An unusual value that still loads: where it is, what it is, and the slip that would explain it."""

    sheet: str
    cell: str
    field: str
    device: str
    value: float
    usual: tuple[float, float]
    message: str

    def __str__(self) -> str:
        return f"{self.sheet}!{self.cell}: {self.message}"


def _short(x: float) -> str:
    text = f"{x:.6g}"
    return text if "e" not in text else f"{x:.3g}"


def _slips(key: str) -> tuple[tuple[float, Optional[str]], ...]:
    unit = WORKBOOK_FIELD_BY_KEY[key].unit
    if unit.startswith("pJ/"):
        return tuple((factor, f"{prefix}/{unit[3:]}") for factor, prefix in _PICO)
    return _SLIPS_BY_UNIT.get(unit, _COUNT_SLIPS)


def _unit(key: str) -> str:
    unit = WORKBOOK_FIELD_BY_KEY[key].unit
    return "" if unit == "count" else f" {unit}"


def slip_hint(key: str, value: float) -> Optional[str]:
    """'likely typed in TB/s: 3.35 TB/s is 3350 GB/s' when a usual unit slip lands `value` in range."""
    if key not in USUAL_RANGES or not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    low, high = USUAL_RANGES[key]
    unit = _unit(key)
    for factor, typed_in in _slips(key):
        meant = value * factor
        if low <= meant <= high:
            if typed_in is None:
                size = "a thousandth of" if factor > 1 else "a thousand times"
                return f"{size} a usual value: was {_short(meant)}{unit} meant?"
            return f"likely typed in {typed_in}: {_short(value)} {typed_in} is {_short(meant)}{unit}"
    return None


def unusual_value(key: str, value: float) -> Optional[tuple[str, tuple[float, float]]]:
    """(what is unusual and the likely slip, the usual range) when `value` (workbook units) is outside
    the usual range of `key`, else None."""
    if key not in USUAL_RANGES:
        return None
    low, high = USUAL_RANGES[key]
    if low <= value <= high:
        return None
    unit = _unit(key)
    hint = slip_hint(key, value) or (f"check the unit (values in this row are read as{unit or ' a count'}); "
                                     "ignore this warning if the device really is unusual")
    return f"{_short(value)}{unit}, outside the usual range {_short(low)} to {_short(high)}{unit}; {hint}", (low, high)
