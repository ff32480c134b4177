"""estimate(): hardware + model + scenario + method -> Estimate."""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.decomposition.auto import is_automatic
from engine.estimators.collectives import check_interconnect
from engine.results.energy import add_energy, energy_summary, tdp_note
from engine.hardware.dtypes import bytes_per_value, check_dtype, compute_dtype, number_format
from engine.estimators import get_method
from engine.estimators.validity import realistic_validation, validation_notes
from engine.hardware.device import Hardware
from engine.kernels.table import KernelTableBuilder
from engine.results.memory import memory_footprint
from engine.results.named import named_inputs
from engine.workload.parallel import parallel_layout
from engine.results.report import Estimate, latency_metrics
from engine.results.columns import experts_touched, fallback_notes, lazy_presentation_columns
from engine.results.phase_totals import phase_total_rows
from engine.results.estimate_cache import kept_estimate, timed_steps
from engine.workload.scenario import Scenario

LAYOUT_FIELDS = ("tp", "pp", "dp")


class ScenarioError(ValueError):
    """A scenario the model cannot run (e.g. longer than its position table)."""


def check_fits_model(model, scenario: Scenario) -> None:
    longest = scenario.max_tokens_in_context()
    if longest > model.max_position_embeddings:
        raise ScenarioError(
            f"scenario needs {longest} tokens of context but {model.name} supports "
            f"max_position_embeddings = {model.max_position_embeddings}; shorten input/output/context"
        )


def updated_scenario(scenario: Scenario, **fields) -> Scenario:
    """`scenario` with `fields` changed and validated again. Changing tp, pp or dp without `devices`
    recomputes devices (unless the scenario had devices pinned to something else)."""
    if any(name in fields for name in LAYOUT_FIELDS) and "devices" not in fields:
        fields["devices"] = None
    return Scenario.model_validate({**scenario.model_dump(), **fields})


def estimate(hardware: Hardware, model, scenario: Scenario | None = None, method: str = "roofline",
             **scenario_fields) -> Estimate:
    """Estimate `scenario` (or a Scenario built from keyword fields) for `model` on `hardware` (either may be a name:
    a device of the bundled workbook; a catalog id, Hub repo id or config.json path)."""
    hardware, model = named_inputs(hardware, model)
    if scenario is None:
        scenario = Scenario(**scenario_fields)
    elif scenario_fields:
        scenario = updated_scenario(scenario, **scenario_fields)
    return kept_estimate(_estimate, hardware, model, scenario, get_method(method).name)


def _estimate(hardware: Hardware, model, scenario: Scenario, method: str) -> Estimate:
    """`estimate` computed (engine/results/estimate_cache.py keeps it for equal inputs)."""
    check_fits_model(model, scenario)
    chosen = get_method(method)
    automatic = is_automatic(model)
    if automatic:
        check_automatic(model, scenario, chosen.name)
    layout = None if automatic else parallel_layout(model, scenario)
    if chosen.name == "seed" and (scenario.tp > 1 or scenario.pp > 1 or scenario.ep > 1 or scenario.chunked_prefill):
        raise ScenarioError("the seed method reproduces the notebook's single-device decomposition: it takes no "
                            "tp, pp, ep or chunked_prefill (dp is fine); use roofline, hierarchical or realistic")
    notes = check_interconnect(hardware, scenario) if max(scenario.tp, scenario.pp, scenario.ep) > 1 else []
    # an automatic model decomposes one replica's device (dp only multiplies the throughput)
    table_scenario = scenario.model_copy(update={"dp": 1, "devices": None}) if automatic else scenario
    timed = timed_steps(chosen, hardware, model, scenario, table_scenario)
    schedule = _chunked_schedule_tables(timed.steps, scenario) if scenario.chunked_prefill else None
    kernels = timed.kernels                      # numpy columns; result.kernels builds the DataFrame when asked
    lazy_presentation_columns(kernels)           # read by the DataFrame only: computed when it is built
    energy_notes = add_energy(kernels, hardware)
    phases = phase_total_rows(kernels, dict(timed.bound_times))
    result = Estimate(hardware.name, model.name, chosen.name, scenario, kernels, phases,
                      memory_footprint(model, scenario, hardware, layout, activation_bytes=timed.activations),
                      devices=scenario.device_count)
    if schedule is not None:
        result.requests, result.iterations = schedule
    _fill_metrics(result, scenario)
    result.experts_touched = experts_touched(kernels)
    result.energy = energy_summary(kernels, hardware, scenario)
    energy_notes += tdp_note(result.energy, hardware)
    if automatic:
        result.notes.append(automatic_note(model))
    result.notes.extend(fallback_notes(kernels, hardware.name))
    result.notes.extend(precision_notes(scenario))
    result.validation = realistic_validation(hardware, chosen.name, scenario, model)
    result.notes.extend(validation_notes(hardware, chosen.name, scenario, model))
    result.notes.extend(notes)
    result.notes.extend(energy_notes)
    return result


