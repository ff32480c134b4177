"""PCIe cards with measured tables in NVIDIA's aiconfigurator-core that the workbook lacked (issue 12, h/newdev):
NVIDIA L40S (Ada, GDDR6), NVIDIA RTX PRO 6000 Blackwell Server Edition (GB202, GDDR7, fp4) and Intel Arc Pro B60
(Xe2 Battlemage, GDDR6), with their sources.

Same rules as scripts/build_specs.py: per-cycle figures are architectural integers, the clock is the one that
reproduces the dense bf16 headline, dense figures only (NVIDIA prints its sparse rates with a "*"). Every figure is
cross-checked against aiconfigurator's own system description (systems/<system>.yaml, NVIDIA's figures for the
node the tables were measured on); where the two disagree the note says which one is used and why. No energy rows:
the per-operation energies of engine/results/energy.py are estimated for HBM parts only (as for T4 and L4), so
energy reports say "unavailable" on these cards until someone adds GDDR figures.
"""

from __future__ import annotations

from engine.hardware.device import Hardware
from scripts.specs_common import (
    BUILD_SCRIPT, CUDA_GRAPHS, CUDA_GUIDE, CUDA_REGISTERS, LAUNCH_NOTE, KiB, M, MiB, cite,
)

# ---- documents -----------------------------------------------------------------------------
L40S_DATASHEET = ("NVIDIA L40S datasheet (https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413): 142 RT cores, "
                  "568 Tensor Cores, 18,176 CUDA cores; FP32 91.6 TFLOPS; TF32 183 | 366*, BF16/FP16 362.05 | 733*, FP8 "
                  "733 | 1,466* TFLOPS, INT8 733 | 1,466* TOPS (* with sparsity); 48 GB GDDR6 with ECC, 864 GB/s; PCIe "
                  "Gen4 x16 64 GB/s bidirectional; max power 350 W")
ADA_WP = ("NVIDIA Ada GPU Architecture whitepaper v2.1 (https://images.nvidia.com/aem-dam/Solutions/geforce/ada/"
          "nvidia-ada-gpu-architecture.pdf): 4 fourth-generation Tensor Cores and 128 FP32 cores per SM, 128 KB "
          "L1/shared memory per SM, AD102 with 96 MB L2")
ADA_TUNING = "NVIDIA Ada Tuning Guide (https://docs.nvidia.com/cuda/ada-tuning-guide/index.html)"
L40S_TPU = ("TechPowerUp GPU database, NVIDIA L40S (https://www.techpowerup.com/gpu-specs/l40s.c4173): AD102, 142 SMs, "
            "boost 2,520 MHz, 384-bit GDDR6 at 18 Gbps")
RTX_PRO_DATASHEET = ("NVIDIA RTX PRO 6000 Blackwell Server Edition datasheet (https://www.nvidia.com/en-us/data-center/"
                     "rtx-pro-6000-blackwell-server-edition/): 24,064 CUDA cores, 752 fifth-generation Tensor Cores, "
                     "188 RT cores; FP4 AI 4 PFLOPS (with sparsity); 96 GB GDDR7 with ECC; PCIe Gen5 x16; max power "
                     "600 W (configurable)")
RTX_BLACKWELL_WP = ("NVIDIA RTX Blackwell GPU Architecture whitepaper (https://images.nvidia.com/aem-dam/Solutions/"
                    "geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf): GB202, 4 fifth-generation Tensor "
                    "Cores and 128 CUDA cores per SM, 128 KB L1/shared memory per SM, 128 MB L2 on the full GB202, "
                    "FP4 at 2x FP8 at 2x FP16 per SM, 512-bit GDDR7 at 28 Gbps")
RTX_PRO_WORKSTATION = ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition datasheet (https://www.nvidia.com/en-us/"
                       "products/workstations/professional-desktop-gpus/rtx-pro-6000/): 188 SMs, FP32 125 TFLOPS, "
                       "AI TOPS 4,000 (FP4, sparse), 96 GB GDDR7 at 1,792 GB/s")
