"""The realistic method's constants: per element-wise kernel class, per GEMM format, for MoE and fused attention,
and the device numbers it reads from the workbook (with defaults where a device leaves them blank).

Every fitted value below is named and says what it was fitted on; docs/accuracy.md gives the fits' errors.
engine/estimators/realistic.py re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from engine.common.arrays import any_true
from engine.common.float_or_array import where
from engine.estimators.flash_prefill import softmax_rate_scale
from engine.estimators.fused_attention import AttentionOverheads
from engine.estimators.mla_attention import SHIPPED_MLA, MlaAttention, runs_one_core_decode
from engine.hardware.device import Hardware

# Defaults for devices without calibrated values: the mean of the A100-80GB-SXM and H100-SXM fits
# (0.72 and 0.70; 0.73 and 0.90; 5.5 us and 7.25 us; docs/accuracy.md).
DEFAULT_MATRIX_FRACTION = 0.71
DEFAULT_MEMORY_FRACTION = 0.815
DEFAULT_KERNEL_LATENCY_S = 6.375e-6
LAUNCH_MODES = ("eager", "graph")

ROW_CTAS_PER_CORE = 2   # 1024-thread CTAs, 2048 resident threads per SM (A100, H100)
# Devices whose parallel units are SIMT cores that run a row-wise kernel as one CTA per token (GPUs, and the
# hypothetical GPU-like parts of the workbook). A TPU or NPU core streams a whole tensor through its vector
# unit from bulk DMA: no per-token CTAs, so its element-wise kernels stream at the achievable bandwidth.
ROW_WAVE_KINDS = ("gpu", "hypothetical")


@dataclass(frozen=True, slots=True)
class KernelClass:
    """How an element-wise kernel class runs, relative to the device's GEMM operand streaming.

    kernel time = max(floor_s, latency_s + max(bytes / bandwidth, row waves))
    bandwidth = min(1, bandwidth_efficiency x achievable_memory_bandwidth_fraction) x peak.
    Row-wise kernels (row_bytes_per_cycle set: one CTA per token, as vLLM's norm and activation kernels) run their
    rows in waves of ROW_CTAS_PER_CORE x cores, each CTA streaming its row (realistic.row_cta_bytes; gamma from the
    cache where row_weights_cached) at row_bytes_per_cycle x clock: a few tokens cannot use the whole memory
    bandwidth. The fixed times are seconds (alike on A100 and H100), unlike a GEMM's device `kernel_latency`."""

    bandwidth_efficiency: float
    latency_s: float
    floor_s: float = 0.0
    row_bytes_per_cycle: float | None = None
    row_weights_cached: bool = False


# Element-wise kernel classes, fitted by engine/calibration/fit.py (coordinate descent, median + p90/2 of |error|)
# on the RMSNorm, SwiGLU and residual-add rows of Vidur's A100-80GB-SXM and H100-SXM profiles
# (vidur_llama2_ops.csv), averaged over the two devices.
NORM_CLASS = KernelClass(  # RMSNorm rows: a CTA streams its token's row, gamma from the cache (refit, session 21)
    bandwidth_efficiency=0.50, latency_s=1.125e-6, floor_s=2.125e-6, row_bytes_per_cycle=3.62, row_weights_cached=True)
ACTIVATION_CLASS = KernelClass(      # SwiGLU rows
    bandwidth_efficiency=0.66, latency_s=1.25e-6, floor_s=1.5e-6, row_bytes_per_cycle=5.88)
RESIDUAL_CLASS = KernelClass(        # residual-add rows (faster than GEMM operand streams; not row-wise)
    bandwidth_efficiency=1.20, latency_s=0.0, floor_s=2.625e-6)

# Fused attention's fixed work, fitted by engine/calibration/silicon/attention_fit.py (soft-L1 least squares on
# log(predicted / measured)) on AIConfigurator's trtllm context and generation attention tables of
# A100-80GB-SXM, H100-SXM, H200-SXM, B200, GB200, B300 and GB300 (2,000 rows each), leave-one-device-out scored.
ATTENTION_OVERHEADS = AttentionOverheads(
    prefill_tile_cycles=0.0,            # core cycles per (query tile, key tile) iteration of a flash CTA (was 7)
    prefill_cta_cycles=11300.0,         # core cycles per prefill CTA (head x query tile) of full rows (was 10,700)
    prefill_cta_rows_exponent=0.27,     # ... x (query rows / tile rows) ** 0.27 for a prompt shorter than a tile
    prefill_cta_softmax_share=0.59,     # ... of which this share runs at the softmax rate (Blackwell Ultra's faster)
    prefill_score_vector_flops=6.8,     # vector FLOPs per padded score after the matrix work (the online softmax)
    decode_cta_cycles=2310.0,           # core cycles per decode CTA: (sequence, KV head); generic: (sequence, query head)
    decode_bandwidth_efficiency=1.43,   # the decode KV stream's rate relative to a GEMM operand stream's (was 1.42)
    # the generic decode kernel (more than 32 query heads per KV head): core cycles per MAC (was the vector units'
    # peak, 2 FLOPs per MAC: 10x too fast at long contexts); every leave-one-device-out fold 0.070-0.074
    decode_generic_mac_cycles=0.071,
    # The kernel-generation decode form (fused_attention._decode_terms; docs/accuracy.md, "Decode attention, fourth
    # step" and "fifth step"), fitted on all seven devices with the constants above and attention_decode_latency_s /
    # attention_decode_latency_cycles / attention_decode_fp8_latency_cycles:
    decode_wide_kv_cta_cycles=5440.0,        # + per grouped-query CTA over a 16-bit cache, devices without fp4 units
    decode_pair_bytes_per_core_cycle=14.4,   # each (sequence, KV head) streams at this x cores x clock, added to the
                                             # HBM stream's time (h/dattn5, MLA's latent kernels too; was 5.5 as a
                                             # bound beside it, not on MLA)
    # split-KV reduction beyond 32,768 cached values per head (tokens x head dim; h/dattn6, was 256 tokens), devices
    # without fp4 units, + the ramp x HBM bytes per core cycle (decode_split.py; session 21 refit, were 3,380 + 302)
    decode_split_cycles=4360.0,
    decode_split_ramp_cycles=221.0,
    decode_fp8_cta_cycles=1890.0,            # the 8-bit matrix decode kernel's cycles per (sequence, KV head) (Hopper fp8)
    decode_fp8_fragment_share=0.24,          # ... and its groups of 9-16 query heads: + 24% per extra 8-head fragment
    decode_fragment_share=0.18,              # groups of 17-32 query heads: + 18% of the kernel time per extra 16 heads
    decode_stream_cap=0.975,                 # the HBM stream at most 97.5% of the peak (was 0.933 with the pair bound)
    decode_fp8_value_cycles=0.093)           # Hopper's 8-bit one-head-per-KV-head kernel: core cycles per K/V value
# Shipped for serving: with it the leave-one-system-out serving benchmark (benchmarks/serving_accuracy.py --limit 500,
# 441 runs) goes TPOT median / p90 13.0 / 44.3% -> 13.2 / 43.0%, TTFT 33.4 / 91.9% -> 31.9 / 89.3%, and decode
# attention LODO A100 22.4 -> 12.4%, H100 25.3 -> 14.2, H200 27.8 -> 15.0. The tables' kernels are TensorRT-LLM's
# (XQA), which serving engines run; our own H100 / H200 decode ground truth is PyTorch SDPA, a different kernel, and
# moves 10.0 / 7.6% -> 11.7 / 10.4% median off (tests/test_gpu_ground_truth.py).


@dataclass(frozen=True, slots=True)
class RealisticConstants:
    """Software constants of the realistic method (fitted where data exists, see docs/accuracy.md)."""

    kernel_classes: dict = field(default_factory=lambda: {
        "norm": NORM_CLASS, "activation": ACTIVATION_CLASS, "residual": RESIDUAL_CLASS})
    # element-wise ops without measurements borrow a measured class (assumption, documented)
    class_of_op: dict = field(default_factory=lambda: {
        "norm": "norm", "softmax": "norm", "activation": "activation", "rotary": "activation",
        "residual": "residual", "kv_store": "residual", "embedding": "residual",
    })
    # fused attention's matrix rate relative to a GEMM's: fitted with the attention block below (was 0.85, assumed
    # from FlashAttention-2 reaching 50-73% of peak on A100 where cuBLAS GEMMs reach ~75-80%)
    attention_matrix_efficiency: float = 0.81     # 0.76 before the softmax's own per-score work (h/kern6)
    gemv_max_rows: int = 1
    # GEMMs per dtype (an entry for the dtype itself, e.g. fp8_g128, else for its compute format, e.g. fp8):
    # the achievable matrix rate is the device's achievable_matrix_fraction x gemm_matrix_efficiency (1 where
    # absent), and each GEMM adds gemm_format_latency_s to the device's kernel_latency (0 where absent; the sum
    # at least 0). Fitted on NVIDIA AIConfigurator's measured GEMM tables, leave-one-device-out
    # (engine/calibration/silicon/fit.py, docs/accuracy.md). Shipped: the efficiencies of the clock-and-power form
    # below (bf16, fp8, fp8_g128); the format latencies are then unused (kept: the additive form's last fit).
    gemm_matrix_efficiency: dict = field(default_factory=lambda: {"bf16": 1.18, "fp8": 0.94, "fp8_g128": 1.03})
    gemm_format_latency_s: dict = field(default_factory=lambda: {"fp8": 2.25e-6, "fp8_g128": 0.0})
    # The clock-and-power form of a GEMM (per dtype, like the two above; empty: none shipped, see docs/accuracy.md):
    # gemm_latency_cycles: the GEMM's device latency back to back (warm condition) is cycles / clock_hz (replacing
    # kernel_latency + gemm_format_latency_s): a kernel's prologue, pipeline fill and epilogue are core cycles, so a
    # slower clock (A100's 1.41 GHz) has a longer floor. gemm_power_j_per_flop: the chip's aggregate matrix rate
    # over the cores a GEMM keeps busy is at most (tdp_w - static_power_w) / joules per FLOP (sustained clocks under
    # the board's power limit: Blackwell's large GEMMs; devices without tdp_w are not capped); a chip-level bound
    # (tiling.candidate_times), so a GEMM of few tiles is not slowed and more cores are never slower. gemm_split_k_cycles: a split-K GEMM's reduction pass
    # (a second kernel or the splits' serialised fix-up), cycles at the clock, so a library splits k only where
    # it pays. Fitted leave-one-device-out by engine/calibration/silicon/fit.py.
    # Shipped: bf16, fp8 (per-tensor) and fp8_g128 (block-scaled), fitted on all 7 devices' tables (6 for fp8; warm,
    # frameworks pooled, fp8 with each one's quantize kernel); fp8 shares bf16's latency cycles; fp8_g128 is not capped
    # (fit: 0); fp4 (nvfp4 x nvfp4) only the nvfp4 fit's cap (conditions.TABLE_NVFP4_CLOCK; h/fp4all, accuracy.md).
    gemm_latency_cycles: dict = field(default_factory=lambda: {"bf16": 4500.0, "fp8": 4700.0, "fp8_g128": 4700.0})
    gemm_power_j_per_flop: dict = field(default_factory=lambda: {"bf16": 0.57e-12, "fp8": 0.42e-12, "fp4": 0.14e-12})
    gemm_split_k_cycles: dict = field(default_factory=lambda: {"bf16": 4100.0, "fp8": 5300.0, "fp8_g128": 10000.0})
    # gemm_overlap_loss: per dtype, the part of min(compute, memory) a tile's pipeline does not hide (its fill before
    # the first MMA, its drain and epilogue after the last load): a candidate takes max(c, m) + loss x min(c, m)
    # (tiling.candidate_times). Warm condition only (gemm_condition.overlap_loss); empty: the roofline's max.
    # Shipped with the efficiencies, latency and split-K cycles above: fit.fit_all(hold_power=True) on all 7 devices'
    # tables (600 rows per device, framework and dtype; h/gemm4, docs/accuracy.md), the power cap held at its value
    # because it also binds the model condition. h/gemm5 refitted fp8 with the tables' quantize bytes per value
    # (conditions.TABLE_QUANTIZE_BYTES_PER_VALUE): efficiency 0.86 -> 0.94, loss 0.38 -> 0.34 (warm condition only).
    gemm_overlap_loss: dict = field(default_factory=lambda: {"bf16": 0.14, "fp8": 0.34, "fp8_g128": 0.6})
    # gemm_block_scale_flops: per software block-scaled dtype (fp8_g128), the vector FLOPs spent on each output value
    # per scale group where the matrix units do not take the scales (no fp4 rate in the workbook: Hopper): the matrix
    # rate x 1 / (1 + flops x matrix MAC/s / (group x vector FLOP/s)) (gemm_condition.block_scale_efficiency; H100
    # fp8_g128 at 2 FLOPs, one FMA: x 0.80). Warm condition only; fitted leave-one-device-out (fit.py).
    gemm_block_scale_flops: dict = field(default_factory=dict)
    # gemm_k_step_cycles: per dtype, core cycles each wave of tiles spends per TILE_K-deep step of its k loop beyond
    # its matrix work and operand stream (a k-block's barrier wait and instruction issue, not hidden behind the MMA
    # of a small tile): a candidate adds waves x ceil(k slice / TILE_K) x cycles / clock (tiling.candidate_times), so
    # a deep k costs more than the floor alone says and split-K pays for small m. Warm condition only.
    # Shipped bf16 10 (h/gemm7: fit.fit_all(hold_power=True) on all 7 devices' tables over the grid 0/10/20/30, with
    # bf16's efficiency 1.13 -> 1.18, latency 4,700 -> 4,500 cycles, split-K 4,000 -> 4,100, loss 0.22 -> 0.14 refitted
    # with it; the fp8 entries keep h/gemm5's fit at 4,700 cycles: refitted at bf16's 4,500 with the power cap held,
    # fp8 and fp8_g128 choose 0 k-step cycles and move by -0.5 to +0.4 points per device in-sample; docs/accuracy.md).
    gemm_k_step_cycles: dict = field(default_factory=lambda: {"bf16": 10.0})
    # gemm_epilogue_bytes_per_value: on devices whose GEMM kernels write their output tile through shared memory
    # after the k loop, not overlapped with the next tile's loads (no asynchronous tensor-memory copies, TMA: before
    # Hopper; the workbook's proxy is a matrix unit without an fp8 rate, gemm_condition.synchronous_epilogue), each
    # wave pays tile_m x tile_n x bytes / sram_bandwidth_bytes_per_cycle_per_core cycles at the clock
    # (tiling.candidate_times). 8 would be the fp32 accumulator stored to shared memory and read back (4 + 4 bytes),
    # not fitted (A100 is the only such device in the tables, so no leave-one-device-out fold could fit it). Warm
    # condition only; 0: none. Shipped 0 (tried and not kept, h/gemm8, docs/accuracy.md: A100's bf16 leave-one-device-out
    # 9.05% -> 8.35%, but the bf16 folds' latency cycles, which fp8_g128 shares, move and GB200's fp8_g128 gets 1 point worse).
    gemm_epilogue_bytes_per_value: float = 0.0
    # gemm_native_scale_cycles: per fp8-family dtype (fp8, fp8_g128), core cycles a warm GEMM adds to
    # gemm_latency_cycles on matrix units with native block scales (fp4-rated in the workbook: Blackwell;
    # gemm_condition.native_scale_latency_applies). The tables' smallest GEMMs say why: fp8 minus bf16 on the same
    # shape is 0.8-2 us larger on every Blackwell than on Hopper in each framework, block-scaled fp8 1.6-2.9 us
    # (h/gemm9, docs/accuracy.md). Warm condition only; empty: none.
    gemm_native_scale_cycles: dict = field(default_factory=dict)
    # gemm_tile_store_bytes_per_value: per dtype, bytes per output value each wave's tiles move through shared memory
    # after the k loop, not hidden, on every device (gemm_condition.tile_store_s_per_value; the per-dtype form of
    # gemm_epilogue_bytes_per_value: 8 would be the fp32 accumulator stored and read back). Warm condition only.
    # Shipped empty: the leave-one-device-out fit uses fp8 4 (bf16 output written and read once; fit.
    # TILE_STORE_BYTES_PER_VALUE: fp8 8.93 -> 8.46% B200, 8.28 -> 7.42 GB200, 12.63 -> 12.05 H100, h/gemm9,
    # docs/accuracy.md); shipping it needs the fp8 constants refitted with it (unrefitted, B300 in-sample +0.44 points).
    gemm_tile_store_bytes_per_value: dict = field(default_factory=dict)
    # The operating condition GEMM times are for (engine/estimators/gemm_condition.py): "model" (default: in a
    # model's layer stack, weights from HBM, an isolated kernel: the device's kernel_latency) or "warm"
    # (AIConfigurator's collector: weight copies back to back in one CUDA graph, latency gemm_latency_cycles / clock;
    # only for scoring on its tables). gemm_model_matrix_efficiency: per dtype, the model condition's matrix
    # efficiency where it differs from the tables' (bf16 1.0: our H100 and H200 run large flushed bf16 GEMMs ~7%
    # slower than the tables' 1.09 says, bias -0.2% / +0.5% at 1.0 above 200 us; docs/accuracy.md).
    # gemm_quantize_latency_s: per dtype, the fixed time of the kernel that quantizes a GEMM's
    # bf16 activation to fp8 before it (both conditions; the tables' per framework: engine/calibration/silicon/
    # conditions.py; empty: a bare GEMM on pre-quantized inputs, as our ground-truth files time them). Shipped
    # 3.5 us: vLLM's and SGLang's tables (3.25-3.75 us; TensorRT-LLM's 11.25 us); carried in serving because the
    # serving runs say so (docs/accuracy.md: held-out TPOT 16.0% without, 10.9% with, on the test subset).
    gemm_condition: str = "model"
    gemm_model_matrix_efficiency: dict = field(default_factory=lambda: {"bf16": 1.0, "fp8": 0.83, "fp8_g128": 0.86})
    gemm_quantize_latency_s: dict = field(default_factory=lambda: {"fp8": 3.5e-6})
    # ... and the bytes it moves per activation value (empty: gemm_condition.QUANTIZE_BYTES_PER_VALUE, 3: a bf16 read
    # and an e4m3 write); the tables' per framework (conditions.TABLE_QUANTIZE_BYTES_PER_VALUE)
    gemm_quantize_bytes_per_value: dict = field(default_factory=dict)
    # MoE (engine/decomposition/moe.py's rows), fitted on AIConfigurator's trtllm MoE tables (bf16, fp8, fp8
    # block-scaled; 6 devices, 1,000 rows each, the collector's balanced routing), leave-one-device-out:
    # engine/calibration/silicon/moe_fit.py, benchmarks/moe_accuracy.py, docs/accuracy.md. Shipped: the all-device fit
    # (folds differ: block-scaled cycles 150 without B200 or GB200, block-scaled efficiency 0.6 without H100).
    # Grouped GEMMs (rows named Expert_*: one GEMM per active expert in one launch): their matrix rate and weight
    # stream relative to a plain GEMM's (x the format's efficiency above; 1: alike; the matrix efficiency is not
    # determined by the tables).
    moe_matrix_efficiency: float = 1.0
    moe_bandwidth_efficiency: float = 1.0
    # The MoE_combine row (the weighted sum of each token's k expert outputs, 2 vector FLOPs per (token, expert) pair
    # x hidden value) also carries the token permutation the decomposition does not list (scatter to the experts'
    # rows, gather back): core cycles per listed vector FLOP, spread over the cores (SIMT devices; 0: a plain
    # residual-class stream) ...
    moe_combine_flop_cycles: float = 0.25
    # ... added to its byte stream (True) or overlapping it (False: the larger of the two, the form before)
    moe_combine_cycles_add: bool = True
    # ... and core cycles per (token x hidden value): the routing and the finalize walk every token of the batch,
    # those no expert of the device took included (expert parallelism: all tokens, a share of the pairs)
    moe_combine_token_cycles: float = 0.3
    # A grouped GEMM launch walks every GEMM problem it is given, one per expert the device holds (the kernel
    # table's group_size on Expert_* rows), even those no token reaches: core cycles per expert held, at the
    # clock, per Expert_* GEMM row (0: none) ...
    moe_group_cycles: float = 25.0
    # ... per GEMM format where it differs (the row's dtype, then its compute format; else moe_group_cycles):
    # block-scaled fp8 (fp8_g128, the scorer's and the decomposition's label: dtypes.gemm_dtype) walks each
    # expert's scale factors too: ~0.23 us more per expert held on Hopper and Blackwell at one to four tokens
    # (fitted leave-one-device-out: 150-200 cycles per row, 200 on all devices).
    moe_group_format_cycles: dict = field(default_factory=lambda: {"fp8_g128": 200.0})
    # The MoE_topk row (each token's k experts picked from the router's E logits): k selection passes, each a
    # reduction of log2(E) steps, core cycles per step at the clock, added to the row's latency and least time
    # (0: a plain stream). E = 512, k = 22: 19,800 cycles, ~10 us; E = 8, k = 2: 600 cycles.
    moe_topk_step_cycles: float = 100.0
    # Grouped MoE kernels of gated experts quantize their activations inside the token permutation and the gated
    # activation, so their GEMMs pay no separate quantize kernel (gemm_quantize_latency_s; False: the form before,
    # each Expert_* row a plain GEMM with its quantize kernel). Non-gated experts (relu2, Nemotron-3) keep theirs:
    # their fp8 tables are ~13-20 us slower than the fused form (bias -17.6% with it, -8.1% without).
    moe_fused_quantize: bool = True
    # ... but the fused quantization still moves its bytes: each quantized input (the permuted tokens, pairs x
    # hidden, once for Expert_up and Expert_gate; the activation, pairs x inner) read in bf16 and written in 8 bits
    # at the achievable bandwidth, without a kernel's latency (gemm_condition.QUANTIZE_BYTES_PER_VALUE; no fitted
    # value). False: fused quantization free, the form before.
    moe_fused_quantize_bytes: bool = True
    # On matrix units without a microscaled format (no fp4 rate in the workbook: Hopper), a grouped GEMM of a software
    # block-scaled format (fp8_g128) applies each 128-deep block's scales to its partial sums on the SIMT cores
    # between tensor-core steps: its matrix rate x this (1: like the plain format). Fitted 0.5 (folds 0.5-0.6): Hopper's
    # block-scaled experts were -20 to -34% above 64 pairs per expert at 1; TensorRT-LLM runs CUTLASS there, DeepGEMM
    # on Blackwell
    moe_block_scaled_efficiency: float = 0.5
    # The gated experts' up and gate GEMMs are one grouped launch of twice the width (TensorRT-LLM's fc1): the
    # Expert_gate row pays no fixed latency of its own (False or None: each row its own launch) ...
    moe_fused_gate_launch: bool | None = None
    # ... and each MoE layer runs kernels the decomposition does not list (the expand / permute and finalize
    # launches): a fixed time in seconds on its MoE_combine row, the same on every device (None or 0: none).
    # Together they give gated and non-gated (relu2) layers the same floor structure (non-gated floors were ~10%
    # short). Both None here (the model condition): the MoE tables are scored with them (True, 6.0 us fitted:
    # engine/calibration/silicon/conditions.py, moe_table_constants); in serve they cost the serving subset's
    # held-out TPOT 10.4% -> 12.5% (its per-iteration overheads are fitted on the per-row form).
    moe_layer_latency_s: float | None = None
    # Grouped MoE GEMMs under the chip's power cap (gemm_power_j_per_flop, fitted on the dense GEMM tables)?
    # (False: the MoE tables reach ~2.9 PFLOP/s of fp8 on B200 where the dense GEMMs' cap allows ~2.0)
    moe_power_capped: bool = False
    # A grouped MoE GEMM's fixed device time in seconds, the same on every device (None: the device's
    # kernel_latency, an isolated dense GEMM's); the quantize kernel of unfused rows is added as for any GEMM.
    # Shipped None (the model condition); the MoE tables are scored with the grouped kernel's own fitted 6.0 us
    # (engine/calibration/silicon/conditions.py, MOE_TABLE_GEMM_LATENCY_S: Hopper's 7.25 us put the tables' one-to-
    # eight-token floors +9-13% high, while the serving runs' held-out TPOT goes 10.4% -> 12.5% with 6.375 us).
    moe_gemm_latency_s: float | None = None
    # Grouped GEMMs of 4-bit expert weights (aiconfigurator's nvfp4, w4a16_mxfp4 and w4a8_mxfp4_mxfp8 MoE tables), per
    # class moe_4bit.format_key ("w4a4", "w4a8", "w4a16" by the row's compute format, + "/native" on devices with
    # an fp4 matrix rate, "/promoted" without; the plain class where the suffixed one is absent): (weight-stream
    # efficiency, matrix efficiency, seconds per launch) x the device's achievable bandwidth and matrix rate, + the
    # grouped latency (engine/estimators/moe_4bit.py). Empty here (the model condition: 4-bit experts timed as any
    # grouped GEMM of their bytes and compute format); the MoE tables are scored with the fit
    # (engine/calibration/silicon/conditions.MOE_TABLE_4BIT_FORMATS, moe_4bit_fit.py, docs/accuracy.md).
    moe_4bit_formats: dict = field(default_factory=dict)

    # --- fused attention (engine/estimators/fused_attention.py; ATTENTION_OVERHEADS above says how fitted) ---
    # each attention kernel's device latency (prefill / decode; None: the device's kernel_latency): fixed seconds,
    # like the element-wise kernel classes' (the measured floors are alike on Hopper and Blackwell)
    attention_overheads: AttentionOverheads = ATTENTION_OVERHEADS
    attention_prefill_latency_s: float | None = 14.7e-6
    attention_decode_latency_s: float | None = 10.9e-6
    # on older tensor cores (no fp4 in the workbook) the decode floor as core cycles at the clock instead (A100's
    # and Hopper's tables: ~10.9 us at 1.41 GHz, ~8.6 us at 1.83 GHz, both ~15,500 cycles; None: the seconds above;
    # fitted 14,900 with the kernel-generation form)
    attention_decode_latency_cycles: float | None = 15720.0
    # the 8-bit matrix decode kernel's floor (fused_attention.fp8_matrix_decode: Hopper's fp8 caches, ~6 us at 1.83
    # GHz), core cycles at the clock (None: attention_decode_latency_cycles)
    attention_decode_fp8_latency_cycles: float | None = 10660.0
    # MLA's attention kernels (engine/estimators/mla_attention.py: their own values of the constants above and a decode
    # floor, fitted on the MLA tables); None: MLA kernels timed with the shared constants above, as MHA / GQA
    mla_attention: MlaAttention | None = SHIPPED_MLA


DEFAULT_CONSTANTS = RealisticConstants()


@dataclass(frozen=True, slots=True)
class DeviceRates:
    """The device numbers the method uses, with blanks filled by the defaults."""

    cores: int
    clock_hz: float
    bandwidth: float
    vector_flops_per_s: float
    matrix_fraction: float
    memory_fraction: float
    kernel_latency_s: float
    launch_overhead_s: float
    row_waves: bool = True     # row-wise kernels run one CTA per token in waves over the cores (SIMT devices)
    dynamic_power_w: float | None = None   # tdp_w - static_power_w (None: no tdp_w), for gemm_power_j_per_flop
    matrix_fp4: bool = False   # the matrix units take 4-bit floats (a fifth-generation tensor core: its decode kernels)
    matrix_fp8: bool = False   # the matrix units take 8-bit floats (the 8-bit decode kernel where they take no fp4)
    fp8_macs_per_s_per_core: float = 0.0   # their fp8 peak MAC/s per core (0: none): an 8-bit cache's prefill kernel
    softmax_rate_scale: float = 1.0   # a core's softmax exponentials per cycle over the baseline (flash_prefill.py)
    mla_one_core_decode: bool = False   # MLA decode runs the one-core kernel (mla_attention.runs_one_core_decode)

    @classmethod
    def of(cls, hw: Hardware) -> "DeviceRates":
        return cls(
            cores=hw.num_cores, clock_hz=hw.clock_hz, bandwidth=hw.memory_bandwidth_bytes_per_s,
            vector_flops_per_s=hw.vector_flops_per_s, matrix_fraction=hw.achievable_matrix_fraction or DEFAULT_MATRIX_FRACTION,
            memory_fraction=hw.achievable_memory_bandwidth_fraction or DEFAULT_MEMORY_FRACTION,
            kernel_latency_s=hw.kernel_latency_s if hw.kernel_latency_s is not None else DEFAULT_KERNEL_LATENCY_S,
            launch_overhead_s=hw.launch_overhead_s or 0.0,
            row_waves=str(hw.kind).strip().lower() in ROW_WAVE_KINDS,
            dynamic_power_w=hw.tdp_w - (hw.static_power_w or 0.0) if hw.tdp_w else None,
            matrix_fp4=hw.matrix_macs_per_cycle_per_core_fp4 is not None,
            matrix_fp8=hw.matrix_macs_per_cycle_per_core_fp8 is not None,
            fp8_macs_per_s_per_core=hw.clock_hz * (hw.matrix_macs_per_cycle_per_core_fp8 or 0.0),
            softmax_rate_scale=softmax_rate_scale(hw), mla_one_core_decode=runs_one_core_decode(hw),
        )


def decode_attention_latency_s(constants: RealisticConstants, rates: DeviceRates, head_dim, fp8_matrix=None):
    """The decode attention kernels' fixed time (per group of head dims `head_dim`): attention_decode_latency_cycles
    at the clock on a device without fp4 matrix units where it is set (head dims up to 256: not MLA's latent
    kernels), else attention_decode_latency_s (None: the device's kernel_latency); where `fp8_matrix` (per group:
    fused_attention.fp8_matrix_decode) is True and attention_decode_fp8_latency_cycles is set, that at the clock."""
    seconds = constants.attention_decode_latency_s
    if constants.attention_decode_latency_cycles is None or rates.matrix_fp4:
        return seconds
    seconds = rates.kernel_latency_s if seconds is None else seconds
    head_dim = head_dim if head_dim.__class__ is float else np.asarray(head_dim)     # a float: one group
    latency = where(head_dim <= 256, constants.attention_decode_latency_cycles / rates.clock_hz, seconds)
    if fp8_matrix is not None and constants.attention_decode_fp8_latency_cycles is not None:
        latency = where(fp8_matrix, constants.attention_decode_fp8_latency_cycles / rates.clock_hz, latency)
    return latency


@lru_cache(maxsize=64)
def device_rates(hardware: Hardware) -> DeviceRates:
    """DeviceRates.of(hardware), once per device (Hardware is frozen)."""
    return DeviceRates.of(hardware)


def named_rows(table, rows: np.ndarray, part: str) -> np.ndarray | None:
    """Of the KernelRows mask `rows`, which rows' names contain `part` (once per row group); None where no row does."""
    groups = table.row_groups
    named = np.array([part in name for name in groups.group_strings("name").tolist()], dtype=bool)
    return named[groups.inverse][rows] if any_true(named) else None


def moe_topk_latency_s(table, rows: np.ndarray) -> np.ndarray:
    """Per element-wise row of `rows`: the MoE_topk rows' selection, k passes of log2(E) reduction steps
    (the row's k and n) x moe_topk_step_cycles / clock (0 elsewhere)."""
    cycles = table.constants.moe_topk_step_cycles
    if not cycles:
        return np.zeros(int(np.count_nonzero(rows)))
    topk = named_rows(table, rows, "MoE_topk")
    if topk is None:                    # a dense model: np.where's 0.0 on every row
        return np.zeros(int(np.count_nonzero(rows)))
    out = table.out
    steps = out["k"][rows] * np.log2(np.maximum(out["n"][rows], 1.0))
    return np.where(topk, steps * cycles / table.rates.clock_hz, 0.0)


def moe_layer_latency_s(table, rows: np.ndarray) -> np.ndarray:
    """Per element-wise row of `rows`: moe_layer_latency_s on the MoE_combine rows (0 elsewhere)."""
    latency = table.constants.moe_layer_latency_s
    combine = named_rows(table, rows, "MoE_combine") if latency else None
    if combine is None:
        return np.zeros(int(np.count_nonzero(rows)))
    return np.where(combine, latency, 0.0)


def moe_combine_s(table, rows: np.ndarray) -> np.ndarray:
    """Per element-wise row of `rows` (a mask over the realistic method's KernelRows): the MoE token permutation
    charged to the MoE_combine rows, (their vector FLOPs x moe_combine_flop_cycles + tokens x hidden x
    moe_combine_token_cycles) / (cores x clock), a stream of scattered rows (0 elsewhere, and on devices without SIMT
    cores)."""
    cycles, token_cycles, rates = (table.constants.moe_combine_flop_cycles, table.constants.moe_combine_token_cycles,
                                   table.rates)
    if not (cycles or token_cycles) or not rates.row_waves:
        return np.zeros(int(np.count_nonzero(rows)))
    combine = named_rows(table, rows, "MoE_combine")
    if combine is None:                 # a dense model: np.where's 0.0 on every row
        return np.zeros(int(np.count_nonzero(rows)))
    out = table.out
    work = out["vector_flops"][rows] * cycles + out["m"][rows] * out["n"][rows] * token_cycles
    return np.where(combine, work / (rates.cores * rates.clock_hz), 0.0)
