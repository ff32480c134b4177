"""Build the bundled hardware workbook, specs.xlsx, from the device data below.

    .venv/bin/python scripts/build_specs.py [output.xlsx]

Every device is written in SI units (the attribute names carry the unit). Each value has a
source: a URL or document title, plus a note with the arithmetic or the assumption behind it.
Rules (see the workbook's README): per-cycle figures come from the architecture; the clock is the
one that reproduces the datasheet's dense bf16/fp16 headline; dense figures only, never sparsity.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.hardware.device import WORKBOOK_FIELDS, Hardware  # noqa: E402
from engine.hardware.specs import write_specs  # noqa: E402
from scripts.specs_blackwell import BLACKWELL_DEVICES  # noqa: E402
from scripts.specs_pcie import PCIE_DEVICES  # noqa: E402
from scripts.specs_common import (  # noqa: E402
    BUILD_SCRIPT, CUDA_GRAPHS, CUDA_GUIDE, CUDA_REGISTERS, LAUNCH_NOTE, TENSOR_FIELDS, KiB, M, MiB, cite, energy_values,
)


# ---- documents -----------------------------------------------------------------------------
SEED_NOTEBOOK = "seed notebook 004 (shared/seeds/004_b4e401f7dba67652.txt), cell In[38] HW_SPEC_DF"
SEED_T4 = "seed 001 (shared/seeds/001_922571c2c7fea974.txt): T4 host listing and profile"
A100_DATASHEET = ("NVIDIA A100 Tensor Core GPU datasheet (https://www.nvidia.com/content/dam/en-zz/Solutions/"
                  "Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf)")
AMPERE_WP = ("NVIDIA A100 Tensor Core GPU Architecture whitepaper (https://images.nvidia.com/aem-dam/en-zz/"
             "Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf)")
A100_PCIE_BRIEF = "NVIDIA A100 40GB PCIe GPU Accelerator Product Brief PB-10137-001_v03, Table 6 NVLink speed and bandwidth"
DGX_A100 = ("NVIDIA DGX A100 datasheet: 8x single-port ConnectX-6 200 Gb/s HDR InfiniBand for 8 GPUs "
            "(https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/nvidia-dgx-a100-datasheet.pdf)")
H100_DATASHEET = "NVIDIA H100 Tensor Core GPU datasheet (https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet)"
HOPPER_WP = ("NVIDIA H100 Tensor Core GPU Architecture whitepaper "
             "(https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper)")
HOPPER_TUNING = "NVIDIA Hopper Tuning Guide (https://docs.nvidia.com/cuda/hopper-tuning-guide/index.html)"
DGX_H100 = ("NVIDIA DGX H100/H200 user guide: 8x single-port ConnectX-7 400 Gb/s for 8 GPUs "
            "(https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html)")
H200_PAGE = "NVIDIA H200 Tensor Core GPU product page and datasheet (https://www.nvidia.com/en-us/data-center/h200/)"
MI300X_PAGE = "AMD Instinct MI300X accelerator product page and data sheet (https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html)"
CDNA3_WP = ("AMD CDNA 3 Architecture whitepaper (https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/"
            "white-papers/amd-cdna-3-white-paper.pdf)")
ROCM_SPECS = "ROCm documentation, AMD GPU specifications table (https://rocm.docs.amd.com/en/latest/reference/gpu-specs.html)"
MI300X_IF = ("Wheeler's Network, AMD Looks to Infinity for AI Interconnects: up to 7 Infinity Fabric links x16, "
             "128 GB/s bidirectional per link (https://www.wheelersnetwork.com/2024/01/)")
STH_MI300 = ("ServeTheHome, AMD Instinct MI300X launch coverage: 256 MB Infinity Cache, 17 TB/s peak "
             "(https://servethehome.com/amd-instinct-mi300x-gpu-and-mi300a-apus-launched-for-ai-era/3)")
T4_DATASHEET = ("NVIDIA T4 Tensor Core GPU datasheet (https://www.nvidia.com/content/dam/en-zz/Solutions/"
                "Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf)")
TURING_WP = ("NVIDIA Turing GPU Architecture whitepaper (https://images.nvidia.com/aem-dam/en-zz/Solutions/"
             "design-visualization/technologies/turing-architecture/NVIDIA-Turing-Architecture-Whitepaper.pdf)")
TURING_TUNING = "NVIDIA Turing Tuning Guide (https://docs.nvidia.com/cuda/turing-tuning-guide/index.html)"
L4_DATASHEET = "NVIDIA L4 Tensor Core GPU datasheet (https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet)"
ADA_TUNING = "NVIDIA Ada Tuning Guide (https://docs.nvidia.com/cuda/ada-tuning-guide/index.html)"
L4_TPU = "TechPowerUp GPU database, NVIDIA L4: 7,424 shading units = 58 SMs, 2,040 MHz boost, 48 MB L2 (https://www.techpowerup.com/gpu-specs/l4.c4091)"
GCP_GPUS = "Google Cloud, GPU machine types: g2-standard-96 has 8 L4 GPUs (https://cloud.google.com/compute/docs/gpus)"
TPU_V5E_DOC = "Google Cloud TPU v5e documentation (https://cloud.google.com/tpu/docs/v5e)"
SCALING_BOOK = "How to Scale Your Model, part 2: How to Think About TPUs (https://jax-ml.github.io/scaling-book/tpus/)"
AMPERE_L2 = ("NVIDIA A100 Tensor Core GPU Architecture whitepaper, L2 cache section: 'The A100 L2 read bandwidth is "
             "5120 Bytes/clk, compared to V100 L2 cache read bandwidth of 2048 Bytes/clk' (https://images.nvidia.com/aem-dam/"
             "en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf)")
LUO_2024 = ("Luo et al., Benchmarking and Dissecting the Nvidia Hopper GPU Architecture (arXiv 2402.13499), Table V: "
            "L2 throughput measured on an H800 PCIe (GH100), 4472.3 B/clk; NVIDIA publishes no Hopper L2 bandwidth")
CUTLASS_TILES = ("CUTLASS python/cutlass_library/generator.py, GenerateSM80_TensorOp_16816: f16/bf16 threadblock tiles "
                 "256x128, 128x256, 256x64, 64x256, 128x128, 128x64, 64x128, 64x64 (https://github.com/NVIDIA/cutlass)")
SM80_TILES = "256x128,128x256,256x64,64x256,128x128,128x64,64x128,64x64"
VIDUR_FIT = ("fit to measured kernel times: engine.calibration.fit.fit_realistic on vidur_llama2_ops.csv (public Vidur "
             "profiling data, github.com/microsoft/vidur; ../shared/calibration), run by benchmarks/accuracy.py on "
             "2026-11-21; see docs/accuracy.md")
FIT_NOTE = "{rows} GEMM rows of {device}: coordinate descent over grids minimising median + p90/2 of |relative error|"


def fitted(device: str, matrix: float, memory: float, latency_us: float) -> tuple[dict, dict]:
    """Realistic-method values fitted on `device`'s measured GEMMs, with their source rows."""
    values = dict(achievable_matrix_fraction=matrix, achievable_memory_bandwidth_fraction=memory,
                  kernel_latency_s=latency_us * 1e-6)
    note = FIT_NOTE.format(rows="8,288", device=device)
    return values, cite(VIDUR_FIT, "achievable_matrix_fraction", "achievable_memory_bandwidth_fraction",
                        "kernel_latency", note=note)


