"""Hardware: one accelerator's datasheet numbers, in SI units, and the peaks derived from them.

Every number is stored once, in SI units with the unit in its name (`clock_hz`,
`memory_bandwidth_bytes_per_s`). Peaks (`matrix_flops_per_s`, `vector_flops_per_s`) are
derived, never typed. The workbook (`specs.py`) converts from datasheet units at the edge;
`WORKBOOK_FIELDS` below says how each workbook row maps onto a field here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from engine.hardware.dtypes import MATRIX_DTYPES, MATRIX_FALLBACK, check_dtype
from engine.common.frozen_hash import hash_once

PositiveRate = Optional[float]


class Hardware(BaseModel):
    """A device. Optional fields are None when the datasheet does not publish them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def __hash__(self) -> int:     # pydantic's hash of the field values, once per object (common/frozen_hash.py)
        return hash_once(self)

    name: str = Field(min_length=1)
    vendor: str = Field(min_length=1)
    kind: str = Field(min_length=1, description="gpu, tpu, npu, cpu or hypothetical")
    notes: str = ""

    # Limits are physical: a value outside them describes no chip that could exist, so the workbook refuses
    # it naming the cell (a merely unusual value is warned about instead: engine/hardware/specs/plausible.py). Lower
    # bounds are positive because every rate, size and energy here is something a real device has (zero
    # would divide by zero or mean "infinitely fast"); upper bounds sit far beyond the largest chip ever
    # built, Cerebras' wafer-scale WSE-3 (900,000 cores, 44 GB SRAM at 21 PB/s, 23 kW system).
    num_cores: int = Field(ge=1, le=10_000_000, description="SMs / compute units / cores")  # 11x WSE-3's cores
    clock_hz: float = Field(ge=1e6, le=1e10)  # 1 MHz (slower than any microcontroller) .. 10 GHz (above any CMOS logic)

    # MAC/cycle/core: below 1/100 a core's matrix unit would be slower than its own scalar FMA pipe; 1e8 per
    # core is a 10,000 x 10,000 systolic array, 760x a TPU v5e core's 131,072 int8 MACs per clock
    matrix_macs_per_cycle_per_core_fp32: PositiveRate = Field(None, ge=0.01, le=1e8)
    matrix_macs_per_cycle_per_core_tf32: PositiveRate = Field(None, ge=0.01, le=1e8)
    matrix_macs_per_cycle_per_core_bf16: PositiveRate = Field(None, ge=0.01, le=1e8)
    matrix_macs_per_cycle_per_core_fp16: PositiveRate = Field(None, ge=0.01, le=1e8)
    matrix_macs_per_cycle_per_core_fp8: PositiveRate = Field(None, ge=0.01, le=1e8)
    matrix_macs_per_cycle_per_core_int8: PositiveRate = Field(None, ge=0.01, le=1e8)
    matrix_macs_per_cycle_per_core_fp4: PositiveRate = Field(None, ge=0.01, le=1e8)
    # any vector unit does an op per cycle or so; 1e7 is 2,400x a TPU v5e core's VPU (4096 FLOP/cycle)
    vector_flops_per_cycle_per_core: float = Field(ge=0.01, le=1e7, description="fp32, FMA = 2 FLOP")

    # 1 MB holds not one layer of any LLM; 100 TB is 350x a B300's 288 GB (a whole GB200 NVL72 rack has 13.5 TB)
    memory_capacity_bytes: float = Field(ge=1e6, le=1e14)
    # 10 MB/s is slower than a 1990s PC's memory bus; 1 PB/s is 125x a B200's 8 TB/s (an HBM stack gives ~2 TB/s)
    memory_bandwidth_bytes_per_s: float = Field(ge=1e7, le=1e15)

    # on-chip: at least 1 KiB of L1 and 64 B of registers (a handful of vector registers) per core; at most
    # 1 GiB per core, 100 GB of last-level cache (2x WSE-3's whole SRAM) at 1e17 B/s (5x WSE-3's 21 PB/s)
    sram_per_core_bytes: PositiveRate = Field(None, ge=1024, le=2**30)
    sram_bandwidth_bytes_per_cycle_per_core: PositiveRate = Field(None, ge=1, le=1e6)
    register_file_per_core_bytes: PositiveRate = Field(None, ge=64, le=2**30)
    llc_capacity_bytes: PositiveRate = Field(None, ge=1024, le=1e11)
    llc_bandwidth_bytes_per_s: PositiveRate = Field(None, ge=1e7, le=1e17)

    # links: 1 MB/s (slower than USB 1.1) .. 10 TB/s per link (200x NVLink 5's 50 GB/s per link and
    # direction); latency 1 ns (light crosses 30 cm) .. 10 ms scale-up / 100 ms scale-out (around the globe)
    link_bandwidth_bytes_per_s: PositiveRate = Field(None, ge=1e6, le=1e13, description="per link, per direction")
    num_links: Optional[int] = Field(None, ge=1, le=1024)
    devices_per_node: Optional[int] = Field(None, ge=1, le=100_000)  # 10x the largest TPU pod (9,216 chips)
    link_latency_s: PositiveRate = Field(None, ge=1e-9, le=0.01)
    inter_node_bandwidth_bytes_per_s: PositiveRate = Field(None, ge=1e6, le=1e13,
                                                           description="per device, per direction")
    inter_node_latency_s: PositiveRate = Field(None, ge=1e-9, le=0.1)

    tdp_w: PositiveRate = Field(None, ge=1e-3, le=1e5)  # 1 mW (a microcontroller NPU) .. 100 kW (4x a CS-3 system)
    launch_overhead_s: PositiveRate = Field(None, ge=1e-9, le=0.01)  # 1 ns (a few cycles) .. 10 ms

    # realistic method (engine/estimators/realistic.py); blank values fall back to documented defaults
    kernel_latency_s: PositiveRate = Field(None, ge=1e-9, le=0.01, description="device time of a GEMM beyond its work")
    gemm_tile_shapes: Optional[str] = Field(None, description="CTA tiles 'MxN,MxN,...' the GEMM kernels use")
    # a kernel reaching under 1% of peak is not what the realistic method models; above 1 is beyond peak
    achievable_matrix_fraction: PositiveRate = Field(None, ge=0.01, le=1)
    achievable_memory_bandwidth_fraction: PositiveRate = Field(None, ge=0.01, le=1)

    # energy (engine/results/energy.py): per-operation energies and static power; blank = energy unavailable.
    # Lower bounds: 1e-17 J per MAC/FLOP and 1e-16 J per byte/bit are ~1000x below today's best (int8 MAC
    # ~0.05 pJ, SRAM ~0.1 pJ/B) and within a few thousand times the Landauer limit (3e-21 J per bit at 300 K)
    matrix_energy_j_per_mac_fp32: PositiveRate = Field(None, ge=1e-17, le=1e-9)
    matrix_energy_j_per_mac_tf32: PositiveRate = Field(None, ge=1e-17, le=1e-9)
    matrix_energy_j_per_mac_bf16: PositiveRate = Field(None, ge=1e-17, le=1e-9)
    matrix_energy_j_per_mac_fp16: PositiveRate = Field(None, ge=1e-17, le=1e-9)
    matrix_energy_j_per_mac_fp8: PositiveRate = Field(None, ge=1e-17, le=1e-9)
    matrix_energy_j_per_mac_int8: PositiveRate = Field(None, ge=1e-17, le=1e-9)
    matrix_energy_j_per_mac_fp4: PositiveRate = Field(None, ge=1e-17, le=1e-9)
    vector_energy_j_per_flop: PositiveRate = Field(None, ge=1e-17, le=1e-9)
    memory_energy_j_per_byte: PositiveRate = Field(None, ge=1e-16, le=1e-8)
    llc_energy_j_per_byte: PositiveRate = Field(None, ge=1e-16, le=1e-8)
    sram_energy_j_per_byte: PositiveRate = Field(None, ge=1e-16, le=1e-8)
    link_energy_j_per_bit: PositiveRate = Field(None, ge=1e-16, le=1e-9)
    static_power_w: PositiveRate = Field(None, ge=1e-3, le=1e5)

    @field_validator("gemm_tile_shapes")
    @classmethod
    def _tile_list(cls, value: Optional[str]) -> Optional[str]:
        """'256x128, 128x128' -> '256x128,128x128'; every tile is two whole numbers >= 1."""
        if value is None or not str(value).strip():
            return None
        tiles = [t.strip().lower() for t in str(value).split(",") if t.strip()]
        for tile in tiles:
            parts = tile.split("x")
            if len(parts) != 2 or not all(p.strip().isdigit() and int(p) >= 1 for p in parts):
                raise ValueError(f"tile {tile!r} is not 'MxN' with whole numbers (e.g. '256x128,128x128')")
        return ",".join("x".join(str(int(p)) for p in tile.split("x")) for tile in tiles)

    @model_validator(mode="after")
    def _has_a_matrix_rate(self) -> "Hardware":
        if not self.matrix_dtypes:
            raise ValueError(
                "no matrix_macs_per_cycle_per_core_<dtype> value: a device needs at least one matrix rate"
            )
        return self

    # ---- derived peaks -------------------------------------------------------------------
    @property
    def matrix_dtypes(self) -> tuple[str, ...]:
        """Formats the matrix units are rated for, in MATRIX_DTYPES order."""
        fields = self.__dict__
        return tuple(d for d, name in _MATRIX_RATE_FIELDS if fields[name] is not None)

    def matrix_rate_dtype(self, dtype: str) -> str:
        """The format the matrix units run `dtype` work in (itself or its fallback), or "vector"
        when no matrix format fits (fp32 GEMMs on a T4 run on the CUDA cores). Kept per (device, dtype)."""
        return _matrix_rate_dtype(self, dtype)

    def matrix_macs_per_s(self, dtype: str) -> float:
        rate_dtype = self.matrix_rate_dtype(dtype)
        if rate_dtype == "vector":
            return self.vector_flops_per_s / 2.0
        per_cycle = getattr(self, f"matrix_macs_per_cycle_per_core_{rate_dtype}")
        return self.num_cores * self.clock_hz * per_cycle

    def matrix_flops_per_s(self, dtype: str) -> float:
        return 2.0 * self.matrix_macs_per_s(dtype)

    @property
    def vector_flops_per_s(self) -> float:
        return self.num_cores * self.clock_hz * self.vector_flops_per_cycle_per_core

    def ridge_point(self, dtype: str) -> float:
        """Arithmetic intensity (FLOP/byte) where matrix compute and HBM bandwidth balance."""
        return self.matrix_flops_per_s(dtype) / self.memory_bandwidth_bytes_per_s

    @property
    def sram_bandwidth_bytes_per_s(self) -> Optional[float]:
        if self.sram_bandwidth_bytes_per_cycle_per_core is None:
            return None
        return self.num_cores * self.clock_hz * self.sram_bandwidth_bytes_per_cycle_per_core

    @property
    def tile_shapes(self) -> Optional[tuple[tuple[int, int], ...]]:
        """gemm_tile_shapes as ((tile_m, tile_n), ...), or None when the spec leaves it blank."""
        if self.gemm_tile_shapes is None:
            return None
        return tuple(tuple(int(p) for p in tile.split("x")) for tile in self.gemm_tile_shapes.split(","))

    def with_changes(self, **changes) -> "Hardware":
        """A validated copy with some fields changed (what-if edits)."""
        return Hardware.model_validate({**self.model_dump(), **changes})


