"""Sweeps over any scenario or hardware field: a grid of values in, one tidy row per point out.

    engine.sweep_grid(model, scenario, {"batch": [1, 8, 64], "memory_bandwidth": [2000, 3350, 4800]},
                      hardware=engine.load_hardware("H100-SXM"))

Grid fields (docs/sweeps.md):
- scenario fields (engine.workload.scenario.Scenario): batch, input_length, output_length, context_length,
  chunk_size, the three dtypes, phase, tp, pp, dp, ep, devices, micro_batches, ... (values as the
  Scenario takes them);
- hardware fields: any numeric row of the workbook's hardware sheet, in the workbook's units (e.g.
  memory_bandwidth in GB/s, clock in GHz, llc_capacity in MiB, num_cores), plus `compute_scale`
  (a factor on every matrix and vector rate) and `matrix_tflops` (the dense bf16 matrix peak in
  TFLOP/s; the other formats scale with it);
- `device`: device names (from `devices`, else the workbook) — a device list;
- `model`: model ids: the keys of `model` when it is a {id: model} mapping or a list of models / ids (then
  the axis is added by itself when the grid does not name it, as the first field), else engine.load_model.

How it is fast: points that differ only in batch and lengths share one stacked kernel table
(engine/explore/points.py), and every hardware variant is timed on it at once (engine/explore/evaluation.py).
Phase `chunked`, chunked-prefill schedules, traced models and the seed method run point by point
through engine.estimate (same columns, slower). A point that cannot run (too long for the model, a
layout the model cannot split, a device without interconnect) gets its reason in `error` and NaN
metrics; a value that is not valid for its field raises GridError naming the field.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from engine.estimators.collectives import check_interconnect
from engine.common.errors import GridError, one_line
from engine.results.run import estimate, updated_scenario
from engine.explore.evaluation import evaluate_stack
from engine.explore.model_axis import MODEL_FIELD, model_choices, point_models
from engine.explore.points import ROW_FIELDS, PointValues, can_stack, stacked_table
from engine.explore.variants import LINK_ATTRIBUTES, Variant
from engine.hardware.device import WORKBOOK_FIELD_BY_KEY, WORKBOOK_FIELDS, Hardware
from engine.hardware.what_if import EditError, apply_edits
from engine.workload.scenario import Scenario

DEVICE_FIELD = "device"
PSEUDO_HARDWARE_FIELDS = {
    "compute_scale": "factor on every matrix and vector rate (1 = the device as specified)",
    "matrix_tflops": "dense bf16 matrix peak in TFLOP/s (every matrix format scales with it)",
}
HARDWARE_FIELDS = tuple(f.key for f in WORKBOOK_FIELDS if not f.text) + tuple(PSEUDO_HARDWARE_FIELDS)
SCENARIO_FIELDS = tuple(Scenario.model_fields)
METRIC_COLUMNS = (
    "ttft_s", "tpot_s", "e2e_s", "tokens_per_s", "tokens_per_s_per_device", "prefill_tokens_per_s", "time_s",
    "compute_bound_share", "flops", "bytes", "energy_j", "energy_per_token_j", "tokens_per_j", "average_power_w",
    "tdp_w", "exceeds_tdp", "weights_per_device_bytes", "memory_per_device_bytes", "memory_capacity_bytes", "fits", "devices", "error",
)
RECOVERABLE = (ValueError, KeyError)     # ScenarioError, ParallelismError, InterconnectError, ValidationError


def field_unit(field: str) -> str:
    """The unit values of `field` are given in ("" for unitless scenario fields)."""
    if field in WORKBOOK_FIELD_BY_KEY:
        return WORKBOOK_FIELD_BY_KEY[field].unit
    return {"matrix_tflops": "TFLOP/s", "compute_scale": "x"}.get(field, "")


def expand_grid(grid: Mapping[str, Sequence[Any]]) -> pd.DataFrame:
    """The cartesian product of the grid's values, one row per point, columns in the grid's order."""
    return pd.DataFrame(_grid_columns(grid))


def _grid_columns(grid: Mapping[str, Sequence[Any]]) -> dict[str, np.ndarray]:
    """expand_grid as a dict of arrays (the first field varies slowest)."""
    check_fields(list(grid))
    values = [list(v) if isinstance(v, (list, tuple, np.ndarray, pd.Series, range)) else [v] for v in grid.values()]
    for field, options in zip(grid, values):
        if not options:
            raise GridError(f"grid field {field!r} has no values")
    sizes = [len(options) for options in values]
    columns = {}
    for i, (field, options) in enumerate(zip(grid, values)):
        array = np.asarray(options)
        if array.dtype.kind not in "iufb" or array.ndim != 1:     # strings, None, mixed: keep the Python values
            array = np.empty(len(options), dtype=object)
            array[:] = options
        columns[field] = np.tile(np.repeat(array, math.prod(sizes[i + 1:])), math.prod(sizes[:i]))
    return columns


def check_fields(fields) -> None:
    known = set(SCENARIO_FIELDS) | set(HARDWARE_FIELDS) | {DEVICE_FIELD, MODEL_FIELD}
    for field in fields:
        if field not in known:
            raise GridError(f"cannot sweep {field!r}: expected a scenario field ({', '.join(SCENARIO_FIELDS)}), "
                            f"a numeric hardware field ({', '.join(HARDWARE_FIELDS)}), 'device' or 'model'")
    if "compute_scale" in fields and "matrix_tflops" in fields:
        raise GridError("sweep compute_scale or matrix_tflops, not both (both set the matrix rates)")


def sweep_grid(model, scenario: Scenario, grid: Mapping[str, Sequence[Any]], hardware: Optional[Hardware] = None,
               method: str = "roofline", devices: Optional[Mapping[str, Hardware]] = None) -> pd.DataFrame:
    """Every point of `grid` (field -> values) around `scenario` on `hardware`: one row per point with
    the grid's fields and METRIC_COLUMNS (module docstring). `model`: one model, or several as {id: model}
    or a list of models / ids: a categorical `model` axis (first field unless the grid names it)."""
    models = model_choices(model)
    if models is not None and MODEL_FIELD not in grid:
        grid = {MODEL_FIELD: list(models), **grid}
    return _sweep(models if models is not None else model, scenario, _grid_columns(grid), hardware, method, devices)


def sweep_points(model, scenario: Scenario, points: pd.DataFrame, hardware: Optional[Hardware] = None,
                 method: str = "roofline", devices: Optional[Mapping[str, Hardware]] = None) -> pd.DataFrame:
    """`sweep_grid` for an explicit list of points (a DataFrame whose columns are grid fields)."""
    check_fields(list(points.columns))
    models = model_choices(model)
    if models is not None:
        if MODEL_FIELD not in points.columns:
            raise GridError("several models: the points need a 'model' column naming one of "
                            f"{', '.join(map(repr, models))}")
        model = models
    return _sweep(model, scenario, {c: points[c].to_numpy() for c in points.columns}, hardware, method, devices)


def _sweep(model, scenario: Scenario, points: dict[str, np.ndarray], hardware, method, devices) -> pd.DataFrame:
    n = len(next(iter(points.values()))) if points else 0
    variants = HardwareVariants(points, n, hardware, devices)
    models = point_models(points, n, model)
    results = {c: np.full(n, np.nan) for c in METRIC_COLUMNS}
    results["error"] = np.full(n, "", dtype=object)
    results["exceeds_tdp"] = np.zeros(n, dtype=bool)
    results["fits"] = np.zeros(n, dtype=bool)
    structural = [c for c in points if c in SCENARIO_FIELDS and c not in ROW_FIELDS]
    by = ([MODEL_FIELD] if MODEL_FIELD in points else []) + structural
    groups = pd.DataFrame({c: points[c].astype(str) for c in by}).groupby(by, sort=False).indices.values() \
        if by and n else [np.arange(n)]
    for index in groups:
        index = np.asarray(index)
        if index.size:
            _run_group(models[index[0]], scenario, points, index, structural, variants, method, results)
    results["devices"] = pd.array(np.where(np.isnan(results["devices"]), None, results["devices"]), dtype="Int64")
    return pd.DataFrame({**points, **results}, copy=False)


class HardwareVariants:
    """The device of every point: its base device with the point's hardware-field values applied."""

    def __init__(self, points: dict, n: int, hardware: Optional[Hardware], devices):
        self.fields = [c for c in points if c in HARDWARE_FIELDS]
        if DEVICE_FIELD in points:
            names = points[DEVICE_FIELD].astype(str).tolist()
            bases = {name: resolve_device(name, devices) for name in dict.fromkeys(names)}
        else:
            if hardware is None:
                raise GridError("no hardware: pass a device or sweep the 'device' field")
            names, bases = [hardware.name] * n, {hardware.name: hardware}
        single = {}   # (device, field, value) -> SI changes, each validated once
        for field in self.fields:
            for name in bases:
                for value in dict.fromkeys(points[field].tolist()):
                    single[(name, field, value)] = _changes(bases[name], field, value)
        rows = zip(names, *(points[f].tolist() for f in self.fields))
        self.key_of_point, self.variant = [], {}
        cache: dict = {}     # Hardware copies shared by the variants (engine/explore/variants.py)
        for name, *values in rows:
            key = (name, *values)
            if key not in self.variant:
                changes = {}
                for field, value in zip(self.fields, values):
                    changes.update(single[(name, field, value)])
                self.variant[key] = Variant(bases[name], changes.items(), cache)
            self.key_of_point.append(key)

    def hardware(self, key) -> Hardware:
        """The device of a key, as a Hardware."""
        return self.variant[key].on()