def transferred(device: str, reason: str) -> dict:
    """Sources for a sibling device that takes `device`'s fitted values (it has no measurements)."""
    note = f"not measured on this device: the {device} fit transferred ({reason})"
    return cite(VIDUR_FIT, "achievable_matrix_fraction", "achievable_memory_bandwidth_fraction",
                "kernel_latency", note=note)


# ---- energy (engine/results/energy.py): estimates, not datasheet values (scripts/specs_common.py) ---------
A100_SXM_ENERGY, A100_SXM_ENERGY_SOURCES = energy_values(0.25, "TSMC N7 (A100)", 400)
A100_PCIE_ENERGY, A100_PCIE_ENERGY_SOURCES = energy_values(0.25, "TSMC N7 (A100)", 250)
HOPPER_ENERGY, HOPPER_ENERGY_SOURCES = energy_values(0.2, "TSMC 4N (H100/H200)", 700, cheaper={"fp8": 2})
MI300X_ENERGY, MI300X_ENERGY_SOURCES = energy_values(0.2, "TSMC N5 (MI300X compute dies)", 750, cheaper={"fp8": 2},
                                                     fp32_matrix=True, link="Infinity Fabric")
# Google publishes neither the process node nor a TDP for TPU v5e: the factor assumes a 7 nm-class node (TPU v4 is
# 7 nm) and static power stays blank, so its energy needs a static_power edit; no per-core SRAM row either
TPU_V5E_ENERGY, TPU_V5E_ENERGY_SOURCES = energy_values(0.25, "TPU v5e (node unpublished; assumed 7 nm class like TPU v4)",
                                                       None, sram=False, link="ICI")

A100_FIT, A100_FIT_SOURCES = fitted("A100-80GB-SXM", 0.72, 0.73, 5.5)
H100_FIT, H100_FIT_SOURCES = fitted("H100-SXM", 0.70, 0.90, 7.25)
V100_DATASHEET = ("NVIDIA V100 Tensor Core GPU datasheet (https://images.nvidia.com/content/technologies/volta/pdf/"
                  "volta-v100-datasheet-update-us-1165301-r5.pdf)")
VOLTA_WP = ("NVIDIA Tesla V100 GPU Architecture whitepaper (https://images.nvidia.com/content/volta-architecture/"
            "pdf/volta-architecture-whitepaper.pdf)")

# ---- the hypothetical devices of the seed notebook ---------------------------------------------
BINARY_UNITS = ("The seed notebook's units are binary: its 342 'GB/s' is 342*1024**3 B/s and its 36 'MB' L3 is "
                "36 MiB; values are entered exactly as the notebook computes them so seed parity holds.")
NVL_AX = Hardware(
    name="NVL-AX", vendor="seed notebook", kind="hypothetical",
    notes=("Hypothetical device from the seed notebook (HW_SPEC_DF). " + BINARY_UNITS + " Its L3 is the llc here. "
           "Assumptions, not in the seed: vector 128 FLOP/cycle/core, 64 GB memory, bf16 rate = the notebook's fp16 rate."),
    num_cores=32, clock_hz=2.5e9,
    matrix_macs_per_cycle_per_core_bf16=2048, matrix_macs_per_cycle_per_core_fp16=2048,
    vector_flops_per_cycle_per_core=128,
    memory_capacity_bytes=64e9, memory_bandwidth_bytes_per_s=342 * 1024**3, llc_capacity_bytes=36 * MiB,
)
NVL_AX_SOURCES = {
    **cite(SEED_NOTEBOOK, "vendor", "kind", note="hypothetical architecture defined in the notebook"),
    **cite(BUILD_SCRIPT, "notes"),
    **cite(SEED_NOTEBOOK, "num_cores", note="Num_Cores 32"),
    **cite(SEED_NOTEBOOK, "clock", note="Frequency 2.5*1e9 Hz"),
    **cite(SEED_NOTEBOOK, M + "fp16", note="MACs_per_cycle 2*1024, '2K MACs per cycle per core for FP16'"),
    **cite(SEED_NOTEBOOK, M + "bf16", note="assumption, not in the seed: bf16 at the notebook's fp16 rate"),
    **cite(BUILD_SCRIPT, "vector_flops_per_cycle_per_core", note="assumption, not in the seed"),
    **cite(BUILD_SCRIPT, "memory_capacity", note="assumption, not in the seed"),
    **cite(SEED_NOTEBOOK, "memory_bandwidth", note="Bandwidth 342*1024*1024*1024 B/s (the notebook's '342 GB/s')"),
    **cite(SEED_NOTEBOOK, "llc_capacity", note="L3_cache_capacity 36*1024*1024 B (the notebook's '36 MB')"),
}