_MATRIX_RATE_FIELDS = tuple((d, f"matrix_macs_per_cycle_per_core_{d}") for d in MATRIX_DTYPES)


@dataclass(frozen=True)
class WorkbookField:
    """How one row of the `hardware` sheet maps onto a Hardware field.

    value_in_si = value_in_workbook * scale. `key` is the row label users see.
    """

    key: str
    attribute: str
    unit: str
    scale: float
    description: str
    text: bool = False
    required: bool = True


def _matrix_fields() -> list[WorkbookField]:
    return [
        WorkbookField(
            f"matrix_macs_per_cycle_per_core_{d}",
            f"matrix_macs_per_cycle_per_core_{d}",
            "MAC/cycle/core",
            1.0,
            f"Dense {d} multiply-accumulates per clock per core on the matrix units "
            "(tensor cores / MXU); blank if the device has no dense matrix rate for this format. "
            "Never a sparsity figure.",
            required=False,
        )
        for d in MATRIX_DTYPES
    ]


WORKBOOK_FIELDS: tuple[WorkbookField, ...] = (
    WorkbookField("vendor", "vendor", "text", 1.0, "Maker of the device.", text=True),
    WorkbookField("kind", "kind", "text", 1.0, "gpu, tpu, npu, cpu or hypothetical.", text=True),
    WorkbookField("notes", "notes", "text", 1.0, "Free text: variant, assumptions, unit caveats.", text=True, required=False),
    WorkbookField("num_cores", "num_cores", "count", 1.0, "Cores: SMs (NVIDIA), CUs (AMD), TensorCores (TPU)."),
    WorkbookField("clock", "clock_hz", "GHz", 1e9, "Clock at which the datasheet's peak rates are quoted (boost clock)."),
    *_matrix_fields(),
    WorkbookField(
        "vector_flops_per_cycle_per_core", "vector_flops_per_cycle_per_core", "FLOP/cycle/core", 1.0,
        "fp32 FLOP per clock per core on the vector/SIMD units (CUDA cores, VPU); an FMA counts 2.",
    ),
    WorkbookField("memory_capacity", "memory_capacity_bytes", "GB", 1e9, "Device memory (HBM/GDDR) capacity, 1 GB = 1e9 B."),
    WorkbookField("memory_bandwidth", "memory_bandwidth_bytes_per_s", "GB/s", 1e9, "Peak device memory bandwidth, 1 GB/s = 1e9 B/s."),
    WorkbookField("sram_per_core", "sram_per_core_bytes", "KiB", 1024.0, "Per-core SRAM (L1 + shared memory) capacity.", required=False),
    WorkbookField(
        "sram_bandwidth_per_core", "sram_bandwidth_bytes_per_cycle_per_core", "B/cycle/core", 1.0,
        "Per-core SRAM/L1 load bandwidth per clock.", required=False,
    ),
    WorkbookField(
        "register_file_per_core", "register_file_per_core_bytes", "KiB", 1024.0,
        "Per-core register file capacity (the hierarchical method's innermost tile).", required=False,
    ),
    WorkbookField(
        "llc_capacity", "llc_capacity_bytes", "MiB", 1024.0**2,
        "Last-level on-chip cache: L2 on NVIDIA, Infinity Cache on AMD, CMEM/VMEM on TPU, the seed's 'L3'.",
        required=False,
    ),
    WorkbookField("llc_bandwidth", "llc_bandwidth_bytes_per_s", "GB/s", 1e9, "Last-level cache bandwidth where published.", required=False),
    WorkbookField("link_bandwidth", "link_bandwidth_bytes_per_s", "GB/s", 1e9, "Scale-up link bandwidth per link per direction (NVLink, Infinity Fabric, ICI, PCIe).", required=False),
    WorkbookField("num_links", "num_links", "count", 1.0, "Scale-up links per device.", required=False),
    WorkbookField("devices_per_node", "devices_per_node", "count", 1.0, "Devices in one scale-up domain (node / pod slice).", required=False),
    WorkbookField("link_latency", "link_latency_s", "us", 1e-6, "One-hop latency of the scale-up link.", required=False),
    WorkbookField("inter_node_bandwidth", "inter_node_bandwidth_bytes_per_s", "GB/s", 1e9, "Scale-out bandwidth per device per direction (NIC).", required=False),
    WorkbookField("inter_node_latency", "inter_node_latency_s", "us", 1e-6, "Scale-out one-hop latency.", required=False),
    WorkbookField("tdp", "tdp_w", "W", 1.0, "Thermal design power.", required=False),
    WorkbookField("launch_overhead", "launch_overhead_s", "us", 1e-6, "Host-side kernel launch overhead per kernel.", required=False),
    WorkbookField(
        "kernel_latency", "kernel_latency_s", "us", 1e-6,
        "Device time a GEMM or fused-attention kernel takes beyond its work (start-up, pipeline fill, tail); "
        "realistic method (fitted where measured).", required=False,
    ),
    WorkbookField(
        "gemm_tile_shapes", "gemm_tile_shapes", "text", 1.0,
        "CTA tiles (rows x columns of C) the device's GEMM kernels use, e.g. '256x128,128x128,64x64'; "
        "realistic method (blank: the CUTLASS SM80 list).", text=True, required=False,
    ),
    WorkbookField(
        "achievable_matrix_fraction", "achievable_matrix_fraction", "fraction", 1.0,
        "Fraction of the peak matrix rate a GEMM main loop sustains; realistic method (fitted where measured).",
        required=False,
    ),
    WorkbookField(
        "achievable_memory_bandwidth_fraction", "achievable_memory_bandwidth_fraction", "fraction", 1.0,
        "Fraction of peak memory bandwidth a GEMM/GEMV streams its operands at; realistic method "
        "(fitted where measured).", required=False,
    ),
)

