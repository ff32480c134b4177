"""Weight-only quantized GEMMs (W4A16 int4_wo, W8A16 int8_wo) on the measured tables: a streamed-weight term, fitted.

The tiles-and-waves timing of `realistic` sees a weight-only GEMM as a bf16 GEMM whose weight bytes are the
quantized ones (int4 with its group-128 bf16 scales: 0.5 + 2/128 = 0.515625 bytes per weight). At small m the tables'
kernels are far slower than that (A100 TensorRT-LLM, m <= 16: -44.5% int4, -36.7% int8 at the median;
docs/accuracy.md, h/wogemv): a mixed-input kernel has its own fixed time (~10 us on A100 where bf16's is ~3 us),
streams the packed weights below the bandwidth a bf16 GEMM reaches, and dequantizes every weight on the vector units
once per row tile of the activation. This module fits that lower bound on the realistic time (the formula is
`realistic`'s own, engine/estimators/weight_only.py, which ships one set of constants per weight format in
`estimate` / `serve`):

    t = max(realistic, latency_cycles / clock
                       + max((weight + activation + output bytes) / (memory_bandwidth x stream_fraction),
                             k_cycles x k / clock)
                       + dequant_flops x n x k x ceil(m / ROW_TILE) / (vector_flops_per_cycle_per_core x cores x clock))

The k term: the GEMV kernels walk all of k inside one thread block (no split-K), so a narrow GEMM (few columns, few
blocks) takes time in k alone (A100 TensorRT-LLM int4, n = 128: 10 us at k = 128, 40 us at 16,384, 122 us at
65,536 for 4 MB of weights); a wide one is bound by the stream. Four constants per table kind (framework x weight
dtype), each a function of workbook fields only (clock, HBM bandwidth, vector rate): no device names. `fit` recovers them from measured rows (scipy least squares on log
ratios, soft-L1 loss); `leave_one_device_out` fits on the other devices' rows of a dtype and scores the held-out one.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from engine.estimators.weight_only import ROW_TILE, WeightOnlyConstants  # noqa: F401  (re-exported)
from engine.estimators.weight_only import weight_only_seconds as term_seconds
from engine.hardware.dtypes import bytes_per_value

WEIGHT_ONLY_DTYPES = ("int4_wo", "int8_wo")
# the bounds of the fitted constants: latency 0-100k cycles, stream 5-100% of the HBM bandwidth, 0-64 FLOP per weight,
# 0-64 cycles per k value
LOWER, UPPER = np.array([0.0, 0.05, 0.0, 0.0]), np.array([1.0e5, 1.0, 64.0, 64.0])

# {framework: {weight dtype: (latency_cycles, stream_fraction, dequant_flops, k_cycles)}} fitted in-sample on the
# m <= 16 rows of each table (benchmarks/weight_only_accuracy.py, rounded): A100-SXM TensorRT-LLM 1.0.0, H100-SXM
# SGLang 0.5.6.post2. The tables' record of the GEMV regime; `realistic` ships weight_only.SHIPPED (fitted on all m).
TABLE_WEIGHT_ONLY = {"trtllm": {"int4_g128": (15200.0, 1.0, 2.0, 2.7), "int8": (14700.0, 1.0, 3.3, 2.6)},
                     "sglang": {"int8": (40000.0, 0.91, 6.7, 1.8)}}


def table_constants(framework: str, weight_dtype: str) -> WeightOnlyConstants | None:
    """The constants fitted on a framework's table of one weight dtype (TABLE_WEIGHT_ONLY; None: none fitted)."""
    values = TABLE_WEIGHT_ONLY.get(framework, {}).get(weight_dtype)
    return None if values is None else WeightOnlyConstants(*values)


def gemm_bytes(m, n, k, weight_dtype: str, activation_dtype: str = "bf16") -> np.ndarray:
    """Bytes a weight-only GEMM C[m,n] = A[m,k] @ W[k,n] moves: the packed weights (with their scales, through
    bytes_per_value), the activation read once and the output written once in the activation's format."""
    m, n, k = (np.asarray(v, dtype=float) for v in (m, n, k))
    act = bytes_per_value(activation_dtype)
    return n * k * bytes_per_value(weight_dtype) + (m * k + m * n) * act


def stream_seconds(m, n, k, nbytes, hardware, constants: WeightOnlyConstants) -> np.ndarray:
    """The weight-only term alone (the module docstring's second argument of max) on `hardware`: realistic's own
    (engine/estimators/weight_only.weight_only_seconds)."""
    return term_seconds(m, n, k, nbytes, hardware, constants)