JGS = Hardware(
    name="JGS", vendor="seed notebook", kind="hypothetical",
    notes=("Hypothetical device from the seed notebook (HW_SPEC_DF). The seed notebook's units are binary: its "
           "30 'TB/s' is 30*1024**4 B/s and its 120 'MB' L3 is 120 MiB; entered exactly as the notebook computes "
           "them. Its L3 is the llc here. Only an fp32 matrix rate is given, so other dtypes run at it. "
           "Assumptions, not in the seed: vector 256 FLOP/cycle/core, 192 GB memory."),
    num_cores=192, clock_hz=1.5e9, matrix_macs_per_cycle_per_core_fp32=8192,
    vector_flops_per_cycle_per_core=256,
    memory_capacity_bytes=192e9, memory_bandwidth_bytes_per_s=30 * 1024**4, llc_capacity_bytes=120 * MiB,
)
JGS_SOURCES = {
    **cite(SEED_NOTEBOOK, "vendor", "kind", note="hypothetical architecture defined in the notebook"),
    **cite(BUILD_SCRIPT, "notes"),
    **cite(SEED_NOTEBOOK, "num_cores", note="Num_Cores 192"),
    **cite(SEED_NOTEBOOK, "clock", note="Frequency 1.5*1e9 Hz"),
    **cite(SEED_NOTEBOOK, M + "fp32", note="MACs_per_cycle 8*1024, '8K MACs per cycle per core for FP32'"),
    **cite(BUILD_SCRIPT, "vector_flops_per_cycle_per_core", note="assumption, not in the seed"),
    **cite(BUILD_SCRIPT, "memory_capacity", note="assumption, not in the seed"),
    **cite(SEED_NOTEBOOK, "memory_bandwidth", note="Bandwidth 30*1024**4 B/s (the notebook's '30 TB/s')"),
    **cite(SEED_NOTEBOOK, "llc_capacity", note="L3_cache_capacity 120*1024*1024 B (the notebook's '120 MB')"),
}

# ---- NVIDIA Ampere -------------------------------------------------------------------------
A100_COMMON = dict(
    vendor="NVIDIA", kind="gpu", num_cores=108, clock_hz=1.41e9,
    matrix_macs_per_cycle_per_core_tf32=512, matrix_macs_per_cycle_per_core_bf16=1024,
    matrix_macs_per_cycle_per_core_fp16=1024, matrix_macs_per_cycle_per_core_int8=2048,
    vector_flops_per_cycle_per_core=128, sram_per_core_bytes=192 * KiB, sram_bandwidth_bytes_per_cycle_per_core=128,
    register_file_per_core_bytes=256 * KiB, llc_capacity_bytes=40 * MiB, llc_bandwidth_bytes_per_s=5120 * 1.41e9,
    link_bandwidth_bytes_per_s=25e9, num_links=12, launch_overhead_s=4e-6, gemm_tile_shapes=SM80_TILES,
)
A100_COMMON_SOURCES = {
    **cite("NVIDIA", "vendor"), **cite(AMPERE_WP, "kind"), **cite(BUILD_SCRIPT, "notes"),
    **cite(AMPERE_WP, "num_cores", note="108 SMs enabled on A100"),
    **cite(AMPERE_WP, "clock", note="GPU boost clock 1410 MHz; 2 x 108 x 1.41 GHz x 1024 = 311.9 TFLOP/s = datasheet 312 bf16"),
    **cite(AMPERE_WP, M + "tf32", note="half the fp16 rate: 512 dense MAC/clk/SM; 155.9 TFLOP/s dense (datasheet 312 is with sparsity)"),
    **cite(AMPERE_WP, M + "bf16", note="4 tensor cores x 256 dense FP16/BF16 FMA/clk = 1024/SM; 312 TFLOP/s dense"),
    **cite(AMPERE_WP, M + "fp16", note="1024 dense FMA/clk/SM; 312 TFLOP/s dense"),
    **cite(AMPERE_WP, M + "int8", note="2048 dense int8 MAC/clk/SM; 624 TOPS dense (1248 is sparse)"),
    **cite(AMPERE_WP, "vector_flops_per_cycle_per_core", note="64 FP32 lanes/SM x 2 (FMA) = 128; 19.5 TFLOP/s at 1.41 GHz"),
    **cite(AMPERE_WP, "sram_per_core", note="192 KB combined L1/shared memory per SM (up to 164 KB shared)"),
    **cite(CUDA_GUIDE, "sram_bandwidth_per_core", note="32 banks x 4 B = 128 B/clock/SM"),
    **cite(AMPERE_WP, "llc_capacity", note="40 MB L2 (41943040 B reported by deviceQuery = 40 MiB)"),
    **cite(AMPERE_L2, "llc_bandwidth", note="5120 B/clk x 1.41 GHz = 7,219.2 GB/s (read bandwidth)"),
    **cite(CUDA_REGISTERS, "register_file_per_core", note="64 K x 4 B = 256 KiB per SM"),
    **cite(CUTLASS_TILES, "gemm_tile_shapes", note="the SM80 tensor-op tile family; two pipeline stages of each fit 164 KiB of shared memory"),
    **cite(CUDA_GRAPHS, "launch_overhead", note=LAUNCH_NOTE),
}
A100_40GB_PCIE = Hardware(
    name="A100-40GB-PCIe", **A100_COMMON,
    notes=("PCIe card, 40 GB HBM2, 250 W. Scale-up link = the NVLink bridge that joins 2 cards (12 third-generation "
           "NVLinks, 25 GB/s per direction each, 600 GB/s total), so devices_per_node is 2; beyond the bridged pair "
           "GPUs talk over PCIe Gen4 x16 (32 GB/s per direction), entered as inter_node_bandwidth. An 8-card PCIe "
           "server without bridges would instead be 8 devices on PCIe. launch_overhead is an assumption."),
    memory_capacity_bytes=40e9, memory_bandwidth_bytes_per_s=1555e9,
    devices_per_node=2, inter_node_bandwidth_bytes_per_s=32e9, tdp_w=250, **A100_FIT, **A100_PCIE_ENERGY,
)
A100_40GB_PCIE_SOURCES = {
    **A100_COMMON_SOURCES,
    **cite(A100_DATASHEET, "memory_capacity", "memory_bandwidth", note="A100 40GB PCIe column: 40 GB HBM2, 1,555 GB/s"),
    **cite(A100_DATASHEET, "tdp", note="A100 40GB PCIe: 250 W"),
    **cite(A100_PCIE_BRIEF, "link_bandwidth", "num_links", note="NVLink bridge for 2 GPUs: 600 GB/s = 12 links x 25 GB/s x 2 directions"),
    **cite(A100_PCIE_BRIEF, "devices_per_node", note="the NVLink bridge connects a pair of cards"),
    **cite(A100_DATASHEET, "inter_node_bandwidth", note="PCIe Gen4: 64 GB/s (both directions) = 32 GB/s per direction, the path beyond the bridged pair"),
    **transferred("A100-80GB-SXM", "same GA100 chip, SM count and clock; HBM2 instead of HBM2e"),
    **A100_PCIE_ENERGY_SOURCES,
}
A100_80GB_SXM = Hardware(
    name="A100-80GB-SXM", **A100_COMMON,
    notes=("SXM4 module, 80 GB HBM2e, 400 W, in an 8-GPU HGX/DGX A100 with NVSwitch (12 NVLinks x 25 GB/s per "
           "direction = 600 GB/s total). Scale-out: DGX A100's 200 Gb/s HDR InfiniBand NIC per GPU. "
           "launch_overhead is an assumption."),
    memory_capacity_bytes=80e9, memory_bandwidth_bytes_per_s=2039e9,
    devices_per_node=8, inter_node_bandwidth_bytes_per_s=25e9, tdp_w=400, **A100_FIT, **A100_SXM_ENERGY,
)
A100_80GB_SXM_SOURCES = {
    **A100_COMMON_SOURCES,
    **cite(A100_DATASHEET, "memory_capacity", "memory_bandwidth", note="A100 80GB SXM column: 80 GB HBM2e, 2,039 GB/s"),
    **cite(A100_DATASHEET, "tdp", note="A100 80GB SXM: 400 W"),
    **cite(A100_DATASHEET, "link_bandwidth", "num_links", note="NVLink 600 GB/s = 12 third-generation links x 25 GB/s x 2 directions"),
    **cite(DGX_A100, "devices_per_node", note="8 A100 SXM4 GPUs on NVSwitch"),
    **cite(DGX_A100, "inter_node_bandwidth", note="200 Gb/s = 25 GB/s per direction per GPU"),
    **A100_FIT_SOURCES,
    **A100_SXM_ENERGY_SOURCES,
}

