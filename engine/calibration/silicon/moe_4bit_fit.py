"""Fit the grouped GEMMs of 4-bit expert weights on the measured MoE tables, leave-one-device-out.

aiconfigurator's TensorRT-LLM MoE tables hold three 4-bit formats (the collector's balanced routing; one version per
system, files.one_version_each): nvfp4 (nvfp4 weights and activations: Blackwell), w4a8_mxfp4_mxfp8 (mxfp4 weights,
mxfp8 activations: Blackwell) and w4a16_mxfp4 (mxfp4 weights, bf16 activations: gpt-oss's experts; Hopper and
Blackwell). The engine names them by their weight bytes and compute format (tables.FILE_DTYPES, dtypes.gemm_dtype) and
times them as any grouped GEMM (moe_fit.py's constants, in the tables' condition); each class of
engine/estimators/moe_4bit.py (w4a4, w4a8, w4a16; /native with an fp4 matrix rate, /promoted without) gets its own

    (stream, matrix, latency)    weight stream x stream, matrix rate x matrix, + latency seconds per launch

on top of the fitted bf16 / fp8 constants (RealisticConstants.moe_4bit_formats). The engine is evaluated per device
and class at each (stream, matrix) of STREAM_GRID x MATRIX_GRID with no latency; the latency adds per launch
(`launches`), so LATENCY_GRID costs no evaluation. A class is fitted on the pooled rows of its training devices by
moe_fit.moe_objective; leave-one-device-out where two or more devices have the class (the held-out device scored by
the engine at its fold's point), in-sample where one does (`split` says which).

TensorRT-LLM's min-latency nvfp4 kernel (kernel_source moe_torch_flow_min_latency: the same shapes as the CUTLASS
rows, B200 and GB200 only) is another kernel for the same problem; its rows are not fitted (EXCLUDED_KERNELS).
"""

from __future__ import annotations

from dataclasses import replace
import itertools

import numpy as np
import pandas as pd

from engine.calibration.silicon.conditions import moe_table_constants
from engine.calibration.silicon.moe_fit import moe_objective
from engine.calibration.silicon.score import measured_kernels, predicted_seconds
from engine.estimators.gemm_condition import native_block_scales
from engine.estimators.moe_4bit import format_key
from engine.estimators.realistic import DEFAULT_CONSTANTS
from engine.hardware.dtypes import gemm_dtype