AUTOMATIC_LAYOUT_FIELDS = ("tp", "pp", "ep")


def check_automatic(model, scenario: Scenario, method: str) -> None:
    """What an automatically decomposed (traced) model cannot run yet, as a ScenarioError naming the field."""
    if method == "seed":
        raise ScenarioError(f"the seed method reproduces the notebook's own hand decomposition; {model.name} has "
                            "only an automatic (traced) one: use roofline, hierarchical, realistic or realistic-graph")
    for field in AUTOMATIC_LAYOUT_FIELDS:
        value = getattr(scenario, field)
        if value > 1:
            raise ScenarioError(f"{field}={value}: {model.name} is decomposed automatically (traced on one device) "
                                f"and cannot be split over devices yet; use {field}=1 (dp replicas are fine)")
    if scenario.chunked_prefill:
        raise ScenarioError(f"chunked_prefill: the automatic decomposition of {model.name} does not simulate a "
                            "chunked-prefill schedule yet; use phase 'chunked' or drop chunked_prefill")
    if scenario.routing_skew:
        raise ScenarioError(f"routing_skew={scenario.routing_skew}: the automatic decomposition of {model.name} "
                            "routes tokens uniformly; use routing_skew=0")


def automatic_note(model) -> str:
    """The note every estimate of an automatically decomposed model carries."""
    from engine.decomposition.auto import available
    versions = dict(part.split(" ", 1) for part in available()[1].split(", ") if " " in part)
    traced = f"transformers {versions['transformers']}" if "transformers" in versions else "transformers"
    return (f"automatic decomposition (traced with {traced} on PyTorch's meta device): {model.name} has no hand "
            "model; kernel names are module paths, and the memory holds the KV cache as if every layer kept the "
            "whole sequence (an upper bound for sliding-window layers)")


def _fill_metrics(result: Estimate, s: Scenario) -> None:
    """Latency per replica; throughput over all dp replicas (each runs its own `batch`)."""
    if result.requests is None:
        times = {phase: row["time_s"] for phase, row in result.phase_rows.items()}
        prefill = float(times["prefill"]) if "prefill" in times else float("nan")
        decode = float(times["decode"]) if "decode" in times else 0.0
        try:
            metrics = _scalar_latency_metrics(s.phase, prefill, decode, s.batch * s.dp, s.input_length,
                                              s.output_length, s.device_count)
        except ZeroDivisionError:       # numpy's inf / nan where a time is 0
            metrics = latency_metrics(s.phase, prefill, decode, s.batch, s.input_length, s.output_length, s.dp,
                                      s.device_count)
        for name, value in metrics.items():
            setattr(result, name, None if value != value else float(value))
        return
    requests = result.requests     # a simulated chunked-prefill schedule: latencies per request
    result.ttft_s = float(requests["ttft_s"].mean())
    result.tpot_s = float(requests["tpot_s"].mean()) if s.output_length > 1 else None
    result.e2e_s = float(requests["e2e_s"].max())
    result.prefill_tokens_per_s = s.dp * s.batch * s.input_length / float(requests["ttft_s"].max())
    result.tokens_per_s = s.dp * s.batch * s.output_length / result.e2e_s
    result.tokens_per_s_per_device = result.tokens_per_s / s.device_count