# ---- NVIDIA Hopper -------------------------------------------------------------------------
HOPPER_VECTOR_NOTE = ("Vector fp32 at 1.83 GHz is 132 x 1.83 GHz x 256 = 61.8 TFLOP/s; NVIDIA's 67 TFLOP/s is quoted at "
                      "the 1.98 GHz max boost clock (66.9), so the architectural 256 FLOP/cycle/SM is kept.")
HOPPER_COMMON = dict(
    vendor="NVIDIA", kind="gpu", num_cores=132, clock_hz=1.83e9,
    matrix_macs_per_cycle_per_core_tf32=1024, matrix_macs_per_cycle_per_core_bf16=2048,
    matrix_macs_per_cycle_per_core_fp16=2048, matrix_macs_per_cycle_per_core_fp8=4096,
    matrix_macs_per_cycle_per_core_int8=4096, vector_flops_per_cycle_per_core=256,
    sram_per_core_bytes=256 * KiB, sram_bandwidth_bytes_per_cycle_per_core=128, llc_capacity_bytes=50 * MiB,
    register_file_per_core_bytes=256 * KiB, llc_bandwidth_bytes_per_s=4472.3 * 1.83e9,
    link_bandwidth_bytes_per_s=25e9, num_links=18, devices_per_node=8, inter_node_bandwidth_bytes_per_s=50e9,
    tdp_w=700, launch_overhead_s=4e-6,
)
HOPPER_SOURCES = {
    **cite("NVIDIA", "vendor"), **cite(HOPPER_WP, "kind"), **cite(BUILD_SCRIPT, "notes"),
    **cite(HOPPER_WP, "num_cores", note="H100 SXM5: 132 SMs"),
    **cite(H100_DATASHEET, "clock", note="fitted: 2 x 132 x 1.83 GHz x 2048 = 989.4 TFLOP/s = datasheet dense bf16 (1,979 sparse / 2)"),
    **cite(HOPPER_WP, M + "tf32", note="1024 dense MAC/clk/SM; 494.7 TFLOP/s (datasheet 989 sparse / 2)"),
    **cite(HOPPER_WP, M + "bf16", note="4 tensor cores x 512 dense FMA/clk = 2048/SM, 2x A100 per SM per clock"),
    **cite(HOPPER_WP, M + "fp16", note="2048 dense MAC/clk/SM; 989.4 TFLOP/s"),
    **cite(HOPPER_WP, M + "fp8", note="4096 dense MAC/clk/SM; 1,978.9 TFLOP/s (datasheet 3,958 sparse / 2)"),
    **cite(HOPPER_WP, M + "int8", note="4096 dense MAC/clk/SM; 1,978.9 TOPS (datasheet 3,958 sparse / 2)"),
    **cite(HOPPER_WP, "vector_flops_per_cycle_per_core", note="128 FP32 lanes/SM x 2 = 256. " + HOPPER_VECTOR_NOTE),
    **cite(HOPPER_TUNING, "sram_per_core", note="256 KB combined L1/shared memory per SM (up to 228 KB shared)"),
    **cite(CUDA_GUIDE, "sram_bandwidth_per_core", note="32 banks x 4 B = 128 B/clock/SM"),
    **cite(HOPPER_WP, "llc_capacity", note="50 MB L2 on H100 SXM5"),
    **cite(LUO_2024, "llc_bandwidth", note="approximation: 4472.3 B/clk measured on H800 PCIe x 1.83 GHz = 8,184.3 GB/s"),
    **cite(CUDA_REGISTERS, "register_file_per_core", note="64 K x 4 B = 256 KiB per SM"),
    **cite(H100_DATASHEET, "link_bandwidth", "num_links", note="NVLink 900 GB/s = 18 fourth-generation links x 25 GB/s x 2 directions"),
    **cite(DGX_H100, "devices_per_node", note="8 GPUs on NVSwitch in HGX/DGX H100 and H200"),
    **cite(DGX_H100, "inter_node_bandwidth", note="400 Gb/s = 50 GB/s per direction per GPU"),
    **cite(CUDA_GRAPHS, "launch_overhead", note=LAUNCH_NOTE),
}
H100_SXM = Hardware(
    name="H100-SXM", **HOPPER_COMMON,
    notes=("SXM5 module, 80 GB HBM3, 700 W, 8 per HGX/DGX H100 on NVSwitch. Clock 1.83 GHz reproduces the dense "
           "tensor headlines (989.4 TFLOP/s bf16). " + HOPPER_VECTOR_NOTE + " launch_overhead is an assumption."),
    memory_capacity_bytes=80e9, memory_bandwidth_bytes_per_s=3350e9, **H100_FIT, **HOPPER_ENERGY,
)
H100_SXM_SOURCES = {
    **HOPPER_SOURCES,
    **cite(H100_DATASHEET, "memory_capacity", "memory_bandwidth", note="H100 SXM: 80 GB, 3.35 TB/s"),
    **cite(H100_DATASHEET, "tdp", note="H100 SXM: up to 700 W (configurable)"),
    **H100_FIT_SOURCES,
    **HOPPER_ENERGY_SOURCES,
}
H200_SXM = Hardware(
    name="H200-SXM", **HOPPER_COMMON,
    notes=("H100's GH100 compute with 141 GB HBM3e at 4.8 TB/s; SXM, up to 700 W, 8 per HGX/DGX H200. "
           + HOPPER_VECTOR_NOTE + " launch_overhead is an assumption."),
    memory_capacity_bytes=141e9, memory_bandwidth_bytes_per_s=4800e9, **H100_FIT, **HOPPER_ENERGY,
)
H200_SXM_SOURCES = {
    **HOPPER_SOURCES,
    **cite(H200_PAGE, "num_cores", "clock", *TENSOR_FIELDS[1:6], note="same tensor headlines as H100 SXM (989 TFLOP/s dense bf16), so the same SM count, clock and per-SM rates"),
    **cite(H200_PAGE, "memory_capacity", "memory_bandwidth", note="H200 SXM: 141 GB HBM3e, 4.8 TB/s"),
    **cite(H200_PAGE, "tdp", note="H200 SXM: up to 700 W (configurable)"),
    **transferred("H100-SXM", "same GH100 compute; HBM3e instead of HBM3"),
    **HOPPER_ENERGY_SOURCES,
}