TABLE_FORMATS = ("nvfp4", "w4a8_mxfp4_mxfp8", "w4a16_mxfp4", "int4_wo")     # the tables' moe_dtype (4-bit)
FRAMEWORKS = ("trtllm", "vllm", "sglang")       # each fitted on its own tables (int4_wo: vLLM and SGLang only)
# another kernel for the same problem, not fitted: TensorRT-LLM's min-latency nvfp4 kernel
EXCLUDED_KERNELS = "min_latency"
STREAM_GRID = (0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
MATRIX_GRID = (0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)
LATENCY_GRID = tuple(np.arange(0.0, 60.01e-6, 1.0e-6))
# a table of classes that matches none (moe_table_constants fills an empty one with the fitted classes): 4-bit rows timed
# as any grouped GEMM of their bytes and compute format, the form before
NO_CLASS = {"none": (1.0, 1.0, 0.0)}
TOKEN_BUCKETS = (0, 1, 4, 16, 64, 256, np.inf)
TOKEN_LABELS = ("<=1", "1-4", "4-16", "16-64", "64-256", ">256")


def fit_rows(devices: dict, root=None, rows_per_device: int = 600, seed: int = 0,
             framework: str = "trtllm") -> pd.DataFrame:
    """A fixed random sample of `framework`'s 4-bit MoE measurements per workbook device and table format, with the
    class each runs in (`format_key`) and its (token, expert) pairs per active expert (`tokens_bucket`)."""
    from engine.calibration.silicon.moe_routing import balanced_routing
    if framework not in FRAMEWORKS:
        raise ValueError(f"moe_4bit_fit: unknown framework {framework!r}; expected one of {', '.join(FRAMEWORKS)}")
    frame = measured_kernels("moe", root, framework)
    frame = frame[frame["device"].isin(list(devices)) & frame["file_dtype"].isin(TABLE_FORMATS)
                  & ~frame["kernel_source"].astype(str).str.contains(EXCLUDED_KERNELS)]
    parts = [rows.sample(n=min(rows_per_device, len(rows)), random_state=seed)
             for _, rows in frame.groupby(["device", "file_dtype"])]
    frame = pd.concat(parts, ignore_index=True) if parts else frame
    keys = [format_key(gemm_dtype(w, a), native_block_scales(devices[d]))
            for d, w, a in zip(frame["device"], frame["weight_dtype"], frame["activation_dtype"])]
    pairs, active, _ = balanced_routing(frame["tokens"], frame["experts"], frame["topk"], frame["moe_ep"])
    per_expert = pairs / np.maximum(active, 1.0)
    return frame.assign(format_key=keys, tokens_per_expert=per_expert,
                        tokens_bucket=pd.cut(per_expert, TOKEN_BUCKETS, labels=TOKEN_LABELS))


def constants_with(formats: dict, base=None):
    """The MoE tables' condition (moe_table_constants of `base`, default the shipped constants) with `formats` as
    RealisticConstants.moe_4bit_formats ({class: (stream, matrix, latency)}; {}: none, the form before)."""
    return moe_table_constants(replace(base or DEFAULT_CONSTANTS, moe_4bit_formats=dict(formats or NO_CLASS)))


def launches(part: pd.DataFrame) -> np.ndarray:
    """Per measurement, the grouped launches that pay the latency: Expert_up (with the gate: one launch in the tables'
    condition) and Expert_down."""
    return np.full(len(part), 2.0)


def grid_predictions(rows: pd.DataFrame, devices: dict) -> dict:
    """{(device, class): ({(stream, matrix): the engine's seconds at latency 0}, launches, measured seconds)}."""
    out = {}
    for (device, key), part in rows.groupby(["device", "format_key"], sort=True):
        part = part.reset_index(drop=True)
        base = {(s, m): predicted_seconds(part, "moe", devices[device], "realistic",
                                          constants_with({key: (s, m, 0.0)}))
                for s, m in itertools.product(STREAM_GRID, MATRIX_GRID)}
        out[(device, key)] = (base, launches(part), part["time_s"].to_numpy(dtype=float))
    return out


def best_point(predictions: dict, key: str, training: list) -> tuple[float, float, float]:
    """The (stream, matrix, latency) minimising moe_objective over the pooled rows of class `key` on `training`."""
    entries = [predictions[(d, key)] for d in training if (d, key) in predictions]
    truth = np.concatenate([e[2] for e in entries])
    unit = np.concatenate([e[1] for e in entries])
    best, best_value = None, np.inf
    for s, m in itertools.product(STREAM_GRID, MATRIX_GRID):
        base = np.concatenate([e[0][(s, m)] for e in entries])
        for latency in LATENCY_GRID:
            value = moe_objective(base + latency * unit, truth)
            if value < best_value:
                best, best_value = (s, m, float(latency)), value
    return best


def leave_one_device_out(rows: pd.DataFrame, devices: dict, predictions: dict | None = None, training=None):
    """Tidy errors per measurement under `before` (the tables' condition without 4-bit constants), `fitted` (the
    class's point fitted without the device, on the devices of `training` (default every one), where another such
    device has the class: split leave-one-device-out; else on the device itself: in-sample); and {(device, class):
    (point, split)}."""
    predictions = predictions or grid_predictions(rows, devices)
    parts, fitted = [], {}
    for (device, key), part in rows.groupby(["device", "format_key"], sort=True):
        part = part.reset_index(drop=True)
        others = [d for d, k in predictions if k == key and d != device and (training is None or d in training)]
        split = "leave-one-device-out" if others else "in-sample"
        point = best_point(predictions, key, others or [device])
        fitted[(device, key)] = (point, split)
        measured = part["time_s"].to_numpy(dtype=float)
        for label, constants in (("before", constants_with({})), ("fitted", constants_with({key: point}))):
            seconds = predicted_seconds(part, "moe", devices[device], "realistic", constants)
            parts.append(part.assign(model=label, split=split, predicted_s=seconds, error=seconds / measured - 1.0))
    return pd.concat(parts, ignore_index=True), fitted


def fit_all(predictions: dict, training=None) -> dict:
    """{class: (stream, matrix, latency)} fitted on every device of `training` (default every one) that has it (the
    values to ship)."""
    pairs = [(d, k) for d, k in predictions if training is None or d in training]
    return {key: best_point(predictions, key, sorted({d for d, k in pairs if k == key}))
            for key in sorted({k for _, k in pairs})}


MODEL_FREE_FORMATS = ("bfloat16", "fp8", "nvfp4", "w4a16_mxfp4", "w4a8_mxfp4_mxfp8", "int4_wo")


def model_free(devices: dict, root=None, frameworks=("trtllm", "vllm")) -> pd.DataFrame:
    """Per framework, device and table format, from the measurements alone (balanced routing, gated kernels, one
    version per system; TensorRT-LLM's min-latency kernel left out): `stream`, the packed expert weights' bytes / time /
    the workbook's bandwidth, median over rows of <= 4 pairs per expert reaching >= 32 experts; `rate`, FLOP/s / the
    workbook's peak of the compute format at >= 256 pairs per expert; `floor_us`, the fastest row."""
    from engine.calibration.silicon.moe_routing import balanced_routing
    from engine.hardware.dtypes import bytes_per_value, compute_dtype
    lines = []
    for framework in frameworks:
        frame = measured_kernels("moe", root, framework)
        frame = frame[frame["device"].isin(list(devices)) & frame["file_dtype"].isin(MODEL_FREE_FORMATS)
                      & ~frame["kernel_source"].astype(str).str.contains("min_latency|nongated")].reset_index(drop=True)
        pairs, active, _ = balanced_routing(frame["tokens"], frame["experts"], frame["topk"], frame["moe_ep"])
        per_expert = pairs / np.maximum(active, 1.0)
        inner = frame["hidden"] * frame["intermediate"] / frame["moe_tp"] * 3.0          # up, gate, down
        weight_bytes = active * inner * frame["weight_dtype"].map(bytes_per_value)
        flops = 2.0 * pairs * inner
        for (device, fmt), part in frame.groupby(["device", "file_dtype"]):
            hardware, seconds = devices[device], part["time_s"]
            small = (per_expert[part.index] <= 4) & (active[part.index] >= 32)
            large = per_expert[part.index] >= 256
            compute = compute_dtype(part["weight_dtype"].iloc[0], part["activation_dtype"].iloc[0])
            macs = getattr(hardware, f"matrix_macs_per_cycle_per_core_{compute}", None) or np.nan
            peak = 2.0 * hardware.num_cores * hardware.clock_hz * macs
            stream = (weight_bytes[part.index] / seconds)[small].median() / hardware.memory_bandwidth_bytes_per_s
            rate = (flops[part.index] / seconds)[large].median() / peak
            lines.append({"framework": framework, "device": device, "format": fmt, "compute": compute,
                          "stream": stream, "rate": rate, "floor_us": 1e6 * seconds.min()})
    return pd.DataFrame(lines)
