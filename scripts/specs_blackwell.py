"""NVIDIA Blackwell devices of the bundled workbook: B200, GB200, B300 and GB300, with their sources.

Same rules as scripts/build_specs.py: per-cycle figures are architectural integers, the clock is fitted
so the SM count reproduces the dense bf16 headline, dense figures only (NVIDIA quotes most Blackwell
rates "with sparsity": those are halved; NVFP4 is quoted sparse | dense). Where NVIDIA publishes no
figure the note says ASSUMPTION and why.
"""

from __future__ import annotations

from engine.hardware.device import Hardware
from scripts.specs_common import (
    BUILD_SCRIPT, CUDA_GRAPHS, CUDA_GUIDE, CUDA_REGISTERS, LAUNCH_NOTE, KiB, M, MiB, cite, energy_values,
)

# ---- documents -----------------------------------------------------------------------------
HGX_PAGE = "NVIDIA HGX platform specifications, HGX B200 column (https://www.nvidia.com/en-us/data-center/hgx/)"
HGX_B300 = ("NVIDIA HGX platform specifications, HGX B300 column (https://www.nvidia.com/en-us/data-center/hgx/): "
            "8 GPUs; FP4 144 | 108 PFLOPS (sparse | dense), FP8/FP6 72, FP16/BF16 36, TF32 18 PFLOPS (with "
            "sparsity), FP32 600 TFLOPS, up to 2.3 TB memory, NVLink 1.8 TB/s per GPU, networking 1.6 TB/s")
DGX_B200 = "NVIDIA DGX B200 datasheet (https://www.nvidia.com/en-us/data-center/dgx-b200/)"
DGX_B300 = ("NVIDIA DGX B300 datasheet (https://www.nvidia.com/en-us/data-center/dgx-b300/): 8 Blackwell Ultra GPUs, "
            "2.3 TB GPU memory, 8x OSFP ConnectX-8 VPI 800 Gb/s")
DGX_GB200 = ("NVIDIA DGX GB200 datasheet (https://www.nvidia.com/en-us/data-center/dgx-gb200/): 72 Blackwell GPUs per "
             "rack, 72x OSFP single-port ConnectX-7 VPI 400 Gb/s InfiniBand")
GB200_NVL72 = ("NVIDIA GB200 NVL72 product page and datasheet (https://www.nvidia.com/en-us/data-center/gb200-nvl72/): "
               "72 GPUs in one NVLink domain; FP4 1,440 PFLOPS, FP8/FP6 720 PFLOPS, INT8 720 POPS, FP16/BF16 360 "
               "PFLOPS, TF32 180 PFLOPS (with sparsity); up to 13.4 TB HBM3e at 576 TB/s; NVLink 130 TB/s")
GB300_NVL72 = ("NVIDIA GB300 NVL72 product page and datasheet (https://www.nvidia.com/en-us/data-center/gb300-nvl72/): "
               "72 Blackwell Ultra GPUs in one NVLink domain; FP4 1,440 | 1,080 PFLOPS (sparse | dense), FP8/FP6 "
               "720 PFLOPS, FP16/BF16 360 PFLOPS, TF32 180 PFLOPS (with sparsity); up to 20 TB HBM3e at 576 TB/s; "
               "NVLink 130 TB/s; one ConnectX-8 800 Gb/s SuperNIC per GPU")
BWU_BLOG = ("NVIDIA Technical Blog, Inside NVIDIA Blackwell Ultra: The Chip Powering the AI Factory Era "
            "(https://developer.nvidia.com/blog/inside-nvidia-blackwell-ultra-the-chip-powering-the-ai-factory-era): "
            "160 SMs in the full GPU, 4 Tensor Cores and 128 CUDA cores per SM, 15 PFLOPS dense NVFP4, "
            "288 GB HBM3E at 8 TB/s, NVLink 5 1.8 TB/s")
BLACKWELL_TUNING = ("NVIDIA Blackwell Tuning Guide, 1.4.2.2 Increased L2 Capacity (126 MB) and 1.4.2.3 Unified "
                    "Shared Memory/L1 (256 KB per SM on B200) (https://docs.nvidia.com/cuda/blackwell-tuning-guide/)")
