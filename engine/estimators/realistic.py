"""Realistic: discrete tiles, tile and wave quantization, fused attention, achievable rates, overheads.

Per kernel the method builds a chain of times, each adding one effect to the one before, so the
gap between the ideal roofline and the realistic time splits into named parts:

    ideal_time_s       the roofline: max(FLOP / peak, bytes / peak bandwidth)
    + gap_tile_quantization_s   GEMM tiles padded to whole tiles (flash-attention tiles, 16-row fragments)
    + gap_wave_quantization_s   whole waves of tiles over the cores (the largest causal attention
                                tile), split-K partial sums; rows of row-wise element-wise kernels
                                (one CTA per token) in waves over the cores
    + gap_efficiency_s          achievable fractions of peak (per device, `achievable_*_fraction`),
                                element-wise kernels' own bandwidth efficiency
    + gap_overhead_s            device kernel latency (`kernel_latency`) and, in eager mode, the host
                                launch (`launch_overhead`): time_s = max(kernel_time_s, launch)
    = time_s

GEMMs choose their tile and split-K among the device's tiles (engine/estimators/tiling.py); a
GEMV (one row per GEMM) streams its weights on the vector units. Attention groups run as one
fused kernel (engine/estimators/fused_attention.py). Element-wise kernels stream at the device's
achievable bandwidth times their kernel class's efficiency, after a fixed time per class; row-wise
ones (norms, activations: one CTA per token) also run their tokens in waves over the cores.

`launch`: "eager" (every kernel is launched by the host: a kernel shorter than the launch overhead
waits for the host) or "graph" (CUDA-graph capture: the host launches one graph per step, so no
per-kernel host cost; the device latency stays). The method `realistic-graph` is the graph mode.

Calibrated constants: per device in specs.xlsx (achievable fractions, kernel latency; see
docs/accuracy.md for the fit); per kernel class below (fitted on the same data: norm, activation and
residual rows of vidur_llama2_ops.csv). Where a device leaves them blank, the DEFAULT_* values apply.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.hardware.dtypes import bytes_per_value, compute_dtype
from engine.estimators.fused_attention import AttentionOverheads, attention_groups, fused_times, is_scores_row
from engine.estimators.roofline import estimate_roofline
from engine.estimators.row_groups import RowGroups
from engine.estimators.tiling import GemmRates, Tiling, choose_tilings
from engine.hardware.device import Hardware

# Defaults for devices without calibrated values: the mean of the A100-80GB-SXM and H100-SXM fits
# (0.72 and 0.70; 0.73 and 0.90; 5.5 us and 7.25 us; docs/accuracy.md).
DEFAULT_MATRIX_FRACTION = 0.71
DEFAULT_MEMORY_FRACTION = 0.815
DEFAULT_KERNEL_LATENCY_S = 6.375e-6
LAUNCH_MODES = ("eager", "graph")


@dataclass(frozen=True)
class KernelClass:
    """How an element-wise kernel class runs, relative to the device's GEMM operand streaming.

    kernel time = max(floor_s, latency_s + max(bytes / bandwidth, row waves))
    bandwidth = min(1, bandwidth_efficiency x achievable_memory_bandwidth_fraction) x peak.
    Row-wise kernels (row_bytes_per_cycle set: one CTA per token, as vLLM's norm and activation
    kernels) run their rows in waves of ROW_CTAS_PER_CORE x cores, each CTA streaming its row at
    row_bytes_per_cycle x clock: a few tokens cannot use the whole memory bandwidth. The fixed
    times are seconds (alike on A100 and H100), unlike a GEMM's device `kernel_latency`.
    """

    bandwidth_efficiency: float
    latency_s: float
    floor_s: float = 0.0
    row_bytes_per_cycle: float | None = None


ROW_CTAS_PER_CORE = 2   # 1024-thread CTAs, 2048 resident threads per SM (A100, H100)
# Devices whose parallel units are SIMT cores that run a row-wise kernel as one CTA per token (GPUs, and the
# hypothetical GPU-like parts of the workbook). A TPU or NPU core streams a whole tensor through its vector
# unit from bulk DMA: no per-token CTAs, so its element-wise kernels stream at the achievable bandwidth.
ROW_WAVE_KINDS = ("gpu", "hypothetical")


@dataclass(frozen=True)
class RealisticConstants:
    """Software constants of the realistic method (fitted where data exists, see docs/accuracy.md)."""

    kernel_classes: dict = field(default_factory=lambda: {
        "norm": KernelClass(0.49, 0.875e-6, 2.125e-6, 3.62),   # fitted: RMSNorm rows (reads each row twice)
        "activation": KernelClass(0.66, 1.25e-6, 1.5e-6, 5.88),  # fitted: SwiGLU rows
        "residual": KernelClass(1.20, 0.0, 2.625e-6),            # fitted: residual-add rows (faster than GEMM operands)
    })
    # element-wise ops without measurements borrow a measured class (assumption, documented)
    class_of_op: dict = field(default_factory=lambda: {
        "norm": "norm", "softmax": "norm", "activation": "activation", "rotary": "activation",
        "residual": "residual", "kv_store": "residual", "embedding": "residual",
    })
    # fused attention's matrix rate relative to a GEMM's (assumption: FlashAttention-2 reaches
    # 50-73% of peak on A100 where cuBLAS GEMMs reach ~75-80%; not calibrated, no attention data)
    attention_matrix_efficiency: float = 0.76      # fitted with the attention block below (was 0.85, assumed)
    gemv_max_rows: int = 1
    # GEMMs per dtype (an entry for the dtype itself, e.g. fp8_g128, else for its compute format, e.g. fp8):
    # the achievable matrix rate is the device's achievable_matrix_fraction x gemm_matrix_efficiency (1 where
    # absent), and each GEMM adds gemm_format_latency_s to the device's kernel_latency (0 where absent; the sum
    # at least 0). Fitted on NVIDIA
    # AIConfigurator's measured GEMM tables, leave-one-device-out (engine/calibration/silicon/fit.py, docs/accuracy.md).
    # Shipped: fp8 (per-tensor scaled) and fp8_g128 (block-scaled) fitted on H100-SXM, H200-SXM and B200, three
    # frameworks pooled; bf16 left at 1 / 0 (its fit conflicts with the Vidur-fitted kernel_latency, see the doc).
    gemm_matrix_efficiency: dict = field(default_factory=lambda: {"fp8": 0.69, "fp8_g128": 0.78})
    gemm_format_latency_s: dict = field(default_factory=lambda: {"fp8": 2.25e-6, "fp8_g128": 0.0})
    # MoE grouped GEMMs (rows named Expert_*: one GEMM per active expert in one launch): their matrix rate and
    # weight/activation stream relative to a plain GEMM's (x the format's efficiency above; 1: alike). Fitted on
    # AIConfigurator's MoE tables (bf16, fp8, fp8 block-scaled; 6 devices, 600 rows each), leave-one-device-out:
    # engine/calibration/silicon/moe_fit.py, benchmarks/moe_accuracy.py (the matrix efficiency is not determined by them: 1)
    moe_matrix_efficiency: float = 1.0
    moe_bandwidth_efficiency: float = 0.85

    # --- fused attention (engine/estimators/fused_attention.py; fitted on AIConfigurator's attention tables,
    # leave-one-device-out: engine/calibration/silicon/attention_fit.py, benchmarks/attention_accuracy.py) ---
    # the attention kernels' fixed work in core cycles and the decode KV stream's efficiency (AttentionOverheads);
    # each attention kernel's device latency (prefill / decode; None: the device's kernel_latency): fixed seconds,
    # like the element-wise kernel classes' (the measured floors are alike on Hopper and Blackwell)
    # Shipped: fitted on A100-80GB-SXM, H100-SXM, H200-SXM, B200, GB200, B300 and GB300 (trtllm tables, 2,000 rows each)
    attention_overheads: AttentionOverheads = field(default_factory=lambda: AttentionOverheads(
        prefill_tile_cycles=91.0, prefill_cta_cycles=8500.0, decode_cta_cycles=2550.0,
        decode_bandwidth_efficiency=1.37))
    attention_prefill_latency_s: float | None = 14.3e-6
    attention_decode_latency_s: float | None = 11.4e-6


DEFAULT_CONSTANTS = RealisticConstants()


@dataclass(frozen=True)
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

    @classmethod
    def of(cls, hw: Hardware) -> "DeviceRates":
        return cls(
            cores=hw.num_cores, clock_hz=hw.clock_hz, bandwidth=hw.memory_bandwidth_bytes_per_s,
            vector_flops_per_s=hw.vector_flops_per_s,
            matrix_fraction=hw.achievable_matrix_fraction or DEFAULT_MATRIX_FRACTION,
            memory_fraction=hw.achievable_memory_bandwidth_fraction or DEFAULT_MEMORY_FRACTION,
            kernel_latency_s=hw.kernel_latency_s if hw.kernel_latency_s is not None else DEFAULT_KERNEL_LATENCY_S,
            launch_overhead_s=hw.launch_overhead_s or 0.0,
            row_waves=str(hw.kind).strip().lower() in ROW_WAVE_KINDS,
        )


GAP_COLUMNS = ("gap_tile_quantization_s", "gap_wave_quantization_s", "gap_efficiency_s", "gap_overhead_s")


def estimate_realistic(table, hardware: Hardware, scenario=None, launch: str = "eager",
                       constants: RealisticConstants = DEFAULT_CONSTANTS) -> dict[str, np.ndarray]:
    """The roofline columns plus the realistic time, its ideal, the gap breakdown and the tiling."""
    if launch not in LAUNCH_MODES:
        raise ValueError(f"launch must be one of {', '.join(LAUNCH_MODES)}, got {launch!r}")
    out = estimate_roofline(table, hardware)
    rates = DeviceRates.of(hardware)
    rows = len(out["time_s"])
    ideal = np.asarray(out["time_s"], dtype=float)          # read only (the roofline's own array)
    chain = {key: ideal.copy() for key in ("t1", "t2", "t3")}
    compute, memory = out["compute_time_s"].astype(float), out["memory_time_s"].astype(float)   # copies
    latency = np.full(rows, rates.kernel_latency_s)
    floor = np.zeros(rows)
    for column in ("tile_m", "tile_n", "split_k", "tiles", "waves"):
        out[column] = np.full(rows, np.nan)

    row_groups = RowGroups(out)
    op = row_groups.strings("op")
    per_core_macs = row_groups.map("dtype", hardware.matrix_macs_per_s) / rates.cores
    value_bytes = row_groups.map("dtype", bytes_per_value)
    fused = attention_groups(out, row_groups)
    is_gemm = (op == "gemm") & (fused < 0)
    _time_gemms(out, is_gemm, rates, hardware, per_core_macs, value_bytes, constants, chain, compute, memory, latency)
    kind = row_groups.map("op", lambda o: constants.class_of_op.get(str(o), "residual"))
    _time_elementwise(out, (~is_gemm) & (fused < 0), kind, rates, constants, chain, compute, memory, latency, floor)

    host = rates.launch_overhead_s if launch == "eager" else 0.0
    kernel_time = np.maximum(latency + chain["t3"], floor)
    time = np.maximum(kernel_time, host)
    if (fused >= 0).any():
        time, kernel_time = _time_fused(out, fused, row_groups, rates, per_core_macs, constants, host, ideal,
                                        chain, compute, memory, time, kernel_time)
    out["ideal_time_s"] = ideal
    out["kernel_time_s"] = kernel_time
    out["gap_tile_quantization_s"] = chain["t1"] - ideal
    out["gap_wave_quantization_s"] = chain["t2"] - chain["t1"]
    out["gap_efficiency_s"] = chain["t3"] - chain["t2"]
    out["gap_overhead_s"] = time - chain["t3"]
    out["compute_time_s"], out["memory_time_s"], out["time_s"] = compute, memory, time
    out["fused_group"] = fused
    out["launches"] = launches_per_row(fused)
    overhead = out["gap_overhead_s"] > np.maximum(compute, memory)
    out["bound"] = np.where(overhead, "overhead", np.where(compute > memory, "compute", "memory")).astype(object)
    return out


def launches_per_row(fused: np.ndarray) -> np.ndarray:
    """1 per kernel launch: a fused attention's rows launch once (on its first row), others once each."""
    launches = np.ones(len(fused))
    members = np.flatnonzero(fused >= 0)
    if len(members):
        _, first = np.unique(fused[members], return_index=True)
        launches[members] = 0.0
        launches[members[first]] = 1.0
    return launches