# ---- AMD -----------------------------------------------------------------------------------
MI300X = Hardware(
    name="MI300X", vendor="AMD", kind="gpu",
    notes=("OAM module, 750 W, 8 per platform fully connected by Infinity Fabric (7 links each, 64 GB/s per "
           "direction per link). sram_per_core = 64 KiB LDS + 32 KiB L1 vector cache per CU. llc = 256 MiB "
           "Infinity Cache (17 TB/s). HIP launch overhead assumed equal to CUDA's. Energies are estimates "
           "(Horowitz x 0.2 for the TSMC N5 compute dies, static power 15% of 750 W)."),
    num_cores=304, clock_hz=2.1e9,
    matrix_macs_per_cycle_per_core_fp32=128, matrix_macs_per_cycle_per_core_tf32=512,
    matrix_macs_per_cycle_per_core_bf16=1024, matrix_macs_per_cycle_per_core_fp16=1024,
    matrix_macs_per_cycle_per_core_fp8=2048, matrix_macs_per_cycle_per_core_int8=2048,
    vector_flops_per_cycle_per_core=256, memory_capacity_bytes=192e9, memory_bandwidth_bytes_per_s=5300e9,
    sram_per_core_bytes=96 * KiB, register_file_per_core_bytes=512 * KiB, llc_capacity_bytes=256 * MiB,
    llc_bandwidth_bytes_per_s=17000e9,
    link_bandwidth_bytes_per_s=64e9, num_links=7, devices_per_node=8, tdp_w=750, launch_overhead_s=4e-6,
    **MI300X_ENERGY,
)
MI300X_SOURCES = {
    **cite("AMD", "vendor"), **cite(MI300X_PAGE, "kind"), **cite(BUILD_SCRIPT, "notes"),
    **cite(MI300X_PAGE, "num_cores", note="304 compute units"),
    **cite(MI300X_PAGE, "clock", note="peak engine clock 2100 MHz; 2 x 304 x 2.1 GHz x 1024 = 1,307.4 TFLOP/s = dense bf16 headline"),
    **cite(CDNA3_WP, M + "fp32", note="128 matrix fp32 FMA/clk/CU; 163.4 TFLOP/s matrix fp32"),
    **cite(CDNA3_WP, M + "tf32", note="512/CU; 653.7 TFLOP/s dense"),
    **cite(CDNA3_WP, M + "bf16", note="1024/CU; 1,307.4 TFLOP/s dense (2,614.9 sparse)"),
    **cite(CDNA3_WP, M + "fp16", note="1024/CU; 1,307.4 TFLOP/s dense"),
    **cite(CDNA3_WP, M + "fp8", note="2048/CU; 2,614.9 TFLOP/s dense"),
    **cite(CDNA3_WP, M + "int8", note="2048/CU; 2,614.9 TOPS dense"),
    **cite(MI300X_PAGE, "vector_flops_per_cycle_per_core", note="peak fp32 vector 163.4 TFLOP/s = 304 x 2.1 GHz x 256"),
    **cite(MI300X_PAGE, "memory_capacity", "memory_bandwidth", note="192 GB HBM3, 5.3 TB/s"),
    **cite(ROCM_SPECS, "sram_per_core", note="MI300X: LDS 64 KiB + L1 vector cache 32 KiB per CU"),
    **cite(ROCM_SPECS, "llc_capacity", note="L3 (Infinity Cache) 256 MiB"),
    **cite(ROCM_SPECS, "register_file_per_core", note="MI300X: VGPR file 512 KiB per CU"),
    **cite(STH_MI300, "llc_bandwidth", note="Infinity Cache peak bandwidth 17 TB/s"),
    **cite(MI300X_IF, "link_bandwidth", "num_links", note="7 GPU-GPU links, 128 GB/s bidirectional = 64 GB/s per direction each"),
    **cite(MI300X_PAGE, "devices_per_node", note="8-GPU MI300X platform, every GPU linked directly to the other 7"),
    **cite(MI300X_PAGE, "tdp", note="750 W total board power"),
    **cite(CUDA_GRAPHS, "launch_overhead", note="assumption: HIP kernel launch taken equal to the CUDA figure; " + LAUNCH_NOTE),
    **MI300X_ENERGY_SOURCES,
}

