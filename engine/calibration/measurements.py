"""Measured kernel times against every method's prediction (the Accuracy page and benchmarks/accuracy.py).

    measurements = load_measurements()                 # ../shared vidur file, else the bundled sample
    tidy = predict(measurements)                       # one row per measurement and method
    summary(tidy)                                      # median / p90 absolute error and bias per group

Data: vidur_llama2_ops.csv, per-operator kernel times measured with a profiler on A100-80GB and
H100-SXM (github.com/microsoft/vidur profiling data; Llama-2-7B/70B shapes, 1..4096 tokens, TP 1..8),
plus any ground truth measured with calibration/measure_gpu.py under calibration/measured/ (the same
layout with `batch` and `context` columns; attention and whole decode steps are predicted through
engine.estimate, see engine/calibration/scenarios.py).
Each measurement becomes one kernel row built with the default decomposition's own formulas
(engine.kernels.fields.gemm_fields, norm_fields, ...), so bytes and FLOPs follow the same conventions.
The measurements are device-side kernel durations, so the realistic methods are scored on
`kernel_time_s` (no host launch); the other methods on `time_s`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional

import numpy as np
import pandas as pd

from engine.calibration.scenarios import SCENARIO_KINDS, check_rows, scenario_seconds
from engine.kernels.fields import gemm_fields, mlp_activation_fields, norm_fields, residual_fields
from engine.hardware.dtypes import bytes_per_value
from engine.kernels.table import KernelTableBuilder

REPO = Path(__file__).resolve().parents[2]
MEASURED_DIR = REPO / "calibration" / "measured"          # files written by calibration/measure_gpu.py
SHARED_MEASUREMENTS = REPO.parent / "shared" / "calibration" / "vidur_llama2_ops.csv"
BUNDLED_SAMPLE = Path(__file__).resolve().parents[1] / "data" / "vidur_llama2_ops_sample.csv"
DEVICE_NAMES = {"A100-80GB": "A100-80GB-SXM", "H100-SXM": "H100-SXM"}   # file name -> specs.xlsx name
KINDS = ("gemm", "swiglu", "rmsnorm", "residual_add")                 # kernels built from m, n, k
ELEMENTWISE_KINDS = ("swiglu", "rmsnorm", "residual_add")
ALL_KINDS = KINDS + SCENARIO_KINDS                                      # + attention and decode steps
DEFAULT_METHODS = ("roofline", "hierarchical", "seed", "realistic")   # realistic-graph: same kernel times
GROUND_TRUTH_METHODS = DEFAULT_METHODS + ("realistic-graph",)          # decode steps are timed graph-captured
MEASUREMENT_COLUMNS = ("device", "model", "op", "kind", "tokens", "tp", "m", "n", "k", "dtype", "batch", "context",
                       "measured_s")
OPTIONAL_COLUMNS = {"m": np.nan, "n": np.nan, "k": np.nan, "batch": np.nan, "context": np.nan}

# Seed 000: torch.compile'd MLP (x @ w1, relu, x @ w2, multiply, @ wlinear) on A100 40GB PCIe,
# batch 32, d_model 4096, hidden 8192, bf16: measured 191 us (%timeit), the seed's roofline 129.8 us.
SEED_000 = {"device": "A100-40GB-PCIe", "measured_s": 191e-6, "batch": 32, "d_model": 4096, "hidden": 8192}


def default_measurements_path() -> Path:
    """The full shared file when this checkout sits next to ../shared, else the bundled sample."""
    return SHARED_MEASUREMENTS if SHARED_MEASUREMENTS.exists() else BUNDLED_SAMPLE


def measured_paths(folder: Optional[Path] = None) -> list[Path]:
    """Ground-truth files recorded in the repo (calibration/measured/*.csv), sorted by name."""
    folder = MEASURED_DIR if folder is None else Path(folder)
    return sorted(folder.glob("*.csv")) if folder.is_dir() else []


def default_paths() -> list[Path]:
    """Everything scored by default: the Vidur file (or its sample) and the repo's own GPU measurements."""
    return [default_measurements_path(), *measured_paths()]


def read_metadata(path) -> dict[str, str]:
    """The `# key: value` header lines of a measurement file (hardware, software versions, timing method)."""
    metadata = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.startswith("#"):
                break
            key, colon, value = line[1:].partition(":")
            if colon and key.strip() and " " not in key.strip():
                metadata[key.strip()] = value.strip()
    return metadata


def read_raw(path=None) -> pd.DataFrame:
    """The CSV as written (header comment skipped), columns as in the file."""
    return pd.read_csv(path or default_measurements_path(), comment="#")


def load_measurements(path=None) -> pd.DataFrame:
    """Measurements with our device names and seconds: MEASUREMENT_COLUMNS, one row each.

    `path`: one file or a list of files (concatenated). Hardware is a Vidur name (A100-80GB, H100-SXM)
    or a specs.xlsx device name; kinds are ALL_KINDS. Errors name the file, row and column.
    """
    if isinstance(path, (list, tuple)):
        return pd.concat([load_measurements(p) for p in path], ignore_index=True)
    where = Path(path or default_measurements_path()).name
    raw = read_raw(path)
    missing = [c for c in ("hardware", "model", "op", "kind", "tokens", "tp", "dtype", "median_ms") if c not in raw]
    if missing:
        raise ValueError(f"{where}: missing column(s) {', '.join(missing)}")
    raw = raw.assign(**{c: raw[c] if c in raw else default for c, default in OPTIONAL_COLUMNS.items()})
    device = raw["hardware"].map(lambda name: DEVICE_NAMES.get(name, name))
    unknown = sorted(set(device) - set(DEVICE_NAMES.values()) - _spec_names(set(device) - set(DEVICE_NAMES.values())))
    if unknown:
        raise ValueError(f"{where}: unknown hardware {unknown}; known: {', '.join(DEVICE_NAMES)} or a device of "
                         "specs.xlsx")
    bad_kind = ~raw["kind"].isin(ALL_KINDS)
    if bad_kind.any():
        row = int(np.flatnonzero(bad_kind)[0])
        raise ValueError(f"{where} row {row + 1}: kind {raw['kind'].iloc[row]!r} is not one of {', '.join(ALL_KINDS)}")
    times = pd.to_numeric(raw["median_ms"], errors="coerce")
    if not (times > 0).all():
        row = int(np.flatnonzero(~(times > 0))[0])
        raise ValueError(f"{where} row {row + 1}: median_ms must be a positive number, got {raw['median_ms'].iloc[row]}")
    frame = raw.assign(device=device, measured_s=times * 1e-3)
    scenario = frame["kind"].isin(SCENARIO_KINDS)
    if scenario.any():
        check_rows(frame[scenario], where)
    for column, least in (("m", 1), ("n", 1), ("k", 0)):            # kernels are built from their shape
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = ~scenario & ~(values >= least)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{where} row {row + 1} ({frame['kind'].iloc[row]}): {column} must be a number >= {least}, "
                             f"got {frame[column].iloc[row]}")
    return frame[list(MEASUREMENT_COLUMNS)].reset_index(drop=True)


def _spec_names(candidates: set) -> set:
    """Which of `candidates` are devices of the bundled specs.xlsx (read only when a name needs it)."""
    if not candidates:
        return set()
    from engine.hardware.specs import load_specs
    return candidates & set(load_specs())


def kernel_table(measurements: pd.DataFrame) -> dict[str, np.ndarray]:
    """One kernel row per measurement (same order), with the decomposition's byte and FLOP formulas.

    gemm: C[m,n] = A[m,k] @ W[k,n] (mlp_up_proj's n is the fused up+gate width); swiglu: n outputs
    per token from 2n inputs (gated activation); rmsnorm: tokens x hidden; residual_add: two in, one out.
    """
    builder = KernelTableBuilder()
    order = []
    for (kind, op, dtype), rows in measurements.groupby(["kind", "op", "dtype"], sort=False):
        m, n, k = (rows[c].to_numpy(dtype=float) for c in ("m", "n", "k"))
        value = bytes_per_value(dtype)
        common = dict(phase="measured", name=op, dtype=dtype)
        if kind == "gemm":
            builder.add(type="Ma_Mw", op="gemm", unit="matrix", **common, **gemm_fields(m, k, n, value, value))
        elif kind == "swiglu":
            builder.add(type="Elementwise", op="activation", unit="vector", **common,
                        **mlp_activation_fields(m, n, "silu", True, value))
        elif kind == "rmsnorm":
            builder.add(type="Norm", op="norm", unit="vector", **common, **norm_fields(m, n, "rmsnorm", value, value))
        elif kind == "residual_add":
            builder.add(type="Elementwise", op="residual", unit="vector", **common, **residual_fields(m, n, value))
        else:
            raise ValueError(f"unknown measurement kind {kind!r}; expected one of {', '.join(KINDS)}")
        order.append(np.flatnonzero(measurements.index.isin(rows.index)))
    columns = builder.build_columns()
    back = np.argsort(np.concatenate(order)) if order else np.zeros(0, dtype=int)
    return {key: values[back] for key, values in columns.items()}


def predicted_seconds(table: dict, hardware, method: str, realistic_constants=None) -> np.ndarray:
    """Per row: the method's device time (kernel_time_s where the method reports it, else time_s).

    `realistic_constants`: kernel-class constants for the realistic methods (default: the shipped ones).
    """
    from engine.estimators import get_method
    from engine.estimators.realistic import estimate_realistic
    if method == "seed":
        return _seed_seconds(table, hardware)
    if method.startswith("realistic") and realistic_constants is not None:
        launch = "graph" if method == "realistic-graph" else "eager"
        result = estimate_realistic(table, hardware, None, launch=launch, constants=realistic_constants)
    else:
        result = get_method(method).estimate(table, hardware, None)
    return np.asarray(result.get("kernel_time_s", result["time_s"]), dtype=float)


def _seed_seconds(table: dict, hardware) -> np.ndarray:
    """The seed tiler on GEMM rows (its notebook has no element-wise kernels: NaN there)."""
    from engine.estimators.seed_tiler import estimate_seed
    from engine.workload.scenario import Scenario
    result = np.full(len(table["m"]), np.nan)
    gemm = table["op"] == "gemm"
    if not gemm.any() or hardware.llc_capacity_bytes is None:
        return result
    m, k, n = (table[c][gemm] for c in ("m", "k", "n"))
    frame = pd.DataFrame({"phase": "measured", "type": "Ma_Mw", "name": table["name"][gemm], "m": m, "k": k, "n": n,
                          "batch": 1.0, "compute_macs": m * k * n, "weight_elems": k * n, "kv_cache_elems": np.nan,
                          "count": 1.0, "group": np.arange(gemm.sum())})
    for dtype in np.unique(table["dtype"][gemm]):
        rows = table["dtype"][gemm] == dtype
        seconds = estimate_seed(frame[rows].reset_index(drop=True), hardware, Scenario(activation_dtype=dtype))["time_s"]
        result[np.flatnonzero(gemm)[rows]] = seconds
    return result


def predict(measurements: Optional[pd.DataFrame] = None, devices: Optional[dict] = None,
            methods: Iterable[str] = DEFAULT_METHODS, realistic_constants=None) -> pd.DataFrame:
    """Tidy predictions: MEASUREMENT_COLUMNS + method, predicted_s, error (predicted / measured - 1).

    `devices`: {device name: Hardware} (default: the bundled specs.xlsx), e.g. with fitted values;
    `realistic_constants`: kernel-class constants for the realistic methods (default: shipped) on kernel
    rows; attention and decode-step rows go through engine.estimate with the shipped constants.
    """
    from engine.hardware.specs import load_specs
    measurements = load_measurements() if measurements is None else measurements
    devices = devices or load_specs()
    parts = []
    for device, on_device in measurements.groupby("device", sort=False):
        if device not in devices:
            raise ValueError(f"device {device!r} of the measurements is not in the specs ({', '.join(devices)})")
        hardware = devices[device]
        scenario = on_device["kind"].isin(SCENARIO_KINDS)
        kernels, scenarios = on_device[~scenario], on_device[scenario]
        table = kernel_table(kernels) if len(kernels) else None
        for method in methods:
            if table is not None:
                predicted = predicted_seconds(table, hardware, method, realistic_constants)
                parts.append(_scored(kernels, method, predicted))
            if len(scenarios):
                parts.append(_scored(scenarios, method, scenario_seconds(scenarios, hardware, method)))
    return pd.concat(parts, ignore_index=True)


def _scored(rows: pd.DataFrame, method: str, predicted: np.ndarray) -> pd.DataFrame:
    return rows.assign(method=method, predicted_s=predicted, error=predicted / rows["measured_s"].to_numpy() - 1.0)


def family(kind) -> np.ndarray:
    """'gemm', 'elementwise', 'attention' or 'step' per op kind (the accuracy targets are per family)."""
    kind = np.asarray(kind)
    return np.select([kind == "gemm", np.isin(kind, ELEMENTWISE_KINDS), np.char.startswith(kind.astype(str),
                      "attention")], ["gemm", "elementwise", "attention"], "step")


def summary(tidy: pd.DataFrame, by: tuple[str, ...] = ("method", "device", "kind")) -> pd.DataFrame:
    """Per group: count, median and p90 absolute relative error, bias (median signed error).

    Group by "family" to score GEMMs against element-wise kernels as a whole.
    """
    frame = tidy.assign(family=family(tidy["kind"])) if "family" in by and "family" not in tidy else tidy
    frame = frame.dropna(subset=["error"])
    grouped = frame.groupby(list(by), sort=False)["error"]
    return pd.DataFrame({
        "count": grouped.size(),
        "median_abs_error": grouped.apply(lambda e: float(np.median(np.abs(e)))),
        "p90_abs_error": grouped.apply(lambda e: float(np.quantile(np.abs(e), 0.9))),
        "bias": grouped.median(),
    }).reset_index()


def seed_000_kernels() -> dict[str, np.ndarray]:
    """Seed 000's MLP as the kernels torch.compile runs: x @ w1, x @ w2, relu(x1) * x2, (...) @ wlinear."""
    b, d, f = SEED_000["batch"], SEED_000["d_model"], SEED_000["hidden"]
    value = bytes_per_value("bf16")
    builder = KernelTableBuilder()
    common = dict(phase="seed000", type="Ma_Mw", op="gemm", unit="matrix", dtype="bf16")
    builder.add(name="x@w1", **common, **gemm_fields(b, d, f, value, value))
    builder.add(name="x@w2", **common, **gemm_fields(b, d, f, value, value))
    builder.add(phase="seed000", name="relu*mul", type="Elementwise", op="activation", unit="vector", dtype="bf16",
                **mlp_activation_fields(b, f, "relu", True, value))
    builder.add(name="@wlinear", **common, **gemm_fields(b, f, d, value, value))
    return builder.build_columns()


def seed_000_prediction(hardware, method: str) -> float:
    """Predicted seconds of seed 000's MLP (sum of its kernels' time_s, host launches included)."""
    from engine.estimators import get_method
    table = seed_000_kernels()
    if method == "seed":
        return float(np.nansum(_seed_seconds(table, hardware)))
    return float(np.sum(get_method(method).estimate(table, hardware, None)["time_s"]))