HOTCHIPS_TOMS = ("Tom's Hardware, Nvidia shares Blackwell Ultra's secrets (Hot Chips 2025), per-package table B200 "
                 "(GB200) vs B300 (GB300): GPU TDP 1,200 W vs 1,400 W, INT8 4.5 vs 0.319 POPS, FP32 0.083 PFLOPS "
                 "(https://www.tomshardware.com/pc-components/gpus/nvidia-shares-blackwell-ultras-secrets-nvfp4-boost-"
                 "detailed-and-pcie-6-0-support)")
AIC_SYSTEMS = ("NVIDIA aiconfigurator-core 0.12.0 (PyPI, Apache-2.0), aiconfigurator_core/systems/{gb200,b300_sxm,"
               "gb300}.yaml: NVIDIA's system descriptions (dense tensor FLOP/s per GPU, memory, power, NICs)")
QUICKRUN_B300 = ("ademeure/QuickRunCUDA (GitHub), b300_clean/B300_TRUE_REFERENCE.md, measurements on a B300 SXM6 AC "
                 "(2026-04-18): 148 SMs, L2 126 MB, 228 KB shared memory per SM, boost 2,032 MHz, power limit "
                 "200-1,100 W, HBM3E spec 7,672 GB/s")
B200_CNC = "Chips and Cheese, Nvidia's B200: Keeping the CUDA Juggernaut Rolling (https://chipsandcheese.com/p/nvidias-b200-keeping-the-cuda-juggernaut)"
B200_GLENN = "Glenn Lockwood, B200 notes citing NVIDIA specifications (https://glennklockwood.com/garden/processors/B200)"
B300_GLENN = "Glenn Lockwood, B300 notes citing NVIDIA specifications (https://glennklockwood.com/garden/processors/B300)"

SMS = 148                                   # enabled SMs on every Blackwell datacenter part here
NODE = "TSMC 4NP (Blackwell; assumed like 4N)"


def fitted_clock(dense_bf16_flops: float) -> float:
    """The clock (rounded to 1 MHz) at which 148 SMs x 4096 bf16 MAC/cycle give the dense headline."""
    return round(dense_bf16_flops / (2 * SMS * 4096) / 1e6) * 1e6


def clock_note(dense_bf16_flops: float, where: str) -> str:
    clock = fitted_clock(dense_bf16_flops)
    return (f"fitted: {dense_bf16_flops / 1e15:g}e15 / (2 x {SMS} x 4096) = {dense_bf16_flops / (2 * SMS * 4096) / 1e9:.4f}"
            f" GHz, rounded to {clock / 1e9:g} GHz ({where})")


def vector_note(clock: float, quoted_tflops: float, where: str) -> str:
    derived = SMS * clock * 256 / 1e12
    return (f"128 FP32 cores per SM x 2 = 256; {SMS} x {clock / 1e9:g} GHz x 256 = {derived:.1f} TFLOP/s at the "
            f"tensor clock, below NVIDIA's {quoted_tflops:g} TFLOP/s ({where}) quoted at a higher clock")


COMMON = dict(
    vendor="NVIDIA", kind="gpu", num_cores=SMS,
    matrix_macs_per_cycle_per_core_tf32=2048, matrix_macs_per_cycle_per_core_bf16=4096,
    matrix_macs_per_cycle_per_core_fp16=4096, matrix_macs_per_cycle_per_core_fp8=8192,
    vector_flops_per_cycle_per_core=256, sram_per_core_bytes=256 * KiB, sram_bandwidth_bytes_per_cycle_per_core=128,
    register_file_per_core_bytes=256 * KiB, llc_capacity_bytes=126 * MiB,
    link_bandwidth_bytes_per_s=50e9, num_links=18, launch_overhead_s=4e-6,
)
COMMON_SOURCES = {
    **cite("NVIDIA", "vendor"), **cite(BUILD_SCRIPT, "notes"),
    **cite(CUDA_GUIDE, "sram_bandwidth_per_core", note="32 banks x 4 B = 128 B/clock/SM"),
    **cite(CUDA_REGISTERS, "register_file_per_core", note="64 K x 4 B = 256 KiB per SM (compute capability 10.x)"),
    **cite(CUDA_GRAPHS, "launch_overhead", note=LAUNCH_NOTE),
}
# B200 silicon (sm_100): int8 at the fp8 rate, fp4 at 2x fp8
BLACKWELL = dict(COMMON, matrix_macs_per_cycle_per_core_int8=8192, matrix_macs_per_cycle_per_core_fp4=16384)
# Blackwell Ultra silicon (sm_103): NVFP4 1.5x Blackwell per SM, int8 cut to a small rate
ULTRA = dict(COMMON, matrix_macs_per_cycle_per_core_int8=256, matrix_macs_per_cycle_per_core_fp4=24576)
BLACKWELL_ENERGY, BLACKWELL_ENERGY_SOURCES = energy_values(0.2, NODE, None, cheaper={"fp8": 2, "fp4": 4})
ULTRA_ENERGY, ULTRA_ENERGY_SOURCES = energy_values(0.2, NODE, None, cheaper={"fp8": 2, "fp4": 6})