# ---- NVIDIA inference cards ----------------------------------------------------------------
T4 = Hardware(
    name="T4", vendor="NVIDIA", kind="gpu",
    notes=("Turing PCIe card, 70 W, 16 GB GDDR6. Tensor cores have no bf16, tf32 or fp8: bf16 work runs at the fp16 "
           "rate. Its only device-to-device path is PCIe Gen3 x16 (16 GB/s per direction); devices_per_node 4 is "
           "the 4-T4 host of seed 001. sram_per_core is the 96 KB combined L1/shared memory (up to 64 KB shared). "
           "launch_overhead is an assumption."),
    num_cores=40, clock_hz=1.59e9,
    matrix_macs_per_cycle_per_core_fp16=512, matrix_macs_per_cycle_per_core_int8=1024,
    vector_flops_per_cycle_per_core=128, memory_capacity_bytes=16e9, memory_bandwidth_bytes_per_s=320e9,
    sram_per_core_bytes=96 * KiB, sram_bandwidth_bytes_per_cycle_per_core=128, llc_capacity_bytes=4 * MiB,
    register_file_per_core_bytes=256 * KiB, link_bandwidth_bytes_per_s=16e9, num_links=1, devices_per_node=4, tdp_w=70, launch_overhead_s=4e-6,
)
T4_SOURCES = {
    **cite("NVIDIA", "vendor"), **cite(T4_DATASHEET, "kind"), **cite(BUILD_SCRIPT, "notes"),
    **cite(TURING_WP, "num_cores", note="Tesla T4: 40 SMs (2,560 CUDA cores / 64)"),
    **cite(TURING_WP, "clock", note="boost 1590 MHz; 2 x 40 x 1.59 GHz x 512 = 65.1 TFLOP/s = datasheet fp16 65"),
    **cite(TURING_WP, M + "fp16", note="8 tensor cores x 64 FMA/clk = 512/SM"),
    **cite(T4_DATASHEET, M + "int8", note="INT8 130 TOPS = 2 x 40 x 1.59 GHz x 1024"),
    **cite(T4_DATASHEET, "vector_flops_per_cycle_per_core", note="single precision 8.1 TFLOP/s = 40 x 1.59 GHz x 128 (64 FP32 lanes x 2)"),
    **cite(T4_DATASHEET, "memory_capacity", "memory_bandwidth", note="16 GB GDDR6, 320+ GB/s (seed 001: 0.32 TB/s)"),
    **cite(TURING_TUNING, "sram_per_core", note="96 KB unified L1/shared memory per SM"),
    **cite(CUDA_GUIDE, "sram_bandwidth_per_core", note="32 banks x 4 B = 128 B/clock/SM"),
    **cite(TURING_WP, "llc_capacity", note="TU104 4 MB L2"),
    **cite(CUDA_REGISTERS, "register_file_per_core", note="64 K x 4 B = 256 KiB per SM (compute capability 7.5)"),
    **cite(T4_DATASHEET, "link_bandwidth", "num_links", note="x16 PCIe Gen3, 32 GB/s total = 16 GB/s per direction, one link"),
    **cite(SEED_T4, "devices_per_node", note="lspci lists four Tesla T4 on one host"),
    **cite(T4_DATASHEET, "tdp", note="70 W"),
    **cite(CUDA_GRAPHS, "launch_overhead", note=LAUNCH_NOTE),
}
L4 = Hardware(
    name="L4", vendor="NVIDIA", kind="gpu",
    notes=("Ada PCIe card, 72 W, 24 GB GDDR6. Device-to-device over PCIe Gen4 x16 (32 GB/s per direction); "
           "devices_per_node 8 as in Google Cloud's g2-standard-96. sram_per_core is the 128 KB combined "
           "L1/shared memory (up to 100 KB shared). launch_overhead is an assumption."),
    num_cores=58, clock_hz=2.04e9,
    matrix_macs_per_cycle_per_core_tf32=256, matrix_macs_per_cycle_per_core_bf16=512,
    matrix_macs_per_cycle_per_core_fp16=512, matrix_macs_per_cycle_per_core_fp8=1024,
    matrix_macs_per_cycle_per_core_int8=1024, vector_flops_per_cycle_per_core=256,
    memory_capacity_bytes=24e9, memory_bandwidth_bytes_per_s=300e9,
    sram_per_core_bytes=128 * KiB, sram_bandwidth_bytes_per_cycle_per_core=128, llc_capacity_bytes=48 * MiB,
    register_file_per_core_bytes=256 * KiB, link_bandwidth_bytes_per_s=32e9, num_links=1, devices_per_node=8, tdp_w=72, launch_overhead_s=4e-6,
)
L4_SOURCES = {
    **cite("NVIDIA", "vendor"), **cite(L4_DATASHEET, "kind"), **cite(BUILD_SCRIPT, "notes"),
    **cite(L4_TPU, "num_cores", note="58 SMs; 58 x 2.04 GHz x 256 = 30.3 TFLOP/s matches the datasheet fp32"),
    **cite(L4_TPU, "clock", note="boost 2040 MHz; 2 x 58 x 2.04 GHz x 512 = 121.2 TFLOP/s = datasheet bf16 242 sparse / 2"),
    **cite(L4_DATASHEET, M + "tf32", note="TF32 120 TFLOP/s sparse -> 60 dense; 256/SM gives 60.6"),
    **cite(L4_DATASHEET, M + "bf16", note="BF16 242 TFLOP/s sparse -> 121 dense; 512/SM"),
    **cite(L4_DATASHEET, M + "fp16", note="FP16 242 TFLOP/s sparse -> 121 dense; 512/SM"),
    **cite(L4_DATASHEET, M + "fp8", note="FP8 485 TFLOP/s sparse -> 242.5 dense; 1024/SM"),
    **cite(L4_DATASHEET, M + "int8", note="INT8 485 TOPS sparse -> 242.5 dense; 1024/SM"),
    **cite(L4_DATASHEET, "vector_flops_per_cycle_per_core", note="FP32 30.3 TFLOP/s = 58 x 2.04 GHz x 256 (128 FP32 lanes x 2)"),
    **cite(L4_DATASHEET, "memory_capacity", "memory_bandwidth", note="24 GB GDDR6, 300 GB/s"),
    **cite(ADA_TUNING, "sram_per_core", note="128 KB unified data cache (L1/shared) per SM"),
    **cite(CUDA_GUIDE, "sram_bandwidth_per_core", note="32 banks x 4 B = 128 B/clock/SM"),
    **cite(L4_TPU, "llc_capacity", note="48 MB L2"),
    **cite(CUDA_REGISTERS, "register_file_per_core", note="64 K x 4 B = 256 KiB per SM (compute capability 8.9)"),
    **cite(L4_DATASHEET, "link_bandwidth", "num_links", note="PCIe Gen4 x16, 64 GB/s total = 32 GB/s per direction, one link"),
    **cite(GCP_GPUS, "devices_per_node", note="g2-standard-96: 8 L4"),
    **cite(L4_DATASHEET, "tdp", note="72 W"),
    **cite(CUDA_GRAPHS, "launch_overhead", note=LAUNCH_NOTE),
}