def resolve_device(name: str, devices) -> Hardware:
    if devices is not None and name in devices:
        return devices[name]
    from engine.hardware.specs import load_hardware
    try:
        return load_hardware(name)
    except (KeyError, ValueError) as error:
        raise GridError(f"device {name!r}: {error}") from None


def pseudo_field_changes(base: Hardware, field: str, number: float) -> dict:
    """The SI rate changes (unvalidated) that set compute_scale or matrix_tflops to `number` (> 0)."""
    fields = [f"matrix_macs_per_cycle_per_core_{d}" for d in base.matrix_dtypes]
    if field == "compute_scale":
        factor = number
        fields.append("vector_flops_per_cycle_per_core")
    else:
        factor = number * 1e12 / base.matrix_flops_per_s("bf16")
    return {f: getattr(base, f) * factor for f in fields}


def _changes(base: Hardware, field: str, value) -> dict:
    """The SI field changes of one hardware-field value, validated as a what-if edit (GridError if invalid)."""
    if field in PSEUDO_HARDWARE_FIELDS:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
        if not np.isfinite(number) or number <= 0:
            raise GridError(f"{field} = {value!r}: expected a number > 0 ({PSEUDO_HARDWARE_FIELDS[field]})")
        return pseudo_field_changes(base, field, number)
    try:
        edited = apply_edits(base, {field: value})
    except EditError as error:
        raise GridError(f"grid field {error}") from None
    attribute = WORKBOOK_FIELD_BY_KEY[field].attribute
    return {attribute: getattr(edited, attribute)}