def static_power(tdp_w: float) -> tuple[dict, dict]:
    """Static power 15% of TDP (the energy_values assumption) for one TDP."""
    values, sources = energy_values(0.2, NODE, tdp_w)
    return {"static_power_w": values["static_power_w"]}, {"static_power": sources["static_power"]}


def sm_sources(doc: str, where: str) -> dict:
    """SRAM per SM and L2 capacity, the same on every Blackwell part here."""
    return {
        **cite(BLACKWELL_TUNING, "sram_per_core", note="256 KB combined L1/shared memory per SM (up to 228 KB shared)"),
        **cite(doc, "llc_capacity", note=f"126 MB L2 (126 MiB, the way NVIDIA states cache sizes); {where}"),
    }


# ---- B200 (HGX/DGX B200) -------------------------------------------------------------------
B200_STATIC, B200_STATIC_SOURCES = static_power(1000)
B200 = Hardware(
    name="B200", **BLACKWELL,
    notes=("HGX/DGX B200 variant: 1,000 W, 180 GB HBM3e usable per GPU (1,440 GB per 8 GPUs) at 8 TB/s. 148 SMs "
           "(2 dies x 74) from public measurements; per-SM tensor rates 2x Hopper (4096 dense bf16 MAC/clk) and "
           "clock 1.856 GHz fitted so 148 SMs reproduce NVIDIA's dense headlines: 2.25 PFLOP/s bf16, 4.5 fp8 and "
           "int8, 9 fp4, 1.125 tf32 (NVIDIA rounds to 1.1). Vector: 128 FP32 lanes/SM -> 256 FLOP/cycle/SM gives "
           "70.3 TFLOP/s at 1.856 GHz, below NVIDIA's 80 TFLOP/s quoted at a higher clock; the architectural "
           "integer is kept. L2 126 MB (Blackwell Tuning Guide); no L2 bandwidth is published. Energies are "
           "estimates (Horowitz x 0.2 for TSMC 4NP). launch_overhead is an assumption."),
    clock_hz=1.856e9, memory_capacity_bytes=180e9, memory_bandwidth_bytes_per_s=8000e9,
    devices_per_node=8, inter_node_bandwidth_bytes_per_s=50e9, tdp_w=1000, **BLACKWELL_ENERGY, **B200_STATIC,
)
B200_SOURCES = {
    **COMMON_SOURCES, **sm_sources(BLACKWELL_TUNING, "B200"), **BLACKWELL_ENERGY_SOURCES, **B200_STATIC_SOURCES,
    **cite(HGX_PAGE, "kind"),
    **cite(B200_CNC, "num_cores", note="74 SMs enabled per die x 2 dies = 148"),
    **cite(HGX_PAGE, "clock", note="fitted: 2.25e15 / (2 x 148 x 4096) = 1.8557 GHz, rounded to 1.856 (third-party listings give ~1.86 GHz tensor clock)"),
    **cite(B200_GLENN, M + "tf32", note="HGX B200 tf32 1.1 PFLOP/s dense (2.2 sparse); 2048/SM gives 1.125"),
    **cite(HGX_PAGE, M + "bf16", note="HGX B200 8-GPU bf16 36 PFLOP/s sparse -> 2.25 PFLOP/s dense per GPU; 4096/SM at 1.856 GHz"),
    **cite(HGX_PAGE, M + "fp16", note="same as bf16: 2.25 PFLOP/s dense per GPU"),
    **cite(HGX_PAGE, M + "fp8", note="8-GPU fp8 72 PFLOP/s sparse -> 4.5 PFLOP/s dense per GPU; 8192/SM"),
    **cite(HGX_PAGE, M + "int8", note="8-GPU int8 72 POPS sparse -> 4.5 POPS dense per GPU; 8192/SM"),
    **cite(HGX_PAGE, M + "fp4", note="8-GPU fp4 144 PFLOP/s sparse -> 9 PFLOP/s dense per GPU; 16384/SM"),
    **cite(B200_GLENN, "vector_flops_per_cycle_per_core", note="128 FP32 cores per SM x 2 = 256; NVIDIA quotes 80 TFLOP/s fp32 for HGX B200, above the 70.3 derived at the tensor clock"),
    **cite(DGX_B200, "memory_capacity", note="1,440 GB total GPU memory / 8 GPUs = 180 GB (192 GB physical HBM3e)"),
    **cite(DGX_B200, "memory_bandwidth", note="64 TB/s HBM3e bandwidth / 8 GPUs = 8 TB/s (third-party listings compute 7.7 TB/s from bus width x data rate)"),
    **cite(HGX_PAGE, "link_bandwidth", "num_links", note="NVLink 5: 1.8 TB/s per GPU = 18 links x 50 GB/s x 2 directions"),
    **cite(HGX_PAGE, "devices_per_node", note="8 GPUs per HGX B200 board on NVSwitch"),
    **cite(DGX_B200, "inter_node_bandwidth", note="8x 400 Gb/s ConnectX-7 for 8 GPUs = 50 GB/s per direction per GPU"),
    **cite(HGX_PAGE, "tdp", note="HGX B200: 1,000 W per GPU"),
}