# ---- Google --------------------------------------------------------------------------------
TPU_V5E = Hardware(
    name="TPU-v5e", vendor="Google", kind="tpu",
    notes=("One TensorCore per chip with 4 MXUs of 128x128 at 1.5 GHz: 196.6 TFLOP/s bf16 (Google: 197), 393 TOPS "
           "int8; no fp8. Vector: VPU of 8 sublanes x 128 lanes x 4 ALUs = 4096 fp32 ops/cycle (6.1 TFLOP/s), no "
           "FMA assumed; Google publishes no VPU figure. llc = 128 MiB VMEM scratchpad, bandwidth ~22x HBM. ICI: 4 "
           "links (2D torus), 50 GB/s per direction each (Google: 400 GB/s bidirectional per chip); seed 003 uses "
           "an older 4.5e10 B/s. devices_per_node 256 = one ICI-connected 16x16 pod (a host holds 8 chips). "
           "inter_node = data-center network, 6.4 Tbps per pod / 256 chips. No published TDP; launch overhead "
           "not modelled (XLA runs whole programs). Energies are estimates (Horowitz x 0.25, an assumed 7 nm-class "
           "node: Google publishes none); static power is blank for want of a TDP, so energy needs a static_power "
           "value (a what-if edit) before it is reported."),
    num_cores=1, clock_hz=1.5e9,
    matrix_macs_per_cycle_per_core_bf16=4 * 128 * 128, matrix_macs_per_cycle_per_core_int8=2 * 4 * 128 * 128,
    vector_flops_per_cycle_per_core=8 * 128 * 4, memory_capacity_bytes=16e9, memory_bandwidth_bytes_per_s=819e9,
    llc_capacity_bytes=128 * MiB, llc_bandwidth_bytes_per_s=22 * 819e9,
    link_bandwidth_bytes_per_s=50e9, num_links=4, devices_per_node=256, inter_node_bandwidth_bytes_per_s=3.125e9,
    **TPU_V5E_ENERGY,
)
TPU_V5E_SOURCES = {
    **cite(TPU_V5E_DOC, "vendor", "kind"), **cite(BUILD_SCRIPT, "notes"),
    **cite(TPU_V5E_DOC, "num_cores", note="each v5e chip contains one TensorCore"),
    **cite(SCALING_BOOK, "clock", note="about 5e13 bf16 FLOP/s per MXU at 1.5 GHz on TPU v5e"),
    **cite(TPU_V5E_DOC, M + "bf16", note="4 MXUs x 128 x 128 = 65536 MAC/cycle; 2 x 65536 x 1.5 GHz = 196.6 TFLOP/s (Google: 197)"),
    **cite(TPU_V5E_DOC, M + "int8", note="int8 393 TOPS = 2x the bf16 rate"),
    **cite(SCALING_BOOK, "vector_flops_per_cycle_per_core", note="appendix C: VPU is (8, 128) with 4 ALUs per lane and sublane on v5; 4096 fp32 ops/cycle, FMA not assumed"),
    **cite(TPU_V5E_DOC, "memory_capacity", "memory_bandwidth", note="16 GB HBM2, 819 GB/s"),
    **cite(SCALING_BOOK, "llc_capacity", note="VMEM: 128 MiB on TPU v5e"),
    **cite(SCALING_BOOK, "llc_bandwidth", note="approximate: VMEM bandwidth is around 22x HBM bandwidth (22 x 819 GB/s)"),
    **cite(TPU_V5E_DOC, "link_bandwidth", note="400 GB/s bidirectional ICI per chip over 4 links = 50 GB/s per direction per link (scaling book: 5e10 one-way)"),
    **cite(SCALING_BOOK, "num_links", note="v5e ICI connects the 4 nearest neighbours (2D torus)"),
    **cite(TPU_V5E_DOC, "devices_per_node", note="TPU pod size 256 chips, 2D torus"),
    **cite(TPU_V5E_DOC, "inter_node_bandwidth", note="data center network bandwidth per pod 6.4 Tbps / 256 chips = 3.125 GB/s per chip"),
    **TPU_V5E_ENERGY_SOURCES,
}