B60_PAGE = ("Intel Arc Pro B60 product brief and Intel ARK (https://www.intel.com/content/www/us/en/products/sku/243916/"
            "intel-arc-pro-b60-graphics/specifications.html): 20 Xe2 cores, 160 XMX engines, 20 ray-tracing units, "
            "graphics clock 2,400 MHz, 24 GB GDDR6, 192-bit, 456 GB/s, peak INT8 197 TOPS, PCIe 5.0 x8, total board "
            "power 120-200 W")
XE2_ARCH = ("Intel Xe2 / Battlemage architecture briefing (Intel Tech Tour 2024, https://www.intel.com/content/www/us/"
            "en/products/docs/discrete-gpus/arc/technology/xe2-architecture.html): per Xe2 core 8 512-bit vector "
            "engines (XVE, 16 fp32 lanes each) and 8 2048-bit XMX engines (fp16/bf16 128, int8 256 dense MAC/clk "
            "each; no fp8); BMG-G21: 256 KB L1/SLM per Xe core, 18 MB L2")
AIC_YAML = ("NVIDIA aiconfigurator-core 0.12.0 (PyPI, Apache-2.0), aiconfigurator_core/systems/{system}.yaml: "
            "NVIDIA's description of the node the measured tables come from")
SYCL_LAUNCH = ("assumption: 4 us per kernel as on CUDA (oneAPI Level Zero launch cost not published); "
               + LAUNCH_NOTE)


def dense_bf16(num_cores: int, macs: int, clock_hz: float) -> float:
    """2 x cores x MAC/cycle/core x clock: the dense matrix FLOP/s the workbook derives."""
    return 2 * num_cores * macs * clock_hz


def aic(system: str) -> str:
    return AIC_YAML.format(system=system)


