"""The timing condition of AIConfigurator's measured GEMM tables, as RealisticConstants (gemm_condition.py).

Its collector (collect_gemm.py) times min(5, ceil(L2 / weight bytes)) weight copies back to back in one CUDA graph:
the "warm" condition. Its fp8 tables also time the framework's activation-quantize kernel in every call; its fixed
time differs by framework (TensorRT-LLM's floor is ~12.5 us where vLLM's and SGLang's are ~5-6 us and bf16's
~2-3 us on the same GPU), so it is a property of the table, fitted per framework and dtype
(engine/calibration/silicon/fit.py, fit_dtype_clock_quantize), not of the device.
"""

from __future__ import annotations

from dataclasses import replace

from engine.estimators.realistic_constants import DEFAULT_CONSTANTS
from engine.estimators.moe_4bit import FRAMEWORK_FORMATS

# {framework: {dtype: the activation-quantize kernel's fixed time, s}}, fitted on all devices' tables with the shipped
# clock-and-power form (fit.fit_all; leave-one-device-out folds agree within 0.5 us, TensorRT-LLM fp8 within 1.25)
TABLE_QUANTIZE_LATENCY_S: dict = {"trtllm": {"fp8": 11.0e-6, "fp8_g128": 3.25e-6, "nvfp4": 6.0e-6},
                                  "vllm": {"fp8": 3.75e-6, "nvfp4": 4.5e-6},
                                  "sglang": {"fp8": 3.25e-6, "fp8_g128": 3.75e-6, "nvfp4": 2.0e-6}}


# {framework: {dtype: the quantize kernel's bytes per activation value at the achievable bandwidth}} (absent: 3, a bf16
# read and an e4m3 write), fitted alongside (fit.QUANTIZE_BYTES_GRID). More than 3 where the scale is dynamic (an amax
# pass reads the activation once more: 5) or the kernel streams below the achievable bandwidth (vLLM's per-tensor
# quantize: ~10.5, i.e. its 5 bytes at ~50% of it). Fitted with the latencies above (fit.fit_all, h/gemm5; the
# leave-one-device-out folds, power cap free: vLLM 11.5-12, TensorRT-LLM 5.5-6.5, SGLang 5-6.5)
TABLE_QUANTIZE_BYTES_PER_VALUE: dict = {"trtllm": {"fp8": 4.5, "fp8_g128": 3.5, "nvfp4": 4.0},
                                        "vllm": {"fp8": 10.5, "nvfp4": 3.0}, "sglang": {"fp8": 4.5, "nvfp4": 4.0}}

# nvfp4 x nvfp4 GEMMs on the tables (Blackwell only; their rows carry the compute format, NVFP4_ROW_DTYPE), fitted on
# all four fp4-rated devices (fit.fit_dtype_clock_block_scaled, 600 rows per device and framework, the latency held at
# bf16's shipped 4,500 cycles, fit.SHARED_LATENCY_DTYPES; h/nvfp4, docs/accuracy.md): the clock-and-power form's
# efficiency, latency cycles, power cap, split-K cycles (none: the tables' kernels take no split-K,
# fit_grids.NO_SPLIT_K_DTYPES), overlap loss, and the k loop's cycles per framework (fit_nvfp4.py). The tables'
# condition only (table_constants adds them), but the power cap, shipped in RealisticConstants for `estimate` and
# every backend since h/fp4all (serving LOSO within the targets at main 9241066; it was over them at session 15's
# main), and SGLang's quantize latency in serve (BackendProfile.fp4_quantize_latency_s, h/fp4ship). TensorRT-LLM's
# and vLLM's quantize kernels in serve, and one for `estimate`, put serving's p90s over the targets (docs/accuracy.md).
NVFP4_ROW_DTYPE = "fp4"
TABLE_NVFP4_CLOCK = {"efficiency": 1.36, "latency_cycles": 4500.0, "power_j_per_flop": 0.14e-12,
                     "split_k_cycles": float("inf"), "overlap_loss": 0.58}   # inf: no split-K candidate is taken
TABLE_NVFP4_K_STEP_CYCLES = {"trtllm": 40.0, "vllm": 20.0, "sglang": 20.0}


def quantize_key(framework: str, native_scales: bool) -> str:
    """The key of a warm fp8 table's activation-quantize constants per kind of matrix unit (fit_quantize.py, h/gemm11):
    "<framework>/native" on matrix units with native block scales (gemm_condition.native_block_scales: Blackwell),
    "<framework>/promoted" on the others (Hopper). Constants keyed by framework alone apply where the key is absent."""
    return f"{framework}/{'native' if native_scales else 'promoted'}"


def quantize_latency_of(dtype: str) -> dict:
    """{framework: s} of one dtype's tables."""
    return {framework: values[dtype] for framework, values in TABLE_QUANTIZE_LATENCY_S.items() if dtype in values}


def quantize_bytes_of(dtype: str) -> dict:
    """{framework: bytes per activation value} of one dtype's tables (absent: QUANTIZE_BYTES_PER_VALUE)."""
    return {framework: values[dtype] for framework, values in TABLE_QUANTIZE_BYTES_PER_VALUE.items() if dtype in values}