def _run_group(model, scenario: Scenario, points: dict, index: np.ndarray, structural: list[str],
               variants: HardwareVariants, method: str, results: dict) -> None:
    """Points sharing model and every structural scenario field: stacked when possible, else one by one."""
    try:
        base = updated_scenario(scenario, **{c: _plain(points[c][index[0]]) for c in structural}) if structural \
            else scenario
    except RECOVERABLE as error:
        _fail(results, index, one_line(error))
        return
    row_values = _row_values(points, index, base)
    if not can_stack(model, base, method):
        for i in index:
            _run_point(model, scenario, points, int(i), structural, variants, method, results)
        return
    invalid = _invalid_rows(model, base, row_values, _row_fields(points))
    for reason, mask in invalid:
        _fail(results, index[mask], reason)
    valid = np.ones(index.size, dtype=bool)
    for _, mask in invalid:
        valid &= ~mask
    if not valid.any():
        return
    index, row_values = index[valid], {k: v[valid] for k, v in row_values.items()}
    one_token = row_values["input_length"] == 1      # a one-token prompt reads its cache: its own stack
    for part in (one_token, ~one_token) if base.phase != "decode" else (np.ones(index.size, dtype=bool),):
        if part.any():
            _run_stack(model, base, index[part], {k: v[part] for k, v in row_values.items()}, variants, method,
                       results)