# ---- NVIDIA L40S (Ada AD102, PCIe, 350 W) -----------------------------------------------------
L40S_SMS = 142
L40S_CLOCK = round(362.05e12 / (2 * L40S_SMS * 512) / 1e6) * 1e6        # 2.490 GHz
L40S = Hardware(
    name="L40S", vendor="NVIDIA", kind="gpu",
    notes=("Ada PCIe card (AD102), 350 W, 48 GB GDDR6 at 864 GB/s, no NVLink: device-to-device over PCIe Gen4 x16 "
           "(32 GB/s per direction); devices_per_node 8 as on aiconfigurator's measured node. 142 SMs x 512 dense "
           f"bf16 MAC/clk at a fitted {L40S_CLOCK / 1e9:g} GHz reproduce NVIDIA's 362.05 TFLOPS; NVIDIA's fp8, tf32 and "
           "fp32 figures (733, 183, 91.6) are at the 2.52 GHz boost clock, 1.2% above what the fitted clock derives "
           "(724, 181, 90.5). L2 96 MB is the AD102's (the L40S figure is not published: ASSUMPTION). sram_per_core "
           "is the 128 KB L1/shared memory. No energy rows (GDDR6). launch_overhead is an assumption."),
    num_cores=L40S_SMS, clock_hz=L40S_CLOCK,
    matrix_macs_per_cycle_per_core_tf32=256, matrix_macs_per_cycle_per_core_bf16=512,
    matrix_macs_per_cycle_per_core_fp16=512, matrix_macs_per_cycle_per_core_fp8=1024,
    matrix_macs_per_cycle_per_core_int8=1024, vector_flops_per_cycle_per_core=256,
    memory_capacity_bytes=48e9, memory_bandwidth_bytes_per_s=864e9,
    sram_per_core_bytes=128 * KiB, sram_bandwidth_bytes_per_cycle_per_core=128, llc_capacity_bytes=96 * MiB,
    register_file_per_core_bytes=256 * KiB, link_bandwidth_bytes_per_s=32e9, num_links=1, devices_per_node=8,
    inter_node_bandwidth_bytes_per_s=50e9, tdp_w=350, launch_overhead_s=4e-6,
)
L40S_SOURCES = {
    **cite("NVIDIA", "vendor"), **cite(L40S_DATASHEET, "kind"), **cite(BUILD_SCRIPT, "notes"),
    **cite(L40S_DATASHEET, "num_cores", note="142 RT cores / 568 Tensor Cores (4 per SM) / 18,176 CUDA cores (128 per "
                                             "SM): 142 SMs (TechPowerUp: 142)"),
    **cite(L40S_DATASHEET, "clock", note=f"fitted: 362.05e12 / (2 x 142 x 512) = 2.4899 GHz, rounded to "
                                         f"{L40S_CLOCK / 1e9:g} GHz (boost 2,520 MHz, TechPowerUp; aiconfigurator's "
                                         "l40s.yaml: bfloat16_tc_flops 362.05e12, the same)"),
    **cite(L40S_DATASHEET, M + "tf32", note="TF32 183 TFLOPS dense (366 sparse); 256/SM gives 181 at the fitted clock"),
    **cite(L40S_DATASHEET, M + "bf16", note="BF16 362.05 TFLOPS dense (733 sparse); 4 tensor cores x 128 = 512/SM"),
    **cite(L40S_DATASHEET, M + "fp16", note="FP16 362.05 TFLOPS dense, full rate with fp32 accumulate; 512/SM"),
    **cite(L40S_DATASHEET, M + "fp8", note="FP8 733 TFLOPS dense (1,466 sparse; l40s.yaml fp8_tc_flops 733e12); "
                                           "1024/SM gives 724 at the fitted clock, 733 at the 2.52 GHz boost"),
    **cite(L40S_DATASHEET, M + "int8", note="INT8 733 TOPS dense (l40s.yaml int8_tc_flops 733e12); 1024/SM"),
    **cite(L40S_DATASHEET, "vector_flops_per_cycle_per_core", note="128 FP32 cores per SM x 2 = 256; 142 x 2.52 GHz x "
                                                                   "256 = 91.6 TFLOPS = the datasheet's FP32 at boost"),
    **cite(L40S_DATASHEET, "memory_capacity", note="48 GB GDDR6 (l40s.yaml: 46,068 MiB usable)"),
    **cite(L40S_DATASHEET, "memory_bandwidth", note="864 GB/s = 384 bit x 18 Gbps / 8 (l40s.yaml mem_bw 864e9, the same)"),
    **cite(ADA_TUNING, "sram_per_core", note="128 KB unified L1/shared memory per SM (up to 100 KB shared)"),
    **cite(CUDA_GUIDE, "sram_bandwidth_per_core", note="32 banks x 4 B = 128 B/clock/SM"),
    **cite(ADA_WP, "llc_capacity", note="ASSUMPTION: the AD102's 96 MB L2 (96 MiB as NVIDIA states cache sizes); NVIDIA "
                                        "publishes no L2 size for the L40S and third-party listings differ (48 / 96 MB)"),
    **cite(CUDA_REGISTERS, "register_file_per_core", note="64 K x 4 B = 256 KiB per SM (compute capability 8.9)"),
    **cite(L40S_DATASHEET, "link_bandwidth", "num_links", note="PCIe Gen4 x16, 64 GB/s bidirectional = 32 GB/s per "
                                                             "direction, one link, no NVLink (l40s.yaml intra_node_bw 32e9)"),
    **cite(aic("l40s"), "devices_per_node", note="num_gpus_per_node 8 on the measured node"),
    **cite(aic("l40s"), "inter_node_bandwidth", note="inter_node_bw 50e9 B/s per GPU per direction (1:1 ConnectX-7 "
                                                     "400 Gb/s); NVIDIA's node description, not an L40S datasheet figure"),
    **cite(L40S_DATASHEET, "tdp", note="max power 350 W (l40s.yaml power 350)"),
    **cite(CUDA_GRAPHS, "launch_overhead", note=LAUNCH_NOTE),
}

