"""estimate(): hardware + model + scenario + method -> Estimate."""

from __future__ import annotations

from engine.estimators import get_method
from engine.hardware import Hardware
from engine.kernels import KernelTableBuilder
from engine.report import Estimate, add_presentation_columns, aggregate_steps, memory_footprint, phase_totals
from engine.workload import Scenario
from engine.dtypes import bytes_per_value, check_dtype


class ScenarioError(ValueError):
    """A scenario the model cannot run (e.g. longer than its position table)."""


def check_fits_model(model, scenario: Scenario) -> None:
    longest = scenario.max_tokens_in_context()
    if longest > model.max_position_embeddings:
        raise ScenarioError(
            f"scenario needs {longest} tokens of context but {model.name} supports "
            f"max_position_embeddings = {model.max_position_embeddings}; shorten input/output/context"
        )


def estimate(hardware: Hardware, model, scenario: Scenario | None = None, method: str = "roofline",
             **scenario_fields) -> Estimate:
    """Estimate `scenario` (or a Scenario built from keyword fields) for `model` on `hardware`."""
    if scenario is None:
        scenario = Scenario(**scenario_fields)
    elif scenario_fields:
        scenario = scenario.model_copy(update=scenario_fields)
        scenario = Scenario.model_validate(scenario.model_dump())
    check_fits_model(model, scenario)
    chosen = get_method(method)
    per_step = chosen.estimate(chosen.decompose(model, scenario), hardware, scenario)
    kernels = add_presentation_columns(aggregate_steps(per_step))
    phases = phase_totals(kernels)
    result = Estimate(hardware.name, model.name, chosen.name, scenario, kernels, phases,
                      memory_footprint(model, scenario, hardware, per_step))
    _fill_metrics(result, scenario)
    result.notes.extend(_fallback_notes(kernels, hardware))
    return result


def _fill_metrics(result: Estimate, s: Scenario) -> None:
    times = result.phases["time_s"]
    if "prefill" in times:
        result.ttft_s = float(times["prefill"])
        result.prefill_tokens_per_s = s.batch * s.input_length / result.ttft_s
    if s.phase == "decode":
        result.tpot_s = float(times["decode"])
        result.tokens_per_s = s.batch / result.tpot_s
    if s.phase == "request":
        decode_time = float(times["decode"]) if "decode" in times else 0.0
        result.tpot_s = decode_time / (s.output_length - 1) if s.output_length > 1 else None
        result.e2e_s = result.ttft_s + decode_time
        result.tokens_per_s = s.batch * s.output_length / result.e2e_s


def _fallback_notes(kernels, hardware: Hardware) -> list[str]:
    if "matrix_rate_dtype" not in kernels:
        return []
    pairs = dict.fromkeys(zip(kernels["dtype"], kernels["matrix_rate_dtype"]))
    return [f"{hardware.name} has no {dtype} matrix rate: {dtype} matrix work runs at the {rate} rate"
            for dtype, rate in pairs if rate and rate != dtype]


def estimate_gemm(hardware: Hardware, m: int, n: int, k: int, dtype: str = "bf16", method: str = "roofline"):
    """One GEMM C[m,n] = A[m,k] @ B[k,n], all operands in `dtype`, each read or written once.

    Every method works: `seed` times it with the notebook's tiler (perform_GEMM's Ma_Ma row), the
    others on one kernel-table row. Returns the method's columns for that row.
    """
    dtype = check_dtype(dtype)
    for label, value in (("m", m), ("n", n), ("k", k)):
        if int(value) != value or value < 1:
            raise ValueError(f"GEMM dimension {label} must be a whole number >= 1, got {value!r}")
    chosen = get_method(method)
    if chosen.name == "seed":
        from engine.decompose_seed import seed_rows_frame
        table = seed_rows_frame([("Ma_Ma", "GEMM", m, k, n, 1)], ["gemm"], [0], 1.0)
        columns = chosen.estimate(table, hardware, Scenario(activation_dtype=dtype))
        row = {key: values[0] for key, values in columns.items()}
        row["matrix_rate_dtype"] = hardware.matrix_rate_dtype(dtype)
        return row
    value_bytes = bytes_per_value(dtype)
    builder = KernelTableBuilder()
    builder.add(phase="gemm", name="GEMM", type="Ma_Ma", op="gemm", unit="matrix", dtype=dtype,
                m=m, k=k, n=n, macs=float(m) * k * n,
                activation_bytes=(float(m) * k + float(k) * n + float(m) * n) * value_bytes)
    row = chosen.estimate(builder.build_columns(), hardware, None)
    return {key: values[0] for key, values in row.items()}