def _scalar_latency_metrics(phase: str, prefill_s: float, decode_s: float, tokens: int, input_length: int,
                            output_length: int, devices: int) -> dict:
    """report.latency_metrics of one scenario in Python floats (the same operations in the same order; `tokens`
    = batch x dp); raises ZeroDivisionError where numpy would give inf or NaN."""
    nan = float("nan")
    ttft = tpot = e2e = rate = nan
    if phase == "prefill":
        ttft = prefill_s
    elif phase == "decode":
        tpot, rate = decode_s, tokens / decode_s
    elif phase == "request":
        steps = output_length - 1.0
        ttft, e2e = prefill_s, prefill_s + decode_s
        tpot = decode_s / steps if steps > 0 else nan
        rate = tokens * output_length / e2e
    prefill_rate = tokens * input_length / ttft if phase in ("prefill", "request") else nan
    return {"ttft_s": ttft, "tpot_s": tpot, "e2e_s": e2e, "tokens_per_s": rate,
            "tokens_per_s_per_device": rate / devices, "prefill_tokens_per_s": prefill_rate}


def _chunked_schedule_tables(per_step: dict, s: Scenario) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-request and per-iteration tables of a chunked-prefill request from the timed rows.

    Every kernel of the schedule has one row per iteration (its position within its `group`), so an
    iteration's time is the sum of count x time_s at that position; with a pipeline each iteration
    also waits (pp - 1) x its per-layer work (engine/workload/parallel.py).
    """
    from engine.decomposition.chunked import chunked_schedule, pass_row_times, request_latencies
    plan = chunked_schedule(s.batch, s.input_length, s.output_length, s.chunk_size)
    times = pass_row_times(per_step, plan.iterations, s.pp)
    latencies = request_latencies(plan, times)
    requests = pd.DataFrame({"request": np.arange(plan.batch), "first_token_iteration": plan.first_token_iteration,
                             **latencies})
    iterations = pd.DataFrame({"iteration": np.arange(plan.iterations), "prefill_tokens": plan.prefill_tokens,
                               "decode_tokens": plan.decode_tokens, "prefill_sequences": plan.prefill_sequences,
                               "completions": plan.completions, "time_s": times, "end_s": np.cumsum(times)})
    return requests, iterations


def precision_notes(s: Scenario) -> list[str]:
    """How mixed precision is run: weight-only quantization computes at the activation rate."""
    notes = []
    weight = number_format(s.weight_dtype)
    gemm = compute_dtype(s.weight_dtype, s.activation_dtype)
    if weight.compute_format != gemm:
        notes.append(f"{s.weight_dtype} weights ({weight.bytes_per_value:.4g} B per weight incl. scales) with "
                     f"{s.activation_dtype} activations: GEMMs read the narrow weights and multiply at the {gemm} "
                     "rate (weight-only quantization)")
    elif weight.group_size:
        notes.append(f"{s.weight_dtype} weights: {weight.bytes_per_value:.4g} B per weight incl. one scale per "
                     f"{weight.group_size} values")
    if s.unquantized_modules:
        notes.append(f"{', '.join(s.unquantized_modules)} keep {s.unquantized_dtype} weights (unquantized_modules, as "
                     "quantized checkpoints exclude them); the other weights are " + s.weight_dtype)
    kv = number_format(s.kv_dtype)
    attention = compute_dtype(s.activation_dtype, s.kv_dtype)
    if kv.compute_format != attention:
        notes.append(f"{s.kv_dtype} KV cache with {s.activation_dtype} activations: attention reads "
                     f"{kv.bytes_per_value:.4g} B per K/V value and multiplies at the {attention} rate")
    return notes


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
        from engine.decomposition.seed import seed_rows_frame
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