def shipped_clock_of(dtype: str) -> tuple | None:
    """The shipped clock-and-power constants of `dtype` (None: the additive form is shipped; nvfp4: the tables' own,
    TABLE_NVFP4_CLOCK, with the k-step cycles per framework)."""
    c = DEFAULT_CONSTANTS
    if dtype == "nvfp4":
        t = TABLE_NVFP4_CLOCK
        power = c.gemm_power_j_per_flop.get(NVFP4_ROW_DTYPE, t["power_j_per_flop"])    # a cap shipped for fp4 wins
        return (t["efficiency"], t["latency_cycles"], power, t["split_k_cycles"], t["overlap_loss"], 0.0,
                dict(TABLE_NVFP4_K_STEP_CYCLES))
    if dtype not in c.gemm_latency_cycles:
        return None
    return (c.gemm_matrix_efficiency.get(dtype, 1.0), c.gemm_latency_cycles[dtype],
            c.gemm_power_j_per_flop.get(dtype, 0.0), c.gemm_split_k_cycles.get(dtype, 0.0),
            c.gemm_overlap_loss.get(dtype, 0.0), c.gemm_block_scale_flops.get(dtype, 0.0),
            c.gemm_k_step_cycles.get(dtype, 0.0))


def table_constants(framework: str, base=None):
    """`base` (default: the shipped constants) under the tables' condition: warm, with `framework`'s
    activation-quantize latencies and bytes per value, and nvfp4's constants where `base` has none for its rows
    (with_table_nvfp4)."""
    return with_table_nvfp4(replace(base or DEFAULT_CONSTANTS, gemm_condition="warm",
                                    gemm_quantize_latency_s=_row_keys(TABLE_QUANTIZE_LATENCY_S.get(framework, {})),
                                    gemm_quantize_bytes_per_value=_row_keys(
                                        TABLE_QUANTIZE_BYTES_PER_VALUE.get(framework, {}))), framework)


def _row_keys(values: dict) -> dict:
    """{dtype: value} with nvfp4 keyed by its GEMM rows' dtype (NVFP4_ROW_DTYPE)."""
    return {NVFP4_ROW_DTYPE if d == "nvfp4" else d: v for d, v in values.items()}


def with_table_nvfp4(constants, framework: str):
    """`constants` with TABLE_NVFP4_CLOCK and `framework`'s TABLE_NVFP4_K_STEP_CYCLES for nvfp4's GEMM rows, unless
    they have an efficiency or latency cycles of their own for them (then unchanged)."""
    key = NVFP4_ROW_DTYPE
    if key in constants.gemm_matrix_efficiency or key in constants.gemm_latency_cycles:
        return constants
    t = TABLE_NVFP4_CLOCK
    extra = {"gemm_matrix_efficiency": t["efficiency"], "gemm_latency_cycles": t["latency_cycles"],
             "gemm_power_j_per_flop": t["power_j_per_flop"], "gemm_split_k_cycles": t["split_k_cycles"],
             "gemm_overlap_loss": t["overlap_loss"],
             "gemm_k_step_cycles": TABLE_NVFP4_K_STEP_CYCLES.get(framework, 0.0)}
    return replace(constants, **{name: {key: value, **getattr(constants, name)} for name, value in extra.items()
                                 if value})     # an entry `constants` has (the shipped power cap) is kept



# The MoE tables' condition (collect_moe.py: the MoE op called repeatedly, no dense GEMM between): a grouped GEMM's
# fixed time is the grouped kernel's own, fitted leave-one-device-out on the tables (engine/calibration/silicon/
# moe_fit.py: 6.0 us, the same on every device), not the device's kernel_latency (an isolated dense GEMM's, which
# estimate / serve keep: on the serving runs the grouped latency costs held-out TPOT 10.4% -> 12.5%, docs/accuracy.md).
MOE_TABLE_GEMM_LATENCY_S = 6.0e-6
# ... and the floor structure of its kernels: up and gate in one launch, the layer's unlisted permute / finalize
# launches a fixed 6.0 us (fitted the same way; RealisticConstants.moe_fused_gate_launch, moe_layer_latency_s)
MOE_TABLE_LAYER_LATENCY_S = 6.0e-6


# ... and the grouped GEMMs of 4-bit expert weights, per class of engine/estimators/moe_4bit.py: (weight-stream
# efficiency, matrix efficiency, seconds per launch), TensorRT-LLM's (moe_4bit.FRAMEWORK_FORMATS["trtllm"]: fitted on
# its tables' nvfp4 (w4a4), w4a8_mxfp4_mxfp8 (w4a8) and w4a16_mxfp4 (w4a16) rows on every device that has them;
# benchmarks/moe_accuracy.py prints the leave-one-device-out folds per framework). estimate does not use them
# (RealisticConstants.moe_4bit_formats empty); serve uses a backend's own where its profile sets moe_4bit_classes
# (engine/serving/backend_kernels.py; docs/accuracy.md, "MoE grouped GEMMs in 4-bit formats, fitted").
MOE_TABLE_4BIT_FORMATS = dict(FRAMEWORK_FORMATS["trtllm"])


def moe_table_constants(base=None, four_bit: bool = True):
    """`base` (default: the shipped constants) under the MoE tables' condition: where `base` leaves them unset
    (None), grouped GEMMs at MOE_TABLE_GEMM_LATENCY_S, up and gate in one launch, MOE_TABLE_LAYER_LATENCY_S per
    layer; with `four_bit`, where `base` has no 4-bit classes (moe_4bit_formats empty), MOE_TABLE_4BIT_FORMATS."""
    base = base or DEFAULT_CONSTANTS
    table = dict(moe_gemm_latency_s=MOE_TABLE_GEMM_LATENCY_S, moe_fused_gate_launch=True,
                 moe_layer_latency_s=MOE_TABLE_LAYER_LATENCY_S)
    unset = {name: value for name, value in table.items() if getattr(base, name) is None}
    if four_bit and not base.moe_4bit_formats:
        unset["moe_4bit_formats"] = dict(MOE_TABLE_4BIT_FORMATS)
    return replace(base, **unset) if unset else base