def _run_stack(model, base: Scenario, index: np.ndarray, row_values: dict, variants: HardwareVariants, method: str,
               results: dict) -> None:
    table = np.stack([row_values[f] for f in ROW_FIELDS], axis=1)
    if len(table) == 1:
        unique_rows, point_of = table, np.zeros(1, dtype=np.int64)
    else:
        unique_rows, point_of = np.unique(np.nan_to_num(table, nan=-1.0), axis=0, return_inverse=True)
        unique_rows = np.where(unique_rows == -1.0, np.nan, unique_rows)
    keys = [variants.key_of_point[i] for i in index]
    unique_keys = list(dict.fromkeys(keys))
    position = {k: j for j, k in enumerate(unique_keys)}
    variant_of = np.array([position[k] for k in keys])
    hardware = [variants.variant[k] for k in unique_keys]
    ok = _interconnect_ok(hardware, base)
    for j, reason in enumerate(ok):
        if reason:
            _fail(results, index[variant_of == j], reason)
    usable = [j for j, reason in enumerate(ok) if not reason]
    if not usable:
        return
    values = PointValues(*(unique_rows[:, i] for i in range(len(ROW_FIELDS))))
    try:
        stack = stacked_table(model, base, values)
        metrics = evaluate_stack(stack, model, base, values, [hardware[j] for j in usable], method)
    except RECOVERABLE as error:
        _fail(results, index, one_line(error))
        return
    column_of = np.full(len(hardware), -1)
    column_of[usable] = np.arange(len(usable))
    take = column_of[variant_of] >= 0
    rows, columns = point_of.reshape(-1)[take], column_of[variant_of][take]
    for name, array in metrics.items():
        results[name][index[take]] = np.asarray(array)[rows, columns]
    results["devices"][index] = base.device_count


def _interconnect_ok(variants: list[Variant], base: Scenario) -> list[str]:
    if max(base.tp, base.pp, base.ep) <= 1:
        return [""] * len(variants)
    reasons = []
    for variant in variants:
        try:
            check_interconnect(variant.on(LINK_ATTRIBUTES), base)
            reasons.append("")
        except RECOVERABLE as error:
            reasons.append(one_line(error))
    return reasons


def _row_fields(points: dict) -> list[str]:
    return [c for c in ROW_FIELDS if c in points]


def _row_values(points: dict, index: np.ndarray, base: Scenario) -> dict[str, np.ndarray]:
    out = {}
    for field in ROW_FIELDS:
        if field in points:
            out[field] = _numbers(points[field][index], field)
            if field != "context_length" or not np.isnan(out[field]).any():
                continue
        default = getattr(base, field)
        out.setdefault(field, np.full(index.size, np.nan if default is None else float(default)))
    return out


