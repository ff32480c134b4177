"""What scripts/build_specs.py and its per-family modules share: units, `cite`, common documents, and
the per-operation energy estimates (engine/results/energy.py) with their sources."""

from __future__ import annotations

from typing import Mapping, Optional

KiB, MiB = 1024, 1024**2
M = "matrix_macs_per_cycle_per_core_"
TENSOR_FIELDS = [M + d for d in ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")]


def cite(source: str, *keys: str, note: str = "") -> dict[str, tuple[str, str]]:
    return {key: (source, note) for key in keys}


# ---- documents used by several device families ---------------------------------------------
BUILD_SCRIPT = "scripts/build_specs.py (this project)"
CUDA_GUIDE = ("CUDA C++ Programming Guide, Compute Capabilities: shared memory has 32 banks, each 32 bits "
              "per clock (https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html)")
CUDA_GRAPHS = "NVIDIA Technical Blog, Getting Started with CUDA Graphs (https://developer.nvidia.com/blog/cuda-graphs/)"
LAUNCH_NOTE = ("assumption: 4 us per kernel, between the ~1 us exposed per back-to-back launch and the "
               "~6.7 us per launch with a sync after each kernel measured on V100 in the CUDA Graphs blog")
CUDA_REGISTERS = ("CUDA C++ Programming Guide, Compute Capabilities table: maximum number of 32-bit registers per "
                  "multiprocessor 64 K for compute capability 7.0-10.0 (https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html)")

# ---- energy (engine/results/energy.py): estimates, not datasheet values ---------------------------------
HOROWITZ = ("ESTIMATE from Horowitz, 'Computing's Energy Problem (and what we can do about it)', ISSCC 2014 "
            "(45 nm, 0.9 V): 16b FP mult 1.1 pJ, 32b FP add 0.9 pJ, 32b FP mult 3.7 pJ, 8b int mult 0.2 pJ, "
            "32b int add 0.1 pJ, 32 KB SRAM 64-bit read 20 pJ, 1 MB SRAM 64-bit read 100 pJ "
            "(https://doi.org/10.1109/ISSCC.2014.6757323)")
FGDRAM = ("ESTIMATE from O'Connor et al., 'Fine-Grained DRAM: Energy-Efficient DRAM for Extreme Bandwidth Systems', "
          "MICRO 2017: HBM2 about 3.9 pJ/bit moved (https://doi.org/10.1145/3123939.3124545)")
NVLINK_C2C = ("ESTIMATE from Wei et al., 'NVLink-C2C: A Coherent Off Package Chip-to-Chip Interconnect', ISSCC 2023 "
              "paper 9.3: NVLink-C2C 1.3 pJ/bit against about 5.5 pJ/bit for a conventional 112G SerDes link")
IDLE_POWER = ("ASSUMPTION (this project): static power = 15% of TDP, the order of the idle power of a data-centre "
              "GPU holding a CUDA context (Vadari et al., arXiv 2605.23918: the context adds 26-50 W over bare "
              "idle on A100/H100)")


def _pj(value: float) -> float:
    """Picojoules -> joules as the decimal shown (round-trips exactly through the workbook)."""
    return float(f"{round(value, 4)!r}e-12")


def _cheaper_formats(mac16: float, cheaper: Mapping[str, float], factor: str) -> tuple[dict, dict]:
    """Formats the matrix units run `multiple` x faster than bf16: 1/multiple of the bf16 MAC energy."""
    values, sources = {}, {}
    for dtype, multiple in cheaper.items():
        values[f"matrix_energy_j_per_mac_{dtype}"] = _pj(mac16 / multiple)
        share = "half the bf16 MAC energy: twice" if multiple == 2 else f"1/{multiple:g} of the bf16 MAC energy: {multiple:g}x"
        sources.update(cite(HOROWITZ, f"matrix_energy_per_mac_{dtype}",
                            note=f"{share} the bf16 rate at the same TDP; {factor}"))
    return values, sources


def energy_values(scale: float, node: str, tdp_w: Optional[float], cheaper: Mapping[str, float] = (),
                  fp32_matrix: bool = False, sram: bool = True, link: str = "NVLink") -> tuple[dict, dict]:
    """Per-operation energies: Horowitz's 45 nm figures x `scale` (an assumed process factor for `node`),
    HBM and link energies unscaled (I/O dominated), static power 15% of TDP (none when no TDP is published).

    cheaper: {dtype: matrix rate as a multiple of the bf16 rate} for formats cheaper per MAC than bf16
    (fp8 2, fp4 4 on B200 ...); fp32_matrix: the device has an fp32 matrix rate; sram: it has a per-core
    SRAM level (the `sram_per_core` row); link: the name of its scale-up link, for the note."""
    mac16, mac_int8, flop32 = (1.1 + 0.9) * scale, (0.2 + 0.1) * scale, (3.7 + 0.9) / 2 * scale
    values = dict(
        matrix_energy_j_per_mac_bf16=_pj(mac16), matrix_energy_j_per_mac_fp16=_pj(mac16),
        matrix_energy_j_per_mac_tf32=_pj(2 * mac16), matrix_energy_j_per_mac_int8=_pj(mac_int8),
        vector_energy_j_per_flop=_pj(flop32), sram_energy_j_per_byte=_pj(20 / 8 * scale),
        llc_energy_j_per_byte=_pj(100 / 8 * scale), memory_energy_j_per_byte=_pj(31.2),
        link_energy_j_per_bit=_pj(5.5),
    )
    factor = f"45 nm value x {scale} (assumed process-scaling factor for {node}; an estimate, not a measurement)"
    sources = {
        **cite(HOROWITZ, "matrix_energy_per_mac_bf16", "matrix_energy_per_mac_fp16",
               note=f"16b FP mult 1.1 + 32b FP add 0.9 (fp32 accumulate) = 2.0 pJ; {factor}"),
        **cite(HOROWITZ, "matrix_energy_per_mac_tf32", note=f"2x the bf16 MAC energy: half the bf16 rate at the same TDP; {factor}"),
        **cite(HOROWITZ, "matrix_energy_per_mac_int8", note=f"8b int mult 0.2 + 32b int add 0.1 = 0.3 pJ; {factor}"),
        **cite(HOROWITZ, "vector_energy_per_flop", note=f"32b FP FMA = mult 3.7 + add 0.9 = 4.6 pJ per 2 FLOP; {factor}; excludes instruction overhead"),
        **cite(HOROWITZ, "sram_energy_per_byte", note=f"32 KB SRAM: 20 pJ per 8 B = 2.5 pJ/B; {factor}"),
        **cite(HOROWITZ, "llc_energy_per_byte", note=f"1 MB SRAM: 100 pJ per 8 B = 12.5 pJ/B; {factor}"),
        **cite(FGDRAM, "memory_energy_per_byte", note="3.9 pJ/bit x 8 = 31.2 pJ/B; the HBM2 figure used for every HBM generation (estimate)"),
        **cite(NVLINK_C2C, "link_energy_per_bit", note=f"the ~5.5 pJ/bit SerDes figure taken for off-package {link} (estimate)"),
    }
    if tdp_w is not None:
        values["static_power_w"] = 0.15 * tdp_w
        sources.update(cite(IDLE_POWER, "static_power", note=f"0.15 x {tdp_w:g} W TDP = {0.15 * tdp_w:g} W (assumption)"))
    if fp32_matrix:
        values["matrix_energy_j_per_mac_fp32"] = _pj((3.7 + 0.9) * scale)
        sources.update(cite(HOROWITZ, "matrix_energy_per_mac_fp32",
                            note=f"32b FP mult 3.7 + 32b FP add 0.9 = 4.6 pJ; {factor}"))
    if not sram:
        del values["sram_energy_j_per_byte"], sources["sram_energy_per_byte"]
    cheap_values, cheap_sources = _cheaper_formats(mac16, dict(cheaper), factor)
    return {**values, **cheap_values}, {**sources, **cheap_sources}
