"""The leave-one-device-out GEMM fit's grids and switches (engine/calibration/silicon/fit.py imports them; patch them
there, as fit.NAME: fit.py reads its own module's names)."""

from __future__ import annotations

import numpy as np

FIT_DTYPES = ("bf16", "fp8", "fp8_g128", "nvfp4")   # nvfp4: Blackwell only (fp4-rated matrix units; issue 12, h/nvfp4)
FRAMEWORKS = ("trtllm", "vllm", "sglang")
EFFICIENCY_GRID = np.round(np.arange(0.40, 1.40001, 0.01), 2)
EXTRA_LATENCY_GRID = np.round(np.arange(-6.0, 15.0001, 0.25), 2) * 1e-6   # negative: shorter than kernel_latency


# fitted in the clock-and-power form (RealisticConstants.gemm_latency_cycles ...)
CLOCK_DTYPES = ("bf16", "fp8", "fp8_g128", "nvfp4")
LATENCY_CYCLES_GRID = np.arange(0.0, 12000.001, 100.0)
JOULES_PER_FLOP_GRID = np.concatenate([[0.0], np.round(np.arange(0.30, 1.50001, 0.01), 2) * 1e-12])   # 0: no cap
# ... per table dtype where its FLOPs cost less energy than the grid's start (nvfp4: ~0.2 pJ per FLOP at the tables'
# largest GEMMs on every Blackwell, h/nvfp4, docs/accuracy.md); the other dtypes keep JOULES_PER_FLOP_GRID
JOULES_PER_FLOP_GRIDS = {"nvfp4": np.concatenate([[0.0], np.round(np.arange(0.10, 0.60001, 0.01), 2) * 1e-12])}
SPLIT_K_CYCLES_GRID = np.arange(0.0, 10000.001, 100.0)
# gemm_overlap_loss: 0 is the roofline's max; fp8_g128's fit reaches the grid's end
OVERLAP_LOSS_GRID = np.round(np.arange(0.0, 0.6001, 0.02), 2)
# fp8 GEMMs share bf16's latency cycles: our H100 runs a bare fp8 scaled_mm back to back at bf16's floor (3.5 us),
# so what the fp8 tables add beyond it is their activation-quantize kernel (fitted per framework)
SHARED_LATENCY_DTYPES = ("fp8", "fp8_g128", "nvfp4")   # nvfp4 (h/nvfp4): its floor above bf16's is its quantize kernel
# gemm_block_scale_flops: vector FLOPs per output value per scale group (block-scaled GEMMs on matrix units without
# native block scales: Hopper); 0: none, 2: one FMA
BLOCK_SCALE_FLOPS_GRID = np.round(np.arange(0.0, 8.0001, 0.25), 2)
# ... fitted in leave_one_device_out and fit_all, one value per framework (its block-scaled kernel: TensorRT-LLM's Hopper
# kernel runs large GEMMs at bf16's time, SGLang's at 0.73 of it; h/gemm10, docs/accuracy.md). One value for all
# frameworks was tried and not kept (h/gemm5: H200 17.2% -> 15.5%, B200 8.4% -> 8.9%)
FIT_BLOCK_SCALE = True
# gemm_k_step_cycles: core cycles each wave spends per TILE_K-deep step of its k loop beyond the matrix work
K_STEP_CYCLES_GRID = (0.0, 10.0, 20.0, 30.0)
# ... fitted for these dtypes in leave_one_device_out and fit_all (fp8_g128 since h/gemm10, with the per-framework
# promotion: without it, h/gemm7, the folds chose 20 where a Hopper was held out and made Hopper 1.3-3.2 points worse)
K_STEP_DTYPES = ("bf16", "fp8", "fp8_g128", "nvfp4")
# K_STEP_CYCLES_GRID per table dtype where its kernels walk k slower: nvfp4 at m <= 16 takes time linear in k and
# flat in n up to one wave (TensorRT-LLM ~3.4 core cycles per k value, FlashInfer's ~1.1 on B200; h/nvfp4)
K_STEP_CYCLES_GRIDS = {"nvfp4": tuple(float(c) for c in range(0, 161, 20))}
# the tables' kernels of these dtypes take no split-K (nvfp4: at m <= 16 TensorRT-LLM's time is flat in n up to one wave
# and linear in k, k = 51,200 taking 100 us on B200 at n = 128 to 12,288): its candidates are removed in the warm fit
NO_SPLIT_K_DTYPES = ("nvfp4",)
# gemm_epilogue_bytes_per_value the fit's warm groups use (RealisticConstants; 8: A100's fp32 tile through shared memory).
# 0: tried and not kept (h/gemm8, docs/accuracy.md: A100 bf16 9.05% -> 8.35% leave-one-device-out, GB200 fp8_g128 +1 point)
EPILOGUE_BYTES_PER_VALUE = 0.0
# gemm_tile_store_bytes_per_value the fit's warm groups use, per dtype on every device (RealisticConstants): 4, each bf16
# output value written to shared memory and read back by the tile's store (h/gemm9, docs/accuracy.md: 8 bytes made GB200
# and GB300 worse); fp8_g128 since h/gemm10, with its per-framework promotion and k-step cycles (without them, h/gemm9,
# 4 bytes made GB300 and H200 worse); bf16 not tried
TILE_STORE_BYTES_PER_VALUE = {"fp8": 4.0, "fp8_g128": 4.0}
# gemm_native_scale_cycles: the fixed cycles an fp8-family GEMM kernel adds on matrix units with native block scales
# (fp4-rated: Blackwell) beyond bf16's latency cycles (h/gemm9, docs/accuracy.md); fitted in every fold for these dtypes
NATIVE_SCALE_CYCLES_GRID = np.arange(0.0, 8000.001, 100.0)
NATIVE_SCALE_DTYPES = ("fp8", "fp8_g128")
FIT_NATIVE_SCALE = False    # ... in leave_one_device_out and fit_all? Tried and not kept (h/gemm9, docs/accuracy.md)
QUANTIZE_LATENCY_GRID = np.round(np.arange(0.0, 20.0001, 0.25), 2) * 1e-6   # a warm fp8 table's quantize kernel
# ... and the bytes it moves per activation value (3: read bf16, write e4m3 once; a dynamic per-tensor scale reads
# the activation once more for its amax: 5)
QUANTIZE_BYTES_GRID = np.round(np.arange(3.0, 16.0001, 0.5), 1)
# ... then refitted per framework and kind of matrix unit (fit_quantize.py, conditions.quantize_key; h/gemm11,
# docs/accuracy.md): "promoted" (units without native block scales, Hopper, get their own value; the native units keep
# the framework's value fitted on every device), "all" (both refitted: B300 fp8 7.70 -> 8.23%, tried and not kept),
# "" off
QUANTIZE_BY_SCALE_UNITS = "promoted"
# the tables' per-tensor fp8 kernels at m > LARGE_M_ROWS on matrix units without native block scales (Hopper): the
# tiles a framework's kernel takes (fit_tiles.py; h/gemm12, docs/accuracy.md): "" the model's free search, "tile_m"
# tiles of >= LARGE_M_ROWS rows without split-K, "square" the LARGE_M_ROWS x LARGE_M_ROWS tile alone without split-K;
# chosen per framework inside each fold (leave_one_device_out) on the training devices' rows of those units
LARGE_M_TILE_RULES = ("", "tile_m", "square")
LARGE_M_ROWS = 128
LARGE_M_TILE_DTYPES = ("fp8", "fp8_g128")   # fp8_g128 since h/gemm13 (TensorRT-LLM's and SGLang's block-scaled kernels)
FIT_LARGE_M_TILES = True
# ... a framework with a vector-unit promotion (fp8_g128 on Hopper, BLOCK_SCALE_FLOPS_GRID) takes each rule but the free
# search with its promotion refitted (h/gemm13, docs/accuracy.md: without it the rule made H100's fp8_g128 worse)
RULE_REFITS_PROMOTION = True
LEAST_N_K = 128            # layer-shaped GEMMs only: n, k >= 128 (the tables sweep n, k down to 32)
EXCLUDED = {("vllm", "fp8_g128")}   # vLLM 0.24.0's block-scaled fp8 table: even 32 x 32 x 32 takes 55-500 us