# ---- NVIDIA RTX PRO 6000 Blackwell Server Edition (GB202, PCIe, 600 W) ------------------------
RTX_SMS = 188
RTX_CLOCK = 2.43e9
RTX_PRO_6000 = Hardware(
    name="RTX-PRO-6000-Server", vendor="NVIDIA", kind="gpu",
    notes=("RTX PRO 6000 Blackwell Server Edition: GB202 (sm_120) PCIe card, up to 600 W, 96 GB GDDR7, no NVLink: "
           "device-to-device over PCIe Gen5 x16 (64 GB/s per direction); devices_per_node 8 as on aiconfigurator's "
           "measured node. 188 SMs; per SM 512 dense bf16/fp16, 1024 fp8/int8 and 2048 fp4 MAC/clk (fp4 rated, so "
           "the model takes its matrix units as applying block scales natively, as on B200). Clock 2.43 GHz: the "
           "maximum SM clock nvidia-smi reports on the measured node (aiconfigurator's yaml), giving 467.8 TFLOPS "
           "dense bf16 and 1.87 PFLOPS dense fp4; NVIDIA's '4 PFLOPS FP4 (sparse)' and 125 TFLOPS FP32 are at the "
           "Workstation Edition's ~2.6 GHz boost. Memory 1,792 GB/s (512-bit GDDR7 at 28 Gbps, as the yaml). L2 "
           "128 MB. No energy rows (GDDR7). launch_overhead is an assumption."),
    num_cores=RTX_SMS, clock_hz=RTX_CLOCK,
    matrix_macs_per_cycle_per_core_tf32=256, matrix_macs_per_cycle_per_core_bf16=512,
    matrix_macs_per_cycle_per_core_fp16=512, matrix_macs_per_cycle_per_core_fp8=1024,
    matrix_macs_per_cycle_per_core_int8=1024, matrix_macs_per_cycle_per_core_fp4=2048,
    vector_flops_per_cycle_per_core=256, memory_capacity_bytes=96e9, memory_bandwidth_bytes_per_s=1792e9,
    sram_per_core_bytes=128 * KiB, sram_bandwidth_bytes_per_cycle_per_core=128, llc_capacity_bytes=128 * MiB,
    register_file_per_core_bytes=256 * KiB, link_bandwidth_bytes_per_s=64e9, num_links=1, devices_per_node=8,
    inter_node_bandwidth_bytes_per_s=50e9, tdp_w=600, launch_overhead_s=4e-6,
)
RTX_PRO_6000_SOURCES = {
    **cite("NVIDIA", "vendor"), **cite(RTX_PRO_DATASHEET, "kind"), **cite(BUILD_SCRIPT, "notes"),
    **cite(RTX_PRO_DATASHEET, "num_cores", note="24,064 CUDA cores / 128 per SM = 752 Tensor Cores / 4 = 188 SMs (of "
                                                "the GB202's 192)"),
    **cite(aic("rtx_pro_6000_server"), "clock", note="2,430 MHz: the maximum SM clock the measured node reports (the "
                                                      "yaml's comment); 2 x 188 x 512 x 2.43 GHz = 467.8 TFLOPS = the "
                                                      "yaml's bfloat16_tc_flops. Not the datasheet's: its 4 PFLOPS FP4 "
                                                      "(sparse) and the Workstation Edition's 125 TFLOPS FP32 imply "
                                                      "~2.6 GHz, the Workstation boost"),
    **cite(RTX_BLACKWELL_WP, M + "tf32", note="half the fp16 rate: 256/SM"),
    **cite(RTX_BLACKWELL_WP, M + "bf16", note="4 tensor cores x 128 = 512/SM dense (full rate with fp32 accumulate on "
                                              "RTX PRO); 467.8 TFLOPS at 2.43 GHz (yaml: 467.8)"),
    **cite(RTX_BLACKWELL_WP, M + "fp16", note="same as bf16: 512/SM"),
    **cite(RTX_BLACKWELL_WP, M + "fp8", note="2x fp16: 1024/SM, 935.6 TFLOPS dense at 2.43 GHz (yaml fp8_tc_flops 935.6e12)"),
    **cite(RTX_BLACKWELL_WP, M + "int8", note="1024/SM, 935.6 TOPS dense (yaml int8_tc_flops 935.6e12)"),
    **cite(RTX_PRO_DATASHEET, M + "fp4", note="FP4 4 PFLOPS sparse -> 2 PFLOPS dense at ~2.6 GHz = 188 x 2048 x 2 x "
                                              "2.6 GHz; 2048/SM gives 1.87 PFLOPS at 2.43 GHz (yaml fp4_tc_flops 1871.2e12)"),
    **cite(RTX_PRO_WORKSTATION, "vector_flops_per_cycle_per_core", note="128 FP32 cores per SM x 2 = 256; 188 x 2.6 "
                                                                        "GHz x 256 = 125 TFLOPS (Workstation FP32)"),
    **cite(RTX_PRO_DATASHEET, "memory_capacity", note="96 GB GDDR7 (yaml: 97,887 MiB reported by nvidia-smi)"),
    **cite(aic("rtx_pro_6000_server"), "memory_bandwidth",
           note="mem_bw 1.792e12 = 512 bit x 28 Gbps / 8 (the Workstation datasheet's 1,792 GB/s); used rather than "
                "the ~1.6 TB/s some Server Edition listings give, because the yaml describes the measured node"),
    **cite(RTX_BLACKWELL_WP, "sram_per_core", note="128 KB L1/shared memory per SM (up to 100 KB shared, CC 12.0)"),
    **cite(CUDA_GUIDE, "sram_bandwidth_per_core", note="32 banks x 4 B = 128 B/clock/SM"),
    **cite(RTX_BLACKWELL_WP, "llc_capacity", note="128 MB L2 on the full GB202; the RTX PRO 6000 enables all of it "
                                                  "(the RTX 5090 96 MB); 128 MiB as NVIDIA states cache sizes"),
    **cite(CUDA_REGISTERS, "register_file_per_core", note="64 K x 4 B = 256 KiB per SM (compute capability 12.0)"),
    **cite(RTX_PRO_DATASHEET, "link_bandwidth", "num_links", note="PCIe Gen5 x16 = 64 GB/s per direction, one link, no "
                                                                "NVLink (yaml intra_node_bw 64e9)"),
    **cite(aic("rtx_pro_6000_server"), "devices_per_node", note="8 GPUs per node (nvidia-smi topo on the measured node)"),
    **cite(aic("rtx_pro_6000_server"), "inter_node_bandwidth", note="inter_node_bw 50e9 B/s per GPU per direction, the "
                                                                    "yaml's '400 Gb/s placeholder'"),
    **cite(RTX_PRO_DATASHEET, "tdp", note="max power 600 W (configurable; the measured node's power limit 600 W)"),
    **cite(CUDA_GRAPHS, "launch_overhead", note=LAUNCH_NOTE),
}