def _energy_fields() -> list[WorkbookField]:
    per_mac = [
        WorkbookField(
            f"matrix_energy_per_mac_{d}", f"matrix_energy_j_per_mac_{d}", "pJ/MAC", 1e-12,
            f"Energy of one dense {d} multiply-accumulate on the matrix units (operands from registers); "
            "energy method, blank if not estimated.", required=False,
        )
        for d in MATRIX_DTYPES
    ]
    return per_mac + [
        WorkbookField("vector_energy_per_flop", "vector_energy_j_per_flop", "pJ/FLOP", 1e-12,
                      "Energy of one fp32 FLOP on the vector units (an FMA is 2 FLOP).", required=False),
        WorkbookField("memory_energy_per_byte", "memory_energy_j_per_byte", "pJ/B", 1e-12,
                      "Energy to move one byte between device memory (HBM/GDDR) and the chip.", required=False),
        WorkbookField("llc_energy_per_byte", "llc_energy_j_per_byte", "pJ/B", 1e-12,
                      "Energy to move one byte between the last-level cache and the cores.", required=False),
        WorkbookField("sram_energy_per_byte", "sram_energy_j_per_byte", "pJ/B", 1e-12,
                      "Energy to move one byte between per-core SRAM (L1/shared) and the registers.", required=False),
        WorkbookField("link_energy_per_bit", "link_energy_j_per_bit", "pJ/bit", 1e-12,
                      "Energy to send one bit over a scale-up link.", required=False),
        WorkbookField("static_power", "static_power_w", "W", 1.0,
                      "Static/idle power drawn whenever the device is busy or waiting (leakage, clocks, fans "
                      "excluded); energy = static power x time + dynamic energy.", required=False),
    ]


WORKBOOK_FIELDS = WORKBOOK_FIELDS + tuple(_energy_fields())

WORKBOOK_FIELD_BY_KEY: dict[str, WorkbookField] = {f.key: f for f in WORKBOOK_FIELDS}


@lru_cache(maxsize=1024)
def _matrix_rate_dtype(hardware: Hardware, dtype: str) -> str:
    """Hardware.matrix_rate_dtype, once per (device, dtype): a frozen Hardware answers alike every time."""
    rated = hardware.matrix_dtypes
    for candidate in MATRIX_FALLBACK[check_dtype(dtype)]:
        if candidate in rated:
            return candidate
    return "vector"