def _invalid_rows(model, base: Scenario, values: dict, swept: list[str]) -> list[tuple[str, np.ndarray]]:
    """(reason, mask) for points whose row fields are invalid for the Scenario or too long for the model."""
    found = []
    for field in swept:
        array = values[field]
        for value in np.unique(array[~np.isnan(array)]) if field == "context_length" else np.unique(array):
            try:
                updated_scenario(base, **{field: int(value) if float(value).is_integer() else value})
            except RECOVERABLE as error:
                found.append((f"{field}={value:g}: {one_line(error)}", array == value))
    if base.micro_batches is not None:
        found.append((f"micro_batches={base.micro_batches} does not divide batch",
                      values["batch"] % base.micro_batches != 0))
    context = np.where(np.isnan(values["context_length"]), values["input_length"], values["context_length"])
    longest = {"prefill": values["input_length"], "decode": context + 1}.get(
        base.phase, values["input_length"] + values["output_length"])
    too_long = longest > model.max_position_embeddings
    found.append((f"needs more context than {model.name}'s max_position_embeddings = "
                  f"{model.max_position_embeddings}", too_long))
    return found


def _run_point(model, scenario: Scenario, points: dict, i: int, structural: list[str],
               variants: HardwareVariants, method: str, results: dict) -> None:
    try:
        point = updated_scenario(scenario, **{c: _plain(points[c][i]) for c in structural + _row_fields(points)})
        hardware = variants.hardware(variants.key_of_point[i])
        result = estimate(hardware, model, point, method=method)
    except RECOVERABLE as error:
        _fail(results, np.array([i]), one_line(error))
        return
    for name, value in metrics_from_estimate(result, hardware).items():
        results[name][i] = value


def metrics_from_estimate(result, hardware: Optional[Hardware] = None) -> dict[str, float]:
    """METRIC_COLUMNS of one engine.estimate result (the point-by-point path, and the tests' oracle);
    `hardware` gives the TDP where the estimate has no energy."""
    phases = result.phases
    time = float(phases["time_s"].sum())
    compute = float(phases["compute_bound_time_s"].sum()) if "compute_bound_time_s" in phases else 0.0
    energy = result.energy or {}
    memory = result.memory
    nan = float("nan")
    value = lambda x: nan if x is None else float(x)   # noqa: E731
    return {
        "ttft_s": value(result.ttft_s), "tpot_s": value(result.tpot_s), "e2e_s": value(result.e2e_s),
        "tokens_per_s": value(result.tokens_per_s), "tokens_per_s_per_device": value(result.tokens_per_s_per_device),
        "prefill_tokens_per_s": value(result.prefill_tokens_per_s), "time_s": time,
        "compute_bound_share": compute / time if time > 0 else 0.0,
        "flops": float(phases["flops"].sum()), "bytes": float(phases["bytes"].sum()),
        "energy_j": value(energy.get("request_energy_j")), "energy_per_token_j": value(energy.get("energy_per_token_j")),
        "tokens_per_j": value(energy.get("tokens_per_j")), "average_power_w": value(energy.get("average_power_w")),
        "tdp_w": value(energy.get("tdp_w", None if hardware is None else hardware.tdp_w)), "exceeds_tdp": bool(energy.get("exceeds_tdp", False)),
        "weights_per_device_bytes": float(memory.weights_bytes),
        "memory_per_device_bytes": float(memory.total_bytes), "memory_capacity_bytes": float(memory.capacity_bytes),
        "fits": bool(memory.fits), "devices": result.devices,
    }


def _numbers(values: np.ndarray, field: str) -> np.ndarray:
    """A row field's values as floats (None: NaN, allowed for context_length); GridError for text."""
    try:
        return np.array([np.nan if v is None else v for v in values], dtype=float) if values.dtype == object \
            else values.astype(float)
    except (TypeError, ValueError):
        raise GridError(f"grid field {field!r}: expected whole numbers, got {list(dict.fromkeys(values))[:5]}") \
            from None


def _plain(value):
    """numpy scalars -> Python (pydantic wants int, not numpy.int64); NaN -> None."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and np.isnan(value):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _fail(results: dict, index: np.ndarray, reason: str) -> None:
    results["error"][index] = np.where(results["error"][index] == "", reason, results["error"][index])