# ---- NVIDIA Volta --------------------------------------------------------------------------
V100_SXM2_32GB = Hardware(
    name="V100-SXM2-32GB", vendor="NVIDIA", kind="gpu",
    notes=("SXM2 module, 32 GB HBM2, 300 W. Tensor cores run fp16 only: bf16 work runs at the fp16 rate, and int8 "
           "runs on the CUDA cores (not modelled as a matrix rate). 6 NVLink2 links x 25 GB/s per direction; the "
           "8 GPUs of a DGX-1 form a hybrid cube-mesh, not all-to-all. sram_per_core is the 128 KB combined "
           "L1/shared memory (up to 96 KB shared). launch_overhead is an assumption."),
    num_cores=80, clock_hz=1.53e9, matrix_macs_per_cycle_per_core_fp16=512,
    vector_flops_per_cycle_per_core=128, memory_capacity_bytes=32e9, memory_bandwidth_bytes_per_s=900e9,
    sram_per_core_bytes=128 * KiB, sram_bandwidth_bytes_per_cycle_per_core=128, llc_capacity_bytes=6 * MiB,
    register_file_per_core_bytes=256 * KiB, llc_bandwidth_bytes_per_s=2048 * 1.53e9,
    link_bandwidth_bytes_per_s=25e9, num_links=6, devices_per_node=8, tdp_w=300, launch_overhead_s=4e-6,
)
V100_SOURCES = {
    **cite("NVIDIA", "vendor"), **cite(V100_DATASHEET, "kind"), **cite(BUILD_SCRIPT, "notes"),
    **cite(VOLTA_WP, "num_cores", note="Tesla V100: 80 SMs"),
    **cite(VOLTA_WP, "clock", note="boost 1530 MHz; 2 x 80 x 1.53 GHz x 512 = 125.3 TFLOP/s = datasheet tensor 125"),
    **cite(VOLTA_WP, M + "fp16", note="8 tensor cores x 64 FMA/clk = 512/SM"),
    **cite(V100_DATASHEET, "vector_flops_per_cycle_per_core", note="single precision 15.7 TFLOP/s = 80 x 1.53 GHz x 128 (64 FP32 lanes x 2)"),
    **cite(V100_DATASHEET, "memory_capacity", "memory_bandwidth", note="V100 SXM2: 32 GB HBM2, 900 GB/s"),
    **cite(VOLTA_WP, "sram_per_core", note="128 KB combined L1/shared memory per SM"),
    **cite(CUDA_GUIDE, "sram_bandwidth_per_core", note="32 banks x 4 B = 128 B/clock/SM"),
    **cite(VOLTA_WP, "llc_capacity", note="6 MB L2"),
    **cite(AMPERE_L2, "llc_bandwidth", note="V100: 2048 B/clk x 1.53 GHz = 3,133.4 GB/s (read bandwidth)"),
    **cite(CUDA_REGISTERS, "register_file_per_core", note="64 K x 4 B = 256 KiB per SM (compute capability 7.0)"),
    **cite(V100_DATASHEET, "link_bandwidth", "num_links", note="NVLink 300 GB/s = 6 links x 25 GB/s x 2 directions"),
    **cite(VOLTA_WP, "devices_per_node", note="DGX-1 with 8 V100 in a hybrid cube-mesh"),
    **cite(V100_DATASHEET, "tdp", note="V100 SXM2: 300 W"),
    **cite(CUDA_GRAPHS, "launch_overhead", note=LAUNCH_NOTE),
}

DEVICES: list[tuple[Hardware, dict]] = [
    (NVL_AX, NVL_AX_SOURCES), (JGS, JGS_SOURCES),
    (A100_40GB_PCIE, A100_40GB_PCIE_SOURCES), (A100_80GB_SXM, A100_80GB_SXM_SOURCES),
    (H100_SXM, H100_SXM_SOURCES), (H200_SXM, H200_SXM_SOURCES), *BLACKWELL_DEVICES, (MI300X, MI300X_SOURCES),
    (T4, T4_SOURCES), (L4, L4_SOURCES), *PCIE_DEVICES, (TPU_V5E, TPU_V5E_SOURCES), (V100_SXM2_32GB, V100_SOURCES),
]


def check_sources() -> None:
    """Every non-blank value has a source, and no source points at a blank value."""
    problems = []
    for device, sources in DEVICES:
        filled = {f.key for f in WORKBOOK_FIELDS if getattr(device, f.attribute) not in (None, "")}
        problems += [f"{device.name}: no source for {k}" for k in sorted(filled - set(sources))]
        problems += [f"{device.name}: source for blank {k}" for k in sorted(set(sources) - filled)]
        problems += [f"{device.name}: empty source for {k}" for k, (s, _) in sources.items() if not s.strip()]
    if problems:
        raise SystemExit("\n".join(problems))


def main(argv: list[str]) -> None:
    output = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent / "specs.xlsx"
    check_sources()
    write_specs([d for d, _ in DEVICES], output, sources={d.name: s for d, s in DEVICES})
    print(f"wrote {len(DEVICES)} devices to {output}")


if __name__ == "__main__":
    main(sys.argv)