# ---- GB200 (B200 silicon in the GB200 NVL72 rack, 1,200 W) ----------------------------------
GB200_CLOCK = fitted_clock(2.5e15)
GB200_STATIC, GB200_STATIC_SOURCES = static_power(1200)
GB200 = Hardware(
    name="GB200", **BLACKWELL,
    notes=("One Blackwell GPU of a GB200 NVL72 rack (2 GPUs + 1 Grace CPU per superchip, 72 GPUs in one NVLink "
           "domain: devices_per_node 72). The B200 silicon (148 SMs, same per-SM rates) at up to 1,200 W: NVIDIA's "
           "rack figures divided by 72 give 2.5 PFLOP/s dense bf16, 5 fp8 and int8, 10 fp4, 1.25 tf32, reproduced "
           f"by a fitted {GB200_CLOCK / 1e9:g} GHz clock. 186 GB HBM3e at 8 TB/s (13.4 TB and 576 TB/s per 72). "
           "Vector 256 FLOP/cycle/SM gives 78.1 TFLOP/s at that clock, below the 90 TFLOP/s quoted for GB200 at a "
           "higher clock. Scale-out: one 400 Gb/s ConnectX-7 per GPU. The NVLink-C2C link to Grace is not modelled. "
           "Energies are estimates (Horowitz x 0.2 for TSMC 4NP); launch_overhead is an assumption."),
    clock_hz=GB200_CLOCK, memory_capacity_bytes=186e9, memory_bandwidth_bytes_per_s=8000e9,
    devices_per_node=72, inter_node_bandwidth_bytes_per_s=50e9, tdp_w=1200, **BLACKWELL_ENERGY, **GB200_STATIC,
)
GB200_SOURCES = {
    **COMMON_SOURCES, **sm_sources(BLACKWELL_TUNING, "the B200 die, as in GB200"), **BLACKWELL_ENERGY_SOURCES, **GB200_STATIC_SOURCES,
    **cite(GB200_NVL72, "kind"),
    **cite(B200_CNC, "num_cores", note="ASSUMPTION: the B200 silicon of HGX B200 (74 SMs per die x 2 = 148 enabled); "
                                      "NVIDIA publishes no SM count for GB200"),
    **cite(GB200_NVL72, "clock", note=clock_note(2.5e15, "FP16/BF16 360 PFLOPS sparse / 72 / 2 = 2.5 PFLOP/s dense")),
    **cite(GB200_NVL72, M + "tf32", note="TF32 180 PFLOPS sparse / 72 / 2 = 1.25 PFLOP/s dense; 2048/SM"),
    **cite(GB200_NVL72, M + "bf16", note="FP16/BF16 360 PFLOPS sparse / 72 / 2 = 2.5 PFLOP/s dense; 4096/SM as B200"),
    **cite(GB200_NVL72, M + "fp16", note="same as bf16: 2.5 PFLOP/s dense per GPU"),
    **cite(GB200_NVL72, M + "fp8", note="FP8/FP6 720 PFLOPS sparse / 72 / 2 = 5 PFLOP/s dense; 8192/SM"),
    **cite(GB200_NVL72, M + "int8", note="INT8 720 POPS sparse / 72 / 2 = 5 POPS dense; 8192/SM"),
    **cite(GB200_NVL72, M + "fp4", note="FP4 1,440 PFLOPS sparse / 72 / 2 = 10 PFLOP/s dense; 16384/SM"),
    **cite(B200_GLENN, "vector_flops_per_cycle_per_core", note=vector_note(GB200_CLOCK, 90, "GB200 at 1,200 W")),
    **cite(GB200_NVL72, "memory_capacity", note="up to 13.4 TB HBM3e / 72 GPUs = 186 GB (372 GB per 2-GPU superchip); "
                                               "MLPerf GB200 system descriptions list 186 GB"),
    **cite(GB200_NVL72, "memory_bandwidth", note="576 TB/s / 72 GPUs = 8 TB/s (16 TB/s per 2-GPU superchip)"),
    **cite(GB200_NVL72, "link_bandwidth", "num_links", note="NVLink 5: 1.8 TB/s per GPU (130 TB/s / 72) = 18 links x 50 GB/s x 2 directions"),
    **cite(GB200_NVL72, "devices_per_node", note="72 GPUs in one NVLink domain through the rack's NVLink switches"),
    **cite(DGX_GB200, "inter_node_bandwidth", note="72x 400 Gb/s ConnectX-7 for 72 GPUs = 50 GB/s per direction per GPU"),
    **cite(HOTCHIPS_TOMS, "tdp", note="B200 in GB200: 1,200 W GPU TDP (also NVIDIA's aiconfigurator gb200.yaml: power 1200 W)"),
}