def weight_only_seconds(frame: pd.DataFrame, base_s, devices: dict, constants: WeightOnlyConstants) -> np.ndarray:
    """Per row of `frame` (m, n, k, weight_dtype, activation_dtype, device): max(base_s, the weight-only term)."""
    out = np.asarray(base_s, dtype=float).copy()
    for (device, weight, activation), rows in frame.groupby(["device", "weight_dtype", "activation_dtype"]):
        where = frame.index.get_indexer(rows.index)
        m, n, k = (rows[c].to_numpy(dtype=float) for c in ("m", "n", "k"))
        term = stream_seconds(m, n, k, gemm_bytes(m, n, k, weight, activation), devices[device], constants)
        out[where] = np.maximum(out[where], term)
    return out


def _design(frame: pd.DataFrame, devices: dict) -> dict:
    """Per row the workbook quantities the three constants multiply (so a fit evaluates without groupby)."""
    clock = frame["device"].map(lambda d: devices[d].clock_hz).to_numpy(dtype=float)
    bandwidth = frame["device"].map(lambda d: devices[d].memory_bandwidth_bytes_per_s).to_numpy(dtype=float)
    vector = frame["device"].map(lambda d: devices[d].vector_flops_per_cycle_per_core * devices[d].num_cores
                                 * devices[d].clock_hz).to_numpy(dtype=float)
    m, n, k = (frame[c].to_numpy(dtype=float) for c in ("m", "n", "k"))
    nbytes = np.empty(len(frame))
    for (weight, activation), rows in frame.groupby(["weight_dtype", "activation_dtype"]):
        where = frame.index.get_indexer(rows.index)
        nbytes[where] = gemm_bytes(m[where], n[where], k[where], weight, activation)
    return {"per_cycle": 1.0 / clock, "stream": nbytes / bandwidth, "k": k / clock,
            "dequant": n * k * np.ceil(m / ROW_TILE) / vector}


def _predict(params: np.ndarray, design: dict, base_s: np.ndarray) -> np.ndarray:
    latency, fraction, dequant, k_cycles = params
    term = (latency * design["per_cycle"] + np.maximum(design["stream"] / fraction, k_cycles * design["k"])
            + dequant * design["dequant"])
    return np.maximum(base_s, term)


def fit(frame: pd.DataFrame, base_s, measured_s, devices: dict) -> WeightOnlyConstants:
    """The constants minimising the soft-L1 of log(predicted / measured) over `frame`'s rows (one table kind)."""
    design, base = _design(frame.reset_index(drop=True), devices), np.asarray(base_s, dtype=float)
    log_measured = np.log(np.asarray(measured_s, dtype=float))

    def residuals(params):
        return np.log(_predict(params, design, base)) - log_measured
    best = None
    for start in ([1.0e4, 0.6, 1.0, 1.0], [2.0e4, 0.4, 8.0, 4.0], [5.0e3, 0.8, 0.1, 0.1]):     # a few starts: max() has kinks
        result = least_squares(residuals, start, bounds=(LOWER, UPPER), loss="soft_l1", f_scale=0.1)
        if best is None or result.cost < best.cost:
            best = result
    return WeightOnlyConstants(*(float(v) for v in best.x))


def errors(frame: pd.DataFrame, base_s, measured_s, devices: dict, constants: WeightOnlyConstants) -> np.ndarray:
    """predicted / measured - 1 per row under `constants`."""
    design = _design(frame.reset_index(drop=True), devices)
    return _predict(constants.as_array(), design, np.asarray(base_s, dtype=float)) / np.asarray(measured_s) - 1.0


def summarize(error) -> dict:
    """count, median and p90 of |error|, bias (median signed error)."""
    error = np.asarray(error, dtype=float)
    return {"count": int(error.size), "median": float(np.median(np.abs(error))),
            "p90": float(np.quantile(np.abs(error), 0.9)), "bias": float(np.median(error))}


def leave_one_device_out(frame: pd.DataFrame, devices: dict) -> pd.DataFrame:
    """Per file dtype with two or more devices: fit on the others' rows, score the held-out device's (columns
    file_dtype, held_out, trained_on, the constants and the held-out rows' errors in `error` lists). `frame` needs
    base_s (the realistic time) and time_s (measured)."""
    rows = []
    for dtype, table in frame.groupby("file_dtype"):
        held = sorted(table["device"].unique())
        for device in held if len(held) > 1 else []:
            train, test = table[table["device"] != device], table[table["device"] == device]
            constants = fit(train, train["base_s"], train["time_s"], devices)
            rows.append({"file_dtype": dtype, "held_out": device,
                         "trained_on": ", ".join(sorted(train["device"].unique())), "constants": constants,
                         "error": errors(test, test["base_s"], test["time_s"], devices, constants)})
    return pd.DataFrame(rows)