def _gemm_format_constants(out, rows, constants) -> tuple[np.ndarray, np.ndarray]:
    """Per GEMM row: the matrix efficiency of its compute format and the extra latency (see RealisticConstants)."""
    if not (constants.gemm_matrix_efficiency or constants.gemm_format_latency_s):
        return np.ones(rows.sum()), np.zeros(rows.sum())
    dtypes, inverse = np.unique(np.asarray(out["dtype"])[rows].astype(str), return_inverse=True)
    def lookup(table: dict, dtype: str, default: float) -> float:     # the dtype's own entry, else its format's
        return table.get(dtype, table.get(compute_dtype(dtype), default))
    efficiency = np.array([lookup(constants.gemm_matrix_efficiency, d, 1.0) for d in dtypes], dtype=float)
    extra = np.array([lookup(constants.gemm_format_latency_s, d, 0.0) for d in dtypes], dtype=float)
    return efficiency[inverse.reshape(-1)], extra[inverse.reshape(-1)]


def _tilings_by_efficiency(m, n, k, batch, nbytes, hardware, rates: DeviceRates, per_core, value_bytes, efficiency,
                           memory_efficiency=None):
    """choose_tilings once per distinct (matrix, memory) efficiency pair (usually one or two), merged back per row."""
    parts = {}
    memory_efficiency = np.ones_like(efficiency) if memory_efficiency is None else memory_efficiency
    if (efficiency == efficiency[0]).all() and (memory_efficiency == memory_efficiency[0]).all():
        pairs, inverse = [(efficiency[0], memory_efficiency[0])], np.zeros(efficiency.size, dtype=np.intp)
    else:
        pairs, inverse = np.unique(np.stack([efficiency, memory_efficiency], axis=1), axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
    for number, (value, memory_value) in enumerate(pairs):
        mine = inverse == number
        gemm_rates = GemmRates(per_core[mine], value_bytes[mine], rates.matrix_fraction * value, rates.bandwidth,
                               min(1.0, rates.memory_fraction * memory_value), rates.kernel_latency_s)
        parts[number] = (mine, choose_tilings(m[mine], n[mine], k[mine], batch[mine], nbytes[mine], hardware,
                                             gemm_rates))
    if len(parts) == 1:
        return next(iter(parts.values()))[1]
    merged = {}
    for name in Tiling.__dataclass_fields__:
        column = np.empty(m.size)
        for mine, tiling in parts.values():
            column[mine] = getattr(tiling, name)
        merged[name] = column
    return Tiling(**merged)


def is_expert_gemm(names) -> np.ndarray:
    """MoE grouped-GEMM rows (engine/decomposition/moe.py: Expert_up, Expert_gate, Expert_down, any d/p prefix)."""
    return np.char.find(np.asarray(names).astype(str), "Expert_") >= 0


def _time_gemms(out, rows, rates: DeviceRates, hardware, per_core_macs, value_bytes, constants, chain, compute,
                memory, latency) -> None:
    if not rows.any():
        return
    m, n, k, batch = (out[c][rows].astype(float) for c in ("m", "n", "k", "batch"))
    nbytes = out["bytes"][rows].astype(float)
    efficiency, extra_latency = _gemm_format_constants(out, rows, constants)
    memory_efficiency = np.ones_like(efficiency)
    if constants.moe_matrix_efficiency != 1.0 or constants.moe_bandwidth_efficiency != 1.0:
        grouped = is_expert_gemm(np.asarray(out["name"])[rows])
        efficiency = np.where(grouped, efficiency * constants.moe_matrix_efficiency, efficiency)
        memory_efficiency = np.where(grouped, constants.moe_bandwidth_efficiency, 1.0)
    tiling = _tilings_by_efficiency(m, n, k, batch, nbytes, hardware, rates, per_core_macs[rows], value_bytes[rows],
                                    efficiency, memory_efficiency)
    latency[rows] = np.maximum(latency[rows] + extra_latency, 0.0)
    ideal = chain["t1"][rows]
    t1 = np.maximum(ideal, np.maximum(tiling.padded_compute_s, nbytes / rates.bandwidth))
    t2 = np.maximum(t1, np.maximum(tiling.wave_compute_s, tiling.peak_memory_s))
    t3 = np.maximum(t2, np.maximum(tiling.compute_s, tiling.memory_s))
    part_compute, part_memory = tiling.compute_s, tiling.memory_s
    tiles = {c: getattr(tiling, c) for c in ("tile_m", "tile_n", "split_k", "tiles", "waves")}
    # GEMV: one row per GEMM streams the weights on the vector units, no tiles
    gemv = m * batch <= constants.gemv_max_rows
    if gemv.any():
        vector_s = out["matrix_flops"][rows].astype(float) / rates.vector_flops_per_s
        stream_s = nbytes / (rates.bandwidth * rates.memory_fraction)
        t1, t2 = np.where(gemv, ideal, t1), np.where(gemv, ideal, t2)
        t3 = np.where(gemv, np.maximum(ideal, np.maximum(vector_s, stream_s)), t3)
        part_compute, part_memory = np.where(gemv, vector_s, part_compute), np.where(gemv, stream_s, part_memory)
        tiles = {c: np.where(gemv, np.nan, v) for c, v in tiles.items()}
    chain["t1"][rows], chain["t2"][rows], chain["t3"][rows] = t1, t2, t3
    compute[rows], memory[rows] = part_compute, part_memory
    for column, values in tiles.items():
        out[column][rows] = values


def _time_elementwise(out, rows, kind, rates: DeviceRates, constants, chain, compute, memory, latency,
                      floor) -> None:
    """Streaming kernels (norms, activations, residuals, rotary, KV store, embedding, any other)."""
    if not rows.any():
        return
    classes = constants.kernel_classes
    efficiency, fixed, least = np.ones(rows.sum()), np.zeros(rows.sum()), np.zeros(rows.sum())
    row_rate = np.full(rows.sum(), np.inf)          # bytes per second of one row's CTA (inf: not row-wise)
    for name, kernel_class in classes.items():
        mine = kind[rows] == name
        efficiency[mine], fixed[mine] = kernel_class.bandwidth_efficiency, kernel_class.latency_s
        least[mine] = kernel_class.floor_s
        if kernel_class.row_bytes_per_cycle and rates.row_waves:
            row_rate[mine] = kernel_class.row_bytes_per_cycle * rates.clock_hz
    nbytes = out["bytes"][rows].astype(float)
    tokens = np.maximum(out["m"][rows].astype(float), 1.0)
    row_waves = np.ceil(tokens / (rates.cores * ROW_CTAS_PER_CORE))
    row_s = row_waves * (nbytes / tokens) / row_rate
    fraction = np.minimum(1.0, rates.memory_fraction * efficiency)
    stream_s = nbytes / (rates.bandwidth * fraction)
    t2 = np.maximum(chain["t2"][rows], row_s)
    chain["t2"][rows] = t2
    chain["t3"][rows] = np.maximum(t2, np.maximum(compute[rows], stream_s))
    memory[rows] = np.maximum(stream_s, row_s)
    latency[rows] = fixed
    floor[rows] = least


def fused_group_inputs(out, fused, row_groups: RowGroups, rates: DeviceRates, per_core_macs, constants) -> dict:
    """Per attention group: fused_times' arguments (`args`, `rates`, `decode`) and its rows' ideal sum."""
    rows = np.flatnonzero(fused >= 0)
    group = fused[rows]
    groups = int(group.max()) + 1
    total = lambda column: np.bincount(group, weights=out[column][rows].astype(float), minlength=groups)  # noqa: E731
    # shape, dtype and kind from each group's Q*gK row (the first matrix row if it has none)
    of_row = row_groups.inverse[rows]     # string tests once per group, then per row
    is_scores = is_scores_row(row_groups.group_strings("name"))[of_row]
    is_matrix = (row_groups.group_strings("op") == "attention")[of_row]
    order = np.lexsort((~is_scores, ~is_matrix, group))
    lead = rows[order][np.unique(group[order], return_index=True)[1]]
    m, k, n, batch = (np.maximum(out[c][lead].astype(float), 1.0) for c in ("m", "k", "n", "batch"))
    fused_rates = {
        "macs_per_s_per_core": per_core_macs[lead], "cores": rates.cores, "clock_hz": rates.clock_hz,
        "vector_flops_per_s": rates.vector_flops_per_s, "bandwidth": rates.bandwidth,
        "matrix_fraction": rates.matrix_fraction * constants.attention_matrix_efficiency,
        "memory_fraction": rates.memory_fraction,
    }
    decode = row_groups.group_strings("type")[row_groups.inverse[lead]] == "Va_Mqa"
    score_macs = np.bincount(group, weights=np.where(is_scores, out["macs"][rows].astype(float), 0.0),
                             minlength=groups)
    score_macs = np.where(score_macs > 0, score_macs, total("macs") / 2.0)   # a group without a Q*gK row
    window = out["attention_window"][lead].astype(float) if "attention_window" in out else None
    return {"args": (decode, m, k, n, batch, total("macs"), total("vector_flops"), total("bytes")),
            "rates": fused_rates, "score_macs": score_macs, "window": window, "decode": decode, "lead": lead,
            "ideal_sum": np.bincount(group, weights=out["time_s"][rows].astype(float), minlength=groups)}


def fused_group_kernel_s(inputs: dict, rates: DeviceRates, constants) -> tuple[dict, np.ndarray]:
    """fused_times of each group and its device time: latency + t3 + the rows' ideal sum over the fused t0."""
    overheads = constants.attention_overheads
    if not rates.row_waves:     # tile and CTA cycles are a SIMT GPU's; a TPU core streams the whole attention
        overheads = AttentionOverheads(decode_bandwidth_efficiency=overheads.decode_bandwidth_efficiency)
    times = fused_times(*inputs["args"], inputs["rates"], inputs["score_macs"], inputs["window"], overheads)
    prefill, decode = constants.attention_prefill_latency_s, constants.attention_decode_latency_s
    latency = np.where(inputs["decode"], rates.kernel_latency_s if decode is None else decode,
                       rates.kernel_latency_s if prefill is None else prefill)
    offset = np.maximum(inputs["ideal_sum"] - times["t0"], 0.0)
    return times, latency + times["t3"] + offset


def _time_fused(out, fused, row_groups: RowGroups, rates: DeviceRates, per_core_macs, constants, host, ideal,
                chain, compute, memory, time, kernel_time):
    """Time each attention group once and charge it to its rows by their ideal times."""
    rows = np.flatnonzero(fused >= 0)
    group = fused[rows]
    inputs = fused_group_inputs(out, fused, row_groups, rates, per_core_macs, constants)
    ideal_sum = inputs["ideal_sum"]
    times, group_kernel = fused_group_kernel_s(inputs, rates, constants)
    offset = np.maximum(ideal_sum - times["t0"], 0.0)
    group_time = np.maximum(group_kernel, host)
    gaps = np.stack([times["t1"] - times["t0"], times["t2"] - times["t1"], times["t3"] - times["t2"],
                     group_time - times["t3"] - offset])
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(ideal_sum[group] > 0, ideal[rows] / ideal_sum[group], 1.0 / np.bincount(group)[group])
    row_gaps = gaps[:, group] * share
    chain["t1"][rows] = ideal[rows] + row_gaps[0]
    chain["t2"][rows] = chain["t1"][rows] + row_gaps[1]
    chain["t3"][rows] = chain["t2"][rows] + row_gaps[2]
    time = time.copy()
    kernel_time = kernel_time.copy()
    time[rows] = chain["t3"][rows] + row_gaps[3]
    kernel_time[rows] = group_kernel[group] * share
    compute[rows] = times["compute"][group] * share
    memory[rows] = times["memory"][group] * share
    return time, kernel_time