# ---- Blackwell Ultra: B300 (HGX/DGX B300, 1,100 W) and GB300 (GB300 NVL72, 1,400 W) ------------
ULTRA_NOTE = ("Blackwell Ultra (sm_103): 148 SMs enabled of the 160 of the full GPU; per SM the same tf32/bf16/fp8 "
              "rates as B200, NVFP4 1.5x (24576 dense MAC/clk), int8 cut to a small rate and fp64 to ~1.3 TFLOP/s "
              "(not a workbook row). ASSUMPTION: int8 256 MAC/clk/SM (NVIDIA quotes ~0.15-0.165 dense POPS, which "
              "needs ~2.1-2.2 GHz at 256/SM, the clock its fp32 figure implies too). L2 126 MB as measured on B300. ")
INT8_ULTRA = ("ASSUMPTION: 256 dense MAC/clk/SM; NVIDIA publishes only the per-GPU rate: {quoted}; at the fitted "
              "{clock:g} GHz 256/SM gives {derived:.1f} TOPS, the rest being the higher clock NVIDIA quotes it at "
              "(its fp32 figure implies ~2.2 GHz)")
B300_CLOCK, GB300_CLOCK = fitted_clock(2.25e15), fitted_clock(2.5e15)
B300_STATIC, B300_STATIC_SOURCES = static_power(1100)
B300 = Hardware(
    name="B300", **ULTRA,
    notes=("HGX/DGX B300 variant: 8 GPUs on NVSwitch, up to 1,100 W, 288 GB HBM3e at 8 TB/s (NVIDIA's aiconfigurator "
           "uses 7.75 TB/s, a measured spec 7.67). " + ULTRA_NOTE + f"Clock {B300_CLOCK / 1e9:g} GHz fitted to the "
           "dense 2.25 PFLOP/s bf16; fp4 then gives 13.5 PFLOP/s dense (HGX page 108/8; some listings say 14). Vector "
           "256 FLOP/cycle/SM gives 70.3 TFLOP/s, below the 75 quoted at a higher clock. Scale-out: one ConnectX-8 "
           "800 Gb/s per GPU. Energies are estimates; launch_overhead is an assumption."),
    clock_hz=B300_CLOCK, memory_capacity_bytes=288e9, memory_bandwidth_bytes_per_s=8000e9,
    devices_per_node=8, inter_node_bandwidth_bytes_per_s=100e9, tdp_w=1100, **ULTRA_ENERGY, **B300_STATIC,
)
GB300_STATIC, GB300_STATIC_SOURCES = static_power(1400)
GB300 = Hardware(
    name="GB300", **ULTRA,
    notes=("One Blackwell Ultra GPU of a GB300 NVL72 rack (4 GPUs + 2 Grace CPUs per board, 72 GPUs in one NVLink "
           "domain: devices_per_node 72), up to 1,400 W, 288 GB HBM3e at 8 TB/s. " + ULTRA_NOTE + f"Clock "
           f"{GB300_CLOCK / 1e9:g} GHz fitted to the dense 2.5 PFLOP/s bf16; fp4 then gives 15 PFLOP/s dense (NVIDIA: "
           "15). Vector 256 FLOP/cycle/SM gives 78.1 TFLOP/s, below the 83 quoted at a higher clock. Scale-out: one "
           "ConnectX-8 800 Gb/s per GPU. Energies are estimates; launch_overhead is an assumption."),
    clock_hz=GB300_CLOCK, memory_capacity_bytes=288e9, memory_bandwidth_bytes_per_s=8000e9,
    devices_per_node=72, inter_node_bandwidth_bytes_per_s=100e9, tdp_w=1400, **ULTRA_ENERGY, **GB300_STATIC,
)
ULTRA_SOURCES = {
    **COMMON_SOURCES, **sm_sources(QUICKRUN_B300, "measured on B300 (the GB300 carries the same die); NVIDIA's Blackwell Ultra "
                                "blog names a shared L2 without its size"), **ULTRA_ENERGY_SOURCES,
    **cite(QUICKRUN_B300, "num_cores", note="148 SMs measured on B300 SXM6 AC; NVIDIA's blog gives 160 SMs for the full "
                                           "GPU, of which the product enables 148 (GB300 kernel notes also report 148)"),
}
B300_SOURCES = {
    **ULTRA_SOURCES, **B300_STATIC_SOURCES,
    **cite(HGX_B300, "kind"),
    **cite(HGX_B300, "clock", note=clock_note(2.25e15, "FP16/BF16 36 PFLOPS sparse / 8 / 2 = 2.25 PFLOP/s dense; "
                                                       "measured boost 2,032 MHz")),
    **cite(HGX_B300, M + "tf32", note="TF32 18 PFLOPS sparse / 8 / 2 = 1.125 PFLOP/s dense; 2048/SM"),
    **cite(HGX_B300, M + "bf16", note="FP16/BF16 36 PFLOPS sparse / 8 / 2 = 2.25 PFLOP/s dense; 4096/SM"),
    **cite(HGX_B300, M + "fp16", note="same as bf16: 2.25 PFLOP/s dense per GPU"),
    **cite(HGX_B300, M + "fp8", note="FP8/FP6 72 PFLOPS sparse / 8 / 2 = 4.5 PFLOP/s dense; 8192/SM"),
    **cite(AIC_SYSTEMS, M + "int8", note=INT8_ULTRA.format(
        quoted="b300_sxm.yaml int8_tc_flops 153.5 TOPS dense (307 sparse / 2)", clock=B300_CLOCK / 1e9,
        derived=2 * SMS * B300_CLOCK * 256 / 1e12)),
    **cite(HGX_B300, M + "fp4", note="FP4 108 PFLOPS dense / 8 = 13.5 PFLOP/s; 24576/SM = 1.5x B200 (BWU blog: 1.5x "
                                      "NVFP4); aiconfigurator's b300_sxm.yaml rounds to 14"),
    **cite(B300_GLENN, "vector_flops_per_cycle_per_core", note=vector_note(B300_CLOCK, 75, "HGX B300 600 TFLOPS / 8")),
    **cite(DGX_B300, "memory_capacity", note="2.3 TB / 8 GPUs = 288 GB per GPU (BWU blog: 288 GB HBM3E); nvidia-smi "
                                            "shows 275,040 MiB usable (aiconfigurator b300_sxm.yaml)"),
    **cite(BWU_BLOG, "memory_bandwidth", note="8 TB/s per Blackwell Ultra GPU; NVIDIA's aiconfigurator b300_sxm.yaml "
                                             "uses 7.75 TB/s (62 TB/s / 8) and QuickRunCUDA a 7,672 GB/s spec"),
    **cite(HGX_B300, "link_bandwidth", "num_links", note="NVLink 5: 1.8 TB/s per GPU = 18 links x 50 GB/s x 2 directions"),
    **cite(HGX_B300, "devices_per_node", note="8 GPUs per HGX B300 board on NVSwitch"),
    **cite(DGX_B300, "inter_node_bandwidth", note="8x 800 Gb/s ConnectX-8 for 8 GPUs = 100 GB/s per direction per GPU"),
    **cite(AIC_SYSTEMS, "tdp", note="b300_sxm.yaml: power 1100 W ('configurable up to 1,100 W'); QuickRunCUDA "
                                    "measures a 200-1,100 W power limit"),
}
GB300_SOURCES = {
    **ULTRA_SOURCES, **GB300_STATIC_SOURCES,
    **cite(GB300_NVL72, "kind"),
    **cite(GB300_NVL72, "clock", note=clock_note(2.5e15, "FP16/BF16 360 PFLOPS sparse / 72 / 2 = 2.5 PFLOP/s dense")),
    **cite(GB300_NVL72, M + "tf32", note="TF32 180 PFLOPS sparse / 72 / 2 = 1.25 PFLOP/s dense; 2048/SM"),
    **cite(GB300_NVL72, M + "bf16", note="FP16/BF16 360 PFLOPS sparse / 72 / 2 = 2.5 PFLOP/s dense; 4096/SM"),
    **cite(GB300_NVL72, M + "fp16", note="same as bf16: 2.5 PFLOP/s dense per GPU"),
    **cite(GB300_NVL72, M + "fp8", note="FP8/FP6 720 PFLOPS sparse / 72 / 2 = 5 PFLOP/s dense; 8192/SM"),
    **cite(HOTCHIPS_TOMS, M + "int8", note=INT8_ULTRA.format(
        quoted="0.319 POPS sparse per package (Hot Chips), 165 TOPS dense in aiconfigurator's gb300.yaml",
        clock=GB300_CLOCK / 1e9, derived=2 * SMS * GB300_CLOCK * 256 / 1e12)),
    **cite(GB300_NVL72, M + "fp4", note="FP4 1,080 PFLOPS dense / 72 = 15 PFLOP/s (BWU blog: 15 PFLOPS dense NVFP4); 24576/SM"),
    **cite(HOTCHIPS_TOMS, "vector_flops_per_cycle_per_core", note=vector_note(GB300_CLOCK, 83, "FP32 0.083 PFLOPS per package")),
    **cite(BWU_BLOG, "memory_capacity", note="288 GB HBM3E per GPU (GB300 NVL72: ~20.7 TB / 72)"),
    **cite(GB300_NVL72, "memory_bandwidth", note="576 TB/s / 72 GPUs = 8 TB/s (BWU blog: 8 TB/s)"),
    **cite(GB300_NVL72, "link_bandwidth", "num_links", note="NVLink 5: 1.8 TB/s per GPU (130 TB/s / 72) = 18 links x 50 GB/s x 2 directions"),
    **cite(GB300_NVL72, "devices_per_node", note="72 GPUs in one NVLink domain through the rack's NVLink switches"),
    **cite(GB300_NVL72, "inter_node_bandwidth", note="one ConnectX-8 800 Gb/s SuperNIC per GPU = 100 GB/s per direction"),
    **cite(HOTCHIPS_TOMS, "tdp", note="B300 in GB300: 1,400 W GPU TDP (also aiconfigurator gb300.yaml: power 1400 W)"),
}

BLACKWELL_DEVICES: list[tuple[Hardware, dict]] = [
    (B200, B200_SOURCES), (GB200, GB200_SOURCES), (B300, B300_SOURCES), (GB300, GB300_SOURCES),
]
