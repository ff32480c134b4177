"""Sensitivity: which hardware number moves a metric most, each field alone at -X% and +X%.

    engine.explore.hardware_sensitivity.sensitivity(model, scenario, engine.load_hardware("H100-SXM"), change=0.2)

For every field the scenario is evaluated at value x (1 - change) and x (1 + change), the other fields
as published, all points in one vectorized sweep (engine/explore/grid.py). One row per (field, metric) says
the metric at the base, low and high values, its relative change at each, and the swing
|high - low| / base: the length of the field's bar in a tornado chart (docs/design_space.md).

Fields are hardware-sheet rows in the workbook's units (memory_bandwidth in GB/s, clock in GHz, ...)
plus `compute_scale`, a factor on every matrix and vector rate (1 = as published). The default list
holds the fields that can change the metric under the method and scenario (`relevant_fields`); a field
the device leaves blank has nothing to perturb and is skipped, unless asked for by name (then its
rows say so in `error`). The helpers here (values, limits, `hardware_with`) are shared with
engine/explore/inverse.py; labels and number formats are in engine/explore/labels.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

import pandas as pd

from engine.hardware.dtypes import compute_dtype
from engine.explore.labels import METRIC_LABELS, field_label, format_number
from engine.explore.grid import HARDWARE_FIELDS, PSEUDO_HARDWARE_FIELDS, field_unit, pseudo_field_changes, sweep_points
from engine.hardware.device import WORKBOOK_FIELD_BY_KEY, Hardware
from engine.hardware.specs.cells import is_integer_field
from engine.hardware.what_if import EditError, apply_edits, workbook_value
from engine.workload.scenario import Scenario

SENSITIVITY_METRICS = tuple(METRIC_LABELS)
ENERGY_METRICS = ("tokens_per_j", "energy_j", "energy_per_token_j", "average_power_w")

# Fields that can change a metric, by what uses them (engine/estimators, engine/estimators/collectives.py, energy.py).
TIMING_FIELDS = ("memory_bandwidth", "compute_scale", "clock", "num_cores")
METHOD_FIELDS = {
    "roofline": (),
    "hierarchical": ("llc_capacity", "llc_bandwidth", "sram_per_core", "sram_bandwidth_per_core",
                     "register_file_per_core"),
    "realistic": ("sram_per_core", "achievable_matrix_fraction", "achievable_memory_bandwidth_fraction",
                  "kernel_latency", "launch_overhead"),
    "realistic-graph": ("sram_per_core", "achievable_matrix_fraction", "achievable_memory_bandwidth_fraction",
                        "kernel_latency"),
    "seed": ("llc_capacity",),
}
LINK_FIELDS = ("link_bandwidth", "num_links", "link_latency")
INTER_NODE_FIELDS = ("inter_node_bandwidth", "inter_node_latency")
FIT_FIELDS = ("memory_capacity",)     # change only the memory fit: kept by default when the fit flips

COLUMNS = ("field", "label", "unit", "base_value", "low_value", "high_value", "metric", "base", "low", "high",
           "low_change", "high_change", "swing", "base_fits", "low_fits", "high_fits", "error")


# ---- fields: values, limits -----------------------------------------------------------------------

def is_integer(field: str) -> bool:
    """Whether `field` takes whole numbers (num_cores, num_links, tp, ...)."""
    if field in WORKBOOK_FIELD_BY_KEY:
        return is_integer_field(WORKBOOK_FIELD_BY_KEY[field])
    return field in ("tp", "devices")


def base_value(hardware: Hardware, field: str) -> Optional[float]:
    """`field` of `hardware` in workbook units (compute_scale: 1; matrix_tflops: the bf16 peak in TFLOP/s);
    None when the device leaves it blank."""
    if field == "compute_scale":
        return 1.0
    if field == "matrix_tflops":
        return hardware.matrix_flops_per_s("bf16") / 1e12
    return workbook_value(hardware, field)


def _matrix_attributes(hardware: Hardware) -> list[str]:
    return [f"matrix_macs_per_cycle_per_core_{d}" for d in hardware.matrix_dtypes]


def _upper_bound(attribute: str) -> float:
    """The `le` limit Hardware validates `attribute` against (inf when none)."""
    for limit in Hardware.model_fields[attribute].metadata:
        if getattr(limit, "le", None) is not None:
            return float(limit.le)
        if getattr(limit, "lt", None) is not None:
            return math.nextafter(float(limit.lt), -math.inf)
    return math.inf


def _lower_bound(attribute: str) -> float:
    """The `ge` limit Hardware validates `attribute` against (0 when none)."""
    for limit in Hardware.model_fields[attribute].metadata:
        if getattr(limit, "ge", None) is not None:
            return float(limit.ge)
        if getattr(limit, "gt", None) is not None:
            return math.nextafter(float(limit.gt), math.inf)
    return 0.0


def field_floor(hardware: Hardware, field: str) -> float:
    """The smallest value of `field` (workbook units) a valid Hardware can hold."""
    if field in PSEUDO_HARDWARE_FIELDS:
        attributes = _matrix_attributes(hardware)
        if field == "compute_scale":
            attributes.append("vector_flops_per_cycle_per_core")
        factor = max(_lower_bound(a) / getattr(hardware, a) for a in attributes)
        return factor if field == "compute_scale" else factor * base_value(hardware, "matrix_tflops")
    spec = WORKBOOK_FIELD_BY_KEY[field]
    floor = _lower_bound(spec.attribute) / spec.scale
    return float(math.ceil(floor)) if is_integer(field) else floor


def field_limit(hardware: Hardware, field: str) -> float:
    """The largest value of `field` (workbook units) a valid Hardware can hold."""
    if field in PSEUDO_HARDWARE_FIELDS:
        attributes = _matrix_attributes(hardware)
        factor = min(_upper_bound(a) / getattr(hardware, a) for a in attributes)
        if field == "compute_scale":
            vector = "vector_flops_per_cycle_per_core"
            return min(factor, _upper_bound(vector) / getattr(hardware, vector))
        return factor * base_value(hardware, "matrix_tflops")
    spec = WORKBOOK_FIELD_BY_KEY[field]
    limit = _upper_bound(spec.attribute) / spec.scale
    return math.floor(limit) if is_integer(field) else limit


def hardware_with(hardware: Hardware, field: str, value: Any, new_name: Optional[str] = None) -> Hardware:
    """A validated copy of `hardware` with one field at `value` (workbook units, or compute_scale /
    matrix_tflops as engine.explore.grid sweeps them). EditError (a ValueError) when the value is invalid."""
    if field not in PSEUDO_HARDWARE_FIELDS:
        return apply_edits(hardware, {field: value}, new_name=new_name)
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise EditError(field, value, f"a number > 0 ({PSEUDO_HARDWARE_FIELDS[field]})")
    changes = pseudo_field_changes(hardware, field, number)
    if new_name is not None:
        changes["name"] = new_name
    try:
        return hardware.with_changes(**changes)
    except ValueError:
        raise EditError(field, value, f"at least {format_number(field_floor(hardware, field))} and at most "
                                      f"{format_number(field_limit(hardware, field))}") from None


def check_value(hardware: Hardware, field: str, value: Any) -> str:
    """'' when `field` = `value` is a valid device, else why not."""
    try:
        hardware_with(hardware, field, value)
    except EditError as error:
        return str(error)
    return ""


def relevant_fields(hardware: Hardware, scenario: Scenario, method: str = "roofline",
                    metrics: Iterable[str] = ("tpot_s",)) -> list[str]:
    """Fields that can change `metrics` under `method` for `scenario` (the default `fields` of
    `sensitivity`; memory_capacity, which only changes the fit, is added there). Blank fields are kept
    here; `sensitivity` skips them."""
    fields = list(TIMING_FIELDS) + list(METHOD_FIELDS.get(method, ()))
    if max(scenario.tp, scenario.pp, scenario.ep) > 1:
        fields += LINK_FIELDS
        per_node = hardware.devices_per_node or 1
        if max(scenario.tp, scenario.ep) > per_node or (scenario.pp > 1 and scenario.tp * scenario.pp > per_node):
            fields += INTER_NODE_FIELDS
    if any(m in ENERGY_METRICS for m in metrics):
        formats = {hardware.matrix_rate_dtype(compute_dtype(scenario.weight_dtype, scenario.activation_dtype)),
                   hardware.matrix_rate_dtype(compute_dtype(scenario.activation_dtype, scenario.kv_dtype))}
        fields += [f"matrix_energy_per_mac_{d}" for d in hardware.matrix_dtypes if d in formats]
        fields += ["vector_energy_per_flop", "memory_energy_per_byte", "static_power"]
        if method == "hierarchical":
            fields += ["llc_energy_per_byte", "sram_energy_per_byte"]
        if max(scenario.tp, scenario.pp, scenario.ep) > 1:
            fields.append("link_energy_per_bit")
    return list(dict.fromkeys(fields))


def is_energy_field(field: str) -> bool:
    """Per-operation energies and static power: they change the energy metrics only."""
    return "energy" in field or field == "static_power"


def perturbed_values(base: float, change: float, field: str, limit: float = math.inf) -> tuple:
    """((low, why not), (high, why not)): base x (1 -/+ change); whole numbers rounded, at least 1 and never
    the base itself; capped at `limit`. A value that cannot be made is None with the reason."""
    low, high = base * (1 - change), min(base * (1 + change), limit)
    low_reason = high_reason = ""
    if is_integer(field):
        low = max(1, round(low))
        if low == base:
            low = base - 1
        if low < 1:
            low, low_reason = None, f"{field} = {format_number(base)} has no whole number below it (at least 1)"
        high = round(high)
        if high == base:
            high = base + 1
        if high > limit:
            high = None
    if high is not None and high <= base:
        high = None
    if high is None:
        high_reason = f"{field} = {format_number(base)} is already at its largest valid value"
    return (low, low_reason), (high, high_reason)


# ---- sensitivity --------------------------------------------------------------------------------

def sensitivity(model, scenario: Scenario, hardware: Hardware, fields: Optional[Sequence[str]] = None,
                change: float = 0.2, metrics: Sequence[str] = ("tpot_s", "ttft_s", "tokens_per_s"),
                method: str = "roofline") -> pd.DataFrame:
    """Each field of `hardware` alone at value x (1 - change) and x (1 + change): one row per (field, metric).

    Columns (COLUMNS): field, label, unit (the field's workbook unit), base_value, low_value, high_value,
    metric, base, low, high (the metric at each value), low_change and high_change (low / base - 1,
    high / base - 1), swing (|high - low| / base; with one side missing, that side against the base),
    base_fits, low_fits, high_fits (memory fit) and error (why a value could not be evaluated). Rows are
    sorted by metric (in `metrics` order), then swing, largest first; `table.attrs` holds change, method
    and the device's name. Whole-number fields are rounded (at least 1, never equal to the base); a value
    beyond what a device can hold (a fraction above 1) is capped. Metrics the phase does not define
    (ttft_s for a decode step) are dropped.

    `fields` None: `relevant_fields` for the method and scenario that the device publishes, plus
    memory_capacity when the fit changes within +/- change. Named fields are always reported (a blank
    one with its reason in `error`, one the method ignores with zero swing). All points run in one
    engine.explore.grid.sweep_points call.
    """
    _check_change(change)
    metrics = _checked_metrics(metrics)
    plan = _plan(hardware, scenario, method, metrics, fields, change)
    sweep = _sweep(model, scenario, hardware, method, plan)
    defined = _defined_metrics(metrics, sweep.base, scenario, hardware)
    rows = [row for field in plan.fields for row in _field_rows(field, plan, sweep, defined, hardware)]
    return _sorted_table(rows, defined, plan.fields, dict(change=change, method=method, hardware=hardware.name))


@dataclass(frozen=True)
class _Plan:
    """What `sensitivity` perturbs: the fields it reports (in order), each one's base value (None: blank) and
    its low and high values keyed (field, "low" / "high"), None with the reason when one cannot be evaluated."""

    fields: list[str]
    explicit: bool                          # named by the caller: always reported
    bases: dict[str, Optional[float]]
    values: dict[tuple[str, str], Optional[float]]
    reasons: dict[tuple[str, str], str]

    @property
    def swept(self) -> list[str]:
        return [f for f in self.fields if self.bases[f] is not None]


@dataclass(frozen=True)
class _Sweep:
    """The sweep's table: row 0 the base, then one row per evaluable (field, side) at `position`."""

    frame: pd.DataFrame
    base: pd.Series
    position: dict[Optional[tuple[str, str]], int]

    def point(self, field: str, side: str) -> Optional[pd.Series]:
        return self.frame.iloc[self.position[field, side]] if (field, side) in self.position else None


def _check_change(change) -> None:
    if isinstance(change, bool) or not isinstance(change, (int, float)) or not 0 < change < 1:
        raise ValueError(f"change = {change!r}: expected a fraction between 0 and 1, exclusive "
                         "(0.2 evaluates every field at -20% and +20%)")


def _checked_metrics(metrics) -> list[str]:
    metrics = list(dict.fromkeys([metrics] if isinstance(metrics, str) else metrics))
    unknown = [m for m in metrics if m not in SENSITIVITY_METRICS]
    if unknown or not metrics:
        raise ValueError(f"metrics: {unknown or metrics} not known; expected some of {', '.join(SENSITIVITY_METRICS)}")
    return metrics


def _checked_fields(fields) -> list[str]:
    fields = list(dict.fromkeys([fields] if isinstance(fields, str) else fields))
    bad = [f for f in fields if f not in HARDWARE_FIELDS]
    if bad or not fields:
        raise ValueError(f"fields: {bad or fields} not hardware fields; expected some of {', '.join(HARDWARE_FIELDS)}")
    if "compute_scale" in fields and "matrix_tflops" in fields:
        raise ValueError("fields: compute_scale and matrix_tflops both set the matrix rates; ask for one")
    return fields


def _plan(hardware: Hardware, scenario: Scenario, method: str, metrics: list[str],
          fields: Optional[Sequence[str]], change: float) -> _Plan:
    """The named fields (checked) or the default ones, and each swept field's low and high values."""
    explicit = fields is not None
    if explicit:
        fields = _checked_fields(fields)
    else:
        fields = relevant_fields(hardware, scenario, method, metrics) + list(FIT_FIELDS)
    bases = {f: base_value(hardware, f) for f in fields}
    if not explicit:        # a blank field has nothing to perturb: the default list skips it
        fields = [f for f in fields if bases[f] is not None]
    plan = _Plan(fields, explicit, bases, {}, {})
    for field in plan.swept:
        limit = field_limit(hardware, field)
        for side, (value, reason) in zip(("low", "high"), perturbed_values(bases[field], change, field, limit)):
            if value is not None:
                reason = check_value(hardware, field, value)
            plan.values[field, side] = None if reason else value
            plan.reasons[field, side] = reason
    return plan


def _sweep(model, scenario: Scenario, hardware: Hardware, method: str, plan: _Plan) -> _Sweep:
    """One point for the base, then one per (field, side) that can be evaluated: all in one sweep."""
    swept = plan.swept
    keys = [None] + [key for key, value in plan.values.items() if value is not None]
    rows = [{f: plan.bases[f] for f in swept} for _ in keys]
    for row, key in zip(rows[1:], keys[1:]):
        row[key[0]] = plan.values[key]
    points = pd.DataFrame(rows, columns=swept) if swept else pd.DataFrame({"compute_scale": [1.0]})  # base only
    frame = sweep_points(model, scenario, points, hardware, method)
    base_row = frame.iloc[0]
    if base_row["error"]:
        raise ValueError(f"scenario: cannot evaluate {model.name} on {hardware.name}: {base_row['error']}")
    return _Sweep(frame, base_row, {key: i for i, key in enumerate(keys)})


def _defined_metrics(metrics: list[str], base_row: pd.Series, scenario: Scenario, hardware: Hardware) -> list[str]:
    """The asked metrics the phase defines (ttft_s is not defined for a decode step); none is an error."""
    defined = [m for m in metrics if not pd.isna(base_row[m])]
    if not defined:
        available = [m for m in SENSITIVITY_METRICS if not pd.isna(base_row[m])]
        raise ValueError(f"metrics: none of {metrics} is defined for phase {scenario.phase!r} on {hardware.name} "
                         f"(available: {', '.join(available) or 'none'})")
    return defined


def _field_rows(field: str, plan: _Plan, sweep: _Sweep, defined: list[str], hardware: Hardware) -> list[dict]:
    """The rows of one field: one per metric, none for a default field that cannot change any."""
    if plan.bases[field] is None:
        why = f"{hardware.name} leaves {field} blank: nothing to perturb"
        return [_row(field, None, None, None, m, sweep.base, None, None, why) for m in defined]
    points = {side: sweep.point(field, side) for side in ("low", "high")}
    if not plan.explicit and field in FIT_FIELDS and all(
            p is None or bool(p["fits"]) == bool(sweep.base["fits"]) for p in points.values()):
        return []
    errors = [plan.reasons[field, side] or (p["error"] if p is not None else "") for side, p in points.items()]
    error = "; ".join(e for e in errors if e)
    # per-operation energies change energy, never time
    return [_row(field, plan.bases[field], plan.values[field, "low"], plan.values[field, "high"], metric, sweep.base,
                 points["low"], points["high"], error)
            for metric in defined if plan.explicit or not is_energy_field(field) or metric in ENERGY_METRICS]


def _sorted_table(rows: list[dict], defined: list[str], fields: list[str], attrs: dict) -> pd.DataFrame:
    """By metric (in `defined` order), then swing (largest first), then field order."""
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    table["_metric"] = table["metric"].map({m: i for i, m in enumerate(defined)})
    table["_field"] = table["field"].map({f: i for i, f in enumerate(fields)})
    table = table.sort_values(["_metric", "swing", "_field"], ascending=[True, False, True], na_position="last",
                              kind="stable")
    table = table.drop(columns=["_metric", "_field"]).reset_index(drop=True)
    table.attrs.update(attrs)
    return table


def _row(field, base_value_, low_value, high_value, metric, base_row, low_row, high_row, error) -> dict:
    base = float(base_row[metric])
    low = float(low_row[metric]) if low_row is not None else math.nan
    high = float(high_row[metric]) if high_row is not None else math.nan
    relative = (lambda x: x / base - 1) if base != 0 else (lambda x: math.nan)
    # one side missing (a whole number already at 1, a fraction already at 1): the other side against the base
    ends = [x for x in (low, high) if not math.isnan(x)]
    ends = ends if len(ends) == 2 else ends + [base]
    swing = abs(ends[1] - ends[0]) / abs(base) if base != 0 and len(ends) == 2 else math.nan
    return {
        "field": field, "label": field_label(field), "unit": field_unit(field), "base_value": base_value_,
        "low_value": low_value, "high_value": high_value, "metric": metric, "base": base, "low": low, "high": high,
        "low_change": relative(low), "high_change": relative(high), "swing": swing,
        "base_fits": bool(base_row["fits"]), "low_fits": None if low_row is None else bool(low_row["fits"]),
        "high_fits": None if high_row is None else bool(high_row["fits"]), "error": error,
    }