# ---- Intel Arc Pro B60 (Xe2 BMG-G21, PCIe 5.0 x8, 200 W) ---------------------------------------
B60_CORES, B60_CLOCK = 20, 2.4e9
B60 = Hardware(
    name="Arc-Pro-B60", vendor="Intel", kind="gpu",
    notes=("Intel Arc Pro B60 (Battlemage BMG-G21, Xe2), up to 200 W, 24 GB GDDR6 at 456 GB/s, device-to-device over "
           "PCIe 5.0 x8 (32 GB/s per direction); devices_per_node 8 as on aiconfigurator's measured node (Intel's "
           "Battlematrix systems hold up to 8). Cores are the 20 Xe2 cores (the units a work-group runs on, as SMs "
           "are), matrix units the 8 XMX engines per core: 1024 dense bf16/fp16 and 2048 int8 MAC/clk per core at "
           "2.4 GHz give 98.3 TFLOPS and 197 TOPS (Intel: 197 TOPS int8). No native fp8: the fp8 row holds the bf16 "
           "rate fp8 GEMMs run at (weights up-converted, as aiconfigurator's yaml says), since the engine's fallback "
           "for a blank fp8 row is int8, a unit fp8 cannot use; no fp4 or tf32 figure (blank). Vector 8 XVEs x 16 lanes x "
           "2 = 256 FLOP/clk per core (12.3 TFLOPS). L2 18 MB, 256 KB L1/SLM per Xe core. Register file, L1 bandwidth "
           "and scale-out NIC are not published: blank. No energy rows. launch_overhead is an assumption."),
    num_cores=B60_CORES, clock_hz=B60_CLOCK,
    matrix_macs_per_cycle_per_core_bf16=1024, matrix_macs_per_cycle_per_core_fp16=1024,
    matrix_macs_per_cycle_per_core_fp8=1024, matrix_macs_per_cycle_per_core_int8=2048,
    vector_flops_per_cycle_per_core=256, memory_capacity_bytes=24e9, memory_bandwidth_bytes_per_s=456e9,
    sram_per_core_bytes=256 * KiB, llc_capacity_bytes=18 * MiB,
    link_bandwidth_bytes_per_s=32e9, num_links=1, devices_per_node=8, tdp_w=200, launch_overhead_s=4e-6,
)
B60_SOURCES = {
    **cite("Intel", "vendor"), **cite(B60_PAGE, "kind"), **cite(BUILD_SCRIPT, "notes"),
    **cite(B60_PAGE, "num_cores", note="20 Xe2 cores (160 XMX engines / 8 per core)"),
    **cite(B60_PAGE, "clock", note="graphics clock 2,400 MHz; 2 x 20 x 1024 x 2.4 GHz = 98.3 TFLOPS dense bf16 = "
                                   "aiconfigurator's b60.yaml bfloat16_tc_flops 98.304e12"),
    **cite(XE2_ARCH, M + "bf16", note="8 XMX engines x 128 fp16/bf16 MAC/clk = 1024 per Xe2 core"),
    **cite(XE2_ARCH, M + "fp16", note="same as bf16: 1024 per Xe2 core"),
    **cite(aic("b60"), M + "fp8", note="NOT a native rate: the Xe2 XMX engines have no fp8 (Intel lists fp16/bf16/int8/"
                                       "int4/int2), so fp8 GEMMs run at the bf16 rate, 1024 per core (b60.yaml: "
                                       "fp8_tc_flops 98.304e12 'falls back to BF16'); a blank row would fall back to int8"),
    **cite(B60_PAGE, M + "int8", note="peak INT8 197 TOPS = 2 x 20 x 2048 x 2.4 GHz (196.6); b60.yaml int8_tc_flops 197e12"),
    **cite(XE2_ARCH, "vector_flops_per_cycle_per_core", note="8 XVEs x 16 fp32 lanes x 2 (FMA) = 256 per Xe2 core; "
                                                             "20 x 2.4 GHz x 256 = 12.29 TFLOPS (b60.yaml float32 12.28e12)"),
    **cite(B60_PAGE, "memory_capacity", note="24 GB GDDR6 (b60.yaml: 24 GiB; the workbook takes the decimal 24 GB)"),
    **cite(B60_PAGE, "memory_bandwidth", note="456 GB/s = 192 bit x 19 Gbps / 8 (b60.yaml mem_bw 456e9, the same)"),
    **cite(XE2_ARCH, "sram_per_core", note="256 KB shared local memory / L1 per Xe2 core on BMG-G21"),
    **cite(XE2_ARCH, "llc_capacity", note="18 MB L2 on BMG-G21 (18 MiB)"),
    **cite(B60_PAGE, "link_bandwidth", "num_links", note="PCIe 5.0 x8 = 32 GB/s per direction, one link (b60.yaml "
                                                       "pcie_bw 32e9; it measures 28.4e9 usable after TLP headers)"),
    **cite(aic("b60"), "devices_per_node", note="num_gpus_per_node 8 on the measured node"),
    **cite(B60_PAGE, "tdp", note="total board power up to 200 W (board partners ship 120-200 W; b60.yaml power 200)"),
    **cite(CUDA_GRAPHS, "launch_overhead", note=SYCL_LAUNCH),
}

PCIE_DEVICES: list[tuple[Hardware, dict]] = [
    (L40S, L40S_SOURCES), (RTX_PRO_6000, RTX_PRO_6000_SOURCES), (B60, B60_SOURCES),
]
